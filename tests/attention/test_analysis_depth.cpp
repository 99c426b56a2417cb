// Depth/width analysis: the closed forms of docs/analysis.md.
#include <doctest/doctest.h>

#include <cmath>

#include "attention/analysis/analysis_depth.hpp"
#include "sim/core/error.hpp"

using namespace ternion::analysis;

TEST_CASE("fact 1: L_th(3^k) = k and L_th(768) = 6.05") {
    for (int k = 0; k <= 12; ++k)
        CHECK(depth_threshold(std::pow(3.0, k)) == doctest::Approx(k).epsilon(1e-12));
    CHECK(depth_threshold(768) == doctest::Approx(6.0474).epsilon(1e-4));
    CHECK(depth_threshold(1024) == doctest::Approx(6.3093).epsilon(1e-4));
    CHECK(depth_threshold(4096) == doctest::Approx(7.5711).epsilon(1e-4));
    CHECK(depth_threshold(12288) == doctest::Approx(8.5712).epsilon(1e-4));
    CHECK(regime(6, 768) == Regime::depth_efficient);
    CHECK(regime(7, 768) == Regime::width_limited);
    CHECK(regime(3, 27) == Regime::threshold);
    CHECK_THROWS_AS(depth_threshold(0.5), ternion::OptionError);
}

TEST_CASE("fact 2: a linear attention layer is a homogeneous cubic; L layers scale by c^(3^L)") {
    Eigen::MatrixXd X(3, 4);
    X << 0.3, -0.2, 0.5, 0.1, -0.4, 0.6, 0.2, -0.1, 0.05, 0.3, -0.3, 0.2;
    const double c = 1.7;
    for (int L = 1; L <= 2; ++L) {
        const auto layers = random_linear_layers(L, 4, 11 + L);
        const auto y = linear_attention(X, layers), yc = linear_attention(c * X, layers);
        const double k = std::pow(c, std::pow(3, L));
        CHECK((yc - k * y).norm() <= 1e-10 * (k * y).norm());
        CHECK(y.norm() > 0);
    }
}

TEST_CASE("fact 3: the monomial count matches 3^L ln d when shallow and L d ln 3 when deep") {
    // Exact small cases: C(4, 2) = 6 monomials of degree 2 in 3 variables; C(12, 2) = 66.
    CHECK(log_monomials(2, 3) == doctest::Approx(std::log(6.0)).epsilon(1e-12));
    CHECK(log_monomials(10, 3) == doctest::Approx(std::log(66.0)).epsilon(1e-12));
    // Stirling branch against lgamma where lgamma is still accurate.
    CHECK(
        log_monomials(40, 60) ==
        doctest::Approx(std::lgamma(100.0) - std::lgamma(41.0) - std::lgamma(60.0)).epsilon(1e-9));
    // Shallow (L << log3 d): ratio to 3^L ln d tends to 1 from below as d grows.
    double prev = 0;
    for (double d : {std::pow(3.0, 10), std::pow(3.0, 20), std::pow(3.0, 30)}) {
        const double r = log_monomials(3, d) / (3 * std::log(d));
        CHECK(r < 1);
        CHECK(r > prev);
        prev = r;
    }
    CHECK(prev > 0.98);
    // Deep (L >> log3 d): ratio to L d ln 3 tends to (d - 1)/d, i.e. to 1 for large d.
    prev = 0;
    for (int L : {50, 100, 200, 400}) {
        const double r = log_monomials(std::pow(3.0, L), 100) / (L * 100 * std::log(3.0));
        CHECK(r > prev);
        CHECK(r < 0.99);
        prev = r;
    }
    CHECK(prev > 0.975);
}

TEST_CASE("fact 4: the separation rank of a 2-token linear attention net grows with depth") {
    // Degree 3^L in token 0's d = 2 coordinates bounds the rank by C(3^L + 2, 2): 10 for L = 1.
    const int r1 = separation_rank(random_linear_layers(1, 2, 5), 40, 9);
    const int r2 = separation_rank(random_linear_layers(2, 2, 5), 80, 9);
    CHECK(r1 >= 2);
    CHECK(r1 <= 10);
    CHECK(r2 > r1);
    CHECK(r2 <= 55);
    MESSAGE("separation ranks: L=1 ", r1, ", L=2 ", r2);
}

TEST_CASE("fact 5: the budget scan is monotone and finds the depth-efficiency crossover") {
    const double P = 85e6;  // roughly BERT-base without embeddings: 12 * 12 * 768^2
    const auto scan = budget_scan(P, 64);
    REQUIRE(scan.size() == 64);
    CHECK(scan[11].width == doctest::Approx(std::sqrt(P / 144)).epsilon(1e-12));
    for (std::size_t i = 1; i < scan.size(); ++i) {
        CHECK(scan[i].width < scan[i - 1].width);
        CHECK(scan[i].params == doctest::Approx(P).epsilon(1e-12));
    }
    // L = 6: d = 1086.5, log3 d = 6.36 (efficient); L = 7: d = 1005.9, log3 d = 6.29 (not).
    CHECK(budget_crossover(scan) == 7);
    CHECK(scan[5].regime == Regime::depth_efficient);
    CHECK(scan[6].regime == Regime::width_limited);
    // A tiny budget stops where the width would drop below 1.
    CHECK(budget_scan(12 * 10, 64).size() == 10);
    CHECK_THROWS_AS(budget_scan(1, 10), ternion::OptionError);
}

TEST_CASE("width scan: proxies switch form at the threshold") {
    const auto rows = width_scan(81, 6);  // L_th = 4
    CHECK(rows[2].regime == Regime::depth_efficient);
    CHECK(rows[2].log_sep == doctest::Approx(27 * std::log(81.0)));
    CHECK(rows[3].regime == Regime::threshold);
    CHECK(rows[4].regime == Regime::width_limited);
    CHECK(rows[4].log_sep == doctest::Approx(5 * 81 * std::log(3.0)));
}
