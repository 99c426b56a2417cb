// ann_levels.hpp's kernels for one x86-64 level: compiled once per level (attention/CMakeLists.txt)
// with that level's -march and TERNION_SIMD_LEVEL = 2, 3 or 4. Everything here lives in the
// level's namespace ternion::ann::vN or is always inlined (intrinsics), so no out-of-line copy
// built for a higher level can stand in for a lower one's at link time (the ann_symbols test).
//
// GEMM tiles (vector registers: 16 below AVX-512, 32 with it): v4 6 rows x 64 columns (24 sums,
// 4 of B, 1 broadcast), 16- or 32-column tails 12 rows tall; v3 6 rows x 16 columns (12 + 2 + 1).
#include <cstdint>

#include "attention/ann/ann_levels.hpp"
#if TERNION_SIMD_LEVEL >= 3
#include <immintrin.h>
#endif

#if TERNION_SIMD_LEVEL == 4
#define TERNION_ANN_NS v4
#elif TERNION_SIMD_LEVEL == 3
#define TERNION_ANN_NS v3
#else
#define TERNION_ANN_NS v2
#endif

namespace ternion::ann::TERNION_ANN_NS {
namespace {

using i64 = std::int64_t;

constexpr i64 lmin(i64 a, i64 b) {
    return a < b ? a : b;
}

// ---- packed GEMM ---------------------------------------------------------------------------

#if TERNION_SIMD_LEVEL >= 3

#if TERNION_SIMD_LEVEL == 4
constexpr int L = 16;  // floats per vector
constexpr int kMaxV = 4;
using vf = __m512;
inline vf vzero() {
    return _mm512_setzero_ps();
}
inline vf vload(const float* p) {
    return _mm512_load_ps(p);
}
inline vf vbroadcast(float a) {
    return _mm512_set1_ps(a);
}
inline vf vfma(vf a, vf b, vf c) {
    return _mm512_fmadd_ps(a, b, c);
}
inline vf vadd(vf a, vf b) {
    return _mm512_add_ps(a, b);
}
inline __mmask16 lanes(int left) {
    return left >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << left) - 1u);
}
inline vf vload_part(const float* p, int left) {
    return _mm512_maskz_loadu_ps(lanes(left), p);
}
inline void vstore_part(float* p, vf v, int left, bool stream) {
    if (stream && left >= 16)
        _mm512_stream_ps(p, v);
    else
        _mm512_mask_storeu_ps(p, lanes(left), v);
}
#else
constexpr int L = 8;
constexpr int kMaxV = 2;
using vf = __m256;
inline vf vzero() {
    return _mm256_setzero_ps();
}
inline vf vload(const float* p) {
    return _mm256_load_ps(p);
}
inline vf vbroadcast(float a) {
    return _mm256_set1_ps(a);
}
inline vf vfma(vf a, vf b, vf c) {
    return _mm256_fmadd_ps(a, b, c);
}
inline vf vadd(vf a, vf b) {
    return _mm256_add_ps(a, b);
}
inline __m256i lanes(int left) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(left), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
inline vf vload_part(const float* p, int left) {
    return _mm256_maskload_ps(p, lanes(left));
}
inline void vstore_part(float* p, vf v, int left, bool stream) {
    if (stream && left >= 8)
        _mm256_stream_ps(p, v);
    else
        _mm256_maskstore_ps(p, lanes(left), v);
}
#endif

constexpr int kRows = 6;     // rows of C per tile
constexpr i64 kBlock = 256;  // columns per block: a 512-row block of B is 512 KiB, in L2

// Rows [0, R) x vectors [0, V) of C from A (element (r, p) at A[r * ar + (p / 16) * ag + p % 16])
// and B's rows 64 floats apart from Bp; `width` columns are written. Vector v of row r is at
// C + r * cr + (v L / 16) * cg + (v L) % 16. An: rows of A the next call reads, fetched a line per
// row every 16 steps of k (rows lda apart are no pattern the hardware prefetcher runs ahead on).
template <int R, int V>
void tile(const float* __restrict A, i64 ar, i64 ag, const float* __restrict Bp, i64 k,
          const float* __restrict bias, float* __restrict C, i64 cr, i64 cg, int width,
          const float* __restrict An, bool stream) {
    vf acc[R][V];
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int v = 0; v < V; ++v) acc[r][v] = vzero();
    for (i64 p0 = 0; p0 < k; p0 += 16) {
        const float* Ap = A + (p0 / 16) * ag;
        if (An) {
#pragma GCC unroll 12
            for (int r = 0; r < R; ++r)
                _mm_prefetch(reinterpret_cast<const char*>(An + (p0 / 16) * ag + r * ar),
                             _MM_HINT_T0);
        }
        const i64 pn = lmin(16, k - p0);
        const float* Bq = Bp + p0 * 64;
        for (i64 p = 0; p < pn; ++p) {
            vf b[V];
#pragma GCC unroll 4
            for (int v = 0; v < V; ++v) b[v] = vload(Bq + p * 64 + L * v);
#pragma GCC unroll 12
            for (int r = 0; r < R; ++r) {
                const vf a = vbroadcast(Ap[r * ar + p]);
#pragma GCC unroll 4
                for (int v = 0; v < V; ++v) acc[r][v] = vfma(a, b[v], acc[r][v]);
            }
        }
    }
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int v = 0; v < V; ++v) {
            const int left = width - L * v;
            vf c = acc[r][v];
            if (bias) c = vadd(c, vload_part(bias + L * v, left));
            vstore_part(C + r * cr + (L * v / 16) * cg + (L * v) % 16, c, left, stream);
        }
}

using Tile = void (*)(const float*, i64, i64, const float*, i64, const float*, float*, i64, i64,
                      int, const float*, bool);

template <int R>
Tile pick_v(int v) {
    if constexpr (kMaxV == 4) {
        if (v == 3) return tile<R, 3>;
        if (v >= 4) return tile<R, 4>;
    }
    return v == 1 ? tile<R, 1> : tile<R, 2>;
}

Tile pick(int rows, int vectors) {
    switch (rows) {
        case 1:
            return pick_v<1>(vectors);
        case 2:
            return pick_v<2>(vectors);
        case 3:
            return pick_v<3>(vectors);
        case 4:
            return pick_v<4>(vectors);
        case 5:
            return pick_v<5>(vectors);
        default:
            return pick_v<6>(vectors);
    }
}

// Columns [c0, c1) of all rows, in blocks of kBlock columns and tiles of kRows x (L kMaxV).
void gemm_columns(const GemmArgs& g, i64 c0, i64 c1) {
    constexpr i64 S = L * kMaxV;  // columns per tile, within one panel of 64
    for (i64 j0 = c0; j0 < c1; j0 += kBlock) {
        const i64 j1 = lmin(c1, j0 + kBlock);
        for (i64 i0 = 0; i0 < g.m; i0 += kRows) {
            const int rows = static_cast<int>(lmin(kRows, g.m - i0));
            // The last tile of a row block fetches the next block's rows of A.
            const float* next = i0 + 2 * kRows <= g.m ? g.A + (i0 + kRows) * g.ar : nullptr;
            for (i64 c = j0; c < j1; c += S) {
                const int width = static_cast<int>(lmin(S, g.n - c));
                pick(rows, (width + L - 1) / L)(
                    g.A + i0 * g.ar, g.ar, g.ag, g.panels + (c / 64) * g.k * 64 + c % 64, g.k,
                    g.bias ? g.bias + c : nullptr, g.C + i0 * g.cr + (c / 16) * g.cg, g.cr, g.cg,
                    width, c + S >= j1 ? next : nullptr, g.stream);
            }
        }
    }
}

// v3: the other loop order. A 16-column strip of B (32 KiB at k = 512) stays in L1 while the
// 6-row tiles of a chunk of kChunk rows of A (in L2) pass over it: a 6 x 16 tile feeds only 12
// FMAs per line of B, too few to stream B from L2 as v4's 6 x 64 tiles do.
void gemm_strips(const GemmArgs& g) {
    constexpr i64 kChunk = 96, S = L * kMaxV;
    for (i64 r0 = 0; r0 < g.m; r0 += kChunk) {
        const i64 r1 = lmin(g.m, r0 + kChunk);
        for (i64 c = 0; c < g.n; c += S) {
            const int width = static_cast<int>(lmin(S, g.n - c));
            const float* Bp = g.panels + (c / 64) * g.k * 64 + c % 64;
            const float* bb = g.bias ? g.bias + c : nullptr;
            for (i64 i0 = r0; i0 < r1; i0 += kRows) {
                const int rows = static_cast<int>(lmin(kRows, r1 - i0));
                const float* next = i0 + 2 * kRows <= r1 ? g.A + (i0 + kRows) * g.ar : nullptr;
                pick(rows, (width + L - 1) / L)(g.A + i0 * g.ar, g.ar, g.ag, Bp, g.k, bb,
                                                g.C + i0 * g.cr + (c / 16) * g.cg, g.cr, g.cg,
                                                width, next, g.stream);
            }
        }
    }
}

void gemm(const GemmArgs& g) {
    if constexpr (L == 8) {
        gemm_strips(g);
        if (g.stream) _mm_sfence();
        return;
    }
    // v4: a last panel of 16 or 32 columns takes 12 rows at a time, so that one load of B still
    // feeds 12 or 24 FMAs. (Not more: rows of A 2 KiB apart share two L1 sets, and more than 8
    // per set would evict each other.) v3's 16-column tiles need no such tail.
    const i64 wide_end = L == 16 && g.n % 64 != 0 && g.n % 64 <= 32 ? g.n / 64 * 64 : g.n;
    gemm_columns(g, 0, wide_end);
    if constexpr (L == 16) {
        if (wide_end != g.n) {
            constexpr i64 tall_rows = 12;
            const int width = static_cast<int>(g.n - wide_end);
            const Tile tall = width <= 16 ? tile<12, 1> : tile<12, 2>;
            const float* Bp = g.panels + (wide_end / 64) * g.k * 64;
            const float* bb = g.bias ? g.bias + wide_end : nullptr;
            float* Cc = g.C + (wide_end / 16) * g.cg;
            i64 i0 = 0;
            for (; i0 + tall_rows <= g.m; i0 += tall_rows)
                tall(g.A + i0 * g.ar, g.ar, g.ag, Bp, g.k, bb, Cc + i0 * g.cr, g.cr, g.cg, width,
                     i0 + 2 * tall_rows <= g.m ? g.A + (i0 + tall_rows) * g.ar : nullptr, g.stream);
            for (; i0 < g.m; i0 += kRows)
                pick(static_cast<int>(lmin(kRows, g.m - i0)), (width + 15) / 16)(
                    g.A + i0 * g.ar, g.ar, g.ag, Bp, g.k, bb, Cc + i0 * g.cr, g.cr, g.cg, width,
                    nullptr, g.stream);
        }
    }
    if (g.stream) _mm_sfence();
}

#endif  // TERNION_SIMD_LEVEL >= 3

// ---- batched FFT convolution ---------------------------------------------------------------
// Eight floats, one AVX2 register at v3 and v4 (two SSE registers at v2): the same operations
// in the same order at every level, none fused (-ffp-contract=off), so results are identical.
using v8 = float __attribute__((vector_size(32)));

struct Tw {
    float r, i;
};

// The convolution runs as a forward DIF FFT whose output stays in digit-reversed order, a
// pointwise product with the kernel's spectrum permuted the same way, and the exact adjoint of
// the DIF (a DIT with conjugate twiddles), which takes that order back to natural order: no
// reordering pass. The recursion is depth-first: a block's forward step, its four quarters'
// whole convolutions, then its inverse step, so below the top level or two every block is
// transformed, multiplied and transformed back while it sits in cache.
//
// Sample j is x[2j] (real parts, 8 lanes) and x[2j + 1] (imaginary parts): one 64-byte line per
// sample, so a butterfly's four legs are four lines (separate real and imaginary arrays made it
// eight, in one L1 set at power-of-two distances; see docs/ann-attention.md).

// Forward radix-4 DIF step on block x[0 .. m) (m = 4q), twiddles w^k = T[k * ts]:
// quarter s receives (sum_r x[j + r q] (-i)^(r s)) w^(s j), the input of the sub-DFT of the
// frequencies congruent to s mod 4. S: distance between samples in vectors (2 in memory, 1 for
// a block held in local arrays).
template <i64 S>
inline void dif4(v8* re, v8* im, i64 q, const Tw* T, i64 ts) {
#pragma GCC unroll 4
    for (i64 j = 0; j < q; ++j) {
        const i64 j0 = S * j, j1 = S * (j + q), j2 = S * (j + 2 * q), j3 = S * (j + 3 * q);
        const v8 x0r = re[j0], x0i = im[j0], x1r = re[j1], x1i = im[j1];
        const v8 x2r = re[j2], x2i = im[j2], x3r = re[j3], x3i = im[j3];
        const v8 ar = x0r + x2r, ai = x0i + x2i, br = x1r + x3r, bi = x1i + x3i;
        const v8 cr = x0r - x2r, ci = x0i - x2i, dr = x1r - x3r, di = x1i - x3i;
        re[j0] = ar + br;
        im[j0] = ai + bi;
        if (j == 0) {  // all twiddles 1
            re[j1] = cr + di;
            im[j1] = ci - dr;
            re[j2] = ar - br;
            im[j2] = ai - bi;
            re[j3] = cr - di;
            im[j3] = ci + dr;
            continue;
        }
        const Tw w1 = T[j * ts], w2 = T[2 * j * ts], w3 = T[3 * j * ts];
        const v8 t1r = cr + di, t1i = ci - dr;  // c - i d
        const v8 t2r = ar - br, t2i = ai - bi;  // a - b
        const v8 t3r = cr - di, t3i = ci + dr;  // c + i d
        re[j1] = t1r * w1.r - t1i * w1.i;
        im[j1] = t1r * w1.i + t1i * w1.r;
        re[j2] = t2r * w2.r - t2i * w2.i;
        im[j2] = t2r * w2.i + t2i * w2.r;
        re[j3] = t3r * w3.r - t3i * w3.i;
        im[j3] = t3r * w3.i + t3i * w3.r;
    }
}

// The adjoint of dif4: quarter s times conj(w^(s j)), then the unscaled inverse 4-point DFT.
template <i64 S>
inline void dit4(v8* re, v8* im, i64 q, const Tw* T, i64 ts) {
#pragma GCC unroll 4
    for (i64 j = 0; j < q; ++j) {
        const i64 j0 = S * j, j1 = S * (j + q), j2 = S * (j + 2 * q), j3 = S * (j + 3 * q);
        v8 y1r = re[j1], y1i = im[j1], y2r = re[j2], y2i = im[j2];
        v8 y3r = re[j3], y3i = im[j3];
        if (j != 0) {
            const Tw w1 = T[j * ts], w2 = T[2 * j * ts], w3 = T[3 * j * ts];
            const v8 u1r = y1r * w1.r + y1i * w1.i, u1i = y1i * w1.r - y1r * w1.i;
            const v8 u2r = y2r * w2.r + y2i * w2.i, u2i = y2i * w2.r - y2r * w2.i;
            const v8 u3r = y3r * w3.r + y3i * w3.i, u3i = y3i * w3.r - y3r * w3.i;
            y1r = u1r, y1i = u1i, y2r = u2r, y2i = u2i, y3r = u3r, y3i = u3i;
        }
        const v8 y0r = re[j0], y0i = im[j0];
        const v8 ar = y0r + y2r, ai = y0i + y2i, br = y1r + y3r, bi = y1i + y3i;
        const v8 cr = y0r - y2r, ci = y0i - y2i, dr = y1r - y3r, di = y1i - y3i;
        re[j0] = ar + br;
        im[j0] = ai + bi;
        re[j1] = cr - di;  // c + i d
        im[j1] = ci + dr;
        re[j2] = ar - br;
        im[j2] = ai - bi;
        re[j3] = cr + di;  // c - i d
        im[j3] = ci - dr;
    }
}

inline void times(v8& xr, v8& xi, float zr, float zi) {
    const v8 r = xr * zr - xi * zi;
    xi = xr * zi + xi * zr;
    xr = r;
}

// The recursion below on a whole block of M = 4 or 16 samples held in local arrays (S = 1),
// which the compiler keeps in vector registers: one load and one store per sample for the last
// one or two steps each way, instead of one per step.
template <int M>
inline void convolve_local(v8* xr, v8* xi, const Tw* T, i64 ts, const float* zr, const float* zi) {
    constexpr int q = M / 4;
    dif4<1>(xr, xi, q, T, ts);
#pragma GCC unroll 4
    for (int s = 0; s < 4; ++s) {
        if constexpr (q == 1)
            times(xr[s], xi[s], zr[s], zi[s]);
        else
            convolve_local<q>(xr + s * q, xi + s * q, T, ts * 4, zr + s * q, zi + s * q);
    }
    dit4<1>(xr, xi, q, T, ts);
}

template <int M>
inline void convolve_leaf(v8* re, v8* im, const Tw* T, i64 ts, const float* zr, const float* zi) {
    v8 xr[M], xi[M];
#pragma GCC unroll 16
    for (int k = 0; k < M; ++k) xr[k] = re[2 * k], xi[k] = im[2 * k];
    convolve_local<M>(xr, xi, T, ts, zr, zi);
#pragma GCC unroll 16
    for (int k = 0; k < M; ++k) re[2 * k] = xr[k], im[2 * k] = xi[k];
}

// Convolves block [0, m) in place (re = x, im = x + 1): forward step, the sub-blocks, inverse
// step. z points at this block's part of the permuted spectrum.
void convolve_block(v8* re, v8* im, i64 m, const Tw* T, i64 ts, const float* zr, const float* zi) {
    switch (m) {
        case 1:
            times(re[0], im[0], zr[0], zi[0]);
            return;
        case 2: {
            v8 ar = re[0] + re[2], ai = im[0] + im[2], br = re[0] - re[2], bi = im[0] - im[2];
            times(ar, ai, zr[0], zi[0]);
            times(br, bi, zr[1], zi[1]);
            re[0] = ar + br, im[0] = ai + bi, re[2] = ar - br, im[2] = ai - bi;
            return;
        }
        case 4:
            convolve_leaf<4>(re, im, T, ts, zr, zi);
            return;
        case 16:
            convolve_leaf<16>(re, im, T, ts, zr, zi);
            return;
        default:
            break;
    }
    const i64 q = m / 4;
    dif4<2>(re, im, q, T, ts);
    for (i64 s = 0; s < 4; ++s)
        convolve_block(re + 2 * s * q, im + 2 * s * q, q, T, ts * 4, zr + s * q, zi + s * q);
    dit4<2>(re, im, q, T, ts);
}

void convolve(float* x, i64 L, const float* T, const float* zr, const float* zi) {
    v8* v = reinterpret_cast<v8*>(x);
    convolve_block(v, v + 1, L, reinterpret_cast<const Tw*>(T), 1, zr, zi);
}

// ---- softmax numerators ----------------------------------------------------------------------
// exp(x - max) along a row of scores. Elementwise, so the vector width (16, 8, 4 floats) changes
// no result: every level does the same operations per element, none fused. exp is Cody and
// Waite's reduction x = n ln2 + r (ln2 in two parts) and a degree-6 polynomial for e^r on
// |r| <= ln2/2 (the classic single-precision one, about 1 ulp), scaled by 2^n through the
// exponent bits; below -87.3 (e^x under the smallest normal float, -inf included) it is 0.
constexpr int kW = TERNION_SIMD_LEVEL == 4 ? 16 : TERNION_SIMD_LEVEL == 3 ? 8 : 4;
using vx = float __attribute__((vector_size(kW * 4)));
using vi = std::int32_t __attribute__((vector_size(kW * 4)));

inline vx exp_lanes(vx x) {
    const vi live = x >= -87.3365f;  // -1 where e^x is a normal float
    x = x < -87.3365f ? vx{} - 87.3365f : x;
    x = x > 88.3762f ? vx{} + 88.3762f : x;
    // n = round(x / ln2) by the 1.5 * 2^23 trick (exact for |x / ln2| < 2^22).
    const vx n = (x * 1.44269504f + 12582912.0f) - 12582912.0f;
    const vx r = (x - n * 0.693359375f) - n * -2.12194440e-4f;
    vx p = vx{} + 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    const vx y = (p * (r * r) + r) + 1.0f;
    // A cast between vector types of one size keeps the bits (GCC's vector extensions).
    const vi bits = ((vi)y + (__builtin_convertvector(n, vi) << 23)) & live;
    return (vx)bits;
}

void exp_shifted(float* x, i64 n) {
    if (n <= 0) return;
    // The maximum lane by lane, then across lanes (exact in any order).
    vx vm = vx{} + x[0];
    i64 j = 0;
    for (; j + kW <= n; j += kW) {
        vx v;
        __builtin_memcpy(&v, x + j, sizeof v);
        vm = v > vm ? v : vm;
    }
    float m = vm[0];
    for (int l = 1; l < kW; ++l) m = vm[l] > m ? vm[l] : m;
    for (; j < n; ++j) m = x[j] > m ? x[j] : m;
    j = 0;
    for (; j + kW <= n; j += kW) {
        vx v;
        __builtin_memcpy(&v, x + j, sizeof v);
        v = exp_lanes(v - m);
        __builtin_memcpy(x + j, &v, sizeof v);
    }
    if (j < n) {  // the tail through one padded vector
        vx v = vx{} - m;
        __builtin_memcpy(&v, x + j, static_cast<std::size_t>(n - j) * sizeof(float));
        v = exp_lanes(v - m);
        __builtin_memcpy(x + j, &v, static_cast<std::size_t>(n - j) * sizeof(float));
    }
}

}  // namespace

const LevelKernels& kernels() {
#if TERNION_SIMD_LEVEL >= 3
    static const LevelKernels k{gemm, convolve, exp_shifted};
#else
    static const LevelKernels k{nullptr, convolve, exp_shifted};
#endif
    return k;
}

}  // namespace ternion::ann::TERNION_ANN_NS
