/* SPDX-License-Identifier: MIT */
/*
 * Tensor-engine kernel: RANDOM, uniform and normal fills from the device's
 * Philox stream, the one DROPOUT draws (hdm_kernel_nn.h).  Element k's
 * value is a function of (seed, offset, k) alone, so any split of the
 * launch fills the same values; finish() moves the offset past the draws.
 */
#include "hdm_kernel_nn.h"

/* Elements whose draws one go makes ahead of their walk. */
#define HDM_RANDOM_CHUNK 256

/* Draws per element: UNIFORM one, NORMAL a Box-Muller pair. */
static uint64_t hdm_random_draws(const struct hdm_kcall *c)
{
	return c->args[0] == HPU_RANDOM_NORMAL ? 2 : 1;
}

/* t: out, rng. */
static uint32_t hdm_random_outputs(const struct hdm_kcall *c)
{
	(void)c;
	return 3;
}

static int hdm_random_check(const struct hdm_kcall *c, uint64_t *items)
{
	static const uint64_t rng_shape = 2;
	const struct hdm_kview *out = &c->t[0], *rng = &c->t[1];
	double s0 = c->scalars[0], s1 = c->scalars[1];
	int64_t dist = c->args[0];

	if (c->num_tensors != 2 || !hdm_dtype_is_float(out->dtype) ||
	    rng->dtype != HPU_DTYPE_I64 || !hdm_kview_has_shape(rng, 1, &rng_shape) ||
	    hdm_kview_aliases(out, rng) || !isfinite(s0) || !isfinite(s1) ||
	    (dist == HPU_RANDOM_UNIFORM && !(s0 <= s1)) ||
	    (dist == HPU_RANDOM_NORMAL && !(s1 >= 0)) ||
	    (dist != HPU_RANDOM_UNIFORM && dist != HPU_RANDOM_NORMAL))
		return -1;
	*items = hdm_kview_numel(out);
	return 0;
}

static uint64_t hdm_random_work(const struct hdm_kcall *c, uint64_t items)
{
	return hdm_kmul_sat(items, hdm_random_draws(c));
}

static uint64_t hdm_random_item_work(const struct hdm_kcall *c)
{
	return hdm_random_draws(c);
}

/* Elements [begin, end): each chunk's draws made ahead, then its elements walked. */
static void hdm_random_run(const struct hdm_kcall *c, uint64_t begin, uint64_t end)
{
	uint64_t seed = (uint64_t)hdm_kget_i(&c->t[1], 0), offset = (uint64_t)hdm_kget_i(&c->t[1], 1);
	uint64_t per = hdm_random_draws(c);
	double s0 = c->scalars[0], s1 = c->scalars[1];
	float u[2 * HDM_RANDOM_CHUNK + HDM_PHILOX_LANE_DRAWS];
	struct hdm_kpace pace = hdm_kpace_start(c);
	struct hdm_kcur out;

	hdm_kcur_init(&out, &c->t[0], begin);
	for (uint64_t first = begin; first < end; first += HDM_RANDOM_CHUNK) {
		uint64_t n = end - first < HDM_RANDOM_CHUNK ? end - first : HDM_RANDOM_CHUNK;
		const float *d = u + hdm_philox_draws(seed, offset + first * per, n * per, u);

		if (hdm_kpace(&pace, n * per))
			return;
		for (uint64_t j = 0; j < n; j++) {
			double v;

			if (per == 1)
				v = s0 + (s1 - s0) * d[j];
			else
				v = s0 + s1 * sqrt(-2 * log(1 - (double)d[2 * j])) *
						 cos(2 * M_PI * d[2 * j + 1]);
			hdm_kcur_set(&out, v);
			hdm_kcur_next(&out);
		}
	}
}

static void hdm_random_finish(const struct hdm_kcall *c)
{
	hdm_philox_advance(&c->t[1], hdm_kview_numel(&c->t[0]) * hdm_random_draws(c));
}

const struct hdm_kernel_def hdm_kernel_random = {
	.name = "random",
	.min_tensors = 2,
	.max_tensors = 2,
	.outputs = hdm_random_outputs,
	.check = hdm_random_check,
	.work = hdm_random_work,
	.item_work = hdm_random_item_work,
	.run = hdm_random_run,
	.finish = hdm_random_finish,
};
