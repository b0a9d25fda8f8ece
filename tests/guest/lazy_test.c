// SPDX-License-Identifier: MIT
/*
 * Lazy mode against the live device (<hpu/hpu_graph.h>): a training step of
 * the seeds' MLP (linear, relu, dropout, log-softmax, NLL, their
 * backwards, matmuls, reductions, Adadelta) plus copies, fills and
 * intermediates the caller destroys before the step ends, run eagerly on
 * one stream and lazily on another from the same values: every result is
 * bitwise the same.  Also: one compilation and N-1 cache hits for N
 * identical steps, dropout drawing fresh masks each step, a host read
 * flushing implicitly, a re-bound recipe uploading only what moved, a CPU
 * fallback flushing first, the op cap splitting a graph, eviction, misuse,
 * and the metrics' JSON.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hpu/hpu.h>
#include <hpu/hpu_graph.h>
#include <hpu/hpu_tensor.h>

#include "kselftest_harness.h"

#include "hpu_mlp.h"

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
	unsigned int step;
	double t_eager = 0, t_lazy = 0, t;
	void *mask_prev = NULL;

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
		same_state(_metadata, self->eager, &me, self->lazy, &ml);
		/* The replayed recipe draws a fresh mask: the RNG state lives on the device. */
		EXPECT_TRUE(mask_is_fresh(self->lazy, &ml, &mask_prev));
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

/* Sets every element of t (F32, n of them) to v, eagerly: a copy flushes what was recorded. */
static int set_all(struct hpu_stream *s, struct hpu_tensor *t, float v, int n)
{
	float buf[256];
	int i;

	for (i = 0; i < n; i++)
		buf[i] = v;
	return hpu_tensor_copy_from_host(s, t, buf, n * sizeof(float));
}

static float first_of(struct hpu_stream *s, struct hpu_tensor *t)
{
	float v[256] = { 0 };

	hpu_tensor_copy_to_host(s, t, v, sizeof(v));
	return v[0];
}

/*
 * A recipe re-bound to another tensor copies only the words that moved
 * (an add's three descriptor addresses) when they are few, the whole blob
 * when they are many; either way each step writes its own tensor only.
 */
TEST_F(lazy, a_rebind_uploads_only_the_moved_words)
{
	struct hpu_tensor *a = tensor(self->dev, HPU_DT_F32, 256, 0);
	struct hpu_tensor *b = tensor(self->dev, HPU_DT_F32, 256, 0);
	uint64_t bytes;

	ASSERT_EQ(0, set_all(self->lazy, a, 1, 256));
	ASSERT_EQ(0, hpu_op_add(self->lazy, a, a, a, 1));
	EXPECT_EQ(2, first_of(self->lazy, a));
	ASSERT_EQ(0, set_all(self->lazy, b, 10, 256));
	bytes = metric("graph_launch", "UploadBytes");
	ASSERT_EQ(0, hpu_op_add(self->lazy, b, b, b, 1));
	EXPECT_EQ(20, first_of(self->lazy, b));
	EXPECT_EQ(3 * sizeof(uint64_t), metric("graph_launch", "UploadBytes") - bytes);
	EXPECT_EQ(2, first_of(self->lazy, a));
	bytes = metric("graph_launch", "UploadBytes");
	ASSERT_EQ(0, hpu_op_add(self->lazy, a, a, a, 1));
	EXPECT_EQ(4, first_of(self->lazy, a));
	EXPECT_EQ(20, first_of(self->lazy, b));
	EXPECT_EQ(3 * sizeof(uint64_t), metric("graph_launch", "UploadBytes") - bytes);
	/* Two adds: six words moved, more than go one by one. */
	ASSERT_EQ(0, hpu_op_add(self->lazy, a, a, a, 1));
	ASSERT_EQ(0, hpu_op_add(self->lazy, a, a, a, 1));
	EXPECT_EQ(16, first_of(self->lazy, a));
	bytes = metric("graph_launch", "UploadBytes");
	ASSERT_EQ(0, hpu_op_add(self->lazy, b, b, b, 1));
	ASSERT_EQ(0, hpu_op_add(self->lazy, b, b, b, 1));
	EXPECT_EQ(80, first_of(self->lazy, b));
	EXPECT_EQ(16, first_of(self->lazy, a));
	EXPECT_GT(metric("graph_launch", "UploadBytes") - bytes, 6 * sizeof(uint64_t));
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
	/*
	 * Two graphs in turn (a fill with +0 is a memset, one with 1 a kernel; other
	 * numbers would share a recipe), one slot: each launch misses and evicts the other.
	 */
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, hpu_op_fill(self->lazy, a, i % 2 ? 1 : 0));
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

/* Whether path exists; its contents in buf. */
static bool read_small(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return false;
	n = fread(buf, 1, len - 1, f);
	buf[n] = 0;
	fclose(f);
	return true;
}

/* In a fork()ed child: 0 if its metrics start from zero; with use, it then runs a lazy graph. */
static int forked_child(bool use)
{
	struct hpu_device *dev = NULL;
	struct hpu_stream *s = NULL;
	struct hpu_tensor *t = NULL;
	float got[8] = { 0 };

	if (metric("graph_compilation", "TotalNumber") || metric("lazy_mode", "Graphs"))
		return 1;
	if (!use)
		return 0;
	if (hpu_device_open(0, &dev) || hpu_stream_create(dev, &s) ||
	    hpu_stream_set_lazy(s, true) ||
	    hpu_tensor_empty(dev, HPU_DT_F32, 1, (int64_t[]){ 8 }, &t) || hpu_op_fill(s, t, 4) ||
	    hpu_tensor_copy_to_host(s, t, got, sizeof(got)) || got[7] != 4)
		return 2;
	hpu_tensor_destroy(t);
	hpu_stream_destroy(s);
	hpu_device_close(dev);
	return metric("graph_compilation", "TotalNumber") == 1 ? 0 : 3;
}

/* Runs forked_child(use) in a child that leaves through exit(); its exit status. */
static int fork_and_wait(bool use)
{
	int status = -1;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (!pid)
		exit(forked_child(use));
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/*
 * A fork()ed child is another process: its metrics start from zero, and
 * it writes HPU_METRICS_FILE at exit only if it opened a device of its
 * own, with its own counts.  The parent's lazy stream works throughout.
 */
TEST_F(lazy, a_forked_child_starts_afresh)
{
	struct hpu_tensor *a = tensor(self->dev, HPU_DT_F32, 256, 0);
	char path[512], json[4096];

	snprintf(path, sizeof(path), "%s/fork_metrics.json", getenv("TMPDIR") ?: "/tmp");
	unlink(path);
	ASSERT_EQ(0, set_all(self->lazy, a, 1, 256));
	ASSERT_EQ(0, hpu_op_add(self->lazy, a, a, a, 1));
	EXPECT_EQ(2, first_of(self->lazy, a));
	ASSERT_LT(0, metric("graph_compilation", "TotalNumber"));
	setenv("HPU_METRICS_FILE", path, 1);
	/* A worker that never opens a device writes nothing. */
	EXPECT_EQ(0, fork_and_wait(false));
	EXPECT_FALSE(read_small(path, json, sizeof(json)));
	/* One that does writes its own: one compilation. */
	EXPECT_EQ(0, fork_and_wait(true));
	EXPECT_TRUE(read_small(path, json, sizeof(json)));
	EXPECT_NE(NULL, strstr(json, "\"graph_compilation\": {\"TotalNumber\": 1,")) TH_LOG("%s", json);
	unsetenv("HPU_METRICS_FILE");
	ASSERT_EQ(0, hpu_op_add(self->lazy, a, a, a, 1));
	EXPECT_EQ(4, first_of(self->lazy, a));
	hpu_tensor_destroy(a);
}

TEST_HARNESS_MAIN
