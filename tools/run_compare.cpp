#include "tools/run_compare.hpp"

#include <cstdio>

#include "sim/layer_record.hpp"

namespace ternion::cli {

Comparison run_comparison(const std::string& model, const UserLoadOptions& lo,
                          const InputSource& src, const RunConfig& cfg, const hw::Profile& profile,
                          const hw::PriceOptions& popt) {
    LoadReport rep;
    auto graph = load_model(model, lo, rep);
    if (graph->inputs().size() == 1 &&
        numel(src.sample_shape()) != graph->node(graph->inputs()[0]).out_size())
        throw InputError(model, "",
                         "takes input " + shape_str(graph->node(graph->inputs()[0]).out_shape()) +
                             ", not the samples of " + src.describe() + " " +
                             shape_str(src.sample_shape()));
    RunConfig c = cfg;
    c.observer = nullptr;
    RunResult res = run(*graph, src, c);
    RunRecord record = make_run_record(*graph, res);
    Comparison out;
    out.model = model;
    out.samples = res.samples;
    out.simulate_s = res.simulate_s;
    if (!src.labels().empty()) {
        std::int64_t correct = 0;
        for (std::int64_t k = 0; k < res.samples; ++k)
            if (res.predictions[static_cast<std::size_t>(k)] ==
                src.labels()[static_cast<std::size_t>(cfg.first_sample + k)])
                ++correct;
        out.accuracy = static_cast<double>(correct) / static_cast<double>(res.samples);
    }
    std::uint64_t spikes = 0;  // as `ternion run` totals them: every node's spikes_out
    for (const auto& l : record.layers) spikes += l.ops.spikes_out;
    out.spikes_per_inference = static_cast<double>(spikes) / static_cast<double>(res.samples);
    out.cost = hw::price(record, profile, popt);
    return out;
}

nlohmann::json comparison_json(const Comparison& c) {
    nlohmann::json j;
    j["model"] = c.model;
    j["samples"] = c.samples;
    j["accuracy"] = c.accuracy ? nlohmann::json(*c.accuracy) : nlohmann::json(nullptr);
    j["spikes_per_inference"] = c.spikes_per_inference;
    j["energy_pj_per_inference"] = c.cost.per_inference_pj;
    j["ann_energy_pj_per_inference"] = c.cost.ann_pj_per_inference;
    j["simulate_s"] = c.simulate_s;
    return j;
}

void print_comparison(const Comparison& c, const std::string& main_model, double main_pj) {
    std::printf("\ncompared with %s on the same samples:\n", c.model.c_str());
    std::printf("  %-40s %14.1f pJ per inference\n", main_model.c_str(), main_pj);
    std::printf("  %-40s %14.1f pJ per inference (%.2fx), %.1f spikes per inference",
                c.model.c_str(), c.cost.per_inference_pj,
                main_pj > 0 ? c.cost.per_inference_pj / main_pj : 0.0, c.spikes_per_inference);
    if (c.accuracy) std::printf(", accuracy %.2f%%", 100.0 * *c.accuracy);
    std::printf("\n  ANN equivalent of %-22s %14.1f pJ per inference\n", "it",
                c.cost.ann_pj_per_inference);
}

}  // namespace ternion::cli
