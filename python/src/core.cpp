// ternion._core: the Python bindings (pybind11). Thin: every run goes through the same run
// pipeline as `ternion run` (models/pipeline.hpp), so Python and the CLI give the same spikes,
// counts and energy. A run's Output hands its typed report to ternion/api.py's Result directly
// (arrays, numbers, dictionaries); the JSON document is made only when Result.report is read.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <atomic>
#include <chrono>
#include <future>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "attention/ann/ann_attention.hpp"
#include "attention/ann/run_batch.hpp"
#include "hw/chip/chip.hpp"
#include "hw/conventions/convention.hpp"
#include "hw/cost_model.hpp"
#include "models/graph_builder.hpp"
#include "models/inputs/events.hpp"
#include "models/pipeline.hpp"
#include "models/quantize.hpp"
#include "models/run_options.hpp"
#include "sim/core/error.hpp"
#include "sim/io/h5vet.hpp"
#include "sim/simd/simd.hpp"

namespace py = pybind11;
using namespace ternion;

namespace {

// A loaded model and, for bundled models, the test set it comes with.
struct Model {
    std::shared_ptr<const LoadedModel> loaded;
    std::string default_input;
};

// A finished run: the report, and the pipeline whose recording the arrays view in place.
struct Output {
    std::shared_ptr<Pipeline> pipeline;
    RunReport report;
};

// A JSON value as the Python object json.loads would give (for the figures a convention writes
// into the report; the rest of the result is read from the typed report).
py::object to_py(const nlohmann::json& j) {
    switch (j.type()) {
        case nlohmann::json::value_t::null:
            return py::none();
        case nlohmann::json::value_t::boolean:
            return py::bool_(j.get<bool>());
        case nlohmann::json::value_t::number_integer:
            return py::int_(j.get<std::int64_t>());
        case nlohmann::json::value_t::number_unsigned:
            return py::int_(j.get<std::uint64_t>());
        case nlohmann::json::value_t::number_float:
            return py::float_(j.get<double>());
        case nlohmann::json::value_t::string:
            return py::str(j.get<std::string>());
        case nlohmann::json::value_t::array: {
            py::list l;
            for (const auto& v : j) l.append(to_py(v));
            return l;
        }
        default: {
            py::dict d;
            for (const auto& [k, v] : j.items()) d[py::str(k)] = to_py(v);
            return d;
        }
    }
}

// {kind: count} (integers), or {kind: count / divisor} as the report's per-inference figures.
py::dict ops_dict(const OpCounts& o, double divisor = 1.0) {
    py::dict d;
    o.for_each([&](std::string_view k, std::uint64_t v) {
        if (divisor == 1.0)
            d[py::str(std::string(k))] = v;
        else
            d[py::str(std::string(k))] = static_cast<double>(v) / divisor;
    });
    return d;
}

// Result.counts: per-layer operation totals with spikes, totals, per inference, and the
// figures of the counting convention (None for the others).
py::dict counts_of(const Output& o) {
    const RunReport& r = o.report;
    py::dict layers;
    for (const LayerRecord& l : r.record.layers) {
        py::dict d = ops_dict(l.ops);
        d["spikes"] = l.nonzero_out;
        layers[py::str(l.name)] = d;
    }
    // The convention's own figures, written by the convention (hw/conventions/<name>.cpp).
    nlohmann::json figures;
    hw::convention(r.cost.mode).report_json(r.cost, figures);
    py::dict c;
    c["layers"] = layers;
    c["totals"] = ops_dict(r.total);
    c["per_inference"] = ops_dict(r.total, static_cast<double>(r.result.samples));
    for (const char* k : {"neurobench", "syops", "paper", "lemaire"})
        c[k] = figures.contains(k) ? to_py(figures[k]) : py::none();
    return c;
}

// Result.energy, from the typed cost report.
py::dict energy_of(const Output& o) {
    const hw::CostReport& c = o.report.cost;
    const double inv = c.samples > 0 ? 1.0 / static_cast<double>(c.samples) : 0.0;
    py::dict by_kind, layers;
    for (int k = 0; k < hw::kKinds; ++k)
        by_kind[py::str(std::string(hw::kind_names()[k]))] = c.per_inference_energy_pj[k];
    for (const LayerRecord& l : o.report.record.layers) layers[py::str(l.name)] = 0.0;
    for (const hw::LayerCost& l : c.layers) layers[py::str(l.name)] = l.energy_total_pj * inv;
    py::dict e;
    e["profile"] = c.profile_name;
    e["count_mode"] = c.mode.name;
    e["per_inference_pj"] = c.per_inference_pj;
    e["by_kind_pj"] = by_kind;
    e["layers"] = layers;
    auto ratio = [&](double ann) {
        return ann > 0 ? py::object(py::float_(c.per_inference_pj / ann)) : py::none();
    };
    e["ann_pj"] = c.ann_pj_per_inference;  // T passes, one a step
    e["ann_ratio"] = ratio(c.ann_pj_per_inference);
    e["ann_pj_one_pass"] = c.ann_pj_per_pass();
    e["ann_ratio_one_pass"] = ratio(c.ann_pj_per_pass());
    e["exact_pj"] = c.exact_pj_per_inference;
    const hw::Headline h = hw::headline(c);
    e["headline"] = h.text;
    e["which_number"] = h.which;
    return e;
}

// Result.node_seconds: {node: thread seconds of its steps}, or None without node_times.
py::object node_seconds_of(const Output& o) {
    if (!o.report.record.node_times) return py::none();
    py::dict d;
    for (const LayerRecord& l : o.report.record.layers) d[py::str(l.name)] = l.seconds;
    return d;
}

// Python's keywords (by each option's Python name) as the values the shared option tables read
// (models/run_options.hpp). None is "not given" for an option without a default, and a value
// refused as the command line refuses it for one with a default (seed=None is not 0).
class KeywordValues final : public OptionValues {
  public:
    explicit KeywordValues(py::dict d) : d_(std::move(d)) {}
    bool given(const OptionSpec& o) const override {
        if (!d_.contains(o.python)) return false;
        const py::object v = d_[o.python];
        if (v.is_none()) return *o.fallback != '\0';
        if (o.type == OptionType::flag) return v.cast<bool>();
        if (o.type == OptionType::list && !py::isinstance<py::str>(v)) return py::len(v) > 0;
        return true;
    }
    std::string text(const OptionSpec& o) const override { return word(d_[o.python]); }
    std::vector<std::string> list(const OptionSpec& o) const override {
        const py::object v = d_[o.python];
        if (py::isinstance<py::str>(v)) return {v.cast<std::string>()};
        std::vector<std::string> r;
        for (const auto& item : v) r.push_back(word(py::reinterpret_borrow<py::object>(item)));
        return r;
    }

  private:
    // A value as the command line would write it: integers (numpy's too) and integral floats
    // as digits, bools as True/False (which no number option accepts), paths as text.
    static std::string word(const py::object& v) {
        if (py::isinstance<py::bool_>(v) || v.is_none()) return py::str(v).cast<std::string>();
        if (py::hasattr(v, "__index__")) return py::str(py::int_(v)).cast<std::string>();
        if (py::isinstance<py::float_>(v) || py::hasattr(v, "is_integer")) {
            const double x = v.cast<double>();
            if (std::isfinite(x) && x == std::floor(x) && std::fabs(x) < 9e18)
                return std::to_string(static_cast<std::int64_t>(x));
            return py::repr(v).cast<std::string>();
        }
        return py::str(v).cast<std::string>();
    }
    py::dict d_;
};

Model load(const std::string& path, py::dict options) {
    const UserLoadOptions lo = read_load_options(KeywordValues(std::move(options)));
    py::gil_scoped_release nogil;
    return Model{load_model_file(path, lo), ""};
}

Model load_bundled(const std::string& name) {
    // The digits models come with their test set; the Fashion-MNIST ones use Debian's.
    static const std::map<std::string, std::pair<std::string, std::string>> bundled{
        {"bsa_digits", {"bsa_digits.h5", "digits_test.h5"}},
        {"ssa_digits", {"ssa_digits.h5", "digits_test.h5"}},
        {"bsa_fmnist", {"bsa_fmnist.h5", ""}},
        {"ssa_fmnist", {"ssa_fmnist.h5", ""}}};
    const auto it = bundled.find(name);
    if (it == bundled.end())
        throw OptionError("name", "unknown bundled model '" + name +
                                      "' (bsa_digits, ssa_digits, bsa_fmnist, ssa_fmnist)");
    Model m = load(bundled_path(it->second.first), py::dict());
    m.default_input =
        it->second.second.empty() ? fashion_mnist_test_images() : bundled_path(it->second.second);
    return m;
}

// One parameter from Python: a string, or anything numpy reads as float64 (scalars: 0-d).
void set_param(MapParams& p, const std::string& node, const std::string& key, const py::handle& v) {
    if (py::isinstance<py::str>(v)) {
        p.set(key, v.cast<std::string>());
        return;
    }
    py::array_t<double, py::array::c_style | py::array::forcecast> a;
    try {
        a = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(v);
    } catch (const py::error_already_set&) {
    }
    if (!a)
        throw InputError(p.origin(), "nodes/" + node + "/" + key,
                         "is neither a string nor numeric");
    Shape dims(a.shape(), a.shape() + a.ndim());
    p.set(key, std::vector<double>(a.data(), a.data() + a.size()), dims);
}

// A model described in Python (ternion.build): nodes in order as (name, type, {param: value}),
// edges as (source, target); built through the same factory and checks as a file's nodes.
Model build(const std::vector<std::tuple<std::string, std::string, py::dict>>& nodes,
            const std::vector<std::pair<std::string, std::string>>& edges, const std::string& name,
            py::dict options, std::optional<std::int64_t> timesteps,
            std::optional<std::string> encoding) {
    const UserLoadOptions lo = read_load_options(KeywordValues(std::move(options)));
    LoadReport rep;
    const LoadOptions used = resolve_load_options(lo, {}, name, rep);
    GraphBuilder b(used);
    for (const auto& [node, type, params] : nodes) {
        MapParams p(name);
        for (const auto& [k, v] : params) set_param(p, node, k.cast<std::string>(), v);
        b.node(node, type, p);
    }
    for (const auto& [src, dst] : edges) b.edge(src, dst);
    if (!b.ignored().empty()) rep.notes.push_back(ignored_note(b.ignored()));
    return Model{adopt_model(b.finish(), name, rep, timesteps.value_or(0), encoding.value_or("")),
                 ""};
}

py::dict model_info(const Model& m) {
    const Graph& g = *m.loaded->graph;
    py::list nodes, edges;
    for (int i = 0; i < g.size(); ++i) {
        const Node& n = g.node(i);
        py::dict d;
        d["name"] = n.name();
        d["type"] = n.type();
        d["category"] = category_name(n.category());
        d["shape"] = py::tuple(py::cast(n.out_shape()));
        d["params"] = n.param_count();
        d["spiking"] = n.is_spiking();
        nodes.append(d);
    }
    for (const Edge& e : g.edges())
        edges.append(py::make_tuple(g.node(e.src).name(), g.node(e.dst).name(), e.delayed));
    const LoadReport& r = m.loaded->report;
    py::dict info;
    info["path"] = m.loaded->path;
    info["nodes"] = nodes;
    info["edges"] = edges;
    info["timesteps"] = m.loaded->timesteps > 0 ? py::cast(m.loaded->timesteps) : py::none();
    info["encoding"] = m.loaded->encoding.empty() ? py::none() : py::cast(m.loaded->encoding);
    info["dt"] = r.used.dt;
    info["discretization"] = r.used.discretization;
    info["reset"] = r.used.reset;
    info["notes"] = r.notes;
    return info;
}

// Keeps a numpy array alive for as long as the run reads it; released under the GIL.
std::shared_ptr<const void> keep_alive(py::array a) {
    return std::shared_ptr<const void>(new py::array(std::move(a)), [](const void* p) {
        py::gil_scoped_acquire gil;
        delete static_cast<const py::array*>(p);
    });
}

// The caller's C-contiguous [samples, T, ...] int8 spikes or [samples, ...] float32 data; a
// tuple ("frames", float32 [samples, T, ...]) holds frames (api.py's kind="frames").
ArrayInput array_input(const py::object& o, std::vector<std::int64_t> labels) {
    const bool frames = py::isinstance<py::tuple>(o);
    py::array x = frames ? o.cast<py::tuple>()[1].cast<py::array>() : o.cast<py::array>();
    ArrayInput a;
    a.frames = frames;
    a.dims.assign(x.shape(), x.shape() + x.ndim());
    if (x.dtype().is(py::dtype::of<std::int8_t>()))
        a.spikes = static_cast<const std::int8_t*>(x.data());
    else if (x.dtype().is(py::dtype::of<float>()))
        a.data = static_cast<const float*>(x.data());
    else
        throw InternalError("array_input: the Python side passes int8 or float32 only");
    a.owner = keep_alive(std::move(x));
    a.labels = std::move(labels);
    a.name = "<array>";
    return a;
}

// The run's input: x an array, or a dict {Input node name: array} (the Python side has made
// each C-contiguous int8 or float32), else the input file.
void set_input(RunRequest& q, const Model& m, const std::string& input, const py::object& x,
               const std::vector<std::int64_t>& labels) {
    if (py::isinstance<py::dict>(x)) {
        for (auto [k, v] : x.cast<py::dict>()) {
            ArrayInput a = array_input(py::reinterpret_borrow<py::object>(v), labels);
            a.node = k.cast<std::string>();
            q.node_arrays.push_back(std::move(a));
        }
        if (q.node_arrays.empty()) throw OptionError("x", "is an empty dict");
    } else if (!x.is_none()) {
        q.arrays = array_input(x, labels);
    } else {
        q.input = input.empty() ? m.default_input : input;
        if (q.input.empty())
            throw OptionError("x",
                              "is required (an array or an input file) for a model not bundled");
    }
}

// ternion.frames: one stream's events (int64 arrays, api.py converts) as float32
// [T, 2, H, W], framed by `ternion frames`' rule.
py::array_t<float> frame_stream(std::vector<std::int64_t> t, std::vector<std::int64_t> x,
                                std::vector<std::int64_t> y, std::vector<std::int64_t> p,
                                std::int64_t frames, const std::string& split_by,
                                std::int64_t duration, std::int64_t height, std::int64_t width) {
    FrameRule r{frames, parse_split_by(split_by), duration, height, width};
    EventStream ev{std::move(x), std::move(y), std::move(t), std::move(p), "<events>", "", ""};
    std::int64_t T = 0;
    std::vector<float> f;
    {
        py::gil_scoped_release nogil;
        f = frame_events(ev, r, T);
    }
    py::array_t<float> a({static_cast<py::ssize_t>(T), py::ssize_t{2},
                          static_cast<py::ssize_t>(height), static_cast<py::ssize_t>(width)});
    std::copy(f.begin(), f.end(), a.mutable_data());
    return a;
}

// Runs the pipeline on a worker thread while this thread, every 50 ms, lets Python handle its
// signals: on Ctrl-C (KeyboardInterrupt, or any exception a handler raises) the run is
// cancelled between samples, nothing is written, and the exception reaches the caller.
Output run_interruptibly(RunRequest q, const Model& m) {
    std::atomic<bool> cancel{false};
    q.cancel = &cancel;
    Output out;
    std::exception_ptr failed;
    bool interrupted = false;
    {
        py::gil_scoped_release nogil;
        std::promise<void> finished;
        auto done = finished.get_future();
        std::thread worker([&] {
            try {
                out.pipeline = std::make_shared<Pipeline>(std::move(q), m.loaded);
                out.report = out.pipeline->run();
            } catch (...) {
                failed = std::current_exception();
            }
            finished.set_value();
        });
        while (done.wait_for(std::chrono::milliseconds(50)) != std::future_status::ready) {
            py::gil_scoped_acquire gil;
            if (PyErr_CheckSignals() != 0) {
                interrupted = true;
                cancel = true;
                break;
            }
        }
        worker.join();
    }
    if (interrupted) throw py::error_already_set();
    if (failed) std::rethrow_exception(failed);
    return out;
}

Output run_pipeline(const Model& m, const std::string& input, py::object x,
                    std::vector<std::int64_t> labels, py::dict o) {
    RunRequest q;
    q.model = m.loaded->path;
    set_input(q, m, input, x, labels);
    read_run_options(KeywordValues(std::move(o)), q);
    q.command_line = "python: ternion.run";
    return run_interruptibly(std::move(q), m);
}

// A recorded [rows, T, ...shape] array viewed in place; the Output keeps the buffer alive.
template <class T>
py::object recorded(const Output& out, const std::string& node, const std::vector<T>* buf) {
    if (!buf) return py::none();
    const Graph& g = out.pipeline->graph();
    const TraceRecorder& rec = *out.pipeline->recorder();
    std::vector<py::ssize_t> shape{static_cast<py::ssize_t>(rec.sample_ids().size()),
                                   static_cast<py::ssize_t>(out.report.timesteps)};
    for (auto d : g.node(g.find(node)).out_shape()) shape.push_back(static_cast<py::ssize_t>(d));
    auto owner = new std::shared_ptr<Pipeline>(out.pipeline);
    py::capsule base(owner, [](void* p) { delete static_cast<std::shared_ptr<Pipeline>*>(p); });
    py::array_t<T> a(shape, buf->data(), base);
    a.attr("setflags")(py::arg("write") = false);
    return a;
}

py::dict attention(const std::string& kind, py::dict weights,
                   py::array_t<float, py::array::c_style | py::array::forcecast> x,
                   std::optional<py::array_t<float, py::array::c_style | py::array::forcecast>> t,
                   std::int64_t heads, std::optional<bool> causal, std::optional<bool> renormalize,
                   const std::string& profile) {
    ann::MapWeights w("<weights>");
    for (auto [k, v] : weights) {
        auto arr = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(v);
        if (!arr) throw InputError("<weights>", k.cast<std::string>(), "is not numeric");
        Shape dims(arr.shape(), arr.shape() + arr.ndim());
        w.set(k.cast<std::string>(), std::vector<float>(arr.data(), arr.data() + arr.size()), dims);
    }
    ann::Options opt;
    opt.heads = heads;
    opt.causal = causal;
    opt.renormalize = renormalize;
    if (opt.heads < 0 || opt.heads > 1000000) throw OptionError("heads", "out of range");
    auto att = ann::make_attention(kind, w, opt);
    const Shape dims(x.shape(), x.shape() + x.ndim());
    ann::check_input_shape(*att, kind, dims, "<x>", "x");
    const std::int64_t batch = dims[0], n = dims[1];
    const float* tp = nullptr;
    if (att->needs_time()) {
        if (!t) throw InputError("<t>", "t", "time kinds need t of shape [batch, N]");
        ann::check_times_shape(Shape(t->shape(), t->shape() + t->ndim()), batch, n, "<t>", "t");
        tp = t->data();
        ann::check_times_finite(tp, batch * n, "<t>", "t");
    }
    const hw::Profile prof = hw::load_profile(profile);
    py::array_t<float> y({batch, n, att->out_dim()});
    OpCounts ops;
    {
        const float* xp = x.data();
        const auto sample = static_cast<std::size_t>(n * att->in_dim());
        float* yp = y.mutable_data();
        py::gil_scoped_release nogil;
        ops = ann::run_batch(
            *att, batch, n,
            [xp, sample](std::int64_t b, float* to) {
                std::copy(xp + static_cast<std::size_t>(b) * sample,
                          xp + static_cast<std::size_t>(b + 1) * sample, to);
            },
            tp, yp, "<x>", "x");
    }
    py::dict counts, by_kind;
    ops.for_each([&](std::string_view k, std::uint64_t v) { counts[py::str(std::string(k))] = v; });
    const hw::OpsEnergy e = hw::price_ops(ops, prof);
    for (const auto& [k, pj] : e.by_kind_pj) by_kind[py::str(k)] = pj;
    py::dict r;
    r["y"] = y;
    r["ops"] = counts;
    r["energy"] = py::dict(py::arg("profile") = prof.name, py::arg("total_pj") = e.total_pj,
                           py::arg("per_sample_pj") = e.total_pj / static_cast<double>(batch),
                           py::arg("by_kind_pj") = by_kind, py::arg("unpriced") = e.unpriced);
    return r;
}

// ternion.quantize: `ternion quantize` with the report as a dict.
py::dict quantize_file(const std::string& model, const std::string& output,
                       const std::string& profile, std::optional<int> weight_bits,
                       std::optional<int> membrane_bits, py::dict load_options) {
    QuantizeOptions o;
    o.profile = profile;
    o.weight_bits = weight_bits;
    o.membrane_bits = membrane_bits;
    o.load = read_load_options(KeywordValues(std::move(load_options)));
    QuantizeReport r;
    {
        py::gil_scoped_release nogil;
        r = quantize_model(model, output, o);
    }
    py::list nodes;
    for (const auto& n : r.nodes)
        nodes.append(py::dict(py::arg("name") = n.name, py::arg("type") = n.type,
                              py::arg("action") = n.action, py::arg("scale") = n.scale,
                              py::arg("max_weight") = n.max_weight, py::arg("note") = n.note));
    return py::dict(py::arg("model") = r.model, py::arg("output") = r.output,
                    py::arg("profile") = r.profile, py::arg("weight_bits") = r.weight_bits,
                    py::arg("nodes") = nodes, py::arg("text") = quantize_report_text(r));
}

// ternion.map: the placement as `ternion map --json` gives it; `rates` adds Xylo's cycles per
// step, or a mesh chip's traffic, latency and energy band, at those firing rates; `steps` the
// time steps of one inference (mesh chips).
py::object map_on_chip(const Model& model, const std::string& name,
                       std::optional<std::vector<double>> rates, std::int64_t steps) {
    const chip::Chip c = chip::load_chip(name);
    chip::MapOptions o;
    o.dt = model.loaded->report.used.dt;
    o.steps = steps;
    if (!model.loaded->report.dt_source.empty()) o.dt_source = model.loaded->report.dt_source;
    if (rates) {
        const auto& r = *rates;
        if (r.size() != 3 ||
            std::any_of(r.begin(), r.end(), [](double x) { return !(x >= 0 && x <= 1); }))
            throw OptionError("rates", "expected three rates p_in, p_hid, p_out in [0, 1]");
        o.has_rates = true;
        o.rates = {r[0], r[1], r[2]};
    }
    return to_py(chip::placement_json(chip::map_model(*model.loaded->graph, c, o), c));
}

// Result's source: the report of one run, read field by field.
void bind_output(py::module_& m) {
    py::class_<Output>(m, "Output")
        .def("json", [](const Output& o) { return report_json(o.report).dump(); })
        .def("text", [](const Output& o) { return report_text(o.report); })
        .def("predictions",
             [](const Output& o) {
                 const auto& p = o.report.result.predictions;
                 py::array_t<std::int64_t> a(static_cast<py::ssize_t>(p.size()));
                 std::copy(p.begin(), p.end(), a.mutable_data());
                 return a;
             })
        .def("accuracy", [](const Output& o) { return o.report.accuracy; })
        .def("samples", [](const Output& o) { return o.report.result.samples; })
        .def("timesteps", [](const Output& o) { return o.report.timesteps; })
        .def("counts", &counts_of)
        .def("energy", &energy_of)
        .def("node_seconds", &node_seconds_of)
        .def("chip",
             [](const Output& o) -> py::object {
                 if (!o.report.chip) return py::none();
                 return py::str(chip::placement_json(*o.report.chip, *o.report.chip_desc).dump());
             })
        .def("recorded_nodes",
             [](const Output& o) {
                 auto* r = o.pipeline->recorder();
                 return r ? r->recorded_nodes() : std::vector<std::string>{};
             })
        .def("recorded_samples",
             [](const Output& o) {
                 auto* r = o.pipeline->recorder();
                 return r ? r->sample_ids() : std::vector<std::int64_t>{};
             })
        .def("spikes",
             [](const Output& o, const std::string& node) {
                 auto* r = o.pipeline->recorder();
                 return r ? recorded(o, node, r->spike_grid(node)) : py::none();
             })
        .def("membrane",
             [](const Output& o, const std::string& node) {
                 auto* r = o.pipeline->recorder();
                 return r ? recorded(o, node, r->membrane(node)) : py::none();
             })
        .def("outputs", [](const Output& o) {
            const auto& s = o.report.result.output_sum;
            const py::ssize_t rows = static_cast<py::ssize_t>(s.size());
            const py::ssize_t cols = rows ? static_cast<py::ssize_t>(s[0].size()) : 0;
            py::array_t<float> a({rows, cols});
            for (py::ssize_t i = 0; i < rows; ++i)
                std::copy(s[static_cast<std::size_t>(i)].begin(),
                          s[static_cast<std::size_t>(i)].end(), a.mutable_data(i, 0));
            return a;
        });
}

}  // namespace

PYBIND11_MODULE(_core, m) {
    m.doc() = "ternion's simulator core; use the functions of the `ternion` package";
    // As in the CLI, every HDF5 file is first read in a child process (sim/io/h5vet.hpp), so a
    // hostile file cannot crash or hang the interpreter; TERNION_TRUST_HDF5=1 skips it.
    const char* trust = std::getenv("TERNION_TRUST_HDF5");
    h5::set_vetting(!(trust && std::string(trust) == "1"));
    static py::exception<Error> error(m, "Error", PyExc_ValueError);
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const Error& e) {
            error(e.what());
        }
    });
    py::class_<Model>(m, "Model")
        .def_property_readonly("path", [](const Model& x) { return x.loaded->path; })
        .def_property_readonly("default_input", [](const Model& x) { return x.default_input; })
        .def("info", &model_info);
    bind_output(m);
    m.def("load", &load, py::arg("path"), py::arg("options") = py::dict());
    m.def("load_bundled", &load_bundled, py::arg("name") = "bsa_digits");
    m.def("build", &build, py::arg("nodes"), py::arg("edges"), py::arg("name"), py::arg("options"),
          py::arg("timesteps"), py::arg("encoding"));
    m.def("run", &run_pipeline, py::arg("model"), py::arg("input"), py::arg("x"), py::arg("labels"),
          py::arg("options"));
    m.def("frames", &frame_stream, py::arg("t"), py::arg("x"), py::arg("y"), py::arg("p"),
          py::arg("frames"), py::arg("split_by"), py::arg("duration"), py::arg("height"),
          py::arg("width"));
    m.def("kernels", [] {
        return py::dict(py::arg("kernels") = simd::level_name(simd::level()),
                        py::arg("cpu_best") = simd::level_name(simd::detect()));
    });
    m.def("quantize", &quantize_file, py::arg("model"), py::arg("output"), py::arg("profile"),
          py::arg("weight_bits"), py::arg("membrane_bits"), py::arg("load_options"));
    m.def("profiles", &hw::list_profiles);
    m.def("map", &map_on_chip, py::arg("model"), py::arg("chip"), py::arg("rates") = py::none(),
          py::arg("steps") = 1);
    m.def("chips", [] { return chip::list_chips(); });
    m.def("describe_profile",
          [](const std::string& name) { return hw::describe_profile(hw::load_profile(name)); });
    m.def("attention_kinds", &ann::kinds);
    m.def("attention", &attention, py::arg("kind"), py::arg("weights"), py::arg("x"),
          py::arg("t") = py::none(), py::arg("heads") = 0, py::arg("causal") = py::none(),
          py::arg("renormalize") = py::none(), py::arg("profile") = hw::kDefaultProfile);
    m.attr("default_profile") = hw::kDefaultProfile;
    // The shared option tables: api.py checks its keywords against them.
    m.def("option_names", [](const std::string& table) {
        std::vector<std::string> r;
        for (const auto& o : table == "load" ? load_option_specs() : run_option_specs())
            r.push_back(o.python);
        return r;
    });
}
