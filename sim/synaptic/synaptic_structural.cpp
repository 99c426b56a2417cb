// Structural node types: Input, Output, Identity (residual joins), Flatten, Pad, and the token
// helpers of spiking Transformers (Tokens, TokenMean).
#include <algorithm>

#include "sim/synaptic/synaptic_internal.hpp"

namespace ternion::synaptic {

namespace {

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

// ------------------------------------------------------------------ Flatten

class FlattenNode final : public Node {
  public:
    LayerGeometry geometry() const override { return {.kind = LayerGeometry::Kind::reshape}; }
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

// ------------------------------------------------------------------ Pad

// [C, H, W] -> [C, H + 2 ph, W + 2 pw], the border of channel c holding value[c]. SDT V2's
// RepConv pads a BatchNorm's output with that BatchNorm's response to zero, not with zero, so a
// convolution's own zero padding cannot express it. Values only move here: nothing is counted;
// the layer it feeds books the border's non-zero values as inputs, as it books any others.
class PadNode final : public Node {
  public:
    explicit PadNode(const NodeSpec& s) : Node(s.name(), s.type()) {
        const auto p = pair_param(s, "padding", 0, 0);
        ph_ = p[0];
        pw_ = p[1];
        value_ = s.floats("value");
        if (value_.empty()) s.fail("value", "needs one value per channel");
    }
    NodeCategory category() const override { return NodeCategory::other; }
    void bind(const Shape& in) override {
        if (in.size() != 3 || in[0] != static_cast<std::int64_t>(value_.size()))
            fail("value", "expects input [" + std::to_string(value_.size()) +
                              ", H, W] (one value per channel), receives " + shape_str(in));
        in_shape_ = in;
        out_shape_ = {in[0], in[1] + 2 * ph_, in[2] + 2 * pw_};
        if (numel(out_shape_) > kMaxElements) fail("padding", "absurd output size");
    }
    void step(const Activity& in, NodeState*, Activity& out, const StepContext&) const override {
        const std::int64_t H = in_shape_[1], W = in_shape_[2];
        const std::int64_t OH = out_shape_[1], OW = out_shape_[2];
        for (std::int64_t c = 0; c < in_shape_[0]; ++c) {
            float* o = out.values.data() + c * OH * OW;
            std::fill(o, o + OH * OW, value_[static_cast<std::size_t>(c)]);
            const float* x = in.values.data() + c * H * W;
            for (std::int64_t y = 0; y < H; ++y)
                std::copy(x + y * W, x + (y + 1) * W, o + (y + ph_) * OW + pw_);
        }
        out.scan();
    }
    std::vector<std::pair<std::string, std::string>> summary() const override {
        return {{"padding", std::to_string(ph_) + "x" + std::to_string(pw_)}};
    }
    std::uint64_t param_count() const override { return value_.size(); }

  private:
    std::int64_t ph_ = 0, pw_ = 0;
    std::vector<float> value_;
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
        // In blocks of 16 x 16, so that neither the reads nor the writes stride through a whole
        // map (a column at a time wrote one float per cache line: 5 % of a QKFormer run).
        constexpr std::int64_t B = 16;
        const float* x = in.values.data();
        float* y = out.values.data();
        for (std::int64_t c0 = 0; c0 < C_; c0 += B)
            for (std::int64_t p0 = 0; p0 < HW_; p0 += B) {
                const std::int64_t c1 = std::min(C_, c0 + B), p1 = std::min(HW_, p0 + B);
                for (std::int64_t p = p0; p < p1; ++p)
                    for (std::int64_t c = c0; c < c1; ++c) y[p * C_ + c] = x[c * HW_ + p];
            }
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

// Examples for the conformance harness: small, with every optional feature of the type on.
NodeExample shape_example(In kind) {
    auto e = example_of({6}, kind);
    e.params.set("shape", {6.0}, {1});
    return e;
}

}  // namespace

void register_structural(NodeFactory& f) {
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
        "Flatten", [](const NodeSpec& s) { return std::make_unique<FlattenNode>(s); },
        "merges dims start_dim..end_dim of the un-batched shape",
        [] {
            auto e = example_of({2, 3});
            e.params.set("start_dim", 0.0).set("end_dim", -1.0);
            return e;
        });
    f.add(
        "ternion.Pad", [](const NodeSpec& s) { return std::make_unique<PadNode>(s); },
        "[C, H, W] -> [C, H+2ph, W+2pw], the border of channel c set to value[c]",
        [] {
            auto e = example_of({2, 3, 2}, In::analog);
            e.params.set("padding", {1.0, 2.0}, {2});
            e.params.set("value", {0.5, -1.25}, {2});
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

}  // namespace ternion::synaptic
