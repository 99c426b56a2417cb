// Building blocks of the spiking attention nodes (SSA, SDSA, BSA), kept free of the node
// machinery so that tests can check them against the BSA paper's worked examples: Shiftmax, the
// ternary matrix product, and an event-driven projection (Linear with BatchNorm folded) whose
// summation order is the same in its event and dense forms. Their neurons are the rules of
// sim/kernels/neuron_rules.hpp.
#pragma once
#include <cstdint>
#include <vector>
#include "sim/kernels/token_kernel.hpp"
#include "sim/synaptic/synaptic.hpp"

namespace ternion::spiking {

// Shiftmax of one row of integer scores (spec 1.4): every weight is 2^-n[j] with
// n[j] = gamma - x[j] >= 0, gamma = ceil(log2 sum_j 2^x[j]). Exact for any int32 row: the sum
// is kept as a count per exponent with binary carries (no floating point), so rows whose sum is
// a power of two plus a tiny remainder still round up. Returns gamma.
int shiftmax_exponents(const std::int32_t* x, std::int64_t n, std::int32_t* n_out);
// Convenience for tests: the weights 2^-n as doubles.
std::vector<double> shiftmax(const std::vector<std::int32_t>& x);

// Ternary matrix product of one head: S = Q K^T for Q [n, d], K [m, d] with entries in
// {-1, 0, 1} (row-major int8). Returns S [n, m]; `acs` receives the number of (non-zero,
// non-zero) operand pairs, i.e. the accumulates an event-driven array performs.
std::vector<std::int32_t> ternary_product(const std::vector<std::int8_t>& q,
                                          const std::vector<std::int8_t>& k, std::int64_t n,
                                          std::int64_t m, std::int64_t d, std::uint64_t* acs);

// Linear map on the last axis of [tokens, in] -> [tokens, out], with its BatchNorm folded at load
// time or kept as an epilogue (then the bias comes after the sum, PyTorch's order, and the
// BatchNorm after the bias). Weights are stored transposed ([in][out]) so that one input event
// reads one contiguous row.
class Projection {
  public:
    Projection() = default;
    // weight (out, in) as PyTorch stores it, bias (out) or empty.
    Projection(const std::vector<float>& weight, const std::vector<float>& bias, std::int64_t out,
               std::int64_t in, BatchNorm bn = {});
    // Stacks projections that share an input (Q|K|V) into one wider one.
    static Projection concat(const std::vector<const Projection*>& parts);

    std::int64_t in() const { return in_; }
    std::int64_t out() const { return out_; }
    std::uint64_t nonzero_weights() const { return nnz_total_; }
    std::uint64_t weight_count() const { return static_cast<std::uint64_t>(in_ * out_); }
    std::uint32_t row_nnz(std::int64_t i) const { return row_nnz_[static_cast<std::size_t>(i)]; }

    // acc [tokens][out] := bias + x W^T (then the BatchNorm epilogue, if any). Event form: only the
    // listed non-zero inputs
    // (`active` ascending indices into x = [tokens][in]); dense form: every input. Both add
    // the terms of each output in ascending input order, so they give identical floats.
    // Returns the number of (non-zero input, non-zero weight) pairs.
    std::uint64_t apply_event(const float* x, const IndexList& active, std::int64_t tokens,
                              float* acc, bool ternary) const;
    std::uint64_t apply_dense(const float* x, std::int64_t tokens, float* acc) const;

  private:
    std::int64_t in_ = 0, out_ = 0;
    std::vector<float> wt_;  // [in][out]
    TokenPanels panels_;     // wt_ in the event kernel's layout
    std::vector<float> bias_;
    BatchNorm bn_;                        // empty: none, or folded into wt_ and bias_
    std::vector<std::uint32_t> row_nnz_;  // non-zero weights per input
    std::uint64_t nnz_total_ = 0;
};

}  // namespace ternion::spiking
