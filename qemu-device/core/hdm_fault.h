/* SPDX-License-Identifier: MIT */
/*
 * hpu fault injection (1.7): for each enum hpu_fault_kind, its settings (the
 * HPU_REG_FI_* registers, or the device's "fault-<name>" properties at power-on),
 * a small deterministic generator seeded at ARM, and the question the place
 * where the kind's event happens asks: hdm_fault_should_fail().
 *
 * Where each kind is asked (its event):
 *  ENGINE_HANG      hdm_qman.c, a packet the engine starts (the job's ASID)
 *  MMU_FAULT        hdm_qman.c, a job the engine starts, once its descriptor is read
 *  DMA_ERROR        hdm_qman.c, likewise, after MMU_FAULT
 *  LOST_IRQ         hdm_core.c (the misc vector) and hdm_pkt.c (an INTERRUPT packet's)
 *  BAD_COMPLETION   hdm_pkt.c, a WRITE_COMPLETION packet: its value is written inverted
 *  HEARTBEAT_LOSS   hdm_core.c, each HPU_FW_HEARTBEAT_MS period, when HEARTBEAT is read
 *  BOOT_FAIL        hdm_core.c, a boot run
 *  RESET_FAIL       hdm_core.c, an ENGINE_RESET or warm RESET with the right key
 * Events without a context (interrupts of the device's own vector, heartbeat,
 * boot, reset) carry HPU_FI_ANY_ASID: only a kind whose filter is "any" counts them.
 *
 * Registers: FI_TIMES, SKIP, PROB, SEED and ASID read and write the settings of
 * FI_SELECT's kind directly; TIMES and SKIP count down as the kind injects and
 * lets events pass, so they read what is left.  ARM (re)seeds the generator from
 * SEED and arms the kind; DISARM disarms it.  A cold reset disarms every kind, a
 * warm one keeps them, power-on (hdm_core_reset()) sets them to the properties'.
 *
 * Locking: struct hdm_fault's own lock, a leaf (taken under the core lock by the
 * registers, alone by the engine), so that any thread may ask.
 */
#ifndef HDM_FAULT_H
#define HDM_FAULT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hpu_regs.h"

#define HDM_FAULT_UNLIMITED 0xffffffffu /* FI_TIMES: no limit */
#define HDM_FAULT_ALWAYS 0xffffffffu    /* FI_PROB: every event (not 1 - 2^-32) */

/* One kind's settings, as FI_* show them. */
struct hdm_fault_settings {
	uint32_t times; /* faults still to inject */
	uint32_t skip;  /* events still to let pass */
	uint32_t prob;  /* of each further event, / 2^32 */
	uint32_t seed;
	uint32_t asid;  /* HPU_FI_ANY_ASID: any */
	bool armed;
};

struct hdm_fault_kind {
	struct hdm_fault_settings set;
	uint64_t rng;      /* the generator's state, from set.seed at ARM */
	uint32_t injected; /* since power-on: FI_INJECTED */
};

struct hdm_fault {
	pthread_mutex_t lock; /* guards the rest but armed */
	uint32_t armed;       /* bit k: kind k is armed; __atomic, read unlocked first */
	uint32_t select;      /* FI_SELECT: a kind, or 0 */
	struct hdm_fault_kind kinds[HPU_FAULT_KINDS];
};

/* The property names' tails ("fault-engine-hang"), by kind; NULL for 0. */
extern const char *const hdm_fault_names[HPU_FAULT_KINDS];

/*
 * Parse a property's value, TIMES[:SKIP[:PROB[:SEED[:ASID]]]], into armed settings:
 * numbers in C syntax (0x...), TIMES "inf" or 4294967295 for no limit; PROB a fraction
 * with a point (0.25, 1.0) or an integer over 2^32 (4294967295: always), 1.0 when
 * left out; SEED 0 when left out; ASID a context below HPU_MMU_NUM_ASIDS or "any",
 * any when left out.  An empty string is no setting (disarmed).  0, or -EINVAL with
 * the reason in err.
 */
int hdm_fault_parse(const char *spec, struct hdm_fault_settings *out, char *err,
		    size_t err_len);

void hdm_fault_init(struct hdm_fault *f);
void hdm_fault_destroy(struct hdm_fault *f);
/* Power-on: every kind set (and armed) as at[] says, nothing injected yet, no kind selected. */
void hdm_fault_power_on(struct hdm_fault *f, const struct hdm_fault_settings *at);
/* A cold reset: every kind disarmed, the settings kept. */
void hdm_fault_disarm_all(struct hdm_fault *f);

struct hdm_core;

/*
 * An event of this kind happens (in context asid, or HPU_FI_ANY_ASID): true if it
 * must fail.  Any thread, with or without the core lock.
 */
bool hdm_fault_should_fail(struct hdm_core *core, enum hpu_fault_kind kind, uint32_t asid);

#endif /* HDM_FAULT_H */
