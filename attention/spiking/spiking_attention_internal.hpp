// Helpers shared by the spiking attention variants' files (attention/spiking/ssa.cpp, bsa.cpp) and
// nothing else: kept out of the public node header.
#pragma once
#include <cstddef>
#include <cstdint>

namespace ternion::spiking_detail {

inline std::size_t sz(std::int64_t n) {
    return static_cast<std::size_t>(n);
}

// Dense reference of one head's score matrix S = Q_h K_h^T over token-major [N, D] spike
// tensors (head channels c0 .. c0 + dh): shared by SSA's and BSA's dense engines.
template <class T>
void dense_scores(const T* q, const T* k, std::int64_t N, std::int64_t D, std::int64_t c0,
                  std::int64_t dh, std::int32_t* S) {
    for (std::int64_t i = 0; i < N; ++i)
        for (std::int64_t j = 0; j < N; ++j) {
            std::int32_t a = 0;
            for (std::int64_t c = 0; c < dh; ++c)
                a += static_cast<std::int32_t>(q[sz(i * D + c0 + c)] * k[sz(j * D + c0 + c)]);
            S[i * N + j] = a;
        }
}

}  // namespace ternion::spiking_detail
