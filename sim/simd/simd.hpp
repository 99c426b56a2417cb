// The vector kernels of the hot loops, compiled once per x86-64 instruction-set level and chosen
// at run time for the CPU the program runs on. One build runs on every x86-64-v2 machine and
// uses AVX-512 where it is, AVX2 + FMA where that is the best, SSE4.2 otherwise; the variable
// TERNION_ISA (v2, v3, v4) forces a lower level, for tests and bug reports.
//
// Every kernel sums in the same order at every level (the order the engines document), so
// spikes, membranes and counts are bit-identical whichever level runs; only the register tiles
// differ, shaped for each level's register file (16 vector registers below AVX-512, 32 with it).
// This room depends on nothing else of ternion: its arguments are plain pointers and sizes.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace ternion::simd {

enum class Level { v2 = 2, v3 = 3, v4 = 4 };

// "x86-64-v2 (SSE4.2)", ... as reports print it; short_name: "v2".
const char* level_name(Level l);
const char* short_name(Level l);

// The most capable level this CPU (and its operating system) runs.
Level detect();

// Direct convolution tile: Co output channels x Nv vectors of `lanes` output positions.
struct TileShape {
    int co = 0, nv = 0;
};
struct DirectTileArgs {
    const float* xg;           // the group's zero-padded input planes
    const float* wb;           // weights of the channel block: [cin_g][kh][kw][co]
    const std::int64_t* base;  // per vector of the tile: its first lane's offset in a plane
    std::int64_t cin_g, plane, Wp, kh, kw;
    float* out;  // [co][nv * lanes]
    // Inputs all in {-1, 0, 1}: a fused multiply-add rounds as the separate add does. Any other
    // input takes a multiply, then an add: the scatter's rounding, so the same bits.
    bool ternary = true;
};

// token_rows (sim/kernels/token_kernel.hpp): rows [r0, r1) of y [ntok][out] from events or dense
// inputs.
struct TokenRowsArgs {
    const float* panels;  // [groups][in][64]: weights of 64 outputs, channel after channel
    std::int64_t in, out, ntok, r0, r1;
    const std::uint32_t* begin;  // per token: first event (ntok + 1 entries)
    const std::uint32_t* chan;   // events' channels, token-major, ascending
    const float* xs;             // events' values
    const float* values;         // dense inputs [ntok][in] (dense path)
    const float* bias;           // may be null
    float* y;
    bool bias_first, unit, negative, dense;
    std::uint64_t *nz, *nt;  // may be null: masks of non-zero and non-unit outputs
    std::uint32_t* cursor;   // ntok entries
    float* sums;             // 64 x 64 floats, 64-byte aligned
};

// The kernels of one level.
struct Table {
    Level level;
    int lanes;  // floats per vector register
    // Direct convolution: the shapes this level offers (the caller picks the cheaper for its
    // map) and the tile itself.
    // Two shapes for convolutions with several output channels a group, and one of a single
    // channel by many vectors for depthwise ones (one output channel a group).
    TileShape direct_shapes[3];
    void (*direct_tile)(int shape, const DirectTileArgs& a);
    // Gather convolution: sums[0 .. ld) = the sum of the rows w + e[k] * ld (k < n, in order),
    // from zero; ld a multiple of 16.
    void (*gather_sums)(const float* w, std::int64_t ld, const std::uint32_t* e, std::uint32_t n,
                        float* sums);
    // One output row's sums [ow][ld] into y[co * plane + row0 + ox], plus bias[co] when given.
    void (*gather_store)(const float* sums, std::int64_t ld, std::int64_t ow, std::int64_t cout,
                         std::int64_t plane, std::int64_t row0, const float* bias, float* y);
    void (*token_rows)(const TokenRowsArgs& a);
    // The positions of the non-zero bytes of f[0, len) plus base, ascending, into out (room for
    // len); returns their count.
    // BSA (attention/spiking/bsa.cpp). Scores of `rows` (1 or 4) queries q + r * D against the keys
    // kt [dh][np] (transposed, np a multiple of 16, zero past N): S[r * N + j] = sum over the
    // channels c of q[r * D + c] * kt[c * np + j], every term -1, 0 or +1.
    void (*bsa_scores)(const float* q, std::int64_t D, int rows, const float* kt, std::int64_t np,
                       std::int64_t N, std::int64_t dh, std::int32_t* S);
    // Value mixing of `rows` (1 or 4) query rows: out[r * ld + c] = sum over keys j, ascending,
    // of w[r][j] * v[j * D + c] (c < dh), each product rounded before its add.
    void (*bsa_mix)(const float* const* w, int rows, const float* v, std::int64_t N, std::int64_t D,
                    std::int64_t dh, float* out, std::int64_t ld);
    // base + j for every set bit j of mask, ascending, into out (room for 64: whole vectors may
    // be stored); returns how many.
    std::size_t (*mask_to_indices)(std::uint64_t mask, std::uint32_t base, std::uint32_t* out);
    std::size_t (*flags_to_indices)(const std::uint8_t* f, std::int64_t len, std::uint32_t base,
                                    std::uint32_t* out);
};

// Elementwise loops outside the kernels (neuron updates, attention neurons): at_level(f) runs
// f(), a lambda, in a copy compiled for the kernels' level. `flatten` inlines everything f
// calls into that copy, so the compiler vectorises it with the level's instructions; the
// closure type is the caller's own, so no other code can link to these copies. The closure is
// taken by value: a local copy can be split into registers, where one behind a reference is
// re-read after every byte store (a char may alias it), which kept loops from vectorising.
// Call it at the top of a stage, never inside another at_level: in a lower level's copy the
// calls to the higher levels' copies cannot be inlined, the closure's references escape into
// them, and the loops stop vectorising again (measured: the LIF update 4x slower). Same operations
// in the same order at every level: elementwise loops round alike whatever the vector width.
#if defined(__x86_64__) && defined(__GNUC__)
#define TERNION_SIMD_V3_ISA "avx2,fma,bmi,bmi2,f16c,movbe,lzcnt"
#define TERNION_SIMD_V4_ISA TERNION_SIMD_V3_ISA ",avx512f,avx512bw,avx512cd,avx512dq,avx512vl"
template <class F>
[[gnu::target(TERNION_SIMD_V4_ISA), gnu::flatten]] void run_v4(F f) {
    f();
}
template <class F>
[[gnu::target(TERNION_SIMD_V3_ISA), gnu::flatten]] void run_v3(F f) {
    f();
}
#endif
template <class F>
[[gnu::flatten]] void run_v2(F f) {
    f();
}

namespace detail {
extern std::atomic<const Table*> active;  // null until the first call of kernels()
const Table& choose_table();
}  // namespace detail

// The kernels in use: the CPU's best level, or TERNION_ISA's. Chosen at the first call; throws
// std::runtime_error when TERNION_ISA is not a level or asks for more than the CPU runs. Inline:
// per-mask callers (index lists) pay one load, not a call.
inline const Table& kernels() {
    const Table* t = detail::active.load(std::memory_order_relaxed);
    return t ? *t : detail::choose_table();
}
inline Level level() {
    return kernels().level;
}

template <class F>
void at_level(const F& f) {
#if defined(__x86_64__) && defined(__GNUC__)
    switch (level()) {
        case Level::v4:
            run_v4(f);
            return;
        case Level::v3:
            run_v3(f);
            return;
        case Level::v2:
            break;
    }
#endif
    run_v2(f);
}

}  // namespace ternion::simd
