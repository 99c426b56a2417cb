#include "models/inputs.hpp"

#include <cmath>
#include <filesystem>
#include <functional>
#include <optional>

#include "sim/h5io.hpp"
#include "sim/rng.hpp"
#include "sim/shard.hpp"

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

// The samples one process reads (InputOptions::part): `keep`, its shard of the run, which it
// holds, and `visit`, every sample it reads and checks, in ascending ranges (`keep` is one of
// them; the others are its share of the samples outside the run). One process keeps and
// visits every sample.
struct RowPlan {
    Shard keep;
    std::vector<Shard> visit;
    bool keeps(const Shard& v) const { return v.first == keep.first && v.count == keep.count; }
};

RowPlan plan_rows(std::int64_t samples, const InputOptions& o) {
    if (o.parts <= 1) return {{0, samples}, {{0, samples}}};
    std::int64_t first = o.first_sample, count = o.samples < 0 ? samples - first : o.samples;
    // A range the run will refuse: hold nothing, check a share of everything (the refusal
    // comes afterwards, as in one process).
    if (first < 0 || first >= samples || count <= 0 || count > samples - first) first = count = 0;
    RowPlan p;
    p.keep = shard_of(first, count, o.part, o.parts);
    const Shard share = shard_of(0, samples, o.part, o.parts);
    const std::int64_t end = share.first + share.count;
    auto add = [&](std::int64_t lo, std::int64_t hi) {
        if (hi > lo) p.visit.push_back({lo, hi - lo});
    };
    add(share.first, std::min(end, first));
    add(p.keep.first, p.keep.first + p.keep.count);
    add(std::max(share.first, first + count), end);
    return p;
}

// Refuses NaN and Inf in `count` values of samples from `first_sample` on.
void check_finite(const std::string& name, const float* v, std::int64_t count, std::int64_t n,
                  std::int64_t first_sample) {
    for (std::int64_t k = 0; k < count; ++k)
        if (!std::isfinite(v[k]))
            throw InputError(name, "/data",
                             "NaN or Inf at sample " + std::to_string(first_sample + k / n) +
                                 ", element " + std::to_string(k % n));
}

// Spike tensors, kept as per-(sample, step) event lists so replay costs O(events).
class SpikeInput final : public InputSource {
  public:
    // Reads `count` samples from `first` on, as [count, T, ...shape] int8 values.
    using Rows = std::function<std::vector<std::int8_t>(std::int64_t first, std::int64_t count)>;
    SpikeInput(std::string name, const Shape& dims, const Rows& read_rows,
               const InputOptions& o = {})
        : path_(std::move(name)) {
        if (dims.size() < 3)
            throw InputError(path_, "/spikes",
                             "expected [samples, T, ...shape], got " + shape_str(dims));
        check_dims(path_, "/spikes", dims, 1);
        samples_ = dims[0];
        T_ = dims[1];
        shape_.assign(dims.begin() + 2, dims.end());
        n_ = numel(shape_);
        const RowPlan plan = plan_rows(samples_, o);
        held_ = plan.keep;
        offsets_.reserve(static_cast<std::size_t>(held_.count * T_ + 1));
        offsets_.push_back(0);
        for (const Shard& v : plan.visit) read(read_rows, v, plan.keeps(v));
    }
    void set_labels(std::vector<std::int64_t> l) { labels_ = std::move(l); }
    std::int64_t num_samples() const override { return samples_; }
    Shape sample_shape() const override { return shape_; }
    std::int64_t fixed_timesteps() const override { return T_; }
    void fill(std::int64_t s, std::int64_t t, std::uint64_t, Activity& out,
              OpCounts&) const override {
        if (s < held_.first || s >= held_.first + held_.count)
            throw InternalError("SpikeInput: sample " + std::to_string(s) + " was not read");
        const auto k = static_cast<std::size_t>((s - held_.first) * T_ + t);
        for (auto e = offsets_[k]; e < offsets_[k + 1]; ++e) {
            out.values[idx_[e]] = static_cast<float>(val_[e]);
            out.active.push_back(idx_[e]);
        }
        out.ternary = true;
    }
    const std::vector<std::int64_t>& labels() const override { return labels_; }
    std::string describe() const override { return path_; }

  private:
    // Reads and checks samples `v` in slabs (bounded memory); keeps their events when `keep`.
    void read(const Rows& read_rows, const Shard& v, bool keep) {
        const std::int64_t per_sample = T_ * n_;
        const std::int64_t chunk = std::max<std::int64_t>(1, (std::int64_t{64} << 20) / per_sample);
        for (std::int64_t s0 = v.first; s0 < v.first + v.count; s0 += chunk) {
            const std::int64_t cnt = std::min(chunk, v.first + v.count - s0);
            auto raw = read_rows(s0, cnt);
            for (std::int64_t k = 0; k < cnt * T_; ++k) {
                const std::int8_t* row = raw.data() + k * n_;
                for (std::int64_t i = 0; i < n_; ++i) {
                    const std::int8_t x = row[i];
                    if (x == 0) continue;
                    if (x != 1 && x != -1)
                        throw InputError(path_, "/spikes",
                                         "value " + std::to_string(x) + " at sample " +
                                             std::to_string(s0 + k / T_) + ", step " +
                                             std::to_string(k % T_) + " is not -1, 0 or 1");
                    if (!keep) continue;
                    idx_.push_back(static_cast<std::uint32_t>(i));
                    val_.push_back(x);
                }
                if (keep) offsets_.push_back(idx_.size());
            }
        }
    }

    std::string path_;
    std::int64_t samples_ = 0, T_ = 0, n_ = 0;
    Shard held_;
    Shape shape_;
    std::vector<std::uint64_t> offsets_;
    std::vector<std::uint32_t> idx_;
    std::vector<std::int8_t> val_;
    std::vector<std::int64_t> labels_;
};

class AnalogInput final : public InputSource {
  public:
    // `data` holds [samples, ...shape] values, kept alive by `owner` (zero-copy for the
    // caller's arrays; `owner` may be null when the caller guarantees the lifetime).
    // With `held`, `data` holds only those samples (a process's shard; see RowPlan).
    AnalogInput(std::string name, const Shape& dims, const float* data,
                std::shared_ptr<const void> owner, const InputOptions& o,
                std::optional<Shard> held = std::nullopt)
        : path_(std::move(name)), enc_(o.encoding), T_(o.timesteps), owner_(std::move(owner)) {
        if (dims.size() < 2)
            throw InputError(path_, "/data",
                             "expected [samples, ...shape], got " + shape_str(dims));
        check_dims(path_, "/data", dims, 4);
        samples_ = dims[0];
        shape_.assign(dims.begin() + 1, dims.end());
        n_ = numel(shape_);
        data_ = data;
        held_ = held.value_or(Shard{0, samples_});
        check_finite(path_, data_, held_.count * n_, n_, held_.first);
    }
    void set_labels(std::vector<std::int64_t> l) { labels_ = std::move(l); }
    std::int64_t num_samples() const override { return samples_; }
    Shape sample_shape() const override { return shape_; }
    void fill(std::int64_t s, std::int64_t t, std::uint64_t seed, Activity& out,
              OpCounts& ops) const override {
        if (s < held_.first || s >= held_.first + held_.count)
            throw InternalError("AnalogInput: sample " + std::to_string(s) + " was not read");
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

  private:
    std::string path_;
    Encoding enc_;
    std::int64_t T_, samples_ = 0, n_ = 0;
    Shard held_;
    Shape shape_;
    std::shared_ptr<const void> owner_;
    const float* data_ = nullptr;
    std::vector<std::int64_t> labels_;
};

std::unique_ptr<InputSource> open_spikes(const h5::Reader& r, const InputOptions& o) {
    auto inf = r.info("/spikes");
    if (inf.kind != h5::Kind::integer) r.fail("/spikes", "expected an integer (int8) dataset");
    r.check_storage("/spikes");
    auto src = std::make_unique<SpikeInput>(
        r.path(), inf.dims,
        [&](std::int64_t first, std::int64_t count) {
            return r.read_int8_rows("/spikes", first, count);
        },
        o);
    src->set_labels(read_labels(r, src->num_samples()));
    return src;
}

// One process's part of /data (RowPlan): its shard read as a hyperslab and kept, its share
// of the other samples read in slabs and checked.
std::unique_ptr<InputSource> open_analog_part(const h5::Reader& r, const Shape& dims,
                                              const InputOptions& o) {
    r.check_storage("/data");
    const std::int64_t n = numel(Shape(dims.begin() + 1, dims.end()));
    const RowPlan plan = plan_rows(dims[0], o);
    auto data = std::make_shared<std::vector<float>>();
    for (const Shard& v : plan.visit) {
        if (plan.keeps(v)) {
            *data = r.read_float_rows("/data", v.first, v.count);
            check_finite(r.path(), data->data(), v.count * n, n, v.first);
            continue;
        }
        const std::int64_t chunk = std::max<std::int64_t>(1, (std::int64_t{16} << 20) / n);
        for (std::int64_t s0 = v.first; s0 < v.first + v.count; s0 += chunk) {
            const std::int64_t cnt = std::min(chunk, v.first + v.count - s0);
            const auto rows = r.read_float_rows("/data", s0, cnt);
            check_finite(r.path(), rows.data(), cnt * n, n, s0);
        }
    }
    auto src = std::make_unique<AnalogInput>(r.path(), dims, data->data(), data, o, plan.keep);
    src->set_labels(read_labels(r, src->num_samples()));
    return src;
}

std::unique_ptr<InputSource> open_analog(const h5::Reader& r, const InputOptions& o) {
    auto inf = r.info("/data");
    if (inf.kind != h5::Kind::floating && inf.kind != h5::Kind::integer)
        r.fail("/data", "expected a numeric (float32) dataset");
    if (inf.dims.size() < 2)
        r.fail("/data", "expected [samples, ...shape], got " + shape_str(inf.dims));
    check_dims(r.path(), "/data", inf.dims, 4);
    if (o.parts > 1) return open_analog_part(r, inf.dims, o);
    auto data = std::make_shared<std::vector<float>>(r.read_floats("/data"));
    auto src = std::make_unique<AnalogInput>(r.path(), inf.dims, data->data(), data, o);
    src->set_labels(read_labels(r, src->num_samples()));
    return src;
}

}  // namespace

std::unique_ptr<InputSource> open_input(const std::string& path, const InputOptions& o) {
    h5::Reader r(path);
    const bool sp = r.exists("/spikes"), an = r.exists("/data");
    if (sp && an) r.fail("", "has both /spikes and /data: keep one");
    if (sp) return open_spikes(r, o);
    if (an) return open_analog(r, o);
    r.fail("", "no /spikes or /data dataset");
}

std::unique_ptr<InputSource> make_spike_input(const std::int8_t* data, const Shape& dims,
                                              std::vector<std::int64_t> labels,
                                              const std::string& name) {
    auto src =
        std::make_unique<SpikeInput>(name, dims, [&](std::int64_t first, std::int64_t count) {
            const std::int64_t row = dims[1] * numel(Shape(dims.begin() + 2, dims.end()));
            return std::vector<std::int8_t>(data + first * row, data + (first + count) * row);
        });
    if (!labels.empty())
        check_labels(name, {static_cast<std::int64_t>(labels.size())}, labels, src->num_samples());
    src->set_labels(std::move(labels));
    return src;
}

std::unique_ptr<InputSource> make_analog_input(const float* data, const Shape& dims,
                                               std::shared_ptr<const void> owner,
                                               std::vector<std::int64_t> labels,
                                               const InputOptions& o, const std::string& name) {
    auto src = std::make_unique<AnalogInput>(name, dims, data, std::move(owner), o);
    if (!labels.empty())
        check_labels(name, {static_cast<std::int64_t>(labels.size())}, labels, src->num_samples());
    src->set_labels(std::move(labels));
    return src;
}

std::uint64_t encode_file(const std::string& in_path, const std::string& out_path, Encoding enc,
                          std::int64_t T, std::uint64_t seed) {
    if (T <= 0) throw OptionError("timesteps", "must be positive");
    if (T > 1000000) throw OptionError("timesteps", "absurdly large");
    InputOptions o{enc, T};
    auto src = open_input(in_path, o);
    if (src->fixed_timesteps() > 0) throw InputError(in_path, "/spikes", "is already a spike file");
    if (enc == Encoding::direct)
        throw OptionError("encoding", "direct coding is analog: choose poisson or latency");
    const std::int64_t S = src->num_samples(), n = numel(src->sample_shape());
    if (S * T * n > kMaxInputBytes) throw OptionError("timesteps", "output would exceed 8 GiB");
    std::vector<std::int8_t> out(static_cast<std::size_t>(S * T * n), 0);
    std::uint64_t spikes = 0;
    Activity a;
    a.resize(n);
    OpCounts ops;
    for (std::int64_t s = 0; s < S; ++s)
        for (std::int64_t t = 0; t < T; ++t) {
            a.clear();
            src->fill(s, t, seed, a, ops);
            for (auto i : a.active) {
                out[static_cast<std::size_t>((s * T + t) * n + i)] =
                    static_cast<std::int8_t>(a.values[i]);
                ++spikes;
            }
        }
    Shape dims{S, T};
    auto sh = src->sample_shape();
    dims.insert(dims.end(), sh.begin(), sh.end());
    h5::write_atomically(out_path, [&](const std::string& tmp) {
        h5::Writer w(tmp);
        w.write("/spikes", out, dims);
        w.attr("/spikes", "encoding", std::string(encoding_name(enc)));
        w.attr("/spikes", "seed", static_cast<std::int64_t>(seed));
        w.attr("/spikes", "source", in_path);
        if (!src->labels().empty()) w.write("/labels", src->labels(), {S});
        w.close();
    });
    return spikes;
}

}  // namespace ternion
