// Chips as data and networks placed on them. A chip description (hw/chips/*.json, found like the
// hardware profiles) lists the cores with their memories and the limits of a layer, each with
// its source; `map_model` places a model's layers on the cores under those limits and reports
// every layer's memory needs, its core, and, when it does not fit, the limit it breaks.
// Families: DYNAP-CNN (sinabs-dynapcnn's memory rules and core assignment), Xylo (Rockpool's
// limits, design rules and cycle model) and mesh (Loihi-like and generic neuro-core meshes:
// packing, XY routing, latency and the energy band, mesh.hpp); docs/chips.md describes the rules
// and the file format.
#pragma once
#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "hw/chip/mesh.hpp"
#include "sim/core/graph.hpp"
#include "sim/core/layer_record.hpp"

namespace ternion::chip {

struct Core {
    std::int64_t kernel_memory = 0, neuron_memory = 0, bias_memory = 0;  // entries
};

struct Limits {
    std::int64_t max_kernel = 0, max_out_channels = 0, max_input_h = 0, max_input_w = 0;
    std::vector<std::int64_t> strides, pools;
    std::int64_t max_padding = 0;
    int weight_bits = 0, state_bits = 0;
};

// Xylo (family "xylo"): one SNN core of input channels, hidden neurons (recurrent weights among
// them) and output neurons, with Rockpool's limits, design rules and cycle model.
struct XyloSpec {
    std::int64_t input_channels = 0, hidden = 0, output = 0, synaptic_states = 0;
    std::int64_t max_fanout = 0, avg_fanout = 0;  // recurrent synapses per hidden neuron
    std::int64_t input_projection = 0, output_projection = 0;  // hidden neurons reached
    std::int64_t max_input_events = 0, max_hidden_spikes = 0, max_output_spikes = 0;
    int weight_bits = 0, state_bits = 0, decay_bits = 0;
    // Design rules that only warn in Rockpool's mapper: more input or output channels.
    std::int64_t warn_input_channels = 0, warn_output_channels = 0;
    // The cycle model's constants (power_cycles_model.py), and whether the input and output
    // expansion neurons are every hidden neuron (XyloAudio 2) or only those with non-zero input
    // or readout weights (XyloIMU, XyloAudio 3).
    double input_loop = 0, hidden_update = 0, output_isyn_update = 0, fixed_hidden = 0,
           fixed_output_spike = 0, margin = 0;
    bool expansion_nonzero = false;
    std::string neurons_source, events_source, datapath_source, rules_source, cycles_source;
};

struct Chip {
    std::string name, description, family, technology, path;
    std::vector<Core> cores;
    Limits limits;
    std::string cores_source, limits_source, memory_source, assignment_source;
    XyloSpec xylo;  // family "xylo"
    MeshSpec mesh;  // family "mesh"
};

// A name -> <chip dir>/<name>.json (chip_search_dirs()); a value with '/' or ending in .json is a
// path. Throws OptionError("chip") for an unknown name, InputError(file, key, what) for a bad file.
Chip load_chip(const std::string& name_or_path);
Chip parse_chip(const nlohmann::json& doc, const std::string& file);
// $TERNION_CHIP_DIR; else $TERNION_DATA_DIR/chips; else <exe>/../share/ternion/chips, then the
// source tree's hw/chips.
std::vector<std::string> chip_search_dirs();
// (name, description) of every chip file, sorted by name.
std::vector<std::pair<std::string, std::string>> list_chips();

// One layer of the chip: a connection node, its spiking neurons and its pooling, placed together.
struct ChipLayer {
    std::vector<std::string> nodes;  // graph nodes it holds, in order
    std::string connection;          // the weighted node (names errors and the report)
    std::int64_t in_channels = 0, out_channels = 0, kernel_h = 0, kernel_w = 0;
    std::int64_t out_h = 1, out_w = 1;  // the convolution's map, before pooling
    std::int64_t pool = 1;              // sum-pooling size (1: none)
    std::int64_t kernel_memory = 0, neuron_memory = 0, bias_memory = 0;
    std::vector<int> fits;  // cores whose memories hold it
    int core = -1;          // assigned core
};

// Xylo: a neuron population (hidden or output) with the weight nodes that feed it, and its
// neuron ids on the chip.
struct XyloPopulation {
    std::string neurons;               // the neuron node
    std::vector<std::string> weights;  // the weight nodes into it
    bool output = false;
    std::int64_t size = 0, first_id = 0;  // ids [first_id, first_id + size) of its class
    std::int64_t max_fanout = 0;          // most recurrent synapses of one of its neurons
};

// Firing rates for the cycle model: fractions of (channel, step) with at least one event.
struct XyloRates {
    double input = 1, hidden = 1, output = 1;
};

struct XyloPlacement {
    std::vector<XyloPopulation> populations;  // hidden ones in id order, then outputs
    std::int64_t n_in = 0, n_hid = 0, n_out = 0, n_ien = 0, n_oen = 0;
    std::int64_t recurrent_weights = 0, max_fanout = 0;
    double mean_fanout = 0;  // F: recurrent non-zeros per hidden neuron
    double dt = 1e-3;
    std::string dt_source;
    double cycles_worst = 0, clock_hz = 0;  // all rates 1; the clock for real time at dt
    bool has_rates = false;
    XyloRates rates;
    double cycles_at_rates = 0;
};

struct Placement {
    std::string chip, family;
    std::vector<ChipLayer> layers;   // dynapcnn
    XyloPlacement xylo;              // xylo
    MeshPlacement mesh;              // mesh
    std::vector<std::string> notes;  // choices made while mapping (average pooling as sum, ...)
};

// What a mapping may use besides the graph: the model's step (Xylo's clock estimate) and
// measured or assumed firing rates (Xylo's cycles at those rates; a mesh's traffic, latency and
// energy band), and the time steps of one inference (a mesh's inferences per second).
// A run's own activity at one node, per sample and step (`ternion run --chip`).
struct NodeActivity {
    double rate_out = 0;  // output elements that were non-zero, as a fraction of its outputs
    double events = 0;    // synaptic events: (non-zero input, non-zero weight) pairs
    // Attention nodes: the run's typed counters per sample and step (AttentionCounts).
    bool attention = false;
    double adds = 0, shifts = 0, cmps = 0, q_spikes = 0, k_spikes = 0, v_spikes = 0;
    double qk_first_heads = 0, kv_first_heads = 0;
    std::uint64_t nonzero_out = 0;  // the run's total of non-zero outputs (every sample and step)
};
struct MapOptions {
    double dt = 1e-3;
    std::string dt_source = "default";
    bool has_rates = false;
    XyloRates rates;
    std::int64_t steps = 1;
    // Measured activity per node (use_run): a mesh layer takes the output rate of its last
    // node and the synaptic events of all its nodes instead of the rates above.
    bool measured = false;
    std::map<std::string, NodeActivity> activity;
    // A measured run's per-element counts (ElementSpikeTally): per node, how often each output
    // element was non-zero over the run, and the run's samples x steps they are divided by. A
    // source whose counts do not add up to its node's nonzero_out (a part of the run only, as
    // under mpirun on a rank) spreads its spikes over its elements at its rate instead.
    std::map<std::string, std::vector<std::uint64_t>> element_spikes;
    double sample_steps = 1;
};
// Sets `o` from a run: every node's activity, the run's steps, and the three rates Xylo's cycle
// model takes (the Input nodes'; the spiking nodes' but the last, weighted by their neurons; the
// last spiking node's).
void use_run(const RunRecord& rec, MapOptions& o);

// Places `g` on `c` by the rules of the chip's family. Throws InputError(origin, "nodes/<node>",
// what) naming the node, the limit, what it needs and what the chip holds, when a layer breaks
// a limit or no assignment exists.
Placement map_model(const Graph& g, const Chip& c, const MapOptions& o = {});
Placement map_dynapcnn(const Graph& g, const Chip& c);
Placement map_xylo(const Graph& g, const Chip& c, const MapOptions& o);
Placement map_mesh(const Graph& g, const Chip& c, const MapOptions& o);
// A mesh placement made by map_mesh, priced again under other options (a run's activity): the
// cores and spike targets are the graph's alone, so only the estimate is redone.
Placement reestimate_mesh(const Placement& placed, const Chip& c, const MapOptions& o);
// Fills every mesh layer's `targets` and the placement's `input_targets` from the graph the
// placement was made of (hw/chip/targets.cpp); map_mesh calls it once the layers have cores.
void build_targets(const Graph& g, MeshPlacement& p);
// An attention layer's internal routes from its cores alone (build_targets sets them); empty
// for any other layer.
std::vector<AttentionRoute> attention_routes(const MeshLayer& l);
// A mesh placement's traffic, latency and energy band at the options' rates (every rate 1
// without them); map_mesh calls it.
void estimate_mesh(const MeshSpec& s, const MapOptions& o, MeshPlacement& p);
// Xylo's cycles per time step (Rockpool's power_cycles_model) for a placement at `rates`.
double xylo_cycles(const XyloSpec& s, const XyloPlacement& p, const XyloRates& rates);

nlohmann::json placement_json(const Placement& p, const Chip& c);
std::string placement_text(const Placement& p, const Chip& c);
nlohmann::json mesh_json(const Placement& p, const Chip& c);
std::string mesh_text(const Placement& p, const Chip& c);

}  // namespace ternion::chip
