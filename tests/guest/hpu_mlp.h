/* SPDX-License-Identifier: MIT */
/*
 * The guest suites' training step: a small MLP of the seeds' shape (linear,
 * relu, dropout, linear, log-softmax, NLL, their backwards, Adadelta) with
 * intermediates the step destroys before it ends, so that eager, lazy and
 * graph modes can be run from the same values and compared bitwise; and
 * the same model split into forward and backward for graphed callables.
 * Include after kselftest_harness.h.
 */
#ifndef HPU_MLP_H
#define HPU_MLP_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hpu/hpu.h>
#include <hpu/hpu_graph.h>
#include <hpu/hpu_tensor.h>

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

static inline float rnd(void)
{
	lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
	return (float)((lcg >> 40) / (double)(1 << 24)) - 0.5f;
}

static inline struct hpu_tensor *tensor(struct hpu_device *dev, enum hpu_dt dt, int64_t d0, int64_t d1)
{
	int64_t shape[2] = { d0, d1 };
	struct hpu_tensor *t = NULL;

	hpu_tensor_empty(dev, dt, d1 ? 2 : 1, shape, &t);
	return t;
}

static inline struct hpu_tensor *transposed(struct hpu_tensor *t)
{
	struct hpu_tensor *v = NULL;

	hpu_tensor_transpose(t, 0, 1, &v);
	return v;
}

static inline void fill_random(struct hpu_stream *s, struct hpu_tensor *t)
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
static inline void mlp_init(struct hpu_device *dev, struct hpu_stream *s, struct mlp *m)
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

static inline void mlp_free(struct mlp *m)
{
	struct hpu_tensor **t = (struct hpu_tensor **)m;
	size_t i;

	for (i = 0; i < sizeof(*m) / sizeof(*t); i++)
		hpu_tensor_destroy(t[i]);
}

/* One batch: x and y from the generator (the caller resets it alike for both runs). */
static inline int load_batch(struct hpu_stream *s, struct mlp *m, unsigned int step)
{
	int64_t y[B];
	int i;

	lcg = 1000 + step;
	fill_random(s, m->x);
	for (i = 0; i < B; i++)
		y[i] = (int64_t)((rnd() + 0.5f) * OUT) % OUT;
	return hpu_tensor_copy_from_host(s, m->y, y, sizeof(y));
}

/* From the gradient of the log-probabilities to the parameters' (in m->grad[]); x the input. */
static inline int mlp_backward(struct hpu_stream *s, struct mlp *m, struct hpu_tensor *g_logp,
			       struct hpu_tensor *x)
{
	int ret = 0;

#define T(call) do { if (!ret) ret = (call); } while (0)
	T(hpu_op_softmax_backward(s, m->g_z, g_logp, m->logp, 1, true));
	T(hpu_op_matmul(s, m->grad[W2], m->g_z_t, m->d1));
	T(hpu_op_reduce(s, HPU_RED_SUM, m->grad[B2], m->g_z, 1));
	T(hpu_op_matmul(s, m->g_d1, m->g_z, m->p[W2]));
	T(hpu_op_dropout_backward(s, m->g_a1, m->g_d1, m->mask, P_DROP));
	T(hpu_op_relu_backward(s, m->g_h1, m->g_a1, m->h1));
	T(hpu_op_matmul(s, m->grad[W1], m->g_h1_t, x));
	T(hpu_op_reduce(s, HPU_RED_SUM, m->grad[B1], m->g_h1, 1));
#undef T
	return ret;
}

/* The step: forward, backward, update; plus intermediates gone before it ends. */
static inline int mlp_step(struct hpu_device *dev, struct hpu_stream *s, struct mlp *m)
{
	static const struct hpu_adadelta_config opt = { .lr = 1.0, .rho = 0.9, .eps = 1e-6 };
	struct hpu_tensor *tmp = NULL, *zero = NULL;
	int ret = 0, i;

#define T(call) do { if (!ret) ret = (call); } while (0)
	T(hpu_tensor_empty(dev, HPU_DT_F32, 2, (int64_t[]){ B, HID }, &tmp));
	T(hpu_tensor_empty(dev, HPU_DT_F32, 2, (int64_t[]){ B, HID }, &zero));
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
	T(mlp_backward(s, m, m->g_logp, m->x));
	for (i = 0; i < NPARAMS; i++)
		T(hpu_op_adadelta(s, m->p[i], m->grad[i], m->sq[i], m->acc[i], &opt));
#undef T
	hpu_tensor_destroy(tmp);
	hpu_tensor_destroy(zero);
	return ret;
}

#define T(call) do { if (!ret) ret = (call); } while (0)

/*
 * The same model split as make_graphed_callables takes it: forward, then
 * backward; the loss and the update run outside (net_loss(), net_update()).
 */
struct net {
	struct hpu_device *dev;
	struct mlp m;
	struct hpu_tensor *x; /* the forward's input, which the backward reads */
	int fail;             /* the forward fails with it after recording its ops */
};

static inline int net_forward(void *ctx, struct hpu_stream *s, struct hpu_tensor *const *in,
		       struct hpu_tensor **out)
{
	static const int64_t shape[2] = { B, OUT };
	struct net *n = ctx;
	struct mlp *m = &n->m;
	int ret = 0;

	n->x = in[0];
	T(hpu_op_linear(s, m->h1, in[0], m->p[W1], m->p[B1]));
	T(hpu_op_unary(s, HPU_UN_RELU, m->a1, m->h1));
	T(hpu_op_dropout(s, m->d1, m->mask, m->a1, m->rng, P_DROP));
	T(hpu_op_linear(s, m->z, m->d1, m->p[W2], m->p[B2]));
	T(hpu_op_softmax(s, m->logp, m->z, 1, true));
	/* The output: a handle of its own on logp, which the backward reads. */
	T(hpu_tensor_view(m->logp, 2, shape, &out[0]));
	return ret ? ret : n->fail;
}

/* in: the gradient of logp; out: that of x.  The parameters' go to m->grad[]. */
static inline int net_backward(void *ctx, struct hpu_stream *s, struct hpu_tensor *const *in,
			struct hpu_tensor **out)
{
	struct net *n = ctx;
	struct mlp *m = &n->m;
	int ret = 0;

	T(hpu_tensor_empty(n->dev, HPU_DT_F32, 2, (int64_t[]){ B, IN }, &out[0]));
	T(mlp_backward(s, m, in[0], n->x));
	T(hpu_op_matmul(s, out[0], m->g_h1, m->p[W1]));
	return ret;
}

/* Outside the graphs, eagerly: the loss and its gradient, then the update. */
static inline int net_loss(struct hpu_stream *s, struct mlp *m, const struct hpu_tensor *logp)
{
	int ret = 0;

	T(hpu_op_nll_loss(s, m->loss, logp, m->y, HPU_LOSS_MEAN, -100));
	T(hpu_op_add(s, m->loss_sum, m->loss_sum, m->loss, 1));
	T(hpu_op_nll_loss_backward(s, m->g_logp, m->grad_loss, m->y, HPU_LOSS_MEAN, -100));
	return ret;
}

static inline int net_update(struct hpu_stream *s, struct mlp *m)
{
	static const struct hpu_adadelta_config opt = { .lr = 1.0, .rho = 0.9, .eps = 1e-6 };
	int ret = 0, i;

	for (i = 0; i < NPARAMS; i++)
		T(hpu_op_adadelta(s, m->p[i], m->grad[i], m->sq[i], m->acc[i], &opt));
	return ret;
}

static inline void net_init(struct hpu_device *dev, struct hpu_stream *s, struct net *n)
{
	lcg = 1;
	n->dev = dev;
	mlp_init(dev, s, &n->m);
}

#undef T

static inline void *read_all(struct hpu_stream *s, struct hpu_tensor *t, size_t *size)
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
static inline int same(struct __test_metadata *_metadata, struct hpu_stream *se, struct hpu_tensor *te,
		struct hpu_stream *sl, struct hpu_tensor *tl, const char *name)
{
	size_t ne, nl;
	void *e = read_all(se, te, &ne), *l = read_all(sl, tl, &nl);
	int ok = e && l && ne == nl && !memcmp(e, l, ne);

	EXPECT_TRUE(ok) TH_LOG("%s differs between the two runs (%s)", name, hpu_last_error());
	free(e);
	free(l);
	return ok;
}

/* The step's state after it, bitwise: parameters, loss sum, statistics and dropout mask. */
static inline void same_state(struct __test_metadata *_metadata, struct hpu_stream *se,
			      struct mlp *me, struct hpu_stream *sl, struct mlp *ml)
{
	unsigned int i;

	for (i = 0; i < NPARAMS; i++)
		same(_metadata, se, me->p[i], sl, ml->p[i], "a parameter");
	same(_metadata, se, me->loss_sum, sl, ml->loss_sum, "loss_sum");
	same(_metadata, se, me->stat, sl, ml->stat, "stat");
	same(_metadata, se, me->mask, sl, ml->mask, "the dropout mask");
}

static inline uint64_t metric(const char *name, const char *stat)
{
	uint64_t v = 0;

	hpu_metric_value(name, stat, &v);
	return v;
}

/*
 * Whether m2's mask (read on s) differs from the one of the previous call
 * (*prev, freed and replaced; NULL the first time): a replayed dropout
 * must draw a fresh mask, its RNG state living on the device.
 */
static inline int mask_is_fresh(struct hpu_stream *s, struct mlp *m, void **prev)
{
	size_t size;
	void *mask = read_all(s, m->mask, &size);
	int fresh = mask && (!*prev || memcmp(mask, *prev, size));

	free(*prev);
	*prev = mask;
	return fresh;
}

#endif /* HPU_MLP_H */
