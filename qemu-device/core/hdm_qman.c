/* SPDX-License-Identifier: MIT */
/*
 * hpu queue manager: queue registers, job fetch and the engine loop.  How
 * the engine shares itself between queues (slices, yields, set-aside jobs,
 * the adaptive poll window) is told in hdm_qman.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <time.h>

#include "hdm_internal.h"
#include "hdm_le.h"
#include "hdm_pkt.h"
#include "hdm_tmem.h"

#define HDM_DESC_OFF(field) offsetof(struct hpu_queue_desc, field)

/* Both kinds of ring hold descriptors of one size, so a slot is found the same way. */
_Static_assert(sizeof(struct hpu_queue_desc) == sizeof(struct hpu_uq_desc),
	       "kernel and user queue descriptors differ in size");

static const char *const hdm_event_names[] = {
	[HPU_EVENT_MMU_FAULT] = "MMU fault",
	[HPU_EVENT_ILLEGAL_PACKET] = "illegal packet",
	[HPU_EVENT_PRIV_PACKET] = "privileged packet",
	[HPU_EVENT_DMA_ERROR] = "DMA error",
	[HPU_EVENT_ABORTED] = "aborted",
	[HPU_EVENT_BAD_KERNEL] = "bad kernel",
	[HPU_EVENT_PREEMPTED] = "preempted",
	[HPU_EVENT_NOT_RESUMABLE] = "not resumable",
};

bool hdm_job_cancelled(const struct hdm_job *job)
{
	struct hdm_core *core = job->core;

	const struct hdm_qman_queue *qq = &core->qman.queues[job->queue];

	return __atomic_load_n(&qq->abort, __ATOMIC_RELAXED) ||
	       __atomic_load_n(&qq->kill, __ATOMIC_RELAXED) ||
	       __atomic_load_n(&core->gen, __ATOMIC_RELAXED) != job->gen;
}

void hdm_qman_kick(struct hdm_core *core)
{
	__atomic_add_fetch(&core->qman.kicks, 1, __ATOMIC_RELEASE);
	pthread_cond_signal(&core->qman.work);
}

/* Parked queues look at their WAIT again. */
static void hdm_qman_recheck(struct hdm_core *core)
{
	unsigned int q;

	for (q = 0; q < HDM_QMAN_QUEUES; q++)
		core->qman.queues[q].recheck = core->qman.queues[q].parked;
}

static const char *hdm_q_check_idle(struct hdm_core *core, unsigned int q,
				    uint32_t value HDM_UNUSED)
{
	return HDM_Q_REG(core, q, PI) == HDM_Q_REG(core, q, CI) ? NULL :
	       "the queue has jobs (PI != CI)";
}

const char *hdm_q_check_ring_size(struct hdm_core *core, unsigned int q, uint32_t size)
{
	const char *why = hdm_q_check_idle(core, q, size);

	return why ? why : hdm_ring_size_check(size);
}

const char *hdm_q_check_doorbell(struct hdm_core *core, unsigned int q, uint32_t pi)
{
	uint32_t ci = HDM_Q_REG(core, q, CI);

	/*
	 * A user queue a warm reset kept takes its doorbell meanwhile (its owner cannot know
	 * of the reset): the jobs run from READY.  A kernel queue waits for its driver.
	 */
	if (!hdm_qman_is_uq(q) && HDM_CORE_REG(core, BOOT_STATUS) != HPU_FW_BOOT_READY)
		return "the firmware is not ready";
	if (!HDM_Q_REG(core, q, RING_SIZE))
		return "the queue has no ring";
	/* Free running indices: compare distances from CI. */
	if (pi - ci < HDM_Q_REG(core, q, PI) - ci || pi - ci > HDM_Q_REG(core, q, RING_SIZE))
		return "PI moves back, or past the ring's free entries";
	return NULL;
}

void hdm_q_write_pi(struct hdm_core *core, unsigned int q, uint32_t pi)
{
	HDM_Q_REG(core, q, PI) = pi;
	/* The submitter may have set a sync object in host memory: a doorbell re-checks WAITs. */
	hdm_qman_recheck(core);
	hdm_qman_kick(core);
}

/* Jobs up to ci ended or were dropped. */
static void hdm_q_move_ci(struct hdm_core *core, unsigned int q, uint32_t ci)
{
	if (HDM_Q_REG(core, q, CI) == ci)
		return;
	HDM_Q_REG(core, q, CI) = ci;
	core->qman.queues[q].deferred_ns = 0;
	/* A PREEMPT names the job at CI: one that ended lets it lapse. */
	__atomic_store_n(&core->qman.queues[q].preempt, 0, __ATOMIC_RELAXED);
	if (hdm_qman_is_uq(q))
		hdm_uq_ci_moved(core, q);
}

/* Queue q's entry of the job with this tag (a free one: free_one), or -1.  Lock held. */
static int hdm_qman_saved_find(const struct hdm_qman_queue *qq, uint64_t tag, bool free_one)
{
	unsigned int i;

	for (i = 0; i < HDM_Q_SAVED_ENTRIES; i++)
		if (free_one ? !qq->saved[i] : qq->saved[i] && qq->saved[i]->tag == tag)
			return (int)i;
	return -1;
}

/* Entries a PREEMPT may take: the warm reset's spare is not one. */
static uint32_t hdm_q_read_preempt_free(struct hdm_core *core, unsigned int q)
{
	uint32_t used = 0;
	unsigned int i;

	for (i = 0; i < HDM_Q_SAVED_ENTRIES; i++)
		used += !!core->qman.queues[q].saved[i];
	return used < HPU_Q_PREEMPT_SLOTS ? HPU_Q_PREEMPT_SLOTS - used : 0;
}

/* Queue q's entries go to the engine, which frees them: nothing is written back.  Lock held. */
static void hdm_qman_drop_saved(struct hdm_core *core, unsigned int q)
{
	struct hdm_qman_queue *qq = &core->qman.queues[q];
	unsigned int i;

	for (i = 0; i < HDM_Q_SAVED_ENTRIES; i++) {
		if (!qq->saved[i])
			continue;
		qq->saved[i]->next = core->qman.dropped;
		core->qman.dropped = qq->saved[i];
		qq->saved[i] = NULL;
		hdm_qman_kick(core);
	}
}

/* An entry and what its job kept are freed, unwritten.  The engine's. */
static void hdm_qman_saved_free(struct hdm_core *core, struct hdm_qman_saved *s)
{
	if (s->held)
		hdm_tmem_free_held(core, s->held);
	free(s->scratch);
	free(s);
}

/*
 * PREEMPT of kernel queue q: the engine sets its job at CI aside, then CI moves past it, or
 * with drop_rest to PI as it is now.  False if refused.  Lock held.
 */
static bool hdm_q_preempt(struct hdm_core *core, unsigned int q, bool drop_rest)
{
	struct hdm_qman_queue *qq = &core->qman.queues[q];
	const char *why = NULL;

	if (HDM_Q_REG(core, q, PI) == HDM_Q_REG(core, q, CI))
		why = "the queue has no job";
	else if (qq->abort)
		why = "a reset is pending";
	else if (!hdm_q_read_preempt_free(core, q))
		why = "no free entry";
	if (why) {
		hdm_guest_error(core, HPU_ERR_PREEMPT, "queue 0x%" PRIx32 " CTRL PREEMPT: %s",
				hdm_qman_queue_id(q), why);
		return false;
	}
	if (drop_rest) {
		qq->abort_pi = HDM_Q_REG(core, q, PI);
		qq->drop_rest = true;
	}
	__atomic_store_n(&qq->preempt, 1, __ATOMIC_RELAXED);
	/* A parked job is ready now, to be set aside. */
	hdm_qman_kick(core);
	return true;
}

void hdm_q_write_ctrl(struct hdm_core *core, unsigned int q, uint32_t value)
{
	struct hdm_qman_queue *qq = &core->qman.queues[q];
	uint32_t known = HPU_Q_CTRL_RESET | (hdm_qman_is_uq(q) ? 0 : HPU_Q_CTRL_PREEMPT);
	bool reset = value & HPU_Q_CTRL_RESET;

	if (value & ~known) {
		hdm_guest_error(core, HPU_ERR_BAD_CTRL,
				"queue 0x%" PRIx32 " CTRL: unknown bits 0x%08" PRIx32,
				hdm_qman_queue_id(q), value & ~known);
		return;
	}
	/* With RESET, PREEMPT sets aside a job the engine started that no reset ends yet. */
	if (value & HPU_Q_CTRL_PREEMPT &&
	    (!reset || ((qq->running || qq->parked) && !qq->abort)) &&
	    hdm_q_preempt(core, q, reset))
		return;
	if (!reset)
		return;
	/* Set-aside jobs are not queued: their entries stay for RESUME. */
	__atomic_store_n(&qq->preempt, 0, __ATOMIC_RELAXED);
	if (qq->running || qq->parked) {
		/* The engine ends the job (ABORTED), then sets CI; STATUS reads busy until then. */
		qq->abort_pi = HDM_Q_REG(core, q, PI);
		__atomic_store_n(&qq->abort, 1, __ATOMIC_RELAXED);
		hdm_qman_kick(core);
	} else {
		hdm_q_move_ci(core, q, HDM_Q_REG(core, q, PI));
	}
}

const struct hdm_reg_desc hdm_qman_reg_descs[HPU_REG_QUEUE_STRIDE / 4] = {
	[HPU_Q_RING_LO / 4] = { "RING_LO", HDM_REG_R | HDM_REG_W, hdm_q_check_idle, NULL },
	[HPU_Q_RING_HI / 4] = { "RING_HI", HDM_REG_R | HDM_REG_W, hdm_q_check_idle, NULL },
	[HPU_Q_RING_SIZE / 4] = { "RING_SIZE", HDM_REG_R | HDM_REG_W, hdm_q_check_ring_size, NULL },
	[HPU_Q_PI / 4] = { "PI", HDM_REG_R | HDM_REG_W, hdm_q_check_doorbell, hdm_q_write_pi },
	[HPU_Q_CI / 4] = { "CI", HDM_REG_R, NULL, NULL },
	[HPU_Q_STATUS / 4] = { "STATUS", HDM_REG_R, NULL, NULL },
	[HPU_Q_CTRL / 4] = { "CTRL", HDM_REG_W, NULL, hdm_q_write_ctrl },
	[HPU_Q_DEFERRED_US / 4] = { "DEFERRED_US", HDM_REG_R, NULL, NULL, hdm_q_read_deferred },
	[HPU_Q_ABORT_IN_CALL / 4] = { "ABORT_IN_CALL", HDM_REG_R, NULL, NULL },
	[HPU_Q_PREEMPT_FREE / 4] = { "PREEMPT_FREE", HDM_REG_R, NULL, NULL,
				     hdm_q_read_preempt_free },
	[HPU_Q_SAVED_TAG_LO / 4] = { "SAVED_TAG_LO", HDM_REG_R, NULL, NULL },
	[HPU_Q_SAVED_TAG_HI / 4] = { "SAVED_TAG_HI", HDM_REG_R, NULL, NULL },
};

static struct hdm_qman_saved *hdm_qman_save(struct hdm_job *job);

/*
 * A warm reset: kernel queue q's started job (not in the engine) goes into its
 * table, its tag into SAVED_TAG.  PREEMPTs leave it an entry: the table is full
 * only if an entry of an earlier warm reset was not taken back.  Lock held.
 */
static void hdm_qman_warm_save(struct hdm_core *core, unsigned int q)
{
	struct hdm_qman_queue *qq = &core->qman.queues[q];
	struct hdm_qman_saved *s;
	int slot;

	if (!qq->parked)
		return;
	s = hdm_qman_save(&qq->job);
	if (!s)
		return;
	slot = hdm_qman_saved_find(qq, 0, true);
	if (slot < 0 || hdm_qman_saved_find(qq, s->tag, false) >= 0) {
		hdm_log(core, "queue 0x%" PRIx32 ": warm reset drops job tag 0x%" PRIx64 ": %s",
			hdm_qman_queue_id(q), s->tag, slot < 0 ? "no free entry" :
			"its tag has an entry");
		s->next = core->qman.dropped;
		core->qman.dropped = s;
		hdm_qman_kick(core);
		return;
	}
	qq->saved[slot] = s;
	core->regs[HPU_REG_Q(q, HPU_Q_SAVED_TAG_LO) / 4] = (uint32_t)s->tag;
	core->regs[HPU_REG_Q(q, HPU_Q_SAVED_TAG_HI) / 4] = (uint32_t)(s->tag >> 32);
}

/*
 * A warm reset keeps user queue q as it was: its started job goes on at the next
 * READY; the one the engine is in (it did not yield in time) ends ABORTED then.
 * Lock held.
 */
static void hdm_qman_warm_keep(struct hdm_core *core, unsigned int q)
{
	struct hdm_qman_queue *qq = &core->qman.queues[q];

	if (qq->running) {
		qq->parked = true;
		if (!qq->abort)
			qq->abort_pi = HDM_Q_REG(core, q, CI) + 1;
		__atomic_store_n(&qq->abort, 1, __ATOMIC_RELAXED);
		/* Busy, and in the engine until the abandoned step has let go of memory. */
		HDM_Q_REG(core, q, STATUS) = HPU_Q_STATUS_BUSY | HPU_Q_STATUS_ENGINE;
	}
	qq->running = false;
	qq->recheck = qq->parked;
	qq->deferred_ns = 0;
	__atomic_store_n(&qq->kill, 0, __ATOMIC_RELAXED);
}

void hdm_qman_reset(struct hdm_core *core, bool warm)
{
	unsigned int q;

	/* A step still in progress belongs to the old generation: it defers no one now. */
	core->qman.current = -1;
	/* A hung packet lets go. */
	pthread_cond_broadcast(&core->qman.stepped);
	for (q = 0; q < HDM_QMAN_QUEUES; q++) {
		struct hdm_qman_queue *qq = &core->qman.queues[q];

		if (warm && hdm_qman_is_uq(q)) {
			hdm_qman_warm_keep(core, q);
			continue;
		}
		if (warm)
			hdm_qman_warm_save(core, q);

		/* A job the engine is still in reads busy until it has let go of memory. */
		HDM_Q_REG(core, q, STATUS) = qq->running ? HPU_Q_STATUS_BUSY | HPU_Q_STATUS_ENGINE : 0;
		qq->running = false;
		qq->parked = false;
		qq->recheck = false;
		qq->deferred_ns = 0;
		__atomic_store_n(&qq->abort, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&qq->preempt, 0, __ATOMIC_RELAXED);
		qq->drop_rest = false;
		__atomic_store_n(&qq->kill, 0, __ATOMIC_RELAXED);
		if (!warm)
			hdm_qman_drop_saved(core, q);
	}
}

void hdm_qman_retire(struct hdm_core *core, struct hdm_hbm *hbm)
{
	/* Freeing touched HBM takes a while: never on the vCPU, unless resets come back to back. */
	if (core->qman.retired) {
		hdm_hbm_put(hbm);
		return;
	}
	core->qman.retired = hbm;
	hdm_qman_kick(core);
}

/*
 * The job's progress goes into a new entry (NULL, logged, without memory for one).  The
 * engine's, unlocked: what the job kept moves with it, its command buffer is copied.
 */
static struct hdm_qman_saved *hdm_qman_save(struct hdm_job *job)
{
	struct hdm_qman_saved *s = malloc(sizeof(*s) + job->cb_size);

	if (!s) {
		hdm_log(job->core, "queue 0x%" PRIx32 ": no memory to set job tag 0x%" PRIx64
			" aside", hdm_qman_queue_id(job->queue), job->tag);
		return NULL;
	}
	*s = (struct hdm_qman_saved){
		.tag = job->tag, .asid = job->asid, .cb_size = job->cb_size,
		.priv_offset = job->priv_offset, .pos = job->pos, .engine = job->engine,
		.moved = job->moved, .call_addr = job->call.addr, .call_size = job->call.size,
		.call_pos = job->call.pos, .held = job->held, .scratch = job->scratch,
		.scratch_len = job->scratch_len, .decoded_len = job->decoded_len,
	};
	memcpy(s->decoded, job->decoded, job->decoded_len);
	memcpy(s->cb, job->cb, job->cb_size);
	job->held = NULL;
	job->scratch = NULL;
	job->scratch_len = 0;
	return s;
}

/* The job goes on from the entry, which is freed.  The engine's. */
static void hdm_qman_unsave(struct hdm_job *job, struct hdm_qman_saved *s)
{
	job->pos = s->pos;
	job->engine = s->engine;
	job->moved = s->moved;
	job->call.addr = s->call_addr;
	job->call.size = s->call_size;
	job->call.pos = s->call_pos;
	job->call.win_len = 0;
	job->held = s->held;
	job->scratch = s->scratch;
	job->scratch_len = s->scratch_len;
	job->decoded_len = s->decoded_len;
	memcpy(job->decoded, s->decoded, s->decoded_len);
	free(s);
}

/*
 * A RESUME descriptor's job takes its entry back; an entry of another job is dropped, and
 * none fails the job.  The engine's, unlocked; the descriptor and command buffer are read.
 */
static int hdm_qman_resume(struct hdm_job *job)
{
	struct hdm_core *core = job->core;
	struct hdm_qman_queue *qq = &core->qman.queues[job->queue];
	struct hdm_qman_saved *s = NULL;
	int i;

	hdm_core_lock(core);
	i = hdm_qman_saved_find(qq, job->tag, false);
	if (i >= 0) {
		s = qq->saved[i];
		qq->saved[i] = NULL;
	}
	hdm_core_unlock(core);
	if (s && s->asid == job->asid && s->cb_size == job->cb_size &&
	    s->priv_offset == job->priv_offset && !memcmp(s->cb, job->cb, job->cb_size)) {
		hdm_qman_unsave(job, s);
		return 0;
	}
	if (s)
		hdm_qman_saved_free(core, s);
	return hdm_job_fail(job, HPU_EVENT_NOT_RESUMABLE, 0);
}

/* Fetch a kernel queue's descriptor (job->slot) and command buffer; a bad one fails the job. */
static int hdm_job_load(struct hdm_job *job)
{
	struct hdm_core *core = job->core;
	uint8_t desc[sizeof(struct hpu_queue_desc)];
	uint64_t cb_addr;
	uint32_t flags;

	if (core->ops->dma_read(core->opaque, job->slot, desc, sizeof(desc)))
		return hdm_job_fail(job, HPU_EVENT_DMA_ERROR, job->slot);
	cb_addr = hdm_ld_le64(desc + HDM_DESC_OFF(cb_addr));
	job->cb_size = hdm_ld_le32(desc + HDM_DESC_OFF(cb_size));
	job->priv_offset = hdm_ld_le32(desc + HDM_DESC_OFF(priv_offset));
	job->asid = hdm_ld_le32(desc + HDM_DESC_OFF(asid));
	job->tag = hdm_ld_le64(desc + HDM_DESC_OFF(tag));
	flags = hdm_ld_le32(desc + HDM_DESC_OFF(flags));
	if (job->cb_size % 8 || job->cb_size > HDM_JOB_CB_MAX ||
	    job->priv_offset > job->cb_size || flags & ~HPU_QUEUE_DESC_RESUME ||
	    job->asid >= HPU_MMU_NUM_ASIDS)
		return hdm_job_fail(job, HPU_EVENT_ILLEGAL_PACKET, 0);
	/* The fetch must not wrap around the top of the bus address space. */
	if (job->cb_size && (cb_addr + (job->cb_size - 1) < cb_addr ||
			     core->ops->dma_read(core->opaque, cb_addr, job->cb, job->cb_size)))
		return hdm_job_fail(job, HPU_EVENT_DMA_ERROR, cb_addr);
	return flags & HPU_QUEUE_DESC_RESUME ? hdm_qman_resume(job) : 0;
}

/* Post an event of the job.  May drop the lock. */
static void hdm_qman_post(struct hdm_core *core, const struct hdm_job *job, uint32_t type,
			  uint64_t addr)
{
	const struct hpu_event ev = {
		.type = type,
		.queue = hdm_qman_queue_id(job->queue),
		.asid = job->asid,
		.engine = job->engine,
		.tag = job->tag,
		.addr = addr,
	};

	hdm_eq_post(core, &ev);
}

/* Log a failed job and post its event.  May drop the lock. */
static void hdm_qman_report(struct hdm_core *core, const struct hdm_job *job)
{
	hdm_log(core, "queue 0x%" PRIx32 ": job tag 0x%" PRIx64 " (asid %" PRIu32 ") failed: %s at "
		"0x%" PRIx64 ", engine 0x%" PRIx32, hdm_qman_queue_id(job->queue), job->tag,
		job->asid, hdm_event_names[job->fault], job->fault_addr, job->engine);
	hdm_qman_post(core, job, job->fault, job->fault_addr);
}

/*
 * The step's job goes into the entry s if the PREEMPT still stands (no reset came, its
 * tag has no entry, s is not NULL: memory was found) and the event is posted; CI is the
 * caller's to move.  Refused, the job goes on, or with drop_rest is aborted.  Lock held
 * (and dropped to post).
 */
static bool hdm_qman_set_aside(struct hdm_core *core, struct hdm_qman_queue *qq,
			       struct hdm_qman_saved *s)
{
	struct hdm_job *job = &qq->job;
	/* The warm reset's entry is not a PREEMPT's. */
	int slot = hdm_q_read_preempt_free(core, job->queue) ?
		   hdm_qman_saved_find(qq, 0, true) : -1;

	if (job->gen != core->gen || qq->abort || !qq->preempt)
		return false;
	__atomic_store_n(&qq->preempt, 0, __ATOMIC_RELAXED);
	if (!s || slot < 0 || hdm_qman_saved_find(qq, s->tag, false) >= 0) {
		if (s)
			hdm_guest_error(core, HPU_ERR_PREEMPT, "queue 0x%" PRIx32 ": job tag 0x%"
					PRIx64 " not set aside: %s", hdm_qman_queue_id(job->queue),
					s->tag, slot < 0 ? "no free entry" : "its tag has an entry");
		/* With RESET, the job's next step aborts it. */
		if (qq->drop_rest)
			__atomic_store_n(&qq->abort, 1, __ATOMIC_RELAXED);
		return false;
	}
	qq->saved[slot] = s;
	hdm_qman_post(core, job, HPU_EVENT_PREEMPTED, s->pos);
	return true;
}

/*
 * A kernel queue's job ends: ABORT_IN_CALL names the callee WAIT it was
 * parked at if a reset aborted it there before it ran on (at the step's
 * start: parked in_call at call_pos, at pos).  Lock held.
 */
static void hdm_qman_note_abort(struct hdm_core *core, const struct hdm_job *job,
				bool in_call, uint32_t pos, uint64_t call_pos)
{
	in_call = in_call && job->fault == HPU_EVENT_ABORTED && job->pos == pos &&
		  job->call.pos == call_pos;

	if (!hdm_qman_is_uq(job->queue))
		core->regs[HPU_REG_Q(job->queue, HPU_Q_ABORT_IN_CALL) / 4] =
			in_call ? HPU_Q_IN_CALL_PARKED | (uint32_t)call_pos : 0;
}

/* The step is over: park, or end the job and advance CI.  Lock held. */
static void hdm_qman_end_step(struct hdm_core *core, struct hdm_qman_queue *qq,
			      enum hdm_pkt_status status)
{
	struct hdm_job *job = &qq->job;
	unsigned int q = job->queue;

	if (status == HDM_PKT_FAILED && job->gen == core->gen) {
		if (hdm_qman_is_uq(q))
			HDM_UQ_REG(core, q, ERRORS)++;
		hdm_qman_report(core, job);
	}
	if (job->gen != core->gen) {
		/*
		 * A device reset abandoned the job: the queue's state is no longer its own
		 * (but for a user queue a warm reset kept, parked with the job to abort).
		 */
		HDM_Q_REG(core, q, STATUS) = qq->parked ?
			HDM_Q_REG(core, q, STATUS) & ~HPU_Q_STATUS_ENGINE : 0;
		return;
	}
	qq->running = false;
	if (job->signalled)
		hdm_qman_recheck(core);
	if (status == HDM_PKT_STALLED) {
		qq->parked = true;
		HDM_Q_REG(core, q, STATUS) = HPU_Q_STATUS_WAITING;
		return;
	}
	if (status == HDM_PKT_YIELDED) {
		/* Still busy, and ready again once the queues after it had their turn. */
		qq->parked = true;
		qq->recheck = true;
		HDM_Q_REG(core, q, STATUS) = HPU_Q_STATUS_BUSY;
		return;
	}
	hdm_q_move_ci(core, q,
		      qq->abort || qq->drop_rest ? qq->abort_pi : HDM_Q_REG(core, q, CI) + 1);
	__atomic_store_n(&qq->abort, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&qq->kill, 0, __ATOMIC_RELAXED);
	qq->drop_rest = false;
	HDM_Q_REG(core, q, STATUS) = 0;
}

/* Queue q has a job the engine could run now (not one it is in).  Lock held. */
static bool hdm_qman_ready(struct hdm_core *core, unsigned int q)
{
	const struct hdm_qman_queue *qq = &core->qman.queues[q];

	/* Nothing runs without firmware, nor while a warm reset waits. */
	if (qq->running || HDM_CORE_REG(core, BOOT_STATUS) != HPU_FW_BOOT_READY ||
	    core->qman.quiesce)
		return false;
	return qq->parked ? qq->recheck || qq->abort || qq->preempt || qq->kill :
			    HDM_Q_REG(core, q, PI) != HDM_Q_REG(core, q, CI);
}

void hdm_qman_drop_kept(struct hdm_job *job, bool write_back)
{
	hdm_tmem_drop_held(job, write_back);
	hdm_job_drop_scratch(job);
}

/* A PREEMPT stands for the job (any thread of its step may ask). */
static bool hdm_job_preempting(const struct hdm_job *job)
{
	return __atomic_load_n(&job->core->qman.queues[job->queue].preempt, __ATOMIC_RELAXED) &&
	       !hdm_job_cancelled(job);
}

bool hdm_job_slice_over(struct hdm_job *job)
{
	struct hdm_core *core = job->core;
	uint64_t now = hdm_core_now_ns();
	bool others = false;
	unsigned int r;

	if (hdm_job_preempting(job) || __atomic_load_n(&core->qman.quiesce, __ATOMIC_RELAXED))
		return true;
	if (now < __atomic_load_n(&job->yield_ns, __ATOMIC_RELAXED))
		return false;
	hdm_core_lock(core);
	/* A WAIT the step's SIGNALs may satisfy is ready now, not only once the step ends. */
	if (job->signalled) {
		hdm_qman_recheck(core);
		job->signalled = false;
	}
	for (r = 0; r < HDM_QMAN_QUEUES && !others; r++)
		others = r != job->queue && hdm_qman_ready(core, r);
	hdm_core_unlock(core);
	if (!others)
		__atomic_store_n(&job->yield_ns, now + HPU_ENGINE_SLICE_US * 1000ull,
				 __ATOMIC_RELAXED);
	return others;
}

void hdm_job_slice_extend(struct hdm_job *job, uint64_t ns)
{
	uint64_t at = hdm_core_now_ns() + ns;

	if (at > __atomic_load_n(&job->yield_ns, __ATOMIC_RELAXED))
		__atomic_store_n(&job->yield_ns, at, __ATOMIC_RELAXED);
}

/* The step in queue q that began at step_ns ended: queues that were ready waited for it. */
static void hdm_qman_defer_others(struct hdm_core *core, unsigned int q)
{
	uint64_t ran = hdm_core_now_ns() - core->qman.step_ns;
	unsigned int r;

	core->qman.current = -1;
	for (r = 0; r < HDM_QMAN_QUEUES; r++)
		if (r != q && hdm_qman_ready(core, r))
			core->qman.queues[r].deferred_ns += ran;
}

uint32_t hdm_q_read_deferred(struct hdm_core *core, unsigned int q)
{
	uint64_t ns = core->qman.queues[q].deferred_ns, us;

	/* The step in progress counts too: a long packet of another queue is what a timeout excuses. */
	if (core->qman.current >= 0 && (unsigned int)core->qman.current != q &&
	    hdm_qman_ready(core, q))
		ns += hdm_core_now_ns() - core->qman.step_ns;
	us = ns / 1000;
	return us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
}

/*
 * Fault injection at a job's start, once its descriptor is read: it fails as if
 * its descriptor's fetch had (the address reported).  -1 if it fails.
 */
static int hdm_job_inject(struct hdm_job *job)
{
	if (hdm_fault_should_fail(job->core, HPU_FAULT_MMU_FAULT, job->asid))
		return hdm_job_fail(job, HPU_EVENT_MMU_FAULT, job->slot);
	if (hdm_fault_should_fail(job->core, HPU_FAULT_DMA_ERROR, job->asid))
		return hdm_job_fail(job, HPU_EVENT_DMA_ERROR, job->slot);
	return 0;
}

/*
 * An ENGINE_RESET came for the step's job: it ends ABORTED at the packet it was
 * in, as the queue manager reports an abort, unless it completed (or failed of
 * its own) first.  The step's status after it.
 */
static enum hdm_pkt_status hdm_job_killed(struct hdm_job *job, enum hdm_pkt_status status)
{
	struct hdm_core *core = job->core;

	if (!__atomic_load_n(&core->qman.queues[job->queue].kill, __ATOMIC_RELAXED) ||
	    __atomic_load_n(&core->gen, __ATOMIC_RELAXED) != job->gen || status == HDM_PKT_DONE ||
	    (status == HDM_PKT_FAILED && job->fault != HPU_EVENT_ABORTED))
		return status;
	job->engine = HPU_ENGINE_QMAN;
	hdm_job_fail(job, HPU_EVENT_ABORTED, job->pos);
	return HDM_PKT_FAILED;
}

/* Start the job at CI, or resume a parked one, and run it as far as it goes. */
static void hdm_qman_step(struct hdm_core *core, unsigned int q)
{
	struct hdm_qman_queue *qq = &core->qman.queues[q];
	struct hdm_job *job = &qq->job;
	bool fresh = !qq->parked, uq = hdm_qman_is_uq(q), preempting;
	/* Where a job parked on a WAIT in a callee is, for a reset that ends it there. */
	bool in_call = qq->parked && (HDM_Q_REG(core, q, STATUS) & HPU_Q_STATUS_WAITING) &&
		       job->call.size;
	uint32_t pos = job->pos;
	uint64_t call_pos = job->call.pos;
	struct hdm_qman_saved *saved = NULL;
	enum hdm_pkt_status status;
	struct hdm_hbm *hbm;

	qq->running = true;
	qq->parked = false;
	qq->recheck = false;
	HDM_Q_REG(core, q, STATUS) = HPU_Q_STATUS_BUSY | HPU_Q_STATUS_ENGINE;
	job->core = core;
	job->queue = q;
	job->gen = core->gen;
	core->qman.current = (int)q;
	core->qman.step_thread = pthread_self();
	core->qman.step_ns = hdm_core_now_ns();
	job->yield_ns = core->qman.step_ns + HPU_ENGINE_SLICE_US * 1000ull;
	job->hbm = hdm_hbm_get(core->hbm);
	job->signalled = false;
	if (fresh) {
		/* PI != CI: the ring, and a user queue's context, cannot change under the job. */
		job->slot = hdm_q_ring(core, q) +
			    (uint64_t)(HDM_Q_REG(core, q, CI) % HDM_Q_REG(core, q, RING_SIZE)) *
				    sizeof(struct hpu_queue_desc);
		/* A kernel queue's descriptor names its context; until it is read, events say 0. */
		job->asid = uq ? HDM_UQ_REG(core, q, ASID) : 0;
		job->tag = 0;
		job->pos = 0;
		job->moved = 0;
		job->call.size = 0;
		job->fault = 0;
		job->engine = HPU_ENGINE_QMAN;
	}
	hdm_core_unlock(core);

	/* What a job a device reset abandoned kept is not the new job's to write back. */
	if (fresh)
		hdm_qman_drop_kept(job, false);
	if (fresh && ((uq ? hdm_uq_job_load(job) : hdm_job_load(job)) || hdm_job_inject(job)))
		status = HDM_PKT_FAILED;
	else if (hdm_job_preempting(job))
		status = HDM_PKT_YIELDED; /* a parked job, or one just loaded */
	else
		status = hdm_pkt_run(job);
	status = hdm_job_killed(job, status);
	preempting = status != HDM_PKT_DONE && status != HDM_PKT_FAILED &&
		     hdm_job_preempting(job);
	if (preempting)
		saved = hdm_qman_save(job);
	if (status != HDM_PKT_YIELDED)
		hdm_qman_drop_kept(job, true);
	if (uq && (status == HDM_PKT_DONE || status == HDM_PKT_FAILED))
		hdm_uq_job_end(job, status);

	hdm_core_lock(core);
	/* A job set aside ends as a completed one does, CI moving past it. */
	if (preempting && hdm_qman_set_aside(core, qq, saved))
		status = HDM_PKT_DONE;
	else if (saved)
		hdm_qman_unsave(job, saved);
	if ((status == HDM_PKT_DONE || status == HDM_PKT_FAILED) && job->gen == core->gen)
		hdm_qman_note_abort(core, job, in_call, pos, call_pos);
	hdm_qman_end_step(core, qq, status);
	hdm_qman_defer_others(core, q);
	pthread_cond_broadcast(&core->qman.stepped);
	hbm = job->hbm;
	hdm_core_unlock(core);
	/* The last reference to an HBM a reset replaced frees it: slow, so unlocked. */
	hdm_hbm_put(hbm);
	hdm_core_lock(core);
}

/* Free HBM a reset replaced.  Lock held, dropped meanwhile. */
static void hdm_qman_free_retired(struct hdm_core *core)
{
	struct hdm_hbm *hbm = core->qman.retired;

	core->qman.retired = NULL;
	hdm_core_unlock(core);
	hdm_hbm_put(hbm);
	hdm_core_lock(core);
}

/* Free the entries resets dropped.  Lock held, dropped meanwhile. */
static void hdm_qman_free_dropped(struct hdm_core *core)
{
	struct hdm_qman_saved *s = core->qman.dropped, *next;

	core->qman.dropped = NULL;
	hdm_core_unlock(core);
	for (; s; s = next) {
		next = s->next;
		hdm_qman_saved_free(core, s);
	}
	hdm_core_lock(core);
}

void hdm_qman_destroy(struct hdm_core *core)
{
	unsigned int q;

	hdm_core_lock(core);
	for (q = 0; q < HDM_QMAN_QUEUES; q++) {
		hdm_qman_drop_saved(core, q);
		hdm_qman_drop_kept(&core->qman.queues[q].job, false);
	}
	hdm_qman_free_dropped(core);
	hdm_core_unlock(core);
}

/* Under the lock: the next queue that can make progress, round robin, or -1. */
static int hdm_qman_next(struct hdm_core *core, bool take)
{
	unsigned int i;

	for (i = 0; i < HDM_QMAN_QUEUES; i++) {
		unsigned int q = (core->qman.next + i) % HDM_QMAN_QUEUES;

		if (hdm_qman_ready(core, q)) {
			if (take)
				core->qman.next = q + 1;
			return (int)q;
		}
	}
	return -1;
}

void hdm_core_engine_run(struct hdm_core *core)
{
	int q;

	hdm_core_lock(core);
	while (!core->qman.stopping) {
		if (core->qman.retired)
			hdm_qman_free_retired(core);
		else if (core->qman.dropped)
			hdm_qman_free_dropped(core);
		else if ((q = hdm_qman_next(core, true)) >= 0)
			hdm_qman_step(core, (unsigned int)q);
		else
			break;
	}
	hdm_core_unlock(core);
}

static void hdm_qman_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

uint32_t hdm_qman_poll_window(uint32_t poll_ns, uint64_t idle_ns)
{
	/* Work came while polling (or was there). */
	if (idle_ns <= poll_ns)
		return poll_ns;
	/* Slept through a gap a longer window would have covered. */
	if (idle_ns <= HDM_ENGINE_POLL_MAX_NS) {
		if (!poll_ns)
			return HDM_ENGINE_POLL_START_NS;
		return poll_ns < HDM_ENGINE_POLL_MAX_NS / 2 ? 2 * poll_ns : HDM_ENGINE_POLL_MAX_NS;
	}
	/* Idle for longer than any window: poll less, down to not at all. */
	return poll_ns / 2 < HDM_ENGINE_POLL_START_NS ? 0 : poll_ns / 2;
}

bool hdm_core_engine_wait(struct hdm_core *core)
{
	uint64_t start = hdm_core_now_ns(), until;
	bool run;

	hdm_core_lock(core);
	until = start + core->qman.poll_ns;
	while (!core->qman.stopping && !core->qman.retired && !core->qman.dropped &&
	       hdm_qman_next(core, false) < 0) {
		uint32_t kicks = __atomic_load_n(&core->qman.kicks, __ATOMIC_ACQUIRE);

		if (hdm_core_now_ns() >= until) {
			pthread_cond_wait(&core->qman.work, &core->lock);
			continue;
		}
		/* Unlocked, so that MMIO never waits for the poll. */
		hdm_core_unlock(core);
		while (__atomic_load_n(&core->qman.kicks, __ATOMIC_ACQUIRE) == kicks &&
		       hdm_core_now_ns() < until)
			hdm_qman_relax();
		hdm_core_lock(core);
	}
	core->qman.poll_ns = hdm_qman_poll_window(core->qman.poll_ns, hdm_core_now_ns() - start);
	run = !core->qman.stopping;
	hdm_core_unlock(core);
	return run;
}

void hdm_core_engine_stop(struct hdm_core *core)
{
	hdm_core_lock(core);
	core->qman.stopping = true;
	/* Cut a running job short at its next step, as a reset would; a hung one at once. */
	__atomic_store_n(&core->gen, core->gen + 1, __ATOMIC_RELAXED);
	pthread_cond_broadcast(&core->qman.stepped);
	hdm_qman_kick(core);
	hdm_core_unlock(core);
}

/*
 * How long a reset waits for the engine at most: it may need the embedder's lock
 * (an interrupt, DMA to MMIO), which the thread writing the register can hold.
 */
#define HDM_ENGINE_WAIT_MAX_NS 500000000ull
/* The warm reset's poll of the engine's CPU time. */
#define HDM_QUIESCE_POLL_NS 100000ull

/* Called from the thread of the step in progress (a DMA of it into the device's BAR). */
static bool hdm_qman_on_engine(struct hdm_core *core)
{
	return core->qman.current >= 0 && pthread_equal(core->qman.step_thread, pthread_self());
}

/*
 * Wait until done(core) or ns passed, and say whether done.  Lock held, dropped
 * meanwhile; interrupts requested before go out first, since the engine may need
 * the embedder's lock to end its step.  Never on the thread of the step in progress.
 */
static bool hdm_qman_wait(struct hdm_core *core, bool (*done)(struct hdm_core *core),
			  uint64_t ns)
{
	struct timespec at;

	if (hdm_qman_on_engine(core))
		return done(core);
	hdm_core_unlock(core);
	hdm_core_lock(core);
	if (done(core))
		return true;
	clock_gettime(CLOCK_MONOTONIC, &at);
	at.tv_sec += (time_t)(ns / 1000000000u);
	at.tv_nsec += (long)(ns % 1000000000u);
	if (at.tv_nsec >= 1000000000) {
		at.tv_sec++;
		at.tv_nsec -= 1000000000;
	}
	while (!done(core))
		if (pthread_cond_timedwait(&core->qman.stepped, &core->lock, &at) == ETIMEDOUT)
			return done(core);
	return true;
}

/* CPU time the thread of the step in progress has used, in ns (0 if unknown). */
static uint64_t hdm_qman_engine_cpu_ns(struct hdm_core *core)
{
	struct timespec ts;
	clockid_t clock;

	if (pthread_getcpuclockid(core->qman.step_thread, &clock) ||
	    clock_gettime(clock, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The step in progress is over, or cannot end by itself (a hung packet). */
static bool hdm_qman_step_over(struct hdm_core *core)
{
	return core->qman.current < 0 || core->qman.hung;
}

/*
 * The slice is counted in the engine's own CPU time: a host too loaded to run its
 * thread does not cost the job its progress.  Bounded in time all the same.
 */
void hdm_qman_quiesce(struct hdm_core *core)
{
	uint64_t cpu, start = hdm_core_now_ns();

	if (hdm_qman_step_over(core) || hdm_qman_on_engine(core))
		return;
	__atomic_store_n(&core->qman.quiesce, 1, __ATOMIC_RELAXED);
	cpu = hdm_qman_engine_cpu_ns(core);
	while (!hdm_qman_wait(core, hdm_qman_step_over, HDM_QUIESCE_POLL_NS) &&
	       hdm_qman_engine_cpu_ns(core) - cpu < HPU_ENGINE_SLICE_US * 1000ull &&
	       hdm_core_now_ns() - start < HDM_ENGINE_WAIT_MAX_NS)
		;
	__atomic_store_n(&core->qman.quiesce, 0, __ATOMIC_RELAXED);
}

/* The engine left the job ENGINE_RESET ended, and every CTRL RESET pending is done. */
static bool hdm_qman_resets_done(struct hdm_core *core)
{
	unsigned int q;

	if (HDM_CORE_REG(core, BOOT_STATUS) != HPU_FW_BOOT_READY)
		return true;
	for (q = 0; q < HDM_QMAN_QUEUES; q++)
		if (core->qman.queues[q].kill || core->qman.queues[q].abort)
			return false;
	return true;
}

/*
 * The job the engine is in is the one an ENGINE_RESET is for: its queue's reset is
 * pending (it did not obey it yet), or it hangs.  Otherwise the reset's job left the
 * engine before the write, and the one the engine took up since is innocent.  Lock held.
 */
static bool hdm_qman_engine_stuck(struct hdm_core *core, int c)
{
	const struct hdm_qman_queue *qq = &core->qman.queues[c];

	return qq->running && (qq->abort || qq->drop_rest || core->qman.hung);
}

void hdm_qman_engine_reset(struct hdm_core *core)
{
	int c = core->qman.current;

	if (c >= 0 && hdm_qman_engine_stuck(core, c)) {
		__atomic_store_n(&core->qman.queues[c].kill, 1, __ATOMIC_RELAXED);
		pthread_cond_broadcast(&core->qman.stepped);
	}
	hdm_qman_kick(core);
	/* From the engine's own thread the job ends as the DMA returns. */
	if (!hdm_qman_wait(core, hdm_qman_resets_done, HDM_ENGINE_WAIT_MAX_NS) &&
	    !hdm_qman_on_engine(core))
		hdm_log(core, "ENGINE_RESET: the engine has not left its job yet");
}

bool hdm_qman_hang(struct hdm_job *job)
{
	struct hdm_core *core = job->core;
	struct hdm_qman_queue *qq = &core->qman.queues[job->queue];

	if (!(__atomic_load_n(&core->fault.armed, __ATOMIC_RELAXED) &
	      (1u << HPU_FAULT_ENGINE_HANG)))
		return false;
	/* Injected and hung at once, for an ENGINE_RESET (which looks for hung) to find. */
	hdm_core_lock(core);
	if (!hdm_fault_should_fail(core, HPU_FAULT_ENGINE_HANG, job->asid)) {
		hdm_core_unlock(core);
		return false;
	}
	/* Not even a CTRL RESET ends it: only what makes the engine leave the job. */
	core->qman.hung = true;
	pthread_cond_broadcast(&core->qman.stepped);
	while (!__atomic_load_n(&qq->kill, __ATOMIC_RELAXED) && job->gen == core->gen)
		pthread_cond_wait(&core->qman.stepped, &core->lock);
	core->qman.hung = false;
	hdm_core_unlock(core);
	return true;
}
