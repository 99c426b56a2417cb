// Mesh chips (family "mesh": Loihi-like, a generic 45 nm accelerator): tiles on a W x H grid,
// each with a few neuro-cores. A model's neurons are packed onto cores in order, a layer split
// across cores where it outgrows one core's neurons, synapse memory, state memory or input
// axons; spikes are routed by dimension-order (XY) hops as SANA-FE prices them; each core's work
// gives the step's critical path; the energy band adds memory, routing and static power to the
// operation count (docs/chips.md).
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sim/kernels/op_counts.hpp"

namespace ternion::chip {

struct MeshSpec {
    // Mesh: tiles (x, y), x = tile % width, y = tile / width; core k sits on tile k / per_tile.
    std::int64_t width = 0, height = 0, cores_per_tile = 1;
    std::string multicast;  // "per_core": one packet per (spike, destination core)
    // One core.
    std::int64_t neurons = 0, synapse_memory_bytes = 0, synapse_bits = 0;
    std::int64_t state_memory_bytes = 0, state_bits = 0, states_per_neuron = 1;
    std::int64_t max_fanin = 0, max_fanout = 0, weight_bits = 0;
    // A core stores a convolution's kernel once for the output channels it holds and a Linear's
    // matrix once for the tokens it holds (a digital accelerator), rather than every neuron's
    // synapses (Loihi).
    bool weight_sharing = false;
    // Energies (pJ) and times (ns) per event.
    double synaptic_op_pj = 0, neuron_update_pj = 0, neuron_active_pj = 0;
    double spike_pj = 0, hop_pj_ew = 0, hop_pj_ns = 0;
    double spike_ns = 0, hop_ns_ew = 0, hop_ns_ns = 0;
    double synaptic_op_ns = 0, neuron_update_ns = 0, neuron_active_ns = 0;
    // Attention's internal arithmetic (score accumulates and Shiftmax's adds, its shifts, its
    // compares): the chip file's `attention` section, else a synaptic op's figures.
    double add_pj = 0, shift_pj = 0, cmp_pj = 0, add_ns = 0, shift_ns = 0, cmp_ns = 0;
    double barrier_ns_one = 0, barrier_ns_all = 0;  // one tile; every tile of the mesh
    double clock_hz = 0;                            // 0: asynchronous (no cycle count)
    // SRAM energy per access of access_bits, by the memory's size in bytes (ascending).
    std::int64_t access_bits = 64;
    std::vector<std::array<double, 2>> sram_pj;
    bool memory_in_ops = false;  // the per-op energies already include the core's SRAM reads
    // Off-chip DRAM (the optional `dram` section): a layer whose weights do not fit the cores'
    // synapse SRAM keeps them there instead of being refused, each read priced per access of
    // dram_access_bits (also where the per-op figures include the SRAM: they cover the core's
    // own memory only). Its bandwidth and latency are not modelled.
    bool dram = false;
    double dram_pj = 0;
    std::int64_t dram_access_bits = 64;
    double static_w_per_core = 0;
    // The ANN equivalent on this chip: energy and time of one multiply-accumulate and of one
    // output value's activation (bias, requantisation, nonlinearity), and the activations' width.
    double ann_mac_pj = 0, ann_mac_ns = 0, ann_activation_pj = 0, ann_activation_ns = 0;
    std::int64_t ann_activation_bits = 8;
    // Sources per section, and the keys each section marks as assumed.
    std::map<std::string, std::string> sources;
    std::vector<std::string> assumed;  // "section.key"

    std::int64_t cores() const { return width * height * cores_per_tile; }
    std::int64_t tiles() const { return width * height; }
};

// Per-tile NoC figures, so that the rule "hop energy of the destination tile, latency of the
// source tile" (SANA-FE, chip-model.md D.4) is visible when tiles differ.
struct Mesh {
    std::int64_t width = 0, height = 0, cores_per_tile = 1;
    double spike_pj = 0, spike_ns = 0;               // every packet, within its tile
    std::vector<double> pj_ew, pj_ns, ns_ew, ns_ns;  // per tile, per hop
    static Mesh uniform(const MeshSpec& s);
    std::array<std::int64_t, 2> tile_of(std::int64_t core) const;  // (x, y); core -1: tile 0
};

// Spikes leaving one core (or the host, src = -1, which injects at tile (0, 0)) towards the
// cores that hold their targets: `spikes` spikes, each a packet to every destination core.
struct Flow {
    std::int64_t src = -1;
    std::vector<std::int64_t> dst;
    double spikes = 0;
};

// The directed links between neighbouring tiles: link tile * 4 + dir leaves `tile` towards
// +x, -x, +y or -y (dir 0..3); links that would leave the mesh stay unused.
enum LinkDir : int { kPlusX = 0, kMinusX = 1, kPlusY = 2, kMinusY = 3 };
inline std::int64_t link_index(std::int64_t tile, int dir) {
    return tile * 4 + dir;
}

struct RouteTotals {
    double packets = 0, hops = 0, energy_pj = 0;
    // Per source core (index = core): packets sent, their energy, and the longest flight (ns).
    std::vector<double> core_packets, core_pj, core_flight_ns;
    double host_packets = 0, host_pj = 0;  // the packets the host injects, and their energy
    // Packets crossing each directed link (link_index); they sum to `hops`.
    std::vector<double> link_packets;
};

// SANA-FE's rule (src/chip.cpp): a packet goes dimension-order, first along x on its source
// tile's row, then along y on its destination tile's column; hops = |dx| + |dy|, the links it
// crosses. Its energy is spike_pj plus its hops at the destination tile's per-direction
// energies, its flight spike_ns plus its hops at the source tile's per-direction latencies.
// Pure: depends on its arguments only.
RouteTotals route(const Mesh& m, const std::vector<Flow>& flows, std::int64_t cores);

// SRAM energy (pJ per access) of a memory of `bytes`: linear between the table's sizes, from
// (0, 0) below the first, the last value above (Lemaire et al.'s piecewise rule).
double sram_pj(const MeshSpec& s, double bytes);

// Per-synapse targets (hw/chip/targets.cpp, docs/chips.md "Routing"): the output elements of
// one source of spikes (an Input node, injected by the host, or a mesh layer) that leave the same
// core for the same destination cores, those being the cores holding at least one neuron an
// element has a synapse to. A spike of one of its elements is one packet to each of `dst`.
struct RouteGroup {
    std::int64_t src = -1;          // the core; -1: the host
    std::vector<std::int64_t> dst;  // ascending; empty: the elements feed no core
    std::int64_t elements = 0;
};
struct SourceRoutes {
    std::string node;                 // the node whose output elements these are
    std::vector<std::int32_t> group;  // per output element: its index in `groups`
    std::vector<RouteGroup> groups;
};

// An attention node's internal traffic (hw/chip/targets.cpp): its units on core `src` that send
// to the same cores `dst`, by kind: Q, K and V neurons (a spike each when they fire) and mixed
// values (each one value a step; fractional where a score core's share is spread).
struct AttentionRoute {
    std::int64_t src = 0;
    std::vector<std::int64_t> dst;
    double q = 0, k = 0, v = 0, mixed = 0;
};

// One core's share of a mesh layer.
struct CoreUse {
    // synapses: connections (fan-in summed, what events run over); stored: weights in memory.
    std::int64_t core = 0, neurons = 0, out_neurons = 0, synapses = 0, stored = 0, synapse_bits = 0;
    std::int64_t state_bits = 0, axons_in = 0, axons_out = 0, score_rows = 0;
};

// The four levels of the energy band, cumulative (pJ): op count, + memory, + routing, + static.
struct Band {
    double ops = 0, memory = 0, routing = 0, statics = 0;
    std::array<double, 4> levels() const {
        return {ops, ops + memory, ops + memory + routing, ops + memory + routing + statics};
    }
};

// A group of nodes on cores: a connection with the neurons it feeds, a neuron population, a
// pooling window, a sum of edges, a reduction, or an attention node's state.
struct MeshLayer {
    std::string name, kind;
    std::vector<std::string> nodes;
    std::vector<int> sources;  // other mesh layers; -1: the model's input
    bool spiking = true, feeds_output = false;
    std::int64_t neurons = 0, out_neurons = 0, synapses = 0, max_fanin = 0;
    std::string fanin_form;  // how one neuron's fan-in arises ("512 x 3 x 3")
    std::vector<CoreUse> cores;
    SourceRoutes targets;                    // where each of its output elements' spikes go
    std::vector<AttentionRoute> att_routes;  // attention: Q, K, V and mixed values inside it
    // The layer's weights live in the chip's DRAM (they did not fit the cores' synapse SRAM):
    // its cores hold neurons and state only, and its weight reads are priced at DRAM's energy.
    bool weights_in_dram = false;
    std::int64_t dram_weight_bytes = 0;
    // Attention: Q/K/V neurons, the score buffer (heads x N x N entries) and projection weights.
    std::int64_t qkv_neurons = 0, score_entries = 0;
    double rate_in = 0, rate_out = 0;
    // Per step: synaptic events, neuron updates, packets leaving, their hops; memory words.
    double events = 0, updates = 0, packets = 0, hops = 0, weight_words = 0, state_words = 0;
    Band band;  // per step
    // Attention's internal work per step (docs/chips.md): score and mixing adds, shifts and
    // compares; score entries written (and read); Q, K and V spikes (values where V is analog)
    // sent to the score rows' cores; mixed values sent on to the output neurons' cores. Its
    // share of `band` (ops, memory, routing) is `att_band`.
    AttentionShape shape;
    struct Att {
        double adds = 0, shifts = 0, cmps = 0, entries = 0, q = 0, k = 0, v = 0, mixed = 0;
        double packets = 0, hops = 0, dense_macs = 0;  // dense_macs: the ANN's, one pass
        Band band;
    } att;
    // The ANN equivalent, one pass: every synapse a dense MAC, every stored weight read once,
    // every output value (and score entry) written and read once and sent to the cores of the
    // layers it feeds.
    struct Ann {
        double macs = 0, outputs = 0, weight_words = 0, activation_words = 0, packets = 0, hops = 0;
        double att_packets = 0;  // attention's internal values, routed
        Band band;               // one pass
    } ann;
};

struct MeshPlacement {
    std::vector<MeshLayer> layers;
    std::int64_t cores_used = 0, tiles_used = 0, input_neurons = 0;
    std::vector<SourceRoutes> input_targets;  // per Input node, in the graph's input order
    double rate_in = 1, rate_hidden = 1, rate_out = 1;
    bool rates_given = false;
    bool measured = false;  // rates and events are a run's own (ternion run --chip)
    std::int64_t steps = 1;
    RouteTotals routing;          // every layer's packets and the input's, injected by the host
    std::vector<double> core_ns;  // each used core's time per step
    std::int64_t critical_core = -1;
    double barrier_ns = 0, step_ns = 0, inference_ns = 0, inferences_per_s = 0;
    Band band;  // per step, every layer
    // The ANN equivalent, one pass: each core's MACs and activations at the chip's op times
    // and its packets, the slowest core plus the barrier; the band over every layer and the
    // input's values, injected by the host.
    struct AnnTotals {
        double macs = 0, packets = 0, hops = 0, pass_ns = 0;
        std::vector<double> core_ns;
        std::int64_t critical_core = -1;
        Band band;
    } ann;
};

}  // namespace ternion::chip
