/* SPDX-License-Identifier: MIT */
/*
 * libhpu's submission layer: command buffers, jobs on the device's queues
 * (through SUBMIT or user queues), streams and events, and copies.
 */
#ifndef HPU_SUBMIT_H
#define HPU_SUBMIT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "../mem/mem.h"

/* hpu_cb.c: command buffers, the packets of uapi/drm/hpu_packets.h. */

/* Room for the largest job libhpu builds (a linear op: a launch, a GEMM and the signal). */
#define HPU_CB_CAPACITY 256u

struct hpu_cb {
	uint32_t size; /* bytes used */
	uint64_t buf[HPU_CB_CAPACITY / 8];
};

void hpu_cb_init(struct hpu_cb *cb);
void hpu_cb_copy(struct hpu_cb *cb, uint64_t dst, uint64_t src, uint64_t size);
void hpu_cb_fill(struct hpu_cb *cb, uint64_t dst, uint8_t value, uint64_t size);
void hpu_cb_signal(struct hpu_cb *cb, uint64_t addr, uint32_t value);
void hpu_cb_wait(struct hpu_cb *cb, uint64_t addr, uint32_t value);
void hpu_cb_timestamp(struct hpu_cb *cb, uint64_t addr);
void hpu_cb_tpc_launch(struct hpu_cb *cb, uint64_t params, uint32_t params_size);
/* gemm: a struct hpu_pkt_mme_gemm, header included (built by hpu_gemm_encode()). */
void hpu_cb_gemm(struct hpu_cb *cb, const void *gemm);
void hpu_cb_call(struct hpu_cb *cb, uint64_t addr, uint64_t size);
/* Bytes of the packet starting with header (0 for an unknown opcode). */
uint32_t hpu_pkt_size(uint32_t header);

/*
 * hpu_jobs.c: submitting jobs and knowing which have ended.  The driver
 * numbers a file's jobs in one sequence across all queues, and a queue runs
 * its jobs in order, so "job s of queue q has ended" means every earlier job
 * of q has too.  That is all the library needs to remember: per queue, the
 * last job submitted and the last known to have ended (dev->jobs).
 */

/* A failed job of a user queue, until the process closes the device. */
struct hpu_job_error {
	uint64_t seq;
	int error;
};

struct hpu_uqueue;

struct hpu_jobs {
	pthread_mutex_t lock;
	unsigned int num_queues;
	uint64_t last;         /* the file's last job */
	uint64_t *queue_last;  /* per queue, 0 if none */
	uint64_t *queue_ended; /* per queue: it and every earlier job of the queue have ended */
	/* User queues (hpu_uqueue.c), one per queue index; NULL: jobs go through SUBMIT. */
	struct hpu_uqueue *uq;
	bool uq_decided;       /* the first stream has chosen between uq and SUBMIT */
	struct hpu_job_error *errors;
	size_t num_errors, cap_errors;
};

int hpu_jobs_init(struct hpu_device *dev, unsigned int num_queues);
void hpu_jobs_fini(struct hpu_device *dev);
int hpu_job_submit(struct hpu_device *dev, uint32_t queue, const struct hpu_cb *cb, uint64_t *seq);
/* Jobs submitted together, in one SUBMIT (or at once to user queues); seqs[i] is job i's. */
struct hpu_job_cb {
	uint32_t queue;
	const void *cb;
	uint32_t size;
};
int hpu_jobs_submit(struct hpu_device *dev, const struct hpu_job_cb *jobs, unsigned int count,
		    uint64_t *seqs);
/*
 * Waits up to timeout_ns (0 polls) for job seq of queue: 0 once it ended,
 * with its error (0 or -errno) in *job_error; -ETIME if it has not.
 */
int hpu_job_wait(struct hpu_device *dev, uint32_t queue, uint64_t seq, int64_t timeout_ns,
		 int *job_error);
/* Records that job seq of queue has ended, learnt without asking the driver. */
void hpu_jobs_ended(struct hpu_device *dev, uint32_t queue, uint64_t seq);
/*
 * The fence of work submitted so far, and the largest fence whose work has
 * ended.  ctx is a struct hpu_device: they are the memory layer's hpu_jobs_retire.
 */
uint64_t hpu_jobs_fence(void *ctx);
uint64_t hpu_jobs_retired(void *ctx, enum hpu_retire how);
extern const struct hpu_retire_ops hpu_jobs_retire;

/* hpu_uqueue.c: user queues, when the driver has them (jobs.uq). */

/*
 * With dev->lock held, at the first stream: takes num_queues user queues,
 * or none (all taken, HPU_USER_QUEUES=0), and jobs go through SUBMIT.
 */
int hpu_uqueues_open(struct hpu_device *dev);
void hpu_uqueues_close(struct hpu_device *dev);
int hpu_uqueues_submit(struct hpu_device *dev, const struct hpu_job_cb *jobs, unsigned int count,
		       uint64_t *seqs);
int hpu_uqueue_wait(struct hpu_device *dev, uint64_t seq, int64_t timeout_ns, int *job_error);
/* Records the ends the status words show, without waiting; false if jobs go through SUBMIT. */
bool hpu_uqueues_reap(struct hpu_device *dev);
/* Whether jobs go to user queues (false until the first stream decides). */
bool hpu_uqueues_used(const struct hpu_device *dev);
/* "MMU fault (-EFAULT)" for a job's error. */
const char *hpu_job_error_name(int error, char *buf, size_t len);

/* hpu_stream.c */

struct hpu_stream_job {
	uint64_t seq;
	const char *what; /* the call that enqueued it */
};

struct hpu_param_ring;
struct hpu_recording;

struct hpu_stream {
	struct hpu_device *dev;
	struct hpu_list node; /* in dev->streams while the user holds it */
	atomic_uint refs;     /* the user's, and one per event recorded on it last */
	unsigned int id;
	uint32_t queue;
	pthread_mutex_t lock; /* everything below */
	/* Every job of the stream ends by adding 1 here, unless it failed. */
	uint64_t done_va;
	uint32_t *done;
	uint64_t jobs;     /* submitted */
	uint64_t verified; /* jobs known to have ended, their failures reported */
	uint64_t lost;     /* failed jobs among the verified */
	/* Jobs verified + 1 .. jobs, oldest at ring[head]; capacity a power of two. */
	struct hpu_stream_job *ring;
	size_t ring_capacity, ring_head;
	/* What the layers above keep on the stream (their types are theirs), under the lock too. */
	struct hpu_param_ring *params;   /* ops/hpu_launch.c's, from the first kernel on */
	struct hpu_recording *recording; /* graph/hpu_lazy.c's: lazy mode's ops, a capture */
};

/*
 * A point of a stream to settle: job `index` has ended, and the failures
 * among the stream's jobs up to it are reported.  The device tells without
 * a system call when *ok (its count of the stream's jobs that completed, up
 * to job ok_through) shows no failure and, if signal is set, *signal has
 * reached target (job `index` itself completed).
 */
struct hpu_settle {
	uint64_t index;
	const uint32_t *ok;
	uint64_t ok_through;
	const uint32_t *signal;
	uint32_t target;
};

/*
 * What the layers above hold back on a stream (lazy mode's recorded ops, a
 * capture, parameter blocks): hooks they set on the device at open
 * (dev->stream_hooks, NULL in host tests), so that submission never calls up.
 */
struct hpu_stream_hooks {
	/* At the stream's creation: sets up what the layers above keep on it, or fails it. */
	int (*init)(struct hpu_stream *s);
	/*
	 * With s->lock held: runs what s holds back, as everything that needs the
	 * stream's work done or ordered does first; -EBUSY while it captures.
	 */
	int (*flush)(struct hpu_stream *s);
	/* With s->lock held, for a stream the user destroys: its capture fails. */
	void (*abort)(struct hpu_stream *s);
	/* At the stream's last reference: frees what the layers above keep on it. */
	void (*release)(struct hpu_stream *s);
};

/* The stream's lock is held for these.  A submit first flushes (hpu_stream_flush()). */
int hpu_stream_flush(struct hpu_stream *s);
int hpu_stream_submit(struct hpu_stream *stream, struct hpu_cb *cb, const char *what);
/*
 * Submits jobs together, the last on the stream's queue; each must end by
 * adding 1 to the stream's done counter, and all count as the stream's.
 */
int hpu_stream_submit_group(struct hpu_stream *stream, const struct hpu_job_cb *jobs,
			    unsigned int count, const char *what);
int hpu_stream_settle(struct hpu_stream *stream, const struct hpu_settle *settle,
		      int64_t timeout_ns);
/* Settles everything submitted on the stream. */
int hpu_stream_settle_all(struct hpu_stream *stream, int64_t timeout_ns);
/* Waits for job index to end, ignoring its failure (a later settle reports it). */
int hpu_stream_wait_job(struct hpu_stream *stream, uint64_t index);
/* The device's number of the stream's last job. */
uint64_t hpu_stream_last_seq(const struct hpu_stream *stream);

void hpu_stream_get(struct hpu_stream *stream);
void hpu_stream_put(struct hpu_stream *stream);
/* The stream of the synchronous copies, created on first use. */
int hpu_stream_default(struct hpu_device *dev, struct hpu_stream **streamp);
/* For hpu_device_close(): destroys the streams the user still holds. */
void hpu_streams_close(struct hpu_device *dev);

/* hpu_copy.c: copies, pageable ones through the device's staging buffer (dev->staging). */

/*
 * The device's staging buffer: pageable copies of every stream go through
 * its two halves, one filling while the device copies the other, one copy
 * at a time.  One buffer, not one per stream, so that what a process pins
 * does not grow with its streams (RLIMIT_MEMLOCK).
 */
struct hpu_staging {
	pthread_mutex_t lock; /* everything below */
	uint64_t half;        /* bytes of each half, from the pinning limit */
	uint64_t va;          /* allocated on first use */
	uint8_t *host;
	/* The last job that used each half: seq 0 if none. */
	struct {
		uint64_t seq, index; /* the device's number, the stream's */
		unsigned int stream; /* id */
		uint32_t queue;
	} last[2];
};

/* half: bytes of each half, as hpu_host_init() sized them. */
int hpu_staging_init(struct hpu_device *dev, uint64_t half);
void hpu_staging_fini(struct hpu_device *dev);

/* hpu_event.c */

void hpu_events_close(struct hpu_device *dev);

#endif /* HPU_SUBMIT_H */
