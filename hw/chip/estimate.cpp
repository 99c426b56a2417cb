// A mesh placement's step at given firing rates: synaptic events and neuron updates per layer,
// the spikes routed between cores, each core's time and the step's critical path, and the
// energy band: op count, + SRAM accesses, + routing, + static power x step time; and the same
// band for the ANN equivalent's one pass on the same cores (docs/chips.md). Everything is an
// estimate from rates (or a run's counts), not a simulation of the chip.
#include <algorithm>
#include <cmath>

#include "hw/chip/chip.hpp"

namespace ternion::chip {

namespace {

using I64 = std::int64_t;

// A measured run (`ternion run --chip`): the activity of the layer's last node that has one.
const NodeActivity* measured_out(const MapOptions& o, const MeshLayer& l) {
    if (!o.measured) return nullptr;
    for (auto it = l.nodes.rbegin(); it != l.nodes.rend(); ++it)
        if (auto a = o.activity.find(*it); a != o.activity.end()) return &a->second;
    return nullptr;
}

// Output rates: a measured run's own; else spiking layers fire at the hidden rate (the output
// rate when they feed the model's Output); non-spiking connections send a value every step;
// pooling, sums and reductions pass on the rate of their inputs (a structural layer's output
// is non-zero where an input is).
void rates(const MapOptions& o, MeshPlacement& p) {
    for (int pass = 0; pass < 2; ++pass)  // twice: a recurrent source comes later
        for (MeshLayer& l : p.layers) {
            double sum = 0, size = 0;
            for (int s : l.sources) {
                const double n = s < 0 ? static_cast<double>(p.input_neurons)
                                       : static_cast<double>(p.layers[s].out_neurons);
                sum += n * (s < 0 ? p.rate_in : p.layers[s].rate_out), size += n;
            }
            l.rate_in = size > 0 ? sum / size : 0;
            const bool structural = l.kind == "pooling" || l.kind == "sum" || l.kind == "reduction";
            const NodeActivity* m = measured_out(o, l);
            l.rate_out = m                ? m->rate_out
                         : structural     ? std::min(1.0, l.rate_in)
                         : !l.spiking     ? 1.0
                         : l.feeds_output ? p.rate_out
                                          : p.rate_hidden;
        }
}

// Attention's arithmetic of one step: a measured run's own counters, else the closed forms at
// the hidden rate r for Q, K and V (docs/chips.md). Score entries written: SSA's N x N per head
// evaluated as (Q K^T) V (dh x dh as Q (K^T V)), BSA's N x N per head, SDSA's D column sums,
// QKAttention's sums of Q per mask neuron.
void attention_work(const MapOptions& o, double r, MeshLayer& l) {
    using F = AttentionClosedForm;
    MeshLayer::Att& w = l.att;
    const AttentionShape& a = l.shape;
    const double N = static_cast<double>(a.tokens), D = static_cast<double>(a.dim);
    const double H = static_cast<double>(a.heads), dh = H > 0 ? D / H : 0, nd = N * D;
    const F f = a.closed_form;
    const bool rows = f == F::qkv_products || f == F::ternary_shiftmax;
    w.entries = rows ? H * N * N : f == F::column_sum ? D : static_cast<double>(a.mask_neurons);
    w.mixed = nd;  // every output neuron's input, one value a step
    const auto m = o.measured ? o.activity.find(l.name) : o.activity.end();
    if (m != o.activity.end() && m->second.attention) {
        const NodeActivity& x = m->second;
        w.adds = x.adds, w.shifts = x.shifts, w.cmps = x.cmps;
        w.q = x.q_spikes, w.k = x.k_spikes, w.v = a.spiking_v ? x.v_spikes : nd;
        if (f == F::qkv_products) w.entries = x.qk_first_heads * N * N + x.kv_first_heads * dh * dh;
        return;
    }
    w.q = w.k = r * nd;
    w.v = !a.spiking_v ? nd : f == F::none ? 0 : r * nd;
    w.adds = w.shifts = w.cmps = 0;
    if (f == F::qkv_products) {
        // Q K^T: a coincidence per channel; then each non-zero score (probability z) adds the
        // V spikes of its key.
        const double z = 1 - std::pow(1 - r * r, dh);
        w.adds = H * N * N * dh * r * r + H * N * N * z * dh * r;
    } else if (f == F::ternary_shiftmax) {
        w.adds = H * N * N * dh * r * r + 2 * H * N * N + H * N * N * dh;
        w.shifts = H * N * N + H * N * N * dh, w.cmps = H * N * N;
    } else if (f == F::column_sum) {
        w.adds = nd * r * r;
    } else if (a.mask_neurons > 0) {
        w.adds = nd * r;
    }
}

// Attention's internal traffic (hw/chip/targets.cpp builds its routes): Q, K and V spikes (V's
// values where V is analog) at the node's measured or estimated counts, spread evenly over its
// neurons, and the mixed values one a step each. `ann`: every value a packet.
std::vector<Flow> attention_flows(const MeshLayer& l, bool ann) {
    std::vector<Flow> f;
    const double nd = static_cast<double>(l.shape.tokens * l.shape.dim);
    if (l.kind != "attention" || nd <= 0) return f;
    const MeshLayer::Att& w = l.att;
    const double fq = ann ? 1 : w.q / nd, fk = ann ? 1 : w.k / nd, fv = ann ? 1 : w.v / nd;
    for (const AttentionRoute& r : l.att_routes) {
        const double sent = r.q * fq + r.k * fk + r.v * fv + r.mixed;
        if (sent > 0 && !r.dst.empty()) f.push_back({r.src, r.dst, sent});
    }
    return f;
}

// Events, updates and memory words of one step; the op-count and memory levels of the band.
void work(const MeshSpec& s, const MapOptions& o, MeshLayer& l) {
    l.events = l.rate_in * static_cast<double>(l.synapses);
    if (o.measured) {  // the run's own events, over every node of the layer
        l.events = 0;
        for (const auto& n : l.nodes)
            if (auto a = o.activity.find(n); a != o.activity.end()) l.events += a->second.events;
    }
    l.updates = static_cast<double>(l.neurons);
    const double r = l.rate_out;
    MeshLayer::Att& w = l.att;
    w.band.ops = w.adds * s.add_pj + w.shifts * s.shift_pj + w.cmps * s.cmp_pj;
    l.band.ops = l.events * s.synaptic_op_pj +
                 l.updates * ((1 - r) * s.neuron_update_pj + r * s.neuron_active_pj) + w.band.ops;
    const double ab = static_cast<double>(s.access_bits);
    const double state_pj = sram_pj(s, static_cast<double>(s.state_memory_bytes));
    // Weights in DRAM are read in its own accesses, at its energy, whether or not the per-op
    // figures include the core's SRAM.
    l.weight_words = l.events * static_cast<double>(s.synapse_bits) /
                     (l.weights_in_dram ? static_cast<double>(s.dram_access_bits) : ab);
    const double weight_pj =
        l.weights_in_dram
            ? s.dram_pj
            : (s.memory_in_ops ? 0 : sram_pj(s, static_cast<double>(s.synapse_memory_bytes)));
    // Each state read and written once per update; each score entry produced written and read
    // once.
    const double score_words = w.entries * 2 * static_cast<double>(s.state_bits) / ab;
    l.state_words = l.updates * static_cast<double>(s.states_per_neuron) * 2 *
                        static_cast<double>(s.state_bits) / ab +
                    score_words;
    w.band.memory = s.memory_in_ops ? 0 : score_words * state_pj;
    l.band.memory = l.weight_words * weight_pj + (s.memory_in_ops ? 0 : l.state_words * state_pj);
}

// One source's spikes per step by route group: a measured run's per-element counts where they
// add up to the node's whole run, else `rate` spikes per element (the rate's own estimate; under
// mpirun, where a rank counted its samples only, the measured rate spread evenly).
std::vector<double> group_spikes(const SourceRoutes& r, double rate, const MapOptions& o) {
    std::vector<double> s(r.groups.size(), 0);
    const auto c = o.element_spikes.find(r.node);
    const auto a = o.activity.find(r.node);
    if (o.measured && c != o.element_spikes.end() && a != o.activity.end() &&
        c->second.size() == r.group.size()) {
        std::vector<std::uint64_t> n(r.groups.size(), 0);
        std::uint64_t total = 0;
        for (std::size_t e = 0; e < r.group.size(); ++e)
            n[static_cast<std::size_t>(r.group[e])] += c->second[e], total += c->second[e];
        if (total == a->second.nonzero_out) {
            for (std::size_t g = 0; g < n.size(); ++g)
                s[g] = static_cast<double>(n[g]) / o.sample_steps;
            return s;
        }
    }
    for (std::size_t g = 0; g < s.size(); ++g)
        s[g] = rate * static_cast<double>(r.groups[g].elements);
    return s;
}

// A source's flows: one per route group with destinations and spikes (spikes[g]; null: one per
// element, the ANN's every value).
void add_flows(const SourceRoutes& r, const std::vector<double>* spikes, std::vector<Flow>& out) {
    for (std::size_t g = 0; g < r.groups.size(); ++g) {
        const RouteGroup& x = r.groups[g];
        const double n = spikes ? (*spikes)[g] : static_cast<double>(x.elements);
        if (n > 0 && !x.dst.empty()) out.push_back({x.src, x.dst, n});
    }
}

// Each core's output axons: its output neurons' destination cores, summed.
void output_axons(MeshLayer& l) {
    if (l.cores.empty()) return;
    const I64 first = l.cores.front().core;
    for (CoreUse& c : l.cores) c.axons_out = 0;
    for (const RouteGroup& x : l.targets.groups) {
        const I64 k = x.src - first;
        if (k >= 0 && k < static_cast<I64>(l.cores.size()))
            l.cores[static_cast<std::size_t>(k)].axons_out +=
                x.elements * static_cast<I64>(x.dst.size());
    }
}

void routing(const MeshSpec& s, const MapOptions& o, MeshPlacement& p) {
    const Mesh m = Mesh::uniform(s);
    std::vector<Flow> all;
    for (const SourceRoutes& r : p.input_targets) {
        const std::vector<double> n = group_spikes(r, p.rate_in, o);
        add_flows(r, &n, all);
    }
    for (MeshLayer& l : p.layers) {
        std::vector<Flow> mine;
        const std::vector<double> n = group_spikes(l.targets, l.rate_out, o);
        add_flows(l.targets, &n, mine);
        output_axons(l);
        const std::vector<Flow> inner = attention_flows(l, false);
        const RouteTotals a = route(m, inner, s.cores());
        l.att.packets = a.packets, l.att.hops = a.hops, l.att.band.routing = a.energy_pj;
        mine.insert(mine.end(), inner.begin(), inner.end());
        const RouteTotals t = route(m, mine, s.cores());
        l.packets = t.packets, l.hops = t.hops, l.band.routing = t.energy_pj;
        all.insert(all.end(), mine.begin(), mine.end());
    }
    p.routing = route(m, all, s.cores());
}

// Davies et al. give the barrier for 1 and for 32 tiles; between them, linear in the tiles.
double barrier_ns(const MeshSpec& s, const MeshPlacement& p) {
    const double t = static_cast<double>(std::max<I64>(p.tiles_used, 1));
    return s.tiles() > 1 ? s.barrier_ns_one + (s.barrier_ns_all - s.barrier_ns_one) * (t - 1) /
                                                  static_cast<double>(s.tiles() - 1)
                         : s.barrier_ns_one;
}

I64 slowest(const std::vector<double>& ns) {
    const auto it = std::max_element(ns.begin(), ns.end());
    return it == ns.end() ? -1 : it - ns.begin();
}

// An attention core's share of the node's score work: its score rows over all of them.
double score_share(const MeshLayer& l, const CoreUse& c) {
    const I64 rows = l.shape.heads * l.shape.tokens;
    return l.kind == "attention" && rows > 0
               ? static_cast<double>(c.score_rows) / static_cast<double>(rows)
               : 0;
}

// Each core: its synaptic events (the layer's, in proportion to the synapses it holds) and
// neuron updates one after the other, then its packets leave one by one and the last flies
// its hops. The step ends when the slowest core is done and the mesh-wide barrier has passed.
void latency(const MeshSpec& s, MeshPlacement& p) {
    p.core_ns.assign(static_cast<std::size_t>(p.cores_used), 0);
    for (const MeshLayer& l : p.layers) {
        const double att_ns =
            l.att.adds * s.add_ns + l.att.shifts * s.shift_ns + l.att.cmps * s.cmp_ns;
        for (const CoreUse& c : l.cores) {
            const double share =
                l.synapses > 0 ? static_cast<double>(c.synapses) / static_cast<double>(l.synapses)
                               : 0;
            const double r = l.rate_out;
            const auto k = static_cast<std::size_t>(c.core);
            const double flight = p.routing.core_flight_ns[k];
            p.core_ns[k] = l.events * share * s.synaptic_op_ns + score_share(l, c) * att_ns +
                           static_cast<double>(c.neurons) *
                               ((1 - r) * s.neuron_update_ns + r * s.neuron_active_ns) +
                           p.routing.core_packets[k] * s.spike_ns +
                           std::max(0.0, flight - s.spike_ns);
        }
    }
    p.critical_core = slowest(p.core_ns);
    p.barrier_ns = barrier_ns(s, p);
    p.step_ns = (p.critical_core < 0 ? 0 : p.core_ns[p.critical_core]) + p.barrier_ns;
    p.inference_ns = p.step_ns * static_cast<double>(p.steps);
    p.inferences_per_s = p.inference_ns > 0 ? 1e9 / p.inference_ns : 0;
}

// The ANN equivalent of one layer, one pass (an ANN has no time steps): every synapse one
// dense MAC; every neuron (Q, K and V included) one activation; every stored weight read once
// from the core's synapse SRAM at the weight width; every output value and score entry
// written and read once in the state SRAM at the activation width. Where the per-op figures
// include the SRAM (loihi-like), as for the SNN, memory adds nothing.
void ann_work(const MeshSpec& s, MeshLayer& l) {
    MeshLayer::Ann& a = l.ann;
    a.macs = static_cast<double>(l.synapses) + l.att.dense_macs;  // attention: dense scores
    a.outputs = static_cast<double>(l.neurons);
    double stored = 0;
    for (const CoreUse& c : l.cores) stored += static_cast<double>(c.stored);
    const double ab = static_cast<double>(s.access_bits);
    a.weight_words = stored * static_cast<double>(s.weight_bits) /
                     (l.weights_in_dram ? static_cast<double>(s.dram_access_bits) : ab);
    a.activation_words = (a.outputs + static_cast<double>(l.score_entries)) * 2 *
                         static_cast<double>(s.ann_activation_bits) / ab;
    a.band = Band{};
    a.band.ops = a.macs * s.ann_mac_pj + a.outputs * s.ann_activation_pj;
    const double weight_pj =
        l.weights_in_dram
            ? s.dram_pj
            : (s.memory_in_ops ? 0 : sram_pj(s, static_cast<double>(s.synapse_memory_bytes)));
    a.band.memory = a.weight_words * weight_pj +
                    (s.memory_in_ops ? 0
                                     : a.activation_words *
                                           sram_pj(s, static_cast<double>(s.state_memory_bytes)));
}

// The ANN's traffic, time and static energy of one pass: every output value (and every input
// value, injected by the host) is a packet to each core holding its targets, by the SNN's
// routing rule; each core takes its MACs and activations at the chip's op times, then sends its
// packets; the pass is the slowest core plus the barrier.
void ann_pass(const MeshSpec& s, MeshPlacement& p) {
    const Mesh m = Mesh::uniform(s);
    std::vector<Flow> all;
    for (const SourceRoutes& r : p.input_targets) add_flows(r, nullptr, all);
    for (MeshLayer& l : p.layers) {
        std::vector<Flow> mine;
        add_flows(l.targets, nullptr, mine);
        const std::vector<Flow> inner = attention_flows(l, true);
        l.ann.att_packets = route(m, inner, s.cores()).packets;
        mine.insert(mine.end(), inner.begin(), inner.end());
        const RouteTotals t = route(m, mine, s.cores());
        l.ann.packets = t.packets, l.ann.hops = t.hops, l.ann.band.routing = t.energy_pj;
        all.insert(all.end(), mine.begin(), mine.end());
    }
    const RouteTotals r = route(m, all, s.cores());
    MeshPlacement::AnnTotals& a = p.ann;
    a.core_ns.assign(static_cast<std::size_t>(p.cores_used), 0);
    for (const MeshLayer& l : p.layers)
        for (const CoreUse& c : l.cores) {
            const auto k = static_cast<std::size_t>(c.core);
            a.core_ns[k] =
                (static_cast<double>(c.synapses) + score_share(l, c) * l.att.dense_macs) *
                    s.ann_mac_ns +
                static_cast<double>(c.neurons) * s.ann_activation_ns +
                r.core_packets[k] * s.spike_ns + std::max(0.0, r.core_flight_ns[k] - s.spike_ns);
        }
    a.critical_core = slowest(a.core_ns);
    a.pass_ns = (a.critical_core < 0 ? 0 : a.core_ns[a.critical_core]) + barrier_ns(s, p);
    a.packets = r.packets, a.hops = r.hops, a.macs = 0;
    a.band = Band{};
    for (MeshLayer& l : p.layers) {
        l.ann.band.statics =
            s.static_w_per_core * static_cast<double>(l.cores.size()) * a.pass_ns * 1e3;
        a.macs += l.ann.macs;
        a.band.ops += l.ann.band.ops, a.band.memory += l.ann.band.memory;
        a.band.routing += l.ann.band.routing, a.band.statics += l.ann.band.statics;
    }
    a.band.routing += r.host_pj;
}

}  // namespace

void use_run(const RunRecord& rec, MapOptions& o) {
    const double per = static_cast<double>(std::max<std::int64_t>(rec.samples, 1)) *
                       static_cast<double>(std::max<std::int64_t>(rec.timesteps, 1));
    double in_spikes = 0, in_size = 0, hid_spikes = 0, hid_size = 0;
    const LayerRecord* last = nullptr;
    for (const LayerRecord& l : rec.layers) {
        if (l.category == NodeCategory::output) continue;
        const double n = static_cast<double>(std::max<std::int64_t>(l.neurons, 1));
        const double spikes = static_cast<double>(l.nonzero_out);
        NodeActivity& act = o.activity[l.name];
        act.rate_out = spikes / per / n;
        act.nonzero_out = l.nonzero_out;
        act.events = static_cast<double>(l.synapses.pairs_ternary + l.synapses.pairs_other) / per;
        if (l.attention_shape) {
            const AttentionCounts& a = l.attention;
            const auto d = [per](std::uint64_t v) { return static_cast<double>(v) / per; };
            act.attention = true;
            act.adds = d(a.score_ac + a.norm_ac + a.mix_ac);
            act.shifts = d(a.norm_shift + a.mix_shift), act.cmps = d(a.norm_cmp);
            act.q_spikes = d(a.q_spikes), act.k_spikes = d(a.k_spikes),
            act.v_spikes = d(a.v_spikes);
            act.qk_first_heads = d(a.qk_first_heads), act.kv_first_heads = d(a.kv_first_heads);
        }
        if (l.category == NodeCategory::input) {
            in_spikes += spikes, in_size += n;
        } else if (l.spiking) {
            if (last) {
                hid_spikes += static_cast<double>(last->nonzero_out);
                hid_size += static_cast<double>(last->neurons);
            }
            last = &l;
        }
    }
    auto rate = [&](double spikes, double size) { return size > 0 ? spikes / per / size : 0.0; };
    o.measured = o.has_rates = true;
    o.sample_steps = per;
    o.rates.input = rate(in_spikes, in_size);
    o.rates.hidden = rate(hid_spikes, hid_size);
    o.rates.output =
        last ? rate(static_cast<double>(last->nonzero_out), static_cast<double>(last->neurons))
             : 0.0;
    o.steps = std::max<std::int64_t>(rec.timesteps, 1);
}

void estimate_mesh(const MeshSpec& s, const MapOptions& o, MeshPlacement& p) {
    if (o.has_rates)
        p.rate_in = o.rates.input, p.rate_hidden = o.rates.hidden, p.rate_out = o.rates.output;
    p.rates_given = o.has_rates;
    p.measured = o.measured;
    p.steps = o.steps;
    rates(o, p);
    for (MeshLayer& l : p.layers) {
        if (l.kind == "attention") attention_work(o, p.rate_hidden, l);
        work(s, o, l);
    }
    routing(s, o, p);
    latency(s, p);
    p.band = Band{};
    for (MeshLayer& l : p.layers) {
        // W x ns = 1e-9 J = 1e3 pJ.
        l.band.statics =
            s.static_w_per_core * static_cast<double>(l.cores.size()) * p.step_ns * 1e3;
        p.band.ops += l.band.ops, p.band.memory += l.band.memory;
        p.band.routing += l.band.routing, p.band.statics += l.band.statics;
    }
    p.band.routing += p.routing.host_pj;
    for (MeshLayer& l : p.layers) ann_work(s, l);
    ann_pass(s, p);
}

}  // namespace ternion::chip
