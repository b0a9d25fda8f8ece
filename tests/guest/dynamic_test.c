// SPDX-License-Identifier: MIT
/*
 * Dynamic shapes against the live device (<hpu/hpu_graph.h>): buckets,
 * hpu_tensor_pad() read back (F32 and I64, dims 0 and 1, eager and lazy,
 * from a transposed view too), its rejections, and seed 003's situation
 * in small: an MLP training step (linear, relu, linear, log-softmax, NLL
 * ignoring -100, the backward, SGD) in lazy mode on a batch that shrinks
 * every step.  Raw, each size compiles a recipe and the step's site warns
 * once past HPU_RECOMPILE_WARN; padded to buckets (inputs with 0, targets
 * with -100, so the padded rows count for nothing) it compiles one recipe
 * per bucket and its loss is the raw one within fp32 rounding.
 */
#define _GNU_SOURCE /* memfd_create() */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <hpu/hpu.h>
#include <hpu/hpu_graph.h>
#include <hpu/hpu_tensor.h>

#include "kselftest_harness.h"

/* The limit every test of the suite runs with: set before the device opens. */
#define WARN_LIMIT 4
#define WARN_LIMIT_STR "4"

enum { IN = 16, HID = 16, OUT = 4, BMAX = 32, STEPS = 11, BMIN = 4 };

/* Step i's batch: 32, 29, ..., 2 - eleven sizes in the buckets 32, 16, 8 and 4. */
static int64_t batch_of(unsigned int step)
{
	return BMAX - 3 * (int64_t)step;
}

static uint64_t metric(const char *name, const char *stat)
{
	uint64_t v = 0;

	hpu_metric_value(name, stat, &v);
	return v;
}

static struct hpu_tensor *tensor(struct hpu_device *dev, enum hpu_dt dt, unsigned int ndim,
				 int64_t d0, int64_t d1)
{
	struct hpu_tensor *t = NULL;

	hpu_tensor_empty(dev, dt, ndim, (int64_t[]){ d0, d1 }, &t);
	return t;
}

/* Reads t (F32 or I64) as doubles; NULL on failure. */
static double *read_back(struct hpu_stream *s, struct hpu_tensor *t)
{
	struct hpu_tensor_layout l;
	int64_t n = hpu_tensor_numel(t), i;
	size_t size;
	double *v;
	void *raw;

	if (hpu_tensor_get_layout(t, &l))
		return NULL;
	size = (size_t)n * hpu_dt_size(l.dtype);
	raw = malloc(size);
	v = malloc((size_t)n * sizeof(*v));
	if (!raw || !v || hpu_tensor_copy_to_host(s, t, raw, size)) {
		free(raw);
		free(v);
		return NULL;
	}
	for (i = 0; i < n; i++)
		v[i] = l.dtype == HPU_DT_I64 ? (double)((int64_t *)raw)[i] : ((float *)raw)[i];
	free(raw);
	return v;
}

/* stderr into memory (the guest's root is read-only) between capture_begin() and _end(). */
struct capture {
	int fd, saved;
};

static struct capture capture_begin(void)
{
	struct capture c = { memfd_create("stderr", 0), dup(2) };

	fflush(stderr);
	dup2(c.fd, 2);
	return c;
}

/* What was written, malloc'ed. */
static char *capture_end(struct capture c)
{
	char *text = calloc(1, 1 << 16);
	ssize_t n;

	fflush(stderr);
	dup2(c.saved, 2);
	close(c.saved);
	n = pread(c.fd, text, (1 << 16) - 1, 0);
	text[n > 0 ? n : 0] = 0;
	close(c.fd);
	return text;
}

static unsigned int count_of(const char *text, const char *needle)
{
	unsigned int n = 0;

	while ((text = strstr(text, needle))) {
		n++;
		text++;
	}
	return n;
}

FIXTURE(dynamic) {
	struct hpu_device *dev;
	struct hpu_stream *eager, *lazy;
};

FIXTURE_SETUP(dynamic)
{
	setenv("HPU_RECOMPILE_WARN", WARN_LIMIT_STR, 1);
	ASSERT_EQ(0, hpu_device_open(0, &self->dev)) TH_LOG("%s", hpu_last_error());
	ASSERT_EQ(0, hpu_stream_create(self->dev, &self->eager));
	ASSERT_EQ(0, hpu_stream_create(self->dev, &self->lazy));
	ASSERT_EQ(0, hpu_stream_set_lazy(self->lazy, true));
}

FIXTURE_TEARDOWN(dynamic)
{
	hpu_stream_destroy(self->eager);
	hpu_stream_destroy(self->lazy);
	hpu_device_close(self->dev);
}

TEST(buckets_are_powers_of_two_within_min_and_max)
{
	int64_t n;

	EXPECT_EQ(1, hpu_bucket_size(1, 1, 128));
	EXPECT_EQ(4, hpu_bucket_size(3, 1, 128));
	EXPECT_EQ(128, hpu_bucket_size(127, 1, 128));
	EXPECT_EQ(8, hpu_bucket_size(2, 8, 128));
	EXPECT_EQ(100, hpu_bucket_size(65, 1, 100));
	EXPECT_EQ(129, hpu_bucket_size(129, 1, 128));
	for (n = 1; n <= BMAX; n++)
		EXPECT_EQ(n <= 4 ? 4 : n <= 8 ? 8 : n <= 16 ? 16 : 32,
			  hpu_bucket_size(n, BMIN, BMAX));
	EXPECT_EQ(-EINVAL, hpu_bucket_size(0, 1, 128));
	EXPECT_STREQ("hpu_bucket_size: n 0, min 1, max 128: want n >= 1 and 1 <= min <= max",
		     hpu_last_error());
	EXPECT_EQ(-EINVAL, hpu_bucket_size(5, 9, 8));
	EXPECT_EQ(-EINVAL, hpu_bucket_size(5, 0, 8));
}

/* in [3, 4] (or its transpose) padded along dim to size; checked element by element. */
static void check_pad(struct __test_metadata *_metadata, struct hpu_device *dev,
		      struct hpu_stream *s, enum hpu_dt dt, bool transposed, unsigned int dim,
		      int64_t size, double value)
{
	int64_t src[12], rows = transposed ? 4 : 3, cols = transposed ? 3 : 4, r, c;
	struct hpu_tensor *base = tensor(dev, dt, 2, 3, 4), *in = NULL, *out = NULL;
	uint64_t ops = metric("lazy_mode", "Ops"), graphs = metric("lazy_mode", "Graphs");
	struct hpu_tensor_layout l;
	float srcf[12];
	bool lazy = false;
	double *got;
	int i;

	for (i = 0; i < 12; i++) {
		src[i] = 10 * i + 1;
		srcf[i] = (float)src[i] / 4;
	}
	ASSERT_EQ(0, hpu_tensor_copy_from_host(s, base, dt == HPU_DT_I64 ? (void *)src : srcf,
					       dt == HPU_DT_I64 ? sizeof(src) : sizeof(srcf)));
	if (transposed)
		ASSERT_EQ(0, hpu_tensor_transpose(base, 0, 1, &in));
	ASSERT_EQ(0, hpu_tensor_pad(s, transposed ? in : base, dim, size, value, &out))
		TH_LOG("%s", hpu_last_error());
	/* Recorded by a lazy stream like any op: a fill and a copy, nothing run yet. */
	ASSERT_EQ(0, hpu_stream_get_lazy(s, &lazy));
	if (lazy) {
		EXPECT_EQ(2, metric("lazy_mode", "Ops") - ops);
		EXPECT_EQ(graphs, metric("lazy_mode", "Graphs"));
	}
	ASSERT_EQ(0, hpu_tensor_get_layout(out, &l));
	EXPECT_EQ(dt, l.dtype);
	EXPECT_EQ(2, l.ndim);
	EXPECT_EQ(dim ? rows : size, l.shape[0]);
	EXPECT_EQ(dim ? size : cols, l.shape[1]);
	EXPECT_EQ(l.shape[1], l.strides[0]); /* contiguous */
	EXPECT_EQ(1, l.strides[1]);
	got = read_back(s, out);
	ASSERT_NE(NULL, got) TH_LOG("%s", hpu_last_error());
	for (r = 0; r < l.shape[0]; r++)
		for (c = 0; c < l.shape[1]; c++) {
			int64_t k = transposed ? c * 4 + r : r * 4 + c;
			double want = r < rows && c < cols
					      ? (dt == HPU_DT_I64 ? (double)src[k] : srcf[k])
					      : value;

			EXPECT_EQ(want, got[r * l.shape[1] + c])
				TH_LOG("[%lld, %lld] of the pad along dim %u", (long long)r,
				       (long long)c, dim);
		}
	free(got);
	hpu_tensor_destroy(out);
	hpu_tensor_destroy(in);
	hpu_tensor_destroy(base);
}

static void check_pads(struct __test_metadata *_metadata, struct hpu_device *dev,
		       struct hpu_stream *s)
{
	check_pad(_metadata, dev, s, HPU_DT_F32, false, 0, 5, 0);
	check_pad(_metadata, dev, s, HPU_DT_F32, false, 1, 7, -1.5);
	check_pad(_metadata, dev, s, HPU_DT_F32, true, 1, 8, 2.25);
	check_pad(_metadata, dev, s, HPU_DT_F32, false, 0, 3, 9); /* nothing to pad */
	check_pad(_metadata, dev, s, HPU_DT_I64, false, 0, 8, -100);
	check_pad(_metadata, dev, s, HPU_DT_I64, false, 1, 5, 7);
	check_pad(_metadata, dev, s, HPU_DT_I64, true, 0, 6, -100);
}

TEST_F(dynamic, pad_reads_back_eager)
{
	check_pads(_metadata, self->dev, self->eager);
}

TEST_F(dynamic, pad_reads_back_lazy)
{
	check_pads(_metadata, self->dev, self->lazy);
}

TEST_F(dynamic, pad_rejects_bad_input)
{
	struct hpu_tensor *t = tensor(self->dev, HPU_DT_F32, 2, 3, 4), *out = t;
	struct hpu_tensor *scalar = tensor(self->dev, HPU_DT_F32, 0, 0, 0);
	uint64_t ops = metric("lazy_mode", "Ops");

	EXPECT_EQ(-EINVAL, hpu_tensor_pad(self->lazy, t, 0, 4, 0, NULL));
	EXPECT_STREQ("hpu_tensor_pad: outp is NULL", hpu_last_error());
	EXPECT_EQ(-EINVAL, hpu_tensor_pad(NULL, t, 0, 4, 0, &out));
	EXPECT_STREQ("hpu_tensor_pad: stream is NULL", hpu_last_error());
	EXPECT_EQ(NULL, out);
	EXPECT_EQ(-EINVAL, hpu_tensor_pad(self->lazy, NULL, 0, 4, 0, &out));
	EXPECT_STREQ("hpu_tensor_pad: in is NULL", hpu_last_error());
	EXPECT_EQ(-EINVAL, hpu_tensor_pad(self->lazy, t, 2, 4, 0, &out));
	EXPECT_STREQ("hpu_tensor_pad: dim 2 of a tensor of 2 dims", hpu_last_error());
	EXPECT_EQ(-EINVAL, hpu_tensor_pad(self->lazy, scalar, 0, 1, 0, &out));
	EXPECT_STREQ("hpu_tensor_pad: dim 0 of a tensor of 0 dims", hpu_last_error());
	EXPECT_EQ(-EINVAL, hpu_tensor_pad(self->lazy, t, 1, 3, 0, &out));
	EXPECT_STREQ("hpu_tensor_pad: size 3 is less than in's 4 along dim 1", hpu_last_error());
	EXPECT_EQ(-EINVAL, hpu_tensor_pad(self->lazy, t, 0, -1, 0, &out));
	/* A size no tensor can have fails where the tensor is made. */
	EXPECT_GT(0, hpu_tensor_pad(self->lazy, t, 0, INT64_MAX, 0, &out));
	EXPECT_EQ(0, strncmp("hpu_tensor_pad: hpu_tensor_empty: ", hpu_last_error(), 34))
		TH_LOG("%s", hpu_last_error());
	EXPECT_EQ(NULL, out);
	EXPECT_EQ(ops, metric("lazy_mode", "Ops")); /* nothing recorded */
	hpu_tensor_destroy(t);
	hpu_tensor_destroy(scalar);
}

/* The model: parameters and their gradients, the loss of the last step. */
enum { W1, B1, W2, B2, NPARAMS };

struct mlp {
	struct hpu_device *dev;
	struct hpu_stream *s;
	struct hpu_tensor *p[NPARAMS], *grad[NPARAMS], *mom[NPARAMS], *loss, *grad_loss;
	bool pad;          /* pad each batch to its bucket */
	float loss_of[STEPS];
};

static const int64_t param_shapes[NPARAMS][2] = {
	[W1] = { HID, IN }, [B1] = { HID, 0 }, [W2] = { OUT, HID }, [B2] = { OUT, 0 },
};

/* A value in [-0.5, 0.5) of k alone: both runs see the same data, with no state to reset. */
static float noise(uint64_t k)
{
	k = (k + 1) * 0x9e3779b97f4a7c15ull;
	k ^= k >> 29;
	k *= 0xbf58476d1ce4e5b9ull;
	return (float)((k >> 40) / (double)(1 << 24)) - 0.5f;
}

static int mlp_init(struct mlp *m, struct hpu_device *dev, struct hpu_stream *s, bool pad)
{
	float v[HID * IN];
	int ret = 0, i, k;

	*m = (struct mlp){ .dev = dev, .s = s, .pad = pad };
	for (i = 0; i < NPARAMS && !ret; i++) {
		unsigned int nd = param_shapes[i][1] ? 2 : 1;
		int64_t n = param_shapes[i][0] * (nd == 2 ? param_shapes[i][1] : 1);

		m->p[i] = tensor(dev, HPU_DT_F32, nd, param_shapes[i][0], param_shapes[i][1]);
		m->grad[i] = tensor(dev, HPU_DT_F32, nd, param_shapes[i][0], param_shapes[i][1]);
		m->mom[i] = tensor(dev, HPU_DT_F32, nd, param_shapes[i][0], param_shapes[i][1]);
		for (k = 0; k < n; k++)
			v[k] = noise((uint64_t)(i << 16 | k));
		ret = hpu_tensor_copy_from_host(s, m->p[i], v, (size_t)n * sizeof(*v));
	}
	m->loss = tensor(dev, HPU_DT_F32, 0, 0, 0);
	m->grad_loss = tensor(dev, HPU_DT_F32, 0, 0, 0);
	if (!ret)
		ret = hpu_op_fill(s, m->grad_loss, 1);
	return ret ? ret : hpu_stream_synchronize(s);
}

static void mlp_free(struct mlp *m)
{
	int i;

	for (i = 0; i < NPARAMS; i++) {
		hpu_tensor_destroy(m->p[i]);
		hpu_tensor_destroy(m->grad[i]);
		hpu_tensor_destroy(m->mom[i]);
	}
	hpu_tensor_destroy(m->loss);
	hpu_tensor_destroy(m->grad_loss);
}

/*
 * Step i's first n rows, as seed 003 slices its batch; padded (in an
 * eager moment of the stream, so that the pad's copy, which has n's shape,
 * is not part of the step's graph) to the bucket of n.
 */
static int load_batch(struct mlp *m, unsigned int step, struct hpu_tensor **x,
		      struct hpu_tensor **y)
{
	int64_t n = batch_of(step), b = m->pad ? hpu_bucket_size(n, BMIN, BMAX) : n, i;
	struct hpu_tensor *xn = tensor(m->dev, HPU_DT_F32, 2, n, IN);
	struct hpu_tensor *yn = tensor(m->dev, HPU_DT_I64, 1, n, 0);
	float xv[BMAX * IN];
	int64_t yv[BMAX];
	int ret;

	for (i = 0; i < n * IN; i++)
		xv[i] = noise(step << 20 | 1 << 16 | i);
	for (i = 0; i < n; i++)
		yv[i] = (int64_t)((noise(step << 20 | i) + 0.5f) * OUT) % OUT;
	ret = hpu_tensor_copy_from_host(m->s, xn, xv, (size_t)(n * IN) * sizeof(*xv));
	if (!ret)
		ret = hpu_tensor_copy_from_host(m->s, yn, yv, (size_t)n * sizeof(*yv));
	if (ret || !m->pad) {
		*x = xn;
		*y = yn;
		return ret;
	}
	ret = hpu_stream_set_lazy(m->s, false);
	if (!ret)
		ret = hpu_tensor_pad(m->s, xn, 0, b, 0, x);
	if (!ret)
		ret = hpu_tensor_pad(m->s, yn, 0, b, -100, y);
	if (!ret)
		ret = hpu_stream_set_lazy(m->s, true);
	hpu_tensor_destroy(xn);
	hpu_tensor_destroy(yn);
	return ret;
}

/* Forward, backward and SGD on x [b, IN], y [b]; the activations are the graph's intermediates. */
static int mlp_step(struct mlp *m, struct hpu_tensor *x, struct hpu_tensor *y)
{
	static const struct hpu_sgd_config sgd = { .lr = 0.5 };
	int64_t b = hpu_tensor_numel(y);
	struct hpu_tensor *h = tensor(m->dev, HPU_DT_F32, 2, b, HID);
	struct hpu_tensor *a = tensor(m->dev, HPU_DT_F32, 2, b, HID);
	struct hpu_tensor *z = tensor(m->dev, HPU_DT_F32, 2, b, OUT);
	struct hpu_tensor *logp = tensor(m->dev, HPU_DT_F32, 2, b, OUT);
	struct hpu_tensor *g_logp = tensor(m->dev, HPU_DT_F32, 2, b, OUT);
	struct hpu_tensor *g_z = tensor(m->dev, HPU_DT_F32, 2, b, OUT);
	struct hpu_tensor *g_a = tensor(m->dev, HPU_DT_F32, 2, b, HID);
	struct hpu_tensor *g_h = tensor(m->dev, HPU_DT_F32, 2, b, HID);
	struct hpu_tensor *g_z_t = NULL, *g_h_t = NULL;
	int ret, i;

	ret = hpu_tensor_transpose(g_z, 0, 1, &g_z_t);
	if (!ret)
		ret = hpu_tensor_transpose(g_h, 0, 1, &g_h_t);
#define T(call) do { if (!ret) ret = (call); } while (0)
	T(hpu_op_linear(m->s, h, x, m->p[W1], m->p[B1]));
	T(hpu_op_unary(m->s, HPU_UN_RELU, a, h));
	T(hpu_op_linear(m->s, z, a, m->p[W2], m->p[B2]));
	T(hpu_op_softmax(m->s, logp, z, 1, true));
	T(hpu_op_nll_loss(m->s, m->loss, logp, y, HPU_LOSS_MEAN, -100));
	T(hpu_op_nll_loss_backward(m->s, g_logp, m->grad_loss, y, HPU_LOSS_MEAN, -100));
	T(hpu_op_softmax_backward(m->s, g_z, g_logp, logp, 1, true));
	T(hpu_op_matmul(m->s, m->grad[W2], g_z_t, a));
	T(hpu_op_reduce(m->s, HPU_RED_SUM, m->grad[B2], g_z, 1));
	T(hpu_op_matmul(m->s, g_a, g_z, m->p[W2]));
	T(hpu_op_relu_backward(m->s, g_h, g_a, h));
	T(hpu_op_matmul(m->s, m->grad[W1], g_h_t, x));
	T(hpu_op_reduce(m->s, HPU_RED_SUM, m->grad[B1], g_h, 1));
	for (i = 0; i < NPARAMS; i++)
		T(hpu_op_sgd(m->s, m->p[i], m->grad[i], m->mom[i], &sgd, false));
#undef T
	hpu_tensor_destroy(g_z_t);
	hpu_tensor_destroy(g_h_t);
	hpu_tensor_destroy(h);
	hpu_tensor_destroy(a);
	hpu_tensor_destroy(z);
	hpu_tensor_destroy(logp);
	hpu_tensor_destroy(g_logp);
	hpu_tensor_destroy(g_z);
	hpu_tensor_destroy(g_a);
	hpu_tensor_destroy(g_h);
	return ret ? ret : hpu_mark_step(m->s);
}

/* Every step of a run, each loss read back; what it wrote to stderr in *text. */
static int mlp_train(struct mlp *m, char **text)
{
	struct capture c = capture_begin();
	unsigned int step;
	int ret = 0;

	for (step = 0; step < STEPS && !ret; step++) {
		struct hpu_tensor *x = NULL, *y = NULL;

		ret = load_batch(m, step, &x, &y);
		if (!ret)
			ret = mlp_step(m, x, y);
		if (!ret)
			ret = hpu_tensor_copy_to_host(m->s, m->loss, &m->loss_of[step],
						      sizeof(float));
		hpu_tensor_destroy(x);
		hpu_tensor_destroy(y);
	}
	*text = capture_end(c);
	return ret;
}

TEST_F(dynamic, shrinking_batches_compile_per_size_raw_and_per_bucket_padded)
{
	uint64_t compiles, warnings = metric("graph_compilation", "RecompileWarnings");
	struct mlp raw, padded;
	unsigned int step, buckets = 0;
	int64_t prev = 0;
	char *text;
	int ret;

	for (step = 0; step < STEPS; step++) {
		int64_t b = hpu_bucket_size(batch_of(step), BMIN, BMAX);

		buckets += b != prev;
		prev = b;
	}
	ASSERT_EQ(4, buckets);
	ASSERT_EQ(0, mlp_init(&raw, self->dev, self->lazy, false)) TH_LOG("%s", hpu_last_error());
	ASSERT_EQ(0, mlp_init(&padded, self->dev, self->lazy, true))
		TH_LOG("%s", hpu_last_error());

	compiles = metric("graph_compilation", "TotalNumber");
	ret = mlp_train(&raw, &text);
	ASSERT_EQ(0, ret) TH_LOG("%s", hpu_last_error());
	EXPECT_EQ(STEPS, metric("graph_compilation", "TotalNumber") - compiles);
	/* Eleven compiles of one site, four allowed: one warning, at the fifth. */
	EXPECT_EQ(1, count_of(text, "libhpu: warning: graph site ")) TH_LOG("%s", text);
	EXPECT_EQ(1, count_of(text, "has compiled 5 recipes"));
	EXPECT_EQ(1, metric("graph_compilation", "RecompileWarnings") - warnings);
	free(text);

	/* Nothing cached from the raw run: the padded one compiles each of its buckets. */
	ASSERT_EQ(0, hpu_recipe_cache_set_capacity(self->dev, 1));
	ASSERT_EQ(0, hpu_recipe_cache_set_capacity(self->dev, 64));
	compiles = metric("graph_compilation", "TotalNumber");
	ret = mlp_train(&padded, &text);
	ASSERT_EQ(0, ret) TH_LOG("%s", hpu_last_error());
	EXPECT_EQ(buckets, metric("graph_compilation", "TotalNumber") - compiles);
	EXPECT_STREQ("", text);
	free(text);

	/* Padded rows are ignored: the same losses, the same training. */
	for (step = 0; step < STEPS; step++) {
		float r = raw.loss_of[step], p = padded.loss_of[step];

		EXPECT_GE(1e-5 * fabsf(r) + 1e-6, fabsf(r - p))
			TH_LOG("step %u (batch %lld): loss %.9g raw, %.9g padded", step,
			       (long long)batch_of(step), r, p);
	}
	EXPECT_LT(0.5f, raw.loss_of[0]); /* a real loss, not zeros on both sides */
	mlp_free(&raw);
	mlp_free(&padded);
}

/*
 * Two sites - a fill then an add, or a mul - each over sizes 1..sizes,
 * interleaved; what they wrote to stderr in *text.
 */
static int run_two_sites(struct hpu_device *dev, struct hpu_stream *s, int64_t sizes,
			 char **text)
{
	struct capture c = capture_begin();
	int64_t n;
	int ret = 0, k;

	for (n = 1; n <= sizes && !ret; n++)
		for (k = 0; k < 2 && !ret; k++) {
			struct hpu_tensor *t = tensor(dev, HPU_DT_F32, 1, n, 0);

			ret = hpu_op_fill(s, t, 1);
			if (!ret)
				ret = hpu_op_binary(s, k ? HPU_BIN_MUL : HPU_BIN_ADD, t, t, t);
			if (!ret)
				ret = hpu_mark_step(s);
			hpu_tensor_destroy(t);
		}
	*text = capture_end(c);
	return ret;
}

TEST_F(dynamic, a_recompiling_site_warns_once)
{
	uint64_t warnings = metric("graph_compilation", "RecompileWarnings");
	char *text;
	int ret;

	/* At the limit: no warning. */
	ret = run_two_sites(self->dev, self->lazy, WARN_LIMIT, &text);
	ASSERT_EQ(0, ret) TH_LOG("%s", hpu_last_error());
	EXPECT_STREQ("", text);
	free(text);
	/* Past it, and far past it: one warning per site. */
	ASSERT_EQ(0, hpu_recipe_cache_set_capacity(self->dev, 1));
	ret = run_two_sites(self->dev, self->lazy, 3 * WARN_LIMIT, &text);
	ASSERT_EQ(0, ret) TH_LOG("%s", hpu_last_error());
	EXPECT_EQ(2, count_of(text, "libhpu: warning: graph site ")) TH_LOG("%s", text);
	EXPECT_EQ(1, count_of(text, "(2 ops, first fill, last add) has compiled 5 recipes"));
	EXPECT_EQ(1, count_of(text, "(2 ops, first fill, last mul) has compiled 5 recipes"));
	EXPECT_EQ(2, count_of(text, "(HPU_RECOMPILE_WARN=" WARN_LIMIT_STR ")"));
	EXPECT_EQ(2, metric("graph_compilation", "RecompileWarnings") - warnings);
	free(text);
	ASSERT_EQ(0, hpu_recipe_cache_set_capacity(self->dev, 64));
}

TEST_HARNESS_MAIN
