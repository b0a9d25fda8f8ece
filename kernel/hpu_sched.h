/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hpu job scheduler: submission order, dependencies and ring space decide
 * when a job enters its queue's ring; job timeouts; freeing ended jobs.
 */
#ifndef HPU_SCHED_H
#define HPU_SCHED_H

#include <linux/types.h>

struct hpu_ctx;
struct hpu_job;
struct hpu_queue;
struct list_head;

int hpu_sched_init(struct hpu_queue *q, unsigned int timeout_ms);
void hpu_sched_submit(struct hpu_job *job);
void hpu_sched_run_locked(struct hpu_queue *q, int error, struct list_head *done);
void hpu_sched_cancel_waiting(struct hpu_ctx *ctx, int error);
void hpu_sched_arm_timeout(struct hpu_queue *q);
void hpu_sched_timeout_in(struct hpu_queue *q, unsigned long delay);
void hpu_sched_job_done(struct hpu_job *job);

#endif /* HPU_SCHED_H */
