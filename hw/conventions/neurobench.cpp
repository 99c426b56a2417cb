// neurobench: NeuroBench's Dense / Effective_ACs / Effective_MACs per connection layer, its
// activation and connection sparsity, footprint and membrane updates; attention matmuls are
// priced but reported apart, as NeuroBench does not hook them (docs/cost-model.md).
#include <algorithm>
#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "hw/conventions/convention.hpp"

namespace ternion::hw {

namespace {

using nlohmann::json;

// NeuroBench's MembraneUpdates (metrics/workload/membrane_updates.py) for neuron nodes: every
// membrane at a sample's first step, then those that differ from the previous step's (slot 0).
class MembraneChangeTally final : public StepTally {
  public:
    std::string_view name() const override { return "membrane changes"; }
    int slots() const override { return 1; }
    struct Membranes final : Scratch {
        std::vector<float> prev, now;
    };
    std::unique_ptr<Scratch> make_scratch() const override { return std::make_unique<Membranes>(); }
    void tally(const Node& node, const Activity&, const Activity&, const NodeState* state,
               std::int64_t step, Scratch* scratch, double* slots) const override {
        if (node.category() != NodeCategory::neuron) return;
        auto& m = static_cast<Membranes&>(*scratch);
        if (!node.membrane(state, m.now)) return;
        std::uint64_t changed = 0;
        if (step == 0 || m.prev.size() != m.now.size()) {
            changed = m.now.size();
        } else {
            for (std::size_t i = 0; i < m.now.size(); ++i) changed += m.now[i] != m.prev[i];
        }
        slots[0] += static_cast<double>(changed);
        std::swap(m.prev, m.now);
    }
};

const MembraneChangeTally kMembraneTally;

// NeuroBench's static and activation metrics over the whole record (see NeuroBenchFigures).
void neurobench_sparsity(const RunRecord& run, NeuroBenchFigures& nb) {
    const double calls = static_cast<double>(run.samples) * static_cast<double>(run.timesteps);
    double act = 0.0, act_nonzero = 0.0, weights = 0.0, zeros = 0.0, params = 0.0;
    for (const LayerRecord& l : run.layers) {
        if (l.spiking) {
            act += static_cast<double>(l.neurons) * calls;
            act_nonzero += static_cast<double>(l.nonzero_out);
        }
        if (l.attention_shape) {
            const double nd =
                static_cast<double>(l.attention_shape->tokens * l.attention_shape->dim);
            act += (l.attention_shape->spiking_v ? 3.0 : 2.0) * nd * calls;
            act_nonzero += static_cast<double>(l.attention.q_spikes + l.attention.k_spikes +
                                               l.attention.v_spikes);
            if (l.attention_shape->mask_neurons > 0) {
                act += static_cast<double>(l.attention_shape->mask_neurons) * calls;
                act_nonzero += static_cast<double>(l.attention.mask_channels);
            }
        }
        if (l.weight_count > 0 && l.weight_density >= 0.0) {
            const double w = static_cast<double>(l.weight_count);
            weights += w;
            zeros += std::round(w * (1.0 - l.weight_density));
        }
        params += static_cast<double>(l.param_count);
    }
    nb.activation_sparsity = act > 0 ? 1.0 - act_nonzero / act : 0.0;
    // NeuroBench reports it rounded to 4 decimals (static/connection_sparsity.py).
    nb.connection_sparsity = weights > 0 ? std::nearbyint(zeros / weights * 1e4) / 1e4 : 0.0;
    nb.footprint_bytes = 4.0 * params;
    if (run.has(kMembraneTally) && run.samples > 0) {
        double updates = 0;
        for (const LayerRecord& l : run.layers) updates += run.slots_of(l, kMembraneTally)[0];
        nb.membrane_updates = updates / static_cast<double>(run.samples);
    }
}

// NeuroBench's SynapticOperations: Effective ACs/MACs of connection layers, Dense of all.
void count_layer(const LayerRecord& l, LayerCost& c, const PriceContext& x, NeuroBenchFigures& nb) {
    const double ac = c.count[kAc], mac = c.count[kMac];
    nb.dense += static_cast<double>(l.dense_synops_per_step) * x.Td;  // x S / S
    c.count[kAc] = c.count[kMac] = 0.0;
    if (l.category == NodeCategory::attention) {
        // All the node's products are priced, but reported apart: NeuroBench does not hook
        // plain matmuls. The projections inside the node are Linear layers for NeuroBench: one
        // op per (non-zero input, non-zero weight) pair, ACs at steps whose input is all in
        // {-1,0,1}, else MACs.
        const double pac = static_cast<double>(l.synapses.pairs_ternary);
        const double pmac = static_cast<double>(l.synapses.pairs_other);
        const double mat_ac = std::max(0.0, ac - static_cast<double>(l.attention.proj_ac));
        const double mat_mac = std::max(0.0, mac - static_cast<double>(l.attention.proj_mac));
        c.count[kAc] = ac;
        c.count[kMac] = mac;
        c.attention_matmul = true;
        nb.effective_acs += pac * x.invS;
        nb.effective_macs += pmac * x.invS;
        nb.attention_matmul_ac += mat_ac * x.invS;
        nb.attention_matmul_mac += mat_mac * x.invS;
        nb.attention_matmul_pj += (x.unit[kAc] * mat_ac + x.unit[kMac] * mat_mac) * x.invS;
        c.basis = "neurobench: attention matmul line (not a NeuroBench synop)";
    } else if (is_connection(l)) {
        // One op per (non-zero input, non-zero weight) pair, an AC at steps whose input was all
        // in {-1,0,1}, else a MAC (an input of 2 is one MAC).
        c.count[kAc] = static_cast<double>(l.synapses.pairs_ternary);
        c.count[kMac] = static_cast<double>(l.synapses.pairs_other);
        nb.effective_acs += c.count[kAc] * x.invS;
        nb.effective_macs += c.count[kMac] * x.invS;
        c.basis = "neurobench: Effective_ACs / Effective_MACs (per-step input test)";
    } else {
        c.basis = (ac + mac > 0) ? "neurobench: ac/mac not counted (not a connection layer)"
                                 : "neurobench: no synaptic ops";
    }
}

class NeuroBench final : public Convention {
  public:
    std::string_view name() const override { return "neurobench"; }
    std::vector<const StepTally*> needs() const override { return {&kMembraneTally}; }
    void begin(const RunRecord& run, CostReport& r) const override {
        r.neurobench.emplace();
        neurobench_sparsity(run, *r.neurobench);
    }
    void count(const LayerRecord& l, LayerCost& c, PriceContext& x, CostReport& r) const override {
        count_layer(l, c, x, *r.neurobench);
    }
    void finish(CostReport& r) const override {
        if (r.neurobench->attention_matmul_ac > 0 || r.neurobench->attention_matmul_mac > 0)
            r.notes.push_back(
                "attention matmuls are priced in energy_pj but are not NeuroBench synaptic "
                "operations; they are reported apart as the attention matmul line");
    }
    void layer_json(const CostReport&, const LayerCost& c, json& jl) const override {
        if (c.attention_matmul) jl["attention_matmul"] = true;
    }
    void report_json(const CostReport& r, json& doc) const override {
        const auto& nb = *r.neurobench;
        doc["neurobench"] = {
            {"Dense", nb.dense},
            {"Effective_ACs", nb.effective_acs},
            {"Effective_MACs", nb.effective_macs},
            {"ActivationSparsity", nb.activation_sparsity},
            {"ConnectionSparsity", nb.connection_sparsity},
            {"Footprint", nb.footprint_bytes},
            {"MembraneUpdates", nb.membrane_updates ? json(*nb.membrane_updates) : json(nullptr)},
            {"attention_matmul",
             {{"ac", nb.attention_matmul_ac},
              {"mac", nb.attention_matmul_mac},
              {"energy_pj", nb.attention_matmul_pj}}}};
    }
    void report_text(const CostReport& r, std::ostream& os) const override {
        const auto& nb = *r.neurobench;
        os << "NeuroBench (per sample): Dense " << fmt(nb.dense) << ", Effective_ACs "
           << fmt(nb.effective_acs) << ", Effective_MACs " << fmt(nb.effective_macs)
           << "; attention matmul (not in NeuroBench): " << fmt(nb.attention_matmul_ac) << " AC, "
           << fmt(nb.attention_matmul_mac) << " MAC, " << fmt(nb.attention_matmul_pj) << " pJ\n";
        os << "NeuroBench: ActivationSparsity " << fmt(nb.activation_sparsity)
           << ", ConnectionSparsity " << fmt(nb.connection_sparsity) << ", Footprint "
           << fmt(nb.footprint_bytes) << " bytes";
        if (nb.membrane_updates) os << ", MembraneUpdates " << fmt(*nb.membrane_updates);
        os << "\n";
    }
};

}  // namespace

const Convention& neurobench_convention() {
    static const NeuroBench c;
    return c;
}

}  // namespace ternion::hw
