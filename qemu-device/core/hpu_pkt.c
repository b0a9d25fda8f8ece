/* SPDX-License-Identifier: MIT */
/*
 * hpu packets: one table says how each opcode is laid out and checked; the
 * checks are common, only the execution is per opcode.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "hpu_core_internal.h"
#include "hpu_dma.h"
#include "hpu_le.h"
#include "hpu_mme.h"
#include "hpu_pkt.h"
#include "hpu_tpc.h"

#define HPU_PKT_OFF(type, field) offsetof(struct hpu_pkt_##type, field)

struct hpu_pkt_desc {
	uint8_t size;       /* bytes; 0: no such opcode */
	uint8_t flags;      /* flags the opcode accepts */
	uint8_t pad;        /* offset of a __u32 that must be zero; 0: none */
	uint8_t addr;       /* offset of a __u64 address with an alignment rule; 0: none */
	uint8_t align;
	uint16_t engine;    /* HPU_ENGINE_* kind it runs on (events name it) */
	enum hpu_pkt_status (*exec)(struct hpu_job *job, const uint8_t *pkt); /* NULL: no effect */
};

static enum hpu_pkt_status hpu_pkt_lin_dma(struct hpu_job *job, const uint8_t *pkt)
{
	uint32_t flags = HPU_PKT_FLAGS(hpu_ld_le32(pkt));
	uint64_t src = hpu_ld_le64(pkt + HPU_PKT_OFF(lin_dma, src));
	uint64_t dst = hpu_ld_le64(pkt + HPU_PKT_OFF(lin_dma, dst));
	uint64_t size = hpu_ld_le64(pkt + HPU_PKT_OFF(lin_dma, size));

	if (flags & HPU_PKT_LIN_DMA_MEMSET)
		return hpu_dma_fill(job, dst, (uint8_t)src, size);
	return hpu_dma_copy(job, dst, src, size);
}

static enum hpu_pkt_status hpu_pkt_signal(struct hpu_job *job, const uint8_t *pkt)
{
	uint32_t value = hpu_ld_le32(pkt + HPU_PKT_OFF(signal, value));
	uint64_t addr = hpu_ld_le64(pkt + HPU_PKT_OFF(signal, addr));
	uint8_t sync[4];

	/* One engine thread runs every queue, so this read-modify-write is atomic between them. */
	if (hpu_dma_load(job, addr, sync, sizeof(sync)))
		return HPU_PKT_FAILED;
	hpu_st_le32(sync, hpu_ld_le32(sync) + value);
	if (hpu_dma_store(job, addr, sync, sizeof(sync)))
		return HPU_PKT_FAILED;
	job->signalled = true;
	return HPU_PKT_DONE;
}

static enum hpu_pkt_status hpu_pkt_wait(struct hpu_job *job, const uint8_t *pkt)
{
	uint32_t value = hpu_ld_le32(pkt + HPU_PKT_OFF(wait, value));
	uint64_t addr = hpu_ld_le64(pkt + HPU_PKT_OFF(wait, addr));
	uint8_t sync[4];

	if (hpu_dma_load(job, addr, sync, sizeof(sync)))
		return HPU_PKT_FAILED;
	return hpu_ld_le32(sync) >= value ? HPU_PKT_DONE : HPU_PKT_STALLED;
}

static enum hpu_pkt_status hpu_pkt_timestamp(struct hpu_job *job, const uint8_t *pkt)
{
	struct hpu_dev_core *core = job->core;
	uint8_t ts[8];

	hpu_st_le64(ts, core->ops->now_ns(core->opaque));
	return hpu_dma_store(job, hpu_ld_le64(pkt + HPU_PKT_OFF(timestamp, addr)), ts, sizeof(ts));
}

static enum hpu_pkt_status hpu_pkt_write_completion(struct hpu_job *job, const uint8_t *pkt)
{
	struct hpu_dev_core *core = job->core;
	uint64_t addr = hpu_ld_le64(pkt + HPU_PKT_OFF(write_completion, addr));
	uint8_t value[8];

	memcpy(value, pkt + HPU_PKT_OFF(write_completion, value), sizeof(value));
	if (core->ops->dma_write(core->opaque, addr, value, sizeof(value)))
		return hpu_job_fail(job, HPU_EVENT_DMA_ERROR, addr);
	return HPU_PKT_DONE;
}

static enum hpu_pkt_status hpu_pkt_interrupt(struct hpu_job *job, const uint8_t *pkt)
{
	struct hpu_dev_core *core = job->core;
	uint32_t vector = hpu_ld_le32(pkt + HPU_PKT_OFF(interrupt, vector));

	/* Vector 0 is the device's own (boot, errors, events). */
	if (vector == HPU_MSIX_VEC_MISC || vector >= HPU_MSIX_VECTORS)
		return hpu_job_fail(job, HPU_EVENT_ILLEGAL_PACKET, job->pos);
	core->ops->irq_raise(core->opaque, vector);
	return HPU_PKT_DONE;
}

static const struct hpu_pkt_desc hpu_pkt_descs[256] = {
	[HPU_PKT_NOP] = {
		.size = sizeof(struct hpu_pkt_nop),
		.pad = HPU_PKT_OFF(nop, pad),
	},
	[HPU_PKT_LIN_DMA] = {
		.size = sizeof(struct hpu_pkt_lin_dma),
		.flags = HPU_PKT_LIN_DMA_MEMSET,
		.pad = HPU_PKT_OFF(lin_dma, pad),
		.engine = HPU_ENGINE_DMA,
		.exec = hpu_pkt_lin_dma,
	},
	[HPU_PKT_SIGNAL] = {
		.size = sizeof(struct hpu_pkt_signal),
		.addr = HPU_PKT_OFF(signal, addr),
		.align = 4,
		.exec = hpu_pkt_signal,
	},
	[HPU_PKT_WAIT] = {
		.size = sizeof(struct hpu_pkt_wait),
		.addr = HPU_PKT_OFF(wait, addr),
		.align = 4,
		.exec = hpu_pkt_wait,
	},
	[HPU_PKT_TIMESTAMP] = {
		.size = sizeof(struct hpu_pkt_timestamp),
		.pad = HPU_PKT_OFF(timestamp, pad),
		.addr = HPU_PKT_OFF(timestamp, addr),
		.align = 8,
		.exec = hpu_pkt_timestamp,
	},
	[HPU_PKT_MME_GEMM] = {
		.size = sizeof(struct hpu_pkt_mme_gemm),
		.flags = HPU_PKT_GEMM_TRANS_A | HPU_PKT_GEMM_TRANS_B,
		.pad = HPU_PKT_OFF(mme_gemm, pad),
		.engine = HPU_ENGINE_MME,
		.exec = hpu_mme_gemm,
	},
	[HPU_PKT_TPC_LAUNCH] = {
		.size = sizeof(struct hpu_pkt_tpc_launch),
		.addr = HPU_PKT_OFF(tpc_launch, params),
		.align = 8,
		.engine = HPU_ENGINE_TPC,
		.exec = hpu_tpc_launch,
	},
	[HPU_PKT_WRITE_COMPLETION] = {
		.size = sizeof(struct hpu_pkt_write_completion),
		.pad = HPU_PKT_OFF(write_completion, pad),
		.addr = HPU_PKT_OFF(write_completion, addr),
		.align = 8,
		.exec = hpu_pkt_write_completion,
	},
	[HPU_PKT_INTERRUPT] = {
		.size = sizeof(struct hpu_pkt_interrupt),
		.exec = hpu_pkt_interrupt,
	},
};

int hpu_pkt_refuse(struct hpu_job *job, const char *fmt, ...)
{
	char why[96];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	hpu_log(job->core, "queue %u: packet at 0x%" PRIx32 " refused: %s", job->queue, job->pos, why);
	return hpu_job_fail(job, HPU_EVENT_BAD_KERNEL, job->pos);
}

/* The engine that runs a packet of this kind for the job's queue. */
static uint32_t hpu_pkt_engine(const struct hpu_job *job, uint16_t kind)
{
	const struct hpu_core_config *cfg = &job->core->cfg;

	switch (kind) {
	case HPU_ENGINE_DMA:
		return kind + job->queue % cfg->num_dma;
	case HPU_ENGINE_MME:
		return kind + job->queue % cfg->num_mme;
	default:
		/* The queue manager; a launch takes the TPCs from the first one. */
		return kind;
	}
}

/* The checks every packet passes before it runs; on failure the job's fault says which. */
static int hpu_pkt_check(struct hpu_job *job, uint32_t header, const struct hpu_pkt_desc *desc)
{
	const uint8_t *pkt = job->cb + job->pos;

	if (!desc->size)
		return hpu_job_fail(job, HPU_EVENT_ILLEGAL_PACKET, job->pos);
	if (HPU_PKT_IS_PRIVILEGED(HPU_PKT_OPCODE(header)) && job->pos < job->priv_offset)
		return hpu_job_fail(job, HPU_EVENT_PRIV_PACKET, job->pos);
	/* The size comes first: the fields checked next must lie inside the command buffer. */
	if (HPU_PKT_RESERVED(header) || (HPU_PKT_FLAGS(header) & ~desc->flags) ||
	    desc->size > job->cb_size - job->pos || (desc->pad && hpu_ld_le32(pkt + desc->pad)) ||
	    (desc->addr && hpu_ld_le64(pkt + desc->addr) % desc->align))
		return hpu_job_fail(job, HPU_EVENT_ILLEGAL_PACKET, job->pos);
	return 0;
}

enum hpu_pkt_status hpu_pkt_run(struct hpu_job *job)
{
	/* Every packet is a multiple of 8 bytes, as is cb_size: a header always fits. */
	while (job->pos < job->cb_size) {
		uint32_t header = hpu_ld_le32(job->cb + job->pos);
		const struct hpu_pkt_desc *desc = &hpu_pkt_descs[HPU_PKT_OPCODE(header)];
		enum hpu_pkt_status status = HPU_PKT_DONE;

		job->engine = HPU_ENGINE_QMAN;
		if (hpu_job_cancelled(job))
			return hpu_job_fail(job, HPU_EVENT_ABORTED, job->pos);
		if (hpu_pkt_check(job, header, desc))
			return HPU_PKT_FAILED;
		job->engine = hpu_pkt_engine(job, desc->engine);
		if (desc->exec)
			status = desc->exec(job, job->cb + job->pos);
		if (status != HPU_PKT_DONE)
			return status;
		job->pos += desc->size;
	}
	return HPU_PKT_DONE;
}
