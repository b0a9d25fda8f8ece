/* SPDX-License-Identifier: MIT */
/*
 * hpu device core internals shared by its files: the register file's
 * descriptors, locking, guest-error reporting.
 *
 * Locking: core->lock guards the registers and all queue, event and reset
 * state.  It is never held across a call into the embedder that can
 * re-enter the device or take the embedder's own lock (DMA, interrupts):
 * interrupts requested under the lock are raised by hpu_core_unlock().
 */
#ifndef HPU_CORE_INTERNAL_H
#define HPU_CORE_INTERNAL_H

#include "hpu_dev_core.h"

#define HPU_CORE_REG(core, reg) ((core)->regs[HPU_REG_##reg / 4])
#define HPU_Q_REG(core, q, reg) ((core)->regs[HPU_REG_Q(q, HPU_Q_##reg) / 4])

#define HPU_UNUSED __attribute__((unused))

#define HPU_REG_R (1u << 0)
#define HPU_REG_W (1u << 1)

/* One 32-bit register.  Reads return the stored word. */
struct hpu_reg_desc {
	const char *name; /* NULL: hole in the map */
	unsigned int access; /* HPU_REG_R | HPU_REG_W */
	/* Why a write to unit (a queue, else 0) is refused (reported as BAD_QUEUE), or NULL. */
	const char *(*check)(struct hpu_dev_core *core, unsigned int unit, uint32_t value);
	/* Side effects of an accepted write; NULL just stores the value. */
	void (*write)(struct hpu_dev_core *core, unsigned int unit, uint32_t value);
};

/* Register blocks other than the device's own, in hpu_eq.c and hpu_qman.c. */
#define HPU_EQ_REG_WORDS ((HPU_REG_EQ_STATUS - HPU_REG_EQ_RING_LO) / 4 + 1)
extern const struct hpu_reg_desc hpu_eq_reg_descs[HPU_EQ_REG_WORDS];
extern const struct hpu_reg_desc hpu_qman_reg_descs[HPU_REG_QUEUE_STRIDE / 4];

void hpu_core_lock(struct hpu_dev_core *core);
/* Drops the lock, then raises the MSI-X vectors requested while it was held. */
void hpu_core_unlock(struct hpu_dev_core *core);

/* Set interrupt causes; the misc vector is raised at unlock unless masked.  Lock held. */
void hpu_irq_set(struct hpu_dev_core *core, uint32_t cause);

/* Log one line through ops->log_guest_error. */
void __attribute__((format(printf, 2, 3))) hpu_log(struct hpu_dev_core *core, const char *fmt, ...);

/* A guest programming error: logged, latched in ERR_CODE and signalled.  Lock held. */
void __attribute__((format(printf, 3, 4)))
hpu_guest_error(struct hpu_dev_core *core, enum hpu_err_code code, const char *fmt, ...);

/* Ring sizes, for queues and the event queue: why size is refused, or NULL. */
static inline const char *hpu_ring_size_check(uint32_t size)
{
	if (!size || (size >= 2 && size <= 4096 && !(size & (size - 1))))
		return NULL;
	return "the size is not 0 or a power of two 2..4096";
}

/* Append an event for the driver.  Lock held, but dropped around the DMA: re-check core->gen. */
void hpu_eq_post(struct hpu_dev_core *core, const struct hpu_event *ev);

/* Device reset of the queues' engine state; lock held, registers already zeroed. */
void hpu_qman_reset(struct hpu_dev_core *core);
/* Hand HBM a reset replaced to the engine, which frees it off the MMIO path.  Lock held. */
void hpu_qman_retire(struct hpu_dev_core *core, struct hpu_hbm *hbm);

#endif /* HPU_CORE_INTERNAL_H */
