// `ternion run`: simulate a model on an input file and report spikes, operation counts,
// accuracy and (through hw/) energy per inference.
#include <openssl/evp.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "hw/cost_model.hpp"
#include "models/inputs.hpp"
#include "sim/h5io.hpp"
#include "sim/layer_record.hpp"
#include "sim/trace.hpp"
#include "ternion_git_revision.hpp"
#include "tools/cli_common.hpp"
#include "tools/run_compare.hpp"

namespace ternion::cli {

namespace {

nlohmann::json ops_json(const OpCounts& o, double div = 1.0) {
    nlohmann::json j = nlohmann::json::object();
    o.for_each([&](std::string_view k, std::uint64_t v) {
        if (div == 1.0)
            j[std::string(k)] = v;
        else
            j[std::string(k)] = static_cast<double>(v) / div;
    });
    return j;
}

std::vector<std::string> split_csv(const std::string& s) {
    std::vector<std::string> r;
    std::stringstream ss(s);
    std::string item;
    while (std::getline(ss, item, ','))
        if (!item.empty()) r.push_back(item);
    return r;
}

// Model-file hints for running it: /node/metadata/{timesteps, encoding}.
struct ModelHints {
    std::int64_t timesteps = 0;
    std::string encoding;
};
ModelHints read_hints(const std::string& path) {
    ModelHints h;
    h5::Reader r(path);
    if (r.is_dataset("/node/metadata/timesteps")) {
        const double t = r.read_scalar("/node/metadata/timesteps");
        // The same bounds as --timesteps, checked before anything is sized by T.
        if (!(t >= 1 && t <= 1e6) || t != std::floor(t))
            r.fail("/node/metadata/timesteps",
                   "must be an integer between 1 and 1000000, got " + std::to_string(t));
        h.timesteps = static_cast<std::int64_t>(t);
    }
    if (r.is_dataset("/node/metadata/encoding") &&
        r.info("/node/metadata/encoding").kind == h5::Kind::string)
        h.encoding = r.read_string("/node/metadata/encoding");
    return h;
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

// Resident memory of the process now (the loaded model and input), from /proc/self/statm.
std::uint64_t resident_bytes() {
    std::ifstream f("/proc/self/statm");
    std::uint64_t size = 0, resident = 0;
    f >> size >> resident;
    return resident * static_cast<std::uint64_t>(::sysconf(_SC_PAGE_SIZE));
}

// An estimate of the run's peak memory, refused above --max-memory before the run: what is
// loaded, each thread's workspace (activity and state of every node, about 48 bytes a value),
// the per-sample results and the trace held until it is written.
void check_memory(const po::variables_map& vm, const Graph& g, std::int64_t samples, int threads,
                  std::uint64_t trace_bytes) {
    const std::uint64_t limit = vm.count("max-memory")
                                    ? parse_bytes("max-memory", vm["max-memory"].as<std::string>())
                                    : default_memory_limit();
    double values = 0;
    for (int i = 0; i < g.size(); ++i) values += static_cast<double>(g.node(i).out_size());
    const double classes =
        g.outputs().empty() ? 0 : static_cast<double>(g.node(g.outputs()[0]).out_size());
    const double est = static_cast<double>(resident_bytes()) + 48 * values * threads +
                       static_cast<double>(samples) * (4 * classes + 64) +
                       static_cast<double>(trace_bytes);
    if (est > static_cast<double>(limit))
        throw OptionError("max-memory", "the run needs an estimated " +
                                            std::to_string(static_cast<std::uint64_t>(est)) +
                                            " bytes, over the limit of " + std::to_string(limit) +
                                            " bytes");
}

// The input's sample shape against the model's Input node, and its labels against the classes
// of the model's output (argmax over its first output node), before anything is sized by them.
void check_input_fits(const Graph& g, const InputSource& src, const std::string& input) {
    const char* ds = src.fixed_timesteps() > 0 ? "/spikes" : "/data";
    if (g.inputs().size() == 1 && numel(src.sample_shape()) != g.node(g.inputs()[0]).out_size())
        throw InputError(input, ds,
                         "sample shape " + shape_str(src.sample_shape()) +
                             " does not match the model's Input shape " +
                             shape_str(g.node(g.inputs()[0]).out_shape()));
    if (src.labels().empty() || g.outputs().empty()) return;
    const std::int64_t classes = numel(g.node(g.outputs()[0]).out_shape());
    const auto& l = src.labels();
    for (std::size_t i = 0; i < l.size(); ++i)
        if (l[i] < 0 || l[i] >= classes)
            throw InputError(input, "/labels",
                             "label " + std::to_string(l[i]) + " at index " + std::to_string(i) +
                                 " is outside [0, " + std::to_string(classes) +
                                 "), the model's output size");
}

// Every output path against every input path, and the trace size cap, before any work.
void check_run_outputs(const po::variables_map& vm, const std::string& model,
                       const std::string& input) {
    if (vm["max-trace-bytes"].as<std::int64_t>() < 0)
        throw OptionError("max-trace-bytes", "must not be negative");
    if (vm.count("max-memory")) parse_bytes("max-memory", vm["max-memory"].as<std::string>());
    if (!vm.count("trace")) return;
    std::vector<NamedPath> inputs{{"model", model}, {"input", input}};
    if (vm.count("labels")) inputs.push_back({"labels", vm["labels"].as<std::string>()});
    const auto profile = vm["profile"].as<std::string>();
    std::error_code ec;
    if (std::filesystem::is_regular_file(profile, ec)) inputs.push_back({"profile", profile});
    check_output("trace", vm["trace"].as<std::string>(), inputs);
}

}  // namespace

int cmd_run(const Args& args) {
    po::options_description d(
        "ternion run [MODEL] [options]\n\nSimulates MODEL (NIR HDF5; default: the bundled BSA "
        "Transformer on the 10 000 Fashion-MNIST test images, beside its SSA twin)");
    d.add_options()("help,h", "show this help")("model", po::value<std::string>(),
                                                "model file (positional)")(
        "input,i", po::value<std::string>(),
        "input file: /spikes int8 [S,T,...] or /data float32 [S,...] (HDF5), or IDX images "
        "(.gz or raw)")("labels", po::value<std::string>(),
                        "IDX labels file for IDX images (default: the images' sibling "
                        "...-labels-idx1-ubyte[.gz], if present)")(
        "compare", po::value<std::string>(),
        "also run this model on the same samples and report its energy beside (default run: "
        "the bundled SSA twin)")(
        "timesteps,T", po::value<std::int64_t>(),
        "steps per sample (default: the spike file's T or the model's metadata)")(
        "engine", po::value<std::string>()->default_value("event"), "event | dense")(
        "threads", po::value<int>()->default_value(default_threads()), "worker threads")(
        "encoding", po::value<std::string>(),
        "direct | poisson | latency, for analog inputs (default: model metadata, else direct)")(
        "seed", po::value<std::uint64_t>()->default_value(0),
        "seed of the encoders' random numbers")("samples", po::value<std::int64_t>(),
                                                "run only this many samples")(
        "first", po::value<std::int64_t>()->default_value(0), "index of the first sample")(
        "json", "print one JSON document instead of tables")(
        "trace", po::value<std::string>(),
        "write recorded observables to this HDF5 file (NIRGraphData layout)")(
        "record", po::value<std::string>()->default_value("spikes"),
        "what to record, comma-separated: spikes, membrane, ops, energy, attention, all")(
        "record-nodes", po::value<std::string>(),
        "comma-separated node names to record (default: spiking nodes for spikes/membrane, "
        "every node for ops/energy, attention nodes for attention)")(
        "record-samples", po::value<std::string>(),
        "global sample indices to record, e.g. 0,3,10-19 (default: every sample of the run)")(
        "record-steps", po::value<std::string>(),
        "time steps whose attention maps are recorded, e.g. 0-3 (default: all)")(
        "spike-format", po::value<std::string>()->default_value("events"),
        "spikes as events (NIR ValuedEventData, polarity in `value`) or grid (TimeGriddedData)")(
        "max-trace-bytes", po::value<std::int64_t>()->default_value(std::int64_t{2} << 30),
        "refuse traces whose estimated size is above this (default 2 GiB)")(
        "max-memory", po::value<std::string>(),
        "refuse a run whose estimated memory is above this many bytes, e.g. 8G (default: 80 % "
        "of physical memory)")("profile",
                               po::value<std::string>()->default_value(hw::kDefaultProfile),
                               "hardware profile: a name (`ternion profiles`) or a JSON file")(
        "count", po::value<std::string>()->default_value("exact"),
        "counting convention: exact | neurobench | paper | syops")(
        "paper-encoding-once", "paper mode: bill the encoding layer's MACs once, not every step")(
        "no-progress", "no progress bar")(
        "no-op-counts", "benchmarking only: skip the synaptic layers' operation counting");
    add_model_options(d);
    po::positional_options_description pos;
    pos.add("model", 1);
    auto vm = parse(args, d, &pos);
    if (show_help(vm, d)) return 0;
    const bool json = vm.count("json") > 0;
    std::string model =
        vm.count("model") ? vm["model"].as<std::string>() : bundled_path("bsa_fmnist.h5");
    std::string input;
    if (vm.count("input"))
        input = vm["input"].as<std::string>();
    else if (!vm.count("model"))
        input = fashion_mnist_test_images();
    else
        throw OptionError("input",
                          "is required with a model (HDF5 with /spikes or /data, or IDX images)");

    std::string engine_s = vm["engine"].as<std::string>();
    if (engine_s != "event" && engine_s != "dense")
        throw OptionError("engine", "must be event or dense");
    int threads = vm["threads"].as<int>();
    if (threads < 1 || threads > 1024) throw OptionError("threads", "must be between 1 and 1024");

    check_run_outputs(vm, model, input);
    // Profile and counting mode are checked before any simulation work.
    hw::Profile profile = hw::load_profile(vm["profile"].as<std::string>());
    hw::PriceOptions popt;
    popt.mode = hw::parse_count_mode(vm["count"].as<std::string>());
    popt.encoding_mac_times_T = !vm.count("paper-encoding-once");

    auto t0 = std::chrono::steady_clock::now();
    LoadReport rep;
    UserLoadOptions lo = model_options(vm);
    lo.threads = threads;
    auto graph = load_model(model, lo, rep);
    ModelHints hints = read_hints(model);
    InputOptions io;
    io.encoding =
        parse_encoding(vm.count("encoding") ? vm["encoding"].as<std::string>()
                                            : (hints.encoding.empty() ? "direct" : hints.encoding));
    std::int64_t T = vm.count("timesteps") ? vm["timesteps"].as<std::int64_t>() : hints.timesteps;
    if (vm.count("timesteps") && (T <= 0 || T > 1000000))
        throw OptionError("timesteps", "must be between 1 and 1000000");
    io.timesteps = T;
    if (vm.count("labels")) io.labels = vm["labels"].as<std::string>();
    auto src = open_input(input, io);
    if (T <= 0) T = src->fixed_timesteps();
    if (T <= 0) throw OptionError("timesteps", "is required for analog input " + input);
    io.timesteps = T;
    if (io.encoding == Encoding::latency) src = open_input(input, io);
    check_input_fits(*graph, *src, input);
    double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

    RunConfig cfg;
    cfg.engine = engine_s == "dense" ? Engine::dense : Engine::event;
    cfg.timesteps = T;
    cfg.seed = vm["seed"].as<std::uint64_t>();
    cfg.threads = threads;
    cfg.first_sample = vm["first"].as<std::int64_t>();
    cfg.num_samples = vm.count("samples") ? vm["samples"].as<std::int64_t>() : -1;
    cfg.progress = !vm.count("no-progress");
    cfg.count_ops = !vm.count("no-op-counts");
    cfg.syops_tallies = popt.mode == hw::CountMode::syops;
    if (cfg.first_sample < 0 || cfg.first_sample >= src->num_samples())
        throw OptionError("first", "must lie in [0, " + std::to_string(src->num_samples()) + ")");
    if (cfg.num_samples > src->num_samples() - cfg.first_sample ||
        (vm.count("samples") && cfg.num_samples <= 0))
        throw OptionError(
            "samples",
            "must lie in [1, " + std::to_string(src->num_samples() - cfg.first_sample) + "]");
    const std::int64_t nsamples =
        cfg.num_samples < 0 ? src->num_samples() - cfg.first_sample : cfg.num_samples;

    std::unique_ptr<TraceRecorder> rec;
    std::string trace_path;
    if (vm.count("trace")) {
        trace_path = vm["trace"].as<std::string>();
        TraceOptions to;
        to.spikes = to.membrane = false;
        for (auto& w : split_csv(vm["record"].as<std::string>())) {
            const bool all = w == "all";
            if (all || w == "spikes") to.spikes = true;
            if (all || w == "membrane") to.membrane = true;
            if (all || w == "ops") to.ops = true;
            if (all || w == "energy") to.energy = true;
            if (all || w == "attention") to.attention = true;
            if (!all && w != "spikes" && w != "membrane" && w != "ops" && w != "energy" &&
                w != "attention")
                throw OptionError("record",
                                  "unknown observable '" + w +
                                      "' (spikes, membrane, ops, energy, attention, all)");
        }
        const std::string fmt = vm["spike-format"].as<std::string>();
        if (fmt != "events" && fmt != "grid")
            throw OptionError("spike-format", "must be events or grid");
        to.spike_format = fmt == "grid" ? SpikeFormat::grid : SpikeFormat::events;
        if (vm.count("record-nodes")) to.nodes = split_csv(vm["record-nodes"].as<std::string>());
        if (vm.count("record-samples"))
            to.samples = parse_index_list(vm["record-samples"].as<std::string>(), "record-samples");
        if (vm.count("record-steps"))
            to.steps = parse_index_list(vm["record-steps"].as<std::string>(), "record-steps");
        to.max_bytes = static_cast<std::uint64_t>(vm["max-trace-bytes"].as<std::int64_t>());
        to.dt = rep.used.dt;
        // Unit prices of the profile, so per-step energy is each step's counts times these.
        for (int k = 0; k < hw::kKinds; ++k)
            to.unit_pj.push_back(profile.price(k).value_or(std::nan("")));
        rec = std::make_unique<TraceRecorder>(*graph, to, cfg.first_sample, nsamples, T);
        cfg.observer = rec.get();
    }

    check_memory(vm, *graph, nsamples, threads, rec ? rec->estimated_bytes() : 0);
    RunResult res = run(*graph, *src, cfg);
    RunRecord record = make_run_record(*graph, res);

    // Accuracy from labels.
    std::optional<double> accuracy;
    std::int64_t correct = 0;
    if (!src->labels().empty()) {
        for (std::int64_t k = 0; k < res.samples; ++k)
            if (res.predictions[static_cast<std::size_t>(k)] ==
                src->labels()[static_cast<std::size_t>(cfg.first_sample + k)])
                ++correct;
        accuracy = static_cast<double>(correct) / static_cast<double>(res.samples);
    }
    OpCounts total;
    std::uint64_t ann_mac = 0;
    for (const auto& l : record.layers) {
        total += l.ops;
        ann_mac += l.dense_macs_per_step * static_cast<std::uint64_t>(T);
    }
    const double S = static_cast<double>(res.samples);
    auto tp = std::chrono::steady_clock::now();
    hw::CostReport cost = hw::price(record, profile, popt);
    const double price_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - tp).count();
    std::optional<Comparison> compared;
    if (vm.count("compare"))
        compared = run_comparison(vm["compare"].as<std::string>(), lo, *src, cfg, profile, popt);
    else if (!vm.count("model") && !vm.count("input"))
        compared = run_comparison(bundled_path("ssa_fmnist.h5"), lo, *src, cfg, profile, popt);

    if (rec) {
        std::vector<std::pair<std::string, std::string>> meta{
            {"model", model},
            {"input", input},
            {"engine", engine_s},
            {"threads", std::to_string(threads)},
            {"timesteps", std::to_string(T)},
            {"dt", std::to_string(rep.used.dt)},
            {"discretization", rep.used.discretization},
            {"reset", rep.used.reset},
            {"seed", std::to_string(cfg.seed)},
            {"encoding", encoding_name(io.encoding)},
            {"version", TERNION_VERSION},
            {"git_revision", *TERNION_GIT_REV ? TERNION_GIT_REV : "unknown"}};
        std::string cmdline = "ternion run";
        for (auto& a : args) cmdline += " " + a;
        meta.emplace_back("command_line", cmdline);
        meta.emplace_back("profile", profile.name);
        meta.emplace_back("count_mode", hw::count_mode_name(popt.mode));
        meta.emplace_back("model_sha256", file_sha256(model));
        meta.emplace_back("input_sha256", file_sha256(input));
        meta.emplace_back("samples", std::to_string(res.samples));
        meta.emplace_back("first_sample", std::to_string(cfg.first_sample));
        TraceCost tc;
        tc.profile = profile.name;
        tc.count_mode = hw::count_mode_name(popt.mode);
        tc.per_inference_pj = cost.per_inference_pj;
        tc.ann_pj_per_inference = cost.ann_pj_per_inference;
        for (const auto& l : cost.layers)
            tc.nodes.push_back({l.name, std::vector<double>(l.energy_pj.begin(), l.energy_pj.end()),
                                l.ann_pj, l.ann_macs});
        rec->write(trace_path, meta, &tc);
    }

    if (json) {
        nlohmann::json j;
        j["model"] = model;
        j["input"] = input;
        j["samples"] = res.samples;
        j["timesteps"] = T;
        j["engine"] = engine_s;
        j["threads"] = threads;
        j["encoding"] = encoding_name(io.encoding);
        j["load_options"] = {{"dt", rep.used.dt},
                             {"dt_source", rep.dt_source},
                             {"discretization", rep.used.discretization},
                             {"reset", rep.used.reset}};
        j["notes"] = rep.notes;
        j["accuracy"] = accuracy ? nlohmann::json(*accuracy) : nlohmann::json(nullptr);
        j["predictions"] = res.predictions;
        nlohmann::json layers = nlohmann::json::array();
        for (const auto& l : record.layers) {
            nlohmann::json lj;
            lj["name"] = l.name;
            lj["type"] = l.type;
            lj["category"] = category_name(l.category);
            lj["neurons"] = l.neurons;
            lj["spikes"] = l.nonzero_out;
            lj["positive_spikes"] = l.positive_out;
            lj["negative_spikes"] = l.negative_out;
            lj["firing_rate"] =
                l.spiking ? nlohmann::json(l.firing_rate(res.samples, T)) : nlohmann::json(nullptr);
            lj["input_rate"] = l.input_rate(res.samples, T);
            lj["ops"] = ops_json(l.ops);
            lj["dense_mac"] = l.dense_macs_per_step * static_cast<std::uint64_t>(T) *
                              static_cast<std::uint64_t>(res.samples);
            if (l.attention_shape)
                l.attention.for_each([&](std::string_view k, std::uint64_t v) {
                    lj["attention"][std::string(k)] = v;
                });
            layers.push_back(lj);
        }
        j["layers"] = layers;
        j["totals"] = {{"ops", ops_json(total)}};
        j["per_inference"] = {{"ops", ops_json(total, S)}};
        j["ann_equivalent"] = {{"mac", static_cast<double>(ann_mac)}};
        j["timing"] = {{"load_s", load_s},
                       {"price_s", price_s},
                       {"simulate_s", res.simulate_s},
                       {"samples_per_s", res.simulate_s > 0 ? S / res.simulate_s : 0.0}};
        // Latency of one inference: the median is what a warm, steady stream of samples costs
        // (the first sample also pays for first-touch allocations and cold caches).
        if (!res.sample_s.empty()) {
            const auto t = spread(res.sample_s);
            j["timing"]["sample_ms"] = {
                {"median", 1e3 * t.median}, {"min", 1e3 * t.min}, {"max", 1e3 * t.max}};
        }
        if (rec) j["trace"] = {{"file", trace_path}, {"bytes_in_memory", rec->estimated_bytes()}};
        hw::add_to_json(cost, j);
        if (compared) j["compare"] = comparison_json(*compared);
        std::cout << j.dump(2) << "\n";
        return 0;
    }

    std::printf("model   %s (%d nodes)\n", model.c_str(), graph->size());
    std::printf("input   %s: %lld samples x %lld steps, %s encoding\n", input.c_str(),
                static_cast<long long>(res.samples), static_cast<long long>(T),
                encoding_name(io.encoding));
    std::printf("engine  %s, %d thread%s; dt %g s (%s), %s, reset %s\n", engine_s.c_str(), threads,
                threads == 1 ? "" : "s", rep.used.dt, rep.dt_source.c_str(),
                rep.used.discretization.c_str(), rep.used.reset.c_str());
    for (const auto& n : rep.notes) std::printf("note    %s\n", n.c_str());
    std::printf("\n%-22s %-18s %9s %12s %7s %14s %14s %12s\n", "layer", "type", "neurons", "spikes",
                "rate", "AC", "MAC", "updates");
    for (const auto& l : record.layers) {
        if (l.category == NodeCategory::input) continue;
        char rate[16] = "-";
        if (l.spiking) std::snprintf(rate, sizeof rate, "%.4f", l.firing_rate(res.samples, T));
        std::printf("%-22s %-18s %9lld %12s %7s %14s %14s %12s\n", l.name.substr(0, 22).c_str(),
                    l.type.substr(0, 18).c_str(), static_cast<long long>(l.neurons),
                    l.spiking ? group_digits(l.nonzero_out).c_str() : "-", rate,
                    group_digits(l.ops.ac).c_str(), group_digits(l.ops.mac).c_str(),
                    group_digits(l.ops.neuron_update).c_str());
    }
    std::printf("\nper inference: %.1f AC, %.1f MAC, %.1f neuron updates, %.1f spikes\n",
                static_cast<double>(total.ac) / S, static_cast<double>(total.mac) / S,
                static_cast<double>(total.neuron_update) / S,
                static_cast<double>(total.spikes_out) / S);
    std::printf("ANN equivalent: %.1f MAC per inference\n\n", static_cast<double>(ann_mac));
    std::printf("%s\n", hw::format_table(cost).c_str());
    if (accuracy)
        std::printf("accuracy: %.2f%% (%lld/%lld)\n", 100.0 * *accuracy,
                    static_cast<long long>(correct), static_cast<long long>(res.samples));
    std::printf("time: load %.3f s, simulate %.3f s (%.1f samples/s)\n", load_s, res.simulate_s,
                res.simulate_s > 0 ? S / res.simulate_s : 0.0);
    if (compared) print_comparison(*compared, model, cost.per_inference_pj);
    if (rec) std::printf("trace: %s\n", trace_path.c_str());
    return 0;
}

}  // namespace ternion::cli
