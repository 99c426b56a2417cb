// `ternion map MODEL --chip CHIP`: places the model's layers on the chip's cores (hw/chip), or
// says which layer breaks which limit; `ternion map --chips` lists the chip descriptions.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "hw/chip/chip.hpp"
#include "models/pipeline.hpp"
#include "tools/cli/cli_common.hpp"

namespace ternion::cli {

int cmd_map(const Args& args) {
    po::options_description d(
        "ternion map MODEL --chip CHIP [options]\n\n"
        "Places the model's layers on the chip's cores under its memories and limits and\n"
        "reports each layer's memory and core; a layer that does not fit is an error naming the\n"
        "node, the limit, the need and the capacity (docs/chips.md)");
    d.add_options()("help,h", "show this help")("model", po::value<std::string>(), "model file")(
        "chip", po::value<std::string>(), "a chip name (`ternion map --chips`) or a JSON file")(
        "chips", "list the chip descriptions")("json", "print the placement as JSON");
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
    const chip::Placement p = chip::map_model(*model->graph, c);
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
