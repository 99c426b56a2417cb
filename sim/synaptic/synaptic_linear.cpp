// Affine and Linear: y = W x (+ b) on the last axis, from ColumnWeights (one token, compressed
// weights, the dense engine) or the Projection (several tokens, dense weights, the event engine).
#include <algorithm>
#include <memory>
#include <mutex>

#include "sim/kernels/token_kernel.hpp"
#include "sim/synaptic/projection.hpp"
#include "sim/synaptic/synaptic.hpp"
#include "sim/synaptic/synaptic_internal.hpp"

namespace ternion::synaptic {

namespace {

// ------------------------------------------------------------------ Affine / Linear

// Per-sample scratch, rebuilt by every step except the row split, which is made once per run.
struct BlockScratch : NodeState {
    std::shared_ptr<const RowSplit> split;           // one row block per thread of the run
    std::vector<BlockIndices> block_active;          // per block: its non-zero outputs
    std::vector<std::uint32_t> offsets, by_channel;  // active inputs bucketed by channel
    std::vector<float> packed;                       // one token: the active inputs' values
    TokenEvents events;                              // active inputs by token (dense weights)
    std::vector<std::uint64_t> nz, nt;               // per token and 64-row group
    std::vector<TokenScratch> kernel;                // per block: kernel scratch
};

// One token's step as the blocks see it: copied into each thread's job, so that a member on
// another core reads no stack frame of the calling thread, whose cache lines it keeps writing.
struct OneTokenJob {
    float* y;
    const float* xs;           // event engine: the active inputs' values, packed
    const float* xin;          // dense engine: every input
    const std::uint32_t* act;  // the active inputs
    std::size_t na;            // how many
    bool dense, unit, list;
};

class LinearNode final : public Node {
  public:
    CountTraits count_traits() const override {
        return {.connection = true,
                .weight_value_bytes = value_bytes(weights_.storage()),
                .fanout_taps = static_cast<std::uint64_t>(out_)};
    }
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
        weights_.build_csr(indptr, indices, data, out_, in_);
    }
    NodeCategory category() const override { return NodeCategory::synaptic; }
    bool pure() const override { return true; }
    Shape declared_in_shape() const override { return {in_}; }
    void bind(const Shape& in) override {
        in_shape_ = in;
        if (!in.empty() && in.back() == in_) {
            rows_ = numel(in) / in_;
            out_shape_ = in;
            out_shape_.back() = out_;
            if (rows_ > 1 && !weights_.sparse())
                tokens_ = Projection::from_columns(weights_.dense_column(0), in_, out_, bias_,
                                                   BiasOrder::last);
        } else if (numel(in) == in_) {
            rows_ = 1;
            out_shape_ = {out_};
        } else {
            fail("weight", "expects inputs of size " + std::to_string(in_) + " but receives " +
                               shape_str(in));
        }
    }
    std::unique_ptr<NodeState> make_state() const override {
        return std::make_unique<BlockScratch>();
    }
    // Scratch only, rebuilt by every step: kept as it is, with its capacity (and its split).
    bool reset_state(NodeState*) const override { return true; }

    void step(const Activity& in, NodeState* state, Activity& out,
              const StepContext& ctx) const override {
        auto& sc = static_cast<BlockScratch&>(*state);
        split_rows(sc, ctx);
        const bool dense = ctx.engine == Engine::dense;
        const bool unit = in.ternary && !dense;
        if (rows_ == 1)
            step_one_token(in, sc, out, ctx, dense, unit);
        else if (!dense && !weights_.sparse())
            step_tokens_dense(in, sc, out, ctx, unit);
        else
            step_tokens_by_channel(in, sc, out, ctx, dense, unit);
        count_step(in, sc, ctx, dense);
    }

  private:
    // The run's row blocks: one per thread when the blocks may go to several threads. Made from
    // the stored weights, which do not depend on it, by prepare_run before the run's clock
    // starts (on the N = 16000 LIF population it is a cache miss per input column, ~0.9 ms).
    void prepare_run(std::int64_t threads) const override { (void)split_for(threads); }
    std::shared_ptr<const RowSplit> split_for(std::int64_t parts) const {
        const std::lock_guard<std::mutex> lock(split_mutex_);
        for (const auto& s : splits_)
            if (s->parts == parts) return s;
        auto s = std::make_shared<RowSplit>();
        weights_.split(parts, *s);
        splits_.push_back(s);
        return s;
    }
    // A state's first step takes the run's split (the lock is not taken again after that).
    void split_rows(BlockScratch& sc, const StepContext& ctx) const {
        const std::int64_t parts =
            ctx.team ? ctx.team->size() : (ctx.parallel_inner ? ctx.threads : 1);
        if (sc.split && sc.split->parts == parts) return;
        sc.split = split_for(parts);
        sc.block_active.assign(static_cast<std::size_t>(sc.split->nblocks), {});
        sc.kernel.resize(static_cast<std::size_t>(sc.split->nblocks));
    }

    // One token: the output rows are split into blocks, each scanning all active inputs.
    void step_one_token(const Activity& in, BlockScratch& sc, Activity& out, const StepContext& ctx,
                        bool dense, bool unit) const {
        // The active inputs' values, packed: blocks on other threads then read one short array
        // instead of a cache line of `in` per event, lines this thread just wrote.
        auto& packed = sc.packed;
        packed.resize(in.active.size());
        for (std::size_t j = 0; j < in.active.size(); ++j) packed[j] = in.value_at(in.active[j]);
        const OneTokenJob job{out.values.data(),
                              packed.data(),
                              in.values.data(),
                              in.active.data(),
                              in.active.size(),
                              dense,
                              unit,
                              ctx.list_output};
        // Synapse events expected this step (rows count a quarter: fill, bias, collect).
        const std::int64_t work = dense
                                      ? in_ * out_
                                      : static_cast<std::int64_t>(job.na * weights_.nnz() /
                                                                  static_cast<std::uint64_t>(in_)) +
                                            out_ / 4;
        BlockScratch* scp = &sc;
        ctx.for_blocks(
            sc.split->nblocks, 1,
            [this, scp, job](std::int64_t b0, std::int64_t b1) {
                one_token_blocks(*scp, job, b0, b1);
            },
            work);
        gather_blocks(sc, out, ctx, work);
    }

    // Blocks [b0, b1) of one token, on one thread: one pass over the events for all of them (a
    // column's synapses for consecutive blocks lie together), bias, then each block's non-zeros.
    void one_token_blocks(BlockScratch& sc, const OneTokenJob& job, std::int64_t b0,
                          std::int64_t b1) const {
        const RowSplit& s = *sc.split;
        const std::int64_t r0 = s.row_begin(b0), r1 = std::min(out_, s.row_begin(b1));
        float* y = job.y;
        std::fill(y + r0, y + r1, 0.0f);
        if (job.dense) {
            for (std::int64_t c = 0; c < in_; ++c)
                weights_.add_column(c, job.xin[c], false, y, s, b0, b1);
        } else {
            deliver_events(s, job, b0, b1);
        }
        if (!bias_.empty())
            for (std::int64_t r = r0; r < r1; ++r) y[r] += bias_[static_cast<std::size_t>(r)];
        for (std::int64_t b = b0; b < b1; ++b) {
            const std::int64_t q0 = s.row_begin(b), q1 = std::min(out_, q0 + s.block);
            auto& act = sc.block_active[static_cast<std::size_t>(b)];
            if (job.list) {
                act.resize(static_cast<std::size_t>(q1 - q0));
                act.resize(collect_nonzero(y, q0, q1, act.data(), act.ternary));
            } else {
                act.clear();
                act.count = count_nonzero(y, q0, q1, act.ternary);
            }
        }
    }

    // Adds the columns of the active inputs to blocks [b0, b1), prefetching ahead.
    void deliver_events(const RowSplit& s, const OneTokenJob& job, std::int64_t b0,
                        std::int64_t b1) const {
        const std::size_t d = s.prefetch_events, na = job.na;
        const std::uint32_t* act = job.act;
        // The first events' offsets and synapses too: with few events per step they are a
        // large share of the work.
        for (std::size_t j = 0; j < std::min(2 * d, na); ++j)
            weights_.prefetch(act[j], s, b0, b1, 0);
        for (std::size_t j = 0; j < std::min(d, na); ++j) weights_.prefetch(act[j], s, b0, b1, 1);
        for (std::size_t j = 0; j < na; ++j) {
            if (j + 2 * d < na) weights_.prefetch(act[j + 2 * d], s, b0, b1, 0);
            if (j + d < na) weights_.prefetch(act[j + d], s, b0, b1, 1);
            weights_.add_column(act[j], job.xs[j], job.unit, job.y, s, b0, b1);
        }
    }

    // The output's flags and index list (or count) from the blocks' own.
    void gather_blocks(BlockScratch& sc, Activity& out, const StepContext& ctx,
                       std::int64_t work) const {
        out.ternary = true;
        for (auto& a : sc.block_active) out.ternary = out.ternary && a.ternary;
        if (ctx.list_output) {
            ctx.concat_blocks(sc.block_active, out.active, work);
        } else {
            std::size_t count = 0;
            for (auto& a : sc.block_active) count += a.count;
            out.mark_unlisted(count);
        }
    }

    // Several tokens, the dense engine or compressed weights.
    void step_tokens_by_channel(const Activity& in, BlockScratch& sc, Activity& out,
                                const StepContext& ctx, bool dense, bool unit) const {
        float* y = out.values.data();
        std::fill(out.values.begin(), out.values.end(), 0.0f);
        const RowSplit& s = *sc.split;
        if (dense) {
            for (std::int64_t t = 0; t < rows_; ++t)
                for (std::int64_t c = 0; c < in_; ++c)
                    weights_.add_column(c, in.values[static_cast<std::size_t>(t * in_ + c)], false,
                                        y + t * out_, s, 0, s.nblocks);
        } else {
            add_by_channel(in, sc, y, ctx, unit);
        }
        if (!bias_.empty())
            for (std::int64_t t = 0; t < rows_; ++t)
                for (std::int64_t r = 0; r < out_; ++r)
                    y[t * out_ + r] += bias_[static_cast<std::size_t>(r)];
        if (ctx.list_output) {
            out.active.resize(out.values.size());
            out.active.resize(collect_nonzero(y, 0, rows_ * out_, out.active.data(), out.ternary));
        } else {
            out.mark_unlisted(count_nonzero(y, 0, rows_ * out_, out.ternary));
        }
    }

    // Channel-major: each weight column is read once per step and applied to every token where
    // that channel is active. Every output still receives its terms in ascending channel order,
    // exactly as the dense loop adds them.
    void add_by_channel(const Activity& in, BlockScratch& sc, float* y, const StepContext& ctx,
                        bool unit) const {
        auto& off = sc.offsets;
        auto& order = sc.by_channel;
        off.assign(static_cast<std::size_t>(in_ + 1), 0);
        for (auto i : in.active) ++off[i % static_cast<std::uint32_t>(in_) + 1];
        for (std::int64_t c = 0; c < in_; ++c)
            off[static_cast<std::size_t>(c + 1)] += off[static_cast<std::size_t>(c)];
        order.resize(in.active.size());
        for (auto i : in.active) order[off[i % static_cast<std::uint32_t>(in_)]++] = i;
        // off[c] now ends bucket c; bucket c starts where bucket c-1 ends.
        const RowSplit& s = *sc.split;
        ctx.for_blocks(s.nblocks, 1, [&](std::int64_t b0, std::int64_t b1) {
            std::uint32_t start = 0;
            for (std::int64_t c = 0; c < in_; ++c) {
                const std::uint32_t end = off[static_cast<std::size_t>(c)];
                for (std::uint32_t k = start; k < end; ++k) {
                    const std::uint32_t i = order[k];
                    const std::int64_t t = i / static_cast<std::uint32_t>(in_);
                    weights_.add_column(c, in.values[i], unit, y + t * out_, s, b0, b1);
                }
                start = end;
            }
        });
    }

    // Counts from events and shapes: each non-zero input touches its column's weights.
    // Both engines book the event engine's count (the dense one did more work for it).
    void count_step(const Activity& in, const BlockScratch& sc, const StepContext& ctx,
                    bool dense) const {
        if (!dense && rows_ != 1 && !weights_.sparse()) {
            const auto& ev = sc.events;
            count_events_n(
                ev.chan.size(), in.ternary,
                [&](std::size_t k) { return weights_.col_nnz(ev.chan[k]); },
                [&](std::size_t k) { return ev.x[k]; }, bytes_per_synapse(weights_.storage()), ctx);
        } else {
            count_events(
                in,
                [&](std::uint32_t c) {
                    return weights_.col_nnz(static_cast<std::int64_t>(c % in_));
                },
                bytes_per_synapse(weights_.storage()), ctx);
        }
    }

    // Event-driven, several tokens, dense weights: the projection over row blocks; also
    // sets out.active and out.ternary from the kernel's masks.
    void step_tokens_dense(const Activity& in, BlockScratch& sc, Activity& out,
                           const StepContext& ctx, bool unit) const {
        auto& ev = sc.events;
        ev.build(in.active, in.values.data(), in_, rows_);
        const std::int64_t groups = (out_ + 63) / 64;
        sc.nz.resize(static_cast<std::size_t>(rows_ * groups));
        sc.nt.resize(static_cast<std::size_t>(rows_ * groups));
        float* y = out.values.data();
        const RowSplit& s = *sc.split;
        ctx.for_blocks(s.nblocks, 1, [&](std::int64_t b0, std::int64_t b1) {
            const std::int64_t r0 = s.row_begin(b0), r1 = std::min(out_, s.row_begin(b1));
            tokens_.rows(ev, unit, y, r0, r1, sc.nz.data(), sc.nt.data(),
                         sc.kernel[static_cast<std::size_t>(b0)]);
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

  public:
    std::uint64_t dense_macs_per_step() const override {
        return static_cast<std::uint64_t>(rows_ * in_ * out_);
    }
    std::uint64_t dense_synops_per_step() const override { return dense_macs_per_step(); }
    // syops counts a Linear's bias once per call (out_features), not per token.
    LayerGeometry geometry() const override {
        LayerGeometry g;
        g.kind = LayerGeometry::Kind::connection;
        g.in_channels = in_, g.out_channels = out_;
        g.bias = !bias_.empty();
        return g;
    }
    ModuleShape module_shape() const override {
        ModuleShape m;
        m.bias_ops_per_step = source_bias_ ? static_cast<std::uint64_t>(out_) : 0;
        m.batchnorm_elems_per_step = source_bn_ ? static_cast<std::uint64_t>(rows_ * out_) : 0;
        return m;
    }
    ConnectionNonzeros connection_nonzeros() const override {
        ConnectionNonzeros z;
        for (std::int64_t c = 0; c < in_; ++c) z.per_input.push_back(weights_.col_nnz(c));
        z.per_output = weights_.row_nnz();
        return z;
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
    // The row splits of this node's runs by thread count (prepare_run, split_for).
    mutable std::mutex split_mutex_;
    mutable std::vector<std::shared_ptr<const RowSplit>> splits_;
    Projection tokens_;  // several tokens, dense weights: the event engine's map
    std::vector<float> bias_;
    bool source_bias_ = false, source_bn_ = false;  // the source layer's bias, a folded BN
};

NodeExample linear_example(bool affine) {
    auto e = example_of({6}, affine ? In::binary : In::ternary);
    set_example(e.params, "weight", {4, 6}, 1);
    if (affine) set_example(e.params, "bias", {4}, 2);
    return e;
}

}  // namespace

void register_linear(NodeFactory& f) {
    f.add(
        "Affine", [](const NodeSpec& s) { return std::make_unique<LinearNode>(s, true); },
        "y = W x + b on the last axis; `weight` (out, in), `bias`, optional bn_* folded",
        [] { return linear_example(true); });
    f.add(
        "Linear", [](const NodeSpec& s) { return std::make_unique<LinearNode>(s, false); },
        "y = W x on the last axis; `weight` (out, in), optional bn_* folded",
        [] { return linear_example(false); });
}

}  // namespace ternion::synaptic
