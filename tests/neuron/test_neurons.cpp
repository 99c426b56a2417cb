// Neuron models against closed forms and the BSA paper's worked TSN examples (V1-V3).
#include <doctest/doctest.h>

#include <cmath>
#include <optional>
#include <string>

#include "neuron/neurons.hpp"
#include "sim/kernels/neuron_rules.hpp"
#include "tests/support/model_file.hpp"
#include "tests/support/run_model.hpp"

using namespace ternion;
using namespace ternion::test;

namespace {

// Input[n] -> neuron -> Output, driven by constant analog input `x` (direct coding).
std::unique_ptr<Outcome> drive(const std::string& type, std::map<std::string, Param> params,
                               const std::vector<float>& x, std::int64_t T,
                               UserLoadOptions lo = {}) {
    TempFile m, in;
    const auto n = static_cast<std::int64_t>(x.size());
    ModelFile()
        .node("input", "Input", {{"shape", P({double(n)})}})
        .node("neuron", type, std::move(params))
        .node("output", "Output")
        .edge("input", "neuron")
        .edge("neuron", "output")
        .write(m.path());
    write_data(in.path(), x, {1, n});
    return run_file(m.path(), in.path(), Engine::event, 1, T, lo);
}

// A NIR LIF with r = 1 at dt = 1 ms (Euler unless `discretization` says), driven by constant x.
std::unique_ptr<Outcome> drive_lif(double tau, double v_leak, double v_threshold, float x,
                                   std::int64_t T,
                                   std::optional<std::string> discretization = std::nullopt) {
    UserLoadOptions lo;
    lo.dt = 1e-3;
    lo.discretization = std::move(discretization);
    return drive(
        "LIF",
        {{"tau", P(tau)}, {"r", P(1.0)}, {"v_leak", P(v_leak)}, {"v_threshold", P(v_threshold)}},
        {x}, T, lo);
}

std::vector<std::int64_t> spike_steps(const Outcome& o, std::int64_t T, std::size_t k = 0,
                                      float polarity = 1.0f) {
    std::vector<std::int64_t> r;
    for (std::int64_t t = 0; t < T; ++t)
        if (output_of(o, "neuron", 0, t)[k] == polarity) r.push_back(t);
    return r;
}

}  // namespace

TEST_CASE("TSN worked example V1: constant 0.6 fires +1 at step 3, -0.6 fires -1, 0.4 never") {
    auto o = drive("ternion.TernaryLIF", {{"decay", P(0.5)}, {"v_threshold", P(1.0)}},
                   {0.6f, -0.6f, 0.4f}, 40);
    // U = 0.6, 0.9, 1.05 -> spike at the third step (t = 2), then H = 0 and the cycle repeats.
    CHECK(spike_steps(*o, 6, 0) == std::vector<std::int64_t>{2, 5});
    CHECK(spike_steps(*o, 6, 1, -1.0f) == std::vector<std::int64_t>{2, 5});
    CHECK(spike_steps(*o, 6, 1, 1.0f).empty());
    CHECK(spike_steps(*o, 40, 2).empty());
    CHECK(spike_steps(*o, 40, 2, -1.0f).empty());
    // Stored H = 0.5 U; U converges to 0.8, so H converges to 0.4.
    CHECK(membrane_of(*o, "neuron", 0, 39)[2] == doctest::Approx(0.4).epsilon(1e-5));
    // V3: after a spike H is exactly 0; otherwise H = decay * U.
    CHECK(membrane_of(*o, "neuron", 0, 2)[0] == 0.0f);
    CHECK(membrane_of(*o, "neuron", 0, 1)[0] == doctest::Approx(0.45));
    CHECK(membrane_of(*o, "neuron", 0, 2)[1] == 0.0f);
}

TEST_CASE("TSN is odd-symmetric (V2) for arbitrary input sequences") {
    TempFile m, a, b;
    const std::int64_t n = 16, T = 60;
    scaled_ternary_lif(n, 1.0).write(m.path());
    // Spike input with both polarities: sequences vary per step; the negated file mirrors it.
    std::vector<std::int8_t> s(static_cast<std::size_t>(T * n)), neg(s.size());
    std::uint64_t h = 12345;
    for (std::size_t i = 0; i < s.size(); ++i) {
        h = h * 6364136223846793005ull + 1442695040888963407ull;
        s[i] = static_cast<std::int8_t>(static_cast<int>((h >> 33) % 3) - 1);
        neg[i] = static_cast<std::int8_t>(-s[i]);
    }
    write_spikes(a.path(), s, {1, T, n});
    write_spikes(b.path(), neg, {1, T, n});
    auto oa = run_file(m.path(), a.path());
    auto ob = run_file(m.path(), b.path());
    std::int64_t fired = 0;
    for (std::int64_t t = 0; t < T; ++t) {
        auto ya = output_of(*oa, "neuron", 0, t), yb = output_of(*ob, "neuron", 0, t);
        for (std::int64_t k = 0; k < n; ++k) {
            CHECK(ya[static_cast<std::size_t>(k)] == -yb[static_cast<std::size_t>(k)]);
            fired += ya[static_cast<std::size_t>(k)] != 0.0f;
        }
    }
    CHECK(fired > 0);  // the test exercised spikes of both signs
}

TEST_CASE("NIR LIF, Euler: v_t = 30 (1 - 0.95^(t+1)) first exceeds 10 at t = 7") {
    auto o = drive_lif(0.02, 0.0, 10.0, 30.0f, 24);
    CHECK(membrane_of(*o, "neuron", 0, 3)[0] ==
          doctest::Approx(30.0 * (1 - std::pow(0.95, 4))).epsilon(1e-6));
    // Zero reset makes the pattern periodic with period 8.
    CHECK(spike_steps(*o, 24) == std::vector<std::int64_t>{7, 15, 23});
}

TEST_CASE("NIR LIF, exact: a = exp(-dt/tau), first spike when a^(t+1) < 2/3, i.e. t = 8") {
    auto o = drive_lif(0.02, 0.0, 10.0, 30.0f, 9, "exact");
    CHECK(spike_steps(*o, 9) == std::vector<std::int64_t>{8});
    const double a = std::exp(-0.05);
    CHECK(membrane_of(*o, "neuron", 0, 4)[0] ==
          doctest::Approx(30.0 * (1 - std::pow(a, 5))).epsilon(1e-6));
}

TEST_CASE("NIR LIF leaks toward v_leak without input") {
    auto o = drive_lif(0.01, 5.0, 100.0, 0.0f, 20);
    for (int t : {0, 5, 19})
        CHECK(membrane_of(*o, "neuron", 0, t)[0] ==
              doctest::Approx(5.0 * (1 - std::pow(0.9, t + 1))).epsilon(1e-5));
}

TEST_CASE("subtractive reset keeps the overshoot; zero reset drops it") {
    UserLoadOptions lo;
    lo.reset = "subtract";
    // IF: v += r I = 0.15 per step; 7 steps give 1.05 > 1 -> spike at t = 6, v = 0.05;
    // then 0.05 + 0.15 k > 1 first at k = 7 -> t = 13.
    auto o = drive("IF", {{"r", P(0.5)}, {"v_threshold", P(1.0)}}, {0.3f}, 15, lo);
    CHECK(spike_steps(*o, 15) == std::vector<std::int64_t>{6, 13});
    CHECK(membrane_of(*o, "neuron", 0, 6)[0] == doctest::Approx(0.05).epsilon(1e-4));
    lo.reset = "zero";
    auto z = drive("IF", {{"r", P(0.5)}, {"v_threshold", P(1.0)}}, {0.3f}, 15, lo);
    CHECK(spike_steps(*z, 15) == std::vector<std::int64_t>{6, 13});
    CHECK(membrane_of(*z, "neuron", 0, 6)[0] == 0.0f);
    CHECK(membrane_of(*z, "neuron", 0, 7)[0] == doctest::Approx(0.15));
}

TEST_CASE("threshold comparison: NIR fires on v > v_th, a node may ask for >=") {
    // v = 0.5, 1.0, 1.5: strict comparison fires at t = 2, ">=" already at t = 1.
    auto gt = drive("IF", {{"r", P(1.0)}, {"v_threshold", P(1.0)}}, {0.5f}, 3);
    CHECK(spike_steps(*gt, 3) == std::vector<std::int64_t>{2});
    auto ge =
        drive("IF", {{"r", P(1.0)}, {"v_threshold", P(1.0)}, {"compare", S(">=")}}, {0.5f}, 3);
    CHECK(spike_steps(*ge, 3) == std::vector<std::int64_t>{1});
}

TEST_CASE("CubaLIF follows snnTorch's Synaptic order: i = a_s i + x, v = a_m v + i") {
    UserLoadOptions lo;
    lo.dt = 1e-3;
    // tau_syn = 10 ms, w_in = 10 -> a_s = 0.9, gain 1; tau_mem = 20 ms, r = 20 -> a_m = 0.95,
    // gain 1.
    auto o = drive("CubaLIF",
                   {{"tau_syn", P(0.01)},
                    {"tau_mem", P(0.02)},
                    {"r", P(20.0)},
                    {"w_in", P(10.0)},
                    {"v_threshold", P(20.0)},
                    {"v_leak", P(0.0)}},
                   {1.0f}, 30, lo);
    double i = 0, v = 0;
    std::vector<std::int64_t> expect;
    for (int t = 0; t < 30; ++t) {
        i = 0.9 * i + 1.0;
        v = 0.95 * v + i;
        if (v > 20.0) {
            expect.push_back(t);
            v = 0;
        }
        if (t == 4) CHECK(membrane_of(*o, "neuron", 0, t)[0] == doctest::Approx(v).epsilon(1e-5));
    }
    REQUIRE(!expect.empty());
    CHECK(spike_steps(*o, 30) == expect);
}

TEST_CASE("SpikingJelly LIF: decay_input and not, fires on >=, hard reset") {
    // decay_input: v = v + (x - v)/2 -> 0.75, 1.125 (spike at t = 1), period 2.
    auto a = drive("ternion.SJLIF", {{"tau", P(2.0)}}, {1.5f}, 6);
    CHECK(spike_steps(*a, 6) == std::vector<std::int64_t>{1, 3, 5});
    // no decay_input: v = v - v/2 + x -> 0.6, 0.9, 1.05 (spike at t = 2).
    auto b = drive("ternion.SJLIF", {{"tau", P(2.0)}, {"decay_input", P(0.0)}}, {0.6f}, 6);
    CHECK(spike_steps(*b, 6) == std::vector<std::int64_t>{2, 5});
    // Reaching the threshold exactly fires (x = 1 with decay_input off: v = 1 at t = 0).
    auto c = drive("ternion.SJLIF", {{"tau", P(2.0)}, {"decay_input", P(0.0)}}, {1.0f}, 2);
    CHECK(spike_steps(*c, 2) == std::vector<std::int64_t>{0, 1});
    // Parametric LIF with w = 0: sigmoid(0) = 1/2, the same as tau = 2.
    auto d = drive("ternion.PLIF", {{"w", P(0.0)}}, {1.5f}, 6);
    CHECK(spike_steps(*d, 6) == std::vector<std::int64_t>{1, 3, 5});
}

TEST_CASE("exact_reciprocal: only powers of two with a normal reciprocal") {
    CHECK(kernels::exact_reciprocal(2.0f) == 0.5f);
    CHECK(kernels::exact_reciprocal(0.25f) == 4.0f);
    CHECK(kernels::exact_reciprocal(1.0f) == 1.0f);
    CHECK(kernels::exact_reciprocal(std::ldexp(1.0f, 126)) == std::ldexp(1.0f, -126));
    CHECK_FALSE(kernels::exact_reciprocal(std::ldexp(1.0f, 127)));  // 2^-127 is subnormal
    for (float t : {3.0f, 2.5f, 20.0f, 0.0f, -2.0f, INFINITY, NAN})
        CHECK_FALSE(kernels::exact_reciprocal(t));
}

TEST_CASE("SpikingJelly LIF membranes equal the division x / tau bit for bit, any tau") {
    // tau = 2, 4, 0.5 take the product by 1/tau; 3 and 20 divide. Inputs are spread so that
    // products and quotients round in every direction; the reference divides as SpikingJelly.
    std::vector<float> x;
    for (int k = 0; k < 97; ++k) x.push_back(0.013f * static_cast<float>(k * k % 89) - 0.3f);
    const std::int64_t T = 12;
    for (double tau : {2.0, 4.0, 0.5, 3.0, 20.0})
        for (int di : {1, 0}) {
            CAPTURE(tau);
            CAPTURE(di);
            auto o = drive(
                "ternion.SJLIF",
                {{"tau", P(tau)}, {"decay_input", P(double(di))}, {"v_threshold", P(0.7)}}, x, T);
            std::vector<float> v(x.size(), 0.0f);
            const auto tf = static_cast<float>(tau);
            for (std::int64_t t = 0; t < T; ++t) {
                const auto& m = membrane_of(*o, "neuron", 0, t);
                const auto& s = output_of(*o, "neuron", 0, t);
                for (std::size_t k = 0; k < x.size(); ++k) {
                    // SpikingJelly without decay_input and v_reset 0: v * (1 - 1/tau) + x.
                    const auto keep = static_cast<float>(1.0 - 1.0 / tau);
                    v[k] = di ? v[k] + (x[k] - v[k]) / tf : v[k] * keep + x[k];
                    const bool f = v[k] >= 0.7f;
                    if (f) v[k] = 0.0f;
                    REQUIRE(s[k] == (f ? 1.0f : 0.0f));
                    REQUIRE(m[k] == v[k]);
                }
            }
        }
}

TEST_CASE("SpikingJelly LIF without decay_input: v_reset 0 multiplies, other v_reset subtracts") {
    // tau = 3: the two forms SpikingJelly uses round differently; this input shows both apart.
    const std::vector<float> x{0.3f, 0.71f, -0.45f, 0.123f, 0.377f};
    const std::int64_t T = 8;
    const auto keep = static_cast<float>(1.0 - 1.0 / 3.0);
    const float tf = 3.0f;
    bool forms_differ = false;
    for (double vr : {0.0, -0.25}) {
        CAPTURE(vr);
        auto o = drive(
            "ternion.SJLIF",
            {{"tau", P(3.0)}, {"decay_input", P(0.0)}, {"v_reset", P(vr)}, {"v_threshold", P(5.0)}},
            x, T);
        const auto r = static_cast<float>(vr);
        std::vector<float> v(x.size(), r);
        for (std::int64_t t = 0; t < T; ++t) {
            const auto& m = membrane_of(*o, "neuron", 0, t);
            for (std::size_t k = 0; k < x.size(); ++k) {
                const float other = v[k] - (v[k] - r) / tf + x[k];
                v[k] = vr == 0.0 ? v[k] * keep + x[k] : other;
                if (vr == 0.0 && other != v[k]) forms_differ = true;
                REQUIRE(m[k] == v[k]);
            }
        }
    }
    CHECK(forms_differ);
    // leak_form overrides the choice: "difference" at v_reset 0 (SpikingJelly activation_based's
    // eval path for hard reset).
    auto d = drive("ternion.SJLIF",
                   {{"tau", P(3.0)},
                    {"decay_input", P(0.0)},
                    {"v_threshold", P(5.0)},
                    {"leak_form", S("difference")}},
                   x, T);
    std::vector<float> vd(x.size(), 0.0f);
    for (std::int64_t t = 0; t < T; ++t) {
        const auto& m = membrane_of(*d, "neuron", 0, t);
        for (std::size_t k = 0; k < x.size(); ++k) {
            vd[k] = vd[k] - vd[k] / tf + x[k];
            REQUIRE(m[k] == vd[k]);
        }
    }
    // ParametricLIF: 1 - sigmoid(w) as float32.
    auto p = drive("ternion.PLIF",
                   {{"w", P(0.7)}, {"decay_input", P(0.0)}, {"v_threshold", P(9.0)}}, x, T);
    const float kk = static_cast<float>(1.0 / (1.0 + std::exp(-0.7)));
    std::vector<float> v(x.size(), 0.0f);
    for (std::int64_t t = 0; t < T; ++t) {
        const auto& m = membrane_of(*p, "neuron", 0, t);
        for (std::size_t k = 0; k < x.size(); ++k) {
            v[k] = v[k] * (1.0f - kk) + x[k];
            REQUIRE(m[k] == v[k]);
        }
    }
}

TEST_CASE("Threshold emits 1 where x > threshold") {
    auto o = drive("Threshold", {{"threshold", P({0.5, 0.7, 0.6})}}, {0.6f, 0.6f, 0.6f}, 1);
    CHECK(output_of(*o, "neuron", 0, 0) == std::vector<float>{1.0f, 0.0f, 0.0f});
}

TEST_CASE("neuron counts: one update and one comparison per neuron per step") {
    auto o = drive("ternion.TernaryLIF", {}, {0.6f, -0.6f, 0.4f}, 6);
    const auto& st = o->result.nodes[static_cast<std::size_t>(o->graph->find("neuron"))];
    CHECK(st.ops.neuron_update == 18);
    CHECK(st.ops.cmp == 18);
    CHECK(st.ops.spikes_out == 4);  // +1 twice, -1 twice
    CHECK(st.positive_out == 2);
    CHECK(st.negative_out == 2);
}

TEST_CASE("NIR integrators I, LI and CubaLI output their membrane potential") {
    UserLoadOptions lo;
    lo.dt = 1e-3;
    // I: v += r x -> 0.5, 1.0, ..., never resets.
    auto i = drive("I", {{"r", P(0.5)}}, {1.0f}, 4, lo);
    CHECK(output_of(*i, "neuron", 0, 3) == std::vector<float>{2.0f});
    // LI (Euler): v = 0.9 v + 0.1 r x -> 2 (1 - 0.9^(t+1)) with r = 2, x = 1.
    auto li = drive("LI", {{"tau", P(0.01)}, {"r", P(2.0)}, {"v_leak", P(0.0)}}, {1.0f}, 10, lo);
    CHECK(output_of(*li, "neuron", 0, 9)[0] ==
          doctest::Approx(2.0 * (1 - std::pow(0.9, 10))).epsilon(1e-5));
    CHECK_FALSE(li->graph->node(li->graph->find("neuron")).is_spiking());
    // CubaLI: i = 0.9 i + x, v = 0.95 v + i (unit gains), no threshold however large v grows.
    auto c = drive("CubaLI",
                   {{"tau_syn", P(0.01)},
                    {"tau_mem", P(0.02)},
                    {"r", P(20.0)},
                    {"w_in", P(10.0)},
                    {"v_leak", P(0.0)}},
                   {1.0f}, 30, lo);
    double ic = 0, v = 0;
    for (int t = 0; t < 30; ++t) {
        ic = 0.9 * ic + 1.0;
        v = 0.95 * v + ic;
    }
    CHECK(output_of(*c, "neuron", 0, 29)[0] == doctest::Approx(v).epsilon(1e-5));
}
