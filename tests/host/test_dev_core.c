/* SPDX-License-Identifier: MIT */
/*
 * Host unit test of the hpu device core's registers, boot and interrupts:
 * drives it through register reads and writes, with a host buffer standing
 * in for guest memory.  Prints TAP.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "hdm_harness.h"

/* HBM's mapping (the suite is linked with --wrap=mmap): refused while hpu_mmap_refuse is set. */
void *__real_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);

static bool hpu_mmap_refuse;

void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	if (!hpu_mmap_refuse)
		return __real_mmap(addr, len, prot, flags, fd, off);
	errno = ENOMEM;
	return MAP_FAILED;
}

/* Registers that read zero unless BOOT_STATUS is READY. */
static const uint32_t hpu_test_cap_regs[] = {
	HPU_REG_FW_VERSION, HPU_REG_FW_IF_VERSION, HPU_REG_HBM_SIZE_LO, HPU_REG_HBM_SIZE_HI,
	HPU_REG_NUM_DMA, HPU_REG_NUM_MME, HPU_REG_NUM_TPC, HPU_REG_CAPS, HPU_REG_NUM_UQ,
};

static void hpu_test_expect_caps_zero(struct hpu_test *t, int line)
{
	size_t i;

	for (i = 0; i < HPU_ARRAY_SIZE(hpu_test_cap_regs); i++)
		hpu_check_eq(t, hpu_rd(t, hpu_test_cap_regs[i]), 0, "capability register", line);
}

#define HPU_EXPECT_CAPS_ZERO(t) hpu_test_expect_caps_zero(t, __LINE__)

static void hpu_test_expect_reset_state(struct hpu_test *t, int line)
{
	hpu_check_eq(t, hpu_rd(t, HPU_REG_ID), HPU_ID_VALUE, "ID", line);
	hpu_check_eq(t, hpu_rd(t, HPU_REG_REGS_VERSION), HPU_REGS_VERSION, "REGS_VERSION", line);
	hpu_check_eq(t, hpu_rd(t, HPU_REG_HW_REV), HPU_HW_REVISION, "HW_REV", line);
	hpu_check_eq(t, hpu_rd(t, HPU_REG_SCRATCH), 0, "SCRATCH", line);
	hpu_check_eq(t, hpu_rd(t, HPU_REG_ERR_CODE), HPU_ERR_NONE, "ERR_CODE", line);
	hpu_check_eq(t, hpu_rd(t, HPU_REG_BOOT_STATUS), HPU_FW_BOOT_IDLE, "BOOT_STATUS", line);
	hpu_check_eq(t, hpu_rd(t, HPU_REG_BOOT_ERROR), HPU_FW_ERR_NONE, "BOOT_ERROR", line);
	hpu_check_eq(t, hpu_rd(t, HPU_REG_IRQ_CAUSE), 0, "IRQ_CAUSE", line);
	hpu_check_eq(t, hpu_rd(t, HPU_REG_IRQ_MASK), UINT32_MAX, "IRQ_MASK", line);
	hpu_test_expect_caps_zero(t, line);
}

#define HPU_EXPECT_RESET_STATE(t) hpu_test_expect_reset_state(t, __LINE__)

static void hpu_case_reset_values(struct hpu_test *t)
{
	HPU_EXPECT_RESET_STATE(t);
	HPU_EXPECT_CLEAN(t);
}

static void hpu_case_scratch(struct hpu_test *t)
{
	static const uint32_t patterns[] = { 0xa5a5a5a5, 0x5a5a5a5a, 0, UINT32_MAX };
	size_t i;

	for (i = 0; i < HPU_ARRAY_SIZE(patterns); i++) {
		hpu_wr(t, HPU_REG_SCRATCH, patterns[i]);
		HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_SCRATCH), patterns[i]);
	}
	HPU_EXPECT_CLEAN(t);
}

static void hpu_case_read_only(struct hpu_test *t)
{
	static const uint32_t ro_regs[] = {
		HPU_REG_ID, HPU_REG_REGS_VERSION, HPU_REG_HW_REV, HPU_REG_ERR_CODE,
		HPU_REG_BOOT_STATUS, HPU_REG_BOOT_ERROR, HPU_REG_FW_VERSION, HPU_REG_FW_IF_VERSION,
		HPU_REG_HBM_SIZE_LO, HPU_REG_HBM_SIZE_HI, HPU_REG_NUM_DMA, HPU_REG_NUM_MME,
		HPU_REG_NUM_TPC, HPU_REG_CAPS, HPU_REG_NUM_UQ,
	};
	size_t i;

	hpu_test_boot_good(t);
	for (i = 0; i < HPU_ARRAY_SIZE(ro_regs); i++) {
		uint32_t before = hpu_rd(t, ro_regs[i]);

		hpu_wr(t, ro_regs[i], ~before);
		/* ERR_CODE itself now holds the error; everything else is unchanged. */
		if (ro_regs[i] != HPU_REG_ERR_CODE)
			HPU_CHECK_EQ(t, hpu_rd(t, ro_regs[i]), before);
		HPU_EXPECT_ERROR(t, HPU_ERR_READ_ONLY);
	}
}

static void hpu_case_write_only_reads_zero(struct hpu_test *t)
{
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_RESET), 0);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_BOOT_CTRL), 0);
	HPU_EXPECT_CLEAN(t);
}

static void hpu_case_bad_access(struct hpu_test *t)
{
	static const struct {
		uint64_t offset;
		unsigned int size;
	} bad[] = {
		{ HPU_REG_SCRATCH, 1 },
		{ HPU_REG_SCRATCH, 2 },
		{ HPU_REG_SCRATCH, 8 },
		{ HPU_REG_SCRATCH, 0 },
		{ HPU_REG_SCRATCH + 1, 1 },
		{ HPU_REG_SCRATCH + 2, 4 },
		{ 0x018, 4 }, /* hole after ERR_CODE */
		{ HPU_REG_NUM_UQ + 4, 4 }, /* just past the capabilities */
		{ HPU_REG_IRQ_MASK + 4, 4 },
		{ HPU_BAR_REGS_SIZE - 4, 4 },
		{ HPU_BAR_REGS_SIZE, 4 },
		{ UINT64_MAX - 3, 4 },
	};
	size_t i;

	hpu_wr(t, HPU_REG_SCRATCH, 0x12345678);
	for (i = 0; i < HPU_ARRAY_SIZE(bad); i++) {
		HPU_CHECK_EQ(t, hdm_core_mmio_read(t->core, bad[i].offset, bad[i].size), 0);
		HPU_EXPECT_ERROR(t, HPU_ERR_BAD_ACCESS);
		hdm_core_mmio_write(t->core, bad[i].offset, 0xffffffffffffffffull, bad[i].size);
		HPU_EXPECT_ERROR(t, HPU_ERR_BAD_ACCESS);
	}
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_SCRATCH), 0x12345678);
}

static void hpu_case_boot_ready(struct hpu_test *t)
{
	hpu_wr(t, HPU_REG_IRQ_MASK, ~HPU_IRQ_BOOT_DONE);
	hpu_test_boot_good(t);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_BOOT_ERROR), HPU_FW_ERR_NONE);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_FW_VERSION), HPU_TEST_FW_VERSION);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_FW_IF_VERSION), HPU_FW_IF_VERSION);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_HBM_SIZE_LO), (uint32_t)hpu_test_cfg.hbm_size);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_HBM_SIZE_HI), hpu_test_cfg.hbm_size >> 32);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_NUM_DMA), hpu_test_cfg.num_dma);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_NUM_MME), hpu_test_cfg.num_mme);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_NUM_TPC), hpu_test_cfg.num_tpc);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_CAPS), hpu_test_cfg.caps);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_NUM_UQ), HPU_NUM_UQ);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_IRQ_CAUSE), HPU_IRQ_BOOT_DONE);
	HPU_CHECK_EQ(t, t->irqs, 1);
	HPU_CHECK_EQ(t, t->dma_reads, 1);
	HPU_EXPECT_CLEAN(t);
}

static void hpu_case_boot_max_image(struct hpu_test *t)
{
	hpu_test_image_build(t, HPU_FW_MAX_IMAGE_SIZE - HPU_FW_HEADER_SIZE);
	hpu_test_boot(t, HPU_TEST_IMAGE_ADDR, HPU_FW_MAX_IMAGE_SIZE);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_BOOT_STATUS), HPU_FW_BOOT_READY);
}

/* The mailbox is latched at START: rewriting it while LOADING changes nothing. */
static void hpu_case_boot_latches_mailbox(struct hpu_test *t)
{
	hpu_test_image_build(t, HPU_TEST_PAYLOAD_SIZE);
	hpu_test_boot_start(t, HPU_TEST_IMAGE_ADDR, HPU_TEST_IMAGE_SIZE);
	hpu_wr(t, HPU_REG_BOOT_ADDR_LO, 0);
	hpu_wr(t, HPU_REG_BOOT_SIZE, 1);
	hdm_core_boot_run(t->core);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_BOOT_STATUS), HPU_FW_BOOT_READY);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_BOOT_SIZE), 1);
}

static void hpu_case_boot_busy(struct hpu_test *t)
{
	hpu_test_image_build(t, HPU_TEST_PAYLOAD_SIZE);
	hpu_test_boot_start(t, HPU_TEST_IMAGE_ADDR, HPU_TEST_IMAGE_SIZE);
	hpu_wr(t, HPU_REG_BOOT_CTRL, HPU_BOOT_CTRL_START);
	HPU_EXPECT_ERROR(t, HPU_ERR_BOOT_BUSY);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_BOOT_STATUS), HPU_FW_BOOT_LOADING);
	HPU_CHECK_EQ(t, t->boots_scheduled, 1);

	hdm_core_boot_run(t->core);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_BOOT_STATUS), HPU_FW_BOOT_READY);
	hpu_wr(t, HPU_REG_BOOT_CTRL, HPU_BOOT_CTRL_START);
	HPU_EXPECT_ERROR(t, HPU_ERR_BOOT_BUSY);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_BOOT_STATUS), HPU_FW_BOOT_READY);
	HPU_CHECK_EQ(t, t->boots_scheduled, 1);
}

static void hpu_case_boot_ctrl_bad_bits(struct hpu_test *t)
{
	hpu_wr(t, HPU_REG_BOOT_CTRL, HPU_BOOT_CTRL_START | 0x80);
	HPU_EXPECT_ERROR(t, HPU_ERR_BAD_CTRL);
	hpu_wr(t, HPU_REG_BOOT_CTRL, 0);
	HPU_EXPECT_CLEAN(t);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_BOOT_STATUS), HPU_FW_BOOT_IDLE);
	HPU_CHECK_EQ(t, t->boots_scheduled, 0);
}

static void hpu_case_boot_retry_after_failure(struct hpu_test *t)
{
	uint8_t *img = hpu_test_image_build(t, HPU_TEST_PAYLOAD_SIZE);

	img[HPU_FW_HEADER_SIZE] ^= 1;
	hpu_test_boot(t, HPU_TEST_IMAGE_ADDR, HPU_TEST_IMAGE_SIZE);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_BOOT_STATUS), HPU_FW_BOOT_FAILED);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_BOOT_ERROR), HPU_FW_ERR_BAD_CRC);

	img[HPU_FW_HEADER_SIZE] ^= 1;
	hpu_test_boot_start(t, HPU_TEST_IMAGE_ADDR, HPU_TEST_IMAGE_SIZE);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_BOOT_ERROR), HPU_FW_ERR_NONE);
	hdm_core_boot_run(t->core);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_BOOT_STATUS), HPU_FW_BOOT_READY);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_NUM_TPC), hpu_test_cfg.num_tpc);
}

static void hpu_case_reset_key(struct hpu_test *t)
{
	hpu_wr(t, HPU_REG_SCRATCH, 0xcafe);
	hpu_wr(t, HPU_REG_IRQ_MASK, 0);
	hpu_test_boot_good(t);

	hpu_wr(t, HPU_REG_RESET, HPU_RESET_KEY ^ 1);
	HPU_EXPECT_ERROR(t, HPU_ERR_BAD_RESET_KEY);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_SCRATCH), 0xcafe);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_BOOT_STATUS), HPU_FW_BOOT_READY);

	hpu_wr(t, HPU_REG_RESET, HPU_RESET_KEY);
	HPU_EXPECT_RESET_STATE(t);
	HPU_CHECK_EQ(t, t->boots_cancelled, 0);
}

/* Both reset paths drop a pending boot, and a run that fires anyway is inert. */
static void hpu_test_reset_while_loading(struct hpu_test *t, void (*reset)(struct hpu_test *t))
{
	unsigned int dma_reads;

	hpu_wr(t, HPU_REG_IRQ_MASK, 0);
	hpu_test_image_build(t, HPU_TEST_PAYLOAD_SIZE);
	hpu_test_boot_start(t, HPU_TEST_IMAGE_ADDR, HPU_TEST_IMAGE_SIZE);
	reset(t);
	HPU_CHECK_EQ(t, t->boots_cancelled, 1);
	HPU_EXPECT_RESET_STATE(t);

	dma_reads = t->dma_reads;
	hdm_core_boot_run(t->core);
	HPU_EXPECT_RESET_STATE(t);
	HPU_CHECK_EQ(t, t->dma_reads, dma_reads);
	HPU_CHECK_EQ(t, t->irqs, 0);

	hpu_test_boot_good(t);
}

static void hpu_test_reset_by_register(struct hpu_test *t)
{
	hpu_wr(t, HPU_REG_RESET, HPU_RESET_KEY);
}

static void hpu_test_reset_by_glue(struct hpu_test *t)
{
	hdm_core_reset(t->core);
}

static void hpu_case_register_reset_cancels_boot(struct hpu_test *t)
{
	hpu_test_reset_while_loading(t, hpu_test_reset_by_register);
}

static void hpu_case_device_reset_cancels_boot(struct hpu_test *t)
{
	hpu_test_reset_while_loading(t, hpu_test_reset_by_glue);
}

static void hpu_case_irq_masked_error(struct hpu_test *t)
{
	hpu_rd(t, 0x018);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_IRQ_CAUSE), HPU_IRQ_ERROR);
	HPU_CHECK_EQ(t, t->irqs, 0);

	/* Unmasking a pending cause delivers it. */
	hpu_wr(t, HPU_REG_IRQ_MASK, ~HPU_IRQ_ERROR);
	HPU_CHECK_EQ(t, t->irqs, 1);
	/* Unmasking again, or another bit with nothing pending, does not. */
	hpu_wr(t, HPU_REG_IRQ_MASK, 0);
	HPU_CHECK_EQ(t, t->irqs, 1);

	hpu_rd(t, 0x018);
	HPU_CHECK_EQ(t, t->irqs, 2);
	HPU_CHECK_EQ(t, t->bad_vectors, 0);
}

static void hpu_case_irq_masked_boot_done(struct hpu_test *t)
{
	hpu_wr(t, HPU_REG_IRQ_MASK, ~HPU_IRQ_ERROR);
	hpu_test_boot_good(t);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_IRQ_CAUSE), HPU_IRQ_BOOT_DONE);
	HPU_CHECK_EQ(t, t->irqs, 0);

	hpu_wr(t, HPU_REG_IRQ_MASK, 0);
	HPU_CHECK_EQ(t, t->irqs, 1);
	HPU_CHECK_EQ(t, t->bad_vectors, 0);
}

static void hpu_case_irq_cause_w1c(struct hpu_test *t)
{
	hpu_test_boot_good(t);
	hpu_rd(t, 0x018);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_IRQ_CAUSE), HPU_IRQ_BOOT_DONE | HPU_IRQ_ERROR);

	hpu_wr(t, HPU_REG_IRQ_CAUSE, 0);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_IRQ_CAUSE), HPU_IRQ_BOOT_DONE | HPU_IRQ_ERROR);
	hpu_wr(t, HPU_REG_IRQ_CAUSE, HPU_IRQ_BOOT_DONE);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_IRQ_CAUSE), HPU_IRQ_ERROR);
	hpu_wr(t, HPU_REG_IRQ_CAUSE, UINT32_MAX);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_IRQ_CAUSE), 0);

	/* Nothing pending: unmasking raises nothing. */
	hpu_wr(t, HPU_REG_IRQ_MASK, 0);
	HPU_CHECK_EQ(t, t->irqs, 0);
}

static void hpu_case_check_config(struct hpu_test *t)
{
	static const struct {
		uint64_t hbm_size;
		uint32_t num_dma, num_mme, num_tpc;
	} bad[] = {
		{ 0, 8, 2, 8 },
		{ (32ull << 30) + 4096, 8, 2, 8 },
		{ 32ull << 30, 0, 2, 8 },
		{ 32ull << 30, 8, 0, 8 },
		{ 32ull << 30, 8, 2, 0 },
		{ 32ull << 30, 8, 2, HDM_CORE_MAX_ENGINES + 1 },
		{ HPU_MMU_REGION_SIZE, 8, 2, 8 }, /* no room for buffers */
		{ HDM_CORE_HBM_MAX + HDM_CORE_HBM_ALIGN, 8, 2, 8 },
	};
	char err[128];
	size_t i;

	HPU_CHECK_EQ(t, hdm_core_check_config(&hpu_test_cfg, err, sizeof(err)), 0);
	for (i = 0; i < HPU_ARRAY_SIZE(bad); i++) {
		struct hdm_core_config cfg = hpu_test_cfg;

		cfg.hbm_size = bad[i].hbm_size;
		cfg.num_dma = bad[i].num_dma;
		cfg.num_mme = bad[i].num_mme;
		cfg.num_tpc = bad[i].num_tpc;
		err[0] = '\0';
		HPU_CHECK(t, hdm_core_check_config(&cfg, err, sizeof(err)) == -EINVAL);
		HPU_CHECK(t, err[0] != '\0');
	}
}

/*
 * One defect per case: an XOR patch of the image at patch_at (resealing the
 * CRC unless stale_crc), or a BOOT_SIZE/BOOT_ADDR that does not fit it.
 */
struct hpu_boot_defect {
	const char *name;
	uint32_t patch_at;
	uint32_t patch;
	bool stale_crc;
	uint32_t boot_size; /* 0: the image size */
	uint64_t boot_addr; /* 0: HPU_TEST_IMAGE_ADDR */
	bool no_dma; /* the device must reject the transfer without issuing it */
	uint32_t expect;
};

static const struct hpu_boot_defect hpu_boot_defects[] = {
	{ "bad magic", HPU_HDR_OFF(magic), 1, .expect = HPU_FW_ERR_BAD_MAGIC },
	{ "interface major mismatch", HPU_HDR_OFF(if_version), 3u << 16,
	  .expect = HPU_FW_ERR_BAD_IF_VERSION },
	{ "interface minor too new", HPU_HDR_OFF(if_version), 1,
	  .expect = HPU_FW_ERR_BAD_IF_VERSION },
	{ "bad header_size", HPU_HDR_OFF(header_size), 4, .expect = HPU_FW_ERR_BAD_SIZE },
	{ "payload_size disagrees with BOOT_SIZE", HPU_HDR_OFF(payload_size), 1,
	  .expect = HPU_FW_ERR_BAD_SIZE },
	{ "BOOT_SIZE beyond the image", .boot_size = HPU_TEST_IMAGE_SIZE + 4,
	  .expect = HPU_FW_ERR_BAD_SIZE },
	{ "BOOT_SIZE smaller than a header", .boot_size = HPU_FW_HEADER_SIZE - 1, .no_dma = true,
	  .expect = HPU_FW_ERR_BAD_SIZE },
	{ "BOOT_SIZE larger than boot SRAM", .boot_size = HPU_FW_MAX_IMAGE_SIZE + 1,
	  .no_dma = true, .expect = HPU_FW_ERR_BAD_SIZE },
	{ "non-zero flags", HPU_HDR_OFF(flags), 1, .expect = HPU_FW_ERR_BAD_FLAGS },
	{ "non-zero reserved", HPU_HDR_OFF(reserved), 1u << 31, .expect = HPU_FW_ERR_BAD_FLAGS },
	{ "payload corrupted", HPU_FW_HEADER_SIZE + 100, 0x10, .stale_crc = true,
	  .expect = HPU_FW_ERR_BAD_CRC },
	{ "header corrupted", HPU_HDR_OFF(version_str), 0x20, .stale_crc = true,
	  .expect = HPU_FW_ERR_BAD_CRC },
	{ "crc field wrong", HPU_FW_CRC_OFFSET, 1, .stale_crc = true,
	  .expect = HPU_FW_ERR_BAD_CRC },
	{ "DMA outside guest memory", .boot_addr = HPU_TEST_MEM_BASE + HPU_TEST_MEM_SIZE,
	  .expect = HPU_FW_ERR_DMA },
	{ "DMA wraps the bus address space", .boot_addr = UINT64_MAX - 0xfff, .no_dma = true,
	  .expect = HPU_FW_ERR_DMA },
};

static void hpu_test_boot_defect(struct hpu_test *t, const struct hpu_boot_defect *d)
{
	uint8_t *img = hpu_test_image_build(t, HPU_TEST_PAYLOAD_SIZE);
	unsigned int i;

	for (i = 0; i < 4; i++)
		img[d->patch_at + i] ^= (uint8_t)(d->patch >> (8 * i));
	if (!d->stale_crc)
		hpu_test_image_seal(img, HPU_TEST_PAYLOAD_SIZE);

	hpu_wr(t, HPU_REG_IRQ_MASK, ~HPU_IRQ_BOOT_DONE);
	hpu_test_boot(t, d->boot_addr ? d->boot_addr : HPU_TEST_IMAGE_ADDR,
		      d->boot_size ? d->boot_size : HPU_TEST_IMAGE_SIZE);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_BOOT_STATUS), HPU_FW_BOOT_FAILED);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_BOOT_ERROR), d->expect);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_IRQ_CAUSE), HPU_IRQ_BOOT_DONE);
	HPU_CHECK_EQ(t, t->irqs, 1);
	HPU_CHECK_EQ(t, t->dma_reads, d->no_dma ? 0 : 1);
	HPU_EXPECT_CAPS_ZERO(t);
	/* A bad image is reported in BOOT_ERROR and logged, not latched as register misuse. */
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_ERR_CODE), HPU_ERR_NONE);
	HPU_CHECK_EQ(t, t->logs, 1);
}

/* A guest RESET whose HBM the host refuses: FAILED, nothing runs, a later reset recovers. */
static void hpu_case_reset_without_hbm(struct hpu_test *t)
{
	uint32_t logs;

	hpu_test_boot_good(t);
	hdm_core_mmu_write(t->core, 0x1000, 0x1234, 8);
	hpu_mmap_refuse = true;
	hpu_wr(t, HPU_REG_RESET, HPU_RESET_KEY);
	hpu_mmap_refuse = false;
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_BOOT_STATUS), HPU_FW_BOOT_FAILED);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_BOOT_ERROR), HPU_FW_ERR_NO_HBM);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_ERR_CODE), HPU_ERR_NONE);
	HPU_CHECK_EQ(t, t->logs, 1);
	HPU_CHECK_EQ(t, hdm_core_hbm_chunks(t->core), 0);
	HPU_EXPECT_CAPS_ZERO(t);
	/* BAR4 reads zeros and drops writes, logged. */
	hdm_core_mmu_write(t->core, 0x1000, 0x1234, 8);
	HPU_CHECK_EQ(t, hdm_core_mmu_read(t->core, 0x1000, 8), 0);
	HPU_CHECK_EQ(t, t->logs, 3);
	/* No doorbell is taken, so no job runs. */
	hpu_wr(t, HPU_REG_Q(0, HPU_Q_RING_SIZE), 16);
	t->logs_seen = t->logs;
	hpu_wr(t, HPU_REG_Q(0, HPU_Q_PI), 1);
	HPU_EXPECT_ERROR(t, HPU_ERR_BAD_QUEUE);
	hdm_core_engine_run(t->core);
	/* A boot fails for want of HBM. */
	logs = t->logs;
	hpu_test_image_build(t, HPU_TEST_PAYLOAD_SIZE);
	hpu_test_boot(t, HPU_TEST_IMAGE_ADDR, HPU_TEST_IMAGE_SIZE);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_BOOT_STATUS), HPU_FW_BOOT_FAILED);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_BOOT_ERROR), HPU_FW_ERR_NO_HBM);
	HPU_CHECK_EQ(t, t->logs, logs + 1);
	HPU_EXPECT_CAPS_ZERO(t);
	/* The embedder's reset fails alike; the guest's next one recovers, HBM zeros again. */
	hpu_mmap_refuse = true;
	HPU_CHECK_EQ(t, hdm_core_reset(t->core), -ENOMEM);
	hpu_mmap_refuse = false;
	hpu_wr(t, HPU_REG_RESET, HPU_RESET_KEY);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_BOOT_STATUS), HPU_FW_BOOT_IDLE);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_BOOT_ERROR), HPU_FW_ERR_NONE);
	HPU_CHECK_EQ(t, hdm_core_mmu_read(t->core, 0x1000, 8), 0);
	hdm_core_mmu_write(t->core, 0x1000, 0x5678, 8);
	HPU_CHECK_EQ(t, hdm_core_mmu_read(t->core, 0x1000, 8), 0x5678);
	hpu_test_boot_good(t);
	/* Left without HBM, the device is destroyed as well. */
	hpu_mmap_refuse = true;
	hpu_wr(t, HPU_REG_RESET, HPU_RESET_KEY);
	hpu_mmap_refuse = false;
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_BOOT_ERROR), HPU_FW_ERR_NO_HBM);
}

static const struct hpu_test_case hpu_tests[] = {
	{ "reset values", hpu_case_reset_values },
	{ "scratch is read-write", hpu_case_scratch },
	{ "read-only registers reject writes", hpu_case_read_only },
	{ "write-only registers read zero", hpu_case_write_only_reads_zero },
	{ "bad size, alignment and offset rejected", hpu_case_bad_access },
	{ "good image boots READY with capabilities", hpu_case_boot_ready },
	{ "image filling boot SRAM boots", hpu_case_boot_max_image },
	{ "boot mailbox latched at START", hpu_case_boot_latches_mailbox },
	{ "START while LOADING or READY is BOOT_BUSY", hpu_case_boot_busy },
	{ "unknown BOOT_CTRL bits rejected", hpu_case_boot_ctrl_bad_bits },
	{ "boot retry after FAILED", hpu_case_boot_retry_after_failure },
	{ "RESET key and wrong key", hpu_case_reset_key },
	{ "RESET while LOADING cancels the boot", hpu_case_register_reset_cancels_boot },
	{ "device reset while LOADING cancels the boot", hpu_case_device_reset_cancels_boot },
	{ "masked error cause raised on unmask", hpu_case_irq_masked_error },
	{ "masked boot-done cause raised on unmask", hpu_case_irq_masked_boot_done },
	{ "IRQ_CAUSE is write-1-to-clear", hpu_case_irq_cause_w1c },
	{ "configuration checks", hpu_case_check_config },
	{ "reset without host memory for HBM fails, the next recovers", hpu_case_reset_without_hbm },
};

int main(void)
{
	unsigned int n = 0, failed = 0;
	struct hpu_test *t;
	char name[128];
	size_t i;

	printf("TAP version 13\n1..%zu\n",
	       HPU_ARRAY_SIZE(hpu_tests) + HPU_ARRAY_SIZE(hpu_boot_defects));
	failed += hpu_run_cases(hpu_tests, HPU_ARRAY_SIZE(hpu_tests), &n);
	HPU_RUN_TABLE(hpu_boot_defects, hpu_test_boot_defect, "boot fails");
	return failed ? 1 : 0;
}
