// Single-precision matrix product for the ANN projections, C = A B (+ bias), with B a weight
// matrix packed once at load time. Register-blocked tiles, compiled per x86-64 level
// (ann_levels.hpp): on AVX-512 6 rows x 64 columns of C in 24 vector accumulators, on AVX2 6 x 16
// in 12, B streamed from L2 in panels of 64 columns. Without FMA (x86-64-v2) callers use Eigen.
// Each element of C is a plain ascending FMA chain over k plus the bias, so row splits across
// threads never change results, and AVX2 and AVX-512 give the same bits.
#pragma once
#include <cstdint>
#include <memory>

#include "sim/kernels/token_kernel.hpp"  // AlignedFloats

namespace ternion::ann {

// B [k, n] row-major, stored as panels of 64 columns: panel p holds rows 0..k-1 of columns
// 64p..64p+63 contiguously (zero-padded past n), so the kernel reads one 256-byte row of a
// panel per step of k.
class PackedMatrix {
  public:
    PackedMatrix(const float* B, std::int64_t ldb, std::int64_t k, std::int64_t n);
    std::int64_t k() const { return k_; }
    std::int64_t n() const { return n_; }
    const float* panel(std::int64_t p) const { return data_.data() + p * k_ * 64; }

  private:
    std::int64_t k_, n_;
    AlignedFloats data_;
};

// Whether gemm_packed has a fast kernel at the level in use (v3 and v4: FMA).
bool packed_gemm_available();

// Where element (i, j) of a matrix lives: data[i * row + (j / 16) * group + j % 16]. Row-major
// with leading dimension ld is {ld, 16}; column groups of 16 ([cols / 16][rows][16], a
// GroupMatrix with group stride g) are {16, g}.
struct Layout {
    std::int64_t row, group;
    static Layout rows(std::int64_t ld) { return {ld, 16}; }
    std::int64_t at(std::int64_t i, std::int64_t j) const {
        return i * row + (j / 16) * group + j % 16;
    }
};

// C[m, n] = A[m, k] B (+ bias[n], added after the sum when not null), A and C in the given
// layouts (full 16-float groups of C must be 64-byte aligned for streaming stores to be used).
void gemm_packed(const float* A, Layout la, std::int64_t m, const PackedMatrix& B,
                 const float* bias, float* C, Layout lc);

// Row-major A and C with leading dimensions lda and ldc.
inline void gemm_packed(const float* A, std::int64_t lda, std::int64_t m, const PackedMatrix& B,
                        const float* bias, float* C, std::int64_t ldc) {
    gemm_packed(A, Layout::rows(lda), m, B, bias, C, Layout::rows(ldc));
}

}  // namespace ternion::ann
