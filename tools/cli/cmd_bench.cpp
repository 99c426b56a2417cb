// `ternion bench <what>`: timing subcommands. Each subcommand is one function in the table
// below, so new ones (e.g. `bench run`) slot in without touching the others.
#include <tbb/global_control.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>

#include "attention/ann/ann_attention.hpp"
#include "sim/core/error.hpp"
#include "sim/core/memory.hpp"
#include "tools/cli/cli_common.hpp"

namespace ternion::cli {

namespace {

int bench_attention(const Args& args) {
    po::options_description d(
        "ternion bench attention: time one forward pass of an ANN reference attention with random "
        "weights (median of --repeats after one warm-up)");
    d.add_options()("help,h", "show this help")("kind", po::value<std::string>()->required(),
                                                "attention kind (see `ternion attention --help`)")(
        "tokens", po::value<std::int64_t>()->required(), "sequence length N")(
        "dim", po::value<std::int64_t>()->default_value(512), "model width D")(
        "heads", po::value<std::int64_t>()->default_value(8), "heads H")(
        "threads", po::value<int>()->default_value(1), "worker threads")(
        "repeats", po::value<int>()->default_value(5), "timed repetitions")(
        "seed", po::value<std::uint64_t>()->default_value(0), "seed of the random weights")(
        "json", "print one JSON line");
    if (help_asked(args, d)) return 0;
    auto vm = parse(args, d);
    const auto kind = vm["kind"].as<std::string>();
    const auto n = vm["tokens"].as<std::int64_t>(), dim = vm["dim"].as<std::int64_t>(),
               heads = vm["heads"].as<std::int64_t>();
    const int threads = vm["threads"].as<int>(), repeats = vm["repeats"].as<int>();
    if (n < 1 || n > (std::int64_t{1} << 22)) throw OptionError("tokens", "out of range");
    if (dim < 1 || dim > 65536) throw OptionError("dim", "out of range");
    if (heads < 1 || dim % heads) throw OptionError("heads", "must divide --dim");
    if (threads < 1 || threads > 1024) throw OptionError("threads", "out of range");
    if (repeats < 1 || repeats > 10000) throw OptionError("repeats", "out of range");
    if (n * dim > (std::int64_t{1} << 30)) throw OptionError("tokens", "N x D too large");

    tbb::global_control gc(tbb::global_control::max_allowed_parallelism,
                           static_cast<std::size_t>(threads));
    auto w = ann::random_weights(kind, dim, heads, vm["seed"].as<std::uint64_t>());
    auto att = ann::make_attention(kind, w);
    std::mt19937 g(1);
    std::normal_distribution<float> nd;
    // The buffers `ternion attention` uses for its inputs and outputs (sim/core/memory.hpp).
    LargeVector<float> x(static_cast<std::size_t>(n * att->in_dim())),
        y(static_cast<std::size_t>(n * att->out_dim()));
    std::vector<float> t(n);
    for (auto& v : x) v = nd(g);
    for (std::int64_t i = 0; i < n; ++i) t[i] = static_cast<float>(i);

    auto once = [&] {
        const auto t0 = std::chrono::steady_clock::now();
        att->forward(x.data(), t.data(), n, y.data(), nullptr, threads > 1);
        return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
            .count();
    };
    once();  // warm-up: page faults, FFT plans
    std::vector<double> ms;
    for (int r = 0; r < repeats; ++r) ms.push_back(once());
    const Spread s = spread(ms);
    const auto ops = att->op_counts(n);
    if (vm.count("json")) {
        nlohmann::json j{{"bench", "attention"}, {"kind", kind},          {"tokens", n},
                         {"dim", dim},           {"heads", heads},        {"threads", threads},
                         {"repeats", repeats},   {"ms_median", s.median}, {"ms_min", s.min},
                         {"ms_max", s.max},      {"ms_all", ms},          {"mac", ops.mac},
                         {"exp", ops.exp}};
        std::cout << j.dump() << "\n";
    } else {
        std::printf(
            "%s N=%lld D=%lld H=%lld threads=%d: median %.3f ms (min %.3f, max %.3f, %d "
            "runs), %s MACs, %s exp\n",
            kind.c_str(), static_cast<long long>(n), static_cast<long long>(dim),
            static_cast<long long>(heads), threads, s.median, s.min, s.max, repeats,
            group_digits(ops.mac).c_str(), group_digits(ops.exp).c_str());
    }
    return 0;
}

struct Sub {
    const char* name;
    int (*fn)(const Args&);
    const char* help;
};
const Sub kSubs[] = {
    {"attention", bench_attention, "time an ANN reference attention forward pass"},
};

void usage(std::FILE* f) {
    std::fprintf(f, "usage: ternion bench <what> [options]\n\n");
    for (auto& s : kSubs) std::fprintf(f, "  %-12s %s\n", s.name, s.help);
}

}  // namespace

int cmd_bench(const Args& args) {
    if (args.empty() || args[0] == "--help" || args[0] == "-h") {
        usage(args.empty() ? stderr : stdout);
        return args.empty() ? 2 : 0;
    }
    for (auto& s : kSubs)
        if (args[0] == s.name) return s.fn(Args(args.begin() + 1, args.end()));
    std::fprintf(stderr, "ternion: error: unknown bench subcommand '%s'\n", args[0].c_str());
    usage(stderr);
    return 2;
}

}  // namespace ternion::cli
