// RealFft on Eigen's FFT module (kissfft, BSD-style licence, shipped with Eigen), the default
// backend: every length in O(N log N) and exactly length N. kissfft alone is O(N p) for a large
// prime factor p, so such lengths (wants_bluestein) go through Bluestein's chirp-z algorithm on
// a power-of-two length. -DTERNION_FFTW=ON replaces it with FFTW (fft_fftw.cpp).
#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>
#include <unsupported/Eigen/FFT>

#include "attention/ann/fft.hpp"

namespace ternion::ann {

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

}  // namespace ternion::ann
