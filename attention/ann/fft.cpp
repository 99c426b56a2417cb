#include "attention/ann/fft.hpp"

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

// The convolution runs as a forward DIF FFT whose output stays in digit-reversed order, a
// pointwise product with the kernel's spectrum permuted the same way, and the exact adjoint of
// the DIF (a DIT with conjugate twiddles), which takes that order back to natural order: no
// reordering pass. The recursion is depth-first: a block's forward step, its four quarters'
// whole convolutions, then its inverse step, so below the top level or two every block is
// transformed, multiplied and transformed back while it sits in cache. (A breadth-first
// Stockham pass over a 16-channel, N = 16384 signal streams 2 MB through L3 at each of its 14
// stages; see docs/ann-attention.md.)
//
// Sample j of the signal is x[2j] (real parts, 8 lanes) and x[2j + 1] (imaginary parts): one
// 64-byte line per sample. A butterfly's four legs are then four lines; with separate real and
// imaginary arrays they were eight lines, all in one L1 set at power-of-two distances, which
// evicted each other (5 ms of 23 at N = 16384, D = 512). It is also the layout of a column
// group of 16 channels ([n][16], see convolve_group), so such a group is transformed in place.

// Forward radix-4 DIF step on block x[0 .. m) (m = 4q), twiddles w^k = T[k * ts]:
// quarter s receives (sum_r x[j + r q] (-i)^(r s)) w^(s j), the input of the sub-DFT of the
// frequencies congruent to s mod 4. S: distance between samples in vectors (2 in memory, 1 for
// a block held in local arrays).
template <std::int64_t S>
inline void dif4(v8* re, v8* im, std::int64_t q, const cfloat* T, std::int64_t ts) {
#pragma GCC unroll 4
    for (std::int64_t j = 0; j < q; ++j) {
        const std::int64_t j0 = S * j, j1 = S * (j + q), j2 = S * (j + 2 * q), j3 = S * (j + 3 * q);
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
        const cfloat w1 = T[j * ts], w2 = T[2 * j * ts], w3 = T[3 * j * ts];
        const float w1r = w1.real(), w1i = w1.imag();
        const float w2r = w2.real(), w2i = w2.imag();
        const float w3r = w3.real(), w3i = w3.imag();
        const v8 t1r = cr + di, t1i = ci - dr;  // c - i d
        const v8 t2r = ar - br, t2i = ai - bi;  // a - b
        const v8 t3r = cr - di, t3i = ci + dr;  // c + i d
        re[j1] = t1r * w1r - t1i * w1i;
        im[j1] = t1r * w1i + t1i * w1r;
        re[j2] = t2r * w2r - t2i * w2i;
        im[j2] = t2r * w2i + t2i * w2r;
        re[j3] = t3r * w3r - t3i * w3i;
        im[j3] = t3r * w3i + t3i * w3r;
    }
}

// The adjoint of dif4: quarter s times conj(w^(s j)), then the unscaled inverse 4-point DFT.
template <std::int64_t S>
inline void dit4(v8* re, v8* im, std::int64_t q, const cfloat* T, std::int64_t ts) {
#pragma GCC unroll 4
    for (std::int64_t j = 0; j < q; ++j) {
        const std::int64_t j0 = S * j, j1 = S * (j + q), j2 = S * (j + 2 * q), j3 = S * (j + 3 * q);
        v8 y1r = re[j1], y1i = im[j1], y2r = re[j2], y2i = im[j2];
        v8 y3r = re[j3], y3i = im[j3];
        if (j != 0) {
            const cfloat w1 = T[j * ts], w2 = T[2 * j * ts], w3 = T[3 * j * ts];
            const float w1r = w1.real(), w1i = w1.imag();
            const float w2r = w2.real(), w2i = w2.imag();
            const float w3r = w3.real(), w3i = w3.imag();
            const v8 u1r = y1r * w1r + y1i * w1i, u1i = y1i * w1r - y1r * w1i;
            const v8 u2r = y2r * w2r + y2i * w2i, u2i = y2i * w2r - y2r * w2i;
            const v8 u3r = y3r * w3r + y3i * w3i, u3i = y3i * w3r - y3r * w3i;
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
// which the compiler keeps in the 32 vector registers: one load and one store per sample for
// the last one or two steps each way, instead of one per step.
template <int M>
inline void convolve_local(v8* xr, v8* xi, const cfloat* T, std::int64_t ts, const float* zr,
                           const float* zi) {
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
inline void convolve_leaf(v8* re, v8* im, const cfloat* T, std::int64_t ts, const float* zr,
                          const float* zi) {
    v8 xr[M], xi[M];
#pragma GCC unroll 16
    for (int k = 0; k < M; ++k) xr[k] = re[2 * k], xi[k] = im[2 * k];
    convolve_local<M>(xr, xi, T, ts, zr, zi);
#pragma GCC unroll 16
    for (int k = 0; k < M; ++k) re[2 * k] = xr[k], im[2 * k] = xi[k];
}

// Convolves block [0, m) in place (re = x, im = x + 1): forward step, the sub-blocks, inverse
// step. z points at this block's part of the permuted spectrum.
void convolve_block(v8* re, v8* im, std::int64_t m, const cfloat* T, std::int64_t ts,
                    const float* zr, const float* zi) {
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
    const std::int64_t q = m / 4;
    dif4<2>(re, im, q, T, ts);
    for (std::int64_t s = 0; s < 4; ++s)
        convolve_block(re + 2 * s * q, im + 2 * s * q, q, T, ts * 4, zr + s * q, zi + s * q);
    dit4<2>(re, im, q, T, ts);
}

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
    std::vector<v8> x;          // [2L]: sample j's real lanes at 2j, imaginary lanes at 2j + 1
    std::vector<float> zr, zi;  // the kernel's spectrum in the recursion's order
    bool has_kernel = false;
};

ChannelConvolver::ChannelConvolver(std::int64_t L) : L_(L), impl_(std::make_unique<Impl>()) {
    if (!supports(L)) throw std::invalid_argument("ChannelConvolver: length not a power of two");
    impl_->tw = twiddle_table(L);
    impl_->order = order_table(L);
    const auto sz = static_cast<std::size_t>(L);
    impl_->x.resize(2 * sz);
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
    v8* v = reinterpret_cast<v8*>(x);
    convolve_block(v, v + 1, L_, I.tw->data(), 1, I.zr.data(), I.zi.data());
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
    if (n == L_ && reinterpret_cast<std::uintptr_t>(data) % alignof(v8) == 0)
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
    v8* const re = I.x.data();
    v8* const im = I.x.data() + 1;
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
