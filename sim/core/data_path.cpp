#include "sim/core/data_path.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace ternion {

std::string executable_dir() {
    std::error_code ec;
    auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec) return {};
    return exe.parent_path().string();
}

namespace {

// The file of the binary this code is linked into: the executable for the CLI, the extension
// module for the Python bindings (installed under <prefix>/lib/python3.X/dist-packages/ternion).
std::filesystem::path own_binary() {
    Dl_info info{};
    if (::dladdr(reinterpret_cast<void*>(&executable_dir), &info) == 0 || !info.dli_fname)
        return {};
    std::error_code ec;
    auto p = std::filesystem::canonical(info.dli_fname, ec);
    return ec ? std::filesystem::path() : p;
}

}  // namespace

std::vector<std::string> data_search_dirs(const char* env_var, const std::string& sub,
                                          const std::string& build_fallback) {
    if (env_var)
        if (const char* e = std::getenv(env_var); e && *e) return {e};
    if (const char* d = std::getenv("TERNION_DATA_DIR"); d && *d)
        return {(std::filesystem::path(d) / sub).string()};
    std::vector<std::string> dirs;
    // A library loaded by another program (python3) looks beside its own prefix instead.
    if (auto self = own_binary(); !self.empty() && self.parent_path() != executable_dir())
        for (auto up = self.parent_path(); up.has_relative_path(); up = up.parent_path()) {
            std::error_code ec;
            if (!std::filesystem::is_directory(up / "share" / "ternion", ec)) continue;
            dirs.push_back((up / "share" / "ternion" / sub).string());
            break;
        }
    if (auto exe = executable_dir(); !exe.empty())
        dirs.push_back(
            (std::filesystem::path(exe).parent_path() / "share" / "ternion" / sub).string());
    if (!build_fallback.empty()) dirs.push_back(build_fallback);
    return dirs;
}

std::string find_data_dir(const std::vector<std::string>& dirs) {
    for (const auto& d : dirs) {
        std::error_code ec;
        if (std::filesystem::is_directory(d, ec)) return d;
    }
    return {};
}

std::string join_dirs(const std::vector<std::string>& dirs) {
    std::string s;
    for (const auto& d : dirs) s += (s.empty() ? "" : ", ") + d;
    return s;
}

}  // namespace ternion
