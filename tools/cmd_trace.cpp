#include <cstdio>

#include "tools/commands.hpp"

namespace ternion::cli {

int cmd_trace(const Args&) {
    std::fprintf(stderr, "ternion: error: 'trace' is not available in this build yet\n");
    return 2;
}

}  // namespace ternion::cli
