// SPDX-License-Identifier: GPL-2.0
/*
 * hpu reset ladder.
 *
 * Each step is taken only when the one before it failed:
 *
 *  1. a job runs past the timeout: its queue is reset (hpu_queue_recover(),
 *     or the user queues' watchdog in hpu_uq.c); the job fails with
 *     -ETIMEDOUT, the others go on;
 *  2. the engine stays in the aborted job (queue_reset_timeout_us): the
 *     engine is reset (HPU_REG_ENGINE_RESET), which aborts the job it is in
 *     even inside a packet that does not yield;
 *  3. the engine stays even then, the firmware's heartbeat stood still
 *     (heartbeat_misses looks of heartbeat_ms), or root asked through
 *     debugfs: the device is reset, warm (hpu_reset_device_locked()): its
 *     memory survives, so every innocent job goes on where it was, or runs
 *     again if it had not started;
 *  4. the device reset fails (the reset is ignored, the firmware does not
 *     boot again in HPU_RESET_BOOT_TRIES tries): the device is
 *     MALFUNCTION, as it was when a queue reset failed before 1.7.
 *
 * Steps 2 and 3 need register map 1.7; on an older device a failed queue
 * reset is a malfunction at once.  Every engine and device reset sends a
 * KOBJ_CHANGE uevent on the PCI device with HPU_RESET=engine|device and
 * HPU_RESET_CAUSE=<cause>; the counts and the last cause are in INFO,
 * sysfs and hpu-smi.
 *
 * A context whose jobs caused reset_ban_limit resets (timeouts of its jobs
 * on kernel queues, of its user queues) is banned, as amdgpu and i915 do
 * with guilty contexts, and runs nothing more: SUBMIT and UQUEUE_CREATE
 * fail with -EIO, its jobs waiting for a ring fail with -EIO, and so do its
 * jobs in a ring (the one at a ring's head is cancelled at once, those
 * behind it with it); its user queues are stopped (hpu_uq.c: reset and
 * disabled, their doorbells ignored, UQUEUE_WAIT -EIO) but stay its own
 * until it destroys them or closes.  Other files' queues go on.
 *
 * The device reset runs in a work, holding reset.sem for writing, so that
 * no kernel queue is being reset meanwhile, and uqs.lock, so that no user
 * queue is.  It sets status IN_RESET, holds back new pushes (jobs
 * submitted meanwhile wait, and run after it), resets the device warm,
 * writes the context table again, boots the firmware again, programs the
 * event queue, the interrupt masks and the kernel queues' rings again and
 * pushes their jobs again (hpu_queues_restart()).  The user queues the
 * device keeps, but a banned file's that the engine kept from stopping.
 *
 * The heartbeat work also ends the jobs the device completed and consumes
 * its events, so that a lost interrupt costs at most one heartbeat_ms.
 */
#include <linux/interrupt.h>
#include <linux/iopoll.h>
#include <linux/jiffies.h>
#include <linux/kobject.h>
#include <linux/moduleparam.h>
#include <drm/drm_drv.h>
#include <drm/drm_managed.h>

#include "hpu_ctx.h"
#include "hpu_device.h"
#include "hpu_eq.h"
#include "hpu_fw.h"
#include "hpu_fw_if.h"
#include "hpu_irq.h"
#include "hpu_mmu.h"
#include "hpu_queue.h"
#include "hpu_reset.h"
#include "hpu_sched.h"
#include "hpu_uq.h"

static unsigned int reset_ban_limit = 3;
module_param(reset_ban_limit, uint, 0644);
MODULE_PARM_DESC(reset_ban_limit,
		 "Resets an open file's jobs may cause before the file is banned (-EIO; 0: never)");

static unsigned int heartbeat_ms = 200;
module_param(heartbeat_ms, uint, 0644);
MODULE_PARM_DESC(heartbeat_ms,
		 "Period of the firmware heartbeat check, which also collects completions whose interrupt was lost, in ms (0: off)");

static unsigned int heartbeat_misses = 5;
module_param(heartbeat_misses, uint, 0644);
MODULE_PARM_DESC(heartbeat_misses,
		 "Heartbeat checks in a row the firmware's heartbeat may stand still before the device is reset");

/* Warm resets and boots a device reset tries before the device malfunctions. */
#define HPU_RESET_BOOT_TRIES 3
/* How long the device has to reach IDLE after a warm reset. */
#define HPU_RESET_IDLE_TIMEOUT_US (100 * 1000)

const char *hpu_reset_cause_name(enum drm_hpu_reset_cause cause)
{
	static const char * const names[] = {
		[DRM_HPU_RESET_CAUSE_NONE] = "none",
		[DRM_HPU_RESET_CAUSE_TIMEOUT] = "timeout",
		[DRM_HPU_RESET_CAUSE_HANG] = "hang",
		[DRM_HPU_RESET_CAUSE_HEARTBEAT] = "heartbeat",
		[DRM_HPU_RESET_CAUSE_REQUEST] = "request",
	};

	return (unsigned int)cause < ARRAY_SIZE(names) && names[cause] ? names[cause] : "unknown";
}

/* The fields of INFO the ladder owns. */
void hpu_reset_fill_info(struct hpu_device *hdev, struct drm_hpu_device_info *info)
{
	struct hpu_reset *reset = &hdev->reset;

	info->queue_resets = atomic_read(&reset->queue_resets);
	info->engine_resets = atomic_read(&reset->engine_resets);
	info->device_resets = atomic_read(&reset->device_resets);
	info->last_reset_cause = READ_ONCE(reset->last_cause);
}

/* Tell user space: KOBJ_CHANGE with HPU_RESET=@kind HPU_RESET_CAUSE=@cause. */
static void hpu_reset_uevent(struct hpu_device *hdev, const char *kind,
			     enum drm_hpu_reset_cause cause)
{
	char kind_env[32], cause_env[32];
	char *envp[] = { kind_env, cause_env, NULL };

	snprintf(kind_env, sizeof(kind_env), "HPU_RESET=%s", kind);
	snprintf(cause_env, sizeof(cause_env), "HPU_RESET_CAUSE=%s", hpu_reset_cause_name(cause));
	kobject_uevent_env(&hpu_dev(hdev)->kobj, KOBJ_CHANGE, envp);
}

/* A queue was reset for a timed-out job (@what names it in the log). */
void hpu_reset_count_queue(struct hpu_device *hdev, const char *what)
{
	atomic_inc(&hdev->reset.queue_resets);
	WRITE_ONCE(hdev->reset.last_cause, DRM_HPU_RESET_CAUSE_TIMEOUT);
	dev_dbg(hpu_dev(hdev), "%s reset: timeout\n", what);
}

/*
 * Step 2: the engine stays in the job of @what's reset.  Reset it, which
 * aborts that job; false if the device has no engine reset (before 1.7).
 * The caller looks again whether its reset ended.
 */
bool hpu_reset_engine(struct hpu_device *hdev, const char *what)
{
	if (hdev->regs_minor < 7)
		return false;
	dev_warn(hpu_dev(hdev), "%s: the engine stayed in the aborted job: resetting the engine\n",
		 what);
	hpu_wreg(hdev, HPU_REG_ENGINE_RESET, HPU_RESET_KEY);
	atomic_inc(&hdev->reset.engine_resets);
	WRITE_ONCE(hdev->reset.last_cause, DRM_HPU_RESET_CAUSE_HANG);
	hpu_reset_uevent(hdev, "engine", DRM_HPU_RESET_CAUSE_HANG);
	return true;
}

/*
 * Step 3, asynchronously: the device reset work runs soon with @cause (a
 * reset already scheduled keeps its own).  Any context: takes only
 * reset.lock.
 */
void hpu_reset_device_schedule(struct hpu_device *hdev, enum drm_hpu_reset_cause cause)
{
	struct hpu_reset *reset = &hdev->reset;
	unsigned long flags;

	spin_lock_irqsave(&reset->lock, flags);
	if (reset->pending_cause == DRM_HPU_RESET_CAUSE_NONE)
		reset->pending_cause = cause;
	spin_unlock_irqrestore(&reset->lock, flags);
	queue_work(system_unbound_wq, &reset->work);
}

/*
 * A job of @ctx caused a reset; at reset_ban_limit of them it is banned:
 * true if this one did it.  Takes no lock.
 */
bool hpu_reset_guilty(struct hpu_ctx *ctx)
{
	unsigned int limit = READ_ONCE(reset_ban_limit);

	/* Two queues' recoveries banning it at once only log and cancel twice. */
	if (ctx->kernel || !limit || atomic_inc_return(&ctx->resets) < limit ||
	    READ_ONCE(ctx->banned))
		return false;
	WRITE_ONCE(ctx->banned, true);
	dev_warn(hpu_dev(ctx->hdev), "context %u caused %u resets: banned\n", ctx->asid, limit);
	return true;
}

/*
 * @ctx was banned: its user queues stop, its jobs waiting for a ring fail
 * with -EIO, and its jobs at the head of a ring are cancelled (with -EIO)
 * with those behind them.  uqs.lock held (the queue locks nest inside it),
 * inside drm_dev_enter().
 */
void hpu_reset_ban_jobs_locked(struct hpu_ctx *ctx)
{
	unsigned int q;

	lockdep_assert_held(&ctx->hdev->uqs.lock);
	hpu_uq_ban_locked(ctx);
	hpu_sched_cancel_waiting(ctx, -EIO);
	for (q = 0; q < HPU_NUM_QUEUES; q++)
		hpu_queue_cancel_ctx(&ctx->hdev->queues[q], ctx);
}

/* The same, taking uqs.lock. */
void hpu_reset_ban_jobs(struct hpu_ctx *ctx)
{
	mutex_lock(&ctx->hdev->uqs.lock);
	hpu_reset_ban_jobs_locked(ctx);
	mutex_unlock(&ctx->hdev->uqs.lock);
}

bool hpu_reset_banned(const struct hpu_ctx *ctx)
{
	return READ_ONCE(ctx->banned);
}

/* One warm reset and boot; 0 once the firmware is READY again. */
static int hpu_reset_warm_boot(struct hpu_device *hdev)
{
	u32 status;

	hpu_wreg(hdev, HPU_REG_RESET, HPU_RESET_KEY_WARM);
	if (read_poll_timeout(hpu_rreg, status, status == HPU_FW_BOOT_IDLE, 100,
			      HPU_RESET_IDLE_TIMEOUT_US, false, hdev, HPU_REG_BOOT_STATUS)) {
		dev_err(hpu_dev(hdev), "device reset: the device ignored the warm reset\n");
		return -EIO;
	}
	hpu_queues_note_saved(hdev);
	/* Lets the engine drop the job it was in, if any; the device kept every other. */
	hpu_queues_quiesce(hdev);
	hpu_eq_restart(hdev);
	hpu_mmu_restore(hdev);
	return hpu_fw_boot(hdev, HPU_RESET_KEY_WARM);
}

/*
 * Step 3.  Reset locks held (reset.sem for writing, uqs.lock), inside
 * drm_dev_enter().  The jobs the reset stops that had started and that the
 * device did not save fail with -EIO, but a guilty job its queue's
 * recovery named, which fails with its own error.
 */
static void hpu_reset_device_locked(struct hpu_device *hdev, enum drm_hpu_reset_cause cause)
{
	struct hpu_reset *reset = &hdev->reset;
	unsigned int try;
	u32 irq_mask;
	int ret = -EIO;

	lockdep_assert_held_write(&reset->sem);
	lockdep_assert_held(&hdev->uqs.lock);

	if (cmpxchg(&hdev->info.status, DRM_HPU_STATUS_READY, DRM_HPU_STATUS_IN_RESET) !=
	    DRM_HPU_STATUS_READY) {
		/* It malfunctions: a queue that asked for the reset waits for its engine. */
		hpu_queues_wedge(hdev);
		return;
	}
	dev_err(hpu_dev(hdev), "device reset: %s\n", hpu_reset_cause_name(cause));
	atomic_inc(&reset->device_resets);
	WRITE_ONCE(reset->last_cause, cause);
	hpu_reset_uevent(hdev, "device", cause);

	hpu_queues_freeze(hdev);
	/*
	 * No misc interrupt handler may look at the event queue between the
	 * reset, which empties it, and its programming again; the failures
	 * the device reported before it stops are the jobs' own.
	 */
	irq_mask = hpu_rreg(hdev, HPU_REG_IRQ_MASK);
	hpu_irq_disable(hdev, HPU_IRQ_ALL);
	synchronize_irq(pci_irq_vector(hdev->pdev, HPU_MSIX_VEC_MISC));
	hpu_eq_process(hdev);

	for (try = 1; try <= HPU_RESET_BOOT_TRIES && ret; try++) {
		ret = hpu_reset_warm_boot(hdev);
		if (ret)
			dev_warn(hpu_dev(hdev), "device reset: try %u of %u failed: %d\n", try,
				 HPU_RESET_BOOT_TRIES, ret);
	}
	hpu_irq_enable(hdev, ~irq_mask & HPU_IRQ_ALL);
	hpu_uq_rewatch_locked(hdev);
	if (ret) {
		hpu_device_set_malfunction(hdev, "a device reset failed");
		hpu_queues_wedge(hdev);
		return;
	}
	reset->hb_still = 0;
	reset->hb_last = hpu_rreg(hdev, HPU_REG_FW_HEARTBEAT);
	hpu_queues_restart(hdev);
	hpu_uq_restart_locked(hdev);
	cmpxchg(&hdev->info.status, DRM_HPU_STATUS_IN_RESET, DRM_HPU_STATUS_READY);
	dev_info(hpu_dev(hdev), "device reset: done\n");
}

static void hpu_reset_work(struct work_struct *work)
{
	struct hpu_reset *reset = container_of(work, struct hpu_reset, work);
	struct hpu_device *hdev = container_of(reset, struct hpu_device, reset);
	enum drm_hpu_reset_cause cause;
	int idx;

	spin_lock_irq(&reset->lock);
	cause = reset->pending_cause;
	reset->pending_cause = DRM_HPU_RESET_CAUSE_NONE;
	spin_unlock_irq(&reset->lock);
	if (cause == DRM_HPU_RESET_CAUSE_NONE || !drm_dev_enter(&hdev->drm, &idx))
		return;
	down_write(&reset->sem);
	mutex_lock(&hdev->uqs.lock);
	hpu_reset_device_locked(hdev, cause);
	mutex_unlock(&hdev->uqs.lock);
	up_write(&reset->sem);
	drm_dev_exit(idx);
}

/* Whether the firmware's heartbeat stood still for heartbeat_misses looks.  Reset sem held. */
static bool hpu_reset_heartbeat_lost(struct hpu_device *hdev)
{
	struct hpu_reset *reset = &hdev->reset;
	u32 beat;

	if (hdev->regs_minor < 7 || hpu_device_malfunction(hdev))
		return false;
	beat = hpu_rreg(hdev, HPU_REG_FW_HEARTBEAT);
	if (beat != reset->hb_last) {
		reset->hb_last = beat;
		reset->hb_still = 0;
		return false;
	}
	return ++reset->hb_still >= max(READ_ONCE(heartbeat_misses), 1u);
}

static void hpu_reset_heartbeat(struct work_struct *work)
{
	struct hpu_reset *reset = container_of(to_delayed_work(work), struct hpu_reset,
					       heartbeat);
	struct hpu_device *hdev = container_of(reset, struct hpu_device, reset);
	unsigned int period = READ_ONCE(heartbeat_ms);
	int idx;

	if (!drm_dev_enter(&hdev->drm, &idx))
		return;
	/* A device reset in progress: nothing to look at until it is done. */
	if (down_read_trylock(&reset->sem)) {
		hpu_eq_process(hdev);
		hpu_queues_collect(hdev);
		hpu_uq_irq(hdev);
		if (hpu_reset_heartbeat_lost(hdev)) {
			dev_err(hpu_dev(hdev), "the firmware's heartbeat stood still for %u ms\n",
				reset->hb_still * period);
			reset->hb_still = 0;
			hpu_reset_device_schedule(hdev, DRM_HPU_RESET_CAUSE_HEARTBEAT);
		}
		up_read(&reset->sem);
	}
	drm_dev_exit(idx);
	if (period)
		queue_delayed_work(system_wq, &reset->heartbeat, msecs_to_jiffies(period));
}

/* The device is published: start the heartbeat. */
void hpu_reset_start(struct hpu_device *hdev)
{
	unsigned int period = READ_ONCE(heartbeat_ms);

	if (hdev->regs_minor >= 7)
		hdev->reset.hb_last = hpu_rreg(hdev, HPU_REG_FW_HEARTBEAT);
	if (period)
		queue_delayed_work(system_wq, &hdev->reset.heartbeat, msecs_to_jiffies(period));
}

/* At unbind, after drm_dev_unplug(): neither work runs again. */
void hpu_reset_stop(struct hpu_device *hdev)
{
	cancel_delayed_work_sync(&hdev->reset.heartbeat);
	cancel_work_sync(&hdev->reset.work);
}

static void hpu_reset_release(struct drm_device *drm, void *arg)
{
	struct hpu_reset *reset = arg;

	mutex_destroy(&reset->fi_lock);
}

int hpu_reset_init(struct hpu_device *hdev)
{
	struct hpu_reset *reset = &hdev->reset;

	init_rwsem(&reset->sem);
	INIT_WORK(&reset->work, hpu_reset_work);
	spin_lock_init(&reset->lock);
	reset->pending_cause = DRM_HPU_RESET_CAUSE_NONE;
	atomic_set(&reset->queue_resets, 0);
	atomic_set(&reset->engine_resets, 0);
	atomic_set(&reset->device_resets, 0);
	reset->last_cause = DRM_HPU_RESET_CAUSE_NONE;
	INIT_DELAYED_WORK(&reset->heartbeat, hpu_reset_heartbeat);
	mutex_init(&reset->fi_lock);
	return drmm_add_action_or_reset(&hdev->drm, hpu_reset_release, reset);
}
