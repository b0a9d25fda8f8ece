/* SPDX-License-Identifier: MIT */
/*
 * View arithmetic: shapes, strides and offsets of tensors, with no device
 * behind them, so the host unit tests run every rule.  Every layout a
 * tensor handle holds passed hpu_layout_check() against its storage; the
 * view functions build a new layout from an old one and leave the bounds
 * check to the caller, who knows the storage.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <drm/hpu_kernels.h>

#include "../ops/ops.h"

/* The public dtypes are the ABI's, so device dtypes pass through unconverted. */
_Static_assert((int)HPU_DT_F32 == (int)HPU_DTYPE_F32 && (int)HPU_DT_BF16 == (int)HPU_DTYPE_BF16 &&
		       (int)HPU_DT_I32 == (int)HPU_DTYPE_I32 && (int)HPU_DT_I64 == (int)HPU_DTYPE_I64 &&
		       (int)HPU_DT_U8 == (int)HPU_DTYPE_U8,
	       "dtypes differ from the ABI's");
_Static_assert(HPU_MAX_DIMS == HPU_TENSOR_MAX_DIMS, "HPU_MAX_DIMS differs from the ABI's");

size_t hpu_dt_size(enum hpu_dt dtype)
{
	switch (dtype) {
	case HPU_DT_U8: return 1;
	case HPU_DT_BF16: return 2;
	case HPU_DT_F32: case HPU_DT_I32: return 4;
	case HPU_DT_I64: case HPU_DT_F64: return 8;
	}
	return 0;
}

const char *hpu_dt_name(uint32_t dtype)
{
	switch (dtype) {
	case HPU_DT_F32: return "F32";
	case HPU_DT_BF16: return "BF16";
	case HPU_DT_I32: return "I32";
	case HPU_DT_I64: return "I64";
	case HPU_DT_U8: return "U8";
	case HPU_DT_F64: return "F64";
	}
	return "unknown dtype";
}

bool hpu_dt_is_float(uint32_t dtype)
{
	return dtype == HPU_DT_F32 || dtype == HPU_DT_BF16 || dtype == HPU_DT_F64;
}

int64_t hpu_shape_numel(unsigned int ndim, const int64_t *shape)
{
	int64_t n = 1;
	unsigned int i;

	for (i = 0; i < ndim; i++)
		n *= shape[i];
	return n;
}

int64_t hpu_layout_offset(const struct hpu_tensor_layout *l, const int64_t *idx)
{
	int64_t off = l->offset;
	unsigned int i;

	for (i = 0; i < l->ndim; i++)
		off += idx[i] * l->strides[i];
	return off;
}

bool hpu_index_next(unsigned int ndim, const int64_t *shape, int64_t *idx)
{
	int i;

	for (i = (int)ndim - 1; i >= 0; i--) {
		if (++idx[i] < shape[i])
			return true;
		idx[i] = 0;
	}
	return false;
}

int64_t hpu_layout_numel(const struct hpu_tensor_layout *l)
{
	return hpu_shape_numel(l->ndim, l->shape);
}

/* Element counts stay far from overflow: below 2^47 (the device's address space). */
#define HPU_NUMEL_MAX (1ll << 47)

int hpu_shape_check(unsigned int ndim, const int64_t *shape, const char *name)
{
	int64_t n = 1;
	unsigned int i;

	if (ndim > HPU_MAX_DIMS)
		return hpu_error_set(EINVAL, "%s has %u dims, at most %d supported", name, ndim,
				     HPU_MAX_DIMS);
	if (ndim && !shape)
		return hpu_error_set(EINVAL, "%s: shape is NULL", name);
	for (i = 0; i < ndim; i++) {
		if (shape[i] < 0)
			return hpu_error_set(EINVAL, "%s: dim %u is %" PRId64, name, i, shape[i]);
		if (shape[i] && n > HPU_NUMEL_MAX / shape[i])
			return hpu_error_set(EINVAL, "%s: too many elements", name);
		n *= shape[i];
	}
	return 0;
}

void hpu_layout_init(struct hpu_tensor_layout *l, uint32_t dtype, unsigned int ndim,
		     const int64_t *shape)
{
	int64_t stride = 1;
	int i;

	*l = (struct hpu_tensor_layout){ .dtype = dtype, .ndim = ndim };
	for (i = (int)ndim - 1; i >= 0; i--) {
		l->shape[i] = shape[i];
		l->strides[i] = stride;
		stride *= shape[i] ? shape[i] : 1;
	}
}

bool hpu_layout_is_contiguous(const struct hpu_tensor_layout *l)
{
	int64_t stride = 1;
	int i;

	for (i = (int)l->ndim - 1; i >= 0; i--) {
		if (l->shape[i] == 0)
			return true;
		if (l->shape[i] != 1 && l->strides[i] != stride)
			return false;
		stride *= l->shape[i];
	}
	return true;
}

/* Offsets (elements) of the first and last element a view reaches; false if it has none. */
bool hpu_layout_span(const struct hpu_tensor_layout *l, int64_t *lo, int64_t *hi)
{
	unsigned int i;

	*lo = *hi = l->offset;
	for (i = 0; i < l->ndim; i++) {
		int64_t reach = (l->shape[i] - 1) * l->strides[i];

		if (l->shape[i] == 0)
			return false;
		if (reach < 0)
			*lo += reach;
		else
			*hi += reach;
	}
	return true;
}

int hpu_layout_check(const struct hpu_tensor_layout *l, uint64_t storage_bytes, const char *name)
{
	size_t elem = hpu_dt_size(l->dtype);
	int64_t lo, hi;
	unsigned int i;
	int ret;

	if (!elem)
		return hpu_error_set(EINVAL, "%s: unknown dtype %u", name, l->dtype);
	ret = hpu_shape_check(l->ndim, l->shape, name);
	if (ret)
		return ret;
	for (i = 0; i < l->ndim; i++) {
		if (l->strides[i] > HPU_NUMEL_MAX || l->strides[i] < -HPU_NUMEL_MAX)
			return hpu_error_set(EINVAL, "%s: stride %" PRId64 " of dim %u is out of range",
					     name, l->strides[i], i);
	}
	if (!hpu_layout_span(l, &lo, &hi))
		return 0;
	if (lo < 0 || (uint64_t)(hi + 1) * elem > storage_bytes)
		return hpu_error_set(EINVAL,
				     "%s reaches elements %" PRId64 "..%" PRId64
				     " of a storage of %" PRIu64 " %s elements",
				     name, lo, hi, storage_bytes / elem, hpu_dt_name(l->dtype));
	return 0;
}

/* "[2, 3, 4]" */
const char *hpu_shape_str(unsigned int ndim, const int64_t *shape, char *buf, size_t len)
{
	size_t used = 0;
	unsigned int i;

	used += snprintf(buf, len, "[");
	for (i = 0; i < ndim && used < len; i++)
		used += snprintf(buf + used, len - used, "%s%" PRId64, i ? ", " : "", shape[i]);
	if (used < len)
		snprintf(buf + used, len - used, "]");
	return buf;
}

int hpu_layout_broadcast(const struct hpu_tensor_layout *in, unsigned int ndim,
			 const int64_t *shape, struct hpu_tensor_layout *out, const char *name)
{
	char from[96], to[96];
	unsigned int i;

	if (ndim > HPU_MAX_DIMS || in->ndim > ndim)
		goto mismatch;
	*out = (struct hpu_tensor_layout){ .dtype = in->dtype, .ndim = ndim, .offset = in->offset };
	for (i = 0; i < ndim; i++) {
		int k = (int)i - (int)(ndim - in->ndim); /* in's dim aligned at the end */

		out->shape[i] = shape[i];
		if (k < 0 || in->shape[k] == 1)
			out->strides[i] = 0;
		else if (in->shape[k] == shape[i])
			out->strides[i] = in->strides[k];
		else
			goto mismatch;
	}
	return 0;
mismatch:
	return hpu_error_set(EINVAL, "%s of shape %s does not broadcast to %s", name,
			     hpu_shape_str(in->ndim, in->shape, from, sizeof(from)),
			     hpu_shape_str(ndim, shape, to, sizeof(to)));
}

int hpu_broadcast_shapes(unsigned int andim, const int64_t *ashape, unsigned int bndim,
			 const int64_t *bshape, unsigned int *ndim, int64_t *shape)
{
	unsigned int n = andim > bndim ? andim : bndim, i;
	char as[96], bs[96];

	for (i = 0; i < n; i++) {
		int ka = (int)i - (int)(n - andim), kb = (int)i - (int)(n - bndim);
		int64_t a = ka < 0 ? 1 : ashape[ka], b = kb < 0 ? 1 : bshape[kb];

		if (a != b && a != 1 && b != 1)
			return hpu_error_set(EINVAL, "shapes %s and %s do not broadcast",
					     hpu_shape_str(andim, ashape, as, sizeof(as)),
					     hpu_shape_str(bndim, bshape, bs, sizeof(bs)));
		shape[i] = a == 1 ? b : a;
	}
	*ndim = n;
	return 0;
}

/*
 * torch.Tensor.view's rule: the new shape must split or merge only dims
 * that are laid out one after the other, so that each new dim has one stride.
 */
int hpu_layout_view(const struct hpu_tensor_layout *in, unsigned int ndim, const int64_t *shape,
		    struct hpu_tensor_layout *out)
{
	int64_t sizes[HPU_MAX_DIMS], known = 1, numel = hpu_layout_numel(in);
	int64_t chunk_stride, in_count = 1, out_count = 1;
	int infer = -1, od, id;
	char from[96], to[96];
	unsigned int i;

	if (ndim > HPU_MAX_DIMS)
		return hpu_error_set(EINVAL, "view has %u dims, at most %d supported", ndim,
				     HPU_MAX_DIMS);
	for (i = 0; i < ndim; i++) {
		if (shape[i] == -1 && infer < 0) {
			infer = (int)i;
		} else if (shape[i] < 0) {
			return hpu_error_set(EINVAL, "view: dim %u is %" PRId64, i, shape[i]);
		}
		sizes[i] = shape[i];
		if (shape[i] >= 0)
			known *= shape[i];
	}
	if (infer >= 0)
		sizes[infer] = known ? numel / known : 0;
	if (hpu_shape_numel(ndim, sizes) != numel)
		return hpu_error_set(EINVAL, "view: %s has another element count than %s",
				     hpu_shape_str(ndim, shape, to, sizeof(to)),
				     hpu_shape_str(in->ndim, in->shape, from, sizeof(from)));
	hpu_layout_init(out, in->dtype, ndim, sizes);
	out->offset = in->offset;
	if (numel == 0 || in->ndim == 0)
		return 0;
	/*
	 * Walk the input from its last dim in chunks of dims laid out one after
	 * the other; each chunk's elements are the product of some run of new
	 * dims, which then get strides within the chunk.
	 */
	chunk_stride = in->strides[in->ndim - 1];
	od = (int)ndim - 1;
	for (id = (int)in->ndim - 1; id >= 0; id--) {
		in_count *= in->shape[id];
		if (id > 0 && (in->shape[id - 1] == 1 ||
			       in->strides[id - 1] == in_count * chunk_stride))
			continue;
		while (od >= 0 && (out_count < in_count || sizes[od] == 1)) {
			out->strides[od] = out_count * chunk_stride;
			out_count *= sizes[od--];
		}
		if (out_count != in_count)
			goto incompatible;
		if (id > 0) {
			chunk_stride = in->strides[id - 1];
			in_count = out_count = 1;
		}
	}
	if (od >= 0)
		goto incompatible;
	return 0;
incompatible:
	return hpu_error_set(EINVAL, "view: %s cannot be viewed as %s without a copy",
			     hpu_shape_str(in->ndim, in->shape, from, sizeof(from)),
			     hpu_shape_str(ndim, sizes, to, sizeof(to)));
}

int hpu_layout_permute(const struct hpu_tensor_layout *in, const unsigned int *dims,
		       struct hpu_tensor_layout *out)
{
	uint32_t seen = 0;
	unsigned int i;

	if (!dims)
		return hpu_error_set(EINVAL, "dims is NULL");
	*out = *in;
	for (i = 0; i < in->ndim; i++) {
		if (dims[i] >= in->ndim || (seen & (1u << dims[i])))
			return hpu_error_set(EINVAL, "dims[%u] = %u: not a permutation of %u dims", i,
					     dims[i], in->ndim);
		seen |= 1u << dims[i];
		out->shape[i] = in->shape[dims[i]];
		out->strides[i] = in->strides[dims[i]];
	}
	return 0;
}

int hpu_layout_slice(const struct hpu_tensor_layout *in, unsigned int dim, int64_t start,
		     int64_t end, int64_t step, struct hpu_tensor_layout *out)
{
	if (dim >= in->ndim)
		return hpu_error_set(EINVAL, "dim %u of a tensor of %u dims", dim, in->ndim);
	if (step < 1 || start < 0 || start > end || end > in->shape[dim])
		return hpu_error_set(EINVAL,
				     "slice %" PRId64 ":%" PRId64 ":%" PRId64
				     " out of range for dim %u of size %" PRId64,
				     start, end, step, dim, in->shape[dim]);
	*out = *in;
	out->offset += start * in->strides[dim];
	out->shape[dim] = (end - start + step - 1) / step;
	out->strides[dim] *= step;
	return 0;
}

int hpu_layout_expand(const struct hpu_tensor_layout *in, unsigned int ndim, const int64_t *shape,
		      struct hpu_tensor_layout *out)
{
	int ret = hpu_shape_check(ndim, shape, "expand");

	return ret ? ret : hpu_layout_broadcast(in, ndim, shape, out, "tensor");
}

bool hpu_layout_has_repeats(const struct hpu_tensor_layout *l)
{
	unsigned int i;

	for (i = 0; i < l->ndim; i++)
		if (l->shape[i] > 1 && l->strides[i] == 0)
			return true;
	return false;
}

bool hpu_layout_same(const struct hpu_tensor_layout *a, const struct hpu_tensor_layout *b)
{
	return a->dtype == b->dtype && a->ndim == b->ndim && a->offset == b->offset &&
	       !memcmp(a->shape, b->shape, a->ndim * sizeof(a->shape[0])) &&
	       !memcmp(a->strides, b->strides, a->ndim * sizeof(a->strides[0]));
}

/* Whether the bytes two views of one storage span intersect (a conservative overlap test). */
bool hpu_layout_overlap(const struct hpu_tensor_layout *a, const struct hpu_tensor_layout *b)
{
	int64_t alo, ahi, blo, bhi;
	int64_t as = (int64_t)hpu_dt_size(a->dtype), bs = (int64_t)hpu_dt_size(b->dtype);

	if (!hpu_layout_span(a, &alo, &ahi) || !hpu_layout_span(b, &blo, &bhi))
		return false;
	return alo * as < (bhi + 1) * bs && blo * bs < (ahi + 1) * as;
}
