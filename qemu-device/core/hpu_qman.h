/* SPDX-License-Identifier: MIT */
/*
 * hpu queue manager: the hardware queues' registers and the engine that runs
 * their jobs.
 *
 * One engine thread runs every queue (round robin, a job at a time), always
 * without the core lock while it touches memory: MMIO never waits for a
 * job.  A job ends completed or failed (its event is posted first, then CI
 * advances), or stalls on a WAIT: the queue parks (STATUS WAITING) and is
 * looked at again after any SIGNAL, any doorbell, or a Q_CTRL RESET.
 *
 * Out of work, the engine sleeps; but when the last idle spell was short
 * (jobs arriving back to back, as an eager stream or a submit-and-wait loop
 * sends them) it first polls for HPU_ENGINE_SPIN_NS: waking a sleeping
 * host thread costs tens of microseconds, more than such a job's run.
 */
#ifndef HPU_QMAN_H
#define HPU_QMAN_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "hpu_dma.h"
#include "hpu_job.h"
#include "hpu_regs.h"

/* The engine's side of one queue, under the core lock unless noted. */
struct hpu_qman_queue {
	bool running;      /* the engine is in this queue's job (of the current reset generation) */
	bool parked;       /* its job is stalled on a WAIT */
	bool recheck;      /* something may have satisfied that WAIT */
	uint32_t abort;    /* Q_CTRL RESET pending; __atomic, the engine polls it mid-job */
	uint32_t abort_pi; /* CI once the abort is done */
	struct hpu_job job; /* the engine's alone */
};

/* How long an engine that has been busy lately polls for work before it sleeps. */
#define HPU_ENGINE_SPIN_NS 200000u

struct hpu_qman {
	pthread_cond_t work; /* the engine may have something to do, or must stop */
	uint32_t kicks;      /* bumped with each signal of work; __atomic, polled unlocked */
	bool spin;           /* the engine's last idle spell ended within HPU_ENGINE_SPIN_NS */
	bool stopping;
	struct hpu_hbm *retired; /* HBM a reset replaced, for the engine to free */
	unsigned int next;   /* round robin */
	struct hpu_qman_queue queues[HPU_NUM_QUEUES];
	uint8_t bounce[HPU_DMA_STEP]; /* the engine's alone */
};

#endif /* HPU_QMAN_H */
