// A per-node measurement a run takes at every step beyond the operation counts, for whoever
// asked for it (a counting convention in hw/conventions/ attaches its own through
// RunConfig::tallies): after each node's step it reads the node's summed input, its output and
// its state, and adds to the node's slots. Slots are summed over the steps of a sample, then over
// samples in sample order (and merged across processes in that order), so tallies do not depend
// on threads, engines or processes. The engine knows no tally by name.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "sim/core/node.hpp"

namespace ternion {

// Slots per node, over all the tallies of one run.
inline constexpr int kTallySlots = 8;
using TallySlots = std::array<double, kTallySlots>;

class StepTally {
  public:
    virtual ~StepTally() = default;
    virtual std::string_view name() const = 0;
    // How many of the node's slots this tally adds to.
    virtual int slots() const = 0;
    // What a tally keeps between the steps of one node (e.g. the previous step's membranes),
    // one per worker thread and node; null when it keeps nothing.
    struct Scratch {
        virtual ~Scratch() = default;
    };
    virtual std::unique_ptr<Scratch> make_scratch() const { return nullptr; }
    // One node's step `step` (0 at each sample's start): `in` the node's summed input, `out` its
    // output, `state` after the step; adds to slots[0 .. slots()).
    virtual void tally(const Node& node, const Activity& in, const Activity& out,
                       const NodeState* state, std::int64_t step, Scratch* scratch,
                       double* slots) const = 0;
};

// The first slot of tally `t` in a run that took `tallies` (in that order, each after the
// previous one's slots); -1 when it did not take it.
inline int slot_offset(const std::vector<const StepTally*>& tallies, const StepTally& t) {
    int offset = 0;
    for (const StepTally* u : tallies) {
        if (u == &t) return offset;
        offset += u->slots();
    }
    return -1;
}

}  // namespace ternion
