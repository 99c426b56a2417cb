// Subcommands of the `ternion` CLI. Each takes the arguments after its own name and returns
// the process exit code; errors derived from ternion::Error propagate to main().
#pragma once
#include <string>
#include <vector>

namespace ternion::cli {

using Args = std::vector<std::string>;

int cmd_run(const Args& args);        // cmd_run.cpp
int cmd_info(const Args& args);       // cmd_info.cpp
int cmd_encode(const Args& args);     // cmd_encode.cpp
int cmd_profiles(const Args& args);   // cmd_profiles.cpp
int cmd_attention(const Args& args);  // cmd_attention.cpp
int cmd_bench(const Args& args);      // cmd_bench.cpp
int cmd_trace(const Args& args);      // cmd_trace.cpp
int cmd_analyze(const Args& args);    // cmd_analyze.cpp
int cmd_quantize(const Args& args);   // cmd_quantize.cpp
int cmd_frames(const Args& args);     // cmd_frames.cpp
int cmd_map(const Args& args);        // cmd_map.cpp

}  // namespace ternion::cli
