// Integer neurons: the leaky integrate-and-fire datapath of neuromorphic chips, computed in the
// integers the chip holds (fixed::LifDatapath). One node type, ternion.FixedLIF, whose number
// formats are parameters of the node, preset by `datapath` ("loihi": Lava's bit-accurate Loihi
// LIF and TernaryLIF; "xylo": Xylo's bit-shift decays and 16-bit states) and overridable field
// by field. docs/fixed-point.md gives the equations and their sources.
#pragma once
#include "sim/core/node_spec.hpp"
#include "sim/kernels/fixed_point.hpp"

namespace ternion {

// The datapath a node declares: its `datapath` preset with any of the format fields overriding
// it. Refuses unknown presets and values outside what the formats allow, naming the field.
fixed::LifDatapath read_lif_datapath(const NodeSpec& s);

void register_fixed_neuron_nodes(NodeFactory& f);

}  // namespace ternion
