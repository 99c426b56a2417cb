#include "sim/kernels/conv_gather.hpp"

#include <algorithm>

#include "sim/simd/simd.hpp"

namespace ternion::synaptic {

void GatherConv::build(const GatherConvShape& s, const std::vector<float>& w) {
    s_ = s;
    taps_ = s.kh * s.kw;
    ld_ = (s.cout + 15) / 16 * 16;
    w_.assign(static_cast<std::size_t>(s.cin * taps_ * ld_), 0.0f);
    for (std::int64_t co = 0; co < s.cout; ++co)
        for (std::int64_t ci = 0; ci < s.cin; ++ci)
            for (std::int64_t t = 0; t < taps_; ++t)
                w_[static_cast<std::size_t>((ci * taps_ + t) * ld_ + co)] =
                    w[static_cast<std::size_t>((co * s.cin + ci) * taps_ + t)];
}

void GatherConv::run(const std::uint32_t* active, std::size_t n, const float* bias, float* y,
                     Scratch& sc) const {
    // row_start[ci * H + iy]: where input row (ci, iy) begins among the ascending events.
    sc.row_start.assign(static_cast<std::size_t>(s_.cin * s_.H + 1), 0);
    std::size_t r = 0;
    std::uint64_t row_end = static_cast<std::uint64_t>(s_.W);
    for (std::size_t k = 0; k < n; ++k) {
        for (; active[k] >= row_end; row_end += static_cast<std::uint64_t>(s_.W)) ++r;
        ++sc.row_start[r + 1];
    }
    for (std::size_t k = 1; k < sc.row_start.size(); ++k) sc.row_start[k] += sc.row_start[k - 1];
    sc.fill.resize(static_cast<std::size_t>(s_.OW));
    sc.entries.resize(static_cast<std::size_t>(s_.OW * s_.cin * taps_));
    sc.sums.resize(static_cast<std::size_t>(s_.OW * ld_));
    for (std::int64_t oy = 0; oy < s_.OH; ++oy) {
        list_row(active, oy, sc);
        sum_row(sc);
        store_row(sc, oy, bias, y);
    }
}

// Output row oy's lists: the inputs of input channel ci, kernel row ky in ascending columns
// reach output column ox through kernel column ix + pw - ox, ascending too, so appending
// channel by channel and kernel row by kernel row keeps every list in ascending input order.
void GatherConv::list_row(const std::uint32_t* active, std::int64_t oy, Scratch& sc) const {
    const std::int64_t cap = s_.cin * taps_;
    std::fill(sc.fill.begin(), sc.fill.end(), 0u);
    std::uint32_t* fill = sc.fill.data();
    std::uint32_t* entries = sc.entries.data();
    for (std::int64_t ci = 0; ci < s_.cin; ++ci)
        for (std::int64_t ky = 0; ky < s_.kh; ++ky) {
            const std::int64_t iy = oy - s_.ph + ky;
            if (iy < 0 || iy >= s_.H) continue;
            const auto row = static_cast<std::size_t>(ci * s_.H + iy);
            const std::int64_t first = static_cast<std::int64_t>(row) * s_.W;
            const auto tap0 = static_cast<std::uint32_t>((ci * s_.kh + ky) * s_.kw);
            for (auto k = sc.row_start[row]; k < sc.row_start[row + 1]; ++k) {
                const std::int64_t ix = active[k] - first;
                // Output columns ix + pw - kx for kx = 0 .. kw-1, inside [0, OW).
                const std::int64_t lo = std::max<std::int64_t>(0, ix + s_.pw - (s_.kw - 1));
                const std::int64_t hi = std::min<std::int64_t>(s_.OW - 1, ix + s_.pw);
                for (std::int64_t ox = lo; ox <= hi; ++ox)
                    entries[ox * cap + fill[ox]++] =
                        tap0 + static_cast<std::uint32_t>(ix + s_.pw - ox);
            }
        }
}

// Each output column's list through the weights, as many channels at a time as the CPU's
// registers hold (192 with AVX-512).
void GatherConv::sum_row(Scratch& sc) const {
    const std::int64_t cap = s_.cin * taps_;
    const auto sums = simd::kernels().gather_sums;
    for (std::int64_t ox = 0; ox < s_.OW; ++ox)
        sums(w_.data(), ld_, sc.entries.data() + ox * cap, sc.fill[static_cast<std::size_t>(ox)],
             sc.sums.data() + ox * ld_);
}

// The row's sums [OW][channels] into y [cout][OH][OW], written along the output row (blocks
// transposed in registers where the CPU has the vectors for it).
void GatherConv::store_row(const Scratch& sc, std::int64_t oy, const float* bias, float* y) const {
    simd::kernels().gather_store(sc.sums.data(), ld_, s_.OW, s_.cout, s_.OH * s_.OW, oy * s_.OW,
                                 bias, y);
}

}  // namespace ternion::synaptic
