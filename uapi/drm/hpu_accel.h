/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * hpu ioctl ABI, shared by the driver (kernel/) and the runtime (userspace/).
 *
 * Rules: fixed-width types only; user pointers travel as __u64; every struct
 * is explicitly padded to 8 bytes and the driver rejects non-zero padding and
 * unknown flags with -EINVAL; structs only grow at the tail.  Output structs
 * are sized by the caller: the driver writes at most the caller's size and
 * reports how much it wrote, so old binaries keep working on new drivers.
 * Layouts are frozen by tests/host/test_abi_layout.c.
 */
#ifndef HPU_ACCEL_H
#define HPU_ACCEL_H

/* The kernel finds drm.h under include/uapi; userspace through libdrm's cflags. */
#ifdef __KERNEL__
#include <drm/drm.h>
#else
#include "drm.h"
#endif

#if defined(__cplusplus)
extern "C" {
#endif

/* DRM driver name and version (drmGetVersion()); minor grows with the ABI. */
#define DRM_HPU_DRIVER_NAME "hpu"
#define DRM_HPU_ABI_MAJOR 1
#define DRM_HPU_ABI_MINOR 0
#define DRM_HPU_ABI_VERSION ((DRM_HPU_ABI_MAJOR << 16) | DRM_HPU_ABI_MINOR)

#define DRM_HPU_INFO 0x00

#define DRM_IOCTL_HPU_INFO DRM_IOWR(DRM_COMMAND_BASE + DRM_HPU_INFO, struct drm_hpu_info)

/* What DRM_IOCTL_HPU_INFO returns at data_ptr. */
enum drm_hpu_info_query {
	DRM_HPU_INFO_DEVICE = 0, /* struct drm_hpu_device_info */
};

/* struct drm_hpu_info.flags: none defined yet. */
#define DRM_HPU_INFO_FLAGS_ALL 0u

struct drm_hpu_info {
	__u64 data_ptr;  /* in: user address of the query's result struct */
	__u32 data_size; /* in: bytes at data_ptr; out: bytes written */
	__u32 query;     /* in: enum drm_hpu_info_query */
	__u32 flags;     /* in: must be 0 */
	__u32 pad;       /* must be 0 */
};

enum drm_hpu_device_status {
	DRM_HPU_STATUS_READY = 1,       /* firmware running, accepting work */
	DRM_HPU_STATUS_IN_RESET = 2,    /* a reset is in progress */
	DRM_HPU_STATUS_MALFUNCTION = 3, /* unusable until reset */
};

/* Data types the engines compute in (drm_hpu_device_info.capabilities). */
#define DRM_HPU_CAP_FP32 (1ull << 0)
#define DRM_HPU_CAP_BF16 (1ull << 1)
#define DRM_HPU_CAP_FP16 (1ull << 2)
#define DRM_HPU_CAP_FP8 (1ull << 3)

/* Smallest data_size DRM_HPU_INFO_DEVICE accepts: the first version's size. */
#define DRM_HPU_DEVICE_INFO_SIZE_V1 64u

struct drm_hpu_device_info {
	__u32 abi_version;   /* DRM_HPU_ABI_VERSION of the driver */
	__u32 status;        /* enum drm_hpu_device_status */
	__u64 capabilities;  /* DRM_HPU_CAP_* */
	__u16 pci_vendor_id;
	__u16 pci_device_id;
	__u16 pci_subsystem_vendor_id;
	__u16 pci_subsystem_id;
	__u32 pci_revision;
	__u32 hw_revision;   /* device hardware revision register */
	__u32 fw_version;    /* major << 16 | minor << 8 | patch */
	__u32 fw_if_version; /* firmware interface, major << 16 | minor */
	__u64 hbm_size;      /* bytes */
	__u32 num_dma_engines;
	__u32 num_mme_engines;
	__u32 num_tpc_engines;
	__u32 pad;           /* written as 0 */
};

#if defined(__cplusplus)
}
#endif

#endif /* HPU_ACCEL_H */
