// Input files: spike tensors (`/spikes` [samples, T, ...] or time-first [T, samples, ...], any
// integer, float or bool type, values in {-1,0,1}; or a `.npy` file holding one) replayed as
// events, or analog data (`/data` float32 [samples, ...]) encoded per step as direct current,
// Poisson (Bernoulli per step) or latency spikes, with optional `/labels` int64 [samples]. IDX
// files (MNIST, Fashion-MNIST; gzip-compressed or raw) are analog data too: unsigned bytes / 255,
// with labels from an explicit IDX labels file or the sibling `...-labels-idx1-ubyte[.gz]`.
// Frames (`/frames` float32 [samples, T, ...], e.g. event-camera counts from `ternion frames`)
// are replayed one frame per step as analog values. Layout and encodings are documented in
// docs/inputs.md.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/core/engine.hpp"

namespace ternion {

enum class Encoding { direct, poisson, latency };
Encoding parse_encoding(const std::string& s);  // throws OptionError("encoding")
const char* encoding_name(Encoding e);

// `--encoding` (repeatable): "kind" for every analog input, and "node=kind" for one Input node,
// which wins over the former (docs/inputs.md).
using NodeEncodings = std::vector<std::pair<std::string, Encoding>>;
struct EncodingChoice {
    std::optional<Encoding> all;
    NodeEncodings nodes;
};
// "a, b, c": Input node names in messages.
std::string joined(const std::vector<std::string>& names);
// Throws OptionError("encoding") for an unknown kind, "kind" given twice or a node given twice.
EncodingChoice parse_encodings(const std::vector<std::string>& values);
// Refuses a node of `e` that is not among `inputs` (the Input nodes), naming them.
void check_encoding_nodes(const NodeEncodings& e, const std::vector<std::string>& inputs);

// The axis order of a spike tensor.
enum class Layout { automatic, samples_first, time_first };
// "samples-first" or "ST"; "time-first" or "TS"; throws OptionError("layout").
Layout parse_layout(const std::string& s);

struct InputOptions {
    Encoding encoding = Encoding::direct;
    std::int64_t timesteps = 0;  // needed by latency coding
    Layout layout = Layout::automatic;
    // The model's metadata/timesteps (0: none): a spike tensor whose first axis has this
    // length and whose second does not is refused without --layout, naming both readings.
    std::int64_t model_timesteps = 0;
    // The samples read: of the run's range [first_sample, first_sample + samples) (samples -1:
    // to the end), the shard of process `part` of `parts` (sim/core/shard.hpp; parts 1: the whole
    // range). Only those are read and checked: an HDF5 or .npy file through a hyperslab, an
    // IDX stream read through. num_samples() stays the file's; fill() takes global indices of
    // held samples.
    int part = 0, parts = 1;
    std::int64_t first_sample = 0, samples = -1;
    // An IDX labels file for IDX images; empty: the images' sibling labels file, if it exists.
    std::string labels = {};
    NodeEncodings node_encodings = {};  // per Input node, over `encoding` (for_node)
    // The memory limit (--max-memory; 0: the default limit): a compressed input whose
    // declared values would not fit is refused before it is inflated.
    std::uint64_t max_memory = 0;
};

// The options of Input node `node`: its own encoding, if it has one.
InputOptions for_node(const InputOptions& o, const std::string& node);

// Whether `path` is read as IDX: its name holds "idx" or "ubyte", or it starts like an IDX file
// (gzip magic, or 0x00 0x00 type ndims). Every reader asks this first: it throws InputError for
// a FIFO, socket or device, which could not be read again after the sniff.
bool looks_like_idx(const std::string& path);

// The sibling labels file of IDX images ("t10k-images-idx3-ubyte.gz" ->
// "t10k-labels-idx1-ubyte.gz"), or "" when the name has no "images" in it.
std::string idx_sibling_labels(const std::string& images_path);

std::unique_ptr<InputSource> open_input(const std::string& path, const InputOptions& opts);

// The sources of a model's Input nodes `nodes` (in the graph's order), read from one file. One
// node: open_input, or, when the HDF5 file has neither /spikes nor /data, its
// /inputs/<node>/spikes or /data. Several: an HDF5 file with /inputs/<node>/spikes or
// /inputs/<node>/data for each node, every one with the same samples, and /labels as for one.
// Errors name the file and the missing or mismatched dataset.
std::vector<std::unique_ptr<InputSource>> open_inputs(const std::string& path,
                                                      const std::vector<std::string>& nodes,
                                                      const InputOptions& opts);

// How the run header names the input: "replayed spikes (samples-first)", or the encoding of
// analog data ("direct encoding", "poisson encoding", "latency encoding").
std::string input_label(const InputSource& src);

// What an Input node's data runs as: its analog encoding ("direct", "poisson", "latency"), or
// "spikes" when spikes are replayed.
std::string input_encoding(const InputSource& src);

// The number of steps to run. A spike input runs its own T, or the `option` (--timesteps) when
// given, which may only shorten it (a note says so; more steps than the file holds are
// refused). Analog input runs `option`, else the model's metadata/timesteps. Several sources
// (one per Input node): spike sources of different T need `option`, at most the fewest; analog
// ones run what the spike ones fix. Notes for the user are appended to `notes`; throws
// OptionError("timesteps") when no T can be found.
std::int64_t resolve_timesteps(const std::vector<const InputSource*>& srcs,
                               std::optional<std::int64_t> option, std::int64_t model_timesteps,
                               const std::string& input, std::vector<std::string>& notes);

// The caller's arrays as an input (the C++ API, the Python bindings), checked as a file would be;
// errors name `name` as the file. Spikes: int8 [samples, T, ...shape] in {-1, 0, 1}, copied
// into event lists. Analog: float32 [samples, ...shape], read in place while `owner` lives.
// `labels`: empty, or one class per sample. `field` is the dataset errors name (for one of
// several Input nodes: "/inputs/<node>/spikes" or "/inputs/<node>/data", as in a file).
std::unique_ptr<InputSource> make_spike_input(const std::int8_t* data, const Shape& dims,
                                              std::vector<std::int64_t> labels,
                                              const std::string& name,
                                              const std::string& field = "/spikes");
// Frames: float32 [samples, T, ...shape] (event-camera counts, any finite values), replayed
// one step at a time as /frames is; only the samples of `opts`' range and shard are copied.
std::unique_ptr<InputSource> make_frame_input(const float* data, const Shape& dims,
                                              std::vector<std::int64_t> labels,
                                              const InputOptions& opts, const std::string& name,
                                              const std::string& field = "/frames");
std::unique_ptr<InputSource> make_analog_input(const float* data, const Shape& dims,
                                               std::shared_ptr<const void> owner,
                                               std::vector<std::int64_t> labels,
                                               const InputOptions& opts, const std::string& name,
                                               const std::string& field = "/data");

// The Fashion-MNIST test images of Debian's dataset-fashion-mnist
// (/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz); throws InputError when absent.
std::string fashion_mnist_test_images();

// Writes analog data as a spike file (`ternion encode`): /data as /spikes, or, for a file with
// /inputs/<node>/data (several Input nodes), each as /inputs/<node>/spikes, node k of the
// file's (sorted) groups drawing with input_seed(seed, k) as a run's Input node k does; spike
// datasets of `timesteps` steps are copied. Labels are copied. Returns the number of spikes.
// `max_memory` (0: the default limit) bounds the inputs read and the spikes built, checked
// before they are allocated.
std::uint64_t encode_file(const std::string& in_path, const std::string& out_path,
                          const EncodingChoice& enc, std::int64_t timesteps, std::uint64_t seed,
                          const std::string& labels_path = "", std::uint64_t max_memory = 0);

}  // namespace ternion
