#include "sim/file_guard.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <filesystem>
#include <fstream>

#include "sim/error.hpp"

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
    const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
    if (!fs::is_directory(dir, ec))
        throw OptionError(option, "directory of '" + out + "' does not exist");
    if (::access(dir.c_str(), W_OK | X_OK) != 0)
        throw OptionError(option, "directory of '" + out + "' is not writable");
    // Outputs are written as ".<name>.tmp-<pid>" beside the target, then renamed.
    if (target.filename().string().size() + 32 > NAME_MAX)
        throw OptionError(option, "file name of '" + out + "' is too long (at most " +
                                      std::to_string(NAME_MAX - 32) + " bytes)");
}

std::uint64_t default_memory_limit() {
    const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || page <= 0) return UINT64_MAX;
    return static_cast<std::uint64_t>(0.8 * static_cast<double>(pages) * static_cast<double>(page));
}

std::uint64_t resident_bytes() {
    std::ifstream f("/proc/self/statm");
    std::uint64_t size = 0, resident = 0;
    f >> size >> resident;
    return resident * static_cast<std::uint64_t>(::sysconf(_SC_PAGE_SIZE));
}

}  // namespace ternion
