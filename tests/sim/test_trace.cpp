// Trace recorder tests: what the recorder writes (events, grids, op counts, energy) read back
// with the HDF5 reader and compared with an independent capture of the same run; and the HDF5
// reader and writer on a caller's buffer; the trace reader (sim/io/trace_reader.hpp) on a written
// trace and on damaged ones.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <stdexcept>

#include "sim/core/memory.hpp"
#include "sim/io/h5io.hpp"
#include "sim/io/trace.hpp"
#include "sim/io/trace_reader.hpp"
#include "tests/support/model_file.hpp"
#include "tests/support/run_model.hpp"

using namespace ternion;
using namespace ternion::test;

namespace {

// Input spikes of both polarities through a Scale into ternary neurons: -1 spikes guaranteed.
struct TernaryModel {
    TempFile model, input;
    std::int64_t n = 24, T = 9, S = 5;
    TernaryModel() {
        scaled_ternary_lif(n, 0.9).write(model.path());
        std::vector<std::int8_t> s(static_cast<std::size_t>(S * T * n));
        std::uint64_t h = 99;
        for (auto& x : s) {
            h = h * 6364136223846793005ull + 1442695040888963407ull;
            x = static_cast<std::int8_t>(static_cast<int>((h >> 33) % 3) - 1);
        }
        write_spikes(input.path(), s, {S, T, n});
    }
};

// The model run with every node's outputs captured (what a trace must hold), the traced
// neuron's index and a file for the trace.
struct TracedModel : TernaryModel {
    std::unique_ptr<Outcome> ref = run_file(model.path(), input.path());
    int u = ref->graph->find("neuron");
    TempFile tr;
};

struct Recorded {
    std::unique_ptr<Graph> graph;
    RunResult result;
};

Recorded record(const TernaryModel& m, const TraceOptions& o, const std::string& out, int threads) {
    Recorded r;
    LoadReport rep;
    r.graph = load_model(m.model.path(), UserLoadOptions{}, rep);
    auto src = open_input(m.input.path(), InputOptions{Encoding::direct, 0});
    TraceRecorder rec(*r.graph, o, 0, m.S, m.T);
    RunConfig cfg;
    cfg.threads = threads;
    cfg.observer = &rec;
    r.result = run(*r.graph, *src, cfg);
    rec.write(out, {{"k", "v"}});
    return r;
}

}  // namespace

TEST_CASE("index lists: singles, ranges, sorted and unique; bad text names the option") {
    CHECK(parse_index_list("3,0-2,2", "x") == std::vector<std::int64_t>{0, 1, 2, 3});
    CHECK(parse_index_list("7", "x") == std::vector<std::int64_t>{7});
    // At most 1 000 000 indices in all, refused before they are listed (found by fuzz_options:
    // "0-63211110" took 500 MB and the fuzzer's 30 s).
    CHECK(parse_index_list("0-999999", "x").size() == 1'000'000);
    for (const char* bad : {"a", "1-", "3-1", "-2", "1.5", "", ",", "0-63211110",
                            "0-999999,1000000", "5,0-999999", "0-99999999999999999999"}) {
        bool threw = false;
        try {
            parse_index_list(bad, "record-samples");
        } catch (const OptionError& e) {
            threw = std::string(e.what()).find("--record-samples") != std::string::npos;
        }
        CHECK_MESSAGE(threw, bad);
    }
}

TEST_CASE("spike events decode to the captured spikes; op counts sum to the run's") {
    TracedModel m;
    TraceOptions o;
    o.ops = true;
    o.energy = true;
    o.unit_pj.assign(kOpFieldCount, std::nan(""));
    o.unit_pj[0] = 0.9;  // ac
    o.unit_pj[6] = 0.5;  // neuron_update
    auto rec = record(m, o, m.tr.path(), 3);

    h5::Reader rd(m.tr.path());
    CHECK(rd.attr_string("/", "__type__") == "NIRGraphData");
    const std::string g = "/nodes/neuron/observables/spikes";
    CHECK(rd.attr_string(g, "__type__") == "ValuedEventData");
    CHECK(rd.attr_double(g, "n_neurons") == doctest::Approx(double(m.n)));
    CHECK(rd.attr_double(g, "t_max") == doctest::Approx(m.T * 1e-3));
    h5::DatasetInfo di;
    auto idx = rd.read_ints(g + "/idx", &di);
    auto time = rd.read_doubles(g + "/time");
    auto val = rd.read_ints(g + "/value");
    REQUIRE(di.dims.size() == 2);
    CHECK(di.dims[0] == m.S);
    const std::int64_t E = di.dims[1];
    std::int64_t neg = 0, events = 0;
    for (std::int64_t s = 0; s < m.S; ++s) {
        std::vector<float> grid(static_cast<std::size_t>(m.T * m.n), 0.0f);
        for (std::int64_t e = 0; e < E; ++e) {
            const auto k = static_cast<std::size_t>(s * E + e);
            if (idx[k] < 0) {
                CHECK(std::isinf(time[k]));
                continue;
            }
            const auto t = static_cast<std::int64_t>(std::floor(time[k] / 1e-3));
            grid[static_cast<std::size_t>(t * m.n + idx[k])] = static_cast<float>(val[k]);
            neg += val[k] < 0;
            ++events;
        }
        for (std::int64_t t = 0; t < m.T; ++t) {
            const auto& v = m.ref->capture.values.at({s, t, m.u});
            CHECK(std::equal(v.begin(), v.end(), grid.begin() + t * m.n));
        }
    }
    CHECK(neg > 0);
    const auto& st = rec.result.nodes[static_cast<std::size_t>(m.u)];
    CHECK(static_cast<std::uint64_t>(events) == st.nonzero_out);

    // Op counts: the per-step sums are the run's totals, for every node and kind.
    auto kinds = rd.read_strings("/ternion/kinds");
    REQUIRE(kinds.size() == static_cast<std::size_t>(kOpFieldCount));
    for (int v = 0; v < rec.graph->size(); ++v) {
        const std::string ds = "/ternion/ops/" + rec.graph->node(v).name();
        auto c = rd.read_ints(ds, &di);
        CHECK(di.dims == Shape{m.S, m.T, kOpFieldCount});
        std::vector<std::uint64_t> sum(kinds.size(), 0);
        for (std::size_t i = 0; i < c.size(); ++i)
            sum[i % kinds.size()] += static_cast<std::uint64_t>(c[i]);
        std::size_t k = 0;
        rec.result.nodes[static_cast<std::size_t>(v)].ops.for_each(
            [&](std::string_view name, std::uint64_t x) {
                CHECK(kinds[k] == name);
                CHECK(sum[k] == x);
                ++k;
            });
        // Energy: counts x unit price, unpriced kinds as zero.
        auto e = rd.read_doubles("/ternion/energy/" + rec.graph->node(v).name() + "/per_step_pj");
        double want = 0.9 * double(rec.result.nodes[static_cast<std::size_t>(v)].ops.ac) +
                      0.5 * double(rec.result.nodes[static_cast<std::size_t>(v)].ops.neuron_update);
        double got = 0;
        for (double x : e) got += x;
        CHECK(got == doctest::Approx(want).epsilon(1e-12));
    }
}

TEST_CASE("grid format and membrane: the captured values, rows of the chosen samples only") {
    TracedModel m;
    TraceOptions o;
    o.spike_format = SpikeFormat::grid;
    o.membrane = true;
    o.samples = {1, 4};
    record(m, o, m.tr.path(), 2);
    h5::Reader rd(m.tr.path());
    h5::DatasetInfo di;
    auto grid = rd.read_int8("/nodes/neuron/observables/spikes/data", &di);
    CHECK(di.dims == Shape{2, m.T, m.n});
    auto v = rd.read_floats("/nodes/neuron/observables/v/data");
    CHECK(rd.read_ints("/ternion/samples") == std::vector<std::int64_t>{1, 4});
    for (std::int64_t row = 0; row < 2; ++row)
        for (std::int64_t t = 0; t < m.T; ++t) {
            const std::int64_t s = row == 0 ? 1 : 4;
            const auto& want = m.ref->capture.values.at({s, t, m.u});
            const auto& mem = m.ref->capture.membrane.at({s, t, m.u});
            for (std::int64_t i = 0; i < m.n; ++i) {
                const auto k = static_cast<std::size_t>((row * m.T + t) * m.n + i);
                CHECK(grid[k] == static_cast<std::int8_t>(want[static_cast<std::size_t>(i)]));
                CHECK(v[k] == mem[static_cast<std::size_t>(i)]);
            }
        }
}

TEST_CASE("the size is estimated before the run and refused over the budget") {
    TernaryModel m;
    LoadReport rep;
    auto g = load_model(m.model.path(), {}, rep);
    TraceOptions o;
    o.membrane = true;
    TraceRecorder ok(*g, o, 0, m.S, m.T);
    // Spiking nodes: the ternary neuron only; 1 byte of spikes + 4 of membrane per cell.
    CHECK(ok.estimated_bytes() == static_cast<std::uint64_t>(m.S * m.T * m.n * 5));
    o.max_bytes = ok.estimated_bytes() - 1;
    CHECK_THROWS_AS(TraceRecorder(*g, o, 0, m.S, m.T), OptionError);
    o.max_bytes = ok.estimated_bytes();
    CHECK_NOTHROW(TraceRecorder(*g, o, 0, m.S, m.T));
    o.samples = {m.S};  // outside the run
    CHECK_THROWS_AS(TraceRecorder(*g, o, 0, m.S, m.T), OptionError);
}

TEST_CASE("h5io with a caller's buffer: rows read into it, /y written from it, sizes checked") {
    TempFile f;
    std::vector<float> v(3 * 4 * 5);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) * 0.5f;
    {
        h5::Writer w(f.path());
        w.write("/x", v.data(), v.size(), {3, 4, 5}, false);
        CHECK_THROWS_AS(w.write("/bad", v.data(), v.size() - 1, {3, 4, 5}, false),
                        std::invalid_argument);
        w.close();
    }
    h5::Reader r(f.path());
    LargeVector<float> buf(40, -1.0f);
    r.read_float_rows("/x", 1, 2, buf.data(), buf.size());
    for (std::size_t i = 0; i < 40; ++i) CHECK(buf[i] == v[20 + i]);
    CHECK(r.read_float_rows("/x", 1, 2) == std::vector<float>(v.begin() + 20, v.end()));
    // A buffer too small for the rows, and rows out of range: errors naming the dataset.
    CHECK_THROWS_WITH(r.read_float_rows("/x", 0, 2, buf.data(), 39),
                      doctest::Contains("larger than the buffer"));
    CHECK_THROWS_WITH(r.read_float_rows("/x", 2, 2, buf.data(), buf.size()),
                      doctest::Contains("out of bounds"));
    // Large vectors are 2 MiB aligned (huge pages), small ones 64-byte aligned.
    LargeVector<float> big(std::size_t{2} << 20);
    CHECK(reinterpret_cast<std::uintptr_t>(big.data()) % (std::size_t{2} << 20) == 0);
    CHECK(reinterpret_cast<std::uintptr_t>(buf.data()) % 64 == 0);
}

TEST_CASE("trace reader: reads back what the recorder wrote") {
    TernaryModel m;
    TempFile tr;
    TraceOptions o;
    o.membrane = o.ops = o.energy = true;
    o.unit_pj.assign(kOpFieldCount, std::nan(""));
    o.unit_pj[0] = 0.9;  // ac
    o.unit_pj[6] = 0.5;  // neuron_update
    record(m, o, tr.path(), 1);

    const TraceReader t(tr.path());
    const auto nodes = t.nodes();
    REQUIRE(std::find(nodes.begin(), nodes.end(), "neuron") != nodes.end());
    const auto obs = t.observables("neuron");
    REQUIRE(obs.size() == 2);
    CHECK(obs[0].name == "spikes");
    CHECK(obs[0].kind == ObservableKind::valued_event);
    CHECK(obs[0].type == "ValuedEventData");
    CHECK(obs[1].name == "v");
    CHECK(obs[1].kind == ObservableKind::time_gridded);
    CHECK(t.need_double(obs[0].group, "n_neurons") == doctest::Approx(double(m.n)));
    CHECK(t.need_dataset(obs[1].group + "/data", 3).dims == Shape{m.S, m.T, m.n});
    CHECK(t.stored_bytes(obs[1].group + "/data") > 0);
    CHECK(t.stored_bytes("/nope") == 0);
    CHECK(t.attr_ints("/ternion", "timesteps") == std::vector<std::int64_t>{m.T});
    CHECK(t.attr_double("/ternion", "dt") == doctest::Approx(1e-3));
    CHECK(t.samples() == m.S);
    CHECK(t.metadata() == std::vector<std::pair<std::string, std::string>>{{"k", "v"}});
    const auto kinds = t.kinds();
    REQUIRE(kinds.size() == std::size_t(kOpFieldCount));
    CHECK(kinds[0] == "ac");
    CHECK(kinds[6] == "neuron_update");
    const auto op_nodes = t.ternion_nodes("ops");
    REQUIRE(op_nodes.has_value());
    REQUIRE(t.ternion_nodes("energy") == op_nodes);
    CHECK_FALSE(t.ternion_nodes("attention").has_value());
    CHECK(t.attention_nodes().empty());
    // Energy per step is the recorded counts times the unit prices.
    for (const auto& n : *op_nodes) {
        const auto ops = t.read_doubles("/ternion/ops/" + n);
        const auto pj = t.read_doubles("/ternion/energy/" + n + "/per_step_pj");
        REQUIRE(ops.size() == pj.size());
        for (std::size_t c = 0; c < ops.size(); ++c) {
            const auto k = c % kinds.size();
            CHECK(pj[c] == doctest::Approx(k == 0 ? 0.9 * ops[c] : k == 6 ? 0.5 * ops[c] : 0.0));
        }
    }
}

namespace {

// The message of the InputError `f` throws ("" if none).
template <class F>
std::string input_error(F&& f) {
    try {
        f();
    } catch (const InputError& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("trace reader: damaged traces fail once, naming file and field") {
    TempFile f;
    const std::string p = f.path();
    auto write = [&](const std::function<void(h5::Writer&)>& fill) {
        h5::Writer w(p);
        fill(w);
    };
    write([](h5::Writer& w) { w.group("/nodes"); });
    CHECK(input_error([&] { TraceReader t(p); }) ==
          p + ": /@__type__: not a trace: the root attribute __type__ is not NIRGraphData");
    write([](h5::Writer& w) {
        w.attr("/", "__type__", 3.0);  // wrong type
        w.group("/nodes");
    });
    CHECK(input_error([&] { TraceReader t(p); }).starts_with(p + ": /@__type__: not a trace"));
    write([](h5::Writer& w) { w.attr("/", "__type__", std::string("NIRGraphData")); });
    CHECK(input_error([&] { TraceReader t(p); }) == p + ": /nodes: missing group");
    CHECK(input_error([&] { TraceReader t(p, TraceReader::Check::none); }).empty());

    write([](h5::Writer& w) {
        w.attr("/", "__type__", std::string("NIRGraphData"));
        w.group("/nodes/a/observables/spikes");
        w.group("/nodes/b/observables/spikes");
        w.attr("/nodes/b/observables/spikes", "__type__", std::string("Spikes"));
        w.group("/nodes/c");
        w.group("/g");
        w.attr("/g", "n", std::string("many"));
        w.attr("/g", "ids", 2.5);
        w.attr("/g", "k", std::int64_t{4});
        w.write("/d", std::vector<double>{1, 2}, {2});
        w.write("/ternion/samples", std::vector<double>{1}, {}, false);
    });
    const TraceReader t(p);
    CHECK(t.nodes() == std::vector<std::string>{"a", "b", "c"});
    CHECK(input_error([&] { t.observables("a"); }) ==
          p + ": /nodes/a/observables/spikes@__type__: missing attribute");
    CHECK(input_error([&] { t.observables("b"); }) ==
          p + ": /nodes/b/observables/spikes@__type__: unknown observable type 'Spikes'");
    CHECK(input_error([&] { t.observables("c"); }) == p + ": /nodes/c/observables: missing group");
    CHECK(input_error([&] { t.need_double("/g", "n"); }) ==
          p + ": /g@n: missing numeric attribute");
    CHECK(input_error([&] { t.need_string("/g", "k"); }) == p + ": /g@k: missing attribute");
    CHECK(input_error([&] { t.attr_ints("/g", "ids"); }) ==
          p + ": /g@ids: expected integer values");
    CHECK(input_error([&] { t.attr_ints("/g", "n"); }) == p + ": /g@n: expected integer values");
    CHECK(t.attr_ints("/g", "k") == std::vector<std::int64_t>{4});
    CHECK_FALSE(t.attr_ints("/g", "none").has_value());
    CHECK_FALSE(t.attr_double("/nope", "k").has_value());
    CHECK(t.attrs_text("/g") == std::vector<std::pair<std::string, std::string>>{
                                    {"ids", "2.5"}, {"k", "4"}, {"n", "many"}});
    CHECK(input_error([&] { t.need_dataset("/d", 3); }) ==
          p + ": /d: expected 3 dimensions, found 1");
    CHECK(input_error([&] { t.need_dataset("/e", 1); }) == p + ": /e: missing dataset");
    CHECK(input_error([&] { t.samples(); }) ==
          p + ": /ternion/samples: expected 1 dimension, found 0");
}

TEST_CASE("trace reader: attention maps at NIR's location first, then ternion's") {
    TempFile f;
    {
        h5::Writer w(f.path());
        w.attr("/", "__type__", std::string("NIRGraphData"));
        w.group("/nodes/a/observables/attention");
        w.write("/nodes/a/observables/attention/scores", std::vector<float>(1), {1, 1, 1, 1, 1});
        w.group("/ternion/attention/a");
        w.group("/ternion/attention/b");
        w.write("/ternion/attention/b/weights", std::vector<float>(1), {1, 1, 1, 1, 1});
        w.group("/ternion/attention/c");  // no maps
    }
    const TraceReader t(f.path());
    CHECK(t.attention_group("a") == "/nodes/a/observables/attention");
    CHECK(t.attention_group("b") == "/ternion/attention/b");
    CHECK(t.attention_group("z") == "/nodes/z/observables/attention");
    CHECK(t.attention_nodes() == std::vector<std::string>{"a", "b"});
    const auto obs = t.observables("a");
    REQUIRE(obs.size() == 1);
    CHECK(obs[0].kind == ObservableKind::attention);
}

TEST_CASE("a signal while the temporary is being created leaves no temporary behind") {
    // The window between choosing the temporary's name and its exclusive creation: a handler
    // that runs there cannot know whether the file exists yet. It defers to the creator, which
    // raises the signal again once it knows; the process dies by the signal, nothing is left.
    namespace fs = std::filesystem;
    const fs::path dir =
        fs::temp_directory_path() / ("ternion-sigwin-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    for (const bool hook : {true, false}) {
        const pid_t pid = ::fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            std::signal(SIGTERM, [](int sig) { h5::on_output_signal(sig); });
            if (hook) h5::set_creating_hook([] { std::raise(SIGTERM); });
            try {
                h5::write_atomically((dir / "out.h5").string(), [](const std::string& tmp) {
                    h5::Writer w(tmp);
                    w.group("/x");
                    std::raise(SIGTERM);  // registered by now: removed by the handler
                    w.close();
                });
            } catch (...) {
            }
            ::_exit(0);
        }
        int status = 0;
        REQUIRE(::waitpid(pid, &status, 0) == pid);
        CHECK(WIFSIGNALED(status));
        CHECK(WTERMSIG(status) == SIGTERM);
        CHECK(fs::is_empty(dir));
    }
    fs::remove_all(dir);
}
