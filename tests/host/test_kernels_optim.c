/* SPDX-License-Identifier: MIT */
/*
 * Host unit test of the optimizer kernels (SGD, Adadelta, AdamW) and
 * clip_grad_norm: every step against a reference of torch.optim's
 * algorithm in double, started from the values the tensors hold (so each
 * step is checked to its rounding, fp32 1e-6 and bf16 2^-8 relative, the
 * same as absolute near 0), over layouts, dtypes and all the ways of
 * splitting the items; a few golden numbers from torch itself; every
 * rejection.  Prints TAP.
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

#define SGD_NESTEROV 1
#define SGD_FIRST_STEP 2

/* Golden numbers: fp32 torch against fp64 arithmetic rounded once. */
#define TORCH_RTOL 1e-5
#define TORCH_ATOL 1e-9

/* [3, 4] in a layout: contiguous, transposed, or every other element with rows reversed. */
static struct hpu_ktensor *tensor(uint32_t dtype, unsigned int layout)
{
	static const int64_t strides[][2] = { { 4, 1 }, { 1, 3 }, { 8, -2 } };

	return hpu_kt_new(dtype, 2, HPU_KT_DIMS(3, 4), strides[layout % 3]);
}

/* ---- references: torch.optim's algorithms, in double ---- */

/* s: lr, momentum, dampening, weight_decay. */
static void ref_sgd(const double *s, int64_t flags, double *p, const double *g, double *buf,
		    uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		double gt = s[3] != 0 ? g[i] + s[3] * p[i] : g[i];

		if (s[1] != 0) {
			buf[i] = flags & SGD_FIRST_STEP ? gt : s[1] * buf[i] + (1 - s[2]) * gt;
			gt = flags & SGD_NESTEROV ? gt + s[1] * buf[i] : buf[i];
		}
		p[i] -= s[0] * gt;
	}
}

/* s: lr, rho, eps, weight_decay. */
static void ref_adadelta(const double *s, double *p, const double *g, double *v, double *u,
			 uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		double gt = s[3] != 0 ? g[i] + s[3] * p[i] : g[i], dx;

		v[i] = s[1] * v[i] + (1 - s[1]) * gt * gt;
		dx = sqrt(u[i] + s[2]) / sqrt(v[i] + s[2]) * gt;
		u[i] = s[1] * u[i] + (1 - s[1]) * dx * dx;
		p[i] -= s[0] * dx;
	}
}

/* s: lr, beta1, beta2, eps, weight_decay; t the step being taken (from 1). */
static void ref_adamw(const double *s, double t, double *p, const double *g, double *m, double *v,
		      uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		double mhat, vhat;

		p[i] -= s[0] * s[4] * p[i];
		m[i] = s[1] * m[i] + (1 - s[1]) * g[i];
		v[i] = s[2] * v[i] + (1 - s[2]) * g[i] * g[i];
		mhat = m[i] / (1 - pow(s[1], t));
		vhat = v[i] / (1 - pow(s[2], t));
		p[i] -= s[0] * mhat / (sqrt(vhat) + s[3]);
	}
}

/* ---- steps against the reference ---- */

enum optimizer { SGD, ADADELTA, ADAMW };

struct step_config {
	const char *name;
	enum optimizer opt;
	double s[5];
	int64_t flags;
	uint32_t param_dtype, state_dtype, step_dtype;
	double step0; /* AdamW: steps done before the first launch */
};

static const struct step_config step_configs[] = {
	{ "sgd plain", SGD, { 0.1, 0, 0, 0 }, 0, F32, F32, 0, 0 },
	{ "sgd weight decay", SGD, { 0.05, 0, 0, 0.1 }, 0, BF16, BF16, 0, 0 },
	{ "sgd momentum, dampening", SGD, { 0.1, 0.9, 0.25, 0 }, 0, F32, F32, 0, 0 },
	{ "sgd nesterov, weight decay", SGD, { 0.2, 0.8, 0, 0.01 }, SGD_NESTEROV, F32, BF16, 0, 0 },
	{ "sgd momentum, bf16", SGD, { 0.1, 0.5, 0.1, 0.02 }, 0, BF16, BF16, 0, 0 },
	{ "adadelta", ADADELTA, { 1, 0.9, 1e-6, 0 }, 0, F32, F32, 0, 0 },
	{ "adadelta weight decay", ADADELTA, { 0.5, 0.95, 1e-4, 0.1 }, 0, F32, BF16, 0, 0 },
	{ "adadelta bf16", ADADELTA, { 1, 0.5, 1e-3, 0 }, 0, BF16, BF16, 0, 0 },
	{ "adamw", ADAMW, { 1e-3, 0.9, 0.999, 1e-8, 0.01 }, 0, F32, F32, I64, 0 },
	{ "adamw f32 step, resumed", ADAMW, { 0.1, 0.5, 0.9, 1e-6, 0 }, 0, F32, F32, F32, 10 },
	{ "adamw bf16", ADAMW, { 0.01, 0.8, 0.99, 1e-4, 0.1 }, 0, BF16, BF16, I64, 3 },
};

#define STEPS 4

/* t: param, grad, then the state tensors: the kernel's operands in order. */
struct opt_launch {
	const struct step_config *cfg;
	struct hpu_ktensor *t[5];
	unsigned int n;
	struct hdm_kcall c;
	const struct hdm_kernel_def *def;
};

static void opt_launch_new(struct opt_launch *l, const struct step_config *cfg, unsigned int layout)
{
	static const unsigned int count[] = { [SGD] = 3, [ADADELTA] = 4, [ADAMW] = 5 };
	static const struct hdm_kernel_def *const defs[] = {
		[SGD] = &hdm_kernel_sgd,
		[ADADELTA] = &hdm_kernel_adadelta,
		[ADAMW] = &hdm_kernel_adamw,
	};
	static const uint32_t ids[] = {
		[SGD] = HPU_KERNEL_SGD,
		[ADADELTA] = HPU_KERNEL_ADADELTA,
		[ADAMW] = HPU_KERNEL_ADAMW,
	};

	l->cfg = cfg;
	l->n = count[cfg->opt];
	l->def = defs[cfg->opt];
	l->t[0] = tensor(cfg->param_dtype, layout);
	hpu_kt_fill_random(l->t[0], layout + 1, -2, 2);
	l->t[1] = tensor(cfg->param_dtype, layout + 1);
	for (unsigned int i = 2; i < 4 && i < l->n; i++)
		l->t[i] = tensor(cfg->state_dtype, layout + i);
	if (cfg->opt == ADAMW) {
		l->t[4] = hpu_kt_new(cfg->step_dtype, 0, NULL, NULL);
		hpu_kt_set(l->t[4], 0, cfg->step0);
	}
	hpu_kcall_init(&l->c, ids[cfg->opt], l->n, l->t);
	memcpy(l->c.scalars, cfg->s, sizeof(cfg->s));
	l->c.args[0] = cfg->flags;
}

static void opt_launch_free(struct opt_launch *l)
{
	for (unsigned int i = 0; i < l->n; i++)
		hpu_kt_free(l->t[i]);
}

/* The reference step from the values the tensors hold now; v[i] are t[i]'s. */
static void ref_step(const struct opt_launch *l, double **v, bool first, uint64_t n)
{
	const struct step_config *cfg = l->cfg;

	switch (cfg->opt) {
	case SGD:
		ref_sgd(cfg->s, cfg->flags | (first ? SGD_FIRST_STEP : 0), v[0], v[1], v[2], n);
		break;
	case ADADELTA:
		ref_adadelta(cfg->s, v[0], v[1], v[2], v[3], n);
		break;
	case ADAMW:
		ref_adamw(cfg->s, v[4][0] + 1, v[0], v[1], v[2], v[3], n);
		break;
	}
}

/* One launch with a fresh gradient, every io tensor against the reference. */
static void opt_step(struct opt_launch *l, unsigned int k, uint64_t seed)
{
	uint64_t n = hpu_kt_numel(l->t[0]);
	double *v[5];
	unsigned int i;

	hpu_kt_fill_random(l->t[1], seed, -1, 1);
	for (i = 0; i < l->n; i++)
		v[i] = hpu_kt_values(l->t[i]);
	ref_step(l, v, k == 0, n);
	if (l->cfg->opt == SGD)
		l->c.args[0] = l->cfg->flags | (k == 0 ? SGD_FIRST_STEP : 0);
	HPU_KLAUNCH(l->def, &l->c);
	for (i = 0; i < 4 && i < l->n; i++)
		if (i != 1 && (i != 2 || l->cfg->opt != SGD || l->cfg->s[1] != 0))
			HPU_KEXPECT_NEAR_DT(l->t[i], v[i]);
	if (l->cfg->opt == ADAMW)
		HPU_KEXPECT(hpu_kt_get(l->t[4], 0) == l->cfg->step0 + k + 1);
	for (i = 0; i < l->n; i++)
		free(v[i]);
}

static void test_steps(void)
{
	for (size_t i = 0; i < HPU_ARRAY_SIZE(step_configs); i++) {
		for (unsigned int layout = 0; layout < 3; layout++) {
			struct opt_launch l;

			opt_launch_new(&l, &step_configs[i], layout);
			for (unsigned int k = 0; k < STEPS; k++)
				opt_step(&l, k, i * 100 + layout * 10 + k);
			opt_launch_free(&l);
		}
	}
}

/* SGD without momentum has no buffer: a NaN-filled one stays as it is (the harness sees writes). */
static void test_sgd_no_buffer_written(void)
{
	struct opt_launch l;

	opt_launch_new(&l, &step_configs[0], 0);
	for (uint64_t i = 0; i < hpu_kt_numel(l.t[2]); i++)
		hpu_kt_set(l.t[2], i, NAN);
	opt_step(&l, 1, 5);
	HPU_KEXPECT(isnan(hpu_kt_get(l.t[2], 0)));
	opt_launch_free(&l);
}

/* Parts all read the old step; finish() stores step + 1 once, whatever the split. */
static void test_adamw_split(void)
{
	struct opt_launch l[HPU_KSPLIT_COUNT];
	int s;

	for (s = 0; s < HPU_KSPLIT_COUNT; s++) {
		opt_launch_new(&l[s], &step_configs[9], 1);
		hpu_kt_fill_random(l[s].t[1], 77, -1, 1);
		HPU_KEXPECT(hpu_krun(l[s].def, &l[s].c, (enum hpu_ksplit)s) == 0);
		HPU_KEXPECT(hpu_kt_get(l[s].t[4], 0) == step_configs[9].step0 + 1);
	}
	for (s = 1; s < HPU_KSPLIT_COUNT; s++)
		for (unsigned int i = 0; i < 4; i++)
			HPU_KEXPECT_SAME(l[s].t[i], l[0].t[i]);
	for (s = 0; s < HPU_KSPLIT_COUNT; s++)
		opt_launch_free(&l[s]);
}

/* Every step config, and clip_grad_norm: contiguous and scattered operands give the same bytes. */
static void test_layouts_agree(void)
{
	struct hpu_ktensor *t[3] = {
		hpu_kt_new(F32, 0, NULL, NULL),
		tensor(F32, 0),
		hpu_kt_new(BF16, 3, HPU_KT_DIMS(2, 3, 2), NULL),
	};
	struct hdm_kcall c;

	for (size_t i = 0; i < HPU_ARRAY_SIZE(step_configs); i++) {
		struct opt_launch l;

		opt_launch_new(&l, &step_configs[i], 0);
		for (unsigned int j = 1; j < 4 && j < l.n; j++)
			hpu_kt_fill_random(l.t[j], i * 10 + j, 0, 1);
		HPU_KEXPECT_LAYOUTS_AGREE(l.def, &l.c);
		opt_launch_free(&l);
	}
	for (unsigned int i = 1; i < 3; i++)
		hpu_kt_fill_random(t[i], i, -2, 2);
	HPU_KCALL(&c, HPU_KERNEL_CLIP_GRAD_NORM, t[0], t[1], t[2]);
	c.scalars[0] = 1;
	for (int inf = 0; inf < 2; inf++) {
		c.scalars[1] = inf ? INFINITY : 2;
		HPU_KEXPECT_LAYOUTS_AGREE(&hdm_kernel_clip_grad_norm, &c);
	}
	for (unsigned int i = 0; i < 3; i++)
		hpu_kt_free(t[i]);
}

/* ---- torch's own numbers ---- */

/*
 * Made once with python3-torch 1.13.1 (Debian): a float32 parameter
 * torch_p0 stepped three times with the gradients torch_grads by
 * torch.optim.SGD / Adadelta / AdamW with the scalars below, printing the
 * parameter and the optimizer's state with .tolist().
 */
static const double torch_p0[4] = { 0.5, -1.25, 2.0, -0.75 };
static const double torch_grads[3][4] = {
	{ 0.1, -0.2, 0.3, 0.05 }, { -0.4, 0.25, 0.1, -0.3 }, { 0.2, 0.15, -0.35, 0.45 },
};

static const struct {
	struct step_config cfg;
	double want[4][4]; /* param, then each state tensor */
} torch_golden[] = {
	{ { "SGD(lr=0.1, momentum=0.9, weight_decay=0.01, nesterov=True)", SGD,
	    { 0.1, 0.9, 0, 0.01 }, SGD_NESTEROV, F32, F32, 0, 0 },
	  { { 0.5319509506225586, -1.267541766166687, 1.9205046892166138, -0.7654255032539368 },
	    { -0.06516322493553162, 0.17961223423480988, 0.0355587899684906,
	      0.20057152211666107 } } },
	{ { "SGD(lr=0.05, momentum=0.8, dampening=0.3)", SGD, { 0.05, 0.8, 0.3, 0 }, 0, F32, F32,
	    0, 0 },
	  { { 0.5059999823570251, -1.2465999126434326, 1.9693500995635986, -0.7529500126838684 },
	    { -0.019999995827674866, 0.11699999123811722, 0.0030000191181898117,
	      0.17899997532367706 } } },
	{ { "Adadelta(lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.1)", ADADELTA,
	    { 1, 0.9, 1e-6, 0.1 }, 0, F32, F32, 0, 0 },
	  { { 0.497542142868042, -1.2488926649093628, 1.9958019256591797, -0.7469274997711182 },
	    { 0.019122334197163582, 0.01003224216401577, 0.03059961274266243,
	      0.026805134490132332 },
	    { 3.536916210578056e-06, 1.078849322766473e-06, 1.5064503031680943e-06,
	      4.610034920915496e-06 } } },
	{ { "AdamW(lr=0.01, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.1)", ADAMW,
	    { 0.01, 0.9, 0.999, 1e-8, 0.1 }, 0, F32, F32, I64, 0 },
	  { { 0.4952126741409302, -1.2417502403259277, 1.9755544662475586, -0.7540931105613708 },
	    { -0.007900000549852848, 0.021299999207258224, -0.0016999987419694662,
	      0.022049998864531517 },
	    { 0.00020982003479730338, 0.0001248575426870957, 0.0002223101182607934,
	      0.0002949050103779882 } } },
};

static void test_torch_golden(void)
{
	for (size_t i = 0; i < HPU_ARRAY_SIZE(torch_golden); i++) {
		const struct step_config *cfg = &torch_golden[i].cfg;
		struct opt_launch l;

		opt_launch_new(&l, cfg, 0);
		/* torch's shape: four contiguous elements. */
		for (unsigned int j = 0; j < 4 && j < l.n; j++) {
			hpu_kt_free(l.t[j]);
			l.t[j] = hpu_kt_new(F32, 1, HPU_KT_DIMS(4), NULL);
			l.c.t[j] = l.t[j]->v;
		}
		hpu_kt_fill(l.t[0], torch_p0);
		for (unsigned int k = 0; k < 3; k++) {
			hpu_kt_fill(l.t[1], torch_grads[k]);
			l.c.args[0] = cfg->flags | (cfg->opt == SGD && k == 0 ? SGD_FIRST_STEP : 0);
			HPU_KLAUNCH(l.def, &l.c);
		}
		for (unsigned int j = 0; j < 4 && j < l.n; j++)
			if (j != 1 && !HPU_KEXPECT_NEAR(l.t[j], torch_golden[i].want[j ? j - 1 : 0],
							TORCH_RTOL, TORCH_ATOL))
				printf("#   %s, t[%u]\n", cfg->name, j);
		if (cfg->opt == ADAMW)
			HPU_KEXPECT(hpu_kt_get_i(l.t[4], 0) == 3);
		opt_launch_free(&l);
	}
}

/* ---- clip_grad_norm ---- */

/* The total norm as the ABI has it: each HPU_CLIP_CHUNK chunk's partial, joined in order. */
static double ref_total_norm(double **g, const uint64_t *n, unsigned int count, bool inf)
{
	double total = 0;

	for (unsigned int i = 0; i < count; i++) {
		for (uint64_t k0 = 0; k0 < n[i]; k0 += HPU_CLIP_CHUNK) {
			double part = 0;

			for (uint64_t k = k0; k < n[i] && k < k0 + HPU_CLIP_CHUNK; k++)
				part = inf ? fmax(part, fabs(g[i][k])) : part + g[i][k] * g[i][k];
			total = inf ? fmax(total, part) : total + part;
		}
	}
	return inf ? total : sqrt(total);
}

/* Three grads of different shapes, layouts and dtypes, 2-norm and max norm, clipped or not. */
static void test_clip(void)
{
	static const double max_norms[] = { 1.5, 1000 };

	for (int inf = 0; inf < 2; inf++) {
		for (size_t m = 0; m < HPU_ARRAY_SIZE(max_norms); m++) {
			struct hpu_ktensor *t[4] = {
				hpu_kt_new(F32, 0, NULL, NULL),
				tensor(F32, 1),
				hpu_kt_new(BF16, 3, HPU_KT_DIMS(2, 3, 2), HPU_KT_STRIDES(6, 2, -1)),
				hpu_kt_new(F32, 1, HPU_KT_DIMS(5), HPU_KT_STRIDES(3)),
			};
			double *g[3], coef, total;
			uint64_t n[3];
			struct hdm_kcall c;

			for (unsigned int i = 0; i < 3; i++) {
				hpu_kt_fill_random(t[i + 1], 10 * inf + m + i, -2, 2);
				g[i] = hpu_kt_values(t[i + 1]);
				n[i] = hpu_kt_numel(t[i + 1]);
			}
			total = ref_total_norm(g, n, 3, inf);
			coef = fmin(1, max_norms[m] / (total + 1e-6));
			for (unsigned int i = 0; i < 3; i++)
				for (uint64_t k = 0; k < n[i]; k++)
					g[i][k] *= coef;
			HPU_KCALL(&c, HPU_KERNEL_CLIP_GRAD_NORM, t[0], t[1], t[2], t[3]);
			c.scalars[0] = max_norms[m];
			c.scalars[1] = inf ? INFINITY : 2;
			HPU_KLAUNCH(&hdm_kernel_clip_grad_norm, &c);
			HPU_KEXPECT_NEAR(t[0], &total, 1e-6, 0);
			for (unsigned int i = 0; i < 3; i++) {
				HPU_KEXPECT_NEAR_DT(t[i + 1], g[i]);
				free(g[i]);
			}
			for (unsigned int i = 0; i < 4; i++)
				hpu_kt_free(t[i]);
		}
	}
}

/*
 * Made once with python3-torch 1.13.1: torch.nn.utils.clip_grad_norm_ of
 * the grads a and b below, max_norm=1.5, norm_type 2.0 then inf; the total
 * with .item() and the grads with .tolist().
 */
static void test_clip_torch_golden(void)
{
	static const double a[] = { 0.5, -1.5, 2.0, 0.25, -0.75, 1.0 }, b[] = { 3.0, -0.5, 0.125 };
	static const double want_total[] = { 4.1702070236206055, 3.0 };
	static const double want_a[][6] = {
		{ 0.17984715104103088, -0.539541482925415, 0.7193886041641235, 0.08992357552051544,
		  -0.2697707414627075, 0.35969430208206177 },
		{ 0.24999991059303284, -0.7499997615814209, 0.9999996423721313, 0.12499995529651642,
		  -0.37499988079071045, 0.4999998211860657 },
	};
	static const double want_b[][3] = {
		{ 1.07908296585083, -0.17984715104103088, 0.04496178776025772 },
		{ 1.4999995231628418, -0.24999991059303284, 0.06249997764825821 },
	};

	for (int inf = 0; inf < 2; inf++) {
		struct hpu_ktensor *t[3] = {
			hpu_kt_new(F32, 0, NULL, NULL),
			hpu_kt_new(F32, 2, HPU_KT_DIMS(3, 2), NULL),
			hpu_kt_new(F32, 1, HPU_KT_DIMS(3), NULL),
		};
		struct hdm_kcall c;

		hpu_kt_fill(t[1], a);
		hpu_kt_fill(t[2], b);
		HPU_KCALL(&c, HPU_KERNEL_CLIP_GRAD_NORM, t[0], t[1], t[2]);
		c.scalars[0] = 1.5;
		c.scalars[1] = inf ? INFINITY : 2;
		HPU_KLAUNCH(&hdm_kernel_clip_grad_norm, &c);
		HPU_KEXPECT_NEAR(t[0], &want_total[inf], TORCH_RTOL, TORCH_ATOL);
		HPU_KEXPECT_NEAR(t[1], want_a[inf], TORCH_RTOL, TORCH_ATOL);
		HPU_KEXPECT_NEAR(t[2], want_b[inf], TORCH_RTOL, TORCH_ATOL);
		for (unsigned int i = 0; i < 3; i++)
			hpu_kt_free(t[i]);
	}
}

/*
 * No grads: a total of 0.  A NaN grad: a NaN total, and NaN spreads to
 * every grad (torch without error_if_nonfinite).  A total of 5e-7 with
 * max_norm 2.5e-7: the 1e-6 in the denominator makes the scale 1/6, not 1/2.
 */
static void test_clip_edges(void)
{
	struct hpu_ktensor *t[3] = {
		hpu_kt_new(F32, 0, NULL, NULL),
		hpu_kt_new(F32, 1, HPU_KT_DIMS(3), NULL),
		hpu_kt_new(BF16, 1, HPU_KT_DIMS(2), NULL),
	};
	struct hdm_kcall c;

	for (int inf = 0; inf < 2; inf++) {
		HPU_KCALL(&c, HPU_KERNEL_CLIP_GRAD_NORM, t[0]);
		c.scalars[0] = 1;
		c.scalars[1] = inf ? INFINITY : 2;
		hpu_kt_set(t[0], 0, 5);
		HPU_KLAUNCH(&hdm_kernel_clip_grad_norm, &c);
		HPU_KEXPECT(hpu_kt_get(t[0], 0) == 0);

		hpu_kt_fill(t[1], (const double[]){ 1, NAN, 2 });
		hpu_kt_fill(t[2], (const double[]){ 3, 4 });
		HPU_KCALL(&c, HPU_KERNEL_CLIP_GRAD_NORM, t[0], t[1], t[2]);
		c.scalars[0] = 1;
		c.scalars[1] = inf ? INFINITY : 2;
		HPU_KLAUNCH(&hdm_kernel_clip_grad_norm, &c);
		HPU_KEXPECT(isnan(hpu_kt_get(t[0], 0)));
		HPU_KEXPECT(isnan(hpu_kt_get(t[1], 0)) && isnan(hpu_kt_get(t[2], 1)));

		hpu_kt_fill(t[1], (const double[]){ 3e-7, 0, -4e-7 });
		hpu_kt_fill(t[2], (const double[]){ 0, 0 });
		c.scalars[0] = 2.5e-7;
		c.scalars[1] = 2;
		HPU_KLAUNCH(&hdm_kernel_clip_grad_norm, &c);
		HPU_KEXPECT_NEAR(t[1], ((const double[]){ 5e-8, 0, -4e-7 / 6 }), 1e-6, 0);
	}
	for (unsigned int i = 0; i < 3; i++)
		hpu_kt_free(t[i]);
}

/*
 * Grads of several chunks: the 2-norm adds the chunks' partial sums in
 * order, whatever the split, which one sum over all elements would not
 * match bit for bit; libhpu's CPU fallback gets the same bits from the
 * same grads (test_libhpu_tensor.c: CLIP_CHUNKED_TOTAL).
 */
#define CLIP_CHUNKED_N1 (2ull * HPU_CLIP_CHUNK + 77)
#define CLIP_CHUNKED_N2 (HPU_CLIP_CHUNK + 3ull)
#define CLIP_CHUNKED_TOTAL 0x1.6a0c3b552b57p+9

/* Element k of grad i (1, 2): a float in [-1, 1), the same in the fallback's test. */
static double clip_chunked_grad(unsigned int i, uint64_t k)
{
	uint32_t h = (uint32_t)(k * 2654435761u + i * 40503u);

	return (float)((int32_t)h / 2147483648.0);
}

static void test_clip_chunks(void)
{
	const uint64_t n[2] = { CLIP_CHUNKED_N1, CLIP_CHUNKED_N2 };
	double *g[2], seq = 0, total;

	for (unsigned int i = 0; i < 2; i++) {
		g[i] = malloc(n[i] * sizeof(double));
		for (uint64_t k = 0; k < n[i]; k++) {
			g[i][k] = clip_chunked_grad(i + 1, k);
			seq += g[i][k] * g[i][k];
		}
	}
	total = ref_total_norm(g, n, 2, false);
	HPU_KEXPECT(total == CLIP_CHUNKED_TOTAL && sqrt(seq) != total);
	for (int split = 0; split < HPU_KSPLIT_COUNT; split++) {
		struct hpu_ktensor *t[3] = {
			hpu_kt_new(F32, 0, NULL, NULL),
			hpu_kt_new(F32, 1, HPU_KT_DIMS(CLIP_CHUNKED_N1), NULL),
			hpu_kt_new(F32, 2, HPU_KT_DIMS(CLIP_CHUNKED_N2, 1), HPU_KT_STRIDES(-1, 1)),
		};
		double coef = 0.5 / (total + 1e-6);
		uint64_t bad = 0, items[HDM_KERNEL_MAX_PHASES];
		struct hdm_kcall c;

		for (unsigned int i = 0; i < 2; i++)
			hpu_kt_fill(t[i + 1], g[i]);
		HPU_KCALL(&c, HPU_KERNEL_CLIP_GRAD_NORM, t[0], t[1], t[2]);
		c.scalars[0] = 0.5;
		c.scalars[1] = 2;
		/* Five chunks a phase, none past an item's bound. */
		HPU_KEXPECT(hdm_kernel_clip_grad_norm.check(&c, items) == 0 && items[0] == 5 &&
			    items[1] == 5 && hdm_kernel_clip_grad_norm.item_work);
		for (c.state->phase = 0; c.state->phase < 2 && hdm_kernel_clip_grad_norm.item_work;
		     c.state->phase++)
			HPU_KEXPECT(hdm_kernel_clip_grad_norm.item_work(&c) == HPU_CLIP_CHUNK);
		c.state->phase = 0;
		HPU_KEXPECT(hpu_krun(&hdm_kernel_clip_grad_norm, &c, split) == 0);
		HPU_KEXPECT(hpu_kt_get(t[0], 0) == (float)total);
		for (unsigned int i = 0; i < 2; i++)
			for (uint64_t k = 0; k < n[i]; k++)
				bad += hpu_kt_get(t[i + 1], k) != (float)(g[i][k] * coef);
		HPU_KEXPECT(bad == 0);
		for (unsigned int i = 0; i < 3; i++)
			hpu_kt_free(t[i]);
	}
	for (unsigned int i = 0; i < 2; i++)
		free(g[i]);
}

/* ---- rejections ---- */

#define V5 { F32, 1, { 5 } }

static const struct hpu_kreject_case reject_cases[] = {
	{ "sgd with momentum and dampening", &hdm_kernel_sgd, HPU_KERNEL_SGD, { SGD_FIRST_STEP },
	  { 0.1, 0.9, 0.5, 0 }, 3, { V5, V5, V5 },
	  HPU_KMUTS(HPU_KM_COUNT(2), HPU_KM_COUNT(4), HPU_KM_ARG(0, 3), HPU_KM_ARG(0, 4),
		    HPU_KM_SCALAR(0, -1), HPU_KM_SCALAR(0, NAN), HPU_KM_SCALAR(1, -0.5),
		    HPU_KM_SCALAR(2, NAN), HPU_KM_SCALAR(3, -1), HPU_KM_SHAPE(1, 0),
		    HPU_KM_DTYPE(2, I32), HPU_KM_DTYPE(0, U8), HPU_KM_NDIM(2, 2)) },
	{ "sgd without momentum", &hdm_kernel_sgd, HPU_KERNEL_SGD, { 0 }, { 0.1, 0, 0, 0 }, 3,
	  { V5, V5, V5 }, HPU_KMUTS(HPU_KM_ARG(0, SGD_NESTEROV), HPU_KM_SHAPE(2, 0)) },
	{ "adadelta", &hdm_kernel_adadelta, HPU_KERNEL_ADADELTA, { 0 }, { 1, 0.9, 1e-6, 0 }, 4,
	  { V5, V5, V5, V5 },
	  HPU_KMUTS(HPU_KM_COUNT(3), HPU_KM_SCALAR(0, -1), HPU_KM_SCALAR(1, 1.5),
		    HPU_KM_SCALAR(1, -0.1), HPU_KM_SCALAR(2, -1), HPU_KM_SCALAR(3, NAN),
		    HPU_KM_SHAPE(2, 0), HPU_KM_DTYPE(3, I64), HPU_KM_DTYPE(1, U8)) },
	{ "adamw", &hdm_kernel_adamw, HPU_KERNEL_ADAMW, { 0 }, { 1e-3, 0.9, 0.999, 1e-8, 0 }, 5,
	  { V5, V5, V5, V5, { I64, 0, { 0 } } },
	  HPU_KMUTS(HPU_KM_COUNT(4), HPU_KM_SCALAR(0, NAN), HPU_KM_SCALAR(1, 1),
		    HPU_KM_SCALAR(2, -0.1), HPU_KM_SCALAR(3, -1), HPU_KM_SCALAR(4, -1),
		    HPU_KM_DTYPE(4, I32), HPU_KM_DTYPE(4, BF16), HPU_KM_NDIM(4, 1),
		    HPU_KM_VALUE(4, -1), HPU_KM_SHAPE(3, 0), HPU_KM_DTYPE(2, I64)) },
	{ "clip_grad_norm", &hdm_kernel_clip_grad_norm, HPU_KERNEL_CLIP_GRAD_NORM, { 0 }, { 1, 2 },
	  3, { { F32, 0, { 0 } }, V5, { BF16, 2, { 2, 2 } } },
	  HPU_KMUTS(HPU_KM_COUNT(0), HPU_KM_SCALAR(1, 1), HPU_KM_SCALAR(1, -INFINITY),
		    HPU_KM_SCALAR(1, NAN), HPU_KM_SCALAR(0, NAN), HPU_KM_DTYPE(0, BF16),
		    HPU_KM_NDIM(0, 1), HPU_KM_DTYPE(2, I32)) },
};

static void test_rejections(void)
{
	for (size_t i = 0; i < HPU_ARRAY_SIZE(reject_cases); i++)
		hpu_kexpect_rejections(&reject_cases[i]);
}

static const struct hpu_ktest_case cases[] = {
	{ "sgd, adadelta, adamw: four steps against torch.optim's algorithm", test_steps },
	{ "sgd without momentum leaves the buffer alone", test_sgd_no_buffer_written },
	{ "adamw: one step + 1 and the same bytes whatever the split", test_adamw_split },
	{ "sgd, adadelta, adamw, clip_grad_norm: layouts give the same bytes", test_layouts_agree },
	{ "sgd, adadelta, adamw: torch 1.13's numbers", test_torch_golden },
	{ "clip_grad_norm: 2-norm and max norm, clipped and not", test_clip },
	{ "clip_grad_norm: torch 1.13's numbers", test_clip_torch_golden },
	{ "clip_grad_norm: no grads, a NaN grad", test_clip_edges },
	{ "clip_grad_norm: the norm of many chunks, whatever the split", test_clip_chunks },
	{ "every kernel's check() rejections", test_rejections },
};

int main(void)
{
	return hpu_ktest_main(cases, HPU_ARRAY_SIZE(cases)) ? 1 : 0;
}
