// Elementwise synaptic node types: Scale (y = s x) and Delay (y(t) = x(t - d)).
#include <algorithm>
#include <cmath>

#include "synaptic_internal.hpp"

namespace ternion::synaptic {

namespace {

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
        "Delay", [](const NodeSpec& s) { return std::make_unique<DelayNode>(s); },
        "y(t) = x(t - delay); `delay` in seconds, rounded to steps of dt",
        [] {
            auto e = example_of({6}, In::ternary);
            e.params.set("delay", 0.002);  // two steps at the default dt
            return e;
        });
}

}  // namespace ternion::synaptic
