/* SPDX-License-Identifier: MIT */
/*
 * Host unit test of the hpu device core's user queues (1.3): their BAR0
 * registers, their doorbell pages, and their jobs, whose ring and command
 * buffers the device reads through the MMU in the bound context, whose
 * privileged packets fail, and whose statuses it writes back.  Driven
 * through BAR0, the doorbell BAR and BAR4, with a host buffer standing in
 * for guest memory; the engine runs synchronously except in the thread
 * cases, so every other case is deterministic.  A warm reset (1.7) keeps
 * user queues: their jobs go on after the next READY.  Prints TAP.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "hdm_harness.h"
#include "hdm_internal.h"

#define UQ 5u /* the user queue most cases use */
#define UQ_ENTRIES 16u
#define REG_UQ(u, reg) HPU_REG_UQ(u, HPU_UQ_##reg)
#define DB_PAGE(u) ((u) * HPU_UQ_DB_PAGE_SIZE)
#define DB(u, reg) (DB_PAGE(u) + HPU_UQ_DB_##reg)
#define EVQ(u) HPU_EVENT_QUEUE_UQ(u)
#define UQ_DMA(u) DMA_ENGINE(HDM_QMAN_UQ(u))

/* Guest memory of the user queues; the test context maps it at VA_HOST + offset. */
#define UQ_RING_OFF(u) (0x20000u + (u) * 0x1000u)
#define UQ_CB_SIZE 0x1000u
#define UQ_CB_OFF(u, slot) (0xd00000u + ((u) * UQ_ENTRIES + (slot)) * UQ_CB_SIZE)
#define BIG_CB_OFF 0xe00000u /* one command buffer of HPU_CB_MAX_SIZE */
#define UQ_VA(off) (VA_HOST + (off))
/* A second page of sync objects, for a second context. */
#define SYNC2_OFF (SYNC_OFF + 0x1000u)
/* Read-only aliases of guest memory. */
#define VA_RO 0x500000000ull

/* What a descriptor's status holds until the device writes it. */
#define STATUS_UNSET 0xdeadbeefu

#define UQ_DESC_OFF(field) offsetof(struct hpu_uq_desc, field)

static uint32_t db_rd(struct hpu_test *t, uint32_t off)
{
	return hdm_core_uq_db_read(t->core, off, 4);
}

static void db_wr(struct hpu_test *t, uint32_t off, uint32_t value)
{
	hdm_core_uq_db_write(t->core, off, value, 4);
}

/* Bind user queue u as the driver does: ring and context, then the size that enables it. */
static void uq_bind(struct hpu_test *t, unsigned int u, uint32_t asid, uint64_t ring,
		    uint32_t entries)
{
	hpu_wr(t, REG_UQ(u, RING_LO), (uint32_t)ring);
	hpu_wr(t, REG_UQ(u, RING_HI), (uint32_t)(ring >> 32));
	hpu_wr(t, REG_UQ(u, ASID), asid);
	hpu_wr(t, REG_UQ(u, RING_SIZE), entries);
}

static void uq_maps(struct hpu_test *t);

/* setup(), the user queues' memory mapped in the test context, and queue u bound to it. */
static void uq_setup(struct hpu_test *t, unsigned int u)
{
	setup(t);
	uq_maps(t);
	uq_bind(t, u, ASID, UQ_VA(UQ_RING_OFF(u)), UQ_ENTRIES);
	HPU_EXPECT_CLEAN(t);
}

/* Store d at p, its status unset. */
static void desc_put(uint8_t *p, const struct hpu_uq_desc *d)
{
	hdm_st_le64(p + UQ_DESC_OFF(cb_va), d->cb_va);
	hdm_st_le32(p + UQ_DESC_OFF(cb_size), d->cb_size);
	hdm_st_le32(p + UQ_DESC_OFF(flags), d->flags);
	hdm_st_le64(p + UQ_DESC_OFF(tag), d->tag);
	hdm_st_le32(p + UQ_DESC_OFF(status), STATUS_UNSET);
	hdm_st_le32(p + UQ_DESC_OFF(pad), d->pad);
}

/* Descriptor idx (free running) of u's ring in guest memory. */
static uint8_t *uq_desc(struct hpu_test *t, unsigned int u, uint32_t idx)
{
	return t->mem + UQ_RING_OFF(u) + (idx % UQ_ENTRIES) * sizeof(struct hpu_uq_desc);
}

static uint32_t uq_status(struct hpu_test *t, unsigned int u, uint32_t idx)
{
	return hdm_ld_le32(uq_desc(t, u, idx) + UQ_DESC_OFF(status));
}

/* Write d at u's PI, as the runtime does, and ring the doorbell. */
static void uq_push(struct hpu_test *t, unsigned int u, const struct hpu_uq_desc *d)
{
	uint32_t pi = db_rd(t, DB(u, PI));

	desc_put(uq_desc(t, u, pi), d);
	db_wr(t, DB(u, PI), pi + 1);
}

/* Queue cb on u, from the slot's own command-buffer page. */
static void uq_submit(struct hpu_test *t, unsigned int u, const struct hpu_cb *cb, uint64_t tag)
{
	uint32_t slot = db_rd(t, DB(u, PI)) % UQ_ENTRIES;
	struct hpu_uq_desc d = { .cb_va = UQ_VA(UQ_CB_OFF(u, slot)), .cb_size = cb->len,
				 .tag = tag };

	hpu_check(t, cb->len <= UQ_CB_SIZE, "test command buffer fits its page", __LINE__);
	memcpy(t->mem + UQ_CB_OFF(u, slot), cb->b, cb->len);
	uq_push(t, u, &d);
}

static void uq_submit_sync(struct hpu_test *t, unsigned int u, uint32_t opcode, unsigned int i,
			   uint32_t value, uint64_t tag)
{
	struct hpu_cb cb = { .len = 0 };

	cb_sync(&cb, opcode, SYNC_VA(i), value);
	uq_submit(t, u, &cb, tag);
}

/* Every job pushed on u has ended, errors of them failed; no event or error is pending. */
static void uq_expect_idle(struct hpu_test *t, unsigned int u, uint32_t errors, int line)
{
	uint32_t pi = db_rd(t, DB(u, PI));

	hpu_check_eq(t, hpu_rd(t, REG_UQ(u, PI)), pi, "PI in BAR0", line);
	hpu_check_eq(t, hpu_rd(t, REG_UQ(u, CI)), pi, "CI", line);
	hpu_check_eq(t, db_rd(t, DB(u, CI)), pi, "CI in the doorbell page", line);
	hpu_check_eq(t, hpu_rd(t, REG_UQ(u, STATUS)), 0, "STATUS", line);
	hpu_check_eq(t, hpu_rd(t, REG_UQ(u, ERRORS)), errors, "ERRORS", line);
	hpu_check_eq(t, db_rd(t, DB(u, ERRORS)), errors, "ERRORS in the doorbell page", line);
	hpu_check_eq(t, hpu_rd(t, HPU_REG_EQ_PI), hpu_rd(t, HPU_REG_EQ_CI), "EQ_PI", line);
	hpu_test_expect_clean(t, line);
}

#define UQ_EXPECT_IDLE(t, u, errors) uq_expect_idle(t, u, errors, __LINE__)

/* ---- jobs ---- */

static void hpu_case_job_runs(struct hpu_test *t)
{
	struct hpu_cb cb = { .len = 0 };
	uint32_t i, wrong = 0;

	uq_setup(t, UQ);
	memset(t->mem + DST_OFF, 0xee, 8192 + 64);
	cb_dma(&cb, VA_HBM + 16, 0x5a, 4096, HPU_PKT_LIN_DMA_MEMSET);
	cb_dma(&cb, VA_HOST + DST_OFF + 1, VA_HBM + 16, 4096, 0);
	uq_submit(t, UQ, &cb, 0x1234);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_UQ(UQ, PI)), 1);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_UQ(UQ, CI)), 0);
	HPU_CHECK_EQ(t, uq_status(t, UQ, 0), STATUS_UNSET);
	run(t);
	UQ_EXPECT_IDLE(t, UQ, 0);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_UQ(UQ, CI)), 1);
	HPU_CHECK_EQ(t, uq_status(t, UQ, 0), 0);
	/* The rest of the descriptor is the runtime's. */
	HPU_CHECK_EQ(t, hdm_ld_le64(uq_desc(t, UQ, 0) + UQ_DESC_OFF(tag)), 0x1234);
	HPU_CHECK_EQ(t, hdm_ld_le32(uq_desc(t, UQ, 0) + UQ_DESC_OFF(cb_size)), cb.len);
	HPU_CHECK_EQ(t, hdm_ld_le32(uq_desc(t, UQ, 0) + UQ_DESC_OFF(pad)), 0);
	for (i = 0; i < 4098; i++)
		wrong += t->mem[DST_OFF + i] != (i >= 1 && i <= 4096 ? 0x5a : 0xee);
	HPU_CHECK_EQ(t, wrong, 0);

	/* Round the ring more than once: each slot's descriptor in turn. */
	for (i = 0; i < UQ_ENTRIES + 3; i++) {
		cb.len = 0;
		cb_dma(&cb, VA_HOST + DST_OFF + 8192 + i, i + 1, 1, HPU_PKT_LIN_DMA_MEMSET);
		uq_submit(t, UQ, &cb, i);
		if (i % 4 == 3)
			run(t);
	}
	run(t);
	UQ_EXPECT_IDLE(t, UQ, 0);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_UQ(UQ, CI)), UQ_ENTRIES + 4);
	for (i = 0; i < UQ_ENTRIES + 3; i++)
		wrong += t->mem[DST_OFF + 8192 + i] != i + 1;
	HPU_CHECK_EQ(t, wrong, 0);
	HPU_CHECK_EQ(t, uq_status(t, UQ, UQ_ENTRIES + 3), 0);
	HPU_CHECK(t, !(hpu_rd(t, HPU_REG_IRQ_CAUSE) & HPU_IRQ_UQ));
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_UQ_IRQ_PENDING), 0);
	HPU_CHECK_EQ(t, t->bad_vectors, 0);
}

/* An empty job and one of HPU_CB_MAX_SIZE both run. */
static void hpu_case_job_sizes(struct hpu_test *t)
{
	const struct hpu_uq_desc empty = { .cb_va = VA_UNMAPPED, .cb_size = 0, .tag = 1 };
	const struct hpu_uq_desc big = { .cb_va = UQ_VA(BIG_CB_OFF), .cb_size = HPU_CB_MAX_SIZE,
					 .tag = 2 };
	struct hpu_cb cb = { .len = 0 };

	uq_setup(t, UQ);
	uq_push(t, UQ, &empty);
	/* A SIGNAL first, then NOPs (zeros) to the end. */
	cb_sync(&cb, HPU_PKT_SIGNAL, SYNC_VA(0), 1);
	memcpy(t->mem + BIG_CB_OFF, cb.b, cb.len);
	uq_push(t, UQ, &big);
	run(t);
	UQ_EXPECT_IDLE(t, UQ, 0);
	HPU_CHECK_EQ(t, uq_status(t, UQ, 0), 0);
	HPU_CHECK_EQ(t, uq_status(t, UQ, 1), 0);
	HPU_CHECK_EQ(t, sync_value(t, 0), 1);
}

/* ---- the MMU: ring, descriptors and command buffers in the bound context ---- */

static void hpu_case_ring_unmapped(struct hpu_test *t)
{
	struct hpu_cb cb = { .len = 0 };

	uq_setup(t, UQ);
	hpu_wr(t, REG_UQ(UQ, RING_SIZE), 0);
	uq_bind(t, UQ, ASID, VA_UNMAPPED, UQ_ENTRIES);
	cb_sync(&cb, HPU_PKT_SIGNAL, SYNC_VA(0), 1);
	uq_submit(t, UQ, &cb, 7);
	run(t);
	/* The descriptor was never read: tag 0. */
	EXPECT_EVENT(t, HPU_EVENT_MMU_FAULT, EVQ(UQ), ASID, HPU_ENGINE_QMAN, 0, VA_UNMAPPED);
	uq_submit(t, UQ, &cb, 8);
	run(t);
	EXPECT_EVENT(t, HPU_EVENT_MMU_FAULT, EVQ(UQ), ASID, HPU_ENGINE_QMAN, 0,
		     VA_UNMAPPED + sizeof(struct hpu_uq_desc));
	UQ_EXPECT_IDLE(t, UQ, 2);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_UQ(UQ, CI)), 2);
	HPU_CHECK_EQ(t, sync_value(t, 0), 0);
}

/*
 * The same VAs (ring, command buffer, sync object) in two contexts reach
 * different memory: the queue reads and writes only what its bound context
 * maps.
 */
static void hpu_case_bound_context(struct hpu_test *t)
{
	const uint64_t ring_va = UQ_VA(UQ_RING_OFF(UQ)), cb_va = UQ_VA(UQ_CB_OFF(UQ, 0));
	struct hpu_uq_desc d = { .cb_va = cb_va, .tag = 1 };
	uint8_t *desc2 = t->mem + UQ_RING_OFF(UQ + 1);
	struct hpu_cb cb = { .len = 0 };

	uq_setup(t, UQ);
	hpu_wr(t, REG_UQ(UQ, RING_SIZE), 0);
	/* Context 2 has only a sync page: the ring's VA is not mapped there. */
	pt_map_page(t, 2, SYNC_VA(0), BUS(SYNC2_OFF), PTE_HOST_RW);
	uq_bind(t, UQ, 2, ring_va, UQ_ENTRIES);
	cb_sync(&cb, HPU_PKT_SIGNAL, SYNC_VA(0), 1);
	uq_submit(t, UQ, &cb, 1);
	run(t);
	EXPECT_EVENT(t, HPU_EVENT_MMU_FAULT, EVQ(UQ), 2, HPU_ENGINE_QMAN, 0, ring_va);
	HPU_CHECK_EQ(t, uq_status(t, UQ, 0), STATUS_UNSET);

	/* Map the ring's and the buffer's VAs in context 2 onto other pages, holding other work. */
	pt_map_page(t, 2, ring_va, BUS(UQ_RING_OFF(UQ + 1)), PTE_HOST_RW);
	pt_map_page(t, 2, cb_va, BUS(UQ_CB_OFF(UQ + 1, 0)), PTE_HOST_RW);
	cb.len = 0;
	cb_sync(&cb, HPU_PKT_SIGNAL, SYNC_VA(0), 7);
	memcpy(t->mem + UQ_CB_OFF(UQ + 1, 0), cb.b, cb.len);
	d.cb_size = cb.len;
	desc_put(desc2 + sizeof(struct hpu_uq_desc), &d);
	uq_submit(t, UQ, &cb, 2); /* context 1's slot 1 holds a SIGNAL of 7 too */
	run(t);
	UQ_EXPECT_IDLE(t, UQ, 1);
	HPU_CHECK_EQ(t, hdm_ld_le32(t->mem + SYNC2_OFF), 7);
	HPU_CHECK_EQ(t, sync_value(t, 0), 0);
	HPU_CHECK_EQ(t, hdm_ld_le32(desc2 + sizeof(struct hpu_uq_desc) + UQ_DESC_OFF(status)), 0);
	HPU_CHECK_EQ(t, uq_status(t, UQ, 1), STATUS_UNSET);
}

static void hpu_case_cb_unmapped(struct hpu_test *t)
{
	const struct hpu_uq_desc unmapped = { .cb_va = VA_UNMAPPED, .cb_size = 16, .tag = 3 };
	/* The last 8 bytes of the sync page, then a page the context does not map. */
	const uint64_t edge = VA_HOST + SYNC_OFF + HPU_MMU_PAGE_SIZE;
	const struct hpu_uq_desc straddling = { .cb_va = edge - 8, .cb_size = 16, .tag = 4 };

	uq_setup(t, UQ);
	uq_push(t, UQ, &unmapped);
	run(t);
	EXPECT_EVENT(t, HPU_EVENT_MMU_FAULT, EVQ(UQ), ASID, HPU_ENGINE_QMAN, 3, VA_UNMAPPED);
	uq_push(t, UQ, &straddling);
	run(t);
	EXPECT_EVENT(t, HPU_EVENT_MMU_FAULT, EVQ(UQ), ASID, HPU_ENGINE_QMAN, 4, edge);
	UQ_EXPECT_IDLE(t, UQ, 2);
	HPU_CHECK_EQ(t, uq_status(t, UQ, 0), HPU_UQ_STATUS_MMU_FAULT);
	HPU_CHECK_EQ(t, uq_status(t, UQ, 1), HPU_UQ_STATUS_MMU_FAULT);
}

/* A ring and command buffer in HBM, uploaded and read back by kernel-queue copies. */
static void hpu_case_ring_in_hbm(struct hpu_test *t)
{
	const uint64_t ring_va = VA_HBM + 0x10000, cb_va = VA_HBM + 0x20000;
	struct hpu_uq_desc d = { .cb_va = cb_va, .tag = 9 };
	struct hpu_cb cb = { .len = 0 }, up = { .len = 0 };

	uq_setup(t, UQ);
	hpu_wr(t, REG_UQ(UQ, RING_SIZE), 0);
	uq_bind(t, UQ, ASID, ring_va, UQ_ENTRIES);
	cb_sync(&cb, HPU_PKT_SIGNAL, SYNC_VA(2), 3);
	d.cb_size = cb.len;
	desc_put(t->mem + SRC_OFF, &d);
	memcpy(t->mem + SRC_OFF + 4096, cb.b, cb.len);
	cb_dma(&up, ring_va, VA_HOST + SRC_OFF, sizeof(struct hpu_uq_desc), 0);
	cb_dma(&up, cb_va, VA_HOST + SRC_OFF + 4096, cb.len, 0);
	submit_user(t, 0, &up, 1);
	run(t);
	EXPECT_DONE(t, 0);

	db_wr(t, DB(UQ, PI), 1);
	run(t);
	UQ_EXPECT_IDLE(t, UQ, 0);
	HPU_CHECK_EQ(t, sync_value(t, 2), 3);
	up.len = 0;
	cb_dma(&up, VA_HOST + DST_OFF, ring_va, sizeof(struct hpu_uq_desc), 0);
	submit_user(t, 0, &up, 2);
	run(t);
	EXPECT_DONE(t, 0);
	HPU_CHECK_EQ(t, hdm_ld_le32(t->mem + DST_OFF + UQ_DESC_OFF(status)), 0);
	HPU_CHECK_EQ(t, hdm_ld_le64(t->mem + DST_OFF + UQ_DESC_OFF(tag)), 9);
}

/* Another context's memory is out of reach: its VAs fault, its bytes stay. */
static void hpu_case_isolation(struct hpu_test *t)
{
	const uint64_t other_hbm = HBM_BUF + (64ull << 20);
	struct hpu_cb cb = { .len = 0 };
	uint8_t secret[64];

	uq_setup(t, UQ);
	pt_map_host(t, 2, SRC_OFF, HPU_MMU_PAGE_SIZE);
	pt_map_host(t, 2, DST_OFF, HPU_MMU_PAGE_SIZE);
	pt_map(t, 2, VA_UNMAPPED, other_hbm, HPU_MMU_PAGE_SIZE, PTE_RW);
	fill_pattern(t->mem + SRC_OFF, sizeof(secret), 42);
	memcpy(secret, t->mem + SRC_OFF, sizeof(secret));
	cb_dma(&cb, VA_UNMAPPED, VA_HOST + SRC_OFF, sizeof(secret), 0);
	submit(t, 0, &cb, cb.len, 2, 1);
	run(t);
	EXPECT_DONE(t, 0);

	/* The user queue, bound to context 1, aims at context 2's VA. */
	memset(t->mem + DST_OFF, 0xee, 4096);
	cb.len = 0;
	cb_dma(&cb, VA_HOST + DST_OFF, VA_UNMAPPED, sizeof(secret), 0);
	uq_submit(t, UQ, &cb, 2);
	run(t);
	EXPECT_EVENT(t, HPU_EVENT_MMU_FAULT, EVQ(UQ), ASID, UQ_DMA(UQ), 2, VA_UNMAPPED);
	cb.len = 0;
	cb_dma(&cb, VA_UNMAPPED, 0, sizeof(secret), HPU_PKT_LIN_DMA_MEMSET);
	uq_submit(t, UQ, &cb, 3);
	run(t);
	EXPECT_EVENT(t, HPU_EVENT_MMU_FAULT, EVQ(UQ), ASID, UQ_DMA(UQ), 3, VA_UNMAPPED);
	UQ_EXPECT_IDLE(t, UQ, 2);
	HPU_CHECK_EQ(t, t->mem[DST_OFF], 0xee);

	/* Context 2 still reads its secret. */
	cb.len = 0;
	cb_dma(&cb, VA_HOST + DST_OFF, VA_UNMAPPED, sizeof(secret), 0);
	submit(t, 0, &cb, cb.len, 2, 4);
	run(t);
	EXPECT_DONE(t, 0);
	HPU_CHECK(t, !memcmp(t->mem + DST_OFF, secret, sizeof(secret)));
}

/* ---- what a user command buffer may hold ---- */

static void hpu_case_privileged(struct hpu_test *t)
{
	struct hpu_cb cb = { .len = 0 };

	uq_setup(t, UQ);
	/* Even last in the buffer, where a kernel queue's tail would be. */
	cb_nop(&cb);
	cb_completion(&cb, BUS(COMPLETION_OFF(0)), 1);
	uq_submit(t, UQ, &cb, 1);
	run(t);
	EXPECT_EVENT(t, HPU_EVENT_PRIV_PACKET, EVQ(UQ), ASID, HPU_ENGINE_QMAN, 1, 8);
	cb.len = 0;
	cb_interrupt(&cb, 1);
	uq_submit(t, UQ, &cb, 2);
	run(t);
	EXPECT_EVENT(t, HPU_EVENT_PRIV_PACKET, EVQ(UQ), ASID, HPU_ENGINE_QMAN, 2, 0);
	UQ_EXPECT_IDLE(t, UQ, 2);
	HPU_CHECK_EQ(t, uq_status(t, UQ, 0), HPU_UQ_STATUS_PRIV_PACKET);
	HPU_CHECK_EQ(t, uq_status(t, UQ, 1), HPU_UQ_STATUS_PRIV_PACKET);
	HPU_CHECK_EQ(t, completion(t, 0), 0);
	HPU_CHECK_EQ(t, t->vector_irqs[1], 0);
	HPU_CHECK_EQ(t, t->bad_vectors, 0);
}

struct hpu_desc_case {
	const char *name;
	uint32_t cb_size;
	uint32_t flags;
	uint32_t pad;
};

static const struct hpu_desc_case hpu_desc_cases[] = {
	{ "size not a multiple of 8", 20, 0, 0 },
	{ "size past HPU_CB_MAX_SIZE", HPU_CB_MAX_SIZE + 8, 0, 0 },
	{ "size with room for a kernel tail", HPU_CB_MAX_SIZE + HPU_QUEUE_TAIL_MAX, 0, 0 },
	{ "size near 4 GiB", UINT32_MAX - 7, 0, 0 },
	{ "non-zero flags", 16, 1, 0 },
	{ "non-zero pad", 16, 0, 1 },
};

/*
 * Each bad descriptor fails its job before the buffer (a SIGNAL of sync
 * object 0) runs; the good job after it runs.
 */
static void hpu_case_bad_desc(struct hpu_test *t)
{
	struct hpu_cb cb = { .len = 0 };
	uint32_t i, idx;

	uq_setup(t, UQ);
	cb_sync(&cb, HPU_PKT_SIGNAL, SYNC_VA(0), 1);
	memcpy(t->mem + BIG_CB_OFF, cb.b, cb.len);
	for (i = 0; i < HPU_ARRAY_SIZE(hpu_desc_cases); i++) {
		const struct hpu_desc_case *c = &hpu_desc_cases[i];
		const struct hpu_uq_desc d = { .cb_va = UQ_VA(BIG_CB_OFF), .cb_size = c->cb_size,
					       .flags = c->flags, .tag = 0x10 + i, .pad = c->pad };
		bool failed = t->failed;

		idx = db_rd(t, DB(UQ, PI));
		uq_push(t, UQ, &d);
		uq_submit_sync(t, UQ, HPU_PKT_SIGNAL, 1, 1, 0x100 + i);
		run(t);
		EXPECT_EVENT(t, HPU_EVENT_ILLEGAL_PACKET, EVQ(UQ), ASID, HPU_ENGINE_QMAN, d.tag, 0);
		UQ_EXPECT_IDLE(t, UQ, i + 1);
		HPU_CHECK_EQ(t, uq_status(t, UQ, idx), HPU_UQ_STATUS_ILLEGAL_PACKET);
		HPU_CHECK_EQ(t, uq_status(t, UQ, idx + 1), 0);
		HPU_CHECK_EQ(t, sync_value(t, 0), 0);
		HPU_CHECK_EQ(t, sync_value(t, 1), i + 1);
		if (t->failed && !failed)
			printf("# in case: %s\n", c->name);
	}
}

/* ---- the end of a job ---- */

static unsigned int hpu_seen_writes, hpu_nr_writes;
static uint32_t hpu_write_ci[4], hpu_write_errors[4], hpu_write_status[4];

/* At each DMA write: the queue's CI and ERRORS and its first job's status, before the write. */
static void record_writes(struct hpu_test *t)
{
	if (t->dma_writes == hpu_seen_writes || hpu_nr_writes == HPU_ARRAY_SIZE(hpu_write_ci))
		return;
	hpu_seen_writes = t->dma_writes;
	hpu_write_ci[hpu_nr_writes] = hpu_rd(t, REG_UQ(UQ, CI));
	hpu_write_errors[hpu_nr_writes] = hpu_rd(t, REG_UQ(UQ, ERRORS));
	hpu_write_status[hpu_nr_writes++] = uq_status(t, UQ, 0);
}

/* The status is written back, then the event posted (ERRORS counted), then CI advances. */
static void hpu_case_end_order(struct hpu_test *t)
{
	const struct hpu_uq_desc d = { .cb_va = VA_UNMAPPED, .cb_size = 8, .tag = 5 };

	uq_setup(t, UQ);
	uq_push(t, UQ, &d);
	hpu_seen_writes = t->dma_writes;
	hpu_nr_writes = 0;
	t->on_dma = record_writes;
	run(t);
	t->on_dma = NULL;
	HPU_CHECK_EQ(t, hpu_nr_writes, 2);
	HPU_CHECK_EQ(t, hpu_write_status[0], STATUS_UNSET); /* this write is the status */
	HPU_CHECK_EQ(t, hpu_write_ci[0], 0);
	HPU_CHECK_EQ(t, hpu_write_errors[0], 0);
	HPU_CHECK_EQ(t, hpu_write_status[1], HPU_UQ_STATUS_MMU_FAULT); /* this one the event */
	HPU_CHECK_EQ(t, hpu_write_ci[1], 0);
	HPU_CHECK_EQ(t, hpu_write_errors[1], 1);
	EXPECT_EVENT(t, HPU_EVENT_MMU_FAULT, EVQ(UQ), ASID, HPU_ENGINE_QMAN, 5, VA_UNMAPPED);
	UQ_EXPECT_IDLE(t, UQ, 1);
}

/* A ring the context maps read-only: the status is lost silently, the job still counts. */
static void hpu_case_status_unwritable(struct hpu_test *t)
{
	struct hpu_cb cb = { .len = 0 };

	uq_setup(t, UQ);
	hpu_wr(t, REG_UQ(UQ, RING_SIZE), 0);
	pt_map_page(t, ASID, VA_RO, BUS(UQ_RING_OFF(UQ)), HPU_PTE_PRESENT | HPU_PTE_HOST);
	uq_bind(t, UQ, ASID, VA_RO, UQ_ENTRIES);
	cb_sync(&cb, HPU_PKT_SIGNAL, SYNC_VA(0), 1);
	uq_submit(t, UQ, &cb, 1);
	run(t);
	UQ_EXPECT_IDLE(t, UQ, 0);
	HPU_CHECK_EQ(t, uq_status(t, UQ, 0), STATUS_UNSET);
	HPU_CHECK_EQ(t, sync_value(t, 0), 1);

	/* A failed job still reports its own fault, not the write-back's. */
	cb.len = 0;
	cb_dma(&cb, VA_UNMAPPED + 8, VA_HOST + SRC_OFF, 8, 0);
	uq_submit(t, UQ, &cb, 2);
	run(t);
	EXPECT_EVENT(t, HPU_EVENT_MMU_FAULT, EVQ(UQ), ASID, UQ_DMA(UQ), 2, VA_UNMAPPED + 8);
	UQ_EXPECT_IDLE(t, UQ, 1);
	HPU_CHECK_EQ(t, uq_status(t, UQ, 1), STATUS_UNSET);
}

/* ---- ARM and the UQ interrupt ---- */

static void hpu_case_arm(struct hpu_test *t)
{
	struct hpu_cb cb = { .len = 0 };
	unsigned int misc;

	uq_setup(t, UQ);
	uq_bind(t, UQ + 1, ASID, UQ_VA(UQ_RING_OFF(UQ + 1)), UQ_ENTRIES);
	cb_nop(&cb);
	misc = t->vector_irqs[HPU_MSIX_VEC_MISC];
	hpu_wr(t, REG_UQ(UQ, ARM), 1);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_UQ(UQ, ARM)), 1);
	uq_submit(t, UQ, &cb, 1);
	uq_submit(t, UQ, &cb, 2);
	uq_submit(t, UQ + 1, &cb, 3);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_IRQ_CAUSE), 0);
	run(t);
	UQ_EXPECT_IDLE(t, UQ, 0);
	UQ_EXPECT_IDLE(t, UQ + 1, 0);
	/* Two jobs ended: one interrupt, and the queue is disarmed. */
	HPU_CHECK_EQ(t, hpu_rd(t, REG_UQ(UQ, ARM)), 0);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_UQ_IRQ_PENDING), 1u << UQ);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_IRQ_CAUSE), HPU_IRQ_UQ);
	HPU_CHECK_EQ(t, t->vector_irqs[HPU_MSIX_VEC_MISC], misc + 1);

	/* Pending bits are write-1-to-clear, each its own. */
	hpu_wr(t, HPU_REG_UQ_IRQ_PENDING, 1u << (UQ + 1));
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_UQ_IRQ_PENDING), 1u << UQ);
	hpu_wr(t, HPU_REG_UQ_IRQ_PENDING, 1u << UQ);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_UQ_IRQ_PENDING), 0);
	hpu_wr(t, HPU_REG_IRQ_CAUSE, HPU_IRQ_UQ);

	/* Disarmed: a job ends quietly. */
	uq_submit(t, UQ, &cb, 4);
	run(t);
	UQ_EXPECT_IDLE(t, UQ, 0);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_UQ_IRQ_PENDING), 0);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_IRQ_CAUSE), 0);
	HPU_CHECK_EQ(t, t->vector_irqs[HPU_MSIX_VEC_MISC], misc + 1);

	/* Masked, the cause waits; unmasking raises it.  A failed job counts too. */
	hpu_wr(t, HPU_REG_IRQ_MASK, HPU_IRQ_UQ | HPU_IRQ_EVENT);
	hpu_wr(t, REG_UQ(UQ, ARM), 1);
	cb.len = 0;
	cb_dma(&cb, VA_UNMAPPED, VA_HOST + SRC_OFF, 8, 0);
	uq_submit(t, UQ, &cb, 5);
	run(t);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_UQ_IRQ_PENDING), 1u << UQ);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_IRQ_CAUSE), HPU_IRQ_UQ | HPU_IRQ_EVENT);
	HPU_CHECK_EQ(t, t->vector_irqs[HPU_MSIX_VEC_MISC], misc + 1);
	hpu_wr(t, HPU_REG_IRQ_MASK, 0);
	HPU_CHECK_EQ(t, t->vector_irqs[HPU_MSIX_VEC_MISC], misc + 2);
	EXPECT_EVENT(t, HPU_EVENT_MMU_FAULT, EVQ(UQ), ASID, UQ_DMA(UQ), 5, VA_UNMAPPED);
	UQ_EXPECT_IDLE(t, UQ, 1);
	HPU_CHECK_EQ(t, t->bad_vectors, 0);
}

/* ---- queue reset ---- */

static void hpu_case_reset_waiting(struct hpu_test *t)
{
	uq_setup(t, UQ);
	uq_submit_sync(t, UQ, HPU_PKT_WAIT, 0, 1, 1);
	uq_submit_sync(t, UQ, HPU_PKT_SIGNAL, 1, 1, 2);
	run(t);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_UQ(UQ, STATUS)), HPU_Q_STATUS_WAITING);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_UQ(UQ, CI)), 0);

	hpu_wr(t, REG_UQ(UQ, ARM), 1);
	hpu_wr(t, REG_UQ(UQ, CTRL), HPU_Q_CTRL_RESET);
	run(t);
	EXPECT_EVENT(t, HPU_EVENT_ABORTED, EVQ(UQ), ASID, HPU_ENGINE_QMAN, 1, 0);
	UQ_EXPECT_IDLE(t, UQ, 1);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_UQ(UQ, CI)), 2);
	HPU_CHECK_EQ(t, uq_status(t, UQ, 0), HPU_UQ_STATUS_ABORTED);
	/* The queued job was dropped unread. */
	HPU_CHECK_EQ(t, uq_status(t, UQ, 1), STATUS_UNSET);
	HPU_CHECK_EQ(t, sync_value(t, 1), 0);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_UQ_IRQ_PENDING), 1u << UQ);

	/* The queue works again. */
	uq_submit_sync(t, UQ, HPU_PKT_SIGNAL, 1, 1, 3);
	run(t);
	UQ_EXPECT_IDLE(t, UQ, 1);
	HPU_CHECK_EQ(t, uq_status(t, UQ, 2), 0);
	HPU_CHECK_EQ(t, sync_value(t, 1), 1);
}

static void hpu_case_reset_queued(struct hpu_test *t)
{
	uq_setup(t, UQ);
	/* Jobs not started are dropped at once, with no event; an armed queue interrupts. */
	uq_submit_sync(t, UQ, HPU_PKT_SIGNAL, 0, 1, 1);
	uq_submit_sync(t, UQ, HPU_PKT_SIGNAL, 0, 1, 2);
	hpu_wr(t, REG_UQ(UQ, ARM), 1);
	hpu_wr(t, REG_UQ(UQ, CTRL), HPU_Q_CTRL_RESET);
	HPU_CHECK_EQ(t, db_rd(t, DB(UQ, CI)), 2);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_UQ_IRQ_PENDING), 1u << UQ);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_UQ(UQ, ARM)), 0);
	run(t);
	UQ_EXPECT_IDLE(t, UQ, 0);
	HPU_CHECK_EQ(t, sync_value(t, 0), 0);
	HPU_CHECK_EQ(t, uq_status(t, UQ, 0), STATUS_UNSET);

	/* An idle queue: nothing moves, nothing is raised. */
	hpu_wr(t, HPU_REG_UQ_IRQ_PENDING, UINT32_MAX);
	hpu_wr(t, REG_UQ(UQ, ARM), 1);
	hpu_wr(t, REG_UQ(UQ, CTRL), HPU_Q_CTRL_RESET);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_UQ_IRQ_PENDING), 0);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_UQ(UQ, ARM)), 1);
	HPU_CHECK_EQ(t, db_rd(t, DB(UQ, CI)), 2);

	hpu_wr(t, REG_UQ(UQ, CTRL), HPU_Q_CTRL_RESET | 2);
	HPU_EXPECT_ERROR(t, HPU_ERR_BAD_CTRL);
	hpu_wr(t, REG_UQ(UQ, CTRL), 0);
	HPU_EXPECT_CLEAN(t);
}

/* A big copy is cut at a step boundary; its status says ABORTED. */
static void hpu_case_reset_running(struct hpu_test *t)
{
	struct hpu_cb cb = { .len = 0 };

	uq_setup(t, UQ);
	cb_dma(&cb, VA_HBM, VA_HOST + SRC_OFF, 2u << 20, 0);
	uq_submit(t, UQ, &cb, 1);
	uq_submit_sync(t, UQ, HPU_PKT_SIGNAL, 0, 1, 2);
	/* DMAs: descriptor, command buffer, then the copy's. */
	hook_at(t, 4, REG_UQ(UQ, CTRL), HPU_Q_CTRL_RESET);
	run(t);
	HPU_CHECK_EQ(t, hpu_hook_countdown, 0);
	EXPECT_EVENT(t, HPU_EVENT_ABORTED, EVQ(UQ), ASID, UQ_DMA(UQ), 1, 0);
	UQ_EXPECT_IDLE(t, UQ, 1);
	HPU_CHECK_EQ(t, uq_status(t, UQ, 0), HPU_UQ_STATUS_ABORTED);
	HPU_CHECK_EQ(t, uq_status(t, UQ, 1), STATUS_UNSET);
	HPU_CHECK_EQ(t, sync_value(t, 0), 0);
	HPU_CHECK(t, t->dma_reads < 8);
}

/* ---- device reset ---- */

static void expect_uq_reset(struct hpu_test *t, int line)
{
	static const uint32_t regs[] = {
		HPU_UQ_RING_LO, HPU_UQ_RING_HI, HPU_UQ_RING_SIZE, HPU_UQ_ASID, HPU_UQ_PI,
		HPU_UQ_CI, HPU_UQ_STATUS, HPU_UQ_ARM, HPU_UQ_ERRORS,
	};
	unsigned int u, wrong = 0;
	size_t i;

	for (u = 0; u < HPU_NUM_UQ; u++) {
		for (i = 0; i < HPU_ARRAY_SIZE(regs); i++)
			wrong += hpu_rd(t, HPU_REG_UQ(u, regs[i])) != 0;
		wrong += db_rd(t, DB(u, PI)) + db_rd(t, DB(u, CI)) + db_rd(t, DB(u, ERRORS)) != 0;
	}
	hpu_check_eq(t, wrong, 0, "user-queue registers not reset", line);
	hpu_check_eq(t, hpu_rd(t, HPU_REG_UQ_IRQ_PENDING), 0, "UQ_IRQ_PENDING", line);
}

static void hpu_case_device_reset(struct hpu_test *t)
{
	const struct hpu_uq_desc fault = { .cb_va = VA_UNMAPPED, .cb_size = 8, .tag = 1 };
	struct hpu_cb cb = { .len = 0 };
	uint32_t eq_pi;

	uq_setup(t, UQ);
	uq_bind(t, UQ + 1, ASID, UQ_VA(UQ_RING_OFF(UQ + 1)), UQ_ENTRIES);
	hpu_wr(t, REG_UQ(UQ, ARM), 1);
	uq_push(t, UQ, &fault);
	run(t);
	t->logs_seen = t->logs;
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_UQ_IRQ_PENDING), 1u << UQ);
	hpu_wr(t, REG_UQ(UQ, ARM), 1);
	uq_submit_sync(t, UQ, HPU_PKT_WAIT, 0, 1, 2);
	cb_nop(&cb);
	uq_submit(t, UQ + 1, &cb, 3);
	uq_submit(t, UQ + 1, &cb, 4);
	run(t);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_UQ(UQ, STATUS)), HPU_Q_STATUS_WAITING);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_UQ(UQ, ERRORS)), 1);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_NUM_UQ), HPU_NUM_UQ);

	eq_pi = hpu_rd(t, HPU_REG_EQ_PI);
	hpu_wr(t, HPU_REG_RESET, HPU_RESET_KEY);
	run(t);
	expect_uq_reset(t, __LINE__);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_NUM_UQ), 0);
	/* The parked job left silently. */
	HPU_CHECK_EQ(t, uq_status(t, UQ, 1), STATUS_UNSET);
	HPU_CHECK_EQ(t, hdm_ld_le32(t->mem + EQ_OFF + eq_pi * sizeof(struct hpu_event)), 0);
	HPU_EXPECT_CLEAN(t);

	/* Up again, the queues stay disabled until the driver binds them. */
	setup(t);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_NUM_UQ), HPU_NUM_UQ);
	db_wr(t, DB(UQ, PI), 1);
	HPU_EXPECT_ERROR(t, HPU_ERR_BAD_QUEUE);
	HPU_CHECK_EQ(t, db_rd(t, DB(UQ, PI)), 0);
}

/* A device reset while a user job copies: abandoned, nothing written back or posted. */
static void hpu_case_device_reset_running(struct hpu_test *t)
{
	struct hpu_cb cb = { .len = 0 };
	unsigned int writes;

	uq_setup(t, UQ);
	cb_dma(&cb, VA_HBM, VA_HOST + SRC_OFF, 2u << 20, 0);
	uq_submit(t, UQ, &cb, 1);
	hook_at(t, 4, HPU_REG_RESET, HPU_RESET_KEY);
	writes = t->dma_writes;
	run(t);
	t->on_dma = NULL;
	HPU_CHECK_EQ(t, hpu_hook_countdown, 0);
	HPU_CHECK_EQ(t, t->dma_writes, writes);
	HPU_CHECK_EQ(t, uq_status(t, UQ, 0), STATUS_UNSET);
	expect_uq_reset(t, __LINE__);
	HPU_EXPECT_CLEAN(t);

	/* And user queues come back. */
	uq_setup(t, UQ);
	uq_submit_sync(t, UQ, HPU_PKT_SIGNAL, 0, 1, 2);
	run(t);
	UQ_EXPECT_IDLE(t, UQ, 0);
	HPU_CHECK_EQ(t, sync_value(t, 0), 1);
}

/* ---- scheduling with the kernel queues ---- */

#define TS_OFF(i) (SYNC_OFF + 0x100u + 8u * (i))

/* One engine takes the queues in turn: a kernel job, a user job, a kernel job... */
static void hpu_case_round_robin(struct hpu_test *t)
{
	struct hpu_cb cb = { .len = 0 };
	unsigned int i;
	uint64_t clock;

	uq_setup(t, UQ);
	clock = t->clock;
	for (i = 0; i < 3; i++) {
		cb.len = 0;
		cb_timestamp(&cb, VA_HOST + TS_OFF(2 * i));
		submit_user(t, 0, &cb, i);
		cb.len = 0;
		cb_timestamp(&cb, VA_HOST + TS_OFF(2 * i + 1));
		uq_submit(t, UQ, &cb, i);
	}
	run(t);
	EXPECT_DONE(t, 0);
	UQ_EXPECT_IDLE(t, UQ, 0);
	for (i = 0; i < 6; i++)
		HPU_CHECK_EQ(t, hdm_ld_le64(t->mem + TS_OFF(i)),
			     clock + (i + 1) * HPU_TEST_CLOCK_TICK);

	/* A kernel job waits on a user job's SIGNAL, and a user job on a kernel job's. */
	cb.len = 0;
	cb_sync(&cb, HPU_PKT_SIGNAL, SYNC_VA(2), 1);
	cb_sync(&cb, HPU_PKT_WAIT, SYNC_VA(3), 1);
	submit_user(t, 0, &cb, 6);
	uq_submit_sync(t, UQ, HPU_PKT_WAIT, 2, 1, 4);
	uq_submit_sync(t, UQ, HPU_PKT_SIGNAL, 3, 1, 5);
	run(t);
	EXPECT_DONE(t, 0);
	UQ_EXPECT_IDLE(t, UQ, 0);
	HPU_CHECK_EQ(t, sync_value(t, 2), 1);
	HPU_CHECK_EQ(t, sync_value(t, 3), 1);
}

/* A long user job yields after its slice, goes on where it stopped, and ends once. */
static void hpu_case_time_slice(struct hpu_test *t)
{
	struct hpu_cb cb = { .len = 0 };
	unsigned int i;

	uq_setup(t, UQ);
	fill_pattern(t->mem + SRC_OFF, BUF_SIZE, 3);
	/* The kernel job waits for the user job's first packet, then only for the engine. */
	cb_sync(&cb, HPU_PKT_WAIT, SYNC_VA(1), 1);
	cb_timestamp(&cb, VA_HOST + TS_OFF(0));
	submit_user(t, 0, &cb, 1);
	cb.len = 0;
	cb_sync(&cb, HPU_PKT_SIGNAL, SYNC_VA(1), 1);
	for (i = 0; i < 64; i++)
		cb_dma(&cb, i % 2 ? VA_HOST + SRC_OFF : VA_HBM, i % 2 ? VA_HBM : VA_HOST + SRC_OFF,
		       BUF_SIZE, 0);
	cb_dma(&cb, VA_HOST + DST_OFF, VA_HBM, BUF_SIZE, 0);
	cb_timestamp(&cb, VA_HOST + TS_OFF(1));
	uq_submit(t, UQ, &cb, 2);
	run(t);
	EXPECT_DONE(t, 0);
	UQ_EXPECT_IDLE(t, UQ, 0);
	HPU_CHECK_EQ(t, uq_status(t, UQ, 0), 0);
	HPU_CHECK(t, !memcmp(t->mem + DST_OFF, t->mem + SRC_OFF, BUF_SIZE));
	HPU_CHECK(t, hdm_ld_le64(t->mem + TS_OFF(0)) < hdm_ld_le64(t->mem + TS_OFF(1)));
}

/* A sync object the CPU sets: another user queue's doorbell makes a parked job look again. */
static void hpu_case_doorbell_rechecks(struct hpu_test *t)
{
	struct hpu_cb cb = { .len = 0 };

	uq_setup(t, UQ);
	uq_bind(t, UQ + 1, ASID, UQ_VA(UQ_RING_OFF(UQ + 1)), UQ_ENTRIES);
	uq_submit_sync(t, UQ, HPU_PKT_WAIT, 3, 5, 1);
	run(t);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_UQ(UQ, STATUS)), HPU_Q_STATUS_WAITING);
	hdm_st_le32(t->mem + SYNC_OFF + 12, 5);
	run(t);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_UQ(UQ, STATUS)), HPU_Q_STATUS_WAITING);
	cb_nop(&cb);
	uq_submit(t, UQ + 1, &cb, 2);
	run(t);
	UQ_EXPECT_IDLE(t, UQ, 0);
	UQ_EXPECT_IDLE(t, UQ + 1, 0);
	HPU_CHECK_EQ(t, uq_status(t, UQ, 0), 0);
}

/* Odd jobs on the user queue, even ones on kernel queue 1, each within half its ring. */
static void submit_mixed(struct hpu_test *t, unsigned int i)
{
	struct hpu_cb cb = { .len = 0 };

	cb_sync(&cb, HPU_PKT_SIGNAL, SYNC_VA(0), 1);
	if (i % 2) {
		while (db_rd(t, DB(UQ, PI)) - db_rd(t, DB(UQ, CI)) >= UQ_ENTRIES / 2)
			sleep_tick();
		uq_submit(t, UQ, &cb, i);
		return;
	}
	while (hpu_rd(t, REG_Q(1, PI)) - hpu_rd(t, REG_Q(1, CI)) >= Q_RING_ENTRIES / 2)
		sleep_tick();
	submit_user(t, 1, &cb, i);
}

static uint32_t mixed_done(struct hpu_test *t)
{
	return db_rd(t, DB(UQ, CI)) + hpu_rd(t, REG_Q(1, CI));
}

/* Kernel and user jobs from this thread, the engine on its own. */
static void hpu_case_engine_thread(struct hpu_test *t)
{
	const unsigned int jobs = 40;
	unsigned int i;

	uq_setup(t, UQ);
	HPU_CHECK_EQ(t, run_threaded(t, jobs, submit_mixed, mixed_done), jobs);
	HPU_CHECK_EQ(t, sync_value(t, 0), jobs);
	EXPECT_DONE(t, 1);
	UQ_EXPECT_IDLE(t, UQ, 0);
	for (i = 0; i < UQ_ENTRIES; i++)
		HPU_CHECK_EQ(t, uq_status(t, UQ, i), 0);
}

/* ---- warm reset (1.7) ---- */

/* The registers a warm reset keeps, in the order of enum below. */
static const uint32_t uq_kept_regs[] = {
	HPU_UQ_RING_LO, HPU_UQ_RING_HI, HPU_UQ_RING_SIZE, HPU_UQ_ASID, HPU_UQ_PI, HPU_UQ_CI,
	HPU_UQ_ERRORS, HPU_UQ_ARM, HPU_UQ_STATUS,
};

static void uq_regs(struct hpu_test *t, unsigned int u, uint32_t *v)
{
	size_t i;

	for (i = 0; i < HPU_ARRAY_SIZE(uq_kept_regs); i++)
		v[i] = hpu_rd(t, HPU_REG_UQ(u, uq_kept_regs[i]));
}

/* A warm reset, and the user queue's registers as they were; nothing runs until READY. */
static void uq_warm_reset(struct hpu_test *t, unsigned int u)
{
	uint32_t before[HPU_ARRAY_SIZE(uq_kept_regs)], after[HPU_ARRAY_SIZE(uq_kept_regs)];
	size_t i;

	uq_regs(t, u, before);
	hpu_wr(t, HPU_REG_RESET, HPU_RESET_KEY_WARM);
	run(t);
	uq_regs(t, u, after);
	for (i = 0; i < HPU_ARRAY_SIZE(uq_kept_regs); i++)
		HPU_CHECK_EQ(t, after[i], before[i]);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_BOOT_STATUS), HPU_FW_BOOT_IDLE);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_UQ_IRQ_PENDING), 0);
}

/* The user queues' memory mapped in the test context. */
static void uq_maps(struct hpu_test *t)
{
	pt_map_host(t, ASID, UQ_RING_OFF(0), HPU_NUM_UQ * 0x1000u);
	pt_map_host(t, ASID, UQ_CB_OFF(0, 0), HPU_NUM_UQ * UQ_ENTRIES * UQ_CB_SIZE);
	pt_map_host(t, ASID, BIG_CB_OFF, HPU_CB_MAX_SIZE);
}

/* The driver after a warm reset: the context table again, rings, then the boot. */
static void uq_warm_setup(struct hpu_test *t)
{
	setup_maps(t);
	uq_maps(t);
	setup_boot(t);
}

/* A job parked on its WAIT and one queued behind it go on after the next READY. */
static void hpu_case_warm_kept(struct hpu_test *t)
{
	uq_setup(t, UQ);
	hpu_wr(t, REG_UQ(UQ, ARM), HPU_UQ_ARMED);
	uq_submit_sync(t, UQ, HPU_PKT_WAIT, 0, 1, 1);
	uq_submit_sync(t, UQ, HPU_PKT_SIGNAL, 1, 1, 2);
	run(t);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_UQ(UQ, STATUS)), HPU_Q_STATUS_WAITING);
	uq_warm_reset(t, UQ);
	hdm_st_le32(t->mem + SYNC_OFF, 1);
	run(t);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_UQ(UQ, CI)), 0);
	HPU_CHECK_EQ(t, uq_status(t, UQ, 0), STATUS_UNSET);
	/* A job pushed before READY (its owner does not know of the reset) is kept, and waits. */
	uq_submit_sync(t, UQ, HPU_PKT_SIGNAL, 2, 1, 3);
	run(t);
	hpu_test_expect_clean(t, __LINE__);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_UQ(UQ, PI)), 3);
	HPU_CHECK_EQ(t, uq_status(t, UQ, 2), STATUS_UNSET);
	uq_warm_setup(t);
	run(t);
	UQ_EXPECT_IDLE(t, UQ, 0);
	HPU_CHECK_EQ(t, db_rd(t, DB(UQ, CI)), 3);
	HPU_CHECK_EQ(t, uq_status(t, UQ, 0), 0);
	HPU_CHECK_EQ(t, uq_status(t, UQ, 1), 0);
	HPU_CHECK_EQ(t, uq_status(t, UQ, 2), 0);
	HPU_CHECK_EQ(t, sync_value(t, 1), 1);
	HPU_CHECK_EQ(t, sync_value(t, 2), 1);
	/* ARM was kept: CI's move interrupted. */
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_UQ_IRQ_PENDING), 1u << UQ);
}

/*
 * A long copy, made to yield (a kernel job pushed meanwhile is ready) and parked when
 * the warm reset comes from that kernel job's DMA: after the boot it goes on and ends
 * to the bit.
 */
static bool warm_fired, warm_pushed;

static void warm_hook(struct hpu_test *t)
{
	struct hdm_qman *qman = &t->core->qman;
	struct hpu_cb cb = { .len = 0 };

	if (warm_fired || qman->current < 0)
		return;
	if ((unsigned int)qman->current == HDM_QMAN_UQ(UQ)) {
		if (!warm_pushed) {
			warm_pushed = true;
			cb_nop(&cb);
			submit_user(t, 1, &cb, 8);
		}
		qman->queues[HDM_QMAN_UQ(UQ)].job.yield_ns = 0;
		return;
	}
	if (!qman->queues[HDM_QMAN_UQ(UQ)].parked)
		return;
	warm_fired = true;
	hpu_wr(t, HPU_REG_RESET, HPU_RESET_KEY_WARM);
}

static void hpu_case_warm_resumed(struct hpu_test *t)
{
	struct hpu_cb cb = { .len = 0 };

	uq_setup(t, UQ);
	fill_pattern(t->mem + SRC_OFF, BUF_SIZE, 17);
	cb_dma(&cb, VA_HBM, VA_HOST + SRC_OFF, BUF_SIZE, 0);
	cb_dma(&cb, VA_HOST + DST_OFF, VA_HBM, BUF_SIZE, 0);
	uq_submit(t, UQ, &cb, 7);
	warm_fired = false;
	warm_pushed = false;
	t->on_dma = warm_hook;
	run(t);
	t->on_dma = NULL;
	HPU_CHECK(t, warm_fired);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_UQ(UQ, STATUS)), HPU_Q_STATUS_BUSY);
	HPU_CHECK(t, memcmp(t->mem + DST_OFF, t->mem + SRC_OFF, BUF_SIZE));
	HPU_EXPECT_CLEAN(t);
	uq_warm_setup(t);
	run(t);
	UQ_EXPECT_IDLE(t, UQ, 0);
	HPU_CHECK_EQ(t, uq_status(t, UQ, 0), 0);
	HPU_CHECK(t, !memcmp(t->mem + DST_OFF, t->mem + SRC_OFF, BUF_SIZE));
}

/*
 * The job in the engine when the warm reset comes does not yield (hung): it ends
 * ABORTED after the next READY, status written back, CI past it; the next one runs.
 */
static void hpu_case_warm_dropped(struct hpu_test *t)
{
	pthread_t engine;
	bool started;

	uq_setup(t, UQ);
	hpu_wr(t, HPU_REG_FI_SELECT, HPU_FAULT_ENGINE_HANG);
	hpu_wr(t, HPU_REG_FI_TIMES, 1);
	hpu_wr(t, HPU_REG_FI_PROB, HDM_FAULT_ALWAYS);
	hpu_wr(t, HPU_REG_FI_ASID, HPU_FI_ANY_ASID);
	hpu_wr(t, HPU_REG_FI_CTRL, HPU_FI_CTRL_ARM);
	uq_submit_sync(t, UQ, HPU_PKT_SIGNAL, 0, 1, 1);
	uq_submit_sync(t, UQ, HPU_PKT_SIGNAL, 1, 1, 2);
	started = !pthread_create(&engine, NULL, engine_thread, t->core);
	HPU_CHECK(t, started);
	while (started && !hpu_rd(t, HPU_REG_FI_INJECTED))
		sleep_tick();
	hpu_wr(t, HPU_REG_RESET, HPU_RESET_KEY_WARM);
	while (started && hpu_rd(t, REG_UQ(UQ, STATUS)) & HPU_Q_STATUS_ENGINE)
		sleep_tick();
	HPU_CHECK_EQ(t, hpu_rd(t, REG_UQ(UQ, STATUS)), HPU_Q_STATUS_BUSY);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_UQ(UQ, CI)), 0);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_UQ(UQ, PI)), 2);
	HPU_EXPECT_CLEAN(t);
	uq_warm_setup(t);
	while (started && db_rd(t, DB(UQ, CI)) != 2)
		sleep_tick();
	if (started) {
		hdm_core_engine_stop(t->core);
		pthread_join(engine, NULL);
	}
	HPU_CHECK_EQ(t, uq_status(t, UQ, 0), HPU_UQ_STATUS_ABORTED);
	HPU_CHECK_EQ(t, uq_status(t, UQ, 1), 0);
	HPU_CHECK_EQ(t, sync_value(t, 0), 0);
	HPU_CHECK_EQ(t, sync_value(t, 1), 1);
	expect_event(t, HPU_EVENT_ABORTED, EVQ(UQ), ASID, HPU_ENGINE_QMAN, 1, 0, 1, __LINE__);
	UQ_EXPECT_IDLE(t, UQ, 1);
}

/*
 * On the engine's thread, warm resets while the engine is inside a user queue's
 * copy through HBM and back, at host accesses across the job (from its
 * descriptor's fetch to the last step before its last): the engine waits at each
 * until the reset is under way, yields within its slice, and the job is kept
 * parked; after the next READY it goes on and ends to the bit.
 */
#define WARM_POINTS 8u
#define WARM_TICKS 20000u /* of sleep_tick(): 20 s for a loaded host */

static unsigned int warm_dmas, warm_at;
static bool warm_inside;

static void warm_engine_hook(struct hpu_test *t)
{
	const struct timespec poll = { .tv_nsec = 20000 };
	unsigned int polls = 0;

	if (t->core->qman.current != (int)HDM_QMAN_UQ(UQ) || ++warm_dmas != warm_at)
		return;
	__atomic_store_n(&warm_inside, true, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&t->core->qman.quiesce, __ATOMIC_RELAXED) &&
	       ++polls < WARM_TICKS * 50)
		nanosleep(&poll, NULL);
}

/* Wait until cond() holds; whether it did. */
static bool warm_wait(struct hpu_test *t, bool (*cond)(struct hpu_test *t))
{
	unsigned int ticks = 0;

	while (!cond(t) && ++ticks < WARM_TICKS)
		sleep_tick();
	return cond(t);
}

static bool warm_in_engine(struct hpu_test *t HDM_UNUSED)
{
	return __atomic_load_n(&warm_inside, __ATOMIC_ACQUIRE);
}

static bool warm_left_engine(struct hpu_test *t)
{
	return !(hpu_rd(t, REG_UQ(UQ, STATUS)) & HPU_Q_STATUS_ENGINE);
}

static bool warm_job_ended(struct hpu_test *t)
{
	return db_rd(t, DB(UQ, CI)) == db_rd(t, DB(UQ, PI));
}

static void hpu_case_warm_in_engine(struct hpu_test *t)
{
	struct hpu_cb cb = { .len = 0 };
	unsigned int i, total;
	pthread_t engine;
	bool started;

	uq_setup(t, UQ);
	fill_pattern(t->mem + SRC_OFF, BUF_SIZE, 23);
	cb_dma(&cb, VA_HBM, VA_HOST + SRC_OFF, BUF_SIZE, 0);
	cb_dma(&cb, VA_HOST + DST_OFF, VA_HBM, BUF_SIZE, 0);
	/* Its host accesses, counted in a run on this thread; the last is its status. */
	warm_dmas = 0;
	warm_at = 0;
	t->on_dma = warm_engine_hook;
	uq_submit(t, UQ, &cb, 1);
	run(t);
	UQ_EXPECT_IDLE(t, UQ, 0);
	total = warm_dmas;
	printf("# the job's host accesses: %u\n", total);
	started = !pthread_create(&engine, NULL, engine_thread, t->core);
	HPU_CHECK(t, started);
	for (i = 0; started && i < WARM_POINTS && !t->failed; i++) {
		memset(t->mem + DST_OFF, 0, BUF_SIZE);
		warm_dmas = 0;
		warm_at = 1 + i * (total - 3) / (WARM_POINTS - 1);
		__atomic_store_n(&warm_inside, false, __ATOMIC_RELAXED);
		uq_submit(t, UQ, &cb, 2 + i);
		HPU_CHECK(t, warm_wait(t, warm_in_engine));
		hpu_wr(t, HPU_REG_RESET, HPU_RESET_KEY_WARM);
		HPU_CHECK(t, warm_wait(t, warm_left_engine));
		HPU_CHECK_EQ(t, hpu_rd(t, REG_UQ(UQ, STATUS)), HPU_Q_STATUS_BUSY);
		HPU_CHECK_EQ(t, hpu_rd(t, REG_UQ(UQ, CI)), i + 1);
		HPU_CHECK(t, memcmp(t->mem + DST_OFF, t->mem + SRC_OFF, BUF_SIZE));
		uq_warm_setup(t);
		HPU_CHECK(t, warm_wait(t, warm_job_ended));
		HPU_CHECK(t, warm_wait(t, warm_left_engine));
		UQ_EXPECT_IDLE(t, UQ, 0);
		HPU_CHECK_EQ(t, uq_status(t, UQ, i + 1), 0);
		HPU_CHECK(t, !memcmp(t->mem + DST_OFF, t->mem + SRC_OFF, BUF_SIZE));
	}
	if (started) {
		hdm_core_engine_stop(t->core);
		pthread_join(engine, NULL);
	}
	t->on_dma = NULL;
}

/* ---- register rules ---- */

static void hpu_case_doorbell_rules(struct hpu_test *t)
{
	static const struct {
		uint64_t offset;
		unsigned int size;
	} bad[] = {
		{ DB(UQ, PI), 1 }, { DB(UQ, PI), 2 }, { DB(UQ, PI), 8 }, { DB(UQ, PI) + 2, 4 },
		{ DB(UQ, PI) + 1, 1 }, { DB(UQ, ERRORS) + 4, 4 }, { DB_PAGE(UQ) + 0xffc, 4 },
		{ DB_PAGE(HPU_NUM_UQ), 4 }, { UINT64_MAX - 3, 4 },
	};
	const struct hpu_uq_desc empty = { .cb_va = VA_UNMAPPED };
	size_t i;

	/* Before the firmware is up, a bound queue's doorbell is taken, but nothing runs. */
	uq_bind(t, UQ, ASID, UQ_VA(UQ_RING_OFF(UQ)), UQ_ENTRIES);
	HPU_EXPECT_CLEAN(t);
	db_wr(t, DB(UQ, PI), 1);
	run(t);
	HPU_EXPECT_CLEAN(t);
	HPU_CHECK_EQ(t, db_rd(t, DB(UQ, PI)), 1);
	HPU_CHECK_EQ(t, db_rd(t, DB(UQ, CI)), 0);
	/* Disabled once its ring is empty again. */
	hpu_wr(t, REG_UQ(UQ, CTRL), HPU_Q_CTRL_RESET);
	hpu_wr(t, REG_UQ(UQ, RING_SIZE), 0);
	HPU_EXPECT_CLEAN(t);

	uq_setup(t, UQ);
	/* Three empty jobs in the ring, the first two handed over below. */
	for (i = 0; i < 3; i++)
		desc_put(uq_desc(t, UQ, (uint32_t)i), &empty);
	/* A disabled queue has no doorbell. */
	db_wr(t, DB(UQ + 1, PI), 1);
	HPU_EXPECT_ERROR(t, HPU_ERR_BAD_QUEUE);
	HPU_CHECK_EQ(t, db_rd(t, DB(UQ + 1, PI)), 0);
	/* PI goes neither past the ring nor back. */
	db_wr(t, DB(UQ, PI), UQ_ENTRIES + 1);
	HPU_EXPECT_ERROR(t, HPU_ERR_BAD_QUEUE);
	db_wr(t, DB(UQ, PI), 2);
	HPU_EXPECT_CLEAN(t);
	db_wr(t, DB(UQ, PI), 1);
	HPU_EXPECT_ERROR(t, HPU_ERR_BAD_QUEUE);
	db_wr(t, DB(UQ, PI), UINT32_MAX);
	HPU_EXPECT_ERROR(t, HPU_ERR_BAD_QUEUE);
	/* The page's other registers, and BAR0's mirror of PI, are the device's. */
	db_wr(t, DB(UQ, CI), 2);
	HPU_EXPECT_ERROR(t, HPU_ERR_READ_ONLY);
	db_wr(t, DB(UQ, ERRORS), 1);
	HPU_EXPECT_ERROR(t, HPU_ERR_READ_ONLY);
	hpu_wr(t, REG_UQ(UQ, PI), 3);
	HPU_EXPECT_ERROR(t, HPU_ERR_READ_ONLY);
	for (i = 0; i < HPU_ARRAY_SIZE(bad); i++) {
		HPU_CHECK_EQ(t, hdm_core_uq_db_read(t->core, bad[i].offset, bad[i].size), 0);
		HPU_EXPECT_ERROR(t, HPU_ERR_BAD_ACCESS);
		hdm_core_uq_db_write(t->core, bad[i].offset, 3, bad[i].size);
		HPU_EXPECT_ERROR(t, HPU_ERR_BAD_ACCESS);
	}
	HPU_CHECK_EQ(t, db_rd(t, DB(UQ, PI)), 2);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_UQ(UQ, PI)), 2);
	HPU_CHECK_EQ(t, db_rd(t, DB(UQ, CI)), 0);
	/* Only the two jobs handed over run. */
	run(t);
	UQ_EXPECT_IDLE(t, UQ, 0);
	HPU_CHECK_EQ(t, db_rd(t, DB(UQ, CI)), 2);
	HPU_CHECK_EQ(t, uq_status(t, UQ, 1), 0);
	HPU_CHECK_EQ(t, uq_status(t, UQ, 2), STATUS_UNSET);
}

static void hpu_case_ring_rules(struct hpu_test *t)
{
	static const uint32_t bad_sizes[] = { 1, 3, 6, 8192, UINT32_MAX };
	static const uint32_t good_sizes[] = { 2, 4096, 16 };
	static const uint32_t binding[] = { HPU_UQ_RING_LO, HPU_UQ_RING_HI, HPU_UQ_ASID };
	const uint64_t top = 1ull << HPU_MMU_VA_BITS;
	size_t i;

	setup(t);
	for (i = 0; i < HPU_ARRAY_SIZE(bad_sizes); i++) {
		hpu_wr(t, REG_UQ(0, RING_SIZE), bad_sizes[i]);
		HPU_EXPECT_ERROR(t, HPU_ERR_BAD_QUEUE);
		HPU_CHECK_EQ(t, hpu_rd(t, REG_UQ(0, RING_SIZE)), 0);
	}
	for (i = 0; i < HPU_ARRAY_SIZE(good_sizes); i++) {
		hpu_wr(t, REG_UQ(0, RING_SIZE), good_sizes[i]);
		HPU_CHECK_EQ(t, hpu_rd(t, REG_UQ(0, RING_SIZE)), good_sizes[i]);
	}
	HPU_EXPECT_CLEAN(t);

	/* Enabled, the binding stays. */
	for (i = 0; i < HPU_ARRAY_SIZE(binding); i++) {
		hpu_wr(t, HPU_REG_UQ(0, binding[i]), 0x1000);
		HPU_EXPECT_ERROR(t, HPU_ERR_BAD_QUEUE);
		HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_UQ(0, binding[i])), 0);
	}

	/* Disabled, it may change; the ASID must exist. */
	hpu_wr(t, REG_UQ(0, RING_SIZE), 0);
	hpu_wr(t, REG_UQ(0, ASID), HPU_MMU_NUM_ASIDS);
	HPU_EXPECT_ERROR(t, HPU_ERR_BAD_QUEUE);
	hpu_wr(t, REG_UQ(0, ASID), HPU_MMU_NUM_ASIDS - 1);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_UQ(0, ASID)), HPU_MMU_NUM_ASIDS - 1);

	/* A ring of descriptors, aligned, ending at or below 2^48. */
	hpu_wr(t, REG_UQ(0, RING_LO), 0x1010);
	hpu_wr(t, REG_UQ(0, RING_SIZE), 16);
	HPU_EXPECT_ERROR(t, HPU_ERR_BAD_QUEUE);
	hpu_wr(t, REG_UQ(0, RING_LO), (uint32_t)(top - 16 * sizeof(struct hpu_uq_desc)));
	hpu_wr(t, REG_UQ(0, RING_HI), (uint32_t)(top >> 32) - 1);
	hpu_wr(t, REG_UQ(0, RING_SIZE), 32);
	HPU_EXPECT_ERROR(t, HPU_ERR_BAD_QUEUE);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_UQ(0, RING_SIZE)), 0);
	hpu_wr(t, REG_UQ(0, RING_SIZE), 16);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_UQ(0, RING_SIZE)), 16);
	hpu_wr(t, REG_UQ(0, RING_SIZE), 0);
	hpu_wr(t, REG_UQ(0, RING_LO), 0);
	hpu_wr(t, REG_UQ(0, RING_HI), (uint32_t)(top >> 32));
	hpu_wr(t, REG_UQ(0, RING_SIZE), 2);
	HPU_EXPECT_ERROR(t, HPU_ERR_BAD_QUEUE);
	hpu_wr(t, REG_UQ(0, RING_HI), UINT32_MAX);
	hpu_wr(t, REG_UQ(0, RING_SIZE), 2);
	HPU_EXPECT_ERROR(t, HPU_ERR_BAD_QUEUE);
	HPU_EXPECT_CLEAN(t);
}

/* While jobs are queued the size stays; an accepted size empties the ring and its counts. */
static void hpu_case_ring_size_busy(struct hpu_test *t)
{
	const struct hpu_uq_desc fault = { .cb_va = VA_UNMAPPED, .cb_size = 8, .tag = 1 };

	uq_setup(t, UQ);
	uq_push(t, UQ, &fault);
	hpu_wr(t, REG_UQ(UQ, RING_SIZE), 8);
	HPU_EXPECT_ERROR(t, HPU_ERR_BAD_QUEUE);
	hpu_wr(t, REG_UQ(UQ, RING_SIZE), 0);
	HPU_EXPECT_ERROR(t, HPU_ERR_BAD_QUEUE);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_UQ(UQ, RING_SIZE)), UQ_ENTRIES);
	run(t);
	EXPECT_EVENT(t, HPU_EVENT_MMU_FAULT, EVQ(UQ), ASID, HPU_ENGINE_QMAN, 1, VA_UNMAPPED);
	UQ_EXPECT_IDLE(t, UQ, 1);
	HPU_CHECK_EQ(t, db_rd(t, DB(UQ, CI)), 1);

	hpu_wr(t, REG_UQ(UQ, RING_SIZE), 8);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_UQ(UQ, RING_SIZE)), 8);
	HPU_CHECK_EQ(t, db_rd(t, DB(UQ, PI)), 0);
	HPU_CHECK_EQ(t, db_rd(t, DB(UQ, CI)), 0);
	HPU_CHECK_EQ(t, db_rd(t, DB(UQ, ERRORS)), 0);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_UQ(UQ, ERRORS)), 0);
	HPU_EXPECT_CLEAN(t);
}

static void hpu_case_register_rules(struct hpu_test *t)
{
	static const uint32_t read_only[] = { HPU_UQ_PI, HPU_UQ_CI, HPU_UQ_STATUS, HPU_UQ_ERRORS,
					      HPU_UQ_DEFERRED_US };
	static const uint32_t holes[] = {
		HPU_REG_UQ(0, HPU_UQ_DEFERRED_US + 4), HPU_REG_UQ(HPU_NUM_UQ - 1, 0x3c),
		HPU_REG_UQ(HPU_NUM_UQ, 0), HPU_REG_UQ_BASE - 4, HPU_REG_UQ_IRQ_PENDING - 4,
		HPU_REG_UQ_IRQ_PENDING + 4,
	};
	size_t i;

	uq_setup(t, UQ);
	for (i = 0; i < HPU_ARRAY_SIZE(read_only); i++) {
		hpu_wr(t, HPU_REG_UQ(UQ, read_only[i]), 1);
		HPU_EXPECT_ERROR(t, HPU_ERR_READ_ONLY);
		HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_UQ(UQ, read_only[i])), 0);
	}
	HPU_CHECK_EQ(t, hpu_rd(t, REG_UQ(UQ, CTRL)), 0);
	hpu_wr(t, REG_UQ(UQ, ARM), 2);
	HPU_EXPECT_ERROR(t, HPU_ERR_BAD_CTRL);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_UQ(UQ, ARM)), 0);
	hpu_wr(t, REG_UQ(UQ, ARM), 1);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_UQ(UQ, ARM)), 1);
	hpu_wr(t, REG_UQ(UQ, ARM), 0);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_UQ(UQ, ARM)), 0);
	hpu_wr(t, HPU_REG_UQ_IRQ_PENDING, UINT32_MAX);
	HPU_EXPECT_CLEAN(t);
	for (i = 0; i < HPU_ARRAY_SIZE(holes); i++) {
		HPU_CHECK_EQ(t, hpu_rd(t, holes[i]), 0);
		HPU_EXPECT_ERROR(t, HPU_ERR_BAD_ACCESS);
		hpu_wr(t, holes[i], 1);
		HPU_EXPECT_ERROR(t, HPU_ERR_BAD_ACCESS);
	}
	/* The last queue's registers are where the header says. */
	uq_bind(t, HPU_NUM_UQ - 1, 3, 0x2000, 4);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_UQ(HPU_NUM_UQ - 1, ASID)), 3);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_UQ(HPU_NUM_UQ - 1, RING_SIZE)), 4);
	HPU_EXPECT_CLEAN(t);
}

/* ---- the list ---- */

static const struct hpu_test_case hpu_tests[] = {
	{ "a job runs, its status is written back, CI advances", hpu_case_job_runs },
	{ "empty and largest jobs", hpu_case_job_sizes },
	{ "unmapped ring: MMU fault, tag 0", hpu_case_ring_unmapped },
	{ "ring, buffer and packets are translated in the bound context", hpu_case_bound_context },
	{ "unmapped command buffer: MMU fault", hpu_case_cb_unmapped },
	{ "ring and command buffer in HBM", hpu_case_ring_in_hbm },
	{ "another context's memory is out of reach", hpu_case_isolation },
	{ "privileged packets fail the job", hpu_case_privileged },
	{ "status, then event, then CI", hpu_case_end_order },
	{ "status on a read-only ring is lost, the job counts", hpu_case_status_unwritable },
	{ "ARM raises the UQ interrupt once", hpu_case_arm },
	{ "queue reset of a waiting job", hpu_case_reset_waiting },
	{ "queue reset of queued jobs", hpu_case_reset_queued },
	{ "queue reset while a copy runs", hpu_case_reset_running },
	{ "device reset disables user queues", hpu_case_device_reset },
	{ "device reset while a user job runs", hpu_case_device_reset_running },
	{ "round robin with kernel queues", hpu_case_round_robin },
	{ "a long job yields to other queues after its slice", hpu_case_time_slice },
	{ "a doorbell re-checks waits", hpu_case_doorbell_rechecks },
	{ "engine on its own thread", hpu_case_engine_thread },
	{ "doorbell page rules", hpu_case_doorbell_rules },
	{ "RING_SIZE, ring and ASID rules", hpu_case_ring_rules },
	{ "RING_SIZE while jobs are queued", hpu_case_ring_size_busy },
	{ "read-only registers, ARM, holes", hpu_case_register_rules },
	{ "bad descriptors: size, flags, pad", hpu_case_bad_desc },
	{ "warm reset keeps a user queue; its jobs go on after READY", hpu_case_warm_kept },
	{ "warm reset of a yielded copy: it goes on after READY, to the bit",
	  hpu_case_warm_resumed },
	{ "warm reset drops the job in the engine: ABORTED after READY", hpu_case_warm_dropped },
	{ "warm resets of the job in the engine: kept at a yield point, ends to the bit",
	  hpu_case_warm_in_engine },
};

int main(void)
{
	return hpu_run_suite(hpu_tests, HPU_ARRAY_SIZE(hpu_tests));
}
