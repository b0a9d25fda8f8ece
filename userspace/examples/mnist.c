/* SPDX-License-Identifier: MIT */
/*
 * Trains an MLP on Fashion-MNIST with libhpu's ops, in one of the modes of
 * the HPU graphs documentation's MNIST example (-m):
 *   eager               every op enqueued on one stream as it is called
 *   lazy                a step's ops recorded; hpu_mark_step() launches them
 *                       as one recipe, from the recipe cache after the first
 *   graphed_callables   the model's forward and backward each an HPU graph
 *                       (hpu_make_graphed_callable()), loss and optimizer lazy
 *   capture_replay      the whole step captured once; each step copies the
 *                       batch into the static inputs and replays
 *   capture_bind        the same graph; each step replays it with the batch
 *                       bound in place of the static inputs, no copy
 *                       (hpu_graph_replay_with())
 *   module_cacher       the step as a module of hpu_module_cacher_call(),
 *                       one graph per batch shape
 * All run the same ops on the same values: their results are the same.
 * The host waits only to read the loss and accuracy at the end of an epoch
 * (and after each step with -t or -B, to time it).  The model, its
 * initialisation, batch size and optimizer are those of the example:
 *
 *   x [200, 784] -> Linear(784, 128) -> ReLU -> Dropout(0.5) -> Linear(128, 10)
 *     -> log_softmax -> nll_loss, Adadelta; batches in dataset order
 *
 * with the backward pass written out by hand.
 *
 *   mnist [-d DIR] [-e EPOCHS] [-s STEPS] [-l LR] [-t] [-B] [-S SEED] [-m MODE]
 *     -d DIR    the idx files (default /usr/share/datasets/fashion-mnist,
 *               Debian's dataset-fashion-mnist)
 *     -e        epochs (default 1)
 *     -s        at most this many steps per epoch (default: the whole set)
 *     -l        Adadelta's learning rate (default 0.1, the example's)
 *     -t        print each step's total and host time (synchronizes each step)
 *     -B        print BENCH lines: time to the first step (its graphs made and
 *               it run), compilations, mean step time of the others (enqueue
 *               to done), host time (its calls, which return without waiting
 *               for the device, from first to last, as a profile of the host
 *               shows them), the thread's CPU time over the same calls, accuracy
 *     -S        seed of the initial weights and of dropout
 *     -m        the mode (default eager); the others print the metrics at the end
 *
 * On Fashion-MNIST one epoch at lr 0.1 reaches 81.0-81.5% test accuracy
 * in a NumPy model of this very loop (four seeds); torch's own MNIST
 * example's lr 1.0 gives 83.6%.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include <hpu/hpu.h>
#include <hpu/hpu_graph.h>
#include <hpu/hpu_tensor.h>

#define BATCH 200
#define PIXELS 784
#define HIDDEN 128
#define CLASSES 10
#define DROPOUT 0.5
/* torchvision's MNIST normalisation, as the example uses. */
#define MEAN 0.1307f
#define STD 0.3081f

static void die(const char *what)
{
	fprintf(stderr, "mnist: %s: %s\n", what, hpu_last_error());
	exit(1);
}

/* Every libhpu call of the example: a failure ends it with the library's message. */
#define TRY(call)                      \
	do {                           \
		if ((call) < 0)        \
			die(#call);    \
	} while (0)

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* An idx file: big-endian magic (type and dim count), dims, then bytes. */
static uint8_t *read_idx(const char *dir, const char *name, unsigned int ndim, size_t *count)
{
	char path[512];
	unsigned char head[16];
	size_t n = 1, i;
	uint8_t *data;
	gzFile f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = gzopen(path, "rb");
	if (!f || gzread(f, head, 4 + 4 * ndim) != (int)(4 + 4 * ndim) || head[2] != 8 ||
	    head[3] != ndim) {
		fprintf(stderr, "mnist: %s: not an idx file of %u dims (install "
			"dataset-fashion-mnist or give -d)\n", path, ndim);
		exit(1);
	}
	for (i = 0; i < ndim; i++)
		n *= (size_t)head[4 + 4 * i] << 24 | head[5 + 4 * i] << 16 | head[6 + 4 * i] << 8 |
		     head[7 + 4 * i];
	data = malloc(n);
	if (!data || gzread(f, data, (unsigned int)n) != (int)n) {
		fprintf(stderr, "mnist: %s: short file\n", path);
		exit(1);
	}
	gzclose(f);
	*count = n;
	return data;
}

struct split {
	struct hpu_tensor *x, *y; /* [N, 784] F32 normalised, [N] I64 */
	int64_t n;
};

/* The whole split goes to device memory once; batches are views of it. */
static void load_split(struct hpu_device *dev, struct hpu_stream *s, const char *dir,
		       const char *images, const char *labels, struct split *out)
{
	size_t npix, nlab, i;
	uint8_t *pix = read_idx(dir, images, 3, &npix), *lab = read_idx(dir, labels, 1, &nlab);
	float *x = malloc(npix * sizeof(*x));
	int64_t *y = malloc(nlab * sizeof(*y));

	if (!x || !y || npix != nlab * PIXELS) {
		fprintf(stderr, "mnist: %s and %s do not match\n", images, labels);
		exit(1);
	}
	for (i = 0; i < npix; i++)
		x[i] = (pix[i] / 255.0f - MEAN) / STD;
	for (i = 0; i < nlab; i++)
		y[i] = lab[i];
	out->n = (int64_t)nlab;
	TRY(hpu_tensor_empty(dev, HPU_DT_F32, 2, (int64_t[]){ out->n, PIXELS }, &out->x));
	TRY(hpu_tensor_empty(dev, HPU_DT_I64, 1, (int64_t[]){ out->n }, &out->y));
	TRY(hpu_tensor_copy_from_host(s, out->x, x, npix * sizeof(*x)));
	TRY(hpu_tensor_copy_from_host(s, out->y, y, nlab * sizeof(*y)));
	free(pix);
	free(lab);
	free(x);
	free(y);
}

static struct hpu_tensor *tensor(struct hpu_device *dev, enum hpu_dt dtype, unsigned int ndim, ...)
{
	int64_t shape[HPU_MAX_DIMS];
	struct hpu_tensor *t;
	unsigned int i;
	va_list ap;

	va_start(ap, ndim);
	for (i = 0; i < ndim; i++)
		shape[i] = va_arg(ap, int64_t);
	va_end(ap);
	TRY(hpu_tensor_empty(dev, dtype, ndim, shape, &t));
	return t;
}

static struct hpu_tensor *transposed(struct hpu_tensor *t)
{
	struct hpu_tensor *v;

	TRY(hpu_tensor_transpose(t, 0, 1, &v));
	return v;
}

/* SplitMix64: the initial weights, reproducible from the seed. */
static uint64_t rng_state;

static double uniform(double lo, double hi)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return lo + (hi - lo) * (double)(z >> 11) / (double)(1ull << 53);
}

enum { W1, B1, W2, B2, NPARAMS };

struct model {
	struct hpu_tensor *p[NPARAMS], *grad[NPARAMS], *square_avg[NPARAMS], *acc_delta[NPARAMS];
	/* Activations and their gradients, one batch each, reused every step. */
	struct hpu_tensor *h1, *a1, *d1, *mask, *z, *logp, *loss, *grad_loss;
	struct hpu_tensor *g_logp, *g_z, *g_z_t, *g_d1, *g_a1, *g_h1, *g_h1_t;
	struct hpu_tensor *rng, *loss_sum;
	/* Evaluation: predictions, hits, their count. */
	struct hpu_tensor *pred, *hit, *hits, *correct;
};

/* torch.nn.Linear's initialisation: weight and bias uniform in +-1/sqrt(fan_in). */
static void init_linear(struct hpu_stream *s, struct hpu_tensor *w, struct hpu_tensor *b,
			int64_t out, int64_t in)
{
	float *v = malloc((size_t)(out * in) * sizeof(*v));
	double bound = 1 / sqrt((double)in);
	int64_t i;

	for (i = 0; i < out * in; i++)
		v[i] = (float)uniform(-bound, bound);
	TRY(hpu_tensor_copy_from_host(s, w, v, (size_t)(out * in) * sizeof(*v)));
	for (i = 0; i < out; i++)
		v[i] = (float)uniform(-bound, bound);
	TRY(hpu_tensor_copy_from_host(s, b, v, (size_t)out * sizeof(*v)));
	free(v);
}

static void model_init(struct hpu_device *dev, struct hpu_stream *s, struct model *m,
		       uint64_t seed)
{
	static const int64_t shapes[NPARAMS][2] = {
		[W1] = { HIDDEN, PIXELS }, [B1] = { HIDDEN, 0 },
		[W2] = { CLASSES, HIDDEN }, [B2] = { CLASSES, 0 },
	};
	int64_t rng[2] = { (int64_t)seed, 0 };
	unsigned int i;

	for (i = 0; i < NPARAMS; i++) {
		unsigned int nd = shapes[i][1] ? 2 : 1;
		struct hpu_tensor **each[] = { &m->p[i], &m->grad[i], &m->square_avg[i],
					       &m->acc_delta[i] };
		size_t k;

		for (k = 0; k < 4; k++)
			TRY(hpu_tensor_empty(dev, HPU_DT_F32, nd, shapes[i], each[k]));
		TRY(hpu_op_fill(s, m->square_avg[i], 0));
		TRY(hpu_op_fill(s, m->acc_delta[i], 0));
	}
	rng_state = seed;
	init_linear(s, m->p[W1], m->p[B1], HIDDEN, PIXELS);
	init_linear(s, m->p[W2], m->p[B2], CLASSES, HIDDEN);
	m->h1 = tensor(dev, HPU_DT_F32, 2, (int64_t)BATCH, (int64_t)HIDDEN);
	m->a1 = tensor(dev, HPU_DT_F32, 2, (int64_t)BATCH, (int64_t)HIDDEN);
	m->d1 = tensor(dev, HPU_DT_F32, 2, (int64_t)BATCH, (int64_t)HIDDEN);
	m->mask = tensor(dev, HPU_DT_U8, 2, (int64_t)BATCH, (int64_t)HIDDEN);
	m->z = tensor(dev, HPU_DT_F32, 2, (int64_t)BATCH, (int64_t)CLASSES);
	m->logp = tensor(dev, HPU_DT_F32, 2, (int64_t)BATCH, (int64_t)CLASSES);
	m->loss = tensor(dev, HPU_DT_F32, 0);
	m->grad_loss = tensor(dev, HPU_DT_F32, 0);
	m->g_logp = tensor(dev, HPU_DT_F32, 2, (int64_t)BATCH, (int64_t)CLASSES);
	m->g_z = tensor(dev, HPU_DT_F32, 2, (int64_t)BATCH, (int64_t)CLASSES);
	m->g_z_t = transposed(m->g_z);
	m->g_d1 = tensor(dev, HPU_DT_F32, 2, (int64_t)BATCH, (int64_t)HIDDEN);
	m->g_a1 = tensor(dev, HPU_DT_F32, 2, (int64_t)BATCH, (int64_t)HIDDEN);
	m->g_h1 = tensor(dev, HPU_DT_F32, 2, (int64_t)BATCH, (int64_t)HIDDEN);
	m->g_h1_t = transposed(m->g_h1);
	m->rng = tensor(dev, HPU_DT_I64, 1, (int64_t)2);
	TRY(hpu_tensor_copy_from_host(s, m->rng, rng, sizeof(rng)));
	m->loss_sum = tensor(dev, HPU_DT_F32, 0);
	m->pred = tensor(dev, HPU_DT_I64, 1, (int64_t)BATCH);
	m->hit = tensor(dev, HPU_DT_F32, 1, (int64_t)BATCH);
	m->hits = tensor(dev, HPU_DT_F32, 0);
	m->correct = tensor(dev, HPU_DT_F32, 0);
	TRY(hpu_op_fill(s, m->grad_loss, 1));
}

static void model_free(struct model *m)
{
	struct hpu_tensor **all = (struct hpu_tensor **)m;
	size_t i;

	for (i = 0; i < sizeof(*m) / sizeof(*all); i++)
		hpu_tensor_destroy(all[i]);
}

static void batch_views(const struct split *d, int64_t step, struct hpu_tensor **x,
			struct hpu_tensor **y)
{
	TRY(hpu_tensor_slice(d->x, 0, step * BATCH, (step + 1) * BATCH, 1, x));
	TRY(hpu_tensor_slice(d->y, 0, step * BATCH, (step + 1) * BATCH, 1, y));
}

/* The model: x [N, 784] -> log-probabilities in m->logp. */
static void model_forward(struct hpu_stream *s, struct model *m, struct hpu_tensor *x)
{
	TRY(hpu_op_linear(s, m->h1, x, m->p[W1], m->p[B1]));
	TRY(hpu_op_unary(s, HPU_UN_RELU, m->a1, m->h1));
	TRY(hpu_op_dropout(s, m->d1, m->mask, m->a1, m->rng, DROPOUT));
	TRY(hpu_op_linear(s, m->z, m->d1, m->p[W2], m->p[B2]));
	TRY(hpu_op_softmax(s, m->logp, m->z, 1, true));
}

/* The loss of m->logp against y (summed into loss_sum) and its gradient in m->g_logp. */
static void model_loss(struct hpu_stream *s, struct model *m, struct hpu_tensor *y)
{
	TRY(hpu_op_nll_loss(s, m->loss, m->logp, y, HPU_LOSS_MEAN, -100));
	TRY(hpu_op_add(s, m->loss_sum, m->loss_sum, m->loss, 1));
	TRY(hpu_op_nll_loss_backward(s, m->g_logp, m->grad_loss, y, HPU_LOSS_MEAN, -100));
}

/* The hand-written backward from g_logp to the parameters' gradients; x the forward's input. */
static void model_backward(struct hpu_stream *s, struct model *m, struct hpu_tensor *x,
			   struct hpu_tensor *g_logp)
{
	TRY(hpu_op_softmax_backward(s, m->g_z, g_logp, m->logp, 1, true));
	TRY(hpu_op_matmul(s, m->grad[W2], m->g_z_t, m->d1));
	TRY(hpu_op_reduce(s, HPU_RED_SUM, m->grad[B2], m->g_z, 1));
	TRY(hpu_op_matmul(s, m->g_d1, m->g_z, m->p[W2]));
	TRY(hpu_op_dropout_backward(s, m->g_a1, m->g_d1, m->mask, DROPOUT));
	TRY(hpu_op_relu_backward(s, m->g_h1, m->g_a1, m->h1));
	TRY(hpu_op_matmul(s, m->grad[W1], m->g_h1_t, x));
	TRY(hpu_op_reduce(s, HPU_RED_SUM, m->grad[B1], m->g_h1, 1));
}

static void optimizer_step(struct hpu_stream *s, struct model *m,
			   const struct hpu_adadelta_config *opt)
{
	unsigned int i;

	for (i = 0; i < NPARAMS; i++)
		TRY(hpu_op_adadelta(s, m->p[i], m->grad[i], m->square_avg[i], m->acc_delta[i], opt));
}

/* One training step, enqueued: forward, hand-written backward, Adadelta. */
static void train_step(struct hpu_stream *s, struct model *m, struct hpu_tensor *x,
		       struct hpu_tensor *y, const struct hpu_adadelta_config *opt)
{
	model_forward(s, m, x);
	model_loss(s, m, y);
	model_backward(s, m, x, m->g_logp);
	optimizer_step(s, m, opt);
}

static float read_scalar(struct hpu_stream *s, struct hpu_tensor *t)
{
	float v;

	TRY(hpu_tensor_copy_to_host(s, t, &v, sizeof(v)));
	return v;
}

/* Test accuracy, in eval mode (no dropout); counted on the device, read once. */
static double evaluate(struct hpu_stream *s, struct model *m, const struct split *test)
{
	int64_t step, steps = test->n / BATCH;
	struct hpu_tensor *x, *y;

	TRY(hpu_op_fill(s, m->correct, 0));
	for (step = 0; step < steps; step++) {
		batch_views(test, step, &x, &y);
		TRY(hpu_op_linear(s, m->h1, x, m->p[W1], m->p[B1]));
		TRY(hpu_op_unary(s, HPU_UN_RELU, m->a1, m->h1));
		TRY(hpu_op_linear(s, m->z, m->a1, m->p[W2], m->p[B2]));
		TRY(hpu_op_reduce(s, HPU_RED_ARGMAX, m->pred, m->z, 1 << 1));
		TRY(hpu_op_binary(s, HPU_BIN_EQ, m->hit, m->pred, y));
		TRY(hpu_op_reduce(s, HPU_RED_SUM, m->hits, m->hit, 1));
		TRY(hpu_op_add(s, m->correct, m->correct, m->hits, 1));
		/* One graph per batch in lazy mode; a no-op in eager mode. */
		TRY(hpu_mark_step(s));
		hpu_tensor_destroy(x);
		hpu_tensor_destroy(y);
	}
	return read_scalar(s, m->correct) / (double)(steps * BATCH);
}

enum mode { EAGER, LAZY, GRAPHED, CAPTURE, CACHER, BIND, MODES };

static const char *const mode_names[MODES] = {
	[EAGER] = "eager", [LAZY] = "lazy", [GRAPHED] = "graphed_callables",
	[CAPTURE] = "capture_replay", [CACHER] = "module_cacher", [BIND] = "capture_bind",
};

/* How the steps run, and what each mode keeps for it. */
struct trainer {
	enum mode mode;
	struct hpu_stream *s;
	struct model *m;
	const struct hpu_adadelta_config *opt;
	struct hpu_tensor *x, *y;  /* capture_replay, capture_bind: the graph's static inputs */
	struct hpu_tensor *x_seen; /* graphed_callables: the forward's input, for the backward */
	struct hpu_graph *graph;
	struct hpu_graphed *graphed;
	struct hpu_module_cacher *cacher;
};

/* graphed_callables: the model's forward and backward; loss and Adadelta run lazily outside. */
static int graphed_forward(void *ctx, struct hpu_stream *s, struct hpu_tensor *const *in,
			   struct hpu_tensor **out)
{
	struct trainer *t = ctx;

	t->x_seen = in[0];
	model_forward(s, t->m, in[0]);
	return hpu_tensor_view(t->m->logp, 2, (int64_t[]){ BATCH, CLASSES }, &out[0]);
}

static int graphed_backward(void *ctx, struct hpu_stream *s, struct hpu_tensor *const *in,
			    struct hpu_tensor **out)
{
	struct trainer *t = ctx;

	(void)out;
	model_backward(s, t->m, t->x_seen, in[0]);
	return 0;
}

/* module_cacher: the whole step is the module, its graphs keyed by the batch's shape. */
static int cached_step(void *ctx, struct hpu_stream *s, struct hpu_tensor *const *in,
		       const void *args, struct hpu_tensor **out)
{
	struct trainer *t = ctx;

	(void)args;
	(void)out;
	train_step(s, t->m, in[0], in[1], t->opt);
	return 0;
}

static void trainer_init(struct hpu_device *dev, struct trainer *t, const struct split *train)
{
	struct hpu_tensor *x, *y;

	switch (t->mode) {
	case EAGER:
		break;
	case LAZY:
		TRY(hpu_stream_set_lazy(t->s, true));
		break;
	case GRAPHED: {
		const struct hpu_graphed_config config = {
			.forward = graphed_forward, .backward = graphed_backward, .ctx = t,
			.num_inputs = 1, .num_outputs = 1,
		};

		/* No warm-up: nothing here needs one, and the steps stay those of eager mode. */
		batch_views(train, 0, &x, &y);
		TRY(hpu_stream_set_lazy(t->s, true));
		TRY(hpu_make_graphed_callable(t->s, &config, &x, &t->graphed));
		hpu_tensor_destroy(x);
		hpu_tensor_destroy(y);
		break;
	}
	case CAPTURE:
	case BIND:
		/* The seed's loop: copy each batch into the static inputs, replay. */
		TRY(hpu_tensor_empty(dev, HPU_DT_F32, 2, (int64_t[]){ BATCH, PIXELS }, &t->x));
		TRY(hpu_tensor_empty(dev, HPU_DT_I64, 1, (int64_t[]){ BATCH }, &t->y));
		TRY(hpu_graph_create(dev, &t->graph));
		TRY(hpu_graph_capture_begin(t->graph, t->s));
		train_step(t->s, t->m, t->x, t->y, t->opt);
		TRY(hpu_graph_capture_end(t->graph));
		break;
	case CACHER: {
		const struct hpu_module_cacher_config config = {
			.fn = cached_step, .ctx = t, .num_inputs = 2, .max_graphs = 10,
		};

		TRY(hpu_module_cacher_create(dev, &config, &t->cacher));
		break;
	}
	default:
		break;
	}
}

static void trainer_step(struct trainer *t, struct hpu_tensor *x, struct hpu_tensor *y)
{
	struct hpu_tensor *in[2] = { x, y }, *logp;

	switch (t->mode) {
	case EAGER:
	case LAZY:
		train_step(t->s, t->m, x, y, t->opt);
		TRY(hpu_mark_step(t->s));
		break;
	case GRAPHED:
		/* The static output logp is m->logp's memory: the loss reads it there. */
		TRY(hpu_graphed_forward(t->graphed, t->s, &x, &logp));
		model_loss(t->s, t->m, y);
		TRY(hpu_graphed_backward(t->graphed, t->s, &t->m->g_logp, NULL));
		optimizer_step(t->s, t->m, t->opt);
		TRY(hpu_mark_step(t->s));
		break;
	case CAPTURE:
		TRY(hpu_op_unary(t->s, HPU_UN_COPY, t->x, x));
		TRY(hpu_op_unary(t->s, HPU_UN_COPY, t->y, y));
		TRY(hpu_graph_replay(t->graph, t->s));
		break;
	case BIND: {
		const struct hpu_graph_input bind[] = { { t->x, x }, { t->y, y } };

		TRY(hpu_graph_replay_with(t->graph, t->s, bind, 2));
		break;
	}
	case CACHER:
		TRY(hpu_module_cacher_call(t->cacher, t->s, in, NULL, 0, NULL));
		break;
	default:
		break;
	}
}

static void trainer_fini(struct trainer *t)
{
	hpu_module_cacher_destroy(t->cacher);
	hpu_graphed_destroy(t->graphed);
	hpu_graph_destroy(t->graph);
	hpu_tensor_destroy(t->x);
	hpu_tensor_destroy(t->y);
}

struct options {
	const char *dir;
	unsigned int epochs;
	long steps;
	double lr;
	bool per_step, bench;
	enum mode mode;
	uint64_t seed;
};

static void usage(void)
{
	fprintf(stderr, "usage: mnist [-d DIR] [-e EPOCHS] [-s STEPS] [-l LR] [-t] [-B] [-S SEED] "
		"[-m eager|lazy|graphed_callables|capture_replay|module_cacher|capture_bind]\n");
	exit(2);
}

static void parse(int argc, char **argv, struct options *o)
{
	int c;

	*o = (struct options){ .dir = "/usr/share/datasets/fashion-mnist", .epochs = 1,
			       .steps = -1, .lr = 0.1, .seed = 1 };
	while ((c = getopt(argc, argv, "d:e:s:l:tBS:m:")) != -1) {
		switch (c) {
		case 'd': o->dir = optarg; break;
		case 'e': o->epochs = (unsigned int)atoi(optarg); break;
		case 's': o->steps = atol(optarg); break;
		case 'l': o->lr = atof(optarg); break;
		case 't': o->per_step = true; break;
		case 'B': o->bench = true; break;
		case 'S': o->seed = strtoull(optarg, NULL, 0); break;
		case 'm':
			for (o->mode = 0; o->mode < MODES && strcmp(optarg, mode_names[o->mode]);
			     o->mode++)
				;
			if (o->mode == MODES)
				usage();
			break;
		default: usage();
		}
	}
	if (optind != argc || !o->epochs)
		usage();
}

/*
 * CPU time of this thread.  Each read is a system call, which under the
 * emulator costs several microseconds: the host time is read on the
 * monotonic clock (no system call) inside these reads.
 */
static double cpu_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
	struct hpu_adadelta_config opt = { .rho = 0.9, .eps = 1e-6 };
	double total_us = 0, host_us = 0, cpu_total_us = 0, accuracy = 0, first_us = 0, start_us;
	struct hpu_device *dev;
	struct split train, test;
	struct model m = { 0 };
	struct trainer t = { 0 };
	long timed = 0;
	bool timing;
	unsigned int epoch;
	struct options o;

	parse(argc, argv, &o);
	opt.lr = o.lr;
	TRY(hpu_device_open(0, &dev));
	t = (struct trainer){ .mode = o.mode, .m = &m, .opt = &opt };
	TRY(hpu_stream_create(dev, &t.s));
	load_split(dev, t.s, o.dir, "train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
		   &train);
	load_split(dev, t.s, o.dir, "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz", &test);
	model_init(dev, t.s, &m, o.seed);
	TRY(hpu_stream_synchronize(t.s));
	timing = o.per_step || o.bench;
	/* Time to the first step: its graphs captured and compiled (or loaded), it run. */
	start_us = now_us();
	trainer_init(dev, &t, &train);

	for (epoch = 1; epoch <= o.epochs; epoch++) {
		int64_t step, steps = train.n / BATCH;

		if (o.steps >= 0 && o.steps < steps)
			steps = o.steps;
		TRY(hpu_op_fill(t.s, m.loss_sum, 0));
		for (step = 0; step < steps; step++) {
			double c0 = timing ? cpu_us() : 0, t0 = now_us(), host, cpu, t2;
			struct hpu_tensor *x, *y;

			batch_views(&train, step, &x, &y);
			trainer_step(&t, x, y);
			hpu_tensor_destroy(x);
			hpu_tensor_destroy(y);
			if (!timing)
				continue;
			host = now_us() - t0;
			cpu = cpu_us() - c0;
			TRY(hpu_stream_synchronize(t.s));
			t2 = now_us();
			if (o.per_step)
				printf("step %lld: total %.0f us, host %.0f us, CPU %.0f us\n",
				       (long long)step + 1, t2 - t0, host, cpu);
			if (!step && epoch == 1)
				first_us = t2 - start_us;
			/* The first step pays for first touches of memory and compiles: not timed. */
			if (step || epoch > 1) {
				total_us += t2 - t0;
				host_us += host;
				cpu_total_us += cpu;
				timed++;
			}
		}
		accuracy = evaluate(t.s, &m, &test);
		printf("epoch %u: train loss %.4f, test accuracy %.4f\n", epoch,
		       steps ? read_scalar(t.s, m.loss_sum) / (double)steps : 0.0, accuracy);
		fflush(stdout);
	}
	if (o.bench && first_us > 0) {
		uint64_t compiles = 0;

		hpu_metric_value("graph_compilation", "TotalNumber", &compiles);
		printf("BENCH mnist_%s_first_step_ms %.3f ms\n", mode_names[o.mode], first_us / 1e3);
		printf("BENCH mnist_%s_compiles %" PRIu64 " compiles\n", mode_names[o.mode],
		       compiles);
	}
	if (o.bench && timed) {
		printf("BENCH mnist_%s_step_ms %.3f ms\n", mode_names[o.mode],
		       total_us / (double)timed / 1e3);
		printf("BENCH mnist_%s_host_ms %.3f ms\n", mode_names[o.mode],
		       host_us / (double)timed / 1e3);
		printf("BENCH mnist_%s_host_cpu_ms %.3f ms\n", mode_names[o.mode],
		       cpu_total_us / (double)timed / 1e3);
	}
	if (o.bench)
		printf("BENCH mnist_%s_accuracy %.4f fraction\n", mode_names[o.mode], accuracy);
	if (o.mode != EAGER)
		TRY(hpu_metrics_dump_json("-"));
	trainer_fini(&t);
	model_free(&m);
	hpu_tensor_destroy(train.x);
	hpu_tensor_destroy(train.y);
	hpu_tensor_destroy(test.x);
	hpu_tensor_destroy(test.y);
	hpu_stream_destroy(t.s);
	hpu_device_close(dev);
	return 0;
}
