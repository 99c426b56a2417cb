#include "sim/token_kernel.hpp"

#include <algorithm>
#include <cstring>
#ifdef __AVX512F__
#include <immintrin.h>
#endif

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

namespace {

// For rows [r0, r1) of every token t: y[t, r] = (sum over the active channels c of t, ascending,
// of x * W[r, c]) + bias[r] (or bias[r] + the sum, BiasFirst). The running sums of 64 rows stay in
// four 16-float registers, so an active input costs four weight loads and four adds.
// Channels go in chunks whose panel (12 KiB) stays in L1 while a tile of tokens passes; each
// token's sums continue from a contiguous scratch row (16 KiB per tile), chunk after chunk, and go
// to y once per group. The order of additions is exactly the dense loop's (terms in ascending
// channel order, the bias first or last), so results stay bit-identical with the dense engine.
// Also records, per token and 64-row group, which outputs are non-zero (`nz`) and which of those
// are not +-1 (`nt`).

typedef float v16f __attribute__((vector_size(64), aligned(64)));
typedef std::int32_t v16i __attribute__((vector_size(64), aligned(64)));

typedef float v16u __attribute__((vector_size(64), aligned(4)));  // unaligned

// Bit r of mz: s[r] != 0; of mt: s[r] is neither 0 nor +-1 (r < len <= 64).
inline void masks(const float* s, std::int64_t len, std::uint64_t& mz, std::uint64_t& mt) {
#ifdef __AVX512F__
    if (len == 64) {
        mz = mt = 0;
        const __m512 one = _mm512_set1_ps(1.0f);
        for (int j = 0; j < 4; ++j) {
            const __m512 v = _mm512_load_ps(s + 16 * j);
            // NEQ_UQ: NaN counts as non-zero, as `s != 0` does.
            const std::uint64_t z = _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_NEQ_UQ);
            const std::uint64_t u = _mm512_cmp_ps_mask(_mm512_abs_ps(v), one, _CMP_EQ_OQ);
            mz |= z << (16 * j);
            mt |= (z & ~u & 0xffffu) << (16 * j);
        }
        return;
    }
#endif
    mz = mt = 0;
    for (std::int64_t r = 0; r < len; ++r) {
        mz |= static_cast<std::uint64_t>(s[r] != 0.0f) << r;
        mt |= static_cast<std::uint64_t>(s[r] != 0.0f && s[r] != 1.0f && s[r] != -1.0f) << r;
    }
}

// ones: every x is +1; signs: every x is +1 or -1, applied by flipping the weight's sign bit
// (acc + (-w) is acc - w exactly; a data-dependent branch would mispredict half the time);
// values: any x, multiplied (not fused: the dense engine rounds the product first).
enum class Mode { ones, signs, values };

constexpr std::int64_t kTile = 64;        // tokens per tile: 64 x 256 B of running sums
constexpr std::int64_t kDenseChunk = 48;  // channels per chunk at high density: 12 KiB

// Channels per chunk: 48 (12 KiB of weights, in L1 beside a tile's sums) when inputs are dense
// enough; sparser inputs get wider chunks, so that a token still meets ~24 events per chunk and
// the per-chunk cost (its sums loaded and stored, a mispredicted loop exit) stays small.
std::int64_t chunk_for(std::int64_t in, std::int64_t ntok, std::size_t events) {
    const double per_channel = static_cast<double>(events) / static_cast<double>(in * ntok);
    std::int64_t c = per_channel > 0 ? static_cast<std::int64_t>(24.0 / per_channel) : in;
    c = std::max<std::int64_t>(kDenseChunk, (c + 15) / 16 * 16);
    return std::min(c, in);
}

// A tile's sums of one group of 64 outputs (tokens [t0, t1)) into y, with the masks of
// non-zero and non-unit outputs.
void write_group(const float* sums, std::int64_t t0, std::int64_t t1, std::int64_t len,
                 std::int64_t out, std::int64_t s0, std::int64_t groups, float* y,
                 std::uint64_t* nz, std::uint64_t* nt) {
    const std::int64_t g = s0 / 64;
    for (std::int64_t t = t0; t < t1; ++t) {
        const float* s = sums + (t - t0) * 64;
        float* yt = y + t * out + s0;
        if (len == 64) {  // four vector moves, not a library call per token
            const v16f* sv = reinterpret_cast<const v16f*>(s);
            v16u* yv = reinterpret_cast<v16u*>(yt);
            yv[0] = sv[0], yv[1] = sv[1], yv[2] = sv[2], yv[3] = sv[3];
        } else {
            std::copy_n(s, len, yt);
        }
        if (!nz) continue;
        std::uint64_t mz, mt;
        masks(s, len, mz, mt);
        nz[t * groups + g] = mz;
        nt[t * groups + g] = mt;
    }
}

template <Mode M, bool BiasFirst>
void rows_kernel(const TokenPanels& W, const std::uint32_t* __restrict begin,
                 const std::uint32_t* __restrict chan, const float* __restrict xs,
                 const float* __restrict bias, float* __restrict y, std::int64_t ntok,
                 std::int64_t r0, std::int64_t r1, std::uint64_t* __restrict nz,
                 std::uint64_t* __restrict nt, std::uint32_t* __restrict cursor,
                 float* __restrict sums, std::int64_t kChunk) {
    const std::int64_t in = W.in(), out = W.out(), groups = (out + 63) / 64;
    for (std::int64_t s0 = r0; s0 < r1; s0 += 64) {
        const std::int64_t g = s0 / 64;
        const std::int64_t len = std::min<std::int64_t>(64, out - s0);
        alignas(64) float bpad[64] = {};
        if (bias) std::copy_n(bias + s0, len, bpad);
        const v16f* bv = reinterpret_cast<const v16f*>(bpad);
        const float* P = W.group(g);
        for (std::int64_t t0 = 0; t0 < ntok; t0 += kTile) {
            const std::int64_t t1 = std::min(ntok, t0 + kTile);
            for (std::int64_t t = t0; t < t1; ++t) cursor[t] = begin[t];
            for (std::int64_t c0 = 0; c0 < in; c0 += kChunk) {
                const auto c1 = static_cast<std::uint32_t>(std::min(in, c0 + kChunk));
                const bool first = c0 == 0, last = c1 == in;
                // The next chunk's weights (those of the next group after the last chunk) come
                // from L3 or memory: fetch them a few lines per token while this chunk runs.
                const char* next = reinterpret_cast<const char*>(
                    !last ? P + c1 * 64 : (s0 + 64 < r1 ? W.group(g + 1) : nullptr));
                const std::int64_t next_lines =
                    next ? std::min<std::int64_t>(kChunk, last ? in : in - c1) * 4 : 0;
                const std::int64_t per = (next_lines + (t1 - t0) - 1) / (t1 - t0);
                for (std::int64_t t = t0; t < t1; ++t) {
                    for (std::int64_t l = (t - t0) * per;
                         l < std::min(next_lines, (t - t0 + 1) * per); ++l)
                        if (kChunk > kDenseChunk)
                            __builtin_prefetch(next + l * 64, 0, 2);  // to L2: too big for L1
                        else
                            __builtin_prefetch(next + l * 64);
                    v16f* st = reinterpret_cast<v16f*>(sums + (t - t0) * 64);
                    v16f a0, a1, a2, a3;
                    if (first && BiasFirst && bias) {
                        a0 = bv[0], a1 = bv[1], a2 = bv[2], a3 = bv[3];
                    } else if (first) {
                        a0 = a1 = a2 = a3 = v16f{};
                    } else {
                        a0 = st[0], a1 = st[1], a2 = st[2], a3 = st[3];
                    }
                    std::uint32_t k = cursor[t];
                    const std::uint32_t kend = begin[t + 1];
                    for (; k < kend && chan[k] < c1; ++k) {
                        const v16f* col = reinterpret_cast<const v16f*>(P + chan[k] * 64);
                        if constexpr (M == Mode::ones) {
                            a0 += col[0], a1 += col[1], a2 += col[2], a3 += col[3];
                        } else if constexpr (M == Mode::signs) {
                            // Vector casts reinterpret bits (no std::bit_cast: a function
                            // returning a 64-byte vector changes the ABI below AVX-512).
                            std::int32_t bits;
                            std::memcpy(&bits, xs + k, 4);
                            const std::int32_t s = bits & static_cast<std::int32_t>(0x80000000u);
                            a0 += (v16f)((v16i)col[0] ^ s);
                            a1 += (v16f)((v16i)col[1] ^ s);
                            a2 += (v16f)((v16i)col[2] ^ s);
                            a3 += (v16f)((v16i)col[3] ^ s);
                        } else {
                            const float xv = xs[k];
                            a0 += xv * col[0], a1 += xv * col[1];
                            a2 += xv * col[2], a3 += xv * col[3];
                        }
                    }
                    cursor[t] = k;
                    if (!BiasFirst && last && bias)
                        a0 += bv[0], a1 += bv[1], a2 += bv[2], a3 += bv[3];
                    st[0] = a0, st[1] = a1, st[2] = a2, st[3] = a3;
                }
            }
            write_group(sums, t0, t1, len, out, s0, groups, y, nz, nt);
        }
    }
}

template <Mode M>
void rows_mode(bool first, const TokenPanels& W, const TokenEvents& ev, const float* bias, float* y,
               std::int64_t r0, std::int64_t r1, std::uint64_t* nz, std::uint64_t* nt,
               TokenScratch& sc) {
    const auto ntok = static_cast<std::int64_t>(ev.begin.size()) - 1;
    (first ? rows_kernel<M, true> : rows_kernel<M, false>)(W, ev.begin.data(), ev.chan.data(),
                                                           ev.x.data(), bias, y, ntok, r0, r1, nz,
                                                           nt, sc.cursor.data(), sc.sums.data(),
                                                           chunk_for(W.in(), ntok, ev.chan.size()));
}

// Dense inputs: a register tile of R tokens by 64 outputs takes every channel in ascending
// order, each weight row loaded once for the R tokens (the event kernel loads it once per
// event). Zero inputs are multiplied like the others: 0 * w adds +-0, which leaves a sum as it
// is, so each output gets exactly the event kernel's sum.
template <int R>
void dense_tile(const float* __restrict P, const float* __restrict x, std::int64_t in,
                const v16f* bias, bool bias_first, float* sums) {
    v16f acc[R][4];
    for (int r = 0; r < R; ++r)
        for (int v = 0; v < 4; ++v) acc[r][v] = bias && bias_first ? bias[v] : v16f{};
    for (std::int64_t c = 0; c < in; ++c) {
        const v16f* col = reinterpret_cast<const v16f*>(P + c * 64);
        const v16f w0 = col[0], w1 = col[1], w2 = col[2], w3 = col[3];
        for (int r = 0; r < R; ++r) {
            const float xv = x[r * in + c];
            acc[r][0] += xv * w0, acc[r][1] += xv * w1;
            acc[r][2] += xv * w2, acc[r][3] += xv * w3;
        }
    }
    if (bias && !bias_first)
        for (int r = 0; r < R; ++r)
            for (int v = 0; v < 4; ++v) acc[r][v] += bias[v];
    std::memcpy(sums, acc, sizeof acc);
}

#ifdef __AVX512F__
constexpr int kDenseTokens = 6;  // 24 sums and 4 weight vectors in the 32 vector registers
#else
constexpr int kDenseTokens = 2;
#endif

void dense_rows(const TokenPanels& W, const float* x, std::int64_t ntok, const float* bias,
                bool bias_first, float* y, std::int64_t r0, std::int64_t r1, std::uint64_t* nz,
                std::uint64_t* nt, float* sums) {
    const std::int64_t out = W.out(), groups = (out + 63) / 64;
    for (std::int64_t s0 = r0; s0 < r1; s0 += 64) {
        const std::int64_t g = s0 / 64, len = std::min<std::int64_t>(64, out - s0);
        alignas(64) float bpad[64] = {};
        if (bias) std::copy_n(bias + s0, len, bpad);
        const v16f* bv = bias ? reinterpret_cast<const v16f*>(bpad) : nullptr;
        for (std::int64_t t0 = 0; t0 < ntok; t0 += kTile) {
            const std::int64_t t1 = std::min(ntok, t0 + kTile);
            std::int64_t t = t0;
            for (; t + kDenseTokens <= t1; t += kDenseTokens)
                dense_tile<kDenseTokens>(W.group(g), x + t * W.in(), W.in(), bv, bias_first,
                                         sums + (t - t0) * 64);
            for (; t < t1; ++t)
                dense_tile<1>(W.group(g), x + t * W.in(), W.in(), bv, bias_first,
                              sums + (t - t0) * 64);
            write_group(sums, t0, t1, len, out, s0, groups, y, nz, nt);
        }
    }
}

// Inputs at least this dense take dense_rows. Measured on the Spikformer CIFAR-10 model's fc1
// layers (384 -> 1536, 64 tokens, AMD Zen 5): the tile costs 2.65 cycles per input and group
// of 64 outputs, the event kernel 5.3 per non-zero input: they break even at half the inputs.
constexpr double kDenseFraction = 0.5;

}  // namespace

void token_rows(const TokenPanels& W, const TokenEvents& ev, const float* bias, BiasOrder order,
                bool unit, float* y, std::int64_t r0, std::int64_t r1, std::uint64_t* nz,
                std::uint64_t* nt, TokenScratch& sc) {
    const auto ntok = static_cast<std::int64_t>(ev.begin.size()) - 1;
    sc.cursor.resize(static_cast<std::size_t>(ntok));
    sc.sums.resize(static_cast<std::size_t>(std::min(ntok, kTile) * 64));
    const bool first = order == BiasOrder::first;
    if (static_cast<double>(ev.chan.size()) >=
        kDenseFraction * static_cast<double>(W.in() * ntok)) {
        dense_rows(W, ev.values, ntok, bias, first, y, r0, r1, nz, nt, sc.sums.data());
        return;
    }
    if (!unit)
        rows_mode<Mode::values>(first, W, ev, bias, y, r0, r1, nz, nt, sc);
    else if (ev.negative)
        rows_mode<Mode::signs>(first, W, ev, bias, y, r0, r1, nz, nt, sc);
    else
        rows_mode<Mode::ones>(first, W, ev, bias, y, r0, r1, nz, nt, sc);
}

}  // namespace ternion
