// The neuron rules, each defined once: SpikingJelly's LIF charge in all its forms, BSA's ternary
// spiking neuron (TSN), and what a neuron update books. The neuron nodes (neuron/) and the
// neurons inside the spiking attention nodes (attention/) both compute through these, so a
// SpikingJelly LIF computes the same floats wherever it sits. Each rule follows the operation
// order of the framework it reproduces: a different order rounds differently and flips spikes
// that sit on the threshold. No Node and no file format here: readers that fill these structs
// from a model file are in neuron/neuron_params.hpp.
#pragma once
#include <bit>
#include <cstdint>
#include <optional>
#include <vector>

#include "sim/kernels/op_counts.hpp"

namespace ternion::kernels {

// 1/t when t is a power of two whose reciprocal is a normal float: then a / t == a * (1/t) for
// every a (both are a * 2^-k correctly rounded), so a product may stand in for the division
// SpikingJelly writes, bit for bit, at a fraction of its cost. Else nothing. Read off the bits
// (no library call), so callers may ask once per row.
inline std::optional<float> exact_reciprocal(float t) {
    const auto bits = std::bit_cast<std::uint32_t>(t);
    const std::uint32_t exponent = bits >> 23;  // sign bit included: negatives fail below
    // A zero mantissa, and t = 2^(e-127) with 1/t = 2^(127-e) normal: e in [1, 253].
    if ((bits & 0x7fffffu) != 0 || exponent < 1 || exponent > 253) return std::nullopt;
    return std::bit_cast<float>((254u - exponent) << 23);
}

// SpikingJelly's LIF charge (LIFNode.neuronal_charge, spikingjelly/activation_based/neuron.py):
//   decay_input                      v + (x - (v - v_reset)) / tau
//   no decay_input, leak "difference" v - (v - v_reset) / tau + x
//   no decay_input, leak "scale"      v * (1 - 1/tau) + x   (SpikingJelly's branch for v_reset
//                                     0 or None; the factor computed in double, used as float32)
// The eval path of activation_based (the step_mode attribute) takes the difference for every
// hard reset, the other paths the scale form at v_reset 0: a model file names the form it was
// trained with (leak_form), else the default is the scale form at v_reset 0.
// ParametricLIF multiplies by its sigmoid(w) instead of dividing by tau (keep = 1 - sigmoid(w)
// in float32, as torch computes it).
struct SjLifCharge {
    bool decay_input = true;
    bool scale_form = true;  // used only without decay_input
    float v_reset = 0.0f;
    float tau = 2.0f;
    std::optional<float> inv_tau;  // exact_reciprocal(tau): the same floats as dividing
    std::optional<float> k;        // ParametricLIF: sigmoid(w), multiplied instead of 1/tau
    float keep = 0.5f;             // the scale form's factor

    static SjLifCharge from_tau(double tau, bool decay_input, float v_reset, bool scale_form) {
        SjLifCharge c;
        c.decay_input = decay_input;
        c.scale_form = scale_form;
        c.v_reset = v_reset;
        c.tau = static_cast<float>(tau);
        c.inv_tau = exact_reciprocal(c.tau);
        c.keep = static_cast<float>(1.0 - 1.0 / tau);
        return c;
    }
    static SjLifCharge from_sigmoid(float k, bool decay_input, float v_reset, bool scale_form) {
        SjLifCharge c;
        c.decay_input = decay_input;
        c.scale_form = scale_form;
        c.v_reset = v_reset;
        c.k = k;
        c.keep = 1.0f - k;
        return c;
    }

    // Calls f(charge) once, with charge(v, x) -> the charged membrane for this neuron's form:
    // the form is chosen here, outside the caller's loop over neurons, so that loop vectorises.
    template <class F>
    void with(F&& f) const {
        if (!decay_input && scale_form) {
            f([keep = keep](float v, float x) { return v * keep + x; });
            return;
        }
        const auto charge = [&](auto scale) {
            if (decay_input)
                f([scale, vr = v_reset](float v, float x) { return v + scale(x - (v - vr)); });
            else
                f([scale, vr = v_reset](float v, float x) { return v - scale(v - vr) + x; });
        };
        if (k)
            charge([r = *k](float a) { return a * r; });
        else if (inv_tau)
            charge([r = *inv_tau](float a) { return a * r; });
        else
            charge([t = tau](float a) { return a / t; });
    }
};

// A neuron's update as one linear recurrence per neuron, what a quantiser maps onto an integer
// datapath (fixed::LifDatapath): v <- a v + g x + c; a spike when v crosses `threshold` (> or
// >=; a ternary neuron also fires -1 when -v crosses it); then v <- v_reset, or v - threshold
// when `subtract`. Arrays hold one value per neuron or a single value for all.
struct LeakyForm {
    std::vector<float> a, g, c, threshold, v_reset;
    float v_initial = 0.0f;  // the membrane at the start of a sample
    bool subtract = false, fire_at_equal = false, ternary = false;
};

// SpikingJelly's charge in that form (the order of its float operations aside).
inline void leaky_form_of(const SjLifCharge& ch, LeakyForm& f) {
    const float r = ch.k ? *ch.k : static_cast<float>(1.0 / ch.tau);
    const bool plain = !ch.decay_input && ch.scale_form;
    f.a = {plain ? ch.keep : 1.0f - r};
    f.g = {ch.decay_input ? r : 1.0f};
    f.c = {plain ? 0.0f : ch.v_reset * r};
    f.v_reset = {ch.v_reset};
    f.v_initial = ch.v_reset;
}

// A SpikingJelly LIF with a hard reset that fires on v >= v_threshold: the neurons of the
// spiking attention nodes (Spikformer's q/k/v/attn LIFs).
struct SjLif {
    SjLifCharge charge;
    float v_threshold = 1.0f;
};

// One step of n such neurons with a charge chosen by SjLifCharge::with: h the membranes, x the
// inputs, s the spikes (0/1). Selects, not branches: spikes are unpredictable, and the loop
// vectorises. x and s may be the same array (an in-place update).
template <class Charge>
inline void sj_lif_row_with(Charge charge, float vth, float vr, float* __restrict h, const float* x,
                            float* s, std::int64_t n) {
    for (std::int64_t j = 0; j < n; ++j) {
        const float v = charge(h[j], x[j]);
        const bool f = v >= vth;
        s[j] = f ? 1.0f : 0.0f;
        h[j] = f ? vr : v;
    }
}
// The same for one row, the charge chosen here (callers with many rows choose it once and call
// sj_lif_row_with).
inline void sj_lif_row(const SjLif& p, float* __restrict h, const float* x, float* s,
                       std::int64_t n) {
    p.charge.with(
        [&](auto charge) { sj_lif_row_with(charge, p.v_threshold, p.charge.v_reset, h, x, s, n); });
}

// BSA's ternary spiking neuron (TSN): U = H + X; +1 when fires(U, th), -1 when fires(-U, th);
// H = 0 after either spike, else decay * U. `fires` is the threshold comparison (>= in BSA).
template <class Fires>
inline float tsn_update(float& h, float x, float decay, float th, Fires fires) {
    // Selects, not branches: spikes are unpredictable, and loops over neurons vectorise.
    const float u = h + x;
    const bool pos = fires(u, th), neg = fires(-u, th);
    h = (pos | neg) ? 0.0f : decay * u;
    return pos ? 1.0f : (neg ? -1.0f : 0.0f);
}

inline constexpr auto fires_at_or_above = [](float u, float th) { return u >= th; };

// The TSN of the attention nodes: one decay and threshold, fires on >=.
struct Tsn {
    float decay = 0.5f;
    float v_threshold = 1.0f;
};
inline float tsn_step(const Tsn& p, float& h, float x) {
    return tsn_update(h, x, p.decay, p.v_threshold, fires_at_or_above);
}
inline void tsn_row(const Tsn& p, float* __restrict h, const float* __restrict x,
                    float* __restrict s, std::int64_t n) {
    for (std::int64_t j = 0; j < n; ++j) s[j] = tsn_step(p, h[j], x[j]);
}

// What `n` neuron updates book, wherever the neurons sit: one update and, for neurons that
// fire, one threshold comparison each; `state_vars` float32 state variables read and written
// per neuron. Spikes are booked apart (book_spikes), once they are known.
// Integer neurons pass the bytes their states occupy (book_state_bytes).
inline void book_state_bytes(OpCounts& ops, std::uint64_t n, std::uint64_t state_bytes,
                             bool fires) {
    ops.neuron_update += n;
    if (fires) ops.cmp += n;
    ops.state_read_bytes += n * state_bytes;
    ops.state_write_bytes += n * state_bytes;
}
inline void book_neuron_updates(OpCounts& ops, std::uint64_t n, std::uint64_t state_vars,
                                bool fires) {
    book_state_bytes(ops, n, sizeof(float) * state_vars, fires);
}
// One address event per emitted spike.
inline void book_spikes(OpCounts& ops, std::uint64_t spikes) {
    ops.spikes_out += spikes;
    ops.spike_write_bytes += spikes * sizeof(std::uint32_t);
}

}  // namespace ternion::kernels
