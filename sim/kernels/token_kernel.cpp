#include "sim/kernels/token_kernel.hpp"

#include "sim/simd/simd.hpp"

#include <algorithm>

namespace ternion {

void TokenEvents::build(const IndexList& active, const float* values, std::int64_t in,
                        std::int64_t tokens) {
    begin.assign(static_cast<std::size_t>(tokens + 1), 0);
    chan.resize(active.size());
    x.resize(active.size());
    // `active` is token-major and ascending: walk the tokens alongside, no division per event.
    const auto nin = static_cast<std::uint32_t>(in);
    std::uint32_t t = 0, base = 0;
    const std::size_t na = active.size();
    bool neg = false;
    for (std::size_t k = 0; k < na; ++k) {
        const std::uint32_t i = active[k];
        while (i >= base + nin) {
            begin[++t] = static_cast<std::uint32_t>(k);
            base += nin;
        }
        chan[k] = i - base;
        x[k] = values[i];
        neg |= values[i] < 0.0f;
    }
    while (t < static_cast<std::uint32_t>(tokens)) begin[++t] = static_cast<std::uint32_t>(na);
    negative = neg;
    this->values = values;
}

void TokenEvents::build_every(const float* v, std::int64_t in, std::int64_t tokens) {
    const auto n = static_cast<std::size_t>(in * tokens);
    begin.resize(static_cast<std::size_t>(tokens + 1));
    for (std::int64_t t = 0; t <= tokens; ++t)
        begin[static_cast<std::size_t>(t)] = static_cast<std::uint32_t>(t * in);
    chan.resize(n);
    x.assign(v, v + n);
    bool neg = false;
    for (std::size_t k = 0; k < n; ++k) {
        chan[k] = static_cast<std::uint32_t>(k % static_cast<std::size_t>(in));
        neg |= v[k] < 0.0f;
    }
    negative = neg;
    values = v;
}

AlignedFloats pack_panels64(const float* m, std::int64_t ld, std::int64_t rows, std::int64_t cols) {
    const std::int64_t panels = (cols + 63) / 64;
    AlignedFloats d(static_cast<std::size_t>(panels * rows * 64), 0.0f);
    for (std::int64_t p = 0; p < panels; ++p) {
        const std::int64_t w = std::min<std::int64_t>(64, cols - p * 64);
        for (std::int64_t r = 0; r < rows; ++r)
            std::copy_n(m + r * ld + p * 64, w,
                        d.begin() + static_cast<std::ptrdiff_t>((p * rows + r) * 64));
    }
    return d;
}

void TokenPanels::build(const float* w, std::int64_t in, std::int64_t out) {
    in_ = in;
    out_ = out;
    data_ = pack_panels64(w, out, in, out);  // w is [in][out]: a group is a panel
}

void token_rows(const TokenPanels& W, const TokenEvents& ev, const float* bias, BiasOrder order,
                bool unit, float* y, std::int64_t r0, std::int64_t r1, std::uint64_t* nz,
                std::uint64_t* nt, TokenScratch& sc) {
    const auto ntok = static_cast<std::int64_t>(ev.begin.size()) - 1;
    sc.cursor.resize(static_cast<std::size_t>(ntok));
    sc.sums.resize(static_cast<std::size_t>(std::min<std::int64_t>(ntok, 64) * 64));
    // Inputs at least half non-zero take the dense register tile. Measured on the Spikformer
    // CIFAR-10 model's fc1 layers (384 -> 1536, 64 tokens, AMD Zen 5, AVX-512): the tile costs
    // 2.65 cycles per input and group of 64 outputs, the event kernel 5.3 per non-zero input.
    const bool dense =
        static_cast<double>(ev.chan.size()) >= 0.5 * static_cast<double>(W.in() * ntok);
    simd::TokenRowsArgs a{};
    a.panels = W.group(0);
    a.in = W.in();
    a.out = W.out();
    a.ntok = ntok;
    a.r0 = r0;
    a.r1 = r1;
    a.begin = ev.begin.data();
    a.chan = ev.chan.data();
    a.xs = ev.x.data();
    a.values = ev.values;
    a.bias = bias;
    a.y = y;
    a.bias_first = order == BiasOrder::first;
    a.unit = unit;
    a.negative = ev.negative;
    a.dense = dense;
    a.nz = nz;
    a.nt = nt;
    a.cursor = sc.cursor.data();
    a.sums = sc.sums.data();
    simd::kernels().token_rows(a);
}

}  // namespace ternion
