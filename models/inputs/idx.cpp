// IDX images and labels (MNIST, Fashion-MNIST), gzip-compressed or raw.
#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "models/inputs/inputs.hpp"
#include "models/inputs/sources.hpp"
#include "sim/io/file_guard.hpp"

namespace ternion {

namespace {

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
        file_bytes_ = static_cast<std::int64_t>(std::filesystem::file_size(path, ec));
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
    // An uncompressed file must hold the values its header declares: checked before anything
    // is sized from the header, so a 13-byte file cannot ask for gigabytes. (A gzip stream's
    // length is known only by reading it; its reader grows with what it finds.)
    void check_raw_size(std::size_t rank, std::int64_t values) {
        if (gzdirect(gz_) != 1 || file_bytes_ < 0) return;
        const std::int64_t held = file_bytes_ - 4 - 4 * static_cast<std::int64_t>(rank);
        if (held < values)
            throw InputError(path_, "data",
                             "truncated: the header declares " + std::to_string(values) +
                                 " values, the file holds " +
                                 std::to_string(std::max<std::int64_t>(held, 0)));
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
    std::int64_t file_bytes_ = -1;
};

}  // namespace

std::unique_ptr<InputSource> open_idx(const std::string& path, const InputOptions& o) {
    IdxFile f(path);
    auto dims = f.header(2, 4, "images", kMaxInputBytes / 4);
    const std::int64_t samples = dims[0];
    Shape shape(dims.begin() + 1, dims.end());
    if (shape.size() == 2) shape.insert(shape.begin(), 1);  // [H, W] images: one channel
    const std::int64_t n = numel(shape);
    f.check_raw_size(dims.size(), samples * n);
    // A compressed stream is read through; only the held samples' pixels are kept, and the
    // buffer grows with the rows actually found.
    const Shard held = held_samples(o, samples);
    // The held pixels as floats must fit before anything is inflated (a small gzip stream may
    // declare gigabytes).
    check_memory_limit(static_cast<double>(resident_bytes()) +
                           4.0 * static_cast<double>(held.count) * static_cast<double>(n),
                       o.max_memory, "reading " + path);
    auto data = std::make_shared<std::vector<float>>();
    data->reserve(static_cast<std::size_t>(std::min<std::int64_t>(held.count * n, 1 << 24)));
    // Read in pieces of at most 1 MiB: a truncated stream is found before a buffer the size of
    // one (possibly huge) declared image is allocated.
    std::vector<unsigned char> piece(static_cast<std::size_t>(std::min<std::int64_t>(n, 1 << 20)));
    for (std::int64_t k = 0; k < samples; ++k) {
        const bool keep = k >= held.first && k < held.first + held.count;
        for (std::int64_t done = 0; done < n;) {
            const auto len = static_cast<std::size_t>(std::min<std::int64_t>(n - done, 1 << 20));
            f.read(piece.data(), len, "data");
            if (keep)
                for (std::size_t i = 0; i < len; ++i)
                    data->push_back(static_cast<float>(piece[i]) / 255.0f);
            done += static_cast<std::int64_t>(len);
        }
    }
    f.expect_end();

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
    Shape full{samples};
    full.insert(full.end(), shape.begin(), shape.end());
    auto src = encode_values(path, "/data", full, data->data(), data, o, held);
    src->set_labels(std::move(labels), lpath, "data");
    return src;
}

// Every input is sniffed here before its reader opens it again (and an HDF5 input is opened
// more than once): a FIFO or a device gives its bytes to the first open only, so the reader
// would block or read another stream. Refused by name instead; a regular file behind a link
// (/dev/stdin redirected from a file) is read as usual.
static void check_regular_input(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) return;
    const char* kind = S_ISFIFO(st.st_mode)   ? "a FIFO (pipe)"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                                              : "a device";
    throw InputError(path, "",
                     std::string("is ") + kind +
                         ", not a regular file: an input is read more than once (its format is "
                         "sniffed first); save the stream to a file");
}

bool looks_like_idx(const std::string& path) {
    check_regular_input(path);
    std::ifstream f(path, std::ios::binary);
    unsigned char m[8] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
    f.read(reinterpret_cast<char*>(m), 8);
    const auto got = f.gcount();
    // An HDF5 or .npy signature wins over the name.
    if (got == 8 && std::memcmp(m, "\x89HDF\r\n\x1a\n", 8) == 0) return false;
    if (got >= 6 && std::memcmp(m, "\x93NUMPY", 6) == 0) return false;
    // By name ("...-idx3-ubyte", "x.idx"): then a damaged header is reported as IDX's.
    std::string name = std::filesystem::path(path).filename().string();
    for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (name.find("idx") != std::string::npos || name.find("ubyte") != std::string::npos)
        return true;
    if (got < 4) return false;
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

}  // namespace ternion
