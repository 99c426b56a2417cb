#include "attention/spiking_attention.hpp"

#include "sim/event_cost.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace ternion {

using spiking::LifParams;
using spiking::Projection;
using spiking::TsnParams;

namespace {

std::size_t sz(std::int64_t n) {
    return static_cast<std::size_t>(n);
}

// Dense reference of one head's score matrix S = Q_h K_h^T over token-major [N, D] spike
// tensors (head channels c0 .. c0 + dh): shared by SSA's and BSA's dense engines.
template <class T>
void dense_scores(const T* q, const T* k, std::int64_t N, std::int64_t D, std::int64_t c0,
                  std::int64_t dh, std::int32_t* S) {
    for (std::int64_t i = 0; i < N; ++i)
        for (std::int64_t j = 0; j < N; ++j) {
            std::int32_t a = 0;
            for (std::int64_t c = 0; c < dh; ++c)
                a += static_cast<std::int32_t>(q[sz(i * D + c0 + c)] * k[sz(j * D + c0 + c)]);
            S[i * N + j] = a;
        }
}

// Multi-word bit masks, word w at m[w * stride] (stride 1: contiguous; SSA's token masks are
// word-major, one channel's words dh apart).
// Calls f(bit index) for every set bit, ascending.
template <class F>
void for_bits(const std::uint64_t* m, std::int64_t words, F&& f, std::int64_t stride = 1) {
    for (std::int64_t w = 0; w < words; ++w)
        for (std::uint64_t b = m[w * stride]; b; b &= b - 1) f(w * 64 + std::countr_zero(b));
}
bool any_and(const std::uint64_t* a, const std::uint64_t* b, std::int64_t words,
             std::int64_t stride = 1) {
    for (std::int64_t w = 0; w < words; ++w)
        if (a[w * stride] & b[w * stride]) return true;
    return false;
}
std::uint64_t popcount(const std::uint64_t* a, std::int64_t words, std::int64_t stride = 1) {
    std::uint64_t c = 0;
    for (std::int64_t w = 0; w < words; ++w)
        c += static_cast<std::uint64_t>(std::popcount(a[w * stride]));
    return c;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Shared part

SpikingAttentionNode::SpikingAttentionNode(std::string name, std::string type, Projection q,
                                           Projection k, Projection v, std::int64_t heads)
    : Node(std::move(name), std::move(type)), heads_(heads) {
    dim_in_ = q.in();
    dim_ = q.out();
    head_dim_ = heads_ > 0 ? dim_ / heads_ : 0;
    proj_params_ = 3 * (q.weight_count() + static_cast<std::uint64_t>(dim_));
    qkv_ = Projection::concat({&q, &k, &v});
    proj_nnz_ = qkv_.nonzero_weights();
}

void SpikingAttentionNode::bind(const Shape& in_shape) {
    if (in_shape.size() != 2 || in_shape[1] != dim_in_)
        fail("", "input shape " + shape_str(in_shape) + " does not fit: expected [tokens, " +
                     std::to_string(dim_in_) + "] (the q_weight columns)");
    if (in_shape[0] < 1) fail("", "needs at least one token");
    in_shape_ = in_shape;
    tokens_ = in_shape[0];
    out_shape_ = {tokens_, dim_};
}

std::uint64_t SpikingAttentionNode::dense_macs_per_step() const {
    const auto n = static_cast<std::uint64_t>(tokens_), d = static_cast<std::uint64_t>(dim_);
    return 3 * n * static_cast<std::uint64_t>(dim_in_) * d + 2 * n * n * d;
}
std::uint64_t SpikingAttentionNode::dense_synops_per_step() const {
    return 3 * static_cast<std::uint64_t>(tokens_ * dim_in_ * dim_);
}
std::uint64_t SpikingAttentionNode::param_count() const {
    return proj_params_;
}
double SpikingAttentionNode::weight_density() const {
    const double total = double(qkv_.weight_count());
    return total > 0 ? double(proj_nnz_) / total : -1.0;
}
std::vector<std::pair<std::string, double>> SpikingAttentionNode::attributes() const {
    return {{"tokens", double(tokens_)},
            {"dim", double(dim_)},
            {"heads", double(heads_)},
            {"head_dim", double(head_dim_)},
            {"dim_in", double(dim_in_)}};
}
std::optional<AttentionShape> SpikingAttentionNode::attention_shape() const {
    AttentionShape a;
    a.tokens = tokens_;
    a.dim = dim_;
    a.heads = heads_;
    a.dim_in = dim_in_;
    a.proj_dense_macs_per_step = 3 * static_cast<std::uint64_t>(tokens_ * dim_in_ * dim_);
    return a;
}
ModuleShape SpikingAttentionNode::module_shape() const {
    const auto nd = static_cast<std::uint64_t>(tokens_ * dim_);
    ModuleShape m;
    m.bias_ops_per_step = static_cast<std::uint64_t>(biased_) * static_cast<std::uint64_t>(dim_);
    m.batchnorm_elems_per_step = static_cast<std::uint64_t>(normalised_) * nd;
    m.neuron_elems_per_step = neurons_per_step();
    return m;
}
std::uint64_t SsaNode::neurons_per_step() const {
    return 4 * static_cast<std::uint64_t>(tokens_ * dim_);  // Q, K, V and attention LIFs
}
std::uint64_t SdsaNode::neurons_per_step() const {
    return 3 * static_cast<std::uint64_t>(tokens_ * dim_) + static_cast<std::uint64_t>(dim_);
}
std::uint64_t BsaNode::neurons_per_step() const {
    return 3 * static_cast<std::uint64_t>(tokens_ * dim_);  // Q, K and output TSNs
}
std::vector<std::pair<std::string, std::string>> SpikingAttentionNode::summary() const {
    return {{"tokens", std::to_string(tokens_)},
            {"dim", std::to_string(dim_)},
            {"heads", std::to_string(heads_)},
            {"dim_in", std::to_string(dim_in_)}};
}
bool SpikingAttentionNode::membrane(const NodeState* state, std::vector<float>& out) const {
    auto* s = dynamic_cast<const State*>(state);
    if (!s) return false;
    out = s->hout;
    return true;
}

bool SpikingAttentionNode::attention_maps(const NodeState* state, AttentionMaps& out) const {
    auto* s = dynamic_cast<const State*>(state);
    if (!s || !s->att_kept) return false;
    out.heads = heads_;
    out.rows = out.cols = tokens_;
    out.scores = s->att_scores;
    out.weights = s->att_weights;
    return true;
}

std::unique_ptr<SpikingAttentionNode::State> SpikingAttentionNode::make_common_state() const {
    auto s = std::make_unique<State>();
    const auto nd = sz(tokens_ * dim_);
    s->proj.assign(sz(tokens_ * 3 * dim_), 0.0f);
    s->hq.assign(nd, 0.0f);
    s->hk.assign(nd, 0.0f);
    s->hv.assign(nd, 0.0f);
    s->hout.assign(nd, 0.0f);
    s->q.assign(nd, 0.0f);
    s->k.assign(nd, 0.0f);
    s->v.assign(nd, 0.0f);
    s->y.assign(nd, 0.0f);
    return s;
}

bool SpikingAttentionNode::reset_state(NodeState* state) const {
    auto& s = *static_cast<State*>(state);
    for (auto* h : {&s.hq, &s.hk, &s.hv, &s.hout}) std::fill(h->begin(), h->end(), 0.0f);
    s.att_kept = false;
    return true;
}

void SpikingAttentionNode::project(const Activity& in, State& s, const StepContext& ctx) const {
    if (ctx.engine == Engine::event)
        qkv_.apply_event(in.values.data(), in.active, tokens_, s.proj.data(), in.ternary);
    else
        qkv_.apply_dense(in.values.data(), tokens_, s.proj.data());
    if (!ctx.ops || !ctx.count_ops) return;
    // The core's event-cost rule, with the projection's fan-out per input channel.
    const EventCost c = event_cost(
        in.active.size(), in.ternary,
        [&](std::size_t k) {
            return qkv_.row_nnz(static_cast<std::int64_t>(in.active[k]) % dim_in_);
        },
        [&](std::size_t k) { return in.values[in.active[k]]; });
    book_event_cost(c, in.ternary, sizeof(float), ctx);
    AttentionCounts& att = counts(ctx);
    att.proj_ac += c.ac;
    att.proj_mac += c.mac;
}

std::uint64_t SpikingAttentionNode::emit(const std::vector<float>& vals, Activity& out) {
    // Every value, then the non-zero ones by vector compression: no branch per neuron. The
    // values are spikes, so no ternarity check.
    std::copy(vals.begin(), vals.end(), out.values.begin());
    out.active.resize(vals.size());
    const float* v = out.values.data();
    out.active.resize(collect_indices(
        0, static_cast<std::int64_t>(vals.size()), [v](std::int64_t i) { return v[i] != 0.0f; },
        out.active.data()));
    out.ternary = true;
    out.all_ones = false;
    return out.active.size();
}

void SpikingAttentionNode::book_spikes(const StepContext& ctx, std::uint64_t spikes) {
    if (!ctx.ops) return;
    ctx.ops->spikes_out += spikes;
    // One address event per emitted spike, as the neuron nodes book it.
    ctx.ops->spike_write_bytes += spikes * sizeof(std::uint32_t);
}

void SpikingAttentionNode::book_neurons(const StepContext& ctx, std::uint64_t neurons) {
    if (!ctx.ops) return;
    ctx.ops->neuron_update += neurons;
    ctx.ops->cmp += neurons;
    ctx.ops->state_read_bytes += 4 * neurons;
    ctx.ops->state_write_bytes += 4 * neurons;
}

// ---------------------------------------------------------------------------------------------
// SSA: Q, K, V = LIF(proj(x)); out = LIF_attn(Q K^T V * scale), per head.

SsaNode::SsaNode(std::string name, Projection q, Projection k, Projection v, std::int64_t heads,
                 LifParams qkv_lif, LifParams attn_lif, float scale, SsaAssociation assoc)
    : SpikingAttentionNode(std::move(name), "ternion.SSA", std::move(q), std::move(k), std::move(v),
                           heads),
      lif_(qkv_lif),
      attn_(attn_lif),
      scale_(scale),
      assoc_(assoc) {}

std::unique_ptr<NodeState> SsaNode::make_state() const {
    auto s = make_common_state();
    const std::int64_t W = (head_dim_ + 63) / 64, NW = (tokens_ + 63) / 64;
    s->qm.assign(sz(tokens_ * W), 0);
    s->km.assign(sz(tokens_ * W), 0);
    s->vm.assign(sz(tokens_ * W), 0);
    s->kt.assign(sz(head_dim_ * NW), 0);
    s->vt.assign(sz(head_dim_ * NW), 0);
    s->qt.assign(sz(head_dim_ * NW), 0);
    s->vcount.assign(sz(tokens_), 0);
    s->s.assign(sz(std::max(tokens_ * tokens_, head_dim_ * head_dim_)), 0);
    s->yi.assign(sz(tokens_ * head_dim_), 0);
    s->cnt.assign(sz(2 * head_dim_), 0);
    return s;
}

std::vector<std::pair<std::string, double>> SsaNode::attributes() const {
    auto a = SpikingAttentionNode::attributes();
    a.emplace_back("scale", double(scale_));
    return a;
}

void SsaNode::step(const Activity& in, NodeState* state, Activity& out,
                   const StepContext& ctx) const {
    auto& s = *static_cast<State*>(state);
    const std::int64_t N = tokens_, D = dim_, H = heads_, dh = head_dim_;
    project(in, s, ctx);
    std::uint64_t nq = 0, nk = 0, nv = 0;
    for (std::int64_t n = 0; n < N; ++n) {
        const float* p = s.proj.data() + n * 3 * D;
        spiking::lif_row(&s.hq[sz(n * D)], p, &s.q[sz(n * D)], D, lif_);
        spiking::lif_row(&s.hk[sz(n * D)], p + D, &s.k[sz(n * D)], D, lif_);
        spiking::lif_row(&s.hv[sz(n * D)], p + 2 * D, &s.v[sz(n * D)], D, lif_);
    }
    for (std::size_t i = 0; i < s.q.size(); ++i) {
        nq += s.q[i] != 0.0f;
        nk += s.k[i] != 0.0f;
        nv += s.v[i] != 0.0f;
    }
    book_neurons(ctx, 3 * sz(N * D));
    AttentionCounts& att = counts(ctx);
    att.q_spikes += nq;
    att.k_spikes += nk;
    att.v_spikes += nv;

    const std::int64_t W = (dh + 63) / 64, NW = (N + 63) / 64;
    std::uint64_t acs = 0;
    s.att_kept = ctx.keep_attention;
    if (s.att_kept) {
        s.att_scores.assign(sz(H * N * N), 0.0f);
        s.att_weights.assign(sz(H * N * N), 0.0f);
    }
    for (std::int64_t h = 0; h < H; ++h) {
        const std::int64_t c0 = h * dh;
        // Bit masks: the channels of each token (rows, W words each) and the tokens of each
        // channel (columns, word-major: word w of channel c at [w * dh + c], so that one token
        // updates dh consecutive words). Both are built from contiguous runs of the head's
        // channels, in loops without a branch the compiler can vectorise: spikes fire at
        // 20-35 %, where a branch per test mispredicts often.
        std::fill(s.kt.begin(), s.kt.end(), 0);
        std::fill(s.vt.begin(), s.vt.end(), 0);
        std::fill(s.qt.begin(), s.qt.end(), 0);
        std::uint64_t qk1 = 0, qk2 = 0, kv1 = 0, kv2 = 0;
        for (std::int64_t n = 0; n < N; ++n) {
            const float* qn = &s.q[sz(n * D + c0)];
            const float* kn = &s.k[sz(n * D + c0)];
            const float* vn = &s.v[sz(n * D + c0)];
            for (std::int64_t w = 0; w < W; ++w) {
                const std::int64_t cb = 64 * w, ce = std::min(dh, cb + 64);
                std::uint64_t mq = 0, mk = 0, mv = 0;
                for (std::int64_t c = cb; c < ce; ++c) {
                    mq |= std::uint64_t{qn[c] != 0.0f} << (c - cb);
                    mk |= std::uint64_t{kn[c] != 0.0f} << (c - cb);
                    mv |= std::uint64_t{vn[c] != 0.0f} << (c - cb);
                }
                s.qm[sz(n * W + w)] = mq;
                s.km[sz(n * W + w)] = mk;
                s.vm[sz(n * W + w)] = mv;
            }
            const int bit = static_cast<int>(n % 64);
            std::uint64_t* qt = &s.qt[sz(n / 64 * dh)];
            std::uint64_t* kt = &s.kt[sz(n / 64 * dh)];
            std::uint64_t* vt = &s.vt[sz(n / 64 * dh)];
            for (std::int64_t c = 0; c < dh; ++c) {
                qt[c] |= std::uint64_t{qn[c] != 0.0f} << bit;
                kt[c] |= std::uint64_t{kn[c] != 0.0f} << bit;
                vt[c] |= std::uint64_t{vn[c] != 0.0f} << bit;
            }
        }
        // Query spikes per channel (s.cnt), key spikes per channel (kcnt).
        std::uint32_t* kcnt = s.cnt.data() + dh;
        for (std::int64_t c = 0; c < dh; ++c) {
            s.cnt[sz(c)] = static_cast<std::uint32_t>(popcount(&s.qt[sz(c)], NW, dh));
            kcnt[c] = static_cast<std::uint32_t>(popcount(&s.kt[sz(c)], NW, dh));
        }
        if (s.att_kept)  // for traces: Q.K^T counts of this head, and times the scale
            for (std::int64_t i = 0; i < N; ++i)
                for (std::int64_t j = 0; j < N; ++j) {
                    std::uint64_t c = 0;
                    for (std::int64_t w = 0; w < W; ++w)
                        c += static_cast<std::uint64_t>(
                            std::popcount(s.qm[sz(i * W + w)] & s.km[sz(j * W + w)]));
                    s.att_scores[sz((h * N + i) * N + j)] = static_cast<float>(c);
                    s.att_weights[sz((h * N + i) * N + j)] = static_cast<float>(c) * scale_;
                }
        // Accumulates of each association for these spikes.
        for (std::int64_t c = 0; c < dh; ++c) qk1 += std::uint64_t{s.cnt[sz(c)]} * kcnt[c];
        std::uint64_t* vcount = s.vcount.data();
        for (std::int64_t j = 0; j < N; ++j) {
            vcount[j] = popcount(&s.vm[sz(j * W)], W);
            kv1 += popcount(&s.km[sz(j * W)], W) * vcount[j];
        }
        for (std::int64_t i = 0; i < N; ++i) {
            if (!popcount(&s.qm[sz(i * W)], W)) continue;
            if (W == 1) {  // one word per token: branch-free, vectorisable
                const std::uint64_t qi = s.qm[sz(i)];
                for (std::int64_t j = 0; j < N; ++j) qk2 += (qi & s.km[sz(j)]) != 0 ? vcount[j] : 0;
                continue;
            }
            for (std::int64_t j = 0; j < N; ++j)
                if (vcount[j] && any_and(&s.qm[sz(i * W)], &s.km[sz(j * W)], W)) qk2 += vcount[j];
        }
        for (std::int64_t c = 0; c < dh; ++c) {
            if (!s.cnt[sz(c)]) continue;
            std::uint64_t row = 0;
            if (NW == 1) {
                const std::uint64_t kc = s.kt[sz(c)];
                for (std::int64_t c2 = 0; c2 < dh; ++c2) row += (kc & s.vt[sz(c2)]) != 0;
            } else {
                for (std::int64_t c2 = 0; c2 < dh; ++c2)
                    row += any_and(&s.kt[sz(c)], &s.vt[sz(c2)], NW, dh) ? 1 : 0;
            }
            kv2 += std::uint64_t{s.cnt[sz(c)]} * row;
        }
        const bool qk_first = assoc_ == SsaAssociation::qk_first ||
                              (assoc_ == SsaAssociation::automatic && qk1 + qk2 <= kv1 + kv2);
        acs += qk_first ? qk1 + qk2 : kv1 + kv2;
        att.score_ac += qk_first ? qk1 : kv1;
        att.mix_ac += qk_first ? qk2 : kv2;
        (qk_first ? att.qk_first_heads : att.kv_first_heads) += 1;

        // The product itself: small integers, identical for both associations and engines.
        std::int32_t* S = s.s.data();
        std::int32_t* Y = s.yi.data();
        std::fill(s.yi.begin(), s.yi.end(), 0);
        if (ctx.engine == Engine::dense) {
            dense_scores(s.q.data(), s.k.data(), N, D, c0, dh, S);
            for (std::int64_t i = 0; i < N; ++i)
                for (std::int64_t j = 0; j < N; ++j)
                    for (std::int64_t c = 0; c < dh; ++c)
                        Y[i * dh + c] +=
                            S[i * N + j] * static_cast<std::int32_t>(s.v[sz(j * D + c0 + c)]);
        } else if (qk_first) {
            std::fill(S, S + N * N, 0);
            for (std::int64_t i = 0; i < N; ++i)
                for_bits(&s.qm[sz(i * W)], W, [&](std::int64_t c) {
                    for_bits(
                        &s.kt[sz(c)], NW, [&](std::int64_t j) { ++S[i * N + j]; }, dh);
                });
            for (std::int64_t i = 0; i < N; ++i)
                for (std::int64_t j = 0; j < N; ++j)
                    if (const std::int32_t a = S[i * N + j])
                        for_bits(&s.vm[sz(j * W)], W, [&](std::int64_t c) { Y[i * dh + c] += a; });
        } else {
            std::fill(S, S + dh * dh, 0);
            for (std::int64_t j = 0; j < N; ++j)
                for_bits(&s.km[sz(j * W)], W, [&](std::int64_t c) {
                    for_bits(&s.vm[sz(j * W)], W, [&](std::int64_t c2) { ++S[c * dh + c2]; });
                });
            for (std::int64_t i = 0; i < N; ++i)
                for_bits(&s.qm[sz(i * W)], W, [&](std::int64_t c) {
                    for (std::int64_t c2 = 0; c2 < dh; ++c2) Y[i * dh + c2] += S[c * dh + c2];
                });
        }
        for (std::int64_t i = 0; i < N; ++i)
            for (std::int64_t c = 0; c < dh; ++c)
                s.y[sz(i * D + c0 + c)] = static_cast<float>(Y[i * dh + c]) * scale_;
    }
    if (ctx.ops) ctx.ops->ac += acs;

    // Attention LIF; the scale is a power of two folded into its threshold in hardware terms,
    // so it is not counted as an operation (docs/bsa.md).
    for (std::size_t i = 0; i < s.y.size(); ++i)
        s.y[i] = spiking::lif_step(s.hout[i], s.y[i], attn_);
    book_neurons(ctx, sz(N * D));
    const auto spikes = emit(s.y, out);
    book_spikes(ctx, spikes);
}

// ---------------------------------------------------------------------------------------------
// SDSA: Q, K, V = LIF(proj(x)); mask = LIF_attn(sum over tokens of Q (.) K); out = mask (.) V.

SdsaNode::SdsaNode(std::string name, Projection q, Projection k, Projection v, std::int64_t heads,
                   LifParams qkv_lif, LifParams attn_lif, SdsaForm form)
    : SpikingAttentionNode(std::move(name), "ternion.SDSA", std::move(q), std::move(k),
                           std::move(v), heads),
      lif_(qkv_lif),
      attn_(attn_lif),
      form_(form) {}

std::unique_ptr<NodeState> SdsaNode::make_state() const {
    auto s = make_common_state();
    s->hout.assign(sz(dim_), 0.0f);  // one mask neuron per channel
    s->yi.assign(sz(dim_), 0);
    return s;
}

bool SdsaNode::membrane(const NodeState* state, std::vector<float>& out) const {
    return SpikingAttentionNode::membrane(state, out);
}

void SdsaNode::step(const Activity& in, NodeState* state, Activity& out,
                    const StepContext& ctx) const {
    auto& s = *static_cast<State*>(state);
    project(in, s, ctx);
    fire_qkv(s, ctx);
    // The paper's form sums Q (.) K and masks V; the official code's sums K (.) V and masks Q.
    const bool kv = form_ == SdsaForm::kv_first;
    const std::uint64_t pairs = column_coincidences(kv ? s.k : s.q, kv ? s.v : s.k, s, ctx);
    if (ctx.ops) ctx.ops->ac += pairs;
    counts(ctx).score_ac += pairs;
    mask_channels(kv ? s.q : s.v, s, ctx);
    const auto spikes = emit(s.y, out);
    book_spikes(ctx, spikes);
}

void SdsaNode::fire_qkv(State& s, const StepContext& ctx) const {
    const std::int64_t N = tokens_, D = dim_;
    std::uint64_t nq = 0, nk = 0, nv = 0;
    for (std::int64_t n = 0; n < N; ++n) {
        const float* p = s.proj.data() + n * 3 * D;
        for (std::int64_t c = 0; c < D; ++c) {
            const auto i = sz(n * D + c);
            s.q[i] = spiking::lif_step(s.hq[i], p[c], lif_);
            s.k[i] = spiking::lif_step(s.hk[i], p[D + c], lif_);
            s.v[i] = spiking::lif_step(s.hv[i], p[2 * D + c], lif_);
            nq += s.q[i] != 0.0f;
            nk += s.k[i] != 0.0f;
            nv += s.v[i] != 0.0f;
        }
    }
    book_neurons(ctx, 3 * sz(N * D) + sz(D));
    AttentionCounts& att = counts(ctx);
    att.q_spikes += nq;
    att.k_spikes += nk;
    att.v_spikes += nv;
}

std::uint64_t SdsaNode::column_coincidences(const std::vector<float>& a,
                                            const std::vector<float>& b, State& s,
                                            const StepContext& ctx) const {
    // Column sum of the Hadamard product: only coincident spikes add (event form); the dense
    // form adds every product, zeros included: the same integers.
    const std::int64_t N = tokens_, D = dim_;
    std::fill(s.yi.begin(), s.yi.end(), 0);
    std::uint64_t both = 0;
    for (std::int64_t n = 0; n < N; ++n)
        for (std::int64_t c = 0; c < D; ++c) {
            const float x = a[sz(n * D + c)], y = b[sz(n * D + c)];
            if (ctx.engine == Engine::dense)
                s.yi[sz(c)] += static_cast<std::int32_t>(x * y);
            else if (x != 0.0f && y != 0.0f)
                ++s.yi[sz(c)];
            both += (x != 0.0f && y != 0.0f);
        }
    return both;
}

void SdsaNode::mask_channels(const std::vector<float>& gated, State& s,
                             const StepContext& ctx) const {
    // One mask neuron per channel; the mask is a selection, not arithmetic (not counted).
    const std::int64_t N = tokens_, D = dim_;
    std::uint64_t open = 0;
    for (std::int64_t c = 0; c < D; ++c) {
        const float m = spiking::lif_step(s.hout[sz(c)], static_cast<float>(s.yi[sz(c)]), attn_);
        s.yi[sz(c)] = m != 0.0f;
        open += m != 0.0f;
    }
    counts(ctx).mask_channels += open;
    for (std::int64_t n = 0; n < N; ++n)
        for (std::int64_t c = 0; c < D; ++c)
            s.y[sz(n * D + c)] = s.yi[sz(c)] ? gated[sz(n * D + c)] : 0.0f;
}

// ---------------------------------------------------------------------------------------------
// BSA: Q, K = TSN(proj(x)) ternary; V = proj(x) analog; out = TSN(Shiftmax(Q K^T) |> V).

BsaNode::BsaNode(std::string name, Projection q, Projection k, Projection v, std::int64_t heads,
                 TsnParams qk, TsnParams outp)
    : SpikingAttentionNode(std::move(name), "ternion.BSA", std::move(q), std::move(k), std::move(v),
                           heads),
      qk_(qk),
      out_(outp) {}

std::unique_ptr<NodeState> BsaNode::make_state() const {
    auto s = make_common_state();
    s->s.assign(sz(tokens_ * tokens_), 0);
    s->expo.assign(sz(tokens_ * tokens_), 0);
    s->cnt.assign(sz(tokens_ * head_dim_ * 2 + head_dim_ * 2 + 2), 0);
    return s;
}

void BsaNode::step(const Activity& in, NodeState* state, Activity& out,
                   const StepContext& ctx) const {
    auto& s = *static_cast<State*>(state);
    const std::int64_t N = tokens_, D = dim_, H = heads_, dh = head_dim_;
    project(in, s, ctx);
    std::uint64_t nq = 0, nk = 0, nqn = 0, nkn = 0;
    for (std::int64_t n = 0; n < N; ++n) {
        const float* p = s.proj.data() + n * 3 * D;
        for (std::int64_t c = 0; c < D; ++c) {
            const auto i = sz(n * D + c);
            s.q[i] = spiking::tsn_step(s.hq[i], p[c], qk_);
            s.k[i] = spiking::tsn_step(s.hk[i], p[D + c], qk_);
            s.v[i] = p[2 * D + c];  // V stays a membrane potential
            nq += s.q[i] != 0.0f;
            nk += s.k[i] != 0.0f;
            nqn += s.q[i] < 0.0f;
            nkn += s.k[i] < 0.0f;
        }
    }
    book_neurons(ctx, 2 * sz(N * D));
    AttentionCounts& att = counts(ctx);
    att.q_spikes += nq;
    att.k_spikes += nk;
    att.q_neg_spikes += nqn;
    att.k_neg_spikes += nkn;

    std::uint64_t tmp = 0;
    std::int32_t* S = s.s.data();
    s.att_kept = ctx.keep_attention;
    if (s.att_kept) {
        s.att_scores.assign(sz(H * N * N), 0.0f);
        s.att_weights.assign(sz(H * N * N), 0.0f);
    }
    // Per channel lists of the tokens with a non-zero query / key (CSR in s.cnt).
    std::uint32_t* qstart = s.cnt.data();
    std::uint32_t* kstart = qstart + dh + 1;
    std::uint32_t* qtok = kstart + dh + 1;
    std::uint32_t* ktok = qtok + N * dh;
    std::vector<float> row(sz(dh));
    for (std::int64_t h = 0; h < H; ++h) {
        const std::int64_t c0 = h * dh;
        std::fill(S, S + N * N, 0);
        if (ctx.engine == Engine::dense) {
            dense_scores(s.q.data(), s.k.data(), N, D, c0, dh, S);
            for (std::int64_t c = 0; c < dh; ++c) {
                std::uint64_t a = 0, b = 0;
                for (std::int64_t n = 0; n < N; ++n) {
                    a += s.q[sz(n * D + c0 + c)] != 0.0f;
                    b += s.k[sz(n * D + c0 + c)] != 0.0f;
                }
                tmp += a * b;
            }
        } else {
            std::uint32_t fq = 0, fk = 0;
            for (std::int64_t c = 0; c < dh; ++c) {
                qstart[c] = fq;
                kstart[c] = fk;
                for (std::int64_t n = 0; n < N; ++n) {
                    if (s.q[sz(n * D + c0 + c)] != 0.0f) qtok[fq++] = static_cast<std::uint32_t>(n);
                    if (s.k[sz(n * D + c0 + c)] != 0.0f) ktok[fk++] = static_cast<std::uint32_t>(n);
                }
            }
            qstart[dh] = fq;
            kstart[dh] = fk;
            // Ternary product: a (+-1, +-1) pair adds or subtracts one; zeros never reach here.
            for (std::int64_t c = 0; c < dh; ++c) {
                tmp += std::uint64_t{qstart[c + 1] - qstart[c]} * (kstart[c + 1] - kstart[c]);
                for (std::uint32_t a = qstart[c]; a < qstart[c + 1]; ++a) {
                    const std::int64_t i = qtok[a];
                    const bool qpos = s.q[sz(i * D + c0 + c)] > 0.0f;
                    std::int32_t* Si = S + i * N;
                    for (std::uint32_t b = kstart[c]; b < kstart[c + 1]; ++b) {
                        const std::int64_t j = ktok[b];
                        const bool kpos = s.k[sz(j * D + c0 + c)] > 0.0f;
                        Si[j] += qpos == kpos ? 1 : -1;
                    }
                }
            }
        }
        // Shiftmax per query row, then the shift-and-add product with V in ascending key
        // order: every weight is 2^-n, so each product is exact and only the additions round.
        for (std::int64_t i = 0; i < N; ++i) {
            std::int32_t* e = s.expo.data() + i * N;
            spiking::shiftmax_exponents(S + i * N, N, e);
            if (s.att_kept)  // for traces: integer scores and Shiftmax weights of this row
                for (std::int64_t j = 0; j < N; ++j) {
                    s.att_scores[sz((h * N + i) * N + j)] = static_cast<float>(S[i * N + j]);
                    s.att_weights[sz((h * N + i) * N + j)] = std::ldexp(1.0f, -e[j]);
                }
            std::fill(row.begin(), row.end(), 0.0f);
            for (std::int64_t j = 0; j < N; ++j) {
                const float w = std::ldexp(1.0f, -e[j]);
                const float* vj = s.v.data() + j * D + c0;
                for (std::int64_t c = 0; c < dh; ++c) row[sz(c)] += w * vj[c];
            }
            std::copy(row.begin(), row.end(), s.y.begin() + i * D + c0);
        }
    }
    {
        const auto n = static_cast<std::uint64_t>(N), d = static_cast<std::uint64_t>(dh),
                   h = static_cast<std::uint64_t>(H);
        // TMP accumulates; Shiftmax per row: n adds for the sum and n exponent subtractions,
        // n shifts, n comparisons (max search and leading-one detection); Shiftmax.V: one shift
        // and one add per (query, key, channel).
        att.score_ac += tmp;
        att.norm_ac += h * n * 2 * n;
        att.norm_shift += h * n * n;
        att.norm_cmp += h * n * n;
        att.mix_ac += h * n * n * d;
        att.mix_shift += h * n * n * d;
        if (ctx.ops) {
            ctx.ops->ac += tmp + h * (n * 2 * n + n * n * d);
            ctx.ops->shift += h * (n * n + n * n * d);
            ctx.ops->cmp += h * n * n;
        }
    }
    std::uint64_t neg = 0;
    for (std::size_t i = 0; i < s.y.size(); ++i) {
        s.y[i] = spiking::tsn_step(s.hout[i], s.y[i], out_);
        neg += s.y[i] < 0.0f;
    }
    book_neurons(ctx, sz(N * D));
    att.out_neg_spikes += neg;
    const auto spikes = emit(s.y, out);
    book_spikes(ctx, spikes);
}

}  // namespace ternion
