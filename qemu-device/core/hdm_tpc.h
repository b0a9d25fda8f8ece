/* SPDX-License-Identifier: MIT */
/*
 * hpu tensor engines: run TPC_LAUNCH packets.  The engine thread reads the
 * launch's parameter block through the MMU, checks it and its tensors,
 * maps them (hdm_tmem.h), lets the kernel check its operands, then splits
 * the kernel's work items into parts, one per TPC, that the engine thread
 * and a pool of worker threads take in turn.  A queue reset is noticed
 * between parts, and inside items of long work.  Once the job's slice is
 * over (hdm_job_slice_over()), a launch yields between two parts and goes
 * on with the parts left when the job runs again, mapped, decoded and
 * checked anew (its staged outputs written back meanwhile, hdm_tmem.h).
 * A kernel's items may come in phases, every item of one before any of
 * the next, with a scratch the launch keeps across its yields.  A launch
 * that would work past HPU_KERNEL_MAX_WORK, have an item past
 * HPU_KERNEL_MAX_ITEM_WORK (an item is never cut by a yield) or whose
 * tensors are larger than HPU_KERNEL_MAX_ELEMENTS is refused.
 *
 * The pool also runs the MME's GEMMs (hdm_mme.h).  It has one thread per
 * host CPU, the engine thread first: more would only take turns, with each
 * other and with the vCPUs.  Results do not depend on the number of threads.
 * The engine thread alone starts runs, one at a time.
 */
#ifndef HDM_TPC_H
#define HDM_TPC_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "hdm_pkt.h"

/*
 * Parts are sized by work, the elements their items visit (an item of an
 * elementwise kernel visits one; hdm_kernel_def.work says how many others'
 * do).  The least work worth a TPC of its own: smaller launches run on
 * fewer.
 */
#define HDM_TPC_PART_ITEMS 4096u
/*
 * The most work in one part: a launch larger than num_tpc of these runs in
 * more parts than TPCs, queued on the pool, so that a cancelled job (a
 * queue reset gives the device a second) stops within one part -
 * milliseconds - whatever the launch's size.  An item of more work than
 * this is a part of its own and polls for cancellation itself
 * (hdm_kpace()).
 */
#define HDM_TPC_PART_MAX_ITEMS (1u << 19)

/* One part of a run: part is first .. parts - 1, each run once, on any of the pool's threads. */
typedef void hdm_tpc_part_fn(void *ctx, uint64_t part);

struct hdm_tpc_pool {
	pthread_mutex_t lock; /* guards the run below */
	pthread_cond_t work;  /* parts are waiting, or the pool stops */
	pthread_cond_t done;  /* the run's last part ended */
	bool stopping;
	unsigned int cpus;    /* host CPUs: the most threads a GEMM runs on (tests set it) */
	unsigned int nr_threads;
	pthread_t *threads;
	/* The run in progress, if parts > 0: parts first .. parts - 1, none started once yield's over. */
	hdm_tpc_part_fn *fn;
	void *ctx;
	uint64_t first, parts, next, ended;
	struct hdm_job *yield;
};

/* Start one worker per further host CPU; fewer if the host refuses. */
void hdm_tpc_init(struct hdm_tpc_pool *pool);
/* Stop and join the workers; no run may be in progress. */
void hdm_tpc_destroy(struct hdm_tpc_pool *pool);
/*
 * fn(ctx, p) for p from first (< parts) on, on the calling thread and
 * workers, in order of p; once the slice of job yield is over
 * (hdm_job_slice_over(); NULL: never), no further part starts, one at
 * least having.  Returns once the parts started ended: how many parts are
 * done, all of [0, it).
 */
uint64_t hdm_tpc_pool_run(struct hdm_tpc_pool *pool, hdm_tpc_part_fn *fn, void *ctx,
			  uint64_t first, uint64_t parts, struct hdm_job *yield);

enum hdm_pkt_status hdm_tpc_launch(struct hdm_job *job, const uint8_t *pkt);

#endif /* HDM_TPC_H */
