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
};

std::unique_ptr<InputSource> open_input(const std::string& path, const InputOptions& opts);

// Writes analog data as a spike file (`ternion encode`). Returns the number of spikes.
std::uint64_t encode_file(const std::string& in_path, const std::string& out_path, Encoding enc,
                          std::int64_t timesteps, std::uint64_t seed);

}  // namespace ternion
