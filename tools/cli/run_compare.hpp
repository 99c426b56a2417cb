// `ternion run --compare MODEL`: a second model run on the same input with the same settings,
// priced under the same profile and convention, and reported beside the first (e.g. the SSA twin
// of a BSA model: the comparison the BSA paper makes).
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "models/pipeline.hpp"

namespace ternion::cli {

struct Comparison {
    std::string model;
    std::int64_t samples = 0;
    std::optional<double> accuracy;
    double spikes_per_inference = 0.0;
    double energy_pj = 0.0, ann_pj = 0.0;  // per inference (the ANN: T passes, one a step)
    double ann_pj_one_pass = 0.0;
    std::int64_t timesteps = 0;
    double simulate_s = 0.0;
};

// The second run's figures.
Comparison compare_report(const RunReport& r);

nlohmann::json comparison_json(const Comparison& c);

// Lines for the text report: the compared model's energy per inference next to the main run's.
std::string comparison_text(const Comparison& c, const RunReport& main);

}  // namespace ternion::cli
