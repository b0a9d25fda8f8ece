// SPDX-License-Identifier: GPL-2.0
/*
 * hpu limits: bounded shares of the device's memory-side resources.
 *
 * A file (a context) may hold at most max_file_hbm_mb of HBM and
 * max_file_pt_pages page-table pages; a user (the opener's real uid) may
 * have at most max_user_files files open, max_user_pt_pages table pages and
 * max_user_hbm_pct percent of the buffer HBM over all of them, so that no
 * one user takes every ASID, every table page of the MMU region or all
 * HBM.  A charge over a share fails with -EDQUOT; a device that is itself
 * out of a resource still answers -ENOMEM (HBM, table pages) or -ENOSPC
 * (ASIDs).  The parameters may change at any time: a new value applies to
 * later charges, what is held stays.  0 means no bound but the device's own
 * size.
 *
 * Every charge is returned by the path that frees what it paid for
 * (hpu_bo_free(), hpu_pt_free(), the context's destruction), so the
 * counters in debugfs "usage" are back at zero once every file is closed
 * and its work has ended.  A user's struct lives as long as any of its
 * contexts, and each buffer holds its context: a buffer freed after its
 * file closed still returns its charge to a live user.
 */
#include <linux/cred.h>
#include <linux/limits.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>
#include <drm/drm_managed.h>

#include "hpu_device.h"
#include "hpu_fault.h"
#include "hpu_gem.h"
#include "hpu_limits.h"

static unsigned int max_file_hbm_mb;
module_param(max_file_hbm_mb, uint, 0644);
MODULE_PARM_DESC(max_file_hbm_mb, "HBM one open file may hold, in MiB (0: all of it)");

/* Leaves a quarter of HBM to the other users, whatever one user holds. */
static unsigned int max_user_hbm_pct = 75;
module_param(max_user_hbm_pct, uint, 0644);
MODULE_PARM_DESC(max_user_hbm_pct,
		 "Percent of the buffer HBM all open files of one user may hold (0 or 100: all of it)");

/* 8 MiB of tables: 4 GiB mapped in 4 KiB pages, far more in 2 MiB ones. */
static unsigned int max_file_pt_pages = 2048;
module_param(max_file_pt_pages, uint, 0644);
MODULE_PARM_DESC(max_file_pt_pages,
		 "Device page-table pages (4 KiB) one open file may hold (0: no bound)");

/* Half of the MMU region's 16384 pages. */
static unsigned int max_user_pt_pages = 8192;
module_param(max_user_pt_pages, uint, 0644);
MODULE_PARM_DESC(max_user_pt_pages,
		 "Device page-table pages all open files of one user may hold (0: no bound)");

/* A quarter of the 1023 ASIDs. */
static unsigned int max_user_files = 256;
module_param(max_user_files, uint, 0644);
MODULE_PARM_DESC(max_user_files,
		 "Open files (contexts, ASIDs) one user may have on a device (0: no bound)");

static u64 hpu_limit(unsigned int param, u64 unit)
{
	return param ? (u64)param * unit : U64_MAX;
}

/* drm release: every file, and so every user, is gone. */
static void hpu_usage_fini(struct drm_device *drm, void *arg)
{
	struct hpu_usage *usage = arg;

	WARN_ON(!xa_empty(&usage->users));
	xa_destroy(&usage->users);
	mutex_destroy(&usage->lock);
}

int hpu_usage_init(struct hpu_device *hdev)
{
	struct hpu_usage *usage = &hdev->usage;

	mutex_init(&usage->lock);
	xa_init(&usage->users);
	atomic64_set(&usage->tables, 0);
	atomic64_set(&usage->hbm, 0);
	atomic64_set(&usage->host_pinned, 0);
	return drmm_add_action_or_reset(&hdev->drm, hpu_usage_fini, usage);
}

/* Users with contexts. */
unsigned long hpu_usage_users(struct hpu_device *hdev)
{
	struct hpu_user *user;
	unsigned long index, n = 0;

	mutex_lock(&hdev->usage.lock);
	xa_for_each(&hdev->usage.users, index, user)
		n++;
	mutex_unlock(&hdev->usage.lock);
	return n;
}

/*
 * Add @n to @used unless that would pass @max; false if it would.  Lock
 * free, so that concurrent charges of one share never overshoot it.
 */
static bool hpu_limit_take(atomic64_t *used, u64 n, u64 max)
{
	s64 old = atomic64_read(used);

	do {
		if (n > max || old > max - n)
			return false;
	} while (!atomic64_try_cmpxchg(used, &old, old + n));
	return true;
}

/*
 * Count one more open file, and context, of the caller's user: -EDQUOT past
 * max_user_files.
 */
struct hpu_user *hpu_user_get(struct hpu_device *hdev)
{
	struct hpu_usage *usage = &hdev->usage;
	kuid_t uid = current_uid();
	struct hpu_user *user;
	int ret;

	mutex_lock(&usage->lock);
	user = xa_load(&usage->users, __kuid_val(uid));
	if (!user) {
		user = hpu_fault_alloc(sizeof(*user)) ? NULL :
		       kzalloc(sizeof(*user), GFP_KERNEL_ACCOUNT);
		if (!user) {
			ret = -ENOMEM;
			goto err_unlock;
		}
		user->uid = uid;
		atomic64_set(&user->tables, 0);
		atomic64_set(&user->hbm, 0);
		ret = xa_err(xa_store(&usage->users, __kuid_val(uid), user, GFP_KERNEL));
		if (ret) {
			kfree(user);
			goto err_unlock;
		}
	} else if (user->files >= hpu_limit(READ_ONCE(max_user_files), 1)) {
		ret = -EDQUOT;
		goto err_unlock;
	}
	user->files++;
	user->refs++;
	mutex_unlock(&usage->lock);
	return user;

err_unlock:
	mutex_unlock(&usage->lock);
	return ERR_PTR(ret);
}

/* One open file of @user is closed; its context may live on (hpu_user_put()). */
void hpu_user_close(struct hpu_device *hdev, struct hpu_user *user)
{
	mutex_lock(&hdev->usage.lock);
	user->files--;
	mutex_unlock(&hdev->usage.lock);
}

/* One context of @user is gone, with everything charged to it. */
void hpu_user_put(struct hpu_device *hdev, struct hpu_user *user)
{
	struct hpu_usage *usage = &hdev->usage;

	mutex_lock(&usage->lock);
	if (!--user->refs) {
		WARN_ON(user->files || atomic64_read(&user->tables) ||
			atomic64_read(&user->hbm));
		xa_erase(&usage->users, __kuid_val(user->uid));
		kfree(user);
	}
	mutex_unlock(&usage->lock);
}

/* A user's HBM share in bytes. */
static u64 hpu_user_hbm_max(struct hpu_device *hdev)
{
	unsigned int pct = READ_ONCE(max_user_hbm_pct);

	if (!pct || pct >= 100)
		return U64_MAX;
	return div_u64(hpu_hbm_total(hdev) * pct, 100);
}

/*
 * Charge @bytes more HBM to a file's @file_used and to its @user: -EDQUOT
 * past max_file_hbm_mb or max_user_hbm_pct.
 */
int hpu_charge_hbm(struct hpu_device *hdev, struct hpu_user *user, atomic64_t *file_used,
		   u64 bytes)
{
	if (!hpu_limit_take(file_used, bytes, hpu_limit(READ_ONCE(max_file_hbm_mb), SZ_1M)))
		return -EDQUOT;
	if (!hpu_limit_take(&user->hbm, bytes, hpu_user_hbm_max(hdev))) {
		atomic64_sub(bytes, file_used);
		return -EDQUOT;
	}
	atomic64_add(bytes, &hdev->usage.hbm);
	return 0;
}

void hpu_uncharge_hbm(struct hpu_device *hdev, struct hpu_user *user, atomic64_t *file_used,
		      u64 bytes)
{
	atomic64_sub(bytes, file_used);
	atomic64_sub(bytes, &user->hbm);
	atomic64_sub(bytes, &hdev->usage.hbm);
}

/*
 * Charge one more table page to a file holding @file_tables of them and to
 * its @user: -EDQUOT past max_file_pt_pages or max_user_pt_pages.
 */
int hpu_user_charge_table(struct hpu_device *hdev, struct hpu_user *user,
			  unsigned int file_tables)
{
	if (file_tables >= hpu_limit(READ_ONCE(max_file_pt_pages), 1))
		return -EDQUOT;
	if (!hpu_limit_take(&user->tables, 1, hpu_limit(READ_ONCE(max_user_pt_pages), 1)))
		return -EDQUOT;
	atomic64_inc(&hdev->usage.tables);
	return 0;
}

void hpu_user_uncharge_table(struct hpu_device *hdev, struct hpu_user *user)
{
	atomic64_dec(&user->tables);
	atomic64_dec(&hdev->usage.tables);
}
