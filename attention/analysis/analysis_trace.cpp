#include "attention/analysis/analysis_trace.hpp"

#include <algorithm>
#include <cmath>

#include "sim/core/error.hpp"
#include "sim/io/trace_reader.hpp"

namespace ternion::analysis {

namespace {

// Recorded indices `name` ([n]) of an attention group, as a dataset or an attribute.
std::vector<std::int64_t> indices(const TraceReader& tr, const std::string& grp,
                                  const std::string& name, std::int64_t n) {
    std::vector<std::int64_t> v;
    const std::string ds = grp + "/" + name;
    if (tr.is_dataset(ds)) {
        v = tr.read_ints(ds);
    } else if (auto a = tr.attr_ints(grp, name)) {
        v = std::move(*a);
    } else {
        // Not recorded: positions stand for indices.
        v.resize(static_cast<std::size_t>(n));
        for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = i;
        return v;
    }
    if (static_cast<std::int64_t>(v.size()) != n)
        tr.fail(ds, "has " + std::to_string(v.size()) + " entries but the maps record " +
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
    return TraceReader(file, TraceReader::Check::none).attention_nodes();
}

namespace {

// The attention group of `node`, refusing files without one naming what there is.
std::string maps_group(const TraceReader& tr, const std::string& node) {
    if (!tr.is_group("/nodes") && !tr.is_group("/ternion/attention"))
        tr.fail("/nodes", "not a ternion trace (no /nodes group)");
    if (!tr.is_group("/nodes/" + node) && !tr.is_group("/ternion/attention/" + node)) {
        std::string have;
        for (auto& n : tr.attention_nodes()) {
            if (!have.empty()) have += ", ";
            have += n;
        }
        tr.fail("/nodes/" + node, "no such node in the trace (nodes with attention: " +
                                      (have.empty() ? std::string("none") : have) + ")");
    }
    const auto grp = tr.attention_group(node);
    if (!tr.is_group(grp))
        tr.fail(grp,
                "no attention maps recorded for this node (record them with `ternion run "
                "--trace FILE --record attention`)");
    return grp;
}

// The [samples, steps, heads, rows, cols] maps of a.group/a.map into `a`.
void read_maps(const TraceReader& tr, RecordedAttention& a) {
    const auto ds = a.group + "/" + a.map;
    if (!tr.is_dataset(ds)) tr.fail(ds, "not recorded in this trace");
    h5::DatasetInfo inf = tr.info(ds);
    if (inf.dims.size() != 5)
        tr.fail(ds, "expected [samples, steps, heads, rows, cols], got " + shape_str(inf.dims));
    for (auto d : inf.dims)
        if (d <= 0) tr.fail(ds, "empty dimension in " + shape_str(inf.dims));
    if (declared_numel(inf.dims) > kMaxElements) tr.fail(ds, "too large");
    a.samples = inf.dims[0];
    a.steps = inf.dims[1];
    a.heads = inf.dims[2];
    a.rows = inf.dims[3];
    a.cols = inf.dims[4];
    a.data = tr.read_floats(ds);
    for (auto& v : a.data)
        if (!std::isfinite(v)) {
            v = 0.f;  // -inf logits mark keys a causal mask hides: they carry no attention
            ++a.nonfinite;
        }
}

// The present [samples, steps] mask (all present if not recorded).
void read_present(const TraceReader& tr, RecordedAttention& a) {
    const auto ds = a.group + "/present";
    a.present.assign(static_cast<std::size_t>(a.samples * a.steps), 1);
    if (!tr.is_dataset(ds)) return;
    auto p = tr.read_ints(ds);
    if (static_cast<std::int64_t>(p.size()) != a.samples * a.steps)
        tr.fail(ds, "expected [samples, steps] = [" + std::to_string(a.samples) + ", " +
                        std::to_string(a.steps) + "]");
    for (std::size_t i = 0; i < p.size(); ++i) a.present[i] = p[i] != 0;
}

}  // namespace

RecordedAttention read_attention(const std::string& file, const std::string& node,
                                 const std::string& map) {
    const TraceReader tr(file, TraceReader::Check::none);
    RecordedAttention a;
    a.file = file;
    a.node = node;
    a.group = maps_group(tr, node);
    if (map.empty()) {
        a.map = tr.is_dataset(a.group + "/weights") ? "weights" : "scores";
    } else if (map == "weights" || map == "scores") {
        a.map = map;
    } else {
        throw OptionError("map", "expected 'weights' or 'scores', got '" + map + "'");
    }
    read_maps(tr, a);
    read_present(tr, a);
    a.sample_ids = indices(tr, a.group, "samples", a.samples);
    a.step_ids = indices(tr, a.group, "steps", a.steps);
    for (const char* key : {"value_dim", "head_dim"})
        if (auto v = tr.attr_double(a.group, key); v && *v >= 1) {
            a.value_dim = static_cast<std::int64_t>(*v);
            break;
        }
    return a;
}

}  // namespace ternion::analysis
