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

/* The 4-word block for counter ctr and key key (Random123's philox4x32_R(10, ...)). */
static inline void hpu_philox4x32(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4])
{
	uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
	uint32_t k0 = key[0], k1 = key[1];

	for (int r = 0; r < HPU_PHILOX_ROUNDS; r++) {
		uint64_t p0 = (uint64_t)HPU_PHILOX_M0 * c0;
		uint64_t p1 = (uint64_t)HPU_PHILOX_M1 * c2;

		c0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
		c2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
		c1 = (uint32_t)p1;
		c3 = (uint32_t)p0;
		k0 += HPU_PHILOX_W0;
		k1 += HPU_PHILOX_W1;
	}
	out[0] = c0;
	out[1] = c1;
	out[2] = c2;
	out[3] = c3;
}

/*
 * The draw for a 64-bit counter n and seed: the block for counter words
 * (lo32(n), hi32(n), 0, 0) and key (lo32(seed), hi32(seed)); its first word's
 * top 24 bits make a float in [0, 1), every value exact: (w0 >> 8) * 2^-24.
 */
static inline float hpu_philox_uniform(uint64_t seed, uint64_t n)
{
	const uint32_t ctr[4] = { (uint32_t)n, (uint32_t)(n >> 32), 0, 0 };
	const uint32_t key[2] = { (uint32_t)seed, (uint32_t)(seed >> 32) };
	uint32_t out[4];

	hpu_philox4x32(ctr, key, out);
	return (float)(out[0] >> 8) * 0x1p-24f;
}

#endif /* HPU_PHILOX_H */
