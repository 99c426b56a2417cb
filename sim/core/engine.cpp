#include "sim/core/engine.hpp"

#include <tbb/enumerable_thread_specific.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>

#include "sim/core/rng.hpp"

namespace ternion {

namespace {

struct Workspace {
    std::vector<Activity> out, prev;
    std::vector<std::vector<Activity>> steps;  // node-major schedule: [node][step] outputs
    std::vector<std::unique_ptr<NodeState>> states;
    Activity sum, recurrent_sum, whole;        // gather_input: joined edges
    std::vector<int> feed_edges, cycle_edges;  // and a neuron's edges taken apart
    std::vector<std::uint64_t> union_bits;     // gather_input: the sources' active indices
    std::vector<std::uint32_t> candidates;     // and the same, listed
    std::vector<NodeStats> stats;
    // [tally][node]: what each of RunConfig::tallies keeps between a node's steps.
    std::vector<std::vector<std::unique_ptr<StepTally::Scratch>>> tally_scratch;
    // Constant nodes (RunShared::constant): the counts of their first step, booked again at
    // every later step of the sample.
    std::vector<OpCounts> first_ops;
    std::vector<SynapseCounts> first_synapses;
    bool ready = false;
};

// What edge `ei` carries at this step: its source's output, or the previous step's if delayed.
const Activity& edge_source(const Graph& g, const Workspace& ws, int ei) {
    const Edge& e = g.edges()[static_cast<std::size_t>(ei)];
    return e.delayed ? ws.prev[static_cast<std::size_t>(e.src)]
                     : ws.out[static_cast<std::size_t>(e.src)];
}

// Sums edges `ins` into `s` (n values), or returns the single source directly.
// `join_events` receives the non-zero events that a join of several edges accumulated (one add
// each into the join's buffer, as an event-driven residual join does); 0 for a single edge.
const Activity& gather_edges(const Graph& g, const std::vector<int>& ins, std::int64_t n,
                             Workspace& ws, Activity& s, std::uint64_t& join_events) {
    join_events = 0;
    if (ins.size() == 1) return edge_source(g, ws, ins[0]);
    auto source = [&](int ei) -> const Activity& { return edge_source(g, ws, ei); };
    std::size_t events = 0;
    for (int ei : ins) events += source(ei).active.size();
    join_events = events;
    if (events > static_cast<std::size_t>(n) / 8) {
        // Dense enough: whole vectors beat scattered adds. Values are complete (zero outside
        // `active`), and each element still gets 0 + the edges' values in edge order.
        s.values.assign(static_cast<std::size_t>(n), 0.0f);
        for (int ei : ins) {
            const float* a = source(ei).values.data();
            float* v = s.values.data();
            for (std::int64_t i = 0; i < n; ++i) v[i] += a[i];
        }
        s.scan();
        return s;
    }
    s.reset(n);
    // The union of the sources' active indices holds every non-zero of the sum: marked in a
    // bitmap and read back in ascending order, it costs the activity, not the size, of the node
    // (plus one bit per element), with no data-dependent branches.
    auto& bits = ws.union_bits;
    bits.assign(static_cast<std::size_t>((n + 63) / 64), 0);
    for (int ei : ins) {  // fixed edge order: deterministic float sums
        const Activity& a = source(ei);
        for (auto i : a.active) {
            s.values[i] += a.value_at(i);
            bits[i / 64] |= std::uint64_t{1} << (i % 64);
        }
    }
    auto& cand = ws.candidates;
    cand.resize(bits.size() * 64);
    std::size_t nc = 0;
    for (std::size_t w = 0; w < bits.size(); ++w)
        if (bits[w])
            nc += mask_indices(bits[w], static_cast<std::uint32_t>(w * 64), cand.data() + nc);
    cand.resize(nc);
    // Keep the candidates whose sum is non-zero (terms of opposite sign may cancel).
    s.active.resize(cand.size());
    std::size_t k = 0;
    bool other = false;
    for (auto i : cand) {
        const float v = s.values[i];
        s.active[k] = i;
        k += v != 0.0f;
        other |= v != 0.0f && v != 1.0f && v != -1.0f;
    }
    s.active.resize(k);
    s.ternary = !other;
    s.all_ones = false;
    return s;
}

// Node u's input: the sum of its incoming edges (gather_edges). A node that takes its recurrent
// input apart, with both kinds of edges, gets the other edges in the result and the sum of the
// edges closing a cycle in ctx.recurrent; the join's events are those of every edge either way.
const Activity& gather_input(const Graph& g, int u, Workspace& ws, StepContext& ctx,
                             std::uint64_t& join_events) {
    const auto& ins = g.in_edges(u);
    const std::int64_t n = g.node(u).in_size();
    if (!g.node(u).takes_recurrent_apart() || ins.size() < 2)
        return gather_edges(g, ins, n, ws, ws.sum, join_events);
    ws.feed_edges.clear();
    ws.cycle_edges.clear();
    for (int ei : ins)
        (g.edges()[static_cast<std::size_t>(ei)].closes_cycle ? ws.cycle_edges : ws.feed_edges)
            .push_back(ei);
    if (ws.feed_edges.empty() || ws.cycle_edges.empty())
        return gather_edges(g, ins, n, ws, ws.sum, join_events);
    std::uint64_t unused = 0;
    ctx.recurrent = gather_edges(g, ws.cycle_edges, n, ws, ws.recurrent_sum, unused).values.data();
    const Activity& in = gather_edges(g, ws.feed_edges, n, ws, ws.sum, unused);
    join_events = 0;
    for (int ei : ins) join_events += edge_source(g, ws, ei).active.size();
    return in;
}

class Progress {
  public:
    Progress(std::int64_t total, bool on) : total_(total), on_(on && isatty(STDERR_FILENO)) {}
    void tick() {
        auto done = ++done_;
        if (!on_) return;
        auto now = std::chrono::steady_clock::now();
        std::lock_guard<std::mutex> lk(mu_);
        if (done != total_ && now - last_ < std::chrono::milliseconds(100)) return;
        last_ = now;
        double el = std::chrono::duration<double>(now - start_).count();
        int w = 30, filled = static_cast<int>(w * done / std::max<std::int64_t>(total_, 1));
        std::fprintf(
            stderr, "\r[%.*s%*s] %lld/%lld samples  %.1fs  eta %.1fs", filled,
            "##############################", w - filled, "", static_cast<long long>(done),
            static_cast<long long>(total_), el,
            done ? el * static_cast<double>(total_ - done) / static_cast<double>(done) : 0.0);
        if (done == total_) std::fprintf(stderr, "\n");
    }

  private:
    std::int64_t total_;
    bool on_;
    std::atomic<std::int64_t> done_{0};
    std::mutex mu_;
    std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now(), last_{};
};

// Nodes whose non-zeros no one reads by index: every consumer takes this node as its only
// input, undelayed (a delayed edge copies the list), and reads whole values; nothing records
// it, and it is not the output.
std::vector<char> listed_outputs(const Graph& g, const RunConfig& cfg, int out_node) {
    const int n = g.size();
    std::vector<char> list_out(static_cast<std::size_t>(n), 1);
    std::vector<int> consumers(static_cast<std::size_t>(n), 0), by_values(consumers);
    for (const Edge& e : g.edges()) {
        const auto s = static_cast<std::size_t>(e.src);
        ++consumers[s];
        by_values[s] +=
            !e.delayed && g.in_edges(e.dst).size() == 1 && g.node(e.dst).reads_values_only();
    }
    for (int u = 0; u < n; ++u) {
        const auto k = static_cast<std::size_t>(u);
        list_out[k] = !(consumers[k] > 0 && by_values[k] == consumers[k] && u != out_node &&
                        !(cfg.observer && cfg.observer->wants(u)));
    }
    return list_out;
}

// What every sample of one run shares.
struct RunShared {
    const Graph& g;
    const RunConfig& cfg;
    std::vector<const InputSource*> inputs;  // inputs[k] feeds g.inputs()[k]
    std::vector<std::uint64_t> seeds;        // input_seed(cfg.seed, k)
    std::vector<int> source_of;              // per node: its index in `inputs`, or -1
    std::int64_t first = 0, T = 0;
    int out_node = -1;
    std::vector<char> list_out;
    std::vector<char> constant;  // output the same at every step of a sample (constant_nodes)
    ThreadTeam* team = nullptr;
    bool node_major = false;                // RunConfig::schedule: node by node
    std::vector<std::vector<int>> sources;  // per node: its edges' distinct source nodes
    std::vector<int> tally_offset;          // per RunConfig::tallies entry: its first slot
};

// Whether the run goes node by node (RunConfig::schedule): asked for, or automatic with enough
// samples per thread; and no edge waits a step or closes a cycle, and T outputs of every node
// fit.
bool node_major_fits(const Graph& g, const RunConfig& cfg, std::int64_t T, std::int64_t samples) {
    using S = RunConfig::Schedule;
    if (cfg.schedule == S::step_major || !g.delayed_sources().empty()) return false;
    if (cfg.schedule == S::automatic &&
        samples < RunConfig::kNodeMajorSamples * static_cast<std::int64_t>(cfg.threads))
        return false;
    std::uint64_t bytes = 0;
    for (const Edge& e : g.edges())
        if (e.delayed || e.closes_cycle) return false;
    for (int u = 0; u < g.size(); ++u)
        bytes += static_cast<std::uint64_t>(g.node(u).out_size()) * sizeof(float);
    return bytes * static_cast<std::uint64_t>(T) <= RunConfig::kNodeMajorBytes;
}

// Nodes whose output cannot change within a sample: Input nodes whose source gives the same
// activity at every step, then every pure node fed only by constant nodes without delay.
std::vector<char> constant_nodes(const Graph& g, const std::vector<const InputSource*>& inputs,
                                 const RunConfig& cfg) {
    std::vector<char> c(static_cast<std::size_t>(g.size()), 0);
    if (!cfg.reuse_constant) return c;
    for (std::size_t k = 0; k < inputs.size(); ++k)
        c[static_cast<std::size_t>(g.inputs()[k])] = inputs[k]->same_every_step();
    for (int u : g.order()) {
        const auto& ins = g.in_edges(u);
        if (g.node(u).category() == NodeCategory::input || ins.empty() || !g.node(u).pure())
            continue;
        bool all = true;
        for (int ei : ins) {
            const Edge& e = g.edges()[static_cast<std::size_t>(ei)];
            all = all && !e.delayed && c[static_cast<std::size_t>(e.src)];
        }
        c[static_cast<std::size_t>(u)] = all;
    }
    return c;
}

// Outputs, states and stats of every node, fresh for a new sample (states reset in place).
void start_sample(const Graph& g, const std::vector<const StepTally*>& tallies, Workspace& ws) {
    const int n = g.size();
    if (!ws.ready) {
        // What each tally keeps between a node's steps: one per worker, node and tally.
        ws.tally_scratch.resize(tallies.size());
        for (std::size_t i = 0; i < tallies.size(); ++i)
            for (int u = 0; u < n; ++u) ws.tally_scratch[i].push_back(tallies[i]->make_scratch());
        ws.out.resize(static_cast<std::size_t>(n));
        ws.prev.resize(static_cast<std::size_t>(n));
        ws.states.resize(static_cast<std::size_t>(n));
        ws.first_ops.resize(static_cast<std::size_t>(n));
        ws.first_synapses.resize(static_cast<std::size_t>(n));
        ws.ready = true;
    }
    ws.stats.assign(static_cast<std::size_t>(n), {});
    for (int u = 0; u < n; ++u) {
        ws.out[static_cast<std::size_t>(u)].reset(g.node(u).out_size());
        auto& state = ws.states[static_cast<std::size_t>(u)];
        if (!state || !g.node(u).reset_state(state.get())) state = g.node(u).make_state();
    }
}

// Delayed edges at t = 0 carry the source applied to zero activity (an Affine's bias); a spiking
// source has not fired before the first step. Nothing of this is counted.
void prime_delayed_sources(const Graph& g, Workspace& ws, const StepContext& ctx) {
    for (int u : g.delayed_sources()) {
        const Node& nd = g.node(u);
        if (nd.is_spiking()) {
            ws.prev[static_cast<std::size_t>(u)].resize(nd.out_size());
            continue;
        }
        Activity zero;
        zero.resize(nd.in_size());
        auto st = nd.make_state();
        OpCounts discard;
        AttentionCounts discard_attention;
        SynapseCounts discard_synapses;
        StepContext c0 = ctx;
        c0.ops = &discard;
        c0.attention = &discard_attention;
        c0.synapses = &discard_synapses;
        Activity& p = ws.prev[static_cast<std::size_t>(u)];
        p.resize(nd.out_size());
        nd.step(zero, st.get(), p, c0);
    }
}

// Polarity tallies matter for spikes only; currents would cost a pass per step.
void tally_output(const Node& nd, const Activity& out, NodeStats& st) {
    if (nd.is_spiking() && out.all_ones)
        st.positive_out += out.active.size();
    else if (nd.is_spiking())
        for (auto i : out.active) {
            const float v = out.values[i];
            if (v > 0)
                ++st.positive_out;
            else if (v < 0)
                ++st.negative_out;
        }
    st.nonzero_out += out.nonzero();
}

// A constant node: stepped at the first step of the sample, its output kept after that; its
// counts (inputs joined included: they are constant too) are those of the first step.
void step_constant(const Node& nd, const Activity& in, Workspace& ws, StepContext& ctx,
                   std::size_t k, OpCounts& step_ops, NodeStats& st) {
    if (ctx.step > 0) {
        step_ops = ws.first_ops[k];
        st.synapses += ws.first_synapses[k];
        return;
    }
    SynapseCounts first;
    ctx.synapses = &first;
    nd.step(in, ws.states[k].get(), ws.out[k], ctx);
    ctx.synapses = &st.synapses;
    st.synapses += first;
    ws.first_ops[k] = step_ops;
    ws.first_synapses[k] = first;
}

// RunConfig::tallies on node u's step: each adds to its own slots of the node's stats.
void run_tallies(const RunShared& r, Workspace& ws, int u, const Activity& in, std::int64_t step,
                 NodeStats& st) {
    const Activity& out = ws.out[static_cast<std::size_t>(u)];
    const auto& tallies = r.cfg.tallies;
    const auto k = static_cast<std::size_t>(u);
    for (std::size_t i = 0; i < tallies.size(); ++i)
        tallies[i]->tally(r.g.node(u), in, out, ws.states[k].get(), step,
                          ws.tally_scratch[i][k].get(), st.tallies.data() + r.tally_offset[i]);
}

// Node u's step t: its input gathered (or filled, for the Input node), stepped, tallied and
// shown to the observer.
void step_node(const RunShared& r, Workspace& ws, StepContext& ctx, int u) {
    const Graph& g = r.g;
    const RunConfig& cfg = r.cfg;
    const Node& nd = g.node(u);
    const auto k = static_cast<std::size_t>(u);
    auto& st = ws.stats[k];
    Activity& out = ws.out[k];
    OpCounts step_ops;
    ctx.ops = &step_ops;
    ctx.attention = &st.attention;
    ctx.synapses = &st.synapses;
    ctx.keep_attention = cfg.observer && cfg.observer->wants_attention(u, ctx.sample, ctx.step);
    ctx.list_output = r.list_out[k] != 0;
    if (const int si = r.source_of[k]; si >= 0) {
        out.clear();
        const auto j = static_cast<std::size_t>(si);
        r.inputs[j]->fill(ctx.sample, ctx.step, r.seeds[j], out, step_ops);
    } else {
        std::uint64_t join_events = 0;
        ctx.recurrent = nullptr;
        const Activity& in = gather_input(g, u, ws, ctx, join_events);
        if (cfg.count_ops) step_ops.ac += join_events;
        // The tallies describe the summed input, also where the recurrent one came apart.
        std::uint64_t unused = 0;
        const Activity& whole =
            ctx.recurrent ? gather_edges(g, g.in_edges(u), nd.in_size(), ws, ws.whole, unused) : in;
        st.nonzero_in += whole.nonzero();
        if (!whole.ternary) st.input_ternary = false;
        if (r.constant[k])
            step_constant(nd, in, ws, ctx, k, step_ops, st);
        else
            nd.step(in, ws.states[k].get(), out, ctx);
        run_tallies(r, ws, u, whole, ctx.step, st);
    }
    tally_output(nd, out, st);
    st.ops += step_ops;
    if (cfg.observer && cfg.observer->wants(u))
        cfg.observer->on_step(ctx.sample, ctx.step, u, nd, out, ws.states[k].get(), step_ops);
}

void timed_step_node(const RunShared& r, Workspace& ws, StepContext& ctx, int u) {
    const auto t0 = std::chrono::steady_clock::now();
    step_node(r, ws, ctx, u);
    ws.stats[static_cast<std::size_t>(u)].seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The sources of delayed edges: this step's output is what those edges carry next step.
void keep_delayed_outputs(const Graph& g, Workspace& ws) {
    for (int u : g.delayed_sources())
        ws.prev[static_cast<std::size_t>(u)] = ws.out[static_cast<std::size_t>(u)];
}

// Argmax of the output summed over time; ties go to the lowest index.
std::int64_t argmax(const std::vector<float>& acc) {
    std::int64_t best = -1;
    float bv = 0;
    for (std::size_t i = 0; i < acc.size(); ++i)
        if (best < 0 || acc[i] > bv) {
            best = static_cast<std::int64_t>(i);
            bv = acc[i];
        }
    return best;
}

// All T steps of a sample, node after node (RunShared::node_major). ws.out[v] is the slot
// step_node reads and writes; before node u's step t, the step-t outputs of u and of its sources
// are swapped into their slots, and swapped back after. Output sums go to `acc`, step by step.
void run_node_major(const RunShared& r, Workspace& ws, StepContext& ctx, std::vector<float>& acc) {
    const Graph& g = r.g;
    auto& steps = ws.steps;
    steps.resize(static_cast<std::size_t>(g.size()));
    for (int u = 0; u < g.size(); ++u) {
        auto& su = steps[static_cast<std::size_t>(u)];
        if (static_cast<std::int64_t>(su.size()) == r.T) continue;
        su.resize(static_cast<std::size_t>(r.T));
        for (auto& a : su) a.reset(g.node(u).out_size());
    }
    for (int u : g.order()) {
        const auto k = static_cast<std::size_t>(u);
        const auto& src = r.sources[k];
        for (std::int64_t t = 0; t < r.T; ++t) {
            const auto ti = static_cast<std::size_t>(t);
            ctx.step = t;
            for (int v : src)
                std::swap(ws.out[static_cast<std::size_t>(v)],
                          steps[static_cast<std::size_t>(v)][ti]);
            std::swap(ws.out[k], steps[k][ti]);
            // A constant node is stepped at t = 0 only; later steps keep that output.
            if (t > 0 && r.constant[k]) ws.out[k] = steps[k][0];
            if (r.cfg.time_nodes)
                timed_step_node(r, ws, ctx, u);
            else
                step_node(r, ws, ctx, u);
            std::swap(ws.out[k], steps[k][ti]);
            for (int v : src)
                std::swap(ws.out[static_cast<std::size_t>(v)],
                          steps[static_cast<std::size_t>(v)][ti]);
        }
    }
    for (const Activity& o : steps[static_cast<std::size_t>(r.out_node)])
        for (auto i : o.active) acc[i] += o.values[i];
}

// Sample first + k, all T steps, on this thread (its blocks on the team, if any). Writes its
// prediction and output sum into `res`; returns its per-node stats.
std::vector<NodeStats> run_sample(const RunShared& r, Workspace& ws, std::int64_t k,
                                  RunResult& res) {
    const Graph& g = r.g;
    const RunConfig& cfg = r.cfg;
    start_sample(g, r.cfg.tallies, ws);
    StepContext ctx;
    ctx.engine = cfg.engine;
    ctx.sample = r.first + k;
    ctx.timesteps = r.T;
    ctx.seed = cfg.seed;
    ctx.parallel_inner = cfg.threads > 1;
    ctx.threads = cfg.threads;
    ctx.parallel_work = cfg.parallel_work;
    ctx.team = r.team;
    ctx.count_ops = cfg.count_ops;
    prime_delayed_sources(g, ws, ctx);
    const Activity& output = ws.out[static_cast<std::size_t>(r.out_node)];
    std::vector<float> acc(static_cast<std::size_t>(g.node(r.out_node).out_size()), 0.0f);
    for (std::int64_t t = 0; t < r.T && !r.node_major; ++t) {
        ctx.step = t;
        if (r.cfg.time_nodes)
            for (int u : g.order()) timed_step_node(r, ws, ctx, u);
        else
            for (int u : g.order()) step_node(r, ws, ctx, u);
        for (auto i : output.active) acc[i] += output.values[i];
        keep_delayed_outputs(g, ws);
    }
    if (r.node_major) run_node_major(r, ws, ctx, acc);
    res.predictions[static_cast<std::size_t>(k)] = argmax(acc);
    res.output_sum[static_cast<std::size_t>(k)] = std::move(acc);
    return std::move(ws.stats);
}

// "<file>: <dataset>" of a source, for errors that name two of them.
std::string source_name(const InputSource& in) {
    return in.dataset().empty() ? in.describe() : in.describe() + ": " + in.dataset();
}

// The sources against the Input nodes: one each, of its size, all with the same samples.
// Returns the steps they fix (0: none); spike sources that fix different steps need
// `timesteps` to choose the steps all of them hold.
std::int64_t check_inputs(const Graph& g, const std::vector<const InputSource*>& inputs,
                          std::int64_t timesteps) {
    if (inputs.size() != g.inputs().size())
        throw InputError(g.origin(), "nodes",
                         "the model has " + std::to_string(g.inputs().size()) +
                             " Input nodes, the run was given " + std::to_string(inputs.size()) +
                             " input sources");
    std::int64_t fixed = 0;
    const InputSource* fixer = nullptr;
    for (std::size_t k = 0; k < inputs.size(); ++k) {
        const InputSource& in = *inputs[k];
        const Node& node = g.node(g.inputs()[k]);
        if (numel(in.sample_shape()) != node.out_size())
            throw InputError(in.describe(), in.dataset().empty() ? "shape" : in.dataset(),
                             "input sample shape " + shape_str(in.sample_shape()) +
                                 " does not match the shape " + shape_str(node.out_shape()) +
                                 " of the model's Input node '" + node.name() + "'");
        if (in.num_samples() != inputs[0]->num_samples())
            throw InputError(in.describe(), in.dataset(),
                             "has " + std::to_string(in.num_samples()) + " samples, " +
                                 source_name(*inputs[0]) + " has " +
                                 std::to_string(inputs[0]->num_samples()));
        const std::int64_t t = in.fixed_timesteps();
        if (t > 0 && fixer && t != fixed && timesteps <= 0)
            throw InputError(in.describe(), in.dataset(),
                             "holds " + std::to_string(t) + " steps, " + source_name(*fixer) +
                                 " holds " + std::to_string(fixed) +
                                 ": choose the steps to run (timesteps)");
        if (t > 0 && (!fixer || t < fixed)) {
            fixed = t;
            fixer = &in;
        }
    }
    return fixed;
}

// Checks the inputs against the graph and the options; sets the run's samples and steps.
RunShared plan_run(const Graph& g, const std::vector<const InputSource*>& inputs,
                   const RunConfig& cfg, RunResult& res) {
    if (cfg.threads < 1) throw OptionError("threads", "must be at least 1");
    const std::int64_t fixed = check_inputs(g, inputs, cfg.timesteps);
    RunShared r{g, cfg, inputs, {}, {}, 0, 0, -1, {}, {}, nullptr, false, {}, {}};
    r.source_of.assign(static_cast<std::size_t>(g.size()), -1);
    for (std::size_t k = 0; k < inputs.size(); ++k) {
        r.source_of[static_cast<std::size_t>(g.inputs()[k])] = static_cast<int>(k);
        r.seeds.push_back(input_seed(cfg.seed, k));
    }
    r.out_node = g.outputs()[0];
    res.timesteps = cfg.timesteps > 0 ? cfg.timesteps : fixed;
    if (res.timesteps <= 0) throw OptionError("timesteps", "must be given for analog inputs");
    if (fixed > 0 && res.timesteps > fixed)
        throw OptionError("timesteps",
                          "the spike input has only " + std::to_string(fixed) + " steps");
    const std::int64_t have = inputs[0]->num_samples();
    r.first = cfg.first_sample;
    const std::int64_t count = cfg.num_samples < 0 ? have - r.first : cfg.num_samples;
    if (r.first < 0 || count < 0 || r.first + count > have)
        throw OptionError("samples",
                          "range beyond the " + std::to_string(have) + " samples of the input");
    r.T = res.timesteps;
    res.samples = count;
    res.tallies = cfg.tallies;
    int slots = 0;
    std::string names;
    for (const StepTally* t : cfg.tallies) {
        r.tally_offset.push_back(slot_offset(cfg.tallies, *t));
        slots += t->slots();
        names += (names.empty() ? "" : ", ") + std::string(t->name());
    }
    if (slots > kTallySlots)
        throw InternalError("run: the tallies asked for (" + names + ") need " +
                            std::to_string(slots) + " slots per node, more than kTallySlots");
    res.nodes.assign(static_cast<std::size_t>(g.size()), {});
    res.predictions.assign(static_cast<std::size_t>(count), -1);
    res.output_sum.assign(static_cast<std::size_t>(count), {});
    res.sample_s.assign(static_cast<std::size_t>(count), 0.0);
    r.list_out = listed_outputs(g, cfg, r.out_node);
    r.constant = constant_nodes(g, inputs, cfg);
    r.node_major = node_major_fits(g, cfg, r.T, count);
    r.sources.assign(static_cast<std::size_t>(g.size()), {});
    for (int u = 0; u < g.size(); ++u) {
        auto& src = r.sources[static_cast<std::size_t>(u)];
        for (int ei : g.in_edges(u)) src.push_back(g.edges()[static_cast<std::size_t>(ei)].src);
        std::sort(src.begin(), src.end());
        src.erase(std::unique(src.begin(), src.end()), src.end());
    }
    return r;
}

// The samples' stats summed in sample order (so the sums do not depend on the threads).
void merge_samples(std::vector<std::vector<NodeStats>>& per_sample, const RunConfig& cfg,
                   RunResult& res) {
    const auto n = res.nodes.size();
    if (cfg.keep_sample_sums) res.sample_tallies.reserve(per_sample.size() * n * kTallySlots);
    for (auto& ps : per_sample)
        for (std::size_t u = 0; u < n; ++u) {
            accumulate(res.nodes[u], ps[u]);
            if (cfg.keep_sample_sums)
                res.sample_tallies.insert(res.sample_tallies.end(), ps[u].tallies.begin(),
                                          ps[u].tallies.end());
        }
}

}  // namespace

bool runs_node_major(const Graph& g, const RunConfig& cfg, std::int64_t samples) {
    return node_major_fits(g, cfg, cfg.timesteps, samples);
}

RunResult run(const Graph& g, const InputSource& input, const RunConfig& cfg) {
    return run(g, std::vector<const InputSource*>{&input}, cfg);
}

RunResult run(const Graph& g, const std::vector<const InputSource*>& inputs, const RunConfig& cfg) {
    RunResult res;
    RunShared r = plan_run(g, inputs, cfg, res);
    const std::int64_t count = res.samples;
    tbb::global_control gc(tbb::global_control::max_allowed_parallelism,
                           static_cast<std::size_t>(cfg.threads));
    tbb::enumerable_thread_specific<Workspace> wss;
    Progress progress(count, cfg.progress && count > 1);
    // One sample on several threads: a persistent team runs each step's blocks.
    std::unique_ptr<ThreadTeam> team;
    if (count == 1 && cfg.threads > 1) team = std::make_unique<ThreadTeam>(cfg.threads);
    r.team = team.get();
    for (int u = 0; u < g.size(); ++u) g.node(u).prepare_run(cfg.threads);

    auto t0 = std::chrono::steady_clock::now();
    std::vector<std::vector<NodeStats>> per_sample(static_cast<std::size_t>(count));
    auto one = [&](std::int64_t k) {
        if (cfg.cancel && cfg.cancel->load(std::memory_order_relaxed)) throw Interrupted();
        const auto sample_t0 = std::chrono::steady_clock::now();
        // Per-sample stats go to a slot of their own; summed in sample order below.
        per_sample[static_cast<std::size_t>(k)] = run_sample(r, wss.local(), k, res);
        res.sample_s[static_cast<std::size_t>(k)] =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - sample_t0).count();
        progress.tick();
        if (cfg.samples_done) cfg.samples_done->fetch_add(1, std::memory_order_relaxed);
    };
    if (cfg.threads == 1 || count == 1) {
        for (std::int64_t k = 0; k < count; ++k) one(k);
    } else {
        tbb::parallel_for(std::int64_t{0}, count, one);
    }
    res.simulate_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    merge_samples(per_sample, cfg, res);
    return res;
}

void accumulate(NodeStats& d, const NodeStats& s) {
    d.ops += s.ops;
    d.nonzero_out += s.nonzero_out;
    d.positive_out += s.positive_out;
    d.negative_out += s.negative_out;
    d.nonzero_in += s.nonzero_in;
    d.input_ternary = d.input_ternary && s.input_ternary;
    d.attention += s.attention;
    d.synapses += s.synapses;
    for (int i = 0; i < kTallySlots; ++i) d.tallies[i] += s.tallies[i];
    d.seconds += s.seconds;
}

}  // namespace ternion
