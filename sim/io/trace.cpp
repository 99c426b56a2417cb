#include "sim/io/trace.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <tbb/parallel_for.h>
#include <zlib.h>

#include <cstring>

#include "sim/io/h5io.hpp"

namespace ternion {

namespace {

constexpr std::int64_t kKinds = kOpFieldCount;

std::vector<std::string> kind_names() {
    std::vector<std::string> k;
    OpCounts{}.for_each([&](std::string_view name, std::uint64_t) { k.emplace_back(name); });
    return k;
}

std::int64_t attribute(const Node& n, const std::string& key) {
    for (const auto& [k, v] : n.attributes())
        if (k == key) return static_cast<std::int64_t>(v);
    return 0;
}

// Writes one array dataset into the file h5::Writer has open: chunked,
// byte shuffle, gzip level 1. Traces are written after the run, on the user's clock, so chunks
// of whole rows (samples) are shuffled and compressed in parallel (oneTBB) and stored with
// H5Dwrite_chunk; the file is the same as HDF5's own shuffle+deflate pipeline would write.
// Rows over 1 MiB go through that pipeline instead.
void put(hid_t file, const std::string& path, const std::string& ds, hid_t type, const void* data,
         const Shape& dims, std::size_t elem) {
    constexpr std::size_t kChunk = std::size_t{1} << 20;
    std::vector<hsize_t> d(dims.begin(), dims.end());
    h5::Handle space(H5Screate_simple(static_cast<int>(d.size()), d.data(), nullptr), H5Sclose);
    h5::Handle dcpl = h5::untimed(H5P_DATASET_CREATE);
    const std::int64_t n = numel(dims);
    const std::size_t row_bytes =
        dims.empty() || dims[0] == 0 ? 0 : static_cast<std::size_t>(n / dims[0]) * elem;
    const bool direct = n > 0 && row_bytes > 0 && row_bytes <= kChunk;
    std::vector<hsize_t> chunk(d);
    if (n > 0) {
        if (direct) {
            chunk[0] = std::min<hsize_t>(d[0], std::max<std::size_t>(1, kChunk / row_bytes));
        } else {
            const std::size_t target = std::max<std::size_t>(1, kChunk / elem);
            std::size_t rest = 1;
            for (std::size_t k = chunk.size(); k-- > 0;) {
                if (rest * chunk[k] > target) chunk[k] = std::max<hsize_t>(1, target / rest);
                rest *= chunk[k];
            }
        }
        H5Pset_chunk(dcpl.id(), static_cast<int>(chunk.size()), chunk.data());
        H5Pset_shuffle(dcpl.id());
        H5Pset_deflate(dcpl.id(), 1);
    }
    h5::create_groups(file, path, ds.substr(0, ds.rfind('/')));
    h5::Handle set(
        H5Dcreate2(file, ds.c_str(), type, space.id(), H5P_DEFAULT, dcpl.id(), H5P_DEFAULT),
        H5Dclose);
    if (!set) throw InputError(path, ds, "cannot create dataset");
    if (n == 0) return;
    if (!direct) {
        if (H5Dwrite(set.id(), type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0)
            throw InputError(path, ds, "write failed (disk full?)");
        return;
    }
    const auto rows = static_cast<std::size_t>(d[0]), per = static_cast<std::size_t>(chunk[0]);
    const std::size_t nchunks = (rows + per - 1) / per, bytes = per * row_bytes;
    std::vector<std::vector<unsigned char>> out(nchunks);
    const auto* src = static_cast<const unsigned char*>(data);
    tbb::parallel_for(std::size_t{0}, nchunks, [&](std::size_t c) {
        // Edge chunks are stored whole, padded with the fill value 0.
        const std::size_t r0 = c * per, valid = std::min(per, rows - r0) * row_bytes;
        const unsigned char* raw = src + r0 * row_bytes;
        std::vector<unsigned char> pad, shuf;
        if (valid < bytes) {
            pad.assign(bytes, 0);
            std::memcpy(pad.data(), raw, valid);
            raw = pad.data();
        }
        const unsigned char* in = raw;
        if (elem > 1) {  // HDF5's shuffle: byte j of element i goes to j*m + i
            const std::size_t m = bytes / elem;
            shuf.resize(bytes);
            for (std::size_t j = 0; j < elem; ++j) {
                unsigned char* o = shuf.data() + j * m;
                for (std::size_t i = 0; i < m; ++i) o[i] = raw[i * elem + j];
            }
            in = shuf.data();
        }
        uLongf len = compressBound(static_cast<uLong>(bytes));
        out[c].resize(len);
        if (compress2(out[c].data(), &len, in, static_cast<uLong>(bytes), 1) != Z_OK) len = 0;
        out[c].resize(len);
    });
    std::vector<hsize_t> offset(d.size(), 0);
    for (std::size_t c = 0; c < nchunks; ++c) {
        offset[0] = c * per;
        if (out[c].empty() || H5Dwrite_chunk(set.id(), H5P_DEFAULT, 0, offset.data(), out[c].size(),
                                             out[c].data()) < 0)
            throw InputError(path, ds, "write failed (disk full?)");
    }
}
template <class T>
void put(hid_t file, const std::string& path, const std::string& ds, hid_t type,
         const std::vector<T>& v, const Shape& dims) {
    put(file, path, ds, type, v.data(), dims, sizeof(T));
}

std::string gib(std::uint64_t b) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(b) / (1024.0 * 1024 * 1024));
    return buf;
}

// A recording's spikes as NIR's ValuedEventData: per sample, events in time order, then neuron
// order; rows padded to the longest with idx -1, time +inf, value 0 (NIR's convention).
struct SpikeEvents {
    std::int64_t per_row = 0;       // events in the longest row
    std::vector<std::int32_t> idx;  // n < 2^31 (Shape checks)
    std::vector<double> time;
    std::vector<std::int8_t> value;
};
SpikeEvents spike_events(const std::vector<std::int8_t>& grid, std::int64_t S, std::int64_t T,
                         std::int64_t n, double dt) {
    std::vector<std::int64_t> count(static_cast<std::size_t>(S), 0);
    const auto per = static_cast<std::size_t>(T * n);
    for (std::int64_t s = 0; s < S; ++s)
        count[static_cast<std::size_t>(s)] = static_cast<std::int64_t>(
            per - static_cast<std::size_t>(std::count(
                      grid.begin() + static_cast<std::ptrdiff_t>(s * per),
                      grid.begin() + static_cast<std::ptrdiff_t>((s + 1) * per), std::int8_t{0})));
    SpikeEvents ev;
    const std::int64_t E = S ? *std::max_element(count.begin(), count.end()) : 0;
    ev.per_row = E;
    const auto cellsE = static_cast<std::size_t>(S * E);
    ev.idx.assign(cellsE, -1);
    ev.time.assign(cellsE, std::numeric_limits<double>::infinity());
    ev.value.assign(cellsE, 0);
    for (std::int64_t s = 0; s < S; ++s) {
        auto e = static_cast<std::size_t>(s * E);
        const std::int8_t* g = grid.data() + s * T * n;
        for (std::int64_t t = 0; t < T; ++t)
            for (std::int64_t i = 0; i < n; ++i)
                if (const std::int8_t v = g[t * n + i]) {
                    ev.idx[e] = static_cast<std::int32_t>(i);
                    ev.time[e] = (static_cast<double>(t) + 0.5) * dt;
                    ev.value[e] = v;
                    ++e;
                }
    }
    return ev;
}

// Per-step energy [S, T, kinds] from the counts and each kind's unit energy (NaN: unpriced, 0).
std::vector<double> energy_pj(const std::vector<std::uint64_t>& counts,
                              const std::vector<double>& unit_pj) {
    std::vector<double> e(counts.size());
    for (std::size_t c = 0; c < e.size(); ++c) {
        const auto k = c % static_cast<std::size_t>(kKinds);
        const double p = k < unit_pj.size() ? unit_pj[k] : 0.0;
        e[c] = std::isnan(p) ? 0.0 : static_cast<double>(counts[c]) * p;
    }
    return e;
}

// The trace's root and /ternion: its type, T, dt, the samples, the op kinds and their energies.
void write_run_header(h5::Writer& w, std::int64_t T, const TraceOptions& o,
                      const std::vector<std::int64_t>& samples) {
    w.attr("/", "__type__", std::string("NIRGraphData"));
    w.group("/nodes");
    w.group("/ternion");
    w.attr("/ternion", "timesteps", T);
    w.attr("/ternion", "dt", o.dt);
    w.write("/ternion/samples", samples, {static_cast<std::int64_t>(samples.size())});
    w.write_strings("/ternion/kinds", kind_names(), {kKinds});
    if (o.energy) {
        std::vector<double> u(static_cast<std::size_t>(kKinds),
                              std::numeric_limits<double>::quiet_NaN());
        for (std::size_t k = 0; k < u.size() && k < o.unit_pj.size(); ++k) u[k] = o.unit_pj[k];
        w.write("/ternion/unit_pj", u, {kKinds});
    }
}

}  // namespace

void set_observables(TraceOptions& o, const std::vector<std::string>& words) {
    o.spikes = o.membrane = o.ops = o.energy = o.attention = false;
    for (const auto& w : words) {
        const bool all = w == "all";
        if (!all && w != "spikes" && w != "membrane" && w != "ops" && w != "energy" &&
            w != "attention")
            throw OptionError("record", "unknown observable '" + w +
                                            "' (spikes, membrane, ops, energy, attention, all)");
        o.spikes |= all || w == "spikes";
        o.membrane |= all || w == "membrane";
        o.ops |= all || w == "ops";
        o.energy |= all || w == "energy";
        o.attention |= all || w == "attention";
    }
}

void set_spike_format(TraceOptions& o, const std::string& word) {
    if (word != "events" && word != "grid")
        throw OptionError("spike-format", "must be events or grid, got '" + word + "'");
    o.spike_format = word == "grid" ? SpikeFormat::grid : SpikeFormat::events;
}

std::vector<std::int64_t> parse_index_list(const std::string& text, const std::string& option) {
    // More indices than any run records: refused before they are listed (a range's items take
    // 8 bytes each, so "0-99999999" alone would be 800 MB and seconds of sorting).
    constexpr long long kMaxListed = 1'000'000;
    std::vector<std::int64_t> r;
    std::size_t pos = 0;
    auto bad = [&](const std::string& item) {
        throw OptionError(option, "'" + item + "' is not an index or a range a-b (e.g. 0,3,10-19)");
    };
    auto too_many = [&] {
        throw OptionError(option, "lists more than " + std::to_string(kMaxListed) + " indices");
    };
    while (pos <= text.size()) {
        std::size_t comma = text.find(',', pos);
        std::string item =
            text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
        pos = comma == std::string::npos ? text.size() + 1 : comma + 1;
        if (item.empty()) continue;
        std::size_t dash = item.find('-', 1);
        try {
            std::size_t used = 0;
            if (dash == std::string::npos) {
                long long v = std::stoll(item, &used);
                if (used != item.size() || v < 0) bad(item);
                if (static_cast<long long>(r.size()) >= kMaxListed) too_many();
                r.push_back(v);
            } else {
                std::string a = item.substr(0, dash), b = item.substr(dash + 1);
                long long lo = std::stoll(a, &used);
                if (used != a.size()) bad(item);
                long long hi = std::stoll(b, &used);
                if (used != b.size() || lo < 0 || hi < lo) bad(item);
                if (hi - lo >= kMaxListed - static_cast<long long>(r.size())) too_many();
                for (long long v = lo; v <= hi; ++v) r.push_back(v);
            }
        } catch (const std::logic_error&) {
            bad(item);
        }
    }
    if (r.empty()) throw OptionError(option, "lists no index");
    std::sort(r.begin(), r.end());
    r.erase(std::unique(r.begin(), r.end()), r.end());
    return r;
}

TraceRecorder::TraceRecorder(const Graph& g, const TraceOptions& o, std::int64_t first,
                             std::int64_t samples, std::int64_t T, SampleRange held)
    : g_(g), o_(o), first_(first), samples_(samples), T_(T) {
    select_samples(first, samples, held);
    select_steps(T);
    slot_.assign(static_cast<std::size_t>(g.size()), -1);
    std::vector<Rec> chosen = select_records();
    check_size(chosen);
    // Memory only for the held rows.
    const auto TA = static_cast<std::int64_t>(step_ids_.size());
    const auto held_cells = [&](std::int64_t n) { return static_cast<std::size_t>(rows_ * T * n); };
    for (auto& r : chosen) {
        const auto c = held_cells(r.n);
        if (r.spikes) r.spike_grid.assign(c, 0);
        if (r.membrane) r.v.assign(c, 0.0f);
        if (r.ops) r.counts.assign(held_cells(kKinds), 0);
        if (r.attention) {
            const auto m = static_cast<std::size_t>(rows_ * TA * r.heads * r.rows * r.cols);
            r.scores.assign(m, 0.0f);
            r.weights.assign(m, 0.0f);
            r.have.assign(static_cast<std::size_t>(rows_ * TA), 0);
        }
        slot_[static_cast<std::size_t>(r.node)] = static_cast<int>(recs_.size());
        recs_.push_back(std::move(r));
    }
}

// Samples: rows of every [samples, ...] dataset, in ascending global order.
void TraceRecorder::select_samples(std::int64_t first, std::int64_t samples, SampleRange held) {
    const TraceOptions& o = o_;
    sample_rows_.assign(static_cast<std::size_t>(samples), -1);
    if (o.samples.empty()) {
        for (std::int64_t k = 0; k < samples; ++k) sample_ids_.push_back(first + k);
    } else {
        for (auto s : o.samples) {
            if (s < first || s >= first + samples)
                throw OptionError("record-samples", "sample " + std::to_string(s) +
                                                        " is not in this run [" +
                                                        std::to_string(first) + ", " +
                                                        std::to_string(first + samples) + ")");
            sample_ids_.push_back(s);
        }
    }
    for (std::size_t r = 0; r < sample_ids_.size(); ++r)
        sample_rows_[static_cast<std::size_t>(sample_ids_[r] - first)] =
            static_cast<std::int64_t>(r);
    {
        const std::int64_t lo = held.first, hi = held.count < 0 ? first + samples : lo + held.count;
        row0_ = std::lower_bound(sample_ids_.begin(), sample_ids_.end(), lo) - sample_ids_.begin();
        rows_ = std::lower_bound(sample_ids_.begin(), sample_ids_.end(), hi) - sample_ids_.begin() -
                row0_;
    }
}

void TraceRecorder::select_steps(std::int64_t T) {
    const TraceOptions& o = o_;
    step_slots_.assign(static_cast<std::size_t>(T), -1);
    if (o.steps.empty()) {
        for (std::int64_t t = 0; t < T; ++t) step_ids_.push_back(t);
    } else {
        for (auto t : o.steps) {
            if (t >= T)
                throw OptionError("record-steps", "step " + std::to_string(t) +
                                                      " is not below T = " + std::to_string(T));
            step_ids_.push_back(t);
        }
    }
    for (std::size_t k = 0; k < step_ids_.size(); ++k)
        step_slots_[static_cast<std::size_t>(step_ids_[k])] = static_cast<std::int64_t>(k);
}

std::vector<TraceRecorder::Rec> TraceRecorder::select_records() const {
    const Graph& g = g_;
    const TraceOptions& o = o_;
    std::vector<Rec> chosen;
    auto consider = [&](int u, bool explicit_node) {
        const Node& nd = g.node(u);
        Rec r;
        r.node = u;
        r.n = nd.out_size();
        const bool spiking = nd.is_spiking();
        r.spikes = o.spikes && (explicit_node || spiking);
        r.membrane = o.membrane && (explicit_node || spiking);
        r.ops = o.ops || o.energy;
        r.attention = o.attention && nd.category() == NodeCategory::attention;
        if (r.attention) {
            r.heads = std::max<std::int64_t>(1, attribute(nd, "heads"));
            r.rows = r.cols = attribute(nd, "tokens");
            if (r.rows <= 0) r.attention = false;
        }
        if (r.spikes || r.membrane || r.ops || r.attention) chosen.push_back(std::move(r));
    };
    if (o.nodes.empty()) {
        for (int u : g.order()) consider(u, false);
    } else {
        std::vector<int> seen;
        for (const auto& name : o.nodes) {
            int u = g.find(name);
            if (u < 0) throw OptionError("record-nodes", "no node named '" + name + "'");
            if (std::find(seen.begin(), seen.end(), u) != seen.end()) continue;
            seen.push_back(u);
            consider(u, true);
        }
    }
    return chosen;
}

void TraceRecorder::check_size(const std::vector<Rec>& chosen) {
    const auto S = static_cast<std::int64_t>(sample_ids_.size());
    const auto TA = static_cast<std::int64_t>(step_ids_.size());
    const std::int64_t T = T_;
    const TraceOptions& o = o_;
    const auto cells = [&](std::int64_t n) { return static_cast<std::uint64_t>(S * T * n); };
    // The same sum in floating point first: with an absurd T or node size the integer products
    // would wrap.
    double est = 0;
    for (const auto& r : chosen) {
        const double c = static_cast<double>(S) * static_cast<double>(T) * static_cast<double>(r.n);
        est += (r.spikes ? c : 0) + (r.membrane ? 4 * c : 0) +
               (r.ops ? static_cast<double>(S) * static_cast<double>(T) * kKinds * 16 : 0) +
               (r.attention ? static_cast<double>(S * TA) * 8 *
                                  static_cast<double>(r.heads * r.rows * r.cols)
                            : 0);
    }
    if (est > 0.5 * static_cast<double>(UINT64_MAX)) bytes_ = UINT64_MAX;
    for (const auto& r : chosen) {
        if (bytes_ == UINT64_MAX) break;
        if (r.spikes) bytes_ += cells(r.n);
        if (r.membrane) bytes_ += cells(r.n) * sizeof(float);
        if (r.ops) bytes_ += cells(kKinds) * sizeof(std::uint64_t) * (o.energy ? 2 : 1);
        if (r.attention)
            bytes_ +=
                static_cast<std::uint64_t>(S * TA) *
                (2 * static_cast<std::uint64_t>(r.heads * r.rows * r.cols) * sizeof(float) + 1);
    }
    if (bytes_ > o.max_bytes)
        throw OptionError("max-trace-bytes",
                          "the trace would take an estimated " + std::to_string(bytes_) +
                              " bytes (" + gib(bytes_) + "), over the limit of " +
                              std::to_string(o.max_bytes) + " bytes (" + gib(o.max_bytes) +
                              "); record fewer nodes, samples or observables, or raise the limit");
}

std::int64_t TraceRecorder::row_of(std::int64_t sample) const {
    const std::int64_t k = sample - first_;
    if (k < 0 || k >= samples_) return -1;
    const std::int64_t row = sample_rows_[static_cast<std::size_t>(k)];
    return row >= row0_ && row < row0_ + rows_ ? row - row0_ : -1;
}

std::vector<TraceRows> TraceRecorder::row_buffers() {
    std::vector<TraceRows> b;
    const auto T = static_cast<std::size_t>(T_), TA = step_ids_.size();
    for (auto& r : recs_) {
        const auto n = static_cast<std::size_t>(r.n);
        if (r.spikes) b.push_back({r.spike_grid.data(), T * n});
        if (r.membrane) b.push_back({r.v.data(), T * n * sizeof(float)});
        if (r.ops)
            b.push_back(
                {r.counts.data(), T * static_cast<std::size_t>(kKinds) * sizeof(std::uint64_t)});
        if (r.attention) {
            const auto m = TA * static_cast<std::size_t>(r.heads * r.rows * r.cols);
            b.push_back({r.scores.data(), m * sizeof(float)});
            b.push_back({r.weights.data(), m * sizeof(float)});
            b.push_back({r.have.data(), TA});
        }
    }
    return b;
}

std::int64_t TraceRecorder::step_slot(std::int64_t step) const {
    if (step < 0 || step >= T_) return -1;
    return step_slots_[static_cast<std::size_t>(step)];
}

const TraceRecorder::Rec* TraceRecorder::rec_of(const std::string& node) const {
    const int u = g_.find(node);
    if (u < 0 || slot_[static_cast<std::size_t>(u)] < 0) return nullptr;
    return &recs_[static_cast<std::size_t>(slot_[static_cast<std::size_t>(u)])];
}

std::vector<std::string> TraceRecorder::recorded_nodes() const {
    std::vector<std::string> names;
    for (const Rec& r : recs_) names.push_back(g_.node(r.node).name());
    return names;
}

std::int64_t TraceRecorder::width(const std::string& node) const {
    const Rec* r = rec_of(node);
    return r ? r->n : 0;
}

const std::vector<std::int8_t>* TraceRecorder::spike_grid(const std::string& node) const {
    const Rec* r = rec_of(node);
    return r && r->spikes ? &r->spike_grid : nullptr;
}

const std::vector<float>* TraceRecorder::membrane(const std::string& node) const {
    const Rec* r = rec_of(node);
    return r && r->membrane ? &r->v : nullptr;
}

bool TraceRecorder::wants(int node) const {
    return slot_[static_cast<std::size_t>(node)] >= 0;
}

bool TraceRecorder::wants_attention(int node, std::int64_t sample, std::int64_t step) const {
    const int s = slot_[static_cast<std::size_t>(node)];
    return s >= 0 && recs_[static_cast<std::size_t>(s)].attention && row_of(sample) >= 0 &&
           step_slot(step) >= 0;
}

void TraceRecorder::on_step(std::int64_t sample, std::int64_t step, int node, const Node& n,
                            const Activity& out, const NodeState* state, const OpCounts& ops) {
    const std::int64_t row = row_of(sample);
    if (row < 0) return;
    // Each sample runs on one thread at a time, so rows are written by one thread only.
    Rec& r = recs_[static_cast<std::size_t>(slot_[static_cast<std::size_t>(node)])];
    const auto base = static_cast<std::size_t>((row * T_ + step) * r.n);
    // A spiking node's spike counts (several spikes a step on chips such as Xylo) are kept up
    // to the int8 range; any other output records its sign.
    if (r.spikes)
        for (auto i : out.active) {
            const float v = out.values[i];
            const bool count = n.is_spiking() && v == std::floor(v) && std::fabs(v) <= 127.0f;
            r.spike_grid[base + i] =
                static_cast<std::int8_t>(count ? v : (v > 0 ? 1 : (v < 0 ? -1 : 0)));
        }
    if (r.membrane) {
        thread_local std::vector<float> m;
        const std::vector<float>* src = &out.values;
        if (state && n.membrane(state, m) && static_cast<std::int64_t>(m.size()) == r.n) src = &m;
        std::copy(src->begin(), src->end(), r.v.begin() + static_cast<std::ptrdiff_t>(base));
    }
    if (r.ops) {
        std::uint64_t* c = r.counts.data() + (row * T_ + step) * kKinds;
        ops.for_each([&](std::string_view, std::uint64_t v) { *c++ = v; });
    }
    if (r.attention) {
        const std::int64_t slot = step_slot(step);
        if (slot < 0 || !state) return;
        thread_local AttentionMaps maps;
        if (!n.attention_maps(state, maps)) return;
        const std::int64_t m = r.heads * r.rows * r.cols;
        if (maps.heads != r.heads || maps.rows != r.rows || maps.cols != r.cols ||
            static_cast<std::int64_t>(maps.scores.size()) != m ||
            static_cast<std::int64_t>(maps.weights.size()) != m)
            return;  // unexpected shape: left marked absent rather than guessed
        const std::int64_t cell = row * static_cast<std::int64_t>(step_ids_.size()) + slot;
        std::copy(maps.scores.begin(), maps.scores.end(), r.scores.begin() + cell * m);
        std::copy(maps.weights.begin(), maps.weights.end(), r.weights.begin() + cell * m);
        r.have[static_cast<std::size_t>(cell)] = 1;
    }
}

namespace {

// /ternion/chip: the mesh chip's energy band per inference, in total and per mesh layer.
void write_chip_band(h5::Writer& w, const TraceCost& c) {
    const auto L = static_cast<std::int64_t>(c.chip_layers.size());
    w.group("/ternion/chip");
    w.attr("/ternion/chip", "chip", c.chip);
    w.attr("/ternion/chip", "levels", std::string("ops, +memory, +routing, +static"));
    w.write("/ternion/chip/band_pj_per_inference", c.chip_band_pj, {4}, false);
    w.write_strings("/ternion/chip/layers", c.chip_layers, {L});
    w.write("/ternion/chip/layer_band_pj_per_inference", c.chip_layer_band_pj, {L, 4}, false);
}

}  // namespace

void TraceRecorder::write(const std::string& path,
                          const std::vector<std::pair<std::string, std::string>>& meta,
                          const TraceCost* cost) const {
    const auto S = static_cast<std::int64_t>(sample_ids_.size());
    const auto TA = static_cast<std::int64_t>(step_ids_.size());
    if (row0_ != 0 || rows_ != S)
        throw InternalError("TraceRecorder::write: the recorder holds only part of the rows");
    h5::write_atomically(path, [&](const std::string& tmp) {
        h5::Writer w(tmp);
        const hid_t F = w.file_id();  // the large datasets go through put()
        write_run_header(w, T_, o_, sample_ids_);
        for (const auto& r : recs_) {
            const Node& nd = g_.node(r.node);
            if (r.spikes || r.membrane) {
                const std::string base = "/nodes/" + nd.name();
                w.group(base + "/observables");
                w.attr(base, "__type__", std::string("NIRNodeData"));
                const Shape dims{S, T_, r.n};
                if (r.spikes) {
                    const std::string obs = base + "/observables/spikes";
                    w.group(obs);
                    if (o_.spike_format == SpikeFormat::grid) {
                        w.attr(obs, "__type__", std::string("TimeGriddedData"));
                        put(F, tmp, obs + "/data", H5T_NATIVE_INT8, r.spike_grid, dims);
                    } else {
                        const SpikeEvents ev = spike_events(r.spike_grid, S, T_, r.n, o_.dt);
                        const std::int64_t E = ev.per_row;
                        w.attr(obs, "__type__", std::string("ValuedEventData"));
                        put(F, tmp, obs + "/idx", H5T_NATIVE_INT32, ev.idx, {S, E});
                        put(F, tmp, obs + "/time", H5T_NATIVE_DOUBLE, ev.time, {S, E});
                        put(F, tmp, obs + "/value", H5T_NATIVE_INT8, ev.value, {S, E});
                        w.attr(obs, "n_neurons", r.n);
                        w.attr(obs, "t_max", static_cast<double>(T_) * o_.dt);
                        w.attr(obs, "time_shift", 0.5 * o_.dt);
                    }
                    w.attr(obs, "dt", o_.dt);
                }
                if (r.membrane) {
                    const std::string obs = base + "/observables/v";
                    w.group(obs);
                    w.attr(obs, "__type__", std::string("TimeGriddedData"));
                    put(F, tmp, obs + "/data", H5T_NATIVE_FLOAT, r.v, dims);
                    w.attr(obs, "dt", o_.dt);
                }
            }
            if (r.ops && o_.ops) {
                const std::string ds = "/ternion/ops/" + nd.name();
                put(F, tmp, ds, H5T_NATIVE_UINT64, r.counts, {S, T_, kKinds});
                w.attr(ds, "type", nd.type());
                w.attr(ds, "category", std::string(category_name(nd.category())));
            }
            if (r.ops && o_.energy) {
                const std::string grp = "/ternion/energy/" + nd.name();
                const std::vector<double> e = energy_pj(r.counts, o_.unit_pj);
                put(F, tmp, grp + "/per_step_pj", H5T_NATIVE_DOUBLE, e, {S, T_, kKinds});
                w.attr(grp, "type", nd.type());
                if (cost)
                    for (const auto& nc : cost->nodes)
                        if (nc.name == nd.name()) {
                            w.write(grp + "/total_pj", nc.energy_pj,
                                    {static_cast<std::int64_t>(nc.energy_pj.size())});
                            w.attr(grp, "ann_pj_per_inference", nc.ann_pj_per_inference);
                            w.attr(grp, "ann_macs_per_inference", nc.ann_macs_per_inference);
                        }
            }
            if (r.attention) {
                const std::string grp = "/ternion/attention/" + nd.name();
                const Shape dims{S, TA, r.heads, r.rows, r.cols};
                put(F, tmp, grp + "/scores", H5T_NATIVE_FLOAT, r.scores, dims);
                put(F, tmp, grp + "/weights", H5T_NATIVE_FLOAT, r.weights, dims);
                w.write(grp + "/present", r.have, {S, TA});
                w.write(grp + "/samples", sample_ids_, {S});
                w.write(grp + "/steps", step_ids_, {TA});
                w.attr(grp, "type", nd.type());
                w.attr(grp, "heads", r.heads);
                w.attr(grp, "rows", r.rows);
                w.attr(grp, "cols", r.cols);
            }
        }
        if (o_.energy && cost) {
            w.group("/ternion/energy");
            w.attr("/ternion/energy", "profile", cost->profile);
            w.attr("/ternion/energy", "count_mode", cost->count_mode);
            w.attr("/ternion/energy", "per_inference_pj", cost->per_inference_pj);
            w.attr("/ternion/energy", "ann_pj_per_inference", cost->ann_pj_per_inference);
        }
        if (cost && !cost->chip.empty()) write_chip_band(w, *cost);
        // HDF5 lists groups by name: the graph's evaluation order is stored for readers
        // (figures draw nodes in it).
        std::vector<std::string> order;
        for (int u : g_.order()) order.push_back(g_.node(u).name());
        w.write_strings("/ternion/node_order", order, {static_cast<std::int64_t>(order.size())});
        w.group("/ternion/metadata");
        for (const auto& [k, v] : meta) w.attr("/ternion/metadata", k, v);
        w.close();
    });
}

}  // namespace ternion
