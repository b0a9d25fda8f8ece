/* SPDX-License-Identifier: MIT */
/*
 * Jobs: submitting command buffers to hardware queues, waiting for them, and
 * remembering which have ended so that freed memory can be reused without
 * asking the driver (see struct hpu_jobs).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <drm/hpu_accel.h>

#include "../submit/submit.h"

int hpu_jobs_init(struct hpu_device *dev, unsigned int num_queues)
{
	/* A driver without queues gets no streams, but the tracker stays valid. */
	size_t n = num_queues ? num_queues : 1;
	struct hpu_jobs *jobs;

	jobs = calloc(1, sizeof(*jobs));
	if (!jobs)
		return hpu_error_set(ENOMEM, "out of memory");
	dev->jobs = jobs;
	jobs->num_queues = num_queues;
	pthread_mutex_init(&jobs->lock, NULL);
	jobs->queue_last = calloc(n, sizeof(*jobs->queue_last));
	jobs->queue_ended = calloc(n, sizeof(*jobs->queue_ended));
	if (!jobs->queue_last || !jobs->queue_ended) {
		hpu_jobs_fini(dev);
		return hpu_error_set(ENOMEM, "out of memory");
	}
	return 0;
}

void hpu_jobs_fini(struct hpu_device *dev)
{
	struct hpu_jobs *jobs = dev->jobs;

	pthread_mutex_destroy(&jobs->lock);
	free(jobs->queue_last);
	free(jobs->queue_ended);
	free(jobs);
	dev->jobs = NULL;
}

int hpu_jobs_submit(struct hpu_device *dev, const struct hpu_job_cb *cbs, unsigned int count,
		    uint64_t *seqs)
{
	struct hpu_jobs *jobs = dev->jobs;
	/* Only the first count entries are filled (each whole): no memset of all of them. */
	struct drm_hpu_job job[DRM_HPU_SUBMIT_MAX_JOBS];
	struct drm_hpu_submit args = {
		.jobs_ptr = (uintptr_t)job,
		.num_jobs = count,
	};
	unsigned int i;
	int ret;

	if (count > DRM_HPU_SUBMIT_MAX_JOBS)
		return hpu_error_set(E2BIG, "%u jobs in one submission, at most %u", count,
				     DRM_HPU_SUBMIT_MAX_JOBS);
	if (jobs->uq)
		return hpu_uqueues_submit(dev, cbs, count, seqs);
	for (i = 0; i < count; i++)
		job[i] = (struct drm_hpu_job){ .cb_ptr = (uintptr_t)cbs[i].cb,
					       .cb_size = cbs[i].size, .queue = cbs[i].queue };
	/* The driver copies the command buffers in: they may be reused on return. */
	ret = hpu_ioctl(dev, DRM_IOCTL_HPU_SUBMIT, &args);
	if (ret)
		return ret;
	/* The jobs got consecutive numbers, the last args.seq. */
	pthread_mutex_lock(&jobs->lock);
	if (args.seq > jobs->last)
		jobs->last = args.seq;
	for (i = 0; i < count; i++) {
		seqs[i] = args.seq - (count - 1 - i);
		if (seqs[i] > jobs->queue_last[cbs[i].queue])
			jobs->queue_last[cbs[i].queue] = seqs[i];
	}
	pthread_mutex_unlock(&jobs->lock);
	return 0;
}

int hpu_job_submit(struct hpu_device *dev, uint32_t queue, const struct hpu_cb *cb, uint64_t *seq)
{
	const struct hpu_job_cb job = { .queue = queue, .cb = cb->buf, .size = cb->size };

	return hpu_jobs_submit(dev, &job, 1, seq);
}

void hpu_jobs_ended(struct hpu_device *dev, uint32_t queue, uint64_t seq)
{
	struct hpu_jobs *jobs = dev->jobs;

	pthread_mutex_lock(&jobs->lock);
	if (seq > jobs->queue_ended[queue])
		jobs->queue_ended[queue] = seq;
	pthread_mutex_unlock(&jobs->lock);
}

int hpu_job_wait(struct hpu_device *dev, uint32_t queue, uint64_t seq, int64_t timeout_ns,
		 int *job_error)
{
	struct drm_hpu_wait args = { .seq = seq, .timeout_ns = timeout_ns };
	int ret;

	if (dev->jobs->uq)
		return hpu_uqueue_wait(dev, seq, timeout_ns, job_error);
	ret = hpu_ioctl(dev, DRM_IOCTL_HPU_WAIT, &args);
	if (ret)
		return ret;
	hpu_jobs_ended(dev, queue, seq);
	*job_error = args.error;
	return 0;
}

uint64_t hpu_jobs_fence(void *ctx)
{
	struct hpu_device *dev = ctx;
	uint64_t last;

	pthread_mutex_lock(&dev->jobs->lock);
	last = dev->jobs->last;
	pthread_mutex_unlock(&dev->jobs->lock);
	return last;
}

/* Asks the driver about the last job of every queue not known to be idle. */
static void hpu_jobs_refresh(struct hpu_device *dev, int64_t timeout_ns)
{
	struct hpu_jobs *jobs = dev->jobs;
	uint64_t last, ended;
	unsigned int q;
	int job_error;

	for (q = 0; q < jobs->num_queues; q++) {
		pthread_mutex_lock(&jobs->lock);
		last = jobs->queue_last[q];
		ended = jobs->queue_ended[q];
		pthread_mutex_unlock(&jobs->lock);
		/* Not ended yet, or the device is gone: the answer stays "not known". */
		if (last > ended)
			hpu_job_wait(dev, q, last, timeout_ns, &job_error);
	}
}

/*
 * Every job up to the returned sequence number has ended: on an idle queue
 * all have, on a busy one those up to its last known to have ended.
 */
uint64_t hpu_jobs_retired(void *ctx, enum hpu_retire how)
{
	struct hpu_device *dev = ctx;
	struct hpu_jobs *jobs = dev->jobs;
	uint64_t retired;
	unsigned int q;

	/* User queues' jobs tell their end in memory: even KNOWN looks, as it costs no system call. */
	if (how == HPU_RETIRE_WAIT)
		hpu_jobs_refresh(dev, HPU_FOREVER);
	else if (!hpu_uqueues_reap(dev) && how == HPU_RETIRE_POLL)
		hpu_jobs_refresh(dev, 0);
	pthread_mutex_lock(&jobs->lock);
	retired = jobs->last;
	for (q = 0; q < jobs->num_queues; q++) {
		if (jobs->queue_ended[q] < jobs->queue_last[q] && jobs->queue_ended[q] < retired)
			retired = jobs->queue_ended[q];
	}
	pthread_mutex_unlock(&jobs->lock);
	return retired;
}

const struct hpu_retire_ops hpu_jobs_retire = {
	.fence = hpu_jobs_fence,
	.retired = hpu_jobs_retired,
};

/* The errors of uapi/drm/hpu_accel.h's DRM_IOCTL_HPU_WAIT. */
const char *hpu_job_error_name(int error, char *buf, size_t len)
{
	static const struct {
		int error;
		const char *symbol, *meaning;
	} known[] = {
		{ -EFAULT, "EFAULT", "MMU fault" },
		{ -EPERM, "EPERM", "privileged packet in a called command buffer" },
		{ -EINVAL, "EINVAL", "illegal packet or kernel parameters" },
		{ -EIO, "EIO", "DMA error" },
		{ -ECANCELED, "ECANCELED", "aborted" },
		{ -ETIMEDOUT, "ETIMEDOUT", "killed after the job timeout" },
	};
	size_t i;

	for (i = 0; i < HPU_ARRAY_SIZE(known) && known[i].error != error; i++)
		;
	if (i < HPU_ARRAY_SIZE(known))
		snprintf(buf, len, "%s (-%s)", known[i].meaning, known[i].symbol);
	else
		snprintf(buf, len, "%s (%d)", strerror(-error), error);
	return buf;
}
