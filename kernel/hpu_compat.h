/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hpu: the only place that knows about kernel version differences.
 *
 * Kernels from 6.2 on have the compute accelerator subsystem: there hpu
 * registers an accel node (/dev/accel/accelN).  Older kernels get a DRM
 * render node (/dev/dri/renderDN) with the same ioctls.
 *
 * The GPU scheduler's interface moved several times after 6.1.  Only the
 * 6.1 branches below are built and tested here (Debian's 6.1, which carries
 * the 6.15 drm_sched_init_args backport that Kbuild detects as
 * HPU_HAVE_SCHED_INIT_ARGS); the others follow the upstream changes.
 */
#ifndef HPU_COMPAT_H
#define HPU_COMPAT_H

#include <linux/kconfig.h>
#include <linux/version.h>
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/gpu_scheduler.h>

#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 2, 0) && IS_ENABLED(CONFIG_DRM_ACCEL)
#include <drm/drm_accel.h>

#define HPU_DRIVER_FEATURES	DRIVER_COMPUTE_ACCEL
#define hpu_compat_open		accel_open
#define HPU_NODE_PREFIX		"accel"
#define hpu_compat_minor(drm)	((drm)->accel)
#else
#define HPU_DRIVER_FEATURES	DRIVER_RENDER
#define hpu_compat_open		drm_open
#define HPU_NODE_PREFIX		"renderD"
#define hpu_compat_minor(drm)	((drm)->render)
#endif

/* struct drm_driver lost its .date field in 6.14. */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 14, 0)
#define HPU_DRM_DRIVER_DATE	.date = "20261121",
#else
#define HPU_DRM_DRIVER_DATE
#endif

/* A scheduler with one run queue per priority and a job timeout in jiffies. */
static inline int hpu_compat_sched_init(struct drm_gpu_scheduler *sched,
					const struct drm_sched_backend_ops *ops,
					u32 credits, long timeout,
					const char *name, struct device *dev)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 15, 0)
	const struct drm_sched_init_args args = {
		.ops = ops,
		.num_rqs = DRM_SCHED_PRIORITY_COUNT,
		.credit_limit = credits,
		.timeout = timeout,
		.name = name,
		.dev = dev,
	};

	return drm_sched_init(sched, &args);
#elif defined(HPU_HAVE_SCHED_INIT_ARGS)
	const struct drm_sched_init_args args = {
		.ops = ops,
		.credit_limit = credits,
		.timeout = timeout,
		.name = name,
		.dev = dev,
	};

	return drm_sched_init(sched, &args);
#elif LINUX_VERSION_CODE >= KERNEL_VERSION(6, 7, 0)
	return drm_sched_init(sched, ops, NULL, DRM_SCHED_PRIORITY_COUNT,
			      credits, 0, timeout, NULL, NULL, name, dev);
#else
	return drm_sched_init(sched, ops, credits, 0, timeout, NULL, NULL,
			      name, dev);
#endif
}

/* Every hpu job costs one credit (one ring entry). */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 17, 0)
#define hpu_compat_sched_job_init(job, entity, owner) \
	drm_sched_job_init(job, entity, 1, owner, 0)
#elif LINUX_VERSION_CODE >= KERNEL_VERSION(6, 8, 0)
#define hpu_compat_sched_job_init(job, entity, owner) \
	drm_sched_job_init(job, entity, 1, owner)
#else
#define hpu_compat_sched_job_init(job, entity, owner) \
	drm_sched_job_init(job, entity, owner)
#endif

/* Restart a stopped scheduler, re-arming the callbacks of its pending jobs. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 12, 0)
#define hpu_compat_sched_start(sched)	drm_sched_start(sched, 0)
#else
#define hpu_compat_sched_start(sched)	drm_sched_start(sched, true)
#endif

/* What timedout_job() returns after it dealt with the job. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 17, 0)
#define HPU_SCHED_STAT_HANDLED	DRM_GPU_SCHED_STAT_RESET
#else
#define HPU_SCHED_STAT_HANDLED	DRM_GPU_SCHED_STAT_NOMINAL
#endif

#endif /* HPU_COMPAT_H */
