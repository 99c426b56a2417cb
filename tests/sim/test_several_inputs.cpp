// Models with several Input nodes: one source per node, filled at every step. A two-stream
// network (Input a spikes -> Linear -> LIF, Input b analog -> Linear -> LIF, both summed into a
// LIF) against the documented update computed here by hand; event == dense; 1 == 3 threads;
// the pipeline's checks of the caller's arrays; the random streams of the inputs.
#include <doctest/doctest.h>

#include "models/graph_builder.hpp"
#include "sim/core/rng.hpp"
#include "tests/support/run_model.hpp"

using namespace ternion;
using namespace ternion::test;

namespace {

constexpr std::int64_t kS = 4, kT = 7;
// [out, in] row-major; multiples of 1/4, so every sum below is exact in float.
const std::vector<double> kWa{0.75, 0.5, 0, 0, 1.25, -0.5};  // 2 x 3
const std::vector<double> kWb{1.0, 0.25, -0.5, 1.5};         // 2 x 2

// LIF with dt = 1 ms, tau = 2 ms, r = 2: v <- 0.5 v + I, a spike where v > 1, reset to 0.
MapParams lif_params() {
    MapParams p("<memory>");
    p.set("tau", {2e-3, 2e-3}, {2}).set("r", {2, 2}, {2}).set("v_leak", {0, 0}, {2});
    p.set("v_threshold", {1, 1}, {2}).set("v_reset", {0, 0}, {2});
    return p;
}

std::shared_ptr<const LoadedModel> two_streams() {
    LoadOptions o;
    o.dt = 1e-3;
    MapParams a("<memory>"), b("<memory>"), fa("<memory>"), fb("<memory>"), none("<memory>");
    a.set("shape", {3}, {1});
    b.set("shape", {2}, {1});
    fa.set("weight", kWa, {2, 3});
    fb.set("weight", kWb, {2, 2});
    const MapParams lif = lif_params();
    auto g = GraphBuilder(o)
                 .node("a", "Input", a)
                 .node("b", "Input", b)
                 .node("fa", "Linear", fa)
                 .node("la", "LIF", lif)
                 .node("fb", "Linear", fb)
                 .node("lb", "LIF", lif)
                 .node("join", "ternion.Identity", none)
                 .node("lo", "LIF", lif)
                 .node("output", "Output", none)
                 .edge("a", "fa")
                 .edge("fa", "la")
                 .edge("b", "fb")
                 .edge("fb", "lb")
                 .edge("la", "join")
                 .edge("lb", "join")
                 .edge("join", "lo")
                 .edge("lo", "output")
                 .finish();
    return adopt_model(std::move(g), "<two streams>", o);
}

struct Data {
    std::vector<std::int8_t> xa;  // [S, T, 3]
    std::vector<float> xb;        // [S, 2]
};

Data data() {
    Data d;
    d.xa.resize(static_cast<std::size_t>(kS * kT * 3));
    for (std::size_t i = 0; i < d.xa.size(); ++i)
        d.xa[i] = static_cast<std::int8_t>((i * 7) % 5 < 2);
    d.xb = {0.5f, 0.25f, 1.0f, -0.25f, 0.0f, 0.75f, 0.25f, 0.5f};
    return d;
}

// The documented update by hand: spikes of la, lb, lo as [S][T][2].
std::map<std::string, std::vector<float>> by_hand(const Data& d) {
    std::map<std::string, std::vector<float>> out;
    for (const char* k : {"la", "lb", "lo"})
        out[k].assign(static_cast<std::size_t>(kS * kT * 2), 0);
    auto lif = [](double& v, double in) {
        v = 0.5 * v + in;
        const bool fire = v > 1.0;
        if (fire) v = 0.0;
        return fire ? 1.0f : 0.0f;
    };
    for (std::int64_t s = 0; s < kS; ++s) {
        double va[2] = {0, 0}, vb[2] = {0, 0}, vo[2] = {0, 0};
        for (std::int64_t t = 0; t < kT; ++t)
            for (std::size_t j = 0; j < 2; ++j) {
                double ia = 0, ib = 0;
                for (std::size_t i = 0; i < 3; ++i)
                    ia += kWa[j * 3 + i] * d.xa[static_cast<std::size_t>((s * kT + t) * 3) + i];
                for (std::size_t i = 0; i < 2; ++i)
                    ib += kWb[j * 2 + i] * d.xb[static_cast<std::size_t>(s * 2) + i];
                const auto k = static_cast<std::size_t>((s * kT + t) * 2) + j;
                out["la"][k] = lif(va[j], ia);
                out["lb"][k] = lif(vb[j], ib);
                out["lo"][k] = lif(vo[j], out["la"][k] + out["lb"][k]);
            }
    }
    return out;
}

ArrayInput spikes_of(const Data& d, std::string node) {
    ArrayInput a;
    a.dims = {kS, kT, 3};
    a.spikes = d.xa.data();
    a.node = std::move(node);
    return a;
}

ArrayInput data_of(const Data& d, std::string node) {
    ArrayInput a;
    a.dims = {kS, 2};
    a.data = d.xb.data();
    a.node = std::move(node);
    return a;
}

RunRequest request(const Data& d) {
    RunRequest q;
    q.node_arrays = {data_of(d, "b"), spikes_of(d, "a")};  // any order: matched by name
    q.node_arrays[0].labels = {0, 1, 1, 0};
    return q;
}

// Every node's spikes as [S][T][n] under `engine` and `threads`, every node split.
std::map<std::string, std::vector<float>> spikes_run(const Data& d, Engine engine, int threads,
                                                     RunResult* result = nullptr) {
    RunRequest q = request(d);
    q.engine = engine;
    q.threads = threads;
    Pipeline p(q, two_streams());
    CaptureAll cap;
    RunConfig cfg = p.config();
    cfg.parallel_work = 0;
    cfg.observer = &cap;
    RunResult r = p.simulate(cfg);
    std::map<std::string, std::vector<float>> out;
    for (const char* k : {"la", "lb", "lo"})
        for (std::int64_t s = 0; s < kS; ++s)
            for (std::int64_t t = 0; t < kT; ++t) {
                const auto& v = cap.values.at({s, t, p.graph().find(k)});
                out[k].insert(out[k].end(), v.begin(), v.end());
            }
    if (result) *result = std::move(r);
    return out;
}

}  // namespace

TEST_CASE("two Input nodes: spikes by hand, event == dense, 1 == 3 threads") {
    const Data d = data();
    const auto want = by_hand(d);
    for (const auto& [k, v] : want) {
        double n = 0;
        for (float x : v) n += x;
        CHECK_MESSAGE(n >= 4, k);  // each population fires, or the comparison says little
    }
    RunResult first;
    const auto got = spikes_run(d, Engine::event, 1, &first);
    CHECK(got == want);
    CHECK(first.timesteps == kT);  // the spike input's T; the analog one follows it
    for (Engine e : {Engine::event, Engine::dense})
        for (int threads : {1, 3}) {
            RunResult r;
            CHECK(spikes_run(d, e, threads, &r) == want);
            CHECK(r.predictions == first.predictions);
            for (std::size_t u = 0; u < r.nodes.size(); ++u) {
                CHECK(r.nodes[u].ops == first.nodes[u].ops);
                CHECK(r.nodes[u].nonzero_out == first.nodes[u].nonzero_out);
            }
        }
    // The labels of the arrays reach the report.
    Pipeline p(request(d), two_streams());
    const RunReport rep = p.run();
    REQUIRE(rep.accuracy);
    CHECK(rep.input_kind == "a: replayed spikes (samples-first), b: direct encoding");
}

TEST_CASE("two Input nodes: the caller's arrays are checked by node") {
    const Data d = data();
    auto refused = [&](RunRequest q, const char* what) {
        CHECK_THROWS_WITH_AS(Pipeline(q, two_streams()), doctest::Contains(what), InputError);
    };
    RunRequest q = request(d);
    q.node_arrays.pop_back();
    refused(q, "<arrays>: /inputs/a: missing: no array for the model's Input node 'a'");
    q = request(d);
    q.node_arrays[0] = data_of(d, "c");
    refused(q, "/inputs/c: names no Input node of the model (a, b)");
    q = request(d);
    q.node_arrays[0].dims = {kS - 1, 2};
    refused(q, "/inputs/b/data: has 3 samples, /inputs/a/spikes has 4");
    q = request(d);
    q.node_arrays[0].dims = {kS / 2, 4};
    refused(q,
            "/inputs/b/data: sample shape [4] does not match the model's Input shape [2] of "
            "Input node 'b'");
    q = request(d);
    q.node_arrays.push_back(spikes_of(d, "a"));
    refused(q, "/inputs/a: given twice");
    q = RunRequest{};
    q.arrays = spikes_of(d, "");
    refused(q, "one array for a model with 2 Input nodes (a, b)");
}

TEST_CASE("the engine takes one source per Input node") {
    const Data d = data();
    const auto m = two_streams();
    auto a = make_spike_input(d.xa.data(), {kS, kT, 3}, {}, "<a>");
    auto b = make_analog_input(d.xb.data(), {kS, 2}, nullptr, {}, InputOptions{}, "<b>");
    RunConfig cfg;
    CHECK_THROWS_WITH_AS(run(*m->graph, *a, cfg), doctest::Contains("2 Input nodes"), InputError);
    auto b3 = make_analog_input(d.xb.data(), {kS - 1, 2}, nullptr, {}, InputOptions{}, "<b>");
    CHECK_THROWS_WITH_AS(run(*m->graph, {a.get(), b3.get()}, cfg),
                         doctest::Contains("<b>: /data: has 3 samples, <a>: /spikes has 4"),
                         InputError);
    const RunResult r = run(*m->graph, {a.get(), b.get()}, cfg);
    CHECK(r.timesteps == kT);
    CHECK(r.samples == kS);
}

TEST_CASE("each Input node draws its own random numbers; the first keeps the run's") {
    CHECK(input_seed(42, 0) == 42);
    CHECK(input_seed(42, 1) != 42);
    CHECK(input_seed(42, 1) != input_seed(42, 2));
    CHECK(input_seed(42, 1) != input_seed(43, 1));
}
