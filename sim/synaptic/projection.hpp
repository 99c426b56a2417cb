// The one linear map of several tokens with dense weights, [tokens, in] -> [tokens, out] on the
// last axis: the Linear node's multi-token path and every Q/K/V projection of the spiking
// attention nodes. Weights live once, in the token kernel's panels; the bias enters each sum
// first or last; an unfolded BatchNorm is an epilogue. The event form adds the non-zero inputs'
// terms and the dense form every term, both in ascending input order through the same kernel,
// so they give identical floats. (One-token and compressed Linear layers keep their synapses in
// ColumnWeights, which delivers events by column; both bill a synapse by the same rule.)
#pragma once
#include <cstdint>
#include <vector>

#include "sim/kernels/token_kernel.hpp"
#include "sim/synaptic/synaptic.hpp"

namespace ternion {

class Projection {
  public:
    Projection() = default;
    // weight (out, in) as PyTorch stores it, bias (out) or empty. The bias starts each sum, as
    // PyTorch's addmm starts from it; with a BatchNorm epilogue it comes after the sum and
    // before the BatchNorm (nn.Linear, then nn.BatchNorm1d).
    Projection(const std::vector<float>& weight, std::vector<float> bias, std::int64_t out,
               std::int64_t in, BatchNorm bn = {});
    // From weights stored by input column, [in][out] (ColumnWeights' dense layout); `order`:
    // where the bias enters each output's sum.
    static Projection from_columns(const float* w_in_out, std::int64_t in, std::int64_t out,
                                   std::vector<float> bias, BiasOrder order);
    // Stacks projections that share an input (Q|K|V) into one wider one.
    static Projection concat(const std::vector<const Projection*>& parts);

    std::int64_t in() const { return panels_.in(); }
    std::int64_t out() const { return panels_.out(); }
    std::uint64_t nonzero_weights() const { return nnz_total_; }
    std::uint64_t weight_count() const { return static_cast<std::uint64_t>(in() * out()); }
    // Non-zero weights of input i (the synapses one event at i reaches).
    std::uint32_t row_nnz(std::int64_t i) const { return row_nnz_[static_cast<std::size_t>(i)]; }
    // Outputs [o0, o1) as (out, in) weights and a bias per output (zeros without one), the
    // BatchNorm folded as the map applies it; false when a BatchNorm stays unfolded.
    bool matrix(std::int64_t o0, std::int64_t o1, std::vector<float>& w,
                std::vector<float>& b) const;

    // Rows [r0, r1) of y [tokens][out] (r0 a multiple of 64), for callers that split the rows
    // among threads; nz/nt as token_rows fills them. No BatchNorm epilogue here.
    void rows(const TokenEvents& ev, bool unit, float* y, std::int64_t r0, std::int64_t r1,
              std::uint64_t* nz, std::uint64_t* nt, TokenScratch& scratch) const;
    // acc [tokens][out] := the whole map (then the epilogue). Event form: only the listed
    // non-zero inputs (`active` ascending indices into x = [tokens][in]); dense form: every
    // input. Both return the (non-zero input, non-zero weight) pairs.
    std::uint64_t apply_event(const float* x, const IndexList& active, std::int64_t tokens,
                              float* acc, bool ternary) const;
    std::uint64_t apply_dense(const float* x, std::int64_t tokens, float* acc) const;

  private:
    // Weight (i, o) from the panels.
    float at(std::int64_t i, std::int64_t o) const {
        return panels_.group(o / 64)[i * 64 + o % 64];
    }
    void count_nonzeros();
    std::uint64_t whole(const TokenEvents& ev, bool unit, std::int64_t tokens, float* acc) const;
    TokenPanels panels_;  // the weights, [group of 64 outputs][in][64]
    std::vector<float> bias_;
    BiasOrder order_ = BiasOrder::first;
    BatchNorm bn_;                        // empty: none, or folded into the weights and bias
    std::vector<std::uint32_t> row_nnz_;  // non-zero weights per input
    std::uint64_t nnz_total_ = 0;
};

}  // namespace ternion
