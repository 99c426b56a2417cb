#include "sim/core/thread_team.hpp"

#include <pthread.h>
#include <sched.h>

#include <chrono>

namespace ternion {

namespace {
// How long a member spins before it sleeps: longer than the serial gap between two parallel
// sections of a step, short enough that an idle team soon gives its cores back. Time-based
// because a spin iteration's cost differs widely between machines and hypervisors.
constexpr auto kSpinFor = std::chrono::microseconds(200);
// Spins until `a` differs from `old`, then sleeps on it. No pause instruction: under a
// hypervisor it can trap (pause-loop exiting) and cost far more than the wait. Every few
// thousand polls the spinner yields, so a busy machine can still run the thread we wait for.
template <class T>
T await_change(const std::atomic<T>& a, T old) {
    T now = a.load(std::memory_order_acquire);
    if (now != old) return now;
    const auto until = std::chrono::steady_clock::now() + kSpinFor;
    for (std::uint32_t i = 1;; ++i) {
        now = a.load(std::memory_order_acquire);
        if (now != old) return now;
        if ((i & 1023) == 0) {
            if (std::chrono::steady_clock::now() > until) break;
            std::this_thread::yield();
        }
    }
    while (now == old) {
        a.wait(old, std::memory_order_acquire);
        now = a.load(std::memory_order_acquire);
    }
    return now;
}
}  // namespace

ThreadTeam::ThreadTeam(int size) : size_(size < 1 ? 1 : size) {
    place();
    workers_.reserve(static_cast<std::size_t>(size_ - 1));
    for (int m = 1; m < size_; ++m) workers_.emplace_back([this, m] { work(m); });
}

// Members spin while they wait for each other, so two of them on one core stall each other,
// and the scheduler may leave them so for a whole run. So when the process may use a core per
// member, each member is bound to its own: the caller to the core it runs on, the workers to
// the next allowed ones (the caller's own binding is restored when the team ends).
void ThreadTeam::place() {
    if (size_ < 2) return;
    if (sched_getaffinity(0, sizeof allowed_, &allowed_) != 0 || CPU_COUNT(&allowed_) < size_)
        return;
    const int here = sched_getcpu();
    if (here < 0 || !CPU_ISSET(here, &allowed_)) return;
    if (pthread_getaffinity_np(pthread_self(), sizeof caller_mask_, &caller_mask_) != 0) return;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(here, &one);
    if (pthread_setaffinity_np(pthread_self(), sizeof one, &one) != 0) return;
    bound_caller_ = true;
    start_cpu_.assign(static_cast<std::size_t>(size_), -1);
    int m = 1;
    for (int c = 0; c < CPU_SETSIZE && m < size_; ++c)
        if (c != here && CPU_ISSET(c, &allowed_)) start_cpu_[static_cast<std::size_t>(m++)] = c;
}

ThreadTeam::~ThreadTeam() {
    stop_.store(true, std::memory_order_relaxed);
    epoch_.fetch_add(1, std::memory_order_release);
    epoch_.notify_all();
    for (auto& w : workers_) w.join();
    if (bound_caller_) pthread_setaffinity_np(pthread_self(), sizeof caller_mask_, &caller_mask_);
}

void ThreadTeam::part(int member) {
    const std::int64_t b = n_ * member / size_, e = n_ * (member + 1) / size_;
    if (b >= e) return;
    try {
        call_(fn_, b, e);
    } catch (...) {
        std::lock_guard<std::mutex> lk(error_mu_);
        if (!error_) error_ = std::current_exception();
    }
}

void ThreadTeam::run(std::int64_t n, void* fn, Call call) {
    if (size_ == 1) {
        if (n > 0) call(fn, 0, n);
        return;
    }
    fn_ = fn;
    call_ = call;
    n_ = n;
    pending_.store(size_ - 1, std::memory_order_relaxed);
    epoch_.fetch_add(1, std::memory_order_release);
    epoch_.notify_all();
    part(0);
    for (int left = pending_.load(std::memory_order_acquire); left != 0;)
        left = await_change(pending_, left);
    if (error_) {
        auto e = error_;
        error_ = nullptr;
        std::rethrow_exception(e);
    }
}

void ThreadTeam::work(int member) {
    if (!start_cpu_.empty() && start_cpu_[static_cast<std::size_t>(member)] >= 0) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(start_cpu_[static_cast<std::size_t>(member)], &one);
        pthread_setaffinity_np(pthread_self(), sizeof one, &one);
    }
    std::uint32_t seen = 0;
    for (;;) {
        seen = await_change(epoch_, seen);
        if (stop_.load(std::memory_order_relaxed)) return;
        part(member);
        pending_.fetch_sub(1, std::memory_order_acq_rel);
        pending_.notify_one();
    }
}

}  // namespace ternion
