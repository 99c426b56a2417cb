#include "sim/core/shard.hpp"

#include <algorithm>

#include "sim/core/error.hpp"

namespace ternion {

void append_part(RunResult& whole, const RunResult& part) {
    const auto n = part.nodes.size();
    if (part.sample_binary_in_sum.size() != static_cast<std::size_t>(part.samples) * n)
        throw InternalError("append_part: the part ran without keep_sample_sums");
    if (whole.nodes.empty()) whole.nodes.assign(n, {});
    if (whole.nodes.size() != n) throw InternalError("append_part: different graphs");
    for (std::size_t i = 0; i < n; ++i) {
        const double sum = whole.nodes[i].binary_in_sum;
        accumulate(whole.nodes[i], part.nodes[i]);
        whole.nodes[i].binary_in_sum = sum;
    }
    // One run adds each sample's value to the node's total in sample order: so here.
    const auto& sums = part.sample_binary_in_sum;
    for (std::size_t k = 0; k < sums.size(); k += n)
        for (std::size_t i = 0; i < n; ++i) whole.nodes[i].binary_in_sum += sums[k + i];
    whole.samples += part.samples;
    whole.timesteps = part.timesteps;
    whole.syops_tallies = part.syops_tallies;
    whole.membrane_tallies = part.membrane_tallies;
    whole.simulate_s = std::max(whole.simulate_s, part.simulate_s);
    auto append = [](auto& to, const auto& from) { to.insert(to.end(), from.begin(), from.end()); };
    append(whole.predictions, part.predictions);
    append(whole.output_sum, part.output_sum);
    append(whole.sample_s, part.sample_s);
    append(whole.sample_binary_in_sum, sums);
}

}  // namespace ternion
