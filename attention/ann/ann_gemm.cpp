#include "attention/ann/ann_gemm.hpp"

#include <algorithm>
#include <cmath>

#include "attention/ann/ann_levels.hpp"
#include "sim/simd/simd.hpp"

namespace ternion::ann {

// Each level's kernels, from attention/ann/ann_levels.cpp compiled for that level.
namespace v2 {
const LevelKernels& kernels();
}
#if TERNION_ANN_X86
namespace v3 {
const LevelKernels& kernels();
}
namespace v4 {
const LevelKernels& kernels();
}
#endif

namespace {
constexpr std::int64_t kStreamBytes = std::int64_t{8} << 20;  // C at least this large
}  // namespace

PackedMatrix::PackedMatrix(const float* B, std::int64_t ldb, std::int64_t k, std::int64_t n)
    : k_(k), n_(n), data_(pack_panels64(B, ldb, k, n)) {}

bool packed_gemm_available() {
    return level_kernels().gemm != nullptr;
}

void gemm_packed(const float* A, Layout la, std::int64_t m, const PackedMatrix& B,
                 const float* bias, float* C, Layout lc) {
    const std::int64_t n = B.n(), k = B.k();
    if (const auto gemm = level_kernels().gemm) {
        // A C larger than the caches is written with streaming stores where a store fills a
        // whole line: reading each line before overwriting it was wasted memory traffic.
        const bool stream = m * n * static_cast<std::int64_t>(sizeof(float)) >= kStreamBytes &&
                            reinterpret_cast<std::uintptr_t>(C) % 64 == 0 && lc.row % 16 == 0 &&
                            lc.group % 16 == 0;
        gemm({A, la.row, la.group, m, k, n, B.panel(0), bias, C, lc.row, lc.group, stream});
        return;
    }
    // Without FMA (v2): the same sums one element at a time, for the tests (callers use Eigen
    // there, packed_gemm_available() being false).
    for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
            const float* bp = B.panel(j / 64) + j % 64;
            float s = 0.0f;
            for (std::int64_t p = 0; p < k; ++p) s = std::fma(A[la.at(i, p)], bp[p * 64], s);
            C[lc.at(i, j)] = bias ? s + bias[j] : s;
        }
}

const LevelKernels& level_kernels() {
    static const LevelKernels* const k = [] {
        switch (simd::level()) {
#if TERNION_ANN_X86
            case simd::Level::v4:
                return &v4::kernels();
            case simd::Level::v3:
                return &v3::kernels();
#endif
            default:
                return &v2::kernels();
        }
    }();
    return *k;
}

}  // namespace ternion::ann
