/* SPDX-License-Identifier: MIT */
/*
 * Harness of the device-core host tests.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "hpu_dev_harness.h"

const struct hpu_core_config hpu_test_cfg = {
	.hbm_size = (32ull << 30) + (2u << 20), /* both halves of HBM_SIZE non-zero */
	.num_dma = 8,
	.num_mme = 2,
	.num_tpc = 24,
	.caps = HPU_REG_CAPS_FP32 | HPU_REG_CAPS_BF16 | HPU_REG_CAPS_FP16 | HPU_REG_CAPS_FP8,
};

/* Guest memory at bus_addr, or NULL if [bus_addr, bus_addr + len) is not all inside it. */
static uint8_t *hpu_test_mem(struct hpu_test *t, uint64_t bus_addr, uint64_t len)
{
	if (t->on_dma)
		t->on_dma(t);
	if (bus_addr < HPU_TEST_MEM_BASE || len > HPU_TEST_MEM_SIZE ||
	    bus_addr - HPU_TEST_MEM_BASE > HPU_TEST_MEM_SIZE - len)
		return NULL;
	return t->mem + (bus_addr - HPU_TEST_MEM_BASE);
}

static int hpu_test_dma_read(void *opaque, uint64_t bus_addr, void *buf, uint64_t len)
{
	struct hpu_test *t = opaque;
	const uint8_t *p;

	t->dma_reads++;
	p = hpu_test_mem(t, bus_addr, len);
	if (!p)
		return -EFAULT;
	memcpy(buf, p, len);
	return 0;
}

static int hpu_test_dma_write(void *opaque, uint64_t bus_addr, const void *buf, uint64_t len)
{
	struct hpu_test *t = opaque;
	uint8_t *p;

	t->dma_writes++;
	p = hpu_test_mem(t, bus_addr, len);
	if (!p)
		return -EFAULT;
	memcpy(p, buf, len);
	return 0;
}

static void hpu_test_irq_raise(void *opaque, unsigned int vector)
{
	struct hpu_test *t = opaque;

	t->irqs++;
	if (vector != HPU_MSIX_VEC_MISC)
		t->bad_vectors++;
	if (vector < HPU_MSIX_VECTORS)
		t->vector_irqs[vector]++;
}

static void hpu_test_schedule_boot(void *opaque)
{
	((struct hpu_test *)opaque)->boots_scheduled++;
}

static void hpu_test_cancel_boot(void *opaque)
{
	((struct hpu_test *)opaque)->boots_cancelled++;
}

static void hpu_test_log(void *opaque, const char *msg)
{
	struct hpu_test *t = opaque;

	t->logs++;
	snprintf(t->last_log, sizeof(t->last_log), "%s", msg);
}

static uint64_t hpu_test_now_ns(void *opaque)
{
	struct hpu_test *t = opaque;

	t->clock += HPU_TEST_CLOCK_TICK;
	return t->clock;
}

static const struct hpu_core_ops hpu_test_ops = {
	.dma_read = hpu_test_dma_read,
	.dma_write = hpu_test_dma_write,
	.irq_raise = hpu_test_irq_raise,
	.schedule_boot = hpu_test_schedule_boot,
	.cancel_boot = hpu_test_cancel_boot,
	.log_guest_error = hpu_test_log,
	.now_ns = hpu_test_now_ns,
};

void hpu_check(struct hpu_test *t, bool ok, const char *what, int line)
{
	if (ok)
		return;
	printf("# line %d: check failed: %s\n", line, what);
	t->failed = true;
}

void hpu_check_eq(struct hpu_test *t, uint64_t got, uint64_t want, const char *what, int line)
{
	if (got == want)
		return;
	printf("# line %d: %s is 0x%" PRIx64 ", expected 0x%" PRIx64 "\n", line, what, got, want);
	t->failed = true;
}

uint32_t hpu_rd(struct hpu_test *t, uint32_t offset)
{
	return hpu_core_mmio_read(t->core, offset, 4);
}

void hpu_wr(struct hpu_test *t, uint32_t offset, uint32_t value)
{
	hpu_core_mmio_write(t->core, offset, value, 4);
}

void hpu_test_expect_error(struct hpu_test *t, uint32_t code, int line)
{
	hpu_check_eq(t, hpu_rd(t, HPU_REG_ERR_CODE), code, "ERR_CODE", line);
	hpu_check_eq(t, t->logs - t->logs_seen, 1, "new log lines", line);
	hpu_check(t, hpu_rd(t, HPU_REG_IRQ_CAUSE) & HPU_IRQ_ERROR, "ERROR cause set", line);
	hpu_wr(t, HPU_REG_IRQ_CAUSE, HPU_IRQ_ERROR);
	t->logs_seen = t->logs;
}

void hpu_test_expect_clean(struct hpu_test *t, int line)
{
	hpu_check_eq(t, t->logs - t->logs_seen, 0, "new log lines", line);
	hpu_check(t, !(hpu_rd(t, HPU_REG_IRQ_CAUSE) & HPU_IRQ_ERROR), "no ERROR cause", line);
}

void hpu_test_image_seal(uint8_t *img, uint32_t payload_size)
{
	uLong crc = crc32(0, img, HPU_FW_CRC_OFFSET);

	crc = crc32(crc, img + HPU_FW_HEADER_SIZE, payload_size);
	hpu_st_le32(img + HPU_FW_CRC_OFFSET, (uint32_t)crc);
}

uint8_t *hpu_test_image_build(struct hpu_test *t, uint32_t payload_size)
{
	uint8_t *img = t->mem + HPU_TEST_IMAGE_OFF;
	uint32_t i;

	memset(img, 0, HPU_FW_HEADER_SIZE);
	hpu_st_le32(img + HPU_HDR_OFF(magic), HPU_FW_MAGIC);
	hpu_st_le32(img + HPU_HDR_OFF(if_version), HPU_FW_IF_VERSION);
	hpu_st_le32(img + HPU_HDR_OFF(header_size), HPU_FW_HEADER_SIZE);
	hpu_st_le32(img + HPU_HDR_OFF(payload_size), payload_size);
	hpu_st_le32(img + HPU_HDR_OFF(fw_version), HPU_TEST_FW_VERSION);
	memcpy(img + HPU_HDR_OFF(version_str), "hpu-fw 1.2.3", sizeof("hpu-fw 1.2.3"));
	for (i = 0; i < payload_size; i++)
		img[HPU_FW_HEADER_SIZE + i] = (uint8_t)(i * 7 + 3);
	hpu_test_image_seal(img, payload_size);
	return img;
}

void hpu_test_boot_start(struct hpu_test *t, uint64_t addr, uint32_t size)
{
	hpu_wr(t, HPU_REG_BOOT_ADDR_LO, (uint32_t)addr);
	hpu_wr(t, HPU_REG_BOOT_ADDR_HI, (uint32_t)(addr >> 32));
	hpu_wr(t, HPU_REG_BOOT_SIZE, size);
	hpu_wr(t, HPU_REG_BOOT_CTRL, HPU_BOOT_CTRL_START);
}

void hpu_test_boot(struct hpu_test *t, uint64_t addr, uint32_t size)
{
	unsigned int scheduled = t->boots_scheduled;

	hpu_test_boot_start(t, addr, size);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_BOOT_STATUS), HPU_FW_BOOT_LOADING);
	HPU_CHECK_EQ(t, t->boots_scheduled, scheduled + 1);
	hpu_core_boot_run(t->core);
}

void hpu_test_boot_good(struct hpu_test *t)
{
	hpu_test_image_build(t, HPU_TEST_PAYLOAD_SIZE);
	hpu_test_boot(t, HPU_TEST_IMAGE_ADDR, HPU_TEST_IMAGE_SIZE);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_BOOT_STATUS), HPU_FW_BOOT_READY);
}

struct hpu_test *hpu_test_new(void)
{
	struct hpu_test *t = calloc(1, sizeof(*t));

	if (!t || !(t->core = malloc(sizeof(*t->core))) ||
	    !(t->mem = calloc(1, HPU_TEST_MEM_SIZE))) {
		perror("hpu_test_new");
		exit(2);
	}
	hpu_core_init(t->core, &hpu_test_ops, t, &hpu_test_cfg);
	return t;
}

bool hpu_tap_report(struct hpu_test *t, unsigned int n, const char *name)
{
	bool ok = !t->failed;

	if (!ok && t->logs)
		printf("# last log: %s\n", t->last_log);
	printf("%s %u - %s\n", ok ? "ok" : "not ok", n, name);
	hpu_core_destroy(t->core);
	free(t->mem);
	free(t->core);
	free(t);
	return ok;
}

unsigned int hpu_run_cases(const struct hpu_test_case *cases, size_t count, unsigned int *n)
{
	unsigned int failed = 0;
	struct hpu_test *t;
	size_t i;

	for (i = 0; i < count; i++) {
		t = hpu_test_new();
		cases[i].run(t);
		failed += !hpu_tap_report(t, ++*n, cases[i].name);
	}
	return failed;
}
