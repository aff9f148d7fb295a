/* cpb_bf16.h — bf16 <-> fp32 conversion, identical on every backend (host and CUDA).
 *
 * bf16 is the upper half of an IEEE fp32.  Rounding fp32 -> bf16 is round-to-nearest-even
 * (what GPU conversions do), so a value stored by the cpu backend and by the cuda backend
 * is the same bit pattern.  NaNs stay NaN (a quiet NaN with the same sign): plain rounding
 * could carry a NaN's low mantissa bits into the exponent and turn it into infinity. */
#ifndef CPB_BF16_H
#define CPB_BF16_H

#include <stdint.h>
#include <string.h>

#ifndef CPB_HD
#ifdef __CUDACC__
#define CPB_HD __host__ __device__
#else
#define CPB_HD
#endif
#endif

typedef uint16_t cpb_bf16_bits;

static inline CPB_HD uint32_t cpb_f32_as_u32(float f)
{
#ifdef __CUDA_ARCH__
    return __float_as_uint(f);
#else
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
#endif
}

static inline CPB_HD float cpb_u32_as_f32(uint32_t u)
{
#ifdef __CUDA_ARCH__
    return __uint_as_float(u);
#else
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
#endif
}

static inline CPB_HD float cpb_bf16_to_f32(uint16_t h)
{
    return cpb_u32_as_f32((uint32_t)h << 16);
}

static inline CPB_HD uint16_t cpb_f32_to_bf16(float f)
{
    uint32_t u = cpb_f32_as_u32(f);
    if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu))
        return (uint16_t)((u >> 16) | 0x0040u); /* NaN: keep sign, force quiet */
    /* round to nearest, ties to even: add 0x7fff plus the lowest kept bit */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* fp32 value after a round trip through bf16 storage */
static inline CPB_HD float cpb_round_bf16(float f)
{
    return cpb_bf16_to_f32(cpb_f32_to_bf16(f));
}

#endif
