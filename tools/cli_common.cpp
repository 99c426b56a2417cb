#include "tools/cli_common.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "sim/error.hpp"
#include "sim/h5io.hpp"

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

std::uint64_t memory_limit(const po::variables_map& vm) {
    return vm.count("max-memory") ? parse_bytes("max-memory", vm["max-memory"].as<std::string>())
                                  : default_memory_limit();
}

std::uint64_t resident_bytes() {
    std::ifstream f("/proc/self/statm");
    std::uint64_t size = 0, resident = 0;
    f >> size >> resident;
    return resident * static_cast<std::uint64_t>(::sysconf(_SC_PAGE_SIZE));
}

void check_memory(const po::variables_map& vm, double estimate, const std::string& what) {
    const std::uint64_t limit = memory_limit(vm);
    if (estimate > static_cast<double>(limit))
        throw OptionError("max-memory", what + " needs an estimated " +
                                            std::to_string(static_cast<std::uint64_t>(estimate)) +
                                            " bytes, over the limit of " + std::to_string(limit) +
                                            " bytes");
}

namespace {
struct Declared {
    const h5::Reader* reader;
    double bytes = 0;
};

herr_t add_declared(hid_t root, const char* name, const H5O_info_t* info, void* op) {
    if (info->type != H5O_TYPE_DATASET) return 0;
    auto* d = static_cast<Declared*>(op);
    try {
        d->reader->check_storage(std::string("/") + name);
    } catch (const Error&) {
        return 0;  // declares far more than it stores: the reader refuses it, naming the field
    }
    h5::Handle ds(H5Dopen2(root, name, H5P_DEFAULT), H5Dclose);
    if (!ds) return 0;
    h5::Handle space(H5Dget_space(ds.id()), H5Sclose), type(H5Dget_type(ds.id()), H5Tclose);
    const hssize_t n = H5Sget_simple_extent_npoints(space.id());
    const std::size_t sz = std::max<std::size_t>(4, H5Tget_size(type.id()));
    if (n > 0) d->bytes += static_cast<double>(n) * static_cast<double>(sz);
    return 0;
}
}  // namespace

double declared_bytes(const std::string& h5_path) {
    const h5::Reader r(h5_path);
    Declared d{&r};
    H5Ovisit2(r.file_id(), H5_INDEX_NAME, H5_ITER_INC, add_declared, &d, H5O_INFO_BASIC);
    return d.bytes;
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
