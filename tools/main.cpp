// ternion: run spiking networks the way neuromorphic hardware would, and price each inference.
#include <boost/program_options/errors.hpp>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

#include "sim/error.hpp"
#include "sim/h5io.hpp"
#include "sim/h5vet.hpp"
#include "ternion_git_revision.hpp"
#include "tools/commands.hpp"

namespace {

// SIGINT/SIGTERM: drop any half-written output, then exit as interrupted.
extern "C" void on_signal(int sig) {
    ternion::h5::remove_temporaries();
    std::signal(sig, SIG_DFL);
    std::raise(sig);
}

void usage() {
    std::printf(
        "ternion %s (%s): spiking neural network simulator with hardware cost model\n\n"
        "usage: ternion <command> [options]\n\n"
        "commands:\n"
        "  run [MODEL] --input FILE   simulate a model (default: the bundled BSA Transformer)\n"
        "  info MODEL                 nodes, shapes, parameters and connectivity of a model\n"
        "  encode --input F --output F  turn analog data into a spike file\n"
        "  profiles                   list the hardware profiles\n"
        "  attention --kind K ...     run an ANN reference attention on HDF5 data\n"
        "  bench attention ...        time an attention forward pass\n"
        "  trace info FILE            summarise a trace file\n"
        "  analyze causal|depth|imf   analysis tools for attention\n"
        "  version                    print the version\n\n"
        "Run `ternion <command> --help` for the options of a command.\n",
        TERNION_VERSION, TERNION_GIT_REV);
}

}  // namespace

int main(int argc, char** argv) {
    using namespace ternion::cli;
    if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") ||
        !std::strcmp(argv[1], "help")) {
        usage();
        return argc < 2 ? 2 : 0;
    }
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    // Every HDF5 file the user names is first read in a child process (sim/h5vet.hpp).
    const char* trust = std::getenv("TERNION_TRUST_HDF5");
    ternion::h5::set_vetting(!(trust && std::strcmp(trust, "1") == 0));
    std::string cmd = argv[1];
    Args args(argv + 2, argv + argc);
    try {
        if (cmd == "run") return cmd_run(args);
        if (cmd == "info") return cmd_info(args);
        if (cmd == "encode") return cmd_encode(args);
        if (cmd == "profiles") return cmd_profiles(args);
        if (cmd == "attention") return cmd_attention(args);
        if (cmd == "bench") return cmd_bench(args);
        if (cmd == "trace") return cmd_trace(args);
        if (cmd == "analyze") return cmd_analyze(args);
        if (cmd == "version" || cmd == "--version") {
            std::printf("ternion %s (%s)\n", TERNION_VERSION, TERNION_GIT_REV);
            return 0;
        }
        std::fprintf(stderr, "ternion: error: unknown command '%s' (see `ternion --help`)\n",
                     cmd.c_str());
        return 2;
    } catch (const ternion::Error& e) {
        std::fprintf(stderr, "ternion: error: %s\n", e.what());
        return 1;
    } catch (const boost::program_options::error& e) {
        std::fprintf(stderr, "ternion: error: %s\n", e.what());
        return 2;
    } catch (const std::bad_alloc&) {
        std::fprintf(stderr, "ternion: error: out of memory\n");
        return 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "ternion: internal error: %s\n", e.what());
        return 3;
    }
}
