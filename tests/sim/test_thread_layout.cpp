// A model loaded once runs with any thread count: Linear layers store their weights without
// regard to threads and split their rows per run, so one load run on 1 thread, on 3 threads one
// sample at a time (each layer's rows split, splitting forced on however small), and on 3 threads
// with samples in parallel gives the same spikes, outputs and counts bit for bit. Covers dense
// and compressed weights, one token and several, and a layer past 65472 rows (16-bit storage
// blocks that a thread's rows cross).
#include <doctest/doctest.h>

#include <bit>
#include <random>

#include "tests/support/model_file.hpp"
#include "tests/support/run_model.hpp"

using namespace ternion;
using namespace ternion::test;

namespace {

std::vector<double> random_weights(std::mt19937_64& rng, std::int64_t n, double density) {
    std::uniform_real_distribution<double> u(-1.0, 1.0), p(0.0, 1.0);
    std::vector<double> w(static_cast<std::size_t>(n));
    for (auto& x : w) x = p(rng) < density ? u(rng) : 0.0;
    return w;
}

std::vector<std::int8_t> random_spikes(std::mt19937_64& rng, std::size_t n, double rate) {
    std::uniform_real_distribution<double> p(0.0, 1.0);
    std::vector<std::int8_t> s(n);
    for (auto& x : s) {
        const double u = p(rng);
        x = u < rate ? 1 : (u < 2 * rate ? -1 : 0);
    }
    return s;
}

// Compressed rows of a random [out][in] matrix: never densified, so a large layer stays cheap.
std::map<std::string, Param> csr_weights(std::mt19937_64& rng, std::int64_t out, std::int64_t in,
                                         double density) {
    std::uniform_real_distribution<double> u(-1.0, 1.0), p(0.0, 1.0);
    std::vector<double> indptr{0}, indices, data;
    for (std::int64_t r = 0; r < out; ++r) {
        for (std::int64_t c = 0; c < in; ++c)
            if (p(rng) < density) {
                indices.push_back(static_cast<double>(c));
                data.push_back(u(rng));
            }
        indptr.push_back(static_cast<double>(data.size()));
    }
    return {{"weight_shape", P({double(out), double(in)})},
            {"weight_csr_indptr", P(indptr)},
            {"weight_csr_indices", P(indices)},
            {"weight_csr_data", P(data)}};
}

std::map<std::string, Param> lif() {
    return {{"tau", P(4.0)}, {"v_threshold", P(0.5)}};
}

// One token: dense Affine 400 -> 600, compressed Linear 600 -> 70001, dense Linear 70001 -> 10.
void write_one_token(const std::string& path, std::mt19937_64& rng) {
    const std::int64_t big = 70001;
    ModelFile()
        .node("input", "Input", {{"shape", P({400.0})}})
        .node("fc1", "Affine",
              {{"weight", P(random_weights(rng, 600 * 400, 0.4), {600, 400})},
               {"bias", P(random_weights(rng, 600, 1.0))}})
        .node("lif1", "ternion.SJLIF", lif())
        .node("fc2", "Linear", csr_weights(rng, big, 600, 0.01))
        .node("lif2", "ternion.SJLIF", lif())
        .node("fc3", "Linear", csr_weights(rng, 10, big, 0.02))
        .node("output", "Output")
        .chain({"input", "fc1", "lif1", "fc2", "lif2", "fc3", "output"})
        .write(path);
}

// Several tokens: dense Linear [8, 96] -> [8, 300], then compressed 300 -> 200 on each token.
void write_tokens(const std::string& path, std::mt19937_64& rng) {
    ModelFile()
        .node("input", "Input", {{"shape", P({8.0, 96.0})}})
        .node("fc1", "Linear", {{"weight", P(random_weights(rng, 300 * 96, 0.5), {300, 96})}})
        .node("lif1", "ternion.SJLIF", lif())
        .node("fc2", "Affine",
              {{"weight", P(random_weights(rng, 200 * 300, 0.05), {200, 300})},
               {"bias", P(random_weights(rng, 200, 1.0))}})
        .node("output", "Output")
        .chain({"input", "fc1", "lif1", "fc2", "output"})
        .write(path);
}

struct Run {
    RunResult result;
    CaptureAll capture;
};

std::unique_ptr<Run> simulate(const Pipeline& p, int threads, std::int64_t first,
                              std::int64_t count, Engine engine) {
    auto r = std::make_unique<Run>();
    RunConfig cfg = p.config();
    cfg.engine = engine;
    cfg.threads = threads;
    cfg.first_sample = first;
    cfg.num_samples = count;
    cfg.parallel_work = 0;  // split every layer, however small
    cfg.observer = &r->capture;
    r->result = p.simulate(cfg);
    return r;
}

// Every (sample, step, node) b captured (samples by their index in the input) equals a's.
void check_same(const Graph& g, const Run& a, const Run& b, const std::string& what) {
    INFO(what);
    for (const auto& kv : b.capture.values) {
        // clang 14 cannot capture structured bindings in lambdas (INFO/CAPTURE)
        const auto& key = kv.first;
        const auto& v = kv.second;
        INFO("sample " << std::get<0>(key) << " step " << std::get<1>(key) << " node "
                       << g.node(std::get<2>(key)).name());
        const auto it = a.capture.values.find(key);
        REQUIRE(it != a.capture.values.end());
        REQUIRE(it->second.size() == v.size());
        bool same = true;
        for (std::size_t i = 0; i < v.size(); ++i)
            same = same && std::bit_cast<std::uint32_t>(v[i]) ==
                               std::bit_cast<std::uint32_t>(it->second[i]);
        CHECK(same);
        CHECK(a.capture.actives.at(key) == b.capture.actives.at(key));
        CHECK(a.capture.step_ops.at(key) == b.capture.step_ops.at(key));
    }
}

}  // namespace

TEST_CASE("a model loaded once gives the same spikes and counts on 1 and 3 threads") {
    std::mt19937_64 rng(23);
    TempFile one_token, tokens, in1, in2;
    write_one_token(one_token.path(), rng);
    write_tokens(tokens.path(), rng);
    write_spikes(in1.path(), random_spikes(rng, 2 * 6 * 400, 0.15), {2, 6, 400});
    write_spikes(in2.path(), random_spikes(rng, 2 * 6 * 8 * 96, 0.15), {2, 6, 8, 96});
    for (auto [model, input] :
         {std::pair{one_token.path(), in1.path()}, std::pair{tokens.path(), in2.path()}})
        for (Engine engine : {Engine::event, Engine::dense}) {
            // clang 14 cannot capture structured bindings in lambdas (INFO/CAPTURE)
            const std::string& model_path = model;
            CAPTURE(model_path);
            CAPTURE(engine == Engine::event);
            RunRequest q;
            q.model = model;
            q.input = input;
            q.load.dt = 1e-3;
            const Pipeline p(q);  // loaded once, for one thread
            auto ref = simulate(p, 1, 0, 2, engine);
            CHECK(
                ref->result.nodes[static_cast<std::size_t>(p.graph().find("output"))].nonzero_out >
                0);
            for (std::int64_t s = 0; s < 2; ++s) {
                auto split = simulate(p, 3, s, 1, engine);  // one sample: its layers split
                check_same(p.graph(), *ref, *split, "1 thread == 3 threads, one sample split");
            }
            auto parallel = simulate(p, 3, 0, 2, engine);
            check_same(p.graph(), *ref, *parallel, "1 thread == 3 threads, samples in parallel");
            for (int u = 0; u < p.graph().size(); ++u)
                CHECK(ref->result.nodes[static_cast<std::size_t>(u)].ops ==
                      parallel->result.nodes[static_cast<std::size_t>(u)].ops);
            CHECK(ref->result.predictions == parallel->result.predictions);
        }
}
