#include "sim/core/shard.hpp"

#include <algorithm>

#include "sim/core/error.hpp"

namespace ternion {

void append_part(RunResult& whole, const RunResult& part) {
    const auto n = part.nodes.size();
    if (part.sample_tallies.size() != static_cast<std::size_t>(part.samples) * n * kTallySlots)
        throw InternalError("append_part: the part ran without keep_sample_sums");
    if (whole.nodes.empty()) whole.nodes.assign(n, {});
    if (whole.nodes.size() != n) throw InternalError("append_part: different graphs");
    for (std::size_t i = 0; i < n; ++i) {
        const TallySlots sums = whole.nodes[i].tallies;
        accumulate(whole.nodes[i], part.nodes[i]);
        whole.nodes[i].tallies = sums;
    }
    // One run adds each sample's tallies to the node's totals in sample order: so here.
    const auto& per = part.sample_tallies;
    for (std::size_t k = 0; k < per.size(); k += n * kTallySlots)
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t j = 0; j < kTallySlots; ++j)
                whole.nodes[i].tallies[j] += per[k + i * kTallySlots + j];
    whole.samples += part.samples;
    whole.timesteps = part.timesteps;
    // The tallies' identities come from this process's configuration (a part received from
    // another process carries only their values, in the same order).
    if (!part.tallies.empty()) whole.tallies = part.tallies;
    whole.simulate_s = std::max(whole.simulate_s, part.simulate_s);
    auto append = [](auto& to, const auto& from) { to.insert(to.end(), from.begin(), from.end()); };
    append(whole.predictions, part.predictions);
    append(whole.output_sum, part.output_sum);
    append(whole.sample_s, part.sample_s);
    append(whole.sample_tallies, per);
}

}  // namespace ternion
