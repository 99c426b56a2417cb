// What a run measured, per layer, in the form the cost model (hw/) and the reports consume.
// Built from a Graph and a RunResult; everything is a total over all samples and steps.
#pragma once
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "sim/core/engine.hpp"

namespace ternion {

// What the run measured of a node (NodeStats: totals over samples and steps), with the node's
// own facts beside it.
struct LayerRecord : NodeStats {
    std::string name, type;
    NodeCategory category = NodeCategory::other;
    bool spiking = false;
    std::int64_t neurons = 0;                 // output elements per step
    std::int64_t in_size = 0;                 // input elements per step
    std::uint64_t dense_macs_per_step = 0;    // the ANN-equivalent MACs of one step
    std::uint64_t dense_synops_per_step = 0;  // NeuroBench "Dense" per step
    std::uint64_t param_count = 0;
    std::uint64_t weight_count = 0;  // connection weights, bias excluded
    double weight_density = -1.0;
    ModuleShape modules;                            // Node::module_shape()
    std::optional<AttentionShape> attention_shape;  // set for attention nodes
    CountTraits traits;                             // Node::count_traits()
    // Fraction of non-zero input elements over all samples and steps (paper-mode "fr").
    double input_rate(std::int64_t samples, std::int64_t T) const {
        double d = static_cast<double>(in_size) * static_cast<double>(samples * T);
        return d > 0 ? static_cast<double>(nonzero_in) / d : 0.0;
    }
    double firing_rate(std::int64_t samples, std::int64_t T) const {
        double d = static_cast<double>(neurons) * static_cast<double>(samples * T);
        return d > 0 ? static_cast<double>(nonzero_out) / d : 0.0;
    }
};

struct RunRecord {
    std::int64_t samples = 0, timesteps = 0;
    std::vector<const StepTally*> tallies;  // what LayerRecord::tallies hold, in slot order
    bool node_times = false;                // LayerRecord::seconds were measured
    std::vector<LayerRecord> layers;        // in evaluation order, Input/Output included
    // The slots `t` added to on layer `l`, or null when the run did not take tally `t`.
    const double* slots_of(const LayerRecord& l, const StepTally& t) const {
        const int offset = slot_offset(tallies, t);
        return offset < 0 ? nullptr : l.tallies.data() + offset;
    }
    bool has(const StepTally& t) const { return slot_offset(tallies, t) >= 0; }
};

inline RunRecord make_run_record(const Graph& g, const RunResult& r) {
    RunRecord rec;
    rec.samples = r.samples;
    rec.timesteps = r.timesteps;
    rec.tallies = r.tallies;
    for (int u : g.order()) {
        const Node& n = g.node(u);
        const NodeStats& s = r.nodes[static_cast<std::size_t>(u)];
        LayerRecord l;
        static_cast<NodeStats&>(l) = s;
        l.name = n.name();
        l.type = n.type();
        l.category = n.category();
        l.spiking = n.is_spiking();
        l.neurons = n.out_size();
        l.in_size = n.category() == NodeCategory::input ? 0 : n.in_size();
        l.dense_macs_per_step = n.dense_macs_per_step();
        l.dense_synops_per_step = n.dense_synops_per_step();
        l.param_count = n.param_count();
        l.weight_count = n.weight_count();
        l.weight_density = n.weight_density();
        l.traits = n.count_traits();
        l.modules = n.module_shape();
        l.attention_shape = n.attention_shape();
        // A connection's sums are added into its consumers' integers: price them at that width.
        if (l.traits.connection)
            for (const auto& e : g.edges())
                if (e.src == u)
                    l.traits.accumulator_bits = std::max(
                        l.traits.accumulator_bits, g.node(e.dst).count_traits().accumulator_bits);
        rec.layers.push_back(std::move(l));
    }
    return rec;
}

}  // namespace ternion
