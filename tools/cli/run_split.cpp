// `ternion run` as one process of several (mpirun -n K, K > 1): every rank builds the pipeline
// (loading and checking everything, reading its shard of the input), simulates its shard of
// the samples, and sends results and trace rows to rank 0, which prices, writes the trace and
// reports, as one process would. Errors are agreed on after each stage (cli_dist.hpp).
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "models/pipeline.hpp"
#include "tools/cli/cli_dist.hpp"
#include "tools/cli/run_compare.hpp"

namespace ternion::cli {

namespace {

struct SplitTiming {
    double wait_s = 0.0;         // rank 0 waiting for the slowest rank's simulation
    double communicate_s = 0.0;  // gathering results and trace rows to rank 0
};

// This rank's shard of the run, with the progress of all ranks drawn by rank 0.
RunResult simulate_shard(const Pipeline& p, bool progress) {
    RunConfig cfg = p.config();
    const Shard mine = shard_of(cfg.first_sample, cfg.num_samples, dist::rank(), dist::ranks());
    cfg.first_sample = mine.first;
    cfg.num_samples = mine.count;
    cfg.keep_sample_sums = true;
    cfg.progress = false;
    dist::Progress bar(p.samples(), progress);
    cfg.samples_done = bar.counter();
    return phase([&] {
        // The bar's helper thread makes MPI calls: it ends before the agreement's.
        struct Finish {
            dist::Progress& bar;
            ~Finish() { bar.finish(); }
        } finish{bar};
        return p.simulate(cfg);
    });
}

void print(const RunReport& r, const std::optional<Comparison>& compared, bool json,
           const SplitTiming& t) {
    if (json) {
        nlohmann::json j = report_json(r);
        if (compared) j["compare"] = comparison_json(*compared);
        j["timing"]["ranks"] = dist::ranks();
        j["timing"]["wait_s"] = t.wait_s;
        j["timing"]["communicate_s"] = t.communicate_s;
        std::cout << j.dump(2) << "\n";
        return;
    }
    std::cout << report_text(r);
    std::printf(
        "processes: %d x %d thread%s; rank 0 waited %.3f s for the slowest, %.3f s "
        "gathering\n",
        dist::ranks(), r.threads, r.threads == 1 ? "" : "s", t.wait_s, t.communicate_s);
    if (compared) std::cout << comparison_text(*compared, r);
}

// This rank's pipeline for its part of the run; rank 0 alone writes (and checks) the trace.
std::unique_ptr<Pipeline> split_pipeline(RunRequest q) {
    q.progress = false;
    q.part = dist::rank();
    q.parts = dist::ranks();
    if (q.part != 0) q.trace_path.clear();
    return phase([&] { return std::make_unique<Pipeline>(std::move(q)); });
}

// Simulates this rank's shard, gathers on rank 0 and finishes the report there.
std::optional<RunReport> split_simulate(Pipeline& pipeline, bool progress, SplitTiming& t) {
    RunResult mine = simulate_shard(pipeline, progress);
    const double own_s = mine.simulate_s;
    const auto t0 = std::chrono::steady_clock::now();
    RunResult all = dist::reduce(std::move(mine));
    if (pipeline.recorder()) dist::gather_trace(*pipeline.recorder());
    t.communicate_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    t.wait_s = std::max(0.0, all.simulate_s - own_s);
    return phase([&] {
        return dist::rank() == 0 ? std::optional<RunReport>(pipeline.finish(std::move(all)))
                                 : std::nullopt;
    });
}

}  // namespace

int threads_per_rank() {
    const int machine = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    int allowed = machine;
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) allowed = CPU_COUNT(&set);
    return std::max(1, std::min(allowed, machine / std::max(1, dist::local_ranks())));
}

int run_split(RunRequest q, std::optional<RunRequest> compare, bool json) {
    const bool progress = q.progress;
    // Both models are loaded and checked on every rank before either simulates.
    auto pipeline = split_pipeline(std::move(q));
    std::unique_ptr<Pipeline> twin;
    if (compare) twin = split_pipeline(std::move(*compare));
    SplitTiming t, t_twin;
    auto report = split_simulate(*pipeline, progress, t);
    std::optional<Comparison> compared;
    if (twin) {
        auto r = split_simulate(*twin, progress, t_twin);
        if (r) compared = compare_report(*r);
    }
    if (report) print(*report, compared, json, t);
    return 0;
}

}  // namespace ternion::cli
