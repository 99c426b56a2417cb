#include "attention/analysis_trace.hpp"

#include <hdf5.h>

#include <algorithm>
#include <cmath>

#include "sim/error.hpp"
#include "sim/h5io.hpp"

namespace ternion::analysis {

namespace {

// NIR-style location first, then the /ternion/attention/<node> one of docs/traces.md.
std::string att_group(const h5::Reader& r, const std::string& node) {
    const std::string nir = "/nodes/" + node + "/observables/attention";
    if (r.is_group(nir)) return nir;
    const std::string tern = "/ternion/attention/" + node;
    if (r.is_group(tern)) return tern;
    return nir;
}

// Integer list stored as an attribute of `obj` (the Reader only reads scalar attributes).
bool read_int_attr(const std::string& file, const std::string& obj, const std::string& name,
                   std::vector<std::int64_t>& out) {
    h5::quiet_errors();
    h5::Handle f(H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
    if (!f) return false;
    if (H5Aexists_by_name(f.id(), obj.c_str(), name.c_str(), H5P_DEFAULT) <= 0) return false;
    h5::Handle a(H5Aopen_by_name(f.id(), obj.c_str(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT),
                 H5Aclose);
    if (!a) return false;
    h5::Handle space(H5Aget_space(a.id()), H5Sclose);
    hssize_t n = H5Sget_simple_extent_npoints(space.id());
    if (n < 0 || n > (1 << 24)) throw InputError(file, obj + "@" + name, "unreadable attribute");
    out.assign(static_cast<std::size_t>(n), 0);
    if (n > 0 && H5Aread(a.id(), H5T_NATIVE_INT64, out.data()) < 0)
        throw InputError(file, obj + "@" + name, "expected integer values");
    return true;
}

std::vector<std::int64_t> indices(const h5::Reader& r, const std::string& grp,
                                  const std::string& name, std::int64_t n) {
    std::vector<std::int64_t> v;
    const std::string ds = grp + "/" + name;
    if (r.is_dataset(ds)) {
        v = r.read_ints(ds);
    } else if (!read_int_attr(r.path(), grp, name, v)) {
        // Not recorded: positions stand for indices.
        v.resize(static_cast<std::size_t>(n));
        for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = i;
        return v;
    }
    if (static_cast<std::int64_t>(v.size()) != n)
        r.fail(ds, "has " + std::to_string(v.size()) + " entries but the maps record " +
                       std::to_string(n));
    return v;
}

std::int64_t find_pos(const std::vector<std::int64_t>& ids, std::int64_t id,
                      const std::string& option, const char* what) {
    auto it = std::find(ids.begin(), ids.end(), id);
    if (it == ids.end()) {
        std::string list;
        for (std::size_t i = 0; i < ids.size() && i < 16; ++i) {
            if (i) list += ',';
            list += std::to_string(ids[i]);
        }
        if (ids.size() > 16) list += ",...";
        throw OptionError(option, std::string(what) + " " + std::to_string(id) +
                                      " was not recorded (recorded: " + list + ")");
    }
    return it - ids.begin();
}

}  // namespace

std::int64_t RecordedAttention::sample_pos(std::int64_t id, const std::string& option) const {
    return find_pos(sample_ids, id, option, "sample");
}
std::int64_t RecordedAttention::step_pos(std::int64_t id, const std::string& option) const {
    return find_pos(step_ids, id, option, "step");
}

std::vector<std::string> attention_nodes(const std::string& file) {
    h5::Reader r(file);
    std::vector<std::string> out;
    for (const char* root : {"/nodes", "/ternion/attention"}) {
        if (!r.is_group(root)) continue;
        for (auto& n : r.children(root)) {
            const auto g = att_group(r, n);
            if ((r.exists(g + "/weights") || r.exists(g + "/scores")) &&
                std::find(out.begin(), out.end(), n) == out.end())
                out.push_back(n);
        }
    }
    std::sort(out.begin(), out.end());
    return out;
}

RecordedAttention read_attention(const std::string& file, const std::string& node,
                                 const std::string& map) {
    h5::Reader r(file);
    if (!r.is_group("/nodes") && !r.is_group("/ternion/attention"))
        r.fail("/nodes", "not a ternion trace (no /nodes group)");
    if (!r.is_group("/nodes/" + node) && !r.is_group("/ternion/attention/" + node)) {
        std::string have;
        for (auto& n : attention_nodes(file)) {
            if (!have.empty()) have += ", ";
            have += n;
        }
        r.fail("/nodes/" + node, "no such node in the trace (nodes with attention: " +
                                     (have.empty() ? std::string("none") : have) + ")");
    }
    const auto grp = att_group(r, node);
    if (!r.is_group(grp))
        r.fail(grp,
               "no attention maps recorded for this node (record them with `ternion run "
               "--trace FILE --record attention`)");
    RecordedAttention a;
    a.file = file;
    a.node = node;
    if (map.empty()) {
        a.map = r.is_dataset(grp + "/weights") ? "weights" : "scores";
    } else if (map == "weights" || map == "scores") {
        a.map = map;
    } else {
        throw OptionError("map", "expected 'weights' or 'scores', got '" + map + "'");
    }
    const auto ds = grp + "/" + a.map;
    if (!r.is_dataset(ds)) r.fail(ds, "not recorded in this trace");
    h5::DatasetInfo inf = r.info(ds);
    if (inf.dims.size() != 5)
        r.fail(ds, "expected [samples, steps, heads, rows, cols], got " + shape_str(inf.dims));
    for (auto d : inf.dims)
        if (d <= 0) r.fail(ds, "empty dimension in " + shape_str(inf.dims));
    if (declared_numel(inf.dims) > kMaxElements) r.fail(ds, "too large");
    a.samples = inf.dims[0];
    a.steps = inf.dims[1];
    a.heads = inf.dims[2];
    a.rows = inf.dims[3];
    a.cols = inf.dims[4];
    a.group = grp;
    a.data = r.read_floats(ds);
    for (auto& v : a.data)
        if (!std::isfinite(v)) {
            v = 0.f;  // -inf logits mark keys a causal mask hides: they carry no attention
            ++a.nonfinite;
        }
    a.present.assign(static_cast<std::size_t>(a.samples * a.steps), 1);
    if (r.is_dataset(grp + "/present")) {
        auto p = r.read_ints(grp + "/present");
        if (static_cast<std::int64_t>(p.size()) != a.samples * a.steps)
            r.fail(grp + "/present", "expected [samples, steps] = [" + std::to_string(a.samples) +
                                         ", " + std::to_string(a.steps) + "]");
        for (std::size_t i = 0; i < p.size(); ++i) a.present[i] = p[i] != 0;
    }
    a.sample_ids = indices(r, grp, "samples", a.samples);
    a.step_ids = indices(r, grp, "steps", a.steps);
    for (const char* key : {"value_dim", "head_dim"})
        if (auto v = r.attr_double(grp, key); v && *v >= 1) {
            a.value_dim = static_cast<std::int64_t>(*v);
            break;
        }
    return a;
}

}  // namespace ternion::analysis
