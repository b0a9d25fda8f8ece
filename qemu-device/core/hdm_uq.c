/* SPDX-License-Identifier: MIT */
/*
 * hpu user queues (1.3): their privileged registers in BAR0, their doorbell
 * pages, and what the engine does differently for their jobs.  A process
 * owns the ring and the command buffers, so the device trusts neither: it
 * reads both through the MMU in the context the driver bound, runs every
 * packet as a user packet, and writes each job's status back into its
 * descriptor.  The lifecycle (running, parked, aborted) is the kernel
 * queues', in hdm_qman.c.
 */
#include <inttypes.h>
#include <stddef.h>

#include "hdm_internal.h"
#include "hdm_dma.h"
#include "hdm_le.h"

#define HDM_UQ_DESC_OFF(field) offsetof(struct hpu_uq_desc, field)

/* A job's status is its event type, so the runtime reads one in the other's terms. */
#define HDM_UQ_STATUS_IS_EVENT(name) ((int)HPU_UQ_STATUS_##name == (int)HPU_EVENT_##name)
_Static_assert(HDM_UQ_STATUS_IS_EVENT(MMU_FAULT) && HDM_UQ_STATUS_IS_EVENT(ILLEGAL_PACKET) &&
		       HDM_UQ_STATUS_IS_EVENT(PRIV_PACKET) && HDM_UQ_STATUS_IS_EVENT(DMA_ERROR) &&
		       HDM_UQ_STATUS_IS_EVENT(ABORTED) && HDM_UQ_STATUS_IS_EVENT(BAD_KERNEL),
	       "user-queue statuses are not the event types");

/*
 * The ring and the context are the queue's binding, checked when it is
 * enabled: they change only while it is disabled.
 */
static const char *hdm_uq_check_disabled(struct hdm_core *core, unsigned int q,
					 uint32_t value HDM_UNUSED)
{
	return HDM_Q_REG(core, q, RING_SIZE) ? "the queue is enabled (RING_SIZE != 0)" : NULL;
}

static const char *hdm_uq_check_asid(struct hdm_core *core, unsigned int q, uint32_t asid)
{
	const char *why = hdm_uq_check_disabled(core, q, asid);

	if (!why && asid >= HPU_MMU_NUM_ASIDS)
		why = "the ASID is out of range";
	return why;
}

static const char *hdm_uq_check_ring_size(struct hdm_core *core, unsigned int q,
					  uint32_t size)
{
	const char *why = hdm_q_check_ring_size(core, q, size);
	uint64_t ring = hdm_q_ring(core, q);

	if (why || !size)
		return why;
	/* So that no descriptor straddles a page, and every slot is a VA the MMU can map. */
	if (ring % sizeof(struct hpu_uq_desc))
		return "the ring is not aligned to a descriptor";
	if (ring > (1ull << HPU_MMU_VA_BITS) - (uint64_t)size * sizeof(struct hpu_uq_desc))
		return "the ring runs past the device address space";
	return NULL;
}

/* A ring (re)sized or disabled starts empty, its counts with it. */
static void hdm_uq_write_ring_size(struct hdm_core *core, unsigned int q, uint32_t size)
{
	HDM_Q_REG(core, q, RING_SIZE) = size;
	HDM_Q_REG(core, q, PI) = 0;
	HDM_Q_REG(core, q, CI) = 0;
	HDM_UQ_REG(core, q, ERRORS) = 0;
}

static void hdm_uq_write_arm(struct hdm_core *core, unsigned int q, uint32_t value)
{
	if (value & ~HPU_UQ_ARMED) {
		hdm_guest_error(core, HPU_ERR_BAD_CTRL,
				"user queue %u ARM: unknown bits 0x%08" PRIx32, q - HPU_NUM_QUEUES,
				value & ~HPU_UQ_ARMED);
		return;
	}
	HDM_UQ_REG(core, q, ARM) = value;
}

static void hdm_uq_write_irq_pending(struct hdm_core *core, unsigned int unit HDM_UNUSED,
				     uint32_t value)
{
	HDM_CORE_REG(core, UQ_IRQ_PENDING) &= ~value;
}

#define HDM_UQ_RW (HDM_REG_R | HDM_REG_W)
#define HDM_UQ_REG_DESC(reg, acc, check, write) \
	[HPU_UQ_##reg / 4] = { #reg, acc, check, write, NULL }

const struct hdm_reg_desc hdm_uq_reg_descs[HPU_REG_UQ_STRIDE / 4] = {
	HDM_UQ_REG_DESC(RING_LO, HDM_UQ_RW, hdm_uq_check_disabled, NULL),
	HDM_UQ_REG_DESC(RING_HI, HDM_UQ_RW, hdm_uq_check_disabled, NULL),
	HDM_UQ_REG_DESC(RING_SIZE, HDM_UQ_RW, hdm_uq_check_ring_size, hdm_uq_write_ring_size),
	HDM_UQ_REG_DESC(ASID, HDM_UQ_RW, hdm_uq_check_asid, NULL),
	HDM_UQ_REG_DESC(PI, HDM_REG_R, NULL, NULL),
	HDM_UQ_REG_DESC(CI, HDM_REG_R, NULL, NULL),
	HDM_UQ_REG_DESC(STATUS, HDM_REG_R, NULL, NULL),
	HDM_UQ_REG_DESC(CTRL, HDM_REG_W, NULL, hdm_q_write_ctrl),
	HDM_UQ_REG_DESC(ARM, HDM_UQ_RW, NULL, hdm_uq_write_arm),
	HDM_UQ_REG_DESC(ERRORS, HDM_REG_R, NULL, NULL),
	[HPU_UQ_DEFERRED_US / 4] = { "DEFERRED_US", HDM_REG_R, NULL, NULL, hdm_q_read_deferred },
};

const struct hdm_reg_desc hdm_uq_irq_reg_descs[1] = {
	{ "UQ_IRQ_PENDING", HDM_UQ_RW, NULL, hdm_uq_write_irq_pending, NULL },
};

static uint32_t hdm_uq_db_read_pi(struct hdm_core *core, unsigned int q)
{
	return HDM_Q_REG(core, q, PI);
}

static uint32_t hdm_uq_db_read_ci(struct hdm_core *core, unsigned int q)
{
	return HDM_Q_REG(core, q, CI);
}

static uint32_t hdm_uq_db_read_errors(struct hdm_core *core, unsigned int q)
{
	return HDM_UQ_REG(core, q, ERRORS);
}

/*
 * The doorbell page holds no words of its own: each register reads the
 * queue's BAR0 one, and PI is written as a kernel queue's doorbell is.
 */
#define HDM_UQ_DB_DESC(reg, acc, check, write, read) \
	[HPU_UQ_DB_##reg / 4] = { "DB_" #reg, acc, check, write, read }

const struct hdm_reg_desc hdm_uq_db_reg_descs[HDM_UQ_DB_WORDS] = {
	HDM_UQ_DB_DESC(PI, HDM_UQ_RW, hdm_q_check_doorbell, hdm_q_write_pi, hdm_uq_db_read_pi),
	HDM_UQ_DB_DESC(CI, HDM_REG_R, NULL, NULL, hdm_uq_db_read_ci),
	HDM_UQ_DB_DESC(ERRORS, HDM_REG_R, NULL, NULL, hdm_uq_db_read_errors),
};

int hdm_uq_job_load(struct hdm_job *job)
{
	uint8_t desc[sizeof(struct hpu_uq_desc)];
	uint64_t cb_va;

	if (hdm_dma_load(job, job->slot, desc, sizeof(desc)))
		return -1;
	cb_va = hdm_ld_le64(desc + HDM_UQ_DESC_OFF(cb_va));
	job->cb_size = hdm_ld_le32(desc + HDM_UQ_DESC_OFF(cb_size));
	job->tag = hdm_ld_le64(desc + HDM_UQ_DESC_OFF(tag));
	/* The whole buffer lies before priv_offset: any privileged packet fails the job. */
	job->priv_offset = job->cb_size;
	if (job->cb_size % 8 || job->cb_size > HPU_CB_MAX_SIZE ||
	    hdm_ld_le32(desc + HDM_UQ_DESC_OFF(flags)) || hdm_ld_le32(desc + HDM_UQ_DESC_OFF(pad)))
		return hdm_job_fail(job, HPU_EVENT_ILLEGAL_PACKET, 0);
	return hdm_dma_read(job, cb_va, job->cb, job->cb_size);
}

void hdm_uq_job_end(struct hdm_job *job, enum hdm_pkt_status status)
{
	uint32_t fault = job->fault;
	uint64_t fault_addr = job->fault_addr;
	uint8_t word[4];

	/* A device reset abandoned the job: the ring is no longer its to write. */
	if (__atomic_load_n(&job->core->gen, __ATOMIC_RELAXED) != job->gen)
		return;
	hdm_st_le32(word, status == HDM_PKT_FAILED ? fault : 0);
	/*
	 * A ring the context cannot write (or read: the descriptor's own fault
	 * was reported) loses the status, not the job's outcome, silently.
	 */
	hdm_dma_store(job, job->slot + HDM_UQ_DESC_OFF(status), word, sizeof(word));
	job->fault = fault;
	job->fault_addr = fault_addr;
}

void hdm_uq_ci_moved(struct hdm_core *core, unsigned int q)
{
	if (!HDM_UQ_REG(core, q, ARM))
		return;
	/* One interrupt per arming: the driver re-arms, then reads CI, so it misses none. */
	HDM_UQ_REG(core, q, ARM) = 0;
	HDM_CORE_REG(core, UQ_IRQ_PENDING) |= 1u << (q - HPU_NUM_QUEUES);
	hdm_irq_set(core, HPU_IRQ_UQ);
}
