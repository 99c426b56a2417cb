#include <cstdio>

#include "tools/commands.hpp"

namespace ternion::cli {

int cmd_bench(const Args&) {
    std::fprintf(stderr, "ternion: error: 'bench' is not available in this build yet\n");
    return 2;
}

}  // namespace ternion::cli
