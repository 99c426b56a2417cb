#include "attention/fft.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <numbers>
#include <stdexcept>
#include <unsupported/Eigen/FFT>

#if defined(__AVX__)
#include <immintrin.h>
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

std::int64_t ceil_log2(std::int64_t L) {
    std::int64_t k = 0;
    while ((std::int64_t{1} << k) < L) ++k;
    return k;
}

}  // namespace

std::uint64_t complex_fft_macs(std::int64_t L) {
    if (L <= 1) return 0;
    return static_cast<std::uint64_t>(2 * L * ceil_log2(L));
}

static bool wants_bluestein(std::int64_t n) {
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

struct RealFft::Impl {
    Eigen::FFT<float> fft;
    bool bluestein = false;
    std::int64_t m = 0;               // Bluestein convolution length (power of two >= 2n-1)
    std::vector<cfloat> chirp;        // exp(-i pi j^2 / n), j < n
    std::vector<cfloat> kernel_spec;  // FFT_m of the conjugate chirp, wrapped, divided by m
    std::vector<cfloat> a, b, full;   // scratch

    Impl() {
        fft.SetFlag(Eigen::FFT<float>::HalfSpectrum);
        fft.SetFlag(Eigen::FFT<float>::Unscaled);
    }

    // X_k = sum_j x_j exp(-2 pi i jk/n) for all k < n, via the chirp identity
    // jk = (j^2 + k^2 - (k-j)^2) / 2: a circular convolution of length m.
    void bluestein_forward(const cfloat* x, cfloat* out, std::int64_t n, std::int64_t kmax) {
        std::fill(a.begin(), a.end(), cfloat(0.0f, 0.0f));
        for (std::int64_t j = 0; j < n; ++j) a[j] = x[j] * chirp[j];
        fft.fwd(b.data(), a.data(), m);
        for (std::int64_t k = 0; k < m; ++k) b[k] *= kernel_spec[k];
        fft.inv(a.data(), b.data(), m);
        for (std::int64_t k = 0; k < kmax; ++k) out[k] = a[k] * chirp[k];
    }
};

RealFft::RealFft(std::int64_t n) : n_(n), impl_(std::make_unique<Impl>()) {
    if (n < 1 || n > (std::int64_t{1} << 28)) throw std::invalid_argument("RealFft: bad length");
    // kissfft's generic butterfly costs O(n p) for a prime factor p: beyond 7 the chirp-z route
    // on a power-of-two length is cheaper for all but tiny n.
    if (wants_bluestein(n)) {
        auto& I = *impl_;
        I.bluestein = true;
        I.m = std::int64_t{1} << ceil_log2(2 * n - 1);
        I.chirp.resize(static_cast<std::size_t>(n));
        for (std::int64_t j = 0; j < n; ++j) {
            // j^2 mod 2n keeps the angle exact for large j.
            std::int64_t q = (j * j) % (2 * n);
            double ang = -std::numbers::pi * static_cast<double>(q) / static_cast<double>(n);
            I.chirp[j] =
                cfloat(static_cast<float>(std::cos(ang)), static_cast<float>(std::sin(ang)));
        }
        std::vector<cfloat> kern(static_cast<std::size_t>(I.m), cfloat(0.0f, 0.0f));
        for (std::int64_t j = 0; j < n; ++j) {
            cfloat c = std::conj(I.chirp[j]);
            kern[j] = c;
            if (j > 0) kern[I.m - j] = c;
        }
        I.kernel_spec.resize(static_cast<std::size_t>(I.m));
        I.fft.fwd(I.kernel_spec.data(), kern.data(), I.m);
        const float inv_m = 1.0f / static_cast<float>(I.m);
        for (auto& v : I.kernel_spec) v *= inv_m;
        I.a.resize(static_cast<std::size_t>(I.m));
        I.b.resize(static_cast<std::size_t>(I.m));
        I.full.resize(static_cast<std::size_t>(n));
    }
}

RealFft::RealFft(const RealFft& o) : n_(o.n_), impl_(std::make_unique<Impl>()) {
    // Plans and twiddles are rebuilt lazily by kissfft; Bluestein tables are copied.
    impl_->bluestein = o.impl_->bluestein;
    impl_->m = o.impl_->m;
    impl_->chirp = o.impl_->chirp;
    impl_->kernel_spec = o.impl_->kernel_spec;
    impl_->a = o.impl_->a;
    impl_->b = o.impl_->b;
    impl_->full = o.impl_->full;
}

RealFft::~RealFft() = default;

bool RealFft::uses_bluestein() const {
    return impl_->bluestein;
}

void RealFft::forward(const float* in, cfloat* out) {
    auto& I = *impl_;
    if (n_ == 1) {
        out[0] = cfloat(in[0], 0.0f);
        return;
    }
    if (!I.bluestein) {
        I.fft.fwd(out, in, n_);
        return;
    }
    for (std::int64_t j = 0; j < n_; ++j) I.full[j] = cfloat(in[j], 0.0f);
    I.bluestein_forward(I.full.data(), out, n_, spectrum_size());
}

void RealFft::inverse(const cfloat* in, float* out) {
    auto& I = *impl_;
    if (n_ == 1) {
        out[0] = in[0].real();
        return;
    }
    if (!I.bluestein) {
        I.fft.inv(out, in, n_);
        return;
    }
    // x_j = sum_k X_k e^{+2 pi i jk/n} = conj(DFT(conj X))_j; x is real, so take the real part.
    const std::int64_t h = spectrum_size();
    for (std::int64_t k = 0; k < h; ++k) I.full[k] = std::conj(in[k]);
    for (std::int64_t k = h; k < n_; ++k) I.full[k] = in[n_ - k];
    // bluestein_forward reads all of its input before writing, so in-place is safe.
    I.bluestein_forward(I.full.data(), I.full.data(), n_, n_);
    for (std::int64_t j = 0; j < n_; ++j) out[j] = I.full[j].real();
}

// ----- ChannelConvolver: radix-4 Stockham over eight complex lanes -----

namespace {

// Eight floats, one AVX2 register (two SSE registers on the baseline ISA).
using v8 = float __attribute__((vector_size(32)));

inline v8 splat(float a) {
    return v8{a, a, a, a, a, a, a, a};
}

// r[k][l] <-> r[l][k]: eight channels of eight consecutive samples become eight lane vectors
// of one sample each, and back (a transpose is its own inverse).
inline void transpose8(v8* r) {
#if defined(__AVX__)
    __m256 a[8], b[8];
    for (int i = 0; i < 8; ++i) a[i] = reinterpret_cast<__m256>(r[i]);
    for (int i = 0; i < 8; i += 2) {
        b[i] = _mm256_unpacklo_ps(a[i], a[i + 1]);
        b[i + 1] = _mm256_unpackhi_ps(a[i], a[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
        a[i] = _mm256_shuffle_ps(b[i], b[i + 2], 0x44);
        a[i + 1] = _mm256_shuffle_ps(b[i], b[i + 2], 0xEE);
        a[i + 2] = _mm256_shuffle_ps(b[i + 1], b[i + 3], 0x44);
        a[i + 3] = _mm256_shuffle_ps(b[i + 1], b[i + 3], 0xEE);
    }
    for (int i = 0; i < 4; ++i) {
        r[i] = reinterpret_cast<v8>(_mm256_permute2f128_ps(a[i], a[i + 4], 0x20));
        r[i + 4] = reinterpret_cast<v8>(_mm256_permute2f128_ps(a[i], a[i + 4], 0x31));
    }
#else
    for (int i = 0; i < 8; ++i)
        for (int j = i + 1; j < 8; ++j) {
            const float t = r[i][j];
            r[i][j] = r[j][i];
            r[j][i] = t;
        }
#endif
}

// Lane vectors out[j] (j < n) from `lanes` channels ch[l] (each n contiguous floats); lanes
// beyond `lanes` are zero. Eight samples at a time through a register transpose.
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
        for (std::int64_t k = 0; k < 8; ++k) out[j + k] = r[k];
    }
    for (; j < n; ++j) {
        v8 a{};
        for (std::int64_t l = 0; l < lanes; ++l) a[l] = ch[l][j];
        out[j] = a;
    }
}

// The inverse of gather_lanes: lane l of in[j] to ch[l][j] for l < lanes, j < n.
void scatter_lanes(const v8* in, std::int64_t lanes, std::int64_t n, float* const* ch) {
    std::int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        v8 r[8];
        for (std::int64_t k = 0; k < 8; ++k) r[k] = in[j + k];
        transpose8(r);
        for (std::int64_t l = 0; l < lanes; ++l) std::memcpy(ch[l] + j, &r[l], sizeof(v8));
    }
    for (; j < n; ++j)
        for (std::int64_t l = 0; l < lanes; ++l) ch[l][j] = in[j][l];
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

// Forward DFT (natural order in and out) of L lane vectors held as (re, im), using (tre, tim)
// as the other half of the ping-pong. Returns true when the result ended in (tre, tim).
bool stockham(v8* re, v8* im, v8* tre, v8* tim, std::int64_t L, const cfloat* T) {
    v8 *xr = re, *xi = im, *yr = tre, *yi = tim;
    bool swapped = false;
    std::int64_t n = L, s = 1;
    for (; n >= 4; n /= 4, s *= 4) {
        const std::int64_t n4 = n / 4, step = L / n;
        for (std::int64_t p = 0; p < n4; ++p) {
            const cfloat w1 = T[p * step], w2 = T[2 * p * step], w3 = T[3 * p * step];
            const v8 w1r = splat(w1.real()), w1i = splat(w1.imag());
            const v8 w2r = splat(w2.real()), w2i = splat(w2.imag());
            const v8 w3r = splat(w3.real()), w3i = splat(w3.imag());
            for (std::int64_t q = 0; q < s; ++q) {
                const std::int64_t i0 = q + s * p;
                const v8 ar = xr[i0], ai = xi[i0];
                const v8 br = xr[i0 + s * n4], bi = xi[i0 + s * n4];
                const v8 cr = xr[i0 + 2 * s * n4], ci = xi[i0 + 2 * s * n4];
                const v8 dr = xr[i0 + 3 * s * n4], di = xi[i0 + 3 * s * n4];
                const v8 apcr = ar + cr, apci = ai + ci, amcr = ar - cr, amci = ai - ci;
                const v8 bpdr = br + dr, bpdi = bi + di, bmdr = br - dr, bmdi = bi - di;
                // amc -/+ i (b - d)
                const v8 t1r = amcr + bmdi, t1i = amci - bmdr;
                const v8 t3r = amcr - bmdi, t3i = amci + bmdr;
                const v8 t2r = apcr - bpdr, t2i = apci - bpdi;
                const std::int64_t o = q + s * 4 * p;
                yr[o] = apcr + bpdr;
                yi[o] = apci + bpdi;
                yr[o + s] = t1r * w1r - t1i * w1i;
                yi[o + s] = t1r * w1i + t1i * w1r;
                yr[o + 2 * s] = t2r * w2r - t2i * w2i;
                yi[o + 2 * s] = t2r * w2i + t2i * w2r;
                yr[o + 3 * s] = t3r * w3r - t3i * w3i;
                yi[o + 3 * s] = t3r * w3i + t3i * w3r;
            }
        }
        std::swap(xr, yr);
        std::swap(xi, yi);
        swapped = !swapped;
    }
    if (n == 2) {  // odd power of two: one last radix-2 stage, twiddles all 1
        for (std::int64_t q = 0; q < s; ++q) {
            const v8 ar = xr[q], ai = xi[q], br = xr[q + s], bi = xi[q + s];
            yr[q] = ar + br;
            yi[q] = ai + bi;
            yr[q + s] = ar - br;
            yi[q + s] = ai - bi;
        }
        swapped = !swapped;
    }
    return swapped;
}

}  // namespace

struct ChannelConvolver::Impl {
    std::shared_ptr<const std::vector<cfloat>> tw;
    std::vector<v8> re, im, tre, tim;  // [L] lane vectors each
    std::vector<cfloat> zfull;         // the kernel's full spectrum
};

ChannelConvolver::ChannelConvolver(std::int64_t L) : L_(L), impl_(std::make_unique<Impl>()) {
    if (!supports(L)) throw std::invalid_argument("ChannelConvolver: length not a power of two");
    impl_->tw = twiddle_table(L);
    const auto sz = static_cast<std::size_t>(L);
    impl_->re.resize(sz);
    impl_->im.resize(sz);
    impl_->tre.resize(sz);
    impl_->tim.resize(sz);
    impl_->zfull.resize(sz);
}

ChannelConvolver::ChannelConvolver(const ChannelConvolver& o) : ChannelConvolver(o.L_) {}

ChannelConvolver::~ChannelConvolver() = default;

void ChannelConvolver::convolve(const cfloat* zf, const float* v, float* y, std::int64_t n,
                                std::int64_t channels) {
    run(zf, v, y, n, channels, 1, n);
}

void ChannelConvolver::convolve_rows(const cfloat* zf, const float* v, float* y, std::int64_t ld,
                                     std::int64_t n, std::int64_t channels) {
    run(zf, v, y, n, channels, ld, 1);
}

// Sample j of channel c at v[j * sj + c * sc]: column-major (sj = 1, sc = n) gathers eight
// channels through a register transpose, row-major (sj = ld, sc = 1) loads eight adjacent
// channels of one sample as one vector.
void ChannelConvolver::run(const cfloat* zf, const float* v, float* y, std::int64_t n,
                           std::int64_t channels, std::int64_t sj, std::int64_t sc) {
    auto& I = *impl_;
    const std::int64_t L = L_;
    for (std::int64_t k = 0; k <= L / 2; ++k) I.zfull[k] = zf[k];
    for (std::int64_t k = L / 2 + 1; k < L; ++k) I.zfull[k] = std::conj(zf[L - k]);
    const cfloat* T = I.tw->data();
    auto gather = [&](const float* src, std::int64_t lanes, v8* out) {
        if (sj == 1) {
            const float* ch[8] = {};
            for (std::int64_t l = 0; l < lanes; ++l) ch[l] = src + l * sc;
            gather_lanes(ch, lanes, n, out);
        } else if (lanes == 8) {
            for (std::int64_t j = 0; j < n; ++j) std::memcpy(&out[j], src + j * sj, sizeof(v8));
        } else {
            for (std::int64_t j = 0; j < n; ++j) {
                v8 a{};
                for (std::int64_t l = 0; l < lanes; ++l) a[l] = src[j * sj + l];
                out[j] = a;
            }
        }
    };
    auto scatter = [&](const v8* in, std::int64_t lanes, float* dst) {
        if (sj == 1) {
            float* ch[8] = {};
            for (std::int64_t l = 0; l < lanes; ++l) ch[l] = dst + l * sc;
            scatter_lanes(in, lanes, n, ch);
        } else if (lanes == 8) {
            for (std::int64_t j = 0; j < n; ++j) std::memcpy(dst + j * sj, &in[j], sizeof(v8));
        } else {
            for (std::int64_t j = 0; j < n; ++j)
                for (std::int64_t l = 0; l < lanes; ++l) dst[j * sj + l] = in[j][l];
        }
    };
    // 16 channels per pass: lanes 0..7 of the real part and lanes 0..7 of the imaginary part.
    for (std::int64_t c0 = 0; c0 < channels; c0 += 16) {
        const std::int64_t nre = std::min<std::int64_t>(8, channels - c0);
        const std::int64_t nim = std::clamp<std::int64_t>(channels - c0 - 8, 0, 8);
        v8 *re = I.re.data(), *im = I.im.data(), *tre = I.tre.data(), *tim = I.tim.data();
        // Row-major with all 16 lanes: one pass over the rows loads both halves of each token's
        // 64-byte run (two passes would fetch every line twice at large n).
        const bool rows16 = sj != 1 && nim == 8;
        if (rows16) {
            const float* src = v + c0;
            for (std::int64_t j = 0; j < n; ++j) {
                std::memcpy(&re[j], src + j * sj, sizeof(v8));
                std::memcpy(&im[j], src + j * sj + 8, sizeof(v8));
            }
        } else {
            gather(v + c0 * sc, nre, re);
            if (nim)
                gather(v + (c0 + 8) * sc, nim, im);
            else
                std::fill(im, im + n, splat(0.0f));
        }
        for (std::int64_t j = n; j < L; ++j) re[j] = im[j] = splat(0.0f);
        if (stockham(re, im, tre, tim, L, T)) {
            std::swap(re, tre);
            std::swap(im, tim);
        }
        for (std::int64_t k = 0; k < L; ++k) {
            const v8 zr = splat(I.zfull[k].real()), zi = splat(I.zfull[k].imag());
            const v8 xr = re[k], xi = im[k];
            re[k] = xr * zr - xi * zi;
            im[k] = xr * zi + xi * zr;
        }
        // Inverse DFT = swap(DFT(swap(x))) with swap(a + ib) = b + ia: swapping the real and
        // imaginary arrays is free in this split layout.
        if (stockham(im, re, tim, tre, L, T)) {
            std::swap(re, tre);
            std::swap(im, tim);
        }
        if (rows16) {
            float* dst = y + c0;
            for (std::int64_t j = 0; j < n; ++j) {
                std::memcpy(dst + j * sj, &re[j], sizeof(v8));
                std::memcpy(dst + j * sj + 8, &im[j], sizeof(v8));
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
