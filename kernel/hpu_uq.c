// SPDX-License-Identifier: GPL-2.0
/*
 * hpu user queues.
 *
 * A process submits a job to a user queue by writing a descriptor into a
 * ring in its own device address space and the new PI into its doorbell
 * page: no system call.  What keeps it in its context is the device (see
 * hpu_regs.h): the queue is bound to the file's ASID, so the ring, the
 * command buffers and every address in them are translated there, and
 * privileged packets fail.  The driver's part is the binding's lifetime:
 *
 * - a file holds at most max_file_uqueues of the device's queues, so that
 *   one cannot take them all;
 * - the doorbell page is mapped through a GEM object of no memory whose
 *   fault handler inserts the page only while the binding is live; an
 *   unbind first ends that, then zaps the mappings, then resets the queue,
 *   and only then is the queue free for another file;
 * - VM_UNMAP snapshots the context's PIs (hpu_uq_mark()): the pages stay
 *   pinned until each queue's CI has passed its snapshot;
 * - a queue whose reset the engine outlasts is retired holding its
 *   context's memory (@held): VM_UNMAP snapshots it too, UQUEUE_DESTROY
 *   waits killably for the engine to let go, and the file's release, which
 *   frees the memory, waits unkillably, also for a killed destroy's queue;
 * - a watchdog resets a queue whose CI stood still, with jobs queued, for
 *   the job timeout, so that every wait ends;
 * - UQUEUE_WAIT sleeps for CI, arming the queue's interrupt first, and
 *   looks at CI again every watchdog period, so that a lost interrupt
 *   cannot make it sleep forever;
 * - a banned file (hpu_reset.c) runs nothing more: its queues are stopped,
 *   reset and disabled, so that the device ignores their doorbells, but
 *   stay its own until UQUEUE_DESTROY or close; UQUEUE_WAIT on them fails
 *   with -EIO.
 */
#include <linux/bitops.h>
#include <linux/iopoll.h>
#include <linux/lockdep.h>
#include <linux/mm.h>
#include <linux/pci.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_managed.h>
#include <drm/drm_vma_manager.h>
#include <drm/hpu_packets.h>

#include "hpu_compat.h"
#include "hpu_ctx.h"
#include "hpu_device.h"
#include "hpu_fault.h"
#include "hpu_irq.h"
#include "hpu_queue.h"
#include "hpu_reset.h"
#include "hpu_uq.h"

/* The mmap offset of a user queue's doorbell page. */
struct hpu_uq_db {
	struct drm_gem_object base;
	struct hpu_uq *uq;
	struct drm_file *file;	/* the only file allowed to map it */
};

static struct hpu_uq_db *to_hpu_uq_db(struct drm_gem_object *obj)
{
	return container_of(obj, struct hpu_uq_db, base);
}

/* What the runtime takes: one per hardware queue. */
static unsigned int max_file_uqueues = HPU_NUM_QUEUES;
module_param(max_file_uqueues, uint, 0644);
MODULE_PARM_DESC(max_file_uqueues, "User queues one open file may hold (0: all of them)");

/* How often a queue that a reset did not stop is looked at for its engine having let go. */
#define HPU_UQ_RELEASE_POLL_MS 100

static u32 hpu_uq_rreg(struct hpu_device *hdev, u32 u, u32 reg)
{
	return hpu_rreg(hdev, HPU_REG_UQ(u, reg));
}

static void hpu_uq_wreg(struct hpu_device *hdev, u32 u, u32 reg, u32 val)
{
	hpu_wreg(hdev, HPU_REG_UQ(u, reg), val);
}

/*
 * Abort the queue's job and drop the queued ones; true once it is idle.
 * The dropped jobs get no status and the device counts only the aborted
 * one as failed: the rest are counted here (a job that ends on its own
 * between the reads and the reset counts among them).  Lock held.
 */
static bool hpu_uq_reset_ended(void *arg, u32 *status)
{
	struct hpu_uq *uq = arg;
	struct hpu_device *hdev = container_of(uq, struct hpu_device, uqs.q[uq->index]);

	*status = hpu_uq_rreg(hdev, uq->index, HPU_UQ_STATUS);
	return !(*status & (HPU_Q_STATUS_BUSY | HPU_Q_STATUS_WAITING));
}

static bool hpu_uq_reset_hw_locked(struct hpu_device *hdev, struct hpu_uq *uq)
{
	u32 u = uq->index, pi, ci, errors;
	bool idle;

	lockdep_assert_held(&hdev->uqs.lock);

	ci = hpu_uq_rreg(hdev, u, HPU_UQ_CI);
	errors = hpu_uq_rreg(hdev, u, HPU_UQ_ERRORS);
	pi = hpu_uq_rreg(hdev, u, HPU_UQ_PI);
	hpu_uq_wreg(hdev, u, HPU_UQ_CTRL, HPU_Q_CTRL_RESET);
	idle = hpu_queue_reset_wait(hdev, hpu_uq_reset_ended, uq);
	if (!idle) {
		char what[24];

		snprintf(what, sizeof(what), "user queue %u", u);
		idle = hpu_reset_engine(hdev, what) &&
		       hpu_queue_reset_wait(hdev, hpu_uq_reset_ended, uq);
	}
	if (idle)
		uq->dropped += (pi - ci) - (hpu_uq_rreg(hdev, u, HPU_UQ_ERRORS) - errors);
	else if (hdev->regs_minor >= 7)
		/* It drops the job the engine is in: the queue lets go of its memory then. */
		hpu_reset_device_schedule(hdev, DRM_HPU_RESET_CAUSE_HANG);
	else
		hpu_device_set_malfunction(hdev, "a user queue's reset failed");
	return idle;
}

/*
 * Whether @uq holds none of @ctx's memory: it was not retired holding it,
 * or its engine has let go of the job since (or the device is gone), and
 * then it no longer names @ctx.
 */
static bool hpu_uq_released(struct hpu_device *hdev, struct hpu_uq *uq, struct hpu_ctx *ctx)
{
	bool released = true;
	int idx;

	mutex_lock(&hdev->uqs.lock);
	if (uq->held == ctx && drm_dev_enter(&hdev->drm, &idx)) {
		released = !(hpu_uq_rreg(hdev, uq->index, HPU_UQ_STATUS) &
			     (HPU_Q_STATUS_BUSY | HPU_Q_STATUS_WAITING));
		drm_dev_exit(idx);
	}
	if (released && uq->held == ctx)
		uq->held = NULL;
	mutex_unlock(&hdev->uqs.lock);
	return released;
}

/*
 * Until none of the queues in @mask holds @ctx's memory, so that it
 * outlives their jobs, sleeping in @state between looks; -EINTR if a
 * signal @state lets in came first (the queues still hold it).
 */
static int hpu_uq_wait_released(struct hpu_device *hdev, struct hpu_ctx *ctx,
				unsigned long mask, unsigned int state)
{
	u32 u;

	for (;;) {
		for_each_set_bit(u, &mask, HPU_NUM_UQ)
			if (hpu_uq_released(hdev, &hdev->uqs.q[u], ctx))
				__clear_bit(u, &mask);
		if (!mask)
			return 0;
		/* The state first: a signal that comes after the look wakes the sleep. */
		set_current_state(state);
		if (signal_pending_state(state, current)) {
			__set_current_state(TASK_RUNNING);
			return -EINTR;
		}
		schedule_timeout(msecs_to_jiffies(HPU_UQ_RELEASE_POLL_MS));
	}
}

/* The jobs of the queue's binding so far: ends read before submissions, as for kernel queues. */
static void hpu_uq_count_locked(struct hpu_device *hdev, struct hpu_uq *uq, u64 *submitted,
				u64 *completed, u64 *failed)
{
	u32 ci = hpu_uq_rreg(hdev, uq->index, HPU_UQ_CI);
	u32 errors = hpu_uq_rreg(hdev, uq->index, HPU_UQ_ERRORS) + uq->dropped;

	lockdep_assert_held(&hdev->uqs.lock);

	*completed = ci - errors;
	*failed = errors;
	*submitted = hpu_uq_rreg(hdev, uq->index, HPU_UQ_PI);
}

/* Usage of the bound queues, added to what INFO_STATS reports.  Inside drm_dev_enter(). */
void hpu_uq_stats(struct hpu_ctx *ctx, struct drm_hpu_stats *st)
{
	struct hpu_device *hdev = ctx->hdev;
	u64 submitted, completed, failed;
	u32 u;

	mutex_lock(&hdev->uqs.lock);
	for (u = 0; u < hdev->uqs.count; u++) {
		struct hpu_uq *uq = &hdev->uqs.q[u];

		if (!uq->ctx)
			continue;
		hpu_uq_count_locked(hdev, uq, &submitted, &completed, &failed);
		st->jobs_submitted += submitted;
		st->jobs_completed += completed;
		st->jobs_failed += failed;
		if (uq->ctx != ctx)
			continue;
		st->ctx_jobs_submitted += submitted;
		st->ctx_jobs_completed += completed;
		st->ctx_jobs_failed += failed;
	}
	mutex_unlock(&hdev->uqs.lock);
}

/* The binding ends: its counts move to the context's and the device's.  Lock held. */
static void hpu_uq_retire_counts_locked(struct hpu_device *hdev, struct hpu_uq *uq)
{
	u64 submitted, completed, failed;

	lockdep_assert_held(&hdev->uqs.lock);
	hpu_uq_count_locked(hdev, uq, &submitted, &completed, &failed);
	/* Ends first: a reader never sees more ended than submitted. */
	atomic64_add(completed, &hdev->stats.jobs_completed);
	atomic64_add(failed, &hdev->stats.jobs_failed);
	atomic64_add(completed, &uq->ctx->jobs_completed);
	atomic64_add(failed, &uq->ctx->jobs_failed);
	atomic64_add(submitted, &hdev->stats.jobs_submitted);
	atomic64_add(submitted, &uq->ctx->jobs_submitted);
}

/* A bound queue was stopped and disabled already (hpu_uq_stop_locked()). */
static bool hpu_uq_disabled(struct hpu_device *hdev, struct hpu_uq *uq)
{
	return !hpu_uq_rreg(hdev, uq->index, HPU_UQ_RING_SIZE);
}

/* A queue reset to idle: its counts retired, it takes no more jobs.  Lock held. */
static void hpu_uq_disable_locked(struct hpu_device *hdev, struct hpu_uq *uq)
{
	lockdep_assert_held(&hdev->uqs.lock);
	hpu_uq_retire_counts_locked(hdev, uq);
	/* Disabling zeroes the device's counts, so the binding's must go too. */
	uq->dropped = 0;
	hpu_uq_wreg(hdev, uq->index, HPU_UQ_RING_SIZE, 0);
	hpu_uq_wreg(hdev, uq->index, HPU_UQ_ARM, 0);
}

/*
 * Reset and disable a bound queue, unless a ban did already: false if the
 * engine does not let go of it (still enabled).  Lock held.
 */
static bool hpu_uq_halt_locked(struct hpu_device *hdev, struct hpu_uq *uq)
{
	lockdep_assert_held(&hdev->uqs.lock);
	if (hpu_uq_disabled(hdev, uq))
		return true;
	if (!hpu_uq_reset_hw_locked(hdev, uq))
		return false;
	hpu_uq_disable_locked(hdev, uq);
	return true;
}

static vm_fault_t hpu_uq_db_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct hpu_uq_db *db = to_hpu_uq_db(vma->vm_private_data);
	struct hpu_device *hdev = to_hpu_device(db->base.dev);
	vm_fault_t ret = VM_FAULT_SIGBUS;
	int idx;

	if (!drm_dev_enter(&hdev->drm, &idx))
		return VM_FAULT_SIGBUS;
	/*
	 * Under the lock: an unbind either sees this page inserted and zaps it,
	 * or we see it.  A doorbell is mappable from the start of its
	 * UQUEUE_CREATE, before it has a queue, and after a create that failed.
	 */
	mutex_lock(&hdev->uqs.lock);
	if (db->uq && db->uq->db == db && db->uq->live)
		ret = vmf_insert_pfn_prot(vma, vma->vm_start,
					  PHYS_PFN(hdev->uqs.db_base +
						   db->uq->index * HPU_UQ_DB_PAGE_SIZE),
					  pgprot_noncached(vma->vm_page_prot));
	mutex_unlock(&hdev->uqs.lock);
	drm_dev_exit(idx);
	return ret;
}

static const struct vm_operations_struct hpu_uq_db_vm_ops = {
	.fault = hpu_uq_db_fault,
	.open = drm_gem_vm_open,
	.close = drm_gem_vm_close,
};

static int hpu_uq_db_mmap(struct drm_gem_object *obj, struct vm_area_struct *vma)
{
	/* A private mapping of device registers cannot be copied on write. */
	if (!(vma->vm_flags & VM_SHARED) || vma->vm_end - vma->vm_start != PAGE_SIZE)
		return -EINVAL;
	hpu_compat_vm_flags_set(vma, VM_IO | VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP);
	return 0;
}

static void hpu_uq_db_free(struct drm_gem_object *obj)
{
	drm_gem_object_release(obj);
	kfree(to_hpu_uq_db(obj));
}

static const struct drm_gem_object_funcs hpu_uq_db_funcs = {
	.free = hpu_uq_db_free,
	.mmap = hpu_uq_db_mmap,
	.vm_ops = &hpu_uq_db_vm_ops,
};

static struct hpu_uq_db *hpu_uq_db_create(struct drm_device *drm, struct drm_file *file)
{
	struct hpu_uq_db *db;
	int ret;

	db = hpu_fault_alloc(sizeof(*db)) ? NULL : kzalloc(sizeof(*db), GFP_KERNEL);
	if (!db)
		return ERR_PTR(-ENOMEM);
	db->base.funcs = &hpu_uq_db_funcs;
	drm_gem_private_object_init(drm, &db->base, PAGE_SIZE);
	db->file = file;
	ret = drm_gem_create_mmap_offset(&db->base);
	if (ret)
		goto err_put;
	ret = drm_vma_node_allow(&db->base.vma_node, file);
	if (ret)
		goto err_put;
	return db;

err_put:
	drm_gem_object_put(&db->base);
	return ERR_PTR(ret);
}

/* Drop a doorbell object no queue holds, with its file's permission to map it. */
static void hpu_uq_db_put(struct hpu_uq_db *db)
{
	drm_vma_node_revoke(&db->base.vma_node, db->file);
	drm_gem_object_put(&db->base);
}

/*
 * Bind a free queue to @ctx; returns it, ERR_PTR(-EDQUOT) if @ctx holds its
 * share, or ERR_PTR(-ENOSPC) if none is free.  Inside drm_dev_enter().
 */
static struct hpu_uq *hpu_uq_bind(struct hpu_device *hdev, struct hpu_ctx *ctx,
				  struct hpu_uq_db *db, u64 ring_va, u32 ring_size)
{
	u32 u, held = 0, share = READ_ONCE(max_file_uqueues);
	struct hpu_uqs *uqs = &hdev->uqs;
	struct hpu_uq *uq = ERR_PTR(-ENOSPC);

	mutex_lock(&uqs->lock);
	for (u = 0; u < uqs->count; u++) {
		if (uqs->q[u].ctx == ctx)
			held++;
		else if (IS_ERR(uq) && !uqs->q[u].ctx && !uqs->q[u].broken)
			uq = &uqs->q[u];
	}
	if (share && held >= share)
		uq = ERR_PTR(-EDQUOT);
	/* Under the lock: a ban either sees the new queue and stops it, or is seen. */
	if (hpu_reset_banned(ctx))
		uq = ERR_PTR(-EIO);
	if (!IS_ERR(uq)) {
		u = uq->index;
		/* Free queues are disabled, so ASID may be written; RING_SIZE last enables. */
		hpu_uq_wreg(hdev, u, HPU_UQ_ASID, ctx->asid);
		hpu_uq_wreg(hdev, u, HPU_UQ_RING_LO, lower_32_bits(ring_va));
		hpu_uq_wreg(hdev, u, HPU_UQ_RING_HI, upper_32_bits(ring_va));
		hpu_uq_wreg(hdev, u, HPU_UQ_RING_SIZE, ring_size);
		WRITE_ONCE(uq->ctx, ctx);
		uq->db = db;
		uq->gen++;
		uq->dropped = 0;
		uq->watch_busy = false;
		uq->stopped = false;
		db->uq = uq;
		uq->live = true;
	}
	mutex_unlock(&uqs->lock);
	return uq;
}

/*
 * Undo hpu_uq_bind() for a queue whose db the caller took out of live:
 * no new mapping of the doorbell, the old ones zapped, the queue reset and
 * disabled, and only then free for another file.  A queue the reset did
 * not stop is retired instead, holding the context's memory: the caller
 * waits for its release before that memory may go.
 */
static void hpu_uq_unbind(struct hpu_device *hdev, struct hpu_uq *uq)
{
	struct hpu_uq_db *db = uq->db;
	bool idle = true;
	int idx;

	drm_vma_node_unmap(&db->base.vma_node, hdev->drm.anon_inode->i_mapping);
	mutex_lock(&hdev->uqs.lock);
	if (drm_dev_enter(&hdev->drm, &idx)) {
		idle = hpu_uq_halt_locked(hdev, uq);
		if (idle) {
			hpu_uq_wreg(hdev, uq->index, HPU_UQ_ASID, 0);
		} else {
			dev_err(hpu_dev(hdev), "user queue %u does not stop: retired\n", uq->index);
			uq->held = uq->ctx;
		}
		drm_dev_exit(idx);
	}
	uq->broken = !idle;
	WRITE_ONCE(uq->ctx, NULL);
	uq->db = NULL;
	mutex_unlock(&hdev->uqs.lock);
	wake_up_all(&uq->wq);
	hpu_uq_db_put(db);
}

/* Take @ctx's queue @id out of live for an unbind; NULL if it is not @ctx's. */
static struct hpu_uq *hpu_uq_claim(struct hpu_device *hdev, struct hpu_ctx *ctx, u32 id)
{
	struct hpu_uq *uq = NULL;

	mutex_lock(&hdev->uqs.lock);
	if (id < hdev->uqs.count && hdev->uqs.q[id].ctx == ctx && hdev->uqs.q[id].live) {
		uq = &hdev->uqs.q[id];
		WRITE_ONCE(uq->live, false);
	}
	mutex_unlock(&hdev->uqs.lock);
	return uq;
}

/* Lockless, for a wait condition: an unbind wakes the sleepers once it is done. */
static bool hpu_uq_owned(struct hpu_uq *uq, struct hpu_ctx *ctx)
{
	return READ_ONCE(uq->ctx) == ctx && READ_ONCE(uq->live);
}

/*
 * @uq's file is banned: its jobs are dropped (the one the engine is in
 * aborted) and it is disabled, so that the device ignores its doorbell;
 * UQUEUE_WAIT on it fails from now on.  A queue whose engine does not let
 * go is disabled after the device reset that this asks for
 * (hpu_uq_restart_locked()).  Lock held, inside drm_dev_enter().
 */
static void hpu_uq_stop_locked(struct hpu_device *hdev, struct hpu_uq *uq)
{
	lockdep_assert_held(&hdev->uqs.lock);
	WRITE_ONCE(uq->stopped, true);
	wake_up_all(&uq->wq);
	hpu_uq_halt_locked(hdev, uq);
}

/* @ctx was banned (hpu_reset.c): stop its queues.  Lock held, inside drm_dev_enter(). */
void hpu_uq_ban_locked(struct hpu_ctx *ctx)
{
	struct hpu_device *hdev = ctx->hdev;
	u32 u;

	lockdep_assert_held(&hdev->uqs.lock);
	for (u = 0; u < hdev->uqs.count; u++) {
		struct hpu_uq *uq = &hdev->uqs.q[u];

		/* One that is not live is being unbound. */
		if (uq->ctx == ctx && uq->live && !uq->stopped) {
			dev_info(hpu_dev(hdev), "user queue %u of banned context %u: stopped\n",
				 u, ctx->asid);
			hpu_uq_stop_locked(hdev, uq);
		}
	}
}

/*
 * At close, before the context's memory goes: unbind its queues, then wait,
 * unkillably, for every queue retired holding its memory, those a killed
 * UQUEUE_DESTROY left too.
 */
void hpu_uq_ctx_release(struct hpu_ctx *ctx, struct drm_file *file)
{
	struct hpu_device *hdev = ctx->hdev;
	struct hpu_uq *uq;
	u32 u;

	for (u = 0; u < hdev->uqs.count; u++) {
		uq = hpu_uq_claim(hdev, ctx, u);
		if (uq)
			hpu_uq_unbind(hdev, uq);
	}
	if (hdev->uqs.count)
		hpu_uq_wait_released(hdev, ctx, GENMASK(hdev->uqs.count - 1, 0),
				     TASK_UNINTERRUPTIBLE);
}

void hpu_uq_mark(struct hpu_ctx *ctx, struct hpu_uq_marks *marks)
{
	struct hpu_device *hdev = ctx->hdev;
	struct hpu_uqs *uqs = &hdev->uqs;
	int idx;
	u32 u;

	marks->mask = 0;
	if (!drm_dev_enter(&hdev->drm, &idx))
		return;
	mutex_lock(&uqs->lock);
	for (u = 0; u < uqs->count; u++) {
		/* A retired queue's job may still use the range: until CI passes it too. */
		if (uqs->q[u].ctx != ctx && uqs->q[u].held != ctx)
			continue;
		marks->mask |= BIT(u);
		marks->gen[u] = uqs->q[u].gen;
		marks->pi[u] = hpu_uq_rreg(hdev, u, HPU_UQ_PI);
	}
	mutex_unlock(&uqs->lock);
	drm_dev_exit(idx);
}

/* Every job the marks cover has ended (clearing the queues found done). */
bool hpu_uq_marks_passed(struct hpu_device *hdev, struct hpu_uq_marks *marks)
{
	struct hpu_uqs *uqs = &hdev->uqs;
	unsigned long mask = marks->mask;
	int idx;
	u32 u;

	if (!mask)
		return true;
	/* A device gone has been reset: nothing runs. */
	if (!drm_dev_enter(&hdev->drm, &idx)) {
		marks->mask = 0;
		return true;
	}
	mutex_lock(&uqs->lock);
	for_each_set_bit(u, &mask, HPU_NUM_UQ) {
		/* A new binding means the old one was reset to idle. */
		if (uqs->q[u].gen != marks->gen[u] ||
		    (s32)(hpu_uq_rreg(hdev, u, HPU_UQ_CI) - marks->pi[u]) >= 0)
			marks->mask &= ~BIT(u);
	}
	mutex_unlock(&uqs->lock);
	drm_dev_exit(idx);
	return !marks->mask;
}

/* Misc interrupt, HPU_IRQ_UQ: wake the sleepers of the queues whose armed CI moved. */
void hpu_uq_irq(struct hpu_device *hdev)
{
	unsigned long pending = hpu_rreg(hdev, HPU_REG_UQ_IRQ_PENDING);
	u32 u;

	hpu_wreg(hdev, HPU_REG_UQ_IRQ_PENDING, pending);
	for_each_set_bit(u, &pending, HPU_NUM_UQ)
		wake_up_all(&hdev->uqs.q[u].wq);
}

static void hpu_uq_watchdog(struct work_struct *work)
{
	struct hpu_uqs *uqs = container_of(to_delayed_work(work), struct hpu_uqs, watchdog);
	struct hpu_device *hdev = container_of(uqs, struct hpu_device, uqs);
	unsigned long timeout = msecs_to_jiffies(hdev->job_timeout_ms);
	bool bound = false;
	int idx;
	u32 u;

	if (!drm_dev_enter(&hdev->drm, &idx))
		return;
	mutex_lock(&uqs->lock);
	for (u = 0; u < uqs->count; u++) {
		struct hpu_uq *uq = &uqs->q[u];
		u32 ci;

		if (!uq->live || uq->stopped)
			continue;
		bound = true;
		ci = hpu_uq_rreg(hdev, u, HPU_UQ_CI);
		if (ci == hpu_uq_rreg(hdev, u, HPU_UQ_PI)) {
			uq->watch_busy = false;
		} else if (!uq->watch_busy || ci != uq->watch_ci) {
			/* Work came, or moved, since the last look: time it from now. */
			uq->watch_busy = true;
			uq->watch_ci = ci;
			uq->watch_since = jiffies;
		} else if (time_after(jiffies, uq->watch_since + timeout +
				      usecs_to_jiffies(hpu_uq_rreg(hdev, u, HPU_UQ_DEFERRED_US)))) {
			dev_warn(hpu_dev(hdev),
				 "user queue %u (asid %u): no job ended in %u ms: resetting it\n",
				 u, uq->ctx->asid, hdev->job_timeout_ms);
			hpu_reset_count_queue(hdev, "user queue");
			if (!hpu_uq_reset_hw_locked(hdev, uq))
				dev_err(hpu_dev(hdev), "user queue %u does not stop\n", u);
			uq->watch_since = jiffies;
			if (hpu_reset_guilty(uq->ctx))
				hpu_reset_ban_jobs_locked(uq->ctx);
		}
	}
	mutex_unlock(&uqs->lock);
	drm_dev_exit(idx);
	if (bound)
		schedule_delayed_work(&uqs->watchdog, uqs->period);
}

/*
 * After a device reset, done or failed (reset locks held): the queues
 * stood still through it, which the watchdog must not count against their
 * jobs.
 */
void hpu_uq_rewatch_locked(struct hpu_device *hdev)
{
	u32 u;

	lockdep_assert_held(&hdev->uqs.lock);
	for (u = 0; u < hdev->uqs.count; u++)
		hdev->uqs.q[u].watch_busy = false;
}

/*
 * A device reset is done (reset locks held): a banned file's queue that
 * its engine kept from being disabled is, now that the reset let it go.
 */
void hpu_uq_restart_locked(struct hpu_device *hdev)
{
	u32 u;

	lockdep_assert_held(&hdev->uqs.lock);
	for (u = 0; u < hdev->uqs.count; u++) {
		struct hpu_uq *uq = &hdev->uqs.q[u];

		if (uq->ctx && uq->stopped)
			hpu_uq_halt_locked(hdev, uq);
	}
}

static void hpu_uqs_release(struct drm_device *drm, void *arg)
{
	struct hpu_device *hdev = arg;

	cancel_delayed_work_sync(&hdev->uqs.watchdog);
	mutex_destroy(&hdev->uqs.lock);
}

/* After the firmware booted: how many queues the device has, and where their doorbells are. */
int hpu_uqs_init(struct hpu_device *hdev)
{
	struct hpu_uqs *uqs = &hdev->uqs;
	struct pci_dev *pdev = hdev->pdev;
	u32 u, count = min_t(u32, hpu_rreg(hdev, HPU_REG_NUM_UQ), HPU_NUM_UQ);

	mutex_init(&uqs->lock);
	INIT_DELAYED_WORK(&uqs->watchdog, hpu_uq_watchdog);
	uqs->period = max(msecs_to_jiffies(hdev->job_timeout_ms) / 2, 1ul);
	for (u = 0; u < HPU_NUM_UQ; u++) {
		uqs->q[u].index = u;
		init_waitqueue_head(&uqs->q[u].wq);
	}
	/* Each doorbell is a CPU page of its own, or a process could ring another's. */
	if (PAGE_SIZE != HPU_UQ_DB_PAGE_SIZE ||
	    !(pci_resource_flags(pdev, HPU_BAR_UQ_DOORBELL) & IORESOURCE_MEM) ||
	    pci_resource_len(pdev, HPU_BAR_UQ_DOORBELL) < (u64)count * HPU_UQ_DB_PAGE_SIZE)
		count = 0;
	uqs->count = count;
	uqs->db_base = pci_resource_start(pdev, HPU_BAR_UQ_DOORBELL);
	hdev->info.num_user_queues = count;
	if (count)
		hpu_irq_enable(hdev, HPU_IRQ_UQ);
	return drmm_add_action_or_reset(&hdev->drm, hpu_uqs_release, hdev);
}

/* At unbind, after drm_dev_unplug(): sleepers see the device gone. */
void hpu_uqs_halt(struct hpu_device *hdev)
{
	u32 u;

	hpu_irq_disable(hdev, HPU_IRQ_UQ);
	for (u = 0; u < hdev->uqs.count; u++)
		wake_up_all(&hdev->uqs.q[u].wq);
}

int hpu_ioctl_uqueue_create(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct hpu_device *hdev = to_hpu_device(drm);
	struct drm_hpu_uqueue_create *args = data;
	u64 bytes = (u64)args->ring_size * sizeof(struct hpu_uq_desc);
	struct hpu_uq_db *db;
	struct hpu_uq *uq;
	int idx;

	if (args->flags || args->pad)
		return -EINVAL;
	if (args->ring_size < DRM_HPU_UQUEUE_RING_MIN || args->ring_size > DRM_HPU_UQUEUE_RING_MAX ||
	    !is_power_of_2(args->ring_size))
		return -EINVAL;
	if (!IS_ALIGNED(args->ring_va, sizeof(struct hpu_uq_desc)) ||
	    args->ring_va + bytes > BIT_ULL(HPU_MMU_VA_BITS) || args->ring_va + bytes < args->ring_va)
		return -EINVAL;
	if (!hdev->uqs.count)
		return -EOPNOTSUPP;
	if (hpu_device_malfunction(hdev) || hpu_reset_banned(file->driver_priv))
		return -EIO;

	db = hpu_uq_db_create(drm, file);
	if (IS_ERR(db))
		return PTR_ERR(db);
	if (!drm_dev_enter(drm, &idx)) {
		hpu_uq_db_put(db);
		return -ENODEV;
	}
	uq = hpu_uq_bind(hdev, file->driver_priv, db, args->ring_va, args->ring_size);
	drm_dev_exit(idx);
	if (IS_ERR(uq)) {
		hpu_uq_db_put(db);
		return PTR_ERR(uq);
	}
	schedule_delayed_work(&hdev->uqs.watchdog, hdev->uqs.period);
	args->id = uq->index;
	args->doorbell_offset = drm_vma_node_offset_addr(&db->base.vma_node);
	return 0;
}

int hpu_ioctl_uqueue_destroy(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct hpu_device *hdev = to_hpu_device(drm);
	struct drm_hpu_uqueue_destroy *args = data;
	struct hpu_ctx *ctx = file->driver_priv;
	struct hpu_uq *uq;

	if (args->pad)
		return -EINVAL;
	uq = hpu_uq_claim(hdev, ctx, args->id);
	if (!uq)
		return -ENOENT;
	hpu_uq_unbind(hdev, uq);
	/* A kill ends the wait; the queue still holds the memory, which the close waits for. */
	return hpu_uq_wait_released(hdev, ctx, BIT(uq->index), TASK_KILLABLE);
}

/*
 * CI has reached @target, the queue left @ctx, or the device is gone
 * (-ENODEV in *ret).  Arms the queue's interrupt when it says no.
 */
static bool hpu_uq_wait_done(struct hpu_device *hdev, struct hpu_uq *uq, struct hpu_ctx *ctx,
			     u32 target, u32 *ci, int *ret)
{
	int idx;

	if (!drm_dev_enter(&hdev->drm, &idx)) {
		*ret = -ENODEV;
		return true;
	}
	if (!hpu_uq_owned(uq, ctx)) {
		*ret = -ENOENT;
	} else if (READ_ONCE(uq->stopped)) {
		*ret = -EIO;
	} else {
		*ci = hpu_uq_rreg(hdev, uq->index, HPU_UQ_CI);
		if ((s32)(*ci - target) < 0) {
			hpu_uq_wreg(hdev, uq->index, HPU_UQ_ARM, HPU_UQ_ARMED);
			/* CI may have moved before the arm took: look again. */
			*ci = hpu_uq_rreg(hdev, uq->index, HPU_UQ_CI);
		}
	}
	drm_dev_exit(idx);
	return *ret || (s32)(*ci - target) >= 0;
}

int hpu_ioctl_uqueue_wait(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct hpu_device *hdev = to_hpu_device(drm);
	struct drm_hpu_uqueue_wait *args = data;
	struct hpu_ctx *ctx = file->driver_priv;
	long timeout, slice, left;
	struct hpu_uq *uq;
	u32 ci = 0;
	int ret = 0;

	if (args->flags || args->pad)
		return -EINVAL;
	if (args->id >= hdev->uqs.count)
		return -ENOENT;
	uq = &hdev->uqs.q[args->id];
	timeout = args->timeout_ns < 0 ? MAX_SCHEDULE_TIMEOUT :
					 (long)min_t(u64, nsecs_to_jiffies64(args->timeout_ns),
						     MAX_SCHEDULE_TIMEOUT - 1);
	if (hpu_uq_wait_done(hdev, uq, ctx, args->ci, &ci, &ret))
		goto out;
	if (!timeout)
		return -ETIME;
	/*
	 * Sleeps outside drm_dev_enter(): an unbind must not wait for a
	 * sleeper.  In slices of a watchdog period, looking at CI after each:
	 * a lost interrupt costs at most one.  Interruptible, so killable.
	 */
	for (;;) {
		slice = min(timeout, (long)hdev->uqs.period);
		left = wait_event_interruptible_timeout(uq->wq,
							hpu_uq_wait_done(hdev, uq, ctx, args->ci,
									 &ci, &ret),
							slice);
		if (left)
			break;
		if (timeout != MAX_SCHEDULE_TIMEOUT) {
			timeout -= slice;
			if (!timeout)
				return -ETIME;
		}
	}
	if (left < 0)
		return left;
out:
	if (ret)
		return ret;
	args->ci = ci;
	return 0;
}
