// What every front end does to run an ANN reference attention on a batch (`ternion attention`,
// Python's ternion.attention): the checks of the input's shape, times and values, and the loop
// over samples, so that the CLI and Python refuse the same inputs with the same messages.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "attention/ann/ann_attention.hpp"
#include "sim/core/shape.hpp"

namespace ternion::ann {

// Refuses an input of shape `dims` that `att` cannot take: [batch, N, D] with batch, N >= 1,
// D the weights' width, within kMaxElements (input and output) and 2^24 tokens. Errors are
// InputError(origin, field, ...).
void check_input_shape(const Attention& att, const std::string& kind, const Shape& dims,
                       const std::string& origin, const std::string& field);
// Refuses time stamps (time kinds) whose shape is not [batch, N], or, given them, not all finite.
void check_times_shape(const Shape& t_dims, std::int64_t batch, std::int64_t n,
                       const std::string& origin, const std::string& field);
void check_times_finite(const float* t, std::int64_t count, const std::string& origin,
                        const std::string& field);

// Runs samples 0 .. batch-1: read(b, x) writes sample b ([N][D]) into x, whose every value must
// be finite (else InputError(origin, field, ... "sample b")); times t + b*N (time kinds, or
// null); the output to y + b*N*out_dim. Returns the operations of all samples.
OpCounts run_batch(const Attention& att, std::int64_t batch, std::int64_t n,
                   const std::function<void(std::int64_t, float*)>& read, const float* t, float* y,
                   const std::string& origin, const std::string& field);

}  // namespace ternion::ann
