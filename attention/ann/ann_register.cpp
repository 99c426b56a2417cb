// Model-file node types for the ANN reference attentions. Each node takes one sample's analog
// [N, D] activity per step (time kinds: [N, D + 1], the last column holding the time stamps)
// and emits [N, D_out]; its parameters use the same dataset names as the weight files.
#include <memory>

#include "attention/ann/ann_attention.hpp"
#include "sim/core/node_spec.hpp"

namespace ternion {

namespace {

struct KindType {
    const char* kind;
    const char* type;
    const char* description;
};

const KindType kTypes[] = {
    {"softmax", "ternion.SoftmaxAttention",
     "ANN multi-head softmax attention (W_Q, W_K, W_V, W_O)"},
    {"cat", "ternion.CAT", "ANN circular-convolutional attention (W_A, W_V, W_O), FFT length N"},
    {"cat-causal", "ternion.CATCausal", "ANN causal CAT: linear convolution by zero padding"},
    {"cat-avgkey", "ternion.CATAvgKey", "ANN averaged-key CAT (W_Q, W_K, W_V, W_O)"},
    {"linear", "ternion.LinearAttention", "ANN linear attention, elu(x)+1 feature map"},
    {"primal", "ternion.PrimalAttention", "ANN Primal-Attention (KSVD primal, cosine features)"},
    {"time-bochner", "ternion.TimeBochnerAttention",
     "ANN softmax attention over [x ; Bochner time embedding]; input [N, D + 1], last column t"},
    {"time-mercer", "ternion.TimeMercerAttention",
     "ANN softmax attention over [x ; Mercer time embedding]; input [N, D + 1], last column t"},
    {"npt", "ternion.NPT", "ANN Non-Parametric Transformer blocks (ABD / ABA) over [n, d*e]"},
};

class AnnAttentionNode final : public Node {
  public:
    AnnAttentionNode(const NodeSpec& spec, std::unique_ptr<ann::Attention> a)
        : Node(spec.name(), spec.type()), a_(std::move(a)) {
        if (spec.has("tokens")) {
            const double t = spec.scalar("tokens");
            if (t < 1 || t != static_cast<double>(static_cast<std::int64_t>(t)))
                spec.fail("tokens", "expected a positive integer");
            tokens_ = static_cast<std::int64_t>(t);
        }
    }

    NodeCategory category() const override { return NodeCategory::attention; }
    std::int64_t width() const { return a_->in_dim() + (a_->needs_time() ? 1 : 0); }

    Shape declared_in_shape() const override { return tokens_ ? Shape{tokens_, width()} : Shape{}; }

    void bind(const Shape& in) override {
        const std::int64_t total = numel(in);
        if (in.empty() || total % width() != 0)
            fail("", "input shape " + shape_str(in) + " is not [N, " + std::to_string(width()) +
                         "]" + (a_->needs_time() ? " (D channels and the time stamp)" : ""));
        if (in.size() >= 2 && in.back() != width())
            fail("",
                 "last axis of the input " + shape_str(in) + " must be " + std::to_string(width()));
        const std::int64_t n = total / width();
        if (tokens_ && n != tokens_)
            fail("tokens", "input has " + std::to_string(n) + " tokens, the node declares " +
                               std::to_string(tokens_));
        n_ = n;
        in_shape_ = in;
        out_shape_ = {n, a_->out_dim()};
    }

    // Holds the input of a step whose attention maps a trace wants; attention_maps()
    // recomputes them from it.
    struct State : NodeState {
        std::vector<float> x, t;
        bool kept = false;
    };
    std::unique_ptr<NodeState> make_state() const override { return std::make_unique<State>(); }
    bool attention_maps(const NodeState* state, AttentionMaps& m) const override {
        auto* s = dynamic_cast<const State*>(state);
        if (!s || !s->kept ||
            !a_->maps(s->x.data(), s->t.empty() ? nullptr : s->t.data(), n_, m.scores, m.weights))
            return false;
        m.heads = a_->heads();
        m.rows = m.cols = n_;
        return true;
    }

    void step(const Activity& in, NodeState* state, Activity& out,
              const StepContext& ctx) const override {
        const float* x = in.values.data();
        std::vector<float> xs, ts;
        if (a_->needs_time()) {  // split [x | t] into x [N, D] and t [N]
            const std::int64_t d = a_->in_dim();
            xs.resize(static_cast<std::size_t>(n_ * d));
            ts.resize(static_cast<std::size_t>(n_));
            for (std::int64_t i = 0; i < n_; ++i) {
                std::copy(x + i * (d + 1), x + i * (d + 1) + d, xs.begin() + i * d);
                ts[i] = x[i * (d + 1) + d];
            }
            x = xs.data();
        }
        if (auto* s = static_cast<State*>(state)) {
            s->kept = ctx.keep_attention;
            if (s->kept) {
                s->x.assign(x, x + n_ * a_->in_dim());
                s->t = ts;
            }
        }
        out.values.resize(static_cast<std::size_t>(n_ * a_->out_dim()));
        a_->forward(x, ts.empty() ? nullptr : ts.data(), n_, out.values.data(), ctx.ops,
                    ctx.parallel_inner);
        out.scan();
    }

    std::uint64_t dense_macs_per_step() const override { return a_->op_counts(n_).mac; }
    std::uint64_t param_count() const override { return a_->param_count(); }
    std::vector<std::pair<std::string, double>> attributes() const override {
        return {{"tokens", static_cast<double>(n_)},
                {"dim", static_cast<double>(a_->in_dim())},
                {"out_dim", static_cast<double>(a_->out_dim())},
                {"heads", static_cast<double>(a_->heads())}};
    }
    std::vector<std::pair<std::string, std::string>> summary() const override {
        return {{"kind", a_->kind()},
                {"heads", std::to_string(a_->heads())},
                {"dim", std::to_string(a_->in_dim()) + " -> " + std::to_string(a_->out_dim())}};
    }

  private:
    std::unique_ptr<ann::Attention> a_;
    std::int64_t tokens_ = 0, n_ = 0;
};

// Example for the conformance harness: the kind's random weights (the ones `ternion bench`
// uses) at width 8 with 2 heads, over 4 tokens.
NodeExample ann_example(const std::string& kind) {
    auto e = example_of({4, 8}, NodeExample::Input::analog);
    const auto w = ann::random_weights(kind, 8, 2, 3);  // named: the loop borrows its map
    for (const auto& [name, t] : w.entries())
        e.params.set(name, std::vector<double>(t.data.begin(), t.data.end()), t.dims);
    e.params.set("tokens", 4.0);
    // These kinds take their head count from a weight's shape (W_A's columns, W_e's first
    // axis) and never read `heads`.
    if (kind == "cat" || kind == "cat-causal" || kind == "primal") e.params.erase("heads");
    // Time kinds: width 8 holds x and a time embedding of 2 channels (bochner 2 * 8/8, mercer
    // 8/4), so x has 6 channels; the stamp is a seventh column.
    if (kind == "time-bochner" || kind == "time-mercer") e.input = {4, 7};
    return e;
}

}  // namespace

void register_ann_attention_nodes(NodeFactory& f) {
    for (const auto& t : kTypes) {
        const std::string kind = t.kind;
        f.add(
            t.type,
            [kind](const NodeSpec& spec) -> std::unique_ptr<Node> {
                ann::SpecWeights w(spec);
                return std::make_unique<AnnAttentionNode>(spec, ann::make_attention(kind, w));
            },
            t.description, [kind] { return ann_example(kind); });
    }
}

}  // namespace ternion
