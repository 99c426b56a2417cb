// The run report in its two forms: the JSON document of `ternion run --json` (and of the
// bindings' `Result.json()`) and the text tables.
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "models/pipeline.hpp"
#include "sim/core/format.hpp"
#include "sim/simd/simd.hpp"

namespace ternion {

namespace {

nlohmann::json layer_json(const LayerRecord& l, std::int64_t samples, std::int64_t T) {
    nlohmann::json lj;
    lj["name"] = l.name;
    lj["type"] = l.type;
    lj["category"] = category_name(l.category);
    lj["neurons"] = l.neurons;
    lj["spikes"] = l.nonzero_out;
    lj["positive_spikes"] = l.positive_out;
    lj["negative_spikes"] = l.negative_out;
    lj["firing_rate"] =
        l.spiking ? nlohmann::json(l.firing_rate(samples, T)) : nlohmann::json(nullptr);
    lj["input_rate"] = l.input_rate(samples, T);
    lj["ops"] = hw::ops_json(l.ops);
    lj["dense_mac"] =
        l.dense_macs_per_step * static_cast<std::uint64_t>(T) * static_cast<std::uint64_t>(samples);
    if (l.attention_shape)
        l.attention.for_each(
            [&](std::string_view k, std::uint64_t v) { lj["attention"][std::string(k)] = v; });
    return lj;
}

double node_seconds_total(const RunRecord& rec) {
    double total = 0.0;
    for (const auto& l : rec.layers) total += l.seconds;
    return total;
}

nlohmann::json timing_json(const RunReport& r) {
    const double S = static_cast<double>(r.result.samples), sim = r.result.simulate_s;
    nlohmann::json t = {{"load_s", r.load_s},
                        {"price_s", r.price_s},
                        {"simulate_s", sim},
                        {"samples_per_s", sim > 0 ? S / sim : 0.0},
                        // Which vector kernels ran (sim/simd): timings depend on it, results not.
                        {"kernels", simd::level_name(simd::level())},
                        {"cpu_best_kernels", simd::level_name(simd::detect())}};
    // Latency of one inference: the median is what a warm, steady stream of samples costs
    // (the first sample also pays for first-touch allocations and cold caches).
    if (!r.result.sample_s.empty()) {
        const auto s = spread(r.result.sample_s);
        t["sample_ms"] = {{"median", 1e3 * s.median}, {"min", 1e3 * s.min}, {"max", 1e3 * s.max}};
    }
    if (r.record.node_times) {
        const double total = node_seconds_total(r.record);
        for (const auto& l : r.record.layers)
            t["nodes"].push_back({{"name", l.name},
                                  {"type", l.type},
                                  {"s", l.seconds},
                                  {"share", total > 0 ? l.seconds / total : 0.0}});
    }
    return t;
}

void print_layers(std::string& out, const RunReport& r) {
    const int wn = name_column(r.record.layers, false, 5),
              wt = name_column(r.record.layers, true, 4);
    char line[1024];
    std::snprintf(line, sizeof line, "\n%-*s %-*s %9s %12s %7s %14s %14s %12s\n", wn, "layer", wt,
                  "type", "neurons", "spikes", "rate", "AC", "MAC", "updates");
    out += line;
    for (const auto& l : r.record.layers) {
        if (l.category == NodeCategory::input) continue;
        char rate[16] = "-";
        if (l.spiking)
            std::snprintf(rate, sizeof rate, "%.4f", l.firing_rate(r.result.samples, r.timesteps));
        std::snprintf(line, sizeof line, "%-*s %-*s %9lld %12s %7s %14s %14s %12s\n", wn,
                      l.name.c_str(), wt, l.type.c_str(), static_cast<long long>(l.neurons),
                      l.spiking ? group_digits(l.nonzero_out).c_str() : "-", rate,
                      group_digits(l.ops.ac).c_str(), group_digits(l.ops.mac).c_str(),
                      group_digits(l.ops.neuron_update).c_str());
        out += line;
    }
}

std::string printf_string(const char* fmt, auto... args) {
    const int n = std::snprintf(nullptr, 0, fmt, args...);
    std::string s(static_cast<std::size_t>(n) + 1, '\0');
    std::snprintf(s.data(), s.size(), fmt, args...);
    s.pop_back();
    return s;
}

}  // namespace

nlohmann::json report_json(const RunReport& r) {
    const double S = static_cast<double>(r.result.samples);
    nlohmann::json j;
    j["model"] = r.model;
    j["input"] = r.input;
    j["samples"] = r.result.samples;
    j["timesteps"] = r.timesteps;
    j["engine"] = engine_name(r.engine);
    j["threads"] = r.threads;
    j["encoding"] = encoding_name(r.encoding);
    j["input_kind"] = r.input_kind;
    j["input_encodings"] = nlohmann::json::object();
    for (const auto& [node, enc] : r.input_encodings) j["input_encodings"][node] = enc;
    j["load_options"] = {{"dt", r.load.used.dt},
                         {"dt_source", r.load.dt_source},
                         {"discretization", r.load.used.discretization},
                         {"reset", r.load.used.reset},
                         {"from", r.load.used.dialect}};
    j["notes"] = r.load.notes;
    j["accuracy"] = r.accuracy ? nlohmann::json(*r.accuracy) : nlohmann::json(nullptr);
    j["predictions"] = r.result.predictions;
    nlohmann::json layers = nlohmann::json::array();
    for (const auto& l : r.record.layers)
        layers.push_back(layer_json(l, r.result.samples, r.timesteps));
    j["layers"] = layers;
    j["totals"] = {{"ops", hw::ops_json(r.total)}};
    j["per_inference"] = {{"ops", hw::ops_json(r.total, S)}};
    j["ann_equivalent"] = {
        {"mac", static_cast<double>(r.ann_mac)},
        {"mac_one_pass", static_cast<double>(r.ann_mac) / std::max<double>(1.0, r.timesteps)}};
    j["timing"] = timing_json(r);
    if (!r.trace_path.empty())
        j["trace"] = {{"file", r.trace_path}, {"bytes_in_memory", r.trace_bytes}};
    hw::add_to_json(r.cost, j);
    if (r.chip) j["chip"] = chip::placement_json(*r.chip, *r.chip_desc);
    return j;
}

// Nodes by their share of the simulation's thread time, largest first.
void print_node_times(std::string& out, const RunReport& r) {
    std::vector<const LayerRecord*> by_time;
    for (const auto& l : r.record.layers) by_time.push_back(&l);
    std::stable_sort(
        by_time.begin(), by_time.end(),
        [](const LayerRecord* a, const LayerRecord* b) { return a->seconds > b->seconds; });
    const double total = node_seconds_total(r.record);
    const double S = std::max(1.0, static_cast<double>(r.result.samples));
    const int wn = name_column(r.record.layers, false, 14),
              wt = name_column(r.record.layers, true, 4);
    out += printf_string("\n%-*s %-*s %12s %12s %7s\n", wn, "node (by time)", wt, "type",
                         "thread s", "us/sample", "share");
    for (const LayerRecord* l : by_time)
        out += printf_string("%-*s %-*s %12.4f %12.2f %6.1f%%\n", wn, l->name.c_str(), wt,
                             l->type.c_str(), l->seconds, 1e6 * l->seconds / S,
                             total > 0 ? 100.0 * l->seconds / total : 0.0);
}

std::string report_text(const RunReport& r) {
    const double S = static_cast<double>(r.result.samples);
    const LoadReport& lr = r.load;
    std::string out = printf_string("model   %s (%d nodes)\n", r.model.c_str(), r.nodes);
    out += printf_string("input   %s: %lld samples x %lld steps, %s\n", r.input.c_str(),
                         static_cast<long long>(r.result.samples),
                         static_cast<long long>(r.timesteps), r.input_kind.c_str());
    out +=
        printf_string("engine  %s, %d thread%s; dt %g s (%s), %s, reset %s\n",
                      engine_name(r.engine), r.threads, r.threads == 1 ? "" : "s", lr.used.dt,
                      lr.dt_source.c_str(), lr.used.discretization.c_str(), lr.used.reset.c_str());
    for (const auto& n : lr.notes) out += "note    " + n + "\n";
    print_layers(out, r);
    out += printf_string("\nper inference: %.1f AC, %.1f MAC, %.1f neuron updates, %.1f spikes\n",
                         static_cast<double>(r.total.ac) / S, static_cast<double>(r.total.mac) / S,
                         static_cast<double>(r.total.neuron_update) / S,
                         static_cast<double>(r.total.spikes_out) / S);
    out += printf_string("ANN equivalent: %.1f MAC per pass, %.1f for T=%lld passes\n\n",
                         static_cast<double>(r.ann_mac) / std::max<double>(1.0, r.timesteps),
                         static_cast<double>(r.ann_mac), static_cast<long long>(r.timesteps));
    out += hw::format_table(r.cost) + "\n";
    if (r.chip) out += "\non chip:\n" + chip::placement_text(*r.chip, *r.chip_desc) + "\n";
    if (r.accuracy)
        out += printf_string("accuracy: %.2f%% (%lld/%lld)\n", 100.0 * *r.accuracy,
                             static_cast<long long>(r.correct),
                             static_cast<long long>(r.result.samples));
    const double sim = r.result.simulate_s;
    out += printf_string("time: load %.3f s, simulate %.3f s (%.1f samples/s, %s kernels)\n",
                         r.load_s, sim, sim > 0 ? S / sim : 0.0, simd::short_name(simd::level()));
    if (r.record.node_times) print_node_times(out, r);
    if (!r.trace_path.empty()) out += "trace: " + r.trace_path + "\n";
    return out;
}

}  // namespace ternion
