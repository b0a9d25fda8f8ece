/* SPDX-License-Identifier: MIT */
/*
 * Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
 * 3", SC'11): a counter-based generator, so element k of a dropout mask is a
 * pure function of (seed, offset + k) and any split of the work across
 * threads draws the same mask.
 */
#ifndef HPU_PHILOX_H
#define HPU_PHILOX_H

#include <stdint.h>

#define HPU_PHILOX_M0 0xd2511f53u
#define HPU_PHILOX_M1 0xcd9e8d57u
#define HPU_PHILOX_W0 0x9e3779b9u /* golden ratio */
#define HPU_PHILOX_W1 0xbb67ae85u /* sqrt(3) - 1 */
#define HPU_PHILOX_ROUNDS 10

/* The most blocks hpu_philox4x32_n() computes at once. */
#define HPU_PHILOX_LANES 16

/*
 * The 4-word blocks for n counters, n <= HPU_PHILOX_LANES, all with key
 * key, in place: word j of block l is c[j][l].  One block's ten rounds are
 * a chain of multiplies; the rounds of independent blocks side by side let
 * the CPU overlap them, and the compiler use vector multiplies.  Not
 * inlined: in a kernel's loop at -O3 its 64 words spill (dropout ran 1.5x
 * slower).
 */
static __attribute__((noinline, unused)) void
hpu_philox4x32_n(uint32_t (*c)[HPU_PHILOX_LANES], unsigned int n, const uint32_t key[2])
{
	uint32_t k0 = key[0], k1 = key[1];

	for (int r = 0; r < HPU_PHILOX_ROUNDS; r++) {
		for (unsigned int l = 0; l < n; l++) {
			uint64_t p0 = (uint64_t)HPU_PHILOX_M0 * c[0][l];
			uint64_t p1 = (uint64_t)HPU_PHILOX_M1 * c[2][l];

			c[0][l] = (uint32_t)(p1 >> 32) ^ c[1][l] ^ k0;
			c[2][l] = (uint32_t)(p0 >> 32) ^ c[3][l] ^ k1;
			c[1][l] = (uint32_t)p1;
			c[3][l] = (uint32_t)p0;
		}
		k0 += HPU_PHILOX_W0;
		k1 += HPU_PHILOX_W1;
	}
}

/* The 4-word block for counter ctr and key key (Random123's philox4x32_R(10, ...)). */
static inline void hpu_philox4x32(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4])
{
	uint32_t block[4][HPU_PHILOX_LANES];

	for (int j = 0; j < 4; j++)
		block[j][0] = ctr[j];
	hpu_philox4x32_n(block, 1, key);
	for (int j = 0; j < 4; j++)
		out[j] = block[j][0];
}

/*
 * The draws for 64-bit counters n, n + 1, ... (count of them, at most
 * HPU_PHILOX_LANES) and seed: the block for counter words (lo32(n),
 * hi32(n), 0, 0) and key (lo32(seed), hi32(seed)); its first word's top 24
 * bits make a float in [0, 1), every value exact: (w0 >> 8) * 2^-24.
 */
static inline void hpu_philox_uniforms(uint64_t seed, uint64_t n, unsigned int count, float *u)
{
	const uint32_t key[2] = { (uint32_t)seed, (uint32_t)(seed >> 32) };
	uint32_t block[4][HPU_PHILOX_LANES];

	for (unsigned int l = 0; l < count; l++) {
		block[0][l] = (uint32_t)(n + l);
		block[1][l] = (uint32_t)((n + l) >> 32);
		block[2][l] = block[3][l] = 0;
	}
	hpu_philox4x32_n(block, count, key);
	for (unsigned int l = 0; l < count; l++)
		u[l] = (float)(block[0][l] >> 8) * 0x1p-24f;
}

#endif /* HPU_PHILOX_H */
