// One small interface to real FFTs along a single axis, so the attention code never depends
// on a particular FFT library. RealFft transforms one channel at any length, exactly length N
// (never zero-padded to change its meaning) in O(N log N): by default on Eigen's kissfft with
// Bluestein for large prime factors (fft_builtin.cpp, permissive licences), or on FFTW3 when
// built with -DTERNION_FFTW=ON (fft_fftw.cpp: 3-4x faster at lengths that are not powers of two,
// but GPL). Powers of two, CAT's usual case, take ChannelConvolver below, our own batched
// kernel, 5-24x faster there than FFTW channel by channel. See docs/ann-attention.md.
#pragma once
#include <complex>
#include <cstdint>
#include <memory>
#include <vector>

namespace ternion::ann {

using cfloat = std::complex<float>;

// A plan for real transforms of one length n. Not thread-safe (it keeps scratch buffers):
// give every thread its own copy (a copy makes its own FFTW plan, under FFTW's planner lock).
class RealFft {
  public:
    explicit RealFft(std::int64_t n);
    RealFft(const RealFft& o);
    RealFft& operator=(const RealFft&) = delete;
    ~RealFft();

    std::int64_t size() const { return n_; }
    std::int64_t spectrum_size() const { return n_ / 2 + 1; }

    // out[k] = sum_j in[j] exp(-2 pi i j k / n), for k = 0 .. n/2 (the other half is the
    // complex conjugate).
    void forward(const float* in, cfloat* out);
    // out[j] = sum_k X[k] exp(+2 pi i j k / n) over the full Hermitian spectrum rebuilt from
    // in[0 .. n/2]: unscaled, so forward then inverse multiplies by n.
    void inverse(const cfloat* in, float* out);

    // Multiply-accumulates one forward or inverse transform is counted as (docs: nominal
    // model, 2 L log2 L for a complex transform of length L, real transforms at half length).
    std::uint64_t macs_per_transform() const;

  private:
    struct Impl;
    std::int64_t n_;
    std::unique_ptr<Impl> impl_;
};

// Circular convolution of many real channels with one real kernel at a power-of-two length
// L, eight lanes at a time. Why a kernel of our own: a library transforms one channel at a time,
// while CAT transforms D channels of the same length. Here
// channel pairs ride in the real and imaginary parts of one complex signal (z is real, so
// conv(z, a + i b) = conv(z, a) + i conv(z, b): no half-spectrum split needed), and eight such
// complex signals share every butterfly of an in-place radix-4 FFT (one AVX2 register per
// butterfly leg) that keeps the spectrum in digit-reversed order between the forward and
// inverse transforms. A sample of the 16 channels is one 64-byte line: 8 real lanes, then 8
// imaginary ones. Not thread-safe (scratch buffers): one per thread.
class ChannelConvolver {
  public:
    static bool supports(std::int64_t L) { return L >= 2 && (L & (L - 1)) == 0; }
    explicit ChannelConvolver(std::int64_t L);
    ChannelConvolver(const ChannelConvolver& o);
    ChannelConvolver& operator=(const ChannelConvolver&) = delete;
    ~ChannelConvolver();

    std::int64_t size() const { return L_; }
    // zf: the half spectrum (L/2 + 1 values) of the kernel, already scaled by 1/L. Kept for
    // the calls below that take no zf.
    void set_kernel(const cfloat* zf);
    // v, y: column-major [n, channels] with n <= L (zero-padded to L; the first n outputs
    // are written). L == n gives the circular convolution, L >= 2n - 1 the linear one.
    void convolve(const cfloat* zf, const float* v, float* y, std::int64_t n,
                  std::int64_t channels);
    // The same for row-major v and y: sample j of channel c at v[j * ld + c] (channels of one
    // token side by side, as a projection writes them), so no transposes are needed. y may be
    // v. Without zf: the kernel set last.
    void convolve_rows(const cfloat* zf, const float* v, float* y, std::int64_t ld, std::int64_t n,
                       std::int64_t channels);
    void convolve_rows(const float* v, float* y, std::int64_t ld, std::int64_t n,
                       std::int64_t channels);
    // In place on a group of 16 channels stored sample by sample (channel c of sample j at
    // data[16 j + c], a column group of ann::GroupMatrix), n <= L, with the kernel set last.
    // At n == L on 32-byte aligned data the group is transformed where it lies, no copies.
    void convolve_group(float* data, std::int64_t n);

  private:
    void run(const float* v, float* y, std::int64_t n, std::int64_t channels, std::int64_t sj,
             std::int64_t sc);
    // Forward transform, product with the kernel, inverse, on the 2L vectors at x (aligned).
    void transform(float* x);
    struct Impl;
    std::int64_t L_;
    std::unique_ptr<Impl> impl_;
};

// macs_per_transform() of a RealFft of length n, without building the plan.
std::uint64_t real_fft_macs(std::int64_t n);

// Nominal multiply-accumulates of a complex FFT of length L: 2 * L * ceil(log2 L).
std::uint64_t complex_fft_macs(std::int64_t L);

// ceil(log2 L), and whether length n is counted (and, in the built-in backend, computed) as
// Bluestein's algorithm on a power-of-two length: n > 16 with a prime factor above 7
// (docs/ann-attention.md, "FFT model").
std::int64_t ceil_log2(std::int64_t L);
bool wants_bluestein(std::int64_t n);

// Smallest length >= n whose prime factors are all 2, 3 or 5 (fast FFT lengths).
std::int64_t next_fast_length(std::int64_t n);

}  // namespace ternion::ann
