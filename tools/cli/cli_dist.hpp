// The CLI's side of a run split across processes (sim/dist/distributed.hpp): errors turned into
// one line and an exit code the same way on every process, and agreed on collectively.
#pragma once
#include <chrono>
#include <exception>
#include <optional>
#include <type_traits>
#include <utility>

#include "sim/dist/distributed.hpp"

namespace ternion {
struct RunRequest;
}

namespace ternion::cli {

// `ternion run` as one of several processes (run_split.cpp), with the model `compare` (if any)
// run on the same samples, split alike; rank 0 prints the report and the comparison.
int run_split(RunRequest q, std::optional<RunRequest> compare, bool json);
// --threads' default under mpirun: the CPUs this rank may use, shared among the ranks of its
// machine, at least 1.
int threads_per_rank();

// The line main() prints for an exception, and the exit code it returns.
dist::Failure describe_error(std::exception_ptr e);

// An error every process knows of (dist::agree): rank 0 prints it, every rank exits with it.
struct AgreedFailure {
    dist::Failure failure;
};

// Runs `fn` on every process, then agrees on errors: when any process failed, every process
// throws AgreedFailure carrying the lowest failing rank's error. One process alone: just fn().
template <class F>
auto phase(F&& fn) -> decltype(fn()) {
    if (dist::ranks() == 1) return fn();
    const auto t0 = std::chrono::steady_clock::now();
    std::optional<dist::Failure> mine;
    auto seconds = [&] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    try {
        if constexpr (std::is_void_v<decltype(fn())>) {
            fn();
            if (auto f = dist::agree(std::nullopt, seconds())) throw AgreedFailure{*f};
            return;
        } else {
            auto r = fn();
            if (auto f = dist::agree(std::nullopt, seconds())) throw AgreedFailure{*f};
            return r;
        }
    } catch (const AgreedFailure&) {
        throw;
    } catch (...) {
        mine = describe_error(std::current_exception());
    }
    throw AgreedFailure{*dist::agree(mine, seconds())};
}

}  // namespace ternion::cli
