// Loading of the spiking attention node types from a model file (NIR layout, one dataset per
// parameter; names and meanings in docs/transformer-format.md).
#include <cmath>
#include <initializer_list>
#include <string_view>
#include <utility>

#include "attention/spiking/multispike_attention.hpp"
#include "attention/spiking/spiking_attention.hpp"
#include "neuron/neuron_params.hpp"
#include "sim/kernels/event_cost.hpp"
#include "sim/synaptic/synaptic.hpp"

namespace ternion {

// <p>_weight (out, in), optional <p>_bias (out) and optional <p>_bn_{weight,bias,running_mean,
// running_var,eps}, folded here in double precision, or kept unfolded in the form <p>_bn_form.
// `biased` / `normalised` count the projections whose source had a bias / a BatchNorm.
Projection read_projection(const NodeSpec& spec, const std::string& p, int& biased,
                           int& normalised) {
    Shape dims;
    std::vector<float> w = spec.floats(p + "_weight", &dims);
    if (dims.size() != 2 || dims[0] < 1 || dims[1] < 1)
        spec.fail(p + "_weight", "must be a 2-D (out, in) array, got " + shape_str(dims));
    const std::int64_t out = dims[0], in = dims[1];
    std::vector<float> b;
    if (spec.has(p + "_bias")) {
        ++biased;
        b = spec.floats(p + "_bias");
        if (static_cast<std::int64_t>(b.size()) != out)
            spec.fail(p + "_bias", "needs " + std::to_string(out) + " values");
    }
    const auto form = batchnorm_form(spec, p + "_");
    if (spec.has(p + "_bn_running_mean") || spec.has(p + "_bn_running_var") ||
        spec.has(p + "_bn_weight") || spec.has(p + "_bn_bias") || form) {
        ++normalised;
        const auto bn = read_batchnorm(spec, p + "_bn_", out, true);
        if (form)
            return Projection(w, b, out, in,
                              BatchNorm(bn.gamma, bn.beta, bn.mean, bn.var, bn.eps, *form));
        fold_batchnorm(w, b, out, bn.gamma, bn.beta, bn.mean, bn.var, bn.eps);
    }
    return Projection(w, b, out, in);
}

std::int64_t read_heads(const NodeSpec& spec, std::int64_t dim) {
    const double h = spec.scalar_or("heads", 1.0);
    if (h < 1 || h != std::floor(h) || h > static_cast<double>(dim) ||
        dim % static_cast<std::int64_t>(h) != 0)
        spec.fail("heads", "must be a positive integer dividing " + std::to_string(dim));
    return static_cast<std::int64_t>(h);
}

namespace {

struct Qkv {
    Projection q, k, v;
    std::int64_t heads = 1;
    int biased = 0, normalised = 0;
};

Qkv read_qkv(const NodeSpec& spec) {
    Qkv r;
    r.q = read_projection(spec, "q", r.biased, r.normalised);
    r.k = read_projection(spec, "k", r.biased, r.normalised);
    r.v = read_projection(spec, "v", r.biased, r.normalised);
    for (auto* p : {&r.k, &r.v})
        if (p->in() != r.q.in() || p->out() != r.q.out())
            spec.fail(p == &r.k ? "k_weight" : "v_weight", "must have the shape of q_weight");
    // One bias order for the stacked Q|K|V: folded (bias first) or unfolded (bias last) alike.
    for (const char* p : {"k", "v"})
        if (batchnorm_form(spec, std::string(p) + "_").has_value() !=
            batchnorm_form(spec, "q_").has_value())
            spec.fail(std::string(p) + "_bn_form", "must be folded or unfolded as q_bn_form is");
    r.heads = read_heads(spec, r.q.out());
    return r;
}

// The value string parameter `param` names among `choices`, the first one when it is absent;
// any other name is refused with `must`.
template <class E>
E named_choice(const NodeSpec& spec, const char* param,
               std::initializer_list<std::pair<std::string_view, E>> choices,
               const std::string& must) {
    const auto name = spec.string_opt(param);
    for (const auto& [n, value] : choices)
        if (!name || *name == n) return value;
    spec.fail(param, must);
}

}  // namespace

namespace {

// The integer form, when the file declares a `datapath`: integer projection weights without a
// BatchNorm (the quantiser folds it), within what float sums hold exactly.
std::optional<FixedAttention> read_fixed(const NodeSpec& spec, const FixedGroups& groups,
                                         int& weight_bytes) {
    auto f = read_fixed_attention(spec, groups);
    if (!f) return f;
    // The float neurons' parameters name neurons this form does not have: refused by name.
    const auto integer_field = [](const std::string& rest) {
        for (const char* k : {"vth", "vth_lo", "dv", "bias_mant", "bias_exp", "input_exp"})
            if (rest == k) return true;
        return false;
    };
    for (const auto& p : spec.source().names())
        for (const char* pre : {"lif_", "qk_", "attn_", "out_"})
            if (p.rfind(pre, 0) == 0 && !integer_field(p.substr(std::string(pre).size())))
                spec.fail(p,
                          "a float neuron parameter, but this node declares a datapath: its "
                          "neurons are integer groups (q_vth, q_dv, ...; docs/fixed-point.md)");
    weight_bytes = 1;
    for (const char* p : {"q", "k", "v"}) {
        const std::string pre(p);
        for (const char* bn : {"_bn_weight", "_bn_bias", "_bn_running_mean", "_bn_running_var"})
            if (spec.has(pre + bn))
                spec.fail(pre + bn,
                          "the integer form (a node with a datapath) takes its "
                          "BatchNorm folded into integer weights and bias");
        Shape dims;
        const auto w = spec.floats(pre + "_weight", &dims);
        const int bytes = integer_weight_bytes(w.data(), w.size());
        if (bytes == 0)
            spec.fail(pre + "_weight", "the integer form needs integers of at most 16 bits");
        weight_bytes = std::max(weight_bytes, bytes);
        // Every partial sum exact in float32 for inputs of magnitude up to 16: |sum| < 2^24.
        const std::vector<float> b =
            spec.has(pre + "_bias") ? spec.floats(pre + "_bias") : std::vector<float>{};
        for (std::int64_t o = 0; o < dims[0]; ++o) {
            double row = b.empty() ? 0.0 : std::fabs(double(b[static_cast<std::size_t>(o)]));
            if (row != std::floor(row)) spec.fail(pre + "_bias", "the integer form needs integers");
            for (std::int64_t i = 0; i < dims[1]; ++i)
                row += 16.0 * std::fabs(double(w[static_cast<std::size_t>(o * dims[1] + i)]));
            if (row >= 16777216.0)
                spec.fail(pre + "_weight", "row " + std::to_string(o) +
                                               " sums beyond 2^24 for inputs of up to 16: the "
                                               "integer form keeps projection sums exact");
        }
    }
    return f;
}

template <class N>
std::unique_ptr<Node> finish(std::unique_ptr<N> n, const Qkv& qkv, std::optional<FixedAttention> f,
                             int weight_bytes) {
    n->set_source_modules(qkv.biased, qkv.normalised);
    if (f) n->set_fixed(std::move(*f), weight_bytes);
    return n;
}

}  // namespace

namespace {

SsaAssociation read_association(const NodeSpec& spec) {
    return named_choice<SsaAssociation>(spec, "association",
                                        {{"auto", SsaAssociation::automatic},
                                         {"qk", SsaAssociation::qk_first},
                                         {"kv", SsaAssociation::kv_first}},
                                        "must be \"auto\", \"qk\" or \"kv\"");
}

// SSA without projections (no q_weight): `dim` D, the input [N, 3D] holds the Q, K and V
// neurons' input; float neurons only (the integer form quantises projections it lacks).
std::unique_ptr<Node> build_ssa_inputs(const NodeSpec& spec) {
    if (spec.has("k_weight") || spec.has("v_weight"))
        spec.fail("q_weight",
                  "missing, while k_weight or v_weight is given (without all three "
                  "the node has no projections: its input is Q | K | V)");
    if (spec.has("datapath"))
        spec.fail("datapath", "an SSA without projections (no q_weight) has no integer form");
    const double d = spec.scalar_or("dim", 0.0);
    if (d < 1 || d != std::floor(d) || d > 1e8)
        spec.fail("dim",
                  "without q_weight, `dim` (the width of Q, K and V) is required: a "
                  "positive integer");
    const auto dim = static_cast<std::int64_t>(d);
    return std::make_unique<SsaNode>(
        spec.name(), dim, read_heads(spec, dim), read_sj_lif(spec, "lif_", 1.0f),
        read_sj_lif(spec, "attn_", 0.5f), static_cast<float>(spec.scalar_or("scale", 0.125)),
        read_association(spec));
}

}  // namespace

std::unique_ptr<Node> build_ssa(const NodeSpec& spec) {
    if (!spec.has("q_weight")) return build_ssa_inputs(spec);
    auto qkv = read_qkv(spec);
    const auto assoc = read_association(spec);
    int bytes = 0;
    auto f = read_fixed(spec, {{"q_", "k_", "v_", "attn_"}, {false, false, false, false}}, bytes);
    // The integer form's neurons are its groups': the float LIFs' parameters do not apply.
    const auto lif = f ? kernels::SjLif{} : read_sj_lif(spec, "lif_", 1.0f);
    const auto attn = f ? kernels::SjLif{} : read_sj_lif(spec, "attn_", 0.5f);
    auto n = std::make_unique<SsaNode>(spec.name(), std::move(qkv.q), std::move(qkv.k),
                                       std::move(qkv.v), qkv.heads, lif, attn,
                                       static_cast<float>(spec.scalar_or("scale", 0.125)), assoc);
    return finish(std::move(n), qkv, std::move(f), bytes);
}

std::unique_ptr<Node> build_sdsa(const NodeSpec& spec) {
    auto qkv = read_qkv(spec);
    const auto form = named_choice<SdsaForm>(
        spec, "form", {{"qk", SdsaForm::qk_first}, {"kv", SdsaForm::kv_first}},
        "must be \"qk\" (the paper's equation) or \"kv\" (the official code)");
    int bytes = 0;
    auto f = read_fixed(spec, {{"q_", "k_", "v_", "attn_"}, {false, false, false, false}}, bytes);
    const auto lif = f ? kernels::SjLif{} : read_sj_lif(spec, "lif_", 1.0f);
    const auto attn = f ? kernels::SjLif{} : read_sj_lif(spec, "attn_", 0.5f);
    auto n = std::make_unique<SdsaNode>(spec.name(), std::move(qkv.q), std::move(qkv.k),
                                        std::move(qkv.v), qkv.heads, lif, attn, form);
    return finish(std::move(n), qkv, std::move(f), bytes);
}

std::unique_ptr<Node> build_bsa(const NodeSpec& spec) {
    auto qkv = read_qkv(spec);
    int bytes = 0;
    auto f =
        read_fixed(spec, {{"q_", "k_", nullptr, "out_"}, {true, true, false, true}, true}, bytes);
    const auto qk = f ? kernels::Tsn{} : read_tsn(spec, "qk_", 1.0f);
    const auto outp = f ? kernels::Tsn{} : read_tsn(spec, "out_", 0.5f);
    auto n = std::make_unique<BsaNode>(spec.name(), std::move(qkv.q), std::move(qkv.k),
                                       std::move(qkv.v), qkv.heads, qk, outp);
    return finish(std::move(n), qkv, std::move(f), bytes);
}

// Examples for the conformance harness: 4 tokens of 8 channels, 2 heads, a bias on Q and a
// BatchNorm on K so that both folds run.
NodeExample attention_example() {
    auto e = example_of({4, 8});
    std::uint64_t seed = 10;
    for (const char* p : {"q", "k", "v"})
        set_example(e.params, std::string(p) + "_weight", {8, 8}, ++seed);
    set_example(e.params, "q_bias", {8}, 20);
    set_example(e.params, "k_bn_weight", {8}, 21);
    set_example(e.params, "k_bn_bias", {8}, 22);
    set_example(e.params, "k_bn_running_mean", {8}, 23);
    e.params.set("k_bn_running_var", std::vector<double>(8, 1.5), {8});
    e.params.set("heads", 2.0);
    return e;
}
namespace {

NodeExample ssa_example() {
    auto e = attention_example();
    // Low thresholds: at 4 tokens and 2 heads of 4 channels the products are small.
    e.params.set("scale", 0.5).set("lif_tau", 2.0).set("lif_v_threshold", 0.3);
    e.params.set("attn_v_threshold", 0.1);
    return e;
}
NodeExample sdsa_example() {
    auto e = attention_example();
    e.params.set("lif_tau", 2.0).set("lif_v_threshold", 0.3).set("attn_v_threshold", 0.1);
    e.params.set("form", "qk");
    return e;
}
NodeExample bsa_example() {
    auto e = attention_example();
    e.kind = NodeExample::Input::ternary;
    e.params.set("qk_decay", 0.5).set("out_v_threshold", 0.5);
    return e;
}

}  // namespace

void register_spiking_attention_nodes(NodeFactory& f) {
    auto wrap = [](std::unique_ptr<Node> (*b)(const NodeSpec&)) {
        return [b](const NodeSpec& s) {
            auto n = b(s);
            n->set_origin(s.origin());
            return n;
        };
    };
    f.add("ternion.SSA", wrap(build_ssa),
          "Spikformer spiking self-attention: binary Q/K/V LIF spikes, LIF(Q K^T V * scale)",
          ssa_example);
    f.add("ternion.SDSA", wrap(build_sdsa),
          "Spike-driven self-attention (SDT v1): LIF(column sum of Q.K) masks V's channels, or "
          "form \"kv\": LIF(column sum of K.V) masks Q's (the official code)",
          sdsa_example);
    f.add("ternion.BSA", wrap(build_bsa),
          "Bipolar self-attention: ternary Q/K, Shiftmax, shift-and-add with analog V, TSN out",
          bsa_example);
    f.add("ternion.QKAttention", wrap(build_qk_attention),
          "QKFormer's Q-K attention: LIF(sum of Q over each head's channels) masks K's tokens "
          "(form \"token\", the official code), or LIF(sum of Q over tokens) masks K's channels "
          "(form \"channel\"); no V",
          qk_attention_example);
    f.add("ternion.MultiSpikeAttention", build_multispike_attention,
          "SDT V3's linear attention on integer spikes: MultiSpike Q/K/V counts, "
          "MultiSpike(scale * Q K^T V) (exact integer product; V may be wider)",
          multispike_attention_example);
}

}  // namespace ternion
