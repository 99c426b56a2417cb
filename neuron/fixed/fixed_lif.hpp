// Integer neurons: the leaky integrate-and-fire datapath of neuromorphic chips, computed in the
// integers the chip holds (fixed::LifDatapath). One node type, ternion.FixedLIF, whose number
// formats are parameters of the node, preset by `datapath` ("loihi": Lava's bit-accurate Loihi
// LIF and TernaryLIF; "xylo": Xylo's bit-shift decays and 16-bit states) and overridable field
// by field. docs/fixed-point.md gives the equations and their sources.
#pragma once
#include "sim/core/node_spec.hpp"
#include "sim/kernels/fixed_point.hpp"

namespace ternion {

// The datapath a node declares: its `datapath` preset with any of the format fields overriding
// it. Refuses unknown presets and values outside what the formats allow, naming the field.
fixed::LifDatapath read_lif_datapath(const NodeSpec& s);
// The integer parameter p (dflt when absent), refused outside [lo, hi] with the field named.
int read_int_in(const NodeSpec& s, const std::string& p, int dflt, int lo, int hi);

// One step of `rows` rows of n single-compartment neurons with one set of constants (c.uniform):
// the current holds the step's input alone, the membrane decays by a multiplier before the input
// is added. The integer neuron groups inside other nodes (the integer attention's Q, K, V and
// output neurons) step with it, at the kernels' level, in one call: row r reads x + r * x_stride
// and writes v + r * n and out + r * n (the spike: 0, +1, -1). Returns the states that
// saturated or wrapped.
std::uint64_t cleared_neuron_rows(const fixed::LifDatapath& d, const fixed::LifRow& c, bool ternary,
                                  std::int32_t* v, const float* x, std::int64_t x_stride,
                                  float* out, std::int64_t rows, std::int64_t n);

void register_fixed_neuron_nodes(NodeFactory& f);

}  // namespace ternion
