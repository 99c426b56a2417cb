// A fixed team of threads that runs the blocks of one sample's steps. A single large sample
// steps thousands of times per second; waking pool workers for every node of every step costs
// more than the work itself, so team members spin briefly between jobs and only then sleep.
#pragma once
#include <sched.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace ternion {

class ThreadTeam {
  public:
    // `size` members: the calling thread is member 0, plus size - 1 worker threads.
    explicit ThreadTeam(int size);
    ~ThreadTeam();
    ThreadTeam(const ThreadTeam&) = delete;
    ThreadTeam& operator=(const ThreadTeam&) = delete;

    int size() const { return size_; }

    // Calls f(begin, end) over `size()` contiguous parts of [0, n), one per member, and returns
    // when all are done. An exception thrown by any part is rethrown here.
    template <class F>
    void for_parts(std::int64_t n, F&& f) {
        using Fn = std::remove_reference_t<F>;
        auto call = [](void* p, std::int64_t b, std::int64_t e) { (*static_cast<Fn*>(p))(b, e); };
        if constexpr (std::is_trivially_copyable_v<Fn> && sizeof(Fn) <= kJobBytes &&
                      alignof(Fn) <= 64) {
            // A copy in the team's own cache lines: the caller's stack, where the functor
            // lives, is written by the caller all the time, and the members' reads of it would
            // fall into those lines or not depending on where the stack happens to start.
            std::memcpy(job_, &f, sizeof(Fn));
            run(n, job_, call);
        } else {
            run(n, const_cast<void*>(static_cast<const void*>(&f)), call);
        }
    }

  private:
    using Call = void (*)(void*, std::int64_t, std::int64_t);
    void run(std::int64_t n, void* fn, Call call);
    void work(int member);
    void part(int member);
    void place();

    static constexpr std::size_t kJobBytes = 256;
    int size_;
    std::vector<std::thread> workers_;
    alignas(64) unsigned char job_[kJobBytes];
    // The job: written by member 0 before `epoch_` is bumped, read by workers after.
    void* fn_ = nullptr;
    Call call_ = nullptr;
    std::int64_t n_ = 0;
    alignas(64) std::atomic<std::uint32_t> epoch_{0};
    alignas(64) std::atomic<int> pending_{0};
    alignas(64) std::atomic<bool> stop_{false};
    std::mutex error_mu_;
    std::exception_ptr error_;
    std::vector<int> start_cpu_;  // per member, the core it starts on (-1: anywhere)
    cpu_set_t allowed_{}, caller_mask_{};
    bool bound_caller_ = false;
};

}  // namespace ternion
