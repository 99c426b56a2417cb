// Spike tensors and frames replayed as per-(sample, step) event lists.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <tuple>

#include "models/inputs/sources.hpp"
#include "sim/io/file_guard.hpp"

namespace ternion {

namespace {

// Spike tensors, kept as per-(sample, step) event lists so replay costs O(events). Only the
// held samples (held_samples) are read and checked. With `frames`, the tensor holds analog
// frames (/frames: event-camera counts, any finite value) replayed the same way, a step being
// ternary when all its values are -1, 0 or 1 (so the first layer counts ACs), else analog.
class SpikeInput final : public FileSource {
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
    std::string label() const override {
        return std::string(frames_ ? "replayed frames (" : "replayed spikes (") +
               (time_first_ ? "time-first" : "samples-first") + ")";
    }
    std::string encoding_word() const override { return frames_ ? "frames" : "spikes"; }
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
};

}  // namespace

std::unique_ptr<FileSource> replay_rows(const RowSource& rows, const std::string& path,
                                        const InputOptions& o, bool frames) {
    return std::make_unique<SpikeInput>(rows, path, o, frames);
}

}  // namespace ternion
