/* SPDX-License-Identifier: MIT */
/*
 * Random fills from the device's Philox generator (the device's
 * hdm_kernel_random.c): uniform and normal, on the {seed, offset} state
 * dropout draws from.
 */
#include <errno.h>
#include <math.h>

#include <drm/hpu_kernels.h>

#include "../ops/ops.h"

/* out (float, any layout) filled with dist(s0, s1) from rng (I64 [2]: seed, offset). */
static int hpu_op_random(const char *func, struct hpu_stream *s, struct hpu_tensor *out,
			 struct hpu_tensor *rng, enum hpu_random_dist dist, double s0, double s1)
{
	const struct hpu_arg args[] = { HPU_OUT(out, "out"), { rng, "rng", HPU_ARG_OUT } };
	struct hpu_op op = { .args = { dist }, .scalars = { s0, s1 } };
	int ret = 0;

	if (!isfinite(s0) || !isfinite(s1))
		ret = hpu_error_set(EINVAL, "the parameters %g and %g must be finite", s0, s1);
	else if (dist == HPU_RANDOM_UNIFORM && !(s0 <= s1))
		ret = hpu_error_set(EINVAL, "from %g is above to %g", s0, s1);
	else if (dist == HPU_RANDOM_NORMAL && !(s1 >= 0))
		ret = hpu_error_set(EINVAL, "std %g is below 0", s1);
	if (!ret)
		ret = hpu_op_describe(&op, HPU_KERNEL_RANDOM, "random", args, 2);
	if (!ret)
		ret = hpu_op_dtype_in(&op, 0, HPU_DTS_FLOAT);
	if (!ret)
		ret = hpu_op_dtype_in(&op, 1, hpu_dt_bit(HPU_DT_I64));
	if (!ret && (op.l[1].ndim != 1 || op.l[1].shape[0] != 2))
		ret = hpu_error_set(EINVAL, "rng must be I64 [2]: seed, offset");
	return hpu_op_finish(func, s, &op, ret);
}

int hpu_op_uniform(struct hpu_stream *s, struct hpu_tensor *out, struct hpu_tensor *rng,
		   double from, double to)
{
	return hpu_op_random(__func__, s, out, rng, HPU_RANDOM_UNIFORM, from, to);
}

int hpu_op_normal(struct hpu_stream *s, struct hpu_tensor *out, struct hpu_tensor *rng,
		  double mean, double std)
{
	return hpu_op_random(__func__, s, out, rng, HPU_RANDOM_NORMAL, mean, std);
}
