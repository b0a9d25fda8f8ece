/* SPDX-License-Identifier: MIT */
/*
 * Host unit test of the hpu device core's command-submission path: HBM,
 * MMU, queues, packets and events, driven through BAR0 and BAR4 only, with
 * a host buffer standing in for guest memory.  The engine runs
 * synchronously (hdm_core_engine_run()) except in the thread test, so
 * every case is deterministic.  Prints TAP.
 */
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hdm_internal.h"
#include "hdm_harness.h"

/* ---- command buffers ---- */

static void cb_call(struct hpu_cb *cb, uint64_t addr, uint64_t size)
{
	cb_u32(cb, HPU_PKT_HEADER(HPU_PKT_CALL, 0));
	cb_u32(cb, 0);
	cb_u64(cb, addr);
	cb_u64(cb, size);
}

/* ---- HBM and BAR4 ---- */

static void hpu_case_hbm_lazy(struct hpu_test *t)
{
	struct hpu_cb cb = { .len = 0 };

	HPU_CHECK_EQ(t, hdm_core_hbm_chunks(t->core), 0);
	/* Untouched HBM reads as zeros and costs nothing. */
	HPU_CHECK_EQ(t, bar4_rd(t, HPU_MMU_REGION_SIZE - 8), 0);
	HPU_CHECK_EQ(t, hdm_core_hbm_chunks(t->core), 0);

	setup(t);
	/* The page tables share the first chunk. */
	HPU_CHECK_EQ(t, hdm_core_hbm_chunks(t->core), 1);
	t->mem[SRC_OFF] = 0x5a;
	cb_dma(&cb, VA_HBM + 12345, VA_HOST + SRC_OFF, 1, 0);
	cb_dma(&cb, VA_HOST + DST_OFF, VA_HBM + 12345, 1, 0);
	submit_user(t, 0, &cb, 1);
	run(t);
	EXPECT_DONE(t, 0);
	HPU_CHECK_EQ(t, t->mem[DST_OFF], 0x5a);
	HPU_CHECK_EQ(t, hdm_core_hbm_chunks(t->core), 2);
}

static void hpu_case_bar4(struct hpu_test *t)
{
	static const struct {
		uint64_t offset;
		unsigned int size;
	} bad[] = {
		{ 0x100, 1 }, { 0x100, 2 }, { 0x100, 16 }, { 0x104, 8 }, { 0x102, 4 },
		{ HPU_MMU_REGION_SIZE, 4 }, { HPU_MMU_REGION_SIZE - 4, 8 }, { UINT64_MAX - 7, 8 },
	};
	size_t i;

	bar4_wr(t, 0x100, 0x1122334455667788ull);
	HPU_CHECK_EQ(t, bar4_rd(t, 0x100), 0x1122334455667788ull);
	HPU_CHECK_EQ(t, hdm_core_mmu_read(t->core, 0x100, 4), 0x55667788);
	HPU_CHECK_EQ(t, hdm_core_mmu_read(t->core, 0x104, 4), 0x11223344);
	hdm_core_mmu_write(t->core, HPU_MMU_REGION_SIZE - 4, 0xcafef00d, 4);
	HPU_CHECK_EQ(t, hdm_core_mmu_read(t->core, HPU_MMU_REGION_SIZE - 4, 4), 0xcafef00d);
	HPU_EXPECT_CLEAN(t);
	for (i = 0; i < HPU_ARRAY_SIZE(bad); i++) {
		HPU_CHECK_EQ(t, hdm_core_mmu_read(t->core, bad[i].offset, bad[i].size), 0);
		HPU_EXPECT_ERROR(t, HPU_ERR_BAD_ACCESS);
		hdm_core_mmu_write(t->core, bad[i].offset, UINT64_MAX, bad[i].size);
		HPU_EXPECT_ERROR(t, HPU_ERR_BAD_ACCESS);
	}
	HPU_CHECK_EQ(t, bar4_rd(t, 0x100), 0x1122334455667788ull);
}

/* ---- copies ---- */

struct hpu_copy_case {
	const char *name;
	uint32_t size;
	uint32_t src_off; /* into SRC */
	uint32_t hbm_off; /* into the HBM buffer */
	uint32_t dst_off; /* into DST */
};

static const struct hpu_copy_case hpu_copy_cases[] = {
	{ "1 byte", 1, 0, 0, 0 },
	{ "4095 bytes, unaligned", 4095, 1, 4093, 3 },
	{ "4097 bytes, unaligned", 4097, 4095, 7, 2 },
	{ "2 MiB + 3 across HBM chunks", (2u << 20) + 3, 5, (512u << 10) + 11, 4091 },
};

/* host -> HBM -> host in one job, then check the bytes and their neighbours. */
static void hpu_test_copy(struct hpu_test *t, const struct hpu_copy_case *c)
{
	uint8_t *src = t->mem + SRC_OFF + c->src_off;
	uint8_t *dst = t->mem + DST_OFF + c->dst_off;
	struct hpu_cb cb = { .len = 0 };

	setup(t);
	fill_pattern(src, c->size, c->size);
	memset(t->mem + DST_OFF, 0xee, BUF_SIZE);
	cb_dma(&cb, VA_HBM + c->hbm_off, VA_HOST + SRC_OFF + c->src_off, c->size, 0);
	cb_dma(&cb, VA_HOST + DST_OFF + c->dst_off, VA_HBM + c->hbm_off, c->size, 0);
	submit_user(t, 2, &cb, 7);
	run(t);
	EXPECT_DONE(t, 2);
	HPU_CHECK(t, !memcmp(dst, src, c->size));
	HPU_CHECK_EQ(t, completion(t, 2), COMPLETION_VALUE + 7);
	if (c->dst_off)
		HPU_CHECK_EQ(t, dst[-1], 0xee);
	HPU_CHECK_EQ(t, dst[c->size], 0xee);
	HPU_CHECK_EQ(t, t->bad_vectors, 0);
}

static void hpu_case_hbm_to_hbm(struct hpu_test *t)
{
	const uint32_t size = (1u << 20) + 100;
	struct hpu_cb cb = { .len = 0 };

	setup(t);
	fill_pattern(t->mem + SRC_OFF, size, 3);
	cb_dma(&cb, VA_HBM + 1, VA_HOST + SRC_OFF, size, 0);
	/* Crosses the 2 MiB chunk boundary of the HBM buffer. */
	cb_dma(&cb, VA_HBM + (2u << 20) - 4000, VA_HBM + 1, size, 0);
	cb_dma(&cb, VA_HOST + DST_OFF, VA_HBM + (2u << 20) - 4000, size, 0);
	submit_user(t, 1, &cb, 1);
	run(t);
	EXPECT_DONE(t, 1);
	HPU_CHECK(t, !memcmp(t->mem + DST_OFF, t->mem + SRC_OFF, size));
}

static void hpu_case_memset(struct hpu_test *t)
{
	struct hpu_cb cb = { .len = 0 };
	size_t chunks;
	uint32_t i;
	bool ok = true;

	setup(t);
	memset(t->mem + DST_OFF, 0xee, 3 * 8192);
	cb_dma(&cb, VA_HBM + 3, 0x1234565a, 10000, HPU_PKT_LIN_DMA_MEMSET);
	cb_dma(&cb, VA_HOST + DST_OFF + 1, VA_HBM + 3, 10000, 0);
	cb_dma(&cb, VA_HOST + DST_OFF + 16384 + 5, 0xa5, 5000, HPU_PKT_LIN_DMA_MEMSET);
	submit_user(t, 0, &cb, 1);
	run(t);
	EXPECT_DONE(t, 0);
	for (i = 0; i < 3 * 8192; i++) {
		uint8_t want = i >= 1 && i < 10001 ? 0x5a : i >= 16389 && i < 21389 ? 0xa5 : 0xee;

		ok &= t->mem[DST_OFF + i] == want;
	}
	HPU_CHECK(t, ok);

	/* Zeroing HBM nobody wrote allocates nothing. */
	chunks = hdm_core_hbm_chunks(t->core);
	cb.len = 0;
	cb_dma(&cb, VA_HBM + (2u << 20), 0, 1u << 20, HPU_PKT_LIN_DMA_MEMSET);
	submit_user(t, 0, &cb, 2);
	run(t);
	EXPECT_DONE(t, 0);
	HPU_CHECK_EQ(t, hdm_core_hbm_chunks(t->core), chunks);
}

static void hpu_case_huge_pages(struct hpu_test *t)
{
	const uint64_t va = 0x40000000ull, hbm = 6ull << 30;
	const uint32_t size = 3u << 20;
	struct hpu_cb cb = { .len = 0 };

	setup(t);
	pt_map_page(t, ASID, va, hbm, PTE_RW | HPU_PTE_HUGE);
	pt_map_page(t, ASID, va + HPU_MMU_HUGE_SIZE, hbm + HPU_MMU_HUGE_SIZE,
		    PTE_RW | HPU_PTE_HUGE);
	/* A huge leaf must be 2 MiB aligned. */
	pt_map_page(t, ASID, va + 2 * HPU_MMU_HUGE_SIZE, hbm + 4 * HPU_MMU_HUGE_SIZE + 4096,
		    PTE_RW | HPU_PTE_HUGE);
	fill_pattern(t->mem + SRC_OFF, size, 9);
	cb_dma(&cb, va + 100, VA_HOST + SRC_OFF, size, 0);
	cb_dma(&cb, VA_HOST + DST_OFF, va + 100, size, 0);
	submit_user(t, 3, &cb, 1);
	run(t);
	EXPECT_DONE(t, 3);
	HPU_CHECK(t, !memcmp(t->mem + DST_OFF, t->mem + SRC_OFF, size));

	cb.len = 0;
	cb_dma(&cb, va + 2 * HPU_MMU_HUGE_SIZE, VA_HOST + SRC_OFF, 8, 0);
	submit_user(t, 3, &cb, 2);
	run(t);
	EXPECT_EVENT(t, HPU_EVENT_MMU_FAULT, 3, ASID, DMA_ENGINE(3), 2, va + 2 * HPU_MMU_HUGE_SIZE);
}

/* ---- MMU faults ---- */

struct hpu_fault_case {
	const char *name;
	uint64_t dst, src; /* of a 8 KiB copy */
	uint32_t asid;
	void (*map)(struct hpu_test *t); /* extra mappings, or NULL */
	uint64_t fault_va;
	uint32_t copied; /* bytes that reached DST_OFF + EDGE_OFF before the fault */
};

#define VA_RO 0x500000000ull
#define VA_TOP ((1ull << HPU_MMU_VA_BITS) - HPU_MMU_PAGE_SIZE)
#define VA_EDGE 0x600000000ull /* one page mapped onto DST_OFF, the next not */
#define EDGE_OFF 4000u
/* Their own level-0 entries, so breaking them breaks nothing else. */
#define VA_FAR (1ull << 40)
#define VA_FAR2 (VA_FAR + (1ull << 39))

static void map_read_only(struct hpu_test *t)
{
	pt_map(t, ASID, VA_RO, HBM_BUF, 2 * HPU_MMU_PAGE_SIZE, HPU_PTE_PRESENT);
}

static void map_top(struct hpu_test *t)
{
	pt_map_page(t, ASID, VA_TOP, HBM_BUF, PTE_RW);
}

static void map_edge(struct hpu_test *t)
{
	pt_map_page(t, ASID, VA_EDGE, BUS(DST_OFF), PTE_HOST_RW);
}

static uint64_t pt_root(struct hpu_test *t)
{
	return bar4_rd(t, HPU_MMU_CTX_TABLE + ASID * 8) & HPU_PTE_ADDR_MASK;
}

/* Context 2: its root table lies outside the MMU region. */
static void map_root_outside(struct hpu_test *t)
{
	bar4_wr(t, HPU_MMU_CTX_TABLE + 2 * 8, HPU_MMU_REGION_SIZE | HPU_PTE_PRESENT);
}

/* A level-1 entry of the test context points outside the MMU region. */
static void map_table_outside(struct hpu_test *t)
{
	uint64_t l1 = pt_table(t, pt_root(t) + HPU_MMU_INDEX(VA_UNMAPPED, 0) * 8);

	bar4_wr(t, l1 + HPU_MMU_INDEX(VA_UNMAPPED, 1) * 8,
		(HPU_MMU_REGION_SIZE + 0x1000) | HPU_PTE_PRESENT);
}

/* A page past the end of HBM. */
static void map_past_hbm(struct hpu_test *t)
{
	pt_map_page(t, ASID, VA_UNMAPPED, hpu_test_cfg.hbm_size, PTE_RW);
}

/* HOST in a table pointer. */
static void map_host_table(struct hpu_test *t)
{
	uint64_t entry = pt_root(t) + HPU_MMU_INDEX(VA_FAR, 0) * 8;

	pt_table(t, entry);
	bar4_wr(t, entry, bar4_rd(t, entry) | HPU_PTE_HOST);
}

/* HUGE in a level-1 entry. */
static void map_huge_level1(struct hpu_test *t)
{
	uint64_t l1 = pt_table(t, pt_root(t) + HPU_MMU_INDEX(VA_FAR2, 0) * 8);

	bar4_wr(t, l1 + HPU_MMU_INDEX(VA_FAR2, 1) * 8, HBM_BUF | PTE_RW | HPU_PTE_HUGE);
}

static const struct hpu_fault_case hpu_fault_cases[] = {
	{ "unmapped VA", VA_UNMAPPED, VA_HOST + SRC_OFF, ASID, NULL, VA_UNMAPPED, 0 },
	{ "unmapped source", VA_HOST + DST_OFF, VA_UNMAPPED + 8, ASID, NULL, VA_UNMAPPED + 8, 0 },
	{ "write through a read-only leaf", VA_RO + 16, VA_HOST + SRC_OFF, ASID, map_read_only,
	  VA_RO + 16, 0 },
	{ "VA of 48 bits", 1ull << HPU_MMU_VA_BITS, VA_HOST + SRC_OFF, ASID, NULL,
	  1ull << HPU_MMU_VA_BITS, 0 },
	{ "copy running past 48 bits", VA_TOP, VA_HOST + SRC_OFF, ASID, map_top,
	  1ull << HPU_MMU_VA_BITS, 0 },
	{ "copy running into an unmapped page", VA_EDGE + EDGE_OFF, VA_HOST + SRC_OFF, ASID,
	  map_edge, VA_EDGE + 4096, 4096 - EDGE_OFF },
	{ "context not present", VA_HBM, VA_HOST + SRC_OFF, 5, NULL, VA_HOST + SRC_OFF, 0 },
	{ "root table outside the MMU region", VA_HBM, VA_HOST + SRC_OFF, 2, map_root_outside,
	  VA_HOST + SRC_OFF, 0 },
	{ "table outside the MMU region", VA_UNMAPPED, VA_HOST + SRC_OFF, ASID, map_table_outside,
	  VA_UNMAPPED, 0 },
	{ "HBM leaf past the end of HBM", VA_UNMAPPED, VA_HOST + SRC_OFF, ASID, map_past_hbm,
	  VA_UNMAPPED, 0 },
	{ "HOST bit in a table pointer", VA_FAR, VA_HOST + SRC_OFF, ASID, map_host_table, VA_FAR,
	  0 },
	{ "HUGE leaf at level 1", VA_FAR2, VA_HOST + SRC_OFF, ASID, map_huge_level1, VA_FAR2, 0 },
};

/* The job faults at the expected VA, nothing past it is written, its tail does not run. */
static void hpu_test_fault(struct hpu_test *t, const struct hpu_fault_case *c)
{
	struct hpu_cb cb = { .len = 0 };
	uint32_t i, wrong = 0;

	setup(t);
	if (c->map)
		c->map(t);
	fill_pattern(t->mem + SRC_OFF, 8192, 1);
	memset(t->mem + DST_OFF, 0xee, BUF_SIZE);
	cb_dma(&cb, c->dst, c->src, 8192, 0);
	cb_completion(&cb, BUS(COMPLETION_OFF(1)), COMPLETION_VALUE);
	submit(t, 1, &cb, cb.len - sizeof(struct hpu_pkt_write_completion), c->asid, 0x77);
	run(t);
	EXPECT_EVENT(t, HPU_EVENT_MMU_FAULT, 1, c->asid, DMA_ENGINE(1), 0x77, c->fault_va);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(1, CI)), 1);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(1, STATUS)), 0);
	HPU_CHECK_EQ(t, completion(t, 1), 0);
	/* Only the part of the copy before the fault landed in host memory. */
	for (i = 0; i < BUF_SIZE; i++) {
		bool copied = i >= EDGE_OFF && i < EDGE_OFF + c->copied;

		wrong += t->mem[DST_OFF + i] != (copied ? t->mem[SRC_OFF + i - EDGE_OFF] : 0xee);
	}
	HPU_CHECK_EQ(t, wrong, 0);
	HPU_CHECK_EQ(t, bar4_rd(t, 0), 0); /* context 0 untouched */
}

/* ---- isolation ---- */

static void hpu_case_asid_isolation(struct hpu_test *t)
{
	const uint64_t other_hbm = HBM_BUF + (64ull << 20);
	struct hpu_cb cb = { .len = 0 };
	uint8_t secret[64];

	setup(t);
	fill_pattern(t->mem + SRC_OFF, sizeof(secret), 42);
	memcpy(secret, t->mem + SRC_OFF, sizeof(secret));
	cb_dma(&cb, VA_HBM, VA_HOST + SRC_OFF, sizeof(secret), 0);
	submit_user(t, 0, &cb, 1);
	run(t);
	EXPECT_DONE(t, 0);

	/* Context 2 has only its own host page: the victim's VA does not exist for it. */
	pt_map_host(t, 2, DST_OFF, HPU_MMU_PAGE_SIZE);
	memset(t->mem + DST_OFF, 0, 4096);
	cb.len = 0;
	cb_dma(&cb, VA_HOST + DST_OFF, VA_HBM, sizeof(secret), 0);
	submit(t, 1, &cb, cb.len, 2, 2);
	run(t);
	EXPECT_EVENT(t, HPU_EVENT_MMU_FAULT, 1, 2, DMA_ENGINE(1), 2, VA_HBM);

	/* The same VA in context 2 reaches context 2's own HBM, in both directions. */
	pt_map(t, 2, VA_HBM, other_hbm, HPU_MMU_PAGE_SIZE, PTE_RW);
	cb.len = 0;
	cb_dma(&cb, VA_HBM, 0xff, sizeof(secret), HPU_PKT_LIN_DMA_MEMSET);
	cb_dma(&cb, VA_HOST + DST_OFF, VA_HBM, sizeof(secret), 0);
	submit(t, 1, &cb, cb.len, 2, 3);
	run(t);
	EXPECT_DONE(t, 1);
	HPU_CHECK_EQ(t, t->mem[DST_OFF], 0xff);

	/* The victim's data is intact. */
	cb.len = 0;
	cb_dma(&cb, VA_HOST + DST_OFF, VA_HBM, sizeof(secret), 0);
	submit_user(t, 0, &cb, 4);
	run(t);
	EXPECT_DONE(t, 0);
	HPU_CHECK(t, !memcmp(t->mem + DST_OFF, secret, sizeof(secret)));
}

/* ---- packets ---- */

static void hpu_case_privileged(struct hpu_test *t)
{
	struct hpu_cb cb = { .len = 0 };
	unsigned int misc;

	setup(t);
	/* The whole buffer is the user's: a completion in it is refused. */
	cb_nop(&cb);
	cb_completion(&cb, BUS(COMPLETION_OFF(0)), 1);
	submit(t, 0, &cb, cb.len, ASID, 9);
	run(t);
	EXPECT_EVENT(t, HPU_EVENT_PRIV_PACKET, 0, ASID, HPU_ENGINE_QMAN, 9, 8);
	HPU_CHECK_EQ(t, completion(t, 0), 0);

	cb.len = 0;
	cb_interrupt(&cb, 1);
	submit(t, 0, &cb, 8, ASID, 10);
	run(t);
	EXPECT_EVENT(t, HPU_EVENT_PRIV_PACKET, 0, ASID, HPU_ENGINE_QMAN, 10, 0);
	HPU_CHECK_EQ(t, t->bad_vectors, 0);

	/* From priv_offset on, they run. */
	misc = t->vector_irqs[HPU_MSIX_VEC_MISC];
	cb.len = 0;
	cb_nop(&cb);
	cb_completion(&cb, BUS(COMPLETION_OFF(0)), 0x1122334455667788ull);
	cb_interrupt(&cb, 3);
	cb_interrupt(&cb, 7);
	submit(t, 0, &cb, 8, ASID, 11);
	run(t);
	EXPECT_DONE(t, 0);
	HPU_CHECK_EQ(t, completion(t, 0), 0x1122334455667788ull);
	HPU_CHECK_EQ(t, t->vector_irqs[3], 1);
	HPU_CHECK_EQ(t, t->vector_irqs[7], 1);
	HPU_CHECK_EQ(t, t->vector_irqs[HPU_MSIX_VEC_MISC], misc);
}

/* One bad packet after a NOP, as 32-bit words; privileged ones sit in the driver's tail. */
struct hpu_illegal_case {
	const char *name;
	uint32_t words[8];
	uint32_t nwords;
	bool priv;
	bool truncated; /* runs past the end: nothing may follow it */
};

#define HDR(op, flags) HPU_PKT_HEADER(HPU_PKT_##op, flags)
#define SYNC_VA_LO ((uint32_t)(VA_HOST + SYNC_OFF))
#define SYNC_VA_HI ((uint32_t)((VA_HOST + SYNC_OFF) >> 32))

static const struct hpu_illegal_case hpu_illegal_cases[] = {
	{ "unknown opcode", { 0x7f, 0 }, .nwords = 2 },
	{ "unknown privileged opcode", { 0x82, 0 }, .nwords = 2, .priv = true },
	{ "reserved header bits", { HDR(NOP, 0) | 1u << 16, 0 }, .nwords = 2 },
	{ "unknown NOP flag", { HDR(NOP, 1), 0 }, .nwords = 2 },
	{ "unknown LIN_DMA flag", { HDR(LIN_DMA, 2), 0, SYNC_VA_LO, SYNC_VA_HI, SYNC_VA_LO + 64,
				    SYNC_VA_HI, 8, 0 }, .nwords = 8 },
	{ "NOP pad", { HDR(NOP, 0), 1 }, .nwords = 2 },
	{ "LIN_DMA pad", { HDR(LIN_DMA, 0), 1, SYNC_VA_LO, SYNC_VA_HI, SYNC_VA_LO + 64, SYNC_VA_HI,
			   8, 0 }, .nwords = 8 },
	{ "TIMESTAMP pad", { HDR(TIMESTAMP, 0), 1, SYNC_VA_LO, SYNC_VA_HI }, .nwords = 4 },
	{ "WRITE_COMPLETION pad", { HDR(WRITE_COMPLETION, 0), 1, (uint32_t)BUS(SYNC_OFF), 0, 1, 0 },
	  .nwords = 6, .priv = true },
	{ "packet running past the buffer", { HDR(LIN_DMA, 0), 0 }, .nwords = 2,
	  .truncated = true },
	{ "SIGNAL address not 4-byte aligned", { HDR(SIGNAL, 0), 1, SYNC_VA_LO + 2, SYNC_VA_HI },
	  .nwords = 4 },
	{ "WAIT address not 4-byte aligned", { HDR(WAIT, 0), 0, SYNC_VA_LO + 1, SYNC_VA_HI },
	  .nwords = 4 },
	{ "TIMESTAMP address not 8-byte aligned", { HDR(TIMESTAMP, 0), 0, SYNC_VA_LO + 4,
						    SYNC_VA_HI }, .nwords = 4 },
	{ "WRITE_COMPLETION address not 8-byte aligned",
	  { HDR(WRITE_COMPLETION, 0), 0, (uint32_t)BUS(SYNC_OFF) + 4, 0, 1, 0 }, .nwords = 6,
	  .priv = true },
	{ "INTERRUPT vector 0", { HDR(INTERRUPT, 0), 0 }, .nwords = 2, .priv = true },
	{ "INTERRUPT vector 8", { HDR(INTERRUPT, 0), HPU_MSIX_VECTORS }, .nwords = 2,
	  .priv = true },
};

static void hpu_test_illegal(struct hpu_test *t, const struct hpu_illegal_case *c)
{
	struct hpu_cb cb = { .len = 0 };
	uint32_t i, priv_offset;

	setup(t);
	cb_nop(&cb);
	for (i = 0; i < c->nwords; i++)
		cb_u32(&cb, c->words[i]);
	priv_offset = c->priv ? 8 : cb.len;
	if (!c->truncated)
		cb_completion(&cb, BUS(COMPLETION_OFF(2)), COMPLETION_VALUE);
	submit(t, 2, &cb, priv_offset, ASID, 5);
	run(t);
	EXPECT_EVENT(t, HPU_EVENT_ILLEGAL_PACKET, 2, ASID, HPU_ENGINE_QMAN, 5, 8);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(2, CI)), 1);
	HPU_CHECK_EQ(t, completion(t, 2), 0);
	HPU_CHECK_EQ(t, t->bad_vectors, 0);
	HPU_CHECK_EQ(t, hdm_ld_le64(t->mem + SYNC_OFF), 0);
}

static void hpu_case_timestamp(struct hpu_test *t)
{
	struct hpu_cb cb = { .len = 0 };
	uint64_t clock;

	setup(t);
	/* The boot read the clock too (the heartbeat counts from READY). */
	clock = t->clock;
	cb_timestamp(&cb, VA_HOST + SYNC_OFF + 8);
	cb_nop(&cb);
	cb_timestamp(&cb, VA_HBM + 16);
	cb_dma(&cb, VA_HOST + SYNC_OFF + 16, VA_HBM + 16, 8, 0);
	submit_user(t, 0, &cb, 1);
	run(t);
	EXPECT_DONE(t, 0);
	HPU_CHECK_EQ(t, hdm_ld_le64(t->mem + SYNC_OFF + 8), clock + HPU_TEST_CLOCK_TICK);
	HPU_CHECK_EQ(t, hdm_ld_le64(t->mem + SYNC_OFF + 16), clock + 2 * HPU_TEST_CLOCK_TICK);
}

/* ---- descriptors ---- */

struct hpu_desc_case {
	const char *name;
	struct hpu_queue_desc desc; /* cb_addr 0: the slot's own buffer */
	uint32_t event;
	uint64_t addr;
};

#define CB_ADDR_BAD 0x7000000000ull

static const struct hpu_desc_case hpu_desc_cases[] = {
	{ "size not a multiple of 8", { .cb_size = 12, .asid = ASID, .tag = 1 },
	  HPU_EVENT_ILLEGAL_PACKET, 0 },
	{ "size past the user maximum and tail", { .cb_size = HDM_JOB_CB_MAX + 8, .asid = ASID,
						     .tag = 2 }, HPU_EVENT_ILLEGAL_PACKET, 0 },
	{ "priv_offset past the size", { .cb_size = 8, .priv_offset = 16, .asid = ASID, .tag = 3 },
	  HPU_EVENT_ILLEGAL_PACKET, 0 },
	{ "unknown flags", { .cb_size = 8, .asid = ASID, .flags = 2, .tag = 4 },
	  HPU_EVENT_ILLEGAL_PACKET, 0 },
	{ "ASID out of range", { .cb_size = 8, .asid = HPU_MMU_NUM_ASIDS, .tag = 5 },
	  HPU_EVENT_ILLEGAL_PACKET, 0 },
	{ "command buffer outside guest memory", { .cb_addr = CB_ADDR_BAD, .cb_size = 8,
						     .asid = ASID, .tag = 6 },
	  HPU_EVENT_DMA_ERROR, CB_ADDR_BAD },
	{ "command buffer wrapping the bus", { .cb_addr = UINT64_MAX - 7, .cb_size = 16,
					       .asid = ASID, .tag = 7 },
	  HPU_EVENT_DMA_ERROR, UINT64_MAX - 7 },
};

static void hpu_test_desc(struct hpu_test *t, const struct hpu_desc_case *c)
{
	struct hpu_queue_desc d = c->desc;

	setup(t);
	if (!d.cb_addr)
		d.cb_addr = BUS(CB_OFF(3, 0));
	write_desc(t, 3, &d);
	run(t);
	EXPECT_EVENT(t, c->event, 3, d.asid, HPU_ENGINE_QMAN, d.tag, c->addr);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(3, CI)), 1);
}

static void hpu_case_desc_limits(struct hpu_test *t)
{
	struct hpu_queue_desc d = { .cb_addr = BUS(CB_OFF(0, 0)), .asid = HPU_MMU_NUM_ASIDS - 1 };
	struct hpu_cb cb = { .len = 0 };

	setup(t);
	/* An empty job, and the largest one, both run. */
	write_desc(t, 0, &d);
	while (cb.len < HDM_JOB_CB_MAX - sizeof(struct hpu_pkt_write_completion))
		cb_nop(&cb);
	cb_completion(&cb, BUS(COMPLETION_OFF(0)), 3);
	HPU_CHECK_EQ(t, cb.len, HDM_JOB_CB_MAX);
	submit(t, 0, &cb, HPU_CB_MAX_SIZE, ASID, 1);
	run(t);
	EXPECT_DONE(t, 0);
	HPU_CHECK_EQ(t, completion(t, 0), 3);
}

static void hpu_case_ring_unreadable(struct hpu_test *t)
{
	struct hpu_cb cb = { .len = 0 };

	setup(t);
	hpu_wr(t, REG_Q(1, RING_HI), 0x70);
	cb_nop(&cb);
	submit(t, 1, &cb, cb.len, ASID, 3);
	run(t);
	EXPECT_EVENT(t, HPU_EVENT_DMA_ERROR, 1, 0, HPU_ENGINE_QMAN, 0,
		     (0x70ull << 32) | (uint32_t)BUS(Q_RING_OFF(1)));
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(1, CI)), 1);
}

static void hpu_case_host_dma_error(struct hpu_test *t)
{
	const uint64_t bad = 0x7000000000ull;
	struct hpu_cb cb = { .len = 0 };

	setup(t);
	/* A host leaf whose bus address the bus refuses. */
	pt_map_page(t, ASID, VA_UNMAPPED, bad, PTE_HOST_RW);
	cb_dma(&cb, VA_UNMAPPED + 8, VA_HOST + SRC_OFF, 64, 0);
	submit_user(t, 0, &cb, 1);
	run(t);
	EXPECT_EVENT(t, HPU_EVENT_DMA_ERROR, 0, ASID, DMA_ENGINE(0), 1, bad + 8);
	HPU_CHECK_EQ(t, completion(t, 0), 0);

	cb.len = 0;
	cb_nop(&cb);
	cb_completion(&cb, bad, 1);
	submit(t, 0, &cb, 8, ASID, 2);
	run(t);
	EXPECT_EVENT(t, HPU_EVENT_DMA_ERROR, 0, ASID, HPU_ENGINE_QMAN, 2, bad);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(0, CI)), 2);
}

/* ---- sync objects ---- */

static void submit_sync(struct hpu_test *t, unsigned int q, uint32_t opcode, unsigned int i,
			uint32_t value, uint64_t tag)
{
	struct hpu_cb cb = { .len = 0 };

	cb_sync(&cb, opcode, SYNC_VA(i), value);
	submit_user(t, q, &cb, tag);
}

static void hpu_case_signal_wait(struct hpu_test *t)
{
	setup(t);
	submit_sync(t, 1, HPU_PKT_WAIT, 0, 2, 1);
	run(t);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(1, STATUS)), HPU_Q_STATUS_WAITING);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(1, CI)), 0);

	/* Other queues keep running while queue 1 waits. */
	submit_sync(t, 0, HPU_PKT_SIGNAL, 0, 1, 2);
	run(t);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(0, CI)), 1);
	HPU_CHECK_EQ(t, sync_value(t, 0), 1);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(1, STATUS)), HPU_Q_STATUS_WAITING);
	HPU_CHECK_EQ(t, completion(t, 1), 0);

	submit_sync(t, 0, HPU_PKT_SIGNAL, 0, 1, 3);
	run(t);
	EXPECT_DONE(t, 1);
	EXPECT_DONE(t, 0);
	HPU_CHECK_EQ(t, sync_value(t, 0), 2);
	HPU_CHECK_EQ(t, completion(t, 1), COMPLETION_VALUE + 1);
}

/* Two queues that wait on each other in turn, resolved within one run. */
static void hpu_case_signal_wait_crossed(struct hpu_test *t)
{
	struct hpu_cb cb = { .len = 0 };

	setup(t);
	cb_sync(&cb, HPU_PKT_WAIT, SYNC_VA(1), 1);
	cb_sync(&cb, HPU_PKT_SIGNAL, SYNC_VA(2), 1);
	submit_user(t, 0, &cb, 1);
	cb.len = 0;
	cb_sync(&cb, HPU_PKT_SIGNAL, SYNC_VA(1), 1);
	cb_sync(&cb, HPU_PKT_WAIT, SYNC_VA(2), 1);
	submit_user(t, 3, &cb, 2);
	run(t);
	EXPECT_DONE(t, 0);
	EXPECT_DONE(t, 3);
	HPU_CHECK_EQ(t, completion(t, 0), COMPLETION_VALUE + 1);
	HPU_CHECK_EQ(t, completion(t, 3), COMPLETION_VALUE + 2);
}

/* A sync object the CPU sets in host memory: any doorbell makes the device look again. */
static void hpu_case_wait_doorbell(struct hpu_test *t)
{
	struct hpu_cb cb = { .len = 0 };

	setup(t);
	submit_sync(t, 2, HPU_PKT_WAIT, 3, 5, 1);
	run(t);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(2, STATUS)), HPU_Q_STATUS_WAITING);
	hdm_st_le32(t->mem + SYNC_OFF + 12, 5);
	run(t);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(2, STATUS)), HPU_Q_STATUS_WAITING);
	cb_nop(&cb);
	submit_user(t, 0, &cb, 2);
	run(t);
	EXPECT_DONE(t, 2);
	EXPECT_DONE(t, 0);
}

static void hpu_case_wait_fault(struct hpu_test *t)
{
	struct hpu_cb cb = { .len = 0 };

	setup(t);
	cb_sync(&cb, HPU_PKT_WAIT, VA_UNMAPPED, 1);
	submit_user(t, 1, &cb, 1);
	run(t);
	EXPECT_EVENT(t, HPU_EVENT_MMU_FAULT, 1, ASID, HPU_ENGINE_QMAN, 1, VA_UNMAPPED);

	cb.len = 0;
	cb_sync(&cb, HPU_PKT_SIGNAL, VA_UNMAPPED + 4, 1);
	submit_user(t, 1, &cb, 2);
	run(t);
	EXPECT_EVENT(t, HPU_EVENT_MMU_FAULT, 1, ASID, HPU_ENGINE_QMAN, 2, VA_UNMAPPED + 4);

	/* A sync object on a read-only page can be waited on but not signalled. */
	pt_map_page(t, ASID, VA_RO, BUS(SYNC_OFF), HPU_PTE_PRESENT | HPU_PTE_HOST);
	cb.len = 0;
	cb_sync(&cb, HPU_PKT_WAIT, VA_RO, 0);
	cb_sync(&cb, HPU_PKT_SIGNAL, VA_RO, 1);
	submit_user(t, 1, &cb, 3);
	run(t);
	EXPECT_EVENT(t, HPU_EVENT_MMU_FAULT, 1, ASID, HPU_ENGINE_QMAN, 3, VA_RO);
	HPU_CHECK_EQ(t, sync_value(t, 0), 0);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(1, CI)), 3);
	HPU_CHECK_EQ(t, completion(t, 1), 0);
}

/* ---- queue reset and aborts ---- */

static void hpu_case_queue_reset_waiting(struct hpu_test *t)
{
	setup(t);
	submit_sync(t, 1, HPU_PKT_WAIT, 0, 1, 1);
	submit_sync(t, 1, HPU_PKT_SIGNAL, 1, 1, 2);
	run(t);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(1, STATUS)), HPU_Q_STATUS_WAITING);

	hpu_wr(t, REG_Q(1, CTRL), HPU_Q_CTRL_RESET);
	run(t);
	EXPECT_EVENT(t, HPU_EVENT_ABORTED, 1, ASID, HPU_ENGINE_QMAN, 1, 0);
	EXPECT_DONE(t, 1);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(1, CI)), 2);
	HPU_CHECK_EQ(t, completion(t, 1), 0);
	HPU_CHECK_EQ(t, sync_value(t, 1), 0); /* the queued job was dropped */

	/* The queue works again. */
	submit_sync(t, 1, HPU_PKT_SIGNAL, 1, 1, 3);
	run(t);
	EXPECT_DONE(t, 1);
	HPU_CHECK_EQ(t, sync_value(t, 1), 1);
}

static void hpu_case_queue_reset_idle(struct hpu_test *t)
{
	setup(t);
	/* Jobs not started yet are dropped at once, with no event. */
	submit_sync(t, 0, HPU_PKT_SIGNAL, 0, 1, 1);
	submit_sync(t, 0, HPU_PKT_SIGNAL, 0, 1, 2);
	hpu_wr(t, REG_Q(0, CTRL), HPU_Q_CTRL_RESET);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(0, CI)), 2);
	run(t);
	EXPECT_DONE(t, 0);
	HPU_CHECK_EQ(t, sync_value(t, 0), 0);

	hpu_wr(t, REG_Q(0, CTRL), HPU_Q_CTRL_RESET | 4);
	HPU_EXPECT_ERROR(t, HPU_ERR_BAD_CTRL);
	hpu_wr(t, REG_Q(0, CTRL), 0);
	HPU_EXPECT_CLEAN(t);
}

/* A big copy is cut at a step boundary when its queue is reset. */
static void hpu_case_abort_running(struct hpu_test *t)
{
	struct hpu_cb cb = { .len = 0 };

	setup(t);
	cb_dma(&cb, VA_HBM, VA_HOST + SRC_OFF, 2u << 20, 0);
	submit_user(t, 2, &cb, 1);
	submit_sync(t, 2, HPU_PKT_SIGNAL, 0, 1, 2);
	/* DMAs: descriptor, command buffer, then the copy's. */
	hook_at(t, 4, REG_Q(2, CTRL), HPU_Q_CTRL_RESET);
	run(t);
	HPU_CHECK_EQ(t, hpu_hook_countdown, 0);
	EXPECT_EVENT(t, HPU_EVENT_ABORTED, 2, ASID, DMA_ENGINE(2), 1, 0);
	EXPECT_DONE(t, 2);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(2, CI)), 2);
	HPU_CHECK_EQ(t, completion(t, 2), 0);
	HPU_CHECK_EQ(t, sync_value(t, 0), 0);
	/* A handful of 64 KiB steps, not 2 MiB, went through. */
	HPU_CHECK(t, t->dma_reads < 8);
}

/* A device reset while a job runs: the job is abandoned, HBM is cleared, nothing is posted. */
static void hpu_case_reset_running(struct hpu_test *t)
{
	struct hpu_cb cb = { .len = 0 };
	unsigned int writes;

	setup(t);
	fill_pattern(t->mem + SRC_OFF, 2u << 20, 5);
	cb_dma(&cb, VA_HBM, VA_HOST + SRC_OFF, 2u << 20, 0);
	submit_user(t, 0, &cb, 1);
	hook_at(t, 4, HPU_REG_RESET, HPU_RESET_KEY);
	writes = t->dma_writes;
	run(t);
	HPU_CHECK_EQ(t, hpu_hook_countdown, 0);
	HPU_CHECK_EQ(t, t->dma_writes, writes);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(0, STATUS)), 0);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(0, CI)), 0);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_BOOT_STATUS), HPU_FW_BOOT_IDLE);
	HPU_CHECK_EQ(t, hdm_core_hbm_chunks(t->core), 0);
	HPU_CHECK_EQ(t, bar4_rd(t, HPU_MMU_CTX_TABLE + ASID * 8), 0);
	HPU_EXPECT_CLEAN(t);

	/* And the device comes back. */
	t->on_dma = NULL;
	setup(t);
	cb.len = 0;
	cb_dma(&cb, VA_HBM, VA_HOST + SRC_OFF, 4096, 0);
	cb_dma(&cb, VA_HOST + DST_OFF, VA_HBM, 4096, 0);
	submit_user(t, 0, &cb, 2);
	run(t);
	EXPECT_DONE(t, 0);
	HPU_CHECK(t, !memcmp(t->mem + DST_OFF, t->mem + SRC_OFF, 4096));
}

static void hpu_case_device_reset(struct hpu_test *t)
{
	unsigned int q;

	setup(t);
	submit_sync(t, 3, HPU_PKT_WAIT, 0, 1, 1);
	submit_sync(t, 0, HPU_PKT_SIGNAL, 9, 1, 2);
	run(t);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(3, STATUS)), HPU_Q_STATUS_WAITING);
	HPU_CHECK(t, hdm_core_hbm_chunks(t->core) > 0);

	hpu_wr(t, HPU_REG_RESET, HPU_RESET_KEY);
	run(t);
	for (q = 0; q < HPU_NUM_QUEUES; q++) {
		HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(q, RING_LO)), 0);
		HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(q, RING_SIZE)), 0);
		HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(q, PI)), 0);
		HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(q, CI)), 0);
		HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(q, STATUS)), 0);
	}
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_EQ_RING_LO), 0);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_EQ_RING_SIZE), 0);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_EQ_PI), 0);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_EQ_CI), 0);
	HPU_CHECK_EQ(t, hdm_core_hbm_chunks(t->core), 0);
	HPU_CHECK_EQ(t, bar4_rd(t, HPU_MMU_CTX_TABLE + ASID * 8), 0);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_IRQ_MASK), UINT32_MAX);
	HPU_CHECK_EQ(t, hdm_ld_le32(t->mem + EQ_OFF), 0); /* the parked job left silently */
	HPU_EXPECT_CLEAN(t);
}

/* ---- events ---- */

static void submit_fault(struct hpu_test *t, unsigned int q, uint64_t tag)
{
	struct hpu_cb cb = { .len = 0 };

	cb_dma(&cb, VA_UNMAPPED, VA_HOST + SRC_OFF, 8, 0);
	submit_user(t, q, &cb, tag);
}

static void hpu_case_event_overflow(struct hpu_test *t)
{
	setup(t);
	hpu_wr(t, HPU_REG_EQ_RING_SIZE, 2);
	submit_fault(t, 0, 1);
	submit_fault(t, 0, 2);
	submit_fault(t, 0, 3);
	run(t);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(0, CI)), 3);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_EQ_PI), 2);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_EQ_STATUS), HPU_EQ_STATUS_OVERFLOW);
	HPU_CHECK_EQ(t, t->logs - t->logs_seen, 4); /* three failures, one drop */
	t->logs_seen = t->logs;
	HPU_CHECK_EQ(t, hdm_ld_le64(t->mem + EQ_OFF + offsetof(struct hpu_event, tag)), 1);
	HPU_CHECK_EQ(t, hdm_ld_le64(t->mem + EQ_OFF + 32 + offsetof(struct hpu_event, tag)), 2);

	hpu_wr(t, HPU_REG_EQ_CI, 2);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_EQ_STATUS), 0);
	submit_fault(t, 0, 4);
	run(t);
	HPU_CHECK_EQ(t, hdm_ld_le64(t->mem + EQ_OFF + offsetof(struct hpu_event, tag)), 4);
	t->logs_seen++;
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_EQ_PI), 3);
	hpu_wr(t, HPU_REG_EQ_CI, 3);
	HPU_EXPECT_CLEAN(t);
}

static void hpu_case_event_no_ring(struct hpu_test *t)
{
	setup(t);
	hpu_wr(t, HPU_REG_EQ_RING_SIZE, 0);
	hpu_wr(t, HPU_REG_IRQ_CAUSE, UINT32_MAX);
	submit_fault(t, 0, 1);
	run(t);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(0, CI)), 1);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_EQ_PI), 0);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_IRQ_CAUSE), 0);
	HPU_CHECK_EQ(t, t->logs - t->logs_seen, 2);
	HPU_CHECK_EQ(t, t->irqs, 0);
}

static void hpu_case_event_irq(struct hpu_test *t)
{
	setup(t);
	hpu_wr(t, HPU_REG_IRQ_MASK, HPU_IRQ_EVENT);
	submit_fault(t, 0, 1);
	run(t);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_IRQ_CAUSE), HPU_IRQ_EVENT);
	HPU_CHECK_EQ(t, t->irqs, 0);
	hpu_wr(t, HPU_REG_IRQ_MASK, 0);
	HPU_CHECK_EQ(t, t->vector_irqs[HPU_MSIX_VEC_MISC], 1);
	EXPECT_EVENT(t, HPU_EVENT_MMU_FAULT, 0, ASID, DMA_ENGINE(0), 1, VA_UNMAPPED);
}

/* ---- register rules ---- */

static void hpu_case_ring_rules(struct hpu_test *t)
{
	static const uint32_t bad_sizes[] = { 1, 3, 6, 8192, UINT32_MAX };
	static const uint32_t good_sizes[] = { 2, 4096, 0, 16 };
	size_t i;

	/* Before the firmware is up, a doorbell is refused. */
	hpu_wr(t, REG_Q(0, RING_SIZE), 16);
	HPU_EXPECT_CLEAN(t);
	hpu_wr(t, REG_Q(0, PI), 1);
	HPU_EXPECT_ERROR(t, HPU_ERR_BAD_QUEUE);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(0, PI)), 0);

	setup(t);
	for (i = 0; i < HPU_ARRAY_SIZE(bad_sizes); i++) {
		hpu_wr(t, REG_Q(1, RING_SIZE), bad_sizes[i]);
		HPU_EXPECT_ERROR(t, HPU_ERR_BAD_QUEUE);
		hpu_wr(t, HPU_REG_EQ_RING_SIZE, bad_sizes[i]);
		HPU_EXPECT_ERROR(t, HPU_ERR_BAD_QUEUE);
	}
	for (i = 0; i < HPU_ARRAY_SIZE(good_sizes); i++) {
		hpu_wr(t, REG_Q(1, RING_SIZE), good_sizes[i]);
		HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(1, RING_SIZE)), good_sizes[i]);
		hpu_wr(t, HPU_REG_EQ_RING_SIZE, good_sizes[i]);
		HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_EQ_RING_SIZE), good_sizes[i]);
	}
	HPU_EXPECT_CLEAN(t);

	/* No ring, no doorbell; PI goes neither back nor past the ring. */
	hpu_wr(t, REG_Q(1, RING_SIZE), 0);
	hpu_wr(t, REG_Q(1, PI), 1);
	HPU_EXPECT_ERROR(t, HPU_ERR_BAD_QUEUE);
	hpu_wr(t, REG_Q(1, RING_SIZE), 4);
	hpu_wr(t, REG_Q(1, PI), 5);
	HPU_EXPECT_ERROR(t, HPU_ERR_BAD_QUEUE);
	hpu_wr(t, REG_Q(1, PI), 4);
	HPU_EXPECT_CLEAN(t);
	hpu_wr(t, REG_Q(1, PI), 3);
	HPU_EXPECT_ERROR(t, HPU_ERR_BAD_QUEUE);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(1, PI)), 4);

	/* A queue with jobs keeps its ring. */
	hpu_wr(t, REG_Q(1, RING_LO), 0x1000);
	HPU_EXPECT_ERROR(t, HPU_ERR_BAD_QUEUE);
	hpu_wr(t, REG_Q(1, RING_HI), 1);
	HPU_EXPECT_ERROR(t, HPU_ERR_BAD_QUEUE);
	hpu_wr(t, REG_Q(1, RING_SIZE), 2);
	HPU_EXPECT_ERROR(t, HPU_ERR_BAD_QUEUE);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(1, RING_LO)), (uint32_t)BUS(Q_RING_OFF(1)));
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(1, RING_SIZE)), 4);

	hpu_wr(t, REG_Q(1, CI), 4);
	HPU_EXPECT_ERROR(t, HPU_ERR_READ_ONLY);
	hpu_wr(t, REG_Q(1, STATUS), 0);
	HPU_EXPECT_ERROR(t, HPU_ERR_READ_ONLY);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(1, CTRL)), 0);
	hpu_wr(t, HPU_REG_EQ_PI, 1);
	HPU_EXPECT_ERROR(t, HPU_ERR_READ_ONLY);
	hpu_wr(t, HPU_REG_EQ_STATUS, 1);
	HPU_EXPECT_ERROR(t, HPU_ERR_READ_ONLY);
	HPU_EXPECT_CLEAN(t);
}

static void hpu_case_event_ring_rules(struct hpu_test *t)
{
	setup(t);
	submit_fault(t, 0, 1);
	run(t);
	t->logs_seen = t->logs;
	/* An event is pending: the ring stays, and CI moves only up to PI. */
	hpu_wr(t, HPU_REG_EQ_RING_LO, 0);
	HPU_EXPECT_ERROR(t, HPU_ERR_BAD_QUEUE);
	hpu_wr(t, HPU_REG_EQ_RING_SIZE, 2);
	HPU_EXPECT_ERROR(t, HPU_ERR_BAD_QUEUE);
	hpu_wr(t, HPU_REG_EQ_CI, 2);
	HPU_EXPECT_ERROR(t, HPU_ERR_BAD_QUEUE);
	hpu_wr(t, HPU_REG_EQ_CI, UINT32_MAX);
	HPU_EXPECT_ERROR(t, HPU_ERR_BAD_QUEUE);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_EQ_CI), 0);
	hpu_wr(t, HPU_REG_EQ_CI, 1);
	hpu_wr(t, HPU_REG_EQ_RING_SIZE, 2);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_EQ_RING_SIZE), 2);

	/* An event ring the bus refuses: the event is dropped, the error latched. */
	hpu_wr(t, HPU_REG_EQ_RING_HI, 0x70);
	submit_fault(t, 0, 2);
	run(t);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_EQ_PI), 1);
	t->logs_seen++;
	HPU_EXPECT_ERROR(t, HPU_ERR_BAD_QUEUE);
	HPU_EXPECT_CLEAN(t);
}

static void hpu_case_queue_holes(struct hpu_test *t)
{
	static const uint32_t holes[] = {
		HPU_REG_Q(0, 0x30), HPU_REG_Q(3, 0x3c), HPU_REG_Q(HPU_NUM_QUEUES, 0),
		HPU_REG_EQ_STATUS + 4, HPU_REG_EQ_RING_LO - 4, HPU_REG_QUEUE_BASE - 4,
	};
	size_t i;

	for (i = 0; i < HPU_ARRAY_SIZE(holes); i++) {
		HPU_CHECK_EQ(t, hpu_rd(t, holes[i]), 0);
		HPU_EXPECT_ERROR(t, HPU_ERR_BAD_ACCESS);
		hpu_wr(t, holes[i], 1);
		HPU_EXPECT_ERROR(t, HPU_ERR_BAD_ACCESS);
	}
}

/*
 * A long job does not hold the engine: after its slice it yields between
 * two packets, the other queue's job runs, and the long one goes on where
 * it stopped.  The time the other queue waited is its DEFERRED_US.
 */
static void hpu_case_time_slice(struct hpu_test *t)
{
	struct hpu_cb cb = { .len = 0 };
	unsigned int i, copies = 64;
	uint64_t other, last;
	uint32_t deferred;

	setup(t);
	fill_pattern(t->mem + SRC_OFF, BUF_SIZE, 9);
	/* Copies of 3 MiB back and forth: far longer than a slice, whatever the host. */
	for (i = 0; i < copies; i++)
		cb_dma(&cb, i % 2 ? VA_HOST + SRC_OFF : VA_HBM, i % 2 ? VA_HBM : VA_HOST + SRC_OFF,
		       BUF_SIZE, 0);
	cb_dma(&cb, VA_HOST + DST_OFF, VA_HBM, BUF_SIZE, 0);
	cb_timestamp(&cb, VA_HOST + SYNC_OFF + 8);
	submit_user(t, 0, &cb, 1);
	/* The other queue: a timestamp, then a WAIT nobody satisfies (it parks, CI stays). */
	cb.len = 0;
	cb_timestamp(&cb, VA_HOST + SYNC_OFF + 16);
	cb_sync(&cb, HPU_PKT_WAIT, SYNC_VA(0), 1);
	submit_user(t, 1, &cb, 2);
	run(t);
	EXPECT_DONE(t, 0);
	HPU_CHECK(t, !memcmp(t->mem + DST_OFF, t->mem + SRC_OFF, BUF_SIZE));
	last = hdm_ld_le64(t->mem + SYNC_OFF + 8);
	other = hdm_ld_le64(t->mem + SYNC_OFF + 16);
	HPU_CHECK(t, other && other < last);
	/* Queue 1 waited for queue 0's first slice, then its own WAIT, which is not deferral. */
	deferred = hpu_rd(t, REG_Q(1, DEFERRED_US));
	HPU_CHECK(t, deferred >= HPU_ENGINE_SLICE_US);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(1, STATUS)), HPU_Q_STATUS_WAITING);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(0, DEFERRED_US)), 0);
	printf("# slice: queue 1 deferred %u us behind queue 0's slice\n", deferred);
	/* A queue reset drops the parked job; CI moves and DEFERRED_US starts again. */
	hpu_wr(t, REG_Q(1, CTRL), HPU_Q_CTRL_RESET);
	run(t);
	EXPECT_EVENT(t, HPU_EVENT_ABORTED, 1, ASID, HPU_ENGINE_QMAN, 2, 16);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(1, DEFERRED_US)), 0);
	HPU_EXPECT_CLEAN(t);
}

/*
 * One LIN_DMA may move terabytes: it yields between two of its steps, and
 * the same packet goes on from where it stopped.  Its 512 MiB are 2 MiB of
 * HBM mapped 256 times over.
 */
static void hpu_case_time_slice_dma(struct hpu_test *t)
{
	const uint64_t va = 0x400000000ull, aliases = 256;
	struct hpu_cb cb = { .len = 0 };
	uint64_t i, start, ran_us;
	uint32_t deferred, wrong = 0;
	struct timespec ts;

	setup(t);
	for (i = 0; i < aliases; i++)
		pt_map_page(t, ASID, va + i * HPU_MMU_HUGE_SIZE, HBM_BUF, PTE_RW | HPU_PTE_HUGE);
	cb_dma(&cb, va, 0x5a, aliases * HPU_MMU_HUGE_SIZE, HPU_PKT_LIN_DMA_MEMSET);
	cb_dma(&cb, VA_HOST + DST_OFF, VA_HBM, HPU_MMU_HUGE_SIZE, 0);
	submit_user(t, 0, &cb, 1);
	cb.len = 0;
	cb_timestamp(&cb, VA_HOST + SYNC_OFF + 16);
	cb_sync(&cb, HPU_PKT_WAIT, SYNC_VA(0), 1);
	submit_user(t, 1, &cb, 2);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	start = (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
	run(t);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ran_us = (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000 - start;
	EXPECT_DONE(t, 0);
	for (i = 0; i < HPU_MMU_HUGE_SIZE; i++)
		wrong += t->mem[DST_OFF + i] != 0x5a;
	HPU_CHECK_EQ(t, wrong, 0);
	/* Queue 1 waited for one slice of the fill, not for all of it. */
	deferred = hpu_rd(t, REG_Q(1, DEFERRED_US));
	printf("# slice: a %" PRIu64 " us fill deferred queue 1 by %u us\n", ran_us, deferred);
	HPU_CHECK(t, ran_us >= 4 * HPU_ENGINE_SLICE_US);
	HPU_CHECK(t, deferred >= HPU_ENGINE_SLICE_US && deferred < ran_us / 2);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(1, STATUS)), HPU_Q_STATUS_WAITING);
}

/* ---- the engine on its own thread ---- */

/* Job i: a copy through HBM and a SIGNAL on queue i % 4, kept within half its ring. */
static void submit_copy(struct hpu_test *t, unsigned int i)
{
	struct hpu_cb cb = { .len = 0 };
	unsigned int q = i % HPU_NUM_QUEUES;

	while (hpu_rd(t, REG_Q(q, PI)) - hpu_rd(t, REG_Q(q, CI)) >= Q_RING_ENTRIES / 2)
		sleep_tick();
	cb_dma(&cb, VA_HBM + q * (256u << 10), VA_HOST + SRC_OFF + i * 4096, 64u << 10, 0);
	cb_dma(&cb, VA_HOST + DST_OFF + i * 4096, VA_HBM + q * (256u << 10), 4096, 0);
	cb_sync(&cb, HPU_PKT_SIGNAL, SYNC_VA(0), 1);
	submit_user(t, q, &cb, i);
}

static uint32_t queues_done(struct hpu_test *t)
{
	uint32_t done = 0;
	unsigned int q;

	for (q = 0; q < HPU_NUM_QUEUES; q++)
		done += hpu_rd(t, REG_Q(q, CI));
	return done;
}

static void hpu_case_engine_thread(struct hpu_test *t)
{
	const unsigned int jobs = 40;
	unsigned int q;

	setup(t);
	fill_pattern(t->mem + SRC_OFF, 1u << 20, 77);
	HPU_CHECK_EQ(t, run_threaded(t, jobs, submit_copy, queues_done), jobs);
	HPU_CHECK_EQ(t, sync_value(t, 0), jobs);
	HPU_CHECK(t, !memcmp(t->mem + DST_OFF, t->mem + SRC_OFF, jobs * 4096));
	for (q = 0; q < HPU_NUM_QUEUES; q++)
		EXPECT_DONE(t, q);
}

/* How long the engine polls for work now before it sleeps. */
static uint32_t engine_poll_ns(struct hpu_test *t)
{
	uint32_t poll_ns;

	hdm_core_lock(t->core);
	poll_ns = t->core->qman.poll_ns;
	hdm_core_unlock(t->core);
	return poll_ns;
}

/* Submit one SIGNAL job on queue 0 and wait (unlocked reads of CI) until it ends. */
static void engine_job(struct hpu_test *t, unsigned int i)
{
	struct hpu_cb cb = { .len = 0 };
	unsigned int waited = 0;

	cb_sync(&cb, HPU_PKT_SIGNAL, SYNC_VA(0), 1);
	submit_user(t, 0, &cb, i);
	while (hpu_rd(t, REG_Q(0, CI)) != i + 1 && ++waited < 1000000)
		sched_yield();
}

/*
 * Jobs that come back to back find the engine polling; after an idle spell
 * longer than any window it polls less.
 */
static void hpu_case_engine_polls(struct hpu_test *t)
{
	const struct timespec idle = { .tv_nsec = 4 * (long)HDM_ENGINE_POLL_MAX_NS };
	unsigned int i, polled = 0;
	uint32_t before;
	pthread_t thread;

	setup(t);
	if (pthread_create(&thread, NULL, engine_thread, t->core)) {
		hpu_check(t, false, "pthread_create", __LINE__);
		return;
	}
	HPU_CHECK_EQ(t, engine_poll_ns(t), 0);
	for (i = 0; i < 50; i++) {
		engine_job(t, i);
		polled += engine_poll_ns(t) > 0;
	}
	/* Each job is submitted microseconds after the last ended: the engine learns to poll. */
	HPU_CHECK(t, polled > 0);
	before = engine_poll_ns(t);
	nanosleep(&idle, NULL);
	engine_job(t, i++);
	HPU_CHECK_EQ(t, engine_poll_ns(t), hdm_qman_poll_window(before, UINT64_MAX));
	hdm_core_engine_stop(t->core);
	pthread_join(thread, NULL);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(0, CI)), i);
	HPU_CHECK_EQ(t, sync_value(t, 0), i);
	EXPECT_DONE(t, 0);
}

/* The window: kept when work came within it, doubled up to the most, halved after long idleness. */
static void hpu_case_poll_window(struct hpu_test *t)
{
	const uint32_t start = HDM_ENGINE_POLL_START_NS, max = HDM_ENGINE_POLL_MAX_NS;
	uint32_t w = 0;
	unsigned int steps;

	HPU_CHECK_EQ(t, hdm_qman_poll_window(0, 0), 0);
	HPU_CHECK_EQ(t, hdm_qman_poll_window(0, 1), start);
	HPU_CHECK_EQ(t, hdm_qman_poll_window(start, start), start);
	HPU_CHECK_EQ(t, hdm_qman_poll_window(start, start + 1), 2 * start);
	HPU_CHECK_EQ(t, hdm_qman_poll_window(max / 2 + 1, max), max);
	HPU_CHECK_EQ(t, hdm_qman_poll_window(max, max), max);
	HPU_CHECK_EQ(t, hdm_qman_poll_window(max, max + 1), max / 2);
	HPU_CHECK_EQ(t, hdm_qman_poll_window(2 * start - 1, max + 1), 0);
	HPU_CHECK_EQ(t, hdm_qman_poll_window(0, 10ull * max), 0);
	/* Gaps of 400 us: a few gaps slept through, then every one polled across. */
	for (steps = 0; w < 400000 && steps < 64; steps++)
		w = hdm_qman_poll_window(w, 400000);
	HPU_CHECK(t, steps <= 8);
	HPU_CHECK_EQ(t, hdm_qman_poll_window(w, 400000), w);
	/* Then an idle device: down to no polling. */
	for (steps = 0; w && steps < 64; steps++)
		w = hdm_qman_poll_window(w, 1000ull * max);
	HPU_CHECK(t, steps <= 8);
}

/* ---- fuzz ---- */

static uint64_t hpu_rng;

/* xorshift64*: deterministic, seeded per run. */
static uint64_t rnd(void)
{
	return xorshift64s(&hpu_rng);
}

static uint64_t rnd_below(uint64_t n)
{
	return rnd() % n;
}

/* Mostly addresses that mean something: the mapped windows, their edges, or nonsense. */
static uint64_t rnd_va(void)
{
	static const uint64_t bases[] = {
		VA_HOST + SYNC_OFF, VA_HOST + SRC_OFF, VA_HOST + DST_OFF, VA_HBM, VA_UNMAPPED,
		1ull << HPU_MMU_VA_BITS, 0,
	};

	if (rnd_below(8) == 0)
		return rnd();
	return bases[rnd_below(HPU_ARRAY_SIZE(bases))] + rnd_below(BUF_SIZE + 8192) - 4096;
}

/* One random packet: a well-formed one of each kind, or corrupted, or garbage. */
static void rnd_packet(struct hpu_cb *cb)
{
	uint32_t start = cb->len;

	switch (rnd_below(10)) {
	case 0:
		cb_nop(cb);
		break;
	case 1:
	case 2:
		cb_dma(cb, rnd_va(), rnd_va(),
		       rnd_below(4) ? rnd_below(70000) : rnd_below(1u << 21),
		       rnd_below(3) ? 0 : HPU_PKT_LIN_DMA_MEMSET);
		break;
	case 3:
		cb_sync(cb, HPU_PKT_SIGNAL, rnd_below(2) ? SYNC_VA(rnd_below(8)) : rnd_va(),
			(uint32_t)rnd_below(3));
		break;
	case 4:
		cb_sync(cb, HPU_PKT_WAIT, rnd_below(2) ? SYNC_VA(rnd_below(8)) : rnd_va(),
			(uint32_t)rnd_below(3));
		break;
	case 5:
		cb_timestamp(cb, rnd_below(2) ? SYNC_VA(2 * rnd_below(4)) : rnd_va());
		break;
	case 6:
		cb_completion(cb, rnd_below(2) ? BUS(COMPLETION_OFF(rnd_below(4))) : rnd(), rnd());
		break;
	case 7:
		cb_interrupt(cb, (uint32_t)rnd_below(10));
		break;
	case 8:
		/* Callees of whatever earlier packets left in memory. */
		cb_call(cb, rnd_below(4) ? rnd_va() & ~7ull : rnd_va(),
			rnd_below(4) ? 8 * (1 + rnd_below(8192)) : rnd());
		break;
	default:
		cb_u32(cb, (uint32_t)rnd());
		cb_u32(cb, (uint32_t)rnd());
		break;
	}
	/* Sometimes flip a bit of what was just built. */
	if (!rnd_below(6)) {
		uint32_t bit = (uint32_t)rnd_below((cb->len - start) * 8);

		cb->b[start + bit / 8] ^= (uint8_t)(1u << (bit % 8));
	}
}

/* Still usable: a good job on q copies 100 000 bytes host -> HBM -> host exactly. */
static void expect_usable(struct hpu_test *t, struct hpu_cb *cb, unsigned int q)
{
	fill_pattern(t->mem + SRC_OFF, 100000, 8 + q);
	cb->len = 0;
	cb_dma(cb, VA_HBM + 3, VA_HOST + SRC_OFF, 100000, 0);
	cb_dma(cb, VA_HOST + DST_OFF, VA_HBM + 3, 100000, 0);
	submit_user(t, q, cb, 1);
	run(t);
	EXPECT_DONE(t, q);
	HPU_CHECK(t, !memcmp(t->mem + DST_OFF, t->mem + SRC_OFF, 100000));
}

static void hpu_case_fuzz(struct hpu_test *t)
{
	const unsigned int packets = 4000;
	unsigned int sent = 0, jobs = 0, events = 0, q;
	struct hpu_cb *cb = malloc(sizeof(*cb));

	hpu_rng = 0x9e3779b97f4a7c15ull;
	setup(t);
	while (sent < packets) {
		unsigned int n = 1 + (unsigned int)rnd_below(12), i;
		uint32_t priv_offset;

		q = (unsigned int)rnd_below(HPU_NUM_QUEUES);
		cb->len = 0;
		for (i = 0; i < n; i++)
			rnd_packet(cb);
		priv_offset = (uint32_t)rnd_below(cb->len / 8 + 1) * 8;
		if (!rnd_below(20))
			priv_offset += 4;
		submit(t, q, cb, priv_offset, rnd_below(10) ? ASID : (uint32_t)rnd_below(2048),
		       jobs++);
		sent += n;
		run(t);
		/* A job left waiting is reset, so every queue is idle again. */
		for (q = 0; q < HPU_NUM_QUEUES; q++)
			if (hpu_rd(t, REG_Q(q, STATUS)))
				hpu_wr(t, REG_Q(q, CTRL), HPU_Q_CTRL_RESET);
		run(t);
		for (q = 0; q < HPU_NUM_QUEUES; q++) {
			HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(q, STATUS)), 0);
			HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(q, CI)), hpu_rd(t, REG_Q(q, PI)));
		}
		events += hpu_rd(t, HPU_REG_EQ_PI) - hpu_rd(t, HPU_REG_EQ_CI);
		hpu_wr(t, HPU_REG_EQ_CI, hpu_rd(t, HPU_REG_EQ_PI));
		HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_EQ_STATUS), 0);
		if (t->failed)
			break;
	}
	printf("# fuzz: %u packets in %u jobs, %u events\n", sent, jobs, events);
	HPU_CHECK(t, events > jobs / 4);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_ERR_CODE), HPU_ERR_NONE);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_BOOT_STATUS), HPU_FW_BOOT_READY);

	t->logs_seen = t->logs;
	hpu_wr(t, HPU_REG_IRQ_CAUSE, UINT32_MAX);
	expect_usable(t, cb, 1);
	free(cb);
}

/*
 * A value a register might take: 0, small (a fault kind), a power of two, an
 * address's half, a reset key (1.7), or anything.
 */
static uint32_t rnd_reg_value(void)
{
	switch (rnd_below(7)) {
	case 0:
		return 0;
	case 1:
		return (uint32_t)rnd_below(16);
	case 2:
		return 1u << rnd_below(32);
	case 3:
		return (uint32_t)rnd_va();
	case 4:
		return (uint32_t)(rnd_va() >> 32);
	case 5:
		return rnd_below(2) ? HPU_RESET_KEY : HPU_RESET_KEY_WARM;
	default:
		return (uint32_t)rnd();
	}
}

/* Mostly a register of a block (one past the last queue's too), else anywhere in the BAR. */
static uint32_t rnd_reg(void)
{
	switch (rnd_below(9)) {
	case 0:
		return (uint32_t)rnd_below(HPU_BAR_REGS_SIZE / 4) * 4;
	case 1:
		return HPU_REG_ID + (uint32_t)rnd_below(6) * 4;
	case 2:
		return HPU_REG_BOOT_ADDR_LO + (uint32_t)rnd_below(6) * 4;
	case 3:
		return (uint32_t[]){ HPU_REG_IRQ_CAUSE, HPU_REG_IRQ_MASK,
				     HPU_REG_UQ_IRQ_PENDING }[rnd_below(3)];
	case 4:
		return HPU_REG_EQ_RING_LO + (uint32_t)rnd_below(6) * 4;
	case 5:
	case 6:
		return HPU_REG_Q((uint32_t)rnd_below(HPU_NUM_QUEUES + 1), (uint32_t)rnd_below(12) * 4);
	case 7:
		/* Heartbeat, ENGINE_RESET, fault injection and the holes around them (1.7). */
		return HPU_REG_FW_HEARTBEAT - 4 + (uint32_t)rnd_below(14) * 4;
	default:
		return HPU_REG_UQ((uint32_t)rnd_below(HPU_NUM_UQ + 1), (uint32_t)rnd_below(12) * 4);
	}
}

/*
 * What the fuzz writes to a register: a hang needs an ENGINE_RESET from another
 * thread, and this engine runs on the fuzz's own, so ENGINE_HANG is never selected.
 */
static uint32_t fuzz_value(uint32_t off, uint32_t value)
{
	return off == HPU_REG_FI_SELECT && value == HPU_FAULT_ENGINE_HANG ? HPU_FAULT_LOST_IRQ :
									     value;
}

/*
 * Writes and reads of random registers (the queue, user queue, event and
 * boot ones start DMA; resets, warm ones too; fault injection armed at random)
 * and doorbells, with jobs of the fuzz above in between: no access may crash
 * the device, and after a full reset (which disarms every fault) it boots and
 * copies again.
 */
static void hpu_case_register_fuzz(struct hpu_test *t)
{
	struct hpu_cb *cb = malloc(sizeof(*cb));
	unsigned int i, q, k, injected = 0;

	hpu_rng = 0x452821e638d01377ull;
	setup(t);
	for (i = 0; i < 20000; i++) {
		uint32_t off = rnd_reg();

		if (!rnd_below(16))
			/* A user queue's doorbell page (one past the last too), at any word of it. */
			hdm_core_uq_db_write(t->core,
					     rnd_below(HPU_NUM_UQ + 1) * HPU_UQ_DB_PAGE_SIZE +
						     (rnd_below(2) ? HPU_UQ_DB_PI : rnd_below(1024) * 4),
					     rnd_reg_value(), 4);
		else if (rnd_below(4))
			hpu_wr(t, off, fuzz_value(off, rnd_reg_value()));
		else
			hpu_rd(t, off);
		if (!rnd_below(256)) {
			/* A kind armed as a test would: a few faults, soon. */
			hpu_wr(t, HPU_REG_FI_SELECT,
			       fuzz_value(HPU_REG_FI_SELECT, 1 + (uint32_t)rnd_below(HPU_FAULT_KINDS - 1)));
			hpu_wr(t, HPU_REG_FI_TIMES, 1 + (uint32_t)rnd_below(4));
			hpu_wr(t, HPU_REG_FI_SKIP, (uint32_t)rnd_below(4));
			hpu_wr(t, HPU_REG_FI_PROB, rnd_below(2) ? UINT32_MAX : (uint32_t)rnd());
			hpu_wr(t, HPU_REG_FI_ASID, rnd_below(2) ? HPU_FI_ANY_ASID : ASID);
			hpu_wr(t, HPU_REG_FI_CTRL, HPU_FI_CTRL_ARM);
		}
		if (!rnd_below(64)) {
			q = (unsigned int)rnd_below(HPU_NUM_QUEUES);
			cb->len = 0;
			rnd_packet(cb);
			submit(t, q, cb, 0, ASID, i);
		}
		if (!rnd_below(16))
			run(t);
	}
	run(t);
	for (k = 1; k < HPU_FAULT_KINDS; k++)
		injected += t->core->fault.kinds[k].injected;
	printf("# register fuzz: %u accesses, %u guest errors logged, %u faults injected\n", i,
	       t->logs, injected);

	hpu_wr(t, HPU_REG_RESET, HPU_RESET_KEY);
	run(t);
	t->logs_seen = t->logs;
	setup(t);
	expect_usable(t, cb, 2);
	free(cb);
}

/* ---- the list ---- */

static const struct hpu_test_case hpu_tests[] = {
	{ "HBM is lazy: a byte at 20 GiB costs one chunk", hpu_case_hbm_lazy },
	{ "BAR4 reads and writes the MMU region", hpu_case_bar4 },
	{ "copy HBM to HBM across chunks", hpu_case_hbm_to_hbm },
	{ "memset HBM and host; zeroing allocates nothing", hpu_case_memset },
	{ "2 MiB pages", hpu_case_huge_pages },
	{ "one context cannot reach another's pages", hpu_case_asid_isolation },
	{ "privileged packets only from priv_offset", hpu_case_privileged },
	{ "TIMESTAMP writes the device clock", hpu_case_timestamp },
	{ "empty and largest jobs", hpu_case_desc_limits },
	{ "descriptor ring outside guest memory", hpu_case_ring_unreadable },
	{ "host DMA errors", hpu_case_host_dma_error },
	{ "WAIT on one queue, SIGNAL on another", hpu_case_signal_wait },
	{ "queues waiting on each other", hpu_case_signal_wait_crossed },
	{ "a doorbell re-checks waits", hpu_case_wait_doorbell },
	{ "SIGNAL and WAIT fault on bad sync objects", hpu_case_wait_fault },
	{ "queue reset of a waiting job", hpu_case_queue_reset_waiting },
	{ "queue reset of queued jobs", hpu_case_queue_reset_idle },
	{ "queue reset while a copy runs", hpu_case_abort_running },
	{ "device reset while a copy runs", hpu_case_reset_running },
	{ "device reset clears queues, events and HBM", hpu_case_device_reset },
	{ "event ring overflow", hpu_case_event_overflow },
	{ "events with no event ring", hpu_case_event_no_ring },
	{ "event interrupt is masked and re-raised", hpu_case_event_irq },
	{ "queue ring and doorbell rules", hpu_case_ring_rules },
	{ "event ring rules", hpu_case_event_ring_rules },
	{ "holes in the queue and event blocks", hpu_case_queue_holes },
	{ "a long job yields to other queues after its slice", hpu_case_time_slice },
	{ "a long copy yields between its steps", hpu_case_time_slice_dma },
	{ "engine on its own thread", hpu_case_engine_thread },
	{ "engine polls while jobs come back to back, less after an idle spell", hpu_case_engine_polls },
	{ "engine's polling window adapts to the gaps between jobs", hpu_case_poll_window },
	{ "random command buffers", hpu_case_fuzz },
	{ "random register accesses, then a reset", hpu_case_register_fuzz },
};

int main(void)
{
	unsigned int n = 0, failed = 0;
	struct hpu_test *t;
	char name[128];
	size_t i;

	printf("TAP version 13\n1..%zu\n",
	       HPU_ARRAY_SIZE(hpu_tests) + HPU_ARRAY_SIZE(hpu_copy_cases) +
	       HPU_ARRAY_SIZE(hpu_fault_cases) + HPU_ARRAY_SIZE(hpu_illegal_cases) +
	       HPU_ARRAY_SIZE(hpu_desc_cases));
	failed += hpu_run_cases(hpu_tests, HPU_ARRAY_SIZE(hpu_tests), &n);
	HPU_RUN_TABLE(hpu_copy_cases, hpu_test_copy, "copy host -> HBM -> host");
	HPU_RUN_TABLE(hpu_fault_cases, hpu_test_fault, "MMU fault");
	HPU_RUN_TABLE(hpu_illegal_cases, hpu_test_illegal, "illegal packet");
	HPU_RUN_TABLE(hpu_desc_cases, hpu_test_desc, "bad descriptor");
	return failed ? 1 : 0;
}
