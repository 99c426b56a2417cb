// The neuron update rules that more than one node type needs, defined once: the neuron nodes
// (neuron/neurons.cpp) and the neurons inside the spiking attention nodes (attention/) both
// call these, so a SpikingJelly LIF or a ternary TSN computes the same floats wherever it sits.
// Each rule follows the operation order of the framework it reproduces, because a different
// order rounds differently and flips spikes that sit on the threshold.
#pragma once

namespace ternion::kernels {

// SpikingJelly's LIF charge (LIFNode.neuronal_charge, spikingjelly/activation_based/neuron.py):
// with decay_input   v + (x - (v - v_reset)) / tau,
// without            v - (v - v_reset) / tau + x.
// `scale(a)` is a / tau, or a product that gives the same float (an exact reciprocal of a
// power-of-two tau, ParametricLIF's sigmoid(w)).
template <class Scale>
inline float sj_charge(float v, float x, float v_reset, bool decay_input, Scale scale) {
    return decay_input ? v + scale(x - (v - v_reset)) : v - scale(v - v_reset) + x;
}

// SpikingJelly's form without decay_input at v_reset = 0: v * (1 - 1/tau) + x, where the factor
// is computed in double and used as float32 (sj_keep).
inline float sj_charge_keep(float v, float x, float keep) {
    return v * keep + x;
}
inline float sj_keep(double tau) {
    return static_cast<float>(1.0 - 1.0 / tau);
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

}  // namespace ternion::kernels
