// Elementwise synaptic node types: Scale (y = s x), ternion.BatchNorm (an unfolded eval-mode
// BatchNorm over one axis) and Delay (y(t) = x(t - d)).
#include <algorithm>
#include <cmath>

#include "sim/synaptic/synaptic.hpp"
#include "sim/synaptic/synaptic_internal.hpp"

namespace ternion::synaptic {

namespace {

// Scale and Delay: a synaptic node whose parameter holds one value for every element or one per
// input element; the output has the input's shape.
class PerElementNode : public Node {
  public:
    using Node::Node;
    NodeCategory category() const override { return NodeCategory::synaptic; }

  protected:
    // The input shape `count` values declare: [count], or none for a single value.
    static Shape per_element_shape(std::size_t count) {
        return count > 1 ? Shape{static_cast<std::int64_t>(count)} : Shape{};
    }
    // Refuses an input that `count` values of `param` do not fit.
    void bind_per_element(const char* param, std::size_t count, const Shape& in) {
        if (count != 1 && static_cast<std::int64_t>(count) != numel(in))
            fail(param, "has " + std::to_string(count) + " values for input " + shape_str(in));
        in_shape_ = out_shape_ = in;
    }
};

// ------------------------------------------------------------------ Scale

class ScaleNode final : public PerElementNode {
  public:
    explicit ScaleNode(const NodeSpec& s) : PerElementNode(s.name(), s.type()) {
        scale_ = s.floats("scale");
    }
    Shape declared_in_shape() const override { return per_element_shape(scale_.size()); }
    void bind(const Shape& in) override { bind_per_element("scale", scale_.size(), in); }
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

// ------------------------------------------------------------------ ternion.BatchNorm

// y = BatchNorm(x) over the channels of axis `axis` (0: [C, ...] as after a convolution; -1:
// [..., C] as tokens), in the form `form` (sim/synaptic/synaptic.hpp, BatchNorm). A zero input maps
// to a value that is generally not zero, so every element is computed.
class BatchNormNode final : public Node {
  public:
    CountTraits count_traits() const override { return {.batchnorm = true}; }
    explicit BatchNormNode(const NodeSpec& s) : Node(s.name(), s.type()) {
        if (!s.has("running_mean")) s.fail("running_mean", "missing parameter");
        const std::int64_t c = numel(s.dims("running_mean"));
        if (c < 1) s.fail("running_mean", "needs one value per channel");
        const auto p = read_batchnorm(s, "", c, false);
        const auto form = s.string_opt("form").value_or("normalize");
        if (form != "normalize" && form != "fma")
            s.fail("form", "must be \"normalize\" or \"fma\" (got \"" + form + "\")");
        bn_ = BatchNorm(p.gamma, p.beta, p.mean, p.var, p.eps,
                        form == "fma" ? BatchNorm::Form::fma : BatchNorm::Form::normalize);
        axis_ = s.integer_or("axis", 0);
    }
    NodeCategory category() const override { return NodeCategory::synaptic; }
    bool pure() const override { return true; }
    bool reads_values_only() const override { return true; }
    void bind(const Shape& in) override {
        const auto nd = static_cast<std::int64_t>(in.size());
        if (axis_ < -nd || axis_ >= nd)
            fail("axis", "is " + std::to_string(axis_) + " for input " + shape_str(in));
        const std::int64_t a = axis_ < 0 ? axis_ + nd : axis_;
        if (in[static_cast<std::size_t>(a)] != bn_.channels())
            fail("axis", "selects " + std::to_string(in[static_cast<std::size_t>(a)]) +
                             " channels of input " + shape_str(in) + ", running_mean has " +
                             std::to_string(bn_.channels()));
        inner_ = 1;
        for (auto d = static_cast<std::size_t>(a) + 1; d < in.size(); ++d) inner_ *= in[d];
        in_shape_ = out_shape_ = in;
    }
    void step(const Activity& in, NodeState*, Activity& out,
              const StepContext& ctx) const override {
        const std::int64_t n = in_size(), C = bn_.channels();
        if (inner_ == 1) {
            std::copy(in.values.begin(), in.values.end(), out.values.begin());
            bn_.apply_rows(out.values.data(), n / C);
        } else {
            for (std::int64_t i = 0; i < n; ++i) {
                const auto k = static_cast<std::size_t>(i);
                out.values[k] = bn_.apply(in.values[k], static_cast<std::size_t>(i / inner_ % C));
            }
        }
        out.scan();
        ctx.ops->mac += static_cast<std::uint64_t>(n);  // one multiply-add per element
    }
    std::uint64_t dense_macs_per_step() const override {
        return static_cast<std::uint64_t>(in_size());
    }
    ModuleShape module_shape() const override {
        ModuleShape m;
        m.batchnorm_elems_per_step = static_cast<std::uint64_t>(in_size());
        return m;
    }
    std::uint64_t param_count() const override {
        return 4 * static_cast<std::uint64_t>(bn_.channels());
    }

  private:
    BatchNorm bn_;
    std::int64_t axis_ = 0, inner_ = 1;  // elements after the channel axis
};

// ------------------------------------------------------------------ Delay

struct DelayState : NodeState {
    std::vector<float> ring;  // [slots][n]
    std::int64_t head = 0;
};

class DelayNode final : public PerElementNode {
  public:
    explicit DelayNode(const NodeSpec& s) : PerElementNode(s.name(), s.type()) {
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
    Shape declared_in_shape() const override { return per_element_shape(delay_s_.size()); }
    void bind(const Shape& in) override {
        bind_per_element("delay", steps_.size(), in);
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

}  // namespace

void register_elementwise(NodeFactory& f) {
    f.add(
        "Scale", [](const NodeSpec& s) { return std::make_unique<ScaleNode>(s); },
        "y = s * x elementwise; `scale`",
        [] {
            auto e = example_of({6}, In::analog);
            set_example(e.params, "scale", {6}, 5);
            return e;
        });
    f.add(
        "ternion.BatchNorm", [](const NodeSpec& s) { return std::make_unique<BatchNormNode>(s); },
        "eval-mode BatchNorm over `axis`, unfolded, as PyTorch rounds it; `running_mean`, "
        "`running_var`, `weight`, `bias`, `eps`, `form` (normalize | fma)",
        [] {
            auto e = example_of({2, 3}, In::analog);
            set_example(e.params, "running_mean", {3}, 7);
            e.params.set("running_var", {0.5, 2.0, 1.0}, {3});
            set_example(e.params, "weight", {3}, 8);
            set_example(e.params, "bias", {3}, 9);
            e.params.set("axis", -1.0);
            e.params.set("form", std::string("fma"));
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
}

}  // namespace ternion::synaptic
