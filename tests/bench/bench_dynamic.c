// SPDX-License-Identifier: MIT
/*
 * bench-dynamic: seed 003 - MNIST training in lazy mode with a batch size
 * that changes every step - run raw and bucketed.  The model is the seeds'
 * MLP (userspace/examples/mnist.c: Linear(784, 128), ReLU, Dropout(0.5),
 * Linear(128, 10), log-softmax, NLL, Adadelta at the seed's lr 1.0);
 * batches of 128 come from a pool of synthetic, deterministic data of
 * MNIST's shape (the dataset would need zlib here, and the counts do not
 * depend on the pixels).  As in the seed, step i trains on the first
 * min(i + 1, 127) rows of its batch, so sizes grow 1, 2, ..., 127 and then
 * stay: STEPS steps see 127 distinct sizes.
 *   raw:      each new size is a new graph, compiled once
 *   bucketed: the rows padded to hpu_bucket_size(n, 8, 128) - inputs with 0,
 *             targets with -100, which the loss ignores - by hpu_tensor_pad()
 *             run eagerly, outside the step's graph (recorded into it, its
 *             copy, shaped as the batch, would make every size a graph again)
 * Printed per run:
 *   dynamic_compiles_<run>            recipes compiled (graph_compilation.TotalNumber)
 *   dynamic_step_ms_<run>             mean wall time of a step, loading to done
 *   dynamic_compile_ms_<run>          host time spent compiling them, in all
 *   dynamic_recompile_warnings_<run>  graph_compilation.RecompileWarnings (one per site)
 * The recipe cache is cut to one recipe (of a size the bucketed run never
 * has) between the runs, so each compiles its own.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <hpu/hpu.h>
#include <hpu/hpu_graph.h>
#include <hpu/hpu_tensor.h>

enum { BATCH = 128, PIXELS = 784, HIDDEN = 128, CLASSES = 10, POOL = 4, STEPS = 160 };
enum { BUCKET_MIN = 8 };
#define DROPOUT 0.5

static void check(int ret, const char *what)
{
	if (ret < 0) {
		fprintf(stderr, "bench-dynamic: %s: %s (%d)\n", what, hpu_last_error(), ret);
		exit(1);
	}
}

/* Each libhpu call of the bench: a failure ends it, naming the call. */
#define TRY(call) check(call, #call)

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static uint64_t compile_stat(const char *stat)
{
	uint64_t v = 0;

	TRY(hpu_metric_value("graph_compilation", stat, &v));
	return v;
}

/* Seed 003's slicing: data[:min(i + 1, 127)]. */
static int64_t batch_of(int step)
{
	return step + 1 < BATCH - 1 ? step + 1 : BATCH - 1;
}

static struct hpu_tensor *tensor(struct hpu_device *dev, enum hpu_dt dt, unsigned int ndim,
				 int64_t d0, int64_t d1)
{
	struct hpu_tensor *t;

	TRY(hpu_tensor_empty(dev, dt, ndim, (int64_t[]){ d0, d1 }, &t));
	return t;
}

/* Term k of a hashed sequence, scaled to [lo, hi): stateless, so the same for both runs. */
static double term(uint64_t k, double lo, double hi)
{
	k *= 0x9e3779b97f4a7c15ull;
	k ^= k >> 32;
	k *= 0xd6e8feb86659fd93ull;
	k ^= k >> 32;
	return lo + (hi - lo) * (double)(k >> 11) / 0x1p53;
}

/* t's values from the sequence's terms from..from + numel. */
static void fill_terms(struct hpu_stream *s, struct hpu_tensor *t, uint64_t from, double lo,
		      double hi)
{
	int64_t n = hpu_tensor_numel(t), i;
	float *v = malloc((size_t)n * sizeof(*v));

	if (!v)
		check(-ENOMEM, "malloc");
	for (i = 0; i < n; i++)
		v[i] = (float)term(from + (uint64_t)i, lo, hi);
	TRY(hpu_tensor_copy_from_host(s, t, v, (size_t)n * sizeof(*v)));
	free(v);
}

/* POOL batches of MNIST's shape: normalised pixels (torchvision's range) and labels. */
struct pool {
	struct hpu_tensor *x, *y;
};

static void pool_init(struct hpu_device *dev, struct hpu_stream *s, struct pool *d)
{
	int64_t labels[POOL * BATCH];
	int i;

	d->x = tensor(dev, HPU_DT_F32, 2, POOL * BATCH, PIXELS);
	d->y = tensor(dev, HPU_DT_I64, 1, POOL * BATCH, 0);
	fill_terms(s, d->x, 1, -0.1307 / 0.3081, (1 - 0.1307) / 0.3081);
	/* Labels from other terms than the pixels'. */
	for (i = 0; i < POOL * BATCH; i++)
		labels[i] = (int64_t)term(1ull << 40 | (uint64_t)i, 0, CLASSES);
	TRY(hpu_tensor_copy_from_host(s, d->y, labels, sizeof(labels)));
}

enum { W1, B1, W2, B2, NPARAMS };

/* Per parameter: its value, gradient and Adadelta's two states. */
enum { VAL, GRAD, SQ, ACC, NSTATE };

struct model {
	struct hpu_tensor *w[NPARAMS][NSTATE];
	struct hpu_tensor *rng, *loss, *loss_sum, *grad_loss;
};

static const struct {
	int64_t rows, cols; /* cols 0: a vector */
	double bound;       /* torch.nn.Linear's: 1 / sqrt(fan_in) */
} params[NPARAMS] = {
	[W1] = { HIDDEN, PIXELS, 1 / 28.0 }, [B1] = { HIDDEN, 0, 1 / 28.0 },
	[W2] = { CLASSES, HIDDEN, 0.08838834764831845 }, [B2] = { CLASSES, 0, 0.08838834764831845 },
};

/* The same initial weights for each run. */
static void model_init(struct hpu_device *dev, struct hpu_stream *s, struct model *m)
{
	int64_t seed[2] = { 3, 0 };
	int i, k;

	for (i = 0; i < NPARAMS; i++) {
		for (k = 0; k < NSTATE; k++)
			m->w[i][k] = tensor(dev, HPU_DT_F32, params[i].cols ? 2 : 1, params[i].rows,
					    params[i].cols);
		fill_terms(s, m->w[i][VAL], (uint64_t)(i + 1) << 32, -params[i].bound,
			  params[i].bound);
		TRY(hpu_op_fill(s, m->w[i][SQ], 0));
		TRY(hpu_op_fill(s, m->w[i][ACC], 0));
	}
	m->rng = tensor(dev, HPU_DT_I64, 1, 2, 0);
	TRY(hpu_tensor_copy_from_host(s, m->rng, seed, sizeof(seed)));
	m->loss = tensor(dev, HPU_DT_F32, 0, 0, 0);
	m->loss_sum = tensor(dev, HPU_DT_F32, 0, 0, 0);
	m->grad_loss = tensor(dev, HPU_DT_F32, 0, 0, 0);
	TRY(hpu_op_fill(s, m->loss_sum, 0));
	TRY(hpu_op_fill(s, m->grad_loss, 1));
}

static void model_free(struct model *m)
{
	int i, k;

	for (i = 0; i < NPARAMS; i++)
		for (k = 0; k < NSTATE; k++)
			hpu_tensor_destroy(m->w[i][k]);
	hpu_tensor_destroy(m->rng);
	hpu_tensor_destroy(m->loss);
	hpu_tensor_destroy(m->loss_sum);
	hpu_tensor_destroy(m->grad_loss);
}

/* A step's activations and their gradients, [b, cols] each, made and dropped by the step. */
enum { H1, A1, D1, MASK, Z, LOGP, G_LOGP, G_Z, G_D1, G_A1, G_H1, G_Z_T, G_H1_T, NACTS };

static const struct {
	enum hpu_dt dt;
	int64_t cols;
} acts[G_Z_T] = {
	[H1] = { HPU_DT_F32, HIDDEN }, [A1] = { HPU_DT_F32, HIDDEN }, [D1] = { HPU_DT_F32, HIDDEN },
	[MASK] = { HPU_DT_U8, HIDDEN }, [Z] = { HPU_DT_F32, CLASSES },
	[LOGP] = { HPU_DT_F32, CLASSES }, [G_LOGP] = { HPU_DT_F32, CLASSES },
	[G_Z] = { HPU_DT_F32, CLASSES }, [G_D1] = { HPU_DT_F32, HIDDEN },
	[G_A1] = { HPU_DT_F32, HIDDEN }, [G_H1] = { HPU_DT_F32, HIDDEN },
};

/*
 * Forward, backward and Adadelta on x [b, 784], y [b], recorded: the
 * activations are gone before the step ends, so they live in the
 * recipe's workspace.
 */
static void train_step(struct hpu_device *dev, struct hpu_stream *s, struct model *m,
		       struct hpu_tensor *x, struct hpu_tensor *y)
{
	static const struct hpu_adadelta_config opt = { .lr = 1.0, .rho = 0.9, .eps = 1e-6 };
	int64_t b = hpu_tensor_numel(y);
	struct hpu_tensor *t[NACTS];
	int i;

	for (i = 0; i < G_Z_T; i++)
		t[i] = tensor(dev, acts[i].dt, 2, b, acts[i].cols);
	TRY(hpu_tensor_transpose(t[G_Z], 0, 1, &t[G_Z_T]));
	TRY(hpu_tensor_transpose(t[G_H1], 0, 1, &t[G_H1_T]));
	TRY(hpu_op_linear(s, t[H1], x, m->w[W1][VAL], m->w[B1][VAL]));
	TRY(hpu_op_unary(s, HPU_UN_RELU, t[A1], t[H1]));
	TRY(hpu_op_dropout(s, t[D1], t[MASK], t[A1], m->rng, DROPOUT));
	TRY(hpu_op_linear(s, t[Z], t[D1], m->w[W2][VAL], m->w[B2][VAL]));
	TRY(hpu_op_softmax(s, t[LOGP], t[Z], 1, true));
	TRY(hpu_op_nll_loss(s, m->loss, t[LOGP], y, HPU_LOSS_MEAN, -100));
	TRY(hpu_op_add(s, m->loss_sum, m->loss_sum, m->loss, 1));
	TRY(hpu_op_nll_loss_backward(s, t[G_LOGP], m->grad_loss, y, HPU_LOSS_MEAN, -100));
	TRY(hpu_op_softmax_backward(s, t[G_Z], t[G_LOGP], t[LOGP], 1, true));
	TRY(hpu_op_matmul(s, m->w[W2][GRAD], t[G_Z_T], t[D1]));
	TRY(hpu_op_reduce(s, HPU_RED_SUM, m->w[B2][GRAD], t[G_Z], 1));
	TRY(hpu_op_matmul(s, t[G_D1], t[G_Z], m->w[W2][VAL]));
	TRY(hpu_op_dropout_backward(s, t[G_A1], t[G_D1], t[MASK], DROPOUT));
	TRY(hpu_op_relu_backward(s, t[G_H1], t[G_A1], t[H1]));
	TRY(hpu_op_matmul(s, m->w[W1][GRAD], t[G_H1_T], x));
	TRY(hpu_op_reduce(s, HPU_RED_SUM, m->w[B1][GRAD], t[G_H1], 1));
	for (i = 0; i < NPARAMS; i++)
		TRY(hpu_op_adadelta(s, m->w[i][VAL], m->w[i][GRAD], m->w[i][SQ], m->w[i][ACC],
				    &opt));
	for (i = 0; i < NACTS; i++)
		hpu_tensor_destroy(t[i]);
}

/*
 * Step's rows of its batch in the pool, as views (raw), or padded to their
 * bucket: inputs with 0, targets with -100, by eager ops.
 */
static void load_rows(struct hpu_stream *s, const struct pool *d, int step, bool bucketed,
		      struct hpu_tensor **x, struct hpu_tensor **y)
{
	int64_t first = (int64_t)(step % POOL) * BATCH, n = batch_of(step), b;
	struct hpu_tensor *xv, *yv;

	TRY(hpu_tensor_slice(d->x, 0, first, first + n, 1, &xv));
	TRY(hpu_tensor_slice(d->y, 0, first, first + n, 1, &yv));
	if (!bucketed) {
		*x = xv;
		*y = yv;
		return;
	}
	b = hpu_bucket_size(n, BUCKET_MIN, BATCH);
	TRY(hpu_stream_set_lazy(s, false));
	TRY(hpu_tensor_pad(s, xv, 0, b, 0, x));
	TRY(hpu_tensor_pad(s, yv, 0, b, -100, y));
	TRY(hpu_stream_set_lazy(s, true));
	hpu_tensor_destroy(xv);
	hpu_tensor_destroy(yv);
}

/* STEPS steps from fresh weights; prints the run's BENCH lines. */
static void run(struct hpu_device *dev, struct hpu_stream *s, const struct pool *d, bool bucketed)
{
	const char *name = bucketed ? "bucketed" : "raw";
	uint64_t compiles = compile_stat("TotalNumber");
	uint64_t compile_ns = compile_stat("TotalTime");
	uint64_t warnings = compile_stat("RecompileWarnings");
	double total = 0, t0;
	struct model m;
	float loss_sum;
	int step;

	/* Nothing cached from before: each run compiles its own recipes. */
	TRY(hpu_recipe_cache_set_capacity(dev, 1));
	TRY(hpu_recipe_cache_set_capacity(dev, 64));
	model_init(dev, s, &m);
	TRY(hpu_stream_synchronize(s));
	TRY(hpu_stream_set_lazy(s, true));
	for (step = 0; step < STEPS; step++) {
		struct hpu_tensor *x, *y;

		t0 = now_ms();
		load_rows(s, d, step, bucketed, &x, &y);
		train_step(dev, s, &m, x, y);
		TRY(hpu_mark_step(s));
		TRY(hpu_stream_synchronize(s));
		total += now_ms() - t0;
		hpu_tensor_destroy(x);
		hpu_tensor_destroy(y);
	}
	TRY(hpu_tensor_copy_to_host(s, m.loss_sum, &loss_sum, sizeof(loss_sum)));
	TRY(hpu_stream_set_lazy(s, false));
	printf("dynamic %s: %d steps, mean loss %.4f\n", name, STEPS, loss_sum / STEPS);
	printf("BENCH dynamic_compiles_%s %llu compiles\n", name,
	       (unsigned long long)(compile_stat("TotalNumber") - compiles));
	printf("BENCH dynamic_step_ms_%s %.2f ms\n", name, total / STEPS);
	printf("BENCH dynamic_compile_ms_%s %.1f ms\n", name,
	       (double)(compile_stat("TotalTime") - compile_ns) / 1e6);
	printf("BENCH dynamic_recompile_warnings_%s %llu warnings\n", name,
	       (unsigned long long)(compile_stat("RecompileWarnings") - warnings));
	fflush(stdout);
	model_free(&m);
}

int main(void)
{
	struct hpu_device *dev;
	struct hpu_stream *s;
	struct pool d;

	TRY(hpu_device_open(0, &dev));
	TRY(hpu_stream_create(dev, &s));
	pool_init(dev, s, &d);
	printf("dynamic: batch sizes min(i + 1, %d) over %d steps (%lld distinct), buckets "
	       "hpu_bucket_size(n, %d, %d)\n", BATCH - 1, STEPS,
	       (long long)batch_of(STEPS - 1), BUCKET_MIN, BATCH);
	run(dev, s, &d, false);
	run(dev, s, &d, true);
	hpu_tensor_destroy(d.x);
	hpu_tensor_destroy(d.y);
	hpu_stream_destroy(s);
	hpu_device_close(dev);
	return 0;
}
