/* SPDX-License-Identifier: MIT */
/*
 * hpu tensor memory: the device-VA ranges a compute packet names, as host
 * memory the engines compute on.  A range that is one run of HBM is a
 * pointer straight into HBM; any other (pages of scattered HBM, host pages)
 * is staged: gathered into a host buffer when mapped and, for a written
 * range, scattered back after the computation.
 *
 * Ranges are collected first, so that a range named twice (an output that is
 * the very view of an input) is mapped once, with both intents.  Mapping
 * checks every page before anything is written.
 *
 * Staging costs host memory the guest names (a range may span 2^48 bytes:
 * one HBM page mapped over and over), so a set stages HDM_TMEM_STAGE_MAX
 * bytes at most; a packet that needs more is refused, and a queue reset
 * stops a gather or scatter between two runs.  A packet that yields keeps
 * its staging buffers for when it goes on (job->held), as long as all the
 * yielded packets keep HDM_TMEM_HELD_MAX bytes at most (a guest could have
 * a yielded packet on every queue); past that it writes its staged outputs
 * back and stages again when it goes on, so a step that staged runs
 * HDM_TMEM_SLICE_RATIO times as long as its gathering took before it
 * yields.
 */
#ifndef HDM_TMEM_H
#define HDM_TMEM_H

#include <stdbool.h>
#include <stdint.h>

#include "hdm_job.h"
#include "hpu_kernels.h"

/* Every tensor of a launch may be a distinct range. */
#define HDM_TMEM_MAX HPU_KERNEL_MAX_TENSORS

/* Bytes a set stages at most, all its ranges together. */
#define HDM_TMEM_STAGE_MAX (1ull << 30)

/* Bytes of staging buffers the yielded packets of all queues keep at most. */
#define HDM_TMEM_HELD_MAX (256ull << 20)

/*
 * A step that staged computes this many times as long as it gathered, at
 * least, before it yields: copies take half its time at most (the
 * scatter costing about what the gather did), and a queue waiting for it
 * waits about 2 + 2 * HDM_TMEM_SLICE_RATIO gathers' time.
 */
#define HDM_TMEM_SLICE_RATIO 2u

struct hdm_tmem {
	uint64_t va, len;
	bool write;
	uint8_t *host;   /* byte va, once mapped */
	uint8_t *staged; /* the staging buffer host points into, or NULL */
};

struct hdm_tmem_set {
	unsigned int count;
	unsigned int mapped;
	uint64_t staged;   /* bytes of the mapped ranges' staging buffers */
	struct hdm_tmem r[HDM_TMEM_MAX];
};

/*
 * The bytes a strided view reaches: element (i0, ...) of the view at va is
 * va + sum(ik * strides[k]) * esize, ik < shape[k], strides negative or 0
 * too.  0 with [*lo, *lo + *len) (*len 0 for an empty view), or -1 when the
 * range does not fit the 64-bit address space (guest input: every step is
 * checked).
 */
int hdm_tmem_extent(uint64_t va, uint32_t ndim, const uint64_t *shape, const int64_t *strides,
		    unsigned int esize, uint64_t *lo, uint64_t *len);

/* Start an empty set. */
void hdm_tmem_init(struct hdm_tmem_set *set);

/*
 * Index of the range [va, va + len) (len > 0) in the set, added if new (at
 * most HDM_TMEM_MAX distinct ranges); write widens its intent.
 */
unsigned int hdm_tmem_add(struct hdm_tmem_set *set, uint64_t va, uint64_t len, bool write);

/*
 * Map every range of the set.  0, or -1 with the job's fault: MMU_FAULT at
 * the first VA without a permitted mapping, DMA_ERROR when host memory
 * cannot be read or staged, BAD_KERNEL past HDM_TMEM_STAGE_MAX, ABORTED on
 * a queue reset.  On failure nothing stays mapped.
 */
int hdm_tmem_map(struct hdm_job *job, struct hdm_tmem_set *set);

/*
 * Map a compute packet's operands, as hdm_tmem_map(): if the packet yielded
 * keeping its staging buffers (job->held, the same ranges), it takes them
 * back instead of gathering again; else they are dropped.
 */
int hdm_tmem_map_operands(struct hdm_job *job, struct hdm_tmem_set *set);

/*
 * Scatter the staged written ranges back at the packet's end; 0, or -1 with
 * the job's fault (ABORTED if the job was cancelled: nothing is written
 * then).
 */
int hdm_tmem_write_back(struct hdm_job *job, struct hdm_tmem_set *set);

/*
 * The packet yields: its staging buffers go to job->held if HDM_TMEM_HELD_MAX
 * allows (the set is left empty), else its staged outputs are written back
 * (hdm_tmem_write_back()).
 */
int hdm_tmem_yield(struct hdm_job *job, struct hdm_tmem_set *set);

/*
 * The job's held buffers are not taken back (its packet was rewritten, or
 * the job ends): written back if write_back and the job was not cancelled,
 * and freed.  The engine thread's alone, as job->held is.
 */
void hdm_tmem_drop_held(struct hdm_job *job, bool write_back);

/* Free held buffers no job holds now (a preempted job's, hdm_qman.h), unwritten.  The engine's. */
void hdm_tmem_free_held(struct hdm_core *core, struct hdm_tmem_set *held);

/* Whether mapped range i of the set is staged (its host pointer changes at each mapping). */
static inline bool hdm_tmem_staged(const struct hdm_tmem_set *set, unsigned int i)
{
	return set->r[i].staged != NULL;
}

/* The host has no memory for what an engine needs: logged, DMA_ERROR at addr; returns -1. */
int hdm_tmem_oom(struct hdm_job *job, const char *what, uint64_t addr);

/* Free the staging buffers; the set may be reused after hdm_tmem_init(). */
void hdm_tmem_release(struct hdm_tmem_set *set);

#endif /* HDM_TMEM_H */
