// The caller's arrays (C++ API, Python) as inputs, checked as a file would be.
#include "models/inputs/inputs.hpp"
#include "models/inputs/sources.hpp"

namespace ternion {

namespace {

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

}  // namespace

std::unique_ptr<InputSource> make_spike_input(const std::int8_t* data, const Shape& dims,
                                              std::vector<std::int64_t> labels,
                                              const std::string& name, const std::string& field) {
    ArrayRows<std::int8_t> rows(data, dims, name, field);
    InputOptions o;
    o.layout = Layout::samples_first;
    auto src = replay_rows(rows, name, o);
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
    auto src = replay_rows(rows, name, o, true);
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
    auto src = encode_values(name, field, dims, data, std::move(owner), o);
    if (!labels.empty())
        check_labels(name, {static_cast<std::int64_t>(labels.size())}, labels, src->num_samples());
    src->set_labels(std::move(labels));
    return src;
}

}  // namespace ternion
