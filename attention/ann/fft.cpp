#include "attention/ann/fft.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <numbers>
#include <stdexcept>

#include "attention/ann/ann_levels.hpp"
#include "sim/kernels/token_kernel.hpp"  // AlignedFloats

#if defined(__AVX__)
#include <immintrin.h>

#include "sim/simd/transpose.hpp"
#endif

namespace ternion::ann {

namespace {

std::int64_t largest_prime_factor(std::int64_t n) {
    std::int64_t p = 1;
    for (std::int64_t f = 2; f * f <= n; ++f)
        while (n % f == 0) {
            p = f;
            n /= f;
        }
    return n > 1 ? std::max(p, n) : p;
}

}  // namespace

std::int64_t ceil_log2(std::int64_t L) {
    std::int64_t k = 0;
    while ((std::int64_t{1} << k) < L) ++k;
    return k;
}

std::uint64_t complex_fft_macs(std::int64_t L) {
    if (L <= 1) return 0;
    return static_cast<std::uint64_t>(2 * L * ceil_log2(L));
}

bool wants_bluestein(std::int64_t n) {
    return n > 16 && largest_prime_factor(n) > 7;
}

std::uint64_t real_fft_macs(std::int64_t n) {
    if (n <= 1) return 0;
    if (wants_bluestein(n)) {
        // two complex transforms of length m, the pointwise product and two chirp products
        const std::int64_t m = std::int64_t{1} << ceil_log2(2 * n - 1);
        return 2 * complex_fft_macs(m) + static_cast<std::uint64_t>(4 * m + 8 * n);
    }
    // a real transform of length n costs about a complex one of length n/2 plus an O(n) pass
    return complex_fft_macs((n + 1) / 2) + static_cast<std::uint64_t>(2 * n);
}

std::int64_t next_fast_length(std::int64_t n) {
    for (std::int64_t m = std::max<std::int64_t>(n, 1);; ++m) {
        std::int64_t r = m;
        for (std::int64_t f : {2, 3, 5})
            while (r % f == 0) r /= f;
        if (r == 1) return m;
    }
}

// ----- ChannelConvolver: radix-4 FFT over eight complex lanes -----

namespace {

// Eight floats, one AVX2 register (two SSE registers on the baseline ISA).
using v8 = float __attribute__((vector_size(32)));

// r[k][l] <-> r[l][k]: eight channels of eight consecutive samples become eight lane vectors
// of one sample each, and back (a transpose is its own inverse).
inline void transpose8(v8* r) {
#if defined(__AVX__)
    __m256 a[8];
    for (int i = 0; i < 8; ++i) a[i] = reinterpret_cast<__m256>(r[i]);
    simd::transpose8(a);
    for (int i = 0; i < 8; ++i) r[i] = reinterpret_cast<v8>(a[i]);
#else
    for (int i = 0; i < 8; ++i)
        for (int j = i + 1; j < 8; ++j) {
            const float t = r[i][j];
            r[i][j] = r[j][i];
            r[j][i] = t;
        }
#endif
}

// Lane vectors out[2j] (j < n, every other vector: the interleaved layout below) from `lanes`
// channels ch[l] (each n contiguous floats); lanes beyond `lanes` are zero. Eight samples at a
// time through a register transpose.
void gather_lanes(const float* const* ch, std::int64_t lanes, std::int64_t n, v8* out) {
    std::int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        v8 r[8];
        for (std::int64_t l = 0; l < 8; ++l) {
            if (l < lanes)
                std::memcpy(&r[l], ch[l] + j, sizeof(v8));
            else
                r[l] = v8{};
        }
        transpose8(r);
        for (std::int64_t k = 0; k < 8; ++k) out[2 * (j + k)] = r[k];
    }
    for (; j < n; ++j) {
        v8 a{};
        for (std::int64_t l = 0; l < lanes; ++l) a[l] = ch[l][j];
        out[2 * j] = a;
    }
}

// The inverse of gather_lanes: lane l of in[2j] to ch[l][j] for l < lanes, j < n.
void scatter_lanes(const v8* in, std::int64_t lanes, std::int64_t n, float* const* ch) {
    std::int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        v8 r[8];
        for (std::int64_t k = 0; k < 8; ++k) r[k] = in[2 * (j + k)];
        transpose8(r);
        for (std::int64_t l = 0; l < lanes; ++l) std::memcpy(ch[l] + j, &r[l], sizeof(v8));
    }
    for (; j < n; ++j)
        for (std::int64_t l = 0; l < lanes; ++l) ch[l][j] = in[2 * j][l];
}

// exp(-2 pi i k / L) for k < L, computed in double: one table serves every stage, and the
// twiddles stay accurate to float rounding for every L. Cached because building it costs L
// sin/cos pairs, comparable to one transform of a few channels.
std::shared_ptr<const std::vector<cfloat>> twiddle_table(std::int64_t L) {
    static std::mutex mu;
    static std::map<std::int64_t, std::shared_ptr<const std::vector<cfloat>>> cache;
    std::lock_guard<std::mutex> lock(mu);
    auto& t = cache[L];
    if (!t) {
        auto v = std::make_shared<std::vector<cfloat>>(static_cast<std::size_t>(L));
        for (std::int64_t k = 0; k < L; ++k) {
            const double a =
                -2.0 * std::numbers::pi * static_cast<double>(k) / static_cast<double>(L);
            (*v)[k] = cfloat(static_cast<float>(std::cos(a)), static_cast<float>(std::sin(a)));
        }
        t = std::move(v);
    }
    return t;
}

// The transform itself (forward DIF, product, adjoint DIT, depth-first) is compiled per level:
// LevelKernels::convolve in attention/ann/ann_levels.cpp. It leaves the spectrum in the order
// below between its forward and inverse halves.

// perm[p] = the frequency the recursion leaves at position p (the layout of convolve_block).
void build_order(std::int64_t* perm, std::int64_t m, std::int64_t base, std::int64_t stride) {
    if (m == 1) {
        perm[0] = base;
        return;
    }
    if (m == 2) {
        perm[0] = base;
        perm[1] = base + stride;
        return;
    }
    const std::int64_t q = m / 4;
    for (std::int64_t s = 0; s < 4; ++s)
        build_order(perm + s * q, q, base + s * stride, 4 * stride);
}

std::shared_ptr<const std::vector<std::int64_t>> order_table(std::int64_t L) {
    static std::mutex mu;
    static std::map<std::int64_t, std::shared_ptr<const std::vector<std::int64_t>>> cache;
    std::lock_guard<std::mutex> lock(mu);
    auto& t = cache[L];
    if (!t) {
        auto v = std::make_shared<std::vector<std::int64_t>>(static_cast<std::size_t>(L));
        build_order(v->data(), L, 0, 1);
        t = std::move(v);
    }
    return t;
}

}  // namespace

struct ChannelConvolver::Impl {
    std::shared_ptr<const std::vector<cfloat>> tw;
    std::shared_ptr<const std::vector<std::int64_t>> order;
    // [2L] vectors: sample j's real lanes at 2j, imaginary lanes at 2j + 1. Cache-line aligned:
    // the kernels of v3 and v4 load whole 32-byte vectors with aligned moves.
    AlignedFloats x;
    std::vector<float> zr, zi;  // the kernel's spectrum in the recursion's order
    bool has_kernel = false;
};

ChannelConvolver::ChannelConvolver(std::int64_t L) : L_(L), impl_(std::make_unique<Impl>()) {
    if (!supports(L)) throw std::invalid_argument("ChannelConvolver: length not a power of two");
    impl_->tw = twiddle_table(L);
    impl_->order = order_table(L);
    const auto sz = static_cast<std::size_t>(L);
    impl_->x.resize(16 * sz);
    impl_->zr.resize(sz);
    impl_->zi.resize(sz);
}

ChannelConvolver::ChannelConvolver(const ChannelConvolver& o) : ChannelConvolver(o.L_) {}

ChannelConvolver::~ChannelConvolver() = default;

void ChannelConvolver::set_kernel(const cfloat* zf) {
    auto& I = *impl_;
    const std::int64_t L = L_;
    // The full spectrum from the half one (z is real: X[L - k] = conj X[k]), in the order the
    // recursion leaves the transform in.
    const std::int64_t* order = I.order->data();
    for (std::int64_t p = 0; p < L; ++p) {
        const std::int64_t k = order[p];
        const cfloat c = k <= L / 2 ? zf[k] : std::conj(zf[L - k]);
        I.zr[p] = c.real();
        I.zi[p] = c.imag();
    }
    I.has_kernel = true;
}

void ChannelConvolver::transform(float* x) {
    auto& I = *impl_;
    if (!I.has_kernel) throw std::logic_error("ChannelConvolver: no kernel set");
    level_kernels().convolve(x, L_, reinterpret_cast<const float*>(I.tw->data()), I.zr.data(),
                             I.zi.data());
}

void ChannelConvolver::convolve(const cfloat* zf, const float* v, float* y, std::int64_t n,
                                std::int64_t channels) {
    set_kernel(zf);
    run(v, y, n, channels, 1, n);
}

void ChannelConvolver::convolve_rows(const cfloat* zf, const float* v, float* y, std::int64_t ld,
                                     std::int64_t n, std::int64_t channels) {
    set_kernel(zf);
    run(v, y, n, channels, ld, 1);
}

void ChannelConvolver::convolve_rows(const float* v, float* y, std::int64_t ld, std::int64_t n,
                                     std::int64_t channels) {
    run(v, y, n, channels, ld, 1);
}

void ChannelConvolver::convolve_group(float* data, std::int64_t n) {
    if (n < 1 || n > L_) throw std::invalid_argument("ChannelConvolver: group length out of range");
    // A group of n == L samples is already the kernel's layout: no copies at all. Otherwise it
    // is 16 row-major channels with rows 16 floats apart, copied in a line at a time.
    if (n == L_ && reinterpret_cast<std::uintptr_t>(data) % 32 == 0)
        transform(data);
    else
        run(data, data, n, 16, 16, 1);
}

// Sample j of channel c at v[j * sj + c * sc]: column-major (sj = 1, sc = n) gathers eight
// channels through a register transpose, row-major (sj = ld, sc = 1) loads eight adjacent
// channels of one sample as one vector. Reads every sample of a pass of 16 channels before
// writing any, so y may be v.
void ChannelConvolver::run(const float* v, float* y, std::int64_t n, std::int64_t channels,
                           std::int64_t sj, std::int64_t sc) {
    auto& I = *impl_;
    const std::int64_t L = L_;
    v8* const re = reinterpret_cast<v8*>(I.x.data());
    v8* const im = re + 1;
    // Lane vectors of `lanes` channels from src into out[2j] (j < n), and back.
    auto gather = [&](const float* src, std::int64_t lanes, v8* out) {
        if (sj == 1) {
            const float* ch[8] = {};
            for (std::int64_t l = 0; l < lanes; ++l) ch[l] = src + l * sc;
            gather_lanes(ch, lanes, n, out);
        } else if (lanes == 8) {
            for (std::int64_t j = 0; j < n; ++j) std::memcpy(&out[2 * j], src + j * sj, sizeof(v8));
        } else {
            for (std::int64_t j = 0; j < n; ++j) {
                v8 a{};
                for (std::int64_t l = 0; l < lanes; ++l) a[l] = src[j * sj + l];
                out[2 * j] = a;
            }
        }
    };
    auto scatter = [&](const v8* in, std::int64_t lanes, float* dst) {
        if (sj == 1) {
            float* ch[8] = {};
            for (std::int64_t l = 0; l < lanes; ++l) ch[l] = dst + l * sc;
            scatter_lanes(in, lanes, n, ch);
        } else if (lanes == 8) {
            for (std::int64_t j = 0; j < n; ++j) std::memcpy(dst + j * sj, &in[2 * j], sizeof(v8));
        } else {
            for (std::int64_t j = 0; j < n; ++j)
                for (std::int64_t l = 0; l < lanes; ++l) dst[j * sj + l] = in[2 * j][l];
        }
    };
    // Rows (row-major input) are a few KB apart: the hardware prefetcher does not run that far
    // ahead, so the row loops prefetch this many rows ahead themselves.
    constexpr std::int64_t ahead = 16;
    // 16 channels per pass: lanes 0..7 of the real part and lanes 0..7 of the imaginary part.
    for (std::int64_t c0 = 0; c0 < channels; c0 += 16) {
        const std::int64_t nre = std::min<std::int64_t>(8, channels - c0);
        const std::int64_t nim = std::clamp<std::int64_t>(channels - c0 - 8, 0, 8);
        // Row-major with all 16 lanes: each token's 64-byte run is one sample's line.
        const bool rows16 = sj != 1 && nim == 8;
        // Rows exactly one line apart (a column group) are one contiguous block.
        const bool contiguous = rows16 && sj == 16;
        if (contiguous) {
            std::memcpy(re, v + c0, static_cast<std::size_t>(n) * 2 * sizeof(v8));
        } else if (rows16) {
            const float* src = v + c0;
            for (std::int64_t j = 0; j < n; ++j) {
                if (j + ahead < n) __builtin_prefetch(src + (j + ahead) * sj);
                std::memcpy(&re[2 * j], src + j * sj, 2 * sizeof(v8));
            }
        } else {
            gather(v + c0 * sc, nre, re);
            if (nim)
                gather(v + (c0 + 8) * sc, nim, im);
            else
                for (std::int64_t j = 0; j < n; ++j) im[2 * j] = v8{};
        }
        for (std::int64_t j = n; j < L; ++j) re[2 * j] = im[2 * j] = v8{};
        transform(reinterpret_cast<float*>(re));
        if (contiguous) {
            std::memcpy(y + c0, re, static_cast<std::size_t>(n) * 2 * sizeof(v8));
        } else if (rows16) {
            float* dst = y + c0;
            for (std::int64_t j = 0; j < n; ++j) {
                if (j + ahead < n) __builtin_prefetch(dst + (j + ahead) * sj, 1);
                std::memcpy(dst + j * sj, &re[2 * j], 2 * sizeof(v8));
            }
        } else {
            scatter(re, nre, y + c0 * sc);
            if (nim) scatter(im, nim, y + (c0 + 8) * sc);
        }
    }
}

std::uint64_t RealFft::macs_per_transform() const {
    return real_fft_macs(n_);
}

}  // namespace ternion::ann
