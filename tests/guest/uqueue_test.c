// SPDX-License-Identifier: MIT
/*
 * User queues through the raw ABI: jobs submitted with a store to a mapped
 * doorbell, statuses the device writes back, isolation enforced by the
 * device, the binding's lifetime (destroy, close, unmap while a job runs,
 * the watchdog), and every rejection path of the three ioctls and of the
 * doorbell's mmap.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>

#include "kselftest_harness.h"

#include "hpu_abi.h"
#include "hpu_test.h"

FIXTURE(uq) {
	char bdf[64];
	int fd;
	struct hpu_uq q;
	struct hpu_cb cb;
	uint8_t *host;
	uint64_t host_va;
};

FIXTURE_SETUP(uq)
{
	ASSERT_EQ(0, hpu_find_bdf(self->bdf, sizeof(self->bdf)));
	self->fd = hpu_open_node(self->bdf);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, hpu_uq_open(&self->q, self->fd));
	self->host = hpu_host_pages(4 * HPU_PAGE);
	ASSERT_NE(NULL, self->host);
	memset(self->host, 0, 4 * HPU_PAGE);
	ASSERT_EQ(0, hpu_vm_map(self->fd, 0, 0, self->host, 4 * HPU_PAGE,
				DRM_HPU_VM_MAP_READ | DRM_HPU_VM_MAP_WRITE, &self->host_va));
	self->cb.size = 0;
}

FIXTURE_TEARDOWN(uq)
{
	hpu_uq_close(&self->q);
	close(self->fd);
	munmap(self->host, 4 * HPU_PAGE);
}

TEST_F(uq, info_counts_user_queues)
{
	struct drm_hpu_device_info info = { 0 };
	struct drm_hpu_info a = {
		.data_ptr = (uintptr_t)&info, .data_size = sizeof(info), .query = DRM_HPU_INFO_DEVICE,
	};

	ASSERT_EQ(0, hpu_ioc(self->fd, DRM_IOCTL_HPU_INFO, &a));
	EXPECT_EQ(sizeof(info), a.data_size);
	EXPECT_EQ(HPU_NUM_UQ, info.num_user_queues);
	EXPECT_EQ(0, info.pad2);
}

/* Jobs run from a doorbell store: results, statuses and CI, with no ioctl between. */
TEST_F(uq, jobs_run_from_the_doorbell)
{
	uint32_t i, seen;

	for (i = 0; i < 3 * HPU_UQ_TEST_RING / 2; i++) {
		self->cb.size = 0;
		hpu_cb_memset(&self->cb, self->host_va + i * 8, (uint8_t)(i + 1), 8);
		hpu_uq_put(&self->q, &self->cb, 0);
		/* Ring every few jobs, never more than the ring holds. */
		if (i % 8 == 7) {
			hpu_uq_ring(&self->q);
			ASSERT_EQ(0, hpu_uq_wait(self->fd, self->q.id, self->q.pi, 5000000000ll, &seen));
		}
	}
	EXPECT_EQ(self->q.pi, self->q.db[HPU_UQ_DB_CI / 4]);
	EXPECT_EQ(0, self->q.db[HPU_UQ_DB_ERRORS / 4]);
	for (i = 0; i < 3 * HPU_UQ_TEST_RING / 2; i++)
		EXPECT_EQ((uint8_t)(i + 1), self->host[i * 8 + 7]);
	for (i = 0; i < HPU_UQ_TEST_RING; i++)
		EXPECT_EQ(0, hpu_uq_slot(&self->q, i)->status);
}

/* Each failure lands in its job's status; the queue goes on. */
TEST_F(uq, failures_are_written_back)
{
	struct hpu_pkt_write_completion wc = {
		.header = HPU_PKT_HEADER(HPU_PKT_WRITE_COMPLETION, 0), .addr = self->host_va,
	};
	struct hpu_pkt_interrupt irq = { .header = HPU_PKT_HEADER(HPU_PKT_INTERRUPT, 0), .vector = 1 };
	uint32_t pos;

	hpu_cb_memset(&self->cb, 0x7f0000000000ull, 1, 8);
	EXPECT_EQ(HPU_UQ_STATUS_MMU_FAULT, hpu_uq_run(&self->q, &self->cb));
	self->cb.size = 0;
	hpu_cb_put(&self->cb, &wc, sizeof(wc));
	EXPECT_EQ(HPU_UQ_STATUS_PRIV_PACKET, hpu_uq_run(&self->q, &self->cb));
	self->cb.size = 0;
	hpu_cb_put(&self->cb, &irq, sizeof(irq));
	EXPECT_EQ(HPU_UQ_STATUS_PRIV_PACKET, hpu_uq_run(&self->q, &self->cb));
	self->cb.size = 0;
	hpu_cb_memset(&self->cb, self->host_va, 9, 8);
	pos = hpu_uq_put(&self->q, &self->cb, 1);
	hpu_uq_ring(&self->q);
	ASSERT_EQ(0, hpu_uq_wait(self->fd, self->q.id, pos + 1, 5000000000ll, NULL));
	EXPECT_EQ(HPU_UQ_STATUS_ILLEGAL_PACKET, hpu_uq_slot(&self->q, pos)->status);
	EXPECT_EQ(0, self->host[0]);
	EXPECT_EQ(4, self->q.db[HPU_UQ_DB_ERRORS / 4]);
	/* Nothing the failures did stops the next job. */
	EXPECT_EQ(0, hpu_uq_run(&self->q, &self->cb));
	EXPECT_EQ(9, self->host[0]);
}

/* Another context's memory is out of reach at its own addresses, ring included. */
TEST_F(uq, another_context_is_out_of_reach)
{
	int other = hpu_open_node(self->bdf);
	uint8_t *victim = hpu_host_pages(HPU_PAGE);
	volatile uint32_t *db;
	uint64_t vva, offset;
	uint32_t seen, id;

	ASSERT_LE(0, other);
	ASSERT_NE(NULL, victim);
	memset(victim, 0x11, HPU_PAGE);
	/* Where our context has nothing (the same address in two contexts is two places). */
	vva = 0x600000000000ull;
	ASSERT_EQ(0, hpu_vm_map(other, 0, 0, victim, HPU_PAGE,
				DRM_HPU_VM_MAP_READ | DRM_HPU_VM_MAP_WRITE | DRM_HPU_VM_MAP_FIXED, &vva));
	hpu_cb_memset(&self->cb, vva, 0x66, HPU_PAGE);
	EXPECT_EQ(HPU_UQ_STATUS_MMU_FAULT, hpu_uq_run(&self->q, &self->cb));
	/* A ring placed at the victim's address is read in our context: the fetch faults. */
	ASSERT_EQ(0, hpu_uq_create(self->fd, vva, HPU_UQ_TEST_RING, &id, &offset));
	db = hpu_uq_db_map(self->fd, offset, MAP_SHARED);
	ASSERT_NE(MAP_FAILED, (void *)db);
	db[HPU_UQ_DB_PI / 4] = 1;
	ASSERT_EQ(0, hpu_uq_wait(self->fd, id, 1, 5000000000ll, &seen));
	EXPECT_EQ(1, db[HPU_UQ_DB_ERRORS / 4]);
	munmap((void *)db, HPU_UQ_DB_PAGE_SIZE);
	EXPECT_EQ(0, hpu_uq_destroy(self->fd, id));
	for (seen = 0; seen < HPU_PAGE; seen++)
		ASSERT_EQ(0x11, victim[seen]);
	/* Nor can the other file use, wait on or destroy our queue. */
	EXPECT_EQ(-ENOENT, hpu_uq_wait(other, self->q.id, 0, 0, NULL));
	EXPECT_EQ(-ENOENT, hpu_uq_destroy(other, self->q.id));
	close(other);
	munmap(victim, HPU_PAGE);
}

TEST_F(uq, reject_create)
{
	static const uint32_t sizes[] = { 0, 1, 3, 100, 8192 };
	struct drm_hpu_uqueue_create a;
	unsigned int i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		a = (struct drm_hpu_uqueue_create){ .ring_va = self->q.va, .ring_size = sizes[i] };
		EXPECT_EQ(-EINVAL, hpu_ioc(self->fd, DRM_IOCTL_HPU_UQUEUE_CREATE, &a))
			TH_LOG("ring_size %u", sizes[i]);
	}
	a = (struct drm_hpu_uqueue_create){ .ring_va = self->q.va, .ring_size = 4, .flags = 1 };
	EXPECT_EQ(-EINVAL, hpu_ioc(self->fd, DRM_IOCTL_HPU_UQUEUE_CREATE, &a));
	a = (struct drm_hpu_uqueue_create){ .ring_va = self->q.va, .ring_size = 4, .pad = 1 };
	EXPECT_EQ(-EINVAL, hpu_ioc(self->fd, DRM_IOCTL_HPU_UQUEUE_CREATE, &a));
	a = (struct drm_hpu_uqueue_create){ .ring_va = self->q.va + 16, .ring_size = 4 };
	EXPECT_EQ(-EINVAL, hpu_ioc(self->fd, DRM_IOCTL_HPU_UQUEUE_CREATE, &a));
	/* The ring would run past the top of the device address space. */
	a = (struct drm_hpu_uqueue_create){ .ring_va = (1ull << 48) - 32, .ring_size = 2 };
	EXPECT_EQ(-EINVAL, hpu_ioc(self->fd, DRM_IOCTL_HPU_UQUEUE_CREATE, &a));
	a = (struct drm_hpu_uqueue_create){ .ring_va = ~0ull - 31, .ring_size = 2 };
	EXPECT_EQ(-EINVAL, hpu_ioc(self->fd, DRM_IOCTL_HPU_UQUEUE_CREATE, &a));
}

TEST_F(uq, reject_destroy_and_wait)
{
	struct drm_hpu_uqueue_destroy d = { .id = self->q.id, .pad = 1 };
	struct drm_hpu_uqueue_wait w = { .id = self->q.id, .flags = 1 };

	EXPECT_EQ(-EINVAL, hpu_ioc(self->fd, DRM_IOCTL_HPU_UQUEUE_DESTROY, &d));
	EXPECT_EQ(-ENOENT, hpu_uq_destroy(self->fd, 999));
	EXPECT_EQ(-EINVAL, hpu_ioc(self->fd, DRM_IOCTL_HPU_UQUEUE_WAIT, &w));
	w = (struct drm_hpu_uqueue_wait){ .id = self->q.id, .pad = 1 };
	EXPECT_EQ(-EINVAL, hpu_ioc(self->fd, DRM_IOCTL_HPU_UQUEUE_WAIT, &w));
	EXPECT_EQ(-ENOENT, hpu_uq_wait(self->fd, 999, 0, 0, NULL));
	/* A queue with nothing to do has reached CI 0, but not 1. */
	EXPECT_EQ(0, hpu_uq_wait(self->fd, self->q.id, 0, 0, NULL));
	EXPECT_EQ(-ETIME, hpu_uq_wait(self->fd, self->q.id, 1, 0, NULL));
	EXPECT_EQ(-ETIME, hpu_uq_wait(self->fd, self->q.id, 1, 20000000, NULL));
}

/* A job stalled on a WAIT: the wait times out, a doorbell after the signal resumes it. */
TEST_F(uq, stalled_job_waits_and_resumes)
{
	uint32_t pos, seen;

	hpu_cb_wait(&self->cb, self->host_va, 1);
	hpu_cb_memset(&self->cb, self->host_va + 8, 0x42, 8);
	pos = hpu_uq_put(&self->q, &self->cb, 0);
	hpu_uq_ring(&self->q);
	EXPECT_EQ(-ETIME, hpu_uq_wait(self->fd, self->q.id, pos + 1, 50000000, &seen));
	EXPECT_EQ(0xffffffffu, hpu_uq_slot(&self->q, pos)->status);
	__atomic_store_n((uint32_t *)self->host, 1, __ATOMIC_RELEASE);
	/* The same PI again: the device looks at its waits. */
	hpu_uq_ring(&self->q);
	ASSERT_EQ(0, hpu_uq_wait(self->fd, self->q.id, pos + 1, 5000000000ll, &seen));
	EXPECT_EQ(pos + 1, seen);
	EXPECT_EQ(0, hpu_uq_slot(&self->q, pos)->status);
	EXPECT_EQ(0x42, self->host[8]);
}

static void touch_doorbell(volatile uint32_t *db)
{
	(void)db[HPU_UQ_DB_CI / 4];
}

/* 1 if touching db in a child dies of SIGBUS, 0 if it reads, -1 otherwise. */
static int doorbell_faults(volatile uint32_t *db)
{
	int status;
	pid_t pid = fork();

	if (!pid) {
		touch_doorbell(db);
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	if (WIFSIGNALED(status))
		return WTERMSIG(status) == SIGBUS ? 1 : -1;
	return WIFEXITED(status) && !WEXITSTATUS(status) ? 0 : -1;
}

TEST_F(uq, doorbell_mapping_rules)
{
	int other = hpu_open_node(self->bdf);
	uint64_t offset;
	uint32_t id;
	volatile uint32_t *db;

	ASSERT_LE(0, other);
	ASSERT_EQ(0, hpu_uq_create(self->fd, self->q.va, HPU_UQ_TEST_RING, &id, &offset));
	/* Device registers cannot be copied on write, nor mapped past their page. */
	EXPECT_EQ(MAP_FAILED, hpu_uq_db_map(self->fd, offset, MAP_PRIVATE));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 2 * HPU_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED,
				   self->fd, (off_t)offset));
	/* Another file cannot map this file's doorbell. */
	EXPECT_EQ(MAP_FAILED, hpu_uq_db_map(other, offset, MAP_SHARED));
	EXPECT_EQ(EACCES, errno);
	db = hpu_uq_db_map(self->fd, offset, MAP_SHARED);
	ASSERT_NE(MAP_FAILED, (void *)db);
	EXPECT_EQ(0, doorbell_faults(db));
	EXPECT_EQ(0, hpu_uq_destroy(self->fd, id));
	/* Once destroyed, the page is gone from the mapping and cannot be mapped again. */
	EXPECT_EQ(1, doorbell_faults(db));
	EXPECT_EQ(MAP_FAILED, hpu_uq_db_map(self->fd, offset, MAP_SHARED));
	EXPECT_EQ(-ENOENT, hpu_uq_destroy(self->fd, id));
	munmap((void *)db, HPU_UQ_DB_PAGE_SIZE);
	close(other);
}

/* Queues are a device-wide pool: -ENOSPC when all are bound, back when a file closes. */
TEST_F(uq, pool_is_shared_and_returned_at_close)
{
	int fds[HPU_NUM_UQ];
	struct hpu_uq stalled;
	unsigned int n = 0, i;
	uint64_t offset;
	uint32_t id;
	int err = 0;

	/* Our fixture holds one; the rest go to files that then close with a job stalled. */
	while (n < HPU_NUM_UQ) {
		fds[n] = hpu_open_node(self->bdf);
		ASSERT_LE(0, fds[n]);
		err = hpu_uq_create(fds[n], self->q.va, HPU_UQ_TEST_RING, &id, &offset);
		n++;
		if (err)
			break;
	}
	EXPECT_EQ(-ENOSPC, err);
	EXPECT_EQ(HPU_NUM_UQ, n);
	close(fds[0]);
	fds[0] = hpu_open_node(self->bdf);
	ASSERT_LE(0, fds[0]);
	ASSERT_EQ(0, hpu_uq_open(&stalled, fds[0]));
	self->cb.size = 0;
	hpu_cb_wait(&self->cb, stalled.va + HPU_UQ_TEST_ARENA_OFF, 7);
	hpu_uq_put(&stalled, &self->cb, 0);
	hpu_uq_ring(&stalled);
	/* Exit with the job in flight: its queue is reset and freed. */
	close(fds[0]);
	munmap((void *)stalled.db, HPU_UQ_DB_PAGE_SIZE);
	munmap(stalled.mem, HPU_UQ_TEST_BYTES);
	fds[0] = hpu_open_node(self->bdf);
	ASSERT_LE(0, fds[0]);
	EXPECT_EQ(0, hpu_uq_create(fds[0], self->q.va, HPU_UQ_TEST_RING, &id, &offset));
	for (i = 0; i < n; i++)
		close(fds[i]);
}

/* A file holds at most max_file_uqueues (4 by default) queues: -EDQUOT past that, not -ENOSPC. */
TEST_F(uq, a_file_gets_at_most_its_share)
{
	int other = hpu_open_node(self->bdf);
	uint32_t id[4], theirs;
	uint64_t offset;
	unsigned int i;

	ASSERT_LE(0, other);
	/* The fixture's queue is the first of four. */
	for (i = 1; i < 4; i++)
		ASSERT_EQ(0, hpu_uq_create(self->fd, self->q.va, HPU_UQ_TEST_RING, &id[i], &offset));
	EXPECT_EQ(-EDQUOT, hpu_uq_create(self->fd, self->q.va, HPU_UQ_TEST_RING, &id[0], &offset));
	/* Other files still get theirs. */
	EXPECT_EQ(0, hpu_uq_create(other, self->q.va, HPU_UQ_TEST_RING, &theirs, &offset));
	/* A destroyed queue makes room in the share again. */
	EXPECT_EQ(0, hpu_uq_destroy(self->fd, id[3]));
	EXPECT_EQ(0, hpu_uq_create(self->fd, self->q.va, HPU_UQ_TEST_RING, &id[3], &offset));
	for (i = 1; i < 4; i++)
		EXPECT_EQ(0, hpu_uq_destroy(self->fd, id[i]));
	close(other);
}

/* Unmapped pages stay pinned until the job that might use them has ended, and it faults. */
TEST_F(uq, unmap_waits_for_running_jobs)
{
	struct drm_hpu_stats st;
	uint8_t *dst = hpu_host_pages(16 * HPU_PAGE);
	uint64_t dst_va = 0, before;
	uint32_t pos;

	ASSERT_NE(NULL, dst);
	ASSERT_EQ(0, hpu_vm_map(self->fd, 0, 0, dst, 16 * HPU_PAGE, DRM_HPU_VM_MAP_WRITE, &dst_va));
	ASSERT_EQ(0, hpu_stats(self->fd, &st));
	before = st.ctx_host_pinned;
	hpu_cb_wait(&self->cb, self->host_va, 1);
	hpu_cb_memset(&self->cb, dst_va, 0x33, 16 * HPU_PAGE);
	pos = hpu_uq_put(&self->q, &self->cb, 0);
	hpu_uq_ring(&self->q);
	ASSERT_EQ(0, hpu_vm_unmap(self->fd, dst_va));
	ASSERT_EQ(0, hpu_stats(self->fd, &st));
	EXPECT_EQ(before, st.ctx_host_pinned);
	__atomic_store_n((uint32_t *)self->host, 1, __ATOMIC_RELEASE);
	hpu_uq_ring(&self->q);
	ASSERT_EQ(0, hpu_uq_wait(self->fd, self->q.id, pos + 1, 5000000000ll, NULL));
	EXPECT_EQ(HPU_UQ_STATUS_MMU_FAULT, hpu_uq_slot(&self->q, pos)->status);
	EXPECT_EQ(0, dst[0]);
	ASSERT_EQ(0, hpu_stats(self->fd, &st));
	EXPECT_EQ(before - 16 * HPU_PAGE, st.ctx_host_pinned);
	munmap(dst, 16 * HPU_PAGE);
}

/* Every bad doorbell write is refused by the device, which logs it; the queue is unharmed. */
TEST_F(uq, bad_doorbells_change_nothing)
{
	char mark[64];

	ASSERT_EQ(0, hpu_log_mark(mark, sizeof(mark)));
	self->q.db[HPU_UQ_DB_PI / 4] = HPU_UQ_TEST_RING + 1;	/* past the ring */
	self->q.db[HPU_UQ_DB_CI / 4] = 5;		/* read-only */
	EXPECT_EQ(0, self->q.db[HPU_UQ_DB_PI / 4]);
	EXPECT_EQ(0, self->q.db[HPU_UQ_DB_CI / 4]);
	hpu_cb_memset(&self->cb, self->host_va, 5, 8);
	EXPECT_EQ(0, hpu_uq_run(&self->q, &self->cb));
	EXPECT_EQ(5, self->host[0]);
	/* Moving PI back is refused too. */
	self->q.db[HPU_UQ_DB_PI / 4] = 0;
	EXPECT_EQ(1, self->q.db[HPU_UQ_DB_PI / 4]);
	usleep(100000);
	/* Errors close together share an interrupt: at least one line. */
	EXPECT_LE(1, hpu_log_count(mark, "hpu .*device error"));
}

struct uq_waiter {
	int fd;
	uint32_t id, ci;
};

/* In a child: UQUEUE_WAIT without a timeout (for a job that does not end). */
static void uq_wait_forever(void *arg)
{
	struct uq_waiter *w = arg;

	hpu_uq_wait(w->fd, w->id, w->ci, -1, NULL);
	_exit(2);
}

/* A process sleeping in UQUEUE_WAIT without a timeout dies of SIGKILL at once. */
TEST_F(uq, a_wait_without_timeout_is_killable)
{
	struct uq_waiter w = { .fd = self->fd, .id = self->q.id };
	double s;

	/* Stalled on a WAIT nobody signals, until the destroy at teardown. */
	hpu_cb_wait(&self->cb, self->host_va, 1);
	w.ci = hpu_uq_put(&self->q, &self->cb, 0) + 1;
	hpu_uq_ring(&self->q);
	s = hpu_kill_blocked(uq_wait_forever, &w, 300);
	EXPECT_LE(0, s);
	EXPECT_GT(2, s);
}

/* With a short job timeout; the driver's defaults come back whatever the test did. */
FIXTURE(watchdog) {
	char bdf[64];
	int fd;
};

FIXTURE_SETUP(watchdog)
{
	/* Its files time out on purpose, again and again: no ban (faults_test checks it). */
	ASSERT_EQ(0, hpu_reload("job_timeout_ms=300 reset_ban_limit=0"));
	ASSERT_EQ(0, hpu_find_bdf(self->bdf, sizeof(self->bdf)));
	self->fd = hpu_open_node(self->bdf);
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(watchdog)
{
	close(self->fd);
	hpu_reload("");
}

/* A queue whose job does not end within the job timeout is reset: waits end, the job reads aborted. */
TEST_F(watchdog, resets_a_stuck_queue)
{
	struct hpu_cb cb = { .size = 0 };
	struct timespec t0, t1;
	uint32_t pos, seen;
	struct hpu_uq q;
	char mark[64];
	double s;

	ASSERT_EQ(0, hpu_uq_open(&q, self->fd));
	/* Waits on a word of its own arena that nothing signals. */
	hpu_cb_wait(&cb, q.va + HPU_UQ_TEST_BYTES - 8, 1);
	pos = hpu_uq_put(&q, &cb, 0);
	ASSERT_EQ(0, hpu_log_mark(mark, sizeof(mark)));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	hpu_uq_ring(&q);
	ASSERT_EQ(0, hpu_uq_wait(self->fd, q.id, pos + 1, -1, &seen));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	s = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	EXPECT_EQ(HPU_UQ_STATUS_ABORTED, hpu_uq_slot(&q, pos)->status);
	EXPECT_LE(300, (int)(s * 1000));
	EXPECT_EQ(1, hpu_log_count(mark, "user queue [0-9]+ .*no job ended in 300 ms"));
	/* The queue works on. */
	cb.size = 0;
	hpu_cb_signal(&cb, q.va + HPU_UQ_TEST_BYTES - 8, 1);
	EXPECT_EQ(0, hpu_uq_run(&q, &cb));
	hpu_uq_close(&q);
}

/*
 * Sets or clears the function mask of the device's MSI-X capability in its
 * config space (as root): meanwhile every interrupt is held back, as if lost.
 */
static int mask_msix(const char *bdf, int masked)
{
	uint8_t cfg[256], ctrl;
	char path[128];
	unsigned int pos, hops;
	int fd, ret = -ENOENT;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/config", bdf);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (pread(fd, cfg, sizeof(cfg), 0) != sizeof(cfg)) {
		close(fd);
		return -EIO;
	}
	/* The capability list, from PCI_CAPABILITY_LIST; MSI-X is ID 0x11. */
	for (pos = cfg[0x34] & ~3u, hops = 0; pos && hops < 48; pos = cfg[pos + 1] & ~3u, hops++) {
		if (cfg[pos] != 0x11)
			continue;
		/* Message Control's high byte: bit 6 is the function mask. */
		ctrl = masked ? cfg[pos + 3] | 0x40 : cfg[pos + 3] & ~0x40;
		ret = pwrite(fd, &ctrl, 1, pos + 3) == 1 ? 0 : -EIO;
		break;
	}
	close(fd);
	return ret;
}

/* After a while, sets the word the stalled job waits for and rings the doorbell again. */
static void *release_stalled(void *arg)
{
	struct hpu_uq *q = arg;

	usleep(100 * 1000);
	__atomic_store_n((uint32_t *)(q->mem + HPU_UQ_TEST_BYTES - 8), 1, __ATOMIC_RELEASE);
	hpu_uq_ring(q);
	return NULL;
}

/*
 * The interrupt of a job that ends while UQUEUE_WAIT sleeps forever is held
 * back: the wait still ends, within a watchdog period (half the job timeout).
 */
TEST_F(watchdog, a_lost_interrupt_costs_at_most_a_period)
{
	struct hpu_cb cb = { .size = 0 };
	uint32_t pos, seen;
	struct hpu_uq q;
	pthread_t t;
	double t0, s;

	ASSERT_EQ(0, hpu_uq_open(&q, self->fd));
	hpu_cb_wait(&cb, q.va + HPU_UQ_TEST_BYTES - 8, 1);
	pos = hpu_uq_put(&q, &cb, 0);
	hpu_uq_ring(&q);
	EXPECT_EQ(0, mask_msix(self->bdf, 1));
	t0 = hpu_now_s();
	EXPECT_EQ(0, pthread_create(&t, NULL, release_stalled, &q));
	EXPECT_EQ(0, hpu_uq_wait(self->fd, q.id, pos + 1, -1, &seen));
	s = hpu_now_s() - t0;
	pthread_join(t, NULL);
	EXPECT_EQ(0, mask_msix(self->bdf, 0));
	EXPECT_EQ(pos + 1, seen);
	/* It ended on its own, before the watchdog would have reset the queue. */
	EXPECT_EQ(0, hpu_uq_slot(&q, pos)->status);
	EXPECT_GT(1.0, s);
	hpu_uq_close(&q);
}

/*
 * The side of the stuck job's GEMMs: each OpenBLAS call the engine makes
 * for them, which a reset waits out, is the longest it makes (a billion
 * multiply-adds: 256 rows of C, tens of ms), so that a test sees the
 * engine still in the job after a failed reset.
 */
#define STUCK_GEMM_N 2048u
#define STUCK_GEMM_BYTES ((uint64_t)STUCK_GEMM_N * STUCK_GEMM_N * 4)

/* A job a queue reset finds the engine in: with a microsecond to stop, the reset fails. */
struct stuck_job {
	struct hpu_uq q;
	void *a;		/* A, in host pages */
	uint64_t va[3];		/* A, B, C */
	uint32_t pos;		/* the job's place in q */
};

/*
 * Opens j->q on fd and submits the job: 512 GEMMs whose A is in host pages
 * (the engine stages it and runs each GEMM whole, without yielding, so a
 * reset finds the engine in the job), far longer than a reset takes to
 * come, however fast the host.  Sets queue_reset_timeout_us to 1 and has
 * the device ignore every engine and device reset, so that the reset
 * ladder fails (the fixture's reload restores both).
 */
static int stuck_job_start(struct stuck_job *j, const char *bdf, int fd)
{
	struct hpu_cb cb = { .size = 0 };
	unsigned int i;
	uint32_t h;
	int err;

	memset(j, 0, sizeof(*j));
	j->a = hpu_host_pages(STUCK_GEMM_BYTES);
	if (!j->a)
		return -ENOMEM;
	err = hpu_vm_map(fd, 0, 0, j->a, STUCK_GEMM_BYTES,
			 DRM_HPU_VM_MAP_READ | DRM_HPU_VM_MAP_WRITE, &j->va[0]);
	for (i = 1; !err && i < 3; i++) {
		err = hpu_gem_create(fd, STUCK_GEMM_BYTES, 0, &h);
		if (!err)
			err = hpu_vm_map(fd, h, 0, NULL, STUCK_GEMM_BYTES,
					 DRM_HPU_VM_MAP_READ | DRM_HPU_VM_MAP_WRITE, &j->va[i]);
	}
	if (!err)
		err = hpu_uq_open(&j->q, fd);
	if (!err)
		err = hpu_write_file("/sys/module/hpu/parameters/queue_reset_timeout_us", "1");
	if (!err)
		err = hpu_fault_arm(bdf, "reset_fail", "4294967295");
	if (err)
		return err;
	hpu_cb_square_gemms(&cb, STUCK_GEMM_N, j->va[0], j->va[1], j->va[2], 512);
	j->pos = hpu_uq_put(&j->q, &cb, 0);
	hpu_uq_ring(&j->q);
	return 0;
}

/*
 * Whether the reset of the stuck job's queue, which ended the job or marked
 * the device MALFUNCTION, failed: 1 if "does not stop" is in the log after
 * mark, 0 if not, -errno if the log cannot say.  The driver logs it before
 * it lets go of the user queues' lock, which INFO_STATS takes
 * (hpu_uq_stats()): the query waits for the verdict.
 */
static int stuck_job_reset_failed(int fd, const char *mark)
{
	struct drm_hpu_stats st;
	int err = hpu_stats(fd, &st);

	return err ? err : hpu_log_count(mark, "user queue [0-9]+ does not stop");
}

/*
 * How many stuck jobs a test starts for a reset that fails: the engine
 * leaves its job between two GEMM steps, which a reset waits for, and a
 * loaded host may delay the vCPU between the ladder's looks past the end
 * of the step the engine is in, so that the reset works.
 */
#define STUCK_JOB_TRIES 10

/* The stuck job's queue closed, A unmapped; B and C go with the file. */
static void stuck_job_end(struct stuck_job *j)
{
	hpu_uq_close(&j->q);
	munmap(j->a, STUCK_GEMM_BYTES);
}

/* Whether the stuck job has ended (the device wrote its status), waiting up to timeout_s. */
static bool stuck_job_ended(struct stuck_job *j, double timeout_s)
{
	double until = hpu_now_s() + timeout_s;

	while (__atomic_load_n(&hpu_uq_slot(&j->q, j->pos)->status, __ATOMIC_ACQUIRE) ==
	       0xffffffffu) {
		if (hpu_now_s() >= until)
			return false;
		usleep(1000);
	}
	return true;
}

/*
 * The watchdog's reset of a user queue that does not stop the engine (it
 * has a microsecond, and the engine is inside a GEMM step), nor do the
 * engine and device resets after it (the device ignores them): the device
 * reads MALFUNCTION and takes no new queue; the job still ends, aborted,
 * and the destroy returns once the engine has let go.  A reset that
 * worked (the engine left the job in time) leaves the device READY, and
 * the test starts another stuck job.
 */
TEST_F_TIMEOUT(watchdog, a_failed_reset_marks_the_device_malfunctioning, 120)
{
	unsigned int tries = 0;
	struct stuck_job j;
	uint64_t offset;
	char mark[64];
	int failed;
	uint32_t id;

	for (;;) {
		ASSERT_EQ(0, hpu_log_mark(mark, sizeof(mark)));
		ASSERT_EQ(0, stuck_job_start(&j, self->bdf, self->fd));
		ASSERT_EQ(0, hpu_uq_wait(self->fd, j.q.id, j.pos + 1, -1, NULL));
		EXPECT_EQ(HPU_UQ_STATUS_ABORTED, hpu_uq_slot(&j.q, j.pos)->status);
		failed = stuck_job_reset_failed(self->fd, mark);
		ASSERT_LE(0, failed);
		if (failed || ++tries == STUCK_JOB_TRIES)
			break;
		/* A reset that worked asks for no device reset. */
		ASSERT_EQ(DRM_HPU_STATUS_READY, hpu_device_status(self->fd));
		stuck_job_end(&j);
	}
	TH_LOG("the engine left %u stuck jobs before their reset failed", tries);
	ASSERT_EQ(1, failed);
	/* The device reset the failed engine reset asked for fails in its work. */
	EXPECT_EQ(DRM_HPU_STATUS_MALFUNCTION,
		  hpu_wait_device_status(self->fd, DRM_HPU_STATUS_MALFUNCTION, 30));
	EXPECT_EQ(-EIO, hpu_uq_create(self->fd, j.q.va, HPU_UQ_TEST_RING, &id, &offset));
	stuck_job_end(&j);
}

/*
 * A process whose UQUEUE_DESTROY waits for the engine to let go of a job
 * its reset did not stop dies of SIGKILL at once.  The queue stays
 * retired, holding the context's memory, while the file is still open in
 * the parent (a fork): the parent's VM_UNMAP of the job's host pages keeps
 * them pinned until the job has ended, its close then waits for nothing
 * more, and the module unloads clean (the fixture's reload).
 */
TEST_F_TIMEOUT(watchdog, a_destroy_waiting_for_a_stuck_engine_is_killable, 120)
{
	unsigned int tries = 0;
	struct drm_hpu_stats st;
	double killed, s, until;
	struct stuck_job j;
	uint64_t before;
	bool in_job;
	char mark[64];
	int status, failed;
	pid_t pid;

	for (;;) {
		ASSERT_EQ(0, hpu_log_mark(mark, sizeof(mark)));
		ASSERT_EQ(0, stuck_job_start(&j, self->bdf, self->fd));
		ASSERT_EQ(0, hpu_stats(self->fd, &st));
		before = st.ctx_host_pinned;
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid) {
			hpu_uq_destroy(self->fd, j.q.id);
			/* Whether the engine let go first or not, only the kill ends the child. */
			for (;;)
				pause();
		}
		/*
		 * The destroy's reset ends the job, or fails and asks for the device reset that
		 * ends in MALFUNCTION, under the lock under which it retires the queue (before
		 * the unmap's snapshot): either way its verdict is in.  Nothing fails the test
		 * until the child is killed, which it must outlive.
		 */
		until = hpu_now_s() + 30;
		while (hpu_device_status(self->fd) != DRM_HPU_STATUS_MALFUNCTION &&
		       !stuck_job_ended(&j, 0) && hpu_now_s() < until)
			usleep(1000);
		failed = stuck_job_reset_failed(self->fd, mark);
		if (failed || ++tries == STUCK_JOB_TRIES)
			break;
		/* The engine left the job in time: the destroy returned, and the device is READY. */
		kill(pid, SIGKILL);
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		ASSERT_EQ(DRM_HPU_STATUS_READY, hpu_device_status(self->fd));
		stuck_job_end(&j);
	}
	TH_LOG("the engine left %u stuck jobs before their destroy's reset failed", tries);
	/* The retired queue's job may still read A: unmapped, its pages stay pinned meanwhile. */
	EXPECT_EQ(0, hpu_vm_unmap(self->fd, j.va[0]));
	EXPECT_EQ(0, hpu_stats(self->fd, &st));
	in_job = !stuck_job_ended(&j, 0);
	if (in_job)
		EXPECT_EQ(before, st.ctx_host_pinned);
	killed = hpu_now_s();
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	s = hpu_now_s() - killed;
	TH_LOG("reaped %.0f ms after the kill; the engine %s the job at the unmap, %s it at the reap",
	       s * 1000, in_job ? "in" : "out of", stuck_job_ended(&j, 0) ? "out of" : "in");
	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	EXPECT_GT(2, s);
	ASSERT_EQ(1, failed);
	EXPECT_EQ(DRM_HPU_STATUS_MALFUNCTION,
		  hpu_wait_device_status(self->fd, DRM_HPU_STATUS_MALFUNCTION, 30));
	EXPECT_EQ(1, hpu_log_count(mark, "user queue [0-9]+ does not stop: retired"));
	/* The queue left the file, though its engine may still be in the job. */
	EXPECT_EQ(-ENOENT, hpu_uq_destroy(self->fd, j.q.id));
	/* Aborted, or faulting on A if it reached for it again before it saw the abort. */
	ASSERT_TRUE(stuck_job_ended(&j, 10));
	status = hpu_uq_slot(&j.q, j.pos)->status;
	EXPECT_TRUE(status == HPU_UQ_STATUS_ABORTED || status == HPU_UQ_STATUS_MMU_FAULT);
	/* Once it ended, the next unmap releases them. */
	ASSERT_EQ(0, hpu_vm_unmap(self->fd, j.va[1]));
	ASSERT_EQ(0, hpu_stats(self->fd, &st));
	EXPECT_EQ(before - STUCK_GEMM_BYTES, st.ctx_host_pinned);
	hpu_uq_close(&j.q);
	munmap(j.a, STUCK_GEMM_BYTES);
}

TEST_HARNESS_MAIN
