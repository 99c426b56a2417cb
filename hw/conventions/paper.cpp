// paper: the spiking-Transformer papers' SOP = fr_in x T x FLOPs for spike-fed layers, the
// encoding layer as MACs, and each attention's closed form (docs/cost-model.md).
#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "hw/conventions/convention.hpp"

namespace ternion::hw {

namespace {

using nlohmann::json;

// Paper mode, one attention layer, in ACs per inference: the projections inside the node are
// spike-fed linears (fr_in x T x their dense MACs); the spike-spike part follows the paper of
// each attention: Spikformer's closed form for SSA, the Spike-driven Transformer's O(N D) column
// sum for SDSA (its coincident Q, K pairs), and for BSA the ternary product at the Q and K rates
// plus Shiftmax and Shiftmax.V as counted. Writes how it counted into `basis`.
double paper_attention(const LayerRecord& l, std::int64_t S, std::int64_t T, std::string& basis,
                       std::vector<std::string>& notes, double& attn_part) {
    const double fr_in = l.input_rate(S, T);
    const double Td = static_cast<double>(T), Sd = static_cast<double>(S);
    const auto& sh = l.attention_shape;
    if (!sh || sh->tokens <= 0 || sh->dim <= 0 || sh->heads <= 0 || S <= 0 || T <= 0) {
        notes.push_back("layer '" + l.name + "' (" + l.type +
                        "): no spiking-attention structure; counted as fr_in x T x FLOPs");
        basis = "paper: fr_in*T*FLOPs (fallback), fr_in=" + fmt(fr_in);
        attn_part = fr_in * Td * static_cast<double>(l.dense_macs_per_step);
        return attn_part;
    }
    const auto& a = l.attention;
    const double N = static_cast<double>(sh->tokens), D = static_cast<double>(sh->dim),
                 H = static_cast<double>(sh->heads), dh = D / H;
    const double elems = Sd * Td * N * D;
    const double fq = static_cast<double>(a.q_spikes) / elems,
                 fk = static_cast<double>(a.k_spikes) / elems,
                 fv = static_cast<double>(a.v_spikes) / elems;
    const double proj = fr_in * Td * static_cast<double>(sh->proj_dense_macs_per_step);
    if (sh->closed_form == AttentionClosedForm::qkv_products) {
        // Q (K^T V): K^T V costs N dh^2 per head gated by the sparser of K and V, Q times the
        // result N dh^2 gated by Q (Spikingformer's energy code).
        attn_part = Td * H * N * dh * dh * (std::min(fk, fv) + fq);
        basis =
            "paper: fr_in*T*proj_macs + SSA closed form T*H*N*(D/H)^2*(min(fr_K,fr_V)+fr_Q), "
            "fr_Q=" +
            fmt(fq) + " fr_K=" + fmt(fk) + " fr_V=" + fmt(fv);
    } else if (sh->closed_form == AttentionClosedForm::column_sum) {
        attn_part = static_cast<double>(a.score_ac) / Sd;
        basis = "paper: fr_in*T*proj_macs + SDSA column sum of Q (.) K (coincident spikes)";
    } else if (sh->closed_form == AttentionClosedForm::ternary_shiftmax) {
        attn_part = Td * H * N * N * dh * fq * fk + static_cast<double>(a.norm_ac + a.mix_ac) / Sd;
        basis =
            "paper: fr_in*T*proj_macs + BSA T*H*N^2*(D/H)*fr_Q*fr_K + Shiftmax and "
            "Shiftmax.V adds, fr_Q=" +
            fmt(fq) + " fr_K=" + fmt(fk);
    } else {
        attn_part =
            fr_in * Td * static_cast<double>(l.dense_macs_per_step - sh->proj_dense_macs_per_step);
        basis = "paper: fr_in*T*FLOPs";
    }
    return proj + attn_part;
}

// The papers' SOPs: fr_in * T * FLOPs for spiking layers, the encoding layer as MACs.
void count_layer(const LayerRecord& l, LayerCost& c, PriceContext& x, PaperFigures& pp,
                 std::vector<std::string>& notes) {
    const PriceOptions& o = x.options;
    c.count[kAc] = c.count[kMac] = 0.0;
    const double flops = static_cast<double>(l.dense_macs_per_step);
    if (l.category == NodeCategory::attention) {
        double part = 0.0;
        const double sop = paper_attention(l, x.S, x.T, c.basis, notes, part);
        c.sop = sop;
        c.input_rate = l.input_rate(x.S, x.T);
        c.count[kAc] = sop * x.Sd;
        pp.sop += sop;
        pp.attention_ac += part;
        return;
    }
    if (!is_connection(l)) {
        c.basis = "paper: not a conv/linear/attention layer";
        return;
    }
    c.input_rate = l.input_rate(x.S, x.T);
    if (!x.encoding_seen && !l.input_ternary) {
        const double m = flops * (o.encoding_mac_times_T ? x.Td : 1.0);
        c.count[kMac] = m * x.Sd;
        c.sop = m;
        pp.encoding_mac = m;
        pp.encoding_layer = l.name;
        c.basis = o.encoding_mac_times_T ? "paper: encoding layer, MAC x FLOPs x T"
                                         : "paper: encoding layer, MAC x FLOPs";
    } else {
        const double sop = c.input_rate * x.Td * flops;
        c.sop = sop;
        c.count[kAc] = sop * x.Sd;
        pp.sop += sop;
        c.basis = "paper: SOP = fr_in*T*FLOPs, fr_in=" + fmt(c.input_rate);
        if (!l.input_ternary)
            notes.push_back("layer '" + l.name +
                            "' has analog input but is not the encoding layer; billed as AC per "
                            "the papers' convention");
    }
    x.encoding_seen = true;
}

class Paper final : public Convention {
  public:
    std::string_view name() const override { return "paper"; }
    void begin(const RunRecord&, CostReport& r) const override { r.paper.emplace(); }
    void count(const LayerRecord& l, LayerCost& c, PriceContext& x, CostReport& r) const override {
        count_layer(l, c, x, *r.paper, r.notes);
    }
    void layer_json(const CostReport&, const LayerCost& c, json& jl) const override {
        jl["sop"] = c.sop;
        jl["input_rate"] = c.input_rate;
    }
    void report_json(const CostReport& r, json& doc) const override {
        const auto& pp = *r.paper;
        doc["paper"] = {{"SOP", pp.sop},
                        {"attention_SOP", pp.attention_ac},
                        {"encoding_MAC", pp.encoding_mac},
                        {"encoding_layer", pp.encoding_layer},
                        {"encoding_mac_times_T", r.options.encoding_mac_times_T}};
    }
    void report_text(const CostReport& r, std::ostream& os) const override {
        const auto& pp = *r.paper;
        os << "paper convention (per inference): SOP " << fmt(pp.sop) << " (attention "
           << fmt(pp.attention_ac) << "), encoding MAC " << fmt(pp.encoding_mac);
        if (!pp.encoding_layer.empty())
            os << " (" << pp.encoding_layer
               << (r.options.encoding_mac_times_T ? ", x T)" : ", once)");
        os << "\n";
    }
};

}  // namespace

const Convention& paper_convention() {
    static const Paper c;
    return c;
}

}  // namespace ternion::hw
