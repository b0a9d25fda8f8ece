/* SPDX-License-Identifier: MIT */
/*
 * hpu packets: decoding, checking and running a job's command buffer
 * (formats in hpu_packets.h).
 */
#ifndef HDM_PKT_H
#define HDM_PKT_H

#include "hdm_job.h"

enum hdm_pkt_status {
	HDM_PKT_FAILED = -1, /* the job's fault says why */
	HDM_PKT_DONE = 0,
	HDM_PKT_STALLED = 1, /* a WAIT is not satisfied yet: job->pos (job->call.pos) stays on it */
	HDM_PKT_YIELDED = 2, /* the job's slice is over: it goes on from job->pos after other queues */
};

/* A compute packet's parameters break its rules: logged, BAD_KERNEL at the packet; returns -1. */
int __attribute__((format(printf, 2, 3))) hdm_pkt_refuse(struct hdm_job *job, const char *fmt, ...);

/*
 * Run the job's packets from job->pos to the end of its command buffer; a
 * job stalled inside a callee goes on there first.  Once its slice is over
 * (hdm_job_slice_over()) it yields between two packets, having run one at
 * least.
 */
enum hdm_pkt_status hdm_pkt_run(struct hdm_job *job);

#endif /* HDM_PKT_H */
