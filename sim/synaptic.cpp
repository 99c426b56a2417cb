#include "synaptic.hpp"

#include "event_cost.hpp"
#include "token_kernel.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ternion {

// ------------------------------------------------------------------ helpers

void fold_batchnorm(std::vector<float>& weight, std::vector<float>& bias, std::int64_t out,
                    const std::vector<float>& gamma, const std::vector<float>& beta,
                    const std::vector<float>& mean, const std::vector<float>& var, double eps) {
    const std::size_t per = weight.size() / static_cast<std::size_t>(out);
    if (bias.empty()) bias.assign(static_cast<std::size_t>(out), 0.0f);
    for (std::int64_t o = 0; o < out; ++o) {
        const auto k = static_cast<std::size_t>(o);
        const double g = double(gamma[k]) / std::sqrt(double(var[k]) + eps);
        for (std::size_t j = 0; j < per; ++j) {
            float& w = weight[k * per + j];
            w = static_cast<float>(double(w) * g);
        }
        bias[k] = static_cast<float>((double(bias[k]) - double(mean[k])) * g + double(beta[k]));
    }
}

bool fold_batchnorm(const NodeSpec& spec, const std::string& prefix, std::int64_t out,
                    std::vector<float>& weight, std::vector<float>& bias) {
    if (!spec.has(prefix + "bn_weight") && !spec.has(prefix + "bn_running_mean")) return false;
    auto gamma = spec.per_neuron_or(prefix + "bn_weight", out, 1.0f);
    auto beta = spec.per_neuron_or(prefix + "bn_bias", out, 0.0f);
    auto mean = spec.per_neuron(prefix + "bn_running_mean", out);
    auto var = spec.per_neuron(prefix + "bn_running_var", out);
    double eps = spec.scalar_or(prefix + "bn_eps", 1e-5);
    if (eps < 0) spec.fail(prefix + "bn_eps", "must be non-negative");
    for (float v : var) {
        if (v < 0) spec.fail(prefix + "bn_running_var", "must be non-negative");
        if (v + eps <= 0) spec.fail(prefix + "bn_running_var", "variance + eps is zero");
    }
    fold_batchnorm(weight, bias, out, gamma, beta, mean, var, eps);
    return true;
}

void ColumnWeights::build(const std::vector<float>& w, std::int64_t out, std::int64_t in) {
    out_ = out;
    in_ = in;
    col_nnz_.assign(static_cast<std::size_t>(in), 0);
    nnz_ = 0;
    for (std::int64_t r = 0; r < out; ++r)
        for (std::int64_t c = 0; c < in; ++c)
            if (w[static_cast<std::size_t>(r * in + c)] != 0.0f) {
                ++col_nnz_[static_cast<std::size_t>(c)];
                ++nnz_;
            }
    double density = out * in > 0 ? static_cast<double>(nnz_) / static_cast<double>(out * in) : 1;
    // Below a quarter non-zero, index+value (6 bytes) beats a dense column (4 bytes/row).
    sparse_ = density < 0.25;
    choose_block();
    dense_.clear();
    colptr_.clear();
    rows_.clear();
    vals_.clear();
    codes_.clear();
    codebook_.clear();
    if (!sparse_) {
        dense_.resize(static_cast<std::size_t>(in * out));
        for (std::int64_t r = 0; r < out; ++r)
            for (std::int64_t c = 0; c < in; ++c)
                dense_[static_cast<std::size_t>(c * out + r)] =
                    w[static_cast<std::size_t>(r * in + c)];
        return;
    }
    const std::int64_t nb = nblocks(), kBlock = block_;
    colptr_.assign(static_cast<std::size_t>(in * (nb + 1)), 0);
    std::vector<Syn> syn;
    syn.reserve(nnz_);
    for (std::int64_t c = 0; c < in; ++c) {
        for (std::int64_t b = 0; b < nb; ++b) {
            colptr_[run_at(c, b)] = static_cast<std::uint32_t>(syn.size());
            const std::int64_t r0 = b * kBlock, r1 = std::min(out, r0 + kBlock);
            for (std::int64_t r = r0; r < r1; ++r) {
                float v = w[static_cast<std::size_t>(r * in + c)];
                if (v != 0.0f) syn.push_back({static_cast<std::uint32_t>(r - row_base(b)), v});
            }
        }
        colptr_[run_at(c, nb)] = static_cast<std::uint32_t>(syn.size());
    }
    compact(syn);
}

void ColumnWeights::compact(std::vector<Syn>& syn) {
    const double run = static_cast<double>(syn.size()) /
                       static_cast<double>(std::max<std::int64_t>(1, in_ * nblocks()));
    prefetch_events_ =
        static_cast<std::size_t>(std::clamp(std::ceil(512.0 / std::max(run, 1.0)), 4.0, 16.0));
    rows_.resize(syn.size());
    for (std::size_t k = 0; k < syn.size(); ++k) rows_[k] = static_cast<std::uint16_t>(syn[k].row);
    vals_.clear();
    codes_.clear();
    codebook_.clear();
    if (use_codebook_) {
        std::vector<float> distinct;
        for (const auto& e : syn) {
            auto it = std::lower_bound(distinct.begin(), distinct.end(), e.w);
            if (it == distinct.end() || *it != e.w) {
                if (distinct.size() == 256) {
                    distinct.clear();
                    break;
                }
                distinct.insert(it, e.w);
            }
        }
        if (!distinct.empty()) {
            codebook_ = distinct;
            if (codebook_.size() > 1) {
                codes_.resize(syn.size());
                for (std::size_t k = 0; k < syn.size(); ++k)
                    codes_[k] = static_cast<std::uint8_t>(
                        std::lower_bound(codebook_.begin(), codebook_.end(), syn[k].w) -
                        codebook_.begin());
            }
            syn.clear();
            syn.shrink_to_fit();
            return;
        }
    }
    vals_.resize(syn.size());
    for (std::size_t k = 0; k < syn.size(); ++k) vals_[k] = syn[k].w;
    syn.clear();
    syn.shrink_to_fit();
}

void ColumnWeights::build_csr(const std::vector<std::int64_t>& indptr,
                              const std::vector<std::int64_t>& indices,
                              const std::vector<float>& values, std::int64_t out, std::int64_t in) {
    out_ = out;
    in_ = in;
    col_nnz_.assign(static_cast<std::size_t>(in), 0);
    nnz_ = 0;
    for (std::size_t k = 0; k < values.size(); ++k)
        if (values[k] != 0.0f) {
            ++col_nnz_[static_cast<std::size_t>(indices[k])];
            ++nnz_;
        }
    const double density = static_cast<double>(nnz_) / static_cast<double>(out * in);
    if (density >= 0.25) {  // dense enough: a dense column layout is smaller and faster
        std::vector<float> w(static_cast<std::size_t>(out * in), 0.0f);
        for (std::int64_t r = 0; r < out; ++r)
            for (auto k = indptr[static_cast<std::size_t>(r)];
                 k < indptr[static_cast<std::size_t>(r) + 1]; ++k)
                w[static_cast<std::size_t>(r * in + indices[static_cast<std::size_t>(k)])] +=
                    values[static_cast<std::size_t>(k)];
        build(w, out, in);
        return;
    }
    sparse_ = true;
    dense_.clear();
    choose_block();
    const std::int64_t nb = nblocks(), kBlock = block_;
    colptr_.assign(static_cast<std::size_t>(in * (nb + 1)), 0);
    std::vector<Syn> syn(nnz_, Syn{0, 0.0f});
    // Counting sort by (column, block); rows stay ascending within each run.
    std::vector<std::uint64_t> fill(static_cast<std::size_t>(in * nb), 0);
    for (std::int64_t r = 0; r < out; ++r)
        for (auto k = indptr[static_cast<std::size_t>(r)];
             k < indptr[static_cast<std::size_t>(r) + 1]; ++k)
            if (values[static_cast<std::size_t>(k)] != 0.0f)
                ++fill[static_cast<std::size_t>(indices[static_cast<std::size_t>(k)] * nb +
                                                r / kBlock)];
    std::uint64_t off = 0;
    for (std::int64_t c = 0; c < in; ++c) {
        for (std::int64_t b = 0; b < nb; ++b) {
            // fill: this run's count, then where its next synapse goes.
            auto& f = fill[static_cast<std::size_t>(c * nb + b)];
            const std::uint64_t start = off;
            off += f;
            f = start;
            colptr_[run_at(c, b)] = static_cast<std::uint32_t>(start);
        }
        colptr_[run_at(c, nb)] = static_cast<std::uint32_t>(off);
    }
    for (std::int64_t r = 0; r < out; ++r)
        for (auto k = indptr[static_cast<std::size_t>(r)];
             k < indptr[static_cast<std::size_t>(r) + 1]; ++k) {
            const float v = values[static_cast<std::size_t>(k)];
            if (v == 0.0f) continue;
            const std::int64_t b = r / kBlock;
            auto& f = fill[static_cast<std::size_t>(indices[static_cast<std::size_t>(k)] * nb + b)];
            syn[f] = {static_cast<std::uint32_t>(r - row_base(b)), v};
            ++f;
        }
    compact(syn);
}

float ColumnWeights::at(std::int64_t r, std::int64_t c) const {
    if (!sparse_) return dense_[static_cast<std::size_t>(c * out_ + r)];
    const std::int64_t kBlock = block_;
    const std::int64_t b = r / kBlock;
    for (auto k = colptr_[run_at(c, b)]; k < colptr_[run_at(c, b) + 1]; ++k)
        if (rows_[k] == r - row_base(b))
            return codebook_.size() == 1 ? codebook_[0]
                                         : (codes_.empty() ? vals_[k] : codebook_[codes_[k]]);
    return 0.0f;
}

template <class W>
void ColumnWeights::deliver(std::uint64_t k0, std::uint64_t k1, float* yb, float x, bool unit,
                            W weight) const {
    const std::uint16_t* rr = rows_.data();
    if (unit && x > 0) {
        for (auto k = k0; k < k1; ++k) yb[rr[k]] += weight(k);
    } else if (unit) {
        for (auto k = k0; k < k1; ++k) yb[rr[k]] -= weight(k);
    } else {
        for (auto k = k0; k < k1; ++k) yb[rr[k]] += x * weight(k);
    }
}

void ColumnWeights::add_column(std::int64_t c, float x, bool unit, float* y, std::int64_t r0,
                               std::int64_t r1) const {
    if (!sparse_) {
        const float* col = dense_.data() + c * out_;
        if (unit && x > 0) {
            for (std::int64_t r = r0; r < r1; ++r) y[r] += col[r];
        } else if (unit) {
            for (std::int64_t r = r0; r < r1; ++r) y[r] -= col[r];
        } else {
            for (std::int64_t r = r0; r < r1; ++r) y[r] += x * col[r];
        }
        return;
    }
    // r0 is block aligned, r1 too unless it is out_. With whole-layer row numbers the runs of
    // consecutive blocks are one run (they lie together, rows ascending): one delivery loop
    // however many blocks there are. (The whole range, one thread's common case, needs no
    // division: stride_ is nblocks() + 1.)
    const std::int64_t kBlock = block_;
    const std::int64_t b_end = r1 >= out_ ? stride_ - 1 : r1 / kBlock;
    const bool merged = whole_layer_rows();
    for (std::int64_t b = r0 / kBlock; b < b_end; b = merged ? b_end : b + 1) {
        const auto k0 = colptr_[run_at(c, b)];
        const auto k1 = colptr_[run_at(c, merged ? b_end : b + 1)];
        float* yb = y + row_base(b);
        if (codebook_.size() == 1) {
            const float w = codebook_[0];
            deliver(k0, k1, yb, x, unit, [w](std::uint64_t) { return w; });
        } else if (!codes_.empty()) {
            const std::uint8_t* cd = codes_.data();
            const float* cb = codebook_.data();
            deliver(k0, k1, yb, x, unit, [cd, cb](std::uint64_t k) { return cb[cd[k]]; });
        } else {
            const float* v = vals_.data();
            deliver(k0, k1, yb, x, unit, [v](std::uint64_t k) { return v[k]; });
        }
    }
}

namespace {

// The shared event-cost rule (sim/event_cost.hpp) over n events, booked into the step.
template <class Fan, class Value>
void count_events_n(std::size_t n, bool ternary, Fan fan, Value value,
                    std::uint64_t bytes_per_weight, const StepContext& ctx) {
    if (!ctx.count_ops) return;
    book_event_cost(event_cost(n, ternary, fan, value), ternary, bytes_per_weight, ctx);
}

// The same over an Activity's listed events.
template <class Fan>
void count_events(const Activity& in, Fan fan, std::uint64_t bytes_per_weight,
                  const StepContext& ctx) {
    const auto* act = in.active.data();
    count_events_n(
        in.active.size(), in.ternary, [&](std::size_t k) { return fan(act[k]); },
        [&](std::size_t k) { return in.values[act[k]]; }, bytes_per_weight, ctx);
}

Shape shape_param(const NodeSpec& s, const std::string& p) {
    Shape dims;
    auto v = s.ints(p, &dims);
    if (dims.size() > 1) s.fail(p, "expected a 1-d shape");
    for (auto d : v)
        if (d <= 0) s.fail(p, "dimensions must be positive");
    std::int64_t n = 1;
    for (auto d : v) {
        if (n > kMaxElements / d) s.fail(p, "absurd size " + shape_str(v));
        n *= d;
    }
    return v;
}

// Pair parameter: a scalar or two values (H, W).
std::array<std::int64_t, 2> pair_param(const NodeSpec& s, const std::string& p, std::int64_t dflt,
                                       std::int64_t min) {
    if (!s.has(p)) return {dflt, dflt};
    auto v = s.ints(p);
    std::array<std::int64_t, 2> r{};
    if (v.size() == 1)
        r = {v[0], v[0]};
    else if (v.size() == 2)
        r = {v[0], v[1]};
    else
        s.fail(p, "expected 1 or 2 values");
    for (auto x : r)
        if (x < min) s.fail(p, "must be at least " + std::to_string(min));
    return r;
}

// A 1-d operator's spatial parameter: absent, a scalar or one value; returned as {1, value}.
std::array<std::int64_t, 2> single_param(const NodeSpec& s, const std::string& p, std::int64_t dflt,
                                         std::int64_t min) {
    if (!s.has(p)) return {1, dflt};
    auto v = s.ints(p);
    if (v.size() != 1) s.fail(p, "expected 1 value, got " + std::to_string(v.size()));
    if (v[0] < min) s.fail(p, "must be at least " + std::to_string(min));
    return {1, v[0]};
}

void copy_activity(const Activity& in, Activity& out) {
    out.clear();
    for (auto i : in.active) out.values[i] = in.value_at(i);
    out.active = in.active;
    out.ternary = in.ternary;
    out.all_ones = in.all_ones;
}

// ------------------------------------------------------------------ Input / Output / Identity

class InputNode final : public Node {
  public:
    explicit InputNode(const NodeSpec& s) : Node(s.name(), s.type()) {
        shape_ = shape_param(s, "shape");
    }
    NodeCategory category() const override { return NodeCategory::input; }
    void bind(const Shape&) override { out_shape_ = shape_; }
    void step(const Activity&, NodeState*, Activity&, const StepContext&) const override {}
    std::vector<std::pair<std::string, std::string>> summary() const override {
        return {{"shape", shape_str(shape_)}};
    }

  private:
    Shape shape_;
};

class PassNode final : public Node {
  public:
    PassNode(const NodeSpec& s, NodeCategory cat) : Node(s.name(), s.type()), cat_(cat) {
        if (s.has("shape")) shape_ = shape_param(s, "shape");
    }
    NodeCategory category() const override { return cat_; }
    Shape declared_in_shape() const override { return shape_; }
    void bind(const Shape& in) override {
        if (!shape_.empty() && numel(shape_) != numel(in))
            fail("shape", "declares " + shape_str(shape_) + " but receives " + shape_str(in));
        in_shape_ = in;
        out_shape_ = shape_.empty() ? in : shape_;
    }
    void step(const Activity& in, NodeState*, Activity& out, const StepContext&) const override {
        copy_activity(in, out);
    }

  private:
    NodeCategory cat_;
    Shape shape_;
};

// ------------------------------------------------------------------ Affine / Linear

struct BlockScratch : NodeState {
    std::vector<BlockIndices> block_active;
    std::vector<std::uint32_t> offsets, by_channel;  // active inputs bucketed by channel
    std::vector<float> packed;                       // one token: the active inputs' values
    TokenEvents events;                              // active inputs by token (dense weights)
    std::vector<std::uint64_t> nz, nt;               // per token and 64-row group
    std::vector<TokenScratch> kernel;                // per block: kernel scratch
};

class LinearNode final : public Node {
  public:
    LinearNode(const NodeSpec& s, bool affine) : Node(s.name(), s.type()) {
        if (!s.has("weight") && s.has("weight_csr_data")) {
            load_csr(s, affine);
            return;
        }
        Shape dims;
        auto w = s.floats("weight", &dims);
        if (dims.size() != 2)
            s.fail("weight", "expected a 2-d (out, in) matrix, got " + shape_str(dims));
        out_ = dims[0];
        in_ = dims[1];
        if (out_ <= 0 || in_ <= 0) s.fail("weight", "empty matrix");
        if (affine || s.has("bias")) {
            Shape bd;
            bias_ = s.floats("bias", &bd);
            if (static_cast<std::int64_t>(bias_.size()) != out_)
                s.fail("bias", "has " + std::to_string(bias_.size()) + " values, expected " +
                                   std::to_string(out_));
        }
        source_bias_ = !bias_.empty();
        source_bn_ = fold_batchnorm(s, "", out_, w, bias_);
        weights_.set_codebook(s.options().weight_codebook);
        weights_.set_blocks(s.options().threads);
        weights_.build(w, out_, in_);
    }
    // ternion extension: weights as compressed rows (weight_csr_indptr, weight_csr_indices,
    // weight_csr_data, weight_shape = (out, in)); absent synapses are never stored.
    void load_csr(const NodeSpec& s, bool affine) {
        auto shape = s.ints("weight_shape");
        if (shape.size() != 2 || shape[0] <= 0 || shape[1] <= 0)
            s.fail("weight_shape", "expected (out, in) with positive sizes");
        out_ = shape[0];
        in_ = shape[1];
        if (out_ > kMaxElements || in_ > kMaxElements) s.fail("weight_shape", "absurd size");
        auto indptr = s.ints("weight_csr_indptr");
        auto indices = s.ints("weight_csr_indices");
        auto data = s.floats("weight_csr_data");
        if (static_cast<std::int64_t>(indptr.size()) != out_ + 1 || indptr.front() != 0)
            s.fail("weight_csr_indptr", "expected out + 1 offsets starting at 0");
        for (std::size_t r = 0; r + 1 < indptr.size(); ++r)
            if (indptr[r + 1] < indptr[r]) s.fail("weight_csr_indptr", "offsets must not decrease");
        if (indptr.back() != static_cast<std::int64_t>(data.size()) ||
            indices.size() != data.size())
            s.fail("weight_csr_data",
                   "indptr, indices and data disagree on the number of synapses");
        for (auto c : indices)
            if (c < 0 || c >= in_) s.fail("weight_csr_indices", "column index out of range");
        if (affine || s.has("bias")) {
            bias_ = s.floats("bias");
            if (static_cast<std::int64_t>(bias_.size()) != out_)
                s.fail("bias", "expected one value per output");
            source_bias_ = true;
        }
        if (s.has("bn_weight") || s.has("bn_running_mean"))
            s.fail("bn_weight", "BatchNorm folding needs dense weights");
        weights_.set_codebook(s.options().weight_codebook);
        weights_.set_blocks(s.options().threads);
        weights_.build_csr(indptr, indices, data, out_, in_);
    }
    NodeCategory category() const override { return NodeCategory::synaptic; }
    Shape declared_in_shape() const override { return {in_}; }
    void bind(const Shape& in) override {
        in_shape_ = in;
        if (!in.empty() && in.back() == in_) {
            rows_ = numel(in) / in_;
            out_shape_ = in;
            out_shape_.back() = out_;
            if (rows_ > 1 && !weights_.sparse()) panels_.build(weights_.dense_column(0), in_, out_);
        } else if (numel(in) == in_) {
            rows_ = 1;
            out_shape_ = {out_};
        } else {
            fail("weight", "expects inputs of size " + std::to_string(in_) + " but receives " +
                               shape_str(in));
        }
    }
    std::unique_ptr<NodeState> make_state() const override {
        auto st = std::make_unique<BlockScratch>();
        st->block_active.resize(static_cast<std::size_t>(nblocks()));
        return st;
    }
    // Scratch only, rebuilt by every step: kept as it is, with its capacity.
    bool reset_state(NodeState*) const override { return true; }
    std::int64_t nblocks() const { return weights_.nblocks(); }

    void step(const Activity& in, NodeState* state, Activity& out,
              const StepContext& ctx) const override {
        auto& scratch = static_cast<BlockScratch&>(*state);
        float* y = out.values.data();
        const bool dense = ctx.engine == Engine::dense;
        const bool unit = in.ternary && !dense;
        if (rows_ == 1) {
            // The active inputs' values, packed: blocks on other threads then read one short
            // array instead of a cache line of `in` per event, lines this thread just wrote.
            auto& packed = scratch.packed;
            packed.resize(in.active.size());
            for (std::size_t j = 0; j < in.active.size(); ++j)
                packed[j] = in.value_at(in.active[j]);
            const float* xs = packed.data();
            const std::uint32_t* act_in = in.active.data();
            const std::size_t na = in.active.size();
            const float* xin = in.values.data();
            // One token: split the output rows into blocks, each scanning all active inputs.
            // Captures by value: a member on another core must not keep reading this frame,
            // whose cache lines this thread keeps writing.
            // Synapse events expected this step (rows count a quarter: fill, bias, collect).
            const std::int64_t work =
                dense ? in_ * out_
                      : static_cast<std::int64_t>(na * weights_.nnz() /
                                                  static_cast<std::uint64_t>(in_)) +
                            out_ / 4;
            ctx.for_blocks(
                nblocks(), 1,
                [this, &scratch, y, xs, xin, act_in, na, dense, unit, list = ctx.list_output](
                    std::int64_t b0, std::int64_t b1) {
                    // One pass over the events for all of this thread's blocks: a column's
                    // runs for consecutive blocks lie together.
                    const std::int64_t r0 = b0 * weights_.block();
                    const std::int64_t r1 = std::min(out_, b1 * weights_.block());
                    std::fill(y + r0, y + r1, 0.0f);
                    if (dense) {
                        for (std::int64_t c = 0; c < in_; ++c)
                            weights_.add_column(c, xin[c], false, y, r0, r1);
                    } else {
                        const std::size_t d = weights_.prefetch_distance();
                        // The first events' offsets and synapses too: with few events per
                        // step they are a large share of the work.
                        for (std::size_t j = 0; j < std::min(2 * d, na); ++j)
                            weights_.prefetch(act_in[j], b0, b1, 0);
                        for (std::size_t j = 0; j < std::min(d, na); ++j)
                            weights_.prefetch(act_in[j], b0, b1, 1);
                        for (std::size_t j = 0; j < na; ++j) {
                            if (j + 2 * d < na) weights_.prefetch(act_in[j + 2 * d], b0, b1, 0);
                            if (j + d < na) weights_.prefetch(act_in[j + d], b0, b1, 1);
                            weights_.add_column(act_in[j], xs[j], unit, y, r0, r1);
                        }
                    }
                    if (!bias_.empty())
                        for (std::int64_t r = r0; r < r1; ++r)
                            y[r] += bias_[static_cast<std::size_t>(r)];
                    for (std::int64_t b = b0; b < b1; ++b) {
                        const std::int64_t q0 = b * weights_.block();
                        const std::int64_t q1 = std::min(out_, q0 + weights_.block());
                        auto& act = scratch.block_active[static_cast<std::size_t>(b)];
                        if (list) {
                            act.resize(static_cast<std::size_t>(q1 - q0));
                            act.resize(collect_nonzero(y, q0, q1, act.data(), act.ternary));
                        } else {
                            act.clear();
                            act.count = count_nonzero(y, q0, q1, act.ternary);
                        }
                    }
                },
                work);
            out.ternary = true;
            for (auto& a : scratch.block_active) out.ternary = out.ternary && a.ternary;
            if (ctx.list_output) {
                ctx.concat_blocks(scratch.block_active, out.active, work);
            } else {
                std::size_t count = 0;
                for (auto& a : scratch.block_active) count += a.count;
                out.mark_unlisted(count);
            }
        } else if (!dense && !weights_.sparse()) {
            // Several tokens (the weights apply to the last axis of each), dense weights.
            step_tokens_dense(in, scratch, out, ctx, unit);
        } else {
            // Several tokens, the dense engine or compressed weights.
            std::fill(out.values.begin(), out.values.end(), 0.0f);
            if (dense) {
                for (std::int64_t t = 0; t < rows_; ++t)
                    for (std::int64_t c = 0; c < in_; ++c)
                        weights_.add_column(c, in.values[static_cast<std::size_t>(t * in_ + c)],
                                            false, y + t * out_, 0, out_);
            } else {
                // Channel-major: each weight column is read once per step and applied to every
                // token where that channel is active. Every output still receives its terms in
                // ascending channel order, exactly as the dense loop adds them.
                auto& off = scratch.offsets;
                auto& order = scratch.by_channel;
                off.assign(static_cast<std::size_t>(in_ + 1), 0);
                for (auto i : in.active) ++off[i % static_cast<std::uint32_t>(in_) + 1];
                for (std::int64_t c = 0; c < in_; ++c)
                    off[static_cast<std::size_t>(c + 1)] += off[static_cast<std::size_t>(c)];
                order.resize(in.active.size());
                for (auto i : in.active) order[off[i % static_cast<std::uint32_t>(in_)]++] = i;
                // off[c] now ends bucket c; bucket c starts where bucket c-1 ends.
                ctx.for_blocks(nblocks(), 1, [&](std::int64_t b0, std::int64_t b1) {
                    const std::int64_t r0 = b0 * weights_.block();
                    const std::int64_t r1 = std::min(out_, b1 * weights_.block());
                    std::uint32_t start = 0;
                    for (std::int64_t c = 0; c < in_; ++c) {
                        const std::uint32_t end = off[static_cast<std::size_t>(c)];
                        for (std::uint32_t k = start; k < end; ++k) {
                            const std::uint32_t i = order[k];
                            const std::int64_t t = i / static_cast<std::uint32_t>(in_);
                            weights_.add_column(c, in.values[i], unit, y + t * out_, r0, r1);
                        }
                        start = end;
                    }
                });
            }
            if (!bias_.empty())
                for (std::int64_t t = 0; t < rows_; ++t)
                    for (std::int64_t r = 0; r < out_; ++r)
                        y[t * out_ + r] += bias_[static_cast<std::size_t>(r)];
            if (ctx.list_output) {
                out.active.resize(out.values.size());
                out.active.resize(
                    collect_nonzero(y, 0, rows_ * out_, out.active.data(), out.ternary));
            } else {
                out.mark_unlisted(count_nonzero(y, 0, rows_ * out_, out.ternary));
            }
        }
        // Counts from events and shapes: each non-zero input touches its column's weights.
        // Both engines book the event engine's count (the dense one did more work for it).
        if (!dense && rows_ != 1 && !weights_.sparse()) {
            const auto& ev = scratch.events;
            count_events_n(
                ev.chan.size(), in.ternary,
                [&](std::size_t k) { return weights_.col_nnz(ev.chan[k]); },
                [&](std::size_t k) { return ev.x[k]; }, weights_.bytes_per_synapse(), ctx);
        } else {
            count_events(
                in,
                [&](std::uint32_t c) {
                    return weights_.col_nnz(static_cast<std::int64_t>(c % in_));
                },
                weights_.bytes_per_synapse(), ctx);
        }
    }
    // Event-driven, several tokens, dense weights: token_rows_kernel over row blocks; also
    // sets out.active and out.ternary from the kernel's masks.
    void step_tokens_dense(const Activity& in, BlockScratch& sc, Activity& out,
                           const StepContext& ctx, bool unit) const {
        auto& ev = sc.events;
        ev.build(in.active, in.values.data(), in_, rows_);
        const std::int64_t groups = (out_ + 63) / 64;
        sc.nz.resize(static_cast<std::size_t>(rows_ * groups));
        sc.nt.resize(static_cast<std::size_t>(rows_ * groups));
        const float* bias = bias_.empty() ? nullptr : bias_.data();
        float* y = out.values.data();
        sc.kernel.resize(static_cast<std::size_t>(nblocks()));
        ctx.for_blocks(nblocks(), 1, [&](std::int64_t b0, std::int64_t b1) {
            const std::int64_t r0 = b0 * weights_.block();
            const std::int64_t r1 = std::min(out_, b1 * weights_.block());
            token_rows(panels_, ev, bias, BiasOrder::last, unit, y, r0, r1, sc.nz.data(),
                       sc.nt.data(), sc.kernel[static_cast<std::size_t>(b0)]);
        });
        std::size_t total = 0;
        std::uint64_t other = 0;
        for (std::size_t k = 0; k < sc.nz.size(); ++k) {
            total += static_cast<std::size_t>(__builtin_popcountll(sc.nz[k]));
            other |= sc.nt[k];
        }
        out.ternary = other == 0;
        if (!ctx.list_output) {
            out.mark_unlisted(total);
            return;
        }
        out.active.resize(total + 64);  // mask_indices stores whole vectors
        std::size_t n = 0;
        for (std::int64_t tk = 0; tk < rows_; ++tk)
            for (std::int64_t g = 0; g < groups; ++g)
                n += mask_indices(sc.nz[static_cast<std::size_t>(tk * groups + g)],
                                  static_cast<std::uint32_t>(tk * out_ + g * 64),
                                  out.active.data() + n);
        out.active.resize(n);
    }

    std::uint64_t dense_macs_per_step() const override {
        return static_cast<std::uint64_t>(rows_ * in_ * out_);
    }
    std::uint64_t dense_synops_per_step() const override { return dense_macs_per_step(); }
    // syops counts a Linear's bias once per call (out_features), not per token.
    ModuleShape module_shape() const override {
        ModuleShape m;
        m.bias_ops_per_step = source_bias_ ? static_cast<std::uint64_t>(out_) : 0;
        m.batchnorm_elems_per_step = source_bn_ ? static_cast<std::uint64_t>(rows_ * out_) : 0;
        return m;
    }
    std::uint64_t weight_count() const override { return static_cast<std::uint64_t>(in_ * out_); }
    std::uint64_t param_count() const override {
        return static_cast<std::uint64_t>(in_ * out_) + bias_.size();
    }
    double weight_density() const override {
        return static_cast<double>(weights_.nnz()) / static_cast<double>(in_ * out_);
    }
    std::vector<std::pair<std::string, std::string>> summary() const override {
        return {{"weight", shape_str({out_, in_})},
                {"bias", bias_.empty() ? "none" : "yes"},
                {"storage",
                 std::string(weights_.sparse() ? "compressed columns" : "dense columns") +
                     (weights_.sparse() && weights_.codebook_size()
                          ? ", " + std::to_string(weights_.codebook_size()) + "-value codebook"
                          : "")},
                {"tokens", std::to_string(rows_)}};
    }
    const ColumnWeights& weights() const { return weights_; }

  private:
    std::int64_t out_ = 0, in_ = 0, rows_ = 1;
    ColumnWeights weights_;
    TokenPanels panels_;  // several tokens, dense weights: the event kernel's layout
    std::vector<float> bias_;
    bool source_bias_ = false, source_bn_ = false;  // the source layer's bias, a folded BN
};

// ------------------------------------------------------------------ Scale

class ScaleNode final : public Node {
  public:
    explicit ScaleNode(const NodeSpec& s) : Node(s.name(), s.type()) { scale_ = s.floats("scale"); }
    NodeCategory category() const override { return NodeCategory::synaptic; }
    Shape declared_in_shape() const override {
        return scale_.size() > 1 ? Shape{static_cast<std::int64_t>(scale_.size())} : Shape{};
    }
    void bind(const Shape& in) override {
        if (scale_.size() != 1 && static_cast<std::int64_t>(scale_.size()) != numel(in))
            fail("scale",
                 "has " + std::to_string(scale_.size()) + " values for input " + shape_str(in));
        in_shape_ = out_shape_ = in;
    }
    void step(const Activity& in, NodeState*, Activity& out,
              const StepContext& ctx) const override {
        out.clear();
        auto sc = [&](std::size_t i) { return scale_.size() == 1 ? scale_[0] : scale_[i]; };
        for (auto i : in.active) {
            float v = in.values[i] * sc(i);
            if (v != 0.0f) {
                out.values[i] = v;
                out.active.push_back(i);
                if (v != 1.0f && v != -1.0f) out.ternary = false;
            }
        }
        ctx.ops->mac += in.active.size();  // both engines: one per non-zero input
    }
    std::uint64_t dense_macs_per_step() const override {
        return static_cast<std::uint64_t>(in_size());
    }
    std::uint64_t param_count() const override { return scale_.size(); }

  private:
    std::vector<float> scale_;
};

// ------------------------------------------------------------------ Conv1d / Conv2d

class ConvNode final : public Node {
  public:
    ConvNode(const NodeSpec& s, int dims) : Node(s.name(), s.type()), dims_(dims) {
        Shape wd;
        w_ = s.floats("weight", &wd);
        if (static_cast<int>(wd.size()) != dims + 2)
            s.fail("weight",
                   "expected " + std::to_string(dims + 2) + "-d weights, got " + shape_str(wd));
        for (std::size_t k = 0; k < wd.size(); ++k)
            if (wd[k] == 0) s.fail("weight", "has a zero-sized dimension " + shape_str(wd));
        cout_ = wd[0];
        cin_g_ = wd[1];
        kh_ = dims == 2 ? wd[2] : 1;
        kw_ = dims == 2 ? wd[3] : wd[2];
        groups_ = s.integer_or("groups", 1);
        if (groups_ < 1 || cout_ % groups_) s.fail("groups", "must divide the output channels");
        auto st = dims == 2 ? pair_param(s, "stride", 1, 1) : single_param(s, "stride", 1, 1);
        auto di = dims == 2 ? pair_param(s, "dilation", 1, 1) : single_param(s, "dilation", 1, 1);
        sh_ = st[0];
        sw_ = st[1];
        dh_ = di[0];
        dw_ = di[1];
        if (sw_ < 1 || dw_ < 1) s.fail("stride", "must be positive");
        pad_mode_ = "int";
        if (auto p = s.string_opt("padding")) {
            if (*p != "same" && *p != "valid") s.fail("padding", "unknown padding '" + *p + "'");
            pad_mode_ = *p;
        } else if (s.has("padding")) {
            auto pv = s.ints("padding");
            if (pv.size() == 1) {
                ph_ = dims == 2 ? pv[0] : 0;
                pw_ = pv[0];
            } else if (pv.size() == 2 && dims == 2) {
                ph_ = pv[0];
                pw_ = pv[1];
            } else
                s.fail("padding", "expected " + std::to_string(dims) + " values");
            if (ph_ < 0 || pw_ < 0) s.fail("padding", "must be non-negative");
        }
        if (s.has("bias")) {
            bias_ = s.floats("bias");
            if (static_cast<std::int64_t>(bias_.size()) != cout_)
                s.fail("bias", "expected one value per output channel");
        }
        source_bias_ = !bias_.empty();
        source_bn_ = fold_batchnorm(s, "", cout_, w_, bias_);
        if (s.has("input_shape")) {
            auto is = s.ints("input_shape");
            if (static_cast<int>(is.size()) == dims) declared_spatial_ = is;
        }
    }
    NodeCategory category() const override { return NodeCategory::synaptic; }
    Shape declared_in_shape() const override {
        if (declared_spatial_.empty()) return {};
        Shape r{cin_g_ * groups_};
        r.insert(r.end(), declared_spatial_.begin(), declared_spatial_.end());
        return r;
    }
    void bind(const Shape& in) override {
        const std::int64_t cin = cin_g_ * groups_;
        if (static_cast<int>(in.size()) != dims_ + 1 || in[0] != cin)
            fail("weight", "expects input [" + std::to_string(cin) +
                               (dims_ == 2 ? ", H, W]" : ", L]") + " but receives " +
                               shape_str(in));
        cin_ = cin;
        H_ = dims_ == 2 ? in[1] : 1;
        W_ = in[static_cast<std::size_t>(dims_)];
        if (pad_mode_ == "same") {
            if (sh_ != 1 || sw_ != 1) fail("padding", "'same' needs stride 1");
            ph_ = dh_ * (kh_ - 1) / 2;  // PyTorch puts the odd pixel on the far side
            pw_ = dw_ * (kw_ - 1) / 2;
            OH_ = H_;
            OW_ = W_;
        } else {
            if (pad_mode_ == "valid") ph_ = pw_ = 0;
            OH_ = (H_ + 2 * ph_ - dh_ * (kh_ - 1) - 1) / sh_ + 1;
            OW_ = (W_ + 2 * pw_ - dw_ * (kw_ - 1) - 1) / sw_ + 1;
        }
        if (OH_ <= 0 || OW_ <= 0)
            fail("weight", "kernel larger than the padded input " + shape_str(in));
        if (cout_ * OH_ * OW_ > kMaxElements) fail("weight", "absurd output size");
        in_shape_ = in;
        out_shape_ = dims_ == 2 ? Shape{cout_, OH_, OW_} : Shape{cout_, OW_};
        // Fan-out of each input position: non-zero weights that reach a valid output.
        fanout_.assign(static_cast<std::size_t>(cin_ * H_ * W_), 0);
        const std::int64_t cout_g = cout_ / groups_;
        for (std::int64_t ci = 0; ci < cin_; ++ci)
            for (std::int64_t iy = 0; iy < H_; ++iy)
                for (std::int64_t ix = 0; ix < W_; ++ix) {
                    std::uint32_t f = 0;
                    const std::int64_t g = ci / cin_g_, cl = ci % cin_g_;
                    for (std::int64_t co = g * cout_g; co < (g + 1) * cout_g; ++co)
                        for_targets(
                            iy, ix,
                            [&](std::int64_t ky, std::int64_t kx, std::int64_t, std::int64_t) {
                                if (w_[widx(co, cl, ky, kx)] != 0.0f) ++f;
                            });
                    fanout_[static_cast<std::size_t>((ci * H_ + iy) * W_ + ix)] = f;
                }
        // NeuroBench's Dense: every (input position, kernel tap) pair that reaches an output,
        // weights all taken as non-zero; taps over padding read no input and are not synapses.
        std::uint64_t taps = 0;
        for (std::int64_t iy = 0; iy < H_; ++iy)
            for (std::int64_t ix = 0; ix < W_; ++ix)
                for_targets(iy, ix, [&](std::int64_t, std::int64_t, std::int64_t, std::int64_t) {
                    ++taps;
                });
        dense_taps_ = taps * static_cast<std::uint64_t>(cin_ * cout_g);
    }
    template <class F>
    void for_targets(std::int64_t iy, std::int64_t ix, F&& f) const {
        for (std::int64_t ky = 0; ky < kh_; ++ky) {
            std::int64_t t = iy + ph_ - ky * dh_;
            if (t < 0 || t % sh_) continue;
            std::int64_t oy = t / sh_;
            if (oy >= OH_) continue;
            for (std::int64_t kx = 0; kx < kw_; ++kx) {
                std::int64_t u = ix + pw_ - kx * dw_;
                if (u < 0 || u % sw_) continue;
                std::int64_t ox = u / sw_;
                if (ox >= OW_) continue;
                f(ky, kx, oy, ox);
            }
        }
    }
    std::size_t widx(std::int64_t co, std::int64_t cl, std::int64_t ky, std::int64_t kx) const {
        return static_cast<std::size_t>(((co * cin_g_ + cl) * kh_ + ky) * kw_ + kx);
    }
    void step(const Activity& in, NodeState*, Activity& out,
              const StepContext& ctx) const override {
        float* y = out.values.data();
        std::fill(out.values.begin(), out.values.end(), 0.0f);
        const std::int64_t cout_g = cout_ / groups_;
        if (ctx.engine == Engine::dense) {
            for (std::int64_t co = 0; co < cout_; ++co) {
                const std::int64_t g = co / cout_g;
                for (std::int64_t oy = 0; oy < OH_; ++oy)
                    for (std::int64_t ox = 0; ox < OW_; ++ox) {
                        float acc = 0.0f;
                        for (std::int64_t cl = 0; cl < cin_g_; ++cl) {
                            const std::int64_t ci = g * cin_g_ + cl;
                            for (std::int64_t ky = 0; ky < kh_; ++ky) {
                                std::int64_t iy = oy * sh_ - ph_ + ky * dh_;
                                if (iy < 0 || iy >= H_) continue;
                                for (std::int64_t kx = 0; kx < kw_; ++kx) {
                                    std::int64_t ix = ox * sw_ - pw_ + kx * dw_;
                                    if (ix < 0 || ix >= W_) continue;
                                    acc += w_[widx(co, cl, ky, kx)] *
                                           in.values[static_cast<std::size_t>((ci * H_ + iy) * W_ +
                                                                              ix)];
                                }
                            }
                        }
                        y[(co * OH_ + oy) * OW_ + ox] = acc;
                    }
            }
        } else {
            const bool unit = in.ternary;
            for (auto idx : in.active) {
                const std::int64_t ci = idx / (H_ * W_), rem = idx % (H_ * W_);
                const std::int64_t iy = rem / W_, ix = rem % W_;
                const std::int64_t g = ci / cin_g_, cl = ci % cin_g_;
                const float x = in.values[idx];
                for (std::int64_t co = g * cout_g; co < (g + 1) * cout_g; ++co) {
                    float* yc = y + co * OH_ * OW_;
                    for_targets(
                        iy, ix,
                        [&](std::int64_t ky, std::int64_t kx, std::int64_t oy, std::int64_t ox) {
                            const float wv = w_[widx(co, cl, ky, kx)];
                            if (unit)
                                yc[oy * OW_ + ox] += x > 0 ? wv : -wv;
                            else
                                yc[oy * OW_ + ox] += x * wv;
                        });
                }
            }
        }
        // Both engines book the event engine's count: padding taps are not synaptic events.
        count_events(
            in, [&](std::uint32_t i) -> std::uint64_t { return fanout_[i]; }, sizeof(float), ctx);
        if (!bias_.empty())
            for (std::int64_t co = 0; co < cout_; ++co)
                for (std::int64_t k = 0; k < OH_ * OW_; ++k)
                    y[co * OH_ * OW_ + k] += bias_[static_cast<std::size_t>(co)];
        out.scan();
    }
    // The papers' FLOPs (k^2 Cin Cout H_out W_out, padding taps included).
    std::uint64_t dense_macs_per_step() const override {
        return static_cast<std::uint64_t>(cout_ * OH_ * OW_ * cin_g_ * kh_ * kw_);
    }
    std::uint64_t dense_synops_per_step() const override { return dense_taps_; }
    ModuleShape module_shape() const override {
        const auto outputs = static_cast<std::uint64_t>(cout_ * OH_ * OW_);
        ModuleShape m;
        m.bias_ops_per_step = source_bias_ ? outputs : 0;
        m.batchnorm_elems_per_step = source_bn_ ? outputs : 0;
        return m;
    }
    std::uint64_t param_count() const override { return w_.size() + bias_.size(); }
    std::uint64_t weight_count() const override { return w_.size(); }
    double weight_density() const override {
        std::size_t nz = 0;
        for (float v : w_) nz += v != 0.0f;
        return static_cast<double>(nz) / static_cast<double>(w_.size());
    }
    std::vector<std::pair<std::string, std::string>> summary() const override {
        return {{"weight", dims_ == 2 ? shape_str({cout_, cin_g_, kh_, kw_})
                                      : shape_str({cout_, cin_g_, kw_})},
                {"stride", std::to_string(sh_) + "x" + std::to_string(sw_)},
                {"padding", std::to_string(ph_) + "x" + std::to_string(pw_)},
                {"groups", std::to_string(groups_)},
                {"bias", bias_.empty() ? "none" : "yes"}};
    }

  private:
    int dims_;
    std::vector<float> w_, bias_;
    std::int64_t cout_ = 0, cin_g_ = 0, cin_ = 0, kh_ = 1, kw_ = 1, groups_ = 1;
    std::int64_t sh_ = 1, sw_ = 1, dh_ = 1, dw_ = 1, ph_ = 0, pw_ = 0;
    std::int64_t H_ = 1, W_ = 1, OH_ = 1, OW_ = 1;
    std::string pad_mode_;
    Shape declared_spatial_;
    std::vector<std::uint32_t> fanout_;
    std::uint64_t dense_taps_ = 0;
    bool source_bias_ = false, source_bn_ = false;  // the source layer's bias, a folded BN
};

// ------------------------------------------------------------------ pooling

class PoolNode final : public Node {
  public:
    enum class Mode { sum, avg, max };
    PoolNode(const NodeSpec& s, Mode m) : Node(s.name(), s.type()), mode_(m) {
        auto k = pair_param(s, "kernel_size", 0, 1);
        if (!s.has("kernel_size")) s.fail("kernel_size", "missing parameter");
        kh_ = k[0];
        kw_ = k[1];
        auto st = pair_param(s, "stride", 0, 1);
        sh_ = s.has("stride") ? st[0] : kh_;
        sw_ = s.has("stride") ? st[1] : kw_;
        auto p = pair_param(s, "padding", 0, 0);
        ph_ = p[0];
        pw_ = p[1];
    }
    NodeCategory category() const override { return NodeCategory::synaptic; }
    void bind(const Shape& in) override {
        if (in.size() != 3)
            fail("kernel_size", "expects input [C, H, W], receives " + shape_str(in));
        C_ = in[0];
        H_ = in[1];
        W_ = in[2];
        OH_ = (H_ + 2 * ph_ - kh_) / sh_ + 1;
        OW_ = (W_ + 2 * pw_ - kw_) / sw_ + 1;
        if (OH_ <= 0 || OW_ <= 0)
            fail("kernel_size", "window larger than the input " + shape_str(in));
        in_shape_ = in;
        out_shape_ = {C_, OH_, OW_};
    }
    void step(const Activity& in, NodeState*, Activity& out,
              const StepContext& ctx) const override {
        std::uint64_t adds = 0, cmps = 0;
        for (std::int64_t c = 0; c < C_; ++c)
            for (std::int64_t oy = 0; oy < OH_; ++oy)
                for (std::int64_t ox = 0; ox < OW_; ++ox) {
                    float acc = mode_ == Mode::max ? -std::numeric_limits<float>::infinity() : 0.0f;
                    std::int64_t valid = 0;
                    for (std::int64_t ky = 0; ky < kh_; ++ky) {
                        std::int64_t iy = oy * sh_ - ph_ + ky;
                        if (iy < 0 || iy >= H_) continue;
                        for (std::int64_t kx = 0; kx < kw_; ++kx) {
                            std::int64_t ix = ox * sw_ - pw_ + kx;
                            if (ix < 0 || ix >= W_) continue;
                            float v = in.values[static_cast<std::size_t>((c * H_ + iy) * W_ + ix)];
                            ++valid;
                            if (mode_ == Mode::max)
                                acc = std::max(acc, v);
                            else {
                                acc += v;
                                adds += v != 0.0f;  // both engines: non-zero terms
                            }
                        }
                    }
                    if (mode_ == Mode::max)
                        cmps += valid > 0 ? static_cast<std::uint64_t>(valid - 1) : 0;
                    if (mode_ == Mode::max && valid == 0) acc = 0.0f;
                    // AvgPool divides by the full window (PyTorch's count_include_pad).
                    if (mode_ == Mode::avg) acc = acc / static_cast<float>(kh_ * kw_);
                    out.values[static_cast<std::size_t>((c * OH_ + oy) * OW_ + ox)] = acc;
                }
        out.scan();
        ctx.ops->ac += adds;
        ctx.ops->cmp += cmps;
        if (mode_ == Mode::avg) ctx.ops->div += out.active.size();
    }
    std::vector<std::pair<std::string, std::string>> summary() const override {
        return {{"kernel", std::to_string(kh_) + "x" + std::to_string(kw_)},
                {"stride", std::to_string(sh_) + "x" + std::to_string(sw_)},
                {"padding", std::to_string(ph_) + "x" + std::to_string(pw_)}};
    }

  private:
    Mode mode_;
    std::int64_t kh_ = 1, kw_ = 1, sh_ = 1, sw_ = 1, ph_ = 0, pw_ = 0;
    std::int64_t C_ = 0, H_ = 0, W_ = 0, OH_ = 0, OW_ = 0;
};

// ------------------------------------------------------------------ Flatten

class FlattenNode final : public Node {
  public:
    explicit FlattenNode(const NodeSpec& s) : Node(s.name(), s.type()) {
        start_ = s.integer_or("start_dim", 0);
        end_ = s.integer_or("end_dim", -1);
        if (s.has("input_type")) {
            auto v = s.ints("input_type");
            declared_ = Shape(v.begin(), v.end());
        }
    }
    NodeCategory category() const override { return NodeCategory::other; }
    Shape declared_in_shape() const override { return declared_; }
    void bind(const Shape& in) override {
        const auto r = static_cast<std::int64_t>(in.size());
        std::int64_t s = start_ < 0 ? start_ + r : start_, e = end_ < 0 ? end_ + r : end_;
        if (r == 0 || s < 0 || e >= r || s > e)
            fail("start_dim", "dims [" + std::to_string(start_) + ", " + std::to_string(end_) +
                                  "] do not fit input " + shape_str(in));
        in_shape_ = in;
        out_shape_.assign(in.begin(), in.begin() + s);
        std::int64_t m = 1;
        for (std::int64_t k = s; k <= e; ++k) m *= in[static_cast<std::size_t>(k)];
        out_shape_.push_back(m);
        out_shape_.insert(out_shape_.end(), in.begin() + e + 1, in.end());
    }
    void step(const Activity& in, NodeState*, Activity& out, const StepContext&) const override {
        copy_activity(in, out);
    }

  private:
    std::int64_t start_ = 0, end_ = -1;
    Shape declared_;
};

// ------------------------------------------------------------------ Delay

struct DelayState : NodeState {
    std::vector<float> ring;  // [slots][n]
    std::int64_t head = 0;
};

class DelayNode final : public Node {
  public:
    explicit DelayNode(const NodeSpec& s) : Node(s.name(), s.type()) {
        delay_s_ = s.floats("delay");
        dt_ = s.options().dt;
        for (float d : delay_s_)
            if (d < 0) s.fail("delay", "must be non-negative");
        for (float d : delay_s_) {
            double steps = std::round(d / dt_);
            if (steps > 100000)
                s.fail("delay", "absurd delay of " + std::to_string(steps) + " steps");
            steps_.push_back(static_cast<std::int64_t>(steps));
        }
    }
    NodeCategory category() const override { return NodeCategory::synaptic; }
    Shape declared_in_shape() const override {
        return delay_s_.size() > 1 ? Shape{static_cast<std::int64_t>(delay_s_.size())} : Shape{};
    }
    void bind(const Shape& in) override {
        if (steps_.size() != 1 && static_cast<std::int64_t>(steps_.size()) != numel(in))
            fail("delay",
                 "has " + std::to_string(steps_.size()) + " values for input " + shape_str(in));
        in_shape_ = out_shape_ = in;
        max_ = *std::max_element(steps_.begin(), steps_.end());
    }
    std::unique_ptr<NodeState> make_state() const override {
        auto st = std::make_unique<DelayState>();
        st->ring.assign(static_cast<std::size_t>((max_ + 1) * in_size()), 0.0f);
        return st;
    }
    void step(const Activity& in, NodeState* state, Activity& out,
              const StepContext& ctx) const override {
        auto& st = static_cast<DelayState&>(*state);
        const std::int64_t n = in_size(), slots = max_ + 1;
        float* cur = st.ring.data() + st.head * n;
        std::copy(in.values.begin(), in.values.end(), cur);
        for (std::int64_t i = 0; i < n; ++i) {
            std::int64_t d = steps_.size() == 1 ? steps_[0] : steps_[static_cast<std::size_t>(i)];
            std::int64_t slot = ((st.head - d) % slots + slots) % slots;
            out.values[static_cast<std::size_t>(i)] =
                st.ring[static_cast<std::size_t>(slot * n + i)];
        }
        st.head = (st.head + 1) % slots;
        out.scan();
        ctx.ops->state_write_bytes += static_cast<std::uint64_t>(n) * sizeof(float);
        ctx.ops->state_read_bytes += static_cast<std::uint64_t>(n) * sizeof(float);
    }

  private:
    std::vector<float> delay_s_;
    std::vector<std::int64_t> steps_;
    std::int64_t max_ = 0;
    double dt_ = 1e-3;
};

// ------------------------------------------------------------------ token helpers

class TokensNode final : public Node {
  public:
    explicit TokensNode(const NodeSpec& s) : Node(s.name(), s.type()) {}
    NodeCategory category() const override { return NodeCategory::other; }
    void bind(const Shape& in) override {
        if (in.size() != 3) fail("", "expects input [C, H, W], receives " + shape_str(in));
        in_shape_ = in;
        C_ = in[0];
        HW_ = in[1] * in[2];
        out_shape_ = {HW_, C_};
    }
    void step(const Activity& in, NodeState*, Activity& out, const StepContext&) const override {
        for (std::int64_t c = 0; c < C_; ++c)
            for (std::int64_t p = 0; p < HW_; ++p)
                out.values[static_cast<std::size_t>(p * C_ + c)] =
                    in.values[static_cast<std::size_t>(c * HW_ + p)];
        out.scan();
    }

  private:
    std::int64_t C_ = 0, HW_ = 0;
};

class TokenMeanNode final : public Node {
  public:
    explicit TokenMeanNode(const NodeSpec& s) : Node(s.name(), s.type()) {}
    NodeCategory category() const override { return NodeCategory::readout; }
    void bind(const Shape& in) override {
        if (in.size() != 2) fail("", "expects input [N, D], receives " + shape_str(in));
        in_shape_ = in;
        N_ = in[0];
        D_ = in[1];
        out_shape_ = {D_};
    }
    void step(const Activity& in, NodeState*, Activity& out,
              const StepContext& ctx) const override {
        std::fill(out.values.begin(), out.values.end(), 0.0f);
        // Token-major input: each channel sums its tokens in ascending order in both engines.
        if (ctx.engine == Engine::dense) {
            for (std::int64_t n = 0; n < N_; ++n)
                for (std::int64_t d = 0; d < D_; ++d)
                    out.values[static_cast<std::size_t>(d)] +=
                        in.values[static_cast<std::size_t>(n * D_ + d)];
        } else {
            for (auto i : in.active) out.values[i % static_cast<std::uint32_t>(D_)] += in.values[i];
        }
        ctx.ops->ac += in.active.size();  // both engines: one add per non-zero input
        for (auto& v : out.values) v = v / static_cast<float>(N_);
        ctx.ops->div += static_cast<std::uint64_t>(D_);
        out.scan();
    }

  private:
    std::int64_t N_ = 0, D_ = 0;
};

}  // namespace

namespace {

using In = NodeExample::Input;

// Examples for the conformance harness: small, with every optional feature of the type on.
NodeExample shape_example(In kind) {
    auto e = example_of({6}, kind);
    e.params.set("shape", {6.0}, {1});
    return e;
}
NodeExample linear_example(bool affine) {
    auto e = example_of({6}, affine ? In::binary : In::ternary);
    set_example(e.params, "weight", {4, 6}, 1);
    if (affine) set_example(e.params, "bias", {4}, 2);
    return e;
}
NodeExample conv_example(int dims) {
    auto e = example_of(dims == 2 ? Shape{2, 5, 5} : Shape{2, 8});
    set_example(e.params, "weight", dims == 2 ? Shape{4, 2, 3, 3} : Shape{4, 2, 3}, 3);
    set_example(e.params, "bias", {4}, 4);
    const std::int64_t d = dims;
    e.params.set("stride", std::vector<double>(static_cast<std::size_t>(d), 1.0), {d});
    e.params.set("padding", std::vector<double>(static_cast<std::size_t>(d), 1.0), {d});
    return e;
}
NodeExample pool_example() {
    auto e = example_of({2, 4, 4});
    e.params.set("kernel_size", {2.0, 2.0}, {2});
    e.params.set("stride", {2.0, 2.0}, {2});
    e.params.set("padding", {0.0, 0.0}, {2});
    return e;
}

}  // namespace

void register_synaptic_nodes(NodeFactory& f) {
    f.add(
        "Input", [](const NodeSpec& s) { return std::make_unique<InputNode>(s); },
        "graph input; `shape`", [] { return shape_example(In::binary); });
    f.add(
        "Output",
        [](const NodeSpec& s) { return std::make_unique<PassNode>(s, NodeCategory::output); },
        "graph output; optional `shape`", [] { return shape_example(In::ternary); });
    f.add(
        "ternion.Identity",
        [](const NodeSpec& s) { return std::make_unique<PassNode>(s, NodeCategory::other); },
        "passes the sum of its inputs (residual joins)", [] { return shape_example(In::analog); });
    f.add(
        "Affine", [](const NodeSpec& s) { return std::make_unique<LinearNode>(s, true); },
        "y = W x + b on the last axis; `weight` (out, in), `bias`, optional bn_* folded",
        [] { return linear_example(true); });
    f.add(
        "Linear", [](const NodeSpec& s) { return std::make_unique<LinearNode>(s, false); },
        "y = W x on the last axis; `weight` (out, in), optional bn_* folded",
        [] { return linear_example(false); });
    f.add(
        "Scale", [](const NodeSpec& s) { return std::make_unique<ScaleNode>(s); },
        "y = s * x elementwise; `scale`",
        [] {
            auto e = example_of({6}, In::analog);
            set_example(e.params, "scale", {6}, 5);
            return e;
        });
    f.add(
        "Conv1d", [](const NodeSpec& s) { return std::make_unique<ConvNode>(s, 1); },
        "1-d convolution; `weight` (Cout, Cin/groups, K), stride, padding, dilation, groups, bias",
        [] { return conv_example(1); });
    f.add(
        "Conv2d", [](const NodeSpec& s) { return std::make_unique<ConvNode>(s, 2); },
        "2-d convolution; `weight` (Cout, Cin/groups, Kh, Kw), stride, padding, dilation, groups, "
        "bias",
        [] { return conv_example(2); });
    f.add(
        "SumPool2d",
        [](const NodeSpec& s) { return std::make_unique<PoolNode>(s, PoolNode::Mode::sum); },
        "sum over windows; kernel_size, stride, padding", pool_example);
    f.add(
        "AvgPool2d",
        [](const NodeSpec& s) { return std::make_unique<PoolNode>(s, PoolNode::Mode::avg); },
        "mean over windows; kernel_size, stride, padding", pool_example);
    f.add(
        "MaxPool2d",
        [](const NodeSpec& s) { return std::make_unique<PoolNode>(s, PoolNode::Mode::max); },
        "max over windows; kernel_size, stride, padding", pool_example);
    f.add(
        "Flatten", [](const NodeSpec& s) { return std::make_unique<FlattenNode>(s); },
        "merges dims start_dim..end_dim of the un-batched shape",
        [] {
            auto e = example_of({2, 3});
            e.params.set("start_dim", 0.0).set("end_dim", -1.0);
            return e;
        });
    f.add(
        "Delay", [](const NodeSpec& s) { return std::make_unique<DelayNode>(s); },
        "y(t) = x(t - delay); `delay` in seconds, rounded to steps of dt",
        [] {
            auto e = example_of({6}, In::ternary);
            e.params.set("delay", 0.002);  // two steps at the default dt
            return e;
        });
    f.add(
        "ternion.Tokens", [](const NodeSpec& s) { return std::make_unique<TokensNode>(s); },
        "[C, H, W] -> [H*W, C] tokens",
        [] {
            return example_of({3, 2, 2});
        });
    f.add(
        "ternion.TokenMean", [](const NodeSpec& s) { return std::make_unique<TokenMeanNode>(s); },
        "[N, D] -> [D], mean over tokens (readout)",
        [] {
            return example_of({4, 3}, In::ternary);
        });
}

}  // namespace ternion
