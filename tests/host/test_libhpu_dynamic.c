/* SPDX-License-Identifier: MIT */
/*
 * Host unit test of libhpu's dynamic-shape helpers (graph/hpu_dynamic.c)
 * and recompile warnings (recipe/hpu_recompile.c), built from their
 * sources with no device: the bucket of every size, the argument checks of
 * hpu_bucket_size() and hpu_tensor_pad(), and the warnings - once per site
 * for new shapes and once for repeats of a shape, counted in
 * HPU_C_RECOMPILE_WARNINGS (repeats in HPU_C_REPEATS; the metrics
 * graph_compilation.RecompileWarnings and .Repeats).  Prints TAP.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../userspace/lib/graph/graph.h"
#include "test_libhpu_tap.h"

/*
 * What hpu_dynamic.c needs of the op layer, which this test does not link.
 * Padding needs a device: here only its checks run, which fail before any
 * of these is called.
 */
static int no_device(void)
{
	test_failed = true;
	printf("#   hpu_tensor_pad went past its checks\n");
	return hpu_error_set(ENODEV, "no device in this test");
}

int hpu_tensor_empty(struct hpu_device *dev, enum hpu_dt dtype, unsigned int ndim,
		     const int64_t *shape, struct hpu_tensor **tp)
{
	(void)dev, (void)dtype, (void)ndim, (void)shape, (void)tp;
	return no_device();
}

void hpu_tensor_destroy(struct hpu_tensor *t)
{
	(void)t;
}

int hpu_tensor_slice(struct hpu_tensor *t, unsigned int dim, int64_t start, int64_t end,
		     int64_t step, struct hpu_tensor **outp)
{
	(void)t, (void)dim, (void)start, (void)end, (void)step, (void)outp;
	return no_device();
}

int hpu_op_fill(struct hpu_stream *s, struct hpu_tensor *out, double value)
{
	(void)s, (void)out, (void)value;
	return no_device();
}

int hpu_op_unary(struct hpu_stream *s, enum hpu_unary_fn fn, struct hpu_tensor *out,
		 const struct hpu_tensor *in)
{
	(void)s, (void)fn, (void)out, (void)in;
	return no_device();
}

static void test_buckets(void)
{
	static const struct {
		int64_t n, min, max, bucket;
	} cases[] = {
		{ 1, 1, 128, 1 },     { 2, 1, 128, 2 },      { 3, 1, 128, 4 },
		{ 5, 1, 128, 8 },     { 64, 1, 128, 64 },    { 65, 1, 128, 128 },
		{ 127, 1, 128, 128 }, { 128, 1, 128, 128 },
		{ 1, 8, 128, 8 },     { 8, 8, 128, 8 },      { 9, 8, 128, 16 },
		/* min need not be a power of two: the bucket is */
		{ 2, 3, 128, 4 },
		/* max need not be one: it caps, and is a bucket itself */
		{ 65, 1, 100, 100 },  { 100, 1, 100, 100 },  { 33, 1, 100, 64 },
		{ 7, 7, 7, 7 },
		/* beyond max: n itself, nothing to pad */
		{ 129, 1, 128, 129 }, { 1000, 8, 100, 1000 },
		/* near the top of int64_t: no overflow */
		{ INT64_MAX / 2 + 2, 1, INT64_MAX, INT64_MAX },
		{ (INT64_C(1) << 62) - 1, 1, INT64_MAX, INT64_C(1) << 62 },
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		int64_t got = hpu_bucket_size(cases[i].n, cases[i].min, cases[i].max);

		if (got != cases[i].bucket) {
			printf("#   bucket of %lld in [%lld, %lld]: %lld, expected %lld\n",
			       (long long)cases[i].n, (long long)cases[i].min,
			       (long long)cases[i].max, (long long)got, (long long)cases[i].bucket);
			test_failed = true;
		}
	}
}

/* Seed 003's batch sizes, 1 to 127, fall into few buckets. */
static void test_seed_sizes_take_few_buckets(void)
{
	int64_t n, prev = 0;
	unsigned int buckets = 0;

	for (n = 1; n <= 127; n++) {
		int64_t b = hpu_bucket_size(n, 8, 128);

		EXPECT(b >= n && b <= 128 && !(b & (b - 1)));
		buckets += b != prev;
		prev = b;
	}
	EXPECT(buckets == 5); /* 8, 16, 32, 64, 128 */
}

static void test_bucket_rejects(void)
{
	static const int64_t bad[][3] = {
		{ 0, 1, 128 }, { -5, 1, 128 }, { 4, 0, 128 }, { 4, -1, 128 },
		{ 4, 16, 8 },  { 4, 1, 0 },
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		hpu_error_set(0, "%s", "");
		EXPECT(hpu_bucket_size(bad[i][0], bad[i][1], bad[i][2]) == -EINVAL);
		EXPECT_PREFIX(hpu_last_error(), "hpu_bucket_size: n ");
	}
	hpu_bucket_size(4, 16, 8);
	EXPECT_STR(hpu_last_error(),
		   "hpu_bucket_size: n 4, min 16, max 8: want n >= 1 and 1 <= min <= max");
}

static void test_pad_rejects(void)
{
	struct hpu_stream stream = { 0 };
	struct hpu_tensor t = { 0 }, *out = &t;

	hpu_layout_init(&t.l, HPU_DT_F32, 2, (int64_t[]){ 3, 5 });
	EXPECT(hpu_tensor_pad(&stream, &t, 0, 4, 0, NULL) == -EINVAL);
	EXPECT_STR(hpu_last_error(), "hpu_tensor_pad: outp is NULL");
	EXPECT(hpu_tensor_pad(NULL, &t, 0, 4, 0, &out) == -EINVAL);
	EXPECT_STR(hpu_last_error(), "hpu_tensor_pad: stream is NULL");
	EXPECT(out == NULL);
	EXPECT(hpu_tensor_pad(&stream, NULL, 0, 4, 0, &out) == -EINVAL);
	EXPECT_STR(hpu_last_error(), "hpu_tensor_pad: in is NULL");
	EXPECT(hpu_tensor_pad(&stream, &t, 2, 4, 0, &out) == -EINVAL);
	EXPECT_STR(hpu_last_error(), "hpu_tensor_pad: dim 2 of a tensor of 2 dims");
	EXPECT(hpu_tensor_pad(&stream, &t, 1, 4, 0, &out) == -EINVAL);
	EXPECT_STR(hpu_last_error(), "hpu_tensor_pad: size 4 is less than in's 5 along dim 1");
	hpu_layout_init(&t.l, HPU_DT_F32, 0, NULL);
	EXPECT(hpu_tensor_pad(&stream, &t, 0, 1, 0, &out) == -EINVAL);
	EXPECT_STR(hpu_last_error(), "hpu_tensor_pad: dim 0 of a tensor of 0 dims");
}

/* stderr goes to a file while fn runs; returns what was written (malloc'ed). */
static char *stderr_of(void (*fn)(void *), void *arg)
{
	FILE *f = tmpfile();
	int saved = dup(2);
	char *text = NULL;
	long size;

	if (!f || saved < 0 || dup2(fileno(f), 2) < 0) {
		test_failed = true;
		return NULL;
	}
	fn(arg);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	size = ftell(f);
	text = calloc(1, size + 1);
	rewind(f);
	if (text && fread(text, 1, size, f) != (size_t)size)
		test_failed = true;
	fclose(f);
	return text;
}

static unsigned int count_of(const char *text, const char *needle)
{
	unsigned int n = 0;

	for (; text && (text = strstr(text, needle)); text++)
		n++;
	return n;
}

/* A graph of two ops (a copy then a fill) over rows of n elements. */
static struct hpu_gnode site_nodes[2];
static struct hpu_ir site_ir = { .nodes = site_nodes, .num_nodes = 2 };

static void site_shape(int64_t n)
{
	site_nodes[0].op = (struct hpu_op){ .name = "copy", .kernel = 1, .num_tensors = 2 };
	hpu_layout_init(&site_nodes[0].op.l[0], HPU_DT_F32, 2, (int64_t[]){ n, 16 });
	site_nodes[0].op.l[1] = site_nodes[0].op.l[0];
	site_nodes[1].op = (struct hpu_op){ .name = "fill", .kernel = 2, .num_tensors = 1 };
	site_nodes[1].op.l[0] = site_nodes[0].op.l[0];
}

/* Compiles of one site at sizes 1..*count, then one of another site. */
static void compile_sizes(void *count)
{
	int64_t n;

	for (n = 1; n <= *(int64_t *)count; n++) {
		site_shape(n);
		hpu_recompile_note(&site_ir, (uint64_t)n, 0);
	}
	site_nodes[1].op.kernel = 3;
	hpu_recompile_note(&site_ir, 1, 0);
}

/*
 * *count compiles of one site and one key: for one device's cache, as when
 * its recipe keeps being evicted (count > 0), or for -count devices.
 */
static void compile_repeats(void *count)
{
	int64_t n, c = *(int64_t *)count;

	site_shape(7);
	site_nodes[1].op.kernel = 4;
	for (n = 0; n < (c < 0 ? -c : c); n++)
		hpu_recompile_note(&site_ir, 7, c < 0 ? (uint64_t)n + 100 : 0);
}

static void test_warns_once_per_site(void)
{
	uint64_t before = 0, after = 0;
	int64_t count = 3;
	char *text;

	setenv("HPU_RECOMPILE_WARN", "3", 1);
	before = hpu_counter_get(HPU_C_RECOMPILE_WARNINGS);
	/* 3 compiles: at the limit, no warning. */
	text = stderr_of(compile_sizes, &count);
	EXPECT(count_of(text, "warning") == 0);
	free(text);
	/* 10 more of the same site at other shapes: one warning, at the 4th. */
	count = 10;
	text = stderr_of(compile_sizes, &count);
	EXPECT(count_of(text, "libhpu: warning: graph site ") == 1);
	EXPECT(count_of(text, "(2 ops, first copy, last fill) has compiled 4 recipes") == 1);
	EXPECT(count_of(text, "(HPU_RECOMPILE_WARN=3)") == 1);
	EXPECT(count_of(text, "hpu_bucket_size(), hpu_tensor_pad()") == 1);
	free(text);
	after = hpu_counter_get(HPU_C_RECOMPILE_WARNINGS);
	EXPECT(after - before == 1);
	unsetenv("HPU_RECOMPILE_WARN");
}

static void test_warns_once_per_site_on_repeats(void)
{
	uint64_t before = 0, after = 0, repeats = 0;
	int64_t count = 4;
	char *text;

	setenv("HPU_RECOMPILE_WARN", "3", 1);
	before = hpu_counter_get(HPU_C_RECOMPILE_WARNINGS);
	repeats = hpu_counter_get(HPU_C_REPEATS);
	/* One shape compiled 4 times: 3 repeats, at the limit. */
	text = stderr_of(compile_repeats, &count);
	EXPECT(count_of(text, "warning") == 0);
	free(text);
	/* 10 more: one warning, at the 4th repeat, about the cache, not the shapes. */
	count = 10;
	text = stderr_of(compile_repeats, &count);
	EXPECT(count_of(text, "libhpu: warning: graph site ") == 1);
	EXPECT(count_of(text, "has compiled graphs it compiled before 4 times (HPU_RECOMPILE_WARN=3)") ==
	       1);
	EXPECT(count_of(text, "HPU_RECIPE_CACHE_SIZE, hpu_recipe_cache_set_capacity()") == 1);
	EXPECT(count_of(text, "one per new shape") == 0);
	free(text);
	after = hpu_counter_get(HPU_C_RECOMPILE_WARNINGS);
	EXPECT(after - before == 1);
	after = hpu_counter_get(HPU_C_REPEATS);
	EXPECT(after - repeats == 13);
	/* The same key for 10 other devices' caches: neither a repeat nor a new shape. */
	count = -10;
	text = stderr_of(compile_repeats, &count);
	EXPECT(count_of(text, "warning") == 0);
	free(text);
	repeats = hpu_counter_get(HPU_C_REPEATS);
	EXPECT(after == repeats);
	unsetenv("HPU_RECOMPILE_WARN");
}

static const struct tap_test tests[] = {
	{ "buckets are powers of two within [min, max]", test_buckets },
	{ "seed 003's batch sizes 1..127 take 5 buckets from 8", test_seed_sizes_take_few_buckets },
	{ "hpu_bucket_size rejects bad sizes", test_bucket_rejects },
	{ "hpu_tensor_pad rejects bad arguments", test_pad_rejects },
	{ "a site recompiling past HPU_RECOMPILE_WARN warns once", test_warns_once_per_site },
	{ "a site recompiling one shape for one cache past HPU_RECOMPILE_WARN warns once, of the cache",
	  test_warns_once_per_site_on_repeats },
};

int main(void)
{
	unsigned int n = 0;

	printf("TAP version 13\n1..%zu\n", ARRAY_SIZE(tests));
	return tap_run(tests, ARRAY_SIZE(tests), &n) ? 1 : 0;
}
