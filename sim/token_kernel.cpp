#include "sim/token_kernel.hpp"

#include <algorithm>

namespace ternion {

void TokenEvents::build(const std::vector<std::uint32_t>& active, const float* values,
                        std::int64_t in, std::int64_t tokens) {
    begin.assign(static_cast<std::size_t>(tokens + 1), 0);
    chan.resize(active.size());
    x.resize(active.size());
    // `active` is token-major and ascending: walk the tokens alongside, no division per event.
    const auto nin = static_cast<std::uint32_t>(in);
    std::uint32_t t = 0, base = 0;
    const std::size_t na = active.size();
    for (std::size_t k = 0; k < na; ++k) {
        const std::uint32_t i = active[k];
        while (i >= base + nin) {
            begin[++t] = static_cast<std::uint32_t>(k);
            base += nin;
        }
        chan[k] = i - base;
        x[k] = values[i];
    }
    while (t < static_cast<std::uint32_t>(tokens)) begin[++t] = static_cast<std::uint32_t>(na);
}

namespace {

// For rows [r0, r1) of every token t: y[t, r] = (sum over the active channels c of t, ascending,
// of x * W[r, c]) + bias[r] (or bias[r] + the sum, BiasFirst), with the running sum held in
// registers 64 rows at a time, so each active input costs one weight load and one add per 8 rows.
// Channels go in chunks whose weights stay in L1 while all tokens pass; y is read and written once
// per chunk. The order of additions is exactly the dense loop's (terms in ascending channel order,
// the bias first or last), so results stay bit-identical with the dense engine. Also records, per
// token and 64-row group, which outputs are non-zero (`nz`) and which of those are not +-1 (`nt`).

typedef float v8f __attribute__((vector_size(32), aligned(4)));

template <bool Unit, bool BiasFirst>
void rows_kernel(const float* __restrict W, std::int64_t in, std::int64_t out,
                 const std::uint32_t* __restrict begin, const std::uint32_t* __restrict chan,
                 const float* __restrict xs, const float* __restrict bias, float* __restrict y,
                 std::int64_t ntok, std::int64_t r0, std::int64_t r1, std::uint64_t* __restrict nz,
                 std::uint64_t* __restrict nt, std::int64_t groups,
                 std::uint32_t* __restrict cursor) {
    constexpr int V = 8;               // 8-float vectors held in registers
    constexpr std::int64_t R = 8 * V;  // rows per group; r0 is a multiple of 64 (row blocks are)
    // Channels per chunk: the chunk's weights for R rows (16 KiB) stay in L1 while every token
    // passes through them; each token's sum continues from y, chunk after chunk.
    constexpr std::int64_t chunk = 16384 / (R * 4);
    for (std::int64_t s0 = r0; s0 < r1; s0 += R) {
        const std::int64_t g = s0 / 64;
        const std::int64_t len = std::min<std::int64_t>(R, r1 - s0);
        if (len < R) {  // a last, partial group: the same sums, element by element
            for (std::int64_t t = 0; t < ntok; ++t) {
                float* yt = y + t * out + s0;
                for (std::int64_t r = 0; r < len; ++r)
                    yt[r] = BiasFirst && bias ? bias[s0 + r] : 0.0f;
                for (std::uint32_t k = begin[t]; k < begin[t + 1]; ++k) {
                    const float* col = W + chan[k] * out + s0;
                    const float xv = xs[k];
                    for (std::int64_t r = 0; r < len; ++r) {
                        if (Unit)
                            yt[r] = xv > 0 ? yt[r] + col[r] : yt[r] - col[r];
                        else
                            yt[r] += xv * col[r];
                    }
                }
                if (!BiasFirst && bias)
                    for (std::int64_t r = 0; r < len; ++r) yt[r] += bias[s0 + r];
            }
        } else {
            for (std::int64_t t = 0; t < ntok; ++t) cursor[t] = begin[t];
            const float* Ws = W + s0;
            for (std::int64_t c0 = 0; c0 < in; c0 += chunk) {
                const auto c1 = static_cast<std::uint32_t>(std::min(in, c0 + chunk));
                const bool first = c0 == 0, last = c1 == in;
                for (std::int64_t t = 0; t < ntok; ++t) {
                    std::uint32_t k = cursor[t];
                    const std::uint32_t kend = begin[t + 1];
                    v8f* yt = reinterpret_cast<v8f*>(y + t * out + s0);
                    v8f acc[V];
                    if (first && BiasFirst && bias)
                        for (int j = 0; j < V; ++j)
                            acc[j] = *reinterpret_cast<const v8f*>(bias + s0 + 8 * j);
                    else if (first)
                        for (int j = 0; j < V; ++j) acc[j] = v8f{};
                    else
                        for (int j = 0; j < V; ++j) acc[j] = yt[j];
                    for (; k < kend && chan[k] < c1; ++k) {
                        const v8f* col = reinterpret_cast<const v8f*>(Ws + chan[k] * out);
                        if (Unit) {
                            if (xs[k] > 0)
                                for (int j = 0; j < V; ++j) acc[j] += col[j];
                            else
                                for (int j = 0; j < V; ++j) acc[j] -= col[j];
                        } else {
                            const float xv = xs[k];
                            for (int j = 0; j < V; ++j) acc[j] += xv * col[j];
                        }
                    }
                    cursor[t] = k;
                    if (!BiasFirst && last && bias)
                        for (int j = 0; j < V; ++j)
                            acc[j] += *reinterpret_cast<const v8f*>(bias + s0 + 8 * j);
                    for (int j = 0; j < V; ++j) yt[j] = acc[j];
                }
            }
        }
        for (std::int64_t t = 0; nz && t < ntok; ++t) {
            const float* yt = y + t * out + s0;
            std::uint64_t mz = 0, mt = 0;
            for (std::int64_t r = 0; r < len; ++r) {
                mz |= static_cast<std::uint64_t>(yt[r] != 0.0f) << r;
                mt |= static_cast<std::uint64_t>(yt[r] != 0.0f && yt[r] != 1.0f && yt[r] != -1.0f)
                      << r;
            }
            nz[t * groups + g] = mz;
            nt[t * groups + g] = mt;
        }
    }
}

}  // namespace

void token_rows(const float* W, std::int64_t in, std::int64_t out, const TokenEvents& ev,
                const float* bias, BiasOrder order, bool unit, float* y, std::int64_t r0,
                std::int64_t r1, std::uint64_t* nz, std::uint64_t* nt, TokenCursor& cursor) {
    const auto ntok = static_cast<std::int64_t>(ev.begin.size()) - 1;
    cursor.resize(static_cast<std::size_t>(ntok));
    const std::int64_t groups = (out + 63) / 64;
    const bool first = order == BiasOrder::first;
    const auto kernel = unit ? (first ? rows_kernel<true, true> : rows_kernel<true, false>)
                             : (first ? rows_kernel<false, true> : rows_kernel<false, false>);
    kernel(W, in, out, ev.begin.data(), ev.chan.data(), ev.x.data(), bias, y, ntok, r0, r1, nz, nt,
           groups, cursor.data());
}

}  // namespace ternion
