// Several processes on one run (`mpirun -n K ternion run ...`): each simulates a contiguous
// shard of the samples, and rank 0 receives the results and the trace rows, merged so that
// they equal one process's run of the whole range. Built on MPI when TERNION_MPI is on
// (distributed_mpi.cpp); otherwise, or when the process was not started by an MPI launcher,
// every function here describes a job of one process (distributed_serial.cpp). This header
// includes no MPI header.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "sim/core/engine.hpp"
#include "sim/core/shard.hpp"
#include "sim/io/trace.hpp"

namespace ternion::dist {

using ternion::Shard;
using ternion::shard_of;

bool built_with_mpi();
// Whether an MPI launcher (mpirun, mpiexec, srun) started this process (its environment).
bool launched_by_mpi();
// Starts MPI when built with it and launched by an MPI launcher; no-op otherwise.
void init(int* argc, char*** argv);
// Ends MPI if init() started it.
void finalize();
bool active();  // init() started MPI
int rank();     // 0 without MPI
int ranks();    // 1 without MPI
// Processes of this job on this machine (1 without MPI).
int local_ranks();
// Ends every process of the job at once with `code` (std::exit without MPI).
[[noreturn]] void abort(int code);

// An error reported the same way by every process: its exit code and its one line.
struct Failure {
    int code = 1;
    std::string line;
};

// Collective: every rank passes its own failure, if any, and gets the one of the lowest
// failing rank, or none. `own_s` is how long this rank's part took: a rank that waits here
// longer than TERNION_MPI_TIMEOUT seconds (default 300) plus twice that for the others ends
// the job (abort), so a hung rank cannot hang the rest.
std::optional<Failure> agree(const std::optional<Failure>& mine, double own_s);

// Collective: the largest of every rank's `v`.
double max_over_ranks(double v);
// Collective: waits for every rank; returns the seconds waited.
double barrier();

// Collective: sends every rank's result to rank 0, which returns the merge in rank (sample)
// order: counts summed, per-sample vectors concatenated, the tallies summed sample by sample
// as one process's run sums them (the shards must have run with keep_sample_sums), simulate_s
// the longest shard's. Other ranks get their own result back.
RunResult reduce(RunResult local);

// Collective: every rank's held trace rows go to rank 0's recorder, which holds every row.
void gather_trace(TraceRecorder& rec);

// A progress bar on rank 0's terminal over the samples of all ranks. Every rank counts its
// finished samples in counter() (RunConfig::samples_done); finish() (collective, also run by
// the destructor) waits for every rank's last count.
class Progress {
  public:
    Progress(std::int64_t total, bool show);
    ~Progress();
    Progress(const Progress&) = delete;
    Progress& operator=(const Progress&) = delete;
    std::atomic<std::int64_t>* counter() { return &done_; }
    void finish();

  private:
    struct Impl;
    std::atomic<std::int64_t> done_{0};
    std::unique_ptr<Impl> impl_;
};

}  // namespace ternion::dist
