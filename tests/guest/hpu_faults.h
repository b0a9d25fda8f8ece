/* SPDX-License-Identifier: MIT */
/*
 * What the suites that inject device faults share (root: debugfs,
 * kernel/hpu_inject.c): a kind's count of injected faults, the device's
 * INFO (status, reset counts), and a guilty file: one that takes a fault
 * aimed at its own context (DRM_HPU_INFO_STATS ctx_id, ABI 1.4), or a
 * device-wide one, while other processes work, and says whether it ended
 * as the fault's kind means.  faults_test, train_faults_test and the
 * hpu_guilty tool (for the PyTorch bridge's test) use it.
 * Include after hpu_abi.h and hpu_test.h.
 */
#ifndef HPU_FAULTS_H
#define HPU_FAULTS_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static inline long long fault_get(const char *bdf, const char *kind, const char *setting)
{
	long long v;

	return hpu_fault_file(bdf, kind, setting, NULL, &v) ? -1 : v;
}

/* Until fault/<kind>/injected reaches @n, at most 60 s; true if it did. */
static inline bool fault_wait_injected(const char *bdf, const char *kind, long long n)
{
	double until = hpu_now_s() + 60;

	while (fault_get(bdf, kind, "injected") < n && hpu_now_s() < until)
		usleep(2000);
	return fault_get(bdf, kind, "injected") >= n;
}

static inline int device_info(int fd, struct drm_hpu_device_info *di)
{
	struct drm_hpu_info a = {
		.data_ptr = (uintptr_t)di, .data_size = sizeof(*di), .query = DRM_HPU_INFO_DEVICE,
	};

	return hpu_ioc(fd, DRM_IOCTL_HPU_INFO, &a);
}

/*
 * A fault a guilty file takes: @kind aimed at its context for one event
 * (@also, if set, armed for one event of any context), then a copy job of
 * its own on queue 0, which ends with @err; or, @device_wide, @kind armed
 * for any context's next event and no job.  Each fault costs the resets
 * given (kernel/hpu_reset.c has the ladder); @cause is the last one's.
 */
struct hpu_fault_case {
	const char *name;
	const char *kind;
	const char *also;
	bool device_wide;
	int err;
	unsigned int queue_resets, engine_resets, device_resets;
	int cause;
};

/* Every kind a guilty file can take while others work (not boot_fail: no boot runs then). */
static const struct hpu_fault_case hpu_fault_cases[] = {
	{ "engine_hang", "engine_hang", NULL, false, -ETIMEDOUT, 1, 1, 0,
	  DRM_HPU_RESET_CAUSE_HANG },
	/* The engine reset is ignored: a device reset takes the hung engine back. */
	{ "reset_fail", "engine_hang", "reset_fail", false, -ETIMEDOUT, 1, 1, 1,
	  DRM_HPU_RESET_CAUSE_HANG },
	{ "mmu_fault", "mmu_fault", NULL, false, -EFAULT, 0, 0, 0, -1 },
	{ "dma_error", "dma_error", NULL, false, -EIO, 0, 0, 0, -1 },
	/* The heartbeat's look, or the next interrupt, collects the completion. */
	{ "lost_irq", "lost_irq", NULL, false, 0, 0, 0, 0, -1 },
	/* The job ran, its completion is wrong: the job timeout fails it. */
	{ "bad_completion", "bad_completion", NULL, false, -EIO, 0, 0, 0, -1 },
	{ "heartbeat_loss", "heartbeat_loss", NULL, true, 0, 0, 0, 1,
	  DRM_HPU_RESET_CAUSE_HEARTBEAT },
};

static inline const struct hpu_fault_case *hpu_fault_case(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(hpu_fault_cases) / sizeof(hpu_fault_cases[0]); i++)
		if (!strcmp(hpu_fault_cases[i].name, name))
			return &hpu_fault_cases[i];
	return NULL;
}

#define HPU_GUILTY_CHUNK (64 * 1024ull)

/*
 * One fault of @c in a new file of its own (a new context each time, so
 * that no fault count bans it): 0 once the fault was injected, its job
 * ended with c->err, and the device counts the fault's resets and is READY
 * again; else -errno, with why in @why.
 */
static inline int hpu_guilty_fault(const char *bdf, const struct hpu_fault_case *c,
				   char *why, size_t why_len)
{
	struct drm_hpu_device_info before, now;
	struct drm_hpu_stats st;
	struct hpu_cb *cb = calloc(1, sizeof(*cb));
	uint8_t *buf = hpu_host_pages(2 * HPU_GUILTY_CHUNK);
	long long injected = fault_get(bdf, c->kind, "injected");
	uint64_t va = 0, seq;
	double until;
	int fd = hpu_open_node(bdf), err = 0, job_err = 0;

#define GUILTY_STEP(call, what) \
	do { if (!err && (err = (call))) snprintf(why, why_len, "%s: %d", what, err); } while (0)
	if (fd < 0 || !cb || !buf || injected < 0) {
		snprintf(why, why_len, "setting up: file %d, memory %s, injected %lld", fd,
			 cb && buf ? "ok" : "none", injected);
		err = fd < 0 ? fd : -ENOMEM;
	}
	GUILTY_STEP(device_info(fd, &before), "INFO");
	GUILTY_STEP(hpu_stats(fd, &st), "INFO_STATS");
	GUILTY_STEP(hpu_vm_map(fd, 0, 0, buf, 2 * HPU_GUILTY_CHUNK,
			       DRM_HPU_VM_MAP_READ | DRM_HPU_VM_MAP_WRITE, &va), "VM_MAP");
	if (c->also)
		GUILTY_STEP(hpu_fault_arm(bdf, c->also, "1"), c->also);
	GUILTY_STEP(hpu_fault_aim(bdf, c->kind, c->device_wide ? HPU_FI_ANY_ASID : st.ctx_id,
				  "1"), c->kind);
	if (!c->device_wide) {
		hpu_cb_dma(cb, va + HPU_GUILTY_CHUNK, va, HPU_GUILTY_CHUNK);
		GUILTY_STEP(hpu_submit(fd, 0, cb->buf, cb->size, &seq), "SUBMIT");
		GUILTY_STEP(hpu_wait(fd, seq, 120000000000ll, &job_err), "WAIT");
		if (!err && job_err != c->err) {
			snprintf(why, why_len, "its job ended %d, not %d", job_err, c->err);
			err = -EPROTO;
		}
	}
	if (!err && !fault_wait_injected(bdf, c->kind, injected + 1)) {
		snprintf(why, why_len, "%s never injected", c->kind);
		err = -ETIME;
	}
	/* The ladder is done once INFO counts its resets and the device is READY. */
	for (until = hpu_now_s() + 60; !err; usleep(1000)) {
		GUILTY_STEP(device_info(fd, &now), "INFO");
		if (!err && now.queue_resets >= before.queue_resets + c->queue_resets &&
		    now.engine_resets >= before.engine_resets + c->engine_resets &&
		    now.device_resets >= before.device_resets + c->device_resets &&
		    now.status == DRM_HPU_STATUS_READY)
			break;
		if (!err && hpu_now_s() > until) {
			snprintf(why, why_len, "not READY with its resets after 60 s: status %u",
				 now.status);
			err = -ETIME;
		}
	}
#undef GUILTY_STEP
	if (fd >= 0)
		close(fd);
	if (buf)
		munmap(buf, 2 * HPU_GUILTY_CHUNK);
	free(cb);
	return err;
}

#endif /* HPU_FAULTS_H */
