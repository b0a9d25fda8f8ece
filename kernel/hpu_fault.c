// SPDX-License-Identifier: GPL-2.0
/*
 * hpu allocation-failure injection: what the paths an open file reaches do
 * when the kernel has no memory for them.
 *
 * Debian's 6.1 kernel has no CONFIG_FAULT_INJECTION (no failslab, no
 * should_fail()), so the driver carries a switch of its own, with the knobs
 * of the kernel's fault-injection framework and their meaning
 * (Documentation/fault-injection/fault-injection.rst), in the module's
 * debugfs directory, /sys/kernel/debug/hpu/fail_alloc/:
 *
 *   probability  percent of the calls past the other knobs that fail (0: none)
 *   interval     only every interval-th call may fail (0 and 1: each)
 *   times        failures left to inject; -1: no bound.  Writing it starts
 *                a new run: interval counts from there, so that one task's
 *                run of calls fails the same calls again
 *   space        bytes of allocation let through before any may fail
 *   verbose      0: silent; 1: a line per failure (rate-limited); 2: and
 *                a stack trace
 *   task-filter  Y: only tasks of process group task-pgid fail
 *   task-pgid    the marked process group.  The framework marks tasks by
 *                /proc/<pid>/make-it-fail, which needs the kernel's option;
 *                a process group is as easy to set and, like that mark,
 *                passes to forked children
 *   injected     (read-only) failures injected so far
 *
 * The defaults inject nothing.  Each allocation and pin that an ioctl (or
 * an open of the node) makes asks hpu_fault_alloc() first, a one-line hook
 * at the call (x = hpu_fault_alloc(n) ? NULL : kmalloc(n, ...)), so that
 * the failure takes the path a real one takes and its unwinding runs.  The
 * driver's own work (the zeroing of freed HBM on a worker) asks too, but
 * with the task filter on it never fails.
 *
 * The knobs are plain words read without a lock, as the framework's: a
 * change applies to later calls.  The counters are atomic, so that several
 * tasks at once never take more than times failures.
 */
#include <linux/atomic.h>
#include <linux/debugfs.h>
#include <linux/kernel.h>
#include <linux/preempt.h>
#include <linux/printk.h>
#include <linux/random.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>

#include "hpu_fault.h"

static struct {
	unsigned long probability;
	unsigned long interval;
	atomic_t times;
	atomic_t space;
	unsigned long verbose;
	bool task_filter;
	u32 task_pgid;
	atomic_t count;		/* calls that reached the interval */
	atomic_t injected;
} hpu_fault = {
	.interval = 1,
	.times = ATOMIC_INIT(1),
	/* Not the framework's 2: a stack trace reads as a bug to the suites' log check. */
	.verbose = 1,
};

/* Whether the caller is one the task filter lets fail. */
static bool hpu_fault_task_ok(void)
{
	if (!in_task())
		return false;
	return !READ_ONCE(hpu_fault.task_filter) ||
	       task_pgrp_nr(current) == (pid_t)READ_ONCE(hpu_fault.task_pgid);
}

/*
 * True when this allocation of @size bytes (or pin of as many) is to fail:
 * the framework's should_fail(), in its order.
 */
bool hpu_fault_alloc(size_t size)
{
	unsigned long interval = READ_ONCE(hpu_fault.interval);
	unsigned long verbose;

	if (!READ_ONCE(hpu_fault.probability) || !atomic_read(&hpu_fault.times))
		return false;
	if (!hpu_fault_task_ok())
		return false;
	if (atomic_read(&hpu_fault.space) > (ssize_t)size) {
		atomic_sub(size, &hpu_fault.space);
		return false;
	}
	if (interval > 1 && atomic_inc_return(&hpu_fault.count) % interval)
		return false;
	if (READ_ONCE(hpu_fault.probability) <= get_random_u32() % 100)
		return false;
	if (atomic_read(&hpu_fault.times) != -1 &&
	    atomic_dec_if_positive(&hpu_fault.times) < 0)
		return false;

	atomic_inc(&hpu_fault.injected);
	verbose = READ_ONCE(hpu_fault.verbose);
	if (verbose)
		pr_notice_ratelimited("hpu: fail_alloc: failing an allocation of %zu bytes (%s, pid %d)\n",
				      size, current->comm, task_pid_nr(current));
	if (verbose > 1)
		dump_stack();
	return true;
}

static int hpu_fault_times_get(void *data, u64 *val)
{
	*val = atomic_read(&hpu_fault.times);
	return 0;
}

static int hpu_fault_times_set(void *data, u64 val)
{
	atomic_set(&hpu_fault.count, 0);
	atomic_set(&hpu_fault.times, (int)val);
	return 0;
}
DEFINE_DEBUGFS_ATTRIBUTE_SIGNED(hpu_fault_times_fops, hpu_fault_times_get, hpu_fault_times_set,
				"%lld\n");

/* The knobs, in the module's debugfs directory @root. */
void hpu_fault_debugfs_init(struct dentry *root)
{
	struct dentry *dir = debugfs_create_dir("fail_alloc", root);

	debugfs_create_ulong("probability", 0600, dir, &hpu_fault.probability);
	debugfs_create_ulong("interval", 0600, dir, &hpu_fault.interval);
	debugfs_create_file_unsafe("times", 0600, dir, NULL, &hpu_fault_times_fops);
	debugfs_create_atomic_t("space", 0600, dir, &hpu_fault.space);
	debugfs_create_ulong("verbose", 0600, dir, &hpu_fault.verbose);
	debugfs_create_bool("task-filter", 0600, dir, &hpu_fault.task_filter);
	debugfs_create_u32("task-pgid", 0600, dir, &hpu_fault.task_pgid);
	debugfs_create_atomic_t("injected", 0400, dir, &hpu_fault.injected);
}
