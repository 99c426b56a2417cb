// Loading, validating and describing hardware profiles (hw/profiles/*.json).
// Validation is strict on purpose: a profile is a set of published figures, so a typo in a key
// or a figure without a source must stop the run rather than silently price something at 0.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "hw/cost_model.hpp"
#include "sim/core/data_path.hpp"
#include "sim/core/error.hpp"

namespace ternion::hw {

using nlohmann::json;

const std::array<std::string_view, kKinds>& kind_names() {
    static const std::array<std::string_view, kKinds> names = [] {
        std::array<std::string_view, kKinds> a{};
        int i = 0;
        OpCounts{}.for_each([&](std::string_view n, std::uint64_t) { a[i++] = n; });
        return a;
    }();
    return names;
}

int kind_index(std::string_view name) {
    const auto& n = kind_names();
    for (int i = 0; i < kKinds; ++i)
        if (n[i] == name) return i;
    return -1;
}

bool is_memory_kind(int k) {
    std::string_view n = kind_names()[k];
    return n.size() > 6 && n.substr(n.size() - 6) == "_bytes";
}

std::optional<double> Profile::price(int k) const {
    std::string n(kind_names()[k]);
    if (!is_memory_kind(k)) {
        auto it = ops.find(n);
        if (it == ops.end()) return std::nullopt;
        return it->second.pj;
    }
    auto t = traffic.find(n);
    if (t == traffic.end()) return std::nullopt;
    const MemoryLevel& m = memory_levels.at(t->second.level);  // checked on load
    return m.pj / m.bytes * t->second.bytes_scale;
}

std::string Profile::price_source(int k) const {
    std::string n(kind_names()[k]);
    if (!is_memory_kind(k)) {
        auto it = ops.find(n);
        return it == ops.end() ? std::string() : it->second.source;
    }
    auto t = traffic.find(n);
    if (t == traffic.end()) return {};
    return memory_levels.at(t->second.level).source + "; " + t->second.source;
}

namespace {

// Along the two points nearest `bits` (the segment holding it, or the end one), linear in
// bits^power; never below 0.
double along(const std::vector<std::pair<int, double>>& pts, int bits, int power) {
    std::size_t i = 1;
    while (i + 1 < pts.size() && pts[i].first < bits) ++i;
    const auto x = [power](int b) { return std::pow(static_cast<double>(b), power); };
    const auto& [b0, e0] = pts[i - 1];
    const auto& [b1, e1] = pts[i];
    const double t = (x(bits) - x(b0)) / (x(b1) - x(b0));
    return std::max(0.0, e0 + t * (e1 - e0));
}

}  // namespace

double WidthTable::add_pj(int bits) const {
    return along(add, bits, 1);
}
double WidthTable::mult_pj(int bits) const {
    return along(mult, bits, 2);
}

double BufferSizeRule::pj_per_byte(double buffer_bytes) const {
    if (points.empty()) return 0.0;
    const double m = std::clamp(buffer_bytes, points.front().first, points.back().first);
    // The first segment whose right end reaches m; the slope-times-offset order is the one
    // SpikingJelly's memory_cost_pj evaluates, so the two agree to the last bit.
    std::size_t i = 0;
    while (i + 2 < points.size() && m > points[i + 1].first) ++i;
    const auto [x0, y0] = points[i];
    const auto [x1, y1] = points[i + 1];
    return y0 + (y1 - y0) / (x1 - x0) * (m - x0);
}

bool Profile::price_verified(int k) const {
    std::string n(kind_names()[k]);
    if (!is_memory_kind(k)) {
        auto it = ops.find(n);
        return it == ops.end() || it->second.verified;
    }
    auto t = traffic.find(n);
    return t == traffic.end() || memory_levels.at(t->second.level).verified;
}

namespace {

// Walks one JSON object, refusing unknown keys and reporting errors with a dotted key path.
class Reader {
  public:
    Reader(const json& j, std::string file, std::string path)
        : j_(j), file_(std::move(file)), path_(std::move(path)) {
        if (!j_.is_object()) fail("", "expected an object");
    }
    [[noreturn]] void fail(const std::string& key, const std::string& what) const {
        throw InputError(file_, join(key), what);
    }
    std::string join(const std::string& key) const {
        if (path_.empty()) return key;
        return key.empty() ? path_ : path_ + "." + key;
    }
    void allow(std::initializer_list<std::string_view> keys) const {
        for (auto it = j_.begin(); it != j_.end(); ++it) {
            if (std::find(keys.begin(), keys.end(), it.key()) != keys.end()) continue;
            std::string list;
            for (auto k : keys) list += (list.empty() ? "" : ", ") + std::string(k);
            fail(it.key(), "unknown key (allowed here: " + list + ")");
        }
    }
    bool has(const std::string& key) const { return j_.contains(key); }
    const json& at(const std::string& key) const {
        if (!j_.contains(key)) fail(key, "missing");
        return j_.at(key);
    }
    std::string str(const std::string& key, bool required = true) const {
        if (!has(key)) {
            if (required) fail(key, "missing");
            return {};
        }
        const json& v = j_.at(key);
        if (!v.is_string()) fail(key, "expected a string");
        return v.get<std::string>();
    }
    // A non-negative number (strictly positive when `positive`).
    double num(const std::string& key, bool positive = false) const {
        const json& v = at(key);
        if (!v.is_number()) fail(key, "expected a number");
        double d = v.get<double>();
        if (!(d >= 0.0)) fail(key, "must not be negative (got " + v.dump() + ")");
        if (positive && d == 0.0) fail(key, "must be greater than 0");
        return d;
    }
    bool flag(const std::string& key, bool dflt) const {
        if (!has(key)) return dflt;
        const json& v = j_.at(key);
        if (!v.is_boolean()) fail(key, "expected true or false");
        return v.get<bool>();
    }
    // Every figure must say where it comes from.
    std::string source() const {
        if (!has("source")) fail("source", "missing: every number needs a source");
        std::string s = str("source");
        if (s.find_first_not_of(" \t") == std::string::npos) fail("source", "is empty");
        return s;
    }
    Reader child(const std::string& key) const { return Reader(at(key), file_, join(key)); }
    const json& raw() const { return j_; }

  private:
    const json& j_;
    std::string file_, path_;
};

// The FixedLIF datapath fields a profile may fix (their values are checked where a node is built
// from them, naming the profile).
constexpr std::string_view kNeuronFormatKeys[] = {
    "datapath",    "current_bits",    "current_overflow", "membrane_bits", "membrane_overflow",
    "decay_form",  "order",           "decay_shift",      "du_offset",     "dv_offset",
    "input_shift", "threshold_shift", "compare",          "reset_mode",    "max_spikes"};

// {"add": {"8": pJ, "32": pJ}, "mult": {...}, "source", "verified"}: at least two widths each.
std::vector<std::pair<int, double>> read_width_points(const Reader& r) {
    std::vector<std::pair<int, double>> v;
    for (auto it = r.raw().begin(); it != r.raw().end(); ++it) {
        int bits = 0;
        const auto [end, ec] =
            std::from_chars(it.key().data(), it.key().data() + it.key().size(), bits);
        if (ec != std::errc() || end != it.key().data() + it.key().size() || bits < 1 || bits > 64)
            r.fail(it.key(), "expected a width in bits (1 to 64) as the key");
        v.emplace_back(bits, r.num(it.key()));
    }
    if (v.size() < 2) r.fail("", "needs at least two widths");
    std::sort(v.begin(), v.end());
    return v;
}

WidthTable read_widths(const Reader& r) {
    r.allow({"add", "mult", "source", "verified", "note"});
    WidthTable w;
    w.add = read_width_points(r.child("add"));
    w.mult = read_width_points(r.child("mult"));
    w.source = r.source();
    w.verified = r.flag("verified", true);
    return w;
}

NumberFormats read_formats(const Reader& r) {
    r.allow({"weights", "neuron", "attention", "source", "verified", "note"});
    NumberFormats f;
    f.source = r.source();
    f.verified = r.flag("verified", true);
    f.neuron.set_label(r.join("neuron"));
    if (r.has("weights")) {
        Reader w = r.child("weights");
        w.allow({"bits", "rounding", "scale", "granularity"});
        if (w.has("bits")) {
            const double b = w.num("bits");
            if (b != static_cast<int>(b) || b < 2 || b > 16)
                w.fail("bits", "must be an integer in [2, 16]");
            f.weight_bits = static_cast<int>(b);
        }
        if (w.has("scale")) {
            f.scale = w.str("scale");
            if (f.scale != "power_of_two" && f.scale != "max")
                w.fail("scale", "must be \"power_of_two\" or \"max\"");
        }
        if (w.has("granularity")) {
            f.granularity = w.str("granularity");
            if (f.granularity != "layer" && f.granularity != "channel")
                w.fail("granularity", "must be \"layer\" or \"channel\"");
        }
        if (w.has("rounding")) {
            f.rounding = w.str("rounding");
            if (f.rounding != "nearest_even" && f.rounding != "floor" &&
                f.rounding != "toward_zero")
                w.fail("rounding", "must be \"nearest_even\", \"floor\" or \"toward_zero\"");
        }
    }
    if (r.has("neuron")) {
        Reader n = r.child("neuron");
        for (auto it = n.raw().begin(); it != n.raw().end(); ++it) {
            const auto& k = it.key();
            if (std::find(std::begin(kNeuronFormatKeys), std::end(kNeuronFormatKeys), k) ==
                std::end(kNeuronFormatKeys)) {
                std::string list;
                for (auto a : kNeuronFormatKeys)
                    list += (list.empty() ? "" : ", ") + std::string(a);
                n.fail(k, "unknown key (allowed here: " + list + ")");
            }
            if (it->is_string())
                f.neuron.set(k, it->get<std::string>());
            else if (it->is_number_integer())
                f.neuron.set(k, static_cast<double>(it->get<std::int64_t>()));
            else
                n.fail(k, "expected a string or an integer");
        }
    }
    if (r.has("attention")) {  // the integer attention's registers (docs/fixed-point.md)
        Reader a = r.child("attention");
        a.allow({"acc_bits", "acc_overflow", "value_bits", "shift_cap", "shift_rounding"});
        f.attention.set_label(r.join("attention"));
        for (const char* k : {"acc_bits", "value_bits", "shift_cap"})
            if (a.has(k)) {
                const double v = a.num(k);
                if (v != static_cast<int>(v) || v < 0 || v > 32) a.fail(k, "must be an integer");
                f.attention.set(k, v);
            }
        for (const char* k : {"acc_overflow", "shift_rounding"})
            if (a.has(k)) f.attention.set(k, a.str(k));
    }
    return f;
}

// memory.by_buffer_size: {"points": [[bytes, pJ per byte], ...], "source", "verified", "note"};
// at least two points, bytes strictly increasing and >= 0, prices >= 0.
BufferSizeRule read_buffer_rule(const Reader& r) {
    r.allow({"points", "source", "verified", "note"});
    BufferSizeRule b;
    const json& pts = r.at("points");
    if (!pts.is_array() || pts.size() < 2)
        r.fail("points", "expected a list of at least two [bytes, pJ per byte] pairs");
    for (std::size_t i = 0; i < pts.size(); ++i) {
        const json& q = pts[i];
        const std::string key = "points[" + std::to_string(i) + "]";
        if (!q.is_array() || q.size() != 2 || !q[0].is_number() || !q[1].is_number())
            r.fail(key, "expected a [bytes, pJ per byte] pair of numbers");
        const double x = q[0].get<double>(), y = q[1].get<double>();
        if (!std::isfinite(x) || !std::isfinite(y) || x < 0 || y < 0)
            r.fail(key, "must be finite and non-negative");
        if (!b.points.empty() && x <= b.points.back().first)
            r.fail(key, "bytes must increase strictly from one point to the next");
        b.points.emplace_back(x, y);
    }
    b.source = r.source();
    b.verified = r.flag("verified", true);
    b.note = r.str("note", false);
    return b;
}

ScalarFigure read_scalar(const Reader& r, bool positive) {
    r.allow({"value", "source", "verified", "note"});
    ScalarFigure f;
    f.value = r.num("value", positive);
    f.source = r.source();
    f.verified = r.flag("verified", true);
    f.note = r.str("note", false);
    return f;
}

// {"key": "@kind{key, ...}"}: each a BibTeX entry whose key is the name it is listed under.
void read_references(const Reader& r, Profile& p) {
    for (auto it = r.raw().begin(); it != r.raw().end(); ++it) {
        const std::string& key = it.key();
        const std::string entry = r.str(key);
        const auto brace = entry.find('{');
        if (entry.empty() || entry[0] != '@' || brace == std::string::npos ||
            entry.compare(brace + 1, key.size() + 1, key + ",") != 0)
            r.fail(key, "expected a BibTeX entry \"@kind{" + key + ", ...}\"");
        p.references.emplace_back(key, entry);
    }
}

}  // namespace

Profile parse_profile(const json& doc, const std::string& file) {
    Reader top(doc, file, "");
    top.allow({"name", "description", "technology", "ops", "memory", "static_power_w", "clock_hz",
               "formats", "widths", "notes", "references"});
    Profile p;
    p.path = file;
    p.name = top.str("name");
    if (p.name.empty()) top.fail("name", "is empty");
    p.description = top.str("description");
    p.technology = top.str("technology", false);

    Reader ops = top.child("ops");
    for (auto it = ops.raw().begin(); it != ops.raw().end(); ++it) {
        int k = kind_index(it.key());
        if (it.key() == "overflow")
            ops.fail(it.key(), "counts fixed-point states that overflowed; it is not priced");
        if (k < 0 || is_memory_kind(k)) {
            std::string list;
            for (int i = 0; i < kKinds; ++i)
                if (!is_memory_kind(i) && kind_names()[i] != "overflow")
                    list += (list.empty() ? "" : ", ") + std::string(kind_names()[i]);
            ops.fail(it.key(), "unknown operation kind (allowed: " + list +
                                   "; memory traffic goes under memory.traffic)");
        }
        Reader e = ops.child(it.key());
        e.allow({"pj", "bits", "source", "verified", "note"});
        OpPrice o;
        o.pj = e.num("pj");
        if (e.has("bits")) {
            const json& b = e.at("bits");
            if (!b.is_number_integer() || b.get<int>() <= 0) e.fail("bits", "expected a width > 0");
            o.bits = b.get<int>();
        }
        o.source = e.source();
        o.verified = e.flag("verified", true);
        o.note = e.str("note", false);
        p.ops.emplace(it.key(), std::move(o));
    }
    // The two kinds every convention prices; a profile without them cannot reproduce anything.
    for (const char* req : {"ac", "mac"})
        if (!p.ops.count(req)) ops.fail(req, "missing: every profile must price ac and mac");

    if (top.has("memory")) {
        Reader mem = top.child("memory");
        mem.allow({"levels", "traffic", "by_buffer_size"});
        if (mem.has("by_buffer_size"))
            p.by_buffer_size = read_buffer_rule(mem.child("by_buffer_size"));
        if (mem.has("levels")) {
            Reader lv = mem.child("levels");
            for (auto it = lv.raw().begin(); it != lv.raw().end(); ++it) {
                Reader e = lv.child(it.key());
                e.allow({"pj", "bytes", "source", "verified", "note"});
                MemoryLevel m;
                m.pj = e.num("pj");
                m.bytes = e.num("bytes", true);
                m.source = e.source();
                m.verified = e.flag("verified", true);
                m.note = e.str("note", false);
                p.memory_levels.emplace(it.key(), std::move(m));
            }
        }
        if (mem.has("traffic")) {
            Reader tr = mem.child("traffic");
            for (auto it = tr.raw().begin(); it != tr.raw().end(); ++it) {
                int k = kind_index(it.key());
                if (k < 0 || !is_memory_kind(k))
                    tr.fail(it.key(),
                            "unknown traffic kind (allowed: weight_read_bytes, state_read_bytes, "
                            "state_write_bytes, spike_write_bytes)");
                Reader e = tr.child(it.key());
                e.allow({"level", "bytes_scale", "source"});
                TrafficRule t;
                t.level = e.str("level");
                if (!p.memory_levels.count(t.level))
                    e.fail("level", "'" + t.level + "' is not defined under memory.levels");
                t.bytes_scale = e.has("bytes_scale") ? e.num("bytes_scale") : 1.0;
                t.source = e.source();
                p.traffic.emplace(it.key(), std::move(t));
            }
        }
    }
    if (top.has("static_power_w"))
        p.static_power_w = read_scalar(top.child("static_power_w"), false);
    if (top.has("clock_hz")) p.clock_hz = read_scalar(top.child("clock_hz"), true);
    if (top.has("formats")) p.formats = read_formats(top.child("formats"));
    if (top.has("widths")) p.widths = read_widths(top.child("widths"));
    if (top.has("notes")) {
        const json& n = top.at("notes");
        if (!n.is_array()) top.fail("notes", "expected a list of strings");
        for (const auto& s : n) {
            if (!s.is_string()) top.fail("notes", "expected a list of strings");
            p.notes.push_back(s.get<std::string>());
        }
    }
    if (top.has("references")) read_references(top.child("references"), p);
    return p;
}

std::vector<std::string> profile_search_dirs() {
    return data_search_dirs("TERNION_PROFILE_DIR", "profiles", TERNION_PROFILE_DIR);
}

std::string profile_dir() {
    auto dirs = profile_search_dirs();
    std::string d = find_data_dir(dirs);
    return d.empty() ? dirs.front() : d;
}

namespace {

Profile load_file(const std::string& path) {
    // A directory opens as a stream and fails on the first read: refuse it by name.
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
        throw InputError(path, "", "is a directory, not a profile file");
    std::ifstream in(path);
    if (!in) throw InputError(path, "", "cannot open the profile file");
    json doc;
    // Keys open at each depth, so an error inside a value (a number that overflows a double)
    // names its dotted key path.
    std::vector<std::string> keys;
    auto track = [&](int depth, json::parse_event_t ev, json& parsed) {
        if (ev == json::parse_event_t::key && depth >= 1) {
            keys.resize(static_cast<std::size_t>(depth - 1));
            keys.push_back(parsed.get<std::string>());
        }
        return true;
    };
    try {
        doc = json::parse(in, track, true, /*ignore_comments=*/false);
    } catch (const json::parse_error& e) {
        throw InputError(path, "", std::string("not valid JSON: ") + e.what());
    } catch (const json::exception& e) {
        std::string key;
        for (const auto& k : keys) key += (key.empty() ? "" : ".") + k;
        throw InputError(path, key, std::string("not a usable JSON value: ") + e.what());
    } catch (const std::ios_base::failure& e) {
        throw InputError(path, "", std::string("cannot read the profile file: ") + e.what());
    }
    return parse_profile(doc, path);
}

std::vector<std::string> profile_names() {
    namespace fs = std::filesystem;
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(profile_dir(), ec))
        if (e.is_regular_file() && e.path().extension() == ".json")
            names.push_back(e.path().stem().string());
    std::sort(names.begin(), names.end());
    return names;
}

}  // namespace

Profile load_profile(const std::string& name_or_path) {
    const std::string& s = name_or_path;
    bool is_path = s.find('/') != std::string::npos ||
                   (s.size() >= 5 && s.compare(s.size() - 5, 5, ".json") == 0);
    if (is_path) return load_file(s);
    std::string path = profile_dir() + "/" + s + ".json";
    if (!std::filesystem::exists(path)) {
        std::string list;
        for (const auto& n : profile_names()) list += (list.empty() ? "" : ", ") + n;
        throw OptionError(
            "profile",
            "unknown profile '" + s + "' (available: " +
                (list.empty() ? "none; searched " + join_dirs(profile_search_dirs()) : list) +
                "; or give a path to a .json file)");
    }
    return load_file(path);
}

std::vector<std::pair<std::string, std::string>> list_profiles() {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& n : profile_names()) {
        try {
            out.emplace_back(n, load_file(profile_dir() + "/" + n + ".json").description);
        } catch (const Error& e) {
            // Listing must still work when one file is broken; say which and why.
            out.emplace_back(n, std::string("(invalid: ") + e.what() + ")");
        }
    }
    return out;
}

namespace {

std::string fmt(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

std::string mark(bool verified) {
    return verified ? "" : " [unverified]";
}

}  // namespace

std::string describe_profile(const Profile& p) {
    std::ostringstream os;
    os << p.name << ": " << p.description << "\n";
    os << "file: " << p.path << "\n";
    if (!p.technology.empty()) os << "technology: " << p.technology << "\n";
    os << "operations (pJ per op):\n";
    for (int k = 0; k < kKinds; ++k) {
        if (is_memory_kind(k)) continue;
        std::string n(kind_names()[k]);
        auto it = p.ops.find(n);
        if (it == p.ops.end()) {
            os << "  " << n << ": not priced\n";
            continue;
        }
        const OpPrice& o = it->second;
        os << "  " << n << ": " << fmt(o.pj) << " pJ";
        if (o.bits) os << " (" << o.bits << "-bit)";
        os << mark(o.verified) << "\n    source: " << o.source << "\n";
        if (!o.note.empty()) os << "    note: " << o.note << "\n";
    }
    os << "memory traffic (pJ per counted byte):\n";
    for (int k = 0; k < kKinds; ++k) {
        if (!is_memory_kind(k)) continue;
        std::string n(kind_names()[k]);
        auto t = p.traffic.find(n);
        if (t == p.traffic.end()) {
            os << "  " << n << ": not priced\n";
            continue;
        }
        const MemoryLevel& m = p.memory_levels.at(t->second.level);
        os << "  " << n << ": " << fmt(*p.price(k)) << " pJ/byte = " << fmt(m.pj) << " pJ per "
           << fmt(m.bytes) << " bytes of " << t->second.level;
        if (t->second.bytes_scale != 1.0) os << " x bytes_scale " << fmt(t->second.bytes_scale);
        os << mark(m.verified) << "\n    why this memory: " << t->second.source << "\n";
    }
    if (!p.memory_levels.empty()) {
        os << "memory levels (pJ per access):\n";
        for (const auto& [n, m] : p.memory_levels) {
            os << "  " << n << ": " << fmt(m.pj) << " pJ per " << fmt(m.bytes) << " bytes"
               << mark(m.verified) << "\n    source: " << m.source << "\n";
            if (!m.note.empty()) os << "    note: " << m.note << "\n";
        }
    }
    if (p.by_buffer_size) {
        const auto& b = *p.by_buffer_size;
        os << "memory by buffer size (pJ per byte, linear between the points; --count lemaire)"
           << mark(b.verified) << ":\n   ";
        for (const auto& [x, y] : b.points) {
            char bytes[32];
            std::snprintf(bytes, sizeof bytes, "%.0f", x);  // 1048576, not 1.04858e+06
            os << " " << bytes << " B: " << fmt(y) << ";";
        }
        os << "\n    source: " << b.source << "\n";
        if (!b.note.empty()) os << "    note: " << b.note << "\n";
    }
    auto scalar = [&](const char* what, const std::optional<ScalarFigure>& f) {
        if (!f) return;
        os << what << ": " << fmt(f->value) << mark(f->verified) << "\n    source: " << f->source
           << "\n";
        if (!f->note.empty()) os << "    note: " << f->note << "\n";
    };
    scalar("static power (W)", p.static_power_w);
    scalar("clock (time steps per second)", p.clock_hz);
    if (p.formats) {
        const auto& f = *p.formats;
        os << "number formats (ternion quantize)" << mark(f.verified) << ": " << f.weight_bits
           << "-bit weights, " << f.scale << " scale per " << f.granularity << ", rounded "
           << f.rounding << "; neuron";
        for (const auto& k : f.neuron.names()) {
            os << " " << k << "=";
            if (f.neuron.is_string(k))
                os << '"' << f.neuron.string(k) << '"';
            else
                os << fmt(f.neuron.doubles(k, nullptr).at(0));
        }
        os << "\n    source: " << f.source << "\n";
    }
    if (p.widths) {
        const auto& w = *p.widths;
        os << "integer ops by width (connection layers with integer weights)" << mark(w.verified)
           << ": add";
        for (const auto& [b, e] : w.add) os << " " << b << "-bit " << fmt(e) << " pJ";
        os << "; multiply";
        for (const auto& [b, e] : w.mult) os << " " << b << "-bit " << fmt(e) << " pJ";
        os << " (an add linear in the bits between them, a multiply in the bits squared)"
           << "\n    source: " << w.source << "\n";
    }
    for (const auto& n : p.notes) os << "note: " << n << "\n";
    os << "\nto cite:\n  " << citation_sentence(p) << "\n";
    for (const auto& [key, entry] : p.references) os << "\n" << entry << "\n";
    return os.str();
}

namespace {

// A counted kind as a methods section words it.
std::string kind_words(std::string_view kind) {
    static const std::map<std::string_view, const char*> words = {
        {"ac", "accumulate (AC)"},
        {"mac", "multiply-accumulate (MAC)"},
        {"cmp", "comparison"},
        {"exp", "exponential"},
        {"div", "division"},
        {"neuron_update", "neuron update"},
        {"spikes_out", "spike sent"},
        {"weight_read_bytes", "byte of weights read"},
        {"state_read_bytes", "byte of neuron state read"},
        {"state_write_bytes", "byte of neuron state written"},
        {"spike_write_bytes", "byte of spike events written"}};
    const auto it = words.find(kind);
    return it == words.end() ? std::string(kind) : it->second;
}

}  // namespace

std::string citation_sentence(const Profile& p) {
    std::vector<std::string> priced, assumed;
    for (int k = 0; k < kKinds; ++k) {
        const auto price = p.price(k);
        if (!price) continue;
        const std::string words = kind_words(kind_names()[k]);
        priced.push_back(fmt(*price) + " pJ per " + words);
        if (!p.price_verified(k)) assumed.push_back(words);
    }
    std::string s = "Energy was estimated with ternion's " + p.name + " profile";
    if (!p.technology.empty()) s += " (" + p.technology + ")";
    s += ": ";
    for (std::size_t i = 0; i < priced.size(); ++i) s += (i ? ", " : "") + priced[i];
    if (!assumed.empty()) {
        s += "; the figures per ";
        for (std::size_t i = 0; i < assumed.size(); ++i) s += (i ? ", " : "") + assumed[i];
        s += " are the profile's assumptions";
    }
    if (!p.references.empty()) {
        s += " \\cite{";
        for (std::size_t i = 0; i < p.references.size(); ++i)
            s += (i ? "," : "") + p.references[i].first;
        s += "}";
    }
    return s + ".";
}

}  // namespace ternion::hw
