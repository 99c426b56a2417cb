// gemm_packed against a plain triple loop that sums in the same order (ascending k, fused
// multiply-adds, then the bias): equal bit for bit, over shapes that exercise every kernel
// (full 64-column panels, 48-, 32- and 16-column tails, the 12-row tall tails, leftover rows),
// leading dimensions wider than the matrices, outputs large enough for streaming stores, and
// column-group layouts (CAT's V) on either side, and the projections that use them.
#include <doctest/doctest.h>

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "attention/ann/ann_gemm.hpp"
#include "attention/ann/ann_internal.hpp"
#include "attention/ann/ann_levels.hpp"

namespace ternion::ann::v2 {
const LevelKernels& kernels();  // the baseline level's, for the comparison below
}

using namespace ternion::ann;

namespace {

// Runs one product into a C prefilled with 99 and counts results that differ from the loop and
// padding entries of C that changed.
template <class CVec>
void check_gemm(std::int64_t m, std::int64_t k, std::int64_t n, std::int64_t lda, std::int64_t ldb,
                std::int64_t ldc, bool with_bias, std::mt19937& rng) {
    CAPTURE(m);
    CAPTURE(k);
    CAPTURE(n);
    CAPTURE(ldc);
    CAPTURE(with_bias);
    std::uniform_real_distribution<float> U(-1.0f, 1.0f);
    std::vector<float> A(static_cast<std::size_t>(m * lda)), B(static_cast<std::size_t>(k * ldb)),
        bias(static_cast<std::size_t>(n));
    for (auto& x : A) x = U(rng);
    for (auto& x : B) x = U(rng);
    for (auto& x : bias) x = U(rng);
    PackedMatrix P(B.data(), ldb, k, n);
    CVec C(static_cast<std::size_t>(m * ldc), 99.0f);
    gemm_packed(A.data(), lda, m, P, with_bias ? bias.data() : nullptr, C.data(), ldc);
    std::int64_t diffs = 0, clobbered = 0;
    for (std::int64_t i = 0; i < m; ++i) {
        for (std::int64_t j = 0; j < n; ++j) {
            float s = 0.0f;
            for (std::int64_t p = 0; p < k; ++p)
                s = std::fma(A[static_cast<std::size_t>(i * lda + p)],
                             B[static_cast<std::size_t>(p * ldb + j)], s);
            if (with_bias) s += bias[static_cast<std::size_t>(j)];
            const float got = C[static_cast<std::size_t>(i * ldc + j)];
            diffs += std::memcmp(&s, &got, 4) != 0;
        }
        for (std::int64_t j = n; j < ldc; ++j)  // padding of C left alone
            clobbered += C[static_cast<std::size_t>(i * ldc + j)] != 99.0f;
    }
    CHECK(diffs == 0);
    CHECK(clobbered == 0);
}

// The same with A and C in the given layouts (row-major {ld, 16} or column groups {16, g}),
// A and C buffers of a_size and c_size floats; every C entry the product does not own must
// keep its 99.
void check_gemm_layout(std::int64_t m, std::int64_t k, std::int64_t n, Layout la,
                       std::size_t a_size, Layout lc, std::size_t c_size, std::mt19937& rng) {
    CAPTURE(m);
    CAPTURE(k);
    CAPTURE(n);
    CAPTURE(la.row);
    CAPTURE(lc.row);
    std::uniform_real_distribution<float> U(-1.0f, 1.0f);
    using Aligned = std::vector<float, Eigen::aligned_allocator<float>>;
    Aligned A(a_size), C(c_size, 99.0f);
    std::vector<float> B(static_cast<std::size_t>(k * n)), bias(static_cast<std::size_t>(n));
    for (auto& x : A) x = U(rng);
    for (auto& x : B) x = U(rng);
    for (auto& x : bias) x = U(rng);
    PackedMatrix P(B.data(), n, k, n);
    gemm_packed(A.data(), la, m, P, bias.data(), C.data(), lc);
    std::int64_t diffs = 0;
    std::vector<char> owned(c_size, 0);
    for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
            float s = 0.0f;
            for (std::int64_t p = 0; p < k; ++p)
                s = std::fma(A[static_cast<std::size_t>(la.at(i, p))],
                             B[static_cast<std::size_t>(p * n + j)], s);
            s += bias[static_cast<std::size_t>(j)];
            const auto at = static_cast<std::size_t>(lc.at(i, j));
            owned[at] = 1;
            diffs += std::memcmp(&s, &C[at], 4) != 0;
        }
    std::int64_t clobbered = 0;
    for (std::size_t e = 0; e < c_size; ++e) clobbered += !owned[e] && C[e] != 99.0f;
    CHECK(diffs == 0);
    CHECK(clobbered == 0);
}

}  // namespace

TEST_CASE("gemm_packed equals the ascending-k loop bit for bit") {
    // Without AVX-512 this checks the portable path (which projections then leave to Eigen).
    std::mt19937 rng(3);
    const std::int64_t shapes[][3] = {{1, 1, 1},     {5, 7, 16},    {13, 9, 32},  {25, 33, 48},
                                      {6, 64, 64},   {40, 17, 80},  {29, 5, 528}, {12, 3, 520},
                                      {7, 130, 200}, {30, 40, 136}, {26, 11, 5},  {7, 20, 67}};
    for (const auto& sh : shapes)
        for (bool with_bias : {false, true})
            check_gemm<std::vector<float>>(sh[0], sh[1], sh[2], sh[1] + 3, sh[2] + 5, sh[2] + 7,
                                           with_bias, rng);
}

TEST_CASE("gemm_packed with streaming stores (C of 8 MB or more, aligned rows)") {
    // CAT's [N, D + pad] outputs at large N: whole 64-byte lines go out as streaming stores,
    // partial ones (the 16-column tail here, 8 of them real) as ordinary masked stores.
    std::mt19937 rng(4);
    using Aligned = std::vector<float, Eigen::aligned_allocator<float>>;
    for (std::int64_t n : {64, 72, 48}) check_gemm<Aligned>(33000, 5, n, 7, n, 80, true, rng);
}

TEST_CASE("gemm_packed reads and writes column groups of 16 (CAT's V)") {
    // k not a multiple of 16 (a partial last group of A), n with 48- and 16-column tails (a
    // partial last group of C), group strides of exactly m rows and wider, and a C large
    // enough for streaming stores into groups.
    std::mt19937 rng(5);
    const std::int64_t shapes[][3] = {{13, 40, 48}, {29, 33, 72}, {12, 64, 528}, {7, 16, 16}};
    for (const auto& sh : shapes) {
        const std::int64_t m = sh[0], k = sh[1], n = sh[2];
        for (std::int64_t extra : {0, 3}) {
            const std::int64_t ga = (m + extra) * 16, gc = (m + extra) * 16;
            const auto a_groups = static_cast<std::size_t>((k + 15) / 16 * ga);
            const auto c_groups = static_cast<std::size_t>((n + 15) / 16 * gc);
            const auto a_rows = static_cast<std::size_t>(m * (k + 5));
            const auto c_rows = static_cast<std::size_t>(m * (n + 7));
            // groups -> rows, rows -> groups, groups -> groups
            check_gemm_layout(m, k, n, Layout{16, ga}, a_groups, Layout::rows(n + 7), c_rows, rng);
            check_gemm_layout(m, k, n, Layout::rows(k + 5), a_rows, Layout{16, gc}, c_groups, rng);
            check_gemm_layout(m, k, n, Layout{16, ga}, a_groups, Layout{16, gc}, c_groups, rng);
        }
    }
    const std::int64_t m = 33000, k = 5, n = 72;  // 9.5 MB of C: streaming stores
    check_gemm_layout(m, k, n, Layout::rows(k), static_cast<std::size_t>(m * k), Layout{16, m * 16},
                      static_cast<std::size_t>(5 * m * 16), rng);
}

TEST_CASE("projections into and out of column groups, packed and through Eigen") {
    // CAT's V path: x W + b written into a GroupMatrix and read back as the next product's A.
    // Linear without `packed` takes the Eigen fallback (the path of machines without AVX-512),
    // so both are checked against a product written out here.
    std::mt19937 rng(6);
    std::uniform_real_distribution<float> U(-1.0f, 1.0f);
    const std::int64_t n = 37, din = 40, dmid = 24, dout = 20;
    MatR x(n, din);
    for (std::int64_t i = 0; i < x.size(); ++i) x.data()[i] = U(rng);
    Linear a, b;
    a.W = MatR::NullaryExpr(din, dmid, [&] { return U(rng); });
    a.b = RowVec::NullaryExpr(dmid, [&] { return U(rng); });
    b.W = MatR::NullaryExpr(dmid, dout, [&] { return U(rng); });
    Eigen::MatrixXd mid = x.cast<double>() * a.W.cast<double>();
    mid.rowwise() += a.b.cast<double>();
    const Eigen::MatrixXd ref = mid * b.W.cast<double>();
    for (bool packed : {false, true}) {
        CAPTURE(packed);
        if (packed) {
            a.pack();
            b.pack();
        }
        for (bool par : {false, true}) {
            GroupMatrix g;
            g.resize(n, dmid);
            CHECK(g.groups() == 2);
            project_to_groups(a, x, g, par);
            double err_mid = 0.0;
            for (std::int64_t i = 0; i < n; ++i)
                for (std::int64_t j = 0; j < dmid; ++j)
                    err_mid = std::max(err_mid, std::abs(g.at(i, j) - mid(i, j)));
            CHECK(err_mid < 1e-4);
            MatR y(n, dout);
            project_from_groups(b, g, y, par);
            CHECK((y.cast<double>() - ref).cwiseAbs().maxCoeff() < 1e-3);
        }
    }
}

TEST_CASE("softmax numerators: exp(x - max) to about an ulp at this level, the same floats as v2") {
    // Rows of several lengths (vector bodies and tails), scores from -120 to 20 below and above
    // the maximum, and -inf (a masked score): each value against exp in double precision of
    // the float difference the kernel forms; below -87.3365 (no normal float) exactly 0.
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> u(-120.0f, 20.0f);
    for (std::int64_t n : {1, 5, 16, 37, 64, 4099}) {
        std::vector<float> x(static_cast<std::size_t>(n));
        for (auto& v : x) v = u(rng);
        if (n > 3) x[2] = -std::numeric_limits<float>::infinity();
        float m = x[0];
        for (float v : x) m = std::max(m, v);
        std::vector<float> y = x, base = x;
        level_kernels().exp_shifted(y.data(), n);
        v2::kernels().exp_shifted(base.data(), n);
        CHECK(std::memcmp(y.data(), base.data(), y.size() * sizeof(float)) == 0);
        double worst = 0;
        for (std::int64_t j = 0; j < n; ++j) {
            const float d = x[static_cast<std::size_t>(j)] - m;
            const float got = y[static_cast<std::size_t>(j)];
            if (d < -87.3365f) {
                CHECK(got == 0.0f);
                continue;
            }
            const double want = std::exp(static_cast<double>(d));
            worst = std::max(worst, std::fabs(got - want) / want);
        }
        CHECK(worst < 2.5e-7);  // 2^-22: about two ulps at most
    }
}
