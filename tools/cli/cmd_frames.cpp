// `ternion frames EVENTS... -o FRAMES.h5`: event-camera streams (x, y, t, p) framed as
// SpikingJelly frames them (models/inputs/events.hpp), written as /frames for
// `ternion run --input`.
#include <cstdio>

#include "models/inputs/events.hpp"
#include "tools/cli/cli_common.hpp"

namespace ternion::cli {

namespace {

// "a,b" or "a,b,c" of positive integers; throws OptionError(option).
std::vector<std::int64_t> int_list(const std::string& option, const std::string& s) {
    std::vector<std::int64_t> v;
    std::size_t p = 0;
    while (p <= s.size()) {
        const auto e = std::min(s.find(',', p), s.size());
        const std::string part = s.substr(p, e - p);
        char* end = nullptr;
        const long long x = std::strtoll(part.c_str(), &end, 10);
        if (part.empty() || *end != '\0' || x <= 0)
            throw OptionError(option,
                              "expected positive integers separated by commas, got '" + s + "'");
        v.push_back(x);
        p = e + 1;
    }
    return v;
}

// --size H,W (SpikingJelly's H, W) or --sensor W,H[,P] (Tonic's sensor_size) into the rule.
void set_size(const po::variables_map& vm, FrameRule& r) {
    if (vm.count("size") == vm.count("sensor"))
        throw OptionError("size", "or --sensor is required (one of them)");
    if (vm.count("size")) {
        const auto v = int_list("size", vm["size"].as<std::string>());
        if (v.size() != 2) throw OptionError("size", "expected H,W");
        r.height = v[0];
        r.width = v[1];
        return;
    }
    const auto v = int_list("sensor", vm["sensor"].as<std::string>());
    if (v.size() < 2 || v.size() > 3) throw OptionError("sensor", "expected W,H or W,H,P");
    if (v.size() == 3 && v[2] != 2)
        throw OptionError("sensor", "frames have 2 polarity channels (P must be 2)");
    r.width = v[0];
    r.height = v[1];
}

}  // namespace

int cmd_frames(const Args& args) {
    po::options_description d(
        "ternion frames EVENTS... --output FRAMES.h5 (--frames M [--split-by number|time] | "
        "--duration D) (--size H,W | --sensor W,H)\n\n"
        "Frames event-camera streams (x, y, t, p) as SpikingJelly's integrate_events_by_fixed_"
        "frames_number\nand integrate_events_by_fixed_duration do: 2 channels (polarity 0, "
        "other), counts.\nEVENTS: SpikingJelly .npz (t, x, y, p), Tonic structured .npy, a "
        "SpikingJelly folder\n<class>/*.npz, or HDF5 /events/{t,x,y,p,offsets} with /labels "
        "(docs/inputs.md)");
    d.add_options()("help,h", "show this help")("events", po::value<std::vector<std::string>>(),
                                                "event files or folders (one or more)")(
        "output,o", po::value<std::string>(),
        "file to write: /frames float32 [samples, T, 2, H, W], /labels")(
        "frames,M", po::value<std::int64_t>(), "number of frames per sample")(
        "split-by", po::value<std::string>()->default_value("number"),
        "with --frames: number (equal event counts) | time (equal time windows)")(
        "duration", po::value<std::int64_t>(),
        "frames of this many time units instead (their number follows from each stream)")(
        "size", po::value<std::string>(), "frame size H,W (SpikingJelly's H and W)")(
        "sensor", po::value<std::string>(), "sensor size W,H or W,H,2 (Tonic's sensor_size)");
    po::positional_options_description pos;
    pos.add("events", -1);
    auto vm = parse(args, d, &pos);
    if (show_help(vm, d)) return 0;
    if (!vm.count("events")) throw OptionError("events", "an event file is required");
    if (!vm.count("output")) throw OptionError("output", "a file to write is required");
    FrameRule r;
    set_size(vm, r);
    if (vm.count("frames")) r.frames = vm["frames"].as<std::int64_t>();
    if (vm.count("duration")) r.duration = vm["duration"].as<std::int64_t>();
    if (vm.count("frames") && r.frames < 1) throw OptionError("frames", "must be at least 1");
    if (vm.count("duration") && r.duration < 1) throw OptionError("duration", "must be at least 1");
    r.split_by = parse_split_by(vm["split-by"].as<std::string>());
    if (r.duration > 0 && !vm["split-by"].defaulted())
        throw OptionError("split-by", "applies to --frames, not to --duration");
    check_rule(r);
    const auto events = vm["events"].as<std::vector<std::string>>();
    std::vector<NamedPath> inputs;
    for (const auto& e : events) inputs.push_back({"events", e});
    const std::string out = vm["output"].as<std::string>();
    check_output("output", out, inputs);
    const auto s = write_frames_file(events, out, r);
    std::fprintf(stderr, "wrote %s (%s samples x %lld frames of 2x%lldx%lld, %s events)\n",
                 out.c_str(), group_digits(static_cast<std::uint64_t>(s.samples)).c_str(),
                 static_cast<long long>(s.timesteps), static_cast<long long>(r.height),
                 static_cast<long long>(r.width),
                 group_digits(static_cast<std::uint64_t>(s.events)).c_str());
    return 0;
}

}  // namespace ternion::cli
