/* SPDX-License-Identifier: MIT */
/*
 * User queues: jobs reach the device without a system call, which costs
 * more than a small job's run under emulation (docs/PERFORMANCE.md,
 * bench-dma).
 *
 * When the driver offers them (ABI 1.2), the library takes one user queue
 * per hardware queue index at its first stream, so that streams and recipe
 * launches address them exactly as they would the kernel's queues.
 * Submitting a job copies its command buffer into the queue's arena and its
 * descriptor into the queue's ring, both in pinned memory mapped in this
 * context, and writes the new producer index to the queue's doorbell page.
 * The device writes each job's status into its descriptor before its CI
 * passes it, so learning that a job ended, and how, is a read of memory:
 * only a wait for a job still running past a short spin asks the driver
 * (UQUEUE_WAIT).  The device's own checks keep the jobs inside this context
 * (hpu_regs.h).
 *
 * Sequence numbers are the library's own here, one counter over all the
 * queues as the driver's are for SUBMIT, since the allocators' fences
 * compare them.  When the driver has no user queues left for this process
 * (other processes hold them), or with HPU_USER_QUEUES=0, the library
 * keeps to SUBMIT on the kernel queues.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <drm/hpu_accel.h>
#include <drm/hpu_packets.h>

#include "../submit/submit.h"

/*
 * Descriptors per ring, and bytes of command buffers in flight per queue:
 * a queue's ring and arena are pinned, 264 KiB, so that a device's four
 * fit an ordinary user's RLIMIT_MEMLOCK with room to spare (hpu_host.c).
 */
#define HPU_UQ_ENTRIES 256u
#define HPU_UQ_ARENA (256u << 10)
/* Command buffers start on their own cache line. */
#define HPU_UQ_CB_ALIGN 64u
/* A descriptor's status until the device writes it. */
#define HPU_UQ_PENDING 0xffffffffu
/*
 * How long a wait reads the status before it sleeps in the driver: a short
 * job ends well within it, and a sleeping waiter is woken through an
 * interrupt, which costs an emulated machine more than such a job.
 */
#define HPU_UQ_SPIN_NS 50000u

_Static_assert(HPU_CB_MAX_SIZE < HPU_UQ_ARENA / 2, "a command buffer must fit a half-used arena");

struct hpu_uqueue {
	uint32_t id;
	volatile uint32_t *doorbell; /* the queue's page */
	struct hpu_uq_desc *ring;   /* then the arena, in one pinned block */
	uint64_t ring_va;
	uint8_t *arena;
	uint64_t arena_va;
	/* Under jobs.lock. */
	uint32_t pi;                     /* jobs written (free running) */
	uint32_t reaped;                 /* jobs known to have ended, in order */
	uint32_t head;                   /* arena offset of the next command buffer */
	uint64_t seq[HPU_UQ_ENTRIES];    /* of the job in each slot */
	uint32_t cb_off[HPU_UQ_ENTRIES]; /* arena offset of its command buffer */
};

static int hpu_uq_errno(uint32_t status)
{
	switch (status) {
	case HPU_UQ_STATUS_MMU_FAULT:
		return -EFAULT;
	case HPU_UQ_STATUS_ILLEGAL_PACKET:
	case HPU_UQ_STATUS_BAD_KERNEL:
		return -EINVAL;
	case HPU_UQ_STATUS_PRIV_PACKET:
		return -EPERM;
	case HPU_UQ_STATUS_ABORTED:
		return -ECANCELED;
	default:
		return -EIO;
	}
}

static uint32_t hpu_uq_status(const struct hpu_uqueue *u, uint32_t pos)
{
	return __atomic_load_n(&u->ring[pos % HPU_UQ_ENTRIES].status, __ATOMIC_ACQUIRE);
}

static int hpu_uq_record_error(struct hpu_jobs *jobs, uint64_t seq, int error)
{
	struct hpu_job_error *e;

	if (jobs->num_errors == jobs->cap_errors) {
		size_t cap = jobs->cap_errors ? 2 * jobs->cap_errors : 16;

		e = realloc(jobs->errors, cap * sizeof(*e));
		if (!e)
			return hpu_error_set(ENOMEM, "out of memory");
		jobs->errors = e;
		jobs->cap_errors = cap;
	}
	jobs->errors[jobs->num_errors++] = (struct hpu_job_error){ .seq = seq, .error = error };
	return 0;
}

static int hpu_uq_error_of(const struct hpu_jobs *jobs, uint64_t seq)
{
	size_t i;

	for (i = jobs->num_errors; i-- > 0;)
		if (jobs->errors[i].seq == seq)
			return jobs->errors[i].error;
	return 0;
}

/*
 * Records, in order, the jobs of queue q that have ended: those whose
 * status the device wrote, and, given the CI it reported, those a queue
 * reset dropped without one.
 */
static int hpu_uq_reap_locked(struct hpu_jobs *jobs, unsigned int q, const uint32_t *ci)
{
	struct hpu_uqueue *u = &jobs->uq[q];
	int ret;

	while (u->reaped != u->pi) {
		uint32_t status = hpu_uq_status(u, u->reaped);
		uint64_t seq = u->seq[u->reaped % HPU_UQ_ENTRIES];

		if (status == HPU_UQ_PENDING) {
			if (!ci || (int32_t)(*ci - u->reaped) <= 0)
				break;
			status = HPU_UQ_STATUS_ABORTED;
		}
		if (status) {
			ret = hpu_uq_record_error(jobs, seq, hpu_uq_errno(status));
			if (ret)
				return ret;
		}
		/* The stream's counters may have told a later end already. */
		if (seq > jobs->queue_ended[q])
			jobs->queue_ended[q] = seq;
		u->reaped++;
	}
	return 0;
}

/* Reaps every queue, queue ci_of with the CI read from it (none: num_queues). */
static int hpu_uq_reap_all_locked(struct hpu_jobs *jobs, unsigned int ci_of, uint32_t ci)
{
	unsigned int q;
	int ret = 0;

	for (q = 0; q < jobs->num_queues && !ret; q++)
		ret = hpu_uq_reap_locked(jobs, q, q == ci_of ? &ci : NULL);
	return ret;
}

/* Room for size bytes of command buffer and a descriptor on u: the arena offset, or -1. */
static int64_t hpu_uq_room_locked(struct hpu_uqueue *u, uint32_t size)
{
	uint32_t tail;

	if (u->pi == u->reaped)
		return 0;
	if (u->pi - u->reaped == HPU_UQ_ENTRIES)
		return -1;
	/* In use: [tail, head), wrapping; head == tail only when full. */
	tail = u->cb_off[u->reaped % HPU_UQ_ENTRIES];
	if (u->head > tail) {
		if (u->head + size <= HPU_UQ_ARENA)
			return (int64_t)u->head;
		return size < tail ? 0 : -1;
	}
	return u->head < tail && u->head + size < tail ? (int64_t)u->head : -1;
}

static void hpu_uq_ring_doorbells(struct hpu_jobs *jobs, uint32_t queues)
{
	unsigned int q;

	/* Descriptors and command buffers are in memory before the device is told. */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	for (q = 0; q < jobs->num_queues; q++)
		if (queues & (1u << q))
			jobs->uq[q].doorbell[HPU_UQ_DB_PI / 4] = jobs->uq[q].pi;
}

static uint64_t hpu_uq_deadline(int64_t timeout_ns)
{
	return timeout_ns == HPU_FOREVER ? UINT64_MAX : hpu_now_ns() + (uint64_t)timeout_ns;
}

/*
 * Outside the lock: until job pos of u has a status or CI passed it, or
 * the deadline.  Spins on the status, then sleeps in the driver.  Returns
 * 1 with *ci the CI seen, which tells the jobs a queue reset dropped
 * without a status; 0 once the job has a status, without reading CI (a
 * read of the doorbell page is an exit to the emulator), unless need_ci:
 * the job had one last time yet could not be reaped behind such a job.
 */
static int hpu_uq_block(struct hpu_device *dev, struct hpu_uqueue *u, uint32_t pos,
			uint64_t deadline, bool need_ci, uint32_t *ci)
{
	uint64_t now = hpu_now_ns(), spin_end = now + HPU_UQ_SPIN_NS;
	struct drm_hpu_uqueue_wait args = { .id = u->id, .ci = pos + 1 };
	int ret;

	/* The slot may meanwhile hold a later job: the caller reaps and looks again. */
	while (hpu_uq_status(u, pos) == HPU_UQ_PENDING && now < spin_end && now < deadline)
		now = hpu_now_ns();
	if (!need_ci && hpu_uq_status(u, pos) != HPU_UQ_PENDING)
		return 0;
	*ci = u->doorbell[HPU_UQ_DB_CI / 4];
	if ((int32_t)(*ci - pos) > 0 || hpu_uq_status(u, pos) != HPU_UQ_PENDING)
		return 1;
	if (now >= deadline)
		return -ETIME;
	args.timeout_ns = deadline == UINT64_MAX ? -1 : (int64_t)(deadline - now);
	ret = hpu_ioctl(dev, DRM_IOCTL_HPU_UQUEUE_WAIT, &args);
	*ci = args.ci;
	return ret ? ret : 1;
}

/* The queue and ring position of job seq if it has not been reaped; false if it has. */
static bool hpu_uq_find_locked(const struct hpu_jobs *jobs, uint64_t seq, unsigned int *qp,
			       uint32_t *posp)
{
	unsigned int q;
	uint32_t pos;

	for (q = 0; q < jobs->num_queues; q++) {
		const struct hpu_uqueue *u = &jobs->uq[q];

		/* Sequence numbers grow along a ring. */
		for (pos = u->reaped; pos != u->pi && u->seq[pos % HPU_UQ_ENTRIES] <= seq; pos++) {
			if (u->seq[pos % HPU_UQ_ENTRIES] == seq) {
				*qp = q;
				*posp = pos;
				return true;
			}
		}
	}
	return false;
}

/*
 * Job seq may be on any queue (a stream tracks its recipe launches' engine
 * jobs with its own): it is found by its number, and has ended once no
 * ring holds it unreaped.
 */
int hpu_uqueue_wait(struct hpu_device *dev, uint64_t seq, int64_t timeout_ns, int *job_error)
{
	struct hpu_jobs *jobs = dev->jobs;
	uint64_t deadline = hpu_uq_deadline(timeout_ns);
	/* The queue whose CI is in ci, and the one whose job had a status but was not reaped. */
	unsigned int q, ci_of = jobs->num_queues, status_of = jobs->num_queues;
	uint32_t ci = 0, pos;
	int ret = 0;

	pthread_mutex_lock(&jobs->lock);
	if (seq > jobs->last)
		ret = hpu_error_set(EINVAL, "job %llu was never submitted",
				    (unsigned long long)seq);
	while (!ret) {
		ret = hpu_uq_reap_all_locked(jobs, ci_of, ci);
		if (ret || !hpu_uq_find_locked(jobs, seq, &q, &pos))
			break;
		if (!timeout_ns) {
			ret = -ETIME;
			break;
		}
		pthread_mutex_unlock(&jobs->lock);
		ret = hpu_uq_block(dev, &jobs->uq[q], pos, deadline, q == status_of, &ci);
		ci_of = ret == 1 ? q : jobs->num_queues;
		status_of = ret == 0 ? q : jobs->num_queues;
		ret = ret < 0 ? ret : 0;
		pthread_mutex_lock(&jobs->lock);
	}
	if (!ret)
		*job_error = hpu_uq_error_of(jobs, seq);
	pthread_mutex_unlock(&jobs->lock);
	return ret;
}

bool hpu_uqueues_reap(struct hpu_device *dev)
{
	struct hpu_jobs *jobs = dev->jobs;
	bool user;

	/* Under the lock: any thread may free memory while the first stream picks the queues. */
	pthread_mutex_lock(&jobs->lock);
	user = jobs->uq != NULL;
	/* A job whose error cannot be recorded (no memory) stays unreaped, for a later look. */
	if (user)
		hpu_uq_reap_all_locked(jobs, jobs->num_queues, 0);
	pthread_mutex_unlock(&jobs->lock);
	return user;
}

bool hpu_uqueues_used(const struct hpu_device *dev)
{
	return dev->jobs->uq != NULL;
}

/* Outside the lock: until the oldest job of queue q not yet reaped has ended. */
static int hpu_uq_wait_oldest(struct hpu_device *dev, unsigned int q)
{
	struct hpu_jobs *jobs = dev->jobs;
	uint64_t seq;
	int error;

	pthread_mutex_lock(&jobs->lock);
	seq = jobs->uq[q].seq[jobs->uq[q].reaped % HPU_UQ_ENTRIES];
	pthread_mutex_unlock(&jobs->lock);
	return hpu_uqueue_wait(dev, seq, HPU_FOREVER, &error);
}

int hpu_uqueues_submit(struct hpu_device *dev, const struct hpu_job_cb *cbs, unsigned int count,
		       uint64_t *seqs)
{
	struct hpu_jobs *jobs = dev->jobs;
	uint32_t rung = 0;
	unsigned int i;
	int ret = 0;

	for (i = 0; i < count; i++) {
		if (cbs[i].queue >= jobs->num_queues || !cbs[i].size || cbs[i].size % 8 ||
		    cbs[i].size > HPU_CB_MAX_SIZE)
			return hpu_error_set(EINVAL, "job %u: queue %u, command buffer of %u bytes",
					     i, cbs[i].queue, cbs[i].size);
	}
	pthread_mutex_lock(&jobs->lock);
	for (i = 0; i < count && !ret;) {
		unsigned int q = cbs[i].queue;
		struct hpu_uqueue *u = &jobs->uq[q];
		uint32_t size = (uint32_t)hpu_round_up(cbs[i].size, HPU_UQ_CB_ALIGN);
		int64_t off = hpu_uq_room_locked(u, size);
		uint32_t slot = u->pi % HPU_UQ_ENTRIES;

		if (off < 0) {
			ret = hpu_uq_reap_locked(jobs, q, NULL);
			if (ret || hpu_uq_room_locked(u, size) >= 0)
				continue;
			/* Full of running jobs: the ones written so far must go for room to come. */
			hpu_uq_ring_doorbells(jobs, rung);
			pthread_mutex_unlock(&jobs->lock);
			ret = hpu_uq_wait_oldest(dev, q);
			pthread_mutex_lock(&jobs->lock);
			continue;
		}
		memcpy(u->arena + off, cbs[i].cb, cbs[i].size);
		seqs[i] = ++jobs->last;
		u->ring[slot] = (struct hpu_uq_desc){
			.cb_va = u->arena_va + (uint64_t)off,
			.cb_size = cbs[i].size,
			.tag = seqs[i],
			.status = HPU_UQ_PENDING,
		};
		u->seq[slot] = seqs[i];
		u->cb_off[slot] = (uint32_t)off;
		u->head = (uint32_t)off + size;
		u->pi++;
		jobs->queue_last[q] = seqs[i];
		rung |= 1u << q;
		i++;
	}
	hpu_uq_ring_doorbells(jobs, rung);
	pthread_mutex_unlock(&jobs->lock);
	return ret;
}

static void hpu_uqueue_destroy(struct hpu_device *dev, struct hpu_uqueue *u)
{
	struct drm_hpu_uqueue_destroy args = { .id = u->id };

	if (u->doorbell)
		munmap((void *)u->doorbell, HPU_UQ_DB_PAGE_SIZE);
	hpu_ioctl(dev, DRM_IOCTL_HPU_UQUEUE_DESTROY, &args);
	hpu_pinned_free(dev, u->ring_va);
}

static int hpu_uqueue_create(struct hpu_device *dev, struct hpu_uqueue *u)
{
	struct drm_hpu_uqueue_create args = { .ring_size = HPU_UQ_ENTRIES };
	size_t ring_bytes = HPU_UQ_ENTRIES * sizeof(struct hpu_uq_desc);
	void *host, *page;
	int ret;

	ret = hpu_pinned_alloc(dev, ring_bytes + HPU_UQ_ARENA, &u->ring_va, &host);
	if (ret)
		return ret;
	u->ring = host;
	u->arena = (uint8_t *)host + ring_bytes;
	u->arena_va = u->ring_va + ring_bytes;
	args.ring_va = u->ring_va;
	ret = hpu_ioctl(dev, DRM_IOCTL_HPU_UQUEUE_CREATE, &args);
	if (ret) {
		hpu_pinned_free(dev, u->ring_va);
		return ret;
	}
	u->id = args.id;
	page = mmap(NULL, HPU_UQ_DB_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, dev->fd,
		    (off_t)args.doorbell_offset);
	if (page == MAP_FAILED) {
		ret = hpu_error_errno("mmap of user queue %u's doorbell on %s", u->id,
				      dev->desc.path);
		hpu_uqueue_destroy(dev, u);
		return ret;
	}
	u->doorbell = page;
	return 0;
}

/* Whether to use user queues: the device has enough and the user did not say no. */
static bool hpu_uqueues_wanted(struct hpu_device *dev)
{
	const char *env = getenv("HPU_USER_QUEUES");

	return dev->num_queues && dev->num_user_queues >= dev->num_queues &&
	       !(env && !strcmp(env, "0"));
}

/*
 * At the first stream rather than at open: a process that only asks what
 * the device is (hpu-smi) takes none of the device's few user queues.
 */
int hpu_uqueues_open(struct hpu_device *dev)
{
	struct hpu_jobs *jobs = dev->jobs;
	struct hpu_uqueue *uq;
	unsigned int q;
	int ret = 0;

	if (jobs->uq_decided)
		return 0;
	if (!hpu_uqueues_wanted(dev)) {
		jobs->uq_decided = true;
		return 0;
	}
	uq = calloc(jobs->num_queues, sizeof(*uq));
	if (!uq)
		return hpu_error_set(ENOMEM, "out of memory");
	for (q = 0; q < jobs->num_queues && !ret; q++)
		ret = hpu_uqueue_create(dev, &uq[q]);
	if (ret) {
		while (--q > 0)
			hpu_uqueue_destroy(dev, &uq[q - 1]);
		free(uq);
		/* Other processes hold the device's user queues: this one submits through the driver. */
		if (ret != -ENOSPC)
			return ret;
		uq = NULL;
	}
	/* Set under jobs.lock: waits of other threads read it there. */
	pthread_mutex_lock(&jobs->lock);
	jobs->uq = uq;
	jobs->uq_decided = true;
	pthread_mutex_unlock(&jobs->lock);
	return 0;
}

/* Once every job has ended. */
void hpu_uqueues_close(struct hpu_device *dev)
{
	struct hpu_jobs *jobs = dev->jobs;
	unsigned int q;

	if (!jobs->uq)
		return;
	for (q = 0; q < jobs->num_queues; q++)
		hpu_uqueue_destroy(dev, &jobs->uq[q]);
	free(jobs->uq);
	jobs->uq = NULL;
	free(jobs->errors);
	jobs->errors = NULL;
}
