/* SPDX-License-Identifier: MIT */
/*
 * Fused scaled dot-product attention, forward and backward (the device's
 * hdm_kernel_sdpa.c): the operands' checks, the mask's broadcast over heads
 * and rows (never the batch, as the seeds' FusedSDPA), and the kernel's
 * flags from the settings and the operands given.
 */
#include <errno.h>
#include <math.h>

#include <drm/hpu_kernels.h>

#include "../ops/ops.h"

struct hpu_sdpa_dims {
	int64_t B, H, L, S, D, Dv;
};

/* Operand i has the 4-dim shape [a, b, c, d]. */
static int hpu_sdpa_shape4(const struct hpu_op *op, unsigned int i, int64_t a, int64_t b,
			   int64_t c, int64_t d)
{
	const struct hpu_tensor_layout *l = &op->l[i];

	if (l->ndim == 4 && l->shape[0] == a && l->shape[1] == b && l->shape[2] == c &&
	    l->shape[3] == d)
		return 0;
	return hpu_error_set(EINVAL, "%s must be [%lld, %lld, %lld, %lld]", op->names[i],
			     (long long)a, (long long)b, (long long)c, (long long)d);
}

/* Operand i is F32 [B, H, L]: the rows' logsumexp. */
static int hpu_sdpa_lse(const struct hpu_op *op, unsigned int i, const struct hpu_sdpa_dims *d)
{
	const struct hpu_tensor_layout *l = &op->l[i];

	if (l->dtype == HPU_DT_F32 && l->ndim == 3 && l->shape[0] == d->B && l->shape[1] == d->H &&
	    l->shape[2] == d->L)
		return 0;
	return hpu_error_set(EINVAL, "lse must be F32 [B, H, L]");
}

/* q, k, v at t[q..q + 2]: floats [B, H, L, D], [B, H, S, D], [B, H, S, Dv]. */
static int hpu_sdpa_qkv(const struct hpu_op *op, unsigned int q, struct hpu_sdpa_dims *d)
{
	const struct hpu_tensor_layout *lq = &op->l[q], *lv = &op->l[q + 2];
	int ret = 0;
	unsigned int i;

	for (i = 0; i < 3 && !ret; i++)
		ret = hpu_op_dtype_in(op, q + i, HPU_DTS_FLOAT);
	if (ret)
		return ret;
	if (lq->ndim != 4 || lv->ndim != 4)
		return hpu_error_set(EINVAL, "q, k and v must have 4 dims [B, H, L or S, D]");
	*d = (struct hpu_sdpa_dims){ lq->shape[0], lq->shape[1], lq->shape[2], lv->shape[2],
				     lq->shape[3], lv->shape[3] };
	if (d->D < 1 || d->Dv < 1)
		return hpu_error_set(EINVAL, "q's and v's last dims must not be empty");
	ret = hpu_sdpa_shape4(op, q + 1, d->B, d->H, d->S, d->D);
	if (!ret)
		ret = hpu_sdpa_shape4(op, q + 2, d->B, d->H, d->S, d->Dv);
	return ret;
}

/*
 * What the two directions share: q at t[q], mask at t[m] (broadcast
 * to [B, H, L, S] here), valid_len at t[m + 1]; the settings.  Sets a0 and
 * the scalars.
 */
static int hpu_sdpa_common(struct hpu_op *op, unsigned int q, unsigned int m,
			   const struct hpu_tensor *mask,
			   const struct hpu_sdpa_dims *d, const struct hpu_sdpa_params *p)
{
	const int64_t full[4] = { d->B, d->H, d->L, d->S };
	const struct hpu_tensor_layout *lm = &op->l[m], *lv = &op->l[m + 1];
	int64_t flags = 0;
	int ret;

	if (!p)
		return hpu_error_set(EINVAL, "params is NULL");
	if (!isfinite(p->scale))
		return hpu_error_set(EINVAL, "scale is %g, not finite", p->scale);
	if (!(p->dropout_p >= 0 && p->dropout_p < 1))
		return hpu_error_set(EINVAL, "dropout_p is %g, not in [0, 1)", p->dropout_p);
	if (p->causal)
		flags |= HPU_SDPA_CAUSAL;
	if (p->fast_softmax) {
		if (op->l[q].dtype != HPU_DT_BF16)
			return hpu_error_set(EINVAL, "fast softmax takes bf16 q only");
		flags |= HPU_SDPA_FAST_SOFTMAX;
	}
	if (mask) {
		ret = hpu_op_dtype_in(op, m, HPU_DTS_FLOAT | hpu_dt_bit(HPU_DT_U8));
		if (ret)
			return ret;
		if (lm->ndim != 4 || lm->shape[0] != d->B)
			return hpu_error_set(EINVAL, "mask must have 4 dims and q's batch %lld "
					     "(no broadcast over the batch)", (long long)d->B);
		ret = hpu_layout_broadcast(&mask->l, 4, full, &op->l[m], "mask");
		if (ret)
			return ret;
		flags |= HPU_SDPA_MASK;
	}
	if (op->t[m + 1]) {
		ret = hpu_op_dtype_in(op, m + 1, HPU_DTS_INDEX);
		if (ret)
			return ret;
		if (lv->ndim != 1 || lv->shape[0] != d->B)
			return hpu_error_set(EINVAL, "valid_len must be [%lld]", (long long)d->B);
		if (!p->causal || mask)
			return hpu_error_set(EINVAL, "valid_len needs causal attention without a mask");
		flags |= HPU_SDPA_VALID_LEN | (p->pad_left ? HPU_SDPA_PAD_LEFT : 0);
	}
	op->args[0] = flags;
	op->scalars[0] = p->scale;
	op->scalars[1] = p->dropout_p;
	return 0;
}

/* An rng state: I64 [2] (seed, offset), needed with dropout. */
static int hpu_sdpa_rng(const struct hpu_op *op, unsigned int i, double p)
{
	const struct hpu_tensor_layout *l = &op->l[i];

	if (!op->t[i])
		return p > 0 ? hpu_error_set(EINVAL, "%s is NULL with dropout", op->names[i]) : 0;
	if (l->dtype != HPU_DT_I64 || l->ndim != 1 || l->shape[0] != 2)
		return hpu_error_set(EINVAL, "%s must be I64 [2]: seed, offset", op->names[i]);
	return 0;
}

int hpu_op_sdpa(struct hpu_stream *s, struct hpu_tensor *out, struct hpu_tensor *lse,
		const struct hpu_tensor *q, const struct hpu_tensor *k, const struct hpu_tensor *v,
		const struct hpu_tensor *mask, const struct hpu_tensor *valid_len,
		struct hpu_tensor *rng, struct hpu_tensor *rng_used, struct hpu_tensor *probs,
		struct hpu_tensor *drop_mask, const struct hpu_sdpa_params *params)
{
	bool dropout = params && params->dropout_p > 0;
	const struct hpu_arg args[] = {
		HPU_OUT(out, "out"), HPU_OUT(lse, "lse"), HPU_SAME(q, "q"), HPU_SAME(k, "k"),
		HPU_SAME(v, "v"), { mask, "mask", HPU_ARG_OPTIONAL },
		{ valid_len, "valid_len", HPU_ARG_OPTIONAL },
		{ dropout ? rng : NULL, "rng", HPU_ARG_OUT | HPU_ARG_OPTIONAL },
		{ dropout ? rng_used : NULL, "rng_used", HPU_ARG_OUT | HPU_ARG_OPTIONAL },
		{ probs, "probs", HPU_ARG_OUT | HPU_ARG_OPTIONAL },
		{ drop_mask, "drop_mask", HPU_ARG_OUT | HPU_ARG_OPTIONAL },
	};
	struct hpu_op op = { 0 };
	struct hpu_sdpa_dims d;
	int ret = hpu_op_describe(&op, HPU_KERNEL_FUSED_SDPA, "sdpa", args, 11);

	if (!ret)
		ret = hpu_sdpa_qkv(&op, 2, &d);
	if (!ret)
		ret = hpu_sdpa_common(&op, 2, 5, mask, &d, params);
	if (!ret)
		ret = hpu_op_dtype_in(&op, 0, HPU_DTS_FLOAT);
	if (!ret)
		ret = hpu_sdpa_shape4(&op, 0, d.B, d.H, d.L, d.Dv);
	if (!ret)
		ret = hpu_sdpa_lse(&op, 1, &d);
	if (!ret)
		ret = hpu_sdpa_rng(&op, 7, params->dropout_p);
	if (!ret)
		ret = hpu_sdpa_rng(&op, 8, params->dropout_p);
	if (!ret && probs) {
		op.args[0] |= HPU_SDPA_PROBS;
		ret = hpu_op_dtype_in(&op, 9, HPU_DTS_FLOAT);
		if (!ret)
			ret = hpu_sdpa_shape4(&op, 9, d.B, d.H, d.L, d.S);
	}
	if (!ret && drop_mask) {
		op.args[0] |= HPU_SDPA_DROP_MASK;
		ret = hpu_op_dtype_in(&op, 10, hpu_dt_bit(HPU_DT_U8));
		if (!ret)
			ret = hpu_sdpa_shape4(&op, 10, d.B, d.H, d.L, d.S);
	}
	return hpu_op_finish(__func__, s, &op, ret);
}

int hpu_op_sdpa_backward(struct hpu_stream *s, struct hpu_tensor *grad_q, struct hpu_tensor *grad_k,
			 struct hpu_tensor *grad_v, const struct hpu_tensor *grad_out,
			 const struct hpu_tensor *q, const struct hpu_tensor *k,
			 const struct hpu_tensor *v, const struct hpu_tensor *out,
			 const struct hpu_tensor *lse, const struct hpu_tensor *mask,
			 const struct hpu_tensor *valid_len, const struct hpu_tensor *rng_used,
			 const struct hpu_sdpa_params *params)
{
	bool dropout = params && params->dropout_p > 0;
	const struct hpu_arg args[] = {
		HPU_OUT(grad_q, "grad_q"), HPU_OUT(grad_k, "grad_k"), HPU_OUT(grad_v, "grad_v"),
		HPU_SAME(grad_out, "grad_out"), HPU_SAME(q, "q"), HPU_SAME(k, "k"),
		HPU_SAME(v, "v"), HPU_SAME(out, "out"), HPU_SAME(lse, "lse"),
		{ mask, "mask", HPU_ARG_OPTIONAL }, { valid_len, "valid_len", HPU_ARG_OPTIONAL },
		{ dropout ? rng_used : NULL, "rng_used", HPU_ARG_OPTIONAL },
	};
	struct hpu_op op = { 0 };
	struct hpu_sdpa_dims d;
	int ret = hpu_op_describe(&op, HPU_KERNEL_FUSED_SDPA_BWD, "sdpa_backward", args, 12);
	unsigned int i;

	if (!ret)
		ret = hpu_sdpa_qkv(&op, 4, &d);
	if (!ret)
		ret = hpu_sdpa_common(&op, 4, 9, mask, &d, params);
	for (i = 0; i < 3 && !ret; i++) {
		ret = hpu_op_dtype_in(&op, i, HPU_DTS_FLOAT);
		if (!ret)
			ret = hpu_op_same_shape(&op, 4 + i, i);
	}
	for (i = 3; i < 8 && !ret; i += 4) {
		ret = hpu_op_dtype_in(&op, i, HPU_DTS_FLOAT);
		if (!ret)
			ret = hpu_sdpa_shape4(&op, i, d.B, d.H, d.L, d.Dv);
	}
	if (!ret)
		ret = hpu_sdpa_lse(&op, 8, &d);
	if (!ret)
		ret = hpu_sdpa_rng(&op, 11, params->dropout_p);
	return hpu_op_finish(__func__, s, &op, ret);
}
