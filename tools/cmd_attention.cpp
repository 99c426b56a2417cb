#include <cstdio>

#include "tools/commands.hpp"

namespace ternion::cli {

int cmd_attention(const Args&) {
    std::fprintf(stderr, "ternion: error: 'attention' is not available in this build yet\n");
    return 2;
}

}  // namespace ternion::cli
