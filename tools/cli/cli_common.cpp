#include "tools/cli/cli_common.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "sim/core/error.hpp"
#include "sim/io/h5io.hpp"

namespace ternion::cli {

void add_model_options(po::options_description& d) {
    d.add_options()(
        "dt", po::value<double>(),
        "seconds per step for NIR's continuous neurons (default: file metadata, else 0.001)")(
        "discretization", po::value<std::string>(),
        "euler | exact (default: file metadata, else euler)")(
        "reset", po::value<std::string>(),
        "zero | subtract: reset of NIR neurons after a spike (default zero)")(
        "from", po::value<std::string>(),
        "nir | snntorch | norse | sinabs | spikingjelly: the framework that wrote the file; sets "
        "its conventions (default: file metadata/from, else nir)")(
        "allow-unstable", "accept an Euler decay factor 1 - dt/tau outside [0, 1)")(
        "ignore-unknown-params",
        "accept parameter names no node type reads (extra fields of another tool); they are "
        "listed in the report's notes (default: refused as typos)")(
        "no-weight-codebook", "store every sparse weight as a float (no shared-value codebook)");
}

UserLoadOptions model_options(const po::variables_map& vm) {
    UserLoadOptions o;
    if (vm.count("dt")) {
        double dt = vm["dt"].as<double>();
        if (!(dt > 0) || dt > 1e3)
            throw OptionError("dt",
                              "must be positive and sensible (got " + std::to_string(dt) + ")");
        o.dt = dt;
    }
    if (vm.count("discretization")) o.discretization = vm["discretization"].as<std::string>();
    if (vm.count("reset")) o.reset = vm["reset"].as<std::string>();
    if (vm.count("from")) {
        o.from = vm["from"].as<std::string>();
        find_dialect(*o.from);  // refuses an unknown name before any file is read
    }
    o.allow_unstable = vm.count("allow-unstable") > 0;
    o.ignore_unknown = vm.count("ignore-unknown-params") > 0;
    o.weight_codebook = !vm.count("no-weight-codebook");
    return o;
}

void add_input_options(po::options_description& d) {
    d.add_options()("layout", po::value<std::string>(),
                    "axis order of a spike input: samples-first (ST, [samples, T, ...], the "
                    "default) or time-first (TS, [T, samples, ...] as snnTorch, SpikingJelly "
                    "and Norse produce)");
}

Layout input_layout(const po::variables_map& vm) {
    return vm.count("layout") ? parse_layout(vm["layout"].as<std::string>()) : Layout::automatic;
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

std::uint64_t parse_bytes(const std::string& option, const std::string& text) {
    std::size_t used = 0;
    double v = 0;
    try {
        v = std::stod(text, &used);
    } catch (const std::exception&) {
        throw OptionError(option, "expected a byte count such as 8G, got '" + text + "'");
    }
    std::string unit = text.substr(used);
    double scale = 1;
    if (!unit.empty()) {
        const char u = static_cast<char>(std::toupper(static_cast<unsigned char>(unit[0])));
        const std::string rest = unit.substr(1);
        const std::size_t k = std::string("KMGT").find(u);
        if (k == std::string::npos || !(rest.empty() || rest == "B" || rest == "iB"))
            throw OptionError(option, "unknown unit in '" + text + "' (use K, M, G or T)");
        scale = std::pow(1024.0, static_cast<double>(k + 1));
    }
    const double bytes = v * scale;
    if (!(bytes >= 1) || bytes > 1.8e19)
        throw OptionError(option, "must be a positive byte count, got '" + text + "'");
    return static_cast<std::uint64_t>(bytes);
}

std::uint64_t memory_limit(const po::variables_map& vm) {
    return vm.count("max-memory") ? parse_bytes("max-memory", vm["max-memory"].as<std::string>())
                                  : default_memory_limit();
}

void check_memory(const po::variables_map& vm, double estimate, const std::string& what) {
    check_memory_limit(estimate, memory_limit(vm), what);
}

int default_threads() {
    unsigned n = std::thread::hardware_concurrency();
    return n == 0 ? 1 : static_cast<int>(n);
}

}  // namespace ternion::cli
