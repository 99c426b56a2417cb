// ternion.SSA, Spikformer's spiking self-attention: Q, K, V = LIF(proj(x));
// out = LIF_attn(Q K^T V * scale), per head. The product of binary spikes is evaluated on bit
// masks in whichever association needs fewer accumulates for the step's spikes.
#include <algorithm>
#include <bit>

#include "attention/spiking/spiking_attention.hpp"
#include "attention/spiking/spiking_attention_internal.hpp"
#include "sim/simd/simd.hpp"

namespace ternion {

using spiking_detail::sz;

namespace {

// Multi-word bit masks, word w at m[w * stride] (stride 1: contiguous; the column masks are
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

struct SsaNode::State : NodeState {
    Buffers b;
    std::vector<float> hq, hk, hv, hout;         // LIF membranes: Q, K, V and attention
    std::vector<std::int32_t> iq, ik, iv, iout;  // the same, integer form
    // Bit masks of one head's spikes: rows (token n's channels, W words at [n * W]) and
    // columns (channel c's tokens, word-major: word w at [w * dh + c]).
    std::vector<std::uint64_t> qm, km, vm, qt, kt, vt;
    std::vector<std::uint64_t> vcount;  // V spikes per token
    std::vector<std::uint32_t> cnt;     // Q spikes per channel, then K spikes per channel
    std::vector<std::int32_t> s;        // Q K^T [N][N] or K^T V [dh][dh] of one head
    std::vector<std::int32_t> yi;       // [N][dh] integer product of one head
    KeptMaps maps;
};

SsaNode::SsaNode(std::string name, Projection q, Projection k, Projection v, std::int64_t heads,
                 kernels::SjLif qkv_lif, kernels::SjLif attn_lif, float scale, SsaAssociation assoc)
    : SpikingAttentionNode(std::move(name), "ternion.SSA", std::move(q), std::move(k), std::move(v),
                           heads),
      lif_(qkv_lif),
      attn_(attn_lif),
      scale_(scale),
      assoc_(assoc) {
    closed_form_ = AttentionClosedForm::qkv_products;
    neurons_per_element_ = 4;  // Q, K, V and attention LIFs
}

SsaNode::SsaNode(std::string name, std::int64_t dim, std::int64_t heads, kernels::SjLif qkv_lif,
                 kernels::SjLif attn_lif, float scale, SsaAssociation assoc)
    : SpikingAttentionNode(std::move(name), "ternion.SSA", dim, heads),
      lif_(qkv_lif),
      attn_(attn_lif),
      scale_(scale),
      assoc_(assoc) {
    closed_form_ = AttentionClosedForm::qkv_products;
    neurons_per_element_ = 4;
}

std::unique_ptr<NodeState> SsaNode::make_state() const {
    auto s = std::make_unique<State>();
    const auto nd = sz(tokens_ * dim_);
    s->b = make_buffers();
    for (auto* h : {&s->hq, &s->hk, &s->hv, &s->hout}) h->assign(nd, 0.0f);
    if (fixed_)
        for (auto* h : {&s->iq, &s->ik, &s->iv, &s->iout}) h->assign(nd, 0);
    reset_state(s.get());
    const std::int64_t W = (head_dim_ + 63) / 64, NW = (tokens_ + 63) / 64;
    for (auto* m : {&s->qm, &s->km, &s->vm}) m->assign(sz(tokens_ * W), 0);
    for (auto* m : {&s->kt, &s->vt, &s->qt}) m->assign(sz(head_dim_ * NW), 0);
    s->vcount.assign(sz(tokens_), 0);
    s->s.assign(sz(std::max(tokens_ * tokens_, head_dim_ * head_dim_)), 0);
    s->yi.assign(sz(tokens_ * head_dim_), 0);
    s->cnt.assign(sz(2 * head_dim_), 0);
    return s;
}

bool SsaNode::reset_state(NodeState* state) const {
    auto& s = *static_cast<State*>(state);
    // Membranes start at v_reset, as SpikingJelly's (and a ternion.SJLIF's) do.
    for (auto* h : {&s.hq, &s.hk, &s.hv}) std::fill(h->begin(), h->end(), lif_.charge.v_reset);
    std::fill(s.hout.begin(), s.hout.end(), attn_.charge.v_reset);
    for (auto* h : {&s.iq, &s.ik, &s.iv, &s.iout}) std::fill(h->begin(), h->end(), 0);
    s.maps.kept = false;
    return true;
}

bool SsaNode::membrane(const NodeState* state, std::vector<float>& out) const {
    return fixed_ ? membrane_of(state, &State::iout, out) : membrane_of(state, &State::hout, out);
}

bool SsaNode::attention_maps(const NodeState* state, AttentionMaps& out) const {
    return maps_of<State>(state, out);
}

std::vector<std::pair<std::string, double>> SsaNode::attributes() const {
    auto a = SpikingAttentionNode::attributes();
    a.emplace_back("scale", double(scale_));
    return a;
}

void SsaNode::step(const Activity& in, NodeState* state, Activity& out,
                   const StepContext& ctx) const {
    auto& s = *static_cast<State*>(state);
    project(in, s.b, ctx);
    fire_qkv(s, ctx);
    start_maps(s.maps, ctx.keep_attention);
    AttentionCounts& att = counts(ctx);
    std::uint64_t acs = 0, over = 0;
    for (std::int64_t h = 0; h < heads_; ++h) {
        build_masks(s, h);
        if (s.maps.kept) keep_scores(s, h);
        const AssociationCost c = association_cost(s);
        const bool qk_first =
            assoc_ == SsaAssociation::qk_first ||
            (assoc_ == SsaAssociation::automatic && c.qk_score + c.qk_mix <= c.kv_score + c.kv_mix);
        acs += qk_first ? c.qk_score + c.qk_mix : c.kv_score + c.kv_mix;
        att.score_ac += qk_first ? c.qk_score : c.kv_score;
        att.mix_ac += qk_first ? c.qk_mix : c.kv_mix;
        (qk_first ? att.qk_first_heads : att.kv_first_heads) += 1;
        over += multiply_head(s, h, qk_first, ctx.engine);
    }
    if (ctx.ops) ctx.ops->ac += acs;
    book_overflows(ctx, over);
    fire_output(s, out, ctx);
}

void SsaNode::fire_qkv(State& s, const StepContext& ctx) const {
    if (fixed_) return fire_qkv_fixed(s.iq.data(), s.ik.data(), s.iv.data(), s.b, ctx);
    fire_qkv_lifs(lif_, s.hq.data(), s.hk.data(), s.hv.data(), s.b, ctx);
}

void SsaNode::build_masks(State& s, std::int64_t h) const {
    simd::at_level([&] {
        const std::int64_t N = tokens_, D = dim_, dh = head_dim_, c0 = h * dh;
        const std::int64_t W = (dh + 63) / 64, NW = (N + 63) / 64;
        // Both masks are built from contiguous runs of the head's channels, in loops without a
        // branch the compiler can vectorise: spikes fire at 20-35 %, where a branch per test
        // mispredicts often. Column words are word-major so that one token updates dh consecutive
        // words.
        std::fill(s.kt.begin(), s.kt.end(), 0);
        std::fill(s.vt.begin(), s.vt.end(), 0);
        std::fill(s.qt.begin(), s.qt.end(), 0);
        for (std::int64_t n = 0; n < N; ++n) {
            const float* qn = &s.b.q[sz(n * D + c0)];
            const float* kn = &s.b.k[sz(n * D + c0)];
            const float* vn = &s.b.v[sz(n * D + c0)];
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
    });
}

void SsaNode::keep_scores(State& s, std::int64_t h) const {
    // For traces: Q.K^T counts of this head, and times the scale.
    const std::int64_t N = tokens_, W = (head_dim_ + 63) / 64;
    for (std::int64_t i = 0; i < N; ++i)
        for (std::int64_t j = 0; j < N; ++j) {
            std::uint64_t c = 0;
            for (std::int64_t w = 0; w < W; ++w)
                c += static_cast<std::uint64_t>(
                    std::popcount(s.qm[sz(i * W + w)] & s.km[sz(j * W + w)]));
            s.maps.scores[sz((h * N + i) * N + j)] = static_cast<float>(c);
            s.maps.weights[sz((h * N + i) * N + j)] = static_cast<float>(c) * scale_;
        }
}

SsaNode::AssociationCost SsaNode::association_cost(State& s) const {
    // (Q K^T) V: one AC per coincident (query, key) spike pair of a channel, then, for each
    // non-zero score (i, j), one per V spike of token j. Q (K^T V): one per (key, value) spike
    // pair of a token, then, for each Q spike of channel c, one per non-zero entry of row c of
    // K^T V.
    const std::int64_t N = tokens_, dh = head_dim_;
    const std::int64_t W = (dh + 63) / 64, NW = (N + 63) / 64;
    const std::uint32_t* kcnt = s.cnt.data() + dh;
    AssociationCost r;
    simd::at_level([&] {
        AssociationCost t;  // a local the loops can keep in registers
        for (std::int64_t c = 0; c < dh; ++c) t.qk_score += std::uint64_t{s.cnt[sz(c)]} * kcnt[c];
        std::uint64_t* vcount = s.vcount.data();
        for (std::int64_t j = 0; j < N; ++j) {
            vcount[j] = popcount(&s.vm[sz(j * W)], W);
            t.kv_score += popcount(&s.km[sz(j * W)], W) * vcount[j];
        }
        for (std::int64_t i = 0; i < N; ++i) {
            if (!popcount(&s.qm[sz(i * W)], W)) continue;
            if (W == 1) {  // one word per token: branch-free, vectorisable
                const std::uint64_t qi = s.qm[sz(i)];
                for (std::int64_t j = 0; j < N; ++j)
                    t.qk_mix += (qi & s.km[sz(j)]) != 0 ? vcount[j] : 0;
                continue;
            }
            for (std::int64_t j = 0; j < N; ++j)
                if (vcount[j] && any_and(&s.qm[sz(i * W)], &s.km[sz(j * W)], W))
                    t.qk_mix += vcount[j];
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
            t.kv_mix += std::uint64_t{s.cnt[sz(c)]} * row;
        }
        r = t;
    });
    return r;
}

std::uint64_t SsaNode::multiply_head(State& s, std::int64_t h, bool qk_first, Engine engine) const {
    std::uint64_t over = 0;
    simd::at_level([&] {
        // Small integers, identical for both associations and engines.
        const std::int64_t N = tokens_, D = dim_, dh = head_dim_, c0 = h * dh;
        const std::int64_t W = (dh + 63) / 64, NW = (N + 63) / 64;
        std::int32_t* S = s.s.data();
        std::int32_t* Y = s.yi.data();
        std::fill(s.yi.begin(), s.yi.end(), 0);
        if (engine == Engine::dense) {
            spiking_detail::dense_scores(s.b.q.data(), s.b.k.data(), N, D, c0, dh, S);
            for (std::int64_t i = 0; i < N; ++i)
                for (std::int64_t j = 0; j < N; ++j)
                    for (std::int64_t c = 0; c < dh; ++c)
                        Y[i * dh + c] +=
                            S[i * N + j] * static_cast<std::int32_t>(s.b.v[sz(j * D + c0 + c)]);
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
        // Integer form: the count itself, held in the accumulator (the scale is in the
        // attention neurons' input exponent and threshold).
        if (fixed_) {
            for (std::int64_t i = 0; i < N; ++i)
                for (std::int64_t c = 0; c < dh; ++c)
                    s.b.y[sz(i * D + c0 + c)] = static_cast<float>(fit_acc(Y[i * dh + c], over));
            return;
        }
        for (std::int64_t i = 0; i < N; ++i)
            for (std::int64_t c = 0; c < dh; ++c)
                s.b.y[sz(i * D + c0 + c)] = static_cast<float>(Y[i * dh + c]) * scale_;
    });
    return over;
}

void SsaNode::fire_output(State& s, Activity& out, const StepContext& ctx) const {
    // Attention LIF; the scale is a power of two folded into its threshold in hardware terms,
    // so it is not counted as an operation (docs/bsa.md).
    std::vector<float>& y = s.b.y;
    if (fixed_)  // steps at the kernels' level itself
        book_overflows(ctx,
                       fixed_->mix.step(s.iout.data(), y.data(), s.b.z.data(), tokens_ * dim_));
    std::uint64_t spikes = 0;
    simd::at_level([&] {
        if (!fixed_)
            kernels::sj_lif_row(attn_, s.hout.data(), y.data(), y.data(), sz(tokens_ * dim_));
        spikes = emit(fixed_ ? s.b.z : y, out);
    });
    book_neurons(ctx, sz(tokens_ * dim_));
    book_spikes(ctx, spikes);
}

}  // namespace ternion
