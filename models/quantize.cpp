#include "models/quantize.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "attention/spiking/spiking_attention.hpp"
#include "hw/cost_model.hpp"
#include "models/pipeline.hpp"
#include "neuron/fixed/fixed_lif.hpp"
#include "sim/io/h5io.hpp"

namespace ternion {

namespace {

// Stages: find the populations (a neuron and the weighted layers feeding it) and the readout
// layers; choose each one's power-of-two scale; write the copy with integer weights and
// FixedLIF neurons.

bool is_weighted(const std::string& t) {
    return t == "Linear" || t == "Affine" || t == "Conv1d" || t == "Conv2d";
}
bool passes_through(const std::string& t) {
    return t == "Delay" || t == "Flatten";
}

template <class T>
T at(const std::vector<T>& v, std::size_t k) {
    return v.size() == 1 ? v[0] : v[k];
}

std::string number(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", x);
    return buf;
}
std::string range_of(const std::vector<double>& v) {
    const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    return number(*lo) + ".." + number(*hi);
}

struct Population {
    int neuron = -1;
    std::vector<int> layers;
    kernels::LeakyForm form;
};

struct Plan {
    std::vector<Population> populations;
    std::vector<int> readouts;        // weighted layers that feed only Output nodes
    std::vector<int> attention;       // SSA, SDSA and BSA nodes: their integer form
    std::map<int, std::string> kept;  // node -> why it stays float
};

class Quantizer {
  public:
    Quantizer(const std::string& model, const std::string& output, const QuantizeOptions& o)
        : model_(model), output_(output), opts_(o) {}
    QuantizeReport run();

  private:
    void load_formats();
    void plan();
    bool collect_layers(int neuron, std::vector<int>& layers, std::string& why) const;
    std::vector<int> consumers(int u) const;
    void quantize_population(const Population& p);
    void quantize_readout(int layer);
    void quantize_attention(int node);
    double attention_projection(const SpikingAttentionNode& node, int part,
                                const std::vector<float>& w, const std::vector<float>& b,
                                const struct GroupRule* r, QuantizedNode& q, std::int64_t& row_max);
    int value_register(const std::string& name, std::int64_t row_max);
    void write_attention_group(const std::string& name, const std::string& pre,
                               const struct GroupRule& r, double U, bool ternary, int input_exp);
    void write_attention_formats(int u);
    void write_neuron(const std::string& name, const Shape& shape, const kernels::LeakyForm& f,
                      const std::vector<double>& a, const std::vector<double>& c,
                      const std::vector<double>& th, const std::vector<double>& scale);
    void write() const;
    void write_node(h5::Writer& w, const std::string& name) const;

    // Integer weights of `layer` times `gain` at the rows' scales; records them for writing.
    std::int64_t integer_weights(int layer, double gain, const std::vector<double>& row_scale);
    // The scale that brings x to at most `limit`: a power of two, or limit / x ("max").
    double fit_scale(double x, double limit) const;
    // Per output row of the population's layers: max |w| times the gain; empty when the
    // layers disagree on their rows (the caller then scales per layer).
    std::vector<double> row_maxima(const Population& p, double gain) const;
    std::int64_t round_to_int(double x) const;
    std::string group_of(int u) const { return "/node/nodes/" + graph().node(u).name(); }
    const Graph& graph() const { return *model_graph_->graph; }

    std::string model_, output_;
    QuantizeOptions opts_;
    std::shared_ptr<const LoadedModel> model_graph_;
    std::unique_ptr<h5::Reader> file_;
    hw::NumberFormats formats_;
    fixed::LifDatapath datapath_;
    std::string profile_name_;
    Plan plan_;
    QuantizeReport report_;
    // What is written instead of the file's datasets: node -> (dataset -> values, dims).
    struct Array {
        std::vector<std::int64_t> v;
        Shape dims;
    };
    std::map<std::string, std::map<std::string, Array>> arrays_;
    std::map<std::string, std::map<std::string, std::string>> strings_;
    std::map<std::string, double> scales_;  // layers with one scale: written as an attribute
    std::map<std::string, std::set<std::string>> dropped_;  // datasets not copied (attention)
};

void Quantizer::load_formats() {
    hw::Profile p = hw::load_profile(opts_.profile);
    profile_name_ = p.name;
    if (!p.formats)
        throw InputError(p.path, "formats",
                         "missing: this profile declares no number formats, so there is nothing "
                         "to quantise to (loihi-like and horowitz45-int8 declare them)");
    formats_ = *p.formats;
    if (opts_.weight_bits) {
        if (*opts_.weight_bits < 2 || *opts_.weight_bits > 16)
            throw OptionError("weight-bits", "must lie in [2, 16]");
        formats_.weight_bits = *opts_.weight_bits;
    }
    if (opts_.membrane_bits) formats_.neuron.set("membrane_bits", double(*opts_.membrane_bits));
    // The profile's datapath read as a FixedLIF node would read it: errors name the profile
    // and its key.
    try {
        datapath_ = read_lif_datapath(
            NodeSpec(formats_.neuron, "formats.neuron", "ternion.FixedLIF", LoadOptions{}));
    } catch (const InputError& e) {
        const std::string pre = "nodes/formats.neuron/";
        std::string key = e.field();
        if (key.rfind(pre, 0) == 0) key = "formats.neuron." + key.substr(pre.size());
        throw InputError(p.path, key, e.detail());
    }
    if (datapath_.decay != fixed::DecayForm::multiply ||
        datapath_.order != fixed::Order::decay_then_add)
        throw InputError(p.path, "formats.neuron",
                         "quantize maps single-compartment neurons, which need a multiplier decay "
                         "applied before the input is added (a bit-shift datapath decays the "
                         "current after the input arrives, so it never passes a step's input "
                         "through whole)");
}

std::vector<int> Quantizer::consumers(int u) const {
    std::vector<int> r;
    for (const auto& e : graph().edges())
        if (e.src == u) r.push_back(e.dst);
    return r;
}

// The weighted layers whose sums reach `neuron` alone, through Delay and Flatten nodes.
bool Quantizer::collect_layers(int neuron, std::vector<int>& layers, std::string& why) const {
    const Graph& g = graph();
    for (int ei : g.in_edges(neuron)) {
        int src = g.edges()[static_cast<std::size_t>(ei)].src;
        while (passes_through(g.node(src).type()) && g.in_edges(src).size() == 1 &&
               consumers(src).size() == 1)
            src = g.edges()[static_cast<std::size_t>(g.in_edges(src)[0])].src;
        const Node& n = g.node(src);
        if (!is_weighted(n.type())) {
            why = "its input from '" + n.name() + "' (" + n.type() +
                  ") is not a weighted layer, so it has no integer scale";
            return false;
        }
        if (consumers(src).size() != 1) {
            why = "'" + n.name() + "' feeds other nodes too: one scale cannot serve them all";
            return false;
        }
        if (!file_->exists(group_of(src) + "/weight")) {
            why = "'" + n.name() + "' stores compressed weights (not supported yet)";
            return false;
        }
        layers.push_back(src);
    }
    if (layers.empty()) why = "it has no input";
    return !layers.empty();
}

void Quantizer::plan() {
    const Graph& g = graph();
    std::set<int> claimed;
    for (int u = 0; u < g.size(); ++u) {
        const Node& n = g.node(u);
        if (n.category() != NodeCategory::neuron) continue;
        auto form = n.leaky_form();
        if (!form) {
            plan_.kept[u] = "its update is not one linear recurrence (integrator, snnTorch reset)";
            continue;
        }
        if (!file_->is_group(group_of(u))) {
            plan_.kept[u] = "it sits inside a subgraph (not supported yet)";
            continue;
        }
        Population p{u, {}, *form};
        std::string why;
        if (!collect_layers(u, p.layers, why)) {
            plan_.kept[u] = why;
            continue;
        }
        for (int l : p.layers) claimed.insert(l);
        plan_.populations.push_back(std::move(p));
    }
    for (int u = 0; u < g.size(); ++u) {
        if (!is_weighted(g.node(u).type()) || claimed.count(u)) continue;
        const auto c = consumers(u);
        const bool readout = !c.empty() && std::all_of(c.begin(), c.end(), [&](int d) {
            return g.node(d).category() == NodeCategory::output;
        });
        if (readout && file_->exists(group_of(u) + "/weight"))
            plan_.readouts.push_back(u);
        else
            plan_.kept[u] = "it feeds no neuron that quantize maps";
    }
    for (int u = 0; u < g.size(); ++u) {
        if (g.node(u).category() != NodeCategory::attention) continue;
        const auto* a = dynamic_cast<const SpikingAttentionNode*>(&g.node(u));
        if (!a || a->float_groups().empty())
            plan_.kept[u] = "its integer form is not built (SSA, SDSA and BSA have one)";
        else if (a->is_fixed())
            plan_.kept[u] = "it is in integer form already";
        else if (!file_->is_group(group_of(u)))
            plan_.kept[u] = "it sits inside a subgraph (not supported yet)";
        else
            plan_.attention.push_back(u);
    }
}

std::int64_t Quantizer::round_to_int(double x) const {
    if (formats_.rounding == "floor") return static_cast<std::int64_t>(std::floor(x));
    if (formats_.rounding == "toward_zero") return static_cast<std::int64_t>(std::trunc(x));
    return static_cast<std::int64_t>(std::nearbyint(x));  // ties to even (torch.round)
}

std::int64_t Quantizer::integer_weights(int layer, double gain,
                                        const std::vector<double>& row_scale) {
    const std::string grp = group_of(layer);
    const std::string& name = graph().node(layer).name();
    std::int64_t mx = 0;
    for (const char* ds : {"weight", "bias"}) {
        if (!file_->exists(grp + "/" + ds)) continue;
        h5::DatasetInfo info;
        const auto w = file_->read_doubles(grp + "/" + ds, &info);
        const std::size_t rows = info.dims.empty() ? 1 : static_cast<std::size_t>(info.dims[0]);
        const std::size_t per = std::max<std::size_t>(1, w.size() / std::max<std::size_t>(rows, 1));
        Array a{{}, info.dims};
        a.v.reserve(w.size());
        for (std::size_t i = 0; i < w.size(); ++i)
            a.v.push_back(round_to_int(w[i] * gain * at(row_scale, i / per)));
        if (std::string(ds) == "weight")
            for (auto x : a.v) mx = std::max(mx, std::abs(x));
        arrays_[name][ds] = std::move(a);
    }
    if (row_scale.size() == 1) scales_[name] = row_scale[0];
    return mx;
}

// The largest e with max|x| 2^e within `limit` (0 when every x is 0).
int scale_exponent(double max_abs, double limit) {
    if (max_abs <= 0.0) return 0;
    int e = static_cast<int>(std::floor(std::log2(limit / max_abs)));
    while (std::ldexp(max_abs, e) > limit) --e;
    return e;
}

double max_abs_of(const h5::Reader& f, const std::string& ds) {
    double m = 0.0;
    for (double x : f.read_doubles(ds)) m = std::max(m, std::fabs(x));
    return m;
}

// Thresholds, bias and decay of one neuron in the datapath's integers.
struct NeuronInts {
    std::int64_t dv = 0, bias_mant = 0, bias_exp = 0, vth = 0, vth_lo = 0;
};

// The threshold parameter p (fires on v > p 2^ts, or v >= with chip_ge) closest to the float
// rule v > x (or v >= x with model_ge), v in membrane units. Exact when ts = 0.
std::int64_t upper_threshold(double x, int ts, bool chip_ge, bool model_ge) {
    if (ts > 0) return static_cast<std::int64_t>(std::nearbyint(std::ldexp(x, -ts)));
    const auto fl = static_cast<std::int64_t>(std::floor(x)),
               ce = static_cast<std::int64_t>(std::ceil(x));
    if (chip_ge) return model_ge ? ce : fl + 1;
    return model_ge ? ce - 1 : fl;
}
// The same for the ternary neuron's -1: the float rule v <= -x (model_ge) or v < -x; the chip
// fires on v < q 2^ts, or v <= with chip_ge.
std::int64_t lower_threshold(double x, int ts, bool chip_ge, bool model_ge) {
    if (ts > 0) return static_cast<std::int64_t>(std::nearbyint(std::ldexp(-x, -ts)));
    const auto fl = static_cast<std::int64_t>(std::floor(-x)),
               ce = static_cast<std::int64_t>(std::ceil(-x));
    if (chip_ge) return model_ge ? fl : ce - 1;
    return model_ge ? fl + 1 : ce;
}

// A bias b as mantissa and exponent, the mantissa within Loihi's signed 13 bits.
void split_bias(double b, std::int64_t& mant, std::int64_t& exp) {
    exp = 0;
    while (std::fabs(std::ldexp(b, -static_cast<int>(exp))) > 4095.0 && exp < 31) ++exp;
    mant = static_cast<std::int64_t>(std::nearbyint(std::ldexp(b, -static_cast<int>(exp))));
}

// One neuron v <- a v + (input) + c, firing at th (all in float units, the reset level at 0), on
// a membrane counted in units of 1/U.
NeuronInts neuron_ints(const fixed::LifDatapath& d, double a, double c, double th, double U,
                       bool chip_ge, bool model_ge) {
    const std::int64_t unity = std::int64_t{1} << d.decay_shift;
    NeuronInts x;
    x.dv = std::clamp<std::int64_t>(
        static_cast<std::int64_t>(std::nearbyint(static_cast<double>(unity) * (1.0 - a))) -
            d.dv_offset,
        0, unity - d.dv_offset);
    split_bias(c * U, x.bias_mant, x.bias_exp);
    x.vth =
        std::max<std::int64_t>(0, upper_threshold(th * U, d.threshold_shift, chip_ge, model_ge));
    x.vth_lo =
        std::min<std::int64_t>(0, lower_threshold(th * U, d.threshold_shift, chip_ge, model_ge));
    return x;
}

}  // namespace

double Quantizer::fit_scale(double x, double limit) const {
    if (!(x > 0.0)) return 1.0;
    if (formats_.scale == "max") return limit / x;
    return std::ldexp(1.0, scale_exponent(x, limit));
}

std::vector<double> Quantizer::row_maxima(const Population& p, double gain) const {
    std::vector<double> m;
    for (int l : p.layers) {
        h5::DatasetInfo info;
        const auto w = file_->read_doubles(group_of(l) + "/weight", &info);
        const auto rows = static_cast<std::size_t>(info.dims.empty() ? 1 : info.dims[0]);
        if (m.empty()) m.assign(rows, 0.0);
        if (m.size() != rows || w.size() % rows != 0) return {};
        const std::size_t per = w.size() / rows;
        for (std::size_t i = 0; i < w.size(); ++i)
            m[i / per] = std::max(m[i / per], std::fabs(w[i] * gain));
    }
    return m;
}

void Quantizer::quantize_population(const Population& p) {
    const Node& n = graph().node(p.neuron);
    const auto& f = p.form;
    QuantizedNode q{n.name(), n.type(), "FixedLIF", 1.0, 0, ""};
    const auto N = static_cast<std::size_t>(n.in_size());
    const auto keep = [&](const std::string& why) { plan_.kept[p.neuron] = why; };
    if (std::any_of(f.g.begin(), f.g.end(), [&](float x) { return x != f.g[0]; }))
        return keep("its input gains differ across neurons (one scale per population)");
    const double g0 = f.g[0];
    // The chip resets to 0: a reset level v_r moves the membrane's origin there.
    std::vector<double> a(N), c(N), th(N);
    for (std::size_t k = 0; k < N; ++k) {
        a[k] = at(f.a, k);
        const double vr = f.subtract ? 0.0 : at(f.v_reset, k);
        if (!(a[k] >= 0.0 && a[k] <= 1.0)) return keep("a decay factor lies outside [0, 1]");
        if (f.v_initial != vr)
            return keep("its membranes start at " + std::to_string(f.v_initial) +
                        ", not at the reset level");
        c[k] = at(f.c, k) + (a[k] - 1.0) * vr;
        th[k] = at(f.threshold, k) - vr;
        if (!(th[k] > 0.0)) return keep("a threshold lies at or below the reset level");
    }
    // Scale per row (output channel) or per population: the largest weight fills the weight
    // format; the membrane holds twice the largest threshold (a step's input can overshoot it).
    std::vector<double> rows = row_maxima(p, std::fabs(g0));
    // Per channel needs every layer of the population to be of one kind (convolution or linear).
    const auto kind = [&](int l) { return graph().node(l).type().rfind("Conv", 0) == 0; };
    const bool one_kind = std::all_of(p.layers.begin(), p.layers.end(),
                                      [&](int l) { return kind(l) == kind(p.layers[0]); });
    const bool per_channel =
        formats_.granularity == "channel" && one_kind && !rows.empty() && N % rows.size() == 0;
    if (!per_channel) {  // one scale: the largest row's (the layers read again only when their
                         // rows disagree)
        double m = 0.0;
        if (!rows.empty())
            m = *std::max_element(rows.begin(), rows.end());
        else
            for (int l : p.layers)
                m = std::max(m, max_abs_of(*file_, group_of(l) + "/weight") * std::fabs(g0));
        rows = {m};
    }
    // The output channel of neuron k: convolutions lay channels out first ([C, H, W]), linear
    // layers last ([tokens, features]).
    const bool conv = graph().node(p.layers[0]).type().rfind("Conv", 0) == 0;
    const std::size_t R = rows.size(), per = N / R;
    const auto row_of = [&](std::size_t k) { return R == 1 ? 0 : (conv ? k / per : k % R); };
    std::vector<double> thmax(R, 0.0), scale(R);
    for (std::size_t k = 0; k < N; ++k) thmax[row_of(k)] = std::max(thmax[row_of(k)], th[k]);
    const double qmax = std::ldexp(1.0, formats_.weight_bits - 1) - 1.0;
    const auto vmax = static_cast<double>(datapath_.membrane.max());
    bool lowered = false;
    for (std::size_t r = 0; r < rows.size(); ++r) {
        const double sw = fit_scale(rows[r], qmax);
        scale[r] = std::min(sw, fit_scale(std::ldexp(2.0 * thmax[r], datapath_.input_shift), vmax));
        lowered |= scale[r] < sw;
    }
    if (lowered)
        q.note = "scale lowered so that the threshold fits the " +
                 std::to_string(datapath_.membrane.bits) + "-bit membrane";
    q.scale = *std::min_element(scale.begin(), scale.end());
    if (scale.size() > 1)
        q.note += std::string(q.note.empty() ? "" : "; ") + "per channel: " + range_of(scale);
    for (int l : p.layers) {
        const std::int64_t mx = integer_weights(l, g0, scale);
        report_.nodes.push_back({graph().node(l).name(), graph().node(l).type(), "integer weights",
                                 q.scale, mx, "feeds " + n.name()});
    }
    std::vector<double> neuron_scale(N);
    for (std::size_t k = 0; k < N; ++k) neuron_scale[k] = scale[row_of(k)];
    write_neuron(n.name(), n.in_shape(), f, a, c, th, neuron_scale);
    report_.nodes.push_back(q);
}

void Quantizer::write_neuron(const std::string& name, const Shape& shape,
                             const kernels::LeakyForm& f, const std::vector<double>& a,
                             const std::vector<double>& c, const std::vector<double>& th,
                             const std::vector<double>& scale) {
    const int is = datapath_.input_shift;
    const bool chip_ge = formats_.neuron.has("compare") ? datapath_.fire_at_equal : f.fire_at_equal;
    const std::int64_t unity = std::int64_t{1} << datapath_.decay_shift;
    std::map<std::string, std::vector<std::int64_t>> v;
    for (std::size_t k = 0; k < a.size(); ++k) {
        const double U = std::ldexp(scale[k], is);  // membrane units per float unit
        const NeuronInts x = neuron_ints(datapath_, a[k], c[k], th[k], U, chip_ge, f.fire_at_equal);
        v["dv"].push_back(x.dv);
        v["bias_mant"].push_back(x.bias_mant);
        v["bias_exp"].push_back(x.bias_exp);
        v["vth"].push_back(x.vth);
        if (f.ternary) v["vth_lo"].push_back(x.vth_lo);
    }
    v["du"] = {unity - datapath_.du_offset};
    auto& out = arrays_[name];
    for (auto& kv : v) {  // no structured binding: clang 14 cannot capture one in a lambda
        const std::string& k = kv.first;
        std::vector<std::int64_t>& vals = kv.second;
        const std::int64_t first = vals[0];
        const bool same =
            std::all_of(vals.begin(), vals.end(), [first](std::int64_t x) { return x == first; });
        out[k] = same ? Array{{vals[0]}, {}} : Array{std::move(vals), shape};
    }
    auto& str = strings_[name];
    str["type"] = "ternion.FixedLIF";
    for (const auto& k : formats_.neuron.names()) {
        if (formats_.neuron.is_string(k))
            str[k] = formats_.neuron.string(k);
        else
            out[k] = Array{{static_cast<std::int64_t>(formats_.neuron.doubles(k, nullptr)[0])}, {}};
    }
    if (!str.count("compare")) str["compare"] = f.fire_at_equal ? ">=" : ">";
    if (!str.count("reset_mode")) str["reset_mode"] = f.subtract ? "subtract" : "zero";
}

namespace {

// An attention group's float rule with the reset level at 0 (the chip resets to 0); empty
// `why` when it has one.
struct GroupRule {
    double a = 0, c = 0, th = 0, g = 1;
};
GroupRule group_rule(const kernels::LeakyForm& f, std::string& why) {
    const double vr = f.subtract ? 0.0 : f.v_reset[0];
    const GroupRule r{f.a[0], f.c[0] + (f.a[0] - 1.0) * vr, f.threshold[0] - vr, f.g[0]};
    if (f.v_initial != vr) why = "its neurons start away from their reset level";
    if (!(r.a >= 0.0 && r.a <= 1.0)) why = "a decay factor lies outside [0, 1]";
    if (!(r.th > 0.0)) why = "a threshold lies at or below the reset level";
    return r;
}

}  // namespace

// Stages: each group's float rule; the three projections at one scale each (BSA's V into its
// register); the mixing group's input exponent; the datapath and register fields.
void Quantizer::quantize_attention(int u) {
    const auto& node = dynamic_cast<const SpikingAttentionNode&>(graph().node(u));
    const auto groups = node.float_groups();
    std::string why;
    std::vector<GroupRule> rules;
    for (const auto& g : groups) rules.push_back(group_rule(g.form, why));
    std::vector<float> w[3], b[3];
    for (int part = 0; part < 3 && why.empty(); ++part)
        if (!node.projection_matrix(part, w[part], b[part]))
            why = "its BatchNorm is kept unfolded (bn_form): fold it to quantise";
    if (!why.empty()) {
        plan_.kept[u] = why;
        return;
    }
    QuantizedNode q{node.name(), node.type(), "integer attention", 1.0, 0, ""};
    double value_units = 1.0;  // BSA: V's register units per float unit
    double y_max = 0.0;        // the largest product the mixing neurons can receive
    const auto N = static_cast<double>(node.tokens());
    if (node.type() == "ternion.SSA") y_max = N * double(node.dim() / node.heads());
    if (node.type() == "ternion.SDSA") y_max = N;
    for (int part = 0; part < 3; ++part) {
        const auto it = std::find_if(groups.begin(), groups.end(),
                                     [&](const auto& g) { return g.part == part; });
        const GroupRule* r =
            it == groups.end() ? nullptr : &rules[std::size_t(it - groups.begin())];
        std::int64_t row_max = 0;
        const double sc = attention_projection(node, part, w[part], b[part], r, q, row_max);
        if (r)
            write_attention_group(node.name(), it->prefix, *r,
                                  std::ldexp(sc, datapath_.input_shift), it->form.ternary, 0);
        else {
            const int vs = value_register(node.name(), row_max);
            value_units = std::ldexp(sc, vs);
            y_max = std::ldexp(double(row_max), vs) + N;  // the weights 2^-n sum to at most 1
        }
    }
    // The mixing neurons: their input is the integer product y (SSA's and SDSA's spike counts,
    // BSA's sum in V's units), entering as y << e with the largest e (at most 8) that keeps twice
    // the threshold on the membrane and the largest y within the current.
    const auto vmax = static_cast<double>(datapath_.membrane.max());
    const auto cmax = static_cast<double>(datapath_.current.max());
    for (std::size_t i = 0; i < groups.size(); ++i) {
        const auto& g = groups[i];
        if (g.part >= 0) continue;
        const double G = rules[i].g * g.gain, K = g.via_value ? value_units : 1.0;
        int e = 8;
        const int is = datapath_.input_shift;
        while (e > -31 && (2.0 * rules[i].th * std::ldexp(K / G, e + is) > vmax ||
                           std::ldexp(y_max, e + is) > cmax))
            --e;
        write_attention_group(node.name(), g.prefix, rules[i],
                              std::ldexp(K / G, e + datapath_.input_shift), g.form.ternary, e);
        q.note += ", " + g.prefix.substr(0, g.prefix.size() - 1) + " input << " + std::to_string(e);
    }
    write_attention_formats(u);
    report_.nodes.push_back(q);
}

// Projection `part`'s integer weights and bias (the group's gain folded in) at one power-of-two
// scale, lowered where twice the group's threshold would not fit the membrane; returns the scale.
double Quantizer::attention_projection(const SpikingAttentionNode& node, int part,
                                       const std::vector<float>& w, const std::vector<float>& b,
                                       const GroupRule* r, QuantizedNode& q,
                                       std::int64_t& row_max) {
    const double gain = r ? r->g : 1.0;
    const double qmax = std::ldexp(1.0, formats_.weight_bits - 1) - 1.0;
    double m = 0.0;
    for (float x : w) m = std::max(m, std::fabs(double(x) * gain));
    double sc = fit_scale(m, qmax);
    if (r)
        sc = std::min(sc, fit_scale(std::ldexp(2.0 * r->th, datapath_.input_shift),
                                    static_cast<double>(datapath_.membrane.max())));
    const std::string pre = part == 0 ? "q" : part == 1 ? "k" : "v";
    const std::size_t rows = b.size(), n = w.size() / rows;
    Array wa{{}, {static_cast<std::int64_t>(rows), static_cast<std::int64_t>(n)}};
    Array ba{{}, {static_cast<std::int64_t>(rows)}};
    for (std::size_t o = 0; o < rows; ++o) {
        ba.v.push_back(round_to_int(double(b[o]) * gain * sc));
        std::int64_t row = std::abs(ba.v.back());
        for (std::size_t i = 0; i < n; ++i) {
            wa.v.push_back(round_to_int(double(w[o * n + i]) * gain * sc));
            q.max_weight = std::max(q.max_weight, std::abs(wa.v.back()));
            row += std::abs(wa.v.back());
        }
        row_max = std::max(row_max, row);
    }
    auto& out = arrays_[node.name()];
    out[pre + "_weight"] = std::move(wa);
    if (std::any_of(ba.v.begin(), ba.v.end(), [](std::int64_t x) { return x != 0; }))
        out[pre + "_bias"] = std::move(ba);
    q.note += (q.note.empty() ? "" : ", ") + pre + " x " + number(sc);
    return sc;
}

// BSA's V register: the profile's width (24 bits unless it says), the sum shifted left as far
// as the largest row sum allows (at most 16): the fraction bits kept through Shiftmax's shifts.
int Quantizer::value_register(const std::string& name, std::int64_t row_max) {
    const int bits = formats_.attention.has("value_bits")
                         ? static_cast<int>(formats_.attention.doubles("value_bits", nullptr)[0])
                         : 24;
    int vs = 0;
    while (vs < 16 && (row_max << (vs + 1)) < (std::int64_t{1} << (bits - 1))) ++vs;
    arrays_[name]["value_bits"] = Array{{bits}, {}};
    arrays_[name]["value_shift"] = Array{{vs}, {}};
    return vs;
}

// One group's integer constants on a membrane counted in units of 1/U.
void Quantizer::write_attention_group(const std::string& name, const std::string& pre,
                                      const GroupRule& r, double U, bool ternary, int input_exp) {
    const bool chip_ge = formats_.neuron.has("compare") ? datapath_.fire_at_equal : true;
    const NeuronInts x = neuron_ints(datapath_, r.a, r.c, r.th, U, chip_ge, true);
    auto& out = arrays_[name];
    const auto put = [&](const std::string& k, std::int64_t v) { out[pre + k] = Array{{v}, {}}; };
    put("vth", x.vth);
    if (ternary) put("vth_lo", x.vth_lo);
    put("dv", x.dv);
    if (x.bias_mant) {
        put("bias_mant", x.bias_mant);
        put("bias_exp", x.bias_exp);
    }
    if (input_exp) put("input_exp", input_exp);
}

// The datapath as the FixedLIF nodes get it, the profile's attention registers; the float
// neurons' parameters and the BatchNorm go.
void Quantizer::write_attention_formats(int u) {
    const std::string& name = graph().node(u).name();
    auto& out = arrays_[name];
    auto& str = strings_[name];
    for (const MapParams* m : {&formats_.neuron, &formats_.attention})
        for (const auto& k : m->names()) {
            if (k == "value_bits") continue;  // value_register wrote it
            if (m->is_string(k))
                str[k] = m->string(k);
            else
                out[k] = Array{{static_cast<std::int64_t>(m->doubles(k, nullptr)[0])}, {}};
        }
    if (!str.count("datapath")) str["datapath"] = "loihi";
    if (!str.count("compare")) str["compare"] = ">=";
    if (!str.count("reset_mode")) str["reset_mode"] = "zero";
    auto& drop = dropped_[name];
    for (const auto& c : file_->children(group_of(u)))
        if (c.rfind("lif_", 0) == 0 || c.rfind("attn_", 0) == 0 || c.rfind("qk_", 0) == 0 ||
            c.rfind("out_", 0) == 0 || c.find("_bn_") != std::string::npos || c == "q_bias" ||
            c == "k_bias" || c == "v_bias")
            drop.insert(c);
}

void Quantizer::quantize_readout(int layer) {
    // One scale for every output: class decisions compare the outputs with each other.
    const double qmax = std::ldexp(1.0, formats_.weight_bits - 1) - 1.0;
    const double sc = fit_scale(max_abs_of(*file_, group_of(layer) + "/weight"), qmax);
    const std::int64_t mx = integer_weights(layer, 1.0, {sc});
    report_.nodes.push_back({graph().node(layer).name(), graph().node(layer).type(),
                             "integer weights", sc, mx,
                             "readout: its output is the float one times " + number(sc)});
}

namespace {

void copy_object(const h5::Reader& src, const h5::Writer& dst, const std::string& obj) {
    if (H5Ocopy(src.file_id(), obj.c_str(), dst.file_id(), obj.c_str(), H5P_DEFAULT, H5P_DEFAULT) <
        0)
        throw InputError(dst.path(), obj, "cannot copy from " + src.path());
}

}  // namespace

void Quantizer::write_node(h5::Writer& w, const std::string& name) const {
    const std::string grp = "/node/nodes/" + name;
    const auto a = arrays_.find(name);
    const auto s = strings_.find(name);
    if (a == arrays_.end() && s == strings_.end()) {
        copy_object(*file_, w, grp);
        return;
    }
    w.group(grp);
    const auto d = dropped_.find(name);
    // A weighted layer or an attention node: every dataset but the replaced and dropped ones (a
    // FixedLIF replaces the neuron's whole group).
    if (s == strings_.end() || d != dropped_.end())
        for (const auto& c : file_->children(grp))
            if (!(a != arrays_.end() && a->second.count(c)) &&
                !(s != strings_.end() && s->second.count(c)) &&
                !(d != dropped_.end() && d->second.count(c)))
                copy_object(*file_, w, grp + "/" + c);
    if (s != strings_.end())
        for (const auto& [k, v] : s->second) w.write_string(grp + "/" + k, v);
    if (a != arrays_.end())
        for (const auto& [k, v] : a->second) w.write(grp + "/" + k, v.v, v.dims, false);
    if (const auto x = scales_.find(name); x != scales_.end())
        w.attr(grp, "ternion_weight_scale", x->second);
}

void Quantizer::write() const {
    h5::write_atomically(output_, [&](const std::string& tmp) {
        {
            h5::Writer w(tmp);
            for (const auto& c : file_->children("/"))
                if (c != "node") copy_object(*file_, w, "/" + c);
            w.group("/node");
            for (const auto& c : file_->children("/node"))
                if (c != "nodes") copy_object(*file_, w, "/node/" + c);
            w.group("/node/nodes");
            for (const auto& c : file_->children("/node/nodes")) write_node(w, c);
            w.attr("/", "ternion_quantized",
                   "profile " + profile_name_ + ", " + std::to_string(formats_.weight_bits) +
                       "-bit weights");
            w.close();
        }
        // The copy must load as a model before it replaces anything.
        load_model_file(tmp, opts_.load);
    });
}

QuantizeReport Quantizer::run() {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (fs::exists(output_, ec) && fs::equivalent(model_, output_, ec))
        throw OptionError("output", "is the model itself: ternion never writes over its input");
    load_formats();
    model_graph_ = load_model_file(model_, opts_.load);
    file_ = std::make_unique<h5::Reader>(model_);
    plan();
    for (const auto& p : plan_.populations) quantize_population(p);
    for (int l : plan_.readouts) quantize_readout(l);
    for (int u : plan_.attention) quantize_attention(u);
    // A population given up on after planning keeps its layers in float too.
    for (auto& [u, why] : plan_.kept) {
        const Node& n = graph().node(u);
        report_.nodes.push_back({n.name(), n.type(), "kept float", 0, 0, why});
    }
    write();
    report_.model = model_;
    report_.output = output_;
    report_.profile = profile_name_;
    report_.weight_bits = formats_.weight_bits;
    return report_;
}

QuantizeReport quantize_model(const std::string& model, const std::string& output,
                              const QuantizeOptions& options) {
    return Quantizer(model, output, options).run();
}

std::string quantize_report_text(const QuantizeReport& r) {
    std::string out = r.model + " -> " + r.output + " (profile " + r.profile + ", " +
                      std::to_string(r.weight_bits) + "-bit weights)\n";
    std::size_t w = 4;
    for (const auto& n : r.nodes) w = std::max(w, n.name.size());
    for (const auto& n : r.nodes) {
        char buf[256];
        std::snprintf(buf, sizeof buf, "  %-*s  %-18s  %-16s", static_cast<int>(w), n.name.c_str(),
                      n.type.c_str(), n.action.c_str());
        out += buf;
        if (n.action != "kept float") out += "  x " + number(n.scale);
        if (n.max_weight) out += ", |w| <= " + std::to_string(n.max_weight);
        if (!n.note.empty()) out += "  (" + n.note + ")";
        out += "\n";
    }
    return out;
}

}  // namespace ternion
