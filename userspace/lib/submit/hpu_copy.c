/* SPDX-License-Identifier: MIT */
/*
 * Copies and fills.  Every public variant describes its operation as a
 * struct hpu_copy and hands it to one path: checked, then enqueued on a
 * stream (the default stream for the synchronous ones, which then settle
 * it).  Host memory that is pinned (hpu_host.c) is addressed directly;
 * pageable memory is staged through the two pinned halves of the device's
 * staging buffer, one filling while the device copies the other.  The
 * buffer is one per device, shared by its streams under its lock and
 * sized from RLIMIT_MEMLOCK (hpu_host.c); the host's side of staging is
 * hpu_bulk_copy().
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../submit/submit.h"

enum hpu_copy_kind {
	HPU_COPY_H2D,
	HPU_COPY_D2H,
	HPU_COPY_D2D,
	HPU_COPY_FILL,
};

struct hpu_copy {
	enum hpu_copy_kind kind;
	uint64_t dst, src; /* device addresses, as they apply to the kind */
	void *host;        /* H2D: the source; D2H: the destination */
	uint64_t size;
	uint8_t value;     /* fill */
};

static int hpu_copy_check_device(uint64_t addr, uint64_t size, const char *name)
{
	if (!addr)
		return hpu_error_set(EINVAL, "%s is a null device address", name);
	if (addr + size < addr)
		return hpu_error_set(EINVAL, "%s 0x%llx + %llu wraps around", name,
				     (unsigned long long)addr, (unsigned long long)size);
	return 0;
}

static int hpu_copy_check(const struct hpu_copy *op)
{
	int ret = 0;

	switch (op->kind) {
	case HPU_COPY_H2D:
		ret = hpu_copy_check_device(op->dst, op->size, "dst");
		if (!ret && !op->host)
			ret = hpu_error_set(EINVAL, "src is NULL");
		break;
	case HPU_COPY_D2H:
		ret = hpu_copy_check_device(op->src, op->size, "src");
		if (!ret && !op->host)
			ret = hpu_error_set(EINVAL, "dst is NULL");
		break;
	case HPU_COPY_D2D:
		ret = hpu_copy_check_device(op->dst, op->size, "dst");
		if (!ret)
			ret = hpu_copy_check_device(op->src, op->size, "src");
		/* LIN_DMA's ranges must not overlap (hpu_packets.h): it is no memmove. */
		if (!ret && op->dst < op->src + op->size && op->src < op->dst + op->size)
			ret = hpu_error_set(EINVAL, "dst and src overlap");
		break;
	case HPU_COPY_FILL:
		ret = hpu_copy_check_device(op->dst, op->size, "dst");
		break;
	}
	return ret;
}

int hpu_staging_init(struct hpu_device *dev, uint64_t half)
{
	dev->staging = calloc(1, sizeof(*dev->staging));
	if (!dev->staging)
		return hpu_error_set(ENOMEM, "out of memory");
	dev->staging->half = half;
	pthread_mutex_init(&dev->staging->lock, NULL);
	return 0;
}

/* The buffer itself is a block of the pinned cache: hpu_host_fini() unmaps it. */
void hpu_staging_fini(struct hpu_device *dev)
{
	pthread_mutex_destroy(&dev->staging->lock);
	free(dev->staging);
	dev->staging = NULL;
}

/*
 * Takes the device's staging buffer for a copy on s, allocating it on first
 * use.  The ops s recorded go first, so that the submits under the
 * buffer's lock flush nothing (a flush compiles and launches graphs).
 */
static int hpu_staging_take(struct hpu_stream *s, struct hpu_staging **stp)
{
	struct hpu_staging *st = s->dev->staging;
	void *host;
	int ret;

	ret = hpu_stream_flush(s);
	if (ret)
		return ret;
	pthread_mutex_lock(&st->lock);
	if (!st->host) {
		ret = hpu_pinned_alloc(s->dev, 2 * st->half, &st->va, &host);
		if (ret) {
			pthread_mutex_unlock(&st->lock);
			return ret;
		}
		st->host = host;
	}
	*stp = st;
	return 0;
}

/* Waits for the last job that used half h to end: through s's counters if it is s's. */
static int hpu_staging_wait(struct hpu_stream *s, const struct hpu_staging *st, unsigned int h)
{
	int error;

	if (!st->last[h].seq)
		return 0;
	if (st->last[h].stream == s->id)
		return hpu_stream_wait_job(s, st->last[h].index);
	/* Another stream's job: its failure is that stream's to report. */
	return hpu_job_wait(s->dev, st->last[h].queue, st->last[h].seq, HPU_FOREVER, &error);
}

/* The half whose last job is older, once that job has ended. */
static int hpu_staging_half(struct hpu_stream *s, const struct hpu_staging *st,
			    unsigned int *half)
{
	*half = st->last[0].seq <= st->last[1].seq ? 0 : 1;
	return hpu_staging_wait(s, st, *half);
}

/* Submits a copy through half h of the buffer, which then waits for it. */
static int hpu_staging_submit(struct hpu_stream *s, struct hpu_staging *st, unsigned int h,
			      uint64_t dst, uint64_t src, uint64_t size, const char *what)
{
	struct hpu_cb cb;
	int ret;

	hpu_cb_init(&cb);
	hpu_cb_copy(&cb, dst, src, size);
	ret = hpu_stream_submit(s, &cb, what);
	if (!ret)
		st->last[h] = (typeof(st->last[h])){ .seq = hpu_stream_last_seq(s),
						     .index = s->jobs, .stream = s->id,
						     .queue = s->queue };
	return ret;
}

/* Fill a half, copy it out: the caller may reuse src as soon as this returns. */
static int hpu_copy_staged_h2d(struct hpu_stream *s, const struct hpu_copy *op, const char *what)
{
	struct hpu_staging *st;
	uint64_t off, n;
	unsigned int half;
	int ret;

	ret = hpu_staging_take(s, &st);
	if (ret)
		return ret;
	for (off = 0; !ret && off < op->size; off += n) {
		n = op->size - off < st->half ? op->size - off : st->half;
		ret = hpu_staging_half(s, st, &half);
		if (ret)
			break;
		hpu_bulk_copy(st->host + half * st->half, (char *)op->host + off, n);
		ret = hpu_staging_submit(s, st, half, op->dst + off, st->va + half * st->half, n,
					 what);
	}
	pthread_mutex_unlock(&st->lock);
	return ret;
}

struct hpu_staged_chunk {
	uint64_t off, size;
	unsigned int half;
};

static int hpu_copy_d2h_chunk(struct hpu_stream *s, struct hpu_staging *st,
			      const struct hpu_copy *op, uint64_t off, const char *what,
			      struct hpu_staged_chunk *chunk)
{
	int ret;

	chunk->off = off;
	chunk->size = op->size - off < st->half ? op->size - off : st->half;
	ret = hpu_staging_half(s, st, &chunk->half);
	if (!ret)
		ret = hpu_staging_submit(s, st, chunk->half, st->va + chunk->half * st->half,
					 op->src + off, chunk->size, what);
	return ret;
}

/*
 * The device fills one half while the CPU empties the other.  The data is
 * only good if no job failed, so this settles the whole stream.
 */
static int hpu_copy_staged_d2h(struct hpu_stream *s, const struct hpu_copy *op, const char *what)
{
	struct hpu_staged_chunk cur, next;
	struct hpu_staging *st;
	uint64_t next_off;
	int ret;

	ret = hpu_staging_take(s, &st);
	if (ret)
		return ret;
	ret = hpu_copy_d2h_chunk(s, st, op, 0, what, &cur);
	while (!ret) {
		next_off = cur.off + cur.size;
		if (next_off < op->size)
			ret = hpu_copy_d2h_chunk(s, st, op, next_off, what, &next);
		if (!ret)
			ret = hpu_staging_wait(s, st, cur.half);
		if (ret)
			break;
		hpu_bulk_copy((char *)op->host + cur.off, st->host + cur.half * st->half,
			      cur.size);
		if (next_off >= op->size)
			break;
		cur = next;
	}
	pthread_mutex_unlock(&st->lock);
	return ret ? ret : hpu_stream_settle_all(s, HPU_FOREVER);
}

/* With the stream's lock held. */
static int hpu_copy_enqueue(struct hpu_stream *s, struct hpu_copy *op, const char *what)
{
	uint64_t va;
	struct hpu_cb cb;

	if (op->kind == HPU_COPY_H2D && hpu_host_lookup(s->dev, op->host, op->size, &va))
		*op = (struct hpu_copy){ .kind = HPU_COPY_D2D, .dst = op->dst, .src = va,
					 .size = op->size };
	else if (op->kind == HPU_COPY_D2H && hpu_host_lookup(s->dev, op->host, op->size, &va))
		*op = (struct hpu_copy){ .kind = HPU_COPY_D2D, .dst = va, .src = op->src,
					 .size = op->size };
	if (op->kind == HPU_COPY_H2D)
		return hpu_copy_staged_h2d(s, op, what);
	if (op->kind == HPU_COPY_D2H)
		return hpu_copy_staged_d2h(s, op, what);
	hpu_cb_init(&cb);
	if (op->kind == HPU_COPY_FILL)
		hpu_cb_fill(&cb, op->dst, op->value, op->size);
	else
		hpu_cb_copy(&cb, op->dst, op->src, op->size);
	return hpu_stream_submit(s, &cb, what);
}

static int hpu_copy_async(struct hpu_stream *s, struct hpu_copy *op, const char *what)
{
	int ret;

	if (!s)
		return hpu_error_set(EINVAL, "stream is NULL");
	if (!op->size)
		return 0;
	ret = hpu_copy_check(op);
	if (ret)
		return ret;
	pthread_mutex_lock(&s->lock);
	ret = hpu_copy_enqueue(s, op, what);
	pthread_mutex_unlock(&s->lock);
	return ret;
}

static int hpu_copy_sync(struct hpu_device *dev, struct hpu_copy *op, const char *what)
{
	struct hpu_stream *s;
	int ret;

	if (!dev)
		return hpu_error_set(EINVAL, "dev is NULL");
	if (!op->size)
		return 0;
	ret = hpu_copy_check(op);
	if (!ret)
		ret = hpu_stream_default(dev, &s);
	if (ret)
		return ret;
	pthread_mutex_lock(&s->lock);
	ret = hpu_copy_enqueue(s, op, what);
	if (!ret)
		ret = hpu_stream_settle_all(s, HPU_FOREVER);
	pthread_mutex_unlock(&s->lock);
	return ret;
}

#define HPU_H2D(dst_, src_, size_)                                                        \
	(struct hpu_copy){ .kind = HPU_COPY_H2D, .dst = dst_, .host = (void *)(src_),      \
			   .size = size_ }
#define HPU_D2H(dst_, src_, size_)                                                        \
	(struct hpu_copy){ .kind = HPU_COPY_D2H, .host = dst_, .src = src_, .size = size_ }
#define HPU_D2D(dst_, src_, size_)                                                        \
	(struct hpu_copy){ .kind = HPU_COPY_D2D, .dst = dst_, .src = src_, .size = size_ }
#define HPU_FILL(dst_, value_, size_)                                                     \
	(struct hpu_copy){ .kind = HPU_COPY_FILL, .dst = dst_, .value = (uint8_t)(value_), \
			   .size = size_ }

int hpu_memcpy_h2d_async(struct hpu_stream *stream, uint64_t dst, const void *src, size_t size)
{
	struct hpu_copy op = HPU_H2D(dst, src, size);

	return hpu_error_in(__func__, hpu_copy_async(stream, &op, __func__));
}

int hpu_memcpy_d2h_async(struct hpu_stream *stream, void *dst, uint64_t src, size_t size)
{
	struct hpu_copy op = HPU_D2H(dst, src, size);

	return hpu_error_in(__func__, hpu_copy_async(stream, &op, __func__));
}

int hpu_memcpy_d2d_async(struct hpu_stream *stream, uint64_t dst, uint64_t src, size_t size)
{
	struct hpu_copy op = HPU_D2D(dst, src, size);

	return hpu_error_in(__func__, hpu_copy_async(stream, &op, __func__));
}

int hpu_memset_async(struct hpu_stream *stream, uint64_t dst, int value, size_t size)
{
	struct hpu_copy op = HPU_FILL(dst, value, size);

	return hpu_error_in(__func__, hpu_copy_async(stream, &op, __func__));
}

int hpu_memcpy_h2d(struct hpu_device *dev, uint64_t dst, const void *src, size_t size)
{
	struct hpu_copy op = HPU_H2D(dst, src, size);

	return hpu_error_in(__func__, hpu_copy_sync(dev, &op, __func__));
}

int hpu_memcpy_d2h(struct hpu_device *dev, void *dst, uint64_t src, size_t size)
{
	struct hpu_copy op = HPU_D2H(dst, src, size);

	return hpu_error_in(__func__, hpu_copy_sync(dev, &op, __func__));
}

int hpu_memcpy_d2d(struct hpu_device *dev, uint64_t dst, uint64_t src, size_t size)
{
	struct hpu_copy op = HPU_D2D(dst, src, size);

	return hpu_error_in(__func__, hpu_copy_sync(dev, &op, __func__));
}

int hpu_memset(struct hpu_device *dev, uint64_t dst, int value, size_t size)
{
	struct hpu_copy op = HPU_FILL(dst, value, size);

	return hpu_error_in(__func__, hpu_copy_sync(dev, &op, __func__));
}
