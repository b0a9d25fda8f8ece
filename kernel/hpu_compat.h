/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hpu: the only place that knows about kernel version differences.
 *
 * Kernels from 6.2 on have the compute accelerator subsystem: there hpu
 * registers an accel node (/dev/accel/accelN).  Older kernels get a DRM
 * render node (/dev/dri/renderDN) with the same ioctls.
 */
#ifndef HPU_COMPAT_H
#define HPU_COMPAT_H

#include <linux/kconfig.h>
#include <linux/mm.h>
#include <linux/version.h>
#include <drm/drm_drv.h>
#include <drm/drm_file.h>

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

/* vm_flags became read-only, with setters, in 6.3. */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 3, 0)
static inline void hpu_compat_vm_flags_set(struct vm_area_struct *vma, unsigned long flags)
{
	vma->vm_flags |= flags;
}
#else
#define hpu_compat_vm_flags_set vm_flags_set
#endif

#endif /* HPU_COMPAT_H */
