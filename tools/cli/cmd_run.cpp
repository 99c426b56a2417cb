// `ternion run`: simulate a model on an input file and report spikes, operation counts,
// accuracy and (through hw/) energy per inference. The options become a RunRequest; the run
// itself is the shared pipeline (models/pipeline.hpp).
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "models/pipeline.hpp"
#include "tools/cli/cli_common.hpp"
#include "tools/cli/cli_dist.hpp"
#include "tools/cli/run_compare.hpp"

namespace ternion::cli {

namespace {

std::vector<std::string> split_csv(const std::string& s) {
    std::vector<std::string> r;
    std::stringstream ss(s);
    std::string item;
    while (std::getline(ss, item, ','))
        if (!item.empty()) r.push_back(item);
    return r;
}

// --record and its companions as trace options.
TraceOptions record_options(const po::variables_map& vm) {
    TraceOptions to;
    set_observables(to, split_csv(vm["record"].as<std::string>()));
    set_spike_format(to, vm["spike-format"].as<std::string>());
    if (vm.count("record-nodes")) to.nodes = split_csv(vm["record-nodes"].as<std::string>());
    if (vm.count("record-samples"))
        to.samples = parse_index_list(vm["record-samples"].as<std::string>(), "record-samples");
    if (vm.count("record-steps"))
        to.steps = parse_index_list(vm["record-steps"].as<std::string>(), "record-steps");
    to.max_bytes = static_cast<std::uint64_t>(vm["max-trace-bytes"].as<std::int64_t>());
    return to;
}

// The parsed options as a pipeline request; option-level checks happen here, everything that
// needs the files in the pipeline.
RunRequest make_request(const po::variables_map& vm, const Args& args) {
    RunRequest q;
    q.model = vm.count("model") ? vm["model"].as<std::string>() : bundled_path("bsa_fmnist.h5");
    if (vm.count("input"))
        q.input = vm["input"].as<std::string>();
    else if (!vm.count("model"))
        q.input = fashion_mnist_test_images();
    else
        throw OptionError("input",
                          "is required with a model (HDF5 with /spikes or /data, or "
                          "/inputs/<node>/... per Input node; or IDX images)");
    if (vm.count("labels")) q.labels = vm["labels"].as<std::string>();
    q.engine = parse_engine(vm["engine"].as<std::string>());
    q.threads = vm["threads"].as<int>();
    if (vm["max-trace-bytes"].as<std::int64_t>() < 0)
        throw OptionError("max-trace-bytes", "must not be negative");
    if (vm.count("max-memory"))
        q.max_memory = parse_bytes("max-memory", vm["max-memory"].as<std::string>());
    q.profile = vm["profile"].as<std::string>();
    {
        const std::string a = vm["arith"].as<std::string>();
        if (a != "float" && a != "fixed")
            throw OptionError("arith", "must be \"float\" or \"fixed\", got \"" + a + "\"");
        q.fixed_point = a == "fixed";
    }
    q.pricing.mode = hw::parse_count_mode(vm["count"].as<std::string>());
    q.pricing.encoding_mac_times_T = !vm.count("paper-encoding-once");
    q.load = model_options(vm);
    if (vm.count("encoding")) q.set_encodings(vm["encoding"].as<std::vector<std::string>>());
    if (vm.count("timesteps")) q.timesteps = vm["timesteps"].as<std::int64_t>();
    q.layout = input_layout(vm);
    q.seed = vm["seed"].as<std::uint64_t>();
    q.first_sample = vm["first"].as<std::int64_t>();
    // An explicit non-positive count is an error, not "all samples".
    if (vm.count("samples"))
        q.samples = std::max<std::int64_t>(0, vm["samples"].as<std::int64_t>());
    q.progress = !vm.count("no-progress");
    q.count_ops = !vm.count("no-op-counts");
    q.time_nodes = vm.count("node-times") > 0;
    if (vm.count("trace")) {
        q.trace_path = vm["trace"].as<std::string>();
        q.record = record_options(vm);
    }
    q.command_line = "ternion run";
    for (auto& a : args) q.command_line += " " + a;
    return q;
}

// The model run beside the main one (--compare, or the bundled SSA twin in the default run):
// the same request without recording, so the same samples, steps, seed and pricing.
std::optional<RunRequest> compare_request(const po::variables_map& vm, const RunRequest& q) {
    std::string model;
    if (vm.count("compare"))
        model = vm["compare"].as<std::string>();
    else if (!vm.count("model") && !vm.count("input"))
        model = bundled_path("ssa_fmnist.h5");
    else
        return std::nullopt;
    RunRequest c = q;
    c.model = model;
    c.record.reset();
    c.trace_path.clear();
    return c;
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
        "(.gz or raw), or .npy spikes; a model with several Input nodes reads one HDF5 file "
        "holding /inputs/<node>/spikes or /inputs/<node>/data per Input node, all with the "
        "same S (labels in /labels)")(
        "labels", po::value<std::string>(),
        "IDX labels file for IDX images (default: the images' sibling "
        "...-labels-idx1-ubyte[.gz], if present)")(
        "compare", po::value<std::string>(),
        "also run this model on the same samples and report its energy beside (default run: "
        "the bundled SSA twin)")(
        "timesteps,T", po::value<std::int64_t>(),
        "steps per sample (default: the spike file's T or the model's metadata)")(
        "engine", po::value<std::string>()->default_value("event"), "event | dense")(
        "threads", po::value<int>()->default_value(default_threads()), "worker threads")(
        "encoding", po::value<std::vector<std::string>>(),
        "direct | poisson | latency, for analog inputs (default: model metadata, else "
        "direct); NODE=KIND for one Input node (repeatable)")(
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
        "arith", po::value<std::string>()->default_value("float"),
        "float, or fixed: run the integer model `ternion quantize` makes with --profile's number "
        "formats (docs/fixed-point.md)")("count", po::value<std::string>()->default_value("exact"),
                                         "counting convention: exact | neurobench | paper | syops")(
        "paper-encoding-once", "paper mode: bill the encoding layer's MACs once, not every step")(
        "no-progress", "no progress bar")(
        "no-op-counts", "benchmarking only: skip the synaptic layers' operation counting")(
        "node-times", "measure where the simulation's time goes, node by node (thread seconds)");
    add_model_options(d);
    add_input_options(d);
    po::positional_options_description pos;
    pos.add("model", 1);
    // Under mpirun every rank parses the same options; errors are agreed on (cli_dist.hpp).
    auto vm = phase([&] { return parse(args, d, &pos); });
    if (vm.count("help")) {
        if (dist::rank() == 0) show_help(vm, d);
        return 0;
    }
    RunRequest q = phase([&] { return make_request(vm, args); });
    if (dist::active() && vm["threads"].defaulted()) q.threads = threads_per_rank();
    std::optional<RunRequest> cq = compare_request(vm, q);
    // The compared model is read too: the trace must not replace it.
    if (cq && !q.trace_path.empty())
        phase([&] { check_output("trace", q.trace_path, {{"compare", cq->model}}); });
    if (dist::ranks() > 1) return run_split(std::move(q), std::move(cq), vm.count("json") > 0);
    Pipeline pipeline(std::move(q));
    // Both pipelines are checked before either simulates.
    std::optional<Pipeline> twin;
    if (cq) twin.emplace(std::move(*cq));
    const RunReport report = pipeline.run();
    std::optional<Comparison> compared;
    if (twin) compared = compare_report(twin->run());
    if (vm.count("json")) {
        nlohmann::json j = report_json(report);
        if (compared) j["compare"] = comparison_json(*compared);
        std::cout << j.dump(2) << "\n";
    } else {
        std::cout << report_text(report);
        if (compared) std::cout << comparison_text(*compared, report);
    }
    return 0;
}

}  // namespace ternion::cli
