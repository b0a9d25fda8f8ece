/* SPDX-License-Identifier: MIT */
/*
 * CPU fallback: ops the device cannot run - a dtype it lacks (F64) or an
 * op it has no kernel for (cumsum) - run here.  The stream is synchronized
 * by reading every operand's span to host memory, the op is computed in
 * double precision over the same layouts the device would get, and the
 * outputs' spans are written back, ordered on the stream like any op.
 * Integers pass through doubles: exact up to 2^53.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <drm/hpu_kernels.h>
#include <drm/hpu_philox.h>
#include <drm/hpu_pool.h>

#include "../ops/ops.h"

/* An operand in host memory: element offset o lives at span + (o - lo) * size. */
struct hpu_hview {
	uint8_t *span;
	int64_t lo;
	size_t size;
	const struct hpu_tensor_layout *l;
};

static uint8_t *hpu_helem(const struct hpu_hview *h, const int64_t *idx)
{
	return h->span + (hpu_layout_offset(h->l, idx) - h->lo) * h->size;
}

static double hpu_hload(const struct hpu_hview *h, const int64_t *idx)
{
	const uint8_t *p = hpu_helem(h, idx);
	union { float f; double d; int32_t i32; int64_t i64; uint32_t u32; uint16_t u16; } v;

	memcpy(&v, p, h->size);
	switch (h->l->dtype) {
	case HPU_DT_F32: return v.f;
	case HPU_DT_BF16: v.u32 = (uint32_t)v.u16 << 16; return v.f;
	case HPU_DT_I32: return v.i32;
	case HPU_DT_I64: return (double)v.i64;
	case HPU_DT_U8: return *p;
	default: return v.d;
	}
}

static void hpu_hstore(const struct hpu_hview *h, const int64_t *idx, double x)
{
	uint8_t *p = hpu_helem(h, idx);
	union { float f; double d; int32_t i32; int64_t i64; uint32_t u32; uint16_t u16; } v;

	switch (h->l->dtype) {
	case HPU_DT_F32: v.f = (float)x; break;
	case HPU_DT_BF16:
		v.f = (float)x;
		/* Round to nearest even, as the device does. */
		v.u16 = isnan(v.f) ? (uint16_t)((v.u32 >> 16) | 0x40)
				   : (uint16_t)((v.u32 + 0x7fff + ((v.u32 >> 16) & 1)) >> 16);
		break;
	case HPU_DT_I32: v.i32 = (int32_t)(int64_t)x; break;
	case HPU_DT_I64: v.i64 = (int64_t)x; break;
	case HPU_DT_U8: v.u16 = (uint8_t)(int64_t)x; break;
	default: v.d = x; break;
	}
	memcpy(p, &v, h->size);
}

static double hpu_unary_fn(int64_t fn, double x, double s)
{
	switch (fn) {
	case HPU_UNARY_NEG: return -x;
	case HPU_UNARY_ABS: return fabs(x);
	case HPU_UNARY_RELU: return x > 0 ? x : 0;
	case HPU_UNARY_GELU: return 0.5 * x * (1 + erf(x / M_SQRT2));
	case HPU_UNARY_GELU_TANH:
		return 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
	case HPU_UNARY_TANH: return tanh(x);
	case HPU_UNARY_SIGMOID: return 1 / (1 + exp(-x));
	case HPU_UNARY_EXP: return exp(x);
	case HPU_UNARY_LOG: return log(x);
	case HPU_UNARY_SQRT: return sqrt(x);
	case HPU_UNARY_RSQRT: return 1 / sqrt(x);
	case HPU_UNARY_RECIPROCAL: return 1 / x;
	case HPU_UNARY_POW_SCALAR: return pow(x, s);
	case HPU_UNARY_SILU: return x / (1 + exp(-x));
	case HPU_UNARY_SIN: return sin(x);
	case HPU_UNARY_COS: return cos(x);
	case HPU_UNARY_ERF: return erf(x);
	default: return x; /* COPY */
	}
}

static double hpu_binary_fn(int64_t fn, double a, double b, double alpha)
{
	switch (fn) {
	case HPU_BINARY_ADD: return a + alpha * b;
	case HPU_BINARY_SUB: return a - alpha * b;
	case HPU_BINARY_MUL: return a * b;
	case HPU_BINARY_DIV: return a / b;
	case HPU_BINARY_MAX: return isnan(a) || a > b ? a : b;
	case HPU_BINARY_MIN: return isnan(a) || a < b ? a : b;
	case HPU_BINARY_POW: return pow(a, b);
	case HPU_BINARY_EQ: return a == b;
	case HPU_BINARY_NE: return a != b;
	case HPU_BINARY_LT: return a < b;
	case HPU_BINARY_LE: return a <= b;
	case HPU_BINARY_GT: return a > b;
	default: return a >= b; /* GE */
	}
}

static double hpu_gelu_grad(double x, bool tanh_approx)
{
	double k = sqrt(2 / M_PI), u, t;

	if (!tanh_approx)
		return 0.5 * (1 + erf(x / M_SQRT2)) + x * exp(-0.5 * x * x) / sqrt(2 * M_PI);
	u = k * (x + 0.044715 * x * x * x);
	t = tanh(u);
	return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * 0.044715 * x * x);
}

/* One element of an elementwise kernel: v[i] is operand i, outputs are written back. */
static void hpu_elementwise_fn(const struct hpu_op *op, double *v, double step)
{
	const double *s = op->scalars;
	double g, d;

	switch (op->kernel) {
	case HPU_KERNEL_UNARY: v[0] = hpu_unary_fn(op->args[0], v[1], s[0]); break;
	case HPU_KERNEL_BINARY:
		v[0] = hpu_binary_fn(op->args[0], v[1], op->args[1] ? s[1] : v[2],
				     op->args[0] <= HPU_BINARY_SUB ? s[0] : 1);
		break;
	case HPU_KERNEL_WHERE: v[0] = v[1] != 0 ? v[2] : v[3]; break;
	case HPU_KERNEL_FILL: v[0] = s[0]; break;
	case HPU_KERNEL_DROPOUT_BWD: v[0] = v[2] != 0 ? v[1] / (1 - s[0]) : 0; break;
	case HPU_KERNEL_RELU_BWD: v[0] = v[2] > 0 ? v[1] : 0; break;
	case HPU_KERNEL_GELU_BWD: v[0] = v[1] * hpu_gelu_grad(v[2], op->args[0]); break;
	case HPU_KERNEL_SILU_BWD:
		g = 1 / (1 + exp(-v[2]));
		v[0] = v[1] * g * (1 + v[2] * (1 - g));
		break;
	case HPU_KERNEL_SGD: /* param, grad, buf; lr, momentum, dampening, weight_decay */
		g = v[1] + s[3] * v[0];
		if (s[1] != 0) {
			v[2] = (op->args[0] & 2) ? g : s[1] * v[2] + (1 - s[2]) * g;
			g = (op->args[0] & 1) ? g + s[1] * v[2] : v[2];
		}
		v[0] -= s[0] * g;
		break;
	case HPU_KERNEL_ADADELTA: /* param, grad, square_avg, acc_delta; lr, rho, eps, wd */
		g = v[1] + s[3] * v[0];
		v[2] = s[1] * v[2] + (1 - s[1]) * g * g;
		d = sqrt(v[3] + s[2]) / sqrt(v[2] + s[2]) * g;
		v[3] = s[1] * v[3] + (1 - s[1]) * d * d;
		v[0] -= s[0] * d;
		break;
	case HPU_KERNEL_ADAMW: /* param, grad, m, v, step; lr, beta1, beta2, eps, wd */
		v[0] *= 1 - s[0] * s[4];
		v[2] = s[1] * v[2] + (1 - s[1]) * v[1];
		v[3] = s[2] * v[3] + (1 - s[2]) * v[1] * v[1];
		v[0] -= s[0] / (1 - pow(s[1], step)) * v[2] /
			(sqrt(v[3]) / sqrt(1 - pow(s[2], step)) + s[3]);
		break;
	}
}

static int hpu_host_elementwise(const struct hpu_op *op, const struct hpu_hview *h)
{
	const struct hpu_tensor_layout *l0 = &op->l[0];
	uint32_t written = op->outputs;
	int64_t idx[HPU_MAX_DIMS] = { 0 };
	double v[HPU_OP_TENSORS], step = 0;
	unsigned int i;

	if (op->kernel == HPU_KERNEL_ADAMW) {
		/* The step count is a scalar: once per launch, not per element. */
		step = hpu_hload(&h[4], idx) + 1;
		hpu_hstore(&h[4], idx, step);
		written &= ~(1u << 4);
	}
	if (!hpu_layout_numel(l0))
		return 0;
	do {
		for (i = 0; i < op->num_tensors; i++)
			v[i] = op->t[i] ? hpu_hload(&h[i], idx) : 0;
		hpu_elementwise_fn(op, v, step);
		for (i = 0; i < op->num_tensors; i++)
			if (written & (1u << i))
				hpu_hstore(&h[i], idx, v[i]);
	} while (hpu_index_next(l0->ndim, l0->shape, idx));
	return 0;
}

/*
 * REDUCE: out keeps in's dims, the reduced ones of size 1 (hpu_reduce_out()).
 * A SUM or MEAN over more than HPU_REDUCE_CHUNK elements adds the chunks'
 * partial sums in order, as the device does.
 */
static int hpu_host_reduce(const struct hpu_op *op, const struct hpu_hview *h)
{
	const struct hpu_tensor_layout *in = &op->l[1], *out = &op->l[0];
	int64_t n = hpu_layout_numel(out), idx[HPU_MAX_DIMS] = { 0 }, oidx[HPU_MAX_DIMS];
	int64_t fn = op->args[0], count = n ? hpu_layout_numel(in) / n : 0;
	int64_t chunks = count > HPU_REDUCE_CHUNK ? (count - 1) / HPU_REDUCE_CHUNK + 1 : 1;
	double *acc = calloc(2 * (size_t)n + 1, sizeof(double)), *arg = acc + n;
	double *part = chunks > 1 ? calloc((size_t)(n * chunks), sizeof(double)) : NULL;
	unsigned int d, dim = (unsigned int)__builtin_ctz((unsigned int)op->args[1]);
	int64_t kstride[HPU_MAX_DIMS], k = 1;

	/* An element's place in its output's walk: row-major over the reduced dims. */
	for (d = in->ndim; d-- > 0;) {
		kstride[d] = op->args[1] >> d & 1 ? k : 0;
		k *= op->args[1] >> d & 1 ? in->shape[d] : 1;
	}
	if (!acc || (chunks > 1 && !part)) {
		free(acc);
		free(part);
		return hpu_error_set(ENOMEM, "out of memory");
	}
	if (hpu_layout_numel(in)) {
		uint8_t *seen = calloc((size_t)n, 1);

		if (!seen) {
			free(acc);
			return hpu_error_set(ENOMEM, "out of memory");
		}
		do {
			int64_t o = 0;
			double x = hpu_hload(&h[1], idx);
			bool better;

			k = 0;
			for (d = 0; d < in->ndim; d++) {
				oidx[d] = out->shape[d] == 1 ? 0 : idx[d];
				o = o * out->shape[d] + oidx[d];
				k += idx[d] * kstride[d];
			}
			better = !seen[o] ||
				 ((fn == HPU_REDUCE_MAX || fn == HPU_REDUCE_ARGMAX)
					  ? (x > acc[o] || (isnan(x) && !isnan(acc[o])))
					  : (x < acc[o] || (isnan(x) && !isnan(acc[o]))));
			if (fn <= HPU_REDUCE_MEAN) {
				if (part)
					part[o * chunks + k / HPU_REDUCE_CHUNK] += x;
				else
					acc[o] += x;
			} else if (better) {
				acc[o] = x;
				arg[o] = (double)idx[dim];
			}
			seen[o] = 1;
		} while (hpu_index_next(in->ndim, in->shape, idx));
		free(seen);
	}
	for (int64_t o = 0; part && o < n; o++)
		for (int64_t ch = 0; ch < chunks; ch++)
			acc[o] += part[o * chunks + ch];
	free(part);
	memset(oidx, 0, sizeof(oidx));
	for (int64_t o = 0; o < n; o++, hpu_index_next(out->ndim, out->shape, oidx)) {
		double r = fn == HPU_REDUCE_MEAN ? acc[o] / (double)count
			   : fn >= HPU_REDUCE_ARGMAX ? arg[o] : acc[o];

		hpu_hstore(&h[0], oidx, r);
	}
	free(acc);
	return 0;
}

/* Steps idx over the starts of the rows along dim (idx[dim] = 0); false after the last. */
static bool hpu_row_next(const struct hpu_tensor_layout *l, unsigned int dim, int64_t *idx)
{
	int64_t shape[HPU_MAX_DIMS];

	memcpy(shape, l->shape, sizeof(shape));
	shape[dim] = 1;
	return hpu_index_next(l->ndim, shape, idx);
}

/* SOFTMAX(_BWD): t out/grad_in, in/grad_out[, out]; a0 dim, a1 log. */
static int hpu_host_softmax(const struct hpu_op *op, const struct hpu_hview *h)
{
	const struct hpu_tensor_layout *l = &op->l[0];
	unsigned int dim = (unsigned int)op->args[0];
	bool log_ = op->args[1], bwd = op->kernel == HPU_KERNEL_SOFTMAX_BWD;
	int64_t idx[HPU_MAX_DIMS] = { 0 }, j, n = l->shape[dim];

	if (!hpu_layout_numel(l))
		return 0;
	do {
		double m = -INFINITY, sum = 0, y, g;

		for (j = 0, idx[dim] = 0; j < n; idx[dim] = ++j) {
			if (bwd) { /* sum of grad_out (log) or of grad_out * out */
				g = hpu_hload(&h[1], idx);
				sum += log_ ? g : g * hpu_hload(&h[2], idx);
			} else if ((y = hpu_hload(&h[1], idx)) > m) {
				m = y;
			}
		}
		for (j = 0, idx[dim] = 0; !bwd && j < n; idx[dim] = ++j)
			sum += exp(hpu_hload(&h[1], idx) - m);
		for (j = 0, idx[dim] = 0; j < n; idx[dim] = ++j) {
			if (bwd) {
				g = hpu_hload(&h[1], idx);
				y = hpu_hload(&h[2], idx);
				y = log_ ? g - exp(y) * sum : y * (g - sum);
			} else {
				y = hpu_hload(&h[1], idx) - m;
				y = log_ ? y - log(sum) : exp(y) / sum;
			}
			hpu_hstore(&h[0], idx, y);
		}
		idx[dim] = 0;
	} while (hpu_row_next(l, dim, idx));
	return 0;
}

/*
 * NLL_LOSS, CROSS_ENTROPY and their backwards.  Forward: t loss, x, target;
 * backward: t grad_x, grad_loss, [logits,] target.
 */
static int hpu_host_loss(const struct hpu_op *op, const struct hpu_hview *h)
{
	bool bwd = op->kernel == HPU_KERNEL_NLL_LOSS_BWD || op->kernel == HPU_KERNEL_CROSS_ENTROPY_BWD;
	bool ce = op->kernel == HPU_KERNEL_CROSS_ENTROPY || op->kernel == HPU_KERNEL_CROSS_ENTROPY_BWD;
	const struct hpu_hview *x = bwd ? (ce ? &h[2] : NULL) : &h[1], *tg = &h[op->num_tensors - 1];
	const struct hpu_tensor_layout *shape = bwd ? &op->l[0] : &op->l[1];
	int64_t N = shape->shape[0], C = shape->shape[1], i, c, counted = 0, zero[HPU_MAX_DIMS] = { 0 };
	int64_t reduction = op->args[0], ignore = op->args[1];
	double total = 0, scale;

	for (i = 0; i < N; i++)
		counted += (int64_t)hpu_hload(tg, (int64_t[]){ i }) != ignore;
	scale = reduction == HPU_REDUCTION_MEAN ? 1.0 / (double)counted : 1.0;
	for (i = 0; i < N; i++) {
		int64_t t = (int64_t)hpu_hload(tg, (int64_t[]){ i });
		double m = -INFINITY, lse = 0, g, loss;

		for (c = 0; ce && c < C; c++)
			m = fmax(m, hpu_hload(x, (int64_t[]){ i, c }));
		for (c = 0; ce && c < C; c++)
			lse += exp(hpu_hload(x, (int64_t[]){ i, c }) - m);
		lse = ce ? m + log(lse) : 0;
		if (!bwd) {
			loss = t == ignore ? 0 : -(hpu_hload(x, (int64_t[]){ i, t }) - lse);
			if (reduction == HPU_REDUCTION_NONE)
				hpu_hstore(&h[0], (int64_t[]){ i }, loss);
			total += loss;
			continue;
		}
		g = hpu_hload(&h[1], reduction == HPU_REDUCTION_NONE ? (int64_t[]){ i } : zero) * scale;
		for (c = 0; c < C; c++) {
			double p = ce ? exp(hpu_hload(x, (int64_t[]){ i, c }) - lse) : 0;

			hpu_hstore(&h[0], (int64_t[]){ i, c },
				   t == ignore ? 0 : g * ((ce ? p : 0) - (c == t)));
		}
	}
	if (!bwd && reduction != HPU_REDUCTION_NONE)
		hpu_hstore(&h[0], zero, total * scale);
	return 0;
}

/* GEMM: t out [B, m, n], a [B, m, k], b [B, k, n], bias (broadcast to out) or NULL. */
static int hpu_host_gemm(const struct hpu_op *op, const struct hpu_hview *h)
{
	const int64_t *s = op->l[0].shape, k = op->l[1].shape[2];
	int64_t b, i, j, p;

	for (b = 0; b < s[0]; b++)
		for (i = 0; i < s[1]; i++)
			for (j = 0; j < s[2]; j++) {
				double acc = op->t[3] ? hpu_hload(&h[3], (int64_t[]){ b, i, j }) : 0;

				for (p = 0; p < k; p++)
					acc += hpu_hload(&h[1], (int64_t[]){ b, i, p }) *
					       hpu_hload(&h[2], (int64_t[]){ b, p, j });
				hpu_hstore(&h[0], (int64_t[]){ b, i, j }, acc);
			}
	return 0;
}

static int hpu_host_cumsum(const struct hpu_op *op, const struct hpu_hview *h)
{
	const struct hpu_tensor_layout *l = &op->l[0];
	unsigned int dim = (unsigned int)op->args[0];
	int64_t idx[HPU_MAX_DIMS] = { 0 }, j;

	if (!hpu_layout_numel(l))
		return 0;
	do {
		double sum = 0;

		for (j = 0, idx[dim] = 0; j < l->shape[dim]; idx[dim] = ++j) {
			sum += hpu_hload(&h[1], idx);
			hpu_hstore(&h[0], idx, sum);
		}
		idx[dim] = 0;
	} while (hpu_row_next(l, dim, idx));
	return 0;
}

/*
 * The operands' slots of LAYER_NORM (centered: by the row's mean, and a
 * bias) and RMS_NORM (not centered) and of their backwards; -1: none.
 */
struct hpu_host_norm {
	int out, mean, rstd, in, weight, bias;           /* forward */
	int grad_in, grad_weight, grad_bias, grad_out;   /* backward */
};

static const struct hpu_host_norm hpu_host_layer_norm_slots = {
	.out = 0, .mean = 1, .rstd = 2, .in = 3, .weight = 4, .bias = 5,
}, hpu_host_layer_norm_bwd_slots = {
	.grad_in = 0, .grad_weight = 1, .grad_bias = 2, .grad_out = 3, .in = 4, .mean = 5,
	.rstd = 6, .weight = 7,
}, hpu_host_rms_norm_slots = {
	.out = 0, .mean = -1, .rstd = 1, .in = 2, .weight = 3, .bias = -1,
}, hpu_host_rms_norm_bwd_slots = {
	.grad_in = 0, .grad_weight = 1, .grad_bias = -1, .grad_out = 2, .in = 3, .mean = -1,
	.rstd = 4, .weight = 5,
};

/* Whether the op has the operand of slot s. */
static bool hpu_host_norm_has(const struct hpu_op *op, int s)
{
	return s >= 0 && op->t[s];
}

/*
 * LAYER_NORM and RMS_NORM over a0 trailing dims, eps s0: per row, rstd = 1 /
 * sqrt(mean((x - mean)^2) + eps) (mean 0 when not centered), out = (x - mean)
 * * rstd (* weight) (+ bias).
 */
static int hpu_host_row_norm(const struct hpu_op *op, const struct hpu_hview *h,
			     const struct hpu_host_norm *s)
{
	const struct hpu_tensor_layout *in = &op->l[s->in];
	unsigned int dims = (unsigned int)op->args[0], lead = in->ndim - dims;
	int64_t idx[HPU_MAX_DIMS] = { 0 }, n = hpu_shape_numel(dims, in->shape + lead);
	const int64_t *inner = in->shape + lead;
	const struct hpu_hview *x = &h[s->in];

	if (!hpu_layout_numel(in))
		return 0;
	do {
		double sum = 0, var = 0, mean = 0, rstd, y;

		if (s->mean >= 0) {
			do
				sum += hpu_hload(x, idx);
			while (hpu_index_next(dims, inner, idx + lead));
			mean = sum / (double)n;
		}
		do
			var += (hpu_hload(x, idx) - mean) * (hpu_hload(x, idx) - mean);
		while (hpu_index_next(dims, inner, idx + lead));
		rstd = 1 / sqrt(var / (double)n + op->scalars[0]);
		if (s->mean >= 0)
			hpu_hstore(&h[s->mean], idx, mean);
		hpu_hstore(&h[s->rstd], idx, rstd);
		do {
			y = (hpu_hload(x, idx) - mean) * rstd;
			if (hpu_host_norm_has(op, s->weight))
				y *= hpu_hload(&h[s->weight], idx + lead);
			if (hpu_host_norm_has(op, s->bias))
				y += hpu_hload(&h[s->bias], idx + lead);
			hpu_hstore(&h[s->out], idx, y);
		} while (hpu_index_next(dims, inner, idx + lead));
	} while (hpu_index_next(lead, in->shape, idx));
	return 0;
}

/*
 * LAYER_NORM_BWD and RMS_NORM_BWD.  With xhat = (x - mean) * rstd and g =
 * grad_out * weight: grad_in = rstd * (g - mean(g) - xhat * mean(g * xhat)),
 * without the mean(g) term when not centered; grad_weight and grad_bias sum
 * grad_out * xhat and grad_out over the rows.
 */
static int hpu_host_row_norm_bwd(const struct hpu_op *op, const struct hpu_hview *h,
				 const struct hpu_host_norm *s)
{
	const struct hpu_tensor_layout *in = &op->l[s->in];
	unsigned int dims = (unsigned int)op->args[0], lead = in->ndim - dims;
	int64_t idx[HPU_MAX_DIMS] = { 0 }, n = hpu_shape_numel(dims, in->shape + lead);
	const int64_t *inner = in->shape + lead;
	const struct hpu_hview *x = &h[s->in], *gy = &h[s->grad_out];
	bool gw = hpu_host_norm_has(op, s->grad_weight), gb = hpu_host_norm_has(op, s->grad_bias);
	bool w = hpu_host_norm_has(op, s->weight);

	do { /* the parameter grads accumulate over the rows */
		if (gw)
			hpu_hstore(&h[s->grad_weight], idx + lead, 0);
		if (gb)
			hpu_hstore(&h[s->grad_bias], idx + lead, 0);
	} while (hpu_index_next(dims, inner, idx + lead));
	if (!hpu_layout_numel(in))
		return 0;
	do {
		double mean = s->mean >= 0 ? hpu_hload(&h[s->mean], idx) : 0;
		double rstd = hpu_hload(&h[s->rstd], idx), sg = 0, sgx = 0, go, xhat, g;

		do {
			go = hpu_hload(gy, idx);
			xhat = (hpu_hload(x, idx) - mean) * rstd;
			g = w ? go * hpu_hload(&h[s->weight], idx + lead) : go;
			sg += g;
			sgx += g * xhat;
			if (gw)
				hpu_hstore(&h[s->grad_weight], idx + lead,
					   hpu_hload(&h[s->grad_weight], idx + lead) + go * xhat);
			if (gb)
				hpu_hstore(&h[s->grad_bias], idx + lead,
					   hpu_hload(&h[s->grad_bias], idx + lead) + go);
		} while (hpu_index_next(dims, inner, idx + lead));
		if (s->mean < 0)
			sg = 0;
		do {
			xhat = (hpu_hload(x, idx) - mean) * rstd;
			g = hpu_hload(gy, idx) * (w ? hpu_hload(&h[s->weight], idx + lead) : 1);
			hpu_hstore(&h[s->grad_in], idx,
				   rstd * (g - sg / (double)n - xhat * sgx / (double)n));
		} while (hpu_index_next(dims, inner, idx + lead));
	} while (hpu_index_next(lead, in->shape, idx));
	return 0;
}

static int hpu_host_layer_norm(const struct hpu_op *op, const struct hpu_hview *h)
{
	return hpu_host_row_norm(op, h, &hpu_host_layer_norm_slots);
}

static int hpu_host_layer_norm_bwd(const struct hpu_op *op, const struct hpu_hview *h)
{
	return hpu_host_row_norm_bwd(op, h, &hpu_host_layer_norm_bwd_slots);
}

static int hpu_host_rms_norm(const struct hpu_op *op, const struct hpu_hview *h)
{
	return hpu_host_row_norm(op, h, &hpu_host_rms_norm_slots);
}

static int hpu_host_rms_norm_bwd(const struct hpu_op *op, const struct hpu_hview *h)
{
	return hpu_host_row_norm_bwd(op, h, &hpu_host_rms_norm_bwd_slots);
}

/*
 * FUSED_SDPA(_BWD) in double over the whole [L, S] matrix, row by row: the
 * device's semantics (hpu_kernels.h) without its blocks.  A launch's sizes,
 * settings and operand slots: q (k, v follow) and mask (valid_len follows).
 */
struct hpu_host_sdpa {
	const struct hpu_hview *h;
	unsigned int q, m;
	int64_t B, H, L, S, D, Dv, flags;
	double scale, p;
	int64_t seed, offset; /* the draws' state (with dropout) */
};

static struct hpu_host_sdpa hpu_host_sdpa_get(const struct hpu_op *op, const struct hpu_hview *h,
					      unsigned int q, unsigned int m, unsigned int rng)
{
	const struct hpu_tensor_layout *lq = &op->l[q], *lv = &op->l[q + 2];
	struct hpu_host_sdpa a = {
		h, q, m, lq->shape[0], lq->shape[1], lq->shape[2], lv->shape[2], lq->shape[3],
		lv->shape[3], op->args[0], op->scalars[0], op->scalars[1], 0, 0,
	};

	if (a.p > 0) {
		memcpy(&a.seed, hpu_helem(&h[rng], (int64_t[]){ 0 }), sizeof(a.seed));
		memcpy(&a.offset, hpu_helem(&h[rng], (int64_t[]){ 1 }), sizeof(a.offset));
	}
	return a;
}

static double hpu_host_get4(const struct hpu_hview *h, int64_t b, int64_t hh, int64_t i, int64_t j)
{
	return hpu_hload(h, (int64_t[]){ b, hh, i, j });
}

/* Dropout's scale of element (b, hh, i, j): 1 / (1 - p) kept, 0 dropped. */
static double hpu_host_sdpa_keep(const struct hpu_host_sdpa *a, int64_t b, int64_t hh, int64_t i,
				 int64_t j)
{
	uint64_t m = (uint64_t)a->offset + (uint64_t)(((b * a->H + hh) * a->L + i) * a->S + j);

	if (a->p == 0)
		return 1;
	return hpu_philox_uniform((uint64_t)a->seed, m) >= a->p ? 1 / (1 - a->p) : 0;
}

/* Query i's scores s[S] (-inf for the keys it does not see); a bad valid length fails. */
static int hpu_host_sdpa_scores(const struct hpu_host_sdpa *a, int64_t b, int64_t hh, int64_t i,
				double *s)
{
	const struct hpu_hview *h = a->h;
	int64_t lo = 0, hi = a->S, n, j, d;

	if ((a->flags & HPU_SDPA_CAUSAL) && i + 1 < hi)
		hi = i + 1;
	if (a->flags & HPU_SDPA_VALID_LEN) {
		n = (int64_t)hpu_hload(&h[a->m + 1], (int64_t[]){ b });
		if (n < 0 || n > a->S)
			return hpu_error_set(EINVAL, "sdpa: valid length %lld out of [0, %lld]",
					     (long long)n, (long long)a->S);
		if (a->flags & HPU_SDPA_PAD_LEFT) {
			lo = a->S - n;
			hi = i + n < a->L ? 0 : hi;
		} else {
			hi = i >= n ? 0 : (n < hi ? n : hi);
		}
	}
	for (j = 0; j < a->S; j++) {
		bool seen = j >= lo && j < hi;
		double x = 0;

		for (d = 0; d < a->D && seen; d++)
			x += hpu_host_get4(&h[a->q], b, hh, i, d) * hpu_host_get4(&h[a->q + 1], b, hh, j, d);
		x *= a->scale;
		if (seen && (a->flags & HPU_SDPA_MASK)) {
			double mv = hpu_host_get4(&h[a->m], b, hh, i, j);

			if (h[a->m].l->dtype == HPU_DT_U8)
				seen = mv != 0;
			else
				x += mv;
		}
		s[j] = seen ? x : -INFINITY;
	}
	return 0;
}

/* The logsumexp of s[S], -inf for none seen. */
static double hpu_host_lse(const double *s, int64_t n)
{
	double mx = -INFINITY, sum = 0;
	int64_t j;

	for (j = 0; j < n; j++)
		mx = s[j] > mx ? s[j] : mx;
	if (mx == -INFINITY)
		return mx;
	for (j = 0; j < n; j++)
		sum += exp(s[j] - mx);
	return mx + log(sum);
}

/* FUSED_SDPA: t out, lse, q, k, v, mask, valid_len, rng, rng_used, probs, drop_mask. */
static int hpu_host_sdpa(const struct hpu_op *op, const struct hpu_hview *h)
{
	struct hpu_host_sdpa a = hpu_host_sdpa_get(op, h, 2, 5, 7);
	double *s = malloc(((size_t)a.S + 1) * sizeof(*s)), lse, w;
	int64_t b, hh, i, j, e;
	int ret = s ? 0 : hpu_error_set(ENOMEM, "out of memory");

	for (b = 0; b < a.B && !ret; b++)
		for (hh = 0; hh < a.H && !ret; hh++)
			for (i = 0; i < a.L && !ret; i++) {
				ret = hpu_host_sdpa_scores(&a, b, hh, i, s);
				lse = hpu_host_lse(s, a.S);
				hpu_hstore(&h[1], (int64_t[]){ b, hh, i }, lse);
				for (e = 0; e < a.Dv; e++) {
					double o = 0;

					for (j = 0; j < a.S && lse > -INFINITY; j++)
						o += exp(s[j] - lse) * hpu_host_sdpa_keep(&a, b, hh, i, j) *
						     hpu_host_get4(&h[4], b, hh, j, e);
					hpu_hstore(&h[0], (int64_t[]){ b, hh, i, e }, o);
				}
				for (j = 0; j < a.S; j++) {
					w = lse > -INFINITY ? exp(s[j] - lse) : 0;
					if (a.flags & HPU_SDPA_PROBS)
						hpu_hstore(&h[9], (int64_t[]){ b, hh, i, j }, w);
					if (a.flags & HPU_SDPA_DROP_MASK)
						hpu_hstore(&h[10], (int64_t[]){ b, hh, i, j },
							   hpu_host_sdpa_keep(&a, b, hh, i, j) != 0);
				}
			}
	free(s);
	if (!ret && a.p > 0) {
		int64_t next = a.offset + a.B * a.H * a.L * a.S;

		memcpy(hpu_helem(&h[8], (int64_t[]){ 0 }), &a.seed, sizeof(a.seed));
		memcpy(hpu_helem(&h[8], (int64_t[]){ 1 }), &a.offset, sizeof(a.offset));
		memcpy(hpu_helem(&h[7], (int64_t[]){ 1 }), &next, sizeof(next));
	}
	return ret;
}

/*
 * FUSED_SDPA_BWD: t grad_q, grad_k, grad_v, grad_out, q, k, v, out, lse,
 * mask, valid_len, rng_used.  grad_k and grad_v sum over the rows in
 * double before their one store.
 */
static int hpu_host_sdpa_bwd(const struct hpu_op *op, const struct hpu_hview *h)
{
	struct hpu_host_sdpa a = hpu_host_sdpa_get(op, h, 4, 9, 11);
	size_t n = (size_t)a.S * (size_t)(1 + a.D + a.Dv) + (size_t)a.D + 1;
	double *s = malloc(n * sizeof(*s)), *dk, *dv, *dq;
	int64_t b, hh, i, j, d;
	int ret = s ? 0 : hpu_error_set(ENOMEM, "out of memory");

	for (b = 0; b < a.B && !ret; b++)
		for (hh = 0; hh < a.H && !ret; hh++) {
			memset(s, 0, n * sizeof(*s));
			dk = s + a.S;
			dv = dk + a.S * a.D;
			dq = dv + a.S * a.Dv;
			for (i = 0; i < a.L && !ret; i++) {
				double lse = hpu_hload(&h[8], (int64_t[]){ b, hh, i }), delta = 0;

				ret = hpu_host_sdpa_scores(&a, b, hh, i, s);
				for (d = 0; d < a.Dv; d++)
					delta += hpu_host_get4(&h[3], b, hh, i, d) *
						 hpu_host_get4(&h[7], b, hh, i, d);
				memset(dq, 0, (size_t)a.D * sizeof(*dq));
				for (j = 0; j < a.S && lse > -INFINITY; j++) {
					double pr = exp(s[j] - lse), keep, da = 0, ds;

					if (pr == 0)
						continue;
					keep = hpu_host_sdpa_keep(&a, b, hh, i, j);
					for (d = 0; d < a.Dv; d++) {
						double g = hpu_host_get4(&h[3], b, hh, i, d);

						da += g * hpu_host_get4(&h[6], b, hh, j, d);
						dv[j * a.Dv + d] += pr * keep * g;
					}
					ds = pr * (da * keep - delta) * a.scale;
					for (d = 0; d < a.D; d++) {
						dq[d] += ds * hpu_host_get4(&h[5], b, hh, j, d);
						dk[j * a.D + d] += ds * hpu_host_get4(&h[4], b, hh, i, d);
					}
				}
				for (d = 0; d < a.D; d++)
					hpu_hstore(&h[0], (int64_t[]){ b, hh, i, d }, dq[d]);
			}
			for (j = 0; j < a.S * a.D; j++)
				hpu_hstore(&h[1], (int64_t[]){ b, hh, j / a.D, j % a.D }, dk[j]);
			for (j = 0; j < a.S * a.Dv; j++)
				hpu_hstore(&h[2], (int64_t[]){ b, hh, j / a.Dv, j % a.Dv }, dv[j]);
		}
	free(s);
	return ret;
}

/* TRIANGLE: t out, in of one dtype; a0 diagonal, a1 upper.  Elements move as bytes. */
static int hpu_host_triangle(const struct hpu_op *op, const struct hpu_hview *h)
{
	const struct hpu_tensor_layout *l = &op->l[0];
	int64_t idx[HPU_MAX_DIMS] = { 0 }, diag = op->args[0];

	if (!hpu_layout_numel(l))
		return 0;
	do {
		int64_t d = idx[l->ndim - 1] - idx[l->ndim - 2];

		if (op->args[1] ? d >= diag : d <= diag)
			memmove(hpu_helem(&h[0], idx), hpu_helem(&h[1], idx), h[0].size);
		else
			memset(hpu_helem(&h[0], idx), 0, h[0].size);
	} while (hpu_index_next(l->ndim, l->shape, idx));
	return 0;
}

/* v as dtype stores it. */
static double hpu_host_round(uint32_t dtype, double v)
{
	switch (dtype) {
	case HPU_DT_F32: return (float)v;
	case HPU_DT_BF16: {
		struct hpu_tensor_layout l = { .dtype = HPU_DT_BF16 };
		uint16_t b;
		struct hpu_hview h = { (uint8_t *)&b, 0, 2, &l };
		int64_t idx[HPU_MAX_DIMS] = { 0 };

		hpu_hstore(&h, idx, v);
		return hpu_hload(&h, idx);
	}
	default: return v;
	}
}

/*
 * ARANGE: t out [n]; s0 start, s1 step; a0 lanes, a1 chunk (hpu_op_arange()).
 * Integral outs in int64; BF16's arithmetic is float, as the CPU's.
 */
static int hpu_host_arange(const struct hpu_op *op, const struct hpu_hview *h)
{
	int64_t n = op->l[0].shape[0], lanes = op->args[0], chunk = op->args[1], i;
	double start = op->scalars[0], step = op->scalars[1];
	uint32_t dt = op->l[0].dtype;
	bool fl = dt == HPU_DT_BF16;

	for (i = 0; i < n; i++) {
		int64_t b = chunk ? i / chunk * chunk : 0, len = n - b, k, at[HPU_MAX_DIMS] = { i };
		double v;

		if (chunk && len > chunk)
			len = chunk;
		if (dt != HPU_DT_F32 && dt != HPU_DT_F64 && !fl) {
			uint64_t x = (uint64_t)(int64_t)start + (uint64_t)(int64_t)step * (uint64_t)i;
			int64_t iv = (int64_t)x;

			memcpy(hpu_helem(&h[0], at), dt == HPU_DT_I64 ? (void *)&iv :
			       (void *)&(int32_t){ (int32_t)iv }, h[0].size);
			continue;
		}
		k = lanes && i - b < len / (2 * lanes) * (2 * lanes) ? i - (i - b) % lanes : i;
		v = fl ? (float)((float)start + (float)step * (float)k) : start + step * (double)k;
		if (k != i) {
			v = hpu_host_round(dt, v);
			v = fl ? (float)((float)v + (float)(i - k) * (float)step)
			       : v + (double)(i - k) * step;
		}
		hpu_hstore(&h[0], at, v);
	}
	return 0;
}

/*
 * EMBEDDING(_BWD): rows of t[rows] [..., D] and of the table t[table]
 * [V, D] named by t[2]'s indices; the backward adds into the table,
 * skipping the padding index a0.
 */
static int hpu_host_embedding(const struct hpu_op *op, const struct hpu_hview *h)
{
	bool bwd = op->kernel == HPU_KERNEL_EMBEDDING_BWD;
	const struct hpu_hview *table = bwd ? &h[0] : &h[1], *rows = bwd ? &h[1] : &h[0];
	const struct hpu_tensor_layout *ix = &op->l[2];
	int64_t idx[HPU_MAX_DIMS + 1] = { 0 }, d, D = op->l[bwd ? 0 : 1].shape[1];

	if (!hpu_layout_numel(ix))
		return 0;
	do {
		int64_t row = (int64_t)hpu_hload(&h[2], idx);

		for (d = 0; d < D; d++) {
			int64_t at[2] = { row, d };

			idx[ix->ndim] = d;
			if (!bwd)
				hpu_hstore(&h[0], idx, hpu_hload(table, at));
			else if (row != op->args[0])
				hpu_hstore(&h[0], at, hpu_hload(table, at) + hpu_hload(rows, idx));
		}
		idx[ix->ndim] = 0;
	} while (hpu_index_next(ix->ndim, ix->shape, idx));
	return 0;
}

/*
 * An index read from the device, checked before it addresses host memory:
 * in [0, n), else the op fails as the device's launch would.
 */
static int hpu_host_index(const struct hpu_op *op, const struct hpu_hview *h, const int64_t *idx,
			  int64_t n, int64_t *x)
{
	double v = hpu_hload(h, idx);

	if (v >= 0 && v < (double)n) {
		*x = (int64_t)v;
		return 0;
	}
	return hpu_error_set(EINVAL, "%s: index %g is out of range for a dim of %lld", op->name,
			     v, (long long)n);
}

/* INDEX_SELECT and GATHER: t out, in, index; a0 dim. */
static int hpu_host_gather(const struct hpu_op *op, const struct hpu_hview *h)
{
	const struct hpu_tensor_layout *out = &op->l[0], *in = &op->l[1];
	unsigned int dim = (unsigned int)op->args[0];
	int64_t idx[HPU_MAX_DIMS] = { 0 }, at[HPU_MAX_DIMS], x = 0;
	int ret;

	if (!hpu_layout_numel(out))
		return 0;
	do {
		memcpy(at, idx, sizeof(at));
		ret = hpu_host_index(op, &h[2],
				     op->kernel == HPU_KERNEL_GATHER ? idx : &idx[dim],
				     in->ndim ? in->shape[dim] : 1, &x);
		if (ret)
			return ret;
		at[dim] = x;
		hpu_hstore(&h[0], idx, hpu_hload(&h[1], at));
	} while (hpu_index_next(out->ndim, out->shape, idx));
	return 0;
}

/*
 * SCATTER_ADD and SCATTER: t self (io), index, src; a0 dim.  Every index is
 * checked first (nothing written on a bad one); sums run in double in index
 * order, from self's value, as the device's; SCATTER's last write wins.
 */
static int hpu_host_scatter_add(const struct hpu_op *op, const struct hpu_hview *h)
{
	const struct hpu_tensor_layout *self = &op->l[0], *ix = &op->l[1];
	unsigned int dim = (unsigned int)op->args[0];
	int64_t n = hpu_layout_numel(self), bound = self->ndim ? self->shape[dim] : 1;
	int64_t idx[HPU_MAX_DIMS] = { 0 }, at[HPU_MAX_DIMS], x = 0, o;
	double *acc;
	int ret = 0;

	if (!hpu_layout_numel(ix))
		return 0;
	do
		ret = hpu_host_index(op, &h[1], idx, bound, &x);
	while (!ret && hpu_index_next(ix->ndim, ix->shape, idx));
	acc = ret ? NULL : malloc((size_t)n * sizeof(*acc));
	if (!acc)
		return ret ? ret : hpu_error_set(ENOMEM, "out of memory");
	memset(at, 0, sizeof(at));
	for (o = 0; o < n; o++, hpu_index_next(self->ndim, self->shape, at))
		acc[o] = hpu_hload(&h[0], at);
	do {
		memcpy(at, idx, sizeof(at));
		at[dim] = (int64_t)hpu_hload(&h[1], idx);
		o = 0;
		for (unsigned int d = 0; d < self->ndim; d++)
			o = o * self->shape[d] + at[d];
		acc[o] = hpu_hload(&h[2], idx) + (op->kernel == HPU_KERNEL_SCATTER ? 0 : acc[o]);
	} while (hpu_index_next(ix->ndim, ix->shape, idx));
	memset(at, 0, sizeof(at));
	for (o = 0; o < n; o++, hpu_index_next(self->ndim, self->shape, at))
		hpu_hstore(&h[0], at, acc[o]);
	free(acc);
	return 0;
}

/* TOPK's order over one row's values v: larger (smaller) first, NaN above all, ties by index. */
static const double *hpu_topk_row;
static bool hpu_topk_largest;

static int hpu_topk_cmp(const void *pa, const void *pb)
{
	int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
	double x = hpu_topk_row[a], y = hpu_topk_row[b];
	int s = isnan(x) || isnan(y) ? isnan(x) - isnan(y) : (x > y) - (x < y);

	if (!hpu_topk_largest)
		s = -s;
	return s ? -s : (a > b) - (a < b);
}

/* TOPK: t values, indices, in; a0 k, a1 dim, a2 largest. */
static int hpu_host_topk(const struct hpu_op *op, const struct hpu_hview *h)
{
	const struct hpu_tensor_layout *in = &op->l[2];
	unsigned int dim = (unsigned int)op->args[1];
	int64_t k = op->args[0], n = in->ndim ? in->shape[dim] : 1, idx[HPU_MAX_DIMS] = { 0 }, j;
	double *row = malloc((size_t)(n + 1) * sizeof(*row));
	int64_t *order = malloc((size_t)(n + 1) * sizeof(*order));

	if (!row || !order) {
		free(row);
		free(order);
		return hpu_error_set(ENOMEM, "out of memory");
	}
	hpu_topk_row = row;
	hpu_topk_largest = op->args[2];
	if (hpu_layout_numel(in) && k) {
		do {
			for (j = 0; j < n; j++) {
				idx[dim] = j;
				row[j] = hpu_hload(&h[2], idx);
				order[j] = j;
			}
			qsort(order, (size_t)n, sizeof(*order), hpu_topk_cmp);
			for (j = 0; j < k; j++) {
				idx[dim] = j;
				hpu_hstore(&h[0], idx, row[order[j]]);
				hpu_hstore(&h[1], idx, (double)order[j]);
			}
			idx[dim] = 0;
		} while (in->ndim && hpu_row_next(in, dim, idx));
	}
	free(row);
	free(order);
	return 0;
}

/* Partial a with b, the next element's square or |x|, or the next chunk's partial: NaN stays. */
static double hpu_host_clip_join(bool max_norm, double a, double b)
{
	if (!max_norm)
		return a + b;
	return b > a || isnan(b) ? b : a;
}

/*
 * total joined with the norm's partials of tensors t[first...] (their
 * squares, or |x| for the max norm), each HPU_CLIP_CHUNK chunk's partial in
 * order, as the device does.
 */
static double hpu_host_norm_of(const struct hpu_op *op, const struct hpu_hview *h,
			       unsigned int first, bool max_norm, double total)
{
	int64_t idx[HPU_MAX_DIMS] = { 0 };

	for (unsigned int i = first; i < op->num_tensors; i++) {
		int64_t n = hpu_layout_numel(&op->l[i]), k = 0;
		double part = 0;

		if (!n)
			continue;
		do {
			double g = fabs(hpu_hload(&h[i], idx));

			part = hpu_host_clip_join(max_norm, part, max_norm ? g : g * g);
			if (++k % HPU_CLIP_CHUNK == 0 || k == n) {
				total = hpu_host_clip_join(max_norm, total, part);
				part = 0;
			}
		} while (hpu_index_next(op->l[i].ndim, op->l[i].shape, idx));
	}
	return total;
}

/* Tensors t[first...] scaled by min(1, max_norm / (norm + 1e-6)): NaN spreads (torch's way). */
static void hpu_host_clip_scale(const struct hpu_op *op, const struct hpu_hview *h,
				unsigned int first, double max_norm, double norm)
{
	int64_t idx[HPU_MAX_DIMS] = { 0 };
	double scale = max_norm / (norm + 1e-6);

	if (scale > 1)
		scale = 1;
	for (unsigned int i = first; i < op->num_tensors; i++) {
		if (!hpu_layout_numel(&op->l[i]))
			continue;
		do
			hpu_hstore(&h[i], idx, hpu_hload(&h[i], idx) * scale);
		while (hpu_index_next(op->l[i].ndim, op->l[i].shape, idx));
	}
}

/* CLIP_GRAD_NORM: t total_norm, grads...; s0 max_norm, s1 norm type (2 or inf). */
static int hpu_host_clip(const struct hpu_op *op, const struct hpu_hview *h)
{
	int64_t zero[HPU_MAX_DIMS] = { 0 };
	bool max_norm = isinf(op->scalars[1]);
	double total = hpu_host_norm_of(op, h, 1, max_norm, 0);

	total = max_norm ? total : sqrt(total);
	hpu_hstore(&h[0], zero, total);
	hpu_host_clip_scale(op, h, 1, op->scalars[0], total);
	return 0;
}

/* FOREACH_NORM: t acc, norm, tensors...; s0 norm type; a0 bit 0: acc starts at 0. */
static int hpu_host_foreach_norm(const struct hpu_op *op, const struct hpu_hview *h)
{
	int64_t zero[HPU_MAX_DIMS] = { 0 };
	bool max_norm = isinf(op->scalars[0]);
	double acc = op->args[0] & 1 ? 0 : hpu_hload(&h[0], zero);

	hpu_hstore(&h[0], zero, hpu_host_norm_of(op, h, 2, max_norm, acc));
	acc = hpu_hload(&h[0], zero); /* as stored, as the device */
	hpu_hstore(&h[1], zero, max_norm ? acc : sqrt(acc));
	return 0;
}

/* FOREACH_CLIP: t norm, tensors...; s0 max_norm. */
static int hpu_host_foreach_clip(const struct hpu_op *op, const struct hpu_hview *h)
{
	int64_t zero[HPU_MAX_DIMS] = { 0 };

	hpu_host_clip_scale(op, h, 1, op->scalars[0], hpu_hload(&h[0], zero));
	return 0;
}

/* The FOREACH optimizers' tensors per param (drm/hpu_kernels.h). */
static unsigned int hpu_host_foreach_width(const struct hpu_op *op)
{
	if (op->kernel != HPU_KERNEL_FOREACH_SGD)
		return 4;
	return op->scalars[0] != 0 ? 3 : 2;
}

/* The step's last launch counts it. */
static void hpu_host_foreach_count(const struct hpu_op *op, const struct hpu_hview *h, double step)
{
	int64_t zero[HPU_MAX_DIMS] = { 0 };

	if (op->args[0] & 1)
		hpu_hstore(&h[1], zero, step + 1);
}

/*
 * FOREACH_SGD, _ADAMW, _ADADELTA: each param as the one-tensor kernel's op
 * (lr read from t[0]), all from the same step, counted once at the end.
 */
static int hpu_host_foreach(const struct hpu_op *op, const struct hpu_hview *h)
{
	static const struct {
		uint32_t kernel, num_tensors, outputs;
	} one[] = {
		[HPU_KERNEL_FOREACH_SGD - HPU_KERNEL_FOREACH_SGD] = { HPU_KERNEL_SGD, 3, 1 | 4 },
		[HPU_KERNEL_FOREACH_ADAMW - HPU_KERNEL_FOREACH_SGD] = { HPU_KERNEL_ADAMW, 5, 0x1d },
		[HPU_KERNEL_FOREACH_ADADELTA - HPU_KERNEL_FOREACH_SGD] = { HPU_KERNEL_ADADELTA, 4,
									   0xd },
	};
	int64_t zero[HPU_MAX_DIMS] = { 0 };
	unsigned int w = hpu_host_foreach_width(op), k = op->kernel - HPU_KERNEL_FOREACH_SGD;
	double step = hpu_hload(&h[1], zero), step_copy;
	struct hpu_tensor_layout step_layout;
	struct hpu_hview hv[5];
	struct hpu_op sub = { .name = op->name, .kernel = one[k].kernel,
			      .num_tensors = one[k].num_tensors,
			      .outputs = w == 2 ? 1 : one[k].outputs,
			      .scalars = { hpu_hload(&h[0], zero), op->scalars[0], op->scalars[1],
					   op->scalars[2], op->scalars[3] },
			      /* SGD: nesterov, and the first step's buffer */
			      .args = { (op->args[0] & 2 ? 1 : 0) | (step == 0 ? 2 : 0) } };

	/* AdamW's step: a copy each param advances. */
	hpu_layout_init(&step_layout, HPU_DT_F64, 0, NULL);
	hv[4] = (struct hpu_hview){ (uint8_t *)&step_copy, 0, sizeof(step_copy), &step_layout };
	sub.t[4] = op->t[1];
	for (unsigned int i = 2; i < op->num_tensors; i += w) {
		for (unsigned int j = 0; j < w; j++) {
			sub.t[j] = op->t[i + j];
			hv[j] = h[i + j];
		}
		sub.l[0] = op->l[i];
		step_copy = step;
		hpu_host_elementwise(&sub, hv);
	}
	hpu_host_foreach_count(op, h, step);
	return 0;
}

/*
 * FOREACH_LAMB: each param's moments, then its update's and its own norms
 * (chunk sums in order, as the device), then the param by the trust ratio.
 */
static int hpu_host_foreach_lamb(const struct hpu_op *op, const struct hpu_hview *h)
{
	int64_t zero[HPU_MAX_DIMS] = { 0 }, idx[HPU_MAX_DIMS] = { 0 };
	const double *s = op->scalars;
	double lr = hpu_hload(&h[0], zero), step = hpu_hload(&h[1], zero), t = step + 1;
	bool bias = op->args[0] & 2;
	double bc1 = bias ? 1 - pow(s[0], t) : 1, bc2 = bias ? 1 - pow(s[1], t) : 1;
	double beta3 = op->args[0] & 4 ? 1 - s[0] : 1;

	for (unsigned int i = 2; i < op->num_tensors; i += 4) {
		const struct hpu_tensor_layout *l = &op->l[i];
		const struct hpu_hview *v = &h[i];
		int64_t n = hpu_layout_numel(l), k = 0;
		double sums[2] = { 0 }, parts[2] = { 0 }, ratio;

		for (int phase = 0; phase < 2 && n; phase++) {
			ratio = sums[0] > 0 && sums[1] > 0 ? sqrt(sums[0]) / sqrt(sums[1]) : 1;
			do {
				double p = hpu_hload(&v[0], idx), g = hpu_hload(&v[1], idx), u;

				if (!phase) {
					hpu_hstore(&v[2], idx,
						   s[0] * hpu_hload(&v[2], idx) + beta3 * g);
					hpu_hstore(&v[3], idx, s[1] * hpu_hload(&v[3], idx) +
								       (1 - s[1]) * g * g);
				}
				u = hpu_hload(&v[2], idx) / bc1 /
					    (sqrt(hpu_hload(&v[3], idx) / bc2) + s[2]) + s[3] * p;
				if (phase) {
					hpu_hstore(&v[0], idx, p - lr * ratio * u);
					continue;
				}
				parts[0] += p * p;
				parts[1] += u * u;
				if (++k % HPU_CLIP_CHUNK == 0 || k == n) {
					sums[0] += parts[0];
					sums[1] += parts[1];
					parts[0] = parts[1] = 0;
				}
			} while (hpu_index_next(l->ndim, l->shape, idx));
		}
	}
	hpu_host_foreach_count(op, h, step);
	return 0;
}

/* DROPOUT: t out, mask, in, rng {seed, offset} (I64, read exactly); s0 p. */
static int hpu_host_dropout(const struct hpu_op *op, const struct hpu_hview *h)
{
	const struct hpu_tensor_layout *in = &op->l[2];
	int64_t idx[HPU_MAX_DIMS] = { 0 }, seed, offset, k = 0;
	double p = op->scalars[0];
	uint8_t *rng_seed = hpu_helem(&h[3], (int64_t[]){ 0 });
	uint8_t *rng_offset = hpu_helem(&h[3], (int64_t[]){ 1 });
	float u[HPU_PHILOX_WORDS];
	uint64_t block = UINT64_MAX; /* whose draws u holds */

	memcpy(&seed, rng_seed, sizeof(seed));
	memcpy(&offset, rng_offset, sizeof(offset));
	if (hpu_layout_numel(in)) {
		do {
			uint64_t m = (uint64_t)(offset + k++);
			bool kept;

			/* A block makes four draws in a row: one block function for each four. */
			if (m / HPU_PHILOX_WORDS != block) {
				block = m / HPU_PHILOX_WORDS;
				hpu_philox_uniforms((uint64_t)seed, block, 1, u);
			}
			kept = u[m % HPU_PHILOX_WORDS] >= p;

			hpu_hstore(&h[0], idx, kept ? hpu_hload(&h[2], idx) / (1 - p) : 0);
			hpu_hstore(&h[1], idx, kept);
		} while (hpu_index_next(in->ndim, in->shape, idx));
	}
	offset += k;
	memcpy(rng_offset, &offset, sizeof(offset));
	return 0;
}

/*
 * RANDOM: t out, rng; a0 the distribution, s0 and s1 its parameters.
 * Element k draws position offset + k, or the pair at offset + 2k.
 */
static int hpu_host_random(const struct hpu_op *op, const struct hpu_hview *h)
{
	const struct hpu_tensor_layout *out = &op->l[0];
	int64_t idx[HPU_MAX_DIMS] = { 0 }, seed, offset, per = op->args[0] == HPU_RANDOM_NORMAL ? 2 : 1;
	double s0 = op->scalars[0], s1 = op->scalars[1];
	uint8_t *rng_seed = hpu_helem(&h[1], (int64_t[]){ 0 });
	uint8_t *rng_offset = hpu_helem(&h[1], (int64_t[]){ 1 });
	int64_t n = hpu_layout_numel(out);

	memcpy(&seed, rng_seed, sizeof(seed));
	memcpy(&offset, rng_offset, sizeof(offset));
	for (int64_t k = 0; k < n; k++, hpu_index_next(out->ndim, out->shape, idx)) {
		float u[2][HPU_PHILOX_WORDS];
		uint64_t m = (uint64_t)(offset + per * k);

		for (int64_t j = 0; j < per; j++)
			hpu_philox_uniforms((uint64_t)seed, (m + j) / HPU_PHILOX_WORDS, 1, u[j]);
		if (per == 1)
			hpu_hstore(&h[0], idx, s0 + (s1 - s0) * u[0][m % HPU_PHILOX_WORDS]);
		else
			hpu_hstore(&h[0], idx,
				   s0 + s1 * sqrt(-2 * log(1 - (double)u[0][m % HPU_PHILOX_WORDS])) *
						cos(2 * M_PI * u[1][(m + 1) % HPU_PHILOX_WORDS]));
	}
	offset += per * n;
	memcpy(rng_offset, &offset, sizeof(offset));
	return 0;
}

/* A convolution's dims, from the layouts of x (in or its grad), w and y (out or its grad). */
struct hpu_host_conv_dims {
	bool d2; /* 4 dims; 1d has no height (1) */
	int64_t n, cin, h, w, cout, cin_g, kh, kw, ho, wo;
};

/* Which operands are x, w and y, by kernel: t[] as drm/hpu_kernels.h lists them. */
static const unsigned int hpu_host_conv_slots[3][3] = { { 1, 2, 0 }, { 0, 2, 1 }, { 2, 0, 1 } };

static struct hpu_host_conv_dims hpu_host_conv_dims(const struct hpu_op *op)
{
	const unsigned int *sl = hpu_host_conv_slots[op->kernel - HPU_KERNEL_CONV];
	const struct hpu_tensor_layout *x = &op->l[sl[0]], *w = &op->l[sl[1]], *y = &op->l[sl[2]];
	bool d2 = x->ndim == 4;
	unsigned int last = x->ndim - 1;

	return (struct hpu_host_conv_dims){
		d2, x->shape[0], x->shape[1], d2 ? x->shape[2] : 1, x->shape[last], w->shape[0],
		w->shape[1], d2 ? w->shape[2] : 1, w->shape[last], d2 ? y->shape[2] : 1,
		y->shape[last],
	};
}

/* The index (a, b, c, d) of a convolution operand: without c in 1d. */
static const int64_t *hpu_host_conv_idx(int64_t *idx, bool d2, int64_t a, int64_t b, int64_t c,
					int64_t d)
{
	idx[0] = a;
	idx[1] = b;
	idx[2] = d2 ? c : d;
	idx[3] = d;
	return idx;
}

/*
 * CONV, CONV_BWD_INPUT, CONV_BWD_WEIGHT (t[0] the output; a0..a6 stride,
 * padding, dilation by (height, width), groups): every (output element, tap)
 * pair once, summed in double, then stored.
 */
static int hpu_host_conv(const struct hpu_op *op, const struct hpu_hview *h)
{
	unsigned int kind = op->kernel - HPU_KERNEL_CONV;
	const unsigned int *sl = hpu_host_conv_slots[kind];
	const struct hpu_hview *x = &h[sl[0]], *w = &h[sl[1]], *y = &h[sl[2]];
	struct hpu_host_conv_dims d = hpu_host_conv_dims(op);
	int64_t cout_g = d.cout / op->args[6], nout = hpu_layout_numel(&op->l[0]), i = 0;
	int64_t xi[4], wi[4], yi[4], idx[HPU_MAX_DIMS] = { 0 };
	const int64_t *a = op->args;
	double *acc = calloc(nout ? (size_t)nout : 1, sizeof(double));

	if (!acc)
		return hpu_error_set(ENOMEM, "out of memory");
	for (int64_t n = 0; n < d.n; n++)
	for (int64_t co = 0; co < d.cout; co++)
	for (int64_t oh = 0; oh < d.ho; oh++)
	for (int64_t ow = 0; ow < d.wo; ow++) {
		int64_t yf = ((n * d.cout + co) * d.ho + oh) * d.wo + ow, g = co / cout_g;
		double gy = kind ? hpu_hload(y, hpu_host_conv_idx(yi, d.d2, n, co, oh, ow)) : 0;
		double sum = op->num_tensors == 4 ? hpu_hload(&h[3], (int64_t[]){ co }) : 0;

		for (int64_t cl = 0; cl < d.cin_g; cl++)
		for (int64_t ki = 0; ki < d.kh; ki++)
		for (int64_t kj = 0; kj < d.kw; kj++) {
			int64_t hh = oh * a[0] - a[2] + ki * a[4], ww = ow * a[1] - a[3] + kj * a[5];
			int64_t ci = g * d.cin_g + cl;

			if (hh < 0 || hh >= d.h || ww < 0 || ww >= d.w)
				continue;
			hpu_host_conv_idx(xi, d.d2, n, ci, hh, ww);
			hpu_host_conv_idx(wi, d.d2, co, cl, ki, kj);
			if (kind == 0)
				sum += hpu_hload(x, xi) * hpu_hload(w, wi);
			else if (kind == 1)
				acc[((n * d.cin + ci) * d.h + hh) * d.w + ww] += gy * hpu_hload(w, wi);
			else
				acc[((co * d.cin_g + cl) * d.kh + ki) * d.kw + kj] += gy * hpu_hload(x, xi);
		}
		if (kind == 0)
			acc[yf] = sum;
	}
	if (nout)
		do
			hpu_hstore(&h[0], idx, acc[i++]);
		while (hpu_index_next(op->l[0].ndim, op->l[0].shape, idx));
	free(acc);
	return 0;
}

/*
 * Whether the device refuses a convolution for an item's bound
 * (hdm_kernel_conv.c's plans at their smallest blocks): a patch of more
 * multiply-adds than an item has, weight gradients whose chunks' partials
 * overflow the launch's scratch, or more work than a launch has.
 */
static bool hpu_host_conv_too_long(const struct hpu_op *op)
{
	struct hpu_host_conv_dims d = hpu_host_conv_dims(op);
	uint64_t most = HPU_KERNEL_MAX_ITEM_WORK, taps = (uint64_t)(d.kh * d.kw);
	uint64_t k = (uint64_t)d.cin_g * taps, cout_g = (uint64_t)(d.cout / op->args[6]);
	uint64_t weights = (uint64_t)d.cout * k, pixels = (uint64_t)(d.n * d.ho * d.wo);
	/* 2^21 partials; the longest chunk at blocks of 1 x 1. */
	uint64_t partials = 8u << 18, chunk = (most - 1) / 3;
	/*
	 * Every kind multiplies as much; the gathers add about a multiply-add
	 * over the channels of a block (64 at most) and over its pixels.
	 */
	double macs = (double)weights * (double)pixels;
	double work = macs / HPU_CONV_MACS_PER_WORK + macs / (double)(cout_g < 64 ? cout_g : 64) +
		      macs / 32 + (double)d.cout * (double)pixels;

	if (cout_g && work > (double)HPU_KERNEL_MAX_WORK)
		return true;
	switch (op->kernel) {
	case HPU_KERNEL_CONV:
		return k / HPU_CONV_MACS_PER_WORK + 2 * k + 1 > most;
	case HPU_KERNEL_CONV_BWD_INPUT:
		return taps * cout_g * taps / HPU_CONV_MACS_PER_WORK + 2 * taps * cout_g +
		       taps * taps + 1 > most;
	default:
		return pixels && weights &&
		       (pixels + chunk - 1) / chunk > partials / weights;
	}
}

/* Steps idx over channel c's elements of l [N, C, ...] (idx[1] = c); false after the last. */
static bool hpu_chan_next(const struct hpu_tensor_layout *l, int64_t c, int64_t *idx)
{
	bool more;

	idx[1] = 0;
	more = hpu_row_next(l, 1, idx);
	idx[1] = c;
	return more;
}

/*
 * BATCH_NORM: t out, save_mean, save_invstd, in, weight, bias, running_mean,
 * running_var; a0 bits weight, bias, training, running; s0 eps, s1 momentum.
 */
static int hpu_host_batch_norm(const struct hpu_op *op, const struct hpu_hview *h)
{
	const struct hpu_tensor_layout *in = &op->l[3];
	int64_t f = op->args[0], m = hpu_layout_numel(in) / (in->shape[1] ? in->shape[1] : 1);
	double eps = op->scalars[0], mom = op->scalars[1];

	for (int64_t c = 0; c < in->shape[1]; c++) {
		int64_t idx[HPU_MAX_DIMS] = { 0, c }, ci[1] = { c };
		double mean = 0, var = 0, invstd, scale, shift;

		if (f & 4) {
			do
				mean += hpu_hload(&h[3], idx);
			while (hpu_chan_next(in, c, idx));
			mean /= (double)m;
			do
				var += (hpu_hload(&h[3], idx) - mean) * (hpu_hload(&h[3], idx) - mean);
			while (hpu_chan_next(in, c, idx));
			invstd = 1 / sqrt(var / (double)m + eps);
			if (f & 8) {
				hpu_hstore(&h[6], ci, (1 - mom) * hpu_hload(&h[6], ci) + mom * mean);
				hpu_hstore(&h[7], ci, (1 - mom) * hpu_hload(&h[7], ci) +
						      mom * var / (double)(m - 1));
			}
		} else {
			mean = hpu_hload(&h[6], ci);
			invstd = 1 / sqrt(hpu_hload(&h[7], ci) + eps);
		}
		hpu_hstore(&h[1], ci, mean);
		hpu_hstore(&h[2], ci, invstd);
		scale = invstd * (f & 1 ? hpu_hload(&h[4], ci) : 1);
		shift = f & 2 ? hpu_hload(&h[5], ci) : 0;
		if (m)
			do
				hpu_hstore(&h[0], idx, (hpu_hload(&h[3], idx) - mean) * scale + shift);
			while (hpu_chan_next(in, c, idx));
	}
	return 0;
}

/*
 * BATCH_NORM_BWD: t grad_in, grad_weight, grad_bias, grad_out, in, mean,
 * invstd, weight; a0 bits weight, grad_weight, grad_bias, training, t[6] a
 * variance (s0 eps).
 */
static int hpu_host_batch_norm_bwd(const struct hpu_op *op, const struct hpu_hview *h)
{
	const struct hpu_tensor_layout *in = &op->l[4];
	int64_t f = op->args[0], m = hpu_layout_numel(in) / (in->shape[1] ? in->shape[1] : 1);

	for (int64_t c = 0; c < in->shape[1]; c++) {
		int64_t idx[HPU_MAX_DIMS] = { 0, c }, ci[1] = { c };
		double mean = hpu_hload(&h[5], ci), invstd = hpu_hload(&h[6], ci);
		double sg = 0, sgx = 0, scale;

		if (f & 16)
			invstd = 1 / sqrt(invstd + op->scalars[0]);
		if (m)
			do {
				sg += hpu_hload(&h[3], idx);
				sgx += hpu_hload(&h[3], idx) * (hpu_hload(&h[4], idx) - mean) * invstd;
			} while (hpu_chan_next(in, c, idx));
		if (f & 2)
			hpu_hstore(&h[1], ci, sgx);
		if (f & 4)
			hpu_hstore(&h[2], ci, sg);
		if (!(f & 8))
			sg = sgx = 0;
		scale = invstd * (f & 1 ? hpu_hload(&h[7], ci) : 1);
		if (m)
			do {
				double xhat = (hpu_hload(&h[4], idx) - mean) * invstd;

				hpu_hstore(&h[0], idx, scale * (hpu_hload(&h[3], idx) - sg / (double)m -
								xhat * sgx / (double)m));
			} while (hpu_chan_next(in, c, idx));
	}
	return 0;
}

/*
 * Steps idx over a group's elements of l [N, C, ...]: idx[1] from c0 to
 * c0 + cg - 1, each channel's elements in order; false after the last
 * (idx[1] then past the group).
 */
static bool hpu_group_next(const struct hpu_tensor_layout *l, int64_t c0, int64_t cg,
			   int64_t *idx)
{
	return hpu_index_next(l->ndim - 2, l->shape + 2, idx + 2) || ++idx[1] < c0 + cg;
}

/* GROUP_NORM: t out, mean, rstd, in, weight, bias; a0 groups; a1 bits weight, bias; s0 eps. */
static int hpu_host_group_norm(const struct hpu_op *op, const struct hpu_hview *h)
{
	const struct hpu_tensor_layout *in = &op->l[3];
	int64_t g = op->args[0], f = op->args[1], cg = in->shape[1] / g;
	double m = (double)(hpu_layout_numel(in) / (in->shape[0] * g));

	for (int64_t ng = 0; ng < in->shape[0] * g; ng++) {
		int64_t c0 = ng % g * cg, idx[HPU_MAX_DIMS] = { ng / g, c0 }, gi[2] = { ng / g, ng % g };
		double mean = 0, var = 0, rstd;

		do
			mean += hpu_hload(&h[3], idx);
		while (hpu_group_next(in, c0, cg, idx));
		mean /= m;
		idx[1] = c0;
		do
			var += (hpu_hload(&h[3], idx) - mean) * (hpu_hload(&h[3], idx) - mean);
		while (hpu_group_next(in, c0, cg, idx));
		rstd = 1 / sqrt(var / m + op->scalars[0]);
		hpu_hstore(&h[1], gi, mean);
		hpu_hstore(&h[2], gi, rstd);
		idx[1] = c0;
		do {
			int64_t ci[1] = { idx[1] };
			double w = f & 1 ? hpu_hload(&h[4], ci) : 1, b = f & 2 ? hpu_hload(&h[5], ci) : 0;

			hpu_hstore(&h[0], idx, (hpu_hload(&h[3], idx) - mean) * rstd * w + b);
		} while (hpu_group_next(in, c0, cg, idx));
	}
	return 0;
}

/*
 * GROUP_NORM_BWD: t grad_in, grad_weight, grad_bias, grad_out, in, mean,
 * rstd, weight; a0 groups; a1 bits weight, grad_weight, grad_bias, grad_in.
 */
static int hpu_host_group_norm_bwd(const struct hpu_op *op, const struct hpu_hview *h)
{
	const struct hpu_tensor_layout *in = &op->l[4];
	int64_t g = op->args[0], f = op->args[1], cg = in->shape[1] / g;
	double m = (double)(hpu_layout_numel(in) / (in->shape[0] * g));

	for (int64_t ch = 0; ch < in->shape[1] && (f & 6); ch++) {
		int64_t ci[1] = { ch };
		double sg = 0, sgx = 0;

		for (int64_t n = 0; n < in->shape[0]; n++) {
			int64_t idx[HPU_MAX_DIMS] = { n, ch }, gi[2] = { n, ch / cg };
			double mean = hpu_hload(&h[5], gi), rstd = hpu_hload(&h[6], gi);

			do {
				sg += hpu_hload(&h[3], idx);
				sgx += hpu_hload(&h[3], idx) * (hpu_hload(&h[4], idx) - mean) * rstd;
			} while (hpu_index_next(in->ndim - 2, in->shape + 2, idx + 2));
		}
		if (f & 2)
			hpu_hstore(&h[1], ci, sgx);
		if (f & 4)
			hpu_hstore(&h[2], ci, sg);
	}
	for (int64_t ng = 0; ng < in->shape[0] * g && (f & 8); ng++) {
		int64_t c0 = ng % g * cg, idx[HPU_MAX_DIMS] = { ng / g, c0 }, gi[2] = { ng / g, ng % g };
		double mean = hpu_hload(&h[5], gi), rstd = hpu_hload(&h[6], gi), sdy = 0, sdyx = 0;

		for (int pass = 0; pass < 2; pass++, idx[1] = c0) {
			do {
				int64_t ci[1] = { idx[1] };
				double dy = hpu_hload(&h[3], idx) * (f & 1 ? hpu_hload(&h[7], ci) : 1);
				double xhat = (hpu_hload(&h[4], idx) - mean) * rstd;

				if (pass)
					hpu_hstore(&h[0], idx, rstd * (dy - sdy / m - xhat * sdyx / m));
				sdy += pass ? 0 : dy;
				sdyx += pass ? 0 : dy * xhat;
			} while (hpu_group_next(in, c0, cg, idx));
		}
	}
	return 0;
}

/*
 * The pooling kernels: t[0] out or grad_in, then in or grad_out (and max
 * pooling's indices), the windows from the args as the device takes them
 * (drm/hpu_pool.h).  Forwards reduce each window; backwards gather, as the
 * device does, after checking every max-pool index is in its window.
 */
static int hpu_host_pool(const struct hpu_op *op, const struct hpu_hview *h)
{
	bool max = op->kernel == HPU_KERNEL_MAX_POOL || op->kernel == HPU_KERNEL_MAX_POOL_BWD;
	bool bwd = op->kernel == HPU_KERNEL_MAX_POOL_BWD || op->kernel == HPU_KERNEL_AVG_POOL_BWD;
	const struct hpu_hview *x = bwd ? &h[0] : &h[max ? 2 : 1], *y = bwd ? &h[1] : &h[0];
	const struct hpu_hview *ix = bwd ? &h[2] : &h[1];
	unsigned int lead = x->l->ndim - 2, a;
	struct hpu_pool_axis ax[2];
	int64_t idx[HPU_MAX_DIMS] = { 0 }, at[HPU_MAX_DIMS];

	for (a = 0; a < 2; a++)
		ax[a] = (struct hpu_pool_axis){
			.n = x->l->shape[lead + a], .no = y->l->shape[lead + a], .k = op->args[a],
			.s = op->args[2 + a], .p = op->args[4 + a], .d = max ? op->args[6 + a] : 1,
			.adaptive = !max && (op->args[6] & 2),
		};
	if (max && bwd && hpu_layout_numel(y->l)) {
		do {
			int64_t i = (int64_t)hpu_hload(ix, idx);

			if (i < 0 || !hpu_pool_holds(&ax[0], idx[lead], i / ax[1].n) ||
			    !hpu_pool_holds(&ax[1], idx[lead + 1], i % ax[1].n))
				return hpu_error_set(EINVAL, "a max-pool index outside its window");
		} while (hpu_index_next(y->l->ndim, y->l->shape, idx));
	}
	if (!hpu_layout_numel(bwd ? x->l : y->l))
		return 0;
	memset(idx, 0, sizeof(idx));
	do {
		int64_t w[2][3], best_at = -1, lo[2], hi[2];
		double sum = 0, best = -INFINITY;

		memcpy(at, idx, sizeof(at));
		for (a = 0; a < 2; a++) {
			if (bwd)
				hpu_pool_holders(&ax[a], idx[lead + a], &lo[a], &hi[a]);
			else
				hpu_pool_window(&ax[a], idx[lead + a], &w[a][0], &w[a][1], &w[a][2]);
		}
		if (bwd) {
			for (at[lead] = lo[0]; at[lead] <= hi[0]; at[lead]++) {
				for (at[lead + 1] = lo[1]; at[lead + 1] <= hi[1]; at[lead + 1]++) {
					if (max) {
						if ((int64_t)hpu_hload(ix, at) ==
						    idx[lead] * ax[1].n + idx[lead + 1])
							sum += hpu_hload(y, at);
						continue;
					}
					if (!hpu_pool_holds(&ax[0], at[lead], idx[lead]) ||
					    !hpu_pool_holds(&ax[1], at[lead + 1], idx[lead + 1]))
						continue;
					sum += hpu_hload(y, at) /
					       hpu_pool_divisor(ax, at[lead], at[lead + 1],
								op->args[6] & 1, op->args[7]);
				}
			}
			hpu_hstore(x, idx, sum);
			continue;
		}
		for (at[lead] = w[0][0]; at[lead] < w[0][1]; at[lead] += ax[0].d) {
			for (at[lead + 1] = w[1][0]; at[lead + 1] < w[1][1]; at[lead + 1] += ax[1].d) {
				double v = hpu_hload(x, at);

				if (v > best || isnan(v) || best_at < 0) {
					best = v;
					best_at = at[lead] * ax[1].n + at[lead + 1];
				}
				sum += v;
			}
		}
		if (max) {
			hpu_hstore(y, idx, best);
			hpu_hstore(ix, idx, (double)best_at);
		} else {
			hpu_hstore(y, idx, sum / hpu_pool_divisor(ax, idx[lead], idx[lead + 1],
								  op->args[6] & 1, op->args[7]));
		}
	} while (hpu_index_next((bwd ? x : y)->l->ndim, (bwd ? x : y)->l->shape, idx));
	return 0;
}

/* The host's version of each kernel the device has, and of the ops it lacks. */
static const struct {
	uint32_t kernel;
	int (*run)(const struct hpu_op *op, const struct hpu_hview *h);
} hpu_host_kernels[] = {
	{ HPU_KERNEL_UNARY, hpu_host_elementwise },
	{ HPU_KERNEL_BINARY, hpu_host_elementwise },
	{ HPU_KERNEL_WHERE, hpu_host_elementwise },
	{ HPU_KERNEL_FILL, hpu_host_elementwise },
	{ HPU_KERNEL_REDUCE, hpu_host_reduce },
	{ HPU_KERNEL_SOFTMAX, hpu_host_softmax },
	{ HPU_KERNEL_SOFTMAX_BWD, hpu_host_softmax },
	{ HPU_KERNEL_NLL_LOSS, hpu_host_loss },
	{ HPU_KERNEL_NLL_LOSS_BWD, hpu_host_loss },
	{ HPU_KERNEL_CROSS_ENTROPY, hpu_host_loss },
	{ HPU_KERNEL_CROSS_ENTROPY_BWD, hpu_host_loss },
	{ HPU_KERNEL_DROPOUT, hpu_host_dropout },
	{ HPU_KERNEL_DROPOUT_BWD, hpu_host_elementwise },
	{ HPU_KERNEL_RELU_BWD, hpu_host_elementwise },
	{ HPU_KERNEL_GELU_BWD, hpu_host_elementwise },
	{ HPU_KERNEL_LAYER_NORM, hpu_host_layer_norm },
	{ HPU_KERNEL_LAYER_NORM_BWD, hpu_host_layer_norm_bwd },
	{ HPU_KERNEL_EMBEDDING, hpu_host_embedding },
	{ HPU_KERNEL_EMBEDDING_BWD, hpu_host_embedding },
	{ HPU_KERNEL_SGD, hpu_host_elementwise },
	{ HPU_KERNEL_ADADELTA, hpu_host_elementwise },
	{ HPU_KERNEL_ADAMW, hpu_host_elementwise },
	{ HPU_KERNEL_CLIP_GRAD_NORM, hpu_host_clip },
	{ HPU_KERNEL_BATCH_NORM, hpu_host_batch_norm },
	{ HPU_KERNEL_BATCH_NORM_BWD, hpu_host_batch_norm_bwd },
	{ HPU_KERNEL_MAX_POOL, hpu_host_pool },
	{ HPU_KERNEL_MAX_POOL_BWD, hpu_host_pool },
	{ HPU_KERNEL_AVG_POOL, hpu_host_pool },
	{ HPU_KERNEL_AVG_POOL_BWD, hpu_host_pool },
	{ HPU_KERNEL_RANDOM, hpu_host_random },
	{ HPU_KERNEL_GROUP_NORM, hpu_host_group_norm },
	{ HPU_KERNEL_GROUP_NORM_BWD, hpu_host_group_norm_bwd },
	{ HPU_KERNEL_SILU_BWD, hpu_host_elementwise },
	{ HPU_KERNEL_TRIANGLE, hpu_host_triangle },
	{ HPU_KERNEL_ARANGE, hpu_host_arange },
	{ HPU_KERNEL_RMS_NORM, hpu_host_rms_norm },
	{ HPU_KERNEL_RMS_NORM_BWD, hpu_host_rms_norm_bwd },
	{ HPU_KERNEL_FUSED_SDPA, hpu_host_sdpa },
	{ HPU_KERNEL_FUSED_SDPA_BWD, hpu_host_sdpa_bwd },
	{ HPU_KERNEL_CONV, hpu_host_conv },
	{ HPU_KERNEL_CONV_BWD_INPUT, hpu_host_conv },
	{ HPU_KERNEL_CONV_BWD_WEIGHT, hpu_host_conv },
	{ HPU_KERNEL_INDEX_SELECT, hpu_host_gather },
	{ HPU_KERNEL_GATHER, hpu_host_gather },
	{ HPU_KERNEL_SCATTER_ADD, hpu_host_scatter_add },
	{ HPU_KERNEL_SCATTER, hpu_host_scatter_add },
	{ HPU_KERNEL_TOPK, hpu_host_topk },
	{ HPU_KERNEL_FOREACH_SGD, hpu_host_foreach },
	{ HPU_KERNEL_FOREACH_ADAMW, hpu_host_foreach },
	{ HPU_KERNEL_FOREACH_ADADELTA, hpu_host_foreach },
	{ HPU_KERNEL_FOREACH_LAMB, hpu_host_foreach_lamb },
	{ HPU_KERNEL_FOREACH_NORM, hpu_host_foreach_norm },
	{ HPU_KERNEL_FOREACH_CLIP, hpu_host_foreach_clip },
	{ HPU_OPK_GEMM, hpu_host_gemm },
	{ HPU_OPK_CUMSUM, hpu_host_cumsum },
};

static int hpu_host_compute(const struct hpu_op *op, const struct hpu_hview *h)
{
	size_t i;

	for (i = 0; i < HPU_ARRAY_SIZE(hpu_host_kernels); i++)
		if (hpu_host_kernels[i].kernel == op->kernel)
			return hpu_host_kernels[i].run(op, h);
	return hpu_error_set(EOPNOTSUPP, "%s has no host implementation", op->name);
}

/* Whether an attention item of these parts passes HPU_KERNEL_MAX_ITEM_WORK (hpu_kernels.h). */
static bool hpu_host_sdpa_row_too_long(uint64_t pack, uint64_t macs, uint64_t row)
{
	return pack + (macs + HPU_SDPA_MACS_PER_WORK - 1) / HPU_SDPA_MACS_PER_WORK + row >
	       HPU_KERNEL_MAX_ITEM_WORK;
}

/* FUSED_SDPA(_BWD): a head dim past the device's, or a row of one item too long. */
static bool hpu_host_sdpa_too_long(const struct hpu_op *op)
{
	bool bwd = op->kernel == HPU_KERNEL_FUSED_SDPA_BWD;
	const struct hpu_tensor_layout *q = &op->l[bwd ? 4 : 2], *v = &op->l[bwd ? 6 : 4];
	uint64_t L = (uint64_t)q->shape[2], S = (uint64_t)v->shape[2];
	uint64_t D = (uint64_t)q->shape[3], Dv = (uint64_t)v->shape[3];
	bool two = !bwd && (op->args[0] & (HPU_SDPA_PROBS | HPU_SDPA_DROP_MASK));

	if (D > HPU_SDPA_MAX_HEAD_DIM || Dv > HPU_SDPA_MAX_HEAD_DIM)
		return true;
	if (bwd)
		return hpu_host_sdpa_row_too_long(S * (2 * D + 2 * Dv), S * (2 * D + Dv),
						  S + D + 2 * Dv) ||
		       hpu_host_sdpa_row_too_long(L * (D + 2 * Dv), L * (2 * D + 2 * Dv),
						  L + D + Dv);
	return hpu_host_sdpa_row_too_long(S * (D + Dv) * (two ? 2 : 1), S * (D + Dv + (two ? D : 0)),
					  S * (two ? 3 : 1) + D + Dv);
}

/*
 * Whether one of op's device work items would visit more than
 * HPU_KERNEL_MAX_ITEM_WORK elements, which the device refuses (drm/hpu_kernels.h
 * gives each kernel's bound): a row, or the indices an EMBEDDING_BWD item scans.
 */
static bool hpu_fallback_item_too_long(const struct hpu_op *op)
{
	const struct hpu_tensor_layout *l = op->l;
	uint64_t most = HPU_KERNEL_MAX_ITEM_WORK, n;
	unsigned int i;

	switch (op->kernel) {
	case HPU_KERNEL_SOFTMAX:
	case HPU_KERNEL_SOFTMAX_BWD:
		n = l[0].ndim ? (uint64_t)l[0].shape[op->args[0]] : 1;
		break;
	case HPU_KERNEL_CROSS_ENTROPY:
		n = (uint64_t)l[1].shape[1];
		break;
	case HPU_KERNEL_NLL_LOSS_BWD:
	case HPU_KERNEL_CROSS_ENTROPY_BWD:
		n = (uint64_t)l[0].shape[1];
		break;
	case HPU_KERNEL_LAYER_NORM:
		n = (uint64_t)hpu_shape_numel((unsigned int)op->args[0],
					      l[3].shape + l[3].ndim - op->args[0]);
		most /= 3;
		break;
	case HPU_KERNEL_LAYER_NORM_BWD:
		n = (uint64_t)hpu_shape_numel((unsigned int)op->args[0],
					      l[4].shape + l[4].ndim - op->args[0]);
		most /= 2;
		break;
	case HPU_KERNEL_RMS_NORM:
	case HPU_KERNEL_RMS_NORM_BWD:
		/* in is t[2] forward, t[3] backward: two passes a row either way. */
		i = op->kernel == HPU_KERNEL_RMS_NORM ? 2 : 3;
		n = (uint64_t)hpu_shape_numel((unsigned int)op->args[0],
					      l[i].shape + l[i].ndim - op->args[0]);
		most /= 2;
		break;
	case HPU_KERNEL_EMBEDDING:
		n = (uint64_t)l[1].shape[1];
		break;
	case HPU_KERNEL_EMBEDDING_BWD:
		n = (uint64_t)hpu_layout_numel(&l[2]);
		most -= 512;
		break;
	case HPU_KERNEL_CONV:
	case HPU_KERNEL_CONV_BWD_INPUT:
	case HPU_KERNEL_CONV_BWD_WEIGHT:
		return hpu_host_conv_too_long(op);
	case HPU_KERNEL_FUSED_SDPA:
	case HPU_KERNEL_FUSED_SDPA_BWD:
		return hpu_host_sdpa_too_long(op);
	case HPU_KERNEL_SCATTER_ADD:
	case HPU_KERNEL_SCATTER:
		n = l[1].ndim ? (uint64_t)l[1].shape[op->args[0]] : 1;
		most -= HPU_SCATTER_BLOCK;
		break;
	case HPU_KERNEL_TOPK: /* (n + k) * (bits of k + 1) */
		n = (uint64_t)(l[2].ndim ? l[2].shape[op->args[1]] : 1) + (uint64_t)op->args[0];
		n *= 65 - (op->args[0] ? (uint64_t)__builtin_clzll((uint64_t)op->args[0]) : 64);
		break;
	default:
		return false;
	}
	return n > most;
}

const char *hpu_fallback_reason(const struct hpu_op *op)
{
	unsigned int i;

	if (op->kernel == HPU_OPK_CUMSUM)
		return "no device kernel";
	for (i = 0; i < op->num_tensors; i++)
		if (op->t[i] && op->l[i].dtype == HPU_DT_F64)
			return "F64 operand";
	if (hpu_fallback_item_too_long(op))
		return "a row or index count past the device's HPU_KERNEL_MAX_ITEM_WORK";
	return NULL;
}

static bool hpu_env_set(const char *name)
{
	const char *v = getenv(name);

	return v && !strcmp(v, "1");
}

static bool hpu_fallback_strict(struct hpu_device *dev)
{
	int strict = atomic_load(&dev->fallback->strict);

	return strict ? strict == 1 : hpu_env_set("HPU_FALLBACK_STRICT");
}

int hpu_fallback_run(struct hpu_stream *s, const struct hpu_op *op, const char *reason)
{
	struct hpu_hview h[HPU_OP_TENSORS] = { 0 };
	int index = hpu_op_index(op->name);
	unsigned int i;
	int ret = 0;

	if (hpu_fallback_strict(s->dev))
		return hpu_error_set(EOPNOTSUPP, "%s would fall back to the CPU (%s): strict mode",
				     op->name, reason);
	if (hpu_env_set("HPU_LOG_FALLBACK"))
		fprintf(stderr, "hpu: fallback: %s (%s)\n", op->name, reason);
	if (index >= 0)
		atomic_fetch_add(&s->dev->fallback->counts[index], 1);
	for (i = 0; i < op->num_tensors && !ret; i++) {
		if (!op->t[i])
			continue;
		h[i].l = &op->l[i];
		h[i].size = hpu_dt_size(op->l[i].dtype);
		ret = hpu_span_read(s, op->t[i]->storage, &op->l[i], (void **)&h[i].span, &h[i].lo);
	}
	if (!ret)
		ret = hpu_host_compute(op, h);
	for (i = 0; i < op->num_tensors && !ret; i++)
		if ((op->outputs & (1u << i)) && op->t[i])
			ret = hpu_span_write(s, op->t[i]->storage, &op->l[i], h[i].span, h[i].lo);
	for (i = 0; i < op->num_tensors; i++)
		free(h[i].span);
	return ret;
}

int hpu_fallback_init(struct hpu_device *dev)
{
	dev->fallback = calloc(1, sizeof(*dev->fallback));
	return dev->fallback ? 0 : hpu_error_set(ENOMEM, "out of memory");
}

void hpu_fallback_fini(struct hpu_device *dev)
{
	free(dev->fallback);
	dev->fallback = NULL;
}

int hpu_fallback_count(struct hpu_device *dev, const char *op, uint64_t *count)
{
	int index;

	if (!dev || !op || !count)
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "%s is NULL",
							    !dev ? "dev" : !op ? "op" : "count"));
	index = hpu_op_index(op);
	if (index < 0)
		return hpu_error_in(__func__, hpu_error_set(ENOENT, "no op is named \"%s\"", op));
	*count = atomic_load(&dev->fallback->counts[index]);
	return 0;
}

int hpu_fallback_total(struct hpu_device *dev, uint64_t *count)
{
	uint64_t total = 0;
	size_t i;

	if (!dev || !count)
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "%s is NULL",
							    dev ? "count" : "dev"));
	for (i = 0; i < HPU_FALLBACK_OPS; i++)
		total += atomic_load(&dev->fallback->counts[i]);
	*count = total;
	return 0;
}

int hpu_fallback_set_strict(struct hpu_device *dev, bool strict)
{
	if (!dev)
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "dev is NULL"));
	atomic_store(&dev->fallback->strict, strict ? 1 : 2);
	return 0;
}
