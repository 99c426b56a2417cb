// Event-driven product of several tokens' sparse inputs with one dense weight matrix, the core
// of every Transformer projection: y[t, r] = sum over the active channels c of token t, in
// ascending order, of x[t, c] * W[r, c], plus a bias added first or last. The order of the
// additions is fixed, so the result is bit-identical with the dense loop that adds every term
// (zeros included) in the same order.
#pragma once
#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

#include "sim/kernels/index_list.hpp"

namespace ternion {

// The active inputs of all tokens, grouped by token.
struct TokenEvents {
    std::vector<std::uint32_t> begin;  // per token: start in `chan` (tokens + 1 entries)
    std::vector<std::uint32_t> chan;   // active channels, token-major, ascending
    std::vector<float> x;              // their values
    const float* values = nullptr;     // every input, [tokens][in], zeros included (not owned)
    bool negative = false;             // some x < 0

    // From ascending flat indices i = t * in + c into `values` [tokens][in], which must
    // outlive the events' use (the dense path reads it whole).
    void build(const IndexList& active, const float* values, std::int64_t in, std::int64_t tokens);
    // Every input of `values` [tokens][in] as an event, zeros included (the dense form).
    void build_every(const float* values, std::int64_t in, std::int64_t tokens);
};

enum class BiasOrder { first, last };

// Allocates on 64-byte boundaries, so that 64 floats are exactly four cache lines.
template <class T>
struct CacheLineAllocator {
    using value_type = T;
    CacheLineAllocator() = default;
    template <class U>
    CacheLineAllocator(const CacheLineAllocator<U>&) {}
    T* allocate(std::size_t n) {
        return static_cast<T*>(::operator new (n * sizeof(T), std::align_val_t{64}));
    }
    void deallocate(T* p, std::size_t) { ::operator delete (p, std::align_val_t{64}); }
    template <class U>
    bool operator==(const CacheLineAllocator<U>&) const {
        return true;
    }
};
using AlignedFloats = std::vector<float, CacheLineAllocator<float>>;

// A row-major [rows x cols] matrix (leading dimension ld) as panels of 64 columns: panel p holds
// rows 0..rows-1 of columns 64p..64p+63 contiguously, zero-padded past cols. Both the event
// kernel below and the ANN GEMM read one 256-byte row of a panel per step.
AlignedFloats pack_panels64(const float* m, std::int64_t ld, std::int64_t rows, std::int64_t cols);

// Dense weights repacked for token_rows: the weights of each group of 64 outputs lie channel
// after channel ([group][in][64], the last group zero-padded), so a chunk of channels is one
// contiguous block of L1. Plain columns `out` floats apart would map onto a few L1 sets
// whenever 4 * out is a multiple of 2 KiB (out = 384, 1536, ...) and miss on every load.
class TokenPanels {
  public:
    // w: [in][out], the column of input c contiguous.
    void build(const float* w, std::int64_t in, std::int64_t out);
    std::int64_t in() const { return in_; }
    std::int64_t out() const { return out_; }
    const float* group(std::int64_t g) const { return data_.data() + g * in_ * 64; }

  private:
    std::int64_t in_ = 0, out_ = 0;
    AlignedFloats data_;
};

// Scratch of one caller (one row block); a cache line of its own, as callers run side by side.
struct alignas(64) TokenScratch {
    std::vector<std::uint32_t> cursor;  // per token: next event
    AlignedFloats sums;                 // per token of a tile: the running sums of 64 rows
};

// Rows [r0, r1) of y [tokens][out], r0 a multiple of 64. `unit`: every x is +1 or -1 (add or
// subtract, no multiply). bias may be null. When nz is given, nz[t * groups + r / 64] receives
// bit r % 64 for every non-zero y[t, r] and nt the same for values other than +-1
// (groups = ceil(out / 64)).
void token_rows(const TokenPanels& W, const TokenEvents& ev, const float* bias, BiasOrder order,
                bool unit, float* y, std::int64_t r0, std::int64_t r1, std::uint64_t* nz,
                std::uint64_t* nt, TokenScratch& scratch);

}  // namespace ternion
