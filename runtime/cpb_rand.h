/* cpb_rand.h — the counter-based random numbers behind cpb_fill_random, identical on every
 * backend (host and CUDA): element i of a fill gets u(seed, i), a pure function of the
 * seed and the element's global index, so any backend and any sharding of a tensor
 * produce the same values (a rank fills its shard with base_index = its first global
 * element).
 *
 * u is built from the top 24 bits of a splitmix64 hash: k / 2^23 - 1 with k in [0, 2^24)
 * is exact in fp32, so there is no rounding that could differ between compilers. */
#ifndef CPB_RAND_H
#define CPB_RAND_H

#include <stdint.h>

#ifndef CPB_HD
#ifdef __CUDACC__
#define CPB_HD __host__ __device__
#else
#define CPB_HD
#endif
#endif

/* splitmix64 finaliser (Steele, Lea, Flood 2014): a bijective 64-bit mixer */
static inline CPB_HD uint64_t cpb_mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* 64 random bits for (seed, index): the seed is mixed first so that nearby seeds give
 * unrelated streams, then combined with the index and mixed again */
static inline CPB_HD uint64_t cpb_rand_bits(uint64_t seed, int64_t index)
{
    return cpb_mix64(cpb_mix64(seed) ^ (uint64_t)index);
}

/* uniform in [-1, 1), a multiple of 2^-23 */
static inline CPB_HD float cpb_rand_u(uint64_t seed, int64_t index)
{
    uint32_t k = (uint32_t)(cpb_rand_bits(seed, index) >> 40); /* top 24 bits */
    return (float)k * (1.0f / 8388608.0f) - 1.0f;
}

#endif
