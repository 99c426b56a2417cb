#include "tools/cli/run_compare.hpp"

#include <cstdio>

namespace ternion::cli {

Comparison compare_report(const RunReport& r) {
    Comparison out;
    out.model = r.model;
    out.samples = r.result.samples;
    out.simulate_s = r.result.simulate_s;
    out.accuracy = r.accuracy;
    // As `ternion run` totals them: every node's spikes_out.
    out.spikes_per_inference =
        static_cast<double>(r.total.spikes_out) / static_cast<double>(r.result.samples);
    out.energy_pj = r.cost.per_inference_pj;
    out.ann_pj = r.cost.ann_pj_per_inference;
    out.ann_pj_one_pass = r.cost.ann_pj_per_pass();
    out.timesteps = r.timesteps;
    return out;
}

nlohmann::json comparison_json(const Comparison& c) {
    nlohmann::json j;
    j["model"] = c.model;
    j["samples"] = c.samples;
    j["accuracy"] = c.accuracy ? nlohmann::json(*c.accuracy) : nlohmann::json(nullptr);
    j["spikes_per_inference"] = c.spikes_per_inference;
    j["energy_pj_per_inference"] = c.energy_pj;
    j["ann_energy_pj_per_inference"] = c.ann_pj;
    j["ann_energy_pj_one_pass"] = c.ann_pj_one_pass;
    j["simulate_s"] = c.simulate_s;
    return j;
}

std::string comparison_text(const Comparison& c, const RunReport& main) {
    const double main_pj = main.cost.per_inference_pj;
    std::string out;
    char line[512];
    std::snprintf(line, sizeof line, "\ncompared with %s on the same samples:\n", c.model.c_str());
    out += line;
    std::snprintf(line, sizeof line, "  %-40s %14.1f pJ per inference\n", main.model.c_str(),
                  main_pj);
    out += line;
    std::snprintf(line, sizeof line,
                  "  %-40s %14.1f pJ per inference (%.2fx), %.1f spikes per inference",
                  c.model.c_str(), c.energy_pj, main_pj > 0 ? c.energy_pj / main_pj : 0.0,
                  c.spikes_per_inference);
    out += line;
    if (c.accuracy) {
        std::snprintf(line, sizeof line, ", accuracy %.2f%%", 100.0 * *c.accuracy);
        out += line;
    }
    std::snprintf(line, sizeof line,
                  "\n  ANN equivalent of it: %.1f pJ one pass, %.1f pJ for T=%lld passes\n",
                  c.ann_pj_one_pass, c.ann_pj, static_cast<long long>(c.timesteps));
    out += line;
    return out;
}

}  // namespace ternion::cli
