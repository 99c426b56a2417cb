// Spiking self-attention nodes: ternion.SSA (Spikformer), ternion.SDSA (Spike-driven
// Transformer v1) and ternion.BSA (Bipolar Self-attention: ternary Q/K, Shiftmax, analog V).
// Each maps [tokens, dim_in] input activity to [tokens, dim] spikes and contains its own Q/K/V
// projections (BatchNorm folded) and neurons; the output projection, residuals and MLP are
// separate graph nodes. docs/transformer-format.md lists the parameters, docs/bsa.md the counts.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "attention/spiking/fixed_attention.hpp"
#include "attention/spiking/spiking_kernels.hpp"
#include "sim/core/node.hpp"
#include "sim/core/node_spec.hpp"
#include "sim/kernels/event_cost.hpp"
#include "sim/kernels/neuron_rules.hpp"
#include "sim/synaptic/projection.hpp"

namespace ternion {

// How SSA evaluates Q K^T V: whichever association needs fewer accumulates for the actual
// spikes (auto), or a fixed one (for tests and comparisons).
enum class SsaAssociation { automatic, qk_first, kv_first };

// Which pair SDSA sums over tokens: the paper's equation SN(SUM_c(Q (.) K)) (.) V (qk_first),
// or the official Spike-driven Transformer v1 code, Q (.) SN(SUM_c(K (.) V)) (kv_first).
enum class SdsaForm { qk_first, kv_first };

// What the three node types share: the fused Q|K|V projection, heads and the cost facts.
class SpikingAttentionNode : public Node {
  public:
    SpikingAttentionNode(std::string name, std::string type, Projection q, Projection k,
                         Projection v, std::int64_t heads);
    // A variant without V (QKFormer's Q-K attention): the fused projection is Q|K.
    SpikingAttentionNode(std::string name, std::string type, Projection q, Projection k,
                         std::int64_t heads);
    // A variant without projections: the input [N, 3 dim] already holds what the Q, K and V
    // neurons receive (SDT V2 computes them with RepConv convolutions, separate graph nodes).
    SpikingAttentionNode(std::string name, std::string type, std::int64_t dim, std::int64_t heads);

    NodeCategory category() const override { return NodeCategory::attention; }
    bool is_spiking() const override { return true; }
    void bind(const Shape& in_shape) override;
    std::uint64_t dense_macs_per_step() const override;
    std::uint64_t dense_synops_per_step() const override;
    std::uint64_t param_count() const override;
    std::uint64_t weight_count() const override { return qkv_.weight_count(); }
    double weight_density() const override;
    std::vector<std::pair<std::string, double>> attributes() const override;
    std::optional<AttentionShape> attention_shape() const override;
    ModuleShape module_shape() const override;
    // How many of the Q/K/V projections had a bias / a BatchNorm in the source model.
    void set_source_modules(int biased, int normalised) {
        biased_ = biased;
        normalised_ = normalised;
    }
    std::vector<std::pair<std::string, std::string>> summary() const override;
    // The integer form (docs/fixed-point.md): the projections' weights are integers of
    // `weight_bytes` bytes each, the neurons and products follow `f`.
    void set_fixed(FixedAttention f, int weight_bytes) {
        fixed_ = std::move(f);
        storage_.int_bytes = weight_bytes;
    }
    bool is_fixed() const { return fixed_.has_value(); }
    // What the quantiser needs of the float neurons the integer form replaces, group by group
    // (Q, K, V, mixing; docs/fixed-point.md): each one's rule, its parameter prefix in the
    // integer form, and what feeds it: projection `part` (0 Q, 1 K, 2 V), or (part -1) the
    // attention's products times `gain` (SSA's scale), in V's units when `via_value` (BSA).
    struct FloatGroup {
        std::string prefix;
        kernels::LeakyForm form;
        int part = -1;
        double gain = 1.0;
        bool via_value = false;
    };
    virtual std::vector<FloatGroup> float_groups() const { return {}; }
    // Projection `part`'s (out, in) weights and bias, the BatchNorm folded; false when it is
    // kept unfolded.
    bool projection_matrix(int part, std::vector<float>& w, std::vector<float>& b) const {
        return !identity_ && qkv_.matrix(part * dim_, (part + 1) * dim_, w, b);
    }
    // True for the variant without projections.
    bool identity() const { return identity_; }

    std::int64_t tokens() const { return tokens_; }
    std::int64_t dim() const { return dim_; }
    std::int64_t heads() const { return heads_; }

  protected:
    // The buffers every variant's step rewrites: projection outputs, Q/K/V and the attention
    // output before its neurons. Each variant's state holds one, beside its own neurons.
    struct Buffers {
        std::vector<float> proj;        // [N][parts D] projection outputs (Q | K | V, or Q | K)
        std::vector<float> q, k, v, y;  // [N][D] spikes (V: analog for BSA), attention out
        std::vector<float> z;           // [N][D] integer form: the mixing neurons' spikes (its
                                        // rows do not update in place)
    };
    // The [H][N][N] scores and weights of the last step, kept only when a trace asks.
    struct KeptMaps {
        std::vector<float> scores, weights;
        bool kept = false;
    };
    Buffers make_buffers() const;
    // Starts a step's maps: sized and zeroed when `keep`, else marked absent.
    void start_maps(KeptMaps& m, bool keep) const;
    bool export_maps(const KeptMaps& m, AttentionMaps& out) const;
    // Node::membrane and Node::attention_maps of a variant whose state type is S: the neurons
    // in s.*neurons, the maps in s.maps; false for another node's state.
    template <class S>
    static bool membrane_of(const NodeState* state, std::vector<float> S::*neurons,
                            std::vector<float>& out) {
        auto* s = dynamic_cast<const S*>(state);
        if (!s) return false;
        out = s->*neurons;
        return true;
    }
    // The same for the integer form's membranes (traces hold float32: exact up to 25 bits).
    template <class S>
    static bool membrane_of(const NodeState* state, std::vector<std::int32_t> S::*neurons,
                            std::vector<float>& out) {
        auto* s = dynamic_cast<const S*>(state);
        if (!s) return false;
        out.assign((s->*neurons).begin(), (s->*neurons).end());
        return true;
    }
    template <class S>
    bool maps_of(const NodeState* state, AttentionMaps& out) const {
        auto* s = dynamic_cast<const S*>(state);
        return s && export_maps(s->maps, out);
    }
    // Runs the fused projection and books its (input, weight) pairs: AC for spikes, |x| ACs
    // for small integers x, MAC for analog values; 4 weight bytes each.
    void project(const Activity& in, Buffers& b, const StepContext& ctx) const;
    // Writes out = spikes in `vals` (length N*D), ascending; returns the non-zero count.
    static std::uint64_t emit(const std::vector<float>& vals, Activity& out);
    void book_neurons(const StepContext& ctx, std::uint64_t neurons) const;
    static void book_spikes(const StepContext& ctx, std::uint64_t spikes);
    // The Q, K and V LIFs of SSA and SDSA (without V when `hv` is null): proj -> q, k, v spikes;
    // books the N*D neurons of each and the attention counts.
    void fire_qkv_lifs(const kernels::SjLif& lif, float* hq, float* hk, float* hv, Buffers& b,
                       const StepContext& ctx) const;
    // The same for the integer form: the Q, K (and V) groups of fixed_ on integer membranes.
    void fire_qkv_fixed(std::int32_t* vq, std::int32_t* vk, std::int32_t* vv, Buffers& b,
                        const StepContext& ctx) const;
    // The spike counts of Q, K and V into the attention counters.
    static void count_qkv_spikes(const Buffers& b, const StepContext& ctx);
    // Holds x in the integer form's accumulator; counts the values that did not fit.
    std::int64_t fit_acc(std::int64_t x, std::uint64_t& overflows) const {
        if (x >= fixed_->acc_lo() && x <= fixed_->acc_hi()) return x;  // the common case
        bool hit = false;
        const std::int64_t r = fixed_->acc.fit(x, hit);
        overflows += hit;
        return r;
    }
    static void book_overflows(const StepContext& ctx, std::uint64_t n) {
        if (ctx.ops) ctx.ops->overflow += n;
    }
    // The ANN-equivalent MACs of the attention itself per step (after the projections): the
    // N x N scores and their product with V unless a variant says otherwise.
    virtual std::uint64_t mix_dense_macs_per_step() const;
    // The typed counters of this step, or a sink when the caller does not collect them.
    static AttentionCounts& counts(const StepContext& ctx) {
        thread_local AttentionCounts sink;
        return ctx.attention ? *ctx.attention : sink;
    }

    Projection qkv_;
    std::optional<FixedAttention> fixed_;  // the integer form, when the file declares one
    WeightStorage storage_;                // how the projections' weights are held
    // What the counting conventions' closed forms need to know of the variant.
    AttentionClosedForm closed_form_ = AttentionClosedForm::none;
    bool spiking_v_ = true;
    std::int64_t mask_neurons_ = 0;
    std::int64_t dim_in_ = 0, dim_ = 0, heads_ = 1, head_dim_ = 0, tokens_ = 0;
    std::uint64_t proj_params_ = 0, proj_nnz_ = 0;
    int biased_ = 0, normalised_ = 0;
    std::int64_t parts_ = 3;  // projections fused: Q, K, V (3) or Q, K (2)
    bool identity_ = false;   // no projections: the input is Q | K | V's neuron input
    // Neuron updates per step: this many per output element (SSA: Q, K, V and attention LIFs;
    // SDSA: Q, K and V LIFs; BSA: Q, K and output TSNs, V has none), plus mask_neurons_.
    std::int64_t neurons_per_element_ = 3;
};

// Each variant's state type (State) is defined in its own file (attention/spiking/ssa.cpp,
// sdsa.cpp, bsa.cpp) and holds only that variant's neurons and scratch.
class SsaNode : public SpikingAttentionNode {
  public:
    SsaNode(std::string name, Projection q, Projection k, Projection v, std::int64_t heads,
            kernels::SjLif qkv_lif, kernels::SjLif attn_lif, float scale, SsaAssociation assoc);
    // Without projections (input [N, 3 dim]: the Q, K and V neurons' input side by side).
    SsaNode(std::string name, std::int64_t dim, std::int64_t heads, kernels::SjLif qkv_lif,
            kernels::SjLif attn_lif, float scale, SsaAssociation assoc);
    std::unique_ptr<NodeState> make_state() const override;
    bool reset_state(NodeState* state) const override;
    void step(const Activity& in, NodeState* state, Activity& out,
              const StepContext& ctx) const override;
    std::vector<std::pair<std::string, double>> attributes() const override;
    // The attention LIFs.
    bool membrane(const NodeState* state, std::vector<float>& out) const override;
    bool attention_maps(const NodeState* state, AttentionMaps& out) const override;
    std::vector<FloatGroup> float_groups() const override;

  private:
    struct State;
    // Accumulates of the two associations of one head for the current spikes:
    // (Q K^T) V costs qk_score + qk_mix, Q (K^T V) costs kv_score + kv_mix.
    struct AssociationCost {
        std::uint64_t qk_score = 0, qk_mix = 0, kv_score = 0, kv_mix = 0;
    };
    // The step's stages: Q/K/V spikes; bit masks of head h's spikes (rows and columns) and
    // spikes per channel; the kept Q K^T map of head h; what each association costs; the
    // product of head h (into s.y, scaled); the attention LIFs and the output spikes.
    void fire_qkv(State& s, const StepContext& ctx) const;
    void build_masks(State& s, std::int64_t h) const;
    void keep_scores(State& s, std::int64_t h) const;
    AssociationCost association_cost(State& s) const;
    // Returns the products that did not fit the integer form's accumulator.
    std::uint64_t multiply_head(State& s, std::int64_t h, bool qk_first, Engine engine) const;
    void fire_output(State& s, Activity& out, const StepContext& ctx) const;

    kernels::SjLif lif_, attn_;
    float scale_;
    SsaAssociation assoc_;
};

class SdsaNode : public SpikingAttentionNode {
  public:
    SdsaNode(std::string name, Projection q, Projection k, Projection v, std::int64_t heads,
             kernels::SjLif qkv_lif, kernels::SjLif attn_lif, SdsaForm form = SdsaForm::qk_first);
    std::unique_ptr<NodeState> make_state() const override;
    bool reset_state(NodeState* state) const override;
    void step(const Activity& in, NodeState* state, Activity& out,
              const StepContext& ctx) const override;
    // The mask neurons, one per channel.
    bool membrane(const NodeState* state, std::vector<float>& out) const override;
    std::vector<FloatGroup> float_groups() const override;

  private:
    struct State;
    // The step's stages: Q/K/V spikes; per-channel count of coincident spikes of a and b over
    // tokens (into s.sum); mask neurons on those counts, applied to `gated` (into s.b.y).
    void fire_qkv(State& s, const StepContext& ctx) const;
    std::uint64_t column_coincidences(const std::vector<float>& a, const std::vector<float>& b,
                                      State& s, const StepContext& ctx) const;
    void mask_channels(const std::vector<float>& gated, State& s, const StepContext& ctx) const;

    kernels::SjLif lif_, attn_;
    SdsaForm form_;
};

class BsaNode : public SpikingAttentionNode {
  public:
    BsaNode(std::string name, Projection q, Projection k, Projection v, std::int64_t heads,
            kernels::Tsn qk, kernels::Tsn out);
    std::unique_ptr<NodeState> make_state() const override;
    bool reset_state(NodeState* state) const override;
    void step(const Activity& in, NodeState* state, Activity& out,
              const StepContext& ctx) const override;
    // The output TSNs.
    bool membrane(const NodeState* state, std::vector<float>& out) const override;
    bool attention_maps(const NodeState* state, AttentionMaps& out) const override;
    std::vector<FloatGroup> float_groups() const override;

  private:
    struct State;
    // The step's stages: ternary Q/K spikes and analog V; the integer scores of head h (into
    // s.s), returning their accumulates; Shiftmax of each score row and the shift-and-add
    // product with V (into s.b.y); the closed-form Shiftmax and mixing counts; the output TSNs.
    void fire_qk(State& s, const StepContext& ctx) const;
    std::uint64_t score_head(State& s, std::int64_t h, Engine engine) const;
    // Head h: non-zero queries and keys per channel, keys transposed; the score's accumulates.
    std::uint64_t head_keys(State& s, std::int64_t h) const;
    void score_pairs(State& s, std::int64_t h, std::int32_t* S) const;
    void shiftmax_mix(State& s, std::int64_t h) const;
    // The integer form's: Q, K on integer TSNs, V into its register; each row's terms
    // V >> n summed in the accumulator (returns the overflows).
    void fire_qk_fixed(State& s, const StepContext& ctx) const;
    // Books the Q and K TSNs' updates and their spikes (all, and the -1s).
    void book_qk(const StepContext& ctx, std::uint64_t nq, std::uint64_t nk, std::uint64_t nq_neg,
                 std::uint64_t nk_neg) const;
    std::uint64_t shiftmax_mix_fixed(State& s, std::int64_t h) const;
    void book_shiftmax(std::uint64_t score_acs, const StepContext& ctx) const;
    void fire_output(State& s, Activity& out, const StepContext& ctx) const;

    kernels::Tsn qk_, out_;
};

// Builders used by register_spiking_attention_nodes (exposed for tests).
std::unique_ptr<Node> build_ssa(const NodeSpec& spec);
std::unique_ptr<Node> build_sdsa(const NodeSpec& spec);
std::unique_ptr<Node> build_bsa(const NodeSpec& spec);
std::unique_ptr<Node> build_qk_attention(
    const NodeSpec& spec);  // attention/spiking/qk_attention.cpp
NodeExample qk_attention_example();
// The readers every variant's builder shares (spiking_register.cpp): a projection <p>_weight,
// optional <p>_bias and <p>_bn_*, counted in `biased` / `normalised`; and `heads` dividing dim.
Projection read_projection(const NodeSpec& spec, const std::string& p, int& biased,
                           int& normalised);
std::int64_t read_heads(const NodeSpec& spec, std::int64_t dim);
// The conformance harness's example of the Q/K/V variants: 4 tokens of 8 channels, 2 heads.
NodeExample attention_example();

// Registers ternion.SSA, ternion.SDSA and ternion.BSA (spiking_register.cpp).
void register_spiking_attention_nodes(NodeFactory& f);

}  // namespace ternion
