// Integer neuron datapaths against the worked examples of Lava's bit-accurate Loihi models
// (tests/lava/proc/lif/test_models.py of lava-nc/lava, and numbers recomputed from
// src/lava/proc/lif/models.py) and of Xylo's simulator (xylosim's XyloIAFNeuron), and the
// ternion.FixedLIF node in a graph (a Lava Dense -> LIF network: Linear, one-step Delay).
#include <doctest/doctest.h>

#include <vector>

#include "neuron/fixed/fixed_lif.hpp"
#include "sim/kernels/fixed_point.hpp"
#include "tests/support/model_file.hpp"
#include "tests/support/run_model.hpp"

using namespace ternion;
using namespace ternion::fixed;
using namespace ternion::test;

namespace {

struct Trace {
    std::vector<std::int64_t> u, v, s;  // v after the reset
    std::uint64_t overflows = 0;
};

Trace run_rule(const LifDatapath& d, const LifConstants& c, const std::vector<std::int64_t>& in) {
    Trace t;
    std::int32_t u = 0, v = 0;
    for (auto a : in) {
        t.s.push_back(lif_step(d, c, u, v, a, t.overflows));
        t.u.push_back(u);
        t.v.push_back(v);
    }
    return t;
}

// Lava's defaults: du with its +1 offset, inputs and thresholds << 6.
LifConstants loihi(std::int64_t du, std::int64_t dv, std::int64_t bias, std::int64_t vth) {
    return {du + 1, dv, bias, vth << 6, 0, false};
}

using V = std::vector<std::int64_t>;

}  // namespace

TEST_CASE("shifts: toward zero for decays, floor for exponents; formats wrap and saturate") {
    CHECK(shift_toward_zero(-38, 2) == -9);
    CHECK(shift_floor(-38, -2) == -10);
    CHECK(shift_floor(-38, 3) == -304);
    bool hit = false;
    const IntFormat wrap24{24, Overflow::wrap};
    CHECK(wrap24.fit(8388608, hit) == 8388608);  // +2^23 is kept
    CHECK_FALSE(hit);
    CHECK(wrap24.fit(10480320, hit) == -6296896);  // Lava's u wrap: c - 2^24
    CHECK(hit);
    CHECK(wrap24.fit(-8388608, hit) == 8388608);          // -2^23 becomes +2^23
    CHECK(wrap24.fit(3 * 8388608 + 5, hit) == -8388603);  // several periods, modulo
    hit = false;
    const IntFormat sym24{24, Overflow::saturate_symmetric}, sat16{16, Overflow::saturate};
    CHECK(sym24.fit(-9000000, hit) == -8388607);
    CHECK(hit);
    CHECK(sat16.fit(-40000, hit) == -32768);
    CHECK(sat16.fit(40000, hit) == 32767);
    CHECK(sat16.fit(-32768, hit) == -32768);
}

TEST_CASE("Lava LIF: Lava's own impulse, decay and bias tests") {
    const LifDatapath d;  // Loihi
    V impulse(8, 0);
    impulse[0] = 128;
    SUBCASE("du = 2047 halves u each step") {
        auto t = run_rule(d, loihi(2047, 0, 0, 131071), impulse);
        CHECK(t.u == V{8192, 4096, 2048, 1024, 512, 256, 128, 64});
    }
    SUBCASE("du = 0 (still 1/4096 a step), dv = 2048") {
        auto t = run_rule(d, loihi(0, 2048, 0, 131071), impulse);
        CHECK(t.v == V{8192, 12286, 14331, 15351, 15859, 16111, 16235, 16295});
    }
    SUBCASE("bias 2 << 6, vth 8, no input: spikes at steps 4 and 9") {
        auto t = run_rule(d, loihi(0, 0, 2 << 6, 8), V(10, 0));
        CHECK(t.s == V{0, 0, 0, 0, 1, 0, 0, 0, 0, 1});
        CHECK(t.v[4] == 0);
    }
}

TEST_CASE("Lava LIF: du 1023, dv 512, bias 3 << 2, vth 200 (recomputed from models.py)") {
    auto t = run_rule(LifDatapath{}, loihi(1023, 512, 12, 200),
                      {100, 0, 100, -38, 100, 100, 0, 0, 62, 100});
    CHECK(t.u == V{6400, 4800, 10000, 5068, 10201, 14050, 10537, 7902, 9894, 13820});
    CHECK(t.s == V{0, 0, 1, 0, 1, 1, 0, 1, 0, 1});
    // v before the reset where it fired: 19131, 14658, 14062, 17144, 22499.
    CHECK(t.v == V{6412, 10422, 0, 5080, 0, 0, 10549, 0, 9906, 0});
}

TEST_CASE("Lava LIF: u wraps at 24 bits, v saturates; both counted") {
    auto t = run_rule(LifDatapath{}, loihi(0, 4095, 0, 131071), V(5, 32767));
    CHECK(t.u == V{2097088, 4193664, 6289728, 8385280, -6296896});
    CHECK(t.overflows == 1);
    // Saturation: a steady input that drives v past 2^23 - 1 with no decay and no spike.
    LifDatapath d;
    d.threshold_shift = 6;
    auto s = run_rule(d, {4096, 0, 0, 8388607, 0, false}, V(3, 100000));
    CHECK(s.v == V{6400000, 8388607, 8388607});
    CHECK(s.overflows == 2);
}

TEST_CASE("Lava TernaryLIF: Lava's test (vth_hi 5, vth_lo -3)") {
    const LifConstants c{0 + 1, 0, 0, 5 << 6, -3 << 6, true};
    auto t = run_rule(LifDatapath{}, c, {1, 1, 1, -1, -1, -1, -1, -1, -1, 1, 1});
    CHECK(t.s == V{0, 0, 1, 0, 0, 0, 0, 0, -1, 0, -1});
    CHECK(t.u == V{64, 127, 190, 125, 60, -5, -68, -131, -194, -129, -64});
    CHECK(t.v == V{64, 191, 0, 125, 185, 180, 112, -19, 0, -129, 0});
}

TEST_CASE("Xylo: bit-shift decays move a non-zero state at least one step toward zero") {
    CHECK(decay_bitshift(1000, 4) == 938);
    CHECK(decay_bitshift(5, 4) == 4);
    CHECK(decay_bitshift(-5, 4) == -4);
    CHECK(decay_bitshift(-1, 4) == 0);
    CHECK(decay_bitshift(-17, 4) == -15);
    CHECK(decay_bitshift(0, 4) == 0);
    V seq;
    for (std::int64_t x = 1000, k = 0; k < 16; ++k) seq.push_back(x = decay_bitshift(x, 4));
    CHECK(seq == V{938, 880, 825, 774, 726, 681, 639, 600, 563, 528, 495, 465, 436, 409, 384, 360});
}

TEST_CASE("Xylo: input added before the current decays, subtractive reset, several spikes") {
    // Weight 100 shifted by 2 (400 per event), dash_syn 1, dash_mem 2, threshold 300; 1 event at
    // t = 0, 3 events at t = 4 (a hand computation of xylosim's XyloIAFNeuron::evolve).
    LifDatapath d;
    d.current = d.membrane = {16, Overflow::saturate};
    d.decay = DecayForm::bitshift;
    d.order = Order::add_then_decay;
    d.input_exp = 2;
    d.input_shift = d.threshold_shift = 0;
    d.fire_at_equal = d.subtract = true;
    d.max_spikes = 31;
    const LifConstants c{1, 2, 0, 300, 0, false};
    auto t = run_rule(d, c, {100, 0, 0, 0, 300, 0});
    CHECK(t.u == V{200, 100, 50, 25, 613, 307});
    CHECK(t.v == V{200, 250, 238, 204, 166, 132});
    CHECK(t.s == V{0, 0, 0, 0, 2, 1});
    SUBCASE("16-bit saturation of the summed input and the spike cap") {
        // 20000 events' worth: the current saturates at 32767 (counted); dash 0 then clears it.
        auto big = run_rule(d, {0, 0, 0, 300, 0, false}, {20000});
        CHECK(big.u == V{0});
        CHECK(big.overflows == 1);
        // u = 8000 - 1 (8000 >> 15 is 0: one step); v = 7999 crosses threshold 1 7999 times,
        // fires 31 and keeps the rest.
        auto capped = run_rule(d, {15, 15, 0, 1, 0, false}, {2000});
        CHECK(capped.u == V{7999});
        CHECK(capped.s == V{31});
        CHECK(capped.v == V{7968});
    }
}

namespace {

// Inputs that reach every corner: small sums, fractions, sums past the current's range, past
// int32, and the sign changes between them.
std::vector<float> corner_inputs(std::uint64_t seed, std::size_t n) {
    std::vector<float> x(n);
    std::uint64_t s = seed * 2654435761u + 1;
    for (auto& v : x) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        const double r = static_cast<double>(s >> 11) / 9007199254740992.0;  // [0, 1)
        const int kind = static_cast<int>((s >> 3) % 6);
        const double mag = kind == 0   ? 3.0
                           : kind == 1 ? 300.0
                           : kind == 2 ? 2e5
                           : kind == 3 ? 5e7
                           : kind == 4 ? 3e9
                                       : 0.75;
        v = static_cast<float>((2.0 * r - 1.0) * mag);
    }
    return x;
}

struct RowCase {
    LifDatapath d;
    std::int32_t du, dv, bias, vth, lo;
};

// Runs `steps` steps of the row kernel `row` and of lif_step side by side.
template <class Row>
void check_row_equals_rule(const RowCase& rc, bool ternary, Row row, std::uint64_t seed) {
    const std::int64_t n = 37, steps = 12;
    LifRow c{&rc.du, &rc.dv, &rc.bias, &rc.vth, &rc.lo, true};
    const LifConstants k{rc.du, rc.dv, rc.bias, rc.vth, rc.lo, ternary};
    std::vector<std::int32_t> u(n, 0), v(n, 0), u2(n, 0), v2(n, 0);
    std::vector<float> out(n);
    for (std::int64_t t = 0; t < steps; ++t) {
        const auto x = corner_inputs(seed * 100 + static_cast<std::uint64_t>(t), n);
        const std::uint64_t hits = row(rc.d, c, u.data(), v.data(), x.data(), out.data(), n);
        std::uint64_t hits2 = 0;
        for (std::int64_t i = 0; i < n; ++i) {
            const int s = lif_step(rc.d, k, u2[i], v2[i], input_int(x[i]), hits2);
            REQUIRE(out[i] == static_cast<float>(s));
            REQUIRE(v[i] == v2[i]);
        }
        REQUIRE(hits == hits2);
    }
}

}  // namespace

TEST_CASE(
    "row kernels compute lif_step's integers, corners included (wraps, saturation, huge inputs)") {
    int cases = 0;
    for (std::uint64_t seed = 1; seed <= 40; ++seed) {
        RowCase rc;
        rc.d.current = {static_cast<int>(10 + seed % 19),
                        seed % 2 ? Overflow::wrap : Overflow::saturate};
        rc.d.membrane = {static_cast<int>(9 + seed % 20),
                         seed % 3 == 0
                             ? Overflow::wrap
                             : (seed % 3 == 1 ? Overflow::saturate_symmetric : Overflow::saturate)};
        rc.d.decay_shift = 12;
        rc.d.input_shift = static_cast<int>(seed % 7);
        rc.d.input_exp = static_cast<int>(seed % 5) - 2;
        rc.d.fire_at_equal = seed % 4 == 0;
        rc.d.subtract = seed % 5 == 0;
        rc.du = 4096;  // the current cleared every step: the single-compartment rows
        rc.dv = static_cast<std::int32_t>((seed * 977) % 4097);
        rc.bias = static_cast<std::int32_t>(seed * 37) - 700;
        rc.vth = static_cast<std::int32_t>(rc.d.membrane.max() /
                                           static_cast<std::int64_t>(2 + seed % 9));
        rc.lo = -rc.vth / 2;
        const bool ternary = seed % 2 == 0;
        const auto run32 = [&](const LifDatapath& d, const LifRow& c, std::int32_t*,
                               std::int32_t* v, const float* x, float* o, std::int64_t n) {
            const bool cw = d.current.overflow == Overflow::wrap,
                       mw = d.membrane.overflow == Overflow::wrap;
            if (ternary)
                return cw ? (mw ? lif_row32_cleared<true, kWrap, kWrap>(d, c, v, x, o, n)
                                : lif_row32_cleared<true, kWrap, kSaturate>(d, c, v, x, o, n))
                          : (mw ? lif_row32_cleared<true, kSaturate, kWrap>(d, c, v, x, o, n)
                                : lif_row32_cleared<true, kSaturate, kSaturate>(d, c, v, x, o, n));
            return cw ? (mw ? lif_row32_cleared<false, kWrap, kWrap>(d, c, v, x, o, n)
                            : lif_row32_cleared<false, kWrap, kSaturate>(d, c, v, x, o, n))
                      : (mw ? lif_row32_cleared<false, kSaturate, kWrap>(d, c, v, x, o, n)
                            : lif_row32_cleared<false, kSaturate, kSaturate>(d, c, v, x, o, n));
        };
        const auto run64 = [&](const LifDatapath& d, const LifRow& c, std::int32_t* u,
                               std::int32_t* v, const float* x, float* o, std::int64_t n) {
            return ternary ? lif_row<Order::decay_then_add, DecayForm::multiply, true, true>(
                                 d, c, u, v, x, o, n)
                           : lif_row<Order::decay_then_add, DecayForm::multiply, false, true>(
                                 d, c, u, v, x, o, n);
        };
        const LifRow probe{&rc.du, &rc.dv, &rc.bias, &rc.vth, &rc.lo, true};
        if (row32_fits(rc.d, probe)) {
            check_row_equals_rule(rc, ternary, run32, seed);
            ++cases;
        }
        check_row_equals_rule(rc, ternary, run64, seed);
        // The general row with a current that decays (du < 2^12) and the Xylo order.
        rc.du = static_cast<std::int32_t>((seed * 131) % 4096);
        check_row_equals_rule(rc, ternary, run64, seed + 1000);
        rc.d.order = Order::add_then_decay;
        rc.d.decay = DecayForm::bitshift;
        rc.du = static_cast<std::int32_t>(seed % 8);
        rc.dv = static_cast<std::int32_t>(seed % 6);
        check_row_equals_rule(
            rc, ternary,
            [&](const LifDatapath& d, const LifRow& c, std::int32_t* u, std::int32_t* v,
                const float* x, float* o, std::int64_t n) {
                return ternary ? lif_row<Order::add_then_decay, DecayForm::bitshift, true, true>(
                                     d, c, u, v, x, o, n)
                               : lif_row<Order::add_then_decay, DecayForm::bitshift, false, true>(
                                     d, c, u, v, x, o, n);
            },
            seed + 2000);
    }
    CHECK(cases >= 15);  // the int32 rows were exercised, not only skipped
}
