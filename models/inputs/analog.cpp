// Analog data encoded per step: direct current, Poisson or latency spikes.
#include <algorithm>
#include <cmath>

#include "models/inputs/sources.hpp"
#include "sim/core/rng.hpp"

namespace ternion {

namespace {

class AnalogInput final : public FileSource {
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
    std::string describe() const override { return path_; }
    bool same_every_step() const override { return enc_ == Encoding::direct; }
    std::string label() const override { return std::string(encoding_name(enc_)) + " encoding"; }
    std::string encoding_word() const override { return encoding_name(enc_); }
    std::string dataset() const override { return field_; }

  private:
    std::string path_, field_;
    Encoding enc_;
    std::int64_t T_, samples_ = 0, n_ = 0;
    Shard held_;
    Shape shape_;
    std::shared_ptr<const void> owner_;
    const float* data_ = nullptr;
};

}  // namespace

std::unique_ptr<FileSource> encode_values(std::string name, std::string field, const Shape& dims,
                                          const float* data, std::shared_ptr<const void> owner,
                                          const InputOptions& o, std::optional<Shard> held) {
    return std::make_unique<AnalogInput>(std::move(name), std::move(field), dims, data,
                                         std::move(owner), o, held);
}

}  // namespace ternion
