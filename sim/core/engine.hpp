// Runs a Graph over a batch of samples for T steps: samples in parallel (oneTBB), large nodes
// split into blocks inside a sample. Results (spikes, counts) are identical for any thread count:
// every random number is keyed by (seed, sample, step, index) and every sum has a fixed order.
#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "sim/core/graph.hpp"
#include "sim/core/step_tally.hpp"

namespace ternion {

// Supplies the activity of one Input node for one sample and step.
class InputSource {
  public:
    virtual ~InputSource() = default;
    virtual std::int64_t num_samples() const = 0;
    virtual Shape sample_shape() const = 0;
    // Steps the data itself fixes (spike tensors), or 0 when any T works (analog data).
    virtual std::int64_t fixed_timesteps() const { return 0; }
    // Whether fill() gives the same activity at every step of a sample (direct encoding).
    virtual bool same_every_step() const { return false; }
    // Fills `out` (pre-sized) for sample s at step t; counts what encoding costs into `ops`.
    virtual void fill(std::int64_t sample, std::int64_t step, std::uint64_t seed, Activity& out,
                      OpCounts& ops) const = 0;
    // Class labels, or empty.
    virtual const std::vector<std::int64_t>& labels() const = 0;
    // The file (or array name) errors name; dataset(): the field within it ("/spikes",
    // "/inputs/<node>/data", ...), empty when the source has none.
    virtual std::string describe() const = 0;
    virtual std::string dataset() const { return ""; }
    // Where the labels came from, for errors about them: an IDX input's labels are another
    // file's ("data" of the labels file), not the images'.
    virtual std::string labels_file() const { return describe(); }
    virtual std::string labels_field() const { return "/labels"; }
};

// Called from worker threads after each node's step; one sample is only ever on one thread.
// Within a sample the calls come step by step or, under the node-major schedule
// (RunConfig::node_major), node by node with each node's steps in order: an observer files
// what it sees by (sample, step, node) and does not rely on the order between nodes.
class StepObserver {
  public:
    virtual ~StepObserver() = default;
    virtual bool wants(int node) const = 0;
    // Whether node `node` should keep its attention maps at (sample, step).
    virtual bool wants_attention(int node, std::int64_t sample, std::int64_t step) const {
        return false;
    }
    virtual void on_step(std::int64_t sample, std::int64_t step, int node, const Node& n,
                         const Activity& out, const NodeState* state, const OpCounts& ops) = 0;
};

struct RunConfig {
    Engine engine = Engine::event;
    std::int64_t timesteps = 0;  // 0: take the input's fixed T
    std::uint64_t seed = 0;
    int threads = 1;
    std::int64_t first_sample = 0;
    std::int64_t num_samples = -1;  // -1: all
    bool progress = false;          // progress bar on stderr
    StepObserver* observer = nullptr;
    bool count_ops = true;  // false only for measuring the cost of counting
    // Per-node measurements taken at every step into NodeStats::tallies (sim/core/step_tally.hpp),
    // in this order, at most kTallySlots slots in all; asked for by whoever needs them.
    std::vector<const StepTally*> tallies;
    // Work per step below which a node does not split across threads (StepContext).
    std::int64_t parallel_work = StepContext::kParallelWork;
    // Incremented after each sample (e.g. a progress display of several processes), or null.
    std::atomic<std::int64_t>* samples_done = nullptr;
    // Set by another thread to stop the run: samples not yet started are skipped and run()
    // throws Interrupted (Python's Ctrl-C). Null: the run cannot be stopped.
    const std::atomic<bool>* cancel = nullptr;
    // Keep each sample's NodeStats::tallies (RunResult::sample_tallies), so that runs of parts of
    // a sample range can be merged into the sums the whole run would make.
    bool keep_sample_sums = false;
    // Time each node's steps (NodeStats::seconds): two clock reads per node and step, so it is
    // asked for (`ternion run --node-times`).
    bool time_nodes = false;
    // Nodes whose output is a function of their input alone (Node::pure) and whose inputs are
    // the same at every step of a sample (a direct-encoded image and what only such nodes
    // compute from it) are computed at the first step and kept; their counts are booked every
    // step as computed. Off only to check that this changes nothing.
    bool reuse_constant = true;
    // Feed-forward graphs (no delayed edge, no cycle) can run node by node: each node takes all
    // T steps of a sample before the next node starts, keeping its T outputs. Every node still
    // sees the same inputs in the same step order, so results and counts are those of the
    // step-by-step schedule; but a layer's weights are read from memory once per sample
    // instead of once per step (a Spikformer's ~37 MB of weights do not stay in a 32 MB L3
    // across a whole step). The T outputs of every node are allocated once per worker thread,
    // which costs about as much as a few samples save, so `automatic` runs node by node when
    // each thread has at least kNodeMajorSamples samples; graphs with delays or cycles, and
    // runs whose T outputs of all nodes would pass kNodeMajorBytes, always go step by step.
    enum class Schedule { automatic, node_major, step_major };
    Schedule schedule = Schedule::automatic;
    static constexpr std::int64_t kNodeMajorSamples = 4;
    static constexpr std::uint64_t kNodeMajorBytes = std::uint64_t{512} << 20;
};

struct NodeStats {
    OpCounts ops;                   // summed over samples and steps
    std::uint64_t nonzero_out = 0;  // non-zero outputs (spikes, both polarities)
    std::uint64_t positive_out = 0;
    std::uint64_t negative_out = 0;
    std::uint64_t nonzero_in = 0;  // non-zero elements of the summed input
    bool input_ternary = true;     // every input it saw was in {-1,0,+1}
    AttentionCounts attention;     // attention nodes' typed break-down
    SynapseCounts synapses;        // synaptic events, by whether the step's input was ternary
    // RunConfig::tallies' slots, in their order (the rest stay 0).
    TallySlots tallies{};
    // With RunConfig::time_nodes: seconds spent in this node's steps (input gathering, step,
    // tallies), summed over samples and threads.
    double seconds = 0.0;
};

struct RunResult {
    std::int64_t samples = 0;
    std::int64_t timesteps = 0;
    std::vector<NodeStats> nodes;                // by node index
    std::vector<std::int64_t> predictions;       // argmax of the output, per sample
    std::vector<std::vector<float>> output_sum;  // output summed over time, per sample
    double simulate_s = 0.0;
    std::vector<const StepTally*> tallies;  // RunConfig::tallies: what NodeStats::tallies hold
    std::vector<double> sample_s;  // wall time of each sample (its latency), in sample order
    // With RunConfig::keep_sample_sums: [sample][node][slot] the tallies of each sample.
    std::vector<double> sample_tallies;
};

// Adds the stats of one more sample (or part of a run) to `d`: the engine's own merge.
void accumulate(NodeStats& d, const NodeStats& s);

RunResult run(const Graph& g, const InputSource& input, const RunConfig& cfg);
// Whether a run of `samples` samples under `cfg` goes node by node (RunConfig::Schedule),
// holding each node's T outputs per thread: memory estimates count them.
bool runs_node_major(const Graph& g, const RunConfig& cfg, std::int64_t samples);
// Several Input nodes: inputs[k] feeds g.inputs()[k]. Every source holds the same samples;
// the steps are cfg.timesteps, else the spike sources' common T. Source k > 0 draws its random
// numbers with input_seed(cfg.seed, k) (sim/core/rng.hpp), so two encoded inputs never share them.
RunResult run(const Graph& g, const std::vector<const InputSource*>& inputs, const RunConfig& cfg);

}  // namespace ternion
