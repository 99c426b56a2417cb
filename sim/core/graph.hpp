// A model: named nodes and edges. Edges into a node are summed; an edge that closes a cycle
// (found by depth-first search from the Input nodes, in file order) is delayed by one step; a
// recurrent weight layer gets the delay on its input instead (see graph.cpp).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "sim/core/node.hpp"

namespace ternion {

struct Edge {
    int src = -1;
    int dst = -1;
    bool delayed = false;  // carries the source's output of the previous step
    // The DFS found this edge closing a cycle (a recurrent input). Stays set when the delay
    // moves to a weight layer's input: it tells which input of a neuron is the recurrent one.
    bool closes_cycle = false;
};

class Graph {
  public:
    int add_node(std::unique_ptr<Node> node);
    void add_edge(const std::string& src, const std::string& dst);
    // Detects cycles, orders the nodes, binds shapes. Throws InputError on bad structure.
    void finalize();

    int find(const std::string& name) const;  // -1 when absent
    const Node& node(int i) const { return *nodes_[static_cast<std::size_t>(i)]; }
    int size() const { return static_cast<int>(nodes_.size()); }
    const std::vector<Edge>& edges() const { return edges_; }
    const std::vector<int>& order() const { return order_; }  // evaluation order
    const std::vector<int>& inputs() const { return inputs_; }
    const std::vector<int>& outputs() const { return outputs_; }
    // Incoming edges of node i, in file order.
    const std::vector<int>& in_edges(int i) const { return in_edges_[static_cast<std::size_t>(i)]; }
    // Nodes whose output must be kept for the next step (sources of delayed edges).
    const std::vector<int>& delayed_sources() const { return delayed_sources_; }

    void set_origin(std::string f) { origin_ = std::move(f); }
    const std::string& origin() const { return origin_; }

  private:
    void move_delays_before_connections(const std::vector<std::vector<int>>& out_edges);
    // The stages of finalize(): back edges delayed and the run order, then every node bound.
    void order_nodes(const std::vector<std::vector<int>>& out_edges);
    void bind_shapes();

    std::vector<std::unique_ptr<Node>> nodes_;
    std::vector<Edge> edges_;
    std::vector<std::vector<int>> in_edges_;
    std::vector<int> order_, inputs_, outputs_, delayed_sources_;
    std::string origin_;
};

}  // namespace ternion
