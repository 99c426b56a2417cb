// The placement report: JSON (`ternion map --json`, Python's ternion.map) and text.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "hw/chip/chip.hpp"

namespace ternion::chip {

nlohmann::json placement_json(const Placement& p, const Chip& c) {
    nlohmann::json j;
    j["chip"] = {{"name", c.name},
                 {"family", c.family},
                 {"description", c.description},
                 {"path", c.path},
                 {"cores", c.cores.size()}};
    j["fits"] = true;
    j["layers"] = nlohmann::json::array();
    for (const ChipLayer& l : p.layers)
        j["layers"].push_back({{"nodes", l.nodes},
                               {"connection", l.connection},
                               {"core", l.core},
                               {"fits_cores", l.fits},
                               {"in_channels", l.in_channels},
                               {"out_channels", l.out_channels},
                               {"kernel", {l.kernel_h, l.kernel_w}},
                               {"neuron_map", {l.out_h, l.out_w}},
                               {"pool", l.pool},
                               {"kernel_memory", l.kernel_memory},
                               {"neuron_memory", l.neuron_memory},
                               {"bias_memory", l.bias_memory}});
    j["notes"] = p.notes;
    j["sources"] = {{"cores", c.cores_source},
                    {"limits", c.limits_source},
                    {"memory", c.memory_source},
                    {"assignment", c.assignment_source}};
    return j;
}

std::string placement_text(const Placement& p, const Chip& c) {
    std::size_t w = 5, wf = 4;
    for (const ChipLayer& l : p.layers) {
        w = std::max(w, l.connection.size());
        wf = std::max(wf, 2 * l.fits.size());
    }
    std::string out = "chip    " + c.name + " (" + std::to_string(c.cores.size()) +
                      " cores): " + c.description + "\n\n";
    char line[1024];
    std::snprintf(line, sizeof line, "%-*s %5s %-*s %8s %8s %9s %9s %6s  %s\n", static_cast<int>(w),
                  "layer", "core", static_cast<int>(wf), "fits", "kernel", "channels", "kernel mem",
                  "neuron mem", "bias", "nodes");
    out += line;
    for (const ChipLayer& l : p.layers) {
        std::string fits, nodes;
        for (int k : l.fits) {
            if (!fits.empty()) fits += ",";
            fits += std::to_string(k);
        }
        for (const auto& n : l.nodes) {
            if (!nodes.empty()) nodes += " > ";
            nodes += n;
        }
        const std::string kernel = std::to_string(l.kernel_h) + "x" + std::to_string(l.kernel_w);
        const std::string ch = std::to_string(l.in_channels) + ">" + std::to_string(l.out_channels);
        std::snprintf(line, sizeof line, "%-*s %5d %-*s %8s %8s %9lld %9lld %6lld  %s\n",
                      static_cast<int>(w), l.connection.c_str(), l.core, static_cast<int>(wf),
                      fits.c_str(), kernel.c_str(), ch.c_str(),
                      static_cast<long long>(l.kernel_memory),
                      static_cast<long long>(l.neuron_memory),
                      static_cast<long long>(l.bias_memory), nodes.c_str());
        out += line;
    }
    for (const auto& n : p.notes) out += "note: " + n + "\n";
    out +=
        "memories in entries (kernel: c x 2^(ceil(log2(kh kw)) + ceil(log2 f)); neuron: f x "
        "2^(ceil(log2 H) + ceil(log2 W))), as sinabs-dynapcnn computes them\n";
    return out;
}

}  // namespace ternion::chip
