#include "neuron/neuron_params.hpp"

#include <cmath>

namespace ternion {

kernels::SjLifCharge read_sj_lif_charge(const NodeSpec& s, const std::string& pre,
                                        bool parametric) {
    const double di = s.scalar_or(pre + "decay_input", 1.0);
    if (di != 0.0 && di != 1.0) s.fail(pre + "decay_input", "must be 0 or 1");
    const bool decay_input = di != 0.0;
    const auto vr = static_cast<float>(s.scalar_or(pre + "v_reset", 0.0));
    bool scale_form = vr == 0.0f;
    if (auto f = s.string_opt(pre + "leak_form")) {
        if (*f != "scale" && *f != "difference")
            s.fail(pre + "leak_form", "must be \"scale\" or \"difference\", got \"" + *f + "\"");
        scale_form = *f == "scale";
    }
    // A ParametricLIF file may carry tau beside w (w wins): tau is a known name either way.
    static_cast<void>(s.has(pre + "tau"));
    if (parametric && s.has(pre + "w")) {
        // sigmoid(w) computed in double and rounded once (the exporter picks w so that this is
        // torch's float32 factor).
        const double w = s.scalar(pre + "w");
        const auto k = static_cast<float>(1.0 / (1.0 + std::exp(-w)));
        return kernels::SjLifCharge::from_sigmoid(k, decay_input, vr, scale_form);
    }
    const double tau = s.scalar_or(pre + "tau", 2.0);
    require_positive(s, pre + "tau", static_cast<float>(tau));
    return kernels::SjLifCharge::from_tau(tau, decay_input, vr, scale_form);
}

kernels::SjLif read_sj_lif(const NodeSpec& s, const std::string& pre, float vth_default) {
    kernels::SjLif p;
    p.charge = read_sj_lif_charge(s, pre);
    p.v_threshold = static_cast<float>(s.scalar_or(pre + "v_threshold", vth_default));
    return p;
}

void check_tsn_decay(const NodeSpec& s, const std::string& name, float decay) {
    if (!(decay >= 0.0f && decay <= 1.0f))
        s.fail(name, "must lie in [0, 1] (got " + std::to_string(decay) + ")");
}
void require_positive(const NodeSpec& s, const std::string& name, float value) {
    if (!(value > 0.0f)) s.fail(name, "must be positive (got " + std::to_string(value) + ")");
}

kernels::Tsn read_tsn(const NodeSpec& s, const std::string& pre, float vth_default) {
    kernels::Tsn p;
    p.decay = static_cast<float>(s.scalar_or(pre + "decay", 0.5));
    check_tsn_decay(s, pre + "decay", p.decay);
    p.v_threshold = static_cast<float>(s.scalar_or(pre + "v_threshold", vth_default));
    require_positive(s, pre + "v_threshold", p.v_threshold);
    return p;
}

}  // namespace ternion
