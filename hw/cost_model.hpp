// The hardware cost model: loads a hardware profile (a JSON data file in hw/profiles/ with an
// energy per counted operation and per byte moved, each with its source) and prices what a run
// counted (a RunRecord) under a counting convention (hw/conventions/, one file each):
//   exact       ternion's own event counts;
//   neurobench  NeuroBench's Dense / Effective_ACs / Effective_MACs (attention matmuls apart);
//   paper       the spiking-Transformer papers' fr x T x FLOPs with the SSA closed form;
//   syops       syops-counter's per-module rules (rate = mean input of {0,1}-valued calls).
// The conventions only change how synaptic AC and MAC are counted; every other kind (shift, cmp,
// exp, div, neuron updates, spikes, memory bytes) is always the engine's count. docs/cost-model.md
// is the user-facing description of every rule and assumption here.
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/core/layer_record.hpp"
#include "sim/core/node_spec.hpp"
#include "sim/kernels/op_counts.hpp"

namespace ternion::hw {

// The counted kinds, in OpCounts' field order ("ac", "mac", ..., "spike_write_bytes").
// Compute kinds are priced per operation, the four *_bytes kinds per byte.
inline constexpr int kKinds = kOpFieldCount;
const std::array<std::string_view, kKinds>& kind_names();
int kind_index(std::string_view name);  // -1 when not a kind
bool is_memory_kind(int k);
inline constexpr int kAc = 0, kMac = 1;  // OpCounts lists ac then mac first
using KindArray = std::array<double, kKinds>;

// --- profiles -------------------------------------------------------------------------------

// One published (or assumed) energy per operation.
struct OpPrice {
    double pj = 0.0;
    int bits = 0;  // operand width the figure is for (0: not stated)
    std::string source;
    bool verified = true;  // false: taken on trust or assumed; shown as such in reports
    std::string note;
};

// Energy of one access of `bytes` bytes to one memory (Horowitz lists 64-bit accesses).
struct MemoryLevel {
    double pj = 0.0;
    double bytes = 8.0;
    std::string source;
    bool verified = true;
    std::string note;
};

// Which memory one kind of counted traffic goes to. bytes_scale converts ternion's counted bytes
// (float32 storage) to the hardware's width, e.g. 0.25 for int8 weights.
struct TrafficRule {
    std::string level;
    double bytes_scale = 1.0;
    std::string source;
};

// Memory priced per byte by the size of the buffer accessed, a piecewise-linear function through
// (bytes, pJ per byte) points, held at the end values outside them: SpikingJelly's Lemaire
// estimator prices every access this way, at the size of the largest single access of its kind
// (op_counter/analytical_energy/core.py, LemaireEnergyCostConfig.memory_cost_pj). Used by the
// `lemaire` counting convention (hw/conventions/lemaire.cpp).
struct BufferSizeRule {
    std::vector<std::pair<double, double>> points;  // ascending bytes, >= 2 points
    std::string source;
    bool verified = true;
    std::string note;
    double pj_per_byte(double buffer_bytes) const;
};

struct ScalarFigure {
    double value = 0.0;
    std::string source;
    bool verified = true;
    std::string note;
};

// The number formats a chip holds, read by `ternion quantize`: weights of `weight_bits` signed
// bits under a scale per layer or per output channel (a power of two, or the largest that fits
// the range), rounded as `rounding` ("nearest_even", "floor", "toward_zero"); the neuron datapath
// as ternion.FixedLIF parameters (`datapath` preset and any field of it: current_bits,
// membrane_overflow, decay_shift, input_shift, compare, ...).
struct NumberFormats {
    int weight_bits = 8;
    std::string rounding = "nearest_even";
    std::string scale = "power_of_two";  // or "max": (2^(bits-1) - 1) / max |w| (sinabs)
    std::string granularity = "layer";   // or "channel": a scale per output channel
    MapParams neuron;
    MapParams attention;  // the integer attention's register fields (acc_bits, value_bits, ...)
    std::string source;
    bool verified = true;
};

// Integer operations priced by operand width (Horowitz: int8 and int32 adds and multiplies):
// points (bits, pJ) per kind, read between and beyond them along the nearest two points, an add
// linear in the bits and a multiply linear in the bits squared (an array multiplier's size).
// Connection layers with integer weights then price an AC as one add at their accumulator's
// width and a MAC as one multiply at the weights' width plus that add.
struct WidthTable {
    std::vector<std::pair<int, double>> add, mult;  // ascending bits
    std::string source;
    bool verified = true;
    double add_pj(int bits) const;
    double mult_pj(int bits) const;
};

struct Profile {
    std::string name, description, path, technology;
    std::optional<NumberFormats> formats;
    std::optional<WidthTable> widths;
    std::map<std::string, OpPrice> ops;  // compute kinds: ac, mac, shift, cmp, ...
    std::map<std::string, MemoryLevel> memory_levels;
    std::map<std::string, TrafficRule> traffic;    // *_bytes kinds -> a memory level
    std::optional<BufferSizeRule> by_buffer_size;  // memory.by_buffer_size (lemaire convention)
    std::optional<ScalarFigure> static_power_w;
    std::optional<ScalarFigure> clock_hz;  // time steps per second (one step per tick)
    std::vector<std::string> notes;
    // BibTeX entries for the sources, by key (the profile file's "references").
    std::vector<std::pair<std::string, std::string>> references;

    // pJ per counted unit of kind k (per op, or per counted byte), or nullopt when not priced.
    std::optional<double> price(int k) const;
    // Where the price of kind k comes from (empty when not priced).
    std::string price_source(int k) const;
    bool price_verified(int k) const;
};

// A name -> <profile dir>/<name>.json, where the dir is the first existing one of
// profile_search_dirs(). A value containing '/' or ending in .json is a path.
// Throws OptionError("profile") for an unknown name, InputError(file, key, what) for a bad file.
Profile load_profile(const std::string& name_or_path);
// Parses and validates one profile document; `file` names it in errors.
Profile parse_profile(const nlohmann::json& doc, const std::string& file);
// $TERNION_PROFILE_DIR when set; else $TERNION_DATA_DIR/profiles when set; else
// <exe>/../share/ternion/profiles, then the source tree's hw/profiles (see sim/core/data_path.hpp).
std::vector<std::string> profile_search_dirs();
// The first existing directory of profile_search_dirs() (the first candidate when none exists).
std::string profile_dir();
// The profile a run is priced with when none is chosen: 45 nm CMOS, E_AC 0.9 pJ, E_MAC 4.6 pJ.
inline constexpr const char* kDefaultProfile = "horowitz45-fp32";
// (name, one-line description) of every *.json in the profile dir, sorted by name.
std::vector<std::pair<std::string, std::string>> list_profiles();
// Multi-line human description of a profile with every figure and its source, ending with
// a sentence to cite it by and its BibTeX entries.
std::string describe_profile(const Profile& p);
// One sentence for a paper's methods section: the profile's priced figures (assumed ones
// said to be) and \cite{} of its references.
std::string citation_sentence(const Profile& p);

// --- counting conventions -------------------------------------------------------------------

// A counting convention, by name: one of hw/conventions/registry.cpp (the built-in ones are
// named below). Each is a file in hw/conventions/ (convention.hpp has the interface).
struct CountMode {
    std::string name = "exact";
    static const CountMode exact, neurobench, paper, syops, lemaire;
    bool operator==(const CountMode&) const = default;
};
CountMode parse_count_mode(const std::string& s);  // throws OptionError("count", ...)
const char* count_mode_name(const CountMode& m);

// The per-step tallies (sim/core/step_tally.hpp) a run must take for convention `m`; the run
// takes them only when asked (RunConfig::tallies).
std::vector<const StepTally*> tallies_for(const CountMode& m);

struct PriceOptions {
    CountMode mode = CountMode::exact;
    // Paper mode only: bill the encoding layer as E_MAC x FLOPs x T (true: direct input repeated
    // every step, as the Spike-driven Transformer papers do and as ternion's engine runs it) or
    // E_MAC x FLOPs once (false: Spikformer's appendix reading).
    bool encoding_mac_times_T = true;
};

// --- the report -----------------------------------------------------------------------------

struct LayerCost {
    std::string name, type;
    KindArray count{};      // ops as counted under the mode, totals over all samples
    KindArray energy_pj{};  // count x price, totals over all samples
    double energy_total_pj = 0.0;
    bool attention = false;  // an attention node (the headline says attention is priced)
    // The ANN equivalent, per inference of T passes (one pass per step, as the SNN runs T
    // steps): its MACs, and their price plus its memory traffic's under the same rule.
    double ann_macs = 0.0;          // dense_macs_per_step x T
    double ann_pj = 0.0;            // E_MAC x ann_macs + ann_memory_pj
    double ann_memory_pj = 0.0;     // weights read and activations written, T passes
    std::string basis;              // how this layer was counted under the mode
    double sop = 0.0;               // paper mode: SOP (or encoding FLOPs) per inference
    double input_rate = 0.0;        // paper mode: fr_in
    bool attention_matmul = false;  // neurobench mode: this layer's ac/mac are the matmul line
    double syops_rate = 0.0;        // syops mode: mean over calls of syops' per-call rate
};

// NeuroBench's synaptic-operation figures, per sample (summed over all T).
struct NeuroBenchFigures {
    double dense = 0.0, effective_acs = 0.0, effective_macs = 0.0;
    // NeuroBench's ActivationSparsity (zero outputs / outputs of spiking activations, attention
    // nodes' inner Q/K/V and mask neurons included), ConnectionSparsity (zero weights / weights
    // of connection layers) and Footprint (bytes of the stored, BatchNorm-folded parameters).
    double activation_sparsity = 0.0, connection_sparsity = 0.0, footprint_bytes = 0.0;
    // MembraneUpdates: membranes of neuron nodes that changed from one step to the next (all of
    // them at the first step), per sample; absent when the run did not tally them.
    std::optional<double> membrane_updates;
    double attention_matmul_ac = 0.0, attention_matmul_mac = 0.0, attention_matmul_pj = 0.0;
};

// syops-counter's figures, per sample: its AC and MAC totals (its energy is 0.9 AC + 4.6 MAC
// pJ under the default profile).
struct SyopsFigures {
    double ac = 0.0, mac = 0.0;
    // Layers syops bills as MACs though the exact count has none there: inputs of ternary
    // spikes (-1 fails its {0,1} test) and of other integer values (residual sums of spikes).
    std::vector<std::string> ternary_as_mac, sums_as_mac;
};

// The paper convention's figures, per inference.
struct PaperFigures {
    double sop = 0.0;           // sum of SOP over spike-fed layers (billed as AC)
    double encoding_mac = 0.0;  // MACs billed for the encoding layer
    std::string encoding_layer;
    double attention_ac = 0.0;  // part of sop from attention closed forms
};

struct CostReport {
    std::string profile_name, profile_description, profile_path;
    bool profile_verified = true;  // every figure used is marked verified
    CountMode mode = CountMode::exact;
    PriceOptions options;
    std::int64_t samples = 0, timesteps = 0;
    std::vector<LayerCost> layers;
    KindArray total_count{}, total_energy_pj{};  // over all samples
    double total_pj = 0.0;
    // Per inference: total / samples. energy_pj = sum over kinds (in field order) of
    // price x (total_count / samples), so under the default profile it is exactly
    // 0.9 x AC + 4.6 x MAC per inference.
    KindArray per_inference_count{}, per_inference_energy_pj{};
    double per_inference_pj = 0.0;
    // The ANN equivalent for T passes (one per step), and for one pass (= / T): the figure a
    // reader comparing with a conventional network usually means.
    double ann_macs_per_inference = 0.0, ann_pj_per_inference = 0.0;
    double ann_memory_pj_per_inference = 0.0;
    double ann_pj_per_pass() const {
        return timesteps > 0 ? ann_pj_per_inference / static_cast<double>(timesteps) : 0.0;
    }
    // The exact count's energy per inference under the same profile, whatever `mode` is (the
    // figure a non-exact report points to).
    double exact_pj_per_inference = 0.0;
    std::vector<std::string> unpriced;  // kinds counted (non-zero) that the profile does not price
    std::vector<std::string> notes;     // assumptions and fallbacks used in this report
    std::optional<NeuroBenchFigures> neurobench;
    std::optional<PaperFigures> paper;
    std::optional<SyopsFigures> syops;
    // Figures of conventions without a typed struct above, by name (per sample), for their own
    // report_json / report_text.
    std::map<std::string, double> figures;
    // Energy per inference a convention prices beyond the counted kinds (the lemaire memory
    // term), by label; included in per_inference_pj and total_pj, not in the by-kind arrays.
    std::vector<std::pair<std::string, double>> added_pj;
    std::optional<double> latency_s;         // T / clock_hz
    std::optional<double> static_energy_pj;  // static_power_w x latency, per inference
    std::optional<double> average_power_w;   // (dynamic + static) / latency
};

CostReport price(const RunRecord& run, const Profile& p, const PriceOptions& o);

// Energy of plain operation counts (one attention pass, no layers): every counted kind times
// the profile's price for it; kinds counted but not priced are listed, not guessed.
struct OpsEnergy {
    double total_pj = 0.0;
    std::vector<std::pair<std::string, double>> by_kind_pj;  // priced kinds, field order
    std::vector<std::string> unpriced;
};
OpsEnergy price_ops(const OpCounts& ops, const Profile& p);
// Adds the report to a run's JSON document (see docs/cost-model.md for the keys).
void add_to_json(const CostReport& r, nlohmann::json& doc);
// Counts as a JSON object {kind: count}, or {kind: count / divisor} (per inference).
nlohmann::json ops_json(const OpCounts& o, double divisor = 1.0);
std::string format_table(const CostReport& r);

// The one line to quote: energy per inference with its convention, profile and what it
// includes (synaptic ops, attention, neuron updates, memory) and leaves out.
struct Headline {
    double energy_pj = 0.0;
    std::vector<std::string> included, excluded;  // groups of kinds, in report order
    std::string text;                             // "energy per inference: 7.89 µJ (...)"
    std::string which;  // which number to publish, and why the conventions differ
};
Headline headline(const CostReport& r);
// pJ in the unit that keeps 3 significant digits readable: "7.89 µJ", "512 pJ".
std::string energy_words(double pj);

}  // namespace ternion::hw
