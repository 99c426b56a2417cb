// Tensor shapes (without the batch axis) and small helpers shared by every module.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ternion {

using Shape = std::vector<std::int64_t>;

inline std::int64_t numel(const Shape& s) {
    std::int64_t n = 1;
    for (auto d : s) n *= d;
    return n;
}

inline std::string shape_str(const Shape& s) {
    std::string r = "[";
    for (std::size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
    return r + "]";
}

// Largest number of elements any single tensor may declare. Files claiming more are refused
// before anything is allocated (2^31 floats = 8 GiB).
inline constexpr std::int64_t kMaxElements = std::int64_t{1} << 31;

// numel of a shape read from a file, which may be absurd: any product above kMaxElements (or a
// negative dimension) gives kMaxElements + 1, without overflow.
inline std::int64_t declared_numel(const Shape& s) {
    std::int64_t n = 1;
    for (auto d : s) {
        if (d < 0 || (d > 0 && n > kMaxElements / d)) return kMaxElements + 1;
        n *= d;
    }
    return n;
}

}  // namespace ternion
