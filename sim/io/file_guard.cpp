#include "sim/io/file_guard.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <filesystem>
#include <fstream>

#include "sim/core/error.hpp"
#include "sim/io/h5io.hpp"

namespace ternion {

namespace {

namespace fs = std::filesystem;

// Same file by identity (hard links, symlinks, "dir/../x") or by canonical path.
bool same_file(const std::string& a, const std::string& b) {
    struct stat sa {};
    struct stat sb {};
    if (::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0)
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    std::error_code ea, eb;
    const auto ca = fs::weakly_canonical(a, ea), cb = fs::weakly_canonical(b, eb);
    return !ea && !eb && ca == cb;
}

}  // namespace

void check_output(const std::string& option, const std::string& out,
                  const std::vector<NamedPath>& inputs) {
    if (out.empty()) throw OptionError(option, "is an empty path");
    for (const auto& in : inputs)
        if (!in.path.empty() && same_file(out, in.path))
            throw OptionError(option, "'" + out + "' is the " + in.option + " file '" + in.path +
                                          "'; refusing to overwrite an input");
    const fs::path target(out);
    std::error_code ec;
    if (!target.has_filename() || fs::is_directory(target, ec))
        throw OptionError(option, "'" + out + "' is a directory, not a file");
    // Outputs replace only regular files: never a device (/dev/null), a FIFO or a socket.
    if (const std::string what = h5::not_a_regular_file(out); !what.empty())
        throw OptionError(
            option, "'" + out + "' is " + what + ", not a regular file; refusing to replace it");
    const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
    if (!fs::is_directory(dir, ec))
        throw OptionError(option, "directory of '" + out + "' does not exist");
    if (::access(dir.c_str(), W_OK | X_OK) != 0)
        throw OptionError(option, "directory of '" + out + "' is not writable");
    // Outputs are written as ".<name>.tmp-<pid>-<random>" beside the target, then renamed.
    if (target.filename().string().size() + 32 > NAME_MAX)
        throw OptionError(option, "file name of '" + out + "' is too long (at most " +
                                      std::to_string(NAME_MAX - 32) + " bytes)");
}

std::uint64_t default_memory_limit() {
    const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || page <= 0) return UINT64_MAX;
    return static_cast<std::uint64_t>(0.8 * static_cast<double>(pages) * static_cast<double>(page));
}

void check_memory_limit(double estimate, std::uint64_t limit, const std::string& what) {
    if (limit == 0) limit = default_memory_limit();
    if (estimate > static_cast<double>(limit))
        throw OptionError("max-memory", what + " needs an estimated " +
                                            std::to_string(static_cast<std::uint64_t>(estimate)) +
                                            " bytes, over the limit of " + std::to_string(limit) +
                                            " bytes");
}

std::uint64_t resident_bytes() {
    std::ifstream f("/proc/self/statm");
    std::uint64_t size = 0, resident = 0;
    f >> size >> resident;
    return resident * static_cast<std::uint64_t>(::sysconf(_SC_PAGE_SIZE));
}

namespace {
struct Declared {
    const h5::Reader* reader;
    double bytes = 0;
};

herr_t add_declared(hid_t root, const char* name, const H5O_info_t* info, void* op) {
    if (info->type != H5O_TYPE_DATASET) return 0;
    auto* d = static_cast<Declared*>(op);
    try {
        d->reader->check_storage(std::string("/") + name);
    } catch (const Error&) {
        return 0;  // declares far more than it stores: the reader refuses it, naming the field
    }
    h5::Handle ds(H5Dopen2(root, name, H5P_DEFAULT), H5Dclose);
    if (!ds) return 0;
    h5::Handle space(H5Dget_space(ds.id()), H5Sclose), type(H5Dget_type(ds.id()), H5Tclose);
    const hssize_t n = H5Sget_simple_extent_npoints(space.id());
    const std::size_t sz = std::max<std::size_t>(4, H5Tget_size(type.id()));
    if (n > 0) d->bytes += static_cast<double>(n) * static_cast<double>(sz);
    return 0;
}
}  // namespace

double declared_bytes(const std::string& h5_path) {
    const h5::Reader r(h5_path);
    Declared d{&r};
    H5Ovisit2(r.file_id(), H5_INDEX_NAME, H5_ITER_INC, add_declared, &d, H5O_INFO_BASIC);
    return d.bytes;
}

}  // namespace ternion
