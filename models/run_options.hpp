// The options of loading and running a model, defined once for every front end: each option's
// command-line name, Python keyword, what it takes, its default, its help and what it sets in
// UserLoadOptions or RunRequest. `ternion run` builds its option list from these tables and
// Python's `ternion.load`/`ternion.run` read their keywords through them, so both accept the
// same values, refuse the same ones with the same message ("option --threads: ...") and apply
// them alike. Options only one front end has (--json, --no-progress, --compare; Python's
// arrays) stay with that front end.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "models/pipeline.hpp"

namespace ternion {

enum class OptionType {
    text,     // one word
    integer,  // a whole number in [min, max]
    real,     // a finite number in (min, max]
    bytes,    // a byte count: 8G, 512M, 4096 (a Python int too)
    flag,     // present or not (Python: a bool)
    list,     // command line: comma-separated (or repeated, `repeatable`); Python: a list or str
};

struct OptionSpec;

// What a front end was given, option by option: the parsed command line or Python's keywords.
class OptionValues {
  public:
    virtual ~OptionValues() = default;
    // Whether the option was given (Python: not None; a flag: set; a list: not empty).
    virtual bool given(const OptionSpec& o) const = 0;
    // The value as text (numbers as the user wrote them); a list's items.
    virtual std::string text(const OptionSpec& o) const = 0;
    virtual std::vector<std::string> list(const OptionSpec& o) const = 0;
};

struct OptionSpec {
    const char* cli;     // "max-trace-bytes" (the name errors use)
    const char* python;  // "max_record_bytes"
    OptionType type;
    const char* fallback;  // the default as the command line would write it ("": none)
    const char* help;
    double min = 0, max = 0;  // integer and real bounds
    bool repeatable = false;  // a list given as repeated options (--encoding a --encoding b)
    char short_name = 0;      // the command line's one-letter form (-T)
};

// --dt, --discretization, --reset, --from, --allow-unstable, --ignore-unknown-params,
// --no-weight-codebook.
const std::vector<OptionSpec>& load_option_specs();
// Everything `ternion run` and `ternion.run` share: engine, threads, steps, encodings, samples,
// pricing, arithmetic, recording and limits.
const std::vector<OptionSpec>& run_option_specs();

UserLoadOptions read_load_options(const OptionValues& v);
// Sets the shared fields of `q` (not its model, input, progress or command line). Recording is
// requested by `trace` or an explicit `record`.
void read_run_options(const OptionValues& v, RunRequest& q);

// The checked readers the tables use, for options outside them.
std::int64_t option_integer(const std::string& option, const std::string& text, double min,
                            double max);
// "8G", "512M", "4096" (K, M, G, T are powers of 1024); OptionError(option) on anything else,
// a negative value included.
std::uint64_t parse_bytes(const std::string& option, const std::string& text);
// The machine's hardware threads (at least 1): the default of `threads`.
int all_cores();

}  // namespace ternion
