// `ternion trace info FILE [--json]`: what a trace file holds (nodes, observables, sizes,
// spike/op/energy totals, attention maps, run metadata), checking the layout on the way so a
// damaged or foreign file fails with one line naming the file and the field.
#include <hdf5.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "sim/h5io.hpp"
#include "tools/cli_common.hpp"
#include "tools/commands.hpp"

namespace ternion::cli {

namespace {

// A string attribute, read with the file's own character set (h5::Reader::attr_string reads
// UTF-8 variable-length attributes as ASCII, which HDF5 1.10 refuses to convert).
std::optional<std::string> attr_text(hid_t file, const std::string& obj, const std::string& name) {
    if (H5Lexists(file, obj.c_str(), H5P_DEFAULT) <= 0 && obj != "/") return std::nullopt;
    if (H5Aexists_by_name(file, obj.c_str(), name.c_str(), H5P_DEFAULT) <= 0) return std::nullopt;
    h5::Handle a(H5Aopen_by_name(file, obj.c_str(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT),
                 H5Aclose);
    h5::Handle ftype(H5Aget_type(a.id()), H5Tclose);
    if (H5Tget_class(ftype.id()) != H5T_STRING) return std::nullopt;
    h5::Handle mtype(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_cset(mtype.id(), H5Tget_cset(ftype.id()));
    if (H5Tis_variable_str(ftype.id()) > 0) {
        H5Tset_size(mtype.id(), H5T_VARIABLE);
        char* s = nullptr;
        if (H5Aread(a.id(), mtype.id(), &s) < 0) return std::nullopt;
        std::string r = s ? s : "";
        H5free_memory(s);
        return r;
    }
    const std::size_t n = H5Tget_size(ftype.id());
    H5Tset_size(mtype.id(), n + 1);
    std::string r(n + 1, '\0');
    if (H5Aread(a.id(), mtype.id(), r.data()) < 0) return std::nullopt;
    r.resize(std::strlen(r.c_str()));
    return r;
}

// Attributes of one object as strings (numbers printed), via the C API: h5::Reader reads
// named attributes only.
std::vector<std::pair<std::string, std::string>> all_attrs(const std::string& file,
                                                           const std::string& obj) {
    std::vector<std::pair<std::string, std::string>> r;
    h5::Handle f(H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
    if (!f) return r;
    h5::Handle o(H5Oopen(f.id(), obj.c_str(), H5P_DEFAULT), H5Oclose);
    if (!o) return r;
    // H5Aiterate2 exists in HDF5 1.10 (Debian 12) and later alike.
    std::vector<std::string> names;
    hsize_t at = 0;
    H5Aiterate2(
        o.id(), H5_INDEX_NAME, H5_ITER_INC, &at,
        [](hid_t, const char* name, const H5A_info_t*, void* data) -> herr_t {
            static_cast<std::vector<std::string>*>(data)->emplace_back(name);
            return 0;
        },
        &names);
    h5::Reader rd(file);
    for (const auto& name : names) {
        if (auto s = attr_text(f.id(), obj, name))
            r.emplace_back(name, *s);
        else if (auto d = rd.attr_double(obj, name)) {
            char b[64];
            std::snprintf(b, sizeof b, "%.17g", *d);
            r.emplace_back(name, b);
        }
    }
    return r;
}

// Bytes a dataset takes in the file (after compression).
std::uint64_t stored_bytes(const std::string& file, const std::string& ds) {
    h5::Handle f(H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
    if (!f) return 0;
    h5::Handle d(H5Dopen2(f.id(), ds.c_str(), H5P_DEFAULT), H5Dclose);
    return d ? H5Dget_storage_size(d.id()) : 0;
}

std::string dims_str(const Shape& s) {
    std::string r = "[";
    for (std::size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
    return r + "]";
}

const h5::DatasetInfo& need(const h5::Reader& r, const std::string& ds, std::size_t rank,
                            h5::DatasetInfo& keep) {
    if (!r.is_dataset(ds)) r.fail(ds, "missing dataset");
    keep = r.info(ds);
    if (keep.dims.size() != rank)
        r.fail(ds, "expected " + std::to_string(rank) + " dimensions, found " +
                       std::to_string(keep.dims.size()));
    return keep;
}

double need_attr(const h5::Reader& r, const std::string& obj, const std::string& name) {
    auto v = r.attr_double(obj, name);
    if (!v) r.fail(obj + "@" + name, "missing numeric attribute");
    return *v;
}

}  // namespace

int cmd_trace(const Args& args) {
    po::options_description d(
        "ternion trace info FILE [--json]\n\nSummarises a trace written by `ternion run --trace`");
    d.add_options()("help,h", "show this help")(
        "action", po::value<std::string>(), "info (positional)")("file", po::value<std::string>(),
                                                                 "trace file (positional)")(
        "json", "print one JSON document instead of text");
    po::positional_options_description pos;
    pos.add("action", 1).add("file", 1);
    auto vm = parse(args, d, &pos);
    if (show_help(vm, d)) return 0;
    if (!vm.count("action") || vm["action"].as<std::string>() != "info")
        throw OptionError("action", "expected `ternion trace info FILE`");
    if (!vm.count("file")) throw OptionError("file", "is required: `ternion trace info FILE`");
    const std::string file = vm["file"].as<std::string>();
    h5::Reader r(file);
    h5::Handle fh(H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
    auto attr_string = [&](const std::string& obj, const std::string& name) {
        return attr_text(fh.id(), obj, name);
    };
    auto type = attr_string("/", "__type__");
    if (!type || *type != "NIRGraphData")
        r.fail("/@__type__", "not a trace: the root attribute __type__ is not NIRGraphData");
    if (!r.is_group("/nodes")) r.fail("/nodes", "missing group");

    nlohmann::json j;
    j["file"] = file;
    h5::DatasetInfo di;
    // NIR observables.
    nlohmann::json nodes = nlohmann::json::array();
    for (const auto& name : r.children("/nodes")) {
        const std::string base = "/nodes/" + name;
        if (!r.is_group(base + "/observables")) r.fail(base + "/observables", "missing group");
        nlohmann::json nj;
        nj["name"] = name;
        for (const auto& obs : r.children(base + "/observables")) {
            const std::string g = base + "/observables/" + obs;
            auto t = attr_string(g, "__type__");
            if (!t) r.fail(g + "@__type__", "missing attribute");
            nlohmann::json oj;
            oj["type"] = *t;
            if (*t == "TimeGriddedData") {
                need(r, g + "/data", 3, di);
                oj["dt"] = need_attr(r, g, "dt");
                oj["shape"] = di.dims;
                oj["stored_bytes"] = stored_bytes(file, g + "/data");
                if (di.kind == h5::Kind::integer) {
                    auto v = r.read_int8(g + "/data");
                    oj["positive"] = std::count(v.begin(), v.end(), std::int8_t{1});
                    oj["negative"] = std::count(v.begin(), v.end(), std::int8_t{-1});
                    oj["events"] =
                        oj["positive"].get<std::int64_t>() + oj["negative"].get<std::int64_t>();
                } else {
                    auto v = r.read_floats(g + "/data");
                    if (!v.empty()) {
                        auto [mn, mx] = std::minmax_element(v.begin(), v.end());
                        oj["min"] = *mn;
                        oj["max"] = *mx;
                    }
                }
            } else if (*t == "EventData" || *t == "ValuedEventData") {
                need(r, g + "/idx", 2, di);
                h5::DatasetInfo ti;
                need(r, g + "/time", 2, ti);
                if (ti.dims != di.dims) r.fail(g + "/time", "shape differs from idx");
                oj["n_neurons"] = need_attr(r, g, "n_neurons");
                oj["t_max"] = need_attr(r, g, "t_max");
                if (auto dt = r.attr_double(g, "dt")) oj["dt"] = *dt;
                oj["shape"] = di.dims;
                auto idx = r.read_ints(g + "/idx");
                oj["events"] = std::count_if(idx.begin(), idx.end(), [](auto x) { return x >= 0; });
                std::uint64_t bytes =
                    stored_bytes(file, g + "/idx") + stored_bytes(file, g + "/time");
                if (*t == "ValuedEventData") {
                    h5::DatasetInfo vi;
                    need(r, g + "/value", 2, vi);
                    if (vi.dims != di.dims) r.fail(g + "/value", "shape differs from idx");
                    auto v = r.read_doubles(g + "/value");
                    oj["positive"] =
                        std::count_if(v.begin(), v.end(), [](double x) { return x > 0; });
                    oj["negative"] =
                        std::count_if(v.begin(), v.end(), [](double x) { return x < 0; });
                    bytes += stored_bytes(file, g + "/value");
                }
                oj["stored_bytes"] = bytes;
            } else {
                r.fail(g + "@__type__", "unknown observable type '" + *t + "'");
            }
            nj["observables"][obs] = oj;
        }
        nodes.push_back(nj);
    }
    j["nodes"] = nodes;

    // ternion's own groups.
    std::vector<std::string> kinds;
    if (r.is_dataset("/ternion/kinds")) kinds = r.read_strings("/ternion/kinds");
    if (r.is_group("/ternion/ops")) {
        nlohmann::json ops = nlohmann::json::object();
        std::map<std::string, double> total;
        for (const auto& name : r.children("/ternion/ops")) {
            const std::string ds = "/ternion/ops/" + name;
            need(r, ds, 3, di);
            if (di.dims[2] != static_cast<std::int64_t>(kinds.size()))
                r.fail(ds, "last axis is not the " + std::to_string(kinds.size()) +
                               " kinds of /ternion/kinds");
            auto v = r.read_doubles(ds);
            nlohmann::json nj = nlohmann::json::object();
            for (std::size_t c = 0; c < v.size(); ++c) {
                const auto& k = kinds[c % kinds.size()];
                nj[k] = nj.value(k, 0.0) + v[c];
                total[k] += v[c];
            }
            ops[name] = nj;
        }
        j["ops"] = {{"nodes", ops}, {"total", total}};
    }
    if (r.is_group("/ternion/energy")) {
        nlohmann::json en = nlohmann::json::object();
        double total = 0.0, report_total = 0.0, ann = 0.0;
        for (const auto& name : r.children("/ternion/energy")) {
            const std::string g = "/ternion/energy/" + name;
            need(r, g + "/per_step_pj", 3, di);
            auto v = r.read_doubles(g + "/per_step_pj");
            double s = 0.0;
            for (double x : v) s += x;
            nlohmann::json nj{{"per_step_sum_pj", s}};
            if (r.is_dataset(g + "/total_pj")) {
                double t = 0.0;
                for (double x : r.read_doubles(g + "/total_pj")) t += x;
                nj["report_total_pj"] = t;
                report_total += t;
            }
            if (auto a = r.attr_double(g, "ann_pj_per_inference")) {
                nj["ann_pj_per_inference"] = *a;
                ann += *a;
            }
            total += s;
            en[name] = nj;
        }
        const double S = r.is_dataset("/ternion/samples")
                             ? static_cast<double>(r.info("/ternion/samples").dims.at(0))
                             : 1.0;
        j["energy"] = {{"nodes", en},
                       {"per_step_sum_pj", total},
                       {"per_inference_pj", S > 0 ? total / S : 0.0},
                       {"report_total_pj", report_total},
                       {"ann_pj_per_inference", ann}};
        for (const char* k : {"profile", "count_mode"})
            if (auto v = attr_string("/ternion/energy", k)) j["energy"][k] = *v;
        if (auto v = r.attr_double("/ternion/energy", "per_inference_pj"))
            j["energy"]["report_per_inference_pj"] = *v;
        for (auto& [name, e] : j["energy"]["nodes"].items())
            e["per_inference_pj"] = S > 0 ? e["per_step_sum_pj"].get<double>() / S : 0.0;
    }
    if (r.is_group("/ternion/attention")) {
        nlohmann::json at = nlohmann::json::object();
        for (const auto& name : r.children("/ternion/attention")) {
            const std::string g = "/ternion/attention/" + name;
            need(r, g + "/scores", 5, di);
            h5::DatasetInfo wi, pi;
            need(r, g + "/weights", 5, wi);
            need(r, g + "/present", 2, pi);
            auto p = r.read_int8(g + "/present");
            at[name] = {{"shape", di.dims},
                        {"present", std::count(p.begin(), p.end(), std::int8_t{1})},
                        {"maps", p.size()},
                        {"stored_bytes",
                         stored_bytes(file, g + "/scores") + stored_bytes(file, g + "/weights")}};
        }
        j["attention"] = at;
    }
    nlohmann::json meta = nlohmann::json::object();
    if (r.is_group("/ternion/metadata"))
        for (auto& [k, v] : all_attrs(file, "/ternion/metadata")) meta[k] = v;
    j["metadata"] = meta;

    if (vm.count("json")) {
        std::cout << j.dump(2) << "\n";
        return 0;
    }
    std::printf("trace %s\n", file.c_str());
    for (auto& [k, v] : meta.items())
        std::printf("  %-16s %s\n", k.c_str(), v.get<std::string>().c_str());
    std::printf("\nnodes (NIRGraphData observables)\n");
    for (const auto& n : j["nodes"])
        for (auto& [obs, o] : n["observables"].items()) {
            std::string extra;
            if (o.contains("events"))
                extra += "events " + std::to_string(o["events"].get<std::int64_t>());
            if (o.contains("positive"))
                extra += " (+" + std::to_string(o["positive"].get<std::int64_t>()) + " / -" +
                         std::to_string(o["negative"].get<std::int64_t>()) + ")";
            if (o.contains("min")) {
                char b[64];
                std::snprintf(b, sizeof b, "range [%g, %g]", o["min"].get<double>(),
                              o["max"].get<double>());
                extra += b;
            }
            std::printf(
                "  %-20s %-8s %-16s %-20s %10s B  %s\n", n["name"].get<std::string>().c_str(),
                obs.c_str(), o["type"].get<std::string>().c_str(),
                dims_str(o["shape"].get<Shape>()).c_str(),
                group_digits(o["stored_bytes"].get<std::uint64_t>()).c_str(), extra.c_str());
        }
    if (j.contains("ops")) {
        std::printf("\nops (summed over samples and steps)\n");
        for (auto& [name, o] : j["ops"]["nodes"].items())
            std::printf("  %-20s AC %14.0f  MAC %14.0f  updates %12.0f\n", name.c_str(),
                        o.value("ac", 0.0), o.value("mac", 0.0), o.value("neuron_update", 0.0));
        const auto& t = j["ops"]["total"];
        std::printf("  %-20s AC %14.0f  MAC %14.0f  updates %12.0f\n", "total", t.value("ac", 0.0),
                    t.value("mac", 0.0), t.value("neuron_update", 0.0));
    }
    if (j.contains("energy")) {
        std::printf("\nenergy per inference (pJ; %s profile, per-step exact counts)\n",
                    j["energy"].value("profile", std::string("?")).c_str());
        for (auto& [name, e] : j["energy"]["nodes"].items())
            std::printf("  %-20s SNN %14.1f   ANN equivalent %14.1f\n", name.c_str(),
                        e["per_inference_pj"].get<double>(), e.value("ann_pj_per_inference", 0.0));
        std::printf("  %-20s SNN %14.1f   ANN equivalent %14.1f\n", "total",
                    j["energy"]["per_inference_pj"].get<double>(),
                    j["energy"]["ann_pj_per_inference"].get<double>());
    }
    if (j.contains("attention")) {
        std::printf("\nattention maps [samples, steps, heads, rows, cols]\n");
        for (auto& [name, a] : j["attention"].items())
            std::printf("  %-20s %-24s %lld of %lld maps present, %s B\n", name.c_str(),
                        dims_str(a["shape"].get<Shape>()).c_str(),
                        static_cast<long long>(a["present"].get<std::int64_t>()),
                        static_cast<long long>(a["maps"].get<std::int64_t>()),
                        group_digits(a["stored_bytes"].get<std::uint64_t>()).c_str());
    }
    return 0;
}

}  // namespace ternion::cli
