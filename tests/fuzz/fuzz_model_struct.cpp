// libFuzzer harness: structure-aware fuzzing of the NIR model loader. The fuzzer's bytes do not
// become the file: they steer edits of a valid model (one of three templates: LIF, Conv2d + IF
// + pool, spiking self-attention). Each edit changes one parameter's values (NaN, Inf, 0, -1,
// 1e30, float32 overflow as float64), shape (rank, sizes, zero or large dimensions), type
// (int, float, double, int8, string) or removes it, adds a node of any known type, adds or
// breaks edges, or sets metadata. The file written is always valid HDF5, so the loader's
// semantic checks are exercised rather than libhdf5's parsing (fuzz_model covers that).
#include <fuzzer/FuzzedDataProvider.h>

#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "models/nir_loader.hpp"
#include "sim/io/h5io.hpp"
#include "tests/fuzz/fuzz_file.hpp"

namespace {

using ternion::Shape;

struct Param {
    Shape dims;  // empty: a scalar
    std::vector<double> v;
    int type = 0;  // 0 float32, 1 float64, 2 int64, 3 int8, 4 string
};
struct Node {
    std::string type;
    std::map<std::string, Param> params;
};
struct Model {
    std::map<std::string, Node> nodes;
    std::vector<std::pair<std::string, std::string>> edges;
    std::map<std::string, double> meta;
};

Param fill(Shape dims, double v, int type = 0) {
    Param p{std::move(dims), {}, type};
    p.v.assign(static_cast<std::size_t>(ternion::numel(p.dims)), v);
    return p;
}

Model lif_template() {
    Model m;
    m.nodes["input"] = {"Input", {{"shape", fill({1}, 3, 2)}}};
    m.nodes["fc"] = {"Linear", {{"weight", fill({4, 3}, 1)}}};
    m.nodes["lif"] = {"LIF",
                      {{"tau", fill({4}, 2e-3)},
                       {"r", fill({4}, 1)},
                       {"v_leak", fill({4}, 0)},
                       {"v_threshold", fill({4}, 1)}}};
    m.nodes["output"] = {"Output", {{"shape", fill({1}, 4, 2)}}};
    m.edges = {{"input", "fc"}, {"fc", "lif"}, {"lif", "output"}};
    return m;
}

Model conv_template() {
    Model m;
    Param shape = fill({3}, 4, 2);
    shape.v[0] = 1;
    m.nodes["input"] = {"Input", {{"shape", shape}}};
    m.nodes["conv"] = {"Conv2d",
                       {{"weight", fill({2, 1, 3, 3}, 1)},
                        {"stride", fill({2}, 1, 2)},
                        {"padding", fill({2}, 1, 2)},
                        {"groups", fill({}, 1, 2)}}};
    m.nodes["if"] = {"IF", {{"r", fill({}, 1)}, {"v_threshold", fill({}, 1)}}};
    m.nodes["pool"] = {"MaxPool2d", {{"kernel_size", fill({2}, 2, 2)}}};
    m.nodes["flat"] = {"Flatten", {}};
    m.nodes["output"] = {"Output", {}};
    m.edges = {
        {"input", "conv"}, {"conv", "if"}, {"if", "pool"}, {"pool", "flat"}, {"flat", "output"}};
    return m;
}

Model ssa_template() {
    Model m;
    Param shape = fill({2}, 8, 2);
    shape.v[0] = 2;
    m.nodes["input"] = {"Input", {{"shape", shape}}};
    m.nodes["attn"] = {"ternion.SSA",
                       {{"q_weight", fill({8, 8}, 1)},
                        {"k_weight", fill({8, 8}, 1)},
                        {"v_weight", fill({8, 8}, 1)},
                        {"heads", fill({}, 2, 2)}}};
    m.nodes["mean"] = {"ternion.TokenMean", {}};
    m.nodes["output"] = {"Output", {}};
    m.edges = {{"input", "attn"}, {"attn", "mean"}, {"mean", "output"}};
    return m;
}

// Parameter names any node type reads (a new one is as likely to be ignored as used).
const std::vector<std::string> kNames = {
    "weight",      "bias",        "tau",         "r",        "v_leak",   "v_threshold",
    "v_reset",     "shape",       "stride",      "padding",  "dilation", "groups",
    "kernel_size", "q_weight",    "k_weight",    "v_weight", "o_weight", "heads",
    "scale",       "threshold",   "decay_input", "tau_syn",  "tau_mem",  "w_in",
    "input_type",  "output_type", "start_dim",   "end_dim",  "alpha",    "beta"};

double special(FuzzedDataProvider& f) {
    static const double v[] = {0,
                               -1,
                               1,
                               0.5,
                               2,
                               1e30,
                               1e300,
                               -1e300,
                               3e38,
                               1e-45,
                               std::numeric_limits<double>::quiet_NaN(),
                               std::numeric_limits<double>::infinity(),
                               2147483648.0,
                               9.3e18,
                               1.5,
                               1000001};
    return f.ConsumeBool() ? f.PickValueInArray(v) : f.ConsumeFloatingPoint<double>();
}

void edit_param(FuzzedDataProvider& f, Param& p) {
    switch (f.ConsumeIntegralInRange(0, 5)) {
        case 0:  // one value, or all
            if (p.v.empty()) break;
            if (f.ConsumeBool())
                p.v[f.ConsumeIntegralInRange<std::size_t>(0, p.v.size() - 1)] = special(f);
            else
                p.v.assign(p.v.size(), special(f));
            break;
        case 1: {  // the shape, values kept where they fit
            Shape d(f.ConsumeIntegralInRange<std::size_t>(0, 4));
            for (auto& x : d)
                x = f.ConsumeBool() ? f.ConsumeIntegralInRange(0, 9)
                                    : f.PickValueInArray({0, 1, 64, 1000});
            if (ternion::numel(d) > 100000) break;
            p.v.resize(static_cast<std::size_t>(ternion::numel(d)), p.v.empty() ? 1.0 : p.v[0]);
            p.dims = d;
            break;
        }
        case 2:
            p.type = f.ConsumeIntegralInRange(0, 4);
            break;
        default:
            break;
    }
}

void edit(FuzzedDataProvider& f, Model& m) {
    std::vector<std::string> names;
    for (auto& [k, v] : m.nodes) names.push_back(k);
    const std::string node = names[f.ConsumeIntegralInRange<std::size_t>(0, names.size() - 1)];
    Node& n = m.nodes[node];
    switch (f.ConsumeIntegralInRange(0, 7)) {
        case 0:
        case 1:
        case 2: {  // an existing parameter, or a new one
            const std::string& p =
                n.params.empty() || f.ConsumeBool()
                    ? kNames[f.ConsumeIntegralInRange<std::size_t>(0, kNames.size() - 1)]
                    : std::next(n.params.begin(), f.ConsumeIntegralInRange<long>(
                                                      0, static_cast<long>(n.params.size()) - 1))
                          ->first;
            if (!n.params.count(p)) n.params[p] = fill({1}, 1);
            edit_param(f, n.params[p]);
            break;
        }
        case 3:
            if (!n.params.empty()) n.params.erase(n.params.begin());
            break;
        case 4: {  // any known node type, here or as a new node
            const auto types = ternion::default_factory().types();
            const std::string t =
                types[f.ConsumeIntegralInRange<std::size_t>(0, types.size() - 1)].first;
            if (f.ConsumeBool())
                n.type = t;
            else
                m.nodes["extra" + std::to_string(m.nodes.size())] = {t, {}};
            break;
        }
        case 5:
            m.edges.emplace_back(names[f.ConsumeIntegralInRange<std::size_t>(0, names.size() - 1)],
                                 f.ConsumeBool() ? node : f.ConsumeRandomLengthString(8));
            break;
        case 6:
            if (!m.edges.empty())
                m.edges.erase(m.edges.begin() + f.ConsumeIntegralInRange<long>(
                                                    0, static_cast<long>(m.edges.size()) - 1));
            break;
        default:
            m.meta[f.PickValueInArray({"timesteps", "dt"})] = special(f);
            break;
    }
}

void write_param(ternion::h5::Writer& w, const std::string& ds, const Param& p) {
    switch (p.type) {
        case 0:
            w.write(ds, std::vector<float>(p.v.begin(), p.v.end()), p.dims, false);
            break;
        case 1:
            w.write(ds, p.v, p.dims, false);
            break;
        case 2: {
            std::vector<std::int64_t> v;
            for (double x : p.v)
                v.push_back(std::isfinite(x) && std::fabs(x) < 9e18 ? static_cast<std::int64_t>(x)
                                                                    : -1);
            w.write(ds, v, p.dims, false);
            break;
        }
        case 3: {
            std::vector<std::int8_t> v;
            for (double x : p.v)
                v.push_back(std::isfinite(x) && std::fabs(x) < 127 ? static_cast<std::int8_t>(x)
                                                                   : -1);
            w.write(ds, v, p.dims, false);
            break;
        }
        default:
            w.write_string(ds, p.v.empty() ? "" : std::to_string(p.v[0]));
            break;
    }
}

void write_model(const std::string& path, const Model& m) {
    ternion::h5::Writer w(path);
    w.write_string("/version", "1.0.0");
    w.write_string("/node/type", "NIRGraph");
    for (const auto& [name, n] : m.nodes) {
        const std::string g = "/node/nodes/" + name;
        w.group(g);
        w.write_string(g + "/type", n.type);
        for (const auto& [k, p] : n.params) write_param(w, g + "/" + k, p);
    }
    std::vector<std::string> e;
    for (const auto& [a, b] : m.edges) {
        e.push_back(a);
        e.push_back(b);
    }
    w.write_strings("/node/edges", e, {static_cast<std::int64_t>(m.edges.size()), 2});
    for (const auto& [k, v] : m.meta)
        w.write("/node/metadata/" + k, std::vector<double>{v}, {}, false);
    w.close();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    FuzzedDataProvider f(data, size);
    const int pick = f.ConsumeIntegralInRange(0, 2);
    Model m = pick == 0 ? lif_template() : pick == 1 ? conv_template() : ssa_template();
    const int edits = f.ConsumeIntegralInRange(0, 6);
    for (int i = 0; i < edits && f.remaining_bytes() > 0; ++i) edit(f, m);
    const std::string p = ternion::fuzz::as_file(nullptr, 0, ".h5");
    ternion::fuzz::expect_clean([&] { write_model(p, m); });
    ternion::fuzz::expect_clean([&] {
        ternion::LoadReport rep;
        ternion::load_model(p, {}, rep);
    });
    ternion::fuzz::expect_no_open_hdf5_objects();
    return 0;
}
