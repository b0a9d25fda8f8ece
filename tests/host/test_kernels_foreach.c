/* SPDX-License-Identifier: MIT */
/*
 * Host unit test of the FOREACH kernels: the optimizers (SGD, AdamW,
 * Adadelta, LAMB) over lists of parameters of odd shapes and layouts,
 * split over launches as the runtime splits them, the learning rate
 * changed between steps in its device scalar and the step counted once per
 * step; each step against a reference of torch.optim's single-tensor
 * formulas (LAMB's as its paper, with the trust ratio) in double from the
 * values the tensors hold, so each is checked to its rounding (fp32 1e-6,
 * bf16 2^-8 relative and absolute).  NORM and CLIP over more tensors than
 * a launch takes, against the norm in double; every rejection.  Prints TAP.
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

#define LAST 1
#define NESTEROV 2
#define BIAS_CORRECTION 2
#define GRAD_AVERAGING 4
#define RESET 1

enum optimizer { SGD, ADAMW, ADADELTA, LAMB };

static const uint32_t kernel_ids[] = {
	[SGD] = HPU_KERNEL_FOREACH_SGD, [ADAMW] = HPU_KERNEL_FOREACH_ADAMW,
	[ADADELTA] = HPU_KERNEL_FOREACH_ADADELTA, [LAMB] = HPU_KERNEL_FOREACH_LAMB,
};
static const struct hdm_kernel_def *const kernel_defs[] = {
	[SGD] = &hdm_kernel_foreach_sgd, [ADAMW] = &hdm_kernel_foreach_adamw,
	[ADADELTA] = &hdm_kernel_foreach_adadelta, [LAMB] = &hdm_kernel_foreach_lamb,
};

/* ---- parameters: odd shapes and layouts ---- */

#define PARAMS 7

/* Param k's tensor j (0 param, 1 grad, 2.. state) of dtype. */
static struct hpu_ktensor *param_tensor(unsigned int k, unsigned int j, uint32_t dtype)
{
	switch (k) {
	case 0: return hpu_kt_new(dtype, 2, HPU_KT_DIMS(3, 4), NULL);
	case 1: return hpu_kt_new(dtype, 2, HPU_KT_DIMS(3, 4), HPU_KT_STRIDES(1, 3 + j));
	case 2: return hpu_kt_new(dtype, 1, HPU_KT_DIMS(5), HPU_KT_STRIDES(j % 2 ? -2 : 1));
	case 3: return hpu_kt_new(dtype, 0, NULL, NULL);
	case 4: return hpu_kt_new(dtype, 3, HPU_KT_DIMS(2, 3, 2), NULL);
	case 5: return hpu_kt_new(dtype, 2, HPU_KT_DIMS(0, 3), NULL); /* empty */
	default: return hpu_kt_new(dtype, 1, HPU_KT_DIMS(37), NULL);
	}
}

struct opt_config {
	const char *name;
	enum optimizer opt;
	double s[4];
	int64_t flags; /* but LAST */
	uint32_t param_dtype, state_dtype, step_dtype;
};

static const struct opt_config configs[] = {
	{ "sgd plain", SGD, { 0, 0, 0 }, 0, F32, F32, I64 },
	{ "sgd momentum, dampening, weight decay", SGD, { 0.9, 0.25, 0.01 }, 0, F32, F32, F32 },
	{ "sgd nesterov, bf16 buffer", SGD, { 0.8, 0, 0.02 }, NESTEROV, F32, BF16, I64 },
	{ "sgd momentum, bf16", SGD, { 0.5, 0.1, 0 }, 0, BF16, BF16, I64 },
	{ "adamw", ADAMW, { 0.9, 0.999, 1e-8, 0 }, 0, F32, F32, F32 },
	{ "adamw weight decay", ADAMW, { 0.8, 0.99, 1e-6, 0.1 }, 0, F32, F32, I64 },
	{ "adamw bf16", ADAMW, { 0.9, 0.99, 1e-4, 0.01 }, 0, BF16, BF16, I64 },
	{ "adadelta", ADADELTA, { 0.9, 1e-6, 0 }, 0, F32, F32, F32 },
	{ "adadelta weight decay, bf16 state", ADADELTA, { 0.95, 1e-4, 0.1 }, 0, F32, BF16, I64 },
	{ "lamb", LAMB, { 0.9, 0.999, 1e-6, 0.01 }, BIAS_CORRECTION | GRAD_AVERAGING, F32, F32,
	  F32 },
	{ "lamb without bias correction or averaging", LAMB, { 0.8, 0.9, 1e-4, 0 }, 0, F32, F32,
	  I64 },
	{ "lamb bf16", LAMB, { 0.9, 0.99, 1e-6, 0.1 }, BIAS_CORRECTION, BF16, BF16, I64 },
};

/* Tensors per param, as the kernel takes them. */
static unsigned int width(const struct opt_config *cfg)
{
	return cfg->opt != SGD ? 4 : cfg->s[0] != 0 ? 3 : 2;
}

/* The whole list: lr, step and each param's tensors. */
struct opt_list {
	const struct opt_config *cfg;
	struct hpu_ktensor *lr, *step, *t[PARAMS][4];
	unsigned int w;
};

static void list_new(struct opt_list *l, const struct opt_config *cfg)
{
	l->cfg = cfg;
	l->w = width(cfg);
	l->lr = hpu_kt_new(F32, 0, NULL, NULL);
	l->step = hpu_kt_new(cfg->step_dtype, 0, NULL, NULL);
	for (unsigned int k = 0; k < PARAMS; k++) {
		for (unsigned int j = 0; j < l->w; j++)
			l->t[k][j] = param_tensor(k, j, j == 0 || j == 1 ? cfg->param_dtype
								       : cfg->state_dtype);
		hpu_kt_fill_random(l->t[k][0], k + 1, -2, 2);
	}
}

static void list_free(struct opt_list *l)
{
	hpu_kt_free(l->lr);
	hpu_kt_free(l->step);
	for (unsigned int k = 0; k < PARAMS; k++)
		for (unsigned int j = 0; j < l->w; j++)
			hpu_kt_free(l->t[k][j]);
}

/* A launch of params [first, first + n), the step's last if last. */
static void list_call(const struct opt_list *l, unsigned int first, unsigned int n, bool last,
		      struct hdm_kcall *c)
{
	struct hpu_ktensor *t[HPU_KERNEL_MAX_TENSORS] = { l->lr, l->step };
	unsigned int m = 2;

	for (unsigned int k = first; k < first + n; k++)
		for (unsigned int j = 0; j < l->w; j++)
			t[m++] = l->t[k][j];
	hpu_kcall_init(c, kernel_ids[l->cfg->opt], m, t);
	memcpy(c->scalars, l->cfg->s, sizeof(l->cfg->s));
	c->args[0] = l->cfg->flags | (last ? LAST : 0);
}

/* ---- references, in double: v[j] are param k's tensors' values, n elements ---- */

static double decayed(double g, double p, double wd)
{
	return wd != 0 ? g + wd * p : g;
}

static void ref_sgd(const double *s, int64_t flags, double lr, bool first, double **v, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		double d = decayed(v[1][i], v[0][i], s[2]);

		if (s[0] != 0) {
			v[2][i] = first ? d : s[0] * v[2][i] + (1 - s[1]) * d;
			d = flags & NESTEROV ? d + s[0] * v[2][i] : v[2][i];
		}
		v[0][i] -= lr * d;
	}
}

static void ref_adamw(const double *s, double lr, double t, double **v, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		double g = v[1][i];

		v[0][i] *= 1 - lr * s[3];
		v[2][i] = s[0] * v[2][i] + (1 - s[0]) * g;
		v[3][i] = s[1] * v[3][i] + (1 - s[1]) * g * g;
		v[0][i] -= lr / (1 - pow(s[0], t)) * v[2][i] /
			   (sqrt(v[3][i]) / sqrt(1 - pow(s[1], t)) + s[2]);
	}
}

static void ref_adadelta(const double *s, double lr, double **v, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		double g = decayed(v[1][i], v[0][i], s[2]), dx;

		v[2][i] = s[0] * v[2][i] + (1 - s[0]) * g * g;
		dx = sqrt(v[3][i] + s[1]) / sqrt(v[2][i] + s[1]) * g;
		v[3][i] = s[0] * v[3][i] + (1 - s[0]) * dx * dx;
		v[0][i] -= lr * dx;
	}
}

/* The moments are stored in state_dtype before the update reads them, as the device does. */
static void ref_lamb(const double *s, int64_t flags, uint32_t state_dtype, double lr, double t,
		     double **v, uint64_t n)
{
	double bc1 = flags & BIAS_CORRECTION ? 1 - pow(s[0], t) : 1;
	double bc2 = flags & BIAS_CORRECTION ? 1 - pow(s[1], t) : 1;
	double beta3 = flags & GRAD_AVERAGING ? 1 - s[0] : 1, wn = 0, un = 0, r;
	double *u = malloc((n + 1) * sizeof(*u));

	for (uint64_t i = 0; i < n; i++) {
		double g = v[1][i];

		v[2][i] = hpu_kround(state_dtype, s[0] * v[2][i] + beta3 * g);
		v[3][i] = hpu_kround(state_dtype, s[1] * v[3][i] + (1 - s[1]) * g * g);
		u[i] = v[2][i] / bc1 / (sqrt(v[3][i] / bc2) + s[2]) + s[3] * v[0][i];
		wn += v[0][i] * v[0][i];
		un += u[i] * u[i];
	}
	r = wn > 0 && un > 0 ? sqrt(wn) / sqrt(un) : 1;
	for (uint64_t i = 0; i < n; i++)
		v[0][i] -= lr * r * u[i];
	free(u);
}

static void ref_step(const struct opt_list *l, double lr, double step, double **v, uint64_t n)
{
	const struct opt_config *cfg = l->cfg;

	switch (cfg->opt) {
	case SGD: ref_sgd(cfg->s, cfg->flags, lr, step == 0, v, n); break;
	case ADAMW: ref_adamw(cfg->s, lr, step + 1, v, n); break;
	case ADADELTA: ref_adadelta(cfg->s, lr, v, n); break;
	case LAMB: ref_lamb(cfg->s, cfg->flags, cfg->state_dtype, lr, step + 1, v, n); break;
	}
}

/* ---- steps ---- */

#define STEPS 3

/*
 * Every param as many to a launch as fit, in launches back to back (the
 * last counting the step), a new lr in the device scalar each step; the
 * state starts at 0, as torch's.
 */
static void test_steps(void)
{
	for (size_t ci = 0; ci < HPU_ARRAY_SIZE(configs); ci++) {
		struct opt_list l;

		list_new(&l, &configs[ci]);
		for (unsigned int s = 0; s < STEPS; s++) {
			unsigned int per = (HPU_KERNEL_MAX_TENSORS - 2) / l.w;
			double lr = hpu_kround(F32, 0.1 / (s + 1)), *want[PARAMS][4];

			hpu_kt_set(l.lr, 0, lr);
			for (unsigned int k = 0; k < PARAMS; k++) {
				hpu_kt_fill_random(l.t[k][1], ci * 100 + s * 10 + k, -1, 1);
				for (unsigned int j = 0; j < l.w; j++)
					want[k][j] = hpu_kt_values(l.t[k][j]);
				ref_step(&l, lr, s, want[k], hpu_kt_numel(l.t[k][0]));
			}
			/* Fewer per launch on odd steps: the split does not matter. */
			if (s % 2)
				per = 2;
			for (unsigned int k = 0; k < PARAMS; k += per) {
				unsigned int n = PARAMS - k < per ? PARAMS - k : per;
				struct hdm_kcall c;

				list_call(&l, k, n, k + n == PARAMS, &c);
				HPU_KLAUNCH(kernel_defs[l.cfg->opt], &c);
			}
			HPU_KEXPECT(hpu_kt_get(l.step, 0) == s + 1);
			for (unsigned int k = 0; k < PARAMS; k++) {
				for (unsigned int j = 0; j < l.w; j++) {
					if (j != 1)
						HPU_KEXPECT_NEAR_DT(l.t[k][j], want[k][j]);
					free(want[k][j]);
				}
			}
		}
		list_free(&l);
	}
}

/* Launches that are not the step's last leave it; all read the same step. */
static void test_step_not_last(void)
{
	struct opt_list l;
	struct hdm_kcall c;

	list_new(&l, &configs[4]);
	hpu_kt_set(l.lr, 0, 0.01);
	hpu_kt_set(l.step, 0, 5);
	list_call(&l, 0, 3, false, &c);
	HPU_KLAUNCH(&hdm_kernel_foreach_adamw, &c);
	HPU_KEXPECT(hpu_kt_get(l.step, 0) == 5);
	list_call(&l, 3, 3, true, &c);
	HPU_KLAUNCH(&hdm_kernel_foreach_adamw, &c);
	HPU_KEXPECT(hpu_kt_get(l.step, 0) == 6);
	list_free(&l);
}

/* SGD without momentum has no buffer; a zero lr leaves every param as it was. */
static void test_sgd_zero_lr(void)
{
	struct opt_list l;
	struct hdm_kcall c;
	double *before;

	list_new(&l, &configs[0]);
	before = hpu_kt_values(l.t[6][0]);
	hpu_kt_fill_random(l.t[6][1], 3, -1, 1);
	list_call(&l, 4, 3, true, &c);
	HPU_KEXPECT(c.num_tensors == 8);
	HPU_KLAUNCH(&hdm_kernel_foreach_sgd, &c);
	HPU_KEXPECT_NEAR(l.t[6][0], before, 0, 0);
	free(before);
	list_free(&l);
}

/* Every optimizer: the same bytes whatever the layouts and the split. */
static void test_layouts_agree(void)
{
	for (size_t ci = 0; ci < HPU_ARRAY_SIZE(configs); ci++) {
		struct opt_list l;
		struct hdm_kcall c;

		list_new(&l, &configs[ci]);
		hpu_kt_set(l.lr, 0, 0.05);
		for (unsigned int k = 0; k < PARAMS; k++)
			for (unsigned int j = 1; j < l.w; j++)
				hpu_kt_fill_random(l.t[k][j], ci * 10 + k * 4 + j, 0, 1);
		list_call(&l, 1, 3, true, &c);
		HPU_KEXPECT_LAYOUTS_AGREE(kernel_defs[l.cfg->opt], &c);
		list_free(&l);
	}
}

/* LAMB's norms over many chunks: the same bytes whatever the split. */
static void test_lamb_chunks(void)
{
	struct hpu_ktensor *t[6] = { hpu_kt_new(F32, 0, NULL, NULL),
				     hpu_kt_new(I64, 0, NULL, NULL) };
	struct hpu_ktensor *copy[HPU_KSPLIT_COUNT][4];
	uint64_t n = 2 * HPU_CLIP_CHUNK + 7;
	struct hdm_kcall c;

	hpu_kt_set(t[0], 0, 0.01);
	for (int s = 0; s < HPU_KSPLIT_COUNT; s++) {
		for (unsigned int j = 0; j < 4; j++) {
			copy[s][j] = hpu_kt_new(F32, 1, HPU_KT_DIMS(n), NULL);
			hpu_kt_fill_random(copy[s][j], j + 1, j == 3 ? 0 : -1, 1);
			t[2 + j] = copy[s][j];
		}
		hpu_kt_set(t[1], 0, 0);
		hpu_kcall_init(&c, HPU_KERNEL_FOREACH_LAMB, 6, t);
		memcpy(c.scalars, configs[9].s, sizeof(configs[9].s));
		c.args[0] = configs[9].flags | LAST;
		HPU_KEXPECT(hpu_krun(&hdm_kernel_foreach_lamb, &c, (enum hpu_ksplit)s) == 0);
	}
	for (int s = 1; s < HPU_KSPLIT_COUNT; s++)
		for (unsigned int j = 0; j < 4; j++)
			HPU_KEXPECT_SAME(copy[s][j], copy[0][j]);
	for (int s = 0; s < HPU_KSPLIT_COUNT; s++)
		for (unsigned int j = 0; j < 4; j++)
			hpu_kt_free(copy[s][j]);
	hpu_kt_free(t[0]);
	hpu_kt_free(t[1]);
}

/* ---- NORM and CLIP ---- */

#define GRADS 33

static struct hpu_ktensor *grad_tensor(unsigned int i)
{
	return i == 7 ? hpu_kt_new(BF16, 2, HPU_KT_DIMS(4, 5), NULL)
		      : i == 20 ? hpu_kt_new(F32, 1, HPU_KT_DIMS(HPU_CLIP_CHUNK + 3), NULL)
				: param_tensor(i % PARAMS, i % 3, F32);
}

/*
 * clip_grad_norm_ of GRADS tensors in launches of per: NORMs (the first
 * resetting), then CLIPs.  The norm against double's, the accumulator
 * rounding to fp32 between launches; every grad against its scaled copy.
 */
static void clip_all(struct hpu_ktensor **g, double max_norm, double type, unsigned int per,
		     double *norm)
{
	struct hpu_ktensor *acc = hpu_kt_new(F32, 0, NULL, NULL);
	struct hpu_ktensor *nt = hpu_kt_new(F32, 0, NULL, NULL);
	struct hpu_ktensor *t[HPU_KERNEL_MAX_TENSORS];
	struct hdm_kcall c;

	hpu_kt_set(acc, 0, 12345); /* reset: not read */
	for (unsigned int i = 0; i < GRADS; i += per) {
		unsigned int n = GRADS - i < per ? GRADS - i : per;

		t[0] = acc;
		t[1] = nt;
		memcpy(&t[2], &g[i], n * sizeof(*t));
		hpu_kcall_init(&c, HPU_KERNEL_FOREACH_NORM, n + 2, t);
		c.scalars[0] = type;
		c.args[0] = i == 0 ? RESET : 0;
		HPU_KLAUNCH(&hdm_kernel_foreach_norm, &c);
	}
	*norm = hpu_kt_get(nt, 0);
	for (unsigned int i = 0; i < GRADS; i += per) {
		unsigned int n = GRADS - i < per ? GRADS - i : per;

		t[0] = nt;
		memcpy(&t[1], &g[i], n * sizeof(*t));
		hpu_kcall_init(&c, HPU_KERNEL_FOREACH_CLIP, n + 1, t);
		c.scalars[0] = max_norm;
		HPU_KLAUNCH(&hdm_kernel_foreach_clip, &c);
	}
	hpu_kt_free(acc);
	hpu_kt_free(nt);
}

static void test_clip(void)
{
	static const struct {
		double max_norm, type;
		unsigned int per;
	} cases[] = { { 1, 2, 14 }, { 1e9, 2, 5 }, { 0.5, INFINITY, 14 }, { 100, INFINITY, 3 } };

	for (size_t ci = 0; ci < HPU_ARRAY_SIZE(cases); ci++) {
		struct hpu_ktensor *g[GRADS];
		double *want[GRADS], total = 0, norm, coef;
		bool inf = isinf(cases[ci].type);

		for (unsigned int i = 0; i < GRADS; i++) {
			g[i] = grad_tensor(i);
			hpu_kt_fill_random(g[i], ci * 50 + i, -1, 1);
			want[i] = hpu_kt_values(g[i]);
			for (uint64_t e = 0; e < hpu_kt_numel(g[i]); e++)
				total = inf ? fmax(total, fabs(want[i][e]))
					    : total + want[i][e] * want[i][e];
		}
		total = inf ? total : sqrt(total);
		clip_all(g, cases[ci].max_norm, cases[ci].type, cases[ci].per, &norm);
		HPU_KEXPECT(fabs(norm - total) <= 1e-6 * total);
		coef = fmin(1, cases[ci].max_norm / (total + 1e-6));
		for (unsigned int i = 0; i < GRADS; i++) {
			for (uint64_t e = 0; e < hpu_kt_numel(g[i]); e++)
				want[i][e] *= coef;
			HPU_KEXPECT_NEAR_DT(g[i], want[i]);
			free(want[i]);
			hpu_kt_free(g[i]);
		}
	}
}

/* A NaN anywhere makes the norm NaN and spreads to every grad, as torch's. */
static void test_clip_nan(void)
{
	struct hpu_ktensor *g[GRADS];
	double norm;

	for (unsigned int i = 0; i < GRADS; i++) {
		g[i] = grad_tensor(i);
		hpu_kt_fill_random(g[i], i, -1, 1);
	}
	hpu_kt_set(g[9], 1, NAN);
	for (int inf = 0; inf < 2; inf++) {
		clip_all(g, 1, inf ? INFINITY : 2, 14, &norm);
		HPU_KEXPECT(isnan(norm));
		HPU_KEXPECT(isnan(hpu_kt_get(g[0], 0)) && isnan(hpu_kt_get(g[GRADS - 1], 3)));
	}
	for (unsigned int i = 0; i < GRADS; i++)
		hpu_kt_free(g[i]);
}

/* NORM and CLIP: the same bytes whatever the layouts and the split. */
static void test_clip_layouts_agree(void)
{
	struct hpu_ktensor *t[4] = { hpu_kt_new(F32, 0, NULL, NULL), hpu_kt_new(F32, 0, NULL, NULL),
				     grad_tensor(1), grad_tensor(7) };
	struct hdm_kcall c;

	hpu_kt_set(t[0], 0, 3);
	hpu_kt_fill_random(t[2], 1, -2, 2);
	hpu_kt_fill_random(t[3], 2, -2, 2);
	HPU_KCALL(&c, HPU_KERNEL_FOREACH_NORM, t[0], t[1], t[2], t[3]);
	for (int inf = 0; inf < 2; inf++) {
		c.scalars[0] = inf ? INFINITY : 2;
		HPU_KEXPECT_LAYOUTS_AGREE(&hdm_kernel_foreach_norm, &c);
	}
	HPU_KCALL(&c, HPU_KERNEL_FOREACH_CLIP, t[0], t[2], t[3]);
	c.scalars[0] = 1;
	HPU_KEXPECT_LAYOUTS_AGREE(&hdm_kernel_foreach_clip, &c);
	for (unsigned int i = 0; i < 4; i++)
		hpu_kt_free(t[i]);
}

/* ---- rejections ---- */

#define S0 { F32, 0, { 0 } }
#define STEP { I64, 0, { 0 } }
#define V5 { F32, 1, { 5 } }
#define M23 { BF16, 2, { 2, 3 } }

static const struct hpu_kreject_case reject_cases[] = {
	{ "foreach_sgd with momentum", &hdm_kernel_foreach_sgd, HPU_KERNEL_FOREACH_SGD, { LAST },
	  { 0.9, 0.5, 0 }, 8, { S0, STEP, V5, V5, V5, M23, M23, M23 },
	  HPU_KMUTS(HPU_KM_COUNT(7), HPU_KM_COUNT(9), HPU_KM_COUNT(4), HPU_KM_ARG(0, NESTEROV),
		    HPU_KM_ARG(0, 4), HPU_KM_SCALAR(0, -1), HPU_KM_SCALAR(0, NAN),
		    HPU_KM_SCALAR(1, INFINITY), HPU_KM_SCALAR(2, -1), HPU_KM_DTYPE(0, BF16),
		    HPU_KM_DTYPE(0, I64), HPU_KM_NDIM(0, 1), HPU_KM_DTYPE(1, I32),
		    HPU_KM_NDIM(1, 1), HPU_KM_SHAPE(3, 0), HPU_KM_SHAPE(7, 1),
		    HPU_KM_DTYPE(2, I32), HPU_KM_DTYPE(6, U8), HPU_KM_NDIM(4, 2)) },
	{ "foreach_sgd without momentum", &hdm_kernel_foreach_sgd, HPU_KERNEL_FOREACH_SGD,
	  { 0 }, { 0, 0, 0.1 }, 6, { S0, STEP, V5, V5, M23, M23 },
	  HPU_KMUTS(HPU_KM_COUNT(5), HPU_KM_ARG(0, NESTEROV), HPU_KM_SHAPE(5, 0),
		    HPU_KM_SCALAR(0, 0.5)) },
	{ "foreach_adamw", &hdm_kernel_foreach_adamw, HPU_KERNEL_FOREACH_ADAMW, { LAST },
	  { 0.9, 0.999, 1e-8, 0 }, 10, { S0, STEP, V5, V5, V5, V5, M23, M23, M23, M23 },
	  HPU_KMUTS(HPU_KM_COUNT(9), HPU_KM_COUNT(5), HPU_KM_ARG(0, 2), HPU_KM_SCALAR(0, 1),
		    HPU_KM_SCALAR(0, NAN), HPU_KM_SCALAR(1, -0.1), HPU_KM_SCALAR(2, -1),
		    HPU_KM_SCALAR(3, NAN), HPU_KM_DTYPE(1, BF16), HPU_KM_SHAPE(9, 0),
		    HPU_KM_DTYPE(8, I64), HPU_KM_DTYPE(0, I64)) },
	{ "foreach_adadelta", &hdm_kernel_foreach_adadelta, HPU_KERNEL_FOREACH_ADADELTA, { 0 },
	  { 0.9, 1e-6, 0 }, 6, { S0, STEP, V5, V5, V5, V5 },
	  HPU_KMUTS(HPU_KM_COUNT(7), HPU_KM_ARG(0, 2), HPU_KM_SCALAR(0, 1.5),
		    HPU_KM_SCALAR(1, -1), HPU_KM_SCALAR(2, NAN), HPU_KM_SHAPE(4, 0),
		    HPU_KM_DTYPE(2, I32)) },
	{ "foreach_lamb", &hdm_kernel_foreach_lamb, HPU_KERNEL_FOREACH_LAMB,
	  { LAST | BIAS_CORRECTION | GRAD_AVERAGING }, { 0.9, 0.999, 1e-6, 0.01 }, 6,
	  { S0, STEP, M23, M23, M23, M23 },
	  HPU_KMUTS(HPU_KM_COUNT(5), HPU_KM_COUNT(7), HPU_KM_ARG(0, 8), HPU_KM_SCALAR(1, 1),
		    HPU_KM_SCALAR(3, -1), HPU_KM_SHAPE(5, 1), HPU_KM_DTYPE(3, U8),
		    HPU_KM_NDIM(0, 1)) },
	{ "foreach_norm", &hdm_kernel_foreach_norm, HPU_KERNEL_FOREACH_NORM, { RESET }, { 2 }, 4,
	  { S0, S0, V5, M23 },
	  HPU_KMUTS(HPU_KM_COUNT(1), HPU_KM_ARG(0, 2), HPU_KM_SCALAR(0, 1),
		    HPU_KM_SCALAR(0, -INFINITY), HPU_KM_SCALAR(0, NAN), HPU_KM_DTYPE(0, BF16),
		    HPU_KM_NDIM(1, 1), HPU_KM_DTYPE(1, I64), HPU_KM_DTYPE(3, I32)) },
	{ "foreach_clip", &hdm_kernel_foreach_clip, HPU_KERNEL_FOREACH_CLIP, { 0 }, { 1 }, 3,
	  { S0, V5, M23 },
	  HPU_KMUTS(HPU_KM_COUNT(0), HPU_KM_ARG(0, 1), HPU_KM_SCALAR(0, NAN),
		    HPU_KM_DTYPE(0, BF16), HPU_KM_NDIM(0, 1), HPU_KM_DTYPE(2, U8)) },
};

static void test_rejections(void)
{
	for (size_t i = 0; i < HPU_ARRAY_SIZE(reject_cases); i++)
		hpu_kexpect_rejections(&reject_cases[i]);
}

static const struct hpu_ktest_case cases[] = {
	{ "sgd, adamw, adadelta, lamb: three steps over launches against the references",
	  test_steps },
	{ "a launch not the step's last leaves the step", test_step_not_last },
	{ "sgd without momentum, lr 0: params unchanged", test_sgd_zero_lr },
	{ "every optimizer: layouts and splits give the same bytes", test_layouts_agree },
	{ "lamb: norms over chunks, the same bytes whatever the split", test_lamb_chunks },
	{ "norm and clip over 33 tensors in launches, 2-norm and max norm", test_clip },
	{ "norm and clip: a NaN spreads", test_clip_nan },
	{ "norm and clip: layouts and splits give the same bytes", test_clip_layouts_agree },
	{ "every kernel's check() rejections", test_rejections },
};

int main(void)
{
	return hpu_ktest_main(cases, HPU_ARRAY_SIZE(cases)) ? 1 : 0;
}
