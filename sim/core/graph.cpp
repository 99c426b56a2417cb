#include "sim/core/graph.hpp"

#include <algorithm>
#include <functional>
#include <iterator>
#include <map>

namespace ternion {

const char* category_name(NodeCategory c) {
    // In NodeCategory's order.
    static constexpr const char* names[] = {"input",     "output",  "synaptic", "neuron",
                                            "attention", "readout", "other"};
    static_assert(std::size(names) == static_cast<std::size_t>(NodeCategory::other) + 1);
    const auto k = static_cast<std::size_t>(c);
    return k < std::size(names) ? names[k] : "other";
}

int Graph::add_node(std::unique_ptr<Node> node) {
    if (find(node->name()) >= 0)
        throw InputError(origin_, "nodes/" + node->name(), "duplicate node name");
    nodes_.push_back(std::move(node));
    return size() - 1;
}

int Graph::find(const std::string& name) const {
    for (int i = 0; i < size(); ++i)
        if (nodes_[static_cast<std::size_t>(i)]->name() == name) return i;
    return -1;
}

void Graph::add_edge(const std::string& src, const std::string& dst) {
    int s = find(src), d = find(dst);
    if (s < 0) throw InputError(origin_, "edges", "edge source '" + src + "' is not a node");
    if (d < 0) throw InputError(origin_, "edges", "edge target '" + dst + "' is not a node");
    for (const auto& e : edges_)
        if (e.src == s && e.dst == d)
            throw InputError(
                origin_, "edges",
                "duplicate edge '" + src + "' -> '" + dst + "' (would double its input)");
    edges_.push_back({s, d, false});
}

// A recurrent weight layer (snnTorch's RLeaky, Norse's recurrent cells) applies its weights at
// step t to the spikes of step t - 1. When the DFS put the delay on such a layer's output, move
// it to the layer's input: the values reaching its target are the same (W s(t-1) + b, with
// s(-1) = 0), but the layer then sees, and counts, the previous step's spikes, so the last
// step's spikes are never charged to a product nobody uses (as NeuroBench counts it).
void Graph::move_delays_before_connections(const std::vector<std::vector<int>>& out_edges) {
    for (auto& back : edges_) {
        if (!back.delayed) continue;
        const int u = back.src;
        const Node& layer = *nodes_[static_cast<std::size_t>(u)];
        const auto& ins = in_edges_[static_cast<std::size_t>(u)];
        if (layer.category() != NodeCategory::synaptic || ins.size() != 1 ||
            out_edges[static_cast<std::size_t>(u)].size() != 1 || layer.declared_in_shape().empty())
            continue;
        Edge& feed = edges_[static_cast<std::size_t>(ins[0])];
        if (feed.delayed) continue;
        feed.delayed = true;
        back.delayed = false;
    }
}

void Graph::finalize() {
    const int n = size();
    if (n == 0) throw InputError(origin_, "nodes", "the graph has no nodes");
    in_edges_.assign(static_cast<std::size_t>(n), {});
    std::vector<std::vector<int>> out_edges(static_cast<std::size_t>(n));
    for (int e = 0; e < static_cast<int>(edges_.size()); ++e) {
        in_edges_[static_cast<std::size_t>(edges_[static_cast<std::size_t>(e)].dst)].push_back(e);
        out_edges[static_cast<std::size_t>(edges_[static_cast<std::size_t>(e)].src)].push_back(e);
    }
    inputs_.clear();
    outputs_.clear();
    for (int i = 0; i < n; ++i) {
        auto cat = nodes_[static_cast<std::size_t>(i)]->category();
        if (cat == NodeCategory::input) inputs_.push_back(i);
        if (cat == NodeCategory::output) outputs_.push_back(i);
    }
    if (inputs_.empty()) throw InputError(origin_, "nodes", "the graph has no Input node");
    if (outputs_.empty()) throw InputError(origin_, "nodes", "the graph has no Output node");
    for (int i : inputs_)
        if (!in_edges_[static_cast<std::size_t>(i)].empty())
            throw InputError(origin_, "edges",
                             "Input node '" + nodes_[static_cast<std::size_t>(i)]->name() +
                                 "' has incoming edges");
    order_nodes(out_edges);
    bind_shapes();
}

void Graph::order_nodes(const std::vector<std::vector<int>>& out_edges) {
    const int n = size();
    // DFS from the inputs (then any unvisited node) marks back edges as delayed.
    std::vector<int> state(static_cast<std::size_t>(n), 0);  // 0 new, 1 on stack, 2 done
    std::function<void(int)> dfs = [&](int u) {
        state[static_cast<std::size_t>(u)] = 1;
        for (int e : out_edges[static_cast<std::size_t>(u)]) {
            Edge& ed = edges_[static_cast<std::size_t>(e)];
            int v = ed.dst;
            if (state[static_cast<std::size_t>(v)] == 1)
                ed.delayed = ed.closes_cycle = true;
            else if (state[static_cast<std::size_t>(v)] == 0)
                dfs(v);
        }
        state[static_cast<std::size_t>(u)] = 2;
    };
    for (int i : inputs_)
        if (state[static_cast<std::size_t>(i)] == 0) dfs(i);
    for (int i = 0; i < n; ++i)
        if (state[static_cast<std::size_t>(i)] == 0) dfs(i);
    move_delays_before_connections(out_edges);

    // Kahn's algorithm over the undelayed edges; ties broken by file order.
    std::vector<int> indeg(static_cast<std::size_t>(n), 0);
    for (auto& e : edges_)
        if (!e.delayed) ++indeg[static_cast<std::size_t>(e.dst)];
    order_.clear();
    std::vector<int> ready;
    for (int i = 0; i < n; ++i)
        if (indeg[static_cast<std::size_t>(i)] == 0) ready.push_back(i);
    while (!ready.empty()) {
        auto it = std::min_element(ready.begin(), ready.end());
        int u = *it;
        ready.erase(it);
        order_.push_back(u);
        for (int e : out_edges[static_cast<std::size_t>(u)]) {
            auto& ed = edges_[static_cast<std::size_t>(e)];
            if (ed.delayed) continue;
            if (--indeg[static_cast<std::size_t>(ed.dst)] == 0) ready.push_back(ed.dst);
        }
    }
    if (static_cast<int>(order_.size()) != n)
        throw InputError(origin_, "edges", "internal cycle ordering failed");

    delayed_sources_.clear();
    for (auto& e : edges_)
        if (e.delayed && std::find(delayed_sources_.begin(), delayed_sources_.end(), e.src) ==
                             delayed_sources_.end())
            delayed_sources_.push_back(e.src);
}

void Graph::bind_shapes() {
    const int n = size();
    // Bind shapes in order. A delayed edge's source may not be bound yet: take its declared
    // input shape is not enough, so bind the sources of delayed edges from their declared shape.
    std::vector<bool> bound(static_cast<std::size_t>(n), false);
    auto bind_node = [&](int u) {
        Node& nd = *nodes_[static_cast<std::size_t>(u)];
        Shape in;
        const auto& ins = in_edges_[static_cast<std::size_t>(u)];
        if (nd.category() == NodeCategory::input) {
            nd.bind({});
            bound[static_cast<std::size_t>(u)] = true;
            return;
        }
        if (ins.empty())
            throw InputError(origin_, "nodes/" + nd.name(), "node has no incoming edge");
        bool have = false;
        for (int e : ins) {
            const Edge& ed = edges_[static_cast<std::size_t>(e)];
            const Node& src = *nodes_[static_cast<std::size_t>(ed.src)];
            if (!bound[static_cast<std::size_t>(ed.src)]) continue;  // delayed, bound later
            if (!have) {
                in = src.out_shape();
                have = true;
            } else if (numel(src.out_shape()) != numel(in)) {
                throw InputError(origin_, "edges",
                                 "inputs summed into '" + nd.name() +
                                     "' differ in size: " + shape_str(in) + " vs " +
                                     shape_str(src.out_shape()) + " from '" + src.name() + "'");
            }
        }
        if (!have) in = nd.declared_in_shape();
        if (!have && in.empty())
            throw InputError(origin_, "nodes/" + nd.name(),
                             "cannot infer the input shape (only delayed inputs)");
        nd.bind(in);
        bound[static_cast<std::size_t>(u)] = true;
    };
    for (int u : order_) bind_node(u);
    // Check delayed edges now that every node is bound.
    for (auto& e : edges_) {
        if (!e.delayed) continue;
        const Node& s = *nodes_[static_cast<std::size_t>(e.src)];
        const Node& d = *nodes_[static_cast<std::size_t>(e.dst)];
        if (s.out_size() != d.in_size())
            throw InputError(origin_, "edges",
                             "recurrent edge '" + s.name() + "' -> '" + d.name() +
                                 "' size mismatch: " + shape_str(s.out_shape()) + " vs " +
                                 shape_str(d.in_shape()));
    }
}

}  // namespace ternion
