// collect_nonzero, which lists every node's non-zero outputs and says whether they are all -1 or
// +1, against a plain loop: sparse and dense ranges (the two ways it checks the values), ranges
// that start and end off a 64-entry boundary, NaN (non-zero, not a spike) and -0 (zero), and
// values outside the range, which must not count.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "sim/core/node.hpp"

using namespace ternion;

TEST_CASE("collect_nonzero lists the non-zeros and tells ternary ranges from others") {
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    const std::int64_t n = 1000;
    for (double density : {0.0, 0.01, 0.1, 0.3, 0.9, 1.0})
        for (auto [b0, b1] : {std::pair<std::int64_t, std::int64_t>{0, n}, {3, 997}, {64, 128}})
            for (float odd : {0.0f, 2.0f, 0.5f, -3.0f, NAN, -0.0f}) {
                CAPTURE(density);
                // clang 14 cannot capture structured bindings in lambdas (INFO/CAPTURE)
                const std::int64_t begin = b0;
                CAPTURE(begin);
                CAPTURE(odd);
                std::vector<float> v(static_cast<std::size_t>(n), 0.0f);
                for (auto& x : v)
                    if (u(rng) < density) x = u(rng) < 0.5f ? 1.0f : -1.0f;
                // A non-unit value outside the range never matters.
                if (b0 > 0) v[static_cast<std::size_t>(b0 - 1)] = 7.0f;
                if (b1 < n) v[static_cast<std::size_t>(b1)] = 7.0f;
                const auto at = static_cast<std::size_t>(b0 + (b1 - b0) / 2);
                if (odd != 0.0f || std::signbit(odd)) v[at] = odd;
                std::vector<std::uint32_t> want;
                bool want_ternary = true;
                for (std::int64_t i = b0; i < b1; ++i) {
                    const float x = v[static_cast<std::size_t>(i)];
                    if (x != 0.0f || std::isnan(x)) {
                        want.push_back(static_cast<std::uint32_t>(i));
                        if (x != 1.0f && x != -1.0f) want_ternary = false;
                    }
                }
                std::vector<std::uint32_t> got(static_cast<std::size_t>(b1 - b0));
                bool ternary = !want_ternary;
                got.resize(collect_nonzero(v.data(), b0, b1, got.data(), ternary));
                CHECK(got == want);
                CHECK(ternary == want_ternary);
                // The expected answer itself: an odd non-zero value breaks ternarity.
                CHECK(want_ternary == (odd == 0.0f));
            }
}
