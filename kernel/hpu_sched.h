/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hpu GPU-scheduler glue: one drm_gpu_scheduler per hardware queue.
 */
#ifndef HPU_SCHED_H
#define HPU_SCHED_H

struct hpu_queue;

int hpu_sched_init(struct hpu_queue *q, unsigned int timeout_ms);

#endif /* HPU_SCHED_H */
