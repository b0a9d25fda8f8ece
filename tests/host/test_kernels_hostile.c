/* SPDX-License-Identifier: MIT */
/*
 * Host test of tensor-engine launches a hostile user builds, run by the
 * device core's engine on a thread of its own, as QEMU runs it: outputs
 * overlapping inputs stay within the job's memory (their values are the
 * kernel's business, an index they change fails the launch), tensors past
 * HPU_KERNEL_MAX_ELEMENTS and
 * launches past HPU_KERNEL_MAX_WORK refused, the largest legal launches of
 * every kind of long item stopped within STOP_MS of a queue reset (the
 * figures printed), and a seeded fuzz of valid-looking launches of every
 * kernel (overlapping outputs, broadcast dims up to 2^64 - 1, negative
 * strides, indices at and past their bounds) in which a launch still
 * running after FUZZ_RUN_MS has its queue reset and must stop as soon.
 * Operands live in host pages mostly, which the engine stages in heap
 * buffers of their exact extent: a kernel reaching past one is what the
 * sanitizer build of this suite reports.  A launch that does not stop
 * ends the run (a wedged engine cannot be joined).  HPU_FUZZ_SEED picks
 * another fuzz; the seed is printed.  Prints TAP.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hdm_harness.h"
#include "hdm_hbm.h"
#include "hdm_kernel.h"

#define F32 HPU_DTYPE_F32
#define BF16 HPU_DTYPE_BF16
#define I64 HPU_DTYPE_I64
#define U8 HPU_DTYPE_U8

#define PARAM_OFF 0xd00000u /* a host page of the parameter block, at VA_HOST + PARAM_OFF */
#define VA_PARAM (VA_HOST + PARAM_OFF)
#define REFUSED_LOGS 2      /* why, then the failed job */

/* The most elements a tensor has. */
#define MAXN (HPU_KERNEL_MAX_ELEMENTS)

/* A queue reset stops any launch within this, sanitizer build and a loaded host included. */
#define STOP_MS 500.0
/* How long a fuzz launch may run before its queue is reset. */
#define FUZZ_RUN_MS 30.0
#define FUZZ_LAUNCHES 6000u

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ---- the engine on its thread ---- */

static pthread_t engine;

static void engine_start(struct hpu_test *t)
{
	setup(t);
	pt_map_host(t, ASID, PARAM_OFF, HPU_MMU_PAGE_SIZE);
	if (pthread_create(&engine, NULL, engine_thread, t->core)) {
		printf("Bail out! cannot start the engine's thread\n");
		exit(2);
	}
}

static void engine_stop(struct hpu_test *t)
{
	hdm_core_engine_stop(t->core);
	pthread_join(engine, NULL);
	/* Events and their log lines were counted as they came. */
	t->logs_seen = t->logs;
	hpu_wr(t, HPU_REG_IRQ_CAUSE, UINT32_MAX);
}

/* Queue 0's jobs ended, the engine let go of them. */
static bool queue_idle(struct hpu_test *t)
{
	return hpu_rd(t, REG_Q(0, CI)) == hpu_rd(t, REG_Q(0, PI)) && !hpu_rd(t, REG_Q(0, STATUS));
}

static bool wait_idle(struct hpu_test *t, double ms)
{
	const struct timespec tick = { .tv_nsec = 20000 };
	double end = now_ms() + ms;

	while (!queue_idle(t))
		if (now_ms() > end || nanosleep(&tick, NULL))
			return queue_idle(t);
	return true;
}

/* The engine is stuck in a launch: nothing can join it, so the run ends here. */
static void wedged(const char *what)
{
	printf("not ok - %s did not stop within %.0f ms of its queue's reset\n", what, STOP_MS);
	fflush(stdout);
	_exit(1);
}

/* Queue l on queue 0 as job tag; the engine's thread picks it up. */
static void submit_launch(struct hpu_test *t, const struct launch *l, uint64_t tag)
{
	uint32_t size = launch_size(l);
	struct hpu_cb cb = { .len = 0 };

	memcpy(t->mem + PARAM_OFF, l, size);
	cb_launch(&cb, VA_PARAM, size);
	submit_user(t, 0, &cb, tag);
}

/* Reset queue 0 under a running launch: how long the engine took to let go of it, in ms. */
static double reset_and_time(struct hpu_test *t, const char *what)
{
	double start = now_ms();

	hpu_wr(t, REG_Q(0, CTRL), HPU_Q_CTRL_RESET);
	if (!wait_idle(t, STOP_MS))
		wedged(what);
	return now_ms() - start;
}

/* Events since the last look, consumed; how many. */
static uint32_t take_events(struct hpu_test *t)
{
	uint32_t pi = hpu_rd(t, HPU_REG_EQ_PI), n = pi - hpu_rd(t, HPU_REG_EQ_CI);

	hpu_wr(t, HPU_REG_EQ_CI, pi);
	return n;
}

/* ---- tensors ---- */

/* Host memory of a VA of the test context's host areas or of its HBM buffer. */
static uint8_t *dev_ptr(struct hpu_test *t, uint64_t va, uint64_t len)
{
	if (va >= VA_HBM && va - VA_HBM + len <= BUF_SIZE)
		return hdm_hbm_span(t->core->hbm, HBM_BUF + (va - VA_HBM), len, true);
	return t->mem + (va - VA_HOST);
}

static void set_scalar(struct launch *l, unsigned int i, double v)
{
	memcpy(&l->p.scalars[i], &v, sizeof(v));
}

/* A launch refused with BAD_KERNEL in the engine's checks, nothing run: well within STOP_MS. */
static void expect_refused(struct hpu_test *t, const struct launch *l, const char *what, int line)
{
	double start = now_ms();

	submit_launch(t, l, 5);
	if (!wait_idle(t, STOP_MS))
		wedged(what);
	hpu_check(t, now_ms() - start < STOP_MS, what, line);
	expect_event(t, HPU_EVENT_BAD_KERNEL, 0, ASID, HPU_ENGINE_TPC, 5, 0, REFUSED_LOGS, line);
}

/* ---- refusals ---- */

#define HOST_A (VA_HOST + SRC_OFF)
#define HOST_B (VA_HOST + DST_OFF)

/* Launch l, which may run or fail, and wait for its end; an event it posts is consumed. */
static void run_any(struct hpu_test *t, const struct launch *l, const char *what)
{
	submit_launch(t, l, 5);
	if (!wait_idle(t, STOP_MS))
		wedged(what);
	take_events(t);
	t->logs_seen = t->logs;
}

/*
 * Outputs over another operand: the values are undefined, the memory
 * reached is the operands' own (the sanitizer build checks), an index
 * overwritten fails the launch; exactly in place computes as expected.
 */
static void case_overlap(struct hpu_test *t)
{
	const uint64_t n64[1] = { 64 }, nc[2] = { 8, 4 }, n8[1] = { 8 };
	struct launch l = launch_new(HPU_KERNEL_UNARY, 2);
	float *x = (float *)dev_ptr(t, HOST_A, 64 * 4);
	unsigned int i, bad = 0;

	engine_start(t);
	for (i = 0; i < 64; i++)
		x[i] = (float)i;
	/* A copy one element up: each part would read what another wrote. */
	l.p.args[0] = HPU_UNARY_COPY;
	l.t[0] = desc(HOST_A + 4, F32, 1, n64, 0);
	l.t[1] = desc(HOST_A, F32, 1, n64, 0);
	run_any(t, &l, "a copy onto its input shifted");
	/* The same bytes as another dtype are not the same view. */
	l.t[0] = desc(HOST_A, HPU_DTYPE_I32, 1, n64, 0);
	run_any(t, &l, "a copy onto its input as I32");
	/* A loss written over the targets it reads. */
	l = launch_new(HPU_KERNEL_NLL_LOSS, 3);
	l.p.args[1] = -100;
	l.t[0] = desc(HOST_B + 8, F32, 1, n8, 0);
	l.t[1] = desc(HOST_A, F32, 2, nc, 0);
	l.t[2] = desc(HOST_B, I64, 1, n8, 0);
	memset(dev_ptr(t, HOST_B, 64), 0, 64);
	run_any(t, &l, "a loss over its targets");
	/* Exactly in place: x = -x. */
	for (i = 0; i < 64; i++)
		x[i] = (float)i;
	l = launch_new(HPU_KERNEL_UNARY, 2);
	l.p.args[0] = HPU_UNARY_NEG;
	l.t[0] = l.t[1] = desc(HOST_A, F32, 1, n64, 0);
	submit_launch(t, &l, 6);
	HPU_CHECK(t, wait_idle(t, STOP_MS) && !take_events(t));
	for (i = 0; i < 64; i++)
		bad += x[i] != -(float)i;
	HPU_CHECK_EQ(t, bad, 0);
	engine_stop(t);
}

/*
 * A 2^40-element broadcast reduce reaches 4 bytes but would run 2^40
 * iterations in one item; past the element, work and item limits, refused.
 */
static void case_limits(struct hpu_test *t)
{
	const uint64_t huge[1] = { 1ull << 40 }, over[1] = { HPU_KERNEL_MAX_ELEMENTS + 1 };
	const uint64_t one[1] = { 1 }, two_dims[2] = { 1ull << 20, 1ull << 20 }, grad[1] = { MAXN };
	const uint64_t long_row[2] = { 1, HPU_KERNEL_MAX_ITEM_WORK + 1 };
	struct launch l = launch_new(HPU_KERNEL_REDUCE, 2);
	unsigned int i;

	engine_start(t);
	l.p.args[1] = 1;
	l.t[0] = desc(HOST_A, F32, 1, one, 0);
	l.t[1] = desc(HOST_B, F32, 1, huge, 1);
	expect_refused(t, &l, "a reduce over 2^40 broadcast elements", __LINE__);
	l.t[1] = desc(HOST_B, F32, 1, over, 1);
	expect_refused(t, &l, "a reduce over 2^32 + 1 broadcast elements", __LINE__);
	/* Dims each below the limit, their product past it. */
	l.t[0] = desc(HOST_A, F32, 2, (const uint64_t[]){ 1, 1 }, 0);
	l.t[1] = desc(HOST_B, F32, 2, two_dims, 3);
	l.p.args[1] = 3;
	expect_refused(t, &l, "a reduce over 2^20 x 2^20 broadcast elements", __LINE__);
	/* 15 grads of 2^32 elements, each read and scaled: 2^37 elements visited. */
	l = launch_new(HPU_KERNEL_CLIP_GRAD_NORM, 16);
	set_scalar(&l, 0, 1);
	set_scalar(&l, 1, 2);
	l.t[0] = desc(HOST_A, F32, 0, NULL, 0);
	for (i = 1; i < 16; i++)
		l.t[i] = desc(HOST_B + 64 * i, F32, 1, grad, 1);
	expect_refused(t, &l, "a clip_grad_norm of 2^37 work", __LINE__);
	/* Rows one element past an item's bound, each an item no yield would cut. */
	l = launch_new(HPU_KERNEL_SOFTMAX, 2);
	l.p.args[0] = 1;
	l.t[0] = desc(HOST_A, F32, 2, long_row, 3);
	l.t[1] = desc(HOST_B, F32, 2, long_row, 3);
	expect_refused(t, &l, "a softmax row past HPU_KERNEL_MAX_ITEM_WORK", __LINE__);
	l = launch_new(HPU_KERNEL_CROSS_ENTROPY_BWD, 4);
	l.p.args[0] = HPU_REDUCTION_SUM;
	l.t[0] = desc(HOST_A, F32, 2, long_row, 3);
	l.t[1] = desc(HOST_B, F32, 0, NULL, 0);
	l.t[2] = desc(HOST_B, F32, 2, long_row, 3);
	l.t[3] = desc(HOST_B + 64, I64, 1, one, 0);
	expect_refused(t, &l, "a cross entropy row past HPU_KERNEL_MAX_ITEM_WORK", __LINE__);
	engine_stop(t);
}

/* ---- cancellation ---- */

/* The largest legal launch of one kind of item, its operands broadcast over a few bytes. */
struct maximal {
	const char *name;
	void (*build)(struct launch *l);
};

/*
 * 2^32 elements or more, in items of at most HPU_KERNEL_MAX_ITEM_WORK: a
 * reduce of one output, softmax and layer norm rows, a clip of one grad,
 * 2^32 targets, a layer norm backward's long columns.
 */
static void max_reduce(struct launch *l)
{
	*l = launch_new(HPU_KERNEL_REDUCE, 2);
	l->p.args[1] = 1;
	l->t[0] = desc(HOST_A, F32, 1, (const uint64_t[]){ 1 }, 0);
	l->t[1] = desc(HOST_B, F32, 1, (const uint64_t[]){ MAXN }, 1);
}

static void max_softmax(struct launch *l)
{
	const uint64_t rows[2] = { MAXN / HPU_KERNEL_MAX_ITEM_WORK, HPU_KERNEL_MAX_ITEM_WORK };

	*l = launch_new(HPU_KERNEL_SOFTMAX, 2);
	l->p.args[0] = 1;
	l->t[0] = desc(HOST_A, F32, 2, rows, 3);
	l->t[1] = desc(HOST_B, F32, 2, rows, 3);
}

static void max_layer_norm(struct launch *l)
{
	const uint64_t in[2] = { 1ull << 14, 1ull << 18 }, none[1] = { 0 }, lead[1] = { 1ull << 14 };

	*l = launch_new(HPU_KERNEL_LAYER_NORM, 6);
	l->p.args[0] = 1;
	l->t[0] = desc(HOST_A, F32, 2, in, 3);
	l->t[1] = desc(HOST_A + 64, F32, 1, lead, 1);
	l->t[2] = desc(HOST_A + 128, F32, 1, lead, 1);
	l->t[3] = desc(HOST_B, F32, 2, in, 3);
	l->t[4] = l->t[5] = desc(HOST_B + 64, F32, 1, none, 0);
}

/* Weight and bias gradients over 2^22 rows of 2^10: columns in chunks of rows. */
static void max_layer_norm_bwd(struct launch *l)
{
	const uint64_t in[2] = { 1ull << 22, 1ull << 10 }, lead[1] = { 1ull << 22 };
	const uint64_t cols[1] = { 1ull << 10 };

	*l = launch_new(HPU_KERNEL_LAYER_NORM_BWD, 8);
	l->p.args[0] = 1;
	l->p.args[1] = 3;
	l->t[0] = desc(HOST_A, F32, 2, in, 3);
	l->t[1] = desc(HOST_A + 64, F32, 1, cols, 1);
	l->t[2] = desc(HOST_A + 128, F32, 1, cols, 1);
	l->t[3] = l->t[4] = desc(HOST_B, F32, 2, in, 3);
	l->t[5] = l->t[6] = desc(HOST_B + 64, F32, 1, lead, 1);
	l->t[7] = desc(HOST_B + 128, F32, 1, cols, 1);
}

/* NLL over 2^32 targets, all ignored: phase 0 checks them, phase 1 sums nothing. */
static void max_nll_targets(struct launch *l)
{
	const uint64_t logp[2] = { MAXN, 1 }, n[1] = { MAXN };

	*l = launch_new(HPU_KERNEL_NLL_LOSS, 3);
	l->p.args[0] = HPU_REDUCTION_MEAN;
	l->p.args[1] = 0;
	l->t[0] = desc(HOST_A, F32, 0, NULL, 0);
	l->t[1] = desc(HOST_B, F32, 2, logp, 3);
	l->t[2] = desc(HOST_B + 64, I64, 1, n, 1);
}

static void max_clip(struct launch *l)
{
	*l = launch_new(HPU_KERNEL_CLIP_GRAD_NORM, 2);
	set_scalar(l, 0, 1);
	set_scalar(l, 1, 2);
	l->t[0] = desc(HOST_A, F32, 0, NULL, 0);
	l->t[1] = desc(HOST_B, F32, 1, (const uint64_t[]){ MAXN / 2 }, 1);
}

/* A reduced cross entropy: 2^16 rows of 2^16 classes. */
static void max_cross_entropy(struct launch *l)
{
	const uint64_t logits[2] = { 1ull << 16, 1ull << 16 }, n[1] = { 1ull << 16 };

	*l = launch_new(HPU_KERNEL_CROSS_ENTROPY, 3);
	l->p.args[0] = HPU_REDUCTION_SUM;
	l->p.args[1] = -100;
	l->t[0] = desc(HOST_A, F32, 0, NULL, 0);
	l->t[1] = desc(HOST_B, F32, 2, logits, 3);
	l->t[2] = desc(HOST_B + 64, I64, 1, n, 1);
}

/* 15 blocks of 512 rows by 2^12 columns: 15 * 2^12 items, each scanning 2^20 - 512 indices. */
static void max_embedding_bwd(struct launch *l)
{
	const uint64_t ids[1] = { HPU_KERNEL_MAX_ITEM_WORK - 512 };
	const uint64_t rows[2] = { 15 * 512, 1ull << 12 }, grad[2] = { ids[0], 1ull << 12 };

	*l = launch_new(HPU_KERNEL_EMBEDDING_BWD, 3);
	l->p.args[0] = -1;
	l->t[0] = desc(HOST_A, F32, 2, rows, 3);
	l->t[1] = desc(HOST_B, F32, 2, grad, 3);
	l->t[2] = desc(HOST_B + 64, I64, 1, ids, 1);
}

/* 2^32 elementwise items, in many parts. */
static void max_unary(struct launch *l)
{
	*l = launch_new(HPU_KERNEL_UNARY, 2);
	l->p.args[0] = HPU_UNARY_EXP;
	l->t[0] = desc(HOST_A, F32, 1, (const uint64_t[]){ MAXN }, 1);
	l->t[1] = desc(HOST_B, F32, 1, (const uint64_t[]){ MAXN }, 1);
}

static const struct maximal maximals[] = {
	{ "reduce", max_reduce },
	{ "softmax", max_softmax },
	{ "layer_norm", max_layer_norm },
	{ "layer_norm_bwd", max_layer_norm_bwd },
	{ "nll_loss targets", max_nll_targets },
	{ "clip_grad_norm", max_clip },
	{ "cross_entropy", max_cross_entropy },
	{ "embedding_bwd", max_embedding_bwd },
	{ "unary", max_unary },
};

/* Each runs for seconds; reset 20 ms in, it must stop within STOP_MS. */
static void case_cancel(struct hpu_test *t)
{
	struct launch l;
	unsigned int i;

	engine_start(t);
	memset(dev_ptr(t, HOST_B, 4096), 0, 4096);
	for (i = 0; i < HPU_ARRAY_SIZE(maximals); i++) {
		double ms;

		maximals[i].build(&l);
		submit_launch(t, &l, 7);
		/* Still running 20 ms in, or the launch was not a long one. */
		hpu_check(t, !wait_idle(t, 20), maximals[i].name, __LINE__);
		ms = reset_and_time(t, maximals[i].name);
		printf("# a maximal %s launch stopped %.2f ms after its queue's reset\n",
		       maximals[i].name, ms);
		hpu_check(t, take_events(t) == 1, "one ABORTED event", __LINE__);
	}
	engine_stop(t);
}

/* ---- fuzz ---- */

static uint64_t fz_state;

static uint64_t rnd(void)
{
	return xorshift64s(&fz_state);
}

/*
 * Valid launches of every kernel: per operand its dtype (f F32, u U8, l
 * I64, * the launch's float dtype) and dims (N, C, D, V: sizes drawn per
 * launch; 1; R: an RNG state's two words; none: a scalar).  Index operands
 * ('l' but the RNG and step) hold indices below the size of idx.
 */
static const struct fz_template {
	uint32_t kernel;
	int64_t a0, a1;
	double s[5];
	char idx;
	const char *operands[8];
} fz_templates[] = {
	{ HPU_KERNEL_UNARY, HPU_UNARY_GELU, 0, { 0 }, 0, { "*ND", "*ND" } },
	{ HPU_KERNEL_BINARY, HPU_BINARY_DIV, 0, { 1 }, 0, { "*ND", "*ND", "*ND" } },
	{ HPU_KERNEL_WHERE, 0, 0, { 0 }, 0, { "*ND", "uND", "*ND", "*ND" } },
	{ HPU_KERNEL_FILL, 0, 0, { 2 }, 0, { "*ND" } },
	{ HPU_KERNEL_REDUCE, HPU_REDUCE_SUM, 1, { 0 }, 0, { "*1D", "*ND" } },
	{ HPU_KERNEL_REDUCE, HPU_REDUCE_ARGMAX, 2, { 0 }, 0, { "lN1", "*ND" } },
	{ HPU_KERNEL_SOFTMAX, 1, 1, { 0 }, 0, { "*ND", "*ND" } },
	{ HPU_KERNEL_SOFTMAX_BWD, 1, 0, { 0 }, 0, { "*ND", "*ND", "*ND" } },
	{ HPU_KERNEL_NLL_LOSS, 0, -100, { 0 }, 'C', { "fN", "*NC", "lN" } },
	{ HPU_KERNEL_NLL_LOSS, 1, 1, { 0 }, 'C', { "f", "*NC", "lN" } },
	{ HPU_KERNEL_NLL_LOSS_BWD, 1, -100, { 0 }, 'C', { "*NC", "f", "lN" } },
	{ HPU_KERNEL_CROSS_ENTROPY, 2, -100, { 0 }, 'C', { "f", "*NC", "lN" } },
	{ HPU_KERNEL_CROSS_ENTROPY_BWD, 0, 2, { 0 }, 'C', { "*NC", "fN", "*NC", "lN" } },
	{ HPU_KERNEL_DROPOUT, 0, 0, { 0.5 }, 0, { "*ND", "uND", "*ND", "lR" } },
	{ HPU_KERNEL_DROPOUT_BWD, 0, 0, { 0.5 }, 0, { "*ND", "*ND", "uND" } },
	{ HPU_KERNEL_RELU_BWD, 0, 0, { 0 }, 0, { "*ND", "*ND", "*ND" } },
	{ HPU_KERNEL_GELU_BWD, 1, 0, { 0 }, 0, { "*ND", "*ND", "*ND" } },
	{ HPU_KERNEL_LAYER_NORM, 1, 3, { 1e-5 }, 0, { "*ND", "fN", "fN", "*ND", "*D", "*D" } },
	{ HPU_KERNEL_LAYER_NORM_BWD, 1, 3, { 0 }, 0,
	  { "*ND", "*D", "*D", "*ND", "*ND", "fN", "fN", "*D" } },
	{ HPU_KERNEL_EMBEDDING, -1, 0, { 0 }, 'V', { "*ND", "*VD", "lN" } },
	{ HPU_KERNEL_EMBEDDING_BWD, 0, 0, { 0 }, 'V', { "*VD", "*ND", "lN" } },
	{ HPU_KERNEL_SGD, 0, 0, { 0.1, 0.9 }, 0, { "*N", "*N", "*N" } },
	{ HPU_KERNEL_ADADELTA, 0, 0, { 1, 0.9, 1e-6 }, 0, { "*N", "*N", "*N", "*N" } },
	{ HPU_KERNEL_ADAMW, 0, 0, { 1e-3, 0.9, 0.999, 1e-8, 0.01 }, 0,
	  { "*N", "*N", "*N", "*N", "f" } },
	{ HPU_KERNEL_CLIP_GRAD_NORM, 0, 0, { 1, 2 }, 0, { "f", "*N", "*D", "*ND" } },
	{ HPU_KERNEL_INDEX_SELECT, 0, 0, { 0 }, 'V', { "*ND", "*VD", "lN" } },
	{ HPU_KERNEL_GATHER, 1, 0, { 0 }, 'V', { "*NC", "*NV", "lNC" } },
	{ HPU_KERNEL_SCATTER_ADD, 0, 0, { 0 }, 'V', { "*VD", "lND", "*ND" } },
	{ HPU_KERNEL_SCATTER, 1, 0, { 0 }, 'V', { "*NV", "lNC", "*NC" } },
	{ HPU_KERNEL_TOPK, 1, 1, { 0 }, 0, { "*N1", "lN1", "*ND" } },
	{ HPU_KERNEL_RANDOM, 1, 0, { 0, 1 }, 0, { "*ND", "lR" } },
	{ HPU_KERNEL_GROUP_NORM, 1, 3, { 1e-5 }, 0, { "*ND", "fN1", "fN1", "*ND", "*D", "*D" } },
	{ HPU_KERNEL_GROUP_NORM_BWD, 1, 15, { 0 }, 0,
	  { "*ND", "*D", "*D", "*ND", "*ND", "fN1", "fN1", "*D" } },
	{ HPU_KERNEL_FOREACH_SGD, 1, 0, { 0.9, 0, 0.01 }, 0,
	  { "f", "l", "*N", "*N", "*N", "*D", "*D", "*D" } },
	{ HPU_KERNEL_FOREACH_ADAMW, 1, 0, { 0.9, 0.999, 1e-8, 0.01 }, 0,
	  { "f", "l", "*N", "*N", "*N", "*N" } },
	{ HPU_KERNEL_FOREACH_ADADELTA, 1, 0, { 0.9, 1e-6, 0 }, 0,
	  { "f", "f", "*ND", "*ND", "*ND", "*ND" } },
	{ HPU_KERNEL_FOREACH_LAMB, 7, 0, { 0.9, 0.999, 1e-6, 0.01 }, 0,
	  { "f", "l", "*ND", "*ND", "*ND", "*ND" } },
	{ HPU_KERNEL_FOREACH_NORM, 1, 0, { 2 }, 0, { "f", "f", "*N", "*D", "*ND" } },
	{ HPU_KERNEL_FOREACH_CLIP, 0, 0, { 1 }, 0, { "f", "*N", "*ND" } },
};

/* Sizes a broadcast dim may take: around the limit, far past it, the most a u64 holds. */
static const uint64_t fz_huge[] = {
	1ull << 31, 1ull << 32, (1ull << 32) + 1, 1ull << 33, 1ull << 40, 1ull << 62,
	1ull << 63, UINT64_MAX,
};

/* Operands go to host pages (staged, so a reach past one is a heap overflow) or to HBM. */
static const uint64_t fz_areas[] = { HOST_A, HOST_B, VA_HBM };

/* An index at or past a bound n, or a valid one. */
static int64_t fz_index(uint64_t n)
{
	switch (rnd() % 16) {
	case 0: return (int64_t)n;
	case 1: return -1;
	case 2: return INT64_MAX;
	case 3: return INT64_MIN;
	case 4: return -100;
	case 5: return (int64_t)(n - 1);
	default: return n ? (int64_t)(rnd() % n) : 0;
	}
}

/* Element bytes of every operand: random floats or bytes, indices below their bound. */
static void fz_fill(struct hpu_test *t, const struct hpu_tensor_desc *d, uint64_t bytes,
		    int64_t bound)
{
	uint8_t *p = dev_ptr(t, d->addr, bytes);
	uint64_t i;

	for (i = 0; i + 8 <= bytes; i += 8) {
		uint64_t v = d->dtype == I64 ? (uint64_t)fz_index((uint64_t)bound) :
			     d->dtype == U8 ? rnd() & 0x0101010101010101ull : rnd();
		float f[2] = { (float)((int)(v >> 58) - 32) / 8, (float)((int)(v >> 52 & 63) - 32) / 8 };

		memcpy(p + i, d->dtype == F32 ? (void *)f : (void *)&v, 8);
	}
}

/*
 * One thing of the launch made hostile, or nothing: an output laid over
 * another operand (or exactly onto it), a dim reversed, a dim broadcast to
 * a huge size, an arg changed.
 */
static void fz_mutate(struct launch *l)
{
	uint32_t n = l->p.num_tensors, i = (uint32_t)(rnd() % n), j = (uint32_t)(rnd() % n);
	struct hpu_tensor_desc *d = &l->t[i];
	uint32_t k = d->ndim ? (uint32_t)(rnd() % d->ndim) : 0;

	switch (rnd() % 6) {
	case 0: /* the output over another operand, shifted by -1, 0 or 1 elements */
		l->t[0].addr = l->t[j].addr + (rnd() % 3 - 1) * hdm_dtype_size(l->t[0].dtype);
		break;
	case 1: /* exactly another operand's view */
		l->t[i] = l->t[j];
		break;
	case 2: /* reversed: from the last element back */
		if (d->ndim && d->shape[k]) {
			d->addr += (d->shape[k] - 1) * (uint64_t)d->strides[k] * hdm_dtype_size(d->dtype);
			d->strides[k] = -d->strides[k];
		}
		break;
	case 3: /* one dim broadcast to a huge size */
		if (d->ndim) {
			d->shape[k] = fz_huge[rnd() % HPU_ARRAY_SIZE(fz_huge)];
			d->strides[k] = 0;
		}
		break;
	case 4:
		l->p.args[rnd() % 2] = (int64_t)(rnd() % 8) - 2;
		break;
	default:
		break;
	}
}

/* A template's launch, its operands filled, one size perhaps huge (broadcast), then mutated. */
static void fz_launch(struct hpu_test *t, struct launch *l)
{
	const struct fz_template *f = &fz_templates[rnd() % HPU_ARRAY_SIZE(fz_templates)];
	uint64_t sizes[26] = { 0 }, shape[HPU_TENSOR_MAX_DIMS], next[3] = { 0 };
	uint32_t dtype = rnd() % 4 ? F32 : BF16, n, i;
	char huge = 0;

	sizes['N' - 'A'] = rnd() % 6;
	sizes['D' - 'A'] = rnd() % 6;
	sizes['C' - 'A'] = 1 + rnd() % 5;
	sizes['V' - 'A'] = 1 + rnd() % 5;
	sizes['R' - 'A'] = 2;
	if (!(rnd() % 4)) {
		huge = "NDCV"[rnd() % 4];
		sizes[huge - 'A'] = fz_huge[rnd() % HPU_ARRAY_SIZE(fz_huge)];
	}
	for (n = 0; n < HPU_ARRAY_SIZE(f->operands) && f->operands[n]; n++)
		;
	*l = launch_new(f->kernel, n);
	l->p.args[0] = f->a0;
	l->p.args[1] = f->a1;
	for (i = 0; i < HPU_ARRAY_SIZE(f->s); i++)
		set_scalar(l, i, f->s[i]);
	for (i = 0; i < n; i++) {
		const char *op = f->operands[i];
		uint32_t dt = *op == 'f' ? F32 : *op == 'u' ? U8 : *op == 'l' ? I64 : dtype;
		uint32_t nd = (uint32_t)strlen(op) - 1, bcast = 0, k, a = (uint32_t)(rnd() % 3);
		uint64_t bytes = hdm_dtype_size(dt);

		for (k = 0; k < nd; k++) {
			shape[k] = op[k + 1] == '1' ? 1 : sizes[op[k + 1] - 'A'];
			if (op[k + 1] == huge)
				bcast |= 1u << k;
			else
				bytes *= shape[k];
		}
		/* Room for 8-byte fills, and a gap after every operand. */
		bytes = (bytes + 15) & ~7ull;
		l->t[i] = desc(fz_areas[a] + next[a], dt, nd, shape, bcast);
		fz_fill(t, &l->t[i], bytes, f->idx && *op == 'l' ? (int64_t)sizes[f->idx - 'A'] : 2);
		next[a] += bytes + 8;
	}
	if (rnd() % 4)
		fz_mutate(l);
}

static void case_fuzz(struct hpu_test *t)
{
	const char *seed_env = getenv("HPU_FUZZ_SEED");
	uint64_t seed = seed_env ? strtoull(seed_env, NULL, 0) : 0x5be0cd19137e2179ull;
	unsigned int i, done = 0, failed = 0, reset = 0, slowest_kernel = 0;
	double start = now_ms(), slowest = 0;
	char what[64];

	printf("# fuzz seed 0x%llx (HPU_FUZZ_SEED)\n", (unsigned long long)seed);
	fz_state = seed | 1;
	engine_start(t);
	for (i = 0; i < FUZZ_LAUNCHES && !t->failed; i++) {
		struct launch l;

		fz_launch(t, &l);
		submit_launch(t, &l, i);
		if (!wait_idle(t, FUZZ_RUN_MS)) {
			double ms;

			snprintf(what, sizeof(what), "fuzz launch %u (kernel %u)", i, l.p.kernel);
			ms = reset_and_time(t, what);
			if (ms > slowest) {
				slowest = ms;
				slowest_kernel = l.p.kernel;
			}
			reset++;
		}
		if (take_events(t))
			failed++;
		else
			done++;
		HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_EQ_STATUS), 0);
	}
	engine_stop(t);
	printf("# fuzz: %u launches in %.1f s: %u done, %u failed, %u reset (slowest stop %.2f ms, "
	       "kernel %u)\n", i, (now_ms() - start) / 1e3, done, failed, reset, slowest,
	       slowest_kernel);
	/* Both ways, so that kernels, not only the checks, met what the fuzz makes. */
	HPU_CHECK(t, done > FUZZ_LAUNCHES / 10 && failed > FUZZ_LAUNCHES / 10);
}

static const struct hpu_test_case hpu_tests[] = {
	{ "outputs over another operand stay in the job's memory; in place computes", case_overlap },
	{ "refused: tensors past the element limit, launches past the work limit", case_limits },
	{ "cancel: the largest legal launches stop soon after a queue reset", case_cancel },
	{ "fuzz: hostile launches of every kernel end, or stop when reset", case_fuzz },
};

int main(void)
{
	return hpu_run_suite(hpu_tests, HPU_ARRAY_SIZE(hpu_tests));
}
