// `ternion attention`: run one ANN reference attention over an HDF5 batch and report its ops
// (and their energy under a hardware profile).
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "attention/ann/ann_attention.hpp"
#include "attention/ann/run_batch.hpp"
#include "hw/cost_model.hpp"
#include "sim/core/error.hpp"
#include "sim/core/memory.hpp"
#include "sim/io/h5io.hpp"
#include "tools/cli/cli_common.hpp"

namespace ternion::cli {

namespace {

// The output batch, one input sample and the per-sample projections (Q, K, V and the output of
// n rows each), as floats, before they are allocated. Score matrices are not in it.
void check_attention_memory(const po::variables_map& vm, const ann::Attention& att,
                            std::int64_t batch, std::int64_t n, std::size_t t_values) {
    const auto din = static_cast<double>(att.in_dim()), dout = static_cast<double>(att.out_dim());
    const auto nd = static_cast<double>(n), bd = static_cast<double>(batch);
    const double floats = bd * nd * dout + nd * din + nd * (4 * din + dout);
    check_memory(
        vm, static_cast<double>(resident_bytes()) + 4 * floats + 4 * static_cast<double>(t_values),
        "the attention");
}

// The input file's /x [batch, N, D] (shape checked against the attention) and, for time kinds,
// /t [batch, N] (read: it is small).
struct AttentionInput {
    std::int64_t batch = 0, n = 0, dim = 0;
    std::vector<float> t;
};
AttentionInput check_attention_input(h5::Reader& xr, const ann::Attention& att,
                                     const std::string& kind) {
    if (!xr.is_dataset("/x")) xr.fail("/x", "missing dataset");
    auto xi = xr.info("/x");
    if (xi.kind != h5::Kind::floating) xr.fail("/x", "expected float32 values");
    ann::check_input_shape(att, kind, xi.dims, xr.path(), "/x");
    const std::int64_t batch = xi.dims[0], n = xi.dims[1], dim = xi.dims[2];
    std::vector<float> t;
    if (att.needs_time()) {
        if (!xr.is_dataset("/t")) xr.fail("/t", "missing dataset (time kinds need [batch, N])");
        ann::check_times_shape(xr.info("/t").dims, batch, n, xr.path(), "/t");
        t = xr.read_floats("/t");
        ann::check_times_finite(t.data(), batch * n, xr.path(), "/t");
    }

    return {batch, n, dim, std::move(t)};
}

// --json: the ops of the whole batch and of one sample, priced by the profile.
nlohmann::json attention_json(const std::string& kind, const ann::Attention& att,
                              std::int64_t batch, std::int64_t n, const OpCounts& ops,
                              const hw::Profile& profile) {
    nlohmann::json j;
    j["kind"] = kind;
    j["batch"] = batch;
    j["tokens"] = n;
    j["dim"] = att.in_dim();
    j["out_dim"] = att.out_dim();
    j["heads"] = att.heads();
    j["params"] = att.param_count();
    j["ops"] = hw::ops_json(ops);
    j["ops_per_sample"] = hw::ops_json(att.op_counts(n));
    const hw::OpsEnergy e = hw::price_ops(ops, profile);
    nlohmann::json by_kind = nlohmann::json::object();
    for (const auto& [name, pj] : e.by_kind_pj) by_kind[name] = pj;
    const double pj = e.total_pj;
    const nlohmann::json unpriced = e.unpriced;
    j["energy"] = {{"profile", profile.name},
                   {"total_pj", pj},
                   {"per_sample_pj", pj / static_cast<double>(batch)},
                   {"by_kind_pj", by_kind},
                   {"unpriced", unpriced}};
    return j;
}

po::options_description attention_options() {
    po::options_description d("ternion attention: run an ANN reference attention on HDF5 data");
    std::string list;
    for (auto& k : ann::kinds()) list += (list.empty() ? "" : ", ") + k;
    d.add_options()("help,h", "show this help")("kind", po::value<std::string>()->required(),
                                                ("attention kind: " + list).c_str())(
        "weights", po::value<std::string>()->required(),
        "HDF5 file of parameters named after the PyTorch ones (docs/ann-attention.md)")(
        "input", po::value<std::string>()->required(),
        "HDF5 file with /x float32 [batch, N, D] (and /t [batch, N] for time kinds)")(
        "output", po::value<std::string>()->required(), "HDF5 file to write /y [batch, N, D_out]")(
        "heads", po::value<std::int64_t>()->default_value(0),
        "heads (default: the weights' 'heads' dataset, or W_A's columns for CAT)")(
        "causal", po::value<int>(), "softmax / time kinds: 1 masks future keys (default 0)")(
        "renormalize", po::value<int>(), "cat-causal: 1 rescales each row's weights to sum 1")(
        "profile", po::value<std::string>()->default_value(hw::kDefaultProfile),
        "hardware profile pricing the ops in --json")("json", "print ops (and energy) as JSON")(
        "max-memory", po::value<std::string>(),
        "refuse a batch whose estimated memory is above this many bytes, e.g. 8G (default: 80 % "
        "of physical memory)");
    return d;
}

}  // namespace

int cmd_attention(const Args& args) {
    auto d = attention_options();
    if (help_asked(args, d)) return 0;
    auto vm = parse(args, d);
    const auto kind = vm["kind"].as<std::string>();
    const auto in_path = vm["input"].as<std::string>(), out_path = vm["output"].as<std::string>();

    {
        std::vector<NamedPath> inputs{{"input", in_path},
                                      {"weights", vm["weights"].as<std::string>()}};
        const auto profile = vm["profile"].as<std::string>();
        std::error_code ec;
        if (std::filesystem::is_regular_file(profile, ec)) inputs.push_back({"profile", profile});
        check_output("output", out_path, inputs);
    }

    ann::Options opt;
    opt.heads = vm["heads"].as<std::int64_t>();
    if (opt.heads < 0 || opt.heads > 1000000) throw OptionError("heads", "out of range");
    auto flag01 = [&](const char* name) -> std::optional<bool> {
        if (!vm.count(name)) return std::nullopt;
        int v = vm[name].as<int>();
        if (v != 0 && v != 1) throw OptionError(name, "expected 0 or 1");
        return v == 1;
    };
    opt.causal = flag01("causal");
    opt.renormalize = flag01("renormalize");
    memory_limit(vm);  // a malformed --max-memory fails before any file is read

    // The weights are held as floats (twice: as read and as the attention's matrices).
    const auto weights_path = vm["weights"].as<std::string>();
    check_memory(vm, static_cast<double>(resident_bytes()) + 2 * declared_bytes(weights_path),
                 "loading the weights");
    h5::Reader wr(weights_path);
    ann::H5Weights w(wr);
    auto att = ann::make_attention(kind, w, opt);

    h5::Reader xr(in_path);
    const AttentionInput xin = check_attention_input(xr, *att, kind);
    const std::int64_t batch = xin.batch, n = xin.n, dim = xin.dim;
    const std::vector<float>& t = xin.t;

    // Load the profile before the work so a bad name fails fast.
    std::optional<hw::Profile> profile;
    if (vm.count("json")) profile = hw::load_profile(vm["profile"].as<std::string>());

    check_attention_memory(vm, *att, batch, n, t.size());
    // Huge-page backed (sim/core/memory.hpp): the attention walks it a row or group at a time.
    LargeVector<float> y(static_cast<std::size_t>(batch * n * att->out_dim()));
    const auto sample_values = static_cast<std::size_t>(n * dim);
    const OpCounts ops = ann::run_batch(
        *att, batch, n,
        [&](std::int64_t b, float* x) { xr.read_float_rows("/x", b, 1, x, sample_values); },
        t.empty() ? nullptr : t.data(), y.data(), xr.path(), "/x");

    h5::write_atomically(out_path, [&](const std::string& tmp) {
        h5::Writer out(tmp);
        out.write("/y", y.data(), y.size(), {batch, n, att->out_dim()}, false);
        out.attr("/y", "kind", kind);
        out.close();
    });

    if (vm.count("json")) {
        std::cout << attention_json(kind, *att, batch, n, ops, *profile).dump(2) << "\n";
    }
    return 0;
}

}  // namespace ternion::cli
