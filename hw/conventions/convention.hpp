// A counting convention behind one interface: how it counts each layer's synaptic AC and MAC,
// the per-step tallies it needs from the run, the figures it adds to the report, and how they
// are written (JSON and text). Every other counted kind (shift, cmp, neuron updates, memory
// bytes, ...) is the engine's count under every convention. A new convention is one file in
// hw/conventions/ defining `const Convention& <name>_convention()`, and its name in the list
// of registry.cpp; docs/cost-model.md describes each.
#pragma once
#include <array>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "hw/cost_model.hpp"

namespace ternion::hw {

// What pricing every layer needs: the run's size and the profile's unit prices.
struct PriceContext {
    std::int64_t S = 0, T = 0;
    double Sd = 0.0, Td = 0.0, invS = 0.0;  // an empty run prices to 0, not NaN
    KindArray unit{};                       // pJ per unit; unpriced kinds stay 0 and are listed
    std::array<bool, kKinds> priced{};
    PriceOptions options;
    const RunRecord* run = nullptr;  // the record being priced
    // Bytes of one ANN activation: the profile's MAC operand width (4 when it states none).
    double ann_activation_bytes = 4.0;
    bool encoding_seen = false;          // paper convention: the first connection layer was handled
    const WidthTable* widths = nullptr;  // the profile's prices by operand width, if it has them
    const BufferSizeRule* buffer_rule = nullptr;  // the profile's memory.by_buffer_size, if any
    bool width_priced = false;                    // some layer was priced by its operand widths
};

class Convention {
  public:
    virtual ~Convention() = default;
    // The name `--count` takes and reports carry.
    virtual std::string_view name() const = 0;
    // Per-step tallies the run must take for this convention (defined beside it).
    virtual std::vector<const StepTally*> needs() const { return {}; }
    // Whether the convention recounts AC/MAC (reports then list its counted_ops).
    virtual bool recounts() const { return true; }
    // Before the layers: whole-run figures, and checks that the run has the tallies needed.
    virtual void begin(const RunRecord&, CostReport&) const {}
    // One layer: c.count holds the engine's counts on entry; set c.count[kAc], c.count[kMac]
    // (totals over all samples) and c.basis (how the layer was counted).
    virtual void count(const LayerRecord& l, LayerCost& c, PriceContext& x,
                       CostReport& r) const = 0;
    // After every layer and the totals: energy the convention prices beyond the counted kinds
    // (added to the totals and listed in CostReport::added_pj).
    virtual void close(CostReport&, const PriceContext&) const {}
    // After every layer: notes.
    virtual void finish(CostReport&) const {}
    // The convention's own keys on one report layer, and on the report.
    virtual void layer_json(const CostReport&, const LayerCost&, nlohmann::json&) const {}
    virtual void report_json(const CostReport&, nlohmann::json&) const {}
    virtual void report_text(const CostReport&, std::ostream&) const {}
};

// The registered conventions, in the order `--count` lists them (hw/conventions/registry.cpp).
const std::vector<const Convention*>& conventions();
// The convention of a mode; throws OptionError("count") for a name none has.
const Convention& convention(const CountMode& m);

// What the conventions share: a number as reports print it, and NeuroBench's and the papers'
// notion of a connection layer.
std::string fmt(double v);
bool is_connection(const LayerRecord& l);

}  // namespace ternion::hw
