// Synaptic and structural node types: Input, Output, Identity, Affine/Linear, Scale,
// Conv1d/Conv2d, SumPool2d/AvgPool2d/MaxPool2d, Flatten, Delay, and the token helpers of
// spiking Transformers (Tokens, TokenMean). Event-driven steps touch only non-zero inputs and
// sum in ascending input order, exactly as the dense steps do, so both engines agree bit for bit.
#pragma once
#include <array>
#include <memory>

#include "node_spec.hpp"

namespace ternion {

// Folds an eval-mode BatchNorm given as `<prefix>bn_weight`, `bn_bias`, `bn_running_mean`,
// `bn_running_var`, `bn_eps` into per-output-channel weights and bias (weights are
// [out][rest] row-major). No-op when the datasets are absent.
void fold_batchnorm(const NodeSpec& spec, const std::string& prefix, std::int64_t out,
                    std::vector<float>& weight, std::vector<float>& bias);

// Dense or compressed weights of a Linear map [in] -> [out], stored by input column so that
// a spike at input c adds column c. Columns are split into row blocks for parallel delivery.
class ColumnWeights {
  public:
    static constexpr std::int64_t kBlock = 2048;  // rows per block (fits uint16 offsets)
    void build(const std::vector<float>& w_out_in, std::int64_t out, std::int64_t in);
    std::int64_t out() const { return out_; }
    std::int64_t in() const { return in_; }
    bool sparse() const { return sparse_; }
    std::uint64_t nnz() const { return nnz_; }
    std::uint32_t col_nnz(std::int64_t c) const { return col_nnz_[static_cast<std::size_t>(c)]; }
    // y[r0:r1) += s * W[r0:r1, c] (s = +1/-1) or x * W (analog), for the rows of one block.
    void add_column(std::int64_t c, float x, bool unit, float* y, std::int64_t r0,
                    std::int64_t r1) const;
    float at(std::int64_t r, std::int64_t c) const;

  private:
    std::int64_t out_ = 0, in_ = 0;
    bool sparse_ = false;
    std::uint64_t nnz_ = 0;
    std::vector<std::uint32_t> col_nnz_;
    std::vector<float> dense_;  // column-major [in][out]
    // Sparse: per block b, colptr_[b*(in+1) + c] .. into rows_/vals_ (block-local row offsets).
    std::vector<std::uint64_t> colptr_;
    std::vector<std::uint16_t> rows_;
    std::vector<float> vals_;
};

}  // namespace ternion
