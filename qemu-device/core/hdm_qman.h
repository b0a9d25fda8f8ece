/* SPDX-License-Identifier: MIT */
/*
 * hpu queue manager: the hardware queues' registers and the engine that runs
 * their jobs.
 *
 * The engine's queues are the HPU_NUM_QUEUES kernel queues, numbered 0..,
 * then the HPU_NUM_UQ user queues (1.3): user queue u is the engine's
 * queue HDM_QMAN_UQ(u).  Both kinds share one lifecycle; a user queue's
 * job differs in how it is fetched and ended (hdm_uq.c): its descriptor and
 * command buffer are read through the MMU in the bound context, any
 * privileged packet fails it, its status is written back into the
 * descriptor, and its event names HPU_EVENT_QUEUE_UQ(u).
 *
 * One engine thread runs every queue (round robin, a job at a time), always
 * without the core lock while it touches memory: MMIO never waits for a job.
 * A job runs for HPU_ENGINE_SLICE_US at most before the engine takes the next
 * queue with work, if one has (it yields between two packets, or inside a
 * long one, and goes on later where it stopped), so that no queue monopolizes
 * the engine: one context's long work delays another queue's jobs by a slice
 * each, not by its whole length (a job behind it in the same ring still waits
 * for it: rings are FIFO).  The time a queue's job waits for others' slices
 * is DEFERRED_US, which a timeout does not charge to it.  A job ends
 * completed or failed (a user queue's status is written back, then a
 * failure's event is posted, then CI advances; an armed user queue then
 * interrupts), or stalls on a WAIT: the queue parks (STATUS WAITING) and is
 * looked at again after any SIGNAL, any doorbell (a kernel queue's PI or a
 * user queue's doorbell page), or a CTRL RESET.
 *
 * Out of work, the engine polls for the next job before it sleeps: waking a
 * sleeping host thread costs the vCPU that writes the doorbell 10-20 us, more
 * than a small job's run.  How long it polls adapts to the gaps between jobs,
 * as QEMU's event loop does for its own polling: a gap it slept through but
 * no longer than HDM_ENGINE_POLL_MAX_NS doubles the window (from
 * HDM_ENGINE_POLL_START_NS), a longer one halves it down to none, so a device
 * used in steps (a training loop's, an eager stream's) polls across their
 * gaps and an idle one costs no CPU.
 *
 * A kernel queue's job can be set aside (Q_CTRL PREEMPT, 1.6): at its next
 * yield point the engine moves what the job slot holds of its progress into
 * an entry of the queue's table (struct hdm_qman_saved) and CI moves on; a
 * descriptor with HPU_QUEUE_DESC_RESUME takes the entry back.  Cold resets
 * move entries to a list the engine frees, since their staging buffers count
 * in the engine's held bytes.
 *
 * Resets of 1.7 (hpu_regs.h): ENGINE_RESET makes the job the engine is in
 * cancelled (kill) if a reset of its queue is pending or it hangs (else the
 * reset's job left before the write, and this one is innocent) and waits,
 * bounded, until the engine has left it: a packet hung by fault injection
 * waits on a condition for exactly that.  A warm reset
 * lets the job in the engine reach a yield point (quiesce) within a slice of
 * the engine thread's CPU time (a hung one not at all), then saves every kernel
 * queue's started job into its table (SAVED_TAG) and keeps the user queues,
 * which run again at the next READY; the job that did not yield is abandoned
 * as a cold reset abandons it, and on a user queue ends ABORTED at the next
 * READY.  Nothing runs while the firmware is not READY.  Waits are bounded
 * (the engine may need the embedder's lock the writer holds) and never on the
 * engine's own thread (a DMA into the device's BAR): there the job is dropped.
 */
#ifndef HDM_QMAN_H
#define HDM_QMAN_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "hdm_dma.h"
#include "hdm_job.h"
#include "hpu_regs.h"

/* A preempted job's progress: what struct hdm_job holds beyond its descriptor. */
struct hdm_qman_saved {
	struct hdm_qman_saved *next; /* on hdm_qman.dropped */
	uint64_t tag;
	uint32_t asid, cb_size, priv_offset, pos, engine;
	uint64_t moved, call_addr, call_size, call_pos;
	struct hdm_tmem_set *held;
	void *scratch;
	uint64_t scratch_len;
	uint32_t decoded_len;
	uint8_t decoded[HDM_JOB_DECODED_MAX];
	uint8_t cb[]; /* cb_size bytes: a RESUME must run the same command buffer */
};

/*
 * A kernel queue's table: HPU_Q_PREEMPT_SLOTS entries for PREEMPT, and one more that
 * only a warm reset takes, so that it saves the started job even when PREEMPTs filled
 * the rest (PREEMPT_FREE counts the first ones only).
 */
#define HDM_Q_SAVED_ENTRIES (HPU_Q_PREEMPT_SLOTS + 1u)

/* The engine's side of one queue, under the core lock unless noted. */
struct hdm_qman_queue {
	bool running;      /* the engine is in this queue's job (of the current reset generation) */
	bool parked;       /* its job is stalled on a WAIT, or yielded */
	bool recheck;      /* something may have satisfied that WAIT; always, after a yield */
	uint64_t deferred_ns; /* the job at CI was ready while other queues ran (DEFERRED_US) */
	uint32_t abort;    /* Q_CTRL RESET pending; __atomic, the engine polls it mid-job */
	uint32_t abort_pi; /* CI once the abort, or a set-aside with drop_rest, is done */
	uint32_t preempt;  /* Q_CTRL PREEMPT pending; __atomic, as abort */
	bool drop_rest;    /* with it (RESET | PREEMPT): CI moves to abort_pi, not past the job */
	/* ENGINE_RESET (1.7) of the job the engine is in; __atomic as abort, cleared as it ends */
	uint32_t kill;
	struct hdm_qman_saved *saved[HDM_Q_SAVED_ENTRIES]; /* kernel queues; NULL: free */
	struct hdm_job job; /* the engine's alone */
};

/* The engine's queues: kernel ones, then user ones; user queue u is HDM_QMAN_UQ(u). */
#define HDM_QMAN_QUEUES (HPU_NUM_QUEUES + HPU_NUM_UQ)
#define HDM_QMAN_UQ(u) (HPU_NUM_QUEUES + (u))

static inline bool hdm_qman_is_uq(unsigned int q)
{
	return q >= HPU_NUM_QUEUES;
}

/* The number events and logs give the engine's queue q. */
static inline uint32_t hdm_qman_queue_id(unsigned int q)
{
	return hdm_qman_is_uq(q) ? HPU_EVENT_QUEUE_UQ(q - HPU_NUM_QUEUES) : q;
}

/* The engine's polling window: the first after a gap it slept through, and the longest. */
#define HDM_ENGINE_POLL_START_NS 16000u
#define HDM_ENGINE_POLL_MAX_NS 1000000u

struct hdm_qman {
	pthread_cond_t work; /* the engine may have something to do, or must stop */
	/*
	 * Broadcast as a step ends and as a hung packet must look again (a reset, an
	 * ENGINE_RESET, the engine stopping); on CLOCK_MONOTONIC, for timed waits.
	 */
	pthread_cond_t stepped;
	/* A warm reset waits for the step in progress: it yields at once, none starts; __atomic */
	uint32_t quiesce;
	pthread_t step_thread; /* the thread of the step in progress: it never waits for itself */
	bool hung;             /* that step is in a packet hung by fault injection */
	uint32_t kicks;      /* bumped with each signal of work; __atomic, polled unlocked */
	uint32_t poll_ns;    /* how long the engine polls before it sleeps */
	bool stopping;
	struct hdm_hbm *retired; /* HBM a reset replaced, for the engine to free */
	struct hdm_qman_saved *dropped; /* entries a reset dropped, for the engine to free */
	unsigned int next;   /* round robin */
	int current;         /* the queue the engine is in, or -1 */
	uint64_t step_ns;    /* when the engine went in */
	uint64_t held;       /* bytes of the jobs' held staging buffers (hdm_tmem.h); the engine's */
	uint64_t held_max;   /* HDM_TMEM_HELD_MAX (tests lower it) */
	struct hdm_qman_queue queues[HDM_QMAN_QUEUES];
	uint8_t bounce[HDM_DMA_STEP]; /* the engine's alone */
};

/* The polling window after an idle spell of idle_ns with a window of poll_ns. */
uint32_t hdm_qman_poll_window(uint32_t poll_ns, uint64_t idle_ns);

#endif /* HDM_QMAN_H */
