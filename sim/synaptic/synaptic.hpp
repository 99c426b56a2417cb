// Synaptic and structural node types: Input, Output, Identity, Affine/Linear, Scale,
// Conv1d/Conv2d, SumPool2d/AvgPool2d/MaxPool2d, Flatten, Delay, and the token helpers of
// spiking Transformers (Tokens, TokenMean). Event-driven steps touch only non-zero inputs and
// sum in ascending input order, exactly as the dense steps do, so both engines agree bit for bit.
#pragma once
#include <array>
#include <cmath>
#include <memory>
#include <optional>

#include "sim/core/memory.hpp"
#include "sim/core/node_spec.hpp"
#include "sim/kernels/event_cost.hpp"

namespace ternion {

// The one BatchNorm fold (inference): weights [out][rest] row-major and bias [out] (created as
// zeros when empty) become w' = w g and b' = (b - mean) g + beta, g = gamma / sqrt(var + eps),
// in double precision and rounded once to float.
void fold_batchnorm(std::vector<float>& weight, std::vector<float>& bias, std::int64_t out,
                    const std::vector<float>& gamma, const std::vector<float>& beta,
                    const std::vector<float>& mean, const std::vector<float>& var, double eps);
// An eval-mode BatchNorm's parameters: `<p>weight` (gamma) and `<p>bias` (beta), 1 and 0 when
// absent, `<p>running_mean` and `<p>running_var` (0 and 1 when absent and `optional_stats`),
// `<p>eps` (1e-5), each per channel or one value; checked (variance and eps non-negative).
struct BatchNormParams {
    std::vector<float> gamma, beta, mean, var;
    double eps = 1e-5;
};
BatchNormParams read_batchnorm(const NodeSpec& spec, const std::string& p, std::int64_t out,
                               bool optional_stats);
// Reads an eval-mode BatchNorm given as `<prefix>bn_weight`, `bn_bias`, `bn_running_mean`,
// `bn_running_var`, `bn_eps` and folds it in. Returns false (and changes nothing) when the
// datasets are absent.
bool fold_batchnorm(const NodeSpec& spec, const std::string& prefix, std::int64_t out,
                    std::vector<float>& weight, std::vector<float>& bias);

// An eval-mode BatchNorm kept unfolded and applied to a layer's output values, computed in
// float32 the way PyTorch's CPU kernels compute it, so that a membrane fed by it matches
// PyTorch's to the last bit (folding it into the weights rounds differently). invstd =
// 1 / sqrt(var + eps) in float32. Forms, per output channel:
//   normalize: ((y - mean) * invstd) * gamma + beta, one rounding per operation (PyTorch's
//              elementwise path, taken when the input is not contiguous, e.g. BatchNorm1d on
//              transposed tokens);
//   fma:       fma(y, alpha, fma(-mean, alpha, beta)), alpha = invstd * gamma (its contiguous
//              kernel, e.g. Conv2d + BatchNorm2d, with fused multiply-adds).
class BatchNorm {
  public:
    enum class Form { normalize, fma };
    BatchNorm() = default;
    BatchNorm(const std::vector<float>& gamma, const std::vector<float>& beta,
              const std::vector<float>& mean, const std::vector<float>& var, double eps, Form form);
    // Stacks the channels of several (Q|K|V).
    static BatchNorm concat(const std::vector<const BatchNorm*>& parts);
    std::int64_t channels() const { return static_cast<std::int64_t>(mean_.size()); }
    bool empty() const { return mean_.empty(); }
    float apply(float y, std::size_t c) const {
        if (fma_[c]) return std::fma(y, alpha_[c], shift_[c]);
        return ((y - mean_[c]) * invstd_[c]) * gamma_[c] + beta_[c];
    }
    // y [rows][channels], channels last.
    void apply_rows(float* y, std::int64_t rows) const;

  private:
    std::vector<float> mean_, invstd_, gamma_, beta_, alpha_, shift_;
    std::vector<std::uint8_t> fma_;  // per channel: the fma form
};

// `<prefix>bn_form`: "fold" (absent: folded into the weights) or a BatchNorm::Form's name.
std::optional<BatchNorm::Form> batchnorm_form(const NodeSpec& spec, const std::string& prefix);

// How one run splits a Linear layer's rows among its threads: blocks of whole 64-row groups, one
// per thread (row_part_size, as neuron layers split, so each thread reads the rows it wrote), and
// for compressed weights each column's synapse offset at every block boundary. Made per run by
// ColumnWeights::split from the stored weights, which do not depend on the thread count; the
// split never changes results, only which thread adds which rows.
struct RowSplit {
    std::int64_t parts = 0;    // the thread count it was made for (0: not made yet)
    std::int64_t block = 64;   // rows per block
    std::int64_t nblocks = 0;  // blocks that hold rows (at most parts)
    // Compressed weights: [in][nblocks + 1], the first synapse of column c at or past each
    // block's first row, then the column's end.
    std::vector<std::uint32_t> bounds;
    // How many events ahead delivery prefetches a column's synapses so that about 512 are in
    // flight (memory latency bounds delivery, and a block's runs shrink as blocks multiply).
    std::size_t prefetch_events = 4;
    std::int64_t row_begin(std::int64_t b) const { return b * block; }
};

// Dense or compressed weights of a Linear map [in] -> [out], stored by input column so that
// a spike at input c adds column c. The stored layout depends on the weights alone; a run splits
// the rows among its threads with a RowSplit.
class ColumnWeights {
  public:
    // Compressed weights store 16-bit row numbers: a layer of at most 65472 rows (whole 64-row
    // groups) as one storage block of whole-layer rows, so a column is one run of ascending rows;
    // a larger layer as the fewest equal storage blocks of block-local rows, a column's runs for
    // consecutive storage blocks lying one after another.
    static constexpr std::int64_t kMaxBlock = 65472;  // 1023 cache lines of rows
    // Rows per storage block, and their number.
    std::int64_t block() const { return block_; }
    std::int64_t nblocks() const { return (out_ + block_ - 1) / block_; }
    // A split of the rows into one block per thread (`parts` threads) for delivery.
    void split(std::int64_t parts, RowSplit& s) const;
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
    // How the weights are stored, for the event-cost rule's bytes per synapse.
    WeightStorage storage() const {
        using V = WeightStorage::Values;
        return {sparse_,
                !vals_.empty() ? V::float32 : (!codes_.empty() ? V::codebook : V::one_value),
                int_bytes_};
    }
    std::size_t codebook_size() const { return codebook_.size(); }
    std::uint64_t nnz() const { return nnz_; }
    std::uint32_t col_nnz(std::int64_t c) const { return col_nnz_[static_cast<std::size_t>(c)]; }
    // Non-zero weights of each output row (a walk over every stored synapse).
    std::vector<std::int64_t> row_nnz() const;
    // y[rows of blocks b0..b1) += s * W[rows, c] (s = +1/-1) or x * W (analog).
    void add_column(std::int64_t c, float x, bool unit, float* y, const RowSplit& s,
                    std::int64_t b0, std::int64_t b1) const;
    float at(std::int64_t r, std::int64_t c) const;
    // Dense storage only: the column of input c (out() floats), else nullptr.
    const float* dense_column(std::int64_t c) const {
        return sparse_ ? nullptr : dense_.data() + c * out_;
    }
    // Hints the memory system about a column some events ahead: stage 0 fetches its offsets
    // (one line for every block's bound), stage 1 the synapses of blocks [b0, b1) (needs the
    // offsets, fetched earlier by stage 0).
    void prefetch(std::int64_t c, const RowSplit& s, std::int64_t b0, std::int64_t b1,
                  int stage) const {
        if (!sparse_) {
            if (stage == 1) __builtin_prefetch(dense_.data() + c * out_ + s.row_begin(b0));
            return;
        }
        // One block over one stored run (one thread, a layer of at most kMaxBlock rows): the
        // stored offsets, as add_column reads them; else the split's bounds.
        const bool whole = s.nblocks == 1 && stride_ == 2;
        const std::uint32_t* bd =
            whole ? colptr_.data() + run_at(c, 0) : s.bounds.data() + c * (s.nblocks + 1);
        if (stage == 0) {
            __builtin_prefetch(bd + b0);
        } else {
            // The synapses of blocks [b0, b1) of this column, one cache line at a time.
            const auto k0 = bd[b0], k1 = bd[b1];
            for (auto k = k0; k < k1; k += 32) __builtin_prefetch(rows_.data() + k);
            if (!vals_.empty())
                for (auto k = k0; k < k1; k += 16) __builtin_prefetch(vals_.data() + k);
            else if (!codes_.empty())
                for (auto k = k0; k < k1; k += 64) __builtin_prefetch(codes_.data() + k);
        }
    }

  private:
    std::int64_t out_ = 0, in_ = 0;
    bool sparse_ = false;
    std::uint64_t nnz_ = 0;
    std::vector<std::uint32_t> col_nnz_;
    // Large arrays on huge pages where the kernel offers them: a spike reads a random column,
    // so on 4 KiB pages nearly every event of a large layer also misses the TLB.
    LargeVector<float> dense_;  // column-major [in][out]
    // Sparse: the synapses of column c in storage block b (block-local rows, and the weights)
    // are [colptr_[run_at(c, b)], colptr_[run_at(c, b) + 1]), rows ascending; a column's runs
    // for all storage blocks lie one after another. Weights are stored per synapse (vals_),
    // through a codebook (codes_ into codebook_), or as one shared value.
    struct Syn {
        std::uint32_t row;
        float w;
    };
    void compact(std::vector<Syn>& syn);
    std::size_t guess_at(std::int64_t c, std::int64_t sb, std::int64_t r) const;
    std::uint32_t first_at_or_past(std::int64_t c, std::int64_t sb, std::uint16_t r) const;
    template <class W>
    void deliver(std::uint64_t k0, std::uint64_t k1, float* yb, float x, bool unit, W weight) const;
    void deliver_run(std::uint64_t k0, std::uint64_t k1, float* yb, float x, bool unit) const;
    bool use_codebook_ = true;
    int int_bytes_ = 0;       // integer weights: their bytes each (WeightStorage::int_bytes)
    std::int64_t block_ = 1;  // rows per storage block
    // The fewest storage blocks of at most kMaxBlock rows, of equal whole 64-row groups.
    void choose_block() {
        block_ = std::min(row_part_size(out_, (out_ + kMaxBlock - 1) / kMaxBlock), kMaxBlock);
        stride_ = nblocks() + 1;
    }
    std::size_t run_at(std::int64_t c, std::int64_t b) const {
        return static_cast<std::size_t>(c * stride_ + b);
    }
    std::int64_t row_base(std::int64_t b) const { return b * block_; }
    std::int64_t stride_ = 2;
    // 32-bit offsets: no tensor, so no synapse count, exceeds kMaxElements (2^31).
    LargeVector<std::uint32_t> colptr_;
    LargeVector<std::uint16_t> rows_;
    LargeVector<float> vals_;
    LargeVector<std::uint8_t> codes_;
    std::vector<float> codebook_;
};

// Registers the connection node types (sim/synaptic/synaptic.cpp).
void register_synaptic_nodes(NodeFactory& f);

}  // namespace ternion
