// Pricing a RunRecord under a counting convention, and reporting it (JSON and text).
#include "hw/cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "hw/conventions/convention.hpp"
#include "sim/core/error.hpp"
#include "sim/core/format.hpp"

namespace ternion::hw {

using nlohmann::json;

CountMode parse_count_mode(const std::string& s) {
    convention(CountMode{s});  // refuses a name no convention has
    return CountMode{s};
}

const char* count_mode_name(const CountMode& m) {
    return m.name.c_str();
}

std::vector<const StepTally*> tallies_for(const CountMode& m) {
    return convention(m).needs();
}

const CountMode CountMode::exact{"exact"}, CountMode::neurobench{"neurobench"},
    CountMode::paper{"paper"}, CountMode::syops{"syops"}, CountMode::lemaire{"lemaire"};

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
    if (const auto mac = p.ops.find("mac"); mac != p.ops.end() && mac->second.bits > 0)
        x.ann_activation_bytes = mac->second.bits / 8.0;
    if (p.widths) x.widths = &*p.widths;
    if (p.by_buffer_size) x.buffer_rule = &*p.by_buffer_size;
    return x;
}

const int kWeightBytes = kind_index("weight_read_bytes");
const int kSpikeBytes = kind_index("spike_write_bytes");

// The ANN equivalent's memory traffic in one pass, priced by the rule the spiking run's is:
// one weight read per MAC at the layer's stored width (attention projections: float32), and
// one activation written per output of a node that spikes in the SNN (attention: Q, K and V
// too), where the SNN writes its spike events. Unpriced kinds price to 0, as for the SNN.
double ann_memory_pj_per_pass(const LayerRecord& l, const PriceContext& x) {
    double weight_bytes = 0.0, activations = 0.0;
    if (l.traits.connection)
        weight_bytes = static_cast<double>(l.dense_macs_per_step) * l.traits.weight_value_bytes;
    if (l.attention_shape) {
        const auto& a = *l.attention_shape;
        weight_bytes = 4.0 * static_cast<double>(a.proj_dense_macs_per_step);
        activations += 3.0 * static_cast<double>(a.tokens * a.dim);
    }
    if (l.spiking) activations += static_cast<double>(l.neurons);
    return x.unit[kWeightBytes] * weight_bytes +
           x.unit[kSpikeBytes] * activations * x.ann_activation_bytes;
}

// The layer's price per unit: the profile's, or, for a connection layer with integer weights
// under a profile with a width table, an AC as one add at the accumulator's width (its
// consumers' integer current; 32 bits when they are float) and a MAC as a multiply at the
// weights' stored width plus that add.
KindArray layer_units(const LayerRecord& l, PriceContext& x, std::string& basis) {
    KindArray u = x.unit;
    const int wb = 8 * l.traits.weight_value_bytes;
    if (!x.widths || !l.traits.connection || wb == 0 || wb >= 32) return u;
    const int acc = l.traits.accumulator_bits > 0 ? l.traits.accumulator_bits : 32;
    u[kAc] = x.widths->add_pj(acc);
    u[kMac] = x.widths->mult_pj(wb) + u[kAc];
    x.width_priced = true;
    basis = "AC as an int" + std::to_string(acc) + " add, MAC as an int" + std::to_string(wb) +
            " multiply + that add (profile widths)";
    return u;
}

// One layer's counts in the report's convention, priced, with its ANN equivalent.
LayerCost price_layer(const LayerRecord& l, CostReport& r, PriceContext& x,
                      const Convention& conv) {
    LayerCost c;
    c.name = l.name;
    c.type = l.type;
    c.attention = l.attention_shape.has_value();
    int k = 0;
    l.ops.for_each(
        [&](std::string_view, std::uint64_t v) { c.count[k++] = static_cast<double>(v); });
    conv.count(l, c, x, r);
    std::string width_basis;
    const KindArray unit = layer_units(l, x, width_basis);
    if (!width_basis.empty()) c.basis += (c.basis.empty() ? "" : "; ") + width_basis;
    for (int i = 0; i < kKinds; ++i) {
        c.energy_pj[i] = unit[i] * c.count[i];
        c.energy_total_pj += c.energy_pj[i];
    }
    // The same graph run as an ANN for the same T steps: every synaptic op a dense MAC.
    c.ann_macs = static_cast<double>(l.dense_macs_per_step) * x.Td;
    c.ann_memory_pj = ann_memory_pj_per_pass(l, x) * x.Td;
    c.ann_pj = x.unit[kMac] * c.ann_macs + c.ann_memory_pj;
    // What the exact count costs, for reports under another convention.
    int k2 = 0;
    l.ops.for_each([&](std::string_view, std::uint64_t v) {
        r.exact_pj_per_inference += unit[k2++] * static_cast<double>(v) * x.invS;
    });
    return c;
}

// Totals, per-inference figures and which kinds the profile left unpriced.
void add_totals(CostReport& r, const Profile& p, const PriceContext& x) {
    for (const LayerCost& c : r.layers) {
        for (int i = 0; i < kKinds; ++i) r.total_count[i] += c.count[i];
        r.ann_macs_per_inference += c.ann_macs;
        r.ann_pj_per_inference += c.ann_pj;
        r.ann_memory_pj_per_inference += c.ann_memory_pj;
    }
    // Priced by operand width, a kind's layers have their own unit prices: sum their energies.
    KindArray layer_sum{};
    if (x.width_priced)
        for (const LayerCost& c : r.layers)
            for (int i = 0; i < kKinds; ++i) layer_sum[i] += c.energy_pj[i];
    for (int i = 0; i < kKinds; ++i) {
        r.total_energy_pj[i] = x.width_priced ? layer_sum[i] : x.unit[i] * r.total_count[i];
        r.total_pj += r.total_energy_pj[i];
        r.per_inference_count[i] = x.S > 0 ? r.total_count[i] / x.Sd : 0.0;
        r.per_inference_energy_pj[i] = x.width_priced ? (x.S > 0 ? layer_sum[i] / x.Sd : 0.0)
                                                      : x.unit[i] * r.per_inference_count[i];
        r.per_inference_pj += r.per_inference_energy_pj[i];
        if (r.total_count[i] > 0) {
            if (!x.priced[i])
                r.unpriced.emplace_back(kind_names()[i]);
            else if (!p.price_verified(i))
                r.profile_verified = false;
        }
    }
}

void add_notes(CostReport& r, const Profile& p, const Convention& conv, const PriceContext& x) {
    if (!r.unpriced.empty()) {
        std::string list;
        for (const auto& u : r.unpriced) list += (list.empty() ? "" : ", ") + u;
        r.notes.push_back("counted but not priced by profile '" + p.name + "': " + list);
    }
    conv.finish(r);  // the convention's own notes
    if (r.ann_memory_pj_per_inference > 0.0)
        r.notes.push_back(
            "the ANN equivalent's memory is priced by the spiking run's rule: one weight read "
            "per MAC at the layer's stored width, one " +
            fmt(x.ann_activation_bytes) +
            "-byte activation written per output where the SNN writes spikes; an ANN has no "
            "membrane state to read or write");
    if (x.width_priced)
        r.notes.push_back(
            "integer layers' ACs and MACs are priced by operand width (profile '" + p.name +
            "' widths: an add at the accumulator's width, a multiply at the weights'; between "
            "the listed widths an add is linear in the bits, a multiply in the bits squared)");
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
    x.options = o;
    x.run = &run;
    const Convention& conv = convention(o.mode);
    conv.begin(run, r);
    for (const LayerRecord& l : run.layers) r.layers.push_back(price_layer(l, r, x, conv));
    add_totals(r, p, x);
    conv.close(r, x);
    add_notes(r, p, conv, x);
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

namespace {

json ratio(double snn, double ann) {
    return ann > 0 ? json(snn / ann) : json(nullptr);
}

// T passes (one per step; the keys kept from the first report format) and one pass, labelled.
void add_ann_json(const CostReport& r, json& ann) {
    const double T = std::max<double>(1.0, static_cast<double>(r.timesteps));
    ann["passes"] = r.timesteps;
    ann["macs_priced"] = r.ann_macs_per_inference;
    ann["energy_pj"] = r.ann_pj_per_inference;
    ann["memory_pj"] = r.ann_memory_pj_per_inference;
    ann["energy_ratio"] = ratio(r.per_inference_pj, r.ann_pj_per_inference);
    ann["one_pass"] = {{"macs_priced", r.ann_macs_per_inference / T},
                       {"energy_pj", r.ann_pj_per_pass()},
                       {"memory_pj", r.ann_memory_pj_per_inference / T},
                       {"energy_ratio", ratio(r.per_inference_pj, r.ann_pj_per_pass())}};
}

}  // namespace

void add_to_json(const CostReport& r, json& doc) {
    const Convention& conv = convention(r.mode);
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
        if (conv.recounts()) jl["counted_ops"] = by_kind(scaled(c.count, inv), true);
        conv.layer_json(r, c, jl);
    }

    json& pi = doc["per_inference"];
    pi["energy_pj"] = r.per_inference_pj;
    pi["energy_by_kind_pj"] = by_kind(r.per_inference_energy_pj, false);
    if (!r.added_pj.empty()) {
        json& added = pi["added_pj"];
        for (const auto& [label, pj] : r.added_pj) added[label] = pj;
    }
    if (conv.recounts()) pi["counted_ops"] = by_kind(r.per_inference_count, false);
    if (r.latency_s) pi["latency_s"] = *r.latency_s;
    if (r.static_energy_pj) {
        pi["static_energy_pj"] = *r.static_energy_pj;
        pi["energy_with_static_pj"] = r.per_inference_pj + *r.static_energy_pj;
    }
    if (r.average_power_w) pi["average_power_w"] = *r.average_power_w;
    doc["energy_total_pj"] = r.total_pj;

    add_ann_json(r, doc["ann_equivalent"]);
    const Headline h = headline(r);
    doc["headline"] = {{"energy_pj", h.energy_pj},  {"count_mode", count_mode_name(r.mode)},
                       {"profile", r.profile_name}, {"included", h.included},
                       {"excluded", h.excluded},    {"text", h.text},
                       {"which_number", h.which},   {"exact_energy_pj", r.exact_pj_per_inference}};
    conv.report_json(r, doc);
    doc["energy_notes"] = r.notes;
}

namespace {

// The groups a headline names, each with its kinds (OpCounts names).
struct KindGroup {
    const char* label;
    std::vector<std::string_view> kinds;
};
const std::vector<KindGroup>& kind_groups() {
    static const std::vector<KindGroup> g = {
        {"synaptic ops (AC, MAC)", {"ac", "mac"}},
        {"shifts", {"shift"}},
        {"comparisons", {"cmp"}},
        {"exponentials", {"exp"}},
        {"divisions", {"div"}},
        {"neuron updates", {"neuron_update"}},
        {"spike events", {"spikes_out"}},
        {"memory traffic",
         {"weight_read_bytes", "state_read_bytes", "state_write_bytes", "spike_write_bytes"}}};
    return g;
}

std::string joined(const std::vector<std::string>& v, const char* sep) {
    std::string o;
    for (const auto& e : v) o += (o.empty() ? "" : sep) + e;
    return o;
}

std::string which_number(const CostReport& r) {
    if (r.mode == CountMode::exact)
        return "quote the exact count: every operation the event-driven run performed. The "
               "neurobench, syops and paper counts re-count AC/MAC by those tools' and papers' "
               "rules; quote them only beside tables made with them (docs/cost-model.md, "
               "\"Which number to report\")";
    return std::string("this count follows ") + count_mode_name(r.mode) +
           "'s rules, for comparison with tables made with them; the model's own cost is the "
           "exact count, " +
           energy_words(r.exact_pj_per_inference) +
           " under this profile (docs/cost-model.md, \"Which number to report\")";
}

}  // namespace

std::string energy_words(double pj) {
    static const std::pair<double, const char*> units[] = {
        {1e12, "J"}, {1e9, "mJ"}, {1e6, "µJ"}, {1e3, "nJ"}, {1.0, "pJ"}};
    for (const auto& [scale, unit] : units)
        if (std::fabs(pj) >= scale || scale == 1.0) {
            char buf[64];
            std::snprintf(buf, sizeof buf, "%.3g %s", pj / scale, unit);
            return buf;
        }
    return {};
}

Headline headline(const CostReport& r) {
    Headline h;
    h.energy_pj = r.per_inference_pj;
    for (const KindGroup& g : kind_groups()) {
        bool counted = false, priced = false;
        for (auto k : g.kinds) {
            const int i = kind_index(k);
            counted = counted || r.per_inference_count[i] > 0;
            priced = priced || r.per_inference_energy_pj[i] > 0;
        }
        if (priced)
            h.included.emplace_back(g.label);
        else if (counted)
            h.excluded.emplace_back(g.label);
    }
    double attention_pj = 0.0;
    for (const LayerCost& c : r.layers)
        if (c.attention) attention_pj += c.energy_total_pj;
    if (attention_pj > 0) h.included.emplace_back("attention");
    for (const auto& [label, pj] : r.added_pj)
        if (pj > 0) h.included.push_back(label);
    h.text = "energy per inference: " + energy_words(h.energy_pj) + " (count " +
             count_mode_name(r.mode) + ", profile " + r.profile_name +
             "; priced: " + (h.included.empty() ? "nothing" : joined(h.included, ", "));
    if (!h.excluded.empty()) h.text += "; counted, not priced: " + joined(h.excluded, ", ");
    h.text += ")";
    h.which = which_number(r);
    return h;
}

namespace {

void layer_rows(const CostReport& r, std::ostringstream& os) {
    const double inv = r.samples > 0 ? 1.0 / static_cast<double>(r.samples) : 0.0;
    const int wn = name_column(r.layers, false, 5), wt = name_column(r.layers, true, 4);
    char line[1024];
    std::snprintf(line, sizeof line, "%-*s %-*s %12s %12s %12s %12s %12s\n", wn, "layer", wt,
                  "type", "AC", "MAC", "energy pJ", "ANN xT pJ", "share");
    os << line;
    for (const auto& c : r.layers) {
        if (c.energy_total_pj == 0.0 && c.ann_pj == 0.0) continue;
        const double e = c.energy_total_pj * inv;
        const double share = r.per_inference_pj > 0 ? e / r.per_inference_pj * 100.0 : 0.0;
        std::snprintf(line, sizeof line, "%-*s %-*s %12.5g %12.5g %12.5g %12.5g %11.1f%%\n", wn,
                      c.name.c_str(), wt, c.type.c_str(), c.count[kAc] * inv, c.count[kMac] * inv,
                      e, c.ann_pj, share);
        os << line;
    }
    std::snprintf(line, sizeof line, "%-*s %-*s %12.5g %12.5g %12.5g %12.5g\n", wn, "total", wt, "",
                  r.per_inference_count[kAc], r.per_inference_count[kMac], r.per_inference_pj,
                  r.ann_pj_per_inference);
    os << line;
}

void ann_lines(const CostReport& r, std::ostringstream& os) {
    const bool memory = r.ann_memory_pj_per_inference > 0;
    os << "ANN equivalent (the same graph with every synaptic op a MAC"
       << (memory ? ", memory by the same rule" : "") << "):\n";
    auto row = [&](const std::string& label, double pj) {
        char head[64];
        std::snprintf(head, sizeof head, "  %-26s", label.c_str());
        os << head << fmt(pj) << " pJ";
        if (pj > 0) os << "; SNN/ANN energy = " << fmt(r.per_inference_pj / pj);
        os << "\n";
    };
    row("one pass:", r.ann_pj_per_pass());
    row("T=" + std::to_string(r.timesteps) + " passes (one a step):", r.ann_pj_per_inference);
}

}  // namespace

std::string format_table(const CostReport& r) {
    std::ostringstream os;
    const Headline h = headline(r);
    os << h.text << "\n\n";
    os << "energy: profile " << r.profile_name << ", count " << count_mode_name(r.mode) << ", "
       << r.samples << " samples x T=" << r.timesteps << "; per inference\n";
    layer_rows(r, os);
    os << "by kind (pJ per inference):";
    for (int k = 0; k < kKinds; ++k)
        if (r.per_inference_energy_pj[k] != 0.0)
            os << " " << kind_names()[k] << " " << fmt(r.per_inference_energy_pj[k]);
    for (const auto& [label, pj] : r.added_pj) os << " " << label << " " << fmt(pj);
    os << "\n";
    ann_lines(r, os);
    convention(r.mode).report_text(r, os);
    if (r.latency_s) os << "latency: " << fmt(*r.latency_s) << " s per inference\n";
    if (r.static_energy_pj)
        os << "static energy: " << fmt(*r.static_energy_pj) << " pJ per inference\n";
    if (r.average_power_w) os << "average power: " << fmt(*r.average_power_w) << " W\n";
    os << "which number: " << h.which << "\n";
    for (const auto& n : r.notes) os << "note: " << n << "\n";
    return os.str();
}

}  // namespace ternion::hw
