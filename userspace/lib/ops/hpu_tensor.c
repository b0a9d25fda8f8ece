/* SPDX-License-Identifier: MIT */
/*
 * Tensors: refcounted storages of device memory and the views on them.
 * Every view is checked against its storage when it is made, so an op
 * never has to: a handle cannot reach outside its memory.  Views share
 * their storage; a copy between a non-contiguous view and the host moves
 * the bytes the view spans and packs or unpacks them on the host.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../ops/ops.h"

void hpu_storage_put(struct hpu_storage *st)
{
	if (atomic_fetch_sub(&st->refs, 1) != 1)
		return;
	/* The cache reuses the memory only once the work enqueued on it has ended. */
	hpu_mem_free(st->dev, st->va);
	free(st);
}

/* A handle for layout l of st, taking a reference on st. */
static int hpu_tensor_wrap(struct hpu_storage *st, const struct hpu_tensor_layout *l,
			   struct hpu_tensor **tp)
{
	struct hpu_tensor *t;
	int ret;

	ret = hpu_layout_check(l, st->size, "view");
	if (ret)
		return ret;
	t = malloc(sizeof(*t));
	if (!t)
		return hpu_error_set(ENOMEM, "out of memory");
	atomic_fetch_add(&st->refs, 1);
	t->storage = st;
	t->l = *l;
	*tp = t;
	return 0;
}

static int hpu_tensor_new(struct hpu_device *dev, uint32_t dtype, unsigned int ndim,
			  const int64_t *shape, struct hpu_tensor **tp)
{
	struct hpu_tensor_layout l;
	struct hpu_storage *st;
	int ret;

	if (!dev)
		return hpu_error_set(EINVAL, "dev is NULL");
	if (!hpu_dt_size(dtype))
		return hpu_error_set(EINVAL, "unknown dtype %u", dtype);
	ret = hpu_shape_check(ndim, shape, "tensor");
	if (ret)
		return ret;
	hpu_layout_init(&l, dtype, ndim, shape);
	st = calloc(1, sizeof(*st));
	if (!st)
		return hpu_error_set(ENOMEM, "out of memory");
	st->dev = dev;
	st->size = (uint64_t)hpu_layout_numel(&l) * hpu_dt_size(dtype);
	ret = hpu_mem_alloc(dev, st->size, &st->va);
	if (!ret)
		ret = hpu_tensor_wrap(st, &l, tp);
	if (ret) {
		hpu_mem_free(dev, st->va);
		free(st);
	}
	return ret;
}

int hpu_tensor_empty(struct hpu_device *dev, enum hpu_dt dtype, unsigned int ndim,
		     const int64_t *shape, struct hpu_tensor **tp)
{
	if (!tp)
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "tp is NULL"));
	*tp = NULL;
	return hpu_error_in(__func__, hpu_tensor_new(dev, dtype, ndim, shape, tp));
}

void hpu_tensor_destroy(struct hpu_tensor *t)
{
	if (!t)
		return;
	hpu_storage_put(t->storage);
	free(t);
}

int hpu_tensor_get_layout(const struct hpu_tensor *t, struct hpu_tensor_layout *layout)
{
	if (!t || !layout)
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "%s is NULL", t ? "layout" : "t"));
	*layout = t->l;
	return 0;
}

int64_t hpu_tensor_numel(const struct hpu_tensor *t)
{
	return t ? hpu_layout_numel(&t->l) : 0;
}

uint64_t hpu_tensor_addr(const struct hpu_storage *st, const struct hpu_tensor_layout *l)
{
	return st->va + (uint64_t)l->offset * hpu_dt_size(l->dtype);
}

int hpu_tensor_device_pointer(const struct hpu_tensor *t, uint64_t *devptr)
{
	if (!t || !devptr)
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "%s is NULL", t ? "devptr" : "t"));
	*devptr = hpu_tensor_addr(t->storage, &t->l);
	return 0;
}

/* The view functions: a layout from t's, then a handle on the same storage. */
enum hpu_view_kind { HPU_VIEW, HPU_PERMUTE, HPU_TRANSPOSE, HPU_SLICE, HPU_EXPAND, HPU_STRIDED };

struct hpu_view_args {
	enum hpu_view_kind kind;
	unsigned int ndim, dim, dim1;
	const int64_t *shape;
	const unsigned int *dims;
	int64_t start, end, step;
	const struct hpu_tensor_layout *layout;
};

static int hpu_view_layout(const struct hpu_tensor *t, const struct hpu_view_args *a,
			   struct hpu_tensor_layout *l)
{
	unsigned int dims[HPU_MAX_DIMS], i;

	switch (a->kind) {
	case HPU_VIEW:
		if (a->ndim && !a->shape)
			return hpu_error_set(EINVAL, "shape is NULL");
		return hpu_layout_view(&t->l, a->ndim, a->shape, l);
	case HPU_PERMUTE:
		return hpu_layout_permute(&t->l, a->dims, l);
	case HPU_TRANSPOSE:
		if (a->dim >= t->l.ndim || a->dim1 >= t->l.ndim)
			return hpu_error_set(EINVAL, "dims %u and %u of a tensor of %u dims", a->dim,
					     a->dim1, t->l.ndim);
		for (i = 0; i < t->l.ndim; i++)
			dims[i] = i == a->dim ? a->dim1 : i == a->dim1 ? a->dim : i;
		return hpu_layout_permute(&t->l, dims, l);
	case HPU_SLICE:
		return hpu_layout_slice(&t->l, a->dim, a->start, a->end, a->step, l);
	case HPU_EXPAND:
		return hpu_layout_expand(&t->l, a->ndim, a->shape, l);
	case HPU_STRIDED:
		if (!a->layout)
			return hpu_error_set(EINVAL, "layout is NULL");
		*l = *a->layout;
		return 0;
	}
	return hpu_error_set(EINVAL, "unknown view");
}

static int hpu_tensor_view_of(struct hpu_tensor *t, const struct hpu_view_args *a,
			      struct hpu_tensor **outp)
{
	struct hpu_tensor_layout l;
	int ret;

	if (!outp)
		return hpu_error_set(EINVAL, "outp is NULL");
	*outp = NULL;
	if (!t)
		return hpu_error_set(EINVAL, "t is NULL");
	ret = hpu_view_layout(t, a, &l);
	return ret ? ret : hpu_tensor_wrap(t->storage, &l, outp);
}

int hpu_tensor_view(struct hpu_tensor *t, unsigned int ndim, const int64_t *shape,
		    struct hpu_tensor **outp)
{
	struct hpu_view_args a = { .kind = HPU_VIEW, .ndim = ndim, .shape = shape };

	return hpu_error_in(__func__, hpu_tensor_view_of(t, &a, outp));
}

int hpu_tensor_permute(struct hpu_tensor *t, const unsigned int *dims, struct hpu_tensor **outp)
{
	struct hpu_view_args a = { .kind = HPU_PERMUTE, .dims = dims };

	return hpu_error_in(__func__, hpu_tensor_view_of(t, &a, outp));
}

int hpu_tensor_transpose(struct hpu_tensor *t, unsigned int dim0, unsigned int dim1,
			 struct hpu_tensor **outp)
{
	struct hpu_view_args a = { .kind = HPU_TRANSPOSE, .dim = dim0, .dim1 = dim1 };

	return hpu_error_in(__func__, hpu_tensor_view_of(t, &a, outp));
}

int hpu_tensor_slice(struct hpu_tensor *t, unsigned int dim, int64_t start, int64_t end,
		     int64_t step, struct hpu_tensor **outp)
{
	struct hpu_view_args a = { .kind = HPU_SLICE, .dim = dim, .start = start, .end = end,
				   .step = step };

	return hpu_error_in(__func__, hpu_tensor_view_of(t, &a, outp));
}

int hpu_tensor_expand(struct hpu_tensor *t, unsigned int ndim, const int64_t *shape,
		      struct hpu_tensor **outp)
{
	struct hpu_view_args a = { .kind = HPU_EXPAND, .ndim = ndim, .shape = shape };

	return hpu_error_in(__func__, hpu_tensor_view_of(t, &a, outp));
}

int hpu_tensor_as_strided(struct hpu_tensor *t, const struct hpu_tensor_layout *layout,
			  struct hpu_tensor **outp)
{
	struct hpu_view_args a = { .kind = HPU_STRIDED, .layout = layout };

	return hpu_error_in(__func__, hpu_tensor_view_of(t, &a, outp));
}

/* Host buffers of spans: the bytes of elements lo..hi of a storage. */
static uint64_t hpu_span_bytes(const struct hpu_tensor_layout *l, int64_t *lo)
{
	int64_t hi;

	if (!hpu_layout_span(l, lo, &hi))
		return 0;
	return (uint64_t)(hi - *lo + 1) * hpu_dt_size(l->dtype);
}

int hpu_span_read(struct hpu_stream *s, const struct hpu_storage *st,
		  const struct hpu_tensor_layout *l, void **buf, int64_t *lo)
{
	uint64_t size = hpu_span_bytes(l, lo);
	int ret;

	*buf = malloc(size ? size : 1);
	if (!*buf)
		return hpu_error_set(ENOMEM, "out of memory");
	if (!size)
		return 0;
	/* To pageable memory: waits for the stream, and so for the data. */
	ret = hpu_memcpy_d2h_async(s, *buf, st->va + (uint64_t)*lo * hpu_dt_size(l->dtype), size);
	if (ret) {
		free(*buf);
		*buf = NULL;
	}
	return ret;
}

int hpu_span_write(struct hpu_stream *s, const struct hpu_storage *st,
		   const struct hpu_tensor_layout *l, const void *buf, int64_t lo)
{
	int64_t unused;
	uint64_t size = hpu_span_bytes(l, &unused);

	/* From pageable memory: staged, so buf may go as soon as this returns. */
	return hpu_memcpy_h2d_async(s, st->va + (uint64_t)lo * hpu_dt_size(l->dtype), buf, size);
}

/* Moves every element between a view (its span, first element lo) and packed host memory. */
static void hpu_pack(const struct hpu_tensor_layout *l, uint8_t *span, int64_t lo, uint8_t *packed,
		     bool to_packed)
{
	size_t elem = hpu_dt_size(l->dtype);
	int64_t idx[HPU_MAX_DIMS] = { 0 };
	uint8_t *p = packed;

	if (!hpu_layout_numel(l))
		return;
	do {
		uint8_t *e = span + (hpu_layout_offset(l, idx) - lo) * elem;

		memcpy(to_packed ? p : e, to_packed ? e : p, elem);
		p += elem;
	} while (hpu_index_next(l->ndim, l->shape, idx));
}

static int hpu_tensor_copy_check(const struct hpu_stream *s, const struct hpu_tensor *t,
				 const void *host, size_t size)
{
	uint64_t want;

	if (!s || !t || !host)
		return hpu_error_set(EINVAL, "%s is NULL", !s ? "stream" : !t ? "t" : "host memory");
	if (s->dev != t->storage->dev)
		return hpu_error_set(EINVAL, "tensor and stream belong to different devices");
	want = (uint64_t)hpu_layout_numel(&t->l) * hpu_dt_size(t->l.dtype);
	if (size != want)
		return hpu_error_set(EINVAL, "size is %zu, the tensor has %llu bytes", size,
				     (unsigned long long)want);
	return 0;
}

/*
 * Both directions: a contiguous view is one async copy; any other moves
 * its span through host memory, read first so that the span's other bytes
 * survive a write.
 */
static int hpu_tensor_copy_host(struct hpu_stream *s, const struct hpu_tensor *t, void *host,
				size_t size, bool to_host)
{
	uint64_t addr;
	void *span;
	int64_t lo;
	int ret;

	ret = hpu_tensor_copy_check(s, t, host, size);
	if (ret || !size)
		return ret;
	addr = hpu_tensor_addr(t->storage, &t->l);
	if (hpu_layout_is_contiguous(&t->l))
		return to_host ? hpu_memcpy_d2h_async(s, host, addr, size)
			       : hpu_memcpy_h2d_async(s, addr, host, size);
	if (!to_host && hpu_layout_has_repeats(&t->l))
		return hpu_error_set(EINVAL, "t repeats elements (stride 0)");
	ret = hpu_span_read(s, t->storage, &t->l, &span, &lo);
	if (ret)
		return ret;
	hpu_pack(&t->l, span, lo, host, to_host);
	if (!to_host)
		ret = hpu_span_write(s, t->storage, &t->l, span, lo);
	free(span);
	return ret;
}

int hpu_tensor_copy_from_host(struct hpu_stream *s, struct hpu_tensor *t, const void *src,
			      size_t size)
{
	/* Only read: hpu_pack() writes the host side only towards the host. */
	return hpu_error_in(__func__, hpu_tensor_copy_host(s, t, (void *)src, size, false));
}

int hpu_tensor_copy_to_host(struct hpu_stream *s, const struct hpu_tensor *t, void *dst,
			    size_t size)
{
	return hpu_error_in(__func__, hpu_tensor_copy_host(s, t, dst, size, true));
}

int hpu_tensors_like(struct hpu_device *dev, unsigned int n, struct hpu_tensor *const *like,
		     struct hpu_tensor **t)
{
	unsigned int i;
	int ret = 0;

	for (i = 0; i < n && !ret; i++)
		ret = hpu_tensor_empty(dev, like[i]->l.dtype, like[i]->l.ndim, like[i]->l.shape,
				       &t[i]);
	return ret;
}

int hpu_tensors_copy(struct hpu_stream *s, unsigned int n, struct hpu_tensor *const *dst,
		     struct hpu_tensor *const *src)
{
	unsigned int i;
	int ret = 0;

	for (i = 0; i < n && !ret; i++)
		if (dst[i] != src[i])
			ret = hpu_op_unary(s, HPU_UN_COPY, dst[i], src[i]);
	return ret;
}
