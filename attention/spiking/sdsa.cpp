// ternion.SDSA, the Spike-driven Transformer v1's self-attention: Q, K, V = LIF(proj(x));
// mask = LIF_attn(sum over tokens of Q (.) K); out = mask (.) V (or, form "kv", the official
// code's Q (.) LIF_attn(sum over tokens of K (.) V)).
#include <algorithm>

#include "attention/spiking/spiking_attention.hpp"
#include "attention/spiking/spiking_attention_internal.hpp"
#include "sim/simd/simd.hpp"

namespace ternion {

using spiking_detail::sz;

struct SdsaNode::State : NodeState {
    Buffers b;
    std::vector<float> hq, hk, hv;  // LIF membranes of Q, K, V
    std::vector<float> hmask;       // [D] mask neurons, one per channel
    std::vector<std::int32_t> sum;  // [D] coincidence counts, then the mask (0/1)
    std::vector<float> mask;        // [D] the counts as the mask neurons' input, then their spikes
    std::vector<std::int32_t> iq, ik, iv, imask;  // integer form: the membranes
    std::vector<float> fired;                     // integer form: the mask neurons' spikes
};

SdsaNode::SdsaNode(std::string name, Projection q, Projection k, Projection v, std::int64_t heads,
                   kernels::SjLif qkv_lif, kernels::SjLif attn_lif, SdsaForm form)
    : SpikingAttentionNode(std::move(name), "ternion.SDSA", std::move(q), std::move(k),
                           std::move(v), heads),
      lif_(qkv_lif),
      attn_(attn_lif),
      form_(form) {
    closed_form_ = AttentionClosedForm::column_sum;
    mask_neurons_ = dim_;
}

std::unique_ptr<NodeState> SdsaNode::make_state() const {
    auto s = std::make_unique<State>();
    s->b = make_buffers();
    for (auto* h : {&s->hq, &s->hk, &s->hv}) h->assign(sz(tokens_ * dim_), 0.0f);
    s->hmask.assign(sz(dim_), 0.0f);
    s->sum.assign(sz(dim_), 0);
    s->mask.assign(sz(dim_), 0.0f);
    if (fixed_) {
        for (auto* h : {&s->iq, &s->ik, &s->iv}) h->assign(sz(tokens_ * dim_), 0);
        s->imask.assign(sz(dim_), 0);
        s->fired.assign(sz(dim_), 0.0f);
    }
    reset_state(s.get());
    return s;
}

bool SdsaNode::reset_state(NodeState* state) const {
    auto& s = *static_cast<State*>(state);
    // Membranes start at v_reset, as SpikingJelly's (and a ternion.SJLIF's) do.
    for (auto* h : {&s.hq, &s.hk, &s.hv}) std::fill(h->begin(), h->end(), lif_.charge.v_reset);
    std::fill(s.hmask.begin(), s.hmask.end(), attn_.charge.v_reset);
    for (auto* h : {&s.iq, &s.ik, &s.iv, &s.imask}) std::fill(h->begin(), h->end(), 0);
    return true;
}

bool SdsaNode::membrane(const NodeState* state, std::vector<float>& out) const {
    return fixed_ ? membrane_of(state, &State::imask, out) : membrane_of(state, &State::hmask, out);
}

void SdsaNode::step(const Activity& in, NodeState* state, Activity& out,
                    const StepContext& ctx) const {
    auto& s = *static_cast<State*>(state);
    project(in, s.b, ctx);
    fire_qkv(s, ctx);
    // The paper's form sums Q (.) K and masks V; the official code's sums K (.) V and masks Q.
    const bool kv = form_ == SdsaForm::kv_first;
    const std::uint64_t pairs = column_coincidences(kv ? s.b.k : s.b.q, kv ? s.b.v : s.b.k, s, ctx);
    if (ctx.ops) ctx.ops->ac += pairs;
    counts(ctx).score_ac += pairs;
    mask_channels(kv ? s.b.q : s.b.v, s, ctx);
    const auto spikes = emit(s.b.y, out);
    book_spikes(ctx, spikes);
}

void SdsaNode::fire_qkv(State& s, const StepContext& ctx) const {
    if (fixed_) return fire_qkv_fixed(s.iq.data(), s.ik.data(), s.iv.data(), s.b, ctx);
    fire_qkv_lifs(lif_, s.hq.data(), s.hk.data(), s.hv.data(), s.b, ctx);
}

std::uint64_t SdsaNode::column_coincidences(const std::vector<float>& a,
                                            const std::vector<float>& b, State& s,
                                            const StepContext& ctx) const {
    // Column sum of the Hadamard product: only coincident spikes add (event form); the dense
    // form adds every product, zeros included: the same integers.
    const std::int64_t N = tokens_, D = dim_;
    std::fill(s.sum.begin(), s.sum.end(), 0);
    std::uint64_t both = 0;
    for (std::int64_t n = 0; n < N; ++n)
        for (std::int64_t c = 0; c < D; ++c) {
            const float x = a[sz(n * D + c)], y = b[sz(n * D + c)];
            if (ctx.engine == Engine::dense)
                s.sum[sz(c)] += static_cast<std::int32_t>(x * y);
            else if (x != 0.0f && y != 0.0f)
                ++s.sum[sz(c)];
            both += (x != 0.0f && y != 0.0f);
        }
    return both;
}

void SdsaNode::mask_channels(const std::vector<float>& gated, State& s,
                             const StepContext& ctx) const {
    // One mask neuron per channel; the mask is a selection, not arithmetic (not counted).
    const std::int64_t N = tokens_, D = dim_;
    std::uint64_t open = 0;
    if (fixed_) {  // the counts held in the accumulator, then the integer mask neurons
        std::uint64_t over = 0;
        for (std::int64_t c = 0; c < D; ++c)
            s.mask[sz(c)] = static_cast<float>(fit_acc(s.sum[sz(c)], over));
        over += fixed_->mix.step(s.imask.data(), s.mask.data(), s.fired.data(), D);
        std::copy(s.fired.begin(), s.fired.end(), s.mask.begin());
        book_overflows(ctx, over);
    } else {
        for (std::int64_t c = 0; c < D; ++c) s.mask[sz(c)] = static_cast<float>(s.sum[sz(c)]);
        kernels::sj_lif_row(attn_, s.hmask.data(), s.mask.data(), s.mask.data(), D);
    }
    for (std::int64_t c = 0; c < D; ++c) {
        s.sum[sz(c)] = s.mask[sz(c)] != 0.0f;
        open += s.mask[sz(c)] != 0.0f;
    }
    book_neurons(ctx, sz(D));
    counts(ctx).mask_channels += open;
    for (std::int64_t n = 0; n < N; ++n)
        for (std::int64_t c = 0; c < D; ++c)
            s.b.y[sz(n * D + c)] = s.sum[sz(c)] ? gated[sz(n * D + c)] : 0.0f;
}

}  // namespace ternion
