/* SPDX-License-Identifier: MIT */
/*
 * Bulk host copies: the routine measured fastest on this machine, for the
 * copies between pageable memory and the staging buffer.  The C library
 * tunes memcpy() for hardware, but libhpu's device usually runs in QEMU
 * under binary translation, where a string move (rep movsq) copies a
 * 512 KiB staging chunk about a quarter faster than glibc's memcpy() (a
 * vector loop is slower still).  Neither wins everywhere, so the first bulk
 * copy of a process times both, as the kernel's xor and raid6 code do at
 * boot, and keeps the faster.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../util/util.h"

static void hpu_copy_libc(void *dst, const void *src, size_t n)
{
	memcpy(dst, src, n);
}

#if defined(__x86_64__)
static void hpu_copy_movsq(void *dst, const void *src, size_t n)
{
	size_t words = n / 8;
	char *d = dst;
	const char *s = src;

	__asm__ volatile("rep movsq" : "+D"(d), "+S"(s), "+c"(words) : : "memory");
	memcpy(d, s, n % 8);
}
#endif

const struct hpu_bulk_routine hpu_bulk_routines[] = {
	{ "memcpy", hpu_copy_libc },
#if defined(__x86_64__)
	{ "rep movsq", hpu_copy_movsq },
#endif
};
const size_t hpu_bulk_routine_count = HPU_ARRAY_SIZE(hpu_bulk_routines);

/* Best of a few rounds, so that one preemption does not decide. */
#define HPU_BULK_PROBE_BYTES (64u << 10)
#define HPU_BULK_PROBE_ROUNDS 5

static const struct hpu_bulk_routine *hpu_bulk_chosen = &hpu_bulk_routines[0];
static pthread_once_t hpu_bulk_once = PTHREAD_ONCE_INIT;

static uint64_t hpu_bulk_time(const struct hpu_bulk_routine *r, char *buf)
{
	uint64_t best = UINT64_MAX;
	unsigned int i;

	for (i = 0; i < HPU_BULK_PROBE_ROUNDS; i++) {
		uint64_t t = hpu_now_ns();

		r->copy(buf + HPU_BULK_PROBE_BYTES, buf, HPU_BULK_PROBE_BYTES);
		t = hpu_now_ns() - t;
		if (t < best)
			best = t;
	}
	return best;
}

static void hpu_bulk_choose(void)
{
	uint64_t best = UINT64_MAX;
	char *buf = malloc(2 * HPU_BULK_PROBE_BYTES);
	size_t i;

	/* Without memory to measure in, the C library's copy. */
	if (!buf)
		return;
	/* Touched once first: page faults are not the routines' cost. */
	memset(buf, 0x5a, 2 * HPU_BULK_PROBE_BYTES);
	for (i = 0; i < hpu_bulk_routine_count; i++) {
		uint64_t t = hpu_bulk_time(&hpu_bulk_routines[i], buf);

		/* Another routine must beat memcpy() by a tenth: a tie is noise. */
		if (t < best - (i ? best / 10 : 0)) {
			best = t;
			hpu_bulk_chosen = &hpu_bulk_routines[i];
		}
	}
	free(buf);
}

const struct hpu_bulk_routine *hpu_bulk_routine(void)
{
	pthread_once(&hpu_bulk_once, hpu_bulk_choose);
	return hpu_bulk_chosen;
}

void hpu_bulk_copy(void *dst, const void *src, size_t n)
{
	hpu_bulk_routine()->copy(dst, src, n);
}
