// Private to the synaptic node files (sim/synaptic*.cpp): the parameter readers and the booking of
// the event-cost rule they share, and each node family's registration, which
// register_synaptic_nodes (sim/synaptic/synaptic.cpp) calls.
#pragma once
#include <array>
#include <cstdint>
#include <string>

#include "sim/core/event_booking.hpp"
#include "sim/core/node_spec.hpp"

namespace ternion::synaptic {

// The shared event-cost rule (sim/kernels/event_cost.hpp) over n events, booked into the step.
template <class Fan, class Value>
void count_events_n(std::size_t n, bool ternary, Fan fan, Value value,
                    std::uint64_t bytes_per_weight, const StepContext& ctx) {
    if (!ctx.count_ops) return;
    book_event_cost(event_cost(n, ternary, fan, value), ternary, bytes_per_weight, ctx);
}

// The same over an Activity's listed events.
template <class Fan>
void count_events(const Activity& in, Fan fan, std::uint64_t bytes_per_weight,
                  const StepContext& ctx) {
    const auto* act = in.active.data();
    count_events_n(
        in.active.size(), in.ternary, [&](std::size_t k) { return fan(act[k]); },
        [&](std::size_t k) { return in.values[act[k]]; }, bytes_per_weight, ctx);
}

// A 1-d shape of positive dimensions whose product stays within kMaxElements.
Shape shape_param(const NodeSpec& s, const std::string& p);
// Pair parameter: a scalar or two values (H, W).
std::array<std::int64_t, 2> pair_param(const NodeSpec& s, const std::string& p, std::int64_t dflt,
                                       std::int64_t min);
// A 1-d operator's spatial parameter: absent, a scalar or one value; returned as {1, value}.
std::array<std::int64_t, 2> single_param(const NodeSpec& s, const std::string& p, std::int64_t dflt,
                                         std::int64_t min);
// out = in (values, list and flags), for nodes that only reshape.
void copy_activity(const Activity& in, Activity& out);
// Listed inputs whose non-zeros are all +1 (binary spikes): what the event paths of max-pooling
// and of the convolution gather take.
bool listed_ones(const Activity& in);

using In = NodeExample::Input;

// One per file: the types each family registers, with their examples.
void register_structural(NodeFactory& f);   // Input, Output, Identity, Flatten, Pad, Tokens, ...
void register_linear(NodeFactory& f);       // Affine, Linear
void register_elementwise(NodeFactory& f);  // Scale, Delay
void register_conv(NodeFactory& f);         // Conv1d, Conv2d
void register_pool(NodeFactory& f);         // SumPool2d, AvgPool2d, MaxPool2d

}  // namespace ternion::synaptic
