#include "sim/conv_gather.hpp"

#include <algorithm>
#include <cstring>
#ifdef __AVX512F__
#include <immintrin.h>
#endif

namespace ternion::synaptic {

namespace {

typedef float v16f __attribute__((vector_size(64), aligned(64)));

// Up to 12 vectors of sums (192 channels) stay in registers while a list of weight rows passes.
constexpr int kMaxVectors = 12;

// sums[0 .. 16 NV) = the sum of the rows w + e[k] * ld over the list, from zero, in list order.
template <int NV>
void sum_list(const float* __restrict w, std::int64_t ld, const std::uint32_t* __restrict e,
              std::uint32_t n, float* __restrict sums) {
    v16f acc[NV];
    for (int v = 0; v < NV; ++v) acc[v] = v16f{};
    for (std::uint32_t k = 0; k < n; ++k) {
        const v16f* r = reinterpret_cast<const v16f*>(w + static_cast<std::int64_t>(e[k]) * ld);
        for (int v = 0; v < NV; ++v) acc[v] += r[v];
    }
    std::memcpy(sums, acc, sizeof acc);
}

using SumList = void (*)(const float*, std::int64_t, const std::uint32_t*, std::uint32_t, float*);
constexpr SumList kSumList[kMaxVectors + 1] = {
    nullptr,     sum_list<1>, sum_list<2>, sum_list<3>,  sum_list<4>,  sum_list<5>, sum_list<6>,
    sum_list<7>, sum_list<8>, sum_list<9>, sum_list<10>, sum_list<11>, sum_list<12>};

#ifdef __AVX512F__
// r[i] = row i of a 16 x 16 block; afterwards r[j] = its column j.
inline void transpose16(__m512 r[16]) {
    __m512 t[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    // Each 128-bit lane L of r[4a + b] then holds column 4L + b of rows 4a .. 4a + 3.
    for (int i = 0; i < 16; i += 4) {
        r[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
        r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xEE);
        r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
    for (int b = 0; b < 4; ++b) {
        const __m512 even_lo = _mm512_shuffle_f32x4(r[b], r[4 + b], 0x88);
        const __m512 even_hi = _mm512_shuffle_f32x4(r[8 + b], r[12 + b], 0x88);
        const __m512 odd_lo = _mm512_shuffle_f32x4(r[b], r[4 + b], 0xDD);
        const __m512 odd_hi = _mm512_shuffle_f32x4(r[8 + b], r[12 + b], 0xDD);
        t[b] = _mm512_shuffle_f32x4(even_lo, even_hi, 0x88);
        t[8 + b] = _mm512_shuffle_f32x4(even_lo, even_hi, 0xDD);
        t[4 + b] = _mm512_shuffle_f32x4(odd_lo, odd_hi, 0x88);
        t[12 + b] = _mm512_shuffle_f32x4(odd_lo, odd_hi, 0xDD);
    }
    for (int i = 0; i < 16; ++i) r[i] = t[i];
}
#endif

}  // namespace

void GatherConv::build(const GatherConvShape& s, const std::vector<float>& w) {
    s_ = s;
    taps_ = s.kh * s.kw;
    ld_ = (s.cout + 15) / 16 * 16;
    w_.assign(static_cast<std::size_t>(s.cin * taps_ * ld_), 0.0f);
    for (std::int64_t co = 0; co < s.cout; ++co)
        for (std::int64_t ci = 0; ci < s.cin; ++ci)
            for (std::int64_t t = 0; t < taps_; ++t)
                w_[static_cast<std::size_t>((ci * taps_ + t) * ld_ + co)] =
                    w[static_cast<std::size_t>((co * s.cin + ci) * taps_ + t)];
}

void GatherConv::run(const std::uint32_t* active, std::size_t n, const float* bias, float* y,
                     Scratch& sc) const {
    // row_start[ci * H + iy]: where input row (ci, iy) begins among the ascending events.
    sc.row_start.assign(static_cast<std::size_t>(s_.cin * s_.H + 1), 0);
    std::size_t r = 0;
    std::uint64_t row_end = static_cast<std::uint64_t>(s_.W);
    for (std::size_t k = 0; k < n; ++k) {
        for (; active[k] >= row_end; row_end += static_cast<std::uint64_t>(s_.W)) ++r;
        ++sc.row_start[r + 1];
    }
    for (std::size_t k = 1; k < sc.row_start.size(); ++k) sc.row_start[k] += sc.row_start[k - 1];
    sc.fill.resize(static_cast<std::size_t>(s_.OW));
    sc.entries.resize(static_cast<std::size_t>(s_.OW * s_.cin * taps_));
    sc.sums.resize(static_cast<std::size_t>(s_.OW * ld_));
    for (std::int64_t oy = 0; oy < s_.OH; ++oy) {
        list_row(active, oy, sc);
        sum_row(sc);
        store_row(sc, oy, bias, y);
    }
}

// Output row oy's lists: the inputs of input channel ci, kernel row ky in ascending columns
// reach output column ox through kernel column ix + pw - ox, ascending too, so appending
// channel by channel and kernel row by kernel row keeps every list in ascending input order.
void GatherConv::list_row(const std::uint32_t* active, std::int64_t oy, Scratch& sc) const {
    const std::int64_t cap = s_.cin * taps_;
    std::fill(sc.fill.begin(), sc.fill.end(), 0u);
    std::uint32_t* fill = sc.fill.data();
    std::uint32_t* entries = sc.entries.data();
    for (std::int64_t ci = 0; ci < s_.cin; ++ci)
        for (std::int64_t ky = 0; ky < s_.kh; ++ky) {
            const std::int64_t iy = oy - s_.ph + ky;
            if (iy < 0 || iy >= s_.H) continue;
            const auto row = static_cast<std::size_t>(ci * s_.H + iy);
            const std::int64_t first = static_cast<std::int64_t>(row) * s_.W;
            const auto tap0 = static_cast<std::uint32_t>((ci * s_.kh + ky) * s_.kw);
            for (auto k = sc.row_start[row]; k < sc.row_start[row + 1]; ++k) {
                const std::int64_t ix = active[k] - first;
                // Output columns ix + pw - kx for kx = 0 .. kw-1, inside [0, OW).
                const std::int64_t lo = std::max<std::int64_t>(0, ix + s_.pw - (s_.kw - 1));
                const std::int64_t hi = std::min<std::int64_t>(s_.OW - 1, ix + s_.pw);
                for (std::int64_t ox = lo; ox <= hi; ++ox)
                    entries[ox * cap + fill[ox]++] =
                        tap0 + static_cast<std::uint32_t>(ix + s_.pw - ox);
            }
        }
}

// Each output column's list through the weights, up to 12 vectors of channels at a time.
void GatherConv::sum_row(Scratch& sc) const {
    const std::int64_t cap = s_.cin * taps_, vectors = ld_ / 16;
    for (std::int64_t ox = 0; ox < s_.OW; ++ox) {
        const std::uint32_t* e = sc.entries.data() + ox * cap;
        const std::uint32_t n = sc.fill[static_cast<std::size_t>(ox)];
        float* sums = sc.sums.data() + ox * ld_;
        for (std::int64_t v0 = 0; v0 < vectors; v0 += kMaxVectors) {
            const auto nv = static_cast<int>(std::min<std::int64_t>(kMaxVectors, vectors - v0));
            kSumList[nv](w_.data() + v0 * 16, ld_, e, n, sums + v0 * 16);
        }
    }
}

// The row's sums [OW][channels] into y [cout][OH][OW], written along the output row: blocks of
// 16 columns by 16 channels transposed in registers, the rest one by one.
void GatherConv::store_row(const Scratch& sc, std::int64_t oy, const float* bias, float* y) const {
    const std::int64_t plane = s_.OH * s_.OW;
    std::int64_t ox0 = 0;
#ifdef __AVX512F__
    for (; ox0 + 16 <= s_.OW; ox0 += 16)
        for (std::int64_t co0 = 0; co0 < s_.cout; co0 += 16) {
            __m512 r[16];
            for (int i = 0; i < 16; ++i)
                r[i] = _mm512_load_ps(&sc.sums[static_cast<std::size_t>((ox0 + i) * ld_ + co0)]);
            transpose16(r);
            const int nc = static_cast<int>(std::min<std::int64_t>(16, s_.cout - co0));
            for (int c = 0; c < nc; ++c) {
                if (bias) r[c] = _mm512_add_ps(r[c], _mm512_set1_ps(bias[co0 + c]));
                _mm512_storeu_ps(y + (co0 + c) * plane + oy * s_.OW + ox0, r[c]);
            }
        }
#endif
    if (ox0 == s_.OW) return;
    for (std::int64_t co = 0; co < s_.cout; ++co) {
        float* yr = y + co * plane + oy * s_.OW;
        const float b = bias ? bias[co] : 0.0f;
        for (std::int64_t ox = ox0; ox < s_.OW; ++ox)
            yr[ox] = bias ? sc.sums[static_cast<std::size_t>(ox * ld_ + co)] + b
                          : sc.sums[static_cast<std::size_t>(ox * ld_ + co)];
    }
}

}  // namespace ternion::synaptic
