/* SPDX-License-Identifier: MIT */
/*
 * hpu device core: BAR0 register file, firmware boot and interrupt causes.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>

#include "hpu_dev_core.h"

#define HPU_CORE_REG(core, reg) ((core)->regs[HPU_REG_##reg / 4])

static const char *const hpu_boot_status_names[] = {
	[HPU_FW_BOOT_IDLE] = "IDLE",
	[HPU_FW_BOOT_LOADING] = "LOADING",
	[HPU_FW_BOOT_READY] = "READY",
	[HPU_FW_BOOT_FAILED] = "FAILED",
};

/* Interrupt causes all share the misc vector. */
static void hpu_irq_set(struct hpu_dev_core *core, uint32_t cause)
{
	HPU_CORE_REG(core, IRQ_CAUSE) |= cause;
	if (cause & ~HPU_CORE_REG(core, IRQ_MASK))
		core->ops->irq_raise(core->opaque, HPU_MSIX_VEC_MISC);
}

static void hpu_vlog(struct hpu_dev_core *core, const char *fmt, va_list ap)
{
	char msg[160];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	core->ops->log_guest_error(core->opaque, msg);
}

static void __attribute__((format(printf, 2, 3)))
hpu_log(struct hpu_dev_core *core, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	hpu_vlog(core, fmt, ap);
	va_end(ap);
}

/* A guest programming error: logged, latched in ERR_CODE and signalled. */
static void __attribute__((format(printf, 3, 4)))
hpu_guest_error(struct hpu_dev_core *core, enum hpu_err_code code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	hpu_vlog(core, fmt, ap);
	va_end(ap);
	HPU_CORE_REG(core, ERR_CODE) = code;
	hpu_irq_set(core, HPU_IRQ_ERROR);
}

static void hpu_write_reset(struct hpu_dev_core *core, uint32_t value)
{
	if (value != HPU_RESET_KEY) {
		hpu_guest_error(core, HPU_ERR_BAD_RESET_KEY,
				"RESET written with 0x%08" PRIx32 ", not the reset key", value);
		return;
	}
	hpu_core_reset(core);
}

static void hpu_write_boot_ctrl(struct hpu_dev_core *core, uint32_t value)
{
	uint32_t status = HPU_CORE_REG(core, BOOT_STATUS);

	if (value & ~HPU_BOOT_CTRL_START) {
		hpu_guest_error(core, HPU_ERR_BAD_CTRL, "BOOT_CTRL: unknown bits 0x%08" PRIx32,
				value & ~HPU_BOOT_CTRL_START);
		return;
	}
	if (!(value & HPU_BOOT_CTRL_START))
		return;
	/* FAILED may be retried; READY needs a reset first. */
	if (status != HPU_FW_BOOT_IDLE && status != HPU_FW_BOOT_FAILED) {
		hpu_guest_error(core, HPU_ERR_BOOT_BUSY, "BOOT_CTRL: START while boot status is %s",
				hpu_boot_status_names[status]);
		return;
	}
	core->boot_addr = (uint64_t)HPU_CORE_REG(core, BOOT_ADDR_HI) << 32 |
			  HPU_CORE_REG(core, BOOT_ADDR_LO);
	core->boot_size = HPU_CORE_REG(core, BOOT_SIZE);
	HPU_CORE_REG(core, BOOT_ERROR) = HPU_FW_ERR_NONE;
	HPU_CORE_REG(core, BOOT_STATUS) = HPU_FW_BOOT_LOADING;
	core->ops->schedule_boot(core->opaque);
}

static void hpu_write_irq_cause(struct hpu_dev_core *core, uint32_t value)
{
	HPU_CORE_REG(core, IRQ_CAUSE) &= ~value;
}

static void hpu_write_irq_mask(struct hpu_dev_core *core, uint32_t value)
{
	uint32_t unmasked = HPU_CORE_REG(core, IRQ_MASK) & ~value;

	HPU_CORE_REG(core, IRQ_MASK) = value;
	/* MSI-X is an edge: re-signal causes that were held back by the mask. */
	if (HPU_CORE_REG(core, IRQ_CAUSE) & unmasked)
		core->ops->irq_raise(core->opaque, HPU_MSIX_VEC_MISC);
}

#define HPU_REG_R (1u << 0)
#define HPU_REG_W (1u << 1)

struct hpu_reg_desc {
	const char *name; /* NULL: hole in the map */
	unsigned int access; /* HPU_REG_R | HPU_REG_W */
	/* Side effects of a write; NULL just stores the value. */
	void (*write)(struct hpu_dev_core *core, uint32_t value);
};

#define HPU_REG_DESC(reg, acc, fn) [HPU_REG_##reg / 4] = { #reg, acc, fn }

static const struct hpu_reg_desc hpu_reg_descs[HPU_CORE_NR_REGS] = {
	HPU_REG_DESC(ID, HPU_REG_R, NULL),
	HPU_REG_DESC(REGS_VERSION, HPU_REG_R, NULL),
	HPU_REG_DESC(HW_REV, HPU_REG_R, NULL),
	HPU_REG_DESC(SCRATCH, HPU_REG_R | HPU_REG_W, NULL),
	HPU_REG_DESC(RESET, HPU_REG_W, hpu_write_reset),
	HPU_REG_DESC(ERR_CODE, HPU_REG_R, NULL),
	HPU_REG_DESC(BOOT_ADDR_LO, HPU_REG_R | HPU_REG_W, NULL),
	HPU_REG_DESC(BOOT_ADDR_HI, HPU_REG_R | HPU_REG_W, NULL),
	HPU_REG_DESC(BOOT_SIZE, HPU_REG_R | HPU_REG_W, NULL),
	HPU_REG_DESC(BOOT_CTRL, HPU_REG_W, hpu_write_boot_ctrl),
	HPU_REG_DESC(BOOT_STATUS, HPU_REG_R, NULL),
	HPU_REG_DESC(BOOT_ERROR, HPU_REG_R, NULL),
	HPU_REG_DESC(FW_VERSION, HPU_REG_R, NULL),
	HPU_REG_DESC(FW_IF_VERSION, HPU_REG_R, NULL),
	HPU_REG_DESC(HBM_SIZE_LO, HPU_REG_R, NULL),
	HPU_REG_DESC(HBM_SIZE_HI, HPU_REG_R, NULL),
	HPU_REG_DESC(NUM_DMA, HPU_REG_R, NULL),
	HPU_REG_DESC(NUM_MME, HPU_REG_R, NULL),
	HPU_REG_DESC(NUM_TPC, HPU_REG_R, NULL),
	HPU_REG_DESC(CAPS, HPU_REG_R, NULL),
	HPU_REG_DESC(IRQ_CAUSE, HPU_REG_R | HPU_REG_W, hpu_write_irq_cause),
	HPU_REG_DESC(IRQ_MASK, HPU_REG_R | HPU_REG_W, hpu_write_irq_mask),
};

static uint32_t hpu_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Image fields are little-endian whatever the host is. */
#define HPU_FW_FIELD(img, field) hpu_le32((img) + offsetof(struct hpu_fw_header, field))

static enum hpu_fw_boot_error hpu_fw_check(const uint8_t *img, uint32_t size)
{
	uint32_t if_version = HPU_FW_FIELD(img, if_version);
	uLong crc;

	if (HPU_FW_FIELD(img, magic) != HPU_FW_MAGIC)
		return HPU_FW_ERR_BAD_MAGIC;
	if (HPU_FW_IF_MAJOR(if_version) != HPU_FW_IF_VERSION_MAJOR ||
	    HPU_FW_IF_MINOR(if_version) > HPU_FW_IF_VERSION_MINOR)
		return HPU_FW_ERR_BAD_IF_VERSION;
	if (HPU_FW_FIELD(img, header_size) != HPU_FW_HEADER_SIZE ||
	    (uint64_t)HPU_FW_HEADER_SIZE + HPU_FW_FIELD(img, payload_size) != size)
		return HPU_FW_ERR_BAD_SIZE;
	if (HPU_FW_FIELD(img, flags) || HPU_FW_FIELD(img, reserved))
		return HPU_FW_ERR_BAD_FLAGS;
	crc = crc32(0, img, HPU_FW_CRC_OFFSET);
	crc = crc32(crc, img + HPU_FW_HEADER_SIZE, size - HPU_FW_HEADER_SIZE);
	if (crc != hpu_le32(img + HPU_FW_CRC_OFFSET))
		return HPU_FW_ERR_BAD_CRC;
	return HPU_FW_ERR_NONE;
}

/* Copy the image latched at START into boot SRAM. */
static enum hpu_fw_boot_error hpu_boot_fetch(struct hpu_dev_core *core)
{
	uint64_t addr = core->boot_addr;
	uint32_t size = core->boot_size;

	if (size < HPU_FW_HEADER_SIZE || size > HPU_FW_MAX_IMAGE_SIZE)
		return HPU_FW_ERR_BAD_SIZE;
	/* The transfer must not wrap around the top of the bus address space. */
	if (addr + (size - 1) < addr)
		return HPU_FW_ERR_DMA;
	if (core->ops->dma_read(core->opaque, addr, core->boot_sram, size))
		return HPU_FW_ERR_DMA;
	return HPU_FW_ERR_NONE;
}

static void hpu_boot_ready(struct hpu_dev_core *core)
{
	const uint8_t *img = core->boot_sram;

	HPU_CORE_REG(core, FW_VERSION) = HPU_FW_FIELD(img, fw_version);
	HPU_CORE_REG(core, FW_IF_VERSION) = HPU_FW_FIELD(img, if_version);
	HPU_CORE_REG(core, HBM_SIZE_LO) = (uint32_t)core->cfg.hbm_size;
	HPU_CORE_REG(core, HBM_SIZE_HI) = (uint32_t)(core->cfg.hbm_size >> 32);
	HPU_CORE_REG(core, NUM_DMA) = core->cfg.num_dma;
	HPU_CORE_REG(core, NUM_MME) = core->cfg.num_mme;
	HPU_CORE_REG(core, NUM_TPC) = core->cfg.num_tpc;
	HPU_CORE_REG(core, CAPS) = core->cfg.caps;
	HPU_CORE_REG(core, BOOT_STATUS) = HPU_FW_BOOT_READY;
}

void hpu_core_boot_run(struct hpu_dev_core *core)
{
	enum hpu_fw_boot_error err;

	/* A run scheduled before a reset finds the device no longer LOADING. */
	if (HPU_CORE_REG(core, BOOT_STATUS) != HPU_FW_BOOT_LOADING)
		return;

	err = hpu_boot_fetch(core);
	if (err == HPU_FW_ERR_NONE)
		err = hpu_fw_check(core->boot_sram, core->boot_size);

	if (err == HPU_FW_ERR_NONE) {
		hpu_boot_ready(core);
	} else {
		hpu_log(core, "firmware boot failed: %s (image 0x%" PRIx64 ", %" PRIu32 " bytes)",
			hpu_fw_boot_error_name(err), core->boot_addr, core->boot_size);
		HPU_CORE_REG(core, BOOT_ERROR) = err;
		HPU_CORE_REG(core, BOOT_STATUS) = HPU_FW_BOOT_FAILED;
	}
	hpu_irq_set(core, HPU_IRQ_BOOT_DONE);
}

/* The register an access targets, or NULL after reporting why there is none. */
static const struct hpu_reg_desc *hpu_decode(struct hpu_dev_core *core, uint64_t offset,
					     unsigned int size, const char *dir)
{
	const struct hpu_reg_desc *desc;

	if (size != 4 || offset % 4) {
		hpu_guest_error(core, HPU_ERR_BAD_ACCESS,
				"%u-byte %s at 0x%" PRIx64 ": only aligned 32-bit accesses",
				size, dir, offset);
		return NULL;
	}
	desc = offset / 4 < HPU_CORE_NR_REGS ? &hpu_reg_descs[offset / 4] : NULL;
	if (!desc || !desc->name) {
		hpu_guest_error(core, HPU_ERR_BAD_ACCESS, "%s at unmapped offset 0x%" PRIx64,
				dir, offset);
		return NULL;
	}
	return desc;
}

uint32_t hpu_core_mmio_read(struct hpu_dev_core *core, uint64_t offset, unsigned int size)
{
	const struct hpu_reg_desc *desc = hpu_decode(core, offset, size, "read");

	/* Write-only registers read as zero. */
	if (!desc || !(desc->access & HPU_REG_R))
		return 0;
	return core->regs[offset / 4];
}

void hpu_core_mmio_write(struct hpu_dev_core *core, uint64_t offset, uint64_t value,
			 unsigned int size)
{
	const struct hpu_reg_desc *desc = hpu_decode(core, offset, size, "write");

	if (!desc)
		return;
	if (!(desc->access & HPU_REG_W)) {
		hpu_guest_error(core, HPU_ERR_READ_ONLY, "write of 0x%08" PRIx64 " to read-only %s",
				value, desc->name);
		return;
	}
	if (desc->write)
		desc->write(core, (uint32_t)value);
	else
		core->regs[offset / 4] = (uint32_t)value;
}

void hpu_core_reset(struct hpu_dev_core *core)
{
	if (HPU_CORE_REG(core, BOOT_STATUS) == HPU_FW_BOOT_LOADING)
		core->ops->cancel_boot(core->opaque);

	/* Capability registers stay zero until a boot succeeds. */
	memset(core->regs, 0, sizeof(core->regs));
	core->boot_addr = 0;
	core->boot_size = 0;
	HPU_CORE_REG(core, ID) = HPU_ID_VALUE;
	HPU_CORE_REG(core, REGS_VERSION) = HPU_REGS_VERSION;
	HPU_CORE_REG(core, HW_REV) = HPU_HW_REVISION;
	HPU_CORE_REG(core, BOOT_STATUS) = HPU_FW_BOOT_IDLE;
	HPU_CORE_REG(core, IRQ_MASK) = UINT32_MAX;
}

void hpu_core_init(struct hpu_dev_core *core, const struct hpu_core_ops *ops, void *opaque,
		   const struct hpu_core_config *cfg)
{
	memset(core, 0, sizeof(*core));
	core->ops = ops;
	core->opaque = opaque;
	core->cfg = *cfg;
	hpu_core_reset(core);
}

int hpu_core_check_config(const struct hpu_core_config *cfg, char *err, size_t err_len)
{
	const struct {
		const char *name;
		uint32_t count;
	} engines[] = {
		{ "DMA", cfg->num_dma },
		{ "MME", cfg->num_mme },
		{ "TPC", cfg->num_tpc },
	};
	size_t i;

	if (!cfg->hbm_size || cfg->hbm_size % HPU_CORE_HBM_ALIGN) {
		snprintf(err, err_len, "HBM size %" PRIu64 " is not a non-zero multiple of 2 MiB",
			 cfg->hbm_size);
		return -EINVAL;
	}
	for (i = 0; i < sizeof(engines) / sizeof(engines[0]); i++) {
		if (!engines[i].count || engines[i].count > HPU_CORE_MAX_ENGINES) {
			snprintf(err, err_len, "%s engine count %" PRIu32 " is outside 1..%d",
				 engines[i].name, engines[i].count, HPU_CORE_MAX_ENGINES);
			return -EINVAL;
		}
	}
	return 0;
}
