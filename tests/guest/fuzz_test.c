// SPDX-License-Identifier: MIT
/*
 * The device's input from a hostile context, at random.  First random
 * command buffers from a context that also owns some memory: packets of
 * every opcode with random fields, truncated and misaligned buffers,
 * addresses inside, across and outside its mappings; then the same through
 * a user queue, where the device alone checks.  Then compute work from
 * three threads at once, each with a file (a context) and a user queue of
 * its own: TPC launches of every kernel, GEMMs and CALLs, most of them
 * well-formed over the context's own memory (random shapes, layouts and
 * dtypes), the others with something broken (outputs over inputs, broadcast
 * dims of sizes up to 2^64 - 1, negative and extreme strides, indices at
 * and past their bounds, arguments and scalars out of range, bad dtypes,
 * addresses, sizes and nested packets).  Every submit is refused or its job
 * ends with a result within a bound; afterwards every fuzzing context still
 * runs a good job and the data of a bystander context is intact.  (The
 * guest kernel log is checked by the launcher.)
 *
 * Each test logs its seed; HPU_FUZZ_SEED=<seed> replays it (each thread
 * makes the same jobs in the same order; their interleaving is the
 * scheduler's), and HPU_FUZZ_TRACE=1 prints every compute job before it is
 * submitted.  A compute job with an unexpected result is printed too.
 */
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kselftest_harness.h"

#include "hpu_abi.h"
#include "hpu_fuzz.h"
#include "hpu_test.h"

#define MiB (1ull << 20)
#define RW (DRM_HPU_VM_MAP_READ | DRM_HPU_VM_MAP_WRITE)
/* Seconds of each test: the suite stays within about 90 s. */
#define SUBMIT_SECONDS 45
#define UQ_SECONDS 15
#define COMPUTE_SECONDS 25

/* Logs the test's seed and starts this thread's stream number stream of it; returns the seed. */
static uint64_t fuzz_start(struct __test_metadata *_metadata, unsigned int stream)
{
	uint64_t seed = fuzz_seed();

	TH_LOG("seed %#llx: HPU_FUZZ_SEED=%#llx replays it", (unsigned long long)seed,
	       (unsigned long long)seed);
	rnd_state = rnd_mix(seed + stream);
	return seed;
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

TEST_F_TIMEOUT(fuzz, random_command_buffers, SUBMIT_SECONDS + 180)
{
	unsigned int refused = 0, ok = 0, failed = 0, i, pending;
	uint64_t check_va = 0, seqs[8];
	int err, job_err;
	time_t end;

	fuzz_start(_metadata, 1);
	ASSERT_EQ(0, hbm_map(self->fd, 2 * MiB, &self->vas[2]));
	for (end = time(NULL) + SUBMIT_SECONDS; time(NULL) < end;) {
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
TEST_F_TIMEOUT(fuzz, random_jobs_on_a_user_queue, UQ_SECONDS + 180)
{
	unsigned int ok = 0, failed = 0, i, first;
	uint64_t check_va = 0;
	struct hpu_uq q;
	time_t end;

	fuzz_start(_metadata, 2);
	ASSERT_EQ(0, hpu_uq_open(&q, self->fd));
	/* The arena past its first page: random addresses reach no status word of the ring. */
	self->vas[2] = q.va + HPU_UQ_TEST_ARENA_OFF + HPU_PAGE;
	for (end = time(NULL) + UQ_SECONDS; time(NULL) < end;) {
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

/*
 * ---- Compute work from several threads ----
 *
 * Each worker has its own file (so context and ASID), 4 MiB of HBM and
 * 512 KiB of pinned host memory mapped into it, and a user queue.  A batch
 * is up to FZ_JOBS jobs, all submitted (SUBMIT on random queues, or the
 * user queue) before any is waited for; each job is a few packets, each
 * well-formed or, one in four, broken.  The host memory holds the batch's
 * parameter blocks and callees (scratch), the tensors the CPU writes
 * (indices, RNG states, step counts: index) and float data (flt); the
 * regions start over at each batch, when the last batch's jobs have ended.
 * Well-formed operands never reach scratch or index, so a job of
 * well-formed packets fails only when another job of the batch broke its
 * operands meanwhile.
 */

#define FZ_THREADS 3
#define FZ_JOBS 8
#define FZ_PACKETS 6
#define FZ_HBM (4 * MiB)
#define FZ_SCRATCH (192u << 10)
#define FZ_INDEX (128u << 10)
#define FZ_FLT (192u << 10)
#define FZ_HOST (FZ_SCRATCH + FZ_INDEX + FZ_FLT)
/* A batch's bound: a job's timeout (10 s) for a few of them in turn. */
#define FZ_WAIT_NS 60000000000ll
/* A batch that takes longer is printed. */
#define FZ_SLOW_S 3.0

/* A region of a worker's device memory, handed out front to back. */
struct fz_region {
	uint8_t *host; /* as the CPU sees it; NULL for HBM */
	uint64_t va, size, next;
};

struct fz_worker {
	unsigned int id;
	uint64_t seed;
	time_t end;
	bool trace;
	int fd;
	uint8_t *host;
	uint64_t host_va;
	struct fz_region scratch, index, flt, hbm;
	struct hpu_uq q;
	bool q_open;
	/* The batch's jobs, kept to print one that went wrong, and whether each is well-formed. */
	struct hpu_cb jobs[FZ_JOBS];
	bool broken[FZ_JOBS];
	struct hpu_cb callee;
	bool job_broken;
	/* The last index tensor's bytes: a broken packet overwrites them while others read them. */
	uint64_t index_va, index_len;
	unsigned long batches, launches, gemms, calls, packets_broken;
	unsigned long jobs_run, jobs_ok, refused, good_jobs, good_ok, slow;
	char error[256]; /* the first unexpected result, or "" */
};

/* One launch's parameter block, and which tensor holds indices in [0, bound) (-1: none). */
struct fz_launch {
	struct hpu_kernel_params p;
	struct hpu_tensor_desc t[HPU_KERNEL_MAX_TENSORS];
	int index;
	int64_t bound;
};

/* One of the values, at random. */
#define FZ_PICK(...)                                                              \
	({                                                                        \
		const uint64_t v_[] = { __VA_ARGS__ };                            \
		v_[rnd() % (sizeof(v_) / sizeof(v_[0]))];                         \
	})

static uint64_t fz_bits(double x)
{
	uint64_t b;

	memcpy(&b, &x, sizeof(b));
	return b;
}

static double fz_double(uint64_t b)
{
	double x;

	memcpy(&x, &b, sizeof(x));
	return x;
}

static uint32_t fz_bits32(float x)
{
	uint32_t b;

	memcpy(&b, &x, sizeof(b));
	return b;
}

static uint32_t fz_esize(uint32_t dtype)
{
	return dtype == HPU_DTYPE_I64 ? 8 : dtype == HPU_DTYPE_BF16 ? 2 : dtype == HPU_DTYPE_U8 ? 1 : 4;
}

static uint32_t fz_float(void)
{
	return rnd() % 3 ? HPU_DTYPE_F32 : HPU_DTYPE_BF16;
}

static uint32_t fz_any(void)
{
	return HPU_DTYPE_F32 + rnd() % 5;
}

static uint32_t fz_idx(void)
{
	return rnd() % 2 ? HPU_DTYPE_I64 : HPU_DTYPE_I32;
}

/* size bytes (64-byte aligned) of r, or 0 when it has no more this batch. */
static uint64_t fz_take(struct fz_region *r, uint64_t size)
{
	size = (size + 63) & ~63ull;
	if (size > r->size - r->next)
		return 0;
	r->next += size;
	return r->va + r->next - size;
}

/* Float data: mostly HBM, now and then host memory. */
static struct fz_region *fz_data(struct fz_worker *w)
{
	return rnd() % 4 ? &w->hbm : &w->flt;
}

/* Where the CPU sees [va, va + len) of w's host memory, or NULL. */
static uint8_t *fz_host_at(const struct fz_worker *w, uint64_t va, uint64_t len)
{
	if (va < w->host_va || va - w->host_va > FZ_HOST || len > FZ_HOST - (va - w->host_va))
		return NULL;
	return w->host + (va - w->host_va);
}

/* A random shape of ndim dims, most 1 to 8, now and then 0 or up to 40, at most max elements. */
static void fz_shape(uint32_t ndim, uint64_t *shape, uint64_t max)
{
	uint64_t n = 1, d;
	unsigned int k;

	for (k = 0; k < ndim; k++) {
		d = rnd() % 64 == 0 ? 0 : rnd() % 8 ? 1 + rnd() % 8 : 1 + rnd() % 40;
		if (d * n > max)
			d = 1;
		shape[k] = d;
		n *= d ? d : 1;
	}
}

/*
 * The dims of t, and the tensors of p, that the CPU may index: a broken
 * ndim or num_tensors can be past the arrays.
 */
static unsigned int fz_dims(const struct hpu_tensor_desc *t)
{
	return t->ndim < HPU_TENSOR_MAX_DIMS ? t->ndim : HPU_TENSOR_MAX_DIMS;
}

static unsigned int fz_tensors(const struct hpu_kernel_params *p)
{
	return p->num_tensors < HPU_KERNEL_MAX_TENSORS ? p->num_tensors : HPU_KERNEL_MAX_TENSORS;
}

static uint64_t fz_numel(const struct hpu_tensor_desc *t)
{
	uint64_t n = 1;
	unsigned int k;

	for (k = 0; k < fz_dims(t); k++)
		n *= t->shape[k];
	return n;
}

/*
 * A new tensor of dtype and shape in r, laid out row-major, or with padded
 * rows, two dims' order swapped, a dim reversed (a negative stride), or
 * (an input) a dim broadcast (stride 0).  0, or -1 when r is full.
 */
static int fz_place(struct fz_region *r, struct hpu_tensor_desc *t, uint32_t dtype, uint32_t ndim,
		    const uint64_t *shape, bool input)
{
	unsigned int order[HPU_TENSOR_MAX_DIMS], k, a, b;
	int64_t stride = 1, lo = 0, hi = 0, reach;
	uint64_t va;

	memset(t, 0, sizeof(*t));
	t->dtype = dtype;
	t->ndim = ndim;
	for (k = 0; k < HPU_TENSOR_MAX_DIMS; k++) {
		t->shape[k] = k < ndim ? shape[k] : 1;
		order[k] = k;
	}
	if (ndim >= 2 && rnd() % 6 == 0) {
		a = rnd() % ndim;
		b = rnd() % ndim;
		order[a] = b;
		order[b] = a;
	}
	for (k = ndim; k-- > 0;) {
		t->strides[order[k]] = stride;
		stride *= (int64_t)(t->shape[order[k]] ? t->shape[order[k]] : 1) +
			  (rnd() % 8 ? 0 : (int64_t)(rnd() % 3));
	}
	if (ndim && rnd() % 6 == 0)
		t->strides[rnd() % ndim] *= -1;
	if (ndim && input && rnd() % 6 == 0)
		t->strides[rnd() % ndim] = 0;
	for (k = 0; k < ndim; k++) {
		reach = (int64_t)(t->shape[k] ? t->shape[k] - 1 : 0) * t->strides[k];
		*(reach < 0 ? &lo : &hi) += reach;
	}
	va = fz_take(r, (uint64_t)(hi - lo + 1) * fz_esize(dtype));
	t->addr = va - (uint64_t)lo * fz_esize(dtype);
	return va ? 0 : -1;
}

static int fz_add(struct fz_launch *l, struct fz_region *r, uint32_t dtype, uint32_t ndim,
		  const uint64_t *shape, bool input)
{
	return fz_place(r, &l->t[l->p.num_tensors++], dtype, ndim, shape, input);
}

/* An input of an elementwise kernel: now and then the output itself (in place), when it can. */
static int fz_add_in(struct fz_worker *w, struct fz_launch *l, uint32_t dtype, uint32_t ndim,
		     const uint64_t *shape)
{
	if (rnd() % 8 == 0 && l->t[0].dtype == dtype && l->t[0].ndim == ndim &&
	    !memcmp(l->t[0].shape, shape, ndim * sizeof(*shape))) {
		l->t[l->p.num_tensors++] = l->t[0];
		return 0;
	}
	return fz_add(l, fz_data(w), dtype, ndim, shape, true);
}

/* Element k (row-major) of t, which lies in w's host memory, as the CPU sees it. */
static uint8_t *fz_elem(const struct fz_worker *w, const struct hpu_tensor_desc *t, uint64_t k)
{
	uint64_t off = 0; /* wraps like the device's signed offsets, without overflow */
	unsigned int d;

	for (d = fz_dims(t); d-- > 0;) {
		off += (k % t->shape[d]) * (uint64_t)t->strides[d];
		k /= t->shape[d];
	}
	return fz_host_at(w, t->addr + off * fz_esize(t->dtype), fz_esize(t->dtype));
}

static void fz_set_int(const struct fz_worker *w, const struct hpu_tensor_desc *t, uint64_t k,
		       int64_t v)
{
	uint8_t *p = fz_elem(w, t, k);
	int32_t i32 = (int32_t)v;
	float f = (float)v;

	if (!p)
		return;
	if (t->dtype == HPU_DTYPE_I64)
		memcpy(p, &v, sizeof(v));
	else if (t->dtype == HPU_DTYPE_F32)
		memcpy(p, &f, sizeof(f));
	else
		memcpy(p, &i32, sizeof(i32));
}

/* A tensor the CPU writes (in index), of dtype and shape, every element value(k). */
static int fz_add_host(struct fz_worker *w, struct fz_launch *l, uint32_t dtype, uint32_t ndim,
		       const uint64_t *shape, int64_t (*value)(int64_t bound), int64_t bound)
{
	struct hpu_tensor_desc *t = &l->t[l->p.num_tensors];
	uint64_t k, n;

	if (fz_add(l, &w->index, dtype, ndim, shape, true))
		return -1;
	for (k = 0, n = fz_numel(t); k < n; k++)
		fz_set_int(w, t, k, value(bound));
	return 0;
}

static int64_t fz_below(int64_t bound)
{
	return (int64_t)(rnd() % (uint64_t)bound);
}

/* Indices in [0, bound), or now and then -100, the ignore_index the losses get. */
static int64_t fz_target(int64_t bound)
{
	return rnd() % 8 ? fz_below(bound) : -100;
}

static int fz_add_index(struct fz_worker *w, struct fz_launch *l, uint32_t ndim,
			const uint64_t *shape, int64_t bound, int64_t (*value)(int64_t bound))
{
	l->index = (int)l->p.num_tensors;
	l->bound = bound;
	if (fz_add_host(w, l, fz_idx(), ndim, shape, value, bound))
		return -1;
	w->index_va = l->t[l->index].addr;
	w->index_len = fz_numel(&l->t[l->index]) * fz_esize(l->t[l->index].dtype);
	return 0;
}

/* An operand a kernel may go without: an empty F32 tensor in its slot. */
static int fz_add_absent(struct fz_worker *w, struct fz_launch *l)
{
	const uint64_t none = 0;

	return fz_add(l, fz_data(w), HPU_DTYPE_F32, 1, &none, true);
}

/* ---- one well-formed launch per kernel (the rules are hpu_kernels.h's) ---- */

static int fz_unary(struct fz_worker *w, struct fz_launch *l)
{
	uint64_t s[HPU_TENSOR_MAX_DIMS];
	uint32_t n = rnd() % 5, op = rnd() % 14;

	fz_shape(n, s, 1024);
	l->p.args[0] = op;
	l->p.scalars[0] = fz_bits((double)(rnd() % 5) - 2);
	return fz_add(l, fz_data(w), op >= HPU_UNARY_GELU ? fz_float() : fz_any(), n, s, false) ||
	       fz_add_in(w, l, fz_any(), n, s);
}

static int fz_binary(struct fz_worker *w, struct fz_launch *l)
{
	uint64_t s[HPU_TENSOR_MAX_DIMS];
	uint32_t n = rnd() % 5;
	bool scalar_b = rnd() % 4 == 0;

	fz_shape(n, s, 1024);
	l->p.args[0] = rnd() % 13;
	l->p.args[1] = scalar_b;
	l->p.scalars[0] = fz_bits(rnd() % 2 ? 1 : (double)(rnd() % 7) - 3);
	l->p.scalars[1] = fz_bits((double)(rnd() % 9) / 2 - 2);
	return fz_add(l, fz_data(w), fz_any(), n, s, false) || fz_add_in(w, l, fz_any(), n, s) ||
	       (!scalar_b && fz_add_in(w, l, fz_any(), n, s));
}

static int fz_where(struct fz_worker *w, struct fz_launch *l)
{
	uint64_t s[HPU_TENSOR_MAX_DIMS];
	uint32_t n = rnd() % 5;

	fz_shape(n, s, 1024);
	return fz_add(l, fz_data(w), fz_float(), n, s, false) ||
	       fz_add_in(w, l, HPU_DTYPE_U8, n, s) || fz_add_in(w, l, fz_float(), n, s) ||
	       fz_add_in(w, l, fz_float(), n, s);
}

static int fz_fill(struct fz_worker *w, struct fz_launch *l)
{
	uint64_t s[HPU_TENSOR_MAX_DIMS];
	uint32_t n = rnd() % 5;

	fz_shape(n, s, 1024);
	l->p.scalars[0] = fz_bits((double)(rnd() % 200) / 8 - 12);
	return fz_add(l, fz_data(w), fz_any(), n, s, false);
}

static int fz_reduce(struct fz_worker *w, struct fz_launch *l)
{
	uint64_t s[HPU_TENSOR_MAX_DIMS], o[HPU_TENSOR_MAX_DIMS];
	uint32_t n = 1 + rnd() % 4, op = rnd() % 6, mask, out, k;

	fz_shape(n, s, 1024);
	mask = op >= HPU_REDUCE_ARGMAX ? 1u << (rnd() % n) : 1 + rnd() % ((1u << n) - 1);
	for (k = 0; k < n; k++)
		o[k] = mask >> k & 1 ? 1 : s[k];
	out = op >= HPU_REDUCE_ARGMAX ? fz_idx() : op == HPU_REDUCE_MEAN ? fz_float() : fz_any();
	l->p.args[0] = op;
	l->p.args[1] = mask;
	return fz_add(l, fz_data(w), out, n, o, false) ||
	       fz_add(l, fz_data(w), op == HPU_REDUCE_MEAN ? fz_float() : fz_any(), n, s, true);
}

/* SOFTMAX and its backward: two or three float tensors of one shape. */
static int fz_softmax(struct fz_worker *w, struct fz_launch *l)
{
	uint64_t s[HPU_TENSOR_MAX_DIMS];
	uint32_t n = rnd() % 5, i;
	int err;

	fz_shape(n, s, 1024);
	l->p.args[0] = n ? rnd() % n : 0;
	l->p.args[1] = rnd() % 2;
	err = fz_add(l, fz_data(w), fz_float(), n, s, false);
	for (i = l->p.kernel == HPU_KERNEL_SOFTMAX ? 1 : 2; i; i--)
		err = err || fz_add(l, fz_data(w), fz_float(), n, s, true);
	return err;
}

/* NLL and cross entropy, forward and backward: logits or their gradient [N, C], targets [N]. */
static int fz_loss(struct fz_worker *w, struct fz_launch *l)
{
	uint64_t nc[2] = { 1 + rnd() % 16, 1 + rnd() % 16 };
	uint32_t red = rnd() % 3, loss_ndim = red == HPU_REDUCTION_NONE;
	bool bwd = l->p.kernel == HPU_KERNEL_NLL_LOSS_BWD ||
		   l->p.kernel == HPU_KERNEL_CROSS_ENTROPY_BWD;

	l->p.args[0] = red;
	l->p.args[1] = -100;
	if (!bwd)
		return fz_add(l, fz_data(w), fz_float(), loss_ndim, nc, false) ||
		       fz_add(l, fz_data(w), fz_float(), 2, nc, true) ||
		       fz_add_index(w, l, 1, nc, (int64_t)nc[1], fz_target);
	return fz_add(l, fz_data(w), fz_float(), 2, nc, false) ||
	       fz_add(l, fz_data(w), fz_float(), loss_ndim, nc, true) ||
	       (l->p.kernel == HPU_KERNEL_CROSS_ENTROPY_BWD &&
		fz_add(l, fz_data(w), fz_float(), 2, nc, true)) ||
	       fz_add_index(w, l, 1, nc, (int64_t)nc[1], fz_target);
}

static int64_t fz_any_int(int64_t bound)
{
	(void)bound;
	return (int64_t)(rnd() >> 4);
}

static double fz_p(void)
{
	return (double)FZ_PICK(0, 1, 2, 3, 4) / 4;
}

static int fz_dropout(struct fz_worker *w, struct fz_launch *l)
{
	uint64_t s[HPU_TENSOR_MAX_DIMS];
	const uint64_t two = 2;
	uint32_t n = rnd() % 5;

	fz_shape(n, s, 1024);
	l->p.scalars[0] = fz_bits(fz_p());
	return fz_add(l, fz_data(w), fz_float(), n, s, false) ||
	       fz_add(l, fz_data(w), HPU_DTYPE_U8, n, s, false) ||
	       fz_add(l, fz_data(w), fz_float(), n, s, true) ||
	       fz_add_host(w, l, HPU_DTYPE_I64, 1, &two, fz_any_int, 0);
}

/* The backwards of DROPOUT, RELU and GELU: grad_in, grad_out and a mask or input of one shape. */
static int fz_grad(struct fz_worker *w, struct fz_launch *l)
{
	uint64_t s[HPU_TENSOR_MAX_DIMS];
	uint32_t n = rnd() % 5;

	fz_shape(n, s, 1024);
	l->p.args[0] = l->p.kernel == HPU_KERNEL_GELU_BWD ? rnd() % 2 : 0;
	l->p.scalars[0] = fz_bits(fz_p());
	return fz_add(l, fz_data(w), fz_float(), n, s, false) ||
	       fz_add_in(w, l, fz_float(), n, s) ||
	       fz_add_in(w, l, l->p.kernel == HPU_KERNEL_DROPOUT_BWD ? HPU_DTYPE_U8 : fz_float(), n,
			 s);
}

/* A trailing operand of LAYER_NORM (weight, bias, their gradients), or its empty stand-in. */
static int fz_ln_trailing(struct fz_worker *w, struct fz_launch *l, bool present, uint32_t n,
			  const uint64_t *trailing, bool input)
{
	return present ? fz_add(l, fz_data(w), fz_float(), n, trailing, input) :
			 fz_add_absent(w, l);
}

static int fz_layer_norm(struct fz_worker *w, struct fz_launch *l)
{
	uint64_t s[HPU_TENSOR_MAX_DIMS];
	uint32_t n = 1 + rnd() % 4, norm = 1 + rnd() % n, lead = n - norm, flags = rnd() % 4;
	struct fz_region *r = fz_data(w);

	fz_shape(n, s, 1024);
	l->p.args[0] = norm;
	l->p.args[1] = flags;
	l->p.scalars[0] = fz_bits(1e-5);
	if (l->p.kernel == HPU_KERNEL_LAYER_NORM)
		return fz_add(l, r, fz_float(), n, s, false) ||
		       fz_add(l, r, HPU_DTYPE_F32, lead, s, false) ||
		       fz_add(l, r, HPU_DTYPE_F32, lead, s, false) ||
		       fz_add(l, r, fz_float(), n, s, true) ||
		       fz_ln_trailing(w, l, flags & 1, norm, s + lead, true) ||
		       fz_ln_trailing(w, l, flags & 2, norm, s + lead, true);
	return fz_add(l, r, fz_float(), n, s, false) ||
	       fz_ln_trailing(w, l, flags & 1, norm, s + lead, false) ||
	       fz_ln_trailing(w, l, flags & 2, norm, s + lead, false) ||
	       fz_add(l, r, fz_float(), n, s, true) || fz_add(l, r, fz_float(), n, s, true) ||
	       fz_add(l, r, HPU_DTYPE_F32, lead, s, true) ||
	       fz_add(l, r, HPU_DTYPE_F32, lead, s, true) ||
	       fz_ln_trailing(w, l, flags & 1, norm, s + lead, true);
}

/* EMBEDDING and its backward: rows [..., D] of a table [V, D] named by indices [...]. */
static int fz_embedding(struct fz_worker *w, struct fz_launch *l)
{
	uint64_t s[HPU_TENSOR_MAX_DIMS], vd[2] = { 1 + rnd() % 16, 1 + rnd() % 16 };
	uint32_t n = rnd() % 4;
	bool bwd = l->p.kernel == HPU_KERNEL_EMBEDDING_BWD;

	fz_shape(n, s, 64);
	s[n] = vd[1];
	l->p.args[0] = rnd() % 2 ? -1 : (int64_t)fz_below((int64_t)vd[0]);
	return fz_add(l, fz_data(w), fz_float(), bwd ? 2 : n + 1, bwd ? vd : s, false) ||
	       fz_add(l, fz_data(w), fz_float(), bwd ? n + 1 : 2, bwd ? s : vd, true) ||
	       fz_add_index(w, l, n, s, (int64_t)vd[0], fz_below);
}

/* The optimizers: param, grad and state tensors of one shape; AdamW's step count. */
static int fz_optim(struct fz_worker *w, struct fz_launch *l)
{
	uint64_t s[HPU_TENSOR_MAX_DIMS] = { 0 };
	__u64 *sc = l->p.scalars;
	uint32_t n = rnd() % 5, i, tensors;
	bool momentum = rnd() % 2, damped = rnd() % 2;
	int err;

	fz_shape(n, s, 1024);
	switch (l->p.kernel) {
	case HPU_KERNEL_SGD:
		tensors = 3;
		sc[0] = fz_bits(0.1);
		sc[1] = fz_bits(momentum ? 0.9 : 0);
		sc[2] = fz_bits(damped ? 0.1 : 0);
		sc[3] = fz_bits(rnd() % 2 ? 0.01 : 0);
		l->p.args[0] = (momentum && !damped ? rnd() % 2 : 0) | (rnd() % 2) << 1;
		break;
	case HPU_KERNEL_ADADELTA:
		tensors = 4;
		sc[0] = fz_bits(1);
		sc[1] = fz_bits(0.9);
		sc[2] = fz_bits(1e-6);
		sc[3] = fz_bits(rnd() % 2 ? 0.01 : 0);
		break;
	default:
		tensors = 4;
		sc[0] = fz_bits(1e-3);
		sc[1] = fz_bits(0.9);
		sc[2] = fz_bits(0.999);
		sc[3] = fz_bits(1e-8);
		sc[4] = fz_bits(rnd() % 2 ? 0.01 : 0);
		break;
	}
	err = fz_add(l, fz_data(w), fz_float(), n, s, false);
	for (i = 1; i < tensors; i++)
		err = err || (i == 1 ? fz_add_in(w, l, fz_float(), n, s) :
				       fz_add(l, fz_data(w), fz_float(), n, s, false));
	if (l->p.kernel == HPU_KERNEL_ADAMW)
		err = err || fz_add_host(w, l, rnd() % 2 ? HPU_DTYPE_F32 : HPU_DTYPE_I64, 0, s,
					 fz_below, 100);
	return err;
}

static int fz_clip(struct fz_worker *w, struct fz_launch *l)
{
	uint64_t s[HPU_TENSOR_MAX_DIMS] = { 0 };
	unsigned int grads = 1 + rnd() % 6, n;
	int err;

	l->p.scalars[0] = fz_bits(1);
	l->p.scalars[1] = fz_bits(rnd() % 2 ? 2 : INFINITY);
	err = fz_add(l, fz_data(w), HPU_DTYPE_F32, 0, s, false);
	while (grads--) {
		n = rnd() % 5;
		fz_shape(n, s, 1024);
		err = err || fz_add(l, fz_data(w), fz_float(), n, s, false);
	}
	return err;
}

typedef int fz_build_fn(struct fz_worker *w, struct fz_launch *l);

static fz_build_fn *const fz_builders[] = {
	[HPU_KERNEL_UNARY] = fz_unary,
	[HPU_KERNEL_BINARY] = fz_binary,
	[HPU_KERNEL_WHERE] = fz_where,
	[HPU_KERNEL_FILL] = fz_fill,
	[HPU_KERNEL_REDUCE] = fz_reduce,
	[HPU_KERNEL_SOFTMAX] = fz_softmax,
	[HPU_KERNEL_SOFTMAX_BWD] = fz_softmax,
	[HPU_KERNEL_NLL_LOSS] = fz_loss,
	[HPU_KERNEL_NLL_LOSS_BWD] = fz_loss,
	[HPU_KERNEL_CROSS_ENTROPY] = fz_loss,
	[HPU_KERNEL_CROSS_ENTROPY_BWD] = fz_loss,
	[HPU_KERNEL_DROPOUT] = fz_dropout,
	[HPU_KERNEL_DROPOUT_BWD] = fz_grad,
	[HPU_KERNEL_RELU_BWD] = fz_grad,
	[HPU_KERNEL_GELU_BWD] = fz_grad,
	[HPU_KERNEL_LAYER_NORM] = fz_layer_norm,
	[HPU_KERNEL_LAYER_NORM_BWD] = fz_layer_norm,
	[HPU_KERNEL_EMBEDDING] = fz_embedding,
	[HPU_KERNEL_EMBEDDING_BWD] = fz_embedding,
	[HPU_KERNEL_SGD] = fz_optim,
	[HPU_KERNEL_ADADELTA] = fz_optim,
	[HPU_KERNEL_ADAMW] = fz_optim,
	[HPU_KERNEL_CLIP_GRAD_NORM] = fz_clip,
};

#define FZ_KERNELS (sizeof(fz_builders) / sizeof(fz_builders[0]))

/* ---- broken values ---- */

/*
 * A dim of a broadcast: mostly past HPU_KERNEL_MAX_ELEMENTS, now and then
 * within it, rarely just within it (work that runs for seconds).
 */
static uint64_t fz_huge(void)
{
	if (rnd() % 128 == 0)
		return 1ull << (28 + rnd() % 5);
	if (rnd() % 4 == 0)
		return 1ull << (8 + rnd() % 12);
	return FZ_PICK(1ull << 32, (1ull << 32) + 1, 1ull << 40, 1ull << 62, 1ull << 63,
		       ~0ull, rnd());
}

static uint64_t fz_far(const struct fz_worker *w)
{
	return FZ_PICK(0, 8, 1ull << 47, (1ull << 48) - 8, ~7ull, 1ull << 63, 0x100000) +
	       (rnd() % 4 ? 0 : w->hbm.va + FZ_HBM - 8);
}

static int64_t fz_bad_int(void)
{
	return (int64_t)FZ_PICK(-1, 6, 7, 13, 14, 64, 1ull << 31, 1ull << 32, 1ull << 63,
				(1ull << 63) - 1, -100, -2, rnd());
}

static uint64_t fz_bad_double(void)
{
	return FZ_PICK(fz_bits(NAN), fz_bits(-NAN), fz_bits(INFINITY), fz_bits(-INFINITY),
		       fz_bits(-1), fz_bits(1), fz_bits(2), fz_bits(1e308), fz_bits(-0.0), 1, rnd());
}

static int64_t fz_bad_index(int64_t bound)
{
	return (int64_t)FZ_PICK(-1, -2, (uint64_t)bound, (uint64_t)bound + 1, 1ull << 31,
				(1ull << 31) - 1, 1ull << 32, (1ull << 32) + (uint64_t)bound - 1,
				1ull << 63, (1ull << 63) - 1, rnd());
}

/* Breaks one thing of l, as a hostile or buggy runtime would. */
static void fz_break_launch(struct fz_worker *w, struct fz_launch *l)
{
	struct hpu_kernel_params *p = &l->p;
	unsigned int n = fz_tensors(p) ? fz_tensors(p) : 1, d = rnd() % HPU_TENSOR_MAX_DIMS, k;
	struct hpu_tensor_desc *t = &l->t[rnd() % n], *u = &l->t[rnd() % n], tmp;
	uint64_t i, count;

	switch (rnd() % 12) {
	case 0: /* an output over an input: shifted, or the same bytes read another way */
		l->t[0].addr = u->addr + (rnd() % 3) * fz_esize(u->dtype);
		if (rnd() % 2 && fz_dims(&l->t[0]))
			l->t[0].strides[rnd() % fz_dims(&l->t[0])] += 1;
		break;
	case 1: /* broadcast dims of huge sizes */
		if (!t->ndim)
			t->ndim = 1 + rnd() % HPU_TENSOR_MAX_DIMS;
		for (k = 0; k < fz_dims(t); k++)
			if (k == d % fz_dims(t) || rnd() % 2) {
				t->strides[k] = 0;
				t->shape[k] = fz_huge();
			}
		break;
	case 2: /* a dim reversed, its base left where it was */
		if (fz_dims(t)) {
			k = d % fz_dims(t);
			t->strides[k] = -t->strides[k] - (int64_t)(rnd() % 2);
		}
		break;
	case 3: /* an extreme size, within ndim or past it */
		t->shape[d] = FZ_PICK(0, 2, 1ull << 31, 1ull << 32, (1ull << 32) + 1, 1ull << 62,
				      ~0ull);
		break;
	case 4: /* an extreme stride */
		t->strides[d] = (int64_t)FZ_PICK(1ull << 40, -(1ull << 40), 1ull << 62, 1ull << 63,
						 (1ull << 63) - 1, -1, 1);
		break;
	case 5: /* indices at and past their bounds: one, or all */
		if (l->index < 0) {
			p->args[rnd() % 2] = fz_bad_int();
			break;
		}
		count = fz_numel(&l->t[l->index]);
		for (i = rnd() % 2 ? 0 : rnd() % (count ? count : 1); i < count; i++) {
			fz_set_int(w, &l->t[l->index], i, fz_bad_index(l->bound));
			if (rnd() % 2)
				break;
		}
		break;
	case 6: /* an argument out of range */
		p->args[rnd() % 3] = fz_bad_int();
		break;
	case 7: /* a scalar that is no number, infinite, negative or huge */
		p->scalars[rnd() % 5] = fz_bad_double();
		break;
	case 8: /* a dtype or ndim of no tensor */
		if (rnd() % 2)
			t->dtype = (uint32_t)FZ_PICK(0, 6, 7, 0x101, ~0u, rnd());
		else
			t->ndim = (uint32_t)FZ_PICK(0, 7, 8, ~0u, rnd());
		break;
	case 9: /* an address outside the context's memory, across its end, or misaligned */
		t->addr = rnd() % 2 ? fz_far(w) : t->addr + 1 + rnd() % 3;
		break;
	case 10: /* the block's header: version, flags, kernel, operand count */
		switch (rnd() % 4) {
		case 0:
			p->version = (uint32_t)FZ_PICK(0, 2, ~0u);
			break;
		case 1:
			p->flags = 1u << (rnd() % 32);
			break;
		case 2:
			p->kernel = (uint32_t)FZ_PICK(0, FZ_KERNELS, 255, ~0u, rnd() % FZ_KERNELS);
			break;
		default:
			p->num_tensors = (uint32_t)FZ_PICK(0, 1, p->num_tensors - 1,
							   p->num_tensors + 1, 16, 17, ~0u);
			break;
		}
		break;
	default: /* two operands swapped */
		tmp = *t;
		*t = *u;
		*u = tmp;
		break;
	}
}

/* ---- packets ---- */

/* A TPC_LAUNCH of one kernel's launch, well-formed or broken: 0, or -1 if memory ran out. */
static int fz_launch(struct fz_worker *w, struct hpu_cb *cb, bool broken)
{
	struct fz_launch l = { .index = -1 };
	uint32_t kernel = 1 + rnd() % (FZ_KERNELS - 1), n, size;
	struct hpu_pkt_tpc_launch pkt = { .header = HPU_PKT_HEADER(HPU_PKT_TPC_LAUNCH, 0) };
	uint8_t *host;
	unsigned int breaks;

	l.p.version = HPU_KERNEL_PARAMS_VERSION;
	l.p.kernel = kernel;
	if (fz_builders[kernel](w, &l))
		return -1;
	for (breaks = broken ? 1 + (rnd() % 4 == 0) : 0; breaks; breaks--)
		fz_break_launch(w, &l);
	n = fz_tensors(&l.p);
	size = sizeof(l.p) + n * sizeof(l.t[0]);
	pkt.params_size = size;
	pkt.params = fz_take(&w->scratch, size);
	if (!pkt.params)
		return -1;
	host = fz_host_at(w, pkt.params, size);
	memcpy(host, &l.p, sizeof(l.p));
	memcpy(host + sizeof(l.p), l.t, n * sizeof(l.t[0]));
	if (broken && rnd() % 4 == 0) {
		switch (rnd() % 4) {
		case 0:
			pkt.params_size = (uint32_t)FZ_PICK(0, size - 8, size + 8,
							    size + sizeof(l.t[0]),
							    HPU_KERNEL_PARAMS_MAX + 8, ~0u);
			break;
		case 1:
			pkt.params = rnd() % 2 ? pkt.params + 4 : fz_far(w);
			break;
		case 2: /* the block across the end of the host mapping */
			pkt.params = w->host_va + FZ_HOST - 8 * (1 + rnd() % 8);
			break;
		default:
			pkt.header |= (uint32_t)FZ_PICK(1u << 8, 1u << 15, 1u << 16, 1u << 31);
			break;
		}
	}
	hpu_cb_put(cb, &pkt, sizeof(pkt));
	w->launches++;
	return 0;
}

/* batch matrices of rows x cols (a leading dim >= cols, shared when stride 0): the first's VA. */
static uint64_t fz_matrix(struct fz_worker *w, uint32_t dtype, uint32_t batch, uint64_t rows,
			  uint64_t cols, __u64 *ld, __u64 *stride, bool input)
{
	*ld = cols + (rnd() % 4 ? 0 : rnd() % 5);
	*stride = input && rnd() % 4 == 0 ? 0 : rows * *ld + (rnd() % 4 ? 0 : rnd() % 9);
	return fz_take(fz_data(w), ((batch - 1) * *stride + (rows - 1) * *ld + cols) *
					   fz_esize(dtype));
}

static void fz_break_gemm(struct fz_worker *w, struct hpu_pkt_mme_gemm *g)
{
	uint32_t *dim = (uint32_t *[]){ &g->m, &g->n, &g->k }[rnd() % 3];
	__u64 *ld = (__u64 *[]){ &g->lda, &g->ldb, &g->ldc }[rnd() % 3];
	__u64 *stride = (__u64 *[]){ &g->stride_a, &g->stride_b, &g->stride_c }[rnd() % 3];
	__u64 *addr = (__u64 *[]){ &g->a, &g->b, &g->c }[rnd() % 3];

	switch (rnd() % 9) {
	case 0:
		*dim = (uint32_t)FZ_PICK(0, 1u << 20, 1u << 31, (1u << 31) - 1, ~0u);
		break;
	case 1:
		/*
		 * Many matrices, A and B shared: C's too with a small batch,
		 * and rarely with a large one (legal work the engine runs
		 * until the job's timeout), else out of the mapping.
		 */
		g->batch = (uint32_t)FZ_PICK(0, 1u << 8, 1u << 16, 1u << 24, ~0u);
		g->stride_a = g->stride_b = 0;
		if (g->batch <= 1u << 16 || rnd() % 64 == 0)
			g->stride_c = 0;
		break;
	case 2:
		*ld = FZ_PICK(0, 1, 1ull << 31, 1ull << 40, 1ull << 63, ~0ull);
		break;
	case 3:
		*stride = FZ_PICK(1, 1ull << 40, 1ull << 62, 1ull << 63, ~0ull);
		break;
	case 4: /* C over A or B */
		g->c = (rnd() % 2 ? g->a : g->b) + 4 * (rnd() % 3);
		break;
	case 5:
		*(rnd() % 2 ? &g->dtype_ab : &g->dtype_c) =
			(uint32_t)FZ_PICK(0, HPU_DTYPE_I32, HPU_DTYPE_I64, HPU_DTYPE_U8, 6, ~0u);
		break;
	case 6:
		*addr = rnd() % 2 ? fz_far(w) : *addr + 1 + rnd() % 3;
		break;
	case 7:
		*(rnd() % 2 ? &g->alpha : &g->beta) =
			(uint32_t)FZ_PICK(fz_bits32(NAN), fz_bits32(INFINITY), fz_bits32(-INFINITY),
					  1, fz_bits32(3e38f), rnd());
		break;
	default:
		if (rnd() % 2)
			g->pad = (uint32_t)rnd() | 1;
		else
			g->header |= (uint32_t)FZ_PICK(1u << 10, 1u << 15, 1u << 16);
		break;
	}
}

/* An MME_GEMM over the context's memory (bf16 or f32, any transposes), well-formed or broken. */
static int fz_gemm(struct fz_worker *w, struct hpu_cb *cb, bool broken)
{
	uint32_t flags = rnd() % 4;
	struct hpu_pkt_mme_gemm g = {
		.header = HPU_PKT_HEADER(HPU_PKT_MME_GEMM, flags),
		.dtype_ab = fz_float(),
		.dtype_c = fz_float(),
		.batch = 1 + rnd() % 3,
		.m = 1 + rnd() % 48,
		.n = 1 + rnd() % 48,
		.k = 1 + rnd() % 48,
		.alpha = fz_bits32(rnd() % 4 ? 1.0f : -0.5f),
		.beta = rnd() % 2 ? 0 : fz_bits32(0.5f),
	};
	bool ta = flags & HPU_PKT_GEMM_TRANS_A, tb = flags & HPU_PKT_GEMM_TRANS_B;

	g.a = fz_matrix(w, g.dtype_ab, g.batch, ta ? g.k : g.m, ta ? g.m : g.k, &g.lda, &g.stride_a,
			true);
	g.b = fz_matrix(w, g.dtype_ab, g.batch, tb ? g.n : g.k, tb ? g.k : g.n, &g.ldb, &g.stride_b,
			true);
	g.c = fz_matrix(w, g.dtype_c, g.batch, g.m, g.n, &g.ldc, &g.stride_c, false);
	if (!g.a || !g.b || !g.c)
		return -1;
	if (broken)
		fz_break_gemm(w, &g);
	hpu_cb_gemm(cb, &g);
	w->gemms++;
	return 0;
}

static int fz_packet(struct fz_worker *w, struct hpu_cb *cb, bool call);

/*
 * A CALL of a callee of one to four packets in scratch; broken, with a
 * nested CALL or a privileged packet inside, or a bad address or size.
 */
static int fz_call(struct fz_worker *w, struct hpu_cb *cb, bool broken)
{
	struct hpu_cb *callee = &w->callee;
	struct hpu_pkt_call pkt = { .header = HPU_PKT_HEADER(HPU_PKT_CALL, 0) };
	struct hpu_pkt_write_completion wc = {
		.header = HPU_PKT_HEADER(HPU_PKT_WRITE_COMPLETION, 0),
	};
	unsigned int packets = 1 + rnd() % 4;

	callee->size = 0;
	while (packets--)
		if (fz_packet(w, callee, false))
			return -1;
	if (broken && rnd() % 3 == 0) {
		pkt.addr = w->scratch.va + w->scratch.next;
		pkt.size = callee->size + sizeof(pkt);
		switch (rnd() % 3) {
		case 0: /* itself */
			hpu_cb_put(callee, &pkt, sizeof(pkt));
			break;
		case 1:
			hpu_cb_put(callee, &wc, sizeof(wc));
			break;
		default:
			hpu_cb_put(callee, &(struct hpu_pkt_interrupt){
				.header = HPU_PKT_HEADER(HPU_PKT_INTERRUPT, 0), .vector = 1 }, 8);
			break;
		}
	}
	pkt.size = callee->size;
	pkt.addr = fz_take(&w->scratch, callee->size);
	if (!pkt.addr)
		return -1;
	memcpy(fz_host_at(w, pkt.addr, callee->size), callee->buf, callee->size);
	if (broken && rnd() % 2) {
		switch (rnd() % 4) {
		case 0:
			pkt.size = FZ_PICK(pkt.size + 8 * (1 + rnd() % 8), pkt.size - 4, 0,
					   HPU_CALL_MAX_SIZE, HPU_CALL_MAX_SIZE + 8, ~7ull);
			break;
		case 1:
			pkt.addr = rnd() % 2 ? pkt.addr + 4 : fz_far(w);
			break;
		case 2: /* its last packets past the end of the host mapping */
			pkt.addr = w->host_va + FZ_HOST - 8 * (1 + rnd() % 4);
			break;
		default:
			pkt.pad = 1;
			break;
		}
	}
	hpu_cb_put(cb, &pkt, sizeof(pkt));
	w->calls++;
	return 0;
}

/*
 * One packet: mostly a launch, else a GEMM, a CALL (when call), float
 * data overwritten with a random byte, or (broken) the batch's last
 * indices overwritten while other jobs may read them.
 */
static int fz_packet(struct fz_worker *w, struct hpu_cb *cb, bool call)
{
	bool broken = rnd() % 4 == 0;
	unsigned int kind = rnd() % 20;
	struct fz_region *r;
	uint64_t off, len;

	w->job_broken |= broken;
	w->packets_broken += broken;
	if (kind < 12)
		return fz_launch(w, cb, broken);
	if (kind < 15)
		return fz_gemm(w, cb, broken);
	if (kind < 17 && call)
		return fz_call(w, cb, broken);
	if (kind < 19 || !w->index_len) {
		r = fz_data(w);
		off = rnd() % r->size;
		len = 1 + rnd() % (r->size - off < 65536 ? r->size - off : 65536);
		hpu_cb_memset(cb, r->va + off, (uint8_t)rnd(), len);
		return 0;
	}
	w->job_broken = true;
	hpu_cb_memset(cb, w->index_va, (uint8_t)FZ_PICK(0xff, 0x7f, 0x80), w->index_len);
	return 0;
}

/* Prints cb's packets, with the parameter blocks and callees found in w's host memory. */
static void fz_dump(const struct fz_worker *w, const uint8_t *cb, uint32_t size, int depth)
{
	const struct hpu_kernel_params *p;
	const struct hpu_tensor_desc *t;
	uint32_t off = 0, header, len, i, op;
	uint64_t addr, bytes;
	const uint8_t *host;

	while (off + 8 <= size) {
		memcpy(&header, cb + off, sizeof(header));
		op = HPU_PKT_OPCODE(header);
		len = op == HPU_PKT_MME_GEMM ? sizeof(struct hpu_pkt_mme_gemm) :
		      op == HPU_PKT_LIN_DMA ? 32 :
		      op == HPU_PKT_CALL || op == HPU_PKT_WRITE_COMPLETION ? 24 :
		      op == HPU_PKT_NOP || op == HPU_PKT_INTERRUPT ? 8 : 16;
		if (len > size - off)
			len = size - off;
		fprintf(stderr, "#%*s %04x:", 2 * depth, "", off);
		for (i = 0; i < len; i += 4)
			fprintf(stderr, " %08x", *(const uint32_t *)(cb + off + i));
		fprintf(stderr, "\n");
		/* A truncated packet has no address: cb may end at the end of the mapping. */
		if (len >= 16)
			memcpy(&addr, cb + off + 8, sizeof(addr));
		bytes = op == HPU_PKT_TPC_LAUNCH && len >= 16 ? *(const uint32_t *)(cb + off + 4) :
			op == HPU_PKT_CALL && len == 24 ? *(const uint64_t *)(cb + off + 16) : 0;
		host = bytes ? fz_host_at(w, addr, bytes) : NULL;
		if (host && op == HPU_PKT_CALL && !depth) {
			fz_dump(w, host, (uint32_t)bytes, depth + 1);
		} else if (host && op == HPU_PKT_TPC_LAUNCH && bytes >= sizeof(*p)) {
			p = (const void *)host;
			fprintf(stderr, "#%*s   kernel %u v%u flags %#x, %u tensors, args", 2 * depth,
				"", p->kernel, p->version, p->flags, p->num_tensors);
			for (i = 0; i < HPU_KERNEL_MAX_ARGS; i++)
				fprintf(stderr, " %lld", (long long)p->args[i]);
			fprintf(stderr, ", scalars");
			for (i = 0; i < HPU_KERNEL_MAX_SCALARS; i++)
				fprintf(stderr, " %g", fz_double(p->scalars[i]));
			fprintf(stderr, "\n");
			for (i = 0, t = (const void *)(p + 1); (i + 1) * sizeof(*t) <= bytes - sizeof(*p);
			     i++, t++)
				fprintf(stderr, "#%*s   t%u: %#llx dtype %u ndim %u shape %llu %llu %llu "
					"%llu %llu %llu strides %lld %lld %lld %lld %lld %lld\n",
					2 * depth, "", i, (unsigned long long)t->addr, t->dtype, t->ndim,
					(unsigned long long)t->shape[0], (unsigned long long)t->shape[1],
					(unsigned long long)t->shape[2], (unsigned long long)t->shape[3],
					(unsigned long long)t->shape[4], (unsigned long long)t->shape[5],
					(long long)t->strides[0], (long long)t->strides[1],
					(long long)t->strides[2], (long long)t->strides[3],
					(long long)t->strides[4], (long long)t->strides[5]);
		}
		off += len;
	}
}

/* Records the worker's first unexpected result, and prints the job it came from. */
static void fz_fail(struct fz_worker *w, int job, const char *what, long long value)
{
	snprintf(w->error, sizeof(w->error),
		 "thread %u, batch %lu, job %d: %s %lld (HPU_FUZZ_SEED=%#llx)", w->id, w->batches,
		 job, what, value, (unsigned long long)w->seed);
	flockfile(stderr);
	fprintf(stderr, "# %s\n", w->error);
	if (job >= 0)
		fz_dump(w, w->jobs[job].buf, w->jobs[job].size, 0);
	funlockfile(stderr);
}

static void fz_count(struct fz_worker *w, unsigned int job, bool ok)
{
	w->jobs_run++;
	w->jobs_ok += ok;
	if (!w->broken[job]) {
		w->good_jobs++;
		w->good_ok += ok;
	}
}

static double fz_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* What is left of a batch's bound (FZ_WAIT_NS from start), at least a poll. */
static int64_t fz_left(double start)
{
	double left = start + FZ_WAIT_NS / 1e9 - fz_now();

	return left > 0 ? (int64_t)(left * 1e9) : 0;
}

/* A batch that took long is printed: the work that kept a queue, or the device, busy. */
static void fz_slow(struct fz_worker *w, unsigned int jobs, double start)
{
	double took = fz_now() - start;
	unsigned int i;

	if (took < FZ_SLOW_S)
		return;
	w->slow++;
	flockfile(stderr);
	fprintf(stderr, "# thread %u batch %lu took %.1f s:\n", w->id, w->batches, took);
	for (i = 0; i < jobs; i++) {
		fprintf(stderr, "# job %u:\n", i);
		fz_dump(w, w->jobs[i].buf, w->jobs[i].size, 0);
	}
	funlockfile(stderr);
}

/* A batch: up to FZ_JOBS jobs on the kernel's queues or on the user queue, then their ends. */
static void fz_batch(struct fz_worker *w)
{
	bool uq = rnd() % 2, sent[FZ_JOBS] = { false };
	unsigned int jobs = 1 + rnd() % FZ_JOBS, i, packets, status;
	uint64_t seqs[FZ_JOBS];
	uint32_t first = w->q.pi;
	double start = fz_now();
	int err, job_err;

	w->batches++;
	w->scratch.next = w->index.next = w->flt.next = w->hbm.next = 0;
	w->index_len = 0;
	for (i = 0; i < jobs; i++) {
		struct hpu_cb *cb = &w->jobs[i];

		cb->size = 0;
		w->job_broken = false;
		for (packets = 1 + rnd() % FZ_PACKETS; packets; packets--)
			fz_packet(w, cb, true);
		if (!cb->size)
			hpu_cb_put(cb, &(struct hpu_pkt_nop){ HPU_PKT_HEADER(HPU_PKT_NOP, 0) }, 8);
		w->broken[i] = w->job_broken;
		if (w->trace) {
			flockfile(stderr);
			fprintf(stderr, "# thread %u batch %lu job %u%s:\n", w->id, w->batches, i,
				uq ? " (user queue)" : "");
			fz_dump(w, cb->buf, cb->size, 0);
			funlockfile(stderr);
		}
		if (uq) {
			hpu_uq_put(&w->q, cb, 0);
			continue;
		}
		err = hpu_submit(w->fd, rnd() % 4, cb->buf, cb->size, &seqs[i]);
		if (err == -EINVAL || err == -EPERM) {
			w->refused++;
			continue;
		}
		if (err)
			return fz_fail(w, (int)i, "submit:", err);
		sent[i] = true;
	}
	if (uq) {
		hpu_uq_ring(&w->q);
		err = hpu_uq_wait(w->fd, w->q.id, w->q.pi, FZ_WAIT_NS, NULL);
		for (i = 0; err && i < jobs; i++)
			if (hpu_uq_slot(&w->q, first + i)->status == 0xffffffffu)
				return fz_fail(w, (int)i, "user-queue wait, the first job not ended:",
					       err);
		for (i = 0; i < jobs; i++) {
			/* A job a queue reset dropped (its watchdog) keeps the status we wrote. */
			status = hpu_uq_slot(&w->q, first + i)->status;
			if (status > HPU_UQ_STATUS_BAD_KERNEL && status != 0xffffffffu)
				return fz_fail(w, (int)i, "user-queue status", status);
			fz_count(w, i, !status);
		}
	} else {
		for (i = 0; i < jobs; i++) {
			if (!sent[i])
				continue;
			err = hpu_wait(w->fd, seqs[i], fz_left(start), &job_err);
			if (err)
				return fz_fail(w, (int)i, "wait:", err);
			if (!is_job_result(job_err))
				return fz_fail(w, (int)i, "job error", job_err);
			fz_count(w, i, !job_err);
		}
	}
	fz_slow(w, jobs, start);
}

/* Whether w's context still runs a good launch: a FILL of 64 floats, read back. */
static int fz_good_launch(struct fz_worker *w, bool uq)
{
	struct fz_launch l = {
		.p = { .version = HPU_KERNEL_PARAMS_VERSION, .kernel = HPU_KERNEL_FILL,
		       .num_tensors = 1, .scalars = { fz_bits(2.5) } },
		.t = { { .addr = w->flt.va, .dtype = HPU_DTYPE_F32, .ndim = 1,
			 .shape = { 64, 1, 1, 1, 1, 1 }, .strides = { 1 } } },
	};
	uint32_t size = sizeof(l.p) + sizeof(l.t[0]);
	struct hpu_cb *cb = &w->jobs[0];
	float *out = (float *)w->flt.host;
	unsigned int i;
	int err;

	memcpy(w->scratch.host, &l, size);
	memset(out, 0, 64 * sizeof(*out));
	cb->size = 0;
	hpu_cb_launch(cb, w->scratch.va, size);
	err = uq ? hpu_uq_run(&w->q, cb) : hpu_run(w->fd, rnd() % 4, cb->buf, cb->size);
	for (i = 0; !err && i < 64; i++)
		if (out[i] != 2.5f)
			err = -EIO;
	return err;
}

static int fz_setup(struct fz_worker *w)
{
	uint8_t *b;
	int err;

	w->fd = open_dev();
	if (w->fd < 0)
		return w->fd;
	w->host = hpu_host_pages(FZ_HOST);
	if (!w->host)
		return -ENOMEM;
	/* Random float data: NaNs, infinities and denormals among them. */
	for (b = w->host; b < w->host + FZ_HOST; b += 8)
		*(uint64_t *)b = rnd();
	err = hbm_map(w->fd, FZ_HBM, &w->hbm.va);
	if (!err)
		err = hpu_vm_map(w->fd, 0, 0, w->host, FZ_HOST, RW, &w->host_va);
	if (!err)
		err = hpu_uq_open(&w->q, w->fd);
	if (err)
		return err;
	w->q_open = true;
	w->hbm.size = FZ_HBM;
	w->scratch = (struct fz_region){ w->host, w->host_va, FZ_SCRATCH, 0 };
	w->index = (struct fz_region){ w->host + FZ_SCRATCH, w->host_va + FZ_SCRATCH, FZ_INDEX, 0 };
	w->flt = (struct fz_region){ w->host + FZ_SCRATCH + FZ_INDEX,
				     w->host_va + FZ_SCRATCH + FZ_INDEX, FZ_FLT, 0 };
	return 0;
}

static void *fz_worker_run(void *arg)
{
	struct fz_worker *w = arg;
	int err;

	rnd_state = rnd_mix(w->seed + 3 + w->id);
	err = fz_setup(w);
	if (err)
		fz_fail(w, -1, "setup:", err);
	while (!w->error[0] && time(NULL) < w->end)
		fz_batch(w);
	if (!w->error[0]) {
		err = fz_good_launch(w, false);
		if (!err)
			err = fz_good_launch(w, true);
		if (err)
			fz_fail(w, -1, "a good launch after the fuzz:", err);
	}
	if (w->q_open)
		hpu_uq_close(&w->q);
	if (w->fd >= 0)
		close(w->fd);
	if (w->host)
		munmap(w->host, FZ_HOST);
	return NULL;
}

/*
 * How long the bystander's NOP job may wait for others' work: a long job at
 * the head of its ring is set aside within the driver's preempt_ms (10 ms)
 * and the engine's other queues' slices, tens of ms in the TCG guest; a
 * job timeout (10 s) would show.
 */
#define FZ_BYSTANDER_MAX_S 2.0

/*
 * FZ_THREADS workers at once, each its own file and user queue, for
 * COMPUTE_SECONDS; then every worker's context runs a good launch, the
 * fixture's a good job, and the bystander is intact and was never held up
 * longer than FZ_BYSTANDER_MAX_S.
 */
TEST_F_TIMEOUT(fuzz, compute_work_from_threads, COMPUTE_SECONDS + 240)
{
	struct fz_worker *w[FZ_THREADS], sum = { 0 };
	pthread_t tid[FZ_THREADS];
	uint64_t seed = fuzz_start(_metadata, 3), check_va = 0;
	const char *trace = getenv("HPU_FUZZ_TRACE");
	struct hpu_pkt_nop nop = { HPU_PKT_HEADER(HPU_PKT_NOP, 0) };
	double held_up = 0;
	unsigned int i;
	int nop_err = 0;

	for (i = 0; i < FZ_THREADS; i++) {
		w[i] = calloc(1, sizeof(*w[i]));
		ASSERT_NE(NULL, w[i]);
		w[i]->id = i;
		w[i]->seed = seed;
		w[i]->end = time(NULL) + COMPUTE_SECONDS;
		w[i]->trace = trace && *trace && strcmp(trace, "0");
		w[i]->fd = -1;
		ASSERT_EQ(0, pthread_create(&tid[i], NULL, fz_worker_run, w[i]));
	}
	/* Meanwhile the bystander's NOP jobs: how long another context's work holds them up. */
	while (!nop_err && time(NULL) < w[0]->end) {
		double start = fz_now();

		nop_err = hpu_run(self->by, rnd() % 4, &nop, sizeof(nop));
		if (fz_now() - start > held_up)
			held_up = fz_now() - start;
		usleep(100000);
	}
	for (i = 0; i < FZ_THREADS; i++) {
		ASSERT_EQ(0, pthread_join(tid[i], NULL));
		EXPECT_STREQ("", w[i]->error);
		sum.batches += w[i]->batches;
		sum.launches += w[i]->launches;
		sum.gemms += w[i]->gemms;
		sum.calls += w[i]->calls;
		sum.packets_broken += w[i]->packets_broken;
		sum.jobs_run += w[i]->jobs_run;
		sum.jobs_ok += w[i]->jobs_ok;
		sum.refused += w[i]->refused;
		sum.good_jobs += w[i]->good_jobs;
		sum.good_ok += w[i]->good_ok;
		sum.slow += w[i]->slow;
		free(w[i]);
	}
	TH_LOG("%lu batches: %lu launches, %lu GEMMs, %lu CALLs, %lu packets broken", sum.batches,
	       sum.launches, sum.gemms, sum.calls, sum.packets_broken);
	TH_LOG("%lu jobs refused at submit, %lu ended (%lu completed); %lu well-formed ended, "
	       "%lu completed; %lu batches took %.0f s or more", sum.refused, sum.jobs_run,
	       sum.jobs_ok, sum.good_jobs, sum.good_ok, sum.slow, FZ_SLOW_S);
	TH_LOG("the bystander's NOP jobs took up to %.2f s", held_up);
	EXPECT_EQ(0, nop_err);
	EXPECT_GT(FZ_BYSTANDER_MAX_S, held_up);
	EXPECT_LT(200, sum.jobs_run);
	/* Well-formed work runs: only a broken job of the same batch may spoil its operands. */
	EXPECT_LE(sum.good_jobs * 9, sum.good_ok * 10);

	ASSERT_EQ(0, hpu_vm_map(self->fd, 0, 0, self->check, 2 * MiB, RW, &check_va));
	good_job(self, check_va);
	ASSERT_EQ(0, hpu_run(self->fd, 1, self->cb->buf, self->cb->size));
	check_after(_metadata, self);
}

TEST_HARNESS_MAIN
