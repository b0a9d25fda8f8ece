/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hpu allocation-failure injection (hpu_fault.c): hpu_fault_alloc() at the
 * allocation and pinning sites of the ioctl paths says whether this one
 * fails as if memory were out.
 */
#ifndef HPU_FAULT_H
#define HPU_FAULT_H

#include <linux/types.h>

struct dentry;

bool hpu_fault_alloc(size_t size);
void hpu_fault_debugfs_init(struct dentry *root);

#endif /* HPU_FAULT_H */
