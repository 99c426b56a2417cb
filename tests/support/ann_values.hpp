// Test helper for the ANN attention tests: seeded random values and row-major matrix views.
#pragma once
#include <Eigen/Dense>
#include <cstdint>
#include <random>
#include <vector>

#include "attention/ann/ann_attention.hpp"

namespace ternion::test {

// n values drawn from N(0, scale^2) by a generator seeded with `seed`.
inline std::vector<float> randv(std::size_t n, unsigned seed, float scale = 1.0f) {
    std::mt19937 g(seed);
    std::normal_distribution<float> d(0.0f, scale);
    std::vector<float> v(n);
    for (auto& x : v) x = d(g);
    return v;
}

// v as an r x c row-major matrix (a copy).
inline ann::MatR mr(const std::vector<float>& v, std::int64_t r, std::int64_t c) {
    return Eigen::Map<const ann::MatR>(v.data(), r, c);
}

}  // namespace ternion::test
