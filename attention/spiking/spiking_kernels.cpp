#include "attention/spiking/spiking_kernels.hpp"

#include "sim/kernels/token_kernel.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <stdexcept>

namespace ternion::spiking {

namespace {

// Row updates of the projection. Compiled for AVX-512, AVX2 and a baseline; the dispatcher
// picks one per machine, and the event and dense forms use the same clone, so their results
// stay identical on any machine.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define TERNION_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define TERNION_CLONES
#endif

TERNION_CLONES void row_axpy(float* __restrict a, float x, const float* __restrict w,
                             std::int64_t n) {
    for (std::int64_t j = 0; j < n; ++j) a[j] += x * w[j];
}

// gamma for any row: m its maximum, span = m - its minimum.
std::int64_t general_gamma(const std::int32_t* x, std::int64_t n, std::int64_t m,
                           std::int64_t span) {
    // sum_j 2^(x_j - m) = I + F with integer part I >= 1 and a fraction F in [0, 1); exponents
    // below 0 are summed with binary carries from the lowest one upwards, `sticky` records
    // whether any fractional bit is left.
    // Scores of d channels span at most 2d + 1 values: on the stack for heads up to 128 wide.
    std::array<std::uint64_t, 257> small{};
    std::vector<std::uint64_t> large;
    std::uint64_t* count = small.data();
    if (span + 1 > static_cast<std::int64_t>(small.size())) {
        large.resize(static_cast<std::size_t>(span + 1));
        count = large.data();
    }
    std::fill_n(count, span + 1, std::uint64_t{0});
    for (std::int64_t j = 0; j < n; ++j) ++count[static_cast<std::size_t>(m - x[j])];
    std::uint64_t carry = 0;
    bool sticky = false;
    for (std::int64_t e = span; e >= 1; --e) {
        std::uint64_t t = count[static_cast<std::size_t>(e)] + carry;
        sticky = sticky || (t & 1u);
        carry = t >> 1;
    }
    const std::uint64_t integer = count[0] + carry;  // >= 1: the maximum contributes 1
    // ceil(log2(I + F)): I a power of two and F = 0 -> log2 I; otherwise floor(log2 I) + 1.
    const int fl = 63 - std::countl_zero(integer);
    const bool exact_pow2 = !sticky && std::has_single_bit(integer);
    return m + (exact_pow2 ? fl : fl + 1);
}

}  // namespace

int shiftmax_exponents(const std::int32_t* x, std::int64_t n, std::int32_t* n_out) {
    if (n <= 0) return 0;
    std::int64_t m = x[0], lo = x[0];
    for (std::int64_t j = 1; j < n; ++j) {
        m = std::max<std::int64_t>(m, x[j]);
        lo = std::min<std::int64_t>(lo, x[j]);
    }
    const std::int64_t span = m - lo;  // exponents 0, -1, ..., -span
    std::int64_t gamma;
    if (n <= 64 && span <= 56) {
        // The common row (attention heads' scores span at most twice the head width): the sum
        // scaled by 2^56 is an exact integer below 2^62, and ceil(log2) of it is read off its
        // bits. A loop without branches, where the general path below keeps a count per
        // exponent and carries one exponent at a time.
        std::uint64_t total = 0;
        for (std::int64_t j = 0; j < n; ++j) total += std::uint64_t{1} << (56 - (m - x[j]));
        const int fl = 63 - std::countl_zero(total);
        gamma = m + (std::has_single_bit(total) ? fl : fl + 1) - 56;
    } else {
        gamma = general_gamma(x, n, m, span);
    }
    for (std::int64_t j = 0; j < n; ++j) n_out[j] = static_cast<std::int32_t>(gamma - x[j]);
    return static_cast<int>(gamma);
}

std::vector<double> shiftmax(const std::vector<std::int32_t>& x) {
    std::vector<std::int32_t> e(x.size());
    shiftmax_exponents(x.data(), static_cast<std::int64_t>(x.size()), e.data());
    std::vector<double> w(x.size());
    for (std::size_t j = 0; j < x.size(); ++j) w[j] = std::ldexp(1.0, -e[j]);
    return w;
}

std::vector<std::int32_t> ternary_product(const std::vector<std::int8_t>& q,
                                          const std::vector<std::int8_t>& k, std::int64_t n,
                                          std::int64_t m, std::int64_t d, std::uint64_t* acs) {
    std::vector<std::int32_t> s(static_cast<std::size_t>(n * m), 0);
    std::uint64_t pairs = 0;
    // Event form: per channel, every non-zero query meets every non-zero key.
    for (std::int64_t c = 0; c < d; ++c) {
        for (std::int64_t i = 0; i < n; ++i) {
            const int a = q[static_cast<std::size_t>(i * d + c)];
            if (!a) continue;
            for (std::int64_t j = 0; j < m; ++j) {
                const int b = k[static_cast<std::size_t>(j * d + c)];
                if (!b) continue;
                s[static_cast<std::size_t>(i * m + j)] += a * b;
                ++pairs;
            }
        }
    }
    if (acs) *acs = pairs;
    return s;
}

Projection::Projection(const std::vector<float>& weight, const std::vector<float>& bias,
                       std::int64_t out, std::int64_t in, BatchNorm bn)
    : in_(in), out_(out), wt_(static_cast<std::size_t>(in * out)), bias_(bias), bn_(std::move(bn)) {
    if (static_cast<std::int64_t>(weight.size()) != in * out)
        throw std::invalid_argument("projection weight size");
    if (bias_.empty()) bias_.assign(static_cast<std::size_t>(out), 0.0f);
    row_nnz_.assign(static_cast<std::size_t>(in), 0);
    for (std::int64_t o = 0; o < out; ++o)
        for (std::int64_t i = 0; i < in; ++i) {
            float w = weight[static_cast<std::size_t>(o * in + i)];
            wt_[static_cast<std::size_t>(i * out + o)] = w;
            if (w != 0.0f) ++row_nnz_[static_cast<std::size_t>(i)];
        }
    for (auto c : row_nnz_) nnz_total_ += c;
    panels_.build(wt_.data(), in_, out_);
}

Projection Projection::concat(const std::vector<const Projection*>& parts) {
    Projection r;
    r.in_ = parts.at(0)->in_;
    for (auto* p : parts) r.out_ += p->out_;
    r.wt_.resize(static_cast<std::size_t>(r.in_ * r.out_));
    r.row_nnz_.assign(static_cast<std::size_t>(r.in_), 0);
    std::int64_t off = 0;
    for (auto* p : parts) {
        for (std::int64_t i = 0; i < r.in_; ++i) {
            std::copy_n(p->wt_.begin() + i * p->out_, p->out_, r.wt_.begin() + i * r.out_ + off);
            r.row_nnz_[static_cast<std::size_t>(i)] += p->row_nnz_[static_cast<std::size_t>(i)];
        }
        r.bias_.insert(r.bias_.end(), p->bias_.begin(), p->bias_.end());
        r.nnz_total_ += p->nnz_total_;
        off += p->out_;
    }
    // One bias order for the whole stack: every part's BatchNorm unfolded, or none.
    std::vector<const BatchNorm*> bns;
    for (auto* p : parts)
        if (!p->bn_.empty()) bns.push_back(&p->bn_);
    if (!bns.empty() && bns.size() != parts.size())
        throw std::invalid_argument("projections stacked with and without a BatchNorm epilogue");
    if (!bns.empty()) r.bn_ = BatchNorm::concat(bns);
    r.panels_.build(r.wt_.data(), r.in_, r.out_);
    return r;
}

std::uint64_t Projection::apply_event(const float* x, const IndexList& active, std::int64_t tokens,
                                      float* acc, bool ternary) const {
    // Per-thread scratch: a Projection is shared by every sample running in parallel.
    thread_local TokenEvents ev;
    thread_local TokenScratch scratch;
    ev.build(active, x, in_, tokens);
    std::uint64_t pairs = 0;
    for (auto c : ev.chan) pairs += row_nnz_[c];
    // acc = bias + the terms in ascending input order, as apply_dense adds them.
    token_rows(panels_, ev, bias_.data(), bn_.empty() ? BiasOrder::first : BiasOrder::last, ternary,
               acc, 0, out_, nullptr, nullptr, scratch);
    if (!bn_.empty()) bn_.apply_rows(acc, tokens);
    return pairs;
}

std::uint64_t Projection::apply_dense(const float* x, std::int64_t tokens, float* acc) const {
    std::uint64_t pairs = 0;
    for (std::int64_t n = 0; n < tokens; ++n) {
        float* a = acc + n * out_;
        if (bn_.empty())
            std::copy(bias_.begin(), bias_.end(), a);
        else
            std::fill(a, a + out_, 0.0f);
        for (std::int64_t i = 0; i < in_; ++i) {
            const float v = x[n * in_ + i];
            // Multiplying by 1 or -1 and adding is the event form's add/subtract exactly; an
            // exact zero term leaves every sum unchanged.
            row_axpy(a, v, wt_.data() + i * out_, out_);
            if (v != 0.0f) pairs += row_nnz_[static_cast<std::size_t>(i)];
        }
        if (!bn_.empty())
            for (std::int64_t o = 0; o < out_; ++o) a[o] += bias_[static_cast<std::size_t>(o)];
    }
    if (!bn_.empty()) bn_.apply_rows(acc, tokens);
    return pairs;
}

}  // namespace ternion::spiking
