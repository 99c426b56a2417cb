// `ternion quantize MODEL --profile P --output OUT`: the integer model a chip would hold
// (models/quantize.hpp), with a report of what became integer and what stayed float.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "models/quantize.hpp"
#include "tools/cli/cli_common.hpp"

namespace ternion::cli {

int cmd_quantize(const Args& args) {
    po::options_description d(
        "ternion quantize MODEL --output FILE [options]\n\n"
        "Writes the integer model a chip would hold: neurons become ternion.FixedLIF on the\n"
        "profile's datapath, their weighted layers get integer weights under one power-of-two\n"
        "scale per population (docs/fixed-point.md)");
    d.add_options()("help,h", "show this help")("model", po::value<std::string>(), "model file")(
        "output,o", po::value<std::string>(), "the integer model to write (never the model)")(
        "profile", po::value<std::string>()->default_value("loihi-like"),
        "hardware profile whose `formats` give the widths (name or file)")(
        "weight-bits", po::value<int>(), "weight width, overriding the profile's (2-16)")(
        "membrane-bits", po::value<int>(), "membrane width, overriding the profile's (2-32)")(
        "json", "print the report as JSON");
    add_model_options(d);
    po::positional_options_description pos;
    pos.add("model", 1);
    auto vm = parse(args, d, &pos);
    if (show_help(vm, d)) return 0;
    if (!vm.count("model")) throw OptionError("model", "a model file is required");
    if (!vm.count("output")) throw OptionError("output", "a file to write is required");
    QuantizeOptions o;
    o.profile = vm["profile"].as<std::string>();
    if (vm.count("weight-bits")) o.weight_bits = vm["weight-bits"].as<int>();
    if (vm.count("membrane-bits")) o.membrane_bits = vm["membrane-bits"].as<int>();
    o.load = model_options(vm);
    const auto r = quantize_model(vm["model"].as<std::string>(), vm["output"].as<std::string>(), o);
    if (!vm.count("json")) {
        std::cout << quantize_report_text(r);
        return 0;
    }
    nlohmann::json j = {{"model", r.model},
                        {"output", r.output},
                        {"profile", r.profile},
                        {"weight_bits", r.weight_bits}};
    j["nodes"] = nlohmann::json::array();
    for (const auto& n : r.nodes)
        j["nodes"].push_back({{"name", n.name},
                              {"type", n.type},
                              {"action", n.action},
                              {"scale", n.scale},
                              {"max_weight", n.max_weight},
                              {"note", n.note}});
    std::cout << j.dump(2) << "\n";
    return 0;
}

}  // namespace ternion::cli
