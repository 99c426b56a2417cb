#include "attention/spiking/fixed_attention.hpp"

#include "neuron/fixed/fixed_lif.hpp"

namespace ternion {

std::uint64_t FixedNeuronGroup::step(std::int32_t* v, const float* x, float* s,
                                     std::int64_t n) const {
    return step_rows(v, x, n, s, 1, n);
}

std::uint64_t FixedNeuronGroup::step_rows(std::int32_t* v, const float* x, std::int64_t x_stride,
                                          float* s, std::int64_t rows, std::int64_t n) const {
    const fixed::LifRow row{&du, &dv, &bias, &vth, &vth_lo, true};
    return cleared_neuron_rows(d, row, ternary, v, x, x_stride, s, rows, n);
}

namespace {

// One group's constants, <pre>vth (required), <pre>vth_lo (ternary groups, required), <pre>dv,
// <pre>bias_mant, <pre>bias_exp and <pre>input_exp, each one integer for the whole group.
FixedNeuronGroup read_group(const NodeSpec& s, const fixed::LifDatapath& d, const std::string& pre,
                            bool ternary) {
    FixedNeuronGroup g;
    g.d = d;
    g.d.input_exp = read_int_in(s, pre + "input_exp", 0, -31, 31);
    if (std::max(g.d.input_exp, 0) + d.input_shift > 30)
        s.fail(pre + "input_exp", "input_exp + input_shift must not exceed 30");
    const std::int64_t unity = std::int64_t{1} << d.decay_shift;
    g.du = static_cast<std::int32_t>(unity);  // single compartment: u holds the step's input
    g.dv = read_int_in(s, pre + "dv", 0, 0, static_cast<int>(unity) - d.dv_offset) + d.dv_offset;
    const std::int64_t mant = s.integer_or(pre + "bias_mant", 0);
    const int bexp = read_int_in(s, pre + "bias_exp", 0, -31, 31);
    const std::int64_t bias = fixed::shift_floor(mant, bexp);
    if (mant < -(std::int64_t{1} << 31) || mant >= (std::int64_t{1} << 31) || bias > 2147483647 ||
        bias < -2147483647)
        s.fail(pre + "bias_mant", "bias_mant << bias_exp must fit 32 bits");
    g.bias = static_cast<std::int32_t>(bias);
    const std::int64_t vmax = d.membrane.max() >> d.threshold_shift;
    if (!s.has(pre + "vth")) s.fail(pre + "vth", "missing parameter (an integer threshold)");
    const std::int64_t vth = s.integer(pre + "vth");
    if (vth < 0 || vth > vmax)
        s.fail(pre + "vth", "must lie in [0, " + std::to_string(vmax) + "] (the membrane holds " +
                                std::to_string(d.membrane.bits) + " bits), got " +
                                std::to_string(vth));
    g.vth = static_cast<std::int32_t>(vth << d.threshold_shift);
    g.ternary = ternary;
    if (ternary) {
        if (!s.has(pre + "vth_lo"))
            s.fail(pre + "vth_lo", "missing parameter (the ternary neuron's lower threshold)");
        const std::int64_t lo = s.integer(pre + "vth_lo");
        if (lo < -vmax || lo > vth)
            s.fail(pre + "vth_lo", "must lie in [" + std::to_string(-vmax) + ", " +
                                       std::to_string(vth) + "], got " + std::to_string(lo));
        g.vth_lo = static_cast<std::int32_t>(lo << d.threshold_shift);
    }
    return g;
}

fixed::Overflow overflow(const NodeSpec& s, const std::string& p) {
    const auto o = s.string_opt(p).value_or("saturate");
    if (o == "saturate") return fixed::Overflow::saturate;
    if (o == "wrap") return fixed::Overflow::wrap;
    s.fail(p, "must be \"saturate\" or \"wrap\", got \"" + o + "\"");
}

}  // namespace

std::optional<FixedAttention> read_fixed_attention(const NodeSpec& s, const FixedGroups& g) {
    if (!s.has("datapath")) return std::nullopt;
    FixedAttention f;
    if (s.has("input_exp"))
        s.fail("input_exp",
               "each neuron group has its own (q_input_exp, ...): a node-wide "
               "input_exp would apply to every group at once");
    f.d = read_lif_datapath(s);
    if (f.d.decay != fixed::DecayForm::multiply || f.d.order != fixed::Order::decay_then_add)
        s.fail("datapath",
               "the attention's neurons are single-compartment neurons: they need a multiplier "
               "decay applied before the input (decay_form multiply, order decay_then_add)");
    if (f.d.max_spikes != 1) s.fail("max_spikes", "the attention's neurons fire once a step");
    FixedNeuronGroup* groups[4] = {&f.q, &f.k, &f.v, &f.mix};
    for (int i = 0; i < 4; ++i)
        if (g.prefix[static_cast<std::size_t>(i)])
            *groups[i] = read_group(s, f.d, g.prefix[static_cast<std::size_t>(i)],
                                    g.ternary[static_cast<std::size_t>(i)]);
    f.acc.bits = read_int_in(s, "acc_bits", 32, 2, 32);
    f.acc.overflow = overflow(s, "acc_overflow");
    if (g.shiftmax) {
        f.value.bits = read_int_in(s, "value_bits", 24, 2, 30);
        f.value_shift = read_int_in(s, "value_shift", 0, 0, 24);
        f.shift_cap = read_int_in(s, "shift_cap", 31, 0, 31);
        const auto r = s.string_opt("shift_rounding").value_or("floor");
        if (r != "floor" && r != "toward_zero")
            s.fail("shift_rounding", "must be \"floor\" or \"toward_zero\", got \"" + r + "\"");
        f.shift_toward_zero = r == "toward_zero";
    }
    return f;
}

}  // namespace ternion
