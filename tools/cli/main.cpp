// ternion: run spiking networks the way neuromorphic hardware would, and price each inference.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "sim/core/error.hpp"
#include "sim/io/h5io.hpp"
#include "sim/io/h5vet.hpp"
#include "sim/simd/simd.hpp"
#include "ternion_git_revision.hpp"
#include "tools/cli/cli_dist.hpp"
#include "tools/cli/commands.hpp"

namespace {

// SIGINT, SIGTERM, SIGHUP (the terminal closed), SIGQUIT: drop any half-written output, then die
// by the signal (a non-zero status); an existing output is left as it was.
extern "C" void on_signal(int sig) {
    ternion::h5::on_output_signal(sig);
}

void usage() {
    std::printf(
        "ternion %s (%s): spiking neural network simulator with hardware cost model\n\n"
        "usage: ternion <command> [options]\n\n"
        "commands:\n"
        "  run [MODEL] --input FILE   simulate a model (default: the bundled BSA Transformer)\n"
        "  info MODEL                 nodes, shapes, parameters and connectivity of a model\n"
        "  encode --input F --output F  turn analog data into a spike file\n"
        "  frames EVENTS -o F         frame event-camera streams (x, y, t, p) for run\n"
        "  profiles                   list the hardware profiles\n"
        "  quantize MODEL -o FILE     the integer model a chip would hold (--profile)\n"
        "  map MODEL --chip CHIP      place the model's layers on a chip's cores\n"
        "  attention --kind K ...     run an ANN reference attention on HDF5 data\n"
        "  bench attention ...        time an attention forward pass\n"
        "  trace info FILE            summarise a trace file\n"
        "  analyze causal|depth|imf   analysis tools for attention\n"
        "  version                    print the version\n\n"
        "Run `ternion <command> --help` for the options of a command.\n",
        TERNION_VERSION, TERNION_GIT_REV);
}

// Runs one command; errors become one line on stderr and an exit code. In a job of several
// processes an error they agreed on (AgreedFailure) is printed by rank 0 alone; any other ends
// the whole job (dist::abort), as no other process may know of it.
int dispatch(const std::string& cmd, const ternion::cli::Args& args) {
    using namespace ternion::cli;
    try {
        if (cmd == "run") return cmd_run(args);
        if (cmd == "info") return cmd_info(args);
        if (cmd == "encode") return cmd_encode(args);
        if (cmd == "profiles") return cmd_profiles(args);
        if (cmd == "attention") return cmd_attention(args);
        if (cmd == "bench") return cmd_bench(args);
        if (cmd == "trace") return cmd_trace(args);
        if (cmd == "analyze") return cmd_analyze(args);
        if (cmd == "quantize") return cmd_quantize(args);
        if (cmd == "frames") return cmd_frames(args);
        if (cmd == "map") return cmd_map(args);
        if (cmd == "version" || cmd == "--version") {
            std::printf("ternion %s (%s)%s\n", TERNION_VERSION, TERNION_GIT_REV,
                        ternion::dist::built_with_mpi() ? ", with MPI" : "");
            // The kernels a run uses, and the CPU's best (TERNION_ISA may force a lower one).
            std::printf("kernels: %s; this CPU runs up to %s\n",
                        ternion::simd::level_name(ternion::simd::level()),
                        ternion::simd::level_name(ternion::simd::detect()));
            return 0;
        }
        std::fprintf(stderr, "ternion: error: unknown command '%s' (see `ternion --help`)\n",
                     cmd.c_str());
        return 2;
    } catch (const AgreedFailure& f) {
        if (ternion::dist::rank() == 0) std::fprintf(stderr, "%s\n", f.failure.line.c_str());
        return f.failure.code;
    } catch (...) {
        const auto f = describe_error(std::current_exception());
        std::fprintf(stderr, "%s\n", f.line.c_str());
        if (ternion::dist::ranks() > 1) ternion::dist::abort(f.code);
        return f.code;
    }
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") ||
        !std::strcmp(argv[1], "help")) {
        usage();
        return argc < 2 ? 2 : 0;
    }
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) std::signal(sig, on_signal);
    // Every HDF5 file the user names is first read in a child process (sim/io/h5vet.hpp).
    const char* trust = std::getenv("TERNION_TRUST_HDF5");
    ternion::h5::set_vetting(!(trust && std::strcmp(trust, "1") == 0));
    const std::string cmd = argv[1];
    // Only `run` splits its work across the processes of an MPI job; any other command started
    // by mpirun runs whole in each process.
    if (cmd == "run") ternion::dist::init(&argc, &argv);
    const ternion::cli::Args args(argv + 2, argv + argc);
    const int code = dispatch(cmd, args);
    ternion::dist::finalize();
    return code;
}
