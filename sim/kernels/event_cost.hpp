// The one rule for what applying weights to input events costs, shared by every node that has
// weights (Linear/Conv layers, the projections inside attention nodes). An input event reaches
// the non-zero weights of its fan-out; each (event, weight) pair is one synaptic event. A spike
// (+1 or -1) costs one AC per pair, a small integer x (coincident spikes, e.g. the 2 of a SEW
// residual) |x| ACs, any other value one MAC. Counts never depend on the engine: the dense
// engine books what the event engine would (docs/engine.md).
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace ternion {

struct EventCost {
    std::uint64_t pairs = 0;  // (non-zero input, non-zero weight) pairs
    std::uint64_t ac = 0, mac = 0;
};

// Cost of n input events: fan(k) non-zero weights reached by event k, value(k) its value.
// `ternary`: every value is -1, 0 or +1 (the producer's Activity::ternary).
template <class Fan, class Value>
EventCost event_cost(std::size_t n, bool ternary, Fan fan, Value value) {
    EventCost c;
    std::uint64_t weighted = 0;
    bool integral = true;
    for (std::size_t k = 0; k < n; ++k) {
        const std::uint64_t f = fan(k);
        c.pairs += f;
        if (!ternary && integral) {
            const float a = std::fabs(value(k));
            if (a == std::floor(a) && a <= 16.0f)
                weighted += static_cast<std::uint64_t>(a) * f;
            else
                integral = false;
        }
    }
    if (ternary)
        c.ac = c.pairs;
    else if (integral)
        c.ac = weighted;
    else
        c.mac = c.pairs;
    return c;
}

// Bytes of weight memory one synaptic event reads, by how the weights are stored: a dense
// float32 matrix reads the weight (4 bytes); a compressed column reads its 2-byte row index
// and the value (4 bytes), a 1-byte codebook index, or nothing more when every weight of the
// layer is the same value. Every weighted node bills its reads with this rule.
// Integer weights (a quantised model's, `ternion quantize`) are stored at their width: 1 byte
// each for 8-bit weights, 2 for 16-bit ones (int_bytes), as the chip would hold them.
struct WeightStorage {
    bool compressed = false;
    enum class Values { float32, codebook, one_value } values = Values::float32;
    int int_bytes = 0;  // 0: float32 values; 1 or 2: integers of that many bytes
};
// Bytes of one stored weight value, index aside.
inline int value_bytes(const WeightStorage& w) {
    return w.int_bytes > 0 ? w.int_bytes : 4;
}
inline std::uint64_t bytes_per_synapse(const WeightStorage& w) {
    const auto value = static_cast<std::uint64_t>(value_bytes(w));
    if (!w.compressed) return value;
    switch (w.values) {
        case WeightStorage::Values::float32:
            return 2 + value;
        case WeightStorage::Values::codebook:
            return 2 + 1;
        case WeightStorage::Values::one_value:
            return 2;
    }
    return 2 + value;
}

// The bytes an integer weight needs when every one of the n values is an integer of at most 16
// bits (1 for [-128, 127], 2 for [-32768, 32767]); 0 when any is not: float32 storage.
inline int integer_weight_bytes(const float* w, std::size_t n) {
    float lo = 0.0f, hi = 0.0f;
    for (std::size_t k = 0; k < n; ++k) {
        if (w[k] != std::floor(w[k])) return 0;
        lo = w[k] < lo ? w[k] : lo;
        hi = w[k] > hi ? w[k] : hi;
    }
    if (lo >= -128.0f && hi <= 127.0f) return 1;
    return lo >= -32768.0f && hi <= 32767.0f ? 2 : 0;
}

}  // namespace ternion
