// SPDX-License-Identifier: MIT
/*
 * Device-core tests of preemption (1.6): a kernel queue's job set aside by
 * Q_CTRL PREEMPT at a yield point, the queue going on with the next job,
 * and the job pushed again with HPU_QUEUE_DESC_RESUME going on where it
 * stopped; RESET | PREEMPT, which sets the job aside and drops the rest; the
 * table of set-aside jobs, its limits and its resets.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hdm_internal.h"
#include "hdm_harness.h"
#include "hdm_mme.h"
#include "hdm_tpc.h"

#define Q 1u
#define COPY_SIZE BUF_SIZE
#define MME_ENGINE(q) (HPU_ENGINE_MME + (q) % hpu_test_cfg.num_mme)
#define NOT_RESUMABLE_LOGS 1 /* the failed job */

/* A kernel queue's job as the driver keeps it, to push it again byte for byte. */
struct job {
	struct hpu_cb cb;
	uint32_t priv; /* the driver's tail (a completion) starts here */
	uint64_t tag;
};

/* The user's packets in job->cb, then the driver's tail. */
static void job_seal(struct job *job, uint64_t tag)
{
	job->tag = tag;
	job->priv = job->cb.len;
	cb_completion(&job->cb, BUS(COMPLETION_OFF(Q)), COMPLETION_VALUE + tag);
}

static void push(struct hpu_test *t, const struct job *job, uint32_t flags)
{
	submit_flags(t, Q, &job->cb, job->priv, ASID, flags, job->tag);
}

static uint32_t free_entries(struct hpu_test *t)
{
	return hpu_rd(t, REG_Q(Q, PREEMPT_FREE));
}

/* A job that parks on a WAIT of sync object 0 (until it is 1), at offset 0. */
static void job_wait(struct job *job, uint64_t tag)
{
	job->cb.len = 0;
	cb_sync(&job->cb, HPU_PKT_WAIT, SYNC_VA(0), 1);
	job_seal(job, tag);
}

/* Queue the job, then set it aside where it parks: PREEMPTED at its WAIT. */
static void preempt_waiting(struct hpu_test *t, const struct job *job)
{
	push(t, job, 0);
	run(t);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(Q, STATUS)), HPU_Q_STATUS_WAITING);
	hpu_wr(t, REG_Q(Q, CTRL), HPU_Q_CTRL_PREEMPT);
	run(t);
	expect_event(t, HPU_EVENT_PREEMPTED, Q, ASID, HPU_ENGINE_QMAN, job->tag, 0, 0, __LINE__);
	EXPECT_DONE(t, Q);
}

/* A device with one job (tag 0x40, at a WAIT of sync object 0) set aside. */
static void setup_held(struct hpu_test *t, struct job *held)
{
	setup(t);
	job_wait(held, 0x40);
	preempt_waiting(t, held);
}

/* Sync object 0 set, the job set aside at its WAIT is pushed again: it ends. */
static void resume_waiting(struct hpu_test *t, const struct job *job)
{
	hdm_st_le32(t->mem + SYNC_OFF, 1);
	push(t, job, HPU_QUEUE_DESC_RESUME);
	run(t);
	EXPECT_DONE(t, Q);
	HPU_CHECK_EQ(t, completion(t, Q), COMPLETION_VALUE + job->tag);
	HPU_CHECK_EQ(t, free_entries(t), HPU_Q_PREEMPT_SLOTS);
}

/* Another file's job, queued behind the preempted one. */
static void push_bystander(struct hpu_test *t)
{
	static struct job nop;

	nop.cb.len = 0;
	cb_nop(&nop.cb);
	job_seal(&nop, 0xb0);
	push(t, &nop, 0);
}

/* The bystander runs to its completion. */
static void bystander(struct hpu_test *t)
{
	push_bystander(t);
	run(t);
	EXPECT_DONE(t, Q);
	HPU_CHECK_EQ(t, completion(t, Q), COMPLETION_VALUE + 0xb0);
}

/* ---- a copy ---- */

/* A copy of COPY_SIZE bytes, tag 1: many steps. */
static void job_copy(struct hpu_test *t, struct job *copy)
{
	fill_pattern(t->mem + SRC_OFF, COPY_SIZE, 3);
	copy->cb.len = 0;
	cb_dma(&copy->cb, VA_HOST + DST_OFF, VA_HOST + SRC_OFF, COPY_SIZE, 0);
	job_seal(copy, 1);
}

/* Inside the copy's first steps, write CTRL. */
#define COPY_HOOK_DMA 40

static void case_copy(struct hpu_test *t)
{
	static struct job copy;
	unsigned int copied = 0, i, reads;

	setup(t);
	job_copy(t, &copy);
	push(t, &copy, 0);
	hook_at(t, COPY_HOOK_DMA, REG_Q(Q, CTRL), HPU_Q_CTRL_PREEMPT);
	run(t);
	expect_event(t, HPU_EVENT_PREEMPTED, Q, ASID, DMA_ENGINE(Q), 1, 0, 0, __LINE__);
	EXPECT_DONE(t, Q);
	HPU_CHECK_EQ(t, free_entries(t), HPU_Q_PREEMPT_SLOTS - 1);
	HPU_CHECK(t, completion(t, Q) != COMPLETION_VALUE + 1);
	for (i = 0; i < COPY_SIZE; i++)
		copied += t->mem[DST_OFF + i] == t->mem[SRC_OFF + i];
	HPU_CHECK(t, copied > 0 && copied < COPY_SIZE);

	bystander(t);

	t->dma_reads = 0;
	push(t, &copy, HPU_QUEUE_DESC_RESUME);
	run(t);
	EXPECT_DONE(t, Q);
	HPU_CHECK_EQ(t, completion(t, Q), COMPLETION_VALUE + 1);
	HPU_CHECK(t, !memcmp(t->mem + DST_OFF, t->mem + SRC_OFF, COPY_SIZE));
	HPU_CHECK_EQ(t, free_entries(t), HPU_Q_PREEMPT_SLOTS);
	/* It went on: not every page of the source was read again. */
	reads = t->dma_reads;
	t->dma_reads = 0;
	push(t, &copy, 0);
	run(t);
	EXPECT_DONE(t, Q);
	printf("# resumed copy: %u DMA reads, whole copy %u\n", reads, t->dma_reads);
	HPU_CHECK(t, reads < t->dma_reads);
}

/* ---- a CALL ---- */

#define CALLEE_OFF DST_OFF

/* Parked on a WAIT inside a callee, set aside there: resumed, the callee goes on at the WAIT. */
static void case_call(struct hpu_test *t)
{
	struct hpu_cb callee = { .len = 0 };
	static struct job job;

	setup(t);
	cb_sync(&callee, HPU_PKT_SIGNAL, SYNC_VA(1), 1);
	cb_sync(&callee, HPU_PKT_WAIT, SYNC_VA(0), 1);
	cb_sync(&callee, HPU_PKT_SIGNAL, SYNC_VA(2), 1);
	memcpy(t->mem + CALLEE_OFF, callee.b, callee.len);
	cb_nop(&job.cb);
	cb_u32(&job.cb, HPU_PKT_HEADER(HPU_PKT_CALL, 0));
	cb_u32(&job.cb, 0);
	cb_u64(&job.cb, VA_HOST + CALLEE_OFF);
	cb_u64(&job.cb, callee.len);
	cb_sync(&job.cb, HPU_PKT_SIGNAL, SYNC_VA(3), 1);
	job_seal(&job, 6);
	push(t, &job, 0);
	run(t);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(Q, STATUS)), HPU_Q_STATUS_WAITING);
	hpu_wr(t, REG_Q(Q, CTRL), HPU_Q_CTRL_PREEMPT);
	run(t);
	/* At the CALL, after the NOP. */
	expect_event(t, HPU_EVENT_PREEMPTED, Q, ASID, HPU_ENGINE_QMAN, 6, 8, 0, __LINE__);
	EXPECT_DONE(t, Q);

	bystander(t);
	hdm_st_le32(t->mem + SYNC_OFF, 1);
	push(t, &job, HPU_QUEUE_DESC_RESUME);
	run(t);
	EXPECT_DONE(t, Q);
	HPU_CHECK_EQ(t, completion(t, Q), COMPLETION_VALUE + 6);
	/* The callee's SIGNAL before the WAIT ran once. */
	HPU_CHECK_EQ(t, sync_value(t, 1), 1);
	HPU_CHECK_EQ(t, sync_value(t, 2), 1);
	HPU_CHECK_EQ(t, sync_value(t, 3), 1);
}

/* ---- a GEMM, staged ---- */

#define GEMM_BATCH 4u
#define GEMM_DIM 64u
#define GEMM_ELEMS (GEMM_BATCH * GEMM_DIM * GEMM_DIM)
#define GEMM_BYTES (GEMM_ELEMS * 4u)
/* A, B and C in host pages: every operand is staged, C's buffer held as the GEMM yields. */
#define GEMM_A_OFF SRC_OFF
#define GEMM_B_OFF (SRC_OFF + GEMM_BYTES)
#define GEMM_C_OFF DST_OFF

/* C = A B + C over a batch of 64 x 64 fp32 matrices, a step each (hdm_mme_plan()). */
static void job_gemm(struct hpu_test *t, struct job *job, uint64_t tag)
{
	struct hpu_pkt_mme_gemm p = {
		.header = HPU_PKT_HEADER(HPU_PKT_MME_GEMM, 0),
		.dtype_ab = HPU_DTYPE_F32, .dtype_c = HPU_DTYPE_F32, .batch = GEMM_BATCH,
		.m = GEMM_DIM, .n = GEMM_DIM, .k = GEMM_DIM,
		.a = VA_HOST + GEMM_A_OFF, .b = VA_HOST + GEMM_B_OFF, .c = VA_HOST + GEMM_C_OFF,
		.lda = GEMM_DIM, .ldb = GEMM_DIM, .ldc = GEMM_DIM,
		.stride_a = GEMM_DIM * GEMM_DIM, .stride_b = GEMM_DIM * GEMM_DIM,
		.stride_c = GEMM_DIM * GEMM_DIM, .alpha = 0x3f800000u, .beta = 0x3f800000u,
	};
	struct hdm_mme_plan plan;
	float *f = (float *)(t->mem + GEMM_A_OFF);
	unsigned int i;

	HPU_CHECK(t, !hdm_mme_plan(&plan, GEMM_BATCH, GEMM_DIM, GEMM_DIM, GEMM_DIM, 1) &&
		     plan.steps == GEMM_BATCH);
	for (i = 0; i < 3 * GEMM_ELEMS; i++)
		f[i] = (float)((i * 7u) % 13u) * 0.37f - 2.0f;
	job->cb.len = 0;
	memcpy(job->cb.b, &p, sizeof(p));
	job->cb.len = sizeof(p);
	job_seal(job, tag);
	t->core->tpc.cpus = 1;
}

/* C as the GEMM left it, compared with an uninterrupted run's. */
static bool c_is(struct hpu_test *t, const uint8_t *want)
{
	return !memcmp(t->mem + GEMM_C_OFF, want, GEMM_BYTES);
}

/* The GEMM at C0 (C's start), set aside after its first step, its staged C held. */
static void preempt_gemm(struct hpu_test *t, const struct job *gemm, const uint8_t *c0)
{
	memcpy(t->mem + GEMM_C_OFF, c0, GEMM_BYTES);
	push(t, gemm, 0);
	/* While it gathers A: the first DMAs after the descriptor and command buffer. */
	hook_at(t, 3, REG_Q(Q, CTRL), HPU_Q_CTRL_PREEMPT);
	run(t);
	expect_event(t, HPU_EVENT_PREEMPTED, Q, ASID, MME_ENGINE(Q), gemm->tag, 0, 0, __LINE__);
	EXPECT_DONE(t, Q);
	HPU_CHECK(t, t->core->qman.held >= GEMM_BYTES);
	/* Its staged output is not written back while it is set aside. */
	HPU_CHECK(t, c_is(t, c0));
}

/* A device with the GEMM: C's start in c0, C after one uninterrupted run in once. */
static void setup_gemm(struct hpu_test *t, struct job *gemm, uint64_t tag, uint8_t *c0,
		       uint8_t *once)
{
	setup(t);
	job_gemm(t, gemm, tag);
	memcpy(c0, t->mem + GEMM_C_OFF, GEMM_BYTES);
	push(t, gemm, 0);
	run(t);
	EXPECT_DONE(t, Q);
	memcpy(once, t->mem + GEMM_C_OFF, GEMM_BYTES);
	HPU_CHECK(t, !c_is(t, c0));
}

/* The set-aside GEMM pushed again ends as the uninterrupted run did, to the bit. */
static void resume_gemm(struct hpu_test *t, const struct job *gemm, const uint8_t *once)
{
	push(t, gemm, HPU_QUEUE_DESC_RESUME);
	run(t);
	EXPECT_DONE(t, Q);
	HPU_CHECK_EQ(t, completion(t, Q), COMPLETION_VALUE + gemm->tag);
	HPU_CHECK(t, c_is(t, once));
	HPU_CHECK_EQ(t, t->core->qman.held, 0);
	HPU_CHECK_EQ(t, free_entries(t), HPU_Q_PREEMPT_SLOTS);
}

static void case_gemm(struct hpu_test *t)
{
	static uint8_t c0[GEMM_BYTES], once[GEMM_BYTES];
	static struct job gemm;

	setup_gemm(t, &gemm, 2, c0, once);
	preempt_gemm(t, &gemm, c0);
	bystander(t);
	resume_gemm(t, &gemm, once);
}

/* A queue reset ends the queued jobs, not the set-aside ones: their entries stay. */
static void case_gemm_reset(struct hpu_test *t)
{
	static uint8_t c0[GEMM_BYTES], once[GEMM_BYTES];
	static struct job gemm;
	struct job head;

	setup_gemm(t, &gemm, 3, c0, once);
	preempt_gemm(t, &gemm, c0);
	/* A job parked at its WAIT, and the GEMM's RESUME behind it, which the reset drops unread. */
	job_wait(&head, 0x41);
	push(t, &head, 0);
	run(t);
	push(t, &gemm, HPU_QUEUE_DESC_RESUME);
	hpu_wr(t, REG_Q(Q, CTRL), HPU_Q_CTRL_RESET);
	run(t);
	expect_event(t, HPU_EVENT_ABORTED, Q, ASID, HPU_ENGINE_QMAN, 0x41, 0, 1, __LINE__);
	EXPECT_DONE(t, Q);
	HPU_CHECK_EQ(t, free_entries(t), HPU_Q_PREEMPT_SLOTS - 1);
	HPU_CHECK(t, t->core->qman.held >= GEMM_BYTES);
	HPU_CHECK(t, c_is(t, c0));
	resume_gemm(t, &gemm, once);
}

/* A device reset drops every queue's entries; the core's end frees those left (ASan). */
static void case_device_reset(struct hpu_test *t)
{
	static uint8_t c0[GEMM_BYTES];
	static struct job gemm;

	setup(t);
	job_gemm(t, &gemm, 4);
	memcpy(c0, t->mem + GEMM_C_OFF, GEMM_BYTES);
	preempt_gemm(t, &gemm, c0);
	hpu_wr(t, HPU_REG_RESET, HPU_RESET_KEY);
	HPU_CHECK_EQ(t, free_entries(t), HPU_Q_PREEMPT_SLOTS);
	run(t);
	/* The held C is freed, unwritten. */
	HPU_CHECK_EQ(t, t->core->qman.held, 0);
	HPU_CHECK(t, c_is(t, c0));
	setup(t);
	preempt_gemm(t, &gemm, c0);
}

/* ---- a TPC launch with a scratch ---- */

#define PARAMS_OFF SRC_OFF
#define TENTH_OFF (SYNC_OFF + 0x400u)

/*
 * A SUM of 2^26 copies of 0.1 (a broadcast dim) into one output: items of a
 * chunk each, their partials in the launch's scratch, joined at its end.
 */
static void job_reduce(struct hpu_test *t, struct job *job)
{
	const uint64_t shape[1] = { 1ull << 26 }, one[1] = { 1 };
	struct launch l = launch_new(HPU_KERNEL_REDUCE, 2);
	const float tenth = 0.1f;

	memcpy(t->mem + TENTH_OFF, &tenth, sizeof(tenth));
	l.t[0] = desc(VA_HBM, HPU_DTYPE_F32, 1, one, 0);
	l.t[1] = desc(VA_HOST + TENTH_OFF, HPU_DTYPE_F32, 1, shape, 1);
	l.p.args[0] = HPU_REDUCE_SUM;
	l.p.args[1] = 1;
	memcpy(t->mem + PARAMS_OFF, &l, launch_size(&l));
	job->cb.len = 0;
	cb_launch(&job->cb, VA_HOST + PARAMS_OFF, launch_size(&l));
	cb_dma(&job->cb, VA_HOST + DST_OFF, VA_HBM, sizeof(float), 0);
	job_seal(job, 7);
}

static void case_launch(struct hpu_test *t)
{
	static struct job reduce;
	float once, resumed;

	setup(t);
	job_reduce(t, &reduce);
	push(t, &reduce, 0);
	run(t);
	EXPECT_DONE(t, Q);
	memcpy(&once, t->mem + DST_OFF, sizeof(once));
	memset(t->mem + DST_OFF, 0, sizeof(once));

	push(t, &reduce, 0);
	/* As the engine reads the parameter block, after the descriptor and command buffer. */
	hook_at(t, 3, REG_Q(Q, CTRL), HPU_Q_CTRL_PREEMPT);
	run(t);
	expect_event(t, HPU_EVENT_PREEMPTED, Q, ASID, HPU_ENGINE_TPC, 7, 0, 0, __LINE__);
	/* Between two parts: some done, their partials in the scratch it keeps. */
	HPU_CHECK(t, t->core->qman.queues[Q].saved[0] && t->core->qman.queues[Q].saved[0]->moved &&
		     t->core->qman.queues[Q].saved[0]->scratch);
	bystander(t);
	push(t, &reduce, HPU_QUEUE_DESC_RESUME);
	run(t);
	EXPECT_DONE(t, Q);
	memcpy(&resumed, t->mem + DST_OFF, sizeof(resumed));
	printf("# SUM of 2^26 x 0.1: %a, resumed %a\n", once, resumed);
	HPU_CHECK(t, !memcmp(&resumed, &once, sizeof(once)));
}

/* ---- on the engine's thread ---- */

/* 4 GiB of VA over one 2 MiB page of HBM: a fill of seconds' worth of steps. */
#define VA_ALIAS 0x400000000ull
#define ALIASES 2048u
/* Loose bounds for a loaded host: a DMA step takes microseconds, a NOP less. */
#define PREEMPT_WAIT_NS 500000000ull

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Wait (60 s at most) until the queue's CI reads ci; the nanoseconds it took. */
static uint64_t wait_ci(struct hpu_test *t, uint32_t ci)
{
	const struct timespec tick = { .tv_nsec = 100000 };
	uint64_t start = now_ns();

	while (hpu_rd(t, REG_Q(Q, CI)) != ci && now_ns() - start < 60000000000ull)
		nanosleep(&tick, NULL);
	return now_ns() - start;
}

/* What the driver would do for a job queued behind a long one: set it aside, resume it after. */
static void case_threaded(struct hpu_test *t)
{
	const struct timespec settle = { .tv_nsec = 20000000 };
	static struct job fill;
	uint64_t set_aside, behind, resumed;
	unsigned int i, wrong = 0;
	pthread_t engine;

	setup(t);
	for (i = 0; i < ALIASES; i++)
		pt_map_page(t, ASID, VA_ALIAS + (uint64_t)i * HPU_MMU_HUGE_SIZE, HBM_BUF,
			    PTE_RW | HPU_PTE_HUGE);
	cb_dma(&fill.cb, VA_ALIAS, 0x5a, (uint64_t)ALIASES * HPU_MMU_HUGE_SIZE,
	       HPU_PKT_LIN_DMA_MEMSET);
	cb_dma(&fill.cb, VA_HOST + DST_OFF, VA_HBM, HPU_MMU_HUGE_SIZE, 0);
	job_seal(&fill, 5);
	push(t, &fill, 0);
	if (pthread_create(&engine, NULL, engine_thread, t->core)) {
		HPU_CHECK(t, false);
		return;
	}
	nanosleep(&settle, NULL);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(Q, STATUS)), HPU_Q_STATUS_BUSY | HPU_Q_STATUS_ENGINE);
	hpu_wr(t, REG_Q(Q, CTRL), HPU_Q_CTRL_PREEMPT);
	set_aside = wait_ci(t, 1);
	push_bystander(t);
	behind = wait_ci(t, 2);
	push(t, &fill, HPU_QUEUE_DESC_RESUME);
	resumed = wait_ci(t, 3);
	hdm_core_engine_stop(t->core);
	pthread_join(engine, NULL);
	printf("# set aside %.2f ms after PREEMPT; the next job ended %.2f ms after its push; "
	       "the fill's rest took %.0f ms\n", set_aside / 1e6, behind / 1e6, resumed / 1e6);
	HPU_CHECK(t, set_aside < PREEMPT_WAIT_NS && behind < PREEMPT_WAIT_NS);
	HPU_CHECK(t, resumed > behind);
	expect_event(t, HPU_EVENT_PREEMPTED, Q, ASID, DMA_ENGINE(Q), 5, 0, 0, __LINE__);
	EXPECT_DONE(t, Q);
	HPU_CHECK_EQ(t, completion(t, Q), COMPLETION_VALUE + 5);
	for (i = 0; i < HPU_MMU_HUGE_SIZE; i++)
		wrong += t->mem[DST_OFF + i] != 0x5a;
	HPU_CHECK_EQ(t, wrong, 0);
}

/* ---- the table and its refusals ---- */

/* A device whose table is full, with one more job (tag 0x14) parked at its WAIT. */
static void setup_full(struct hpu_test *t, struct job *jobs)
{
	unsigned int i;

	setup(t);
	for (i = 0; i < HPU_Q_PREEMPT_SLOTS; i++) {
		job_wait(&jobs[i], 0x10 + i);
		preempt_waiting(t, &jobs[i]);
		HPU_CHECK_EQ(t, free_entries(t), HPU_Q_PREEMPT_SLOTS - 1 - i);
	}
	job_wait(&jobs[i], 0x10 + i);
	push(t, &jobs[i], 0);
	run(t);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(Q, STATUS)), HPU_Q_STATUS_WAITING);
}

static void case_table_full(struct hpu_test *t)
{
	struct job jobs[HPU_Q_PREEMPT_SLOTS + 1];

	setup_full(t, jobs);
	hpu_wr(t, REG_Q(Q, CTRL), HPU_Q_CTRL_PREEMPT);
	HPU_EXPECT_ERROR(t, HPU_ERR_PREEMPT);
	run(t);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(Q, STATUS)), HPU_Q_STATUS_WAITING);

	/* Satisfied, the last job ends; a set-aside one goes on at its WAIT and ends too. */
	hdm_st_le32(t->mem + SYNC_OFF, 1);
	push(t, &jobs[1], HPU_QUEUE_DESC_RESUME);
	run(t);
	EXPECT_DONE(t, Q);
	HPU_CHECK_EQ(t, completion(t, Q), COMPLETION_VALUE + 0x11);
	HPU_CHECK_EQ(t, free_entries(t), 1);
	/* The other three stay for the core's end to free. */
}

static void case_refusals(struct hpu_test *t)
{
	struct job a, b;

	setup(t);
	/* No job at the head. */
	hpu_wr(t, REG_Q(Q, CTRL), HPU_Q_CTRL_PREEMPT);
	HPU_EXPECT_ERROR(t, HPU_ERR_PREEMPT);
	/* User queues have no table. */
	hpu_wr(t, HPU_REG_UQ(0, HPU_UQ_CTRL), HPU_Q_CTRL_PREEMPT);
	HPU_EXPECT_ERROR(t, HPU_ERR_BAD_CTRL);

	/* A RESUME of a tag never set aside fails, having run nothing. */
	job_wait(&a, 0x20);
	hdm_st_le32(t->mem + SYNC_OFF, 1);
	push(t, &a, HPU_QUEUE_DESC_RESUME);
	run(t);
	expect_event(t, HPU_EVENT_NOT_RESUMABLE, Q, ASID, HPU_ENGINE_QMAN, 0x20, 0,
		     NOT_RESUMABLE_LOGS, __LINE__);
	HPU_CHECK(t, completion(t, Q) != COMPLETION_VALUE + 0x20);
	hdm_st_le32(t->mem + SYNC_OFF, 0);

	/* PREEMPT twice: one entry. */
	push(t, &a, 0);
	run(t);
	hpu_wr(t, REG_Q(Q, CTRL), HPU_Q_CTRL_PREEMPT);
	hpu_wr(t, REG_Q(Q, CTRL), HPU_Q_CTRL_PREEMPT);
	HPU_EXPECT_CLEAN(t);
	run(t);
	expect_event(t, HPU_EVENT_PREEMPTED, Q, ASID, HPU_ENGINE_QMAN, 0x20, 0, 0, __LINE__);
	EXPECT_DONE(t, Q);
	HPU_CHECK_EQ(t, free_entries(t), HPU_Q_PREEMPT_SLOTS - 1);

	/* A second job of that tag is not set aside: it stays parked. */
	job_wait(&b, 0x20);
	push(t, &b, 0);
	run(t);
	hpu_wr(t, REG_Q(Q, CTRL), HPU_Q_CTRL_PREEMPT);
	HPU_EXPECT_CLEAN(t);
	run(t);
	HPU_EXPECT_ERROR(t, HPU_ERR_PREEMPT);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(Q, STATUS)), HPU_Q_STATUS_WAITING);
	HPU_CHECK_EQ(t, free_entries(t), HPU_Q_PREEMPT_SLOTS - 1);
	hdm_st_le32(t->mem + SYNC_OFF, 1);
	hpu_wr(t, REG_Q(Q, PI), hpu_rd(t, REG_Q(Q, PI)));
	run(t);
	EXPECT_DONE(t, Q);

	/* A RESUME of that tag with another command buffer (of its size) fails; the entry goes. */
	b.cb.len = 0;
	cb_sync(&b.cb, HPU_PKT_WAIT, SYNC_VA(1), 1);
	job_seal(&b, 0x20);
	push(t, &b, HPU_QUEUE_DESC_RESUME);
	run(t);
	expect_event(t, HPU_EVENT_NOT_RESUMABLE, Q, ASID, HPU_ENGINE_QMAN, 0x20, 0,
		     NOT_RESUMABLE_LOGS, __LINE__);
	HPU_CHECK_EQ(t, free_entries(t), HPU_Q_PREEMPT_SLOTS);
	push(t, &a, HPU_QUEUE_DESC_RESUME);
	run(t);
	expect_event(t, HPU_EVENT_NOT_RESUMABLE, Q, ASID, HPU_ENGINE_QMAN, 0x20, 0,
		     NOT_RESUMABLE_LOGS, __LINE__);
	EXPECT_DONE(t, Q);
}

/* ---- RESET | PREEMPT: the head set aside, the rest dropped ---- */

#define RESET_PREEMPT (HPU_Q_CTRL_RESET | HPU_Q_CTRL_PREEMPT)
#define SIGNALS 2u

/* Queue SIGNALS jobs behind the head, job i setting sync object 1 + i. */
static void push_signals(struct hpu_test *t, struct job *sig)
{
	unsigned int i;

	for (i = 0; i < SIGNALS; i++) {
		sig[i].cb.len = 0;
		cb_sync(&sig[i].cb, HPU_PKT_SIGNAL, SYNC_VA(1 + i), 1);
		job_seal(&sig[i], 0x30 + i);
		push(t, &sig[i], 0);
	}
}

/* The jobs push_signals() queued ran (1) or never did (0). */
static void expect_signals(struct hpu_test *t, uint32_t ran, int line)
{
	unsigned int i;

	for (i = 0; i < SIGNALS; i++)
		hpu_check_eq(t, sync_value(t, 1 + i), ran, "the signal job's sync object", line);
}

/* A long copy with jobs queued behind it: it is set aside, they are dropped, none aborted. */
static void case_rp_copy(struct hpu_test *t)
{
	static struct job copy;
	struct job sig[SIGNALS];
	unsigned int i;

	setup(t);
	job_copy(t, &copy);
	push(t, &copy, 0);
	push_signals(t, sig);
	hook_at(t, COPY_HOOK_DMA, REG_Q(Q, CTRL), RESET_PREEMPT);
	run(t);
	HPU_CHECK_EQ(t, hpu_hook_countdown, 0);
	expect_event(t, HPU_EVENT_PREEMPTED, Q, ASID, DMA_ENGINE(Q), 1, 0, 0, __LINE__);
	EXPECT_DONE(t, Q);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(Q, CI)), 1 + SIGNALS);
	HPU_CHECK_EQ(t, free_entries(t), HPU_Q_PREEMPT_SLOTS - 1);
	HPU_CHECK_EQ(t, completion(t, Q), 0);
	expect_signals(t, 0, __LINE__);
	HPU_CHECK(t, memcmp(t->mem + DST_OFF, t->mem + SRC_OFF, COPY_SIZE));

	/* The driver pushes them again in their order: all end as they would have. */
	push(t, &copy, HPU_QUEUE_DESC_RESUME);
	for (i = 0; i < SIGNALS; i++)
		push(t, &sig[i], 0);
	run(t);
	EXPECT_DONE(t, Q);
	HPU_CHECK(t, !memcmp(t->mem + DST_OFF, t->mem + SRC_OFF, COPY_SIZE));
	expect_signals(t, 1, __LINE__);
	HPU_CHECK_EQ(t, completion(t, Q), COMPLETION_VALUE + sig[SIGNALS - 1].tag);
	HPU_CHECK_EQ(t, free_entries(t), HPU_Q_PREEMPT_SLOTS);
}

/* No job started: a reset, at once, and the entries of jobs set aside before stay. */
static void case_rp_unstarted(struct hpu_test *t)
{
	struct job held, sig[SIGNALS];

	setup_held(t, &held);
	push_signals(t, sig);
	hpu_wr(t, REG_Q(Q, CTRL), RESET_PREEMPT);
	EXPECT_DONE(t, Q);
	run(t);
	EXPECT_DONE(t, Q);
	expect_signals(t, 0, __LINE__);
	HPU_CHECK_EQ(t, free_entries(t), HPU_Q_PREEMPT_SLOTS - 1);
	resume_waiting(t, &held);
}

/* No free entry: a reset, the head aborted, and a guest error. */
static void case_rp_full(struct hpu_test *t)
{
	struct job jobs[HPU_Q_PREEMPT_SLOTS + 1], sig[SIGNALS];

	setup_full(t, jobs);
	push_signals(t, sig);
	hpu_wr(t, REG_Q(Q, CTRL), RESET_PREEMPT);
	HPU_EXPECT_ERROR(t, HPU_ERR_PREEMPT);
	run(t);
	expect_event(t, HPU_EVENT_ABORTED, Q, ASID, HPU_ENGINE_QMAN, 0x14, 0, 1, __LINE__);
	EXPECT_DONE(t, Q);
	expect_signals(t, 0, __LINE__);
	HPU_CHECK_EQ(t, free_entries(t), 0);
}

/*
 * CTRL = value as the head's last packet, its completion, runs: no yield point is left, it
 * ends as usual; the jobs behind it run after it (PREEMPT) or are dropped (RESET | PREEMPT).
 */
static void preempt_completing(struct hpu_test *t, uint32_t value)
{
	struct job held, last, sig[SIGNALS];

	setup_held(t, &held);
	last.cb.len = 0;
	job_seal(&last, 0x41);
	push(t, &last, 0);
	push_signals(t, sig);
	/* Its descriptor, its command buffer, then the completion's write. */
	hook_at(t, 3, REG_Q(Q, CTRL), value);
	run(t);
	HPU_CHECK_EQ(t, hpu_hook_countdown, 0);
	EXPECT_DONE(t, Q);
	if (value == HPU_Q_CTRL_PREEMPT) {
		expect_signals(t, 1, __LINE__);
		HPU_CHECK_EQ(t, completion(t, Q), COMPLETION_VALUE + sig[SIGNALS - 1].tag);
	} else {
		expect_signals(t, 0, __LINE__);
		HPU_CHECK_EQ(t, completion(t, Q), COMPLETION_VALUE + 0x41);
	}
	HPU_CHECK_EQ(t, free_entries(t), HPU_Q_PREEMPT_SLOTS - 1);
	resume_waiting(t, &held);
}

static void case_completes(struct hpu_test *t)
{
	preempt_completing(t, HPU_Q_CTRL_PREEMPT);
}

static void case_rp_completes(struct hpu_test *t)
{
	preempt_completing(t, RESET_PREEMPT);
}

/* A plain RESET before the set-aside wins: the head is aborted. */
static void case_rp_then_reset(struct hpu_test *t)
{
	struct job held, head, sig[SIGNALS];

	setup_held(t, &held);
	job_wait(&head, 0x41);
	push(t, &head, 0);
	run(t);
	push_signals(t, sig);
	hpu_wr(t, REG_Q(Q, CTRL), RESET_PREEMPT);
	hpu_wr(t, REG_Q(Q, CTRL), HPU_Q_CTRL_RESET);
	run(t);
	expect_event(t, HPU_EVENT_ABORTED, Q, ASID, HPU_ENGINE_QMAN, 0x41, 0, 1, __LINE__);
	EXPECT_DONE(t, Q);
	expect_signals(t, 0, __LINE__);
	HPU_CHECK_EQ(t, free_entries(t), HPU_Q_PREEMPT_SLOTS - 1);
	resume_waiting(t, &held);
}

static const struct hpu_test_case cases[] = {
	{ "a copy set aside mid-packet goes on where it stopped", case_copy },
	{ "a job parked in a callee, set aside, goes on at the callee's WAIT", case_call },
	{ "a staged GEMM set aside between steps ends as one run does, to the bit", case_gemm },
	{ "a queue reset leaves set-aside jobs; a GEMM resumed after one ends to the bit",
	  case_gemm_reset },
	{ "a device reset drops every set-aside job", case_device_reset },
	{ "a reduction set aside between parts keeps its scratch, sums to the bit", case_launch },
	{ "on the engine's thread: a long fill set aside at once, resumed", case_threaded },
	{ "a full table refuses PREEMPT; an entry is resumed at its WAIT", case_table_full },
	{ "PREEMPT and RESUME refusals", case_refusals },
	{ "PREEMPT as a job's last packet runs: it completes, not set aside", case_completes },
	{ "RESET|PREEMPT: a long copy set aside, the jobs behind it dropped unrun", case_rp_copy },
	{ "RESET|PREEMPT with no job started: a reset, set-aside jobs kept", case_rp_unstarted },
	{ "RESET|PREEMPT with the table full: the head aborted, a guest error", case_rp_full },
	{ "RESET|PREEMPT as the head's last packet runs: it completes, the rest dropped",
	  case_rp_completes },
	{ "RESET|PREEMPT, then RESET before the set-aside: the head aborted", case_rp_then_reset },
};

int main(void)
{
	return hpu_run_suite(cases, HPU_ARRAY_SIZE(cases));
}
