// SPDX-License-Identifier: MIT
/*
 * Training survives faults injected into another context (issue 25; root:
 * it reloads the module and writes debugfs).  hpu_mlp.h's model trains
 * through libhpu in a child process while this process, the guilty, takes
 * fault after fault (hpu_faults.h: each in a new file of its own, aimed at
 * that file's context id from INFO_STATS), or, for the device-wide kinds,
 * has the device reset under the trainer.  For each kind, with the trainer
 * on user queues (libhpu's default) and on kernel queues
 * (HPU_USER_QUEUES=0): every call of the trainer succeeds and none of its
 * jobs fails, its parameters, loss sum, statistics and dropout mask end
 * bitwise where an undisturbed run of the same queue kind ends, every
 * fault was injected and its job ended as the kind means, INFO counts each
 * fault's resets and no others, and the device is READY.  The faults start
 * after the trainer's first step and go on until its second-last; before
 * its last step it waits for the last fault to end, so every fault lands
 * while it trains.  First, a fault aimed at one file's id fails that
 * file's job and not another's.
 *
 * Prints, per kind and queue kind (uq: user queues, kq: kernel queues),
 * for `make test-faults` (HPU_BENCH=1: plain lines; else TAP comments):
 *   BENCH train_fault_<kind>_<uq|kq>_steps          the trainer's steps
 *   BENCH train_fault_<kind>_<uq|kq>_faults         faults taken while it trained
 *   BENCH train_fault_<kind>_<uq|kq>_resets         queue, engine and device resets meanwhile
 *   BENCH train_fault_<kind>_<uq|kq>_weights_equal  1: bitwise the undisturbed run's
 *
 * The module runs with a 2 s job timeout, a 50 ms heartbeat and a 100 ms
 * queue_reset_timeout_us, as in faults_test, loaded so once by the first
 * test that needs it; the last test loads it with its defaults again.
 */
#include <signal.h>
#include <stdbool.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "hpu_abi.h"
#include "hpu_mlp.h"
#include "hpu_test.h"
#include "hpu_faults.h"

#define TRAIN_PARAMS "job_timeout_ms=2000 heartbeat_ms=50"
#define TRAIN_STEPS 16
#define MIN_FAULTS 2		/* each run takes at least this many */
#define MAX_FAULTS 64		/* and no more, however long the trainer runs */
#define RUN_LIMIT_S 120.0	/* a trainer still running then is killed */

/* What the trainer ends with: parameters, loss sum, statistics, dropout mask. */
#define STATE_BYTES ((HID * IN + HID + OUT * HID + OUT + 1 + HID) * 4 + B * HID)

/* One run of the trainer, in memory it shares with the test. */
struct train_run {
	unsigned int steps;	/* issued so far (__atomic) */
	int guilty_done;	/* the guilty has stopped: the last step may go (__atomic) */
	int ret;		/* -ECHILD while it runs; then 0 or the first failure */
	char what[320];		/* that call, and hpu_last_error() after it */
	uint64_t jobs, jobs_failed;	/* of its context, at its end */
	double ms, gate_ms;		/* its run; its wait for the guilty before its last step */
	unsigned int fault_steps[2];	/* steps issued when the faults began and ended */
	uint8_t state[STATE_BYTES];
};

/*
 * The undisturbed runs' states by queue kind, made by the first test that
 * needs each: the harness forks every test from the process that mapped
 * them, so later tests find them.
 */
static struct reference {
	bool made[2];
	uint8_t state[2][STATE_BYTES];
} *reference;

static void __attribute__((constructor)) map_reference(void)
{
	void *p = mmap(NULL, sizeof(*reference), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	reference = p == MAP_FAILED ? NULL : p;
}

static int train_failed(struct train_run *r, const char *what, int ret)
{
	snprintf(r->what, sizeof(r->what), "%s (%s)", what, hpu_last_error());
	return ret;
}

/* Returns from the trainer with the first call that failed. */
#define TRAIN_CALL(r, call) \
	do { int ret_ = (call); if (ret_) return train_failed(r, #call, ret_); } while (0)

/* The tensors of the state, read back one after the other into state. */
static int read_state(struct hpu_stream *s, struct mlp *m, uint8_t *state)
{
	struct hpu_tensor *t[] = {
		m->p[W1], m->p[B1], m->p[W2], m->p[B2], m->loss_sum, m->stat, m->mask,
	};
	size_t off = 0, n, i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		void *v = read_all(s, t[i], &n);

		if (!v || off + n > STATE_BYTES) {
			free(v);
			return v ? -EOVERFLOW : -EIO;
		}
		memcpy(state + off, v, n);
		off += n;
		free(v);
	}
	return off == STATE_BYTES ? 0 : -EPROTO;
}

/* Until the guilty stops, at most RUN_LIMIT_S: the trainer's last step waits for it. */
static void wait_for_guilty(struct train_run *r)
{
	double t0 = hpu_now_s();

	while (!__atomic_load_n(&r->guilty_done, __ATOMIC_ACQUIRE) && hpu_now_s() < t0 + RUN_LIMIT_S)
		usleep(1000);
	r->gate_ms = (hpu_now_s() - t0) * 1000;
}

/* TRAIN_STEPS steps from the usual seed, then the state read back and the context's job counts. */
static int train(struct train_run *r)
{
	struct hpu_device_stats st = { .size = sizeof(st) };
	struct hpu_device *dev = NULL;
	struct hpu_stream *s = NULL;
	double t0 = hpu_now_s();
	unsigned int i;
	struct mlp m;

	TRAIN_CALL(r, hpu_device_open(0, &dev));
	TRAIN_CALL(r, hpu_stream_create(dev, &s));
	lcg = 1;
	mlp_init(dev, s, &m);
	for (i = 0; i < TRAIN_STEPS; i++) {
		if (i == TRAIN_STEPS - 1)
			wait_for_guilty(r);
		TRAIN_CALL(r, load_batch(s, &m, i));
		TRAIN_CALL(r, mlp_step(dev, s, &m));
		__atomic_store_n(&r->steps, i + 1, __ATOMIC_RELEASE);
	}
	TRAIN_CALL(r, hpu_stream_synchronize(s));
	TRAIN_CALL(r, read_state(s, &m, r->state));
	TRAIN_CALL(r, hpu_device_get_stats(dev, &st));
	r->jobs = st.ctx_jobs_submitted;
	r->jobs_failed = st.ctx_jobs_failed;
	r->ms = (hpu_now_s() - t0) * 1000;
	mlp_free(&m);
	hpu_stream_destroy(s);
	hpu_device_close(dev);
	return 0;
}

/* Starts the trainer in a child, on kernel queues if asked; its pid, or -1. */
static pid_t trainer_start(struct train_run *r, bool kernel_queues, bool alone)
{
	pid_t pid;

	memset(r, 0, sizeof(*r));
	r->ret = -ECHILD;
	r->guilty_done = alone;
	pid = fork();
	if (pid)
		return pid;
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) ||
	    (kernel_queues && setenv("HPU_USER_QUEUES", "0", 1)))
		__atomic_store_n(&r->ret, train_failed(r, "setting up the child", -errno),
				 __ATOMIC_RELEASE);
	else
		__atomic_store_n(&r->ret, train(r), __ATOMIC_RELEASE);
	_exit(0);
}

/* Reaps the trainer, killed if it runs past RUN_LIMIT_S from start. */
static void trainer_reap(pid_t pid, struct train_run *r, double start)
{
	if (pid < 0) {
		train_failed(r, "fork()", -errno);
		return;
	}
	while (waitpid(pid, NULL, WNOHANG) == 0) {
		if (hpu_now_s() > start + RUN_LIMIT_S) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			snprintf(r->what, sizeof(r->what), "the run (killed after %.0f s)",
				 RUN_LIMIT_S);
			break;
		}
		usleep(2000);
	}
}

static void bench(const char *name, bool kernel_queues, const char *what, double v)
{
	printf("%sBENCH train_fault_%s_%s_%s %.0f\n", getenv("HPU_BENCH") ? "" : "# ", name,
	       kernel_queues ? "kq" : "uq", what, v);
	fflush(stdout);
}

/* Opens a file and maps a buffer of 2 chunks in it: the file, or -errno. */
static int file_with_buffer(const char *bdf, uint8_t **buf, uint64_t *va, uint32_t *ctx_id)
{
	struct drm_hpu_stats st;
	int fd = hpu_open_node(bdf), err;

	if (fd < 0)
		return fd;
	*va = 0;
	*buf = hpu_host_pages(2 * HPU_GUILTY_CHUNK);
	err = *buf ? hpu_stats(fd, &st) : -ENOMEM;
	if (!err)
		err = hpu_vm_map(fd, 0, 0, *buf, 2 * HPU_GUILTY_CHUNK,
				 DRM_HPU_VM_MAP_READ | DRM_HPU_VM_MAP_WRITE, va);
	if (err) {
		close(fd);
		return err;
	}
	*ctx_id = st.ctx_id;
	return fd;
}

/*
 * A fault aimed at one file's context id (ABI 1.4) fails that file's job
 * and not another's, whichever submits first.
 */
TEST(a_fault_aimed_at_a_files_id_hits_that_file_only)
{
	struct hpu_cb *cb = calloc(1, sizeof(*cb));
	uint32_t id[2];
	uint64_t va[2];
	uint8_t *buf[2];
	unsigned int f, k, target;
	long long injected;
	char bdf[64];
	int fd[2];

	ASSERT_NE(NULL, cb);
	ASSERT_EQ(0, hpu_find_bdf(bdf, sizeof(bdf)));
	ASSERT_LE(0, hpu_usage(bdf, "contexts"));
	for (f = 0; f < 2; f++) {
		fd[f] = file_with_buffer(bdf, &buf[f], &va[f], &id[f]);
		ASSERT_LE(0, fd[f]);
	}
	ASSERT_NE(id[0], id[1]);
	for (target = 0; target < 2; target++) {
		injected = fault_get(bdf, "mmu_fault", "injected");
		ASSERT_EQ(0, hpu_fault_aim(bdf, "mmu_fault", id[target], "1"));
		/* The other file first: a fault for any context would hit its job. */
		for (k = 1; k <= 2; k++) {
			f = (target + k) % 2;
			cb->size = 0;
			hpu_cb_dma(cb, va[f] + HPU_GUILTY_CHUNK, va[f], HPU_GUILTY_CHUNK);
			EXPECT_EQ(f == target ? -EFAULT : 0,
				  hpu_run(fd[f], 0, cb->buf, cb->size))
				TH_LOG("file %u (context %u), the fault aimed at %u", f, id[f],
				       id[target]);
		}
		EXPECT_EQ(injected + 1, fault_get(bdf, "mmu_fault", "injected"));
	}
	for (f = 0; f < 2; f++) {
		close(fd[f]);
		munmap(buf[f], 2 * HPU_GUILTY_CHUNK);
	}
	free(cb);
}

FIXTURE(train) {
	char bdf[64];
	int fd;			/* the test's own file, for INFO */
	struct train_run *run;
};

FIXTURE_VARIANT(train) {
	const char *name;	/* of hpu_fault_cases[] */
};

FIXTURE_VARIANT_ADD(train, engine_hang) { .name = "engine_hang" };
FIXTURE_VARIANT_ADD(train, reset_fail) { .name = "reset_fail" };
FIXTURE_VARIANT_ADD(train, mmu_fault) { .name = "mmu_fault" };
FIXTURE_VARIANT_ADD(train, dma_error) { .name = "dma_error" };
FIXTURE_VARIANT_ADD(train, lost_irq) { .name = "lost_irq" };
FIXTURE_VARIANT_ADD(train, bad_completion) { .name = "bad_completion" };
FIXTURE_VARIANT_ADD(train, heartbeat_loss) { .name = "heartbeat_loss" };

/* Whether module parameter @name reads @want. */
static bool param_is(const char *name, const char *want)
{
	char path[128], buf[32];

	snprintf(path, sizeof(path), "/sys/module/hpu/parameters/%s", name);
	return !hpu_read_file(path, buf, sizeof(buf)) && !strcmp(buf, want);
}

FIXTURE_SETUP(train)
{
	ASSERT_NE(NULL, reference);
	if (!param_is("job_timeout_ms", "2000") || !param_is("heartbeat_ms", "50"))
		ASSERT_EQ(0, hpu_reload(TRAIN_PARAMS));
	ASSERT_EQ(0, hpu_write_file("/sys/module/hpu/parameters/queue_reset_timeout_us",
				    "100000"));
	ASSERT_EQ(0, hpu_find_bdf(self->bdf, sizeof(self->bdf)));
	/* Mounts debugfs if need be. */
	ASSERT_LE(0, hpu_usage(self->bdf, "contexts"));
	self->fd = hpu_open_node(self->bdf);
	ASSERT_LE(0, self->fd);
	self->run = mmap(NULL, sizeof(*self->run), PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->run);
}

FIXTURE_TEARDOWN(train)
{
	close(self->fd);
	munmap(self->run, sizeof(*self->run));
}

static void expect_trained(struct __test_metadata *_metadata, const struct train_run *r,
			   const char *when)
{
	EXPECT_EQ(0, r->ret) TH_LOG("trainer %s: %s failed: %d", when, r->what, r->ret);
	EXPECT_EQ(0, r->jobs_failed) TH_LOG("trainer %s: %llu of its %llu jobs failed", when,
					    (unsigned long long)r->jobs_failed,
					    (unsigned long long)r->jobs);
}

static bool running(struct train_run *r)
{
	return __atomic_load_n(&r->ret, __ATOMIC_ACQUIRE) == -ECHILD;
}

/*
 * The guilty's part: once the trainer has stepped, fault after fault of c
 * until it reaches its second-last step (MIN_FAULTS at least, MAX_FAULTS at
 * most) or ends; then its last step may go.  The faults taken.
 */
static unsigned int take_faults(struct __test_metadata *_metadata, const char *bdf,
				const struct hpu_fault_case *c, struct train_run *r)
{
	double until = hpu_now_s() + RUN_LIMIT_S;
	unsigned int faults = 0;
	char why[160];

	while (__atomic_load_n(&r->steps, __ATOMIC_ACQUIRE) < 1 && running(r) && hpu_now_s() < until)
		usleep(1000);
	r->fault_steps[0] = __atomic_load_n(&r->steps, __ATOMIC_ACQUIRE);
	while (faults < MAX_FAULTS && running(r) && hpu_now_s() < until &&
	       (faults < MIN_FAULTS ||
		__atomic_load_n(&r->steps, __ATOMIC_ACQUIRE) < TRAIN_STEPS - 2)) {
		int err = hpu_guilty_fault(bdf, c, why, sizeof(why));

		EXPECT_EQ(0, err) TH_LOG("fault %u of %s: %s", faults + 1, c->name, why);
		if (err)
			break;
		faults++;
	}
	r->fault_steps[1] = __atomic_load_n(&r->steps, __ATOMIC_ACQUIRE);
	__atomic_store_n(&r->guilty_done, 1, __ATOMIC_RELEASE);
	return faults;
}

/* The reference run of this queue kind, made once. */
static void make_reference(struct __test_metadata *_metadata, struct train_run *r,
			   bool kernel_queues)
{
	double start = hpu_now_s();

	if (reference->made[kernel_queues])
		return;
	trainer_reap(trainer_start(r, kernel_queues, true), r, start);
	expect_trained(_metadata, r, "alone");
	ASSERT_EQ(0, r->ret);
	memcpy(reference->state[kernel_queues], r->state, STATE_BYTES);
	reference->made[kernel_queues] = true;
	ksft_print_msg("trainer alone (%s queues): %u steps, %llu jobs, %.0f ms\n",
		       kernel_queues ? "kernel" : "user", r->steps, (unsigned long long)r->jobs,
		       r->ms);
}

static void train_under_faults(struct __test_metadata *_metadata, FIXTURE_DATA(train) *self,
			       const char *name, bool kernel_queues)
{
	const struct hpu_fault_case *c = hpu_fault_case(name);
	struct drm_hpu_device_info before, after;
	struct train_run *r = self->run;
	long long injected, also = 0;
	unsigned int faults, resets;
	double start;
	bool equal;
	pid_t pid;

	ASSERT_NE(NULL, c);
	make_reference(_metadata, r, kernel_queues);
	ASSERT_EQ(0, device_info(self->fd, &before));
	injected = fault_get(self->bdf, c->kind, "injected");
	if (c->also)
		also = fault_get(self->bdf, c->also, "injected");

	start = hpu_now_s();
	pid = trainer_start(r, kernel_queues, false);
	ASSERT_LT(0, pid) TH_LOG("fork(): %s", strerror(errno));
	faults = take_faults(_metadata, self->bdf, c, r);
	trainer_reap(pid, r, start);
	ASSERT_EQ(0, device_info(self->fd, &after));

	expect_trained(_metadata, r, "under faults");
	equal = !r->ret && !memcmp(r->state, reference->state[kernel_queues], STATE_BYTES);
	EXPECT_TRUE(equal) TH_LOG("the trainer's state differs from its undisturbed run's");
	resets = (after.queue_resets - before.queue_resets) +
		 (after.engine_resets - before.engine_resets) +
		 (after.device_resets - before.device_resets);
	bench(name, kernel_queues, "steps", r->steps);
	bench(name, kernel_queues, "faults", faults);
	bench(name, kernel_queues, "resets", resets);
	bench(name, kernel_queues, "weights_equal", equal);
	ksft_print_msg("trainer under %s: %llu jobs, %.0f ms; steps %u to %u issued while the "
		       "faults ran, then %.0f ms waiting for the last to end\n", name,
		       (unsigned long long)r->jobs, r->ms, r->fault_steps[0], r->fault_steps[1],
		       r->gate_ms);

	EXPECT_LE(MIN_FAULTS, faults);
	EXPECT_EQ(TRAIN_STEPS, r->steps);
	EXPECT_EQ(injected + faults, fault_get(self->bdf, c->kind, "injected"));
	if (c->also)
		EXPECT_EQ(also + faults, fault_get(self->bdf, c->also, "injected"));
	EXPECT_EQ(before.queue_resets + faults * c->queue_resets, after.queue_resets);
	EXPECT_EQ(before.engine_resets + faults * c->engine_resets, after.engine_resets);
	EXPECT_EQ(before.device_resets + faults * c->device_resets, after.device_resets);
	if (c->cause >= 0)
		EXPECT_EQ((unsigned int)c->cause, after.last_reset_cause);
	EXPECT_EQ(DRM_HPU_STATUS_READY, after.status);
}

TEST_F_TIMEOUT(train, on_user_queues, 300)
{
	train_under_faults(_metadata, self, variant->name, false);
}

TEST_F_TIMEOUT(train, on_kernel_queues, 300)
{
	train_under_faults(_metadata, self, variant->name, true);
}

/* Last: the module as the suites after this one expect it. */
FIXTURE(defaults) {
};

FIXTURE_SETUP(defaults)
{
}

FIXTURE_TEARDOWN(defaults)
{
}

TEST_F(defaults, the_module_is_loaded_with_its_defaults_again)
{
	ASSERT_EQ(0, hpu_reload(""));
}

TEST_HARNESS_MAIN
