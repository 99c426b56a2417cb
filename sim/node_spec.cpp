#include "node_spec.hpp"

#include <cmath>
#include <limits>

namespace ternion {

bool NodeSpec::has(const std::string& param) const {
    return file_.exists(group_ + "/" + param);
}

std::vector<double> NodeSpec::doubles(const std::string& param, Shape* dims) const {
    if (!has(param)) fail(param, "missing parameter");
    h5::DatasetInfo inf;
    auto v = file_.read_doubles(group_ + "/" + param, &inf);  // names file and path on error
    // Every parameter ends up a float32 or an integer: a value beyond float range would become
    // infinity on the way.
    for (double x : v) {
        if (!std::isfinite(x)) fail(param, "contains NaN or Inf");
        if (std::fabs(x) > std::numeric_limits<float>::max())
            fail(param, "value " + std::to_string(x) + " out of float32 range");
    }
    if (dims) *dims = inf.dims;
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
    auto inf = file_.info(group_ + "/" + param);
    if (inf.kind != h5::Kind::string) fail(param, "expected a string");
    return file_.read_string(group_ + "/" + param);
}

std::optional<std::string> NodeSpec::string_opt(const std::string& param) const {
    if (!has(param)) return std::nullopt;
    auto inf = file_.info(group_ + "/" + param);
    if (inf.kind != h5::Kind::string) return std::nullopt;
    return file_.read_string(group_ + "/" + param);
}

std::vector<float> NodeSpec::per_neuron(const std::string& param, std::int64_t n) const {
    if (!has(param)) fail(param, "missing parameter");
    // The declared size is checked before reading: a small file may declare a huge array.
    Shape dims = file_.info(group_ + "/" + param).dims;
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

void NodeFactory::add(const std::string& type, NodeBuilder b, std::string description) {
    builders_[type] = {std::move(b), std::move(description)};
}

std::unique_ptr<Node> NodeFactory::build(const NodeSpec& spec) const {
    auto it = builders_.find(spec.type());
    if (it == builders_.end())
        spec.fail("type", "unknown node type '" + spec.type() +
                              "' (see `ternion info --types` for the supported ones)");
    auto node = it->second.first(spec);
    node->set_origin(spec.file().path());
    return node;
}

std::vector<std::pair<std::string, std::string>> NodeFactory::types() const {
    std::vector<std::pair<std::string, std::string>> r;
    for (auto& [k, v] : builders_) r.emplace_back(k, v.second);
    return r;
}

}  // namespace ternion
