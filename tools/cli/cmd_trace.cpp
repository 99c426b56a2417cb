// `ternion trace info FILE [--json]`: what a trace file holds (nodes, observables, sizes,
// spike/op/energy totals, attention maps, run metadata), checking the layout on the way so a
// damaged or foreign file fails with one line naming the file and the field.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>

#include "sim/io/trace_reader.hpp"
#include "tools/cli/cli_common.hpp"
#include "tools/cli/commands.hpp"

namespace ternion::cli {

namespace {

using nlohmann::json;

json time_gridded(const TraceReader& tr, const std::string& g) {
    const auto di = tr.need_dataset(g + "/data", 3);
    json oj;
    oj["dt"] = tr.need_double(g, "dt");
    oj["shape"] = di.dims;
    oj["stored_bytes"] = tr.stored_bytes(g + "/data");
    if (di.kind == h5::Kind::integer) {
        auto v = tr.read_int8(g + "/data");
        oj["positive"] = std::count(v.begin(), v.end(), std::int8_t{1});
        oj["negative"] = std::count(v.begin(), v.end(), std::int8_t{-1});
        oj["events"] = oj["positive"].get<std::int64_t>() + oj["negative"].get<std::int64_t>();
    } else {
        auto v = tr.read_floats(g + "/data");
        if (!v.empty()) {
            auto [mn, mx] = std::minmax_element(v.begin(), v.end());
            oj["min"] = *mn;
            oj["max"] = *mx;
        }
    }
    return oj;
}

json events(const TraceReader& tr, const std::string& g, bool valued) {
    const auto di = tr.need_dataset(g + "/idx", 2);
    if (tr.need_dataset(g + "/time", 2).dims != di.dims)
        tr.fail(g + "/time", "shape differs from idx");
    json oj;
    oj["n_neurons"] = tr.need_double(g, "n_neurons");
    oj["t_max"] = tr.need_double(g, "t_max");
    if (auto dt = tr.attr_double(g, "dt")) oj["dt"] = *dt;
    oj["shape"] = di.dims;
    auto idx = tr.read_ints(g + "/idx");
    oj["events"] = std::count_if(idx.begin(), idx.end(), [](auto x) { return x >= 0; });
    std::uint64_t bytes = tr.stored_bytes(g + "/idx") + tr.stored_bytes(g + "/time");
    if (valued) {
        if (tr.need_dataset(g + "/value", 2).dims != di.dims)
            tr.fail(g + "/value", "shape differs from idx");
        auto v = tr.read_doubles(g + "/value");
        oj["positive"] = std::count_if(v.begin(), v.end(), [](double x) { return x > 0; });
        oj["negative"] = std::count_if(v.begin(), v.end(), [](double x) { return x < 0; });
        bytes += tr.stored_bytes(g + "/value");
    }
    oj["stored_bytes"] = bytes;
    return oj;
}

// NIR observables of every node. Attention maps are summarised by attention_section.
json observables_section(const TraceReader& tr) {
    json nodes = json::array();
    for (const auto& name : tr.nodes()) {
        json nj;
        nj["name"] = name;
        for (const auto& o : tr.observables(name)) {
            if (o.kind == ObservableKind::attention) continue;
            json oj = o.kind == ObservableKind::time_gridded
                          ? time_gridded(tr, o.group)
                          : events(tr, o.group, o.kind == ObservableKind::valued_event);
            oj["type"] = o.type;
            nj["observables"][o.name] = oj;
        }
        nodes.push_back(nj);
    }
    return nodes;
}

std::optional<json> ops_section(const TraceReader& tr) {
    auto names = tr.ternion_nodes("ops");
    if (!names) return std::nullopt;
    const auto kinds = tr.kinds();
    json ops = json::object();
    std::map<std::string, double> total;
    for (const auto& name : *names) {
        const std::string ds = "/ternion/ops/" + name;
        const auto di = tr.need_dataset(ds, 3);
        if (di.dims[2] != static_cast<std::int64_t>(kinds.size()))
            tr.fail(ds, "last axis is not the " + std::to_string(kinds.size()) +
                            " kinds of /ternion/kinds");
        auto v = tr.read_doubles(ds);
        json nj = json::object();
        for (std::size_t c = 0; c < v.size(); ++c) {
            const auto& k = kinds[c % kinds.size()];
            nj[k] = nj.value(k, 0.0) + v[c];
            total[k] += v[c];
        }
        ops[name] = nj;
    }
    return json{{"nodes", ops}, {"total", total}};
}

std::optional<json> energy_section(const TraceReader& tr) {
    auto names = tr.ternion_nodes("energy");
    if (!names) return std::nullopt;
    json en = json::object();
    double total = 0.0, report_total = 0.0, ann = 0.0;
    for (const auto& name : *names) {
        const std::string g = "/ternion/energy/" + name;
        tr.need_dataset(g + "/per_step_pj", 3);
        const auto e = tr.read_doubles(g + "/per_step_pj");
        const double s = std::accumulate(e.begin(), e.end(), 0.0);
        json nj{{"per_step_sum_pj", s}};
        if (tr.is_dataset(g + "/total_pj")) {
            const auto tp = tr.read_doubles(g + "/total_pj");
            const double t = std::accumulate(tp.begin(), tp.end(), 0.0);
            nj["report_total_pj"] = t;
            report_total += t;
        }
        if (auto a = tr.attr_double(g, "ann_pj_per_inference")) {
            nj["ann_pj_per_inference"] = *a;
            ann += *a;
        }
        total += s;
        en[name] = nj;
    }
    const double S = static_cast<double>(tr.samples().value_or(1));
    json e = {{"nodes", en},
              {"per_step_sum_pj", total},
              {"per_inference_pj", S > 0 ? total / S : 0.0},
              {"report_total_pj", report_total},
              {"ann_pj_per_inference", ann}};
    for (const char* k : {"profile", "count_mode"})
        if (auto v = tr.attr_string("/ternion/energy", k)) e[k] = *v;
    if (auto v = tr.attr_double("/ternion/energy", "per_inference_pj"))
        e["report_per_inference_pj"] = *v;
    for (auto& [name, ne] : e["nodes"].items())
        ne["per_inference_pj"] = S > 0 ? ne["per_step_sum_pj"].get<double>() / S : 0.0;
    return e;
}

std::optional<json> attention_section(const TraceReader& tr) {
    auto names = tr.ternion_nodes("attention");
    if (!names) return std::nullopt;
    json at = json::object();
    for (const auto& name : *names) {
        const std::string g = "/ternion/attention/" + name;
        const auto di = tr.need_dataset(g + "/scores", 5);
        tr.need_dataset(g + "/weights", 5);
        tr.need_dataset(g + "/present", 2);
        auto p = tr.read_int8(g + "/present");
        at[name] = {
            {"shape", di.dims},
            {"present", std::count(p.begin(), p.end(), std::int8_t{1})},
            {"maps", p.size()},
            {"stored_bytes", tr.stored_bytes(g + "/scores") + tr.stored_bytes(g + "/weights")}};
    }
    return at;
}

json summarise(const TraceReader& tr) {
    json j;
    j["file"] = tr.path();
    j["nodes"] = observables_section(tr);
    if (auto o = ops_section(tr)) j["ops"] = *o;
    if (auto e = energy_section(tr)) j["energy"] = *e;
    if (auto a = attention_section(tr)) j["attention"] = *a;
    json meta = json::object();
    for (auto& [k, v] : tr.metadata()) meta[k] = v;
    j["metadata"] = meta;
    return j;
}

void print_nodes(const json& j) {
    std::printf("\nnodes (NIRGraphData observables)\n");
    for (const auto& n : j["nodes"])
        for (auto& [obs, o] : n["observables"].items()) {
            std::string extra;
            if (o.contains("events"))
                extra += "events " + std::to_string(o["events"].get<std::int64_t>());
            if (o.contains("positive"))
                extra += " (+" + std::to_string(o["positive"].get<std::int64_t>()) + " / -" +
                         std::to_string(o["negative"].get<std::int64_t>()) + ")";
            if (o.contains("min")) {
                char b[64];
                std::snprintf(b, sizeof b, "range [%g, %g]", o["min"].get<double>(),
                              o["max"].get<double>());
                extra += b;
            }
            std::printf(
                "  %-20s %-8s %-16s %-20s %10s B  %s\n", n["name"].get<std::string>().c_str(),
                obs.c_str(), o["type"].get<std::string>().c_str(),
                shape_str(o["shape"].get<Shape>()).c_str(),
                group_digits(o["stored_bytes"].get<std::uint64_t>()).c_str(), extra.c_str());
        }
}

void print_ops(const json& ops) {
    std::printf("\nops (summed over samples and steps)\n");
    auto row = [](const std::string& name, const json& o) {
        std::printf("  %-20s AC %14.0f  MAC %14.0f  updates %12.0f\n", name.c_str(),
                    o.value("ac", 0.0), o.value("mac", 0.0), o.value("neuron_update", 0.0));
    };
    for (auto& [name, o] : ops["nodes"].items()) row(name, o);
    row("total", ops["total"]);
}

void print_energy(const json& en) {
    std::printf("\nenergy per inference (pJ; %s profile, per-step exact counts)\n",
                en.value("profile", std::string("?")).c_str());
    for (auto& [name, e] : en["nodes"].items())
        std::printf("  %-20s SNN %14.1f   ANN equivalent %14.1f\n", name.c_str(),
                    e["per_inference_pj"].get<double>(), e.value("ann_pj_per_inference", 0.0));
    std::printf("  %-20s SNN %14.1f   ANN equivalent %14.1f\n", "total",
                en["per_inference_pj"].get<double>(), en["ann_pj_per_inference"].get<double>());
}

void print_attention(const json& at) {
    std::printf("\nattention maps [samples, steps, heads, rows, cols]\n");
    for (auto& [name, a] : at.items())
        std::printf("  %-20s %-24s %lld of %lld maps present, %s B\n", name.c_str(),
                    shape_str(a["shape"].get<Shape>()).c_str(),
                    static_cast<long long>(a["present"].get<std::int64_t>()),
                    static_cast<long long>(a["maps"].get<std::int64_t>()),
                    group_digits(a["stored_bytes"].get<std::uint64_t>()).c_str());
}

void print_text(const json& j) {
    std::printf("trace %s\n", j["file"].get<std::string>().c_str());
    for (auto& [k, v] : j["metadata"].items())
        std::printf("  %-16s %s\n", k.c_str(), v.get<std::string>().c_str());
    print_nodes(j);
    if (j.contains("ops")) print_ops(j["ops"]);
    if (j.contains("energy")) print_energy(j["energy"]);
    if (j.contains("attention")) print_attention(j["attention"]);
}

}  // namespace

int cmd_trace(const Args& args) {
    po::options_description d(
        "ternion trace info FILE [--json]\n\nSummarises a trace written by `ternion run --trace`");
    d.add_options()("help,h", "show this help")(
        "action", po::value<std::string>(), "info (positional)")("file", po::value<std::string>(),
                                                                 "trace file (positional)")(
        "json", "print one JSON document instead of text");
    po::positional_options_description pos;
    pos.add("action", 1).add("file", 1);
    auto vm = parse(args, d, &pos);
    if (show_help(vm, d)) return 0;
    if (!vm.count("action") || vm["action"].as<std::string>() != "info")
        throw OptionError("action", "expected `ternion trace info FILE`");
    if (!vm.count("file")) throw OptionError("file", "is required: `ternion trace info FILE`");
    const TraceReader tr(vm["file"].as<std::string>());
    const json j = summarise(tr);
    if (vm.count("json"))
        std::cout << j.dump(2) << "\n";
    else
        print_text(j);
    return 0;
}

}  // namespace ternion::cli
