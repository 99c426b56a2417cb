// Records what a run produced and writes it as HDF5 in NIR's NIRGraphData layout plus
// ternion's own groups (docs/traces.md is the precise layout):
//   /nodes/<name>/observables/spikes  ValuedEventData (idx, time, value) or TimeGriddedData
//   /nodes/<name>/observables/v       TimeGriddedData membrane potentials
//   /ternion/ops, /ternion/energy     operation counts and energy per node per step
//   /ternion/attention                attention maps of chosen nodes, samples and steps
//   /ternion/metadata                 how the run was made (attributes)
// Everything is held in memory reserved before the run, so its size is known up front and
// bounded by a byte budget; the file is written after the run, atomically.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sim/core/engine.hpp"

namespace ternion {

enum class SpikeFormat { events, grid };

struct TraceOptions {
    bool spikes = true;
    bool membrane = false;
    bool ops = false;
    bool energy = false;
    bool attention = false;
    SpikeFormat spike_format = SpikeFormat::events;
    // Empty: spikes and membrane of every spiking node, ops and energy of every node,
    // attention of every attention node. Otherwise each observable for the listed nodes that
    // have it.
    std::vector<std::string> nodes;
    std::vector<std::int64_t> samples;  // global sample indices; empty: all of the run
    std::vector<std::int64_t> steps;    // attention steps; empty: all
    std::uint64_t max_bytes = std::uint64_t{2} << 30;
    double dt = 1e-3;
    // pJ per counted unit of each OpCounts kind (field order), NaN when the profile does not
    // price it; needed for energy.
    std::vector<double> unit_pj;
};

// What the cost model said about one node (totals over all samples, under the count mode).
struct TraceNodeCost {
    std::string name;
    std::vector<double> energy_pj;  // per kind, field order
    double ann_pj_per_inference = 0.0, ann_macs_per_inference = 0.0;
};
struct TraceCost {
    std::string profile, count_mode;
    double per_inference_pj = 0.0, ann_pj_per_inference = 0.0;
    std::vector<TraceNodeCost> nodes;
    // --chip on a mesh chip: its name and the energy band per inference, cumulative (pJ: op
    // count, + memory, + routing, + static), in total and per mesh layer ([layers][4]).
    std::string chip;
    std::vector<double> chip_band_pj;
    std::vector<std::string> chip_layers;
    std::vector<double> chip_layer_band_pj;
};

// Sets the observables named in `words` (spikes, membrane, ops, energy, attention, all) and
// clears the others; throws OptionError("record") on an unknown word.
void set_observables(TraceOptions& o, const std::vector<std::string>& words);
// Sets o.spike_format from "events" or "grid" (any other word: OptionError spike-format). The
// one reader of the word for the CLI's --spike-format and Python's spike_format.
void set_spike_format(TraceOptions& o, const std::string& word);

// Parses "0,3,10-19" into sorted unique indices; throws OptionError(option) on bad text and on
// more than 1 000 000 indices in all.
std::vector<std::int64_t> parse_index_list(const std::string& text, const std::string& option);

// A contiguous range of global sample indices; count -1: to the end of the run.
struct SampleRange {
    std::int64_t first = 0, count = -1;
};

// One array of recorded rows (one row per recorded sample, in ascending sample order).
struct TraceRows {
    void* data = nullptr;       // the first held row
    std::size_t row_bytes = 0;  // bytes of one row
};

class TraceRecorder final : public StepObserver {
  public:
    // Chooses the nodes, estimates the size and refuses (OptionError) above the budget.
    // `held`: the samples this recorder keeps rows for (default: all of the run), e.g. one
    // process's share of a run split across processes; options are still checked, and the
    // size estimated, for the whole run.
    TraceRecorder(const Graph& g, const TraceOptions& o, std::int64_t first_sample,
                  std::int64_t samples, std::int64_t timesteps, SampleRange held = {});
    // Bytes the whole run's trace takes in memory; also the uncompressed size of the grid
    // datasets.
    std::uint64_t estimated_bytes() const { return bytes_; }
    // Rows [first, second) of the recorded samples that this recorder holds.
    std::pair<std::int64_t, std::int64_t> held_rows() const { return {row0_, row0_ + rows_}; }
    std::int64_t recorded_samples() const { return static_cast<std::int64_t>(sample_ids_.size()); }
    // Every buffer of held rows, in a fixed order (the same for the same graph and options).
    std::vector<TraceRows> row_buffers();
    bool wants(int node) const override;
    bool wants_attention(int node, std::int64_t sample, std::int64_t step) const override;
    void on_step(std::int64_t sample, std::int64_t step, int node, const Node& n,
                 const Activity& out, const NodeState* state, const OpCounts& ops) override;
    // Writes the file atomically; `meta` goes to /ternion/metadata as string attributes.
    void write(const std::string& path,
               const std::vector<std::pair<std::string, std::string>>& meta,
               const TraceCost* cost = nullptr) const;

    // What the recording holds, read from memory (the C++ API, the bindings). Rows are the
    // recorded samples in order of sample_ids(); each row holds T steps of width(node) values.
    std::vector<std::string> recorded_nodes() const;
    std::int64_t width(const std::string& node) const;  // 0 when not recorded
    const std::vector<std::int8_t>* spike_grid(const std::string& node) const;  // or null
    const std::vector<float>* membrane(const std::string& node) const;          // or null
    const std::vector<std::int64_t>& sample_ids() const { return sample_ids_; }

  private:
    struct Rec {
        int node = -1;
        std::int64_t n = 0;
        bool spikes = false, membrane = false, ops = false, attention = false;
        std::vector<std::int8_t> spike_grid;  // [S, T, n]
        std::vector<float> v;                 // [S, T, n]
        std::vector<std::uint64_t> counts;    // [S, T, kinds]
        std::int64_t heads = 0, rows = 0, cols = 0;
        std::vector<float> scores, weights;  // [S, steps, heads, rows, cols]
        std::vector<std::int8_t> have;       // [S, steps]: maps were delivered
    };
    // The constructor's stages: which samples (and which of them this process holds), which
    // steps keep attention maps, which nodes record what, and the trace's size against the limit.
    void select_samples(std::int64_t first, std::int64_t samples, SampleRange held);
    void select_steps(std::int64_t T);
    std::vector<Rec> select_records() const;
    void check_size(const std::vector<Rec>& chosen);
    std::int64_t row_of(std::int64_t sample) const;
    const Rec* rec_of(const std::string& node) const;
    std::int64_t step_slot(std::int64_t step) const;

    const Graph& g_;
    TraceOptions o_;
    std::int64_t first_, samples_, T_;
    std::int64_t row0_ = 0, rows_ = 0;       // held rows
    std::vector<std::int64_t> sample_rows_;  // global sample - first -> row, or -1
    std::vector<std::int64_t> sample_ids_;   // row -> global sample
    std::vector<std::int64_t> step_slots_;   // step -> attention slot, or -1
    std::vector<std::int64_t> step_ids_;
    std::vector<int> slot_;  // node -> index in recs_, or -1
    std::vector<Rec> recs_;
    std::uint64_t bytes_ = 0;
};

}  // namespace ternion
