// GatherConv (the event path of stride-1 convolutions on binary spike maps) against a direct sum
// over each output's window in (input channel, kernel row, kernel column) order, from zero: the
// order every convolution path of ternion sums in, so the results must be equal, not close.
// Shapes cover output rows of 16 and 32 columns (transposed to [C, H, W] 16 x 16 at a time) and
// other widths, output channels past one register block of 192 and not a multiple of 16,
// padding 0 to 2, kernels 1x1, 3x3, 5x5 and 2x4, a 1-row map, empty inputs, with and without
// the bias it adds as it stores.
#include <doctest/doctest.h>

#include <random>
#include <vector>

#include "sim/kernels/conv_gather.hpp"

using namespace ternion;
using ternion::synaptic::GatherConv;
using ternion::synaptic::GatherConvShape;

namespace {

std::vector<float> reference(const GatherConvShape& s, const std::vector<float>& w,
                             const std::vector<std::uint8_t>& x) {
    std::vector<float> y(static_cast<std::size_t>(s.cout * s.OH * s.OW));
    for (std::int64_t co = 0; co < s.cout; ++co)
        for (std::int64_t oy = 0; oy < s.OH; ++oy)
            for (std::int64_t ox = 0; ox < s.OW; ++ox) {
                float acc = 0.0f;
                for (std::int64_t ci = 0; ci < s.cin; ++ci)
                    for (std::int64_t ky = 0; ky < s.kh; ++ky)
                        for (std::int64_t kx = 0; kx < s.kw; ++kx) {
                            const std::int64_t iy = oy - s.ph + ky, ix = ox - s.pw + kx;
                            if (iy < 0 || iy >= s.H || ix < 0 || ix >= s.W) continue;
                            if (!x[static_cast<std::size_t>((ci * s.H + iy) * s.W + ix)]) continue;
                            acc += w[static_cast<std::size_t>(
                                ((co * s.cin + ci) * s.kh + ky) * s.kw + kx)];
                        }
                y[static_cast<std::size_t>((co * s.OH + oy) * s.OW + ox)] = acc;
            }
    return y;
}

GatherConvShape shape(std::int64_t cin, std::int64_t cout, std::int64_t H, std::int64_t W,
                      std::int64_t kh, std::int64_t kw, std::int64_t ph, std::int64_t pw) {
    return {cin, cout, H, W, kh, kw, ph, pw, H + 2 * ph - kh + 1, W + 2 * pw - kw + 1};
}

}  // namespace

TEST_CASE("GatherConv equals each output's window summed in input order, bit for bit") {
    const GatherConvShape cases[] = {
        shape(5, 24, 16, 16, 3, 3, 1, 1), shape(3, 200, 8, 32, 3, 3, 1, 1),
        shape(4, 17, 9, 13, 3, 3, 1, 1),  shape(2, 33, 7, 20, 5, 5, 2, 2),
        shape(6, 16, 5, 16, 1, 1, 0, 0),  shape(3, 40, 6, 18, 3, 3, 0, 0),
        shape(2, 9, 1, 40, 1, 5, 0, 2),   shape(3, 400, 4, 16, 3, 3, 1, 1),
        shape(2, 12, 6, 9, 2, 4, 1, 0)};
    std::mt19937_64 rng(3);
    std::uniform_real_distribution<float> wd(-1.0f, 1.0f), p(0.0f, 1.0f);
    GatherConv::Scratch scratch;  // one scratch across shapes, as a node's state is reused
    for (const auto& s : cases) {
        CAPTURE(s.cin);
        CAPTURE(s.cout);
        CAPTURE(s.W);
        std::vector<float> w(static_cast<std::size_t>(s.cout * s.cin * s.kh * s.kw));
        for (auto& v : w) v = wd(rng);
        GatherConv conv;
        conv.build(s, w);
        for (float rate : {0.0f, 0.05f, 0.3f, 1.0f}) {
            CAPTURE(rate);
            std::vector<std::uint8_t> x(static_cast<std::size_t>(s.cin * s.H * s.W));
            std::vector<std::uint32_t> active;
            for (std::size_t i = 0; i < x.size(); ++i)
                if (p(rng) < rate) {
                    x[i] = 1;
                    active.push_back(static_cast<std::uint32_t>(i));
                }
            // With a bias (every other rate), each output is its sum, then + bias.
            std::vector<float> bias;
            if (rate == 0.05f || rate == 1.0f)
                for (std::int64_t c = 0; c < s.cout; ++c) bias.push_back(wd(rng));
            std::vector<float> y(static_cast<std::size_t>(s.cout * s.OH * s.OW), -7.0f);
            conv.run(active.data(), active.size(), bias.empty() ? nullptr : bias.data(), y.data(),
                     scratch);
            auto want = reference(s, w, x);
            if (!bias.empty())
                for (std::size_t i = 0; i < want.size(); ++i)
                    want[i] = want[i] + bias[i / static_cast<std::size_t>(s.OH * s.OW)];
            std::size_t differ = 0;
            for (std::size_t i = 0; i < y.size(); ++i) differ += y[i] != want[i];
            CHECK(differ == 0);
        }
    }
}
