#include "models/pipeline.hpp"

#include "sim/simd/simd.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "models/metadata.hpp"
#include "models/quantize.hpp"
#include "sim/core/shard.hpp"
#include "sim/io/file_guard.hpp"
#include "sim/io/h5io.hpp"
#include "ternion_git_revision.hpp"

namespace ternion {

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

// /node/metadata/{timesteps, encoding}: how the model expects to be run.
void read_hints(LoadedModel& m) {
    h5::Reader r(m.path);
    if (auto tt = metadata_number(r, "/node", "timesteps")) {
        const double t = *tt;
        // The same bounds as --timesteps, checked before anything is sized by T.
        if (!(t >= 1 && t <= 1e6) || t != std::floor(t))
            r.fail("/node/metadata/timesteps",
                   "must be an integer between 1 and 1000000, got " + std::to_string(t));
        m.timesteps = static_cast<std::int64_t>(t);
    }
    if (auto e = metadata_string(r, "/node", "encoding")) m.encoding = *e;
}

// SHA-256 of a file, hex, through OpenSSL's EVP (Debian's libssl-dev): the trace names the
// exact model it came from. Streams in 1 MiB blocks.
std::string file_sha256(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw InputError(path, "", "cannot open to hash");
    std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
    if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1)
        throw InternalError("EVP_DigestInit_ex(sha256) failed");
    std::vector<char> buf(1 << 20);
    while (f) {
        f.read(buf.data(), static_cast<std::streamsize>(buf.size()));
        if (f.gcount() > 0)
            EVP_DigestUpdate(ctx.get(), buf.data(), static_cast<std::size_t>(f.gcount()));
    }
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_DigestFinal_ex(ctx.get(), md, &len);
    static const char* hex = "0123456789abcdef";
    std::string r;
    for (unsigned int i = 0; i < len; ++i) {
        r += hex[md[i] >> 4];
        r += hex[md[i] & 15];
    }
    return r;
}

// Each input's sample shape against its Input node (several: with the same samples), and the
// labels against the classes of the model's output (argmax over its first output node), before
// anything is sized by them.
void check_input_fits(const Graph& g, const std::vector<std::shared_ptr<const InputSource>>& srcs) {
    for (std::size_t k = 0; k < srcs.size(); ++k) {
        const InputSource& src = *srcs[k];
        const Node& node = g.node(g.inputs()[k]);
        const std::string ds = !src.dataset().empty()      ? src.dataset()
                               : src.fixed_timesteps() > 0 ? "/spikes"
                                                           : "/data";
        if (numel(src.sample_shape()) != node.out_size())
            throw InputError(src.describe(), ds,
                             "sample shape " + shape_str(src.sample_shape()) +
                                 " does not match the model's Input shape " +
                                 shape_str(node.out_shape()) +
                                 (srcs.size() > 1 ? " of Input node '" + node.name() + "'" : ""));
        if (src.num_samples() != srcs[0]->num_samples())
            throw InputError(src.describe(), ds,
                             "has " + std::to_string(src.num_samples()) + " samples, " +
                                 srcs[0]->dataset() + " has " +
                                 std::to_string(srcs[0]->num_samples()));
    }
    const InputSource& src = *srcs[0];
    if (src.labels().empty() || g.outputs().empty()) return;
    const std::int64_t classes = numel(g.node(g.outputs()[0]).out_shape());
    const auto& l = src.labels();
    for (std::size_t i = 0; i < l.size(); ++i)
        if (l[i] < 0 || l[i] >= classes)
            throw InputError(src.labels_file(), src.labels_field(),
                             "label " + std::to_string(l[i]) + " at index " + std::to_string(i) +
                                 " is outside [0, " + std::to_string(classes) +
                                 "), the model's output size");
}

// One of the caller's arrays as a source; `group` is "" for the single /spikes or /data, or
// "/inputs/<node>" for one of several Input nodes.
std::unique_ptr<InputSource> open_array(const ArrayInput& a, const InputOptions& io,
                                        const std::string& group,
                                        const std::vector<std::int64_t>& labels) {
    if (a.spikes) return make_spike_input(a.spikes, a.dims, labels, a.name, group + "/spikes");
    if (!a.data) throw InputError(a.name, group, "no spikes or data array");
    if (a.frames) return make_frame_input(a.data, a.dims, labels, io, a.name, group + "/frames");
    return make_analog_input(a.data, a.dims, a.owner, labels, io, a.name, group + "/data");
}

// The caller's arrays, one per Input node `names` (in graph order), each naming its node; the
// labels are the first array's that has any.
std::vector<std::unique_ptr<InputSource>> open_node_arrays(const std::vector<ArrayInput>& arrays,
                                                           const std::vector<std::string>& names,
                                                           const InputOptions& io) {
    std::vector<std::int64_t> labels;
    for (const auto& a : arrays) {
        if (std::count(names.begin(), names.end(), a.node) == 0)
            throw InputError(a.name, "/inputs/" + a.node,
                             "names no Input node of the model (" + joined(names) + ")");
        if (labels.empty()) labels = a.labels;
    }
    std::vector<std::unique_ptr<InputSource>> v;
    const std::vector<std::int64_t> no_labels;
    for (const auto& n : names) {
        const auto same = [&](const ArrayInput& a) { return a.node == n; };
        const auto it = std::find_if(arrays.begin(), arrays.end(), same);
        if (it == arrays.end())
            throw InputError(arrays.front().name, "/inputs/" + n,
                             "missing: no array for the model's Input node '" + n + "'");
        if (std::count_if(arrays.begin(), arrays.end(), same) > 1)
            throw InputError(it->name, "/inputs/" + n, "given twice");
        // The first node's source holds the labels, as a file's first dataset does.
        v.push_back(
            open_array(*it, for_node(io, n), "/inputs/" + n, v.empty() ? labels : no_labels));
    }
    return v;
}

std::vector<const InputSource*> raw(const std::vector<std::shared_ptr<const InputSource>>& v) {
    std::vector<const InputSource*> r;
    for (const auto& s : v) r.push_back(s.get());
    return r;
}

void check_request(const RunRequest& q) {
    if (q.parts < 1 || q.part < 0 || q.part >= q.parts)
        throw InternalError("RunRequest: part " + std::to_string(q.part) + " of " +
                            std::to_string(q.parts));
    if (q.threads < 1 || q.threads > 1024)
        throw OptionError("threads", "must be between 1 and 1024");
    if (q.timesteps && (*q.timesteps <= 0 || *q.timesteps > 1000000))
        throw OptionError("timesteps", "must be between 1 and 1000000");
    if (!q.trace_path.empty() && !q.record) throw OptionError("trace", "needs something to record");
    if (q.trace_path.empty()) return;
    const bool arrays = q.arrays || !q.node_arrays.empty();
    std::vector<NamedPath> inputs{{"model", q.model}, {"input", arrays ? "" : q.input}};
    // The labels of IDX images, named or the images' sibling file, are inputs too.
    const std::string labels = q.labels.empty() && !arrays ? idx_sibling_labels(q.input) : q.labels;
    if (!labels.empty()) inputs.push_back({"labels", labels});
    std::error_code ec;
    if (std::filesystem::is_regular_file(q.profile, ec)) inputs.push_back({"profile", q.profile});
    check_output("trace", q.trace_path, inputs);
}

}  // namespace

namespace {

// The integer model of `q.model` (models/quantize.hpp), quantised into a private temporary file
// that is gone once the model is loaded; reports and errors still name the float model.
std::shared_ptr<const LoadedModel> load_fixed_point(const RunRequest& q) {
    namespace fs = std::filesystem;
    std::random_device rd;
    const fs::path tmp = fs::temp_directory_path() /
                         ("ternion-fixed-" + std::to_string(rd()) + std::to_string(rd()) + ".h5");
    QuantizeOptions o;
    o.profile = q.profile;
    o.load = q.load;
    const auto t0 = Clock::now();
    const QuantizeReport r = quantize_model(q.model, tmp.string(), o);
    auto m = std::make_shared<LoadedModel>();
    m->path = q.model;
    try {
        m->graph = load_model(tmp.string(), q.load, m->report);
    } catch (...) {
        std::error_code ec;
        fs::remove(tmp, ec);
        throw;
    }
    std::error_code ec;
    fs::remove(tmp, ec);
    int fixed = 0, kept = 0;
    for (const auto& n : r.nodes) {
        fixed += n.action == "FixedLIF";
        kept += n.action == "kept float" && n.type.rfind("Linear", 0) != 0;
    }
    m->report.notes.push_back("--arith fixed: " + std::to_string(fixed) +
                              " neuron populations run as ternion.FixedLIF on the integers of "
                              "profile " +
                              r.profile + " (" + std::to_string(r.weight_bits) + "-bit weights); " +
                              std::to_string(kept) + (kept == 1 ? " node stays" : " nodes stay") +
                              " float (ternion quantize MODEL -o FILE lists them)");
    read_hints(*m);
    m->load_s = seconds_since(t0);
    return m;
}

}  // namespace

std::shared_ptr<const LoadedModel> load_model_file(const std::string& path,
                                                   const UserLoadOptions& options) {
    const auto t0 = Clock::now();
    auto m = std::make_shared<LoadedModel>();
    m->path = path;
    m->graph = load_model(path, options, m->report);
    read_hints(*m);
    m->load_s = seconds_since(t0);
    return m;
}

std::shared_ptr<const LoadedModel> adopt_model(std::unique_ptr<Graph> graph, std::string name,
                                               const LoadOptions& used) {
    LoadReport report;
    report.used = used;
    report.dt_source = report.discretization_source = report.reset_source = "caller";
    return adopt_model(std::move(graph), std::move(name), std::move(report), 0, "");
}

std::shared_ptr<const LoadedModel> adopt_model(std::unique_ptr<Graph> graph, std::string name,
                                               LoadReport report, std::int64_t timesteps,
                                               std::string encoding) {
    if (!graph) throw InternalError("adopt_model: no graph");
    if (timesteps < 0 || timesteps > 1000000)
        throw OptionError("timesteps", "must be between 1 and 1000000");
    if (!encoding.empty()) parse_encoding(encoding);  // refused here, not at the first run
    auto m = std::make_shared<LoadedModel>();
    m->path = std::move(name);
    m->graph = std::move(graph);
    m->report = std::move(report);
    m->timesteps = timesteps;
    m->encoding = std::move(encoding);
    return m;
}

const char* engine_name(Engine e) {
    return e == Engine::dense ? "dense" : "event";
}

Engine parse_engine(const std::string& s) {
    if (s == "event") return Engine::event;
    if (s == "dense") return Engine::dense;
    throw OptionError("engine", "must be event or dense");
}

Pipeline::Pipeline(RunRequest request) : Pipeline(std::move(request), nullptr) {}

Pipeline::Pipeline(RunRequest request, std::shared_ptr<const LoadedModel> model)
    : req_(std::move(request)), model_(std::move(model)) {
    check_request(req_);
    // Profile and counting mode before any simulation work.
    profile_ = hw::load_profile(req_.profile);
    if (!model_) {
        // A small file may declare huge arrays: refused before they are read.
        check_limit(static_cast<double>(resident_bytes()) + 2 * declared_bytes(req_.model),
                    "loading the model");
        if (req_.fixed_point) {
            model_ = load_fixed_point(req_);
        } else {
            model_ = load_model_file(req_.model, req_.load);
        }
    } else {
        req_.model = model_->path;
    }
    const auto t0 = Clock::now();
    open_source();
    open_s_ = seconds_since(t0);
    check_input_fits(graph(), srcs_);
    check_range();
    if (!req_.chip.empty()) {
        // A model that does not fit is refused before anything is simulated.
        chip_ = std::make_shared<const chip::Chip>(chip::load_chip(req_.chip));
        chip::Placement placed = chip::map_model(graph(), *chip_, map_options());
        if (chip_->family == "mesh") placed_ = std::move(placed);
    }
    if (req_.record) {
        TraceOptions to = *req_.record;
        to.dt = model_->report.used.dt;
        // Unit prices of the profile, so per-step energy is each step's counts times these.
        to.unit_pj.clear();
        for (int k = 0; k < hw::kKinds; ++k)
            to.unit_pj.push_back(profile_.price(k).value_or(std::nan("")));
        SampleRange held;  // part 0 and a whole run: every row
        if (req_.part != 0) {
            const Shard mine = shard_of(req_.first_sample, samples_, req_.part, req_.parts);
            held = {mine.first, mine.count};
        }
        recorder_ =
            std::make_unique<TraceRecorder>(graph(), to, req_.first_sample, samples_, T_, held);
    }
    check_memory();
}

Pipeline::~Pipeline() = default;

// Encoding and steps: the request's, else the model's metadata, else the data's own T.
void Pipeline::open_source() {
    encoding_ = req_.encoding
                    ? *req_.encoding
                    : parse_encoding(model_->encoding.empty() ? "direct" : model_->encoding);
    T_ = req_.timesteps ? *req_.timesteps : model_->timesteps;
    InputOptions io;
    io.encoding = encoding_;
    io.node_encodings = req_.node_encodings;
    std::vector<std::string> names;
    for (int u : graph().inputs()) names.push_back(graph().node(u).name());
    check_encoding_nodes(io.node_encodings, names);
    io.timesteps = T_;
    io.layout = req_.layout;
    io.model_timesteps = model_->timesteps;
    io.part = req_.part;
    io.parts = req_.parts;
    io.first_sample = req_.first_sample;
    io.max_memory = req_.max_memory;
    io.samples = req_.samples;
    io.labels = req_.labels;
    std::vector<std::unique_ptr<InputSource>> srcs = open_sources(io);
    std::vector<const InputSource*> all;
    for (const auto& x : srcs) all.push_back(x.get());
    // A spike input runs its own T unless --timesteps shortens it (docs/inputs.md).
    T_ = resolve_timesteps(all, req_.timesteps, model_->timesteps, srcs[0]->describe(),
                           input_notes_);
    // Latency coding places each spike by T, which is known only now.
    bool latency = false;
    for (const auto& n : names) latency = latency || for_node(io, n).encoding == Encoding::latency;
    if (latency && io.timesteps != T_) {
        io.timesteps = T_;
        srcs = open_sources(io);
    }
    srcs_.assign(std::make_move_iterator(srcs.begin()), std::make_move_iterator(srcs.end()));
    if (req_.arrays) req_.input = req_.arrays->name;
    if (!req_.node_arrays.empty()) req_.input = req_.node_arrays.front().name;
}

// One source per Input node: from the input file, or the caller's arrays.
std::vector<std::unique_ptr<InputSource>> Pipeline::open_sources(const InputOptions& io) const {
    std::vector<std::string> names;
    for (int u : graph().inputs()) names.push_back(graph().node(u).name());
    if (!req_.node_arrays.empty()) return open_node_arrays(req_.node_arrays, names, io);
    if (!req_.arrays) return open_inputs(req_.input, names, io);
    const ArrayInput& a = *req_.arrays;
    if (names.size() > 1)
        throw InputError(a.name, "",
                         "one array for a model with " + std::to_string(names.size()) +
                             " Input nodes (" + joined(names) +
                             "): give one array per node (in Python, a dict {node: array})");
    std::vector<std::unique_ptr<InputSource>> v;
    v.push_back(open_array(a, for_node(io, names[0]), "", a.labels));
    return v;
}

void Pipeline::check_range() {
    const std::int64_t n = srcs_[0]->num_samples(), first = req_.first_sample;
    if (first < 0 || first >= n)
        throw OptionError("first", "must lie in [0, " + std::to_string(n) + ")");
    if (req_.samples == 0 || req_.samples < -1 || req_.samples > n - first)
        throw OptionError("samples", "must lie in [1, " + std::to_string(n - first) + "]");
    samples_ = req_.samples < 0 ? n - first : req_.samples;
}

// An estimate of the run's peak memory, refused above the limit before the run: what is
// loaded, each thread's workspace (activity and state of every node, about 48 bytes a value;
// under the node-major schedule every node's T outputs too, a value and an index each), the
// per-sample results, the recording held until it is written and the trace file built from it
// in memory (at most about the recording's size: its large datasets are compressed).
void Pipeline::check_memory() const {
    const Graph& g = graph();
    double values = 0;
    for (int i = 0; i < g.size(); ++i) values += static_cast<double>(g.node(i).out_size());
    const double classes =
        g.outputs().empty() ? 0 : static_cast<double>(g.node(g.outputs()[0]).out_size());
    const double trace = recorder_ ? static_cast<double>(recorder_->estimated_bytes()) : 0.0;
    const double steps = runs_node_major(g, config(), samples_) ? static_cast<double>(T_) : 0.0;
    const double est = static_cast<double>(resident_bytes()) +
                       (48 + 8 * steps) * values * req_.threads +
                       static_cast<double>(samples_) * (4 * classes + 64) + 2 * trace;
    check_limit(est, "the run");
}

void Pipeline::check_limit(double estimate, const std::string& what) const {
    check_memory_limit(estimate, req_.max_memory, what);
}

RunConfig Pipeline::config() const {
    RunConfig cfg;
    cfg.engine = req_.engine;
    cfg.timesteps = T_;
    cfg.seed = req_.seed;
    cfg.threads = req_.threads;
    cfg.first_sample = req_.first_sample;
    cfg.num_samples = samples_;
    cfg.progress = req_.progress;
    cfg.count_ops = req_.count_ops;
    cfg.time_nodes = req_.time_nodes;
    cfg.cancel = req_.cancel;
    cfg.tallies = hw::tallies_for(req_.pricing.mode);
    if (placed_) {  // each spike routed to its own targets: count spikes per element
        std::vector<std::string> sources;
        for (const auto& r : placed_->mesh.input_targets) sources.push_back(r.node);
        for (const auto& l : placed_->mesh.layers) sources.push_back(l.targets.node);
        spike_tally_ = std::make_shared<chip::ElementSpikeTally>(graph(), sources);
        cfg.tallies.push_back(spike_tally_.get());
    }
    cfg.observer = recorder_.get();
    return cfg;
}

RunResult Pipeline::simulate(const RunConfig& cfg) const {
    return ternion::run(graph(), raw(srcs_), cfg);
}

RunReport Pipeline::finish(RunResult result) const {
    RunReport r;
    r.model = req_.model;
    r.input = req_.input;
    r.nodes = graph().size();
    r.engine = req_.engine;
    r.threads = req_.threads;
    r.timesteps = T_;
    r.first_sample = req_.first_sample;
    r.seed = req_.seed;
    r.encoding = encoding_;
    r.input_kind = input_label(*srcs_[0]);
    for (std::size_t k = 0; k < srcs_.size(); ++k)
        r.input_encodings.emplace_back(graph().node(graph().inputs()[k]).name(),
                                       input_encoding(*srcs_[k]));
    if (srcs_.size() > 1) {
        // Each Input node's kind: "a: replayed spikes (samples-first), b: direct encoding".
        r.input_kind.clear();
        for (std::size_t k = 0; k < srcs_.size(); ++k)
            r.input_kind += (k ? ", " : "") + graph().node(graph().inputs()[k]).name() + ": " +
                            input_label(*srcs_[k]);
    }
    r.load = model_->report;
    r.load.notes.insert(r.load.notes.end(), input_notes_.begin(), input_notes_.end());
    r.load_s = model_->load_s + open_s_;
    r.record = make_run_record(graph(), result);
    r.record.node_times = req_.time_nodes;
    r.result = std::move(result);
    const auto& labels = srcs_[0]->labels();
    if (!labels.empty()) {
        for (std::int64_t k = 0; k < r.result.samples; ++k)
            r.correct += r.result.predictions[static_cast<std::size_t>(k)] ==
                         labels[static_cast<std::size_t>(r.first_sample + k)];
        r.accuracy = static_cast<double>(r.correct) / static_cast<double>(r.result.samples);
    }
    for (const auto& l : r.record.layers) {
        r.total += l.ops;
        r.ann_mac += l.dense_macs_per_step * static_cast<std::uint64_t>(T_);
    }
    const auto tp = Clock::now();
    r.cost = hw::price(r.record, profile_, req_.pricing);
    r.price_s = seconds_since(tp);
    if (recorder_) r.trace_bytes = recorder_->estimated_bytes();
    if (chip_) {
        chip::MapOptions o = map_options();
        chip::use_run(r.record, o);
        if (chip_->family == "dynapcnn") o.has_rates = false;  // placement only: no cycle model
        if (spike_tally_) o.element_spikes = spike_tally_->totals();
        r.chip = placed_ ? chip::reestimate_mesh(*placed_, *chip_, o)
                         : chip::map_model(graph(), *chip_, o);
        r.chip_desc = chip_;
    }
    if (!req_.trace_path.empty()) {
        write_trace(r);
        r.trace_path = req_.trace_path;
    }
    return r;
}

chip::MapOptions Pipeline::map_options() const {
    chip::MapOptions o;
    o.dt = model_->report.used.dt;
    if (!model_->report.dt_source.empty()) o.dt_source = model_->report.dt_source;
    o.steps = std::max<std::int64_t>(T_, 1);
    return o;
}

void Pipeline::write_trace(const RunReport& r) const {
    const LoadOptions& used = r.load.used;
    std::vector<std::pair<std::string, std::string>> meta{
        {"model", r.model},
        {"input", r.input},
        {"engine", engine_name(r.engine)},
        {"threads", std::to_string(r.threads)},
        {"timesteps", std::to_string(r.timesteps)},
        {"dt", std::to_string(used.dt)},
        {"discretization", used.discretization},
        {"reset", used.reset},
        {"seed", std::to_string(r.seed)},
        {"encoding", encoding_name(r.encoding)},
        {"version", TERNION_VERSION},
        {"kernels", simd::level_name(simd::level())},
        {"git_revision", *TERNION_GIT_REV ? TERNION_GIT_REV : "unknown"},
        {"command_line", req_.command_line},
        {"profile", profile_.name},
        {"count_mode", hw::count_mode_name(req_.pricing.mode)},
        {"model_sha256", std::filesystem::is_regular_file(r.model) ? file_sha256(r.model) : ""},
        {"input_sha256", req_.arrays || !req_.node_arrays.empty() ? "" : file_sha256(r.input)},
        {"samples", std::to_string(r.result.samples)},
        {"first_sample", std::to_string(r.first_sample)}};
    TraceCost tc;
    tc.profile = profile_.name;
    tc.count_mode = hw::count_mode_name(req_.pricing.mode);
    tc.per_inference_pj = r.cost.per_inference_pj;
    tc.ann_pj_per_inference = r.cost.ann_pj_per_inference;
    for (const auto& l : r.cost.layers)
        tc.nodes.push_back({l.name, std::vector<double>(l.energy_pj.begin(), l.energy_pj.end()),
                            l.ann_pj, l.ann_macs});
    if (r.chip && r.chip->family == "mesh") {
        const chip::MeshPlacement& m = r.chip->mesh;
        const auto per_inference = [&](const chip::Band& b) {
            for (double v : b.levels()) tc.chip_layer_band_pj.push_back(v * double(m.steps));
        };
        tc.chip = r.chip->chip;
        for (const auto& l : m.layers) {
            tc.chip_layers.push_back(l.name);
            per_inference(l.band);
        }
        for (double v : m.band.levels()) tc.chip_band_pj.push_back(v * double(m.steps));
    }
    recorder_->write(req_.trace_path, meta, &tc);
}

}  // namespace ternion
