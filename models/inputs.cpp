#include "models/inputs.hpp"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <tuple>

#include "sim/core/rng.hpp"
#include "sim/core/shard.hpp"
#include "sim/io/file_guard.hpp"
#include "sim/io/h5io.hpp"

namespace ternion {

Encoding parse_encoding(const std::string& s) {
    if (s == "direct") return Encoding::direct;
    if (s == "poisson") return Encoding::poisson;
    if (s == "latency") return Encoding::latency;
    throw OptionError("encoding", "must be direct, poisson or latency (got '" + s + "')");
}

const char* encoding_name(Encoding e) {
    switch (e) {
        case Encoding::direct:
            return "direct";
        case Encoding::poisson:
            return "poisson";
        case Encoding::latency:
            return "latency";
    }
    return "?";
}

EncodingChoice parse_encodings(const std::vector<std::string>& values) {
    EncodingChoice c;
    for (const auto& v : values) {
        const auto eq = v.rfind('=');  // kinds have none; a node name might
        if (eq == std::string::npos) {
            if (c.all) throw OptionError("encoding", "given twice without a node ('" + v + "')");
            c.all = parse_encoding(v);
            continue;
        }
        const std::string node = v.substr(0, eq);
        if (node.empty()) throw OptionError("encoding", "'" + v + "' names no Input node");
        for (const auto& [n, e] : c.nodes)
            if (n == node) throw OptionError("encoding", "Input node '" + node + "' given twice");
        c.nodes.emplace_back(node, parse_encoding(v.substr(eq + 1)));
    }
    return c;
}

std::string joined(const std::vector<std::string>& names) {
    std::string r;
    for (const auto& n : names) r += (r.empty() ? "" : ", ") + n;
    return r;
}

void check_encoding_nodes(const NodeEncodings& e, const std::vector<std::string>& inputs) {
    for (const auto& [node, enc] : e)
        if (std::find(inputs.begin(), inputs.end(), node) == inputs.end())
            throw OptionError("encoding", "'" + node + "' is not an Input node (Input nodes: " +
                                              joined(inputs) + ")");
}

InputOptions for_node(const InputOptions& o, const std::string& node) {
    InputOptions r = o;
    for (const auto& [n, e] : o.node_encodings)
        if (n == node) r.encoding = e;
    return r;
}

namespace {

constexpr std::int64_t kMaxInputBytes = std::int64_t{8} << 30;

// Labels of `samples` samples: one non-negative class per sample.
void check_labels(const std::string& name, const Shape& dims, const std::vector<std::int64_t>& l,
                  std::int64_t samples) {
    if (dims.size() != 1 || dims[0] != samples)
        throw InputError(
            name, "/labels",
            "expected shape [" + std::to_string(samples) + "], got " + shape_str(dims));
    for (auto v : l)
        if (v < 0) throw InputError(name, "/labels", "labels must be non-negative");
}

std::vector<std::int64_t> read_labels(const h5::Reader& r, std::int64_t samples) {
    if (!r.exists("/labels")) return {};
    h5::DatasetInfo inf;
    auto l = r.read_ints("/labels", &inf);
    check_labels(r.path(), inf.dims, l, samples);
    return l;
}

// Refuses empty or absurdly large tensors before anything is sized by them.
void check_dims(const std::string& name, const char* field, const Shape& dims,
                std::int64_t bytes_per_value) {
    std::int64_t total = 1;
    for (auto d : dims) {
        if (d <= 0) throw InputError(name, field, "empty dimension in " + shape_str(dims));
        if (total > kMaxInputBytes / bytes_per_value / d)
            throw InputError(name, field, "absurd size " + shape_str(dims));
        total *= d;
    }
}

// A spike tensor's rows (slices along its first axis) as float64, from HDF5, .npy or an array:
// rows [start, start + count), and of each only [start1, start1 + count1) along the second
// axis, as [count, count1, ...] row-major.
class RowSource {
  public:
    virtual ~RowSource() = default;
    virtual Shape dims() const = 0;
    virtual std::vector<double> block(std::int64_t start, std::int64_t count, std::int64_t start1,
                                      std::int64_t count1) const = 0;
    [[noreturn]] virtual void fail(const std::string& what) const = 0;
    virtual std::string dataset() const = 0;  // what errors name: "/spikes", or "" (.npy)
};

class H5Rows final : public RowSource {
  public:
    H5Rows(const h5::Reader& r, std::string ds) : r_(r), ds_(std::move(ds)) {
        auto inf = r.info(ds_);
        if (inf.kind != h5::Kind::integer && inf.kind != h5::Kind::floating && !inf.is_enum)
            r.fail(ds_, "expected a numeric or bool dataset");
        r.check_storage(ds_);
        dims_ = inf.dims;
    }
    Shape dims() const override { return dims_; }
    std::vector<double> block(std::int64_t start, std::int64_t count, std::int64_t start1,
                              std::int64_t count1) const override {
        return r_.read_double_block(ds_, start, count, start1, count1);
    }
    [[noreturn]] void fail(const std::string& what) const override { r_.fail(ds_, what); }
    std::string dataset() const override { return ds_; }

  private:
    const h5::Reader& r_;
    std::string ds_;
    Shape dims_;
};

// The caller's int8 spikes or float32 frames [samples, T, ...] (make_spike_input,
// make_frame_input).
template <typename V>
class ArrayRows final : public RowSource {
  public:
    ArrayRows(const V* data, Shape dims, std::string name, std::string field)
        : data_(data), dims_(std::move(dims)), name_(std::move(name)), field_(std::move(field)) {}
    Shape dims() const override { return dims_; }
    std::vector<double> block(std::int64_t start, std::int64_t count, std::int64_t start1,
                              std::int64_t count1) const override {
        const std::int64_t inner = numel(dims_) / (dims_[0] * dims_[1]), row = dims_[1] * inner;
        std::vector<double> v;
        v.reserve(static_cast<std::size_t>(count * count1 * inner));
        for (std::int64_t r = start; r < start + count; ++r) {
            const V* p = data_ + r * row + start1 * inner;
            v.insert(v.end(), p, p + count1 * inner);
        }
        return v;
    }
    [[noreturn]] void fail(const std::string& what) const override {
        throw InputError(name_, field_, what);
    }
    std::string dataset() const override { return field_; }

  private:
    const V* data_;
    Shape dims_;
    std::string name_, field_;
};

// NumPy's .npy format (numpy.lib.format): magic, version, a little-endian header length, a
// Python dict literal {'descr', 'fortran_order', 'shape'}, then the C-order data.
class NpyRows final : public RowSource {
  public:
    explicit NpyRows(const std::string& path) : path_(path) {
        f_.open(path, std::ios::binary);
        if (!f_) throw InputError(path, "", "cannot open");
        char magic[8] = {};
        f_.read(magic, 8);
        if (!f_ || std::string(magic, 6) != "\x93NUMPY") fail("not a .npy file (bad magic)");
        const int major = static_cast<unsigned char>(magic[6]);
        std::uint32_t hlen = 0;
        unsigned char b[4] = {};
        if (major == 1) {
            f_.read(reinterpret_cast<char*>(b), 2);
            hlen = b[0] | (b[1] << 8);
        } else if (major == 2 || major == 3) {
            f_.read(reinterpret_cast<char*>(b), 4);
            hlen = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<std::uint32_t>(b[3]) << 24);
        } else {
            fail("unsupported .npy version " + std::to_string(major));
        }
        if (!f_ || hlen > (1u << 20)) fail("truncated or absurd .npy header");
        std::string h(hlen, '\0');
        f_.read(h.data(), hlen);
        if (!f_) fail("truncated .npy header");
        data_offset_ = static_cast<std::int64_t>(f_.tellg());
        const std::string descr = field(h, "descr");
        if (descr.size() < 3 || (descr[0] != '<' && descr[0] != '|' && descr[0] != '='))
            fail("dtype '" + descr + "' is not little-endian");
        kind_ = descr[1];
        size_ = std::atoi(descr.c_str() + 2);
        const bool ok = (kind_ == 'b' && size_ == 1) ||
                        ((kind_ == 'i' || kind_ == 'u') &&
                         (size_ == 1 || size_ == 2 || size_ == 4 || size_ == 8)) ||
                        (kind_ == 'f' && (size_ == 4 || size_ == 8));
        if (!ok) fail("dtype '" + descr + "' is not a bool, integer or float type");
        if (field(h, "fortran_order") != "False")
            fail("Fortran-order arrays are not supported (save a C-order array)");
        std::string shape = field(h, "shape");
        // A tuple of non-negative integers only: "-1" is no dimension of a saved array.
        for (char ch : shape)
            if (!std::isdigit(static_cast<unsigned char>(ch)) && ch != ' ' && ch != ',' &&
                ch != '(' && ch != ')')
                fail("shape " + shape + " is not a tuple of non-negative integers");
        std::int64_t total = 1;
        std::size_t k = 0;
        while (k < shape.size()) {
            if (!std::isdigit(static_cast<unsigned char>(shape[k]))) {
                ++k;
                continue;
            }
            std::int64_t d = 0;
            while (k < shape.size() && std::isdigit(static_cast<unsigned char>(shape[k]))) {
                d = d * 10 + (shape[k] - '0');
                if (d > kMaxInputBytes) fail("absurd shape (" + shape + ")");
                ++k;
            }
            dims_.push_back(d);
            if (d > 0 && total > kMaxInputBytes / d) fail("absurd shape (" + shape + ")");
            total *= d;
        }
        f_.seekg(0, std::ios::end);
        const std::int64_t have = static_cast<std::int64_t>(f_.tellg()) - data_offset_;
        if (have < total * size_)
            fail("holds " + std::to_string(have) + " data bytes, shape " + shape_str(dims_) +
                 " needs " + std::to_string(total * size_));
    }
    Shape dims() const override { return dims_; }
    std::vector<double> block(std::int64_t start, std::int64_t count, std::int64_t start1,
                              std::int64_t count1) const override {
        const std::int64_t inner = numel(dims_) / (dims_[0] * dims_[1]), row = dims_[1] * inner;
        const std::int64_t part = count1 * inner;  // values read from each row
        std::vector<unsigned char> raw(static_cast<std::size_t>(part * size_));
        std::vector<double> v;
        v.reserve(static_cast<std::size_t>(count * part));
        for (std::int64_t r = start; r < start + count; ++r) {
            f_.clear();
            f_.seekg(data_offset_ + (r * row + start1 * inner) * size_);
            f_.read(reinterpret_cast<char*>(raw.data()), static_cast<std::streamsize>(raw.size()));
            if (!f_) fail("read failed (truncated data)");
            for (std::int64_t i = 0; i < part; ++i) v.push_back(at(raw.data() + i * size_));
        }
        return v;
    }
    [[noreturn]] void fail(const std::string& what) const override {
        throw InputError(path_, "", what);
    }
    std::string dataset() const override { return ""; }

  private:
    // The value of `key` in the header dict: a quoted string, or the text up to the next ','
    // outside parentheses.
    std::string field(const std::string& h, const std::string& key) const {
        auto p = h.find("'" + key + "'");
        if (p == std::string::npos) fail("header has no '" + key + "'");
        p = h.find(':', p);
        if (p == std::string::npos) fail("malformed header");
        ++p;
        while (p < h.size() && h[p] == ' ') ++p;
        if (p < h.size() && (h[p] == '\'' || h[p] == '"')) {
            const auto e = h.find(h[p], p + 1);
            if (e == std::string::npos) fail("malformed header");
            return h.substr(p + 1, e - p - 1);
        }
        if (p < h.size() && h[p] == '(') {
            const auto e = h.find(')', p);
            if (e == std::string::npos) fail("malformed header");
            return h.substr(p, e - p + 1);
        }
        auto e = h.find_first_of(",}", p);
        return h.substr(p, e == std::string::npos ? std::string::npos : e - p);
    }
    double at(const unsigned char* p) const {
        switch (kind_) {
            case 'b':
                return *p ? 1.0 : 0.0;
            case 'u': {
                std::uint64_t x = 0;
                std::memcpy(&x, p, static_cast<std::size_t>(size_));
                return static_cast<double>(x);
            }
            case 'i': {
                std::int64_t x = 0;
                std::memcpy(&x, p, static_cast<std::size_t>(size_));
                const int shift = 64 - 8 * size_;
                return static_cast<double>((x << shift) >> shift);  // sign-extend
            }
            default:
                if (size_ == 4) {
                    float x;
                    std::memcpy(&x, p, 4);
                    return x;
                } else {
                    double x;
                    std::memcpy(&x, p, 8);
                    return x;
                }
        }
    }
    std::string path_;
    mutable std::ifstream f_;
    std::int64_t data_offset_ = 0;
    char kind_ = 'f';
    int size_ = 4;
    Shape dims_;
};

// The samples one process reads: its shard of the run's range [first_sample, first_sample +
// samples), clamped to the file's `file_samples` (an out-of-range request reads nothing and is
// refused later, by the pipeline, naming the option).
Shard held_samples(const InputOptions& o, std::int64_t file_samples) {
    const std::int64_t first = std::clamp<std::int64_t>(o.first_sample, 0, file_samples);
    const std::int64_t left = file_samples - first;
    const std::int64_t n = o.samples < 0 ? left : std::min(o.samples, left);
    return shard_of(first, n, o.part, o.parts);
}

// The engine asks only for samples of the run, which a process holds: anything else is a bug.
void check_held(const Shard& held, std::int64_t s) {
    if (s < held.first || s >= held.first + held.count)
        throw InternalError("input sample " + std::to_string(s) + " is not held");
}

// Spike tensors, kept as per-(sample, step) event lists so replay costs O(events). Only the
// held samples (held_samples) are read and checked. With `frames`, the tensor holds analog
// frames (/frames: event-camera counts, any finite value) replayed the same way, a step being
// ternary when all its values are -1, 0 or 1 (so the first layer counts ACs), else analog.
class SpikeInput final : public InputSource {
  public:
    SpikeInput(const RowSource& src, const std::string& path, const InputOptions& o,
               bool frames = false)
        : path_(path), dataset_(src.dataset()), frames_(frames) {
        const Shape dims = src.dims();
        check_shape(src, dims);
        time_first_ = choose_layout(src, dims, o) == Layout::time_first;
        samples_ = time_first_ ? dims[1] : dims[0];
        T_ = time_first_ ? dims[0] : dims[1];
        shape_.assign(dims.begin() + 2, dims.end());
        n_ = numel(shape_);
        held_ = held_samples(o, samples_);
        max_memory_ = o.max_memory;
        Events ev = read_events(src);
        sort_events(ev);
    }
    void set_labels(std::vector<std::int64_t> l) { labels_ = std::move(l); }
    bool time_first() const { return time_first_; }
    bool frames() const { return frames_; }
    std::int64_t num_samples() const override { return samples_; }
    Shape sample_shape() const override { return shape_; }
    std::int64_t fixed_timesteps() const override { return T_; }
    void fill(std::int64_t s, std::int64_t t, std::uint64_t, Activity& out,
              OpCounts&) const override {
        check_held(held_, s);
        const auto k = static_cast<std::size_t>((s - held_.first) * T_ + t);
        for (auto e = offsets_[k]; e < offsets_[k + 1]; ++e) {
            out.values[idx_[e]] = frames_ ? fval_[e] : static_cast<float>(val_[e]);
            out.active.push_back(idx_[e]);
        }
        out.ternary = !frames_ || !analog_[k];
    }
    const std::vector<std::int64_t>& labels() const override { return labels_; }
    std::string describe() const override { return path_; }
    std::string dataset() const override { return dataset_; }

  private:
    // Events in file order, keyed by (held sample, step).
    struct Events {
        std::vector<std::uint64_t> count, key;
        std::vector<std::uint32_t> idx;
        std::vector<std::int8_t> val;
        std::vector<float> fval;           // frames: the values
        std::vector<std::uint8_t> analog;  // frames: per (sample, step), a value not in {-1, 1}
    };
    // The first value that is not a spike, by (sample, step, element): the same one whichever
    // order the file is read in and however the samples are split across processes.
    struct BadValue {
        std::int64_t s = -1, t = 0, i = 0;
        double v = 0.0;
        bool before(std::int64_t s2, std::int64_t t2, std::int64_t i2) const {
            return s < 0 || std::tie(s2, t2, i2) < std::tie(s, t, i);
        }
    };

    static void check_shape(const RowSource& src, const Shape& dims) {
        if (dims.size() < 3)
            src.fail("expected [samples, T, ...shape] (or time-first [T, samples, ...]), got " +
                     shape_str(dims));
        std::int64_t total = 1;
        for (auto d : dims) {
            if (d <= 0) src.fail("empty dimension in " + shape_str(dims));
            if (total > kMaxInputBytes / d) src.fail("absurd size " + shape_str(dims));
            total *= d;
        }
    }
    static Layout choose_layout(const RowSource& src, const Shape& dims, const InputOptions& o) {
        if (o.layout != Layout::automatic) return o.layout;
        const std::int64_t mt = o.model_timesteps;
        if (mt > 0 && dims[0] == mt && dims[1] != mt)
            src.fail("shape " + shape_str(dims) + " is ambiguous: samples-first reads " +
                     std::to_string(dims[0]) + " samples of " + std::to_string(dims[1]) +
                     " steps, time-first reads " + std::to_string(dims[1]) + " samples of " +
                     std::to_string(dims[0]) + " steps (the model's metadata/timesteps is " +
                     std::to_string(mt) + "); pass --layout samples-first or time-first");
        return Layout::samples_first;
    }
    // The held samples' slab of the file, read in pieces of about 1 Mi values along the first axis:
    // rows of samples (samples-first), or every step's columns of held samples (time-first).
    Events read_events(const RowSource& src) const {
        Events ev;
        ev.count.assign(static_cast<std::size_t>(held_.count * T_ + 1), 0);
        if (frames_) ev.analog.assign(static_cast<std::size_t>(held_.count * T_), 0);
        if (held_.count == 0) return ev;
        const std::int64_t r_first = time_first_ ? 0 : held_.first;
        const std::int64_t r_count = time_first_ ? T_ : held_.count;
        const std::int64_t c_first = time_first_ ? held_.first : 0;
        const std::int64_t c_count = time_first_ ? held_.count : T_;
        // Pieces of about 1 Mi values (8 MiB as doubles), so the limit is checked often.
        const std::int64_t chunk =
            std::max<std::int64_t>(1, (std::int64_t{1} << 20) / (c_count * n_));
        BadValue bad;
        for (std::int64_t r0 = r_first; r0 < r_first + r_count; r0 += chunk) {
            const std::int64_t cnt = std::min(chunk, r_first + r_count - r0);
            const auto raw = src.block(r0, cnt, c_first, c_count);
            for (std::int64_t k = 0; k < cnt * c_count; ++k) {
                const std::int64_t a = r0 + k / c_count, b = c_first + k % c_count;
                const std::int64_t s = time_first_ ? b : a, t = time_first_ ? a : b;
                add_row(ev, bad, raw.data() + k * n_, s, t);
            }
            // Checked while streaming, piece by piece: a small compressed dataset may inflate
            // to more events than the limit allows. The event arrays' capacity is counted once
            // more, as the next growth would allocate it.
            const double growth = 8.0 * ev.key.capacity() + 4.0 * ev.idx.capacity() +
                                  ev.val.capacity() + 4.0 * ev.fval.capacity();
            check_memory_limit(static_cast<double>(resident_bytes()) + growth, max_memory_,
                               "reading " + path_ + " " + dataset_);
        }
        if (bad.s >= 0) fail_value(src, bad, frames_);
        return ev;
    }
    void add_row(Events& ev, BadValue& bad, const double* row, std::int64_t s,
                 std::int64_t t) const {
        const auto kk = static_cast<std::uint64_t>((s - held_.first) * T_ + t);
        for (std::int64_t i = 0; i < n_; ++i) {
            const double v = row[i];
            if (v == 0.0) continue;
            const bool spike = v == 1.0 || v == -1.0;
            if (frames_ ? !std::isfinite(static_cast<float>(v)) : !spike) {
                if (bad.before(s, t, i)) bad = {s, t, i, v};
                continue;
            }
            ev.key.push_back(kk);
            ev.idx.push_back(static_cast<std::uint32_t>(i));
            if (frames_) {
                ev.fval.push_back(static_cast<float>(v));
                ev.analog[kk] |= !spike;
            } else {
                ev.val.push_back(static_cast<std::int8_t>(v));
            }
            ++ev.count[kk + 1];
        }
    }
    // Where the analog twin of spike dataset `ds` goes: /data, or /inputs/<node>/data.
    static std::string analog_of(const std::string& ds) {
        return ds.empty() || ds == "/spikes" ? "/data" : ds.substr(0, ds.rfind('/')) + "/data";
    }
    static void fail_value(const RowSource& src, const BadValue& b, bool frames) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%g", b.v);
        if (frames)
            src.fail(std::string("value ") + buf + " at sample " + std::to_string(b.s) + ", step " +
                     std::to_string(b.t) + ", element " + std::to_string(b.i) +
                     " is not a finite float32");
        src.fail(std::string("value ") + buf + " at sample " + std::to_string(b.s) + ", step " +
                 std::to_string(b.t) + ", element " + std::to_string(b.i) +
                 " is not -1, 0 or 1 (spikes; analog data goes in " + analog_of(src.dataset()) +
                 ")");
    }
    // Counting sort by (sample, step); events of one step keep their element order.
    void sort_events(const Events& ev) {
        offsets_.assign(ev.count.size(), 0);
        for (std::size_t k = 1; k < ev.count.size(); ++k)
            offsets_[k] = offsets_[k - 1] + ev.count[k];
        idx_.resize(ev.idx.size());
        val_.resize(ev.val.size());
        fval_.resize(ev.fval.size());
        analog_ = ev.analog;
        std::vector<std::uint64_t> pos(offsets_.begin(), offsets_.end() - 1);
        for (std::size_t e = 0; e < ev.key.size(); ++e) {
            const auto p = pos[ev.key[e]]++;
            idx_[p] = ev.idx[e];
            if (frames_)
                fval_[p] = ev.fval[e];
            else
                val_[p] = ev.val[e];
        }
    }

    std::string path_, dataset_;
    bool frames_ = false;
    bool time_first_ = false;
    std::uint64_t max_memory_ = 0;  // --max-memory (0: the default limit)
    Shard held_;
    std::int64_t samples_ = 0, T_ = 0, n_ = 0;
    Shape shape_;
    std::vector<std::uint64_t> offsets_;
    std::vector<std::uint32_t> idx_;
    std::vector<std::int8_t> val_;
    std::vector<float> fval_;
    std::vector<std::uint8_t> analog_;
    std::vector<std::int64_t> labels_;
};

class AnalogInput final : public InputSource {
  public:
    // `dims` is the whole input's [samples, ...shape]; `data` holds the values of samples
    // [held.first, held.first + held.count) (by default all), kept alive by `owner` (zero-copy
    // for the caller's arrays; `owner` may be null when the caller guarantees the lifetime).
    // `field` names the dataset in errors ("/data", "/inputs/<node>/data"; "data" for IDX).
    AnalogInput(std::string name, std::string field, const Shape& dims, const float* data,
                std::shared_ptr<const void> owner, const InputOptions& o,
                std::optional<Shard> held = std::nullopt)
        : path_(std::move(name)),
          field_(std::move(field)),
          enc_(o.encoding),
          T_(o.timesteps),
          owner_(std::move(owner)) {
        if (dims.size() < 2)
            throw InputError(path_, field_, "expected [samples, ...shape], got " + shape_str(dims));
        check_dims(path_, field_.c_str(), dims, 4);
        samples_ = dims[0];
        shape_.assign(dims.begin() + 1, dims.end());
        n_ = numel(shape_);
        data_ = data;
        held_ = held ? *held : Shard{0, samples_};
        const std::int64_t total = held_.count * n_;
        for (std::int64_t k = 0; k < total; ++k)
            if (!std::isfinite(data_[k]))
                throw InputError(path_, field_,
                                 "NaN or Inf at sample " + std::to_string(held_.first + k / n_) +
                                     ", element " + std::to_string(k % n_));
    }
    void set_labels(std::vector<std::int64_t> l) { labels_ = std::move(l); }
    std::int64_t num_samples() const override { return samples_; }
    Shape sample_shape() const override { return shape_; }
    void fill(std::int64_t s, std::int64_t t, std::uint64_t seed, Activity& out,
              OpCounts& ops) const override {
        check_held(held_, s);
        const float* x = data_ + (s - held_.first) * n_;
        out.ternary = true;
        for (std::int64_t i = 0; i < n_; ++i) {
            float v = 0.0f;
            const float a = std::min(std::fabs(x[i]), 1.0f);
            const float sign = x[i] < 0 ? -1.0f : 1.0f;
            switch (enc_) {
                case Encoding::direct:
                    v = x[i];
                    break;
                case Encoding::poisson:
                    // Bernoulli(|x|) per step, polarity sign(x); keyed RNG: thread-independent.
                    if (a > 0 && counter_uniform(seed, static_cast<std::uint64_t>(s),
                                                 static_cast<std::uint64_t>(t),
                                                 static_cast<std::uint64_t>(i)) < a)
                        v = sign;
                    break;
                case Encoding::latency:
                    // One spike at step round((1 - |x|) (T - 1)): strong inputs fire first.
                    if (a > 0 && t == static_cast<std::int64_t>(
                                          std::lround((1.0f - a) * static_cast<float>(T_ - 1))))
                        v = sign;
                    break;
            }
            if (v != 0.0f) {
                out.values[static_cast<std::size_t>(i)] = v;
                out.active.push_back(static_cast<std::uint32_t>(i));
                if (v != 1.0f && v != -1.0f) out.ternary = false;
            }
        }
        if (enc_ != Encoding::direct) ops.cmp += static_cast<std::uint64_t>(n_);
    }
    const std::vector<std::int64_t>& labels() const override { return labels_; }
    std::string describe() const override { return path_; }
    bool same_every_step() const override { return enc_ == Encoding::direct; }
    Encoding encoding() const { return enc_; }
    std::string dataset() const override { return field_; }

  private:
    std::string path_, field_;
    Encoding enc_;
    std::int64_t T_, samples_ = 0, n_ = 0;
    Shard held_;
    Shape shape_;
    std::shared_ptr<const void> owner_;
    const float* data_ = nullptr;
    std::vector<std::int64_t> labels_;
};

std::unique_ptr<SpikeInput> open_spikes(const h5::Reader& r, const InputOptions& o,
                                        const std::string& ds, bool frames = false) {
    H5Rows rows(r, ds);
    return std::make_unique<SpikeInput>(rows, r.path(), o, frames);
}

bool ends_with(const std::string& s, const std::string& e) {
    return s.size() >= e.size() && s.compare(s.size() - e.size(), e.size(), e) == 0;
}

std::unique_ptr<AnalogInput> open_analog(const h5::Reader& r, const InputOptions& o,
                                         const std::string& ds) {
    auto inf = r.info(ds);
    if (inf.kind != h5::Kind::floating && inf.kind != h5::Kind::integer)
        r.fail(ds, "expected a numeric (float32) dataset");
    if (inf.dims.size() < 2) r.fail(ds, "expected [samples, ...shape], got " + shape_str(inf.dims));
    check_dims(r.path(), ds.c_str(), inf.dims, 4);
    r.check_storage(ds);
    const Shard held = held_samples(o, inf.dims[0]);
    // The held values as floats must fit before a (possibly compressed) dataset is inflated.
    check_memory_limit(
        static_cast<double>(resident_bytes()) +
            4.0 * static_cast<double>(held.count) *
                static_cast<double>(numel(Shape(inf.dims.begin() + 1, inf.dims.end()))),
        o.max_memory, "reading " + r.path() + " " + ds);
    auto data = std::make_shared<std::vector<float>>(r.read_float_rows(ds, held.first, held.count));
    // uint8 data are 8-bit images, read as value / 255 as IDX files are (one rule everywhere).
    if (inf.kind == h5::Kind::integer && inf.type_size == 1 && !inf.is_signed)
        for (float& v : *data) v /= 255.0f;
    return std::make_unique<AnalogInput>(r.path(), ds, inf.dims, data->data(), data, o, held);
}

// One Input node's dataset, `group`/spikes or `group`/data ("" for the single-input /spikes
// and /data), with the file's labels.
std::unique_ptr<InputSource> open_h5_input(const h5::Reader& r, const InputOptions& o,
                                           const std::string& group,
                                           const std::vector<std::int64_t>* labels = nullptr) {
    const std::string sp = group + "/spikes", an = group + "/data", fr = group + "/frames";
    const bool has_sp = r.exists(sp), has_an = r.exists(an), has_fr = r.exists(fr);
    if (has_sp + has_an + has_fr > 1)
        r.fail(group, "has more than one of " + sp + ", " + an + " and " + fr + ": keep one");
    auto labelled = [&](auto src) -> std::unique_ptr<InputSource> {
        src->set_labels(labels ? *labels : read_labels(r, src->num_samples()));
        return src;
    };
    if (has_sp) return labelled(open_spikes(r, o, sp));
    if (has_an) return labelled(open_analog(r, o, an));
    if (has_fr) return labelled(open_spikes(r, o, fr, true));
    if (group.empty()) r.fail("", "no /spikes or /data dataset (nor /frames)");
    const bool flat = r.exists("/spikes") || r.exists("/data");
    r.fail(sp, "missing: a model with several Input nodes reads " + sp + " or " + an +
                   " for its Input node '" + group.substr(group.rfind('/') + 1) + "'" +
                   (flat ? " (/spikes and /data serve a model with one Input node)" : ""));
}

// ---------------------------------------------------------------------------------------------
// IDX (yann.lecun.com/exdb/mnist, github.com/zalandoresearch/fashion-mnist): a big-endian header
// 0x00 0x00 <type> <ndims>, ndims uint32 sizes, then the values row-major. gzip or raw, read
// through zlib (which passes raw files through). Only unsigned bytes (type 0x08) are read.

class IdxFile {
  public:
    explicit IdxFile(const std::string& path) : path_(path) {
        // gzopen on a missing file gives no reason: check first, as the HDF5 reader does.
        std::error_code ec;
        if (!std::filesystem::exists(path, ec)) throw InputError(path, "", "no such file");
        if (std::filesystem::is_directory(path, ec)) throw InputError(path, "", "is a directory");
        gz_ = gzopen(path.c_str(), "rb");
        if (!gz_) throw InputError(path, "", "cannot open");
        file_bytes_ = static_cast<std::int64_t>(std::filesystem::file_size(path, ec));
    }
    ~IdxFile() {
        if (gz_) gzclose(gz_);
    }
    IdxFile(const IdxFile&) = delete;
    IdxFile& operator=(const IdxFile&) = delete;

    // Reads exactly n bytes; `field` names what is being read in the error.
    void read(void* dst, std::size_t n, const char* field) {
        auto* p = static_cast<unsigned char*>(dst);
        std::size_t got = 0;
        while (got < n) {
            const auto want = static_cast<unsigned>(std::min<std::size_t>(n - got, 1u << 30));
            const int k = gzread(gz_, p + got, want);
            if (k < 0) stream_error();
            if (k == 0) {
                check_stream();
                throw InputError(path_, field,
                                 "truncated: expected " + std::to_string(n) + " bytes, found " +
                                     std::to_string(got));
            }
            got += static_cast<std::size_t>(k);
        }
    }
    // The header: [dims], checked against the expected type, rank and a size cap (elements).
    std::vector<std::int64_t> header(int want_rank_min, int want_rank_max, const char* what,
                                     std::int64_t max_elements) {
        std::array<unsigned char, 4> m{};
        read(m.data(), 4, "magic");
        char buf[16];
        std::snprintf(buf, sizeof buf, "0x%02X%02X%02X%02X", m[0], m[1], m[2], m[3]);
        if (m[0] != 0 || m[1] != 0 || m[3] < want_rank_min || m[3] > want_rank_max)
            throw InputError(path_, "magic",
                             std::string("found ") + buf + ", not the header of an IDX " + what +
                                 " file (0x000008" + (want_rank_min == 1 ? "01" : "03") + ")");
        if (m[2] != 0x08)
            throw InputError(path_, "magic",
                             std::string("found ") + buf +
                                 ": only unsigned-byte IDX files (type 0x08) are read");
        std::vector<std::int64_t> dims(m[3]);
        std::int64_t total = 1;
        for (std::size_t i = 0; i < dims.size(); ++i) {
            std::array<unsigned char, 4> d{};
            read(d.data(), 4, "dims");
            const std::uint32_t v = (std::uint32_t{d[0]} << 24) | (std::uint32_t{d[1]} << 16) |
                                    (std::uint32_t{d[2]} << 8) | std::uint32_t{d[3]};
            dims[i] = static_cast<std::int64_t>(v);
            if (v == 0) throw InputError(path_, "dims", "dimension " + std::to_string(i) + " is 0");
            if (total > max_elements / dims[i])
                throw InputError(path_, "dims",
                                 "absurd size " + shape_str(dims) + " (more than " +
                                     std::to_string(max_elements) + " values)");
            total *= dims[i];
        }
        return dims;
    }
    // An uncompressed file must hold the values its header declares: checked before anything
    // is sized from the header, so a 13-byte file cannot ask for gigabytes. (A gzip stream's
    // length is known only by reading it; its reader grows with what it finds.)
    void check_raw_size(std::size_t rank, std::int64_t values) {
        if (gzdirect(gz_) != 1 || file_bytes_ < 0) return;
        const std::int64_t held = file_bytes_ - 4 - 4 * static_cast<std::int64_t>(rank);
        if (held < values)
            throw InputError(path_, "data",
                             "truncated: the header declares " + std::to_string(values) +
                                 " values, the file holds " +
                                 std::to_string(std::max<std::int64_t>(held, 0)));
    }
    // After the values: nothing may follow.
    void expect_end() {
        unsigned char c = 0;
        const int k = gzread(gz_, &c, 1);
        if (k < 0) stream_error();
        if (k > 0) throw InputError(path_, "data", "trailing bytes after the values");
        check_stream();
    }

  private:
    // zlib's message, without the path it puts in front.
    std::string zlib_message(int& err) const {
        std::string m = gzerror(gz_, &err);
        if (m.rfind(path_ + ": ", 0) == 0) m.erase(0, path_.size() + 2);
        return m;
    }
    [[noreturn]] void stream_error() {
        int err = 0;
        throw InputError(path_, "gzip", "corrupt compressed stream: " + zlib_message(err));
    }
    void check_stream() {
        int err = 0;
        const std::string msg = zlib_message(err);
        if (err != Z_OK && err != Z_STREAM_END)
            throw InputError(path_, "gzip", "corrupt compressed stream: " + msg);
    }
    std::string path_;
    gzFile gz_ = nullptr;
    std::int64_t file_bytes_ = -1;
};

std::unique_ptr<InputSource> open_idx(const std::string& path, const InputOptions& o) {
    IdxFile f(path);
    auto dims = f.header(2, 4, "images", kMaxInputBytes / 4);
    const std::int64_t samples = dims[0];
    Shape shape(dims.begin() + 1, dims.end());
    if (shape.size() == 2) shape.insert(shape.begin(), 1);  // [H, W] images: one channel
    const std::int64_t n = numel(shape);
    f.check_raw_size(dims.size(), samples * n);
    // A compressed stream is read through; only the held samples' pixels are kept, and the
    // buffer grows with the rows actually found.
    const Shard held = held_samples(o, samples);
    // The held pixels as floats must fit before anything is inflated (a small gzip stream may
    // declare gigabytes).
    check_memory_limit(static_cast<double>(resident_bytes()) +
                           4.0 * static_cast<double>(held.count) * static_cast<double>(n),
                       o.max_memory, "reading " + path);
    auto data = std::make_shared<std::vector<float>>();
    data->reserve(static_cast<std::size_t>(std::min<std::int64_t>(held.count * n, 1 << 24)));
    // Read in pieces of at most 1 MiB: a truncated stream is found before a buffer the size of
    // one (possibly huge) declared image is allocated.
    std::vector<unsigned char> piece(static_cast<std::size_t>(std::min<std::int64_t>(n, 1 << 20)));
    for (std::int64_t k = 0; k < samples; ++k) {
        const bool keep = k >= held.first && k < held.first + held.count;
        for (std::int64_t done = 0; done < n;) {
            const auto len = static_cast<std::size_t>(std::min<std::int64_t>(n - done, 1 << 20));
            f.read(piece.data(), len, "data");
            if (keep)
                for (std::size_t i = 0; i < len; ++i)
                    data->push_back(static_cast<float>(piece[i]) / 255.0f);
            done += static_cast<std::int64_t>(len);
        }
    }
    f.expect_end();

    std::string lpath = o.labels;
    if (lpath.empty()) {
        std::error_code ec;
        const std::string sib = idx_sibling_labels(path);
        if (!sib.empty() && std::filesystem::is_regular_file(sib, ec)) lpath = sib;
    }
    std::vector<std::int64_t> labels;
    if (!lpath.empty()) {
        IdxFile lf(lpath);
        auto ld = lf.header(1, 1, "labels", kMaxInputBytes);
        if (ld[0] != samples)
            throw InputError(lpath, "dims",
                             std::to_string(ld[0]) + " labels for " + std::to_string(samples) +
                                 " images in " + path);
        std::vector<unsigned char> l(static_cast<std::size_t>(samples));
        lf.read(l.data(), l.size(), "data");
        lf.expect_end();
        labels.assign(l.begin(), l.end());
    }
    Shape full{samples};
    full.insert(full.end(), shape.begin(), shape.end());
    auto src = std::make_unique<AnalogInput>(path, "/data", full, data->data(), data, o, held);
    src->set_labels(std::move(labels));
    return src;
}

}  // namespace

Layout parse_layout(const std::string& s) {
    if (s == "samples-first" || s == "ST" || s == "st") return Layout::samples_first;
    if (s == "time-first" || s == "TS" || s == "ts") return Layout::time_first;
    throw OptionError("layout", "must be samples-first (ST) or time-first (TS), got '" + s + "'");
}

std::string input_label(const InputSource& src) {
    if (const auto* sp = dynamic_cast<const SpikeInput*>(&src))
        return std::string(sp->frames() ? "replayed frames (" : "replayed spikes (") +
               (sp->time_first() ? "time-first" : "samples-first") + ")";
    const auto* an = dynamic_cast<const AnalogInput*>(&src);
    return std::string(encoding_name(an ? an->encoding() : Encoding::direct)) + " encoding";
}

std::string input_encoding(const InputSource& src) {
    if (const auto* sp = dynamic_cast<const SpikeInput*>(&src))
        return sp->frames() ? "frames" : "spikes";
    const auto* an = dynamic_cast<const AnalogInput*>(&src);
    return encoding_name(an ? an->encoding() : Encoding::direct);
}

namespace {

// The spike sources' fewest steps (0: none), refused when they differ and no --timesteps
// chooses the steps every one of them holds.
std::int64_t fewest_fixed_steps(const std::vector<const InputSource*>& srcs, bool chosen,
                                const std::string& input, std::string& holder) {
    std::int64_t fixed = 0;
    const InputSource* fewest = nullptr;
    for (const auto* s : srcs) {
        const std::int64_t t = s->fixed_timesteps();
        if (t <= 0) continue;
        if (fewest && t != fixed && !chosen)
            throw InputError(input, s->dataset(),
                             "holds " + std::to_string(t) + " steps, " + fewest->dataset() +
                                 " holds " + std::to_string(fixed) +
                                 ": pass --timesteps (at most the fewer) to run the first steps "
                                 "of both");
        if (!fewest || t < fixed) {
            fixed = t;
            fewest = s;
        }
    }
    holder = srcs.size() > 1 && fewest ? input + ": " + fewest->dataset() : input;
    return fixed;
}

}  // namespace

std::int64_t resolve_timesteps(const std::vector<const InputSource*>& srcs,
                               std::optional<std::int64_t> option, std::int64_t model_T,
                               const std::string& input, std::vector<std::string>& notes) {
    std::string of;  // what holds the steps: the file, or the file and dataset
    const std::int64_t fixed = fewest_fixed_steps(srcs, option.has_value(), input, of);
    if (fixed > 0) {
        if (!option) {
            if (model_T > 0 && model_T != fixed)
                notes.push_back("the spike input has " + std::to_string(fixed) +
                                " steps and runs all of them (the model's metadata/timesteps " +
                                "is " + std::to_string(model_T) + "; --timesteps shortens)");
            return fixed;
        }
        if (*option > fixed)
            throw OptionError("timesteps", std::to_string(*option) + " is more than the " +
                                               std::to_string(fixed) + " steps of " + of);
        if (*option < fixed)
            notes.push_back("warning: --timesteps " + std::to_string(*option) +
                            " runs only the first " + std::to_string(*option) + " of the " +
                            std::to_string(fixed) + " steps of " + of);
        return *option;
    }
    if (option) return *option;
    if (model_T > 0) return model_T;
    throw OptionError("timesteps", "is required for analog input " + input);
}

bool looks_like_idx(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    unsigned char m[8] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
    f.read(reinterpret_cast<char*>(m), 8);
    const auto got = f.gcount();
    // An HDF5 or .npy signature wins over the name.
    if (got == 8 && std::memcmp(m, "\x89HDF\r\n\x1a\n", 8) == 0) return false;
    if (got >= 6 && std::memcmp(m, "\x93NUMPY", 6) == 0) return false;
    // By name ("...-idx3-ubyte", "x.idx"): then a damaged header is reported as IDX's.
    std::string name = std::filesystem::path(path).filename().string();
    for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (name.find("idx") != std::string::npos || name.find("ubyte") != std::string::npos)
        return true;
    if (got < 4) return false;
    if (m[0] == 0x1F && m[1] == 0x8B) return true;  // gzip
    const bool type_ok = m[2] == 0x08 || m[2] == 0x09 || (m[2] >= 0x0B && m[2] <= 0x0E);
    return m[0] == 0 && m[1] == 0 && type_ok && m[3] >= 1 && m[3] <= 4;
}

std::string idx_sibling_labels(const std::string& images_path) {
    std::filesystem::path p(images_path);
    std::string name = p.filename().string();
    const auto at = name.rfind("images");
    if (at == std::string::npos) return "";
    name.replace(at, 6, "labels");
    const auto r = name.find("idx3", at);
    if (r != std::string::npos) name.replace(r, 4, "idx1");
    return (p.parent_path() / name).string();
}

std::string fashion_mnist_test_images() {
    const std::string p = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz";
    std::error_code ec;
    if (!std::filesystem::is_regular_file(p, ec))
        throw InputError(p, "",
                         "not found: install Debian's dataset-fashion-mnist "
                         "(tools/install_deps.sh), or pass --input");
    return p;
}

std::unique_ptr<InputSource> open_input(const std::string& path, const InputOptions& o) {
    if (looks_like_idx(path)) return open_idx(path, o);
    if (ends_with(path, ".npy")) {
        if (!o.labels.empty())
            throw OptionError("labels", "applies to IDX images; a .npy input carries no labels");
        NpyRows rows(path);
        return std::make_unique<SpikeInput>(rows, path, o);
    }
    if (!o.labels.empty())
        throw OptionError("labels", "applies to IDX images; an HDF5 input carries /labels");
    h5::Reader r(path);
    if (r.exists("/spikes") + r.exists("/data") + r.exists("/frames") > 1)
        r.fail("", "has more than one of /spikes, /data and /frames: keep one");
    return open_h5_input(r, o, "");
}

namespace {

// A file of several Input nodes' inputs: /inputs/<node>/... and neither /spikes nor /data.
bool holds_node_groups(const h5::Reader& r) {
    return !r.exists("/spikes") && !r.exists("/data") && !r.exists("/frames") &&
           r.exists("/inputs");
}

}  // namespace

std::vector<std::unique_ptr<InputSource>> open_inputs(const std::string& path,
                                                      const std::vector<std::string>& nodes,
                                                      const InputOptions& o) {
    std::vector<std::unique_ptr<InputSource>> v;
    const bool hdf5 = !looks_like_idx(path) && !ends_with(path, ".npy");
    if (nodes.size() <= 1) {
        // One Input node: /spikes or /data, or else its own /inputs/<node> group.
        std::optional<h5::Reader> r;
        if (hdf5 && nodes.size() == 1) r.emplace(path);
        const InputOptions on = nodes.empty() ? o : for_node(o, nodes[0]);
        if (!r || !holds_node_groups(*r)) {
            v.push_back(open_input(path, on));
        } else {
            if (!o.labels.empty())
                throw OptionError("labels", "applies to IDX images; an HDF5 input carries /labels");
            v.push_back(open_h5_input(*r, on, "/inputs/" + nodes[0]));
        }
        return v;
    }
    const std::string need = "the model has " + std::to_string(nodes.size()) + " Input nodes (" +
                             joined(nodes) +
                             "), each read from /inputs/<node>/spikes or /data of an HDF5 file";
    if (!hdf5) throw InputError(path, "", "holds one array: " + need);
    if (!o.labels.empty())
        throw OptionError("labels", "applies to IDX images; an HDF5 input carries /labels");
    h5::Reader r(path);
    for (std::size_t k = 0; k < nodes.size(); ++k) {
        v.push_back(open_h5_input(r, for_node(o, nodes[k]), "/inputs/" + nodes[k],
                                  k ? &v[0]->labels() : nullptr));
        if (v[k]->num_samples() != v[0]->num_samples())
            r.fail(v[k]->dataset(), "has " + std::to_string(v[k]->num_samples()) + " samples, " +
                                        v[0]->dataset() + " has " +
                                        std::to_string(v[0]->num_samples()));
    }
    return v;
}

std::unique_ptr<InputSource> make_spike_input(const std::int8_t* data, const Shape& dims,
                                              std::vector<std::int64_t> labels,
                                              const std::string& name, const std::string& field) {
    ArrayRows<std::int8_t> rows(data, dims, name, field);
    InputOptions o;
    o.layout = Layout::samples_first;
    auto src = std::make_unique<SpikeInput>(rows, name, o);
    if (!labels.empty())
        check_labels(name, {static_cast<std::int64_t>(labels.size())}, labels, src->num_samples());
    src->set_labels(std::move(labels));
    return src;
}

std::unique_ptr<InputSource> make_frame_input(const float* data, const Shape& dims,
                                              std::vector<std::int64_t> labels,
                                              const InputOptions& io, const std::string& name,
                                              const std::string& field) {
    ArrayRows<float> rows(data, dims, name, field);
    InputOptions o = io;  // its shard of samples: only those are copied
    o.layout = Layout::samples_first;
    auto src = std::make_unique<SpikeInput>(rows, name, o, true);
    if (!labels.empty())
        check_labels(name, {static_cast<std::int64_t>(labels.size())}, labels, src->num_samples());
    src->set_labels(std::move(labels));
    return src;
}

std::unique_ptr<InputSource> make_analog_input(const float* data, const Shape& dims,
                                               std::shared_ptr<const void> owner,
                                               std::vector<std::int64_t> labels,
                                               const InputOptions& o, const std::string& name,
                                               const std::string& field) {
    auto src = std::make_unique<AnalogInput>(name, field, dims, data, std::move(owner), o);
    if (!labels.empty())
        check_labels(name, {static_cast<std::int64_t>(labels.size())}, labels, src->num_samples());
    src->set_labels(std::move(labels));
    return src;
}

namespace {

// Steps [0, T) of every sample of `src` as int8 [samples, T, ...shape]; counts the spikes.
std::vector<std::int8_t> encode_source(const InputSource& src, std::int64_t T, std::uint64_t seed,
                                       std::uint64_t& spikes) {
    const std::int64_t S = src.num_samples(), n = numel(src.sample_shape());
    std::vector<std::int8_t> out(static_cast<std::size_t>(S * T * n), 0);
    Activity a;
    a.resize(n);
    OpCounts ops;
    for (std::int64_t s = 0; s < S; ++s)
        for (std::int64_t t = 0; t < T; ++t) {
            a.clear();
            src.fill(s, t, seed, a, ops);
            for (auto i : a.active) {
                out[static_cast<std::size_t>((s * T + t) * n + i)] =
                    static_cast<std::int8_t>(a.values[i]);
                ++spikes;
            }
        }
    return out;
}

Shape spike_dims(const InputSource& src, std::int64_t T) {
    Shape dims{src.num_samples(), T};
    auto sh = src.sample_shape();
    dims.insert(dims.end(), sh.begin(), sh.end());
    return dims;
}

// Direct coding is a current, not spikes: `ternion encode` has nothing to write for it.
void check_spiking_encoding(Encoding e, const std::string& what) {
    if (e == Encoding::direct)
        throw OptionError("encoding",
                          "direct coding is analog" + what + ": choose poisson or latency");
}

// The Input nodes' sources of a file with /inputs/<node>/..., in the groups' sorted order.
std::vector<std::unique_ptr<InputSource>> open_node_groups(const h5::Reader& r,
                                                           const EncodingChoice& enc,
                                                           InputOptions o, std::int64_t T,
                                                           std::vector<std::string>& names) {
    names = r.children("/inputs");
    check_encoding_nodes(enc.nodes, names);
    o.node_encodings = enc.nodes;
    o.layout = Layout::samples_first;
    auto v = open_inputs(r.path(), names, o);
    for (std::size_t k = 0; k < v.size(); ++k) {
        const std::int64_t fixed = v[k]->fixed_timesteps();
        if (fixed == 0)
            check_spiking_encoding(for_node(o, names[k]).encoding,
                                   " (Input node '" + names[k] + "')");
        else if (fixed != T)
            r.fail(v[k]->dataset(), "holds " + std::to_string(fixed) + " steps, --timesteps is " +
                                        std::to_string(T) +
                                        ": spike datasets are copied as they are");
    }
    return v;
}

}  // namespace

std::uint64_t encode_file(const std::string& in_path, const std::string& out_path,
                          const EncodingChoice& enc, std::int64_t T, std::uint64_t seed,
                          const std::string& labels_path, std::uint64_t max_memory) {
    if (T <= 0) throw OptionError("timesteps", "must be positive");
    if (T > 1000000) throw OptionError("timesteps", "absurdly large");
    InputOptions o;
    o.encoding = enc.all.value_or(Encoding::poisson);
    o.timesteps = T;
    o.labels = labels_path;
    o.max_memory = max_memory;
    std::vector<std::unique_ptr<InputSource>> srcs;
    std::vector<std::string> names;  // empty: one /data
    const bool groups = !looks_like_idx(in_path) && !ends_with(in_path, ".npy") &&
                        holds_node_groups(h5::Reader(in_path));
    if (groups) {
        if (!labels_path.empty())
            throw OptionError("labels", "applies to IDX images; an HDF5 input carries /labels");
        srcs = open_node_groups(h5::Reader(in_path), enc, o, T, names);
    } else {
        if (!enc.nodes.empty())
            throw OptionError("encoding", "'" + enc.nodes[0].first +
                                              "=...' names an Input node, but " + in_path +
                                              " holds one input (/data), not /inputs/<node>/data");
        srcs.push_back(open_input(in_path, o));
        if (srcs[0]->fixed_timesteps() > 0)
            throw InputError(in_path, srcs[0]->dataset(),
                             "already holds steps (spikes or frames): encode reads analog /data");
        check_spiking_encoding(o.encoding, "");
    }
    std::int64_t bytes = 0;
    for (const auto& src : srcs) bytes += src->num_samples() * T * numel(src->sample_shape());
    if (bytes > kMaxInputBytes) throw OptionError("timesteps", "output would exceed 8 GiB");
    // The spike tensors are built in memory before they are written.
    check_memory_limit(static_cast<double>(resident_bytes()) + static_cast<double>(bytes),
                       max_memory, "encoding " + in_path);
    std::uint64_t spikes = 0;
    std::vector<std::vector<std::int8_t>> out;
    for (std::size_t k = 0; k < srcs.size(); ++k)
        out.push_back(encode_source(*srcs[k], T, input_seed(seed, k), spikes));
    h5::write_atomically(out_path, [&](const std::string& tmp) {
        h5::Writer w(tmp);
        for (std::size_t k = 0; k < srcs.size(); ++k) {
            const std::string ds = names.empty() ? "/spikes" : "/inputs/" + names[k] + "/spikes";
            if (!names.empty()) w.group("/inputs/" + names[k]);
            w.write(ds, out[k], spike_dims(*srcs[k], T));
            const auto* an = dynamic_cast<const AnalogInput*>(srcs[k].get());
            w.attr(ds, "encoding", an ? std::string(encoding_name(an->encoding())) : "copied");
            w.attr(ds, "seed", static_cast<std::int64_t>(seed));
            w.attr(ds, "source", in_path + (names.empty() ? "" : ": " + srcs[k]->dataset()));
        }
        const auto& labels = srcs[0]->labels();
        if (!labels.empty()) w.write("/labels", labels, {static_cast<std::int64_t>(labels.size())});
        w.close();
    });
    return spikes;
}

}  // namespace ternion
