// The kernels of sim/simd/simd.hpp for one instruction-set level. This file is compiled once per
// level (sim/simd/CMakeLists.txt) with that level's -march and TERNION_SIMD_LEVEL = 2, 3 or 4;
// everything in it lives in that level's namespace, and the only inline code of other headers it
// uses is always inlined (sim/simd/transpose.hpp), so that no out-of-line copy compiled for a
// higher level can stand in for a lower one's at link time (tests/sim/simd_symbols.sh checks
// the object files).
//
// Register budgets (vector registers: 16 below AVX-512, 32 with it):
//   direct tile  Co x Nv sums + Nv inputs + 1 broadcast weight (+1 product without FMA, as
//                for inputs other than -1, 0, 1 at every level)
//                v4 8x2, 4x5 (16 + 2 + 1, 20 + 5 + 1 of 32); v3 6x2, 4x3 (15, 16);
//                v2 4x2, 3x3 (12, 14); depthwise (one channel a group) v4 1x12 (25),
//                v3 1x6 (13), v2 1x6 (14).
//   gather       up to 12 vectors of sums, + 1 row: 192 / 96 / 48 channels per pass.
//   token event  one pass holds up to 8 vectors of sums (64 outputs: 4 on v4, 8 on v3; v2 takes
//                the 64 in two passes of 8).
//   BSA          4 rows x 16 keys or channels (4 x 8 on v2): 4 / 8 / 8 vectors of sums.
//   token dense  R tokens x W outputs: v4 6 x 64 (24 sums + 4 weights), v3 2 x 32 (8 + 4 + 2),
//                v2 2 x 16 (8 + 4 + 2).
#include <cstdint>
#include <cstring>

#include "sim/simd/simd.hpp"
#if TERNION_SIMD_LEVEL >= 3
#include <immintrin.h>

#include "sim/simd/transpose.hpp"
#endif

#if TERNION_SIMD_LEVEL == 4
#define TERNION_SIMD_NS v4
#elif TERNION_SIMD_LEVEL == 3
#define TERNION_SIMD_NS v3
#else
#define TERNION_SIMD_NS v2
#endif

namespace ternion::simd::TERNION_SIMD_NS {
namespace {

constexpr int L = TERNION_SIMD_LEVEL == 4 ? 16 : TERNION_SIMD_LEVEL == 3 ? 8 : 4;
typedef float vf __attribute__((vector_size(4 * L)));
typedef std::int32_t vi __attribute__((vector_size(4 * L)));
typedef float vfu __attribute__((vector_size(4 * L), aligned(4)));  // unaligned

// Whole-vector loads and stores at any float address: plain moves (a memcpy into a vector array
// made GCC copy through the stack and keep the sums in memory across the loop).
inline void loadu(vf& v, const float* p) {
    v = *reinterpret_cast<const vfu*>(p);
}
inline void storeu(float* p, const vf& v) {
    *reinterpret_cast<vfu*>(p) = v;
}

constexpr std::int64_t lmin(std::int64_t a, std::int64_t b) {
    return a < b ? a : b;
}
constexpr std::int64_t lmax(std::int64_t a, std::int64_t b) {
    return a < b ? b : a;
}

// ---- direct convolution ----------------------------------------------------------------

#if TERNION_SIMD_LEVEL == 4
constexpr TileShape kShapes[3] = {{8, 2}, {4, 5}, {1, 12}};
#elif TERNION_SIMD_LEVEL == 3
constexpr TileShape kShapes[3] = {{6, 2}, {4, 3}, {1, 6}};
#else
constexpr TileShape kShapes[3] = {{4, 2}, {3, 3}, {1, 6}};
#endif

// acc + x * w. The direct tile's inputs are -1, 0 or +1: every product is exact, so a fused
// multiply-add rounds as the separate add does, at one instruction instead of two.
inline void madd(vf& acc, const vf& x, float w) {
#if TERNION_SIMD_LEVEL == 4
    acc = (vf)_mm512_fmadd_ps((__m512)x, _mm512_set1_ps(w), (__m512)acc);
#elif TERNION_SIMD_LEVEL == 3
    acc = (vf)_mm256_fmadd_ps((__m256)x, _mm256_set1_ps(w), (__m256)acc);
#else
    acc += x * w;
#endif
}

// acc + x * w rounded twice, as the event scatter adds a weighted tap (-ffp-contract=off keeps
// the two instructions apart): for inputs other than -1, 0, 1.
inline void mul_add(vf& acc, const vf& x, float w) {
    acc += x * w;
}

// Co channels x Nv vectors, each output summed over (channel, row, column) in order.
template <int Co, int Nv, bool Ternary>
void direct(const DirectTileArgs& a) {
    vf acc[Co][Nv];
    for (int j = 0; j < Co; ++j)
        for (int v = 0; v < Nv; ++v) acc[j][v] = vf{};
    const float* xv[Nv];
    for (int v = 0; v < Nv; ++v) xv[v] = a.xg + a.base[v];
    for (std::int64_t cl = 0; cl < a.cin_g; ++cl) {
        const float* wc = a.wb + cl * a.kh * a.kw * Co;
        for (std::int64_t ky = 0; ky < a.kh; ++ky)
            for (std::int64_t kx = 0; kx < a.kw; ++kx) {
                const std::int64_t off = cl * a.plane + ky * a.Wp + kx;
                vf x[Nv];
                for (int v = 0; v < Nv; ++v) loadu(x[v], xv[v] + off);
                const float* w = wc + (ky * a.kw + kx) * Co;
                for (int j = 0; j < Co; ++j)
                    for (int v = 0; v < Nv; ++v) {
                        if constexpr (Ternary)
                            madd(acc[j][v], x[v], w[j]);
                        else
                            mul_add(acc[j][v], x[v], w[j]);
                    }
            }
    }
    for (int j = 0; j < Co; ++j)
        for (int v = 0; v < Nv; ++v) storeu(a.out + (j * Nv + v) * L, acc[j][v]);
}

void direct_tile(int shape, const DirectTileArgs& a) {
    using Tile = void (*)(const DirectTileArgs&);
    constexpr Tile kTiles[3][2] = {
        {direct<kShapes[0].co, kShapes[0].nv, false>, direct<kShapes[0].co, kShapes[0].nv, true>},
        {direct<kShapes[1].co, kShapes[1].nv, false>, direct<kShapes[1].co, kShapes[1].nv, true>},
        {direct<kShapes[2].co, kShapes[2].nv, false>, direct<kShapes[2].co, kShapes[2].nv, true>}};
    kTiles[shape >= 0 && shape < 3 ? shape : 0][a.ternary ? 1 : 0](a);
}

// ---- gather convolution ------------------------------------------------------------------

constexpr int kMaxVectors = 12;

template <int NV>
void sum_list(const float* __restrict w, std::int64_t ld, const std::uint32_t* __restrict e,
              std::uint32_t n, float* __restrict sums) {
    vf acc[NV];
    for (int v = 0; v < NV; ++v) acc[v] = vf{};
    for (std::uint32_t k = 0; k < n; ++k) {
        const vf* r = reinterpret_cast<const vf*>(w + static_cast<std::int64_t>(e[k]) * ld);
        for (int v = 0; v < NV; ++v) acc[v] += r[v];
    }
    for (int v = 0; v < NV; ++v) storeu(sums + v * L, acc[v]);
}

using SumList = void (*)(const float*, std::int64_t, const std::uint32_t*, std::uint32_t, float*);
constexpr SumList kSumList[kMaxVectors + 1] = {
    nullptr,     sum_list<1>, sum_list<2>, sum_list<3>,  sum_list<4>,  sum_list<5>, sum_list<6>,
    sum_list<7>, sum_list<8>, sum_list<9>, sum_list<10>, sum_list<11>, sum_list<12>};

void gather_sums(const float* w, std::int64_t ld, const std::uint32_t* e, std::uint32_t n,
                 float* sums) {
    const std::int64_t vectors = ld / L;
    for (std::int64_t v0 = 0; v0 < vectors; v0 += kMaxVectors) {
        const auto nv = static_cast<int>(lmin(kMaxVectors, vectors - v0));
        kSumList[nv](w + v0 * L, ld, e, n, sums + v0 * L);
    }
}

// Blocks of L columns by L channels transposed in registers where the level has a transpose;
// the rest one by one. Each stored value is its sum, plus the bias after it.
void gather_store(const float* sums, std::int64_t ld, std::int64_t ow, std::int64_t cout,
                  std::int64_t plane, std::int64_t row0, const float* bias, float* y) {
    std::int64_t ox0 = 0;
#if TERNION_SIMD_LEVEL == 4
    for (; ox0 + 16 <= ow; ox0 += 16)
        for (std::int64_t co0 = 0; co0 < cout; co0 += 16) {
            __m512 r[16];
            for (int i = 0; i < 16; ++i) r[i] = _mm512_load_ps(sums + (ox0 + i) * ld + co0);
            simd::transpose16(r);
            const int nc = static_cast<int>(lmin(16, cout - co0));
            for (int c = 0; c < nc; ++c) {
                if (bias) r[c] = _mm512_add_ps(r[c], _mm512_set1_ps(bias[co0 + c]));
                _mm512_storeu_ps(y + (co0 + c) * plane + row0 + ox0, r[c]);
            }
        }
#elif TERNION_SIMD_LEVEL == 3
    for (; ox0 + 8 <= ow; ox0 += 8)
        for (std::int64_t co0 = 0; co0 < cout; co0 += 8) {
            __m256 r[8];
            for (int i = 0; i < 8; ++i) r[i] = _mm256_load_ps(sums + (ox0 + i) * ld + co0);
            simd::transpose8(r);
            const int nc = static_cast<int>(lmin(8, cout - co0));
            for (int c = 0; c < nc; ++c) {
                if (bias) r[c] = _mm256_add_ps(r[c], _mm256_set1_ps(bias[co0 + c]));
                _mm256_storeu_ps(y + (co0 + c) * plane + row0 + ox0, r[c]);
            }
        }
#endif
    if (ox0 == ow) return;
    for (std::int64_t co = 0; co < cout; ++co) {
        float* yr = y + co * plane + row0;
        for (std::int64_t ox = ox0; ox < ow; ++ox)
            yr[ox] = bias ? sums[ox * ld + co] + bias[co] : sums[ox * ld + co];
    }
}

// ---- token rows --------------------------------------------------------------------------

constexpr std::int64_t kTile = 64;        // tokens per tile: 64 x 256 B of running sums
constexpr std::int64_t kDenseChunk = 48;  // channels per chunk at high density: 12 KiB
constexpr int kGroupVectors = 64 / L;     // vectors of one group of 64 outputs
constexpr int kPasses = kGroupVectors > 8 ? 2 : 1;
constexpr int kPassVectors = kGroupVectors / kPasses;

// Bit r of mz: s[r] != 0; of mt: s[r] is neither 0 nor +-1 (r < len <= 64).
inline void masks(const float* s, std::int64_t len, std::uint64_t& mz, std::uint64_t& mt) {
    mz = mt = 0;
#if TERNION_SIMD_LEVEL == 4
    if (len == 64) {
        const __m512 one = _mm512_set1_ps(1.0f);
        for (int j = 0; j < 4; ++j) {
            const __m512 v = _mm512_load_ps(s + 16 * j);
            // NEQ_UQ: NaN counts as non-zero, as `s != 0` does.
            const std::uint64_t z = _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_NEQ_UQ);
            const std::uint64_t u = _mm512_cmp_ps_mask(_mm512_abs_ps(v), one, _CMP_EQ_OQ);
            mz |= z << (16 * j);
            mt |= (z & ~u & 0xffffu) << (16 * j);
        }
        return;
    }
#elif TERNION_SIMD_LEVEL == 3
    if (len == 64) {
        const __m256 one = _mm256_set1_ps(1.0f);
        const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
        for (int j = 0; j < 8; ++j) {
            const __m256 v = _mm256_load_ps(s + 8 * j);
            const auto z = static_cast<std::uint64_t>(
                _mm256_movemask_ps(_mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_NEQ_UQ)));
            const auto u = static_cast<std::uint64_t>(
                _mm256_movemask_ps(_mm256_cmp_ps(_mm256_and_ps(v, abs_mask), one, _CMP_EQ_OQ)));
            mz |= z << (8 * j);
            mt |= (z & ~u & 0xffu) << (8 * j);
        }
        return;
    }
#endif
    for (std::int64_t r = 0; r < len; ++r) {
        mz |= static_cast<std::uint64_t>(s[r] != 0.0f) << r;
        mt |= static_cast<std::uint64_t>(s[r] != 0.0f && s[r] != 1.0f && s[r] != -1.0f) << r;
    }
}

// Channels per chunk: 48 (12 KiB of weights, in L1 beside a tile's sums) when inputs are dense
// enough; sparser inputs get wider chunks, so that a token still meets ~24 events per chunk and
// the per-chunk cost (its sums loaded and stored, a mispredicted loop exit) stays small.
std::int64_t chunk_for(std::int64_t in, std::int64_t ntok, std::int64_t events) {
    const double per_channel = static_cast<double>(events) / static_cast<double>(in * ntok);
    std::int64_t c = per_channel > 0 ? static_cast<std::int64_t>(24.0 / per_channel) : in;
    c = lmax(kDenseChunk, (c + 15) / 16 * 16);
    return lmin(c, in);
}

// A tile's sums of one group of 64 outputs (tokens [t0, t1)) into y, with the masks.
void write_group(const float* sums, std::int64_t t0, std::int64_t t1, std::int64_t len,
                 std::int64_t out, std::int64_t s0, std::int64_t groups, float* y,
                 std::uint64_t* nz, std::uint64_t* nt) {
    const std::int64_t g = s0 / 64;
    for (std::int64_t t = t0; t < t1; ++t) {
        const float* s = sums + (t - t0) * 64;
        float* yt = y + t * out + s0;
        if (len == 64) {  // whole vector moves, not a library call per token
            const vf* sv = reinterpret_cast<const vf*>(s);
            vfu* yv = reinterpret_cast<vfu*>(yt);
            for (int v = 0; v < kGroupVectors; ++v) yv[v] = sv[v];
        } else {
            for (std::int64_t r = 0; r < len; ++r) yt[r] = s[r];
        }
        if (!nz) continue;
        std::uint64_t mz, mt;
        masks(s, len, mz, mt);
        nz[t * groups + g] = mz;
        nt[t * groups + g] = mt;
    }
}

// ones: every x is +1; signs: every x is +1 or -1, applied by flipping the weight's sign bit
// (acc + (-w) is acc - w exactly; a data-dependent branch would mispredict half the time);
// values: any x, multiplied (not fused: the dense engine rounds the product first).
enum class Mode { ones, signs, values };

// One token's events of one chunk into the sums of one pass (kPassVectors vectors from `p0`).
template <Mode M>
inline std::uint32_t events_pass(vf* a, const float* __restrict P, std::int64_t p0,
                                 const std::uint32_t* __restrict chan, const float* __restrict xs,
                                 std::uint32_t k, std::uint32_t kend, std::uint32_t c1) {
    for (; k < kend && chan[k] < c1; ++k) {
        const vf* col = reinterpret_cast<const vf*>(P + chan[k] * 64 + p0);
        if constexpr (M == Mode::ones) {
            for (int v = 0; v < kPassVectors; ++v) a[v] += col[v];
        } else if constexpr (M == Mode::signs) {
            std::int32_t bits;
            std::memcpy(&bits, xs + k, 4);
            const std::int32_t s = bits & static_cast<std::int32_t>(0x80000000u);
            // Vector casts reinterpret bits.
            for (int v = 0; v < kPassVectors; ++v) a[v] += (vf)((vi)col[v] ^ s);
        } else {
            const float xv = xs[k];
            for (int v = 0; v < kPassVectors; ++v) a[v] += xv * col[v];
        }
    }
    return k;
}

// For rows [r0, r1) of every token t: y[t, r] = (sum over the active channels c of t, ascending,
// of x * W[r, c]) + bias[r] (or bias[r] + the sum, BiasFirst). The running sums of a group of 64
// rows stay in registers (in two passes on levels with narrow registers), so an active input
// costs 64 / L weight loads and adds. Channels go in chunks whose panel stays in L1 while a
// tile of tokens passes; each token's sums continue from a scratch row, chunk after chunk.
template <Mode M, bool BiasFirst>
void rows_kernel(const TokenRowsArgs& a, std::int64_t chunk) {
    const std::int64_t in = a.in, out = a.out, groups = (out + 63) / 64, ntok = a.ntok;
    const std::uint32_t* __restrict begin = a.begin;
    std::uint32_t* __restrict cursor = a.cursor;
    for (std::int64_t s0 = a.r0; s0 < a.r1; s0 += 64) {
        const std::int64_t g = s0 / 64;
        const std::int64_t len = lmin(64, out - s0);
        alignas(64) float bpad[64] = {};
        if (a.bias)
            for (std::int64_t r = 0; r < len; ++r) bpad[r] = a.bias[s0 + r];
        const vf* bv = reinterpret_cast<const vf*>(bpad);
        const float* P = a.panels + g * in * 64;
        for (std::int64_t t0 = 0; t0 < ntok; t0 += kTile) {
            const std::int64_t t1 = lmin(ntok, t0 + kTile);
            for (std::int64_t t = t0; t < t1; ++t) cursor[t] = begin[t];
            for (std::int64_t c0 = 0; c0 < in; c0 += chunk) {
                const auto c1 = static_cast<std::uint32_t>(lmin(in, c0 + chunk));
                const bool first = c0 == 0, last = c1 == in;
                // The next chunk's weights (those of the next group after the last chunk) come
                // from L3 or memory: fetch them a few lines per token while this chunk runs.
                const char* next = reinterpret_cast<const char*>(
                    !last ? P + c1 * 64 : (s0 + 64 < a.r1 ? P + in * 64 : nullptr));
                const std::int64_t next_lines = next ? lmin(chunk, last ? in : in - c1) * 4 : 0;
                const std::int64_t per = (next_lines + (t1 - t0) - 1) / (t1 - t0);
                for (std::int64_t t = t0; t < t1; ++t) {
                    for (std::int64_t l = (t - t0) * per; l < lmin(next_lines, (t - t0 + 1) * per);
                         ++l)
                        if (chunk > kDenseChunk)
                            __builtin_prefetch(next + l * 64, 0, 2);  // to L2: too big for L1
                        else
                            __builtin_prefetch(next + l * 64);
                    vf* st = reinterpret_cast<vf*>(a.sums + (t - t0) * 64);
                    std::uint32_t k = cursor[t];
                    for (int p = 0; p < kPasses; ++p) {
                        const int v0 = p * kPassVectors;
                        vf acc[kPassVectors];
                        for (int v = 0; v < kPassVectors; ++v)
                            acc[v] = first ? (BiasFirst && a.bias ? bv[v0 + v] : vf{}) : st[v0 + v];
                        k = events_pass<M>(acc, P, v0 * L, a.chan, a.xs, cursor[t], begin[t + 1],
                                           c1);
                        if (!BiasFirst && last && a.bias)
                            for (int v = 0; v < kPassVectors; ++v) acc[v] += bv[v0 + v];
                        for (int v = 0; v < kPassVectors; ++v) st[v0 + v] = acc[v];
                    }
                    cursor[t] = k;
                }
            }
            write_group(a.sums, t0, t1, len, out, s0, groups, a.y, a.nz, a.nt);
        }
    }
}

template <Mode M>
void rows_mode(const TokenRowsArgs& a) {
    const std::int64_t chunk = chunk_for(a.in, a.ntok, a.begin[a.ntok]);
    (a.bias_first ? rows_kernel<M, true> : rows_kernel<M, false>)(a, chunk);
}

// Dense inputs: a register tile of R tokens by W outputs takes every channel in ascending
// order, each weight vector loaded once for the R tokens. Zero inputs are multiplied like the
// others: 0 * w adds +-0, which leaves a sum as it is, so each output gets exactly the event
// kernel's sum.
#if TERNION_SIMD_LEVEL == 4
constexpr int kDenseTokens = 6, kDenseWidth = 64;
#elif TERNION_SIMD_LEVEL == 3
constexpr int kDenseTokens = 2, kDenseWidth = 32;
#else
constexpr int kDenseTokens = 2, kDenseWidth = 16;
#endif
constexpr int kDenseVectors = kDenseWidth / L;

// sums[r * 64 + o0 ..][W]: tokens x[r * in ..], outputs [o0, o0 + W) of the panel P.
template <int R>
void dense_tile(const float* __restrict P, std::int64_t o0, const float* __restrict x,
                std::int64_t in, const vf* bias, bool bias_first, float* sums) {
    vf acc[R][kDenseVectors];
    for (int r = 0; r < R; ++r)
        for (int v = 0; v < kDenseVectors; ++v) acc[r][v] = bias && bias_first ? bias[v] : vf{};
    for (std::int64_t c = 0; c < in; ++c) {
        const vf* col = reinterpret_cast<const vf*>(P + c * 64 + o0);
        vf w[kDenseVectors];
        for (int v = 0; v < kDenseVectors; ++v) w[v] = col[v];
        for (int r = 0; r < R; ++r) {
            const float xv = x[r * in + c];
            for (int v = 0; v < kDenseVectors; ++v) acc[r][v] += xv * w[v];
        }
    }
    if (bias && !bias_first)
        for (int r = 0; r < R; ++r)
            for (int v = 0; v < kDenseVectors; ++v) acc[r][v] += bias[v];
    for (int r = 0; r < R; ++r)
        for (int v = 0; v < kDenseVectors; ++v) storeu(sums + r * 64 + o0 + v * L, acc[r][v]);
}

void dense_rows(const TokenRowsArgs& a) {
    const std::int64_t in = a.in, out = a.out, groups = (out + 63) / 64, ntok = a.ntok;
    for (std::int64_t s0 = a.r0; s0 < a.r1; s0 += 64) {
        const std::int64_t g = s0 / 64, len = lmin(64, out - s0);
        alignas(64) float bpad[64] = {};
        if (a.bias)
            for (std::int64_t r = 0; r < len; ++r) bpad[r] = a.bias[s0 + r];
        const float* P = a.panels + g * in * 64;
        for (std::int64_t t0 = 0; t0 < ntok; t0 += kTile) {
            const std::int64_t t1 = lmin(ntok, t0 + kTile);
            for (std::int64_t o0 = 0; o0 < 64; o0 += kDenseWidth) {
                const vf* bv = a.bias ? reinterpret_cast<const vf*>(bpad + o0) : nullptr;
                std::int64_t t = t0;
                for (; t + kDenseTokens <= t1; t += kDenseTokens)
                    dense_tile<kDenseTokens>(P, o0, a.values + t * in, in, bv, a.bias_first,
                                             a.sums + (t - t0) * 64);
                for (; t < t1; ++t)
                    dense_tile<1>(P, o0, a.values + t * in, in, bv, a.bias_first,
                                  a.sums + (t - t0) * 64);
            }
            write_group(a.sums, t0, t1, len, out, s0, groups, a.y, a.nz, a.nt);
        }
    }
}

void token_rows(const TokenRowsArgs& a) {
    if (a.dense)
        dense_rows(a);
    else if (!a.unit)
        rows_mode<Mode::values>(a);
    else if (a.negative)
        rows_mode<Mode::signs>(a);
    else
        rows_mode<Mode::ones>(a);
}

// ---- BSA -------------------------------------------------------------------------------

// Keys per pass of the scores and channels per pass of the mixing: 16 (4 rows x 16 / L
// vectors of sums), 8 on SSE so that the 4 rows' sums stay within 8 of its 16 registers.
constexpr int kBsaBlock = L == 4 ? 8 : 16;
constexpr int kBsaVectors = kBsaBlock / L;

template <int R>
void scores(const float* q, std::int64_t D, const float* kt, std::int64_t np, std::int64_t N,
            std::int64_t dh, std::int32_t* S) {
    for (std::int64_t j0 = 0; j0 < np; j0 += kBsaBlock) {
        vf acc[R][kBsaVectors];
        for (int r = 0; r < R; ++r)
            for (int v = 0; v < kBsaVectors; ++v) acc[r][v] = vf{};
        for (std::int64_t c = 0; c < dh; ++c) {
            vf k[kBsaVectors];
            for (int v = 0; v < kBsaVectors; ++v) loadu(k[v], kt + c * np + j0 + v * L);
            for (int r = 0; r < R; ++r) {
                const float x = q[r * D + c];
                for (int v = 0; v < kBsaVectors; ++v) acc[r][v] += x * k[v];
            }
        }
        for (int r = 0; r < R; ++r)
            for (std::int64_t j = j0; j < lmin(N, j0 + kBsaBlock); ++j)
                S[r * N + j] = static_cast<std::int32_t>(acc[r][(j - j0) / L][(j - j0) % L]);
    }
}

void bsa_scores(const float* q, std::int64_t D, int rows, const float* kt, std::int64_t np,
                std::int64_t N, std::int64_t dh, std::int32_t* S) {
    (rows == 4 ? scores<4> : scores<1>)(q, D, kt, np, N, dh, S);
}

// The sums of R rows by a block of channels stay in registers across all keys: R independent
// add chains hide the add latency.
template <int R>
void mix(const float* const* w, const float* __restrict v, std::int64_t N, std::int64_t D,
         std::int64_t dh, float* out, std::int64_t ld) {
    std::int64_t c0 = 0;
    for (; c0 + kBsaBlock <= dh; c0 += kBsaBlock) {
        vf acc[R][kBsaVectors];
        for (int r = 0; r < R; ++r)
            for (int u = 0; u < kBsaVectors; ++u) acc[r][u] = vf{};
        for (std::int64_t j = 0; j < N; ++j) {
            vf x[kBsaVectors];
            for (int u = 0; u < kBsaVectors; ++u) loadu(x[u], v + j * D + c0 + u * L);
            for (int r = 0; r < R; ++r)
                for (int u = 0; u < kBsaVectors; ++u) acc[r][u] += w[r][j] * x[u];
        }
        for (int r = 0; r < R; ++r)
            for (int u = 0; u < kBsaVectors; ++u) storeu(out + r * ld + c0 + u * L, acc[r][u]);
    }
    for (; c0 < dh; ++c0)  // channels past the last block (heads of other widths)
        for (int r = 0; r < R; ++r) {
            float a = 0.0f;
            for (std::int64_t j = 0; j < N; ++j) a += w[r][j] * v[j * D + c0];
            out[r * ld + c0] = a;
        }
}

void bsa_mix(const float* const* w, int rows, const float* v, std::int64_t N, std::int64_t D,
             std::int64_t dh, float* out, std::int64_t ld) {
    (rows == 4 ? mix<4> : mix<1>)(w, v, N, D, dh, out, ld);
}

// ---- index lists -------------------------------------------------------------------------

#if TERNION_SIMD_LEVEL == 3
// For each byte m: the positions of its set bits, ascending, as 8 lanes (the rest zero). AVX2
// has no compress instruction: a table lookup and an add turn 8 flags into their indices.
struct BitPositions {
    alignas(32) std::int32_t lanes[256][8];
};
constexpr BitPositions make_bit_positions() {
    BitPositions t{};
    for (int m = 0; m < 256; ++m) {
        int n = 0;
        for (int b = 0; b < 8; ++b)
            if (m >> b & 1) t.lanes[m][n++] = b;
    }
    return t;
}
constexpr BitPositions kBitPositions = make_bit_positions();
#endif

std::size_t mask_to_indices(std::uint64_t mask, std::uint32_t base, std::uint32_t* out) {
    std::size_t n = 0;
#if TERNION_SIMD_LEVEL == 4
    // Compressed in registers, then a plain store: Zen 4 microcodes compress-to-memory.
    const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    for (int q = 0; q < 4 && mask; ++q, mask >>= 16) {
        const auto m = static_cast<__mmask16>(mask & 0xffffu);
        const __m512i idx =
            _mm512_add_epi32(iota, _mm512_set1_epi32(static_cast<int>(base) + 16 * q));
        _mm512_storeu_si512(out + n, _mm512_maskz_compress_epi32(m, idx));
        n += static_cast<std::size_t>(__builtin_popcount(m));
    }
#elif TERNION_SIMD_LEVEL == 3
    // 8 flags at a time through the table, then a plain store of 8 indices.
    for (std::uint32_t q = 0; mask; q += 8, mask >>= 8) {
        const auto m = static_cast<unsigned>(mask & 0xffu);
        if (!m) continue;
        const __m256i pos =
            _mm256_load_si256(reinterpret_cast<const __m256i*>(kBitPositions.lanes[m]));
        const __m256i idx = _mm256_add_epi32(pos, _mm256_set1_epi32(static_cast<int>(base + q)));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + n), idx);
        n += static_cast<std::size_t>(__builtin_popcount(m));
    }
#else
    while (mask) {
        out[n++] = base + static_cast<std::uint32_t>(__builtin_ctzll(mask));
        mask &= mask - 1;
    }
#endif
    return n;
}

std::size_t flags_to_indices(const std::uint8_t* f, std::int64_t len, std::uint32_t base,
                             std::uint32_t* out) {
    std::size_t n = 0;
    std::int64_t i = 0;
#if TERNION_SIMD_LEVEL == 4
    // 64 flags to a mask, compressed 16 indices at a time in registers, then a plain store
    // (mask_to_indices). Stores run up to 63 entries past the last hit; n <= i keeps them
    // inside the room of len while a whole 64 remain.
    for (; i + 64 <= len; i += 64) {
        const __m512i bytes = _mm512_loadu_si512(f + i);
        const std::uint64_t m = _mm512_test_epi8_mask(bytes, bytes);
        if (m) n += mask_to_indices(m, base + static_cast<std::uint32_t>(i), out + n);
    }
#elif TERNION_SIMD_LEVEL == 3
    // 32 flags to a mask, then through the table 8 at a time (mask_to_indices). Stores run up
    // to 7 entries past the last hit; n <= i keeps them inside the room of len.
    for (; i + 32 <= len; i += 32) {
        const __m256i bytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(f + i));
        const auto m = static_cast<std::uint32_t>(
            ~_mm256_movemask_epi8(_mm256_cmpeq_epi8(bytes, _mm256_setzero_si256())));
        if (m) n += mask_to_indices(m, base + static_cast<std::uint32_t>(i), out + n);
    }
#else
    for (; i + 8 <= len; i += 8) {
        std::uint64_t w;
        std::memcpy(&w, f + i, 8);
        while (w) {
            out[n++] = base + static_cast<std::uint32_t>(i + (__builtin_ctzll(w) >> 3));
            w &= w - 1;
        }
    }
#endif
    for (; i < len; ++i) {
        out[n] = base + static_cast<std::uint32_t>(i);
        n += f[i] != 0;
    }
    return n;
}

}  // namespace

const Table& table() {
    static constexpr Table t{Level(TERNION_SIMD_LEVEL),
                             L,
                             {kShapes[0], kShapes[1], kShapes[2]},
                             direct_tile,
                             gather_sums,
                             gather_store,
                             token_rows,
                             bsa_scores,
                             bsa_mix,
                             mask_to_indices,
                             flags_to_indices};
    return t;
}

}  // namespace ternion::simd::TERNION_SIMD_NS
