// Internal building blocks of the ANN reference attentions (not part of the public API):
// projections, the tiled softmax attention core, LayerNorm, and their operation counts.
#pragma once
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "attention/ann/ann_attention.hpp"
#include "attention/ann/ann_gemm.hpp"
#include "attention/ann/fft.hpp"
#include "sim/core/memory.hpp"  // prefer_huge_pages, LargeVector

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

// A read-only view of a row-major matrix or of a column block of one (no copy).
using CRef = Eigen::Ref<const MatR, 0, Eigen::OuterStride<>>;

// Scratch objects kept between forward passes, so large buffers are not allocated (and
// page-faulted) again on every call. acquire() hands out an object no other caller holds,
// which keeps forward() safe to run concurrently and re-entrantly (TBB may run another
// forward() on a thread that waits inside a parallel loop); release happens on destruction
// of the lease. At most one object per concurrent caller is ever created.
template <class T>
class ScratchPool {
  public:
    struct Deleter {
        ScratchPool* pool;
        void operator()(T* p) const { pool->give_back(p); }
    };
    using Lease = std::unique_ptr<T, Deleter>;
    Lease acquire() {
        {
            std::lock_guard<std::mutex> lock(mu_);
            if (!free_.empty()) {
                T* p = free_.back().release();
                free_.pop_back();
                return Lease(p, Deleter{this});
            }
        }
        return Lease(new T(), Deleter{this});
    }

  private:
    void give_back(T* p) {
        std::lock_guard<std::mutex> lock(mu_);
        free_.emplace_back(p);
    }
    std::mutex mu_;
    std::vector<std::unique_ptr<T>> free_;
};

// y = x W + b with W [in, out].
struct Linear {
    MatR W;
    RowVec b;  // empty: no bias
    // W packed for gemm_packed; set by pack() once W is final (shared: copies stay cheap).
    std::shared_ptr<const PackedMatrix> packed;
    void pack() {
        packed = packed_gemm_available()
                     ? std::make_shared<const PackedMatrix>(W.data(), W.cols(), W.rows(), W.cols())
                     : nullptr;
    }
    // The packed weights when they match W (pack() ran after W was last set), else null.
    const PackedMatrix* usable_packed() const {
        return packed && packed->k() == W.rows() && packed->n() == W.cols() ? packed.get()
                                                                            : nullptr;
    }
    std::int64_t in() const { return W.rows(); }
    std::int64_t out() const { return W.cols(); }
    void apply(const CRef& x, MatR& y, bool parallel) const;
    OpCounts ops(std::int64_t n) const;
    std::uint64_t params() const { return static_cast<std::uint64_t>(W.size() + b.size()); }
};

// A [rows, cols] float matrix stored as column groups of 16: element (i, j) at
// data()[(j / 16) * gstride() + 16 i + j % 16]. A group is a contiguous [rows][16] block, one
// 64-byte line per row, which is the FFT kernel's own layout: CAT's mixing transforms each group
// of V where the projection wrote it, and the output projection reads it back (gemm_packed
// takes either layout). Row-major [n, D] V made the kernel gather and scatter one line per row
// 2 KiB apart, 8 of the 23 ms of mixing at N = 16384, D = 512.
class GroupMatrix {
  public:
    // Contents are unspecified after a change of shape (zero when the buffer grows).
    void resize(std::int64_t rows, std::int64_t cols);
    std::int64_t rows() const { return rows_; }
    std::int64_t cols() const { return cols_; }
    std::int64_t groups() const { return (cols_ + 15) / 16; }
    std::int64_t gstride() const { return rows_ * 16; }
    float* data() { return data_.data(); }
    const float* data() const { return data_.data(); }
    float* group(std::int64_t g) { return data() + g * gstride(); }
    Layout layout() const { return Layout{16, gstride()}; }
    float& at(std::int64_t i, std::int64_t j) { return data()[layout().at(i, j)]; }
    float at(std::int64_t i, std::int64_t j) const { return data()[layout().at(i, j)]; }

  private:
    std::int64_t rows_ = 0, cols_ = 0;
    LargeVector<float> data_;  // huge pages when large (sim/core/memory.hpp)
};

// y = x W + b (x row-major) into a GroupMatrix sized [x.rows(), l.out()].
void project_to_groups(const Linear& l, const CRef& x, GroupMatrix& y, bool parallel);
// y = x[:, 0 .. l.in()) W + b, x a GroupMatrix, into a row-major destination already sized
// [x.rows(), l.out()].
void project_from_groups(const Linear& l, const GroupMatrix& x, Eigen::Ref<MatR> y, bool parallel);

// y = x W + b into any Eigen destination already sized [x.rows(), l.out()] (row- or
// column-major, a Map of the caller's output). The bias is written first and the product
// accumulated onto it, which saves the zeroing pass of `y = x W` and the separate bias pass.
template <class In, class Out>
void project_into(const Linear& l, const In& x, Out&& y, bool parallel) {
    const PackedMatrix* packed =
        x.innerStride() == 1 && y.innerStride() == 1 ? l.usable_packed() : nullptr;
    // Row blocks of x are independent GEMMs; one block when serial keeps Eigen's blocking.
    for_range(x.rows(), 256, parallel, [&](std::int64_t lo, std::int64_t hi) {
        if (packed) {
            gemm_packed(x.data() + lo * x.outerStride(), x.outerStride(), hi - lo, *packed,
                        l.b.size() ? l.b.data() : nullptr, y.data() + lo * y.outerStride(),
                        y.outerStride());
            return;
        }
        auto yb = y.middleRows(lo, hi - lo);
        if (l.b.size()) {
            yb.rowwise() = l.b;
            yb.noalias() += x.middleRows(lo, hi - lo) * l.W;
        } else {
            yb.noalias() = x.middleRows(lo, hi - lo) * l.W;
        }
    });
}

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

// One head's scores for query rows [i0, i0 + S.rows()) against the first S.cols() keys,
// S = (scale Q_h) K_h^T, computed as mhsa_core computes them (so maps equal the forward's).
void head_scores(const CRef& Q, const CRef& K, std::int64_t heads, float scale, bool causal,
                 std::int64_t h, std::int64_t i0, Eigen::Map<MatR>& S);
// exp(s - max of its row) for every row of S, as mhsa_core takes it.
void softmax_rows(Eigen::Map<MatR>& S);
// Multi-head softmax attention core: for every head h, O_h = softmax(Q_h K_h^T * scale) V_h,
// with Q [n, dq], K [m, dq], V [m, dv] split into `heads` equal column slices. Query rows are
// processed in tiles, so memory is O(tile * m), never n x m.
void mhsa_core(const CRef& Q, const CRef& K, const CRef& V, std::int64_t heads, float scale,
               bool causal, MatR& O, bool parallel);
OpCounts mhsa_core_ops(std::int64_t n, std::int64_t m, std::int64_t dq, std::int64_t dv,
                       std::int64_t heads, bool causal);

// FFT plans and buffers of one CAT mixing task, rebuilt only when the length changes.
struct ConvWork {
    std::int64_t L = 0;
    std::unique_ptr<RealFft> plan;
    std::unique_ptr<ChannelConvolver> conv;  // null unless L is a power of two
    std::vector<float> pad, out;
    std::vector<cfloat> zf, vf;
    Eigen::VectorXf z;
    void ensure(std::int64_t len);
};

// CAT mixing of all heads, in place: head h convolves channels [h c, (h+1) c) of V (the first
// H c = `channels` columns) with column h of zs; circular (FFT length n) or causal
// (zero-padded). Plans and buffers come from `work`.
void convolve_heads(const MatR& zs, GroupMatrix& V, std::int64_t channels, bool causal,
                    bool parallel, ScratchPool<ConvWork>& work);

// Row-wise LayerNorm (biased variance) with gain and bias.
void layer_norm(const MatR& x, const RowVec& gamma, const RowVec& beta, float eps, MatR& y);
OpCounts layer_norm_ops(std::int64_t n, std::int64_t w);

// Counter helpers.
inline std::uint64_t u64(std::int64_t v) {
    return static_cast<std::uint64_t>(v);
}
OpCounts weights_read(std::uint64_t params);

}  // namespace ternion::ann
