// FFT interface and CAT (circular-convolutional attention): the FFT route against dense
// circulant products written out here, and the CAT paper's facts C1-C12 (docs/ann-attention.md).
#include <doctest/doctest.h>

#include <Eigen/Dense>
#include <cmath>
#include <complex>
#include <numbers>
#include <random>

#include "attention/ann/ann_attention.hpp"
#include "attention/ann/fft.hpp"
#include "sim/core/error.hpp"
#include "tests/support/ann_values.hpp"

using namespace ternion;
using namespace ternion::ann;
using namespace ternion::test;
using MatD = Eigen::MatrixXd;

namespace {

MatD to_d(const MatR& m) {
    return m.cast<double>();
}

// Roll[i, j] = z[(i - j) mod n]
MatD roll(const Eigen::VectorXd& z) {
    const auto n = z.size();
    MatD R(n, n);
    for (Eigen::Index i = 0; i < n; ++i)
        for (Eigen::Index j = 0; j < n; ++j) R(i, j) = z[((i - j) % n + n) % n];
    return R;
}

Eigen::VectorXd softmax(const Eigen::VectorXd& z) {
    Eigen::VectorXd e = (z.array() - z.maxCoeff()).exp();
    return e / e.sum();
}

// Dense CAT written out: softmax over tokens per head, Roll(z*_h) V_h (or the causal
// lower-triangular Toeplitz with optional row renormalisation), then W_O.
MatD dense_cat(const MatD& x, const MatD& WA, const Eigen::RowVectorXd& bA, const MatD& WV,
               const Eigen::RowVectorXd& bV, const MatD& WO, const Eigen::RowVectorXd& bO,
               bool causal, bool renorm) {
    const auto n = x.rows(), D = x.cols(), H = WA.cols(), c = D / H;
    MatD Z = x * WA;
    Z.rowwise() += bA;
    MatD V = x * WV;
    V.rowwise() += bV;
    MatD M(n, D);
    for (Eigen::Index h = 0; h < H; ++h) {
        Eigen::VectorXd z = softmax(Z.col(h));
        MatD R = roll(z);
        if (causal) {
            R = R.triangularView<Eigen::Lower>();
            if (renorm)
                for (Eigen::Index i = 0; i < n; ++i) R.row(i) /= R.row(i).sum();
        }
        M.middleCols(h * c, c) = R * V.middleCols(h * c, c);
    }
    MatD y = M * WO;
    y.rowwise() += bO;
    return y;
}

struct CatWeights {
    std::int64_t D, H;
    std::vector<float> WA, bA, WV, bV, WO, bO;
    MapWeights w;
    CatWeights(std::int64_t d, std::int64_t h, unsigned seed) : D(d), H(h) {
        WA = randv(D * H, seed, 0.5f);
        bA = randv(H, seed + 1, 0.5f);
        WV = randv(D * D, seed + 2, 0.3f);
        bV = randv(D, seed + 3);
        WO = randv(D * D, seed + 4, 0.3f);
        bO = randv(D, seed + 5);
        sync();
    }
    void sync() {
        w.set("W_A", WA, {D, H});
        w.set("b_A", bA, {H});
        w.set("W_V", WV, {D, D});
        w.set("b_V", bV, {D});
        w.set("W_O", WO, {D, D});
        w.set("b_O", bO, {D});
    }
    MatD dense(const MatD& x, bool causal = false, bool renorm = false) const {
        return dense_cat(x, to_d(mr(WA, D, H)), to_d(mr(bA, 1, H)), to_d(mr(WV, D, D)),
                         to_d(mr(bV, 1, D)), to_d(mr(WO, D, D)), to_d(mr(bO, 1, D)), causal,
                         renorm);
    }
};

MatR run(const Attention& a, const MatR& x, OpCounts* ops = nullptr, bool par = false) {
    MatR y(x.rows(), a.out_dim());
    a.forward(x.data(), nullptr, x.rows(), y.data(), ops, par);
    return y;
}

std::vector<float> identity(std::int64_t D) {
    std::vector<float> v(D * D, 0.0f);
    for (std::int64_t i = 0; i < D; ++i) v[i * D + i] = 1.0f;
    return v;
}

}  // namespace

TEST_CASE("RealFft matches the DFT for any length, primes included") {
    for (std::int64_t n : {1, 2, 3, 4, 5, 6, 7, 12, 17, 97, 196, 256, 1000, 1009}) {
        CAPTURE(n);
        RealFft f(n);
        auto x = randv(n, 7);
        std::vector<cfloat> X(f.spectrum_size());
        f.forward(x.data(), X.data());
        double maxerr = 0, scale = 0;
        for (std::int64_t k = 0; k < f.spectrum_size(); ++k) {
            std::complex<double> s = 0;
            for (std::int64_t j = 0; j < n; ++j)
                s += static_cast<double>(x[j]) *
                     std::polar(1.0, -2.0 * std::numbers::pi * double((j * k) % n) / double(n));
            maxerr = std::max(maxerr, std::abs(s - std::complex<double>(X[k])));
            scale = std::max(scale, std::abs(s));
        }
        CHECK(maxerr <= 2e-5 * std::max(1.0, scale));
        std::vector<float> back(n);
        f.inverse(X.data(), back.data());
        for (std::int64_t j = 0; j < n; ++j)
            CHECK(back[j] / n == doctest::Approx(x[j]).epsilon(1e-4));
    }
    CHECK(next_fast_length(1999) == 2000);
    CHECK(next_fast_length(2047) == 2048);
    CHECK(next_fast_length(1) == 1);
}

TEST_CASE("C3: FFT route equals the dense circulant product, Roll[i,j] = z[(i-j) mod N]") {
    for (std::int64_t n : {1, 2, 3, 7, 196, 256, 1000}) {
        CAPTURE(n);
        const std::int64_t c = 3;
        auto zr = randv(n, 11);
        Eigen::VectorXd z = softmax(Eigen::Map<Eigen::VectorXf>(zr.data(), n).cast<double>());
        Eigen::VectorXf zf = z.cast<float>();
        auto v = randv(n * c, 12);  // column-major [n, c]
        std::vector<float> y(n * c);
        circular_convolve(zf.data(), v.data(), y.data(), n, c);
        MatD V = Eigen::Map<Eigen::MatrixXf>(v.data(), n, c).cast<double>();
        MatD ref = roll(zf.cast<double>()) * V;
        const double vinf = V.cwiseAbs().maxCoeff();
        const double err = (Eigen::Map<Eigen::MatrixXf>(y.data(), n, c).cast<double>() - ref)
                               .cwiseAbs()
                               .maxCoeff();
        CHECK(err < 1e-5 * vinf);
    }
}

TEST_CASE("ChannelConvolver (power-of-two batched kernel) equals the dense products") {
    // Lengths with an odd and an even number of radix-4 stages; channel counts that leave
    // lanes empty in the real half, the imaginary half, and a second pass of 16.
    for (std::int64_t n : {2, 4, 8, 32, 512, 4096}) {
        for (std::int64_t c : {1, 8, 9, 19, 64}) {
            CAPTURE(n);
            CAPTURE(c);
            REQUIRE(ChannelConvolver::supports(n));
            auto zr = randv(n, 31);
            Eigen::VectorXf zf =
                softmax(Eigen::Map<Eigen::VectorXf>(zr.data(), n).cast<double>()).cast<float>();
            auto v = randv(n * c, 32);
            MatD V = Eigen::Map<Eigen::MatrixXf>(v.data(), n, c).cast<double>();
            const double vinf = V.cwiseAbs().maxCoeff();
            std::vector<float> y(n * c);
            circular_convolve(zf.data(), v.data(), y.data(), n, c);
            // Dense reference through the convolution sum (an n x n matrix is too big at 4096).
            MatD ref(n, c);
            const Eigen::VectorXd zd = zf.cast<double>();
            if (n <= 512) {
                ref = roll(zd) * V;
            } else {
                for (std::int64_t i = 0; i < n; i += 97)  // a sample of the rows
                    for (std::int64_t ch = 0; ch < c; ++ch) {
                        double acc = 0.0;
                        for (std::int64_t j = 0; j < n; ++j)
                            acc += zd[((i - j) % n + n) % n] * V(j, ch);
                        ref(i, ch) = acc;
                    }
            }
            double err = 0.0;
            for (std::int64_t i = 0; i < n; i += n <= 512 ? 1 : 97)
                for (std::int64_t ch = 0; ch < c; ++ch)
                    err = std::max(err, std::abs(double(y[ch * n + i]) - ref(i, ch)));
            CHECK(err < 1e-5 * vinf);
        }
    }
    // Linear (zero-padded) convolution at a power-of-two padded length: n = 64 pads to 128.
    const std::int64_t n = 64, c = 21;
    CHECK(causal_fft_length(n) == 128);
    auto zr = randv(n, 33);
    Eigen::VectorXf z =
        softmax(Eigen::Map<Eigen::VectorXf>(zr.data(), n).cast<double>()).cast<float>();
    auto v = randv(n * c, 34);
    std::vector<float> y(n * c);
    causal_convolve(z.data(), v.data(), y.data(), n, c);
    MatD T = roll(z.cast<double>()).triangularView<Eigen::Lower>();
    MatD ref = T * Eigen::Map<Eigen::MatrixXf>(v.data(), n, c).cast<double>();
    CHECK((Eigen::Map<Eigen::MatrixXf>(y.data(), n, c).cast<double>() - ref).cwiseAbs().maxCoeff() <
          1e-5);
}

TEST_CASE("ChannelConvolver: row-major storage gives the column-major results") {
    // convolve_rows reads sample j of channel c at v[j * ld + c]: the CAT forward pass uses it
    // on the row-major V. Same arithmetic, so the results agree exactly; columns outside the
    // channel range are left alone, with aligned and unaligned row strides.
    for (std::int64_t n : {2, 8, 32, 4096})
        for (bool aligned_rows : {false, true}) {
            for (std::int64_t c : {1, 8, 9, 19, 64}) {
                CAPTURE(n);
                CAPTURE(c);
                CAPTURE(aligned_rows);
                const std::int64_t ld = aligned_rows ? (c + 15) / 16 * 16 + 16 : c + 3;
                auto zr = randv(n, 41);
                Eigen::VectorXf z =
                    softmax(Eigen::Map<Eigen::VectorXf>(zr.data(), n).cast<double>()).cast<float>();
                RealFft plan(n);
                std::vector<cfloat> zf(static_cast<std::size_t>(plan.spectrum_size()));
                plan.forward(z.data(), zf.data());
                for (auto& s : zf) s /= static_cast<float>(n);
                auto vr = randv(n * ld, 42);
                std::vector<float> vc(n * c), yc(n * c);
                // Eigen's allocator aligns to its vector width (32 bytes or more with AVX).
                std::vector<float, Eigen::aligned_allocator<float>> yr(n * ld, -7.0f);
                for (std::int64_t j = 0; j < n; ++j)
                    for (std::int64_t ch = 0; ch < c; ++ch) vc[ch * n + j] = vr[j * ld + ch];
                ChannelConvolver conv(n);
                conv.convolve(zf.data(), vc.data(), yc.data(), n, c);
                conv.convolve_rows(zf.data(), vr.data(), yr.data(), ld, n, c);
                bool same = true, untouched = true;
                for (std::int64_t j = 0; j < n; ++j) {
                    for (std::int64_t ch = 0; ch < c; ++ch)
                        same &= yr[j * ld + ch] == yc[ch * n + j];
                    for (std::int64_t ch = c; ch < ld; ++ch) untouched &= yr[j * ld + ch] == -7.0f;
                }
                CHECK(same);
                CHECK(untouched);
            }
        }
}

TEST_CASE("ChannelConvolver: a column group in place gives the row-major results") {
    // convolve_group transforms 16 channels stored [n][16] where they lie (n == L, aligned) or
    // through the kernel's buffer (n < L, the causal padding; or unaligned): the same butterflies
    // as convolve_rows with ld = 16, so the results agree bit for bit, and convolve_rows itself
    // is checked against the dense product above.
    for (std::int64_t L : {2, 4, 16, 64, 256, 4096}) {
        for (std::int64_t n : {L, L / 2 + 1}) {
            for (std::int64_t offset : {0, 4}) {  // 4 floats: 16 bytes, not 32-byte aligned
                CAPTURE(L);
                CAPTURE(n);
                CAPTURE(offset);
                auto zr = randv(n, 43);
                Eigen::VectorXf z =
                    softmax(Eigen::Map<Eigen::VectorXf>(zr.data(), n).cast<double>()).cast<float>();
                RealFft plan(L);
                std::vector<float> zp(static_cast<std::size_t>(L), 0.0f);
                std::copy(z.data(), z.data() + n, zp.begin());
                std::vector<cfloat> zf(static_cast<std::size_t>(plan.spectrum_size()));
                plan.forward(zp.data(), zf.data());
                for (auto& s : zf) s /= static_cast<float>(L);
                auto v = randv(n * 16, 44);
                std::vector<float, Eigen::aligned_allocator<float>> g(n * 16 + 8, -7.0f);
                std::copy(v.begin(), v.end(), g.begin() + offset);
                std::vector<float> ref(n * 16);
                ChannelConvolver conv(L);
                conv.convolve_rows(zf.data(), v.data(), ref.data(), 16, n, 16);
                conv.set_kernel(zf.data());
                conv.convolve_group(g.data() + offset, n);
                bool same = true;
                for (std::int64_t e = 0; e < n * 16; ++e) same &= g[offset + e] == ref[e];
                CHECK(same);
                CHECK(g[offset + n * 16] == -7.0f);  // nothing written past the group
                if (offset) CHECK(g[0] == -7.0f);
            }
        }
    }
    ChannelConvolver conv(8);
    std::vector<float> g(16 * 9);
    CHECK_THROWS_AS(conv.convolve_group(g.data(), 9), std::invalid_argument);
}

TEST_CASE("CAT over column groups: heads filling groups, sharing them, and spanning them") {
    // V is stored as column groups of 16 channels. Heads of 16 channels are a group each (mixed
    // in place), heads of 32 span two, heads of 20 share groups with their neighbours (mixed
    // lane by lane); power-of-two N uses the batched kernel, N = 50 the per-channel FFT. Each
    // against the dense computation, and threads do not change a single bit.
    const std::int64_t cases[][2] = {{48, 3}, {64, 2}, {40, 2}};
    for (const auto& dh : cases) {
        for (std::int64_t n : {64, 50}) {
            for (const char* kind : {"cat", "cat-causal"}) {
                const std::int64_t D = dh[0], H = dh[1];
                CAPTURE(D);
                CAPTURE(H);
                CAPTURE(n);
                const std::string kind_name = kind;
                CAPTURE(kind_name);
                CatWeights cw(D, H, 71);
                // Scores close to uniform: renormalisation divides row i by the prefix mass of
                // z*, which amplifies the FFT's rounding by 1 / mass (docs/ann-attention.md).
                for (auto& v : cw.WA) v *= 0.1f;
                cw.sync();
                Options o;
                o.renormalize = true;
                auto a = make_attention(kind, cw.w, o);
                MatR x = mr(randv(n * D, 72), n, D);
                MatR y = run(*a, x);
                const bool causal = std::string(kind) == "cat-causal";
                MatD ref = cw.dense(to_d(x), causal, causal);
                CHECK((to_d(y) - ref).cwiseAbs().maxCoeff() <
                      1e-4 * (1.0 + ref.cwiseAbs().maxCoeff()));
                MatR yp = run(*a, x, nullptr, true);
                CHECK((yp.array() == y.array()).all());
            }
        }
    }
}

TEST_CASE("C4: cross-correlation convention is the transpose, via conj(FFT(z))") {
    const std::int64_t n = 12;
    auto zr = randv(n, 3);
    Eigen::VectorXd z = softmax(Eigen::Map<Eigen::VectorXf>(zr.data(), n).cast<double>());
    auto v = randv(n, 4);
    MatD R = roll(z), Rp(n, n);
    for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t j = 0; j < n; ++j) Rp(i, j) = z[((j - i) % n + n) % n];
    CHECK((Rp - R.transpose()).cwiseAbs().maxCoeff() == 0.0);
    RealFft f(n);
    Eigen::VectorXf zf = z.cast<float>();
    std::vector<cfloat> Z(f.spectrum_size()), V(f.spectrum_size());
    f.forward(zf.data(), Z.data());
    f.forward(v.data(), V.data());
    for (std::size_t k = 0; k < Z.size(); ++k) V[k] *= std::conj(Z[k]) / float(n);
    std::vector<float> y(n);
    f.inverse(V.data(), y.data());
    Eigen::VectorXd ref = Rp * Eigen::Map<Eigen::VectorXf>(v.data(), n).cast<double>();
    for (std::int64_t i = 0; i < n; ++i) CHECK(y[i] == doctest::Approx(ref[i]).epsilon(1e-5));
}

TEST_CASE("CAT forward equals the dense circulant computation (incl. prime N)") {
    for (std::int64_t n : {1, 7, 64, 97}) {
        CAPTURE(n);
        CatWeights cw(16, 4, 21);
        auto a = make_attention("cat", cw.w);
        CHECK(a->heads() == 4);
        MatR x = mr(randv(n * 16, 5), n, 16);
        MatR y = run(*a, x);
        MatD ref = cw.dense(to_d(x));
        CHECK((to_d(y) - ref).cwiseAbs().maxCoeff() < 1e-4 * (1.0 + ref.cwiseAbs().maxCoeff()));
        MatR yp = run(*a, x, nullptr, true);
        CHECK((yp.array() == y.array()).all());  // threads do not change results
    }
}

TEST_CASE("C1/C2: the CAT weight matrix is Roll(softmax(z)), doubly stochastic") {
    // With W_V = W_O = I and x = I (D = N), the CAT output is the mixing matrix itself.
    const std::int64_t n = 8;
    CatWeights cw(n, 1, 31);
    cw.WV = identity(n);
    cw.WO = identity(n);
    cw.bV.assign(n, 0.0f);
    cw.bO.assign(n, 0.0f);
    cw.sync();
    auto a = make_attention("cat", cw.w);
    MatR x = MatR::Identity(n, n);
    MatD Y = to_d(run(*a, x));
    Eigen::VectorXd z = (to_d(x) * to_d(mr(cw.WA, n, 1))).col(0).array() + double(cw.bA[0]);
    MatD R = roll(softmax(z));
    CHECK((Y - R).cwiseAbs().maxCoeff() < 1e-6);
    for (std::int64_t i = 0; i < n; ++i) {
        CHECK(Y.row(i).sum() == doctest::Approx(1.0).epsilon(1e-6));
        CHECK(Y.col(i).sum() == doctest::Approx(1.0).epsilon(1e-6));
        CHECK(Y.row(i).minCoeff() >= -1e-7);
    }
    // C2: row-wise softmax of Roll(z) equals Roll(softmax(z)) exactly.
    MatD Rz = roll(z), S(n, n);
    for (std::int64_t i = 0; i < n; ++i) S.row(i) = softmax(Rz.row(i).transpose()).transpose();
    CHECK((S - R).cwiseAbs().maxCoeff() < 1e-15);
}

TEST_CASE("C5: uniform scores give the token mean of V; C6: one-hot scores shift V") {
    const std::int64_t n = 9, D = 4;
    CatWeights cw(D, 1, 41);
    cw.WO = identity(D);
    cw.bO.assign(D, 0.0f);
    std::fill(cw.WA.begin(), cw.WA.end(), 0.0f);
    cw.bA.assign(1, 0.0f);
    cw.sync();
    MatR x = mr(randv(n * D, 6), n, D);
    MatD V = to_d(x) * to_d(mr(cw.WV, D, D));
    V.rowwise() += to_d(mr(cw.bV, 1, D)).row(0);
    {
        auto a = make_attention("cat", cw.w);
        MatD Y = to_d(run(*a, x));
        for (std::int64_t i = 0; i < n; ++i)
            CHECK((Y.row(i) - V.colwise().mean()).cwiseAbs().maxCoeff() < 1e-5);
    }
    // C6: channel 0 of x marks token k; W_A reads it with a large gain: z* = e_k.
    const std::int64_t k = 3;
    for (std::int64_t i = 0; i < n; ++i) x(i, 0) = i == k ? 1.0f : 0.0f;
    cw.WA[0] = 200.0f;  // W_A[0, 0]
    cw.sync();
    V = to_d(x) * to_d(mr(cw.WV, D, D));
    V.rowwise() += to_d(mr(cw.bV, 1, D)).row(0);
    auto a = make_attention("cat", cw.w);
    MatD Y = to_d(run(*a, x));
    for (std::int64_t i = 0; i < n; ++i)
        CHECK((Y.row(i) - V.row(((i - k) % n + n) % n)).cwiseAbs().maxCoeff() < 1e-5);
}

TEST_CASE("C7: for fixed z*, mixing commutes with rolling V") {
    const std::int64_t n = 10, c = 2, s = 3;
    auto zr = randv(n, 8);
    Eigen::VectorXf z =
        softmax(Eigen::Map<Eigen::VectorXf>(zr.data(), n).cast<double>()).cast<float>();
    auto v = randv(n * c, 9);
    std::vector<float> vr(n * c), y(n * c), yr(n * c);
    for (std::int64_t ch = 0; ch < c; ++ch)
        for (std::int64_t i = 0; i < n; ++i) vr[ch * n + (i + s) % n] = v[ch * n + i];
    circular_convolve(z.data(), v.data(), y.data(), n, c);
    circular_convolve(z.data(), vr.data(), yr.data(), n, c);
    for (std::int64_t ch = 0; ch < c; ++ch)
        for (std::int64_t i = 0; i < n; ++i)
            CHECK(yr[ch * n + (i + s) % n] == doctest::Approx(y[ch * n + i]).epsilon(1e-5));
}

TEST_CASE("C8: parameter counts, CAT (D + H) D vs 3 D^2") {
    const std::int64_t D = 768, H = 12;
    MapWeights w;
    w.set("W_A", std::vector<float>(D * H, 0.0f), {D, H});
    for (const char* nm : {"W_Q", "W_K", "W_V", "W_O"})
        w.set(nm, std::vector<float>(D * D, 0.0f), {D, D});
    w.set_scalar("heads", H);
    auto cat = make_attention("cat", w);
    auto sm = make_attention("softmax", w);
    // param_count includes W_O, which the paper's column leaves out
    CHECK(cat->param_count() - D * D == 599040u);
    CHECK(sm->param_count() - D * D == 1769472u);
    CHECK(1.0 - 599040.0 / 1769472.0 == doctest::Approx(0.661).epsilon(1e-3));
}

TEST_CASE("C9: head h depends only on its V channels and column h of W_A") {
    const std::int64_t n = 6, D = 8, H = 2;
    CatWeights cw(D, H, 51);
    cw.WO = identity(D);
    cw.sync();
    MatR x = mr(randv(n * D, 10), n, D);
    MatR y0 = run(*make_attention("cat", cw.w), x);
    // perturb head 1's V columns (4..7)
    for (std::int64_t r = 0; r < D; ++r) cw.WV[r * D + 5] += 1.0f;
    cw.sync();
    MatR y1 = run(*make_attention("cat", cw.w), x);
    CHECK((y1.leftCols(4) - y0.leftCols(4)).cwiseAbs().maxCoeff() == 0.0f);
    CHECK((y1.rightCols(4) - y0.rightCols(4)).cwiseAbs().maxCoeff() > 1e-3f);
    // perturb column 0 of W_A: only head 0 moves
    for (std::int64_t r = 0; r < D; ++r) cw.WA[r * H + 0] += 0.5f;
    cw.sync();
    MatR y2 = run(*make_attention("cat", cw.w), x);
    CHECK((y2.rightCols(4) - y1.rightCols(4)).cwiseAbs().maxCoeff() == 0.0f);
    CHECK((y2.leftCols(4) - y1.leftCols(4)).cwiseAbs().maxCoeff() > 1e-4f);
}

TEST_CASE("C10: causal variant is a lower-triangular Toeplitz product, O(N log N) by padding") {
    for (std::int64_t n : {1, 5, 31, 100}) {
        CAPTURE(n);
        CHECK(causal_fft_length(n) >= 2 * n - 1);
        auto zr = randv(n, 13);
        Eigen::VectorXf z =
            softmax(Eigen::Map<Eigen::VectorXf>(zr.data(), n).cast<double>()).cast<float>();
        auto v = randv(n * 2, 14);
        std::vector<float> y(n * 2);
        causal_convolve(z.data(), v.data(), y.data(), n, 2);
        MatD T = roll(z.cast<double>()).triangularView<Eigen::Lower>();
        MatD ref = T * Eigen::Map<Eigen::MatrixXf>(v.data(), n, 2).cast<double>();
        CHECK((Eigen::Map<Eigen::MatrixXf>(y.data(), n, 2).cast<double>() - ref)
                  .cwiseAbs()
                  .maxCoeff() < 1e-5);
        // row 0 depends only on v_0; changing v_j (j > i) does not change y_i
        if (n > 3) {
            CHECK(y[0] == doctest::Approx(z[0] * v[0]).epsilon(1e-5));
            auto v2 = v;
            v2[n - 1] += 5.0f;
            std::vector<float> y2(n * 2);
            causal_convolve(z.data(), v2.data(), y2.data(), n, 2);
            // exact in the algebra; the FFT leaves only rounding (far below the change of 5)
            for (std::int64_t i = 0; i < n - 1; ++i) CHECK(std::abs(y2[i] - y[i]) < 1e-5f);
            CHECK(std::abs(y2[n - 1] - y[n - 1]) > 1e-3f);
        }
    }
    // The kind against the dense masked computation, with and without renormalisation.
    CatWeights cw(8, 2, 61);
    MatR x = mr(randv(20 * 8, 15), 20, 8);
    for (bool renorm : {false, true}) {
        CAPTURE(renorm);
        Options o;
        o.renormalize = renorm;
        MatD y = to_d(run(*make_attention("cat-causal", cw.w, o), x));
        MatD ref = cw.dense(to_d(x), true, renorm);
        CHECK((y - ref).cwiseAbs().maxCoeff() < 1e-4);
    }
    // Uniform scores + renormalisation: y_i (before W_O) is the mean of V_0..V_i.
    std::fill(cw.WA.begin(), cw.WA.end(), 0.0f);
    std::fill(cw.bA.begin(), cw.bA.end(), 0.0f);
    cw.WO = identity(8);
    cw.bO.assign(8, 0.0f);
    cw.sync();
    cw.w.set_scalar("renormalize", 1);
    MatD y = to_d(run(*make_attention("cat-causal", cw.w), x));
    MatD V = to_d(x) * to_d(mr(cw.WV, 8, 8));
    V.rowwise() += to_d(mr(cw.bV, 1, 8)).row(0);
    for (std::int64_t i = 0; i < 20; ++i)
        CHECK((y.row(i) - V.topRows(i + 1).colwise().mean()).cwiseAbs().maxCoeff() < 1e-5);
}

TEST_CASE("C11 and op counts: CAT's closed form, FFT work grows as N log N") {
    const std::int64_t D = 16, H = 4;
    CatWeights cw(D, H, 71);
    auto a = make_attention("cat", cw.w);
    const std::int64_t n = 64;  // a power of two: real FFT = complex FFT of 32 + 2n
    const std::uint64_t fft = 2 * 32 * 5 + 2 * 64;
    const std::uint64_t spec = n / 2 + 1;
    OpCounts e;
    e.mac = n * D * H + 2 * n * D * D + H * n + (H + 2 * D) * fft + 4 * D * spec + 2 * H * spec;
    e.ac = n * H + 2 * n * D + 2 * H * n;
    e.cmp = H * n;
    e.exp = H * n;
    e.div = H;
    e.weight_read_bytes = 4 * (D * H + H + 2 * (D * D + D));
    CHECK(a->op_counts(n) == e);
    OpCounts got;
    MatR x = mr(randv(n * D, 1), n, D);
    run(*a, x, &got);
    CHECK(got == e);
    // the mixing part (without projections) is far below the dense N^2 D at large N
    auto mix = [&](std::int64_t N) {
        return a->op_counts(N).mac - std::uint64_t(N * D * H + 2 * N * D * D);
    };
    CHECK(mix(4096) < std::uint64_t(4096) * 4096 * D / 20);
    const double r = double(mix(16384)) / double(mix(4096));
    CHECK(r > 4.0);
    CHECK(r < 4.0 * 14.0 / 12.0 + 0.05);  // N log N: 4 * log(16384) / log(4096)
}

TEST_CASE("C12: averaged-key CAT") {
    const std::int64_t n = 7, D = 8, H = 2, dh = 4;
    MapWeights w;
    auto WQ = randv(D * D, 81), WK = randv(D * D, 82), WV = randv(D * D, 83), bV = randv(D, 84);
    w.set("W_Q", WQ, {D, D});
    w.set("W_K", WK, {D, D});
    w.set("W_V", WV, {D, D});
    w.set("b_V", bV, {D});
    w.set("W_O", identity(D), {D, D});
    w.set_scalar("heads", H);
    MatR x = mr(randv(n * D, 85), n, D);
    // dense reference: z_h = Q_h . mean(K_h) / sqrt(dh), softmax over tokens, Roll(z*) V_h
    MatD Q = to_d(x) * to_d(mr(WQ, D, D)), K = to_d(x) * to_d(mr(WK, D, D));
    MatD V = to_d(x) * to_d(mr(WV, D, D));
    V.rowwise() += to_d(mr(bV, 1, D)).row(0);
    MatD ref(n, D);
    for (std::int64_t h = 0; h < H; ++h) {
        Eigen::VectorXd kbar = K.middleCols(h * dh, dh).colwise().mean().transpose();
        Eigen::VectorXd z = Q.middleCols(h * dh, dh) * kbar / std::sqrt(double(dh));
        ref.middleCols(h * dh, dh) = roll(softmax(z)) * V.middleCols(h * dh, dh);
    }
    MatD y = to_d(run(*make_attention("cat-avgkey", w), x));
    CHECK((y - ref).cwiseAbs().maxCoeff() < 1e-4);
    // equal keys (W_K = 0, b_K = k): logits are Q . k / sqrt(dh), standard attention's logits
    auto kvec = randv(D, 86);
    w.set("W_K", std::vector<float>(D * D, 0.0f), {D, D});
    w.set("b_K", kvec, {D});
    MatD y2 = to_d(run(*make_attention("cat-avgkey", w), x));
    MatD ref2(n, D);
    for (std::int64_t h = 0; h < H; ++h) {
        Eigen::VectorXd kh = Eigen::Map<Eigen::VectorXf>(kvec.data() + h * dh, dh).cast<double>();
        ref2.middleCols(h * dh, dh) =
            roll(softmax(Q.middleCols(h * dh, dh) * kh / std::sqrt(double(dh)))) *
            V.middleCols(h * dh, dh);
    }
    CHECK((y2 - ref2).cwiseAbs().maxCoeff() < 1e-4);
    // N = 1: the output is V (weight 1)
    MatD y1 = to_d(run(*make_attention("cat-avgkey", w), x.topRows(1)));
    CHECK((y1 - V.topRows(1)).cwiseAbs().maxCoeff() < 1e-5);
}

TEST_CASE("CAT parameter validation names the parameter") {
    CatWeights cw(10, 4, 91);  // 4 heads do not divide 10
    CHECK_THROWS_WITH_AS(make_attention("cat", cw.w), doctest::Contains("W_A"), InputError);
    CatWeights ok(8, 2, 92);
    ok.w.set("W_V", std::vector<float>(8 * 7, 0.0f), {8, 7});
    CHECK_THROWS_WITH_AS(make_attention("cat", ok.w), doctest::Contains("W_V"), InputError);
    ok.w.set("W_V", std::vector<float>(64, NAN), {8, 8});
    CHECK_THROWS_WITH_AS(make_attention("cat", ok.w), doctest::Contains("NaN"), InputError);
    CHECK_THROWS_AS(make_attention("nope", ok.w), OptionError);
}
