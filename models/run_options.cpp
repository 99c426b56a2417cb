#include "models/run_options.hpp"

#include <charconv>
#include <cmath>
#include <thread>

#include "sim/core/error.hpp"

namespace ternion {

namespace {

using T = OptionType;

// A bound as text; +-9.2e18 stands for the int64 limits.
std::string numeral(double v) {
    if (v >= 9.2e18) return "9223372036854775807";
    if (v <= -9.2e18) return "-9223372036854775808";
    char b[32];
    std::snprintf(b, sizeof b, "%.17g", v);
    return b;
}

// "--name": what a value is checked against, by type.
std::uint64_t option_unsigned(const std::string& option, const std::string& text) {
    const std::string range = "must be between 0 and 18446744073709551615, got " + text;
    const bool negative = !text.empty() && text[0] == '-';
    std::uint64_t v = 0;
    const char* first = text.data() + (negative ? 1 : 0);
    const auto [end, ec] = std::from_chars(first, text.data() + text.size(), v);
    if (ec == std::errc() && end == text.data() + text.size() && end != first) {
        if (negative && v != 0) throw OptionError(option, range);
        return v;
    }
    if (ec == std::errc::result_out_of_range) throw OptionError(option, range);
    throw OptionError(option, "must be an integer, got '" + text + "'");
}

double option_real(const OptionSpec& o, const std::string& text) {
    std::size_t used = 0;
    double v = 0;
    try {
        v = std::stod(text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used == 0 || used != text.size())
        throw OptionError(o.cli, "must be a number, got '" + text + "'");
    if (!(v > o.min) || v > o.max)
        throw OptionError(o.cli, "must be positive and sensible (got " + text + ")");
    return v;
}

const OptionSpec& spec(const std::vector<OptionSpec>& table, const char* cli) {
    for (const auto& o : table)
        if (std::string(o.cli) == cli) return o;
    throw InternalError(std::string("no option --") + cli);
}

// A text option: the value given, else its default.
std::string word(const OptionValues& v, const OptionSpec& o) {
    return v.given(o) ? v.text(o) : std::string(o.fallback);
}

std::int64_t integer(const OptionValues& v, const OptionSpec& o) {
    return option_integer(o.cli, word(v, o), o.min, o.max);
}

std::string joined_items(const std::vector<std::string>& items) {
    std::string r;
    for (const auto& s : items) {
        if (!r.empty()) r += ",";
        r += s;
    }
    return r;
}

}  // namespace

std::int64_t option_integer(const std::string& option, const std::string& text, double min,
                            double max) {
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec == std::errc::result_out_of_range)
        throw OptionError(
            option, "must be between " + numeral(min) + " and " + numeral(max) + ", got " + text);
    if (ec != std::errc() || end != text.data() + text.size() || text.empty())
        throw OptionError(option, "must be an integer, got '" + text + "'");
    if (static_cast<double>(v) < min || static_cast<double>(v) > max)
        throw OptionError(
            option, "must be between " + numeral(min) + " and " + numeral(max) + ", got " + text);
    return v;
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

int all_cores() {
    const unsigned n = std::thread::hardware_concurrency();
    return n == 0 ? 1 : static_cast<int>(n);
}

const std::vector<OptionSpec>& load_option_specs() {
    static const std::vector<OptionSpec> t{
        {"dt", "dt", T::real, "",
         "seconds per step for NIR's continuous neurons (default: file metadata, else 0.001)", 0,
         1e3},
        {"discretization", "discretization", T::text, "",
         "euler | exact (default: file metadata, else euler)"},
        {"reset", "reset", T::text, "",
         "zero | subtract: reset of NIR neurons after a spike (default zero)"},
        {"from", "from_", T::text, "",
         "nir | snntorch | norse | sinabs | spikingjelly: the framework that wrote the file; sets "
         "its conventions (default: file metadata/from, else nir)"},
        {"allow-unstable", "allow_unstable", T::flag, "",
         "accept an Euler decay factor 1 - dt/tau outside [0, 1)"},
        {"ignore-unknown-params", "ignore_unknown", T::flag, "",
         "accept parameter names no node type reads (extra fields of another tool); they are "
         "listed in the report's notes (default: refused as typos)"},
        {"no-weight-codebook", "no_weight_codebook", T::flag, "",
         "store every sparse weight as a float (no shared-value codebook)"},
    };
    return t;
}

UserLoadOptions read_load_options(const OptionValues& v) {
    const auto& t = load_option_specs();
    UserLoadOptions o;
    if (const auto& s = spec(t, "dt"); v.given(s)) o.dt = option_real(s, v.text(s));
    if (const auto& s = spec(t, "discretization"); v.given(s)) o.discretization = v.text(s);
    if (const auto& s = spec(t, "reset"); v.given(s)) o.reset = v.text(s);
    if (const auto& s = spec(t, "from"); v.given(s)) {
        o.from = v.text(s);
        find_dialect(*o.from);  // refuses an unknown name before any file is read
    }
    o.allow_unstable = v.given(spec(t, "allow-unstable"));
    o.ignore_unknown = v.given(spec(t, "ignore-unknown-params"));
    o.weight_codebook = !v.given(spec(t, "no-weight-codebook"));
    return o;
}

const std::vector<OptionSpec>& run_option_specs() {
    static const std::vector<OptionSpec> t{
        {"timesteps", "timesteps", T::integer, "",
         "steps per sample (default: the spike file's T or the model's metadata)", 1, 1e6, false,
         'T'},
        {"engine", "engine", T::text, "event", "event | dense"},
        {"threads", "threads", T::integer, "", "worker threads (default: every hardware thread)", 1,
         1024},
        {"encoding", "encoding", T::list, "",
         "direct | poisson | latency, for analog inputs (default: model metadata, else "
         "direct); NODE=KIND for one Input node (repeatable)",
         0, 0, true},
        {"layout", "layout", T::text, "",
         "axis order of a spike input: samples-first (ST, [samples, T, ...], the default) or "
         "time-first (TS, [T, samples, ...] as snnTorch, SpikingJelly and Norse produce)"},
        {"seed", "seed", T::text, "0", "seed of the encoders' random numbers"},
        {"first", "first", T::integer, "0", "index of the first sample", 0, 9.2e18},
        {"samples", "samples", T::integer, "", "run only this many samples", -9.2e18, 9.2e18},
        {"profile", "profile", T::text, hw::kDefaultProfile,
         "hardware profile: a name (`ternion profiles`) or a JSON file"},
        {"count", "count", T::text, "exact",
         "counting convention: exact | neurobench | paper | syops"},
        {"paper-encoding-once", "paper_encoding_once", T::flag, "",
         "paper mode: bill the encoding layer's MACs once, not every step"},
        {"arith", "arith", T::text, "float",
         "float, or fixed: run the integer model `ternion quantize` makes with --profile's "
         "number formats (docs/fixed-point.md)"},
        {"trace", "trace", T::text, "",
         "write recorded observables to this HDF5 file (NIRGraphData layout)"},
        {"record", "record", T::list, "spikes",
         "what to record, comma-separated: spikes, membrane, ops, energy, attention, all"},
        {"record-nodes", "record_nodes", T::list, "",
         "comma-separated node names to record (default: spiking nodes for spikes/membrane, "
         "every node for ops/energy, attention nodes for attention)"},
        {"record-samples", "record_samples", T::list, "",
         "global sample indices to record, e.g. 0,3,10-19 (default: every sample of the run)"},
        {"record-steps", "record_steps", T::list, "",
         "time steps whose attention maps are recorded, e.g. 0-3 (default: all)"},
        {"spike-format", "spike_format", T::text, "events",
         "spikes as events (NIR ValuedEventData, polarity in `value`) or grid (TimeGriddedData)"},
        {"max-trace-bytes", "max_record_bytes", T::integer, "2147483648",
         "refuse recordings and traces whose estimated size is above this (default 2 GiB)", 0,
         9.2e18},
        {"max-memory", "max_memory", T::bytes, "",
         "refuse a run whose estimated memory is above this many bytes, e.g. 8G (default: 80 % "
         "of physical memory)"},
        {"chip", "chip", T::text, "",
         "place the model on this chip (`ternion map --chips`, or a JSON file; refused before "
         "the run if it does not fit) and price the run's own spikes on it: cores, routing, "
         "latency, energy band (docs/chips.md)"},
        {"node-times", "node_times", T::flag, "",
         "measure where the simulation's time goes, node by node (thread seconds)"},
    };
    return t;
}

namespace {

// --trace and the --record family.
void read_recording(const OptionValues& v, RunRequest& q) {
    const auto& t = run_option_specs();
    const auto& rec = spec(t, "record");
    TraceOptions to;
    set_observables(to, v.given(rec) ? v.list(rec) : std::vector<std::string>{rec.fallback});
    set_spike_format(to, word(v, spec(t, "spike-format")));
    if (const auto& s = spec(t, "record-nodes"); v.given(s)) to.nodes = v.list(s);
    if (const auto& s = spec(t, "record-samples"); v.given(s))
        to.samples = parse_index_list(joined_items(v.list(s)), s.cli);
    if (const auto& s = spec(t, "record-steps"); v.given(s))
        to.steps = parse_index_list(joined_items(v.list(s)), s.cli);
    to.max_bytes = static_cast<std::uint64_t>(integer(v, spec(t, "max-trace-bytes")));
    const auto& trace = spec(t, "trace");
    if (v.given(trace)) q.trace_path = v.text(trace);
    if (v.given(trace) || v.given(rec)) q.record = to;
}

}  // namespace

void read_run_options(const OptionValues& v, RunRequest& q) {
    const auto& t = run_option_specs();
    if (const auto& s = spec(t, "timesteps"); v.given(s)) q.timesteps = integer(v, s);
    q.engine = parse_engine(word(v, spec(t, "engine")));
    const auto& th = spec(t, "threads");
    q.threads = v.given(th) ? static_cast<int>(integer(v, th)) : all_cores();
    if (const auto& s = spec(t, "encoding"); v.given(s)) q.set_encodings(v.list(s));
    if (const auto& s = spec(t, "layout"); v.given(s)) q.layout = parse_layout(v.text(s));
    q.seed = option_unsigned("seed", word(v, spec(t, "seed")));
    q.first_sample = integer(v, spec(t, "first"));
    // An explicit non-positive count is an error (later, naming --samples), not "all samples".
    if (const auto& s = spec(t, "samples"); v.given(s))
        q.samples = std::max<std::int64_t>(0, integer(v, s));
    q.profile = word(v, spec(t, "profile"));
    q.pricing.mode = hw::parse_count_mode(word(v, spec(t, "count")));
    q.pricing.encoding_mac_times_T = !v.given(spec(t, "paper-encoding-once"));
    const std::string a = word(v, spec(t, "arith"));
    if (a != "float" && a != "fixed")
        throw OptionError("arith", "must be \"float\" or \"fixed\", got \"" + a + "\"");
    q.fixed_point = a == "fixed";
    read_recording(v, q);
    if (const auto& s = spec(t, "max-memory"); v.given(s))
        q.max_memory = parse_bytes(s.cli, v.text(s));
    q.time_nodes = v.given(spec(t, "node-times"));
    if (const auto& s = spec(t, "chip"); v.given(s)) q.chip = v.text(s);
}

}  // namespace ternion
