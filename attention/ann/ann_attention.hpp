// ANN reference attentions: float32 forward passes (softmax MHSA, CAT and its causal and
// averaged-key variants, linear attention, Primal-Attention, functional time embeddings, NPT)
// that users compare the spiking attentions against. Every forward pass reports its work in
// the same OpCounts the spiking nodes use, so the cost model prices both alike.
// Conventions (docs/ann-attention.md): row vectors, a projection computes x * W with W stored
// [in, out]; parameters are named after the PyTorch ones (W_Q, b_Q, W_A, ...).
#pragma once
#include <Eigen/Core>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/core/shape.hpp"
#include "sim/kernels/op_counts.hpp"

namespace ternion {
class NodeSpec;
namespace h5 {
class Reader;
}
}  // namespace ternion

namespace ternion::ann {

using MatR = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using RowVec = Eigen::Matrix<float, 1, Eigen::Dynamic>;

struct Tensor {
    std::vector<float> data;
    Shape dims;
};

// Where a kind's parameters come from: an HDF5 weights file, a node group of a model file or
// memory (tests, benchmarks). Errors name the file (or label) and the parameter.
class WeightSource {
  public:
    virtual ~WeightSource() = default;
    virtual bool has(const std::string& name) const = 0;
    // Finite float values and their stored shape; throws InputError when missing.
    virtual Tensor get(const std::string& name) const = 0;
    [[noreturn]] virtual void fail(const std::string& name, const std::string& what) const = 0;
    // A scalar parameter (a 0-d or 1-element dataset) when present.
    std::optional<double> scalar(const std::string& name) const;
};

// Datasets below `prefix` of an HDF5 file ("/" for a weights file).
class H5Weights : public WeightSource {
  public:
    explicit H5Weights(const h5::Reader& r, std::string prefix = "/");
    bool has(const std::string& name) const override;
    Tensor get(const std::string& name) const override;
    [[noreturn]] void fail(const std::string& name, const std::string& what) const override;

  private:
    std::string path(const std::string& name) const;
    const h5::Reader& r_;
    std::string prefix_;
};

// Parameters of one node of a model file.
class SpecWeights : public WeightSource {
  public:
    explicit SpecWeights(const NodeSpec& s) : s_(s) {}
    bool has(const std::string& name) const override;
    Tensor get(const std::string& name) const override;
    [[noreturn]] void fail(const std::string& name, const std::string& what) const override;

  private:
    const NodeSpec& s_;
};

// In-memory parameters (tests and `ternion bench`).
class MapWeights : public WeightSource {
  public:
    explicit MapWeights(std::string label = "<memory>") : label_(std::move(label)) {}
    void set(const std::string& name, std::vector<float> data, Shape dims);
    void set_scalar(const std::string& name, double v) { set(name, {static_cast<float>(v)}, {}); }
    std::vector<float>& at(const std::string& name) { return map_.at(name).data; }
    const std::map<std::string, Tensor>& entries() const { return map_; }
    bool has(const std::string& name) const override { return map_.count(name) > 0; }
    Tensor get(const std::string& name) const override;
    [[noreturn]] void fail(const std::string& name, const std::string& what) const override;

  private:
    std::string label_;
    std::map<std::string, Tensor> map_;
};

// Settings that override the scalar parameters of the same name in the weights.
struct Options {
    std::int64_t heads = 0;           // 0: from the weights ("heads", or W_A's columns)
    std::optional<bool> causal;       // softmax / time kinds: mask future keys
    std::optional<bool> renormalize;  // cat-causal: rescale each row's weights to sum 1
};

// One attention kind with its parameters loaded. Immutable; forward() may run concurrently.
class Attention {
  public:
    virtual ~Attention() = default;
    const std::string& kind() const { return kind_; }
    std::int64_t in_dim() const { return in_dim_; }    // channels of x per token
    std::int64_t out_dim() const { return out_dim_; }  // channels of y per token
    std::int64_t heads() const { return heads_; }
    // Time kinds read one time stamp per token besides x.
    virtual bool needs_time() const { return false; }
    virtual std::uint64_t param_count() const = 0;
    // Operations of one forward pass over n tokens (closed forms; docs/ann-attention.md).
    virtual OpCounts op_counts(std::int64_t n) const = 0;

    // x [n, in_dim] and y [n, out_dim] row-major, t [n] for time kinds (else ignored).
    // Adds op_counts(n) to *ops when given. `parallel` lets it split work over TBB threads;
    // results do not depend on it.
    void forward(const float* x, const float* t, std::int64_t n, float* y, OpCounts* ops,
                 bool parallel = false) const;
    // Attention maps of the forward pass over x, for traces: per head [heads, n, n] row-major,
    // `scores` the scaled logits (-inf where a causal mask hides a key) and `weights` the
    // softmax. Recomputed from x, so forward() stays as fast; false for kinds without an
    // explicit n x n map (CAT, linear, Primal, time kinds, NPT).
    virtual bool maps(const float* x, const float* t, std::int64_t n, std::vector<float>& scores,
                      std::vector<float>& weights) const {
        (void)x, (void)t, (void)n, (void)scores, (void)weights;
        return false;
    }

  protected:
    Attention(std::string kind, std::int64_t in, std::int64_t out, std::int64_t heads)
        : kind_(std::move(kind)), in_dim_(in), out_dim_(out), heads_(heads) {}
    virtual void run(const MatR& x, const float* t, MatR& y, bool parallel) const = 0;
    // Optional fast path reading x and writing y (row-major, as in forward()) in place,
    // without copying them into matrices first; false when the kind has none.
    virtual bool run_direct(const float* x, const float* t, std::int64_t n, float* y,
                            bool parallel) const {
        (void)x, (void)t, (void)n, (void)y, (void)parallel;
        return false;
    }

  private:
    std::string kind_;
    std::int64_t in_dim_, out_dim_, heads_;
};

// Every kind name accepted by make_attention, in documentation order.
const std::vector<std::string>& kinds();
// Loads and validates a kind's parameters; throws InputError naming the parameter.
std::unique_ptr<Attention> make_attention(const std::string& kind, const WeightSource& w,
                                          const Options& opt = {});
// Random parameters of width `dim` with `heads` heads (PyTorch-like uniform init), for
// benchmarks and tests. Deterministic in `seed`.
MapWeights random_weights(const std::string& kind, std::int64_t dim, std::int64_t heads,
                          std::uint64_t seed);

// ----- building blocks, exposed for tests -----

// CAT's token mixing for one head: y = Roll(z) v with Roll[i, j] = z[(i - j) mod n]
// (circular convolution), through a real FFT of length exactly n. z [n], v and y [n, c]
// column-major (each channel contiguous).
void circular_convolve(const float* z, const float* v, float* y, std::int64_t n,
                       std::int64_t channels);
// Causal form y_i = sum_{j <= i} z[i - j] v_j via zero padding to >= 2n - 1.
void causal_convolve(const float* z, const float* v, float* y, std::int64_t n,
                     std::int64_t channels);
// FFT length the causal variant uses for n tokens.
std::int64_t causal_fft_length(std::int64_t n);
// Primal-Attention's evenly sampled token indices: floor(linspace(0, n - 1, m)), or all n
// tokens when n <= m.
std::vector<std::int64_t> primal_sample_indices(std::int64_t n, std::int64_t m);
// Functional time embeddings of one time stamp (docs: layouts of the parameters).
void bochner_embed(const float* omega_sin, const float* omega_cos, const float* beta,
                   std::int64_t d, float t, float* out);
void mercer_embed(const float* omega, const float* basis, const float* bias, std::int64_t dt,
                  std::int64_t k, float t, float* out);
// Mercer's default frequencies: omega_i = 10^-theta_i with theta = linspace(0, 8, dt).
std::vector<float> mercer_default_omega(std::int64_t dt);

}  // namespace ternion::ann

namespace ternion {
class NodeFactory;
// Registers the ANN reference attention node types (ann_register.cpp).
void register_ann_attention_nodes(NodeFactory& f);
}  // namespace ternion
