// Reads recorded attention maps back from a ternion trace (HDF5, NIR NIRGraphData layout) for
// the analysis tools: {weights,scores} float32 [samples, steps, heads, rows, cols] plus the
// recorded sample and step indices and an optional present [samples, steps] mask, found under
// /nodes/<node>/observables/attention/ or /ternion/attention/<node>/ (docs/traces.md).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ternion::analysis {

struct RecordedAttention {
    std::string file, node, map;  // map: "weights" or "scores"
    std::int64_t samples = 0, steps = 0, heads = 0, rows = 0, cols = 0;
    std::vector<std::int64_t> sample_ids, step_ids;  // recorded indices (positions if absent)
    std::vector<float> data;           // row-major [samples, steps, heads, rows, cols]
    std::vector<std::int8_t> present;  // [samples, steps]: 1 where the node delivered maps
    std::int64_t value_dim = 0;        // per-head value width if the trace says so (0: unknown)
    std::int64_t nonfinite = 0;        // entries that were +-inf/NaN (masked keys), read as 0
    std::string group;                 // where the maps were found

    bool has(std::int64_t s, std::int64_t t) const { return present[size_t(s * steps + t)] != 0; }

    // The rows x cols map of (sample position, step position, head), row-major.
    const float* map_at(std::int64_t s, std::int64_t t, std::int64_t h) const {
        return data.data() + ((s * steps + t) * heads + h) * rows * cols;
    }
    // Position of recorded sample / step index `id`; throws InputError naming the option if
    // it was not recorded.
    std::int64_t sample_pos(std::int64_t id, const std::string& option) const;
    std::int64_t step_pos(std::int64_t id, const std::string& option) const;
};

// Nodes of the trace that carry attention maps (sorted by name).
std::vector<std::string> attention_nodes(const std::string& file);

// `map` is "weights", "scores" or "" (weights if present, else scores). Throws InputError
// for a missing file, node or attention group, and for inconsistent shapes.
RecordedAttention read_attention(const std::string& file, const std::string& node,
                                 const std::string& map = "");

}  // namespace ternion::analysis
