/* SPDX-License-Identifier: MIT */
/*
 * hpu fault injection: settings, the generator, the FI_* registers and the
 * properties' syntax.  What each kind fails and where is told in hdm_fault.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hdm_internal.h"

const char *const hdm_fault_names[HPU_FAULT_KINDS] = {
	[HPU_FAULT_ENGINE_HANG] = "engine-hang",
	[HPU_FAULT_MMU_FAULT] = "mmu-fault",
	[HPU_FAULT_DMA_ERROR] = "dma-error",
	[HPU_FAULT_LOST_IRQ] = "lost-irq",
	[HPU_FAULT_BAD_COMPLETION] = "bad-completion",
	[HPU_FAULT_HEARTBEAT_LOSS] = "heartbeat-loss",
	[HPU_FAULT_BOOT_FAIL] = "boot-fail",
	[HPU_FAULT_RESET_FAIL] = "reset-fail",
};

/* splitmix64: any seed, 0 included, starts a full-period sequence. */
static uint32_t hdm_fault_draw(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return (uint32_t)((z ^ (z >> 31)) >> 32);
}

/* Kind k armed or not, in both places.  f->lock held. */
static void hdm_fault_set_armed(struct hdm_fault *f, unsigned int k, bool armed)
{
	f->kinds[k].set.armed = armed;
	if (armed)
		__atomic_or_fetch(&f->armed, 1u << k, __ATOMIC_RELAXED);
	else
		__atomic_and_fetch(&f->armed, ~(1u << k), __ATOMIC_RELAXED);
}

bool hdm_fault_should_fail(struct hdm_core *core, enum hpu_fault_kind kind, uint32_t asid)
{
	struct hdm_fault *f = &core->fault;
	struct hdm_fault_kind *k = &f->kinds[kind];
	bool fail = false;

	/* The common case, nothing armed, costs one load. */
	if (!(__atomic_load_n(&f->armed, __ATOMIC_RELAXED) & 1u << kind))
		return false;
	pthread_mutex_lock(&f->lock);
	if (!k->set.armed || (k->set.asid != HPU_FI_ANY_ASID && k->set.asid != asid))
		goto out;
	if (k->set.skip) {
		k->set.skip--;
		goto out;
	}
	if (!k->set.times)
		goto out;
	/* A draw per event, so that PROB changes which events fail, not the sequence. */
	fail = hdm_fault_draw(&k->rng) < k->set.prob || k->set.prob == HDM_FAULT_ALWAYS;
	if (!fail)
		goto out;
	k->injected++;
	if (k->set.times != HDM_FAULT_UNLIMITED && !--k->set.times)
		hdm_fault_set_armed(f, kind, false);
out:
	pthread_mutex_unlock(&f->lock);
	return fail;
}

void hdm_fault_init(struct hdm_fault *f)
{
	memset(f, 0, sizeof(*f));
	pthread_mutex_init(&f->lock, NULL);
}

void hdm_fault_destroy(struct hdm_fault *f)
{
	pthread_mutex_destroy(&f->lock);
}

void hdm_fault_power_on(struct hdm_fault *f, const struct hdm_fault_settings *at)
{
	unsigned int k;

	pthread_mutex_lock(&f->lock);
	f->select = 0;
	for (k = 1; k < HPU_FAULT_KINDS; k++) {
		f->kinds[k].set = at[k];
		f->kinds[k].rng = at[k].seed;
		f->kinds[k].injected = 0;
		hdm_fault_set_armed(f, k, at[k].armed);
	}
	pthread_mutex_unlock(&f->lock);
}

void hdm_fault_disarm_all(struct hdm_fault *f)
{
	unsigned int k;

	pthread_mutex_lock(&f->lock);
	for (k = 1; k < HPU_FAULT_KINDS; k++)
		hdm_fault_set_armed(f, k, false);
	pthread_mutex_unlock(&f->lock);
}

/* ---- registers ---- */

/* FI_SELECT's kind, or NULL after reporting that there is none.  Both locks held. */
static struct hdm_fault_kind *hdm_fault_selected(struct hdm_core *core, const char *reg)
{
	if (core->fault.select)
		return &core->fault.kinds[core->fault.select];
	hdm_guest_error(core, HPU_ERR_BAD_CTRL, "%s written with no fault kind selected", reg);
	return NULL;
}

static uint32_t hdm_fi_read_select(struct hdm_core *core, unsigned int unit HDM_UNUSED)
{
	return core->fault.select;
}

static void hdm_fi_write_select(struct hdm_core *core, unsigned int unit HDM_UNUSED,
				uint32_t value)
{
	if (!value || value >= HPU_FAULT_KINDS) {
		hdm_guest_error(core, HPU_ERR_BAD_CTRL, "FI_SELECT: no fault kind %" PRIu32, value);
		return;
	}
	pthread_mutex_lock(&core->fault.lock);
	core->fault.select = value;
	pthread_mutex_unlock(&core->fault.lock);
}

/* A setting's register: it reads 0 with no kind selected; valid says which values it takes. */
#define HDM_FI_SETTING(field, reg, valid)							\
static uint32_t hdm_fi_read_##field(struct hdm_core *core, unsigned int unit HDM_UNUSED)	\
{												\
	struct hdm_fault *f = &core->fault;							\
	uint32_t v;										\
												\
	pthread_mutex_lock(&f->lock);								\
	v = f->select ? f->kinds[f->select].set.field : 0;					\
	pthread_mutex_unlock(&f->lock);								\
	return v;										\
}												\
												\
static void hdm_fi_write_##field(struct hdm_core *core, unsigned int unit HDM_UNUSED,	\
				 uint32_t value)						\
{												\
	struct hdm_fault_kind *k;								\
												\
	if (!(valid)) {										\
		hdm_guest_error(core, HPU_ERR_BAD_CTRL, reg ": 0x%08" PRIx32 " out of range",	\
				value);								\
		return;										\
	}											\
	pthread_mutex_lock(&core->fault.lock);							\
	k = hdm_fault_selected(core, reg);							\
	if (k)											\
		k->set.field = value;								\
	pthread_mutex_unlock(&core->fault.lock);						\
}

HDM_FI_SETTING(times, "FI_TIMES", true)
HDM_FI_SETTING(skip, "FI_SKIP", true)
HDM_FI_SETTING(prob, "FI_PROB", true)
HDM_FI_SETTING(seed, "FI_SEED", true)
HDM_FI_SETTING(asid, "FI_ASID", value < HPU_MMU_NUM_ASIDS || value == HPU_FI_ANY_ASID)

static uint32_t hdm_fi_read_injected(struct hdm_core *core, unsigned int unit HDM_UNUSED)
{
	struct hdm_fault *f = &core->fault;
	uint32_t v;

	/* The heartbeat's periods are counted when it is looked at. */
	if (f->select == HPU_FAULT_HEARTBEAT_LOSS)
		hdm_heartbeat_update(core);
	pthread_mutex_lock(&f->lock);
	v = f->select ? f->kinds[f->select].injected : 0;
	pthread_mutex_unlock(&f->lock);
	return v;
}

static void hdm_fi_write_ctrl(struct hdm_core *core, unsigned int unit HDM_UNUSED,
			      uint32_t value)
{
	const uint32_t known = HPU_FI_CTRL_ARM | HPU_FI_CTRL_DISARM;
	struct hdm_fault_kind *k;

	if (value & ~known || value == known) {
		hdm_guest_error(core, HPU_ERR_BAD_CTRL, "FI_CTRL: %s 0x%08" PRIx32,
				value & ~known ? "unknown bits" : "ARM with DISARM", value);
		return;
	}
	if (!value)
		return;
	pthread_mutex_lock(&core->fault.lock);
	k = hdm_fault_selected(core, "FI_CTRL");
	if (k) {
		k->rng = k->set.seed;
		hdm_fault_set_armed(&core->fault, core->fault.select, value == HPU_FI_CTRL_ARM);
	}
	pthread_mutex_unlock(&core->fault.lock);
}

#define HDM_FI_RW (HDM_REG_R | HDM_REG_W)
#define HDM_FI_DESC(reg, acc, check, write, read) \
	[(HPU_REG_FI_##reg - HPU_REG_FI_SELECT) / 4] = { "FI_" #reg, acc, check, write, read }

const struct hdm_reg_desc hdm_fi_reg_descs[HDM_FI_REG_WORDS] = {
	HDM_FI_DESC(SELECT, HDM_FI_RW, NULL, hdm_fi_write_select, hdm_fi_read_select),
	HDM_FI_DESC(TIMES, HDM_FI_RW, NULL, hdm_fi_write_times, hdm_fi_read_times),
	HDM_FI_DESC(SKIP, HDM_FI_RW, NULL, hdm_fi_write_skip, hdm_fi_read_skip),
	HDM_FI_DESC(PROB, HDM_FI_RW, NULL, hdm_fi_write_prob, hdm_fi_read_prob),
	HDM_FI_DESC(SEED, HDM_FI_RW, NULL, hdm_fi_write_seed, hdm_fi_read_seed),
	HDM_FI_DESC(ASID, HDM_FI_RW, NULL, hdm_fi_write_asid, hdm_fi_read_asid),
	HDM_FI_DESC(INJECTED, HDM_REG_R, NULL, NULL, hdm_fi_read_injected),
	HDM_FI_DESC(CTRL, HDM_REG_W, NULL, hdm_fi_write_ctrl, NULL),
};

/* ---- properties ---- */

/* A uint32 field of a property, or a word it may be instead (word_value); false if neither. */
static bool hdm_fault_field(const char *s, size_t len, const char *word, uint32_t word_value,
			    uint32_t *out)
{
	char buf[32], *end;
	unsigned long long v;

	if (!len || len >= sizeof(buf))
		return false;
	memcpy(buf, s, len);
	buf[len] = '\0';
	if (word && !strcmp(buf, word)) {
		*out = word_value;
		return true;
	}
	if (buf[0] == '-' || buf[0] == '+' || buf[0] == ' ')
		return false;
	errno = 0;
	v = strtoull(buf, &end, 0);
	if (errno || *end || v > UINT32_MAX)
		return false;
	*out = (uint32_t)v;
	return true;
}

/* PROB: a fraction 0..1 with a point, or an integer over 2^32. */
static bool hdm_fault_prob(const char *s, size_t len, uint32_t *out)
{
	char buf[32], *end;
	double p;

	if (!memchr(s, '.', len))
		return hdm_fault_field(s, len, NULL, 0, out);
	if (len >= sizeof(buf) || s[0] == '-' || s[0] == '+' || s[0] == ' ')
		return false;
	memcpy(buf, s, len);
	buf[len] = '\0';
	p = strtod(buf, &end);
	if (*end || !(p >= 0.0 && p <= 1.0))
		return false;
	*out = p >= 1.0 ? HDM_FAULT_ALWAYS : (uint32_t)llround(p * 4294967296.0);
	return true;
}

int hdm_fault_parse(const char *spec, struct hdm_fault_settings *out, char *err,
		    size_t err_len)
{
	static const char *const what[] = {
		"TIMES (a count, or inf)", "SKIP (a count)",
		"PROB (a fraction like 0.25, or an integer over 2^32)", "SEED (a number)",
		"ASID (a context below 1024, or any)",
	};
	uint32_t v[5] = { 0, 0, HDM_FAULT_ALWAYS, 0, HPU_FI_ANY_ASID };
	const char *p = spec;
	unsigned int i;
	bool ok;

	memset(out, 0, sizeof(*out));
	if (!spec || !*spec)
		return 0;
	for (i = 0; i < 5; i++) {
		const char *colon = strchr(p, ':');
		size_t len = colon ? (size_t)(colon - p) : strlen(p);

		if (i == 0)
			ok = hdm_fault_field(p, len, "inf", HDM_FAULT_UNLIMITED, &v[i]) && v[i];
		else if (i == 2)
			ok = hdm_fault_prob(p, len, &v[i]);
		else if (i == 4)
			ok = hdm_fault_field(p, len, "any", HPU_FI_ANY_ASID, &v[i]) &&
			     (v[i] < HPU_MMU_NUM_ASIDS || v[i] == HPU_FI_ANY_ASID);
		else
			ok = hdm_fault_field(p, len, NULL, 0, &v[i]);
		if (!ok) {
			snprintf(err, err_len, "\"%s\": field %u is not %s", spec, i + 1, what[i]);
			return -EINVAL;
		}
		if (!colon)
			break;
		p = colon + 1;
	}
	if (i == 5) {
		snprintf(err, err_len, "\"%s\": more than TIMES:SKIP:PROB:SEED:ASID", spec);
		return -EINVAL;
	}
	*out = (struct hdm_fault_settings){
		.times = v[0], .skip = v[1], .prob = v[2], .seed = v[3], .asid = v[4],
		.armed = true,
	};
	return 0;
}
