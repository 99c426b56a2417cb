// `ternion analyze causal|depth|imf`: analysis tools from published papers, run on recorded
// attention maps (traces) or on model sizes. Definitions and assumptions: docs/analysis.md.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "attention/analysis/analysis_causal.hpp"
#include "attention/analysis/analysis_depth.hpp"
#include "attention/analysis/analysis_imf.hpp"
#include "attention/analysis/analysis_trace.hpp"
#include "sim/core/error.hpp"
#include "tools/cli/cli_common.hpp"

namespace ternion::cli {

namespace {

using nlohmann::json;
using namespace ternion::analysis;

void write_text(const std::string& path, const std::string& option, const std::string& text) {
    std::ofstream f(path);
    if (!f) throw OptionError(option, "cannot write '" + path + "'");
    f << text;
    if (!f) throw OptionError(option, "cannot write '" + path + "'");
}

std::string fmt(double v, int prec = 3) {
    if (std::isnan(v)) return "n/a";
    char b[64];
    std::snprintf(b, sizeof b, "%.*f", prec, v);
    return b;
}

json matrix_json(const Eigen::MatrixXd& m) {
    json j = json::array();
    for (Eigen::Index i = 0; i < m.rows(); ++i) {
        json r = json::array();
        for (Eigen::Index k = 0; k < m.cols(); ++k) r.push_back(m(i, k));
        j.push_back(r);
    }
    return j;
}

// "a-b" (inclusive) or "a": the token subset for the causal graph.
std::vector<std::int64_t> token_range(const std::string& s, std::int64_t n) {
    const auto dash = s.find('-');
    auto num = [&](const std::string& v) -> std::int64_t {
        if (v.empty() || v.size() > 12 || v.find_first_not_of("0123456789") != std::string::npos)
            throw OptionError("tokens", "expected a or a-b, got '" + s + "'");
        return std::stoll(v);
    };
    const auto lo = num(s.substr(0, dash));
    const auto hi = dash == std::string::npos ? lo : num(s.substr(dash + 1));
    if (hi < lo) throw OptionError("tokens", "empty range '" + s + "'");
    if (hi >= n)
        throw OptionError("tokens", "range '" + s + "' out of bounds (the maps have " +
                                        std::to_string(n) + " tokens)");
    std::vector<std::int64_t> t;
    for (auto i = lo; i <= hi; ++i) t.push_back(i);
    return t;
}

// Position of the --sample / --step index among the recorded ones (the first by default).
std::int64_t pick(const po::variables_map& vm, const char* name, const RecordedAttention& a,
                  bool sample) {
    if (!vm.count(name)) return 0;
    const auto id = vm[name].as<std::int64_t>();
    return sample ? a.sample_pos(id, name) : a.step_pos(id, name);
}

// ---------------------------------------------------------------- causal

po::options_description causal_options() {
    po::options_description d(
        "ternion analyze causal: causal graph over tokens from a recorded attention map (ABCD)");
    d.add_options()("help,h", "show this help")("trace", po::value<std::string>()->required(),
                                                "trace file (HDF5) with attention maps")(
        "node", po::value<std::string>()->required(), "attention node name")(
        "head", po::value<std::int64_t>(), "head (default: every head, one graph each)")(
        "sample", po::value<std::int64_t>(), "recorded sample index (default: the first)")(
        "step", po::value<std::int64_t>(), "recorded step index (default: the first)")(
        "alpha", po::value<double>()->default_value(0.01),
        "p-value threshold: independent iff p > alpha")(
        "records", po::value<std::int64_t>(),
        "records n of the Fisher-z test: the value width per head (default: the trace's "
        "value_dim attribute)")("map", po::value<std::string>()->default_value(""),
                                "weights or scores (default: weights if recorded)")(
        "tokens", po::value<std::string>(), "token subset a-b (default: all rows)")(
        "max-cond", po::value<int>()->default_value(-1),
        "largest conditioning set (-1: unbounded)")("json", "print JSON instead of text")(
        "json-out", po::value<std::string>(), "also write the JSON to this file")(
        "dot", po::value<std::string>(), "write the graphs as Graphviz DOT to this file");
    return d;
}

// Output files must not be the trace (or each other): checked before anything is read.
void check_causal_outputs(const po::variables_map& vm) {
    const NamedPath trace_in{"trace", vm["trace"].as<std::string>()};
    if (vm.count("json-out"))
        check_output("json-out", vm["json-out"].as<std::string>(), {trace_in});
    if (vm.count("dot")) {
        std::vector<NamedPath> ins{trace_in};
        if (vm.count("json-out")) ins.push_back({"json-out", vm["json-out"].as<std::string>()});
        check_output("dot", vm["dot"].as<std::string>(), ins);
    }
}

// The Fisher-z test's records n: --records, else the trace's value width.
std::int64_t causal_records(const po::variables_map& vm, const RecordedAttention& a) {
    std::int64_t n = a.value_dim;
    if (vm.count("records")) n = vm["records"].as<std::int64_t>();
    if (n <= 0)
        throw OptionError("records",
                          "the trace does not record the value width: give --records "
                          "d (the per-head value width, e.g. 16 for the bundled models)");
    if (a.rows != a.cols)
        throw InputError(a.file, "/nodes/" + a.node + "/observables/attention/" + a.map,
                         "not a self-attention map (" + std::to_string(a.rows) + " x " +
                             std::to_string(a.cols) + ")");
    return n;
}

std::vector<std::int64_t> causal_heads(const po::variables_map& vm, const RecordedAttention& a) {
    std::vector<std::int64_t> heads;
    if (vm.count("head")) {
        const auto h = vm["head"].as<std::int64_t>();
        if (h < 0 || h >= a.heads)
            throw OptionError("head",
                              "out of range (the node has " + std::to_string(a.heads) + " heads)");
        heads.push_back(h);
    } else {
        for (std::int64_t h = 0; h < a.heads; ++h) heads.push_back(h);
    }
    return heads;
}

// One head's graph as JSON: edges with their marks, separations with their sets and p-values.
json causal_graph_json(const CausalGraph& g, const std::vector<std::string>& names,
                       const std::vector<int>& degenerate) {
    json je = json::array(), js = json::array(), jd = json::array();
    for (int i = 0; i < g.n; ++i)
        for (int j = i + 1; j < g.n; ++j) {
            if (g.adjacent(i, j)) {
                const bool hi = g.at(j, i) == Mark::arrow, hj = g.at(i, j) == Mark::arrow;
                std::string from = names[size_t(i)], to = names[size_t(j)], type;
                if (hi && hj) {
                    type = "bidirected";
                } else if (hi || hj) {
                    type = "directed";
                    if (hi) std::swap(from, to);
                } else {
                    type = "undirected";
                }
                je.push_back({{"from", from}, {"to", to}, {"type", type}});
            } else if (g.separated[size_t(i * g.n + j)]) {
                std::vector<std::string> given;
                for (int z : g.sepset[size_t(i * g.n + j)]) given.push_back(names[size_t(z)]);
                js.push_back({{"x", names[size_t(i)]},
                              {"y", names[size_t(j)]},
                              {"given", given},
                              {"p", g.sep_pvalue[size_t(i * g.n + j)]}});
            }
        }
    for (int i : degenerate) jd.push_back(names[size_t(i)]);
    return {{"tests", g.tests},
            {"max_order", g.max_order},
            {"edges", je},
            {"separations", js},
            {"degenerate", jd}};
}

int analyze_causal(const Args& args) {
    auto d = causal_options();
    if (help_asked(args, d)) return 0;
    auto vm = parse(args, d);
    const double alpha = vm["alpha"].as<double>();
    if (!(alpha > 0 && alpha < 1)) throw OptionError("alpha", "must be in (0, 1)");
    const int max_cond = vm["max-cond"].as<int>();
    if (max_cond < -1) throw OptionError("max-cond", "must be >= -1");
    check_causal_outputs(vm);

    const auto a = read_attention(vm["trace"].as<std::string>(), vm["node"].as<std::string>(),
                                  vm["map"].as<std::string>());
    const std::int64_t n = causal_records(vm, a);
    const auto s = pick(vm, "sample", a, true);
    const auto t = pick(vm, "step", a, false);
    if (!a.has(s, t))
        throw InputError(a.file, a.group + "/present",
                         "the node delivered no map at sample " +
                             std::to_string(a.sample_ids[size_t(s)]) + ", step " +
                             std::to_string(a.step_ids[size_t(t)]));
    const auto heads = causal_heads(vm, a);
    std::vector<std::int64_t> tokens;
    if (vm.count("tokens")) {
        tokens = token_range(vm["tokens"].as<std::string>(), a.rows);
    } else {
        for (std::int64_t i = 0; i < a.rows; ++i) tokens.push_back(i);
    }
    std::vector<std::string> names;
    for (auto i : tokens) names.push_back("t" + std::to_string(i));
    const auto m = static_cast<Eigen::Index>(tokens.size());

    json out = {{"trace", a.file},
                {"node", a.node},
                {"map", a.map},
                {"sample", a.sample_ids[size_t(s)]},
                {"step", a.step_ids[size_t(t)]},
                {"records", n},
                {"alpha", alpha},
                {"tokens", tokens},
                {"graphs", json::array()}};
    std::ostringstream text, dot;
    text << "causal graph (ABCD, PC-stable + Meek): node " << a.node << ", map " << a.map
         << ", sample " << a.sample_ids[size_t(s)] << ", step " << a.step_ids[size_t(t)] << ", "
         << m << " tokens, n = " << n << " records, alpha = " << alpha << "\n";
    for (auto h : heads) {
        // Rows of the map are the variables (queries); all keys stay as columns: a token's
        // covariance comes from its whole attention row.
        const float* map = a.map_at(s, t, h);
        Eigen::MatrixXd A(m, a.cols);
        for (Eigen::Index i = 0; i < m; ++i)
            for (std::int64_t j = 0; j < a.cols; ++j) A(i, j) = map[tokens[size_t(i)] * a.cols + j];
        const Eigen::MatrixXd C = attention_covariance(A);
        std::vector<int> degenerate;
        FisherZTest test{correlation(C, &degenerate), n, alpha};
        const auto g = pc_search(test, int(m), PcOptions{max_cond});
        const auto edges = g.edge_strings(names);

        json jg = causal_graph_json(g, names, degenerate);
        jg["head"] = h;
        jg["covariance"] = matrix_json(C);
        jg["correlation"] = matrix_json(test.R);
        out["graphs"].push_back(jg);

        text << "\nhead " << h << ": " << edges.size() << " edges, " << g.tests
             << " CI tests, conditioning sets up to " << g.max_order << "\n";
        if (!degenerate.empty()) {
            text << "  all-zero rows (no variance, left isolated):";
            for (int i : degenerate) text << " " << names[size_t(i)];
            text << "\n";
        }
        for (auto& e : edges) text << "  " << e << "\n";
        dot << to_dot(g, names, a.node + " head " + std::to_string(h));
    }
    text << "\nedges: --- undirected (orientation not identified), --> directed, <-> conflicting "
            "v-structures\n";
    if (vm.count("json-out"))
        write_text(vm["json-out"].as<std::string>(), "json-out", out.dump(1) + "\n");
    if (vm.count("dot")) write_text(vm["dot"].as<std::string>(), "dot", dot.str());
    if (vm.count("json")) {
        std::cout << out.dump(1) << "\n";
    } else {
        std::cout << text.str();
    }
    return 0;
}

// ---------------------------------------------------------------- depth

json row_json(const DepthRow& r) {
    return {{"depth", r.depth},
            {"width", r.width},
            {"params", r.params},
            {"threshold", r.threshold},
            {"regime", regime_name(r.regime)},
            {"log_sep_proxy", r.log_sep},
            {"log_monomials", r.log_monos}};
}

void print_rows(std::ostream& o, const std::vector<DepthRow>& rows) {
    o << "  depth      width   log3(width)  regime            ln sep proxy   ln #monomials\n";
    for (auto& r : rows) {
        char b[200];
        std::snprintf(b, sizeof b, "  %5d  %9.1f  %11.3f  %-16s  %13.4g  %14.4g\n", r.depth,
                      r.width, r.threshold, regime_name(r.regime), r.log_sep, r.log_monos);
        o << b;
    }
}

int analyze_depth(const Args& args) {
    po::options_description d(
        "ternion analyze depth: depth threshold log3(width) and parameter-budget scan "
        "(Levine et al. 2020)");
    d.add_options()("help,h", "show this help")("width", po::value<double>()->required(),
                                                "model width d_x (>= 1)")(
        "params", po::value<double>(),
        "parameter budget P: scan depths with d_x = sqrt(P / (12 L))")(
        "max-depth", po::value<int>(),
        "deepest depth scanned (default: 2 ceil(log3 W) + 2, "
        "48 for --params)")("json", "print JSON instead of text");
    if (help_asked(args, d)) return 0;
    auto vm = parse(args, d);
    const double W = vm["width"].as<double>();
    if (!(W >= 1) || !std::isfinite(W)) throw OptionError("width", "must be a finite number >= 1");
    const double th = depth_threshold(W);
    const int wmax =
        vm.count("max-depth") ? vm["max-depth"].as<int>() : 2 * int(std::ceil(th - 1e-9)) + 2;
    const auto rows = width_scan(W, wmax);
    json out = {{"width", W},
                {"threshold", th},
                {"recommended_depth", int(std::ceil(th - 1e-9))},
                {"params_at_recommended", transformer_params(int(std::ceil(th - 1e-9)), W)},
                {"width_scan", json::array()}};
    for (auto& r : rows) out["width_scan"].push_back(row_json(r));
    std::ostringstream o;
    o << "width " << W << ": depth threshold log3(" << W << ") = " << fmt(th) << "\n"
      << "  below it depth pays off exponentially (ln sep ~ 3^L ln d); above it depth and width "
         "add linearly (ln sep ~ L d ln 3)\n"
      << "  the threshold holds up to constants: read ceil(log3 W) = " << int(std::ceil(th - 1e-9))
      << " as a lower bound, not the empirical optimum\n";
    print_rows(o, rows);
    if (vm.count("params")) {
        const double P = vm["params"].as<double>();
        const int bmax = vm.count("max-depth") ? vm["max-depth"].as<int>() : 48;
        const auto scan = budget_scan(P, bmax);
        const int cross = budget_crossover(scan);
        out["params"] = P;
        out["budget_crossover_depth"] = cross;
        out["budget_scan"] = json::array();
        for (auto& r : scan) out["budget_scan"].push_back(row_json(r));
        o << "\nbudget " << P << " parameters (12 L d^2; embeddings excluded):\n";
        print_rows(o, scan);
        if (cross > 0) {
            o << "  depth-efficient up to L = " << cross - 1 << "; from L = " << cross
              << " the width d = " << fmt(scan[size_t(cross - 1)].width, 1)
              << " limits what extra depth buys\n";
        } else {
            o << "  every scanned depth is depth-efficient\n";
        }
    }
    if (vm.count("json")) {
        std::cout << out.dump(1) << "\n";
    } else {
        std::cout << o.str();
    }
    return 0;
}

// ---------------------------------------------------------------- imf

// --node: "all" (every attention node of the trace, by name) or a comma-separated list.
std::vector<std::string> imf_nodes(const std::string& opt, const std::string& file) {
    std::vector<std::string> nodes;
    if (opt == "all") {
        nodes = attention_nodes(file);
        if (nodes.empty()) throw InputError(file, "/nodes", "no attention maps in this trace");
        return nodes;
    }
    std::stringstream ss(opt);
    for (std::string n; std::getline(ss, n, ',');)
        if (!n.empty()) nodes.push_back(n);
    if (nodes.empty()) throw OptionError("node", "no node named");
    return nodes;
}

// Mean flow of head h over the recorded maps that carry attention mass (`counted` of them;
// NaN when none); maps without mass and sample-steps without maps are tallied.
double head_flow(const RecordedAttention& a, std::int64_t h, const std::vector<TokenGroup>& groups,
                 int& counted, std::int64_t& empty, std::int64_t& missing) {
    double sum = 0;
    counted = 0;
    for (std::int64_t s = 0; s < a.samples; ++s)
        for (std::int64_t t = 0; t < a.steps; ++t) {
            if (!a.has(s, t)) {
                ++missing;  // the node delivered no map here
                continue;
            }
            const auto f = inter_modality_flow(a.map_at(s, t, h), a.rows, a.cols, groups);
            if (std::isnan(f.imf)) {
                ++empty;  // no attention mass at all (silent step): no flow to share
                continue;
            }
            sum += f.imf;
            ++counted;
        }
    return counted ? sum / counted : std::numeric_limits<double>::quiet_NaN();
}

int analyze_imf(const Args& args) {
    po::options_description d(
        "ternion analyze imf: inter-modality flow between token groups from recorded attention");
    d.add_options()("help,h", "show this help")("trace", po::value<std::string>()->required(),
                                                "trace file (HDF5) with attention maps")(
        "node", po::value<std::string>()->default_value("all"),
        "attention node(s), comma-separated, in layer order (default: every one, by name)")(
        "groups", po::value<std::string>()->required(),
        "token groups NAME:RANGE,NAME:RANGE (RANGE: a, a-b, joined by +)")(
        "map", po::value<std::string>()->default_value(""),
        "weights or scores (default: weights if recorded)")("json", "print JSON instead of text");
    if (help_asked(args, d)) return 0;
    auto vm = parse(args, d);
    const auto file = vm["trace"].as<std::string>();
    const auto nodes = imf_nodes(vm["node"].as<std::string>(), file);
    json out = {{"trace", file}, {"layers", json::array()}};
    std::ostringstream o;
    double sum = 0;
    int counted = 0;
    std::vector<TokenGroup> groups;
    for (auto& node : nodes) {
        const auto a = read_attention(file, node, vm["map"].as<std::string>());
        if (groups.empty()) {
            groups = parse_groups(vm["groups"].as<std::string>(), std::min(a.rows, a.cols));
            o << "inter-modality flow (cross-group share of |attention| mass) between";
            json jg = json::array();
            for (auto& g : groups) {
                o << " " << g.name << " (" << g.tokens.size() << " tokens)";
                jg.push_back({{"name", g.name}, {"tokens", g.tokens}});
            }
            out["groups"] = jg;
            out["map"] = a.map;
            o << "; map " << a.map << "\n";
        } else {
            // Later layers must have room for every grouped token too.
            parse_groups(vm["groups"].as<std::string>(), std::min(a.rows, a.cols));
        }
        json jl = {{"node", node}, {"samples", a.sample_ids}, {"steps", a.step_ids}};
        json jh = json::array();
        double lsum = 0;
        int lcount = 0;
        std::int64_t empty = 0, missing = 0;
        o << "  " << node << " (" << a.samples << " samples x " << a.steps << " steps):";
        for (std::int64_t h = 0; h < a.heads; ++h) {
            int hc = 0;
            const double hm = head_flow(a, h, groups, hc, empty, missing);
            jh.push_back(hc ? json(hm) : json(nullptr));
            o << " h" << h << " " << fmt(hm);
            if (hc) {
                lsum += hm;
                ++lcount;
            }
        }
        const double lm = lcount ? lsum / lcount : std::numeric_limits<double>::quiet_NaN();
        o << "  | layer " << fmt(lm);
        if (empty) o << "  (" << empty << " maps without mass skipped)";
        if (missing)
            o << "  (" << missing / a.heads << " of " << a.samples * a.steps
              << " sample-steps without maps: present = 0)";
        if (a.nonfinite) o << "  (" << a.nonfinite << " masked -inf entries read as 0)";
        o << "\n";
        jl["heads"] = jh;
        jl["imf"] = lcount ? json(lm) : json(nullptr);
        jl["empty_maps"] = empty;
        jl["missing_maps"] = missing;
        out["layers"].push_back(jl);
        if (lcount) {
            sum += lm;
            ++counted;
        }
    }
    const double mean = counted ? sum / counted : std::numeric_limits<double>::quiet_NaN();
    out["imf_mean"] = counted ? json(mean) : json(nullptr);
    o << "mean over layers: " << fmt(mean) << "\n";
    if (vm.count("json")) {
        std::cout << out.dump(1) << "\n";
    } else {
        std::cout << o.str();
    }
    return 0;
}

}  // namespace

int cmd_analyze(const Args& args) {
    const std::string usage =
        "usage: ternion analyze causal|depth|imf [options]   (--help after a tool for its "
        "options)\n"
        "  causal  causal graph over tokens from a recorded attention map (ABCD)\n"
        "  depth   depth threshold log3(width) and parameter-budget scan\n"
        "  imf     inter-modality flow between token groups from recorded attention\n";
    if (args.empty() || args[0] == "--help" || args[0] == "-h") {
        std::cout << usage;
        return args.empty() ? 2 : 0;
    }
    const Args rest(args.begin() + 1, args.end());
    if (args[0] == "causal") return analyze_causal(rest);
    if (args[0] == "depth") return analyze_depth(rest);
    if (args[0] == "imf") return analyze_imf(rest);
    throw Error("analyze: unknown tool '" + args[0] + "' (expected causal, depth or imf)");
}

}  // namespace ternion::cli
