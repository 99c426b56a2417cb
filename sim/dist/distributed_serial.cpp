// sim/dist/distributed.hpp for a build without MPI: a job of one process.
#include <cstdlib>

#include "sim/dist/distributed.hpp"

namespace ternion::dist {

bool built_with_mpi() {
    return false;
}
bool launched_by_mpi() {
    return false;
}
void init(int*, char***) {}
void finalize() {}
bool active() {
    return false;
}
int rank() {
    return 0;
}
int ranks() {
    return 1;
}
int local_ranks() {
    return 1;
}
void abort(int code) {
    std::exit(code);
}
std::optional<Failure> agree(const std::optional<Failure>& mine, double) {
    return mine;
}
double max_over_ranks(double v) {
    return v;
}
double barrier() {
    return 0.0;
}
RunResult reduce(RunResult local) {
    return local;
}
void gather_trace(TraceRecorder&) {}

struct Progress::Impl {};
Progress::Progress(std::int64_t, bool) {}
Progress::~Progress() = default;
void Progress::finish() {}

}  // namespace ternion::dist
