// Records what a run produced (spikes, membrane potentials) and writes it as HDF5 in NIR's
// NIRGraphData layout: /nodes/<name>/observables/<obs>/data [samples, T, neurons] with
// attribute dt. Memory is reserved before the run and bounded by a byte budget.
#pragma once
#include <set>
#include <string>
#include <vector>

#include "engine.hpp"

namespace ternion {

struct TraceOptions {
    bool spikes = true;
    bool membrane = false;
    std::vector<std::string> nodes;  // empty: every spiking node
    std::uint64_t max_bytes = std::uint64_t{2} << 30;
    double dt = 1e-3;
};

class TraceRecorder final : public StepObserver {
  public:
    // Chooses the nodes, estimates the size and refuses (OptionError) above the budget.
    TraceRecorder(const Graph& g, const TraceOptions& o, std::int64_t first_sample,
                  std::int64_t samples, std::int64_t timesteps);
    std::uint64_t estimated_bytes() const { return bytes_; }
    bool wants(int node) const override;
    void on_step(std::int64_t sample, std::int64_t step, int node, const Node& n,
                 const Activity& out, const NodeState* state, const OpCounts& ops) override;
    // Writes the file atomically; `meta` goes to /ternion/metadata as string attributes.
    void write(const std::string& path,
               const std::vector<std::pair<std::string, std::string>>& meta) const;

  private:
    struct Rec {
        int node = -1;
        std::int64_t n = 0;
        std::vector<std::int8_t> spikes;
        std::vector<float> membrane;
    };
    const Graph& g_;
    TraceOptions o_;
    std::int64_t first_, samples_, T_;
    std::vector<int> slot_;  // node -> index in recs_, or -1
    std::vector<Rec> recs_;
    std::uint64_t bytes_ = 0;
};

}  // namespace ternion
