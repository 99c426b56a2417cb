// Pooling over 2-d windows: SumPool2d, AvgPool2d, MaxPool2d.
#include <algorithm>
#include <limits>

#include "sim/synaptic/synaptic_internal.hpp"

namespace ternion::synaptic {

namespace {

// ------------------------------------------------------------------ pooling

class PoolNode final : public Node {
  public:
    CountTraits count_traits() const override { return {.pooling = true}; }
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
    bool pure() const override { return true; }
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
        // Comparisons of all windows: sum over (rows x cols - 1) of the non-empty ones, which
        // factors into the rows' and the columns' sums (O(OH + OW), whatever the map's size).
        std::uint64_t rows = 0, cols = 0, nrows = 0, ncols = 0;
        for (std::int64_t oy = 0; oy < OH_; ++oy)
            if (const auto [lo, hi] = rows_of(oy); lo < hi) {
                rows += static_cast<std::uint64_t>(hi - lo);
                ++nrows;
            }
        for (std::int64_t ox = 0; ox < OW_; ++ox)
            if (const auto [lo, hi] = cols_of(ox); lo < hi) {
                cols += static_cast<std::uint64_t>(hi - lo);
                ++ncols;
            }
        window_cmps_ = rows * cols - nrows * ncols;
        window_cmps_ *= static_cast<std::uint64_t>(C_);
        build_reach();
    }
    void step(const Activity& in, NodeState*, Activity& out,
              const StepContext& ctx) const override {
        // MaxPool's comparisons depend on the windows alone, whichever path computes them.
        if (mode_ == Mode::max) ctx.ops->cmp += window_cmps_;
        if (!reach_.empty() && ctx.engine == Engine::event && listed_ones(in)) {
            max_of_spikes(in, out);
            return;
        }
        Tally t;
        switch (mode_) {
            case Mode::max:
                pool<Mode::max>(in.values.data(), out.values.data(), t);
                break;
            case Mode::avg:
                pool<Mode::avg>(in.values.data(), out.values.data(), t);
                break;
            case Mode::sum:
                pool<Mode::sum>(in.values.data(), out.values.data(), t);
                break;
        }
        out.scan();
        ctx.ops->ac += t.adds;
        if (mode_ == Mode::avg) ctx.ops->div += out.active.size();
    }
    struct Tally {
        std::uint64_t adds = 0;
    };
    // The input rows [lo, hi) of output row oy's window (padding reads nothing); columns alike.
    std::pair<std::int64_t, std::int64_t> rows_of(std::int64_t oy) const {
        const std::int64_t y0 = oy * sh_ - ph_;
        return {std::max<std::int64_t>(y0, 0), std::min(y0 + kh_, H_)};
    }
    std::pair<std::int64_t, std::int64_t> cols_of(std::int64_t ox) const {
        const std::int64_t x0 = ox * sw_ - pw_;
        return {std::max<std::int64_t>(x0, 0), std::min(x0 + kw_, W_)};
    }
    // MaxPool of binary spikes (listed_ones), event by event: a window's maximum is 1 where it
    // holds a spike, else 0 (a window always reads at least one zero or lies over padding
    // alone, which gives 0 too). Each spike sets the outputs whose windows hold
    // it (reach_: per input position, the offsets of those outputs in their channel's plane,
    // padded with repeats to a fixed count, so a spike costs that many stores and no branch).
    // The same values as the window scan, which the dense engine keeps.
    void max_of_spikes(const Activity& in, Activity& out) const {
        out.clear();
        switch (reach_n_) {
            case 1:
                set_reached<1>(in, out.values.data());
                break;
            case 2:
                set_reached<2>(in, out.values.data());
                break;
            case 4:
                set_reached<4>(in, out.values.data());
                break;
            default:
                set_reached<0>(in, out.values.data());
        }
        out.scan();
    }
    template <int N>  // N = reach_n_, or 0: read it at run time
    void set_reached(const Activity& in, float* y) const {
        const std::int64_t n = N ? N : reach_n_;
        const auto plane = static_cast<std::uint32_t>(H_ * W_);
        std::uint32_t base = 0;  // the first index of the spike's channel (spikes ascend)
        float* yc = y;
        for (auto i : in.active) {
            while (i >= base + plane) {
                base += plane;
                yc += OH_ * OW_;
            }
            const std::uint32_t* r = reach_.data() + (i - base) * n;
            for (std::int64_t k = 0; k < n; ++k) yc[r[k]] = 1.0f;
        }
    }
    // The outputs [lo, hi) along one axis whose windows cover input position i.
    static std::pair<std::int64_t, std::int64_t> outputs_over(std::int64_t i, std::int64_t pad,
                                                              std::int64_t k, std::int64_t s,
                                                              std::int64_t n) {
        const std::int64_t first = i + pad - k + 1;
        const std::int64_t lo = first <= 0 ? 0 : (first + s - 1) / s;
        return {lo, std::min((i + pad) / s + 1, n)};
    }
    void build_reach() {
        reach_.clear();
        reach_n_ = 0;
        if (mode_ != Mode::max || H_ * W_ > (std::int64_t{1} << 22)) return;
        // The most outputs one input reaches; every input must reach one (k >= s), else the
        // window scan.
        std::int64_t most = 0;
        for (std::int64_t iy = 0; iy < H_; ++iy)
            for (std::int64_t ix = 0; ix < W_; ++ix) {
                const auto [oy0, oy1] = outputs_over(iy, ph_, kh_, sh_, OH_);
                const auto [ox0, ox1] = outputs_over(ix, pw_, kw_, sw_, OW_);
                const std::int64_t k =
                    std::max<std::int64_t>(oy1 - oy0, 0) * std::max<std::int64_t>(ox1 - ox0, 0);
                if (k == 0) return;
                most = std::max(most, k);
            }
        if (most > 16) return;
        reach_n_ = most == 3 ? 4 : most;
        reach_.resize(static_cast<std::size_t>(H_ * W_ * reach_n_));
        for (std::int64_t iy = 0; iy < H_; ++iy)
            for (std::int64_t ix = 0; ix < W_; ++ix) {
                const auto [oy0, oy1] = outputs_over(iy, ph_, kh_, sh_, OH_);
                const auto [ox0, ox1] = outputs_over(ix, pw_, kw_, sw_, OW_);
                std::uint32_t* r = reach_.data() + (iy * W_ + ix) * reach_n_;
                std::int64_t k = 0;
                for (std::int64_t oy = oy0; oy < oy1; ++oy)
                    for (std::int64_t ox = ox0; ox < ox1; ++ox)
                        r[k++] = static_cast<std::uint32_t>(oy * OW_ + ox);
                for (; k < reach_n_; ++k) r[k] = r[0];  // a repeated store sets nothing new
            }
    }
    // Each window's valid part (padding reads nothing), in row-major order.
    template <Mode M>
    void pool(const float* x, float* y, Tally& t) const {
        for (std::int64_t c = 0; c < C_; ++c)
            for (std::int64_t oy = 0; oy < OH_; ++oy) {
                const auto [ylo, yhi] = rows_of(oy);
                for (std::int64_t ox = 0; ox < OW_; ++ox) {
                    const auto [xlo, xhi] = cols_of(ox);
                    y[(c * OH_ + oy) * OW_ + ox] =
                        window<M>(x + c * H_ * W_, ylo, yhi, xlo, xhi, t);
                }
            }
    }
    template <Mode M>
    float window(const float* plane, std::int64_t ylo, std::int64_t yhi, std::int64_t xlo,
                 std::int64_t xhi, Tally& t) const {
        if (ylo >= yhi || xlo >= xhi) return 0.0f;  // a window entirely over padding
        float acc = M == Mode::max ? -std::numeric_limits<float>::infinity() : 0.0f;
        for (std::int64_t iy = ylo; iy < yhi; ++iy)
            for (std::int64_t ix = xlo; ix < xhi; ++ix) {
                const float v = plane[iy * W_ + ix];
                if constexpr (M == Mode::max) {
                    acc = std::max(acc, v);
                } else {
                    acc += v;
                    t.adds += v != 0.0f;  // both engines: non-zero terms
                }
            }
        // AvgPool divides by the full window (PyTorch's count_include_pad).
        if constexpr (M == Mode::avg) acc = acc / static_cast<float>(kh_ * kw_);
        return acc;
    }
    LayerGeometry geometry() const override {
        LayerGeometry g;
        g.kind = LayerGeometry::Kind::pooling;
        g.spatial = true;
        g.kernel_h = kh_, g.kernel_w = kw_, g.stride_h = sh_, g.stride_w = sw_;
        g.pad_h = ph_, g.pad_w = pw_;
        g.in_channels = g.out_channels = C_;
        g.pool = mode_ == Mode::sum   ? LayerGeometry::Pool::sum
                 : mode_ == Mode::avg ? LayerGeometry::Pool::average
                                      : LayerGeometry::Pool::max;
        return g;
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
    std::uint64_t window_cmps_ = 0;  // MaxPool's comparisons per step: each window's inputs - 1
    // Per input position: the reach_n_ outputs (oy * OW + ox) whose windows hold it.
    std::vector<std::uint32_t> reach_;
    std::int64_t reach_n_ = 0;
};

NodeExample pool_example() {
    auto e = example_of({2, 4, 4});
    e.params.set("kernel_size", {2.0, 2.0}, {2});
    e.params.set("stride", {2.0, 2.0}, {2});
    e.params.set("padding", {0.0, 0.0}, {2});
    return e;
}

}  // namespace

void register_pool(NodeFactory& f) {
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
}

}  // namespace ternion::synaptic
