/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
 * 3", SC'11) and the stream of draws DROPOUT makes of it (hpu_kernels.h),
 * shared by the device model and the runtime's CPU fallback so that both
 * draw the same masks.  A counter-based generator: a draw is a pure
 * function of (seed, position), so any split of the work across threads
 * draws the same mask.
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

/* Draws per block: each of its words makes one. */
#define HPU_PHILOX_WORDS 4

/*
 * The stream: position m (64-bit) draws word m % 4 of the block for counter
 * words (lo32(m / 4), hi32(m / 4), 0, 0) and key words (lo32(seed),
 * hi32(seed)), its top 24 bits as a float in [0, 1), every value exact:
 * (w >> 8) * 2^-24.  Here the draws of count blocks from block b (at most
 * HPU_PHILOX_LANES), that is of positions 4b to 4(b + count) - 1, into u.
 */
static inline void hpu_philox_uniforms(uint64_t seed, uint64_t b, unsigned int count, float *u)
{
	const uint32_t key[2] = { (uint32_t)seed, (uint32_t)(seed >> 32) };
	uint32_t block[4][HPU_PHILOX_LANES];

	for (unsigned int l = 0; l < count; l++) {
		block[0][l] = (uint32_t)(b + l);
		block[1][l] = (uint32_t)((b + l) >> 32);
		block[2][l] = block[3][l] = 0;
	}
	hpu_philox4x32_n(block, count, key);
	for (unsigned int l = 0; l < count; l++)
		for (unsigned int j = 0; j < HPU_PHILOX_WORDS; j++)
			u[HPU_PHILOX_WORDS * l + j] = (float)(block[j][l] >> 8) * 0x1p-24f;
}

/* Position m's draw alone. */
static inline float hpu_philox_uniform(uint64_t seed, uint64_t m)
{
	float u[HPU_PHILOX_WORDS];

	hpu_philox_uniforms(seed, m / HPU_PHILOX_WORDS, 1, u);
	return u[m % HPU_PHILOX_WORDS];
}

#endif /* HPU_PHILOX_H */
