/* SPDX-License-Identifier: MIT */
/*
 * What the graph's sources (hpu_ir.c and the files it links) need of the
 * rest of libhpu, for host tests that run them without tensors or ops:
 * storages are the tests' own, and no op falls back, so there are no
 * per-op counters.
 */
#include "../../userspace/lib/top/top.h"

void hpu_storage_put(struct hpu_storage *st)
{
	(void)st;
}

const char *hpu_op_name(int index)
{
	(void)index;
	return NULL;
}

int hpu_op_index(const char *name)
{
	(void)name;
	return -1;
}
