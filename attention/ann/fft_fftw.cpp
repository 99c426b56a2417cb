// RealFft on FFTW3 (single precision), the backend of builds configured with -DTERNION_FFTW=ON:
// 3-4x faster than the built-in backend (fft_builtin.cpp) at lengths that are not powers of
// two. FFTW is GPL-2+, so binaries built with it are distributed under the GPL.
#include <fftw3.h>

#include <cstring>
#include <mutex>
#include <stdexcept>

#include "attention/ann/fft.hpp"

namespace ternion::ann {

// FFTW plans of one length, made with FFTW_ESTIMATE: the plan depends only on the length and
// the CPU, never on timings, so results repeat run to run. FFTW's planner is not thread-safe
// (its execution is), so plans are made and destroyed under one lock.
namespace {
std::mutex& fftw_planner_lock() {
    static std::mutex mu;
    return mu;
}
}  // namespace

struct RealFft::Impl {
    float* r = nullptr;          // n reals, FFTW-aligned
    fftwf_complex* c = nullptr;  // n/2 + 1 complex values
    fftwf_plan fwd = nullptr, inv = nullptr;

    explicit Impl(std::int64_t n) {
        const int ni = static_cast<int>(n);
        std::lock_guard<std::mutex> lock(fftw_planner_lock());
        r = fftwf_alloc_real(static_cast<std::size_t>(n));
        c = fftwf_alloc_complex(static_cast<std::size_t>(n / 2 + 1));
        if (!r || !c) throw std::bad_alloc();
        fwd = fftwf_plan_dft_r2c_1d(ni, r, c, FFTW_ESTIMATE);
        inv = fftwf_plan_dft_c2r_1d(ni, c, r, FFTW_ESTIMATE);
        if (!fwd || !inv) throw std::runtime_error("RealFft: FFTW made no plan");
    }
    ~Impl() {
        std::lock_guard<std::mutex> lock(fftw_planner_lock());
        if (fwd) fftwf_destroy_plan(fwd);
        if (inv) fftwf_destroy_plan(inv);
        fftwf_free(r);
        fftwf_free(c);
    }
    Impl(const Impl&) = delete;
    Impl& operator=(const Impl&) = delete;
};

RealFft::RealFft(std::int64_t n) : n_(n) {
    if (n < 1 || n > (std::int64_t{1} << 28)) throw std::invalid_argument("RealFft: bad length");
    impl_ = std::make_unique<Impl>(n);
}

RealFft::RealFft(const RealFft& o) : RealFft(o.n_) {}

RealFft::~RealFft() = default;

void RealFft::forward(const float* in, cfloat* out) {
    auto& I = *impl_;
    std::memcpy(I.r, in, static_cast<std::size_t>(n_) * sizeof(float));
    fftwf_execute(I.fwd);
    std::memcpy(static_cast<void*>(out), I.c,
                static_cast<std::size_t>(spectrum_size()) * sizeof(cfloat));
}

void RealFft::inverse(const cfloat* in, float* out) {
    auto& I = *impl_;
    // A c2r plan overwrites its input: it transforms the copy.
    std::memcpy(I.c, in, static_cast<std::size_t>(spectrum_size()) * sizeof(cfloat));
    fftwf_execute(I.inv);
    std::memcpy(out, I.r, static_cast<std::size_t>(n_) * sizeof(float));
}

}  // namespace ternion::ann
