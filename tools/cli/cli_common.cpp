#include "tools/cli/cli_common.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "sim/core/error.hpp"
#include "sim/io/h5io.hpp"

namespace ternion::cli {

void add_options(po::options_description& d, const std::vector<OptionSpec>& specs) {
    for (const OptionSpec& o : specs) {
        const std::string name =
            o.short_name ? std::string(o.cli) + "," + o.short_name : std::string(o.cli);
        if (o.type == OptionType::flag) {
            d.add_options()(name.c_str(), o.help);
        } else if (o.repeatable) {
            d.add_options()(name.c_str(), po::value<std::vector<std::string>>(), o.help);
        } else {
            auto* v = po::value<std::string>();
            if (*o.fallback) v->default_value(o.fallback);
            d.add_options()(name.c_str(), v, o.help);
        }
    }
}

bool CommandLineValues::given(const OptionSpec& o) const {
    return vm_.count(o.cli) > 0 && !vm_[o.cli].defaulted();
}

std::string CommandLineValues::text(const OptionSpec& o) const {
    return vm_[o.cli].as<std::string>();
}

std::vector<std::string> CommandLineValues::list(const OptionSpec& o) const {
    if (o.repeatable) return vm_[o.cli].as<std::vector<std::string>>();
    std::vector<std::string> r;
    std::stringstream ss(text(o));
    std::string item;
    while (std::getline(ss, item, ','))
        if (!item.empty()) r.push_back(item);
    return r;
}

void add_model_options(po::options_description& d) {
    add_options(d, load_option_specs());
}

UserLoadOptions model_options(const po::variables_map& vm) {
    return read_load_options(CommandLineValues(vm));
}

po::variables_map parse(const Args& args, const po::options_description& desc,
                        const po::positional_options_description* pos) {
    po::variables_map vm;
    auto parser = po::command_line_parser(args).options(desc);
    if (pos) parser.positional(*pos);
    po::store(parser.run(), vm);
    po::notify(vm);
    return vm;
}

bool help_asked(const Args& args, const po::options_description& desc) {
    for (const auto& a : args)
        if (a == "--help" || a == "-h") {
            std::cout << desc << "\n";
            return true;
        }
    return false;
}

bool show_help(const po::variables_map& vm, const po::options_description& desc) {
    if (!vm.count("help")) return false;
    std::cout << desc << "\n";
    return true;
}

std::uint64_t memory_limit(const po::variables_map& vm) {
    return vm.count("max-memory") ? parse_bytes("max-memory", vm["max-memory"].as<std::string>())
                                  : default_memory_limit();
}

void check_memory(const po::variables_map& vm, double estimate, const std::string& what) {
    check_memory_limit(estimate, memory_limit(vm), what);
}

}  // namespace ternion::cli
