// SPDX-License-Identifier: MIT
/*
 * The host half of bench-dma: what it costs the machine running the
 * emulator to wake a sleeping thread, the floor under a job's round trip
 * whenever the device's engine thread sleeps (hdm_qman.h).  Two threads
 * take turns through a condition variable, as a doorbell wakes the engine;
 * the waker spins until the wakee says it runs, and sleeps a little before
 * the next wake-up so that the wakee's CPU goes idle in between, as the
 * engine's does.  The median of WAKES wake-ups, in microseconds.
 *
 *   host_dma              prints "wake_us <median>"
 *   host_dma --serve DIR  nothing to serve: returns at once
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_stats.h"

#define WAKES 1000

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static bool posted, stopping;
static uint64_t posted_ns, woke_ns; /* woke_ns: __atomic, 0 until the wakee ran */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *wakee(void *unused)
{
	(void)unused;
	pthread_mutex_lock(&lock);
	for (;;) {
		while (!posted && !stopping)
			pthread_cond_wait(&cond, &lock);
		if (stopping)
			break;
		posted = false;
		__atomic_store_n(&woke_ns, now_ns(), __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&lock);
	return NULL;
}

int main(int argc, char **argv)
{
	const struct timespec gap = { .tv_nsec = 300000 };
	static double lat[WAKES];
	pthread_t thread;
	unsigned int i;

	if (argc == 3 && !strcmp(argv[1], "--serve"))
		return 0;
	if (pthread_create(&thread, NULL, wakee, NULL))
		return 1;
	for (i = 0; i < WAKES; i++) {
		uint64_t woke;

		nanosleep(&gap, NULL);
		__atomic_store_n(&woke_ns, 0, __ATOMIC_RELAXED);
		pthread_mutex_lock(&lock);
		posted = true;
		posted_ns = now_ns();
		pthread_cond_signal(&cond);
		pthread_mutex_unlock(&lock);
		while (!(woke = __atomic_load_n(&woke_ns, __ATOMIC_ACQUIRE)))
			;
		lat[i] = (double)(woke - posted_ns);
	}
	pthread_mutex_lock(&lock);
	stopping = true;
	pthread_cond_signal(&cond);
	pthread_mutex_unlock(&lock);
	pthread_join(thread, NULL);
	bench_sort(lat, WAKES);
	printf("wake_us %.1f\n", lat[WAKES / 2] / 1e3);
	return 0;
}
