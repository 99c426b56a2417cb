#include "sim/io/trace_reader.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <string_view>

namespace ternion {

namespace {

constexpr std::array<std::pair<std::string_view, ObservableKind>, 4> kTypes{{
    {"TimeGriddedData", ObservableKind::time_gridded},
    {"EventData", ObservableKind::event},
    {"ValuedEventData", ObservableKind::valued_event},
    {"attention", ObservableKind::attention},
}};

}  // namespace

TraceReader::TraceReader(const std::string& file, Check check) : h5::Reader(file) {
    if (check == Check::none) return;
    auto type = attr_string("/", "__type__");
    if (!type || *type != "NIRGraphData")
        fail("/@__type__", "not a trace: the root attribute __type__ is not NIRGraphData");
    if (!is_group("/nodes")) fail("/nodes", "missing group");
}

std::vector<std::string> TraceReader::nodes() const {
    return children_if("/nodes").value_or(std::vector<std::string>{});
}

std::vector<Observable> TraceReader::observables(const std::string& node) const {
    const std::string base = "/nodes/" + node + "/observables";
    if (!is_group(base)) fail(base, "missing group");
    std::vector<Observable> out;
    for (const auto& name : children(base)) {
        Observable o{name, base + "/" + name, "", ObservableKind::time_gridded};
        auto t = attr_string(o.group, "__type__");
        // Attention maps sit here without a NIR type (docs/traces.md).
        if (!t && name == "attention") t = "attention";
        if (!t) fail(o.group + "@__type__", "missing attribute");
        o.type = *t;
        const auto k = std::find_if(kTypes.begin(), kTypes.end(),
                                    [&](const auto& e) { return o.type == e.first; });
        if (k == kTypes.end())
            fail(o.group + "@__type__", "unknown observable type '" + o.type + "'");
        o.kind = k->second;
        out.push_back(std::move(o));
    }
    return out;
}

std::string TraceReader::need_string(const std::string& obj, const std::string& name) const {
    auto v = attr_string(obj, name);
    if (!v) fail(obj + "@" + name, "missing attribute");
    return *v;
}

double TraceReader::need_double(const std::string& obj, const std::string& name) const {
    auto v = attr_double(obj, name);
    if (!v) fail(obj + "@" + name, "missing numeric attribute");
    return *v;
}

std::vector<std::pair<std::string, std::string>> TraceReader::attrs_text(
    const std::string& obj) const {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& name : attr_names(obj)) {
        if (auto s = attr_string(obj, name)) {
            out.emplace_back(name, *s);
        } else if (auto d = attr_double(obj, name)) {
            char b[64];
            std::snprintf(b, sizeof b, "%.17g", *d);
            out.emplace_back(name, b);
        }
    }
    return out;
}

h5::DatasetInfo TraceReader::need_dataset(const std::string& ds, std::size_t rank) const {
    if (!is_dataset(ds)) fail(ds, "missing dataset");
    h5::DatasetInfo di = info(ds);
    if (di.dims.size() != rank)
        fail(ds, "expected " + std::to_string(rank) + " dimensions, found " +
                     std::to_string(di.dims.size()));
    return di;
}

std::vector<std::string> TraceReader::kinds() const {
    if (!is_dataset("/ternion/kinds")) return {};
    return read_strings("/ternion/kinds");
}

std::optional<std::vector<std::string>> TraceReader::ternion_nodes(const std::string& group) const {
    return children_if("/ternion/" + group);
}

std::vector<std::pair<std::string, std::string>> TraceReader::metadata() const {
    if (!is_group("/ternion/metadata")) return {};
    return attrs_text("/ternion/metadata");
}

std::optional<std::int64_t> TraceReader::samples() const {
    if (!is_dataset("/ternion/samples")) return std::nullopt;
    const auto di = info("/ternion/samples");
    if (di.dims.empty()) fail("/ternion/samples", "expected 1 dimension, found 0");
    return di.dims[0];
}

std::string TraceReader::attention_group(const std::string& node) const {
    const std::string nir = "/nodes/" + node + "/observables/attention";
    if (is_group(nir)) return nir;
    const std::string tern = "/ternion/attention/" + node;
    if (is_group(tern)) return tern;
    return nir;
}

std::vector<std::string> TraceReader::attention_nodes() const {
    std::vector<std::string> out;
    for (const char* root : {"/nodes", "/ternion/attention"}) {
        for (const auto& n : children_if(root).value_or(std::vector<std::string>{})) {
            const auto g = attention_group(n);
            if ((exists(g + "/weights") || exists(g + "/scores")) &&
                std::find(out.begin(), out.end(), n) == out.end())
                out.push_back(n);
        }
    }
    std::sort(out.begin(), out.end());
    return out;
}

std::optional<std::vector<std::string>> TraceReader::children_if(const std::string& group) const {
    if (!is_group(group)) return std::nullopt;
    return children(group);
}

}  // namespace ternion
