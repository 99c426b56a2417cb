// A run split into consecutive sample ranges (sim/core/shard.hpp), merged as rank 0 of an MPI job
// merges them, equals one run of the whole range: results bit for bit (the float sums of the
// syops tallies included) and trace rows byte for byte. No MPI needed: the ranges run here one
// after another.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <fstream>

#include "hw/cost_model.hpp"
#include "models/inputs/inputs.hpp"
#include "models/nir_loader.hpp"
#include "sim/core/shard.hpp"
#include "sim/io/trace.hpp"
#include "tests/support/model_file.hpp"

using namespace ternion;
using namespace ternion::test;

namespace {

struct Files {
    TempFile model, input;
    std::int64_t n = 16, S = 11, T = 7;
    Files() {
        std::vector<double> w(static_cast<std::size_t>(n * n));
        for (std::size_t k = 0; k < w.size(); ++k) w[k] = 0.37 * std::sin(1.7 * double(k));
        ModelFile()
            .node("input", "Input", {{"shape", P({double(n)})}})
            .node("fc", "Linear", {{"weight", P(w, {n, n})}})
            .node("lif", "ternion.TernaryLIF", {{"decay", P(0.8)}, {"v_threshold", P(0.3)}})
            .node("output", "Output")
            .chain({"input", "fc", "lif", "output"})
            .write(model.path());
        // Two distinct values, 0 and 0.1: the syops spike test passes and its sums are inexact.
        std::vector<float> d(static_cast<std::size_t>(S * n));
        for (std::size_t k = 0; k < d.size(); ++k) d[k] = (k * 7 + k / 5) % 3 ? 0.1f : 0.0f;
        write_data(input.path(), d, {S, n});
    }
};

RunConfig config(std::int64_t first, std::int64_t count, StepObserver* obs) {
    RunConfig c;
    c.timesteps = 7;
    c.first_sample = first;
    c.num_samples = count;
    // Both conventions' tallies: syops' input test (a float sum) and NeuroBench's membranes.
    c.tallies = hw::tallies_for(hw::CountMode::syops);
    for (const StepTally* t : hw::tallies_for(hw::CountMode::neurobench)) c.tallies.push_back(t);
    c.keep_sample_sums = true;
    c.observer = obs;
    return c;
}

TraceOptions trace_options() {
    TraceOptions o;
    o.membrane = o.ops = true;
    o.samples = {0, 2, 3, 7, 10};
    return o;
}

}  // namespace

TEST_CASE("shard_of: contiguous shards in rank order cover the range once") {
    for (int ranks = 1; ranks <= 5; ++ranks)
        for (std::int64_t samples = 0; samples <= 12; ++samples) {
            std::int64_t next = 3;
            for (int r = 0; r < ranks; ++r) {
                const Shard s = shard_of(3, samples, r, ranks);
                CHECK(s.first == next);
                CHECK(s.count >= samples / ranks);
                CHECK(s.count <= samples / ranks + 1);
                next += s.count;
            }
            CHECK(next == 3 + samples);
        }
}

TEST_CASE("append_part: parts merged in order equal the whole run, traces included") {
    Files f;
    LoadReport rep;
    auto g = load_model(f.model.path(), {}, rep);
    InputOptions io;
    auto src = open_input(f.input.path(), io);
    TraceRecorder whole_rec(*g, trace_options(), 0, f.S, f.T);
    const RunResult whole = run(*g, *src, config(0, f.S, &whole_rec));

    for (int ranks : {2, 3, 4}) {
        TraceRecorder gathered(*g, trace_options(), 0, f.S, f.T);  // rank 0 holds every row
        RunResult merged;
        for (int r = 0; r < ranks; ++r) {
            const Shard s = shard_of(0, f.S, r, ranks);
            TraceRecorder part_rec(*g, trace_options(), 0, f.S, f.T, {s.first, s.count});
            append_part(merged, run(*g, *src, config(s.first, s.count, &part_rec)));
            // What gather_trace sends: the part's held rows, into place in rank 0's buffers.
            const auto [lo, hi] = part_rec.held_rows();
            auto from = part_rec.row_buffers(), to = gathered.row_buffers();
            REQUIRE(from.size() == to.size());
            for (std::size_t b = 0; b < from.size() && hi > lo; ++b)
                std::memcpy(static_cast<char*>(to[b].data) + lo * to[b].row_bytes, from[b].data,
                            static_cast<std::size_t>(hi - lo) * from[b].row_bytes);
        }
        CHECK(merged.samples == whole.samples);
        CHECK(merged.predictions == whole.predictions);
        CHECK(merged.output_sum == whole.output_sum);
        REQUIRE(merged.nodes.size() == whole.nodes.size());
        for (std::size_t i = 0; i < whole.nodes.size(); ++i) {
            const NodeStats &a = merged.nodes[i], &b = whole.nodes[i];
            CHECK(a.ops == b.ops);
            CHECK(a.nonzero_out == b.nonzero_out);
            CHECK(a.nonzero_in == b.nonzero_in);
            CHECK(std::memcmp(a.tallies.data(), b.tallies.data(), sizeof(TallySlots)) == 0);
        }
        auto want = whole_rec.row_buffers(), got = gathered.row_buffers();
        for (std::size_t b = 0; b < want.size(); ++b)
            CHECK(std::memcmp(want[b].data, got[b].data, 5 * want[b].row_bytes) == 0);
    }
    // The input test passed at some steps of fc (slot 0), and its inputs summed (slot 1).
    CHECK(whole.nodes[static_cast<std::size_t>(g->find("fc"))].tallies[0] > 0);
    CHECK(whole.nodes[static_cast<std::size_t>(g->find("fc"))].tallies[1] > 0);
}

namespace {

// What an input gives for sample s: every step's active elements and values.
std::vector<std::pair<std::uint32_t, float>> sample_events(const InputSource& src, std::int64_t s,
                                                           std::int64_t T) {
    Activity a;
    a.resize(numel(src.sample_shape()));
    OpCounts ops;
    std::vector<std::pair<std::uint32_t, float>> out;
    for (std::int64_t t = 0; t < T; ++t) {
        a.clear();
        src.fill(s, t, 5, a, ops);
        for (auto i : a.active)
            out.emplace_back(i + 1000 * static_cast<std::uint32_t>(t), a.values[i]);
    }
    return out;
}

// numpy.save's format 1.0 for an int8 C-order array.
void write_npy(const std::string& path, const std::vector<std::int8_t>& v, const Shape& dims) {
    std::string shape = "(";
    for (auto d : dims) shape += std::to_string(d) + ", ";
    shape += ")";
    std::string h = "{'descr': '|i1', 'fortran_order': False, 'shape': " + shape + ", }";
    while ((10 + h.size() + 1) % 64) h += ' ';
    h += '\n';
    std::ofstream f(path, std::ios::binary);
    f.write("\x93NUMPY\x01\x00", 8);
    const char len[2] = {static_cast<char>(h.size() & 0xff), static_cast<char>(h.size() >> 8)};
    f.write(len, 2);
    f.write(h.data(), static_cast<std::streamsize>(h.size()));
    f.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size()));
}

}  // namespace

TEST_CASE("a process reads only its shard of the run's samples, from every input format") {
    const std::int64_t S = 8, T = 5, n = 6, first = 1, run = 6;  // the run: samples 1..6
    std::vector<std::int8_t> st(static_cast<std::size_t>(S * T * n)), ts(st.size());
    for (std::int64_t s = 0; s < S; ++s)
        for (std::int64_t t = 0; t < T; ++t)
            for (std::int64_t i = 0; i < n; ++i) {
                const auto v = static_cast<std::int8_t>(
                    (s * 5 + t * 3 + i * 7) % 4 == 0 ? ((s + i) % 2 ? 1 : -1) : 0);
                st[static_cast<std::size_t>((s * T + t) * n + i)] = v;
                ts[static_cast<std::size_t>((t * S + s) * n + i)] = v;
            }
    // A defect in sample 7, outside the run: only a process that reads it may see it.
    st[static_cast<std::size_t>((7 * T + 2) * n + 1)] = 2;
    ts[static_cast<std::size_t>((2 * S + 7) * n + 1)] = 2;
    TempFile h5_st, h5_ts, npy(".npy"), analog;
    write_spikes(h5_st.path(), st, {S, T, n});
    write_spikes(h5_ts.path(), ts, {T, S, n});
    write_npy(npy.path(), st, {S, T, n});
    std::vector<float> d(static_cast<std::size_t>(S * n));
    for (std::size_t k = 0; k < d.size(); ++k) d[k] = 0.1f * static_cast<float>(k % 9);
    d[static_cast<std::size_t>(7 * n + 3)] = std::nanf("");
    write_data(analog.path(), d, {S, n});

    struct Case {
        std::string path;
        Layout layout;
        Encoding enc;
    };
    const std::vector<Case> cases{{h5_st.path(), Layout::samples_first, Encoding::direct},
                                  {h5_ts.path(), Layout::time_first, Encoding::direct},
                                  {npy.path(), Layout::samples_first, Encoding::direct},
                                  {analog.path(), Layout::automatic, Encoding::poisson}};
    for (const auto& c : cases) {
        CAPTURE(c.path);
        InputOptions whole_o;
        whole_o.layout = c.layout;
        whole_o.encoding = c.enc;
        whole_o.timesteps = T;
        whole_o.first_sample = first;
        whole_o.samples = run;
        const auto whole = open_input(c.path, whole_o);
        CHECK(whole->num_samples() == S);
        // The whole file, defect included, is refused naming sample 7.
        InputOptions all = whole_o;
        all.samples = -1;
        CHECK_THROWS_WITH_AS(open_input(c.path, all), doctest::Contains("sample 7"), InputError);
        for (int parts : {1, 2, 3, 4}) {
            for (int part = 0; part < parts; ++part) {
                InputOptions o = whole_o;
                o.part = part;
                o.parts = parts;
                const auto mine = open_input(c.path, o);
                CHECK(mine->num_samples() == S);
                const Shard sh = shard_of(first, run, part, parts);
                for (std::int64_t s = sh.first; s < sh.first + sh.count; ++s)
                    CHECK(sample_events(*mine, s, T) == sample_events(*whole, s, T));
                // A sample outside the shard was never read.
                const std::int64_t other = sh.first > first ? first : first + run - 1;
                if (sh.count < run) CHECK_THROWS_AS(sample_events(*mine, other, T), InternalError);
            }
        }
    }
}
