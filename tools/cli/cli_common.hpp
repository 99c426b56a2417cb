// Pieces shared by the CLI subcommands: model-loading options, option parsing helpers.
#pragma once
#include <boost/program_options.hpp>
#include <memory>
#include <string>
#include <vector>

#include "models/inputs/inputs.hpp"
#include "models/nir_loader.hpp"
#include "sim/core/format.hpp"
#include "sim/io/file_guard.hpp"
#include "tools/cli/commands.hpp"

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
// The same before parsing, for verbs whose required options would fail the parse: true (and
// `desc` printed) when `args` hold --help or -h.
bool help_asked(const Args& args, const po::options_description& desc);

// A byte count such as 1048576, 512M, 8G or 1.5GiB (K, M, G, T are powers of 1024); throws
// OptionError(option) on anything else, a negative value included.
std::uint64_t parse_bytes(const std::string& option, const std::string& text);

// --max-memory if given, else default_memory_limit().
std::uint64_t memory_limit(const po::variables_map& vm);

// Refuses (OptionError on --max-memory) an estimate of `estimate` bytes above memory_limit(vm),
// naming what needs it ("the run", "loading the model").
void check_memory(const po::variables_map& vm, double estimate, const std::string& what);

// Default worker count: every core of the machine.
int default_threads();

}  // namespace ternion::cli
