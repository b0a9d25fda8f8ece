// SPDX-License-Identifier: MIT
/*
 * Many processes on one device: isolation between contexts, and a process
 * that exits with work in flight giving everything back.
 */
#include <signal.h>
#include <sys/wait.h>

#include "kselftest_harness.h"

#include "hpu_abi.h"
#include "hpu_test.h"

#define MiB (1ull << 20)
#define RW (DRM_HPU_VM_MAP_READ | DRM_HPU_VM_MAP_WRITE)
#define VICTIM_VA 0x200000000ull /* both processes use the same device addresses */
#define ATTACKER_VA 0x300000000ull /* clear of everything the victim maps */
#define PATTERN 0x3c

/* What the victim tells the attacker: everything an attacker could try to name. */
struct victim_info {
	uint64_t hbm_va;
	uint64_t host_va;
	uint64_t host_ptr;
	uint32_t handle;
	uint32_t ready;
};

static int open_dev(void)
{
	char bdf[64];

	if (hpu_find_bdf(bdf, sizeof(bdf)))
		return -ENODEV;
	return hpu_open_node(bdf);
}

static int stats_of(int fd, struct drm_hpu_stats *st)
{
	return hpu_stats(fd, st);
}

/*
 * The attacker runs in its own process with its own context and tries every
 * way to name the victim's memory: the same device addresses, the victim's
 * GEM handle, the victim's host pointer, and privileged packets.  Each try
 * must fail or touch only the attacker's own memory.  Exit status: a bit per
 * try that did not behave.
 */
static int attacker(const struct victim_info *v)
{
	struct hpu_cb cb = { .size = 0 };
	uint8_t *mine = hpu_host_pages(MiB);
	uint64_t va, own_va = VICTIM_VA;
	int bad = 0, err;
	uint32_t h;
	int fd = open_dev();

	if (fd < 0 || !mine)
		return 100;

	/* 1. The victim's addresses are unmapped here: reads and writes fault. */
	va = ATTACKER_VA;
	if (hpu_vm_map(fd, 0, 0, mine, MiB, RW | DRM_HPU_VM_MAP_FIXED, &va))
		return 101;
	hpu_cb_dma(&cb, va, v->hbm_va, 4096);
	bad |= (hpu_run(fd, 0, cb.buf, cb.size) != -EFAULT) << 0;
	cb.size = 0;
	hpu_cb_memset(&cb, v->hbm_va, 0xff, 4096);
	bad |= (hpu_run(fd, 1, cb.buf, cb.size) != -EFAULT) << 1;
	cb.size = 0;
	hpu_cb_memset(&cb, v->host_va, 0xff, 4096);
	bad |= (hpu_run(fd, 2, cb.buf, cb.size) != -EFAULT) << 2;

	/* 2. The victim's handle means nothing in this file. */
	va = 0;
	err = hpu_vm_map(fd, v->handle, 0, NULL, 4096, RW, &va);
	bad |= (err != -ENOENT) << 3;

	/* 3. Its own buffer at the very same device address is its own memory. */
	if (hpu_gem_create(fd, MiB, 0, &h) ||
	    hpu_vm_map(fd, h, 0, NULL, MiB, RW | DRM_HPU_VM_MAP_FIXED, &own_va))
		return 102;
	cb.size = 0;
	hpu_cb_memset(&cb, own_va, 0xff, MiB);
	bad |= (hpu_run(fd, 0, cb.buf, cb.size) != 0) << 4;

	/* 4. The victim's host pointer is just an address in this process. */
	va = 0;
	err = hpu_vm_map(fd, 0, 0, (void *)(uintptr_t)v->host_ptr, 4096, RW, &va);
	bad |= (err != -EFAULT && err != 0) << 5;

	/* 5. Privileged packets that bypass the MMU are refused. */
	cb.size = 0;
	hpu_cb_put(&cb, &(struct hpu_pkt_write_completion){
		.header = HPU_PKT_HEADER(HPU_PKT_WRITE_COMPLETION, 0), .addr = 0x100000, .value = 1 }, 24);
	bad |= (hpu_submit(fd, 0, cb.buf, cb.size, NULL) != -EPERM) << 6;

	close(fd);
	return bad;
}

FIXTURE(proc) {
	int fd;
};

FIXTURE_SETUP(proc)
{
	self->fd = open_dev();
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(proc)
{
	close(self->fd);
}

TEST_F_TIMEOUT(proc, contexts_are_isolated, 120)
{
	struct victim_info *v = mmap(NULL, sizeof(*v), PROT_READ | PROT_WRITE,
				     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	uint8_t *host = hpu_host_pages(MiB), *check = hpu_host_pages(MiB);
	struct hpu_cb cb = { .size = 0 };
	uint64_t check_va = 0;
	pid_t pid;
	int st, i;

	ASSERT_NE(MAP_FAILED, v);
	memset(host, PATTERN, MiB);
	v->hbm_va = VICTIM_VA;
	ASSERT_EQ(0, hpu_gem_create(self->fd, MiB, 0, &v->handle));
	ASSERT_EQ(0, hpu_vm_map(self->fd, v->handle, 0, NULL, MiB, RW | DRM_HPU_VM_MAP_FIXED,
				&v->hbm_va));
	v->host_va = 0;
	ASSERT_EQ(0, hpu_vm_map(self->fd, 0, 0, host, MiB, RW, &v->host_va));
	v->host_ptr = (uintptr_t)host;
	hpu_cb_dma(&cb, v->hbm_va, v->host_va, MiB);
	ASSERT_EQ(0, hpu_run(self->fd, 0, cb.buf, cb.size));

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(attacker(v));
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	ASSERT_TRUE(WIFEXITED(st));
	EXPECT_EQ(0, WEXITSTATUS(st)) TH_LOG("attacks that did not fail as they should: mask 0x%x", WEXITSTATUS(st));

	/* The victim's HBM and host memory are intact and its jobs still run. */
	ASSERT_EQ(0, hpu_vm_map(self->fd, 0, 0, check, MiB, RW, &check_va));
	memset(check, 0, MiB);
	cb.size = 0;
	hpu_cb_dma(&cb, check_va, v->hbm_va, MiB);
	ASSERT_EQ(0, hpu_run(self->fd, 3, cb.buf, cb.size));
	for (i = 0; i < (int)MiB; i++) {
		ASSERT_EQ(PATTERN, check[i]) TH_LOG("HBM byte %d", i);
		ASSERT_EQ(PATTERN, host[i]) TH_LOG("host byte %d", i);
	}
}

/* Several processes use the device at once, each with its own data. */
TEST_F_TIMEOUT(proc, concurrent_processes, 300)
{
	pid_t pids[4];
	int i, st;

	for (i = 0; i < 4; i++) {
		pids[i] = fork();
		ASSERT_LE(0, pids[i]);
		if (pids[i] == 0) {
			uint8_t *src = hpu_host_pages(4 * MiB), *dst = hpu_host_pages(4 * MiB);
			struct hpu_cb cb = { .size = 0 };
			uint64_t s = 0, d = 0, hv = VICTIM_VA;
			uint32_t h;
			int fd = open_dev(), round, bad = 0;

			if (fd < 0 || hpu_gem_create(fd, 4 * MiB, 0, &h) ||
			    hpu_vm_map(fd, h, 0, NULL, 4 * MiB, RW | DRM_HPU_VM_MAP_FIXED, &hv) ||
			    hpu_vm_map(fd, 0, 0, src, 4 * MiB, RW, &s) ||
			    hpu_vm_map(fd, 0, 0, dst, 4 * MiB, RW, &d))
				_exit(100);
			for (round = 0; round < 5; round++) {
				memset(src, i * 16 + round, 4 * MiB);
				cb.size = 0;
				hpu_cb_dma(&cb, hv, s, 4 * MiB);
				hpu_cb_dma(&cb, d, hv, 4 * MiB);
				bad |= (hpu_run(fd, (i + round) % 4, cb.buf, cb.size) != 0) << 7;
				bad |= (memcmp(src, dst, 4 * MiB) != 0) << 8;
			}
			_exit(bad);
		}
	}
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(pids[i], waitpid(pids[i], &st, 0));
		EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) TH_LOG("process %d: %d", i, st);
	}
}

/*
 * A process that exits (or is killed) with jobs queued and host pages
 * pinned: its jobs end, its pages are unpinned, its HBM is freed.  Each job
 * copies 256 MiB, 4 MiB of pinned pages (within an ordinary user's 8 MiB
 * RLIMIT_MEMLOCK) at a time.
 */
TEST_F_TIMEOUT(proc, exit_with_work_in_flight, 300)
{
	struct drm_hpu_stats before, after;
	int round, st, tries;
	pid_t pid;

	ASSERT_EQ(0, stats_of(self->fd, &before));
	for (round = 0; round < 2; round++) {
		pid = fork();
		ASSERT_LE(0, pid);
		if (pid == 0) {
			uint8_t *src = hpu_host_pages(4 * MiB);
			struct hpu_cb cb = { .size = 0 };
			uint64_t s = 0, hv = 0;
			uint32_t h;
			int fd = open_dev(), j;

			if (!src || fd < 0 || hpu_gem_create(fd, 32 * MiB, 0, &h) ||
			    hpu_vm_map(fd, h, 0, NULL, 32 * MiB, RW, &hv) ||
			    hpu_vm_map(fd, 0, 0, src, 4 * MiB, RW, &s))
				_exit(100);
			for (j = 0; j < 64; j++)
				hpu_cb_dma(&cb, hv + j % 8 * 4 * MiB, s, 4 * MiB);
			for (j = 0; j < 16; j++)
				if (hpu_submit(fd, j % 4, cb.buf, cb.size, NULL))
					_exit(101);
			if (round)
				raise(SIGKILL);
			_exit(0); /* no close, no wait */
		}
		ASSERT_EQ(pid, waitpid(pid, &st, 0));
		/* Killed as told, or exited cleanly: 100 and 101 say its setup or a submission failed. */
		EXPECT_EQ(round ? SIGKILL : 0, WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
	}

	/* Release may finish just after the process is reaped. */
	for (tries = 0; tries < 100; tries++) {
		ASSERT_EQ(0, stats_of(self->fd, &after));
		if (after.hbm_used == before.hbm_used && after.num_contexts == before.num_contexts)
			break;
		usleep(100 * 1000);
	}
	EXPECT_EQ(before.hbm_used, after.hbm_used);
	EXPECT_EQ(before.num_contexts, after.num_contexts);
	EXPECT_EQ(0, after.ctx_host_pinned);
	EXPECT_LE(before.jobs_submitted + 32, after.jobs_submitted);
	EXPECT_EQ(after.jobs_submitted, after.jobs_completed + after.jobs_failed);
}

TEST_HARNESS_MAIN
