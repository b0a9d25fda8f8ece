/* SPDX-License-Identifier: MIT */
/*
 * hpu device core internals shared by its files: the register file's
 * descriptors, locking, guest-error reporting.
 *
 * Locking: core->lock guards the registers and all queue, event and reset
 * state.  It is never held across a call into the embedder that can
 * re-enter the device or take the embedder's own lock (DMA, interrupts):
 * interrupts requested under the lock are raised by hdm_core_unlock().
 */
#ifndef HDM_INTERNAL_H
#define HDM_INTERNAL_H

#include <time.h>

#include "hdm_core.h"
#include "hdm_pkt.h"

#define HDM_CORE_REG(core, reg) ((core)->regs[HPU_REG_##reg / 4])

/*
 * A register every queue of the engine has (RING_LO/HI, RING_SIZE, PI, CI,
 * STATUS), kernel or user (hdm_qman.h numbers them); the two blocks lay it
 * out at different offsets.
 */
static inline uint32_t *hdm_q_reg(struct hdm_core *core, unsigned int q, uint32_t k_off,
				  uint32_t u_off)
{
	uint32_t off = q < HPU_NUM_QUEUES ? HPU_REG_Q(q, k_off) :
					   HPU_REG_UQ(q - HPU_NUM_QUEUES, u_off);

	return &core->regs[off / 4];
}

#define HDM_Q_REG(core, q, reg) (*hdm_q_reg(core, q, HPU_Q_##reg, HPU_UQ_##reg))
/* A register only user queues have; q is the engine's number of the queue. */
#define HDM_UQ_REG(core, q, reg) ((core)->regs[HPU_REG_UQ((q) - HPU_NUM_QUEUES, HPU_UQ_##reg) / 4])

/* Where queue q's ring starts: a bus address, or on a user queue a VA of its context. */
static inline uint64_t hdm_q_ring(struct hdm_core *core, unsigned int q)
{
	return (uint64_t)HDM_Q_REG(core, q, RING_HI) << 32 | HDM_Q_REG(core, q, RING_LO);
}

#define HDM_UNUSED __attribute__((unused))

static inline uint64_t hdm_core_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#define HDM_REG_R (1u << 0)
#define HDM_REG_W (1u << 1)

/*
 * One 32-bit register.  Its unit is the queue (the engine's number) of a
 * queue's register, else 0.
 */
struct hdm_reg_desc {
	const char *name; /* NULL: hole in the map */
	unsigned int access; /* HDM_REG_R | HDM_REG_W */
	/* Why a write is refused (reported as BAD_QUEUE), or NULL. */
	const char *(*check)(struct hdm_core *core, unsigned int unit, uint32_t value);
	/* Side effects of an accepted write; NULL just stores the value. */
	void (*write)(struct hdm_core *core, unsigned int unit, uint32_t value);
	/* What a read returns, for a register stored elsewhere (a doorbell's); NULL: the word. */
	uint32_t (*read)(struct hdm_core *core, unsigned int unit);
};

/* Register blocks other than the device's own, in hdm_eq.c, hdm_qman.c and hdm_uq.c. */
#define HDM_EQ_REG_WORDS ((HPU_REG_EQ_STATUS - HPU_REG_EQ_RING_LO) / 4 + 1)
extern const struct hdm_reg_desc hdm_eq_reg_descs[HDM_EQ_REG_WORDS];
extern const struct hdm_reg_desc hdm_qman_reg_descs[HPU_REG_QUEUE_STRIDE / 4];
extern const struct hdm_reg_desc hdm_uq_reg_descs[HPU_REG_UQ_STRIDE / 4];
extern const struct hdm_reg_desc hdm_uq_irq_reg_descs[1];
/* Fault injection's registers (1.7), in hdm_fault.c. */
#define HDM_FI_REG_WORDS ((HPU_REG_FI_CTRL - HPU_REG_FI_SELECT) / 4 + 1)
extern const struct hdm_reg_desc hdm_fi_reg_descs[HDM_FI_REG_WORDS];
/* A doorbell page's registers (BAR HPU_BAR_UQ_DOORBELL); the rest of the page is a hole. */
#define HDM_UQ_DB_WORDS (HPU_UQ_DB_ERRORS / 4 + 1)
extern const struct hdm_reg_desc hdm_uq_db_reg_descs[HDM_UQ_DB_WORDS];

void hdm_core_lock(struct hdm_core *core);
/* Drops the lock, then raises the MSI-X vectors requested while it was held. */
void hdm_core_unlock(struct hdm_core *core);

/* Set interrupt causes; the misc vector is raised at unlock unless masked.  Lock held. */
void hdm_irq_set(struct hdm_core *core, uint32_t cause);

/* Log one line through ops->log_guest_error. */
void __attribute__((format(printf, 2, 3))) hdm_log(struct hdm_core *core, const char *fmt, ...);

/* A guest programming error: logged, latched in ERR_CODE and signalled.  Lock held. */
void __attribute__((format(printf, 3, 4)))
hdm_guest_error(struct hdm_core *core, enum hpu_err_code code, const char *fmt, ...);

/* Ring sizes, for queues and the event queue: why size is refused, or NULL. */
static inline const char *hdm_ring_size_check(uint32_t size)
{
	if (!size || (size >= 2 && size <= 4096 && !(size & (size - 1))))
		return NULL;
	return "the size is not 0 or a power of two 2..4096";
}

/* Append an event for the driver.  Lock held, but dropped around the DMA: re-check core->gen. */
void hdm_eq_post(struct hdm_core *core, const struct hpu_event *ev);

/* Queue registers user queues share with kernel queues (hdm_qman.c): checks and writes. */
const char *hdm_q_check_ring_size(struct hdm_core *core, unsigned int q, uint32_t size);
const char *hdm_q_check_doorbell(struct hdm_core *core, unsigned int q, uint32_t pi);
void hdm_q_write_pi(struct hdm_core *core, unsigned int q, uint32_t pi);
void hdm_q_write_ctrl(struct hdm_core *core, unsigned int q, uint32_t value);
uint32_t hdm_q_read_deferred(struct hdm_core *core, unsigned int q);

/* A user queue's job, on the engine's thread (hdm_uq.c); see hdm_qman.h. */
int hdm_uq_job_load(struct hdm_job *job);
void hdm_uq_job_end(struct hdm_job *job, enum hdm_pkt_status status);
/* User queue q's CI moved: an armed queue interrupts.  Lock held. */
void hdm_uq_ci_moved(struct hdm_core *core, unsigned int q);

/* Count the heartbeat's periods up to now (HEARTBEAT_LOSS may stop it).  Lock held. */
void hdm_heartbeat_update(struct hdm_core *core);

/* The engine may have work: wake it, or let it see so while it polls.  Lock held. */
void hdm_qman_kick(struct hdm_core *core);
/*
 * Before a warm reset: the job the engine is in gets HPU_ENGINE_SLICE_US to reach
 * a yield point (and no other starts meanwhile).  Lock held, dropped while waiting.
 */
void hdm_qman_quiesce(struct hdm_core *core);
/*
 * Device reset of the queues' engine state; lock held, registers already zeroed
 * but, on a warm reset, the user queues' restored.  A warm one keeps the kernel
 * queues' tables, saves their started jobs there, and keeps the user queues.
 */
void hdm_qman_reset(struct hdm_core *core, bool warm);
/*
 * ENGINE_RESET: the engine leaves the job it is in if that job's queue has a reset
 * pending or it hangs (see hpu_regs.h).  Lock held, dropped.
 */
void hdm_qman_engine_reset(struct hdm_core *core);
/*
 * ENGINE_HANG at the packet the job starts: if injected, it waits there until the
 * engine must leave the job (true; it fails ABORTED), else false.  Unlocked.
 */
bool hdm_qman_hang(struct hdm_job *job);
/* Hand HBM a reset replaced to the engine, which frees it off the MMIO path.  Lock held. */
void hdm_qman_retire(struct hdm_core *core, struct hdm_hbm *hbm);
/*
 * What the yielded packet of a job kept (staging buffers, kernel scratch)
 * is not taken back: the job ended, or was abandoned (write_back false).
 * The engine thread's alone.
 */
void hdm_qman_drop_kept(struct hdm_job *job, bool write_back);
/* Free every queue's preempted jobs and what the jobs kept, unwritten: the core goes away. */
void hdm_qman_destroy(struct hdm_core *core);

#endif /* HDM_INTERNAL_H */
