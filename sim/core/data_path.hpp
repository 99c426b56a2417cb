// Where ternion finds its data files (hardware profiles, bundled models): an environment
// variable, then the share/ternion tree of the prefix ternion is installed in (found from the
// Python extension module or the running executable),
// then the source tree it was built from. So an installed prefix still works after it is moved,
// and build/ternion keeps using the sources.
#pragma once
#include <string>
#include <vector>

namespace ternion {

// The directory of the running executable (from /proc/self/exe), or "" when unknown.
std::string executable_dir();

// The directories searched for data in `sub` (e.g. "profiles"), in order:
//   $<env_var>, when env_var is non-null and set: only it (an explicit choice is not overridden);
//   else $TERNION_DATA_DIR/<sub>, when set: only it;
//   else, for ternion linked into a module another program loads (the Python extension), the
//   share/ternion/<sub> of the nearest ancestor of the module's directory that has one;
//   then <executable dir>/../share/ternion/<sub>, then `build_fallback` (the source tree).
std::vector<std::string> data_search_dirs(const char* env_var, const std::string& sub,
                                          const std::string& build_fallback);

// The first of data_search_dirs(...) that is a directory, or "" when none is.
std::string find_data_dir(const std::vector<std::string>& dirs);

// "a, b, c": the searched directories, for error messages.
std::string join_dirs(const std::vector<std::string>& dirs);

}  // namespace ternion
