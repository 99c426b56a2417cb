#include "sim/core/node_spec.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ternion {

MapParams& MapParams::set(const std::string& param, std::vector<double> values, Shape dims) {
    values_[param] = Value{std::move(values), std::move(dims), std::nullopt};
    return *this;
}
MapParams& MapParams::set(const std::string& param, std::string text) {
    values_[param] = Value{{}, {}, std::move(text)};
    return *this;
}
std::vector<std::string> MapParams::names() const {
    std::vector<std::string> r;
    for (const auto& kv : values_) r.push_back(kv.first);
    return r;
}
const MapParams::Value& MapParams::at(const std::string& param) const {
    auto it = values_.find(param);
    // NodeSpec asks has() first; reaching this is a caller's bug, still named.
    if (it == values_.end()) throw InputError(label_, param, "missing parameter");
    return it->second;
}
bool MapParams::is_string(const std::string& param) const {
    return at(param).text.has_value();
}
Shape MapParams::dims(const std::string& param) const {
    return at(param).dims;
}
std::vector<double> MapParams::doubles(const std::string& param, Shape* dims) const {
    const Value& v = at(param);
    if (v.text) throw InputError(label_, param, "expected a numeric dataset");
    if (declared_numel(v.dims) != static_cast<std::int64_t>(v.numbers.size()))
        throw InputError(label_, param,
                         "shape " + shape_str(v.dims) + " does not match " +
                             std::to_string(v.numbers.size()) + " values");
    if (dims) *dims = v.dims;
    return v.numbers;
}
std::string MapParams::string(const std::string& param) const {
    const Value& v = at(param);
    if (!v.text) throw InputError(label_, param, "expected a string dataset");
    return *v.text;
}

std::vector<std::string> NodeSpec::unknown() const {
    std::vector<std::string> r;
    for (const auto& name : src_->names()) {
        if (name == "type" || name == "input_type" || name == "output_type" || name == "metadata")
            continue;
        // A group ("blocks") is known when a name inside it was asked for ("blocks/0/W_Q").
        const auto it = consulted_->lower_bound(name);
        const bool known =
            it != consulted_->end() && (*it == name || it->rfind(name + "/", 0) == 0);
        if (!known) r.push_back(name);
    }
    return r;
}

Shape NodeSpec::dims(const std::string& param) const {
    if (!has(param)) fail(param, "missing parameter");
    return src_->dims(param);
}

std::vector<double> NodeSpec::doubles(const std::string& param, Shape* dims) const {
    if (!has(param)) fail(param, "missing parameter");
    // Checked here rather than by each source so that every source words it the same way.
    if (src_->is_string(param)) fail(param, "expected a numeric dataset");
    auto v = src_->doubles(param, dims);
    // Every parameter ends up a float32 or an integer: a value beyond float range would become
    // infinity on the way.
    for (double x : v) {
        if (!std::isfinite(x)) fail(param, "contains NaN or Inf");
        if (std::fabs(x) > std::numeric_limits<float>::max())
            fail(param, "value " + std::to_string(x) + " out of float32 range");
    }
    return v;
}

std::vector<float> NodeSpec::floats(const std::string& param, Shape* dims) const {
    auto d = doubles(param, dims);
    std::vector<float> f(d.size());
    for (std::size_t i = 0; i < d.size(); ++i) {
        if (std::fabs(d[i]) > 3.0e38) fail(param, "value out of float range");
        f[i] = static_cast<float>(d[i]);
    }
    return f;
}

std::vector<std::int64_t> NodeSpec::ints(const std::string& param, Shape* dims) const {
    auto d = doubles(param, dims);
    std::vector<std::int64_t> r(d.size());
    for (std::size_t i = 0; i < d.size(); ++i) {
        if (d[i] != std::floor(d[i]) || std::fabs(d[i]) > 1e15)
            fail(param, "expected integer values");
        r[i] = static_cast<std::int64_t>(d[i]);
    }
    return r;
}

double NodeSpec::scalar(const std::string& param) const {
    Shape dims;
    auto v = doubles(param, &dims);
    if (v.size() != 1) fail(param, "expected a scalar, got shape " + shape_str(dims));
    return v[0];
}

double NodeSpec::scalar_or(const std::string& param, double dflt) const {
    return has(param) ? scalar(param) : dflt;
}

std::int64_t NodeSpec::integer(const std::string& param) const {
    const double v = scalar(param);
    if (v != std::floor(v) || std::fabs(v) > 1e15)
        fail(param, "expected an integer, got " + std::to_string(v));
    return static_cast<std::int64_t>(v);
}

std::int64_t NodeSpec::integer_or(const std::string& param, std::int64_t dflt) const {
    return has(param) ? integer(param) : dflt;
}

std::string NodeSpec::string(const std::string& param) const {
    if (!has(param)) fail(param, "missing parameter");
    if (!src_->is_string(param)) fail(param, "expected a string");
    return src_->string(param);
}

std::optional<std::string> NodeSpec::string_opt(const std::string& param) const {
    if (!has(param)) return std::nullopt;
    if (!src_->is_string(param)) return std::nullopt;
    return src_->string(param);
}

std::vector<float> NodeSpec::per_neuron(const std::string& param, std::int64_t n) const {
    if (!has(param)) fail(param, "missing parameter");
    // The declared size is checked before reading: a small file may declare a huge array.
    Shape dims = src_->dims(param);
    const std::int64_t declared = declared_numel(dims);
    if (declared != 1 && declared != n)
        fail(param, "declares shape " + shape_str(dims) + ", expected 1 or " + std::to_string(n) +
                        " values");
    auto v = floats(param, &dims);
    if (v.size() == 1) return std::vector<float>(static_cast<std::size_t>(n), v[0]);
    if (static_cast<std::int64_t>(v.size()) != n)
        fail(param, "has " + std::to_string(v.size()) + " values (shape " + shape_str(dims) +
                        "), expected 1 or " + std::to_string(n));
    return v;
}

std::vector<float> NodeSpec::per_neuron_or(const std::string& param, std::int64_t n,
                                           float dflt) const {
    if (!has(param)) return std::vector<float>(static_cast<std::size_t>(n), dflt);
    return per_neuron(param, n);
}

std::vector<double> example_values(std::int64_t n, std::uint64_t seed) {
    std::vector<double> v(static_cast<std::size_t>(n));
    std::uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 1;
    for (auto& e : v) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;    // LCG: portable, fixed
        const double u = static_cast<double>(x >> 11) * 0x1.0p-53;  // [0, 1)
        e = (u < 0.5 ? -1.0 : 1.0) * (0.1 + 0.9 * std::fmod(2.0 * u, 1.0));
    }
    return v;
}

void NodeFactory::add(const std::string& type, NodeBuilder b, std::string description,
                      ExampleMaker example) {
    builders_[type] = {std::move(b), std::move(description), std::move(example)};
}

namespace {

// Edit distance with transpositions (optimal string alignment): "tua" is 1 from "tau".
std::size_t edit_distance(const std::string& a, const std::string& b) {
    const std::size_t n = a.size(), m = b.size();
    std::vector<std::vector<std::size_t>> d(n + 1, std::vector<std::size_t>(m + 1));
    for (std::size_t i = 0; i <= n; ++i) d[i][0] = i;
    for (std::size_t j = 0; j <= m; ++j) d[0][j] = j;
    for (std::size_t i = 1; i <= n; ++i)
        for (std::size_t j = 1; j <= m; ++j) {
            const std::size_t sub = d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, sub});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
    return d[n][m];
}

// The candidate nearest to `name` when it is near enough to be a typo of it, else "".
std::string nearest(const std::string& name, const auto& candidates) {
    std::string best;
    std::size_t best_d = std::max<std::size_t>(1, name.size() / 4) + 1;
    for (const std::string& c : candidates) {
        const std::size_t d = edit_distance(name, c);
        if (d < best_d) best_d = d, best = c;
    }
    return best;
}

}  // namespace

std::unique_ptr<Node> NodeFactory::build(const NodeSpec& spec) const {
    // Names become HDF5 paths in traces (/nodes/<name>): a '/' would nest them, and "", "."
    // and ".." name no group of their own.
    const std::string& n = spec.name();
    if (n.empty() || n == "." || n == ".." || n.find('/') != std::string::npos ||
        n.find('\0') != std::string::npos)
        spec.fail("", "is not a usable node name (empty, \".\", \"..\" or holding '/')");
    auto it = builders_.find(spec.type());
    if (it == builders_.end())
        spec.fail("type", "unknown node type '" + spec.type() +
                              "' (see `ternion info --types` for the supported ones)");
    std::unique_ptr<Node> node;
    try {
        node = it->second.build(spec);
    } catch (const InputError& e) {
        // A required name missing beside a near one the file holds: name the typo.
        const auto slash = e.field().rfind('/');
        const std::string param = slash == std::string::npos ? "" : e.field().substr(slash + 1);
        const std::string near =
            e.detail() == "missing parameter" ? nearest(param, spec.unknown()) : "";
        if (near.empty()) throw;
        throw InputError(e.file(), e.field(),
                         "missing parameter (the node has '" + near + "': misspelt?)");
    }
    // Unknown names are errors, not ignored: a misspelt optional parameter would otherwise
    // silently fall back to its default.
    if (const auto unknown = spec.unknown();
        !unknown.empty() && !spec.options().ignore_unknown_params) {
        const std::string near = nearest(unknown.front(), spec.known());
        spec.fail(unknown.front(),
                  "is not a parameter of " + spec.type() +
                      (near.empty() ? ", misspelt?" : ": did you mean '" + near + "'?") +
                      " (`ternion info --types` lists the types, docs/model-format.md their "
                      "parameters; --ignore-unknown-params accepts extra fields)");
    }
    node->set_origin(spec.origin());
    return node;
}

std::vector<std::string> ignored_params(const NodeSpec& spec) {
    std::vector<std::string> r;
    if (spec.options().ignore_unknown_params)
        for (const auto& u : spec.unknown()) r.push_back("nodes/" + spec.name() + "/" + u);
    return r;
}

std::vector<std::pair<std::string, std::string>> NodeFactory::types() const {
    std::vector<std::pair<std::string, std::string>> r;
    for (auto& [k, v] : builders_) r.emplace_back(k, v.description);
    return r;
}

std::optional<NodeExample> NodeFactory::example(const std::string& type) const {
    auto it = builders_.find(type);
    if (it == builders_.end() || !it->second.example) return std::nullopt;
    NodeExample ex = it->second.example();
    ex.params.set_label("<example " + type + ">");
    return ex;
}

}  // namespace ternion
