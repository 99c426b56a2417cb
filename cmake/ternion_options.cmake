# Warnings, sanitizers and shared compile settings, applied through one interface target.
add_library(ternion_options INTERFACE)
target_compile_options(ternion_options INTERFACE -Wall -Wextra -Wpedantic -Wshadow=local
                       -Wno-unused-parameter)
if(TERNION_WERROR)
    target_compile_options(ternion_options INTERFACE -Werror)
endif()
if(TERNION_SANITIZE)
    string(REPLACE ";" "," _san "${TERNION_SANITIZE}")
    target_compile_options(ternion_options INTERFACE -fsanitize=${_san} -fno-omit-frame-pointer
                           -fno-sanitize-recover=all)
    target_link_options(ternion_options INTERFACE -fsanitize=${_san})
endif()
# Floating-point contraction (FMA) would change rounding between otherwise identical loops;
# the engines' bit-for-bit agreement and the framework cross-checks rely on it being off.
target_compile_options(ternion_options INTERFACE -ffp-contract=off)

# One instruction-set level for every translation unit: mixing per-file -mavx2 with baseline
# code breaks Eigen's aligned allocator across units. auto picks the highest level the build
# machine runs: x86-64-v4 (AVX-512 F/BW/CD/DQ/VL: Eigen's 16-lane GEMM kernels, 32 vector
# registers; about 15-25% faster ANN projections than v3 on an AMD EPYC, see
# docs/ann-attention.md), else x86-64-v3 (AVX2 + FMA, 2013 onwards), else the baseline.
# TERNION_ARCH="" builds for the baseline; binaries built for v4 need an AVX-512 machine.
set(TERNION_ARCH "auto" CACHE STRING "Target ISA: auto (x86-64-v4 or -v3 when the build machine runs it), a -march value, or empty")
if(TERNION_ARCH STREQUAL "auto")
    include(CheckCXXSourceRuns)
    set(CMAKE_REQUIRED_FLAGS "-march=x86-64-v4")
    check_cxx_source_runs("#include <immintrin.h>
int main() { __m512 a = _mm512_set1_ps(1.0f); a = _mm512_fmadd_ps(a, a, a); __m512i b = _mm512_set1_epi16(1); b = _mm512_add_epi16(b, b); return _mm512_reduce_add_ps(a) == 32.0f && _mm512_cmpeq_epi16_mask(b, _mm512_set1_epi16(2)) == 0xFFFFFFFFu ? 0 : 1; }"
        TERNION_CAN_RUN_X86_64_V4)
    set(CMAKE_REQUIRED_FLAGS "-march=x86-64-v3")
    check_cxx_source_runs("#include <immintrin.h>
int main() { __m256 a = _mm256_set1_ps(1.0f); a = _mm256_fmadd_ps(a, a, a); return _mm256_cvtss_f32(a) == 2.0f ? 0 : 1; }"
        TERNION_CAN_RUN_X86_64_V3)
    unset(CMAKE_REQUIRED_FLAGS)
    set(_arch "")
    if(TERNION_CAN_RUN_X86_64_V4)
        set(_arch "x86-64-v4")
    elseif(TERNION_CAN_RUN_X86_64_V3)
        set(_arch "x86-64-v3")
    endif()
else()
    set(_arch "${TERNION_ARCH}")
endif()
if(_arch)
    target_compile_options(ternion_options INTERFACE -march=${_arch})
    message(STATUS "ternion: compiling for -march=${_arch}")
endif()
# GCC 12's AVX-512 headers trip -Wmaybe-uninitialized on their own _mm512_undefined_ps()
# (GCC PR 105593, fixed in GCC 13) wherever Eigen's 16-lane transposes are inlined, e.g. in
# every row-major GEMM. Only that compiler and ISA level lose the warning.
if(_arch MATCHES "v4|avx512" AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU"
   AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(ternion_options INTERFACE -Wno-maybe-uninitialized)
endif()

# Eigen must not start threads of its own: oneTBB owns parallelism.
target_compile_definitions(ternion_options INTERFACE EIGEN_DONT_PARALLELIZE
                           TERNION_VERSION="${PROJECT_VERSION}"
                           TERNION_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
