// The hot loops of the ANN reference paths (the packed GEMM's register tiles and the batched FFT
// convolution), compiled once per x86-64 level like sim/simd's kernels (ann_levels.cpp is built
// three times) and chosen with the same level: simd::level(), the CPU's best or TERNION_ISA's.
// The GEMM sums each output as one ascending FMA chain at v3 and v4, and the FFT uses the same
// eight-float vectors, operations and order at every level (no contraction), so v3 and v4 give
// identical results; v2 has no FMA, and its callers take Eigen's product instead.
#pragma once
#include <cstdint>

namespace ternion::ann {

// C[m, n] = A[m, k] B (+ bias[n]), B packed as panels of 64 columns ([n/64][k][64], 64-byte
// aligned). Element (i, p) of A is at A[i * ar + (p / 16) * ag + p % 16], element (i, j) of C
// at C[i * cr + (j / 16) * cg + j % 16] (Layout in ann_gemm.hpp).
struct GemmArgs {
    const float* A;
    std::int64_t ar, ag, m, k, n;
    const float* panels;
    const float* bias;  // may be null
    float* C;
    std::int64_t cr, cg;
    bool stream;  // streaming stores for whole 64-byte lines of C (C 64-byte aligned)
};

struct LevelKernels {
    // Null where the level has no FMA (v2).
    void (*gemm)(const GemmArgs& g);
    // ChannelConvolver's transform: forward radix-4 FFT of the 2L eight-float vectors at x (sample
    // j: real lanes at vector 2j, imaginary at 2j + 1; 32-byte aligned), product with the kernel
    // spectrum zr + i zi (in the recursion's order), inverse. T: exp(-2 pi i k / L), k < L, as
    // (re, im) float pairs.
    void (*convolve)(float* x, std::int64_t L, const float* T, const float* zr, const float* zi);
    // x[j] := exp(x[j] - max_j x[j]) for j < n (a softmax row's numerators); the same floats at
    // every level.
    void (*exp_shifted)(float* x, std::int64_t n);
};

// The kernels of the level in use.
const LevelKernels& level_kernels();

}  // namespace ternion::ann
