/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hpu reset ladder: queue, engine and device resets, their counts and
 * causes, the firmware heartbeat and the ban of contexts that cause resets.
 */
#ifndef HPU_RESET_H
#define HPU_RESET_H

#include <linux/atomic.h>
#include <linux/mutex.h>
#include <linux/rwsem.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/workqueue.h>
#include <drm/hpu_accel.h>

struct hpu_ctx;
struct hpu_device;
struct hpu_queue;

struct hpu_reset {
	/*
	 * Held for reading by each kernel queue's recovery (the scheduler's
	 * timeout work) and by the heartbeat's collection, for writing by a
	 * device reset: queues reset each other freely, a device reset waits
	 * for them and they for it.  Outermost of the driver's locks but
	 * submit_lock and vm.lock, which never wait for it.
	 */
	struct rw_semaphore sem;
	/* The device reset (hpu_reset_device_schedule()). */
	struct work_struct work;
	/* Protects @pending_cause, the cause of the device reset scheduled. */
	spinlock_t lock;
	enum drm_hpu_reset_cause pending_cause;

	atomic_t queue_resets;
	atomic_t engine_resets;
	atomic_t device_resets;
	enum drm_hpu_reset_cause last_cause;	/* WRITE_ONCE()/READ_ONCE() */

	/* The firmware heartbeat and the collection of lost interrupts' work. */
	struct delayed_work heartbeat;
	u32 hb_last;			/* HPU_REG_FW_HEARTBEAT at the last look */
	unsigned int hb_still;		/* looks it has not moved */

	/* Orders the select-then-access sequences on HPU_REG_FI_* (hpu_inject.c). A leaf. */
	struct mutex fi_lock;
};

int hpu_reset_init(struct hpu_device *hdev);
void hpu_reset_start(struct hpu_device *hdev);
void hpu_reset_stop(struct hpu_device *hdev);

const char *hpu_reset_cause_name(enum drm_hpu_reset_cause cause);
void hpu_reset_fill_info(struct hpu_device *hdev, struct drm_hpu_device_info *info);

void hpu_reset_count_queue(struct hpu_device *hdev, const char *what);
bool hpu_reset_engine(struct hpu_device *hdev, const char *what);
void hpu_reset_device_schedule(struct hpu_device *hdev, enum drm_hpu_reset_cause cause);
bool hpu_reset_guilty(struct hpu_ctx *ctx);
void hpu_reset_ban_jobs(struct hpu_ctx *ctx);
void hpu_reset_ban_jobs_locked(struct hpu_ctx *ctx);
bool hpu_reset_banned(const struct hpu_ctx *ctx);

#endif /* HPU_RESET_H */
