// A convolution's or pooling window's geometry as the mesh placement packs it (internal to
// hw/chip): which unit is which (channel, position), each unit's fan-in, a run of units' input
// axons, and which output positions an input position reaches (its per-synapse targets).
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "sim/core/graph.hpp"

namespace ternion::chip {

// A convolution's output neurons are packed position by position, all output channels of a
// position together, so that a core's neurons share their inputs (its axons); a pooling
// window's channel by channel, since each reads one channel. Fan-in counts the taps that land
// inside the input; a run's axons are the input channels it reads times the bounding box of its
// receptive fields (an upper bound).
struct ConvShape {
    using I64 = std::int64_t;
    I64 cin = 1, cout = 1, groups = 1, h = 1, w = 1, oh = 1, ow = 1;
    I64 kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
    bool pool = false;  // a window per channel, packed channel by channel

    static I64 span(I64 o0, I64 o1, I64 s, I64 p, I64 k, I64 d, I64 n) {
        const I64 lo = std::max<I64>(0, o0 * s - p), hi = std::min(n - 1, o1 * s - p + (k - 1) * d);
        return std::max<I64>(0, hi - lo + 1);
    }
    static I64 taps(I64 o, I64 s, I64 p, I64 k, I64 d, I64 n) {
        I64 v = 0;
        for (I64 t = 0; t < k; ++t) v += (o * s - p + t * d >= 0 && o * s - p + t * d < n) ? 1 : 0;
        return v;
    }
    // The outputs o (ascending, 0 <= o < n_out) whose window has a tap on input x: o s - p + t d
    // = x for some tap t. With stride and dilation they need not be contiguous.
    static std::vector<I64> reached(I64 x, I64 s, I64 p, I64 k, I64 d, I64 n_out) {
        std::vector<I64> o;
        for (I64 t = k - 1; t >= 0; --t) {
            const I64 num = x + p - t * d;
            if (num >= 0 && num % s == 0 && num / s < n_out) o.push_back(num / s);
        }
        std::sort(o.begin(), o.end());
        o.erase(std::unique(o.begin(), o.end()), o.end());
        return o;
    }
    I64 cin_per_out() const { return pool ? 1 : cin / groups; }
    // (channel, position) of unit i.
    std::array<I64, 2> at(I64 i) const {
        return pool ? std::array<I64, 2>{i / (oh * ow), i % (oh * ow)}
                    : std::array<I64, 2>{i % cout, i / cout};
    }
    // The unit of output element (channel c, position pos), the model's [C, H, W] order.
    I64 unit(I64 c, I64 pos) const { return pool ? c * oh * ow + pos : pos * cout + c; }
    I64 fanin(I64 i) const {
        const I64 pos = at(i)[1];
        return cin_per_out() * taps(pos / ow, sh, ph, kh, dh, h) *
               taps(pos % ow, sw, pw, kw, dw, w);
    }
    I64 axons(I64 a, I64 b) const {
        const auto [c0, p0] = at(a);
        const auto [c1, p1] = at(b - 1);
        // Positions covered: one range within a channel, else every position (pooling); a range
        // of positions (convolution).
        I64 q0 = 0, q1 = oh * ow - 1;
        if (!pool || c0 == c1) q0 = std::min(p0, p1), q1 = std::max(p0, p1);
        const I64 r0 = q0 / ow, r1 = q1 / ow;
        const I64 x0 = r0 == r1 ? q0 % ow : 0, x1 = r0 == r1 ? q1 % ow : ow - 1;
        // Input channels: a pooling run reads its own channels; a grouped convolution the groups
        // its output channels fall in (every group once it spans two positions).
        I64 in_ch = cin;
        if (pool)
            in_ch = c1 - c0 + 1;
        else if (groups > 1 && p0 == p1)
            in_ch = (c1 / (cout / groups) - c0 / (cout / groups) + 1) * cin_per_out();
        return in_ch * span(r0, r1, sh, ph, kh, dh, h) * span(x0, x1, sw, pw, kw, dw, w);
    }
};

inline ConvShape conv_shape(const Node& n, const LayerGeometry& geo) {
    const Shape& in = n.in_shape();
    const Shape& out = n.out_shape();
    ConvShape c;
    c.pool = geo.kind == LayerGeometry::Kind::pooling;
    c.cin = in.front(), c.cout = out.front(), c.groups = geo.groups;
    const bool two = in.size() == 3;
    c.h = two ? in[1] : 1, c.w = in.back(), c.oh = two ? out[1] : 1, c.ow = out.back();
    c.kh = geo.kernel_h, c.kw = geo.kernel_w, c.sh = geo.stride_h, c.sw = geo.stride_w;
    c.ph = geo.pad_h, c.pw = geo.pad_w, c.dh = geo.dilation_h, c.dw = geo.dilation_w;
    return c;
}

}  // namespace ternion::chip
