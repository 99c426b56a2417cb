// Synaptic and structural node types: Input, Output, Identity, Affine/Linear, Scale,
// Conv1d/Conv2d, SumPool2d/AvgPool2d/MaxPool2d, Flatten, Delay, and the token helpers of
// spiking Transformers (Tokens, TokenMean). Event-driven steps touch only non-zero inputs and
// sum in ascending input order, exactly as the dense steps do, so both engines agree bit for bit.
#pragma once
#include <array>
#include <memory>

#include "node_spec.hpp"

namespace ternion {

// The one BatchNorm fold (inference): weights [out][rest] row-major and bias [out] (created as
// zeros when empty) become w' = w g and b' = (b - mean) g + beta, g = gamma / sqrt(var + eps),
// in double precision and rounded once to float.
void fold_batchnorm(std::vector<float>& weight, std::vector<float>& bias, std::int64_t out,
                    const std::vector<float>& gamma, const std::vector<float>& beta,
                    const std::vector<float>& mean, const std::vector<float>& var, double eps);
// Reads an eval-mode BatchNorm given as `<prefix>bn_weight`, `bn_bias`, `bn_running_mean`,
// `bn_running_var`, `bn_eps` and folds it in. Returns false (and changes nothing) when the
// datasets are absent.
bool fold_batchnorm(const NodeSpec& spec, const std::string& prefix, std::int64_t out,
                    std::vector<float>& weight, std::vector<float>& bias);

// Dense or compressed weights of a Linear map [in] -> [out], stored by input column so that
// a spike at input c adds column c. Columns are split into row blocks for parallel delivery.
class ColumnWeights {
  public:
    // Rows per block: a column's synapses in one block form one contiguous run (latency, not
    // bandwidth, bounds event delivery), so blocks are as large as possible: one per worker
    // thread, at most 65472 rows (uint16 offsets, whole 64-row groups). The partition never changes
    // results. Layers of at most 65472 rows store whole-layer row numbers (row_base).
    static constexpr std::int64_t kMaxBlock = 65472;  // 1023 cache lines of rows
    void set_blocks(int parts) { parts_ = parts < 1 ? 1 : parts; }
    std::int64_t block() const { return block_; }
    std::int64_t nblocks() const { return (out_ + block_ - 1) / block_; }
    // `codebook`: store each synapse's weight as an index into the matrix's distinct values when
    // there are at most 256 of them (no per-synapse weight at all when there is one). Lossless.
    void set_codebook(bool on) { use_codebook_ = on; }
    void build(const std::vector<float>& w_out_in, std::int64_t out, std::int64_t in);
    // From compressed rows (indptr [out+1], column indices and values): never densified when
    // sparse, so a large network with few synapses loads in memory proportional to its synapses.
    void build_csr(const std::vector<std::int64_t>& indptr,
                   const std::vector<std::int64_t>& indices, const std::vector<float>& values,
                   std::int64_t out, std::int64_t in);
    std::int64_t out() const { return out_; }
    std::int64_t in() const { return in_; }
    bool sparse() const { return sparse_; }
    // Bytes read per delivered synapse (row index and weight or code), for memory pricing.
    std::uint64_t bytes_per_synapse() const {
        if (!sparse_) return 4;
        return 2 + (!vals_.empty() ? 4 : (!codes_.empty() ? 1 : 0));
    }
    std::size_t codebook_size() const { return codebook_.size(); }
    std::uint64_t nnz() const { return nnz_; }
    std::uint32_t col_nnz(std::int64_t c) const { return col_nnz_[static_cast<std::size_t>(c)]; }
    // y[r0:r1) += s * W[r0:r1, c] (s = +1/-1) or x * W (analog), for the rows of one block.
    void add_column(std::int64_t c, float x, bool unit, float* y, std::int64_t r0,
                    std::int64_t r1) const;
    float at(std::int64_t r, std::int64_t c) const;
    // Dense storage only: the column of input c (out() floats), else nullptr.
    const float* dense_column(std::int64_t c) const {
        return sparse_ ? nullptr : dense_.data() + c * out_;
    }
    // Hints the memory system about a column some events ahead: stage 0 fetches its offsets
    // (one line for every block's run), stage 1 the synapses of blocks [b0, b1) (needs the offsets,
    // fetched earlier by stage 0).
    void prefetch(std::int64_t c, std::int64_t b0, std::int64_t b1, int stage) const {
        if (!sparse_) {
            if (stage == 1) __builtin_prefetch(dense_.data() + c * out_ + b0 * block_);
            return;
        }
        if (stage == 0) {
            __builtin_prefetch(colptr_.data() + run_at(c, b0));
        } else {
            // The runs of blocks [b0, b1) of this column, one cache line at a time.
            const auto k0 = colptr_[run_at(c, b0)], k1 = colptr_[run_at(c, b1)];
            for (auto k = k0; k < k1; k += 32) __builtin_prefetch(rows_.data() + k);
            if (!vals_.empty())
                for (auto k = k0; k < k1; k += 16) __builtin_prefetch(vals_.data() + k);
            else if (!codes_.empty())
                for (auto k = k0; k < k1; k += 64) __builtin_prefetch(codes_.data() + k);
        }
    }
    // How many events ahead stage 1 prefetches so that about 512 synapses are in flight:
    // delivery is bound by memory latency, and a block's runs shrink as blocks multiply.
    std::size_t prefetch_distance() const { return prefetch_events_; }

  private:
    std::int64_t out_ = 0, in_ = 0;
    bool sparse_ = false;
    std::uint64_t nnz_ = 0;
    std::vector<std::uint32_t> col_nnz_;
    std::vector<float> dense_;  // column-major [in][out]
    // Sparse: the synapses of column c in block b (block-local rows, and the weights) are
    // [colptr_[run_at(c, b)], colptr_[run_at(c, b) + 1]). A column's runs for all blocks lie one
    // after another, so splitting rows into blocks costs no extra memory traffic per event.
    // per synapse (vals_), through a codebook (codes_ into codebook_), or one shared value.
    struct Syn {
        std::uint32_t row;
        float w;
    };
    void compact(std::vector<Syn>& syn);
    template <class W>
    void deliver(std::uint64_t k0, std::uint64_t k1, float* yb, float x, bool unit, W weight) const;
    bool use_codebook_ = true;
    int parts_ = 1;
    std::int64_t block_ = 1;
    void choose_block() {
        block_ = std::min(row_part_size(out_, parts_), kMaxBlock);
        stride_ = nblocks() + 1;
    }
    std::size_t run_at(std::int64_t c, std::int64_t b) const {
        return static_cast<std::size_t>(c * stride_ + b);
    }
    // Stored rows count from the layer's first row while every row fits 16 bits, so a pass
    // over several blocks (one thread running them all) reads a column as one run; else from
    // each block's first row (row_base).
    bool whole_layer_rows() const { return out_ <= kMaxBlock; }
    std::int64_t row_base(std::int64_t b) const { return whole_layer_rows() ? 0 : b * block_; }
    std::int64_t stride_ = 2;
    std::size_t prefetch_events_ = 4;
    // 32-bit offsets: no tensor, so no synapse count, exceeds kMaxElements (2^31).
    std::vector<std::uint32_t> colptr_;
    std::vector<std::uint16_t> rows_;
    std::vector<float> vals_;
    std::vector<std::uint8_t> codes_;
    std::vector<float> codebook_;
};

}  // namespace ternion
