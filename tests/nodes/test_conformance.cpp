// Conformance harness (after ggml's test-backend-ops): every node type the factory knows is built
// from the example kept beside its registration, wired as Input -> node -> Output in memory, and
// run under every configuration that must not change its results. A type registered without an
// example fails here. Checks per type:
//   - event engine == dense engine, bit for bit (every output of every step, every counter);
//   - 1 thread == 3 threads with splitting forced, bit for bit (one load serves both: no
//     node's stored layout depends on the thread count);
//   - a sample run after another == the same sample run on fresh state;
//   - op counts == a recount from the captured inputs and outputs (see check_counts);
//   - every parameter dropped, set to NaN or (strings) set to nonsense is refused by an error
//     naming `nodes/<name>/<param>`, or the node builds (the parameter is optional);
//   - ANN kinds: the node's output == the kind's forward() called directly, and softmax
//     attention against a written-out double-precision reference within 1e-4.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "attention/ann/ann_attention.hpp"
#include "models/graph_builder.hpp"
#include "models/inputs/inputs.hpp"
#include "models/nir_loader.hpp"
#include "sim/core/engine.hpp"
#include "sim/core/error.hpp"
#include "sim/core/layer_record.hpp"
#include "tests/nodes/attention_recount.hpp"
#include "tests/support/run_model.hpp"

using namespace ternion;

namespace {

constexpr std::int64_t kSamples = 2, kSteps = 5;
const char* const kNode = "node";  // the node under test; its errors name nodes/node/<param>

struct Case {
    std::string type;
    NodeExample ex;
    int in = -1, node = -1, out = -1;  // node indices in the built graph
};

std::uint64_t mix(std::uint64_t x) {  // splitmix64: inputs that do not depend on the library
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}
double unit(std::uint64_t k) {  // [0, 1)
    return static_cast<double>(mix(k) >> 11) * 0x1.0p-53;
}

// Input node -> node -> Output node; the Input and Output types are themselves the first or last.
std::unique_ptr<Graph> build(const std::string& type, const ParamSource& p, const Shape& in,
                             LoadOptions lo = {}) {
    GraphBuilder b(lo);
    MapParams ip("<harness>"), op("<harness>");
    std::vector<double> dims(in.begin(), in.end());
    ip.set("shape", dims, {static_cast<std::int64_t>(dims.size())});
    if (type != "Input") b.node("in", "Input", ip);
    b.node(kNode, type, p);
    if (type != "Output") b.node("out", "Output", op);
    if (type != "Input") b.edge("in", kNode);
    if (type != "Output") b.edge(kNode, "out");
    return b.finish();
}

// Kept alive with the input source that reads it in place.
std::unique_ptr<InputSource> make_input(const NodeExample& ex, std::uint64_t seed) {
    const std::int64_t n = numel(ex.input);
    if (ex.kind == NodeExample::Input::analog) {
        auto data = std::make_shared<std::vector<float>>(static_cast<std::size_t>(kSamples * n));
        for (std::size_t i = 0; i < data->size(); ++i)
            (*data)[i] = static_cast<float>(3.0 * unit(seed * 1000003 + i) - 1.0);  // [-1, 2)
        Shape dims{kSamples};
        dims.insert(dims.end(), ex.input.begin(), ex.input.end());
        return make_analog_input(data->data(), dims, data, {}, InputOptions{}, "<harness input>");
    }
    std::vector<std::int8_t> s(static_cast<std::size_t>(kSamples * kSteps * n));
    for (std::size_t i = 0; i < s.size(); ++i) {
        const double u = unit(seed * 1000003 + i);
        if (ex.kind == NodeExample::Input::binary)
            s[i] = u < 0.35 ? 1 : 0;
        else
            s[i] = u < 0.2 ? 1 : (u < 0.4 ? -1 : 0);
    }
    Shape dims{kSamples, kSteps};
    dims.insert(dims.end(), ex.input.begin(), ex.input.end());
    return make_spike_input(s.data(), dims, {}, "<harness input>");
}

struct Outcome {
    RunResult result;
    test::CaptureAll cap;
};

std::unique_ptr<Outcome> simulate(const Graph& g, const InputSource& in, Engine e, int threads,
                                  std::int64_t first = 0, std::int64_t count = kSamples,
                                  std::int64_t steps = kSteps) {
    auto o = std::make_unique<Outcome>();
    RunConfig cfg;
    cfg.engine = e;
    cfg.timesteps = steps;
    cfg.threads = threads;
    cfg.first_sample = first;
    cfg.num_samples = count;
    cfg.seed = 11;
    cfg.parallel_work = 0;  // split every node, however small
    cfg.observer = &o->cap;
    o->result = run(g, in, cfg);
    return o;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (std::bit_cast<std::uint32_t>(a[i]) != std::bit_cast<std::uint32_t>(b[i])) return false;
    return true;
}

std::string ops_str(const OpCounts& o) {
    std::ostringstream s;
    o.for_each([&](std::string_view n, std::uint64_t v) {
        if (v) s << n << "=" << v << " ";
    });
    return s.str();
}

// Outputs and per-step counts of every node for samples [first, first + count).
void check_same(const Outcome& a, const Outcome& b, std::int64_t first, std::int64_t count,
                const std::string& what) {
    INFO(what);
    for (const auto& kv : a.cap.values) {
        // clang 14 cannot capture structured bindings in lambdas (INFO/CAPTURE)
        const auto& key = kv.first;
        const auto& v = kv.second;
        const auto s = std::get<0>(key);
        if (s < first || s >= first + count) continue;
        INFO("sample " << s << " step " << std::get<1>(key) << " node " << std::get<2>(key));
        auto it = b.cap.values.find(key);
        REQUIRE(it != b.cap.values.end());
        CHECK(same_bits(v, it->second));
        const auto& oa = a.cap.step_ops.at(key);
        const auto& ob = b.cap.step_ops.at(key);
        CHECK_MESSAGE(oa == ob, ops_str(oa) << "vs " << ops_str(ob));
    }
}

void check_same_stats(const RunResult& a, const RunResult& b, const std::string& what) {
    INFO(what);
    REQUIRE(a.nodes.size() == b.nodes.size());
    for (std::size_t u = 0; u < a.nodes.size(); ++u) {
        INFO("node " << u);
        CHECK_MESSAGE(a.nodes[u].ops == b.nodes[u].ops, ops_str(a.nodes[u].ops)
                                                            << "vs " << ops_str(b.nodes[u].ops));
        CHECK(a.nodes[u].nonzero_out == b.nodes[u].nonzero_out);
        CHECK(a.nodes[u].nonzero_in == b.nodes[u].nonzero_in);
    }
}

// Fan-out of each input element: the outputs that a lone +1 at that element changes (the
// weights are non-zero, so each changed output is one non-zero weight reached).
std::vector<std::uint64_t> probe_fan_out(const Case& c) {
    const std::int64_t n = numel(c.ex.input);
    auto g = build(c.type, c.ex.params, c.ex.input);
    std::vector<std::int8_t> s(static_cast<std::size_t>((n + 1) * n), 0);
    for (std::int64_t k = 0; k < n; ++k) s[static_cast<std::size_t>((k + 1) * n + k)] = 1;
    Shape dims{n + 1, 1};
    dims.insert(dims.end(), c.ex.input.begin(), c.ex.input.end());
    auto in = make_spike_input(s.data(), dims, {}, "<probe>");
    auto o = simulate(*g, *in, Engine::dense, 1, 0, n + 1, 1);
    const int u = g->find(kNode);
    const auto& base = o->cap.values.at({0, 0, u});
    std::vector<std::uint64_t> fan(static_cast<std::size_t>(n));
    for (std::int64_t k = 0; k < n; ++k) {
        const auto& y = o->cap.values.at({k + 1, 0, u});
        for (std::size_t j = 0; j < y.size(); ++j) fan[k] += y[j] != base[j];
    }
    return fan;
}

const std::vector<float>& output(const Outcome& o, int node, std::int64_t s, std::int64_t t);

// A spiking attention node (its traits, not its type name): every one needs an independent
// recount in tests/nodes/attention_recount.cpp, which refuses a variant it does not know.
bool spiking_attention(const Node& n) {
    return n.attention_shape().has_value() && n.is_spiking();
}

// Spiking attention: the layer record's typed counters and op counts against the independent
// recount (tests/nodes/attention_recount.hpp), whose output spikes must be the node's own.
void check_attention_recount(const Case& c, const MapParams& params, const Graph& g,
                             const Outcome& o) {
    const auto rec = make_run_record(g, o.result);
    const LayerRecord* l = nullptr;
    for (const auto& x : rec.layers)
        if (x.name == kNode) l = &x;
    REQUIRE(l);
    const auto r = test::recount_spiking_attention(
        c.type, params, c.ex.input[0], kSamples, kSteps,
        [&](std::int64_t s, std::int64_t t) -> const std::vector<float>& {
            return output(o, c.in, s, t);
        });
    CHECK_MESSAGE(r.margin > 1e-5, "the reference is ambiguous: a membrane lies within "
                                       << r.margin << " of its threshold");
    for (const auto& kv : r.out) {
        // clang 14 cannot capture structured bindings in lambdas (INFO/CAPTURE)
        const auto& key = kv.first;
        const auto& spikes = kv.second;
        INFO("sample " << key.first << " step " << key.second);
        CHECK_MESSAGE(same_bits(spikes, output(o, c.node, key.first, key.second)),
                      "the reference's output spikes differ from the node's");
    }
    l->attention.for_each([&](std::string_view name, std::uint64_t v) {
        std::uint64_t want = 0;
        r.att.for_each([&](std::string_view n2, std::uint64_t v2) {
            if (n2 == name) want = v2;
        });
        CHECK_MESSAGE(v == want, "attention." << name << ": node " << v << ", recount " << want);
    });
    const OpCounts& ops = l->ops;
    INFO("node " << ops_str(ops) << "; recount " << ops_str(r.ops));
    CHECK(ops.ac == r.ops.ac);
    CHECK(ops.mac == r.ops.mac);
    CHECK(ops.shift == r.ops.shift);
    CHECK(ops.cmp == r.ops.cmp);
    CHECK(ops.neuron_update == r.ops.neuron_update);
    CHECK(ops.spikes_out == r.ops.spikes_out);
    CHECK(ops.weight_read_bytes == r.ops.weight_read_bytes);
    CHECK(ops.state_read_bytes == r.ops.state_read_bytes);
    CHECK(ops.state_write_bytes == r.ops.state_write_bytes);
    CHECK(ops.spike_write_bytes == r.ops.spike_write_bytes);
    CHECK(l->synapses.pairs_ternary + l->synapses.pairs_other == r.pairs);
}

// Counts against rules that need no knowledge of the node's code:
//   Linear/Affine/Conv*: the event-cost rule (sim/kernels/event_cost.hpp) with spike inputs: AC =
//   sum
//     over non-zero inputs of their fan-out (probed), MAC = 0;
//   neurons: one neuron_update per neuron and step; spiking ones: spikes_out = sum of |outputs|;
//   ANN attention: MAC = the kind's closed form (dense_macs_per_step) per step and sample;
//   spiking attention: the recount of check_attention_recount.
// Other kinds (pass-through, pooling, Scale, Delay, token reshapes) are held to event == dense
// == any thread count only.
void check_counts(const Case& c, const Graph& g, const Outcome& o) {
    const Node& n = g.node(c.node);
    const OpCounts& ops = o.result.nodes[static_cast<std::size_t>(c.node)].ops;
    INFO("counts of " << c.type << ": " << ops_str(ops));
    if (n.count_traits().connection) {
        auto fan = probe_fan_out(c);
        std::uint64_t ac = 0;
        for (const auto& [key, v] : o.cap.values)
            if (std::get<2>(key) == c.in)
                for (std::size_t i = 0; i < v.size(); ++i)
                    if (v[i] != 0) ac += fan[i] * static_cast<std::uint64_t>(std::fabs(v[i]));
        CHECK(ops.ac == ac);
        CHECK(ops.mac == 0);
    }
    if (n.category() == NodeCategory::neuron) {
        const auto per = static_cast<std::uint64_t>(numel(n.out_shape()));
        CHECK(ops.neuron_update == per * kSamples * kSteps);
        if (n.is_spiking()) {
            // One spike per unit of |output|: a binary or ternary spike counts 1, an integer
            // spike k (ternion.MultiSpike) its k virtual binary spikes.
            std::uint64_t nz = 0;
            for (const auto& [key, v] : o.cap.values)
                if (std::get<2>(key) == c.node)
                    for (float x : v) nz += static_cast<std::uint64_t>(std::fabs(x));
            CHECK(ops.spikes_out == nz);
        }
    }
    if (c.type.rfind("ternion.", 0) == 0 && n.category() == NodeCategory::attention &&
        n.dense_macs_per_step() > 0 && c.ex.kind == NodeExample::Input::analog)
        CHECK(ops.mac == n.dense_macs_per_step() * kSamples * kSteps);
    if (spiking_attention(n)) check_attention_recount(c, c.ex.params, g, o);
}

bool names_param(const std::string& msg, const std::string& param) {
    return msg.find(std::string("nodes/") + kNode + "/" + param) != std::string::npos;
}
// A missing member of a group (NPT's blocks/<i>/W_Q) may be reported as the group being
// incomplete.
bool names_param_or_group(const std::string& msg, const std::string& param) {
    return names_param(msg, param) || names_param(msg, param.substr(0, param.find('/')));
}

// Builds the graph from `p`; the error message when it is refused, else "".
std::string refusal(const Case& c, const MapParams& p) {
    try {
        build(c.type, p, c.ex.input);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

void check_bad_params(const Case& c) {
    for (const auto& name : c.ex.params.names()) {
        INFO(c.type << " parameter " << name);
        MapParams p = c.ex.params;
        p.erase(name);
        const std::string dropped = refusal(c, p);
        CHECK_MESSAGE((dropped.empty() || names_param_or_group(dropped, name)), dropped);
        p = c.ex.params;
        if (p.is_string(name)) {
            p.set(name, "no-such-value");
        } else {
            Shape d;
            auto v = p.doubles(name, &d);
            v[0] = std::nan("");
            p.set(name, v, d);
        }
        const std::string bad = refusal(c, p);
        CHECK_MESSAGE(names_param(bad, name), "not refused or not named: '" << bad << "'");
        CHECK(bad.find("<example " + c.type + ">") == 0);
    }
    // A name the type does not know (a misspelt optional parameter) is refused, named.
    MapParams p = c.ex.params;
    p.set("biass", 0.0);
    const std::string unknown = refusal(c, p);
    const bool refused = names_param(unknown, "biass") &&
                         unknown.find("is not a parameter of " + c.type) != std::string::npos;
    CHECK_MESSAGE(refused, c.type << ": unknown parameter not refused: '" << unknown << "'");
}

// Output of `node` for sample s, step t.
const std::vector<float>& output(const Outcome& o, int node, std::int64_t s, std::int64_t t) {
    return o.cap.values.at({s, t, node});
}

// Direct forward() of the kind on the node's input; the engine must add nothing.
void check_ann_direct(const Case& c, const std::string& kind, const Outcome& o) {
    ann::MapWeights w("<direct>");
    for (const auto& name : c.ex.params.names()) {
        if (c.ex.params.is_string(name)) continue;
        Shape d;
        auto v = c.ex.params.doubles(name, &d);
        w.set(name, std::vector<float>(v.begin(), v.end()), d);
    }
    auto a = ann::make_attention(kind, w);
    const std::int64_t n = c.ex.input[0], width = c.ex.input[1];
    for (std::int64_t s = 0; s < kSamples; ++s) {
        const auto& x = output(o, c.in, s, 0);
        std::vector<float> xs, ts;
        for (std::int64_t i = 0; i < n; ++i) {
            xs.insert(xs.end(), x.begin() + i * width, x.begin() + i * width + a->in_dim());
            if (a->needs_time()) ts.push_back(x[static_cast<std::size_t>(i * width + width - 1)]);
        }
        std::vector<float> y(static_cast<std::size_t>(n * a->out_dim()));
        a->forward(xs.data(), ts.data(), n, y.data(), nullptr);
        CHECK(same_bits(y, output(o, c.node, s, 0)));
        if (kind == "softmax") {
            // softmax(Q_h K_h^T / sqrt(d_h)) V_h per head, then W_O, in double precision.
            auto lin = [&](const std::vector<double>& in, const char* W, const char* b,
                           std::int64_t din) {
                Shape wd;
                auto wv = c.ex.params.doubles(W, &wd);
                auto bv = c.ex.params.doubles(b, nullptr);
                const std::int64_t dout = wd[1];
                std::vector<double> r(static_cast<std::size_t>(n * dout));
                for (std::int64_t i = 0; i < n; ++i)
                    for (std::int64_t j = 0; j < dout; ++j) {
                        double acc = bv[j];
                        for (std::int64_t k = 0; k < din; ++k)
                            acc += in[i * din + k] * wv[k * dout + j];
                        r[i * dout + j] = acc;
                    }
                return r;
            };
            const std::int64_t D = a->in_dim(), H = a->heads(), dh = D / H;
            std::vector<double> xd(xs.begin(), xs.end());
            auto Q = lin(xd, "W_Q", "b_Q", D), K = lin(xd, "W_K", "b_K", D),
                 V = lin(xd, "W_V", "b_V", D);
            std::vector<double> att(static_cast<std::size_t>(n * D), 0.0);
            for (std::int64_t h = 0; h < H; ++h)
                for (std::int64_t i = 0; i < n; ++i) {
                    std::vector<double> e(static_cast<std::size_t>(n));
                    double mx = -1e300, sum = 0;
                    for (std::int64_t j = 0; j < n; ++j) {
                        double d = 0;
                        for (std::int64_t k = 0; k < dh; ++k)
                            d += Q[i * D + h * dh + k] * K[j * D + h * dh + k];
                        e[j] = d / std::sqrt(double(dh));
                        mx = std::max(mx, e[j]);
                    }
                    for (auto& v : e) sum += (v = std::exp(v - mx));
                    for (std::int64_t j = 0; j < n; ++j)
                        for (std::int64_t k = 0; k < dh; ++k)
                            att[i * D + h * dh + k] += e[j] / sum * V[j * D + h * dh + k];
                }
            auto ref = lin(att, "W_O", "b_O", D);
            for (std::size_t i = 0; i < ref.size(); ++i)
                CHECK(std::fabs(ref[i] - y[i]) <= 1e-4 * (1.0 + std::fabs(ref[i])));
        }
    }
}

std::vector<Case> all_cases() {
    std::vector<Case> r;
    for (const auto& [type, desc] : default_factory().types()) {
        auto ex = default_factory().example(type);
        if (!ex) {
            FAIL_CHECK("node type " << type << " is registered without an example");
            continue;
        }
        r.push_back({type, std::move(*ex)});
    }
    return r;
}

void run_case(Case& c) {
    INFO("node type " << c.type);
    auto g = build(c.type, c.ex.params, c.ex.input);
    c.in = g->find("in");
    c.node = g->find(kNode);
    c.out = g->find("out");
    if (c.in < 0) c.in = c.node;
    auto in = make_input(c.ex, 5);
    auto ev = simulate(*g, *in, Engine::event, 1);
    auto de = simulate(*g, *in, Engine::dense, 1);
    // Comparisons of all-zero outputs would prove nothing.
    bool active = false;
    for (const auto& [key, v] : ev->cap.values)
        if (std::get<2>(key) == c.node)
            for (float x : v) active = active || x != 0;
    CHECK_MESSAGE(active, "the example never produces a non-zero output");
    check_same(*ev, *de, 0, kSamples, "event == dense");
    check_same_stats(ev->result, de->result, "event == dense");
    auto t3 = simulate(*g, *in, Engine::event, 3);
    check_same(*ev, *t3, 0, kSamples, "1 thread == 3 threads, samples in parallel");
    check_same_stats(ev->result, t3->result, "1 thread == 3 threads");
    for (std::int64_t s = 0; s < kSamples; ++s) {
        // One sample on three threads: the node's own blocks are split.
        auto one = simulate(*g, *in, Engine::event, 1, s, 1);
        auto split = simulate(*g, *in, Engine::dense, 3, s, 1);
        check_same(*ev, *one, s, 1, "sample after another == fresh state");
        check_same(*one, *split, s, 1, "1 thread == 3 threads, one sample split");
    }
    check_counts(c, *g, *ev);
    for (const auto& [key, value] : g->node(c.node).summary())
        if (key == "kind" && g->node(c.node).category() == NodeCategory::attention &&
            c.ex.kind == NodeExample::Input::analog)
            check_ann_direct(c, value, *ev);
    check_bad_params(c);
}

}  // namespace

TEST_CASE("conformance: every registered node type has an example") {
    const auto types = default_factory().types();
    CHECK(types.size() >= 37);
    for (const auto& entry : types) {
        // clang 14 cannot capture structured bindings in lambdas (INFO/CAPTURE)
        const std::string& type = entry.first;
        INFO(type);
        CHECK(default_factory().example(type).has_value());
    }
}

TEST_CASE("conformance: a type without an example is reported") {
    NodeFactory f;
    f.add(
        "T", [](const NodeSpec&) -> std::unique_ptr<Node> { return nullptr; }, "no example");
    CHECK_FALSE(f.example("T").has_value());
}

TEST_CASE("conformance: every node type") {
    // One type's exception must not hide the others' results.
    for (auto& c : all_cases()) {
        try {
            run_case(c);
        } catch (const std::exception& e) {
            FAIL_CHECK("node type " << c.type << " threw: " << std::string(e.what()));
        }
    }
}

TEST_CASE("conformance: spiking attention counts in every form") {
    // The examples take one path each; the other forms and associations are recounted here.
    std::vector<std::pair<std::string, std::pair<std::string, std::string>>> forms = {
        {"ternion.SSA", {"association", "qk"}},
        {"ternion.SSA", {"association", "kv"}},
        {"ternion.SDSA", {"form", "kv"}},
        {"ternion.BSA", {"", ""}},  // analog input: the projection books MACs
        {"ternion.QKAttention", {"form", "channel"}},
        {"ternion.MultiSpikeAttention", {"association", "qk"}},
        {"ternion.MultiSpikeAttention", {"association", "kv"}},
    };
    for (const auto& form : forms) {
        // clang 14 cannot capture structured bindings in lambdas (INFO/CAPTURE)
        const auto& type = form.first;
        const auto& param = form.second;
        INFO(type << " " << param.first << " = " << param.second);
        Case c{type, *default_factory().example(type)};
        if (!param.first.empty()) c.ex.params.set(param.first, param.second);
        if (param.first.empty()) c.ex.kind = NodeExample::Input::analog;
        auto g = build(c.type, c.ex.params, c.ex.input);
        c.in = g->find("in");
        c.node = g->find(kNode);
        auto in = make_input(c.ex, 7);
        auto ev = simulate(*g, *in, Engine::event, 1);
        check_attention_recount(c, c.ex.params, *g, *ev);
    }
}

TEST_CASE("conformance: errors of in-memory parameters name the label and the node") {
    MapParams p("<my model>");
    p.set("weight", {1.0, std::nan(""), 3.0, 4.0}, {2, 2});
    try {
        build("Linear", p, {2});
        FAIL("NaN weight accepted");
    } catch (const InputError& e) {
        CHECK(std::string(e.what()).find("<my model>: nodes/node/weight") != std::string::npos);
        CHECK(std::string(e.what()).find("NaN") != std::string::npos);
    }
}
