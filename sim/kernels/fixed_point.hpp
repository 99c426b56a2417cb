// Integer arithmetic of neuromorphic datapaths: the shifts, roundings and overflow rules with
// which chips keep currents, membranes and weights in a fixed number of bits. Every integer
// neuron and synapse rule is written with these, so a chip's format is data (bits, overflow
// policy, decay form) and not a copy of the datapath. Values travel in int64 so that the
// products of a decay (a 24-bit state times a 12-bit constant) never overflow before the shift.
//
// Sources of the rules (docs/fixed-point.md lists them with file and line):
//   Lava's bit-accurate Loihi models: decays rounded toward zero, `u` wrapped into 24 bits,
//   `v` saturated to +-(2^23 - 1), input and threshold shifted left by 6, Dense's weight
//   exponent applied to the sum with an arithmetic (floor) shift;
//   Xylo (Rockpool's XyloSim, whose xylosim core was checked against the chip): bit-shift
//   decays that move a non-zero state by at least 1, 16-bit states saturated at every add,
//   the input added to the current before it decays, subtractive reset, up to 31 spikes.
#pragma once
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <string_view>

namespace ternion::fixed {

// What a register does with a value outside its range.
enum class Overflow {
    saturate,            // clamp to [-2^(b-1), 2^(b-1) - 1] (two's complement, as Xylo)
    saturate_symmetric,  // clamp to [-(2^(b-1) - 1), 2^(b-1) - 1] (as Lava clips v)
    wrap,                // modulo 2^b into (-2^(b-1), 2^(b-1)] (the interval of Lava's u wrap)
};

inline const char* overflow_name(Overflow o) {
    return o == Overflow::saturate             ? "saturate"
           : o == Overflow::saturate_symmetric ? "saturate_symmetric"
                                               : "wrap";
}

// A signed register of `bits` bits (2..32) and its overflow policy.
struct IntFormat {
    int bits = 24;
    Overflow overflow = Overflow::saturate;

    std::int64_t max() const { return (std::int64_t{1} << (bits - 1)) - 1; }
    // The value the register holds for x; `hit` is set when x was outside the range. Wrap:
    // +2^(b-1) is kept (Lava keeps it), -2^(b-1) becomes +2^(b-1). Defined with FitSelect below.
    std::int64_t fit(std::int64_t x, bool& hit) const;
};

// x / 2^s rounded toward zero: the magnitude is shifted (Lava's decays).
inline std::int64_t shift_toward_zero(std::int64_t x, int s) {
    return x >= 0 ? x >> s : -((-x) >> s);
}

// x * 2^e for e >= 0, floor(x / 2^-e) for e < 0: an arithmetic shift (Lava's weight exponent).
inline std::int64_t shift_floor(std::int64_t x, int e) {
    return e >= 0 ? x * (std::int64_t{1} << e) : x >> (-e);
}

// Decay of a state by a multiplier: x (2^s - d) / 2^s, rounded toward zero (Loihi's 12-bit
// du/dv with s = 12). d = 0 keeps x; d = 2^s clears it. Branch-free (the row loops vectorise it):
// the product's magnitude is shifted, its sign restored.
inline std::int64_t decay_multiply(std::int64_t x, std::int64_t d, int s) {
    const std::int64_t p = x * ((std::int64_t{1} << s) - d);
    const std::int64_t m = p >> 63;  // 0 or -1
    return ((((p ^ m) - m) >> s) ^ m) - m;
}

// Decay by a bit shift: x - (x >> dash), the shift arithmetic; where the shift gives 0 the state
// still moves one step toward zero (Xylo's "dash" decays: -17 >> 4 gives -15, 5 >> 4 gives 4).
inline std::int64_t decay_bitshift(std::int64_t x, std::int64_t dash) {
    const std::int64_t q = x >> dash;
    const std::int64_t sign = (x > 0) - (x < 0);
    return x - (q != 0 ? q : sign);
}

// How a datapath decays its states.
enum class DecayForm {
    multiply,  // x (2^shift - d) / 2^shift toward zero; d in [0, 2^shift] (Loihi's du, dv)
    bitshift,  // x - (x >> d), at least one step toward zero; d in [0, bits) (Xylo's dash)
};

// When the step's input enters the current, and how the membrane's sum saturates.
enum class Order {
    decay_then_add,  // u = fit(decay(u) + in); v = fit(decay(v) + u + bias)  (Loihi)
    add_then_decay,  // u = fit(u + in), then decayed; v = fit(v + fit(fit(u - dv) + bias)),
                     // dv what decay(v) removes: each add saturates on its own (Xylo)
};

// The integer leaky integrate-and-fire datapath of a chip's neuron core, one value per chip
// (or per layer): the formats of its two states, how they decay, how input and threshold are
// aligned, and how it fires and resets. Lava's Loihi model and Xylo are two settings of it.
struct LifDatapath {
    IntFormat current{24, Overflow::wrap};
    IntFormat membrane{24, Overflow::saturate_symmetric};
    DecayForm decay = DecayForm::multiply;
    Order order = Order::decay_then_add;
    int decay_shift = 12;  // multiply: the unity of du/dv is 2^decay_shift
    int du_offset = 1;     // added to du before use (Loihi 1's register offset)
    int dv_offset = 0;
    int input_exp = 0;    // summed input times 2^input_exp (floor), the synapse's exponent
    int input_shift = 6;  // then shifted left into the current's MSB-aligned range
    int threshold_shift = 6;
    bool fire_at_equal = false;  // v >= threshold instead of v > threshold
    bool subtract = false;       // reset by subtracting the threshold instead of to zero
    int max_spikes = 1;          // spikes per step (subtractive reset may emit several)
};

// One neuron's constants, already aligned: decays with their offsets, the bias shifted by its
// exponent, thresholds shifted by threshold_shift. `ternary` neurons also fire -1 below vth_lo
// (at or below it when the datapath fires at equality).
struct LifConstants {
    std::int64_t du = 0, dv = 0, bias = 0, vth = 0, vth_lo = 0;
    bool ternary = false;
};

// The overflow rule of a format, without branches (the row loops vectorise it): the bounds held
// by value (a loop that read them through a reference would reload them after every store),
// both policies computed and one kept.
struct FitSelect {
    std::int64_t hi, lo, half, mask;
    std::int64_t wrap;  // all ones when the format wraps: selects by masks, not branches
    explicit FitSelect(const IntFormat& f)
        : hi(f.max()),
          lo(f.overflow == Overflow::saturate ? -f.max() - 1 : -f.max()),
          half(f.max() + 1),
          mask(2 * (f.max() + 1) - 1),
          wrap(f.overflow == Overflow::wrap ? -1 : 0) {}
    // Policy: kRuntime selects by `wrap`; kSaturate and kWrap compute their own rule only.
    template <int Policy = 0>
    std::int64_t fit(std::int64_t x, bool& hit) const {
        const std::int64_t sat = std::max(lo, std::min(hi, x));
        const std::int64_t wrapped = ((x + half - 1) & mask) - half + 1;
        std::int64_t r;
        if constexpr (Policy == 1)
            r = sat;
        else if constexpr (Policy == 2)
            r = wrapped;
        else
            r = (wrapped & wrap) | (sat & ~wrap);
        hit |= r != x;
        return r;
    }
    std::int64_t operator()(std::int64_t x, bool& hit) const { return fit(x, hit); }
};

inline std::int64_t IntFormat::fit(std::int64_t x, bool& hit) const {
    return FitSelect(*this).fit(x, hit);
}

template <DecayForm F>
inline std::int64_t decay_of(std::int64_t x, std::int64_t d, int s) {
    return F == DecayForm::multiply ? decay_multiply(x, d, s) : decay_bitshift(x, d);
}

// The charge of one step, the one definition of both update orders: the new current and
// membrane from the old ones and the aligned input a, and whether each overflowed.
struct Charged {
    std::int64_t u = 0, v = 0;
    bool hit_u = false, hit_v = false;
};
template <Order O, DecayForm F>
inline Charged charge(const FitSelect& cur, const FitSelect& mem, int ds, std::int64_t u0,
                      std::int64_t v0, std::int64_t a, std::int64_t du, std::int64_t dv,
                      std::int64_t bias) {
    Charged q;
    if constexpr (O == Order::decay_then_add) {
        q.u = cur(decay_of<F>(u0, du, ds) + a, q.hit_u);
        q.v = mem(decay_of<F>(v0, dv, ds) + q.u + bias, q.hit_v);
    } else {
        q.u = decay_of<F>(cur(u0 + a, q.hit_u), du, ds);
        const std::int64_t dm = mem(q.u - (v0 - decay_of<F>(v0, dv, ds)), q.hit_v);
        q.v = mem(v0 + mem(dm + bias, q.hit_v), q.hit_v);
    }
    return q;
}

// One time step of one neuron: charge the current, then the membrane (with the new current),
// fire, reset. Returns the output (spike count, negative for a ternary -1); `overflows` counts
// each state that had to saturate or wrap. The rows (lif_row) compute the same charge.
inline int lif_step(const LifDatapath& d, const LifConstants& c, std::int32_t& u, std::int32_t& v,
                    std::int64_t in, std::uint64_t& overflows) {
    const FitSelect cur(d.current), mem(d.membrane);
    const std::int64_t a = shift_floor(in, d.input_exp) * (std::int64_t{1} << d.input_shift);
    const bool mul = d.decay == DecayForm::multiply;
    Charged q;
    if (d.order == Order::decay_then_add)
        q = mul ? charge<Order::decay_then_add, DecayForm::multiply>(cur, mem, d.decay_shift, u, v,
                                                                     a, c.du, c.dv, c.bias)
                : charge<Order::decay_then_add, DecayForm::bitshift>(cur, mem, d.decay_shift, u, v,
                                                                     a, c.du, c.dv, c.bias);
    else
        q = mul ? charge<Order::add_then_decay, DecayForm::multiply>(cur, mem, d.decay_shift, u, v,
                                                                     a, c.du, c.dv, c.bias)
                : charge<Order::add_then_decay, DecayForm::bitshift>(cur, mem, d.decay_shift, u, v,
                                                                     a, c.du, c.dv, c.bias);
    const std::int64_t un = q.u;
    std::int64_t vn = q.v;
    overflows += static_cast<std::uint64_t>(q.hit_u) + static_cast<std::uint64_t>(q.hit_v);
    int s = 0;
    const bool up = d.fire_at_equal ? vn >= c.vth : vn > c.vth;
    if (up) {
        if (!d.subtract) {
            s = 1;
            vn = 0;
        } else {
            // Subtract the threshold once per spike, at most max_spikes times.
            std::int64_t n = c.vth > 0 ? (vn - c.vth) / c.vth + 1 : d.max_spikes;
            if (!d.fire_at_equal && c.vth > 0 && (vn % c.vth) == 0) --n;  // v = n th fires n-1
            n = n < 1 ? 1 : (n > d.max_spikes ? d.max_spikes : n);
            s = static_cast<int>(n);
            vn -= n * c.vth;
        }
    } else if (c.ternary && (d.fire_at_equal ? vn <= c.vth_lo : vn < c.vth_lo)) {
        s = -1;
        vn = d.subtract ? vn - c.vth_lo : 0;
    }
    u = static_cast<std::int32_t>(un);
    v = static_cast<std::int32_t>(vn);
    return s;
}

// The neurons of a row, constants as int32 arrays (one value each, or a single value for all
// when `uniform`): what lif_row reads. Thresholds and bias are aligned already (LifConstants).
struct LifRow {
    const std::int32_t *du = nullptr, *dv = nullptr, *bias = nullptr, *vth = nullptr, *lo = nullptr;
    bool uniform = false;
};

// A float input (the sum of integer weights) as the integer the register receives: dropped
// toward minus infinity and clamped to int32 (no datapath holds more). Branch-free.
inline std::int64_t input_int(float x) {
    // Written with integer selects only, so that loops over it vectorise: |x| >= 2^31 (and
    // NaN) is recognised from the exponent bits and clamped after the conversion.
    const auto b = std::bit_cast<std::uint32_t>(x);
    const std::int32_t big = -static_cast<std::int32_t>(((b >> 23) & 0xffu) >= 158u);
    const float safe = std::bit_cast<float>(b & ~static_cast<std::uint32_t>(big));
    const auto t = static_cast<std::int32_t>(safe);  // toward zero
    const std::int32_t fl = t - static_cast<std::int32_t>(static_cast<float>(t) > safe);
    const std::int32_t edge = (b >> 31) ? std::int32_t{-2147483647 - 1} : std::int32_t{2147483520};
    return (fl & ~big) | (edge & big);
}

// One step of n neurons that fire at most once a step (max_spikes 1): the same integers as
// lif_step, written without branches so the loop vectorises. out[k] = the spike (0, +1, -1).
// Returns the overflows. `Cleared`: every du clears the current (a multiplier decay of
// 2^decay_shift, decay_then_add), so u is the step's input alone: single-compartment neurons,
// what `ternion quantize` writes, skip a 64-bit product per neuron.
// CurP, MemP: the current's and membrane's overflow rule fixed at compile time (1 saturate,
// 2 wrap) or chosen per element (0).
inline constexpr int kRuntime = 0, kSaturate = 1, kWrap = 2;
template <Order O, DecayForm F, bool Ternary, bool Uniform, bool Cleared = false,
          int CurP = kRuntime, int MemP = kRuntime>
std::uint64_t lif_row(const LifDatapath& d, const LifRow& c, std::int32_t* __restrict u,
                      std::int32_t* __restrict v, const float* __restrict x, float* __restrict out,
                      std::int64_t n) {
    // Everything the loop reads, as locals.
    const FitSelect cur(d.current), mem(d.membrane);
    const int up = d.input_exp > 0 ? d.input_exp : 0, down = d.input_exp < 0 ? -d.input_exp : 0;
    const int ishift = d.input_shift, ds = d.decay_shift;
    const std::int64_t ge = d.fire_at_equal ? 1 : 0;
    const std::int64_t sub = d.subtract ? -1 : 0;  // mask: selects, not branches
    const std::int32_t *cdu = c.du, *cdv = c.dv, *cb = c.bias, *cth = c.vth, *clo = c.lo;
    const auto at = [](const std::int32_t* p, std::int64_t k) -> std::int64_t {
        return Uniform ? p[0] : p[k];
    };
    std::uint64_t hits = 0;
    for (std::int64_t k = 0; k < n; ++k) {
        const std::int64_t a = ((input_int(x[k]) << up) >> down) << ishift;
        std::int64_t un, vn;
        const std::int64_t v0 = v[k];
        bool hu = false, hv = false;
        if constexpr (Cleared) {
            un = cur.fit<CurP>(a, hu);
            vn = mem.fit<MemP>(decay_of<F>(v0, at(cdv, k), ds) + un + at(cb, k), hv);
        } else {
            const Charged q =
                charge<O, F>(cur, mem, ds, u[k], v0, a, at(cdu, k), at(cdv, k), at(cb, k));
            un = q.u;
            vn = q.v;
            hu = q.hit_u;
            hv = q.hit_v;
        }
        hits += static_cast<std::uint64_t>(hu) + static_cast<std::uint64_t>(hv);
        const std::int64_t th = at(cth, k);
        const bool pos = vn > th - ge;
        bool neg = false;
        std::int64_t lo = 0;
        if constexpr (Ternary) {
            lo = at(clo, k);
            neg = !pos && vn < lo + ge;
        }
        const std::int64_t pm = -static_cast<std::int64_t>(pos);
        const std::int64_t reset_to = (vn - ((th & pm) | (lo & ~pm))) & sub;
        const bool fired = pos | neg;
        // A cleared current is never read again: its store would only cost bandwidth.
        if constexpr (!Cleared) u[k] = static_cast<std::int32_t>(un);
        v[k] = static_cast<std::int32_t>(fired ? reset_to : vn);
        out[k] = static_cast<float>(static_cast<int>(pos) - static_cast<int>(neg));
    }
    return hits;
}

// The single-compartment row again, in int32 lanes (twice as many per vector, and AVX2 has no
// 64-bit multiply): exact where every intermediate fits 31 bits, which row32_fits checks.
// The decay's product splits |v| into its bits above and below the shift, so that neither
// partial product passes 2^30: |v| m >> s = (|v| >> s) m + ((|v| & (2^s - 1)) m >> s).
inline bool row32_fits(const LifDatapath& d, const LifRow& c) {
    const int s = d.input_shift + (d.input_exp > 0 ? d.input_exp : 0);
    const std::int64_t b = c.bias[0];
    return c.uniform && d.decay == DecayForm::multiply && d.order == Order::decay_then_add &&
           d.decay_shift <= 15 && d.current.bits <= 29 && d.membrane.bits <= 29 && s <= 30 &&
           b < (std::int64_t{1} << 29) && b > -(std::int64_t{1} << 29);
}

template <bool Ternary, int CurP, int MemP>
std::uint64_t lif_row32_cleared(const LifDatapath& d, const LifRow& c, std::int32_t* __restrict v,
                                const float* __restrict x, float* __restrict out, std::int64_t n) {
    static_assert(CurP != kRuntime && MemP != kRuntime);
    const int down = d.input_exp < 0 ? -d.input_exp : 0;
    const int sh = d.input_shift + (d.input_exp > 0 ? d.input_exp : 0), ds = d.decay_shift;
    const auto bound = [](const IntFormat& f, bool wrap, std::int32_t& lo, std::int32_t& hi) {
        hi = static_cast<std::int32_t>(wrap ? f.max() + 1 : f.max());
        lo = static_cast<std::int32_t>(
            wrap ? -f.max() : (f.overflow == Overflow::saturate ? -f.max() - 1 : -f.max()));
    };
    std::int32_t clo, chi, mlo, mhi;
    bound(d.current, CurP == kWrap, clo, chi);
    bound(d.membrane, MemP == kWrap, mlo, mhi);
    // The input range whose shifted value stays within the current's range.
    const std::int32_t in_hi = chi >> sh, in_lo = -((-clo) >> sh);
    // t outside [in_lo, in_hi] as one unsigned comparison: fewer live constants, so the loop
    // keeps its invariants in registers at AVX2's 16.
    const auto in_span = static_cast<std::uint32_t>(in_hi) - static_cast<std::uint32_t>(in_lo);
    const std::uint32_t chalf = static_cast<std::uint32_t>(d.current.max()) + 1,
                        cmask = 2 * chalf - 1,
                        mhalf = static_cast<std::uint32_t>(d.membrane.max()) + 1,
                        mmask = 2 * mhalf - 1;
    const auto m = static_cast<std::int32_t>((std::int64_t{1} << ds) - c.dv[0]);
    const std::int32_t low_bits = (std::int32_t{1} << ds) - 1;
    const std::int32_t bias = c.bias[0], th = c.vth[0], lo_th = Ternary ? c.lo[0] : 0;
    const std::int32_t ge = d.fire_at_equal ? 1 : 0, sub = d.subtract ? -1 : 0;
    const std::int32_t th_gt = th - ge, lo_lt = lo_th + ge;  // v > th_gt fires, v < lo_lt fires -1
    std::uint32_t hits = 0;
    for (std::int64_t k = 0; k < n; ++k) {
        const std::int32_t t = static_cast<std::int32_t>(input_int(x[k])) >> down;
        std::int32_t un;
        if constexpr (CurP == kWrap) {
            const std::uint32_t a = static_cast<std::uint32_t>(t) << sh;
            un = static_cast<std::int32_t>((a + chalf - 1) & cmask) -
                 static_cast<std::int32_t>(chalf) + 1;
        } else {
            un = t > in_hi
                     ? chi
                     : (t < in_lo ? clo
                                  : static_cast<std::int32_t>(static_cast<std::uint32_t>(t) << sh));
        }
        const bool hu = static_cast<std::uint32_t>(t) - static_cast<std::uint32_t>(in_lo) > in_span;
        const std::int32_t v0 = v[k];
        const std::int32_t neg_mask = v0 >> 31;
        const std::int32_t av = (v0 ^ neg_mask) - neg_mask;
        const std::int32_t q = (av >> ds) * m + (((av & low_bits) * m) >> ds);
        const std::int32_t sum = ((q ^ neg_mask) - neg_mask) + un + bias;
        std::int32_t vn;
        if constexpr (MemP == kWrap)
            vn = static_cast<std::int32_t>((static_cast<std::uint32_t>(sum) + mhalf - 1) & mmask) -
                 static_cast<std::int32_t>(mhalf) + 1;
        else
            vn = std::max(mlo, std::min(mhi, sum));
        const bool hv = vn != sum;
        hits += static_cast<std::uint32_t>(hu) + static_cast<std::uint32_t>(hv);
        // Masks, not booleans: the ternary neuron's second comparison then vectorises too.
        const std::int32_t pm = -static_cast<std::int32_t>(vn > th_gt);
        std::int32_t nm = 0;
        if constexpr (Ternary) nm = -static_cast<std::int32_t>(vn < lo_lt) & ~pm;
        const std::int32_t reset_to = (vn - ((th & pm) | (lo_th & ~pm))) & sub;
        const std::int32_t fired = pm | nm;
        v[k] = (reset_to & fired) | (vn & ~fired);
        out[k] = static_cast<float>((pm & 1) - (nm & 1));
    }
    return hits;
}

}  // namespace ternion::fixed
