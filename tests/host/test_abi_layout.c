/* SPDX-License-Identifier: MIT */
/*
 * Freezes the layouts that cross a boundary: the ioctl ABI and packets
 * (uapi/), the queue descriptor and event (hpu_regs.h) and the firmware
 * image header.  A field that moves or a struct that changes size
 * breaks binaries already out there; this test makes that a failure.  The
 * expectations are written out by hand on purpose: change them only together
 * with a new ABI or interface version.
 */
#include <stddef.h>
#include <stdio.h>

#include <drm/hpu_accel.h>
#include <drm/hpu_packets.h>
#include "hpu_regs.h"
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
	F(drm_hpu_device_info, num_user_queues, 72, 4),
	F(drm_hpu_device_info, pad2, 76, 4),
	F(drm_hpu_device_info, queue_resets, 80, 4),
	F(drm_hpu_device_info, engine_resets, 84, 4),
	F(drm_hpu_device_info, device_resets, 88, 4),
	F(drm_hpu_device_info, last_reset_cause, 92, 4),

	F(drm_hpu_stats, hbm_total, 0, 8),
	F(drm_hpu_stats, hbm_used, 8, 8),
	F(drm_hpu_stats, ctx_hbm_used, 16, 8),
	F(drm_hpu_stats, ctx_host_pinned, 24, 8),
	F(drm_hpu_stats, jobs_submitted, 32, 8),
	F(drm_hpu_stats, jobs_completed, 40, 8),
	F(drm_hpu_stats, jobs_failed, 48, 8),
	F(drm_hpu_stats, ctx_jobs_submitted, 56, 8),
	F(drm_hpu_stats, ctx_jobs_completed, 64, 8),
	F(drm_hpu_stats, ctx_jobs_failed, 72, 8),
	F(drm_hpu_stats, num_contexts, 80, 4),
	F(drm_hpu_stats, pad, 84, 4),
	F(drm_hpu_stats, ctx_id, 88, 4),
	F(drm_hpu_stats, pad1, 92, 4),

	F(drm_hpu_gem_create, size, 0, 8),
	F(drm_hpu_gem_create, flags, 8, 4),
	F(drm_hpu_gem_create, handle, 12, 4),

	F(drm_hpu_vm_map, va, 0, 8),
	F(drm_hpu_vm_map, size, 8, 8),
	F(drm_hpu_vm_map, offset, 16, 8),
	F(drm_hpu_vm_map, user_ptr, 24, 8),
	F(drm_hpu_vm_map, handle, 32, 4),
	F(drm_hpu_vm_map, flags, 36, 4),

	F(drm_hpu_vm_unmap, va, 0, 8),
	F(drm_hpu_vm_unmap, flags, 8, 4),
	F(drm_hpu_vm_unmap, pad, 12, 4),

	F(drm_hpu_job, cb_ptr, 0, 8),
	F(drm_hpu_job, cb_size, 8, 4),
	F(drm_hpu_job, queue, 12, 4),
	F(drm_hpu_job, flags, 16, 4),
	F(drm_hpu_job, pad, 20, 4),

	F(drm_hpu_submit, jobs_ptr, 0, 8),
	F(drm_hpu_submit, num_jobs, 8, 4),
	F(drm_hpu_submit, flags, 12, 4),
	F(drm_hpu_submit, in_syncobjs_ptr, 16, 8),
	F(drm_hpu_submit, num_in_syncobjs, 24, 4),
	F(drm_hpu_submit, out_syncobj, 28, 4),
	F(drm_hpu_submit, seq, 32, 8),

	F(drm_hpu_wait, seq, 0, 8),
	F(drm_hpu_wait, timeout_ns, 8, 8),
	F(drm_hpu_wait, flags, 16, 4),
	F(drm_hpu_wait, error, 20, 4),
	F(drm_hpu_uqueue_create, ring_va, 0, 8),
	F(drm_hpu_uqueue_create, ring_size, 8, 4),
	F(drm_hpu_uqueue_create, flags, 12, 4),
	F(drm_hpu_uqueue_create, doorbell_offset, 16, 8),
	F(drm_hpu_uqueue_create, id, 24, 4),
	F(drm_hpu_uqueue_create, pad, 28, 4),
	F(drm_hpu_uqueue_destroy, id, 0, 4),
	F(drm_hpu_uqueue_destroy, pad, 4, 4),
	F(drm_hpu_uqueue_wait, id, 0, 4),
	F(drm_hpu_uqueue_wait, ci, 4, 4),
	F(drm_hpu_uqueue_wait, timeout_ns, 8, 8),
	F(drm_hpu_uqueue_wait, flags, 16, 4),
	F(drm_hpu_uqueue_wait, pad, 20, 4),

	F(hpu_pkt_nop, header, 0, 4),
	F(hpu_pkt_nop, pad, 4, 4),
	F(hpu_pkt_lin_dma, src, 8, 8),
	F(hpu_pkt_lin_dma, dst, 16, 8),
	F(hpu_pkt_lin_dma, size, 24, 8),
	F(hpu_pkt_signal, value, 4, 4),
	F(hpu_pkt_signal, addr, 8, 8),
	F(hpu_pkt_wait, value, 4, 4),
	F(hpu_pkt_wait, addr, 8, 8),
	F(hpu_pkt_timestamp, addr, 8, 8),
	F(hpu_pkt_write_completion, addr, 8, 8),
	F(hpu_pkt_write_completion, value, 16, 8),
	F(hpu_pkt_interrupt, vector, 4, 4),
	F(hpu_pkt_mme_gemm, header, 0, 4),
	F(hpu_pkt_mme_gemm, dtype_ab, 4, 4),
	F(hpu_pkt_mme_gemm, dtype_c, 8, 4),
	F(hpu_pkt_mme_gemm, batch, 12, 4),
	F(hpu_pkt_mme_gemm, m, 16, 4),
	F(hpu_pkt_mme_gemm, n, 20, 4),
	F(hpu_pkt_mme_gemm, k, 24, 4),
	F(hpu_pkt_mme_gemm, pad, 28, 4),
	F(hpu_pkt_mme_gemm, a, 32, 8),
	F(hpu_pkt_mme_gemm, b, 40, 8),
	F(hpu_pkt_mme_gemm, c, 48, 8),
	F(hpu_pkt_mme_gemm, lda, 56, 8),
	F(hpu_pkt_mme_gemm, ldb, 64, 8),
	F(hpu_pkt_mme_gemm, ldc, 72, 8),
	F(hpu_pkt_mme_gemm, stride_a, 80, 8),
	F(hpu_pkt_mme_gemm, stride_b, 88, 8),
	F(hpu_pkt_mme_gemm, stride_c, 96, 8),
	F(hpu_pkt_mme_gemm, alpha, 104, 4),
	F(hpu_pkt_mme_gemm, beta, 108, 4),
	F(hpu_pkt_tpc_launch, header, 0, 4),
	F(hpu_pkt_tpc_launch, params_size, 4, 4),
	F(hpu_pkt_tpc_launch, params, 8, 8),
	F(hpu_pkt_call, header, 0, 4),
	F(hpu_pkt_call, pad, 4, 4),
	F(hpu_pkt_call, addr, 8, 8),
	F(hpu_pkt_call, size, 16, 8),
	F(hpu_uq_desc, cb_va, 0, 8),
	F(hpu_uq_desc, cb_size, 8, 4),
	F(hpu_uq_desc, flags, 12, 4),
	F(hpu_uq_desc, tag, 16, 8),
	F(hpu_uq_desc, status, 24, 4),
	F(hpu_uq_desc, pad, 28, 4),

	F(hpu_kernel_params, version, 0, 4),
	F(hpu_kernel_params, kernel, 4, 4),
	F(hpu_kernel_params, num_tensors, 8, 4),
	F(hpu_kernel_params, flags, 12, 4),
	F(hpu_kernel_params, args, 16, 64),
	F(hpu_kernel_params, scalars, 80, 64),
	F(hpu_tensor_desc, addr, 0, 8),
	F(hpu_tensor_desc, dtype, 8, 4),
	F(hpu_tensor_desc, ndim, 12, 4),
	F(hpu_tensor_desc, shape, 16, 48),
	F(hpu_tensor_desc, strides, 64, 48),

	F(hpu_queue_desc, cb_addr, 0, 8),
	F(hpu_queue_desc, cb_size, 8, 4),
	F(hpu_queue_desc, priv_offset, 12, 4),
	F(hpu_queue_desc, asid, 16, 4),
	F(hpu_queue_desc, flags, 20, 4),
	F(hpu_queue_desc, tag, 24, 8),

	F(hpu_event, type, 0, 4),
	F(hpu_event, queue, 4, 4),
	F(hpu_event, asid, 8, 4),
	F(hpu_event, engine, 12, 4),
	F(hpu_event, tag, 16, 8),
	F(hpu_event, addr, 24, 8),

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
	{ "sizeof(struct drm_hpu_device_info)", sizeof(struct drm_hpu_device_info), 96 },
	{ "DRM_HPU_DEVICE_INFO_SIZE_V1", DRM_HPU_DEVICE_INFO_SIZE_V1, 64 },
	{ "sizeof(struct hpu_fw_header)", sizeof(struct hpu_fw_header), HPU_FW_HEADER_SIZE },
	{ "sizeof(struct drm_hpu_stats)", sizeof(struct drm_hpu_stats), 96 },
	{ "DRM_HPU_STATS_SIZE_V1", DRM_HPU_STATS_SIZE_V1, 88 },
	{ "sizeof(struct drm_hpu_gem_create)", sizeof(struct drm_hpu_gem_create), 16 },
	{ "sizeof(struct drm_hpu_vm_map)", sizeof(struct drm_hpu_vm_map), 40 },
	{ "sizeof(struct drm_hpu_vm_unmap)", sizeof(struct drm_hpu_vm_unmap), 16 },
	{ "sizeof(struct drm_hpu_job)", sizeof(struct drm_hpu_job), 24 },
	{ "sizeof(struct drm_hpu_submit)", sizeof(struct drm_hpu_submit), 40 },
	{ "sizeof(struct drm_hpu_wait)", sizeof(struct drm_hpu_wait), 24 },
	{ "sizeof(struct drm_hpu_uqueue_create)", sizeof(struct drm_hpu_uqueue_create), 32 },
	{ "sizeof(struct drm_hpu_uqueue_destroy)", sizeof(struct drm_hpu_uqueue_destroy), 8 },
	{ "sizeof(struct drm_hpu_uqueue_wait)", sizeof(struct drm_hpu_uqueue_wait), 24 },
	{ "sizeof(struct hpu_uq_desc)", sizeof(struct hpu_uq_desc), 32 },
	{ "sizeof(struct hpu_pkt_nop)", sizeof(struct hpu_pkt_nop), 8 },
	{ "sizeof(struct hpu_pkt_lin_dma)", sizeof(struct hpu_pkt_lin_dma), 32 },
	{ "sizeof(struct hpu_pkt_signal)", sizeof(struct hpu_pkt_signal), 16 },
	{ "sizeof(struct hpu_pkt_wait)", sizeof(struct hpu_pkt_wait), 16 },
	{ "sizeof(struct hpu_pkt_timestamp)", sizeof(struct hpu_pkt_timestamp), 16 },
	{ "sizeof(struct hpu_pkt_write_completion)", sizeof(struct hpu_pkt_write_completion), 24 },
	{ "sizeof(struct hpu_pkt_interrupt)", sizeof(struct hpu_pkt_interrupt), 8 },
	{ "sizeof(struct hpu_pkt_mme_gemm)", sizeof(struct hpu_pkt_mme_gemm), 112 },
	{ "sizeof(struct hpu_pkt_tpc_launch)", sizeof(struct hpu_pkt_tpc_launch), 16 },
	{ "sizeof(struct hpu_pkt_call)", sizeof(struct hpu_pkt_call), 24 },
	{ "sizeof(struct hpu_kernel_params)", sizeof(struct hpu_kernel_params), 144 },
	{ "sizeof(struct hpu_tensor_desc)", sizeof(struct hpu_tensor_desc), 112 },
	{ "HPU_KERNEL_PARAMS_MAX", HPU_KERNEL_PARAMS_MAX, 1936 },
	{ "sizeof(struct hpu_queue_desc)", sizeof(struct hpu_queue_desc), 32 },
	{ "sizeof(struct hpu_event)", sizeof(struct hpu_event), 32 },
	{ "DRM_IOCTL_HPU_INFO size field", (DRM_IOCTL_HPU_INFO >> 16) & 0x3fff, 24 },
	{ "DRM_IOCTL_HPU_INFO number", DRM_IOCTL_HPU_INFO & 0xff, 0x40 },
	{ "DRM_IOCTL_HPU_GEM_CREATE number", DRM_IOCTL_HPU_GEM_CREATE & 0xff, 0x41 },
	{ "DRM_IOCTL_HPU_VM_MAP number", DRM_IOCTL_HPU_VM_MAP & 0xff, 0x42 },
	{ "DRM_IOCTL_HPU_VM_UNMAP number", DRM_IOCTL_HPU_VM_UNMAP & 0xff, 0x43 },
	{ "DRM_IOCTL_HPU_SUBMIT number", DRM_IOCTL_HPU_SUBMIT & 0xff, 0x44 },
	{ "DRM_IOCTL_HPU_WAIT number", DRM_IOCTL_HPU_WAIT & 0xff, 0x45 },
	{ "DRM_IOCTL_HPU_UQUEUE_CREATE number", DRM_IOCTL_HPU_UQUEUE_CREATE & 0xff, 0x46 },
	{ "DRM_IOCTL_HPU_UQUEUE_DESTROY number", DRM_IOCTL_HPU_UQUEUE_DESTROY & 0xff, 0x47 },
	{ "DRM_IOCTL_HPU_UQUEUE_WAIT number", DRM_IOCTL_HPU_UQUEUE_WAIT & 0xff, 0x48 },
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
