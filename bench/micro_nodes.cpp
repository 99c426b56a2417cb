// One time step of each spiking attention node (SSA, SDSA, BSA) at the size of a Spikformer
// CIFAR block (64 tokens, 384 channels, 12 heads) on random input spikes, with op counting on
// as in `ternion run`; and the two kernels that dominate that model's time: the direct
// convolution tile (its stem's 3x3 convolutions) and the token-rows product (its Linear
// layers). Run: build/ternion_micro --benchmark_repetitions=5
// --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <memory>
#include <random>
#include <vector>

#include "attention/spiking/spiking_attention.hpp"
#include "sim/kernels/conv_direct.hpp"
#include "sim/kernels/conv_gather.hpp"
#include "sim/kernels/token_kernel.hpp"

using namespace ternion;

using Tsn = kernels::Tsn;

namespace {

constexpr std::int64_t kTokens = 64, kDim = 384, kHeads = 12;

Projection random_projection(std::mt19937& rng) {
    std::normal_distribution<float> nd(0.0f, 0.08f);
    std::vector<float> w(kDim * kDim), b(kDim);
    for (auto& x : w) x = nd(rng);
    for (auto& x : b) x = 0.2f + nd(rng);
    return Projection(w, b, kDim, kDim);
}

// Input spikes at `rate` for `steps` steps, fixed by the seed.
std::vector<Activity> random_inputs(std::mt19937& rng, double rate, int steps) {
    std::bernoulli_distribution fire(rate);
    std::vector<Activity> in(static_cast<std::size_t>(steps));
    for (auto& a : in) {
        a.values.assign(kTokens * kDim, 0.0f);
        for (auto& v : a.values) v = fire(rng) ? 1.0f : 0.0f;
        a.scan();
    }
    return in;
}

template <class MakeNode>
void run_node(benchmark::State& state, MakeNode make) {
    std::mt19937 rng(7);
    std::unique_ptr<Node> node = make(rng);
    node->bind({kTokens, kDim});
    const auto inputs = random_inputs(rng, static_cast<double>(state.range(0)) / 100.0, 4);
    auto st = node->make_state();
    Activity out;
    out.resize(node->out_size());
    OpCounts ops;
    AttentionCounts att;
    StepContext ctx;
    ctx.ops = &ops;
    ctx.attention = &att;
    std::size_t t = 0;
    for (auto _ : state) {
        ctx.step = static_cast<std::int64_t>(t);
        node->step(inputs[t % inputs.size()], st.get(), out, ctx);
        benchmark::DoNotOptimize(out.values.data());
        ++t;
    }
    state.counters["ac_per_step"] =
        benchmark::Counter(static_cast<double>(ops.ac) / static_cast<double>(t ? t : 1));
}

void BM_SsaStep(benchmark::State& state) {
    run_node(state, [](std::mt19937& rng) {
        auto q = random_projection(rng), k = random_projection(rng), v = random_projection(rng);
        return std::make_unique<SsaNode>(
            "ssa", q, k, v, kHeads,
            kernels::SjLif{kernels::SjLifCharge::from_tau(2.0, true, 0.0f, true), 1.0f},
            kernels::SjLif{kernels::SjLifCharge::from_tau(2.0, true, 0.0f, true), 0.5f}, 0.125f,
            SsaAssociation::automatic);
    });
}
void BM_SdsaStep(benchmark::State& state) {
    run_node(state, [](std::mt19937& rng) {
        auto q = random_projection(rng), k = random_projection(rng), v = random_projection(rng);
        return std::make_unique<SdsaNode>(
            "sdsa", q, k, v, kHeads,
            kernels::SjLif{kernels::SjLifCharge::from_tau(2.0, true, 0.0f, true), 1.0f},
            kernels::SjLif{kernels::SjLifCharge::from_tau(2.0, true, 0.0f, true), 0.5f});
    });
}
void BM_BsaStep(benchmark::State& state) {
    run_node(state, [](std::mt19937& rng) {
        auto q = random_projection(rng), k = random_projection(rng), v = random_projection(rng);
        return std::make_unique<BsaNode>("bsa", q, k, v, kHeads, Tsn{0.5f, 1.0f}, Tsn{0.5f, 0.5f});
    });
}

// 3x3 weights [cout][cin][3][3], N(0, 0.05).
std::vector<float> conv_weights(std::mt19937& rng, std::int64_t cin, std::int64_t cout) {
    std::normal_distribution<float> nd(0.0f, 0.05f);
    std::vector<float> w(static_cast<std::size_t>(cout * cin * 9));
    for (auto& v : w) v = nd(rng);
    return w;
}

// Spikformer CIFAR-10's 3x3 stem convolutions (padding 1) on binary input maps; arguments:
// input channels, output channels, map side, spike rate in percent, and 2 for inputs of 2 (a
// residual stream's integer sums: the multiply-then-add tile) instead of 1. Counter:
// multiply-adds per nanosecond (every tap of every output, as the direct path computes them).
void BM_DirectConv(benchmark::State& state) {
    const std::int64_t cin = state.range(0), cout = state.range(1), side = state.range(2);
    std::mt19937 rng(7);
    const auto w = conv_weights(rng, cin, cout);
    synaptic::DirectConv conv;
    conv.build({1, cin, cout, side, side, 3, 3, 1, 1, side, side}, w);
    std::bernoulli_distribution fire(static_cast<double>(state.range(3)) / 100.0);
    std::vector<float> x(static_cast<std::size_t>(cin * side * side)),
        y(static_cast<std::size_t>(cout * side * side)), scratch;
    const float value = static_cast<float>(state.range(4));
    for (auto& v : x) v = fire(rng) ? value : 0.0f;
    for (auto _ : state) {
        conv.run(x.data(), value == 1.0f, y.data(), scratch);
        benchmark::DoNotOptimize(y.data());
    }
    state.counters["GMAC"] =
        benchmark::Counter(static_cast<double>(cin * cout * 9 * side * side) / 1e9,
                           benchmark::Counter::kIsIterationInvariantRate);
}

// The same convolutions on sparse maps, gathered per output (GatherConv); same arguments.
// Counter: input spikes times taps per nanosecond.
void BM_GatherConv(benchmark::State& state) {
    const std::int64_t cin = state.range(0), cout = state.range(1), side = state.range(2);
    std::mt19937 rng(7);
    const auto w = conv_weights(rng, cin, cout);
    synaptic::GatherConv conv;
    conv.build({cin, cout, side, side, 3, 3, 1, 1, side, side}, w);
    std::bernoulli_distribution fire(static_cast<double>(state.range(3)) / 100.0);
    std::vector<std::uint32_t> active;
    for (std::int64_t i = 0; i < cin * side * side; ++i)
        if (fire(rng)) active.push_back(static_cast<std::uint32_t>(i));
    std::vector<float> y(static_cast<std::size_t>(cout * side * side));
    synaptic::GatherConv::Scratch scratch;
    for (auto _ : state) {
        conv.run(active.data(), active.size(), nullptr, y.data(), scratch);
        benchmark::DoNotOptimize(y.data());
    }
    state.counters["Gtaps"] = benchmark::Counter(static_cast<double>(active.size() * 9) / 1e9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

// A Linear layer on 64 tokens (Spikformer CIFAR-10 sizes); arguments: inputs, outputs, percent
// of non-zero inputs, whether they are spikes (1) or small integers like a residual stream's
// (0: values 1, 2, 3 with probabilities 0.6, 0.3, 0.1), and whether the caches are flushed
// before each run (1: the weights come from memory, as when a whole network's weights pass
// through the caches between two uses of the layer; the flush is not timed).
void BM_TokenRows(benchmark::State& state) {
    const std::int64_t in = state.range(0), out = state.range(1), tokens = 64;
    std::mt19937 rng(7);
    std::normal_distribution<float> nd(0.0f, 0.05f);
    std::vector<float> w(static_cast<std::size_t>(in * out));
    for (auto& v : w) v = nd(rng);
    TokenPanels panels;
    panels.build(w.data(), in, out);
    std::bernoulli_distribution fire(static_cast<double>(state.range(2)) / 100.0);
    std::discrete_distribution<int> value({0.6, 0.3, 0.1});
    std::vector<float> x(static_cast<std::size_t>(tokens * in));
    IndexList active;
    for (std::size_t i = 0; i < x.size(); ++i) {
        if (!fire(rng)) continue;
        x[i] = state.range(3) ? 1.0f : static_cast<float>(1 + value(rng));
        active.push_back(static_cast<std::uint32_t>(i));
    }
    TokenEvents ev;
    ev.build(active, x.data(), in, tokens);
    std::vector<float> y(static_cast<std::size_t>(tokens * out)),
        bias(static_cast<std::size_t>(out), 0.1f);
    TokenScratch scratch;
    std::vector<char> flush(state.range(4) ? std::size_t{64} << 20 : 0, 1);  // > the L3
    for (auto _ : state) {
        if (!flush.empty()) {
            state.PauseTiming();
            for (std::size_t i = 0; i < flush.size(); i += 64)
                flush[i] = static_cast<char>(flush[i] + 1);
            benchmark::DoNotOptimize(flush.data());
            state.ResumeTiming();
        }
        token_rows(panels, ev, bias.data(), BiasOrder::last, state.range(3) != 0, y.data(), 0, out,
                   nullptr, nullptr, scratch);
        benchmark::DoNotOptimize(y.data());
    }
    state.counters["Gevents"] = benchmark::Counter(static_cast<double>(active.size()) / 1e9,
                                                   benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

// Arguments: input channels, output channels, map side, spike rate in percent, input value.
BENCHMARK(BM_DirectConv)
    ->Args({96, 192, 32, 25, 1})
    ->Args({192, 384, 16, 25, 1})
    ->Args({384, 384, 8, 25, 1})
    ->Args({192, 384, 8, 50, 2})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_GatherConv)
    ->Args({48, 96, 32, 10})
    ->Args({96, 192, 32, 10})
    ->Args({192, 384, 16, 25})
    ->Args({384, 384, 8, 25})
    ->Unit(benchmark::kMicrosecond);
// Arguments: inputs, outputs, percent non-zero, spikes (1) or small integers (0), caches
// flushed (1) or not (0).
BENCHMARK(BM_TokenRows)
    ->Args({384, 1536, 75, 0, 0})
    ->Args({384, 1536, 75, 0, 1})
    ->Args({384, 1152, 75, 0, 0})
    ->Args({1536, 384, 10, 1, 0})
    ->Args({1536, 384, 10, 1, 1})
    ->Args({384, 384, 20, 1, 0})
    ->Unit(benchmark::kMicrosecond);
// Argument: input spike rate in percent.
BENCHMARK(BM_SsaStep)->Arg(10)->Arg(20)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SdsaStep)->Arg(20)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_BsaStep)->Arg(10)->Arg(20)->Unit(benchmark::kMicrosecond);
BENCHMARK_MAIN();
