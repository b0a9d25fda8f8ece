/* SPDX-License-Identifier: MIT */
/*
 * Streams: in-order work on one hardware queue, and knowing how it went.
 *
 * Each job of a stream ends with a SIGNAL that adds 1 to the stream's done
 * counter in pinned host memory; a failed job is skipped to its end and
 * does not add.  The stream's jobs run in order, so once they have all
 * ended, the counter equals the number of jobs less the failed ones: a
 * synchronize that finds it there learns, without a system call, that the
 * work is done and nothing new failed.  Only when the count falls short
 * does it ask the driver about each job since the last check, to name the
 * failures.  Events use the same check at their point in the stream (see
 * hpu_event.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <drm/hpu_accel.h>

#include "../submit/submit.h"

#define HPU_RING_MIN 16

static struct hpu_stream_job *hpu_stream_job_at(const struct hpu_stream *s, uint64_t index)
{
	return &s->ring[(s->ring_head + (index - s->verified - 1)) & (s->ring_capacity - 1)];
}

/* Jobs up to index have ended and their failures are reported. */
static void hpu_stream_advance(struct hpu_stream *s, uint64_t index)
{
	s->ring_head = (s->ring_head + (index - s->verified)) & (s->ring_capacity - 1);
	s->verified = index;
}

/* Room for n more jobs. */
static int hpu_stream_ring_reserve(struct hpu_stream *s, unsigned int n)
{
	uint64_t i, count = s->jobs - s->verified;
	struct hpu_stream_job *ring;
	size_t capacity = s->ring_capacity;

	while (count + n > capacity)
		capacity *= 2;
	if (capacity == s->ring_capacity)
		return 0;
	ring = malloc(capacity * sizeof(*ring));
	if (!ring)
		return hpu_error_set(ENOMEM, "out of memory");
	for (i = 0; i < count; i++)
		ring[i] = *hpu_stream_job_at(s, s->verified + 1 + i);
	free(s->ring);
	s->ring = ring;
	s->ring_capacity = capacity;
	s->ring_head = 0;
	return 0;
}

/*
 * Jobs on other queues than the stream's are scanned like its own when one
 * fails: each has ended once the last (on the stream's queue, waiting for
 * them) has, and so have the jobs of the stream's queue numbered before it.
 */
int hpu_stream_submit_group(struct hpu_stream *s, const struct hpu_job_cb *jobs,
			    unsigned int count, const char *what)
{
	uint64_t seqs[DRM_HPU_SUBMIT_MAX_JOBS];
	unsigned int i;
	int ret;

	/* Room first: a submitted job must be tracked. */
	ret = hpu_stream_ring_reserve(s, count);
	if (ret)
		return ret;
	ret = hpu_jobs_submit(s->dev, jobs, count, seqs);
	if (ret)
		return ret;
	for (i = 0; i < count; i++) {
		s->jobs++;
		*hpu_stream_job_at(s, s->jobs) = (struct hpu_stream_job){ .seq = seqs[i], .what = what };
	}
	return 0;
}

int hpu_stream_flush(struct hpu_stream *s)
{
	const struct hpu_stream_hooks *hooks = s->dev->stream_hooks;

	return hooks ? hooks->flush(s) : 0;
}

/* Locks s and flushes it. */
static int hpu_stream_flush_unlocked(struct hpu_stream *s)
{
	int ret;

	pthread_mutex_lock(&s->lock);
	ret = hpu_stream_flush(s);
	pthread_mutex_unlock(&s->lock);
	return ret;
}

int hpu_stream_submit(struct hpu_stream *s, struct hpu_cb *cb, const char *what)
{
	struct hpu_job_cb job;
	int ret;

	/* Recorded ops come first: they were enqueued before this. */
	ret = hpu_stream_flush(s);
	if (ret)
		return ret;
	hpu_cb_signal(cb, s->done_va, 1);
	job = (struct hpu_job_cb){ .queue = s->queue, .cb = cb->buf, .size = cb->size };
	return hpu_stream_submit_group(s, &job, 1, what);
}

/* Asks the driver about every job up to index (all ended) and reports the first failure. */
static int hpu_stream_scan(struct hpu_stream *s, uint64_t index)
{
	const struct hpu_stream_job *first = NULL;
	uint64_t i, failed = 0;
	int ret, error, first_error = 0;
	char name[64], more[64] = "";

	for (i = s->verified + 1; i <= index; i++) {
		const struct hpu_stream_job *job = hpu_stream_job_at(s, i);

		ret = hpu_job_wait(s->dev, s->queue, job->seq, 0, &error);
		if (ret)
			return ret;
		if (error && !failed++) {
			first = job;
			first_error = error;
		}
	}
	if (!failed) {
		hpu_stream_advance(s, index);
		return 0;
	}
	if (failed > 1)
		snprintf(more, sizeof(more), "; %llu more jobs of the stream failed",
			 (unsigned long long)failed - 1);
	ret = hpu_error_set(-first_error, "stream %u: job %llu (%s) on queue %u failed: %s%s",
			    s->id, (unsigned long long)first->seq, first->what, s->queue,
			    hpu_job_error_name(first_error, name, sizeof(name)), more);
	s->lost += failed;
	hpu_stream_advance(s, index);
	return ret;
}

/* Whether the device's counters show the point reached with no new failure. */
static bool hpu_settle_quick(const struct hpu_stream *s, const struct hpu_settle *st)
{
	if (st->signal && (int32_t)(hpu_device_word(st->signal) - st->target) < 0)
		return false;
	return hpu_device_word(st->ok) == (uint32_t)(st->ok_through - s->lost);
}

int hpu_stream_settle(struct hpu_stream *s, const struct hpu_settle *st, int64_t timeout_ns)
{
	const struct hpu_stream_job *job;
	int ret, error;

	if (s->verified >= st->index)
		return 0;
	job = hpu_stream_job_at(s, st->index);
	if (hpu_settle_quick(s, st)) {
		hpu_jobs_ended(s->dev, s->queue, job->seq);
	} else {
		ret = hpu_job_wait(s->dev, s->queue, job->seq, timeout_ns, &error);
		if (ret)
			return ret;
		if (error || !hpu_settle_quick(s, st))
			return hpu_stream_scan(s, st->index);
	}
	hpu_stream_advance(s, st->index);
	return 0;
}

int hpu_stream_settle_all(struct hpu_stream *s, int64_t timeout_ns)
{
	const struct hpu_settle st = { .index = s->jobs, .ok = s->done, .ok_through = s->jobs };

	return hpu_stream_settle(s, &st, timeout_ns);
}

int hpu_stream_wait_job(struct hpu_stream *s, uint64_t index)
{
	int error;

	if (index <= s->verified)
		return 0;
	/*
	 * Completed plus reported-failed jobs never exceed the jobs that ended,
	 * and jobs end in order: reaching index there needs no system call.
	 */
	if ((int32_t)(hpu_device_word(s->done) + (uint32_t)s->lost - (uint32_t)index) >= 0)
		return 0;
	return hpu_job_wait(s->dev, s->queue, hpu_stream_job_at(s, index)->seq, HPU_FOREVER,
			    &error);
}

uint64_t hpu_stream_last_seq(const struct hpu_stream *s)
{
	return hpu_stream_job_at(s, s->jobs)->seq;
}

/* With dev->lock held: a stream on the next queue in turn. */
static int hpu_stream_new(struct hpu_device *dev, struct hpu_stream **sp)
{
	struct hpu_stream *s;
	void *done;
	int ret;

	ret = hpu_device_check_submission(dev);
	if (!ret)
		ret = hpu_uqueues_open(dev);
	if (ret)
		return ret;
	s = calloc(1, sizeof(*s));
	if (s)
		s->ring = malloc(HPU_RING_MIN * sizeof(*s->ring));
	if (!s || !s->ring) {
		free(s);
		return hpu_error_set(ENOMEM, "out of memory");
	}
	ret = hpu_pinned_alloc(dev, sizeof(*s->done), &s->done_va, &done);
	if (ret)
		goto err_free;
	/* The slot is not in use by any job (the cache makes sure): start from 0. */
	s->done = done;
	*s->done = 0;
	s->dev = dev;
	s->ring_capacity = HPU_RING_MIN;
	if (dev->stream_hooks) {
		ret = dev->stream_hooks->init(s);
		if (ret)
			goto err_done;
	}
	atomic_init(&s->refs, 1);
	s->id = dev->next_stream_id++;
	s->queue = dev->next_queue++ % dev->num_queues;
	pthread_mutex_init(&s->lock, NULL);
	hpu_list_add_tail(&dev->streams, &s->node);
	*sp = s;
	return 0;

err_done:
	hpu_pinned_free(dev, s->done_va);
err_free:
	free(s->ring);
	free(s);
	return ret;
}

void hpu_stream_get(struct hpu_stream *s)
{
	atomic_fetch_add(&s->refs, 1);
}

/* The last reference frees the stream; its pinned memory waits in the cache for its jobs. */
void hpu_stream_put(struct hpu_stream *s)
{
	if (atomic_fetch_sub(&s->refs, 1) != 1)
		return;
	hpu_pinned_free(s->dev, s->done_va);
	if (s->dev->stream_hooks)
		s->dev->stream_hooks->release(s);
	pthread_mutex_destroy(&s->lock);
	free(s->ring);
	free(s);
}

int hpu_stream_create(struct hpu_device *dev, struct hpu_stream **streamp)
{
	int ret;

	if (!streamp)
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "streamp is NULL"));
	*streamp = NULL;
	if (!dev)
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "dev is NULL"));
	pthread_mutex_lock(&dev->lock);
	ret = hpu_stream_new(dev, streamp);
	pthread_mutex_unlock(&dev->lock);
	return hpu_error_in(__func__, ret);
}

int hpu_stream_default(struct hpu_device *dev, struct hpu_stream **sp)
{
	int ret = 0;

	pthread_mutex_lock(&dev->lock);
	if (!dev->default_stream)
		ret = hpu_stream_new(dev, &dev->default_stream);
	*sp = dev->default_stream;
	pthread_mutex_unlock(&dev->lock);
	return ret;
}

void hpu_stream_destroy(struct hpu_stream *s)
{
	if (!s)
		return;
	/* Recorded ops are enqueued work: they run.  A failure is not reported, as for jobs. */
	pthread_mutex_lock(&s->lock);
	if (s->dev->stream_hooks)
		s->dev->stream_hooks->abort(s);
	hpu_stream_flush(s);
	pthread_mutex_unlock(&s->lock);
	pthread_mutex_lock(&s->dev->lock);
	hpu_list_del(&s->node);
	pthread_mutex_unlock(&s->dev->lock);
	hpu_stream_put(s);
}

void hpu_streams_close(struct hpu_device *dev)
{
	while (!hpu_list_empty(&dev->streams)) {
		struct hpu_stream *s = hpu_container_of(dev->streams.next, struct hpu_stream, node);

		hpu_list_del(&s->node);
		hpu_stream_put(s);
	}
	dev->default_stream = NULL;
}

int hpu_stream_synchronize(struct hpu_stream *s)
{
	int ret;

	if (!s)
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "stream is NULL"));
	pthread_mutex_lock(&s->lock);
	ret = hpu_stream_flush(s);
	if (!ret)
		ret = hpu_stream_settle_all(s, HPU_FOREVER);
	pthread_mutex_unlock(&s->lock);
	return hpu_error_in(__func__, ret);
}

int hpu_stream_query(struct hpu_stream *s)
{
	int ret;

	if (!s)
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "stream is NULL"));
	pthread_mutex_lock(&s->lock);
	ret = hpu_stream_flush(s);
	if (!ret)
		ret = hpu_stream_settle_all(s, 0);
	if (ret == -ETIME)
		ret = hpu_error_set(EAGAIN, "stream %u: work still running", s->id);
	pthread_mutex_unlock(&s->lock);
	return hpu_error_in(__func__, ret);
}

/*
 * Waits for every queue's last job first, so that the work of destroyed
 * streams is done too; then the live streams settle from their counters.
 */
int hpu_device_synchronize(struct hpu_device *dev)
{
	struct hpu_list *it;
	int ret = 0;

	if (!dev)
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "dev is NULL"));
	pthread_mutex_lock(&dev->lock);
	for (it = dev->streams.next; it != &dev->streams && !ret; it = it->next)
		ret = hpu_stream_flush_unlocked(hpu_container_of(it, struct hpu_stream, node));
	pthread_mutex_unlock(&dev->lock);
	hpu_jobs_retired(dev, HPU_RETIRE_WAIT);
	pthread_mutex_lock(&dev->lock);
	for (it = dev->streams.next; it != &dev->streams && !ret; it = it->next) {
		struct hpu_stream *s = hpu_container_of(it, struct hpu_stream, node);

		pthread_mutex_lock(&s->lock);
		ret = hpu_stream_settle_all(s, HPU_FOREVER);
		pthread_mutex_unlock(&s->lock);
	}
	pthread_mutex_unlock(&dev->lock);
	return hpu_error_in(__func__, ret);
}
