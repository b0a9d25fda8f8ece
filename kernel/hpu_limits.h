/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hpu limits: each open file's and each user's share of the device's
 * memory-side resources (HBM, page-table pages, contexts and so ASIDs),
 * set by module parameters, and the device-wide counts of what open files
 * hold.
 */
#ifndef HPU_LIMITS_H
#define HPU_LIMITS_H

#include <linux/atomic.h>
#include <linux/mutex.h>
#include <linux/types.h>
#include <linux/uidgid.h>
#include <linux/xarray.h>

struct hpu_device;

/*
 * What one user (the opener's real uid) holds through all its files.  It
 * lives as long as any of its contexts (@refs), so past its files' close
 * while a buffer charged to it is still being freed.
 */
struct hpu_user {
	kuid_t uid;
	unsigned int files;		/* open files; under hpu_usage.lock */
	unsigned int refs;		/* contexts; under hpu_usage.lock */
	atomic64_t tables;		/* page-table pages of its files */
	atomic64_t hbm;			/* bytes of its files' buffers */
};

/* Device-wide: the users with contexts, and what their files hold. */
struct hpu_usage {
	struct mutex lock;		/* protects @users and each user's counts; a leaf */
	struct xarray users;		/* uid -> struct hpu_user */
	atomic64_t tables;		/* page-table pages of open files */
	atomic64_t hbm;			/* bytes of files' buffers */
	atomic64_t host_pinned;		/* bytes of host memory files have pinned */
};

int hpu_usage_init(struct hpu_device *hdev);
unsigned long hpu_usage_users(struct hpu_device *hdev);

struct hpu_user *hpu_user_get(struct hpu_device *hdev);
void hpu_user_close(struct hpu_device *hdev, struct hpu_user *user);
void hpu_user_put(struct hpu_device *hdev, struct hpu_user *user);

int hpu_charge_hbm(struct hpu_device *hdev, struct hpu_user *user, atomic64_t *file_used,
		   u64 bytes);
void hpu_uncharge_hbm(struct hpu_device *hdev, struct hpu_user *user, atomic64_t *file_used,
		      u64 bytes);
int hpu_user_charge_table(struct hpu_device *hdev, struct hpu_user *user,
			  unsigned int file_tables);
void hpu_user_uncharge_table(struct hpu_device *hdev, struct hpu_user *user);

#endif /* HPU_LIMITS_H */
