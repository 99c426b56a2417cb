#include "tools/cli_common.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <cstdint>
#include <filesystem>
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
        "from", po::value<std::string>(),
        "nir | snntorch | norse | sinabs | spikingjelly: the framework that wrote the file; sets "
        "its conventions (default: file metadata/from, else nir)")(
        "allow-unstable", "accept an Euler decay factor 1 - dt/tau outside [0, 1)")(
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

bool show_help(const po::variables_map& vm, const po::options_description& desc) {
    if (!vm.count("help")) return false;
    std::cout << desc << "\n";
    return true;
}

namespace {

namespace fs = std::filesystem;

// Same file by identity (hard links, symlinks, "dir/../x") or by canonical path.
bool same_file(const std::string& a, const std::string& b) {
    struct stat sa {};
    struct stat sb {};
    if (::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0)
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    std::error_code ea, eb;
    const auto ca = fs::weakly_canonical(a, ea), cb = fs::weakly_canonical(b, eb);
    return !ea && !eb && ca == cb;
}

}  // namespace

void check_output(const std::string& option, const std::string& out,
                  const std::vector<NamedPath>& inputs) {
    if (out.empty()) throw OptionError(option, "is an empty path");
    for (const auto& in : inputs)
        if (!in.path.empty() && same_file(out, in.path))
            throw OptionError(option, "'" + out + "' is the " + in.option + " file '" + in.path +
                                          "'; refusing to overwrite an input");
    const fs::path target(out);
    std::error_code ec;
    if (!target.has_filename() || fs::is_directory(target, ec))
        throw OptionError(option, "'" + out + "' is a directory, not a file");
    const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
    if (!fs::is_directory(dir, ec))
        throw OptionError(option, "directory of '" + out + "' does not exist");
    if (::access(dir.c_str(), W_OK | X_OK) != 0)
        throw OptionError(option, "directory of '" + out + "' is not writable");
    // Outputs are written as ".<name>.tmp-<pid>" beside the target, then renamed.
    if (target.filename().string().size() + 32 > NAME_MAX)
        throw OptionError(option, "file name of '" + out + "' is too long (at most " +
                                      std::to_string(NAME_MAX - 32) + " bytes)");
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

std::uint64_t default_memory_limit() {
    const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || page <= 0) return UINT64_MAX;
    return static_cast<std::uint64_t>(0.8 * static_cast<double>(pages) * static_cast<double>(page));
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
