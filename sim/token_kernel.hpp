// Event-driven product of several tokens' sparse inputs with one dense weight matrix, the core
// of every Transformer projection: y[t, r] = sum over the active channels c of token t, in
// ascending order, of x[t, c] * W[r, c], plus a bias added first or last. The order of the
// additions is fixed, so the result is bit-identical with the dense loop that adds every term
// (zeros included) in the same order.
#pragma once
#include <cstdint>
#include <vector>

namespace ternion {

// The active inputs of all tokens, grouped by token.
struct TokenEvents {
    std::vector<std::uint32_t> begin;  // per token: start in `chan` (tokens + 1 entries)
    std::vector<std::uint32_t> chan;   // active channels, token-major, ascending
    std::vector<float> x;              // their values

    // From ascending flat indices i = t * in + c into `values` [tokens][in].
    void build(const std::vector<std::uint32_t>& active, const float* values, std::int64_t in,
               std::int64_t tokens);
};

enum class BiasOrder { first, last };

// Scratch of one caller (one row block): token cursors.
using TokenCursor = std::vector<std::uint32_t>;

// Rows [r0, r1) of y [tokens][out], r0 a multiple of 64, W column-major ([in][out]: the
// column of input c is contiguous). `unit`: every x is +1 or -1 (add or subtract, no multiply).
// bias may be null. When nz is given, nz[t * groups + r / 64] receives bit r % 64 for every
// non-zero y[t, r] and nt the same for values other than +-1 (groups = ceil(out / 64)).
void token_rows(const float* W, std::int64_t in, std::int64_t out, const TokenEvents& ev,
                const float* bias, BiasOrder order, bool unit, float* y, std::int64_t r0,
                std::int64_t r1, std::uint64_t* nz, std::uint64_t* nt, TokenCursor& cursor);

}  // namespace ternion
