#include <cstdio>

#include "tools/commands.hpp"

namespace ternion::cli {

int cmd_analyze(const Args&) {
    std::fprintf(stderr, "ternion: error: 'analyze' is not available in this build yet\n");
    return 2;
}

}  // namespace ternion::cli
