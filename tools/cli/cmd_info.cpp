// `ternion info MODEL`: nodes, types, shapes, parameter summaries, density and edges.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "tools/cli/cli_common.hpp"

namespace ternion::cli {

int cmd_info(const Args& args) {
    po::options_description d("ternion info MODEL [options]\n\nDescribes a model file");
    d.add_options()("help,h", "show this help")("model", po::value<std::string>(), "model file")(
        "types", "list the supported node types")("json", "print JSON")(
        "max-memory", po::value<std::string>(),
        "refuse a model whose estimated memory is above this many bytes, e.g. 8G (default: 80 % "
        "of physical memory)");
    add_model_options(d);
    po::positional_options_description pos;
    pos.add("model", 1);
    auto vm = parse(args, d, &pos);
    if (show_help(vm, d)) return 0;
    if (vm.count("types")) {
        for (auto& [t, desc] : default_factory().types())
            std::printf("%-26s %s\n", t.c_str(), desc.c_str());
        return 0;
    }
    if (!vm.count("model")) throw OptionError("model", "a model file is required");
    const std::string path = vm["model"].as<std::string>();
    memory_limit(vm);  // a malformed --max-memory fails before the model is read
    // What the file declares, held as floats twice (as read and in the nodes), before loading.
    check_memory(vm, static_cast<double>(resident_bytes()) + 2 * declared_bytes(path),
                 "loading the model");
    LoadReport rep;
    auto g = load_model(path, model_options(vm), rep);
    if (vm.count("json")) {
        nlohmann::json j;
        j["model"] = path;
        j["dt"] = rep.used.dt;
        j["notes"] = rep.notes;
        for (int u : g->order()) {
            const Node& n = g->node(u);
            nlohmann::json nj = {{"name", n.name()},
                                 {"type", n.type()},
                                 {"category", category_name(n.category())},
                                 {"in_shape", n.in_shape()},
                                 {"out_shape", n.out_shape()},
                                 {"params", n.param_count()},
                                 {"dense_mac_per_step", n.dense_macs_per_step()}};
            if (n.weight_density() >= 0) nj["weight_density"] = n.weight_density();
            for (auto& [k, v] : n.summary()) nj["summary"][k] = v;
            j["nodes"].push_back(nj);
        }
        for (const auto& e : g->edges())
            j["edges"].push_back({{"source", g->node(e.src).name()},
                                  {"target", g->node(e.dst).name()},
                                  {"delayed", e.delayed}});
        std::cout << j.dump(2) << "\n";
        return 0;
    }
    std::uint64_t params = 0;
    std::printf("model %s: %d nodes, %zu edges; dt %g s (%s), %s, reset %s\n", path.c_str(),
                g->size(), g->edges().size(), rep.used.dt, rep.dt_source.c_str(),
                rep.used.discretization.c_str(), rep.used.reset.c_str());
    for (const auto& n : rep.notes) std::printf("note: %s\n", n.c_str());
    std::printf("\n%-24s %-20s %-10s %-16s %-16s %10s %8s\n", "node", "type", "kind", "in", "out",
                "params", "density");
    for (int u : g->order()) {
        const Node& n = g->node(u);
        params += n.param_count();
        char dens[16] = "-";
        if (n.weight_density() >= 0) std::snprintf(dens, sizeof dens, "%.3f", n.weight_density());
        std::printf("%-24s %-20s %-10s %-16s %-16s %10s %8s\n", n.name().c_str(), n.type().c_str(),
                    category_name(n.category()),
                    n.category() == NodeCategory::input ? "-" : shape_str(n.in_shape()).c_str(),
                    shape_str(n.out_shape()).c_str(), group_digits(n.param_count()).c_str(), dens);
        for (auto& [k, v] : n.summary()) std::printf("%26s%s: %s\n", "", k.c_str(), v.c_str());
    }
    std::printf("\nparameters: %s\n\nedges:\n", group_digits(params).c_str());
    for (const auto& e : g->edges())
        std::printf("  %s -> %s%s\n", g->node(e.src).name().c_str(), g->node(e.dst).name().c_str(),
                    e.delayed ? "   (recurrent: one-step delay)" : "");
    return 0;
}

}  // namespace ternion::cli
