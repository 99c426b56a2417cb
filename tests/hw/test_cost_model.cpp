// Tests of the hardware cost model: profiles load and are validated, and the three counting
// conventions price hand-built RunRecords to hand-computed energies.
#include <doctest/doctest.h>

#include <unistd.h>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "hw/cost_model.hpp"
#include "sim/core/data_path.hpp"
#include "sim/core/error.hpp"

using namespace ternion;
using namespace ternion::hw;
using nlohmann::json;

namespace {

// A layer record as the node of `type` describes itself: the traits and the attention closed
// form its node type publishes (sim/synaptic, attention/).
LayerRecord layer(const std::string& name, const std::string& type, NodeCategory cat) {
    LayerRecord l;
    l.name = name;
    l.type = type;
    l.category = cat;
    l.traits.connection = type == "Linear" || type == "Conv2d";
    l.traits.pooling = type == "SumPool2d";
    return l;
}

// A scratch directory removed at the end of the test.
struct TempDir {
    std::filesystem::path path;
    TempDir() {
        path = std::filesystem::temp_directory_path() /
               ("ternion_hw_test_" + std::to_string(::getpid()) + "_" +
                std::to_string(reinterpret_cast<std::uintptr_t>(this)));
        std::filesystem::create_directories(path);
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
    std::string write(const std::string& name, const std::string& text) const {
        auto p = path / name;
        std::ofstream(p) << text;
        return p.string();
    }
};

const char* kMinimal = R"({
  "name": "tmp", "description": "test",
  "ops": {"ac": {"pj": 1, "source": "s"}, "mac": {"pj": 2, "source": "s"}}
})";

// Loads `text` as a profile file and returns the key path of the refusal ("" if it loaded).
std::string refusal(const std::string& text) {
    TempDir d;
    std::string f = d.write("broken.json", text);
    try {
        load_profile(f);
    } catch (const InputError& e) {
        CHECK(e.file() == f);
        return e.field();
    }
    return "";
}

}  // namespace

TEST_CASE("every shipped profile loads, is named after its file, and lists") {
    auto list = list_profiles();
    std::vector<std::string> names;
    for (const auto& [n, desc] : list) {
        names.push_back(n);
        CHECK(desc.find("invalid") == std::string::npos);
        Profile p = load_profile(n);
        CHECK(p.name == n);
        CHECK(!p.description.empty());
        CHECK(p.price(kAc).has_value());
        CHECK(p.price(kMac).has_value());
        CHECK(!describe_profile(p).empty());
    }
    for (const char* want : {"horowitz45-fp32", "horowitz45-fp32-shift", "horowitz45-int8",
                             "loihi-like", "truenorth-like"})
        CHECK(std::find(names.begin(), names.end(), want) != names.end());
}

TEST_CASE("the default profile prices AC 0.9 pJ, MAC 4.6 pJ and nothing else") {
    Profile p = load_profile("horowitz45-fp32");
    CHECK(*p.price(kAc) == 0.9);
    CHECK(*p.price(kMac) == 4.6);
    for (int k = 2; k < kKinds; ++k) CHECK_FALSE(p.price(k).has_value());
    CHECK(p.price_source(kMac).find("3.7") != std::string::npos);
}

TEST_CASE("profile figures: int8 memory per byte, shift profile, Loihi, TrueNorth") {
    Profile i8 = load_profile("horowitz45-int8");
    // weights: 100 pJ per 8-byte access of a 1 MB SRAM, per byte as counted (at the stored width).
    CHECK(*i8.price(kind_index("weight_read_bytes")) == doctest::Approx(100.0 / 8));
    CHECK(*i8.price(kind_index("state_read_bytes")) == doctest::Approx(20.0 / 8));
    CHECK(*i8.price(kind_index("spike_write_bytes")) == doctest::Approx(10.0 / 8));
    CHECK(*i8.price(kAc) == 0.03);
    CHECK(*i8.price(kMac) == 0.23);
    Profile sh = load_profile("horowitz45-fp32-shift");
    CHECK(*sh.price(kind_index("shift")) == doctest::Approx(0.9 / 20));
    CHECK_FALSE(sh.price_verified(kind_index("shift")));
    Profile lo = load_profile("loihi-like");
    CHECK(*lo.price(kAc) == 23.6);
    CHECK(*lo.price(kind_index("neuron_update")) == 52.0);
    Profile tn = load_profile("truenorth-like");
    CHECK(*tn.price(kAc) == 26.0);
    REQUIRE(tn.clock_hz.has_value());
    CHECK(tn.clock_hz->value == 1000.0);
}

TEST_CASE("profile lookup: names, paths, env override, unknown names") {
    TempDir d;
    std::string f = d.write("mine.json", kMinimal);
    CHECK(load_profile(f).name == "tmp");  // a path
    CHECK_THROWS_AS(load_profile("no-such-profile"), OptionError);
    CHECK_THROWS_AS(load_profile((d.path / "absent.json").string()), InputError);

    const char* old = std::getenv("TERNION_PROFILE_DIR");
    std::string saved = old ? old : "";
    ::setenv("TERNION_PROFILE_DIR", d.path.c_str(), 1);
    CHECK(profile_dir() == d.path.string());
    CHECK(load_profile("mine").name == "tmp");
    auto list = list_profiles();
    REQUIRE(list.size() == 1);
    CHECK(list[0].first == "mine");
    CHECK(list[0].second == "test");
    if (old)
        ::setenv("TERNION_PROFILE_DIR", saved.c_str(), 1);
    else
        ::unsetenv("TERNION_PROFILE_DIR");
}

// Sets (or, with nullptr, unsets) an environment variable for one scope.
struct ScopedEnv {
    std::string name, saved;
    bool had;
    ScopedEnv(const char* n, const char* value) : name(n) {
        const char* old = std::getenv(n);
        had = old != nullptr;
        if (had) saved = old;
        if (value)
            ::setenv(n, value, 1);
        else
            ::unsetenv(n);
    }
    ~ScopedEnv() {
        if (had)
            ::setenv(name.c_str(), saved.c_str(), 1);
        else
            ::unsetenv(name.c_str());
    }
};

TEST_CASE("profile search order: TERNION_DATA_DIR, then next to the executable, then the sources") {
    ScopedEnv no_profile_dir("TERNION_PROFILE_DIR", nullptr);
    {
        ScopedEnv no_data_dir("TERNION_DATA_DIR", nullptr);
        auto dirs = profile_search_dirs();
        REQUIRE(dirs.size() == 2);
        // The test binary lives in the build tree: <build>/tests/../share/ternion/profiles.
        CHECK(dirs[0] == (std::filesystem::path(executable_dir()).parent_path() / "share" /
                          "ternion" / "profiles")
                             .string());
        CHECK(std::filesystem::path(dirs[1]).filename() == "profiles");
        // Nothing is installed next to the test binary: the source tree's profiles are used.
        CHECK(profile_dir() == dirs[1]);
        CHECK(load_profile(kDefaultProfile).name == kDefaultProfile);
    }
    TempDir d;
    std::filesystem::create_directories(d.path / "profiles");
    d.write("profiles/mine.json", kMinimal);
    ScopedEnv data_dir("TERNION_DATA_DIR", d.path.c_str());
    CHECK(profile_search_dirs() == std::vector<std::string>{(d.path / "profiles").string()});
    CHECK(load_profile("mine").name == "tmp");
    REQUIRE(list_profiles().size() == 1);
    // $TERNION_PROFILE_DIR wins over $TERNION_DATA_DIR.
    ScopedEnv profile_dir_env("TERNION_PROFILE_DIR", (d.path / "elsewhere").c_str());
    CHECK(profile_search_dirs() == std::vector<std::string>{(d.path / "elsewhere").string()});
    try {
        load_profile("mine");
        FAIL("an unknown profile loaded");
    } catch (const OptionError& e) {
        CHECK(std::string(e.what()).find("none; searched " + (d.path / "elsewhere").string()) !=
              std::string::npos);
    }
}

TEST_CASE("broken profiles are refused, naming the key") {
    CHECK(refusal(kMinimal) == "");
    CHECK(refusal(R"({"name":"x","description":"d","colour":1,
        "ops":{"ac":{"pj":1,"source":"s"},"mac":{"pj":2,"source":"s"}}})") == "colour");
    CHECK(refusal(R"({"name":"x","description":"d",
        "ops":{"ac":{"pj":-1,"source":"s"},"mac":{"pj":2,"source":"s"}}})") == "ops.ac.pj");
    CHECK(refusal(R"({"name":"x","description":"d",
        "ops":{"ac":{"pj":1,"source":"s"}}})") == "ops.mac");
    CHECK(refusal(R"({"name":"x","description":"d",
        "ops":{"ac":{"source":"s"},"mac":{"pj":2,"source":"s"}}})") == "ops.ac.pj");
    CHECK(refusal(R"({"name":"x","description":"d",
        "ops":{"ac":{"pj":1,"source":"s"},"mac":{"pj":2,"source":"s"},"shift":{"pj":0.1}}})") ==
          "ops.shift.source");
    CHECK(refusal(R"({"name":"x","description":"d",
        "ops":{"ac":{"pj":1,"source":"s"},"mac":{"pj":2,"source":"s"},"mul":{"pj":1,"source":"s"}}})") ==
          "ops.mul");
    CHECK(refusal(R"({"name":"x","description":"d",
        "ops":{"ac":{"pj":1,"source":"s","unit":"pJ"},"mac":{"pj":2,"source":"s"}}})") ==
          "ops.ac.unit");
    CHECK(refusal(R"({"name":"x","description":"d",
        "ops":{"ac":{"pj":"0.9","source":"s"},"mac":{"pj":2,"source":"s"}}})") == "ops.ac.pj");
    CHECK(refusal(R"({"name":"x","description":"d",
        "ops":{"ac":{"pj":1,"source":"s"},"mac":{"pj":2,"source":"s"}},
        "memory":{"levels":{"sram":{"pj":10,"bytes":8,"source":"s"}},
                  "traffic":{"weight_read_bytes":{"level":"dram","source":"s"}}}})") ==
          "memory.traffic.weight_read_bytes.level");
    CHECK(refusal(R"({"name":"x","description":"d",
        "ops":{"ac":{"pj":1,"source":"s"},"mac":{"pj":2,"source":"s"}},
        "memory":{"levels":{"sram":{"pj":10,"bytes":8}}}})") == "memory.levels.sram.source");
    CHECK(refusal(R"({"name":"x","description":"d",
        "ops":{"ac":{"pj":1,"source":"s"},"mac":{"pj":2,"source":"s"}},
        "clock_hz":{"value":0,"source":"s"}})") == "clock_hz.value");
    CHECK(refusal(R"({"name":"x",
        "ops":{"ac":{"pj":1,"source":"s"},"mac":{"pj":2,"source":"s"}}})") == "description");
    TempDir d;
    CHECK_THROWS_AS(load_profile(d.write("bad.json", R"({"name": "x", )")), InputError);
}

TEST_CASE("parse_count_mode") {
    CHECK(parse_count_mode("exact") == CountMode::exact);
    CHECK(parse_count_mode("neurobench") == CountMode::neurobench);
    CHECK(parse_count_mode("paper") == CountMode::paper);
    CHECK(parse_count_mode("syops") == CountMode::syops);
    // syops needs the per-step tallies, which a run collects only when asked.
    RunRecord untallied;
    CHECK_THROWS_AS(price(untallied, load_profile("horowitz45-fp32"), {CountMode::syops}),
                    std::invalid_argument);
    CHECK_THROWS_AS(parse_count_mode("flops"), OptionError);
}

TEST_CASE("exact mode under the default profile: 0.9 AC + 4.6 MAC per inference, exactly") {
    RunRecord run;
    run.samples = 3;
    run.timesteps = 4;
    LayerRecord in = layer("in", "Input", NodeCategory::input);
    in.ops.cmp = 120;  // e.g. Poisson encoding comparisons: counted, not priced by the default
    LayerRecord enc = layer("enc", "Conv2d", NodeCategory::synaptic);
    enc.ops.mac = 1000;
    enc.dense_macs_per_step = 250;
    LayerRecord lif = layer("lif", "LIF", NodeCategory::neuron);
    lif.ops.neuron_update = 480;
    lif.ops.cmp = 480;
    LayerRecord fc = layer("fc", "Linear", NodeCategory::synaptic);
    fc.ops.ac = 2001;
    fc.ops.shift = 7;
    fc.dense_macs_per_step = 100;
    run.layers = {in, enc, lif, fc};

    CostReport r = price(run, load_profile("horowitz45-fp32"), {});
    const double ac = 2001.0 / 3.0, mac = 1000.0 / 3.0;
    CHECK(r.per_inference_count[kAc] == ac);
    CHECK(r.per_inference_count[kMac] == mac);
    CHECK(r.per_inference_pj == 0.9 * ac + 4.6 * mac);  // exact, not approximate
    CHECK(r.per_inference_pj == doctest::Approx(600.3 + 1533.333333333));
    CHECK(r.total_pj == doctest::Approx(0.9 * 2001 + 4.6 * 1000));
    CHECK(r.layers[1].energy_total_pj == doctest::Approx(4600.0));
    CHECK(r.layers[3].energy_total_pj == doctest::Approx(1800.9));
    // ANN-equivalent: the dense architecture over T = 4 steps, (250 + 100) x 4 MACs x 4.6 pJ.
    CHECK(r.ann_macs_per_inference == 1400.0);
    CHECK(r.ann_pj_per_inference == doctest::Approx(6440.0));
    // cmp, shift and neuron_update were counted but the default prices none of them.
    CHECK(r.unpriced == std::vector<std::string>{"shift", "cmp", "neuron_update"});
    CHECK(r.profile_verified);
    CHECK_FALSE(r.latency_s.has_value());
}

TEST_CASE("exact mode with memory terms (horowitz45-int8)") {
    RunRecord run;
    run.samples = 1;
    run.timesteps = 2;
    LayerRecord fc = layer("fc", "Linear", NodeCategory::synaptic);
    fc.ops.ac = 100;
    fc.ops.mac = 10;
    fc.ops.weight_read_bytes = 200;  // 200 int8 weights
    LayerRecord lif = layer("lif", "LIF", NodeCategory::neuron);
    lif.ops.cmp = 10;
    lif.ops.neuron_update = 10;
    lif.ops.state_read_bytes = 16;
    lif.ops.state_write_bytes = 8;
    lif.ops.spike_write_bytes = 8;
    run.layers = {fc, lif};
    CostReport r = price(run, load_profile("horowitz45-int8"), {});
    // ac 100 x 0.03 = 3; mac 10 x 0.23 = 2.3; weights 200 x 100/8 = 2500;
    // cmp 10 x 0.1 = 1; neuron_update 10 x 0.3 = 3; state 16 x 20/8 = 40 and 8 x 20/8 = 20;
    // spikes 8 x 10/8 = 10.  Total 2579.3 pJ.
    CHECK(r.per_inference_energy_pj[kind_index("weight_read_bytes")] == doctest::Approx(2500.0));
    CHECK(r.per_inference_energy_pj[kind_index("state_read_bytes")] == doctest::Approx(40.0));
    CHECK(r.per_inference_energy_pj[kind_index("state_write_bytes")] == doctest::Approx(20.0));
    CHECK(r.per_inference_energy_pj[kind_index("spike_write_bytes")] == doctest::Approx(10.0));
    CHECK(r.per_inference_pj == doctest::Approx(2579.3));
    CHECK(r.layers[0].energy_total_pj == doctest::Approx(2505.3));
    CHECK(r.layers[1].energy_total_pj == doctest::Approx(74.0));
    CHECK(r.unpriced.empty());
    CHECK_FALSE(r.profile_verified);  // cmp and neuron_update are assumptions
}

TEST_CASE("prices by operand width: Horowitz's int8/int32 points, read between and beyond") {
    const Profile p = load_profile("horowitz45-int8");
    REQUIRE(p.widths);
    const WidthTable& w = *p.widths;
    // An add is linear in the bits through (8, 0.03) and (32, 0.1).
    CHECK(w.add_pj(8) == doctest::Approx(0.03));
    CHECK(w.add_pj(32) == doctest::Approx(0.1));
    CHECK(w.add_pj(16) == doctest::Approx(0.03 + 8.0 / 24.0 * 0.07));
    CHECK(w.add_pj(24) == doctest::Approx(0.03 + 16.0 / 24.0 * 0.07));
    CHECK(w.add_pj(4) == doctest::Approx(0.03 - 4.0 / 24.0 * 0.07));
    // A multiply is linear in the bits squared through (64, 0.2) and (1024, 3.1).
    CHECK(w.mult_pj(8) == doctest::Approx(0.2));
    CHECK(w.mult_pj(16) == doctest::Approx(0.2 + 192.0 / 960.0 * 2.9));
    CHECK(w.mult_pj(4) == doctest::Approx(0.2 - 48.0 / 960.0 * 2.9));
    CHECK(w.mult_pj(1) >= 0.0);

    // An int8 Linear whose sums go into 24-bit currents; a float32 Linear beside it.
    RunRecord run;
    run.samples = 2;
    run.timesteps = 1;
    LayerRecord q = layer("q", "Linear", NodeCategory::synaptic);
    q.traits.weight_value_bytes = 1;
    q.traits.accumulator_bits = 24;
    q.ops.ac = 100;
    q.ops.mac = 10;
    LayerRecord f = layer("f", "Linear", NodeCategory::synaptic);
    f.traits.weight_value_bytes = 4;
    f.ops.ac = 100;
    f.ops.mac = 10;
    run.layers = {q, f};
    const CostReport r = price(run, p, {});
    const double add24 = 0.03 + 16.0 / 24.0 * 0.07;
    const double q_pj = 100 * add24 + 10 * (0.2 + add24), f_pj = 100 * 0.03 + 10 * 0.23;
    CHECK(r.layers[0].energy_total_pj == doctest::Approx(q_pj));
    CHECK(r.layers[1].energy_total_pj == doctest::Approx(f_pj));
    CHECK(r.per_inference_energy_pj[kind_index("ac")] == doctest::Approx((100 * add24 + 3) / 2));
    CHECK(r.per_inference_pj == doctest::Approx((q_pj + f_pj) / 2));
    CHECK(r.layers[0].basis.find("int24 add") != std::string::npos);
    // Float sums (no integer consumer) are priced as 32-bit adds.
    run.layers[0].traits.accumulator_bits = 0;
    CHECK(price(run, p, {}).layers[0].energy_total_pj ==
          doctest::Approx(100 * 0.1 + 10 * (0.2 + 0.1)));
}

TEST_CASE("width tables are checked") {
    const std::string head = R"({"name": "tmp", "description": "t", "ops": {"ac": {"pj": 1,
        "source": "s"}, "mac": {"pj": 2, "source": "s"}}, "widths": )";
    CHECK(refusal(head + R"({"add": {"8": 1}, "mult": {"8": 1, "32": 2}, "source": "s"}})") ==
          "widths.add");
    CHECK(refusal(head + R"({"add": {"eight": 1, "32": 2}, "mult": {"8": 1, "32": 2},
        "source": "s"}})") == "widths.add.eight");
    CHECK(refusal(head + R"({"add": {"8": 1, "32": 2}, "mult": {"8": 1, "32": 2}}})") ==
          "widths.source");
    CHECK(refusal(head + R"({"add": {"8": 1, "32": 2}, "mult": {"8": -1, "32": 2},
        "source": "s"}})") == "widths.mult.8");
}

TEST_CASE("latency and static power from clock_hz and static_power_w") {
    TempDir d;
    std::string f = d.write("p.json", R"({"name":"p","description":"d",
        "ops":{"ac":{"pj":10,"source":"s"},"mac":{"pj":20,"source":"s"}},
        "static_power_w":{"value":0.002,"source":"s"},"clock_hz":{"value":1000,"source":"s"}})");
    RunRecord run;
    run.samples = 2;
    run.timesteps = 5;
    LayerRecord fc = layer("fc", "Linear", NodeCategory::synaptic);
    fc.ops.ac = 200;  // 100 per inference -> 1000 pJ
    run.layers = {fc};
    CostReport r = price(run, load_profile(f), {});
    // 5 steps at 1 kHz = 5 ms; 2 mW x 5 ms = 10 uJ = 1e7 pJ; power (1e3 + 1e7) pJ / 5 ms.
    REQUIRE(r.latency_s.has_value());
    CHECK(*r.latency_s == doctest::Approx(0.005));
    CHECK(*r.static_energy_pj == doctest::Approx(1e7));
    CHECK(*r.average_power_w == doctest::Approx((1e3 + 1e7) * 1e-12 / 0.005));
    CHECK(r.per_inference_pj == doctest::Approx(1000.0));  // static kept apart
}

namespace {

// S = 2 samples, T = 4 steps:
//   in (Input) -> conv1 (Conv2d, analog input) -> lif1 -> pool (SumPool2d) -> fc (Linear)
//   -> lif2 -> attn (ternion.SSA) -> out
RunRecord small_net() {
    RunRecord run;
    run.samples = 2;
    run.timesteps = 4;
    LayerRecord in = layer("in", "Input", NodeCategory::input);
    LayerRecord conv = layer("conv1", "Conv2d", NodeCategory::synaptic);
    conv.input_ternary = false;
    conv.in_size = 50;
    conv.nonzero_in = 400;  // all 50 x 4 x 2 elements non-zero
    conv.ops.mac = 800;
    conv.synapses = {0, 800};  // the same 800 (input, weight) pairs, analog steps
    conv.dense_macs_per_step = 100;
    conv.dense_synops_per_step = 100;
    LayerRecord lif1 = layer("lif1", "LIF", NodeCategory::neuron);
    lif1.ops.neuron_update = 80;
    LayerRecord pool = layer("pool", "SumPool2d", NodeCategory::synaptic);
    pool.ops.ac = 40;
    pool.dense_macs_per_step = 10;
    LayerRecord fc = layer("fc", "Linear", NodeCategory::synaptic);
    fc.in_size = 100;
    fc.nonzero_in = 200;  // fr = 200 / (100 x 2 x 4) = 0.25
    fc.ops.ac = 300;
    fc.synapses = {300, 0};
    fc.dense_macs_per_step = 400;
    fc.dense_synops_per_step = 50;
    LayerRecord lif2 = layer("lif2", "LIF", NodeCategory::neuron);
    LayerRecord attn = layer("attn", "ternion.SDSA", NodeCategory::attention);
    attn.in_size = 64;
    attn.nonzero_in = 64;  // fr = 64 / (64 x 8) = 0.125
    attn.ops.ac = 600;
    attn.dense_macs_per_step = 200;
    LayerRecord out = layer("out", "Output", NodeCategory::output);
    run.layers = {in, conv, lif1, pool, fc, lif2, attn, out};
    return run;
}

}  // namespace

TEST_CASE("neurobench mode: Dense, Effective ACs/MACs, attention matmul apart") {
    CostReport r = price(small_net(), load_profile("horowitz45-fp32"), {CountMode::neurobench});
    REQUIRE(r.neurobench.has_value());
    const auto& nb = *r.neurobench;
    // Dense = (100 + 50) synops per step x T=4, per sample.
    CHECK(nb.dense == doctest::Approx(600.0));
    // conv1 has analog input: its 800 ops over 2 samples are Effective_MACs.
    CHECK(nb.effective_macs == doctest::Approx(400.0));
    // fc has spike input: 300 / 2 Effective_ACs; the pool's 40 ACs are not counted.
    CHECK(nb.effective_acs == doctest::Approx(150.0));
    CHECK(nb.attention_matmul_ac == doctest::Approx(300.0));
    CHECK(nb.attention_matmul_pj == doctest::Approx(270.0));
    // Energy: (150 + 300) AC x 0.9 + 400 MAC x 4.6 = 405 + 1840.
    CHECK(r.per_inference_count[kAc] == doctest::Approx(450.0));
    CHECK(r.per_inference_pj == doctest::Approx(2245.0));
    CHECK(r.layers[3].count[kAc] == 0.0);
    CHECK(r.layers[6].attention_matmul);
}

TEST_CASE("neurobench mode: projections inside an attention node are Effective ops") {
    RunRecord run;
    run.samples = 1;
    run.timesteps = 2;
    LayerRecord attn = layer("ssa", "ternion.SSA", NodeCategory::attention);
    attn.ops.ac = 1000;
    // 700 projection ACs from 650 (input, weight) pairs: 600 at ternary steps, 50 at steps
    // with a residual 2 (two ACs each, one NeuroBench MAC each).
    attn.attention.q_spikes = 5;
    attn.attention.proj_ac = 700;
    attn.synapses = {600, 50};
    attn.dense_synops_per_step = 900;
    run.layers = {attn};
    CostReport r = price(run, load_profile("horowitz45-fp32"), {CountMode::neurobench});
    CHECK(r.neurobench->dense == doctest::Approx(1800.0));
    CHECK(r.neurobench->effective_acs == doctest::Approx(600.0));
    CHECK(r.neurobench->effective_macs == doctest::Approx(50.0));
    CHECK(r.neurobench->attention_matmul_ac == doctest::Approx(300.0));
    CHECK(r.per_inference_pj == doctest::Approx(900.0));
}

TEST_CASE("paper mode: encoding MAC (x T or once) + E_AC x sum fr T FLOPs") {
    Profile p = load_profile("horowitz45-fp32");
    CostReport r = price(small_net(), p, {CountMode::paper, true});
    REQUIRE(r.paper.has_value());
    // conv1: encoding layer, 100 FLOPs x T=4 = 400 MACs per inference.
    CHECK(r.paper->encoding_layer == "conv1");
    CHECK(r.paper->encoding_mac == doctest::Approx(400.0));
    // fc: SOP = 0.25 x 4 x 400 = 400.  attn (SDSA, no closed form here): 0.125 x 4 x 200 = 100.
    CHECK(r.layers[4].sop == doctest::Approx(400.0));
    CHECK(r.layers[6].sop == doctest::Approx(100.0));
    CHECK(r.paper->sop == doctest::Approx(500.0));
    // pool and neurons are not in the formula.
    CHECK(r.layers[3].count[kAc] == 0.0);
    // E = 4.6 x 400 + 0.9 x 500 = 1840 + 450.
    CHECK(r.per_inference_pj == doctest::Approx(2290.0));
    CHECK(r.per_inference_pj ==
          0.9 * r.per_inference_count[kAc] + 4.6 * r.per_inference_count[kMac]);
    bool noted = false;
    for (const auto& n : r.notes) noted |= n.find("'attn'") != std::string::npos;
    CHECK(noted);

    CostReport once = price(small_net(), p, {CountMode::paper, false});
    // Encoding billed once: 4.6 x 100 + 0.9 x 500 = 460 + 450.
    CHECK(once.paper->encoding_mac == doctest::Approx(100.0));
    CHECK(once.per_inference_pj == doctest::Approx(910.0));
}

TEST_CASE("paper mode: spike input means no encoding MAC; later analog layers stay AC") {
    RunRecord run = small_net();
    run.layers[1].input_ternary = true;  // DVS-style spike input into conv1
    run.layers[1].nonzero_in = 80;       // fr = 80 / (50 x 8) = 0.2
    run.layers[4].input_ternary = false;
    CostReport r = price(run, load_profile("horowitz45-fp32"), {CountMode::paper});
    CHECK(r.paper->encoding_mac == 0.0);
    CHECK(r.paper->encoding_layer.empty());
    // SOP: conv1 0.2 x 4 x 100 = 80; fc 400; attn 100.
    CHECK(r.paper->sop == doctest::Approx(580.0));
    CHECK(r.per_inference_pj == doctest::Approx(0.9 * 580.0));
}

// A hand-worked Spikformer encoder block in paper mode (S = 2 samples, T = 4, N = 64 tokens,
// D = 384, H = 12 heads, so D/H = 32; input is spikes, so no layer is billed as MAC).
//   qkv  Linear D -> 3D on x, fr_in 0.25:  FLOPs = 3 N D^2 = 28,311,552
//        SOP = 0.25 x 4 x 28,311,552                     = 28,311,552
//   ssa  ternion.SSA, q/k/v spikes over S T N D = 2 x 4 x 64 x 384 = 196,608 elements:
//        q 24,576 -> fr_Q = 0.125; k 49,152 -> fr_K = 0.25; v 36,864 -> fr_V = 0.1875
//        AC = T H N (D/H)^2 (min(fr_K, fr_V) + fr_Q)
//           = 4 x 12 x 64 x 1024 x (0.1875 + 0.125) = 3,145,728 x 0.3125 = 983,040
//   proj Linear D -> D, fr_in 0.125: FLOPs = N D^2 = 9,437,184; SOP = 0.125 x 4 x 9,437,184
//                                                                        = 4,718,592
//   mlp1 Linear D -> 4D, fr_in 0.5: FLOPs = 4 N D^2 = 37,748,736; SOP = 75,497,472
//   mlp2 Linear 4D -> D, fr_in 0.0625: FLOPs = 37,748,736; SOP = 0.0625 x 4 x FLOPs = 9,437,184
//   sum SOP = 28,311,552 + 983,040 + 4,718,592 + 75,497,472 + 9,437,184 = 118,947,840
//   E = 0.9 pJ x 118,947,840 = 107,053,056 pJ (about 107 uJ) per inference.
//   ANN-equivalent: FLOPs 28,311,552 + 9,437,184 + 2 x 37,748,736 + SSA 2 N^2 D (3,145,728)
//                 = 116,391,936 MACs per step; x T = 4 steps = 465,567,744 MACs
//                 x 4.6 pJ = 2,141,611,622.4 pJ.
TEST_CASE("paper mode: hand-worked Spikformer block with the SSA closed form") {
    const std::int64_t S = 2, T = 4, N = 64, D = 384, H = 12;
    const std::uint64_t ND = N * D;
    auto linear = [&](const char* name, std::uint64_t in, std::uint64_t flops, double fr) {
        LayerRecord l = layer(name, "Linear", NodeCategory::synaptic);
        l.in_size = static_cast<std::int64_t>(in);
        l.nonzero_in = static_cast<std::uint64_t>(fr * static_cast<double>(in * S * T));
        l.dense_macs_per_step = flops;
        l.dense_synops_per_step = flops;
        return l;
    };
    LayerRecord ssa = layer("ssa", "ternion.SSA", NodeCategory::attention);
    ssa.in_size = 3 * ND;
    ssa.nonzero_in = 12345;  // not used by the closed form
    ssa.dense_macs_per_step = 2 * N * N * D;
    ssa.attention.q_spikes = 24576;
    ssa.attention.k_spikes = 49152;
    ssa.attention.v_spikes = 36864;
    // The projections are the separate "qkv" layer here, so the node has none of its own.
    ssa.attention_shape = AttentionShape{N, D, H, D, 0, AttentionClosedForm::qkv_products};
    RunRecord run;
    run.samples = S;
    run.timesteps = T;
    run.layers = {linear("qkv", ND, 3 * ND * D, 0.25), ssa, linear("proj", ND, ND * D, 0.125),
                  linear("mlp1", ND, 4 * ND * D, 0.5), linear("mlp2", 4 * ND, 4 * ND * D, 0.0625)};
    CostReport r = price(run, load_profile("horowitz45-fp32"), {CountMode::paper});
    CHECK(r.layers[0].sop == doctest::Approx(28311552.0));
    CHECK(r.layers[1].sop == doctest::Approx(983040.0));
    CHECK(r.paper->attention_ac == doctest::Approx(983040.0));
    CHECK(r.layers[2].sop == doctest::Approx(4718592.0));
    CHECK(r.layers[3].sop == doctest::Approx(75497472.0));
    CHECK(r.layers[4].sop == doctest::Approx(9437184.0));
    CHECK(r.paper->sop == doctest::Approx(118947840.0));
    CHECK(r.paper->encoding_mac == 0.0);
    CHECK(r.per_inference_pj == doctest::Approx(107053056.0));
    CHECK(r.ann_macs_per_inference == 465567744.0);
    CHECK(r.ann_pj_per_inference == doctest::Approx(2141611622.4));
    CHECK(r.layers[1].basis.find("closed form") != std::string::npos);

    // Without its structure the SSA layer falls back to fr_in x T x FLOPs and says so:
    // fr_in = 12345 / (73,728 x 8), FLOPs = 3,145,728 -> SOP = 12345 x 3,145,728 x 4 / 589,824.
    run.layers[1].attention_shape.reset();
    CostReport fb = price(run, load_profile("horowitz45-fp32"), {CountMode::paper});
    CHECK(fb.layers[1].sop == doctest::Approx(12345.0 * 3145728.0 * 4.0 / 589824.0));
    bool noted = false;
    for (const auto& n : fb.notes) noted |= n.find("'ssa'") != std::string::npos;
    CHECK(noted);
}

TEST_CASE("add_to_json adds the documented keys, matched by layer name") {
    json doc = {{"samples", 2},
                {"timesteps", 4},
                {"layers", json::array({{{"name", "fc"}, {"type", "Linear"}},
                                        {{"name", "conv1"}, {"type", "Conv2d"}},
                                        {{"name", "ghost"}, {"type", "LIF"}}})},
                {"per_inference", {{"ops", json::object()}}},
                {"ann_equivalent", {{"mac", 510}}}};
    CostReport r = price(small_net(), load_profile("horowitz45-fp32"), {CountMode::neurobench});
    add_to_json(r, doc);
    CHECK(doc["profile"]["name"] == "horowitz45-fp32");
    CHECK(doc["count_mode"] == "neurobench");
    // fc: 150 AC per inference x 0.9; conv1: 400 MAC x 4.6.
    CHECK(doc["layers"][0]["energy_pj"].get<double>() == doctest::Approx(135.0));
    CHECK(doc["layers"][0]["energy_by_kind_pj"]["ac"].get<double>() == doctest::Approx(135.0));
    CHECK(doc["layers"][1]["energy_pj"].get<double>() == doctest::Approx(1840.0));
    CHECK_FALSE(doc["layers"][2].contains("energy_pj"));
    CHECK(doc["per_inference"]["energy_pj"].get<double>() == doctest::Approx(2245.0));
    CHECK(doc["per_inference"]["energy_by_kind_pj"]["mac"].get<double>() ==
          doctest::Approx(1840.0));
    CHECK(doc["ann_equivalent"]["mac"] == 510);  // left alone
    CHECK(doc["ann_equivalent"]["energy_pj"].get<double>() ==
          doctest::Approx(710.0 * 4 * 4.6));  // T = 4
    CHECK(doc["ann_equivalent"]["energy_ratio"].get<double>() == doctest::Approx(2245.0 / 13064.0));
    CHECK(doc["neurobench"]["Dense"].get<double>() == doctest::Approx(600.0));
    CHECK(doc["neurobench"]["Effective_ACs"].get<double>() == doctest::Approx(150.0));
    CHECK(doc["neurobench"]["Effective_MACs"].get<double>() == doctest::Approx(400.0));
    CHECK(doc["neurobench"]["attention_matmul"]["ac"].get<double>() == doctest::Approx(300.0));
    CHECK(doc["energy_total_pj"].get<double>() == doctest::Approx(4490.0));

    json paper;
    add_to_json(price(small_net(), load_profile("horowitz45-fp32"), {CountMode::paper}), paper);
    CHECK(paper["paper"]["SOP"].get<double>() == doctest::Approx(500.0));
    CHECK(paper["paper"]["encoding_MAC"].get<double>() == doctest::Approx(400.0));
    CHECK(paper["layers"].size() == 8);  // created from the report when absent
    CHECK(paper["layers"][4]["sop"].get<double>() == doctest::Approx(400.0));
}

TEST_CASE("format_table shows layers, totals and notes") {
    CostReport r = price(small_net(), load_profile("horowitz45-fp32"), {CountMode::exact});
    std::string t = format_table(r);
    CHECK(t.find("horowitz45-fp32") != std::string::npos);
    CHECK(t.find("conv1") != std::string::npos);
    CHECK(t.find("total") != std::string::npos);
    CHECK(t.find("neuron_update") != std::string::npos);  // listed as unpriced
    CHECK(t.find("lif2") == std::string::npos);           // nothing to show for it
}

TEST_CASE("an empty run prices to zero in every mode, never NaN") {
    RunRecord run;  // 0 samples, 0 steps
    run.tallies = tallies_for(CountMode::syops);
    run.layers = {layer("fc", "Linear", NodeCategory::synaptic)};
    run.layers[0].dense_synops_per_step = 10;
    for (CountMode m :
         {CountMode::exact, CountMode::neurobench, CountMode::paper, CountMode::syops}) {
        CostReport r = price(run, load_profile("horowitz45-fp32"), {m});
        CHECK(r.per_inference_pj == 0.0);
        CHECK(r.total_pj == 0.0);
        if (r.neurobench) CHECK(r.neurobench->effective_acs == 0.0);
    }
}

TEST_CASE("lemaire profile: memory per byte by buffer size (chip-model.md E.5)") {
    const Profile p = load_profile("lemaire");
    REQUIRE(p.by_buffer_size);
    const BufferSizeRule& b = *p.by_buffer_size;
    // Horowitz's 64-bit SRAM reads over SpikingJelly's 4-byte access width, linear between.
    CHECK(b.pj_per_byte(20 * 1024) == doctest::Approx(2.5 + 2.5 * 12288.0 / 24576.0));
    CHECK(b.pj_per_byte(20 * 1024) == doctest::Approx(3.75));
    CHECK(b.pj_per_byte(5120) == doctest::Approx(1.5625));
    CHECK(b.pj_per_byte(8192) == doctest::Approx(10.0 / 4));
    CHECK(b.pj_per_byte(1 << 20) == doctest::Approx(100.0 / 4));
    CHECK(b.pj_per_byte(2 << 20) == doctest::Approx(25.0));  // held above 1 MiB
    CHECK(b.pj_per_byte(0) == 0.0);
    CHECK(*p.price(kAc) == doctest::Approx(0.1));   // int32 add
    CHECK(*p.price(kMac) == doctest::Approx(3.2));  // int32 multiply + add
}

TEST_CASE("broken memory.by_buffer_size is refused, naming the point") {
    auto with = [](const std::string& rule) {
        return refusal(R"({"name":"x","description":"d",
            "ops":{"ac":{"pj":1,"source":"s"},"mac":{"pj":2,"source":"s"}},
            "memory":{"by_buffer_size":)" +
                       rule + "}}");
    };
    CHECK(with(R"({"points":[[0,0],[8,1]],"source":"s"})") == "");
    CHECK(with(R"({"points":[[0,0]],"source":"s"})") == "memory.by_buffer_size.points");
    CHECK(with(R"({"points":[[0,0],[0,1]],"source":"s"})") == "memory.by_buffer_size.points[1]");
    CHECK(with(R"({"points":[[-1,0],[8,1]],"source":"s"})") == "memory.by_buffer_size.points[0]");
    CHECK(with(R"({"points":[[0,0],[8]],"source":"s"})") == "memory.by_buffer_size.points[1]");
    CHECK(with(R"({"points":[[0,0],[8,1]]})") == "memory.by_buffer_size.source");
    CHECK(with(R"({"points":[[0,0],[8,1]],"source":"s","unit":"pJ"})") ==
          "memory.by_buffer_size.unit");
}

TEST_CASE("lemaire mode prices its tallies by SpikingJelly's formula") {
    // S = 2 samples, T = 3 steps: a Linear 8 -> 4 with a bias, fed spikes at 5 of its 6 calls
    // (12 non-zero inputs in all) and an analog input once, and the LIF it feeds.
    RunRecord run;
    run.samples = 2;
    run.timesteps = 3;
    run.tallies = tallies_for(CountMode::lemaire);
    LayerRecord fc = layer("fc", "Linear", NodeCategory::synaptic);
    fc.traits.fanout_taps = 4;
    fc.in_size = 8;
    fc.neurons = 4;
    fc.dense_macs_per_step = 32;
    // binary calls, their non-zero inputs, elements read in / written out / of weights read,
    // and the per-sample largest of those three summed over the two samples.
    fc.tallies = {5, 12, 40, 24, 300, 20, 8, 100};
    LayerRecord lif = layer("lif", "ternion.SJLIF", NodeCategory::neuron);
    lif.neurons = 4;
    lif.tallies = {6, 150, 100, 144, 48, 0, 0, 0};  // calls, reads, writes, acc, mac
    run.layers = {fc, lif};
    const CostReport r = price(run, load_profile("lemaire"), {CountMode::lemaire});
    const auto& f = r.figures;
    CHECK(f.at("lemaire.synop") == doctest::Approx(4.0 * 12 / 2));
    CHECK(f.at("lemaire.ac") == doctest::Approx(4.0 * 12 / 2));
    CHECK(f.at("lemaire.mac") == doctest::Approx(32.0 / 2));
    CHECK(f.at("lemaire.acc_addr") == doctest::Approx((4.0 * 12 + (8 + 4)) / 2));
    CHECK(f.at("lemaire.mac_addr") == 0.0);
    CHECK(f.at("lemaire.state_acc") == doctest::Approx(72));
    CHECK(f.at("lemaire.state_mac") == doctest::Approx(24));
    CHECK(f.at("lemaire.read_in_bytes") == doctest::Approx(80));
    CHECK(f.at("lemaire.read_params_bytes") == doctest::Approx(600));
    CHECK(f.at("lemaire.read_in_buffer_bytes") == doctest::Approx(40));
    CHECK(f.at("lemaire.params_buffer_bytes") == doctest::Approx(200));
    CHECK(f.at("lemaire.potential_buffer_bytes") == doctest::Approx(16));
    // ops (24 + 24 + 72) x 0.1 + (16 + 24) x 3.2; addressing 30 x 0.1; memory: each byte at its
    // buffer's 2.5 x B / 8192 pJ (all buffers below 8 KiB).
    const double ops = 120 * 0.1 + 40 * 3.2, addr = 30 * 0.1;
    const double mem = (80.0 * 40 + 48 * 16 + 600 * 200 + (300 + 200) * 16) * 2.5 / 8192;
    CHECK(f.at("lemaire.ops_pj") == doctest::Approx(ops));
    CHECK(f.at("lemaire.addressing_pj") == doctest::Approx(addr));
    CHECK(f.at("lemaire.memory_pj") == doctest::Approx(mem));
    CHECK(r.per_inference_pj == doctest::Approx(ops + addr + mem));
    CHECK(r.total_pj == doctest::Approx(2 * (ops + addr + mem)));
    CHECK(headline(r).text.find("memory by buffer size") != std::string::npos);
    // An empty run prices to zero, never NaN.
    RunRecord empty;
    empty.tallies = tallies_for(CountMode::lemaire);
    empty.layers = {layer("fc", "Linear", NodeCategory::synaptic)};
    const CostReport z = price(empty, load_profile("lemaire"), {CountMode::lemaire});
    CHECK(z.per_inference_pj == 0.0);
    CHECK(z.total_pj == 0.0);
}
