// Turning flags and non-zero values into ascending index lists: the kernels every producer of
// an Activity uses (neurons' spikes, layers' non-zero outputs). Flags are computed in blocks
// compilers vectorise and turned into indices by the CPU's best kernel (sim/simd: AVX-512
// compression, AVX2 byte masks), so the work follows the number of elements without a
// mispredicted branch per element.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "sim/simd/simd.hpp"

namespace ternion {

// Writes base + j for every set bit j of `mask`, ascending, to out (room for 64 even when fewer
// bits are set: whole vectors may be stored) and returns how many.
inline std::size_t mask_indices(std::uint64_t mask, std::uint32_t base, std::uint32_t* out) {
    return simd::kernels().mask_to_indices(mask, base, out);
}

// Writes the indices i in [b0, b1) where flag(i) holds to out (room for b1 - b0) and returns
// their count. Flags are computed 256 at a time into bytes (a loop compilers vectorise), then
// turned into indices 64 at a time (vector compression where the machine has it, else one bit
// scan per hit): work follows the number of elements, without a mispredicted branch per one,
// whether hits are rare, common or nearly all.
template <class Flag>
std::size_t collect_indices(std::int64_t b0, std::int64_t b1, Flag flag, std::uint32_t* out) {
    std::size_t n = 0;
    alignas(64) std::uint8_t f[256];
    const auto flags_to = simd::kernels().flags_to_indices;
    for (std::int64_t c0 = b0; c0 < b1; c0 += 256) {
        const std::int64_t len = std::min<std::int64_t>(256, b1 - c0);
        for (std::int64_t i = 0; i < len; ++i) f[i] = flag(c0 + i) ? 1 : 0;
        n += flags_to(f, len, static_cast<std::uint32_t>(c0), out + n);
    }
    return n;
}

// The count of non-zeros in v[b0, b1), and whether all of them are -1 or +1, in one pass that
// compilers vectorise: collect_nonzero without the list, for outputs nobody reads by index.
inline std::size_t count_nonzero(const float* v, std::int64_t b0, std::int64_t b1, bool& ternary) {
    std::size_t n = 0;
    unsigned other = 0;
    for (std::int64_t i = b0; i < b1; ++i) {
        n += v[i] != 0.0f;
        other |=
            static_cast<unsigned>(v[i] != 0.0f) & static_cast<unsigned>(std::fabs(v[i]) != 1.0f);
    }
    ternary = other == 0;
    return n;
}

// The non-zero entries of v[b0, b1) into `out` (room for b1 - b0), with `ternary` set to
// whether all of them are -1 or +1. Returns their count.
inline std::size_t collect_nonzero(const float* v, std::int64_t b0, std::int64_t b1,
                                   std::uint32_t* out, bool& ternary) {
    const std::size_t n = collect_indices(
        b0, b1, [v](std::int64_t i) { return v[i] != 0.0f; }, out);
    // Is every hit -1 or +1? Many hits: count_nonzero's dense pass beats an indexed load per
    // hit (16000 of them cost 30 us a step). Few: look them up.
    if (n * 8 >= static_cast<std::size_t>(b1 - b0)) {
        count_nonzero(v, b0, b1, ternary);
        return n;
    }
    bool other = false;
    for (std::size_t k = 0; k < n; ++k) other |= v[out[k]] != 1.0f && v[out[k]] != -1.0f;
    ternary = !other;
    return n;
}

}  // namespace ternion
