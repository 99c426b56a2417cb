// `ternion map MODEL --chip CHIP`: places the model's layers on the chip's cores (hw/chip), or
// says which layer breaks which limit; `ternion map --chips` lists the chip descriptions. For
// Xylo, `--rates` gives the firing rates of its cycle estimate; for a mesh chip (Loihi-like,
// generic 45 nm) those of its traffic, latency and energy band, and `--steps` the time steps of
// one inference.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "hw/chip/chip.hpp"
#include "models/pipeline.hpp"
#include "tools/cli/cli_common.hpp"

namespace ternion::cli {

namespace {

// "p_in,p_hid,p_out", each in [0, 1].
chip::XyloRates parse_rates(const std::string& s) {
    std::vector<double> v;
    std::size_t at = 0;
    while (at <= s.size()) {
        const std::size_t end = std::min(s.find(',', at), s.size());
        const std::string item = s.substr(at, end - at);
        std::size_t used = 0;
        double x = -1;
        try {
            x = std::stod(item, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used == 0 || used != item.size() || !(x >= 0 && x <= 1))
            throw OptionError("rates", "'" + item + "' is not a rate in [0, 1]");
        v.push_back(x);
        at = end + 1;
    }
    if (v.size() != 3)
        throw OptionError("rates",
                          "expected three rates p_in,p_hid,p_out, got " + std::to_string(v.size()));
    return {v[0], v[1], v[2]};
}

}  // namespace

int cmd_map(const Args& args) {
    po::options_description d(
        "ternion map MODEL --chip CHIP [options]\n\n"
        "Places the model's layers on the chip's cores under its memories and limits and\n"
        "reports each layer's memory and core (Xylo: its neuron populations, fan-out and the\n"
        "cycles per step; a mesh chip: each layer's cores, the routing, the step's latency and\n"
        "the energy band); a layer that does not fit is an error naming the node, the limit,\n"
        "the need and the capacity (docs/chips.md)");
    d.add_options()("help,h", "show this help")("model", po::value<std::string>(), "model file")(
        "chip", po::value<std::string>(), "a chip name (`ternion map --chips`) or a JSON file")(
        "chips", "list the chip descriptions")("json", "print the placement as JSON")(
        "rates", po::value<std::string>(),
        "firing rates p_in,p_hid,p_out (fractions of neuron-steps with a spike) for Xylo's cycles "
        "per step and a mesh chip's traffic, latency and energy band (default: every rate 1)")(
        "steps", po::value<std::int64_t>(),
        "mesh chips: time steps of one inference (default 1), for the energy and the "
        "inferences per second");
    add_model_options(d);
    po::positional_options_description pos;
    pos.add("model", 1);
    auto vm = parse(args, d, &pos);
    if (show_help(vm, d)) return 0;
    if (vm.count("chips")) {
        for (const auto& [name, desc] : chip::list_chips())
            std::printf("%-12s %s\n", name.c_str(), desc.c_str());
        return 0;
    }
    if (!vm.count("model")) throw OptionError("model", "a model file is required");
    if (!vm.count("chip")) throw OptionError("chip", "a chip is required (`ternion map --chips`)");
    const chip::Chip c = chip::load_chip(vm["chip"].as<std::string>());
    const auto model = load_model_file(vm["model"].as<std::string>(), model_options(vm));
    chip::MapOptions o;
    o.dt = model->report.used.dt;
    o.dt_source = model->report.dt_source.empty() ? "default" : model->report.dt_source;
    if (vm.count("steps")) o.steps = vm["steps"].as<std::int64_t>();
    if (vm.count("rates")) {
        o.has_rates = true;
        o.rates = parse_rates(vm["rates"].as<std::string>());
    }
    const chip::Placement p = chip::map_model(*model->graph, c, o);
    if (vm.count("json")) {
        nlohmann::json j = chip::placement_json(p, c);
        j["model"] = vm["model"].as<std::string>();
        std::cout << j.dump(2) << "\n";
    } else {
        std::cout << "model   " << vm["model"].as<std::string>() << "\n"
                  << chip::placement_text(p, c);
    }
    return 0;
}

}  // namespace ternion::cli
