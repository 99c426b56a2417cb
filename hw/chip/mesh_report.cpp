// A mesh placement as JSON (`ternion map --json`, Python's ternion.map) and as text: the layers
// on their cores, the routing, the step's latency and the energy band, with the chip's sources
// and the values its file marks as assumed.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "hw/chip/chip.hpp"

namespace ternion::chip {

namespace {

using nlohmann::json;

json band_json(const Band& b) {
    const auto v = b.levels();
    return {{"ops", v[0]}, {"memory", v[1]}, {"routing", v[2]}, {"static", v[3]}};
}

json layer_json(const MeshLayer& l, const MeshPlacement& p, const Mesh& m) {
    json cores = json::array();
    for (const CoreUse& c : l.cores) {
        const auto [x, y] = m.tile_of(c.core);
        cores.push_back({{"core", c.core},
                         {"tile", {x, y}},
                         {"neurons", c.neurons},
                         {"out_neurons", c.out_neurons},
                         {"synapses", c.synapses},
                         {"stored_weights", c.stored},
                         {"synapse_bytes", (c.synapse_bits + 7) / 8},
                         {"state_bytes", (c.state_bits + 7) / 8},
                         {"score_rows", c.score_rows},
                         {"axons_in", c.axons_in},
                         {"axons_out", c.axons_out}});
    }
    json sources = json::array();
    for (int s : l.sources) sources.push_back(s < 0 ? "input" : p.layers[s].name);
    json j = {{"name", l.name},
              {"nodes", l.nodes},
              {"kind", l.kind},
              {"spiking", l.spiking},
              {"feeds_output", l.feeds_output},
              {"sources", sources},
              {"neurons", l.neurons},
              {"out_neurons", l.out_neurons},
              {"synapses", l.synapses},
              {"max_axons_in", l.max_fanin},
              {"fanin", l.fanin_form},
              {"cores", cores},
              {"rate_in", l.rate_in},
              {"rate_out", l.rate_out},
              {"events", l.events},
              {"updates", l.updates},
              {"packets", l.packets},
              {"hops", l.hops},
              {"weight_words", l.weight_words},
              {"state_words", l.state_words},
              {"band_pj", band_json(l.band)}};
    j["attention"] = nullptr;
    if (l.kind == "attention")
        j["attention"] = {
            {"qkv_neurons", l.qkv_neurons}, {"score_entries", l.score_entries}, {"fits", true}};
    return j;
}

json chip_json(const Chip& c) {
    const MeshSpec& s = c.mesh;
    return {{"name", c.name},
            {"family", c.family},
            {"description", c.description},
            {"path", c.path},
            {"mesh", {s.width, s.height}},
            {"cores_per_tile", s.cores_per_tile},
            {"cores", s.cores()},
            {"core",
             {{"neurons", s.neurons},
              {"synapse_memory_bytes", s.synapse_memory_bytes},
              {"synapse_bits", s.synapse_bits},
              {"state_memory_bytes", s.state_memory_bytes},
              {"state_bits", s.state_bits},
              {"states_per_neuron", s.states_per_neuron},
              {"max_fanin", s.max_fanin},
              {"max_fanout", s.max_fanout},
              {"weight_sharing", s.weight_sharing}}},
            {"multicast", s.multicast},
            {"clock_hz", s.clock_hz > 0 ? json(s.clock_hz) : json(nullptr)}};
}

}  // namespace

json mesh_json(const Placement& pl, const Chip& c) {
    const MeshPlacement& p = pl.mesh;
    const Mesh m = Mesh::uniform(c.mesh);
    json j;
    j["chip"] = chip_json(c);
    j["fits"] = true;
    j["layers"] = json::array();
    for (const MeshLayer& l : p.layers) j["layers"].push_back(layer_json(l, p, m));
    j["cores_used"] = p.cores_used, j["tiles_used"] = p.tiles_used;
    j["input_neurons"] = p.input_neurons;
    j["rates"] = {{"input", p.rate_in}, {"hidden", p.rate_hidden}, {"output", p.rate_out}};
    j["rates_given"] = p.rates_given;
    j["measured"] = p.measured;
    j["routing"] = {{"packets", p.routing.packets},
                    {"hops", p.routing.hops},
                    {"energy_pj", p.routing.energy_pj},
                    {"input_pj", p.routing.host_pj}};
    json cores = json::array();
    for (std::size_t k = 0; k < p.core_ns.size(); ++k)
        cores.push_back(
            {{"core", k},
             {"ns", p.core_ns[k]},
             {"cycles",
              c.mesh.clock_hz > 0 ? json(p.core_ns[k] * c.mesh.clock_hz * 1e-9) : json(nullptr)}});
    j["latency"] = {{"cores", cores},
                    {"critical_core", p.critical_core},
                    {"barrier_ns", p.barrier_ns},
                    {"step_ns", p.step_ns},
                    {"steps", p.steps},
                    {"inference_ns", p.inference_ns},
                    {"inferences_per_s", p.inferences_per_s}};
    Band inf = p.band;
    const double t = static_cast<double>(p.steps);
    inf.ops *= t, inf.memory *= t, inf.routing *= t, inf.statics *= t;
    j["band"] = {{"step_pj", band_json(p.band)}, {"inference_pj", band_json(inf)}};
    j["notes"] = pl.notes;
    j["sources"] = c.mesh.sources;
    j["assumed"] = c.mesh.assumed;
    return j;
}

namespace {

std::string fmt(const char* f, double v) {
    char b[64];
    std::snprintf(b, sizeof b, f, v);
    return b;
}

std::string core_range(const MeshLayer& l) {
    if (l.cores.empty()) return "-";
    const std::string a = std::to_string(l.cores.front().core);
    return l.cores.size() == 1 ? a : a + "-" + std::to_string(l.cores.back().core);
}

std::string layers_text(const MeshPlacement& p) {
    std::size_t w = 5;
    for (const MeshLayer& l : p.layers) w = std::max(w, l.name.size());
    const int W = static_cast<int>(w);
    char line[512];
    std::string out;
    std::snprintf(line, sizeof line, "%-*s %-9s %9s %10s %9s %6s %8s %11s %11s %11s %11s\n", W,
                  "layer", "kind", "neurons", "synapses", "cores", "count", "axons", "ops pJ",
                  "+memory", "+routing", "+static");
    out += line;
    for (const MeshLayer& l : p.layers) {
        const auto v = l.band.levels();
        std::snprintf(line, sizeof line,
                      "%-*s %-9s %9lld %10lld %9s %6zu %8lld %11.5g %11.5g %11.5g %11.5g\n", W,
                      l.name.c_str(), l.kind.c_str(), static_cast<long long>(l.neurons),
                      static_cast<long long>(l.synapses), core_range(l).c_str(), l.cores.size(),
                      static_cast<long long>(l.max_fanin), v[0], v[1], v[2], v[3]);
        out += line;
    }
    return out;
}

}  // namespace

std::string mesh_text(const Placement& pl, const Chip& c) {
    const MeshPlacement& p = pl.mesh;
    const MeshSpec& s = c.mesh;
    std::string out = "chip    " + c.name + " (" + std::to_string(s.width) + " x " +
                      std::to_string(s.height) + " tiles x " + std::to_string(s.cores_per_tile) +
                      " cores, " + std::to_string(s.neurons) +
                      " neurons per core): " + c.description + "\n";
    out += "cores   " + std::to_string(p.cores_used) + " of " + std::to_string(s.cores()) + " on " +
           std::to_string(p.tiles_used) + " tiles\n";
    out += "rates   input " + fmt("%g", p.rate_in) + ", hidden " + fmt("%g", p.rate_hidden) +
           ", output " + fmt("%g", p.rate_out) +
           (p.measured      ? " (the run's own; each layer's rate and events are its nodes')"
            : p.rates_given ? ""
                            : " (every rate 1, the worst case; give --rates)") +
           "\n\n";
    out += layers_text(p);
    out += "energy per step (pJ, cumulative): ops " + fmt("%.6g", p.band.levels()[0]) +
           ", +memory " + fmt("%.6g", p.band.levels()[1]) + ", +routing " +
           fmt("%.6g", p.band.levels()[2]) + ", +static " + fmt("%.6g", p.band.levels()[3]) +
           "; per inference of " + std::to_string(p.steps) +
           " step(s): " + fmt("%.6g", p.band.levels()[3] * static_cast<double>(p.steps)) + " pJ\n";
    out += "routing per step: " + fmt("%.6g", p.routing.packets) + " packets, " +
           fmt("%.6g", p.routing.hops) + " hops, " + fmt("%.6g", p.routing.energy_pj) +
           " pJ (XY hops; energy of the destination tile, latency of the source tile)\n";
    out += "latency per step: " + fmt("%.6g", p.step_ns) + " ns (slowest core " +
           std::to_string(p.critical_core) + ": " +
           fmt("%.6g", p.critical_core >= 0 ? p.core_ns[p.critical_core] : 0) + " ns, barrier " +
           fmt("%.6g", p.barrier_ns) + " ns)";
    if (s.clock_hz > 0 && p.critical_core >= 0)
        out += ", " + fmt("%.6g", p.core_ns[p.critical_core] * s.clock_hz * 1e-9) + " cycles at " +
               fmt("%g", s.clock_hz / 1e6) + " MHz";
    out += "; " + fmt("%.6g", p.inferences_per_s) + " inferences/s at " + std::to_string(p.steps) +
           " step(s)\n";
    for (const auto& n : pl.notes) out += "note: " + n + "\n";
    if (!s.assumed.empty()) {
        out += "assumed values (chip file):";
        for (const auto& a : s.assumed) out += " " + a;
        out += "\n";
    }
    out += p.measured ? "from the run's spike and event counts per sample and step; each spike is "
                        "routed to every core of the layers it feeds (docs/chips.md)\n"
                      : "estimates from firing rates, not counts of a run (docs/chips.md)\n";
    return out;
}

}  // namespace ternion::chip
