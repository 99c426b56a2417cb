// Test helper: loads a model file through the real loader, runs it, and captures every node's
// output at every step so tests can compare engines, thread counts and closed forms.
#pragma once
#include <map>
#include <mutex>

#include "models/pipeline.hpp"
#include "sim/core/engine.hpp"

namespace ternion::test {

class CaptureAll final : public StepObserver {
  public:
    bool wants(int) const override { return true; }
    void on_step(std::int64_t sample, std::int64_t step, int node, const Node& n,
                 const Activity& out, const NodeState* st, const OpCounts& ops) override {
        std::vector<float> m;
        const bool has_m = st && n.membrane(st, m);
        std::lock_guard<std::mutex> lk(mu_);
        values[{sample, step, node}] = out.values;
        actives[{sample, step, node}].assign(out.active.begin(), out.active.end());
        step_ops[{sample, step, node}] = ops;
        if (has_m) membrane[{sample, step, node}] = std::move(m);
    }
    std::map<std::tuple<std::int64_t, std::int64_t, int>, std::vector<std::uint32_t>> actives;
    std::map<std::tuple<std::int64_t, std::int64_t, int>, std::vector<float>> membrane;
    std::map<std::tuple<std::int64_t, std::int64_t, int>, std::vector<float>> values;
    std::map<std::tuple<std::int64_t, std::int64_t, int>, OpCounts> step_ops;

  private:
    std::mutex mu_;
};

struct Outcome {
    std::shared_ptr<const Graph> graph;
    RunResult result;
    CaptureAll capture;
};

// Runs through the same pipeline as `ternion run`, with an observer that captures everything.
inline std::unique_ptr<Outcome> run_file(const std::string& model, const std::string& input,
                                         Engine engine = Engine::event, int threads = 1,
                                         std::int64_t T = 0, UserLoadOptions lo = {},
                                         Encoding enc = Encoding::direct, std::uint64_t seed = 0,
                                         bool observe = true, bool reuse_constant = true,
                                         bool node_major = true) {
    auto o = std::make_unique<Outcome>();
    RunRequest q;
    q.model = model;
    q.input = input;
    q.load = lo;
    q.engine = engine;
    q.threads = threads;  // blocks follow the thread count, as in `ternion run`
    if (T > 0) q.timesteps = T;
    q.encoding = enc;
    q.seed = seed;
    Pipeline p(q);
    RunConfig cfg = p.config();
    // Split every node, however small, so that determinism across thread counts is tested on
    // the split paths too (by default small layers stay on one thread).
    cfg.parallel_work = 0;
    cfg.reuse_constant = reuse_constant;
    // Node by node wherever the graph allows, however few the samples (or step by step).
    cfg.schedule = node_major ? RunConfig::Schedule::node_major : RunConfig::Schedule::step_major;
    // Unobserved runs let producers skip index lists no consumer reads (list_output).
    cfg.observer = observe ? &o->capture : nullptr;
    o->result = p.simulate(cfg);
    // The graph outlives the pipeline, sharing ownership of the loaded model.
    o->graph = std::shared_ptr<const Graph>(p.model(), &p.graph());
    return o;
}

// Output of node `name` at (sample, step).
inline const std::vector<float>& output_of(const Outcome& o, const std::string& name,
                                           std::int64_t sample, std::int64_t step) {
    int u = o.graph->find(name);
    return o.capture.values.at({sample, step, u});
}

inline const std::vector<float>& membrane_of(const Outcome& o, const std::string& name,
                                             std::int64_t sample, std::int64_t step) {
    int u = o.graph->find(name);
    return o.capture.membrane.at({sample, step, u});
}

}  // namespace ternion::test
