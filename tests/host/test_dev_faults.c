// SPDX-License-Identifier: MIT
/*
 * Device-core tests of register map 1.7: the firmware heartbeat, ENGINE_RESET,
 * the warm reset (HBM, saved and user queues kept; a job set aside by it and
 * resumed ends to the bit as an uninterrupted one), and fault injection: every
 * kind where and as often as its settings say (next N, skip, probability with a
 * seed, ASID filter), through the FI_* registers and the properties' syntax, and
 * hostile values in every new register.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hdm_internal.h"
#include "hdm_harness.h"
#include "hdm_mme.h"

#define Q 1u
#define Q2 2u
#define PERIOD_NS (HPU_FW_HEARTBEAT_MS * 1000000ull)
#define ALWAYS HDM_FAULT_ALWAYS
#define ANY HPU_FI_ANY_ASID
/* Loose bound for a loaded host, for what should take microseconds. */
#define WAIT_NS 20000000000ull

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void fi_arm(struct hpu_test *t, uint32_t kind, uint32_t times, uint32_t skip,
		   uint32_t prob, uint32_t seed, uint32_t asid)
{
	hpu_wr(t, HPU_REG_FI_SELECT, kind);
	hpu_wr(t, HPU_REG_FI_TIMES, times);
	hpu_wr(t, HPU_REG_FI_SKIP, skip);
	hpu_wr(t, HPU_REG_FI_PROB, prob);
	hpu_wr(t, HPU_REG_FI_SEED, seed);
	hpu_wr(t, HPU_REG_FI_ASID, asid);
	hpu_wr(t, HPU_REG_FI_CTRL, HPU_FI_CTRL_ARM);
}

static uint32_t fi_injected(struct hpu_test *t, uint32_t kind)
{
	hpu_wr(t, HPU_REG_FI_SELECT, kind);
	return hpu_rd(t, HPU_REG_FI_INJECTED);
}

/* A kernel queue's job as the driver keeps it, to push it again byte for byte. */
struct job {
	struct hpu_cb cb;
	uint32_t priv; /* the driver's tail (a completion) starts here */
	uint64_t tag;
};

/* The user's packets in job->cb, then the driver's tail. */
static void job_seal(struct job *job, unsigned int q, uint64_t tag)
{
	job->tag = tag;
	job->priv = job->cb.len;
	cb_completion(&job->cb, BUS(COMPLETION_OFF(q)), COMPLETION_VALUE + tag);
}

static void push(struct hpu_test *t, unsigned int q, const struct job *job, uint32_t flags)
{
	submit_flags(t, q, &job->cb, job->priv, ASID, flags, job->tag);
}

/* A job of n NOPs. */
static void job_nops(struct job *job, unsigned int q, unsigned int n, uint64_t tag)
{
	job->cb.len = 0;
	while (n--)
		cb_nop(&job->cb);
	job_seal(job, q, tag);
}

/* A job parked on q at a WAIT of sync object i (until it is 1), after n NOPs. */
static void park_waiter(struct hpu_test *t, unsigned int q, struct job *job, unsigned int n,
			unsigned int i, uint64_t tag)
{
	job->cb.len = 0;
	while (n--)
		cb_nop(&job->cb);
	cb_sync(&job->cb, HPU_PKT_WAIT, SYNC_VA(i), 1);
	job_seal(job, q, tag);
	push(t, q, job, 0);
	run(t);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(q, STATUS)), HPU_Q_STATUS_WAITING);
}

/* The bus address of q's descriptor slot idx. */
static uint64_t slot_bus(unsigned int q, uint32_t idx)
{
	return BUS(Q_RING_OFF(q)) + (idx % Q_RING_ENTRIES) * sizeof(struct hpu_queue_desc);
}

static uint64_t saved_tag(struct hpu_test *t, unsigned int q)
{
	return (uint64_t)hpu_rd(t, REG_Q(q, SAVED_TAG_HI)) << 32 | hpu_rd(t, REG_Q(q, SAVED_TAG_LO));
}

/* ---- heartbeat ---- */

static void case_heartbeat(struct hpu_test *t)
{
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_FW_HEARTBEAT), 0);
	t->clock += 5 * PERIOD_NS;
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_FW_HEARTBEAT), 0);
	setup(t);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_FW_HEARTBEAT), 0);
	t->clock += 3 * PERIOD_NS + PERIOD_NS / 2;
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_FW_HEARTBEAT), 3);
	t->clock += PERIOD_NS;
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_FW_HEARTBEAT), 4);
	/* A failed boot has no heartbeat either. */
	hpu_wr(t, HPU_REG_RESET, HPU_RESET_KEY);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_FW_HEARTBEAT), 0);
	hpu_test_boot(t, HPU_TEST_IMAGE_ADDR, 3);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_BOOT_STATUS), HPU_FW_BOOT_FAILED);
	t->clock += 3 * PERIOD_NS;
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_FW_HEARTBEAT), 0);
	t->logs_seen = t->logs;
	HPU_EXPECT_CLEAN(t);
}

/* HEARTBEAT_LOSS: the third period fails, HEARTBEAT stays 2, until a reset. */
static void case_heartbeat_loss(struct hpu_test *t)
{
	setup(t);
	fi_arm(t, HPU_FAULT_HEARTBEAT_LOSS, 1, 2, ALWAYS, 0, ANY);
	t->clock += PERIOD_NS + 10;
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_FW_HEARTBEAT), 1);
	HPU_CHECK_EQ(t, fi_injected(t, HPU_FAULT_HEARTBEAT_LOSS), 0);
	t->clock += 5 * PERIOD_NS;
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_FW_HEARTBEAT), 2);
	t->clock += 50 * PERIOD_NS;
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_FW_HEARTBEAT), 2);
	HPU_CHECK_EQ(t, fi_injected(t, HPU_FAULT_HEARTBEAT_LOSS), 1);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_FI_TIMES), 0);
	/* The engine still runs: only the heartbeat stopped. */
	EXPECT_DONE(t, Q);
	/* A warm reset and a boot: it beats again. */
	hpu_wr(t, HPU_REG_RESET, HPU_RESET_KEY_WARM);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_FW_HEARTBEAT), 0);
	setup(t);
	t->clock += 7 * PERIOD_NS;
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_FW_HEARTBEAT), 7);
	HPU_EXPECT_CLEAN(t);
}

/* An ASID filter other than "any" never counts the heartbeat (it has no context). */
static void case_heartbeat_asid(struct hpu_test *t)
{
	setup(t);
	fi_arm(t, HPU_FAULT_HEARTBEAT_LOSS, 1, 0, ALWAYS, 0, ASID);
	t->clock += 9 * PERIOD_NS;
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_FW_HEARTBEAT), 9);
	HPU_CHECK_EQ(t, fi_injected(t, HPU_FAULT_HEARTBEAT_LOSS), 0);
}

/* ---- the FI registers ---- */

static void case_fi_registers(struct hpu_test *t)
{
	static const uint32_t bad_kinds[] = { 0, HPU_FAULT_KINDS, 0x80000001u, UINT32_MAX };
	static const uint32_t holes[] = { HPU_REG_FW_HEARTBEAT - 4, HPU_REG_ENGINE_RESET + 4,
					  HPU_REG_FI_SELECT - 4, HPU_REG_FI_CTRL + 4 };
	size_t i;

	/* No kind selected: settings read 0, writes and ARM are refused. */
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_FI_SELECT), 0);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_FI_TIMES), 0);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_FI_INJECTED), 0);
	hpu_wr(t, HPU_REG_FI_TIMES, 3);
	HPU_EXPECT_ERROR(t, HPU_ERR_BAD_CTRL);
	hpu_wr(t, HPU_REG_FI_CTRL, HPU_FI_CTRL_ARM);
	HPU_EXPECT_ERROR(t, HPU_ERR_BAD_CTRL);
	for (i = 0; i < HPU_ARRAY_SIZE(bad_kinds); i++) {
		hpu_wr(t, HPU_REG_FI_SELECT, HPU_FAULT_MMU_FAULT);
		hpu_wr(t, HPU_REG_FI_SELECT, bad_kinds[i]);
		HPU_EXPECT_ERROR(t, HPU_ERR_BAD_CTRL);
		HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_FI_SELECT), HPU_FAULT_MMU_FAULT);
	}
	/* Each kind keeps its own settings. */
	for (i = 1; i < HPU_FAULT_KINDS; i++) {
		hpu_wr(t, HPU_REG_FI_SELECT, (uint32_t)i);
		hpu_wr(t, HPU_REG_FI_TIMES, 100 + (uint32_t)i);
		hpu_wr(t, HPU_REG_FI_SKIP, 200 + (uint32_t)i);
		hpu_wr(t, HPU_REG_FI_PROB, 300 + (uint32_t)i);
		hpu_wr(t, HPU_REG_FI_SEED, 400 + (uint32_t)i);
		hpu_wr(t, HPU_REG_FI_ASID, (uint32_t)i);
	}
	for (i = 1; i < HPU_FAULT_KINDS; i++) {
		hpu_wr(t, HPU_REG_FI_SELECT, (uint32_t)i);
		HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_FI_TIMES), 100 + i);
		HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_FI_SKIP), 200 + i);
		HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_FI_PROB), 300 + i);
		HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_FI_SEED), 400 + i);
		HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_FI_ASID), i);
	}
	HPU_EXPECT_CLEAN(t);
	/* ASIDs past the MMU's, but "any". */
	hpu_wr(t, HPU_REG_FI_ASID, HPU_MMU_NUM_ASIDS);
	HPU_EXPECT_ERROR(t, HPU_ERR_BAD_CTRL);
	hpu_wr(t, HPU_REG_FI_ASID, 0xfffffffeu);
	HPU_EXPECT_ERROR(t, HPU_ERR_BAD_CTRL);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_FI_ASID), HPU_FAULT_KINDS - 1);
	hpu_wr(t, HPU_REG_FI_ASID, ANY);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_FI_ASID), ANY);
	/* CTRL: unknown bits, both at once; nothing is armed by them. */
	hpu_wr(t, HPU_REG_FI_CTRL, HPU_FI_CTRL_ARM | 4);
	HPU_EXPECT_ERROR(t, HPU_ERR_BAD_CTRL);
	hpu_wr(t, HPU_REG_FI_CTRL, HPU_FI_CTRL_ARM | HPU_FI_CTRL_DISARM);
	HPU_EXPECT_ERROR(t, HPU_ERR_BAD_CTRL);
	hpu_wr(t, HPU_REG_FI_CTRL, 0);
	HPU_CHECK_EQ(t, t->core->fault.armed, 0);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_FI_CTRL), 0);
	/* Read-only and write-only ones. */
	hpu_wr(t, HPU_REG_FI_INJECTED, 5);
	HPU_EXPECT_ERROR(t, HPU_ERR_READ_ONLY);
	hpu_wr(t, HPU_REG_FW_HEARTBEAT, 5);
	HPU_EXPECT_ERROR(t, HPU_ERR_READ_ONLY);
	hpu_wr(t, REG_Q(Q, SAVED_TAG_LO), 5);
	HPU_EXPECT_ERROR(t, HPU_ERR_READ_ONLY);
	hpu_wr(t, REG_Q(HPU_NUM_QUEUES - 1, SAVED_TAG_HI), 5);
	HPU_EXPECT_ERROR(t, HPU_ERR_READ_ONLY);
	HPU_CHECK_EQ(t, saved_tag(t, Q), 0);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_ENGINE_RESET), 0);
	hpu_wr(t, HPU_REG_ENGINE_RESET, HPU_RESET_KEY_WARM);
	HPU_EXPECT_ERROR(t, HPU_ERR_BAD_RESET_KEY);
	hpu_wr(t, HPU_REG_ENGINE_RESET, 0);
	HPU_EXPECT_ERROR(t, HPU_ERR_BAD_RESET_KEY);
	hpu_wr(t, HPU_REG_RESET, HPU_RESET_KEY_WARM + 1);
	HPU_EXPECT_ERROR(t, HPU_ERR_BAD_RESET_KEY);
	for (i = 0; i < HPU_ARRAY_SIZE(holes); i++) {
		HPU_CHECK_EQ(t, hpu_rd(t, holes[i]), 0);
		HPU_EXPECT_ERROR(t, HPU_ERR_BAD_ACCESS);
		hpu_wr(t, holes[i], 1);
		HPU_EXPECT_ERROR(t, HPU_ERR_BAD_ACCESS);
	}
	/* Partial and wide accesses. */
	hdm_core_mmio_write(t->core, HPU_REG_FI_CTRL, HPU_FI_CTRL_ARM, 2);
	HPU_EXPECT_ERROR(t, HPU_ERR_BAD_ACCESS);
	hdm_core_mmio_read(t->core, HPU_REG_FI_SELECT, 8);
	HPU_EXPECT_ERROR(t, HPU_ERR_BAD_ACCESS);
	HPU_CHECK_EQ(t, t->core->fault.armed, 0);
	/* Arm and disarm; a cold reset disarms, keeps the counts. */
	hpu_wr(t, HPU_REG_FI_SELECT, HPU_FAULT_LOST_IRQ);
	hpu_wr(t, HPU_REG_FI_CTRL, HPU_FI_CTRL_ARM);
	HPU_CHECK_EQ(t, t->core->fault.armed, 1u << HPU_FAULT_LOST_IRQ);
	hpu_wr(t, HPU_REG_FI_CTRL, HPU_FI_CTRL_DISARM);
	HPU_CHECK_EQ(t, t->core->fault.armed, 0);
	hpu_wr(t, HPU_REG_FI_CTRL, HPU_FI_CTRL_ARM);
	hpu_wr(t, HPU_REG_RESET, HPU_RESET_KEY_WARM);
	HPU_CHECK_EQ(t, t->core->fault.armed, 1u << HPU_FAULT_LOST_IRQ);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_FI_SELECT), HPU_FAULT_LOST_IRQ);
	hpu_wr(t, HPU_REG_RESET, HPU_RESET_KEY);
	HPU_CHECK_EQ(t, t->core->fault.armed, 0);
	HPU_EXPECT_CLEAN(t);
}

/* ---- ENGINE_HANG and ENGINE_RESET, on the engine's thread ---- */

struct engine {
	pthread_t thread;
	bool started;
};

static void engine_start(struct hpu_test *t, struct engine *e)
{
	e->started = !pthread_create(&e->thread, NULL, engine_thread, t->core);
	HPU_CHECK(t, e->started);
}

static void engine_end(struct hpu_test *t, struct engine *e)
{
	if (!e->started)
		return;
	hdm_core_engine_stop(t->core);
	pthread_join(e->thread, NULL);
	e->started = false;
}

/* Wait until reg reads want; whether it did. */
static bool wait_reg(struct hpu_test *t, uint32_t reg, uint32_t want)
{
	uint64_t start = now_ns();

	while (hpu_rd(t, reg) != want) {
		if (now_ns() - start > WAIT_NS)
			return false;
		sleep_tick();
	}
	return true;
}

#define WAIT_REG(t, reg, want) hpu_check(t, wait_reg(t, reg, want), #reg " reaches " #want, \
					 __LINE__)

/* Wait until another thread sets *flag; whether it did. */
static bool wait_flag(const bool *flag)
{
	uint64_t start = now_ns();

	while (!__atomic_load_n(flag, __ATOMIC_ACQUIRE)) {
		if (now_ns() - start > WAIT_NS)
			return false;
		sched_yield();
	}
	return true;
}

/* CPU time the engine's thread has used. */
static double cpu_ms(const struct engine *e)
{
	struct timespec ts = { 0 };
	clockid_t clock;

	if (!pthread_getcpuclockid(e->thread, &clock))
		clock_gettime(clock, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/*
 * The job's second packet hangs: BUSY|ENGINE, no CPU burnt, a CTRL RESET cannot
 * end it; ENGINE_RESET does (ABORTED at the packet, the queue manager's), at once,
 * and with reset the job behind it is dropped, else it runs.  A job parked on a WAIT
 * in another queue keeps its place.
 */
static void test_hang(struct hpu_test *t, bool with_ctrl_reset)
{
	struct engine e = { 0 };
	static struct job hung, behind, waiter;
	const struct timespec settle = { .tv_nsec = 50000000 };
	double cpu;

	setup(t);
	park_waiter(t, Q2, &waiter, 0, 0, 0x77);

	fi_arm(t, HPU_FAULT_ENGINE_HANG, 1, 1, ALWAYS, 0, ASID);
	job_nops(&hung, Q, 3, 0x10);
	job_nops(&behind, Q, 1, 0x11);
	engine_start(t, &e);
	push(t, Q, &hung, 0);
	push(t, Q, &behind, 0);
	WAIT_REG(t, HPU_REG_FI_INJECTED, 1);
	cpu = cpu_ms(&e);
	nanosleep(&settle, NULL);
	cpu = cpu_ms(&e) - cpu;
	printf("# hung for 50 ms: %.2f ms of the engine's CPU\n", cpu);
	HPU_CHECK(t, cpu < 5);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(Q, STATUS)), HPU_Q_STATUS_BUSY | HPU_Q_STATUS_ENGINE);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(Q, CI)), 0);
	if (with_ctrl_reset) {
		hpu_wr(t, REG_Q(Q, CTRL), HPU_Q_CTRL_RESET);
		nanosleep(&settle, NULL);
		HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(Q, STATUS)),
			     HPU_Q_STATUS_BUSY | HPU_Q_STATUS_ENGINE);
	}
	hpu_wr(t, HPU_REG_ENGINE_RESET, HPU_RESET_KEY);
	/* Done as the write returns (the job behind may be running already). */
	HPU_CHECK(t, hpu_rd(t, REG_Q(Q, CI)) >= 1);
	if (with_ctrl_reset) {
		HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(Q, CI)), 2);
		HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(Q, STATUS)), 0);
	}
	WAIT_REG(t, REG_Q(Q, CI), 2);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(Q2, STATUS)), HPU_Q_STATUS_WAITING);
	hdm_st_le32(t->mem + SYNC_OFF, 1);
	hpu_wr(t, REG_Q(Q2, PI), hpu_rd(t, REG_Q(Q2, PI)));
	WAIT_REG(t, REG_Q(Q2, CI), 1);
	engine_end(t, &e);
	expect_event(t, HPU_EVENT_ABORTED, Q, ASID, HPU_ENGINE_QMAN, 0x10, 8, 1, __LINE__);
	EXPECT_DONE(t, Q);
	HPU_CHECK_EQ(t, completion(t, Q), with_ctrl_reset ? 0 : COMPLETION_VALUE + 0x11);
	EXPECT_DONE(t, Q2);
	HPU_CHECK_EQ(t, completion(t, Q2), COMPLETION_VALUE + 0x77);
}

static void case_hang(struct hpu_test *t)
{
	test_hang(t, false);
}

static void case_hang_ctrl_reset(struct hpu_test *t)
{
	test_hang(t, true);
}

/* The engine on its thread, hung in hung's first packet (every packet hangs). */
static void hang_first(struct hpu_test *t, struct engine *e, struct job *hung)
{
	setup(t);
	fi_arm(t, HPU_FAULT_ENGINE_HANG, ALWAYS, 0, ALWAYS, 0, ANY);
	job_nops(hung, Q, 1, 0x20);
	engine_start(t, e);
	push(t, Q, hung, 0);
	WAIT_REG(t, HPU_REG_FI_INJECTED, 1);
}

/* A hung engine still stops (and joins). */
static void case_hang_stop(struct hpu_test *t)
{
	struct engine e = { 0 };
	static struct job hung;

	hang_first(t, &e, &hung);
	engine_end(t, &e);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(Q, CI)), 0);
}

/* A cold reset ends the hang and disarms: the job pushed again after it runs. */
static void case_hang_cold_reset(struct hpu_test *t)
{
	struct engine e = { 0 };
	static struct job hung;

	hang_first(t, &e, &hung);
	hpu_wr(t, HPU_REG_RESET, HPU_RESET_KEY);
	WAIT_REG(t, REG_Q(Q, STATUS), 0);
	setup(t);
	push(t, Q, &hung, 0);
	WAIT_REG(t, REG_Q(Q, CI), 1);
	engine_end(t, &e);
	EXPECT_DONE(t, Q);
	HPU_CHECK_EQ(t, completion(t, Q), COMPLETION_VALUE + 0x20);
	HPU_CHECK_EQ(t, fi_injected(t, HPU_FAULT_ENGINE_HANG), 1);
}

/* ENGINE_RESET with no job in the engine changes nothing; a parked job keeps its place. */
static void case_engine_reset_idle(struct hpu_test *t)
{
	static struct job waiter;

	setup(t);
	hpu_wr(t, HPU_REG_ENGINE_RESET, HPU_RESET_KEY);
	HPU_EXPECT_CLEAN(t);
	park_waiter(t, Q, &waiter, 0, 0, 0x30);
	hpu_wr(t, HPU_REG_ENGINE_RESET, HPU_RESET_KEY);
	run(t);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(Q, STATUS)), HPU_Q_STATUS_WAITING);
	hdm_st_le32(t->mem + SYNC_OFF, 1);
	hpu_wr(t, REG_Q(Q, PI), hpu_rd(t, REG_Q(Q, PI)));
	run(t);
	EXPECT_DONE(t, Q);
	HPU_CHECK_EQ(t, completion(t, Q), COMPLETION_VALUE + 0x30);
}

/* At the fourth DMA, CTRL RESET of Q (which the copy obeys at its next step), then ENGINE_RESET. */
static unsigned int both_countdown;

static void both_resets(struct hpu_test *t)
{
	if (both_countdown && !--both_countdown) {
		hpu_wr(t, REG_Q(Q, CTRL), HPU_Q_CTRL_RESET);
		hpu_wr(t, HPU_REG_ENGINE_RESET, HPU_RESET_KEY);
	}
}

/*
 * ENGINE_RESET in the middle of a copy whose queue has a reset pending: ABORTED at
 * the copy, its tail unrun.  With none pending, the copy is no reset's: it goes on.
 */
static void case_engine_reset_copy(struct hpu_test *t)
{
	struct hpu_cb cb = { .len = 0 };

	setup(t);
	cb_dma(&cb, VA_HBM, VA_HOST + SRC_OFF, 2u << 20, 0);
	submit_user(t, Q, &cb, 1);
	/* DMAs: descriptor, command buffer, then the copy's: from the engine's own thread. */
	both_countdown = 4;
	t->on_dma = both_resets;
	run(t);
	t->on_dma = NULL;
	HPU_CHECK_EQ(t, both_countdown, 0);
	EXPECT_EVENT(t, HPU_EVENT_ABORTED, Q, ASID, HPU_ENGINE_QMAN, 1, 0);
	EXPECT_DONE(t, Q);
	HPU_CHECK_EQ(t, completion(t, Q), 0);
	HPU_CHECK(t, t->dma_reads < 8);

	cb.len = 0;
	cb_dma(&cb, VA_HBM, VA_HOST + SRC_OFF, 2u << 20, 0);
	submit_user(t, Q, &cb, 2);
	hook_at(t, 4, HPU_REG_ENGINE_RESET, HPU_RESET_KEY);
	run(t);
	HPU_CHECK_EQ(t, hpu_hook_countdown, 0);
	EXPECT_DONE(t, Q);
	HPU_CHECK_EQ(t, completion(t, Q), COMPLETION_VALUE + 2);
}

/*
 * The engine reset's race, on the engine's thread: Q's job obeys its CTRL RESET
 * and leaves the engine just before the ENGINE_RESET meant for it comes, and the
 * engine is inside Q2's job by then.  Q2's job is innocent: it goes on and completes.
 * Each job is held at its copy's second step: Q's until its reset is pending,
 * Q2's until the ENGINE_RESET's write returned (or killed it).
 */
static unsigned int late_dmas[2];
static bool late_inside[2], late_written;

static void late_hook(struct hpu_test *t)
{
	const struct timespec poll = { .tv_nsec = 20000 };
	struct hdm_qman *qman = &t->core->qman;
	unsigned int i = qman->current == (int)Q2;
	uint64_t start = now_ns();

	if ((qman->current != (int)Q && !i) || ++late_dmas[i] != 4)
		return;
	__atomic_store_n(&late_inside[i], true, __ATOMIC_RELEASE);
	while (!(i ? __atomic_load_n(&late_written, __ATOMIC_ACQUIRE) ||
		     __atomic_load_n(&qman->queues[Q2].kill, __ATOMIC_RELAXED) :
		     __atomic_load_n(&qman->queues[Q].abort, __ATOMIC_RELAXED)) &&
	       now_ns() - start < WAIT_NS)
		nanosleep(&poll, NULL);
}

static void case_engine_reset_late(struct hpu_test *t)
{
	static struct job first, innocent;
	struct engine e = { 0 };

	setup(t);
	first.cb.len = 0;
	cb_dma(&first.cb, VA_HBM, VA_HOST + SRC_OFF, 2u << 20, 0);
	innocent = first;
	job_seal(&first, Q, 0x20);
	job_seal(&innocent, Q2, 0x21);
	memset(late_dmas, 0, sizeof(late_dmas));
	memset(late_inside, 0, sizeof(late_inside));
	late_written = false;
	t->on_dma = late_hook;
	engine_start(t, &e);
	push(t, Q, &first, 0);
	HPU_CHECK(t, wait_flag(&late_inside[0]));
	push(t, Q2, &innocent, 0);
	/* The driver's queue reset: the job leaves, the engine goes into Q2's. */
	hpu_wr(t, REG_Q(Q, CTRL), HPU_Q_CTRL_RESET);
	HPU_CHECK(t, wait_flag(&late_inside[1]));
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(Q, CI)), 1);
	/* Its engine reset, late. */
	hpu_wr(t, HPU_REG_ENGINE_RESET, HPU_RESET_KEY);
	__atomic_store_n(&late_written, true, __ATOMIC_RELEASE);
	WAIT_REG(t, REG_Q(Q2, CI), 1);
	WAIT_REG(t, REG_Q(Q2, STATUS), 0);
	engine_end(t, &e);
	t->on_dma = NULL;
	expect_event(t, HPU_EVENT_ABORTED, Q, ASID, DMA_ENGINE(Q), 0x20, 0, 1, __LINE__);
	EXPECT_DONE(t, Q);
	EXPECT_DONE(t, Q2);
	HPU_CHECK_EQ(t, completion(t, Q), 0);
	HPU_CHECK_EQ(t, completion(t, Q2), COMPLETION_VALUE + 0x21);
}

/* RESET_FAIL: the first ENGINE_RESET is ignored, the second frees the hung job. */
static void case_reset_fail(struct hpu_test *t)
{
	struct engine e = { 0 };
	static struct job hung;

	setup(t);
	fi_arm(t, HPU_FAULT_ENGINE_HANG, 1, 0, ALWAYS, 0, ANY);
	fi_arm(t, HPU_FAULT_RESET_FAIL, 1, 0, ALWAYS, 0, ANY);
	job_nops(&hung, Q, 1, 0x40);
	engine_start(t, &e);
	push(t, Q, &hung, 0);
	WAIT_REG(t, REG_Q(Q, STATUS), HPU_Q_STATUS_BUSY | HPU_Q_STATUS_ENGINE);
	hpu_wr(t, HPU_REG_FI_SELECT, HPU_FAULT_ENGINE_HANG);
	WAIT_REG(t, HPU_REG_FI_INJECTED, 1);
	hpu_wr(t, HPU_REG_ENGINE_RESET, HPU_RESET_KEY);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(Q, STATUS)), HPU_Q_STATUS_BUSY | HPU_Q_STATUS_ENGINE);
	HPU_CHECK_EQ(t, fi_injected(t, HPU_FAULT_RESET_FAIL), 1);
	hpu_wr(t, HPU_REG_ENGINE_RESET, HPU_RESET_KEY);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(Q, CI)), 1);
	engine_end(t, &e);
	expect_event(t, HPU_EVENT_ABORTED, Q, ASID, HPU_ENGINE_QMAN, 0x40, 0, 1, __LINE__);
	EXPECT_DONE(t, Q);

	/* A warm reset ignored: the firmware stays up. */
	fi_arm(t, HPU_FAULT_RESET_FAIL, 1, 0, ALWAYS, 0, ANY);
	hpu_wr(t, HPU_REG_RESET, HPU_RESET_KEY_WARM);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_BOOT_STATUS), HPU_FW_BOOT_READY);
	hpu_wr(t, HPU_REG_RESET, HPU_RESET_KEY_WARM);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_BOOT_STATUS), HPU_FW_BOOT_IDLE);
	/* The cold one is never failed. */
	setup(t);
	fi_arm(t, HPU_FAULT_RESET_FAIL, 1, 0, ALWAYS, 0, ANY);
	hpu_wr(t, HPU_REG_RESET, HPU_RESET_KEY);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_BOOT_STATUS), HPU_FW_BOOT_IDLE);
	HPU_CHECK_EQ(t, fi_injected(t, HPU_FAULT_RESET_FAIL), 2);
}

/* ---- warm reset ---- */

/* What a warm reset leaves: IDLE, registers as after a cold one, the context table zeroed. */
static void expect_warm_idle(struct hpu_test *t)
{
	unsigned int q;

	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_BOOT_STATUS), HPU_FW_BOOT_IDLE);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_IRQ_MASK), UINT32_MAX);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_IRQ_CAUSE), 0);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_EQ_RING_SIZE), 0);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_EQ_PI), 0);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_FW_HEARTBEAT), 0);
	for (q = 0; q < HPU_NUM_QUEUES; q++) {
		HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(q, RING_SIZE)), 0);
		HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(q, PI)), 0);
		HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(q, CI)), 0);
		HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(q, STATUS)), 0);
	}
	HPU_CHECK_EQ(t, bar4_rd(t, HPU_MMU_CTX_TABLE + ASID * 8), 0);
}

/* HBM survives a warm reset (page tables too, but the context table); a cold one zeroes it. */
static void case_warm_hbm(struct hpu_test *t)
{
	struct hpu_cb cb = { .len = 0 };
	uint64_t table;

	setup(t);
	fill_pattern(t->mem + SRC_OFF, BUF_SIZE, 11);
	cb_dma(&cb, VA_HBM, VA_HOST + SRC_OFF, BUF_SIZE, 0);
	submit_user(t, Q, &cb, 1);
	run(t);
	EXPECT_DONE(t, Q);
	table = bar4_rd(t, HPU_MMU_CTX_TABLE + ASID * 8);
	HPU_CHECK(t, table & HPU_PTE_PRESENT);
	hpu_wr(t, HPU_REG_RESET, HPU_RESET_KEY_WARM);
	expect_warm_idle(t);
	HPU_CHECK(t, bar4_rd(t, (table & HPU_PTE_ADDR_MASK) + HPU_MMU_INDEX(VA_HBM, 0) * 8) &
		     HPU_PTE_PRESENT);
	HPU_EXPECT_CLEAN(t);
	/* The driver boots and writes the context table again (setup() rebuilds the same tables). */
	setup(t);
	cb.len = 0;
	cb_dma(&cb, VA_HOST + DST_OFF, VA_HBM, BUF_SIZE, 0);
	submit_user(t, Q, &cb, 2);
	run(t);
	EXPECT_DONE(t, Q);
	HPU_CHECK(t, !memcmp(t->mem + DST_OFF, t->mem + SRC_OFF, BUF_SIZE));

	hpu_wr(t, HPU_REG_RESET, HPU_RESET_KEY);
	setup(t);
	memset(t->mem + DST_OFF, 0xff, BUF_SIZE);
	cb.len = 0;
	cb_dma(&cb, VA_HOST + DST_OFF, VA_HBM, BUF_SIZE, 0);
	submit_user(t, Q, &cb, 3);
	run(t);
	EXPECT_DONE(t, Q);
	HPU_CHECK_EQ(t, t->mem[DST_OFF], 0);
	HPU_CHECK_EQ(t, t->mem[DST_OFF + BUF_SIZE - 1], 0);
}

/*
 * A job parked on its WAIT is saved by a warm reset (SAVED_TAG), beside an entry a
 * PREEMPT made; after the boot both are pushed again with RESUME and end.
 */
static void case_warm_saved(struct hpu_test *t)
{
	static struct job waiter, held;
	unsigned int q;

	setup(t);
	park_waiter(t, Q, &held, 0, 1, 0x51);
	hpu_wr(t, REG_Q(Q, CTRL), HPU_Q_CTRL_PREEMPT);
	run(t);
	expect_event(t, HPU_EVENT_PREEMPTED, Q, ASID, HPU_ENGINE_QMAN, 0x51, 0, 0, __LINE__);
	park_waiter(t, Q, &waiter, 1, 0, 0x1234567890ull);

	hpu_wr(t, HPU_REG_RESET, HPU_RESET_KEY_WARM);
	expect_warm_idle(t);
	HPU_CHECK_EQ(t, saved_tag(t, Q), 0x1234567890ull);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(Q, PREEMPT_FREE)), HPU_Q_PREEMPT_SLOTS - 2);
	for (q = 0; q < HPU_NUM_QUEUES; q++)
		if (q != Q)
			HPU_CHECK_EQ(t, saved_tag(t, q), 0);
	HPU_EXPECT_CLEAN(t);

	setup(t);
	hdm_st_le32(t->mem + SYNC_OFF, 1);
	hdm_st_le32(t->mem + SYNC_OFF + 4, 1);
	push(t, Q, &waiter, HPU_QUEUE_DESC_RESUME);
	run(t);
	EXPECT_DONE(t, Q);
	HPU_CHECK_EQ(t, completion(t, Q), COMPLETION_VALUE + waiter.tag);
	push(t, Q, &held, HPU_QUEUE_DESC_RESUME);
	run(t);
	EXPECT_DONE(t, Q);
	HPU_CHECK_EQ(t, completion(t, Q), COMPLETION_VALUE + held.tag);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(Q, PREEMPT_FREE)), HPU_Q_PREEMPT_SLOTS);
	/* A cold reset drops them all, and clears SAVED_TAG. */
	push(t, Q, &waiter, 0);
	hdm_st_le32(t->mem + SYNC_OFF, 0);
	run(t);
	hpu_wr(t, HPU_REG_RESET, HPU_RESET_KEY_WARM);
	HPU_CHECK_EQ(t, saved_tag(t, Q), waiter.tag);
	hpu_wr(t, HPU_REG_RESET, HPU_RESET_KEY);
	HPU_CHECK_EQ(t, saved_tag(t, Q), 0);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(Q, PREEMPT_FREE)), HPU_Q_PREEMPT_SLOTS);
}

/*
 * PREEMPTs filled the queue's table (PREEMPT_FREE 0): a warm reset still saves the
 * started job, in the entry PREEMPTs leave it; then all five are resumed and end.
 */
static void case_warm_table_full(struct hpu_test *t)
{
	static struct job held[HPU_Q_PREEMPT_SLOTS], waiter;
	unsigned int i;

	setup(t);
	for (i = 0; i < HPU_Q_PREEMPT_SLOTS; i++) {
		park_waiter(t, Q, &held[i], 0, 1 + i, 0x70 + i);
		hpu_wr(t, REG_Q(Q, CTRL), HPU_Q_CTRL_PREEMPT);
		run(t);
		expect_event(t, HPU_EVENT_PREEMPTED, Q, ASID, HPU_ENGINE_QMAN, 0x70 + i, 0, 0,
			     __LINE__);
	}
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(Q, PREEMPT_FREE)), 0);
	park_waiter(t, Q, &waiter, 2, 0, 0x7f);
	/* PREEMPT has no entry for it... */
	hpu_wr(t, REG_Q(Q, CTRL), HPU_Q_CTRL_PREEMPT);
	HPU_EXPECT_ERROR(t, HPU_ERR_PREEMPT);
	/* ...the warm reset has. */
	hpu_wr(t, HPU_REG_RESET, HPU_RESET_KEY_WARM);
	expect_warm_idle(t);
	HPU_CHECK_EQ(t, saved_tag(t, Q), waiter.tag);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(Q, PREEMPT_FREE)), 0);
	HPU_EXPECT_CLEAN(t);

	setup(t);
	for (i = 0; i <= HPU_Q_PREEMPT_SLOTS; i++)
		hdm_st_le32(t->mem + SYNC_OFF + 4 * i, 1);
	push(t, Q, &waiter, HPU_QUEUE_DESC_RESUME);
	run(t);
	EXPECT_DONE(t, Q);
	HPU_CHECK_EQ(t, completion(t, Q), COMPLETION_VALUE + waiter.tag);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(Q, PREEMPT_FREE)), 0);
	for (i = 0; i < HPU_Q_PREEMPT_SLOTS; i++) {
		push(t, Q, &held[i], HPU_QUEUE_DESC_RESUME);
		run(t);
		EXPECT_DONE(t, Q);
		HPU_CHECK_EQ(t, completion(t, Q), COMPLETION_VALUE + held[i].tag);
	}
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(Q, PREEMPT_FREE)), HPU_Q_PREEMPT_SLOTS);
	HPU_EXPECT_CLEAN(t);
}

/* The job in the engine that cannot yield (hung) is dropped by a warm reset: no SAVED_TAG. */
static void case_warm_hung(struct hpu_test *t)
{
	struct engine e = { 0 };
	static struct job hung;

	setup(t);
	fi_arm(t, HPU_FAULT_ENGINE_HANG, 1, 0, ALWAYS, 0, ANY);
	job_nops(&hung, Q, 2, 0x60);
	engine_start(t, &e);
	push(t, Q, &hung, 0);
	WAIT_REG(t, HPU_REG_FI_INJECTED, 1);
	hpu_wr(t, HPU_REG_RESET, HPU_RESET_KEY_WARM);
	WAIT_REG(t, REG_Q(Q, STATUS), 0);
	expect_warm_idle(t);
	HPU_CHECK_EQ(t, saved_tag(t, Q), 0);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(Q, PREEMPT_FREE)), HPU_Q_PREEMPT_SLOTS);
	HPU_EXPECT_CLEAN(t);
	setup(t);
	push(t, Q, &hung, HPU_QUEUE_DESC_RESUME);
	WAIT_REG(t, REG_Q(Q, CI), 1);
	engine_end(t, &e);
	expect_event(t, HPU_EVENT_NOT_RESUMABLE, Q, ASID, HPU_ENGINE_QMAN, 0x60, 0, 1, __LINE__);
}

/* ---- a long job set aside by a warm reset, resumed: to the bit ---- */

#define GEMM_BATCH 8u
#define GEMM_DIM 64u
#define GEMM_ELEMS (GEMM_BATCH * GEMM_DIM * GEMM_DIM)
#define GEMM_BYTES (GEMM_ELEMS * 4u)
/* A and B in host pages, C in HBM: kept by the warm reset, with the GEMM's staged part. */
#define GEMM_A_OFF SRC_OFF
#define GEMM_B_OFF (SRC_OFF + GEMM_BYTES)
#define GEMM_C_VA VA_HBM
#define GEMM_OUT_OFF DST_OFF

/* C (A's first matrices) = A B + C over a batch of fp32 matrices, a step each; C copied out. */
static void job_gemm(struct hpu_test *t, struct job *job)
{
	struct hpu_pkt_mme_gemm p = {
		.header = HPU_PKT_HEADER(HPU_PKT_MME_GEMM, 0),
		.dtype_ab = HPU_DTYPE_F32, .dtype_c = HPU_DTYPE_F32, .batch = GEMM_BATCH,
		.m = GEMM_DIM, .n = GEMM_DIM, .k = GEMM_DIM,
		.a = VA_HOST + GEMM_A_OFF, .b = VA_HOST + GEMM_B_OFF, .c = GEMM_C_VA,
		.lda = GEMM_DIM, .ldb = GEMM_DIM, .ldc = GEMM_DIM,
		.stride_a = GEMM_DIM * GEMM_DIM, .stride_b = GEMM_DIM * GEMM_DIM,
		.stride_c = GEMM_DIM * GEMM_DIM, .alpha = 0x3f800000u, .beta = 0x3f800000u,
	};
	float *f = (float *)(t->mem + GEMM_A_OFF);
	unsigned int i;

	for (i = 0; i < 2 * GEMM_ELEMS; i++)
		f[i] = (float)((i * 7u) % 13u) * 0.37f - 2.0f;
	job->cb.len = 0;
	cb_dma(&job->cb, GEMM_C_VA, VA_HOST + GEMM_A_OFF, GEMM_BYTES, 0);
	memcpy(job->cb.b + job->cb.len, &p, sizeof(p));
	job->cb.len += sizeof(p);
	cb_dma(&job->cb, VA_HOST + GEMM_OUT_OFF, GEMM_C_VA, GEMM_BYTES, 0);
	job_seal(job, Q, 0x90);
	t->core->tpc.cpus = 1;
}

/* A copy of 3 MiB inside HBM, then out to the host: 48 DMA steps. */
static void job_copy(struct hpu_test *t, struct job *job)
{
	fill_pattern(t->mem + SRC_OFF, BUF_SIZE / 2, 21);
	job->cb.len = 0;
	cb_dma(&job->cb, VA_HBM, VA_HOST + SRC_OFF, BUF_SIZE / 2, 0);
	cb_dma(&job->cb, VA_HBM + BUF_SIZE / 2, VA_HBM, BUF_SIZE / 2, 0);
	cb_dma(&job->cb, VA_HOST + DST_OFF, VA_HBM + BUF_SIZE / 2, BUF_SIZE / 2, 0);
	job_seal(job, Q, 0x91);
}

/*
 * The hook, on every DMA of the engine: the long job on Q is made to yield at its
 * next yield point (a bystander on Q2 is ready), and each yield lets one bystander
 * run; in the bystander after the `yields`-th, the warm reset comes (from the
 * engine's thread: the bystander is the job in the engine, which it drops).
 */
static unsigned int warm_yields, warm_yields_want;
static uint64_t warm_step;
static bool warm_done;

static void warm_hook(struct hpu_test *t)
{
	struct hdm_qman *qman = &t->core->qman;

	if (warm_done || qman->current < 0)
		return;
	if ((unsigned int)qman->current == Q) {
		qman->queues[Q].job.yield_ns = 0;
		return;
	}
	/* The first DMA of a bystander's step, the long job parked behind it. */
	if (qman->step_ns == warm_step || !qman->queues[Q].parked)
		return;
	warm_step = qman->step_ns;
	if (++warm_yields < warm_yields_want)
		return;
	warm_done = true;
	hpu_wr(t, HPU_REG_RESET, HPU_RESET_KEY_WARM);
}

/* Bystanders on Q2, one per yield the long job makes. */
static void push_bystanders(struct hpu_test *t, unsigned int n)
{
	static struct job nop;

	while (n--) {
		job_nops(&nop, Q2, 1, 0xb0 + n);
		push(t, Q2, &nop, 0);
	}
}

static void test_warm_resume(struct hpu_test *t, void (*make)(struct hpu_test *t, struct job *job),
			     uint32_t out_off, uint32_t out_len, unsigned int yields)
{
	static struct job job;
	uint8_t *once = malloc(out_len);

	setup(t);
	make(t, &job);
	push(t, Q, &job, 0);
	run(t);
	EXPECT_DONE(t, Q);
	memcpy(once, t->mem + out_off, out_len);
	memset(t->mem + out_off, 0, out_len);
	memset(t->mem + COMPLETION_OFF(Q), 0, 8);

	warm_yields = 0;
	warm_step = 0;
	warm_yields_want = yields;
	warm_done = false;
	push(t, Q, &job, 0);
	push_bystanders(t, yields + 1);
	t->on_dma = warm_hook;
	run(t);
	t->on_dma = NULL;
	HPU_CHECK(t, warm_done);
	expect_warm_idle(t);
	HPU_CHECK_EQ(t, saved_tag(t, Q), job.tag);
	HPU_CHECK_EQ(t, saved_tag(t, Q2), 0);
	HPU_CHECK_EQ(t, completion(t, Q), 0);
	HPU_EXPECT_CLEAN(t);

	setup(t);
	push(t, Q, &job, HPU_QUEUE_DESC_RESUME);
	run(t);
	EXPECT_DONE(t, Q);
	HPU_CHECK_EQ(t, completion(t, Q), COMPLETION_VALUE + job.tag);
	HPU_CHECK(t, !memcmp(t->mem + out_off, once, out_len));
	HPU_CHECK_EQ(t, t->core->qman.held, 0);
	free(once);
}

static void case_warm_gemm(struct hpu_test *t)
{
	test_warm_resume(t, job_gemm, GEMM_OUT_OFF, GEMM_BYTES, 3);
}

static void case_warm_copy(struct hpu_test *t)
{
	test_warm_resume(t, job_copy, DST_OFF, BUF_SIZE / 2, 5);
}

/* ---- faults at a job's start ---- */

/* Jobs 0..n-1 of NOPs on Q in the context asids[i % 2], run one by one: which failed, by bit. */
static uint64_t run_jobs(struct hpu_test *t, unsigned int n, const uint32_t *asids,
			 uint32_t event)
{
	static struct job job;
	uint64_t failed = 0;
	unsigned int i;

	for (i = 0; i < n; i++) {
		uint32_t slot = hpu_rd(t, REG_Q(Q, PI));

		job_nops(&job, Q, 2, 0x100 + i);
		push(t, Q, &job, 0);
		/* The descriptor's ASID is the job's context. */
		hdm_st_le32(t->mem + Q_RING_OFF(Q) + (slot % Q_RING_ENTRIES) *
				     sizeof(struct hpu_queue_desc) +
				     offsetof(struct hpu_queue_desc, asid),
			    asids[i % 2]);
		run(t);
		if (hpu_rd(t, HPU_REG_EQ_PI) == hpu_rd(t, HPU_REG_EQ_CI)) {
			EXPECT_DONE(t, Q);
			HPU_CHECK_EQ(t, completion(t, Q), COMPLETION_VALUE + 0x100 + i);
			continue;
		}
		failed |= 1ull << i;
		/* As a real one: the event at the descriptor, the tail unrun. */
		expect_event(t, event, Q, asids[i % 2], HPU_ENGINE_QMAN, 0x100 + i,
			     slot_bus(Q, slot), 1, __LINE__);
		EXPECT_DONE(t, Q);
		HPU_CHECK(t, completion(t, Q) != COMPLETION_VALUE + 0x100 + i);
	}
	return failed;
}

static const uint32_t one_asid[2] = { ASID, ASID };

/* TIMES 2 after SKIP 3: jobs 3 and 4 fail, the others end. */
static void test_job_fault(struct hpu_test *t, uint32_t kind, uint32_t event)
{
	setup(t);
	fi_arm(t, kind, 2, 3, ALWAYS, 0, ANY);
	HPU_CHECK_EQ(t, run_jobs(t, 8, one_asid, event), 0x18);
	HPU_CHECK_EQ(t, fi_injected(t, kind), 2);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_FI_TIMES), 0);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_FI_SKIP), 0);
	/* Armed again: the next job fails; disarmed, none. */
	fi_arm(t, kind, 1, 0, ALWAYS, 0, ANY);
	HPU_CHECK_EQ(t, run_jobs(t, 2, one_asid, event), 1);
	fi_arm(t, kind, ALWAYS, 0, ALWAYS, 0, ANY);
	hpu_wr(t, HPU_REG_FI_CTRL, HPU_FI_CTRL_DISARM);
	HPU_CHECK_EQ(t, run_jobs(t, 3, one_asid, event), 0);
	HPU_CHECK_EQ(t, fi_injected(t, kind), 3);
}

static void case_mmu_fault(struct hpu_test *t)
{
	test_job_fault(t, HPU_FAULT_MMU_FAULT, HPU_EVENT_MMU_FAULT);
}

static void case_dma_error(struct hpu_test *t)
{
	test_job_fault(t, HPU_FAULT_DMA_ERROR, HPU_EVENT_DMA_ERROR);
}

/* The ASID filter: only context 7's jobs count (and fail), every other one of them. */
static void case_asid_filter(struct hpu_test *t)
{
	static const uint32_t asids[2] = { ASID, 7 };

	setup(t);
	fi_arm(t, HPU_FAULT_MMU_FAULT, 2, 1, ALWAYS, 0, 7);
	/* Context 7's jobs are 1, 3, 5, 7...: 1 is skipped, 3 and 5 fail. */
	HPU_CHECK_EQ(t, run_jobs(t, 10, asids, HPU_EVENT_MMU_FAULT), 0x28);
}

/* PROB 1/4 with a seed: the same seed fails the same jobs, another seed others. */
static void case_probability(struct hpu_test *t)
{
	const unsigned int n = 60;
	uint64_t a, b, c;

	setup(t);
	fi_arm(t, HPU_FAULT_DMA_ERROR, ALWAYS, 0, 0x40000000u, 1234, ANY);
	a = run_jobs(t, n, one_asid, HPU_EVENT_DMA_ERROR);
	fi_arm(t, HPU_FAULT_DMA_ERROR, ALWAYS, 0, 0x40000000u, 1234, ANY);
	b = run_jobs(t, n, one_asid, HPU_EVENT_DMA_ERROR);
	fi_arm(t, HPU_FAULT_DMA_ERROR, ALWAYS, 0, 0x40000000u, 99, ANY);
	c = run_jobs(t, n, one_asid, HPU_EVENT_DMA_ERROR);
	printf("# PROB 1/4 over %u jobs: seed 1234 failed %d, seed 99 %d\n", n,
	       __builtin_popcountll(a), __builtin_popcountll(c));
	HPU_CHECK_EQ(t, a, b);
	HPU_CHECK(t, a != c);
	HPU_CHECK(t, __builtin_popcountll(a) >= 5 && __builtin_popcountll(a) <= 25);
	HPU_CHECK_EQ(t, fi_injected(t, HPU_FAULT_DMA_ERROR),
		     2u * __builtin_popcountll(a) + __builtin_popcountll(c));
	/* PROB 0: never. */
	fi_arm(t, HPU_FAULT_DMA_ERROR, ALWAYS, 0, 0, 1234, ANY);
	HPU_CHECK_EQ(t, run_jobs(t, 20, one_asid, HPU_EVENT_DMA_ERROR), 0);
}

/* ---- interrupts, completions, boots ---- */

/*
 * LOST_IRQ: INTERRUPT packets' messages, the context's only; and, filtered "any",
 * the device's own vector, whose cause stays latched for the next message.
 */
static void case_lost_irq(struct hpu_test *t)
{
	struct hpu_cb cb = { .len = 0 };
	unsigned int i, misc;

	setup(t);
	fi_arm(t, HPU_FAULT_LOST_IRQ, 2, 1, ALWAYS, 0, ASID);
	for (i = 0; i < 5; i++) {
		cb.len = 0;
		cb_interrupt(&cb, 3);
		/* The driver's packet: privileged. */
		submit(t, Q, &cb, 0, ASID, i);
		run(t);
		EXPECT_DONE(t, Q);
	}
	HPU_CHECK_EQ(t, t->vector_irqs[3], 3);
	HPU_CHECK_EQ(t, fi_injected(t, HPU_FAULT_LOST_IRQ), 2);

	/* A failed job's event: its message is lost, the cause is not. */
	fi_arm(t, HPU_FAULT_LOST_IRQ, 1, 0, ALWAYS, 0, ANY);
	misc = t->vector_irqs[HPU_MSIX_VEC_MISC];
	cb.len = 0;
	cb_dma(&cb, VA_UNMAPPED, VA_HOST + SRC_OFF, 8, 0);
	submit_user(t, Q, &cb, 9);
	run(t);
	HPU_CHECK_EQ(t, t->vector_irqs[HPU_MSIX_VEC_MISC], misc);
	HPU_CHECK(t, hpu_rd(t, HPU_REG_IRQ_CAUSE) & HPU_IRQ_EVENT);
	/* Unmasking the cause again sends the next message. */
	hpu_wr(t, HPU_REG_IRQ_MASK, HPU_IRQ_EVENT);
	hpu_wr(t, HPU_REG_IRQ_MASK, 0);
	HPU_CHECK_EQ(t, t->vector_irqs[HPU_MSIX_VEC_MISC], misc + 1);
	expect_event(t, HPU_EVENT_MMU_FAULT, Q, ASID, DMA_ENGINE(Q), 9, VA_UNMAPPED, 1, __LINE__);
}

/* BAD_COMPLETION: the second job's completion is written inverted; the others as pushed. */
static void case_bad_completion(struct hpu_test *t)
{
	static struct job job;
	unsigned int i;

	setup(t);
	fi_arm(t, HPU_FAULT_BAD_COMPLETION, 1, 1, ALWAYS, 0, ANY);
	for (i = 0; i < 4; i++) {
		job_nops(&job, Q, 1, 0x200 + i);
		push(t, Q, &job, 0);
		run(t);
		EXPECT_DONE(t, Q);
		HPU_CHECK_EQ(t, completion(t, Q), i == 1 ? ~(COMPLETION_VALUE + 0x200 + i) :
							  COMPLETION_VALUE + 0x200 + i);
	}
	HPU_CHECK_EQ(t, fi_injected(t, HPU_FAULT_BAD_COMPLETION), 1);
}

/* BOOT_FAIL: TIMES 2 fail two boots (a warm reset keeps the setting), the third is READY. */
static void case_boot_fail(struct hpu_test *t)
{
	unsigned int i;

	fi_arm(t, HPU_FAULT_BOOT_FAIL, 2, 0, ALWAYS, 0, ANY);
	hpu_test_image_build(t, HPU_TEST_PAYLOAD_SIZE);
	for (i = 0; i < 2; i++) {
		hpu_test_boot(t, HPU_TEST_IMAGE_ADDR, HPU_TEST_IMAGE_SIZE);
		HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_BOOT_STATUS), HPU_FW_BOOT_FAILED);
		HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_BOOT_ERROR), HPU_FW_ERR_INJECTED);
		HPU_CHECK(t, hpu_rd(t, HPU_REG_IRQ_CAUSE) & HPU_IRQ_BOOT_DONE);
		hpu_wr(t, HPU_REG_RESET, HPU_RESET_KEY_WARM);
	}
	HPU_CHECK_EQ(t, t->logs, 2);
	t->logs_seen = t->logs;
	setup(t);
	HPU_CHECK_EQ(t, fi_injected(t, HPU_FAULT_BOOT_FAIL), 2);
	/* A cold reset disarms it. */
	hpu_wr(t, HPU_REG_FI_TIMES, 1);
	hpu_wr(t, HPU_REG_FI_CTRL, HPU_FI_CTRL_ARM);
	hpu_wr(t, HPU_REG_RESET, HPU_RESET_KEY);
	setup(t);
}

/* ---- properties ---- */

static void case_parse(struct hpu_test *t)
{
	static const struct {
		const char *spec;
		struct hdm_fault_settings want;
	} good[] = {
		{ "1", { 1, 0, ALWAYS, 0, ANY, true } },
		{ "inf", { HDM_FAULT_UNLIMITED, 0, ALWAYS, 0, ANY, true } },
		{ "3:2", { 3, 2, ALWAYS, 0, ANY, true } },
		{ "0x10:0:0.25:42", { 16, 0, 0x40000000u, 42, ANY, true } },
		{ "5:1:1073741824:7:9", { 5, 1, 0x40000000u, 7, 9, true } },
		{ "5:1:1.0:7:any", { 5, 1, ALWAYS, 7, ANY, true } },
		{ "4294967295:4294967295:0.0:4294967295:1023",
		  { UINT32_MAX, UINT32_MAX, 0, UINT32_MAX, 1023, true } },
		{ "", { 0 } },
	};
	static const char *const bad[] = {
		"0", "-1", "x", "1:", ":1", "1:2:3:4:5:6", "1:-2", "1:0:1.5", "1:0:-0.5",
		"1:0:0.5x", "1:0:1:2:1024", "1:0:1:2:anyone", "4294967296", "1 ", " 1",
		"1:0:4294967296", "1:0:1:0x100000000", "1::1", "1:0:.:1", "99999999999999999999999",
	};
	struct hdm_fault_settings got;
	char why[128];
	size_t i;

	for (i = 0; i < HPU_ARRAY_SIZE(good); i++) {
		why[0] = '\0';
		HPU_CHECK_EQ(t, hdm_fault_parse(good[i].spec, &got, why, sizeof(why)), 0);
		if (memcmp(&got, &good[i].want, sizeof(got))) {
			printf("# \"%s\" parsed as %u:%u:%u:%u:%u armed %d\n", good[i].spec,
			       got.times, got.skip, got.prob, got.seed, got.asid, got.armed);
			HPU_CHECK(t, false);
		}
	}
	HPU_CHECK_EQ(t, hdm_fault_parse(NULL, &got, why, sizeof(why)), 0);
	HPU_CHECK(t, !got.armed);
	for (i = 0; i < HPU_ARRAY_SIZE(bad); i++) {
		why[0] = '\0';
		HPU_CHECK_EQ(t, hdm_fault_parse(bad[i], &got, why, sizeof(why)), -EINVAL);
		HPU_CHECK(t, why[0] && !got.armed);
		if (i == 0)
			printf("# \"%s\": %s\n", bad[i], why);
	}
}

/* The properties arm at power-on; a cold reset disarms; the next power-on arms again. */
static void case_power_on(struct hpu_test *t)
{
	char why[64];

	HPU_CHECK_EQ(t, hdm_fault_parse("2:1:1.0:5", &t->core->cfg.faults[HPU_FAULT_MMU_FAULT],
					why, sizeof(why)), 0);
	HPU_CHECK_EQ(t, hdm_core_reset(t->core), 0);
	setup(t);
	hpu_wr(t, HPU_REG_FI_SELECT, HPU_FAULT_MMU_FAULT);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_FI_TIMES), 2);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_FI_SEED), 5);
	HPU_CHECK_EQ(t, run_jobs(t, 4, one_asid, HPU_EVENT_MMU_FAULT), 0x6);
	/* Armed again, then a cold reset: nothing fails. */
	fi_arm(t, HPU_FAULT_MMU_FAULT, 1, 0, ALWAYS, 0, ANY);
	hpu_wr(t, HPU_REG_RESET, HPU_RESET_KEY);
	setup(t);
	HPU_CHECK_EQ(t, run_jobs(t, 2, one_asid, HPU_EVENT_MMU_FAULT), 0);
	HPU_CHECK_EQ(t, fi_injected(t, HPU_FAULT_MMU_FAULT), 2);
	/* Power-on again: as the property says, nothing injected yet. */
	HPU_CHECK_EQ(t, hdm_core_reset(t->core), 0);
	HPU_CHECK_EQ(t, fi_injected(t, HPU_FAULT_MMU_FAULT), 0);
	setup(t);
	HPU_CHECK_EQ(t, run_jobs(t, 4, one_asid, HPU_EVENT_MMU_FAULT), 0x6);
}

/*
 * On the engine's thread, warm resets, and RESET | PREEMPTs of its queue, while the
 * engine is inside a long chain of copies (each reads what the one before wrote, a
 * byte further on).  The job in the engine reaches a yield point (for a warm reset
 * within its slice of the engine thread's CPU time, so a loaded host does not
 * change that) and is saved or set aside; resumed, it ends as the uninterrupted run
 * did.  The job's host accesses (its descriptor, command buffer, the steps of its
 * first and last copies) are where the resets come: at each, the engine waits there
 * until the reset is under way.  Resets at random times find the job saved, or
 * ended before: never dropped, nor aborted.
 */
#define CHAIN_LEN ((BUF_SIZE / 2) - 64)
#define CHAIN_COPIES 40u
#define CHAIN_RANDOM_RUNS 24u

static void job_chain(struct hpu_test *t, struct job *job)
{
	unsigned int i;

	fill_pattern(t->mem + SRC_OFF, CHAIN_LEN + 64, 5);
	job->cb.len = 0;
	cb_dma(&job->cb, VA_HBM, VA_HOST + SRC_OFF, CHAIN_LEN + 64, 0);
	for (i = 0; i < CHAIN_COPIES; i++) {
		cb_dma(&job->cb, VA_HBM + BUF_SIZE / 2, VA_HBM + 1, CHAIN_LEN, 0);
		cb_dma(&job->cb, VA_HBM, VA_HBM + BUF_SIZE / 2, CHAIN_LEN, 0);
	}
	cb_dma(&job->cb, VA_HOST + DST_OFF, VA_HBM, CHAIN_LEN, 0);
	job_seal(job, Q, 0x92);
}

/* The engine's host accesses; at the at-th it says so, with hold stays until the reset comes. */
static unsigned int chain_dmas, chain_at;
static bool chain_hold, chain_inside;

static void chain_hook(struct hpu_test *t)
{
	const struct timespec poll = { .tv_nsec = 20000 };
	uint64_t start = now_ns();

	if (++chain_dmas != chain_at)
		return;
	__atomic_store_n(&chain_inside, true, __ATOMIC_RELEASE);
	while (chain_hold && !__atomic_load_n(&t->core->qman.quiesce, __ATOMIC_RELAXED) &&
	       !__atomic_load_n(&t->core->qman.queues[Q].preempt, __ATOMIC_RELAXED) &&
	       now_ns() - start < WAIT_NS)
		nanosleep(&poll, NULL);
}

/* The next event's type (0: none) and tag, consumed: where the job stopped varies. */
static uint32_t next_event(struct hpu_test *t, uint64_t *tag)
{
	uint32_t ci = hpu_rd(t, HPU_REG_EQ_CI);
	const uint8_t *ev = t->mem + EQ_OFF + (ci % EQ_ENTRIES) * sizeof(struct hpu_event);
	uint32_t type;

	if (hpu_rd(t, HPU_REG_EQ_PI) == ci)
		return 0;
	type = hdm_ld_le32(ev + offsetof(struct hpu_event, type));
	*tag = hdm_ld_le64(ev + offsetof(struct hpu_event, tag));
	hpu_wr(t, HPU_REG_EQ_CI, ci + 1);
	hpu_wr(t, HPU_REG_IRQ_CAUSE, HPU_IRQ_EVENT);
	return type;
}

/* The chain in the engine met a warm reset: whether it was saved; if so, resumed after a boot. */
static bool chain_warm_saved(struct hpu_test *t, const struct job *job)
{
	WAIT_REG(t, REG_Q(Q, STATUS), 0);
	if (saved_tag(t, Q) != job->tag) {
		HPU_CHECK_EQ(t, saved_tag(t, Q), 0);
		setup(t);
		return false;
	}
	HPU_CHECK_EQ(t, completion(t, Q), 0);
	setup(t);
	push(t, Q, job, HPU_QUEUE_DESC_RESUME);
	return true;
}

/* The chain in the engine met RESET | PREEMPT: whether it was set aside; if so, resumed. */
static bool chain_set_aside(struct hpu_test *t, const struct job *job)
{
	uint32_t pi = hpu_rd(t, REG_Q(Q, PI)), type;
	uint64_t tag = 0;

	WAIT_REG(t, REG_Q(Q, CI), pi);
	WAIT_REG(t, REG_Q(Q, STATUS), 0);
	type = next_event(t, &tag);
	if (type != HPU_EVENT_PREEMPTED) {
		HPU_CHECK_EQ(t, type, 0);
		return false;
	}
	HPU_CHECK_EQ(t, tag, job->tag);
	HPU_CHECK_EQ(t, completion(t, Q), 0);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(Q, PREEMPT_FREE)), HPU_Q_PREEMPT_SLOTS - 1);
	push(t, Q, job, HPU_QUEUE_DESC_RESUME);
	return true;
}

/*
 * The chain again, on the engine's thread, the device READY: a warm reset (warm) or
 * RESET | PREEMPT of its queue at its at-th host access (hold) or delay_ns after its
 * descriptor's fetch.  Whether it was saved (else it must have ended first); either
 * way it ends as once, and the device is READY.
 */
static bool chain_reset(struct hpu_test *t, const struct job *job, const uint8_t *once,
			unsigned int at, bool hold, uint64_t delay_ns, bool warm)
{
	const struct timespec delay = { .tv_sec = (time_t)(delay_ns / 1000000000u),
					.tv_nsec = (long)(delay_ns % 1000000000u) };
	bool saved;

	memset(t->mem + DST_OFF, 0, CHAIN_LEN);
	memset(t->mem + COMPLETION_OFF(Q), 0, 8);
	chain_dmas = 0;
	chain_at = at;
	chain_hold = hold;
	__atomic_store_n(&chain_inside, false, __ATOMIC_RELAXED);
	push(t, Q, job, 0);
	HPU_CHECK(t, wait_flag(&chain_inside));
	nanosleep(&delay, NULL);
	if (warm)
		hpu_wr(t, HPU_REG_RESET, HPU_RESET_KEY_WARM);
	else
		hpu_wr(t, REG_Q(Q, CTRL), HPU_Q_CTRL_RESET | HPU_Q_CTRL_PREEMPT);
	saved = warm ? chain_warm_saved(t, job) : chain_set_aside(t, job);
	if (saved) {
		WAIT_REG(t, REG_Q(Q, CI), hpu_rd(t, REG_Q(Q, PI)));
		WAIT_REG(t, REG_Q(Q, STATUS), 0);
		EXPECT_DONE(t, Q);
		HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(Q, PREEMPT_FREE)), HPU_Q_PREEMPT_SLOTS);
	}
	HPU_CHECK(t, saved || !hold);
	HPU_CHECK_EQ(t, completion(t, Q), COMPLETION_VALUE + job->tag);
	HPU_CHECK(t, !memcmp(t->mem + DST_OFF, once, CHAIN_LEN));
	return saved;
}

/* The chain's reference run on this thread, then resets of it on the engine's. */
static void test_chain_resets(struct hpu_test *t, bool warm)
{
	static uint8_t once[CHAIN_LEN];
	unsigned int i, points, runs = 0, saved = 0;
	struct engine e = { 0 };
	static struct job job;
	uint64_t start, chain_ns, seed = 0x92;

	setup(t);
	job_chain(t, &job);
	chain_dmas = 0;
	chain_at = 0;
	t->on_dma = chain_hook;
	push(t, Q, &job, 0);
	start = now_ns();
	run(t);
	chain_ns = now_ns() - start;
	/* Its last host access is the completion's write, past its last yield point. */
	points = chain_dmas - 1;
	EXPECT_DONE(t, Q);
	printf("# the chain alone: %.1f ms, %u host accesses\n", chain_ns / 1e6, chain_dmas);
	memcpy(once, t->mem + DST_OFF, CHAIN_LEN);
	HPU_CHECK(t, memcmp(once, t->mem + SRC_OFF, CHAIN_LEN));

	engine_start(t, &e);
	for (i = 1; i <= points && !t->failed; i++)
		HPU_CHECK(t, chain_reset(t, &job, once, i, true, 0, warm));
	for (; runs < CHAIN_RANDOM_RUNS && !t->failed; runs++)
		saved += chain_reset(t, &job, once, 1, false, xorshift64s(&seed) % chain_ns, warm);
	printf("# %u resets at random times: %u saved, %u after the job ended\n", runs, saved,
	       runs - saved);
	engine_end(t, &e);
	t->on_dma = NULL;
}

static void case_warm_in_engine(struct hpu_test *t)
{
	test_chain_resets(t, true);
}

static void case_set_aside_in_engine(struct hpu_test *t)
{
	test_chain_resets(t, false);
}

/* ---- the list ---- */

static const struct hpu_test_case cases[] = {
	{ "heartbeat: 0 until READY, then a period each HPU_FW_HEARTBEAT_MS", case_heartbeat },
	{ "HEARTBEAT_LOSS: the heartbeat stands still until a reset", case_heartbeat_loss },
	{ "HEARTBEAT_LOSS with an ASID filter never fires", case_heartbeat_asid },
	{ "FI registers: settings per kind, hostile values refused", case_fi_registers },
	{ "ENGINE_HANG: no CPU burnt, ENGINE_RESET aborts it, the job behind runs", case_hang },
	{ "ENGINE_HANG: CTRL RESET cannot end it, ENGINE_RESET completes it", case_hang_ctrl_reset },
	{ "ENGINE_HANG: the engine still stops", case_hang_stop },
	{ "ENGINE_HANG: a cold reset ends it and disarms", case_hang_cold_reset },
	{ "ENGINE_RESET with no job in the engine, a parked job kept", case_engine_reset_idle },
	{ "ENGINE_RESET mid-copy: ABORTED if a reset is pending, else no-op",
	  case_engine_reset_copy },
	{ "ENGINE_RESET after its job left: the innocent job in the engine goes on",
	  case_engine_reset_late },
	{ "RESET_FAIL: ENGINE_RESET and warm RESET ignored once", case_reset_fail },
	{ "MMU_FAULT: jobs after SKIP fail TIMES times, as real faults do", case_mmu_fault },
	{ "DMA_ERROR: jobs after SKIP fail TIMES times, as real errors do", case_dma_error },
	{ "the ASID filter counts and fails one context's jobs only", case_asid_filter },
	{ "PROB with a seed: reproducible, another seed differs", case_probability },
	{ "LOST_IRQ: job and device vectors' messages lost, causes kept", case_lost_irq },
	{ "BAD_COMPLETION: a completion written inverted", case_bad_completion },
	{ "BOOT_FAIL: boots FAILED with HPU_FW_ERR_INJECTED", case_boot_fail },
	{ "properties' syntax: good and hostile values", case_parse },
	{ "properties arm at power-on, a cold reset disarms", case_power_on },
	{ "warm reset keeps HBM, zeroes the context table", case_warm_hbm },
	{ "warm reset saves a parked job beside a PREEMPTed one", case_warm_saved },
	{ "warm reset saves the started job with the table full", case_warm_table_full },
	{ "warm reset drops a hung job", case_warm_hung },
	{ "warm reset: a GEMM resumed ends to the bit", case_warm_gemm },
	{ "warm reset: a copy through HBM resumed ends to the bit", case_warm_copy },
	{ "warm resets of the job in the engine: saved at a yield point, resumed to the bit",
	  case_warm_in_engine },
	{ "RESET|PREEMPT of the job in the engine: set aside at a yield point, resumed to the bit",
	  case_set_aside_in_engine },
};

int main(void)
{
	return hpu_run_suite(cases, HPU_ARRAY_SIZE(cases));
}
