// Books an event cost (sim/kernels/event_cost.hpp) into a step's counters: the operations and
// weight bytes, and the synaptic events NeuroBench classifies by the step's input.
#pragma once
#include "sim/core/node.hpp"
#include "sim/kernels/event_cost.hpp"

namespace ternion {

// Adds a cost to the step's counters: AC/MAC, weight bytes read, and the synaptic events split
// as NeuroBench classifies the step's input.
inline void book_event_cost(const EventCost& c, bool ternary, std::uint64_t bytes_per_weight,
                            const StepContext& ctx) {
    if (ctx.ops) {
        ctx.ops->ac += c.ac;
        ctx.ops->mac += c.mac;
        ctx.ops->weight_read_bytes += c.pairs * bytes_per_weight;
    }
    if (ctx.synapses)
        (ternary ? ctx.synapses->pairs_ternary : ctx.synapses->pairs_other) += c.pairs;
}

}  // namespace ternion
