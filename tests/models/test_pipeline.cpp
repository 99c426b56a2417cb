// The run pipeline from every kind of source: a model file or a graph built in memory, an input
// file or the caller's arrays. All four combinations must give the same spikes, counts and
// energy, and the LIF spikes must follow the closed form of the network.
#include <doctest/doctest.h>

#include "models/graph_builder.hpp"
#include "models/pipeline.hpp"
#include "tests/support/model_file.hpp"

using namespace ternion;
using namespace ternion::test;

namespace {

// Input [2] -> Linear -> LIF (v = 0.5 v + I, spike above 1, reset 0) -> Output, dt = 1 ms.
// Weights: neuron 0 gets 0.5 per input-0 spike (never fires), neuron 1 gets 2 (fires each step).
const std::vector<double> kWeight{0.5, 0, 2, 0};  // [out, in] row-major
const std::vector<double> kTau{2e-3, 2e-3};

std::shared_ptr<const LoadedModel> in_memory() {
    LoadOptions o;
    o.dt = 1e-3;
    MapParams in("<memory>"), fc("<memory>"), lif("<memory>"), out("<memory>");
    in.set("shape", {2}, {1});
    fc.set("weight", kWeight, {2, 2});
    lif.set("tau", kTau, {2}).set("r", {2, 2}, {2}).set("v_leak", {0, 0}, {2});
    lif.set("v_threshold", {1, 1}, {2}).set("v_reset", {0, 0}, {2});
    out.set("shape", {2}, {1});
    auto g = GraphBuilder(o)
                 .node("input", "Input", in)
                 .node("fc", "Linear", fc)
                 .node("lif", "LIF", lif)
                 .node("output", "Output", out)
                 .edge("input", "fc")
                 .edge("fc", "lif")
                 .edge("lif", "output")
                 .finish();
    return adopt_model(std::move(g), "<memory>", o);
}

void write_model(const std::string& path) {
    ModelFile()
        .node("input", "Input", {{"shape", P({2})}})
        .node("fc", "Linear", {{"weight", P(kWeight, {2, 2})}})
        .node("lif", "LIF",
              {{"tau", P(kTau)},
               {"r", P({2, 2})},
               {"v_leak", P({0, 0})},
               {"v_threshold", P({1, 1})},
               {"v_reset", P({0, 0})}})
        .node("output", "Output", {{"shape", P({2})}})
        .edge("input", "fc")
        .edge("fc", "lif")
        .edge("lif", "output")
        .meta("dt", 1e-3)
        .write(path);
}

// 3 samples x 6 steps: input 0 on every step in samples 0 and 2, input 1 never.
std::vector<std::int8_t> spikes() {
    std::vector<std::int8_t> x(3 * 6 * 2, 0);
    for (int s : {0, 2})
        for (int t = 0; t < 6; ++t) x[static_cast<std::size_t>((s * 6 + t) * 2)] = 1;
    return x;
}

}  // namespace

TEST_CASE("file or memory model, file or array input: the same run") {
    TempFile model, input;
    write_model(model.path());
    const auto x = spikes();
    {
        h5::Writer w(input.path());
        w.write("/spikes", x, {3, 6, 2});
        w.write("/labels", std::vector<std::int64_t>{1, 0, 1}, {3});
        w.close();
    }
    ArrayInput arrays;
    arrays.dims = {3, 6, 2};
    arrays.spikes = x.data();
    arrays.labels = {1, 0, 1};

    RunRequest q;
    q.record = TraceOptions{};
    std::vector<RunReport> reports;
    std::vector<std::vector<std::int8_t>> recorded;
    for (int memory_model = 0; memory_model < 2; ++memory_model)
        for (int memory_input = 0; memory_input < 2; ++memory_input) {
            RunRequest r = q;
            r.model = model.path();
            if (memory_input)
                r.arrays = arrays;
            else
                r.input = input.path();
            auto p = memory_model ? std::make_unique<Pipeline>(r, in_memory())
                                  : std::make_unique<Pipeline>(r);
            reports.push_back(p->run());
            recorded.push_back(*p->recorder()->spike_grid("lif"));
        }
    // Closed form: neuron 1 fires at every step of samples 0 and 2, neuron 0 never (0.5, 0.75,
    // ... stays below 1); sample 1 is silent. Predictions: 1, 0 (a tie goes low), 1.
    std::vector<std::int8_t> expect(3 * 6 * 2, 0);
    for (int s : {0, 2})
        for (int t = 0; t < 6; ++t) expect[static_cast<std::size_t>((s * 6 + t) * 2 + 1)] = 1;
    for (std::size_t k = 0; k < reports.size(); ++k) {
        CAPTURE(k);
        CHECK(recorded[k] == expect);
        CHECK(reports[k].result.predictions == std::vector<std::int64_t>{1, 0, 1});
        REQUIRE(reports[k].accuracy);
        CHECK(*reports[k].accuracy == 1.0);
        CHECK(reports[k].total.ac == reports[0].total.ac);
        CHECK(reports[k].total.ac == 2 * 6 * 2);  // each input spike reaches both neurons
        CHECK(reports[k].cost.per_inference_pj == reports[0].cost.per_inference_pj);
    }
}

TEST_CASE("the pipeline refuses bad arrays and options before simulating") {
    TempFile model;
    write_model(model.path());
    const auto x = spikes();
    RunRequest q;
    q.model = model.path();
    ArrayInput a;
    a.dims = {3, 6, 2};
    a.spikes = x.data();
    a.name = "<mine>";
    a.labels = {0, 1};  // 2 labels for 3 samples
    q.arrays = a;
    CHECK_THROWS_WITH_AS(Pipeline{q}, doctest::Contains("<mine>: /labels: expected shape [3]"),
                         InputError);
    q.arrays->labels.clear();
    q.threads = 0;
    CHECK_THROWS_WITH_AS(Pipeline{q}, doctest::Contains("option --threads"), OptionError);
    q.threads = 1;
    q.samples = 4;
    CHECK_THROWS_WITH_AS(Pipeline{q}, doctest::Contains("option --samples: must lie in [1, 3]"),
                         OptionError);
}
