/* SPDX-License-Identifier: MIT */
/*
 * hpu device core: the register semantics of the accelerator, independent of
 * QEMU so the host unit tests (tests/host/test_dev_core.c) can drive it
 * directly.  It is plain C over libc, libm, zlib and OpenBLAS; the QEMU glue
 * (qemu-device/qemu/hdm_pci.c) only adapts PCI, BARs, MSI-X, a timer and
 * DMA to it.
 *
 * The embedder (the QEMU glue or a test) supplies DMA, interrupts, a deferred
 * boot, a clock and a guest-error log through struct hdm_core_ops, and runs
 * the engine (hdm_core_engine_*) on a thread of its own.  The core never
 * trusts the guest: every bad access is logged and reported in ERR_CODE or
 * as an event, and nothing a guest writes can abort QEMU.
 *
 * Threads: MMIO (BAR0, the doorbell pages), BAR4, boot and reset calls may
 * come from any thread, the engine runs on its own; the core serializes them
 * on its lock, which it never holds across a call of ops->dma_read,
 * dma_write or irq_raise (those may re-enter the device or take the
 * embedder's lock).
 */
#ifndef HDM_CORE_H
#define HDM_CORE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hpu_fw_if.h"
#include "hdm_fault.h"
#include "hdm_hbm.h"
#include "hdm_qman.h"
#include "hpu_regs.h"
#include "hdm_tpc.h"

/* One word per 32-bit register, up to the end of the last user queue's block. */
#define HDM_CORE_NR_REGS (HPU_REG_UQ(HPU_NUM_UQ, 0) / 4)

/* Upper bound on each engine count, so a mistyped property is caught. */
#define HDM_CORE_MAX_ENGINES 64

/* HBM is carved in 2 MiB pages, so its size must be a multiple of that. */
#define HDM_CORE_HBM_ALIGN (2ull << 20)
/* Beyond the MMU region there must be room for buffers; the top keeps the chunk table small. */
#define HDM_CORE_HBM_MIN (HPU_MMU_REGION_SIZE + HDM_CORE_HBM_ALIGN)
#define HDM_CORE_HBM_MAX (1ull << 40)

/*
 * The data types the engines compute in: the kernels and GEMMs implement fp32 and bf16.  fp16
 * and fp8 have register bits but no kernel, so the device does not claim them.
 */
#define HDM_CORE_CAPS (HPU_REG_CAPS_FP32 | HPU_REG_CAPS_BF16)

struct hdm_core_config {
	uint64_t hbm_size; /* bytes */
	uint32_t num_dma;
	uint32_t num_mme;
	uint32_t num_tpc;
	uint32_t caps; /* HPU_REG_CAPS_* */
	/* Fault injection at power-on, by kind (hdm_fault_parse() of the "fault-*" properties). */
	struct hdm_fault_settings faults[HPU_FAULT_KINDS];
};

/* dma_read, dma_write, irq_raise and now_ns are also called from the engine's thread. */
struct hdm_core_ops {
	/* Read len bytes of guest memory at bus_addr; 0 or -errno. */
	int (*dma_read)(void *opaque, uint64_t bus_addr, void *buf, uint64_t len);
	/* Write len bytes of guest memory at bus_addr; 0 or -errno. */
	int (*dma_write)(void *opaque, uint64_t bus_addr, const void *buf, uint64_t len);
	/* Signal an MSI-X vector. */
	void (*irq_raise)(void *opaque, unsigned int vector);
	/* Call hdm_core_boot_run() later, outside the MMIO access. */
	void (*schedule_boot)(void *opaque);
	/* Drop a boot scheduled by schedule_boot() that has not run yet. */
	void (*cancel_boot)(void *opaque);
	/* Report a guest programming error (one line, no newline). */
	void (*log_guest_error)(void *opaque, const char *msg);
	/* The device clock in ns, for TIMESTAMP packets and the heartbeat. */
	uint64_t (*now_ns)(void *opaque);
};

struct hdm_core {
	const struct hdm_core_ops *ops;
	void *opaque;
	struct hdm_core_config cfg;
	pthread_mutex_t lock; /* guards everything below, see hdm_internal.h */
	uint32_t regs[HDM_CORE_NR_REGS]; /* indexed by offset / 4 */
	/* BOOT_ADDR and BOOT_SIZE latched at START: later writes cannot race the load. */
	uint64_t boot_addr;
	uint32_t boot_size;
	uint8_t boot_sram[HPU_FW_MAX_IMAGE_SIZE];
	/* Bumped by every reset: work begun before is abandoned.  The engine reads it unlocked. */
	uint32_t gen;
	bool irq_pending;     /* raise the misc vector once the lock is dropped */
	struct hdm_hbm *hbm;  /* NULL after a reset found no host memory for it */
	bool eq_posting;      /* the engine is writing an event entry */
	struct hdm_qman qman;
	struct hdm_tpc_pool tpc; /* its own lock; used by the engine thread alone */
	/* The heartbeat (1.7): periods counted since READY at ready_ns, when it is read. */
	uint64_t hb_ready_ns;
	uint32_t hb_periods;
	bool hb_lost;          /* HEARTBEAT_LOSS injected: it stands still until a reset */
	struct hdm_fault fault; /* its own lock, a leaf */
};

/* 0 if cfg describes a device we can model, else -EINVAL with the reason in err. */
int hdm_core_check_config(const struct hdm_core_config *cfg, char *err, size_t err_len);

/*
 * cfg must have passed hdm_core_check_config(); leaves the device reset,
 * and returns as hdm_core_reset() (to be destroyed either way).
 */
int hdm_core_init(struct hdm_core *core, const struct hdm_core_ops *ops, void *opaque,
		  const struct hdm_core_config *cfg);
/* The engine must be stopped (and its thread joined) first. */
void hdm_core_destroy(struct hdm_core *core);
/*
 * Power-on: a cold reset (registers, queues, events, and HBM back to zeros),
 * and fault injection as cfg->faults says.  0, or -ENOMEM when the host has
 * no memory for HBM: the device is then FAILED (BOOT_ERROR NO_HBM), and stays
 * so until a reset (by the guest's RESET too) finds some.
 */
int hdm_core_reset(struct hdm_core *core);

/* BAR0: the registers. */
uint32_t hdm_core_mmio_read(struct hdm_core *core, uint64_t offset, unsigned int size);
void hdm_core_mmio_write(struct hdm_core *core, uint64_t offset, uint64_t value,
			 unsigned int size);

/*
 * BAR HPU_BAR_UQ_DOORBELL: the user queues' doorbell pages (HPU_NUM_UQ of
 * HPU_UQ_DB_PAGE_SIZE bytes), with BAR0's rules of access.
 */
uint32_t hdm_core_uq_db_read(struct hdm_core *core, uint64_t offset, unsigned int size);
void hdm_core_uq_db_write(struct hdm_core *core, uint64_t offset, uint64_t value,
			  unsigned int size);

/* BAR4: HBM [0, HPU_MMU_REGION_SIZE), aligned 4- and 8-byte accesses. */
uint64_t hdm_core_mmu_read(struct hdm_core *core, uint64_t offset, unsigned int size);
void hdm_core_mmu_write(struct hdm_core *core, uint64_t offset, uint64_t value,
			unsigned int size);

/* The deferred half of BOOT_CTRL=START: fetch, verify and start the image. */
void hdm_core_boot_run(struct hdm_core *core);

/*
 * The engine, for one thread: loop on hdm_core_engine_wait(), which blocks
 * until some queue can make progress (false once stopped), then
 * hdm_core_engine_run(), which runs jobs until none can.  A test may call
 * hdm_core_engine_run() alone, synchronously.
 */
bool hdm_core_engine_wait(struct hdm_core *core);
void hdm_core_engine_run(struct hdm_core *core);
/*
 * Ends the engine: the job running is abandoned at its next step (a hung packet
 * at once), wait returns false.
 */
void hdm_core_engine_stop(struct hdm_core *core);

/* Host chunks backing HBM now (it is allocated lazily). */
size_t hdm_core_hbm_chunks(struct hdm_core *core);

#endif /* HDM_CORE_H */
