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

static int hdm_dma_xlat(struct hdm_job *job, uint64_t va, uint64_t len, bool write,
			struct hdm_mmu_run *run)
{
	if (hdm_mmu_translate(job->hbm, job->asid, va, len, write, run))
		return hdm_job_fail(job, HPU_EVENT_MMU_FAULT, va);
	return 0;
}

/* Host pointer to HBM [off, off + *n), *n shrunk to stay in one chunk; NULL as hdm_hbm_map(). */
static uint8_t *hdm_dma_hbm(struct hdm_job *job, uint64_t off, bool write, uint64_t *n)
{
	uint64_t avail;
	uint8_t *p = hdm_hbm_map(job->hbm, off, write, &avail);

	if (*n > avail)
		*n = avail;
	return p;
}

/* Read n bytes of a run into buf. */
static int hdm_dma_run_read(struct hdm_job *job, struct hdm_mmu_run run, void *buf, uint64_t n)
{
	const struct hdm_core_ops *ops = job->core->ops;
	uint8_t *out = buf;

	if (run.host)
		return ops->dma_read(job->core->opaque, run.addr, buf, n) ?
		       hdm_job_fail(job, HPU_EVENT_DMA_ERROR, run.addr) : 0;
	while (n) {
		uint64_t m = n;
		const uint8_t *p = hdm_dma_hbm(job, run.addr, false, &m);

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
static int hdm_dma_run_write(struct hdm_job *job, struct hdm_mmu_run run, const void *buf,
			     uint64_t n)
{
	const struct hdm_core_ops *ops = job->core->ops;
	const uint8_t *in = buf;

	if (run.host)
		return ops->dma_write(job->core->opaque, run.addr, buf, n) ?
		       hdm_job_fail(job, HPU_EVENT_DMA_ERROR, run.addr) : 0;
	while (n) {
		uint64_t m = n;
		uint8_t *p = hdm_dma_hbm(job, run.addr, true, &m);

		memcpy(p, in, m);
		in += m;
		run.addr += m;
		n -= m;
	}
	return 0;
}

/* Copy n (<= HDM_DMA_STEP) bytes between two translated runs. */
static int hdm_dma_move(struct hdm_job *job, struct hdm_mmu_run dst, struct hdm_mmu_run src,
			uint64_t n)
{
	uint8_t *bounce = job->core->qman.bounce;

	if (src.host && dst.host) {
		if (hdm_dma_run_read(job, src, bounce, n))
			return -1;
		return hdm_dma_run_write(job, dst, bounce, n);
	}
	while (n) {
		uint64_t m = n;
		uint8_t *p;

		if (!dst.host) {
			/* Straight into the destination chunk. */
			p = hdm_dma_hbm(job, dst.addr, true, &m);
			if (hdm_dma_run_read(job, src, p, m))
				return -1;
		} else {
			/* Straight out of the source chunk; an untouched one reads as zeros. */
			p = hdm_dma_hbm(job, src.addr, false, &m);
			if (!p)
				p = memset(bounce, 0, m);
			if (hdm_dma_run_write(job, dst, p, m))
				return -1;
		}
		dst.addr += m;
		src.addr += m;
		n -= m;
	}
	return 0;
}

/* Fill n (<= HDM_DMA_STEP) bytes of a translated run. */
static int hdm_dma_set(struct hdm_job *job, struct hdm_mmu_run dst, uint8_t value, uint64_t n)
{
	uint8_t *bounce = job->core->qman.bounce;

	/* Zeroing HBM leaves untouched chunks unallocated. */
	if (!dst.host && !value) {
		hdm_hbm_zero(job->hbm, dst.addr, n);
		return 0;
	}
	memset(bounce, value, n);
	return hdm_dma_run_write(job, dst, bounce, n);
}

/* A copy (fill < 0) or a fill of size bytes, one step at a time, from job->moved on. */
static enum hdm_pkt_status hdm_dma_transfer(struct hdm_job *job, uint64_t dst, uint64_t src,
					    int fill, uint64_t size)
{
	/* A callee's packet may have changed since it yielded: what is left of it, if anything. */
	uint64_t moved = job->moved < size ? job->moved : size;

	src += moved;
	dst += moved;
	size -= moved;
	job->moved = 0;
	while (size) {
		struct hdm_mmu_run s, d;
		uint64_t n = size < HDM_DMA_STEP ? size : HDM_DMA_STEP;

		if (moved && hdm_job_slice_over(job)) {
			job->moved = moved;
			return HDM_PKT_YIELDED;
		}
		if (hdm_job_cancelled(job))
			return hdm_job_fail(job, HPU_EVENT_ABORTED, job->pos);
		if (fill < 0) {
			if (hdm_dma_xlat(job, src, n, false, &s))
				return -1;
			n = s.len;
		}
		if (hdm_dma_xlat(job, dst, n, true, &d))
			return -1;
		n = d.len;
		if (fill < 0 ? hdm_dma_move(job, d, s, n) : hdm_dma_set(job, d, (uint8_t)fill, n))
			return HDM_PKT_FAILED;
		src += n;
		dst += n;
		size -= n;
		moved += n;
	}
	return HDM_PKT_DONE;
}

enum hdm_pkt_status hdm_dma_copy(struct hdm_job *job, uint64_t dst, uint64_t src, uint64_t size)
{
	return hdm_dma_transfer(job, dst, src, -1, size);
}

enum hdm_pkt_status hdm_dma_fill(struct hdm_job *job, uint64_t dst, uint8_t value, uint64_t size)
{
	return hdm_dma_transfer(job, dst, 0, value, size);
}

/* One run for a small access: aligned ones never cross a page, so it covers them. */
static int hdm_dma_xlat_small(struct hdm_job *job, uint64_t va, uint32_t len, bool write,
			      struct hdm_mmu_run *run)
{
	if (hdm_dma_xlat(job, va, len, write, run))
		return -1;
	if (run->len < len)
		return hdm_job_fail(job, HPU_EVENT_MMU_FAULT, va + run->len);
	return 0;
}

int hdm_dma_load(struct hdm_job *job, uint64_t va, void *buf, uint32_t len)
{
	struct hdm_mmu_run run;

	if (hdm_dma_xlat_small(job, va, len, false, &run))
		return -1;
	return hdm_dma_run_read(job, run, buf, len);
}

int hdm_dma_store(struct hdm_job *job, uint64_t va, const void *buf, uint32_t len)
{
	struct hdm_mmu_run run;

	if (hdm_dma_xlat_small(job, va, len, true, &run))
		return -1;
	return hdm_dma_run_write(job, run, buf, len);
}

int hdm_dma_read(struct hdm_job *job, uint64_t va, void *buf, uint64_t len)
{
	uint8_t *out = buf;
	struct hdm_mmu_run run;

	while (len) {
		if (hdm_dma_xlat(job, va, len, false, &run) ||
		    hdm_dma_run_read(job, run, out, run.len))
			return -1;
		out += run.len;
		va += run.len;
		len -= run.len;
	}
	return 0;
}
