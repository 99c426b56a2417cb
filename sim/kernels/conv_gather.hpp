// Event convolution of binary spike maps, gathered per output: for one output row, the
// non-zero inputs are sorted into per-position lists of weight rows (input channel, kernel row,
// kernel column, ascending), and each position then sums its list with up to 12 vectors of
// output channels held in registers (sim/simd: 192 channels with AVX-512). The scatter it
// replaces loads and stores every output channel's running sum once per input tap; here a tap
// costs one load and one add per vector of channels. Each
// output sums its inputs in ascending input order from zero, as the scatter, the direct tile
// and the dense gather do, so the result is the same bit for bit.
#pragma once
#include <cstdint>
#include <vector>

#include "sim/kernels/token_kernel.hpp"

namespace ternion::synaptic {

// Stride 1, dilation 1, one group.
struct GatherConvShape {
    std::int64_t cin = 1, cout = 1, H = 1, W = 1, kh = 1, kw = 1, ph = 0, pw = 0, OH = 1, OW = 1;
};

class GatherConv {
  public:
    struct Scratch {
        std::vector<std::uint32_t> row_start;  // per input row: its first event
        std::vector<std::uint32_t> fill;       // per output column: entries so far
        std::vector<std::uint32_t> entries;    // per output column: weight rows, ascending
        AlignedFloats sums;                    // one output row's sums, [OW][cout rounded to 16]
    };
    // w: [cout][cin][kh][kw], as PyTorch stores it.
    void build(const GatherConvShape& s, const std::vector<float>& w);
    // active: the ascending indices of the non-zero inputs of x [cin][H][W], every one of them
    // equal to +1. Writes all of y [cout][OH][OW]: each sum, plus bias[co] after it when bias
    // is not null.
    void run(const std::uint32_t* active, std::size_t n, const float* bias, float* y,
             Scratch& sc) const;

  private:
    void list_row(const std::uint32_t* active, std::int64_t oy, Scratch& sc) const;
    void sum_row(Scratch& sc) const;
    void store_row(const Scratch& sc, std::int64_t oy, const float* bias, float* y) const;

    GatherConvShape s_;
    std::int64_t taps_ = 1, ld_ = 16;  // ld_: output channels rounded up to 16
    AlignedFloats w_;                  // [cin * taps][ld_], zero-padded
};

}  // namespace ternion::synaptic
