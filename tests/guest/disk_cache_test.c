// SPDX-License-Identifier: MIT
/*
 * The persistent recipe cache against the live device: a process trains
 * the MLP lazily and replays it as a captured graph with
 * HPU_RECIPE_CACHE_CONFIG set; a second process with the warm directory
 * compiles nothing, loads every recipe from disk and ends with bitwise the
 * same parameters.  A directory that cannot be written (the host's root,
 * read-only in the guest) leaves caching in memory with one warning, and
 * results unchanged.  A directory other users may write is refused with
 * one warning saying so, and the process runs without the disk cache.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hpu/hpu.h>
#include <hpu/hpu_graph.h>
#include <hpu/hpu_tensor.h>

#include "kselftest_harness.h"

#include "hpu_mlp.h"

/* What a run reports to the test: its counters and the parameters it ended with. */
struct run_result {
	uint64_t compiles, disk_hits, disk_writes, write_failures;
	float params[HID * IN + HID + OUT * HID + OUT];
	int failed;
};

/* Two lazy steps, then two replays of a captured step; parameters read back into r. */
static int train(struct run_result *r)
{
	struct hpu_device *dev = NULL;
	struct hpu_stream *s = NULL;
	struct hpu_graph *g = NULL;
	struct mlp m = { 0 };
	size_t at = 0, size;
	unsigned int step, i;
	int ret;

	ret = hpu_device_open(0, &dev);
	if (!ret)
		ret = hpu_stream_create(dev, &s);
	if (ret)
		return ret;
	lcg = 1;
	mlp_init(dev, s, &m);
	ret = hpu_stream_set_lazy(s, true);
	for (step = 0; step < 2 && !ret; step++) {
		ret = load_batch(s, &m, step);
		if (!ret)
			ret = mlp_step(dev, s, &m);
		if (!ret)
			ret = hpu_mark_step(s);
	}
	if (!ret)
		ret = hpu_stream_set_lazy(s, false);
	if (!ret)
		ret = hpu_graph_create(dev, &g);
	if (!ret)
		ret = hpu_graph_capture_begin(g, s);
	if (!ret)
		ret = mlp_step(dev, s, &m);
	if (!ret)
		ret = hpu_graph_capture_end(g);
	for (step = 2; step < 4 && !ret; step++) {
		ret = load_batch(s, &m, step);
		if (!ret)
			ret = hpu_graph_replay(g, s);
	}
	for (i = 0; i < NPARAMS && !ret; i++) {
		void *p = read_all(s, m.p[i], &size);

		if (!p || at + size > sizeof(r->params)) {
			ret = -EINVAL;
		} else {
			memcpy((uint8_t *)r->params + at, p, size);
			at += size;
		}
		free(p);
	}
	hpu_graph_destroy(g);
	mlp_free(&m);
	hpu_stream_destroy(s);
	/* Closing waits for the queued writes: the next process finds them. */
	hpu_device_close(dev);
	r->compiles = metric("graph_compilation", "TotalNumber");
	r->disk_hits = metric("recipe_cache_disk", "Hits");
	r->disk_writes = metric("recipe_cache_disk", "Writes");
	r->write_failures = metric("recipe_cache_disk", "WriteFailures");
	return ret;
}

/*
 * Runs train() in a child process with config as HPU_RECIPE_CACHE_CONFIG;
 * its stderr goes to err_path.
 */
static int run(const char *config, const char *err_path, struct run_result *r)
{
	int fds[2], status;
	ssize_t n;
	pid_t pid;

	if (pipe(fds))
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (!pid) {
		struct run_result mine = { 0 };

		close(fds[0]);
		if (!freopen(err_path, "w", stderr))
			_exit(2);
		setenv("HPU_RECIPE_CACHE_CONFIG", config, 1);
		mine.failed = train(&mine);
		if (mine.failed)
			fprintf(stderr, "train: %s\n", hpu_last_error());
		fflush(stderr);
		n = write(fds[1], &mine, sizeof(mine));
		_exit(n == sizeof(mine) ? 0 : 1);
	}
	close(fds[1]);
	n = read(fds[0], r, sizeof(*r));
	close(fds[0]);
	waitpid(pid, &status, 0);
	return n == sizeof(*r) && WIFEXITED(status) && !WEXITSTATUS(status) ? 0 : -EIO;
}

/* Lines of path containing what. */
static int count_lines(const char *path, const char *what)
{
	char line[1024];
	int count = 0;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		count += strstr(line, what) != NULL;
	fclose(f);
	return count;
}

static void path_in(char *buf, size_t len, const char *name)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(buf, len, "%s/%s", tmp ? tmp : "/tmp", name);
}

TEST(a_warm_process_compiles_nothing_and_computes_the_same)
{
	struct run_result cold, warm;
	char dir[512], config[600], err[512];

	path_in(dir, sizeof(dir), "disk_cache_test.recipes");
	path_in(err, sizeof(err), "disk_cache_test.err");
	snprintf(config, sizeof(config), "%s,true,64", dir);
	ASSERT_EQ(0, run(config, err, &cold));
	ASSERT_EQ(0, cold.failed);
	EXPECT_GT(cold.compiles, 0);
	EXPECT_EQ(cold.compiles, cold.disk_writes);
	EXPECT_EQ(0, cold.disk_hits);
	snprintf(config, sizeof(config), "%s,false,64", dir);
	ASSERT_EQ(0, run(config, err, &warm));
	ASSERT_EQ(0, warm.failed);
	EXPECT_EQ(0, warm.compiles);
	EXPECT_EQ(cold.compiles, warm.disk_hits);
	EXPECT_EQ(0, warm.disk_writes);
	EXPECT_EQ(0, memcmp(cold.params, warm.params, sizeof(cold.params)))
		TH_LOG("the warm process's parameters differ");
	ksft_print_msg("cold: %llu compiles, warm: %llu recipes loaded\n",
		       (unsigned long long)cold.compiles, (unsigned long long)warm.disk_hits);
}

TEST(a_read_only_directory_caches_in_memory_with_one_warning)
{
	const char *top = getenv("HPU_TOP");
	struct run_result ro, none;
	char config[600], err[512], dir[512];

	ASSERT_NE(NULL, top);
	path_in(err, sizeof(err), "disk_cache_test.err");
	/* No cache at all: the reference. */
	ASSERT_EQ(0, run("", err, &none));
	ASSERT_EQ(0, none.failed);
	/*
	 * Every write fails in a directory of this user's that it may not write; root writes
	 * anywhere, but not in the host tree, which is mounted read-only (and root's).
	 */
	if (geteuid()) {
		path_in(dir, sizeof(dir), "disk_cache_test.ro");
		ASSERT_TRUE(!mkdir(dir, 0500) || errno == EEXIST);
		ASSERT_EQ(0, chmod(dir, 0500));
	} else {
		snprintf(dir, sizeof(dir), "%s/build", top);
	}
	snprintf(config, sizeof(config), "%s,false,64", dir);
	ASSERT_EQ(0, run(config, err, &ro));
	ASSERT_EQ(0, ro.failed);
	EXPECT_EQ(none.compiles, ro.compiles);
	EXPECT_EQ(0, ro.disk_writes);
	EXPECT_GE(ro.write_failures, 1);
	EXPECT_EQ(1, count_lines(err, "warning")) TH_LOG("stderr in %s", err);
	EXPECT_EQ(0, memcmp(none.params, ro.params, sizeof(ro.params)));
}

TEST(a_directory_others_may_write_is_refused_with_one_warning)
{
	struct run_result shared;
	char dir[512], config[600], err[512];

	path_in(dir, sizeof(dir), "disk_cache_test.shared");
	path_in(err, sizeof(err), "disk_cache_test.err");
	ASSERT_TRUE(!mkdir(dir, 0700) || errno == EEXIST);
	ASSERT_EQ(0, chmod(dir, 0777));
	snprintf(config, sizeof(config), "%s,false,64", dir);
	ASSERT_EQ(0, run(config, err, &shared));
	ASSERT_EQ(0, shared.failed);
	EXPECT_GT(shared.compiles, 0);
	EXPECT_EQ(0, shared.disk_hits);
	EXPECT_EQ(0, shared.disk_writes);
	EXPECT_EQ(0, shared.write_failures);
	EXPECT_EQ(1, count_lines(err, "warning")) TH_LOG("stderr in %s", err);
	EXPECT_EQ(1, count_lines(err, "writable by its group or others"));
}

TEST_HARNESS_MAIN
