// Model and input files: NIR layout details, and one clear error naming the file and the field
// for each kind of bad input.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>

#include "tests/support/model_file.hpp"
#include "tests/support/run_model.hpp"

using namespace ternion;
using namespace ternion::test;

namespace {

ModelFile small(std::map<std::string, Param> lif = {
                    {"tau", P(0.02)}, {"r", P(1.0)}, {"v_leak", P(0.0)}, {"v_threshold", P(1.0)}}) {
    ModelFile f;
    f.node("input", "Input", {{"shape", P({4.0})}})
        .node("fc", "Affine",
              {{"weight", P(std::vector<double>(12, 0.5), {3, 4})}, {"bias", P({0.0, 0.0, 0.0})}})
        .node("lif", "LIF", std::move(lif))
        .node("output", "Output")
        .edge("input", "fc")
        .edge("fc", "lif")
        .edge("lif", "output");
    return f;
}

// Input[n] -> Linear -> Output.
ModelFile linear(double n, Param weight) {
    ModelFile f;
    f.node("input", "Input", {{"shape", P({n})}})
        .node("fc", "Linear", {{"weight", std::move(weight)}})
        .node("output", "Output")
        .chain({"input", "fc", "output"});
    return f;
}

// Loading must fail with one InputError/OptionError whose text names `file` and `field`.
void expect_error(const std::function<void()>& fn, const std::string& file,
                  const std::string& field) {
    try {
        fn();
        FAIL("no error raised");
    } catch (const Error& e) {
        std::string msg = e.what();
        INFO(msg);
        CHECK(msg.find(file) != std::string::npos);
        CHECK(msg.find(field) != std::string::npos);
    }
}

void load(const std::string& p) {
    LoadReport r;
    load_model(p, {}, r);
}

}  // namespace

TEST_CASE("a well-formed file loads, with v_reset defaulting to 0 and dt from metadata") {
    TempFile m;
    small().meta("dt", 1e-4).write(m.path());
    LoadReport rep;
    auto g = load_model(m.path(), {}, rep);
    CHECK(g->size() == 4);
    CHECK(rep.used.dt == 1e-4);
    CHECK(rep.dt_source == "file metadata");
    REQUIRE(!rep.notes.empty());
    CHECK(rep.notes[0].find("metadata") != std::string::npos);
    UserLoadOptions lo;
    lo.dt = 1e-3;
    LoadReport rep2;
    load_model(m.path(), lo, rep2);
    CHECK(rep2.used.dt == 1e-3);
}

TEST_CASE("a nested NIRGraph (snnTorch RLeaky style) is flattened with its recurrence") {
    TempFile m;
    {
        h5::Writer w(m.path());
        w.write_string("/node/type", "NIRGraph");
        auto node = [&](const std::string& g, const std::string& type) {
            w.group(g);
            w.write_string(g + "/type", type);
        };
        node("/node/nodes/input", "Input");
        w.write("/node/nodes/input/shape", std::vector<double>{2}, {1}, false);
        node("/node/nodes/rnn", "NIRGraph");
        node("/node/nodes/rnn/nodes/input", "Input");
        w.write("/node/nodes/rnn/nodes/input/shape", std::vector<double>{2}, {1}, false);
        node("/node/nodes/rnn/nodes/lif", "CubaLIF");
        for (auto [k, v] : {std::pair{"tau_syn", 0.01},
                            {"tau_mem", 0.02},
                            {"r", 1.0},
                            {"v_leak", 0.0},
                            {"v_threshold", 1.0},
                            {"w_in", 1.0}})
            w.write(std::string("/node/nodes/rnn/nodes/lif/") + k, std::vector<double>{v, v}, {2},
                    false);
        node("/node/nodes/rnn/nodes/w_rec", "Linear");
        w.write("/node/nodes/rnn/nodes/w_rec/weight", std::vector<double>{0, 1, 1, 0}, {2, 2},
                false);
        node("/node/nodes/rnn/nodes/output", "Output");
        w.write_strings("/node/nodes/rnn/edges",
                        {"input", "lif", "lif", "w_rec", "w_rec", "lif", "lif", "output"}, {4, 2});
        node("/node/nodes/output", "Output");
        w.write_strings("/node/edges", {"input", "rnn", "rnn", "output"}, {2, 2});
        w.close();
    }
    LoadReport rep;
    auto g = load_model(m.path(), {}, rep);
    CHECK(g->find("rnn.lif") >= 0);
    CHECK(g->find("rnn.w_rec") >= 0);
    int delayed = 0;
    for (auto& e : g->edges()) delayed += e.delayed;
    CHECK(delayed == 1);
}

TEST_CASE("bad model files: each error names the file and the field") {
    TempFile m;
    SUBCASE("missing file") {
        expect_error([&] { load("/nonexistent/model.h5"); }, "/nonexistent/model.h5",
                     "no such file");
    }
    SUBCASE("not HDF5") {
        std::ofstream(m.path()) << "this is not an HDF5 file";
        expect_error([&] { load(m.path()); }, m.path(), "not an HDF5 file");
    }
    SUBCASE("truncated HDF5") {
        small().write(m.path());
        auto size = std::filesystem::file_size(m.path());
        std::filesystem::resize_file(m.path(), size / 2);
        expect_error([&] { load(m.path()); }, m.path(), "");
    }
    SUBCASE("unknown node type") {
        ModelFile f = small();
        f.node("weird", "Spiral", {}).edge("lif", "weird");
        f.write(m.path());
        expect_error([&] { load(m.path()); }, m.path(), "nodes/weird/type");
    }
    SUBCASE("NaN in a parameter") {
        small(
            {{"tau", P(std::nan(""))}, {"r", P(1.0)}, {"v_leak", P(0.0)}, {"v_threshold", P(1.0)}})
            .write(m.path());
        expect_error([&] { load(m.path()); }, m.path(), "nodes/lif/tau");
    }
    SUBCASE("Inf in a parameter") {
        small({{"tau", P(0.02)}, {"r", P(1.0)}, {"v_leak", P(0.0)}, {"v_threshold", P(INFINITY)}})
            .write(m.path());
        expect_error([&] { load(m.path()); }, m.path(), "nodes/lif/v_threshold");
    }
    SUBCASE("negative time constant") {
        small({{"tau", P(-0.02)}, {"r", P(1.0)}, {"v_leak", P(0.0)}, {"v_threshold", P(1.0)}})
            .write(m.path());
        expect_error([&] { load(m.path()); }, m.path(), "nodes/lif/tau");
    }
    SUBCASE("zero time constant") {
        small({{"tau", P(0.0)}, {"r", P(1.0)}, {"v_leak", P(0.0)}, {"v_threshold", P(1.0)}})
            .write(m.path());
        expect_error([&] { load(m.path()); }, m.path(), "must be positive");
    }
    SUBCASE("shapes that do not match between nodes") {
        linear(5, P(std::vector<double>(12, 0.5), {3, 4})).write(m.path());
        expect_error([&] { load(m.path()); }, m.path(), "nodes/fc/weight");
    }
    SUBCASE("per-neuron parameters of the wrong length") {
        small(
            {{"tau", P({0.02, 0.02})}, {"r", P(1.0)}, {"v_leak", P(0.0)}, {"v_threshold", P(1.0)}})
            .write(m.path());
        expect_error([&] { load(m.path()); }, m.path(), "nodes/lif/tau");
    }
    SUBCASE("absurd declared size") {
        ModelFile f;
        f.node("input", "Input", {{"shape", P({1e6, 1e6, 1e3})}})
            .node("output", "Output")
            .edge("input", "output");
        f.write(m.path());
        expect_error([&] { load(m.path()); }, m.path(), "nodes/input/shape");
    }
    SUBCASE("edge to a missing node") {
        ModelFile f = small();
        f.edge("lif", "ghost");
        f.write(m.path());
        expect_error([&] { load(m.path()); }, m.path(), "ghost");
    }
    SUBCASE("a weight that is not a matrix") {
        linear(4, P(std::vector<double>(4, 0.5))).write(m.path());
        expect_error([&] { load(m.path()); }, m.path(), "nodes/fc/weight");
    }
}

TEST_CASE("bad input files: each error names the file and the dataset") {
    TempFile m, in;
    small().write(m.path());
    auto open = [&] { return open_input(in.path(), {}); };
    SUBCASE("spike values outside {-1, 0, 1}") {
        write_spikes(in.path(), {0, 2, 0, 0}, {1, 1, 4});
        expect_error([&] { open(); }, in.path(), "/spikes");
    }
    SUBCASE("NaN in analog data") {
        write_data(in.path(), {0.1f, NAN, 0.0f, 0.0f}, {1, 4});
        expect_error([&] { open(); }, in.path(), "/data");
    }
    SUBCASE("labels of the wrong length") {
        write_spikes(in.path(), std::vector<std::int8_t>(8, 0), {2, 1, 4}, {1, 2, 3});
        expect_error([&] { open(); }, in.path(), "/labels");
    }
    SUBCASE("no data at all") {
        h5::Writer w(in.path());
        w.write("/other", std::vector<float>{1}, {1});
        w.close();
        expect_error([&] { open(); }, in.path(), "no /spikes or /data");
    }
    SUBCASE("input shape different from the model's") {
        write_spikes(in.path(), std::vector<std::int8_t>(5, 0), {1, 1, 5});
        expect_error([&] { run_file(m.path(), in.path()); }, in.path(), "shape");
    }
}

TEST_CASE("Poisson coding: rate |x| per step, sign(x) polarity, reproducible by seed") {
    TempFile in;
    write_data(in.path(), {0.3f, -0.1f, 0.0f, 1.5f}, {1, 4});
    auto src = open_input(in.path(), {Encoding::poisson, 0});
    Activity a;
    a.resize(4);
    OpCounts ops;
    std::array<std::int64_t, 4> pos{}, neg{};
    const int T = 20000;
    for (int t = 0; t < T; ++t) {
        a.clear();
        src->fill(0, t, 42, a, ops);
        for (auto i : a.active) (a.values[i] > 0 ? pos : neg)[i]++;
    }
    CHECK(static_cast<double>(pos[0]) / T == doctest::Approx(0.3).epsilon(0.05));
    CHECK(neg[0] == 0);
    CHECK(static_cast<double>(neg[1]) / T == doctest::Approx(0.1).epsilon(0.08));
    CHECK(pos[2] + neg[2] == 0);
    CHECK(pos[3] == T);  // |x| > 1 is clipped to 1
    Activity b;
    b.resize(4);
    a.clear();
    src->fill(0, 17, 42, a, ops);
    src->fill(0, 17, 42, b, ops);
    CHECK(a.values == b.values);
}

TEST_CASE("latency coding: one spike at round((1 - |x|)(T - 1))") {
    TempFile in;
    write_data(in.path(), {1.0f, 0.5f, 0.0f, -0.8f}, {1, 4});
    auto src = open_input(in.path(), {Encoding::latency, 11});
    Activity a;
    a.resize(4);
    OpCounts ops;
    std::vector<std::pair<int, std::uint32_t>> seen;
    for (int t = 0; t < 11; ++t) {
        a.clear();
        src->fill(0, t, 0, a, ops);
        for (auto i : a.active) seen.emplace_back(t, i);
    }
    CHECK(seen == std::vector<std::pair<int, std::uint32_t>>{{0, 0}, {2, 3}, {5, 1}});
}
