// syops: syops-counter's per-module rules, rate = mean input of {0,1}-valued calls
// (docs/cost-model.md).
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "hw/conventions/convention.hpp"

namespace ternion::hw {

namespace {

using nlohmann::json;

// syops-counter's spike test on each call (syops/ops.py, spike_rate): at most two distinct
// values, all in [0, 1]; its rate is then the mean of the values. Slot 0 counts the steps whose
// input passes, slot 1 sums those inputs' values. Analog inputs fail on their third value.
class BinaryInputTally final : public StepTally {
  public:
    std::string_view name() const override { return "syops input test"; }
    int slots() const override { return 2; }
    void tally(const Node&, const Activity& in, const Activity&, const NodeState*, std::int64_t,
               Scratch*, double* slots) const override {
        if (in.ternary && in.listed) {
            if (!in.all_ones)
                for (auto i : in.active)
                    if (in.values[i] < 0.0f) return;
            slots[0] += 1.0;
            slots[1] += static_cast<double>(in.active.size());
            return;
        }
        float seen[2] = {0.0f, 0.0f};
        int distinct = 0;
        double sum = 0.0;
        for (float v : in.values) {
            if (!(v >= 0.0f && v <= 1.0f)) return;
            if (!(distinct > 0 && v == seen[0]) && !(distinct > 1 && v == seen[1])) {
                if (distinct == 2) return;
                seen[distinct++] = v;
            }
            sum += static_cast<double>(v);
        }
        slots[0] += 1.0;
        slots[1] += sum;
    }
};

const BinaryInputTally kInputTally;

// syops-counter (github.com/iCGY96/syops-counter, syops/ops.py at d6dad5a, 2023-05-06): every
// hooked module call tests its input (spike_rate: at most two distinct values, all in [0, 1]); a
// passing call adds its dense ops x rate (rate = mean input) as AC, any other call its dense ops
// as MAC. Neuron hooks add one AC per input element, whatever the input. Here a call is one
// sample at one step. Returns (AC, MAC) over all calls of the layer.
std::pair<double, double> syops_layer(const RunRecord& run, const LayerRecord& l, std::int64_t S,
                                      std::int64_t T, std::string& basis, double& rate) {
    const double* tally = run.slots_of(l, kInputTally);
    const double calls = static_cast<double>(S) * static_cast<double>(T);
    const double passing = tally[0], binary_in_sum = tally[1];
    const double other = calls - passing;
    const double n_in = static_cast<double>(l.in_size);
    // Sum over passing calls of their rate (mean input).
    const double rate_sum = n_in > 0 ? binary_in_sum / n_in : 0.0;
    rate = calls > 0 ? (rate_sum + other) / calls : 0.0;
    // A folded BatchNorm's input is its layer's output, taken as analog: 2 MACs per element
    // (affine), bn_syops_counter_hook.
    const double bn = 2.0 * static_cast<double>(l.modules.batchnorm_elems_per_step) * calls;
    const double bias = static_cast<double>(l.modules.bias_ops_per_step);
    if (l.attention_shape) {
        // The Q/K/V Linears (linear hook), their BatchNorms, and every neuron inside (LIF hook:
        // an AC per element). The attention matmuls are plain tensor products, which syops does
        // not hook.
        const double per = static_cast<double>(l.attention_shape->proj_dense_macs_per_step) + bias;
        const double neurons = static_cast<double>(l.modules.neuron_elems_per_step) * calls;
        basis =
            "syops: Q/K/V linears x rate, BatchNorm, neurons one AC per element; matmuls not "
            "counted";
        return {per * rate_sum + neurons, per * other + bn};
    }
    if (l.traits.connection) {
        const double per = static_cast<double>(l.dense_macs_per_step) + bias;  // padding included
        basis = "syops: (dense ops + bias) x rate as AC, or as MAC when the input is not spikes";
        return {per * rate_sum, per * other + bn};
    }
    if (l.traits.pooling) {
        basis = "syops: pool, input elements x rate as AC, or as MAC when the input is not spikes";
        return {binary_in_sum, n_in * other};
    }
    if (l.traits.batchnorm) {  // an unfolded BatchNorm: the same hook
        basis = "syops: BatchNorm, 2 MACs per element";
        return {0.0, bn};
    }
    if (l.category == NodeCategory::neuron && l.spiking) {
        basis = "syops: neuron, one AC per input element";
        return {n_in * calls, 0.0};
    }
    basis = "syops: not a hooked module";
    return {0.0, 0.0};
}

class Syops final : public Convention {
  public:
    std::string_view name() const override { return "syops"; }
    std::vector<const StepTally*> needs() const override { return {&kInputTally}; }
    void begin(const RunRecord& run, CostReport& r) const override {
        if (!run.has(kInputTally))
            throw std::invalid_argument(
                "syops counting needs a run that took its input tally (hw::tallies_for)");
        r.syops.emplace();
    }
    void count(const LayerRecord& l, LayerCost& c, PriceContext& x, CostReport& r) const override {
        const auto [sac, smac] = syops_layer(*x.run, l, x.S, x.T, c.basis, c.syops_rate);
        c.count[kAc] = sac;
        c.count[kMac] = smac;
        r.syops->ac += sac * x.invS;
        r.syops->mac += smac * x.invS;
        if (smac > 0 && l.ops.mac == 0 && (l.traits.connection || l.attention_shape))
            (l.input_ternary ? r.syops->ternary_as_mac : r.syops->sums_as_mac).push_back(l.name);
    }
    void finish(CostReport& r) const override {
        auto note = [&](const std::vector<std::string>& v, const char* why) {
            if (v.empty()) return;
            std::string list;
            for (const auto& n : v) list += (list.empty() ? "" : ", ") + n;
            r.notes.push_back("syops bills " + list + " as MACs on the steps whose input holds " +
                              why +
                              ": they fail syops-counter's {0,1} spike test, so these layers "
                              "cost more than under exact counting (which counts them as ACs), "
                              "up to their ANN equivalent");
        };
        note(r.syops->ternary_as_mac, "-1 spikes (ternary)");
        note(r.syops->sums_as_mac, "integers above 1 (e.g. residual sums of spikes)");
    }
    void layer_json(const CostReport&, const LayerCost& c, json& jl) const override {
        jl["syops_rate"] = c.syops_rate;
    }
    void report_json(const CostReport& r, json& doc) const override {
        doc["syops"] = {{"ac", r.syops->ac}, {"mac", r.syops->mac}};
    }
    void report_text(const CostReport& r, std::ostream& os) const override {
        os << "syops-counter (per sample): " << fmt(r.syops->ac) << " AC, " << fmt(r.syops->mac)
           << " MAC\n";
    }
};

}  // namespace

const Convention& syops_convention() {
    static const Syops c;
    return c;
}

}  // namespace ternion::hw
