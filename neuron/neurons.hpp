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
#include <cstdint>

#include "sim/core/node_spec.hpp"

namespace ternion {

enum class Compare { gt, ge };
enum class ResetMode { to_value, subtract };

void register_neuron_nodes(NodeFactory& f);

}  // namespace ternion
