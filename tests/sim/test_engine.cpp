// Engine tests: event-driven vs dense on random graphs (bit-identical), determinism across thread
// counts, operation counts against closed forms, recurrent edges, structural nodes by hand.
#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "sim/kernels/event_cost.hpp"
#include "tests/support/model_file.hpp"
#include "tests/support/run_model.hpp"

using namespace ternion;
using namespace ternion::test;

namespace {

std::vector<double> random_weights(std::mt19937_64& rng, std::size_t n, double density,
                                   double scale) {
    std::uniform_real_distribution<double> u(-scale, scale), p(0.0, 1.0);
    std::vector<double> w(n);
    for (auto& x : w) x = p(rng) < density ? u(rng) : 0.0;
    return w;
}

std::vector<std::int8_t> random_spikes(std::mt19937_64& rng, std::size_t n, double rate,
                                       bool ternary) {
    std::uniform_real_distribution<double> p(0.0, 1.0);
    std::vector<std::int8_t> s(n);
    for (auto& x : s) {
        double u = p(rng);
        x = u < rate ? 1 : (ternary && u < 2 * rate ? -1 : 0);
    }
    return s;
}

// A convolution's geometry, for the reference sum below.
struct ConvGeometry {
    std::int64_t C, H, W, CO, KH, KW, G, SH, SW, DH, DW, PH, PW;
    std::int64_t OH() const { return (H + 2 * PH - DH * (KH - 1) - 1) / SH + 1; }
    std::int64_t OW() const { return (W + 2 * PW - DW * (KW - 1) - 1) / SW + 1; }
};

// Each output as a direct sum over its window in (channel, row, column) order, as PyTorch's
// definition reads; x(ci, iy, ix) gives the input.
template <class X>
std::vector<float> conv_reference(const ConvGeometry& g, const std::vector<double>& w, X x) {
    const std::int64_t OH = g.OH(), OW = g.OW(), cin_g = g.C / g.G, cout_g = g.CO / g.G;
    std::vector<float> y(static_cast<std::size_t>(g.CO * OH * OW), 0.0f);
    for (std::int64_t co = 0; co < g.CO; ++co)
        for (std::int64_t oy = 0; oy < OH; ++oy)
            for (std::int64_t ox = 0; ox < OW; ++ox) {
                float acc = 0.0f;
                for (std::int64_t cl = 0; cl < cin_g; ++cl)
                    for (std::int64_t ky = 0; ky < g.KH; ++ky)
                        for (std::int64_t kx = 0; kx < g.KW; ++kx) {
                            const std::int64_t iy = oy * g.SH - g.PH + ky * g.DH;
                            const std::int64_t ix = ox * g.SW - g.PW + kx * g.DW;
                            if (iy < 0 || iy >= g.H || ix < 0 || ix >= g.W) continue;
                            const std::int64_t ci = co / cout_g * cin_g + cl;
                            acc += float(w[static_cast<std::size_t>(
                                       ((co * cin_g + cl) * g.KH + ky) * g.KW + kx)]) *
                                   x(ci, iy, ix);
                        }
                y[static_cast<std::size_t>((co * OH + oy) * OW + ox)] = acc;
            }
    return y;
}

// A recurrent MLP: Affine -> LIF (with a sparse recurrent Linear) -> Linear -> CubaLIF.
void write_mlp(const std::string& path, std::mt19937_64& rng, double density) {
    const std::int64_t hid = 128, out = 10;
    const double in = 64;
    ModelFile()
        .node("input", "Input", {{"shape", P({in})}})
        .node("fc1", "Affine",
              {{"weight", P(random_weights(rng, 128 * 64, density, 0.6), {128, 64})},
               {"bias", P(random_weights(rng, 128, 1.0, 0.1))}})
        .node("lif1", "LIF",
              {{"tau", P(std::vector<double>(128, 0.02))},
               {"r", P(1.0)},
               {"v_leak", P(0.0)},
               {"v_threshold", P(0.3)}})
        .node("rec", "Linear",
              {{"weight", P(random_weights(rng, 128 * 128, 0.1, 0.5), {hid, hid})}})
        .node("fc2", "Linear",
              {{"weight", P(random_weights(rng, 10 * 128, density, 0.5), {out, hid})}})
        .node("lif2", "CubaLIF",
              {{"tau_syn", P(0.005)},
               {"tau_mem", P(0.01)},
               {"r", P(1.0)},
               {"v_leak", P(0.0)},
               {"v_threshold", P(0.05)},
               {"w_in", P(1.0)}})
        .node("output", "Output")
        .chain({"input", "fc1", "lif1", "rec", "lif1", "fc2", "lif2", "output"})
        .write(path);
}

// Convolutions, pooling, flatten, several neuron types.
void write_convnet(const std::string& path, std::mt19937_64& rng) {
    ModelFile()
        .node("input", "Input", {{"shape", P({2, 8, 8})}})
        .node("conv1", "Conv2d",
              {{"weight", P(random_weights(rng, 4 * 2 * 9, 0.8, 0.8), {4, 2, 3, 3})},
               {"bias", P(random_weights(rng, 4, 1.0, 0.1))},
               {"padding", P(1.0)},
               {"stride", P(1.0)}})
        .node("sj1", "ternion.SJLIF", {{"tau", P(2.0)}, {"v_threshold", P(0.5)}})
        .node("pool1", "MaxPool2d", {{"kernel_size", P({2, 2})}, {"stride", P({2, 2})}})
        .node("conv2", "Conv2d",
              {{"weight", P(random_weights(rng, 6 * 2 * 9, 0.7, 0.8), {6, 2, 3, 3})},
               {"groups", P(2.0)},
               {"stride", P({2, 2})},
               {"padding", P({1, 1})},
               {"dilation", P(1.0)}})
        .node("if2", "IF", {{"r", P(1.0)}, {"v_threshold", P(0.4)}})
        .node("pool2", "AvgPool2d", {{"kernel_size", P(2.0)}, {"stride", P(1.0)}})
        .node("flat", "Flatten", {{"start_dim", P(0.0)}, {"end_dim", P(-1.0)}})
        .node("fc", "Affine",
              {{"weight", P(random_weights(rng, 5 * 6, 0.9, 1.0), {5, 6})},
               {"bias", P(std::vector<double>(5, 0.0))}})
        .node("lif", "LIF",
              {{"tau", P(0.01)}, {"r", P(1.0)}, {"v_leak", P(0.0)}, {"v_threshold", P(0.05)}})
        .node("output", "Output")
        .chain({"input", "conv1", "sj1", "pool1", "conv2", "if2", "pool2", "flat", "fc", "lif",
                "output"})
        .write(path);
}

// Tokens with ternary neurons and a residual join.
void write_tokens(const std::string& path, std::mt19937_64& rng) {
    ModelFile()
        .node("input", "Input", {{"shape", P({3, 4, 4})}})
        .node("tok", "ternion.Tokens")
        .node("lin", "Linear", {{"weight", P(random_weights(rng, 3 * 3, 1.0, 1.0), {3, 3})}})
        .node("tsn", "ternion.TernaryLIF", {{"decay", P(0.5)}, {"v_threshold", P(0.6)}})
        .node("res", "ternion.Identity")
        .node("mean", "ternion.TokenMean")
        .node("head", "Affine",
              {{"weight", P(random_weights(rng, 4 * 3, 1.0, 1.0), {4, 3})},
               {"bias", P(random_weights(rng, 4, 1.0, 0.1))}})
        .node("output", "Output")
        .chain({"input", "tok", "lin", "tsn", "res"})
        .chain({"tok", "res", "mean", "head", "output"})
        .write(path);
}

// A SpikingJelly LIF for the large single-sample layers: slow leak, low threshold.
std::map<std::string, Param> slow_lif() {
    return {{"tau", P(20.0)}, {"decay_input", P(0.0)}, {"v_threshold", P(0.5)}};
}

void check_same(const Outcome& a, const Outcome& b, bool compare_ops) {
    REQUIRE(a.capture.values.size() == b.capture.values.size());
    for (const auto& [key, v] : a.capture.values) {
        const auto& w = b.capture.values.at(key);
        REQUIRE(v.size() == w.size());
        for (std::size_t i = 0; i < v.size(); ++i)
            if (v[i] != w[i]) {
                FAIL("node " << a.graph->node(std::get<2>(key)).name() << " sample "
                             << std::get<0>(key) << " step " << std::get<1>(key) << " index " << i
                             << ": " << v[i] << " vs " << w[i]);
            }
    }
    for (int u = 0; u < a.graph->size(); ++u) {
        const auto& x = a.result.nodes[static_cast<std::size_t>(u)];
        const auto& y = b.result.nodes[static_cast<std::size_t>(u)];
        CHECK_MESSAGE(x.nonzero_out == y.nonzero_out, a.graph->node(u).name());
        if (compare_ops) CHECK(x.ops == y.ops);
    }
    CHECK(a.result.predictions == b.result.predictions);
}

}  // namespace

TEST_CASE("event-driven and dense engines give bit-identical outputs on random graphs") {
    for (std::uint64_t seed : {1u, 2u, 3u}) {
        CAPTURE(seed);
        std::mt19937_64 rng(seed);
        TempFile mlp, conv, tok, in1, in2, in3, in4;
        write_mlp(mlp.path(), rng, seed == 1 ? 0.1 : 0.7);  // compressed and dense storage
        write_convnet(conv.path(), rng);
        write_tokens(tok.path(), rng);
        write_spikes(in1.path(), random_spikes(rng, 3 * 30 * 64, 0.2, false), {3, 30, 64});
        write_spikes(in2.path(), random_spikes(rng, 2 * 12 * 128, 0.3, true), {2, 12, 2, 8, 8});
        write_spikes(in3.path(), random_spikes(rng, 2 * 10 * 48, 0.3, true), {2, 10, 3, 4, 4});
        std::vector<float> analog(2 * 64);
        std::uniform_real_distribution<float> u(-1.0f, 1.0f);
        for (auto& x : analog) x = u(rng);
        write_data(in4.path(), analog, {2, 64});
        UserLoadOptions lo;
        lo.dt = 1e-3;
        std::vector<std::pair<std::string, std::string>> cases{{mlp.path(), in1.path()},
                                                               {conv.path(), in2.path()},
                                                               {tok.path(), in3.path()},
                                                               {mlp.path(), in4.path()}};
        for (auto& [m, in] : cases) {
            const std::int64_t T = in == in4.path() ? 15 : 0;
            auto ev = run_file(m, in, Engine::event, 1, T, lo);
            auto de = run_file(m, in, Engine::dense, 1, T, lo);
            check_same(*ev, *de, false);
            std::uint64_t spikes = 0;
            for (int k = 0; k < ev->graph->size(); ++k)
                if (ev->graph->node(k).is_spiking())
                    spikes += ev->result.nodes[static_cast<std::size_t>(k)].nonzero_out;
            CHECK(spikes > 0);  // the comparison saw real activity
        }
    }
}

TEST_CASE("spikes and counts are identical for any thread count") {
    std::mt19937_64 rng(7);
    TempFile mlp, conv, in1, in2, big, bigin;
    write_mlp(mlp.path(), rng, 0.15);
    write_convnet(conv.path(), rng);
    write_spikes(in1.path(), random_spikes(rng, 6 * 20 * 64, 0.2, true), {6, 20, 64});
    write_spikes(in2.path(), random_spikes(rng, 5 * 6 * 128, 0.3, false), {5, 6, 2, 8, 8});
    // One large layer split into row blocks inside a single sample.
    const std::int64_t n_in = 3000, n_out = 9000;
    ModelFile()
        .node("input", "Input", {{"shape", P({double(n_in)})}})
        .node("fc", "Linear",
              {{"weight", P(random_weights(rng, n_in * n_out, 0.02, 1.0), {n_out, n_in})}})
        .node("lif", "ternion.SJLIF", slow_lif())
        .node("output", "Output")
        .chain({"input", "fc", "lif", "output"})
        .write(big.path());
    write_spikes(bigin.path(), random_spikes(rng, 1 * 25 * n_in, 0.05, false), {1, 25, n_in});
    UserLoadOptions lo;
    lo.dt = 1e-3;
    for (auto [m, in] : {std::pair{mlp.path(), in1.path()}, std::pair{conv.path(), in2.path()},
                         std::pair{big.path(), bigin.path()}}) {
        auto one = run_file(m, in, Engine::event, 1, 0, lo);
        for (int th : {2, 3}) {
            auto many = run_file(m, in, Engine::event, th, 0, lo);
            check_same(*one, *many, true);
        }
    }
}

TEST_CASE("outputs kept from the first step of a direct-encoded input equal recomputed ones") {
    // conv1 reads the Input node only: with direct encoding its output is computed once per
    // sample and kept; everything after the first neuron changes per step. Spikes, outputs and
    // every count (synapse pairs included) must equal a run that recomputes each step.
    std::mt19937_64 rng(9);
    TempFile conv, analog;
    write_convnet(conv.path(), rng);
    std::vector<float> a(3 * 2 * 8 * 8);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (auto& x : a) x = u(rng) < 0.2f ? 0.0f : u(rng);
    write_data(analog.path(), a, {3, 2, 8, 8});
    UserLoadOptions lo;
    lo.dt = 1e-3;
    for (auto eng : {Engine::event, Engine::dense}) {
        for (int th : {1, 2}) {
            CAPTURE(th);
            auto kept = run_file(conv.path(), analog.path(), eng, th, 5, lo);
            auto fresh = run_file(conv.path(), analog.path(), eng, th, 5, lo, Encoding::direct, 0,
                                  true, false);
            check_same(*kept, *fresh, true);
            for (std::size_t k = 0; k < kept->result.nodes.size(); ++k)
                CHECK(kept->result.nodes[k].synapses == fresh->result.nodes[k].synapses);
        }
    }
}

TEST_CASE("node by node and step by step schedules give the same outputs, states and counts") {
    // Feed-forward graphs run node-major by default (each node all T steps, then the next); the
    // recurrent MLP always runs step by step. Every node's output, active list, membrane and
    // counts at every step, every node's totals and the predictions must agree, in both
    // engines, on one and two threads, with and without outputs kept from the first step.
    std::mt19937_64 rng(13);
    TempFile conv, tok, mlp, in2, in3, in1, analog;
    write_convnet(conv.path(), rng);
    write_tokens(tok.path(), rng);
    write_mlp(mlp.path(), rng, 0.3);
    write_spikes(in2.path(), random_spikes(rng, 3 * 6 * 128, 0.3, false), {3, 6, 2, 8, 8});
    write_spikes(in3.path(), random_spikes(rng, 3 * 5 * 48, 0.3, true), {3, 5, 3, 4, 4});
    write_spikes(in1.path(), random_spikes(rng, 2 * 8 * 64, 0.2, false), {2, 8, 64});
    std::vector<float> a(3 * 2 * 8 * 8);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (auto& x : a) x = u(rng);
    write_data(analog.path(), a, {3, 2, 8, 8});
    UserLoadOptions lo;
    lo.dt = 1e-3;
    const std::vector<std::tuple<std::string, std::string, std::int64_t>> cases{
        {conv.path(), in2.path(), 0},
        {tok.path(), in3.path(), 0},
        {conv.path(), analog.path(), 4},
        {mlp.path(), in1.path(), 0}};
    for (const auto& [m, in, T] : cases)
        for (auto eng : {Engine::event, Engine::dense})
            for (int th : {1, 2})
                for (bool keep : {true, false}) {
                    CAPTURE(m);
                    CAPTURE(th);
                    CAPTURE(keep);
                    auto nm =
                        run_file(m, in, eng, th, T, lo, Encoding::direct, 0, true, keep, true);
                    auto sm =
                        run_file(m, in, eng, th, T, lo, Encoding::direct, 0, true, keep, false);
                    check_same(*nm, *sm, true);
                    CHECK(nm->capture.actives == sm->capture.actives);
                    CHECK(nm->capture.membrane == sm->capture.membrane);
                    CHECK(nm->capture.step_ops == sm->capture.step_ops);
                    CHECK(nm->result.output_sum == sm->result.output_sum);
                    for (std::size_t k = 0; k < nm->result.nodes.size(); ++k) {
                        CHECK(nm->result.nodes[k].synapses == sm->result.nodes[k].synapses);
                        CHECK(nm->result.nodes[k].nonzero_in == sm->result.nodes[k].nonzero_in);
                    }
                }
}

TEST_CASE("MaxPool2d of binary spikes, event by event, equals the window scan") {
    // Kernels, strides and paddings where an input reaches up to 1, 4 and 9 outputs,
    // and a stride past the kernel (some inputs reach none: the window scan path).
    struct Pool {
        double k, s, p;
    };
    std::mt19937_64 rng(17);
    for (const Pool& pl : {Pool{3, 2, 1}, Pool{2, 2, 0}, Pool{3, 1, 1}, Pool{3, 3, 0},
                           Pool{2, 1, 0}, Pool{2, 3, 0}, Pool{3, 2, 0}}) {
        CAPTURE(pl.k);
        CAPTURE(pl.s);
        CAPTURE(pl.p);
        const std::int64_t C = 3, H = 9, W = 11;
        TempFile model, spikes;
        ModelFile()
            .node("input", "Input", {{"shape", P({double(C), double(H), double(W)})}})
            .node("pool", "MaxPool2d",
                  {{"kernel_size", P({pl.k, pl.k})},
                   {"stride", P({pl.s, pl.s})},
                   {"padding", P({pl.p, pl.p})}})
            .node("output", "Output")
            .edge("input", "pool")
            .edge("pool", "output")
            .write(model.path());
        const auto sp = random_spikes(rng, static_cast<std::size_t>(2 * C * H * W), 0.15, false);
        write_spikes(spikes.path(), sp, {1, 2, C, H, W});
        const auto k = static_cast<std::int64_t>(pl.k), s = static_cast<std::int64_t>(pl.s),
                   p = static_cast<std::int64_t>(pl.p);
        const std::int64_t OH = (H + 2 * p - k) / s + 1, OW = (W + 2 * p - k) / s + 1;
        auto ev = run_file(model.path(), spikes.path(), Engine::event);
        auto de = run_file(model.path(), spikes.path(), Engine::dense);
        check_same(*ev, *de, true);
        for (std::int64_t t = 0; t < 2; ++t) {
            std::vector<float> want(static_cast<std::size_t>(C * OH * OW), 0.0f);
            for (std::int64_t c = 0; c < C; ++c)
                for (std::int64_t oy = 0; oy < OH; ++oy)
                    for (std::int64_t ox = 0; ox < OW; ++ox)
                        for (std::int64_t ky = 0; ky < k; ++ky)
                            for (std::int64_t kx = 0; kx < k; ++kx) {
                                const std::int64_t iy = oy * s - p + ky, ix = ox * s - p + kx;
                                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                                if (sp[static_cast<std::size_t>(((t * C + c) * H + iy) * W + ix)])
                                    want[static_cast<std::size_t>((c * OH + oy) * OW + ox)] = 1.0f;
                            }
            CHECK(output_of(*ev, "pool", 0, t) == want);
        }
    }
}

TEST_CASE("unread index lists are skipped without changing a count or a spike") {
    // Unobserved, a Linear whose only consumer is a neuron only counts its non-zeros; recorded,
    // it lists them. Every node's counts, outputs and predictions must agree, on one thread and
    // with rows split across two, in both engines. The big network has a Linear feeding two
    // neurons, and one feeding a neuron and a sum (which needs the list).
    std::mt19937_64 rng(5);
    TempFile mlp, tok, in1, in3, big, bigin;
    write_mlp(mlp.path(), rng, 0.15);
    write_tokens(tok.path(), rng);
    write_spikes(in1.path(), random_spikes(rng, 4 * 10 * 64, 0.2, true), {4, 10, 64});
    write_spikes(in3.path(), random_spikes(rng, 3 * 5 * 48, 0.3, true), {3, 5, 3, 4, 4});
    const std::int64_t n_in = 2000, n_out = 6000;
    ModelFile()
        .node("input", "Input", {{"shape", P({double(n_in)})}})
        .node("fc", "Linear",
              {{"weight", P(random_weights(rng, n_in * n_out, 0.03, 1.0), {n_out, n_in})}})
        .node("lif_a", "ternion.SJLIF", slow_lif())
        .node("lif_b", "ternion.SJLIF", slow_lif())
        .node("fc2", "Linear",
              {{"weight", P(random_weights(rng, n_out * n_out, 0.01, 1.0), {n_out, n_out})}})
        .node("lif_c", "ternion.SJLIF", slow_lif())
        .node("both", "ternion.Identity", {})
        .node("output", "Output")
        .edge("input", "fc")
        .edge("fc", "lif_a")
        .edge("fc", "lif_b")
        .edge("lif_a", "fc2")
        .edge("fc2", "lif_c")
        .edge("fc2", "both")
        .edge("lif_b", "both")
        .edge("both", "output")
        .write(big.path());
    write_spikes(bigin.path(), random_spikes(rng, 1 * 8 * n_in, 0.05, false), {1, 8, n_in});
    UserLoadOptions lo;
    lo.dt = 1e-3;
    for (auto [m, in] : {std::pair{mlp.path(), in1.path()}, std::pair{tok.path(), in3.path()},
                         std::pair{big.path(), bigin.path()}})
        for (Engine e : {Engine::event, Engine::dense})
            for (int th : {1, 2}) {
                // clang 14 cannot capture structured bindings in lambdas (INFO/CAPTURE)
                const std::string& model = m;
                CAPTURE(model);
                CAPTURE(th);
                auto seen = run_file(m, in, e, th, 0, lo);
                auto unseen = run_file(m, in, e, th, 0, lo, Encoding::direct, 0, false);
                for (int u = 0; u < seen->graph->size(); ++u) {
                    const auto& x = seen->result.nodes[static_cast<std::size_t>(u)];
                    const auto& y = unseen->result.nodes[static_cast<std::size_t>(u)];
                    CAPTURE(seen->graph->node(u).name());
                    CHECK(x.nonzero_out == y.nonzero_out);
                    CHECK(x.nonzero_in == y.nonzero_in);
                    CHECK(x.input_ternary == y.input_ternary);
                    CHECK(x.ops == y.ops);
                }
                CHECK(seen->result.predictions == unseen->result.predictions);
                CHECK(seen->result.output_sum == unseen->result.output_sum);
                // The comparison saw real activity in the layers that skip their lists.
                const int fc = seen->graph->find("fc");
                if (fc >= 0)
                    CHECK(seen->result.nodes[static_cast<std::size_t>(fc)].nonzero_out > 0);
            }
}

TEST_CASE("each sample starts from fresh state, whatever ran before it on the same thread") {
    // One thread reuses its node states from sample to sample (reset in place); running a sample
    // alone must give exactly what it gives after the others. LIF, CubaLIF (two state
    // variables), a recurrent edge, ternary neurons on tokens, and the bundled SSA and BSA
    // Transformers (attention nodes with four neuron states each).
    std::mt19937_64 rng(11);
    TempFile mlp, tok, in1, in3;
    write_mlp(mlp.path(), rng, 0.7);
    write_tokens(tok.path(), rng);
    write_spikes(in1.path(), random_spikes(rng, 4 * 30 * 64, 0.3, false), {4, 30, 64});
    write_spikes(in3.path(), random_spikes(rng, 3 * 10 * 48, 0.3, true), {3, 10, 3, 4, 4});
    UserLoadOptions lo;
    lo.dt = 1e-3;
    const std::string bundled = std::string(TERNION_SOURCE_DIR) + "/models/bundled/";
    const std::string digits = bundled + "digits_test.h5";
    for (auto [m, in] : {std::pair{mlp.path(), in1.path()}, std::pair{tok.path(), in3.path()},
                         std::pair{bundled + "ssa_digits.h5", digits},
                         std::pair{bundled + "bsa_digits.h5", digits}}) {
        // clang 14 cannot capture structured bindings in lambdas (INFO/CAPTURE)
        const std::string& model = m;
        CAPTURE(model);
        const std::int64_t T = in == digits ? 4 : 0;  // analog digits: direct encoding, 4 steps
        std::int64_t S = 0;
        auto all = std::make_unique<Outcome>();
        {
            LoadReport rep;
            all->graph = load_model(m, lo, rep);
            auto src = open_input(in, InputOptions{Encoding::direct, T});
            S = std::min<std::int64_t>(4, src->num_samples());
            REQUIRE(S >= 3);
            RunConfig cfg;
            cfg.timesteps = T;
            cfg.num_samples = S;
            cfg.observer = &all->capture;
            all->result = run(*all->graph, *src, cfg);
        }
        for (std::int64_t k = S - 1; k >= 0; --k) {
            CAPTURE(k);
            LoadReport rep;
            auto g = load_model(m, lo, rep);
            auto src = open_input(in, InputOptions{Encoding::direct, T});
            RunConfig cfg;
            cfg.timesteps = T;
            cfg.first_sample = k;
            cfg.num_samples = 1;
            CaptureAll cap;
            cfg.observer = &cap;
            run(*g, *src, cfg);
            int diffs = 0, seen = 0;
            for (const auto& [key, v] : all->capture.values)
                if (std::get<0>(key) == k) {
                    ++seen;
                    diffs += cap.values.at(key) != v;
                }
            CHECK(seen > 0);
            CHECK(diffs == 0);
        }
    }
}

TEST_CASE("Linear op counts: each spike costs the non-zero weights of its column") {
    std::mt19937_64 rng(11);
    TempFile m, in;
    const int n_in = 40, n_out = 25, T = 12;
    auto w = random_weights(rng, n_in * n_out, 0.3, 1.0);
    ModelFile()
        .node("input", "Input", {{"shape", P({double(n_in)})}})
        .node("fc", "Linear", {{"weight", P(w, {n_out, n_in})}})
        .node("output", "Output")
        .edge("input", "fc")
        .edge("fc", "output")
        .write(m.path());
    auto s = random_spikes(rng, 2 * T * n_in, 0.25, true);
    write_spikes(in.path(), s, {2, T, n_in});
    std::uint64_t expect = 0, spikes = 0;
    for (std::size_t k = 0; k < s.size(); ++k) {
        if (!s[k]) continue;
        ++spikes;
        const int c = static_cast<int>(k % n_in);
        for (int r = 0; r < n_out; ++r) expect += w[static_cast<std::size_t>(r * n_in + c)] != 0.0;
    }
    auto o = run_file(m.path(), in.path());
    const auto& st = o->result.nodes[static_cast<std::size_t>(o->graph->find("fc"))];
    CHECK(st.ops.ac == expect);  // -1 spikes count one AC each, like +1
    CHECK(st.ops.mac == 0);
    CHECK(st.nonzero_in == spikes);
    CHECK(st.ops.weight_read_bytes == expect * 4);  // 30% density: dense columns
    // The dense engine multiplies every weight but books the same events.
    auto d = run_file(m.path(), in.path(), Engine::dense);
    const auto& ds = d->result.nodes[static_cast<std::size_t>(d->graph->find("fc"))];
    CHECK(ds.ops == st.ops);
    CHECK(ds.synapses == st.synapses);
    CHECK(st.synapses.pairs_ternary == expect);  // ternary input: every pair is an AC
    CHECK(st.synapses.pairs_other == 0);
}

TEST_CASE("Conv2d: hand-computed output and fan-out counts at the borders") {
    TempFile m, in;
    // 1x3x3 input, one 3x3 kernel with weights 1..9, padding 1: output[i][j] = sum of the kernel
    // entries that overlap active pixels.
    std::vector<double> k{1, 2, 3, 4, 5, 6, 7, 8, 9};
    ModelFile()
        .node("input", "Input", {{"shape", P({1, 3, 3})}})
        .node("conv", "Conv2d", {{"weight", P(k, {1, 1, 3, 3})}, {"padding", P(1.0)}})
        .node("output", "Output")
        .edge("input", "conv")
        .edge("conv", "output")
        .write(m.path());
    // Single spike at the centre (1,1): output (oy,ox) gets w[1 - oy + 1][1 - ox + 1].
    std::vector<std::int8_t> s(9, 0);
    s[4] = 1;
    write_spikes(in.path(), s, {1, 1, 1, 3, 3});
    auto o = run_file(m.path(), in.path());
    CHECK(output_of(*o, "conv", 0, 0) == std::vector<float>{9, 8, 7, 6, 5, 4, 3, 2, 1});
    CHECK(o->result.nodes[static_cast<std::size_t>(o->graph->find("conv"))].ops.ac == 9);
    // A corner spike (0,0) reaches only the 4 outputs whose window covers it.
    s.assign(9, 0);
    s[0] = -1;
    TempFile in2;
    write_spikes(in2.path(), s, {1, 1, 1, 3, 3});
    auto c = run_file(m.path(), in2.path());
    CHECK(output_of(*c, "conv", 0, 0) == std::vector<float>{-5, -4, 0, -2, -1, 0, 0, 0, 0});
    CHECK(c->result.nodes[static_cast<std::size_t>(c->graph->find("conv"))].ops.ac == 4);
}

TEST_CASE("pooling, flatten, tokens and token mean by hand") {
    TempFile m, in;
    ModelFile()
        .node("input", "Input", {{"shape", P({1, 4, 4})}})
        .node("max", "MaxPool2d", {{"kernel_size", P(2.0)}})
        .node("avg", "AvgPool2d", {{"kernel_size", P(2.0)}})
        .node("sum", "SumPool2d", {{"kernel_size", P(2.0)}, {"stride", P(2.0)}})
        .node("tok", "ternion.Tokens")
        .node("mean", "ternion.TokenMean")
        .node("flat", "Flatten")
        .node("out", "Output")
        .edge("input", "max")
        .edge("input", "avg")
        .edge("input", "sum")
        .edge("input", "tok")
        .edge("tok", "mean")
        .edge("max", "flat")
        .edge("flat", "out")
        .write(m.path());
    std::vector<std::int8_t> s{1, 0, 0, 0,   //
                               1, 1, 0, -1,  //
                               0, 0, 0, 0,   //
                               0, 1, 1, 1};
    write_spikes(in.path(), s, {1, 1, 1, 4, 4});
    auto o = run_file(m.path(), in.path());
    CHECK(output_of(*o, "max", 0, 0) == std::vector<float>{1, 0, 1, 1});
    CHECK(output_of(*o, "avg", 0, 0) == std::vector<float>{0.75f, -0.25f, 0.25f, 0.5f});
    CHECK(output_of(*o, "sum", 0, 0) == std::vector<float>{3, -1, 1, 2});
    CHECK(output_of(*o, "tok", 0, 0) == std::vector<float>(s.begin(), s.end()));  // one channel
    CHECK(output_of(*o, "mean", 0, 0) == std::vector<float>{5.0f / 16.0f});
    CHECK(o->graph->node(o->graph->find("flat")).out_shape() == Shape{4});
}

TEST_CASE(
    "MaxPool2d 3x3, stride 2, padding 1 (Spikformer's) on binary and ternary spikes: both "
    "engines equal the window maxima, comparisons one fewer than each window's inputs") {
    // 3 channels of 9x7: odd sizes, so the last windows overhang the padding on both axes.
    const std::int64_t C = 3, H = 9, W = 7, OH = 5, OW = 4;
    TempFile m;
    ModelFile()
        .node("input", "Input", {{"shape", P({double(C), double(H), double(W)})}})
        .node("max", "MaxPool2d",
              {{"kernel_size", P(3.0)}, {"stride", P(2.0)}, {"padding", P(1.0)}})
        .node("out", "Output")
        .edge("input", "max")
        .edge("max", "out")
        .write(m.path());
    std::uint64_t cmps = 0;  // per channel: windows clipped by padding read fewer inputs
    for (std::int64_t oy = 0; oy < OH; ++oy)
        for (std::int64_t ox = 0; ox < OW; ++ox) {
            const auto rows = std::min(oy * 2 + 2, H) - std::max<std::int64_t>(oy * 2 - 1, 0);
            const auto cols = std::min(ox * 2 + 2, W) - std::max<std::int64_t>(ox * 2 - 1, 0);
            cmps += static_cast<std::uint64_t>(rows * cols - 1);
        }
    std::mt19937_64 rng(11);
    for (bool ternary : {false, true})
        for (double rate : {0.05, 0.3}) {
            CAPTURE(ternary);
            CAPTURE(rate);
            const auto s = random_spikes(rng, static_cast<std::size_t>(C * H * W), rate, ternary);
            std::vector<float> want(static_cast<std::size_t>(C * OH * OW));
            for (std::int64_t c = 0; c < C; ++c)
                for (std::int64_t oy = 0; oy < OH; ++oy)
                    for (std::int64_t ox = 0; ox < OW; ++ox) {
                        float v = -2.0f;
                        for (std::int64_t y = std::max<std::int64_t>(oy * 2 - 1, 0);
                             y < std::min(oy * 2 + 2, H); ++y)
                            for (std::int64_t x = std::max<std::int64_t>(ox * 2 - 1, 0);
                                 x < std::min(ox * 2 + 2, W); ++x)
                                v = std::max(
                                    v, float(s[static_cast<std::size_t>((c * H + y) * W + x)]));
                        want[static_cast<std::size_t>((c * OH + oy) * OW + ox)] = v;
                    }
            TempFile in;
            write_spikes(in.path(), s, {1, 1, C, H, W});
            for (auto eng : {Engine::event, Engine::dense}) {
                CAPTURE(engine_name(eng));
                auto o = run_file(m.path(), in.path(), eng);
                CHECK(output_of(*o, "max", 0, 0) == want);
                CHECK(o->result.nodes[static_cast<std::size_t>(o->graph->find("max"))].ops.cmp ==
                      cmps * C);
            }
        }
}

TEST_CASE("a recurrent edge is delayed one step and carries the Affine's bias at t = 0") {
    TempFile m, in;
    // IF with r = 1, th = 1, input 0.5; the loop adds bias 0.7 (weight 0): v(0) = 1.2 fires at
    // t = 0 only if the delayed edge already carries the bias then.
    ModelFile()
        .node("input", "Input", {{"shape", P({1.0})}})
        .node("if", "IF", {{"r", P(1.0)}, {"v_threshold", P(1.0)}})
        .node("rec", "Affine", {{"weight", P({0.0}, {1, 1})}, {"bias", P({0.7})}})
        .node("output", "Output")
        .chain({"input", "if", "rec", "if", "output"})
        .write(m.path());
    write_data(in.path(), {0.5f}, {1, 1});
    auto o = run_file(m.path(), in.path(), Engine::event, 1, 4);
    const Graph& g = *o->graph;
    int delayed = 0;
    for (auto& e : g.edges()) delayed += e.delayed;
    CHECK(delayed == 1);
    // v: 1.2 -> spike, 0 + 1.2 -> spike ... every step fires.
    for (int t = 0; t < 4; ++t) CHECK(output_of(*o, "if", 0, t)[0] == 1.0f);
}

TEST_CASE("Delay shifts by round(delay / dt) steps; Scale multiplies elementwise") {
    TempFile m, in;
    ModelFile()
        .node("input", "Input", {{"shape", P({2.0})}})
        .node("delay", "Delay", {{"delay", P({0.002, 0.0})}})
        .node("scale", "Scale", {{"scale", P({2.0, -0.5})}})
        .node("output", "Output")
        .chain({"input", "delay", "scale", "output"})
        .write(m.path());
    std::vector<std::int8_t> s{1, 1, 0, 0, 0, 0, 0, 0};  // both inputs spike at t = 0
    write_spikes(in.path(), s, {1, 4, 2});
    UserLoadOptions lo;
    lo.dt = 1e-3;
    auto o = run_file(m.path(), in.path(), Engine::event, 1, 0, lo);
    CHECK(output_of(*o, "scale", 0, 0) == std::vector<float>{0.0f, -0.5f});
    CHECK(output_of(*o, "scale", 0, 1) == std::vector<float>{0.0f, 0.0f});
    CHECK(output_of(*o, "scale", 0, 2) == std::vector<float>{2.0f, 0.0f});
}

TEST_CASE("prediction is the argmax of the output summed over time") {
    TempFile m, in;
    ModelFile()
        .node("input", "Input", {{"shape", P({3.0})}})
        .node("output", "Output")
        .edge("input", "output")
        .write(m.path());
    // Counts over time: [1, 3, 2] -> class 1; second sample [2, 0, 2] -> tie, lowest index 0.
    std::vector<std::int8_t> s{1, 1, 0, 0, 1, 1, 0, 1, 1,  //
                               1, 0, 1, 1, 0, 1, 0, 0, 0};
    write_spikes(in.path(), s, {2, 3, 3});
    auto o = run_file(m.path(), in.path());
    CHECK(o->result.predictions == std::vector<std::int64_t>{1, 0});
}

TEST_CASE("coincident spikes (integer inputs) cost |x| ACs per weight; analog inputs cost MACs") {
    TempFile m, in, an;
    // The input reaches the Identity directly and through a copy: a spike arrives as the value 2
    // (a duplicate edge would be refused).
    ModelFile()
        .node("input", "Input", {{"shape", P({3.0})}})
        .node("copy", "ternion.Identity")
        .node("sum", "ternion.Identity")
        .node("fc", "Linear", {{"weight", P({1, 0, 2, 0, 3, 4}, {2, 3})}})
        .node("output", "Output")
        .edge("input", "copy")
        .edge("input", "sum")
        .chain({"copy", "sum", "fc", "output"})
        .write(m.path());
    write_spikes(in.path(), {1, 0, -1}, {1, 1, 3});
    auto o = run_file(m.path(), in.path());
    const auto& st = o->result.nodes[static_cast<std::size_t>(o->graph->find("fc"))];
    // Inputs (2, 0, -2): column 0 has 1 non-zero weight, column 2 has 2: 2*1 + 2*2 = 6 ACs.
    CHECK(output_of(*o, "fc", 0, 0) == std::vector<float>{-2.0f, -8.0f});
    CHECK(st.ops.ac == 6);
    CHECK(st.ops.mac == 0);
    CHECK_FALSE(st.input_ternary);  // NeuroBench's rule would call this layer MAC
    write_data(an.path(), {0.25f, 0.0f, 1.0f}, {1, 3});  // summed twice: (0.5, 0, 2)
    auto a = run_file(m.path(), an.path(), Engine::event, 1, 1);
    const auto& sa = a->result.nodes[static_cast<std::size_t>(a->graph->find("fc"))];
    CHECK(sa.ops.mac == 3);  // 0.5 is analog: the whole layer input is priced as MACs
    CHECK(sa.ops.ac == 0);
}

TEST_CASE("Conv1d with stride and dilation by hand") {
    TempFile m, in;
    // One channel, kernel (1, -1, 2), dilation 2, stride 2, no padding, length 9:
    // y[o] = x[2o] - x[2o + 2] + 2 x[2o + 4], o = 0..2.
    ModelFile()
        .node("input", "Input", {{"shape", P({1, 9})}})
        .node("conv", "Conv1d",
              {{"weight", P({1, -1, 2}, {1, 1, 3})},
               {"stride", P(2.0)},
               {"dilation", P(2.0)},
               {"padding", P(0.0)}})
        .node("output", "Output")
        .edge("input", "conv")
        .edge("conv", "output")
        .write(m.path());
    std::vector<std::int8_t> x{1, 0, 1, 1, -1, 0, 1, 0, 1};
    write_spikes(in.path(), x, {1, 1, 1, 9});
    for (auto eng : {Engine::event, Engine::dense}) {
        auto o = run_file(m.path(), in.path(), eng);
        // o=0: 1 - 1 + 2(-1) = -2; o=1: 1 - (-1) + 2(1) = 4; o=2: -1 - 1 + 2(1) = 0.
        CHECK(output_of(*o, "conv", 0, 0) == std::vector<float>{-2.0f, 4.0f, 0.0f});
    }
}

TEST_CASE(
    "Conv2d with groups, stride, dilation and a non-square kernel: both engines equal a "
    "direct sum in (channel, row, column) order") {
    // 4 input channels in 2 groups, 6 outputs, kernel 3x2, stride (2, 1), dilation (1, 2),
    // padding (1, 2) on a 7x6 input; analog inputs (half of them zero) and +-1 spikes.
    const ConvGeometry g{4, 7, 6, 6, 3, 2, 2, 2, 1, 1, 2, 1, 2};
    const std::int64_t C = g.C, H = g.H, W = g.W, CO = g.CO, KH = g.KH, KW = g.KW, G = g.G;
    std::mt19937_64 rng(5);
    auto w = random_weights(rng, CO * (C / G) * KH * KW, 0.8, 1.0);
    TempFile model, analog, spikes;
    ModelFile()
        .node("input", "Input", {{"shape", P({double(C), double(H), double(W)})}})
        .node("conv", "Conv2d",
              {{"weight", P(w, {CO, C / G, KH, KW})},
               {"groups", P(double(G))},
               {"stride", P({double(g.SH), double(g.SW)})},
               {"dilation", P({double(g.DH), double(g.DW)})},
               {"padding", P({double(g.PH), double(g.PW)})}})
        .node("output", "Output")
        .edge("input", "conv")
        .edge("conv", "output")
        .write(model.path());
    std::vector<float> a(static_cast<std::size_t>(C * H * W));
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (auto& x : a) x = u(rng) < 0.0f ? u(rng) : 0.0f;
    write_data(analog.path(), a, {1, C, H, W});
    auto sp = random_spikes(rng, C * H * W, 0.3, true);
    write_spikes(spikes.path(), sp, {1, 1, C, H, W});
    const auto ya = conv_reference(g, w, [&](std::int64_t c, std::int64_t y, std::int64_t x) {
        return a[static_cast<std::size_t>((c * H + y) * W + x)];
    });
    const auto ys = conv_reference(g, w, [&](std::int64_t c, std::int64_t y, std::int64_t x) {
        return float(sp[static_cast<std::size_t>((c * H + y) * W + x)]);
    });
    for (auto eng : {Engine::event, Engine::dense}) {
        CAPTURE(engine_name(eng));
        CHECK(output_of(*run_file(model.path(), analog.path(), eng, 1, 2), "conv", 0, 1) == ya);
        CHECK(output_of(*run_file(model.path(), spikes.path(), eng), "conv", 0, 0) == ys);
    }
}

TEST_CASE(
    "stride-1 convolutions on spike maps (the direct tile, the gather and the scatter) equal a "
    "direct sum bit for bit") {
    // Densities below and above the switch to the direct path; output channels not a multiple
    // of its 8-channel tiles, widths across its 32-position tiles, groups, asymmetric padding
    // and non-square kernels, and Conv1d (H = 1). The 8x8 and 23x8 maps (80 and 230 padded
    // positions) take the 4-channel, 5-vector tiles, the second with a partial last tile; the
    // 16- and 32-wide outputs take vectors along output rows (5 x 1 of them: a partial tile).
    // The last two are depthwise (one output channel a group: the single-channel tile).
    const ConvGeometry cases[] = {
        {3, 9, 37, 12, 3, 3, 1, 1, 1, 1, 1, 1, 1}, {4, 8, 8, 10, 3, 3, 1, 1, 1, 1, 1, 1, 1},
        {3, 5, 16, 12, 3, 3, 1, 1, 1, 1, 1, 1, 1}, {2, 4, 33, 9, 2, 2, 1, 1, 1, 1, 1, 0, 0},
        {3, 23, 8, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1},  {4, 6, 5, 10, 3, 2, 2, 1, 1, 1, 1, 1, 0},
        {5, 8, 8, 17, 1, 1, 1, 1, 1, 1, 1, 0, 0},  {2, 5, 11, 9, 2, 4, 1, 1, 1, 1, 1, 0, 3},
        {6, 1, 40, 8, 1, 5, 2, 1, 1, 1, 1, 0, 2},  {6, 9, 20, 6, 3, 3, 6, 1, 1, 1, 1, 1, 1},
        {8, 12, 12, 8, 7, 7, 8, 1, 1, 1, 1, 3, 3}};
    std::mt19937_64 rng(11);
    for (const auto& g : cases) {
        const bool one_d = g.H == 1;
        CAPTURE(g.C);
        auto w = random_weights(rng, static_cast<std::size_t>(g.CO * (g.C / g.G) * g.KH * g.KW),
                                0.8, 1.0);
        Shape wd = one_d ? Shape{g.CO, g.C / g.G, g.KW} : Shape{g.CO, g.C / g.G, g.KH, g.KW};
        TempFile model;
        ModelFile()
            .node("input", "Input",
                  {{"shape", one_d ? P({double(g.C), double(g.W)})
                                   : P({double(g.C), double(g.H), double(g.W)})}})
            .node("conv", one_d ? "Conv1d" : "Conv2d",
                  {{"weight", P(w, wd)},
                   {"groups", P(double(g.G))},
                   {"padding", one_d ? P({double(g.PW)}) : P({double(g.PH), double(g.PW)})}})
            .node("output", "Output")
            .edge("input", "conv")
            .edge("conv", "output")
            .write(model.path());
        // Ternary spikes take the scatter or the direct tile; binary ones the gather (one
        // group) or the direct tile.
        for (double rate : {0.03, 0.25, 0.5})
            for (bool ternary : {true, false}) {
                CAPTURE(rate);
                CAPTURE(ternary);
                TempFile spikes;
                auto sp =
                    random_spikes(rng, static_cast<std::size_t>(g.C * g.H * g.W), rate, ternary);
                Shape sd = one_d ? Shape{1, 1, g.C, g.W} : Shape{1, 1, g.C, g.H, g.W};
                write_spikes(spikes.path(), sp, sd);
                const auto want =
                    conv_reference(g, w, [&](std::int64_t c, std::int64_t y, std::int64_t x) {
                        return float(sp[static_cast<std::size_t>((c * g.H + y) * g.W + x)]);
                    });
                for (auto eng : {Engine::event, Engine::dense}) {
                    CAPTURE(engine_name(eng));
                    CHECK(output_of(*run_file(model.path(), spikes.path(), eng), "conv", 0, 0) ==
                          want);
                }
            }
        // Analog inputs and small integers (a residual stream's sums of spikes), sparse and
        // dense: the scatter's multiply-add rows, or the direct tile's multiply-then-add, whose
        // products round as the scatter's.
        std::uniform_real_distribution<float> u(-1.0f, 1.0f);
        std::uniform_int_distribution<int> k(-3, 3);
        for (double zero : {0.5, 0.05})
            for (bool integral : {false, true}) {
                CAPTURE(zero);
                CAPTURE(integral);
                TempFile analog;
                std::vector<float> a(static_cast<std::size_t>(g.C * g.H * g.W));
                for (auto& x : a)
                    x = (u(rng) + 1.0f) / 2.0f < zero ? 0.0f : integral ? float(k(rng)) : u(rng);
                write_data(analog.path(), a, one_d ? Shape{1, g.C, g.W} : Shape{1, g.C, g.H, g.W});
                const auto want =
                    conv_reference(g, w, [&](std::int64_t c, std::int64_t y, std::int64_t x) {
                        return a[static_cast<std::size_t>((c * g.H + y) * g.W + x)];
                    });
                for (auto eng : {Engine::event, Engine::dense}) {
                    CAPTURE(engine_name(eng));
                    CHECK(output_of(*run_file(model.path(), analog.path(), eng, 1, 2), "conv", 0,
                                    1) == want);
                }
            }
    }
}

TEST_CASE("multi-token Linear on dense weights: register kernel equals the dense engine") {
    // Sizes exercise every path of the kernel: 200 inputs span several 64-channel chunks,
    // 150 outputs are two full 64-row groups and a partial one; inputs arrive as +-1 spikes,
    // as integers (+-2 from a residual of the input with itself) and as analog values.
    const std::int64_t tokens = 5, in = 200, out = 150;
    std::mt19937_64 rng(11);
    TempFile model, spikes, analog;
    auto w1 = random_weights(rng, out * in, 0.9, 1.0);
    ModelFile()
        .node("input", "Input", {{"shape", P({double(tokens), double(in)})}})
        .node("fa", "Affine",
              {{"weight", P(w1, {out, in})}, {"bias", P(random_weights(rng, out, 1.0, 0.3))}})
        .node("copy", "ternion.Identity")
        .node("twice", "ternion.Identity")
        .node("fb", "Linear", {{"weight", P(random_weights(rng, out * in, 0.9, 1.0), {out, in})}})
        .node("lif_a", "ternion.SJLIF", {{"tau", P(2.0)}, {"v_threshold", P(0.5)}})
        .node("lif_b", "ternion.SJLIF", {{"tau", P(2.0)}, {"v_threshold", P(0.5)}})
        .node("join", "ternion.Identity")
        .node("output", "Output")
        .edge("input", "fa")
        .edge("input", "copy")
        .edge("input", "twice")
        .edge("copy", "twice")
        .edge("twice", "fb")
        .edge("fa", "lif_a")
        .edge("fb", "lif_b")
        .edge("lif_a", "join")
        .edge("lif_b", "join")
        .edge("join", "output")
        .write(model.path());
    const std::int64_t samples = 2, T = 6;
    auto sp = random_spikes(rng, samples * T * tokens * in, 0.2, true);
    write_spikes(spikes.path(), sp, {samples, T, tokens, in});
    std::vector<float> a(static_cast<std::size_t>(samples * tokens * in));
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (auto& x : a) x = u(rng) < 0.5f ? u(rng) : 0.0f;
    write_data(analog.path(), a, {samples, tokens, in});
    UserLoadOptions lo;
    lo.dt = 1e-3;
    for (const auto& input : {spikes.path(), analog.path()}) {
        const std::int64_t steps = input == analog.path() ? T : 0;
        auto de = run_file(model.path(), input, Engine::dense, 1, steps, lo);
        auto ev1 = run_file(model.path(), input, Engine::event, 1, steps, lo);
        check_same(*ev1, *de, false);
        for (int th : {2, 3})
            check_same(*ev1, *run_file(model.path(), input, Engine::event, th, steps, lo), true);
        CHECK(ev1->result.nodes[static_cast<std::size_t>(ev1->graph->find("lif_a"))].nonzero_out >
              0);
    }
    // Counts: every +-1 input costs its column's non-zero weights (fa); every +-2 input twice
    // that (fb sees the residual sum): closed forms from the input file itself.
    std::vector<std::uint64_t> nnz(static_cast<std::size_t>(in), 0);
    for (std::int64_t r = 0; r < out; ++r)
        for (std::int64_t c = 0; c < in; ++c)
            if (w1[static_cast<std::size_t>(r * in + c)] != 0.0) ++nnz[static_cast<std::size_t>(c)];
    std::uint64_t expect = 0;
    for (std::size_t i = 0; i < sp.size(); ++i)
        if (sp[i] != 0) expect += nnz[i % static_cast<std::size_t>(in)];
    auto ev = run_file(model.path(), spikes.path(), Engine::event, 2, 0, lo);
    CHECK(ev->result.nodes[static_cast<std::size_t>(ev->graph->find("fa"))].ops.ac == expect);
    CHECK(ev->result.nodes[static_cast<std::size_t>(ev->graph->find("fa"))].ops.mac == 0);
}

TEST_CASE("bytes per synapse: one rule for every weight storage") {
    using V = WeightStorage::Values;
    CHECK(bytes_per_synapse({}) == 4);                       // dense float32
    CHECK(bytes_per_synapse({true, V::float32}) == 2 + 4);   // row index + value
    CHECK(bytes_per_synapse({true, V::codebook}) == 2 + 1);  // row index + codebook index
    CHECK(bytes_per_synapse({true, V::one_value}) == 2);     // row index only
}
