#include "models/inputs.hpp"

#include <zlib.h>

#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "sim/h5io.hpp"
#include "sim/rng.hpp"

namespace ternion {

Encoding parse_encoding(const std::string& s) {
    if (s == "direct") return Encoding::direct;
    if (s == "poisson") return Encoding::poisson;
    if (s == "latency") return Encoding::latency;
    throw OptionError("encoding", "must be direct, poisson or latency (got '" + s + "')");
}

const char* encoding_name(Encoding e) {
    switch (e) {
        case Encoding::direct:
            return "direct";
        case Encoding::poisson:
            return "poisson";
        case Encoding::latency:
            return "latency";
    }
    return "?";
}

namespace {

constexpr std::int64_t kMaxInputBytes = std::int64_t{8} << 30;

std::vector<std::int64_t> read_labels(const h5::Reader& r, std::int64_t samples) {
    if (!r.exists("/labels")) return {};
    h5::DatasetInfo inf;
    auto l = r.read_ints("/labels", &inf);
    if (inf.dims.size() != 1 || inf.dims[0] != samples)
        r.fail("/labels",
               "expected shape [" + std::to_string(samples) + "], got " + shape_str(inf.dims));
    for (auto v : l)
        if (v < 0) r.fail("/labels", "labels must be non-negative");
    return l;
}

// Spike tensors, kept as per-(sample, step) event lists so replay costs O(events).
class SpikeInput final : public InputSource {
  public:
    explicit SpikeInput(const h5::Reader& r) : path_(r.path()) {
        auto inf = r.info("/spikes");
        if (inf.kind != h5::Kind::integer) r.fail("/spikes", "expected an integer (int8) dataset");
        r.check_storage("/spikes");
        if (inf.dims.size() < 3)
            r.fail("/spikes", "expected [samples, T, ...shape], got " + shape_str(inf.dims));
        std::int64_t total = 1;
        for (auto d : inf.dims) {
            if (d <= 0) r.fail("/spikes", "empty dimension in " + shape_str(inf.dims));
            if (total > kMaxInputBytes / d) r.fail("/spikes", "absurd size " + shape_str(inf.dims));
            total *= d;
        }
        samples_ = inf.dims[0];
        T_ = inf.dims[1];
        shape_.assign(inf.dims.begin() + 2, inf.dims.end());
        n_ = numel(shape_);
        offsets_.reserve(static_cast<std::size_t>(samples_ * T_ + 1));
        offsets_.push_back(0);
        // Read in slabs of samples to bound memory for large files.
        const std::int64_t per_sample = T_ * n_;
        const std::int64_t chunk = std::max<std::int64_t>(1, (std::int64_t{64} << 20) / per_sample);
        for (std::int64_t s0 = 0; s0 < samples_; s0 += chunk) {
            const std::int64_t cnt = std::min(chunk, samples_ - s0);
            auto raw = r.read_int8_rows("/spikes", s0, cnt);
            for (std::int64_t k = 0; k < cnt * T_; ++k) {
                const std::int8_t* row = raw.data() + k * n_;
                for (std::int64_t i = 0; i < n_; ++i) {
                    const std::int8_t v = row[i];
                    if (v == 0) continue;
                    if (v != 1 && v != -1)
                        r.fail("/spikes", "value " + std::to_string(v) + " at sample " +
                                              std::to_string(s0 + k / T_) + ", step " +
                                              std::to_string(k % T_) + " is not -1, 0 or 1");
                    idx_.push_back(static_cast<std::uint32_t>(i));
                    val_.push_back(v);
                }
                offsets_.push_back(idx_.size());
            }
        }
        labels_ = read_labels(r, samples_);
    }
    std::int64_t num_samples() const override { return samples_; }
    Shape sample_shape() const override { return shape_; }
    std::int64_t fixed_timesteps() const override { return T_; }
    void fill(std::int64_t s, std::int64_t t, std::uint64_t, Activity& out,
              OpCounts&) const override {
        const auto k = static_cast<std::size_t>(s * T_ + t);
        for (auto e = offsets_[k]; e < offsets_[k + 1]; ++e) {
            out.values[idx_[e]] = static_cast<float>(val_[e]);
            out.active.push_back(idx_[e]);
        }
        out.ternary = true;
    }
    const std::vector<std::int64_t>& labels() const override { return labels_; }
    std::string describe() const override { return path_; }

  private:
    std::string path_;
    std::int64_t samples_ = 0, T_ = 0, n_ = 0;
    Shape shape_;
    std::vector<std::uint64_t> offsets_;
    std::vector<std::uint32_t> idx_;
    std::vector<std::int8_t> val_;
    std::vector<std::int64_t> labels_;
};

class AnalogInput final : public InputSource {
  public:
    // Data already read and checked (IDX files): [samples, ...shape] row-major.
    AnalogInput(std::string path, Shape shape, std::vector<float> data,
                std::vector<std::int64_t> labels, const InputOptions& o)
        : path_(std::move(path)),
          enc_(o.encoding),
          T_(o.timesteps),
          shape_(std::move(shape)),
          data_(std::move(data)),
          labels_(std::move(labels)) {
        n_ = numel(shape_);
        samples_ = static_cast<std::int64_t>(data_.size()) / n_;
    }
    AnalogInput(const h5::Reader& r, const InputOptions& o)
        : path_(r.path()), enc_(o.encoding), T_(o.timesteps) {
        auto inf = r.info("/data");
        if (inf.kind != h5::Kind::floating && inf.kind != h5::Kind::integer)
            r.fail("/data", "expected a numeric (float32) dataset");
        if (inf.dims.size() < 2)
            r.fail("/data", "expected [samples, ...shape], got " + shape_str(inf.dims));
        std::int64_t total = 1;
        for (auto d : inf.dims) {
            if (d <= 0) r.fail("/data", "empty dimension in " + shape_str(inf.dims));
            if (total > kMaxInputBytes / 4 / d)
                r.fail("/data", "absurd size " + shape_str(inf.dims));
            total *= d;
        }
        samples_ = inf.dims[0];
        shape_.assign(inf.dims.begin() + 1, inf.dims.end());
        n_ = numel(shape_);
        data_ = r.read_floats("/data");
        for (std::size_t k = 0; k < data_.size(); ++k)
            if (!std::isfinite(data_[k]))
                r.fail("/data",
                       "NaN or Inf at sample " + std::to_string(static_cast<std::int64_t>(k) / n_) +
                           ", element " + std::to_string(static_cast<std::int64_t>(k) % n_));
        labels_ = read_labels(r, samples_);
    }
    std::int64_t num_samples() const override { return samples_; }
    Shape sample_shape() const override { return shape_; }
    void fill(std::int64_t s, std::int64_t t, std::uint64_t seed, Activity& out,
              OpCounts& ops) const override {
        const float* x = data_.data() + s * n_;
        out.ternary = true;
        for (std::int64_t i = 0; i < n_; ++i) {
            float v = 0.0f;
            const float a = std::min(std::fabs(x[i]), 1.0f);
            const float sign = x[i] < 0 ? -1.0f : 1.0f;
            switch (enc_) {
                case Encoding::direct:
                    v = x[i];
                    break;
                case Encoding::poisson:
                    // Bernoulli(|x|) per step, polarity sign(x); keyed RNG: thread-independent.
                    if (a > 0 && counter_uniform(seed, static_cast<std::uint64_t>(s),
                                                 static_cast<std::uint64_t>(t),
                                                 static_cast<std::uint64_t>(i)) < a)
                        v = sign;
                    break;
                case Encoding::latency:
                    // One spike at step round((1 - |x|) (T - 1)): strong inputs fire first.
                    if (a > 0 && t == static_cast<std::int64_t>(
                                          std::lround((1.0f - a) * static_cast<float>(T_ - 1))))
                        v = sign;
                    break;
            }
            if (v != 0.0f) {
                out.values[static_cast<std::size_t>(i)] = v;
                out.active.push_back(static_cast<std::uint32_t>(i));
                if (v != 1.0f && v != -1.0f) out.ternary = false;
            }
        }
        if (enc_ != Encoding::direct) ops.cmp += static_cast<std::uint64_t>(n_);
    }
    const std::vector<std::int64_t>& labels() const override { return labels_; }
    std::string describe() const override { return path_; }

  private:
    std::string path_;
    Encoding enc_;
    std::int64_t T_, samples_ = 0, n_ = 0;
    Shape shape_;
    std::vector<float> data_;
    std::vector<std::int64_t> labels_;
};

// ---------------------------------------------------------------------------------------------
// IDX (yann.lecun.com/exdb/mnist, github.com/zalandoresearch/fashion-mnist): a big-endian header
// 0x00 0x00 <type> <ndims>, ndims uint32 sizes, then the values row-major. gzip or raw, read
// through zlib (which passes raw files through). Only unsigned bytes (type 0x08) are read.

class IdxFile {
  public:
    explicit IdxFile(const std::string& path) : path_(path) {
        // gzopen on a missing file gives no reason: check first, as the HDF5 reader does.
        std::error_code ec;
        if (!std::filesystem::exists(path, ec)) throw InputError(path, "", "no such file");
        if (std::filesystem::is_directory(path, ec)) throw InputError(path, "", "is a directory");
        gz_ = gzopen(path.c_str(), "rb");
        if (!gz_) throw InputError(path, "", "cannot open");
    }
    ~IdxFile() {
        if (gz_) gzclose(gz_);
    }
    IdxFile(const IdxFile&) = delete;
    IdxFile& operator=(const IdxFile&) = delete;

    // Reads exactly n bytes; `field` names what is being read in the error.
    void read(void* dst, std::size_t n, const char* field) {
        auto* p = static_cast<unsigned char*>(dst);
        std::size_t got = 0;
        while (got < n) {
            const auto want = static_cast<unsigned>(std::min<std::size_t>(n - got, 1u << 30));
            const int k = gzread(gz_, p + got, want);
            if (k < 0) stream_error();
            if (k == 0) {
                check_stream();
                throw InputError(path_, field,
                                 "truncated: expected " + std::to_string(n) + " bytes, found " +
                                     std::to_string(got));
            }
            got += static_cast<std::size_t>(k);
        }
    }
    // The header: [dims], checked against the expected type, rank and a size cap (elements).
    std::vector<std::int64_t> header(int want_rank_min, int want_rank_max, const char* what,
                                     std::int64_t max_elements) {
        std::array<unsigned char, 4> m{};
        read(m.data(), 4, "magic");
        char buf[16];
        std::snprintf(buf, sizeof buf, "0x%02X%02X%02X%02X", m[0], m[1], m[2], m[3]);
        if (m[0] != 0 || m[1] != 0 || m[3] < want_rank_min || m[3] > want_rank_max)
            throw InputError(path_, "magic",
                             std::string("found ") + buf + ", not the header of an IDX " + what +
                                 " file (0x000008" + (want_rank_min == 1 ? "01" : "03") + ")");
        if (m[2] != 0x08)
            throw InputError(path_, "magic",
                             std::string("found ") + buf +
                                 ": only unsigned-byte IDX files (type 0x08) are read");
        std::vector<std::int64_t> dims(m[3]);
        std::int64_t total = 1;
        for (std::size_t i = 0; i < dims.size(); ++i) {
            std::array<unsigned char, 4> d{};
            read(d.data(), 4, "dims");
            const std::uint32_t v = (std::uint32_t{d[0]} << 24) | (std::uint32_t{d[1]} << 16) |
                                    (std::uint32_t{d[2]} << 8) | std::uint32_t{d[3]};
            dims[i] = static_cast<std::int64_t>(v);
            if (v == 0) throw InputError(path_, "dims", "dimension " + std::to_string(i) + " is 0");
            if (total > max_elements / dims[i])
                throw InputError(path_, "dims",
                                 "absurd size " + shape_str(dims) + " (more than " +
                                     std::to_string(max_elements) + " values)");
            total *= dims[i];
        }
        return dims;
    }
    // After the values: nothing may follow.
    void expect_end() {
        unsigned char c = 0;
        const int k = gzread(gz_, &c, 1);
        if (k < 0) stream_error();
        if (k > 0) throw InputError(path_, "data", "trailing bytes after the values");
        check_stream();
    }

  private:
    // zlib's message, without the path it puts in front.
    std::string zlib_message(int& err) const {
        std::string m = gzerror(gz_, &err);
        if (m.rfind(path_ + ": ", 0) == 0) m.erase(0, path_.size() + 2);
        return m;
    }
    [[noreturn]] void stream_error() {
        int err = 0;
        throw InputError(path_, "gzip", "corrupt compressed stream: " + zlib_message(err));
    }
    void check_stream() {
        int err = 0;
        const std::string msg = zlib_message(err);
        if (err != Z_OK && err != Z_STREAM_END)
            throw InputError(path_, "gzip", "corrupt compressed stream: " + msg);
    }
    std::string path_;
    gzFile gz_ = nullptr;
};

std::unique_ptr<InputSource> open_idx(const std::string& path, const InputOptions& o) {
    IdxFile f(path);
    auto dims = f.header(2, 4, "images", kMaxInputBytes / 4);
    const std::int64_t samples = dims[0];
    Shape shape(dims.begin() + 1, dims.end());
    if (shape.size() == 2) shape.insert(shape.begin(), 1);  // [H, W] images: one channel
    const std::int64_t n = numel(shape);
    std::vector<unsigned char> raw(static_cast<std::size_t>(samples * n));
    f.read(raw.data(), raw.size(), "data");
    f.expect_end();
    std::vector<float> data(raw.size());
    for (std::size_t k = 0; k < raw.size(); ++k) data[k] = static_cast<float>(raw[k]) / 255.0f;

    std::string lpath = o.labels;
    if (lpath.empty()) {
        std::error_code ec;
        const std::string sib = idx_sibling_labels(path);
        if (!sib.empty() && std::filesystem::is_regular_file(sib, ec)) lpath = sib;
    }
    std::vector<std::int64_t> labels;
    if (!lpath.empty()) {
        IdxFile lf(lpath);
        auto ld = lf.header(1, 1, "labels", kMaxInputBytes);
        if (ld[0] != samples)
            throw InputError(lpath, "dims",
                             std::to_string(ld[0]) + " labels for " + std::to_string(samples) +
                                 " images in " + path);
        std::vector<unsigned char> l(static_cast<std::size_t>(samples));
        lf.read(l.data(), l.size(), "data");
        lf.expect_end();
        labels.assign(l.begin(), l.end());
    }
    return std::make_unique<AnalogInput>(path, shape, std::move(data), std::move(labels), o);
}

}  // namespace

bool looks_like_idx(const std::string& path) {
    // By name ("...-idx3-ubyte", "x.idx"): then a damaged header is reported as IDX's.
    std::string name = std::filesystem::path(path).filename().string();
    for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (name.find("idx") != std::string::npos || name.find("ubyte") != std::string::npos)
        return true;
    std::ifstream f(path, std::ios::binary);
    unsigned char m[4] = {0xFF, 0xFF, 0xFF, 0xFF};
    if (!f.read(reinterpret_cast<char*>(m), 4)) return false;
    if (m[0] == 0x1F && m[1] == 0x8B) return true;  // gzip
    const bool type_ok = m[2] == 0x08 || m[2] == 0x09 || (m[2] >= 0x0B && m[2] <= 0x0E);
    return m[0] == 0 && m[1] == 0 && type_ok && m[3] >= 1 && m[3] <= 4;
}

std::string idx_sibling_labels(const std::string& images_path) {
    std::filesystem::path p(images_path);
    std::string name = p.filename().string();
    const auto at = name.rfind("images");
    if (at == std::string::npos) return "";
    name.replace(at, 6, "labels");
    const auto r = name.find("idx3", at);
    if (r != std::string::npos) name.replace(r, 4, "idx1");
    return (p.parent_path() / name).string();
}

std::string fashion_mnist_test_images() {
    const std::string p = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz";
    std::error_code ec;
    if (!std::filesystem::is_regular_file(p, ec))
        throw InputError(p, "",
                         "not found: install Debian's dataset-fashion-mnist "
                         "(tools/install_deps.sh), or pass --input");
    return p;
}

std::unique_ptr<InputSource> open_input(const std::string& path, const InputOptions& o) {
    if (looks_like_idx(path)) return open_idx(path, o);
    if (!o.labels.empty())
        throw OptionError("labels", "applies to IDX images; an HDF5 input carries /labels");
    h5::Reader r(path);
    const bool sp = r.exists("/spikes"), an = r.exists("/data");
    if (sp && an) r.fail("", "has both /spikes and /data: keep one");
    if (sp) return std::make_unique<SpikeInput>(r);
    if (an) return std::make_unique<AnalogInput>(r, o);
    r.fail("", "no /spikes or /data dataset");
}

std::uint64_t encode_file(const std::string& in_path, const std::string& out_path, Encoding enc,
                          std::int64_t T, std::uint64_t seed, const std::string& labels_path) {
    if (T <= 0) throw OptionError("timesteps", "must be positive");
    if (T > 1000000) throw OptionError("timesteps", "absurdly large");
    InputOptions o{enc, T, labels_path};
    auto src = open_input(in_path, o);
    if (src->fixed_timesteps() > 0) throw InputError(in_path, "/spikes", "is already a spike file");
    if (enc == Encoding::direct)
        throw OptionError("encoding", "direct coding is analog: choose poisson or latency");
    const std::int64_t S = src->num_samples(), n = numel(src->sample_shape());
    if (S * T * n > kMaxInputBytes) throw OptionError("timesteps", "output would exceed 8 GiB");
    std::vector<std::int8_t> out(static_cast<std::size_t>(S * T * n), 0);
    std::uint64_t spikes = 0;
    Activity a;
    a.resize(n);
    OpCounts ops;
    for (std::int64_t s = 0; s < S; ++s)
        for (std::int64_t t = 0; t < T; ++t) {
            a.clear();
            src->fill(s, t, seed, a, ops);
            for (auto i : a.active) {
                out[static_cast<std::size_t>((s * T + t) * n + i)] =
                    static_cast<std::int8_t>(a.values[i]);
                ++spikes;
            }
        }
    Shape dims{S, T};
    auto sh = src->sample_shape();
    dims.insert(dims.end(), sh.begin(), sh.end());
    h5::write_atomically(out_path, [&](const std::string& tmp) {
        h5::Writer w(tmp);
        w.write("/spikes", out, dims);
        w.attr("/spikes", "encoding", std::string(encoding_name(enc)));
        w.attr("/spikes", "seed", static_cast<std::int64_t>(seed));
        w.attr("/spikes", "source", in_path);
        if (!src->labels().empty()) w.write("/labels", src->labels(), {S});
        w.close();
    });
    return spikes;
}

}  // namespace ternion
