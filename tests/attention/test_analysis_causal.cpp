// ABCD causal reading of attention maps: the facts of docs/analysis.md and hand-built chains.
#include <doctest/doctest.h>

#include <cmath>
#include <initializer_list>
#include <tuple>
#include <vector>

#include "attention/analysis/analysis_causal.hpp"

using namespace ternion::analysis;

namespace {

Eigen::MatrixXd sem_mixing(const Eigen::MatrixXd& G) {
    const auto n = G.rows();
    return (Eigen::MatrixXd::Identity(n, n) - G).inverse();
}

Eigen::MatrixXd row_normalised(Eigen::MatrixXd A) {
    for (Eigen::Index i = 0; i < A.rows(); ++i) A.row(i) /= A.row(i).sum();
    return A;
}

FisherZTest tester(const Eigen::MatrixXd& A, std::int64_t n = 768, double alpha = 0.01) {
    return FisherZTest{correlation(attention_covariance(A)), n, alpha};
}

// The testers of an n-node linear SEM with weights G(i, j) = w for each {i, j, w} of `edges`:
// on its mixing matrix as is and row-normalised.
std::vector<FisherZTest> sem_testers(int n,
                                     std::initializer_list<std::tuple<int, int, double>> edges) {
    Eigen::MatrixXd G = Eigen::MatrixXd::Zero(n, n);
    for (const auto& [i, j, w] : edges) G(i, j) = w;
    return {tester(sem_mixing(G)), tester(row_normalised(sem_mixing(G)))};
}

std::vector<std::string> names(int n) {
    std::vector<std::string> v;
    for (int i = 0; i < n; ++i) v.push_back(std::to_string(i));
    return v;
}

}  // namespace

TEST_CASE("fact 1: C = A A^T is symmetric PSD, R has a unit diagonal and entries in [-1, 1]") {
    Eigen::MatrixXd A(4, 4);
    A << 0.7, 0.1, 0.1, 0.1, 0.2, 0.5, 0.3, 0.0, 0.0, 0.0, 0.4, 0.6, 0.25, 0.25, 0.25, 0.25;
    const auto C = attention_covariance(A);
    CHECK((C - C.transpose()).cwiseAbs().maxCoeff() == 0.0);
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(C);
    CHECK(es.eigenvalues().minCoeff() >= -1e-12);
    const auto R = correlation(C);
    for (int i = 0; i < 4; ++i) {
        CHECK(R(i, i) == 1.0);
        for (int j = 0; j < 4; ++j) CHECK(std::fabs(R(i, j)) <= 1.0);
    }
    // Hand value: C01 = .7*.2 + .1*.5 + .1*.3 = .22; C00 = .52, C11 = .38.
    CHECK(R(0, 1) == doctest::Approx(0.22 / std::sqrt(0.52 * 0.38)).epsilon(1e-12));
}

TEST_CASE("fact 2: A = I gives R = I and a graph without edges") {
    const Eigen::MatrixXd A = Eigen::MatrixXd::Identity(5, 5);
    const auto t = tester(A);
    CHECK((t.R - Eigen::MatrixXd::Identity(5, 5)).cwiseAbs().maxCoeff() == 0.0);
    const auto g = pc_search(t, 5);
    for (int i = 0; i < 5; ++i) CHECK(g.neighbours(i).empty());
    CHECK(g.tests == 10);  // only the order-0 tests
}

TEST_CASE("fact 3: identical rows are perfectly correlated and always dependent") {
    Eigen::MatrixXd A(3, 3);
    A << 0.5, 0.3, 0.2, 0.5, 0.3, 0.2, 0.1, 0.1, 0.8;
    const auto t = tester(A);
    CHECK(t.R(0, 1) == doctest::Approx(1.0).epsilon(1e-12));
    CHECK(t.pvalue(0, 1, {}) == 0.0);
    CHECK(t.pvalue(0, 1, {2}) == 0.0);
    CHECK(pc_search(t, 3).adjacent(0, 1));
    // Uniform attention: every row identical, every pair dependent, a complete skeleton.
    const auto g = pc_search(tester(Eigen::MatrixXd::Constant(4, 4, 0.25)), 4);
    for (int i = 0; i < 4; ++i) CHECK(g.neighbours(i).size() == 3);
}

TEST_CASE("fact 4: the |Z| = 1 closed form equals the precision-matrix formula") {
    Eigen::MatrixXd A(4, 5);
    A << 0.4, 0.1, 0.2, 0.2, 0.1, 0.3, 0.3, 0.1, 0.2, 0.1, 0.1, 0.2, 0.5, 0.1, 0.1, 0.05, 0.15, 0.2,
        0.3, 0.3;
    const auto R = correlation(attention_covariance(A));
    for (auto [x, y, z] : {std::tuple{0, 1, 2}, std::tuple{0, 3, 1}, std::tuple{2, 3, 0}}) {
        Eigen::Matrix3d S;
        const int idx[3] = {x, y, z};
        for (int a = 0; a < 3; ++a)
            for (int b = 0; b < 3; ++b) S(a, b) = R(idx[a], idx[b]);
        const Eigen::Matrix3d P = -S.inverse();
        const double via_inverse = P(0, 1) / std::sqrt(std::fabs(P(0, 0) * P(1, 1)));
        CHECK(std::fabs(partial_correlation(R, x, y, {z}) - via_inverse) < 1e-10);
    }
    // |Z| = 2 (residual form) against the 4x4 precision matrix.
    Eigen::Matrix4d P = -R.inverse();
    const double via_inverse = P(0, 1) / std::sqrt(std::fabs(P(0, 0) * P(1, 1)));
    CHECK(std::fabs(partial_correlation(R, 0, 1, {2, 3}) - via_inverse) < 1e-10);
}

TEST_CASE("fact 5: Fisher-z with n = 768, rho = 0.1, no conditioning") {
    // z = atanh(0.1) = 0.10034; sqrt(765) z = 2.7753; p = 2 (1 - Phi(2.7753)) = 0.005518.
    const double p = fisher_z_pvalue(0.1, 768, 0);
    CHECK(p == doctest::Approx(0.005518).epsilon(1e-3));
    CHECK(p < 0.01);
    CHECK(fisher_z_pvalue(0.0, 768, 0) == 1.0);
    CHECK(fisher_z_pvalue(1.0, 768, 0) == 0.0);
    CHECK(fisher_z_pvalue(0.5, 3, 0) == 0.0);  // no degrees of freedom left: dependent
}

TEST_CASE("fact 6: with rho fixed, more records lower the p-value monotonically") {
    double prev = 1.0;
    for (std::int64_t n : {10, 20, 50, 100, 200, 400, 768, 1500}) {
        const double p = fisher_z_pvalue(0.1, n, 1);
        CHECK(p < prev);
        prev = p;
    }
}

TEST_CASE("fact 7: chain 0 -> 1 -> 2 keeps 0 - 1 - 2, drops 0 - 2, orients nothing") {
    for (const auto& t : sem_testers(3, {{1, 0, 0.8}, {2, 1, 0.9}})) {
        CHECK(std::fabs(partial_correlation(t.R, 0, 2, {1})) < 1e-12);
        CHECK(std::fabs(t.R(0, 2)) > 0.3);  // marginally dependent
        const auto g = pc_search(t, 3);
        CHECK(g.adjacent(0, 1));
        CHECK(g.adjacent(1, 2));
        CHECK_FALSE(g.adjacent(0, 2));
        CHECK(g.sepset[0 * 3 + 2] == std::vector<int>{1});
        CHECK(g.undirected(0, 1));  // a chain is Markov equivalent to its reversal
        CHECK(g.undirected(1, 2));
        CHECK(g.edge_strings(names(3)) == std::vector<std::string>{"0 --- 1", "1 --- 2"});
    }
}

TEST_CASE("fact 8: collider 0 -> 2 <- 1 comes out as a v-structure") {
    for (const auto& t : sem_testers(3, {{2, 0, 0.7}, {2, 1, 0.6}})) {
        CHECK(std::fabs(t.R(0, 1)) < 1e-12);                          // marginally independent
        CHECK(std::fabs(partial_correlation(t.R, 0, 1, {2})) > 0.2);  // dependent given 2
        const auto g = pc_search(t, 3);
        CHECK_FALSE(g.adjacent(0, 1));
        CHECK(g.directed(0, 2));
        CHECK(g.directed(1, 2));
        CHECK(g.edge_strings(names(3)) == std::vector<std::string>{"0 --> 2", "1 --> 2"});
        const auto dot = to_dot(g, names(3), "head 0");
        CHECK(dot.find("\"0\" -> \"2\";") != std::string::npos);
        CHECK(dot.find("\"1\" -> \"2\";") != std::string::npos);
    }
}

TEST_CASE("Meek R1: collider 0 -> 2 <- 1 with 2 -> 3 orients the tail edge away") {
    Eigen::MatrixXd G = Eigen::MatrixXd::Zero(4, 4);
    G(2, 0) = 0.7;
    G(2, 1) = 0.6;
    G(3, 2) = 0.8;
    const auto g = pc_search(tester(sem_mixing(G)), 4);
    CHECK(g.directed(0, 2));
    CHECK(g.directed(1, 2));
    CHECK(g.directed(2, 3));
    CHECK_FALSE(g.adjacent(0, 3));
    CHECK_FALSE(g.adjacent(1, 3));
    CHECK(g.sepset[0 * 4 + 3] == std::vector<int>{2});
}

TEST_CASE("records matter: n = 5 loses the true 0 - 1 edge; order 0 alone keeps 0 - 2") {
    Eigen::MatrixXd G = Eigen::MatrixXd::Zero(3, 3);
    G(1, 0) = 0.8;
    G(2, 1) = 0.9;
    // R01 = 0.8 / sqrt(1.64) = 0.625; n = 5: sqrt(2) atanh(0.625) = 1.037, p = 0.300 > 0.01.
    const auto t5 = tester(sem_mixing(G), 5);
    CHECK(t5.pvalue(0, 1, {}) == doctest::Approx(0.3001).epsilon(1e-3));
    CHECK_FALSE(pc_search(t5, 3).adjacent(0, 1));
    const auto g0 = pc_search(tester(sem_mixing(G), 768), 3, PcOptions{0});
    CHECK(g0.adjacent(0, 2));  // without order-1 tests the chain's ends stay linked
    CHECK(g0.max_order == 0);
}

TEST_CASE("an all-zero attention row is degenerate and isolated") {
    Eigen::MatrixXd A(3, 3);
    A << 0.5, 0.5, 0.0, 0.0, 0.0, 0.0, 0.4, 0.6, 0.0;
    std::vector<int> deg;
    const auto R = correlation(attention_covariance(A), &deg);
    CHECK(deg == std::vector<int>{1});
    CHECK(R(0, 1) == 0.0);
    CHECK(R(1, 1) == 1.0);
}
