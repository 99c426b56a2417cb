// What every input format checks alike: labels, sizes, the samples a process holds.
#include "models/inputs/sources.hpp"

#include <algorithm>

#include "sim/core/error.hpp"
#include "sim/io/h5io.hpp"

namespace ternion {

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

bool ends_with(const std::string& s, const std::string& e) {
    return s.size() >= e.size() && s.compare(s.size() - e.size(), e.size(), e) == 0;
}

}  // namespace ternion
