// ternion.MultiSpikeAttention (multispike_attention.hpp): SDT V3's linear attention on integer
// spikes. Every operand is an integer count, so the product is exact (int64) whichever order
// computes it; the association only changes what is counted, as in SSA. Counts follow the
// D-virtual-step expansion: each unit of a count is one binary spike, so a product of counts
// a * b is a * b coincidences (ACs), and adding an integer score once per V spike costs |V| ACs.
#include "attention/spiking/multispike_attention.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "attention/spiking/spiking_attention.hpp"
#include "sim/core/event_booking.hpp"
#include "sim/kernels/event_cost.hpp"
#include "sim/kernels/neuron_rules.hpp"
#include "sim/synaptic/projection.hpp"
#include "sim/synaptic/synaptic.hpp"

namespace ternion {

namespace {

std::size_t sz(std::int64_t n) {
    return static_cast<std::size_t>(n);
}

class MultiSpikeAttentionNode final : public Node {
  public:
    MultiSpikeAttentionNode(std::string name, Projection q, Projection k, Projection v,
                            std::int64_t heads, float lo, float hi, float scale,
                            SsaAssociation assoc, int biased, int normalised)
        : Node(std::move(name), "ternion.MultiSpikeAttention"),
          heads_(heads),
          lo_(lo),
          hi_(hi),
          scale_(scale),
          assoc_(assoc),
          biased_(biased),
          normalised_(normalised) {
        dim_in_ = q.in();
        dim_ = q.out();
        dim_v_ = v.out();
        params_ = q.weight_count() + k.weight_count() + v.weight_count() +
                  static_cast<std::uint64_t>(2 * dim_ + dim_v_);
        qkv_ = Projection::concat({&q, &k, &v});
    }

    NodeCategory category() const override { return NodeCategory::attention; }
    bool is_spiking() const override { return true; }
    void bind(const Shape& in) override {
        if (in.size() != 2 || in[1] != dim_in_)
            fail("", "input shape " + shape_str(in) + " does not fit: expected [tokens, " +
                         std::to_string(dim_in_) + "] (the q_weight columns)");
        if (in[0] < 1) fail("", "needs at least one token");
        in_shape_ = in;
        tokens_ = in[0];
        out_shape_ = {tokens_, dim_v_};
    }
    std::unique_ptr<NodeState> make_state() const override {
        auto s = std::make_unique<State>();
        s->proj.assign(sz(tokens_ * width()), 0.0f);
        s->q.assign(sz(tokens_ * dim_), 0);
        s->k.assign(sz(tokens_ * dim_), 0);
        s->v.assign(sz(tokens_ * dim_v_), 0);
        s->y.assign(sz(tokens_ * dim_v_), 0);
        return s;
    }
    bool reset_state(NodeState* state) const override { return state != nullptr; }
    void step(const Activity& in, NodeState* state, Activity& out,
              const StepContext& ctx) const override {
        auto& s = *static_cast<State*>(state);
        project(in, s, ctx);
        quantise_qkv(s, ctx);
        std::fill(s.y.begin(), s.y.end(), 0);
        for (std::int64_t h = 0; h < heads_; ++h) mix_head(s, h, ctx);
        fire_output(s, out, ctx);
    }

    std::uint64_t dense_synops_per_step() const override {
        return static_cast<std::uint64_t>(tokens_ * dim_in_ * width());
    }
    // The ANN equivalent computes (Q K^T) V as the official code does: N^2 (D + Dv) MACs.
    std::uint64_t dense_macs_per_step() const override {
        const auto n = static_cast<std::uint64_t>(tokens_);
        return dense_synops_per_step() + n * n * static_cast<std::uint64_t>(dim_ + dim_v_);
    }
    std::uint64_t param_count() const override { return params_; }
    std::uint64_t weight_count() const override { return qkv_.weight_count(); }
    double weight_density() const override {
        const double total = double(qkv_.weight_count());
        return total > 0 ? double(qkv_.nonzero_weights()) / total : -1.0;
    }
    std::vector<std::pair<std::string, double>> attributes() const override {
        return {{"tokens", double(tokens_)}, {"dim", double(dim_)},
                {"dim_v", double(dim_v_)},   {"heads", double(heads_)},
                {"dim_in", double(dim_in_)}, {"max_value", double(hi_)},
                {"scale", double(scale_)}};
    }
    std::optional<AttentionShape> attention_shape() const override {
        AttentionShape a;
        a.tokens = tokens_;
        a.dim = dim_;
        a.heads = heads_;
        a.dim_in = dim_in_;
        a.proj_dense_macs_per_step = dense_synops_per_step();
        return a;
    }
    ModuleShape module_shape() const override {
        const auto n = static_cast<std::uint64_t>(tokens_);
        ModuleShape m;
        // Per-part widths are not kept apart: a biased or normalised part is billed at the
        // average width of the three, exact when V is as wide as Q and K.
        const auto avg = static_cast<std::uint64_t>(width() / 3);
        m.bias_ops_per_step = static_cast<std::uint64_t>(biased_) * avg;
        m.batchnorm_elems_per_step = static_cast<std::uint64_t>(normalised_) * n * avg;
        m.neuron_elems_per_step = n * static_cast<std::uint64_t>(width() + dim_v_);
        return m;
    }
    std::vector<std::pair<std::string, std::string>> summary() const override {
        return {{"tokens", std::to_string(tokens_)},
                {"dim (Q, K)", std::to_string(dim_)},
                {"dim (V, out)", std::to_string(dim_v_)},
                {"heads", std::to_string(heads_)},
                {"levels", std::to_string(int(lo_)) + ".." + std::to_string(int(hi_))}};
    }

  private:
    struct State : NodeState {
        std::vector<float> proj;               // [N][2D + Dv]: Q | K | V before their neurons
        std::vector<std::int32_t> q, k, v;     // integer counts
        std::vector<std::int64_t> y;           // Q K^T V per head, exact
        std::vector<std::int64_t> m, nq;       // one head's K^T V [dh][dvh] and Q sums [dh]
        std::vector<std::int64_t> vrow, krow;  // one head's per-token sums of V and K
    };
    std::int64_t width() const { return 2 * dim_ + dim_v_; }
    float quant(float x) const {
        const float c = std::clamp(x, lo_, hi_);
        return c == c ? std::nearbyint(c) : 0.0f;  // half to even, as torch.round
    }
    static AttentionCounts& counts(const StepContext& ctx) {
        thread_local AttentionCounts sink;
        return ctx.attention ? *ctx.attention : sink;
    }
    static void book_neurons(const StepContext& ctx, std::uint64_t n) {
        if (ctx.ops) kernels::book_neuron_updates(*ctx.ops, n, 1, true);
    }

    // The fused projection with the core's event-cost rule: integer counts cost |k| ACs each.
    void project(const Activity& in, State& s, const StepContext& ctx) const {
        if (ctx.engine == Engine::event)
            qkv_.apply_event(in.values.data(), in.active, tokens_, s.proj.data(), in.ternary);
        else
            qkv_.apply_dense(in.values.data(), tokens_, s.proj.data());
        if (!ctx.ops || !ctx.count_ops) return;
        const EventCost c = event_cost(
            in.active.size(), in.ternary,
            [&](std::size_t e) {
                return qkv_.row_nnz(static_cast<std::int64_t>(in.active[e]) % dim_in_);
            },
            [&](std::size_t e) { return in.values[in.active[e]]; });
        book_event_cost(c, in.ternary, bytes_per_synapse({}), ctx);
        AttentionCounts& att = counts(ctx);
        att.proj_ac += c.ac;
        att.proj_mac += c.mac;
    }

    // The Q, K and V MultiSpike neurons; their spikes counted in units (virtual spikes).
    void quantise_qkv(State& s, const StepContext& ctx) const {
        std::uint64_t nq = 0, nk = 0, nv = 0;
        const std::int64_t W = width();
        for (std::int64_t n = 0; n < tokens_; ++n) {
            const float* p = s.proj.data() + n * W;
            for (std::int64_t c = 0; c < dim_; ++c) {
                const auto a = static_cast<std::int32_t>(quant(p[c]));
                const auto b = static_cast<std::int32_t>(quant(p[dim_ + c]));
                s.q[sz(n * dim_ + c)] = a;
                s.k[sz(n * dim_ + c)] = b;
                nq += static_cast<std::uint64_t>(std::abs(a));
                nk += static_cast<std::uint64_t>(std::abs(b));
            }
            for (std::int64_t c = 0; c < dim_v_; ++c) {
                const auto a = static_cast<std::int32_t>(quant(p[2 * dim_ + c]));
                s.v[sz(n * dim_v_ + c)] = a;
                nv += static_cast<std::uint64_t>(std::abs(a));
            }
        }
        book_neurons(ctx, sz(tokens_ * W));
        AttentionCounts& att = counts(ctx);
        att.q_spikes += nq;
        att.k_spikes += nk;
        att.v_spikes += nv;
    }

    // Head h: Y = Q (K^T V) exactly (the same integers as (Q K^T) V), and the accumulates of
    // both associations in the virtual-step expansion: (Q K^T) V costs sum_c nq(c) nk(c) for
    // the scores plus, per non-zero score S_ij, the V spikes of token j; Q (K^T V) costs
    // sum_j |K_j| |V_j| plus, per Q spike of channel c, the non-zeros of row c of K^T V.
    void mix_head(State& s, std::int64_t h, const StepContext& ctx) const {
        const std::int64_t N = tokens_, dh = dim_ / heads_, dvh = dim_v_ / heads_;
        const std::int64_t c0 = h * dh, d0 = h * dvh;
        s.m.assign(sz(dh * dvh), 0);
        s.nq.assign(sz(dh), 0);
        s.vrow.assign(sz(N), 0);
        s.krow.assign(sz(N), 0);
        std::uint64_t qk_score = 0, qk_mix = 0, kv_score = 0, kv_mix = 0;
        for (std::int64_t j = 0; j < N; ++j) {
            const std::int32_t* kj = s.k.data() + j * dim_ + c0;
            const std::int32_t* vj = s.v.data() + j * dim_v_ + d0;
            for (std::int64_t d = 0; d < dvh; ++d) s.vrow[sz(j)] += std::abs(vj[d]);
            for (std::int64_t c = 0; c < dh; ++c) {
                s.krow[sz(j)] += std::abs(kj[c]);
                if (kj[c] == 0) continue;
                for (std::int64_t d = 0; d < dvh; ++d)
                    s.m[sz(c * dvh + d)] += std::int64_t(kj[c]) * vj[d];
            }
            kv_score += static_cast<std::uint64_t>(s.krow[sz(j)] * s.vrow[sz(j)]);
        }
        for (std::int64_t c = 0; c < dh; ++c) {
            std::int64_t nk = 0, row = 0;
            for (std::int64_t n = 0; n < N; ++n) {
                s.nq[sz(c)] += std::abs(s.q[sz(n * dim_ + c0 + c)]);
                nk += std::abs(s.k[sz(n * dim_ + c0 + c)]);
            }
            for (std::int64_t d = 0; d < dvh; ++d) row += s.m[sz(c * dvh + d)] != 0;
            qk_score += static_cast<std::uint64_t>(s.nq[sz(c)] * nk);
            kv_mix += static_cast<std::uint64_t>(s.nq[sz(c)] * row);
        }
        for (std::int64_t i = 0; i < N; ++i) {
            const std::int32_t* qi = s.q.data() + i * dim_ + c0;
            std::int64_t* yi = s.y.data() + i * dim_v_ + d0;
            for (std::int64_t c = 0; c < dh; ++c) {
                if (qi[c] == 0) continue;
                const std::int64_t* mc = s.m.data() + c * dvh;
                for (std::int64_t d = 0; d < dvh; ++d) yi[d] += qi[c] * mc[d];
            }
            for (std::int64_t j = 0; j < N; ++j) {
                const std::int32_t* kj = s.k.data() + j * dim_ + c0;
                std::int64_t sij = 0;
                for (std::int64_t c = 0; c < dh; ++c) sij += std::int64_t(qi[c]) * kj[c];
                if (sij != 0) qk_mix += static_cast<std::uint64_t>(s.vrow[sz(j)]);
            }
        }
        const bool qk =
            assoc_ == SsaAssociation::qk_first ||
            (assoc_ == SsaAssociation::automatic && qk_score + qk_mix <= kv_score + kv_mix);
        const std::uint64_t score = qk ? qk_score : kv_score, mix = qk ? qk_mix : kv_mix;
        AttentionCounts& att = counts(ctx);
        att.score_ac += score;
        att.mix_ac += mix;
        (qk ? att.qk_first_heads : att.kv_first_heads) += 1;
        if (ctx.ops) ctx.ops->ac += score + mix;
    }

    // out = MultiSpike(float32(Y) * scale): one float32 rounding of the exact product, as
    // PyTorch's (Q/D K^T/D V/D) * s with the 1/D^3 inside `scale` (exact for a power-of-two D).
    void fire_output(const State& s, Activity& out, const StepContext& ctx) const {
        out.active.clear();
        std::uint64_t units = 0;
        for (std::size_t i = 0; i < s.y.size(); ++i) {
            const float k = quant(static_cast<float>(s.y[i]) * scale_);
            out.values[i] = k == 0.0f ? 0.0f : k;
            if (k != 0.0f) {
                out.active.push_back(static_cast<std::uint32_t>(i));
                units += static_cast<std::uint64_t>(std::fabs(k));
            }
        }
        out.ternary = lo_ >= -1.0f && hi_ <= 1.0f;
        out.all_ones = false;
        book_neurons(ctx, s.y.size());
        if (ctx.ops) kernels::book_spikes(*ctx.ops, units);
    }

    Projection qkv_;
    std::int64_t heads_ = 1, dim_in_ = 0, dim_ = 0, dim_v_ = 0, tokens_ = 0;
    float lo_ = 0.0f, hi_ = 4.0f, scale_ = 1.0f;
    SsaAssociation assoc_ = SsaAssociation::automatic;
    int biased_ = 0, normalised_ = 0;
    std::uint64_t params_ = 0;
};

float level(const NodeSpec& spec, const char* p, double dflt) {
    const double v = spec.scalar_or(p, dflt);
    if (v != std::floor(v) || std::fabs(v) > 16.0) spec.fail(p, "must be an integer in [-16, 16]");
    return static_cast<float>(v);
}

}  // namespace

std::unique_ptr<Node> build_multispike_attention(const NodeSpec& spec) {
    int biased = 0, normalised = 0;
    Projection q = read_projection(spec, "q", biased, normalised);
    Projection k = read_projection(spec, "k", biased, normalised);
    Projection v = read_projection(spec, "v", biased, normalised);
    if (k.in() != q.in() || k.out() != q.out())
        spec.fail("k_weight", "must have the shape of q_weight");
    if (v.in() != q.in()) spec.fail("v_weight", "must have as many columns as q_weight");
    for (const char* p : {"k", "v"})
        if (batchnorm_form(spec, std::string(p) + "_").has_value() !=
            batchnorm_form(spec, "q_").has_value())
            spec.fail(std::string(p) + "_bn_form", "must be folded or unfolded as q_bn_form is");
    const std::int64_t heads = read_heads(spec, q.out());
    if (v.out() % heads != 0)
        spec.fail("v_weight",
                  "needs a row count that the " + std::to_string(heads) + " heads divide");
    const float lo = level(spec, "min_value", 0.0), hi = level(spec, "max_value", 4.0);
    if (lo > 0.0f || hi < 1.0f)
        spec.fail(lo > 0.0f ? "min_value" : "max_value", "needs min_value <= 0 < max_value");
    const double scale = spec.scalar_or("scale", 1.0);
    if (!(scale > 0.0) || !std::isfinite(static_cast<float>(scale)))
        spec.fail("scale", "must be a positive float32");
    const auto assoc = spec.string_opt("association");
    if (assoc && *assoc != "auto" && *assoc != "qk" && *assoc != "kv")
        spec.fail("association", "must be \"auto\", \"qk\" or \"kv\"");
    const SsaAssociation a =
        !assoc || *assoc == "auto"
            ? SsaAssociation::automatic
            : (*assoc == "qk" ? SsaAssociation::qk_first : SsaAssociation::kv_first);
    auto n = std::make_unique<MultiSpikeAttentionNode>(
        spec.name(), std::move(q), std::move(k), std::move(v), heads, lo, hi,
        static_cast<float>(scale), a, biased, normalised);
    n->set_origin(spec.origin());
    return n;
}

NodeExample multispike_attention_example() {
    auto e = example_of({4, 8});
    std::uint64_t seed = 30;
    set_example(e.params, "q_weight", {8, 8}, ++seed);
    set_example(e.params, "k_weight", {8, 8}, ++seed);
    set_example(e.params, "v_weight", {16, 8}, ++seed);
    set_example(e.params, "q_bias", {8}, 40);
    set_example(e.params, "k_bn_weight", {8}, 41);
    set_example(e.params, "k_bn_bias", {8}, 42);
    set_example(e.params, "k_bn_running_mean", {8}, 43);
    e.params.set("k_bn_running_var", std::vector<double>(8, 1.5), {8});
    e.params.set("heads", 2.0).set("max_value", 4.0).set("min_value", 0.0);
    // A scale off the dyadic grid keeps the recount's roundings away from ties.
    e.params.set("scale", 0.0371).set("association", "auto");
    return e;
}

}  // namespace ternion
