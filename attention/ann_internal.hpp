// Internal building blocks of the ANN reference attentions (not part of the public API):
// projections, the tiled softmax attention core, LayerNorm, and their operation counts.
#pragma once
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <string>

#include "attention/ann_attention.hpp"

namespace ternion::ann {

// Calls f(begin, end) over blocks of [0, n); in parallel only when asked, so one code path
// serves both the engine's single-threaded steps and multi-threaded benchmarks.
template <class F>
void for_range(std::int64_t n, std::int64_t grain, bool parallel, F&& f) {
    if (!parallel || n <= grain) {
        f(std::int64_t{0}, n);
        return;
    }
    // Isolated: inside a multi-sample run, a waiting thread must not pick up another sample.
    tbb::this_task_arena::isolate([&] {
        tbb::parallel_for(
            tbb::blocked_range<std::int64_t>(0, n, grain),
            [&](const tbb::blocked_range<std::int64_t>& r) { f(r.begin(), r.end()); });
    });
}

// y = x W + b with W [in, out].
struct Linear {
    MatR W;
    RowVec b;  // empty: no bias
    std::int64_t in() const { return W.rows(); }
    std::int64_t out() const { return W.cols(); }
    void apply(const MatR& x, MatR& y, bool parallel) const;
    OpCounts ops(std::int64_t n) const;
    std::uint64_t params() const { return static_cast<std::uint64_t>(W.size() + b.size()); }
};

// Reads W [in, out] (required) and bias b [out] (optional).
Linear load_linear(const WeightSource& w, const std::string& wname, const std::string& bname,
                   std::int64_t in, std::int64_t out);
// A [rows, cols] matrix, exactly that shape.
MatR load_matrix(const WeightSource& w, const std::string& name, std::int64_t rows,
                 std::int64_t cols);
// A vector of exactly n values (any shape with n elements).
RowVec load_vector(const WeightSource& w, const std::string& name, std::int64_t n);
// Shape of a required parameter, checked to have `rank` axes.
Shape param_dims(const WeightSource& w, const std::string& name, std::size_t rank);
bool flag(const WeightSource& w, const std::string& name, std::optional<bool> over, bool dflt);
std::int64_t heads_param(const WeightSource& w, const Options& o, std::int64_t dim,
                         const std::string& dim_name);

// Multi-head softmax attention core: for every head h, O_h = softmax(Q_h K_h^T * scale) V_h,
// with Q [n, dq], K [m, dq], V [m, dv] split into `heads` equal column slices. Query rows are
// processed in tiles, so memory is O(tile * m), never n x m.
void mhsa_core(const MatR& Q, const MatR& K, const MatR& V, std::int64_t heads, float scale,
               bool causal, MatR& O, bool parallel);
OpCounts mhsa_core_ops(std::int64_t n, std::int64_t m, std::int64_t dq, std::int64_t dv,
                       std::int64_t heads, bool causal);

// CAT mixing of all heads: head h convolves channels [h c, (h+1) c) of V (column-major
// [n, H c]) with column h of zs; circular (FFT length n) or causal (zero-padded).
void convolve_heads(const MatR& zs, const Eigen::MatrixXf& V, Eigen::MatrixXf& Y, bool causal,
                    bool parallel);

// Row-wise LayerNorm (biased variance) with gain and bias.
void layer_norm(const MatR& x, const RowVec& gamma, const RowVec& beta, float eps, MatR& y);
OpCounts layer_norm_ops(std::int64_t n, std::int64_t w);

// Counter helpers.
inline std::uint64_t u64(std::int64_t v) {
    return static_cast<std::uint64_t>(v);
}
OpCounts weights_read(std::uint64_t params);

}  // namespace ternion::ann
