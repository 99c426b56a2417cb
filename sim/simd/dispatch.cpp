// Which level's kernels run: the CPU's best, or a lower one that TERNION_ISA asks for.
#include <atomic>
#if TERNION_SIMD_X86
#include <cpuid.h>
#endif
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "sim/simd/simd.hpp"

namespace ternion::simd {

// Each level's table, from sim/simd/kernels.cpp compiled for that level.
namespace v2 {
const Table& table();
}
#if TERNION_SIMD_X86
namespace v3 {
const Table& table();
}
namespace v4 {
const Table& table();
}
#endif

namespace {
// Indexed by the level's number.
#if TERNION_SIMD_X86
constexpr const char* kNames[] = {"", "", "x86-64-v2 (SSE4.2)", "x86-64-v3 (AVX2, FMA)",
                                  "x86-64-v4 (AVX-512)"};
#else
constexpr const char* kNames[] = {"", "", "portable", "", ""};
#endif
constexpr const char* kShort[] = {"", "", "v2", "v3", "v4"};
}  // namespace

const char* level_name(Level l) {
    return kNames[static_cast<int>(l)];
}

const char* short_name(Level l) {
    return kShort[static_cast<int>(l)];
}

Level detect() {
#if TERNION_SIMD_X86
    // libgcc's checks include the operating system's support (XCR0) for the wider registers.
    __builtin_cpu_init();
    // F16C and MOVBE from CPUID leaf 1 (ECX): clang 14's __builtin_cpu_supports lacks both.
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    const bool leaf1 = __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0;
    const bool f16c_movbe = leaf1 && (ecx & bit_F16C) && (ecx & bit_MOVBE);
    const bool v3 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                    __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2") && f16c_movbe;
    const bool v4 = v3 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                    __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
                    __builtin_cpu_supports("avx512vl");
    return v4 ? Level::v4 : v3 ? Level::v3 : Level::v2;
#else
    return Level::v2;
#endif
}

namespace {

Level choose() {
    const Level best = detect();
    const char* env = std::getenv("TERNION_ISA");
    if (!env || !*env) return best;
    std::string s = env;
    if (s.rfind("x86-64-", 0) == 0) s = s.substr(7);
    Level want;
    if (s == "v2")
        want = Level::v2;
    else if (s == "v3")
        want = Level::v3;
    else if (s == "v4")
        want = Level::v4;
    else
        throw std::runtime_error("TERNION_ISA='" + std::string(env) +
                                 "' is not a level: use v2, v3 or v4 (x86-64-v2 ...)");
    if (static_cast<int>(want) > static_cast<int>(best))
        throw std::runtime_error("TERNION_ISA=" + std::string(env) + " asks for " +
                                 level_name(want) + ", but this CPU runs at most " +
                                 level_name(best));
    return want;
}

const Table& table_of(Level l) {
#if TERNION_SIMD_X86
    if (l == Level::v4) return v4::table();
    if (l == Level::v3) return v3::table();
#endif
    (void)l;
    return v2::table();
}

}  // namespace

namespace detail {
std::atomic<const Table*> active{nullptr};

const Table& choose_table() {
    // Racing first calls choose the same table; the first to store it wins, the others agree.
    const Table* t = &table_of(choose());
    active.store(t, std::memory_order_relaxed);
    return *t;
}
}  // namespace detail

}  // namespace ternion::simd
