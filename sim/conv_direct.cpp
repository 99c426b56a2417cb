#include "sim/conv_direct.hpp"

#include <algorithm>
#include <cstring>

namespace ternion::synaptic {

namespace {

// Sixteen floats: one AVX-512 register, two AVX ones, four SSE ones (GCC's vector extension
// lowers it to what -march allows).
using vf = float __attribute__((vector_size(64)));
static_assert(sizeof(vf) == DirectConv::kLanes * sizeof(float));

// Through a pointer, not returned by value: a function returning a 64-byte vector changes the
// calling convention below AVX-512 (GCC's -Wpsabi).
inline void load(vf& v, const float* p) {
    std::memcpy(&v, p, sizeof v);
}

}  // namespace

void DirectConv::build(const DirectConvShape& s, const std::vector<float>& w) {
    s_ = s;
    // Output (oy, ox) reads padded rows oy .. oy + kh - 1 and columns ox .. ox + kw - 1.
    Hp_ = std::max(s.H + s.ph, s.OH + s.kh - 1);
    Wp_ = std::max(s.W + s.pw, s.OW + s.kw - 1);
    plane_ = Hp_ * Wp_;
    taps_ = s.kh * s.kw;
    const std::int64_t q = s.OH * Wp_;
    const bool rows = s.OW % kLanes == 0;
    // The vectors needed to cover the q padded positions in whole tiles of nv vectors.
    const auto vectors = [q](std::int64_t nv) {
        return (q + nv * kLanes - 1) / (nv * kLanes) * nv;
    };
    const bool narrow = !rows && vectors(5) < vectors(2);
    co_ = narrow ? 4 : 8;
    nv_ = narrow ? 5 : 2;
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

// Where each vector reads and what each of its lanes outputs: 16 outputs of one row, or 16
// consecutive padded positions (oy * Wp + ox; the columns past OW are spare lanes).
void DirectConv::plan_vectors(bool row_vectors) {
    const std::int64_t per_row = s_.OW / kLanes;
    const std::int64_t used = row_vectors ? s_.OH * per_row : (s_.OH * Wp_ + kLanes - 1) / kLanes;
    slots_ = (used + nv_ - 1) / nv_ * nv_;
    base_.assign(static_cast<std::size_t>(slots_), 0);
    out_pos_.assign(static_cast<std::size_t>(slots_ * kLanes), -1);
    for (std::int64_t v = 0; v < used; ++v) {
        const std::int64_t b =
            row_vectors ? (v / per_row) * Wp_ + (v % per_row) * kLanes : v * kLanes;
        base_[static_cast<std::size_t>(v)] = b;
        for (std::int64_t l = 0; l < kLanes; ++l) {
            const std::int64_t oy = (b + l) / Wp_, ox = (b + l) % Wp_;
            if (oy < s_.OH && ox < s_.OW)
                out_pos_[static_cast<std::size_t>(v * kLanes + l)] = oy * s_.OW + ox;
        }
    }
}

void DirectConv::run(const float* x, float* y, std::vector<float>& scratch) const {
    // The padded input, with room for the last vector's reads past the final plane.
    const std::int64_t xn = s_.groups * s_.cin_g * plane_ + kLanes + s_.kh * Wp_ + s_.kw;
    scratch.resize(static_cast<std::size_t>(xn + co_ * nv_ * kLanes));
    float* xp = scratch.data();
    float* out = xp + xn;
    pad(x, xp);
    std::fill(xp + s_.groups * s_.cin_g * plane_, xp + xn, 0.0f);
    const std::int64_t wblock = s_.cin_g * taps_ * co_;
    for (std::int64_t g = 0; g < s_.groups; ++g)
        for (std::int64_t b = 0; b < blocks_; ++b)
            for (std::int64_t v0 = 0; v0 < slots_; v0 += nv_) {
                const float* xg = xp + g * s_.cin_g * plane_;
                const float* wb = wp_.data() + (g * blocks_ + b) * wblock;
                if (co_ == 4)
                    tile<4, 5>(xg, wb, v0, out);
                else
                    tile<8, 2>(xg, wb, v0, out);
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

// Co channels x the Nv vectors from v0, summed over (channel, row, column) in order.
template <int Co, int Nv>
void DirectConv::tile(const float* xg, const float* wb, std::int64_t v0, float* out) const {
    vf acc[Co][Nv] = {};
    const float* xv[Nv];  // each vector's first lane in channel 0's padded plane
    for (int v = 0; v < Nv; ++v) xv[v] = xg + base_[static_cast<std::size_t>(v0 + v)];
    for (std::int64_t cl = 0; cl < s_.cin_g; ++cl) {
        const float* wc = wb + cl * taps_ * Co;
        for (std::int64_t ky = 0; ky < s_.kh; ++ky)
            for (std::int64_t kx = 0; kx < s_.kw; ++kx) {
                const std::int64_t off = cl * plane_ + ky * Wp_ + kx;
                vf x[Nv];
                for (int v = 0; v < Nv; ++v) load(x[v], xv[v] + off);
                const float* w = wc + (ky * s_.kw + kx) * Co;
                for (int j = 0; j < Co; ++j)
                    for (int v = 0; v < Nv; ++v) acc[j][v] += x[v] * w[j];
            }
    }
    std::memcpy(out, acc, sizeof acc);
}

// The tile's real outputs (channels [co0, co1), lanes that are not spare) into y.
void DirectConv::store(const float* out, std::int64_t co0, std::int64_t co1, std::int64_t v0,
                       float* y) const {
    const std::int64_t plane = s_.OH * s_.OW, lanes = nv_ * kLanes;
    const std::int64_t* pos = out_pos_.data() + v0 * kLanes;
    for (std::int64_t q = 0; q < lanes; ++q) {
        if (pos[q] < 0) continue;
        for (std::int64_t co = co0; co < co1; ++co)
            y[co * plane + pos[q]] = out[(co - co0) * lanes + q];
    }
}

}  // namespace ternion::synaptic
