/* SPDX-License-Identifier: MIT */
/*
 * Freezes the layouts that cross a boundary: the ioctl ABI (uapi/) and the
 * firmware image header.  A field that moves or a struct that changes size
 * breaks binaries already out there; this test makes that a failure.  The
 * expectations are written out by hand on purpose: change them only together
 * with a new ABI or interface version.
 */
#include <stddef.h>
#include <stdio.h>

#include <drm/hpu_accel.h>
#include "hpu_fw_if.h"

struct field {
	const char *name;
	size_t offset, size;
	size_t want_offset, want_size;
};

#define F(type, member, off, sz) \
	{ #type "." #member, offsetof(struct type, member), sizeof(((struct type *)0)->member), off, sz }

static const struct field fields[] = {
	F(drm_hpu_info, data_ptr, 0, 8),
	F(drm_hpu_info, data_size, 8, 4),
	F(drm_hpu_info, query, 12, 4),
	F(drm_hpu_info, flags, 16, 4),
	F(drm_hpu_info, pad, 20, 4),

	F(drm_hpu_device_info, abi_version, 0, 4),
	F(drm_hpu_device_info, status, 4, 4),
	F(drm_hpu_device_info, capabilities, 8, 8),
	F(drm_hpu_device_info, pci_vendor_id, 16, 2),
	F(drm_hpu_device_info, pci_device_id, 18, 2),
	F(drm_hpu_device_info, pci_subsystem_vendor_id, 20, 2),
	F(drm_hpu_device_info, pci_subsystem_id, 22, 2),
	F(drm_hpu_device_info, pci_revision, 24, 4),
	F(drm_hpu_device_info, hw_revision, 28, 4),
	F(drm_hpu_device_info, fw_version, 32, 4),
	F(drm_hpu_device_info, fw_if_version, 36, 4),
	F(drm_hpu_device_info, hbm_size, 40, 8),
	F(drm_hpu_device_info, num_dma_engines, 48, 4),
	F(drm_hpu_device_info, num_mme_engines, 52, 4),
	F(drm_hpu_device_info, num_tpc_engines, 56, 4),
	F(drm_hpu_device_info, pad, 60, 4),
	F(drm_hpu_device_info, num_queues, 64, 4),
	F(drm_hpu_device_info, max_contexts, 68, 4),

	F(hpu_fw_header, magic, 0, 4),
	F(hpu_fw_header, if_version, 4, 4),
	F(hpu_fw_header, header_size, 8, 4),
	F(hpu_fw_header, payload_size, 12, 4),
	F(hpu_fw_header, fw_version, 16, 4),
	F(hpu_fw_header, flags, 20, 4),
	F(hpu_fw_header, version_str, 24, 32),
	F(hpu_fw_header, reserved, 56, 4),
	F(hpu_fw_header, crc32, HPU_FW_CRC_OFFSET, 4),
};

struct whole {
	const char *name;
	size_t size, want;
};

static const struct whole structs[] = {
	{ "sizeof(struct drm_hpu_info)", sizeof(struct drm_hpu_info), 24 },
	{ "sizeof(struct drm_hpu_device_info)", sizeof(struct drm_hpu_device_info), 72 },
	{ "DRM_HPU_DEVICE_INFO_SIZE_V1", DRM_HPU_DEVICE_INFO_SIZE_V1, 64 },
	{ "sizeof(struct hpu_fw_header)", sizeof(struct hpu_fw_header), HPU_FW_HEADER_SIZE },
	{ "DRM_IOCTL_HPU_INFO size field", (DRM_IOCTL_HPU_INFO >> 16) & 0x3fff, 24 },
	{ "DRM_IOCTL_HPU_INFO number", DRM_IOCTL_HPU_INFO & 0xff, 0x40 },
	/* The struct is 8-byte aligned in both 32- and 64-bit userspace. */
	{ "sizeof(struct drm_hpu_device_info) % 8", sizeof(struct drm_hpu_device_info) % 8, 0 },
};

int main(void)
{
	size_t nf = sizeof(fields) / sizeof(fields[0]);
	size_t ns = sizeof(structs) / sizeof(structs[0]);
	size_t i, n = 0;
	int failed = 0;

	printf("TAP version 13\n1..%zu\n", nf + ns);
	for (i = 0; i < nf; i++) {
		const struct field *f = &fields[i];
		int ok = f->offset == f->want_offset && f->size == f->want_size;

		printf("%sok %zu - %s at %zu size %zu", ok ? "" : "not ", ++n, f->name, f->offset,
		       f->size);
		if (!ok)
			printf(" (frozen: at %zu size %zu)", f->want_offset, f->want_size);
		printf("\n");
		failed |= !ok;
	}
	for (i = 0; i < ns; i++) {
		int ok = structs[i].size == structs[i].want;

		printf("%sok %zu - %s is %zu", ok ? "" : "not ", ++n, structs[i].name,
		       structs[i].size);
		if (!ok)
			printf(" (frozen: %zu)", structs[i].want);
		printf("\n");
		failed |= !ok;
	}
	return failed;
}
