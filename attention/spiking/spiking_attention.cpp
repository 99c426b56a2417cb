// The part of the spiking attention nodes that SSA, SDSA and BSA share: shapes and cost facts,
// the fused Q|K|V projection with its event cost, spike output and neuron bookkeeping. Each
// variant's step is in its own file (attention/spiking/ssa.cpp, sdsa.cpp, bsa.cpp).
#include "attention/spiking/spiking_attention.hpp"

#include <algorithm>

#include "attention/spiking/spiking_attention_internal.hpp"
#include "sim/core/event_booking.hpp"
#include "sim/simd/simd.hpp"

namespace ternion {

using spiking_detail::sz;

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

SpikingAttentionNode::SpikingAttentionNode(std::string name, std::string type, Projection q,
                                           Projection k, std::int64_t heads)
    : Node(std::move(name), std::move(type)), heads_(heads), parts_(2) {
    dim_in_ = q.in();
    dim_ = q.out();
    head_dim_ = heads_ > 0 ? dim_ / heads_ : 0;
    proj_params_ = 2 * (q.weight_count() + static_cast<std::uint64_t>(dim_));
    qkv_ = Projection::concat({&q, &k});
    proj_nnz_ = qkv_.nonzero_weights();
    neurons_per_element_ = 2;
    spiking_v_ = false;
}

SpikingAttentionNode::SpikingAttentionNode(std::string name, std::string type, std::int64_t dim,
                                           std::int64_t heads)
    : Node(std::move(name), std::move(type)), heads_(heads), identity_(true) {
    dim_in_ = 3 * dim;
    dim_ = dim;
    head_dim_ = heads_ > 0 ? dim_ / heads_ : 0;
}

void SpikingAttentionNode::bind(const Shape& in_shape) {
    if (in_shape.size() != 2 || in_shape[1] != dim_in_)
        fail("", "input shape " + shape_str(in_shape) + " does not fit: expected [tokens, " +
                     std::to_string(dim_in_) +
                     (identity_ ? "] (Q | K | V of dim each)" : "] (the q_weight columns)"));
    if (in_shape[0] < 1) fail("", "needs at least one token");
    in_shape_ = in_shape;
    tokens_ = in_shape[0];
    out_shape_ = {tokens_, dim_};
}

std::uint64_t SpikingAttentionNode::mix_dense_macs_per_step() const {
    const auto n = static_cast<std::uint64_t>(tokens_), d = static_cast<std::uint64_t>(dim_);
    return 2 * n * n * d;
}
std::uint64_t SpikingAttentionNode::dense_macs_per_step() const {
    return dense_synops_per_step() + mix_dense_macs_per_step();
}
std::uint64_t SpikingAttentionNode::dense_synops_per_step() const {
    if (identity_) return 0;  // the projections are other nodes, counted there
    return static_cast<std::uint64_t>(parts_ * tokens_ * dim_in_ * dim_);
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
    a.dim_in = identity_ ? 1 : dim_in_;  // without projections a neuron reads one input
    a.proj_dense_macs_per_step = dense_synops_per_step();
    a.closed_form = closed_form_;
    a.spiking_v = spiking_v_;
    a.mask_neurons = mask_neurons_;
    return a;
}
ModuleShape SpikingAttentionNode::module_shape() const {
    const auto nd = static_cast<std::uint64_t>(tokens_ * dim_);
    ModuleShape m;
    m.bias_ops_per_step = static_cast<std::uint64_t>(biased_) * static_cast<std::uint64_t>(dim_);
    m.batchnorm_elems_per_step = static_cast<std::uint64_t>(normalised_) * nd;
    m.neuron_elems_per_step = static_cast<std::uint64_t>(neurons_per_element_) * nd +
                              static_cast<std::uint64_t>(mask_neurons_);
    return m;
}
std::vector<std::pair<std::string, std::string>> SpikingAttentionNode::summary() const {
    return {{"tokens", std::to_string(tokens_)},
            {"dim", std::to_string(dim_)},
            {"heads", std::to_string(heads_)},
            {"dim_in", std::to_string(dim_in_)}};
}
SpikingAttentionNode::Buffers SpikingAttentionNode::make_buffers() const {
    Buffers b;
    const auto nd = sz(tokens_ * dim_);
    b.proj.assign(sz(tokens_ * parts_ * dim_), 0.0f);
    b.q.assign(nd, 0.0f);
    b.k.assign(nd, 0.0f);
    b.v.assign(nd, 0.0f);
    b.y.assign(nd, 0.0f);
    if (fixed_) b.z.assign(nd, 0.0f);
    return b;
}

void SpikingAttentionNode::start_maps(KeptMaps& m, bool keep) const {
    m.kept = keep;
    if (!keep) return;
    m.scores.assign(sz(heads_ * tokens_ * tokens_), 0.0f);
    m.weights.assign(sz(heads_ * tokens_ * tokens_), 0.0f);
}

bool SpikingAttentionNode::export_maps(const KeptMaps& m, AttentionMaps& out) const {
    if (!m.kept) return false;
    out.heads = heads_;
    out.rows = out.cols = tokens_;
    out.scores = m.scores;
    out.weights = m.weights;
    return true;
}

void SpikingAttentionNode::project(const Activity& in, Buffers& b, const StepContext& ctx) const {
    if (identity_) {  // the input is the projections' output: [N][Q | K | V], as b.proj
        std::copy(in.values.begin(), in.values.end(), b.proj.begin());
        return;
    }
    if (ctx.engine == Engine::event)
        qkv_.apply_event(in.values.data(), in.active, tokens_, b.proj.data(), in.ternary);
    else
        qkv_.apply_dense(in.values.data(), tokens_, b.proj.data());
    if (!ctx.ops || !ctx.count_ops) return;
    // The core's event-cost rule, with the projection's fan-out per input channel.
    const EventCost c = event_cost(
        in.active.size(), in.ternary,
        [&](std::size_t k) {
            return qkv_.row_nnz(static_cast<std::int64_t>(in.active[k]) % dim_in_);
        },
        [&](std::size_t k) { return in.values[in.active[k]]; });
    book_event_cost(c, in.ternary, bytes_per_synapse(storage_), ctx);  // dense weights
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
    if (ctx.ops) kernels::book_spikes(*ctx.ops, spikes);
}

void SpikingAttentionNode::book_neurons(const StepContext& ctx, std::uint64_t neurons) const {
    // One membrane each (float32, or the integer form's width), with a threshold: the neuron
    // nodes' rule.
    if (!ctx.ops) return;
    if (fixed_)
        kernels::book_state_bytes(*ctx.ops, neurons, fixed_->state_bytes(), true);
    else
        kernels::book_neuron_updates(*ctx.ops, neurons, 1, true);
}

void SpikingAttentionNode::count_qkv_spikes(const Buffers& b, const StepContext& ctx) {
    std::uint64_t nq = 0, nk = 0, nv = 0;
    for (std::size_t i = 0; i < b.q.size(); ++i) {
        nq += b.q[i] != 0.0f;
        nk += b.k[i] != 0.0f;
        nv += b.v[i] != 0.0f;
    }
    AttentionCounts& att = counts(ctx);
    att.q_spikes += nq;
    att.k_spikes += nk;
    att.v_spikes += nv;
}

void SpikingAttentionNode::fire_qkv_fixed(std::int32_t* vq, std::int32_t* vk, std::int32_t* vv,
                                          Buffers& b, const StepContext& ctx) const {
    // Row by row, as the float neurons: the projection's outputs of a token are Q | K | V.
    const std::int64_t N = tokens_, D = dim_, stride = parts_ * D;
    const float* p = b.proj.data();
    std::uint64_t over = fixed_->q.step_rows(vq, p, stride, b.q.data(), N, D) +
                         fixed_->k.step_rows(vk, p + D, stride, b.k.data(), N, D);
    if (vv) over += fixed_->v.step_rows(vv, p + 2 * D, stride, b.v.data(), N, D);
    book_overflows(ctx, over);
    book_neurons(ctx, (vv ? 3 : 2) * sz(N * D));
    count_qkv_spikes(b, ctx);
}

void SpikingAttentionNode::fire_qkv_lifs(const kernels::SjLif& lif, float* hq, float* hk, float* hv,
                                         Buffers& b, const StepContext& ctx) const {
    simd::at_level([&] {
        const std::int64_t N = tokens_, D = dim_;
        const float vth = lif.v_threshold, vr = lif.charge.v_reset;
        lif.charge.with([&](auto charge) {  // the charge's form chosen once for every row
            for (std::int64_t n = 0; n < N; ++n) {
                const float* p = b.proj.data() + n * parts_ * D;
                const std::int64_t o = n * D;
                kernels::sj_lif_row_with(charge, vth, vr, hq + o, p, b.q.data() + o, D);
                kernels::sj_lif_row_with(charge, vth, vr, hk + o, p + D, b.k.data() + o, D);
                if (hv)
                    kernels::sj_lif_row_with(charge, vth, vr, hv + o, p + 2 * D, b.v.data() + o, D);
            }
        });
        book_neurons(ctx, (hv ? 3 : 2) * sz(N * D));
        count_qkv_spikes(b, ctx);
    });
}

namespace {

kernels::LeakyForm form_of(const kernels::SjLif& lif) {
    kernels::LeakyForm f;
    kernels::leaky_form_of(lif.charge, f);
    f.threshold = {lif.v_threshold};
    f.fire_at_equal = true;
    return f;
}
kernels::LeakyForm form_of(const kernels::Tsn& t) {
    kernels::LeakyForm f;  // v = decay v + x (the stored state is the decayed one)
    f.a = {t.decay};
    f.g = {1.0f};
    f.c = {0.0f};
    f.v_reset = {0.0f};
    f.threshold = {t.v_threshold};
    f.fire_at_equal = f.ternary = true;
    return f;
}

}  // namespace

std::vector<SpikingAttentionNode::FloatGroup> SsaNode::float_groups() const {
    if (identity_) return {};  // no projections to quantise: its integer form is not built
    return {{"q_", form_of(lif_), 0},
            {"k_", form_of(lif_), 1},
            {"v_", form_of(lif_), 2},
            {"attn_", form_of(attn_), -1, double(scale_)}};
}
std::vector<SpikingAttentionNode::FloatGroup> SdsaNode::float_groups() const {
    return {{"q_", form_of(lif_), 0},
            {"k_", form_of(lif_), 1},
            {"v_", form_of(lif_), 2},
            {"attn_", form_of(attn_), -1}};
}
std::vector<SpikingAttentionNode::FloatGroup> BsaNode::float_groups() const {
    return {
        {"q_", form_of(qk_), 0}, {"k_", form_of(qk_), 1}, {"out_", form_of(out_), -1, 1.0, true}};
}

}  // namespace ternion
