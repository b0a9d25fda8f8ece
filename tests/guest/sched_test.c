// SPDX-License-Identifier: MIT
/*
 * The driver's scheduler (kernel/hpu_sched.c) through the raw ABI: a job
 * with in-syncobjs waits for their fences; a file's jobs on one queue keep
 * their order behind a waiting job while other files' jobs go on; more
 * jobs than a ring holds all run, in order; closing a file ends its
 * waiting jobs and leaves the device working; the job at the head of a
 * ring, long or parked on a WAIT, is set aside for other files' jobs.
 *
 * A job parked on a device WAIT packet stands for a long job: it ends only
 * when a later job SIGNALs the sync object in HBM.
 */
#include <stdio.h>
#include <time.h>

#include "kselftest_harness.h"

#include "hpu_abi.h"
#include "hpu_test.h"

#define LONG_NS 30000000000ll
#define RW (DRM_HPU_VM_MAP_READ | DRM_HPU_VM_MAP_WRITE)

FIXTURE(sched) {
	char bdf[64];
	int fd;
	uint64_t sync;		/* an HBM word device WAITs park on */
	uint8_t *dst;		/* a host page the jobs write */
	uint64_t dst_va;
};

FIXTURE_SETUP(sched)
{
	uint32_t h;

	ASSERT_EQ(0, hpu_find_bdf(self->bdf, sizeof(self->bdf)));
	self->fd = hpu_open_node(self->bdf);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, hpu_gem_create(self->fd, HPU_PAGE, 0, &h));
	ASSERT_EQ(0, hpu_vm_map(self->fd, h, 0, NULL, HPU_PAGE, RW, &self->sync));
	self->dst = hpu_host_pages(HPU_PAGE);
	ASSERT_NE(NULL, self->dst);
	memset(self->dst, 0, HPU_PAGE);
	ASSERT_EQ(0, hpu_vm_map(self->fd, 0, 0, self->dst, HPU_PAGE, RW, &self->dst_va));
}

FIXTURE_TEARDOWN(sched)
{
	close(self->fd);
}

/* A job on queue that parks until the word at sync reaches 1; its end goes to syncobj out. */
static int submit_parked(int fd, uint32_t queue, uint64_t sync, uint32_t out, uint64_t *seq)
{
	struct hpu_cb cb = { .size = 0 };

	hpu_cb_wait(&cb, sync, 1);
	return hpu_submit_sync(fd, queue, &cb, 0, out, seq);
}

/* A job on queue that writes value to the first byte of dst, after syncobj in (0: none). */
static int submit_mark(int fd, uint32_t queue, uint64_t dst_va, uint8_t value, uint32_t in,
		       uint64_t *seq)
{
	struct hpu_cb cb = { .size = 0 };

	hpu_cb_memset(&cb, dst_va, value, 1);
	return hpu_submit_sync(fd, queue, &cb, in, 0, seq);
}

/* Unparks the parked jobs from queue 2. */
static int release_parked(FIXTURE_DATA(sched) *self)
{
	struct hpu_cb cb = { .size = 0 };

	hpu_cb_signal(&cb, self->sync, 1);
	return hpu_run(self->fd, 2, cb.buf, cb.size);
}

/* Whether job seq is still running or waiting: a zero-timeout WAIT says -ETIME. */
static bool pending(int fd, uint64_t seq)
{
	int err;

	return hpu_wait(fd, seq, 0, &err) == -ETIME;
}

static void settle(void)
{
	usleep(200 * 1000);
}

/* A job on another queue waits for the fence of its in-syncobj, then runs. */
TEST_F(sched, in_syncobj_holds_a_job_until_its_fence_signals)
{
	uint32_t s = hpu_syncobj_create(self->fd);
	uint64_t parked, marked;
	int err;

	ASSERT_NE(0, s);
	ASSERT_EQ(0, submit_parked(self->fd, 0, self->sync, s, &parked));
	ASSERT_EQ(0, submit_mark(self->fd, 1, self->dst_va, 0xab, s, &marked));
	settle();
	EXPECT_TRUE(pending(self->fd, marked));
	EXPECT_EQ(0, self->dst[0]);

	ASSERT_EQ(0, release_parked(self));
	ASSERT_EQ(0, hpu_wait(self->fd, marked, LONG_NS, &err));
	EXPECT_EQ(0, err);
	ASSERT_EQ(0, hpu_wait(self->fd, parked, LONG_NS, &err));
	EXPECT_EQ(0, err);
	EXPECT_EQ(0xab, self->dst[0]);
}

/*
 * Behind a job waiting for its fence, the same file's next job on that
 * queue waits too (it may not overtake), while another file's job on the
 * queue runs at once.
 */
TEST_F(sched, a_waiting_job_holds_its_files_order_but_not_other_files)
{
	uint32_t s = hpu_syncobj_create(self->fd);
	uint8_t *other = hpu_host_pages(HPU_PAGE);
	uint64_t parked, first, second, other_va = 0, theirs;
	int fd2, err;

	ASSERT_NE(0, s);
	ASSERT_NE(NULL, other);
	memset(other, 0, HPU_PAGE);
	fd2 = hpu_open_node(self->bdf);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, hpu_vm_map(fd2, 0, 0, other, HPU_PAGE, RW, &other_va));

	ASSERT_EQ(0, submit_parked(self->fd, 0, self->sync, s, &parked));
	ASSERT_EQ(0, submit_mark(self->fd, 1, self->dst_va, 1, s, &first));
	ASSERT_EQ(0, submit_mark(self->fd, 1, self->dst_va, 2, 0, &second));
	ASSERT_EQ(0, submit_mark(fd2, 1, other_va, 3, 0, &theirs));
	ASSERT_EQ(0, hpu_wait(fd2, theirs, LONG_NS, &err));
	EXPECT_EQ(0, err);
	EXPECT_EQ(3, other[0]);
	settle();
	EXPECT_TRUE(pending(self->fd, first));
	EXPECT_TRUE(pending(self->fd, second));
	EXPECT_EQ(0, self->dst[0]);

	ASSERT_EQ(0, release_parked(self));
	ASSERT_EQ(0, hpu_wait(self->fd, second, LONG_NS, &err));
	EXPECT_EQ(0, err);
	ASSERT_EQ(0, hpu_wait(self->fd, first, 0, &err));
	EXPECT_EQ(0, err);
	/* The second job's byte is last: it ran after the first. */
	EXPECT_EQ(2, self->dst[0]);
	close(fd2);
}

/* Four times what a ring holds, submitted without a wait: every job runs, in order. */
TEST_F(sched, more_jobs_than_a_ring_holds_all_run_in_order)
{
	enum { JOBS = 1024 };
	uint64_t seq[JOBS];
	unsigned int i;
	int err;

	for (i = 0; i < JOBS; i++)
		ASSERT_EQ(0, submit_mark(self->fd, 3, self->dst_va, (uint8_t)(i + 1), 0, &seq[i]));
	ASSERT_EQ(0, hpu_wait(self->fd, seq[JOBS - 1], LONG_NS, &err));
	EXPECT_EQ(0, err);
	for (i = 0; i < JOBS; i++) {
		ASSERT_EQ(0, hpu_wait(self->fd, seq[i], 0, &err));
		EXPECT_EQ(0, err);
	}
	EXPECT_EQ((uint8_t)JOBS, self->dst[0]);
}

/*
 * Closing a file whose job waits for a fence of a job parked on the device:
 * both fail, the close returns within the grace period and a reset, and
 * the device runs other files' jobs on the same queues afterwards.
 */
TEST_F(sched, closing_a_file_ends_its_waiting_jobs)
{
	uint8_t *theirs = hpu_host_pages(HPU_PAGE);
	struct drm_hpu_stats before, after;
	uint64_t parked, marked, seq, sync = 0, theirs_va = 0;
	struct timespec t0, t1;
	uint32_t s, h;
	int fd2, err;

	ASSERT_NE(NULL, theirs);
	memset(theirs, 0, HPU_PAGE);
	fd2 = hpu_open_node(self->bdf);
	ASSERT_LE(0, fd2);
	s = hpu_syncobj_create(fd2);
	ASSERT_NE(0, s);
	ASSERT_EQ(0, hpu_gem_create(fd2, HPU_PAGE, 0, &h));
	ASSERT_EQ(0, hpu_vm_map(fd2, h, 0, NULL, HPU_PAGE, RW, &sync));
	ASSERT_EQ(0, hpu_vm_map(fd2, 0, 0, theirs, HPU_PAGE, RW, &theirs_va));
	ASSERT_EQ(0, hpu_stats(self->fd, &before));
	ASSERT_EQ(0, submit_parked(fd2, 0, sync, s, &parked));
	ASSERT_EQ(0, submit_mark(fd2, 1, theirs_va, 7, s, &marked));
	settle();

	clock_gettime(CLOCK_MONOTONIC, &t0);
	close(fd2);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	EXPECT_GT(10, t1.tv_sec - t0.tv_sec);
	ASSERT_EQ(0, hpu_stats(self->fd, &after));
	EXPECT_EQ(before.jobs_failed + 2, after.jobs_failed);
	EXPECT_EQ(before.jobs_completed, after.jobs_completed);
	EXPECT_EQ(0, theirs[0]);	/* the waiting job never ran */

	ASSERT_EQ(0, submit_mark(self->fd, 0, self->dst_va, 5, 0, &seq));
	ASSERT_EQ(0, hpu_wait(self->fd, seq, LONG_NS, &err));
	EXPECT_EQ(0, err);
	ASSERT_EQ(0, submit_mark(self->fd, 1, self->dst_va + 1, 6, 0, &seq));
	ASSERT_EQ(0, hpu_wait(self->fd, seq, LONG_NS, &err));
	EXPECT_EQ(0, err);
	EXPECT_EQ(5, self->dst[0]);
	EXPECT_EQ(6, self->dst[1]);
}

/*
 * Jobs parked on a WAIT at the head of a ring are set aside for other
 * files' jobs (kernel/hpu_queue.c, preempt_ms): those run in about that
 * time, not a job timeout, and the parked jobs go on from their WAIT once
 * released, in their file's order.  A job stamps the device clock into
 * page[i] after its WAIT, and counts into the page's last word before it.
 */
#define STAMP_WORDS (HPU_PAGE / 8 - 1)
#define COUNT_OFF (HPU_PAGE - 8)

/* Bytes of one job's callee in the callees' pages (submit_stamped()). */
#define CALLEE_BYTES 64

/*
 * Job i of the parked file: [SIGNAL count +1], WAIT sync >= 1, TIMESTAMP
 * page[i]; with callees (host pages at callees_va), those packets are the
 * callee of the job's one CALL, at callees + i * CALLEE_BYTES.
 */
static int submit_stamped(int fd, uint32_t queue, uint64_t sync, uint64_t page_va,
			  unsigned int i, bool count_first, uint8_t *callees, uint64_t callees_va,
			  uint64_t *seq)
{
	struct hpu_pkt_timestamp ts = {
		.header = HPU_PKT_HEADER(HPU_PKT_TIMESTAMP, 0), .addr = page_va + 8ull * i,
	};
	struct hpu_pkt_call call = {
		.header = HPU_PKT_HEADER(HPU_PKT_CALL, 0), .addr = callees_va + i * CALLEE_BYTES,
	};
	struct hpu_cb cb = { .size = 0 };

	if (count_first)
		hpu_cb_signal(&cb, page_va + COUNT_OFF, 1);
	hpu_cb_wait(&cb, sync, 1);
	hpu_cb_put(&cb, &ts, sizeof(ts));
	if (callees) {
		memcpy(callees + i * CALLEE_BYTES, cb.buf, cb.size);
		call.size = cb.size;
		cb.size = 0;
		hpu_cb_put(&cb, &call, sizeof(call));
	}
	return hpu_submit_sync(fd, queue, &cb, 0, 0, seq);
}

/* Another file's job on queue writes its byte: how long it took, in s (-1: it failed). */
static double victim_job_s(int fd, uint32_t queue, uint64_t va, uint8_t value)
{
	double t0 = hpu_now_s();
	uint64_t seq;
	int err;

	if (submit_mark(fd, queue, va, value, 0, &seq) ||
	    hpu_wait(fd, seq, LONG_NS, &err) || err)
		return -1;
	return hpu_now_s() - t0;
}

/* Jobs 0 .. n - 1 of fd ended without an error, stamping page[] in order. */
static void expect_stamped_in_order(struct __test_metadata *_metadata, int fd,
				    const uint64_t *seq, const uint64_t *page, unsigned int n)
{
	unsigned int i;
	int err;

	for (i = 0; i < n; i++) {
		ASSERT_EQ(0, hpu_wait(fd, seq[i], LONG_NS, &err));
		EXPECT_EQ(0, err) TH_LOG("parked job %u", i);
		EXPECT_NE(0, page[i]) TH_LOG("parked job %u", i);
		if (i)
			EXPECT_LT(page[i - 1], page[i]) TH_LOG("parked job %u ran before %u", i, i - 1);
	}
}

/* A second file with a host page mapped at *va. */
static int open_victim(FIXTURE_DATA(sched) *self, uint8_t **page, uint64_t *va)
{
	int fd = hpu_open_node(self->bdf);

	*page = hpu_host_pages(HPU_PAGE);
	if (fd < 0 || !*page || hpu_vm_map(fd, 0, 0, *page, HPU_PAGE, RW, va))
		return -1;
	memset(*page, 0, HPU_PAGE);
	return fd;
}

/*
 * 300 jobs of one file, each parked on the WAIT it starts with, and another
 * file's job behind them on the same queue: it ends in about
 * preempt_ms (the driver's default job timeout is 10 s); then the
 * parked jobs are released, and all end without an error, in order.
 */
TEST_F_TIMEOUT(sched, a_parked_job_makes_way_for_another_files_job, 60)
{
	enum { FLOOD = 300 };
	uint64_t seq[FLOOD], va = 0;
	uint8_t *mine;
	unsigned int i;
	double s;
	int fd2;

	ASSERT_EQ(0, FLOOD > STAMP_WORDS);
	for (i = 0; i < FLOOD; i++)
		ASSERT_EQ(0, submit_stamped(self->fd, 1, self->sync, self->dst_va, i, false, NULL,
					    0, &seq[i]));
	fd2 = open_victim(self, &mine, &va);
	ASSERT_LE(0, fd2);
	s = victim_job_s(fd2, 1, va, 9);
	TH_LOG("the other file's job ended after %.0f ms", s * 1000);
	EXPECT_LE(0, s);
	EXPECT_GT(1.0, s);
	EXPECT_EQ(9, mine[0]);
	EXPECT_TRUE(pending(self->fd, seq[0]));

	ASSERT_EQ(0, release_parked(self));
	expect_stamped_in_order(_metadata, self->fd, seq, (const uint64_t *)self->dst, FLOOD);
	close(fd2);
}

/*
 * A parked job that counted before its WAIT is set aside too, and goes on
 * from its WAIT: what ran before it does not run again, however many
 * times it was set aside.  Its file's later jobs keep their order behind
 * it; the other file's jobs each end in about preempt_ms.  in_call: the
 * jobs' packets are each a CALL's callee, whose WAIT the job runs on from.
 */
static void made_way_runs_on(struct __test_metadata *_metadata, FIXTURE_DATA(sched) *self,
			     bool in_call)
{
	enum { MINE = 8, THEIRS = 4 };
	uint64_t seq[MINE], va = 0, callees_va = 0;
	uint32_t *count = (uint32_t *)(self->dst + COUNT_OFF);
	uint8_t *theirs, *callees = NULL;
	unsigned int i;
	double s;
	int fd2;

	if (in_call) {
		callees = hpu_host_pages(HPU_PAGE);
		ASSERT_NE(NULL, callees);
		ASSERT_EQ(0, hpu_vm_map(self->fd, 0, 0, callees, HPU_PAGE, DRM_HPU_VM_MAP_READ,
					&callees_va));
	}
	for (i = 0; i < MINE; i++)
		ASSERT_EQ(0, submit_stamped(self->fd, 1, self->sync, self->dst_va, i, i % 2 == 0,
					    callees, callees_va, &seq[i]));
	fd2 = open_victim(self, &theirs, &va);
	ASSERT_LE(0, fd2);
	for (i = 0; i < THEIRS; i++) {
		s = victim_job_s(fd2, 1, va + i, (uint8_t)(i + 1));
		TH_LOG("the other file's job %u ended after %.0f ms", i, s * 1000);
		EXPECT_LE(0, s);
		EXPECT_GT(1.0, s);
		EXPECT_EQ(i + 1, theirs[i]);
		/* The first job counted once, before its first WAIT. */
		EXPECT_EQ(1, *(volatile uint32_t *)count);
	}

	ASSERT_EQ(0, release_parked(self));
	expect_stamped_in_order(_metadata, self->fd, seq, (const uint64_t *)self->dst, MINE);
	EXPECT_EQ(MINE / 2, *count);
}

TEST_F_TIMEOUT(sched, a_job_that_made_way_runs_on_from_its_wait, 60)
{
	made_way_runs_on(_metadata, self, false);
}

TEST_F_TIMEOUT(sched, a_job_parked_in_a_callee_makes_way_and_runs_on_from_its_wait, 60)
{
	made_way_runs_on(_metadata, self, true);
}

/*
 * A long job: count +1 into the page's last word, LONG_GEMMS GEMMs of
 * HPU_SLOW_GEMM_N fp32 matrices in HBM (a second or so), C's first page
 * copied to page[0..], count +1 again.
 */
#define LONG_GEMMS 32

static void long_gemm_job(struct hpu_cb *cb, const uint64_t *va, uint64_t page_va)
{
	cb->size = 0;
	hpu_cb_signal(cb, page_va + COUNT_OFF, 1);
	hpu_cb_slow_gemms(cb, va[0], va[1], va[2], LONG_GEMMS);
	hpu_cb_dma(cb, page_va, va[2], COUNT_OFF);
	hpu_cb_signal(cb, page_va + COUNT_OFF, 1);
}

/*
 * A long job at the head of a ring is set aside for another file's job
 * behind it: that one ends while the long one still runs, in about
 * preempt_ms, not the long job's second.  The long job then goes on where
 * it stopped: it ends without an error, with C bitwise as when it ran
 * alone, each of its counts once, and its file's next job after it.
 */
TEST_F_TIMEOUT(sched, a_long_job_is_set_aside_for_another_files_job, 120)
{
	struct hpu_cb *cb = calloc(1, sizeof(*cb));
	uint8_t *alone = malloc(COUNT_OFF), *theirs;
	uint64_t va[3], seq, next, their_va = 0;
	/* The long job's counts, and its file's next job's in the same 8 bytes. */
	volatile uint32_t *count = (uint32_t *)(self->dst + COUNT_OFF), *next_count = count + 1;
	unsigned int i;
	double s;
	int fd2, err = -1;
	uint32_t h;

	ASSERT_NE(NULL, cb);
	ASSERT_NE(NULL, alone);
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, hpu_gem_create(self->fd, HPU_SLOW_GEMM_BYTES, 0, &h));
		ASSERT_EQ(0, hpu_vm_map(self->fd, h, 0, NULL, HPU_SLOW_GEMM_BYTES, RW, &va[i]));
	}
	/* A and B of 3.0039215f (bytes 0x40): C's sums round, so a redone block would show. */
	cb->size = 0;
	hpu_cb_memset(cb, va[0], 0x40, HPU_SLOW_GEMM_BYTES);
	hpu_cb_memset(cb, va[1], 0x40, HPU_SLOW_GEMM_BYTES);
	ASSERT_EQ(0, hpu_run(self->fd, 1, cb->buf, cb->size));
	long_gemm_job(cb, va, self->dst_va);
	ASSERT_EQ(0, hpu_run(self->fd, 1, cb->buf, cb->size));
	memcpy(alone, self->dst, COUNT_OFF);
	ASSERT_EQ(2, *count);
	memset(self->dst, 0, HPU_PAGE);

	ASSERT_EQ(0, hpu_submit(self->fd, 1, cb->buf, cb->size, &seq));
	cb->size = 0;
	hpu_cb_signal(cb, self->dst_va + COUNT_OFF + 4, 1);
	ASSERT_EQ(0, hpu_submit(self->fd, 1, cb->buf, cb->size, &next));
	fd2 = open_victim(self, &theirs, &their_va);
	ASSERT_LE(0, fd2);
	/* The long job runs. */
	usleep(50000);
	s = victim_job_s(fd2, 1, their_va, 9);
	TH_LOG("the other file's job ended after %.0f ms", s * 1000);
	EXPECT_TRUE(pending(self->fd, seq)) TH_LOG("the long job ended before the other job");
	EXPECT_LE(0, s);
	EXPECT_GT(0.5, s);
	EXPECT_EQ(9, theirs[0]);
	EXPECT_EQ(1, *count);
	EXPECT_EQ(0, *next_count) TH_LOG("the long job's file's next job ran before it");

	ASSERT_EQ(0, hpu_wait(self->fd, seq, LONG_NS, &err));
	EXPECT_EQ(0, err);
	EXPECT_EQ(2, *count) TH_LOG("the long job's counts ran again or not");
	EXPECT_EQ(0, memcmp(alone, self->dst, COUNT_OFF)) TH_LOG("C differs from its run alone");
	ASSERT_EQ(0, hpu_wait(self->fd, next, LONG_NS, &err));
	EXPECT_EQ(0, err);
	EXPECT_EQ(1, *next_count);
	close(fd2);
	free(alone);
	free(cb);
}

/* With a short job timeout; the driver's defaults come back whatever the test did. */
FIXTURE(short) {
	char bdf[64];
	int fd;
};

FIXTURE_SETUP(short)
{
	/* Its files time out on purpose, again and again: no ban (faults_test checks it). */
	ASSERT_EQ(0, hpu_reload("job_timeout_ms=300 reset_ban_limit=0"));
	ASSERT_EQ(0, hpu_find_bdf(self->bdf, sizeof(self->bdf)));
	self->fd = hpu_open_node(self->bdf);
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(short)
{
	close(self->fd);
	hpu_reload("");
}

/*
 * A file floods a queue with more jobs than its ring holds, each parked on
 * a WAIT nobody signals, so each runs until the job timeout: another
 * file's job on that queue still ends within about one timeout, not
 * after all of them.
 */
TEST_F(short, parked_jobs_of_one_file_do_not_starve_another)
{
	enum { FLOOD = 300 };
	uint8_t *dst = hpu_host_pages(HPU_PAGE);
	uint64_t sync = 0, dst_va = 0, seq = 0, theirs = 0;
	double t0, s;
	unsigned int i;
	int fd2, err = 0, ret;
	uint32_t h;

	ASSERT_NE(NULL, dst);
	memset(dst, 0, HPU_PAGE);
	ASSERT_EQ(0, hpu_gem_create(self->fd, HPU_PAGE, 0, &h));
	ASSERT_EQ(0, hpu_vm_map(self->fd, h, 0, NULL, HPU_PAGE, RW, &sync));
	for (i = 0; i < FLOOD; i++)
		ASSERT_EQ(0, submit_parked(self->fd, 2, sync, 0, &seq));

	fd2 = hpu_open_node(self->bdf);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, hpu_vm_map(fd2, 0, 0, dst, HPU_PAGE, RW, &dst_va));
	t0 = hpu_now_s();
	ASSERT_EQ(0, submit_mark(fd2, 2, dst_va, 9, 0, &theirs));
	ret = hpu_wait(fd2, theirs, 10000000000ll, &err);
	s = hpu_now_s() - t0;
	EXPECT_EQ(0, ret);
	EXPECT_EQ(0, err);
	EXPECT_EQ(9, dst[0]);
	/* A timeout (0.3 s) and a reset, with the emulator's slack. */
	EXPECT_GT(3.0, s);
	TH_LOG("the other file's job ended after %.2f s", s);
	/* The flood's last job is still waiting its turn. */
	EXPECT_EQ(-ETIME, hpu_wait(self->fd, seq, 0, &err));
	close(fd2);
}

/* Q<q>_STATUS as debugfs "regs" shows it, or -1. */
static long queue_status(const char *bdf, unsigned int q)
{
	char path[128], name[32], line[128];
	long status = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/kernel/debug/hpu/%s/regs", bdf);
	snprintf(name, sizeof(name), "Q%u_STATUS = ", q);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (status < 0 && fgets(line, sizeof(line), f))
		if (!strncmp(line, name, strlen(name)))
			status = strtol(line + strlen(name), NULL, 16);
	fclose(f);
	return status;
}

/*
 * A reset that does not stop the engine (it has a microsecond, and the
 * engine is inside a GEMM step), nor do the engine and device resets
 * after it (the device ignores them): the device reads MALFUNCTION and takes no
 * new work; the job's fence does not signal, and a buffer unmapped
 * meanwhile is not freed, until the engine has let go of the job.  Each
 * step is 8 billion multiply-adds (a second or so), so that the engine is
 * still in it after the driver's reset, engine reset and their waits,
 * however slow the kernel (a debug kernel's printing to the console).
 */
#define FAILED_RESET_N (2 * HPU_SLOW_GEMM_N)
#define FAILED_RESET_BYTES ((uint64_t)FAILED_RESET_N * FAILED_RESET_N * 4)
TEST_F_TIMEOUT(short, a_failed_reset_keeps_memory_until_the_engine_lets_go, 120)
{
	struct hpu_cb cb = { .size = 0 };
	struct drm_hpu_uqueue_create uqc = { .ring_va = 1 << 20, .ring_size = 4 };
	struct drm_hpu_stats before, during, after;
	uint32_t h[4];
	uint64_t va[4], seq;
	unsigned int i;
	char mark[64];
	int err;

	/* A, B, C, and a buffer the job does not use. */
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, hpu_gem_create(self->fd, FAILED_RESET_BYTES, 0, &h[i]));
		ASSERT_EQ(0, hpu_vm_map(self->fd, h[i], 0, NULL, FAILED_RESET_BYTES, RW, &va[i]));
	}
	/* Seconds in all. */
	hpu_cb_square_gemms(&cb, FAILED_RESET_N, va[0], va[1], va[2], 8);
	ASSERT_EQ(0, hpu_write_file("/sys/module/hpu/parameters/queue_reset_timeout_us", "1"));
	/* The engine and device resets fail too: the reset ladder ends in MALFUNCTION. */
	ASSERT_EQ(0, hpu_fault_arm(self->bdf, "reset_fail", "4294967295"));
	ASSERT_EQ(0, hpu_log_mark(mark, sizeof(mark)));
	ASSERT_EQ(0, hpu_submit(self->fd, 1, cb.buf, cb.size, &seq));
	/* A buffer goes while the job runs: it stays until the file's earlier jobs ended. */
	ASSERT_EQ(0, hpu_stats(self->fd, &before));
	EXPECT_EQ(0, hpu_vm_unmap(self->fd, va[3]));
	EXPECT_EQ(0, hpu_gem_close(self->fd, h[3]));
	ASSERT_EQ(0, hpu_stats(self->fd, &during));
	EXPECT_EQ(before.hbm_used, during.hbm_used);

	/* The job timeout passes, the reset fails; the fence signals once the engine let go. */
	ASSERT_EQ(0, hpu_wait(self->fd, seq, -1, &err));
	EXPECT_EQ(0, queue_status(self->bdf, 1) & HPU_Q_STATUS_BUSY);
	EXPECT_EQ(-ETIMEDOUT, err);
	EXPECT_EQ(1, hpu_log_count(mark, "queue 1: the engine stayed in its job 1 us after a reset"));
	/* The device reset the failed engine reset asked for runs, and fails, after the fence. */
	EXPECT_EQ(DRM_HPU_STATUS_MALFUNCTION,
		  hpu_wait_device_status(self->fd, DRM_HPU_STATUS_MALFUNCTION, 30));
	/*
	 * The buffer went: its zeroing job, whenever it ends, fails on the
	 * malfunctioning device, and its HBM is kept out of use, not in use.
	 * The first query reaps the unmapped buffer, the second sees it gone.
	 */
	ASSERT_EQ(0, hpu_stats(self->fd, &after));
	ASSERT_EQ(0, hpu_stats(self->fd, &after));
	EXPECT_EQ(before.hbm_used - FAILED_RESET_BYTES, after.hbm_used);
	EXPECT_EQ(0, hpu_wait_scrubbed(self->bdf));
	EXPECT_EQ(FAILED_RESET_BYTES, hpu_usage(self->bdf, "hbm_bad"));
	ASSERT_EQ(0, hpu_stats(self->fd, &after));
	EXPECT_EQ(before.hbm_used - FAILED_RESET_BYTES, after.hbm_used);

	/* No new work: not from SUBMIT, nor a user queue. */
	EXPECT_EQ(DRM_HPU_STATUS_MALFUNCTION, hpu_device_status(self->fd));
	cb.size = 0;
	hpu_cb_put(&cb, &(struct hpu_pkt_nop){ .header = HPU_PKT_HEADER(HPU_PKT_NOP, 0) }, 8);
	EXPECT_EQ(-EIO, hpu_submit(self->fd, 0, cb.buf, cb.size, &seq));
	EXPECT_EQ(-EIO, hpu_ioc(self->fd, DRM_IOCTL_HPU_UQUEUE_CREATE, &uqc));
}

/*
 * A reset of a queue whose job the engine is not in (it waits on a WAIT)
 * ends when the engine gets back to it, after another file's GEMM step of
 * tens of milliseconds: that is no failed reset, whatever
 * queue_reset_timeout_us (1 ms here), and the device stays ready.
 */
TEST_F_TIMEOUT(sched, a_reset_behind_another_queues_packet_is_no_failure, 120)
{
	struct hpu_cb cb = { .size = 0 };
	uint64_t va[3], seq, parked, other_va = 0;
	unsigned int i;
	int other, err = -1;
	uint32_t h;

	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, hpu_gem_create(self->fd, HPU_SLOW_GEMM_BYTES, 0, &h));
		ASSERT_EQ(0, hpu_vm_map(self->fd, h, 0, NULL, HPU_SLOW_GEMM_BYTES, RW, &va[i]));
	}
	hpu_cb_slow_gemms(&cb, va[0], va[1], va[2], 8);
	other = hpu_open_node(self->bdf);
	ASSERT_LE(0, other);
	ASSERT_EQ(0, hpu_vm_map(other, 0, 0, self->dst, HPU_PAGE, RW, &other_va));
	ASSERT_EQ(0, submit_parked(other, 2, other_va + 64, 0, &parked));
	ASSERT_EQ(0, hpu_write_file("/sys/module/hpu/parameters/queue_reset_timeout_us", "1000"));
	ASSERT_EQ(0, hpu_submit(self->fd, 1, cb.buf, cb.size, &seq));
	/* The GEMMs run; closing the other file resets queue 2 under them. */
	usleep(50000);
	close(other);
	EXPECT_EQ(0, hpu_wait(self->fd, seq, LONG_NS, &err));
	EXPECT_EQ(0, err);
	EXPECT_EQ(DRM_HPU_STATUS_READY, hpu_device_status(self->fd));
	EXPECT_EQ(0, hpu_write_file("/sys/module/hpu/parameters/queue_reset_timeout_us",
				    "1000000"));
}

TEST_HARNESS_MAIN
