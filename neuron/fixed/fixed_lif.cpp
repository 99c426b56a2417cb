#include "neuron/fixed/fixed_lif.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "sim/kernels/neuron_rules.hpp"
#include "sim/simd/simd.hpp"

namespace ternion {

namespace {

using fixed::DecayForm;
using fixed::LifDatapath;
using fixed::Overflow;

LifDatapath preset(const NodeSpec& s) {
    const std::string name = s.string_opt("datapath").value_or("loihi");
    LifDatapath d;  // the defaults are Lava's bit-accurate Loihi model
    if (name == "loihi") return d;
    if (name == "xylo") {
        d.current = {16, Overflow::saturate};
        d.membrane = {16, Overflow::saturate};
        d.decay = DecayForm::bitshift;
        d.order = fixed::Order::add_then_decay;
        d.du_offset = d.dv_offset = 0;
        d.input_shift = d.threshold_shift = 0;
        d.subtract = true;
        d.fire_at_equal = true;
        d.max_spikes = 31;
        return d;
    }
    s.fail("datapath", "must be \"loihi\" or \"xylo\", got \"" + name + "\"");
}

Overflow overflow(const NodeSpec& s, const std::string& p, Overflow dflt) {
    auto o = s.string_opt(p);
    if (!o) return dflt;
    if (*o == "saturate") return Overflow::saturate;
    if (*o == "saturate_symmetric") return Overflow::saturate_symmetric;
    if (*o == "wrap") return Overflow::wrap;
    s.fail(p, "must be \"saturate\", \"saturate_symmetric\" or \"wrap\", got \"" + *o + "\"");
}

}  // namespace

int read_int_in(const NodeSpec& s, const std::string& p, int dflt, int lo, int hi) {
    const std::int64_t v = s.integer_or(p, dflt);
    if (v < lo || v > hi)
        s.fail(p, "must lie in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " +
                      std::to_string(v));
    return static_cast<int>(v);
}

LifDatapath read_lif_datapath(const NodeSpec& s) {
    LifDatapath d = preset(s);
    d.current.bits = read_int_in(s, "current_bits", d.current.bits, 2, 32);
    d.membrane.bits = read_int_in(s, "membrane_bits", d.membrane.bits, 2, 32);
    d.current.overflow = overflow(s, "current_overflow", d.current.overflow);
    d.membrane.overflow = overflow(s, "membrane_overflow", d.membrane.overflow);
    if (auto f = s.string_opt("decay_form")) {
        if (*f != "multiply" && *f != "bitshift")
            s.fail("decay_form", "must be \"multiply\" or \"bitshift\", got \"" + *f + "\"");
        d.decay = *f == "multiply" ? DecayForm::multiply : DecayForm::bitshift;
    }
    if (auto o = s.string_opt("order")) {
        if (*o != "decay_then_add" && *o != "add_then_decay")
            s.fail("order", "must be \"decay_then_add\" or \"add_then_decay\", got \"" + *o + "\"");
        d.order =
            *o == "decay_then_add" ? fixed::Order::decay_then_add : fixed::Order::add_then_decay;
    }
    d.decay_shift = read_int_in(s, "decay_shift", d.decay_shift, 1, 24);
    d.du_offset = read_int_in(s, "du_offset", d.du_offset, 0, 1);
    d.dv_offset = read_int_in(s, "dv_offset", d.dv_offset, 0, 1);
    d.input_exp = read_int_in(s, "input_exp", d.input_exp, -31, 31);
    d.input_shift = read_int_in(s, "input_shift", d.input_shift, 0, 24);
    d.threshold_shift = read_int_in(s, "threshold_shift", d.threshold_shift, 0, 24);
    if (auto c = s.string_opt("compare")) {
        if (*c != ">" && *c != ">=")
            s.fail("compare", "must be \">\" or \">=\", got \"" + *c + "\"");
        d.fire_at_equal = *c == ">=";
    }
    if (auto r = s.string_opt("reset_mode")) {
        if (*r != "zero" && *r != "subtract")
            s.fail("reset_mode", "must be \"zero\" or \"subtract\", got \"" + *r + "\"");
        d.subtract = *r == "subtract";
    }
    if (std::max(d.input_exp, 0) + d.input_shift > 30)
        s.fail(d.input_shift > 0 ? "input_shift" : "input_exp",
               "input_exp + input_shift must not exceed 30 (got " +
                   std::to_string(std::max(d.input_exp, 0) + d.input_shift) + ")");
    d.max_spikes = read_int_in(s, "max_spikes", d.max_spikes, 1, 255);
    if (d.max_spikes > 1 && !d.subtract)
        s.fail("max_spikes", "more than one spike per step needs reset_mode \"subtract\"");
    return d;
}

namespace {

struct FixedState : NodeState {
    std::vector<std::int32_t> u, v;
    std::vector<std::int64_t> quiet_until;  // refractory neurons: v held up to this step
    std::vector<BlockIndices> block_spikes;
    std::vector<std::uint64_t> block_overflows;
    std::int64_t block = 0;
};

// ternion.FixedLIF: per neuron du, dv, bias_mant, bias_exp, vth (and vth_lo for a ternary
// neuron), all integers; the datapath fields as read_lif_datapath.
class FixedLifNode final : public Node {
  public:
    explicit FixedLifNode(const NodeSpec& s) : Node(s.name(), s.type()), d_(read_lif_datapath(s)) {
        du_ = param(s, "du", 0);
        dv_ = param(s, "dv", 0);
        mant_ = param(s, "bias_mant", 0);
        exp_ = param(s, "bias_exp", 0);
        vth_ = param(s, "vth", std::nullopt);
        ternary_ = s.has("vth_lo");
        if (ternary_) lo_ = param(s, "vth_lo", std::nullopt);
        if (ternary_ && d_.max_spikes > 1)
            s.fail("vth_lo", "a ternary neuron emits one spike per step (max_spikes 1)");
        read_schedule(s);
        check(s);
    }
    NodeCategory category() const override { return NodeCategory::neuron; }
    bool is_spiking() const override { return true; }
    bool reads_values_only() const override { return true; }
    CountTraits count_traits() const override { return {.accumulator_bits = d_.current.bits}; }
    Shape declared_in_shape() const override { return shape_; }
    void bind(const Shape& in) override {
        if (n_ > 1 && numel(in) != n_)
            fail(first_,
                 "has " + std::to_string(n_) + " neurons but the input is " + shape_str(in));
        in_shape_ = out_shape_ = in;
        const auto n = static_cast<std::size_t>(numel(in));
        c_.assign(n, {});
        for (std::size_t k = 0; k < n; ++k) {
            auto& c = c_[k];
            c.du = at(du_, k) + (d_.decay == DecayForm::multiply ? d_.du_offset : 0);
            c.dv = at(dv_, k) + (d_.decay == DecayForm::multiply ? d_.dv_offset : 0);
            c.bias = fixed::shift_floor(at(mant_, k), static_cast<int>(at(exp_, k)));
            c.vth = at(vth_, k) << d_.threshold_shift;
            c.ternary = ternary_;
            if (ternary_) c.vth_lo = at(lo_, k) << d_.threshold_shift;
        }
        build_columns();
    }
    std::unique_ptr<NodeState> make_state() const override {
        auto st = std::make_unique<FixedState>();
        st->u.assign(static_cast<std::size_t>(in_size()), 0);
        st->v.assign(static_cast<std::size_t>(in_size()), 0);
        if (refractory_) st->quiet_until.assign(static_cast<std::size_t>(in_size()), -1);
        return st;
    }
    bool reset_state(NodeState* s) const override {
        auto* st = static_cast<FixedState*>(s);
        std::fill(st->u.begin(), st->u.end(), 0);
        std::fill(st->v.begin(), st->v.end(), 0);
        std::fill(st->quiet_until.begin(), st->quiet_until.end(), -1);
        return true;
    }
    bool membrane(const NodeState* s, std::vector<float>& out) const override {
        const auto& v = static_cast<const FixedState*>(s)->v;
        // Traces hold float32: exact for membranes of up to 25 bits (Loihi 24, Xylo 16).
        out.assign(v.begin(), v.end());
        return true;
    }
    std::vector<std::pair<std::string, std::string>> summary() const override;

    void step(const Activity& in, NodeState* state, Activity& out,
              const StepContext& ctx) const override;

  private:
    // Lava's LIFReset (u and v cleared at the start of every reset_interval-th step, counted
    // from Lava's first step 1, at reset_offset) and LIFRefractory (after a spike, v is held for
    // refractory_period steps while u integrates).
    void read_schedule(const NodeSpec& s) {
        reset_interval_ = s.integer_or("reset_interval", 0);
        reset_offset_ = s.integer_or("reset_offset", 0);
        refractory_ = s.integer_or("refractory_period", 0);
        if (reset_interval_ < 0) s.fail("reset_interval", "must be >= 1 (0: no periodic reset)");
        if (reset_offset_ < 0) s.fail("reset_offset", "must be >= 0");
        if (s.has("reset_offset") && reset_interval_ == 0)
            s.fail("reset_offset", "needs reset_interval");
        if (refractory_ < 0 || refractory_ > 1000000)
            s.fail("refractory_period", "must lie in [0, 1000000] steps");
        if (refractory_ && (d_.order != fixed::Order::decay_then_add || d_.max_spikes > 1))
            s.fail("refractory_period",
                   "is Loihi's rule: it needs order decay_then_add and one spike a step");
    }
    // One neuron in its refractory period: u charges, v is held, no spike.
    void quiet_step(std::size_t k, std::int32_t& u, std::int64_t in, std::uint64_t& over) const {
        const fixed::FitSelect cur(d_.current);
        const std::int64_t a =
            fixed::shift_floor(in, d_.input_exp) * (std::int64_t{1} << d_.input_shift);
        bool hit = false;
        const std::int64_t d = c_[k].du;
        const std::int64_t kept = d_.decay == DecayForm::multiply
                                      ? fixed::decay_multiply(u, d, d_.decay_shift)
                                      : fixed::decay_bitshift(u, d);
        u = static_cast<std::int32_t>(cur(kept + a, hit));
        over += hit;
    }
    std::vector<std::int64_t> param(const NodeSpec& s, const std::string& p,
                                    std::optional<std::int64_t> dflt) {
        if (!s.has(p)) {
            if (!dflt) s.fail(p, "missing parameter");
            return {*dflt};
        }
        Shape dims;
        auto v = s.ints(p, &dims);
        if (v.empty()) s.fail(p, "is empty");
        if (v.size() > 1) {
            if (n_ > 1 && static_cast<std::int64_t>(v.size()) != n_)
                s.fail(p, "has " + std::to_string(v.size()) + " values, " + first_ + " has " +
                              std::to_string(n_));
            if (n_ <= 1) {
                n_ = static_cast<std::int64_t>(v.size());
                shape_ = dims;
                first_ = p;
            }
        }
        return v;
    }
    void build_columns() {
        row_.uniform = du_.size() == 1 && dv_.size() == 1 && mant_.size() == 1 &&
                       exp_.size() == 1 && vth_.size() == 1 && lo_.size() <= 1;
        const std::size_t m = row_.uniform ? 1 : c_.size();
        for (auto* col : {&row_du_, &row_dv_, &row_bias_, &row_vth_, &row_lo_}) col->assign(m, 0);
        constexpr std::int64_t lim = 2147483647;
        for (std::size_t k = 0; k < m && k < c_.size(); ++k) {
            const auto& c = c_[k];
            if (c.bias > lim || c.bias < -lim)
                fail("bias_mant",
                     "bias_mant << bias_exp = " + std::to_string(c.bias) + " is beyond 32 bits");
            row_du_[k] = static_cast<std::int32_t>(c.du);
            row_dv_[k] = static_cast<std::int32_t>(c.dv);
            row_bias_[k] = static_cast<std::int32_t>(c.bias);
            row_vth_[k] = static_cast<std::int32_t>(c.vth);
            row_lo_[k] = static_cast<std::int32_t>(c.vth_lo);
        }
    }
    static std::int64_t at(const std::vector<std::int64_t>& v, std::size_t k) {
        return v.size() == 1 ? v[0] : v[k];
    }
    // Each per-neuron constant within what the datapath can hold.
    void check(const NodeSpec& s) const {
        const bool mul = d_.decay == DecayForm::multiply;
        const auto check_decay = [&](const std::string& p, const std::vector<std::int64_t>& v,
                                     int offset) {
            const std::int64_t hi = mul ? (std::int64_t{1} << d_.decay_shift) - offset
                                        : std::min(d_.current.bits, d_.membrane.bits) - 1;
            for (auto x : v)
                if (x < 0 || x > hi)
                    s.fail(p, "must lie in [0, " + std::to_string(hi) +
                                  "] for this datapath, got " + std::to_string(x));
        };
        check_decay("du", du_, d_.du_offset);
        check_decay("dv", dv_, d_.dv_offset);
        for (auto e : exp_)
            if (e < -31 || e > 31)
                s.fail("bias_exp", "must lie in [-31, 31], got " + std::to_string(e));
        const std::int64_t vmax = d_.membrane.max();
        for (auto t : vth_) {
            if (t < 0 || t > (vmax >> d_.threshold_shift))
                s.fail("vth", "must lie in [0, " + std::to_string(vmax >> d_.threshold_shift) +
                                  "] (the membrane holds " + std::to_string(d_.membrane.bits) +
                                  " bits), got " + std::to_string(t));
            if (d_.subtract && t == 0)
                s.fail("vth", "must be positive with reset_mode \"subtract\"");
        }
        const std::size_t n = std::max(lo_.size(), vth_.size());
        for (std::size_t k = 0; k < n && !lo_.empty(); ++k) {
            const std::int64_t lo = at(lo_, k), hi = at(vth_, k);
            if (lo < -(vmax >> d_.threshold_shift))
                s.fail("vth_lo", "below what the membrane holds: " + std::to_string(lo));
            if (lo > hi)
                s.fail("vth_lo", "must not exceed vth (" + std::to_string(lo) + " > " +
                                     std::to_string(hi) + ")");
        }
        for (auto m : mant_)
            if (m < -(std::int64_t{1} << 31) || m >= (std::int64_t{1} << 31))
                s.fail("bias_mant", "must fit 32 bits, got " + std::to_string(m));
    }

    LifDatapath d_;
    std::int64_t reset_interval_ = 0, reset_offset_ = 0, refractory_ = 0;
    std::vector<std::int64_t> du_, dv_, mant_, exp_, vth_, lo_;
    void update_block(FixedState& st, const float* x, float* o, std::int64_t b0, std::int64_t b1,
                      std::uint64_t& over, std::int64_t t) const;
    std::vector<fixed::LifConstants> c_;  // per neuron, after bind
    // The same constants as int32 columns for the vectorised rows (one value each when
    // row_.uniform); row_ holds only that flag.
    std::vector<std::int32_t> row_du_, row_dv_, row_bias_, row_vth_, row_lo_;
    fixed::LifRow row_;
    bool ternary_ = false;
    std::int64_t n_ = 1;
    Shape shape_;
    std::string first_ = "vth";
};

std::vector<std::pair<std::string, std::string>> FixedLifNode::summary() const {
    const auto fmt = [](const fixed::IntFormat& f) {
        return std::to_string(f.bits) + " bits, " + fixed::overflow_name(f.overflow);
    };
    std::vector<std::pair<std::string, std::string>> r;
    r.emplace_back("current", fmt(d_.current));
    r.emplace_back("membrane", fmt(d_.membrane));
    r.emplace_back("decay", d_.decay == DecayForm::multiply
                                ? "x (2^" + std::to_string(d_.decay_shift) + " - d) >> " +
                                      std::to_string(d_.decay_shift) + ", toward zero"
                                : std::string("x - (x >> d)"));
    r.emplace_back("input", "(sum x 2^" + std::to_string(d_.input_exp) + ") << " +
                                std::to_string(d_.input_shift));
    r.emplace_back(
        "fires on",
        std::string(d_.fire_at_equal ? "v >= " : "v > ") + "vth << " +
            std::to_string(d_.threshold_shift) +
            (ternary_ ? (d_.fire_at_equal ? "; -1 at or below vth_lo" : "; -1 below vth_lo") : ""));
    r.emplace_back("reset", d_.subtract ? "subtract vth (at most " + std::to_string(d_.max_spikes) +
                                              " spikes a step)"
                                        : std::string("to 0"));
    if (refractory_)
        r.emplace_back("refractory", "v held for " + std::to_string(refractory_) +
                                         " steps after a spike (u integrates)");
    if (reset_interval_)
        r.emplace_back("periodic reset", "u = v = 0 every " + std::to_string(reset_interval_) +
                                             " steps, at Lava time step " +
                                             std::to_string(reset_offset_ % reset_interval_) +
                                             " mod " + std::to_string(reset_interval_));
    return r;
}

namespace {

// The single-compartment row with both overflow rules fixed at compile time.
template <bool Ternary, int CurP>
std::uint64_t cleared_row_mem(const fixed::LifDatapath& d, const fixed::LifRow& c, std::int32_t* u,
                              std::int32_t* v, const float* x, float* o, std::int64_t n) {
    using fixed::DecayForm;
    using fixed::Order;
    if (fixed::row32_fits(d, c))
        return d.membrane.overflow == fixed::Overflow::wrap
                   ? fixed::lif_row32_cleared<Ternary, CurP, fixed::kWrap>(d, c, v, x, o, n)
                   : fixed::lif_row32_cleared<Ternary, CurP, fixed::kSaturate>(d, c, v, x, o, n);
    return d.membrane.overflow == fixed::Overflow::wrap
               ? fixed::lif_row<Order::decay_then_add, DecayForm::multiply, Ternary, true, true,
                                CurP, fixed::kWrap>(d, c, u, v, x, o, n)
               : fixed::lif_row<Order::decay_then_add, DecayForm::multiply, Ternary, true, true,
                                CurP, fixed::kSaturate>(d, c, u, v, x, o, n);
}
template <bool Ternary>
std::uint64_t cleared_row_cur(const fixed::LifDatapath& d, const fixed::LifRow& c, std::int32_t* u,
                              std::int32_t* v, const float* x, float* o, std::int64_t n) {
    return d.current.overflow == fixed::Overflow::wrap
               ? cleared_row_mem<Ternary, fixed::kWrap>(d, c, u, v, x, o, n)
               : cleared_row_mem<Ternary, fixed::kSaturate>(d, c, u, v, x, o, n);
}
std::uint64_t cleared_row(const fixed::LifDatapath& d, const fixed::LifRow& c, bool ternary,
                          std::int32_t* u, std::int32_t* v, const float* x, float* o,
                          std::int64_t n) {
    return ternary ? cleared_row_cur<true>(d, c, u, v, x, o, n)
                   : cleared_row_cur<false>(d, c, u, v, x, o, n);
}

// lif_row for one variant of the datapath, chosen here, outside the loop over neurons.
template <fixed::Order O, fixed::DecayForm F>
std::uint64_t row_of_form(const fixed::LifDatapath& d, const fixed::LifRow& c, bool ternary,
                          std::int32_t* u, std::int32_t* v, const float* x, float* o,
                          std::int64_t n) {
    if (ternary)
        return c.uniform ? fixed::lif_row<O, F, true, true>(d, c, u, v, x, o, n)
                         : fixed::lif_row<O, F, true, false>(d, c, u, v, x, o, n);
    return c.uniform ? fixed::lif_row<O, F, false, true>(d, c, u, v, x, o, n)
                     : fixed::lif_row<O, F, false, false>(d, c, u, v, x, o, n);
}

}  // namespace

// Neurons [b0, b1) at step t: the vectorised rows, or the per-neuron rule when several spikes a
// step are possible (their count is a division, rare and short) or neurons may be refractory.
void FixedLifNode::update_block(FixedState& st, const float* x, float* o, std::int64_t b0,
                                std::int64_t b1, std::uint64_t& over, std::int64_t t) const {
    if (d_.max_spikes > 1 || refractory_) {
        for (std::int64_t k = b0; k < b1; ++k) {
            const auto u = static_cast<std::size_t>(k);
            if (refractory_ && t <= st.quiet_until[u]) {
                quiet_step(u, st.u[u], fixed::input_int(x[k]), over);
                o[k] = 0.0f;
                continue;
            }
            o[k] = static_cast<float>(
                fixed::lif_step(d_, c_[u], st.u[u], st.v[u], fixed::input_int(x[k]), over));
            if (refractory_ && o[k] != 0.0f) st.quiet_until[u] = t + refractory_;
        }
        return;
    }
    const std::int64_t off = row_.uniform ? 0 : b0;
    const fixed::LifRow c{row_du_.data() + off,
                          row_dv_.data() + off,
                          row_bias_.data() + off,
                          row_vth_.data() + off,
                          row_lo_.data() + (ternary_ ? off : 0),
                          row_.uniform};
    std::int32_t* u = st.u.data() + b0;
    std::int32_t* v = st.v.data() + b0;
    const std::int64_t n = b1 - b0;
    // A uniform du that clears the current: the single-compartment rows, in a copy of their own
    // per level (one copy holding every variant's loop left some of them scalar).
    if (d_.order == fixed::Order::decay_then_add && d_.decay == fixed::DecayForm::multiply &&
        c.uniform && c.du[0] == (std::int64_t{1} << d_.decay_shift)) {
        simd::at_level(
            [&, u, v, n] { over += cleared_row(d_, c, ternary_, u, v, x + b0, o + b0, n); });
        return;
    }
    simd::at_level([&, u, v, n] {
        using fixed::DecayForm;
        using fixed::Order;
        const bool mul = d_.decay == DecayForm::multiply;
        if (d_.order == Order::decay_then_add)
            over += mul ? row_of_form<Order::decay_then_add, DecayForm::multiply>(
                              d_, c, ternary_, u, v, x + b0, o + b0, n)
                        : row_of_form<Order::decay_then_add, DecayForm::bitshift>(
                              d_, c, ternary_, u, v, x + b0, o + b0, n);
        else
            over += mul ? row_of_form<Order::add_then_decay, DecayForm::multiply>(
                              d_, c, ternary_, u, v, x + b0, o + b0, n)
                        : row_of_form<Order::add_then_decay, DecayForm::bitshift>(
                              d_, c, ternary_, u, v, x + b0, o + b0, n);
    });
}

void FixedLifNode::step(const Activity& in, NodeState* state, Activity& out,
                        const StepContext& ctx) const {
    auto& st = static_cast<FixedState&>(*state);
    const std::int64_t n = in_size();
    const std::int64_t bs = ctx.neuron_block(n);
    st.block_overflows.resize(static_cast<std::size_t>((n + bs - 1) / bs));
    // Lava's time step of this step is t + 1 (its first step is 1).
    if (reset_interval_ && (ctx.step + 1) % reset_interval_ == reset_offset_ % reset_interval_) {
        std::fill(st.u.begin(), st.u.end(), 0);
        std::fill(st.v.begin(), st.v.end(), 0);
    }
    const std::int64_t t = ctx.step;
    // Stages: integer update per block (outputs, spike lists, overflows per block), then join.
    const float* x = in.values.data();
    float* o = out.values.data();
    FixedState* sp = &st;
    const std::int64_t work = ctx.update_neuron_blocks(
        n, st.block_spikes, st.block,
        [this, sp, x, o, t](std::int64_t b, std::int64_t b0, std::int64_t b1,
                            BlockIndices& spikes) {
            auto& over = sp->block_overflows[static_cast<std::size_t>(b)];
            over = 0;
            update_block(*sp, x, o, b0, b1, over, t);
            spikes.resize(static_cast<std::size_t>(b1 - b0));
            bool ternary = true;
            spikes.resize(collect_nonzero(o, b0, b1, spikes.data(), ternary));
        });
    out.active.clear();
    ctx.concat_blocks(st.block_spikes, out.active, work);
    out.ternary = d_.max_spikes == 1;
    out.all_ones = !ternary_ && d_.max_spikes == 1;
    OpCounts& ops = *ctx.ops;
    const auto state_bytes =
        static_cast<std::uint64_t>((d_.current.bits + 7) / 8 + (d_.membrane.bits + 7) / 8);
    kernels::book_state_bytes(ops, static_cast<std::uint64_t>(n), state_bytes, true);
    kernels::book_spikes(ops, out.active.size());
    for (auto c : st.block_overflows) ops.overflow += c;
}

}  // namespace

std::uint64_t cleared_neuron_rows(const fixed::LifDatapath& d, const fixed::LifRow& c, bool ternary,
                                  std::int32_t* v, const float* x, std::int64_t x_stride,
                                  float* out, std::int64_t rows, std::int64_t n) {
    std::uint64_t over = 0;
    simd::at_level([&] {
        for (std::int64_t r = 0; r < rows; ++r)
            over +=
                cleared_row(d, c, ternary, nullptr, v + r * n, x + r * x_stride, out + r * n, n);
    });
    return over;
}

void register_fixed_neuron_nodes(NodeFactory& f) {
    f.add(
        "ternion.FixedLIF", [](const NodeSpec& s) { return std::make_unique<FixedLifNode>(s); },
        "integer LIF of a chip's datapath (datapath loihi|xylo): du, dv, bias_mant, bias_exp, vth "
        "[, vth_lo: ternary]",
        [] {
            auto e = example_of({6}, NodeExample::Input::analog);
            e.params.set("du", 1023);
            e.params.set("dv", {0, 512, 2048, 0, 512, 2048}, {6});
            e.params.set("vth", 1);
            e.params.set("bias_mant", 3);
            e.params.set("bias_exp", 2);
            return e;
        });
}

}  // namespace ternion
