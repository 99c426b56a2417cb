// ternion.QKAttention, QKFormer's Q-K attention (Zhou et al. 2024; official code
// zhouchenlin2096/QKFormer, cifar10/model.py Token_QK_Attention): Q, K = LIF(proj(x)), no V.
// Form "token" (the official code): per head and token, a LIF at threshold 0.5 over the sum of
// Q over the head's channels gives a token mask, out = mask (.) K. Form "channel" (the paper's
// Q-K channel attention): per channel, a LIF over the sum of Q over tokens masks K's channels.
// Linear in the tokens: no N x N scores. The output projection is a separate graph node.
#include <algorithm>

#include "attention/spiking/spiking_attention.hpp"
#include "attention/spiking/spiking_attention_internal.hpp"
#include "neuron/neuron_params.hpp"

namespace ternion {

namespace {

using spiking_detail::sz;

enum class QkForm { token, channel };

class QkAttentionNode final : public SpikingAttentionNode {
  public:
    QkAttentionNode(std::string name, Projection q, Projection k, std::int64_t heads,
                    kernels::SjLif lif, kernels::SjLif attn, QkForm form)
        : SpikingAttentionNode(std::move(name), "ternion.QKAttention", std::move(q), std::move(k),
                               heads),
          lif_(lif),
          attn_(attn),
          form_(form) {}

    void bind(const Shape& in_shape) override {
        SpikingAttentionNode::bind(in_shape);
        mask_neurons_ = form_ == QkForm::token ? heads_ * tokens_ : dim_;
    }
    std::unique_ptr<NodeState> make_state() const override {
        auto s = std::make_unique<State>();
        s->b = make_buffers();
        for (auto* h : {&s->hq, &s->hk}) h->assign(sz(tokens_ * dim_), 0.0f);
        s->hmask.assign(sz(mask_neurons_), 0.0f);
        s->mask.assign(sz(mask_neurons_), 0.0f);
        reset_state(s.get());
        return s;
    }
    bool reset_state(NodeState* state) const override {
        auto& s = *static_cast<State*>(state);
        for (auto* h : {&s.hq, &s.hk}) std::fill(h->begin(), h->end(), lif_.charge.v_reset);
        std::fill(s.hmask.begin(), s.hmask.end(), attn_.charge.v_reset);
        return true;
    }
    // The mask neurons.
    bool membrane(const NodeState* state, std::vector<float>& out) const override {
        return membrane_of<State>(state, &State::hmask, out);
    }
    void step(const Activity& in, NodeState* state, Activity& out,
              const StepContext& ctx) const override {
        auto& s = *static_cast<State*>(state);
        project(in, s.b, ctx);
        fire_qkv_lifs(lif_, s.hq.data(), s.hk.data(), nullptr, s.b, ctx);
        sum_queries(s, ctx);
        mask_keys(s, ctx);
        book_spikes(ctx, emit(s.b.y, out));
    }

  protected:
    // The ANN equivalent: one add per query element into its sum, one product per key element.
    std::uint64_t mix_dense_macs_per_step() const override {
        return 2 * static_cast<std::uint64_t>(tokens_ * dim_);
    }

  private:
    struct State : NodeState {
        Buffers b;
        std::vector<float> hq, hk;  // Q and K LIF membranes
        std::vector<float> hmask;   // the mask LIFs: [H][N] (token) or [D] (channel)
        std::vector<float> mask;    // the sums of Q as the mask LIFs' input, then their spikes
    };
    // Visits every (token n, channel c) with the mask neuron it belongs to, head by head, so the
    // index is computed once per head's run of channels, not per element.
    template <class F>
    void for_each_element(F&& f) const {
        const bool token = form_ == QkForm::token;
        for (std::int64_t n = 0; n < tokens_; ++n)
            for (std::int64_t h = 0; h < heads_; ++h) {
                const std::int64_t c0 = h * head_dim_, m = h * tokens_ + n;
                for (std::int64_t c = c0; c < c0 + head_dim_; ++c)
                    f(sz(n * dim_ + c), sz(token ? m : c));
            }
    }
    // Sums of binary Q: one accumulate per query spike (event form), the same integers as the
    // dense form's adds of every element.
    void sum_queries(State& s, const StepContext& ctx) const {
        std::fill(s.mask.begin(), s.mask.end(), 0.0f);
        std::uint64_t spikes = 0;
        for_each_element([&](std::size_t i, std::size_t m) {
            s.mask[m] += s.b.q[i];
            spikes += s.b.q[i] != 0.0f;
        });
        if (ctx.ops) ctx.ops->ac += spikes;
        counts(ctx).score_ac += spikes;
    }
    // The mask LIFs, then out = K where the mask of its token (or channel) fired; a selection,
    // not arithmetic (not counted).
    void mask_keys(State& s, const StepContext& ctx) const {
        kernels::sj_lif_row(attn_, s.hmask.data(), s.mask.data(), s.mask.data(), mask_neurons_);
        std::uint64_t open = 0;
        for (float m : s.mask) open += m != 0.0f;
        book_neurons(ctx, sz(mask_neurons_));
        counts(ctx).mask_channels += open;
        for_each_element(
            [&](std::size_t i, std::size_t m) { s.b.y[i] = s.mask[m] != 0.0f ? s.b.k[i] : 0.0f; });
    }

    kernels::SjLif lif_, attn_;
    QkForm form_;
};

}  // namespace

std::unique_ptr<Node> build_qk_attention(const NodeSpec& spec) {
    int biased = 0, normalised = 0;
    Projection q = read_projection(spec, "q", biased, normalised);
    Projection k = read_projection(spec, "k", biased, normalised);
    if (k.in() != q.in() || k.out() != q.out())
        spec.fail("k_weight", "must have the shape of q_weight");
    const auto name = spec.string_opt("form");
    if (name && *name != "token" && *name != "channel")
        spec.fail("form", "must be \"token\" (the official code) or \"channel\"");
    const QkForm form = name && *name == "channel" ? QkForm::channel : QkForm::token;
    const std::int64_t heads = read_heads(spec, q.out());
    // QKFormer's defaults: tau 2 for every LIF, threshold 1 for Q and K, 0.5 for the mask.
    auto n = std::make_unique<QkAttentionNode>(spec.name(), std::move(q), std::move(k), heads,
                                               read_sj_lif(spec, "lif_", 1.0f),
                                               read_sj_lif(spec, "attn_", 0.5f), form);
    n->set_source_modules(biased, normalised);
    return n;
}

NodeExample qk_attention_example() {
    auto e = attention_example();
    // The mask LIFs see integer sums: a threshold off the dyadic grid keeps the recount's
    // comparisons unambiguous.
    e.params.set("lif_tau", 2.0).set("lif_v_threshold", 0.3).set("attn_v_threshold", 0.7);
    e.params.erase("v_weight");  // no V
    return e;
}

}  // namespace ternion
