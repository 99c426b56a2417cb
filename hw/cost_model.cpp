// Pricing a RunRecord under a counting convention, and reporting it (JSON and text).
#include "hw/cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "sim/core/error.hpp"

namespace ternion::hw {

using nlohmann::json;

CountMode parse_count_mode(const std::string& s) {
    if (s == "exact") return CountMode::exact;
    if (s == "neurobench") return CountMode::neurobench;
    if (s == "paper") return CountMode::paper;
    if (s == "syops") return CountMode::syops;
    throw OptionError("count",
                      "unknown counting mode '" + s + "' (use exact, neurobench, paper or syops)");
}

const char* count_mode_name(CountMode m) {
    switch (m) {
        case CountMode::exact:
            return "exact";
        case CountMode::neurobench:
            return "neurobench";
        case CountMode::paper:
            return "paper";
        case CountMode::syops:
            return "syops";
    }
    return "?";
}

namespace {

// A layer with weights that NeuroBench would hook: NIR's connection primitives say so by their
// traits; nodes outside the NIR set by reporting a non-zero dense_synops_per_step (pooling and
// normalisation report 0).
bool is_connection(const LayerRecord& l) {
    if (l.category != NodeCategory::synaptic && l.category != NodeCategory::readout &&
        l.category != NodeCategory::other)
        return false;
    return l.traits.connection || l.dense_synops_per_step > 0;
}

std::string fmt(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
}

// Paper mode, one attention layer, in ACs per inference: the projections inside the node are
// spike-fed linears (fr_in x T x their dense MACs); the spike-spike part follows the paper of
// each attention: Spikformer's closed form for SSA, the Spike-driven Transformer's O(N D) column
// sum for SDSA (its coincident Q, K pairs), and for BSA the ternary product at the Q and K rates
// plus Shiftmax and Shiftmax.V as counted. Writes how it counted into `basis`.
double paper_attention(const LayerRecord& l, std::int64_t S, std::int64_t T, std::string& basis,
                       std::vector<std::string>& notes, double& attn_part) {
    const double fr_in = l.input_rate(S, T);
    const double Td = static_cast<double>(T), Sd = static_cast<double>(S);
    const auto& sh = l.attention_shape;
    if (!sh || sh->tokens <= 0 || sh->dim <= 0 || sh->heads <= 0 || S <= 0 || T <= 0) {
        notes.push_back("layer '" + l.name + "' (" + l.type +
                        "): no spiking-attention structure; counted as fr_in x T x FLOPs");
        basis = "paper: fr_in*T*FLOPs (fallback), fr_in=" + fmt(fr_in);
        attn_part = fr_in * Td * static_cast<double>(l.dense_macs_per_step);
        return attn_part;
    }
    const auto& a = l.attention;
    const double N = static_cast<double>(sh->tokens), D = static_cast<double>(sh->dim),
                 H = static_cast<double>(sh->heads), dh = D / H;
    const double elems = Sd * Td * N * D;
    const double fq = static_cast<double>(a.q_spikes) / elems,
                 fk = static_cast<double>(a.k_spikes) / elems,
                 fv = static_cast<double>(a.v_spikes) / elems;
    const double proj = fr_in * Td * static_cast<double>(sh->proj_dense_macs_per_step);
    if (sh->closed_form == AttentionClosedForm::qkv_products) {
        // Q (K^T V): K^T V costs N dh^2 per head gated by the sparser of K and V, Q times the
        // result N dh^2 gated by Q (Spikingformer's energy code).
        attn_part = Td * H * N * dh * dh * (std::min(fk, fv) + fq);
        basis =
            "paper: fr_in*T*proj_macs + SSA closed form T*H*N*(D/H)^2*(min(fr_K,fr_V)+fr_Q), "
            "fr_Q=" +
            fmt(fq) + " fr_K=" + fmt(fk) + " fr_V=" + fmt(fv);
    } else if (sh->closed_form == AttentionClosedForm::column_sum) {
        attn_part = static_cast<double>(a.score_ac) / Sd;
        basis = "paper: fr_in*T*proj_macs + SDSA column sum of Q (.) K (coincident spikes)";
    } else if (sh->closed_form == AttentionClosedForm::ternary_shiftmax) {
        attn_part = Td * H * N * N * dh * fq * fk + static_cast<double>(a.norm_ac + a.mix_ac) / Sd;
        basis =
            "paper: fr_in*T*proj_macs + BSA T*H*N^2*(D/H)*fr_Q*fr_K + Shiftmax and "
            "Shiftmax.V adds, fr_Q=" +
            fmt(fq) + " fr_K=" + fmt(fk);
    } else {
        attn_part =
            fr_in * Td * static_cast<double>(l.dense_macs_per_step - sh->proj_dense_macs_per_step);
        basis = "paper: fr_in*T*FLOPs";
    }
    return proj + attn_part;
}

// syops-counter (github.com/iCGY96/syops-counter, syops/ops.py at d6dad5a, 2023-05-06): every
// hooked module call tests its input (spike_rate: at most two distinct values, all in [0, 1]); a
// passing call adds its dense ops x rate (rate = mean input) as AC, any other call its dense ops
// as MAC. Neuron hooks add one AC per input element, whatever the input. Here a call is one
// sample at one step. Returns (AC, MAC) over all calls of the layer.
std::pair<double, double> syops_layer(const LayerRecord& l, std::int64_t S, std::int64_t T,
                                      std::string& basis, double& rate) {
    const double calls = static_cast<double>(S) * static_cast<double>(T);
    const double passing = static_cast<double>(l.binary_in_steps);
    const double other = calls - passing;
    const double n_in = static_cast<double>(l.in_size);
    // Sum over passing calls of their rate (mean input).
    const double rate_sum = n_in > 0 ? l.binary_in_sum / n_in : 0.0;
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
        return {l.binary_in_sum, n_in * other};
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

// NeuroBench's static and activation metrics over the whole record (see NeuroBenchFigures).
void neurobench_sparsity(const RunRecord& run, NeuroBenchFigures& nb) {
    const double calls = static_cast<double>(run.samples) * static_cast<double>(run.timesteps);
    double act = 0.0, act_nonzero = 0.0, weights = 0.0, zeros = 0.0, params = 0.0;
    for (const LayerRecord& l : run.layers) {
        if (l.spiking) {
            act += static_cast<double>(l.neurons) * calls;
            act_nonzero += static_cast<double>(l.nonzero_out);
        }
        if (l.attention_shape) {
            const double nd =
                static_cast<double>(l.attention_shape->tokens * l.attention_shape->dim);
            act += (l.attention_shape->spiking_v ? 3.0 : 2.0) * nd * calls;
            act_nonzero += static_cast<double>(l.attention.q_spikes + l.attention.k_spikes +
                                               l.attention.v_spikes);
            if (l.attention_shape->mask_neurons > 0) {
                act += static_cast<double>(l.attention_shape->mask_neurons) * calls;
                act_nonzero += static_cast<double>(l.attention.mask_channels);
            }
        }
        if (l.weight_count > 0 && l.weight_density >= 0.0) {
            const double w = static_cast<double>(l.weight_count);
            weights += w;
            zeros += std::round(w * (1.0 - l.weight_density));
        }
        params += static_cast<double>(l.param_count);
    }
    nb.activation_sparsity = act > 0 ? 1.0 - act_nonzero / act : 0.0;
    // NeuroBench reports it rounded to 4 decimals (static/connection_sparsity.py).
    nb.connection_sparsity = weights > 0 ? std::nearbyint(zeros / weights * 1e4) / 1e4 : 0.0;
    nb.footprint_bytes = 4.0 * params;
    if (run.membrane_tallies && run.samples > 0) {
        std::uint64_t updates = 0;
        for (const LayerRecord& l : run.layers) updates += l.membrane_updates;
        nb.membrane_updates = static_cast<double>(updates) / static_cast<double>(run.samples);
    }
}

}  // namespace

OpsEnergy price_ops(const OpCounts& ops, const Profile& p) {
    OpsEnergy e;
    int k = 0;
    ops.for_each([&](std::string_view name, std::uint64_t v) {
        const auto price = p.price(k++);
        if (!price) {
            if (v) e.unpriced.emplace_back(name);
            return;
        }
        e.by_kind_pj.emplace_back(std::string(name), *price * static_cast<double>(v));
        e.total_pj += *price * static_cast<double>(v);
    });
    return e;
}

namespace {

// What pricing every layer needs: the run's size and the profile's unit prices.
struct PriceContext {
    std::int64_t S = 0, T = 0;
    double Sd = 0.0, Td = 0.0, invS = 0.0;  // an empty run prices to 0, not NaN
    KindArray unit{};                       // pJ per unit; unpriced kinds stay 0 and are listed
    std::array<bool, kKinds> priced{};
    bool encoding_seen = false;  // paper mode: the first connection layer was handled
};

PriceContext price_context(const RunRecord& run, const Profile& p) {
    PriceContext x;
    x.S = run.samples;
    x.T = run.timesteps;
    x.Sd = static_cast<double>(x.S);
    x.Td = static_cast<double>(x.T);
    x.invS = x.S > 0 ? 1.0 / x.Sd : 0.0;
    for (int k = 0; k < kKinds; ++k) {
        auto v = p.price(k);
        x.priced[k] = v.has_value();
        x.unit[k] = v.value_or(0.0);
    }
    return x;
}

// NeuroBench's SynapticOperations: Effective ACs/MACs of connection layers, Dense of all.
void count_neurobench(const LayerRecord& l, LayerCost& c, const PriceContext& x,
                      NeuroBenchFigures& nb) {
    const double ac = c.count[kAc], mac = c.count[kMac];
    nb.dense += static_cast<double>(l.dense_synops_per_step) * x.Td;  // x S / S
    c.count[kAc] = c.count[kMac] = 0.0;
    if (l.category == NodeCategory::attention) {
        // All the node's products are priced, but reported apart: NeuroBench does not hook
        // plain matmuls. The projections inside the node are Linear layers for NeuroBench: one
        // op per (non-zero input, non-zero weight) pair, ACs at steps whose input is all in
        // {-1,0,1}, else MACs.
        const double pac = static_cast<double>(l.synapses.pairs_ternary);
        const double pmac = static_cast<double>(l.synapses.pairs_other);
        const double mat_ac = std::max(0.0, ac - static_cast<double>(l.attention.proj_ac));
        const double mat_mac = std::max(0.0, mac - static_cast<double>(l.attention.proj_mac));
        c.count[kAc] = ac;
        c.count[kMac] = mac;
        c.attention_matmul = true;
        nb.effective_acs += pac * x.invS;
        nb.effective_macs += pmac * x.invS;
        nb.attention_matmul_ac += mat_ac * x.invS;
        nb.attention_matmul_mac += mat_mac * x.invS;
        nb.attention_matmul_pj += (x.unit[kAc] * mat_ac + x.unit[kMac] * mat_mac) * x.invS;
        c.basis = "neurobench: attention matmul line (not a NeuroBench synop)";
    } else if (is_connection(l)) {
        // One op per (non-zero input, non-zero weight) pair, an AC at steps whose input was all
        // in {-1,0,1}, else a MAC (an input of 2 is one MAC).
        c.count[kAc] = static_cast<double>(l.synapses.pairs_ternary);
        c.count[kMac] = static_cast<double>(l.synapses.pairs_other);
        nb.effective_acs += c.count[kAc] * x.invS;
        nb.effective_macs += c.count[kMac] * x.invS;
        c.basis = "neurobench: Effective_ACs / Effective_MACs (per-step input test)";
    } else {
        c.basis = (ac + mac > 0) ? "neurobench: ac/mac not counted (not a connection layer)"
                                 : "neurobench: no synaptic ops";
    }
}

// The papers' SOPs: fr_in * T * FLOPs for spiking layers, the encoding layer as MACs.
void count_paper(const LayerRecord& l, LayerCost& c, PriceContext& x, const PriceOptions& o,
                 PaperFigures& pp, std::vector<std::string>& notes) {
    c.count[kAc] = c.count[kMac] = 0.0;
    const double flops = static_cast<double>(l.dense_macs_per_step);
    if (l.category == NodeCategory::attention) {
        double part = 0.0;
        const double sop = paper_attention(l, x.S, x.T, c.basis, notes, part);
        c.sop = sop;
        c.input_rate = l.input_rate(x.S, x.T);
        c.count[kAc] = sop * x.Sd;
        pp.sop += sop;
        pp.attention_ac += part;
        return;
    }
    if (!is_connection(l)) {
        c.basis = "paper: not a conv/linear/attention layer";
        return;
    }
    c.input_rate = l.input_rate(x.S, x.T);
    if (!x.encoding_seen && !l.input_ternary) {
        const double m = flops * (o.encoding_mac_times_T ? x.Td : 1.0);
        c.count[kMac] = m * x.Sd;
        c.sop = m;
        pp.encoding_mac = m;
        pp.encoding_layer = l.name;
        c.basis = o.encoding_mac_times_T ? "paper: encoding layer, MAC x FLOPs x T"
                                         : "paper: encoding layer, MAC x FLOPs";
    } else {
        const double sop = c.input_rate * x.Td * flops;
        c.sop = sop;
        c.count[kAc] = sop * x.Sd;
        pp.sop += sop;
        c.basis = "paper: SOP = fr_in*T*FLOPs, fr_in=" + fmt(c.input_rate);
        if (!l.input_ternary)
            notes.push_back("layer '" + l.name +
                            "' has analog input but is not the encoding layer; billed as AC per "
                            "the papers' convention");
    }
    x.encoding_seen = true;
}

// One layer's counts in the report's convention, priced, with its ANN equivalent.
LayerCost price_layer(const LayerRecord& l, CostReport& r, PriceContext& x, const PriceOptions& o) {
    LayerCost c;
    c.name = l.name;
    c.type = l.type;
    int k = 0;
    l.ops.for_each(
        [&](std::string_view, std::uint64_t v) { c.count[k++] = static_cast<double>(v); });
    switch (o.mode) {
        case CountMode::exact:
            c.basis = "exact";
            break;
        case CountMode::neurobench:
            count_neurobench(l, c, x, *r.neurobench);
            break;
        case CountMode::syops: {
            const auto [sac, smac] = syops_layer(l, x.S, x.T, c.basis, c.syops_rate);
            c.count[kAc] = sac;
            c.count[kMac] = smac;
            r.syops->ac += sac * x.invS;
            r.syops->mac += smac * x.invS;
            break;
        }
        case CountMode::paper:
            count_paper(l, c, x, o, *r.paper, r.notes);
            break;
    }
    for (int i = 0; i < kKinds; ++i) {
        c.energy_pj[i] = x.unit[i] * c.count[i];
        c.energy_total_pj += c.energy_pj[i];
    }
    // The same graph run as an ANN for the same T steps: every synaptic op a dense MAC.
    c.ann_macs = static_cast<double>(l.dense_macs_per_step) * x.Td;
    c.ann_pj = x.unit[kMac] * c.ann_macs;
    return c;
}

// Totals, per-inference figures and which kinds the profile left unpriced.
void add_totals(CostReport& r, const Profile& p, const PriceContext& x) {
    for (const LayerCost& c : r.layers) {
        for (int i = 0; i < kKinds; ++i) r.total_count[i] += c.count[i];
        r.ann_macs_per_inference += c.ann_macs;
        r.ann_pj_per_inference += c.ann_pj;
    }
    for (int i = 0; i < kKinds; ++i) {
        r.total_energy_pj[i] = x.unit[i] * r.total_count[i];
        r.total_pj += r.total_energy_pj[i];
        r.per_inference_count[i] = x.S > 0 ? r.total_count[i] / x.Sd : 0.0;
        r.per_inference_energy_pj[i] = x.unit[i] * r.per_inference_count[i];
        r.per_inference_pj += r.per_inference_energy_pj[i];
        if (r.total_count[i] > 0) {
            if (!x.priced[i])
                r.unpriced.emplace_back(kind_names()[i]);
            else if (!p.price_verified(i))
                r.profile_verified = false;
        }
    }
}

void add_notes(CostReport& r, const Profile& p) {
    if (!r.unpriced.empty()) {
        std::string list;
        for (const auto& u : r.unpriced) list += (list.empty() ? "" : ", ") + u;
        r.notes.push_back("counted but not priced by profile '" + p.name + "': " + list);
    }
    if (r.neurobench &&
        (r.neurobench->attention_matmul_ac > 0 || r.neurobench->attention_matmul_mac > 0))
        r.notes.push_back(
            "attention matmuls are priced in energy_pj but are not NeuroBench synaptic "
            "operations; they are reported apart as the attention matmul line");
    if (!p.traffic.empty())
        r.notes.push_back(
            "the ANN-equivalent prices MACs only; memory traffic is priced for the "
            "spiking run alone, so the SNN/ANN ratio is pessimistic for the SNN");
    if (!r.profile_verified)
        r.notes.push_back("some figures of profile '" + p.name + "' are marked unverified");
}

// Latency, static energy and average power, where the profile gives a clock.
void add_timing(CostReport& r, const Profile& p, const PriceContext& x) {
    if (p.clock_hz && x.T > 0) {
        r.latency_s = x.Td / p.clock_hz->value;
        const double stat = p.static_power_w ? p.static_power_w->value * *r.latency_s * 1e12 : 0.0;
        if (p.static_power_w) r.static_energy_pj = stat;
        r.average_power_w = (r.per_inference_pj + stat) * 1e-12 / *r.latency_s;
    } else if (p.static_power_w) {
        r.notes.push_back(
            "profile gives static power but no clock_hz: no latency, static energy "
            "not computed");
    }
}

}  // namespace

CostReport price(const RunRecord& run, const Profile& p, const PriceOptions& o) {
    CostReport r;
    r.profile_name = p.name;
    r.profile_description = p.description;
    r.profile_path = p.path;
    r.mode = o.mode;
    r.options = o;
    r.samples = run.samples;
    r.timesteps = run.timesteps;
    PriceContext x = price_context(run, p);
    if (o.mode == CountMode::neurobench) {
        r.neurobench.emplace();
        neurobench_sparsity(run, *r.neurobench);
    }
    if (o.mode == CountMode::paper) r.paper.emplace();
    if (o.mode == CountMode::syops) {
        r.syops.emplace();
        if (!run.syops_tallies)
            throw std::invalid_argument(
                "syops counting needs a run with RunConfig::syops_tallies set");
    }
    for (const LayerRecord& l : run.layers) r.layers.push_back(price_layer(l, r, x, o));
    add_totals(r, p, x);
    add_notes(r, p);
    add_timing(r, p, x);
    return r;
}

namespace {

json by_kind(const KindArray& a, bool skip_zero) {
    json j = json::object();
    for (int k = 0; k < kKinds; ++k)
        if (!skip_zero || a[k] != 0.0) j[std::string(kind_names()[k])] = a[k];
    return j;
}

KindArray scaled(const KindArray& a, double s) {
    KindArray o{};
    for (int k = 0; k < kKinds; ++k) o[k] = a[k] * s;
    return o;
}

}  // namespace

json ops_json(const OpCounts& o, double divisor) {
    json j = json::object();
    o.for_each([&](std::string_view k, std::uint64_t v) {
        if (divisor == 1.0)
            j[std::string(k)] = v;
        else
            j[std::string(k)] = static_cast<double>(v) / divisor;
    });
    return j;
}

void add_to_json(const CostReport& r, json& doc) {
    const double inv = r.samples > 0 ? 1.0 / static_cast<double>(r.samples) : 0.0;
    doc["profile"] = {{"name", r.profile_name},
                      {"description", r.profile_description},
                      {"path", r.profile_path},
                      {"all_figures_verified", r.profile_verified}};
    doc["count_mode"] = count_mode_name(r.mode);

    if (!doc.contains("layers") || !doc["layers"].is_array()) {
        doc["layers"] = json::array();
        for (const auto& c : r.layers)
            doc["layers"].push_back({{"name", c.name}, {"type", c.type}});
    }
    // Layer names are unique in a graph: the report's entries join the priced layers by name
    // (the report may list a subset, or in another order).
    std::unordered_map<std::string, const LayerCost*> by_name;
    for (const LayerCost& c : r.layers) by_name.emplace(c.name, &c);
    for (auto& jl : doc["layers"]) {
        if (!jl.is_object() || !jl.contains("name") || !jl["name"].is_string()) continue;
        const auto it = by_name.find(jl["name"].get<std::string>());
        if (it == by_name.end()) continue;
        const LayerCost& c = *it->second;
        jl["energy_pj"] = c.energy_total_pj * inv;
        jl["energy_by_kind_pj"] = by_kind(scaled(c.energy_pj, inv), true);
        jl["ann_energy_pj"] = c.ann_pj;
        jl["count_basis"] = c.basis;
        if (r.mode != CountMode::exact) jl["counted_ops"] = by_kind(scaled(c.count, inv), true);
        if (r.mode == CountMode::paper) {
            jl["sop"] = c.sop;
            jl["input_rate"] = c.input_rate;
        }
        if (c.attention_matmul) jl["attention_matmul"] = true;
        if (r.mode == CountMode::syops) jl["syops_rate"] = c.syops_rate;
    }

    json& pi = doc["per_inference"];
    pi["energy_pj"] = r.per_inference_pj;
    pi["energy_by_kind_pj"] = by_kind(r.per_inference_energy_pj, false);
    if (r.mode != CountMode::exact) pi["counted_ops"] = by_kind(r.per_inference_count, false);
    if (r.latency_s) pi["latency_s"] = *r.latency_s;
    if (r.static_energy_pj) {
        pi["static_energy_pj"] = *r.static_energy_pj;
        pi["energy_with_static_pj"] = r.per_inference_pj + *r.static_energy_pj;
    }
    if (r.average_power_w) pi["average_power_w"] = *r.average_power_w;
    doc["energy_total_pj"] = r.total_pj;

    json& ann = doc["ann_equivalent"];
    ann["macs_priced"] = r.ann_macs_per_inference;
    ann["energy_pj"] = r.ann_pj_per_inference;
    if (r.ann_pj_per_inference > 0)
        ann["energy_ratio"] = r.per_inference_pj / r.ann_pj_per_inference;
    else
        ann["energy_ratio"] = nullptr;

    if (r.neurobench) {
        const auto& nb = *r.neurobench;
        doc["neurobench"] = {
            {"Dense", nb.dense},
            {"Effective_ACs", nb.effective_acs},
            {"Effective_MACs", nb.effective_macs},
            {"ActivationSparsity", nb.activation_sparsity},
            {"ConnectionSparsity", nb.connection_sparsity},
            {"Footprint", nb.footprint_bytes},
            {"MembraneUpdates", nb.membrane_updates ? json(*nb.membrane_updates) : json(nullptr)},
            {"attention_matmul",
             {{"ac", nb.attention_matmul_ac},
              {"mac", nb.attention_matmul_mac},
              {"energy_pj", nb.attention_matmul_pj}}}};
    }
    if (r.syops) doc["syops"] = {{"ac", r.syops->ac}, {"mac", r.syops->mac}};
    if (r.paper) {
        const auto& pp = *r.paper;
        doc["paper"] = {{"SOP", pp.sop},
                        {"attention_SOP", pp.attention_ac},
                        {"encoding_MAC", pp.encoding_mac},
                        {"encoding_layer", pp.encoding_layer},
                        {"encoding_mac_times_T", r.options.encoding_mac_times_T}};
    }
    doc["energy_notes"] = r.notes;
}

std::string format_table(const CostReport& r) {
    std::ostringstream os;
    const double inv = r.samples > 0 ? 1.0 / static_cast<double>(r.samples) : 0.0;
    os << "energy: profile " << r.profile_name << ", count " << count_mode_name(r.mode) << ", "
       << r.samples << " samples x T=" << r.timesteps << "; per inference\n";
    char line[256];
    std::snprintf(line, sizeof line, "%-20s %-14s %12s %12s %12s %12s %12s\n", "layer", "type",
                  "AC", "MAC", "energy pJ", "ANN pJ", "share");
    os << line;
    for (const auto& c : r.layers) {
        if (c.energy_total_pj == 0.0 && c.ann_pj == 0.0) continue;
        const double e = c.energy_total_pj * inv;
        const double share = r.per_inference_pj > 0 ? e / r.per_inference_pj * 100.0 : 0.0;
        std::snprintf(line, sizeof line, "%-20.20s %-14.14s %12.5g %12.5g %12.5g %12.5g %11.1f%%\n",
                      c.name.c_str(), c.type.c_str(), c.count[kAc] * inv, c.count[kMac] * inv, e,
                      c.ann_pj, share);
        os << line;
    }
    std::snprintf(line, sizeof line, "%-20s %-14s %12.5g %12.5g %12.5g %12.5g\n", "total", "",
                  r.per_inference_count[kAc], r.per_inference_count[kMac], r.per_inference_pj,
                  r.ann_pj_per_inference);
    os << line;
    os << "by kind (pJ per inference):";
    for (int k = 0; k < kKinds; ++k)
        if (r.per_inference_energy_pj[k] != 0.0)
            os << " " << kind_names()[k] << " " << fmt(r.per_inference_energy_pj[k]);
    os << "\n";
    os << "ANN-equivalent (all MACs, T steps): " << fmt(r.ann_pj_per_inference) << " pJ";
    if (r.ann_pj_per_inference > 0)
        os << "; SNN/ANN energy = " << fmt(r.per_inference_pj / r.ann_pj_per_inference);
    os << "\n";
    if (r.neurobench) {
        const auto& nb = *r.neurobench;
        os << "NeuroBench (per sample): Dense " << fmt(nb.dense) << ", Effective_ACs "
           << fmt(nb.effective_acs) << ", Effective_MACs " << fmt(nb.effective_macs)
           << "; attention matmul (not in NeuroBench): " << fmt(nb.attention_matmul_ac) << " AC, "
           << fmt(nb.attention_matmul_mac) << " MAC, " << fmt(nb.attention_matmul_pj) << " pJ\n";
        os << "NeuroBench: ActivationSparsity " << fmt(nb.activation_sparsity)
           << ", ConnectionSparsity " << fmt(nb.connection_sparsity) << ", Footprint "
           << fmt(nb.footprint_bytes) << " bytes";
        if (nb.membrane_updates) os << ", MembraneUpdates " << fmt(*nb.membrane_updates);
        os << "\n";
    }
    if (r.syops)
        os << "syops-counter (per sample): " << fmt(r.syops->ac) << " AC, " << fmt(r.syops->mac)
           << " MAC\n";
    if (r.paper) {
        const auto& pp = *r.paper;
        os << "paper convention (per inference): SOP " << fmt(pp.sop) << " (attention "
           << fmt(pp.attention_ac) << "), encoding MAC " << fmt(pp.encoding_mac);
        if (!pp.encoding_layer.empty())
            os << " (" << pp.encoding_layer
               << (r.options.encoding_mac_times_T ? ", x T)" : ", once)");
        os << "\n";
    }
    if (r.latency_s) os << "latency: " << fmt(*r.latency_s) << " s per inference\n";
    if (r.static_energy_pj)
        os << "static energy: " << fmt(*r.static_energy_pj) << " pJ per inference\n";
    if (r.average_power_w) os << "average power: " << fmt(*r.average_power_w) << " W\n";
    for (const auto& n : r.notes) os << "note: " << n << "\n";
    return os.str();
}

}  // namespace ternion::hw
