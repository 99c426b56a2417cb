// Conv1d and Conv2d: event-driven scatter of each non-zero input into the outputs it reaches,
// against the dense gather; both sum in the same order. The scatter adds one contiguous row of
// output channels per kernel tap into a channels-last buffer, transposed to [C, H, W] at the
// end: each output still receives its inputs in ascending input order, as the gather sums them.
#include <algorithm>

#include "sim/core/memory.hpp"
#include "sim/kernels/conv_direct.hpp"
#include "sim/kernels/conv_gather.hpp"
#include "sim/synaptic/synaptic.hpp"
#include "sim/synaptic/synaptic_internal.hpp"

namespace ternion::synaptic {

namespace {

// ------------------------------------------------------------------ Conv1d / Conv2d

// The event path's scratch, rebuilt every step.
struct ConvScratch : NodeState {
    LargeVector<float> acc;                // one output row's sums [OW, Cout], 64-byte aligned
    std::vector<std::uint32_t> row_start;  // the events of each input row
    std::vector<float> padded;             // the direct path's padded input and tile
    GatherConv::Scratch gather;            // the gather path's lists and sums
};

// A scatter costs about this many of the direct path's multiply-adds per tap it adds (a row of
// output channels loaded and stored per tap against register tiles). Measured on Spikformer's
// stem convolutions (bench/spikformer_cifar.py shapes, each path forced): the scatter is faster
// below about 19 % non-zero inputs on 32x32 and 16x16 maps, 22 % on 8x8 ones (more padding per
// row).
constexpr std::uint64_t kScatterCost = 5;
// The same for the gather (GatherConv), measured likewise (bench/micro_nodes.cpp, BM_GatherConv
// against BM_DirectConv): it breaks even at about 25 % non-zero inputs on 16x16 maps and 30 %
// on 8x8 ones.
constexpr std::uint64_t kGatherCost = 4;
// A depthwise convolution's scatter adds one scalar per tap (one output channel a group), which
// costs about 16-30 of the single-channel tile's lanes: measured on the Spike-driven Transformer
// V3's 7x7 depthwise layers (bench/official_cifar.py's model, each path forced), the tile is
// faster above about 3 % non-zero inputs on 56x56 maps and 8 % on 28x28 ones.
constexpr std::uint64_t kDepthwiseScatterCost = 16;

// acc[c] += w[c], acc[c] -= w[c], acc[c] += x w[c]: one tap's row of output channels.
void add_row(float* __restrict acc, const float* __restrict w, std::int64_t n) {
    for (std::int64_t c = 0; c < n; ++c) acc[c] += w[c];
}
void sub_row(float* __restrict acc, const float* __restrict w, std::int64_t n) {
    for (std::int64_t c = 0; c < n; ++c) acc[c] -= w[c];
}
void axpy_row(float* __restrict acc, float x, const float* __restrict w, std::int64_t n) {
    for (std::int64_t c = 0; c < n; ++c) acc[c] += x * w[c];
}

class ConvNode final : public Node {
  public:
    CountTraits count_traits() const override {
        const auto taps = static_cast<std::uint64_t>(kh_ * kw_);
        return {.connection = true,
                .weight_value_bytes = value_bytes(storage_),
                .fanout_taps = static_cast<std::uint64_t>(cout_ / groups_) * taps,
                .kernel_taps = static_cast<std::uint64_t>(cout_) * taps};
    }
    ConvNode(const NodeSpec& s, int dims) : Node(s.name(), s.type()), dims_(dims) {
        Shape wd;
        w_ = s.floats("weight", &wd);
        storage_.int_bytes = integer_weight_bytes(w_.data(), w_.size());
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
    bool pure() const override { return true; }
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
        // Fan-out of each input position: non-zero weights that reach a valid output (each
        // tap's non-zero count over the group's output channels, counted once).
        const std::int64_t cout_g = cout_ / groups_;
        std::vector<std::uint32_t> tap_nz(static_cast<std::size_t>(cin_ * kh_ * kw_), 0);
        for (std::int64_t co = 0; co < cout_; ++co)
            for (std::int64_t cl = 0; cl < cin_g_; ++cl)
                for (std::int64_t k = 0; k < kh_ * kw_; ++k)
                    if (w_[widx(co, cl, k / kw_, k % kw_)] != 0.0f)
                        ++tap_nz[static_cast<std::size_t>(
                            ((co / cout_g) * cin_g_ + cl) * kh_ * kw_ + k)];
        fanout_.assign(static_cast<std::size_t>(cin_ * H_ * W_), 0);
        for (std::int64_t ci = 0; ci < cin_; ++ci)
            for (std::int64_t iy = 0; iy < H_; ++iy)
                for (std::int64_t ix = 0; ix < W_; ++ix) {
                    std::uint32_t f = 0;
                    for_targets(
                        iy, ix, [&](std::int64_t ky, std::int64_t kx, std::int64_t, std::int64_t) {
                            f += tap_nz[static_cast<std::size_t>((ci * kh_ + ky) * kw_ + kx)];
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
        runs_ok_ = sw_ == 1 && dw_ == 1 && groups_ == 1;
        build_tap_weights();
        direct_ok_ = sh_ == 1 && sw_ == 1 && dh_ == 1 && dw_ == 1;
        if (direct_ok_)
            direct_.build({groups_, cin_g_, cout_g, H_, W_, kh_, kw_, ph_, pw_, OH_, OW_}, w_);
        gather_ok_ = direct_ok_ && groups_ == 1;
        if (gather_ok_) gather_.build({cin_, cout_, H_, W_, kh_, kw_, ph_, pw_, OH_, OW_}, w_);
    }
    // The weights as [Cin][tap][Cout/groups], so that one tap's output channels are contiguous;
    // for the runs path (runs_ok_) each kernel row's columns reversed, [Cin][kh][kw - 1 - kx].
    void build_tap_weights() {
        const std::int64_t taps = kh_ * kw_, cout_g = cout_ / groups_;
        wt_.assign(w_.size(), 0.0f);
        for (std::int64_t co = 0; co < cout_; ++co) {
            const std::int64_t g = co / cout_g, col = co % cout_g;
            for (std::int64_t cl = 0; cl < cin_g_; ++cl)
                for (std::int64_t k = 0; k < taps; ++k) {
                    const std::int64_t ky = k / kw_, kx = k % kw_;
                    const std::int64_t t = ky * kw_ + (runs_ok_ ? kw_ - 1 - kx : kx);
                    wt_[static_cast<std::size_t>(((g * cin_g_ + cl) * taps + t) * cout_g + col)] =
                        w_[widx(co, cl, ky, kx)];
                }
        }
    }
    std::unique_ptr<NodeState> make_state() const override {
        return std::make_unique<ConvScratch>();
    }
    bool reset_state(NodeState*) const override { return true; }  // scratch only
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
    void step(const Activity& in, NodeState* state, Activity& out,
              const StepContext& ctx) const override {
        simd::at_level([&] {
            auto& sc = static_cast<ConvScratch&>(*state);
            const Path path = choose_path(in, ctx.engine);
            switch (path) {
                case Path::dense:
                    gather(in, out.values.data());
                    break;
                case Path::direct:
                    direct_.run(in.values.data(), in.ternary, out.values.data(), sc.padded);
                    break;
                case Path::gather_lists:
                    gather_.run(in.active.data(), in.active.size(),
                                bias_.empty() ? nullptr : bias_.data(), out.values.data(),
                                sc.gather);
                    break;
                case Path::scatter:
                    scatter(in, sc, out.values.data());
                    break;
            }
            // Both engines book the event engine's count: padding taps are not synaptic events.
            count_events(
                in, [&](std::uint32_t i) -> std::uint64_t { return fanout_[i]; },
                bytes_per_synapse(storage_), ctx);
            if (path != Path::gather_lists) add_bias(out.values.data());  // the gather adds it
            if (ctx.list_output) {
                out.scan();
            } else {  // every reader takes whole values (a neuron): count, do not list
                bool ternary = true;
                const std::size_t n = count_nonzero(out.values.data(), 0, out.size(), ternary);
                out.mark_unlisted(n);
                out.ternary = ternary;
                out.all_ones = false;
            }
        });
    }
    // The dense engine sums every tap; the event engine takes the direct tile on dense
    // enough spike maps, else the gather for binary spikes or the scatter.
    enum class Path { dense, direct, gather_lists, scatter };
    Path choose_path(const Activity& in, Engine engine) const {
        if (engine == Engine::dense) return Path::dense;
        const bool lists = gather_ok_ && listed_ones(in);
        if (direct_pays(in, lists)) return Path::direct;
        return lists ? Path::gather_lists : Path::scatter;
    }
    // The direct path for inputs dense enough that multiplying every tap is cheaper than the
    // event path (the gather for binary inputs, else the scatter). Inputs other than -1, 0, 1
    // (a residual stream's integer sums, analog values) cost the tile a multiply and an add per
    // lane, and the scatter the same per tap, so the break-even density is the same.
    bool direct_pays(const Activity& in, bool gather) const {
        if (!direct_ok_) return false;
        const auto taps = static_cast<std::uint64_t>(in.nonzero()) *
                          static_cast<std::uint64_t>(kh_ * kw_ * (cout_ / groups_));
        const std::uint64_t cost = cout_ == groups_ ? kDepthwiseScatterCost
                                   : gather         ? kGatherCost
                                                    : kScatterCost;
        return taps * cost >= direct_.lanes();
    }
    // Dense engine: each output sums its window in (input channel, row, column) order.
    void gather(const Activity& in, float* y) const {
        const std::int64_t cout_g = cout_ / groups_;
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
                                acc +=
                                    w_[widx(co, cl, ky, kx)] *
                                    in.values[static_cast<std::size_t>((ci * H_ + iy) * W_ + ix)];
                            }
                        }
                    }
                    y[(co * OH_ + oy) * OW_ + ox] = acc;
                }
        }
    }
    // Event engine, one output row at a time: the row's channels-last sums stay in L1 (a whole
    // map's sums and weights only fit in L2 at Spikformer's 32x32 stem) while the non-zero inputs
    // of the input rows it reads add their taps' channel rows, by input channel, then row, then
    // column: each output receives its inputs in ascending input order, as the gather sums them.
    void scatter(const Activity& in, ConvScratch& sc, float* y) const {
        bucket_input_rows(in, sc.row_start);
        sc.acc.resize(static_cast<std::size_t>(OW_ * cout_));
        for (std::int64_t oy = 0; oy < OH_; ++oy) {
            std::fill(sc.acc.begin(), sc.acc.end(), 0.0f);
            for (std::int64_t ci = 0; ci < cin_; ++ci)
                for (std::int64_t ky = 0; ky < kh_; ++ky) {
                    const std::int64_t iy = oy * sh_ - ph_ + ky * dh_;
                    if (iy < 0 || iy >= H_) continue;
                    if (runs_ok_)
                        add_input_row_runs(in, sc, ci, iy, ky);
                    else
                        add_input_row(in, sc, ci, iy, ky);
                }
            store_output_row(sc.acc, oy, y);
        }
    }
    // row_start[ci * H + iy]: where input row (ci, iy) begins in the ascending event list.
    void bucket_input_rows(const Activity& in, std::vector<std::uint32_t>& row_start) const {
        row_start.assign(static_cast<std::size_t>(cin_ * H_ + 1), 0);
        std::size_t r = 0;  // events ascend: walk the rows instead of dividing each index
        std::uint64_t row_end = static_cast<std::uint64_t>(W_);
        for (auto idx : in.active) {
            for (; idx >= row_end; row_end += static_cast<std::uint64_t>(W_)) ++r;
            ++row_start[r + 1];
        }
        for (std::size_t k = 1; k < row_start.size(); ++k) row_start[k] += row_start[k - 1];
    }
    // The events of input row (ci, iy) through kernel row ky into the current output row.
    void add_input_row(const Activity& in, ConvScratch& sc, std::int64_t ci, std::int64_t iy,
                       std::int64_t ky) const {
        const auto r = static_cast<std::size_t>(ci * H_ + iy);
        const std::int64_t cout_g = cout_ / groups_;
        const float* wrow = wt_.data() + (ci * kh_ + ky) * kw_ * cout_g;
        float* ag = sc.acc.data() + (ci / cin_g_) * cout_g;
        const bool unit = in.ternary;
        const auto row_first = static_cast<std::int64_t>(r) * W_;
        for (auto k = sc.row_start[r]; k < sc.row_start[r + 1]; ++k) {
            const std::uint32_t idx = in.active[k];
            const std::int64_t ix = idx - row_first;  // the row starts at (ci * H + iy) * W
            const float x = in.values[idx];
            for (std::int64_t kx = 0; kx < kw_; ++kx) {
                std::int64_t ox = ix + pw_ - kx * dw_;
                if (ox < 0) continue;
                if (sw_ != 1) {  // no division per tap in the common stride-1 case
                    if (ox % sw_) continue;
                    ox /= sw_;
                }
                if (ox >= OW_) continue;
                float* a = ag + ox * cout_;
                const float* w = wrow + kx * cout_g;
                if (!unit)
                    axpy_row(a, x, w, cout_g);
                else if (x > 0)
                    add_row(a, w, cout_g);
                else
                    sub_row(a, w, cout_g);
            }
        }
    }
    // Stride 1, dilation 1, one group: an event at column ix reaches outputs ix + pw - kx, so
    // with the kernel row's columns reversed its taps are one contiguous run of the
    // channels-last sums and of the weights: one long add per event.
    void add_input_row_runs(const Activity& in, ConvScratch& sc, std::int64_t ci, std::int64_t iy,
                            std::int64_t ky) const {
        const auto r = static_cast<std::size_t>(ci * H_ + iy);
        const float* wrow = wt_.data() + (ci * kh_ + ky) * kw_ * cout_;
        const auto row_first = static_cast<std::int64_t>(r) * W_;
        for (auto k = sc.row_start[r]; k < sc.row_start[r + 1]; ++k) {
            const std::uint32_t idx = in.active[k];
            const std::int64_t first = idx - row_first + pw_ - (kw_ - 1);  // kx = kw - 1
            const std::int64_t lo = std::max<std::int64_t>(first, 0);
            const std::int64_t hi = std::min(first + kw_, OW_);  // past kx = 0
            if (lo >= hi) continue;
            float* a = sc.acc.data() + lo * cout_;
            const float* w = wrow + (lo - first) * cout_;
            const float x = in.values[idx];
            const std::int64_t n = (hi - lo) * cout_;
            if (!in.ternary)
                axpy_row(a, x, w, n);
            else if (x > 0)
                add_row(a, w, n);
            else
                sub_row(a, w, n);
        }
    }
    void store_output_row(const LargeVector<float>& acc, std::int64_t oy, float* y) const {
        // Written along the output row (strided reads from L1 are cheap, strided writes are not).
        const std::int64_t plane = OH_ * OW_;
        for (std::int64_t co = 0; co < cout_; ++co) {
            float* yr = y + co * plane + oy * OW_;
            for (std::int64_t ox = 0; ox < OW_; ++ox)
                yr[ox] = acc[static_cast<std::size_t>(ox * cout_ + co)];
        }
    }
    void add_bias(float* y) const {
        if (bias_.empty()) return;
        for (std::int64_t co = 0; co < cout_; ++co)
            for (std::int64_t k = 0; k < OH_ * OW_; ++k)
                y[co * OH_ * OW_ + k] += bias_[static_cast<std::size_t>(co)];
    }
    // The papers' FLOPs (k^2 Cin Cout H_out W_out, padding taps included).
    std::uint64_t dense_macs_per_step() const override {
        return static_cast<std::uint64_t>(cout_ * OH_ * OW_ * cin_g_ * kh_ * kw_);
    }
    std::uint64_t dense_synops_per_step() const override { return dense_taps_; }
    LayerGeometry geometry() const override {
        LayerGeometry g;
        g.kind = LayerGeometry::Kind::connection;
        g.spatial = dims_ == 2;
        g.kernel_h = dims_ == 2 ? kh_ : 1;
        g.kernel_w = kw_;
        g.stride_h = sh_, g.stride_w = sw_, g.pad_h = ph_, g.pad_w = pw_;
        g.dilation_h = dh_, g.dilation_w = dw_;
        g.in_channels = cin_g_ * groups_, g.out_channels = cout_, g.groups = groups_;
        g.bias = !bias_.empty();
        return g;
    }
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
    WeightStorage storage_;  // dense; integer weights at their width
    std::int64_t cout_ = 0, cin_g_ = 0, cin_ = 0, kh_ = 1, kw_ = 1, groups_ = 1;
    std::int64_t sh_ = 1, sw_ = 1, dh_ = 1, dw_ = 1, ph_ = 0, pw_ = 0;
    std::int64_t H_ = 1, W_ = 1, OH_ = 1, OW_ = 1;
    std::string pad_mode_;
    Shape declared_spatial_;
    std::vector<std::uint32_t> fanout_;
    LargeVector<float> wt_;  // [Cin][tap][Cout/groups], kernel rows reversed when runs_ok_
    bool runs_ok_ = false;   // stride 1, dilation 1, one group: taps as contiguous runs
    std::uint64_t dense_taps_ = 0;
    DirectConv direct_;  // dense spike maps, stride and dilation 1
    bool direct_ok_ = false;
    GatherConv gather_;  // binary spike maps, stride and dilation 1, one group
    bool gather_ok_ = false;
    bool source_bias_ = false, source_bn_ = false;  // the source layer's bias, a folded BN
};

NodeExample conv_example(int dims) {
    auto e = example_of(dims == 2 ? Shape{2, 5, 5} : Shape{2, 8});
    set_example(e.params, "weight", dims == 2 ? Shape{4, 2, 3, 3} : Shape{4, 2, 3}, 3);
    set_example(e.params, "bias", {4}, 4);
    const std::int64_t d = dims;
    e.params.set("stride", std::vector<double>(static_cast<std::size_t>(d), 1.0), {d});
    e.params.set("padding", std::vector<double>(static_cast<std::size_t>(d), 1.0), {d});
    return e;
}

}  // namespace

void register_conv(NodeFactory& f) {
    f.add(
        "Conv1d", [](const NodeSpec& s) { return std::make_unique<ConvNode>(s, 1); },
        "1-d convolution; `weight` (Cout, Cin/groups, K), stride, padding, dilation, groups, bias",
        [] { return conv_example(1); });
    f.add(
        "Conv2d", [](const NodeSpec& s) { return std::make_unique<ConvNode>(s, 2); },
        "2-d convolution; `weight` (Cout, Cin/groups, Kh, Kw), stride, padding, dilation, groups, "
        "bias",
        [] { return conv_example(2); });
}

}  // namespace ternion::synaptic
