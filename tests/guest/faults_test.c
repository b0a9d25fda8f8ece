// SPDX-License-Identifier: GPL-2.0
/*
 * Faults are survived (root): for each fault the device can inject
 * (debugfs fault/<kind>/, kernel/hpu_inject.c), a guilty file gets the
 * fault while two innocent files run deterministic DMA copies, on kernel
 * queues (SUBMIT) and on a user queue each (doorbell), some queued behind
 * the guilty job, some parked on a WAIT across a device reset: the guilty
 * job fails with the errno the fault means, every innocent job completes
 * and its bytes are bitwise right, the device is READY again and INFO
 * counts the resets the ladder took (kernel/hpu_reset.c) and their cause.
 * Then a file whose jobs time out reset_ban_limit times is banned (its
 * user queue stopped too), a job submitted while a device reset is in
 * progress runs after it, and a device reset by hand sends its uevent.
 *
 * Each case prints, for `make test-faults` (HPU_BENCH=1: plain lines; else
 * as TAP comments):
 *   BENCH fault_<kind>_detect_ms       from the guilty submission (or the fault's arming)
 *                                      to what user space first sees of it: the guilty
 *                                      job's end, else INFO reading IN_RESET or a reset
 *   BENCH fault_<kind>_recover_ms      from the guilty submission to every job ended
 *   BENCH fault_<kind>_innocent_lost   innocent jobs that did not complete
 *   BENCH fault_<kind>_innocent_wrong  innocent copies not bitwise right
 *
 * The module is reloaded for each case with a 2 s job timeout and a 50 ms
 * heartbeat (lost_irq: 20 s, so that only the heartbeat can end its job
 * in time), and queue_reset_timeout_us is 100 ms; the cold reset at probe
 * disarms every fault, and the teardown's reload brings the defaults back.
 */
#include <poll.h>
#include <stdbool.h>
#include <sys/wait.h>
#include <linux/netlink.h>
#include <sys/socket.h>

#include "kselftest_harness.h"
#include "hpu_abi.h"
#include "hpu_test.h"
#include "hpu_faults.h"

#define RW (DRM_HPU_VM_MAP_READ | DRM_HPU_VM_MAP_WRITE)
#define INNOCENTS 2
#define COPIES 8			/* copy jobs per innocent file, on queues j % 4 */
#define UQ_COPIES 4			/* copy jobs per innocent file on its user queue */
#define CHUNK (64 * 1024ull)		/* bytes each copy job moves */
#define UQ_CHUNK (COPIES + 1)		/* the first user-queue job's chunk */
#define ARENA ((UQ_CHUNK + UQ_COPIES) * CHUNK)	/* + the parked job's chunk, the user queue's */
#define GUILTY_QUEUE 0
#define RELEASE_QUEUE 3			/* the innocents' parked jobs are on 1 and 2 */
#define WAIT_NS 120000000000ll
#define LONG_BYTES (64ull << 20)

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* An innocent file: host source and destination, HBM between them, and a sync word. */
struct innocent {
	int fd;
	uint8_t *src, *dst;
	volatile uint32_t *sync;
	uint64_t src_va, dst_va, hbm_va, sync_va;
	uint32_t hbm;
	uint64_t seq[COPIES + 1];	/* [COPIES]: the parked one */
	struct hpu_uq uq;		/* its jobs at positions 0 .. UQ_COPIES - 1 */
};

/* Job j of @in: src chunk j -> HBM chunk j -> dst chunk j, after a WAIT for the sync if @park. */
static int innocent_submit(struct innocent *in, unsigned int j, unsigned int queue, bool park)
{
	struct hpu_cb cb = { .size = 0 };

	if (park)
		hpu_cb_wait(&cb, in->sync_va, 1);
	hpu_cb_dma(&cb, in->hbm_va + j * CHUNK, in->src_va + j * CHUNK, CHUNK);
	hpu_cb_dma(&cb, in->dst_va + j * CHUNK, in->hbm_va + j * CHUNK, CHUNK);
	return hpu_submit(in->fd, queue, cb.buf, cb.size, &in->seq[j]);
}

/* User-queue job k of @in (not rung): chunk UQ_CHUNK + k, as innocent_submit() copies. */
static void innocent_uq_put(struct innocent *in, unsigned int k, bool park)
{
	uint64_t off = (UQ_CHUNK + k) * CHUNK;
	struct hpu_cb cb = { .size = 0 };

	if (park)
		hpu_cb_wait(&cb, in->sync_va, 1);
	hpu_cb_dma(&cb, in->hbm_va + off, in->src_va + off, CHUNK);
	hpu_cb_dma(&cb, in->dst_va + off, in->hbm_va + off, CHUNK);
	hpu_uq_put(&in->uq, &cb, 0);
}

static int innocent_open(struct innocent *in, const char *bdf, unsigned int salt)
{
	uint64_t x = 0x9e3779b97f4a7c15ull * (salt + 1);
	unsigned int i;
	int err;

	memset(in, 0, sizeof(*in));
	in->fd = hpu_open_node(bdf);
	if (in->fd < 0)
		return in->fd;
	in->src = hpu_host_pages(ARENA);
	in->dst = hpu_host_pages(ARENA);
	in->sync = hpu_host_pages(HPU_PAGE);
	if (!in->src || !in->dst || !in->sync)
		return -ENOMEM;
	/* xorshift64: every file's bytes its own, the same every run. */
	for (i = 0; i < ARENA / 8; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		((uint64_t *)in->src)[i] = x;
	}
	memset(in->dst, 0, ARENA);
	err = hpu_vm_map(in->fd, 0, 0, in->src, ARENA, DRM_HPU_VM_MAP_READ, &in->src_va);
	if (!err)
		err = hpu_vm_map(in->fd, 0, 0, in->dst, ARENA, RW, &in->dst_va);
	if (!err)
		err = hpu_vm_map(in->fd, 0, 0, (void *)in->sync, HPU_PAGE, RW, &in->sync_va);
	if (!err)
		err = hpu_gem_create(in->fd, ARENA, 0, &in->hbm);
	if (!err)
		err = hpu_vm_map(in->fd, in->hbm, 0, NULL, ARENA, RW, &in->hbm_va);
	if (!err)
		err = hpu_uq_open(&in->uq, in->fd);
	return err;
}

static void innocent_close(struct innocent *in)
{
	if (in->uq.mem)
		hpu_uq_close(&in->uq);
	if (in->fd >= 0)
		close(in->fd);
	munmap(in->src, ARENA);
	munmap(in->dst, ARENA);
	munmap((void *)in->sync, HPU_PAGE);
}

static void bench(const char *kind, const char *what, double v)
{
	if (getenv("HPU_BENCH"))
		printf("BENCH fault_%s_%s %.0f\n", kind, what, v);
	else
		printf("# BENCH fault_%s_%s %.0f\n", kind, what, v);
	fflush(stdout);
}

FIXTURE(faults) {
	char bdf[64];
	int fd;				/* the guilty file */
	struct innocent in[INNOCENTS];
	uint8_t *buf;			/* the guilty job's host memory */
	uint64_t buf_va;
};

/*
 * One fault: @kind is armed for its next event (@also too, if set); the
 * guilty file submits a copy on GUILTY_QUEUE, which fails with @guilty_err
 * (0: completes); @by_hand resets the device through debugfs instead.  The
 * counts of INFO grow by the resets given, and the last cause becomes
 * @cause (-1: stays).
 */
FIXTURE_VARIANT(faults) {
	const char *name;		/* of the BENCH lines */
	const char *kind;
	const char *also;
	const char *params;
	bool guilty_first;		/* the guilty job ends before the innocents start */
	bool long_guilty;		/* it first fills LONG_BYTES of HBM: WAIT sleeps for it */
	bool by_hand;
	bool no_guilty;
	int guilty_err;
	unsigned int queue_resets, engine_resets, device_resets;
	int cause;
};

#define STD_PARAMS "job_timeout_ms=2000 heartbeat_ms=50"

FIXTURE_VARIANT_ADD(faults, engine_hang) {
	.name = "engine_hang",
	.kind = "engine_hang", .params = STD_PARAMS, .guilty_first = false,
	.guilty_err = -ETIMEDOUT, .queue_resets = 1, .engine_resets = 1,
	.cause = DRM_HPU_RESET_CAUSE_HANG,
};

FIXTURE_VARIANT_ADD(faults, reset_fail) {
	.name = "reset_fail",
	/* The engine reset is ignored: the device reset takes the hung engine back. */
	.kind = "engine_hang", .also = "reset_fail", .params = STD_PARAMS,
	.guilty_err = -ETIMEDOUT, .queue_resets = 1, .engine_resets = 1, .device_resets = 1,
	.cause = DRM_HPU_RESET_CAUSE_HANG,
};

FIXTURE_VARIANT_ADD(faults, mmu_fault) {
	.name = "mmu_fault",
	.kind = "mmu_fault", .params = STD_PARAMS, .guilty_first = true,
	.guilty_err = -EFAULT, .cause = -1,
};

FIXTURE_VARIANT_ADD(faults, dma_error) {
	.name = "dma_error",
	.kind = "dma_error", .params = STD_PARAMS, .guilty_first = true,
	.guilty_err = -EIO, .cause = -1,
};

FIXTURE_VARIANT_ADD(faults, lost_irq) {
	.name = "lost_irq",
	.kind = "lost_irq", .params = "job_timeout_ms=20000 heartbeat_ms=50",
	.guilty_first = true, .long_guilty = true, .guilty_err = 0, .cause = -1,
};

FIXTURE_VARIANT_ADD(faults, bad_completion) {
	.name = "bad_completion",
	/* The job ran, but its completion is wrong: it fails once the job timeout looks. */
	.kind = "bad_completion", .params = STD_PARAMS, .guilty_first = true,
	.guilty_err = -EIO, .cause = -1,
};

FIXTURE_VARIANT_ADD(faults, heartbeat_loss) {
	.name = "heartbeat_loss",
	.kind = "heartbeat_loss", .params = STD_PARAMS, .no_guilty = true,
	.device_resets = 1, .cause = DRM_HPU_RESET_CAUSE_HEARTBEAT,
};

FIXTURE_VARIANT_ADD(faults, boot_fail) {
	.name = "boot_fail",
	/* The device reset's first boot fails; its next try boots. */
	.kind = "boot_fail", .params = STD_PARAMS, .no_guilty = true, .by_hand = true,
	.device_resets = 1, .cause = DRM_HPU_RESET_CAUSE_REQUEST,
};

FIXTURE_SETUP(faults)
{
	unsigned int i;

	ASSERT_EQ(0, hpu_reload(variant->params));
	ASSERT_EQ(0, hpu_find_bdf(self->bdf, sizeof(self->bdf)));
	ASSERT_EQ(0, hpu_write_file("/sys/module/hpu/parameters/queue_reset_timeout_us",
				    "100000"));
	/* Mounts debugfs if need be. */
	ASSERT_LE(0, hpu_usage(self->bdf, "contexts"));
	self->fd = hpu_open_node(self->bdf);
	ASSERT_LE(0, self->fd);
	self->buf = hpu_host_pages(2 * CHUNK);
	ASSERT_NE(NULL, self->buf);
	ASSERT_EQ(0, hpu_vm_map(self->fd, 0, 0, self->buf, 2 * CHUNK, RW, &self->buf_va));
	for (i = 0; i < INNOCENTS; i++)
		ASSERT_EQ(0, innocent_open(&self->in[i], self->bdf, i));
}

FIXTURE_TEARDOWN(faults)
{
	unsigned int i;

	for (i = 0; i < INNOCENTS; i++)
		innocent_close(&self->in[i]);
	close(self->fd);
	munmap(self->buf, 2 * CHUNK);
	hpu_reload("");
}

TEST_F_TIMEOUT(faults, guilty_fails_innocents_complete_bitwise, 300)
{
	struct drm_hpu_device_info before, after;
	struct hpu_cb cb = { .size = 0 };
	unsigned int i, j, lost = 0, wrong = 0;
	long long injected;
	int ret;
	uint64_t guilty = 0;
	double t0, t1, detect = 0;
	char mark[64];
	int err = 0;

	ASSERT_EQ(0, device_info(self->fd, &before));
	/* Nothing else may take the fault: the buffers freed so far are zeroed. */
	ASSERT_EQ(0, hpu_wait_scrubbed(self->bdf));
	ASSERT_EQ(0, hpu_log_mark(mark, sizeof(mark)));
	/* Counted since power-on, across reloads. */
	injected = fault_get(self->bdf, variant->kind, "injected");
	ASSERT_LE(0, injected);
	ASSERT_EQ(0, hpu_fault_arm(self->bdf, variant->kind, "1"));
	if (variant->also)
		ASSERT_EQ(0, hpu_fault_arm(self->bdf, variant->also, "1"));

	t0 = now_s();
	if (variant->long_guilty) {
		uint64_t va = 0;
		uint32_t h;

		ASSERT_EQ(0, hpu_gem_create(self->fd, LONG_BYTES, 0, &h));
		ASSERT_EQ(0, hpu_vm_map(self->fd, h, 0, NULL, LONG_BYTES, RW, &va));
		hpu_cb_memset(&cb, va, 0x11, LONG_BYTES);
	}
	if (!variant->no_guilty) {
		hpu_cb_dma(&cb, self->buf_va + CHUNK, self->buf_va, CHUNK);
		ASSERT_EQ(0, hpu_submit(self->fd, GUILTY_QUEUE, cb.buf, cb.size, &guilty));
		if (variant->guilty_first) {
			ASSERT_EQ(0, hpu_wait(self->fd, guilty, WAIT_NS, &err));
			detect = now_s();
			EXPECT_EQ(variant->guilty_err, err);
		} else {
			ASSERT_TRUE(fault_wait_injected(self->bdf, variant->kind, injected + 1));
		}
	}
	/*
	 * Copies behind the guilty job and on every queue; without a guilty
	 * job, whose timeout would outlast them, parked ones across the
	 * device reset too.
	 */
	for (i = 0; i < INNOCENTS; i++) {
		ASSERT_EQ(0, innocent_submit(&self->in[i], COPIES, 1 + i, variant->no_guilty));
		for (j = 0; j < COPIES; j++)
			ASSERT_EQ(0, innocent_submit(&self->in[i], j, j % HPU_NUM_QUEUES, false));
		for (j = 0; j < UQ_COPIES; j++)
			innocent_uq_put(&self->in[i], j, variant->no_guilty && !j);
		hpu_uq_ring(&self->in[i].uq);
	}
	if (variant->by_hand) {
		char path[256];

		snprintf(path, sizeof(path), "/sys/kernel/debug/hpu/%s/reset", self->bdf);
		ASSERT_EQ(0, hpu_write_file(path, "1"));
	}
	if (!variant->no_guilty && !variant->guilty_first) {
		ASSERT_EQ(0, hpu_wait(self->fd, guilty, WAIT_NS, &err));
		detect = now_s();
		EXPECT_EQ(variant->guilty_err, err);
	}
	if (variant->no_guilty)
		EXPECT_TRUE(fault_wait_injected(self->bdf, variant->kind, injected + 1));
	/* The recovery is over once INFO counts its device reset. */
	for (i = 0; i < 60000 && variant->device_resets; i++) {
		ASSERT_EQ(0, device_info(self->fd, &after));
		if (!detect && (after.status == DRM_HPU_STATUS_IN_RESET ||
				after.device_resets > before.device_resets))
			detect = now_s();
		if (after.device_resets >= before.device_resets + variant->device_resets &&
		    after.status == DRM_HPU_STATUS_READY)
			break;
		usleep(1000);
	}
	/* Through the device: a parked WAIT looks again when a packet writes memory. */
	for (i = 0; i < INNOCENTS; i++) {
		cb.size = 0;
		hpu_cb_signal(&cb, self->in[i].sync_va, 1);
		EXPECT_EQ(0, hpu_run(self->in[i].fd, RELEASE_QUEUE, cb.buf, cb.size));
	}
	for (i = 0; i < INNOCENTS; i++) {
		for (j = 0; j <= COPIES; j++) {
			ret = hpu_wait(self->in[i].fd, self->in[i].seq[j], WAIT_NS, &err);
			if (ret || err) {
				TH_LOG("innocent %u job %u: wait %d, error %d", i, j, ret, err);
				lost++;
			} else if (memcmp(self->in[i].src + j * CHUNK, self->in[i].dst + j * CHUNK,
					  CHUNK)) {
				wrong++;
			}
		}
		/* Its user queue's: a job a reset dropped keeps the status it was put with. */
		ret = hpu_uq_wait(self->in[i].fd, self->in[i].uq.id, UQ_COPIES, WAIT_NS, NULL);
		for (j = 0; j < UQ_COPIES; j++) {
			uint32_t status = hpu_uq_slot(&self->in[i].uq, j)->status;
			uint64_t off = (UQ_CHUNK + j) * CHUNK;

			if (ret || status) {
				TH_LOG("innocent %u user-queue job %u: wait %d, status 0x%x", i, j,
				       ret, status);
				lost++;
			} else if (memcmp(self->in[i].src + off, self->in[i].dst + off, CHUNK)) {
				wrong++;
			}
		}
	}
	t1 = now_s();
	EXPECT_LT(0, detect);
	bench(variant->name, "detect_ms", (detect - t0) * 1000);
	bench(variant->name, "recover_ms", (t1 - t0) * 1000);
	bench(variant->name, "innocent_lost", lost);
	bench(variant->name, "innocent_wrong", wrong);
	EXPECT_EQ(0, lost);
	EXPECT_EQ(0, wrong);
	if (!variant->no_guilty && !variant->guilty_err) {
		/* lost_irq: the heartbeat's collection ended it, not a job timeout. */
		EXPECT_EQ(0, memcmp(self->buf, self->buf + CHUNK, CHUNK));
		EXPECT_GT(10.0, t1 - t0);
	}

	ASSERT_EQ(0, device_info(self->fd, &after));
	EXPECT_EQ(DRM_HPU_STATUS_READY, after.status);
	EXPECT_EQ(before.queue_resets + variant->queue_resets, after.queue_resets);
	EXPECT_EQ(before.engine_resets + variant->engine_resets, after.engine_resets);
	EXPECT_EQ(before.device_resets + variant->device_resets, after.device_resets);
	EXPECT_EQ(variant->cause >= 0 ? (unsigned int)variant->cause : before.last_reset_cause,
		  after.last_reset_cause);
	EXPECT_EQ(injected + 1, fault_get(self->bdf, variant->kind, "injected"));
	if (variant->guilty_err == -ETIMEDOUT)
		EXPECT_LE(1, hpu_log_count(mark, "job of context [0-9]+ (timed out|hangs)"));
	if (variant->device_resets)
		EXPECT_EQ(1, hpu_log_count(mark, "device reset: done"));
	if (!strcmp(variant->kind, "boot_fail"))
		EXPECT_EQ(1, hpu_log_count(mark, "boot failed: .*injected fault"));

	/* The guilty file still works: one fault does not ban it. */
	cb.size = 0;
	hpu_cb_memset(&cb, self->buf_va, 0x5a, 16);
	EXPECT_EQ(0, hpu_run(self->fd, GUILTY_QUEUE, cb.buf, cb.size));
	EXPECT_EQ(0x5a, self->buf[15]);
}

/* With a short job timeout, for the ban. */
FIXTURE(ban) {
	char bdf[64];
	int fd, fd2;
	uint32_t *sync;
	uint64_t sync_va, sync2_va;
	struct hpu_uq uq, uq2;		/* each file's user queue */
};

FIXTURE_SETUP(ban)
{
	ASSERT_EQ(0, hpu_reload("job_timeout_ms=300 reset_ban_limit=3"));
	ASSERT_EQ(0, hpu_find_bdf(self->bdf, sizeof(self->bdf)));
	self->fd = hpu_open_node(self->bdf);
	self->fd2 = hpu_open_node(self->bdf);
	ASSERT_LE(0, self->fd);
	ASSERT_LE(0, self->fd2);
	self->sync = hpu_host_pages(HPU_PAGE);
	ASSERT_NE(NULL, self->sync);
	ASSERT_EQ(0, hpu_vm_map(self->fd, 0, 0, self->sync, HPU_PAGE, RW, &self->sync_va));
	ASSERT_EQ(0, hpu_vm_map(self->fd2, 0, 0, self->sync, HPU_PAGE, RW, &self->sync2_va));
	ASSERT_EQ(0, hpu_uq_open(&self->uq, self->fd));
	ASSERT_EQ(0, hpu_uq_open(&self->uq2, self->fd2));
}

FIXTURE_TEARDOWN(ban)
{
	hpu_uq_close(&self->uq);
	hpu_uq_close(&self->uq2);
	close(self->fd);
	close(self->fd2);
	munmap(self->sync, HPU_PAGE);
	hpu_reload("");
}

/* A job parked on a WAIT nobody signals: it times out. */
static int submit_stuck(int fd, uint32_t queue, uint64_t sync_va, uint64_t *seq)
{
	struct hpu_cb cb = { .size = 0 };

	hpu_cb_wait(&cb, sync_va, 1);
	return hpu_submit(fd, queue, cb.buf, cb.size, seq);
}

/*
 * A file whose jobs time out reset_ban_limit times is banned: its queued
 * job fails with -EIO, SUBMIT and UQUEUE_CREATE say -EIO, and its user
 * queue is stopped: the device ignores its doorbell, UQUEUE_WAIT says
 * -EIO, UQUEUE_DESTROY still frees it.  Another file's queues go on.
 */
TEST_F_TIMEOUT(ban, a_file_that_causes_three_resets_is_banned, 120)
{
	struct drm_hpu_uqueue_create uqc = { .ring_va = 1 << 20, .ring_size = 4 };
	struct hpu_cb cb = { .size = 0 };
	uint64_t seq[4], mine;
	unsigned int i;
	char mark[64];
	uint32_t pos;
	int err;

	ASSERT_EQ(0, hpu_log_mark(mark, sizeof(mark)));
	/* Its user queue runs, before the ban. */
	hpu_cb_memset(&cb, self->sync_va + 192, 3, 1);
	ASSERT_EQ(0, hpu_uq_run(&self->uq, &cb));
	ASSERT_EQ(3, ((uint8_t *)self->sync)[192]);
	cb.size = 0;
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, submit_stuck(self->fd, 2, self->sync_va, &seq[i]));
	/* Behind them on the queue: the ban ends it. */
	hpu_cb_memset(&cb, self->sync_va + 64, 1, 1);
	ASSERT_EQ(0, hpu_submit(self->fd, 2, cb.buf, cb.size, &seq[3]));
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, hpu_wait(self->fd, seq[i], WAIT_NS, &err));
		EXPECT_EQ(-ETIMEDOUT, err);
	}
	ASSERT_EQ(0, hpu_wait(self->fd, seq[3], WAIT_NS, &err));
	EXPECT_EQ(-EIO, err);
	EXPECT_EQ(0, ((uint8_t *)self->sync)[64]);
	EXPECT_EQ(1, hpu_log_count(mark, "context [0-9]+ caused 3 resets: banned"));

	EXPECT_EQ(-EIO, hpu_submit(self->fd, 2, cb.buf, cb.size, &mine));
	EXPECT_EQ(-EIO, hpu_ioc(self->fd, DRM_IOCTL_HPU_UQUEUE_CREATE, &uqc));
	EXPECT_EQ(1, hpu_log_count(mark, "user queue [0-9]+ of banned context [0-9]+: stopped"));
	/* Its user queue runs nothing more; UQUEUE_WAIT says so. */
	cb.size = 0;
	hpu_cb_memset(&cb, self->sync_va + 192, 9, 1);
	pos = hpu_uq_put(&self->uq, &cb, 0);
	hpu_uq_ring(&self->uq);
	EXPECT_EQ(-EIO, hpu_uq_wait(self->fd, self->uq.id, pos + 1, WAIT_NS, NULL));
	/* Another file is not banned: its kernel and user queues run (after the store above). */
	cb.size = 0;
	hpu_cb_memset(&cb, self->sync2_va + 128, 7, 1);
	EXPECT_EQ(0, hpu_run(self->fd2, 2, cb.buf, cb.size));
	EXPECT_EQ(7, ((uint8_t *)self->sync)[128]);
	cb.size = 0;
	hpu_cb_memset(&cb, self->sync2_va + 256, 5, 1);
	EXPECT_EQ(0, hpu_uq_run(&self->uq2, &cb));
	EXPECT_EQ(5, ((uint8_t *)self->sync)[256]);
	EXPECT_EQ(3, ((uint8_t *)self->sync)[192]);
	EXPECT_EQ(DRM_HPU_STATUS_READY, hpu_device_status(self->fd2));
	EXPECT_EQ(0, hpu_uq_destroy(self->fd, self->uq.id));
	EXPECT_EQ(-ENOENT, hpu_uq_wait(self->fd, self->uq.id, 0, 0, NULL));
}

/*
 * A SUBMIT while a device reset is in progress (status IN_RESET) waits:
 * its job runs after the reset, bitwise, and a WAIT begun in the reset
 * ends with it.  The device ignores the reset's first two warm resets
 * (reset_fail), which holds the reset in its tries for twice
 * HPU_RESET_IDLE_TIMEOUT_US (100 ms) after the first one's failure is
 * logged; the SUBMIT counts only if INFO said IN_RESET before it and after
 * the WAIT that polls its job, else the reset is run again.
 */
TEST(a_job_submitted_in_reset_runs_after_it)
{
	struct drm_hpu_device_info before, info;
	struct hpu_cb cb = { .size = 0 };
	char bdf[64], path[256], mark[64];
	unsigned int tries, i;
	uint64_t va = 0, seq;
	bool held = false;
	int fd, err, ret, wstatus;
	uint32_t status;
	uint8_t *buf;
	pid_t pid;

	ASSERT_EQ(0, hpu_find_bdf(bdf, sizeof(bdf)));
	ASSERT_LE(0, hpu_usage(bdf, "contexts"));
	fd = hpu_open_node(bdf);
	ASSERT_LE(0, fd);
	buf = hpu_host_pages(2 * CHUNK);
	ASSERT_NE(NULL, buf);
	for (i = 0; i < CHUNK; i++)
		buf[i] = (uint8_t)(i * 7 + (i >> 9));
	ASSERT_EQ(0, hpu_vm_map(fd, 0, 0, buf, 2 * CHUNK, RW, &va));
	hpu_cb_dma(&cb, va + CHUNK, va, CHUNK);
	ASSERT_EQ(0, device_info(fd, &before));
	snprintf(path, sizeof(path), "/sys/kernel/debug/hpu/%s/reset", bdf);
	for (tries = 0; tries < 5 && !held; tries++) {
		memset(buf + CHUNK, 0, CHUNK);
		ASSERT_EQ(0, hpu_log_mark(mark, sizeof(mark)));
		ASSERT_EQ(0, hpu_fault_arm(bdf, "reset_fail", "2"));
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid)
			_exit(hpu_write_file(path, "1") ? 1 : 0);
		/* Then the queues are frozen, and the second try takes 100 ms to fail. */
		for (i = 0; i < 30000 && hpu_log_count(mark, "device reset: try 1 of 3 failed") < 1;
		     i++)
			usleep(1000);
		ASSERT_EQ(0, device_info(fd, &info));
		status = info.status;
		ASSERT_EQ(0, hpu_submit(fd, 0, cb.buf, cb.size, &seq));
		ret = hpu_wait(fd, seq, 0, &err);
		ASSERT_EQ(0, device_info(fd, &info));
		held = status == DRM_HPU_STATUS_IN_RESET && info.status == DRM_HPU_STATUS_IN_RESET;
		if (held)
			EXPECT_EQ(-ETIME, ret);
		ASSERT_EQ(0, hpu_wait(fd, seq, WAIT_NS, &err));
		EXPECT_EQ(0, err);
		EXPECT_EQ(0, memcmp(buf, buf + CHUNK, CHUNK));
		ASSERT_EQ(pid, waitpid(pid, &wstatus, 0));
		EXPECT_EQ(0, wstatus);
		EXPECT_EQ(2, hpu_log_count(mark, "device reset: try [12] of 3 failed"));
		EXPECT_EQ(1, hpu_log_count(mark, "device reset: done"));
	}
	TH_LOG("held in %u tries", tries);
	EXPECT_TRUE(held);
	ASSERT_EQ(0, device_info(fd, &info));
	EXPECT_EQ(DRM_HPU_STATUS_READY, info.status);
	EXPECT_EQ(before.device_resets + tries, info.device_resets);
	close(fd);
	munmap(buf, 2 * CHUNK);
}

/* Whether hpu-smi's output has @line. */
static bool smi_has(const char *line)
{
	char cmd[512], buf[256];
	bool found = false;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "%s/build/userspace/bin/hpu-smi 2>/dev/null", hpu_env("HPU_TOP"));
	p = popen(cmd, "r");
	if (!p)
		return false;
	while (fgets(buf, sizeof(buf), p))
		found |= !strcmp(buf, line);
	pclose(p);
	return found;
}

/*
 * A device reset by hand (debugfs "reset") sends a KOBJ_CHANGE uevent
 * naming it, counts it with cause "request" (INFO, and hpu-smi from
 * sysfs), and the device works after.
 */
TEST(a_device_reset_sends_a_uevent)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = 1 };
	struct drm_hpu_device_info before, after;
	struct hpu_cb cb = { .size = 0 };
	char bdf[64], path[256], msg[4096];
	bool kind = false, cause = false;
	uint8_t *buf;
	uint64_t va = 0;
	double until;
	int s, fd;

	ASSERT_EQ(0, hpu_find_bdf(bdf, sizeof(bdf)));
	ASSERT_LE(0, hpu_usage(bdf, "contexts"));
	fd = hpu_open_node(bdf);
	ASSERT_LE(0, fd);
	s = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_KOBJECT_UEVENT);
	ASSERT_LE(0, s);
	ASSERT_EQ(0, bind(s, (struct sockaddr *)&sa, sizeof(sa)));
	ASSERT_EQ(0, device_info(fd, &before));

	snprintf(path, sizeof(path), "/sys/kernel/debug/hpu/%s/reset", bdf);
	ASSERT_EQ(0, hpu_write_file(path, "1"));
	until = now_s() + 30;
	while (!(kind && cause) && now_s() < until) {
		struct pollfd p = { .fd = s, .events = POLLIN };
		ssize_t n, off;

		if (poll(&p, 1, 1000) <= 0)
			continue;
		n = recv(s, msg, sizeof(msg) - 1, 0);
		if (n <= 0)
			continue;
		msg[n] = 0;
		/* NUL-separated KEY=value strings after the header line. */
		for (off = 0; off < n; off += strlen(msg + off) + 1) {
			kind |= !strcmp(msg + off, "HPU_RESET=device");
			cause |= !strcmp(msg + off, "HPU_RESET_CAUSE=request");
		}
	}
	close(s);
	EXPECT_TRUE(kind);
	EXPECT_TRUE(cause);
	ASSERT_EQ(0, device_info(fd, &after));
	EXPECT_EQ(before.device_resets + 1, after.device_resets);
	EXPECT_EQ(DRM_HPU_RESET_CAUSE_REQUEST, after.last_reset_cause);
	EXPECT_EQ(DRM_HPU_STATUS_READY, after.status);
	snprintf(msg, sizeof(msg), "  resets:          %u queue, %u engine, %u device (last: request)\n",
		 after.queue_resets, after.engine_resets, after.device_resets);
	EXPECT_TRUE(smi_has(msg)) TH_LOG("hpu-smi has no line %s", msg);

	buf = hpu_host_pages(HPU_PAGE);
	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, hpu_vm_map(fd, 0, 0, buf, HPU_PAGE, RW, &va));
	hpu_cb_memset(&cb, va, 0x42, 8);
	EXPECT_EQ(0, hpu_run(fd, 3, cb.buf, cb.size));
	EXPECT_EQ(0x42, buf[7]);
	close(fd);
	munmap(buf, HPU_PAGE);
}

TEST_HARNESS_MAIN
