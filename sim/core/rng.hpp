// Counter-based random numbers keyed by (seed, sample, step, index): the value drawn for a
// neuron never depends on which thread computes it or in which order, which is what makes
// spikes identical for any --threads.
#pragma once
#include <cstddef>
#include <cstdint>

namespace ternion {

// SplitMix64 finaliser: a bijective 64-bit mix with good avalanche.
inline std::uint64_t mix64(std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

inline std::uint64_t counter_hash(std::uint64_t seed, std::uint64_t sample, std::uint64_t step,
                                  std::uint64_t index) {
    std::uint64_t h = mix64(seed ^ 0x7465726e696f6e00ull);  // "ternion"
    h = mix64(h ^ sample);
    h = mix64(h ^ step);
    return mix64(h ^ index);
}

// The seed input k of a model with several Input nodes encodes with: the run's own seed for
// the first (so single-input runs keep their numbers), a mix of (seed, k) for the others, so
// that the key is in effect (seed, input, sample, step, element).
inline std::uint64_t input_seed(std::uint64_t seed, std::size_t k) {
    if (k == 0) return seed;
    return mix64(mix64(seed ^ 0x696e707574730000ull) ^ static_cast<std::uint64_t>(k));  // "inputs"
}

// Uniform double in [0, 1) with 53 random bits.
inline double counter_uniform(std::uint64_t seed, std::uint64_t sample, std::uint64_t step,
                              std::uint64_t index) {
    return static_cast<double>(counter_hash(seed, sample, step, index) >> 11) * 0x1.0p-53;
}

}  // namespace ternion
