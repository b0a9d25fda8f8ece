/* SPDX-License-Identifier: MIT */
/*
 * libhpu: the runtime of the hpu accelerator.
 *
 * Conventions, for every function unless its comment says otherwise:
 *  - Objects are opaque handles; functions are named hpu_<object>_<verb>.
 *  - Returns 0 on success or a negative errno.  On failure hpu_last_error()
 *    says why, and output arguments are left untouched (handles are set to
 *    NULL).
 *  - Thread-safe.  A handle may be used by several threads at once, but
 *    must not be closed while another thread still uses it.
 *
 * Compatibility: the soname, libhpu.so.<HPU_VERSION_MAJOR>, changes only
 * when the ABI breaks.  Under one soname, functions are only added (a new
 * symbol version node per minor version), enums and flags only gain values,
 * and structs with a `size` member only grow at their tail: the caller sets
 * size = sizeof(the struct it was built with), so old binaries keep working
 * with a newer library and new binaries detect an older one.
 */
#ifndef HPU_HPU_H
#define HPU_HPU_H

#include <stdint.h>

#if defined(__cplusplus)
extern "C" {
#endif

/* Marks the exported symbols; everything else in libhpu is hidden. */
#define HPU_API __attribute__((visibility("default")))

/* Version of this header; hpu_version() gives the loaded library's. */
#define HPU_VERSION_MAJOR 0
#define HPU_VERSION_MINOR 1
#define HPU_VERSION_PATCH 0

struct hpu_version {
	uint16_t major;
	uint16_t minor;
	uint16_t patch;
};

/* Version of the libhpu actually loaded.  Cannot fail. */
HPU_API struct hpu_version hpu_version(void);

/*
 * Message describing the last failed libhpu call of the calling thread,
 * e.g. "hpu_device_open: no hpu device 3 (2 found)"; "" if none failed yet.
 * The string belongs to the thread; its next libhpu call may rewrite it,
 * even a successful one, so read it right after the failure.  Cannot fail.
 */
HPU_API const char *hpu_last_error(void);

/* ------------------------------------------------------------------------
 * Devices
 *
 * Devices are numbered 0..count-1 in PCI bus id order, so an index names the
 * same device for as long as the set of devices does not change.  A device
 * is any DRM render node (/dev/dri/renderD*, kernels before 6.2) or compute
 * accelerator node (/dev/accel/accel*) whose driver is "hpu".  Discovery
 * opens every such node; nodes the caller may not open are not listed.
 */

struct hpu_device; /* opaque: an open device */

#define HPU_PCI_BUS_ID_MAX 32 /* "dddd:bb:dd.f" with room for wide domains */
#define HPU_PATH_MAX 128

/* Where a device is.  Fixed layout: new device data goes to hpu_device_info. */
struct hpu_device_desc {
	char pci_bus_id[HPU_PCI_BUS_ID_MAX]; /* "0000:00:04.0" */
	char path[HPU_PATH_MAX];             /* device node, "/dev/accel/accel0" */
};

/* Number of hpu devices present, 0 if none. */
HPU_API int hpu_device_count(unsigned int *count);

/*
 * Describes the first min(capacity, *count) devices in descs[] and sets
 * *count to the number of devices present.  descs may be NULL if capacity
 * is 0.
 */
HPU_API int hpu_device_list(struct hpu_device_desc *descs, unsigned int capacity,
			    unsigned int *count);

/* Opens device number index (see hpu_device_list()).  -ENODEV if absent. */
HPU_API int hpu_device_open(unsigned int index, struct hpu_device **devp);

/* Opens the device at a node path.  -ENODEV if the node is not an hpu device. */
HPU_API int hpu_device_open_path(const char *path, struct hpu_device **devp);

/* Closes a device and frees its handle.  NULL is a no-op.  Cannot fail. */
HPU_API void hpu_device_close(struct hpu_device *dev);

enum hpu_device_status {
	HPU_DEVICE_STATUS_READY = 1,       /* firmware running, accepting work */
	HPU_DEVICE_STATUS_IN_RESET = 2,    /* a reset is in progress */
	HPU_DEVICE_STATUS_MALFUNCTION = 3, /* unusable until reset */
};

/* Data types the engines compute in (hpu_device_info.capabilities). */
#define HPU_CAP_FP32 (1ull << 0)
#define HPU_CAP_BF16 (1ull << 1)
#define HPU_CAP_FP16 (1ull << 2)
#define HPU_CAP_FP8 (1ull << 3)

/* sizeof(struct hpu_device_info) in libhpu 0.1: the smallest size accepted. */
#define HPU_DEVICE_INFO_SIZE_V1 232u

struct hpu_device_info {
	uint32_t size;         /* in: sizeof(struct hpu_device_info); out: bytes filled */
	uint32_t status;       /* enum hpu_device_status; other values: not ready */
	uint64_t capabilities; /* HPU_CAP_*; unknown bits may be set */
	uint64_t hbm_size;     /* device memory, bytes */
	uint32_t pci_revision;
	uint32_t hw_revision;  /* device hardware revision register */
	uint32_t num_dma_engines;
	uint32_t num_mme_engines;
	uint32_t num_tpc_engines;
	uint16_t pci_vendor_id;
	uint16_t pci_device_id;
	uint16_t pci_subsystem_vendor_id;
	uint16_t pci_subsystem_id;
	struct hpu_version abi_version;   /* kernel driver ABI (patch is 0) */
	struct hpu_version fw_version;    /* running firmware */
	struct hpu_version fw_if_version; /* firmware interface (patch is 0) */
	char pci_bus_id[HPU_PCI_BUS_ID_MAX];
	char path[HPU_PATH_MAX];
};

/*
 * Queries the device.  The caller sets info->size (at least
 * HPU_DEVICE_INFO_SIZE_V1); the library fills that many bytes, zeroing
 * fields it does not know, and sets info->size to the bytes it knew.
 */
HPU_API int hpu_device_get_info(struct hpu_device *dev, struct hpu_device_info *info);

#if defined(__cplusplus)
}
#endif

#endif /* HPU_HPU_H */
