// One time step of each spiking attention node (SSA, SDSA, BSA) at the size of a Spikformer
// CIFAR block (64 tokens, 384 channels, 12 heads) on random input spikes, with op counting on
// as in `ternion run`. Run: build/ternion_micro --benchmark_repetitions=5
// --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <memory>
#include <random>
#include <vector>

#include "attention/spiking_attention.hpp"

using namespace ternion;
using spiking::LifParams;
using spiking::Projection;
using spiking::TsnParams;

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
        return std::make_unique<SsaNode>("ssa", q, k, v, kHeads, LifParams{2.0f, true, 1.0f, 0.0f},
                                         LifParams{2.0f, true, 0.5f, 0.0f}, 0.125f,
                                         SsaAssociation::automatic);
    });
}
void BM_SdsaStep(benchmark::State& state) {
    run_node(state, [](std::mt19937& rng) {
        auto q = random_projection(rng), k = random_projection(rng), v = random_projection(rng);
        return std::make_unique<SdsaNode>("sdsa", q, k, v, kHeads,
                                          LifParams{2.0f, true, 1.0f, 0.0f},
                                          LifParams{2.0f, true, 0.5f, 0.0f});
    });
}
void BM_BsaStep(benchmark::State& state) {
    run_node(state, [](std::mt19937& rng) {
        auto q = random_projection(rng), k = random_projection(rng), v = random_projection(rng);
        return std::make_unique<BsaNode>("bsa", q, k, v, kHeads, TsnParams{0.5f, 1.0f},
                                         TsnParams{0.5f, 0.5f});
    });
}

}  // namespace

// Argument: input spike rate in percent.
BENCHMARK(BM_SsaStep)->Arg(10)->Arg(20)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SdsaStep)->Arg(20)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_BsaStep)->Arg(10)->Arg(20)->Unit(benchmark::kMicrosecond);
BENCHMARK_MAIN();
