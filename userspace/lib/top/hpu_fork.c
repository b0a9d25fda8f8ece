/* SPDX-License-Identifier: MIT */
/*
 * What a fork()'s child keeps of libhpu.  A child is another process: it
 * must not use the parent's handles (the driver file, queues and memory
 * behind them are the parent's) and may open devices of its own.  The
 * process-wide state - metrics and the recompile table - is taken across
 * the fork so that the child's copy is consistent, and reset in the child.
 * Locks are taken in one order and released in the other.
 */
#include <pthread.h>

#include "../top/top.h"

static void hpu_fork_prepare(void)
{
	hpu_metrics_fork(HPU_FORK_PREPARE);
	hpu_recompile_fork(HPU_FORK_PREPARE);
}

static void hpu_fork_parent(void)
{
	hpu_recompile_fork(HPU_FORK_PARENT);
	hpu_metrics_fork(HPU_FORK_PARENT);
}

static void hpu_fork_child(void)
{
	hpu_recompile_fork(HPU_FORK_CHILD);
	hpu_metrics_fork(HPU_FORK_CHILD);
}

__attribute__((constructor)) static void hpu_fork_at_load(void)
{
	pthread_atfork(hpu_fork_prepare, hpu_fork_parent, hpu_fork_child);
}
