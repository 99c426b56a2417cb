// Input options: encodings, layouts, the steps a run takes, how the run header names an input.
#include <algorithm>

#include "models/inputs/inputs.hpp"
#include "models/inputs/sources.hpp"

namespace ternion {

Encoding parse_encoding(const std::string& s) {
    if (s == "direct") return Encoding::direct;
    if (s == "poisson") return Encoding::poisson;
    if (s == "latency") return Encoding::latency;
    throw OptionError("encoding", "must be direct, poisson or latency (got '" + s + "')");
}

const char* encoding_name(Encoding e) {
    switch (e) {
        case Encoding::direct:
            return "direct";
        case Encoding::poisson:
            return "poisson";
        case Encoding::latency:
            return "latency";
    }
    return "?";
}

EncodingChoice parse_encodings(const std::vector<std::string>& values) {
    EncodingChoice c;
    for (const auto& v : values) {
        const auto eq = v.rfind('=');  // kinds have none; a node name might
        if (eq == std::string::npos) {
            if (c.all) throw OptionError("encoding", "given twice without a node ('" + v + "')");
            c.all = parse_encoding(v);
            continue;
        }
        const std::string node = v.substr(0, eq);
        if (node.empty()) throw OptionError("encoding", "'" + v + "' names no Input node");
        for (const auto& [n, e] : c.nodes)
            if (n == node) throw OptionError("encoding", "Input node '" + node + "' given twice");
        c.nodes.emplace_back(node, parse_encoding(v.substr(eq + 1)));
    }
    return c;
}

std::string joined(const std::vector<std::string>& names) {
    std::string r;
    for (const auto& n : names) r += (r.empty() ? "" : ", ") + n;
    return r;
}

void check_encoding_nodes(const NodeEncodings& e, const std::vector<std::string>& inputs) {
    for (const auto& [node, enc] : e)
        if (std::find(inputs.begin(), inputs.end(), node) == inputs.end())
            throw OptionError("encoding", "'" + node + "' is not an Input node (Input nodes: " +
                                              joined(inputs) + ")");
}

InputOptions for_node(const InputOptions& o, const std::string& node) {
    InputOptions r = o;
    for (const auto& [n, e] : o.node_encodings)
        if (n == node) r.encoding = e;
    return r;
}

Layout parse_layout(const std::string& s) {
    if (s == "samples-first" || s == "ST" || s == "st") return Layout::samples_first;
    if (s == "time-first" || s == "TS" || s == "ts") return Layout::time_first;
    throw OptionError("layout", "must be samples-first (ST) or time-first (TS), got '" + s + "'");
}

std::string input_label(const InputSource& src) {
    const auto* f = dynamic_cast<const FileSource*>(&src);
    return f ? f->label() : "direct encoding";
}

std::string input_encoding(const InputSource& src) {
    const auto* f = dynamic_cast<const FileSource*>(&src);
    return f ? f->encoding_word() : "direct";
}

namespace {

// The spike sources' fewest steps (0: none), refused when they differ and no --timesteps
// chooses the steps every one of them holds.
std::int64_t fewest_fixed_steps(const std::vector<const InputSource*>& srcs, bool chosen,
                                const std::string& input, std::string& holder) {
    std::int64_t fixed = 0;
    const InputSource* fewest = nullptr;
    for (const auto* s : srcs) {
        const std::int64_t t = s->fixed_timesteps();
        if (t <= 0) continue;
        if (fewest && t != fixed && !chosen)
            throw InputError(input, s->dataset(),
                             "holds " + std::to_string(t) + " steps, " + fewest->dataset() +
                                 " holds " + std::to_string(fixed) +
                                 ": pass --timesteps (at most the fewer) to run the first steps "
                                 "of both");
        if (!fewest || t < fixed) {
            fixed = t;
            fewest = s;
        }
    }
    holder = srcs.size() > 1 && fewest ? input + ": " + fewest->dataset() : input;
    return fixed;
}

}  // namespace

std::int64_t resolve_timesteps(const std::vector<const InputSource*>& srcs,
                               std::optional<std::int64_t> option, std::int64_t model_T,
                               const std::string& input, std::vector<std::string>& notes) {
    std::string of;  // what holds the steps: the file, or the file and dataset
    const std::int64_t fixed = fewest_fixed_steps(srcs, option.has_value(), input, of);
    if (fixed > 0) {
        if (!option) {
            if (model_T > 0 && model_T != fixed)
                notes.push_back("the spike input has " + std::to_string(fixed) +
                                " steps and runs all of them (the model's metadata/timesteps " +
                                "is " + std::to_string(model_T) + "; --timesteps shortens)");
            return fixed;
        }
        if (*option > fixed)
            throw OptionError("timesteps", std::to_string(*option) + " is more than the " +
                                               std::to_string(fixed) + " steps of " + of);
        if (*option < fixed)
            notes.push_back("warning: --timesteps " + std::to_string(*option) +
                            " runs only the first " + std::to_string(*option) + " of the " +
                            std::to_string(fixed) + " steps of " + of);
        return *option;
    }
    if (option) return *option;
    if (model_T > 0) return model_T;
    throw OptionError("timesteps", "is required for analog input " + input);
}

}  // namespace ternion
