#include "tools/cli_common.hpp"

#include <algorithm>
#include <iostream>
#include <thread>

#include "sim/error.hpp"

namespace ternion::cli {

void add_model_options(po::options_description& d) {
    d.add_options()(
        "dt", po::value<double>(),
        "seconds per step for NIR's continuous neurons (default: file metadata, else 0.001)")(
        "discretization", po::value<std::string>(),
        "euler | exact (default: file metadata, else euler)")(
        "reset", po::value<std::string>(),
        "zero | subtract: reset of NIR neurons after a spike (default zero)")(
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
    o.weight_codebook = !vm.count("no-weight-codebook");
    return o;
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

bool show_help(const po::variables_map& vm, const po::options_description& desc) {
    if (!vm.count("help")) return false;
    std::cout << desc << "\n";
    return true;
}

int default_threads() {
    unsigned n = std::thread::hardware_concurrency();
    return n == 0 ? 1 : static_cast<int>(n);
}

std::string group_digits(std::uint64_t v) {
    std::string s = std::to_string(v), r;
    int c = 0;
    for (auto it = s.rbegin(); it != s.rend(); ++it) {
        if (c && c % 3 == 0) r.push_back(',');
        r.push_back(*it);
        ++c;
    }
    return {r.rbegin(), r.rend()};
}

Spread spread(std::vector<double> v) {
    if (v.empty()) return {};
    std::sort(v.begin(), v.end());
    const std::size_t m = v.size();
    return {m % 2 ? v[m / 2] : 0.5 * (v[m / 2 - 1] + v[m / 2]), v.front(), v.back()};
}

}  // namespace ternion::cli
