/* SPDX-License-Identifier: MIT */
/*
 * hpu tensor memory: direct HBM pointers where the MMU allows, staging
 * buffers elsewhere (hdm_tmem.h says when and what staging may hold).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "hdm_internal.h"
#include "hdm_mmu.h"
#include "hdm_tmem.h"

int hdm_tmem_extent(uint64_t va, uint32_t ndim, const uint64_t *shape, const int64_t *strides,
		    unsigned int esize, uint64_t *lo, uint64_t *len)
{
	int64_t min = 0, max = 0, span, lo_bytes, hi_bytes;
	uint64_t below;
	uint32_t d;

	*lo = va;
	*len = 0;
	for (d = 0; d < ndim; d++)
		if (!shape[d])
			return 0;
	/* Elements from element 0 to the lowest and the highest one reached. */
	for (d = 0; d < ndim; d++) {
		if (shape[d] - 1 > INT64_MAX ||
		    __builtin_mul_overflow((int64_t)(shape[d] - 1), strides[d], &span) ||
		    __builtin_add_overflow(span < 0 ? min : max, span, span < 0 ? &min : &max))
			return -1;
	}
	if (__builtin_mul_overflow(min, (int64_t)esize, &lo_bytes) ||
	    __builtin_add_overflow(max, 1, &hi_bytes) ||
	    __builtin_mul_overflow(hi_bytes, (int64_t)esize, &hi_bytes))
		return -1;
	/* Unsigned: -lo_bytes may be 2^63. */
	below = 0 - (uint64_t)lo_bytes;
	if (va < below || UINT64_MAX - va < (uint64_t)hi_bytes - 1)
		return -1;
	*lo = va - below;
	*len = below + (uint64_t)hi_bytes;
	return 0;
}

void hdm_tmem_init(struct hdm_tmem_set *set)
{
	set->count = 0;
	set->mapped = 0;
	set->staged = 0;
}

unsigned int hdm_tmem_add(struct hdm_tmem_set *set, uint64_t va, uint64_t len, bool write)
{
	unsigned int i;

	for (i = 0; i < set->count; i++) {
		if (set->r[i].va == va && set->r[i].len == len) {
			set->r[i].write |= write;
			return i;
		}
	}
	set->r[i] = (struct hdm_tmem){ .va = va, .len = len, .write = write };
	set->count++;
	return i;
}

static int hdm_tmem_xlat(struct hdm_job *job, const struct hdm_tmem *r, uint64_t done,
			 struct hdm_mmu_run *run)
{
	/* va + done stays below 2^48 while it translates, so it cannot wrap. */
	if (hdm_mmu_translate(job->hbm, job->asid, r->va + done, r->len - done, r->write, run))
		return hdm_job_fail(job, HPU_EVENT_MMU_FAULT, r->va + done);
	return 0;
}

/* Copy one translated run between the staging buffer and device memory. */
static int hdm_tmem_copy_run(struct hdm_job *job, const struct hdm_mmu_run *run, uint8_t *buf,
			     bool to_device)
{
	const struct hdm_core_ops *ops = job->core->ops;
	uint8_t *hbm;
	int err;

	/* A run is a page or more: gathering 1 GiB of scattered pages takes a while. */
	if (hdm_job_cancelled(job))
		return hdm_job_fail(job, HPU_EVENT_ABORTED, job->pos);
	if (run->host) {
		err = to_device ? ops->dma_write(job->core->opaque, run->addr, buf, run->len) :
				  ops->dma_read(job->core->opaque, run->addr, buf, run->len);
		return err ? hdm_job_fail(job, HPU_EVENT_DMA_ERROR, run->addr) : 0;
	}
	hbm = hdm_hbm_span(job->hbm, run->addr, run->len, to_device);
	if (to_device)
		memcpy(hbm, buf, run->len);
	else
		memcpy(buf, hbm, run->len);
	return 0;
}

/* Gather the rest of r, from done on, into a fresh staging buffer of set's. */
static int hdm_tmem_stage(struct hdm_job *job, struct hdm_tmem_set *set, struct hdm_tmem *r,
			  struct hdm_mmu_run run, uint64_t done)
{
	if (r->len > HDM_TMEM_STAGE_MAX - set->staged) {
		hdm_log(job->core, "queue 0x%" PRIx32 ": staging 0x%" PRIx64 " bytes at 0x%" PRIx64
			" passes the 0x%llx a packet may stage", hdm_qman_queue_id(job->queue),
			r->len, r->va, HDM_TMEM_STAGE_MAX);
		return hdm_job_fail(job, HPU_EVENT_BAD_KERNEL, r->va);
	}
	r->staged = malloc(r->len);
	if (!r->staged)
		return hdm_tmem_oom(job, "staging", r->va);
	set->staged += r->len;
	for (;;) {
		if (hdm_tmem_copy_run(job, &run, r->staged + done, false))
			return -1;
		done += run.len;
		if (done == r->len)
			return 0;
		if (hdm_tmem_xlat(job, r, done, &run))
			return -1;
	}
}

static int hdm_tmem_map_one(struct hdm_job *job, struct hdm_tmem_set *set, struct hdm_tmem *r)
{
	struct hdm_mmu_run run;

	r->staged = NULL;
	if (hdm_tmem_xlat(job, r, 0, &run))
		return -1;
	if (!run.host && run.len == r->len) {
		r->host = hdm_hbm_span(job->hbm, run.addr, r->len, r->write);
		return 0;
	}
	if (hdm_tmem_stage(job, set, r, run, 0))
		return -1;
	r->host = r->staged;
	return 0;
}

/* Whether bytes more of held staging buffers stay within the bound. */
static bool hdm_tmem_can_hold(const struct hdm_qman *qman, uint64_t bytes)
{
	return qman->held <= qman->held_max && bytes <= qman->held_max - qman->held;
}

/* Whether held names the ranges of set, in its order, with the same intents. */
static bool hdm_tmem_same(const struct hdm_tmem_set *held, const struct hdm_tmem_set *set)
{
	unsigned int i;

	if (held->count != set->count)
		return false;
	for (i = 0; i < set->count; i++)
		if (held->r[i].va != set->r[i].va || held->r[i].len != set->r[i].len ||
		    held->r[i].write != set->r[i].write)
			return false;
	return true;
}

/* Range i of the set takes the held packet's buffer for it, if it was staged. */
static bool hdm_tmem_take_held(struct hdm_job *job, struct hdm_tmem_set *set, unsigned int i)
{
	struct hdm_tmem *h = &job->held->r[i], *r = &set->r[i];

	if (!h->staged)
		return false;
	r->staged = r->host = h->staged;
	h->staged = NULL;
	set->staged += r->len;
	job->held->staged -= r->len;
	job->core->qman.held -= r->len;
	return true;
}

void hdm_tmem_drop_held(struct hdm_job *job, bool write_back)
{
	struct hdm_tmem_set *held = job->held;

	if (!held)
		return;
	job->held = NULL;
	if (write_back && !hdm_job_cancelled(job) && hdm_tmem_write_back(job, held))
		hdm_log(job->core, "queue 0x%" PRIx32 ": a yielded packet's staged outputs were "
			"not written back", hdm_qman_queue_id(job->queue));
	hdm_tmem_free_held(job->core, held);
}

void hdm_tmem_free_held(struct hdm_core *core, struct hdm_tmem_set *held)
{
	core->qman.held -= held->staged;
	hdm_tmem_release(held);
	free(held);
}

/* Map the set, its staged ranges taken from the job's held buffers if held. */
static int hdm_tmem_map_from(struct hdm_job *job, struct hdm_tmem_set *set, bool held)
{
	uint64_t start = hdm_core_now_ns();

	for (set->mapped = 0; set->mapped < set->count; set->mapped++) {
		if (held && hdm_tmem_take_held(job, set, set->mapped))
			continue;
		if (hdm_tmem_map_one(job, set, &set->r[set->mapped])) {
			/* The failed range's buffer too. */
			set->mapped++;
			hdm_tmem_release(set);
			return -1;
		}
	}
	/* A gather is paid again after a yield that cannot keep it: the step makes it worth it. */
	if (set->staged && !hdm_tmem_can_hold(&job->core->qman, set->staged))
		hdm_job_slice_extend(job, HDM_TMEM_SLICE_RATIO * (hdm_core_now_ns() - start));
	return 0;
}

int hdm_tmem_map(struct hdm_job *job, struct hdm_tmem_set *set)
{
	return hdm_tmem_map_from(job, set, false);
}

int hdm_tmem_map_operands(struct hdm_job *job, struct hdm_tmem_set *set)
{
	bool held = job->held && hdm_tmem_same(job->held, set);
	int err;

	if (!held)
		hdm_tmem_drop_held(job, true);
	err = hdm_tmem_map_from(job, set, held);
	/* What was not taken: direct ranges, mapped again, or after a failure. */
	if (held)
		hdm_tmem_drop_held(job, false);
	return err;
}

int hdm_tmem_yield(struct hdm_job *job, struct hdm_tmem_set *set)
{
	struct hdm_tmem_set *held;

	if (!set->staged || !hdm_tmem_can_hold(&job->core->qman, set->staged) ||
	    !(held = malloc(sizeof(*held))))
		return hdm_tmem_write_back(job, set);
	*held = *set;
	job->held = held;
	job->core->qman.held += set->staged;
	hdm_tmem_init(set);
	return 0;
}

int hdm_tmem_write_back(struct hdm_job *job, struct hdm_tmem_set *set)
{
	unsigned int i;

	/* A reset while the engine computed: host memory is no longer the job's to write. */
	if (hdm_job_cancelled(job))
		return hdm_job_fail(job, HPU_EVENT_ABORTED, job->pos);
	for (i = 0; i < set->mapped; i++) {
		struct hdm_tmem *r = &set->r[i];
		struct hdm_mmu_run run;
		uint64_t done;

		if (!r->staged || !r->write)
			continue;
		for (done = 0; done < r->len; done += run.len)
			if (hdm_tmem_xlat(job, r, done, &run) ||
			    hdm_tmem_copy_run(job, &run, r->staged + done, true))
				return -1;
	}
	return 0;
}

int hdm_tmem_oom(struct hdm_job *job, const char *what, uint64_t addr)
{
	hdm_log(job->core, "queue 0x%" PRIx32 ": host out of memory for %s at 0x%" PRIx64,
		hdm_qman_queue_id(job->queue), what, addr);
	return hdm_job_fail(job, HPU_EVENT_DMA_ERROR, addr);
}

void hdm_tmem_release(struct hdm_tmem_set *set)
{
	unsigned int i;

	for (i = 0; i < set->mapped; i++) {
		free(set->r[i].staged);
		set->r[i].staged = NULL;
	}
	set->mapped = 0;
	set->staged = 0;
}
