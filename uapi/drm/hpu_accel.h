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
#define DRM_HPU_ABI_MINOR 2
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

/* What DRM_IOCTL_HPU_INFO returns at data_ptr. */
enum drm_hpu_info_query {
	DRM_HPU_INFO_DEVICE = 0, /* struct drm_hpu_device_info */
	DRM_HPU_INFO_STATS = 1,  /* struct drm_hpu_stats (1.1) */
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
	/*
	 * Unusable until the driver is reloaded: a queue reset did not stop
	 * its engine.  New work fails with -EIO; the jobs of that queue end
	 * (and release their memory) only once the engine has let go.
	 */
	DRM_HPU_STATUS_MALFUNCTION = 3,
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
	/* 1.1 */
	__u32 num_queues;    /* hardware queues a job may be submitted to */
	__u32 max_contexts;  /* open files the device can hold at once */
	/* 1.2 */
	__u32 num_user_queues; /* DRM_IOCTL_HPU_UQUEUE_CREATE can take this many, device-wide */
	__u32 pad2;            /* written as 0 */
};

/* Smallest data_size DRM_HPU_INFO_STATS accepts. */
#define DRM_HPU_STATS_SIZE_V1 88u

/* Usage now: device-wide, and of the calling file's context. */
struct drm_hpu_stats {
	__u64 hbm_total;          /* bytes available for buffers */
	__u64 hbm_used;           /* bytes buffers of all contexts hold (not freed HBM: see ABI.md) */
	__u64 ctx_hbm_used;       /* bytes allocated by this context */
	__u64 ctx_host_pinned;    /* host bytes this context has pinned and mapped */
	__u64 jobs_submitted;     /* device-wide, since the driver bound */
	__u64 jobs_completed;
	__u64 jobs_failed;
	__u64 ctx_jobs_submitted; /* this context */
	__u64 ctx_jobs_completed;
	__u64 ctx_jobs_failed;
	__u32 num_contexts;       /* open contexts */
	__u32 pad;                /* written as 0 */
};

/*
 * DRM_IOCTL_HPU_GEM_CREATE: allocate HBM.  size is rounded up to 4 KiB.
 * Free with DRM_IOCTL_GEM_CLOSE.  Contents start zeroed.
 */
#define DRM_HPU_GEM_CONTIGUOUS (1u << 0) /* one physically contiguous range */
#define DRM_HPU_GEM_FLAGS_ALL DRM_HPU_GEM_CONTIGUOUS

struct drm_hpu_gem_create {
	__u64 size;   /* in: bytes */
	__u32 flags;  /* in: DRM_HPU_GEM_* */
	__u32 handle; /* out */
};

/*
 * DRM_IOCTL_HPU_VM_MAP: map a buffer (handle != 0) or pinned host memory
 * (handle == 0, at user_ptr) into the file's device address space.
 * Addresses, offsets and sizes are multiples of 4 KiB.  Without
 * DRM_HPU_VM_MAP_FIXED, va is a hint: the driver picks a free range
 * (the hint if it is free) and returns it.
 */
#define DRM_HPU_VM_MAP_READ (1u << 0)
#define DRM_HPU_VM_MAP_WRITE (1u << 1)
#define DRM_HPU_VM_MAP_FIXED (1u << 2) /* map exactly at va or fail with -EEXIST */
#define DRM_HPU_VM_MAP_FLAGS_ALL (DRM_HPU_VM_MAP_READ | DRM_HPU_VM_MAP_WRITE | DRM_HPU_VM_MAP_FIXED)

struct drm_hpu_vm_map {
	__u64 va;       /* in: hint or fixed address; out: the mapped address */
	__u64 size;     /* in: bytes */
	__u64 offset;   /* in: buffer: offset into it; host: must be 0 */
	__u64 user_ptr; /* in: host: user address to pin; buffer: must be 0 */
	__u32 handle;   /* in: GEM handle, or 0 for host memory */
	__u32 flags;    /* in: DRM_HPU_VM_MAP_* (READ or WRITE at least) */
};

/* DRM_IOCTL_HPU_VM_UNMAP: remove the mapping that starts at va (host pages are unpinned). */
struct drm_hpu_vm_unmap {
	__u64 va;
	__u32 flags; /* must be 0 */
	__u32 pad;   /* must be 0 */
};

/*
 * DRM_IOCTL_HPU_SUBMIT: queue jobs.  Each job is a command buffer of packets
 * (drm/hpu_packets.h, unprivileged opcodes only) run on one hardware queue
 * in submission order.  Every job gets the next sequence number of the file;
 * seq returns the last one.  The jobs start after every in-syncobj signals;
 * out_syncobj (if non-zero) is signalled when the last job ends.  A command
 * buffer with a privileged opcode is refused with -EPERM, any other
 * malformed packet with -EINVAL; nothing is queued then; -EIO: the device
 * malfunctions.  A ring holds at most the max_file_ring_jobs module
 * parameter's jobs of one file (64 by default); the file's further jobs
 * wait in the driver, in order, while other files' jobs go on.  A job that
 * ran (or was parked on a WAIT) at the head of a ring for the preempt_ms
 * module parameter (10 by default) while other files' jobs wait behind it
 * is set aside for them and later goes on where it stopped: it does not
 * fail.
 */
struct drm_hpu_job {
	__u64 cb_ptr;  /* user address of the command buffer */
	__u32 cb_size; /* bytes, a non-zero multiple of 8, at most HPU_CB_MAX_SIZE */
	__u32 queue;   /* 0 .. num_queues - 1 */
	__u32 flags;   /* must be 0 */
	__u32 pad;     /* must be 0 */
};

#define DRM_HPU_SUBMIT_MAX_JOBS 64
#define DRM_HPU_SUBMIT_MAX_IN_SYNCOBJS 64

struct drm_hpu_submit {
	__u64 jobs_ptr;         /* struct drm_hpu_job[num_jobs] */
	__u32 num_jobs;         /* 1 .. DRM_HPU_SUBMIT_MAX_JOBS */
	__u32 flags;            /* must be 0 */
	__u64 in_syncobjs_ptr;  /* __u32 syncobj handles[num_in_syncobjs] */
	__u32 num_in_syncobjs;  /* 0 .. DRM_HPU_SUBMIT_MAX_IN_SYNCOBJS */
	__u32 out_syncobj;      /* 0 or a syncobj handle */
	__u64 seq;              /* out: sequence number of the last job */
};

/*
 * DRM_IOCTL_HPU_WAIT: wait until job seq of this file has ended.  Returns 0
 * with error = 0 if it completed, or a negative errno the job failed with
 * (-EFAULT MMU fault, -EINVAL illegal packet or broken GEMM/kernel
 * parameters, -EPERM a privileged packet in a CALLed buffer, -EIO DMA error, -ECANCELED aborted, -ETIMEDOUT killed after
 * the job timeout); -ETIME if timeout_ns passed first (0 polls; negative:
 * no timeout, as for UQUEUE_WAIT).  The wait is interruptible (-EINTR,
 * restarted by the C library) and killable; a completion interrupt the
 * driver missed delays it by at most the job timeout.
 */
struct drm_hpu_wait {
	__u64 seq;
	__s64 timeout_ns; /* relative */
	__u32 flags;      /* must be 0 */
	__s32 error;      /* out */
};

/*
 * DRM_IOCTL_HPU_UQUEUE_CREATE (1.2): take a user queue, bound to this file's
 * context, for jobs submitted without a system call (drm/hpu_packets.h,
 * struct hpu_uq_desc).  The ring is ring_size descriptors at ring_va in the
 * file's device address space; the device reads and writes it there, so a
 * ring that is not mapped fails its jobs, not the call (and one mapped
 * read-only gets no status back).
 * The queue's doorbell page is mapped with mmap() of HPU_UQ_DB_PAGE_SIZE
 * bytes at doorbell_offset of this file.  Errors: -EINVAL flags or pad set,
 * ring_size not a power of two in 2..4096, ring_va not 32-byte aligned or
 * the ring wraps; -EOPNOTSUPP the device has no user queues; -ENOSPC all
 * are taken; -EDQUOT this file holds its share (the max_file_uqueues module
 * parameter, 4 by default); -EIO the device malfunctions.  Closing the
 * file destroys its queues.
 */
#define DRM_HPU_UQUEUE_RING_MIN 2u
#define DRM_HPU_UQUEUE_RING_MAX 4096u

struct drm_hpu_uqueue_create {
	__u64 ring_va;         /* in */
	__u32 ring_size;       /* in: descriptors */
	__u32 flags;           /* in: must be 0 */
	__u64 doorbell_offset; /* out: mmap offset of the doorbell page */
	__u32 id;              /* out */
	__u32 pad;             /* must be 0 */
};

/*
 * DRM_IOCTL_HPU_UQUEUE_DESTROY (1.2): abort the queue's running job, drop
 * its queued ones, and unmap its doorbell page.  -ENOENT: no such queue of
 * this file.
 */
struct drm_hpu_uqueue_destroy {
	__u32 id;
	__u32 pad; /* must be 0 */
};

/*
 * DRM_IOCTL_HPU_UQUEUE_WAIT (1.2): sleep until the queue's CI reaches ci
 * (free running: CI - ci, as a signed 32-bit value, is not negative).
 * Returns 0 with ci set to the CI seen; -ETIME if timeout_ns passed first
 * (0 polls; negative: no timeout, as for WAIT); -ENOENT no such queue of
 * this file; -EINVAL flags or pad set.
 * A queue whose job runs longer than the driver's job timeout is reset (that
 * job ends HPU_UQ_STATUS_ABORTED, the queued ones are dropped with their
 * status untouched), so a wait always ends; the sleeper also looks at CI
 * every half job timeout, so a lost interrupt delays it by at most that.
 * Interruptible and killable, as WAIT.
 */
struct drm_hpu_uqueue_wait {
	__u32 id;
	__u32 ci;         /* in: target; out: CI now */
	__s64 timeout_ns; /* relative */
	__u32 flags;      /* must be 0 */
	__u32 pad;        /* must be 0 */
};

#if defined(__cplusplus)
}
#endif

#endif /* HPU_ACCEL_H */
