/* SPDX-License-Identifier: MIT */
/*
 * hpu device core: BAR0 register file, user-queue doorbell pages, BAR4,
 * firmware boot, interrupt causes and reset.
 *
 * Boot: BOOT_CTRL START latches the mailbox (image address and size) and
 * asks the embedder for a deferred boot, so the image is fetched by DMA
 * later and off the vCPU's MMIO write.  hdm_core_boot_run() then checks the
 * image (magic, interface version, sizes, flags, CRC-32) and reports READY
 * with the device's capabilities or FAILED with a reason in BOOT_ERROR,
 * and raises BOOT_DONE either way.
 *
 * Resets (1.7): a cold one (HPU_RESET_KEY, and power-on) zeroes everything and
 * disarms fault injection; a warm one (HPU_RESET_KEY_WARM) keeps HBM but its
 * context table, the queues' saved and started jobs (hdm_qman.c) and fault
 * injection.  The heartbeat counts HPU_FW_HEARTBEAT_MS periods of the device
 * clock since READY, computed when read.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>

#include "hdm_internal.h"
#include "hdm_le.h"
#include "hdm_mme.h"
#include "hdm_tmem.h"

/* Registers of the device block (identity to interrupts). */
#define HDM_DEV_REG_WORDS (HPU_REG_IRQ_MASK / 4 + 1)

static const char *const hdm_boot_status_names[] = {
	[HPU_FW_BOOT_IDLE] = "IDLE",
	[HPU_FW_BOOT_LOADING] = "LOADING",
	[HPU_FW_BOOT_READY] = "READY",
	[HPU_FW_BOOT_FAILED] = "FAILED",
};

void hdm_core_lock(struct hdm_core *core)
{
	pthread_mutex_lock(&core->lock);
}

void hdm_core_unlock(struct hdm_core *core)
{
	bool raise = core->irq_pending;

	core->irq_pending = false;
	pthread_mutex_unlock(&core->lock);
	/* A lost message leaves its causes latched: the next one, or a poll, finds them. */
	if (raise && !hdm_fault_should_fail(core, HPU_FAULT_LOST_IRQ, HPU_FI_ANY_ASID))
		core->ops->irq_raise(core->opaque, HPU_MSIX_VEC_MISC);
}

/* Interrupt causes all share the misc vector. */
void hdm_irq_set(struct hdm_core *core, uint32_t cause)
{
	HDM_CORE_REG(core, IRQ_CAUSE) |= cause;
	if (cause & ~HDM_CORE_REG(core, IRQ_MASK))
		core->irq_pending = true;
}

static void hdm_vlog(struct hdm_core *core, const char *fmt, va_list ap)
{
	char msg[160];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	core->ops->log_guest_error(core->opaque, msg);
}

void hdm_log(struct hdm_core *core, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	hdm_vlog(core, fmt, ap);
	va_end(ap);
}

void hdm_guest_error(struct hdm_core *core, enum hpu_err_code code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	hdm_vlog(core, fmt, ap);
	va_end(ap);
	HDM_CORE_REG(core, ERR_CODE) = code;
	hdm_irq_set(core, HPU_IRQ_ERROR);
}

static int hdm_reset(struct hdm_core *core, bool warm);

static void hdm_write_reset(struct hdm_core *core, unsigned int unit HDM_UNUSED,
			    uint32_t value)
{
	if (value != HPU_RESET_KEY && value != HPU_RESET_KEY_WARM) {
		hdm_guest_error(core, HPU_ERR_BAD_RESET_KEY,
				"RESET written with 0x%08" PRIx32 ", not a reset key", value);
		return;
	}
	if (value == HPU_RESET_KEY_WARM &&
	    hdm_fault_should_fail(core, HPU_FAULT_RESET_FAIL, HPU_FI_ANY_ASID))
		return;
	hdm_reset(core, value == HPU_RESET_KEY_WARM);
}

static void hdm_write_engine_reset(struct hdm_core *core, unsigned int unit HDM_UNUSED,
				   uint32_t value)
{
	if (value != HPU_RESET_KEY) {
		hdm_guest_error(core, HPU_ERR_BAD_RESET_KEY,
				"ENGINE_RESET written with 0x%08" PRIx32 ", not the reset key", value);
		return;
	}
	if (!hdm_fault_should_fail(core, HPU_FAULT_RESET_FAIL, HPU_FI_ANY_ASID))
		hdm_qman_engine_reset(core);
}

void hdm_heartbeat_update(struct hdm_core *core)
{
	const uint64_t period = HPU_FW_HEARTBEAT_MS * 1000000ull;
	uint64_t now, n;

	if (HDM_CORE_REG(core, BOOT_STATUS) != HPU_FW_BOOT_READY || core->hb_lost)
		return;
	now = core->ops->now_ns(core->opaque);
	n = now > core->hb_ready_ns ? (now - core->hb_ready_ns) / period : 0;
	if (n > UINT32_MAX)
		n = UINT32_MAX;
	/* Each period is an event of HEARTBEAT_LOSS; unarmed, they all pass at once. */
	while (core->hb_periods < n) {
		if (!(__atomic_load_n(&core->fault.armed, __ATOMIC_RELAXED) &
		      1u << HPU_FAULT_HEARTBEAT_LOSS)) {
			core->hb_periods = (uint32_t)n;
			break;
		}
		if (hdm_fault_should_fail(core, HPU_FAULT_HEARTBEAT_LOSS, HPU_FI_ANY_ASID)) {
			core->hb_lost = true;
			break;
		}
		core->hb_periods++;
	}
}

static uint32_t hdm_read_heartbeat(struct hdm_core *core, unsigned int unit HDM_UNUSED)
{
	hdm_heartbeat_update(core);
	return HDM_CORE_REG(core, BOOT_STATUS) == HPU_FW_BOOT_READY ? core->hb_periods : 0;
}

static void hdm_write_boot_ctrl(struct hdm_core *core, unsigned int unit HDM_UNUSED,
				uint32_t value)
{
	uint32_t status = HDM_CORE_REG(core, BOOT_STATUS);

	if (value & ~HPU_BOOT_CTRL_START) {
		hdm_guest_error(core, HPU_ERR_BAD_CTRL, "BOOT_CTRL: unknown bits 0x%08" PRIx32,
				value & ~HPU_BOOT_CTRL_START);
		return;
	}
	if (!(value & HPU_BOOT_CTRL_START))
		return;
	/* FAILED may be retried; READY needs a reset first. */
	if (status != HPU_FW_BOOT_IDLE && status != HPU_FW_BOOT_FAILED) {
		hdm_guest_error(core, HPU_ERR_BOOT_BUSY, "BOOT_CTRL: START while boot status is %s",
				hdm_boot_status_names[status]);
		return;
	}
	core->boot_addr = (uint64_t)HDM_CORE_REG(core, BOOT_ADDR_HI) << 32 |
			  HDM_CORE_REG(core, BOOT_ADDR_LO);
	core->boot_size = HDM_CORE_REG(core, BOOT_SIZE);
	HDM_CORE_REG(core, BOOT_ERROR) = HPU_FW_ERR_NONE;
	HDM_CORE_REG(core, BOOT_STATUS) = HPU_FW_BOOT_LOADING;
	core->ops->schedule_boot(core->opaque);
}

static void hdm_write_irq_cause(struct hdm_core *core, unsigned int unit HDM_UNUSED,
				uint32_t value)
{
	HDM_CORE_REG(core, IRQ_CAUSE) &= ~value;
}

static void hdm_write_irq_mask(struct hdm_core *core, unsigned int unit HDM_UNUSED,
			       uint32_t value)
{
	uint32_t unmasked = HDM_CORE_REG(core, IRQ_MASK) & ~value;

	HDM_CORE_REG(core, IRQ_MASK) = value;
	/* MSI-X is an edge: re-signal causes that were held back by the mask. */
	if (HDM_CORE_REG(core, IRQ_CAUSE) & unmasked)
		core->irq_pending = true;
}

#define HDM_REG_DESC(reg, acc, fn) [HPU_REG_##reg / 4] = { #reg, acc, NULL, fn, NULL }

/* Registers of 1.7 before fault injection's (hdm_fault.c). */
#define HDM_RESET_REG_WORDS ((HPU_REG_ENGINE_RESET - HPU_REG_FW_HEARTBEAT) / 4 + 1)

static const struct hdm_reg_desc hdm_reset_reg_descs[HDM_RESET_REG_WORDS] = {
	[0] = { "FW_HEARTBEAT", HDM_REG_R, NULL, NULL, hdm_read_heartbeat },
	[1] = { "ENGINE_RESET", HDM_REG_W, NULL, hdm_write_engine_reset, NULL },
};

static const struct hdm_reg_desc hdm_reg_descs[HDM_DEV_REG_WORDS] = {
	HDM_REG_DESC(ID, HDM_REG_R, NULL),
	HDM_REG_DESC(REGS_VERSION, HDM_REG_R, NULL),
	HDM_REG_DESC(HW_REV, HDM_REG_R, NULL),
	HDM_REG_DESC(SCRATCH, HDM_REG_R | HDM_REG_W, NULL),
	HDM_REG_DESC(RESET, HDM_REG_W, hdm_write_reset),
	HDM_REG_DESC(ERR_CODE, HDM_REG_R, NULL),
	HDM_REG_DESC(BOOT_ADDR_LO, HDM_REG_R | HDM_REG_W, NULL),
	HDM_REG_DESC(BOOT_ADDR_HI, HDM_REG_R | HDM_REG_W, NULL),
	HDM_REG_DESC(BOOT_SIZE, HDM_REG_R | HDM_REG_W, NULL),
	HDM_REG_DESC(BOOT_CTRL, HDM_REG_W, hdm_write_boot_ctrl),
	HDM_REG_DESC(BOOT_STATUS, HDM_REG_R, NULL),
	HDM_REG_DESC(BOOT_ERROR, HDM_REG_R, NULL),
	HDM_REG_DESC(FW_VERSION, HDM_REG_R, NULL),
	HDM_REG_DESC(FW_IF_VERSION, HDM_REG_R, NULL),
	HDM_REG_DESC(HBM_SIZE_LO, HDM_REG_R, NULL),
	HDM_REG_DESC(HBM_SIZE_HI, HDM_REG_R, NULL),
	HDM_REG_DESC(NUM_DMA, HDM_REG_R, NULL),
	HDM_REG_DESC(NUM_MME, HDM_REG_R, NULL),
	HDM_REG_DESC(NUM_TPC, HDM_REG_R, NULL),
	HDM_REG_DESC(CAPS, HDM_REG_R, NULL),
	HDM_REG_DESC(NUM_UQ, HDM_REG_R, NULL),
	HDM_REG_DESC(IRQ_CAUSE, HDM_REG_R | HDM_REG_W, hdm_write_irq_cause),
	HDM_REG_DESC(IRQ_MASK, HDM_REG_R | HDM_REG_W, hdm_write_irq_mask),
};

/* A group of identical register units: the device's own, the event queue, each queue. */
struct hdm_reg_block {
	uint32_t base;
	uint32_t stride; /* bytes from one unit to the next */
	unsigned int units;
	const char *unit_name; /* names units "queue 2"; NULL when there is one */
	const struct hdm_reg_desc *descs;
	unsigned int words; /* descs of a unit; the rest of its stride is a hole */
	unsigned int first_unit; /* callbacks get first_unit + unit: a queue's engine number */
};

#define HDM_REG_BLOCK(base, stride, units, name, descs, first) \
	{ base, stride, units, name, descs, sizeof(descs) / sizeof((descs)[0]), first }

/* An address space of registers: a BAR, as its accesses are reported. */
struct hdm_reg_space {
	const char *name;
	const struct hdm_reg_block *blocks;
	size_t nr_blocks;
};

static const struct hdm_reg_block hdm_bar0_blocks[] = {
	HDM_REG_BLOCK(0, HDM_DEV_REG_WORDS * 4, 1, NULL, hdm_reg_descs, 0),
	HDM_REG_BLOCK(HPU_REG_EQ_RING_LO, HDM_EQ_REG_WORDS * 4, 1, NULL, hdm_eq_reg_descs, 0),
	HDM_REG_BLOCK(HPU_REG_UQ_IRQ_PENDING, 4, 1, NULL, hdm_uq_irq_reg_descs, 0),
	HDM_REG_BLOCK(HPU_REG_FW_HEARTBEAT, HDM_RESET_REG_WORDS * 4, 1, NULL, hdm_reset_reg_descs,
		      0),
	HDM_REG_BLOCK(HPU_REG_FI_SELECT, HDM_FI_REG_WORDS * 4, 1, NULL, hdm_fi_reg_descs, 0),
	HDM_REG_BLOCK(HPU_REG_QUEUE_BASE, HPU_REG_QUEUE_STRIDE, HPU_NUM_QUEUES, "queue",
		      hdm_qman_reg_descs, 0),
	HDM_REG_BLOCK(HPU_REG_UQ_BASE, HPU_REG_UQ_STRIDE, HPU_NUM_UQ, "user queue",
		      hdm_uq_reg_descs, HDM_QMAN_UQ(0)),
};

/* The doorbell pages mirror registers of the user queues' BAR0 blocks (hdm_uq.c). */
static const struct hdm_reg_block hdm_uq_db_blocks[] = {
	HDM_REG_BLOCK(0, HPU_UQ_DB_PAGE_SIZE, HPU_NUM_UQ, "user queue", hdm_uq_db_reg_descs,
		      HDM_QMAN_UQ(0)),
};

#define HDM_REG_SPACE(name, blocks) { name, blocks, sizeof(blocks) / sizeof((blocks)[0]) }

static const struct hdm_reg_space hdm_bar0 = HDM_REG_SPACE("register", hdm_bar0_blocks);
static const struct hdm_reg_space hdm_uq_db = HDM_REG_SPACE("doorbell", hdm_uq_db_blocks);

/* Image fields are little-endian whatever the host is. */
#define HDM_FW_FIELD(img, field) hdm_ld_le32((img) + offsetof(struct hpu_fw_header, field))

static enum hpu_fw_boot_error hdm_fw_check(const uint8_t *img, uint32_t size)
{
	uint32_t if_version = HDM_FW_FIELD(img, if_version);
	uLong crc;

	if (HDM_FW_FIELD(img, magic) != HPU_FW_MAGIC)
		return HPU_FW_ERR_BAD_MAGIC;
	if (HPU_FW_IF_MAJOR(if_version) != HPU_FW_IF_VERSION_MAJOR ||
	    HPU_FW_IF_MINOR(if_version) > HPU_FW_IF_VERSION_MINOR)
		return HPU_FW_ERR_BAD_IF_VERSION;
	if (HDM_FW_FIELD(img, header_size) != HPU_FW_HEADER_SIZE ||
	    (uint64_t)HPU_FW_HEADER_SIZE + HDM_FW_FIELD(img, payload_size) != size)
		return HPU_FW_ERR_BAD_SIZE;
	if (HDM_FW_FIELD(img, flags) || HDM_FW_FIELD(img, reserved))
		return HPU_FW_ERR_BAD_FLAGS;
	crc = crc32(0, img, HPU_FW_CRC_OFFSET);
	crc = crc32(crc, img + HPU_FW_HEADER_SIZE, size - HPU_FW_HEADER_SIZE);
	if (crc != hdm_ld_le32(img + HPU_FW_CRC_OFFSET))
		return HPU_FW_ERR_BAD_CRC;
	return HPU_FW_ERR_NONE;
}

/* Copy the image latched at START into boot SRAM. */
static enum hpu_fw_boot_error hdm_boot_fetch(struct hdm_core *core, uint64_t addr,
					     uint32_t size)
{
	if (size < HPU_FW_HEADER_SIZE || size > HPU_FW_MAX_IMAGE_SIZE)
		return HPU_FW_ERR_BAD_SIZE;
	/* The transfer must not wrap around the top of the bus address space. */
	if (addr + (size - 1) < addr)
		return HPU_FW_ERR_DMA;
	if (core->ops->dma_read(core->opaque, addr, core->boot_sram, size))
		return HPU_FW_ERR_DMA;
	return HPU_FW_ERR_NONE;
}

static void hdm_boot_ready(struct hdm_core *core)
{
	const uint8_t *img = core->boot_sram;

	HDM_CORE_REG(core, FW_VERSION) = HDM_FW_FIELD(img, fw_version);
	HDM_CORE_REG(core, FW_IF_VERSION) = HDM_FW_FIELD(img, if_version);
	HDM_CORE_REG(core, HBM_SIZE_LO) = (uint32_t)core->cfg.hbm_size;
	HDM_CORE_REG(core, HBM_SIZE_HI) = (uint32_t)(core->cfg.hbm_size >> 32);
	HDM_CORE_REG(core, NUM_DMA) = core->cfg.num_dma;
	HDM_CORE_REG(core, NUM_MME) = core->cfg.num_mme;
	HDM_CORE_REG(core, NUM_TPC) = core->cfg.num_tpc;
	HDM_CORE_REG(core, CAPS) = core->cfg.caps;
	HDM_CORE_REG(core, NUM_UQ) = HPU_NUM_UQ;
	HDM_CORE_REG(core, BOOT_STATUS) = HPU_FW_BOOT_READY;
	core->hb_ready_ns = core->ops->now_ns(core->opaque);
	core->hb_periods = 0;
	/* User queues a warm reset kept run again. */
	hdm_qman_kick(core);
}

void hdm_core_boot_run(struct hdm_core *core)
{
	enum hpu_fw_boot_error err;
	uint64_t addr;
	uint32_t size, gen;

	hdm_core_lock(core);
	/* A run scheduled before a reset finds the device no longer LOADING. */
	if (HDM_CORE_REG(core, BOOT_STATUS) != HPU_FW_BOOT_LOADING)
		goto out;

	/* Unlocked: the image may be fetched from the device's own BAR. */
	addr = core->boot_addr;
	size = core->boot_size;
	gen = core->gen;
	hdm_core_unlock(core);
	err = hdm_boot_fetch(core, addr, size);
	hdm_core_lock(core);
	if (gen != core->gen)
		goto out;

	if (err == HPU_FW_ERR_NONE)
		err = hdm_fw_check(core->boot_sram, core->boot_size);
	/* Without HBM nothing may run: no doorbell is taken until READY. */
	if (!core->hbm)
		err = HPU_FW_ERR_NO_HBM;
	if (hdm_fault_should_fail(core, HPU_FAULT_BOOT_FAIL, HPU_FI_ANY_ASID))
		err = HPU_FW_ERR_INJECTED;
	if (err == HPU_FW_ERR_NONE) {
		hdm_boot_ready(core);
	} else {
		hdm_log(core, "firmware boot failed: %s (image 0x%" PRIx64 ", %" PRIu32 " bytes)",
			hpu_fw_boot_error_name(err), core->boot_addr, core->boot_size);
		HDM_CORE_REG(core, BOOT_ERROR) = err;
		HDM_CORE_REG(core, BOOT_STATUS) = HPU_FW_BOOT_FAILED;
	}
	hdm_irq_set(core, HPU_IRQ_BOOT_DONE);
out:
	hdm_core_unlock(core);
}

/* A decoded register access. */
struct hdm_reg_ref {
	const struct hdm_reg_block *block;
	const struct hdm_reg_desc *desc;
	unsigned int unit; /* within the block */
	unsigned int arg;  /* the unit the callbacks get */
};

static const char *hdm_reg_name(const struct hdm_reg_ref *ref, char *buf, size_t len)
{
	if (!ref->block->unit_name)
		return ref->desc->name;
	snprintf(buf, len, "%s %u %s", ref->block->unit_name, ref->unit, ref->desc->name);
	return buf;
}

/* The register an access targets; false after reporting why there is none. */
static bool hdm_decode(struct hdm_core *core, const struct hdm_reg_space *space,
		       uint64_t offset, unsigned int size, const char *dir, struct hdm_reg_ref *ref)
{
	size_t i;

	if (size != 4 || offset % 4) {
		hdm_guest_error(core, HPU_ERR_BAD_ACCESS,
				"%u-byte %s %s at 0x%" PRIx64 ": only aligned 32-bit accesses",
				size, space->name, dir, offset);
		return false;
	}
	for (i = 0; i < space->nr_blocks; i++) {
		const struct hdm_reg_block *block = &space->blocks[i];
		uint64_t rel = offset - block->base;
		unsigned int word;

		if (offset < block->base || rel >= (uint64_t)block->stride * block->units)
			continue;
		word = (unsigned int)(rel % block->stride / 4);
		ref->block = block;
		ref->unit = (unsigned int)(rel / block->stride);
		ref->arg = block->first_unit + ref->unit;
		ref->desc = word < block->words ? &block->descs[word] : NULL;
		if (ref->desc && ref->desc->name)
			return true;
		break;
	}
	hdm_guest_error(core, HPU_ERR_BAD_ACCESS, "%s %s at unmapped offset 0x%" PRIx64,
			space->name, dir, offset);
	return false;
}

static uint32_t hdm_space_read(struct hdm_core *core, const struct hdm_reg_space *space,
			       uint64_t offset, unsigned int size)
{
	struct hdm_reg_ref ref;
	uint32_t value = 0;

	hdm_core_lock(core);
	/* Write-only registers read as zero. */
	if (hdm_decode(core, space, offset, size, "read", &ref) && (ref.desc->access & HDM_REG_R))
		value = ref.desc->read ? ref.desc->read(core, ref.arg) : core->regs[offset / 4];
	hdm_core_unlock(core);
	return value;
}

static void hdm_space_write(struct hdm_core *core, const struct hdm_reg_space *space,
			    uint64_t offset, uint64_t value, unsigned int size)
{
	struct hdm_reg_ref ref;
	const char *why;
	char name[32];

	hdm_core_lock(core);
	if (!hdm_decode(core, space, offset, size, "write", &ref))
		goto out;
	if (!(ref.desc->access & HDM_REG_W)) {
		hdm_guest_error(core, HPU_ERR_READ_ONLY, "write of 0x%08" PRIx64 " to read-only %s",
				value, hdm_reg_name(&ref, name, sizeof(name)));
		goto out;
	}
	why = ref.desc->check ? ref.desc->check(core, ref.arg, (uint32_t)value) : NULL;
	if (why)
		hdm_guest_error(core, HPU_ERR_BAD_QUEUE,
				"write of 0x%08" PRIx64 " to %s refused: %s", value,
				hdm_reg_name(&ref, name, sizeof(name)), why);
	else if (ref.desc->write)
		ref.desc->write(core, ref.arg, (uint32_t)value);
	else
		core->regs[offset / 4] = (uint32_t)value;
out:
	hdm_core_unlock(core);
}

uint32_t hdm_core_mmio_read(struct hdm_core *core, uint64_t offset, unsigned int size)
{
	return hdm_space_read(core, &hdm_bar0, offset, size);
}

void hdm_core_mmio_write(struct hdm_core *core, uint64_t offset, uint64_t value,
			 unsigned int size)
{
	hdm_space_write(core, &hdm_bar0, offset, value, size);
}

uint32_t hdm_core_uq_db_read(struct hdm_core *core, uint64_t offset, unsigned int size)
{
	return hdm_space_read(core, &hdm_uq_db, offset, size);
}

void hdm_core_uq_db_write(struct hdm_core *core, uint64_t offset, uint64_t value,
			  unsigned int size)
{
	hdm_space_write(core, &hdm_uq_db, offset, value, size);
}

/* Whether a BAR4 access is one the MMU region takes, after reporting why not. */
static bool hdm_mmu_bar_check(struct hdm_core *core, uint64_t offset, unsigned int size,
			      const char *dir)
{
	if (!(size == 4 || size == 8) || offset % size || offset >= HPU_MMU_REGION_SIZE) {
		hdm_guest_error(core, HPU_ERR_BAD_ACCESS,
				"%u-byte BAR4 %s at 0x%" PRIx64 ": only aligned 4- and 8-byte accesses",
				size, dir, offset);
		return false;
	}
	/* Reads as zeros, ignores writes. */
	if (!core->hbm) {
		hdm_log(core, "BAR4 %s at 0x%" PRIx64 ": no HBM since the last reset", dir, offset);
		return false;
	}
	return true;
}

uint64_t hdm_core_mmu_read(struct hdm_core *core, uint64_t offset, unsigned int size)
{
	const uint8_t *p;
	uint64_t value = 0, avail;

	hdm_core_lock(core);
	if (hdm_mmu_bar_check(core, offset, size, "read")) {
		p = hdm_hbm_map(core->hbm, offset, false, &avail);
		if (p)
			value = size == 8 ? hdm_ld_le64(p) : hdm_ld_le32(p);
	}
	hdm_core_unlock(core);
	return value;
}

void hdm_core_mmu_write(struct hdm_core *core, uint64_t offset, uint64_t value,
			unsigned int size)
{
	uint8_t *p;
	uint64_t avail;

	hdm_core_lock(core);
	if (hdm_mmu_bar_check(core, offset, size, "write")) {
		p = hdm_hbm_map(core->hbm, offset, true, &avail);
		if (size == 8)
			hdm_st_le64(p, value);
		else
			hdm_st_le32(p, (uint32_t)value);
	}
	hdm_core_unlock(core);
}

/*
 * Lock held (dropped while a warm reset lets the engine reach a yield point).
 * Without host memory for HBM the device stays FAILED (BOOT_ERROR NO_HBM) with
 * core->hbm NULL, until a reset finds some; a warm reset without HBM is a cold one.
 */
static int hdm_reset(struct hdm_core *core, bool warm)
{
	const size_t uq_words = HPU_NUM_UQ * HPU_REG_UQ_STRIDE / 4;
	uint32_t *uq_regs = &core->regs[HPU_REG_UQ_BASE / 4];
	uint32_t uq_kept[HPU_NUM_UQ * HPU_REG_UQ_STRIDE / 4];
	struct hdm_hbm *old = core->hbm;

	warm = warm && old;
	if (warm)
		hdm_qman_quiesce(core);
	if (HDM_CORE_REG(core, BOOT_STATUS) == HPU_FW_BOOT_LOADING)
		core->ops->cancel_boot(core->opaque);

	/* Capability registers stay zero until a boot succeeds. */
	if (warm)
		memcpy(uq_kept, uq_regs, sizeof(uq_kept));
	memset(core->regs, 0, sizeof(core->regs));
	if (warm)
		memcpy(uq_regs, uq_kept, uq_words * 4);
	core->boot_addr = 0;
	core->boot_size = 0;
	HDM_CORE_REG(core, ID) = HPU_ID_VALUE;
	HDM_CORE_REG(core, REGS_VERSION) = HPU_REGS_VERSION;
	HDM_CORE_REG(core, HW_REV) = HPU_HW_REVISION;
	HDM_CORE_REG(core, BOOT_STATUS) = HPU_FW_BOOT_IDLE;
	HDM_CORE_REG(core, IRQ_MASK) = UINT32_MAX;

	/* Work in flight (a boot fetch, a job, an event write) sees this and lets go. */
	__atomic_store_n(&core->gen, core->gen + 1, __ATOMIC_RELAXED);
	core->eq_posting = false;
	core->hb_lost = false;
	core->hb_periods = 0;
	hdm_qman_reset(core, warm);
	if (!warm)
		hdm_fault_disarm_all(&core->fault);
	if (warm) {
		/* The MMU's context table is HBM the driver writes again. */
		hdm_hbm_zero(core->hbm, HPU_MMU_CTX_TABLE, HPU_MMU_NUM_ASIDS * 8ull);
		return 0;
	}
	core->hbm = hdm_hbm_new(core->cfg.hbm_size);
	if (old)
		hdm_qman_retire(core, old);
	if (core->hbm)
		return 0;
	hdm_log(core, "reset: the host has no room for %" PRIu64 " bytes of HBM", core->cfg.hbm_size);
	HDM_CORE_REG(core, BOOT_STATUS) = HPU_FW_BOOT_FAILED;
	HDM_CORE_REG(core, BOOT_ERROR) = HPU_FW_ERR_NO_HBM;
	return -ENOMEM;
}

int hdm_core_reset(struct hdm_core *core)
{
	int err;

	hdm_core_lock(core);
	err = hdm_reset(core, false);
	hdm_fault_power_on(&core->fault, core->cfg.faults);
	hdm_core_unlock(core);
	return err;
}

int hdm_core_init(struct hdm_core *core, const struct hdm_core_ops *ops, void *opaque,
		  const struct hdm_core_config *cfg)
{
	pthread_condattr_t attr;

	memset(core, 0, sizeof(*core));
	core->ops = ops;
	core->opaque = opaque;
	core->cfg = *cfg;
	pthread_mutex_init(&core->lock, NULL);
	pthread_cond_init(&core->qman.work, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&core->qman.stepped, &attr);
	pthread_condattr_destroy(&attr);
	hdm_fault_init(&core->fault);
	core->qman.held_max = HDM_TMEM_HELD_MAX;
	hdm_mme_init();
	hdm_tpc_init(&core->tpc);
	return hdm_core_reset(core);
}

void hdm_core_destroy(struct hdm_core *core)
{
	hdm_qman_destroy(core);
	if (core->qman.retired)
		hdm_hbm_put(core->qman.retired);
	if (core->hbm)
		hdm_hbm_put(core->hbm);
	hdm_tpc_destroy(&core->tpc);
	hdm_fault_destroy(&core->fault);
	pthread_cond_destroy(&core->qman.stepped);
	pthread_cond_destroy(&core->qman.work);
	pthread_mutex_destroy(&core->lock);
}

size_t hdm_core_hbm_chunks(struct hdm_core *core)
{
	size_t n;

	hdm_core_lock(core);
	n = core->hbm ? hdm_hbm_chunks(core->hbm) : 0;
	hdm_core_unlock(core);
	return n;
}

int hdm_core_check_config(const struct hdm_core_config *cfg, char *err, size_t err_len)
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

	if (cfg->hbm_size < HDM_CORE_HBM_MIN || cfg->hbm_size > HDM_CORE_HBM_MAX ||
	    cfg->hbm_size % HDM_CORE_HBM_ALIGN) {
		snprintf(err, err_len,
			 "HBM size %" PRIu64 " is not a multiple of 2 MiB from 66 MiB to 1 TiB",
			 cfg->hbm_size);
		return -EINVAL;
	}
	for (i = 0; i < sizeof(engines) / sizeof(engines[0]); i++) {
		if (!engines[i].count || engines[i].count > HDM_CORE_MAX_ENGINES) {
			snprintf(err, err_len, "%s engine count %" PRIu32 " is outside 1..%d",
				 engines[i].name, engines[i].count, HDM_CORE_MAX_ENGINES);
			return -EINVAL;
		}
	}
	return 0;
}
