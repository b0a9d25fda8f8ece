/* SPDX-License-Identifier: MIT */
/*
 * hpu job: one descriptor's command buffer as the engine runs it, and how
 * it failed.  Owned by the engine thread; see hdm_qman.h for the lifecycle.
 */
#ifndef HDM_JOB_H
#define HDM_JOB_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hdm_hbm.h"
#include "hpu_packets.h"
#include "hpu_regs.h"

#define HDM_JOB_CB_MAX (HPU_CB_MAX_SIZE + HPU_QUEUE_TAIL_MAX)

/* Bytes of a callee fetched at once: a CALL may name 64 MiB, which is never copied whole. */
#define HDM_CALL_WINDOW (64u << 10)

/* Bytes of what a compute packet decoded to, kept while it yields (hdm_job_resume()). */
#define HDM_JOB_DECODED_MAX 2304u

struct hdm_core;
struct hdm_tmem_set;

/* The callee of the CALL at job->pos while it runs, and the window fetched of it. */
struct hdm_job_call {
	uint64_t addr;    /* device VA */
	uint64_t size;    /* 0: no callee is running */
	uint64_t pos;     /* offset of its packet to run next (a stalled WAIT stays there) */
	uint64_t win_off; /* callee offset of win[0] */
	uint32_t win_len; /* bytes of win fetched; 0 fetches again */
	uint8_t win[HDM_CALL_WINDOW];
};

struct hdm_job {
	struct hdm_core *core;
	struct hdm_hbm *hbm; /* referenced while the engine runs the job */
	unsigned int queue;  /* the engine's number of it, see hdm_qman.h */
	uint32_t gen;        /* core generation when the step began: a reset abandons the job */
	/*
	 * Monotonic time the step's slice ends at (hdm_job_slice_over()); any
	 * thread of the step reads and moves it, atomically.
	 */
	uint64_t yield_ns;
	/*
	 * How far the packet at pos got when it yielded: bytes a LIN_DMA moved,
	 * parts of a TPC_LAUNCH or blocks of an MME_GEMM done; else 0.
	 */
	uint64_t moved;
	struct hdm_tmem_set *held; /* the staging buffers the packet at pos kept as it yielded */
	void *scratch;             /* and its kernel's scratch (hdm_kstate.scratch), */
	uint64_t scratch_len;      /* of these bytes */
	uint64_t slot;       /* its descriptor: a bus address, or on a user queue a VA of asid */
	uint64_t tag;
	uint32_t asid;
	uint32_t cb_size;
	uint32_t priv_offset;
	uint32_t pos;        /* offset of the packet to run next; a stalled WAIT or CALL stays */
	struct hdm_job_call call;
	uint32_t engine;     /* HPU_ENGINE_* of the packet running, named in its event */
	bool signalled;      /* a SIGNAL ran since waiting queues last looked again */
	/* Why the job failed: enum hpu_event_type (0 while it has not) and the address reported. */
	uint32_t fault;
	uint64_t fault_addr;
	/* What the compute packet at pos decoded to when it yielded; decoded_len 0: nothing. */
	uint32_t decoded_len;
	uint8_t decoded[HDM_JOB_DECODED_MAX];
	uint8_t cb[HDM_JOB_CB_MAX];
};

/* Record a failure; returns -1 for the caller to pass up. */
static inline int hdm_job_fail(struct hdm_job *job, uint32_t type, uint64_t addr)
{
	job->fault = type;
	job->fault_addr = addr;
	return -1;
}

/*
 * How much of the compute packet at pos is done: job->moved if the packet
 * decodes now (len bytes at decoded, no padding) to what it did when it
 * yielded, else 0 and it starts over: the guest may have rewritten it or
 * its parameters meanwhile.  The progress is spent either way; only a
 * yield (hdm_job_suspend()) saves it again.
 */
static inline uint64_t hdm_job_resume(struct hdm_job *job, const void *decoded, uint32_t len)
{
	bool same = len == job->decoded_len && !memcmp(job->decoded, decoded, len);
	uint64_t done = job->moved;

	job->moved = 0;
	job->decoded_len = 0;
	return same ? done : 0;
}

/* The compute packet at pos, decoded as decoded says, yields with done (> 0) of its work done. */
static inline void hdm_job_suspend(struct hdm_job *job, const void *decoded, uint32_t len,
				   uint64_t done)
{
	memcpy(job->decoded, decoded, len);
	job->decoded_len = len;
	job->moved = done;
}

/* The kernel scratch the job kept is not taken back: the launch ended, or another runs. */
static inline void hdm_job_drop_scratch(struct hdm_job *job)
{
	free(job->scratch);
	job->scratch = NULL;
	job->scratch_len = 0;
}

/* The queue was reset or the device reset since the step began (any thread may have done it). */
bool hdm_job_cancelled(const struct hdm_job *job);

/*
 * Whether the step yields now (between two packets, DMA steps, parts or
 * GEMM steps): its slice is over and another queue has a job ready.  With
 * none ready the slice starts again instead: a yield would only drain the
 * pool and decode the packet again.  Any thread of the step may ask; past
 * the slice it takes the core lock.
 */
bool hdm_job_slice_over(struct hdm_job *job);

/* The step goes on for ns at least from now before it yields. */
void hdm_job_slice_extend(struct hdm_job *job, uint64_t ns);

#endif /* HDM_JOB_H */
