// SPDX-License-Identifier: MIT
/*
 * Lifecycle torture: the device taken away with work in flight, by PCI
 * unbind, PCI remove (then rescan), QEMU's device_del (then device_add,
 * through run-guest.sh -p) and rmmod, while processes have long jobs and
 * jobs parked on WAIT packets in three queues' rings, jobs waiting in the
 * driver for a syncobj, fences exported as sync files and polled, a user
 * queue with its doorbell page mapped and written, host pages pinned by
 * VM_MAP, threads and forked processes blocked in WAIT and UQUEUE_WAIT,
 * and a process mapping, submitting and waiting as fast as it can.  Every
 * one of them must end on its own with -ENODEV (or its job's error), a
 * doorbell writer with SIGBUS (the page revoked), none hang; the host
 * pages are unpinned, the kernel log stays clean, and the device comes
 * back and a fresh process runs jobs on it.  Then 50 load/unload cycles of
 * the module, each running jobs, and sync files outliving their device and
 * their file.  Last, the device unbinds while an ioctl's copy from or to
 * the user stalls on a page userfaultfd has not filled.
 */
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <linux/sync_file.h>
#include <linux/userfaultfd.h>

#include "kselftest_harness.h"

#include "hpu_abi.h"
#include "hpu_test.h"

#define RW (DRM_HPU_VM_MAP_READ | DRM_HPU_VM_MAP_WRITE)
/* What must not be in the kernel log after an event. */
#define BAD_LOG "WARNING|BUG|Call Trace|Oops|general protection|[Ll]eak|use-after-free"
/* Seconds a blocked process has to see the device gone, and the device to come back. */
#define GONE_S 120
#define BACK_S 120
#define ROUNDS 3
#define CYCLES 50

/* Polls cond every 10 ms for up to secs seconds; its last value. */
#define WAIT_FOR(cond, secs)                                                     \
	({                                                                       \
		bool _ok = (cond);                                               \
		for (unsigned int _i = 0; !_ok && _i < (secs) * 100u; _i++) {    \
			usleep(10 * 1000);                                       \
			_ok = (cond);                                            \
		}                                                                \
		_ok;                                                             \
	})

/* A role's failure, on the TAP output's stderr, as a diagnostic line. */
#define FAIL_IF(cond, ...)                                                       \
	do {                                                                     \
		if (cond) {                                                      \
			fprintf(stderr, "# " __VA_ARGS__);                       \
			fprintf(stderr, "\n");                                   \
			return 1;                                                \
		}                                                                \
	} while (0)

/* Asks the host's relay (run-guest.sh -p) to run `cmd` on QEMU's monitor. */
static int hotplug(const char *cmd)
{
	char req[512], tmp[512], ack[512], answer[256];
	ssize_t n;
	int fd;

	snprintf(req, sizeof(req), "%s/hotplug.req", hpu_env("HPU_OUT"));
	snprintf(tmp, sizeof(tmp), "%s/hotplug.req.tmp", hpu_env("HPU_OUT"));
	snprintf(ack, sizeof(ack), "%s/hotplug.ack", hpu_env("HPU_OUT"));
	unlink(ack);
	/* Written whole, then renamed: the relay never reads half a request. */
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return -errno;
	n = write(fd, cmd, strlen(cmd));
	close(fd);
	if (n < 0 || rename(tmp, req))
		return -errno;
	if (!WAIT_FOR(!hpu_read_file(ack, answer, sizeof(answer)), BACK_S))
		return -ETIMEDOUT;
	unlink(ack);
	if (strcmp(answer, "ok")) {
		fprintf(stderr, "# %s: %s\n", cmd, answer);
		return -EIO;
	}
	return 0;
}

static bool hotplug_relay(void)
{
	return getenv("HPU_HOTPLUG") != NULL;
}

/* The ways the device goes, and comes back. */
enum way { WAY_UNBIND, WAY_REMOVE, WAY_UNPLUG };

static int device_go(const char *bdf, enum way way)
{
	char path[512];

	switch (way) {
	case WAY_UNBIND:
		return hpu_write_file(HPU_SYSFS_DRIVER "/unbind", bdf);
	case WAY_REMOVE:
		snprintf(path, sizeof(path), HPU_SYSFS_PCI "/%s/remove", bdf);
		return hpu_write_file(path, "1");
	case WAY_UNPLUG:
		/* The relay answers once QEMU has the device back from the guest. */
		return hotplug("device_del");
	}
	return -EINVAL;
}

/*
 * The device is there (bdf: its address now), bound and its node opens: the driver's link
 * appears when its probe starts, QEMU's hot-plug probes on a work of the guest's, and DRM
 * creates the node a moment before an open finds its minor (-ENODEV until then).
 */
static bool device_ready(char *bdf, size_t len)
{
	int fd;

	if (hpu_find_bdf(bdf, len) || !hpu_is_bound(bdf))
		return false;
	fd = hpu_open_node(bdf);
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/* The device there again and ready; 0 or -errno. */
static int device_back(char *bdf, size_t len, enum way way)
{
	int err = 0;

	switch (way) {
	case WAY_UNBIND:
		err = hpu_write_file(HPU_SYSFS_DRIVER "/bind", bdf);
		break;
	case WAY_REMOVE:
		err = hpu_write_file("/sys/bus/pci/rescan", "1");
		break;
	case WAY_UNPLUG:
		err = hotplug("device_add");
		break;
	}
	if (err)
		return err;
	return WAIT_FOR(device_ready(bdf, len), BACK_S) ? 0 : -ENODEV;
}

/* Leaves a device there, the module loaded and the driver bound, whatever a test left. */
static int device_restore(char *bdf, size_t len)
{
	if (hpu_find_bdf(bdf, len))
		hpu_write_file("/sys/bus/pci/rescan", "1");
	if (hpu_find_bdf(bdf, len) && hotplug_relay())
		hotplug("device_add");
	if (hpu_find_bdf(bdf, len))
		return -ENODEV;
	if (!hpu_is_bound(bdf) && hpu_load("") == -ENOENT)
		return -ENOENT;
	if (!hpu_is_bound(bdf))
		hpu_write_file(HPU_SYSFS_DRIVER "/bind", bdf);
	return WAIT_FOR(device_ready(bdf, len), BACK_S) ? 0 : -ENODEV;
}

/* Blocks in WAIT for job seq, which cannot end while the device is there. */
static int wait_gone(int fd, uint64_t seq, const char *who)
{
	int job_err = 0, err = hpu_wait(fd, seq, -1, &job_err);

	FAIL_IF(err != -ENODEV && (err || job_err != -ENODEV),
		"%s: WAIT returned %d, job error %d (want -ENODEV)", who, err, job_err);
	return 0;
}

/* Every new call on a file of the gone device fails with -ENODEV. */
static int calls_gone(int fd, const char *who)
{
	struct hpu_cb cb = { .size = 0 };
	uint32_t h;
	int err;

	FAIL_IF((err = hpu_device_status(fd)) != -ENODEV, "%s: INFO gave %d", who, err);
	FAIL_IF((err = hpu_gem_create(fd, HPU_PAGE, 0, &h)) != -ENODEV,
		"%s: GEM_CREATE gave %d", who, err);
	hpu_cb_memset(&cb, 0, 0, 8);
	FAIL_IF((err = hpu_submit(fd, 0, cb.buf, cb.size, NULL)) != -ENODEV,
		"%s: SUBMIT gave %d", who, err);
	return 0;
}

/* An HBM page mapped at *va (a word WAIT packets park on: never signalled here). */
static int hbm_page(int fd, uint64_t *va)
{
	uint32_t h;
	int err = hpu_gem_create(fd, HPU_PAGE, 0, &h);

	*va = 0;
	return err ? err : hpu_vm_map(fd, h, 0, NULL, HPU_PAGE, RW, va);
}

/* Host pages pinned and mapped at *va. */
static void *host_pinned(int fd, uint64_t size, uint64_t *va)
{
	void *p = hpu_host_pages(size);

	*va = 0;
	if (p && hpu_vm_map(fd, 0, 0, p, size, RW, va)) {
		munmap(p, size);
		p = NULL;
	}
	return p;
}

static int ready(int fd)
{
	return write(fd, "r", 1) == 1 ? 0 : -errno;
}

/* The queue the busy role keeps to itself, so that its jobs run while the device is there. */
#define BUSY_QUEUE (HPU_NUM_QUEUES - 1)

/*
 * Long jobs in the other rings: on each queue GEMMs, a job parked on a WAIT,
 * then one writing pinned host pages.  The role and a forked child holding
 * its fd block in WAIT for the last ones.
 */
static int role_rings(const char *bdf, int rfd)
{
	uint64_t a, b, c, sync, host_va, last[BUSY_QUEUE];
	int fd = hpu_open_node(bdf), status, err;
	struct hpu_cb cb;
	uint32_t h[3];
	pid_t child;
	uint8_t *host;

	FAIL_IF(fd < 0, "rings: open: %d", fd);
	for (unsigned int i = 0; i < 3; i++)
		FAIL_IF(hpu_gem_create(fd, HPU_SLOW_GEMM_BYTES, 0, &h[i]), "rings: GEM_CREATE");
	a = b = c = 0;
	FAIL_IF(hpu_vm_map(fd, h[0], 0, NULL, HPU_SLOW_GEMM_BYTES, RW, &a) ||
		hpu_vm_map(fd, h[1], 0, NULL, HPU_SLOW_GEMM_BYTES, RW, &b) ||
		hpu_vm_map(fd, h[2], 0, NULL, HPU_SLOW_GEMM_BYTES, RW, &c) || hbm_page(fd, &sync),
		"rings: VM_MAP");
	host = host_pinned(fd, 16 * HPU_PAGE, &host_va);
	FAIL_IF(!host, "rings: VM_MAP of host pages");
	for (unsigned int q = 0; q < BUSY_QUEUE; q++) {
		cb.size = 0;
		hpu_cb_slow_gemms(&cb, a, b, c, 4);
		FAIL_IF((err = hpu_submit(fd, q, cb.buf, cb.size, NULL)), "rings: SUBMIT %d", err);
		cb.size = 0;
		hpu_cb_wait(&cb, sync, 1);
		FAIL_IF((err = hpu_submit(fd, q, cb.buf, cb.size, NULL)), "rings: SUBMIT %d", err);
		cb.size = 0;
		hpu_cb_memset(&cb, host_va, 0xee, 16 * HPU_PAGE);
		FAIL_IF((err = hpu_submit(fd, q, cb.buf, cb.size, &last[q])), "rings: SUBMIT %d",
			err);
	}
	child = fork();
	FAIL_IF(child < 0, "rings: fork");
	if (!child)
		_exit(wait_gone(fd, last[0], "rings' child") || calls_gone(fd, "rings' child"));
	FAIL_IF(ready(rfd), "rings: ready");
	err = wait_gone(fd, last[BUSY_QUEUE - 1], "rings");
	err = err || calls_gone(fd, "rings");
	FAIL_IF(waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status),
		"rings: its child failed (status %#x)", status);
	close(fd);
	return err;
}

/* The fence of syncobj handle as a sync file, or -errno. */
static int sync_file_export(int fd, uint32_t handle)
{
	struct drm_syncobj_handle a = {
		.handle = handle, .flags = DRM_SYNCOBJ_HANDLE_TO_FD_FLAGS_EXPORT_SYNC_FILE, .fd = -1,
	};
	int err = hpu_ioc(fd, DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD, &a);

	return err ? err : a.fd;
}

/* A sync file's status: 1 signalled, 0 active, < 0 its error; its driver in driver. */
static int sync_file_status(int sf, char *driver, size_t len)
{
	struct sync_fence_info fi = { 0 };
	struct sync_file_info info = { .num_fences = 1, .sync_fence_info = (uintptr_t)&fi };

	if (ioctl(sf, SYNC_IOC_FILE_INFO, &info))
		return -errno;
	snprintf(driver, len, "%s", fi.driver_name);
	return info.status;
}

/* A job parked on a WAIT of an HBM word never signalled, its end to syncobj out. */
static int submit_parked(int fd, uint32_t queue, uint32_t out)
{
	struct hpu_cb cb = { .size = 0 };
	uint64_t sync;
	int err = hbm_page(fd, &sync);

	if (err)
		return err;
	hpu_cb_wait(&cb, sync, 1);
	return hpu_submit_sync(fd, queue, &cb, 0, out, NULL);
}

/* Polls sync file sf until it signals; its status must be an error, and stay one. */
static int sync_file_failed(int sf, const char *who)
{
	struct pollfd p = { .fd = sf, .events = POLLIN };
	char driver[64];
	int st;

	FAIL_IF(poll(&p, 1, -1) != 1 || !(p.revents & POLLIN), "%s: poll: %d", who, -errno);
	st = sync_file_status(sf, driver, sizeof(driver));
	FAIL_IF(st >= 0, "%s: status %d after the device went (want an error)", who, st);
	FAIL_IF(strcmp(driver, "hpu"), "%s: driver '%s'", who, driver);
	return 0;
}

/*
 * A job parked on a WAIT, a job on another queue waiting in the driver for
 * its syncobj, both fences exported as sync files and polled.  Once the
 * file is closed the sync files still answer.
 */
static int role_sync(const char *bdf, int rfd)
{
	int fd = hpu_open_node(bdf), sf[2], err;
	struct hpu_cb cb = { .size = 0 };
	uint64_t host_va;
	uint32_t s[2];

	FAIL_IF(fd < 0, "sync: open: %d", fd);
	s[0] = hpu_syncobj_create(fd);
	s[1] = hpu_syncobj_create(fd);
	FAIL_IF(!s[0] || !s[1], "sync: SYNCOBJ_CREATE");
	FAIL_IF(!host_pinned(fd, HPU_PAGE, &host_va), "sync: VM_MAP of host pages");
	FAIL_IF((err = submit_parked(fd, 0, s[0])), "sync: SUBMIT %d", err);
	hpu_cb_memset(&cb, host_va, 0x11, HPU_PAGE);
	FAIL_IF((err = hpu_submit_sync(fd, 1, &cb, s[0], s[1], NULL)), "sync: SUBMIT %d", err);
	for (unsigned int i = 0; i < 2; i++) {
		sf[i] = sync_file_export(fd, s[i]);
		FAIL_IF(sf[i] < 0, "sync: export: %d", sf[i]);
	}
	FAIL_IF(ready(rfd), "sync: ready");
	for (unsigned int i = 0; i < 2; i++)
		FAIL_IF(sync_file_failed(sf[i], "sync"), "sync: sync file %u", i);
	FAIL_IF(calls_gone(fd, "sync"), "sync");
	close(fd);
	for (unsigned int i = 0; i < 2; i++)
		FAIL_IF(sync_file_failed(sf[i], "sync, file closed"), "sync: sync file %u", i);
	close(sf[0]);
	close(sf[1]);
	return 0;
}

/*
 * A user queue whose job parks on a WAIT, its doorbell page written again
 * and again by a forked child (which must die of SIGBUS once the device is
 * gone, never write on), the role blocked in UQUEUE_WAIT.
 */
static int role_uq(const char *bdf, int rfd)
{
	int fd = hpu_open_node(bdf), status = 0, err;
	struct hpu_cb cb = { .size = 0 };
	struct hpu_uq q;
	uint64_t w_va;
	uint32_t pos;
	pid_t writer;

	FAIL_IF(fd < 0, "uq: open: %d", fd);
	FAIL_IF((err = hpu_uq_open(&q, fd)), "uq: open a user queue: %d", err);
	FAIL_IF(!host_pinned(fd, HPU_PAGE, &w_va), "uq: VM_MAP of host pages");
	hpu_cb_wait(&cb, w_va, 1);
	pos = hpu_uq_put(&q, &cb, 0);
	hpu_uq_ring(&q);
	writer = fork();
	FAIL_IF(writer < 0, "uq: fork");
	if (!writer) {
		for (;;) {
			hpu_uq_ring(&q);
			usleep(1000);
		}
	}
	FAIL_IF(ready(rfd), "uq: ready");
	err = hpu_uq_wait(fd, q.id, pos + 1, -1, NULL);
	if (err != -ENODEV)
		kill(writer, SIGKILL);
	FAIL_IF(err != -ENODEV, "uq: UQUEUE_WAIT returned %d (want -ENODEV)", err);
	if (!WAIT_FOR(waitpid(writer, &status, WNOHANG) == writer, 10)) {
		kill(writer, SIGKILL);
		waitpid(writer, &status, 0);
		FAIL_IF(1, "uq: the doorbell writer still writes after the device went");
	}
	FAIL_IF(!WIFSIGNALED(status) || WTERMSIG(status) != SIGBUS,
		"uq: the doorbell writer ended with status %#x (want SIGBUS)", status);
	FAIL_IF(calls_gone(fd, "uq"), "uq");
	close(fd);
	return 0;
}

/*
 * Calls racing the device's going: maps host pages, submits a job writing
 * them on BUSY_QUEUE, waits for it and unmaps them, again and again.  Until
 * the device goes each step succeeds and the job writes what it should;
 * the first that fails says -ENODEV.
 */
static int role_busy(const char *bdf, int rfd)
{
	int fd = hpu_open_node(bdf), err = 0, job_err, unmap_err;
	uint8_t *host = hpu_host_pages(HPU_PAGE);
	struct hpu_cb cb;
	uint64_t va, seq;
	unsigned int i;

	FAIL_IF(fd < 0 || !host, "busy: open: %d", fd);
	FAIL_IF(ready(rfd), "busy: ready");
	for (i = 0; !err; i++) {
		va = 0;
		err = hpu_vm_map(fd, 0, 0, host, HPU_PAGE, RW, &va);
		if (err)
			break;
		cb.size = 0;
		hpu_cb_memset(&cb, va, i & 0xff, HPU_PAGE);
		job_err = 0;
		err = hpu_submit(fd, BUSY_QUEUE, cb.buf, cb.size, &seq);
		err = err ? err : hpu_wait(fd, seq, -1, &job_err);
		err = err ? err : job_err;
		FAIL_IF(!err && (host[0] != (i & 0xff) || host[HPU_PAGE - 1] != (i & 0xff)),
			"busy: job %u wrote %#x", i, host[0]);
		unmap_err = hpu_vm_unmap(fd, va);
		err = err ? err : unmap_err;
	}
	FAIL_IF(err != -ENODEV, "busy: step %u failed with %d (want -ENODEV)", i, err);
	/* load_start() gives the roles half a second before the device goes. */
	FAIL_IF(i < 2, "busy: the device went after %u steps: nothing raced it", i);
	FAIL_IF(calls_gone(fd, "busy"), "busy");
	close(fd);
	return 0;
}

static const struct {
	const char *name;
	int (*run)(const char *bdf, int rfd);
} roles[] = {
	{ "rings", role_rings }, { "sync", role_sync }, { "uq", role_uq }, { "busy", role_busy },
};
#define NUM_ROLES (sizeof(roles) / sizeof(roles[0]))

/* The processes holding work in flight; 0 for one not started. */
struct load {
	pid_t pids[NUM_ROLES];
};

/* Starts every role and returns once each has its work in flight. */
static int load_start(struct load *l, const char *bdf)
{
	struct pollfd p;
	int pipefd[2];
	unsigned int i, n = 0;
	char c;

	memset(l, 0, sizeof(*l));
	if (pipe(pipefd))
		return -errno;
	for (i = 0; i < NUM_ROLES; i++) {
		pid_t pid = fork();

		if (!pid) {
			/* A group of its own, with the children it forks: load_kill() ends them all. */
			setpgid(0, 0);
			close(pipefd[0]);
			_exit(roles[i].run(bdf, pipefd[1]));
		}
		if (pid < 0)
			break;
		l->pids[i] = pid;
	}
	close(pipefd[1]);
	p = (struct pollfd){ .fd = pipefd[0], .events = POLLIN };
	while (n < NUM_ROLES && poll(&p, 1, GONE_S * 1000) == 1 && read(pipefd[0], &c, 1) == 1)
		n++;
	close(pipefd[0]);
	/* Time for the roles to go to sleep in the driver. */
	usleep(500 * 1000);
	return n == NUM_ROLES ? 0 : -EIO;
}

/* A process's kernel stack, as diagnostic lines. */
static void print_stack(pid_t pid)
{
	char path[64], line[256];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stack", pid);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		fprintf(stderr, "#   %s", line);
	if (f)
		fclose(f);
}

/*
 * Waits for every role to end on its own; a role still there after
 * GONE_S seconds hangs and is killed.  Returns the roles that failed.
 */
static int load_reap(struct load *l, bool killed_ok)
{
	int status, failed = 0;
	unsigned int i;

	for (i = 0; i < NUM_ROLES && l->pids[i] > 0; i++) {
		if (!WAIT_FOR(waitpid(l->pids[i], &status, WNOHANG) == l->pids[i], GONE_S)) {
			fprintf(stderr, "# %s hangs: killed; where it was:\n", roles[i].name);
			print_stack(l->pids[i]);
			kill(-l->pids[i], SIGKILL);
			waitpid(l->pids[i], &status, 0);
			failed++;
		} else if (!(WIFEXITED(status) && !WEXITSTATUS(status)) &&
			   !(killed_ok && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)) {
			fprintf(stderr, "# %s failed (status %#x)\n", roles[i].name, status);
			failed++;
		}
	}
	return failed;
}

static void load_kill(struct load *l)
{
	for (unsigned int i = 0; i < NUM_ROLES && l->pids[i] > 0; i++)
		kill(-l->pids[i], SIGKILL);
}

/* In a process of its own: the device is ready, and a job on each queue writes what it should. */
static int fresh_process_runs_jobs(const char *bdf)
{
	int status, fd, err;
	struct hpu_cb cb;
	uint64_t va;
	uint8_t *host;
	pid_t pid = fork();

	if (pid)
		return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) ?
			       WEXITSTATUS(status) : -1;
	fd = hpu_open_node(bdf);
	if (fd < 0) {
		fprintf(stderr, "# fresh: cannot open the node of %s: %d\n", bdf, fd);
		_exit(2);
	}
	if (hpu_device_status(fd) != DRM_HPU_STATUS_READY)
		_exit(3);
	host = host_pinned(fd, HPU_PAGE, &va);
	if (!host)
		_exit(4);
	for (unsigned int q = 0; q < HPU_NUM_QUEUES; q++) {
		cb.size = 0;
		hpu_cb_memset(&cb, va + q * 64, 0xa0 + q, 64);
		err = hpu_run(fd, q, cb.buf, cb.size);
		if (err) {
			fprintf(stderr, "# fresh: job on queue %u: %d\n", q, err);
			_exit(5);
		}
		for (unsigned int i = 0; i < 64; i++)
			if (host[q * 64 + i] != 0xa0 + q)
				_exit(6);
	}
	close(fd);
	_exit(0);
}

/* Each test leaves the device there, the module loaded and the driver bound. */
HPU_LOG_FIXTURE(gone, ASSERT_EQ(0, device_restore(self->bdf, sizeof(self->bdf))))
HPU_LOG_FIXTURE(module, ASSERT_EQ(0, device_restore(self->bdf, sizeof(self->bdf))))

FIXTURE_VARIANT(gone) {
	enum way way;
};

FIXTURE_VARIANT_ADD(gone, unbind) { .way = WAY_UNBIND };
FIXTURE_VARIANT_ADD(gone, remove) { .way = WAY_REMOVE };
FIXTURE_VARIANT_ADD(gone, device_del) { .way = WAY_UNPLUG };

/*
 * Host pages pinned system-wide (pin_user_pages(), as VM_MAP pins them), from
 * /proc/vmstat once its per-CPU counts are folded in; -1 if unknown.
 */
static long long host_pins(void)
{
	long long acquired = -1, released = -1;
	char line[128];
	FILE *f;

	if (hpu_write_file("/proc/sys/vm/stat_refresh", "1"))
		return -1;
	f = fopen("/proc/vmstat", "r");
	while (f && fgets(line, sizeof(line), f)) {
		sscanf(line, "nr_foll_pin_acquired %lld", &acquired);
		sscanf(line, "nr_foll_pin_released %lld", &released);
	}
	if (f)
		fclose(f);
	return acquired < 0 || released < 0 ? -1 : acquired - released;
}

/* The device back, a fresh process runs jobs on it, and the kernel log is clean. */
static void assert_back(struct __test_metadata *_metadata, char *bdf, size_t len, enum way way,
			const char *mark)
{
	ASSERT_EQ(0, device_back(bdf, len, way));
	EXPECT_EQ(0, fresh_process_runs_jobs(bdf));
	EXPECT_EQ(0, hpu_log_count(mark, BAD_LOG));
}

/* ROUNDS times: work in flight, the device goes, every process sees it, it comes back. */
TEST_F_TIMEOUT(gone, with_work_in_flight, ROUNDS * (2 * GONE_S + BACK_S))
{
	long long pins;
	struct load l;
	double t;

	if (variant->way == WAY_UNPLUG && !hotplug_relay())
		SKIP(return, "no hot-plug relay (run-guest.sh -p)");
	for (unsigned int round = 0; round < ROUNDS; round++) {
		pins = host_pins();
		ASSERT_LE(0, pins);
		ASSERT_EQ(0, load_start(&l, self->bdf)) {
			load_kill(&l);
			load_reap(&l, true);
		}
		EXPECT_LT(pins, host_pins());
		t = hpu_now_s();
		ASSERT_EQ(0, device_go(self->bdf, variant->way)) {
			load_kill(&l);
			load_reap(&l, true);
		}
		EXPECT_EQ(0, load_reap(&l, false));
		TH_LOG("round %u: every process saw the device go within %.2f s", round,
		       hpu_now_s() - t);
		/* Their files are closed: the pages they had mapped are unpinned. */
		EXPECT_TRUE(WAIT_FOR(host_pins() == pins, 10))
			TH_LOG("%lld host pages still pinned", host_pins() - pins);
		t = hpu_now_s();
		assert_back(_metadata, self->bdf, sizeof(self->bdf), variant->way, self->mark);
		TH_LOG("round %u: back and running jobs in %.2f s", round, hpu_now_s() - t);
	}
}

/*
 * rmmod with work in flight fails and changes nothing: the device still
 * runs a fresh process's jobs.  Once the processes are killed, with their
 * jobs still queued, the module goes and comes back.
 */
TEST_F_TIMEOUT(module, rmmod_with_work_in_flight, 2 * GONE_S + BACK_S)
{
	long long pins = host_pins();
	struct load l;

	ASSERT_LE(0, pins);
	ASSERT_EQ(0, load_start(&l, self->bdf)) {
		load_kill(&l);
		load_reap(&l, true);
	}
	EXPECT_EQ(-1, syscall(SYS_delete_module, "hpu", O_NONBLOCK));
	EXPECT_EQ(EWOULDBLOCK, errno);
	EXPECT_EQ(-1, syscall(SYS_delete_module, "hpu", 0));
	EXPECT_EQ(EWOULDBLOCK, errno);
	EXPECT_EQ(0, fresh_process_runs_jobs(self->bdf));
	load_kill(&l);
	EXPECT_EQ(0, load_reap(&l, true));
	/* The roles' children may still be exiting, closing their files. */
	ASSERT_EQ(0, hpu_unload());
	EXPECT_TRUE(WAIT_FOR(host_pins() == pins, 10))
		TH_LOG("%lld host pages still pinned", host_pins() - pins);
	ASSERT_EQ(0, hpu_load(""));
	ASSERT_EQ(0, hpu_find_bdf(self->bdf, sizeof(self->bdf)));
	EXPECT_EQ(0, fresh_process_runs_jobs(self->bdf));
	EXPECT_EQ(0, hpu_log_count(self->mark, BAD_LOG));
}

/* CYCLES loads and unloads of the module, each opening the node and running a job. */
TEST_F_TIMEOUT(module, load_unload_cycles, CYCLES * 20)
{
	double t, each, worst = 0, total = 0;
	unsigned int i;

	for (i = 0; i < CYCLES; i++) {
		t = hpu_now_s();
		ASSERT_EQ(0, hpu_unload());
		ASSERT_EQ(0, hpu_load(""));
		ASSERT_EQ(0, hpu_find_bdf(self->bdf, sizeof(self->bdf)));
		ASSERT_EQ(0, fresh_process_runs_jobs(self->bdf)) TH_LOG("cycle %u", i);
		each = hpu_now_s() - t;
		total += each;
		worst = each > worst ? each : worst;
	}
	TH_LOG("%u load/unload cycles: %.0f ms each on average, %.0f ms at most", CYCLES,
	       total / CYCLES * 1000, worst * 1000);
	EXPECT_EQ(0, hpu_log_count(self->mark, BAD_LOG));
}

/* A file's job parked, its fence exported as a sync file: *fd the file. */
static int parked_sync_file(const char *bdf, int *fd)
{
	uint32_t s;
	int err;

	*fd = hpu_open_node(bdf);
	if (*fd < 0)
		return *fd;
	s = hpu_syncobj_create(*fd);
	if (!s)
		return -EIO;
	err = submit_parked(*fd, 2, s);
	return err ? err : sync_file_export(*fd, s);
}

/*
 * A sync file outlives the device it came from: once the device is
 * unbound and its last file closed, the sync file still answers (its
 * fence's lock and name are not the device's).
 */
TEST_F(module, sync_file_outlives_device)
{
	char driver[64];
	int fd, sf;

	sf = parked_sync_file(self->bdf, &fd);
	ASSERT_LE(0, sf);
	ASSERT_EQ(0, hpu_write_file(HPU_SYSFS_DRIVER "/unbind", self->bdf));
	EXPECT_EQ(0, sync_file_failed(sf, "unbound"));
	close(fd);
	EXPECT_EQ(-ENODEV, sync_file_status(sf, driver, sizeof(driver)));
	close(sf);
	assert_back(_metadata, self->bdf, sizeof(self->bdf), WAY_UNBIND, self->mark);
}

/*
 * A sync file outlives the file it came from: the module cannot go while
 * the sync file holds its fence (whose code is the module's), and goes
 * once it is closed.
 */
TEST_F(module, sync_file_holds_the_module)
{
	char driver[64];
	int fd, sf;

	sf = parked_sync_file(self->bdf, &fd);
	ASSERT_LE(0, sf);
	close(fd);
	EXPECT_EQ(0, sync_file_failed(sf, "closed"));
	EXPECT_EQ(-1, syscall(SYS_delete_module, "hpu", O_NONBLOCK));
	EXPECT_EQ(EWOULDBLOCK, errno);
	EXPECT_GT(0, sync_file_status(sf, driver, sizeof(driver)));
	close(sf);
	ASSERT_EQ(0, hpu_unload());
	ASSERT_EQ(0, hpu_load(""));
	ASSERT_EQ(0, hpu_find_bdf(self->bdf, sizeof(self->bdf)));
	EXPECT_EQ(0, fresh_process_runs_jobs(self->bdf));
	EXPECT_EQ(0, hpu_log_count(self->mark, BAD_LOG));
}

/*
 * A page userfaultfd leaves unfilled: a copy from or to it, the kernel's
 * included, stalls until the test fills it.  Root only (CAP_SYS_PTRACE),
 * since unprivileged users get only faults from user mode.
 */
struct stall {
	int uffd;
	uint8_t *page;
};

static int stall_open(struct stall *st)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };

	st->page = MAP_FAILED;
	st->uffd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (st->uffd < 0)
		return -errno;
	if (ioctl(st->uffd, UFFDIO_API, &api))
		return -errno;
	st->page = mmap(NULL, HPU_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			-1, 0);
	if (st->page == MAP_FAILED)
		return -errno;
	reg.range.start = (uintptr_t)st->page;
	reg.range.len = HPU_PAGE;
	return ioctl(st->uffd, UFFDIO_REGISTER, &reg) ? -errno : 0;
}

/* Someone stalled on the page within secs: 0, or -ETIMEDOUT. */
static int stall_wait(struct stall *st, unsigned int secs)
{
	struct pollfd p = { .fd = st->uffd, .events = POLLIN };
	struct uffd_msg msg;

	if (poll(&p, 1, secs * 1000) != 1)
		return -ETIMEDOUT;
	if (read(st->uffd, &msg, sizeof(msg)) != sizeof(msg))
		return -errno;
	return msg.event == UFFD_EVENT_PAGEFAULT ? 0 : -EPROTO;
}

/* The page gets what src holds, and the stalled copy goes on. */
static int stall_fill(struct stall *st, const void *src)
{
	struct uffdio_copy c = {
		.dst = (uintptr_t)st->page, .src = (uintptr_t)src, .len = HPU_PAGE,
	};

	return ioctl(st->uffd, UFFDIO_COPY, &c) ? -errno : 0;
}

static void stall_close(struct stall *st)
{
	if (st->page != MAP_FAILED)
		munmap(st->page, HPU_PAGE);
	if (st->uffd >= 0)
		close(st->uffd);
}

/* The ioctl that stalls, in a thread of its own. */
struct stalled_call {
	int fd;
	unsigned long req;
	void *arg;
	int ret;
};

static void *stalled_call_run(void *arg)
{
	struct stalled_call *c = arg;

	c->ret = hpu_ioc(c->fd, c->req, c->arg);
	return NULL;
}

HPU_LOG_FIXTURE(stalled, ASSERT_EQ(0, device_restore(self->bdf, sizeof(self->bdf))))

FIXTURE_VARIANT(stalled) {
	unsigned long req;
	/* The jobs of a SUBMIT; the last one's packets are on the stalled page. */
	unsigned int jobs;
	/* What the call returns once the page is filled, the device gone. */
	int ret;
};

FIXTURE_VARIANT_ADD(stalled, submit) {
	.req = DRM_IOCTL_HPU_SUBMIT, .jobs = 1, .ret = -ENODEV,
};
FIXTURE_VARIANT_ADD(stalled, submit_second_job) {
	.req = DRM_IOCTL_HPU_SUBMIT, .jobs = 2, .ret = -ENODEV,
};
/* The answer was read before the copy out: it stands. */
FIXTURE_VARIANT_ADD(stalled, info) { .req = DRM_IOCTL_HPU_INFO, .ret = 0 };

/*
 * Unbind does not wait for a user's copy: a process can stall one as long
 * as it likes.  The call then fails, or answers, without touching the gone
 * device, and the device comes back clean.
 */
TEST_F_TIMEOUT(stalled, unbind_goes_on, 2 * GONE_S + BACK_S)
{
	struct drm_hpu_job jobs[2];
	struct drm_hpu_submit submit = { .jobs_ptr = (uintptr_t)jobs, .num_jobs = variant->jobs };
	struct drm_hpu_info info = {
		.query = DRM_HPU_INFO_DEVICE, .data_size = DRM_HPU_DEVICE_INFO_SIZE_V1,
	};
	struct stalled_call call = { .req = variant->req };
	static struct hpu_cb cb;
	struct stall st;
	int status, err;
	pthread_t thread;
	bool unbound;
	pid_t unbind;

	if (geteuid())
		SKIP(return, "userfaultfd stalls the kernel's copies only for root");
	err = stall_open(&st);
	if (err == -ENOSYS)
		SKIP(return, "no userfaultfd in this kernel");
	ASSERT_EQ(0, err);
	call.fd = hpu_open_node(self->bdf);
	ASSERT_LE(0, call.fd);
	cb.size = 0;
	hpu_cb_memset(&cb, 0, 0, 8);
	for (unsigned int i = 0; i < variant->jobs; i++)
		jobs[i] = (struct drm_hpu_job){ .cb_ptr = (uintptr_t)cb.buf, .cb_size = cb.size };
	if (variant->jobs)
		jobs[variant->jobs - 1].cb_ptr = (uintptr_t)st.page;
	info.data_ptr = (uintptr_t)st.page;
	call.arg = variant->req == DRM_IOCTL_HPU_SUBMIT ? (void *)&submit : (void *)&info;
	ASSERT_EQ(0, pthread_create(&thread, NULL, stalled_call_run, &call));
	ASSERT_EQ(0, stall_wait(&st, GONE_S)) {
		stall_fill(&st, cb.buf);
		pthread_join(thread, NULL);
	}

	unbind = fork();
	ASSERT_LE(0, unbind);
	if (!unbind)
		_exit(hpu_write_file(HPU_SYSFS_DRIVER "/unbind", self->bdf) ? 1 : 0);
	unbound = WAIT_FOR(waitpid(unbind, &status, WNOHANG) == unbind, GONE_S);
	EXPECT_TRUE(unbound) TH_LOG("unbind still waits for the stalled call");
	/* The page filled with a job's packets, the call goes on. */
	EXPECT_EQ(0, stall_fill(&st, cb.buf));
	pthread_join(thread, NULL);
	EXPECT_EQ(variant->ret, call.ret);
	if (!unbound)
		ASSERT_EQ(unbind, waitpid(unbind, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	close(call.fd);
	stall_close(&st);
	assert_back(_metadata, self->bdf, sizeof(self->bdf), WAY_UNBIND, self->mark);
}

TEST_HARNESS_MAIN
