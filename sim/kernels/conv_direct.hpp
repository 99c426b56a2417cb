// Direct convolution for dense input maps (stride 1, dilation 1): the output is computed in
// register tiles of output channels x positions over a zero-padded copy of the input,
// multiplying every tap instead of scattering each non-zero input. Each output still sums its
// inputs in (input channel, kernel row, kernel column) order; with inputs in {-1, 0, 1} every
// product is exact (a fused multiply-add), and any other input is multiplied, rounded, then
// added, as the scatter does, so the result equals the event scatter bit for bit: ConvNode
// picks whichever is cheaper for the step's density (spikes, or the integer sums of a residual
// stream).
#pragma once
#include <cstdint>
#include <vector>

namespace ternion::synaptic {

struct DirectConvShape {
    std::int64_t groups = 1, cin_g = 1, cout_g = 1;  // channels per group
    std::int64_t H = 1, W = 1, kh = 1, kw = 1, ph = 0, pw = 0, OH = 1, OW = 1;
};

class DirectConv {
  public:
    // A register tile is a few output channels by a few vectors of output positions, as many
    // lanes as the CPU's vector registers hold (sim/simd: 16 with AVX-512, 8 with AVX2, 4 with
    // SSE). Where each output row is a whole number of vectors, a vector is outputs of one row
    // and no lane is spare; otherwise the vectors run along the padded rows (padding columns
    // included). Of the two tile shapes the level offers (AVX-512: 8 channels x 2 vectors or
    // 4 x 5) the one with less spare work is taken (8x8 maps: 80 padded positions, exactly 5
    // vectors of 16); a depthwise convolution (one output channel a group) takes the level's
    // single-channel shape (AVX-512: 1 x 12).
    // w: [groups * cout_g][cin_g][kh][kw], as PyTorch stores it.
    void build(const DirectConvShape& s, const std::vector<float>& w);
    // x: [groups * cin_g][H][W], `ternary` when every value is -1, 0 or 1;
    // y: [groups * cout_g][OH][OW].
    void run(const float* x, bool ternary, float* y, std::vector<float>& scratch) const;
    // The multiply-adds of one run (tiles x channels x taps x lanes), to weigh against a scatter.
    std::uint64_t lanes() const {
        return static_cast<std::uint64_t>(s_.groups * blocks_ * co_ * s_.cin_g * taps_ * slots_ *
                                          lanes_);
    }

  private:
    void plan_vectors(bool row_vectors);
    void pad(const float* x, float* xp) const;
    void store(const float* out, std::int64_t co0, std::int64_t co1, std::int64_t v0,
               float* y) const;

    DirectConvShape s_;
    std::int64_t Hp_ = 1, Wp_ = 1, plane_ = 1, blocks_ = 1, taps_ = 1;
    std::int64_t lanes_ = 16;            // floats per vector
    int shape_ = 0;                      // which of the level's tile shapes
    std::int64_t co_ = 8, nv_ = 2;       // the tile: output channels x vectors
    std::int64_t slots_ = 0;             // vectors per map, a whole number of tiles
    std::vector<std::int64_t> base_;     // per vector: its first lane's offset in a padded plane
    std::vector<std::int64_t> out_pos_;  // per vector lane: oy * OW + ox, or -1 (spare)
    std::vector<float> wp_;  // per group and block of co_ channels: [cin_g][kh][kw][co_]
};

}  // namespace ternion::synaptic
