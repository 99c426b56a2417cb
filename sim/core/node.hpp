// The node contract: what every graph node (synaptic, neuron, attention, readout) provides to
// the engine. A node is immutable after loading (parameters, weights); everything that changes
// during a sample lives in a NodeState that the engine creates (or resets) per sample.
#pragma once
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/core/error.hpp"
#include "sim/core/layer_geometry.hpp"
#include "sim/core/shape.hpp"
#include "sim/core/thread_team.hpp"
#include "sim/kernels/index_kernels.hpp"
#include "sim/kernels/index_list.hpp"
#include "sim/kernels/neuron_rules.hpp"
#include "sim/kernels/op_counts.hpp"

namespace ternion {

enum class Engine { event, dense };

// A node's output for one sample at one step. `values` is always complete (dense);
// `active` lists the indices of its non-zero entries in ascending order, and `ternary` says
// whether every value is -1, 0 or +1. Producers keep the three consistent (scan() does it).
struct Activity {
    std::vector<float> values;
    IndexList active;
    bool ternary = true;
    // Set only by producers that know every active value is +1 (binary spiking neurons), so
    // consumers can skip reading `values`: on several threads those lines belong to the thread
    // that fired, and each read would pull one across. False is always safe.
    bool all_ones = false;
    // False when the producer was told that no reader needs `active` (StepContext::list_output)
    // and left it empty: `unlisted` then counts the non-zeros. `values` is complete either way.
    bool listed = true;
    std::size_t unlisted = 0;

    std::size_t nonzero() const { return listed ? active.size() : unlisted; }
    // The producer's side of `listed`: no index list, only the count of non-zeros.
    void mark_unlisted(std::size_t count) {
        active.clear();
        listed = false;
        unlisted = count;
    }
    void resize(std::int64_t n) {
        values.assign(static_cast<std::size_t>(n), 0.0f);
        active.clear();
        ternary = true;
        all_ones = false;
        listed = true;
        unlisted = 0;
    }
    // Zero only what is non-zero: cheap when activity is sparse (else one streaming fill).
    void clear() {
        if (!listed || active.size() > values.size() / 16)
            std::fill(values.begin(), values.end(), 0.0f);
        else
            for (auto i : active) values[i] = 0.0f;
        active.clear();
        ternary = true;
        all_ones = false;
        listed = true;
        unlisted = 0;
    }
    // All zeros over n entries, reusing the buffer when the size already fits.
    void reset(std::int64_t n) {
        if (size() == n)
            clear();
        else
            resize(n);
    }
    float value_at(std::uint32_t i) const { return all_ones ? 1.0f : values[i]; }
    // Rebuild `active` and `ternary` from `values`.
    void scan();
    std::int64_t size() const { return static_cast<std::int64_t>(values.size()); }
};

inline void Activity::scan() {
    active.resize(values.size());
    active.resize(collect_nonzero(values.data(), 0, size(), active.data(), ternary));
    all_ones = false;
    listed = true;
    unlisted = 0;
}

// Indices one block of work found (active outputs, spikes), each on cache lines of its own:
// neighbouring blocks run on different threads, and shared lines would bounce between them.
struct alignas(64) BlockIndices : IndexList {
    bool ternary = true;    // every value at these indices is -1 or +1 (where a block tracks it)
    std::size_t count = 0;  // the hits when they are only counted, not listed
};

// Rows per part when n rows are split into `parts` parts of whole cache lines (64 floats).
// Synaptic layers and neurons split the same way, so each thread keeps the rows it wrote in the
// previous node of the chain in its own cache.
inline std::int64_t row_part_size(std::int64_t n, std::int64_t parts) {
    const std::int64_t b = (n + parts - 1) / (parts < 1 ? 1 : parts);
    return std::max<std::int64_t>(64, (b + 63) / 64 * 64);
}

// Everything a node may need while stepping. `ops` accumulates this node's counts.
struct StepContext {
    Engine engine = Engine::event;
    std::int64_t sample = 0;     // global sample index (keys random numbers)
    std::int64_t step = 0;       // time step t in [0, timesteps)
    std::int64_t timesteps = 1;  // T
    std::uint64_t seed = 0;
    bool parallel_inner = false;  // the node may split its work across threads
    int threads = 1;              // the run's thread count: how many row blocks a node may use
    // When set (one sample on several threads), blocks go to this persistent team instead of
    // the task pool: a step's parallel sections are microseconds apart.
    ThreadTeam* team = nullptr;
    OpCounts* ops = nullptr;
    // Set when a recorder wants this node's attention maps at this step: the node then keeps
    // them in its state for attention_maps().
    bool keep_attention = false;
    // False when no reader of this node's output needs its `active` list (each consumer reads
    // whole values, and nothing records the node): a producer may then only count its
    // non-zeros (Activity::listed). Always true for Output nodes and recorded ones.
    bool list_output = true;
    // Off only to measure what counting costs (`ternion run --no-op-counts`): synaptic layers
    // then skip their per-event counting.
    bool count_ops = true;
    // Attention nodes add their typed break-down here (see AttentionCounts); null elsewhere or
    // when nothing is counted.
    AttentionCounts* attention = nullptr;
    // Nodes that apply weights add their (non-zero input, non-zero weight) pairs here.
    SynapseCounts* synapses = nullptr;
    // For a node that takes_recurrent_apart() and has both kinds of inputs: the summed values
    // of the edges closing a cycle into it (in_size() of them); null otherwise.
    const float* recurrent = nullptr;

    // Below this much work in a step (synapse events, neuron updates), a node's blocks run on
    // the calling thread: waking the other threads and waiting for them costs 2-10 µs on a
    // shared 2-vCPU machine, about what 16384 synapse events take (~1 ns each). At 4096, a
    // 4000-neuron LIF network ran 0.45-0.7x as fast on 2 threads as on 1 (0.93x at 16384); at
    // N = 16000 every layer is above either threshold.
    static constexpr std::int64_t kParallelWork = 16384;
    // The threshold in force (RunConfig::parallel_work): tests lower it to 0 so that even small
    // layers split and thread-count determinism is checked on them.
    std::int64_t parallel_work = kParallelWork;
    // Neurons per block of a population of n: with a thread team one block per member, split
    // like the synaptic layers' rows so that each member updates the inputs it just computed;
    // otherwise blocks small enough that mid-sized populations use every core.
    static constexpr std::int64_t kNeuronBlock = 1024;
    std::int64_t neuron_block(std::int64_t n) const {
        return team ? row_part_size(n, team->size()) : kNeuronBlock;
    }
    // A neuron population's update in blocks of neuron_block(n): f(b, begin, end, list) updates
    // block b and lists its spikes in `list` (cleared here). `lists` and `block` belong to the
    // node's state and follow the block size. Returns the work to pass on to concat_blocks.
    // f is copied into the blocks' closure: members on other cores read no caller's stack.
    template <class F>
    std::int64_t update_neuron_blocks(std::int64_t n, std::vector<BlockIndices>& lists,
                                      std::int64_t& block, F f) const {
        const std::int64_t bs = neuron_block(n), nb = (n + bs - 1) / bs;
        const std::int64_t work = 2 * n;  // for_blocks' units: a neuron update counts two
        if (block != bs) {
            lists.assign(static_cast<std::size_t>(nb), {});
            block = bs;
        }
        BlockIndices* L = lists.data();
        for_blocks(
            nb, 1,
            [f, L, bs, n](std::int64_t b0, std::int64_t b1) {
                for (std::int64_t b = b0; b < b1; ++b) {
                    L[b].clear();
                    f(b, b * bs, std::min(n, (b + 1) * bs), L[b]);
                }
            },
            work);
        return work;
    }
    // Default `work` of for_blocks / concat_blocks: always worth splitting.
    static constexpr std::int64_t kAlwaysSplit = std::numeric_limits<std::int64_t>::max();

    // out = the blocks' indices one after another. With a team, each member copies its own
    // blocks: the lists stay in the cache of the thread that wrote them, instead of crossing to
    // one copying thread every step (and back when the member rewrites them).
    // `work` as given to for_blocks for the same blocks: a node run on one thread copies alone.
    // A short list is copied by the caller even then: a copied index costs about a unit of work,
    // so below parallel_work indices the members' wake-up and wait would cost more than the copy
    // (a 16000-neuron layer emits ~450 spikes a step).
    void concat_blocks(const std::vector<BlockIndices>& blocks, IndexList& out,
                       std::int64_t work = kAlwaysSplit) const {
        std::size_t total = 0;
        for (const auto& b : blocks) total += b.size();
        out.resize(total);
        if (!team || total < 64 || work < parallel_work ||
            static_cast<std::int64_t>(total) < parallel_work) {
            std::size_t at = 0;
            for (const auto& b : blocks) {
                std::copy(b.begin(), b.end(), out.begin() + static_cast<std::ptrdiff_t>(at));
                at += b.size();
            }
            return;
        }
        team->for_parts(static_cast<std::int64_t>(blocks.size()), [&](std::int64_t b0,
                                                                      std::int64_t b1) {
            std::size_t at = 0;
            for (std::int64_t b = 0; b < b0; ++b) at += blocks[static_cast<std::size_t>(b)].size();
            for (std::int64_t b = b0; b < b1; ++b) {
                const auto& blk = blocks[static_cast<std::size_t>(b)];
                std::copy(blk.begin(), blk.end(), out.begin() + static_cast<std::ptrdiff_t>(at));
                at += blk.size();
            }
        });
    }

    // Calls f(begin, end) over blocks of [0, n), on several threads when `work` is worth it.
    // Blocks write disjoint outputs, so results do not depend on how many threads run them.
    template <class F>
    void for_blocks(std::int64_t n, std::int64_t grain, F&& f,
                    std::int64_t work = kAlwaysSplit) const {
        if (!parallel_inner || n <= grain || work < parallel_work) {
            f(std::int64_t{0}, n);
            return;
        }
        if (team) {
            team->for_parts(n, f);
            return;
        }
        // Isolated: while this thread waits for its blocks it must not pick up another sample's
        // task, which would reuse this thread's workspace under the waiting sample.
        tbb::this_task_arena::isolate([&] {
            tbb::parallel_for(
                tbb::blocked_range<std::int64_t>(0, n, grain),
                [&](const tbb::blocked_range<std::int64_t>& r) { f(r.begin(), r.end()); });
        });
    }
};

// Attention maps of one node at one step, per head: `scores` before normalisation (BSA's integer
// ternary products, SSA's Q.K^T counts, ANN logits) and `weights` after (Shiftmax / softmax
// weights; SSA's scaled products). Row-major [heads, rows, cols].
struct AttentionMaps {
    std::int64_t heads = 0, rows = 0, cols = 0;
    std::vector<float> scores, weights;
};

// Per-sample mutable state of a node (membrane potentials, delay lines, ...).
struct NodeState {
    virtual ~NodeState() = default;
};

enum class NodeCategory { input, output, synaptic, neuron, attention, readout, other };
const char* category_name(NodeCategory c);

class Node {
  public:
    Node(std::string name, std::string type) : name_(std::move(name)), type_(std::move(type)) {}
    virtual ~Node() = default;
    Node(const Node&) = delete;
    Node& operator=(const Node&) = delete;

    const std::string& name() const { return name_; }
    const std::string& type() const { return type_; }  // the type string of the model file
    const Shape& in_shape() const { return in_shape_; }
    const Shape& out_shape() const { return out_shape_; }
    std::int64_t in_size() const { return numel(in_shape_); }
    std::int64_t out_size() const { return numel(out_shape_); }

    virtual NodeCategory category() const = 0;
    // True when the output is spikes ({0,1} or {-1,0,1}); firing rates are reported for these.
    virtual bool is_spiking() const { return false; }
    // True when step() reads its input through `values` only, never `active` (elementwise
    // neurons): its producer then need not list its non-zeros (StepContext::list_output).
    virtual bool reads_values_only() const { return false; }
    // Whether each step's output (and counts) depends on that step's input alone: no state,
    // no random numbers, no step index. The engine may then keep an output whose inputs have
    // not changed (RunConfig::reuse_constant).
    virtual bool pure() const { return false; }

    // Fixes the input shape (the summed incoming edges) and derives the output shape.
    // Throws InputError naming the field when they do not fit. Input nodes get an empty shape.
    virtual void bind(const Shape& in_shape) = 0;
    // The shape this node expects before binding, when its parameters fix it (else empty).
    virtual Shape declared_in_shape() const { return {}; }

    virtual std::unique_ptr<NodeState> make_state() const { return nullptr; }
    // Work that depends only on the run's thread count (a Linear's row split), done once per
    // run from one thread before the run's clock starts, and shared by every state of the run.
    virtual void prepare_run(std::int64_t /*threads*/) const {}
    // Returns a state of this node to what make_state() gives, in place, and says whether it
    // could: the engine then reuses it for the next sample instead of allocating (and faulting
    // in) a new one. Nodes whose state would be cheap to rebuild keep the default.
    virtual bool reset_state(NodeState* s) const { return s == nullptr; }
    // True when the node takes the edges that close a cycle into it apart from the others:
    // `in` is then the sum of the other edges and StepContext::recurrent that of the cycle's.
    virtual bool takes_recurrent_apart() const { return false; }
    // One time step. `in` is the sum of the incoming edges; `out` is pre-sized to out_size().
    virtual void step(const Activity& in, NodeState* state, Activity& out,
                      const StepContext& ctx) const = 0;

    // Attention maps of the last step (kept when StepContext::keep_attention was set); false
    // for nodes without attention.
    virtual bool attention_maps(const NodeState* state, AttentionMaps& out) const { return false; }

    // Neurons whose update is one linear recurrence give it here (what `ternion quantize` maps
    // onto a chip's integer datapath); nullopt for every other node.
    virtual std::optional<kernels::LeakyForm> leaky_form() const { return std::nullopt; }

    // Membrane potential (or the node's main state) for tracing; false when there is none.
    virtual bool membrane(const NodeState* state, std::vector<float>& out) const { return false; }

    // Multiply-accumulates per step of the same node run as an ANN (every input dense).
    virtual std::uint64_t dense_macs_per_step() const { return 0; }
    // Synaptic operations per step counted as NeuroBench's "Dense": every synapse, inputs and
    // weights all taken as non-zero (0 for nodes NeuroBench does not hook).
    virtual std::uint64_t dense_synops_per_step() const { return 0; }
    // Stored parameters and the fraction of weights that are non-zero (-1 when no weights).
    virtual std::uint64_t param_count() const { return 0; }
    // Weights of a connection layer (bias excluded): NeuroBench's ConnectionSparsity counts
    // weight_count x (1 - weight_density) zeros over these.
    virtual std::uint64_t weight_count() const { return 0; }
    virtual double weight_density() const { return -1.0; }
    // Numeric structure facts for traces' node metadata (e.g. tokens, dim, heads).
    virtual std::vector<std::pair<std::string, double>> attributes() const { return {}; }
    // What kind of layer the counting conventions see (connection, pooling, BatchNorm).
    virtual CountTraits count_traits() const { return {}; }
    // Structure facts for chip mappers (hw/chip); `other` unless the node says more.
    virtual LayerGeometry geometry() const { return {}; }
    // Non-zero weights per input and per output of a connection (chip mappers); empty otherwise.
    virtual ConnectionNonzeros connection_nonzeros() const { return {}; }
    // The source modules as per-module conventions count them (folded BatchNorm, biases).
    virtual ModuleShape module_shape() const { return {}; }
    // Attention nodes: the structure the counting conventions' closed forms need.
    virtual std::optional<AttentionShape> attention_shape() const { return std::nullopt; }
    // key/value lines for `ternion info`.
    virtual std::vector<std::pair<std::string, std::string>> summary() const { return {}; }

    // Where the node came from, for error messages.
    void set_origin(std::string file) { origin_ = std::move(file); }
    const std::string& origin() const { return origin_; }

  protected:
    [[noreturn]] void fail(const std::string& field, const std::string& what) const {
        throw InputError(origin_, "nodes/" + name_ + (field.empty() ? "" : "/" + field), what);
    }
    Shape in_shape_, out_shape_;

  private:
    std::string name_, type_, origin_;
};

}  // namespace ternion
