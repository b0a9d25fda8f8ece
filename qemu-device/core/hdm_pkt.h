/* SPDX-License-Identifier: MIT */
/*
 * hpu packets: decoding, checking and running a job's command buffer
 * (formats in hpu_packets.h).
 */
#ifndef HPU_PKT_H
#define HPU_PKT_H

#include "hdm_job.h"

enum hpu_pkt_status {
	HPU_PKT_FAILED = -1, /* the job's fault says why */
	HPU_PKT_DONE = 0,
	HPU_PKT_STALLED = 1, /* a WAIT is not satisfied yet: job->pos (job->call.pos) stays on it */
	HPU_PKT_YIELDED = 2, /* the job's slice is over: it goes on from job->pos after other queues */
};

/* A compute packet's parameters break its rules: logged, BAD_KERNEL at the packet; returns -1. */
int __attribute__((format(printf, 2, 3))) hpu_pkt_refuse(struct hpu_job *job, const char *fmt, ...);

/*
 * Run the job's packets from job->pos to the end of its command buffer; a
 * job stalled inside a callee goes on there first.  Once its slice is over
 * (hpu_job_slice_over()) it yields between two packets, having run one at
 * least.
 */
enum hpu_pkt_status hpu_pkt_run(struct hpu_job *job);

#endif /* HPU_PKT_H */
