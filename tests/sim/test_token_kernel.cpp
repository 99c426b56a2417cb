// token_rows against the plain dense loop it must equal bit for bit: y = bias + sum of x * w in
// ascending channel order (or the sum, then the bias), over every mode (+1 only, +-1, analog
// values), sparse and dense inputs (chunk widths adapt to density; inputs at least half
// non-zero take the dense register tiles), more tokens than one tile or than a whole number of
// tiles, outputs that are not a multiple of 64, row ranges, and the non-zero / non-unit masks.
#include <doctest/doctest.h>

#include <cstring>
#include <random>
#include <vector>

#include "sim/kernels/token_kernel.hpp"

using namespace ternion;

namespace {

struct Case {
    std::int64_t in, out, tokens;
    double density;
    int mode;  // 0: +1, 1: +-1, 2: values
};

// The dense engine's order: every term, zeros included, in ascending channel order.
std::vector<float> reference(const std::vector<float>& w, const std::vector<float>& x,
                             const float* bias, BiasOrder order, const Case& c) {
    std::vector<float> y(static_cast<std::size_t>(c.tokens * c.out));
    for (std::int64_t t = 0; t < c.tokens; ++t)
        for (std::int64_t r = 0; r < c.out; ++r) {
            float s = bias && order == BiasOrder::first ? bias[r] : 0.0f;
            for (std::int64_t k = 0; k < c.in; ++k) {
                const float xv = x[static_cast<std::size_t>(t * c.in + k)];
                const float p = xv * w[static_cast<std::size_t>(k * c.out + r)];
                s = s + p;
            }
            if (bias && order == BiasOrder::last) s = s + bias[r];
            y[static_cast<std::size_t>(t * c.out + r)] = s;
        }
    return y;
}

bool same_bits(float a, float b) {
    return std::memcmp(&a, &b, 4) == 0;
}

}  // namespace

TEST_CASE("token_rows equals the dense loop bit for bit") {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> U(-1.0f, 1.0f), u01(0.0f, 1.0f);
    const Case cases[] = {
        {5, 3, 1, 0.6, 0},      {100, 64, 70, 0.3, 0}, {384, 130, 3, 0.05, 1},
        {700, 64, 150, 0.5, 2}, {96, 200, 65, 0.9, 1}, {384, 384, 64, 0.02, 0},
        {1536, 96, 20, 0.2, 2}, {50, 1, 9, 1.0, 2},    {64, 128, 129, 0.0, 1},
    };
    for (const Case& c : cases)
        for (BiasOrder order : {BiasOrder::first, BiasOrder::last})
            for (bool with_bias : {true, false}) {
                CAPTURE(c.in);
                CAPTURE(c.out);
                CAPTURE(c.tokens);
                CAPTURE(c.mode);
                std::vector<float> w(static_cast<std::size_t>(c.in * c.out));
                for (auto& v : w) v = u01(rng) < 0.1f ? 0.0f : U(rng);
                std::vector<float> bias(static_cast<std::size_t>(c.out));
                for (auto& v : bias) v = U(rng);
                std::vector<float> x(static_cast<std::size_t>(c.tokens * c.in), 0.0f);
                IndexList active;
                for (std::size_t i = 0; i < x.size(); ++i)
                    if (u01(rng) < c.density) {
                        x[i] = c.mode == 0   ? 1.0f
                               : c.mode == 1 ? (u01(rng) < 0.5f ? -1.0f : 1.0f)
                                             : (u01(rng) < 0.3f ? 2.0f : 3.0f * U(rng));
                        if (x[i] != 0.0f) active.push_back(static_cast<std::uint32_t>(i));
                    }
                TokenEvents ev;
                ev.build(active, x.data(), c.in, c.tokens);
                CHECK(ev.negative == (c.mode != 0 && [&] {
                          for (float v : x)
                              if (v < 0) return true;
                          return false;
                      }()));
                TokenPanels panels;
                panels.build(w.data(), c.in, c.out);
                const float* b = with_bias ? bias.data() : nullptr;
                const auto want = reference(w, x, b, order, c);
                const std::int64_t groups = (c.out + 63) / 64;
                std::vector<float> y(want.size(), 12345.0f);
                std::vector<std::uint64_t> nz(static_cast<std::size_t>(c.tokens * groups), ~0ull),
                    nt(nz.size(), ~0ull);
                TokenScratch sc;
                // Two row ranges, as two blocks of a split layer would call it.
                const std::int64_t mid = c.out > 64 ? 64 : c.out;
                token_rows(panels, ev, b, order, c.mode != 2, y.data(), 0, mid, nz.data(),
                           nt.data(), sc);
                token_rows(panels, ev, b, order, c.mode != 2, y.data(), mid, c.out, nz.data(),
                           nt.data(), sc);
                int mismatches = 0, mask_errors = 0;
                for (std::int64_t t = 0; t < c.tokens; ++t)
                    for (std::int64_t r = 0; r < c.out; ++r) {
                        const auto i = static_cast<std::size_t>(t * c.out + r);
                        mismatches += !same_bits(y[i], want[i]);
                        const auto m = static_cast<std::size_t>(t * groups + r / 64);
                        const bool z = (nz[m] >> (r % 64)) & 1, n = (nt[m] >> (r % 64)) & 1;
                        mask_errors += z != (want[i] != 0.0f);
                        mask_errors +=
                            n != (want[i] != 0.0f && want[i] != 1.0f && want[i] != -1.0f);
                    }
                CHECK(mismatches == 0);
                CHECK(mask_errors == 0);
            }
}
