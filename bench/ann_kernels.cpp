// The ANN reference paths' FFT and GEMM next to FFTW3 and OpenBLAS, single thread, at the shapes
// CAT uses (docs/ann-attention.md, "Libraries or own code"). Run once per level:
//   build/ann_kernels; TERNION_ISA=v3 build/ann_kernels
// (FFTW and OpenBLAS choose their own code paths from the CPU; TERNION_ISA does not reach them.)
// Prints one line per case: the median and minimum of 7 timed runs after one warm-up.
#include <cblas.h>
#include <fftw3.h>

#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <complex>
#include <cstdio>
#include <functional>
#include <random>
#include <vector>

#include "attention/ann/ann_gemm.hpp"
#include "attention/ann/fft.hpp"
#include "sim/kernels/token_kernel.hpp"
#include "sim/simd/simd.hpp"

extern "C" void openblas_set_num_threads(int);
extern "C" char* openblas_get_corename();

using namespace ternion;
using MatR = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

namespace {

void timed(const char* what, const std::function<void()>& f) {
    f();
    std::vector<double> t;
    for (int r = 0; r < 7; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        f();
        t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                        .count());
    }
    std::sort(t.begin(), t.end());
    std::printf("%-58s median %8.2f ms  min %8.2f ms\n", what, t[3], t[0]);
}

// [m, 512] x [512, n] + bias: the packed kernel (Eigen where the level has none), Eigen, OpenBLAS.
void gemms(std::int64_t m, std::int64_t n) {
    const std::int64_t k = 512;
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> U(-1.0f, 1.0f);
    MatR A(m, k), B(k, n), C(m, n);
    Eigen::RowVectorXf bias(n);
    for (auto* M : {&A, &B})
        for (std::int64_t i = 0; i < M->size(); ++i) M->data()[i] = U(rng);
    for (std::int64_t i = 0; i < n; ++i) bias[i] = U(rng);
    char label[96];
    if (ann::packed_gemm_available()) {
        ann::PackedMatrix P(B.data(), n, k, n);
        std::snprintf(label, sizeof label, "gemm %lld x 512 x %lld own packed", (long long)m,
                      (long long)n);
        timed(label, [&] { ann::gemm_packed(A.data(), k, m, P, bias.data(), C.data(), n); });
    }
    std::snprintf(label, sizeof label, "gemm %lld x 512 x %lld Eigen", (long long)m, (long long)n);
    timed(label, [&] {
        C.rowwise() = bias;
        C.noalias() += A * B;
    });
    std::snprintf(label, sizeof label, "gemm %lld x 512 x %lld OpenBLAS (%s)", (long long)m,
                  (long long)n, openblas_get_corename());
    timed(label, [&] {
        C.rowwise() = bias;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m),
                    static_cast<int>(n), static_cast<int>(k), 1.0f, A.data(), static_cast<int>(k),
                    B.data(), static_cast<int>(n), 1.0f, C.data(), static_cast<int>(n));
    });
}

// CAT's mixing of 512 channels of length n with one kernel: what CAT runs (the batched convolver
// on column groups at powers of two, RealFft per channel otherwise: kissfft/Bluestein before,
// FFTW now) against FFTW r2c, product, c2r per channel (FFTW_ESTIMATE plans), both on 32 groups of
// 16 channels ([n][16] each).
void ffts(std::int64_t n) {
    const std::int64_t ch = 512, groups = ch / 16, h = n / 2 + 1;
    std::mt19937 rng(2);
    std::uniform_real_distribution<float> U(-1.0f, 1.0f);
    AlignedFloats v(static_cast<std::size_t>(n * ch)), z(static_cast<std::size_t>(n));
    for (auto& x : v) x = U(rng);
    for (auto& x : z) x = U(rng);
    char label[96];
    ann::RealFft plan(n);
    std::vector<ann::cfloat> zf(static_cast<std::size_t>(h)), vf(zf.size());
    plan.forward(z.data(), zf.data());
    for (auto& c : zf) c /= static_cast<float>(n);
    std::vector<float> col(static_cast<std::size_t>(n));
    if (ann::ChannelConvolver::supports(n)) {
        ann::ChannelConvolver conv(n);
        conv.set_kernel(zf.data());
        std::snprintf(label, sizeof label, "mix 512 ch, n = %lld, own batched convolver",
                      (long long)n);
        timed(label, [&] {
            for (std::int64_t g = 0; g < groups; ++g) conv.convolve_group(v.data() + g * n * 16, n);
        });
    } else {
        std::snprintf(label, sizeof label, "mix 512 ch, n = %lld, RealFft per channel",
                      (long long)n);
        timed(label, [&] {
            for (std::int64_t c = 0; c < ch; ++c) {
                float* base = v.data() + (c / 16) * n * 16 + c % 16;
                for (std::int64_t j = 0; j < n; ++j) col[j] = base[16 * j];
                plan.forward(col.data(), vf.data());
                for (std::int64_t k = 0; k < h; ++k) vf[k] *= zf[k];
                plan.inverse(vf.data(), col.data());
                for (std::int64_t j = 0; j < n; ++j) base[16 * j] = col[j];
            }
        });
    }
    float* in = fftwf_alloc_real(static_cast<std::size_t>(n));
    fftwf_complex* sp = fftwf_alloc_complex(static_cast<std::size_t>(h));
    const int ni = static_cast<int>(n);
    fftwf_plan f = fftwf_plan_dft_r2c_1d(ni, in, sp, FFTW_ESTIMATE);
    fftwf_plan b = fftwf_plan_dft_c2r_1d(ni, sp, in, FFTW_ESTIMATE);
    std::snprintf(label, sizeof label, "mix 512 ch, n = %lld, FFTW (estimate)", (long long)n);
    timed(label, [&] {
        for (std::int64_t c = 0; c < ch; ++c) {
            float* base = v.data() + (c / 16) * n * 16 + c % 16;
            for (std::int64_t j = 0; j < n; ++j) in[j] = base[16 * j];
            fftwf_execute(f);
            auto* s = reinterpret_cast<ann::cfloat*>(sp);
            for (std::int64_t k = 0; k < h; ++k) s[k] *= zf[k];
            fftwf_execute(b);
            for (std::int64_t j = 0; j < n; ++j) base[16 * j] = in[j];
        }
    });
    fftwf_destroy_plan(f);
    fftwf_destroy_plan(b);
    fftwf_free(in);
    fftwf_free(sp);
}

}  // namespace

int main() {
    openblas_set_num_threads(1);
    std::printf("kernels: %s\n", simd::level_name(simd::level()));
    for (std::int64_t n : {4096, 16384, 12288, 10000}) ffts(n);
    for (std::int64_t m : {4096, 16384})
        for (std::int64_t n : {512, 528}) gemms(m, n);
}
