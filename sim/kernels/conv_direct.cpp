#include "sim/kernels/conv_direct.hpp"

#include "sim/simd/simd.hpp"

#include <algorithm>
#include <cstring>

namespace ternion::synaptic {

void DirectConv::build(const DirectConvShape& s, const std::vector<float>& w) {
    s_ = s;
    // Output (oy, ox) reads padded rows oy .. oy + kh - 1 and columns ox .. ox + kw - 1.
    Hp_ = std::max(s.H + s.ph, s.OH + s.kh - 1);
    Wp_ = std::max(s.W + s.pw, s.OW + s.kw - 1);
    plane_ = Hp_ * Wp_;
    taps_ = s.kh * s.kw;
    const simd::Table& k = simd::kernels();
    lanes_ = k.lanes;
    const std::int64_t q = s.OH * Wp_;
    const bool rows = s.OW % lanes_ == 0;
    // The lanes a shape computes: channel blocks x the vectors that cover the map (its q padded
    // positions, or its rows of whole vectors) in whole tiles.
    const auto work = [&](simd::TileShape t) {
        const std::int64_t used = rows ? s.OH * (s.OW / lanes_) : (q + lanes_ - 1) / lanes_;
        return (s.cout_g + t.co - 1) / t.co * t.co * ((used + t.nv - 1) / t.nv * t.nv);
    };
    // A depthwise convolution (one output channel a group) would leave all but one channel of
    // the other shapes' tiles idle: it takes the single-channel shape.
    if (s.cout_g == 1)
        shape_ = 2;
    else
        shape_ = work(k.direct_shapes[1]) < work(k.direct_shapes[0]) ? 1 : 0;
    co_ = k.direct_shapes[shape_].co;
    nv_ = k.direct_shapes[shape_].nv;
    plan_vectors(rows);
    blocks_ = (s.cout_g + co_ - 1) / co_;
    // Channels past cout_g in the last block get zero weights; their outputs are dropped.
    wp_.assign(static_cast<std::size_t>(s.groups * blocks_ * s.cin_g * taps_ * co_), 0.0f);
    for (std::int64_t g = 0; g < s.groups; ++g)
        for (std::int64_t co = 0; co < s.cout_g; ++co)
            for (std::int64_t cl = 0; cl < s.cin_g; ++cl)
                for (std::int64_t t = 0; t < taps_; ++t)
                    wp_[static_cast<std::size_t>(
                        (((g * blocks_ + co / co_) * s.cin_g + cl) * taps_ + t) * co_ + co % co_)] =
                        w[static_cast<std::size_t>(((g * s.cout_g + co) * s.cin_g + cl) * taps_ +
                                                   t)];
}

// Where each vector reads and what each of its lanes outputs: outputs of one row, or
// consecutive padded positions (oy * Wp + ox; the columns past OW are spare lanes).
void DirectConv::plan_vectors(bool row_vectors) {
    const std::int64_t per_row = s_.OW / lanes_;
    const std::int64_t used = row_vectors ? s_.OH * per_row : (s_.OH * Wp_ + lanes_ - 1) / lanes_;
    slots_ = (used + nv_ - 1) / nv_ * nv_;
    base_.assign(static_cast<std::size_t>(slots_), 0);
    out_pos_.assign(static_cast<std::size_t>(slots_ * lanes_), -1);
    for (std::int64_t v = 0; v < used; ++v) {
        const std::int64_t b =
            row_vectors ? (v / per_row) * Wp_ + (v % per_row) * lanes_ : v * lanes_;
        base_[static_cast<std::size_t>(v)] = b;
        for (std::int64_t l = 0; l < lanes_; ++l) {
            const std::int64_t oy = (b + l) / Wp_, ox = (b + l) % Wp_;
            if (oy < s_.OH && ox < s_.OW)
                out_pos_[static_cast<std::size_t>(v * lanes_ + l)] = oy * s_.OW + ox;
        }
    }
}

void DirectConv::run(const float* x, bool ternary, float* y, std::vector<float>& scratch) const {
    // The padded input, with room for the last vector's reads past the final plane.
    const std::int64_t xn = s_.groups * s_.cin_g * plane_ + lanes_ + s_.kh * Wp_ + s_.kw;
    scratch.resize(static_cast<std::size_t>(xn + co_ * nv_ * lanes_));
    float* xp = scratch.data();
    float* out = xp + xn;
    pad(x, xp);
    std::fill(xp + s_.groups * s_.cin_g * plane_, xp + xn, 0.0f);
    const std::int64_t wblock = s_.cin_g * taps_ * co_;
    const auto tile = simd::kernels().direct_tile;
    simd::DirectTileArgs a{nullptr, nullptr, nullptr, s_.cin_g, plane_,
                           Wp_,     s_.kh,   s_.kw,   out,      ternary};
    for (std::int64_t g = 0; g < s_.groups; ++g)
        for (std::int64_t b = 0; b < blocks_; ++b)
            for (std::int64_t v0 = 0; v0 < slots_; v0 += nv_) {
                a.xg = xp + g * s_.cin_g * plane_;
                a.wb = wp_.data() + (g * blocks_ + b) * wblock;
                a.base = base_.data() + v0;
                tile(shape_, a);
                store(out, g * s_.cout_g + b * co_,
                      std::min(co_, s_.cout_g - b * co_) + g * s_.cout_g + b * co_, v0, y);
            }
}

// Each channel's rows into the middle of its zeroed padded plane.
void DirectConv::pad(const float* x, float* xp) const {
    const std::int64_t cin = s_.groups * s_.cin_g;
    std::fill(xp, xp + cin * plane_, 0.0f);
    for (std::int64_t c = 0; c < cin; ++c)
        for (std::int64_t iy = 0; iy < s_.H; ++iy)
            std::memcpy(xp + c * plane_ + (iy + s_.ph) * Wp_ + s_.pw, x + (c * s_.H + iy) * s_.W,
                        static_cast<std::size_t>(s_.W) * sizeof(float));
}

// The tile's real outputs (channels [co0, co1), lanes that are not spare) into y.
void DirectConv::store(const float* out, std::int64_t co0, std::int64_t co1, std::int64_t v0,
                       float* y) const {
    const std::int64_t plane = s_.OH * s_.OW, lanes = nv_ * lanes_;
    const std::int64_t* pos = out_pos_.data() + v0 * lanes_;
    for (std::int64_t q = 0; q < lanes; ++q) {
        if (pos[q] < 0) continue;
        for (std::int64_t co = co0; co < co1; ++co)
            y[co * plane + pos[q]] = out[(co - co0) * lanes + q];
    }
}

}  // namespace ternion::synaptic
