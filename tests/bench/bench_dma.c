// SPDX-License-Identifier: MIT
/*
 * bench-dma: the submission path against the guest's own baselines, all
 * measured in one run:
 *   h2d_vs_memcpy, d2h_vs_memcpy  64 MiB copy bandwidth / host memcpy bandwidth
 *   submit_vs_null_ioctl          NOP job submit+wait round trip on a user queue (descriptor,
 *                                 doorbell, status read back: no system call) / a null ioctl
 *   kernel_submit_vs_null_ioctl   the same through the driver's SUBMIT and WAIT / a null ioctl
 *   stream_sync_vs_null_ioctl     what the runtime gives a framework: an 8-byte memset on a
 *                                 stream and its synchronize / a null ioctl
 *   host_wake_vs_null_ioctl       what the host running the emulator takes to wake a
 *                                 sleeping thread (tests/bench/host_dma.c, before the boot)
 *                                 / a null ioctl: the round trip's floor whenever the
 *                                 device's engine thread has gone to sleep
 *   alloc_uncached_vs_cached      64 KiB device allocation+free: GEM create+map+unmap+close
 *                                 / libhpu's caching allocator
 *   doorbell_gap_vs_back_to_back  a user queue's doorbell write (what it costs the writer,
 *                                 median) GAP_US after the last job ended / right after it:
 *                                 whether the engine still polls across a training step's
 *                                 gaps, or has gone to sleep and the doorbell must wake it
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hpu/hpu.h>

#include "bench_host.h"
#include "bench_stats.h"
#include "hpu_abi.h"
#include "hpu_test.h"

#define MiB (1ull << 20)
#define COPY (64 * MiB)
#define COPY_REPS 5
#define CALLS 2000
#define ALLOC_SIZE (64 << 10)
#define DOORBELLS 300
#define GAP_US 400
#define RW (DRM_HPU_VM_MAP_READ | DRM_HPU_VM_MAP_WRITE)

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void die(const char *what, int err)
{
	fprintf(stderr, "bench-dma: %s: %s\n", what, strerror(-err));
	exit(1);
}

/* Best of COPY_REPS: the least disturbed run on a shared host. */
static double copy_gbps(int fd, uint64_t dst, uint64_t src)
{
	struct hpu_cb cb = { .size = 0 };
	double best = 0, t;
	int r, err;

	hpu_cb_dma(&cb, dst, src, COPY);
	for (r = 0; r < COPY_REPS; r++) {
		t = now_s();
		err = hpu_run(fd, 0, cb.buf, cb.size);
		if (err)
			die("copy job", err);
		t = now_s() - t;
		if (COPY / t / 1e9 > best)
			best = COPY / t / 1e9;
	}
	return best;
}

static double memcpy_gbps(uint8_t *dst, const uint8_t *src)
{
	double best = 0, t;
	int r;

	for (r = 0; r < COPY_REPS; r++) {
		t = now_s();
		memcpy(dst, src, COPY);
		t = now_s() - t;
		if (COPY / t / 1e9 > best)
			best = COPY / t / 1e9;
	}
	return best;
}

/* Spin until the job at pos has its status; a failed job ends the benchmark. */
static void uq_wait_ok(struct hpu_uq *q, uint32_t pos)
{
	uint32_t status;

	while ((status = __atomic_load_n(&hpu_uq_slot(q, pos)->status, __ATOMIC_ACQUIRE)) ==
	       0xffffffffu)
		;
	if (status)
		die("user-queue job", -EIO);
}

/* Seconds per NOP job on a user queue, submitted and waited for by the status it gets back. */
static double uq_round_trip(int fd, const struct hpu_cb *nop)
{
	struct hpu_uq q;
	uint32_t pos;
	double t;
	int i, err;

	if ((err = hpu_uq_open(&q, fd)))
		die("user queue", err);
	t = now_s();
	for (i = 0; i < CALLS; i++) {
		pos = hpu_uq_put(&q, nop, 0);
		hpu_uq_ring(&q);
		uq_wait_ok(&q, pos);
	}
	t = (now_s() - t) / CALLS;
	hpu_uq_close(&q);
	return t;
}

/* Median microseconds of a doorbell write, gap_s after the last NOP job ended. */
static double uq_doorbell_us(int fd, const struct hpu_cb *nop, double gap_s)
{
	double cost[DOORBELLS], t;
	struct hpu_uq q;
	uint32_t pos;
	int i, err;

	if ((err = hpu_uq_open(&q, fd)))
		die("user queue", err);
	for (i = 0; i < DOORBELLS; i++) {
		pos = hpu_uq_put(&q, nop, 0);
		/* Busy: a sleeping vCPU would add its own wake-up to the writer's cost. */
		for (t = now_s() + gap_s; now_s() < t;)
			;
		t = now_s();
		hpu_uq_ring(&q);
		cost[i] = (now_s() - t) * 1e6;
		uq_wait_ok(&q, pos);
	}
	hpu_uq_close(&q);
	bench_sort(cost, DOORBELLS);
	return cost[DOORBELLS / 2];
}

/* Seconds per 8-byte memset enqueued on a libhpu stream and synchronized. */
static double stream_round_trip(void)
{
	struct hpu_device *dev;
	struct hpu_stream *s;
	uint64_t p;
	double t;
	int i, err;

	if ((err = hpu_device_open(0, &dev)) || (err = hpu_stream_create(dev, &s)) ||
	    (err = hpu_mem_alloc(dev, 64, &p)) || (err = hpu_memset_async(s, p, 0, 8)) ||
	    (err = hpu_stream_synchronize(s)))
		die(hpu_last_error(), err);
	t = now_s();
	for (i = 0; i < CALLS; i++)
		if ((err = hpu_memset_async(s, p, i, 8)) || (err = hpu_stream_synchronize(s)))
			die(hpu_last_error(), err);
	t = (now_s() - t) / CALLS;
	hpu_mem_free(dev, p);
	hpu_stream_destroy(s);
	hpu_device_close(dev);
	return t;
}

/* Seconds per allocate+free of ALLOC_SIZE straight through the ioctls. */
static double alloc_uncached(int fd)
{
	double t = now_s();
	uint64_t va;
	uint32_t h;
	int i, err;

	for (i = 0; i < CALLS; i++) {
		va = 0;
		if ((err = hpu_gem_create(fd, ALLOC_SIZE, 0, &h)) ||
		    (err = hpu_vm_map(fd, h, 0, NULL, ALLOC_SIZE, RW, &va)) ||
		    (err = hpu_vm_unmap(fd, va)) || (err = hpu_gem_close(fd, h)))
			die("uncached allocation", err);
	}
	return (now_s() - t) / CALLS;
}

/* The same through libhpu, whose cache serves it without an ioctl. */
static double alloc_cached(void)
{
	struct hpu_device *dev;
	uint64_t p;
	double t;
	int i, err;

	if ((err = hpu_device_open(0, &dev)))
		die(hpu_last_error(), err);
	/* The first allocation maps a slab; time the steady state. */
	if ((err = hpu_mem_alloc(dev, ALLOC_SIZE, &p)) || (err = hpu_mem_free(dev, p)))
		die(hpu_last_error(), err);
	t = now_s();
	for (i = 0; i < CALLS; i++)
		if ((err = hpu_mem_alloc(dev, ALLOC_SIZE, &p)) || (err = hpu_mem_free(dev, p)))
			die(hpu_last_error(), err);
	t = (now_s() - t) / CALLS;
	hpu_device_close(dev);
	return t;
}

int main(void)
{
	uint8_t *a = hpu_host_pages(COPY), *b = hpu_host_pages(COPY);
	struct hpu_cb nop = { .size = 0 };
	uint64_t a_va = 0, b_va = 0, hbm_va = 0;
	struct drm_hpu_device_info di;
	struct drm_hpu_info info = {
		.data_ptr = (uintptr_t)&di, .data_size = sizeof(di), .query = DRM_HPU_INFO_DEVICE,
	};
	double mc, h2d, d2h, t_null, t_job, t_uq, t_stream, t, t_unc, t_cached, wake_us, db_b2b, db_gap;
	char bdf[64];
	uint32_t h;
	int fd, i, err;

	if (!a || !b || hpu_find_bdf(bdf, sizeof(bdf)) || (fd = hpu_open_node(bdf)) < 0)
		die("device", -ENODEV);
	memset(a, 1, COPY);
	memset(b, 2, COPY);
	if ((err = hpu_gem_create(fd, COPY, 0, &h)) ||
	    (err = hpu_vm_map(fd, h, 0, NULL, COPY, RW, &hbm_va)) ||
	    (err = hpu_vm_map(fd, 0, 0, a, COPY, RW, &a_va)) ||
	    (err = hpu_vm_map(fd, 0, 0, b, COPY, RW, &b_va)))
		die("setup", err);

	mc = memcpy_gbps(b, a);
	h2d = copy_gbps(fd, hbm_va, a_va);
	d2h = copy_gbps(fd, b_va, hbm_va);

	t = now_s();
	for (i = 0; i < CALLS; i++)
		if ((err = hpu_ioc(fd, DRM_IOCTL_HPU_INFO, &info)))
			die("null ioctl", err);
	t_null = (now_s() - t) / CALLS;

	hpu_cb_put(&nop, &(struct hpu_pkt_nop){ .header = HPU_PKT_HEADER(HPU_PKT_NOP, 0) }, 8);
	t = now_s();
	for (i = 0; i < CALLS; i++)
		if ((err = hpu_run(fd, 0, nop.buf, nop.size)))
			die("null job", err);
	t_job = (now_s() - t) / CALLS;
	t_uq = uq_round_trip(fd, &nop);
	db_b2b = uq_doorbell_us(fd, &nop, 0);
	db_gap = uq_doorbell_us(fd, &nop, GAP_US * 1e-6);
	t_stream = stream_round_trip();

	t_unc = alloc_uncached(fd);
	t_cached = alloc_cached();

	printf("BENCH memcpy %.2f GB/s\n", mc);
	printf("BENCH h2d %.2f GB/s\n", h2d);
	printf("BENCH d2h %.2f GB/s\n", d2h);
	printf("BENCH h2d_vs_memcpy %.2f ratio\n", h2d / mc);
	printf("BENCH d2h_vs_memcpy %.2f ratio\n", d2h / mc);
	printf("BENCH null_ioctl %.1f us\n", t_null * 1e6);
	printf("BENCH kernel_submit_wait %.1f us\n", t_job * 1e6);
	printf("BENCH kernel_submit_vs_null_ioctl %.2f ratio\n", t_job / t_null);
	printf("BENCH submit_wait %.1f us\n", t_uq * 1e6);
	printf("BENCH submit_vs_null_ioctl %.2f ratio\n", t_uq / t_null);
	printf("BENCH stream_sync %.1f us\n", t_stream * 1e6);
	printf("BENCH stream_sync_vs_null_ioctl %.2f ratio\n", t_stream / t_null);
	wake_us = bench_host_value("dma", "wake_us");
	if (wake_us > 0) {
		printf("BENCH host_thread_wake %.1f us\n", wake_us);
		printf("BENCH host_wake_vs_null_ioctl %.2f ratio\n", wake_us / (t_null * 1e6));
	}
	printf("BENCH alloc_uncached %.2f us\n", t_unc * 1e6);
	printf("BENCH alloc_cached %.2f us\n", t_cached * 1e6);
	printf("BENCH alloc_uncached_vs_cached %.1f ratio\n", t_unc / t_cached);
	printf("BENCH doorbell_back_to_back %.2f us\n", db_b2b);
	printf("BENCH doorbell_after_gap %.2f us\n", db_gap);
	printf("BENCH doorbell_gap_vs_back_to_back %.1f ratio\n", db_gap / db_b2b);
	close(fd);
	return 0;
}
