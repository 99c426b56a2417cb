# Warnings, sanitizers and shared compile settings, applied through one interface target.
# Warnings are ternion's own (BUILD_INTERFACE); the ISA level, -ffp-contract=off and the
# definitions below also reach programs that link the installed libraries.
add_library(ternion_options INTERFACE)
set_target_properties(ternion_options PROPERTIES EXPORT_NAME options)
add_library(ternion::options ALIAS ternion_options)
target_compile_options(ternion_options INTERFACE $<BUILD_INTERFACE:-Wall -Wextra -Wpedantic
                       -Wno-unused-parameter>)
# gcc's spelling; clang's -Wshadow family differs.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(ternion_options INTERFACE $<BUILD_INTERFACE:-Wshadow=local>)
endif()
if(TERNION_WERROR)
    target_compile_options(ternion_options INTERFACE $<BUILD_INTERFACE:-Werror>)
endif()
if(TERNION_SANITIZE)
    string(REPLACE ";" "," _san "${TERNION_SANITIZE}")
    target_compile_options(ternion_options INTERFACE -fsanitize=${_san} -fno-omit-frame-pointer
                           -fno-sanitize-recover=all)
    target_link_options(ternion_options INTERFACE -fsanitize=${_san})
endif()
if(TERNION_FUZZ)
    if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
        message(FATAL_ERROR "TERNION_FUZZ needs clang (-DCMAKE_CXX_COMPILER=clang++)")
    endif()
    # Coverage instrumentation for libFuzzer in every library; the harnesses link its main.
    target_compile_options(ternion_options INTERFACE
                           -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer
                           -fno-sanitize-recover=all)
    target_link_options(ternion_options INTERFACE -fsanitize=address,undefined)
endif()
# Floating-point contraction (FMA) would change rounding between otherwise identical loops;
# the engines' bit-for-bit agreement and the framework cross-checks rely on it being off.
target_compile_options(ternion_options INTERFACE -ffp-contract=off)
# The libraries are also linked into the Python extension, so they are built position
# independent; without interposition, calls inside them stay direct, as in the executable.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(ternion_options INTERFACE $<BUILD_INTERFACE:-fno-semantic-interposition>)
endif()

# The instruction-set level of everything but the vector kernels of sim/simd, which are built
# once per level and chosen at run time. The default, x86-64-v2 (SSE4.2, 2009 onwards), runs on
# every x86-64 server and desktop of the last fifteen years, and the kernels still use AVX2 or
# AVX-512 where the CPU has them. "auto" builds the rest for the build machine's own level too
# (x86-64-v4 or -v3 where it runs them): a little faster there (Eigen's ANN projections: about
# 15-25 % on an AMD EPYC, docs/ann-attention.md), but the binary then needs such a CPU. Any other
# value is a -march value; empty means the compiler's default. One level for every non-kernel
# unit: mixing per-file -mavx2 with baseline code breaks Eigen's aligned allocator across units.
if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64|amd64")
    set(_default_arch "x86-64-v2")
else()
    set(_default_arch "")
endif()
set(TERNION_ARCH "${_default_arch}" CACHE STRING "ISA of the non-kernel code: x86-64-v2 (portable, default on x86-64), auto (the build machine's), a -march value, or empty")
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
    # Not on the kernel objects of sim/simd (target property TERNION_SIMD_LEVEL): they carry
    # their own level's -march.
    target_compile_options(ternion_options INTERFACE
                           "$<$<NOT:$<BOOL:$<TARGET_PROPERTY:TERNION_SIMD_LEVEL>>>:-march=${_arch}>")
    message(STATUS "ternion: compiling for -march=${_arch} (vector kernels for every level)")
endif()
# GCC 12's AVX-512 headers trip -Wuninitialized / -Wmaybe-uninitialized on their own
# _mm512_undefined_ps() (GCC PR 105593, fixed in GCC 13) wherever 16-lane transposes are
# inlined. The warnings are reported at the header's lines, so a forced first include of
# <immintrin.h> with both warnings off silences exactly those lines; everywhere else the
# warnings stay on. TERNION_GCC12_AVX512_FIX: the option, for the units built for AVX-512.
set(TERNION_GCC12_AVX512_FIX "")
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13
   AND CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64|amd64")
    set(_fix "${PROJECT_BINARY_DIR}/ternion_gcc12_avx512.h")
    file(WRITE "${_fix}" "// Generated by cmake/ternion_options.cmake: GCC PR 105593 workaround.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored \"-Wuninitialized\"
#pragma GCC diagnostic ignored \"-Wmaybe-uninitialized\"
#include <immintrin.h>
#pragma GCC diagnostic pop
")
    set(TERNION_GCC12_AVX512_FIX "SHELL:-include ${_fix}")
    if(_arch MATCHES "v4|avx512")
        target_compile_options(ternion_options INTERFACE
            "$<BUILD_INTERFACE:$<$<COMPILE_LANGUAGE:CXX>:${TERNION_GCC12_AVX512_FIX}>>")
    endif()
endif()

# Eigen must not start threads of its own: oneTBB owns parallelism.
target_compile_definitions(ternion_options INTERFACE EIGEN_DONT_PARALLELIZE
                           TERNION_VERSION="${PROJECT_VERSION}")

# The x86-64 levels the hot kernels are compiled for, one chosen at run time (sim/simd,
# attention/ann): 2, 3 and 4 on x86-64; elsewhere one portable build at the compiler's default.
if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64|amd64")
    set(TERNION_SIMD_LEVELS 2 3 4)
    set(TERNION_SIMD_X86 1)
else()
    set(TERNION_SIMD_LEVELS 2)
    set(TERNION_SIMD_X86 0)
endif()

# One object library <prefix>_v<level> of `source` per level, compiled with TERNION_SIMD_LEVEL
# and that level's -march (after ternion_options' flags, so it is the one in force); <out_var>
# receives their objects.
function(ternion_level_objects prefix source out_var)
    set(objects)
    foreach(level IN LISTS TERNION_SIMD_LEVELS)
        set(t ${prefix}_v${level})
        add_library(${t} OBJECT ${source})
        target_link_libraries(${t} PRIVATE ternion_options)
        target_include_directories(${t} PRIVATE ${PROJECT_SOURCE_DIR})
        target_compile_definitions(${t} PRIVATE TERNION_SIMD_LEVEL=${level})
        if(TERNION_SIMD_X86)
            target_compile_options(${t} PRIVATE -march=x86-64-v${level} -mtune=generic)
        endif()
        if(level EQUAL 4 AND TERNION_GCC12_AVX512_FIX)
            target_compile_options(${t} PRIVATE "${TERNION_GCC12_AVX512_FIX}")
        endif()
        set_target_properties(${t} PROPERTIES POSITION_INDEPENDENT_CODE ON
                              TERNION_SIMD_LEVEL ${level})
        list(APPEND objects $<TARGET_OBJECTS:${t}>)
    endforeach()
    set(${out_var} ${objects} PARENT_SCOPE)
endfunction()
