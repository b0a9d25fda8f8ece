/* SPDX-License-Identifier: MIT */
/*
 * Dynamic shapes: bounding the shapes a graph sees.
 *
 * Buckets: a dynamic dim padded up to the next power of two (within
 * [min, max]) takes a logarithmic number of sizes, so its graphs compile a
 * few recipes instead of one per size.  The padding is made of ordinary
 * ops; it bounds compilations when it runs outside the graph it feeds (the
 * copy of the unpadded input has the input's shape: recorded into the
 * step, it would make the step's graph one per size again).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "../graph/graph.h"

/* Bad sizes return -EINVAL (with a message): n must be >= 1, and 1 <= min <= max. */
int64_t hpu_bucket_size(int64_t n, int64_t min, int64_t max)
{
	int64_t want, b = 1;

	if (n < 1 || min < 1 || min > max)
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "n %" PRId64 ", min %" PRId64
							    ", max %" PRId64 ": want n >= 1 and "
							    "1 <= min <= max", n, min, max));
	if (n > max)
		return n;
	want = n > min ? n : min;
	/* Doubling only up to max / 2 cannot overflow; past it the bucket is max. */
	while (b < want && b <= max / 2)
		b <<= 1;
	return b < want ? max : b;
}

static int hpu_pad_check(const struct hpu_stream *stream, const struct hpu_tensor *in,
			 unsigned int dim, int64_t size)
{
	if (!stream || !in)
		return hpu_error_set(EINVAL, "%s is NULL", stream ? "in" : "stream");
	if (dim >= in->l.ndim)
		return hpu_error_set(EINVAL, "dim %u of a tensor of %u dims", dim, in->l.ndim);
	if (size < in->l.shape[dim])
		return hpu_error_set(EINVAL, "size %" PRId64 " is less than in's %" PRId64
				     " along dim %u", size, in->l.shape[dim], dim);
	return 0;
}

/*
 * A fill of the whole new tensor, then a copy into its first elements: a
 * tensor whose first access writes all of it can live in a lazy graph's
 * workspace once the caller drops it.  The copy has in's shape, so a step
 * recorded with its padding compiles once per size of in: bucketing pays
 * only when the padding runs outside the step's graph (eagerly).
 */
int hpu_tensor_pad(struct hpu_stream *stream, const struct hpu_tensor *in, unsigned int dim,
		   int64_t size, double value, struct hpu_tensor **outp)
{
	struct hpu_tensor *out = NULL, *head = NULL;
	int64_t shape[HPU_MAX_DIMS];
	int ret;

	if (!outp)
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "outp is NULL"));
	*outp = NULL;
	ret = hpu_pad_check(stream, in, dim, size);
	if (!ret) {
		memcpy(shape, in->l.shape, sizeof(shape));
		shape[dim] = size;
		ret = hpu_tensor_empty(stream->dev, in->l.dtype, in->l.ndim, shape, &out);
	}
	if (!ret)
		ret = hpu_op_fill(stream, out, value);
	if (!ret)
		ret = hpu_tensor_slice(out, dim, 0, in->l.shape[dim], 1, &head);
	if (!ret)
		ret = hpu_op_unary(stream, HPU_UN_COPY, head, in);
	hpu_tensor_destroy(head);
	if (ret)
		hpu_tensor_destroy(out);
	else
		*outp = out;
	return hpu_error_in(__func__, ret);
}
