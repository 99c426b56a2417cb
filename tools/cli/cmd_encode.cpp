// `ternion encode`: analog /data -> /spikes int8 [samples, T, ...] with a chosen encoding.
#include <cstdio>
#include <iostream>

#include "models/inputs/inputs.hpp"
#include "tools/cli/cli_common.hpp"

namespace ternion::cli {

int cmd_encode(const Args& args) {
    po::options_description d(
        "ternion encode --input DATA --output SPIKES.h5 [options]\n\nEncodes analog data (HDF5 "
        "/data or /inputs/<node>/data, or IDX images) as a spike file");
    d.add_options()("help,h", "show this help")("input,i", po::value<std::string>(),
                                                "HDF5 file with /data float32 [samples, ...] (or "
                                                "/inputs/<node>/data per Input node), or IDX "
                                                "images (.gz or raw)")(
        "labels", po::value<std::string>(),
        "IDX labels file for IDX images (default: the images' sibling labels file, if present)")(
        "output,o", po::value<std::string>(),
        "spike file to write (/spikes int8 [samples, T, ...], or /inputs/<node>/spikes)")(
        "encoding", po::value<std::vector<std::string>>(),
        "poisson (default) | latency; NODE=KIND for one Input node of a file with "
        "/inputs/<node>/data (repeatable)")("timesteps,T", po::value<std::int64_t>(),
                                            "steps per sample")(
        "seed", po::value<std::uint64_t>()->default_value(0), "random seed")(
        "max-memory", po::value<std::string>(),
        "refuse an input or output whose estimated memory is above this many bytes, e.g. 8G "
        "(default: 80 % of physical memory)");
    auto vm = parse(args, d);
    if (show_help(vm, d)) return 0;
    if (!vm.count("input")) throw OptionError("input", "is required");
    if (!vm.count("output")) throw OptionError("output", "is required");
    if (!vm.count("timesteps")) throw OptionError("timesteps", "is required");
    const std::string labels = vm.count("labels") ? vm["labels"].as<std::string>() : "";
    std::vector<NamedPath> inputs{{"input", vm["input"].as<std::string>()}};
    if (!labels.empty()) inputs.push_back({"labels", labels});
    // IDX images read their sibling labels file when no --labels names one: an input too.
    if (labels.empty())
        if (const auto sib = idx_sibling_labels(vm["input"].as<std::string>()); !sib.empty())
            inputs.push_back({"labels", sib});
    check_output("output", vm["output"].as<std::string>(), inputs);
    auto n = encode_file(
        vm["input"].as<std::string>(), vm["output"].as<std::string>(),
        parse_encodings(vm.count("encoding") ? vm["encoding"].as<std::vector<std::string>>()
                                             : std::vector<std::string>{}),
        vm["timesteps"].as<std::int64_t>(), vm["seed"].as<std::uint64_t>(), labels,
        memory_limit(vm));
    std::fprintf(stderr, "wrote %s (%s spikes)\n", vm["output"].as<std::string>().c_str(),
                 group_digits(n).c_str());
    return 0;
}

}  // namespace ternion::cli
