/* SPDX-License-Identifier: MIT */
/*
 * hpu device core: the register semantics of the accelerator, independent of
 * QEMU so the host unit tests can drive it directly.
 *
 * The embedder (the QEMU glue or a test) supplies DMA, interrupts, a deferred
 * boot and a guest-error log through struct hpu_core_ops.  The core never
 * trusts the guest: every bad access is logged and reported in ERR_CODE.
 */
#ifndef HPU_DEV_CORE_H
#define HPU_DEV_CORE_H

#include <stddef.h>
#include <stdint.h>

#include "hpu_fw_if.h"
#include "hpu_regs.h"

/* One word per 32-bit register up to the last one defined in hpu_regs.h. */
#define HPU_CORE_NR_REGS (HPU_REG_IRQ_MASK / 4 + 1)

/* Upper bound on each engine count, so a mistyped property is caught. */
#define HPU_CORE_MAX_ENGINES 64

/* HBM is carved in 2 MiB pages, so its size must be a multiple of that. */
#define HPU_CORE_HBM_ALIGN (2ull << 20)

struct hpu_core_config {
	uint64_t hbm_size; /* bytes */
	uint32_t num_dma;
	uint32_t num_mme;
	uint32_t num_tpc;
	uint32_t caps; /* HPU_REG_CAPS_* */
};

struct hpu_core_ops {
	/* Read len bytes of guest memory at bus_addr; 0 or -errno. */
	int (*dma_read)(void *opaque, uint64_t bus_addr, void *buf, uint64_t len);
	/* Signal an MSI-X vector. */
	void (*irq_raise)(void *opaque, unsigned int vector);
	/* Call hpu_core_boot_run() later, outside the MMIO access. */
	void (*schedule_boot)(void *opaque);
	/* Drop a boot scheduled by schedule_boot() that has not run yet. */
	void (*cancel_boot)(void *opaque);
	/* Report a guest programming error (one line, no newline). */
	void (*log_guest_error)(void *opaque, const char *msg);
};

struct hpu_dev_core {
	const struct hpu_core_ops *ops;
	void *opaque;
	struct hpu_core_config cfg;
	uint32_t regs[HPU_CORE_NR_REGS]; /* indexed by offset / 4 */
	/* BOOT_ADDR and BOOT_SIZE latched at START: later writes cannot race the load. */
	uint64_t boot_addr;
	uint32_t boot_size;
	uint8_t boot_sram[HPU_FW_MAX_IMAGE_SIZE];
};

/* 0 if cfg describes a device we can model, else -EINVAL with the reason in err. */
int hpu_core_check_config(const struct hpu_core_config *cfg, char *err, size_t err_len);

/* cfg must have passed hpu_core_check_config(); leaves the device reset. */
void hpu_core_init(struct hpu_dev_core *core, const struct hpu_core_ops *ops, void *opaque,
		   const struct hpu_core_config *cfg);
void hpu_core_reset(struct hpu_dev_core *core);

uint32_t hpu_core_mmio_read(struct hpu_dev_core *core, uint64_t offset, unsigned int size);
void hpu_core_mmio_write(struct hpu_dev_core *core, uint64_t offset, uint64_t value,
			 unsigned int size);

/* The deferred half of BOOT_CTRL=START: fetch, verify and start the image. */
void hpu_core_boot_run(struct hpu_dev_core *core);

#endif /* HPU_DEV_CORE_H */
