// NumPy .npy spike tensors.
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "models/inputs/sources.hpp"

namespace ternion {

namespace {

// NumPy's .npy format (numpy.lib.format): magic, version, a little-endian header length, a
// Python dict literal {'descr', 'fortran_order', 'shape'}, then the C-order data.
class NpyRows final : public RowSource {
  public:
    explicit NpyRows(const std::string& path) : path_(path) {
        f_.open(path, std::ios::binary);
        if (!f_) throw InputError(path, "", "cannot open");
        char magic[8] = {};
        f_.read(magic, 8);
        if (!f_ || std::string(magic, 6) != "\x93NUMPY") fail("not a .npy file (bad magic)");
        const int major = static_cast<unsigned char>(magic[6]);
        std::uint32_t hlen = 0;
        unsigned char b[4] = {};
        if (major == 1) {
            f_.read(reinterpret_cast<char*>(b), 2);
            hlen = b[0] | (b[1] << 8);
        } else if (major == 2 || major == 3) {
            f_.read(reinterpret_cast<char*>(b), 4);
            hlen = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<std::uint32_t>(b[3]) << 24);
        } else {
            fail("unsupported .npy version " + std::to_string(major));
        }
        if (!f_ || hlen > (1u << 20)) fail("truncated or absurd .npy header");
        std::string h(hlen, '\0');
        f_.read(h.data(), hlen);
        if (!f_) fail("truncated .npy header");
        data_offset_ = static_cast<std::int64_t>(f_.tellg());
        const std::string descr = field(h, "descr");
        if (descr.size() < 3 || (descr[0] != '<' && descr[0] != '|' && descr[0] != '='))
            fail("dtype '" + descr + "' is not little-endian");
        kind_ = descr[1];
        size_ = std::atoi(descr.c_str() + 2);
        const bool ok = (kind_ == 'b' && size_ == 1) ||
                        ((kind_ == 'i' || kind_ == 'u') &&
                         (size_ == 1 || size_ == 2 || size_ == 4 || size_ == 8)) ||
                        (kind_ == 'f' && (size_ == 4 || size_ == 8));
        if (!ok) fail("dtype '" + descr + "' is not a bool, integer or float type");
        if (field(h, "fortran_order") != "False")
            fail("Fortran-order arrays are not supported (save a C-order array)");
        std::string shape = field(h, "shape");
        // A tuple of non-negative integers only: "-1" is no dimension of a saved array.
        for (char ch : shape)
            if (!std::isdigit(static_cast<unsigned char>(ch)) && ch != ' ' && ch != ',' &&
                ch != '(' && ch != ')')
                fail("shape " + shape + " is not a tuple of non-negative integers");
        std::int64_t total = 1;
        std::size_t k = 0;
        while (k < shape.size()) {
            if (!std::isdigit(static_cast<unsigned char>(shape[k]))) {
                ++k;
                continue;
            }
            std::int64_t d = 0;
            while (k < shape.size() && std::isdigit(static_cast<unsigned char>(shape[k]))) {
                d = d * 10 + (shape[k] - '0');
                if (d > kMaxInputBytes) fail("absurd shape (" + shape + ")");
                ++k;
            }
            dims_.push_back(d);
            if (d > 0 && total > kMaxInputBytes / d) fail("absurd shape (" + shape + ")");
            total *= d;
        }
        f_.seekg(0, std::ios::end);
        const std::int64_t have = static_cast<std::int64_t>(f_.tellg()) - data_offset_;
        if (have < total * size_)
            fail("holds " + std::to_string(have) + " data bytes, shape " + shape_str(dims_) +
                 " needs " + std::to_string(total * size_));
    }
    Shape dims() const override { return dims_; }
    std::vector<double> block(std::int64_t start, std::int64_t count, std::int64_t start1,
                              std::int64_t count1) const override {
        const std::int64_t inner = numel(dims_) / (dims_[0] * dims_[1]), row = dims_[1] * inner;
        const std::int64_t part = count1 * inner;  // values read from each row
        std::vector<unsigned char> raw(static_cast<std::size_t>(part * size_));
        std::vector<double> v;
        v.reserve(static_cast<std::size_t>(count * part));
        for (std::int64_t r = start; r < start + count; ++r) {
            f_.clear();
            f_.seekg(data_offset_ + (r * row + start1 * inner) * size_);
            f_.read(reinterpret_cast<char*>(raw.data()), static_cast<std::streamsize>(raw.size()));
            if (!f_) fail("read failed (truncated data)");
            for (std::int64_t i = 0; i < part; ++i) v.push_back(at(raw.data() + i * size_));
        }
        return v;
    }
    [[noreturn]] void fail(const std::string& what) const override {
        throw InputError(path_, "", what);
    }
    std::string dataset() const override { return ""; }

  private:
    // The value of `key` in the header dict: a quoted string, or the text up to the next ','
    // outside parentheses.
    std::string field(const std::string& h, const std::string& key) const {
        auto p = h.find("'" + key + "'");
        if (p == std::string::npos) fail("header has no '" + key + "'");
        p = h.find(':', p);
        if (p == std::string::npos) fail("malformed header");
        ++p;
        while (p < h.size() && h[p] == ' ') ++p;
        if (p < h.size() && (h[p] == '\'' || h[p] == '"')) {
            const auto e = h.find(h[p], p + 1);
            if (e == std::string::npos) fail("malformed header");
            return h.substr(p + 1, e - p - 1);
        }
        if (p < h.size() && h[p] == '(') {
            const auto e = h.find(')', p);
            if (e == std::string::npos) fail("malformed header");
            return h.substr(p, e - p + 1);
        }
        auto e = h.find_first_of(",}", p);
        return h.substr(p, e == std::string::npos ? std::string::npos : e - p);
    }
    double at(const unsigned char* p) const {
        switch (kind_) {
            case 'b':
                return *p ? 1.0 : 0.0;
            case 'u': {
                std::uint64_t x = 0;
                std::memcpy(&x, p, static_cast<std::size_t>(size_));
                return static_cast<double>(x);
            }
            case 'i': {
                std::int64_t x = 0;
                std::memcpy(&x, p, static_cast<std::size_t>(size_));
                const int shift = 64 - 8 * size_;
                return static_cast<double>((x << shift) >> shift);  // sign-extend
            }
            default:
                if (size_ == 4) {
                    float x;
                    std::memcpy(&x, p, 4);
                    return x;
                } else {
                    double x;
                    std::memcpy(&x, p, 8);
                    return x;
                }
        }
    }
    std::string path_;
    mutable std::ifstream f_;
    std::int64_t data_offset_ = 0;
    char kind_ = 'f';
    int size_ = 4;
    Shape dims_;
};

}  // namespace

std::unique_ptr<InputSource> open_npy(const std::string& path, const InputOptions& o) {
    NpyRows rows(path);
    return replay_rows(rows, path, o);
}

}  // namespace ternion
