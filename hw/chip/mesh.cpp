// Mesh placement: every node that computes (a connection with the neurons it feeds, neurons,
// pooling, a sum of edges, a reduction, an attention node's state) becomes a mesh layer whose
// units (neurons with their incoming synapses; an attention's score rows) are packed onto
// cores in order, a new core taken whenever the next unit would overflow the core's neurons,
// synapse memory, state memory or input axons. Layers never share a core, so a core's traffic
// belongs to one layer. Reshapes and single-input identities only rewire (docs/chips.md).
#include <algorithm>
#include <cstdio>
#include <functional>

#include "hw/chip/chip.hpp"
#include "hw/chip/conv_shape.hpp"
#include "sim/core/error.hpp"

namespace ternion::chip {

namespace {

using Kind = LayerGeometry::Kind;
using I64 = std::int64_t;

std::string num(I64 v) {
    return std::to_string(v);
}

std::string pj_words(double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%g", v);
    return b;
}

[[noreturn]] void fail(const Graph& g, const std::string& node, const std::string& what) {
    throw InputError(g.origin(), "nodes/" + node, what);
}

// What one unit needs of a core, and how a run of units [a, b) counts its input axons (the
// distinct sources reaching it: Loihi's fan-in limit is per core).
struct UnitNeed {
    I64 neurons = 0, out = 0, synapses = 0, state_bits = 0, score_rows = 0;
};
struct UnitRule {
    I64 count = 0;
    std::function<UnitNeed(I64)> need;
    std::function<I64(I64, I64)> axons;
    // Weights a run [a, b) stores, when they are shared (else each unit stores its synapses).
    std::function<I64(I64, I64)> stored;
};

class Builder {
  public:
    Builder(const Graph& g, const MeshSpec& s, MeshPlacement& p) : g_(g), s_(s), p_(p) {
        producers_.resize(static_cast<std::size_t>(g.size()));
        layer_of_.assign(static_cast<std::size_t>(g.size()), -2);
    }

    void run() {
        for (int u : g_.order()) classify(u);
        // Twice: a recurrent edge's source is classified after the node it feeds.
        for (int pass = 0; pass < 2; ++pass)
            for (int u : g_.order()) resolve(u);
        for (std::size_t l = 0; l < p_.layers.size(); ++l) {
            sources_of(static_cast<int>(l));
            pack_or_spill(static_cast<int>(l));
        }
        for (int o : g_.outputs())
            for (int e : g_.in_edges(o))
                for (int l : producers_[static_cast<std::size_t>(g_.edges()[e].src)])
                    if (l >= 0) p_.layers[static_cast<std::size_t>(l)].feeds_output = true;
        p_.cores_used = next_core_;
        p_.tiles_used = (next_core_ + s_.cores_per_tile - 1) / s_.cores_per_tile;
    }

  private:
    const Graph& g_;
    const MeshSpec& s_;
    MeshPlacement& p_;
    std::vector<std::vector<int>> producers_;  // mesh layers whose values a node's output is
    std::vector<int> layer_of_;                // -2: rewires only, -1: the input
    std::vector<int> head_;                    // each layer's first node
    std::vector<UnitRule> rules_;
    I64 next_core_ = 0;

    int succ_only(int u) const {
        int only = -1, n = 0;
        for (const Edge& e : g_.edges())
            if (e.src == u) only = e.dst, ++n;
        return n == 1 ? only : -1;
    }
    int add_layer(int u, const std::string& kind, UnitRule rule, const std::string& form) {
        MeshLayer l;
        l.name = g_.node(u).name(), l.kind = kind, l.nodes = {l.name}, l.fanin_form = form;
        p_.layers.push_back(std::move(l));
        head_.push_back(u);
        rules_.push_back(std::move(rule));
        const int id = static_cast<int>(p_.layers.size()) - 1;
        layer_of_[static_cast<std::size_t>(u)] = id;
        return id;
    }
    void classify(int u);
    void connection(int u, const LayerGeometry& geo);
    void attention(int u, const AttentionShape& a);
    void elementwise(int u, const std::string& kind, I64 fanin, const std::string& form);
    void resolve(int u) {
        const int l = layer_of_[static_cast<std::size_t>(u)];
        auto& pr = producers_[static_cast<std::size_t>(u)];
        if (l >= -1 || l == -3) {
            pr = {l == -3 ? layer_of_[static_cast<std::size_t>(head_merged(u))] : l};
            return;
        }
        pr.clear();
        for (int e : g_.in_edges(u))
            for (int x : producers_[static_cast<std::size_t>(g_.edges()[e].src)])
                if (std::find(pr.begin(), pr.end(), x) == pr.end()) pr.push_back(x);
    }
    int head_merged(int u) const { return g_.edges()[g_.in_edges(u).front()].src; }
    void sources_of(int l) {
        auto& src = p_.layers[static_cast<std::size_t>(l)].sources;
        const int u = head_[static_cast<std::size_t>(l)];
        for (int e : g_.in_edges(u))
            for (int x : producers_[static_cast<std::size_t>(g_.edges()[e].src)])
                if (std::find(src.begin(), src.end(), x) == src.end()) src.push_back(x);
    }
    void pack(int l, bool dram);
    void pack_or_spill(int l);
    [[noreturn]] void unit_fails(int l, I64 i, const UnitNeed& n, I64 axons, bool dram) const;
    [[noreturn]] void cores_run_out(int l, I64 placed) const;
};

void Builder::classify(int u) {
    const Node& n = g_.node(u);
    const NodeCategory cat = n.category();
    const LayerGeometry geo = n.geometry();
    if (layer_of_[static_cast<std::size_t>(u)] == -3) return;  // neurons joined to a connection
    if (cat == NodeCategory::input) {
        layer_of_[static_cast<std::size_t>(u)] = -1;
        p_.input_neurons += n.out_size();
    } else if (cat == NodeCategory::output || geo.kind == Kind::reshape) {
        return;
    } else if (geo.kind == Kind::connection) {
        connection(u, geo);
    } else if (const auto att = n.attention_shape()) {
        attention(u, *att);
    } else if (geo.kind == Kind::pooling) {
        const ConvShape c = conv_shape(n, geo);
        UnitRule r;
        r.count = n.out_size();
        r.need = [c](I64 i) { return UnitNeed{1, 1, c.fanin(i), 0, 0}; };
        r.axons = [c](I64 a, I64 b) { return c.axons(a, b); };
        add_layer(u, "pooling", r, num(geo.kernel_h) + " x " + num(geo.kernel_w) + " window");
        if (geo.pool == LayerGeometry::Pool::max)
            p_.layers.back().fanin_form += " (max pooling priced as its window's synapses)";
    } else if (const I64 edges = static_cast<I64>(g_.in_edges(u).size());
               cat == NodeCategory::neuron) {
        elementwise(u, "neurons", edges, num(edges) + " input edge(s)");
    } else if (n.in_size() == n.out_size() && edges == 1) {
        return;  // a reshape or an identity: wiring only
    } else if (n.in_size() == n.out_size()) {
        elementwise(u, "sum", edges, "a sum of " + num(edges) + " edges");
    } else {
        const I64 k = (n.in_size() + n.out_size() - 1) / std::max<I64>(1, n.out_size());
        elementwise(u, "reduction", k, num(k) + " inputs reduced");
    }
}

void Builder::elementwise(int u, const std::string& kind, I64 fanin, const std::string& form) {
    const I64 in = g_.node(u).in_size();
    UnitRule r;
    r.count = g_.node(u).out_size();
    r.need = [fanin](I64) { return UnitNeed{1, 1, fanin, 0, 0}; };
    r.axons = [fanin, in](I64 a, I64 b) { return std::min(in, (b - a) * fanin); };
    add_layer(u, kind, r, form);
    p_.layers.back().spiking = g_.node(u).is_spiking();
}

// A Linear or a convolution, joined by the spiking neurons it alone feeds.
void Builder::connection(int u, const LayerGeometry& geo) {
    const Node& n = g_.node(u);
    UnitRule r;
    r.count = n.out_size();
    std::string form;
    auto z = n.connection_nonzeros();  // empty for a convolution (its weights are shared)
    if (z.per_output.empty()) {
        const ConvShape c = conv_shape(n, geo);
        r.need = [c](I64 i) { return UnitNeed{1, 1, c.fanin(i), 0, 0}; };
        r.axons = [c](I64 a, I64 b) { return c.axons(a, b); };
        if (s_.weight_sharing)  // the kernels of the output channels the run holds
            r.stored = [c](I64 a, I64 b) {
                return std::min(c.cout, b - a) * c.cin_per_out() * c.kh * c.kw;
            };
        form = num(c.cin_per_out()) + " x " + num(c.kh) + " x " + num(c.kw);
    } else {
        const I64 out = geo.out_channels;
        const I64 reach =
            std::count_if(z.per_input.begin(), z.per_input.end(), [](I64 k) { return k > 0; });
        std::vector<I64> prefix(static_cast<std::size_t>(r.count) + 1, 0);
        for (I64 i = 0; i < r.count; ++i)
            prefix[static_cast<std::size_t>(i) + 1] =
                prefix[static_cast<std::size_t>(i)] +
                z.per_output[static_cast<std::size_t>(i % out)];
        if (s_.weight_sharing) {  // rows of tokens share the matrix: the columns a run holds
            std::vector<I64> col(static_cast<std::size_t>(out) + 1, 0);
            for (I64 j = 0; j < out; ++j)
                col[static_cast<std::size_t>(j) + 1] =
                    col[static_cast<std::size_t>(j)] + z.per_output[static_cast<std::size_t>(j)];
            r.stored = [col, out](I64 a, I64 b) {
                const auto at = [&](I64 j) { return col[static_cast<std::size_t>(j)]; };
                if (b - a >= out) return at(out);
                const I64 j0 = a % out, j1 = (b - 1) % out;
                return j0 <= j1 ? at(j1 + 1) - at(j0) : at(out) - at(j0) + at(j1 + 1);
            };
        }
        r.need = [z, out](I64 i) {
            return UnitNeed{1, 1, z.per_output[static_cast<std::size_t>(i % out)], 0, 0};
        };
        // Rows of tokens are distinct sources; within one row, the inputs with a weight bound
        // the axons (the non-zero pattern itself is not known here).
        r.axons = [prefix, out, reach](I64 a, I64 b) {
            const I64 rows = (b - 1) / out - a / out + 1;
            const I64 syn =
                prefix[static_cast<std::size_t>(b)] - prefix[static_cast<std::size_t>(a)];
            return std::min(rows * reach, syn);
        };
        form = "its non-zero weights of " + num(geo.in_channels) + " inputs";
    }
    add_layer(u, "synapses", std::move(r), form);
    MeshLayer& L = p_.layers.back();
    L.spiking = false;
    const int v = succ_only(u);
    if (v >= 0 && g_.node(v).category() == NodeCategory::neuron && g_.in_edges(v).size() == 1 &&
        g_.node(v).out_size() == n.out_size()) {
        L.nodes.push_back(g_.node(v).name());
        L.spiking = g_.node(v).is_spiking();
        layer_of_[static_cast<std::size_t>(v)] = -3;
    }
}

// Q, K and V neurons (each with D_in projection synapses), then the score buffer (heads x N
// rows of N entries, state memory only), then the output neurons.
void Builder::attention(int u, const AttentionShape& a) {
    const I64 nd = a.tokens * a.dim, qkv = 3 * nd, rows = a.heads * a.tokens;
    const I64 din = a.dim_in, in = g_.node(u).in_size(), tokens = a.tokens, dim = a.dim;
    const I64 score_bits = a.tokens * s_.state_bits;
    UnitRule r;
    r.count = qkv + rows + nd;
    r.need = [=](I64 i) {
        if (i < qkv) return UnitNeed{1, 0, din, 0, 0};
        if (i < qkv + rows) return UnitNeed{0, 0, 0, score_bits, 1};
        return UnitNeed{1, 1, 0, 0, 0};
    };
    r.axons = [=](I64 b0, I64 b1) {
        const I64 n = std::min(b1, qkv) - std::min(b0, qkv);
        return n <= 0 ? 0 : std::min(in, std::min(tokens, (n + dim - 1) / dim + 1) * din);
    };
    add_layer(u, "attention", r, "dim_in " + num(din));
    MeshLayer& L = p_.layers.back();
    L.qkv_neurons = qkv, L.score_entries = rows * a.tokens;
    L.spiking = g_.node(u).is_spiking();
    L.shape = a;
    // The ANN's scores and weighted sums: the node's dense MACs beyond its projections.
    const std::uint64_t dense = g_.node(u).dense_macs_per_step();
    L.att.dense_macs = static_cast<double>(
        dense > a.proj_dense_macs_per_step ? dense - a.proj_dense_macs_per_step : 0);
}

[[noreturn]] void Builder::unit_fails(int l, I64 i, const UnitNeed& n, I64 axons, bool dram) const {
    const MeshLayer& L = p_.layers[static_cast<std::size_t>(l)];
    const std::string one = n.score_rows ? "one score row" : "one neuron";
    if (axons > s_.max_fanin)
        fail(g_, L.name,
             one + " needs " + num(axons) + " input axons (fan-in " + L.fanin_form +
                 "); a core takes at most " + num(s_.max_fanin) + " (core.max_fanin)");
    const I64 st_syn = rules_[static_cast<std::size_t>(l)].stored
                           ? rules_[static_cast<std::size_t>(l)].stored(i, i + 1)
                           : n.synapses;
    const I64 syn_bytes = (st_syn * s_.synapse_bits + 7) / 8;
    if (!dram && syn_bytes > s_.synapse_memory_bytes)
        fail(g_, L.name,
             one + " needs " + num(syn_bytes) + " bytes of synapse memory (" + num(st_syn) +
                 " synapses of " + num(s_.synapse_bits) + " bits, fan-in " + L.fanin_form +
                 "); a core holds " + num(s_.synapse_memory_bytes) +
                 " (core.synapse_memory_bytes)");
    const I64 st = n.state_bits + n.neurons * s_.states_per_neuron * s_.state_bits;
    fail(g_, L.name,
         one + " (unit " + num(i) + ") needs " + num((st + 7) / 8) +
             " bytes of state memory; a core holds " + num(s_.state_memory_bytes) +
             " (core.state_memory_bytes)");
}

[[noreturn]] void Builder::cores_run_out(int l, I64 placed) const {
    const MeshLayer& L = p_.layers[static_cast<std::size_t>(l)];
    const I64 used = L.cores.empty() ? next_core_ : L.cores.front().core;
    fail(g_, L.name,
         "needs more cores than the chip has: after the " + num(used) +
             " cores of the layers before it, the remaining " + num(s_.cores() - used) + " hold " +
             num(placed) + " of its " + num(rules_[static_cast<std::size_t>(l)].count) +
             " units; the chip has " + num(s_.cores()) + " cores (" + num(s_.width) + " x " +
             num(s_.height) + " tiles x " + num(s_.cores_per_tile) + ")");
}

// A chip with DRAM keeps a layer's weights there when the layer does not fit with them in the
// cores' synapse SRAM (a unit's synapses outgrow a core's, or splitting by synapse memory needs
// more cores than are left); packed again without the synapse limit, anything else that does not
// fit is still the layer's error.
void Builder::pack_or_spill(int l) {
    if (!s_.dram) return pack(l, false);
    const I64 first = next_core_;
    try {
        return pack(l, false);
    } catch (const InputError&) {
        p_.layers[static_cast<std::size_t>(l)].cores.clear();
        next_core_ = first;
    }
    pack(l, true);
    MeshLayer& L = p_.layers[static_cast<std::size_t>(l)];
    L.weights_in_dram = true;
    for (CoreUse& c : L.cores) {
        L.dram_weight_bytes += (c.stored * s_.synapse_bits + 7) / 8;
        c.synapse_bits = 0;  // the core's synapse SRAM holds none of them
    }
}

// Greedy, in unit order: a unit joins the current core while every capacity holds, else it
// opens the next core; a unit that fits no empty core is the layer's error. With `dram` the
// weights live off chip and the synapse SRAM does not limit the packing.
void Builder::pack(int l, bool dram) {
    const UnitRule& r = rules_[static_cast<std::size_t>(l)];
    MeshLayer& L = p_.layers[static_cast<std::size_t>(l)];
    const I64 syn_cap = s_.synapse_memory_bytes * 8, st_cap = s_.state_memory_bytes * 8;
    const I64 neuron_bits = s_.states_per_neuron * s_.state_bits;
    if (r.count > 0 && next_core_ >= s_.cores()) cores_run_out(l, 0);
    CoreUse cur;
    cur.core = next_core_;
    I64 start = 0;
    auto close = [&] {
        if (cur.neurons + cur.score_rows == 0 && cur.synapses == 0) return;
        L.cores.push_back(cur);
        ++next_core_;
    };
    for (I64 i = 0; i < r.count; ++i) {
        const UnitNeed n = r.need(i);
        for (int attempt = 0;; ++attempt) {
            const I64 axons = r.axons(start, i + 1);
            const I64 stored = r.stored ? r.stored(start, i + 1) : cur.stored + n.synapses;
            const bool fits = cur.neurons + n.neurons <= s_.neurons &&
                              (dram || stored * s_.synapse_bits <= syn_cap) &&
                              cur.state_bits + n.state_bits + n.neurons * neuron_bits <= st_cap &&
                              axons <= s_.max_fanin;
            if (fits) {
                cur.neurons += n.neurons, cur.out_neurons += n.out, cur.synapses += n.synapses;
                cur.state_bits += n.state_bits + n.neurons * neuron_bits;
                cur.score_rows += n.score_rows, cur.axons_in = axons, cur.stored = stored;
                break;
            }
            if (attempt > 0) unit_fails(l, i, n, r.axons(i, i + 1), dram);
            close();
            if (next_core_ >= s_.cores()) cores_run_out(l, i);
            cur = CoreUse{};
            cur.core = next_core_;
            start = i;
        }
    }
    close();
    for (const CoreUse& c : L.cores) {
        L.neurons += c.neurons, L.out_neurons += c.out_neurons, L.synapses += c.synapses;
        L.max_fanin = std::max(L.max_fanin, c.axons_in);
    }
    for (CoreUse& c : L.cores) c.synapse_bits = c.stored * s_.synapse_bits;
}

// What the placement leaves open: output axons beyond the routing table (every neuron counted
// towards each core holding one of its targets) and attention's unpriced parts.
void notes(const MeshSpec& s, Placement& p) {
    for (const MeshLayer& l : p.mesh.layers) {
        if (l.weights_in_dram)
            p.notes.push_back(l.name + ": its weights (" + num(l.dram_weight_bytes) +
                              " bytes) do not fit the cores' synapse SRAM (" +
                              num(s.synapse_memory_bytes) +
                              " bytes a core, core.synapse_memory_bytes); they live in DRAM, "
                              "every weight read priced at " +
                              pj_words(s.dram_pj) + " pJ per " + num(s.dram_access_bits) +
                              "-bit access (dram); DRAM bandwidth and latency are not modelled");
        I64 most = 0, core = -1;
        for (const CoreUse& c : l.cores)
            if (c.axons_out > most) most = c.axons_out, core = c.core;
        if (most > s.max_fanout)
            p.notes.push_back(l.name + ": core " + num(core) + " needs " + num(most) +
                              " output axons (each neuron to every core holding one of its "
                              "targets); a core routes at most " +
                              num(s.max_fanout) + " (core.max_fanout)");
        if (l.kind == "attention")
            p.notes.push_back(l.name + ": Q/K/V state (" + num(l.qkv_neurons) +
                              " neurons) and score buffer (" + num(l.score_entries) +
                              " entries) fit on cores " + std::to_string(l.cores.front().core) +
                              "-" + std::to_string(l.cores.back().core) +
                              "; its scores, normalisation and weighted sums of V are priced " +
                              (p.mesh.measured ? "from the run's attention counters"
                                               : "from the closed forms at the hidden rate") +
                              ", its Q/K/V spikes routed to the score rows' cores (docs/chips.md)");
    }
}

}  // namespace

Placement map_mesh(const Graph& g, const Chip& c, const MapOptions& o) {
    Placement p;
    p.chip = c.name;
    p.family = c.family;
    Builder(g, c.mesh, p.mesh).run();
    build_targets(g, p.mesh);
    estimate_mesh(c.mesh, o, p.mesh);
    notes(c.mesh, p);
    return p;
}

Placement reestimate_mesh(const Placement& placed, const Chip& c, const MapOptions& o) {
    Placement p = placed;
    p.notes.clear();
    estimate_mesh(c.mesh, o, p.mesh);
    notes(c.mesh, p);
    return p;
}

}  // namespace ternion::chip
