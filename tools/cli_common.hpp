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
