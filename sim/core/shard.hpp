// How a run's samples are split across the processes of one job: contiguous shards in rank
// order, so that concatenating the ranks' results in rank order gives sample order.
#pragma once
#include <algorithm>
#include <cstdint>

#include "sim/core/engine.hpp"

namespace ternion {

// Samples [first, first + count).
struct Shard {
    std::int64_t first = 0, count = 0;
};

// Rank r's contiguous share of `samples` samples from `first`: the first samples % ranks ranks
// take one more. Deterministic and independent of anything but its arguments.
inline Shard shard_of(std::int64_t first, std::int64_t samples, int rank, int ranks) {
    const std::int64_t base = samples / ranks, extra = samples % ranks;
    return {first + rank * base + std::min<std::int64_t>(rank, extra),
            base + (rank < extra ? 1 : 0)};
}

// Appends the result of a run of the samples that follow `whole`'s to `whole`, so that it
// equals one run of both ranges: counts summed, per-sample vectors concatenated, the longer
// simulate_s kept, and the tallies summed sample by sample from `part`'s per-sample values (it
// must have run with RunConfig::keep_sample_sums), in the order one run adds them.
void append_part(RunResult& whole, const RunResult& part);

}  // namespace ternion
