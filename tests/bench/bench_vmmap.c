// SPDX-License-Identifier: MIT
/*
 * bench-vmmap: what mapping host memory for the device costs (VM_MAP of a
 * user pointer pins each page and DMA-maps it once per device, counted in a
 * table under one device-wide lock; VM_UNMAP undoes it), all measured in one
 * run against the guest's own baselines:
 *   vmmap_<size>_vs_memcpy        VM_MAP+VM_UNMAP of a touched buffer / memcpy of
 *                                 it (medians of interleaved rounds): how many
 *                                 staged copies of the buffer pinning it costs
 *   vmmap_<size>_second_vs_first  a second VM_MAP+VM_UNMAP of the buffer while a
 *                                 first mapping holds its pages (one more reference
 *                                 a page) / the first's
 *   vmmap_small_<phase>[_mean|_worst_per_100ms|_max]  one process's VM_MAP of
 *                                 SMALL bytes, 5 s at a time: alone (a run before
 *                                 and one after), under_map (another process maps
 *                                 and unmaps BIG bytes in a loop) and under_memcpy
 *                                 (it copies BIG bytes instead: a second busy process
 *                                 without the lock); the median call, the mean, the
 *                                 median of each 100 ms's longest map in flight (how
 *                                 long the device-wide lock makes others wait, which
 *                                 per-call figures hide) and the longest
 *   vmmap_small_<phase>_[mean_|worst_]vs_alone  those over the same alone
 *   vmmap_small_under_map_vs_under_memcpy  the two worsts per 100 ms: the lock's share
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_stats.h"
#include "hpu_abi.h"
#include "hpu_test.h"

#define KiB (1ull << 10)
#define MiB (1ull << 20)
#define SMALL (64 * KiB)
#define BIG (256 * MiB)
#define MAX_SAMPLES 100000
#define WINDOW_S 0.1
#define PHASE_WINDOWS 50
#define PHASE_S (PHASE_WINDOWS * WINDOW_S)
/* Two phases' worth: the one alone is run twice. */
#define MAX_WINDOWS (2 * PHASE_WINDOWS + 2)
#define RW (DRM_HPU_VM_MAP_READ | DRM_HPU_VM_MAP_WRITE)

static const struct {
	uint64_t size;
	const char *name;
	int rounds;
} sizes[] = {
	{ 64 * KiB, "64k", 200 }, { 2 * MiB, "2m", 50 }, { 64 * MiB, "64m", 7 },
	{ BIG, "256m", 3 },
};

/* What the other process of the contention phases does, and what it saw. */
enum { OTHER_MAP, OTHER_MEMCPY };
struct other {
	int stop;
	unsigned long rounds;
	double busy_s;		/* summed over its rounds */
	double max_s;		/* its longest round */
};

static void die(const char *what, int err)
{
	fprintf(stderr, "bench-vmmap: %s: %s\n", what, strerror(-err));
	exit(1);
}

static int open_device(void)
{
	char bdf[64];
	int fd;

	if (hpu_find_bdf(bdf, sizeof(bdf)) || (fd = hpu_open_node(bdf)) < 0)
		die("device", -ENODEV);
	return fd;
}

/* Touched pages: a pin of untouched memory would also pay its page faults. */
static uint8_t *touched(uint64_t size)
{
	uint8_t *p = hpu_host_pages(size);

	if (!p)
		die("mmap", -ENOMEM);
	memset(p, 1, size);
	return p;
}

static double map_s(int fd, void *p, uint64_t size, uint64_t *va)
{
	double t = hpu_now_s();
	int err;

	*va = 0;
	if ((err = hpu_vm_map(fd, 0, 0, p, size, RW, va)))
		die("VM_MAP", err);
	return hpu_now_s() - t;
}

static double unmap_s(int fd, uint64_t va)
{
	double t = hpu_now_s();
	int err;

	if ((err = hpu_vm_unmap(fd, va)))
		die("VM_UNMAP", err);
	return hpu_now_s() - t;
}

/*
 * Rounds of: first map, second map (the same pages, one more reference),
 * its unmap, the first's unmap, a memcpy of the buffer; medians of each.
 */
static void one_size(int fd, int i)
{
	uint64_t size = sizes[i].size, va1, va2;
	int n = sizes[i].rounds, r;
	double *m1 = calloc(5 * n, sizeof(double)), *u1 = m1 + n, *m2 = u1 + n, *u2 = m2 + n;
	double *mc = u2 + n, first, second, copy, mib = (double)size / MiB;
	uint8_t *src = touched(size), *dst = touched(size);

	if (!m1)
		die("calloc", -ENOMEM);
	for (r = 0; r < n; r++) {
		m1[r] = map_s(fd, src, size, &va1);
		m2[r] = map_s(fd, src, size, &va2);
		u2[r] = unmap_s(fd, va2);
		u1[r] = unmap_s(fd, va1);
		mc[r] = hpu_now_s();
		memcpy(dst, src, size);
		mc[r] = hpu_now_s() - mc[r];
	}
	first = bench_median(m1, n) + bench_median(u1, n);
	second = bench_median(m2, n) + bench_median(u2, n);
	copy = bench_median(mc, n);
	printf("BENCH vmmap_%s_map %.1f us\n", sizes[i].name, bench_median(m1, n) * 1e6);
	printf("BENCH vmmap_%s_unmap %.1f us\n", sizes[i].name, bench_median(u1, n) * 1e6);
	printf("BENCH vmmap_%s_per_mib %.1f us\n", sizes[i].name, first / mib * 1e6);
	printf("BENCH vmmap_%s_memcpy %.1f us\n", sizes[i].name, copy * 1e6);
	printf("BENCH vmmap_%s_vs_memcpy %.2f ratio\n", sizes[i].name, first / copy);
	printf("BENCH vmmap_%s_second %.1f us\n", sizes[i].name, second * 1e6);
	printf("BENCH vmmap_%s_second_vs_first %.2f ratio\n", sizes[i].name, second / first);
	munmap(src, size);
	munmap(dst, size);
	free(m1);
}

/* The other process: BIG bytes mapped and unmapped (or copied) until told to stop. */
static void other_loop(struct other *o, int what, int ready)
{
	uint8_t *src = touched(BIG), *dst = what == OTHER_MEMCPY ? touched(BIG) : NULL;
	int fd = what == OTHER_MAP ? open_device() : -1;
	double t;
	uint64_t va;

	if (write(ready, "r", 1) != 1)
		exit(1);
	while (!__atomic_load_n(&o->stop, __ATOMIC_ACQUIRE)) {
		t = hpu_now_s();
		if (what == OTHER_MAP) {
			map_s(fd, src, BIG, &va);
			unmap_s(fd, va);
		} else {
			memcpy(dst, src, BIG);
		}
		t = hpu_now_s() - t;
		o->busy_s += t;
		if (t > o->max_s)
			o->max_s = t;
		o->rounds++;
	}
	exit(0);
}

/* SMALL maps timed in a phase, and the longest in flight during each WINDOW_S of it. */
struct phase {
	double lat[MAX_SAMPLES];
	int n;
	double worst[MAX_WINDOWS];
	int nw;
};

/* How long they took, in seconds; worst: the median of the windows' longest. */
struct lat {
	double med, mean, worst, max;
};

/* PHASE_S more of SMALL maps (each timed, its unmap not) into @ph. */
static void small_maps(int fd, uint8_t *p, struct phase *ph)
{
	double start = hpu_now_s(), t, worst = 0, last = 0;
	int w = 0, at;
	uint64_t va;

	while (ph->n < MAX_SAMPLES && (t = hpu_now_s()) < start + PHASE_S) {
		/* A map that spans windows was in flight in each of them. */
		for (at = (t - start) / WINDOW_S; w < at && ph->nw < MAX_WINDOWS; w++, worst = last)
			ph->worst[ph->nw++] = worst;
		last = ph->lat[ph->n++] = map_s(fd, p, SMALL, &va);
		if (last > worst)
			worst = last;
		unmap_s(fd, va);
	}
}

static struct lat lat_stats(struct phase *ph)
{
	struct lat l = { 0 };
	int i;

	for (i = 0; i < ph->n; i++)
		l.mean += ph->lat[i] / ph->n;
	l.med = bench_median(ph->lat, ph->n);
	l.max = ph->lat[ph->n - 1];
	l.worst = bench_median(ph->worst, ph->nw);
	return l;
}

/* SMALL maps while another process does @what; it is started and stopped around them. */
static struct lat small_maps_beside(int fd, uint8_t *p, int what, struct other *o,
				    struct phase *ph)
{
	int ready[2], status;
	pid_t pid;
	char c;

	memset(o, 0, sizeof(*o));
	memset(ph, 0, sizeof(*ph));
	if (pipe(ready))
		die("pipe", -errno);
	pid = fork();
	if (pid < 0)
		die("fork", -errno);
	if (!pid) {
		close(fd);
		other_loop(o, what, ready[1]);
	}
	if (read(ready[0], &c, 1) != 1)
		die("the other process", -EIO);
	close(ready[0]);
	close(ready[1]);
	small_maps(fd, p, ph);
	__atomic_store_n(&o->stop, 1, __ATOMIC_RELEASE);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		die("the other process", -EIO);
	if (!o->rounds)
		die("the other process did nothing", -EIO);
	return lat_stats(ph);
}

static void print_lat(const char *name, const struct lat *l)
{
	printf("BENCH vmmap_small_%s %.1f us\n", name, l->med * 1e6);
	printf("BENCH vmmap_small_%s_mean %.1f us\n", name, l->mean * 1e6);
	printf("BENCH vmmap_small_%s_worst_per_100ms %.1f us\n", name, l->worst * 1e6);
	printf("BENCH vmmap_small_%s_max %.1f us\n", name, l->max * 1e6);
}

static void print_ratios(const char *name, const struct lat *l, const struct lat *alone)
{
	printf("BENCH vmmap_small_%s_vs_alone %.2f ratio\n", name, l->med / alone->med);
	printf("BENCH vmmap_small_%s_mean_vs_alone %.2f ratio\n", name, l->mean / alone->mean);
	printf("BENCH vmmap_small_%s_worst_vs_alone %.1f ratio\n", name,
	       l->worst / alone->worst);
}

static void contention(int fd)
{
	struct other *o = mmap(NULL, sizeof(*o), PROT_READ | PROT_WRITE,
			       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct phase *ph = calloc(2, sizeof(*ph)), *ph_alone = ph + 1;
	uint8_t *p = touched(SMALL);
	struct lat alone, lk, cp;
	double big, big_max;
	unsigned long rounds;

	if (o == MAP_FAILED || !ph)
		die("mmap", -ENOMEM);
	/* Alone before and after (one set), beside maps and beside copies in between. */
	small_maps(fd, p, ph_alone);
	lk = small_maps_beside(fd, p, OTHER_MAP, o, ph);
	rounds = o->rounds;
	big = o->busy_s / o->rounds;
	big_max = o->max_s;
	cp = small_maps_beside(fd, p, OTHER_MEMCPY, o, ph);
	small_maps(fd, p, ph_alone);
	alone = lat_stats(ph_alone);

	print_lat("alone", &alone);
	print_lat("under_map", &lk);
	print_lat("under_memcpy", &cp);
	printf("BENCH vmmap_big_map_unmap_beside %.1f us\n", big * 1e6);
	printf("BENCH vmmap_big_map_unmap_beside_max %.1f us\n", big_max * 1e6);
	printf("# the other process mapped and unmapped %lu times\n", rounds);
	print_ratios("under_map", &lk, &alone);
	print_ratios("under_memcpy", &cp, &alone);
	printf("BENCH vmmap_small_under_map_vs_under_memcpy %.2f ratio (worst per 100 ms)\n",
	       lk.worst / cp.worst);
	munmap(p, SMALL);
	munmap(o, sizeof(*o));
	free(ph);
}

int main(void)
{
	int fd = open_device();
	unsigned int i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		one_size(fd, i);
	contention(fd);
	close(fd);
	return 0;
}
