// SPDX-License-Identifier: GPL-2.0
/*
 * hpu hardware queues.
 *
 * Each queue has a ring of HPU_QUEUE_ENTRIES descriptors and as many
 * completion slots in coherent memory, and its own MSI-X vector (1 + q).
 * run_job writes a job's descriptor and rings the doorbell (PI).  The
 * kernel tail of every job writes the job's hardware sequence number to
 * slots[seq % entries] and raises the queue's vector, so:
 *
 *  - a job whose slot holds its number completed (all of its own packets
 *    ran before the tail);
 *  - a job the device has consumed (CI passed it) without writing its slot
 *    failed: the device skipped the rest of it, tail included, and reports
 *    why on the event queue (hpu_eq.c), which sets hw_error by tag.
 *
 * Jobs end strictly in ring order: a failed job whose event has not been
 * seen yet holds back the jobs behind it until the event interrupt comes.
 * Ending a job signals its fence and hands it to the scheduler
 * (hpu_sched.c) to be freed; the room it leaves in the ring goes to the
 * jobs waiting for it.
 *
 * When a job runs past the timeout (or belongs to a closing file), the
 * scheduler's timeout work resets the queue (Q_CTRL_RESET): the running
 * job is aborted and fails with -ETIMEDOUT (-ECANCELED when cancelled), the
 * device drops the jobs queued behind it, and they are pushed again, each
 * file's in its order, other files' first: a file whose jobs time out one
 * after the other delays other files' jobs by one timeout, not by all of
 * them.
 *
 * The job at the head of a ring holds back every job behind it, the
 * device's ring being FIFO, whether it runs long or is parked on a WAIT.
 * Once it has run preempt_ms of its own there while jobs of other files
 * wait behind it, the timeout work sets it aside: CTRL RESET|PREEMPT, after
 * which the device holds its progress and has dropped the jobs behind it
 * unstarted.  Those are pushed again, other files' first, then the set-aside
 * job with RESUME (it goes on exactly where it stopped) and the rest of its
 * file's, in order; its time at the head counts towards its timeout.  The
 * new head was pushed then, so a queue sets aside at most one job per
 * preempt_ms.  A set-aside job keeps its entry in the device's table
 * (HPU_Q_PREEMPT_SLOTS per queue; a plain reset leaves them) until its
 * RESUME is fetched, so every one is pushed again, even a closing file's.
 *
 * A reset whose job the engine stays in for queue_reset_timeout_us
 * (STATUS.ENGINE; a job the engine is not in ends when the engine gets
 * back to it, hpu_queue_reset_wait()) goes up the reset ladder
 * (hpu_reset.c): the engine is reset, and if the engine stays even then,
 * the device is, the queue holding its jobs meanwhile; a device reset
 * pushes them again (hpu_queues_restart()).  When the ladder ends in
 * MALFUNCTION (or the device has no engine reset), the engine may still
 * be inside a job that writes its memory, and the queue is wedged: its
 * jobs keep their buffers and mappings (their fences unsignalled) until
 * the engine lets go, which the timeout work looks for every
 * HPU_QUEUE_WEDGED_POLL_MS; then they fail with -EIO (the timed-out one
 * with -ETIMEDOUT) and so do the jobs waiting for the queue.
 *
 * A job whose timeout reset its queue makes its context guilty, and a
 * context guilty of reset_ban_limit resets is banned (hpu_reset.c): its
 * jobs that a reset drops fail with -EIO instead of going again.
 */
#include <linux/delay.h>
#include <linux/dma-fence.h>
#include <linux/dma-mapping.h>
#include <linux/interrupt.h>
#include <linux/iopoll.h>
#include <linux/jiffies.h>
#include <linux/lockdep.h>
#include <linux/moduleparam.h>
#include <linux/sched.h>
#include <linux/sched/clock.h>
#include <drm/drm_drv.h>

#include "hpu_ctx.h"
#include "hpu_device.h"
#include "hpu_eq.h"
#include "hpu_job.h"
#include "hpu_queue.h"
#include "hpu_reset.h"
#include "hpu_sched.h"

static unsigned int queue_reset_timeout_us = 1000 * 1000;
module_param(queue_reset_timeout_us, uint, 0644);
MODULE_PARM_DESC(queue_reset_timeout_us,
		 "Time the engine may stay in a job after its queue's reset before the device malfunctions, in us");

static unsigned int preempt_ms = 10;
module_param(preempt_ms, uint, 0644);
MODULE_PARM_DESC(preempt_ms,
		 "Time a job runs at the head of a ring while other files' jobs wait behind it before it is set aside for them, in ms (0: never)");

/* Why the timeout work resets a queue. */
enum hpu_queue_reset_why {
	HPU_RESET_TIMEOUT,	/* the head job ran past the timeout */
	HPU_RESET_CANCEL,	/* the head job's file closes or is banned */
	HPU_RESET_PREEMPT,	/* the head job had its turn and other files' jobs wait */
};

/* How often a wedged queue is looked at for its engine having let go. */
#define HPU_QUEUE_WEDGED_POLL_MS 100

/* How long a completed job's descriptor may wait for CI to pass it. */
#define HPU_QUEUE_CONSUME_TIMEOUT_US (100 * 1000)
/*
 * How long WAIT busy-polls before it sleeps (hpu_queue_poll()).  A short
 * job's interrupt reaches a sleeping waiter only through the CPU that
 * takes it, an IPI and the waiter's CPU leaving idle: in an emulated
 * machine each is a host thread wake-up, much longer than the job.
 * Bounded so that a long job costs the waiter's CPU little.
 */
#define HPU_QUEUE_POLL_NS (50 * NSEC_PER_USEC)

static u32 hpu_qrreg(struct hpu_queue *q, u32 reg)
{
	return hpu_rreg(q->hdev, HPU_REG_Q(q->index, reg));
}

/* CI, and the completion slots the device wrote before it moved it. */
static u32 hpu_queue_read_ci(struct hpu_queue *q)
{
	u32 ci = hpu_qrreg(q, HPU_Q_CI);

	rmb();
	return ci;
}

/* For kernel and user queues alike; at least 1 us, so that a reset always waits a little. */
unsigned long hpu_queue_reset_timeout_us(void)
{
	return max(READ_ONCE(queue_reset_timeout_us), 1u);
}

/*
 * Until @q is idle (not busy and, with @drained, CI == PI), or @timeout_us
 * (0: look once); true if it is.
 */
static bool hpu_queue_is_idle(struct hpu_queue *q, u32 status, bool drained)
{
	return !(status & HPU_Q_STATUS_BUSY) &&
	       (!drained || hpu_qrreg(q, HPU_Q_CI) == hpu_qrreg(q, HPU_Q_PI));
}

static bool hpu_queue_wait_idle(struct hpu_queue *q, bool drained, unsigned long timeout_us)
{
	u32 status;

	if (!timeout_us)
		return hpu_queue_is_idle(q, hpu_qrreg(q, HPU_Q_STATUS), drained);
	return !read_poll_timeout(hpu_qrreg, status, hpu_queue_is_idle(q, status, drained),
				  100, timeout_us, false, q, HPU_Q_STATUS);
}

static void hpu_qwreg(struct hpu_queue *q, u32 reg, u32 val)
{
	hpu_wreg(q->hdev, HPU_REG_Q(q->index, reg), val);
}

/* The tail of @job wrote its number: every packet of the job ran. */
static bool hpu_queue_slot_done(struct hpu_queue *q, const struct hpu_job *job)
{
	return READ_ONCE(q->slots[job->hw_seq % HPU_QUEUE_ENTRIES]) ==
	       job->hw_seq;
}

/* The device has moved past @job's descriptor. */
static bool hpu_queue_consumed(const struct hpu_job *job, u32 ci)
{
	return (s32)(ci - job->ring_pos) > 0;
}

/* @job, in the ring, leaves it (ended, or dropped by a reset). */
static void hpu_queue_unqueue_locked(struct hpu_queue *q, struct hpu_job *job)
{
	lockdep_assert_held(&q->lock);
	q->queued--;
	job->ctx->ring_jobs[q->index]--;
}

/* End @job, in the ring or waiting, with @result; signal @done after unlocking. */
void hpu_queue_end_locked(struct hpu_queue *q, struct hpu_job *job,
			  int result, struct list_head *done)
{
	lockdep_assert_held(&q->lock);

	if (job->state == HPU_JOB_QUEUED)
		hpu_queue_unqueue_locked(q, job);
	job->state = HPU_JOB_ENDED;
	job->result = result;
	list_move_tail(&job->link, done);
}

/* Signal, in order and without the queue lock, the jobs ended on @done. */
void hpu_queue_signal(struct list_head *done)
{
	struct hpu_job *job, *tmp;

	list_for_each_entry_safe(job, tmp, done, link) {
		list_del_init(&job->link);
		hpu_job_signal(job);
	}
}

/* preempt_ms in jiffies, at least 1; 0: jobs are never set aside. */
static unsigned long hpu_queue_preempt_slice(void)
{
	unsigned int ms = READ_ONCE(preempt_ms);

	return ms ? max(msecs_to_jiffies(ms), 1ul) : 0;
}

/*
 * @head, the oldest job in the ring, has a job of another file behind it:
 * the timeout work looks when @head may be set aside, not only when it
 * would time out.
 */
static void hpu_queue_watch_head_locked(struct hpu_queue *q, const struct hpu_job *head)
{
	unsigned long slice = hpu_queue_preempt_slice(), due = head->head_since + slice;

	lockdep_assert_held(&q->lock);
	if (slice)
		hpu_sched_timeout_in(q, time_before(jiffies, due) ? due - jiffies : 0);
}

/* Move the jobs that have ended, oldest first, to @done. */
static void hpu_queue_collect_locked(struct hpu_queue *q, struct list_head *done)
{
	struct hpu_job *job, *tmp;
	bool have_ci = false, moved = false;
	u32 ci = 0;

	lockdep_assert_held(&q->lock);

	if (q->resetting)
		return;

	list_for_each_entry_safe(job, tmp, &q->pending, link) {
		int result;

		if (hpu_queue_slot_done(q, job)) {
			result = 0;
		} else {
			if (!have_ci) {
				ci = hpu_queue_read_ci(q);
				have_ci = true;
			}
			if (!hpu_queue_consumed(job, ci))
				break;
			if (hpu_queue_slot_done(q, job))
				result = 0;
			else if (job->hw_error)
				result = job->hw_error;
			else
				break;	/* failed: its event is on the way */
		}
		hpu_queue_end_locked(q, job, result, done);
		moved = true;
	}

	if (moved && !list_empty(&q->pending)) {
		struct hpu_job *head = list_first_entry(&q->pending, struct hpu_job, link);

		head->head_since = jiffies;
		if (q->queued > head->ctx->ring_jobs[q->index])
			hpu_queue_watch_head_locked(q, head);
	}
}

static irqreturn_t hpu_queue_irq(int irq, void *arg)
{
	struct hpu_queue *q = arg;
	LIST_HEAD(done);
	int idx;

	if (!drm_dev_enter(&q->hdev->drm, &idx))
		return IRQ_HANDLED;
	spin_lock(&q->lock);
	hpu_queue_collect_locked(q, &done);
	/* Room in the ring for jobs that waited for it. */
	hpu_sched_run_locked(q, 0, &done);
	spin_unlock(&q->lock);
	drm_dev_exit(idx);
	hpu_queue_signal(&done);
	return IRQ_HANDLED;
}

/* End the jobs the device has completed, if the oldest one has. */
static void hpu_queue_poll_once(struct hpu_queue *q)
{
	struct hpu_job *head;
	unsigned long flags;
	LIST_HEAD(done);

	spin_lock_irqsave(&q->lock, flags);
	head = list_first_entry_or_null(&q->pending, struct hpu_job, link);
	/* Only the slot, memory, until then: the poll stays off the registers. */
	if (head && hpu_queue_slot_done(q, head))
		hpu_queue_collect_locked(q, &done);
	spin_unlock_irqrestore(&q->lock, flags);
	hpu_queue_signal(&done);
}

/*
 * WAIT for @job, before it sleeps: busy-poll for at most
 * HPU_QUEUE_POLL_NS, ending completed jobs without waiting for their
 * interrupt, if the job is in the ring.
 */
void hpu_queue_poll(struct hpu_job *job)
{
	u64 deadline = local_clock() + HPU_QUEUE_POLL_NS;
	struct hpu_queue *q = job->queue;
	int idx;

	/* A racy look: a job that is still waiting only costs the bounded poll. */
	if (READ_ONCE(job->state) != HPU_JOB_QUEUED)
		return;
	if (!drm_dev_enter(&q->hdev->drm, &idx))
		return;
	while (!dma_fence_is_signaled(&job->fence) && !need_resched() &&
	       local_clock() < deadline) {
		hpu_queue_poll_once(q);
		cpu_relax();
	}
	drm_dev_exit(idx);
}

/*
 * Put @job in the ring and ring the doorbell, inside drm_dev_enter().  The
 * scheduler keeps the ring from overflowing.
 */
void hpu_queue_push_locked(struct hpu_queue *q, struct hpu_job *job)
{
	struct hpu_queue_desc *desc;

	lockdep_assert_held(&q->lock);

	if (!job->hw_seq) {
		job->hw_seq = ++q->hw_seq;
		hpu_job_set_tail(job, q->slots_dma + (job->hw_seq % HPU_QUEUE_ENTRIES) *
				 sizeof(*q->slots), HPU_MSIX_VEC_MISC + 1 + q->index);
	}

	desc = &q->ring[q->pi % HPU_QUEUE_ENTRIES];
	desc->cb_addr = job->cb_dma;
	desc->cb_size = job->cb_size;
	desc->priv_offset = job->user_size;
	desc->asid = job->ctx->asid;
	desc->flags = job->set_aside ? HPU_QUEUE_DESC_RESUME : 0;
	desc->tag = job->hw_seq;

	job->ring_pos = q->pi++;
	job->ring_epoch = q->ring_epoch;
	job->state = HPU_JOB_QUEUED;
	job->hw_error = 0;
	if (list_empty(&q->pending)) {
		job->head_since = jiffies;
		hpu_sched_arm_timeout(q);
	} else {
		struct hpu_job *head = list_first_entry(&q->pending, struct hpu_job, link);

		if (head->ctx != job->ctx)
			hpu_queue_watch_head_locked(q, head);
	}
	list_add_tail(&job->link, &q->pending);
	q->queued++;
	job->ctx->ring_jobs[q->index]++;

	/* writel() orders the descriptor and command buffer before the doorbell. */
	hpu_qwreg(q, HPU_Q_PI, q->pi);
}

/* The job in @q's ring an event names by its tag, or NULL (it ended already). */
static struct hpu_job *hpu_queue_job_by_tag_locked(struct hpu_queue *q, u64 tag)
{
	struct hpu_job *job;

	lockdep_assert_held(&q->lock);
	list_for_each_entry(job, &q->pending, link)
		if (job->hw_seq == tag)
			return job;
	return NULL;
}

/* The event queue reports that the job tagged @tag failed with @error, at @addr. */
void hpu_queue_job_failed(struct hpu_queue *q, u64 tag, int error, u64 addr)
{
	struct hpu_job *job;
	unsigned long flags;
	LIST_HEAD(done);

	spin_lock_irqsave(&q->lock, flags);
	job = hpu_queue_job_by_tag_locked(q, tag);
	if (job && !job->hw_error) {
		job->hw_error = error;
		job->hw_error_addr = addr;
	}
	hpu_queue_collect_locked(q, &done);
	spin_unlock_irqrestore(&q->lock, flags);
	hpu_queue_signal(&done);
}

/*
 * The event queue reports that the device set the job tagged @tag aside
 * (a reset of @q with PREEMPT, in progress): it holds the job's progress.
 */
void hpu_queue_job_set_aside(struct hpu_queue *q, u64 tag)
{
	struct hpu_job *job;
	unsigned long flags;

	spin_lock_irqsave(&q->lock, flags);
	job = hpu_queue_job_by_tag_locked(q, tag);
	if (job)
		job->set_aside = true;
	spin_unlock_irqrestore(&q->lock, flags);
}

/* Events were dropped: jobs consumed without completing fail with -EIO. */
void hpu_queue_fail_lost(struct hpu_queue *q)
{
	struct hpu_job *job;
	unsigned long flags;
	LIST_HEAD(done);
	u32 ci;

	spin_lock_irqsave(&q->lock, flags);
	ci = hpu_queue_read_ci(q);
	list_for_each_entry(job, &q->pending, link) {
		if (!hpu_queue_consumed(job, ci))
			break;
		if (!hpu_queue_slot_done(q, job) && !job->hw_error)
			job->hw_error = -EIO;
	}
	hpu_queue_collect_locked(q, &done);
	spin_unlock_irqrestore(&q->lock, flags);
	hpu_queue_signal(&done);
}

/* A closing file's job runs on @q: have the timeout handler cancel it now. */
void hpu_queue_cancel_ctx(struct hpu_queue *q, const struct hpu_ctx *ctx)
{
	struct hpu_job *head;
	bool running;

	spin_lock_irq(&q->lock);
	head = list_first_entry_or_null(&q->pending, struct hpu_job, link);
	running = head && head->ctx == ctx;
	spin_unlock_irq(&q->lock);

	if (running)
		hpu_sched_timeout_in(q, 0);
}

/*
 * Until a queue's reset has ended (@ended(@arg, &status) says so, status
 * being the queue's STATUS); false if it did not in time.  Only time the
 * engine is in the queue's job (STATUS.ENGINE) counts against
 * queue_reset_timeout_us: a job that yielded or waits on a WAIT ends when
 * the engine gets back to it, after other queues' packets, each of which
 * its own job's timeout bounds; all in all the wait ends within twice the
 * job timeout and the reset timeout.  Sleeps.
 */
bool hpu_queue_reset_wait(struct hpu_device *hdev, bool (*ended)(void *arg, u32 *status),
			  void *arg)
{
	u64 limit_ns = (u64)hpu_queue_reset_timeout_us() * NSEC_PER_USEC, engine_ns = 0;
	u64 start = ktime_get_ns(), deadline = start + limit_ns +
			2ull * hdev->job_timeout_ms * NSEC_PER_MSEC, last = start, now;
	u32 status;

	for (;;) {
		if (ended(arg, &status))
			return true;
		now = ktime_get_ns();
		if (status & HPU_Q_STATUS_ENGINE)
			engine_ns += now - last;
		last = now;
		if (engine_ns > limit_ns || now > deadline)
			return false;
		usleep_range(100, 200);
	}
}

static bool hpu_queue_reset_ended(void *arg, u32 *status)
{
	struct hpu_queue *q = arg;

	*status = hpu_qrreg(q, HPU_Q_STATUS);
	return hpu_queue_is_idle(q, *status, true);
}

/*
 * Reset @q for @why (to set its job aside rather than abort it for
 * HPU_RESET_PREEMPT) and wait until the device has let go of its ring: 0.
 * A job that stays in the engine hangs, whatever the reset was for: the
 * queue reset counts as a fault's, and the engine is reset: -ETIMEDOUT if
 * that let go of the ring, -EIO if not.
 */
static int hpu_queue_reset(struct hpu_queue *q, enum hpu_queue_reset_why why)
{
	unsigned long timeout_us = hpu_queue_reset_timeout_us();

	hpu_qwreg(q, HPU_Q_CTRL,
		  HPU_Q_CTRL_RESET | (why == HPU_RESET_PREEMPT ? HPU_Q_CTRL_PREEMPT : 0));
	if (hpu_queue_reset_wait(q->hdev, hpu_queue_reset_ended, q))
		return 0;
	dev_err(hpu_dev(q->hdev), "queue %u: the engine stayed in its job %lu us after a reset\n",
		q->index, timeout_us);
	if (why != HPU_RESET_TIMEOUT)
		hpu_reset_count_queue(q->hdev, q->name);
	if (hpu_reset_engine(q->hdev, q->name) &&
	    hpu_queue_reset_wait(q->hdev, hpu_queue_reset_ended, q))
		return -ETIMEDOUT;
	return -EIO;
}

/*
 * How the job a reset was for ends, if it does: cancelled, or the device's
 * own failure (not the reset's ABORTED), else timed out, or -EIO for a job
 * that was only to be set aside.
 */
static int hpu_queue_bad_result(const struct hpu_job *bad, enum hpu_queue_reset_why why)
{
	int err = bad->hw_error;

	if (why == HPU_RESET_CANCEL)
		return hpu_reset_banned(bad->ctx) ? -EIO : -ECANCELED;
	if (err && err != -ECANCELED)
		return err;
	return why == HPU_RESET_TIMEOUT ? -ETIMEDOUT : -EIO;
}

/* How a job a reset dropped ends instead of going again: its file closes or is banned. */
static int hpu_queue_cancelled(const struct hpu_job *job)
{
	if (hpu_reset_banned(job->ctx))
		return -EIO;
	return READ_ONCE(job->ctx->closing) ? -ECANCELED : 0;
}

/* What a reset's rule makes of a job in the ring that did not complete. */
enum hpu_queue_fate {
	HPU_FATE_USUAL,		/* its error, if it failed; else cancelled with its file, or again */
	HPU_FATE_FAIL,		/* it fails with the rule's error */
	HPU_FATE_RESUME,	/* the device saved it: it goes again first, where it was */
};

/*
 * How a reset treats the job it stopped, the only way a queue's reset and
 * the device's differ: @fate says what becomes of @job (its error in *@err
 * for HPU_FATE_FAIL); a queue reset's @bad file's jobs go again last.
 */
struct hpu_queue_reset_rule {
	enum hpu_queue_fate (*fate)(const struct hpu_queue_reset_rule *rule, struct hpu_queue *q,
				    struct hpu_job *job, int *err);
	struct hpu_job *bad;		/* a queue reset's: the job it was for */
	enum hpu_queue_reset_why why;	/* and why */
};

/* A queue reset: the job it was for fails with its own error, unless only set aside. */
static enum hpu_queue_fate hpu_queue_reset_fate(const struct hpu_queue_reset_rule *rule,
						struct hpu_queue *q, struct hpu_job *job, int *err)
{
	if (job != rule->bad || (rule->why == HPU_RESET_PREEMPT && !job->hw_error))
		return HPU_FATE_USUAL;
	*err = hpu_queue_bad_result(job, rule->why);
	return HPU_FATE_FAIL;
}

/*
 * After a reset dropped @q's ring: its jobs end or go again.  A completed
 * job ends with 0, a job @rule fails with the rule's error, a failed one
 * with its own, a job of a closing or banned file is cancelled (but one
 * set aside, whose entry the device keeps); the others go again in ring
 * order, each file's in order, the one the device saved first and the jobs
 * of @rule's bad job's file last.  A job set aside before and dropped
 * unfetched goes again with RESUME.
 */
static void hpu_queue_sort_reset_locked(struct hpu_queue *q,
					const struct hpu_queue_reset_rule *rule,
					struct list_head *done)
{
	struct hpu_job *job, *tmp;
	LIST_HEAD(again);
	LIST_HEAD(last);

	lockdep_assert_held(&q->lock);

	list_for_each_entry_safe(job, tmp, &q->pending, link) {
		enum hpu_queue_fate fate;
		int err = job->hw_error;

		if (hpu_queue_slot_done(q, job)) {
			hpu_queue_end_locked(q, job, 0, done);
			continue;
		}
		fate = rule->fate(rule, q, job, &err);
		if (fate == HPU_FATE_USUAL && !err && !job->set_aside)
			err = hpu_queue_cancelled(job);
		if (fate != HPU_FATE_RESUME && err) {
			hpu_queue_end_locked(q, job, err, done);
			continue;
		}
		hpu_queue_unqueue_locked(q, job);
		if (fate == HPU_FATE_RESUME) {
			job->set_aside = true;
			list_move(&job->link, &again);
		} else {
			list_move_tail(&job->link,
				       rule->bad && job->ctx == rule->bad->ctx ? &last : &again);
		}
	}
	q->resetting = false;
	list_splice_tail(&last, &again);
	list_for_each_entry_safe(job, tmp, &again, link) {
		list_del(&job->link);
		hpu_queue_push_locked(q, job);
	}
}

/*
 * A wedged queue's engine let go: its jobs end (completed ones with 0), the
 * waiting ones with -EIO, as the device takes no new work.  Its jobs were
 * ahead of every waiting job of their files, so files' jobs still end in
 * order.  Returns how long until the next look (0: unwedged).
 */
static unsigned long hpu_queue_unwedge(struct hpu_queue *q)
{
	struct hpu_job *job, *tmp;
	LIST_HEAD(done);

	if (!hpu_queue_wait_idle(q, true, 0))
		return msecs_to_jiffies(HPU_QUEUE_WEDGED_POLL_MS);
	hpu_eq_process(q->hdev);

	spin_lock_irq(&q->lock);
	list_for_each_entry_safe(job, tmp, &q->pending, link)
		hpu_queue_end_locked(q, job, hpu_queue_slot_done(q, job) ? 0 :
					     job->hw_error ?: -EIO, &done);
	q->wedged = false;
	q->resetting = false;
	hpu_sched_run_locked(q, -EIO, &done);
	spin_unlock_irq(&q->lock);
	hpu_queue_signal(&done);
	dev_info(hpu_dev(q->hdev), "queue %u: the engine let go of its job\n", q->index);
	return 0;
}

/*
 * How long @head has been the oldest job in @q's ring, less the other
 * queues' slices it waited through: its own time there.
 */
static unsigned long hpu_queue_head_ran_locked(struct hpu_queue *q, const struct hpu_job *head)
{
	unsigned long at_head = jiffies - head->head_since,
		      deferred = usecs_to_jiffies(hpu_qrreg(q, HPU_Q_DEFERRED_US));

	lockdep_assert_held(&q->lock);
	return at_head > deferred ? at_head - deferred : 0;
}

/*
 * Whether @head has run past the timeout, charged for its own time, before
 * it was set aside too; else *@left is how long it has left.
 */
static bool hpu_queue_timed_out_locked(struct hpu_queue *q, const struct hpu_job *head,
				       unsigned long *left)
{
	unsigned long ran = hpu_queue_head_ran_locked(q, head),
		      budget = q->timeout > head->charged ? q->timeout - head->charged : 0;

	lockdep_assert_held(&q->lock);
	if (ran >= budget)
		return true;
	*left = max(budget - ran, 1ul);
	return false;
}

/* Whether another file than @ctx has a job in @q's ring or, the ring full, waits for it. */
static bool hpu_queue_others_wait_locked(struct hpu_queue *q, const struct hpu_ctx *ctx)
{
	struct hpu_job *job;

	lockdep_assert_held(&q->lock);
	if (q->queued > ctx->ring_jobs[q->index])
		return true;
	if (q->queued < HPU_QUEUE_ENTRIES - 1)
		return false;
	list_for_each_entry(job, &q->waiting, link)
		if (job->ctx != ctx && !atomic_read(&job->deps_left))
			return true;
	return false;
}

/*
 * Whether @head, the oldest job in @q's ring, should be set aside: it ran
 * preempt_ms of its own there while other files' jobs wait, it is still
 * the device's job at CI, and the device has an entry free for it.  Else
 * *@left is shortened to when to look again.
 */
static bool hpu_queue_should_preempt_locked(struct hpu_queue *q, const struct hpu_job *head,
					    unsigned long *left)
{
	unsigned long slice = hpu_queue_preempt_slice(), ran;

	lockdep_assert_held(&q->lock);
	if (!slice)
		return false;
	ran = hpu_queue_head_ran_locked(q, head);
	if (ran < slice) {
		*left = min(*left, slice - ran);
		return false;
	}
	/* Else a job of another file entering the ring has the work look again. */
	if (!hpu_queue_others_wait_locked(q, head->ctx))
		return false;
	if (hpu_queue_read_ci(q) == head->ring_pos && hpu_qrreg(q, HPU_Q_PREEMPT_FREE))
		return true;
	*left = min(*left, slice);
	return false;
}

/*
 * The scheduler's timeout work: if the oldest job in the ring has run
 * longer than the timeout, or belongs to a closing file, or is parked in
 * other files' way, reset the queue, fail that job (or take it off), end
 * those that ended and push the others again.  Returns how long until the
 * next look (0: nothing to check until a job enters an empty ring).
 */
unsigned long hpu_queue_recover(struct hpu_queue *q)
{
	struct hpu_queue_reset_rule rule = { .fate = hpu_queue_reset_fate };
	enum hpu_queue_reset_why why = HPU_RESET_TIMEOUT;
	unsigned long left = 0;
	struct hpu_job *bad;
	LIST_HEAD(done);
	int ret;
	u32 ci;

	/* Only this work sets and clears it. */
	if (q->wedged)
		return hpu_queue_unwedge(q);

	/* Events still in the ring name the real error of a failed job. */
	hpu_eq_process(q->hdev);
	spin_lock_irq(&q->lock);
	/* Only a device reset's wait leaves it set here: the device reset restarts the queue. */
	if (q->resetting) {
		spin_unlock_irq(&q->lock);
		return 0;
	}
	for (;;) {
		hpu_queue_collect_locked(q, &done);
		bad = list_first_entry_or_null(&q->pending, struct hpu_job, link);
		if (!bad)
			break;
		ci = hpu_queue_read_ci(q);
		if (!hpu_queue_consumed(bad, ci) || hpu_queue_slot_done(q, bad))
			break;
		/* Consumed without completing, and no event came for it. */
		bad->hw_error = -EIO;
	}
	if (bad && (READ_ONCE(bad->ctx->closing) || hpu_reset_banned(bad->ctx)))
		why = HPU_RESET_CANCEL;
	else if (bad && !hpu_queue_timed_out_locked(q, bad, &left) &&
		 hpu_queue_should_preempt_locked(q, bad, &left))
		why = HPU_RESET_PREEMPT;
	if (!bad || (left && why != HPU_RESET_PREEMPT)) {
		hpu_sched_run_locked(q, 0, &done);
		spin_unlock_irq(&q->lock);
		hpu_queue_signal(&done);
		return left;
	}
	if (why == HPU_RESET_PREEMPT)
		bad->charged += hpu_queue_head_ran_locked(q, bad);
	/* SUBMIT leaves the ring alone until the reset is done. */
	q->resetting = true;
	spin_unlock_irq(&q->lock);
	hpu_queue_signal(&done);

	if (why == HPU_RESET_TIMEOUT)
		dev_warn_ratelimited(hpu_dev(q->hdev),
				     "queue %u: job of context %u timed out after %u ms of its own, resetting the queue\n",
				     q->index, bad->ctx->asid, q->hdev->job_timeout_ms);
	else if (why == HPU_RESET_PREEMPT)
		dev_dbg(hpu_dev(q->hdev),
			"queue %u: job of context %u in other files' way, setting it aside\n",
			q->index, bad->ctx->asid);
	if (why == HPU_RESET_TIMEOUT)
		hpu_reset_count_queue(q->hdev, q->name);
	ret = hpu_queue_reset(q, why);
	if (ret && why == HPU_RESET_PREEMPT) {
		/* It did not yield to be set aside: it hangs, fails as timed out, and is guilty. */
		dev_warn(hpu_dev(q->hdev), "queue %u: job of context %u hangs\n", q->index,
			 bad->ctx->asid);
		why = HPU_RESET_TIMEOUT;
	}
	if (ret == -EIO) {
		bool ladder = q->hdev->regs_minor >= 7;

		/* Its ABORTED event may have come already, or come later: this error stays. */
		spin_lock_irq(&q->lock);
		bad->hw_error = hpu_queue_bad_result(bad, why);
		q->wedged = !ladder;
		spin_unlock_irq(&q->lock);
		if (why == HPU_RESET_TIMEOUT && hpu_reset_guilty(bad->ctx))
			hpu_reset_ban_jobs(bad->ctx);
		if (!ladder) {
			hpu_device_set_malfunction(q->hdev, "a queue reset failed");
			return msecs_to_jiffies(HPU_QUEUE_WEDGED_POLL_MS);
		}
		/* The queue stays resetting: the device reset pushes its jobs again. */
		hpu_reset_device_schedule(q->hdev, DRM_HPU_RESET_CAUSE_HANG);
		return 0;
	}
	/* Let the events of the reset (ABORTED, PREEMPTED) and of jobs before it land. */
	hpu_eq_process(q->hdev);
	/* Before its jobs the reset dropped end or go again: a ban fails them. */
	if (why == HPU_RESET_TIMEOUT && hpu_reset_guilty(bad->ctx))
		hpu_reset_ban_jobs(bad->ctx);

	rule.bad = bad;
	rule.why = why;
	spin_lock_irq(&q->lock);
	hpu_queue_sort_reset_locked(q, &rule, &done);
	hpu_sched_run_locked(q, 0, &done);
	spin_unlock_irq(&q->lock);
	hpu_queue_signal(&done);
	return 0;
}

/*
 * Before a job's command buffer is freed: a completed job's descriptor may
 * still be in the device's hands for the few instructions between its tail
 * and the CI update, unless a device reset dropped the ring since.
 */
void hpu_queue_wait_consumed(struct hpu_queue *q, struct hpu_job *job)
{
	u32 ci;
	int idx;

	if (!job->hw_seq || job->ring_epoch != READ_ONCE(q->ring_epoch) ||
	    !drm_dev_enter(&q->hdev->drm, &idx))
		return;
	if (read_poll_timeout(hpu_qrreg, ci, hpu_queue_consumed(job, ci), 20,
			      HPU_QUEUE_CONSUME_TIMEOUT_US, false, q, HPU_Q_CI))
		dev_warn_once(hpu_dev(q->hdev),
			      "queue %u: CI did not pass a completed job\n",
			      q->index);
	drm_dev_exit(idx);
}

/*
 * After a device reset: a job the engine was in reads busy until the
 * engine has let go of its memory.
 */
void hpu_queues_quiesce(struct hpu_device *hdev)
{
	unsigned int i;

	for (i = 0; i < HPU_NUM_QUEUES; i++) {
		struct hpu_queue *q = &hdev->queues[i];

		if (!q->hdev) /* probe failed before it was set up */
			continue;
		if (!hpu_queue_wait_idle(q, false, HPU_QUEUE_QUIESCE_TIMEOUT_US))
			dev_err(hpu_dev(hdev), "queue %u: still busy after a device reset\n", i);
	}
}

/* Collect what the device completed, as the queues' interrupts do (a lost one, hpu_reset.c). */
void hpu_queues_collect(struct hpu_device *hdev)
{
	unsigned int i;

	for (i = 0; i < HPU_NUM_QUEUES; i++) {
		struct hpu_queue *q = &hdev->queues[i];
		LIST_HEAD(done);

		spin_lock_irq(&q->lock);
		hpu_queue_collect_locked(q, &done);
		hpu_sched_run_locked(q, 0, &done);
		spin_unlock_irq(&q->lock);
		hpu_queue_signal(&done);
	}
}

/*
 * A device reset begins (hpu_reset.c): nothing is pushed and no job ends
 * until hpu_queues_restart(), or hpu_queues_wedge() if it fails.  Each
 * queue notes the job the device had started, which goes on only if the
 * device saves it.  A queue whose own reset went up the ladder is
 * resetting already.
 */
void hpu_queues_freeze(struct hpu_device *hdev)
{
	unsigned int i;

	for (i = 0; i < HPU_NUM_QUEUES; i++) {
		struct hpu_queue *q = &hdev->queues[i];
		struct hpu_job *head;
		LIST_HEAD(done);
		u32 status;

		spin_lock_irq(&q->lock);
		hpu_queue_collect_locked(q, &done);
		q->resetting = true;
		/* The warm reset to come drops the ring: no job waits for CI to pass it. */
		WRITE_ONCE(q->ring_epoch, q->ring_epoch + 1);
		head = list_first_entry_or_null(&q->pending, struct hpu_job, link);
		status = hpu_qrreg(q, HPU_Q_STATUS);
		q->started = head && hpu_queue_read_ci(q) == head->ring_pos &&
			     (status & (HPU_Q_STATUS_BUSY | HPU_Q_STATUS_WAITING)) ? head : NULL;
		spin_unlock_irq(&q->lock);
		hpu_queue_signal(&done);
	}
}

/*
 * A warm reset of a device reset (hpu_reset.c) is done: note the job each
 * queue's engine saved.  A later warm reset of the same device reset (the
 * boot failed) finds none started and reads 0, but keeps the saved progress.
 */
void hpu_queues_note_saved(struct hpu_device *hdev)
{
	unsigned int i;

	for (i = 0; i < HPU_NUM_QUEUES; i++) {
		struct hpu_queue *q = &hdev->queues[i];
		u64 tag = (u64)hpu_qrreg(q, HPU_Q_SAVED_TAG_HI) << 32 |
			  hpu_qrreg(q, HPU_Q_SAVED_TAG_LO);

		spin_lock_irq(&q->lock);
		if (tag)
			q->saved_tag = tag;
		spin_unlock_irq(&q->lock);
	}
}

/* Point the device at @q's ring; PI is where the device has it. */
static void hpu_queue_program(struct hpu_queue *q)
{
	hpu_qwreg(q, HPU_Q_RING_LO, lower_32_bits(q->ring_dma));
	hpu_qwreg(q, HPU_Q_RING_HI, upper_32_bits(q->ring_dma));
	hpu_qwreg(q, HPU_Q_RING_SIZE, HPU_QUEUE_ENTRIES);
	q->pi = hpu_qrreg(q, HPU_Q_PI);
}

/*
 * A device reset: the job the device saved goes on where it was; a job it
 * had started and did not save fails with -EIO.  A job that failed before
 * (the guilty job a queue's recovery named, with its own error) ends so.
 */
static enum hpu_queue_fate hpu_queues_restart_fate(const struct hpu_queue_reset_rule *rule,
						   struct hpu_queue *q, struct hpu_job *job,
						   int *err)
{
	lockdep_assert_held(&q->lock);
	if (job->hw_error)
		return HPU_FATE_USUAL;
	if (q->saved_tag && job->hw_seq == q->saved_tag)
		return HPU_FATE_RESUME;
	if (job != q->started)
		return HPU_FATE_USUAL;
	dev_err(hpu_dev(q->hdev),
		"queue %u: the device reset stopped a job of context %u that it could not save\n",
		q->index, job->ctx->asid);
	*err = -EIO;
	return HPU_FATE_FAIL;
}

/*
 * The firmware is READY again after a warm reset, which emptied the
 * rings: each queue's jobs end or go again (hpu_queue_sort_reset_locked()
 * by hpu_queues_restart_fate()), then the jobs that waited for the reset.
 */
void hpu_queues_restart(struct hpu_device *hdev)
{
	static const struct hpu_queue_reset_rule rule = { .fate = hpu_queues_restart_fate };
	unsigned int i;

	for (i = 0; i < HPU_NUM_QUEUES; i++) {
		struct hpu_queue *q = &hdev->queues[i];
		LIST_HEAD(done);

		spin_lock_irq(&q->lock);
		hpu_queue_program(q);
		hpu_queue_sort_reset_locked(q, &rule, &done);
		q->started = NULL;
		q->saved_tag = 0;
		hpu_sched_run_locked(q, 0, &done);
		spin_unlock_irq(&q->lock);
		hpu_queue_signal(&done);
	}
}

/*
 * A device reset failed: every queue is wedged, its jobs ending once the
 * engine has let go (hpu_queue_unwedge()), and the device malfunctions.
 */
void hpu_queues_wedge(struct hpu_device *hdev)
{
	unsigned int i;

	for (i = 0; i < HPU_NUM_QUEUES; i++) {
		struct hpu_queue *q = &hdev->queues[i];

		spin_lock_irq(&q->lock);
		q->wedged = true;
		q->started = NULL;
		q->saved_tag = 0;
		spin_unlock_irq(&q->lock);
		hpu_sched_timeout_in(q, 0);
	}
}

/* Device gone (reset after unplug): every job still in a ring fails. */
void hpu_queues_halt(struct hpu_device *hdev)
{
	unsigned int i;

	for (i = 0; i < HPU_NUM_QUEUES; i++) {
		struct hpu_queue *q = &hdev->queues[i];
		struct hpu_job *job, *tmp;
		LIST_HEAD(done);

		spin_lock_irq(&q->lock);
		list_for_each_entry_safe(job, tmp, &q->pending, link)
			hpu_queue_end_locked(q, job, -ENODEV, &done);
		hpu_sched_run_locked(q, -ENODEV, &done);
		spin_unlock_irq(&q->lock);
		hpu_queue_signal(&done);
	}
}

/* The device must be reset (idle) before the ring goes. */
static void hpu_queue_fini(struct hpu_queue *q)
{
	struct device *dev;

	if (!q->hdev) /* probe failed before it was set up */
		return;
	dev = hpu_dev(q->hdev);
	if (q->irq_requested)
		pci_free_irq(q->hdev->pdev, HPU_MSIX_VEC_MISC + 1 + q->index, q);
	q->irq_requested = false;
	if (q->slots)
		dma_free_coherent(dev, HPU_QUEUE_ENTRIES * sizeof(*q->slots),
				  q->slots, q->slots_dma);
	q->slots = NULL;
	if (q->ring)
		dma_free_coherent(dev, HPU_QUEUE_ENTRIES * sizeof(*q->ring),
				  q->ring, q->ring_dma);
	q->ring = NULL;
}

static int hpu_queue_init(struct hpu_device *hdev, u32 index)
{
	struct hpu_queue *q = &hdev->queues[index];
	struct device *dev = hpu_dev(hdev);
	int ret;

	q->hdev = hdev;
	q->index = index;
	snprintf(q->name, sizeof(q->name), "hpu-q%u", index);
	spin_lock_init(&q->lock);
	INIT_LIST_HEAD(&q->pending);
	q->hw_seq = 0;

	q->ring = dma_alloc_coherent(dev, HPU_QUEUE_ENTRIES * sizeof(*q->ring),
				     &q->ring_dma, GFP_KERNEL);
	q->slots = dma_alloc_coherent(dev, HPU_QUEUE_ENTRIES * sizeof(*q->slots),
				      &q->slots_dma, GFP_KERNEL);
	if (!q->ring || !q->slots) {
		ret = -ENOMEM;
		goto err_fini_queue;
	}

	ret = hpu_sched_init(q, hdev->job_timeout_ms);
	if (ret)
		goto err_fini_queue;

	ret = pci_request_irq(hdev->pdev, HPU_MSIX_VEC_MISC + 1 + index,
			      hpu_queue_irq, NULL, q, "hpu-q%u@%s", index,
			      pci_name(hdev->pdev));
	if (ret) {
		dev_err(dev, "cannot request the interrupt of queue %u: %d\n",
			index, ret);
		goto err_fini_queue;
	}
	q->irq_requested = true;

	hpu_queue_program(q);
	return 0;

err_fini_queue:
	hpu_queue_fini(q);
	return ret;
}

/* Rings, completion slots and vectors of every queue; the firmware is READY. */
int hpu_queues_init(struct hpu_device *hdev)
{
	unsigned int i;
	int ret;

	for (i = 0; i < HPU_NUM_QUEUES; i++) {
		ret = hpu_queue_init(hdev, i);
		if (ret)
			goto err_fini_queues;
	}
	return 0;

err_fini_queues:
	while (i--)
		hpu_queue_fini(&hdev->queues[i]);
	return ret;
}

/* After a device reset; the schedulers stay until the DRM device goes. */
void hpu_queues_fini(struct hpu_device *hdev)
{
	unsigned int i;

	for (i = 0; i < HPU_NUM_QUEUES; i++)
		hpu_queue_fini(&hdev->queues[i]);
}
