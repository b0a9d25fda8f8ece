// SPDX-License-Identifier: MIT
/*
 * A hostile process against a victim (issue 21): while one process abuses
 * the device, another trains hpu_mlp.h's model through libhpu.  The victim
 * must end bitwise where the same steps run alone just before end, with no
 * call failing, within a bound of its time alone (victim_bound_ms()); then
 * the hostile is killed and the device still runs the victim's steps right.
 * One test per abuse:
 *  - user_queue_flood: every user queue the hostile may take, kept full of
 *    long jobs (LIN_DMA copies within its own HBM), refilled as they end;
 *  - kernel_queue_flood: the same through SUBMIT, on every kernel queue;
 *  - kernel_queue_flood_shared: the same, against a victim that submits
 *    through SUBMIT too, so that its jobs queue behind the hostile's in
 *    the same rings, 64 long jobs deep: each waits for the long job at the
 *    head to be set aside (preemption), not for the jobs ahead to end;
 *  - staged_flood: user queues full of GEMMs whose A the engine stages
 *    (its HBM mapped out of order), so that every yield of theirs keeps
 *    or gathers again a staging buffer;
 *  - parked_waits: 255 jobs on each kernel queue parked on a WAIT nobody
 *    signals, against a victim that submits through SUBMIT too
 *    (HPU_USER_QUEUES=0), so that the rings' admission matters;
 *  - parked_waits_in_calls: the same, each WAIT in a CALL's callee;
 *  - resources_taken: every file, user queue, page-table page and byte of
 *    HBM the hostile can get (until errors), held while it idles.
 * The driver runs with its defaults (a 10 s job timeout): the victim must
 * not need the hostile's jobs to time out.
 *
 * Each side is a child process.  Run as root (run-suites.sh), the test makes
 * them two ordinary users of the device group, as on a shared machine, each
 * with Debian's RLIMIT_MEMLOCK: a user's shares are its own, so one user's
 * abuse may not use up another's.  Otherwise both keep the caller's user,
 * and resources_taken, which needs two users, is skipped.
 */
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "kselftest_harness.h"

#include "hpu_abi.h"
#include "hpu_mlp.h"
#include "hpu_test.h"

#define RW (DRM_HPU_VM_MAP_READ | DRM_HPU_VM_MAP_WRITE)

/* The two users (run-suites.sh's suites' user, and another), in its device group. */
#define VICTIM_UID 2000
#define HOSTILE_UID 2002
#define DEVICE_GID 2001
#define USER_MEMLOCK (8ull << 20)

/*
 * A long job: HOSTILE_COPIES copies of 1 MiB within the hostile's own
 * 2 MiB of HBM, a GiB moved: hundreds of the engine's slices.
 */
#define HOSTILE_BUF (2ull << 20)
#define HOSTILE_COPY (1ull << 20)
#define HOSTILE_COPIES 1024
/* Long jobs in flight on each kernel queue: what the driver lets into a ring of one file. */
#define HOSTILE_WINDOW 64
/* Jobs parked on WAITs on each kernel queue: as many as a ring holds. */
#define HOSTILE_PARKED 255

/* The victim's results, bitwise: parameters, loss sum, statistics, dropout mask. */
#define STATE_BYTES ((HID * IN + HID + OUT * HID + OUT + 1 + HID) * 4 + B * HID)

/* What one run of the victim reports, in memory shared with the test. */
struct victim {
	int ret;          /* 0, or the -errno of the first call that failed */
	char what[64];    /* that call */
	char err[256];    /* and hpu_last_error() after it */
	double ms;        /* from the device's open to the results read back */
	uint8_t state[STATE_BYTES];
};

/* What the hostile tells the test once its abuse runs (or why it could not start). */
struct hostile_report {
	int err;
	char msg[192];
};

/*
 * The victim is slowed by what it shares, not stopped.  With the engine
 * time-sliced (2 ms slices, copies yield between 64 KiB steps) each of its
 * ~150 jobs for four steps waits about a slice of each busy queue of the
 * hostile's: measured, 0.05-0.4 s alone and 1.2-5.9 s under four flooded
 * user queues in the TCG guest, the spread being the host's load (other
 * guests on its two cores stretch every slice).  A victim that waits for
 * one of the hostile's jobs to time out (10 s by default, counted from when
 * the hostile started) takes about 10 s more than alone, whatever its time
 * alone, so the bound is additive and under that: 8 s over the time alone.
 */
static double victim_bound_ms(double solo_ms)
{
	return solo_ms + 8000;
}

/* How long a run alone may take before the test gives up on it. */
#define SOLO_LIMIT_MS 60000.0
/* How long the hostile may take to start its abuse (resources_taken takes all HBM). */
#define HOSTILE_START_MS 120000

/* In a child: become uid (with its own group, in the device's group) when root. */
static int become(uid_t uid)
{
	struct rlimit memlock = { USER_MEMLOCK, USER_MEMLOCK };
	gid_t dev_gid = DEVICE_GID;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL))
		return -errno;
	if (geteuid())
		return 0;
	if (setrlimit(RLIMIT_MEMLOCK, &memlock) || setgroups(1, &dev_gid) || setgid(uid) ||
	    setuid(uid))
		return -errno;
	return 0;
}

static void *shared_pages(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* Prints /proc/<pid>/<name> as TAP comments (root may read another user's). */
static void print_proc(pid_t pid, const char *name)
{
	char path[64], line[256];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/%s", pid, name);
	f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		ksft_print_msg("  %s: %s", name, line);
	fclose(f);
}

/* Where a late process is: three looks, 100 ms apart, at its system call and kernel stack. */
static void print_where(pid_t pid)
{
	unsigned int i;

	for (i = 0; i < 3; i++) {
		if (i)
			usleep(100 * 1000);
		ksft_print_msg("process %d still runs, look %u:\n", pid, i + 1);
		print_proc(pid, "syscall");
		print_proc(pid, "stack");
	}
}

/* Waits for pid until deadline (hpu_now_s()), then kills it; its wait status. */
static int reap_by(pid_t pid, double deadline)
{
	int status = 0;

	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (hpu_now_s() >= deadline) {
			print_where(pid);
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			break;
		}
		usleep(5000);
	}
	return status;
}

static int victim_fail(struct victim *v, const char *what, int ret)
{
	v->ret = ret;
	snprintf(v->what, sizeof(v->what), "%s", what);
	snprintf(v->err, sizeof(v->err), "%s", hpu_last_error());
	return ret;
}

#define VICTIM_CALL(v, call) do {					\
		int ret_ = (call);					\
		if (ret_)						\
			return victim_fail(v, #call, ret_);		\
	} while (0)

/* Whether mlp_init() made every tensor (it leaves one it could not make NULL). */
static bool mlp_complete(const struct mlp *m)
{
	struct hpu_tensor *const *t = (struct hpu_tensor *const *)m;
	size_t i;

	for (i = 0; i < sizeof(*m) / sizeof(*t); i++)
		if (!t[i])
			return false;
	return true;
}

/* Opens the device, trains STEPS steps from the usual seed, reads the results back. */
static int victim_train(struct victim *v)
{
	struct hpu_tensor *out[7];
	struct hpu_device *dev = NULL;
	struct hpu_stream *s = NULL;
	double t0 = hpu_now_s();
	unsigned int i, off = 0;
	struct mlp m;

	VICTIM_CALL(v, hpu_device_open(0, &dev));
	VICTIM_CALL(v, hpu_stream_create(dev, &s));
	/* A first tensor alone: mlp_init() does not say why it could not make one. */
	VICTIM_CALL(v, hpu_tensor_empty(dev, HPU_DT_F32, 1, (int64_t[]){ 1 }, &out[0]));
	hpu_tensor_destroy(out[0]);
	lcg = 1;
	mlp_init(dev, s, &m);
	if (!mlp_complete(&m))
		return victim_fail(v, "mlp_init() (a tensor is missing)", -ENOENT);
	for (i = 0; i < STEPS; i++) {
		VICTIM_CALL(v, load_batch(s, &m, i));
		VICTIM_CALL(v, mlp_step(dev, s, &m));
	}
	VICTIM_CALL(v, hpu_stream_synchronize(s));
	memcpy(out, m.p, sizeof(m.p));
	out[4] = m.loss_sum;
	out[5] = m.stat;
	out[6] = m.mask;
	for (i = 0; i < 7; i++) {
		struct hpu_tensor_layout l;
		size_t size;

		hpu_tensor_get_layout(out[i], &l);
		size = hpu_tensor_numel(out[i]) * hpu_dt_size(l.dtype);
		if (off + size > sizeof(v->state))
			return victim_fail(v, "the results' size", -EOVERFLOW);
		VICTIM_CALL(v, hpu_tensor_copy_to_host(s, out[i], v->state + off, size));
		off += size;
	}
	v->ms = (hpu_now_s() - t0) * 1000;
	mlp_free(&m);
	hpu_stream_destroy(s);
	hpu_device_close(dev);
	v->ret = 0;
	return 0;
}

/*
 * Runs the victim in a child, as the victim's user, through SUBMIT if
 * submit; kills it if it has not ended after limit_ms (v->ret -ETIME).
 * v->ret stays -ECHILD until the child sets it, at its end.
 */
static void victim_run(struct victim *v, bool submit, double limit_ms)
{
	double start = hpu_now_s();
	pid_t pid;
	int status;

	memset(v, 0, sizeof(*v));
	v->ret = -ECHILD;
	snprintf(v->what, sizeof(v->what), "the victim's process");
	pid = fork();
	if (pid < 0)
		return;
	if (!pid) {
		int err = become(VICTIM_UID);

		if (!err && submit && setenv("HPU_USER_QUEUES", "0", 1))
			err = -errno;
		if (err)
			victim_fail(v, "becoming the victim", err);
		else
			victim_train(v);
		_exit(0);
	}
	status = reap_by(pid, start + limit_ms / 1000);
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL && v->ret == -ECHILD) {
		v->ret = -ETIME;
		snprintf(v->what, sizeof(v->what), "the whole run (killed after %.0f ms)", limit_ms);
	}
}

/* Tells the test the hostile's abuse runs (err 0), or why not. */
static void hostile_report(int ready, int err, const char *fmt, ...)
{
	struct hostile_report r = { .err = err };
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r.msg, sizeof(r.msg), fmt, ap);
	va_end(ap);
	if (write(ready, &r, sizeof(r)) != sizeof(r))
		_exit(1);
}

/* Its 2 MiB of HBM, and a long job of copies within it in cb; 0 or -errno. */
static int long_job(int fd, struct hpu_cb *cb)
{
	uint64_t va = 0;
	uint32_t h;
	unsigned int i;
	int err = hpu_gem_create(fd, HOSTILE_BUF, 0, &h);

	if (!err)
		err = hpu_vm_map(fd, h, 0, NULL, HOSTILE_BUF, RW, &va);
	cb->size = 0;
	for (i = 0; !err && i < HOSTILE_COPIES; i++)
		hpu_cb_dma(cb, va + HOSTILE_COPY, va, HOSTILE_COPY);
	return err;
}

/*
 * A job's GEMMs: batch matrices of A's rows by B, A's stride 0, all fp32;
 * 8 G multiply-adds each, hundreds of ms, in blocks of 4 M.
 */
#define STAGED_GEMMS 2
#define STAGED_BATCH 2048u
#define STAGED_M 64u
#define STAGED_N 64u
#define STAGED_K 1024u
/* Where the hostile maps A's two pages, out of order. */
#define STAGED_VA (8ull << 30)

/*
 * A long job of GEMMs whose A crosses from one 2 MiB page of the hostile's
 * HBM into the other, mapped out of order: not one run, so staged.
 */
static int staged_job(int fd, struct hpu_cb *cb)
{
	const uint64_t a_bytes = STAGED_M * STAGED_K * 4;
	const uint64_t c_bytes = (uint64_t)STAGED_BATCH * STAGED_M * STAGED_N * 4;
	struct hpu_pkt_mme_gemm g = {
		.header = HPU_PKT_HEADER(HPU_PKT_MME_GEMM, 0),
		.dtype_ab = HPU_DTYPE_F32, .dtype_c = HPU_DTYPE_F32, .batch = STAGED_BATCH,
		.m = STAGED_M, .n = STAGED_N, .k = STAGED_K,
		.lda = STAGED_K, .ldb = STAGED_N, .ldc = STAGED_N,
		.stride_c = STAGED_M * STAGED_N, .alpha = 0x3f800000, /* 1.0f */
	};
	uint64_t va = STAGED_VA + HOSTILE_BUF;
	uint32_t a, bc;
	unsigned int i;
	int err = hpu_gem_create(fd, 2 * HOSTILE_BUF, 0, &a);

	if (!err)
		err = hpu_vm_map(fd, a, 0, NULL, HOSTILE_BUF, RW | DRM_HPU_VM_MAP_FIXED, &va);
	va = STAGED_VA;
	if (!err)
		err = hpu_vm_map(fd, a, HOSTILE_BUF, NULL, HOSTILE_BUF, RW | DRM_HPU_VM_MAP_FIXED,
				 &va);
	/* B, then C: STAGED_BATCH matrices of 16 KiB. */
	if (!err)
		err = hpu_gem_create(fd, HOSTILE_BUF + c_bytes, 0, &bc);
	if (!err)
		err = hpu_vm_map(fd, bc, 0, NULL, HOSTILE_BUF + c_bytes, RW, &va);
	g.a = STAGED_VA + HOSTILE_BUF - a_bytes / 2;
	g.b = va;
	g.c = va + HOSTILE_BUF;
	cb->size = 0;
	for (i = 0; !err && i < STAGED_GEMMS; i++)
		hpu_cb_gemm(cb, &g);
	return err;
}

/* Every user queue the hostile may take, kept full of the jobs job() makes. */
static void flood_user_queues_with(int fd, int ready, int (*job)(int fd, struct hpu_cb *cb),
				   const char *what)
{
	enum { WINDOW = HPU_UQ_TEST_RING / 2 };
	static struct hpu_uq q[HPU_NUM_UQ];
	static struct hpu_cb cb;
	unsigned int n = 0, i, j;
	int err = job(fd, &cb), last = 0;

	if (err) {
		hostile_report(ready, err, "its long job");
		return;
	}
	while (n < HPU_NUM_UQ && !(last = hpu_uq_open(&q[n], fd)))
		n++;
	if (!n) {
		hostile_report(ready, last, "its first user queue");
		return;
	}
	/* A job that fails at once would abuse nothing. */
	err = hpu_uq_run(&q[0], &cb);
	if (err) {
		hostile_report(ready, err < 0 ? err : -EIO, "its long job alone (status %d)", err);
		return;
	}
	for (i = 0; i < n; i++) {
		for (j = 0; j < WINDOW; j++)
			hpu_uq_put(&q[i], &cb, 0);
		hpu_uq_ring(&q[i]);
	}
	hostile_report(ready, 0, "%u user queues (the next: %d), %u jobs of %s each", n, last,
		       WINDOW, what);
	/* Half a window more whenever half of one has ended. */
	for (i = 0;; i = (i + 1) % n) {
		if (hpu_uq_wait(fd, q[i].id, q[i].pi - WINDOW / 2, -1, NULL))
			continue;
		for (j = 0; j < WINDOW / 2; j++)
			hpu_uq_put(&q[i], &cb, 0);
		hpu_uq_ring(&q[i]);
	}
}

static void flood_user_queues(int fd, int ready)
{
	flood_user_queues_with(fd, ready, long_job, "1 GiB of copies");
}

static void flood_staged(int fd, int ready)
{
	flood_user_queues_with(fd, ready, staged_job, "2 GEMMs of 2048 blocks, A staged");
}

/* HOSTILE_WINDOW long jobs in flight on every kernel queue, one more as each ends. */
static void flood_kernel_queues(int fd, int ready)
{
	static uint64_t seq[HPU_NUM_QUEUES][HOSTILE_WINDOW];
	static struct hpu_cb cb;
	unsigned int q, i;
	int err = long_job(fd, &cb), job_err;

	for (i = 0; !err && i < HOSTILE_WINDOW; i++)
		for (q = 0; !err && q < HPU_NUM_QUEUES; q++)
			err = hpu_submit(fd, q, cb.buf, cb.size, &seq[q][i]);
	if (err) {
		hostile_report(ready, err, "its first jobs");
		return;
	}
	hostile_report(ready, 0, "%u jobs of %u MiB of copies on each of %u queues",
		       HOSTILE_WINDOW, (unsigned int)(HOSTILE_COPIES * HOSTILE_COPY >> 20),
		       HPU_NUM_QUEUES);
	for (i = 0;; i = (i + 1) % HOSTILE_WINDOW)
		for (q = 0; q < HPU_NUM_QUEUES; q++) {
			hpu_wait(fd, seq[q][i], -1, &job_err);
			hpu_submit(fd, q, cb.buf, cb.size, &seq[q][i]);
		}
}

/*
 * HOSTILE_PARKED jobs on every kernel queue, each parked on a WAIT nobody
 * signals; in_call: the WAIT is a CALL's callee, in a host page of the
 * hostile's.
 */
static void park_waits_in(int fd, int ready, bool in_call)
{
	struct hpu_pkt_call call = { .header = HPU_PKT_HEADER(HPU_PKT_CALL, 0) };
	struct hpu_cb cb = { .size = 0 };
	uint64_t sync = 0, seq, callee_va = 0;
	unsigned int q, i;
	uint8_t *callee;
	uint32_t h;
	int err = hpu_gem_create(fd, HPU_PAGE, 0, &h);

	if (!err)
		err = hpu_vm_map(fd, h, 0, NULL, HPU_PAGE, RW, &sync);
	hpu_cb_wait(&cb, sync, 1);
	if (!err && in_call) {
		callee = hpu_host_pages(HPU_PAGE);
		err = callee ? 0 : -ENOMEM;
		if (!err) {
			memcpy(callee, cb.buf, cb.size);
			err = hpu_vm_map(fd, 0, 0, callee, HPU_PAGE, DRM_HPU_VM_MAP_READ,
					 &callee_va);
		}
		call.addr = callee_va;
		call.size = cb.size;
		cb.size = 0;
		hpu_cb_put(&cb, &call, sizeof(call));
	}
	for (i = 0; !err && i < HOSTILE_PARKED; i++)
		for (q = 0; !err && q < HPU_NUM_QUEUES; q++)
			err = hpu_submit(fd, q, cb.buf, cb.size, &seq);
	if (err) {
		hostile_report(ready, err, "its parked jobs");
		return;
	}
	hostile_report(ready, 0, "%u jobs parked%s on each of %u queues", HOSTILE_PARKED,
		       in_call ? " in a callee" : "", HPU_NUM_QUEUES);
	for (;;)
		pause();
}

static void park_waits(int fd, int ready)
{
	park_waits_in(fd, ready, false);
}

static void park_waits_in_calls(int fd, int ready)
{
	park_waits_in(fd, ready, true);
}

/* Page-table pages of fd: a page of its own HBM mapped in each 2 MiB from 4 GiB on. */
static int take_tables(int fd, unsigned int *maps)
{
	uint64_t va;
	uint32_t h;
	int err = hpu_gem_create(fd, HPU_PAGE, 0, &h);

	while (!err) {
		va = (4ull << 30) + (uint64_t)*maps * (2ull << 20);
		err = hpu_vm_map(fd, h, 0, NULL, HPU_PAGE, RW | DRM_HPU_VM_MAP_FIXED, &va);
		*maps += !err;
	}
	return err;
}

/* HBM, biggest blocks first, while any file has share left: bytes taken. */
static uint64_t take_hbm(const int *fds, unsigned int nfds, int *last)
{
	uint64_t size = 1ull << 30, taken = 0;
	unsigned int f = 0;
	uint32_t h;

	while (size >= HPU_PAGE && f < nfds) {
		*last = hpu_gem_create(fds[f], size, 0, &h);
		if (!*last)
			taken += size;
		else if (*last == -EDQUOT)
			f++;
		else
			size /= 2;
	}
	return taken;
}

#define MAX_FILES 1024

/* Every file, user queue, page-table page and byte of HBM it can get; then it idles. */
static void take_everything(int fd, int ready)
{
	static struct hpu_uq q[HPU_NUM_UQ];
	static int fds[MAX_FILES];
	unsigned int n = 1, uqs = 0, maps = 0, f;
	int file_err = 0, uq_err = 0, table_err = -EDQUOT, hbm_err = 0;
	char bdf[64];
	uint64_t hbm;

	fds[0] = fd;
	if (hpu_find_bdf(bdf, sizeof(bdf)) == 0)
		while (n < MAX_FILES && (fds[n] = hpu_open_node(bdf)) >= 0)
			n++;
	file_err = n < MAX_FILES ? fds[n] : 0;
	/* Each file's share of user queues until the device has none. */
	for (f = 0; f < n && uqs < HPU_NUM_UQ && (!uq_err || uq_err == -EDQUOT); f++)
		while (uqs < HPU_NUM_UQ && !(uq_err = hpu_uq_open(&q[uqs], fds[f])))
			uqs++;
	/* Each file's share of tables until its user's share, or the MMU region, is gone. */
	for (f = 0; f < n && table_err == -EDQUOT; f++)
		table_err = take_tables(fds[f], &maps);
	hbm = take_hbm(fds, n, &hbm_err);
	hostile_report(ready, 0, "%u files (then %d), %u user queues (then %d), %u table mappings "
		       "(then %d), %llu MiB of HBM (then %d)", n, file_err, uqs, uq_err, maps,
		       table_err, (unsigned long long)(hbm >> 20), hbm_err);
	for (;;)
		pause();
}

/* Starts abuse(fd, ready) in a child as the hostile user; its pid once it runs, or -1. */
static pid_t hostile_start(struct __test_metadata *_metadata, void (*abuse)(int fd, int ready))
{
	struct hostile_report r = { .err = -ECHILD, .msg = "the hostile died" };
	struct pollfd p;
	int pipefd[2];
	char bdf[64];
	pid_t pid;

	if (pipe(pipefd))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		int fd, err;

		close(pipefd[0]);
		err = become(HOSTILE_UID);
		fd = err ? err : hpu_find_bdf(bdf, sizeof(bdf));
		fd = fd ? fd : hpu_open_node(bdf);
		if (fd < 0)
			hostile_report(pipefd[1], fd, "opening the device");
		else
			abuse(fd, pipefd[1]);
		_exit(1);
	}
	close(pipefd[1]);
	p = (struct pollfd){ .fd = pipefd[0], .events = POLLIN };
	if (poll(&p, 1, HOSTILE_START_MS) == 1 && read(pipefd[0], &r, sizeof(r)) != sizeof(r))
		r.err = -ECHILD;
	close(pipefd[0]);
	EXPECT_EQ(0, r.err) TH_LOG("hostile: %s", r.msg);
	if (r.err) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return -1;
	}
	ksft_print_msg("hostile: %s\n", r.msg);
	return pid;
}

static void expect_victim_ok(struct __test_metadata *_metadata, const struct victim *v,
			     const struct victim *ref, const char *when)
{
	EXPECT_EQ(0, v->ret) TH_LOG("victim %s: %s failed: %d (%s)", when, v->what, v->ret, v->err);
	if (!v->ret && ref)
		EXPECT_EQ(0, memcmp(v->state, ref->state, sizeof(v->state)))
			TH_LOG("victim %s: its results differ from its run alone", when);
}

FIXTURE(hostile) {
	struct victim *runs; /* alone, under the hostile, after it */
};

/*
 * Hands out the first GiB of HBM and gives it back: every buffer of the
 * test then lands on HBM used before (zeroed by the driver when freed), as
 * on a device in use for a while, whatever ran before the test.
 */
static int dirty_hbm(void)
{
	char bdf[64];
	uint32_t h;
	int fd, err = hpu_find_bdf(bdf, sizeof(bdf));

	fd = err ? err : hpu_open_node(bdf);
	if (fd < 0)
		return fd;
	err = hpu_gem_create(fd, 1ull << 30, 0, &h);
	close(fd);
	return err;
}

FIXTURE_SETUP(hostile)
{
	self->runs = shared_pages(3 * sizeof(*self->runs));
	ASSERT_NE(NULL, self->runs);
	ASSERT_EQ(0, dirty_hbm());
}

FIXTURE_TEARDOWN(hostile)
{
	munmap(self->runs, 3 * sizeof(*self->runs));
}

/*
 * The victim alone, then under abuse (within victim_bound_ms() of its time
 * alone), then alone again once the hostile was killed; submit: it goes
 * through SUBMIT.
 */
static void victim_under(struct __test_metadata *_metadata, FIXTURE_DATA(hostile) *self,
			 const char *behaviour, void (*abuse)(int fd, int ready), bool submit)
{
	struct victim *solo = &self->runs[0], *under = &self->runs[1], *after = &self->runs[2];
	double bound, killed;
	int status;
	pid_t pid;

	victim_run(solo, submit, SOLO_LIMIT_MS);
	ASSERT_EQ(0, solo->ret) TH_LOG("victim alone: %s failed: %d (%s)", solo->what, solo->ret,
				       solo->err);
	bound = victim_bound_ms(solo->ms);
	pid = hostile_start(_metadata, abuse);
	ASSERT_LT(0, pid);

	/* A second of grace past the bound for the process's exit. */
	victim_run(under, submit, bound + 1000);
	if (under->ret == -ETIME)
		ksft_print_msg("victim solo %.0f ms, under %s > %.0f ms (killed)\n", solo->ms,
			       behaviour, bound + 1000);
	else
		ksft_print_msg("victim solo %.0f ms, under %s %.0f ms\n", solo->ms, behaviour,
			       under->ms);
	expect_victim_ok(_metadata, under, solo, "under the hostile");
	if (!under->ret)
		EXPECT_GE(bound, under->ms) TH_LOG("victim under %s: %.0f ms, bound %.0f ms",
						    behaviour, under->ms, bound);

	killed = hpu_now_s();
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
		TH_LOG("the hostile ended by itself: status 0x%x", status);
	ksft_print_msg("hostile reaped %.0f ms after its kill\n", (hpu_now_s() - killed) * 1000);

	victim_run(after, submit, SOLO_LIMIT_MS);
	expect_victim_ok(_metadata, after, solo, "after the hostile");
	ksft_print_msg("victim after the hostile %.0f ms\n", after->ms);
}

TEST_F_TIMEOUT(hostile, user_queue_flood, 180)
{
	victim_under(_metadata, self, "user_queue_flood", flood_user_queues, false);
}

TEST_F_TIMEOUT(hostile, kernel_queue_flood, 180)
{
	victim_under(_metadata, self, "kernel_queue_flood", flood_kernel_queues, false);
}

TEST_F_TIMEOUT(hostile, kernel_queue_flood_shared, 180)
{
	victim_under(_metadata, self, "kernel_queue_flood_shared", flood_kernel_queues, true);
}

TEST_F_TIMEOUT(hostile, staged_flood, 180)
{
	victim_under(_metadata, self, "staged_flood", flood_staged, false);
}

TEST_F_TIMEOUT(hostile, parked_waits, 180)
{
	victim_under(_metadata, self, "parked_waits", park_waits, true);
}

TEST_F_TIMEOUT(hostile, parked_waits_in_calls, 180)
{
	victim_under(_metadata, self, "parked_waits_in_calls", park_waits_in_calls, true);
}

TEST_F_TIMEOUT(hostile, resources_taken, 300)
{
	if (geteuid())
		SKIP(return, "the hostile must be another user than the victim: run as root");
	victim_under(_metadata, self, "resources_taken", take_everything, false);
}

TEST_HARNESS_MAIN
