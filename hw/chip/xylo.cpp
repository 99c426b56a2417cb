// Xylo (XyloAudio 2, XyloAudio 3, XyloIMU): one SNN core of input channels, hidden LIF neurons
// with recurrent weights among them, and output neurons. A model is read as Rockpool's Xylo
// mapper reads a graph: the input goes through weights to hidden neurons, weights between neuron
// populations become the recurrent matrix, weights into the populations that feed the Output
// are the readout. Its design rules refuse or warn as Rockpool's do, the neuron counts and the
// fan-out are checked against the chip, and Rockpool's cycle model estimates the cycles per
// time step and the clock a real-time run needs (docs/chips.md).
#include <algorithm>
#include <cstdio>

#include "hw/chip/chip.hpp"
#include "sim/core/error.hpp"

namespace ternion::chip {

namespace {

using Kind = LayerGeometry::Kind;

[[noreturn]] void fail(const Graph& g, const std::string& node, const std::string& what) {
    throw InputError(g.origin(), node.empty() ? "nodes" : "nodes/" + node, what);
}

std::string num(std::int64_t v) {
    return std::to_string(v);
}

// The graph as Xylo's parts: neuron populations and the weight nodes between them.
struct Parts {
    std::vector<std::vector<int>> succ;   // successors of each node
    std::vector<int> hidden, outputs;     // neuron nodes, in evaluation order
    std::vector<int> in_w, rec_w, out_w;  // weight nodes: from the input, hidden->hidden, readout
    std::int64_t n_in = 0;
};

bool is_weight(const Node& n) {
    return n.geometry().kind == Kind::connection;
}
bool is_neuron(const Node& n) {
    return n.category() == NodeCategory::neuron;
}
bool feeds_output(const Graph& g, const Parts& p, int u) {
    const auto& s = p.succ[static_cast<std::size_t>(u)];
    return std::any_of(s.begin(), s.end(),
                       [&](int v) { return g.node(v).category() == NodeCategory::output; });
}
int source_of(const Graph& g, int u) {
    return g.edges()[g.in_edges(u).front()].src;
}

// Rockpool's design rules on how nodes connect (xylo_mapper.py: first_module_is_a_weight,
// no_consecutive_weights, input_to_neurons_is_a_weight, output_nodes_have_neurons_as_source).
void check_weight(const Graph& g, const Parts& p, int u) {
    const Node& n = g.node(u);
    const LayerGeometry geo = n.geometry();
    if (geo.spatial)
        fail(g, n.name(),
             "is a convolution: Xylo's weights are matrices between neuron populations "
             "(Linear or Affine)");
    if (n.in_size() != geo.in_channels)
        fail(g, n.name(),
             "acts on each of several rows of its input " + shape_str(n.in_shape()) +
                 ": Xylo's weights take one vector of neurons");
    if (g.in_edges(u).size() != 1 || p.succ[static_cast<std::size_t>(u)].size() != 1)
        fail(g, n.name(),
             "must connect one population to one population on Xylo (it has " +
                 num(static_cast<std::int64_t>(g.in_edges(u).size())) + " inputs and " +
                 num(static_cast<std::int64_t>(p.succ[static_cast<std::size_t>(u)].size())) +
                 " targets)");
    const Node& src = g.node(source_of(g, u));
    if (src.category() != NodeCategory::input && !is_neuron(src))
        fail(g, n.name(),
             "takes its input from " + src.name() + ", a " + src.type() +
                 ": on Xylo weights take spikes of the input or of neurons (no consecutive "
                 "weights)");
    const Node& dst = g.node(p.succ[static_cast<std::size_t>(u)].front());
    if (!is_neuron(dst))
        fail(g, n.name(),
             "feeds " + dst.name() + ", a " + dst.type() +
                 ": on Xylo weights feed neurons (an Output takes output neurons)");
}

void check_node(const Graph& g, const Parts& p, int u) {
    const Node& n = g.node(u);
    const NodeCategory cat = n.category();
    if (cat == NodeCategory::input) {
        for (int v : p.succ[static_cast<std::size_t>(u)])
            if (!is_weight(g.node(v)))
                fail(g, g.node(v).name(),
                     "takes the network input directly: on Xylo the input goes first through "
                     "weights (Linear or Affine)");
    } else if (cat == NodeCategory::output) {
        for (int e : g.in_edges(u))
            if (!is_neuron(g.node(g.edges()[e].src)))
                fail(g, g.node(g.edges()[e].src).name(),
                     "feeds the Output but is a " + g.node(g.edges()[e].src).type() +
                         ": Xylo's outputs come from output neurons");
    } else if (is_weight(n)) {
        check_weight(g, p, u);
    } else if (is_neuron(n)) {
        for (int e : g.in_edges(u))
            if (!is_weight(g.node(g.edges()[e].src)))
                fail(g, n.name(),
                     "receives " + g.node(g.edges()[e].src).name() +
                         " without weights: Xylo's neurons take input through weights");
    } else {
        fail(g, n.name(),
             "is a " + n.type() +
                 ", which Xylo's SNN core does not run (it runs weights, hidden spiking "
                 "neurons and output neurons)");
    }
}

// Sorts neurons into hidden and output populations and weights into input, recurrent and
// readout, as Rockpool's mapper does (output neurons: the sources of the Output).
Parts cut(const Graph& g) {
    Parts p;
    p.succ.resize(static_cast<std::size_t>(g.size()));
    for (const Edge& e : g.edges()) p.succ[static_cast<std::size_t>(e.src)].push_back(e.dst);
    for (int u : g.order()) {
        check_node(g, p, u);
        const Node& n = g.node(u);
        if (n.category() == NodeCategory::input) p.n_in += n.out_size();
        if (!is_neuron(n)) continue;
        if (!feeds_output(g, p, u)) {
            if (!n.is_spiking())
                fail(g, n.name(), "does not spike: Xylo's hidden neurons are spiking LIF neurons");
            p.hidden.push_back(u);
        } else if (p.succ[static_cast<std::size_t>(u)].size() > 1) {
            fail(g, n.name(),
                 "feeds the Output and other nodes: Xylo's output neurons have no outgoing "
                 "synapses (Rockpool: output neurons may not be recurrent)");
        } else {
            p.outputs.push_back(u);
        }
    }
    if (p.hidden.empty() || p.outputs.empty())
        fail(g, "",
             "needs hidden and output neurons: Xylo maps at least two neuron populations "
             "(input -> weights -> hidden neurons -> weights -> output neurons)");
    for (int u : g.order()) {
        if (!is_weight(g.node(u))) continue;
        const Node& src = g.node(source_of(g, u));
        const bool to_output = feeds_output(g, p, p.succ[static_cast<std::size_t>(u)].front());
        if (src.category() == NodeCategory::input && to_output)
            fail(g, g.node(u).name(),
                 "connects the input to output neurons: Xylo's input weights reach hidden "
                 "neurons only");
        (src.category() == NodeCategory::input ? p.in_w
         : to_output                           ? p.out_w
                                               : p.rec_w)
            .push_back(u);
    }
    return p;
}

// Hidden neuron ids: XyloAudio 2's mapper takes populations in model order; XyloIMU's and
// XyloAudio 3's put the input expansion neurons first and the output expansion ones last.
void assign_ids(const Graph& g, const Chip& c, const Parts& parts, XyloPlacement& x) {
    auto targets_of = [&](const std::vector<int>& ws, bool source) {
        std::vector<int> r;
        for (int w : ws) r.push_back(source ? source_of(g, w) : parts.succ[w].front());
        return r;
    };
    const auto iens = targets_of(parts.in_w, false), oens = targets_of(parts.out_w, true);
    auto has = [](const std::vector<int>& v, int u) {
        return std::find(v.begin(), v.end(), u) != v.end();
    };
    std::vector<int> order = parts.hidden;
    if (c.xylo.expansion_nonzero) {
        auto rank = [&](int u) { return has(iens, u) ? 0 : has(oens, u) ? 2 : 1; };
        std::stable_sort(order.begin(), order.end(),
                         [&](int a, int b) { return rank(a) < rank(b); });
    }
    std::int64_t id = 0;
    for (int u : order) {
        x.populations.push_back({g.node(u).name(), {}, false, g.node(u).out_size(), id, 0});
        id += g.node(u).out_size();
    }
    id = 0;
    for (int u : parts.outputs) {
        x.populations.push_back({g.node(u).name(), {}, true, g.node(u).out_size(), id, 0});
        id += g.node(u).out_size();
    }
    for (auto& pop : x.populations)
        for (int e : g.in_edges(g.find(pop.neurons)))
            pop.weights.push_back(g.node(g.edges()[e].src).name());
}

// Rockpool: "Failed to allocate HW resources for hidden/output neurons".
void check_counts(const Graph& g, const Chip& c, XyloPlacement& x) {
    std::int64_t hid = 0, out = 0;
    for (const XyloPopulation& p : x.populations) (p.output ? out : hid) += p.size;
    x.n_hid = hid, x.n_out = out;
    for (const XyloPopulation& p : x.populations) {
        const std::int64_t most = p.output ? c.xylo.output : c.xylo.hidden;
        const std::int64_t need = p.first_id + p.size;
        if (need <= most) continue;
        const char* what = p.output ? "output" : "hidden";
        std::string msg = "needs " + num(p.output ? out : hid) + " " + what + " neurons";
        if (p.first_id > 0) msg += " (" + num(p.size) + " here after " + num(p.first_id) + ")";
        fail(g, p.neurons,
             msg + ": " + c.name + " has " + num(most) + " " + what +
                 " neurons (Rockpool: failed to allocate HW resources for " + what + " neurons)");
    }
}

}  // namespace

double xylo_cycles(const XyloSpec& s, const XyloPlacement& p, const XyloRates& r) {
    const double n_in = static_cast<double>(p.n_in), n_hid = static_cast<double>(p.n_hid),
                 n_out = static_cast<double>(p.n_out), ien = static_cast<double>(p.n_ien),
                 oen = static_cast<double>(p.n_oen);
    // Alias connections (a_t, a_s: mean alias targets and sources per hidden neuron) are a Xylo
    // feature no ternion model expresses: both are 0, and the terms are kept to show the model.
    const double a_t = 0, a_s = 0, h = r.hidden;
    const double input = n_in * (r.input * ien * s.input_loop + 1);
    const double hidden_isyn = n_hid * (p.mean_fanout * s.hidden_update * h + 3);
    const double output_isyn = oen * h * (1 + n_out * s.output_isyn_update);
    const double hidden_spikes =
        n_hid * (s.fixed_hidden + 2 * std::max(h, a_t * a_s) + 3 * std::max(h * a_t, a_t * a_s) +
                 h + std::max(h, a_t) * a_s);
    const double output_spikes = n_out * (s.fixed_output_spike + 0 * r.output);
    return input + hidden_isyn + output_isyn + hidden_spikes + output_spikes;
}

namespace {

// Recurrent synapses per hidden neuron (its fan-out), per population; the most is checked
// against the chip's maximum fan-out.
void fanouts(const Graph& g, const Chip& c, const Parts& parts, XyloPlacement& x) {
    for (XyloPopulation& pop : x.populations) {
        if (pop.output) continue;
        const int u = g.find(pop.neurons);
        std::vector<std::int64_t> f(static_cast<std::size_t>(pop.size), 0);
        std::string via;
        for (int w : parts.rec_w) {
            if (source_of(g, w) != u) continue;
            const auto z = g.node(w).connection_nonzeros().per_input;
            for (std::size_t i = 0; i < f.size() && i < z.size(); ++i) f[i] += z[i];
            if (!via.empty()) via += ", ";
            via += g.node(w).name();
        }
        const auto it = std::max_element(f.begin(), f.end());
        pop.max_fanout = f.empty() ? 0 : *it;
        for (auto v : f) x.recurrent_weights += v;
        x.max_fanout = std::max(x.max_fanout, pop.max_fanout);
        if (pop.max_fanout > c.xylo.max_fanout)
            fail(g, pop.neurons,
                 "neuron " + num(it - f.begin()) + " drives " + num(pop.max_fanout) +
                     " recurrent synapses (its fan-out, through " + via + "): " + c.name +
                     " holds at most " + num(c.xylo.max_fanout) + " per hidden neuron");
    }
    x.mean_fanout = static_cast<double>(x.recurrent_weights) / static_cast<double>(x.n_hid);
}

// Input and output expansion neurons as the cycle model counts them: every hidden neuron, or
// (XyloIMU, XyloAudio 3) those with a non-zero input weight and those with a non-zero readout.
void expansion(const Graph& g, const Chip& c, const Parts& parts, XyloPlacement& x) {
    if (!c.xylo.expansion_nonzero) {
        x.n_ien = x.n_oen = x.n_hid;
        return;
    }
    auto count = [&](const std::vector<int>& ws, bool input) {
        std::vector<std::vector<std::int64_t>> per(static_cast<std::size_t>(g.size()));
        for (int w : ws) {
            const int pop =
                input ? parts.succ[static_cast<std::size_t>(w)].front() : source_of(g, w);
            const auto z = input ? g.node(w).connection_nonzeros().per_output
                                 : g.node(w).connection_nonzeros().per_input;
            auto& acc = per[static_cast<std::size_t>(pop)];
            acc.resize(z.size(), 0);
            for (std::size_t i = 0; i < z.size(); ++i) acc[i] += z[i];
        }
        std::int64_t n = 0;
        for (const auto& v : per)
            n += std::count_if(v.begin(), v.end(), [](auto k) { return k > 0; });
        return n;
    };
    x.n_ien = count(parts.in_w, true);
    x.n_oen = count(parts.out_w, false);
}

// What Rockpool only warns about, and what ternion cannot check, as notes.
void warnings(const Graph& g, const Chip& c, const Parts& parts, Placement& p) {
    const XyloSpec& s = c.xylo;
    XyloPlacement& x = p.xylo;
    if (x.n_in > s.warn_input_channels)
        p.notes.push_back("warning: " + num(x.n_in) + " input channels; " + c.name + " has " +
                          num(s.warn_input_channels) +
                          " (Rockpool's mapper only warns: DRCWarning)");
    if (x.n_out > s.warn_output_channels)
        p.notes.push_back("warning: " + num(x.n_out) +
                          " output channels; Rockpool's mapper "
                          "warns above " +
                          num(s.warn_output_channels) + " (DRCWarning)");
    for (const auto* ws : {&parts.in_w, &parts.rec_w, &parts.out_w})
        for (int w : *ws)
            if (g.node(w).geometry().bias)
                p.notes.push_back("warning: " + g.node(w).name() +
                                  ": the bias of a weight node is not transferred to Xylo "
                                  "(Rockpool: DRCWarning); give it to the neurons instead");
    for (int u : parts.outputs)
        if (!g.node(u).is_spiking())
            p.notes.push_back(g.node(u).name() +
                              ": does not spike; Xylo's output neurons do, "
                              "and their membrane can be read instead (readout mode Vmem)");
    std::int64_t ien = 0, oen = 0;
    for (const XyloPopulation& pop : x.populations) {
        if (pop.output) continue;
        for (int w : parts.in_w) ien += parts.succ[w].front() == g.find(pop.neurons) ? pop.size : 0;
        for (int w : parts.out_w) oen += source_of(g, w) == g.find(pop.neurons) ? pop.size : 0;
    }
    auto projection = [&](std::int64_t need, std::int64_t reach, const char* what) {
        if (need > reach)
            p.notes.push_back("warning: the " + std::string(what) + " weights reach " + num(need) +
                              " hidden neurons; " + c.name + "'s " + what + " projection reaches " +
                              num(reach) + " (documented; Rockpool's rule for it is empty)");
    };
    projection(ien, s.input_projection, "input");
    projection(oen, s.output_projection, "output");
    const std::int64_t budget = s.hidden * s.avg_fanout;
    if (x.recurrent_weights > budget)
        p.notes.push_back("warning: " + num(x.recurrent_weights) +
                          " recurrent weights; the documented average fan-out (" +
                          num(s.avg_fanout) + " per hidden neuron and synaptic state) gives " +
                          num(budget) + " on the one synaptic state ternion uses");
}

}  // namespace

Placement map_xylo(const Graph& g, const Chip& c, const MapOptions& o) {
    Placement p;
    p.chip = c.name;
    p.family = c.family;
    const Parts parts = cut(g);
    XyloPlacement& x = p.xylo;
    x.n_in = parts.n_in;
    assign_ids(g, c, parts, x);
    check_counts(g, c, x);
    fanouts(g, c, parts, x);
    expansion(g, c, parts, x);
    warnings(g, c, parts, p);
    x.dt = o.dt;
    x.dt_source = o.dt_source;
    x.cycles_worst = xylo_cycles(c.xylo, x, XyloRates{});
    x.clock_hz = x.cycles_worst * (1 + c.xylo.margin) / o.dt;
    x.has_rates = o.has_rates;
    x.rates = o.rates;
    if (o.has_rates) x.cycles_at_rates = xylo_cycles(c.xylo, x, o.rates);
    return p;
}

Placement map_model(const Graph& g, const Chip& c, const MapOptions& o) {
    if (o.steps < 1) throw OptionError("steps", "expected at least one time step");
    if (c.family == "xylo") return map_xylo(g, c, o);
    if (c.family == "mesh") return map_mesh(g, c, o);
    if (o.has_rates) throw OptionError("rates", "the " + c.family + " family has no cycle model");
    return map_dynapcnn(g, c);
}

}  // namespace ternion::chip
