/* SPDX-License-Identifier: MIT */
/*
 * hpu DMA engine: translated, chunked transfers.  HBM is reached through
 * pointers into its 2 MiB chunks, so HBM<->HBM is a memmove and host<->HBM a
 * single embedder DMA straight into or out of the chunk; only host<->host
 * goes through the bounce buffer.
 */
#include <string.h>

#include "hdm_internal.h"
#include "hdm_dma.h"
#include "hdm_mmu.h"

static int hpu_dma_xlat(struct hpu_job *job, uint64_t va, uint64_t len, bool write,
			struct hpu_mmu_run *run)
{
	if (hpu_mmu_translate(job->hbm, job->asid, va, len, write, run))
		return hpu_job_fail(job, HPU_EVENT_MMU_FAULT, va);
	return 0;
}

/* Host pointer to HBM [off, off + *n), *n shrunk to stay in one chunk; NULL as hpu_hbm_map(). */
static uint8_t *hpu_dma_hbm(struct hpu_job *job, uint64_t off, bool write, uint64_t *n)
{
	uint64_t avail;
	uint8_t *p = hpu_hbm_map(job->hbm, off, write, &avail);

	if (*n > avail)
		*n = avail;
	return p;
}

/* Read n bytes of a run into buf. */
static int hpu_dma_run_read(struct hpu_job *job, struct hpu_mmu_run run, void *buf, uint64_t n)
{
	const struct hpu_core_ops *ops = job->core->ops;
	uint8_t *out = buf;

	if (run.host)
		return ops->dma_read(job->core->opaque, run.addr, buf, n) ?
		       hpu_job_fail(job, HPU_EVENT_DMA_ERROR, run.addr) : 0;
	while (n) {
		uint64_t m = n;
		const uint8_t *p = hpu_dma_hbm(job, run.addr, false, &m);

		/* memmove: an HBM->HBM copy may read the chunk it writes. */
		if (p)
			memmove(out, p, m);
		else
			memset(out, 0, m);
		out += m;
		run.addr += m;
		n -= m;
	}
	return 0;
}

/* Write n bytes of buf to a run. */
static int hpu_dma_run_write(struct hpu_job *job, struct hpu_mmu_run run, const void *buf,
			     uint64_t n)
{
	const struct hpu_core_ops *ops = job->core->ops;
	const uint8_t *in = buf;

	if (run.host)
		return ops->dma_write(job->core->opaque, run.addr, buf, n) ?
		       hpu_job_fail(job, HPU_EVENT_DMA_ERROR, run.addr) : 0;
	while (n) {
		uint64_t m = n;
		uint8_t *p = hpu_dma_hbm(job, run.addr, true, &m);

		memcpy(p, in, m);
		in += m;
		run.addr += m;
		n -= m;
	}
	return 0;
}

/* Copy n (<= HPU_DMA_STEP) bytes between two translated runs. */
static int hpu_dma_move(struct hpu_job *job, struct hpu_mmu_run dst, struct hpu_mmu_run src,
			uint64_t n)
{
	uint8_t *bounce = job->core->qman.bounce;

	if (src.host && dst.host) {
		if (hpu_dma_run_read(job, src, bounce, n))
			return -1;
		return hpu_dma_run_write(job, dst, bounce, n);
	}
	while (n) {
		uint64_t m = n;
		uint8_t *p;

		if (!dst.host) {
			/* Straight into the destination chunk. */
			p = hpu_dma_hbm(job, dst.addr, true, &m);
			if (hpu_dma_run_read(job, src, p, m))
				return -1;
		} else {
			/* Straight out of the source chunk; an untouched one reads as zeros. */
			p = hpu_dma_hbm(job, src.addr, false, &m);
			if (!p)
				p = memset(bounce, 0, m);
			if (hpu_dma_run_write(job, dst, p, m))
				return -1;
		}
		dst.addr += m;
		src.addr += m;
		n -= m;
	}
	return 0;
}

/* Fill n (<= HPU_DMA_STEP) bytes of a translated run. */
static int hpu_dma_set(struct hpu_job *job, struct hpu_mmu_run dst, uint8_t value, uint64_t n)
{
	uint8_t *bounce = job->core->qman.bounce;

	/* Zeroing HBM leaves untouched chunks unallocated. */
	if (!dst.host && !value) {
		hpu_hbm_zero(job->hbm, dst.addr, n);
		return 0;
	}
	memset(bounce, value, n);
	return hpu_dma_run_write(job, dst, bounce, n);
}

/* A copy (fill < 0) or a fill of size bytes, one step at a time, from job->moved on. */
static enum hpu_pkt_status hpu_dma_transfer(struct hpu_job *job, uint64_t dst, uint64_t src,
					    int fill, uint64_t size)
{
	/* A callee's packet may have changed since it yielded: what is left of it, if anything. */
	uint64_t moved = job->moved < size ? job->moved : size;

	src += moved;
	dst += moved;
	size -= moved;
	job->moved = 0;
	while (size) {
		struct hpu_mmu_run s, d;
		uint64_t n = size < HPU_DMA_STEP ? size : HPU_DMA_STEP;

		if (moved && hpu_job_slice_over(job)) {
			job->moved = moved;
			return HPU_PKT_YIELDED;
		}
		if (hpu_job_cancelled(job))
			return hpu_job_fail(job, HPU_EVENT_ABORTED, job->pos);
		if (fill < 0) {
			if (hpu_dma_xlat(job, src, n, false, &s))
				return -1;
			n = s.len;
		}
		if (hpu_dma_xlat(job, dst, n, true, &d))
			return -1;
		n = d.len;
		if (fill < 0 ? hpu_dma_move(job, d, s, n) : hpu_dma_set(job, d, (uint8_t)fill, n))
			return HPU_PKT_FAILED;
		src += n;
		dst += n;
		size -= n;
		moved += n;
	}
	return HPU_PKT_DONE;
}

enum hpu_pkt_status hpu_dma_copy(struct hpu_job *job, uint64_t dst, uint64_t src, uint64_t size)
{
	return hpu_dma_transfer(job, dst, src, -1, size);
}

enum hpu_pkt_status hpu_dma_fill(struct hpu_job *job, uint64_t dst, uint8_t value, uint64_t size)
{
	return hpu_dma_transfer(job, dst, 0, value, size);
}

/* One run for a small access: aligned ones never cross a page, so it covers them. */
static int hpu_dma_xlat_small(struct hpu_job *job, uint64_t va, uint32_t len, bool write,
			      struct hpu_mmu_run *run)
{
	if (hpu_dma_xlat(job, va, len, write, run))
		return -1;
	if (run->len < len)
		return hpu_job_fail(job, HPU_EVENT_MMU_FAULT, va + run->len);
	return 0;
}

int hpu_dma_load(struct hpu_job *job, uint64_t va, void *buf, uint32_t len)
{
	struct hpu_mmu_run run;

	if (hpu_dma_xlat_small(job, va, len, false, &run))
		return -1;
	return hpu_dma_run_read(job, run, buf, len);
}

int hpu_dma_store(struct hpu_job *job, uint64_t va, const void *buf, uint32_t len)
{
	struct hpu_mmu_run run;

	if (hpu_dma_xlat_small(job, va, len, true, &run))
		return -1;
	return hpu_dma_run_write(job, run, buf, len);
}

int hpu_dma_read(struct hpu_job *job, uint64_t va, void *buf, uint64_t len)
{
	uint8_t *out = buf;
	struct hpu_mmu_run run;

	while (len) {
		if (hpu_dma_xlat(job, va, len, false, &run) ||
		    hpu_dma_run_read(job, run, out, run.len))
			return -1;
		out += run.len;
		va += run.len;
		len -= run.len;
	}
	return 0;
}
