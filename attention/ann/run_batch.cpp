#include "attention/ann/run_batch.hpp"

#include <cmath>

#include "sim/core/error.hpp"
#include "sim/core/memory.hpp"

namespace ternion::ann {

void check_input_shape(const Attention& att, const std::string& kind, const Shape& dims,
                       const std::string& origin, const std::string& field) {
    const auto fail = [&](const std::string& what) { throw InputError(origin, field, what); };
    if (dims.size() != 3) fail("expected shape [batch, N, D], got " + shape_str(dims));
    const std::int64_t batch = dims[0], n = dims[1], dim = dims[2];
    if (batch < 1 || n < 1) fail("empty: shape " + shape_str(dims));
    if (dim != att.in_dim())
        fail("has D = " + std::to_string(dim) + " but the " + kind +
             " weights expect D = " + std::to_string(att.in_dim()));
    if (declared_numel(dims) > kMaxElements ||
        declared_numel({batch, n, att.out_dim()}) > kMaxElements)
        fail("too large: " + shape_str(dims));
    if (n > (std::int64_t{1} << 24)) fail("too many tokens");
}

void check_times_shape(const Shape& t_dims, std::int64_t batch, std::int64_t n,
                       const std::string& origin, const std::string& field) {
    if (t_dims != Shape{batch, n})
        throw InputError(origin, field,
                         "expected shape " + shape_str({batch, n}) + ", got " + shape_str(t_dims));
}

void check_times_finite(const float* t, std::int64_t count, const std::string& origin,
                        const std::string& field) {
    for (std::int64_t i = 0; i < count; ++i)
        if (!std::isfinite(t[i])) throw InputError(origin, field, "contains NaN or Inf");
}

OpCounts run_batch(const Attention& att, std::int64_t batch, std::int64_t n,
                   const std::function<void(std::int64_t, float*)>& read, const float* t, float* y,
                   const std::string& origin, const std::string& field) {
    // Huge-page backed (sim/core/memory.hpp): the attention walks it a row or group at a time.
    LargeVector<float> x(static_cast<std::size_t>(n * att.in_dim()));
    OpCounts ops;
    for (std::int64_t b = 0; b < batch; ++b) {
        read(b, x.data());  // a sample at a time bounds memory
        for (float v : x)
            if (!std::isfinite(v))
                throw InputError(origin, field,
                                 "contains NaN or Inf (sample " + std::to_string(b) + ")");
        att.forward(x.data(), t ? t + b * n : nullptr, n, y + b * n * att.out_dim(), &ops, true);
    }
    return ops;
}

}  // namespace ternion::ann
