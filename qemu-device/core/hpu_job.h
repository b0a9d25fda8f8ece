/* SPDX-License-Identifier: MIT */
/*
 * hpu job: one descriptor's command buffer as the engine runs it, and how
 * it failed.  Owned by the engine thread; see hpu_qman.h for the lifecycle.
 */
#ifndef HPU_JOB_H
#define HPU_JOB_H

#include <stdbool.h>
#include <stdint.h>

#include "hpu_hbm.h"
#include "hpu_packets.h"
#include "hpu_regs.h"

#define HPU_JOB_CB_MAX (HPU_CB_MAX_SIZE + HPU_QUEUE_TAIL_MAX)

struct hpu_dev_core;

struct hpu_job {
	struct hpu_dev_core *core;
	struct hpu_hbm *hbm; /* referenced while the engine runs the job */
	unsigned int queue;
	uint32_t gen;        /* core generation when the step began: a reset abandons the job */
	uint64_t tag;
	uint32_t asid;
	uint32_t cb_size;
	uint32_t priv_offset;
	uint32_t pos;        /* offset of the packet to run next (a stalled WAIT stays there) */
	uint32_t engine;     /* HPU_ENGINE_* of the packet running, named in its event */
	bool signalled;      /* a SIGNAL ran: waiting queues must look again */
	/* Why the job failed: enum hpu_event_type (0 while it has not) and the address reported. */
	uint32_t fault;
	uint64_t fault_addr;
	uint8_t cb[HPU_JOB_CB_MAX];
};

/* Record a failure; returns -1 for the caller to pass up. */
static inline int hpu_job_fail(struct hpu_job *job, uint32_t type, uint64_t addr)
{
	job->fault = type;
	job->fault_addr = addr;
	return -1;
}

/* The queue was reset or the device reset since the step began (any thread may have done it). */
bool hpu_job_cancelled(const struct hpu_job *job);

#endif /* HPU_JOB_H */
