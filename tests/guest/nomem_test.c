// SPDX-License-Identifier: MIT
/*
 * The runtime's error paths when the host runs out of memory: every
 * malloc, calloc and realloc libhpu makes on the calling thread inside a
 * scenario (an eager op and a read, lazy MLP steps, a captured and replayed
 * step, module cacher calls, a graphed callable, a CPU fallback, a device
 * opened and closed, pageable copies, a pad, lazy steps loading their
 * recipe from a recipe directory) is made to fail in turn, one per attempt,
 * on a device opened for the attempt, so that compilation (or the load)
 * and first uploads are on the path every time.  Each attempt must fail
 * with -ENOMEM and a message, or succeed with the results of a run that
 * never failed; either way the device must compute correctly afterwards.
 * An error path that leaks a lock hangs the next call, one that frees
 * twice or too early crashes (or is reported by the sanitizer pass).  The
 * device running out of memory is tested too: the main paths fail with
 * -ENOMEM and compute once it is given back.  And a steady training loop
 * in each mode must not grow the host allocations live or the device
 * memory allocated.
 *
 * The failures are injected by this program's own malloc, calloc and
 * realloc, which the library's calls bind to; they fail only calls made
 * from libhpu's code (libdrm crashes on its own failing allocations), on
 * the thread and during the attempt that armed them.
 */
#define _GNU_SOURCE /* RTLD_NEXT */
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hpu/hpu.h>
#include <hpu/hpu_graph.h>
#include <hpu/hpu_tensor.h>

#include "kselftest_harness.h"

#include "hpu_mlp.h"

/* ---- the allocator that fails on request ---- */

static void *(*next_malloc)(size_t);
static void *(*next_calloc)(size_t, size_t);
static void *(*next_realloc)(void *, size_t);
static void (*next_free)(void *);

/* dlsym() may allocate before the allocator it looks up is known: from here. */
static _Alignas(16) char boot[4096];
static size_t boot_used;
static __thread bool resolving;

/* Allocations live in the process, all threads: the steady-state test's measure. */
static atomic_long live;

/* Allocations left on this thread before the one that fails (0: none fails); whether it did. */
static __thread long countdown;
static __thread bool injected;

static void *boot_alloc(size_t n)
{
	void *p;

	n = (n + 15) & ~(size_t)15;
	if (boot_used + n > sizeof(boot))
		abort();
	p = boot + boot_used;
	boot_used += n;
	return memset(p, 0, n);
}

static bool resolve(void)
{
	if (next_free)
		return true;
	if (resolving)
		return false;
	resolving = true;
	next_malloc = dlsym(RTLD_NEXT, "malloc");
	next_calloc = dlsym(RTLD_NEXT, "calloc");
	next_realloc = dlsym(RTLD_NEXT, "realloc");
	next_free = dlsym(RTLD_NEXT, "free");
	resolving = false;
	return true;
}

/* Where libhpu is loaded: only its own allocations fail (libdrm does not survive its own). */
static void *libhpu_base;

static bool from_libhpu(const void *caller)
{
	static __thread bool checking; /* dladdr() allocating would come back here */
	Dl_info info;
	bool ours;

	if (checking)
		return false;
	checking = true;
	ours = dladdr(caller, &info) && info.dli_fbase == libhpu_base;
	checking = false;
	return ours;
}

/* Whether this allocation, made from caller, is the armed one. */
static bool fail_now(const void *caller)
{
	if (!countdown || !from_libhpu(caller) || --countdown)
		return false;
	injected = true;
	errno = ENOMEM;
	return true;
}

/* Counts q, a new allocation (NULL: none). */
static void *counted(void *q)
{
	if (q)
		atomic_fetch_add(&live, 1);
	return q;
}

void *malloc(size_t n)
{
	if (!resolve())
		return boot_alloc(n);
	return fail_now(__builtin_return_address(0)) ? NULL : counted(next_malloc(n));
}

void *calloc(size_t count, size_t n)
{
	if (!resolve())
		return boot_alloc(count * n);
	return fail_now(__builtin_return_address(0)) ? NULL : counted(next_calloc(count, n));
}

void *realloc(void *p, size_t n)
{
	void *q;

	resolve();
	if (fail_now(__builtin_return_address(0)))
		return NULL;
	q = next_realloc(p, n);
	/* A new block from NULL; a block freed by a size of 0. */
	if (!p)
		return counted(q);
	if (!q && !n)
		atomic_fetch_sub(&live, 1);
	return q;
}

void free(void *p)
{
	if (!p || ((char *)p >= boot && (char *)p < boot + sizeof(boot)))
		return;
	resolve();
	atomic_fetch_sub(&live, 1);
	next_free(p);
}

static void arm(long nth)
{
	Dl_info info;

	if (!libhpu_base && dladdr(dlsym(RTLD_DEFAULT, "hpu_version"), &info))
		libhpu_base = info.dli_fbase;
	injected = false;
	countdown = nth;
}

/* Disarms; whether the armed allocation failed. */
static bool disarm(void)
{
	countdown = 0;
	return injected;
}

/* ---- scenarios ---- */

/*
 * A scenario runs on a device of its own with the allocator armed around
 * the calls under test only; it returns what they returned and leaves
 * what it computed for check(), which runs disarmed.
 */
struct scenario {
	const char *name;
	/* Set up (disarmed), then run the calls under test between arm(nth) and disarm(). */
	int (*run)(struct hpu_device *dev, struct hpu_stream *s, long nth, void **state);
	/* Frees the state; with compare, 0 if it holds what a run that never failed computes. */
	int (*check)(struct hpu_stream *s, void *state, bool compare);
};

/* An eager fill, an add and a read back of 1000 floats. */
static int eager_run(struct hpu_device *dev, struct hpu_stream *s, long nth, void **state)
{
	struct hpu_tensor *t = NULL;
	float *got = calloc(1000, sizeof(float));
	int ret = got ? hpu_tensor_empty(dev, HPU_DT_F32, 1, (int64_t[]){ 1000 }, &t) : -ENOMEM;

	arm(nth);
	if (!ret)
		ret = hpu_op_fill(s, t, 1.5);
	if (!ret)
		ret = hpu_op_add(s, t, t, t, 1);
	if (!ret)
		ret = hpu_tensor_copy_to_host(s, t, got, 1000 * sizeof(float));
	disarm();
	hpu_tensor_destroy(t);
	*state = got;
	return ret;
}

/* A check's end: frees the state; -1 if it was to be compared and ok is false. */
static int verdict(void *state, bool ok, bool compare)
{
	free(state);
	return ok || !compare ? 0 : -1;
}

static int eager_check(struct hpu_stream *s, void *state, bool compare)
{
	const float *got = state;

	(void)s;
	return verdict(state, got && got[0] == 3 && got[999] == 3, compare);
}

/* The eager scenario with the device and stream opened inside the attempt, and closed. */
static int open_run(struct hpu_device *dev, struct hpu_stream *s, long nth, void **state)
{
	struct hpu_device *own = NULL;
	struct hpu_stream *own_s = NULL;
	struct hpu_tensor *t = NULL;
	float *got = calloc(1000, sizeof(float));
	int ret = got ? 0 : -ENOMEM;

	(void)dev;
	(void)s;
	arm(nth);
	if (!ret)
		ret = hpu_device_open(0, &own);
	if (!ret)
		ret = hpu_stream_create(own, &own_s);
	if (!ret)
		ret = hpu_tensor_empty(own, HPU_DT_F32, 1, (int64_t[]){ 1000 }, &t);
	if (!ret)
		ret = hpu_op_fill(own_s, t, 3);
	if (!ret)
		ret = hpu_tensor_copy_to_host(own_s, t, got, 1000 * sizeof(float));
	hpu_tensor_destroy(t);
	hpu_stream_destroy(own_s);
	hpu_device_close(own);
	disarm();
	*state = got;
	return ret;
}

/* 4 MiB from pageable host memory and back, through the pinned staging buffers. */
enum { COPY_FLOATS = 1 << 20 };

static int copies_run(struct hpu_device *dev, struct hpu_stream *s, long nth, void **state)
{
	float *in = malloc(COPY_FLOATS * sizeof(float)), *got = calloc(COPY_FLOATS, sizeof(float));
	struct hpu_tensor *t = NULL;
	int ret = in && got ? 0 : -ENOMEM, i;

	for (i = 0; in && i < COPY_FLOATS; i++)
		in[i] = (float)i;
	if (!ret)
		ret = hpu_tensor_empty(dev, HPU_DT_F32, 1, (int64_t[]){ COPY_FLOATS }, &t);
	arm(nth);
	if (!ret)
		ret = hpu_tensor_copy_from_host(s, t, in, COPY_FLOATS * sizeof(float));
	if (!ret)
		ret = hpu_tensor_copy_to_host(s, t, got, COPY_FLOATS * sizeof(float));
	disarm();
	hpu_tensor_destroy(t);
	free(in);
	*state = got;
	return ret;
}

static int copies_check(struct hpu_stream *s, void *state, bool compare)
{
	const float *got = state;
	bool ok = got != NULL;
	int i;

	(void)s;
	for (i = 0; ok && i < COPY_FLOATS; i++)
		ok = got[i] == (float)i;
	return verdict(state, ok, compare);
}

/* A [5, 8] tensor of 2s padded to [8, 8] with -1 (hpu_tensor_pad), read back. */
static int pad_run(struct hpu_device *dev, struct hpu_stream *s, long nth, void **state)
{
	struct hpu_tensor *t = NULL, *padded = NULL;
	float *got = calloc(64, sizeof(float));
	int ret = got ? hpu_tensor_empty(dev, HPU_DT_F32, 2, (int64_t[]){ 5, 8 }, &t) : -ENOMEM;

	if (!ret)
		ret = hpu_op_fill(s, t, 2);
	arm(nth);
	if (!ret)
		ret = hpu_tensor_pad(s, t, 0, 8, -1, &padded);
	if (!ret)
		ret = hpu_tensor_copy_to_host(s, padded, got, 64 * sizeof(float));
	disarm();
	hpu_tensor_destroy(padded);
	hpu_tensor_destroy(t);
	*state = got;
	return ret;
}

static int pad_check(struct hpu_stream *s, void *state, bool compare)
{
	const float *got = state;

	(void)s;
	return verdict(state, got && got[0] == 2 && got[39] == 2 && got[40] == -1 && got[63] == -1,
		       compare);
}

/* A fill, then a cumsum the device has no kernel for: the CPU fallback's host buffers. */
static int fallback_run(struct hpu_device *dev, struct hpu_stream *s, long nth, void **state)
{
	struct hpu_tensor *a = NULL, *c = NULL;
	float *got = calloc(1000, sizeof(float));
	int ret = got ? hpu_tensor_empty(dev, HPU_DT_F32, 1, (int64_t[]){ 1000 }, &a) : -ENOMEM;

	if (!ret)
		ret = hpu_tensor_empty(dev, HPU_DT_F32, 1, (int64_t[]){ 1000 }, &c);
	arm(nth);
	if (!ret)
		ret = hpu_op_fill(s, a, 0.5);
	if (!ret)
		ret = hpu_op_cumsum(s, c, a, 0);
	if (!ret)
		ret = hpu_tensor_copy_to_host(s, c, got, 1000 * sizeof(float));
	disarm();
	hpu_tensor_destroy(a);
	hpu_tensor_destroy(c);
	*state = got;
	return ret;
}

static int fallback_check(struct hpu_stream *s, void *state, bool compare)
{
	const float *got = state;

	(void)s;
	return verdict(state, got && got[0] == 0.5 && got[999] == 500, compare);
}

/* The MLP's model and where its steps ran, for the lazy and graph scenarios. */
struct mlp_state {
	struct hpu_device *dev;
	struct mlp m;
	struct hpu_graph *g;
	struct hpu_module_cacher *cacher;
};

static struct mlp_state *mlp_state_new(struct hpu_device *dev, struct hpu_stream *s)
{
	struct mlp_state *st = calloc(1, sizeof(*st));

	st->dev = dev;
	lcg = 1;
	mlp_init(dev, s, &st->m);
	load_batch(s, &st->m, 0);
	return st;
}

/* The reference: the parameters after two eager steps, read once per process. */
static void *reference[NPARAMS];
static size_t reference_size[NPARAMS];

static int mlp_check(struct hpu_stream *s, void *state, bool compare)
{
	struct mlp_state *st = state;
	int ret = hpu_stream_synchronize(s), i;

	for (i = 0; i < NPARAMS && compare && !ret; i++) {
		size_t size;
		void *p = read_all(s, st->m.p[i], &size);

		if (!p || size != reference_size[i] || memcmp(p, reference[i], size))
			ret = -1;
		free(p);
	}
	hpu_module_cacher_destroy(st->cacher);
	hpu_graph_destroy(st->g);
	mlp_free(&st->m);
	free(st);
	return compare ? ret : 0;
}

static int lazy_run(struct hpu_device *dev, struct hpu_stream *s, long nth, void **state)
{
	struct mlp_state *st = mlp_state_new(dev, s);
	int ret = hpu_stream_synchronize(s), step;

	*state = st;
	if (!ret)
		ret = hpu_stream_set_lazy(s, true);
	arm(nth);
	for (step = 0; step < 2 && !ret; step++) {
		ret = mlp_step(dev, s, &st->m);
		if (!ret)
			ret = hpu_mark_step(s);
	}
	disarm();
	return ret;
}

static int graph_run(struct hpu_device *dev, struct hpu_stream *s, long nth, void **state)
{
	struct mlp_state *st = mlp_state_new(dev, s);
	int ret = hpu_stream_synchronize(s), step;

	*state = st;
	arm(nth);
	if (!ret)
		ret = hpu_graph_create(dev, &st->g);
	if (!ret)
		ret = hpu_graph_capture_begin(st->g, s);
	if (!ret) {
		int captured = mlp_step(dev, s, &st->m);

		ret = hpu_graph_capture_end(st->g);
		ret = captured ? captured : ret;
	}
	for (step = 0; step < 2 && !ret; step++)
		ret = hpu_graph_replay(st->g, s);
	disarm();
	return ret;
}

static int cacher_fn(void *ctx, struct hpu_stream *s, struct hpu_tensor *const *in,
		     const void *args, struct hpu_tensor **out)
{
	struct mlp_state *st = ctx;

	(void)in;
	(void)args;
	(void)out;
	return mlp_step(st->dev, s, &st->m);
}

static int cacher_run(struct hpu_device *dev, struct hpu_stream *s, long nth, void **state)
{
	struct mlp_state *st = mlp_state_new(dev, s);
	struct hpu_module_cacher_config config = {
		.fn = cacher_fn, .ctx = st, .num_inputs = 1, .max_graphs = 2,
	};
	int ret = hpu_stream_synchronize(s), step;

	*state = st;
	arm(nth);
	if (!ret)
		ret = hpu_module_cacher_create(dev, &config, &st->cacher);
	for (step = 0; step < 2 && !ret; step++)
		ret = hpu_module_cacher_call(st->cacher, s, &st->m.x, NULL, 0, NULL);
	disarm();
	return ret;
}

/* A graphed callable of the split model made, then two steps through it (the loss and update outside). */
static int graphed_run(struct hpu_device *dev, struct hpu_stream *s, long nth, void **state)
{
	struct mlp_state *st = mlp_state_new(dev, s);
	struct net *n = calloc(1, sizeof(*n));
	struct hpu_graphed_config config = {
		.forward = net_forward, .backward = net_backward, .ctx = n,
		.num_inputs = 1, .num_outputs = 1, .num_grad_inputs = 1,
	};
	struct hpu_graphed *g = NULL;
	struct hpu_tensor *logp, *gx;
	int ret = n ? hpu_stream_synchronize(s) : -ENOMEM, step;

	*state = st;
	if (n) {
		/* The split model works on st's tensors. */
		n->dev = dev;
		n->m = st->m;
	}
	arm(nth);
	if (!ret)
		ret = hpu_make_graphed_callable(s, &config, &st->m.x, &g);
	for (step = 0; step < 2 && !ret; step++) {
		ret = hpu_graphed_forward(g, s, &st->m.x, &logp);
		if (!ret)
			ret = net_loss(s, &st->m, logp);
		if (!ret)
			ret = hpu_graphed_backward(g, s, &st->m.g_logp, &gx);
		if (!ret)
			ret = net_update(s, &st->m);
	}
	disarm();
	/* The steps must be done before the graphs go. */
	hpu_stream_synchronize(s);
	hpu_graphed_destroy(g);
	free(n);
	return ret;
}


/* Two eager steps of the MLP: what every MLP scenario must end with. */
static void read_reference(struct __test_metadata *_metadata)
{
	struct hpu_device *dev = NULL;
	struct hpu_stream *s = NULL;
	struct mlp_state *st;
	int i;

	ASSERT_EQ(0, hpu_device_open(0, &dev));
	ASSERT_EQ(0, hpu_stream_create(dev, &s));
	st = mlp_state_new(dev, s);
	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, mlp_step(dev, s, &st->m)) TH_LOG("%s", hpu_last_error());
	for (i = 0; i < NPARAMS; i++)
		ASSERT_NE(NULL, reference[i] = read_all(s, st->m.p[i], &reference_size[i]));
	mlp_free(&st->m);
	free(st);
	hpu_stream_destroy(s);
	hpu_device_close(dev);
}

/*
 * Fails the 1st, 2nd, ... allocation of sc's calls until an attempt makes
 * fewer; returns how many attempts failed one.
 */
static long fail_each_allocation(struct __test_metadata *_metadata, const struct scenario *sc)
{
	long nth, failed = 0;

	for (nth = 1;; nth++) {
		struct hpu_device *dev = NULL;
		struct hpu_stream *s = NULL;
		void *state = NULL;
		bool hit;
		int ret;

		ASSERT_EQ(0, hpu_device_open(0, &dev)) TH_LOG("%s", hpu_last_error());
		ASSERT_EQ(0, hpu_stream_create(dev, &s));
		ret = sc->run(dev, s, nth, &state);
		hit = injected;
		/* A failed call is out of memory, nothing else, and says so. */
		if (ret) {
			EXPECT_EQ(-ENOMEM, ret) TH_LOG("%s, allocation %ld: %s", sc->name, nth,
						       hpu_last_error());
			EXPECT_NE(NULL, strstr(hpu_last_error(), "memory"))
				TH_LOG("%s, allocation %ld: %s", sc->name, nth, hpu_last_error());
		}
		/* One that got by without the allocation computed what it should. */
		EXPECT_EQ(0, sc->check(s, state, !ret))
			TH_LOG("%s: allocation %ld failed, the calls succeeded, the results differ",
			       sc->name, nth);
		/* The same stream still computes. */
		EXPECT_EQ(0, eager_run(dev, s, 0, &state))
			TH_LOG("%s, after allocation %ld failed: %s", sc->name, nth, hpu_last_error());
		EXPECT_EQ(0, eager_check(s, state, true));
		hpu_stream_destroy(s);
		hpu_device_close(dev);
		if (!hit || _metadata->passed == 0)
			break;
		failed++;
	}
	return failed;
}

static void free_reference(void)
{
	int i;

	for (i = 0; i < NPARAMS; i++)
		free(reference[i]);
}

/* Each scenario's allocations, every one of them failing in turn. */
static void run_scenario(struct __test_metadata *_metadata, const struct scenario *sc)
{
	long n = fail_each_allocation(_metadata, sc);

	ksft_print_msg("%s: %ld allocations failed in turn\n", sc->name, n);
	EXPECT_LT(0, n);
	fflush(stdout);
}

/* One test per scenario. */
FIXTURE(alloc) {
	int unused;
};

FIXTURE_VARIANT(alloc) {
	struct scenario sc;
};

FIXTURE_VARIANT_ADD(alloc, eager_op_and_read) { .sc = { "eager", eager_run, eager_check } };
FIXTURE_VARIANT_ADD(alloc, lazy_steps) { .sc = { "lazy", lazy_run, mlp_check } };
FIXTURE_VARIANT_ADD(alloc, captured_and_replayed_step) { .sc = { "graph", graph_run, mlp_check } };
FIXTURE_VARIANT_ADD(alloc, module_cacher_calls) { .sc = { "module_cacher", cacher_run, mlp_check } };
FIXTURE_VARIANT_ADD(alloc, graphed_callable) { .sc = { "graphed", graphed_run, mlp_check } };
FIXTURE_VARIANT_ADD(alloc, cpu_fallback) { .sc = { "fallback", fallback_run, fallback_check } };
FIXTURE_VARIANT_ADD(alloc, device_open_use_close) { .sc = { "open", open_run, eager_check } };
FIXTURE_VARIANT_ADD(alloc, pageable_copies) { .sc = { "copies", copies_run, copies_check } };
FIXTURE_VARIANT_ADD(alloc, pad) { .sc = { "pad", pad_run, pad_check } };

FIXTURE_SETUP(alloc)
{
	read_reference(_metadata);
}

FIXTURE_TEARDOWN(alloc)
{
	free_reference();
}

TEST_F_TIMEOUT(alloc, each_fails_in_turn, 300)
{
	run_scenario(_metadata, &variant->sc);
}

/* The other tests, run once. */
FIXTURE(nomem) {
	int unused;
};

FIXTURE_SETUP(nomem)
{
	read_reference(_metadata);
}

FIXTURE_TEARDOWN(nomem)
{
	free_reference();
}

/* Takes device memory, biggest blocks first, until not even a page is left; how many blocks. */
static unsigned int hog_device_memory(struct hpu_device *dev, uint64_t *blocks, unsigned int cap)
{
	uint64_t size = 1ull << 30;
	unsigned int n = 0;

	while (size >= 4096 && n < cap) {
		if (hpu_mem_alloc(dev, size, &blocks[n]))
			size /= 2;
		else
			n++;
	}
	return n;
}

/* Out of device memory: all of it (-ENOMEM), or the user's share of it (-EDQUOT, max_user_hbm_pct). */
static bool device_memory_out(int ret)
{
	return ret == -ENOMEM || ret == -EDQUOT;
}

/* A call that ran out of device memory says so, and fails nothing else. */
static void expect_nomem_or_ok(struct __test_metadata *_metadata, const char *what, int ret)
{
	if (!ret)
		return;
	EXPECT_TRUE(device_memory_out(ret)) TH_LOG("%s: %d: %s", what, ret, hpu_last_error());
	EXPECT_NE(NULL, strstr(hpu_last_error(), ret == -EDQUOT ? "quota" : "memory"))
		TH_LOG("%s: %s", what, hpu_last_error());
}

/*
 * With the device's memory all taken (all that one user may take), lazy
 * steps, a capture and an eager op on new tensors fail with -ENOMEM (or
 * -EDQUOT); once it is given back, the same streams compute, and fresh
 * ones compute the reference's parameters.
 */
TEST_F_TIMEOUT(nomem, device_memory_exhausted, 300)
{
	static uint64_t blocks[512];
	struct hpu_device *dev = NULL;
	struct hpu_stream *s[3] = { NULL };
	struct mlp_state *lazy, *graph;
	void *state = NULL;
	unsigned int n, i, failed = 0;
	int ret;

	ASSERT_EQ(0, hpu_device_open(0, &dev));
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, hpu_stream_create(dev, &s[i]));
	lazy = mlp_state_new(dev, s[0]);
	graph = mlp_state_new(dev, s[1]);
	ASSERT_EQ(0, hpu_device_synchronize(dev));
	n = hog_device_memory(dev, blocks, 512);
	ksft_print_msg("took the device's memory in %u blocks\n", n);

	ASSERT_EQ(0, hpu_stream_set_lazy(s[0], true));
	ret = mlp_step(dev, s[0], &lazy->m);
	if (!ret)
		ret = hpu_mark_step(s[0]);
	expect_nomem_or_ok(_metadata, "lazy step", ret);
	failed += ret != 0;
	ASSERT_EQ(0, hpu_graph_create(dev, &graph->g));
	ASSERT_EQ(0, hpu_graph_capture_begin(graph->g, s[1]));
	ret = mlp_step(dev, s[1], &graph->m);
	i = hpu_graph_capture_end(graph->g);
	ret = ret ? ret : (int)i;
	expect_nomem_or_ok(_metadata, "capture", ret);
	failed += ret != 0;
	ret = eager_run(dev, s[2], 0, &state);
	expect_nomem_or_ok(_metadata, "eager op", ret);
	failed += ret != 0;
	eager_check(s[2], state, false);
	/* Each needs memory of its own: each failed. */
	EXPECT_EQ(3, failed);

	for (i = 0; i < n; i++)
		ASSERT_EQ(0, hpu_mem_free(dev, blocks[i]));
	/* The streams that failed compute again. */
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, hpu_stream_set_lazy(s[i], false));
		ret = hpu_stream_synchronize(s[i]);
		EXPECT_TRUE(!ret || device_memory_out(ret)) TH_LOG("stream %u: %s", i,
								    hpu_last_error());
		EXPECT_EQ(0, eager_run(dev, s[i], 0, &state)) TH_LOG("%s", hpu_last_error());
		EXPECT_EQ(0, eager_check(s[i], state, true));
	}
	mlp_check(s[0], lazy, false);
	mlp_check(s[1], graph, false);
	/* And fresh models reach the reference, lazily and as a graph. */
	ASSERT_EQ(0, lazy_run(dev, s[0], 0, &state)) TH_LOG("%s", hpu_last_error());
	EXPECT_EQ(0, mlp_check(s[0], state, true));
	ASSERT_EQ(0, graph_run(dev, s[1], 0, &state)) TH_LOG("%s", hpu_last_error());
	EXPECT_EQ(0, mlp_check(s[1], state, true));
	for (i = 0; i < 3; i++)
		hpu_stream_destroy(s[i]);
	hpu_device_close(dev);
	fflush(stdout);
}

/* Host allocations live and device bytes allocated now, the device's work done. */
static void measure(struct hpu_device *dev, long *host, uint64_t *device)
{
	struct hpu_mem_stats ms = { .size = sizeof(ms) };

	hpu_device_synchronize(dev);
	hpu_mem_get_stats(dev, &ms);
	*device = ms.device.allocated;
	*host = atomic_load(&live);
}

/*
 * A training loop holds steady: after warm-up steps, a hundred more in
 * each mode leave no more host allocations live and no more device memory
 * allocated than before them.
 */
TEST_F_TIMEOUT(nomem, steady_training_leaks_nothing, 300)
{
	enum { WARM = 20, STEADY = 100 };
	static const char *const modes[] = { "eager", "lazy", "graph", "module_cacher" };
	struct hpu_device *dev = NULL;
	struct hpu_stream *s = NULL;
	unsigned int mode, step;

	ASSERT_EQ(0, hpu_device_open(0, &dev));
	ASSERT_EQ(0, hpu_stream_create(dev, &s));
	for (mode = 0; mode < 4; mode++) {
		struct mlp_state *st = mlp_state_new(dev, s);
		struct hpu_module_cacher_config config = {
			.fn = cacher_fn, .ctx = st, .num_inputs = 1, .max_graphs = 2,
		};
		uint64_t device[2];
		long host[2];
		int ret = hpu_stream_set_lazy(s, mode == 1);

		if (mode == 2) {
			ASSERT_EQ(0, hpu_graph_create(dev, &st->g));
			ASSERT_EQ(0, hpu_graph_capture_begin(st->g, s));
			ASSERT_EQ(0, mlp_step(dev, s, &st->m));
			ASSERT_EQ(0, hpu_graph_capture_end(st->g)) TH_LOG("%s", hpu_last_error());
		}
		if (mode == 3)
			ASSERT_EQ(0, hpu_module_cacher_create(dev, &config, &st->cacher));
		for (step = 0; step < WARM + STEADY && !ret; step++) {
			if (step == WARM)
				measure(dev, &host[0], &device[0]);
			if (mode == 2)
				ret = hpu_graph_replay(st->g, s);
			else if (mode == 3)
				ret = hpu_module_cacher_call(st->cacher, s, &st->m.x, NULL, 0, NULL);
			else
				ret = mlp_step(dev, s, &st->m);
			if (!ret && mode == 1)
				ret = hpu_mark_step(s);
			if (!ret)
				ret = hpu_stream_synchronize(s);
		}
		ASSERT_EQ(0, ret) TH_LOG("%s: %s", modes[mode], hpu_last_error());
		measure(dev, &host[1], &device[1]);
		ksft_print_msg("%s: %ld host allocations and %lld device bytes more after %d steps\n",
			       modes[mode], host[1] - host[0], (long long)(device[1] - device[0]),
			       STEADY);
		/*
		 * A leak grows with the steps.  What may move is the allocator's
		 * block records: the last step's two temporaries, freed behind
		 * their work, are merged back (a record each) when a later
		 * allocation reaps them, which a measure may come before or after
		 * (+-2 seen under ASan, 0 in the plain runs).
		 */
		EXPECT_LE(host[1], host[0] + 4) TH_LOG("%s", modes[mode]);
		EXPECT_LE(device[1], device[0]) TH_LOG("%s", modes[mode]);
		ASSERT_EQ(0, hpu_stream_set_lazy(s, false));
		mlp_check(s, st, false);
	}
	hpu_stream_destroy(s);
	hpu_device_close(dev);
	fflush(stdout);
}

/* The lazy steps again, their recipe loaded from a warm recipe directory instead of compiled. */
TEST_F_TIMEOUT(nomem, lazy_steps_from_the_recipe_directory, 300)
{
	uint64_t hits, ignored;
	char dir[256], config[300];
	void *state = NULL;
	struct hpu_device *dev = NULL;
	struct hpu_stream *s = NULL;

	snprintf(dir, sizeof(dir), "%s/hpu_nomem_XXXXXX", getenv("TMPDIR") ?: "/tmp");
	ASSERT_NE(NULL, mkdtemp(dir));
	snprintf(config, sizeof(config), "%s,false,64", dir);
	setenv("HPU_RECIPE_CACHE_CONFIG", config, 1);
	/* Warm it: closing the device waits for the writes. */
	ASSERT_EQ(0, hpu_device_open(0, &dev));
	ASSERT_EQ(0, hpu_stream_create(dev, &s));
	ASSERT_EQ(0, lazy_run(dev, s, 0, &state)) TH_LOG("%s", hpu_last_error());
	ASSERT_EQ(0, mlp_check(s, state, true));
	hpu_stream_destroy(s);
	hpu_device_close(dev);
	hits = metric("recipe_cache_disk", "Hits");
	ignored = metric("recipe_cache_disk", "Ignored");
	run_scenario(_metadata, &(const struct scenario){ "lazy", lazy_run, mlp_check });
	EXPECT_LT(hits, metric("recipe_cache_disk", "Hits"));
	/* Running out of memory while loading a file says nothing against the file. */
	EXPECT_EQ(ignored, metric("recipe_cache_disk", "Ignored"));
	unsetenv("HPU_RECIPE_CACHE_CONFIG");
}

TEST_HARNESS_MAIN
