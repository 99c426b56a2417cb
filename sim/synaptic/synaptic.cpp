// The synaptic node types' shared parts: the BatchNorm fold, the parameter readers, and
// register_synaptic_nodes. Each family lives in a file of its own: synaptic_linear.cpp (Affine,
// Linear), synaptic_conv.cpp, synaptic_pool.cpp, synaptic_elementwise.cpp (Scale, Delay),
// synaptic_structural.cpp (Input, Output, Identity, Flatten, Tokens, TokenMean); the column store
// of Linear layers is column_weights.cpp.
#include "sim/synaptic/synaptic.hpp"

#include <cmath>

#include "sim/synaptic/synaptic_internal.hpp"

namespace ternion {

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

BatchNormParams read_batchnorm(const NodeSpec& spec, const std::string& p, std::int64_t out,
                               bool optional_stats) {
    BatchNormParams r;
    r.gamma = spec.per_neuron_or(p + "weight", out, 1.0f);
    r.beta = spec.per_neuron_or(p + "bias", out, 0.0f);
    r.mean = optional_stats ? spec.per_neuron_or(p + "running_mean", out, 0.0f)
                            : spec.per_neuron(p + "running_mean", out);
    r.var = optional_stats ? spec.per_neuron_or(p + "running_var", out, 1.0f)
                           : spec.per_neuron(p + "running_var", out);
    r.eps = spec.scalar_or(p + "eps", 1e-5);
    if (!(r.eps >= 0)) spec.fail(p + "eps", "must be non-negative");
    for (float v : r.var) {
        if (v < 0) spec.fail(p + "running_var", "must be non-negative");
        if (v + r.eps <= 0) spec.fail(p + "running_var", "variance + eps is zero");
    }
    return r;
}

bool fold_batchnorm(const NodeSpec& spec, const std::string& prefix, std::int64_t out,
                    std::vector<float>& weight, std::vector<float>& bias) {
    if (!spec.has(prefix + "bn_weight") && !spec.has(prefix + "bn_running_mean")) return false;
    if (batchnorm_form(spec, prefix))
        spec.fail(prefix + "bn_form",
                  "only \"fold\" here; an unfolded BatchNorm is a "
                  "ternion.BatchNorm node after this one");
    const auto bn = read_batchnorm(spec, prefix + "bn_", out, false);
    fold_batchnorm(weight, bias, out, bn.gamma, bn.beta, bn.mean, bn.var, bn.eps);
    return true;
}

std::optional<BatchNorm::Form> batchnorm_form(const NodeSpec& spec, const std::string& prefix) {
    const auto f = spec.string_opt(prefix + "bn_form");
    if (!f || *f == "fold") return std::nullopt;
    if (*f == "normalize") return BatchNorm::Form::normalize;
    if (*f == "fma") return BatchNorm::Form::fma;
    spec.fail(prefix + "bn_form",
              "must be \"fold\", \"normalize\" or \"fma\" (got \"" + *f + "\")");
}

BatchNorm::BatchNorm(const std::vector<float>& gamma, const std::vector<float>& beta,
                     const std::vector<float>& mean, const std::vector<float>& var, double eps,
                     Form form)
    : mean_(mean), gamma_(gamma), beta_(beta) {
    const std::size_t n = mean.size();
    invstd_.resize(n);
    alpha_.resize(n);
    shift_.resize(n);
    fma_.assign(n, form == Form::fma ? 1 : 0);
    for (std::size_t c = 0; c < n; ++c) {
        // float32 throughout, as PyTorch computes it (eps rounded to float first).
        invstd_[c] = 1.0f / std::sqrt(var[c] + static_cast<float>(eps));
        alpha_[c] = invstd_[c] * gamma[c];
        shift_[c] = std::fma(-mean[c], alpha_[c], beta[c]);
    }
}

BatchNorm BatchNorm::concat(const std::vector<const BatchNorm*>& parts) {
    BatchNorm r;
    for (const auto* p : parts) {
        for (auto [dst, src] : {std::pair{&r.mean_, &p->mean_},
                                {&r.invstd_, &p->invstd_},
                                {&r.gamma_, &p->gamma_},
                                {&r.beta_, &p->beta_},
                                {&r.alpha_, &p->alpha_},
                                {&r.shift_, &p->shift_}})
            dst->insert(dst->end(), src->begin(), src->end());
        r.fma_.insert(r.fma_.end(), p->fma_.begin(), p->fma_.end());
    }
    return r;
}

void BatchNorm::apply_rows(float* y, std::int64_t rows) const {
    const auto n = static_cast<std::size_t>(channels());
    for (std::int64_t t = 0; t < rows; ++t)
        for (std::size_t c = 0; c < n; ++c)
            y[t * channels() + static_cast<std::int64_t>(c)] =
                apply(y[t * channels() + static_cast<std::int64_t>(c)], c);
}

namespace synaptic {

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

std::array<std::int64_t, 2> single_param(const NodeSpec& s, const std::string& p, std::int64_t dflt,
                                         std::int64_t min) {
    if (!s.has(p)) return {1, dflt};
    auto v = s.ints(p);
    if (v.size() != 1) s.fail(p, "expected 1 value, got " + std::to_string(v.size()));
    if (v[0] < min) s.fail(p, "must be at least " + std::to_string(min));
    return {1, v[0]};
}

bool listed_ones(const Activity& in) {
    if (!in.listed || !in.ternary) return false;
    if (in.all_ones) return true;
    for (auto i : in.active)
        if (in.values[i] < 0.0f) return false;
    return true;
}

void copy_activity(const Activity& in, Activity& out) {
    if (in.active.size() > in.values.size() / 8) {
        // Dense: `values` is complete, and one block copy beats an indexed store per entry.
        out.values = in.values;
        out.active = in.active;
        out.listed = true;
        out.unlisted = 0;
        out.ternary = in.ternary;
        out.all_ones = in.all_ones;
        return;
    }
    out.clear();
    for (auto i : in.active) out.values[i] = in.value_at(i);
    out.active = in.active;
    out.ternary = in.ternary;
    out.all_ones = in.all_ones;
}

}  // namespace synaptic

void register_synaptic_nodes(NodeFactory& f) {
    synaptic::register_structural(f);
    synaptic::register_linear(f);
    synaptic::register_elementwise(f);
    synaptic::register_conv(f);
    synaptic::register_pool(f);
}

}  // namespace ternion
