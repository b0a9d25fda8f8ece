/* SPDX-License-Identifier: MIT */
/*
 * Host unit test of the index kernels (index_select, gather, scatter_add)
 * and topk: each against a naive reference over every dim of odd shapes,
 * scalars and empty tensors, I32 and I64 indices, F32, BF16 and I64 data
 * (and the other dtypes the gathers copy); scatter_add with duplicate
 * indices; topk with ties, NaN, k = 0 and k = n both ways; contiguous and
 * scattered operands giving the same bytes; every rejection, out-of-range
 * and negative indices among them.  Launches rotate through the harness's
 * ways of splitting the items.  Prints TAP.
 *
 * Tolerances: gathers and topk copy elements, so they are exact.
 * scatter_add sums in double and rounds once: 1e-6 relative for fp32,
 * 2^-8 for bf16, exact for I64 (whole numbers).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hdm_kernel_harness.h"

#define F32 HPU_DTYPE_F32
#define BF16 HPU_DTYPE_BF16
#define I32 HPU_DTYPE_I32
#define I64 HPU_DTYPE_I64
#define U8 HPU_DTYPE_U8

/* ---- shapes and coordinates ---- */

struct shape {
	uint32_t ndim;
	uint64_t d[HPU_TENSOR_MAX_DIMS];
};

/* Odd shapes, a dim of one, a scalar and an empty one. */
static const struct shape shapes[] = {
	{ 3, { 3, 4, 5 } }, { 1, { 7 } }, { 4, { 2, 1, 3, 2 } }, { 0, { 0 } },
	{ 2, { 0, 3 } },    { 2, { 5, 3 } },
};

static void unravel(const struct shape *s, uint64_t i, uint64_t *pos)
{
	for (uint32_t d = s->ndim; d-- > 0;) {
		pos[d] = i % s->d[d];
		i /= s->d[d];
	}
}

static uint64_t ravel(const struct shape *s, const uint64_t *pos)
{
	uint64_t i = 0;

	for (uint32_t d = 0; d < s->ndim; d++)
		i = i * s->d[d] + pos[d];
	return i;
}

static uint64_t numel(const struct shape *s)
{
	uint64_t n = 1;

	for (uint32_t d = 0; d < s->ndim; d++)
		n *= s->d[d];
	return n;
}

/* The size of s along dim (1 for a scalar). */
static uint64_t dim_size(const struct shape *s, uint32_t dim)
{
	return s->ndim ? s->d[dim] : 1;
}

static struct hpu_ktensor *kt(uint32_t dtype, const struct shape *s)
{
	return hpu_kt_new(dtype, s->ndim, s->d, NULL);
}

/* Random whole numbers (bf16 holds them exactly below 256). */
static struct hpu_ktensor *kt_random(uint32_t dtype, const struct shape *s, double lo,
				     double hi)
{
	static uint64_t seed;
	struct hpu_ktensor *t = kt(dtype, s);

	hpu_kt_fill_whole(t, ++seed, lo, hi);
	return t;
}

/* Random floats. */
static struct hpu_ktensor *kt_noise(uint32_t dtype, const struct shape *s)
{
	static uint64_t seed = 1000;
	struct hpu_ktensor *t = kt(dtype, s);

	hpu_kt_fill_random(t, ++seed, -2, 2);
	return t;
}

static void free_all(struct hpu_ktensor **t, size_t n)
{
	for (size_t i = 0; i < n; i++)
		hpu_kt_free(t[i]);
}

static const uint32_t data_dtypes[] = { F32, BF16, I64 };

/* f on every shape, each of its dims and every data dtype; turn counts the calls. */
static void for_each_case(void (*f)(const struct shape *s, uint32_t dim, uint32_t dtype,
				    unsigned int turn))
{
	unsigned int turn = 0;

	for (size_t s = 0; s < HPU_ARRAY_SIZE(shapes); s++)
		for (uint32_t dim = 0; dim < (shapes[s].ndim ? shapes[s].ndim : 1); dim++)
			for (size_t dt = 0; dt < HPU_ARRAY_SIZE(data_dtypes); dt++)
				f(&shapes[s], dim, data_dtypes[dt], turn++);
}

/* ---- index_select and gather ---- */

/* want[i] = in[i with i[dim] = idx(i)] over out's shape os. */
static double *gather_ref(const struct hpu_ktensor *in, const struct shape *is,
			  const struct shape *os, uint32_t dim, const double *idx, bool select)
{
	uint64_t n = numel(os), pos[HPU_TENSOR_MAX_DIMS];
	double *want = malloc((n ? n : 1) * sizeof(*want)), *iv = hpu_kt_values(in);

	for (uint64_t i = 0; i < n; i++) {
		unravel(os, i, pos);
		if (os->ndim)
			pos[dim] = (uint64_t)idx[select ? pos[dim] : i];
		want[i] = iv[is->ndim ? ravel(is, pos) : 0];
	}
	free(iv);
	return want;
}

/*
 * One launch of index_select (select: a 1-D index of ks, here of k
 * elements) or gather (an index of out's shape os), against the reference.
 */
static void gather_case(const struct shape *is, uint32_t dim, const struct shape *os,
			const struct shape *ks, uint32_t dtype, uint32_t idx_dtype,
			unsigned int turn)
{
	const struct hdm_kernel_def *def = ks ? &hdm_kernel_index_select : &hdm_kernel_gather;
	struct hpu_ktensor *t[3];
	struct hdm_kcall c;
	double *idx, *want;

	t[1] = kt_noise(dtype, is);
	t[0] = kt(dtype, os);
	t[2] = kt_random(idx_dtype, ks ? ks : os, 0, (double)dim_size(is, dim));
	if (hpu_kt_numel(t[2]) > 1) /* a duplicate */
		hpu_kt_set(t[2], hpu_kt_numel(t[2]) - 1, hpu_kt_get(t[2], 0));
	idx = hpu_kt_values(t[2]);
	HPU_KCALL(&c, ks ? HPU_KERNEL_INDEX_SELECT : HPU_KERNEL_GATHER, t[0], t[1], t[2]);
	c.args[0] = dim;
	HPU_KLAUNCH(def, &c);
	want = gather_ref(t[1], is, os, dim, idx, ks != NULL);
	HPU_KEXPECT_NEAR(t[0], want, 0, 0);
	if (turn % 3 == 0)
		HPU_KEXPECT_LAYOUTS_AGREE(def, &c);
	free(want);
	free(idx);
	free_all(t, 3);
}

static void select_case(const struct shape *is, uint32_t dim, uint64_t k, uint32_t dtype,
			uint32_t idx_dtype, unsigned int turn)
{
	struct shape os = *is, ks = { 1, { k } };

	if (is->ndim)
		os.d[dim] = k;
	else
		ks.ndim = turn % 2; /* a scalar's index: of one element, 0-d or 1-d */
	gather_case(is, dim, &os, &ks, dtype, idx_dtype, turn);
}

static void index_select_cases(const struct shape *is, uint32_t dim, uint32_t dtype,
			       unsigned int turn)
{
	uint64_t n = dim_size(is, dim), k = !is->ndim ? 1 : n ? 2 * n + 1 : 0;

	select_case(is, dim, k, dtype, turn % 2 ? I32 : I64, turn);
	if (n && is->ndim) /* fewer than the dim has */
		select_case(is, dim, 1, dtype, I64, turn);
}

static void test_index_select(void)
{
	for_each_case(index_select_cases);
}

/* Index shapes: in's, longer along dim, and shorter in the other dims. */
static void gather_cases(const struct shape *is, uint32_t dim, uint32_t dtype, unsigned int turn)
{
	struct shape os = *is;
	uint32_t it = turn % 2 ? I32 : I64;

	gather_case(is, dim, &os, NULL, dtype, it, turn);
	if (!is->ndim || !is->d[dim])
		return;
	os.d[dim] = 2 * is->d[dim] + 1;
	for (uint32_t d = 0; d < is->ndim; d++)
		if (d != dim && os.d[d] > 1)
			os.d[d]--;
	gather_case(is, dim, &os, NULL, dtype, it, turn + 1);
}

static void test_gather(void)
{
	for_each_case(gather_cases);
}

/* The gathers copy bytes: I32 and bool data too, NaN payloads kept. */
static void test_gather_dtypes(void)
{
	const struct shape is = { 2, { 4, 3 } };

	select_case(&is, 1, 5, I32, I32, 0);
	select_case(&is, 0, 6, U8, I64, 1);
	gather_case(&is, 0, &is, NULL, U8, I32, 2);
	gather_case(&is, 1, &is, NULL, I32, I64, 3);
}

/* ---- scatter_add ---- */

/*
 * self[i with i[dim] = index[i]] += src[i] (put: = src[i], the last one
 * along dim) over index's elements, in double.
 */
static double *scatter_ref(const struct hpu_ktensor *self, const struct shape *ss,
			   const struct hpu_ktensor *src, const struct shape *xs,
			   const struct shape *ks, uint32_t dim, const double *idx, bool put)
{
	uint64_t n = numel(ks), pos[HPU_TENSOR_MAX_DIMS];
	double *want = hpu_kt_values(self), *sv = hpu_kt_values(src);

	for (uint64_t i = 0; i < n; i++) {
		double x, *w;

		unravel(ks, i, pos);
		x = sv[xs->ndim ? ravel(xs, pos) : 0];
		if (ks->ndim)
			pos[dim] = (uint64_t)idx[i];
		w = &want[ss->ndim ? ravel(ss, pos) : 0];
		*w = put ? x : *w + x;
	}
	free(sv);
	return want;
}

/* scatter_add, or scatter on odd turns. */
static void scatter_case(const struct shape *ss, uint32_t dim, const struct shape *ks,
			 const struct shape *xs, uint32_t dtype, uint32_t idx_dtype,
			 unsigned int turn)
{
	const struct hdm_kernel_def *def = turn % 2 ? &hdm_kernel_scatter : &hdm_kernel_scatter_add;
	struct hpu_ktensor *t[3];
	struct hdm_kcall c;
	double *idx;
	double *want;

	t[0] = kt_random(dtype, ss, -8, 8);
	t[1] = kt_random(idx_dtype, ks, 0, (double)dim_size(ss, dim));
	t[2] = dtype == I64 ? kt_random(dtype, xs, -1000, 1000) : kt_noise(dtype, xs);
	idx = hpu_kt_values(t[1]);
	want = scatter_ref(t[0], ss, t[2], xs, ks, dim, idx, turn % 2);
	HPU_KCALL(&c, turn % 2 ? HPU_KERNEL_SCATTER : HPU_KERNEL_SCATTER_ADD, t[0], t[1], t[2]);
	c.args[0] = dim;
	if (turn % 3 == 0)
		HPU_KEXPECT_LAYOUTS_AGREE(def, &c);
	HPU_KLAUNCH(def, &c);
	HPU_KEXPECT_NEAR_DT(t[0], want);
	free(want);
	free(idx);
	free_all(t, 3);
}

/*
 * Index shapes: self's (many duplicates along dim), longer along dim and
 * shorter elsewhere, with src larger than index.
 */
static void scatter_cases(const struct shape *ss, uint32_t dim, uint32_t dtype, unsigned int turn)
{
	struct shape ks = *ss, xs;
	uint32_t it = turn % 2 ? I32 : I64;

	scatter_case(ss, dim, &ks, &ks, dtype, it, turn);
	if (!ss->ndim || !ss->d[dim])
		return;
	ks.d[dim] = 3 * ss->d[dim] + 2;
	for (uint32_t d = 0; d < ss->ndim; d++)
		if (d != dim && ks.d[d] > 1)
			ks.d[d]--;
	xs = ks;
	for (uint32_t d = 0; d < ss->ndim; d++)
		xs.d[d] += d % 2;
	scatter_case(ss, dim, &ks, &xs, dtype, it, turn + 1);
}

static void test_scatter_add(void)
{
	for_each_case(scatter_cases);
}

/*
 * self longer than a block along dim (several items per column), indices
 * bunched on a few rows: the same bytes however the launch is split, and
 * the sums of whole numbers exact.
 */
static void test_scatter_add_blocks(void)
{
	const struct shape ss = { 2, { 1300, 3 } }, ks = { 2, { 2000, 3 } };

	for (uint32_t dtype = F32; dtype <= BF16; dtype++) {
		struct hpu_ktensor *t[3] = {
			kt_random(dtype, &ss, -4, 4), kt_random(I64, &ks, 400, 1300),
			kt_random(dtype, &ks, -4, 4),
		};
		double *idx = hpu_kt_values(t[1]);
		double *want = scatter_ref(t[0], &ss, t[2], &ks, &ks, 0, idx, false);
		struct hdm_kcall c;

		HPU_KCALL(&c, HPU_KERNEL_SCATTER_ADD, t[0], t[1], t[2]);
		HPU_KEXPECT_LAYOUTS_AGREE(&hdm_kernel_scatter_add, &c);
		HPU_KLAUNCH(&hdm_kernel_scatter_add, &c);
		HPU_KEXPECT_NEAR(t[0], want, 0, 0);
		free(want);
		free(idx);
		free_all(t, 3);
	}
}

/* index_add_: a 1-D index broadcast over src's other dims by stride 0. */
static void test_index_add(void)
{
	const struct shape ss = { 3, { 4, 5, 2 } }, xs = { 3, { 4, 7, 2 } };
	struct hpu_ktensor *self = kt_random(F32, &ss, -4, 4), *src = kt_noise(F32, &xs);
	struct hpu_ktensor *idx = kt_random(I32, &(struct shape){ 1, { 7 } }, 0, 5);
	struct hpu_ktensor *view = hpu_kt_new(I32, 3, xs.d, HPU_KT_STRIDES(0, 1, 0));
	double *want = hpu_kt_values(self), *sv = hpu_kt_values(src);
	double *iv = hpu_kt_values(idx);
	struct hdm_kcall c;

	for (uint64_t j = 0; j < 7; j++)
		hpu_kt_set(view, j * 2, iv[j]);
	for (uint64_t a = 0; a < 4; a++)
		for (uint64_t j = 0; j < 7; j++)
			for (uint64_t b = 0; b < 2; b++)
				want[(a * 5 + (uint64_t)iv[j]) * 2 + b] += sv[(a * 7 + j) * 2 + b];
	HPU_KCALL(&c, HPU_KERNEL_SCATTER_ADD, self, view, src);
	c.args[0] = 1;
	HPU_KLAUNCH(&hdm_kernel_scatter_add, &c);
	HPU_KEXPECT_NEAR_DT(self, want);
	free(want);
	free(sv);
	free(iv);
	free_all((struct hpu_ktensor *[]){ self, src, idx, view }, 4);
}

/* ---- topk ---- */

struct topk_ref {
	const double *row;
	bool largest;
};

/* The kernel's order: larger (smaller) first, NaN above every number, ties by lower index. */
static int topk_order(const struct topk_ref *r, uint64_t a, uint64_t b)
{
	double x = r->row[a], y = r->row[b];
	int s = isnan(x) || isnan(y) ? isnan(x) - isnan(y) : (x > y) - (x < y);

	if (!r->largest)
		s = -s;
	return s ? -s : (a > b) - (a < b);
}

static void topk_case(const struct shape *is, uint32_t dim, uint64_t k, bool largest,
		      uint32_t dtype, uint32_t idx_dtype, unsigned int turn)
{
	struct shape os = *is;
	uint64_t n = dim_size(is, dim), pos[HPU_TENSOR_MAX_DIMS];
	struct hpu_ktensor *t[3];
	double *iv, *want_v, *want_i, *row;
	uint64_t *order;
	struct hdm_kcall c;

	if (is->ndim)
		os.d[dim] = k;
	/* Few distinct values: ties in every row, and NaN in the floats. */
	t[2] = kt_random(dtype, is, -3, 3);
	if (dtype != I64 && numel(is) > 2) {
		hpu_kt_set(t[2], 1, NAN);
		hpu_kt_set(t[2], numel(is) - 1, NAN);
	}
	t[0] = kt(dtype, &os);
	t[1] = kt(idx_dtype, &os);
	HPU_KCALL(&c, HPU_KERNEL_TOPK, t[0], t[1], t[2]);
	c.args[0] = (int64_t)k;
	c.args[1] = dim;
	c.args[2] = largest;
	c.args[3] = turn % 2;
	HPU_KLAUNCH(&hdm_kernel_topk, &c);
	iv = hpu_kt_values(t[2]);
	want_v = malloc((numel(&os) + 1) * sizeof(double));
	want_i = malloc((numel(&os) + 1) * sizeof(double));
	row = malloc((n + 1) * sizeof(double));
	order = malloc((n + 1) * sizeof(uint64_t));
	for (uint64_t o = 0; o < numel(&os); o++) {
		struct topk_ref r = { row, largest };

		unravel(&os, o, pos);
		if (pos[dim] && os.ndim)
			continue; /* each row once, from its first element */
		for (uint64_t j = 0; j < n; j++) {
			if (os.ndim)
				pos[dim] = j;
			row[j] = iv[is->ndim ? ravel(is, pos) : 0];
			order[j] = j;
		}
		/* Insertion sort by the kernel's order: rows are short. */
		for (uint64_t j = 1; j < n; j++)
			for (uint64_t m = j; m && topk_order(&r, order[m], order[m - 1]) < 0; m--) {
				uint64_t x = order[m];

				order[m] = order[m - 1];
				order[m - 1] = x;
			}
		for (uint64_t j = 0; j < k; j++) {
			if (os.ndim)
				pos[dim] = j;
			want_v[os.ndim ? ravel(&os, pos) : 0] = row[order[j]];
			want_i[os.ndim ? ravel(&os, pos) : 0] = (double)order[j];
		}
	}
	HPU_KEXPECT_NEAR(t[0], want_v, 0, 0);
	HPU_KEXPECT_NEAR(t[1], want_i, 0, 0);
	if (turn % 3 == 0)
		HPU_KEXPECT_LAYOUTS_AGREE(&hdm_kernel_topk, &c);
	free(order);
	free(row);
	free(want_i);
	free(want_v);
	free(iv);
	free_all(t, 3);
}

/* Every dim, k from 0 to n, largest and smallest, with ties and NaN. */
static void topk_cases(const struct shape *is, uint32_t dim, uint32_t dtype, unsigned int turn)
{
	uint64_t n = dim_size(is, dim);

	for (uint64_t k = !is->ndim; k <= n; k += 1 + (n > 4), turn++)
		topk_case(is, dim, k, turn % 2, dtype, turn % 3 ? I64 : I32, turn);
	topk_case(is, dim, n, turn % 2 == 0, dtype, I64, turn);
}

static void test_topk(void)
{
	for_each_case(topk_cases);
}

/* Rows longer than a heap's first levels, and I32 data. */
static void test_topk_long_rows(void)
{
	const struct shape is = { 2, { 3, 1000 } }, js = { 1, { 777 } };

	topk_case(&is, 1, 50, true, F32, I64, 1);
	topk_case(&is, 1, 1000, false, BF16, I32, 2);
	topk_case(&js, 0, 300, true, I32, I64, 3);
}

/*
 * A launch of three 1-D views of the given lengths, F32 but for an I64 t[1],
 * at addresses nothing reads: for check() and the work alone.
 */
static struct hdm_kcall unread_call(uint32_t kernel, struct hdm_kstate *st, const uint64_t *n)
{
	struct hdm_kcall c = { .kernel = kernel, .num_tensors = 3, .state = st };

	for (unsigned int i = 0; i < 3; i++) {
		c.t[i].dtype = i == 1 ? I64 : F32;
		c.t[i].ndim = 1;
		c.t[i].shape[0] = n[i];
		c.t[i].strides[0] = 1;
		c.t[i].base = (uint8_t *)(uintptr_t)(4096 * (i + 1));
	}
	return c;
}

/* A row's work grows with n and k: one too long for an item is the engine's to refuse. */
static void test_topk_item_work(void)
{
	struct hdm_kstate st = { 0 };
	struct hdm_kcall c = unread_call(HPU_KERNEL_TOPK, &st, HPU_KT_DIMS(100, 100, 1u << 20));
	uint64_t items[HDM_KERNEL_MAX_PHASES] = { 0 };

	c.args[0] = 100;
	c.args[2] = 1;
	HPU_KEXPECT(hdm_kernel_topk.check(&c, items) == 0 && items[0] == 1);
	HPU_KEXPECT(hpu_kitem_work(&hdm_kernel_topk, &c, 1) > HPU_KERNEL_MAX_ITEM_WORK);
	c.t[2].shape[0] = 40000;
	HPU_KEXPECT(hpu_kitem_work(&hdm_kernel_topk, &c, 1) <= HPU_KERNEL_MAX_ITEM_WORK);
}

/* ---- indices overwritten while a kernel runs ---- */

/*
 * The gathers' out (F32 [8, 1], 8 bytes a row) laid over their I64 index:
 * element n lands on the low word of index n + 1, which the scan saw as 0
 * and the copy then meets as 0x3fc00000 (1.5's bits).  The engine refuses
 * this overlap; another job writing HBM under a launch does the same.  The
 * copy must check the index where it uses it and fail the launch, not read
 * a gigabyte past in (the sanitizer build would report it).
 */
static void test_indices_overwritten_mid_run(void)
{
	const struct shape one = { 2, { 8, 1 } }, in = { 2, { 4, 1 } };
	struct hpu_ktensor *ix = kt(I64, &(struct shape){ 2, { 9, 1 } }), *x = kt(F32, &in);
	struct hpu_ktensor *out = kt(F32, &one);

	for (uint64_t i = 0; i < 4; i++)
		hpu_kt_set(x, i, 1.5);
	for (unsigned int select = 0; select < 2; select++) {
		const struct hdm_kernel_def *def = select ? &hdm_kernel_index_select : &hdm_kernel_gather;
		struct hdm_kstate st = { .fault = NULL };
		uint64_t items[HDM_KERNEL_MAX_PHASES] = { 0 };
		struct hdm_kcall c;

		memset(ix->buf, 0, ix->size);
		HPU_KCALL(&c, select ? HPU_KERNEL_INDEX_SELECT : HPU_KERNEL_GATHER, out, x, ix);
		c.t[0].base = c.t[2].base + 8;
		c.t[0].strides[0] = 2;
		c.t[2].shape[0] = 8;
		c.t[2].ndim = 2 - select; /* index_select's is [8] */
		c.state = &st;
		HPU_KEXPECT(def->check(&c, items) == 0);
		for (st.phase = 0; st.phase < def->phases && !st.fault; st.phase++)
			def->run(&c, 0, items[st.phase]);
		HPU_KEXPECT(st.fault && !strcmp(st.fault, "an index out of range"));
	}
	free_all((struct hpu_ktensor *[]){ ix, x, out }, 3);
}

/* ---- rejections ---- */

#define T345(dt) { dt, 3, { 3, 4, 5 } }

static const struct hpu_kreject_case reject_cases[] = {
	{ "index_select", &hdm_kernel_index_select, HPU_KERNEL_INDEX_SELECT, { 1 }, { 0 }, 3,
	  { { F32, 3, { 3, 2, 5 } }, T345(F32), { I64, 1, { 2 } } },
	  HPU_KMUTS(HPU_KM_COUNT(2), HPU_KM_VALUE(2, 4), HPU_KM_VALUE(2, -1),
		    HPU_KM_ARG(0, 3), HPU_KM_ARG(0, -1), HPU_KM_DTYPE(0, BF16),
		    HPU_KM_DTYPE(2, F32), HPU_KM_DTYPE(2, U8), HPU_KM_NDIM(2, 2),
		    HPU_KM_SHAPE(2, 0), HPU_KM_SHAPE(0, 0), HPU_KM_SHAPE(0, 1),
		    HPU_KM_NDIM(0, 2), HPU_KM_ALIAS(0, 1), HPU_KM_ALIAS(0, 2)) },
	{ "gather", &hdm_kernel_gather, HPU_KERNEL_GATHER, { 2 }, { 0 }, 3,
	  { { F32, 3, { 3, 4, 6 } }, T345(F32), { I32, 3, { 3, 4, 6 } } },
	  HPU_KMUTS(HPU_KM_COUNT(4), HPU_KM_VALUE(2, 5), HPU_KM_VALUE(2, -1),
		    HPU_KM_ARG(0, 3), HPU_KM_ARG(0, -3), HPU_KM_DTYPE(0, I64),
		    HPU_KM_DTYPE(2, BF16), HPU_KM_SHAPE(2, 0), HPU_KM_SHAPE(0, 1),
		    HPU_KM_NDIM(2, 2), HPU_KM_NDIM(1, 2), HPU_KM_ALIAS(0, 1),
		    HPU_KM_ALIAS(0, 2)) },
	/* index longer than self along dim 0; src one larger in each dim than index. */
	{ "scatter_add", &hdm_kernel_scatter_add, HPU_KERNEL_SCATTER_ADD, { 0 }, { 0 }, 3,
	  { T345(BF16), { I64, 3, { 7, 4, 5 } }, { BF16, 3, { 7, 5, 5 } } },
	  HPU_KMUTS(HPU_KM_COUNT(2), HPU_KM_VALUE(1, 3), HPU_KM_VALUE(1, -1),
		    HPU_KM_ARG(0, 3), HPU_KM_ARG(0, -1), HPU_KM_DTYPE(0, U8),
		    HPU_KM_DTYPE(2, F32), HPU_KM_DTYPE(1, F32), HPU_KM_SHAPE(1, 1),
		    HPU_KM_SHAPE(1, 0), HPU_KM_NDIM(1, 2), HPU_KM_NDIM(2, 4),
		    HPU_KM_ALIAS(0, 1), HPU_KM_ALIAS(0, 2)) },
	{ "scatter", &hdm_kernel_scatter, HPU_KERNEL_SCATTER, { 1 }, { 0 }, 3,
	  { { I32, 2, { 3, 4 } }, { I32, 2, { 3, 6 } }, { I32, 2, { 3, 6 } } },
	  HPU_KMUTS(HPU_KM_VALUE(1, 4), HPU_KM_VALUE(1, -1), HPU_KM_DTYPE(0, U8),
		    HPU_KM_SHAPE(1, 0), HPU_KM_ALIAS(0, 2)) },
	{ "topk", &hdm_kernel_topk, HPU_KERNEL_TOPK, { 2, 1, 1, 1 }, { 0 }, 3,
	  { { F32, 3, { 3, 2, 5 } }, { I64, 3, { 3, 2, 5 } }, T345(F32) },
	  HPU_KMUTS(HPU_KM_COUNT(2), HPU_KM_ARG(0, 3), HPU_KM_ARG(0, 5), HPU_KM_ARG(0, -1),
		    HPU_KM_ARG(1, 3), HPU_KM_ARG(1, -1), HPU_KM_ARG(2, 2), HPU_KM_ARG(3, -1),
		    HPU_KM_DTYPE(0, BF16), HPU_KM_DTYPE(1, F32), HPU_KM_DTYPE(2, U8),
		    HPU_KM_DTYPE(0, U8), HPU_KM_SHAPE(0, 1), HPU_KM_SHAPE(1, 0),
		    HPU_KM_SHAPE(2, 0), HPU_KM_NDIM(1, 2), HPU_KM_ALIAS(0, 2),
		    HPU_KM_ALIAS(1, 0), HPU_KM_ALIAS(1, 2)) },
	/* A scalar's k is 1. */
	{ "topk of a scalar", &hdm_kernel_topk, HPU_KERNEL_TOPK, { 1, 0, 1, 1 }, { 0 }, 3,
	  { { I64, 0, { 0 } }, { I32, 0, { 0 } }, { I64, 0, { 0 } } },
	  HPU_KMUTS(HPU_KM_ARG(0, 0), HPU_KM_ARG(0, 2), HPU_KM_ARG(1, 1)) },
};

static void test_rejections(void)
{
	for (size_t i = 0; i < HPU_ARRAY_SIZE(reject_cases); i++)
		hpu_kexpect_rejections(&reject_cases[i]);
}

/* A scatter whose columns are longer than an item may visit is refused. */
static void test_scatter_column_limit(void)
{
	const uint64_t k = HPU_KERNEL_MAX_ITEM_WORK - HPU_SCATTER_BLOCK;
	struct hdm_kstate st = { 0 };
	struct hdm_kcall c = unread_call(HPU_KERNEL_SCATTER_ADD, &st, HPU_KT_DIMS(10, k, k));
	uint64_t items[HDM_KERNEL_MAX_PHASES] = { 0 };

	HPU_KEXPECT(hdm_kernel_scatter_add.check(&c, items) == 0);
	HPU_KEXPECT(hpu_kitem_work(&hdm_kernel_scatter_add, &c, items[1]) <=
		    HPU_KERNEL_MAX_ITEM_WORK);
	c.t[1].shape[0]++;
	c.t[2].shape[0]++;
	HPU_KEXPECT(hdm_kernel_scatter_add.check(&c, items) != 0);
}

static const struct hpu_ktest_case cases[] = {
	{ "index_select every dim, dtype and index dtype", test_index_select },
	{ "gather every dim, shorter and longer indices", test_gather },
	{ "index_select and gather copy I32 and bool bytes", test_gather_dtypes },
	{ "scatter_add and scatter with duplicates, every dim", test_scatter_add },
	{ "scatter_add over several blocks, split-independent", test_scatter_add_blocks },
	{ "scatter_add as index_add_ (broadcast index)", test_index_add },
	{ "topk every dim and k, ties and NaN", test_topk },
	{ "topk on long rows", test_topk_long_rows },
	{ "topk item work bounds a row", test_topk_item_work },
	{ "scatter_add refuses a column past an item", test_scatter_column_limit },
	{ "gathers: an index overwritten mid-run fails the launch",
	  test_indices_overwritten_mid_run },
	{ "rejections", test_rejections },
};

int main(void)
{
	return hpu_ktest_main(cases, HPU_ARRAY_SIZE(cases)) ? 1 : 0;
}
