// Per-synapse spike targets on a mesh placement (docs/chips.md, "Routing"): for every source of
// spikes (an Input node, injected by the host, or a mesh layer's output) and each of its output
// elements, the cores that hold at least one neuron the element has a synapse to. Elements that
// leave the same core for the same cores form one route group, so that a step's traffic is one
// flow per group, weighed by a rate or by a run's per-element spike counts. Built once per
// placement; a convolution's targets depend only on the input position and channel group, a
// Linear's on the row of tokens, an elementwise layer's on the core of the same element.
#include <algorithm>
#include <functional>
#include <unordered_map>

#include "hw/chip/chip.hpp"
#include "hw/chip/conv_shape.hpp"

namespace ternion::chip {

namespace {

using I64 = std::int64_t;
using I32 = std::int32_t;

// Sorted core lists, interned: elements reaching the same cores share one id.
class CoreLists {
  public:
    I32 intern(std::vector<I64> cores) {
        std::sort(cores.begin(), cores.end());
        cores.erase(std::unique(cores.begin(), cores.end()), cores.end());
        std::uint64_t h = cores.size();
        for (I64 c : cores) h = h * 0x9E3779B97F4A7C15ULL + static_cast<std::uint64_t>(c) + 1;
        auto& bucket = ids_[h];
        for (I32 id : bucket)
            if (lists_[static_cast<std::size_t>(id)] == cores) return id;
        lists_.push_back(std::move(cores));
        bucket.push_back(static_cast<I32>(lists_.size() - 1));
        return bucket.back();
    }
    const std::vector<I64>& at(I32 id) const { return lists_[static_cast<std::size_t>(id)]; }

  private:
    std::unordered_map<std::uint64_t, std::vector<I32>> ids_;
    std::vector<std::vector<I64>> lists_;
};

// A layer's units on its cores: core k holds units [start[k], start[k + 1]).
struct UnitCores {
    std::vector<I64> start, core;
    explicit UnitCores(const MeshLayer& l) {
        I64 u = 0;
        for (const CoreUse& c : l.cores) {
            start.push_back(u), core.push_back(c.core);
            u += c.neurons + c.score_rows;
        }
        start.push_back(u);
    }
    std::size_t index_of(I64 unit) const {
        const auto it = std::upper_bound(start.begin(), start.end() - 1, unit);
        return static_cast<std::size_t>(std::max<std::ptrdiff_t>(0, it - start.begin() - 1));
    }
    I64 core_of(I64 unit) const { return core[index_of(unit)]; }
    // The cores holding any of the units [a, b), appended to `out`.
    void cores_in(I64 a, I64 b, std::vector<I64>& out) const {
        if (a >= b || core.empty()) return;
        for (std::size_t k = index_of(a), e = index_of(b - 1); k <= e; ++k) out.push_back(core[k]);
    }
};

// Per input element of a consumer layer: the id of the core list it reaches (-1: none).
using Classes = std::vector<I32>;

// Each input element reaches the unit of the same index (neurons, sums), or the unit of its
// index modulo the outputs (a reduction of [N, D] rows to D).
Classes elementwise(const Node& head, const MeshLayer& l, const UnitCores& uc, CoreLists& lists) {
    const I64 in = head.in_size(), out = std::max<I64>(1, head.out_size());
    Classes cls(static_cast<std::size_t>(in), -1);
    std::vector<I32> of_core(uc.core.size());
    for (std::size_t k = 0; k < uc.core.size(); ++k) of_core[k] = lists.intern({uc.core[k]});
    const bool reduce = l.kind == "reduction";
    for (I64 e = 0; e < in; ++e)
        cls[static_cast<std::size_t>(e)] = of_core[uc.index_of(reduce ? e % out : e)];
    return cls;
}

// A Linear on rows of tokens: an input of row r with a non-zero weight reaches the outputs of
// row r (all its columns: the non-zero pattern within the row is not kept); one with none, no
// core.
Classes linear(const Node& head, const LayerGeometry& geo, const UnitCores& uc, CoreLists& lists) {
    const ConnectionNonzeros z = head.connection_nonzeros();
    const I64 in = head.in_size(), din = std::max<I64>(1, geo.in_channels);
    const I64 out = geo.out_channels, rows = in / din;
    std::vector<I32> row_cls(static_cast<std::size_t>(rows));
    for (I64 r = 0; r < rows; ++r) {
        std::vector<I64> c;
        uc.cores_in(r * out, (r + 1) * out, c);
        row_cls[static_cast<std::size_t>(r)] = lists.intern(std::move(c));
    }
    Classes cls(static_cast<std::size_t>(in), -1);
    const bool known = static_cast<I64>(z.per_input.size()) == din;
    for (I64 e = 0; e < rows * din; ++e)
        if (!known || z.per_input[static_cast<std::size_t>(e % din)] > 0)
            cls[static_cast<std::size_t>(e)] = row_cls[static_cast<std::size_t>(e / din)];
    return cls;
}

// The cores of the units input (channel group or channel g, position y, x) reaches: every output
// position whose window has a tap on it (stride, padding and dilation), and there a
// convolution's output channels of the group, a pooling window's own channel.
std::vector<I64> window_cores(const ConvShape& c, I64 g, I64 y, I64 x, const UnitCores& uc) {
    const std::vector<I64> oys = ConvShape::reached(y, c.sh, c.ph, c.kh, c.dh, c.oh);
    const std::vector<I64> oxs = ConvShape::reached(x, c.sw, c.pw, c.kw, c.dw, c.ow);
    const I64 per_group = c.cout / std::max<I64>(1, c.groups);
    std::vector<I64> cores;
    for (I64 oy : oys)
        for (I64 ox : oxs) {
            const I64 pos = oy * c.ow + ox;
            if (c.pool)
                cores.push_back(uc.core_of(c.unit(g, pos)));
            else
                uc.cores_in(c.unit(g * per_group, pos), c.unit(g * per_group, pos) + per_group,
                            cores);
        }
    return cores;
}

// A convolution: the targets depend on the position and the channel group only; a pooling
// window: on the position and the channel.
Classes window(const Node& head, const LayerGeometry& geo, const UnitCores& uc, CoreLists& lists) {
    const ConvShape c = conv_shape(head, geo);
    const I64 hw = c.h * c.w, cpg = c.pool ? 1 : c.cin / std::max<I64>(1, c.groups);
    const I64 keys = c.pool ? c.cin : std::max<I64>(1, c.groups);
    Classes cls(static_cast<std::size_t>(c.cin * hw), -1);
    for (I64 g = 0; g < keys; ++g)
        for (I64 pos = 0; pos < hw; ++pos) {
            const I32 id = lists.intern(window_cores(c, g, pos / c.w, pos % c.w, uc));
            for (I64 ci = g * cpg; ci < (g + 1) * cpg; ++ci)
                cls[static_cast<std::size_t>(ci * hw + pos)] = id;
        }
    return cls;
}

// An attention node's input [N, D_in]: token n's inputs reach the Q, K and V neurons of token n
// (units n D .. n D + D - 1 of each block: the node's [N, D] order).
Classes attention(const Node& head, const MeshLayer& l, const UnitCores& uc, CoreLists& lists) {
    const I64 n_tok = std::max<I64>(1, l.shape.tokens), d = l.shape.dim, nd = n_tok * d;
    const I64 in = head.in_size(), din = std::max<I64>(1, in / n_tok);
    std::vector<I32> tok(static_cast<std::size_t>(n_tok));
    for (I64 n = 0; n < n_tok; ++n) {
        std::vector<I64> c;
        for (I64 block = 0; block < 3; ++block)
            uc.cores_in(block * nd + n * d, block * nd + (n + 1) * d, c);
        tok[static_cast<std::size_t>(n)] = lists.intern(std::move(c));
    }
    Classes cls(static_cast<std::size_t>(in), -1);
    for (I64 e = 0; e < std::min(in, n_tok * din); ++e)
        cls[static_cast<std::size_t>(e)] = tok[static_cast<std::size_t>(e / din)];
    return cls;
}

Classes consumer_classes(const Node& head, const MeshLayer& l, CoreLists& lists) {
    const UnitCores uc(l);
    const LayerGeometry geo = head.geometry();
    if (l.kind == "attention") return attention(head, l, uc, lists);
    if (l.kind == "pooling") return window(head, geo, uc, lists);
    if (l.kind == "synapses")
        return head.connection_nonzeros().per_output.empty() ? window(head, geo, uc, lists)
                                                             : linear(head, geo, uc, lists);
    return elementwise(head, l, uc, lists);
}

// A rewiring node's output j is its input perm[j]: found by stepping it once on the values
// 1..n (a Flatten or an Identity copies them; Tokens transposes [C, H, W] to [H W, C]). Empty
// when the node keeps the order, or when its output is not a permutation of its input (then the
// order is kept: an elementwise node does not move values).
std::vector<I64> rewire_permutation(const Node& n) {
    const I64 size = n.out_size();
    if (size != n.in_size() || size <= 0 || size >= (I64{1} << 24)) return {};
    Activity in, out;
    in.resize(size), out.resize(size);
    for (I64 i = 0; i < size; ++i)
        in.values[static_cast<std::size_t>(i)] = static_cast<float>(i + 1);
    in.scan();
    OpCounts ops;
    AttentionCounts att;
    SynapseCounts syn;
    StepContext ctx;
    ctx.ops = &ops, ctx.attention = &att, ctx.synapses = &syn;
    try {
        auto st = n.make_state();
        n.step(in, st.get(), out, ctx);
    } catch (const std::exception&) {
        return {};
    }
    std::vector<I64> perm(static_cast<std::size_t>(size));
    std::vector<char> seen(static_cast<std::size_t>(size), 0);
    bool identity = true;
    for (I64 j = 0; j < size; ++j) {
        const float v = out.values[static_cast<std::size_t>(j)];
        const I64 k = static_cast<I64>(v) - 1;
        if (v != static_cast<float>(k + 1) || k < 0 || k >= size ||
            seen[static_cast<std::size_t>(k)])
            return {};
        seen[static_cast<std::size_t>(k)] = 1;
        perm[static_cast<std::size_t>(j)] = k;
        identity = identity && k == j;
    }
    return identity ? std::vector<I64>{} : perm;
}

// An attention node's internal routes (docs/chips.md, "Attention on a mesh"). SSA and BSA form
// score row (h, n) = unit 3 N D + h N + n from query n and every key of head h: Q (n, j) goes to
// the core of row (h, n) for h = j / dh, K and V (m, j) to every core holding a row of head h, and
// row (h, n)'s dh mixed values each to the core of output neuron (n, h dh + j). SDSA's column sums
// and QKAttention's mask run over every token: their Q, K and V go to every core with score rows,
// and each score core's share of the N D mixed values to every core holding output neurons.
class AttentionRoutes {
  public:
    AttentionRoutes(const MeshLayer& l, CoreLists& lists) : l_(l), uc_(l), lists_(lists) {}
    std::vector<AttentionRoute> build() {
        using F = AttentionClosedForm;
        const AttentionShape& a = l_.shape;
        n_ = a.tokens, d_ = a.dim, h_ = a.heads, nd_ = n_ * d_, rows_ = h_ * n_;
        dh_ = h_ > 0 ? d_ / h_ : 0;
        if (l_.cores.empty() || nd_ <= 0) return {};
        const bool by_row =
            (a.closed_form == F::qkv_products || a.closed_form == F::ternary_shiftmax) && dh_ > 0 &&
            dh_ * h_ == d_;
        by_row ? per_row() : broadcast();
        return std::move(routes_);
    }

  private:
    const MeshLayer& l_;
    UnitCores uc_;
    CoreLists& lists_;
    I64 n_ = 0, d_ = 0, h_ = 0, nd_ = 0, rows_ = 0, dh_ = 0;
    std::unordered_map<std::uint64_t, std::size_t> index_;
    std::vector<AttentionRoute> routes_;

    AttentionRoute& at(I64 src, I32 list) {
        const std::uint64_t k =
            (static_cast<std::uint64_t>(src) << 32) | static_cast<std::uint32_t>(list);
        const auto [it, fresh] = index_.try_emplace(k, routes_.size());
        if (fresh) routes_.push_back({src, lists_.at(list), 0, 0, 0, 0});
        return routes_[it->second];
    }
    I32 cores(I64 a, I64 b) {
        std::vector<I64> c;
        uc_.cores_in(a, b, c);
        return lists_.intern(std::move(c));
    }
    void per_row() {
        const I64 row0 = 3 * nd_, out0 = row0 + rows_;
        std::vector<I32> head_rows(static_cast<std::size_t>(h_));
        for (I64 h = 0; h < h_; ++h)
            head_rows[static_cast<std::size_t>(h)] = cores(row0 + h * n_, row0 + (h + 1) * n_);
        for (I64 u = 0; u < nd_; ++u) {  // token u / D, channel u % D, head (u % D) / dh
            const I64 h = (u % d_) / dh_;
            at(uc_.core_of(u), cores(row0 + h * n_ + u / d_, row0 + h * n_ + u / d_ + 1)).q += 1;
            at(uc_.core_of(nd_ + u), head_rows[static_cast<std::size_t>(h)]).k += 1;
            at(uc_.core_of(2 * nd_ + u), head_rows[static_cast<std::size_t>(h)]).v += 1;
        }
        for (I64 r = 0; r < rows_; ++r) {  // row h N + n: head r / N, token r % N
            const I64 src = uc_.core_of(row0 + r), first = out0 + (r % n_) * d_ + (r / n_) * dh_;
            for (I64 j = 0; j < dh_; ++j) at(src, cores(first + j, first + j + 1)).mixed += 1;
        }
    }
    void broadcast() {
        const I64 row0 = 3 * nd_, out0 = row0 + rows_;
        const I32 score = cores(row0, out0), out = cores(out0, out0 + nd_);
        for (I64 u = 0; u < 3 * nd_; ++u) {
            AttentionRoute& r = at(uc_.core_of(u), score);
            (u < nd_ ? r.q : u < 2 * nd_ ? r.k : r.v) += 1;
        }
        if (rows_ <= 0) return;
        for (I64 r = 0; r < rows_; ++r)
            at(uc_.core_of(row0 + r), out).mixed +=
                static_cast<double>(nd_) / static_cast<double>(rows_);
    }
};

// Each source's elements keyed by the chain of core lists they reach so far; equal chains are
// one key. A source's element starts at key -1 (no target).
class TargetBuilder {
  public:
    TargetBuilder(const Graph& g, MeshPlacement& p) : g_(g), p_(p) {
        const auto n = static_cast<std::size_t>(g.size());
        layer_out_.assign(n, -1), input_of_.assign(n, -1), perm_.resize(n), probed_.assign(n, 0);
        for (std::size_t l = 0; l < p.layers.size(); ++l) {
            const int u = g.find(p.layers[l].nodes.back());
            if (u >= 0) layer_out_[static_cast<std::size_t>(u)] = static_cast<int>(l);
        }
        p.input_targets.clear();
        for (int u : g.inputs()) {
            input_of_[static_cast<std::size_t>(u)] = static_cast<int>(p.input_targets.size());
            p.input_targets.push_back({g.node(u).name(), {}, {}});
        }
        keys_in_.resize(p.input_targets.size());
        keys_layer_.resize(p.layers.size());
        for (std::size_t k = 0; k < keys_in_.size(); ++k)
            keys_in_[k].assign(static_cast<std::size_t>(g.node(g.inputs()[k]).out_size()), -1);
        for (std::size_t l = 0; l < p.layers.size(); ++l)
            keys_layer_[l].assign(static_cast<std::size_t>(out_size(static_cast<int>(l))), -1);
    }

    void run() {
        for (const MeshLayer& l : p_.layers) {
            const int head = g_.find(l.nodes.front());
            if (head < 0 || l.cores.empty()) continue;
            const Classes cls = consumer_classes(g_.node(head), l, lists_);
            for (int e : g_.in_edges(head))
                trace(g_.edges()[static_cast<std::size_t>(e)].src, {}, cls, 0);
        }
        for (MeshLayer& l : p_.layers) l.att_routes = attention_routes(l);
        for (std::size_t k = 0; k < keys_in_.size(); ++k)
            group(keys_in_[k], -1, p_.input_targets[k]);
        for (std::size_t l = 0; l < p_.layers.size(); ++l) {
            MeshLayer& L = p_.layers[l];
            L.targets.node = L.nodes.back();
            group(keys_layer_[l], static_cast<int>(l), L.targets);
        }
    }

  private:
    const Graph& g_;
    MeshPlacement& p_;
    std::vector<int> layer_out_, input_of_;  // per node: the layer it outputs, the Input index
    std::vector<std::vector<I64>> perm_;     // per rewiring node, once probed
    std::vector<char> probed_;
    std::vector<std::vector<I32>> keys_in_, keys_layer_;
    CoreLists lists_;
    std::unordered_map<std::uint64_t, I32> chain_ids_;
    std::vector<std::pair<I32, I32>> chains_;  // (previous key, core list)

    I64 out_size(int l) const {
        const int u = g_.find(p_.layers[static_cast<std::size_t>(l)].nodes.back());
        return u < 0 ? 0 : g_.node(u).out_size();
    }
    I32 chain(I32 prev, I32 list) {
        const std::uint64_t k =
            (static_cast<std::uint64_t>(prev + 1) << 32) | static_cast<std::uint32_t>(list);
        const auto [it, fresh] = chain_ids_.try_emplace(k, static_cast<I32>(chains_.size()));
        if (fresh) chains_.emplace_back(prev, list);
        return it->second;
    }
    // Follows node u's output back to the source whose elements the consumer's inputs are;
    // `map`: consumer input i is u's output map[i] (empty: i).
    void trace(int u, std::vector<I64> map, const Classes& cls, int depth);
    void attach(std::vector<I32>& keys, const std::vector<I64>& map, const Classes& cls);
    void group(const std::vector<I32>& keys, int layer, SourceRoutes& r);
    std::vector<I64> source_cores(int layer) const;
};

void TargetBuilder::trace(int u, std::vector<I64> map, const Classes& cls, int depth) {
    const auto k = static_cast<std::size_t>(u);
    if (layer_out_[k] >= 0)
        return attach(keys_layer_[static_cast<std::size_t>(layer_out_[k])], map, cls);
    if (input_of_[k] >= 0)
        return attach(keys_in_[static_cast<std::size_t>(input_of_[k])], map, cls);
    if (depth > 64) return;
    if (!probed_[k]) perm_[k] = rewire_permutation(g_.node(u)), probed_[k] = 1;
    const std::vector<I64>& perm = perm_[k];
    if (!perm.empty()) {
        if (map.empty()) {
            map = perm;
        } else {
            for (I64& m : map)
                m = m >= 0 && m < static_cast<I64>(perm.size()) ? perm[static_cast<std::size_t>(m)]
                                                                : -1;
        }
    }
    for (int e : g_.in_edges(u))
        trace(g_.edges()[static_cast<std::size_t>(e)].src, map, cls, depth + 1);
}

void TargetBuilder::attach(std::vector<I32>& keys, const std::vector<I64>& map,
                           const Classes& cls) {
    const auto n = static_cast<I64>(keys.size());
    for (std::size_t i = 0; i < cls.size(); ++i) {
        if (cls[i] < 0) continue;
        const I64 e = map.empty() ? static_cast<I64>(i) : map[i];
        if (e < 0 || e >= n) continue;
        I32& key = keys[static_cast<std::size_t>(e)];
        key = chain(key, cls[i]);
    }
}

// The core each output element of layer `layer` leaves from: its unit, in the order the layer
// was packed (a convolution's position by position, an attention's after Q, K, V and the score
// rows), on the core holding that unit.
std::vector<I64> TargetBuilder::source_cores(int layer) const {
    const MeshLayer& l = p_.layers[static_cast<std::size_t>(layer)];
    const UnitCores uc(l);
    const I64 n = out_size(layer);
    std::vector<I64> core(static_cast<std::size_t>(n), -1);
    if (uc.core.empty()) return core;
    I64 offset = 0;
    std::function<I64(I64)> unit = [&](I64 e) { return e + offset; };
    if (l.kind == "attention")
        offset = 3 * l.shape.tokens * l.shape.dim + l.shape.heads * l.shape.tokens;
    const Node& head = g_.node(g_.find(l.nodes.front()));
    ConvShape c;
    if (l.kind == "synapses" && head.connection_nonzeros().per_output.empty()) {
        c = conv_shape(head, head.geometry());
        const I64 hw = c.oh * c.ow;
        unit = [&c, hw](I64 e) { return c.unit(e / hw, e % hw); };
    }
    for (I64 e = 0; e < n; ++e) core[static_cast<std::size_t>(e)] = uc.core_of(unit(e));
    return core;
}

// Route groups of one source: elements with the same source core and the same chain of core
// lists; each group's destinations the union of its chain's lists.
void TargetBuilder::group(const std::vector<I32>& keys, int layer, SourceRoutes& r) {
    const std::vector<I64> src = layer >= 0 ? source_cores(layer) : std::vector<I64>{};
    std::unordered_map<std::uint64_t, I32> ids;
    std::vector<I32> chain_of;
    r.group.assign(keys.size(), 0);
    r.groups.clear();
    for (std::size_t e = 0; e < keys.size(); ++e) {
        const I64 s = src.empty() ? -1 : src[e];
        const std::uint64_t k =
            (static_cast<std::uint64_t>(s + 1) << 32) | static_cast<std::uint32_t>(keys[e] + 1);
        const auto [it, fresh] = ids.try_emplace(k, static_cast<I32>(r.groups.size()));
        if (fresh) {
            r.groups.push_back({s, {}, 0});
            chain_of.push_back(keys[e]);
        }
        r.group[e] = it->second;
        ++r.groups[static_cast<std::size_t>(it->second)].elements;
    }
    for (std::size_t gi = 0; gi < r.groups.size(); ++gi) {
        std::vector<I64>& d = r.groups[gi].dst;
        for (I32 k = chain_of[gi]; k >= 0; k = chains_[static_cast<std::size_t>(k)].first) {
            const std::vector<I64>& l = lists_.at(chains_[static_cast<std::size_t>(k)].second);
            d.insert(d.end(), l.begin(), l.end());
        }
        std::sort(d.begin(), d.end());
        d.erase(std::unique(d.begin(), d.end()), d.end());
    }
}

}  // namespace

std::vector<AttentionRoute> attention_routes(const MeshLayer& l) {
    if (l.kind != "attention") return {};
    CoreLists lists;
    return AttentionRoutes(l, lists).build();
}

void build_targets(const Graph& g, MeshPlacement& p) {
    TargetBuilder(g, p).run();
}

}  // namespace ternion::chip
