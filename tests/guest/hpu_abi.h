/* SPDX-License-Identifier: MIT */
/*
 * Raw-ABI helpers for the in-guest suites of the submission path: buffers,
 * mappings, command buffers and jobs straight through the ioctls, so the
 * tests check the driver's contract rather than the runtime's.
 */
#ifndef HPU_ABI_H
#define HPU_ABI_H

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include <drm/hpu_accel.h>
#include <drm/hpu_kernels.h>
#include <drm/hpu_packets.h>

#define HPU_PAGE 4096ull

static inline int hpu_ioc(int fd, unsigned long req, void *arg)
{
	return ioctl(fd, req, arg) ? -errno : 0;
}

static inline int hpu_gem_create(int fd, uint64_t size, uint32_t flags, uint32_t *handle)
{
	struct drm_hpu_gem_create a = { .size = size, .flags = flags };
	int err = hpu_ioc(fd, DRM_IOCTL_HPU_GEM_CREATE, &a);

	if (!err)
		*handle = a.handle;
	return err;
}

static inline int hpu_gem_close(int fd, uint32_t handle)
{
	struct drm_gem_close a = { .handle = handle };

	return hpu_ioc(fd, DRM_IOCTL_GEM_CLOSE, &a);
}

/* Maps a buffer (handle) or host memory (handle 0, at ptr); *va in: hint, out: address. */
static inline int hpu_vm_map(int fd, uint32_t handle, uint64_t offset, void *ptr, uint64_t size,
			     uint32_t flags, uint64_t *va)
{
	struct drm_hpu_vm_map a = {
		.va = *va, .size = size, .offset = offset, .user_ptr = (uintptr_t)ptr,
		.handle = handle, .flags = flags,
	};
	int err = hpu_ioc(fd, DRM_IOCTL_HPU_VM_MAP, &a);

	if (!err)
		*va = a.va;
	return err;
}

static inline int hpu_vm_unmap(int fd, uint64_t va)
{
	struct drm_hpu_vm_unmap a = { .va = va };

	return hpu_ioc(fd, DRM_IOCTL_HPU_VM_UNMAP, &a);
}

/* Submits one command buffer on queue; *seq gets its sequence number. */
static inline int hpu_submit(int fd, uint32_t queue, const void *cb, uint32_t size, uint64_t *seq)
{
	struct drm_hpu_job job = { .cb_ptr = (uintptr_t)cb, .cb_size = size, .queue = queue };
	struct drm_hpu_submit a = { .jobs_ptr = (uintptr_t)&job, .num_jobs = 1 };
	int err = hpu_ioc(fd, DRM_IOCTL_HPU_SUBMIT, &a);

	if (!err && seq)
		*seq = a.seq;
	return err;
}

/* Waits for job seq; returns the ioctl's result, the job's in *job_err. */
static inline int hpu_wait(int fd, uint64_t seq, int64_t timeout_ns, int *job_err)
{
	struct drm_hpu_wait a = { .seq = seq, .timeout_ns = timeout_ns };
	int err = hpu_ioc(fd, DRM_IOCTL_HPU_WAIT, &a);

	if (!err)
		*job_err = a.error;
	return err;
}

/* Submits and waits up to 60 s; returns the job's error, or the ioctl's. */
static inline int hpu_run(int fd, uint32_t queue, const void *cb, uint32_t size)
{
	uint64_t seq;
	int err = hpu_submit(fd, queue, cb, size, &seq), job_err;

	if (err)
		return err;
	err = hpu_wait(fd, seq, 60000000000ll, &job_err);
	return err ? err : job_err;
}

static inline int hpu_stats(int fd, struct drm_hpu_stats *st)
{
	struct drm_hpu_info a = {
		.data_ptr = (uintptr_t)st, .data_size = sizeof(*st), .query = DRM_HPU_INFO_STATS,
	};

	return hpu_ioc(fd, DRM_IOCTL_HPU_INFO, &a);
}

/* The device's status (enum drm_hpu_device_status), or -errno. */
static inline int hpu_device_status(int fd)
{
	struct drm_hpu_device_info info;
	struct drm_hpu_info a = {
		.data_ptr = (uintptr_t)&info, .data_size = sizeof(info),
		.query = DRM_HPU_INFO_DEVICE,
	};
	int err = hpu_ioc(fd, DRM_IOCTL_HPU_INFO, &a);

	return err ? err : (int)info.status;
}

/* A command buffer under construction. */
struct hpu_cb {
	uint8_t buf[HPU_CB_MAX_SIZE];
	uint32_t size;
};

static inline uint32_t hpu_syncobj_create(int fd)
{
	struct drm_syncobj_create a = { 0 };

	return hpu_ioc(fd, DRM_IOCTL_SYNCOBJ_CREATE, &a) ? 0 : a.handle;
}

/* One job on queue with optional in- and out-syncobj (0: none); *seq (if seq) its number. */
static inline int hpu_submit_sync(int fd, uint32_t queue, const struct hpu_cb *cb, uint32_t in,
				  uint32_t out, uint64_t *seq)
{
	struct drm_hpu_job job = { .cb_ptr = (uintptr_t)cb->buf, .cb_size = cb->size,
				   .queue = queue };
	struct drm_hpu_submit a = {
		.jobs_ptr = (uintptr_t)&job, .num_jobs = 1, .out_syncobj = out,
		.in_syncobjs_ptr = (uintptr_t)&in, .num_in_syncobjs = in ? 1 : 0,
	};
	int err = hpu_ioc(fd, DRM_IOCTL_HPU_SUBMIT, &a);

	if (!err && seq)
		*seq = a.seq;
	return err;
}

static inline void hpu_cb_put(struct hpu_cb *cb, const void *pkt, uint32_t len)
{
	memcpy(cb->buf + cb->size, pkt, len);
	cb->size += len;
}

static inline void hpu_cb_dma(struct hpu_cb *cb, uint64_t dst, uint64_t src, uint64_t size)
{
	struct hpu_pkt_lin_dma p = {
		.header = HPU_PKT_HEADER(HPU_PKT_LIN_DMA, 0), .src = src, .dst = dst, .size = size,
	};

	hpu_cb_put(cb, &p, sizeof(p));
}

static inline void hpu_cb_memset(struct hpu_cb *cb, uint64_t dst, uint8_t value, uint64_t size)
{
	struct hpu_pkt_lin_dma p = {
		.header = HPU_PKT_HEADER(HPU_PKT_LIN_DMA, HPU_PKT_LIN_DMA_MEMSET),
		.src = value, .dst = dst, .size = size,
	};

	hpu_cb_put(cb, &p, sizeof(p));
}

static inline void hpu_cb_signal(struct hpu_cb *cb, uint64_t addr, uint32_t value)
{
	struct hpu_pkt_signal p = {
		.header = HPU_PKT_HEADER(HPU_PKT_SIGNAL, 0), .value = value, .addr = addr,
	};

	hpu_cb_put(cb, &p, sizeof(p));
}

static inline void hpu_cb_wait(struct hpu_cb *cb, uint64_t addr, uint32_t value)
{
	struct hpu_pkt_wait p = {
		.header = HPU_PKT_HEADER(HPU_PKT_WAIT, 0), .value = value, .addr = addr,
	};

	hpu_cb_put(cb, &p, sizeof(p));
}

static inline void hpu_cb_gemm(struct hpu_cb *cb, const struct hpu_pkt_mme_gemm *gemm)
{
	hpu_cb_put(cb, gemm, sizeof(*gemm));
}

/* The side of the square fp32 matrices of hpu_cb_slow_gemms(), and the bytes of each. */
#define HPU_SLOW_GEMM_N 1024u
#define HPU_SLOW_GEMM_BYTES ((uint64_t)HPU_SLOW_GEMM_N * HPU_SLOW_GEMM_N * 4)

/* count GEMMs c = a * b of side x side fp32 matrices. */
static inline void hpu_cb_square_gemms(struct hpu_cb *cb, uint32_t side, uint64_t a, uint64_t b,
				       uint64_t c, unsigned int count)
{
	const struct hpu_pkt_mme_gemm g = {
		.header = HPU_PKT_HEADER(HPU_PKT_MME_GEMM, 0),
		.dtype_ab = HPU_DTYPE_F32, .dtype_c = HPU_DTYPE_F32, .batch = 1,
		.m = side, .n = side, .k = side,
		.a = a, .b = b, .c = c,
		.lda = side, .ldb = side, .ldc = side,
		.alpha = 0x3f800000, /* 1.0f */
	};

	while (count--)
		hpu_cb_gemm(cb, &g);
}

/*
 * count GEMMs c = a * b of HPU_SLOW_GEMM_N square fp32 matrices: each a
 * step of a billion multiply-adds, which a queue reset does not cut short
 * (tens of ms).
 */
static inline void hpu_cb_slow_gemms(struct hpu_cb *cb, uint64_t a, uint64_t b, uint64_t c,
				     unsigned int count)
{
	hpu_cb_square_gemms(cb, HPU_SLOW_GEMM_N, a, b, c, count);
}

static inline void hpu_cb_launch(struct hpu_cb *cb, uint64_t params, uint32_t params_size)
{
	struct hpu_pkt_tpc_launch p = {
		.header = HPU_PKT_HEADER(HPU_PKT_TPC_LAUNCH, 0),
		.params_size = params_size, .params = params,
	};

	hpu_cb_put(cb, &p, sizeof(p));
}

/* Page-aligned anonymous host memory, or NULL. */
static inline void *hpu_host_pages(uint64_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* User queues (1.2), the sizes the suites and bench-dma use. */
#define HPU_UQ_TEST_RING 64u
#define HPU_UQ_TEST_ARENA (64 * HPU_PAGE)
/* The ring in a page of its own: mappings are whole pages. */
#define HPU_UQ_TEST_ARENA_OFF HPU_PAGE
#define HPU_UQ_TEST_BYTES (HPU_UQ_TEST_ARENA_OFF + HPU_UQ_TEST_ARENA)

/* A user queue with its ring and command-buffer arena in one pinned mapping. */
struct hpu_uq {
	int fd;
	uint32_t id;
	volatile uint32_t *db;
	uint8_t *mem;       /* ring, then arena */
	uint64_t va;
	uint32_t pi;
	uint32_t arena_off;
};

static inline struct hpu_uq_desc *hpu_uq_slot(struct hpu_uq *q, uint32_t pos)
{
	return (struct hpu_uq_desc *)q->mem + pos % HPU_UQ_TEST_RING;
}

static inline int hpu_uq_create(int fd, uint64_t ring_va, uint32_t ring_size, uint32_t *id,
			  uint64_t *offset)
{
	struct drm_hpu_uqueue_create a = { .ring_va = ring_va, .ring_size = ring_size };
	int err = hpu_ioc(fd, DRM_IOCTL_HPU_UQUEUE_CREATE, &a);

	*id = a.id;
	*offset = a.doorbell_offset;
	return err;
}

static inline int hpu_uq_destroy(int fd, uint32_t id)
{
	struct drm_hpu_uqueue_destroy a = { .id = id };

	return hpu_ioc(fd, DRM_IOCTL_HPU_UQUEUE_DESTROY, &a);
}

static inline int hpu_uq_wait(int fd, uint32_t id, uint32_t ci, int64_t timeout_ns, uint32_t *seen)
{
	struct drm_hpu_uqueue_wait a = { .id = id, .ci = ci, .timeout_ns = timeout_ns };
	int err = hpu_ioc(fd, DRM_IOCTL_HPU_UQUEUE_WAIT, &a);

	if (seen)
		*seen = a.ci;
	return err;
}

static inline void *hpu_uq_db_map(int fd, uint64_t offset, int flags)
{
	return mmap(NULL, HPU_UQ_DB_PAGE_SIZE, PROT_READ | PROT_WRITE, flags, fd, (off_t)offset);
}

/* 0, or -errno of the step that failed. */
static inline int hpu_uq_open(struct hpu_uq *q, int fd)
{
	uint64_t offset;
	void *db;
	int err;

	memset(q, 0, sizeof(*q));
	q->fd = fd;
	q->mem = hpu_host_pages(HPU_UQ_TEST_BYTES);
	if (!q->mem)
		return -ENOMEM;
	err = hpu_vm_map(fd, 0, 0, q->mem, HPU_UQ_TEST_BYTES,
			 DRM_HPU_VM_MAP_READ | DRM_HPU_VM_MAP_WRITE, &q->va);
	if (!err)
		err = hpu_uq_create(fd, q->va, HPU_UQ_TEST_RING, &q->id, &offset);
	if (err)
		return err;
	db = hpu_uq_db_map(fd, offset, MAP_SHARED);
	if (db == MAP_FAILED)
		return -errno;
	q->db = db;
	return 0;
}

static inline void hpu_uq_close(struct hpu_uq *q)
{
	munmap((void *)q->db, HPU_UQ_DB_PAGE_SIZE);
	hpu_uq_destroy(q->fd, q->id);
	hpu_vm_unmap(q->fd, q->va);
	munmap(q->mem, HPU_UQ_TEST_BYTES);
}

/* Writes job pos's descriptor (its command buffer copied into the arena) without ringing. */
static inline uint32_t hpu_uq_put(struct hpu_uq *q, const struct hpu_cb *cb, uint32_t flags)
{
	uint8_t *arena = q->mem + HPU_UQ_TEST_ARENA_OFF;
	uint32_t off = q->arena_off;

	if (off + cb->size > HPU_UQ_TEST_ARENA)
		off = 0;
	memcpy(arena + off, cb->buf, cb->size);
	q->arena_off = off + ((cb->size + 63) & ~63u);
	*hpu_uq_slot(q, q->pi) = (struct hpu_uq_desc){
		.cb_va = q->va + HPU_UQ_TEST_ARENA_OFF + off,
		.cb_size = cb->size,
		.flags = flags,
		.tag = q->pi,
		.status = 0xffffffffu,
	};
	return q->pi++;
}

static inline void hpu_uq_ring(struct hpu_uq *q)
{
	__atomic_thread_fence(__ATOMIC_RELEASE);
	q->db[HPU_UQ_DB_PI / 4] = q->pi;
}

/* Submits cb and waits for it; returns its status, or -errno of the wait. */
static inline int hpu_uq_run(struct hpu_uq *q, const struct hpu_cb *cb)
{
	uint32_t pos = hpu_uq_put(q, cb, 0);
	int err;

	hpu_uq_ring(q);
	err = hpu_uq_wait(q->fd, q->id, pos + 1, 5000000000ll, NULL);
	return err ? err : (int)hpu_uq_slot(q, pos)->status;
}

static inline double hpu_now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

/*
 * Waits up to timeout_s for the device's status to become `status` (a reset's
 * verdict comes from a work, after the jobs it ends): the status last read, or -errno.
 */
static inline int hpu_wait_device_status(int fd, int status, double timeout_s)
{
	double until = hpu_now_s() + timeout_s;
	int now = hpu_device_status(fd);

	while (now != status && hpu_now_s() < until) {
		usleep(1000);
		now = hpu_device_status(fd);
	}
	return now;
}

/*
 * Runs block(arg) in a child, which should sleep in the driver there, and
 * SIGKILLs it after delay_ms.  Returns the seconds from the kill until the
 * child was reaped, or -1 if it did not die of the kill.
 */
static inline double hpu_kill_blocked(void (*block)(void *), void *arg, unsigned int delay_ms)
{
	pid_t pid = fork();
	double killed;
	int status;

	if (pid < 0)
		return -1;
	if (!pid) {
		block(arg);
		_exit(0);
	}
	usleep(delay_ms * 1000);
	killed = hpu_now_s();
	kill(pid, SIGKILL);
	if (waitpid(pid, &status, 0) != pid || !WIFSIGNALED(status) ||
	    WTERMSIG(status) != SIGKILL)
		return -1;
	return hpu_now_s() - killed;
}

#endif /* HPU_ABI_H */
