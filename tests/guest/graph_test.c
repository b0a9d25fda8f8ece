// SPDX-License-Identifier: MIT
/*
 * HPU graphs against the live device (<hpu/hpu_graph.h>): a training step
 * of the seeds' MLP captured once and replayed gives bitwise the results
 * of running it eagerly, with fresh dropout masks and the new data copied
 * into its static inputs at every replay; one compilation, one upload, and
 * each replay one ioctl (none on user queues) whatever the number of ops.  Replays with batch
 * views standing in for the static inputs give the same results with no
 * copy, and a stand-in of the wrong shape, dtype or layout is refused.
 * Misuse - a replay, a host read, a synchronize or a CPU fallback inside a
 * capture, replaying what holds no capture - fails with its errno and the
 * capture goes on.
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

/* ioctls libhpu issued on dev before this call (which issues one itself). */
static uint64_t ioctls(struct hpu_device *dev)
{
	struct hpu_device_stats st = { .size = sizeof(st) };

	return hpu_device_get_stats(dev, &st) ? 0 : st.ioctls;
}

/* System calls a submission costs: none on user queues, a SUBMIT otherwise. */
static uint64_t submit_ioctls(struct hpu_device *dev)
{
	struct hpu_device_info info = { .size = sizeof(info) };

	return hpu_device_get_info(dev, &info) || !info.user_queues;
}

FIXTURE(graph) {
	struct hpu_device *dev;
	struct hpu_stream *eager, *s;
	struct hpu_graph *g;
	uint64_t submit_ioctls;
};

FIXTURE_SETUP(graph)
{
	ASSERT_EQ(0, hpu_device_open(0, &self->dev)) TH_LOG("%s", hpu_last_error());
	ASSERT_EQ(0, hpu_stream_create(self->dev, &self->eager));
	ASSERT_EQ(0, hpu_stream_create(self->dev, &self->s));
	/* Known once the device has a stream. */
	self->submit_ioctls = submit_ioctls(self->dev);
	ASSERT_EQ(0, hpu_graph_create(self->dev, &self->g));
}

FIXTURE_TEARDOWN(graph)
{
	hpu_graph_destroy(self->g);
	hpu_stream_destroy(self->eager);
	hpu_stream_destroy(self->s);
	hpu_device_close(self->dev);
}

TEST_F(graph, replayed_mlp_steps_match_eager_bitwise)
{
	struct mlp me = { 0 }, mg = { 0 };
	struct hpu_graph_info info = { .size = sizeof(info) };
	uint64_t compiles, uploads, before;
	void *mask_prev = NULL;
	unsigned int step;

	lcg = 1;
	mlp_init(self->dev, self->eager, &me);
	lcg = 1;
	mlp_init(self->dev, self->s, &mg);
	ASSERT_EQ(0, hpu_stream_synchronize(self->s));
	compiles = metric("graph_compilation", "TotalNumber");
	uploads = metric("graph_launch", "Uploads");
	/* Captured, not run: the parameters are as they were. */
	ASSERT_EQ(0, hpu_graph_capture_begin(self->g, self->s)) TH_LOG("%s", hpu_last_error());
	ASSERT_EQ(0, mlp_step(self->dev, self->s, &mg)) TH_LOG("%s", hpu_last_error());
	ASSERT_EQ(0, hpu_graph_capture_end(self->g)) TH_LOG("%s", hpu_last_error());
	same(_metadata, self->eager, me.p[W1], self->s, mg.p[W1], "W1 after the capture");
	ASSERT_EQ(0, hpu_graph_get_info(self->g, &info));
	EXPECT_EQ(24, info.num_ops);
	/* The step's two scratch tensors went during the capture: workspace. */
	EXPECT_GE(info.workspace_bytes, 2 * B * HID * sizeof(float));
	EXPECT_GE(info.device_bytes, info.workspace_bytes);
	for (step = 0; step < STEPS; step++) {
		ASSERT_EQ(0, load_batch(self->eager, &me, step));
		ASSERT_EQ(0, load_batch(self->s, &mg, step));
		ASSERT_EQ(0, mlp_step(self->dev, self->eager, &me));
		before = ioctls(self->dev);
		ASSERT_EQ(0, hpu_graph_replay(self->g, self->s)) TH_LOG("%s", hpu_last_error());
		/* One submission (and the stats call): no upload, no allocation, nothing per op. */
		if (step)
			EXPECT_EQ(self->submit_ioctls + 1, ioctls(self->dev) - before);
		ASSERT_EQ(0, hpu_stream_synchronize(self->s)) TH_LOG("%s", hpu_last_error());
		same_state(_metadata, self->eager, &me, self->s, &mg);
		EXPECT_TRUE(mask_is_fresh(self->s, &mg, &mask_prev));
	}
	free(mask_prev);
	EXPECT_EQ(1, metric("graph_compilation", "TotalNumber") - compiles);
	EXPECT_EQ(1, metric("graph_launch", "Uploads") - uploads);
	ASSERT_EQ(0, hpu_graph_get_info(self->g, &info));
	EXPECT_EQ(STEPS, info.replays);
	fflush(stdout);
	mlp_free(&me);
	mlp_free(&mg);
}

/*
 * The seed's loop without its copies: each replay binds a batch view of a
 * dataset on the device in place of the static inputs; the parameters
 * match eager steps on the same batches bitwise, each replay after the
 * first two is one ioctl, and a plain replay reads the static inputs again.
 */
TEST_F(graph, replay_with_binds_batches_in_place_of_static_inputs)
{
	struct hpu_tensor *xs, *ys, *xv, *yv, *wrong, *wide, *strided;
	struct mlp me = { 0 }, mg = { 0 };
	uint64_t before;
	unsigned int step, i;

	lcg = 1;
	mlp_init(self->dev, self->eager, &me);
	lcg = 1;
	mlp_init(self->dev, self->s, &mg);
	ASSERT_EQ(0, hpu_tensor_empty(self->dev, HPU_DT_F32, 2, (int64_t[]){ STEPS * B, IN }, &xs));
	ASSERT_EQ(0, hpu_tensor_empty(self->dev, HPU_DT_I64, 1, (int64_t[]){ STEPS * B }, &ys));
	ASSERT_EQ(0, hpu_stream_synchronize(self->s));
	ASSERT_EQ(0, hpu_graph_capture_begin(self->g, self->s));
	ASSERT_EQ(0, mlp_step(self->dev, self->s, &mg)) TH_LOG("%s", hpu_last_error());
	ASSERT_EQ(0, hpu_graph_capture_end(self->g)) TH_LOG("%s", hpu_last_error());

	for (step = 0; step < STEPS; step++) {
		ASSERT_EQ(0, hpu_tensor_slice(xs, 0, step * B, (step + 1) * B, 1, &xv));
		ASSERT_EQ(0, hpu_tensor_slice(ys, 0, step * B, (step + 1) * B, 1, &yv));
		/* The eager model's batch, and the same bytes into the dataset's rows. */
		ASSERT_EQ(0, load_batch(self->eager, &me, step));
		ASSERT_EQ(0, hpu_op_unary(self->eager, HPU_UN_COPY, xv, me.x));
		ASSERT_EQ(0, hpu_op_unary(self->eager, HPU_UN_COPY, yv, me.y));
		ASSERT_EQ(0, mlp_step(self->dev, self->eager, &me));
		ASSERT_EQ(0, hpu_stream_synchronize(self->eager));
		before = ioctls(self->dev);
		ASSERT_EQ(0, hpu_graph_replay_with(self->g, self->s,
						   (struct hpu_graph_input[]){ { mg.x, xv },
									       { mg.y, yv } },
						   2))
			TH_LOG("%s", hpu_last_error());
		if (step >= 2)
			EXPECT_EQ(self->submit_ioctls + 1, ioctls(self->dev) - before);
		ASSERT_EQ(0, hpu_stream_synchronize(self->s)) TH_LOG("%s", hpu_last_error());
		for (i = 0; i < NPARAMS; i++)
			same(_metadata, self->eager, me.p[i], self->s, mg.p[i], "a parameter");
		same(_metadata, self->eager, me.loss_sum, self->s, mg.loss_sum, "loss_sum");
		hpu_tensor_destroy(xv);
		hpu_tensor_destroy(yv);
	}

	/* Refused, each with a message, and nothing enqueued. */
	ASSERT_EQ(0, hpu_tensor_slice(xs, 0, 0, B, 1, &xv));
	ASSERT_EQ(0, hpu_tensor_slice(ys, 0, 0, B, 1, &yv));
	ASSERT_EQ(0, hpu_tensor_empty(self->dev, HPU_DT_F32, 2, (int64_t[]){ B, IN + 1 }, &wrong));
	ASSERT_EQ(0, hpu_tensor_empty(self->dev, HPU_DT_F32, 2, (int64_t[]){ B, 2 * IN }, &wide));
	ASSERT_EQ(0, hpu_tensor_slice(wide, 1, 0, IN, 1, &strided));
	EXPECT_EQ(-EINVAL, hpu_graph_replay_with(self->g, self->s,
						 &(struct hpu_graph_input){ mg.x, wrong }, 1));
	ksft_print_msg("a wrong shape: %s\n", hpu_last_error());
	EXPECT_EQ(-EINVAL, hpu_graph_replay_with(self->g, self->s,
						 &(struct hpu_graph_input){ mg.y, xv }, 1));
	EXPECT_EQ(-EINVAL, hpu_graph_replay_with(self->g, self->s,
						 &(struct hpu_graph_input){ wrong, wrong }, 1));
	ksft_print_msg("not a static input: %s\n", hpu_last_error());
	EXPECT_EQ(-EINVAL, hpu_graph_replay_with(self->g, self->s,
						 &(struct hpu_graph_input){ xv, xv }, 1));
	EXPECT_EQ(-EINVAL, hpu_graph_replay_with(self->g, self->s,
						 &(struct hpu_graph_input){ mg.x, mg.x }, 1));
	EXPECT_EQ(-EINVAL, hpu_graph_replay_with(self->g, self->s,
						 (struct hpu_graph_input[]){ { mg.x, xv },
									     { mg.x, xv } },
						 2));
	EXPECT_EQ(-EINVAL, hpu_graph_replay_with(self->g, self->s, NULL, 1));
	EXPECT_EQ(-EINVAL, hpu_graph_replay_with(self->g, self->s,
						 &(struct hpu_graph_input){ mg.x, NULL }, 1));
	EXPECT_EQ(-EINVAL, hpu_graph_replay_with(self->g, self->s,
						 &(struct hpu_graph_input){ mg.x, strided }, 1));
	ksft_print_msg("not contiguous: %s\n", hpu_last_error());
	ASSERT_EQ(0, hpu_stream_synchronize(self->s));
	for (i = 0; i < NPARAMS; i++)
		same(_metadata, self->eager, me.p[i], self->s, mg.p[i], "a parameter after refusals");

	/* A plain replay reads the static inputs again. */
	ASSERT_EQ(0, load_batch(self->eager, &me, STEPS));
	ASSERT_EQ(0, load_batch(self->s, &mg, STEPS));
	ASSERT_EQ(0, mlp_step(self->dev, self->eager, &me));
	ASSERT_EQ(0, hpu_graph_replay(self->g, self->s));
	ASSERT_EQ(0, hpu_stream_synchronize(self->s));
	for (i = 0; i < NPARAMS; i++)
		same(_metadata, self->eager, me.p[i], self->s, mg.p[i], "a parameter, plain replay");
	hpu_tensor_destroy(strided);
	hpu_tensor_destroy(wide);
	hpu_tensor_destroy(wrong);
	hpu_tensor_destroy(xv);
	hpu_tensor_destroy(yv);
	hpu_tensor_destroy(xs);
	hpu_tensor_destroy(ys);
	mlp_free(&me);
	mlp_free(&mg);
}

/* y = 2 x + 1 captured; x rewritten between replays, and both handles gone. */
TEST_F(graph, static_inputs_take_new_data_and_outlive_their_handles)
{
	struct hpu_tensor *x = tensor(self->dev, HPU_DT_F32, 64, 0);
	struct hpu_tensor *y = tensor(self->dev, HPU_DT_F32, 64, 0);
	struct hpu_tensor *t = tensor(self->dev, HPU_DT_F32, 64, 0);
	struct hpu_graph_info info = { .size = sizeof(info) };
	float in[64], out[64];
	int round, i;

	ASSERT_EQ(0, hpu_graph_capture_begin(self->g, self->s));
	ASSERT_EQ(0, hpu_op_binary_scalar(self->s, HPU_BIN_MUL, t, x, 2));
	ASSERT_EQ(0, hpu_op_binary_scalar(self->s, HPU_BIN_ADD, y, t, 1));
	hpu_tensor_destroy(t);
	ASSERT_EQ(0, hpu_graph_capture_end(self->g));
	ASSERT_EQ(0, hpu_graph_get_info(self->g, &info));
	EXPECT_EQ(2, info.num_ops);
	EXPECT_EQ(2, info.num_tensors);
	for (round = 0; round < 3; round++) {
		for (i = 0; i < 64; i++)
			in[i] = (float)(i * (round + 1));
		ASSERT_EQ(0, hpu_tensor_copy_from_host(self->s, x, in, sizeof(in)));
		ASSERT_EQ(0, hpu_graph_replay(self->g, self->s));
		ASSERT_EQ(0, hpu_tensor_copy_to_host(self->s, y, out, sizeof(out)));
		for (i = 0; i < 64; i++) {
			ASSERT_EQ(2 * in[i] + 1, out[i]) TH_LOG("round %d, element %d", round, i);
		}
	}
	/* The graph holds their memory: replays still run, on another stream too. */
	hpu_tensor_destroy(x);
	hpu_tensor_destroy(y);
	ASSERT_EQ(0, hpu_graph_replay(self->g, self->eager));
	ASSERT_EQ(0, hpu_graph_replay(self->g, self->s));
	ASSERT_EQ(0, hpu_device_synchronize(self->dev)) TH_LOG("%s", hpu_last_error());
}

/* The graph of ops additions of 1 to a, each after the one before. */
static void capture_adds(struct __test_metadata *_metadata, struct hpu_graph *g,
			 struct hpu_stream *s, struct hpu_tensor *a, int ops)
{
	int i;

	ASSERT_EQ(0, hpu_graph_capture_begin(g, s));
	for (i = 0; i < ops; i++)
		ASSERT_EQ(0, hpu_op_binary_scalar(s, HPU_BIN_ADD, a, a, 1));
	ASSERT_EQ(0, hpu_graph_capture_end(g));
}

/*
 * Replays on two streams in a random order, synchronized now and then: a
 * replay after another stream's waits for it through that launch's control
 * block, which must then not be reset for a later launch, and after a
 * synchronize the blocks are reused.  No increment may be lost and nothing
 * may stall.
 */
TEST_F(graph, replays_on_two_streams_in_any_order_lose_nothing)
{
	enum { N = 4096, OPS = 40, REPLAYS = 150 };
	struct hpu_tensor *a = NULL;
	static float got[N];
	uint32_t x = 1;
	int i;

	ASSERT_EQ(0, hpu_tensor_empty(self->dev, HPU_DT_F32, 1, (int64_t[]){ N }, &a));
	ASSERT_EQ(0, hpu_op_fill(self->s, a, 0));
	capture_adds(_metadata, self->g, self->s, a, OPS);
	for (i = 0; i < REPLAYS; i++) {
		struct hpu_stream *st;

		x = x * 1103515245u + 12345u;
		st = x >> 16 & 1 ? self->s : self->eager;
		ASSERT_EQ(0, hpu_graph_replay(self->g, st)) TH_LOG("%s", hpu_last_error());
		if (!(x >> 20 & 7))
			ASSERT_EQ(0, hpu_stream_synchronize(st));
	}
	ASSERT_EQ(0, hpu_device_synchronize(self->dev)) TH_LOG("%s", hpu_last_error());
	ASSERT_EQ(0, hpu_tensor_copy_to_host(self->s, a, got, sizeof(got)));
	EXPECT_EQ(OPS * REPLAYS, got[0]);
	EXPECT_EQ(OPS * REPLAYS, got[N - 1]);
	hpu_tensor_destroy(a);
}

/* A square matrix product on s, m[1] = m[0] @ m[0]: tens of milliseconds of the device. */
static void long_job(struct __test_metadata *_metadata, struct hpu_device *dev,
		     struct hpu_stream *s, struct hpu_tensor **m)
{
	int i;

	for (i = 0; i < 2 && !m[i]; i++) {
		ASSERT_EQ(0, hpu_tensor_empty(dev, HPU_DT_F32, 2, (int64_t[]){ 768, 768 }, &m[i]));
		ASSERT_EQ(0, hpu_op_fill(s, m[i], 0));
	}
	ASSERT_EQ(0, hpu_op_matmul(s, m[1], m[0], m[0])) TH_LOG("%s", hpu_last_error());
}

/*
 * The hazard of reusing control blocks, set up on purpose: launch 1 on s
 * behind a long job; launch 2 on eager behind two, so that it waits on
 * launch 1's block and reaches that wait only after launch 1 ended; launch
 * 3 on s, made once launch 1 ended, must not reset that block while
 * launch 2 still waits on it (launch 3 waits on launch 2: a deadlock).
 */
TEST_F(graph, a_block_another_stream_waits_on_is_not_reset)
{
	struct hpu_tensor *a = NULL, *m1[2] = { NULL }, *m2[2] = { NULL };
	float got = 0;

	ASSERT_EQ(0, hpu_tensor_empty(self->dev, HPU_DT_F32, 1, (int64_t[]){ 1 }, &a));
	ASSERT_EQ(0, hpu_op_fill(self->s, a, 0));
	capture_adds(_metadata, self->g, self->s, a, 1);
	long_job(_metadata, self->dev, self->s, m1);
	long_job(_metadata, self->dev, self->eager, m2);
	ASSERT_EQ(0, hpu_device_synchronize(self->dev));
	for (int i = 0; i < 4; i++)
		long_job(_metadata, self->dev, self->eager, m2);
	ASSERT_EQ(0, hpu_graph_replay(self->g, self->s));
	ASSERT_EQ(0, hpu_graph_replay(self->g, self->eager));
	ASSERT_EQ(0, hpu_stream_synchronize(self->s));
	ASSERT_EQ(0, hpu_graph_replay(self->g, self->s));
	ASSERT_EQ(0, hpu_device_synchronize(self->dev)) TH_LOG("%s", hpu_last_error());
	ASSERT_EQ(0, hpu_tensor_copy_to_host(self->s, a, &got, sizeof(got)));
	EXPECT_EQ(3, got);
	for (int i = 0; i < 2; i++) {
		hpu_tensor_destroy(m2[i]);
		hpu_tensor_destroy(m1[i]);
	}
	hpu_tensor_destroy(a);
}

/* Every element of t, read on s once it synchronized, is want. */
static void expect_all(struct __test_metadata *_metadata, struct hpu_stream *s,
		       struct hpu_tensor *t, float want)
{
	static float got[4096];
	int i;

	ASSERT_EQ(0, hpu_stream_synchronize(s)) TH_LOG("%s", hpu_last_error());
	ASSERT_EQ(0, hpu_tensor_copy_to_host(s, t, got, sizeof(got)));
	for (i = 0; i < 4096 && got[i] == want; i++)
		;
	EXPECT_EQ(4096, i) TH_LOG("element %d is %g, not %g", i, got[i], want);
}

/*
 * A replay submits the jobs of the launch before last again only when they
 * would be built the same: after a rebinding each replay reads the tensor
 * bound now (without CALL, HPU_RECIPE_INLINE=1, the jobs hold copies of
 * the command buffers, whose DMA addresses binding patches), and a replay
 * on another stream runs in that stream's order, behind a long job there
 * and the fill of its input.
 */
TEST_F(graph, replays_rebuild_their_jobs_when_binding_or_stream_change)
{
	struct hpu_tensor *in = tensor(self->dev, HPU_DT_F32, 4096, 0);
	struct hpu_tensor *out = tensor(self->dev, HPU_DT_F32, 4096, 0);
	struct hpu_tensor *src[2] = { tensor(self->dev, HPU_DT_F32, 4096, 0),
				      tensor(self->dev, HPU_DT_F32, 4096, 0) };
	struct hpu_tensor *m[2] = { NULL };
	int i;

	ASSERT_EQ(0, hpu_op_fill(self->s, in, 0));
	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, hpu_op_fill(self->s, src[i], i + 1));
	ASSERT_EQ(0, hpu_graph_capture_begin(self->g, self->s));
	/* Contiguous, one dtype, two allocations: a DMA. */
	ASSERT_EQ(0, hpu_op_unary(self->s, HPU_UN_COPY, out, in));
	ASSERT_EQ(0, hpu_graph_capture_end(self->g)) TH_LOG("%s", hpu_last_error());
	for (i = 0; i < 6; i++) {
		ASSERT_EQ(0, hpu_graph_replay_with(self->g, self->s,
						   (struct hpu_graph_input[]){ { in, src[i / 3] } }, 1))
			TH_LOG("%s", hpu_last_error());
		expect_all(_metadata, self->s, out, i / 3 + 1);
	}
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, hpu_graph_replay(self->g, self->s));
	expect_all(_metadata, self->s, out, 0);
	long_job(_metadata, self->dev, self->eager, m);
	ASSERT_EQ(0, hpu_op_fill(self->eager, in, 9));
	ASSERT_EQ(0, hpu_graph_replay(self->g, self->eager)) TH_LOG("%s", hpu_last_error());
	expect_all(_metadata, self->eager, out, 9);
	for (i = 0; i < 2; i++) {
		hpu_tensor_destroy(m[i]);
		hpu_tensor_destroy(src[i]);
	}
	hpu_tensor_destroy(out);
	hpu_tensor_destroy(in);
}

TEST_F(graph, lazy_ops_before_the_capture_are_not_captured)
{
	struct hpu_tensor *a = tensor(self->dev, HPU_DT_F32, 16, 0);
	float got[16];

	ASSERT_EQ(0, hpu_stream_set_lazy(self->s, true));
	ASSERT_EQ(0, hpu_op_fill(self->s, a, 5));
	ASSERT_EQ(0, hpu_graph_capture_begin(self->g, self->s));
	ASSERT_EQ(0, hpu_op_binary_scalar(self->s, HPU_BIN_MUL, a, a, 3));
	/* Inside a capture a step mark is nothing: the capture is the graph. */
	ASSERT_EQ(0, hpu_mark_step(self->s));
	ASSERT_EQ(0, hpu_graph_capture_end(self->g));
	ASSERT_EQ(0, hpu_tensor_copy_to_host(self->s, a, got, sizeof(got)));
	EXPECT_EQ(5, got[0]);
	ASSERT_EQ(0, hpu_graph_replay(self->g, self->s));
	ASSERT_EQ(0, hpu_graph_replay(self->g, self->s));
	ASSERT_EQ(0, hpu_tensor_copy_to_host(self->s, a, got, sizeof(got)));
	EXPECT_EQ(45, got[15]);
	hpu_tensor_destroy(a);
}

TEST_F(graph, misuse_fails_and_the_capture_goes_on)
{
	struct hpu_tensor *a = tensor(self->dev, HPU_DT_F32, 16, 0);
	struct hpu_tensor *c = tensor(self->dev, HPU_DT_F32, 16, 0);
	struct hpu_graph_info info = { .size = sizeof(info) };
	struct hpu_graph *other = NULL;
	struct hpu_stream *gone = NULL;
	struct hpu_event *ev = NULL;
	float got[16];

	EXPECT_EQ(-EINVAL, hpu_graph_create(NULL, &other));
	EXPECT_EQ(-EINVAL, hpu_graph_create(self->dev, NULL));
	EXPECT_EQ(-EINVAL, hpu_graph_capture_begin(NULL, self->s));
	EXPECT_EQ(-EINVAL, hpu_graph_capture_begin(self->g, NULL));
	EXPECT_EQ(-EINVAL, hpu_graph_capture_end(self->g));
	EXPECT_EQ(-EINVAL, hpu_graph_replay(self->g, self->s));
	EXPECT_EQ(-EINVAL, hpu_graph_get_info(self->g, &info));
	ASSERT_EQ(0, hpu_graph_create(self->dev, &other));
	ASSERT_EQ(0, hpu_event_create(self->dev, &ev));

	ASSERT_EQ(0, hpu_op_fill(self->s, a, 1));
	ASSERT_EQ(0, hpu_graph_capture_begin(self->g, self->s));
	EXPECT_EQ(-EBUSY, hpu_graph_capture_begin(self->g, self->eager));
	EXPECT_EQ(-EBUSY, hpu_graph_capture_begin(other, self->s));
	EXPECT_EQ(-EBUSY, hpu_graph_replay(self->g, self->eager));
	ASSERT_EQ(0, hpu_op_binary_scalar(self->s, HPU_BIN_ADD, a, a, 1));
	EXPECT_EQ(-EBUSY, hpu_tensor_copy_to_host(self->s, a, got, sizeof(got)));
	ksft_print_msg("a host read: %s\n", hpu_last_error());
	EXPECT_EQ(-EBUSY, hpu_stream_synchronize(self->s));
	EXPECT_EQ(-EBUSY, hpu_stream_query(self->s));
	EXPECT_EQ(-EBUSY, hpu_event_record(ev, self->s));
	EXPECT_EQ(-EBUSY, hpu_op_cumsum(self->s, c, a, 0));
	ksft_print_msg("a fallback: %s\n", hpu_last_error());
	/* Another stream works meanwhile, and the capture still takes ops. */
	ASSERT_EQ(0, hpu_op_fill(self->eager, c, 7));
	ASSERT_EQ(0, hpu_stream_synchronize(self->eager));
	ASSERT_EQ(0, hpu_op_binary_scalar(self->s, HPU_BIN_MUL, a, a, 10));
	ASSERT_EQ(0, hpu_graph_capture_end(self->g)) TH_LOG("%s", hpu_last_error());
	EXPECT_EQ(-EINVAL, hpu_graph_capture_begin(self->g, self->s));
	ASSERT_EQ(0, hpu_graph_replay(self->g, self->s));
	ASSERT_EQ(0, hpu_tensor_copy_to_host(self->s, a, got, sizeof(got)));
	EXPECT_EQ(20, got[3]);
	/* A capture whose stream goes fails: the graph holds none. */
	ASSERT_EQ(0, hpu_stream_create(self->dev, &gone));
	ASSERT_EQ(0, hpu_graph_capture_begin(other, gone));
	ASSERT_EQ(0, hpu_op_fill(gone, c, 3));
	hpu_stream_destroy(gone);
	EXPECT_EQ(-EINVAL, hpu_graph_capture_end(other));
	EXPECT_EQ(-EINVAL, hpu_graph_replay(other, self->s));
	hpu_event_destroy(ev);
	hpu_graph_destroy(other);
	hpu_tensor_destroy(a);
	hpu_tensor_destroy(c);
}

TEST_HARNESS_MAIN
