/* SPDX-License-Identifier: MIT */
/*
 * Host unit test of the CALL packet: a command buffer in the context's
 * memory (one run of HBM, 2 MiB pages of scattered HBM, host pages) run in
 * place through the MMU a window at a time; every user packet kind in it; a
 * WAIT stalling inside it and resuming; queue and device resets; each
 * refusal with its event type and address.  Callees are uploaded as a
 * runtime would: staged in host memory and copied by a LIN_DMA job.  The
 * engine runs synchronously, so every case is deterministic.  Prints TAP.
 */
#include <stdio.h>
#include <string.h>

#include "hdm_harness.h"

/* Packets are built as their uapi structs: the host is little-endian, as packets are. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "packets are little-endian");

/* Memory besides setup()'s; *_OFF are offsets in guest memory, at VA_HOST + offset. */
#define STAGE_OFF SRC_OFF               /* callees on their way to device memory */
#define IN_OFF (SRC_OFF + (2u << 20))   /* recipe inputs */
#define OUT_OFF (DST_OFF + (2u << 20))  /* recipe outputs */
#define HOST_CALLEE_OFF DST_OFF         /* a callee run from host pages */
#define USABLE_OFF (DST_OFF + (1u << 20)) /* the callee showing a queue still works */
#define PARAM_OFF 0xd00000u             /* the recipe's parameter block, one host page */
#define VA_PARAM (VA_HOST + PARAM_OFF)
#define VA_DATA VA_HBM                  /* recipe tensors, in one run of HBM */
#define VA_CALLEE (VA_HBM + (2u << 20)) /* callees in one run of HBM, 1 MiB */
#define VA_HBM_END (VA_HBM + BUF_SIZE)
#define VA_SCAT 0x400000000ull          /* 2 MiB pages of HBM out of order */
#define HBM_SCAT (22ull << 30)
#define SCAT_PAGES 4u
#define VA_SCAT_END (VA_SCAT + SCAT_PAGES * HPU_MMU_HUGE_SIZE)
#define VA_BIG 0x500000000ull           /* HPU_CALL_MAX_SIZE of untouched HBM: NOPs */
#define HBM_BIG (24ull << 30)
#define VA_BAD_HOST 0x600000000ull      /* a host page outside guest memory */
#define BAD_BUS (HPU_TEST_MEM_BASE + HPU_TEST_MEM_SIZE)
#define VA_TOO_HIGH (1ull << HPU_MMU_VA_BITS)
#define TS_OFF (SYNC_OFF + 0x400u)

#define AFTER 7 /* the sync object the caller signals after its CALL */
#define LO(x) ((uint32_t)(x))
#define HI(x) ((uint32_t)((uint64_t)(x) >> 32))
#define HDR(op, flags) HPU_PKT_HEADER(HPU_PKT_##op, flags)
#define F32 HPU_DTYPE_F32
#define ONE_F32 0x3f800000u

static void map_call(struct hpu_test *t)
{
	static const unsigned int order[SCAT_PAGES] = { 2, 0, 3, 1 };
	unsigned int i;

	setup(t);
	for (i = 0; i < SCAT_PAGES; i++)
		pt_map_page(t, ASID, VA_SCAT + i * HPU_MMU_HUGE_SIZE,
			    HBM_SCAT + order[i] * HPU_MMU_HUGE_SIZE, PTE_RW | HPU_PTE_HUGE);
	for (i = 0; i < HPU_CALL_MAX_SIZE / HPU_MMU_HUGE_SIZE; i++)
		pt_map_page(t, ASID, VA_BIG + i * HPU_MMU_HUGE_SIZE,
			    HBM_BIG + i * HPU_MMU_HUGE_SIZE, PTE_RW | HPU_PTE_HUGE);
	pt_map_host(t, ASID, PARAM_OFF, HPU_MMU_PAGE_SIZE);
	pt_map_page(t, ASID, VA_BAD_HOST, BAD_BUS, PTE_HOST_RW);
}

/* ---- command buffers ---- */

static void put(struct hpu_cb *cb, const void *pkt, uint32_t len)
{
	memcpy(cb->b + cb->len, pkt, len);
	cb->len += len;
}

/* Append a packet: its uapi struct, with the fields after the header given. */
#define PKT(cb, type, op, flags, ...)                                                      \
	put(cb, &(struct hpu_pkt_##type){ .header = HDR(op, flags), __VA_ARGS__ },         \
	    sizeof(struct hpu_pkt_##type))

static void cb_signal(struct hpu_cb *cb, unsigned int sync, uint32_t value)
{
	PKT(cb, signal, SIGNAL, 0, .value = value, .addr = SYNC_VA(sync));
}

static void cb_wait(struct hpu_cb *cb, unsigned int sync, uint32_t value)
{
	PKT(cb, wait, WAIT, 0, .value = value, .addr = SYNC_VA(sync));
}

static void cb_call(struct hpu_cb *cb, uint64_t addr, uint64_t size)
{
	PKT(cb, call, CALL, 0, .addr = addr, .size = size);
}

/* A NOP, the CALL, a SIGNAL of sync AFTER and the driver's tail: the job most cases run. */
static void submit_call(struct hpu_test *t, unsigned int q, uint64_t addr, uint64_t size,
			uint64_t tag)
{
	struct hpu_cb cb = { .len = 0 };

	cb_nop(&cb);
	cb_call(&cb, addr, size);
	cb_signal(&cb, AFTER, 1);
	submit_user(t, q, &cb, tag);
}

/* Append cb's packets to the callee staged so far (*len bytes), emptying cb. */
static void stage(struct hpu_test *t, struct hpu_cb *cb, uint32_t *len)
{
	memcpy(t->mem + STAGE_OFF + *len, cb->b, cb->len);
	*len += cb->len;
	cb->len = 0;
}

/* Copy the len bytes staged to va with a job on queue 3, as a runtime uploads a recipe. */
static void upload(struct hpu_test *t, uint64_t va, uint32_t len)
{
	struct hpu_cb cb = { .len = 0 };

	cb_dma(&cb, va, VA_HOST + STAGE_OFF, len, 0);
	submit_user(t, 3, &cb, 0x100);
	run(t);
	EXPECT_DONE(t, 3);
}

/* Stage cb alone and upload it to va. */
static void upload_cb(struct hpu_test *t, uint64_t va, struct hpu_cb *cb)
{
	uint32_t len = 0;

	stage(t, cb, &len);
	upload(t, va, len);
}

/* ---- a recipe: inputs in, D = relu(A @ B) on the MME and a TPC, D out ---- */

#define M 4u
#define N 6u
#define K 8u
#define A_VA VA_DATA
#define B_VA (VA_DATA + 0x1000)
#define C_VA (VA_DATA + 0x2000)
#define D_VA (VA_DATA + 0x3000)
#define IN_A_OFF IN_OFF
#define IN_B_OFF (IN_OFF + 0x1000)

struct relu_params {
	struct hpu_kernel_params p;
	struct hpu_tensor_desc t[2];
};

static struct hpu_tensor_desc matrix(uint64_t va, uint64_t rows, uint64_t cols)
{
	return (struct hpu_tensor_desc){
		.addr = va, .dtype = F32, .ndim = 2,
		.shape = { rows, cols, 1, 1, 1, 1 }, .strides = { (int64_t)cols, 1 },
	};
}

/* Small integers, so every product and sum is exact in fp32. */
static void recipe_inputs(struct hpu_test *t, unsigned int seed)
{
	float *a = (float *)(t->mem + IN_A_OFF), *b = (float *)(t->mem + IN_B_OFF);
	const struct relu_params params = {
		.p = { .version = HPU_KERNEL_PARAMS_VERSION, .kernel = HPU_KERNEL_UNARY,
		       .num_tensors = 2, .args = { HPU_UNARY_RELU } },
		.t = { matrix(D_VA, M, N), matrix(C_VA, M, N) },
	};
	unsigned int i;

	for (i = 0; i < M * K; i++)
		a[i] = (float)((int)((i + seed) * 7 % 9) - 4);
	for (i = 0; i < K * N; i++)
		b[i] = (float)((int)((i * 5 + seed) % 7) - 3);
	memcpy(t->mem + PARAM_OFF, &params, sizeof(params));
}

static void cb_gemm(struct hpu_cb *cb, uint32_t k)
{
	PKT(cb, mme_gemm, MME_GEMM, 0, .dtype_ab = F32, .dtype_c = F32, .batch = 1, .m = M,
	    .n = N, .k = k, .a = A_VA, .b = B_VA, .c = C_VA, .lda = K, .ldb = N, .ldc = N,
	    .alpha = ONE_F32);
}

static void cb_relu(struct hpu_cb *cb)
{
	PKT(cb, tpc_launch, TPC_LAUNCH, 0, .params_size = sizeof(struct relu_params),
	    .params = VA_PARAM);
}

static void cb_recipe_in(struct hpu_cb *cb)
{
	cb_dma(cb, A_VA, VA_HOST + IN_A_OFF, M * K * sizeof(float), 0);
	cb_dma(cb, B_VA, VA_HOST + IN_B_OFF, K * N * sizeof(float), 0);
}

static void cb_recipe_out(struct hpu_cb *cb)
{
	cb_dma(cb, VA_HOST + OUT_OFF, D_VA, M * N * sizeof(float), 0);
}

/* The output at off is relu(A @ B) of the inputs in host memory. */
static void expect_recipe(struct hpu_test *t, uint32_t off, int line)
{
	const float *a = (float *)(t->mem + IN_A_OFF), *b = (float *)(t->mem + IN_B_OFF);
	const float *d = (float *)(t->mem + off);
	unsigned int i, j, p, bad = 0;

	for (i = 0; i < M; i++) {
		for (j = 0; j < N; j++) {
			float s = 0;

			for (p = 0; p < K; p++)
				s += a[i * K + p] * b[p * N + j];
			bad += d[i * N + j] != (s > 0 ? s : 0);
		}
	}
	hpu_check_eq(t, bad, 0, "recipe outputs off", line);
}

/* ---- the cases ---- */

/* Every user packet kind in a callee in HBM; the same job run again on new inputs. */
static void case_recipe(struct hpu_test *t)
{
	struct hpu_cb callee = { .len = 0 }, cb = { .len = 0 };
	uint32_t size;
	unsigned int run_no;

	map_call(t);
	cb_nop(&callee);
	cb_wait(&callee, 0, 0);
	PKT(&callee, lin_dma, LIN_DMA, HPU_PKT_LIN_DMA_MEMSET, .src = 0xff, .dst = D_VA,
	    .size = M * N * sizeof(float));
	cb_recipe_in(&callee);
	cb_gemm(&callee, K);
	cb_relu(&callee);
	cb_recipe_out(&callee);
	PKT(&callee, timestamp, TIMESTAMP, 0, .addr = VA_HOST + TS_OFF);
	cb_signal(&callee, 1, 1);
	size = callee.len;
	upload_cb(t, VA_CALLEE, &callee);

	/* What follows the CALL sees what the callee did: it runs after. */
	cb_call(&cb, VA_CALLEE, size);
	cb_dma(&cb, VA_HOST + OUT_OFF + 0x1000, VA_HOST + OUT_OFF, M * N * sizeof(float), 0);
	for (run_no = 1; run_no <= 2; run_no++) {
		struct hpu_cb job = cb;

		recipe_inputs(t, run_no);
		submit_user(t, 1, &job, run_no);
		run(t);
		EXPECT_DONE(t, 1);
		HPU_CHECK_EQ(t, completion(t, 1), COMPLETION_VALUE + run_no);
		expect_recipe(t, OUT_OFF, __LINE__);
		expect_recipe(t, OUT_OFF + 0x1000, __LINE__);
		HPU_CHECK_EQ(t, sync_value(t, 1), run_no);
		HPU_CHECK(t, hdm_ld_le64(t->mem + TS_OFF) != 0);
	}
}

/* A callee in host pages; two CALLs of it in one job. */
static void case_host_callee(struct hpu_test *t)
{
	struct hpu_cb callee = { .len = 0 }, cb = { .len = 0 };

	map_call(t);
	cb_signal(&callee, 1, 1);
	cb_dma(&callee, VA_HOST + OUT_OFF, VA_HOST + IN_OFF, 64, 0);
	memcpy(t->mem + HOST_CALLEE_OFF, callee.b, callee.len);
	fill_pattern(t->mem + IN_OFF, 64, 3);
	cb_call(&cb, VA_HOST + HOST_CALLEE_OFF, callee.len);
	cb_call(&cb, VA_HOST + HOST_CALLEE_OFF, callee.len);
	submit_user(t, 2, &cb, 1);
	run(t);
	EXPECT_DONE(t, 2);
	HPU_CHECK_EQ(t, sync_value(t, 1), 2);
	HPU_CHECK(t, !memcmp(t->mem + OUT_OFF, t->mem + IN_OFF, 64));
}

/*
 * Six windows of packets of every size, across a boundary between 2 MiB
 * pages that are not consecutive in HBM: packets straddle the windows'
 * ends wherever they fall, and each runs once.
 */
static void case_scattered_windows(struct hpu_test *t)
{
	const uint64_t va = VA_SCAT + HPU_MMU_HUGE_SIZE - 5 * HDM_CALL_WINDOW / 2;
	struct hpu_cb cb = { .len = 0 };
	uint32_t len = 0, want[4] = { 0 }, i;
	uint64_t rng = 1;

	map_call(t);
	while (len + cb.len < 6 * HDM_CALL_WINDOW) {
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		switch (rng >> 62) {
		case 0:
			cb_nop(&cb);
			break;
		case 1:
			i = rng >> 40 & 3;
			cb_signal(&cb, i, 1);
			want[i]++;
			break;
		case 2:
			cb_dma(&cb, VA_HOST + OUT_OFF, VA_HOST + IN_OFF, 8, 0);
			break;
		default:
			cb_gemm(&cb, K);
			break;
		}
		if (cb.len > sizeof(cb.b) / 2)
			stage(t, &cb, &len);
	}
	stage(t, &cb, &len);
	upload(t, va, len);
	submit_call(t, 1, va, len, 1);
	run(t);
	EXPECT_DONE(t, 1);
	for (i = 0; i < 4; i++)
		HPU_CHECK_EQ(t, sync_value(t, i), want[i]);
	HPU_CHECK_EQ(t, sync_value(t, AFTER), 1);
}

/*
 * A GEMM across the end of the first window and a launch across the end of
 * the second, which starts at the GEMM: each is fetched whole, and computes.
 */
static void case_window_boundary(struct hpu_test *t)
{
	const uint32_t gemm_at = HDM_CALL_WINDOW - 48, launch_at = gemm_at + HDM_CALL_WINDOW - 8;
	struct hpu_cb cb = { .len = 0 };
	uint32_t len;

	map_call(t);
	recipe_inputs(t, 5);
	memset(t->mem + STAGE_OFF, 0, launch_at); /* NOPs */
	cb_recipe_in(&cb);
	memcpy(t->mem + STAGE_OFF, cb.b, cb.len);
	cb.len = 0;
	cb_gemm(&cb, K);
	memcpy(t->mem + STAGE_OFF + gemm_at, cb.b, cb.len);
	len = launch_at;
	cb.len = 0;
	cb_relu(&cb);
	cb_recipe_out(&cb);
	cb_signal(&cb, 1, 1);
	stage(t, &cb, &len);
	upload(t, VA_CALLEE, len);
	submit_call(t, 0, VA_CALLEE, len, 1);
	run(t);
	EXPECT_DONE(t, 0);
	expect_recipe(t, OUT_OFF, __LINE__);
	HPU_CHECK_EQ(t, sync_value(t, 1), 1);
}

/* The smallest callee, and the largest: 64 MiB of NOPs ending in a SIGNAL. */
static void case_sizes(struct hpu_test *t)
{
	struct hpu_cb cb = { .len = 0 };

	map_call(t);
	submit_call(t, 0, VA_CALLEE, 8, 1);
	run(t);
	EXPECT_DONE(t, 0);
	HPU_CHECK_EQ(t, sync_value(t, AFTER), 1);

	cb_signal(&cb, 1, 1);
	upload_cb(t, VA_BIG + HPU_CALL_MAX_SIZE - 16, &cb);
	submit_call(t, 0, VA_BIG, HPU_CALL_MAX_SIZE, 2);
	run(t);
	EXPECT_DONE(t, 0);
	HPU_CHECK_EQ(t, sync_value(t, 1), 1);
	HPU_CHECK_EQ(t, sync_value(t, AFTER), 2);
}

/* SIGNAL 1, WAIT for sync 0, SIGNAL 2 (by value): the callee the waiting cases run. */
static uint32_t upload_waiting_callee(struct hpu_test *t, uint32_t value)
{
	struct hpu_cb cb = { .len = 0 };
	uint32_t len;

	cb_signal(&cb, 1, 1);
	cb_wait(&cb, 0, 1);
	cb_signal(&cb, 2, value);
	len = cb.len;
	upload_cb(t, VA_CALLEE, &cb);
	return len;
}

/* Job tag 1 on q, parked on the WAIT of the waiting callee; returns the callee's size. */
static uint32_t park_in_callee(struct hpu_test *t, unsigned int q)
{
	uint32_t len;

	map_call(t);
	len = upload_waiting_callee(t, 1);
	submit_call(t, q, VA_CALLEE, len, 1);
	run(t);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(q, STATUS)), HPU_Q_STATUS_WAITING);
	HPU_CHECK_EQ(t, sync_value(t, 1), 1);
	return len;
}

/* q ended its jobs, the last having run the waiting callee once more, its SIGNAL adding sync2. */
static void expect_callee_ran(struct hpu_test *t, unsigned int q, uint32_t sync1, uint32_t sync2,
			      int line)
{
	expect_done(t, q, line);
	hpu_check_eq(t, sync_value(t, 1), sync1, "SIGNALs before the WAIT", line);
	hpu_check_eq(t, sync_value(t, 2), sync2, "SIGNALs after the WAIT", line);
	hpu_check_eq(t, sync_value(t, AFTER), 1, "SIGNALs after the CALL", line);
}

/*
 * A WAIT in a callee parks the queue; a SIGNAL from another queue resumes
 * it at that WAIT, fetching anew: what was written meanwhile is what runs.
 */
static void case_wait_in_callee(struct hpu_test *t)
{
	struct hpu_cb cb = { .len = 0 };

	park_in_callee(t, 1);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(1, CI)), 0);
	HPU_CHECK_EQ(t, sync_value(t, 2), 0);
	upload_waiting_callee(t, 5);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(1, STATUS)), HPU_Q_STATUS_WAITING);

	cb_signal(&cb, 0, 1);
	submit_user(t, 0, &cb, 2);
	run(t);
	EXPECT_DONE(t, 0);
	HPU_CHECK_EQ(t, completion(t, 1), COMPLETION_VALUE + 1);
	expect_callee_ran(t, 1, 1, 5, __LINE__);
}

/*
 * A queue reset of a job waiting in a callee: ABORTED at the CALL, and
 * ABORT_IN_CALL names the WAIT in the callee; the next CALL starts over,
 * and ends with ABORT_IN_CALL 0.
 */
static void case_reset_waiting_in_callee(struct hpu_test *t)
{
	struct hpu_cb cb = { .len = 0 };
	uint32_t len = park_in_callee(t, 1);

	cb_signal(&cb, 3, 1);
	submit_user(t, 1, &cb, 2);
	hpu_wr(t, REG_Q(1, CTRL), HPU_Q_CTRL_RESET);
	run(t);
	/* The queued job is dropped with the waiting one. */
	EXPECT_EVENT(t, HPU_EVENT_ABORTED, 1, ASID, HPU_ENGINE_QMAN, 1, 8);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(1, CI)), 2);
	HPU_CHECK_EQ(t, sync_value(t, 3) + sync_value(t, AFTER), 0);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(1, ABORT_IN_CALL)),
		     HPU_Q_IN_CALL_PARKED | sizeof(struct hpu_pkt_signal));

	hdm_st_le32(t->mem + SYNC_OFF, 1);
	submit_call(t, 1, VA_CALLEE, len, 3);
	run(t);
	expect_callee_ran(t, 1, 2, 1, __LINE__);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(1, ABORT_IN_CALL)), 0);
}

/*
 * A job parked in a callee that a SIGNAL let go on, then reset while it
 * runs on: it is not where it parked, so ABORT_IN_CALL says 0.
 */
static void reset_after_the_wait(struct hpu_test *t)
{
	if (sync_value(t, 2) < 1)
		return;
	t->on_dma = NULL;
	hpu_wr(t, REG_Q(1, CTRL), HPU_Q_CTRL_RESET);
}

static void case_reset_past_the_wait_in_callee(struct hpu_test *t)
{
	struct hpu_cb cb = { .len = 0 }, callee = { .len = 0 };
	unsigned int i;
	uint32_t len;

	map_call(t);
	cb_signal(&callee, 1, 1);
	cb_wait(&callee, 0, 1);
	for (i = 0; i < 64; i++)
		cb_signal(&callee, 2, 1);
	len = callee.len;
	upload_cb(t, VA_CALLEE, &callee);
	submit_call(t, 1, VA_CALLEE, len, 1);
	run(t);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(1, STATUS)), HPU_Q_STATUS_WAITING);
	hdm_st_le32(t->mem + SYNC_OFF, 1);
	cb_signal(&cb, 3, 1);
	submit_user(t, 0, &cb, 2);
	t->on_dma = reset_after_the_wait;
	run(t);
	EXPECT_EVENT(t, HPU_EVENT_ABORTED, 1, ASID, HPU_ENGINE_QMAN, 1, 8);
	HPU_CHECK(t, sync_value(t, 2) >= 1 && sync_value(t, 2) < 64);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(1, ABORT_IN_CALL)), 0);
}

/* A device reset of a job waiting in a callee: the next job is a new one. */
static void case_device_reset_in_callee(struct hpu_test *t)
{
	struct hpu_cb cb = { .len = 0 };

	park_in_callee(t, 2);
	hpu_wr(t, HPU_REG_RESET, HPU_RESET_KEY);
	run(t);
	HPU_EXPECT_CLEAN(t);

	map_call(t);
	cb_signal(&cb, 3, 1);
	submit_user(t, 2, &cb, 2);
	run(t);
	EXPECT_DONE(t, 2);
	HPU_CHECK_EQ(t, sync_value(t, 3), 1);
	HPU_CHECK_EQ(t, completion(t, 2), COMPLETION_VALUE + 2);
}

/* Reset queue 1 once its callee's SIGNALs have brought sync 1 to 3. */
static void reset_at_third_signal(struct hpu_test *t)
{
	if (sync_value(t, 1) == 3)
		hpu_wr(t, REG_Q(1, CTRL), HPU_Q_CTRL_RESET);
}

/* A queue reset while a callee runs ends it between two of its packets. */
static void case_reset_running_callee(struct hpu_test *t)
{
	struct hpu_cb cb = { .len = 0 };
	unsigned int i;

	map_call(t);
	for (i = 0; i < 64; i++)
		cb_signal(&cb, 1, 1);
	upload_cb(t, VA_CALLEE, &cb);
	submit_call(t, 1, VA_CALLEE, 64 * sizeof(struct hpu_pkt_signal), 1);
	t->on_dma = reset_at_third_signal;
	run(t);
	t->on_dma = NULL;
	EXPECT_EVENT(t, HPU_EVENT_ABORTED, 1, ASID, HPU_ENGINE_QMAN, 1, 8);
	EXPECT_DONE(t, 1);
	/* The fourth SIGNAL was under way when the reset came. */
	HPU_CHECK_EQ(t, sync_value(t, 1), 4);
	HPU_CHECK_EQ(t, sync_value(t, AFTER), 0);
	HPU_CHECK_EQ(t, completion(t, 1), 0);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(1, ABORT_IN_CALL)), 0);
}

/* ---- refusals: the job fails with its event, nothing after runs, the queue goes on ---- */

/* The failed job of submit_call() ran nothing after its fault; a good one runs next. */
static void expect_failed_call(struct hpu_test *t, unsigned int q, uint32_t ran)
{
	struct hpu_cb callee = { .len = 0 };

	HPU_CHECK_EQ(t, sync_value(t, 1), ran);
	HPU_CHECK_EQ(t, sync_value(t, AFTER), 0);
	HPU_CHECK_EQ(t, completion(t, q), 0);
	HPU_CHECK_EQ(t, t->bad_vectors, 0);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(q, CI)), 1);

	cb_signal(&callee, 6, 1);
	memcpy(t->mem + USABLE_OFF, callee.b, callee.len);
	submit_call(t, q, VA_HOST + USABLE_OFF, callee.len, 99);
	run(t);
	EXPECT_DONE(t, q);
	HPU_CHECK_EQ(t, sync_value(t, 6), 1);
	HPU_CHECK_EQ(t, sync_value(t, AFTER), 1);
	HPU_CHECK_EQ(t, completion(t, q), COMPLETION_VALUE + 99);
}

/* The engine of an event on q: the queue manager, or q's engine of that kind. */
static uint32_t engine_of(uint32_t kind, unsigned int q)
{
	switch (kind) {
	case HPU_ENGINE_DMA:
		return kind + q % hpu_test_cfg.num_dma;
	case HPU_ENGINE_MME:
		return kind + q % hpu_test_cfg.num_mme;
	default:
		return kind;
	}
}

/* A callee packet after a good SIGNAL, as 32-bit words, and the event it ends the job with. */
struct callee_bad_case {
	const char *name;
	uint32_t words[28];
	uint32_t nwords;
	uint32_t type;
	uint32_t engine;    /* HPU_ENGINE_* kind */
	uint64_t addr;      /* 0: the packet's VA */
	unsigned int logs;  /* 0: one, the failed job's */
	bool priv_job;      /* the caller's whole buffer may hold privileged packets */
};

#define ILLEGAL HPU_EVENT_ILLEGAL_PACKET

static const struct callee_bad_case callee_bad_cases[] = {
	{ "unknown opcode", { 0x7f, 0 }, .nwords = 2, .type = ILLEGAL },
	{ "unknown privileged opcode", { 0x82, 0 }, .nwords = 2, .type = ILLEGAL },
	{ "nested CALL", { HDR(CALL, 0), 0, LO(VA_CALLEE), HI(VA_CALLEE), 8, 0 }, .nwords = 6,
	  .type = ILLEGAL },
	{ "WRITE_COMPLETION", { HDR(WRITE_COMPLETION, 0), 0, LO(BUS(SYNC_OFF)), HI(BUS(SYNC_OFF)),
				1, 0 }, .nwords = 6, .type = HPU_EVENT_PRIV_PACKET },
	{ "INTERRUPT where the caller may have one", { HDR(INTERRUPT, 0), 1 }, .nwords = 2,
	  .type = HPU_EVENT_PRIV_PACKET, .priv_job = true },
	{ "reserved header bits", { HDR(NOP, 0) | 1u << 16, 0 }, .nwords = 2, .type = ILLEGAL },
	{ "unknown LIN_DMA flag", { HDR(LIN_DMA, 2), 0, LO(SYNC_VA(8)), HI(SYNC_VA(8)),
				    LO(SYNC_VA(9)), HI(SYNC_VA(9)), 4, 0 }, .nwords = 8,
	  .type = ILLEGAL },
	{ "NOP pad", { HDR(NOP, 0), 1 }, .nwords = 2, .type = ILLEGAL },
	{ "SIGNAL address not 4-byte aligned", { HDR(SIGNAL, 0), 1, LO(SYNC_VA(0) + 2),
						 HI(SYNC_VA(0)) }, .nwords = 4, .type = ILLEGAL },
	{ "LIN_DMA cut by the callee's end", { HDR(LIN_DMA, 0), 0, 0, 0 }, .nwords = 4,
	  .type = ILLEGAL },
	{ "GEMM cut by the callee's end", { HDR(MME_GEMM, 0), F32, F32, 1, 1, 1, 1, 0 },
	  .nwords = 8, .type = ILLEGAL },
	{ "GEMM with k = 0", { HDR(MME_GEMM, 0), F32, F32, 1, 1, 1, 0, 0, LO(A_VA), HI(A_VA),
			       LO(B_VA), HI(B_VA), LO(C_VA), HI(C_VA), 1, 0, 1, 0, 1, 0, 0, 0,
			       0, 0, 0, 0, ONE_F32, 0 }, .nwords = 28,
	  .type = HPU_EVENT_BAD_KERNEL, .engine = HPU_ENGINE_MME, .logs = 2 },
	{ "LIN_DMA to an unmapped address", { HDR(LIN_DMA, 0), 0, LO(SYNC_VA(0)),
					      HI(SYNC_VA(0)), LO(VA_UNMAPPED), HI(VA_UNMAPPED),
					      4, 0 }, .nwords = 8,
	  .type = HPU_EVENT_MMU_FAULT, .engine = HPU_ENGINE_DMA, .addr = VA_UNMAPPED },
	{ "TPC_LAUNCH of an unmapped parameter block", { HDR(TPC_LAUNCH, 0),
							 sizeof(struct relu_params),
							 LO(VA_UNMAPPED), HI(VA_UNMAPPED) },
	  .nwords = 4, .type = HPU_EVENT_MMU_FAULT, .engine = HPU_ENGINE_TPC,
	  .addr = VA_UNMAPPED },
};

static void test_callee_bad(struct hpu_test *t, const struct callee_bad_case *c)
{
	const unsigned int q = 2;
	struct hpu_cb cb = { .len = 0 };
	uint32_t len, user;

	map_call(t);
	cb_signal(&cb, 1, 1);
	put(&cb, c->words, 4 * c->nwords);
	len = cb.len;
	upload_cb(t, VA_CALLEE, &cb);
	cb_nop(&cb);
	cb_call(&cb, VA_CALLEE, len);
	cb_signal(&cb, AFTER, 1);
	user = cb.len;
	cb_completion(&cb, BUS(COMPLETION_OFF(q)), COMPLETION_VALUE);
	submit(t, q, &cb, c->priv_job ? 0 : user, ASID, 5);
	run(t);
	expect_event(t, c->type, q, ASID, engine_of(c->engine, q), 5,
		     c->addr ? c->addr : VA_CALLEE + 16, c->logs ? c->logs : 1, __LINE__);
	expect_failed_call(t, q, 1);
}

/* A CALL and the event it ends the job with. */
struct call_bad_case {
	const char *name;
	uint32_t flags, pad;
	uint64_t addr, size;
	uint32_t type;
	uint64_t ev_addr; /* 0: the CALL's offset */
	uint32_t ran;     /* SIGNALs the callee ran first */
};

static const struct call_bad_case call_bad_cases[] = {
	{ "size 0", .addr = VA_CALLEE, .size = 0, .type = ILLEGAL },
	{ "size not a multiple of 8", .addr = VA_CALLEE, .size = 12, .type = ILLEGAL },
	{ "size past HPU_CALL_MAX_SIZE", .addr = VA_BIG, .size = HPU_CALL_MAX_SIZE + 8,
	  .type = ILLEGAL },
	{ "address not 8-byte aligned", .addr = VA_CALLEE + 4, .size = 8, .type = ILLEGAL },
	{ "pad", .pad = 1, .addr = VA_CALLEE, .size = 8, .type = ILLEGAL },
	{ "flags", .flags = 1, .addr = VA_CALLEE, .size = 8, .type = ILLEGAL },
	{ "unmapped callee", .addr = VA_UNMAPPED, .size = 8, .type = HPU_EVENT_MMU_FAULT,
	  .ev_addr = VA_UNMAPPED },
	{ "callee past the VA space", .addr = VA_TOO_HIGH, .size = 8,
	  .type = HPU_EVENT_MMU_FAULT, .ev_addr = VA_TOO_HIGH },
	{ "callee running off its mapping", .addr = VA_SCAT_END - 16, .size = 32,
	  .type = HPU_EVENT_MMU_FAULT, .ev_addr = VA_SCAT_END, .ran = 1 },
	{ "packet straddling the end of the mapping", .addr = VA_HBM_END - 48, .size = 160,
	  .type = HPU_EVENT_MMU_FAULT, .ev_addr = VA_HBM_END, .ran = 1 },
	{ "callee on a host page outside guest memory", .addr = VA_BAD_HOST, .size = 8,
	  .type = HPU_EVENT_DMA_ERROR, .ev_addr = BAD_BUS },
};

static void test_call_bad(struct hpu_test *t, const struct call_bad_case *c)
{
	const unsigned int q = 0;
	struct hpu_cb cb = { .len = 0 };

	map_call(t);
	/* A SIGNAL before the ends of two mappings; a GEMM's first 32 bytes before one's. */
	cb_signal(&cb, 1, 1);
	upload_cb(t, VA_SCAT_END - 16, &cb);
	cb_signal(&cb, 1, 1);
	cb_gemm(&cb, K);
	cb.len = 48;
	upload_cb(t, VA_HBM_END - 48, &cb);

	cb_nop(&cb);
	PKT(&cb, call, CALL, c->flags, .pad = c->pad, .addr = c->addr, .size = c->size);
	cb_signal(&cb, AFTER, 1);
	submit_user(t, q, &cb, 4);
	run(t);
	EXPECT_EVENT(t, c->type, q, ASID, HPU_ENGINE_QMAN, 4, c->ev_addr ? c->ev_addr : 8);
	expect_failed_call(t, q, c->ran);
}

static const struct hpu_test_case hpu_tests[] = {
	{ "a recipe in HBM: every packet kind, run twice on new inputs", case_recipe },
	{ "a callee in host pages, called twice", case_host_callee },
	{ "six windows across scattered 2 MiB pages", case_scattered_windows },
	{ "a GEMM and a launch across window ends", case_window_boundary },
	{ "callees of 8 bytes and of HPU_CALL_MAX_SIZE", case_sizes },
	{ "a WAIT in a callee parks the queue and resumes there", case_wait_in_callee },
	{ "queue reset while waiting in a callee", case_reset_waiting_in_callee },
	{ "queue reset in a callee past its WAIT", case_reset_past_the_wait_in_callee },
	{ "device reset while waiting in a callee", case_device_reset_in_callee },
	{ "queue reset while a callee runs", case_reset_running_callee },
};

int main(void)
{
	unsigned int n = 0, failed = 0;
	struct hpu_test *t;
	char name[160];
	size_t i;

	printf("TAP version 13\n1..%zu\n", HPU_ARRAY_SIZE(hpu_tests) +
	       HPU_ARRAY_SIZE(callee_bad_cases) + HPU_ARRAY_SIZE(call_bad_cases));
	failed += hpu_run_cases(hpu_tests, HPU_ARRAY_SIZE(hpu_tests), &n);
	HPU_RUN_TABLE(callee_bad_cases, test_callee_bad, "refused in a callee");
	HPU_RUN_TABLE(call_bad_cases, test_call_bad, "CALL refused");
	return failed ? 1 : 0;
}
