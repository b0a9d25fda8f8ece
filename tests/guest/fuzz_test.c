// SPDX-License-Identifier: MIT
/*
 * One minute of random command buffers from a context that also owns some
 * memory: packets of every opcode with random fields, truncated and
 * misaligned buffers, addresses inside, across and outside its mappings.
 * Every submit is refused or its job ends with a result; afterwards the
 * device still runs a good job and the data of a bystander context is
 * intact.  Then twenty seconds of the same through a user queue, where the
 * device alone checks.  (The guest kernel log is checked by the launcher.)
 */
#include <time.h>

#include "kselftest_harness.h"

#include "hpu_abi.h"
#include "hpu_test.h"

#define MiB (1ull << 20)
#define RW (DRM_HPU_VM_MAP_READ | DRM_HPU_VM_MAP_WRITE)
#define FUZZ_SECONDS 60

static uint64_t rnd_state;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

/* An address near the mappings most of the time, anywhere otherwise. */
static uint64_t rnd_addr(const uint64_t *vas, unsigned int n)
{
	switch (rnd() % 4) {
	case 0:
		return rnd();
	case 1:
		return rnd() & ((1ull << 48) - 1);
	default:
		return vas[rnd() % n] + (rnd() % (2 * MiB)) - 4096;
	}
}

static const uint32_t opcodes[] = {
	HPU_PKT_NOP, HPU_PKT_LIN_DMA, HPU_PKT_SIGNAL, HPU_PKT_WAIT, HPU_PKT_TIMESTAMP,
	HPU_PKT_WRITE_COMPLETION, HPU_PKT_INTERRUPT, 0x05, 0x7f, 0xff,
};

static void rnd_cb(struct hpu_cb *cb, const uint64_t *vas, unsigned int n)
{
	unsigned int packets = 1 + rnd() % 12, i;

	cb->size = 0;
	for (i = 0; i < packets && cb->size + 32 <= sizeof(cb->buf); i++) {
		uint32_t op = opcodes[rnd() % (sizeof(opcodes) / sizeof(opcodes[0]))];
		/* Mostly well-formed headers, so the device sees many packets. */
		uint32_t hdr = HPU_PKT_HEADER(op, rnd() % 8 ? 0 : rnd() & 0xff) |
			       (rnd() % 16 ? 0 : (uint32_t)rnd() << 16);
		struct hpu_pkt_lin_dma p = {
			.header = hdr,
			.src = op == HPU_PKT_LIN_DMA && rnd() % 2 ? rnd() & 0xff : rnd_addr(vas, n),
			.dst = rnd_addr(vas, n),
			.size = rnd() % 3 ? rnd() % 8192 : rnd() % (4 * MiB),
		};
		uint32_t len = op == HPU_PKT_LIN_DMA ? 32 :
			       op == HPU_PKT_WRITE_COMPLETION ? 24 :
			       op == HPU_PKT_NOP || op == HPU_PKT_INTERRUPT ? 8 : 16;

		/* WAIT for 0 is always satisfied; other values could stall a queue for good. */
		p.pad = op == HPU_PKT_WAIT ? 0 : rnd() % 8 ? 0 : rnd();
		if (rnd() % 16 == 0)
			len = 8 * (1 + rnd() % 4);
		hpu_cb_put(cb, &p, len);
	}
	if (rnd() % 16 == 0 && cb->size > 8)
		cb->size -= 4;
}

static int open_dev(void)
{
	char bdf[64];

	if (hpu_find_bdf(bdf, sizeof(bdf)))
		return -ENODEV;
	return hpu_open_node(bdf);
}

/* A buffer of HBM mapped read-write at *va. */
static int hbm_map(int fd, uint64_t size, uint64_t *va)
{
	uint32_t h;
	int err = hpu_gem_create(fd, size, 0, &h);

	return err ? err : hpu_vm_map(fd, h, 0, NULL, size, RW, va);
}

static int is_job_result(int err)
{
	return err == 0 || err == -EFAULT || err == -EINVAL || err == -EPERM || err == -EIO ||
	       err == -ECANCELED || err == -ETIMEDOUT;
}

/* A bystander context whose 2 MiB of HBM, filled with 0x5d, must come through untouched. */
static int bystander_open(struct hpu_cb *cb, uint64_t *va)
{
	int by = open_dev(), err;

	if (by < 0)
		return by;
	err = hbm_map(by, 2 * MiB, va);
	cb->size = 0;
	hpu_cb_memset(cb, *va, 0x5d, 2 * MiB);
	if (!err)
		err = hpu_run(by, 0, cb->buf, cb->size);
	if (err) {
		close(by);
		return err;
	}
	return by;
}

/* The number of bytes of the bystander's memory that changed (read back through check). */
static uint64_t bystander_changed(int by, uint64_t by_va, struct hpu_cb *cb, uint8_t *check)
{
	uint64_t check_va = 0, changed = 0, i;

	if (hpu_vm_map(by, 0, 0, check, 2 * MiB, RW, &check_va))
		return 2 * MiB;
	cb->size = 0;
	hpu_cb_dma(cb, check_va, by_va, 2 * MiB);
	if (hpu_run(by, 2, cb->buf, cb->size))
		return 2 * MiB;
	for (i = 0; i < 2 * MiB; i++)
		changed += check[i] != 0x5d;
	hpu_vm_unmap(by, check_va);
	return changed;
}

/*
 * The fuzzing context (fd) with 2 MiB of HBM at vas[0] and of host memory at
 * vas[1] (vas[2] is each test's), and a bystander context (by).
 */
FIXTURE(fuzz) {
	int fd, by;
	uint64_t by_va, vas[3];
	uint8_t *host, *check;
	struct hpu_cb *cb;
};

FIXTURE_SETUP(fuzz)
{
	self->host = hpu_host_pages(2 * MiB);
	self->check = hpu_host_pages(2 * MiB);
	self->cb = calloc(1, sizeof(*self->cb));
	ASSERT_NE(NULL, self->host);
	ASSERT_NE(NULL, self->check);
	ASSERT_NE(NULL, self->cb);
	self->fd = open_dev();
	ASSERT_LE(0, self->fd);
	self->by = bystander_open(self->cb, &self->by_va);
	ASSERT_LE(0, self->by);
	ASSERT_EQ(0, hbm_map(self->fd, 2 * MiB, &self->vas[0]));
	ASSERT_EQ(0, hpu_vm_map(self->fd, 0, 0, self->host, 2 * MiB, RW, &self->vas[1]));
}

FIXTURE_TEARDOWN(fuzz)
{
	if (self->fd >= 0)
		close(self->fd);
	close(self->by);
	free(self->cb);
}

/* The command buffer of a good job: HBM filled with 0x42 and copied to check at check_va. */
static void good_job(FIXTURE_DATA(fuzz) *self, uint64_t check_va)
{
	self->cb->size = 0;
	hpu_cb_memset(self->cb, self->vas[0], 0x42, 2 * MiB);
	hpu_cb_dma(self->cb, check_va, self->vas[0], 2 * MiB);
}

/* After the good job ran: its result, then (closing the fuzzing context) the bystander intact. */
static void check_after(struct __test_metadata *_metadata, FIXTURE_DATA(fuzz) *self)
{
	unsigned int i;

	for (i = 0; i < 2 * MiB; i++)
		ASSERT_EQ(0x42, self->check[i]);
	close(self->fd);
	self->fd = -1;
	EXPECT_EQ(0, bystander_changed(self->by, self->by_va, self->cb, self->check));
}

TEST_F_TIMEOUT(fuzz, random_command_buffers, FUZZ_SECONDS + 180)
{
	unsigned int refused = 0, ok = 0, failed = 0, i, pending;
	uint64_t check_va = 0, seqs[8];
	int err, job_err;
	time_t end;

	rnd_state = 0x9e3779b97f4a7c15ull;
	ASSERT_EQ(0, hbm_map(self->fd, 2 * MiB, &self->vas[2]));
	for (end = time(NULL) + FUZZ_SECONDS; time(NULL) < end;) {
		/* Up to 8 jobs in flight at once, spread over the queues. */
		for (pending = 0, i = 0; i < 8; i++) {
			rnd_cb(self->cb, self->vas, 3);
			err = hpu_submit(self->fd, rnd() % 4, self->cb->buf, self->cb->size,
					 &seqs[pending]);
			if (!err) {
				pending++;
				continue;
			}
			ASSERT_TRUE(err == -EINVAL || err == -EPERM) TH_LOG("submit: %d", err);
			refused++;
		}
		while (pending--) {
			ASSERT_EQ(0, hpu_wait(self->fd, seqs[pending], 60000000000ll, &job_err));
			ASSERT_TRUE(is_job_result(job_err)) TH_LOG("job: %d", job_err);
			if (job_err)
				failed++;
			else
				ok++;
		}
	}
	TH_LOG("%u refused at submit, %u jobs completed, %u jobs failed", refused, ok, failed);
	EXPECT_LT(100, ok + failed);

	/* The device still works for the fuzzing context, and the bystander is intact. */
	ASSERT_EQ(0, hpu_vm_map(self->fd, 0, 0, self->check, 2 * MiB, RW, &check_va));
	good_job(self, check_va);
	ASSERT_EQ(0, hpu_run(self->fd, 1, self->cb->buf, self->cb->size));
	check_after(_metadata, self);
}

/*
 * The same from a user queue, where nothing checks a job before the device
 * runs it: random command buffers, and now and then a descriptor with a
 * random address, size or flags, or a doorbell moving PI back or past the
 * ring.  Every job ends with a status the device wrote, ERRORS counts the
 * failed ones, a good job runs afterwards, and the bystander is intact.
 */
TEST_F_TIMEOUT(fuzz, random_jobs_on_a_user_queue, FUZZ_SECONDS + 180)
{
	unsigned int ok = 0, failed = 0, i, first;
	uint64_t check_va = 0;
	struct hpu_uq q;
	time_t end;

	rnd_state = 0x2545f4914f6cdd1dull;
	ASSERT_EQ(0, hpu_uq_open(&q, self->fd));
	/* The arena past its first page: random addresses reach no status word of the ring. */
	self->vas[2] = q.va + HPU_UQ_TEST_ARENA_OFF + HPU_PAGE;
	for (end = time(NULL) + FUZZ_SECONDS / 3; time(NULL) < end;) {
		first = q.pi;
		for (i = 0; i < 8; i++) {
			struct hpu_uq_desc *d;

			rnd_cb(self->cb, self->vas, 3);
			d = hpu_uq_slot(&q, hpu_uq_put(&q, self->cb, rnd() % 16 ? 0 : (uint32_t)rnd()));
			if (rnd() % 16 == 0)
				d->cb_va = rnd_addr(self->vas, 3);
			if (rnd() % 16 == 0)
				d->cb_size = (uint32_t)rnd() % (2 * HPU_CB_MAX_SIZE);
			if (rnd() % 32 == 0)
				d->pad = (uint32_t)rnd();
		}
		/* Refused doorbells first: behind CI, and past the ring. */
		if (rnd() % 8 == 0)
			q.db[HPU_UQ_DB_PI / 4] = first - 1 - (uint32_t)(rnd() % 4);
		if (rnd() % 8 == 0)
			q.db[HPU_UQ_DB_PI / 4] = first + HPU_UQ_TEST_RING + 1;
		hpu_uq_ring(&q);
		ASSERT_EQ(0, hpu_uq_wait(self->fd, q.id, q.pi, 60000000000ll, NULL));
		for (i = first; i != q.pi; i++) {
			uint32_t status = hpu_uq_slot(&q, i)->status;

			ASSERT_GE(HPU_UQ_STATUS_BAD_KERNEL, status) TH_LOG("job %u: status %u", i, status);
			if (status)
				failed++;
			else
				ok++;
		}
	}
	TH_LOG("%u jobs completed, %u failed", ok, failed);
	EXPECT_LT(100, ok + failed);
	EXPECT_EQ(failed, q.db[HPU_UQ_DB_ERRORS / 4]);

	/* The queue still runs a good job, and the bystander is intact. */
	ASSERT_EQ(0, hpu_vm_map(self->fd, 0, 0, self->check, 2 * MiB, RW, &check_va));
	good_job(self, check_va);
	ASSERT_EQ(0, hpu_uq_run(&q, self->cb));
	hpu_uq_close(&q);
	check_after(_metadata, self);
}

TEST_HARNESS_MAIN
