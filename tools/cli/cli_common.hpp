// Pieces shared by the CLI subcommands: the shared option tables as command-line options,
// option parsing helpers.
#pragma once
#include <boost/program_options.hpp>
#include <memory>
#include <string>
#include <vector>

#include "models/inputs/inputs.hpp"
#include "models/nir_loader.hpp"
#include "models/run_options.hpp"
#include "sim/core/format.hpp"
#include "sim/io/file_guard.hpp"
#include "tools/cli/commands.hpp"

namespace ternion::cli {

namespace po = boost::program_options;

// The options of a shared table (models/run_options.hpp) as command-line options, and the
// parsed command line as the values the table reads.
void add_options(po::options_description& d, const std::vector<OptionSpec>& specs);
class CommandLineValues final : public OptionValues {
  public:
    explicit CommandLineValues(const po::variables_map& vm) : vm_(vm) {}
    bool given(const OptionSpec& o) const override;
    std::string text(const OptionSpec& o) const override;
    std::vector<std::string> list(const OptionSpec& o) const override;

  private:
    const po::variables_map& vm_;
};

// --dt, --discretization, --reset, --from, --allow-unstable, ... (load_option_specs)
void add_model_options(po::options_description& d);
UserLoadOptions model_options(const po::variables_map& vm);

// Parses `args` against `desc` (+ positional names); throws OptionError on bad input.
po::variables_map parse(const Args& args, const po::options_description& desc,
                        const po::positional_options_description* pos = nullptr);

// Prints `desc` and returns true when --help was given (the caller then exits 0).
bool show_help(const po::variables_map& vm, const po::options_description& desc);
// The same before parsing, for verbs whose required options would fail the parse: true (and
// `desc` printed) when `args` hold --help or -h.
bool help_asked(const Args& args, const po::options_description& desc);

// --max-memory if given, else default_memory_limit().
std::uint64_t memory_limit(const po::variables_map& vm);

// Refuses (OptionError on --max-memory) an estimate of `estimate` bytes above memory_limit(vm),
// naming what needs it ("the run", "loading the model").
void check_memory(const po::variables_map& vm, double estimate, const std::string& what);

}  // namespace ternion::cli
