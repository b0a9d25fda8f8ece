// SPDX-License-Identifier: MIT
/*
 * The driver's system calls at random, syzkaller-style: seeded sequences of
 * every ioctl of the node (INFO, GEM_CREATE, GEM_CLOSE, VM_MAP and VM_UNMAP
 * of buffers and of host memory, SUBMIT of well-formed and mutated command
 * buffers with in- and out-syncobjs, WAIT, UQUEUE_CREATE, _DESTROY and
 * _WAIT), DRM sync objects (create, destroy, wait, reset, signal, export as
 * a sync file and import one, export and import across files), mmap of
 * doorbell pages and stores to them, close and reopen, and fork (the child
 * runs a short sequence on the files it inherited and one of its own, then
 * exits or kills itself), on FZ_FILES files shared by several threads.
 * fuzz_test covers what the device does with what a job holds; here the
 * jobs are short (no GEMM, launch or CALL, DMA of at most 64 KiB, WAITs
 * that pass) and the driver's paths are the target.
 *
 * Every call must return 0 or an errno its path documents: anything else
 * is printed with the call and fails the test.  Each phase ends with a
 * job run right on every file, everything closed, the driver's debugfs
 * "usage" back at zero and a kernel log without a warning; the last test
 * unloads the module (which warns of anything left) and loads it again.
 * The second phase runs with the driver's allocation-failure injection
 * (hpu_fault.c, debugfs fail_alloc/) on for this process group only: the
 * ioctls' allocations and pins fail at random, and every failure must
 * unwind to an errno with nothing held.  With -F (the debug kernel,
 * tests/guest/debug-suites.sh), the first phase runs under the kernel's
 * own failslab instead, for the calling threads and their children only
 * (/proc/thread-self/make-it-fail): any slab allocation of theirs, the
 * DRM core's and the kernel's too, may fail, and -ENOMEM is then an answer
 * of every call.
 *
 * Seeded and reproducible: the seed is printed; `ioctl_fuzz_test -s SEED`
 * (or HPU_FUZZ_SEED=SEED) replays it, and with -j 1 (one thread, and the
 * injection on every interval-th allocation instead of at random) the run
 * makes the same calls as long as the driver answers the same (it prints
 * where its random stream ended, to compare).  -n sets the number of calls
 * over both phases (make test runs 250 000 with three threads, about two
 * minutes under TCG; make test-fuzz a million), -j the threads, -v prints
 * every unexpected result as it comes, -F runs the first phase under
 * failslab (above).  Runs as root: it writes debugfs
 * and unloads the module.
 */
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <linux/sync_file.h>

#include "kselftest_harness.h"

#include "hpu_abi.h"
#include "hpu_fuzz.h"
#include "hpu_test.h"

#define FZ_FILES 4
#define FZ_BOS 16
#define FZ_MAPS 16
#define FZ_SEQS 32
#define FZ_SYNCOBJS 8
#define FZ_UQS 4
#define FZ_SYNC_FILES 8
#define FZ_ORPHANS 8
#define FZ_MAX_THREADS 8
#define FZ_ERRORS 16
/* Host memory the mappings pin, in pieces: 512 KiB. */
#define FZ_ARENA_PAGES 128
/* Jobs of one SUBMIT the fuzzer builds; more are refused before any is read. */
#define FZ_JOBS 20
#define FZ_CB_BYTES 512
#define FZ_BIG_CB (64u << 10)
#define FZ_DESC_BYTES sizeof(struct hpu_uq_desc)
/* The phases' bound: TCG runs about 5000 calls a second. */
#define FZ_TIMEOUT_S 1800
/* make test's run; make test-fuzz runs a million. */
#define FZ_DEFAULT_CALLS 250000ul

#define FZ_RW (DRM_HPU_VM_MAP_READ | DRM_HPU_VM_MAP_WRITE)
#define FZ_FAIL_ALLOC "/sys/kernel/debug/hpu/fail_alloc/"
#define FZ_FAILSLAB "/sys/kernel/debug/failslab/"
/* -F: the failslab failures the first phase may make (its "times"), and their odds. */
#define FZ_FAILSLAB_TIMES 100000000ll
#define FZ_FAILSLAB_PERCENT "3"

/* One of the values, at random. */
#define FZ_PICK(...)                                                              \
	({                                                                        \
		const uint64_t v_[] = { __VA_ARGS__ };                            \
		v_[rnd() % (sizeof(v_) / sizeof(v_[0]))];                         \
	})

struct fz_map {
	uint64_t va, size;
	uint8_t *host; /* the CPU's view of a host mapping; NULL for HBM */
};

struct fz_uq {
	bool live;
	uint32_t id, pi, ring_size;
	uint64_t db_offset, ring_va, room; /* bytes mapped from ring_va */
	uint8_t *ring;			   /* the CPU's view, or NULL */
	volatile uint32_t *db;		   /* its doorbell page, when mapped */
};

/*
 * A file and what the fuzzer knows it holds.  The lock guards the tables,
 * never a system call but close and reopen: another thread may use a
 * handle just closed (and get the errno for that), not an fd number reused.
 */
struct fz_file {
	pthread_mutex_t lock;
	int fd;
	uint32_t bos[FZ_BOS];
	struct fz_map maps[FZ_MAPS];
	uint64_t seqs[FZ_SEQS];
	uint32_t syncobjs[FZ_SYNCOBJS];
	struct fz_uq uqs[FZ_UQS];
};

static struct {
	uint64_t seed;
	unsigned long calls;	 /* -n: over both phases */
	unsigned int threads;	 /* -j */
	bool verbose;		 /* -v */
	bool failslab;		 /* -F: the first phase under the kernel's failslab */
	char node[512];		 /* the device's node */
	struct fz_file files[FZ_FILES];
	uint8_t *arena;
	pthread_mutex_t lock;	 /* sync_files, orphans */
	int sync_files[FZ_SYNC_FILES];
	volatile uint32_t *orphans[FZ_ORPHANS]; /* doorbells of closed files, still mapped */
	bool child;		 /* in a forked child: one thread, no locks */
	bool loose;		 /* several threads: fds may be stale */
	bool fail_nth;		 /* one thread under injection: failures placed per call */
	atomic_ulong unexpected;
	/* The unexpected results, each kind once with its count (under lock). */
	struct {
		char msg[160];
		unsigned long count;
	} errors[FZ_ERRORS];
} fz = { .threads = 3, .calls = FZ_DEFAULT_CALLS };

/* Per thread: calls made, and a guard for stores to doorbells that may be revoked. */
static __thread unsigned long fz_calls;
static __thread sigjmp_buf fz_jmp;
static __thread volatile sig_atomic_t fz_guarded;

static void fz_lock(pthread_mutex_t *m)
{
	if (!fz.child)
		pthread_mutex_lock(m);
}

static void fz_unlock(pthread_mutex_t *m)
{
	if (!fz.child)
		pthread_mutex_unlock(m);
}

static int fz_ioctl(int fd, unsigned long req, void *arg)
{
	fz_calls++;
	return ioctl(fd, req, arg) ? -errno : 0;
}

/* err is an errno the call may return: 0 or one of ok[], else it is recorded. */
static void fz_expect_(const char *what, int err, const int *ok)
{
	char msg[sizeof(fz.errors[0].msg)];
	unsigned int i;

	if (!err)
		return;
	for (; *ok; ok++)
		if (-err == *ok)
			return;
	/* Under failslab, any call may find the kernel short of memory. */
	if (fz.failslab && err == -ENOMEM)
		return;
	/* Another thread closed the fd, maybe reused for a sync file. */
	if (fz.loose && (err == -EBADF || err == -ENOTTY || err == -ENODEV || err == -EINVAL))
		return;
	snprintf(msg, sizeof(msg), "%s: %d (%s)", what, err, strerror(-err));
	atomic_fetch_add(&fz.unexpected, 1);
	fz_lock(&fz.lock);
	for (i = 0; i < FZ_ERRORS; i++) {
		if (!fz.errors[i].count)
			strcpy(fz.errors[i].msg, msg);
		if (!strcmp(fz.errors[i].msg, msg)) {
			fz.errors[i].count++;
			break;
		}
	}
	fz_unlock(&fz.lock);
	if (fz.verbose)
		fprintf(stderr, "# %s\n", msg);
}

#define fz_expect(what, err, ...) fz_expect_(what, err, (const int[]){ __VA_ARGS__, 0 })

static int fz_open_dev(void)
{
	int fd;

	fz_calls++;
	fd = open(fz.node, O_RDWR | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* A store to (or load from) a doorbell that may have been revoked or unmapped. */
static void fz_on_fault(int sig)
{
	if (fz_guarded)
		siglongjmp(fz_jmp, 1);
	signal(sig, SIG_DFL);
	raise(sig);
}

static void fz_db_store(volatile uint32_t *db, uint32_t reg, uint32_t value)
{
	fz_calls++;
	fz_guarded = 1;
	if (!sigsetjmp(fz_jmp, 1))
		db[reg / 4] = value;
	fz_guarded = 0;
}

/*
 * A doorbell mapping left would keep its file open: an unmap that fails for
 * want of memory (failslab fails the kernel's allocations for it) is retried.
 */
static void fz_munmap(void *p, size_t len)
{
	unsigned int try;

	for (try = 0; try < 10000; try++)
		if (!munmap(p, len) || errno != ENOMEM)
			return;
	fz_expect("munmap doorbell, short of memory 10000 times", -EAGAIN, 0);
}

static void fz_db_unmap(volatile uint32_t *db)
{
	fz_calls++;
	fz_munmap((void *)db, HPU_UQ_DB_PAGE_SIZE);
}

static int fz_write(const char *knob, const char *value)
{
	char path[256];

	snprintf(path, sizeof(path), FZ_FAIL_ALLOC "%s", knob);
	return hpu_write_file(path, value);
}

static long long fz_read_in(const char *dir, const char *knob)
{
	char path[256], buf[64];

	snprintf(path, sizeof(path), "%s%s", dir, knob);
	return hpu_read_file(path, buf, sizeof(buf)) ? -1 : strtoll(buf, NULL, 0);
}

static long long fz_read(const char *knob)
{
	return fz_read_in(FZ_FAIL_ALLOC, knob);
}

static int fz_failslab_write(const char *knob, const char *value)
{
	char path[256];

	snprintf(path, sizeof(path), FZ_FAILSLAB "%s", knob);
	return hpu_write_file(path, value);
}

/*
 * The kernel's failslab for the tasks that ask (make-it-fail), at the odds
 * of FZ_FAILSLAB_PERCENT, also for allocations that may sleep (which it
 * skips by default), FZ_FAILSLAB_TIMES of them at most; off with !on.
 */
static int fz_failslab(bool on)
{
	char times[32];
	int err;

	if (!on)
		return fz_failslab_write("probability", "0");
	snprintf(times, sizeof(times), "%lld", FZ_FAILSLAB_TIMES);
	err = fz_failslab_write("task-filter", "Y");
	err = err ?: fz_failslab_write("ignore-gfp-wait", "N");
	err = err ?: fz_failslab_write("cache-filter", "N");
	err = err ?: fz_failslab_write("verbose", "0");
	err = err ?: fz_failslab_write("space", "0");
	err = err ?: fz_failslab_write("interval", "1");
	err = err ?: fz_failslab_write("times", times);
	return err ?: fz_failslab_write("probability", FZ_FAILSLAB_PERCENT);
}

/*
 * This thread's allocations fail under failslab from now on (or no longer);
 * its threads and children inherit that.  Turning it off opens a file,
 * which may itself fail: tried until it does not.
 */
static void fz_make_it_fail(bool on)
{
	unsigned int try;

	for (try = 0; try < 10000; try++)
		if (!hpu_write_file("/proc/thread-self/make-it-fail", on ? "1" : "0"))
			return;
	fz_expect("make-it-fail", -EIO, 0);
}

/* ---- command buffers ---- */

/* The size of a user packet of op, as the driver reads them; 0 for others. */
static uint32_t fz_pkt_size(uint32_t op)
{
	switch (op) {
	case HPU_PKT_NOP:
		return sizeof(struct hpu_pkt_nop);
	case HPU_PKT_LIN_DMA:
		return sizeof(struct hpu_pkt_lin_dma);
	case HPU_PKT_SIGNAL:
	case HPU_PKT_WAIT:
	case HPU_PKT_TIMESTAMP:
	case HPU_PKT_TPC_LAUNCH:
		return 16;
	case HPU_PKT_MME_GEMM:
		return sizeof(struct hpu_pkt_mme_gemm);
	case HPU_PKT_CALL:
		return sizeof(struct hpu_pkt_call);
	default:
		return 0;
	}
}

/*
 * Keep a mutated command buffer short to run, as the driver will read it:
 * WAITs wait for 0 (always met), DMA moves at most 64 KiB, and GEMMs,
 * launches and CALLs (fuzz_test's) become privileged packets, refused.
 */
static void fz_tame(uint8_t *cb, uint32_t size)
{
	uint32_t off = 0;

	while (off + 8 <= size) {
		uint32_t *h = (uint32_t *)(cb + off), op = HPU_PKT_OPCODE(*h);
		uint32_t len = fz_pkt_size(op);

		if (!len || len > size - off)
			return;
		if (op == HPU_PKT_WAIT)
			((struct hpu_pkt_wait *)h)->value = 0;
		else if (op == HPU_PKT_LIN_DMA)
			((struct hpu_pkt_lin_dma *)h)->size &= 0xffff;
		else if (op == HPU_PKT_MME_GEMM || op == HPU_PKT_TPC_LAUNCH || op == HPU_PKT_CALL)
			*h = HPU_PKT_HEADER(HPU_PKT_WRITE_COMPLETION, 0);
		off += len;
	}
}

/* An address in one of maps[] most of the time. */
static uint64_t fz_addr(const struct fz_map *maps)
{
	const struct fz_map *m = &maps[rnd() % FZ_MAPS];
	uint64_t r = rnd();

	if (!m->size || rnd() % 16 == 0)
		return r & ((1ull << 48) - 1);
	return m->va + r % m->size;
}

/* A command buffer of short packets over maps[], one in four mutated; its size. */
static uint32_t fz_cb(const struct fz_map *maps, uint8_t *buf, uint32_t max)
{
	unsigned int packets = 1 + rnd() % 6, i;
	uint32_t size = 0, *w;
	uint64_t dst, src, len;

	for (i = 0; i < packets && size + 32 <= max; i++) {
		dst = fz_addr(maps);
		src = fz_addr(maps);
		len = 1 + rnd() % 4096;
		switch (rnd() % 6) {
		case 0: {
			struct hpu_pkt_nop p = { .header = HPU_PKT_HEADER(HPU_PKT_NOP, 0) };

			memcpy(buf + size, &p, sizeof(p));
			size += sizeof(p);
			break;
		}
		case 1:
		case 2: {
			bool memset_ = rnd() % 2;
			struct hpu_pkt_lin_dma p = {
				.header = HPU_PKT_HEADER(HPU_PKT_LIN_DMA,
							 memset_ ? HPU_PKT_LIN_DMA_MEMSET : 0),
				.src = memset_ ? src & 0xff : src, .dst = dst, .size = len,
			};

			memcpy(buf + size, &p, sizeof(p));
			size += sizeof(p);
			break;
		}
		case 3:
		case 4: {
			bool wait = rnd() % 2;
			struct hpu_pkt_signal p = {
				.header = HPU_PKT_HEADER(wait ? HPU_PKT_WAIT : HPU_PKT_SIGNAL, 0),
				.value = wait ? 0 : (uint32_t)src, .addr = dst & ~3ull,
			};

			memcpy(buf + size, &p, sizeof(p));
			size += sizeof(p);
			break;
		}
		default: {
			struct hpu_pkt_timestamp p = {
				.header = HPU_PKT_HEADER(HPU_PKT_TIMESTAMP, 0), .addr = dst & ~7ull,
			};

			memcpy(buf + size, &p, sizeof(p));
			size += sizeof(p);
			break;
		}
		}
	}
	if (rnd() % 4)
		return size;
	w = (uint32_t *)buf;
	switch (rnd() % 4) {
	case 0: /* bit flips */
		for (i = 1 + rnd() % 4; i; i--)
			buf[rnd() % size] ^= 1u << (rnd() % 8);
		break;
	case 1: /* a random word */
		w[rnd() % (size / 4)] = (uint32_t)rnd();
		break;
	case 2: /* a random opcode and flags */
		w[0] = (uint32_t)rnd() & (rnd() % 2 ? 0xffff : 0xffffffff);
		break;
	default: /* cut short: mid-packet, or not a multiple of 8 */
		size = rnd() % 2 ? 8 * (rnd() % (size / 8 + 1)) : size - 4;
		break;
	}
	fz_tame(buf, size);
	return size;
}

/* ---- the operations ---- */

struct fz_thread {
	unsigned int id;
	uint64_t seed;	      /* of its stream */
	pthread_t thread;
	unsigned long budget; /* calls to make; then made */
	uint64_t digest;      /* where its stream ended: equal in two runs that replay */
	unsigned long ops[32];
	uint64_t cb_store[FZ_JOBS][FZ_CB_BYTES / 8]; /* 8-byte aligned packets */
	uint64_t big_cb[FZ_BIG_CB / 8];
	struct drm_hpu_job jobs[DRM_HPU_SUBMIT_MAX_JOBS + 1];
};

static void fz_op_info(struct fz_thread *t, struct fz_file *f)
{
	uint64_t buf[32];
	struct drm_hpu_info a = {
		.data_ptr = (uintptr_t)buf,
		.data_size = (uint32_t)FZ_PICK(0, 8, DRM_HPU_DEVICE_INFO_SIZE_V1,
					       sizeof(struct drm_hpu_device_info),
					       DRM_HPU_STATS_SIZE_V1, sizeof(buf), rnd()),
		.query = rnd() % 8 ? rnd() % 2 : (uint32_t)rnd(),
		.flags = rnd() % 32 ? 0 : (uint32_t)rnd(),
		.pad = rnd() % 32 ? 0 : (uint32_t)rnd(),
	};

	(void)t;
	if (a.data_size > sizeof(buf))
		a.data_size = sizeof(buf);
	if (rnd() % 32 == 0)
		a.data_ptr = FZ_PICK(0, 1, 0xffff888000000000ull);
	fz_expect("INFO", fz_ioctl(f->fd, DRM_IOCTL_HPU_INFO, &a), EINVAL, EFAULT);
}

static uint64_t fz_bo_size(void)
{
	switch (rnd() % 16) {
	case 0:
		return rnd() | (1ull << 40); /* more than any HBM */
	case 1:
		return 1 + rnd() % 8192;
	case 2:
		return 0;
	case 3:
		return 64ull << 20;
	default:
		return HPU_PAGE << (rnd() % 10);
	}
}

static void fz_op_gem_create(struct fz_thread *t, struct fz_file *f)
{
	struct drm_hpu_gem_create a = {
		.size = fz_bo_size(),
		.flags = rnd() % 8 ? 0 : rnd() % 4 ? DRM_HPU_GEM_CONTIGUOUS : (uint32_t)rnd(),
	};
	unsigned int i = rnd() % FZ_BOS;
	int err = fz_ioctl(f->fd, DRM_IOCTL_HPU_GEM_CREATE, &a);

	(void)t;
	fz_expect("GEM_CREATE", err, EINVAL, ENOMEM, EDQUOT);
	if (err)
		return;
	/* A handle it replaces stays open until the file closes. */
	fz_lock(&f->lock);
	f->bos[i] = a.handle;
	fz_unlock(&f->lock);
}

static void fz_op_gem_close(struct fz_thread *t, struct fz_file *f)
{
	unsigned int i = rnd() % FZ_BOS;
	struct drm_gem_close a = { .handle = rnd() % 8 ? f->bos[i] : (uint32_t)(rnd() % 64) };
	int err = fz_ioctl(f->fd, DRM_IOCTL_GEM_CLOSE, &a);

	(void)t;
	fz_expect("GEM_CLOSE", err, EINVAL);
	fz_lock(&f->lock);
	if (!err && f->bos[i] == a.handle)
		f->bos[i] = 0;
	fz_unlock(&f->lock);
}

static void fz_op_vm_map(struct fz_thread *t, struct fz_file *f)
{
	bool host = rnd() % 3 == 0;
	unsigned int pages = 1 + rnd() % 16, first = rnd() % (FZ_ARENA_PAGES - 16);
	unsigned int i = rnd() % FZ_MAPS, b = rnd() % FZ_BOS;
	struct drm_hpu_vm_map a = {
		.size = pages * HPU_PAGE,
		.flags = rnd() % 8 ? FZ_PICK(FZ_RW, DRM_HPU_VM_MAP_READ) : rnd() % 16,
	};
	uint8_t *ptr = fz.arena + (uint64_t)first * HPU_PAGE;
	uint64_t r = rnd();
	int err;

	(void)t;
	if (rnd() % 4 == 0) {
		a.flags |= DRM_HPU_VM_MAP_FIXED;
		a.va = (1ull << 20) + (r % 4096) * HPU_PAGE;
	} else {
		a.va = rnd() % 4 ? 0 : r & ((1ull << 48) - 1) & ~(HPU_PAGE - 1);
	}
	if (host) {
		a.user_ptr = (uintptr_t)ptr;
		if (rnd() % 16 == 0)
			a.user_ptr = FZ_PICK(a.user_ptr + 8, 4096, 0xffff888000000000ull);
	} else {
		a.handle = rnd() % 16 ? f->bos[b] : (uint32_t)rnd() % 64;
		a.offset = rnd() % 4 ? 0 : (rnd() % 64) * HPU_PAGE;
	}
	if (rnd() % 32 == 0)
		a.size = FZ_PICK(0, 100, rnd(), 1ull << 47);
	err = fz_ioctl(f->fd, DRM_IOCTL_HPU_VM_MAP, &a);
	/* Handle 0 maps host memory: at user_ptr 0, which faults. */
	if (host || !a.handle)
		fz_expect("VM_MAP host", err, EINVAL, EFAULT, EEXIST, ENOMEM, EDQUOT);
	else
		fz_expect("VM_MAP buffer", err, EINVAL, ENOENT, EEXIST, ENOMEM, EDQUOT);
	if (err)
		return;
	/* A mapping it replaces stays until the file closes. */
	fz_lock(&f->lock);
	f->maps[i] = (struct fz_map){
		.va = a.va, .size = a.size, .host = host && a.user_ptr == (uintptr_t)ptr ? ptr : NULL,
	};
	fz_unlock(&f->lock);
}

static void fz_op_vm_unmap(struct fz_thread *t, struct fz_file *f)
{
	unsigned int i = rnd() % FZ_MAPS;
	struct drm_hpu_vm_unmap a = {
		.va = rnd() % 8 ? f->maps[i].va : rnd() & ((1ull << 48) - 1),
		.flags = rnd() % 64 ? 0 : 1,
	};
	int err = fz_ioctl(f->fd, DRM_IOCTL_HPU_VM_UNMAP, &a);

	(void)t;
	fz_expect("VM_UNMAP", err, EINVAL, ENOENT);
	fz_lock(&f->lock);
	if (!err && f->maps[i].va == a.va)
		f->maps[i] = (struct fz_map){ 0 };
	fz_unlock(&f->lock);
}

static void fz_op_submit(struct fz_thread *t, struct fz_file *f)
{
	unsigned int n = rnd() % 8 ? 1 + rnd() % 3 : rnd() % 8 ? 1 + rnd() % FZ_JOBS :
		DRM_HPU_SUBMIT_MAX_JOBS + 1;
	unsigned int num_in = rnd() % 4 ? 0 : 1 + rnd() % 3, i, s = rnd() % FZ_SEQS;
	uint32_t in[4], out = 0;
	struct fz_map maps[FZ_MAPS];
	struct drm_hpu_submit a = { 0 };
	int err;

	fz_lock(&f->lock);
	memcpy(maps, f->maps, sizeof(maps));
	fz_unlock(&f->lock);
	for (i = 0; i < n; i++) {
		struct drm_hpu_job *j = &t->jobs[i];
		uint8_t *cb = (uint8_t *)t->cb_store[i % FZ_JOBS];

		*j = (struct drm_hpu_job){
			.cb_ptr = (uintptr_t)cb,
			.queue = rnd() % 16 ? rnd() % HPU_NUM_QUEUES : (uint32_t)rnd() % 8,
		};
		if (i < FZ_JOBS)
			j->cb_size = fz_cb(maps, cb, FZ_CB_BYTES);
		else
			j->cb_size = 8;
		if (i == 0 && rnd() % 32 == 0) {
			/* A command buffer of a page or more: the driver's coherent copy. */
			j->cb_ptr = (uintptr_t)t->big_cb;
			j->cb_size = 8 * (1 + rnd() % (FZ_BIG_CB / 8));
		}
		if (rnd() % 64 == 0)
			j->flags = 1;
		if (rnd() % 64 == 0)
			j->cb_ptr = FZ_PICK(0, 0xffff888000000000ull);
	}
	for (i = 0; i < num_in; i++)
		in[i] = rnd() % 8 ? f->syncobjs[rnd() % FZ_SYNCOBJS] : (uint32_t)rnd() % 64;
	if (rnd() % 3 == 0)
		out = rnd() % 8 ? f->syncobjs[rnd() % FZ_SYNCOBJS] : (uint32_t)rnd() % 64;
	a = (struct drm_hpu_submit){
		.jobs_ptr = (uintptr_t)t->jobs, .num_jobs = n,
		.in_syncobjs_ptr = (uintptr_t)in, .num_in_syncobjs = num_in,
		.out_syncobj = out, .flags = rnd() % 64 ? 0 : 1,
	};
	if (rnd() % 64 == 0)
		a.num_in_syncobjs = FZ_PICK(DRM_HPU_SUBMIT_MAX_IN_SYNCOBJS + 1, 0xffffffffu);
	if (rnd() % 64 == 0)
		a.jobs_ptr = 0;
	err = fz_ioctl(f->fd, DRM_IOCTL_HPU_SUBMIT, &a);
	fz_expect("SUBMIT", err, EINVAL, EPERM, ENOENT, EFAULT, ENOMEM);
	if (err)
		return;
	fz_lock(&f->lock);
	f->seqs[s] = a.seq;
	fz_unlock(&f->lock);
}

/* What WAIT may report of a job: its own failures, or its cancellation. */
static bool fz_job_result(int err)
{
	return err == 0 || err == -EFAULT || err == -EINVAL || err == -EPERM || err == -EIO ||
	       err == -ECANCELED || err == -ETIMEDOUT || err == -ESRCH || err == -ENODEV;
}

static void fz_op_wait(struct fz_thread *t, struct fz_file *f)
{
	struct drm_hpu_wait a = {
		.seq = rnd() % 8 ? f->seqs[rnd() % FZ_SEQS] : FZ_PICK(0, rnd() % 4096, rnd()),
		.timeout_ns = (int64_t)FZ_PICK(0, 100000, 1000000, 20000000),
		.flags = rnd() % 64 ? 0 : 1,
	};
	int err = fz_ioctl(f->fd, DRM_IOCTL_HPU_WAIT, &a);

	(void)t;
	fz_expect("WAIT", err, EINVAL, ETIME);
	if (!err && !fz_job_result(a.error))
		fz_expect("WAIT's job", a.error, EINVAL);
}

static void fz_op_syncobj_create(struct fz_thread *t, struct fz_file *f)
{
	struct drm_syncobj_create a = {
		.flags = rnd() % 4 ? 0 : rnd() % 8 ? DRM_SYNCOBJ_CREATE_SIGNALED : (uint32_t)rnd(),
	};
	unsigned int i = rnd() % FZ_SYNCOBJS;
	int err = fz_ioctl(f->fd, DRM_IOCTL_SYNCOBJ_CREATE, &a);

	(void)t;
	fz_expect("SYNCOBJ_CREATE", err, EINVAL);
	if (err)
		return;
	fz_lock(&f->lock);
	f->syncobjs[i] = a.handle;
	fz_unlock(&f->lock);
}

static void fz_op_syncobj_destroy(struct fz_thread *t, struct fz_file *f)
{
	unsigned int i = rnd() % FZ_SYNCOBJS;
	struct drm_syncobj_destroy a = { .handle = rnd() % 8 ? f->syncobjs[i] : (uint32_t)rnd() % 64 };
	int err = fz_ioctl(f->fd, DRM_IOCTL_SYNCOBJ_DESTROY, &a);

	(void)t;
	fz_expect("SYNCOBJ_DESTROY", err, EINVAL, ENOENT);
	fz_lock(&f->lock);
	if (!err && f->syncobjs[i] == a.handle)
		f->syncobjs[i] = 0;
	fz_unlock(&f->lock);
}

static void fz_op_syncobj_wait(struct fz_thread *t, struct fz_file *f)
{
	uint32_t handles[3];
	unsigned int n = 1 + rnd() % 3, i;
	struct timespec now;
	struct drm_syncobj_wait a = {
		.handles = (uintptr_t)handles, .count_handles = n,
		.flags = rnd() % 4 ? 0 : (uint32_t)FZ_PICK(DRM_SYNCOBJ_WAIT_FLAGS_WAIT_ALL,
			DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT,
			DRM_SYNCOBJ_WAIT_FLAGS_WAIT_ALL | DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT),
	};
	uint64_t delay = FZ_PICK(0, 100000, 2000000);
	int err;

	(void)t;
	for (i = 0; i < n; i++)
		handles[i] = rnd() % 8 ? f->syncobjs[rnd() % FZ_SYNCOBJS] : (uint32_t)rnd() % 64;
	clock_gettime(CLOCK_MONOTONIC, &now);
	a.timeout_nsec = (int64_t)now.tv_sec * 1000000000ll + now.tv_nsec + (int64_t)delay;
	err = fz_ioctl(f->fd, DRM_IOCTL_SYNCOBJ_WAIT, &a);
	fz_expect("SYNCOBJ_WAIT", err, EINVAL, ENOENT, ETIME);
}

static void fz_op_syncobj_reset_signal(struct fz_thread *t, struct fz_file *f)
{
	uint32_t handle = rnd() % 8 ? f->syncobjs[rnd() % FZ_SYNCOBJS] : (uint32_t)rnd() % 64;
	struct drm_syncobj_array a = { .handles = (uintptr_t)&handle, .count_handles = 1 };
	bool reset = rnd() % 2;
	int err;

	(void)t;
	err = fz_ioctl(f->fd, reset ? DRM_IOCTL_SYNCOBJ_RESET : DRM_IOCTL_SYNCOBJ_SIGNAL, &a);
	fz_expect(reset ? "SYNCOBJ_RESET" : "SYNCOBJ_SIGNAL", err, EINVAL, ENOENT);
}

/* Keep fd in the pool of sync files, closing the one it replaces. */
static void fz_keep_sync_file(int fd)
{
	unsigned int i = rnd() % FZ_SYNC_FILES;
	int old;

	fz_lock(&fz.lock);
	old = fz.sync_files[i];
	fz.sync_files[i] = fd;
	fz_unlock(&fz.lock);
	if (old >= 0) {
		fz_calls++;
		close(old);
	}
}

/*
 * A syncobj's fence out as a sync file, a sync file's fence into a syncobj,
 * or a syncobj moved to another file (maybe this one) through its fd.
 */
static void fz_op_syncobj_fd(struct fz_thread *t, struct fz_file *f)
{
	struct fz_file *to = &fz.files[rnd() % FZ_FILES];
	unsigned int kind = rnd() % 3, i = rnd() % FZ_SYNCOBJS;
	struct drm_syncobj_handle a = {
		.handle = rnd() % 8 ? f->syncobjs[rnd() % FZ_SYNCOBJS] : (uint32_t)rnd() % 64,
	};
	int sf = fz.sync_files[rnd() % FZ_SYNC_FILES], err;

	(void)t;
	if (kind == 0) {
		a.flags = DRM_SYNCOBJ_HANDLE_TO_FD_FLAGS_EXPORT_SYNC_FILE;
		err = fz_ioctl(f->fd, DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD, &a);
		/* A syncobj without a fence has nothing to export: EINVAL. */
		fz_expect("SYNCOBJ export sync file", err, EINVAL, ENOENT);
		if (!err)
			fz_keep_sync_file(a.fd);
	} else if (kind == 1) {
		a.flags = DRM_SYNCOBJ_FD_TO_HANDLE_FLAGS_IMPORT_SYNC_FILE;
		a.fd = rnd() % 16 ? sf : (int32_t)rnd();
		err = fz_ioctl(f->fd, DRM_IOCTL_SYNCOBJ_FD_TO_HANDLE, &a);
		fz_expect("SYNCOBJ import sync file", err, EINVAL, ENOENT, EBADF);
	} else {
		err = fz_ioctl(f->fd, DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD, &a);
		fz_expect("SYNCOBJ export", err, EINVAL, ENOENT);
		if (err)
			return;
		a.handle = 0;
		err = to->fd < 0 ? -EBADF : fz_ioctl(to->fd, DRM_IOCTL_SYNCOBJ_FD_TO_HANDLE, &a);
		fz_expect("SYNCOBJ import", err, EINVAL, EBADF);
		fz_calls++;
		close(a.fd);
		if (err)
			return;
		fz_lock(&to->lock);
		to->syncobjs[i] = a.handle;
		fz_unlock(&to->lock);
	}
}

/* A sync file polled, described or merged with another. */
static void fz_op_sync_file(struct fz_thread *t, struct fz_file *f)
{
	int a = fz.sync_files[rnd() % FZ_SYNC_FILES], b = fz.sync_files[rnd() % FZ_SYNC_FILES];
	unsigned int kind = rnd() % 3;
	int err;

	(void)t;
	(void)f;
	if (a < 0)
		return;
	if (kind == 0) {
		struct pollfd p = { .fd = a, .events = POLLIN };

		fz_calls++;
		poll(&p, 1, 0);
	} else if (kind == 1) {
		struct sync_file_info info = { 0 };

		err = fz_ioctl(a, SYNC_IOC_FILE_INFO, &info);
		fz_expect("SYNC_IOC_FILE_INFO", err, EBADF);
	} else if (b >= 0) {
		struct sync_merge_data m = { .name = "fz", .fd2 = b };

		err = fz_ioctl(a, SYNC_IOC_MERGE, &m);
		/* ENOENT: the other fd is no sync file (closed and its number reused). */
		fz_expect("SYNC_IOC_MERGE", err, EBADF, EINVAL, ENOENT);
		if (!err)
			fz_keep_sync_file(m.fence);
	}
}

static void fz_op_uq_create(struct fz_thread *t, struct fz_file *f)
{
	unsigned int i = rnd() % FZ_UQS, m = rnd() % FZ_MAPS;
	struct fz_map map = f->maps[m];
	struct drm_hpu_uqueue_create a = {
		.ring_va = rnd() % 8 ? map.va : rnd() & ((1ull << 48) - 1),
		.ring_size = rnd() % 16 ? 2u << (rnd() % 11) : (uint32_t)rnd() % 8192,
		.flags = rnd() % 64 ? 0 : 1,
		.pad = rnd() % 64 ? 0 : 1,
	};
	struct fz_uq *uq = &f->uqs[i];
	volatile uint32_t *old_db;
	int err = fz_ioctl(f->fd, DRM_IOCTL_HPU_UQUEUE_CREATE, &a);

	(void)t;
	fz_expect("UQUEUE_CREATE", err, EINVAL, ENOSPC, EDQUOT, ENOMEM, EOPNOTSUPP);
	if (err)
		return;
	/* A queue it replaces stays bound until the file closes; its doorbell is unmapped. */
	fz_lock(&f->lock);
	old_db = uq->db;
	*uq = (struct fz_uq){
		.live = true, .id = a.id, .ring_size = a.ring_size, .db_offset = a.doorbell_offset,
		.ring_va = a.ring_va, .ring = a.ring_va == map.va ? map.host : NULL,
		.room = a.ring_va == map.va ? map.size : 0,
	};
	fz_unlock(&f->lock);
	if (old_db)
		fz_db_unmap(old_db);
}

static void fz_op_uq_destroy(struct fz_thread *t, struct fz_file *f)
{
	struct fz_uq *uq = &f->uqs[rnd() % FZ_UQS];
	struct drm_hpu_uqueue_destroy a = {
		.id = rnd() % 8 ? uq->id : (uint32_t)rnd() % 32, .pad = rnd() % 64 ? 0 : 1,
	};
	int err = fz_ioctl(f->fd, DRM_IOCTL_HPU_UQUEUE_DESTROY, &a);

	(void)t;
	fz_expect("UQUEUE_DESTROY", err, EINVAL, ENOENT);
	/* Its doorbell stays mapped: stores to it now fault (SIGBUS). */
	fz_lock(&f->lock);
	if (!err && uq->id == a.id)
		uq->live = false;
	fz_unlock(&f->lock);
}

static void fz_op_uq_wait(struct fz_thread *t, struct fz_file *f)
{
	struct fz_uq *uq = &f->uqs[rnd() % FZ_UQS];
	struct drm_hpu_uqueue_wait a = {
		.id = rnd() % 8 ? uq->id : (uint32_t)rnd() % 32,
		.ci = rnd() % 4 ? uq->pi : (uint32_t)rnd(),
		.timeout_ns = (int64_t)FZ_PICK(0, 100000, 2000000),
		.flags = rnd() % 64 ? 0 : 1,
	};
	int err = fz_ioctl(f->fd, DRM_IOCTL_HPU_UQUEUE_WAIT, &a);

	(void)t;
	fz_expect("UQUEUE_WAIT", err, EINVAL, ENOENT, ETIME);
}

static void fz_op_db_map(struct fz_thread *t, struct fz_file *f)
{
	struct fz_uq *uq = &f->uqs[rnd() % FZ_UQS];
	uint64_t db_offset = uq->db_offset;
	uint64_t offset = rnd() % 8 ? db_offset : (rnd() % 64) * HPU_PAGE;
	size_t len = rnd() % 16 ? HPU_UQ_DB_PAGE_SIZE : 2 * HPU_UQ_DB_PAGE_SIZE;
	int flags = rnd() % 16 ? MAP_SHARED : MAP_PRIVATE;
	volatile uint32_t *old;
	void *db;

	(void)t;
	fz_calls++;
	db = mmap(NULL, len, PROT_READ | PROT_WRITE, flags, f->fd, (off_t)offset);
	if (db == MAP_FAILED) {
		fz_expect("mmap doorbell", -errno, EINVAL, EACCES);
		return;
	}
	if (len != HPU_UQ_DB_PAGE_SIZE || flags != MAP_SHARED || offset != db_offset) {
		fz_expect("mmap doorbell (refused)", -EEXIST, 0);
		fz_munmap(db, len);
		return;
	}
	fz_lock(&f->lock);
	old = uq->db;
	uq->db = db;
	fz_unlock(&f->lock);
	if (old)
		fz_db_unmap(old);
}

/* Jobs into the ring (when the CPU sees it) and PI, or a PI at random. */
static void fz_op_db_store(struct fz_thread *t, struct fz_file *f)
{
	struct fz_uq *uq = &f->uqs[rnd() % FZ_UQS];
	unsigned int jobs = 1 + rnd() % 4, i;
	uint64_t ring_bytes = (uint64_t)uq->ring_size * FZ_DESC_BYTES, r = rnd();
	struct fz_map maps[FZ_MAPS];
	uint8_t *cb;
	uint32_t size;

	fz_lock(&f->lock);
	memcpy(maps, f->maps, sizeof(maps));
	fz_unlock(&f->lock);
	if (!uq->db)
		return;
	if (r % 4 == 0 || !uq->ring || ring_bytes + FZ_CB_BYTES > uq->room) {
		fz_db_store(uq->db, HPU_UQ_DB_PI, r % 2 ? uq->pi + (uint32_t)(r >> 32) % 8 :
						       (uint32_t)(r >> 32));
		return;
	}
	cb = uq->ring + ring_bytes;
	size = fz_cb(maps, cb, FZ_CB_BYTES);
	for (i = 0; i < jobs; i++) {
		struct hpu_uq_desc *d = (struct hpu_uq_desc *)uq->ring + uq->pi % uq->ring_size;

		*d = (struct hpu_uq_desc){
			.cb_va = uq->ring_va + ring_bytes, .cb_size = size, .tag = uq->pi,
			.status = 0xffffffffu,
		};
		uq->pi++;
	}
	__atomic_thread_fence(__ATOMIC_RELEASE);
	fz_db_store(uq->db, HPU_UQ_DB_PI, uq->pi);
}

static void fz_op_db_unmap(struct fz_thread *t, struct fz_file *f)
{
	struct fz_uq *uq = &f->uqs[rnd() % FZ_UQS];
	volatile uint32_t *db;

	(void)t;
	fz_lock(&f->lock);
	db = uq->db;
	uq->db = NULL;
	fz_unlock(&f->lock);
	if (db)
		fz_db_unmap(db);
}

/* The file closed (its doorbells unmapped, or most of them) and opened again. */
static void fz_reopen_locked(struct fz_file *f)
{
	volatile uint32_t *old;
	unsigned int i;
	int fd;

	for (i = 0; i < FZ_UQS; i++) {
		if (!f->uqs[i].db)
			continue;
		/* A doorbell still mapped keeps the file open: the close waits for its unmap. */
		if (rnd() % 4) {
			fz_db_unmap(f->uqs[i].db);
			continue;
		}
		fz_lock(&fz.lock);
		old = fz.orphans[i];
		fz.orphans[i] = f->uqs[i].db;
		fz_unlock(&fz.lock);
		if (old)
			fz_db_unmap(old);
	}
	if (f->fd >= 0) {
		fz_calls++;
		close(f->fd);
	}
	memset(f->bos, 0, sizeof(f->bos));
	memset(f->maps, 0, sizeof(f->maps));
	memset(f->seqs, 0, sizeof(f->seqs));
	memset(f->syncobjs, 0, sizeof(f->syncobjs));
	memset(f->uqs, 0, sizeof(f->uqs));
	fd = fz_open_dev();
	fz_expect("open", fd < 0 ? fd : 0, ENOMEM, EDQUOT, ENOSPC);
	f->fd = fd;
}

static void fz_op_reopen(struct fz_thread *t, struct fz_file *f)
{
	(void)t;
	fz_lock(&f->lock);
	fz_reopen_locked(f);
	fz_unlock(&f->lock);
}

/* An ioctl number the driver does not have, or one of its own with another size. */
static void fz_op_bad_ioctl(struct fz_thread *t, struct fz_file *f)
{
	uint64_t buf[16] = { 0 };
	unsigned int nr = DRM_COMMAND_BASE + (rnd() % 4 ? 9 + rnd() % 16 : rnd() % 9);
	unsigned long req = rnd() % 2 ? DRM_IOWR(nr, uint64_t[2]) : DRM_IOWR(nr, uint64_t[16]);

	(void)t;
	/* Any errno will do: the driver must only not misbehave. */
	fz_ioctl(f->fd, req, buf);
}

static void fz_run_ops(struct fz_thread *t, unsigned long calls);

static void fz_print_errors(const char *who)
{
	unsigned int i;

	for (i = 0; i < FZ_ERRORS && fz.errors[i].count; i++)
		fprintf(stderr, "# %s: unexpected %s, %lu times\n", who, fz.errors[i].msg,
			fz.errors[i].count);
}

/*
 * A child on the files it shares with this process and one of its own: a
 * short sequence, then it exits or kills itself (with jobs in flight).
 */
static void fz_op_fork(struct fz_thread *t, struct fz_file *f)
{
	uint64_t child_seed = rnd();
	unsigned long calls = 20 + rnd() % 200;
	bool kill_self = rnd() % 2;
	int status;
	pid_t pid;

	(void)f;
	fz_calls++;
	pid = fork();
	if (pid < 0) {
		fz_expect("fork", -errno, EAGAIN, ENOMEM);
		return;
	}
	if (!pid) {
		/* Its own count: the parent's errors so far are the parent's. */
		fz.child = true;
		fz.loose = true;
		fz.unexpected = 0;
		memset(fz.errors, 0, sizeof(fz.errors));
		rnd_state = rnd_mix(child_seed);
		fz_reopen_locked(&fz.files[child_seed % FZ_FILES]);
		fz_run_ops(t, calls);
		if (kill_self)
			kill(getpid(), SIGKILL);
		fz_print_errors("child");
		_exit(atomic_load(&fz.unexpected) ? 1 : 0);
	}
	if (waitpid(pid, &status, 0) != pid)
		fz_expect("waitpid", -errno, 0);
	else if (WIFEXITED(status) && WEXITSTATUS(status))
		fz_expect("child (its calls: replay with -v)", -EPROTO, 0);
	else if (WIFSIGNALED(status) && WTERMSIG(status) != SIGKILL)
		fz_expect("child killed by a signal", -WTERMSIG(status), 0);
}

struct fz_op {
	const char *name;
	void (*fn)(struct fz_thread *t, struct fz_file *f);
	unsigned int weight;
};

static const struct fz_op fz_ops[] = {
	{ "INFO", fz_op_info, 6 },
	{ "GEM_CREATE", fz_op_gem_create, 8 },
	{ "GEM_CLOSE", fz_op_gem_close, 5 },
	{ "VM_MAP", fz_op_vm_map, 10 },
	{ "VM_UNMAP", fz_op_vm_unmap, 6 },
	{ "SUBMIT", fz_op_submit, 12 },
	{ "WAIT", fz_op_wait, 8 },
	{ "SYNCOBJ_CREATE", fz_op_syncobj_create, 4 },
	{ "SYNCOBJ_DESTROY", fz_op_syncobj_destroy, 2 },
	{ "SYNCOBJ_WAIT", fz_op_syncobj_wait, 3 },
	{ "SYNCOBJ_RESET/SIGNAL", fz_op_syncobj_reset_signal, 2 },
	{ "SYNCOBJ fds", fz_op_syncobj_fd, 4 },
	{ "sync file", fz_op_sync_file, 2 },
	{ "UQUEUE_CREATE", fz_op_uq_create, 3 },
	{ "UQUEUE_DESTROY", fz_op_uq_destroy, 2 },
	{ "UQUEUE_WAIT", fz_op_uq_wait, 3 },
	{ "mmap doorbell", fz_op_db_map, 3 },
	{ "doorbell store", fz_op_db_store, 5 },
	{ "munmap doorbell", fz_op_db_unmap, 1 },
	{ "bad ioctl", fz_op_bad_ioctl, 2 },
};

/*
 * One operation with the first allocation past a random number of bytes
 * failing, as syzkaller's fail-nth does: with one thread, where the failure
 * lands depends on this call alone, not on how many allocations the
 * driver's retries made before (a GEM_CREATE short of HBM waits for freed
 * HBM being zeroed and tries again), so that a seed replays.
 */
static void fz_op_fail_nth(struct fz_thread *t, struct fz_file *f, const struct fz_op *op)
{
	char space[32];

	snprintf(space, sizeof(space), "%llu", (unsigned long long)(rnd() % 16384));
	fz_expect("fail_alloc space", fz_write("space", space), 0);
	fz_expect("fail_alloc times", fz_write("times", "1"), 0);
	op->fn(t, f);
	fz_expect("fail_alloc times", fz_write("times", "0"), 0);
}

/* Rare ones, out of every FZ_RARE operations: close and reopen, fork. */
#define FZ_RARE 2000

static void fz_run_ops(struct fz_thread *t, unsigned long calls)
{
	unsigned int total = 0, i;
	unsigned long start = fz_calls;

	for (i = 0; i < sizeof(fz_ops) / sizeof(fz_ops[0]); i++)
		total += fz_ops[i].weight;
	while (fz_calls - start < calls) {
		struct fz_file *f = &fz.files[rnd() % FZ_FILES];
		unsigned int rare = rnd() % FZ_RARE, pick = rnd() % total, w = 0;

		if (f->fd < 0 || rare == 0) {
			fz_op_reopen(t, f);
			t->ops[30]++;
			continue;
		}
		if (rare == 1) {
			if (!fz.child)
				fz_op_fork(t, f);
			t->ops[31]++;
			continue;
		}
		for (i = 0; pick >= w + fz_ops[i].weight; i++)
			w += fz_ops[i].weight;
		if (fz.fail_nth && rnd() % 4 == 0)
			fz_op_fail_nth(t, f, &fz_ops[i]);
		else
			fz_ops[i].fn(t, f);
		t->ops[i]++;
	}
}

static void *fz_thread_run(void *arg)
{
	struct fz_thread *t = arg;

	rnd_state = t->seed;
	fz_calls = 0;
	if (fz.failslab)
		fz_make_it_fail(true);
	fz_run_ops(t, t->budget);
	if (fz.failslab)
		fz_make_it_fail(false);
	t->budget = fz_calls;
	t->digest = rnd_state;
	return NULL;
}

/* ---- phases ---- */

/*
 * Failures for this process group (its own, made here) only: every
 * interval-th allocation past space bytes, with probability percent, times
 * of them at most (-1: no bound).
 */
static int fz_inject(unsigned long long interval, unsigned long long probability, int times,
		     unsigned long long space)
{
	char value[32];
	int err = setpgid(0, 0) ? -errno : 0;

	snprintf(value, sizeof(value), "%d", (int)getpgrp());
	err = err ?: fz_write("task-pgid", value);
	err = err ?: fz_write("task-filter", "Y");
	err = err ?: fz_write("verbose", "0");
	snprintf(value, sizeof(value), "%d", times);
	err = err ?: fz_write("times", value);
	snprintf(value, sizeof(value), "%llu", space);
	err = err ?: fz_write("space", value);
	snprintf(value, sizeof(value), "%llu", interval);
	err = err ?: fz_write("interval", value);
	snprintf(value, sizeof(value), "%llu", probability);
	return err ?: fz_write("probability", value);
}

static void fz_setup(void)
{
	unsigned int i;

	memset(fz.files, 0, sizeof(fz.files));
	pthread_mutex_init(&fz.lock, NULL);
	for (i = 0; i < FZ_FILES; i++) {
		pthread_mutex_init(&fz.files[i].lock, NULL);
		fz.files[i].fd = -1;
	}
	for (i = 0; i < FZ_SYNC_FILES; i++)
		fz.sync_files[i] = -1;
	memset((void *)fz.orphans, 0, sizeof(fz.orphans));
	fz.arena = hpu_host_pages(FZ_ARENA_PAGES * HPU_PAGE);
	fz.unexpected = 0;
	memset(fz.errors, 0, sizeof(fz.errors));
	fz.loose = fz.threads > 1;
	signal(SIGBUS, fz_on_fault);
	signal(SIGSEGV, fz_on_fault);
}

/* Everything the phase holds closed and unmapped. */
static void fz_close_all(void)
{
	unsigned int i, u;

	for (i = 0; i < FZ_FILES; i++) {
		struct fz_file *f = &fz.files[i];

		for (u = 0; u < FZ_UQS; u++)
			if (f->uqs[u].db)
				munmap((void *)f->uqs[u].db, HPU_UQ_DB_PAGE_SIZE);
		if (f->fd >= 0)
			close(f->fd);
		memset(f, 0, sizeof(*f));
		f->fd = -1;
	}
	for (i = 0; i < FZ_ORPHANS; i++) {
		if (fz.orphans[i])
			munmap((void *)fz.orphans[i], HPU_UQ_DB_PAGE_SIZE);
		fz.orphans[i] = NULL;
	}
	for (i = 0; i < FZ_SYNC_FILES; i++) {
		if (fz.sync_files[i] >= 0)
			close(fz.sync_files[i]);
		fz.sync_files[i] = -1;
	}
}

/*
 * A job that must run right on every file after the fuzzing: HBM filled
 * with a pattern and copied to host memory.  0, or the first failure.
 */
static int fz_good_jobs(void)
{
	uint8_t *check = hpu_host_pages(HPU_PAGE);
	struct hpu_cb *cb = calloc(1, sizeof(*cb));
	unsigned int i, k;
	int err = 0;

	if (!check || !cb)
		return -ENOMEM;
	for (i = 0; i < FZ_FILES && !err; i++) {
		int fd = fz.files[i].fd;
		uint64_t hbm_va = 0, host_va = 0;
		uint32_t h;

		if (fd < 0)
			continue;
		memset(check, 0, HPU_PAGE);
		err = hpu_gem_create(fd, HPU_PAGE, 0, &h);
		if (!err)
			err = hpu_vm_map(fd, h, 0, NULL, HPU_PAGE, FZ_RW, &hbm_va);
		if (!err)
			err = hpu_vm_map(fd, 0, 0, check, HPU_PAGE, FZ_RW, &host_va);
		cb->size = 0;
		hpu_cb_memset(cb, hbm_va, 0x42 + i, HPU_PAGE);
		hpu_cb_dma(cb, host_va, hbm_va, HPU_PAGE);
		if (!err)
			err = hpu_run(fd, i % HPU_NUM_QUEUES, cb->buf, cb->size);
		for (k = 0; !err && k < HPU_PAGE; k++)
			if (check[k] != 0x42 + i)
				err = -EBADMSG;
		if (host_va)
			hpu_vm_unmap(fd, host_va);
	}
	free(cb);
	munmap(check, HPU_PAGE);
	return err;
}

/* Waits up to 30 s for the driver to hold nothing of the closed files; the first key held. */
static const char *fz_held(const char *bdf, long long *value)
{
	static const char *const keys[] = {
		"contexts", "hbm_used", "file_hbm", "file_tables", "users", "host_pinned",
	};
	unsigned int try, k;

	for (try = 0; try < 300; try++) {
		for (k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
			*value = hpu_usage(bdf, keys[k]);
			if (*value)
				break;
		}
		if (k == sizeof(keys) / sizeof(keys[0]))
			return NULL;
		usleep(100 * 1000);
	}
	return keys[k];
}

FIXTURE(ioctl_fuzz) {
	char bdf[64];
	char mark[64];
};

FIXTURE_SETUP(ioctl_fuzz)
{
	ASSERT_EQ(0, hpu_find_bdf(self->bdf, sizeof(self->bdf)));
	ASSERT_LE(0, hpu_usage(self->bdf, "contexts")) TH_LOG("debugfs \"usage\": run as root");
	ASSERT_EQ(0, hpu_log_mark(self->mark, sizeof(self->mark)));
}

FIXTURE_TEARDOWN(ioctl_fuzz)
{
}

/* One phase of calls, seeded by stream; then the good jobs, and everything closed. */
static void fz_phase(struct __test_metadata *_metadata, FIXTURE_DATA(ioctl_fuzz) *self,
		     unsigned int stream, unsigned long calls, bool inject)
{
	static struct fz_thread threads[FZ_MAX_THREADS];
	unsigned long done = 0, want = 0, ops[32] = { 0 };
	unsigned int i, k;
	long long held;
	const char *key;
	double start, s;

	fz_setup();
	ASSERT_NE(NULL, fz.arena);
	/* No injection left on by a run that stopped halfway. */
	if (!inject)
		ASSERT_EQ(0, fz_write("probability", "0"));
	ASSERT_EQ(0, hpu_node_path(self->bdf, fz.node, sizeof(fz.node)));
	for (i = 0; i < FZ_FILES; i++)
		fz_reopen_locked(&fz.files[i]);
	start = hpu_now_s();
	for (i = 0; i < fz.threads; i++) {
		/* Thread 0's stream is the one-thread run's. */
		threads[i].id = i;
		threads[i].seed = rnd_mix(fz.seed + stream * FZ_MAX_THREADS + i);
		threads[i].budget = calls / fz.threads;
		want += threads[i].budget;
	}
	if (fz.threads == 1) {
		fz_thread_run(&threads[0]);
	} else {
		for (i = 0; i < fz.threads; i++)
			ASSERT_EQ(0, pthread_create(&threads[i].thread, NULL, fz_thread_run,
						    &threads[i]));
		for (i = 0; i < fz.threads; i++)
			pthread_join(threads[i].thread, NULL);
	}
	s = hpu_now_s() - start;
	/* The checks below allocate too. */
	if (inject)
		ASSERT_EQ(0, fz_write("probability", "0"));
	for (i = 0; i < fz.threads; i++) {
		done += threads[i].budget;
		for (k = 0; k < 32; k++)
			ops[k] += threads[i].ops[k];
	}
	TH_LOG("%lu calls in %.1f s: %.0f calls/s, %u threads, %lu unexpected", done, s, done / s,
	       fz.threads, (unsigned long)fz.unexpected);
	for (k = 0; k < sizeof(fz_ops) / sizeof(fz_ops[0]); k++)
		TH_LOG("  %-22s %lu", fz_ops[k].name, ops[k]);
	TH_LOG("  %-22s %lu", "close and reopen", ops[30]);
	TH_LOG("  %-22s %lu", "fork", ops[31]);
	printf("BENCH ioctl_fuzz_calls_per_s_%u %.0f calls/s\n", stream, done / s);
	if (fz.threads == 1)
		TH_LOG("stream digest %#llx: a replay ends with the same",
		       (unsigned long long)threads[0].digest);
	fz_print_errors("phase");
	EXPECT_EQ(0, fz.unexpected);
	EXPECT_LE(want, done);

	EXPECT_EQ(0, fz_good_jobs());
	fz_close_all();
	key = fz_held(self->bdf, &held);
	EXPECT_EQ(NULL, key) TH_LOG("usage: %s %lld once every file is closed", key, held);
	/* failslab fails kmemleak's own allocations in these threads too: that notice is no report. */
	EXPECT_EQ(fz.failslab ? hpu_log_count(self->mark, "kmemleak: Cannot allocate") : 0,
		  hpu_log_count(self->mark, "WARNING|BUG|Oops|Call Trace|refcount|leak"));
}

static void fz_log_seed(struct __test_metadata *_metadata)
{
	TH_LOG("seed %#llx: `ioctl_fuzz_test -s %#llx -j 1` replays it call for call",
	       (unsigned long long)fz.seed, (unsigned long long)fz.seed);
}

TEST_F_TIMEOUT(ioctl_fuzz, random_calls, FZ_TIMEOUT_S)
{
	long long left;

	fz_log_seed(_metadata);
	if (fz.failslab) {
		ASSERT_EQ(0, fz_failslab(true)) TH_LOG("no " FZ_FAILSLAB ": CONFIG_FAILSLAB?");
		TH_LOG("the calls' slab allocations fail: probability %s%%", FZ_FAILSLAB_PERCENT);
	}
	fz_phase(_metadata, self, 1, fz.calls - fz.calls / 4, false);
	if (fz.failslab) {
		left = fz_read_in(FZ_FAILSLAB, "times");
		EXPECT_EQ(0, fz_failslab(false));
		TH_LOG("%lld slab allocations failed", FZ_FAILSLAB_TIMES - left);
		EXPECT_LT(left, FZ_FAILSLAB_TIMES);
	}
}

/*
 * The same under allocation failures: this process group's allocations
 * and pins in the driver fail at random (one thread: every interval-th, so
 * that the run replays), and each must unwind to an errno.
 */
TEST_F_TIMEOUT(ioctl_fuzz, random_calls_under_allocation_failures, FZ_TIMEOUT_S)
{
	uint64_t r = rnd_mix(fz.seed);
	long long before;

	fz_log_seed(_metadata);
	before = fz_read("injected");
	ASSERT_LE(0, before) TH_LOG("no " FZ_FAIL_ALLOC ": a driver without hpu_fault.c?");
	/* One thread: a failure in one call of four (fz_op_fail_nth()); else at random. */
	fz.fail_nth = fz.threads == 1;
	if (fz.fail_nth) {
		ASSERT_EQ(0, fz_inject(1, 100, 0, 0));
		TH_LOG("allocations fail: in one call of four, past a random number of bytes");
	} else {
		ASSERT_EQ(0, fz_inject(1, 2 + r % 20, -1, 0));
		TH_LOG("allocations fail: probability %lld%%", fz_read("probability"));
	}

	fz_phase(_metadata, self, 2, fz.calls / 4, true);
	TH_LOG("%lld allocations failed", fz_read("injected") - before);
	EXPECT_LT(before, fz_read("injected"));
}

/*
 * A read-only mapping of memory the process may write is pinned for
 * writing, and for reading only when the memory is read-only (hpu_vm.c):
 * a pin that fails for want of memory must fail VM_MAP, not be taken
 * again for reading, which pins the zero page in place of a page never
 * written, and the device then misses what the process writes there.
 */
TEST_F(ioctl_fuzz, a_pin_short_of_memory_fails_a_read_only_map)
{
	const uint64_t size = 1 << 20;
	uint8_t *mem = hpu_host_pages(size);
	uint64_t va = 0;
	int fd = hpu_open_node(self->bdf);

	ASSERT_NE(NULL, mem);
	ASSERT_LE(0, fd);
	/* The mapping's struct and its page array pass; the pin of 1 MiB is the first past space. */
	ASSERT_EQ(0, fz_inject(1, 100, 1, size));
	EXPECT_EQ(-ENOMEM, hpu_vm_map(fd, 0, 0, mem, size, DRM_HPU_VM_MAP_READ, &va));
	EXPECT_EQ(0, fz_read("times"));
	ASSERT_EQ(0, fz_write("probability", "0"));
	close(fd);
	munmap(mem, size);
}

#define FZ_MAX_UQ "/sys/module/hpu/parameters/max_file_uqueues"

struct fz_race {
	int fd;
	uint64_t offset, live; /* the offset to map around; the held queue's, left alone */
	double until;
	unsigned long mapped, faulted;
};

/* Maps the offsets around race->offset while they come and go, and stores to what it gets. */
static void *fz_race_mapper(void *arg)
{
	struct fz_race *r = arg;
	unsigned int k = 0;
	void *p;

	while (hpu_now_s() < r->until) {
		uint64_t off = r->offset + ((int64_t)(k++ % 5) - 2) * (int64_t)HPU_PAGE;

		if (off == r->live)
			continue;
		p = mmap(NULL, HPU_UQ_DB_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd,
			 (off_t)off);
		if (p == MAP_FAILED)
			continue;
		r->mapped++;
		fz_guarded = 1;
		if (sigsetjmp(fz_jmp, 1))
			r->faulted++;
		else
			*(volatile uint32_t *)p = 1;
		fz_guarded = 0;
		munmap(p, HPU_UQ_DB_PAGE_SIZE);
	}
	return NULL;
}

/*
 * A doorbell's mmap offset exists from the start of UQUEUE_CREATE, before
 * its queue is bound, and through a create that fails: a mapping of it
 * made meanwhile must fault with SIGBUS, not oops the kernel (the fault
 * handler read the queue of a doorbell that had none).  One thread makes
 * creates that fail (-EDQUOT, max_file_uqueues=1 and a queue held) while
 * another maps the offsets their doorbells take, for 3 s.
 */
TEST_F(ioctl_fuzz, a_doorbell_without_its_queue_faults)
{
	struct fz_race r = { .fd = hpu_open_node(self->bdf) };
	uint8_t *ring = hpu_host_pages(HPU_PAGE);
	uint64_t ring_va = 0, offset;
	uint32_t id2;
	unsigned long creates = 0;
	char old[16];
	pthread_t mapper;

	ASSERT_LE(0, r.fd);
	ASSERT_NE(NULL, ring);
	signal(SIGBUS, fz_on_fault);
	ASSERT_EQ(0, hpu_read_file(FZ_MAX_UQ, old, sizeof(old)));
	ASSERT_EQ(0, hpu_write_file(FZ_MAX_UQ, "2"));
	ASSERT_EQ(0, hpu_vm_map(r.fd, 0, 0, ring, HPU_PAGE, FZ_RW, &ring_va));
	/* The second queue's offset, given back: the failing creates' doorbells take it. */
	ASSERT_EQ(0, hpu_uq_create(r.fd, ring_va, HPU_UQ_TEST_RING, &id2, &r.live));
	ASSERT_EQ(0, hpu_uq_create(r.fd, ring_va, HPU_UQ_TEST_RING, &id2, &r.offset));
	ASSERT_EQ(0, hpu_uq_destroy(r.fd, id2));
	ASSERT_EQ(0, hpu_write_file(FZ_MAX_UQ, "1"));
	r.until = hpu_now_s() + 3;
	ASSERT_EQ(0, pthread_create(&mapper, NULL, fz_race_mapper, &r));
	while (hpu_now_s() < r.until) {
		EXPECT_EQ(-EDQUOT, hpu_uq_create(r.fd, ring_va, HPU_UQ_TEST_RING, &id2, &offset));
		creates++;
	}
	pthread_join(mapper, NULL);
	TH_LOG("%lu creates refused; %lu doorbells of theirs mapped, %lu stores faulted", creates,
	       r.mapped, r.faulted);
	EXPECT_EQ(r.mapped, r.faulted);
	EXPECT_EQ(0, hpu_write_file(FZ_MAX_UQ, old));
	close(r.fd);
	munmap(ring, HPU_PAGE);
}

/* Nothing left behind: the module unloads (warning of what it still held) and loads again. */
TEST_F(ioctl_fuzz, unload)
{
	EXPECT_EQ(0, hpu_unload());
	EXPECT_EQ(0, hpu_log_count(self->mark, "WARNING|BUG|Oops|Call Trace"));
	ASSERT_EQ(0, hpu_load(""));
}

static void fz_usage(const char *argv0)
{
	fprintf(stderr, "usage: %s [-s SEED] [-n CALLS] [-j THREADS] [-v] [-F] [harness options]\n",
		argv0);
	exit(2);
}

int main(int argc, char **argv)
{
	int i, out = 1;

	fz.seed = fuzz_seed();
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-v")) {
			fz.verbose = true;
		} else if (!strcmp(argv[i], "-F")) {
			fz.failslab = true;
		} else if (i + 1 < argc && !strcmp(argv[i], "-s")) {
			fz.seed = strtoull(argv[++i], NULL, 0);
		} else if (i + 1 < argc && !strcmp(argv[i], "-n")) {
			fz.calls = strtoul(argv[++i], NULL, 0);
		} else if (i + 1 < argc && !strcmp(argv[i], "-j")) {
			fz.threads = strtoul(argv[++i], NULL, 0);
			if (!fz.threads || fz.threads > FZ_MAX_THREADS)
				fz_usage(argv[0]);
		} else if (argv[i][0] == '-' && argv[i][1] && strchr("snj", argv[i][1])) {
			fz_usage(argv[0]);
		} else {
			argv[out++] = argv[i];
		}
	}
	argv[out] = NULL;
	printf("# ioctl_fuzz seed %#llx, %lu calls, %u threads\n", (unsigned long long)fz.seed,
	       fz.calls, fz.threads);
	return test_harness_run(out, argv);
}
