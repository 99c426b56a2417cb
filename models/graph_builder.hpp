// Builds a Graph from parameter sets held in memory, the way load_model builds one from a file:
// every node through the factory (so the same validation and error messages apply), then the
// edges, then finalize (cycle detection, shape binding). For tests, benchmarks and bindings that
// describe small models without writing an HDF5 file.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "models/nir_loader.hpp"

namespace ternion {

class GraphBuilder {
  public:
    explicit GraphBuilder(LoadOptions opts = {}, const NodeFactory& factory = default_factory())
        : opts_(std::move(opts)), factory_(factory), graph_(std::make_unique<Graph>()) {}

    // `params` is read during the call only: nodes keep copies of what they need.
    GraphBuilder& node(const std::string& name, const std::string& type,
                       const ParamSource& params) {
        const NodeSpec spec(params, name, type, opts_);
        graph_->add_node(factory_.build(spec));
        for (auto& p : ignored_params(spec)) ignored_.push_back(std::move(p));
        if (graph_->origin().empty()) graph_->set_origin(params.origin());
        return *this;
    }
    GraphBuilder& edge(const std::string& src, const std::string& dst) {
        graph_->add_edge(src, dst);
        return *this;
    }
    // Parameters ignored under LoadOptions::ignore_unknown_params, as nodes/<node>/<param>.
    const std::vector<std::string>& ignored() const { return ignored_; }
    // Finalizes and hands over the graph; the builder is empty afterwards.
    std::unique_ptr<Graph> finish() {
        graph_->finalize();
        return std::move(graph_);
    }

  private:
    LoadOptions opts_;
    const NodeFactory& factory_;
    std::unique_ptr<Graph> graph_;
    std::vector<std::string> ignored_;
};

}  // namespace ternion
