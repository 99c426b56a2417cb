// Operation and memory-traffic counters that every node reports per sample and step, and the
// typed break-down that attention nodes add (which part of their work is projection, score,
// normalisation or value mixing). hw/ prices these; nothing here knows about energy. Fields are
// listed once in X-macros so reports, traces and pricing iterate over the same set.
#pragma once
#include <array>
#include <cstdint>
#include <string_view>

namespace ternion {

// name, meaning
#define TERNION_OP_FIELDS(X)                                                                   \
    X(ac)                /* accumulates: a {-1,0,+1} operand times a weight, or a plain add */ \
    X(mac)               /* multiply-accumulates on analog operands */                         \
    X(shift)             /* bit shifts (Shiftmax weights) */                                   \
    X(cmp)               /* comparisons (thresholds, max-pool) */                              \
    X(exp)               /* exponentials (softmax) */                                          \
    X(div)               /* divisions (normalisation) */                                       \
    X(neuron_update)     /* membrane state updates */                                          \
    X(spikes_out)        /* non-zero outputs of spiking nodes (+1 and -1 alike) */             \
    X(weight_read_bytes) /* bytes of weights read */                                           \
    X(state_read_bytes)  /* bytes of neuron/attention state read */                            \
    X(state_write_bytes) /* bytes of state written */                                          \
    X(spike_write_bytes) /* bytes of spike events written (routing) */                         \
    X(overflow)          /* fixed-point states that saturated or wrapped (not an operation) */

struct OpCounts {
#define TERNION_OP_DECL(name) std::uint64_t name = 0;
    TERNION_OP_FIELDS(TERNION_OP_DECL)
#undef TERNION_OP_DECL

    OpCounts& operator+=(const OpCounts& o) {
#define TERNION_OP_ADD(name) name += o.name;
        TERNION_OP_FIELDS(TERNION_OP_ADD)
#undef TERNION_OP_ADD
        return *this;
    }
    friend OpCounts operator+(OpCounts a, const OpCounts& b) {
        return a += b;
    }
    bool operator==(const OpCounts&) const = default;

    // Visit (name, value) pairs in the fixed field order; for_each_mut passes the values by
    // reference.
    template <class F>
    void for_each(F&& f) const {
        visit(*this, f);
    }
    template <class F>
    void for_each_mut(F&& f) {
        visit(*this, f);
    }

  private:
    template <class Self, class F>
    static void visit(Self& self, F& f) {
#define TERNION_OP_VISIT(name) f(std::string_view(#name), self.name);
        TERNION_OP_FIELDS(TERNION_OP_VISIT)
#undef TERNION_OP_VISIT
    }
};

// What an attention node's counted work consists of. The ac/mac/shift/cmp of OpCounts are the
// totals; these fields split them by stage so that each counting convention can bill the
// projections as connection layers and the spike-spike products by its own rule.
#define TERNION_ATTENTION_FIELDS(X)                                                          \
    X(proj_ac)        /* Q/K/V projections: accumulates (spike or small-integer inputs) */   \
    X(proj_mac)       /* Q/K/V projections: multiply-accumulates (analog inputs) */          \
    X(score_ac)       /* first spike-spike product (Q K^T; SSA K^T V when computed first) */ \
    X(norm_ac)        /* normalisation adds (Shiftmax sums and exponent subtractions) */     \
    X(norm_shift)     /* normalisation shifts */                                             \
    X(norm_cmp)       /* normalisation comparisons (max search, leading one) */              \
    X(mix_ac)         /* second product: weights or scores applied to V */                   \
    X(mix_shift)      /* shifts of the value mixing (Shiftmax weights are powers of two) */  \
    X(q_spikes)       /* non-zero Q spikes (both polarities) */                              \
    X(k_spikes)       /* non-zero K spikes */                                                \
    X(v_spikes)       /* non-zero V spikes (0 where V is analog, as in BSA) */               \
    X(q_neg_spikes)   /* Q spikes of value -1 (BSA) */                                       \
    X(k_neg_spikes)   /* K spikes of value -1 (BSA) */                                       \
    X(out_neg_spikes) /* output spikes of value -1 (BSA) */                                  \
    X(qk_first_heads) /* SSA: head-steps evaluated as (Q K^T) V */                           \
    X(kv_first_heads) /* SSA: head-steps evaluated as Q (K^T V) */                           \
    X(mask_channels)  /* SDSA: open channels of the attention mask */

struct AttentionCounts {
#define TERNION_ATT_DECL(name) std::uint64_t name = 0;
    TERNION_ATTENTION_FIELDS(TERNION_ATT_DECL)
#undef TERNION_ATT_DECL

    AttentionCounts& operator+=(const AttentionCounts& o) {
#define TERNION_ATT_ADD(name) name += o.name;
        TERNION_ATTENTION_FIELDS(TERNION_ATT_ADD)
#undef TERNION_ATT_ADD
        return *this;
    }
    bool operator==(const AttentionCounts&) const = default;

    template <class F>
    void for_each(F&& f) const {
#define TERNION_ATT_VISIT(name) f(std::string_view(#name), name);
        TERNION_ATTENTION_FIELDS(TERNION_ATT_VISIT)
#undef TERNION_ATT_VISIT
    }
};

// Synaptic events as NeuroBench counts them: (non-zero input, non-zero weight) pairs, one per
// pair whatever the input's value, split by whether the step's whole input was in {-1, 0, 1}
// (NeuroBench's AC test, made per forward call) or not. Filled by every node that applies
// weights to its input, attention projections included.
struct SynapseCounts {
    std::uint64_t pairs_ternary = 0, pairs_other = 0;
    SynapseCounts& operator+=(const SynapseCounts& o) {
        pairs_ternary += o.pairs_ternary;
        pairs_other += o.pairs_other;
        return *this;
    }
    bool operator==(const SynapseCounts&) const = default;
};

// The PyTorch modules a node stands for, as far as counting conventions that count per module
// (syops-counter) need them. ternion folds BatchNorm into the weights and fuses Q/K/V
// projections, neurons and attention into one node; these say what was folded or fused.
struct ModuleShape {
    // Bias terms per call of the weight layer(s) as syops counts them: Linear out_features,
    // Conv out_channels x output positions (0 when the source layer had no bias).
    std::uint64_t bias_ops_per_step = 0;
    // Elements per step normalised by BatchNorms folded into this node (0: none).
    std::uint64_t batchnorm_elems_per_step = 0;
    // Inside attention nodes: neuron elements per step fed by analog values (Q/K/V and the
    // attention neuron of SSA/SDSA, the ternary neurons of BSA), and dense products per step
    // of the projection linears.
    std::uint64_t neuron_elems_per_step = 0;
};

// Which closed form the papers' convention takes for a spiking attention's spike-spike work:
// Spikformer's Q (K^T V) products gated by the Q, K and V rates; the Spike-driven Transformer's
// column sum of Q (.) K; BSA's ternary Q K^T with Shiftmax and shift-and-add mixing.
enum class AttentionClosedForm { none, qkv_products, column_sum, ternary_shiftmax };

// Structure facts of an attention node that the counting conventions' closed forms need.
struct AttentionShape {
    std::int64_t tokens = 0, dim = 0, heads = 0, dim_in = 0;
    // Dense multiply-accumulates of the Q/K/V projections in one step (3 N D_in D).
    std::uint64_t proj_dense_macs_per_step = 0;
    AttentionClosedForm closed_form = AttentionClosedForm::none;
    bool spiking_v = true;          // V is spikes (an activation NeuroBench counts), not analog
    std::int64_t mask_neurons = 0;  // neurons per step gating channels (SDSA's mask: D)
};

// How the counting conventions see a node, as typed facts: pricing never reads type names.
struct CountTraits {
    // A weighted connection primitive (NIR's Linear, Affine, Conv1d/2d/3d): the layers NeuroBench
    // and syops-counter hook and the papers call conv/linear.
    bool connection = false;
    bool pooling = false;    // a pooling layer (syops-counter's pool hook)
    bool batchnorm = false;  // a BatchNorm kept as its own layer (syops-counter's BatchNorm hook)
    // Connection layers: bytes of one stored weight value (4 for float32, 1 or 2 for a quantised
    // model's integers). The ANN equivalent reads one weight per MAC at this width.
    int weight_value_bytes = 0;
    // Integer neurons: the width their summed input accumulates into (a FixedLIF's current).
    // On a connection layer: its consumers' width, filled in by make_run_record.
    int accumulator_bits = 0;
    // Connection layers, by their shape whatever the weights' values (SpikingJelly's Lemaire
    // addressing counts these): the weights one input element meets (Linear: out_features;
    // Conv: out_channels / groups x kernel volume), and a convolution's out_channels x kernel
    // volume (0 for a Linear).
    std::uint64_t fanout_taps = 0;
    std::uint64_t kernel_taps = 0;
};

#define TERNION_OP_COUNT1(name) +1
inline constexpr int kOpFieldCount = 0 TERNION_OP_FIELDS(TERNION_OP_COUNT1);
#undef TERNION_OP_COUNT1

}  // namespace ternion
