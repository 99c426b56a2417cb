// In-process check of an HDF5 file's global heap collections (the "GCOL" blocks that hold
// variable-length strings), before libhdf5 parses them. libhdf5 1.10 walks a collection's
// objects by their size fields and does not stop on a zero-sized step, so one damaged size
// makes it loop forever when a string is read (H5HG_read). The walk below is the same one, with
// every step checked, over the raw bytes (HDF5 file format specification, "Global Heap").
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <string_view>

#include "sim/core/error.hpp"
#include "sim/io/h5vet.hpp"

namespace ternion::h5 {

namespace {

std::uint64_t read_le(const unsigned char* p, int bytes) {
    std::uint64_t v = 0;
    for (int k = bytes - 1; k >= 0; --k) v = (v << 8) | p[k];
    return v;
}

std::uint64_t align8(std::uint64_t n) {
    return (n + 7) & ~std::uint64_t{7};
}

// The file's "size of lengths" from a superblock at byte 0 (versions 0-3), or 0 when there is
// none there (a user block moves it; the child process still vets such files).
int size_of_lengths(std::string_view f) {
    static constexpr char kSignature[] = "\x89HDF\r\n\x1a\n";
    if (f.size() < 16 || f.substr(0, 8) != std::string_view(kSignature, 8)) return 0;
    const auto version = static_cast<unsigned char>(f[8]);
    const auto l = static_cast<unsigned char>(version <= 1 ? f[14] : f[10]);
    return l == 2 || l == 4 || l == 8 ? l : 0;
}

// Why the collection at `at` is damaged, or empty when its objects tile it exactly.
std::string walk_collection(std::string_view f, std::size_t at, int L) {
    const auto* base = reinterpret_cast<const unsigned char*>(f.data());
    const std::uint64_t header = align8(8 + static_cast<std::uint64_t>(L));
    const std::uint64_t size = read_le(base + at + 8, L);
    if (size < header || size > f.size() - at)
        return "declares " + std::to_string(size) + " bytes, the file has " +
               std::to_string(f.size() - at) + " from there";
    const std::uint64_t obj_header = align8(8 + static_cast<std::uint64_t>(L));
    const std::uint64_t end = at + size;
    std::uint64_t p = at + header;
    while (p < end) {
        if (p + obj_header > end) break;  // a tail too small for an object: free space
        const auto index = read_le(base + p, 2);
        const std::uint64_t object = read_le(base + p + 8, L);
        // A free-space object (index 0) counts its header in its size; others do not.
        const std::uint64_t need = index > 0 ? obj_header + align8(object) : object;
        if (need == 0 || need > end - p)
            return "object at byte " + std::to_string(p) + " has size " + std::to_string(object) +
                   ", which does not fit the collection's " + std::to_string(size) + " bytes";
        p += need;
    }
    return {};
}

// Whether a collection header starts at `at`: the signature, version 1, three zero bytes.
bool collection_at(std::string_view f, std::size_t at, int L) {
    return at + 8 + static_cast<std::size_t>(L) <= f.size() && f.compare(at, 4, "GCOL") == 0 &&
           f[at + 4] == 1 && f[at + 5] == 0 && f[at + 6] == 0 && f[at + 7] == 0;
}

class Mapping {
  public:
    explicit Mapping(const std::string& path) {
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) return;
        struct stat st {};
        if (::fstat(fd, &st) == 0 && st.st_size > 0) {
            size_ = static_cast<std::size_t>(st.st_size);
            void* m = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
            if (m != MAP_FAILED) data_ = static_cast<const char*>(m);
        }
        ::close(fd);
    }
    ~Mapping() {
        if (data_) ::munmap(const_cast<char*>(data_), size_);
    }
    Mapping(const Mapping&) = delete;
    Mapping& operator=(const Mapping&) = delete;
    std::string_view bytes() const { return data_ ? std::string_view(data_, size_) : ""; }

  private:
    const char* data_ = nullptr;
    std::size_t size_ = 0;
};

}  // namespace

void check_global_heaps(const std::string& path) {
    const Mapping m(path);
    const std::string_view f = m.bytes();
    const int L = size_of_lengths(f);
    if (L == 0) return;
    for (std::size_t at = f.find("GCOL"); at != std::string_view::npos;
         at = f.find("GCOL", at + 1)) {
        if (!collection_at(f, at, L)) continue;  // the four letters inside other data
        const std::string why = walk_collection(f, at, L);
        if (!why.empty())
            throw InputError(path, "global heap at byte " + std::to_string(at),
                             why + " (damaged file?)");
    }
}

}  // namespace ternion::h5
