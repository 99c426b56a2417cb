#include "models/inputs/events.hpp"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "sim/core/error.hpp"
#include "sim/core/shape.hpp"
#include "sim/io/h5io.hpp"

namespace ternion {

SplitBy parse_split_by(const std::string& s) {
    if (s == "number") return SplitBy::number;
    if (s == "time") return SplitBy::time;
    throw OptionError("split-by", "must be number or time (got '" + s + "')");
}

void check_rule(const FrameRule& r) {
    if (r.frames > 0 && r.duration > 0)
        throw OptionError("duration", "and --frames exclude each other: give one");
    if (r.frames <= 0 && r.duration <= 0) {
        if (r.frames < 0 || r.duration < 0)
            throw OptionError(r.duration < 0 ? "duration" : "frames", "must be at least 1");
        throw OptionError("frames", "or --duration is required");
    }
    if (r.frames > 100000) throw OptionError("frames", "absurdly many (more than 100000)");
    if (r.height <= 0 || r.width <= 0 || r.height > 65536 || r.width > 65536)
        throw OptionError("size", "height and width must lie in [1, 65536]");
}

namespace {

// What one output may hold, as for other inputs (models/inputs/).
constexpr std::int64_t kMaxBytes = std::int64_t{8} << 30;

[[noreturn]] void fail(const EventStream& ev, const char* field, const std::string& what) {
    throw InputError(ev.file, ev.prefix + field, ev.sample + what);
}

// Lengths, coordinates inside the size, and for time splitting t in order.
void check_stream(const EventStream& ev, const FrameRule& r) {
    const std::size_t n = ev.t.size();
    if (n == 0) fail(ev, "t", "no events: an empty stream has no frames");
    const std::pair<const char*, const std::vector<std::int64_t>*> fields[] = {
        {"x", &ev.x}, {"y", &ev.y}, {"p", &ev.p}};
    for (const auto& [name, v] : fields)
        if (v->size() != n)
            fail(ev, name,
                 "holds " + std::to_string(v->size()) + " events, t holds " + std::to_string(n));
    for (std::size_t k = 0; k < n; ++k) {
        if (ev.x[k] < 0 || ev.x[k] >= r.width)
            fail(ev, "x",
                 "x = " + std::to_string(ev.x[k]) + " at event " + std::to_string(k) +
                     " lies outside [0, " + std::to_string(r.width) + "), the sensor's width");
        if (ev.y[k] < 0 || ev.y[k] >= r.height)
            fail(ev, "y",
                 "y = " + std::to_string(ev.y[k]) + " at event " + std::to_string(k) +
                     " lies outside [0, " + std::to_string(r.height) + "), the sensor's height");
    }
    if (r.frames > 0 && r.split_by == SplitBy::number) return;  // splits by index alone
    for (std::size_t k = 1; k < n; ++k)
        if (ev.t[k] < ev.t[k - 1])
            fail(ev, "t",
                 "t = " + std::to_string(ev.t[k]) + " at event " + std::to_string(k) +
                     " comes before t = " + std::to_string(ev.t[k - 1]) + " at event " +
                     std::to_string(k - 1) +
                     ": splitting by time needs events sorted by t (or --split-by number)");
}

// t[N-1] - t[0] of a sorted stream, refused when it overflows int64.
std::int64_t span_of(const EventStream& ev) {
    std::int64_t span = 0;
    if (__builtin_sub_overflow(ev.t.back(), ev.t.front(), &span))
        fail(ev, "t", "the stream's time span overflows 64-bit integers");
    return span;
}

// First index whose t is at least `v` (t sorted): numpy's searchsorted(t, v, side="left").
std::int64_t first_at(const std::vector<std::int64_t>& t, std::int64_t v) {
    return std::lower_bound(t.begin(), t.end(), v) - t.begin();
}

// Frame i holds events [bounds[i], bounds[i + 1]) except where `left` differs from the previous
// right end (an empty time window of SpikingJelly's time split leaves a gap): [left[i], right[i]).
struct Bounds {
    std::vector<std::int64_t> left, right;
};

Bounds split_number(std::int64_t N, std::int64_t M) {
    Bounds b;
    const std::int64_t di = N / M;  // SpikingJelly's N // frames_num
    for (std::int64_t i = 0; i < M; ++i) {
        b.left.push_back(i * di);
        b.right.push_back(i == M - 1 ? N : i * di + di);
    }
    return b;
}

// Window i is [t0 + dt i, t0 + dt (i + 1)), dt = (t[N-1] - t0) // M; the last frame runs to the
// end. SpikingJelly takes the first and last index inside each window, which for sorted t are
// the searchsorted bounds; an empty window (where SpikingJelly raises IndexError) is an empty
// frame here.
Bounds split_time(const EventStream& ev, std::int64_t M) {
    const std::int64_t span = span_of(ev), dt = span / M, N = std::ssize(ev.t);
    if (dt == 0)
        fail(ev, "t",
             "the events span " + std::to_string(span) + " time units, fewer than the " +
                 std::to_string(M) + " frames asked for: every time window would be empty");
    Bounds b;
    for (std::int64_t i = 0; i < M; ++i) {
        const std::int64_t tl = ev.t.front() + dt * i;
        b.left.push_back(first_at(ev.t, tl));
        b.right.push_back(i == M - 1 ? N : first_at(ev.t, tl + dt));
    }
    return b;
}

// integrate_events_by_fixed_duration: ceil(span / D) frames; frame i < last holds the events
// with (t - t0) // D == i, the last every event from t0 + D (T - 1) on.
Bounds split_duration(const EventStream& ev, std::int64_t D, std::int64_t frame_bytes,
                      std::int64_t max_bytes) {
    const std::int64_t span = span_of(ev), N = std::ssize(ev.t);
    const std::int64_t T = span / D + (span % D != 0);
    if (T == 0)
        fail(ev, "t",
             "every event has the same time stamp: no frame of duration " + std::to_string(D) +
                 " (SpikingJelly's count, ceil(span / duration), is 0)");
    if (T > max_bytes / frame_bytes)
        fail(ev, "t",
             "the events span " + std::to_string(span) + " time units: " + std::to_string(T) +
                 " frames of duration " + std::to_string(D) + " would exceed " +
                 std::to_string(max_bytes) + " bytes");
    Bounds b;
    std::int64_t left = 0;
    for (std::int64_t i = 0; i < T; ++i) {
        const std::int64_t right = i == T - 1 ? N : first_at(ev.t, ev.t.front() + D * (i + 1));
        b.left.push_back(left);
        b.right.push_back(right);
        left = right;
    }
    return b;
}

}  // namespace

std::vector<float> frame_events(const EventStream& ev, const FrameRule& r, std::int64_t& T) {
    check_rule(r);
    check_stream(ev, r);
    const std::int64_t hw = r.height * r.width, N = std::ssize(ev.t);
    Bounds b;
    if (r.duration > 0)
        b = split_duration(ev, r.duration, 2 * hw * 4, r.max_bytes);
    else if (r.split_by == SplitBy::number)
        b = split_number(N, r.frames);
    else
        b = split_time(ev, r.frames);
    T = std::ssize(b.left);
    if (T > r.max_bytes / (2 * hw * 4))
        throw OptionError("frames", std::to_string(T) + " frames of " + std::to_string(r.height) +
                                        "x" + std::to_string(r.width) + " would exceed " +
                                        std::to_string(r.max_bytes) + " bytes");
    std::vector<float> out(static_cast<std::size_t>(T * 2 * hw), 0.0f);
    // Counted in integers, then converted once: float32 of the exact count, as SpikingJelly's
    // float64 counts cast to float32 give. Only the pixels a frame's events touch are written
    // and cleared, so the work follows the events, not frames x pixels (many empty frames).
    std::vector<std::uint64_t> count(static_cast<std::size_t>(2 * hw));
    auto pixel = [&](std::int64_t k) {
        return static_cast<std::size_t>((ev.p[k] != 0 ? hw : 0) + ev.y[k] * r.width + ev.x[k]);
    };
    for (std::int64_t i = 0; i < T; ++i) {
        for (std::int64_t k = b.left[i]; k < b.right[i]; ++k) ++count[pixel(k)];
        float* f = out.data() + i * 2 * hw;
        for (std::int64_t k = b.left[i]; k < b.right[i]; ++k) {
            const std::size_t j = pixel(k);
            if (count[j]) f[j] = static_cast<float>(count[j]), count[j] = 0;
        }
    }
    return out;
}

namespace {

std::uint32_t le16(const unsigned char* p) {
    return p[0] | (std::uint32_t{p[1]} << 8);
}
std::uint32_t le32(const unsigned char* p) {
    return le16(p) | (le16(p + 2) << 16);
}
std::uint64_t le64(const unsigned char* p) {
    return le32(p) | (std::uint64_t{le32(p + 4)} << 32);
}

using Bytes = std::vector<unsigned char>;

Bytes read_all(const std::string& path) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) throw InputError(path, "", "no such file");
    const auto size = std::filesystem::file_size(path, ec);
    if (ec) throw InputError(path, "", "cannot read its size");
    if (size > static_cast<std::uintmax_t>(kMaxBytes))
        throw InputError(path, "", "larger than 8 GiB: split it, or use the HDF5 layout");
    Bytes b(static_cast<std::size_t>(size));
    std::ifstream f(path, std::ios::binary);
    f.read(reinterpret_cast<char*>(b.data()), static_cast<std::streamsize>(b.size()));
    if (!f) throw InputError(path, "", "cannot read");
    return b;
}

// One field of a .npy array: a plain array has one, named "".
struct NpyField {
    std::string name;
    char kind = 'i';  // b, i, u, f
    int size = 8;
    std::int64_t offset = 0;
};
struct NpyArray {
    Shape dims;
    std::vector<NpyField> fields;
    std::int64_t itemsize = 0;
    const unsigned char* data = nullptr;
};

// "<i8", "|b1", "<f4": a little-endian (or byte-sized) bool, integer or float type.
NpyField parse_type(const std::string& t, const std::string& file, const std::string& field) {
    NpyField f;
    if (t.size() < 3 || (t[0] != '<' && t[0] != '|' && t[0] != '='))
        throw InputError(file, field, "dtype '" + t + "' is not little-endian");
    f.kind = t[1];
    f.size = std::atoi(t.c_str() + 2);
    const bool ok = (f.kind == 'b' && f.size == 1) ||
                    ((f.kind == 'i' || f.kind == 'u') &&
                     (f.size == 1 || f.size == 2 || f.size == 4 || f.size == 8)) ||
                    (f.kind == 'f' && (f.size == 4 || f.size == 8)) || f.kind == 'V';
    if (!ok)
        throw InputError(file, field, "dtype '" + t + "' is not a bool, integer or float type");
    return f;
}

// The quoted strings of `s` in order: a structured descr's names and types.
std::vector<std::string> quoted(const std::string& s) {
    std::vector<std::string> v;
    for (std::size_t p = 0; p < s.size(); ++p) {
        if (s[p] != '\'' && s[p] != '"') continue;
        const auto e = s.find(s[p], p + 1);
        if (e == std::string::npos) break;
        v.push_back(s.substr(p + 1, e - p - 1));
        p = e;
    }
    return v;
}

// The header's descr: a type string, or a list [('x', '<i8'), ...] of packed fields (padding
// shows as ('', '|V4')).
void parse_descr(const std::string& h, NpyArray& a, const std::string& file,
                 const std::string& field) {
    auto p = h.find("'descr'");
    if (p == std::string::npos) throw InputError(file, field, "the .npy header has no 'descr'");
    p = h.find_first_not_of(" :", p + 7);
    if (p != std::string::npos && h[p] == '[') {
        const auto e = h.find(']', p);
        if (e == std::string::npos) throw InputError(file, field, "malformed .npy header");
        const std::string list = h.substr(p, e - p + 1);
        // A sub-array field is a third tuple member: ('x', '<i8', (2,)).
        if (list.find("', (") != std::string::npos || list.find("\", (") != std::string::npos)
            throw InputError(file, field, "sub-array fields are not supported");
        const auto q = quoted(list);
        for (std::size_t k = 0; k + 1 < q.size(); k += 2) {
            NpyField f = parse_type(q[k + 1], file, field);
            f.name = q[k];
            f.offset = a.itemsize;
            a.itemsize += f.size;
            if (f.kind != 'V') a.fields.push_back(f);
        }
        return;
    }
    const auto q = quoted(h.substr(p == std::string::npos ? h.size() : p));
    if (q.empty()) throw InputError(file, field, "malformed .npy header");
    NpyField f = parse_type(q[0], file, field);
    if (f.kind == 'V') throw InputError(file, field, "dtype '" + q[0] + "' holds no numbers");
    a.itemsize = f.size;
    a.fields.push_back(f);
}

// A .npy image in memory (numpy.lib.format): magic, version, header dict, C-order data.
NpyArray parse_npy(const unsigned char* b, std::size_t n, const std::string& file,
                   const std::string& field) {
    if (n < 10 || std::memcmp(b, "\x93NUMPY", 6) != 0)
        throw InputError(file, field, "not a .npy array (bad magic)");
    const int major = b[6];
    if (major < 1 || major > 3)
        throw InputError(file, field, "unsupported .npy version " + std::to_string(major));
    const std::size_t hlen = major == 1 ? le16(b + 8) : (n >= 12 ? le32(b + 8) : n);
    const std::size_t start = major == 1 ? 10 : 12;
    if (hlen > n - std::min(n, start)) throw InputError(file, field, "truncated .npy header");
    const std::string h(reinterpret_cast<const char*>(b + start), hlen);
    NpyArray a;
    parse_descr(h, a, file, field);
    if (h.find("'fortran_order': False") == std::string::npos)
        throw InputError(file, field, "Fortran-order arrays are not supported");
    const auto sp = h.find("'shape'"), lp = h.find('(', sp), rp = h.find(')', lp);
    if (sp == std::string::npos || lp == std::string::npos || rp == std::string::npos)
        throw InputError(file, field, "the .npy header has no shape");
    std::int64_t total = 1;
    for (std::size_t k = lp + 1; k < rp; ++k) {
        if (!std::isdigit(static_cast<unsigned char>(h[k]))) {
            // A tuple of non-negative integers only ("-1" is no dimension of a saved array).
            if (h[k] != ' ' && h[k] != ',') throw InputError(file, field, "absurd shape");
            continue;
        }
        std::int64_t d = 0;
        for (; k < rp && std::isdigit(static_cast<unsigned char>(h[k])); ++k)
            if ((d = d * 10 + (h[k] - '0')) > kMaxBytes)
                throw InputError(file, field, "absurd shape");
        a.dims.push_back(d);
        // Checked before multiplying: two dimensions under the cap can overflow 64 bits.
        if (d != 0 && total > kMaxBytes / d) throw InputError(file, field, "absurd shape");
        total *= d;
    }
    a.data = b + start + hlen;
    const auto have = static_cast<std::int64_t>(n - start - hlen);
    if (have < total * a.itemsize)
        throw InputError(file, field,
                         "holds " + std::to_string(have) + " data bytes, shape " +
                             shape_str(a.dims) + " needs " + std::to_string(total * a.itemsize));
    return a;
}

// Field `f` of every element as int64; a float must hold an integer.
std::vector<std::int64_t> column(const NpyArray& a, const NpyField& f, const std::string& file,
                                 const std::string& field) {
    const std::int64_t n = a.dims.empty() ? 1 : a.dims[0];
    std::vector<std::int64_t> v(static_cast<std::size_t>(n));
    for (std::int64_t k = 0; k < n; ++k) {
        const unsigned char* p = a.data + k * a.itemsize + f.offset;
        std::uint64_t u = 0;
        if (f.kind != 'f') std::memcpy(&u, p, static_cast<std::size_t>(f.size));
        if (f.kind == 'b') {
            v[k] = u != 0;
        } else if (f.kind == 'i') {
            const int shift = 64 - 8 * f.size;
            v[k] = static_cast<std::int64_t>(u << shift) >> shift;  // sign-extend
        } else if (f.kind == 'u') {
            if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
                throw InputError(
                    file, field,
                    "value at event " + std::to_string(k) + " exceeds 64-bit signed integers");
            v[k] = static_cast<std::int64_t>(u);
        } else {
            double d = 0;
            if (f.size == 4) {
                float x;
                std::memcpy(&x, p, 4);
                d = x;
            } else {
                std::memcpy(&d, p, 8);
            }
            if (!std::isfinite(d) || d != std::floor(d) || std::fabs(d) > 9e15)
                throw InputError(file, field,
                                 "value " + std::to_string(d) + " at event " + std::to_string(k) +
                                     " is not an integer (coordinates, polarities and time "
                                     "stamps are integers)");
            v[k] = static_cast<std::int64_t>(d);
        }
    }
    return v;
}

// Tonic's structured array (fields x, y, t, p in any order and integer or bool types).
EventStream read_npy_events(const std::string& path) {
    const Bytes b = read_all(path);
    const NpyArray a = parse_npy(b.data(), b.size(), path, "");
    if (a.dims.size() != 1 || a.fields.size() < 2)
        throw InputError(path, "",
                         "expected a 1-d structured array with fields x, y, t, p (as Tonic "
                         "gives events), got shape " +
                             shape_str(a.dims) + " of " + std::to_string(a.fields.size()) +
                             " field(s)");
    EventStream ev;
    ev.file = path;
    for (const char* name : {"x", "y", "t", "p"}) {
        const auto it = std::find_if(a.fields.begin(), a.fields.end(),
                                     [&](const NpyField& f) { return f.name == name; });
        if (it == a.fields.end())
            throw InputError(path, name, "missing: the structured array needs fields x, y, t, p");
        auto col = column(a, *it, path, name);
        (*name == 'x' ? ev.x : *name == 'y' ? ev.y : *name == 't' ? ev.t : ev.p) = std::move(col);
    }
    return ev;
}

// The members of a .npz file (a zip archive, stored or deflated, as numpy.savez and
// savez_compressed write it): name -> bytes. Sizes and offsets come from the central directory,
// with its zip64 fields where numpy's writer uses them.
class Zip {
  public:
    explicit Zip(const std::string& path) : path_(path), b_(read_all(path)) { index(); }
    Bytes member(const std::string& name) const {
        const auto it = std::find_if(entries_.begin(), entries_.end(),
                                     [&](const Entry& e) { return e.name == name; });
        if (it == entries_.end()) return {};
        const Entry& e = *it;
        if (e.local > b_.size() || b_.size() - e.local < 30 || le32(&b_[e.local]) != 0x04034b50)
            bad("local header");
        const std::uint64_t at = e.local + 30 + le16(&b_[e.local + 26]) + le16(&b_[e.local + 28]);
        if (at > b_.size() || e.csize > b_.size() - at) bad("member " + name + " is truncated");
        if (e.usize > static_cast<std::uint64_t>(kMaxBytes)) bad("member " + name + " is absurd");
        // Deflate expands at most about 1032:1: a larger declared size is refused before a
        // buffer of that size is allocated and filled.
        if (e.method == 8 && e.usize / 1032 > e.csize + 1)
            bad("member " + name + " declares " + std::to_string(e.usize) + " bytes from " +
                std::to_string(e.csize) + " compressed ones");
        // Stored members hold their bytes as they are: both sizes must agree before the buffer
        // is sized (the compressed one is within the file).
        if (e.method == 0 && e.csize != e.usize) bad("stored member " + name + " has two sizes");
        if (e.method != 0 && e.method != 8)
            bad("member " + name + ": compression method " + std::to_string(e.method) +
                " (only stored and deflate are read)");
        Bytes out(static_cast<std::size_t>(e.usize));
        if (e.method == 0) {
            if (!out.empty()) std::memcpy(out.data(), b_.data() + at, out.size());
            return out;
        }
        z_stream z{};
        if (inflateInit2(&z, -15) != Z_OK) bad("zlib failed to start");
        z.next_in = const_cast<unsigned char*>(b_.data() + at);
        z.avail_in = static_cast<uInt>(e.csize);
        z.next_out = out.data();
        z.avail_out = static_cast<uInt>(out.size());
        const int rc = inflate(&z, Z_FINISH);
        const auto got = z.total_out;
        inflateEnd(&z);
        if (rc != Z_STREAM_END || got != out.size()) bad("member " + name + " does not inflate");
        return out;
    }

  private:
    struct Entry {
        std::string name;
        std::uint32_t method = 0;
        std::uint64_t csize = 0, usize = 0, local = 0;
    };
    [[noreturn]] void bad(const std::string& what) const {
        throw InputError(path_, "", "not a readable .npz (zip) file: " + what);
    }
    // The end-of-central-directory record, then each central entry.
    void index() {
        if (b_.size() < 22) bad("too short");
        std::size_t eocd = b_.size() - 22;
        while (le32(&b_[eocd]) != 0x06054b50) {
            if (eocd == 0 || b_.size() - eocd > 65557) bad("no end of central directory");
            --eocd;
        }
        std::uint64_t count = le16(&b_[eocd + 10]), off = le32(&b_[eocd + 16]);
        if ((count == 0xFFFF || off == 0xFFFFFFFF) && eocd >= 20 &&
            le32(&b_[eocd - 20]) == 0x07064b50) {
            const std::uint64_t z = le64(&b_[eocd - 12]);
            if (z > b_.size() || b_.size() - z < 56 || le32(&b_[z]) != 0x06064b50)
                bad("zip64 record");
            count = le64(&b_[z + 32]);
            off = le64(&b_[z + 48]);
        }
        for (std::uint64_t k = 0; k < count; ++k) {
            if (off > b_.size() || b_.size() - off < 46 || le32(&b_[off]) != 0x02014b50)
                bad("central directory");
            const unsigned char* c = &b_[off];
            const std::uint32_t nlen = le16(c + 28), xlen = le16(c + 30), clen = le16(c + 32);
            if (b_.size() - off - 46 < nlen + xlen) bad("central directory");
            if (le16(c + 8) & 1) bad("encrypted member");
            Entry e{std::string(reinterpret_cast<const char*>(c + 46), nlen), le16(c + 10),
                    le32(c + 20), le32(c + 24), le32(c + 42)};
            zip64_sizes(c + 46 + nlen, xlen, e);
            entries_.push_back(std::move(e));
            off += 46 + nlen + xlen + clen;
        }
    }
    // Extra field 0x0001 holds, in order, the 64-bit values of the fields set to 0xFFFFFFFF.
    static void zip64_sizes(const unsigned char* x, std::uint32_t len, Entry& e) {
        for (std::uint32_t p = 0; p + 4 <= len;) {
            const std::uint32_t id = le16(x + p), n = le16(x + p + 2);
            if (id == 1) {
                std::uint32_t q = p + 4;
                for (std::uint64_t* f : {&e.usize, &e.csize, &e.local})
                    if (*f == 0xFFFFFFFF && q + 8 <= p + 4 + n && q + 8 <= len) {
                        *f = le64(x + q);
                        q += 8;
                    }
            }
            p += 4 + n;
        }
    }
    std::string path_;
    Bytes b_;
    std::vector<Entry> entries_;
};

// SpikingJelly's per-sample .npz: 1-d arrays t, x, y, p.
EventStream read_npz_events(const std::string& path) {
    const Zip zip(path);
    EventStream ev;
    ev.file = path;
    for (const char* name : {"x", "y", "t", "p"}) {
        const Bytes m = zip.member(std::string(name) + ".npy");
        if (m.empty())
            throw InputError(path, name, "missing: a .npz of events holds arrays t, x, y, p");
        const NpyArray a = parse_npy(m.data(), m.size(), path, name);
        if (a.dims.size() != 1 || a.fields.size() != 1 || !a.fields[0].name.empty())
            throw InputError(path, name, "expected a 1-d array, got shape " + shape_str(a.dims));
        auto col = column(a, a.fields[0], path, name);
        (*name == 'x' ? ev.x : *name == 'y' ? ev.y : *name == 't' ? ev.t : ev.p) = std::move(col);
    }
    return ev;
}

// One 1-d integer (or h5py bool) dataset of the HDF5 layout.
std::vector<std::int64_t> h5_column(const h5::Reader& r, const std::string& ds) {
    if (!r.exists(ds)) r.fail(ds, "missing: the event layout is /events/{t,x,y,p}");
    const auto inf = r.info(ds);
    if (inf.dims.size() != 1) r.fail(ds, "expected a 1-d dataset, got " + shape_str(inf.dims));
    if (!inf.is_enum) return r.read_ints(ds);
    r.check_storage(ds);
    const auto d = r.read_double_rows(ds, 0, inf.dims[0]);
    return std::vector<std::int64_t>(d.begin(), d.end());
}

// /events/{t,x,y,p} concatenated, sample s being [offsets[s], offsets[s + 1]); /labels [S].
EventFile read_h5_events(const std::string& path) {
    const h5::Reader r(path);
    EventFile f;
    std::vector<std::int64_t> c[4];
    const char* names[4] = {"x", "y", "t", "p"};
    for (int k = 0; k < 4; ++k) c[k] = h5_column(r, std::string("/events/") + names[k]);
    const auto N = static_cast<std::int64_t>(c[2].size());
    std::vector<std::int64_t> off{0, N};
    if (r.exists("/events/offsets")) {
        h5::DatasetInfo inf;
        off = r.read_ints("/events/offsets", &inf);
        if (inf.dims.size() != 1 || off.size() < 2 || off.front() != 0 || off.back() != N)
            r.fail("/events/offsets", "expected [samples + 1] from 0 to the " + std::to_string(N) +
                                          " events of /events/t");
        for (std::size_t s = 1; s < off.size(); ++s)
            if (off[s] < off[s - 1]) r.fail("/events/offsets", "decreases at " + std::to_string(s));
    }
    const std::size_t S = off.size() - 1;
    for (int k = 0; k < 4; ++k)
        if (c[k].size() != c[2].size())
            r.fail(std::string("/events/") + names[k], "holds " + std::to_string(c[k].size()) +
                                                           " events, /events/t holds " +
                                                           std::to_string(N));
    for (std::size_t s = 0; s < S; ++s) {
        EventStream ev;
        ev.file = path;
        ev.prefix = "/events/";
        if (S > 1) ev.sample = "sample " + std::to_string(s) + ", ";
        std::vector<std::int64_t>* dst[4] = {&ev.x, &ev.y, &ev.t, &ev.p};
        for (int k = 0; k < 4; ++k)
            dst[k]->assign(c[k].begin() + off[s], c[k].begin() + off[s + 1]);
        f.samples.push_back(std::move(ev));
    }
    if (r.exists("/labels")) {
        h5::DatasetInfo inf;
        f.labels = r.read_ints("/labels", &inf);
        if (inf.dims.size() != 1 || f.labels.size() != S)
            r.fail("/labels", "expected [" + std::to_string(S) + "], one per sample of " +
                                  "/events/offsets, got " + shape_str(inf.dims));
        for (auto l : f.labels)
            if (l < 0) r.fail("/labels", "labels must be non-negative");
    }
    return f;
}

EventStream read_single(const std::string& path) {
    const auto ext = std::filesystem::path(path).extension().string();
    if (ext == ".npz") return read_npz_events(path);
    if (ext == ".npy") return read_npy_events(path);
    throw InputError(path, "", "an event file is .npz, .npy or HDF5 (.h5, .hdf5)");
}

// SpikingJelly's dataset folder (torchvision's DatasetFolder): one folder per class, in sorted
// order, each holding a sample per .npz (or .npy) file, taken in sorted order.
EventFile read_folder(const std::string& dir) {
    namespace fs = std::filesystem;
    EventFile f;
    for (const auto& d : fs::directory_iterator(dir))
        if (d.is_directory()) f.classes.push_back(d.path().filename().string());
    std::sort(f.classes.begin(), f.classes.end());
    for (std::size_t c = 0; c < f.classes.size(); ++c) {
        std::vector<std::string> files;
        for (const auto& e : fs::directory_iterator(fs::path(dir) / f.classes[c])) {
            const auto ext = e.path().extension().string();
            if (e.is_regular_file() && (ext == ".npz" || ext == ".npy"))
                files.push_back(e.path().string());
        }
        std::sort(files.begin(), files.end());
        for (const auto& p : files) {
            f.samples.push_back(read_single(p));
            f.labels.push_back(static_cast<std::int64_t>(c));
        }
    }
    if (f.samples.empty()) throw InputError(dir, "", "no <class>/*.npz event files in this folder");
    return f;
}

}  // namespace

EventFile read_event_file(const std::string& path) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) return read_folder(path);
    std::ifstream in(path, std::ios::binary);
    char m[8] = {};
    in.read(m, 8);
    if (in.gcount() == 8 && std::memcmp(m, "\x89HDF\r\n\x1a\n", 8) == 0)
        return read_h5_events(path);
    EventFile f;
    f.samples.push_back(read_single(path));
    return f;
}

FramesSummary write_frames_file(const std::vector<std::string>& paths, const std::string& out,
                                const FrameRule& r) {
    check_rule(r);
    EventFile all;
    for (const auto& p : paths) {
        EventFile f = read_event_file(p);
        if (!all.samples.empty() && all.labels.empty() != f.labels.empty())
            throw InputError(p, "/labels",
                             "some inputs carry labels and others do not: give them alike");
        for (auto& s : f.samples) all.samples.push_back(std::move(s));
        all.labels.insert(all.labels.end(), f.labels.begin(), f.labels.end());
        if (all.classes.empty()) all.classes = f.classes;
    }
    FramesSummary sum;
    sum.samples = std::ssize(all.samples);
    std::vector<std::vector<float>> frames;
    std::vector<std::int64_t> counts;
    for (const auto& ev : all.samples) {
        std::int64_t T = 0;
        frames.push_back(frame_events(ev, r, T));
        counts.push_back(T);
        sum.timesteps = std::max(sum.timesteps, T);
        sum.events += std::ssize(ev.t);
    }
    all.samples.clear();
    const std::int64_t frame = 2 * r.height * r.width;
    if (sum.timesteps > kMaxBytes / 4 / frame / sum.samples)
        throw OptionError(r.duration > 0 ? "duration" : "frames",
                          std::to_string(sum.samples) + " samples of " +
                              std::to_string(sum.timesteps) + " frames would exceed 8 GiB");
    std::vector<float> data(static_cast<std::size_t>(sum.samples * sum.timesteps * frame), 0.0f);
    for (std::int64_t s = 0; s < sum.samples; ++s)
        std::copy(frames[s].begin(), frames[s].end(), data.begin() + s * sum.timesteps * frame);
    frames.clear();
    h5::write_atomically(out, [&](const std::string& tmp) {
        h5::Writer w(tmp);
        w.write("/frames", data, {sum.samples, sum.timesteps, 2, r.height, r.width});
        w.attr("/frames", "rule",
               r.duration > 0 ? "duration " + std::to_string(r.duration)
                              : std::to_string(r.frames) + " frames split by " +
                                    (r.split_by == SplitBy::number ? "number" : "time"));
        if (r.duration > 0) w.write("/frame_counts", counts, {sum.samples});
        if (!all.labels.empty()) w.write("/labels", all.labels, {sum.samples});
        if (!all.classes.empty())
            w.write_strings("/classes", all.classes, {std::ssize(all.classes)});
        w.close();
    });
    return sum;
}

}  // namespace ternion
