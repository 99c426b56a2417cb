// The placement report: JSON (`ternion map --json`, Python's ternion.map) and text. Every family
// shares chip, fits, layers, notes and sources; Xylo adds its counts and cycle estimate.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "hw/chip/chip.hpp"

namespace ternion::chip {

namespace {

nlohmann::json xylo_json(const Placement& p, const Chip& c) {
    const XyloPlacement& x = p.xylo;
    const XyloSpec& s = c.xylo;
    nlohmann::json j;
    j["chip"] = {{"name", c.name},
                 {"family", c.family},
                 {"description", c.description},
                 {"path", c.path},
                 {"input_channels", s.input_channels},
                 {"hidden", s.hidden},
                 {"output", s.output},
                 {"max_fanout", s.max_fanout}};
    j["fits"] = true;
    j["layers"] = nlohmann::json::array();
    for (const XyloPopulation& l : x.populations) {
        std::vector<std::string> nodes = l.weights;
        nodes.push_back(l.neurons);
        j["layers"].push_back({{"nodes", nodes},
                               {"neurons", l.neurons},
                               {"weights", l.weights},
                               {"role", l.output ? "output" : "hidden"},
                               {"size", l.size},
                               {"ids", {l.first_id, l.first_id + l.size - 1}},
                               {"max_fanout", l.max_fanout}});
    }
    nlohmann::json rates = nullptr, at_rates = nullptr;
    if (x.has_rates) {
        rates = {{"input", x.rates.input}, {"hidden", x.rates.hidden}, {"output", x.rates.output}};
        at_rates = x.cycles_at_rates;
    }
    j["xylo"] = {{"n_in", x.n_in},
                 {"n_hid", x.n_hid},
                 {"n_out", x.n_out},
                 {"n_ien", x.n_ien},
                 {"n_oen", x.n_oen},
                 {"recurrent_weights", x.recurrent_weights},
                 {"mean_fanout", x.mean_fanout},
                 {"max_fanout", x.max_fanout},
                 {"dt", x.dt},
                 {"dt_source", x.dt_source},
                 {"cycles_worst", x.cycles_worst},
                 {"margin", s.margin},
                 {"clock_hz", x.clock_hz},
                 {"rates", rates},
                 {"cycles_at_rates", at_rates}};
    j["notes"] = p.notes;
    j["sources"] = {{"neurons", s.neurons_source},
                    {"events", s.events_source},
                    {"datapath", s.datapath_source},
                    {"design_rules", s.rules_source},
                    {"cycles", s.cycles_source}};
    return j;
}

std::string fmt(const char* f, double v) {
    char b[64];
    std::snprintf(b, sizeof b, f, v);
    return b;
}

std::string xylo_text(const Placement& p, const Chip& c) {
    const XyloPlacement& x = p.xylo;
    const XyloSpec& s = c.xylo;
    std::string out = "chip    " + c.name + " (" + std::to_string(s.input_channels) +
                      " input channels, " + std::to_string(s.hidden) + " hidden and " +
                      std::to_string(s.output) + " output neurons): " + c.description + "\n\n";
    std::size_t w = 10;
    for (const XyloPopulation& l : x.populations) w = std::max(w, l.neurons.size());
    char line[1024];
    std::snprintf(line, sizeof line, "%-*s %-6s %7s %11s %7s  %s\n", static_cast<int>(w),
                  "population", "role", "neurons", "ids", "fan-out", "weights");
    out += line;
    for (const XyloPopulation& l : x.populations) {
        std::string ws;
        for (const auto& n : l.weights) {
            if (!ws.empty()) ws += ", ";
            ws += n;
        }
        const std::string ids =
            std::to_string(l.first_id) + "-" + std::to_string(l.first_id + l.size - 1);
        const std::string fo = l.output ? "-" : std::to_string(l.max_fanout);
        std::snprintf(line, sizeof line, "%-*s %-6s %7lld %11s %7s  %s\n", static_cast<int>(w),
                      l.neurons.c_str(), l.output ? "output" : "hidden",
                      static_cast<long long>(l.size), ids.c_str(), fo.c_str(), ws.c_str());
        out += line;
    }
    out += "inputs " + std::to_string(x.n_in) + ", hidden " + std::to_string(x.n_hid) +
           " (input expansion " + std::to_string(x.n_ien) + ", output expansion " +
           std::to_string(x.n_oen) + "), outputs " + std::to_string(x.n_out) + "\n";
    out += "recurrent weights " + std::to_string(x.recurrent_weights) + ": fan-out " +
           fmt("%.4g", x.mean_fanout) + " per hidden neuron on average (F), " +
           std::to_string(x.max_fanout) + " at most (chip: " + std::to_string(s.max_fanout) + ")\n";
    out += "cycles per step, every rate 1: " + fmt("%.6g", x.cycles_worst) + "; clock for " +
           "real time at dt " + fmt("%g", x.dt * 1e3) + " ms (" + x.dt_source +
           "): " + fmt("%.6g", x.clock_hz / 1e6) + " MHz (+" + fmt("%g", s.margin * 100) +
           "% margin)\n";
    if (x.has_rates)
        out += "cycles per step at rates input " + fmt("%g", x.rates.input) + ", hidden " +
               fmt("%g", x.rates.hidden) + ", output " + fmt("%g", x.rates.output) + ": " +
               fmt("%.6g", x.cycles_at_rates) + "\n";
    for (const auto& n : p.notes) out += "note: " + n + "\n";
    out +=
        "cycles by Rockpool's Xylo cycle model (power_cycles_model.py); rates are the "
        "fractions of (channel, step) with an event\n";
    return out;
}

}  // namespace

nlohmann::json placement_json(const Placement& p, const Chip& c) {
    if (c.family == "xylo") return xylo_json(p, c);
    if (c.family == "mesh") return mesh_json(p, c);
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
    if (c.family == "xylo") return xylo_text(p, c);
    if (c.family == "mesh") return mesh_text(p, c);
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
