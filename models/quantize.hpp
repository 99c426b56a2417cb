// Post-training quantisation: a float model file becomes the integer model a chip would hold
// (`ternion quantize`, `ternion.quantize`). Each neuron population whose update is one linear
// recurrence (Node::leaky_form: IF, LIF, SpikingJelly LIF/PLIF, BSA's TSN) becomes a
// ternion.FixedLIF on the profile's datapath, and the weighted layers that feed it (Linear,
// Affine, Conv) get integer weights of the profile's width under one power-of-two scale shared
// by the population, with the input gain, leak, reset level and threshold folded in as chips
// fold them. Readout layers that feed only Output nodes get integer weights of their own scale
// (the output is the float one times that scale: class decisions do not change). Everything
// else stays in float and the report says why. The formats are written into the file (the
// FixedLIF parameters), so the file carries its own semantics. docs/fixed-point.md.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "models/nir_loader.hpp"

namespace ternion {

struct QuantizeOptions {
    std::string profile = "loihi-like";  // name or file; its `formats` section is required
    std::optional<int> weight_bits;      // override the profile's weight width
    std::optional<int> membrane_bits;    // override the datapath's membrane width
    UserLoadOptions load;                // how the float model is read (as `ternion run`)
};

// What happened to one node.
struct QuantizedNode {
    std::string name, type;       // as in the float model
    std::string action;           // "FixedLIF", "integer weights", "kept float"
    double scale = 1.0;           // weights were multiplied by it (the smallest row scale when
                                  // each output channel has its own)
    std::int64_t max_weight = 0;  // largest |integer weight| (weighted layers)
    std::string note;             // why it stays float, or what was adjusted
};

struct QuantizeReport {
    std::string model, output, profile;
    int weight_bits = 0;
    std::vector<QuantizedNode> nodes;
};

// Reads `model`, writes `output` (atomically; never over the model itself). Errors name the
// file and node (or the profile and its field).
QuantizeReport quantize_model(const std::string& model, const std::string& output,
                              const QuantizeOptions& options);

std::string quantize_report_text(const QuantizeReport& r);

}  // namespace ternion
