// Shared pieces of the ANN reference attentions: parameter sources, projections, the tiled
// softmax core, LayerNorm, CAT's FFT mixing and the small helpers the facts tests use.
#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "attention/ann/ann_internal.hpp"
#include "attention/ann/ann_levels.hpp"
#include "attention/ann/fft.hpp"
#include "sim/core/error.hpp"
#include "sim/core/node_spec.hpp"
#include "sim/io/h5io.hpp"

namespace ternion::ann {

// ----- parameter sources -----

std::optional<double> WeightSource::scalar(const std::string& name) const {
    if (!has(name)) return std::nullopt;
    auto t = get(name);
    if (t.data.size() != 1) fail(name, "expected a scalar, got shape " + shape_str(t.dims));
    return t.data[0];
}

H5Weights::H5Weights(const h5::Reader& r, std::string prefix) : r_(r), prefix_(std::move(prefix)) {
    if (prefix_.empty() || prefix_.back() != '/') prefix_ += '/';
}
std::string H5Weights::path(const std::string& name) const {
    return prefix_ + name;
}
bool H5Weights::has(const std::string& name) const {
    return r_.is_dataset(path(name));
}
Tensor H5Weights::get(const std::string& name) const {
    if (!has(name)) fail(name, "missing dataset");
    auto inf = r_.info(path(name));
    if (inf.kind != h5::Kind::floating && inf.kind != h5::Kind::integer)
        fail(name, "expected numbers");
    if (declared_numel(inf.dims) > kMaxElements) fail(name, "too large: " + shape_str(inf.dims));
    Tensor t;
    t.data = r_.read_floats(path(name));
    t.dims = inf.dims;
    for (float v : t.data)
        if (!std::isfinite(v)) fail(name, "contains NaN or Inf");
    return t;
}
void H5Weights::fail(const std::string& name, const std::string& what) const {
    throw InputError(r_.path(), path(name), what);
}

bool SpecWeights::has(const std::string& name) const {
    return s_.has(name);
}
Tensor SpecWeights::get(const std::string& name) const {
    Tensor t;
    t.data = s_.floats(name, &t.dims);  // checks presence and finiteness
    return t;
}
void SpecWeights::fail(const std::string& name, const std::string& what) const {
    s_.fail(name, what);
}

void MapWeights::set(const std::string& name, std::vector<float> data, Shape dims) {
    map_[name] = Tensor{std::move(data), std::move(dims)};
}
Tensor MapWeights::get(const std::string& name) const {
    auto it = map_.find(name);
    if (it == map_.end()) fail(name, "missing parameter");
    for (float v : it->second.data)
        if (!std::isfinite(v)) fail(name, "contains NaN or Inf");
    return it->second;
}
void MapWeights::fail(const std::string& name, const std::string& what) const {
    throw InputError(label_, name, what);
}

// ----- loading helpers -----

Shape param_dims(const WeightSource& w, const std::string& name, std::size_t rank) {
    auto t = w.get(name);
    if (t.dims.size() != rank)
        w.fail(name, "expected " + std::to_string(rank) + " axes, got shape " + shape_str(t.dims));
    return t.dims;
}

MatR load_matrix(const WeightSource& w, const std::string& name, std::int64_t rows,
                 std::int64_t cols) {
    auto t = w.get(name);
    if (t.dims != Shape{rows, cols})
        w.fail(name, "expected shape [" + std::to_string(rows) + ", " + std::to_string(cols) +
                         "] ([in, out]: y = x W), got " + shape_str(t.dims));
    return Eigen::Map<const MatR>(t.data.data(), rows, cols);
}

RowVec load_vector(const WeightSource& w, const std::string& name, std::int64_t n) {
    auto t = w.get(name);
    if (static_cast<std::int64_t>(t.data.size()) != n)
        w.fail(name, "expected " + std::to_string(n) + " values, got shape " + shape_str(t.dims));
    return Eigen::Map<const RowVec>(t.data.data(), n);
}

Linear load_linear(const WeightSource& w, const std::string& wname, const std::string& bname,
                   std::int64_t in, std::int64_t out) {
    Linear l;
    l.W = load_matrix(w, wname, in, out);
    if (!bname.empty() && w.has(bname)) l.b = load_vector(w, bname, out);
    return l;
}

bool flag(const WeightSource& w, const std::string& name, std::optional<bool> over, bool dflt) {
    if (over) return *over;
    auto v = w.scalar(name);
    if (!v) return dflt;
    if (*v != 0.0 && *v != 1.0) w.fail(name, "expected 0 or 1");
    return *v != 0.0;
}

std::int64_t heads_param(const WeightSource& w, const Options& o, std::int64_t dim,
                         const std::string& dim_name) {
    std::int64_t h = o.heads;
    if (h == 0) {
        auto v = w.scalar("heads");
        h = v ? static_cast<std::int64_t>(*v) : 1;
        if (v && (*v != std::floor(*v) || *v < 1 || *v > 1e6))
            w.fail("heads", "expected a positive integer");
    }
    if (h < 1) w.fail("heads", "expected a positive integer");
    if (dim % h != 0)
        w.fail("heads", std::to_string(h) + " heads do not divide " + dim_name + " = " +
                            std::to_string(dim));
    return h;
}

OpCounts weights_read(std::uint64_t params) {
    OpCounts c;
    c.weight_read_bytes = 4 * params;
    return c;
}

// ----- projections -----

void Linear::apply(const CRef& x, MatR& y, bool parallel) const {
    y.resize(x.rows(), out());
    project_into(*this, x, y, parallel);
}

void GroupMatrix::resize(std::int64_t rows, std::int64_t cols) {
    rows_ = rows;
    cols_ = cols;
    const auto need = static_cast<std::size_t>(groups() * gstride());
    if (need > data_.size()) data_ = LargeVector<float>(need);  // no copy of stale contents
}

void project_to_groups(const Linear& l, const CRef& x, GroupMatrix& y, bool parallel) {
    const PackedMatrix* packed = l.usable_packed();
    const float* bias = l.b.size() ? l.b.data() : nullptr;
    for_range(x.rows(), 256, parallel, [&](std::int64_t lo, std::int64_t hi) {
        if (packed) {
            gemm_packed(x.data() + lo * x.outerStride(), Layout::rows(x.outerStride()), hi - lo,
                        *packed, bias, y.data() + lo * 16, y.layout());
            return;
        }
        // Without the packed kernel: Eigen's product (as project_into) into a row block, then
        // copied into the groups.
        MatR blk(hi - lo, l.out());
        project_into(l, x.middleRows(lo, hi - lo), blk, false);
        for (std::int64_t i = lo; i < hi; ++i)
            for (std::int64_t j = 0; j < l.out(); ++j) y.at(i, j) = blk(i - lo, j);
    });
}

void project_from_groups(const Linear& l, const GroupMatrix& x, Eigen::Ref<MatR> y, bool parallel) {
    const PackedMatrix* packed = l.usable_packed();
    const float* bias = l.b.size() ? l.b.data() : nullptr;
    for_range(x.rows(), 256, parallel, [&](std::int64_t lo, std::int64_t hi) {
        if (packed) {
            gemm_packed(x.data() + lo * 16, x.layout(), hi - lo, *packed, bias,
                        y.data() + lo * y.outerStride(), Layout::rows(y.outerStride()));
            return;
        }
        MatR blk(hi - lo, l.in());
        for (std::int64_t i = lo; i < hi; ++i)
            for (std::int64_t j = 0; j < l.in(); ++j) blk(i - lo, j) = x.at(i, j);
        project_into(l, blk, y.middleRows(lo, hi - lo), false);
    });
}

OpCounts Linear::ops(std::int64_t n) const {
    OpCounts c;
    c.mac = u64(n * in() * out());
    if (b.size()) c.ac = u64(n * out());
    c.weight_read_bytes = 4 * params();
    return c;
}

// ----- softmax attention core -----

namespace {

// One head's operands for the packed kernel (levels with FMA): the scaled queries, K^T and V
// packed once per call, so every query tile of the head is two packed products.
struct HeadPanels {
    MatR qs;  // scale * Q, [n, heads * dh]
    std::vector<PackedMatrix> kt, v;
};

HeadPanels pack_heads(const CRef& Q, const CRef& K, const CRef& V, std::int64_t heads,
                      float scale) {
    const std::int64_t m = K.rows(), dh = Q.cols() / heads, dv = V.cols() / heads;
    HeadPanels p;
    p.qs = scale * Q;
    MatR kt(dh, m);
    for (std::int64_t h = 0; h < heads; ++h) {
        kt = K.middleCols(h * dh, dh).transpose();
        p.kt.emplace_back(kt.data(), m, dh, m);
        p.v.emplace_back(V.data() + h * dv, V.outerStride(), m, dv);
    }
    return p;
}

}  // namespace

void softmax_rows(Eigen::Map<MatR>& S) {
    // The level's own vector exp (Eigen's is built for the baseline level, 4 lanes).
    const auto exp_shifted = level_kernels().exp_shifted;
    for (std::int64_t r = 0; r < S.rows(); ++r) exp_shifted(S.data() + r * S.cols(), S.cols());
}

void head_scores(const CRef& Q, const CRef& K, std::int64_t heads, float scale, bool causal,
                 std::int64_t h, std::int64_t i0, Eigen::Map<MatR>& S) {
    const std::int64_t dh = Q.cols() / heads, rows = S.rows(), keys = S.cols();
    if (packed_gemm_available() && !causal) {  // as mhsa_core's packed path
        const MatR qs = scale * Q.block(i0, h * dh, rows, dh);
        const MatR kt = K.middleCols(h * dh, dh).transpose();
        const PackedMatrix ktp(kt.data(), keys, dh, keys);
        gemm_packed(qs.data(), Layout::rows(dh), rows, ktp, nullptr, S.data(), Layout::rows(keys));
        return;
    }
    S.noalias() =
        (scale * Q.block(i0, h * dh, rows, dh)) * K.block(0, h * dh, keys, dh).transpose();
}

void mhsa_core(const CRef& Q, const CRef& K, const CRef& V, std::int64_t heads, float scale,
               bool causal, MatR& O, bool parallel) {
    const std::int64_t n = Q.rows(), m = K.rows();
    const std::int64_t dh = Q.cols() / heads, dv = V.cols() / heads;
    O.resize(n, V.cols());
    // Query rows per tile: a score tile of about 64 K floats (256 KB) stays in L2 and keeps
    // memory O(tile * m) for any n; at least 64 rows, and at most 256 so that short sequences
    // run one large GEMM per head instead of several small ones.
    const std::int64_t tile =
        std::clamp<std::int64_t>(65536 / std::max<std::int64_t>(m, 1), 64, 256);
    const std::int64_t ntiles = (n + tile - 1) / tile;
    // Without causality every tile sees every key: the packed kernel's two products (the
    // level's own FMA tiles; Eigen is built for the baseline level), each element one ascending
    // chain of fused multiply-adds, so the tiling changes no result.
    const bool packed = packed_gemm_available() && !causal;
    const HeadPanels panels = packed ? pack_heads(Q, K, V, heads, scale) : HeadPanels{};
    for_range(heads * ntiles, 1, parallel, [&](std::int64_t b, std::int64_t e) {
        MatR buf(std::min(tile, n), m);
        Eigen::VectorXf inv;
        for (std::int64_t task = b; task < e; ++task) {
            const std::int64_t h = task / ntiles, i0 = (task % ntiles) * tile;
            const std::int64_t rows = std::min(tile, n - i0);
            const std::int64_t keys = causal ? std::min(m, i0 + rows) : m;
            Eigen::Map<MatR> S(buf.data(), rows, keys);
            // Scores, softmax numerators, then their product with V.
            if (packed)
                gemm_packed(panels.qs.data() + i0 * panels.qs.cols() + h * dh,
                            Layout::rows(panels.qs.cols()), rows, panels.kt[h], nullptr, S.data(),
                            Layout::rows(keys));
            else
                head_scores(Q, K, heads, scale, causal, h, i0, S);  // Eigen's product here
            if (causal)
                for (std::int64_t r = 0; r < rows; ++r)
                    for (std::int64_t j = i0 + r + 1; j < keys; ++j)
                        S(r, j) = -std::numeric_limits<float>::infinity();
            softmax_rows(S);
            if (causal)  // exp(-inf) may come back as a tiny number from the vectorised exp
                for (std::int64_t r = 0; r < rows; ++r)
                    for (std::int64_t j = i0 + r + 1; j < keys; ++j) S(r, j) = 0.0f;
            inv = S.rowwise().sum().cwiseInverse();
            auto Ob = O.block(i0, h * dv, rows, dv);
            if (packed)
                gemm_packed(S.data(), Layout::rows(keys), rows, panels.v[h], nullptr,
                            O.data() + i0 * O.cols() + h * dv, Layout::rows(O.cols()));
            else
                Ob.noalias() = S * V.block(0, h * dv, keys, dv);
            Ob = inv.asDiagonal() * Ob;
        }
    });
}

OpCounts mhsa_core_ops(std::int64_t n, std::int64_t m, std::int64_t dq, std::int64_t dv,
                       std::int64_t heads, bool causal) {
    const std::int64_t pairs = causal ? heads * (n * (n + 1) / 2) : heads * n * m;
    OpCounts c;
    c.mac = u64(n * dq + pairs * (dq / heads) + pairs * (dv / heads) + n * dv);
    c.cmp = u64(pairs);  // row maxima
    c.exp = u64(pairs);
    c.ac = u64(2 * pairs);   // subtract the maximum, sum the row
    c.div = u64(heads * n);  // one reciprocal per row
    return c;
}

// ----- LayerNorm -----

void layer_norm(const MatR& x, const RowVec& gamma, const RowVec& beta, float eps, MatR& y) {
    y.resize(x.rows(), x.cols());
    const float w = static_cast<float>(x.cols());
    for (std::int64_t i = 0; i < x.rows(); ++i) {
        const float mean = x.row(i).sum() / w;
        auto c = (x.row(i).array() - mean);
        const float var = c.square().sum() / w;
        const float r = 1.0f / std::sqrt(var + eps);
        y.row(i) = (c * r * gamma.array() + beta.array()).matrix();
    }
}

OpCounts layer_norm_ops(std::int64_t n, std::int64_t w) {
    OpCounts c;
    c.ac = u64(3 * n * w);   // mean sum, centring, + beta
    c.mac = u64(3 * n * w);  // square-sum, * rstd, * gamma
    c.div = u64(n);          // 1/sqrt(var + eps)
    c.weight_read_bytes = u64(8 * w);
    return c;
}

// ----- CAT mixing -----

void ConvWork::ensure(std::int64_t len) {
    if (L == len) return;
    L = len;
    plan = std::make_unique<RealFft>(len);
    conv = ChannelConvolver::supports(len) ? std::make_unique<ChannelConvolver>(len) : nullptr;
    pad.assign(static_cast<std::size_t>(len), 0.0f);
    out.resize(static_cast<std::size_t>(len));
    zf.resize(static_cast<std::size_t>(plan->spectrum_size()));
    vf.resize(zf.size());
}

namespace {

// The spectrum of the kernel z (n values, zero-padded to L) scaled by 1/L (the inverse
// transform is unscaled), into w.zf and, for power-of-two L, the batched kernel.
void kernel_spectrum(ConvWork& w, const float* z, std::int64_t n) {
    RealFft& plan = *w.plan;
    const std::int64_t L = plan.size();
    std::fill(w.pad.begin(), w.pad.end(), 0.0f);
    std::copy(z, z + n, w.pad.begin());
    plan.forward(w.pad.data(), w.zf.data());
    const float inv_l = 1.0f / static_cast<float>(L);
    for (auto& s : w.zf) s *= inv_l;
    if (w.conv) w.conv->set_kernel(w.zf.data());
}

// Convolves every channel of v with the kernel set by kernel_spectrum through a real FFT of
// length L: circular when L == n, linear (first n outputs) when L >= 2n - 1. Sample j of
// channel c sits at v[j * sj + c * sc] (and y likewise; y may be v): column-major [n, c] is
// sj = 1, sc = n; row-major with leading dimension ld is sj = ld, sc = 1. Power-of-two lengths
// take the batched eight-lane kernel; other lengths one FFTW pass (RealFft) per channel.
void convolve_channels(ConvWork& w, const float* v, float* y, std::int64_t n, std::int64_t channels,
                       std::int64_t sj, std::int64_t sc) {
    if (w.conv) {
        if (sj == 1)
            w.conv->convolve(w.zf.data(), v, y, n, channels);
        else
            w.conv->convolve_rows(v, y, sj, n, channels);
        return;
    }
    RealFft& plan = *w.plan;
    const std::int64_t H = plan.spectrum_size();
    std::vector<float>& pad = w.pad;  // [n, L) stays zero from kernel_spectrum
    for (std::int64_t c = 0; c < channels; ++c) {
        for (std::int64_t j = 0; j < n; ++j) pad[j] = v[j * sj + c * sc];
        plan.forward(pad.data(), w.vf.data());
        for (std::int64_t k = 0; k < H; ++k) w.vf[k] *= w.zf[k];
        plan.inverse(w.vf.data(), w.out.data());
        for (std::int64_t j = 0; j < n; ++j) y[j * sj + c * sc] = w.out[j];
    }
}

}  // namespace

void circular_convolve(const float* z, const float* v, float* y, std::int64_t n,
                       std::int64_t channels) {
    ConvWork w;
    w.ensure(n);
    kernel_spectrum(w, z, n);
    convolve_channels(w, v, y, n, channels, 1, n);
}

std::int64_t causal_fft_length(std::int64_t n) {
    return next_fast_length(2 * n - 1);
}

void causal_convolve(const float* z, const float* v, float* y, std::int64_t n,
                     std::int64_t channels) {
    ConvWork w;
    w.ensure(causal_fft_length(n));
    kernel_spectrum(w, z, n);
    convolve_channels(w, v, y, n, channels, 1, n);
}

void convolve_heads(const MatR& zs, GroupMatrix& V, std::int64_t channels, bool causal,
                    bool parallel, ScratchPool<ConvWork>& work) {
    const std::int64_t n = V.rows(), H = zs.cols(), c = channels / H;
    const std::int64_t L = causal ? causal_fft_length(n) : n;
    // Pieces of one head within one group: a whole group (16 channels of one head) is
    // transformed in place; heads that do not fill whole groups go through the row-major path,
    // a group's rows being 16 floats apart.
    struct Piece {
        std::int64_t head, first, count;
    };
    std::vector<Piece> pieces;
    for (std::int64_t h = 0; h < H; ++h)
        for (std::int64_t ch = h * c; ch < (h + 1) * c;) {
            const std::int64_t end = std::min((h + 1) * c, (ch / 16 + 1) * 16);
            pieces.push_back({h, ch, end - ch});
            ch = end;
        }
    for_range(static_cast<std::int64_t>(pieces.size()), 1, parallel,
              [&](std::int64_t b, std::int64_t e) {
                  auto w = work.acquire();
                  w->ensure(L);
                  std::int64_t head = -1;
                  for (std::int64_t t = b; t < e; ++t) {
                      const Piece& pc = pieces[static_cast<std::size_t>(t)];
                      if (pc.head != head) {
                          head = pc.head;
                          w->z = zs.col(head);
                          kernel_spectrum(*w, w->z.data(), n);
                      }
                      float* base = V.group(pc.first / 16) + pc.first % 16;
                      if (w->conv && pc.count == 16)
                          w->conv->convolve_group(base, n);
                      else
                          convolve_channels(*w, base, base, n, pc.count, 16, 1);
                  }
              });
}

// ----- Primal-Attention and time embeddings -----

std::vector<std::int64_t> primal_sample_indices(std::int64_t n, std::int64_t m) {
    std::vector<std::int64_t> idx;
    if (n <= m) {
        for (std::int64_t i = 0; i < n; ++i) idx.push_back(i);
        return idx;
    }
    // torch.linspace(0, n-1, m, dtype=int) truncates: floor for these non-negative values.
    for (std::int64_t k = 0; k < m; ++k) {
        const double v = m == 1 ? 0.0
                                : static_cast<double>(k) * static_cast<double>(n - 1) /
                                      static_cast<double>(m - 1);
        idx.push_back(static_cast<std::int64_t>(std::floor(v + 1e-9)));
    }
    return idx;
}

void bochner_embed(const float* omega_sin, const float* omega_cos, const float* beta,
                   std::int64_t d, float t, float* out) {
    for (std::int64_t i = 0; i < d; ++i) {
        out[i] = beta[i] * static_cast<float>(std::sin(static_cast<double>(omega_sin[i]) * t));
        out[d + i] =
            beta[d + i] * static_cast<float>(std::cos(static_cast<double>(omega_cos[i]) * t));
    }
}

void mercer_embed(const float* omega, const float* basis, const float* bias, std::int64_t dt,
                  std::int64_t k, float t, float* out) {
    for (std::int64_t i = 0; i < dt; ++i) {
        double acc = bias ? bias[i] : 0.0;
        const float* c = basis + i * 2 * k;
        for (std::int64_t j = 1; j <= k; ++j) {
            const double a = static_cast<double>(j) * omega[i] * t;
            acc += c[j - 1] * std::sin(a) + c[k + j - 1] * std::cos(a);
        }
        out[i] = static_cast<float>(acc);
    }
}

std::vector<float> mercer_default_omega(std::int64_t dt) {
    std::vector<float> w(static_cast<std::size_t>(dt));
    for (std::int64_t i = 0; i < dt; ++i) {
        const double theta =
            dt == 1 ? 0.0 : 8.0 * static_cast<double>(i) / static_cast<double>(dt - 1);
        w[i] = static_cast<float>(std::pow(10.0, -theta));
    }
    return w;
}

// ----- forward -----

void Attention::forward(const float* x, const float* t, std::int64_t n, float* y, OpCounts* ops,
                        bool parallel) const {
    if (!run_direct(x, t, n, y, parallel)) {
        MatR X = Eigen::Map<const MatR>(x, n, in_dim_);
        MatR Y;
        run(X, t, Y, parallel);
        Eigen::Map<MatR>(y, n, out_dim_) = Y;
    }
    if (ops) *ops += op_counts(n);
}

}  // namespace ternion::ann
