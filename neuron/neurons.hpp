// The neuron family: NIR's IF, LIF and CubaLIF (with a chosen discretisation and reset), the
// SpikingJelly multi-step LIF and parametric LIF, the ternary LIF (TSN) of Bipolar
// Self-attention, and NIR's Threshold. Each is an elementwise Node with per-neuron parameters.
//
// Discretisation of NIR's continuous LIF  tau dv/dt = (v_leak - v) + r I  with step dt:
//   euler:  v <- a v + g I + c,  a = 1 - dt/tau,     g = r dt/tau,   c = v_leak dt/tau
//   exact:  v <- a v + g I + c,  a = exp(-dt/tau),   g = r (1 - a),  c = v_leak (1 - a)
// so snnTorch's export (tau = dt/(1-beta), r = tau/dt) gives v <- beta v + I, its own update.
// A spike is v > v_threshold (NIR, strict) unless the node says ">=", and the reset is to
// v_reset ("zero") or by subtracting v_threshold ("subtract"), in the same step.
#pragma once
#include <bit>
#include <cstdint>
#include <optional>

#include "sim/node_spec.hpp"

namespace ternion {

enum class Compare { gt, ge };
enum class ResetMode { to_value, subtract };

void register_neuron_nodes(NodeFactory& f);

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

}  // namespace ternion
