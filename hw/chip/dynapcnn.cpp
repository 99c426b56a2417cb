// DYNAP-CNN / Speck: a core is a convolution (a Linear becomes one whose kernel covers its input),
// integrate-and-fire neurons and sum pooling. A model is cut into such chip layers along its
// chain of nodes, each layer's kernel, neuron and bias memory is computed by sinabs-dynapcnn's
// rule, and layers are assigned to cores by the same bipartite matching sinabs runs, so the
// cores chosen are sinabs' cores (docs/chips.md).
#include <algorithm>

#include "hw/chip/chip.hpp"
#include "sim/core/error.hpp"

namespace ternion::chip {

namespace {

using Kind = LayerGeometry::Kind;

std::int64_t ceil_log2(std::int64_t n) {
    std::int64_t k = 0;
    while ((std::int64_t{1} << k) < n) ++k;
    return k;
}

[[noreturn]] void fail(const Graph& g, const std::string& node, const std::string& what) {
    throw InputError(g.origin(), node.empty() ? "nodes" : "nodes/" + node, what);
}

std::string list(const std::vector<std::int64_t>& v) {
    std::string s;
    for (auto x : v) {
        if (!s.empty()) s += ", ";
        s += std::to_string(x);
    }
    return s;
}

// The nodes between the Input and the Output, in evaluation order: a chain (sinabs also maps
// two destinations per core; ternion maps chains only, so far).
std::vector<int> chain_of(const Graph& g) {
    std::vector<int> out(static_cast<std::size_t>(g.size())), in(out.size());
    for (const Edge& e : g.edges())
        ++out[static_cast<std::size_t>(e.src)], ++in[static_cast<std::size_t>(e.dst)];
    std::vector<int> r;
    for (int u : g.order()) {
        const Node& n = g.node(u);
        if (out[static_cast<std::size_t>(u)] > 1 || in[static_cast<std::size_t>(u)] > 1)
            fail(g, n.name(), "the network branches here: chip mapping takes a chain of layers");
        if (n.category() != NodeCategory::input && n.category() != NodeCategory::output)
            r.push_back(u);
    }
    return r;
}

// Cuts the chain into chip layers and checks each against the chip's limits.
class Cutter {
  public:
    Cutter(const Graph& g, const Chip& c, Placement& p) : g_(g), c_(c), p_(p) {}

    void add(const Node& n) {
        const LayerGeometry geo = n.geometry();
        if (geo.kind == Kind::connection)
            start(n, geo);
        else if (n.category() == NodeCategory::neuron && n.is_spiking())
            neurons(n);
        else if (geo.kind == Kind::pooling)
            pooling(n, geo);
        else if (geo.kind == Kind::reshape)
            flattened_ = n.in_shape(), reshapes_.push_back(n.name());
        else
            fail(g_, n.name(),
                 "is a " + n.type() +
                     ", which a DYNAP-CNN core does not run (a core is a "
                     "convolution or linear layer, spiking neurons, then sum pooling)");
    }
    void finish() const {
        if (!p_.layers.empty() && !spiking_) fail(g_, p_.layers.back().connection, no_neurons());
    }

  private:
    static std::string no_neurons() {
        return "is not followed by spiking neurons: a DYNAP-CNN core is a convolution or linear "
               "layer, spiking neurons, then sum pooling";
    }
    void start(const Node& n, const LayerGeometry& geo) {
        if (!p_.layers.empty() && !spiking_) fail(g_, p_.layers.back().connection, no_neurons());
        ChipLayer l;
        l.connection = n.name();
        l.nodes = reshapes_;
        l.nodes.push_back(n.name());
        reshapes_.clear();
        l.out_channels = geo.out_channels;
        if (geo.spatial)
            convolution(n, geo, l);
        else
            linear(n, geo, l);
        check_kernel(n, l);
        const std::int64_t f = l.out_channels;
        l.kernel_memory = l.in_channels << (ceil_log2(l.kernel_h * l.kernel_w) + ceil_log2(f));
        l.neuron_memory = f << (ceil_log2(l.out_h) + ceil_log2(l.out_w));
        l.bias_memory = geo.bias ? f : 0;
        p_.layers.push_back(std::move(l));
        spiking_ = false;
        flattened_.clear();
    }
    void convolution(const Node& n, const LayerGeometry& geo, ChipLayer& l) {
        const Limits& lim = c_.limits;
        const Shape& in = n.in_shape();
        if (p_.layers.empty() && (in[1] > lim.max_input_h || in[2] > lim.max_input_w))
            fail(g_, n.name(),
                 "input map " + std::to_string(in[1]) + "x" + std::to_string(in[2]) +
                     " is larger than the chip's " + std::to_string(lim.max_input_h) + "x" +
                     std::to_string(lim.max_input_w));
        if (geo.groups != 1 || geo.dilation_h != 1 || geo.dilation_w != 1)
            fail(g_, n.name(), "grouped or dilated convolutions are not DYNAP-CNN layers");
        auto allowed = [&](std::int64_t s) {
            return std::find(lim.strides.begin(), lim.strides.end(), s) != lim.strides.end();
        };
        if (!allowed(geo.stride_h) || !allowed(geo.stride_w))
            fail(g_, n.name() + "/stride",
                 "stride " + std::to_string(geo.stride_h) + "x" + std::to_string(geo.stride_w) +
                     ": the chip takes " + list(lim.strides));
        if (geo.pad_h > lim.max_padding || geo.pad_w > lim.max_padding)
            fail(g_, n.name() + "/padding",
                 "padding above the chip's " + std::to_string(lim.max_padding));
        l.in_channels = geo.in_channels;
        l.kernel_h = geo.kernel_h, l.kernel_w = geo.kernel_w;
        l.out_h = n.out_shape()[1], l.out_w = n.out_shape()[2];
    }
    // A Linear is a convolution whose kernel covers its [C, H, W] input (sinabs'
    // convert_linear_to_conv), or a 1x1 one on a vector.
    void linear(const Node& n, const LayerGeometry& geo, ChipLayer& l) {
        if (flattened_.size() == 3) {
            l.in_channels = flattened_[0], l.kernel_h = flattened_[1], l.kernel_w = flattened_[2];
        } else if (n.in_shape().size() == 1) {
            l.in_channels = geo.in_channels, l.kernel_h = l.kernel_w = 1;
        } else {
            fail(g_, n.name(),
                 "a linear layer on input " + shape_str(n.in_shape()) +
                     " is not a DYNAP-CNN layer (it needs [C, H, W] or a vector)");
        }
    }
    void check_kernel(const Node& n, const ChipLayer& l) const {
        const Limits& lim = c_.limits;
        const std::string k = std::to_string(l.kernel_h) + "x" + std::to_string(l.kernel_w);
        if (l.kernel_h != l.kernel_w)
            fail(g_, n.name(), "kernel " + k + ": the chip's kernels are square");
        if (l.kernel_h > lim.max_kernel)
            fail(g_, n.name(),
                 "kernel " + k + " is larger than the chip's " + std::to_string(lim.max_kernel) +
                     "x" + std::to_string(lim.max_kernel));
        if (l.out_channels > lim.max_out_channels)
            fail(g_, n.name(),
                 std::to_string(l.out_channels) + " output channels: the chip holds at most " +
                     std::to_string(lim.max_out_channels));
    }
    void neurons(const Node& n) {
        if (p_.layers.empty() || spiking_)
            fail(g_, n.name(),
                 "spiking neurons must follow a convolution or linear layer on DYNAP-CNN");
        spiking_ = true;
        p_.layers.back().nodes.push_back(n.name());
    }
    void pooling(const Node& n, const LayerGeometry& geo) {
        if (p_.layers.empty() || !spiking_)
            fail(g_, n.name(), "pooling before a core's spiking neurons is not mapped");
        if (geo.pool == LayerGeometry::Pool::max)
            fail(g_, n.name(), "max pooling: DYNAP-CNN pools by summing");
        const auto& pools = c_.limits.pools;
        if (geo.kernel_h != geo.kernel_w || geo.stride_h != geo.kernel_h ||
            geo.stride_w != geo.kernel_w || geo.pad_h || geo.pad_w ||
            std::find(pools.begin(), pools.end(), geo.kernel_h) == pools.end())
            fail(g_, n.name(),
                 "pooling " + std::to_string(geo.kernel_h) + "x" + std::to_string(geo.kernel_w) +
                     ": the chip sum-pools square windows with stride = size in " + list(pools) +
                     " and no padding");
        if (geo.pool == LayerGeometry::Pool::average)
            p_.notes.push_back(n.name() +
                               ": average pooling mapped as sum pooling of the same window (the "
                               "chip sums; the next layer's weights must absorb the 1/" +
                               std::to_string(geo.kernel_h * geo.kernel_w) + ")");
        ChipLayer& l = p_.layers.back();
        l.pool *= geo.kernel_h;
        l.nodes.push_back(n.name());
    }

    const Graph& g_;
    const Chip& c_;
    Placement& p_;
    bool spiking_ = false;
    Shape flattened_;                    // the input of a Flatten between two layers
    std::vector<std::string> reshapes_;  // those Flattens, placed with the next layer
};

// The cores whose three memories hold `l`, ascending; an error naming the short memory when none.
std::vector<int> cores_for(const Graph& g, const Chip& c, const ChipLayer& l) {
    std::vector<int> r;
    std::int64_t kmax = 0, nmax = 0, bmax = 0;
    for (std::size_t i = 0; i < c.cores.size(); ++i) {
        const Core& k = c.cores[i];
        kmax = std::max(kmax, k.kernel_memory), nmax = std::max(nmax, k.neuron_memory);
        bmax = std::max(bmax, k.bias_memory);
        if (l.kernel_memory <= k.kernel_memory && l.neuron_memory <= k.neuron_memory &&
            l.bias_memory <= k.bias_memory)
            r.push_back(static_cast<int>(i));
    }
    if (!r.empty()) return r;
    auto need = [](const char* what, std::int64_t v, std::int64_t most) {
        return "needs " + std::to_string(v) + " " + what + " entries; the largest core holds " +
               std::to_string(most);
    };
    const std::string k = std::to_string(l.in_channels) + " x 2^(" +
                          std::to_string(ceil_log2(l.kernel_h * l.kernel_w)) + "+" +
                          std::to_string(ceil_log2(l.out_channels)) + ")";
    const std::string n = std::to_string(l.out_channels) + " x 2^(" +
                          std::to_string(ceil_log2(l.out_h)) + "+" +
                          std::to_string(ceil_log2(l.out_w)) + ")";
    if (l.kernel_memory > kmax)
        fail(g, l.connection, need("kernel-memory", l.kernel_memory, kmax) + " (" + k + ")");
    if (l.neuron_memory > nmax)
        fail(g, l.connection, need("neuron-memory", l.neuron_memory, nmax) + " (" + n + ")");
    if (l.bias_memory > bmax) fail(g, l.connection, need("bias-memory", l.bias_memory, bmax));
    fail(g, l.connection,
         "needs " + std::to_string(l.kernel_memory) + " kernel-memory entries (" + k + ") and " +
             std::to_string(l.neuron_memory) + " neuron-memory entries (" + n +
             "): no core holds both");
}

// Maximum bipartite matching of layers to cores as sinabs computes it: a flow network (source,
// layers, cores, sink; unit capacities) with every node's edges in insertion order, augmented
// along breadth-first paths until none is left. Returns the core of each layer, -1 if none.
std::vector<int> assign(const std::vector<std::vector<int>>& fits, int ncores) {
    struct E {
        int to, cap, flow, rev;  // rev: index of the reverse edge in adj[to]
    };
    const int L = static_cast<int>(fits.size()), sink = L + ncores + 1;
    std::vector<std::vector<E>> adj(static_cast<std::size_t>(sink + 1));
    auto link = [&](int a, int b) {
        adj[a].push_back({b, 1, 0, static_cast<int>(adj[b].size())});
        adj[b].push_back({a, 0, 0, static_cast<int>(adj[a].size()) - 1});
    };
    for (int i = 0; i < L; ++i) link(0, i + 1);
    for (int i = 0; i < L; ++i)
        for (int core : fits[static_cast<std::size_t>(i)]) link(i + 1, L + 1 + core);
    for (int k = 0; k < ncores; ++k) link(L + 1 + k, sink);
    while (true) {
        std::vector<std::pair<int, int>> pred(adj.size(), {-1, -1});  // (node, edge index)
        std::vector<int> q{0};
        for (std::size_t h = 0; h < q.size(); ++h)
            for (std::size_t e = 0; e < adj[q[h]].size(); ++e) {
                const E& x = adj[q[h]][e];
                if (pred[x.to].first < 0 && x.to != 0 && x.cap > x.flow) {
                    pred[x.to] = {q[h], static_cast<int>(e)};
                    q.push_back(x.to);
                }
            }
        if (pred[sink].first < 0) break;
        for (int v = sink; v != 0; v = pred[v].first) {
            E& x = adj[pred[v].first][pred[v].second];
            ++x.flow;
            --adj[v][x.rev].flow;
        }
    }
    std::vector<int> core(fits.size(), -1);
    for (int i = 0; i < L; ++i)
        for (const E& x : adj[i + 1])
            if (x.flow == 1) core[i] = x.to - L - 1;
    return core;
}

}  // namespace

Placement map_dynapcnn(const Graph& g, const Chip& c) {
    Placement p;
    p.chip = c.name;
    p.family = c.family;
    Cutter cut(g, c, p);
    for (int u : chain_of(g)) cut.add(g.node(u));
    cut.finish();
    if (p.layers.empty()) fail(g, "", "has no convolution or linear layer to place");
    std::vector<std::vector<int>> fits;
    for (ChipLayer& l : p.layers) fits.push_back(l.fits = cores_for(g, c, l));
    const std::vector<int> core = assign(fits, static_cast<int>(c.cores.size()));
    for (std::size_t i = 0; i < p.layers.size(); ++i) p.layers[i].core = core[i];
    for (const ChipLayer& l : p.layers)
        if (l.core < 0) {
            std::string fit;
            for (const ChipLayer& m : p.layers) {
                std::string cores;
                for (int k : m.fits) {
                    if (!cores.empty()) cores += ",";
                    cores += std::to_string(k);
                }
                {
                    if (!fit.empty()) fit += ", ";
                    fit += m.connection + " {" + cores + "}";
                }
            }
            fail(g, l.connection,
                 "no valid mapping: one chip layer per core, and the " +
                     std::to_string(p.layers.size()) + " layers fit the cores " + fit +
                     "; this one is left without a core");
        }
    return p;
}

}  // namespace ternion::chip
