/* SPDX-License-Identifier: MIT */
/*
 * hpu event queue: the ring of struct hpu_event the device reports failed
 * jobs in.  Only the engine posts events, so there is one producer.
 */
#include <inttypes.h>
#include <stddef.h>

#include "hdm_internal.h"
#include "hdm_le.h"

#define HDM_EV_OFF(field) offsetof(struct hpu_event, field)

static const char *hdm_eq_check_idle(struct hdm_core *core, unsigned int unit HDM_UNUSED,
				     uint32_t value HDM_UNUSED)
{
	return HDM_CORE_REG(core, EQ_PI) == HDM_CORE_REG(core, EQ_CI) && !core->eq_posting ?
	       NULL : "the event ring holds events (PI != CI)";
}

static const char *hdm_eq_check_ring_size(struct hdm_core *core, unsigned int unit,
					  uint32_t size)
{
	const char *why = hdm_eq_check_idle(core, unit, size);

	return why ? why : hdm_ring_size_check(size);
}

static const char *hdm_eq_check_ci(struct hdm_core *core, unsigned int unit HDM_UNUSED,
				   uint32_t ci)
{
	uint32_t pi = HDM_CORE_REG(core, EQ_PI);

	return pi - ci <= pi - HDM_CORE_REG(core, EQ_CI) ? NULL : "CI moves back, or past PI";
}

static void hdm_eq_write_ci(struct hdm_core *core, unsigned int unit HDM_UNUSED, uint32_t ci)
{
	HDM_CORE_REG(core, EQ_CI) = ci;
	HDM_CORE_REG(core, EQ_STATUS) &= ~HPU_EQ_STATUS_OVERFLOW;
}

#define HDM_EQ_REG_DESC(reg, acc, check, write) \
	[(HPU_REG_EQ_##reg - HPU_REG_EQ_RING_LO) / 4] = { "EQ_" #reg, acc, check, write }

const struct hdm_reg_desc hdm_eq_reg_descs[HDM_EQ_REG_WORDS] = {
	HDM_EQ_REG_DESC(RING_LO, HDM_REG_R | HDM_REG_W, hdm_eq_check_idle, NULL),
	HDM_EQ_REG_DESC(RING_HI, HDM_REG_R | HDM_REG_W, hdm_eq_check_idle, NULL),
	HDM_EQ_REG_DESC(RING_SIZE, HDM_REG_R | HDM_REG_W, hdm_eq_check_ring_size, NULL),
	HDM_EQ_REG_DESC(PI, HDM_REG_R, NULL, NULL),
	HDM_EQ_REG_DESC(CI, HDM_REG_R | HDM_REG_W, hdm_eq_check_ci, hdm_eq_write_ci),
	HDM_EQ_REG_DESC(STATUS, HDM_REG_R, NULL, NULL),
};

void hdm_eq_post(struct hdm_core *core, const struct hpu_event *ev)
{
	uint32_t size = HDM_CORE_REG(core, EQ_RING_SIZE);
	uint32_t pi = HDM_CORE_REG(core, EQ_PI);
	uint32_t gen = core->gen;
	uint8_t entry[sizeof(struct hpu_event)];
	uint64_t addr;
	int err;

	if (!size) {
		hdm_log(core, "no event ring: event dropped");
		return;
	}
	if (pi - HDM_CORE_REG(core, EQ_CI) >= size) {
		HDM_CORE_REG(core, EQ_STATUS) |= HPU_EQ_STATUS_OVERFLOW;
		hdm_log(core, "event ring full: event dropped");
		return;
	}
	addr = ((uint64_t)HDM_CORE_REG(core, EQ_RING_HI) << 32 | HDM_CORE_REG(core, EQ_RING_LO)) +
	       (uint64_t)(pi % size) * sizeof(entry);
	hdm_st_le32(entry + HDM_EV_OFF(type), ev->type);
	hdm_st_le32(entry + HDM_EV_OFF(queue), ev->queue);
	hdm_st_le32(entry + HDM_EV_OFF(asid), ev->asid);
	hdm_st_le32(entry + HDM_EV_OFF(engine), ev->engine);
	hdm_st_le64(entry + HDM_EV_OFF(tag), ev->tag);
	hdm_st_le64(entry + HDM_EV_OFF(addr), ev->addr);

	/* Keeps the ring from being reprogrammed while the entry is written. */
	core->eq_posting = true;
	hdm_core_unlock(core);
	err = core->ops->dma_write(core->opaque, addr, entry, sizeof(entry));
	hdm_core_lock(core);
	if (gen != core->gen)
		return;
	core->eq_posting = false;
	if (err) {
		hdm_guest_error(core, HPU_ERR_BAD_QUEUE,
				"event ring entry at 0x%" PRIx64 " not writable: event dropped",
				addr);
		return;
	}
	HDM_CORE_REG(core, EQ_PI) = pi + 1;
	hdm_irq_set(core, HPU_IRQ_EVENT);
}
