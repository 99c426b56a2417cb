// The ANN reference attention kinds: parameter loading and validation, forward passes and
// their closed-form operation counts (docs/ann-attention.md lists the formulas).
#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "attention/ann/ann_internal.hpp"
#include "attention/ann/fft.hpp"
#include "sim/core/error.hpp"
#include "sim/core/rng.hpp"

namespace ternion::ann {

namespace {

float inv_sqrt(std::int64_t d) {
    return 1.0f / std::sqrt(static_cast<float>(d));
}

std::int64_t width_of(const WeightSource& w, const std::string& name) {
    auto d = param_dims(w, name, 2);
    if (d[0] != d[1]) w.fail(name, "expected a square [D, D] matrix, got " + shape_str(d));
    if (d[0] < 1) w.fail(name, "empty");
    return d[0];
}

// Buffers of one softmax-MHSA forward pass, kept between calls.
struct MhsaWork {
    MatR QKV, O;
};

// Q/K/V/O projections around the softmax core; shared by the softmax and time kinds.
struct Mhsa {
    Linear q, k, v, o;
    Linear qkv;  // [W_Q W_K W_V] side by side: one GEMM for the three projections
    std::int64_t dim = 0, heads = 1;
    bool causal = false;
    std::shared_ptr<ScratchPool<MhsaWork>> work = std::make_shared<ScratchPool<MhsaWork>>();

    void load(const WeightSource& w, std::int64_t d, std::int64_t h, bool c) {
        dim = d;
        heads = h;
        causal = c;
        q = load_linear(w, "W_Q", "b_Q", d, d);
        k = load_linear(w, "W_K", "b_K", d, d);
        v = load_linear(w, "W_V", "b_V", d, d);
        o = load_linear(w, "W_O", "b_O", d, d);
        qkv.W.resize(d, 3 * d);
        qkv.W << q.W, k.W, v.W;
        if (q.b.size() || k.b.size() || v.b.size()) {
            qkv.b = RowVec::Zero(3 * d);
            if (q.b.size()) qkv.b.segment(0, d) = q.b;
            if (k.b.size()) qkv.b.segment(d, d) = k.b;
            if (v.b.size()) qkv.b.segment(2 * d, d) = v.b;
        }
        qkv.pack();
        o.pack();
    }
    // x [n, dim] and y [n, dim] (already sized): any row-major matrix or map.
    template <class Out>
    void run(const CRef& x, Out&& y, bool par) const {
        const std::int64_t n = x.rows();
        auto w = work->acquire();
        w->QKV.resize(n, 3 * dim);
        project_into(qkv, x, w->QKV, par);
        mhsa_core(w->QKV.middleCols(0, dim), w->QKV.middleCols(dim, dim),
                  w->QKV.middleCols(2 * dim, dim), heads, inv_sqrt(dim / heads), causal, w->O, par);
        project_into(o, w->O, y, par);
    }
    void run(const MatR& x, MatR& y, bool par) const {
        y.resize(x.rows(), dim);
        run(CRef(x), y, par);
    }
    OpCounts ops(std::int64_t n) const {
        return q.ops(n) + k.ops(n) + v.ops(n) + o.ops(n) +
               mhsa_core_ops(n, n, dim, dim, heads, causal);
    }
    std::uint64_t params() const { return q.params() + k.params() + v.params() + o.params(); }
};

// ----- softmax -----

class SoftmaxKind final : public Attention {
  public:
    SoftmaxKind(Mhsa m) : Attention("softmax", m.dim, m.dim, m.heads), m_(std::move(m)) {}
    std::uint64_t param_count() const override { return m_.params(); }
    OpCounts op_counts(std::int64_t n) const override { return m_.ops(n); }

    bool maps(const float* x, const float*, std::int64_t n, std::vector<float>& scores,
              std::vector<float>& weights) const override {
        // The fused projection forward() uses, so the maps are the ones it computed.
        MatR QKV;
        m_.qkv.apply(Eigen::Map<const MatR>(x, n, in_dim()), QKV, false);
        const auto Q = QKV.middleCols(0, in_dim()), K = QKV.middleCols(in_dim(), in_dim());
        const std::int64_t H = heads(), dh = in_dim() / H;
        const float scale = inv_sqrt(dh);
        scores.resize(static_cast<std::size_t>(H * n * n));
        weights.resize(scores.size());
        for (std::int64_t h = 0; h < H; ++h) {
            Eigen::Map<MatR> S(scores.data() + h * n * n, n, n),
                W(weights.data() + h * n * n, n, n);
            // mhsa_core's own scores and exponentials, so the maps are the ones forward() used.
            head_scores(Q, K, H, scale, m_.causal, h, 0, S);
            if (m_.causal)
                for (std::int64_t r = 0; r < n; ++r)
                    for (std::int64_t j = r + 1; j < n; ++j)
                        S(r, j) = -std::numeric_limits<float>::infinity();
            W = S;
            softmax_rows(W);
            if (m_.causal)
                for (std::int64_t r = 0; r < n; ++r)
                    for (std::int64_t j = r + 1; j < n; ++j) W(r, j) = 0.0f;
            const Eigen::VectorXf inv = W.rowwise().sum().cwiseInverse();
            W = inv.asDiagonal() * W;
        }
        return true;
    }

  protected:
    void run(const MatR& x, const float*, MatR& y, bool par) const override { m_.run(x, y, par); }
    bool run_direct(const float* x, const float*, std::int64_t n, float* y,
                    bool par) const override {
        m_.run(Eigen::Map<const MatR>(x, n, in_dim()), Eigen::Map<MatR>(y, n, out_dim()), par);
        return true;
    }

  private:
    Mhsa m_;
};

// ----- CAT -----

// Buffers of one CAT forward pass, kept between calls: allocating [n, D] per call costs a page
// fault per 4 KB.
struct CatWork {
    MatR Z;         // [n, H] logits, then the softmax weights z*
    GroupMatrix V;  // [n, D + pad]: V and the logits, then (mixed in place) the heads' outputs
};

enum class CatVariant { circular, causal, avgkey };

class CatKind final : public Attention {
  public:
    CatKind(std::string kind, CatVariant var, std::int64_t d, std::int64_t h)
        : Attention(std::move(kind), d, d, h), var_(var) {}
    Linear a, q, k, v, o;
    bool renormalize = false;
    // [W_V | W_A | 0] (biases alike), columns padded to a multiple of 16 so that every row
    // starts on a 64-byte boundary: one GEMM gives V and the logits (the W_A product alone,
    // 8 columns wide, reads all of x for little work). avgkey: just W_V.
    Linear va;

    void pack() {
        const std::int64_t D = in_dim();
        o.pack();
        if (var_ == CatVariant::avgkey) {
            va = v;
            va.pack();
            q.pack();
            k.pack();
            return;
        }
        const std::int64_t H = heads(), w = (D + H + 15) / 16 * 16;
        va.W = MatR::Zero(D, w);
        va.W.leftCols(D) = v.W;
        va.W.middleCols(D, H) = a.W;
        if (v.b.size() || a.b.size()) {
            va.b = RowVec::Zero(w);
            if (v.b.size()) va.b.head(D) = v.b;
            if (a.b.size()) va.b.segment(D, H) = a.b;
        }
        va.pack();
    }

    std::uint64_t param_count() const override {
        return a.params() + q.params() + k.params() + v.params() + o.params();
    }

    OpCounts op_counts(std::int64_t n) const override {
        const std::int64_t D = in_dim(), H = heads();
        OpCounts c = v.ops(n) + o.ops(n);
        if (var_ == CatVariant::avgkey) {
            c += q.ops(n) + k.ops(n);
            c.ac += u64(n * D);   // sum of the keys
            c.mac += u64(D);      // * 1/n: the mean key
            c.mac += u64(n * D);  // per-head dot products with the mean key
            c.mac += u64(n * H);  // * 1/sqrt(d_head)
        } else {
            c += a.ops(n);
        }
        // softmax over the tokens of each head
        c.cmp += u64(H * n);
        c.exp += u64(H * n);
        c.ac += u64(2 * H * n);
        c.div += u64(H);
        c.mac += u64(H * n);
        // FFT mixing: H transforms of z, D of V, D inverse; spectra products; 1/L scaling
        const std::int64_t L = var_ == CatVariant::causal ? causal_fft_length(n) : n;
        const std::int64_t spec = L / 2 + 1;
        c.mac += u64(H + 2 * D) * real_fft_macs(L);
        c.mac += u64(4 * D * spec + 2 * H * spec);
        if (var_ == CatVariant::causal && renormalize) {
            c.ac += u64(H * n);  // prefix sums of z*
            c.div += u64(H * n);
            c.mac += u64(n * D);
        }
        return c;
    }

  protected:
    void run(const MatR& x, const float*, MatR& y, bool par) const override {
        y.resize(x.rows(), out_dim());
        forward_into(x, y, par);
    }
    bool run_direct(const float* x, const float*, std::int64_t n, float* y,
                    bool par) const override {
        forward_into(Eigen::Map<const MatR>(x, n, in_dim()), Eigen::Map<MatR>(y, n, out_dim()),
                     par);
        return true;
    }

  private:
    // x [n, D] and y [n, D] (sized) row-major.
    template <class Out>
    void forward_into(const CRef& x, Out&& y, bool par) const {
        const std::int64_t n = x.rows(), D = in_dim(), H = heads(), dh = D / H;
        auto w = work_.acquire();
        MatR& Z = w->Z;  // [n, H] logits
        GroupMatrix& V = w->V;
        V.resize(n, va.out());
        project_to_groups(va, x, V, par);
        if (var_ == CatVariant::avgkey) {
            MatR Q, K;
            q.apply(x, Q, par);
            k.apply(x, K, par);
            const RowVec kbar = K.colwise().mean();
            Z.resize(n, H);
            const float s = inv_sqrt(dh);
            for (std::int64_t h = 0; h < H; ++h)
                Z.col(h) = s * (Q.middleCols(h * dh, dh) * kbar.segment(h * dh, dh).transpose());
        } else {
            Z.resize(n, H);
            for (std::int64_t i = 0; i < n; ++i)
                for (std::int64_t h = 0; h < H; ++h) Z(i, h) = V.at(i, D + h);
        }
        // Softmax over the tokens (each column), not over the heads.
        const RowVec mx = Z.colwise().maxCoeff();
        Z = (Z.rowwise() - mx).array().exp().matrix();
        const RowVec sum = Z.colwise().sum();
        Z = Z * sum.cwiseInverse().asDiagonal();

        convolve_heads(Z, V, D, var_ == CatVariant::causal, par, conv_);
        if (var_ == CatVariant::causal && renormalize) {
            for (std::int64_t h = 0; h < H; ++h) {
                float acc = 0.0f;
                for (std::int64_t i = 0; i < n; ++i) {
                    const float mass = 1.0f / (acc += Z(i, h));
                    for (std::int64_t ch = h * dh; ch < (h + 1) * dh; ++ch) V.at(i, ch) *= mass;
                }
            }
        }
        project_from_groups(o, V, y, par);
    }

    CatVariant var_;
    mutable ScratchPool<CatWork> work_;
    mutable ScratchPool<ConvWork> conv_;
};

// ----- linear (kernelised) attention -----

class LinearKind final : public Attention {
  public:
    LinearKind(Mhsa m) : Attention("linear", m.dim, m.dim, m.heads), m_(std::move(m)) {}
    std::uint64_t param_count() const override { return m_.params(); }
    OpCounts op_counts(std::int64_t n) const override {
        const std::int64_t D = in_dim(), H = heads(), dh = D / H;
        OpCounts c = m_.q.ops(n) + m_.k.ops(n) + m_.v.ops(n) + m_.o.ops(n);
        c.cmp += u64(2 * n * D);  // elu branch, for phi(Q) and phi(K)
        c.exp += u64(2 * n * D);
        c.ac += u64(2 * n * D);    // + 1
        c.mac += u64(n * D * dh);  // S_h = phi(K_h)^T V_h
        c.ac += u64(n * D);        // key sums
        c.mac += u64(n * D * dh);  // phi(Q_h) S_h
        c.mac += u64(n * D);       // phi(Q_h) . key sum
        c.div += u64(n * H);       // reciprocal of the normaliser
        c.mac += u64(n * D);       // * reciprocal
        return c;
    }

  protected:
    void run(const MatR& x, const float*, MatR& y, bool par) const override {
        const std::int64_t n = x.rows(), D = in_dim(), H = heads(), dh = D / H;
        MatR Q, K, V, O(n, D);
        m_.q.apply(x, Q, par);
        m_.k.apply(x, K, par);
        m_.v.apply(x, V, par);
        auto phi = [](MatR& m) {  // elu(x) + 1: x + 1 above 0, exp(x) below
            m = (m.array() > 0.0f).select(m.array() + 1.0f, m.array().min(0.0f).exp()).matrix();
        };
        phi(Q);
        phi(K);
        for_range(H, 1, par, [&](std::int64_t lo, std::int64_t hi) {
            for (std::int64_t h = lo; h < hi; ++h) {
                const MatR S = K.middleCols(h * dh, dh).transpose() * V.middleCols(h * dh, dh);
                const Eigen::VectorXf ks = K.middleCols(h * dh, dh).colwise().sum().transpose();
                const Eigen::VectorXf den =
                    ((Q.middleCols(h * dh, dh) * ks).array() + 1e-6f).inverse().matrix();
                O.middleCols(h * dh, dh).noalias() = Q.middleCols(h * dh, dh) * S;
                O.middleCols(h * dh, dh) = den.asDiagonal() * O.middleCols(h * dh, dh);
            }
        });
        m_.o.apply(O, y, par);
    }

  private:
    Mhsa m_;
};

// ----- Primal-Attention -----

class PrimalKind final : public Attention {
  public:
    PrimalKind(std::int64_t d, std::int64_t h) : Attention("primal", d, d, h) {}
    Linear q, k, o;
    std::vector<MatR> We, Wr;  // per head [M, s]
    MatR Wc;                   // [2s, p]
    RowVec bc;                 // [p] or empty
    std::int64_t M = 0, s = 0;

    std::uint64_t param_count() const override {
        return q.params() + k.params() + o.params() + u64(2 * heads() * M * s) + u64(Wc.size()) +
               u64(bc.size());
    }
    OpCounts op_counts(std::int64_t n) const override {
        const std::int64_t D = in_dim(), H = heads(), p = D / H, mu = std::min(n, M);
        OpCounts c = q.ops(n) + k.ops(n) + o.ops(n);
        c.mac += u64(2 * n * D);           // squared norms of q and k per head
        c.div += u64(2 * n * H);           // 1 / norm
        c.mac += u64(2 * n * D);           // scaling to unit norm
        c.mac += u64(2 * H * p * mu * s);  // W_{e|X} and W_{r|X}
        c.mac += u64(2 * n * D * s);       // E and R
        c.mac += u64(2 * n * D * s);       // [E R] W_c
        if (bc.size()) c.ac += u64(n * D);
        c.weight_read_bytes += 4 * (u64(2 * H * mu * s) + u64(Wc.size() + bc.size()));
        return c;
    }

  protected:
    void run(const MatR& x, const float*, MatR& y, bool par) const override {
        const std::int64_t n = x.rows(), D = in_dim(), H = heads(), p = D / H;
        MatR Q, K, O(n, D);
        q.apply(x, Q, par);
        k.apply(x, K, par);
        // cosine feature maps: unit L2 norm per head (F.normalize, eps 1e-12)
        auto unit = [&](MatR& m) {
            for (std::int64_t h = 0; h < H; ++h) {
                auto blk = m.middleCols(h * p, p);
                const Eigen::VectorXf r =
                    blk.rowwise().norm().array().max(1e-12f).inverse().matrix();
                blk = r.asDiagonal() * blk;
            }
        };
        unit(Q);
        unit(K);
        const auto idx = primal_sample_indices(n, M);
        const std::int64_t mu = static_cast<std::int64_t>(idx.size());
        MatR Xs(mu, D);  // the sampled tokens of the block input
        for (std::int64_t r = 0; r < mu; ++r) Xs.row(r) = x.row(idx[r]);
        for_range(H, 1, par, [&](std::int64_t lo, std::int64_t hi) {
            for (std::int64_t h = lo; h < hi; ++h) {
                const MatR WeX = Xs.middleCols(h * p, p).transpose() * We[h].topRows(mu);  // [p, s]
                const MatR WrX = Xs.middleCols(h * p, p).transpose() * Wr[h].topRows(mu);
                MatR E = Q.middleCols(h * p, p) * WeX;  // [n, s]
                MatR R = K.middleCols(h * p, p) * WrX;
                auto Oh = O.middleCols(h * p, p);
                Oh.noalias() = E * Wc.topRows(s);
                Oh.noalias() += R * Wc.bottomRows(s);
                if (bc.size()) Oh.rowwise() += bc;
            }
        });
        o.apply(O, y, par);
    }
};

// ----- functional time embeddings + softmax attention -----

class TimeKind final : public Attention {
  public:
    TimeKind(std::string kind, bool bochner, Mhsa m, std::int64_t dt)
        : Attention(std::move(kind), m.dim - dt, m.dim, m.heads),
          bochner_(bochner),
          m_(std::move(m)),
          dt_(dt) {}
    // Bochner: omega_sin, omega_cos [dt/2], beta [dt]. Mercer: omega [dt], basis [dt, 2k], bias.
    std::vector<float> w_sin, w_cos, beta, omega, basis, bias;
    std::int64_t k = 0;

    bool needs_time() const override { return true; }
    std::uint64_t param_count() const override {
        return m_.params() + u64(w_sin.size() + w_cos.size() + beta.size() + omega.size() +
                                 basis.size() + bias.size());
    }
    OpCounts op_counts(std::int64_t n) const override {
        OpCounts c = m_.ops(n);
        if (bochner_) {
            c.mac += u64(2 * n * dt_);  // omega * t, then * beta
            c.exp += u64(n * dt_);      // sin / cos (counted as exp: one transcendental each)
        } else {
            c.mac += u64(3 * n * dt_ * k);  // j omega t, and two coefficients per harmonic
            c.exp += u64(2 * n * dt_ * k);  // sin and cos per harmonic
            if (!bias.empty()) c.ac += u64(n * dt_);
        }
        c.weight_read_bytes += 4 * u64(w_sin.size() + w_cos.size() + beta.size() + omega.size() +
                                       basis.size() + bias.size());
        return c;
    }

  protected:
    void run(const MatR& x, const float* t, MatR& y, bool par) const override {
        const std::int64_t n = x.rows(), de = in_dim();
        if (!t) throw InputError("", kind(), "needs time stamps /t");
        MatR xt(n, de + dt_);  // [event embedding ; time embedding]
        xt.leftCols(de) = x;
        for (std::int64_t i = 0; i < n; ++i) {
            float* out = xt.row(i).data() + de;
            if (bochner_)
                bochner_embed(w_sin.data(), w_cos.data(), beta.data(), dt_ / 2, t[i], out);
            else
                mercer_embed(omega.data(), basis.data(), bias.empty() ? nullptr : bias.data(), dt_,
                             k, t[i], out);
        }
        m_.run(xt, y, par);
    }

  private:
    bool bochner_;
    Mhsa m_;
    std::int64_t dt_;
};

// ----- NPT -----

struct NptBlock {
    bool abd = true;  // attention between datapoints (else between attributes)
    std::int64_t w = 0;
    RowVec g0, b0, g1, b1;
    Linear q, k, v, mix, res, ff1, ff2;
    bool has_res = false;
};

class NptKind final : public Attention {
  public:
    NptKind(std::int64_t d, std::int64_t h, std::int64_t attrs)
        : Attention("npt", d, d, h), attrs_(attrs) {}
    std::vector<NptBlock> blocks;
    bool abd_enabled = true;

    std::uint64_t param_count() const override {
        std::uint64_t p = 0;
        for (auto& b : blocks)
            p += b.q.params() + b.k.params() + b.v.params() + b.mix.params() + b.res.params() +
                 b.ff1.params() + b.ff2.params() + u64(4 * b.w);
        return p;
    }
    OpCounts op_counts(std::int64_t n) const override {
        OpCounts c;
        for (auto& b : blocks) {
            if (b.abd && !abd_enabled) continue;
            // ABD: n tokens of width d*e; ABA: n*d tokens of width e, attention within a row
            const std::int64_t toks = b.abd ? n : n * attrs_;
            c += layer_norm_ops(toks, b.w) + b.q.ops(toks) + b.k.ops(toks) + b.v.ops(toks);
            OpCounts core = b.abd ? mhsa_core_ops(n, n, b.w, b.w, heads(), false)
                                  : mhsa_core_ops(attrs_, attrs_, b.w, b.w, heads(), false);
            if (!b.abd) core.for_each_mut([&](std::string_view, std::uint64_t& v) { v *= u64(n); });
            c += core + b.mix.ops(toks);
            if (b.has_res) c += b.res.ops(toks);
            c.ac += u64(toks * b.w);  // residual add
            c += layer_norm_ops(toks, b.w) + b.ff1.ops(toks) + b.ff2.ops(toks);
            c.exp += u64(toks * b.ff1.out());      // GELU's erf
            c.mac += u64(2 * toks * b.ff1.out());  // x * 0.5 * (1 + erf)
            c.ac += u64(toks * b.ff1.out() + toks * b.w);
        }
        return c;
    }

  protected:
    void block(const NptBlock& b, const MatR& x, MatR& y, std::int64_t attn_tokens,
               bool par) const {
        // x: [tokens, w]; attention runs over consecutive groups of attn_tokens rows.
        MatR xn, Q, K, V, A(x.rows(), b.w), H, hn, f;
        layer_norm(x, b.g0, b.b0, 1e-12f, xn);
        b.q.apply(xn, Q, par);
        b.k.apply(xn, K, par);
        b.v.apply(xn, V, par);
        const std::int64_t groups = x.rows() / attn_tokens;
        const float scale = inv_sqrt(b.w);  // the NPT code scales by the full width
        for_range(groups, 1, par && groups > 1, [&](std::int64_t lo, std::int64_t hi) {
            MatR Og;
            for (std::int64_t g = lo; g < hi; ++g) {
                const auto r0 = g * attn_tokens;
                mhsa_core(Q.middleRows(r0, attn_tokens), K.middleRows(r0, attn_tokens),
                          V.middleRows(r0, attn_tokens), heads(), scale, false, Og,
                          par && groups == 1);
                A.middleRows(r0, attn_tokens) = Og;
            }
        });
        b.mix.apply(A, H, par);
        if (b.has_res) {
            MatR r;
            b.res.apply(x, r, par);
            H += r;
        } else {
            H += x;
        }
        layer_norm(H, b.g1, b.b1, 1e-12f, hn);
        b.ff1.apply(hn, f, par);
        const float r2 = static_cast<float>(1.0 / std::numbers::sqrt2);
        f = f.unaryExpr([r2](float v) { return 0.5f * v * (1.0f + std::erf(v * r2)); });
        b.ff2.apply(f, y, par);
        y += H;
    }

    void run(const MatR& x, const float*, MatR& y, bool par) const override {
        const std::int64_t n = x.rows(), e = in_dim() / attrs_;
        MatR cur = x, nxt;
        for (auto& b : blocks) {
            if (b.abd) {
                if (!abd_enabled) continue;
                block(b, cur, nxt, n, par);
            } else {
                // [n, d*e] row-major is exactly [n*d, e] row-major: no copy of the layout.
                MatR flat = Eigen::Map<const MatR>(cur.data(), n * attrs_, e);
                MatR out;
                block(b, flat, out, attrs_, par);
                nxt = Eigen::Map<const MatR>(out.data(), n, attrs_ * e);
            }
            cur.swap(nxt);
        }
        y = cur;
    }

  private:
    std::int64_t attrs_;
};

// ----- loading -----

std::unique_ptr<Attention> load_cat(const std::string& kind, const WeightSource& w,
                                    const Options& opt) {
    const CatVariant var = kind == "cat"          ? CatVariant::circular
                           : kind == "cat-causal" ? CatVariant::causal
                                                  : CatVariant::avgkey;
    std::int64_t D, H;
    if (var == CatVariant::avgkey) {
        D = width_of(w, "W_Q");
        H = heads_param(w, opt, D, "D");
    } else {
        auto d = param_dims(w, "W_A", 2);
        D = d[0];
        H = d[1];
        if (D < 1 || H < 1) w.fail("W_A", "empty");
        if (opt.heads && opt.heads != H)
            w.fail("W_A", "has " + std::to_string(H) + " columns (heads) but " +
                              std::to_string(opt.heads) + " heads were asked for");
        if (D % H != 0)
            w.fail("W_A",
                   std::to_string(H) + " heads (columns) do not divide D = " + std::to_string(D));
    }
    auto c = std::make_unique<CatKind>(kind, var, D, H);
    if (var == CatVariant::avgkey) {
        c->q = load_linear(w, "W_Q", "b_Q", D, D);
        c->k = load_linear(w, "W_K", "b_K", D, D);
    } else {
        c->a = load_linear(w, "W_A", "b_A", D, H);
    }
    c->v = load_linear(w, "W_V", "b_V", D, D);
    c->o = load_linear(w, "W_O", "b_O", D, D);
    c->renormalize = var == CatVariant::causal && flag(w, "renormalize", opt.renormalize, false);
    c->pack();
    return c;
}

std::unique_ptr<Attention> load_time(const std::string& kind, const WeightSource& w,
                                     const Options& opt) {
    const bool bochner = kind == "time-bochner";
    const std::int64_t Dm = width_of(w, "W_Q");
    std::int64_t dt = 0;
    std::vector<float> w_sin, w_cos, beta, omega, basis, bias;
    std::int64_t k = 0;
    if (bochner) {
        if (w.has("omega")) {
            w_sin = w.get("omega").data;
            w_cos = w_sin;
        } else {
            w_sin = w.get("omega_sin").data;
            w_cos = w.get("omega_cos").data;
        }
        const std::int64_t d = static_cast<std::int64_t>(w_sin.size());
        if (d < 1 || static_cast<std::int64_t>(w_cos.size()) != d)
            w.fail("omega_cos", "omega_sin and omega_cos need the same non-zero length");
        dt = 2 * d;
        if (w.has("beta")) {
            auto b = load_vector(w, "beta", dt);
            beta.assign(b.data(), b.data() + dt);
        } else {
            beta.assign(static_cast<std::size_t>(dt), 1.0f / std::sqrt(static_cast<float>(d)));
        }
    } else {
        auto bd = param_dims(w, "W_basis", 2);
        dt = bd[0];
        if (dt < 1 || bd[1] < 2 || bd[1] % 2) w.fail("W_basis", "expected shape [d_T, 2k]");
        k = bd[1] / 2;
        basis = w.get("W_basis").data;
        if (w.has("omega")) {
            auto o = load_vector(w, "omega", dt);
            omega.assign(o.data(), o.data() + dt);
        } else if (w.has("theta")) {
            auto th = load_vector(w, "theta", dt);
            for (std::int64_t i = 0; i < dt; ++i)
                omega.push_back(static_cast<float>(std::pow(10.0, -static_cast<double>(th[i]))));
        } else {
            omega = mercer_default_omega(dt);
        }
        if (w.has("b_basis")) {
            auto b = load_vector(w, "b_basis", dt);
            bias.assign(b.data(), b.data() + dt);
        }
    }
    if (dt >= Dm)
        w.fail("W_Q", "width " + std::to_string(Dm) +
                          " leaves no room for the event embedding "
                          "next to d_T = " +
                          std::to_string(dt));
    Mhsa m;
    m.load(w, Dm, heads_param(w, opt, Dm, "D + d_T"), flag(w, "causal", opt.causal, false));
    auto t = std::make_unique<TimeKind>(kind, bochner, std::move(m), dt);
    t->w_sin = std::move(w_sin);
    t->w_cos = std::move(w_cos);
    t->beta = std::move(beta);
    t->omega = std::move(omega);
    t->basis = std::move(basis);
    t->bias = std::move(bias);
    t->k = k;
    return t;
}

std::unique_ptr<Attention> load_primal(const WeightSource& w, const Options& opt) {
    const std::int64_t D = width_of(w, "W_Q");
    auto ed = param_dims(w, "W_e", 3);
    const std::int64_t H = ed[0];
    if (opt.heads && opt.heads != H) w.fail("W_e", "first axis (heads) disagrees with --heads");
    if (H < 1 || D % H) w.fail("W_e", "heads (first axis) must divide D = " + std::to_string(D));
    if (param_dims(w, "W_r", 3) != ed) w.fail("W_r", "must have the shape of W_e");
    auto p = std::make_unique<PrimalKind>(D, H);
    p->M = ed[1];
    p->s = ed[2];
    if (p->M < 1 || p->s < 1) w.fail("W_e", "empty");
    p->q = load_linear(w, "W_Q", "b_Q", D, D);
    p->k = load_linear(w, "W_K", "b_K", D, D);
    p->o = load_linear(w, "W_O", "b_O", D, D);
    auto we = w.get("W_e").data, wr = w.get("W_r").data;
    for (std::int64_t h = 0; h < H; ++h) {
        p->We.push_back(Eigen::Map<const MatR>(we.data() + h * p->M * p->s, p->M, p->s));
        p->Wr.push_back(Eigen::Map<const MatR>(wr.data() + h * p->M * p->s, p->M, p->s));
    }
    p->Wc = load_matrix(w, "W_c", 2 * p->s, D / H);
    if (w.has("b_c")) p->bc = load_vector(w, "b_c", D / H);
    return p;
}

std::unique_ptr<Attention> load_npt(const WeightSource& w, const Options& opt) {
    auto a = w.scalar("attributes");
    if (!a || *a < 1 || *a != std::floor(*a)) w.fail("attributes", "expected a positive integer");
    const std::int64_t d = static_cast<std::int64_t>(*a);
    std::int64_t depth = 0;
    while (w.has("blocks/" + std::to_string(depth) + "/W_Q")) ++depth;
    if (depth < 2 || depth % 2)
        w.fail("blocks", "stacking depth must be even and at least 2 (ABD, ABA, ...), found " +
                             std::to_string(depth) + " blocks/<i>/W_Q");
    const std::int64_t D = width_of(w, "blocks/0/W_Q");
    if (D % d)
        w.fail("attributes",
               std::to_string(d) + " attributes do not divide D = " + std::to_string(D));
    const std::int64_t e = D / d;
    const std::int64_t H = heads_param(w, opt, e, "the attribute embedding e");
    auto n = std::make_unique<NptKind>(D, H, d);
    n->abd_enabled = flag(w, "abd", std::nullopt, true);
    for (std::int64_t i = 0; i < depth; ++i) {
        const std::string pre = "blocks/" + std::to_string(i) + "/";
        NptBlock b;
        b.abd = i % 2 == 0;
        b.w = b.abd ? D : e;
        auto vec_or = [&](const std::string& name, float dflt) {
            return w.has(pre + name) ? load_vector(w, pre + name, b.w)
                                     : RowVec(RowVec::Constant(b.w, dflt));
        };
        b.g0 = vec_or("ln0_weight", 1.0f);
        b.b0 = vec_or("ln0_bias", 0.0f);
        b.g1 = vec_or("ln1_weight", 1.0f);
        b.b1 = vec_or("ln1_bias", 0.0f);
        b.q = load_linear(w, pre + "W_Q", pre + "b_Q", b.w, b.w);
        b.k = load_linear(w, pre + "W_K", pre + "b_K", b.w, b.w);
        b.v = load_linear(w, pre + "W_V", pre + "b_V", b.w, b.w);
        b.mix = load_linear(w, pre + "W_mix", pre + "b_mix", b.w, b.w);
        b.has_res = w.has(pre + "W_res");
        if (b.has_res) b.res = load_linear(w, pre + "W_res", pre + "b_res", b.w, b.w);
        auto fd = param_dims(w, pre + "W_ff1", 2);
        if (fd[0] != b.w || fd[1] < 1)
            w.fail(pre + "W_ff1", "expected shape [" + std::to_string(b.w) + ", hidden]");
        b.ff1 = load_linear(w, pre + "W_ff1", pre + "b_ff1", b.w, fd[1]);
        b.ff2 = load_linear(w, pre + "W_ff2", pre + "b_ff2", fd[1], b.w);
        n->blocks.push_back(std::move(b));
    }
    return n;
}

// ----- random weights -----

struct RandomFill {
    MapWeights& w;
    std::uint64_t seed;
    std::uint64_t stream = 0;
    void uniform(const std::string& name, Shape dims, double bound) {
        std::vector<float> v(static_cast<std::size_t>(numel(dims)));
        ++stream;
        for (std::size_t i = 0; i < v.size(); ++i)
            v[i] = static_cast<float>((2.0 * counter_uniform(seed, stream, 0, i) - 1.0) * bound);
        w.set(name, std::move(v), std::move(dims));
    }
    // PyTorch nn.Linear's default: U(-1/sqrt(in), 1/sqrt(in)) for weight and bias.
    void linear(const std::string& wn, const std::string& bn, std::int64_t in, std::int64_t out) {
        const double bound = 1.0 / std::sqrt(static_cast<double>(in));
        uniform(wn, {in, out}, bound);
        if (!bn.empty()) uniform(bn, {out}, bound);
    }
};

}  // namespace

const std::vector<std::string>& kinds() {
    static const std::vector<std::string> k{"softmax",      "cat",         "cat-causal",
                                            "cat-avgkey",   "linear",      "primal",
                                            "time-bochner", "time-mercer", "npt"};
    return k;
}

std::unique_ptr<Attention> make_attention(const std::string& kind, const WeightSource& w,
                                          const Options& opt) {
    if (kind == "softmax" || kind == "linear") {
        const std::int64_t D = width_of(w, "W_Q");
        Mhsa m;
        m.load(w, D, heads_param(w, opt, D, "D"),
               kind == "softmax" && flag(w, "causal", opt.causal, false));
        if (kind == "softmax") return std::make_unique<SoftmaxKind>(std::move(m));
        return std::make_unique<LinearKind>(std::move(m));
    }
    if (kind == "cat" || kind == "cat-causal" || kind == "cat-avgkey")
        return load_cat(kind, w, opt);
    if (kind == "primal") return load_primal(w, opt);
    if (kind == "time-bochner" || kind == "time-mercer") return load_time(kind, w, opt);
    if (kind == "npt") return load_npt(w, opt);
    std::string list;
    for (auto& k : kinds()) list += (list.empty() ? "" : ", ") + k;
    throw OptionError("kind", "unknown attention kind '" + kind + "' (one of: " + list + ")");
}

MapWeights random_weights(const std::string& kind, std::int64_t D, std::int64_t H,
                          std::uint64_t seed) {
    MapWeights w("<random " + kind + " weights>");
    RandomFill r{w, seed};
    if (D < 1 || H < 1 || D % H) throw OptionError("heads", "must divide --dim");
    w.set_scalar("heads", static_cast<double>(H));
    if (kind == "softmax" || kind == "linear" || kind == "cat-avgkey" || kind == "primal" ||
        kind == "time-bochner" || kind == "time-mercer") {
        r.linear("W_Q", "b_Q", D, D);
        r.linear("W_K", "b_K", D, D);
    }
    if (kind == "cat" || kind == "cat-causal") r.linear("W_A", "b_A", D, H);
    if (kind != "primal" && kind != "npt") r.linear("W_V", "b_V", D, D);
    if (kind != "npt") r.linear("W_O", "b_O", D, D);
    if (kind == "primal") {
        const std::int64_t p = D / H, s = std::max<std::int64_t>(1, std::min<std::int64_t>(p, 30));
        r.uniform("W_e", {H, 10 * s, s}, 1.0 / std::sqrt(10.0 * s));
        r.uniform("W_r", {H, 10 * s, s}, 1.0 / std::sqrt(10.0 * s));
        r.linear("W_c", "b_c", 2 * s, p);
    }
    if (kind == "time-bochner") {
        const std::int64_t d = std::max<std::int64_t>(1, D / 8);  // d_T = 2d = D/4
        std::vector<float> om(static_cast<std::size_t>(d));
        for (std::int64_t i = 0; i < d; ++i)
            om[i] = static_cast<float>(std::pow(10.0, -8.0 * i / std::max<std::int64_t>(1, d - 1)));
        w.set("omega_sin", om, {d});
        w.set("omega_cos", om, {d});
    }
    if (kind == "time-mercer") {
        const std::int64_t dt = std::max<std::int64_t>(1, D / 4), k = 5;
        r.uniform("W_basis", {dt, 2 * k}, std::sqrt(6.0 / (dt + 2 * k)));  // Glorot
        w.set("b_basis", std::vector<float>(static_cast<std::size_t>(dt), 0.0f), {dt});
    }
    if (kind == "npt") {
        const std::int64_t d = std::max<std::int64_t>(1, std::min<std::int64_t>(8, D / H));
        if (D % d) throw OptionError("dim", "npt needs --dim divisible by its attribute count");
        w.set_scalar("attributes", static_cast<double>(d));
        for (int i = 0; i < 2; ++i) {
            const std::int64_t bw = i == 0 ? D : D / d;
            const std::string pre = "blocks/" + std::to_string(i) + "/";
            for (const char* nm : {"Q", "K", "V"})
                r.linear(pre + "W_" + nm, pre + "b_" + nm, bw, bw);
            r.linear(pre + "W_mix", pre + "b_mix", bw, bw);
            r.linear(pre + "W_ff1", pre + "b_ff1", bw, 4 * bw);
            r.linear(pre + "W_ff2", pre + "b_ff2", 4 * bw, bw);
        }
    }
    if (std::find(kinds().begin(), kinds().end(), kind) == kinds().end())
        throw OptionError("kind", "unknown attention kind '" + kind + "'");
    return w;
}

}  // namespace ternion::ann
