#include "attention/ann/ann_gemm.hpp"

#include <algorithm>
#include <cmath>

#ifdef __AVX512F__
#include <immintrin.h>
#endif

namespace ternion::ann {

PackedMatrix::PackedMatrix(const float* B, std::int64_t ldb, std::int64_t k, std::int64_t n)
    : k_(k), n_(n), data_(pack_panels64(B, ldb, k, n)) {}

#ifdef __AVX512F__

bool packed_gemm_available() {
    return true;
}

namespace {

constexpr int kRows = 6;                                      // rows of C per kernel call
constexpr std::int64_t kStreamBytes = std::int64_t{8} << 20;  // C at least this large
constexpr std::int64_t kBlock = 256;  // columns per block: a 512-row block of B is 512 KiB, in L2

// C[0..R) x [0..W) of one panel; W = columns written (<= 64), V = vectors computed.
// Element (r, p) of A is at A[r * ar + (p / 16) * ag + p % 16], and vector v of C's row r at
// C[r * cr + v * cg] (Layout: row-major is ar = lda, ag = 16; a GroupMatrix is ar = 16,
// ag = its group stride), so k runs in steps of 16 inside one 64-byte line per row.
// An: rows of A the next call will read, fetched into cache a line per row every 16 steps of k
// (rows are lda apart, a pattern the hardware prefetcher does not follow ahead of time), or null.
template <int R, int V>
void kernel(const float* __restrict A, std::int64_t ar, std::int64_t ag, const float* __restrict Bp,
            std::int64_t k, const float* __restrict bias, float* __restrict C, std::int64_t cr,
            std::int64_t cg, int width, const float* __restrict An, bool stream) {
    __m512 acc[R][V];
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int v = 0; v < V; ++v) acc[r][v] = _mm512_setzero_ps();
    for (std::int64_t p0 = 0; p0 < k; p0 += 16) {
        const float* Ap = A + (p0 / 16) * ag;
        if (An) {
#pragma GCC unroll 12
            for (int r = 0; r < R; ++r)
                _mm_prefetch(reinterpret_cast<const char*>(An + (p0 / 16) * ag + r * ar),
                             _MM_HINT_T0);
        }
        const std::int64_t pn = std::min<std::int64_t>(16, k - p0);
        const float* Bq = Bp + p0 * 64;
        for (std::int64_t p = 0; p < pn; ++p) {
            __m512 b[V];
#pragma GCC unroll 4
            for (int v = 0; v < V; ++v) b[v] = _mm512_load_ps(Bq + p * 64 + 16 * v);
#pragma GCC unroll 12
            for (int r = 0; r < R; ++r) {
                const __m512 a = _mm512_set1_ps(Ap[r * ar + p]);
#pragma GCC unroll 4
                for (int v = 0; v < V; ++v) acc[r][v] = _mm512_fmadd_ps(a, b[v], acc[r][v]);
            }
        }
    }
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int v = 0; v < V; ++v) {
            const int left = width - 16 * v;
            const __mmask16 m =
                left >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << left) - 1u);
            __m512 c = acc[r][v];
            if (bias) c = _mm512_add_ps(c, _mm512_maskz_loadu_ps(m, bias + 16 * v));
            if (stream && left >= 16)
                _mm512_stream_ps(C + r * cr + v * cg, c);
            else
                _mm512_mask_storeu_ps(C + r * cr + v * cg, m, c);
        }
}

using Kernel = void (*)(const float*, std::int64_t, std::int64_t, const float*, std::int64_t,
                        const float*, float*, std::int64_t, std::int64_t, int, const float*, bool);

template <int R>
Kernel pick_v(int v) {
    switch (v) {
        case 1:
            return kernel<R, 1>;
        case 2:
            return kernel<R, 2>;
        case 3:
            return kernel<R, 3>;
        default:
            return kernel<R, 4>;
    }
}

Kernel pick(int rows, int vectors) {
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

}  // namespace

void gemm_packed(const float* A, Layout la, std::int64_t m, const PackedMatrix& B,
                 const float* bias, float* C, Layout lc) {
    const std::int64_t n = B.n(), k = B.k();
    const std::int64_t ar = la.row, ag = la.group, cr = lc.row, cg = lc.group;
    auto at_a = [&](std::int64_t i) { return A + i * ar; };
    auto at_c = [&](std::int64_t i, std::int64_t j) { return C + i * cr + (j / 16) * cg; };
    // Panels of 48 or 64 columns: 6 rows at a time (24 accumulators). A last panel of 16 or 32
    // columns takes 12 rows, so that one load of B still feeds 12 or 24 FMAs. (Not more: rows of
    // A 2 KiB apart share two L1 sets, and more than 8 per set would evict each other.)
    const std::int64_t wide_end = n % 64 != 0 && n % 64 <= 32 ? n / 64 * 64 : n;
    // A C larger than the caches is written with streaming stores where a store fills a whole
    // line: reading each line before overwriting it was wasted memory traffic.
    const bool stream = m * n * static_cast<std::int64_t>(sizeof(float)) >= kStreamBytes &&
                        reinterpret_cast<std::uintptr_t>(C) % 64 == 0 && cr % 16 == 0 &&
                        cg % 16 == 0;
    for (std::int64_t j0 = 0; j0 < wide_end; j0 += kBlock) {
        const std::int64_t j1 = std::min(wide_end, j0 + kBlock);
        for (std::int64_t i0 = 0; i0 < m; i0 += kRows) {
            const int rows = static_cast<int>(std::min<std::int64_t>(kRows, m - i0));
            // The last panel of a row block fetches the next block's rows of A.
            const float* next = i0 + 2 * kRows <= m ? at_a(i0 + kRows) : nullptr;
            for (std::int64_t c0 = j0; c0 < j1; c0 += 64) {
                const int width = static_cast<int>(std::min<std::int64_t>(64, n - c0));
                pick(rows, (width + 15) / 16)(at_a(i0), ar, ag, B.panel(c0 / 64), k,
                                              bias ? bias + c0 : nullptr, at_c(i0, c0), cr, cg,
                                              width, c0 + 64 >= j1 ? next : nullptr, stream);
            }
        }
    }
    if (wide_end == n) {
        if (stream) _mm_sfence();
        return;
    }
    const int width = static_cast<int>(n - wide_end);
    const Kernel tall = width <= 16 ? kernel<12, 1> : kernel<12, 2>;
    constexpr std::int64_t tall_rows = 12;
    const float* Bp = B.panel(wide_end / 64);
    const float* bb = bias ? bias + wide_end : nullptr;
    std::int64_t i0 = 0;
    for (; i0 + tall_rows <= m; i0 += tall_rows)
        tall(at_a(i0), ar, ag, Bp, k, bb, at_c(i0, wide_end), cr, cg, width,
             i0 + 2 * tall_rows <= m ? at_a(i0 + tall_rows) : nullptr, stream);
    for (; i0 < m; i0 += kRows) {
        const int rows = static_cast<int>(std::min<std::int64_t>(kRows, m - i0));
        pick(rows, (width + 15) / 16)(at_a(i0), ar, ag, Bp, k, bb, at_c(i0, wide_end), cr, cg,
                                      width, nullptr, stream);
    }
    if (stream) _mm_sfence();
}

#else

bool packed_gemm_available() {
    return false;
}

void gemm_packed(const float* A, Layout la, std::int64_t m, const PackedMatrix& B,
                 const float* bias, float* C, Layout lc) {
    // Portable reference, the same sums as the AVX-512 kernel (callers use Eigen instead when
    // packed_gemm_available() is false; the test checks this path on such machines).
    const std::int64_t n = B.n(), k = B.k();
    for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
            const float* bp = B.panel(j / 64) + j % 64;
            float s = 0.0f;
            for (std::int64_t p = 0; p < k; ++p) s = std::fma(A[la.at(i, p)], bp[p * 64], s);
            C[lc.at(i, j)] = bias ? s + bias[j] : s;
        }
}

#endif

}  // namespace ternion::ann
