// SPDX-License-Identifier: MIT
/*
 * Graphed callables and the module cacher against the live device
 * (<hpu/hpu_graph.h>).  The seeds' MLP with its forward and backward
 * graphed, loss and optimizer eager around them, trains bitwise as the same
 * forward and backward run eagerly (and as hpu_mlp.h's step), with new
 * batches and fresh dropout masks each step.  A module cacher captures one
 * graph per input shape and per args, replays it for known ones with
 * results bitwise those of eager mode, and evicts the least recently
 * called graphs beyond max_graphs or its memory budget.  Bad arguments and
 * inputs fail with -EINVAL; a callable's failure is returned and leaves
 * no capture behind.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hpu/hpu.h>
#include <hpu/hpu_graph.h>
#include <hpu/hpu_tensor.h>

#include "kselftest_harness.h"

#include "hpu_mlp.h"

#define T(call) do { if (!ret) ret = (call); } while (0)

/* Dropout's generator back at mlp_init()'s seed. */
static int rng_reset(struct hpu_stream *s, struct mlp *m)
{
	int64_t seed[2] = { 42, 0 };

	return hpu_tensor_copy_from_host(s, m->rng, seed, sizeof(seed));
}

static const struct hpu_graphed_config net_config = {
	.forward = net_forward, .backward = net_backward,
	.num_inputs = 1, .num_outputs = 1, .num_grad_inputs = 1, .warmup = 2,
};

FIXTURE(graphed) {
	struct hpu_device *dev;
	struct hpu_stream *eager, *s;
	struct net ne, ng;
	struct hpu_graphed *g;
};

FIXTURE_SETUP(graphed)
{
	ASSERT_EQ(0, hpu_device_open(0, &self->dev)) TH_LOG("%s", hpu_last_error());
	ASSERT_EQ(0, hpu_stream_create(self->dev, &self->eager));
	ASSERT_EQ(0, hpu_stream_create(self->dev, &self->s));
	net_init(self->dev, self->eager, &self->ne);
	net_init(self->dev, self->s, &self->ng);
}

FIXTURE_TEARDOWN(graphed)
{
	hpu_graphed_destroy(self->g);
	mlp_free(&self->ne.m);
	mlp_free(&self->ng.m);
	hpu_stream_destroy(self->eager);
	hpu_stream_destroy(self->s);
	hpu_device_close(self->dev);
}

TEST_F(graphed, mlp_trains_bitwise_as_eager)
{
	struct hpu_graphed_config config = net_config;
	struct mlp *me = &self->ne.m, *mg = &self->ng.m, ms = { 0 };
	struct hpu_tensor *logp_e, *logp_g, *logp_first = NULL, *gx_e, *gx_g;
	uint64_t captures = metric("hpu_graph", "Captures");
	void *mask_prev = NULL;
	unsigned int step, i;

	/* A third model runs hpu_mlp.h's whole step: the split one is the same. */
	lcg = 1;
	mlp_init(self->dev, self->eager, &ms);
	/* The samples are a batch the steps never see; warm-up draws dropout masks. */
	config.ctx = &self->ng;
	ASSERT_EQ(0, load_batch(self->s, mg, 99));
	ASSERT_EQ(0, hpu_make_graphed_callable(self->s, &config, &mg->x, &self->g))
		TH_LOG("%s", hpu_last_error());
	EXPECT_EQ(2, metric("hpu_graph", "Captures") - captures);
	ASSERT_EQ(0, rng_reset(self->s, mg));
	for (step = 0; step < STEPS; step++) {
		ASSERT_EQ(0, load_batch(self->eager, me, step));
		ASSERT_EQ(0, load_batch(self->eager, &ms, step));
		ASSERT_EQ(0, load_batch(self->s, mg, step));
		ASSERT_EQ(0, mlp_step(self->dev, self->eager, &ms));

		ASSERT_EQ(0, net_forward(&self->ne, self->eager, &me->x, &logp_e));
		ASSERT_EQ(0, net_loss(self->eager, me, logp_e));
		ASSERT_EQ(0, net_backward(&self->ne, self->eager, &me->g_logp, &gx_e));
		ASSERT_EQ(0, net_update(self->eager, me));

		ASSERT_EQ(0, hpu_graphed_forward(self->g, self->s, &mg->x, &logp_g))
			TH_LOG("%s", hpu_last_error());
		ASSERT_EQ(0, net_loss(self->s, mg, logp_g));
		ASSERT_EQ(0, hpu_graphed_backward(self->g, self->s, &mg->g_logp, &gx_g))
			TH_LOG("%s", hpu_last_error());
		ASSERT_EQ(0, net_update(self->s, mg));

		/* The static output, the graphed callable's: the same handle every step. */
		if (!logp_first)
			logp_first = logp_g;
		EXPECT_EQ(logp_first, logp_g);
		same(_metadata, self->eager, logp_e, self->s, logp_g, "logp");
		same(_metadata, self->eager, gx_e, self->s, gx_g, "the gradient of x");
		same(_metadata, self->eager, me->loss_sum, self->s, mg->loss_sum, "loss_sum");
		same(_metadata, self->eager, me->mask, self->s, mg->mask, "the dropout mask");
		for (i = 0; i < NPARAMS; i++) {
			same(_metadata, self->eager, me->p[i], self->s, mg->p[i], "a parameter");
			same(_metadata, self->eager, ms.p[i], self->s, mg->p[i],
			     "a parameter against mlp_step()");
		}
		EXPECT_TRUE(mask_is_fresh(self->s, mg, &mask_prev));
		hpu_tensor_destroy(logp_e);
		hpu_tensor_destroy(gx_e);
	}
	free(mask_prev);
	/* Captured once: the steps only replayed. */
	EXPECT_EQ(2, metric("hpu_graph", "Captures") - captures);
	mlp_free(&ms);
}

TEST_F(graphed, wrong_inputs_and_config_fail)
{
	struct hpu_graphed_config config = net_config;
	struct mlp *mg = &self->ng.m;
	struct hpu_tensor *half = tensor(self->dev, HPU_DT_F32, B / 2, IN);
	struct hpu_tensor *ints = tensor(self->dev, HPU_DT_I64, B, IN);
	struct hpu_tensor *out[1], *nul = NULL;
	struct hpu_graphed *g = NULL;

	config.ctx = &self->ng;
	EXPECT_EQ(-EINVAL, hpu_make_graphed_callable(self->s, NULL, &mg->x, &g));
	EXPECT_EQ(-EINVAL, hpu_make_graphed_callable(NULL, &config, &mg->x, &g));
	EXPECT_EQ(-EINVAL, hpu_make_graphed_callable(self->s, &config, &mg->x, NULL));
	EXPECT_EQ(-EINVAL, hpu_make_graphed_callable(self->s, &config, NULL, &g));
	EXPECT_EQ(-EINVAL, hpu_make_graphed_callable(self->s, &config, &nul, &g));
	config.forward = NULL;
	EXPECT_EQ(-EINVAL, hpu_make_graphed_callable(self->s, &config, &mg->x, &g));
	config = net_config;
	config.backward = NULL;
	EXPECT_EQ(-EINVAL, hpu_make_graphed_callable(self->s, &config, &mg->x, &g));
	ksft_print_msg("%s\n", hpu_last_error());
	EXPECT_EQ(NULL, g);

	/* A forward that fails: its error is returned, and the stream is not left capturing. */
	config = net_config;
	config.ctx = &self->ng;
	config.warmup = 0;
	self->ng.fail = -EIO;
	EXPECT_EQ(-EIO, hpu_make_graphed_callable(self->s, &config, &mg->x, &g));
	EXPECT_EQ(NULL, g);
	EXPECT_EQ(0, hpu_stream_synchronize(self->s)) TH_LOG("%s", hpu_last_error());
	self->ng.fail = 0;

	/* Forward only: no backward to replay. */
	config.backward = NULL;
	config.num_grad_inputs = 0;
	ASSERT_EQ(0, hpu_make_graphed_callable(self->s, &config, &mg->x, &self->g))
		TH_LOG("%s", hpu_last_error());
	EXPECT_EQ(-EINVAL, hpu_graphed_backward(self->g, self->s, &mg->g_logp, out));
	EXPECT_EQ(-EINVAL, hpu_graphed_forward(self->g, self->s, &half, out));
	ksft_print_msg("%s\n", hpu_last_error());
	EXPECT_NE(NULL, strstr(hpu_last_error(), "inputs[0]"));
	EXPECT_NE(NULL, strstr(hpu_last_error(), "[16, 64]"));
	EXPECT_NE(NULL, strstr(hpu_last_error(), "[32, 64]"));
	EXPECT_EQ(-EINVAL, hpu_graphed_forward(self->g, self->s, &ints, out));
	ksft_print_msg("%s\n", hpu_last_error());
	EXPECT_EQ(-EINVAL, hpu_graphed_forward(self->g, self->s, &nul, out));
	EXPECT_EQ(-EINVAL, hpu_graphed_forward(self->g, self->s, NULL, out));
	EXPECT_EQ(-EINVAL, hpu_graphed_forward(self->g, self->s, &mg->x, NULL));
	EXPECT_EQ(-EINVAL, hpu_graphed_forward(self->g, NULL, &mg->x, out));
	EXPECT_EQ(-EINVAL, hpu_graphed_forward(NULL, self->s, &mg->x, out));
	EXPECT_EQ(-EINVAL, hpu_graphed_backward(NULL, self->s, &mg->g_logp, out));
	/* Nothing was enqueued by the failures: a good call still works. */
	ASSERT_EQ(0, hpu_graphed_forward(self->g, self->s, &mg->x, out));
	ASSERT_EQ(0, hpu_stream_synchronize(self->s)) TH_LOG("%s", hpu_last_error());
	hpu_graphed_destroy(NULL);
	hpu_tensor_destroy(half);
	hpu_tensor_destroy(ints);
}

/*
 * The cacher's module: log_softmax(linear(relu(linear(x)) * scale)) on
 * hpu_mlp.h's parameters, for any batch size; args is the scale (a double).
 */
struct module {
	struct hpu_device *dev;
	struct mlp m;
	int fail; /* returned after recording the ops */
};

static int module_fn(void *ctx, struct hpu_stream *s, struct hpu_tensor *const *in,
		     const void *args, struct hpu_tensor **out)
{
	struct module *mod = ctx;
	struct mlp *m = &mod->m;
	int64_t rows = hpu_tensor_numel(in[0]) / IN;
	struct hpu_tensor *h = tensor(mod->dev, HPU_DT_F32, rows, HID);
	struct hpu_tensor *z = tensor(mod->dev, HPU_DT_F32, rows, OUT);
	int ret = 0;

	out[0] = tensor(mod->dev, HPU_DT_F32, rows, OUT);
	T(hpu_op_linear(s, h, in[0], m->p[W1], m->p[B1]));
	T(hpu_op_unary(s, HPU_UN_RELU, h, h));
	T(hpu_op_binary_scalar(s, HPU_BIN_MUL, h, h, *(const double *)args));
	T(hpu_op_linear(s, z, h, m->p[W2], m->p[B2]));
	T(hpu_op_softmax(s, out[0], z, 1, true));
	hpu_tensor_destroy(h);
	hpu_tensor_destroy(z);
	return ret ? ret : mod->fail;
}

static const unsigned int rows[3] = { 4, 8, 16 };

FIXTURE(cacher) {
	struct hpu_device *dev;
	struct hpu_stream *eager, *s;
	struct module mod;
	struct hpu_tensor *x[3]; /* a batch of each size in rows[] */
	struct hpu_module_cacher_config config;
	struct hpu_module_cacher *c;
};

FIXTURE_SETUP(cacher)
{
	unsigned int i;

	ASSERT_EQ(0, hpu_device_open(0, &self->dev)) TH_LOG("%s", hpu_last_error());
	ASSERT_EQ(0, hpu_stream_create(self->dev, &self->eager));
	ASSERT_EQ(0, hpu_stream_create(self->dev, &self->s));
	lcg = 1;
	self->mod.dev = self->dev;
	mlp_init(self->dev, self->eager, &self->mod.m);
	for (i = 0; i < 3; i++) {
		self->x[i] = tensor(self->dev, HPU_DT_F32, rows[i], IN);
		fill_random(self->eager, self->x[i]);
	}
	ASSERT_EQ(0, hpu_stream_synchronize(self->eager));
	self->config = (struct hpu_module_cacher_config){
		.fn = module_fn, .ctx = &self->mod, .num_inputs = 1, .num_outputs = 1,
		.max_graphs = 8,
	};
}

FIXTURE_TEARDOWN(cacher)
{
	unsigned int i;

	hpu_module_cacher_destroy(self->c);
	for (i = 0; i < 3; i++)
		hpu_tensor_destroy(self->x[i]);
	mlp_free(&self->mod.m);
	hpu_stream_destroy(self->eager);
	hpu_stream_destroy(self->s);
	hpu_device_close(self->dev);
}

static struct hpu_module_cacher_stats stats_of(struct hpu_module_cacher *c)
{
	struct hpu_module_cacher_stats st = { .size = sizeof(st) };

	hpu_module_cacher_get_stats(c, &st);
	return st;
}

/* A call of c on batch x[i], its output bitwise that of module_fn run eagerly. */
static void call(struct __test_metadata *_metadata, FIXTURE_DATA(cacher) *self,
		 struct hpu_module_cacher *c, unsigned int i, double scale)
{
	struct hpu_tensor *got = NULL, *want = NULL;

	/* x[i] was written on the eager stream. */
	ASSERT_EQ(0, hpu_stream_synchronize(self->eager));
	ASSERT_EQ(0, hpu_module_cacher_call(c, self->s, &self->x[i], &scale, sizeof(scale), &got))
		TH_LOG("%s", hpu_last_error());
	ASSERT_EQ(0, module_fn(&self->mod, self->eager, &self->x[i], &scale, &want));
	same(_metadata, self->eager, want, self->s, got, "the module's output");
	hpu_tensor_destroy(want);
}

#define EXPECT_STATS(c, graphs_, calls_, hits_, captures_, evictions_) do {		\
	struct hpu_module_cacher_stats st_ = stats_of(c);				\
											\
	EXPECT_EQ(graphs_, st_.graphs);							\
	EXPECT_EQ(calls_, st_.calls);							\
	EXPECT_EQ(hits_, st_.hits);							\
	EXPECT_EQ(captures_, st_.captures);						\
	EXPECT_EQ(evictions_, st_.evictions);						\
} while (0)

TEST_F(cacher, one_graph_per_shape_replayed_bitwise)
{
	struct hpu_tensor *first = NULL, *again = NULL;
	double scale = 1;
	unsigned int round, i;

	ASSERT_EQ(0, hpu_module_cacher_create(self->dev, &self->config, &self->c));
	for (round = 0; round < 2; round++) {
		for (i = 0; i < 3; i++) {
			call(_metadata, self, self->c, i, 1);
			/* New data in the batch: the next round reads it. */
			fill_random(self->eager, self->x[i]);
		}
		EXPECT_STATS(self->c, 3, 3 * (round + 1), 3 * round, 3, 0);
	}
	EXPECT_GT(stats_of(self->c).bytes, 0);
	/* The output of a shape is its graph's static output: the same handle. */
	ASSERT_EQ(0, hpu_module_cacher_call(self->c, self->s, &self->x[0], &scale, sizeof(scale),
					    &first));
	ASSERT_EQ(0, hpu_module_cacher_call(self->c, self->s, &self->x[0], &scale, sizeof(scale),
					    &again));
	EXPECT_EQ(first, again);
	EXPECT_STATS(self->c, 3, 8, 5, 3, 0);
}

TEST_F(cacher, args_are_part_of_the_key)
{
	ASSERT_EQ(0, hpu_module_cacher_create(self->dev, &self->config, &self->c));
	call(_metadata, self, self->c, 1, 1);
	call(_metadata, self, self->c, 1, 2);
	EXPECT_STATS(self->c, 2, 2, 0, 2, 0);
	call(_metadata, self, self->c, 1, 1);
	call(_metadata, self, self->c, 1, 2);
	EXPECT_STATS(self->c, 2, 4, 2, 2, 0);
}

TEST_F(cacher, max_graphs_evicts_the_least_recently_called)
{
	self->config.max_graphs = 2;
	ASSERT_EQ(0, hpu_module_cacher_create(self->dev, &self->config, &self->c));
	call(_metadata, self, self->c, 0, 1);
	call(_metadata, self, self->c, 1, 1);
	call(_metadata, self, self->c, 0, 1);
	EXPECT_STATS(self->c, 2, 3, 1, 2, 0);
	/* x[1]'s graph was called last before x[0]'s latest call: it goes, though made after. */
	call(_metadata, self, self->c, 2, 1);
	EXPECT_STATS(self->c, 2, 4, 1, 3, 1);
	call(_metadata, self, self->c, 0, 1);
	EXPECT_STATS(self->c, 2, 5, 2, 3, 1);
	call(_metadata, self, self->c, 1, 1);
	EXPECT_STATS(self->c, 2, 6, 2, 4, 2);
	/* Then x[2]'s went: x[0]'s is still there. */
	call(_metadata, self, self->c, 0, 1);
	EXPECT_STATS(self->c, 2, 7, 3, 4, 2);
}

TEST_F(cacher, budget_keeps_what_fits)
{
	struct hpu_module_cacher *c = NULL;
	uint64_t one;
	unsigned int k;

	/* One graph's memory; graphs of the same shapes with other args take as much. */
	ASSERT_EQ(0, hpu_module_cacher_create(self->dev, &self->config, &self->c));
	call(_metadata, self, self->c, 1, 1);
	one = stats_of(self->c).bytes;
	ksft_print_msg("a graph of a batch of %u: %llu bytes\n", rows[1], (unsigned long long)one);
	EXPECT_GT(one, rows[1] * (IN + OUT) * sizeof(float));

	self->config.budget_bytes = one + one / 2;
	ASSERT_EQ(0, hpu_module_cacher_create(self->dev, &self->config, &c));
	for (k = 1; k <= 3; k++) {
		call(_metadata, self, c, 1, k);
		EXPECT_STATS(c, 1, k, 0, k, k - 1);
		EXPECT_EQ(one, stats_of(c).bytes);
	}
	call(_metadata, self, c, 1, 3);
	EXPECT_STATS(c, 1, 4, 1, 3, 2);
	hpu_module_cacher_destroy(c);

	/* Below one graph: the graph of the call is kept, alone, over the budget. */
	self->config.budget_bytes = one / 2;
	ASSERT_EQ(0, hpu_module_cacher_create(self->dev, &self->config, &c));
	call(_metadata, self, c, 1, 1);
	EXPECT_STATS(c, 1, 1, 0, 1, 0);
	EXPECT_EQ(one, stats_of(c).bytes);
	call(_metadata, self, c, 1, 2);
	EXPECT_STATS(c, 1, 2, 0, 2, 1);
	hpu_module_cacher_destroy(c);
}

TEST_F(cacher, bad_arguments_fail)
{
	struct hpu_module_cacher_config config = self->config;
	struct hpu_module_cacher_stats st = { .size = 4 };
	struct hpu_module_cacher *c = NULL;
	struct hpu_tensor *out = NULL, *nul = NULL;
	double scale = 1;

	EXPECT_EQ(-EINVAL, hpu_module_cacher_create(NULL, &config, &c));
	EXPECT_EQ(-EINVAL, hpu_module_cacher_create(self->dev, NULL, &c));
	EXPECT_EQ(-EINVAL, hpu_module_cacher_create(self->dev, &config, NULL));
	config.max_graphs = 0;
	EXPECT_EQ(-EINVAL, hpu_module_cacher_create(self->dev, &config, &c));
	config = self->config;
	config.fn = NULL;
	EXPECT_EQ(-EINVAL, hpu_module_cacher_create(self->dev, &config, &c));
	EXPECT_EQ(NULL, c);

	ASSERT_EQ(0, hpu_module_cacher_create(self->dev, &self->config, &self->c));
	EXPECT_EQ(-EINVAL, hpu_module_cacher_call(NULL, self->s, self->x, &scale, 8, &out));
	EXPECT_EQ(-EINVAL, hpu_module_cacher_call(self->c, NULL, self->x, &scale, 8, &out));
	EXPECT_EQ(-EINVAL, hpu_module_cacher_call(self->c, self->s, NULL, &scale, 8, &out));
	EXPECT_EQ(-EINVAL, hpu_module_cacher_call(self->c, self->s, &nul, &scale, 8, &out));
	EXPECT_EQ(-EINVAL, hpu_module_cacher_call(self->c, self->s, self->x, NULL, 8, &out));
	EXPECT_EQ(-EINVAL, hpu_module_cacher_call(self->c, self->s, self->x, &scale, 8, NULL));
	ksft_print_msg("%s\n", hpu_last_error());
	EXPECT_EQ(-EINVAL, hpu_module_cacher_get_stats(self->c, &st));
	EXPECT_EQ(-EINVAL, hpu_module_cacher_get_stats(NULL, &st));
	EXPECT_EQ(-EINVAL, hpu_module_cacher_get_stats(self->c, NULL));
	EXPECT_STATS(self->c, 0, 0, 0, 0, 0);

	/* A module that fails: its error, nothing cached, no capture left on the stream. */
	self->mod.fail = -EIO;
	EXPECT_EQ(-EIO, hpu_module_cacher_call(self->c, self->s, self->x, &scale, 8, &out));
	EXPECT_STATS(self->c, 0, 0, 0, 0, 0);
	EXPECT_EQ(0, stats_of(self->c).bytes);
	EXPECT_EQ(0, hpu_stream_synchronize(self->s)) TH_LOG("%s", hpu_last_error());
	self->mod.fail = 0;
	call(_metadata, self, self->c, 0, 1);
	EXPECT_STATS(self->c, 1, 1, 0, 1, 0);
	hpu_module_cacher_destroy(NULL);
}

TEST_HARNESS_MAIN
