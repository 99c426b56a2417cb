// Input files: spike tensors (`/spikes` int8 [samples, T, ...] in {-1,0,1}) replayed as events,
// or analog data (`/data` float32 [samples, ...]) encoded per step as direct current, Poisson
// (Bernoulli per step) or latency spikes, with optional `/labels` int64 [samples].
// Layout and encodings are documented in docs/inputs.md.
#pragma once
#include <memory>
#include <string>

#include "sim/engine.hpp"

namespace ternion {

enum class Encoding { direct, poisson, latency };
Encoding parse_encoding(const std::string& s);  // throws OptionError("encoding")
const char* encoding_name(Encoding e);

struct InputOptions {
    Encoding encoding = Encoding::direct;
    std::int64_t timesteps = 0;  // needed by latency coding
    // A file read by one process of a run split across `parts` (sim/shard.hpp): of the run's
    // samples [first_sample, first_sample + samples) (samples -1: to the end) it holds only its
    // shard; of the file's other samples it reads and checks its share. num_samples() stays the
    // file's; fill() takes global indices of held samples. parts 1: every sample is held.
    int part = 0, parts = 1;
    std::int64_t first_sample = 0, samples = -1;
};

std::unique_ptr<InputSource> open_input(const std::string& path, const InputOptions& opts);

// The caller's arrays as an input (the C++ API, the Python bindings), checked as a file would be;
// errors name `name` as the file. Spikes: int8 [samples, T, ...shape] in {-1, 0, 1}, copied
// into event lists. Analog: float32 [samples, ...shape], read in place while `owner` lives.
// `labels`: empty, or one class per sample.
std::unique_ptr<InputSource> make_spike_input(const std::int8_t* data, const Shape& dims,
                                              std::vector<std::int64_t> labels,
                                              const std::string& name);
std::unique_ptr<InputSource> make_analog_input(const float* data, const Shape& dims,
                                               std::shared_ptr<const void> owner,
                                               std::vector<std::int64_t> labels,
                                               const InputOptions& opts, const std::string& name);

// Writes analog data as a spike file (`ternion encode`). Returns the number of spikes.
std::uint64_t encode_file(const std::string& in_path, const std::string& out_path, Encoding enc,
                          std::int64_t timesteps, std::uint64_t seed);

}  // namespace ternion
