#include "models/nir_loader.hpp"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

#include "attention/register.hpp"
#include "models/metadata.hpp"
#include "neuron/fixed/fixed_lif.hpp"
#include "neuron/neurons.hpp"
#include "sim/core/data_path.hpp"
#include "sim/core/error.hpp"
#include "sim/io/h5_params.hpp"
#include "sim/synaptic/synaptic.hpp"

namespace ternion {

const NodeFactory& default_factory() {
    static const NodeFactory f = [] {
        NodeFactory r;
        register_synaptic_nodes(r);
        register_neuron_nodes(r);
        register_fixed_neuron_nodes(r);
        register_attention_nodes(r);
        return r;
    }();
    return f;
}

std::vector<std::string> bundled_search_dirs() {
    return data_search_dirs(nullptr, "bundled", TERNION_BUNDLED_DIR);
}

std::string bundled_path(const std::string& file) {
    auto dirs = bundled_search_dirs();
    for (const auto& d : dirs) {
        std::string p = d + "/" + file;
        std::error_code ec;
        if (std::filesystem::is_regular_file(p, ec)) return p;
    }
    throw InputError(file, "",
                     "bundled file not found; searched " + join_dirs(dirs) +
                         " (set TERNION_DATA_DIR to the directory holding bundled/)");
}

const std::vector<Dialect>& dialects() {
    // Each framework's conventions: NIR's load options with `set` applied.
    auto dialect = [](std::string name, std::optional<double> dt, std::string summary, auto set) {
        Dialect r{name, dt, {}, std::move(summary)};
        r.conventions.dialect = std::move(name);
        set(r.conventions);
        return r;
    };
    static const std::vector<Dialect> d = {
        dialect("nir", std::nullopt, "NIR's equations as written", [](LoadOptions&) {}),
        dialect("snntorch", 1e-4,
                "dt 1e-4 s, euler, subtract reset at the next step (snnTorch's Leaky), recurrent "
                "input added after the decayed state and the feed-forward input (RLeaky, "
                "RSynaptic)",
                [](LoadOptions& o) {
                    o.reset = "subtract";
                    o.reset_delay = true;
                    o.recurrent_last = true;
                }),
        dialect("norse", 1e-3,
                "dt 1e-3 s, euler, reset to v_reset, membranes start at v_leak (IF at v_reset), "
                "CubaLIF input into the current with gain 1",
                [](LoadOptions& o) {
                    o.start_at_rest = true;
                    o.unit_current_gain = true;
                }),
        dialect(
            "sinabs", 1.0,
            "dt 1 (tau in steps), exact, subtract reset, fires on >=, LI (ExpLeak) input gain 1",
            [](LoadOptions& o) {
                o.discretization = "exact";
                o.reset = "subtract";
                o.compare_ge = true;
                o.unit_li_gain = true;
            }),
        dialect("spikingjelly", 1.0,
                "dt 1 (tau in steps), euler, reset to v_reset, fires on >=, membranes start at "
                "v_leak (IF at v_reset)",
                [](LoadOptions& o) {
                    o.compare_ge = true;
                    o.start_at_rest = true;
                }),
    };
    return d;
}

const Dialect& find_dialect(const std::string& name) {
    std::string known;
    for (const auto& d : dialects()) {
        if (d.name == name) return d;
        known += (known.empty() ? "" : ", ") + d.name;
    }
    throw OptionError("from", "unknown framework '" + name + "' (known: " + known + ")");
}

namespace {

// The writer a file's parameters point to, when it does not say: "snntorch" when every LIF/
// CubaLIF has r = tau/1e-4 (snnTorch's exporter), "steps" when every time constant is 1 or more
// (Sinabs and SpikingJelly count them in steps); "" otherwise. Read after the graph loaded, so
// the parameters are known to be sound.
std::string guess_writer(const h5::Reader& r, const std::string& group, int depth) {
    bool any = false, snn = true, steps = true;
    std::vector<std::string> found;
    for (const auto& name : r.children(group + "/nodes")) {
        const std::string ng = group + "/nodes/" + name;
        const std::string type = r.read_string(ng + "/type");
        if (type == "NIRGraph" && depth < 16) {
            const std::string w = guess_writer(r, ng, depth + 1);
            if (!w.empty()) found.push_back(w);
            continue;
        }
        const char* tau_name = type == "LIF" ? "tau" : type == "CubaLIF" ? "tau_mem" : nullptr;
        if (!tau_name || !r.is_dataset(ng + "/" + tau_name)) continue;
        any = true;
        const auto tau = r.read_doubles(ng + "/" + tau_name);
        const auto rr =
            r.is_dataset(ng + "/r") ? r.read_doubles(ng + "/r") : std::vector<double>{1};
        for (std::size_t k = 0; k < tau.size(); ++k) {
            const double rk = rr[std::min(k, rr.size() - 1)];
            snn = snn && rk != 1.0 && std::fabs(tau[k] - rk * 1e-4) <= 1e-5 * tau[k];
            steps = steps && tau[k] >= 1.0;
        }
    }
    if (any && snn) found.push_back("snntorch");
    if (any && steps) found.push_back("steps");
    return found.empty() ? "" : found.front();
}

struct GraphIO {
    std::vector<std::string> inputs, outputs;  // flattened names of the graph's Input/Output
};

// Adds the nodes and edges of the NIRGraph at `group` to g, names prefixed by `prefix`.
// Nested graphs are flattened: their Input/Output nodes become pass-through nodes.
GraphIO load_graph(const h5::Reader& r, const std::string& group, const std::string& prefix,
                   bool top, Graph& g, const LoadOptions& opts, int depth,
                   std::vector<std::string>& ignored) {
    if (depth > 16) r.fail(group, "subgraphs nested too deeply");
    const std::string nodes = group + "/nodes";
    if (!r.is_group(nodes)) r.fail(nodes, "missing group (not a NIR graph?)");
    GraphIO io;
    std::map<std::string, GraphIO> sub;
    for (const auto& name : r.children(nodes)) {
        const std::string ng = nodes + "/" + name;
        if (!r.is_group(ng)) r.fail(ng, "expected a node group");
        if (!r.is_dataset(ng + "/type")) r.fail(ng + "/type", "missing node type");
        std::string type = r.read_string(ng + "/type");
        if (type == "NIRGraph") {
            sub[name] = load_graph(r, ng, prefix + name + ".", false, g, opts, depth + 1, ignored);
            continue;
        }
        std::string full = prefix + name;
        std::string built_type = type;
        if (!top && (type == "Input" || type == "Output")) built_type = "ternion.Identity";
        const NodeSpec spec = h5_node_spec(r, ng, full, built_type, opts);
        auto node = default_factory().build(spec);
        for (auto& p : ignored_params(spec)) ignored.push_back(std::move(p));
        g.add_node(std::move(node));
        if (type == "Input") io.inputs.push_back(full);
        if (type == "Output") io.outputs.push_back(full);
    }
    const std::string eds = group + "/edges";
    if (r.is_dataset(eds)) {
        Shape dims;
        auto names = r.read_strings(eds, &dims);
        if (!(dims.size() == 2 && dims[1] == 2) && !(dims.size() == 1 && dims[0] == 0))
            r.fail(eds, "expected (E, 2) source/target names, got shape " + shape_str(dims));
        for (std::size_t k = 0; k + 1 < names.size(); k += 2) {
            auto resolve = [&](const std::string& n, bool as_src) -> std::vector<std::string> {
                auto it = sub.find(n);
                if (it != sub.end()) return as_src ? it->second.outputs : it->second.inputs;
                auto dot = n.find('.');
                if (dot != std::string::npos && sub.count(n.substr(0, dot))) return {prefix + n};
                return {prefix + n};
            };
            for (auto& s : resolve(names[k], true))
                for (auto& d : resolve(names[k + 1], false)) g.add_edge(s, d);
        }
    }
    return io;
}

}  // namespace

std::string ignored_note(const std::vector<std::string>& ignored) {
    std::string list;
    for (const auto& n : ignored) list += (list.empty() ? "" : ", ") + n;
    return "ignored parameters no node type reads (--ignore-unknown-params): " + list;
}

LoadOptions resolve_load_options(const UserLoadOptions& user, const ModelConventions& file,
                                 const std::string& origin, LoadReport& rep) {
    LoadOptions o;
    // The writer's conventions: --from, else the file's metadata/from, else NIR's.
    std::string dialect_name = "nir";
    rep.dialect_source = "default";
    if (user.from) {
        dialect_name = *user.from;
        rep.dialect_source = "option --from";
    } else if (file.from) {
        dialect_name = *file.from;
        rep.dialect_source = "file metadata";
        bool known = false;
        for (const auto& d : dialects()) known = known || d.name == *file.from;
        if (!known)
            throw InputError(origin, "metadata/from", "unknown framework '" + *file.from + "'");
    }
    const Dialect& dia = find_dialect(dialect_name);
    o = dia.conventions;  // dt, discretization and reset are chosen below
    o.allow_unstable = user.allow_unstable;
    o.ignore_unknown_params = user.ignore_unknown;
    if (dia.name != "nir")
        rep.notes.push_back("conventions of " + dia.name + " (" + rep.dialect_source +
                            "): " + dia.summary);
    if (user.dt) {
        o.dt = *user.dt;
        rep.dt_source = "option --dt";
        if (file.dt && std::fabs(*file.dt - *user.dt) > 1e-12)
            rep.notes.push_back("--dt " + std::to_string(*user.dt) + " overrides the file's dt " +
                                std::to_string(*file.dt));
    } else if (file.dt) {
        o.dt = *file.dt;
        rep.dt_source = "file metadata";
        rep.notes.push_back("using dt = " + std::to_string(*file.dt) +
                            " s from the file's metadata");
    } else if (dia.dt) {
        o.dt = *dia.dt;
        rep.dt_source = "--from " + dia.name;
    } else {
        o.dt = 1e-3;
        rep.dt_source = "default";
    }
    if (!(o.dt > 0) || !std::isfinite(o.dt))
        throw InputError(origin, "metadata/dt", "dt must be positive");
    auto pick = [&](const std::optional<std::string>& u, const std::optional<std::string>& m,
                    const char* key, const char* dflt, std::set<std::string> allowed,
                    std::string& source) {
        std::string v;
        if (u) {
            v = *u;
            source = std::string("option --") + key;
            if (!allowed.count(v)) throw OptionError(key, "unknown value '" + v + "'");
        } else if (m) {
            v = *m;
            source = "file metadata";
            if (!allowed.count(v))
                throw InputError(origin, std::string("metadata/") + key,
                                 "unknown value '" + v + "'");
            rep.notes.push_back(std::string("using ") + key + " = " + v +
                                " from the file's metadata");
        } else {
            v = dflt;
            source = dia.name == "nir" ? "default" : "--from " + dia.name;
        }
        return v;
    };
    o.discretization =
        pick(user.discretization, file.discretization, "discretization",
             dia.conventions.discretization.c_str(), {"euler", "exact"}, rep.discretization_source);
    o.reset = pick(user.reset, file.reset, "reset", dia.conventions.reset.c_str(),
                   {"zero", "subtract"}, rep.reset_source);
    o.weight_codebook = user.weight_codebook;
    rep.used = o;
    return o;
}

std::unique_ptr<Graph> load_model(const std::string& path, const UserLoadOptions& user,
                                  LoadReport& rep) {
    h5::Reader r(path);
    if (!r.is_group("/node")) r.fail("/node", "missing group: not a NIR graph file");
    if (r.is_dataset("/node/type")) {
        auto t = r.read_string("/node/type");
        if (t != "NIRGraph") r.fail("/node/type", "expected \"NIRGraph\", got \"" + t + "\"");
    }
    ModelConventions file;
    file.from = metadata_string(r, "/node", "from");
    file.dt = metadata_number(r, "/node", "dt");
    file.discretization = metadata_string(r, "/node", "discretization");
    file.reset = metadata_string(r, "/node", "reset");
    LoadOptions o = resolve_load_options(user, file, path, rep);
    auto g = std::make_unique<Graph>();
    g->set_origin(path);
    std::vector<std::string> ignored;
    load_graph(r, "/node", "", true, *g, o, 0, ignored);
    g->finalize();
    if (!ignored.empty()) rep.notes.push_back(ignored_note(ignored));
    if (o.dialect == "nir" && rep.dialect_source == "default") {
        const std::string w = guess_writer(r, "/node", 0);
        if (w == "snntorch")
            rep.notes.push_back(
                "the LIF parameters match snnTorch's exporter (r = tau/1e-4): --from snntorch "
                "reproduces snnTorch's own neurons (subtract reset at the next step)");
        else if (w == "steps")
            rep.notes.push_back(
                "every time constant is 1 or more, as when they count steps (Sinabs, "
                "SpikingJelly): --from sinabs or --from spikingjelly sets dt = 1");
    }
    bool has_time = false;
    for (int i = 0; i < g->size(); ++i) {
        const auto& t = g->node(i).type();
        if (t == "LIF" || t == "CubaLIF" || t == "Delay") has_time = true;
    }
    if (has_time && rep.dt_source == "default")
        rep.notes.push_back("no dt given and none in the file: using dt = 0.001 s (pass --dt)");
    return g;
}

}  // namespace ternion
