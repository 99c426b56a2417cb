#include <cstdio>

#include "tools/commands.hpp"

namespace ternion::cli {

int cmd_profiles(const Args&) {
    std::fprintf(stderr, "ternion: error: 'profiles' is not available in this build yet\n");
    return 2;
}

}  // namespace ternion::cli
