// An independent recount of what the spiking attention nodes (ternion.SSA, SDSA, BSA) must
// book: their equations (docs/transformer-format.md §3, docs/bsa.md) re-evaluated in double
// precision from the node's parameters and the captured input, and the counting rules of
// docs/bsa.md applied to the Q/K/V spikes so obtained. It shares no code with the nodes, so a
// count that disagrees points at one of the two; the reference's output spikes are compared with
// the node's to show that the spikes counted are the node's own.
#pragma once
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "sim/core/node_spec.hpp"
#include "sim/kernels/op_counts.hpp"

namespace ternion::test {

struct AttentionRecount {
    AttentionCounts att;  // the typed counters the rules give
    // ac, mac, shift, cmp, neuron_update, spikes_out, weight_read_bytes, state_read_bytes,
    // state_write_bytes; the other fields stay zero.
    OpCounts ops;
    std::uint64_t pairs = 0;  // (non-zero input, non-zero weight) pairs of the projections
    std::map<std::pair<std::int64_t, std::int64_t>, std::vector<float>> out;  // (sample, step)
    // Smallest distance of a membrane to a threshold it was compared with: below ~1e-5 the
    // double-precision reference could fire where the node's float32 does not.
    double margin = std::numeric_limits<double>::infinity();
};

// The node's input of (sample, step), [tokens * dim_in].
using InputOf = std::function<const std::vector<float>&(std::int64_t, std::int64_t)>;

// `type`: ternion.SSA, ternion.SDSA or ternion.BSA; `p` its parameters; `tokens` the input rows.
AttentionRecount recount_spiking_attention(const std::string& type, const MapParams& p,
                                           std::int64_t tokens, std::int64_t samples,
                                           std::int64_t steps, const InputOf& input);

}  // namespace ternion::test
