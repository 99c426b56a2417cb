// One run of a model, from files or the caller's arrays to a priced report:
//   load → check → simulate → price → record/trace → report.
// `ternion run`, the C++ API (examples/run_model.cpp), the Python bindings and the tests all go
// through it, so every front end gives the same spikes, counts and energy. Every check that can
// fail on user input happens when the Pipeline is built, before anything is simulated.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hw/chip/chip.hpp"
#include "hw/chip/spike_counts.hpp"
#include "hw/cost_model.hpp"
#include "models/inputs/inputs.hpp"
#include "models/nir_loader.hpp"
#include "sim/core/layer_record.hpp"
#include "sim/io/trace.hpp"

namespace ternion {

// A model loaded once and run many times (the bindings' `ternion.load`).
struct LoadedModel {
    std::string path;
    std::unique_ptr<Graph> graph;
    LoadReport report;
    std::int64_t timesteps = 0;  // /node/metadata/timesteps, 0 when absent
    std::string encoding;        // /node/metadata/encoding, empty when absent
    double load_s = 0.0;
};
std::shared_ptr<const LoadedModel> load_model_file(const std::string& path,
                                                   const UserLoadOptions& options);
// A graph built in memory (GraphBuilder, models/graph_builder.hpp) as a runnable model; `name`
// stands for the file in reports and errors, `report` says which options it was built with
// (resolve_load_options), `timesteps` and `encoding` are what a file's metadata would suggest.
std::shared_ptr<const LoadedModel> adopt_model(std::unique_ptr<Graph> graph, std::string name,
                                               const LoadOptions& used = {});
std::shared_ptr<const LoadedModel> adopt_model(std::unique_ptr<Graph> graph, std::string name,
                                               LoadReport report, std::int64_t timesteps,
                                               std::string encoding);

// The caller's arrays as the input: spikes int8 [samples, T, ...] in {-1, 0, 1}, analog
// float32 [samples, ...] encoded per step, or float32 frames [samples, T, ...] (`frames`).
// Read in place while `owner` lives (frames: the run's samples are copied).
struct ArrayInput {
    Shape dims;
    const std::int8_t* spikes = nullptr;
    const float* data = nullptr;
    bool frames = false;  // `data` is float32 frames [samples, T, ...], replayed per step
    std::shared_ptr<const void> owner;
    std::vector<std::int64_t> labels;  // empty, or one class per sample
    std::string name = "<arrays>";     // what errors call the input
    std::string node;                  // RunRequest::node_arrays: the Input node it feeds
};

struct RunRequest {
    std::string model;                 // model file, unless a LoadedModel is given
    std::string input;                 // input file, unless `arrays` is set
    std::optional<ArrayInput> arrays;  // the caller's arrays instead of a file
    // Or one array per Input node (each naming its node), for models with several; the labels
    // are those of the first Input node's array.
    std::vector<ArrayInput> node_arrays;
    std::string labels;  // IDX images: their labels file (default: the sibling labels file)
    UserLoadOptions load;
    std::optional<Encoding> encoding;  // analog inputs; default: model metadata, else direct
    NodeEncodings node_encodings;      // per Input node, over `encoding` (--encoding a=kind)
    // `encoding` and `node_encodings` from --encoding's values ("kind", "node=kind").
    void set_encodings(const std::vector<std::string>& values) {
        const auto e = parse_encodings(values);
        encoding = e.all;
        node_encodings = e.nodes;
    }
    std::optional<std::int64_t> timesteps;  // default: the spike data's T, else model metadata
    Layout layout = Layout::automatic;      // axis order of a spike file (--layout)
    Engine engine = Engine::event;
    int threads = 1;
    std::uint64_t seed = 0;
    std::int64_t first_sample = 0;
    std::int64_t samples = -1;  // -1: from first_sample to the end
    bool progress = false;
    bool count_ops = true;
    bool time_nodes = false;  // measure each node's share of the simulation (--node-times)
    // RunConfig::cancel: set from another thread to stop the run (Python's Ctrl-C).
    const std::atomic<bool>* cancel = nullptr;
    std::string profile = hw::kDefaultProfile;  // a profile name or a JSON file
    // --arith fixed: run the integer model `ternion quantize` makes of `model` with `profile`
    // (its number formats), instead of the float model.
    bool fixed_point = false;
    hw::PriceOptions pricing;
    std::optional<TraceOptions> record;  // observables kept in memory (and traced)
    std::string trace_path;              // write them here (needs `record`)
    std::uint64_t max_memory = 0;        // 0: default_memory_limit()
    std::string command_line;            // trace metadata: how the run was asked for
    // --chip: place the model on this chip (a name or a JSON file) before the run, refusing a
    // model that does not fit, and price the run's own activity on it (hw/chip/chip.hpp).
    std::string chip;
    // One process of a run split across `parts` (sim/dist/distributed.hpp, `mpirun -n K ternion
    // run`): it reads only its shard of the input file (InputOptions::part), and its recording
    // holds only its shard's rows, except part 0's, which holds every row to receive the
    // others'. Everything else is checked for the whole run, as by one process.
    int part = 0, parts = 1;
};

struct RunReport {
    std::string model, input;
    int nodes = 0;
    Engine engine = Engine::event;
    int threads = 1;
    std::int64_t timesteps = 0, first_sample = 0;
    std::uint64_t seed = 0;
    Encoding encoding = Encoding::direct;
    std::string input_kind;  // "replayed spikes (samples-first)", "direct encoding", ...
    // Per Input node (graph order): "direct", "poisson", "latency" or "spikes".
    std::vector<std::pair<std::string, std::string>> input_encodings;
    LoadReport load;  // with the notes on the input appended
    RunResult result;
    RunRecord record;
    OpCounts total;
    std::uint64_t ann_mac = 0;  // ANN-equivalent MACs of one inference
    std::optional<double> accuracy;
    std::int64_t correct = 0;
    hw::CostReport cost;
    double load_s = 0.0, price_s = 0.0;
    std::string trace_path;
    std::uint64_t trace_bytes = 0;
    // --chip: the placement with the run's activity, and the chip it is on.
    std::optional<chip::Placement> chip;
    std::shared_ptr<const chip::Chip> chip_desc;
};

class Pipeline {
  public:
    // Loads the model and the input and checks everything a run needs (options, shapes,
    // labels, profile, output paths, memory); throws ternion::Error naming the file or option.
    explicit Pipeline(RunRequest request);
    Pipeline(RunRequest request, std::shared_ptr<const LoadedModel> model);
    ~Pipeline();
    Pipeline(const Pipeline&) = delete;
    Pipeline& operator=(const Pipeline&) = delete;

    const Graph& graph() const { return *model_->graph; }
    const std::shared_ptr<const LoadedModel>& model() const { return model_; }
    const RunRequest& request() const { return req_; }
    const InputSource& source() const { return *srcs_[0]; }  // the first Input node's
    // One per Input node, in the graph's order (Graph::inputs).
    const std::vector<std::shared_ptr<const InputSource>>& sources() const { return srcs_; }
    std::int64_t timesteps() const { return T_; }
    std::int64_t samples() const { return samples_; }  // samples this run covers
    // The engine configuration of the whole run (a distributed run narrows its sample range).
    RunConfig config() const;
    // The recording, when one was requested (holds every observable of the run).
    TraceRecorder* recorder() const { return recorder_.get(); }

    // The stages; run() is finish(simulate(config())).
    RunResult simulate(const RunConfig& cfg) const;
    RunReport finish(RunResult result) const;
    RunReport run() const { return finish(simulate(config())); }

  private:
    void open_source();
    std::vector<std::unique_ptr<InputSource>> open_sources(const InputOptions& io) const;
    void check_range();
    void check_memory() const;
    void check_limit(double estimate, const std::string& what) const;
    void write_trace(const RunReport& r) const;
    chip::MapOptions map_options() const;

    RunRequest req_;
    std::shared_ptr<const LoadedModel> model_;
    std::vector<std::shared_ptr<const InputSource>> srcs_;
    hw::Profile profile_;
    std::shared_ptr<const chip::Chip> chip_;  // --chip
    // A mesh chip: the placement made before the run (priced again with the run's activity), and
    // the per-element spike counts of the latest run configured (config()), whose spikes it routes.
    std::optional<chip::Placement> placed_;
    mutable std::shared_ptr<chip::ElementSpikeTally> spike_tally_;
    std::unique_ptr<TraceRecorder> recorder_;
    Encoding encoding_ = Encoding::direct;
    std::int64_t T_ = 0, samples_ = 0;
    double open_s_ = 0.0;                   // opening and checking the input
    std::vector<std::string> input_notes_;  // e.g. a spike file's T against the model's
};

const char* engine_name(Engine e);
Engine parse_engine(const std::string& s);  // throws OptionError("engine")

// The report as `ternion run --json` prints it, and as the text tables.
nlohmann::json report_json(const RunReport& r);
std::string report_text(const RunReport& r);

}  // namespace ternion
