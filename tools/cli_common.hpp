// Pieces shared by the CLI subcommands: model-loading options, option parsing helpers.
#pragma once
#include <boost/program_options.hpp>
#include <memory>
#include <string>
#include <vector>

#include "models/inputs.hpp"
#include "models/nir_loader.hpp"
#include "tools/commands.hpp"

namespace ternion::cli {

namespace po = boost::program_options;

// --dt, --discretization, --reset, --from, --allow-unstable
void add_model_options(po::options_description& d);
UserLoadOptions model_options(const po::variables_map& vm);

// --layout (samples-first | time-first) of spike inputs
void add_input_options(po::options_description& d);
Layout input_layout(const po::variables_map& vm);

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
