// Counts, during a run (`ternion run --chip` on a mesh chip), how often each output element of
// the nodes whose spikes a mesh placement routes was non-zero, so that each spike goes to the
// cores of its own targets (hw/chip/targets.cpp) rather than at a layer's mean rate. A StepTally
// with no slots: each worker thread keeps its own integer counts per node, summed after the run,
// so the totals do not depend on threads, engines or the order of samples.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/core/graph.hpp"
#include "sim/core/step_tally.hpp"

namespace ternion::chip {

class ElementSpikeTally final : public StepTally {
  public:
    // `nodes`: the names of the nodes whose output elements are counted. Input nodes take no
    // tally of their own: their activity is counted as the summed input of a node fed by that
    // Input alone (without delay); an Input without such a node is not counted.
    ElementSpikeTally(const Graph& g, const std::vector<std::string>& nodes);
    std::string_view name() const override { return "chip_element_spikes"; }
    int slots() const override { return 0; }
    std::unique_ptr<Scratch> make_scratch() const override;
    void tally(const Node& node, const Activity& in, const Activity& out, const NodeState* state,
               std::int64_t step, Scratch* scratch, double* slots) const override;
    // Per counted node name: the times each output element was non-zero over every sample and
    // step the tally saw.
    std::map<std::string, std::vector<std::uint64_t>> totals() const;

  private:
    struct Counts;
    struct Role {
        int out = -1, in = -1;  // index among the counted nodes of its output, of its input
    };
    std::unordered_map<const Node*, Role> roles_;
    std::vector<std::string> names_;
    std::vector<std::int64_t> sizes_;
    mutable std::mutex mu_;
    mutable std::vector<std::shared_ptr<Counts>> all_;
};

}  // namespace ternion::chip
