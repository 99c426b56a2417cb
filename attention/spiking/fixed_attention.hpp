// The integer form of the spiking attention nodes (SSA, SDSA, BSA): what a node computes when
// its file declares a chip `datapath`. Its projections hold integer weights (exact as float
// sums), its neurons are single-compartment neurons of that datapath, one constant set per
// group (Q, K, V and the mixing neurons: SSA's attention LIFs, SDSA's mask neurons, BSA's output
// TSNs), and the products land in declared registers: the accumulator of the attention's
// products, BSA's V register, the shift cap and rounding of Shiftmax's V >> n.
// docs/fixed-point.md ("Integer attention") gives the equations and the parameter names.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "sim/core/node_spec.hpp"
#include "sim/kernels/fixed_point.hpp"

namespace ternion {

// One group of a node's integer neurons: the node's datapath with this group's input exponent,
// and the group's constants, aligned as fixed::LifConstants (bias shifted by its exponent,
// thresholds by threshold_shift, dv with its offset).
struct FixedNeuronGroup {
    fixed::LifDatapath d;
    std::int32_t du = 0, dv = 0, bias = 0, vth = 0, vth_lo = 0;
    bool ternary = false;
    // One step of n neurons: x the integer inputs (as floats), v the membranes, s the spikes.
    // Returns the states that saturated or wrapped.
    std::uint64_t step(std::int32_t* v, const float* x, float* s, std::int64_t n) const;
    // `rows` rows of n neurons, row r's inputs at x + r * x_stride (Q, K, V of one token).
    std::uint64_t step_rows(std::int32_t* v, const float* x, std::int64_t x_stride, float* s,
                            std::int64_t rows, std::int64_t n) const;
};

struct FixedAttention {
    fixed::LifDatapath d;
    FixedNeuronGroup q, k, v, mix;
    // The products' accumulator (SSA's Q K^T V, SDSA's column counts, BSA's Shiftmax . V sum),
    // formed exactly and then held in acc.bits.
    fixed::IntFormat acc{32, fixed::Overflow::saturate};
    // BSA: the V register (the projection's sum shifted left by value_shift), the largest shift
    // Shiftmax applies (a term V >> n with n > shift_cap is dropped) and the shift's rounding.
    fixed::IntFormat value{24, fixed::Overflow::saturate};
    int value_shift = 0, shift_cap = 31;
    bool shift_toward_zero = false;
    // The accumulator's values kept as they are ([-2^(b-1), 2^(b-1) - 1] saturating,
    // (-2^(b-1), 2^(b-1)] wrapping): a sum inside needs no fit.
    std::int64_t acc_lo() const {
        return acc.overflow == fixed::Overflow::wrap ? -acc.max() : -acc.max() - 1;
    }
    std::int64_t acc_hi() const {
        return acc.overflow == fixed::Overflow::wrap ? acc.max() + 1 : acc.max();
    }
    // Bytes of one neuron's state (its membrane; the current is not kept).
    std::uint64_t state_bytes() const {
        return static_cast<std::uint64_t>((d.membrane.bits + 7) / 8);
    }
};

// The integer neuron groups a variant has, by parameter prefix ("q_", ..., or null for a group
// it lacks), and which of them are ternary.
struct FixedGroups {
    std::array<const char*, 4> prefix;  // Q, K, V, mixing neurons
    std::array<bool, 4> ternary;
    bool shiftmax = false;  // BSA's V register and shift parameters
};

// The node's integer form, or nothing when it declares no `datapath`. Refuses values outside
// what the formats allow, naming the field.
std::optional<FixedAttention> read_fixed_attention(const NodeSpec& s, const FixedGroups& g);

}  // namespace ternion
