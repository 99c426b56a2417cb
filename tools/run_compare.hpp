// `ternion run --compare MODEL`: a second model run on the same input, with the same settings,
// priced under the same profile and convention, and reported beside the first (e.g. the SSA twin
// of a BSA model: the comparison the BSA paper makes).
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "hw/cost_model.hpp"
#include "models/nir_loader.hpp"
#include "sim/engine.hpp"

namespace ternion::cli {

struct Comparison {
    std::string model;
    std::int64_t samples = 0;
    std::optional<double> accuracy;
    double spikes_per_inference = 0.0;
    hw::CostReport cost;
    double simulate_s = 0.0;
};

// Runs `model` on `src` with `cfg` (its observer ignored) and prices it. Throws InputError when
// the model does not take the input's samples.
Comparison run_comparison(const std::string& model, const UserLoadOptions& lo,
                          const InputSource& src, const RunConfig& cfg, const hw::Profile& profile,
                          const hw::PriceOptions& popt);

nlohmann::json comparison_json(const Comparison& c);

// Lines for the text report: the compared model's energy per inference next to `main_pj`.
void print_comparison(const Comparison& c, const std::string& main_model, double main_pj);

}  // namespace ternion::cli
