// In-register transposes of square blocks of floats, for units compiled with AVX or AVX-512 (the
// v3 and v4 kernels of sim/simd, the CAT FFT where its build has AVX). Always inlined, so no unit
// emits a copy that another unit, built for another level, could link to.
#pragma once
#include <immintrin.h>

namespace ternion::simd {

#if defined(__AVX__)
// r[i] = row i of an 8 x 8 block; afterwards r[j] = its column j.
[[gnu::always_inline]] inline void transpose8(__m256 r[8]) {
    __m256 t[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    __m256 u[8];
    for (int i = 0; i < 8; i += 4) {
        u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
        u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
    // u[4a + b], 128-bit half h: column 4h + b of rows 4a .. 4a + 3.
    for (int b = 0; b < 4; ++b) {
        r[b] = _mm256_permute2f128_ps(u[b], u[4 + b], 0x20);
        r[4 + b] = _mm256_permute2f128_ps(u[b], u[4 + b], 0x31);
    }
}
#endif

#if defined(__AVX512F__)
// r[i] = row i of a 16 x 16 block; afterwards r[j] = its column j.
[[gnu::always_inline]] inline void transpose16(__m512 r[16]) {
    __m512 t[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    // Each 128-bit lane L of r[4a + b] then holds column 4L + b of rows 4a .. 4a + 3.
    for (int i = 0; i < 16; i += 4) {
        r[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
        r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xEE);
        r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
    for (int b = 0; b < 4; ++b) {
        const __m512 even_lo = _mm512_shuffle_f32x4(r[b], r[4 + b], 0x88);
        const __m512 even_hi = _mm512_shuffle_f32x4(r[8 + b], r[12 + b], 0x88);
        const __m512 odd_lo = _mm512_shuffle_f32x4(r[b], r[4 + b], 0xDD);
        const __m512 odd_hi = _mm512_shuffle_f32x4(r[8 + b], r[12 + b], 0xDD);
        t[b] = _mm512_shuffle_f32x4(even_lo, even_hi, 0x88);
        t[8 + b] = _mm512_shuffle_f32x4(even_lo, even_hi, 0xDD);
        t[4 + b] = _mm512_shuffle_f32x4(odd_lo, odd_hi, 0x88);
        t[12 + b] = _mm512_shuffle_f32x4(odd_lo, odd_hi, 0xDD);
    }
    for (int i = 0; i < 16; ++i) r[i] = t[i];
}
#endif

}  // namespace ternion::simd
