/* SPDX-License-Identifier: MIT */
/*
 * Events.  Each event owns a slot of pinned host memory.  Recording it
 * submits one job on the stream that, after the work before it:
 *   copies the stream's done counter into the slot (how many of the
 *   stream's jobs up to here completed: the point's failure check),
 *   writes the device clock into the slot (for elapsed times),
 *   adds 1 to the slot's signal (the event has completed).
 * The host reads all three without a system call.  Other streams wait for
 * the event with a WAIT packet on the signal, so cross-stream ordering costs
 * the waiting stream one job and the host nothing.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#include "../submit/submit.h"

struct hpu_event_slot {
	uint64_t timestamp; /* device clock (ns) when the last record ran */
	uint32_t signal;    /* records that ran */
	uint32_t ok;        /* the stream's done counter when the last record ran */
};

struct hpu_event {
	struct hpu_device *dev;
	struct hpu_list node; /* in dev->events */
	uint64_t slot_va;
	struct hpu_event_slot *slot;
	pthread_mutex_t lock; /* below */
	uint32_t records;           /* the signal the last record brings the slot to */
	struct hpu_stream *stream;  /* of the last record (a reference), NULL if none */
	uint64_t index;             /* the last record's job in the stream */
};

/* Wraps after 2^32 records of one event; the WAIT packet compares without wrapping. */
static bool hpu_event_reached(const struct hpu_event *ev, uint32_t target)
{
	return (int32_t)(hpu_device_word(&ev->slot->signal) - target) >= 0;
}

static void hpu_event_free(struct hpu_event *ev)
{
	if (ev->stream)
		hpu_stream_put(ev->stream);
	/* The cache keeps the slot until the jobs that write or wait on it have ended. */
	hpu_pinned_free(ev->dev, ev->slot_va);
	pthread_mutex_destroy(&ev->lock);
	free(ev);
}

int hpu_event_create(struct hpu_device *dev, struct hpu_event **eventp)
{
	struct hpu_event *ev;
	void *slot;
	int ret;

	if (!eventp)
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "eventp is NULL"));
	*eventp = NULL;
	if (!dev)
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "dev is NULL"));
	ret = hpu_device_check_submission(dev);
	if (ret)
		return hpu_error_in(__func__, ret);
	ev = calloc(1, sizeof(*ev));
	if (!ev)
		return hpu_error_in(__func__, hpu_error_set(ENOMEM, "out of memory"));
	ret = hpu_pinned_alloc(dev, sizeof(*ev->slot), &ev->slot_va, &slot);
	if (ret) {
		free(ev);
		return hpu_error_in(__func__, ret);
	}
	ev->slot = slot;
	*ev->slot = (struct hpu_event_slot){ 0 };
	ev->dev = dev;
	pthread_mutex_init(&ev->lock, NULL);
	pthread_mutex_lock(&dev->lock);
	hpu_list_add_tail(&dev->events, &ev->node);
	pthread_mutex_unlock(&dev->lock);
	*eventp = ev;
	return 0;
}

void hpu_event_destroy(struct hpu_event *ev)
{
	if (!ev)
		return;
	pthread_mutex_lock(&ev->dev->lock);
	hpu_list_del(&ev->node);
	pthread_mutex_unlock(&ev->dev->lock);
	hpu_event_free(ev);
}

void hpu_events_close(struct hpu_device *dev)
{
	while (!hpu_list_empty(&dev->events)) {
		struct hpu_event *ev = hpu_container_of(dev->events.next, struct hpu_event, node);

		hpu_list_del(&ev->node);
		hpu_event_free(ev);
	}
}

static int hpu_event_check(const struct hpu_event *ev, const struct hpu_stream *s)
{
	if (!ev || !s)
		return hpu_error_set(EINVAL, "%s is NULL", ev ? "stream" : "event");
	if (ev->dev != s->dev)
		return hpu_error_set(EINVAL, "event and stream belong to different devices");
	return 0;
}

int hpu_event_record(struct hpu_event *ev, struct hpu_stream *s)
{
	struct hpu_stream *old = NULL;
	struct hpu_cb cb;
	int ret;

	ret = hpu_event_check(ev, s);
	if (ret)
		return hpu_error_in(__func__, ret);
	hpu_cb_init(&cb);
	hpu_cb_copy(&cb, ev->slot_va + offsetof(struct hpu_event_slot, ok), s->done_va,
		    sizeof(ev->slot->ok));
	hpu_cb_timestamp(&cb, ev->slot_va + offsetof(struct hpu_event_slot, timestamp));
	hpu_cb_signal(&cb, ev->slot_va + offsetof(struct hpu_event_slot, signal), 1);
	pthread_mutex_lock(&s->lock);
	pthread_mutex_lock(&ev->lock);
	ret = hpu_stream_submit(s, &cb, __func__);
	if (!ret) {
		old = ev->stream;
		hpu_stream_get(s);
		ev->stream = s;
		ev->index = s->jobs;
		ev->records++;
	}
	pthread_mutex_unlock(&ev->lock);
	pthread_mutex_unlock(&s->lock);
	if (old)
		hpu_stream_put(old);
	return hpu_error_in(__func__, ret);
}

/*
 * Settles the stream at the event's point: the record's signal shows it
 * ran, and the counter it copied shows whether the jobs before it failed.
 */
static int hpu_event_settle(struct hpu_event *ev, int64_t timeout_ns)
{
	struct hpu_settle st = { 0 };
	struct hpu_stream *s;
	int ret;

	pthread_mutex_lock(&ev->lock);
	s = ev->stream;
	if (s) {
		hpu_stream_get(s);
		st = (struct hpu_settle){
			.index = ev->index,
			.ok = &ev->slot->ok,
			.ok_through = ev->index - 1,
			.signal = &ev->slot->signal,
			.target = ev->records,
		};
	}
	pthread_mutex_unlock(&ev->lock);
	if (!s)
		return 0;
	pthread_mutex_lock(&s->lock);
	ret = hpu_stream_settle(s, &st, timeout_ns);
	pthread_mutex_unlock(&s->lock);
	hpu_stream_put(s);
	if (ret == -ETIME)
		ret = hpu_error_set(EAGAIN, "the event has not completed");
	return ret;
}

int hpu_event_synchronize(struct hpu_event *ev)
{
	if (!ev)
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "event is NULL"));
	return hpu_error_in(__func__, hpu_event_settle(ev, HPU_FOREVER));
}

int hpu_event_query(struct hpu_event *ev)
{
	if (!ev)
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "event is NULL"));
	return hpu_error_in(__func__, hpu_event_settle(ev, 0));
}

static int hpu_event_completed(struct hpu_event *ev, const char *name)
{
	bool recorded;
	int ret;

	pthread_mutex_lock(&ev->lock);
	recorded = ev->stream;
	pthread_mutex_unlock(&ev->lock);
	if (!recorded)
		return hpu_error_set(EINVAL, "%s was never recorded", name);
	ret = hpu_event_settle(ev, 0);
	if (ret == -EAGAIN)
		ret = hpu_error_set(EAGAIN, "%s has not completed", name);
	return ret;
}

int hpu_event_elapsed_time(struct hpu_event *start, struct hpu_event *end, int64_t *ns)
{
	int ret = 0;

	if (!start || !end || !ns)
		ret = hpu_error_set(EINVAL, "%s is NULL", !start ? "start" : !end ? "end" : "ns");
	else if (start->dev != end->dev)
		ret = hpu_error_set(EINVAL, "start and end belong to different devices");
	if (!ret)
		ret = hpu_event_completed(start, "start");
	if (!ret)
		ret = hpu_event_completed(end, "end");
	if (!ret)
		*ns = (int64_t)(end->slot->timestamp - start->slot->timestamp);
	return hpu_error_in(__func__, ret);
}

int hpu_stream_wait_event(struct hpu_stream *s, struct hpu_event *ev)
{
	struct hpu_cb cb;
	uint32_t target;
	bool needed;
	int ret;

	ret = hpu_event_check(ev, s);
	if (ret)
		return hpu_error_in(__func__, ret);
	/* Not recorded, recorded on this very stream, or complete: order holds already. */
	pthread_mutex_lock(&ev->lock);
	target = ev->records;
	needed = ev->stream && ev->stream != s && !hpu_event_reached(ev, target);
	pthread_mutex_unlock(&ev->lock);
	if (!needed)
		return 0;
	hpu_cb_init(&cb);
	hpu_cb_wait(&cb, ev->slot_va + offsetof(struct hpu_event_slot, signal), target);
	pthread_mutex_lock(&s->lock);
	ret = hpu_stream_submit(s, &cb, __func__);
	pthread_mutex_unlock(&s->lock);
	return hpu_error_in(__func__, ret);
}
