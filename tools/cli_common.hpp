// Pieces shared by the CLI subcommands: model-loading options, option parsing helpers.
#pragma once
#include <boost/program_options.hpp>
#include <memory>
#include <string>
#include <vector>

#include "models/nir_loader.hpp"
#include "tools/commands.hpp"

namespace ternion::cli {

namespace po = boost::program_options;

// --dt, --discretization, --reset
void add_model_options(po::options_description& d);
UserLoadOptions model_options(const po::variables_map& vm);

// Parses `args` against `desc` (+ positional names); throws OptionError on bad input.
po::variables_map parse(const Args& args, const po::options_description& desc,
                        const po::positional_options_description* pos = nullptr);

// Prints `desc` and returns true when --help was given (the caller then exits 0).
bool show_help(const po::variables_map& vm, const po::options_description& desc);

// An input file and the option (or role) that named it, for output checks.
struct NamedPath {
    std::string option;  // "input", "model", ...
    std::string path;
};

// Refuses, before any work, an output path given with --option that is the same file as one of
// `inputs` (by device and inode, or by canonical path), names a directory, lies in a missing or
// unwritable directory, or whose hidden temporary name would be too long. Throws OptionError.
void check_output(const std::string& option, const std::string& out,
                  const std::vector<NamedPath>& inputs);

// A byte count such as 1048576, 512M, 8G or 1.5GiB (K, M, G, T are powers of 1024); throws
// OptionError(option) on anything else, a negative value included.
std::uint64_t parse_bytes(const std::string& option, const std::string& text);

// The default memory limit of a run: 80 % of the machine's physical memory.
std::uint64_t default_memory_limit();

// --max-memory if given, else default_memory_limit().
std::uint64_t memory_limit(const po::variables_map& vm);

// Resident memory of the process now, from /proc/self/statm.
std::uint64_t resident_bytes();

// Refuses (OptionError on --max-memory) an estimate of `estimate` bytes above memory_limit(vm),
// naming what needs it ("the run", "loading the model").
void check_memory(const po::variables_map& vm, double estimate, const std::string& what);

// Bytes the datasets of an HDF5 file declare (their products of dimensions times the type's
// size, each at least 4 bytes an element: ternion holds values as float or wider).
double declared_bytes(const std::string& h5_path);

// Default worker count: every core of the machine.
int default_threads();

// Formats a count with thousands separators.
std::string group_digits(std::uint64_t v);

// Median, minimum and maximum of timings (any unit; zeros when there are none).
struct Spread {
    double median = 0, min = 0, max = 0;
};
Spread spread(std::vector<double> v);

}  // namespace ternion::cli
