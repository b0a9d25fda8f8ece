// SPDX-License-Identifier: MIT
/*
 * Lazy mode against the live device (<hpu/hpu_graph.h>): a training step of
 * the seeds' MLP (linear, relu, dropout, log-softmax, NLL, their
 * backwards, matmuls, reductions, Adadelta) plus copies, fills and
 * intermediates the caller destroys before the step ends, run eagerly on
 * one stream and lazily on another from the same values: every result is
 * bitwise the same.  Also: one compilation and N-1 cache hits for N
 * identical steps, dropout drawing fresh masks each step, a host read
 * flushing implicitly, a CPU fallback flushing first, the op cap splitting
 * a graph, eviction, misuse, and the metrics' JSON.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hpu/hpu.h>
#include <hpu/hpu_graph.h>
#include <hpu/hpu_tensor.h>

#include "kselftest_harness.h"

enum { B = 32, IN = 64, HID = 32, OUT = 10, STEPS = 4 };
#define P_DROP 0.5

enum { W1, B1, W2, B2, NPARAMS };

/* Every tensor of the model and its step; "persistent" ones outlive the step. */
struct mlp {
	struct hpu_tensor *p[NPARAMS], *grad[NPARAMS], *sq[NPARAMS], *acc[NPARAMS];
	struct hpu_tensor *x, *y, *h1, *a1, *d1, *mask, *rng, *z, *logp, *loss, *loss_sum;
	struct hpu_tensor *grad_loss, *g_logp, *g_z, *g_z_t, *g_d1, *g_a1, *g_h1, *g_h1_t, *stat;
};

static uint64_t lcg = 12345;

static float rnd(void)
{
	lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
	return (float)((lcg >> 40) / (double)(1 << 24)) - 0.5f;
}

static struct hpu_tensor *tensor(struct hpu_device *dev, enum hpu_dt dt, int64_t d0, int64_t d1)
{
	int64_t shape[2] = { d0, d1 };
	struct hpu_tensor *t = NULL;

	hpu_tensor_empty(dev, dt, d1 ? 2 : 1, shape, &t);
	return t;
}

static struct hpu_tensor *transposed(struct hpu_tensor *t)
{
	struct hpu_tensor *v = NULL;

	hpu_tensor_transpose(t, 0, 1, &v);
	return v;
}

static void fill_random(struct hpu_stream *s, struct hpu_tensor *t)
{
	int64_t n = hpu_tensor_numel(t), i;
	float *v = malloc(n * sizeof(*v));

	for (i = 0; i < n; i++)
		v[i] = rnd();
	hpu_tensor_copy_from_host(s, t, v, n * sizeof(*v));
	free(v);
}

static const int64_t shapes[NPARAMS][2] = { { HID, IN }, { HID, 0 }, { OUT, HID }, { OUT, 0 } };

/* The same model whatever the stream: lcg is reset by the caller. */
static void mlp_init(struct hpu_device *dev, struct hpu_stream *s, struct mlp *m)
{
	int64_t seed[2] = { 42, 0 };
	int i;

	for (i = 0; i < NPARAMS; i++) {
		m->p[i] = tensor(dev, HPU_DT_F32, shapes[i][0], shapes[i][1]);
		m->grad[i] = tensor(dev, HPU_DT_F32, shapes[i][0], shapes[i][1]);
		m->sq[i] = tensor(dev, HPU_DT_F32, shapes[i][0], shapes[i][1]);
		m->acc[i] = tensor(dev, HPU_DT_F32, shapes[i][0], shapes[i][1]);
		fill_random(s, m->p[i]);
		hpu_op_fill(s, m->sq[i], 0);
		hpu_op_fill(s, m->acc[i], 0);
	}
	m->x = tensor(dev, HPU_DT_F32, B, IN);
	m->y = tensor(dev, HPU_DT_I64, B, 0);
	m->h1 = tensor(dev, HPU_DT_F32, B, HID);
	m->a1 = tensor(dev, HPU_DT_F32, B, HID);
	m->d1 = tensor(dev, HPU_DT_F32, B, HID);
	m->mask = tensor(dev, HPU_DT_U8, B, HID);
	m->rng = tensor(dev, HPU_DT_I64, 2, 0);
	m->z = tensor(dev, HPU_DT_F32, B, OUT);
	m->logp = tensor(dev, HPU_DT_F32, B, OUT);
	m->loss = tensor(dev, HPU_DT_F32, 1, 0);
	m->loss_sum = tensor(dev, HPU_DT_F32, 1, 0);
	m->grad_loss = tensor(dev, HPU_DT_F32, 1, 0);
	m->g_logp = tensor(dev, HPU_DT_F32, B, OUT);
	m->g_z = tensor(dev, HPU_DT_F32, B, OUT);
	m->g_d1 = tensor(dev, HPU_DT_F32, B, HID);
	m->g_a1 = tensor(dev, HPU_DT_F32, B, HID);
	m->g_h1 = tensor(dev, HPU_DT_F32, B, HID);
	m->stat = tensor(dev, HPU_DT_F32, 1, HID);
	m->g_z_t = transposed(m->g_z);
	m->g_h1_t = transposed(m->g_h1);
	hpu_tensor_copy_from_host(s, m->rng, seed, sizeof(seed));
	hpu_op_fill(s, m->loss_sum, 0);
	hpu_op_fill(s, m->grad_loss, 1);
}

static void mlp_free(struct mlp *m)
{
	struct hpu_tensor **t = (struct hpu_tensor **)m;
	size_t i;

	for (i = 0; i < sizeof(*m) / sizeof(*t); i++)
		hpu_tensor_destroy(t[i]);
}

/* One batch: x and y from the generator (the caller resets it alike for both runs). */
static int load_batch(struct hpu_stream *s, struct mlp *m, unsigned int step)
{
	int64_t y[B];
	int i;

	lcg = 1000 + step;
	fill_random(s, m->x);
	for (i = 0; i < B; i++)
		y[i] = (int64_t)((rnd() + 0.5f) * OUT) % OUT;
	return hpu_tensor_copy_from_host(s, m->y, y, sizeof(y));
}

/* The step: forward, backward, update; plus intermediates gone before it ends. */
static int mlp_step(struct hpu_device *dev, struct hpu_stream *s, struct mlp *m)
{
	static const struct hpu_adadelta_config opt = { .lr = 1.0, .rho = 0.9, .eps = 1e-6 };
	struct hpu_tensor *tmp = tensor(dev, HPU_DT_F32, B, HID);
	struct hpu_tensor *zero = tensor(dev, HPU_DT_F32, B, HID);
	int ret = 0, i;

#define T(call) do { if (!ret) ret = (call); } while (0)
	T(hpu_op_linear(s, m->h1, m->x, m->p[W1], m->p[B1]));
	T(hpu_op_unary(s, HPU_UN_RELU, m->a1, m->h1));
	/* A copy and a zero fill (DMA work), an add of them, a column sum: then gone. */
	T(hpu_op_unary(s, HPU_UN_COPY, tmp, m->a1));
	T(hpu_op_fill(s, zero, 0));
	T(hpu_op_add(s, zero, zero, tmp, 0.5));
	T(hpu_op_reduce(s, HPU_RED_SUM, m->stat, zero, 1));
	T(hpu_op_dropout(s, m->d1, m->mask, m->a1, m->rng, P_DROP));
	T(hpu_op_linear(s, m->z, m->d1, m->p[W2], m->p[B2]));
	T(hpu_op_softmax(s, m->logp, m->z, 1, true));
	T(hpu_op_nll_loss(s, m->loss, m->logp, m->y, HPU_LOSS_MEAN, -100));
	T(hpu_op_add(s, m->loss_sum, m->loss_sum, m->loss, 1));
	T(hpu_op_nll_loss_backward(s, m->g_logp, m->grad_loss, m->y, HPU_LOSS_MEAN, -100));
	T(hpu_op_softmax_backward(s, m->g_z, m->g_logp, m->logp, 1, true));
	T(hpu_op_matmul(s, m->grad[W2], m->g_z_t, m->d1));
	T(hpu_op_reduce(s, HPU_RED_SUM, m->grad[B2], m->g_z, 1));
	T(hpu_op_matmul(s, m->g_d1, m->g_z, m->p[W2]));
	T(hpu_op_dropout_backward(s, m->g_a1, m->g_d1, m->mask, P_DROP));
	T(hpu_op_relu_backward(s, m->g_h1, m->g_a1, m->h1));
	T(hpu_op_matmul(s, m->grad[W1], m->g_h1_t, m->x));
	T(hpu_op_reduce(s, HPU_RED_SUM, m->grad[B1], m->g_h1, 1));
	for (i = 0; i < NPARAMS; i++)
		T(hpu_op_adadelta(s, m->p[i], m->grad[i], m->sq[i], m->acc[i], &opt));
#undef T
	hpu_tensor_destroy(tmp);
	hpu_tensor_destroy(zero);
	return ret;
}

static void *read_all(struct hpu_stream *s, struct hpu_tensor *t, size_t *size)
{
	struct hpu_tensor_layout l;
	void *v;

	hpu_tensor_get_layout(t, &l);
	*size = hpu_tensor_numel(t) * hpu_dt_size(l.dtype);
	v = malloc(*size);
	if (hpu_tensor_copy_to_host(s, t, v, *size)) {
		free(v);
		return NULL;
	}
	return v;
}

/* Bitwise comparison of a tensor of each model. */
static int same(struct __test_metadata *_metadata, struct hpu_stream *se, struct hpu_tensor *te,
		struct hpu_stream *sl, struct hpu_tensor *tl, const char *name)
{
	size_t ne, nl;
	void *e = read_all(se, te, &ne), *l = read_all(sl, tl, &nl);
	int ok = e && l && ne == nl && !memcmp(e, l, ne);

	EXPECT_TRUE(ok) TH_LOG("%s differs between eager and lazy (%s)", name, hpu_last_error());
	free(e);
	free(l);
	return ok;
}

static uint64_t metric(const char *name, const char *stat)
{
	uint64_t v = 0;

	hpu_metric_value(name, stat, &v);
	return v;
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

FIXTURE(lazy) {
	struct hpu_device *dev;
	struct hpu_stream *eager, *lazy;
};

FIXTURE_SETUP(lazy)
{
	ASSERT_EQ(0, hpu_device_open(0, &self->dev)) TH_LOG("%s", hpu_last_error());
	ASSERT_EQ(0, hpu_stream_create(self->dev, &self->eager));
	ASSERT_EQ(0, hpu_stream_create(self->dev, &self->lazy));
	ASSERT_EQ(0, hpu_stream_set_lazy(self->lazy, true));
}

FIXTURE_TEARDOWN(lazy)
{
	hpu_stream_destroy(self->eager);
	hpu_stream_destroy(self->lazy);
	hpu_device_close(self->dev);
}

TEST_F(lazy, mlp_steps_match_eager_bitwise_with_one_compilation)
{
	struct mlp me = { 0 }, ml = { 0 };
	uint64_t compiles, misses, hits, uploads;
	unsigned int step, i;
	double t_eager = 0, t_lazy = 0, t;
	void *mask_prev = NULL, *mask;
	size_t size;

	lcg = 1;
	mlp_init(self->dev, self->eager, &me);
	lcg = 1;
	ASSERT_EQ(0, hpu_stream_set_lazy(self->lazy, false));
	mlp_init(self->dev, self->lazy, &ml);
	ASSERT_EQ(0, hpu_stream_synchronize(self->lazy));
	ASSERT_EQ(0, hpu_stream_set_lazy(self->lazy, true));
	compiles = metric("graph_compilation", "TotalNumber");
	misses = metric("recipe_cache", "Misses");
	hits = metric("recipe_cache", "Hits");
	uploads = metric("graph_launch", "Uploads");
	for (step = 0; step < STEPS; step++) {
		ASSERT_EQ(0, load_batch(self->eager, &me, step));
		ASSERT_EQ(0, load_batch(self->lazy, &ml, step));
		ASSERT_EQ(0, hpu_stream_synchronize(self->eager));
		ASSERT_EQ(0, hpu_stream_synchronize(self->lazy));
		/* Host time: enqueueing the step, not waiting for it. */
		t = now_us();
		ASSERT_EQ(0, mlp_step(self->dev, self->eager, &me)) TH_LOG("%s", hpu_last_error());
		if (step)
			t_eager += now_us() - t;
		ASSERT_EQ(0, hpu_stream_synchronize(self->eager));
		t = now_us();
		ASSERT_EQ(0, mlp_step(self->dev, self->lazy, &ml)) TH_LOG("%s", hpu_last_error());
		ASSERT_EQ(0, hpu_mark_step(self->lazy)) TH_LOG("%s", hpu_last_error());
		if (step)
			t_lazy += now_us() - t;
		ASSERT_EQ(0, hpu_stream_synchronize(self->lazy)) TH_LOG("%s", hpu_last_error());
		for (i = 0; i < NPARAMS; i++)
			same(_metadata, self->eager, me.p[i], self->lazy, ml.p[i], "a parameter");
		same(_metadata, self->eager, me.loss_sum, self->lazy, ml.loss_sum, "loss_sum");
		same(_metadata, self->eager, me.stat, self->lazy, ml.stat, "stat");
		same(_metadata, self->eager, me.mask, self->lazy, ml.mask, "the dropout mask");
		/* The replayed recipe draws a fresh mask: the RNG state lives on the device. */
		mask = read_all(self->lazy, ml.mask, &size);
		ASSERT_NE(NULL, mask);
		if (mask_prev)
			EXPECT_NE(0, memcmp(mask, mask_prev, size));
		free(mask_prev);
		mask_prev = mask;
	}
	free(mask_prev);
	EXPECT_EQ(1, metric("graph_compilation", "TotalNumber") - compiles);
	EXPECT_EQ(1, metric("recipe_cache", "Misses") - misses);
	EXPECT_EQ(STEPS - 1, metric("recipe_cache", "Hits") - hits);
	/* The same tensors every step: only the first launch uploads. */
	EXPECT_EQ(1, metric("graph_launch", "Uploads") - uploads);
	ksft_print_msg("launches %s CALL\n", metric("graph_launch", "Inline") ? "without" : "with");
	ksft_print_msg("host time to enqueue a step (steps 2..%d): eager %.0f us, "
		       "lazy with a cache hit %.0f us\n", STEPS,
		       t_eager / (STEPS - 1), t_lazy / (STEPS - 1));
	/* The test runs in a child that leaves through _exit(). */
	fflush(stdout);
	mlp_free(&me);
	mlp_free(&ml);
}

TEST_F(lazy, a_host_read_flushes_and_tensors_moving_rebind)
{
	struct hpu_tensor *a = tensor(self->dev, HPU_DT_F32, 256, 0);
	struct hpu_tensor *b = tensor(self->dev, HPU_DT_F32, 256, 0);
	uint64_t graphs = metric("lazy_mode", "Graphs"), uploads;
	float got[256];

	ASSERT_EQ(0, hpu_op_fill(self->lazy, a, 3));
	ASSERT_EQ(0, hpu_op_add(self->lazy, a, a, a, 1));
	EXPECT_EQ(graphs, metric("lazy_mode", "Graphs"));
	ASSERT_EQ(0, hpu_tensor_copy_to_host(self->lazy, a, got, sizeof(got)))
		TH_LOG("%s", hpu_last_error());
	EXPECT_EQ(graphs + 1, metric("lazy_mode", "Graphs"));
	EXPECT_EQ(6, got[0]);
	EXPECT_EQ(6, got[255]);
	/* The same graph on another tensor: a cache hit, re-bound by an upload. */
	uploads = metric("graph_launch", "Uploads");
	ASSERT_EQ(0, hpu_op_fill(self->lazy, b, 3));
	ASSERT_EQ(0, hpu_op_add(self->lazy, b, b, b, 1));
	ASSERT_EQ(0, hpu_tensor_copy_to_host(self->lazy, b, got, sizeof(got)));
	EXPECT_EQ(6, got[100]);
	EXPECT_EQ(uploads + 1, metric("graph_launch", "Uploads"));
	hpu_tensor_destroy(a);
	hpu_tensor_destroy(b);
}

/* A CPU fallback reads its operands on the host: what was recorded runs first. */
TEST_F(lazy, a_fallback_flushes_first)
{
	struct hpu_tensor *a = tensor(self->dev, HPU_DT_F32, 16, 0);
	struct hpu_tensor *c = tensor(self->dev, HPU_DT_F32, 16, 0);
	uint64_t graphs = metric("lazy_mode", "Graphs"), falls = metric("cpu_fallback", "Total");
	float got[16];

	ASSERT_EQ(0, hpu_op_fill(self->lazy, a, 2));
	ASSERT_EQ(0, hpu_op_cumsum(self->lazy, c, a, 0)) TH_LOG("%s", hpu_last_error());
	EXPECT_EQ(graphs + 1, metric("lazy_mode", "Graphs"));
	EXPECT_EQ(falls + 1, metric("cpu_fallback", "Total"));
	EXPECT_EQ(1, metric("cpu_fallback", "cumsum"));
	ASSERT_EQ(0, hpu_tensor_copy_to_host(self->lazy, c, got, sizeof(got)));
	EXPECT_EQ(2, got[0]);
	EXPECT_EQ(32, got[15]);
	hpu_tensor_destroy(a);
	hpu_tensor_destroy(c);
}

TEST_F(lazy, the_op_cap_splits_a_graph)
{
	struct hpu_tensor *acc = tensor(self->dev, HPU_DT_F32, 64, 0);
	uint64_t splits = metric("lazy_mode", "CapSplits"), graphs = metric("lazy_mode", "Graphs");
	float got[64];
	int i;

	ASSERT_EQ(0, hpu_stream_set_max_graph_ops(self->lazy, 4));
	ASSERT_EQ(0, hpu_op_fill(self->lazy, acc, 0));
	for (i = 0; i < 9; i++)
		ASSERT_EQ(0, hpu_op_binary_scalar(self->lazy, HPU_BIN_ADD, acc, acc, i));
	ASSERT_EQ(0, hpu_mark_step(self->lazy));
	ASSERT_EQ(0, hpu_tensor_copy_to_host(self->lazy, acc, got, sizeof(got)));
	EXPECT_EQ(36, got[0]);
	EXPECT_EQ(36, got[63]);
	/* 10 ops by 4: split twice, three graphs. */
	EXPECT_EQ(2, metric("lazy_mode", "CapSplits") - splits);
	EXPECT_EQ(3, metric("lazy_mode", "Graphs") - graphs);
	hpu_tensor_destroy(acc);
}

TEST_F(lazy, the_least_recent_recipe_is_evicted)
{
	struct hpu_tensor *a = tensor(self->dev, HPU_DT_F32, 128, 0);
	uint64_t evictions, misses;
	int i;

	ASSERT_EQ(0, hpu_recipe_cache_set_capacity(self->dev, 1));
	evictions = metric("recipe_cache", "Evictions");
	misses = metric("recipe_cache", "Misses");
	/* Two graphs in turn, one slot: each launch misses and evicts the other. */
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, hpu_op_fill(self->lazy, a, i % 2 ? 1 : 2));
		ASSERT_EQ(0, hpu_mark_step(self->lazy));
	}
	ASSERT_EQ(0, hpu_stream_synchronize(self->lazy));
	EXPECT_EQ(4, metric("recipe_cache", "Misses") - misses);
	EXPECT_EQ(3, metric("recipe_cache", "Evictions") - evictions);
	ASSERT_EQ(0, hpu_recipe_cache_set_capacity(self->dev, 64));
	hpu_tensor_destroy(a);
}

TEST_F(lazy, misuse_fails_at_the_call)
{
	struct hpu_tensor *a = tensor(self->dev, HPU_DT_F32, 8, 0);
	struct hpu_tensor *m = tensor(self->dev, HPU_DT_F32, 8, 8), *mt = NULL, *o = NULL;
	uint64_t ops = metric("lazy_mode", "Ops"), v;
	struct hpu_metric met;
	bool lazy = false;
	char json[4096], json_path[512];
	FILE *f;
	size_t n;

	EXPECT_EQ(-EINVAL, hpu_mark_step(NULL));
	EXPECT_EQ(-EINVAL, hpu_stream_set_lazy(NULL, true));
	EXPECT_EQ(-EINVAL, hpu_stream_get_lazy(self->lazy, NULL));
	EXPECT_EQ(0, hpu_stream_get_lazy(self->lazy, &lazy));
	EXPECT_TRUE(lazy);
	EXPECT_EQ(-EINVAL, hpu_stream_set_max_graph_ops(NULL, 1));
	EXPECT_EQ(-EINVAL, hpu_recipe_cache_set_capacity(self->dev, 0));
	EXPECT_EQ(-ENOENT, hpu_metric_global("no_such_metric", &met));
	EXPECT_EQ(-ENOENT, hpu_metric_value("recipe_cache", "NoSuchStat", &v));
	EXPECT_EQ(-EINVAL, hpu_metric_global(NULL, &met));
	/* Checks run when an op is recorded: nothing is recorded then. */
	EXPECT_EQ(-EINVAL, hpu_op_add(self->lazy, a, a, m, 1));
	/* A matrix with no dim of stride 1 fails at its call, not at the step. */
	int64_t shape[2] = { 4, 4 }, strides[2] = { 16, 2 };
	struct hpu_tensor_layout l = { .dtype = HPU_DT_F32, .ndim = 2 };

	memcpy(l.shape, shape, sizeof(shape));
	memcpy(l.strides, strides, sizeof(strides));
	ASSERT_EQ(0, hpu_tensor_as_strided(m, &l, &mt));
	o = tensor(self->dev, HPU_DT_F32, 4, 4);
	EXPECT_EQ(-EINVAL, hpu_op_matmul(self->lazy, o, mt, mt));
	EXPECT_EQ(ops, metric("lazy_mode", "Ops"));
	EXPECT_EQ(0, hpu_mark_step(self->lazy));
	/* The metrics as JSON, in the launcher's writable directory. */
	snprintf(json_path, sizeof(json_path), "%s/lazy_metrics.json",
		 getenv("HPU_OUT") ? getenv("HPU_OUT") : "/tmp");
	ASSERT_EQ(0, hpu_metrics_dump_json(json_path));
	f = fopen(json_path, "r");
	ASSERT_NE(NULL, f);
	n = fread(json, 1, sizeof(json) - 1, f);
	json[n] = 0;
	fclose(f);
	EXPECT_NE(NULL, strstr(json, "\"graph_compilation\": {\"TotalNumber\": "));
	EXPECT_NE(NULL, strstr(json, "\"recipe_cache\": {\"Hits\": "));
	EXPECT_NE(NULL, strstr(json, "\"memory\": {\"InUse\": "));
	hpu_tensor_destroy(a);
	hpu_tensor_destroy(m);
	hpu_tensor_destroy(mt);
	hpu_tensor_destroy(o);
}

TEST_HARNESS_MAIN
