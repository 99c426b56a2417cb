#include "neuron/neurons.hpp"

#include "neuron/neuron_params.hpp"
#include "sim/kernels/neuron_rules.hpp"
#include "sim/simd/simd.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

namespace ternion {

namespace {

struct NeuronState : NodeState {
    std::vector<float> v, i;  // membrane and (CubaLIF) synaptic current
    std::vector<BlockIndices> block_spikes;
    std::int64_t block = 0;  // neurons per block of the last step
    // This step's recurrent input (StepContext::recurrent), added after the others; or null.
    const float* recurrent = nullptr;
};

// No membrane update before the threshold (the caller integrated already).
inline constexpr auto kNoUpdate = [](std::int64_t, float v) { return v; };

// Shared frame: per-neuron parameter arrays, threshold/reset settings, block-parallel stepping.
class NeuronBase : public Node {
  public:
    NeuronBase(const NodeSpec& s, int state_vars) : Node(s.name(), s.type()), vars_(state_vars) {
        if (auto c = s.string_opt("compare")) {
            if (*c == ">")
                cmp_ = Compare::gt;
            else if (*c == ">=")
                cmp_ = Compare::ge;
            else
                s.fail("compare", "must be \">\" or \">=\", got \"" + *c + "\"");
            cmp_set_ = true;
        }
        if (auto r = s.string_opt("reset_mode")) {
            if (*r == "zero" || *r == "value")
                reset_ = ResetMode::to_value;
            else if (*r == "subtract")
                reset_ = ResetMode::subtract;
            else
                s.fail("reset_mode", "must be \"zero\" or \"subtract\", got \"" + *r + "\"");
            reset_set_ = true;
        }
    }
    NodeCategory category() const override { return NodeCategory::neuron; }
    bool is_spiking() const override { return !integrator_; }
    bool reads_values_only() const override { return true; }
    bool takes_recurrent_apart() const override { return recurrent_last_; }
    Shape declared_in_shape() const override { return param_shape_; }
    void bind(const Shape& in) override {
        if (n_params_ > 1 && numel(in) != n_params_)
            fail(first_param_,
                 "has " + std::to_string(n_params_) + " neurons but the input is " + shape_str(in));
        in_shape_ = out_shape_ = in;
        broadcast(numel(in));
    }
    std::unique_ptr<NodeState> make_state() const override {
        auto st = std::make_unique<NeuronState>();
        st->v.assign(static_cast<std::size_t>(in_size()), initial_v());
        if (!rest_.empty()) st->v = rest_;
        if (vars_ > 1) st->i.assign(static_cast<std::size_t>(in_size()), 0.0f);
        return st;
    }
    bool reset_state(NodeState* s) const override {
        auto* st = static_cast<NeuronState*>(s);
        std::fill(st->v.begin(), st->v.end(), initial_v());
        if (!rest_.empty()) std::copy(rest_.begin(), rest_.end(), st->v.begin());
        std::fill(st->i.begin(), st->i.end(), 0.0f);
        for (auto& b : st->block_spikes) b.clear();
        return true;
    }
    bool membrane(const NodeState* s, std::vector<float>& out) const override {
        out = static_cast<const NeuronState*>(s)->v;
        return true;
    }
    std::vector<std::pair<std::string, std::string>> summary() const override {
        auto r = params_summary();
        r.emplace_back("fires on", cmp_ == Compare::ge ? "v >= v_threshold" : "v > v_threshold");
        r.emplace_back("reset", std::string(reset_ == ResetMode::subtract ? "subtract v_threshold"
                                                                          : "to v_reset") +
                                    (delay_ ? ", at the next step" : ""));
        if (!rest_.empty()) r.emplace_back("initial v", "at rest");
        return r;
    }

  protected:
    // Per neuron of [b0, b1): update the state from input x and write the output, -1, 0 or +1
    // (every output of the block, zeros included: the block is this thread's own range, and
    // writing it whole is cheaper than zeroing last step's spikes one by one); list the spikes.
    virtual void update_block(NeuronState& st, const float* x, float* out, std::int64_t b0,
                              std::int64_t b1, BlockIndices& spikes) const = 0;
    virtual void broadcast(std::int64_t n) = 0;
    virtual float initial_v() const { return 0.0f; }
    virtual bool emits_negative() const { return false; }
    virtual std::vector<std::pair<std::string, std::string>> params_summary() const { return {}; }

    void step(const Activity& in, NodeState* state, Activity& out,
              const StepContext& ctx) const override {
        auto& st = static_cast<NeuronState&>(*state);
        st.recurrent = ctx.recurrent;
        const std::int64_t n = in_size();
        const float* x = in.values.data();
        float* o = out.values.data();
        NeuronState* sp = &st;
        const std::int64_t work = ctx.update_neuron_blocks(
            n, st.block_spikes, st.block,
            [this, sp, x, o](std::int64_t, std::int64_t b0, std::int64_t b1, BlockIndices& list) {
                update_block(*sp, x, o, b0, b1, list);
            });
        out.active.clear();
        OpCounts& ops = *ctx.ops;
        const auto un = static_cast<std::uint64_t>(n);
        const auto vars = static_cast<std::uint64_t>(vars_);
        if (integrator_) {
            // I, LI, CubaLI: no threshold; the output is the membrane potential itself.
            std::copy(st.v.begin(), st.v.end(), out.values.begin());
            out.scan();
            kernels::book_neuron_updates(ops, un, vars, false);
            return;
        }
        ctx.concat_blocks(st.block_spikes, out.active, work);
        out.ternary = true;
        out.all_ones = !emits_negative();
        kernels::book_neuron_updates(ops, un, vars, true);
        kernels::book_spikes(ops, out.active.size());
    }

    // Reads a per-neuron parameter; remembers the neuron count it implies.
    std::vector<float> param(const NodeSpec& s, const std::string& p, std::optional<float> dflt) {
        std::vector<float> v;
        if (!s.has(p)) {
            if (!dflt) s.fail(p, "missing parameter");
            return {*dflt};
        }
        // The declared size against the neuron count already known, before reading: a small
        // file may declare an array of hundreds of millions of values.
        Shape dims = s.dims(p);
        const std::int64_t declared = declared_numel(dims);
        if (n_params_ > 1 && declared != 1 && declared != n_params_)
            s.fail(p, "declares shape " + shape_str(dims) + ", but " + first_param_ + " has " +
                          std::to_string(n_params_) + " values");
        v = s.floats(p, &dims);
        if (v.empty()) s.fail(p, "is empty");
        if (v.size() > 1) {
            if (n_params_ > 1 && static_cast<std::int64_t>(v.size()) != n_params_)
                s.fail(p, "has " + std::to_string(v.size()) + " values, other parameters have " +
                              std::to_string(n_params_));
            if (n_params_ <= 1) {
                n_params_ = static_cast<std::int64_t>(v.size());
                param_shape_ = dims;
                first_param_ = p;
            }
        }
        return v;
    }
    static void expand(std::vector<float>& v, std::int64_t n) {
        if (v.size() == 1) v.assign(static_cast<std::size_t>(n), v[0]);
    }
    // The run's conventions (options, --from) where the node's own datasets say nothing:
    // compare, reset_mode, reset_delay (0/1), initial ("zero" | "rest"), input_gain ("nir" |
    // "unit").
    void apply_defaults(const NodeSpec& s) {
        const LoadOptions& o = s.options();
        if (!reset_set_) reset_ = o.reset == "subtract" ? ResetMode::subtract : ResetMode::to_value;
        if (!cmp_set_ && o.compare_ge) cmp_ = Compare::ge;
        delay_ = o.reset_delay;
        if (s.has("reset_delay")) {
            const double d = s.scalar("reset_delay");
            if (d != 0.0 && d != 1.0) s.fail("reset_delay", "must be 0 or 1");
            delay_ = d != 0.0;
        }
        at_rest_ = o.start_at_rest;
        if (auto i = s.string_opt("initial")) {
            if (*i != "zero" && *i != "rest")
                s.fail("initial", "must be \"zero\" or \"rest\", got \"" + *i + "\"");
            at_rest_ = *i == "rest";
        }
        if (auto g = s.string_opt("input_gain")) {
            if (*g != "nir" && *g != "unit")
                s.fail("input_gain", "must be \"nir\" or \"unit\", got \"" + *g + "\"");
            unit_gain_ = *g == "unit";
            unit_gain_set_ = true;
        }
    }
    // An Euler decay factor 1 - dt/tau outside [0, 1) is refused (unless allowed): the
    // membrane would flip sign every step. Suggests the dt the writer most likely used.
    static void check_decay(const NodeSpec& s, const std::string& p, const std::vector<float>& tau,
                            const std::vector<float>& r) {
        const LoadOptions& o = s.options();
        if (o.discretization != "euler" || o.allow_unstable) return;
        for (std::size_t k = 0; k < tau.size(); ++k) {
            const double a = 1.0 - o.dt / tau[k];
            // A factor a hair below 0 is the float32 round trip of tau = dt (snnTorch's beta 0.9).
            if (a >= -1e-6 && a < 1.0) continue;
            char buf[256];
            std::snprintf(buf, sizeof buf,
                          "Euler decay 1 - dt/tau = %g (dt %g s, tau %g s) is outside [0, 1): "
                          "the membrane would oscillate",
                          a, o.dt, static_cast<double>(tau[k]));
            std::string msg = buf;
            const double rk = r.empty() ? 1.0 : r[std::min(k, r.size() - 1)];
            if (rk > 1.0 + 1e-6) {
                std::snprintf(buf, sizeof buf,
                              "; the file was likely written with dt = tau/r = %g s (snnTorch's "
                              "exporter): pass --dt %g or --from snntorch",
                              tau[k] / rk, tau[k] / rk);
                msg += buf;
            } else {
                msg += "; pass the dt the model was trained with (--dt or --from)";
            }
            s.fail(p, msg + ", or --allow-unstable");
        }
    }
    bool fires(float v, float th) const { return cmp_ == Compare::ge ? v >= th : v > th; }
    // The firing and reset part of leaky_form(); v_initial from the state make_state() gives,
    // or nothing when the membranes start at differing rest values.
    bool fill_form(kernels::LeakyForm& f) const {
        f.subtract = reset_ == ResetMode::subtract;
        f.fire_at_equal = cmp_ == Compare::ge;
        f.ternary = emits_negative();
        f.v_initial = initial_v();
        if (!rest_.empty()) {
            if (std::any_of(rest_.begin(), rest_.end(), [&](float r) { return r != rest_[0]; }))
                return false;
            f.v_initial = rest_[0];
        }
        return true;
    }
    // Threshold scan after integration: spike, then reset to v_reset or subtract v_threshold.
    // Branch-free: a third of neurons may fire, and a mispredicted branch per neuron would cost
    // more than the update itself.
    // `integrate(k, v)`, when given, is the update of the step, done in the same pass.
    template <class Th, class Vr, class Integrate = decltype(kNoUpdate)>
    void fire_and_reset_with(float* v, Th th, Vr vr, float* out, std::int64_t b0, std::int64_t b1,
                             BlockIndices& spikes, Integrate integrate = kNoUpdate) const {
        const bool sub = reset_ == ResetMode::subtract;
        spikes.resize(static_cast<std::size_t>(b1 - b0));
        spikes.resize(collect_indices(
            b0, b1,
            [&](std::int64_t k) {
                const float t = th(k), vk = integrate(k, v[k]);
                const bool f = fires(vk, t);
                // Select by bit masks: compilers turn ?: on floats into branches here.
                const std::uint32_t m = 0u - static_cast<std::uint32_t>(f);
                const float after = sub ? vk - t : vr(k);
                v[k] = std::bit_cast<float>((std::bit_cast<std::uint32_t>(after) & m) |
                                            (std::bit_cast<std::uint32_t>(vk) & ~m));
                out[k] = std::bit_cast<float>(std::bit_cast<std::uint32_t>(1.0f) & m);
                return f;
            },
            spikes.data()));
    }
    void fire_and_reset(float* v, const float* th, const float* vr, float* out, std::int64_t b0,
                        std::int64_t b1, BlockIndices& spikes) const {
        fire_and_reset_with(
            v, [th](std::int64_t k) { return th[k]; }, [vr](std::int64_t k) { return vr[k]; }, out,
            b0, b1, spikes);
    }

    int vars_;
    bool integrator_ = false;  // I / LI / CubaLI: never fires
    Compare cmp_ = Compare::gt;
    ResetMode reset_ = ResetMode::to_value;
    bool cmp_set_ = false, reset_set_ = false;
    bool delay_ = false;  // the reset of a spike acts at the next update (snnTorch)
    // The edges closing a cycle into the node are added to the updated state after the other
    // inputs (LoadOptions::recurrent_last); set by the nodes that do so.
    bool recurrent_last_ = false;
    bool at_rest_ = false;  // membranes start at rest_ rather than initial_v()
    bool unit_gain_ = false, unit_gain_set_ = false;  // dataset input_gain "unit"
    std::vector<float> rest_;                         // per-neuron initial membrane when at_rest_
    std::int64_t n_params_ = 1;
    Shape param_shape_;
    std::string first_param_ = "v_threshold";
};

// Exporters write a unit input gain as r = tau/dt (snnTorch, w_in = tau_syn/dt likewise); the
// float32 round trip of tau and r leaves r*dt/tau within a few ulp of 1. Snapping it to exactly 1
// makes the update beta*v + I bit for bit, as the exporting framework computes it.
float unit_snap(double g) {
    constexpr double tol = 4.0 * 1.1920928955078125e-07;  // 4 float32 ulp at 1
    return std::fabs(g - 1.0) <= tol ? 1.0f : static_cast<float>(g);
}

// dt/tau as Norse computes it: dt * tau_inv in float32. Its exporter wrote tau = 1/tau_inv in
// float32 (utils/export_nir.py 50-56), which several float32 tau_inv give back (1/250 and
// 1/249.99998 round to the same tau); the roundest of them (most trailing zero bits) is taken,
// as time constants are set by hand or rounded.
float norse_gain(double dt, float tau) {
    float inv = static_cast<float>(1.0 / static_cast<double>(tau));
    float c = inv;
    for (int k = 0; k < 4; ++k) c = std::nextafter(c, 0.0f);
    int best = -1;
    for (int k = 0; k < 9; ++k, c = std::nextafter(c, std::numeric_limits<float>::infinity())) {
        if (static_cast<float>(1.0 / static_cast<double>(c)) != tau) continue;
        const int tz = std::countr_zero(std::bit_cast<std::uint32_t>(c) | 0x00800000u);
        if (tz > best) {
            best = tz;
            inv = c;
        }
    }
    return static_cast<float>(dt) * inv;
}

std::string range_str(const std::vector<float>& v) {
    if (v.empty()) return "-";
    float lo = v[0], hi = v[0];
    for (float x : v) {
        lo = std::min(lo, x);
        hi = std::max(hi, x);
    }
    char buf[64];
    if (lo == hi)
        std::snprintf(buf, sizeof buf, "%g", static_cast<double>(lo));
    else
        std::snprintf(buf, sizeof buf, "%g..%g", static_cast<double>(lo), static_cast<double>(hi));
    return buf;
}

void require_positive(const NodeSpec& s, const std::string& p, const std::vector<float>& v) {
    for (float x : v) ternion::require_positive(s, p, x);
}

// ------------------------------------------------------------------ NIR IF / LIF

class LifNode final : public NeuronBase {
  public:
    LifNode(const NodeSpec& s, bool leaky, bool integrator = false) : NeuronBase(s, 1) {
        const auto& o = s.options();
        apply_defaults(s);
        integrator_ = integrator;
        r_ = param(s, "r", leaky ? std::optional<float>() : std::optional<float>(1.0f));
        th_ = integrator ? std::vector<float>{std::numeric_limits<float>::infinity()}
                         : param(s, "v_threshold", std::nullopt);
        vr_ = param(s, "v_reset", 0.0f);  // older files have no v_reset: NIR reads it as 0
        if (leaky) {
            tau_ = param(s, "tau", std::nullopt);
            require_positive(s, "tau", tau_);
            leak_ = param(s, "v_leak", 0.0f);
            check_decay(s, "tau", tau_, r_);
            // Unit input gain: dataset input_gain, else Sinabs' ExpLeak convention for LI.
            unit_in_ = unit_gain_set_ ? unit_gain_ : (integrator && o.unit_li_gain);
            norse_ = o.dialect == "norse" && o.discretization == "euler";
            snn_ = o.dialect == "snntorch";
            recurrent_last_ = snn_ && o.recurrent_last;
            sinabs_ = o.dialect == "sinabs" && o.discretization == "exact";
        } else {
            tau_ = {1.0f};
            leak_ = {0.0f};
        }
        leaky_ = leaky;
        exact_ = o.discretization == "exact";
        dt_ = o.dt;
    }
    void broadcast(std::int64_t n) override {
        for (auto* v : {&r_, &th_, &vr_, &tau_, &leak_}) expand(*v, n);
        a_.resize(static_cast<std::size_t>(n));
        g_.resize(a_.size());
        c_.resize(a_.size());
        for (std::size_t k = 0; k < a_.size(); ++k) {
            if (!leaky_) {  // IF: each step's input is a charge, scaled by r
                a_[k] = 1.0f;
                g_[k] = r_[k];
                c_[k] = 0.0f;
                continue;
            }
            const double tau = tau_[k], r = r_[k], vl = leak_[k];
            const double a = exact_ ? std::exp(-dt_ / tau) : 1.0 - dt_ / tau;
            const double k1 = exact_ ? 1.0 - a : dt_ / tau;
            a_[k] = static_cast<float>(a);
            g_[k] = unit_in_ ? r_[k] : unit_snap(r * k1);
            if (sinabs_) {
                // Sinabs (layers/lif.py 80, functional/lif.py 24-30): alpha = exp(-1/tau) in
                // float32, the input scaled by 1 - alpha in float32.
                const auto e = static_cast<double>(static_cast<float>(-dt_ / tau));
                a_[k] = static_cast<float>(std::exp(e));
                g_[k] = unit_in_ ? r_[k] : (1.0f - a_[k]) * r_[k];
            }
            c_[k] = static_cast<float>(vl * k1);
        }
        has_leak_ = std::any_of(c_.begin(), c_.end(), [](float v) { return v != 0.0f; });
        if (at_rest_) rest_ = leaky_ ? leak_ : vr_;
        if (norse_)
            for (std::size_t k = 0; k < a_.size(); ++k) g_[k] = norse_gain(dt_, tau_[k]);
    }
    std::optional<kernels::LeakyForm> leaky_form() const override {
        // snnTorch's delayed reset and the integrators do not fit the form.
        kernels::LeakyForm f;
        if (integrator_ || delay_ || snn_ || !fill_form(f)) return std::nullopt;
        f.a = a_;
        f.g = g_;
        f.c = c_;
        if (norse_)  // v + g ((r x + v_leak) - v)
            for (std::size_t k = 0; k < a_.size(); ++k) {
                f.a[k] = 1.0f - g_[k];
                f.g[k] = g_[k] * r_[k];
                f.c[k] = g_[k] * leak_[k];
            }
        f.threshold = th_;
        f.v_reset = vr_;
        return f;
    }
    void update_block(NeuronState& st, const float* x, float* out, std::int64_t b0, std::int64_t b1,
                      BlockIndices& spikes) const override {
        simd::at_level([&] {
            float* v = st.v.data();
            const float *a = a_.data(), *g = g_.data(), *c = c_.data();
            if (norse_) {
                // Norse's float32 order: v + dt/tau ((x + v_leak) - v) (LIFBox, lif_box.py 100),
                // v + dt/tau ((v_leak - v) + x) for the leaky integrator (leaky_integrator_box.py
                // 89); g holds float32(dt) * float32(1/tau) as Norse's tau_mem_inv gives it.
                const float *vl = leak_.data(), *r = r_.data();
                if (integrator_)
                    for (std::int64_t k = b0; k < b1; ++k)
                        v[k] = v[k] + g[k] * ((vl[k] - v[k]) + r[k] * x[k]);
                else
                    for (std::int64_t k = b0; k < b1; ++k)
                        v[k] = v[k] + g[k] * ((r[k] * x[k] + vl[k]) - v[k]);
                fire_and_reset(v, th_.data(), vr_.data(), out, b0, b1, spikes);
                return;
            }
            if (delay_ || snn_) {
                // snnTorch's Leaky.forward (leaky.py 209-229): the reset signal r comes from the
                // previous membrane; subtract r*threshold after the update, or zero the membrane
                // before it. Without reset_delay the step's own spike s then resets at once, by
                // s - r (snnTorch's "avoid double reset"). RLeaky (rleaky.py 394-408) adds its
                // recurrent input to beta*mem + input, and its zero reset zeroes the updated
                // membrane, not the previous one.
                const bool sub = reset_ == ResetMode::subtract;
                const float* rec = st.recurrent;
                for (std::int64_t k = b0; k < b1; ++k) {
                    const auto u = static_cast<std::size_t>(k);
                    const bool was = fires(v[k], th_[u]);
                    float vk;
                    if (sub || rec) {
                        vk = a[k] * v[k] + g[k] * x[k];
                        if (has_leak_) vk += c[k];
                        if (rec) vk += g[k] * rec[k];
                        if (was) vk = sub ? vk - th_[u] : vr_[u];
                    } else {
                        vk = a[k] * (was ? vr_[u] : v[k]) + g[k] * x[k];
                        if (has_leak_) vk += c[k];
                    }
                    const bool now = fires(vk, th_[u]);
                    if (!delay_ && now != was) {
                        const float d = now ? 1.0f : -1.0f;
                        vk = sub ? vk - d * th_[u] : vk - d * vk;
                    }
                    v[k] = vk;
                    out[k] = 0.0f;
                    if (now) {
                        out[k] = 1.0f;
                        spikes.push_back(static_cast<std::uint32_t>(k));
                    }
                }
                return;
            }
            // Integrate (branch-free, vectorised), then look for threshold crossings.
            if (has_leak_)
                for (std::int64_t k = b0; k < b1; ++k) v[k] = a[k] * v[k] + g[k] * x[k] + c[k];
            else
                for (std::int64_t k = b0; k < b1; ++k) v[k] = a[k] * v[k] + g[k] * x[k];
            fire_and_reset(v, th_.data(), vr_.data(), out, b0, b1, spikes);
        });
    }
    std::vector<std::pair<std::string, std::string>> params_summary() const override {
        std::vector<std::pair<std::string, std::string>> r;
        if (leaky_) r.emplace_back("tau", range_str(tau_));
        r.emplace_back("r", range_str(r_));
        r.emplace_back("v_threshold", range_str(th_));
        r.emplace_back("v_reset", range_str(vr_));
        if (leaky_) {
            r.emplace_back("decay a", range_str(a_));
            r.emplace_back("input gain g", range_str(g_));
        }
        return r;
    }

  private:
    std::vector<float> r_, th_, vr_, tau_, leak_, a_, g_, c_;
    bool leaky_ = true, exact_ = false, has_leak_ = false, unit_in_ = false, norse_ = false;
    bool sinabs_ = false, snn_ = false;
    double dt_ = 1e-3;
};

// ------------------------------------------------------------------ NIR CubaLIF

class CubaLifNode final : public NeuronBase {
  public:
    explicit CubaLifNode(const NodeSpec& s, bool integrator = false) : NeuronBase(s, 2) {
        const auto& o = s.options();
        apply_defaults(s);
        integrator_ = integrator;
        ts_ = param(s, "tau_syn", std::nullopt);
        tm_ = param(s, "tau_mem", std::nullopt);
        require_positive(s, "tau_syn", ts_);
        require_positive(s, "tau_mem", tm_);
        r_ = param(s, "r", 1.0f);
        leak_ = param(s, "v_leak", 0.0f);
        th_ = integrator ? std::vector<float>{std::numeric_limits<float>::infinity()}
                         : param(s, "v_threshold", std::nullopt);
        vr_ = param(s, "v_reset", 0.0f);
        win_ = param(s, "w_in", 1.0f);
        check_decay(s, "tau_mem", tm_, r_);
        check_decay(s, "tau_syn", ts_, win_);
        // Unit current gain: dataset input_gain, else Norse's LIFCell convention.
        unit_in_ = unit_gain_set_ ? unit_gain_ : o.unit_current_gain;
        exact_ = o.discretization == "exact";
        norse_ = o.dialect == "norse" && !exact_;
        snn_ = o.dialect == "snntorch";
        recurrent_last_ = snn_ && o.recurrent_last;
        dt_ = o.dt;
    }
    void broadcast(std::int64_t n) override {
        for (auto* v : {&ts_, &tm_, &r_, &leak_, &th_, &vr_, &win_}) expand(*v, n);
        const auto un = static_cast<std::size_t>(n);
        as_.resize(un);
        gs_.resize(un);
        am_.resize(un);
        gm_.resize(un);
        c_.resize(un);
        for (std::size_t k = 0; k < un; ++k) {
            const double as = exact_ ? std::exp(-dt_ / ts_[k]) : 1.0 - dt_ / ts_[k];
            const double am = exact_ ? std::exp(-dt_ / tm_[k]) : 1.0 - dt_ / tm_[k];
            const double ks = exact_ ? 1.0 - as : dt_ / ts_[k];
            const double km = exact_ ? 1.0 - am : dt_ / tm_[k];
            as_[k] = static_cast<float>(as);
            gs_[k] = unit_in_ ? win_[k] : unit_snap(ks * win_[k]);
            am_[k] = static_cast<float>(am);
            gm_[k] = unit_snap(km * r_[k]);
            c_[k] = static_cast<float>(km * leak_[k]);
        }
        if (at_rest_) rest_ = leak_;
        if (norse_) {
            ks_.resize(un);
            for (std::size_t k = 0; k < un; ++k) {
                ks_[k] = norse_gain(dt_, ts_[k]);
                gm_[k] = norse_gain(dt_, tm_[k]);
            }
        }
    }
    // The membrane integrates the updated current (snnTorch's Synaptic order).
    void update_block(NeuronState& st, const float* x, float* out, std::int64_t b0, std::int64_t b1,
                      BlockIndices& spikes) const override {
        simd::at_level([&] {
            float* v = st.v.data();
            float* cur = st.i.data();
            for (std::int64_t k = b0; k < b1; ++k) {
                const auto u = static_cast<std::size_t>(k);
                if (norse_) {
                    // Norse's LIFCell (functional/lif.py 335-345): the input jumps into the
                    // current, the membrane integrates it, then the current decays: `cur` holds i +
                    // x.
                    const float ik = cur[k] + gs_[u] * x[k];
                    float vk = v[k] + gm_[u] * ((leak_[u] - v[k]) + r_[u] * ik);
                    cur[k] = ik + (-ks_[u]) * ik;
                    out[k] = 0.0f;
                    if (fires(vk, th_[u])) {
                        out[k] = 1.0f;
                        spikes.push_back(static_cast<std::uint32_t>(k));
                        vk = reset_ == ResetMode::subtract ? vk - th_[u] : vr_[u];
                    }
                    v[k] = vk;
                    continue;
                }
                float ik = as_[u] * cur[k] + gs_[u] * x[k];
                // RSynaptic (rsynaptic.py 418-425): (alpha*syn + input) + recurrent.
                if (st.recurrent) ik += gs_[u] * st.recurrent[k];
                // snnTorch's Synaptic.forward (synaptic.py 235-257): the reset signal of the
                // previous membrane subtracts now, or sets the membrane to v_reset for this step;
                // without reset_delay the step's spike s then resets by s - r.
                const bool snn = delay_ || snn_;
                const bool sub = reset_ == ResetMode::subtract;
                const bool was = snn && fires(v[k], th_[u]);
                float vk = am_[u] * v[k] + gm_[u] * ik;
                if (c_[u] != 0.0f) vk += c_[u];
                if (was) vk = sub ? vk - th_[u] : vr_[u];
                const bool now = fires(vk, th_[u]);
                out[k] = 0.0f;
                if (now) {
                    out[k] = 1.0f;
                    spikes.push_back(static_cast<std::uint32_t>(k));
                }
                if (!snn && now) vk = sub ? vk - th_[u] : vr_[u];
                if (snn && !delay_ && now != was) {
                    const float d = now ? 1.0f : -1.0f;
                    vk = sub ? vk - d * th_[u] : vk - d * vk;
                }
                cur[k] = ik;
                v[k] = vk;
            }
        });
    }
    std::vector<std::pair<std::string, std::string>> params_summary() const override {
        return {{"tau_syn", range_str(ts_)},
                {"tau_mem", range_str(tm_)},
                {"r", range_str(r_)},
                {"w_in", range_str(win_)},
                {"v_threshold", range_str(th_)},
                {"v_reset", range_str(vr_)}};
    }

  private:
    std::vector<float> ts_, tm_, r_, leak_, th_, vr_, win_, as_, gs_, am_, gm_, c_;
    bool exact_ = false, unit_in_ = false, norse_ = false, snn_ = false;
    std::vector<float> ks_;  // Norse: float32(dt) * float32(1/tau_syn)
    double dt_ = 1e-3;
};

// ------------------------------------------------------------------ SpikingJelly LIF / PLIF

// SpikingJelly's multi-step LIFNode and ParametricLIFNode: the charge is kernels::SjLifCharge
// (its three forms and leak_form are documented there); fires on v >= v_threshold (or ">"),
// then v = v_reset (hard) or v -= v_threshold (reset_mode subtract).
class SjLifNode final : public NeuronBase {
  public:
    SjLifNode(const NodeSpec& s, bool parametric)
        : NeuronBase(s, 1), charge_(read_sj_lif_charge(s, "", parametric)) {
        cmp_ = Compare::ge;
        if (auto c = s.string_opt("compare")) cmp_ = *c == ">" ? Compare::gt : Compare::ge;
        th_ = param(s, "v_threshold", 1.0f);
    }
    void broadcast(std::int64_t n) override { expand(th_, n); }
    float initial_v() const override { return charge_.v_reset; }
    std::optional<kernels::LeakyForm> leaky_form() const override {
        kernels::LeakyForm f;
        kernels::leaky_form_of(charge_, f);
        if (!fill_form(f)) return std::nullopt;
        f.threshold = th_;
        return f;
    }
    void update_block(NeuronState& st, const float* x, float* out, std::int64_t b0, std::int64_t b1,
                      BlockIndices& spikes) const override {
        simd::at_level([&] {
            float* v = st.v.data();
            const float vr = charge_.v_reset;
            const float* th = th_.data();
            // Charge in SpikingJelly's operation order, then fire, in one pass over v; the form
            // is chosen once, outside the per-neuron loop.
            charge_.with([&](auto charge) {
                fire_and_reset_with(
                    v, [th](std::int64_t k) { return th[k]; }, [vr](std::int64_t) { return vr; },
                    out, b0, b1, spikes,
                    [=](std::int64_t k, float vk) { return charge(vk, x[k]); });
            });
        });
    }
    std::vector<std::pair<std::string, std::string>> params_summary() const override {
        std::vector<std::pair<std::string, std::string>> r;
        if (charge_.k)
            r.emplace_back("sigmoid(w)", std::to_string(*charge_.k));
        else
            r.emplace_back("tau (steps)", std::to_string(charge_.tau));
        r.emplace_back("decay_input", charge_.decay_input ? "true" : "false");
        r.emplace_back("v_threshold", range_str(th_));
        r.emplace_back("v_reset", std::to_string(charge_.v_reset));
        return r;
    }

  private:
    kernels::SjLifCharge charge_;
    std::vector<float> th_;
};

// ------------------------------------------------------------------ ternary LIF (TSN)

// BSA's ternary spiking neuron:  U = H + X;  S = sign(U) [|U| >= v_threshold];
// H = 0 after any spike, else decay * U.  Emits -1, 0 or +1.
class TernaryLifNode final : public NeuronBase {
  public:
    explicit TernaryLifNode(const NodeSpec& s) : NeuronBase(s, 1) {
        decay_ = param(s, "decay", 0.5f);
        th_ = param(s, "v_threshold", 1.0f);
        cmp_ = Compare::ge;
        if (auto c = s.string_opt("compare")) cmp_ = *c == ">" ? Compare::gt : Compare::ge;
        for (float d : decay_) check_tsn_decay(s, "decay", d);
        require_positive(s, "v_threshold", th_);
    }
    bool emits_negative() const override { return true; }
    void broadcast(std::int64_t n) override {
        expand(decay_, n);
        expand(th_, n);
    }
    // U = decay U + X between spikes, 0 after one: the membrane is U.
    std::optional<kernels::LeakyForm> leaky_form() const override {
        kernels::LeakyForm f;
        fill_form(f);
        f.a = decay_;
        f.g = {1.0f};
        f.c = {0.0f};
        f.threshold = th_;
        f.v_reset = {0.0f};
        return f;
    }
    void update_block(NeuronState& st, const float* x, float* out, std::int64_t b0, std::int64_t b1,
                      BlockIndices& spikes) const override {
        simd::at_level([&] {
            float* h = st.v.data();
            const auto cmp = [this](float u, float th) { return fires(u, th); };
            for (std::int64_t k = b0; k < b1; ++k) {
                const auto u = static_cast<std::size_t>(k);
                out[k] = kernels::tsn_update(h[k], x[k], decay_[u], th_[u], cmp);
                if (out[k] != 0.0f) spikes.push_back(static_cast<std::uint32_t>(k));
            }
        });
    }
    std::vector<std::pair<std::string, std::string>> params_summary() const override {
        return {{"decay", range_str(decay_)}, {"v_threshold", range_str(th_)}};
    }

  private:
    std::vector<float> decay_, th_;
};

// ------------------------------------------------------------------ integer MultiSpike

// Spike-driven Transformer V3's integer spiking neuron (E-SpikeFormer, BICLab; the official
// MultiSpike quantises round(clamp(x, min, max)) and divides by a norm): emits the integer
// count k itself, so that a consumer's weights carry the 1/norm (exactly, for a power of two)
// and its event cost sees small integers: |k| ACs per synapse, the cost of the k binary spikes
// of the max_value virtual steps that execute it spike-driven. Stateless: one step's output
// depends on that step's input alone. Rounding is half to even, as torch.round.
class MultiSpikeNode final : public Node {
  public:
    explicit MultiSpikeNode(const NodeSpec& s) : Node(s.name(), s.type()) {
        lo_ = integer_level(s, "min_value", 0.0);
        hi_ = integer_level(s, "max_value", 4.0);
        if (lo_ > 0.0f || hi_ < 1.0f || lo_ >= hi_)
            s.fail(lo_ > 0.0f ? "min_value" : "max_value",
                   "needs min_value <= 0 < max_value (a zero input must stay silent)");
    }
    NodeCategory category() const override { return NodeCategory::neuron; }
    bool is_spiking() const override { return true; }
    bool reads_values_only() const override { return true; }
    bool pure() const override { return true; }
    void bind(const Shape& in) override { in_shape_ = out_shape_ = in; }
    void step(const Activity& in, NodeState*, Activity& out,
              const StepContext& ctx) const override {
        const std::int64_t n = in_size();
        const float* x = in.values.data();
        float* o = out.values.data();
        out.active.clear();
        std::uint64_t units = 0;
        for (std::int64_t i = 0; i < n; ++i) {
            // clamp, then round half to even (the default rounding mode), as the official
            // round(clamp(x)) does; a NaN input (never finite weights' output) stays silent.
            const float c = std::clamp(x[i], lo_, hi_);
            const float k = c == c ? std::nearbyint(c) : 0.0f;
            o[i] = k == 0.0f ? 0.0f : k;  // no -0: a silent neuron is +0 as everywhere
            if (k != 0.0f) {
                out.active.push_back(static_cast<std::uint32_t>(i));
                units += static_cast<std::uint64_t>(std::fabs(k));
            }
        }
        out.ternary = lo_ >= -1.0f && hi_ <= 1.0f;
        out.all_ones = lo_ == 0.0f && hi_ == 1.0f;
        if (!ctx.ops) return;
        // One quantiser update per neuron and step (the count of its threshold crossings is
        // one comparison against the levels); each unit of k is one virtual binary spike.
        kernels::book_neuron_updates(*ctx.ops, static_cast<std::uint64_t>(n), 1, true);
        kernels::book_spikes(*ctx.ops, units);
    }
    std::vector<std::pair<std::string, double>> attributes() const override {
        return {{"min_value", double(lo_)}, {"max_value", double(hi_)}};
    }
    std::vector<std::pair<std::string, std::string>> summary() const override {
        return {{"levels", range_str({lo_, hi_})},
                {"output", "integer spike count k = round(clamp(x, min, max)), half to even"}};
    }

  private:
    // Integer levels of at most 16: the event-cost rule counts |k| ACs up to that.
    static float integer_level(const NodeSpec& s, const char* p, double dflt) {
        const double v = s.scalar_or(p, dflt);
        if (v != std::floor(v) || std::fabs(v) > 16.0) s.fail(p, "must be an integer in [-16, 16]");
        return static_cast<float>(v);
    }
    float lo_ = 0.0f, hi_ = 4.0f;
};

// ------------------------------------------------------------------ NIR Threshold

class ThresholdNode final : public NeuronBase {
  public:
    explicit ThresholdNode(const NodeSpec& s) : NeuronBase(s, 0) {
        th_ = param(s, "threshold", std::nullopt);
    }
    void broadcast(std::int64_t n) override { expand(th_, n); }
    void update_block(NeuronState&, const float* x, float* out, std::int64_t b0, std::int64_t b1,
                      BlockIndices& spikes) const override {
        simd::at_level([&] {
            for (std::int64_t k = b0; k < b1; ++k) {
                out[k] = 0.0f;
                if (fires(x[k], th_[static_cast<std::size_t>(k)])) {
                    out[k] = 1.0f;
                    spikes.push_back(static_cast<std::uint32_t>(k));
                }
            }
        });
    }
    std::vector<std::pair<std::string, std::string>> params_summary() const override {
        return {{"threshold", range_str(th_)}};
    }

  private:
    std::vector<float> th_;
};

}  // namespace

namespace {

// Examples for the conformance harness: analog drive [-1, 2) into 6 neurons, time constants of a
// few steps at the default dt = 1 ms so that they fire within the harness's 5 steps.
NodeExample neuron_example(std::initializer_list<std::pair<const char*, double>> scalars) {
    auto e = example_of({6}, NodeExample::Input::analog);
    for (const auto& [name, v] : scalars) e.params.set(name, v);
    return e;
}

}  // namespace

void register_neuron_nodes(NodeFactory& f) {
    f.add(
        "I", [](const NodeSpec& s) { return std::make_unique<LifNode>(s, false, true); },
        "integrator (NIR): v += r I; outputs v",
        [] {
            return neuron_example({{"r", 0.5}});
        });
    f.add(
        "LI", [](const NodeSpec& s) { return std::make_unique<LifNode>(s, true, true); },
        "leaky integrator (NIR): tau, r, v_leak; outputs v",
        [] {
            return neuron_example({{"tau", 0.003}, {"r", 1.0}, {"v_leak", 0.1}});
        });
    f.add(
        "CubaLI", [](const NodeSpec& s) { return std::make_unique<CubaLifNode>(s, true); },
        "current-based leaky integrator (NIR): tau_syn, tau_mem, r, v_leak, w_in; outputs v",
        [] {
            return neuron_example({{"tau_syn", 0.002},
                                   {"tau_mem", 0.003},
                                   {"r", 1.0},
                                   {"v_leak", 0.0},
                                   {"w_in", 1.5}});
        });
    f.add(
        "IF", [](const NodeSpec& s) { return std::make_unique<LifNode>(s, false); },
        "integrate-and-fire: v += r I; r, v_threshold, v_reset",
        [] {
            return neuron_example({{"r", 1.0}, {"v_threshold", 1.0}, {"v_reset", 0.0}});
        });
    f.add(
        "LIF", [](const NodeSpec& s) { return std::make_unique<LifNode>(s, true); },
        "leaky integrate-and-fire (NIR): tau, r, v_leak, v_threshold, v_reset",
        [] {
            auto e = neuron_example({{"r", 2.0}, {"v_leak", 0.0}, {"v_reset", 0.0}});
            e.params.set("tau", {0.002, 0.003, 0.004, 0.002, 0.003, 0.004}, {6});
            e.params.set("v_threshold", {1.0, 0.5, 1.0, 0.5, 1.0, 0.5}, {6});
            return e;
        });
    f.add(
        "CubaLIF", [](const NodeSpec& s) { return std::make_unique<CubaLifNode>(s); },
        "current-based LIF (NIR): tau_syn, tau_mem, r, v_leak, v_threshold, v_reset, w_in",
        [] {
            return neuron_example({{"tau_syn", 0.002},
                                   {"tau_mem", 0.002},
                                   {"r", 2.0},
                                   {"v_leak", 0.0},
                                   {"v_threshold", 0.5},
                                   {"v_reset", 0.0},
                                   {"w_in", 1.0}});
        });
    f.add(
        "Threshold", [](const NodeSpec& s) { return std::make_unique<ThresholdNode>(s); },
        "z = 1 where x > threshold",
        [] {
            return neuron_example({{"threshold", 0.5}});
        });
    f.add(
        "ternion.SJLIF", [](const NodeSpec& s) { return std::make_unique<SjLifNode>(s, false); },
        "SpikingJelly multi-step LIF: tau (steps), decay_input, v_threshold, v_reset; fires on >=",
        [] {
            auto e = neuron_example(
                {{"tau", 2.0}, {"decay_input", 1.0}, {"v_threshold", 1.0}, {"v_reset", 0.0}});
            e.params.set("compare", ">=");
            return e;
        });
    f.add(
        "ternion.PLIF", [](const NodeSpec& s) { return std::make_unique<SjLifNode>(s, true); },
        "SpikingJelly parametric LIF: learned w (sigmoid(w) = 1/tau) or tau",
        [] {
            return neuron_example({{"w", 0.0}, {"v_threshold", 0.8}});
        });
    f.add(
        "ternion.TernaryLIF", [](const NodeSpec& s) { return std::make_unique<TernaryLifNode>(s); },
        "ternary spiking neuron (TSN) of BSA: decay, v_threshold; emits -1/0/+1",
        [] {
            return neuron_example({{"decay", 0.5}, {"v_threshold", 0.7}});
        });
    f.add(
        "ternion.MultiSpike", [](const NodeSpec& s) { return std::make_unique<MultiSpikeNode>(s); },
        "integer spiking neuron of SDT V3 (MultiSpike): k = round(clamp(x, min_value, max_value)), "
        "emitted as the count k (|k| virtual binary spikes)",
        [] {
            auto e = neuron_example({{"min_value", 0.0}, {"max_value", 4.0}});
            return e;
        });
}

}  // namespace ternion
