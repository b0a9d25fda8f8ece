/* SPDX-License-Identifier: MIT */
/*
 * hpu event queue: the ring of struct hpu_event the device reports failed
 * jobs in.  Only the engine posts events, so there is one producer.
 */
#include <inttypes.h>
#include <stddef.h>

#include "hdm_internal.h"
#include "hdm_le.h"

#define HPU_EV_OFF(field) offsetof(struct hpu_event, field)

static const char *hpu_eq_check_idle(struct hpu_dev_core *core, unsigned int unit HPU_UNUSED,
				     uint32_t value HPU_UNUSED)
{
	return HPU_CORE_REG(core, EQ_PI) == HPU_CORE_REG(core, EQ_CI) && !core->eq_posting ?
	       NULL : "the event ring holds events (PI != CI)";
}

static const char *hpu_eq_check_ring_size(struct hpu_dev_core *core, unsigned int unit,
					  uint32_t size)
{
	const char *why = hpu_eq_check_idle(core, unit, size);

	return why ? why : hpu_ring_size_check(size);
}

static const char *hpu_eq_check_ci(struct hpu_dev_core *core, unsigned int unit HPU_UNUSED,
				   uint32_t ci)
{
	uint32_t pi = HPU_CORE_REG(core, EQ_PI);

	return pi - ci <= pi - HPU_CORE_REG(core, EQ_CI) ? NULL : "CI moves back, or past PI";
}

static void hpu_eq_write_ci(struct hpu_dev_core *core, unsigned int unit HPU_UNUSED, uint32_t ci)
{
	HPU_CORE_REG(core, EQ_CI) = ci;
	HPU_CORE_REG(core, EQ_STATUS) &= ~HPU_EQ_STATUS_OVERFLOW;
}

#define HPU_EQ_REG_DESC(reg, acc, check, write) \
	[(HPU_REG_EQ_##reg - HPU_REG_EQ_RING_LO) / 4] = { "EQ_" #reg, acc, check, write }

const struct hpu_reg_desc hpu_eq_reg_descs[HPU_EQ_REG_WORDS] = {
	HPU_EQ_REG_DESC(RING_LO, HPU_REG_R | HPU_REG_W, hpu_eq_check_idle, NULL),
	HPU_EQ_REG_DESC(RING_HI, HPU_REG_R | HPU_REG_W, hpu_eq_check_idle, NULL),
	HPU_EQ_REG_DESC(RING_SIZE, HPU_REG_R | HPU_REG_W, hpu_eq_check_ring_size, NULL),
	HPU_EQ_REG_DESC(PI, HPU_REG_R, NULL, NULL),
	HPU_EQ_REG_DESC(CI, HPU_REG_R | HPU_REG_W, hpu_eq_check_ci, hpu_eq_write_ci),
	HPU_EQ_REG_DESC(STATUS, HPU_REG_R, NULL, NULL),
};

void hpu_eq_post(struct hpu_dev_core *core, const struct hpu_event *ev)
{
	uint32_t size = HPU_CORE_REG(core, EQ_RING_SIZE);
	uint32_t pi = HPU_CORE_REG(core, EQ_PI);
	uint32_t gen = core->gen;
	uint8_t entry[sizeof(struct hpu_event)];
	uint64_t addr;
	int err;

	if (!size) {
		hpu_log(core, "no event ring: event dropped");
		return;
	}
	if (pi - HPU_CORE_REG(core, EQ_CI) >= size) {
		HPU_CORE_REG(core, EQ_STATUS) |= HPU_EQ_STATUS_OVERFLOW;
		hpu_log(core, "event ring full: event dropped");
		return;
	}
	addr = ((uint64_t)HPU_CORE_REG(core, EQ_RING_HI) << 32 | HPU_CORE_REG(core, EQ_RING_LO)) +
	       (uint64_t)(pi % size) * sizeof(entry);
	hpu_st_le32(entry + HPU_EV_OFF(type), ev->type);
	hpu_st_le32(entry + HPU_EV_OFF(queue), ev->queue);
	hpu_st_le32(entry + HPU_EV_OFF(asid), ev->asid);
	hpu_st_le32(entry + HPU_EV_OFF(engine), ev->engine);
	hpu_st_le64(entry + HPU_EV_OFF(tag), ev->tag);
	hpu_st_le64(entry + HPU_EV_OFF(addr), ev->addr);

	/* Keeps the ring from being reprogrammed while the entry is written. */
	core->eq_posting = true;
	hpu_core_unlock(core);
	err = core->ops->dma_write(core->opaque, addr, entry, sizeof(entry));
	hpu_core_lock(core);
	if (gen != core->gen)
		return;
	core->eq_posting = false;
	if (err) {
		hpu_guest_error(core, HPU_ERR_BAD_QUEUE,
				"event ring entry at 0x%" PRIx64 " not writable: event dropped",
				addr);
		return;
	}
	HPU_CORE_REG(core, EQ_PI) = pi + 1;
	hpu_irq_set(core, HPU_IRQ_EVENT);
}
