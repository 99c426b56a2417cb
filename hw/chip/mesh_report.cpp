// A mesh placement as JSON (`ternion map --json`, Python's ternion.map) and as text: the layers
// on their cores, the routing, the step's latency and the energy band, with the chip's sources
// and the values its file marks as assumed.
#include <algorithm>
#include <array>
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

json ratio(double snn, double ann) {
    return ann > 0 ? json(snn / ann) : json(nullptr);
}

// SNN/ANN at each level of the band: the SNN's inference against the ANN's band.
json ratios(const Band& snn, const Band& ann) {
    const auto a = ann.levels();
    const auto s = snn.levels();
    return {{"ops", ratio(s[0], a[0])},
            {"memory", ratio(s[1], a[1])},
            {"routing", ratio(s[2], a[2])},
            {"static", ratio(s[3], a[3])}};
}

Band times(Band b, double t) {
    b.ops *= t, b.memory *= t, b.routing *= t, b.statics *= t;
    return b;
}

// One pass (an ANN has no time steps) and, for comparison, T passes (one a step, as the run
// report's ANN equivalent), with the SNN's inference of T steps over each.
json ann_layer_json(const MeshLayer& l, double steps) {
    const Band snn = times(l.band, steps), t = times(l.ann.band, steps);
    return {{"macs", l.ann.macs},
            {"outputs", l.ann.outputs},
            {"weight_words", l.ann.weight_words},
            {"activation_words", l.ann.activation_words},
            {"packets", l.ann.packets},
            {"hops", l.ann.hops},
            {"band_pj", band_json(l.ann.band)},
            {"t_passes_pj", band_json(t)},
            {"snn_over_ann", ratios(snn, l.ann.band)},
            {"snn_over_ann_t_passes", ratios(snn, t)}};
}

json ann_json(const MeshPlacement& p, const MeshSpec& s) {
    const auto& a = p.ann;
    const double steps = static_cast<double>(p.steps);
    const Band snn = times(p.band, steps), t = times(a.band, steps);
    json cores = json::array();
    for (std::size_t k = 0; k < a.core_ns.size(); ++k)
        cores.push_back({{"core", k}, {"ns", a.core_ns[k]}});
    return {
        {"passes", p.steps},
        {"macs_per_pass", a.macs},
        {"packets_per_pass", a.packets},
        {"hops_per_pass", a.hops},
        {"latency", {{"cores", cores}, {"critical_core", a.critical_core}, {"pass_ns", a.pass_ns}}},
        {"figures",
         {{"mac_pj", s.ann_mac_pj},
          {"mac_ns", s.ann_mac_ns},
          {"activation_pj", s.ann_activation_pj},
          {"activation_ns", s.ann_activation_ns},
          {"activation_bits", s.ann_activation_bits},
          {"weight_bits", s.weight_bits}}},
        {"one_pass_pj", band_json(a.band)},
        {"t_passes_pj", band_json(t)},
        {"snn_over_ann", ratios(snn, a.band)},
        {"snn_over_ann_t_passes", ratios(snn, t)}};
}

// Attention's internal work per step, its part of the layer's band (cumulative as the band),
// and the ANN's dense score MACs and internal values of one pass.
json attention_json(const MeshLayer& l) {
    const MeshLayer::Att& a = l.att;
    static const char* forms[] = {"none", "qkv_products", "column_sum", "ternary_shiftmax"};
    const auto v = a.band.levels();
    return {{"qkv_neurons", l.qkv_neurons},
            {"score_entries", l.score_entries},
            {"fits", true},
            {"closed_form", forms[static_cast<int>(l.shape.closed_form)]},
            {"adds", a.adds},
            {"shifts", a.shifts},
            {"compares", a.cmps},
            {"entries_written", a.entries},
            {"q_spikes", a.q},
            {"k_spikes", a.k},
            {"v_sent", a.v},
            {"mixed_values", a.mixed},
            {"packets", a.packets},
            {"hops", a.hops},
            {"band_pj", {{"ops", v[0]}, {"memory", v[1]}, {"routing", v[2]}}},
            {"ann_macs", a.dense_macs},
            {"ann_packets", l.ann.att_packets}};
}

// A per-core or per-link figure; 0 where routing has not run (an empty vector).
double at_or_zero(const std::vector<double>& v, std::int64_t i) {
    return i >= 0 && static_cast<std::size_t>(i) < v.size() ? v[static_cast<std::size_t>(i)] : 0;
}

json layer_json(const MeshLayer& l, const MeshPlacement& p, const Mesh& m) {
    json cores = json::array();
    for (const CoreUse& c : l.cores) {
        const auto [x, y] = m.tile_of(c.core);
        const double sent = at_or_zero(p.routing.core_packets, c.core);
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
                         {"axons_out", c.axons_out},
                         {"packets_sent", sent}});
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
              {"weights_in_dram", l.weights_in_dram},
              {"dram_weight_bytes", l.dram_weight_bytes},
              {"weight_words", l.weight_words},
              {"state_words", l.state_words},
              {"band_pj", band_json(l.band)},
              {"ann", ann_layer_json(l, static_cast<double>(p.steps))}};
    j["attention"] = nullptr;
    if (l.kind == "attention") j["attention"] = attention_json(l);
    return j;
}

// Every directed link between neighbouring tiles with the packets crossing it per step, in the
// order of link_index (tile, then +x, -x, +y, -y).
json links_json(const RouteTotals& r, const Mesh& m) {
    static constexpr std::array<std::array<int, 2>, 4> step = {{{1, 0}, {-1, 0}, {0, 1}, {0, -1}}};
    json links = json::array();
    for (std::int64_t t = 0; t < m.width * m.height; ++t)
        for (int d = 0; d < 4; ++d) {
            const std::int64_t x = t % m.width, y = t / m.width;
            const std::int64_t tx = x + step[d][0], ty = y + step[d][1];
            if (tx < 0 || ty < 0 || tx >= m.width || ty >= m.height) continue;
            links.push_back({{"from", {x, y}},
                             {"to", {tx, ty}},
                             {"packets", at_or_zero(r.link_packets, link_index(t, d))}});
        }
    return links;
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
            {"clock_hz", s.clock_hz > 0 ? json(s.clock_hz) : json(nullptr)},
            {"dram", s.dram ? json{{"pj_per_access", s.dram_pj},
                                   {"access_bits", s.dram_access_bits},
                                   {"bandwidth", "not modelled"},
                                   {"latency", "not modelled"}}
                            : json(nullptr)}};
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
    json dram = json::array();
    for (const MeshLayer& l : p.layers)
        if (l.weights_in_dram) dram.push_back(l.name);
    j["dram_layers"] = dram;
    j["input_neurons"] = p.input_neurons;
    j["rates"] = {{"input", p.rate_in}, {"hidden", p.rate_hidden}, {"output", p.rate_out}};
    j["rates_given"] = p.rates_given;
    j["measured"] = p.measured;
    j["routing"] = {{"packets", p.routing.packets},
                    {"hops", p.routing.hops},
                    {"energy_pj", p.routing.energy_pj},
                    {"input_pj", p.routing.host_pj},
                    {"input_packets", p.routing.host_packets},
                    {"links", links_json(p.routing, m)}};
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
    const Band inf = times(p.band, static_cast<double>(p.steps));
    j["band"] = {{"step_pj", band_json(p.band)}, {"inference_pj", band_json(inf)}};
    j["ann"] = ann_json(p, c.mesh);
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

std::string levels_text(const std::array<double, 4>& v, const char* f) {
    return std::string("ops ") + fmt(f, v[0]) + ", +memory " + fmt(f, v[1]) + ", +routing " +
           fmt(f, v[2]) + ", +static " + fmt(f, v[3]);
}

std::array<double, 4> over(const Band& snn, const Band& ann) {
    const auto s = snn.levels(), a = ann.levels();
    std::array<double, 4> r{};
    for (std::size_t i = 0; i < 4; ++i) r[i] = a[i] > 0 ? s[i] / a[i] : 0;
    return r;
}

// The ANN equivalent per layer (one pass) and in total, with SNN/ANN at each level: the SNN's
// inference of T steps over one pass, and over T passes (one a step).
std::string ann_text(const MeshPlacement& p) {
    std::size_t w = 5;
    for (const MeshLayer& l : p.layers) w = std::max(w, l.name.size());
    const int W = static_cast<int>(w);
    const double T = static_cast<double>(p.steps);
    char line[512];
    std::string out =
        "\nANN equivalent, one pass (every synapse a dense MAC, every stored weight "
        "read once, every output value written, read and sent once):\n";
    std::snprintf(line, sizeof line, "%-*s %12s %11s %11s %11s %11s %9s\n", W, "layer", "MACs",
                  "ops pJ", "+memory", "+routing", "+static", "SNN/ANN");
    out += line;
    for (const MeshLayer& l : p.layers) {
        const auto v = l.ann.band.levels();
        std::snprintf(line, sizeof line, "%-*s %12.6g %11.5g %11.5g %11.5g %11.5g %9.4g\n", W,
                      l.name.c_str(), l.ann.macs, v[0], v[1], v[2], v[3],
                      over(times(l.band, T), l.ann.band)[3]);
        out += line;
    }
    const Band snn = times(p.band, T), t = times(p.ann.band, T);
    const std::string n = std::to_string(p.steps);
    out += "(SNN/ANN: the SNN's inference of " + n + " step(s) over one pass, at +static)\n";
    out += "ANN per pass (pJ, cumulative): " + levels_text(p.ann.band.levels(), "%.6g") +
           "; latency " + fmt("%.6g", p.ann.pass_ns) + " ns (slowest core " +
           std::to_string(p.ann.critical_core) + ")\n";
    out += "SNN/ANN per inference, one pass:             " +
           levels_text(over(snn, p.ann.band), "%.4g") + "\n";
    out += "SNN/ANN per inference, T=" + n +
           " passes (one a step): " + levels_text(over(snn, t), "%.4g") + "\n";
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
           " pJ (a packet per core holding a target; XY hops; energy of the destination tile, "
           "latency of the source tile)\n";
    out += "latency per step: " + fmt("%.6g", p.step_ns) + " ns (slowest core " +
           std::to_string(p.critical_core) + ": " +
           fmt("%.6g", p.critical_core >= 0 ? p.core_ns[p.critical_core] : 0) + " ns, barrier " +
           fmt("%.6g", p.barrier_ns) + " ns)";
    if (s.clock_hz > 0 && p.critical_core >= 0)
        out += ", " + fmt("%.6g", p.core_ns[p.critical_core] * s.clock_hz * 1e-9) + " cycles at " +
               fmt("%g", s.clock_hz / 1e6) + " MHz";
    out += "; " + fmt("%.6g", p.inferences_per_s) + " inferences/s at " + std::to_string(p.steps) +
           " step(s)\n";
    out += ann_text(p);
    for (const auto& n : pl.notes) out += "note: " + n + "\n";
    if (!s.assumed.empty()) {
        out += "assumed values (chip file):";
        for (const auto& a : s.assumed) out += " " + a;
        out += "\n";
    }
    out += p.measured ? "from the run's spike and event counts per sample and step; each spike is "
                        "routed to the cores holding its own targets (docs/chips.md)\n"
                      : "estimates from firing rates, not counts of a run; each spike is routed to "
                        "the cores holding its own targets (docs/chips.md)\n";
    return out;
}

}  // namespace ternion::chip
