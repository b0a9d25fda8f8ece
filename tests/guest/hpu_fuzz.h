/* SPDX-License-Identifier: MIT */
/*
 * The fuzzers' seeded random streams (fuzz_test, ioctl_fuzz_test): each
 * thread draws from a xorshift stream of its own, started from the run's
 * seed and a stream number, so that a seed replays what each thread did.
 */
#ifndef HPU_FUZZ_H
#define HPU_FUZZ_H

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

/* Each thread's own stream: threads draw theirs concurrently. */
static __thread uint64_t rnd_state;

static inline uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

/* splitmix64: a seed spread over the whole state (xorshift wants one that is not 0). */
static inline uint64_t rnd_mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x ? x : 1;
}

/* The run's seed: HPU_FUZZ_SEED's, to replay a run, else the clock's. */
static inline uint64_t fuzz_seed(void)
{
	const char *s = getenv("HPU_FUZZ_SEED");
	struct timespec t;

	if (s && *s)
		return strtoull(s, NULL, 0);
	clock_gettime(CLOCK_REALTIME, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

#endif /* HPU_FUZZ_H */
