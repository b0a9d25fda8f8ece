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
#define DRM_HPU_ABI_MINOR 4
#define DRM_HPU_ABI_VERSION ((DRM_HPU_ABI_MAJOR << 16) | DRM_HPU_ABI_MINOR)

#define DRM_HPU_INFO 0x00
#define DRM_HPU_GEM_CREATE 0x01 /* 1.1 */
#define DRM_HPU_VM_MAP 0x02     /* 1.1 */
#define DRM_HPU_VM_UNMAP 0x03   /* 1.1 */
#define DRM_HPU_SUBMIT 0x04     /* 1.1 */
#define DRM_HPU_WAIT 0x05       /* 1.1 */
#define DRM_HPU_UQUEUE_CREATE 0x06  /* 1.2 */
#define DRM_HPU_UQUEUE_DESTROY 0x07 /* 1.2 */
#define DRM_HPU_UQUEUE_WAIT 0x08    /* 1.2 */

#define DRM_IOCTL_HPU_INFO DRM_IOWR(DRM_COMMAND_BASE + DRM_HPU_INFO, struct drm_hpu_info)
#define DRM_IOCTL_HPU_GEM_CREATE \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_HPU_GEM_CREATE, struct drm_hpu_gem_create)
#define DRM_IOCTL_HPU_VM_MAP DRM_IOWR(DRM_COMMAND_BASE + DRM_HPU_VM_MAP, struct drm_hpu_vm_map)
#define DRM_IOCTL_HPU_VM_UNMAP DRM_IOW(DRM_COMMAND_BASE + DRM_HPU_VM_UNMAP, struct drm_hpu_vm_unmap)
#define DRM_IOCTL_HPU_SUBMIT DRM_IOWR(DRM_COMMAND_BASE + DRM_HPU_SUBMIT, struct drm_hpu_submit)
#define DRM_IOCTL_HPU_WAIT DRM_IOWR(DRM_COMMAND_BASE + DRM_HPU_WAIT, struct drm_hpu_wait)
#define DRM_IOCTL_HPU_UQUEUE_CREATE \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_HPU_UQUEUE_CREATE, struct drm_hpu_uqueue_create)
#define DRM_IOCTL_HPU_UQUEUE_DESTROY \
	DRM_IOW(DRM_COMMAND_BASE + DRM_HPU_UQUEUE_DESTROY, struct drm_hpu_uqueue_destroy)
#define DRM_IOCTL_HPU_UQUEUE_WAIT \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_HPU_UQUEUE_WAIT, struct drm_hpu_uqueue_wait)

/**
 * enum drm_hpu_info_query - What DRM_IOCTL_HPU_INFO returns at &drm_hpu_info.data_ptr.
 * @DRM_HPU_INFO_DEVICE: &struct drm_hpu_device_info.
 * @DRM_HPU_INFO_STATS: &struct drm_hpu_stats (1.1).
 */
enum drm_hpu_info_query {
	DRM_HPU_INFO_DEVICE = 0,
	DRM_HPU_INFO_STATS = 1,
};

/* struct drm_hpu_info.flags: none defined yet. */
#define DRM_HPU_INFO_FLAGS_ALL 0u

/**
 * struct drm_hpu_info - Argument of DRM_IOCTL_HPU_INFO: one query's result.
 * @data_ptr: In: user address of the query's result struct.
 * @data_size: In: bytes at @data_ptr; out: bytes written.
 * @query: In: &enum drm_hpu_info_query.
 * @flags: In: must be 0.
 * @pad: Must be 0.
 */
struct drm_hpu_info {
	__u64 data_ptr;
	__u32 data_size;
	__u32 query;
	__u32 flags;
	__u32 pad;
};

/**
 * enum drm_hpu_device_status - &drm_hpu_device_info.status.
 * @DRM_HPU_STATUS_READY: Firmware running, accepting work.
 * @DRM_HPU_STATUS_IN_RESET: (1.3) A device reset is in progress: jobs submitted
 *	meanwhile wait and run after it.
 * @DRM_HPU_STATUS_MALFUNCTION: Unusable until the driver is reloaded: the
 *	recovery from a hang failed (queue, engine and device resets did not stop
 *	the engine, or the firmware did not boot again).  New work fails with -EIO;
 *	the jobs in the rings end (and release their memory) only once the engine
 *	has let go.
 */
enum drm_hpu_device_status {
	DRM_HPU_STATUS_READY = 1,
	DRM_HPU_STATUS_IN_RESET = 2,
	DRM_HPU_STATUS_MALFUNCTION = 3,
};

/*
 * Data types the engines compute in (drm_hpu_device_info.capabilities).  No device yet has
 * fp16 or fp8 kernels, so none sets those bits.
 */
#define DRM_HPU_CAP_FP32 (1ull << 0)
#define DRM_HPU_CAP_BF16 (1ull << 1)
#define DRM_HPU_CAP_FP16 (1ull << 2)
#define DRM_HPU_CAP_FP8 (1ull << 3)

/**
 * enum drm_hpu_reset_cause - &drm_hpu_device_info.last_reset_cause (1.3): why the
 * driver reset a queue, the engine or the device.
 * @DRM_HPU_RESET_CAUSE_NONE: No reset since the driver bound.
 * @DRM_HPU_RESET_CAUSE_TIMEOUT: A job ran past the job timeout (a kernel queue's
 *	reset, or a user queue's by its watchdog).
 * @DRM_HPU_RESET_CAUSE_HANG: The engine stayed in the job its queue's reset
 *	aborted (engine reset), or in spite of an engine reset (device reset).
 * @DRM_HPU_RESET_CAUSE_HEARTBEAT: The firmware's heartbeat stood still (device reset).
 * @DRM_HPU_RESET_CAUSE_REQUEST: Asked for by root through debugfs (device reset).
 */
enum drm_hpu_reset_cause {
	DRM_HPU_RESET_CAUSE_NONE = 0,
	DRM_HPU_RESET_CAUSE_TIMEOUT = 1,
	DRM_HPU_RESET_CAUSE_HANG = 2,
	DRM_HPU_RESET_CAUSE_HEARTBEAT = 3,
	DRM_HPU_RESET_CAUSE_REQUEST = 4,
};

/* Smallest data_size DRM_HPU_INFO_DEVICE accepts: the first version's size. */
#define DRM_HPU_DEVICE_INFO_SIZE_V1 64u

/**
 * struct drm_hpu_device_info - DRM_HPU_INFO_DEVICE: what the device is and has.
 * @abi_version: DRM_HPU_ABI_VERSION of the driver.
 * @status: &enum drm_hpu_device_status.
 * @capabilities: DRM_HPU_CAP_*.
 * @pci_vendor_id: PCI vendor ID.
 * @pci_device_id: PCI device ID.
 * @pci_subsystem_vendor_id: PCI subsystem vendor ID.
 * @pci_subsystem_id: PCI subsystem ID.
 * @pci_revision: PCI revision ID.
 * @hw_revision: The device's hardware revision register.
 * @fw_version: Firmware version: major << 16 | minor << 8 | patch.
 * @fw_if_version: Firmware interface version: major << 16 | minor.
 * @hbm_size: HBM, in bytes.
 * @num_dma_engines: DMA engines.
 * @num_mme_engines: Matrix engines.
 * @num_tpc_engines: Tensor engines.
 * @pad: Written as 0.
 * @num_queues: (1.1) Hardware queues a job may be submitted to.
 * @max_contexts: (1.1) Open files the device can hold at once.
 * @num_user_queues: (1.2) User queues DRM_IOCTL_HPU_UQUEUE_CREATE can take, device-wide.
 * @pad2: (1.2) Written as 0.
 * @queue_resets: (1.3) Queue resets for a timed-out job (kernel queues) or a
 *	user queue that stood still, since the driver bound.
 * @engine_resets: (1.3) Engine resets: a queue's reset left the engine in its job.
 * @device_resets: (1.3) Device resets (warm: device memory survives).
 * @last_reset_cause: (1.3) &enum drm_hpu_reset_cause of the last of those resets.
 *
 * 64 bytes in ABI 1.0, 72 in 1.1, 80 in 1.2, 96 in 1.3; a smaller @data_size (at
 * least DRM_HPU_DEVICE_INFO_SIZE_V1) gets the struct's first bytes.
 */
struct drm_hpu_device_info {
	__u32 abi_version;
	__u32 status;
	__u64 capabilities;
	__u16 pci_vendor_id;
	__u16 pci_device_id;
	__u16 pci_subsystem_vendor_id;
	__u16 pci_subsystem_id;
	__u32 pci_revision;
	__u32 hw_revision;
	__u32 fw_version;
	__u32 fw_if_version;
	__u64 hbm_size;
	__u32 num_dma_engines;
	__u32 num_mme_engines;
	__u32 num_tpc_engines;
	__u32 pad;
	__u32 num_queues;
	__u32 max_contexts;
	__u32 num_user_queues;
	__u32 pad2;
	__u32 queue_resets;
	__u32 engine_resets;
	__u32 device_resets;
	__u32 last_reset_cause;
};

/* Smallest data_size DRM_HPU_INFO_STATS accepts: the first version's size. */
#define DRM_HPU_STATS_SIZE_V1 88u

/**
 * struct drm_hpu_stats - DRM_HPU_INFO_STATS (1.1): usage now, device-wide and of the
 * calling file's context.
 * @hbm_total: Bytes available for buffers.
 * @hbm_used: Bytes buffers of all contexts hold (not freed HBM being zeroed or kept
 *	out of use: see docs/ABI.md).
 * @ctx_hbm_used: Bytes allocated by this context.
 * @ctx_host_pinned: Host bytes this context has pinned and mapped.
 * @jobs_submitted: Jobs submitted, device-wide, since the driver bound.
 * @jobs_completed: Jobs completed, device-wide.
 * @jobs_failed: Jobs failed, device-wide.
 * @ctx_jobs_submitted: Jobs this context submitted.
 * @ctx_jobs_completed: Jobs of this context that completed.
 * @ctx_jobs_failed: Jobs of this context that failed.
 * @num_contexts: Open contexts.
 * @pad: Written as 0.
 * @ctx_id: (1.4) This context's id: the ASID its jobs run in on the device, which
 *	debugfs fault injection (fault/<kind>/asid) and the kernel log ("context N")
 *	name.  Unique among open files; a closed file's id may be given again.
 * @pad1: (1.4) Written as 0.
 *
 * 88 bytes in ABI 1.1, 96 in 1.4; a smaller @data_size (at least
 * DRM_HPU_STATS_SIZE_V1) gets the struct's first bytes.
 */
struct drm_hpu_stats {
	__u64 hbm_total;
	__u64 hbm_used;
	__u64 ctx_hbm_used;
	__u64 ctx_host_pinned;
	__u64 jobs_submitted;
	__u64 jobs_completed;
	__u64 jobs_failed;
	__u64 ctx_jobs_submitted;
	__u64 ctx_jobs_completed;
	__u64 ctx_jobs_failed;
	__u32 num_contexts;
	__u32 pad;
	__u32 ctx_id;
	__u32 pad1;
};

#define DRM_HPU_GEM_CONTIGUOUS (1u << 0) /* one physically contiguous range */
#define DRM_HPU_GEM_FLAGS_ALL DRM_HPU_GEM_CONTIGUOUS

/**
 * struct drm_hpu_gem_create - Argument of DRM_IOCTL_HPU_GEM_CREATE (1.1): allocate HBM.
 * @size: In: bytes, rounded up to 4 KiB.
 * @flags: In: DRM_HPU_GEM_*.
 * @handle: Out: the buffer's GEM handle; free it with DRM_IOCTL_GEM_CLOSE.
 *
 * Contents start zeroed.
 */
struct drm_hpu_gem_create {
	__u64 size;
	__u32 flags;
	__u32 handle;
};

#define DRM_HPU_VM_MAP_READ (1u << 0)
#define DRM_HPU_VM_MAP_WRITE (1u << 1)
#define DRM_HPU_VM_MAP_FIXED (1u << 2) /* map exactly at va or fail with -EEXIST */
#define DRM_HPU_VM_MAP_FLAGS_ALL (DRM_HPU_VM_MAP_READ | DRM_HPU_VM_MAP_WRITE | DRM_HPU_VM_MAP_FIXED)

/**
 * struct drm_hpu_vm_map - Argument of DRM_IOCTL_HPU_VM_MAP (1.1): map a buffer
 * (@handle != 0) or pinned host memory (@handle == 0, at @user_ptr) into the
 * file's device address space.
 * @va: In: a hint, or with DRM_HPU_VM_MAP_FIXED the address; out: the mapped address.
 *	Without FIXED the driver picks a free range (the hint if it is free).
 * @size: In: bytes.
 * @offset: In: for a buffer, the offset into it; for host memory, must be 0.
 * @user_ptr: In: for host memory, the user address to pin; for a buffer, must be 0.
 * @handle: In: GEM handle, or 0 for host memory.
 * @flags: In: DRM_HPU_VM_MAP_* (READ or WRITE at least).
 *
 * Addresses, offsets and sizes are multiples of 4 KiB.
 */
struct drm_hpu_vm_map {
	__u64 va;
	__u64 size;
	__u64 offset;
	__u64 user_ptr;
	__u32 handle;
	__u32 flags;
};

/**
 * struct drm_hpu_vm_unmap - Argument of DRM_IOCTL_HPU_VM_UNMAP (1.1): remove a mapping
 * (host pages are unpinned).
 * @va: In: the address the mapping starts at.
 * @flags: Must be 0.
 * @pad: Must be 0.
 */
struct drm_hpu_vm_unmap {
	__u64 va;
	__u32 flags;
	__u32 pad;
};

/**
 * struct drm_hpu_job - One job of DRM_IOCTL_HPU_SUBMIT: a command buffer of packets
 * (drm/hpu_packets.h, unprivileged opcodes only) run on one hardware queue.
 * @cb_ptr: User address of the command buffer.
 * @cb_size: Bytes, a non-zero multiple of 8, at most HPU_CB_MAX_SIZE.
 * @queue: 0 .. &drm_hpu_device_info.num_queues - 1.
 * @flags: Must be 0.
 * @pad: Must be 0.
 */
struct drm_hpu_job {
	__u64 cb_ptr;
	__u32 cb_size;
	__u32 queue;
	__u32 flags;
	__u32 pad;
};

#define DRM_HPU_SUBMIT_MAX_JOBS 64
#define DRM_HPU_SUBMIT_MAX_IN_SYNCOBJS 64

/**
 * struct drm_hpu_submit - Argument of DRM_IOCTL_HPU_SUBMIT (1.1): queue jobs.
 * @jobs_ptr: In: user address of struct drm_hpu_job[@num_jobs].
 * @num_jobs: In: 1 .. DRM_HPU_SUBMIT_MAX_JOBS.
 * @flags: In: must be 0.
 * @in_syncobjs_ptr: In: user address of __u32 syncobj handles[@num_in_syncobjs].
 * @num_in_syncobjs: In: 0 .. DRM_HPU_SUBMIT_MAX_IN_SYNCOBJS.
 * @out_syncobj: In: 0, or a syncobj signalled when the last job ends.
 * @seq: Out: the sequence number of the last job.
 *
 * The jobs run on their queues in submission order, each with the next
 * sequence number of the file, after every in-syncobj has signalled.  A
 * command buffer with a privileged opcode is refused with -EPERM, any other
 * malformed packet with -EINVAL; nothing is queued then; -EIO: the device
 * malfunctions, or (1.3) the file's jobs caused the reset_ban_limit module
 * parameter's resets (3 by default): the file is banned, and its jobs still
 * queued fail with -EIO too.  A ring holds at most the max_file_ring_jobs module
 * parameter's jobs of one file (64 by default); the file's further jobs
 * wait in the driver, in order, while other files' jobs go on.  A job that
 * ran (or was parked on a WAIT) at the head of a ring for the preempt_ms
 * module parameter (10 by default) while other files' jobs wait behind it
 * is set aside for them and later goes on where it stopped: it does not
 * fail.
 */
struct drm_hpu_submit {
	__u64 jobs_ptr;
	__u32 num_jobs;
	__u32 flags;
	__u64 in_syncobjs_ptr;
	__u32 num_in_syncobjs;
	__u32 out_syncobj;
	__u64 seq;
};

/**
 * struct drm_hpu_wait - Argument of DRM_IOCTL_HPU_WAIT (1.1): wait until a job of
 * this file has ended.
 * @seq: In: the job's sequence number.
 * @timeout_ns: In: relative; 0 polls; negative: no timeout, as for UQUEUE_WAIT.
 * @flags: In: must be 0.
 * @error: Out: 0 if the job completed, else the negative errno it failed with:
 *	-EFAULT MMU fault, -EINVAL illegal packet or broken GEMM/kernel parameters,
 *	-EPERM a privileged packet in a CALLed buffer, -EIO DMA error, -ECANCELED
 *	aborted, -ETIMEDOUT killed after the job timeout.
 *
 * Returns 0 once the job ended, -ETIME if @timeout_ns passed first.  The wait
 * is interruptible (-EINTR, restarted by the C library) and killable; a
 * completion interrupt the driver missed delays it by at most the job timeout.
 */
struct drm_hpu_wait {
	__u64 seq;
	__s64 timeout_ns;
	__u32 flags;
	__s32 error;
};

#define DRM_HPU_UQUEUE_RING_MIN 2u
#define DRM_HPU_UQUEUE_RING_MAX 4096u

/**
 * struct drm_hpu_uqueue_create - Argument of DRM_IOCTL_HPU_UQUEUE_CREATE (1.2): take a
 * user queue, bound to this file's context, for jobs submitted without a system call
 * (drm/hpu_packets.h, struct hpu_uq_desc).
 * @ring_va: In: the ring's address in the file's device address space, 32-byte aligned.
 *	The device reads and writes the ring there, so a ring that is not mapped fails
 *	its jobs, not the call (and one mapped read-only gets no status back).
 * @ring_size: In: descriptors, a power of two in DRM_HPU_UQUEUE_RING_MIN ..
 *	DRM_HPU_UQUEUE_RING_MAX.
 * @flags: In: must be 0.
 * @doorbell_offset: Out: mmap() offset in this file of the queue's doorbell page
 *	(HPU_UQ_DB_PAGE_SIZE bytes).
 * @id: Out: the queue's id.
 * @pad: Must be 0.
 *
 * Errors: -EINVAL flags or pad set, a bad @ring_size, @ring_va misaligned or the
 * ring wraps; -EOPNOTSUPP the device has no user queues; -ENOSPC all are taken;
 * -EDQUOT this file holds its share (the max_file_uqueues module parameter, 4 by
 * default); -EIO the device malfunctions or the file is banned (see
 * &drm_hpu_submit).  Closing the file destroys its queues.
 */
struct drm_hpu_uqueue_create {
	__u64 ring_va;
	__u32 ring_size;
	__u32 flags;
	__u64 doorbell_offset;
	__u32 id;
	__u32 pad;
};

/**
 * struct drm_hpu_uqueue_destroy - Argument of DRM_IOCTL_HPU_UQUEUE_DESTROY (1.2): abort
 * the queue's running job, drop its queued ones, and unmap its doorbell page.
 * @id: In: the queue; -ENOENT if this file has no such queue.
 * @pad: Must be 0.
 */
struct drm_hpu_uqueue_destroy {
	__u32 id;
	__u32 pad;
};

/**
 * struct drm_hpu_uqueue_wait - Argument of DRM_IOCTL_HPU_UQUEUE_WAIT (1.2): sleep until
 * the queue's CI reaches @ci.
 * @id: In: the queue; -ENOENT if this file has no such queue.
 * @ci: In: the target (free running: CI - @ci, as a signed 32-bit value, is not
 *	negative); out: the CI seen.
 * @timeout_ns: In: relative; 0 polls; negative: no timeout, as for WAIT.
 * @flags: In: must be 0.
 * @pad: Must be 0.
 *
 * Returns 0, or -ETIME if @timeout_ns passed first; -EINVAL flags or pad set.  A
 * queue whose job runs longer than the driver's job timeout is reset (that job ends
 * HPU_UQ_STATUS_ABORTED, the queued ones are dropped with their status untouched), so
 * a wait always ends; the sleeper also looks at CI every half job timeout, so a lost
 * interrupt delays it by at most that.  Interruptible and killable, as WAIT.
 */
struct drm_hpu_uqueue_wait {
	__u32 id;
	__u32 ci;
	__s64 timeout_ns;
	__u32 flags;
	__u32 pad;
};

#if defined(__cplusplus)
}
#endif

#endif /* HPU_ACCEL_H */
