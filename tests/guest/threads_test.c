// SPDX-License-Identifier: MIT
/*
 * The runtime's promise that its handles may be used by several threads at
 * once (<hpu/hpu.h>), on what a framework's threads share: one device, its
 * recipe cache, its memory and the metrics.  Threads started together each
 * train hpu_mlp.h's model on a stream of their own, eagerly, lazily or by
 * replaying an HPU graph captured meanwhile; lazy threads compile the same
 * graph at the same time.  Each must end bitwise where the same steps run
 * alone end.  Then threads launch graphs of several shapes through a cache
 * too small for them, so recipes are evicted while other threads launch
 * them, and their recompilations are told apart from new shapes, and again
 * behind a recipe directory.  And one thread hands tensors to another
 * through events, which frees them, while a third reads every statistic
 * the library keeps; devices are opened and closed on threads meanwhile.
 * Last, waits interrupted by signals over and over resume.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include <hpu/hpu.h>
#include <hpu/hpu_graph.h>
#include <hpu/hpu_tensor.h>

#include "kselftest_harness.h"

#include "hpu_mlp.h"

enum mode { EAGER, LAZY, GRAPH };
static const char *const mode_names[] = { "eager", "lazy", "graph" };

enum { THREAD_STEPS = 12 };

struct worker {
	enum mode mode;
	struct hpu_device *dev;
	struct hpu_stream *s;
	struct mlp m;
	struct hpu_graph *g;
	pthread_barrier_t *start;
	int ret;
	char err[256];
};

/* Ends a worker: its result, and its thread's last error if it failed. */
static void *worker_end(struct worker *w, int ret)
{
	if (!ret)
		ret = hpu_stream_synchronize(w->s);
	if (ret)
		snprintf(w->err, sizeof(w->err), "%s", hpu_last_error());
	w->ret = ret;
	return NULL;
}

static void *train(void *arg)
{
	struct worker *w = arg;
	unsigned int step;
	int ret = 0;

	pthread_barrier_wait(w->start);
	/* Captured while the other threads compile and launch. */
	if (w->mode == GRAPH) {
		ret = hpu_graph_capture_begin(w->g, w->s);
		if (!ret) {
			ret = mlp_step(w->dev, w->s, &w->m);
			ret = hpu_graph_capture_end(w->g) ?: ret;
		}
	}
	for (step = 0; step < THREAD_STEPS && !ret; step++) {
		switch (w->mode) {
		case EAGER:
			ret = mlp_step(w->dev, w->s, &w->m);
			break;
		case LAZY:
			ret = mlp_step(w->dev, w->s, &w->m);
			if (!ret)
				ret = hpu_mark_step(w->s);
			break;
		case GRAPH:
			ret = hpu_graph_replay(w->g, w->s);
			break;
		}
	}
	return worker_end(w, ret);
}

FIXTURE(threads) {
	struct hpu_device *dev;
	struct hpu_stream *s;
};

FIXTURE_SETUP(threads)
{
	ASSERT_EQ(0, hpu_device_open(0, &self->dev)) TH_LOG("%s", hpu_last_error());
	ASSERT_EQ(0, hpu_stream_create(self->dev, &self->s));
}

FIXTURE_TEARDOWN(threads)
{
	hpu_stream_destroy(self->s);
	hpu_device_close(self->dev);
}

/* A model on its own stream, from the same values as every other (the generator is not shared). */
static void worker_init(struct __test_metadata *_metadata, struct hpu_device *dev, struct worker *w,
			enum mode mode, pthread_barrier_t *start)
{
	*w = (struct worker){ .mode = mode, .dev = dev, .start = start };
	ASSERT_EQ(0, hpu_stream_create(dev, &w->s)) TH_LOG("%s", hpu_last_error());
	lcg = 1;
	mlp_init(dev, w->s, &w->m);
	ASSERT_EQ(0, load_batch(w->s, &w->m, 0));
	ASSERT_EQ(0, hpu_stream_synchronize(w->s)) TH_LOG("%s", hpu_last_error());
	if (mode == LAZY)
		ASSERT_EQ(0, hpu_stream_set_lazy(w->s, true));
	if (mode == GRAPH)
		ASSERT_EQ(0, hpu_graph_create(dev, &w->g));
}

static void worker_fini(struct worker *w)
{
	hpu_graph_destroy(w->g);
	mlp_free(&w->m);
	hpu_stream_destroy(w->s);
}

/*
 * Five streams over the process's user queues (one per hardware queue,
 * shared by its streams): the threads' jobs interleave on the same rings.
 */
TEST_F(threads, concurrent_training_matches_a_run_alone_bitwise)
{
	static const enum mode modes[] = { EAGER, LAZY, LAZY, GRAPH };
	enum { N = sizeof(modes) / sizeof(modes[0]) };
	struct worker w[N];
	pthread_t tid[N];
	pthread_barrier_t start;
	struct mlp alone = { 0 };
	unsigned int i, step;

	/* The steps alone, eagerly, on the fixture's stream. */
	lcg = 1;
	mlp_init(self->dev, self->s, &alone);
	ASSERT_EQ(0, load_batch(self->s, &alone, 0));
	for (step = 0; step < THREAD_STEPS; step++)
		ASSERT_EQ(0, mlp_step(self->dev, self->s, &alone)) TH_LOG("%s", hpu_last_error());
	ASSERT_EQ(0, hpu_stream_synchronize(self->s));

	ASSERT_EQ(0, pthread_barrier_init(&start, NULL, N));
	for (i = 0; i < N; i++)
		worker_init(_metadata, self->dev, &w[i], modes[i], &start);
	for (i = 0; i < N; i++)
		ASSERT_EQ(0, pthread_create(&tid[i], NULL, train, &w[i]));
	for (i = 0; i < N; i++)
		pthread_join(tid[i], NULL);
	for (i = 0; i < N; i++) {
		EXPECT_EQ(0, w[i].ret) TH_LOG("%s thread: %s", mode_names[w[i].mode], w[i].err);
		same_state(_metadata, self->s, &alone, w[i].s, &w[i].m);
		worker_fini(&w[i]);
	}
	pthread_barrier_destroy(&start);
	mlp_free(&alone);
	fflush(stdout);
}

/* One thread of the eviction test: its stream and the first error it met. */
struct churner {
	struct hpu_device *dev;
	pthread_barrier_t *start;
	unsigned int id;
	int ret;
	char err[256];
};

enum { GRAPHS = 3, CHURN_ROUNDS = 30 };

/*
 * GRAPHS lazy graphs (a fill and an add, on GRAPHS sizes) in turn, each
 * read back: the read flushes the graph, so each round launches one
 * recipe, found in the cache, loaded or compiled.
 */
static void *churn(void *arg)
{
	struct churner *c = arg;
	struct hpu_tensor *t[GRAPHS] = { 0 };
	struct hpu_stream *s = NULL;
	unsigned int i, k;
	float got[64 * GRAPHS];
	int ret;

	ret = hpu_stream_create(c->dev, &s);
	for (k = 0; k < GRAPHS && !ret; k++)
		ret = hpu_tensor_empty(c->dev, HPU_DT_F32, 1, (int64_t[]){ 64 * (k + 1) }, &t[k]);
	if (!ret)
		ret = hpu_stream_set_lazy(s, true);
	pthread_barrier_wait(c->start);
	for (i = 0; i < CHURN_ROUNDS && !ret; i++) {
		int64_t n;

		k = (i + c->id) % GRAPHS;
		n = 64 * (k + 1);
		ret = hpu_op_fill(s, t[k], k + 1);
		if (!ret)
			ret = hpu_op_add(s, t[k], t[k], t[k], 1);
		if (!ret)
			ret = hpu_tensor_copy_to_host(s, t[k], got, n * sizeof(float));
		if (!ret && (got[0] != 2 * (k + 1) || got[n - 1] != 2 * (k + 1))) {
			snprintf(c->err, sizeof(c->err), "round %u, graph %u: %g and %g, not %u", i, k,
				 got[0], got[n - 1], 2 * (k + 1));
			c->ret = -1;
			break;
		}
	}
	if (ret) {
		snprintf(c->err, sizeof(c->err), "%s", hpu_last_error());
		c->ret = ret;
	}
	for (k = 0; k < GRAPHS; k++)
		hpu_tensor_destroy(t[k]);
	hpu_stream_destroy(s);
	return NULL;
}

/* N churners on dev started together; 0 if every one's results were right. */
static int run_churners(struct __test_metadata *_metadata, struct hpu_device *dev)
{
	enum { N = 4 };
	struct churner c[N];
	pthread_barrier_t start;
	pthread_t tid[N];
	unsigned int i;
	int failed = 0;

	if (pthread_barrier_init(&start, NULL, N))
		return -1;
	for (i = 0; i < N; i++) {
		c[i] = (struct churner){ .dev = dev, .start = &start, .id = i };
		if (pthread_create(&tid[i], NULL, churn, &c[i]))
			abort(); /* the barrier would never open */
	}
	for (i = 0; i < N; i++)
		pthread_join(tid[i], NULL);
	for (i = 0; i < N; i++) {
		EXPECT_EQ(0, c[i].ret) TH_LOG("thread %u: %s", i, c[i].err);
		failed |= c[i].ret;
	}
	pthread_barrier_destroy(&start);
	return failed;
}

/* A cache of one recipe and three graphs in turn on four threads: evictions of recipes in use. */
TEST_F(threads, recipes_evicted_while_other_threads_launch_them)
{
	uint64_t evictions = metric("recipe_cache", "Evictions");
	uint64_t compiles = metric("graph_compilation", "TotalNumber");
	uint64_t repeats = metric("graph_compilation", "Repeats");
	uint64_t warnings = metric("graph_compilation", "RecompileWarnings");

	ASSERT_EQ(0, hpu_recipe_cache_set_capacity(self->dev, 1));
	ASSERT_EQ(0, run_churners(_metadata, self->dev));
	EXPECT_LE(metric("recipe_cache", "Entries"), 1);
	EXPECT_GT(metric("recipe_cache", "Evictions") - evictions, CHURN_ROUNDS);
	compiles = metric("graph_compilation", "TotalNumber") - compiles;
	/*
	 * Each graph compiled once, then only again: repeats.  The graphs are one site (the
	 * same ops on GRAPHS sizes; their numbers are no part of it): one warning.
	 */
	EXPECT_EQ(compiles - GRAPHS, metric("graph_compilation", "Repeats") - repeats);
	EXPECT_EQ(1, metric("graph_compilation", "RecompileWarnings") - warnings);
	ksft_print_msg("%" PRIu64 " evictions, %" PRIu64 " compilations\n",
		       metric("recipe_cache", "Evictions") - evictions, compiles);
	fflush(stdout);
}

/*
 * The same behind a recipe directory: an evicted recipe comes back from
 * disk while the cache's thread writes the others, all in one process.
 */
TEST_F(threads, threads_share_the_recipe_directory)
{
	uint64_t compiles = metric("graph_compilation", "TotalNumber");
	uint64_t hits = metric("recipe_cache_disk", "Hits");
	struct hpu_device *dev = NULL;
	char dir[256], config[300];

	snprintf(dir, sizeof(dir), "%s/hpu_threads_XXXXXX", getenv("TMPDIR") ?: "/tmp");
	ASSERT_NE(NULL, mkdtemp(dir));
	snprintf(config, sizeof(config), "%s,true,64", dir);
	setenv("HPU_RECIPE_CACHE_CONFIG", config, 1);
	ASSERT_EQ(0, hpu_device_open(0, &dev)) TH_LOG("%s", hpu_last_error());
	unsetenv("HPU_RECIPE_CACHE_CONFIG");
	ASSERT_EQ(0, hpu_recipe_cache_set_capacity(dev, 1));
	EXPECT_EQ(0, run_churners(_metadata, dev));
	compiles = metric("graph_compilation", "TotalNumber") - compiles;
	hits = metric("recipe_cache_disk", "Hits") - hits;
	/* Each graph compiled at least once; most evicted ones loaded, not compiled again. */
	EXPECT_LE(GRAPHS, compiles);
	EXPECT_LT(compiles, hits) TH_LOG("%" PRIu64 " compilations, %" PRIu64 " disk hits", compiles,
					 hits);
	ksft_print_msg("%" PRIu64 " compilations, %" PRIu64 " disk hits\n", compiles, hits);
	hpu_device_close(dev);
	fflush(stdout);
}

/*
 * Tensors handed from one thread to another, ordered by events; each mailbox
 * slot one tensor.  Each is filled behind FILLS fills of a big tensor, one job
 * each: the engine takes its queues' jobs in turns, so a reader's copy that
 * did not wait for the event would run before the tensor's own fill.
 */
enum { HANDOFFS = 40, SLOTS = 1, FILLS = 16 };

struct handoff {
	struct hpu_tensor *t;
	struct hpu_event *e;
	int64_t n;
};

/* The producer's and consumer's shared ring, and what each found wrong. */
struct mailbox {
	struct hpu_device *dev;
	pthread_mutex_t lock;
	pthread_cond_t changed;
	struct handoff slot[SLOTS];
	unsigned int head, tail; /* taken, put */
	bool done;               /* the consumer has finished: the watcher stops */
	int ret[2];
	char err[2][256];
};

/* Records who's failure (why: NULL for the library's last error) and wakes the other side. */
static void *mailbox_fail(struct mailbox *b, unsigned int who, int ret, const char *why)
{
	pthread_mutex_lock(&b->lock);
	b->ret[who] = ret;
	snprintf(b->err[who], sizeof(b->err[who]), "%s", why ? why : hpu_last_error());
	pthread_cond_broadcast(&b->changed);
	pthread_mutex_unlock(&b->lock);
	return NULL;
}

/*
 * Fills tensors of growing sizes with their index on its stream, each
 * behind FILLS fills of a big tensor so that a reader not waiting for the
 * event would see it unfilled, and hands each on with an event.
 */
static void *produce(void *arg)
{
	struct mailbox *b = arg;
	struct hpu_stream *s = NULL;
	struct hpu_tensor *big = NULL;
	int ret = hpu_stream_create(b->dev, &s);
	bool stop = false;
	unsigned int i, f;

	if (!ret)
		ret = hpu_tensor_empty(b->dev, HPU_DT_F32, 1, (int64_t[]){ 1 << 20 }, &big);
	for (i = 0; i < HANDOFFS && !ret; i++) {
		struct handoff h = { .n = 64 + 97 * (int64_t)i };

		ret = hpu_tensor_empty(b->dev, HPU_DT_F32, 1, &h.n, &h.t);
		for (f = 0; f < FILLS && !ret; f++)
			ret = hpu_op_fill(s, big, i + f);
		if (!ret)
			ret = hpu_op_fill(s, h.t, i);
		if (!ret)
			ret = hpu_event_create(b->dev, &h.e);
		if (!ret)
			ret = hpu_event_record(h.e, s);
		if (ret) {
			hpu_tensor_destroy(h.t);
			hpu_event_destroy(h.e);
			break;
		}
		pthread_mutex_lock(&b->lock);
		while (b->tail - b->head == SLOTS && !b->ret[1])
			pthread_cond_wait(&b->changed, &b->lock);
		stop = b->ret[1] != 0;
		if (!stop) {
			b->slot[b->tail++ % SLOTS] = h;
			pthread_cond_broadcast(&b->changed);
		}
		pthread_mutex_unlock(&b->lock);
		if (stop) {
			hpu_tensor_destroy(h.t);
			hpu_event_destroy(h.e);
			break;
		}
	}
	/* Not synchronized: the consumer's waits order its reads after these fills. */
	hpu_tensor_destroy(big);
	hpu_stream_destroy(s);
	return ret ? mailbox_fail(b, 0, ret, NULL) : NULL;
}

/* Waits for each tensor's event on its own stream, copies it there, reads the copy back. */
static void *consume(void *arg)
{
	struct mailbox *b = arg;
	struct hpu_stream *s = NULL;
	float *got = malloc((64 + 97 * HANDOFFS) * sizeof(float));
	int ret = got ? hpu_stream_create(b->dev, &s) : -ENOMEM;
	const char *why = NULL;
	char wrong[128];
	unsigned int i;

	for (i = 0; i < HANDOFFS && !ret; i++) {
		struct hpu_tensor *copy = NULL;
		struct handoff h;

		pthread_mutex_lock(&b->lock);
		while (b->head == b->tail && !b->ret[0])
			pthread_cond_wait(&b->changed, &b->lock);
		if (b->head == b->tail) {
			pthread_mutex_unlock(&b->lock);
			break;
		}
		h = b->slot[b->head++ % SLOTS];
		pthread_cond_broadcast(&b->changed);
		pthread_mutex_unlock(&b->lock);
		ret = hpu_stream_wait_event(s, h.e);
		if (!ret)
			ret = hpu_tensor_empty(b->dev, HPU_DT_F32, 1, &h.n, &copy);
		if (!ret)
			ret = hpu_op_unary(s, HPU_UN_COPY, copy, h.t);
		if (!ret)
			ret = hpu_tensor_copy_to_host(s, copy, got, h.n * sizeof(float));
		if (!ret && (got[0] != (float)i || got[h.n - 1] != (float)i)) {
			snprintf(wrong, sizeof(wrong), "handoff %u: %g and %g", i, got[0], got[h.n - 1]);
			why = wrong;
			ret = -EIO;
		}
		/* Made on the producer's thread, freed on this one. */
		hpu_tensor_destroy(copy);
		hpu_tensor_destroy(h.t);
		hpu_event_destroy(h.e);
	}
	hpu_stream_destroy(s);
	free(got);
	if (ret)
		mailbox_fail(b, 1, ret, why);
	pthread_mutex_lock(&b->lock);
	b->done = true;
	pthread_mutex_unlock(&b->lock);
	return NULL;
}

/* Reads every statistic the library keeps while the others work, until the consumer is done. */
static void *watch(void *arg)
{
	struct mailbox *b = arg;
	char path[64];
	bool done = false;

	snprintf(path, sizeof(path), "%s/hpu_metrics_%d.json", getenv("TMPDIR") ?: "/tmp", getpid());
	while (!done) {
		struct hpu_device_stats ds = { .size = sizeof(ds) };
		struct hpu_mem_stats ms = { .size = sizeof(ms) };

		hpu_device_get_stats(b->dev, &ds);
		hpu_mem_get_stats(b->dev, &ms);
		hpu_metrics_dump_json(path);
		pthread_mutex_lock(&b->lock);
		done = b->done;
		pthread_mutex_unlock(&b->lock);
	}
	unlink(path);
	return NULL;
}

TEST_F(threads, tensors_handed_between_threads_through_events)
{
	struct mailbox b = { .dev = self->dev };
	pthread_t tid[3];
	void *(*const fn[3])(void *) = { produce, consume, watch };
	unsigned int i;

	pthread_mutex_init(&b.lock, NULL);
	pthread_cond_init(&b.changed, NULL);
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, pthread_create(&tid[i], NULL, fn[i], &b));
	for (i = 0; i < 3; i++)
		pthread_join(tid[i], NULL);
	EXPECT_EQ(0, b.ret[0]) TH_LOG("%s", b.err[0]);
	EXPECT_EQ(0, b.ret[1]) TH_LOG("%s", b.err[1]);
	/* What a failed consumer left in the mailbox. */
	for (; b.head != b.tail; b.head++) {
		hpu_tensor_destroy(b.slot[b.head % SLOTS].t);
		hpu_event_destroy(b.slot[b.head % SLOTS].e);
	}
	pthread_cond_destroy(&b.changed);
	pthread_mutex_destroy(&b.lock);
}

/* One of the threads that open, use and close a device of their own. */
struct opener {
	int ret;
	char err[256];
};

enum { OPENS = 3 };

/* OPENS times: open, fill, a CPU fallback (cumsum), read back, close. */
static void *open_use_close(void *arg)
{
	struct opener *o = arg;
	unsigned int i;
	int ret = 0;

	for (i = 0; i < OPENS && !ret; i++) {
		struct hpu_tensor *a = NULL, *c = NULL;
		struct hpu_device *dev = NULL;
		struct hpu_stream *s = NULL;
		float got[16] = { 0 };

		ret = hpu_device_open(0, &dev);
		if (!ret)
			ret = hpu_stream_create(dev, &s);
		if (!ret)
			ret = hpu_tensor_empty(dev, HPU_DT_F32, 1, (int64_t[]){ 16 }, &a);
		if (!ret)
			ret = hpu_tensor_empty(dev, HPU_DT_F32, 1, (int64_t[]){ 16 }, &c);
		if (!ret)
			ret = hpu_op_fill(s, a, 2);
		if (!ret)
			ret = hpu_op_cumsum(s, c, a, 0);
		if (!ret)
			ret = hpu_tensor_copy_to_host(s, c, got, sizeof(got));
		if (ret)
			snprintf(o->err, sizeof(o->err), "open %u: %s", i, hpu_last_error());
		else if (got[0] != 2 || got[15] != 32)
			snprintf(o->err, sizeof(o->err), "open %u: %g and %g", i, got[0], got[15]);
		if (!ret && *o->err)
			ret = -EIO;
		hpu_tensor_destroy(a);
		hpu_tensor_destroy(c);
		hpu_stream_destroy(s);
		hpu_device_close(dev);
	}
	o->ret = ret;
	return NULL;
}

/*
 * Devices opened, used and closed on two threads while the watcher reads
 * every statistic: the process-wide list of open devices changes under
 * it, and a closed device's counts stay in the totals.
 */
TEST_F(threads, devices_open_and_close_while_statistics_are_read)
{
	uint64_t fallbacks = metric("cpu_fallback", "Total");
	struct mailbox b = { .dev = self->dev };
	struct opener o[2] = { { 0 } };
	pthread_t tid[3];
	unsigned int i;

	pthread_mutex_init(&b.lock, NULL);
	ASSERT_EQ(0, pthread_create(&tid[2], NULL, watch, &b));
	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, pthread_create(&tid[i], NULL, open_use_close, &o[i]));
	for (i = 0; i < 2; i++)
		pthread_join(tid[i], NULL);
	pthread_mutex_lock(&b.lock);
	b.done = true;
	pthread_mutex_unlock(&b.lock);
	pthread_join(tid[2], NULL);
	for (i = 0; i < 2; i++)
		EXPECT_EQ(0, o[i].ret) TH_LOG("thread %u: %s", i, o[i].err);
	EXPECT_EQ(2 * OPENS, metric("cpu_fallback", "Total") - fallbacks);
	pthread_mutex_destroy(&b.lock);
}

static volatile sig_atomic_t alarms;

static void on_alarm(int sig)
{
	(void)sig;
	alarms++;
}

/*
 * A signal every 200 us, its handler installed without SA_RESTART, while
 * training steps run and wait: every wait (a spin, then the driver's) is
 * interrupted over and over, and none of it reaches the caller as -EINTR.
 */
TEST_F(threads, interrupted_waits_resume)
{
	struct sigaction sa = { .sa_handler = on_alarm }, old_sa;
	struct itimerval every = { .it_interval = { 0, 200 }, .it_value = { 0, 200 } };
	struct itimerval off = { 0 };
	struct hpu_stream *lazy;
	struct hpu_tensor *big;
	struct mlp alone = { 0 }, m = { 0 };
	unsigned int step;

	ASSERT_EQ(0, hpu_stream_create(self->dev, &lazy));
	/* Filling it keeps the device busy for milliseconds: waits sleep in the driver. */
	ASSERT_EQ(0, hpu_tensor_empty(self->dev, HPU_DT_F32, 1, (int64_t[]){ 1 << 24 }, &big));
	lcg = 1;
	mlp_init(self->dev, self->s, &alone);
	ASSERT_EQ(0, load_batch(self->s, &alone, 0));
	lcg = 1;
	mlp_init(self->dev, lazy, &m);
	ASSERT_EQ(0, load_batch(lazy, &m, 0));
	ASSERT_EQ(0, hpu_device_synchronize(self->dev));
	ASSERT_EQ(0, hpu_stream_set_lazy(lazy, true));
	ASSERT_EQ(0, sigaction(SIGALRM, &sa, &old_sa));
	ASSERT_EQ(0, setitimer(ITIMER_REAL, &every, NULL));
	for (step = 0; step < THREAD_STEPS; step++) {
		ASSERT_EQ(0, mlp_step(self->dev, self->s, &alone)) TH_LOG("%s", hpu_last_error());
		ASSERT_EQ(0, hpu_op_fill(self->s, big, step));
		ASSERT_EQ(0, hpu_stream_synchronize(self->s)) TH_LOG("%s", hpu_last_error());
		ASSERT_EQ(0, mlp_step(self->dev, lazy, &m)) TH_LOG("%s", hpu_last_error());
		ASSERT_EQ(0, hpu_mark_step(lazy)) TH_LOG("%s", hpu_last_error());
		ASSERT_EQ(0, hpu_stream_synchronize(lazy)) TH_LOG("%s", hpu_last_error());
	}
	ASSERT_EQ(0, setitimer(ITIMER_REAL, &off, NULL));
	ASSERT_EQ(0, sigaction(SIGALRM, &old_sa, NULL));
	ksft_print_msg("%d signals during %u steps\n", (int)alarms, THREAD_STEPS);
	EXPECT_LT(THREAD_STEPS, alarms);
	same_state(_metadata, self->s, &alone, lazy, &m);
	mlp_free(&alone);
	mlp_free(&m);
	hpu_tensor_destroy(big);
	hpu_stream_destroy(lazy);
	fflush(stdout);
}

TEST_HARNESS_MAIN
