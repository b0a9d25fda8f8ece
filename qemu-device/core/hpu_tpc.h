/* SPDX-License-Identifier: MIT */
/*
 * hpu tensor engines: run TPC_LAUNCH packets.  The engine thread reads the
 * launch's parameter block through the MMU, checks it and its tensors,
 * maps them (hpu_tmem.h), lets the kernel check its operands, then splits
 * the kernel's work items between itself and a pool of worker threads, one
 * per further TPC.  A queue reset is noticed between parts.
 */
#ifndef HPU_TPC_H
#define HPU_TPC_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "hpu_pkt.h"

struct hpu_kernel_def;
struct hpu_kcall;

/* Fewest work items worth a TPC of their own: smaller launches run on fewer. */
#define HPU_TPC_PART_ITEMS 4096u

struct hpu_tpc_pool {
	pthread_mutex_t lock; /* guards the launch below */
	pthread_cond_t work;  /* parts are waiting, or the pool stops */
	pthread_cond_t done;  /* the launch's last part ended */
	bool stopping;
	unsigned int nr_threads;
	pthread_t *threads;
	/* The launch running, if parts > 0: part p covers about items / parts items. */
	const struct hpu_job *job;
	const struct hpu_kernel_def *def;
	const struct hpu_kcall *call;
	uint64_t items, parts, next, ended;
};

/* Start num_tpc - 1 workers (the engine thread is the first TPC); fewer if the host refuses. */
void hpu_tpc_init(struct hpu_tpc_pool *pool, unsigned int num_tpc);
/* Stop and join the workers; no launch may be running. */
void hpu_tpc_destroy(struct hpu_tpc_pool *pool);

enum hpu_pkt_status hpu_tpc_launch(struct hpu_job *job, const uint8_t *pkt);

#endif /* HPU_TPC_H */
