#include "attention/spiking/spiking_kernels.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <stdexcept>

namespace ternion::spiking {

namespace {

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

}  // namespace ternion::spiking
