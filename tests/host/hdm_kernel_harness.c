/* SPDX-License-Identifier: MIT */
/* Harness of the kernel-library host tests; see hdm_kernel_harness.h. */
#include "hdm_kernel_harness.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

bool hpu_ktest_failed;

void hpu_kexpect(bool ok, const char *what, const char *file, int line)
{
	if (ok)
		return;
	printf("#   %s:%d: expected %s\n", file, line, what);
	hpu_ktest_failed = true;
}

void hpu_ktest_plan(size_t count)
{
	printf("TAP version 13\n1..%zu\n", count);
}

bool hpu_ktest_report(unsigned int n, const char *name)
{
	bool ok = !hpu_ktest_failed;

	printf("%s %u - %s\n", ok ? "ok" : "not ok", n, name);
	hpu_ktest_failed = false;
	return ok;
}

unsigned int hpu_ktest_run(const struct hpu_ktest_case *cases, size_t count, unsigned int *n)
{
	unsigned int failed = 0;

	for (size_t i = 0; i < count; i++) {
		cases[i].run();
		failed += !hpu_ktest_report(++*n, cases[i].name);
	}
	return failed;
}

unsigned int hpu_ktest_main(const struct hpu_ktest_case *cases, size_t count)
{
	unsigned int n = 0;

	hpu_ktest_plan(count);
	return hpu_ktest_run(cases, count, &n);
}

/* ---- host tensors ---- */

static void *hpu_kalloc(size_t size)
{
	void *p = malloc(size ? size : 1);

	if (!p) {
		fprintf(stderr, "out of memory\n");
		exit(2);
	}
	return p;
}

struct hpu_ktensor *hpu_kt_new(uint32_t dtype, uint32_t ndim, const uint64_t *shape,
			       const int64_t *strides)
{
	struct hpu_ktensor *t = hpu_kalloc(sizeof(*t));
	unsigned int esize = hdm_dtype_size(dtype);
	int64_t lo = 0, hi = 0, step = 1;
	uint64_t i, n;
	uint32_t d;

	memset(t, 0, sizeof(*t));
	t->v.dtype = dtype;
	t->v.ndim = ndim;
	for (d = 0; d < HPU_TENSOR_MAX_DIMS; d++)
		t->v.shape[d] = 1;
	for (d = ndim; d-- > 0;) {
		t->v.shape[d] = shape[d];
		t->v.strides[d] = strides ? strides[d] : step;
		step *= (int64_t)shape[d];
	}
	n = hdm_kview_numel(&t->v);
	/* The span of offsets the elements reach, so the allocation holds exactly them. */
	for (d = 0; n && d < ndim; d++) {
		int64_t reach = (int64_t)(shape[d] - 1) * t->v.strides[d];

		if (reach < 0)
			lo += reach;
		else
			hi += reach;
	}
	t->size = n ? (size_t)(hi - lo + 1) * esize : 0;
	t->buf = hpu_kalloc(t->size);
	memset(t->buf, HPU_KT_POISON, t->size);
	t->v.base = t->buf - lo * (int64_t)esize;
	for (i = 0; i < n; i++)
		hpu_kt_set(t, i, 0);
	return t;
}

void hpu_kt_free(struct hpu_ktensor *t)
{
	if (!t)
		return;
	free(t->buf);
	free(t);
}

uint64_t hpu_kt_numel(const struct hpu_ktensor *t)
{
	return hdm_kview_numel(&t->v);
}

void hpu_kt_set(struct hpu_ktensor *t, uint64_t i, double v)
{
	hdm_kstore_f(t->v.dtype, hdm_kview_at(&t->v, i), v);
}

double hpu_kt_get(const struct hpu_ktensor *t, uint64_t i)
{
	return hdm_kload_f(t->v.dtype, hdm_kview_at(&t->v, i));
}

int64_t hpu_kt_get_i(const struct hpu_ktensor *t, uint64_t i)
{
	return hdm_kload_i(t->v.dtype, hdm_kview_at(&t->v, i));
}

void hpu_kt_fill(struct hpu_ktensor *t, const double *vals)
{
	uint64_t i, n = hpu_kt_numel(t);

	for (i = 0; i < n; i++)
		hpu_kt_set(t, i, vals[i]);
}

static void hpu_kt_fill_gen(struct hpu_ktensor *t, uint64_t seed, double lo, double hi, bool whole)
{
	uint64_t i, n = hpu_kt_numel(t), s = seed * 0x9e3779b97f4a7c15ull + 1;

	for (i = 0; i < n; i++) {
		double u, v;

		/* xorshift64*: reproducible everywhere, unlike rand(). */
		s ^= s >> 12;
		s ^= s << 25;
		s ^= s >> 27;
		u = (double)((s * 0x2545f4914f6cdd1dull) >> 11) / (double)(1ull << 53);
		v = lo + u * (hi - lo);
		hpu_kt_set(t, i, whole ? floor(v) : v);
	}
}

void hpu_kt_fill_random(struct hpu_ktensor *t, uint64_t seed, double lo, double hi)
{
	hpu_kt_fill_gen(t, seed, lo, hi, !hdm_dtype_is_float(t->v.dtype));
}

void hpu_kt_fill_whole(struct hpu_ktensor *t, uint64_t seed, double lo, double hi)
{
	hpu_kt_fill_gen(t, seed, lo, hi, true);
}

double *hpu_kt_values(const struct hpu_ktensor *t)
{
	uint64_t i, n = hpu_kt_numel(t);
	double *v = hpu_kalloc(n * sizeof(*v));

	for (i = 0; i < n; i++)
		v[i] = hpu_kt_get(t, i);
	return v;
}

double hpu_kround(uint32_t dtype, double v)
{
	uint8_t b[8];

	hdm_kstore_f(dtype, b, v);
	return hdm_kload_f(dtype, b);
}

bool hpu_kt_gaps_intact(const struct hpu_ktensor *t)
{
	unsigned int esize = hdm_dtype_size(t->v.dtype);
	uint64_t i, n = hpu_kt_numel(t);
	bool *elem = hpu_kalloc(t->size);
	bool ok = true;
	size_t b;

	memset(elem, 0, t->size);
	for (i = 0; i < n; i++)
		memset(elem + (hdm_kview_at(&t->v, i) - t->buf), 1, esize);
	for (b = 0; b < t->size; b++)
		ok &= elem[b] || t->buf[b] == HPU_KT_POISON;
	free(elem);
	return ok;
}

/* ---- launches ---- */

/* The state of a launch run outside hpu_krun(): never cancelled; a fault stays until the next. */
static struct hdm_kstate hpu_kstate_direct;

void hpu_kcall_init(struct hdm_kcall *c, uint32_t kernel, unsigned int n,
		    struct hpu_ktensor *const *t)
{
	unsigned int i;

	memset(c, 0, sizeof(*c));
	c->kernel = kernel;
	c->num_tensors = n;
	c->state = &hpu_kstate_direct;
	for (i = 0; i < n; i++)
		c->t[i] = t[i]->v;
}

const char *const hpu_ksplit_names[HPU_KSPLIT_COUNT] = { "one range", "split", "threads" };

#define HPU_KTHREADS 4

struct hpu_krange {
	const struct hdm_kernel_def *def;
	const struct hdm_kcall *c;
	uint64_t begin, end;
};

static void *hpu_krange_thread(void *arg)
{
	struct hpu_krange *r = arg;

	r->def->run(r->c, r->begin, r->end);
	return NULL;
}

/* k parts'ths of n, without overflow; nondecreasing in k, n at k = parts. */
static uint64_t hpu_kpart(uint64_t n, unsigned int k, unsigned int parts)
{
	return n / parts * k + n % parts * k / parts;
}

static void hpu_krun_split(const struct hdm_kernel_def *def, const struct hdm_kcall *c,
			   uint64_t items, enum hpu_ksplit split)
{
	/* Cuts in tenths: parts of 1, 0, 2, 3 and 4 tenths. */
	static const unsigned int cuts[] = { 0, 1, 1, 3, 6, 10 };
	struct hpu_krange r[HPU_KTHREADS];
	pthread_t tid[HPU_KTHREADS];
	size_t k;

	switch (split) {
	case HPU_KSPLIT_ONE:
	case HPU_KSPLIT_COUNT:
		def->run(c, 0, items);
		break;
	case HPU_KSPLIT_SEQ:
		for (k = HPU_ARRAY_SIZE(cuts) - 1; k-- > 0;)
			def->run(c, hpu_kpart(items, cuts[k], 10), hpu_kpart(items, cuts[k + 1], 10));
		break;
	case HPU_KSPLIT_THREADS:
		for (k = 0; k < HPU_KTHREADS; k++) {
			r[k] = (struct hpu_krange){ def, c, hpu_kpart(items, k, HPU_KTHREADS),
						    hpu_kpart(items, k + 1, HPU_KTHREADS) };
			if (pthread_create(&tid[k], NULL, hpu_krange_thread, &r[k])) {
				fprintf(stderr, "cannot start a thread\n");
				exit(2);
			}
		}
		for (k = 0; k < HPU_KTHREADS; k++)
			pthread_join(tid[k], NULL);
		break;
	}
}

/* The bytes of every element of v, row-major: malloc'ed. */
static uint8_t *hpu_kview_snapshot(const struct hdm_kview *v)
{
	unsigned int esize = hdm_dtype_size(v->dtype);
	uint64_t i, n = hdm_kview_numel(v);
	uint8_t *s = hpu_kalloc(n * esize);

	for (i = 0; i < n; i++)
		memcpy(s + i * esize, hdm_kview_at(v, i), esize);
	return s;
}

uint64_t hpu_kitem_work(const struct hdm_kernel_def *def, const struct hdm_kcall *c,
			uint64_t items)
{
	return hdm_kernel_item_work(def, c, items, def->work ? def->work(c, items) : items);
}

int hpu_krun(const struct hdm_kernel_def *def, const struct hdm_kcall *launch,
	     enum hpu_ksplit split)
{
	uint8_t *before[HPU_KERNEL_MAX_TENSORS] = { NULL };
	struct hdm_kstate state = { .fault = NULL };
	struct hdm_kcall call = *launch, *c = &call;
	uint64_t items[HDM_KERNEL_MAX_PHASES] = { 0 };
	unsigned int phases = def->phases ? def->phases : 1;
	uint32_t outputs, i, j;
	int ret;

	call.state = &state;
	if (c->num_tensors < def->min_tensors || c->num_tensors > def->max_tensors)
		return -1;
	HPU_KEXPECT(phases <= HDM_KERNEL_MAX_PHASES);
	ret = def->check(c, items);
	if (ret)
		return ret;
	outputs = def->outputs(c);
	for (i = 0; i < c->num_tensors; i++) {
		bool aliased = false;

		for (j = 0; j < c->num_tensors; j++)
			aliased |= (outputs >> j & 1) && c->t[j].base == c->t[i].base;
		if (!aliased)
			before[i] = hpu_kview_snapshot(&c->t[i]);
	}
	/* As the engine gives it: zeroed, at most HDM_KERNEL_SCRATCH_MAX. */
	if (def->scratch && def->scratch(c, items[0])) {
		uint64_t len = def->scratch(c, items[0]);

		HPU_KEXPECT(len <= HDM_KERNEL_SCRATCH_MAX);
		state.scratch = hpu_kalloc(len);
		memset(state.scratch, 0, len);
	}
	/* Phase after phase, each item of one before any of the next, as the engine. */
	for (state.phase = 0; state.phase < phases && !state.fault; state.phase++) {
		HPU_KEXPECT(hpu_kitem_work(def, c, items[state.phase]) <= HPU_KERNEL_MAX_ITEM_WORK);
		hpu_krun_split(def, c, items[state.phase], split);
		if (!state.fault && def->finish)
			def->finish(c);
	}
	if (state.fault) {
		printf("#   %s: %s\n", def->name, state.fault);
		ret = HPU_KRUN_FAULT;
	}
	free(state.scratch);
	for (i = 0; i < c->num_tensors; i++) {
		uint8_t *after;

		if (!before[i])
			continue;
		after = hpu_kview_snapshot(&c->t[i]);
		if (memcmp(before[i], after, hdm_kview_numel(&c->t[i]) * hdm_dtype_size(c->t[i].dtype))) {
			printf("#   %s wrote t[%u], which is not an output\n", def->name, i);
			hpu_ktest_failed = true;
		}
		free(after);
		free(before[i]);
	}
	return ret;
}

void hpu_klaunch(const struct hdm_kernel_def *def, const struct hdm_kcall *c, int line)
{
	static unsigned int turn;

	if (hpu_krun(def, c, (enum hpu_ksplit)(turn++ % HPU_KSPLIT_COUNT))) {
		printf("#   line %d: %s rejected or failed a valid launch\n", line, def->name);
		hpu_ktest_failed = true;
	}
}

/* ---- comparisons ---- */

#define HPU_KMISMATCHES_SHOWN 5

bool hpu_kexpect_near(const struct hpu_ktensor *got, const double *want, double rtol, double atol,
		      const char *what, int line)
{
	uint64_t i, n = hpu_kt_numel(got), bad = 0;

	for (i = 0; i < n; i++) {
		double g = hpu_kt_get(got, i), w = want[i];
		bool ok = (isnan(g) && isnan(w)) || g == w ||
			  (isfinite(g) && isfinite(w) && fabs(g - w) <= atol + rtol * fabs(w));

		if (!ok && bad++ < HPU_KMISMATCHES_SHOWN)
			printf("#   line %d: %s[%llu] = %.9g, want %.9g\n", line, what,
			       (unsigned long long)i, g, w);
	}
	if (bad) {
		printf("#   line %d: %s: %llu of %llu elements off (rtol %g, atol %g)\n", line, what,
		       (unsigned long long)bad, (unsigned long long)n, rtol, atol);
		hpu_ktest_failed = true;
	}
	if (!hpu_kt_gaps_intact(got)) {
		printf("#   line %d: %s: bytes between elements were written\n", line, what);
		hpu_ktest_failed = true;
	}
	return !bad;
}

bool hpu_kexpect_same(const struct hpu_ktensor *a, const struct hpu_ktensor *b, const char *what,
		      int line)
{
	uint64_t i, n = hpu_kt_numel(a), bad = 0;
	unsigned int esize = hdm_dtype_size(a->v.dtype);

	if (a->v.dtype != b->v.dtype || n != hpu_kt_numel(b)) {
		printf("#   line %d: %s: different dtypes or sizes\n", line, what);
		hpu_ktest_failed = true;
		return false;
	}
	for (i = 0; i < n; i++) {
		if (memcmp(hdm_kview_at(&a->v, i), hdm_kview_at(&b->v, i), esize) &&
		    bad++ < HPU_KMISMATCHES_SHOWN)
			printf("#   line %d: %s: element %llu differs: %.9g vs %.9g\n", line, what,
			       (unsigned long long)i, hpu_kt_get(a, i), hpu_kt_get(b, i));
	}
	if (bad)
		hpu_ktest_failed = true;
	return !bad;
}

/* A copy of v's elements, contiguous or scattered as hpu_kexpect_layouts_agree() says. */
static struct hpu_ktensor *hpu_kt_copy(const struct hdm_kview *v, bool scattered)
{
	unsigned int esize = hdm_dtype_size(v->dtype);
	int64_t strides[HPU_TENSOR_MAX_DIMS], step = 2;
	uint64_t i, n = hdm_kview_numel(v);
	struct hpu_ktensor *t;
	uint32_t d;

	for (d = 0; d < v->ndim; d++) {
		strides[d] = step;
		step *= (int64_t)(v->shape[d] ? v->shape[d] : 1);
	}
	if (v->ndim)
		strides[v->ndim - 1] = -strides[v->ndim - 1];
	t = hpu_kt_new(v->dtype, v->ndim, v->shape, scattered ? strides : NULL);
	for (i = 0; i < n; i++)
		memcpy(hdm_kview_at(&t->v, i), hdm_kview_at(v, i), esize);
	return t;
}

void hpu_kexpect_layouts_agree(const struct hdm_kernel_def *def, const struct hdm_kcall *c,
			       int line)
{
	struct hpu_ktensor *t[2][HPU_KERNEL_MAX_TENSORS];
	uint32_t outputs = def->outputs(c), i, j;
	struct hdm_kcall run[2];
	char what[64];
	int k;

	for (k = 0; k < 2; k++) {
		run[k] = *c;
		for (i = 0; i < c->num_tensors; i++) {
			for (j = 0; j < i && memcmp(&c->t[j], &c->t[i], sizeof(c->t[i])); j++)
				;
			t[k][i] = j < i ? NULL : hpu_kt_copy(&c->t[i], k);
			run[k].t[i] = t[k][j]->v;
		}
		if (hpu_krun(def, &run[k], k ? HPU_KSPLIT_SEQ : HPU_KSPLIT_ONE)) {
			printf("#   line %d: %s rejected a valid launch\n", line, def->name);
			hpu_ktest_failed = true;
		}
	}
	for (i = 0; i < c->num_tensors; i++) {
		if ((outputs >> i & 1) && t[0][i]) {
			snprintf(what, sizeof(what), "%s t[%u] contiguous vs scattered", def->name, i);
			hpu_kexpect_same(t[0][i], t[1][i], what, line);
		}
		hpu_kt_free(t[0][i]);
		hpu_kt_free(t[1][i]);
	}
}

double hpu_ktol(uint32_t dtype)
{
	switch (dtype) {
	case HPU_DTYPE_F32: return HPU_KTOL_F32;
	case HPU_DTYPE_BF16: return HPU_KTOL_BF16;
	default: return 0;
	}
}

bool hpu_kgradcheck(struct hpu_ktensor *x, double (*f)(void *ctx), void *ctx,
		    const struct hpu_ktensor *grad, double eps, double rtol, double atol,
		    const char *what, int line)
{
	uint64_t i, n = hpu_kt_numel(x), bad = 0;

	for (i = 0; i < n; i++) {
		double v = hpu_kt_get(x, i), xp, xm, fp, fm, num, ana = hpu_kt_get(grad, i);

		/* Differences over the values x really holds once its dtype rounded them. */
		hpu_kt_set(x, i, v + eps);
		xp = hpu_kt_get(x, i);
		fp = f(ctx);
		hpu_kt_set(x, i, v - eps);
		xm = hpu_kt_get(x, i);
		fm = f(ctx);
		hpu_kt_set(x, i, v);
		num = (fp - fm) / (xp - xm);
		if (!(fabs(num - ana) <= atol + rtol * fabs(num)) && bad++ < HPU_KMISMATCHES_SHOWN)
			printf("#   line %d: %s: d/dx[%llu] analytic %.9g, numeric %.9g\n", line, what,
			       (unsigned long long)i, ana, num);
	}
	if (bad) {
		printf("#   line %d: %s: %llu of %llu gradients off\n", line, what,
		       (unsigned long long)bad, (unsigned long long)n);
		hpu_ktest_failed = true;
	}
	return !bad;
}

/* ---- rejections ---- */

static void hpu_kmutate(struct hdm_kcall *c, struct hpu_ktensor *const *t,
			const struct hpu_kmutation *m)
{
	switch (m->kind) {
	case HPU_KMUT_COUNT: c->num_tensors = (uint32_t)m->v; break;
	case HPU_KMUT_DTYPE: c->t[m->i].dtype = (uint32_t)m->v; break;
	case HPU_KMUT_NDIM: c->t[m->i].ndim = (uint32_t)m->v; break;
	case HPU_KMUT_SHAPE: c->t[m->i].shape[m->v]++; break;
	case HPU_KMUT_ARG: c->args[m->i] = m->v; break;
	case HPU_KMUT_SCALAR: c->scalars[m->i] = m->s; break;
	case HPU_KMUT_VALUE: hdm_kstore_i(t[m->i]->v.dtype, t[m->i]->v.base, m->v); break;
	case HPU_KMUT_ALIAS: c->t[m->i].base = c->t[m->v].base; break;
	}
}

void hpu_kexpect_rejections(const struct hpu_kreject_case *rc)
{
	struct hpu_ktensor *t[HPU_KERNEL_MAX_TENSORS];
	struct hdm_kcall c;
	unsigned int i;

	for (i = 0; i < rc->n; i++)
		t[i] = hpu_kt_new(rc->t[i].dtype, rc->t[i].ndim, rc->t[i].shape, NULL);
	hpu_kcall_init(&c, rc->kernel, rc->n, t);
	memcpy(c.args, rc->args, sizeof(c.args));
	memcpy(c.scalars, rc->scalars, sizeof(c.scalars));
	if (hpu_krun(rc->def, &c, HPU_KSPLIT_ONE)) {
		printf("#   %s: the valid launch was rejected\n", rc->name);
		hpu_ktest_failed = true;
	}
	for (size_t k = 0; k < rc->nmuts; k++) {
		const struct hpu_kmutation *m = &rc->muts[k];
		struct hdm_kcall bad = c;
		uint8_t *before[HPU_KERNEL_MAX_TENSORS];

		hpu_kmutate(&bad, t, m);
		for (i = 0; i < rc->n; i++)
			before[i] = hpu_kview_snapshot(&t[i]->v);
		/* Refused by check(), or by a phase before any write. */
		if (!hpu_krun(rc->def, &bad, HPU_KSPLIT_ONE)) {
			printf("#   %s: the launch accepts %s\n", rc->name, m->what);
			hpu_ktest_failed = true;
		}
		for (i = 0; i < rc->n; i++) {
			uint8_t *after = hpu_kview_snapshot(&t[i]->v);

			if (memcmp(before[i], after,
				   hdm_kview_numel(&t[i]->v) * hdm_dtype_size(t[i]->v.dtype))) {
				printf("#   %s: refusing %s wrote t[%u]\n", rc->name, m->what, i);
				hpu_ktest_failed = true;
			}
			free(after);
			free(before[i]);
		}
		if (m->kind == HPU_KMUT_VALUE) /* back to the valid zero */
			hdm_kstore_i(t[m->i]->v.dtype, t[m->i]->v.base, 0);
	}
	for (i = 0; i < rc->n; i++)
		hpu_kt_free(t[i]);
}
