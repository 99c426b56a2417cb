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

// The parsed options as a pipeline request: the options `ternion.run` shares come from the one
// table (models/run_options.hpp); the command line adds the input file, its labels, the
// progress bar and the command line itself. Everything that needs the files is checked in the
// pipeline.
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
    const CommandLineValues given(vm);
    q.load = read_load_options(given);
    read_run_options(given, q);
    // A recording the command line would not write: --record without --trace.
    if (!vm["record"].defaulted() && !vm.count("trace"))
        throw OptionError("record", "is written by --trace: give --trace FILE");
    q.progress = !vm.count("no-progress");
    q.count_ops = !vm.count("no-op-counts");
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
        "the bundled SSA twin)")("json", "print one JSON document instead of tables")(
        "no-progress", "no progress bar")(
        "no-op-counts", "benchmarking only: skip the synaptic layers' operation counting");
    add_options(d, run_option_specs());
    add_model_options(d);
    po::positional_options_description pos;
    pos.add("model", 1);
    // Under mpirun every rank parses the same options; errors are agreed on (cli_dist.hpp).
    auto vm = phase([&] { return parse(args, d, &pos); });
    if (vm.count("help")) {
        if (dist::rank() == 0) show_help(vm, d);
        return 0;
    }
    RunRequest q = phase([&] { return make_request(vm, args); });
    if (dist::active() && !vm.count("threads")) q.threads = threads_per_rank();
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
