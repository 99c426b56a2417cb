// Loading and validating chip descriptions (hw/chips/*.json). Strict, as profiles are: a typo
// in a key or a limit without a source stops the run rather than mapping against a default.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "hw/chip/chip.hpp"
#include "sim/core/data_path.hpp"
#include "sim/core/error.hpp"

namespace ternion::chip {

using nlohmann::json;

namespace {

// One JSON object of a chip file: unknown keys refused, errors named by dotted key path.
class Obj {
  public:
    Obj(const json& j, std::string file, std::string path)
        : j_(j), file_(std::move(file)), path_(std::move(path)) {
        if (!j_.is_object()) fail("", "expected an object");
    }
    [[noreturn]] void fail(const std::string& key, const std::string& what) const {
        throw InputError(file_, path_.empty() ? key : (key.empty() ? path_ : path_ + "." + key),
                         what);
    }
    void allow(std::initializer_list<const char*> keys) const {
        for (auto it = j_.begin(); it != j_.end(); ++it)
            if (std::none_of(keys.begin(), keys.end(),
                             [&](const char* k) { return it.key() == k; }))
                fail(it.key(), "unknown key");
    }
    const json& at(const std::string& key) const {
        if (!j_.contains(key)) fail(key, "missing");
        return j_.at(key);
    }
    Obj child(const std::string& key) const {
        return Obj(at(key), file_, path_.empty() ? key : path_ + "." + key);
    }
    std::string str(const std::string& key) const {
        const json& v = at(key);
        if (!v.is_string() || v.get<std::string>().empty())
            fail(key, "expected a non-empty string");
        return v.get<std::string>();
    }
    std::int64_t count(const std::string& key, std::int64_t lo = 1) const {
        const json& v = at(key);
        if (!v.is_number_integer() || v.get<std::int64_t>() < lo)
            fail(key, "expected an integer >= " + std::to_string(lo));
        return v.get<std::int64_t>();
    }
    double number(const std::string& key) const {
        const json& v = at(key);
        if (!v.is_number() || v.get<double>() < 0) fail(key, "expected a number >= 0");
        return v.get<double>();
    }
    std::vector<std::int64_t> counts(const std::string& key, std::int64_t lo = 0) const {
        const json& v = at(key);
        if (!v.is_array() || v.empty()) fail(key, "expected a non-empty list of integers");
        std::vector<std::int64_t> r;
        for (const auto& e : v) {
            if (!e.is_number_integer() || e.get<std::int64_t>() < lo)
                fail(key, "expected integers >= " + std::to_string(lo));
            r.push_back(e.get<std::int64_t>());
        }
        return r;
    }

    bool has(const std::string& key) const { return j_.contains(key); }
    bool boolean(const std::string& key) const {
        const json& v = at(key);
        if (!v.is_boolean()) fail(key, "expected true or false");
        return v.get<bool>();
    }
    // The keys this section marks as assumed ("assumed": [...]), each one of its own keys.
    void assumed(std::vector<std::string>& out) const {
        if (!has("assumed")) return;
        const json& v = at("assumed");
        if (!v.is_array()) fail("assumed", "expected a list of this section's keys");
        for (const auto& e : v) {
            if (!e.is_string() || e.get<std::string>() == "assumed" || e == "source" ||
                !has(e.get<std::string>()))
                fail("assumed", "expected a list of this section's keys");
            out.push_back(path_ + "." + e.get<std::string>());
        }
    }
    const std::string& path() const { return path_; }

  private:
    const json& j_;
    std::string file_, path_;
};

void read_cores(const Obj& o, Chip& c) {
    o.allow({"kernel_memory", "neuron_memory", "bias_memory", "source"});
    const auto k = o.counts("kernel_memory"), n = o.counts("neuron_memory"),
               b = o.counts("bias_memory");
    if (n.size() != k.size() || b.size() != k.size())
        o.fail("", "kernel_memory, neuron_memory and bias_memory must list the same cores");
    for (std::size_t i = 0; i < k.size(); ++i) c.cores.push_back({k[i], n[i], b[i]});
    c.cores_source = o.str("source");
}

void read_limits(const Obj& o, Chip& c) {
    o.allow({"max_kernel", "max_out_channels", "max_input", "strides", "max_padding", "pools",
             "weight_bits", "state_bits", "source"});
    Limits& l = c.limits;
    l.max_kernel = o.count("max_kernel");
    l.max_out_channels = o.count("max_out_channels");
    const auto in = o.counts("max_input", 1);
    if (in.size() != 2) o.fail("max_input", "expected [height, width]");
    l.max_input_h = in[0], l.max_input_w = in[1];
    l.strides = o.counts("strides", 1);
    l.pools = o.counts("pools", 1);
    l.max_padding = o.count("max_padding", 0);
    l.weight_bits = static_cast<int>(o.count("weight_bits"));
    l.state_bits = static_cast<int>(o.count("state_bits"));
    c.limits_source = o.str("source");
}

void read_dynapcnn(const Obj& top, Chip& c) {
    top.allow({"name", "description", "family", "technology", "cores", "limits", "memory_rule",
               "assignment"});
    read_cores(top.child("cores"), c);
    read_limits(top.child("limits"), c);
    Obj mem = top.child("memory_rule");
    mem.allow({"kernel", "neuron", "bias", "source"});
    c.memory_source = mem.str("source");
    Obj as = top.child("assignment");
    as.allow({"rule", "source"});
    c.assignment_source = as.str("source");
}

// Xylo's sections: the core's neurons and synapses, the events a step carries, the datapath's
// widths, the design rules that only warn, and the cycle model's constants.
void read_xylo_core(const Obj& top, XyloSpec& x) {
    Obj n = top.child("neurons");
    n.allow({"input_channels", "hidden", "output", "synaptic_states", "max_fanout", "avg_fanout",
             "input_projection", "output_projection", "source"});
    x.input_channels = n.count("input_channels");
    x.hidden = n.count("hidden");
    x.output = n.count("output");
    x.synaptic_states = n.count("synaptic_states");
    x.max_fanout = n.count("max_fanout");
    x.avg_fanout = n.count("avg_fanout");
    x.input_projection = n.count("input_projection");
    x.output_projection = n.count("output_projection");
    if (x.input_projection > x.hidden || x.output_projection > x.hidden)
        n.fail("", "a projection cannot reach more neurons than the hidden ones");
    x.neurons_source = n.str("source");
    Obj e = top.child("events");
    e.allow({"max_input_events", "max_hidden_spikes", "max_output_spikes", "reset", "source"});
    x.max_input_events = e.count("max_input_events");
    x.max_hidden_spikes = e.count("max_hidden_spikes");
    x.max_output_spikes = e.count("max_output_spikes");
    if (e.str("reset") != "subtract") e.fail("reset", "Xylo resets by subtraction");
    x.events_source = e.str("source");
    Obj d = top.child("datapath");
    d.allow({"weight_bits", "state_bits", "decay_bits", "weight_shift", "source"});
    x.weight_bits = static_cast<int>(d.count("weight_bits"));
    x.state_bits = static_cast<int>(d.count("state_bits"));
    x.decay_bits = static_cast<int>(d.count("decay_bits"));
    d.str("weight_shift");
    x.datapath_source = d.str("source");
}

void read_xylo(const Obj& top, Chip& c) {
    top.allow({"name", "description", "family", "technology", "neurons", "events", "datapath",
               "design_rules", "cycles"});
    XyloSpec& x = c.xylo;
    read_xylo_core(top, x);
    Obj r = top.child("design_rules");
    r.allow({"warn_input_channels", "warn_output_channels", "errors", "source"});
    x.warn_input_channels = r.count("warn_input_channels");
    x.warn_output_channels = r.count("warn_output_channels");
    r.str("errors");
    x.rules_source = r.str("source");
    Obj m = top.child("cycles");
    m.allow({"input_loop", "hidden_update", "output_isyn_update", "fixed_hidden",
             "fixed_output_spike", "margin", "expansion_neurons", "source"});
    x.input_loop = m.number("input_loop");
    x.hidden_update = m.number("hidden_update");
    x.output_isyn_update = m.number("output_isyn_update");
    x.fixed_hidden = m.number("fixed_hidden");
    x.fixed_output_spike = m.number("fixed_output_spike");
    x.margin = m.number("margin");
    const std::string ex = m.str("expansion_neurons");
    if (ex != "all_hidden" && ex != "nonzero_weights")
        m.fail("expansion_neurons", "expected \"all_hidden\" or \"nonzero_weights\"");
    x.expansion_nonzero = ex == "nonzero_weights";
    x.cycles_source = m.str("source");
}

// Mesh chips: the grid, one core's capacities, per-event energies, the network-on-chip, timing,
// SRAM energy by size and static power, each section with its source and its assumed keys.
void read_mesh_grid(const Obj& top, MeshSpec& m) {
    Obj g = top.child("mesh");
    g.allow({"width", "height", "cores_per_tile", "routing", "multicast", "source", "assumed"});
    m.width = g.count("width"), m.height = g.count("height");
    m.cores_per_tile = g.count("cores_per_tile");
    if (g.str("routing") != "xy") g.fail("routing", "the mesh family routes XY (\"xy\")");
    m.multicast = g.str("multicast");
    if (m.multicast != "per_core")
        g.fail("multicast", "expected \"per_core\" (one packet per destination core)");
    Obj c = top.child("core");
    c.allow({"neurons", "synapse_memory_bytes", "synapse_bits", "state_memory_bytes", "state_bits",
             "states_per_neuron", "max_fanin", "max_fanout", "weight_bits", "weight_sharing",
             "source", "assumed"});
    m.neurons = c.count("neurons");
    m.synapse_memory_bytes = c.count("synapse_memory_bytes");
    m.synapse_bits = c.count("synapse_bits");
    m.state_memory_bytes = c.count("state_memory_bytes");
    m.state_bits = c.count("state_bits");
    m.states_per_neuron = c.count("states_per_neuron");
    m.max_fanin = c.count("max_fanin"), m.max_fanout = c.count("max_fanout");
    m.weight_bits = c.count("weight_bits");
    m.weight_sharing = c.boolean("weight_sharing");
    for (const Obj* o : {&g, &c}) m.sources[o->path()] = o->str("source"), o->assumed(m.assumed);
}

void read_mesh_costs(const Obj& top, MeshSpec& m) {
    Obj e = top.child("energy");
    e.allow({"synaptic_op_pj", "neuron_update_pj", "neuron_active_pj", "source", "assumed"});
    m.synaptic_op_pj = e.number("synaptic_op_pj");
    m.neuron_update_pj = e.number("neuron_update_pj");
    m.neuron_active_pj = e.number("neuron_active_pj");
    Obj n = top.child("noc");
    n.allow({"spike_pj", "hop_pj_east_west", "hop_pj_north_south", "spike_ns", "hop_ns_east_west",
             "hop_ns_north_south", "source", "assumed"});
    m.spike_pj = n.number("spike_pj"), m.spike_ns = n.number("spike_ns");
    m.hop_pj_ew = n.number("hop_pj_east_west"), m.hop_pj_ns = n.number("hop_pj_north_south");
    m.hop_ns_ew = n.number("hop_ns_east_west"), m.hop_ns_ns = n.number("hop_ns_north_south");
    Obj t = top.child("timing");
    t.allow({"synaptic_op_ns", "neuron_update_ns", "neuron_active_ns", "barrier_ns_one_tile",
             "barrier_ns_all_tiles", "clock_hz", "source", "assumed"});
    m.synaptic_op_ns = t.number("synaptic_op_ns");
    m.neuron_update_ns = t.number("neuron_update_ns");
    m.neuron_active_ns = t.number("neuron_active_ns");
    m.barrier_ns_one = t.number("barrier_ns_one_tile");
    m.barrier_ns_all = t.number("barrier_ns_all_tiles");
    m.clock_hz = t.number("clock_hz");
    for (const Obj* o : {&e, &n, &t})
        m.sources[o->path()] = o->str("source"), o->assumed(m.assumed);
}

void read_mesh_memory(const Obj& top, MeshSpec& m) {
    Obj r = top.child("memory");
    r.allow({"access_bits", "sram_pj", "included_in_ops", "source", "assumed"});
    m.access_bits = r.count("access_bits");
    const json& t = r.at("sram_pj");
    if (!t.is_array() || t.empty()) r.fail("sram_pj", "expected [[bytes, pJ per access], ...]");
    for (const auto& row : t) {
        if (!row.is_array() || row.size() != 2 || !row[0].is_number() || !row[1].is_number() ||
            row[0].get<double>() <= 0 || row[1].get<double>() < 0 ||
            (!m.sram_pj.empty() && row[0].get<double>() <= m.sram_pj.back()[0]))
            r.fail("sram_pj", "expected [[bytes, pJ per access], ...] with sizes ascending");
        m.sram_pj.push_back({row[0].get<double>(), row[1].get<double>()});
    }
    m.memory_in_ops = r.boolean("included_in_ops");
    Obj st = top.child("static");
    st.allow({"power_per_core_w", "source", "assumed"});
    m.static_w_per_core = st.number("power_per_core_w");
    for (const Obj* o : {&r, &st}) m.sources[o->path()] = o->str("source"), o->assumed(m.assumed);
}

// The ANN equivalent's figures: a multiply-accumulate and an output value's activation, each
// an energy and a time, and the activations' width.
void read_mesh_ann(const Obj& top, MeshSpec& m) {
    Obj a = top.child("ann");
    a.allow({"mac_pj", "mac_ns", "activation_pj", "activation_ns", "activation_bits", "source",
             "assumed"});
    m.ann_mac_pj = a.number("mac_pj"), m.ann_mac_ns = a.number("mac_ns");
    m.ann_activation_pj = a.number("activation_pj");
    m.ann_activation_ns = a.number("activation_ns");
    m.ann_activation_bits = a.count("activation_bits");
    m.sources[a.path()] = a.str("source"), a.assumed(m.assumed);
}

// Attention's internal adds, shifts and compares (optional: without the section each is priced
// as a synaptic op, the chip's cheapest accumulate).
void read_mesh_attention(const Obj& top, MeshSpec& m) {
    m.add_pj = m.shift_pj = m.cmp_pj = m.synaptic_op_pj;
    m.add_ns = m.shift_ns = m.cmp_ns = m.synaptic_op_ns;
    if (!top.has("attention")) return;
    Obj a = top.child("attention");
    a.allow({"add_pj", "shift_pj", "compare_pj", "add_ns", "shift_ns", "compare_ns", "source",
             "assumed"});
    m.add_pj = a.number("add_pj"), m.shift_pj = a.number("shift_pj");
    m.cmp_pj = a.number("compare_pj"), m.add_ns = a.number("add_ns");
    m.shift_ns = a.number("shift_ns"), m.cmp_ns = a.number("compare_ns");
    m.sources[a.path()] = a.str("source"), a.assumed(m.assumed);
}

// Off-chip DRAM (optional): energy per access of access_bits, with its source. Without the
// section a model whose weights outgrow the cores' SRAM is refused.
void read_mesh_dram(const Obj& top, MeshSpec& m) {
    if (!top.has("dram")) return;
    Obj d = top.child("dram");
    d.allow({"pj_per_access", "access_bits", "source", "assumed"});
    m.dram = true;
    m.dram_pj = d.number("pj_per_access");
    m.dram_access_bits = d.count("access_bits");
    m.sources[d.path()] = d.str("source"), d.assumed(m.assumed);
}

void read_mesh(const Obj& top, Chip& c) {
    top.allow({"name", "description", "family", "technology", "mesh", "core", "energy", "noc",
               "timing", "memory", "static", "ann", "attention", "dram"});
    read_mesh_grid(top, c.mesh);
    read_mesh_costs(top, c.mesh);
    read_mesh_memory(top, c.mesh);
    read_mesh_ann(top, c.mesh);
    read_mesh_attention(top, c.mesh);
    read_mesh_dram(top, c.mesh);
}

}  // namespace

Chip parse_chip(const json& doc, const std::string& file) {
    Obj top(doc, file, "");
    Chip c;
    c.path = file;
    c.family = top.str("family");
    if (c.family == "dynapcnn")
        read_dynapcnn(top, c);
    else if (c.family == "xylo")
        read_xylo(top, c);
    else if (c.family == "mesh")
        read_mesh(top, c);
    else
        top.fail("family", "unknown chip family '" + c.family + "' (known: dynapcnn, xylo, mesh)");
    c.name = top.str("name");
    c.description = top.str("description");
    c.technology = top.str("technology");
    return c;
}

std::vector<std::string> chip_search_dirs() {
    return data_search_dirs("TERNION_CHIP_DIR", "chips", TERNION_CHIP_DIR);
}

namespace {

Chip load_file(const std::string& path) {
    // A directory opens as a stream and fails on the first read: refuse it by name.
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
        throw InputError(path, "", "is a directory, not a chip file");
    std::ifstream in(path);
    if (!in) throw InputError(path, "", "cannot open the chip file");
    json doc;
    try {
        doc = json::parse(in);
    } catch (const json::exception& e) {
        throw InputError(path, "", std::string("not valid JSON (") + e.what() + ")");
    } catch (const std::ios_base::failure& e) {
        throw InputError(path, "", std::string("cannot read the chip file: ") + e.what());
    }
    return parse_chip(doc, path);
}

std::vector<std::string> chip_names() {
    std::vector<std::string> names;
    std::error_code ec;
    const std::string dir = find_data_dir(chip_search_dirs());
    if (dir.empty()) return names;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec))
        if (e.is_regular_file() && e.path().extension() == ".json")
            names.push_back(e.path().stem().string());
    std::sort(names.begin(), names.end());
    return names;
}

}  // namespace

Chip load_chip(const std::string& s) {
    const bool is_path = s.find('/') != std::string::npos ||
                         (s.size() >= 5 && s.compare(s.size() - 5, 5, ".json") == 0);
    if (is_path) return load_file(s);
    const std::string dir = find_data_dir(chip_search_dirs());
    const std::string path = dir + "/" + s + ".json";
    std::error_code ec;
    if (dir.empty() || !std::filesystem::exists(path, ec)) {
        std::string list;
        for (const auto& n : chip_names()) {
            if (!list.empty()) list += ", ";
            list += n;
        }
        throw OptionError(
            "chip", "unknown chip '" + s + "' (available: " +
                        (list.empty() ? "none; searched " + join_dirs(chip_search_dirs()) : list) +
                        "; or give a path to a .json file)");
    }
    return load_file(path);
}

std::vector<std::pair<std::string, std::string>> list_chips() {
    std::vector<std::pair<std::string, std::string>> r;
    for (const auto& n : chip_names()) r.emplace_back(n, load_chip(n).description);
    return r;
}

}  // namespace ternion::chip
