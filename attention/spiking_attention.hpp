// Spiking self-attention nodes: ternion.SSA (Spikformer), ternion.SDSA (Spike-driven
// Transformer v1) and ternion.BSA (Bipolar Self-attention: ternary Q/K, Shiftmax, analog V).
// Each maps [tokens, dim_in] input activity to [tokens, dim] spikes and contains its own Q/K/V
// projections (BatchNorm folded) and neurons; the output projection, residuals and MLP are
// separate graph nodes. docs/transformer-format.md lists the parameters, docs/bsa.md the counts.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "attention/spiking_kernels.hpp"
#include "sim/node.hpp"
#include "sim/node_spec.hpp"

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
    SpikingAttentionNode(std::string name, std::string type, spiking::Projection q,
                         spiking::Projection k, spiking::Projection v, std::int64_t heads);

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
    bool membrane(const NodeState* state, std::vector<float>& out) const override;
    // Zeroes the neuron states; everything else in the state is rewritten by every step.
    bool reset_state(NodeState* state) const override;
    // The maps kept by the last step when a trace asked (BSA, SSA; SDSA has no token map).
    bool attention_maps(const NodeState* state, AttentionMaps& out) const override;

    std::int64_t tokens() const { return tokens_; }
    std::int64_t dim() const { return dim_; }
    std::int64_t heads() const { return heads_; }

  protected:
    struct State : NodeState {
        std::vector<float> proj;              // [N][3D] projection outputs (Q | K | V)
        std::vector<float> hq, hk, hv, hout;  // neuron states
        std::vector<float> q, k, v, y;        // [N][D] spikes (V: analog for BSA), attention out
        std::vector<std::int32_t> s, yi;      // integer scores / products, scratch
        std::vector<std::int32_t> expo;       // Shiftmax exponents
        std::vector<std::uint64_t> qm, km, vm, qt, kt, vt;  // bit masks (SSA)
        std::vector<std::uint64_t> vcount;                  // V spikes per token (SSA)
        std::vector<std::uint32_t> cnt;
        // [H][N][N] scores and weights of the last step, kept only when ctx.keep_attention.
        std::vector<float> att_scores, att_weights;
        bool att_kept = false;
    };
    std::unique_ptr<State> make_common_state() const;
    // Runs the fused projection and books its (input, weight) pairs: AC for spikes, |x| ACs
    // for small integers x, MAC for analog values; 4 weight bytes each.
    void project(const Activity& in, State& s, const StepContext& ctx) const;
    // Writes out = spikes in `vals` (length N*D), ascending; returns the non-zero count.
    static std::uint64_t emit(const std::vector<float>& vals, Activity& out);
    static void book_neurons(const StepContext& ctx, std::uint64_t neurons);
    static void book_spikes(const StepContext& ctx, std::uint64_t spikes);
    // The typed counters of this step, or a sink when the caller does not collect them.
    static AttentionCounts& counts(const StepContext& ctx) {
        thread_local AttentionCounts sink;
        return ctx.attention ? *ctx.attention : sink;
    }

    spiking::Projection qkv_;
    std::int64_t dim_in_ = 0, dim_ = 0, heads_ = 1, head_dim_ = 0, tokens_ = 0;
    std::uint64_t proj_params_ = 0, proj_nnz_ = 0;
    int biased_ = 0, normalised_ = 0;
    // Neuron updates per step (SSA: Q, K, V and attention LIFs; SDSA: Q, K, V and D mask
    // neurons; BSA: Q, K and output TSNs, V has none).
    virtual std::uint64_t neurons_per_step() const = 0;
};

class SsaNode : public SpikingAttentionNode {
  public:
    SsaNode(std::string name, spiking::Projection q, spiking::Projection k, spiking::Projection v,
            std::int64_t heads, spiking::LifParams qkv_lif, spiking::LifParams attn_lif,
            float scale, SsaAssociation assoc);
    std::unique_ptr<NodeState> make_state() const override;
    void step(const Activity& in, NodeState* state, Activity& out,
              const StepContext& ctx) const override;
    std::vector<std::pair<std::string, double>> attributes() const override;

  protected:
    std::uint64_t neurons_per_step() const override;

  private:
    spiking::LifParams lif_, attn_;
    float scale_;
    SsaAssociation assoc_;
};

class SdsaNode : public SpikingAttentionNode {
  public:
    SdsaNode(std::string name, spiking::Projection q, spiking::Projection k, spiking::Projection v,
             std::int64_t heads, spiking::LifParams qkv_lif, spiking::LifParams attn_lif,
             SdsaForm form = SdsaForm::qk_first);
    std::unique_ptr<NodeState> make_state() const override;
    void step(const Activity& in, NodeState* state, Activity& out,
              const StepContext& ctx) const override;
    bool membrane(const NodeState* state, std::vector<float>& out) const override;

  protected:
    std::uint64_t neurons_per_step() const override;

  private:
    // The step's stages: Q/K/V spikes; per-channel count of coincident spikes of a and b over
    // tokens (into s.yi); mask neurons on those counts, applied to `gated` (into s.y).
    void fire_qkv(State& s, const StepContext& ctx) const;
    std::uint64_t column_coincidences(const std::vector<float>& a, const std::vector<float>& b,
                                      State& s, const StepContext& ctx) const;
    void mask_channels(const std::vector<float>& gated, State& s, const StepContext& ctx) const;

    spiking::LifParams lif_, attn_;
    SdsaForm form_;
};

class BsaNode : public SpikingAttentionNode {
  public:
    BsaNode(std::string name, spiking::Projection q, spiking::Projection k, spiking::Projection v,
            std::int64_t heads, spiking::TsnParams qk, spiking::TsnParams out);
    std::unique_ptr<NodeState> make_state() const override;
    void step(const Activity& in, NodeState* state, Activity& out,
              const StepContext& ctx) const override;

  protected:
    std::uint64_t neurons_per_step() const override;

  private:
    spiking::TsnParams qk_, out_;
};

// Builders used by register_spiking_attention_nodes (exposed for tests).
std::unique_ptr<Node> build_ssa(const NodeSpec& spec);
std::unique_ptr<Node> build_sdsa(const NodeSpec& spec);
std::unique_ptr<Node> build_bsa(const NodeSpec& spec);

}  // namespace ternion
