/* SPDX-License-Identifier: MIT */
/*
 * hpu packets: one table says how each opcode is laid out and checked; the
 * checks are common, only the execution is per opcode.  A CALL's callee
 * runs through the same loop, its packets fetched through the MMU a window
 * at a time.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "hdm_internal.h"
#include "hdm_dma.h"
#include "hdm_le.h"
#include "hdm_mme.h"
#include "hdm_mmu.h"
#include "hdm_pkt.h"
#include "hdm_tpc.h"

#define HDM_PKT_OFF(type, field) offsetof(struct hpu_pkt_##type, field)

struct hdm_pkt_desc {
	uint8_t size;       /* bytes; 0: no such opcode */
	uint8_t flags;      /* flags the opcode accepts */
	uint8_t pad;        /* offset of a __u32 that must be zero; 0: none */
	uint8_t addr;       /* offset of a __u64 address with an alignment rule; 0: none */
	uint8_t align;
	uint16_t engine;    /* HPU_ENGINE_* kind it runs on (events name it) */
	enum hdm_pkt_status (*exec)(struct hdm_job *job, const uint8_t *pkt); /* NULL: no effect */
};

static enum hdm_pkt_status hdm_pkt_lin_dma(struct hdm_job *job, const uint8_t *pkt)
{
	uint32_t flags = HPU_PKT_FLAGS(hdm_ld_le32(pkt));
	uint64_t src = hdm_ld_le64(pkt + HDM_PKT_OFF(lin_dma, src));
	uint64_t dst = hdm_ld_le64(pkt + HDM_PKT_OFF(lin_dma, dst));
	uint64_t size = hdm_ld_le64(pkt + HDM_PKT_OFF(lin_dma, size));

	if (flags & HPU_PKT_LIN_DMA_MEMSET)
		return hdm_dma_fill(job, dst, (uint8_t)src, size);
	return hdm_dma_copy(job, dst, src, size);
}

static enum hdm_pkt_status hdm_pkt_signal(struct hdm_job *job, const uint8_t *pkt)
{
	uint32_t value = hdm_ld_le32(pkt + HDM_PKT_OFF(signal, value));
	uint64_t addr = hdm_ld_le64(pkt + HDM_PKT_OFF(signal, addr));
	uint8_t sync[4];

	/* One engine thread runs every queue, so this read-modify-write is atomic between them. */
	if (hdm_dma_load(job, addr, sync, sizeof(sync)))
		return HDM_PKT_FAILED;
	hdm_st_le32(sync, hdm_ld_le32(sync) + value);
	if (hdm_dma_store(job, addr, sync, sizeof(sync)))
		return HDM_PKT_FAILED;
	job->signalled = true;
	return HDM_PKT_DONE;
}

static enum hdm_pkt_status hdm_pkt_wait(struct hdm_job *job, const uint8_t *pkt)
{
	uint32_t value = hdm_ld_le32(pkt + HDM_PKT_OFF(wait, value));
	uint64_t addr = hdm_ld_le64(pkt + HDM_PKT_OFF(wait, addr));
	uint8_t sync[4];

	if (hdm_dma_load(job, addr, sync, sizeof(sync)))
		return HDM_PKT_FAILED;
	return hdm_ld_le32(sync) >= value ? HDM_PKT_DONE : HDM_PKT_STALLED;
}

static enum hdm_pkt_status hdm_pkt_timestamp(struct hdm_job *job, const uint8_t *pkt)
{
	struct hdm_core *core = job->core;
	uint8_t ts[8];

	hdm_st_le64(ts, core->ops->now_ns(core->opaque));
	return hdm_dma_store(job, hdm_ld_le64(pkt + HDM_PKT_OFF(timestamp, addr)), ts, sizeof(ts));
}

static enum hdm_pkt_status hdm_pkt_write_completion(struct hdm_job *job, const uint8_t *pkt)
{
	struct hdm_core *core = job->core;
	uint64_t addr = hdm_ld_le64(pkt + HDM_PKT_OFF(write_completion, addr));
	uint8_t value[8];

	memcpy(value, pkt + HDM_PKT_OFF(write_completion, value), sizeof(value));
	/* Injected: the value written is not the one the driver waits for. */
	if (hdm_fault_should_fail(core, HPU_FAULT_BAD_COMPLETION, job->asid))
		hdm_st_le64(value, ~hdm_ld_le64(value));
	if (core->ops->dma_write(core->opaque, addr, value, sizeof(value)))
		return hdm_job_fail(job, HPU_EVENT_DMA_ERROR, addr);
	return HDM_PKT_DONE;
}

static enum hdm_pkt_status hdm_pkt_interrupt(struct hdm_job *job, const uint8_t *pkt)
{
	struct hdm_core *core = job->core;
	uint32_t vector = hdm_ld_le32(pkt + HDM_PKT_OFF(interrupt, vector));

	/* Vector 0 is the device's own (boot, errors, events). */
	if (vector == HPU_MSIX_VEC_MISC || vector >= HPU_MSIX_VECTORS)
		return hdm_job_fail(job, HPU_EVENT_ILLEGAL_PACKET, job->pos);
	if (!hdm_fault_should_fail(core, HPU_FAULT_LOST_IRQ, job->asid))
		core->ops->irq_raise(core->opaque, vector);
	return HDM_PKT_DONE;
}

static enum hdm_pkt_status hdm_pkt_call(struct hdm_job *job, const uint8_t *pkt);

static const struct hdm_pkt_desc hdm_pkt_descs[256] = {
	[HPU_PKT_NOP] = {
		.size = sizeof(struct hpu_pkt_nop),
		.pad = HDM_PKT_OFF(nop, pad),
	},
	[HPU_PKT_LIN_DMA] = {
		.size = sizeof(struct hpu_pkt_lin_dma),
		.flags = HPU_PKT_LIN_DMA_MEMSET,
		.pad = HDM_PKT_OFF(lin_dma, pad),
		.engine = HPU_ENGINE_DMA,
		.exec = hdm_pkt_lin_dma,
	},
	[HPU_PKT_SIGNAL] = {
		.size = sizeof(struct hpu_pkt_signal),
		.addr = HDM_PKT_OFF(signal, addr),
		.align = 4,
		.exec = hdm_pkt_signal,
	},
	[HPU_PKT_WAIT] = {
		.size = sizeof(struct hpu_pkt_wait),
		.addr = HDM_PKT_OFF(wait, addr),
		.align = 4,
		.exec = hdm_pkt_wait,
	},
	[HPU_PKT_TIMESTAMP] = {
		.size = sizeof(struct hpu_pkt_timestamp),
		.pad = HDM_PKT_OFF(timestamp, pad),
		.addr = HDM_PKT_OFF(timestamp, addr),
		.align = 8,
		.exec = hdm_pkt_timestamp,
	},
	[HPU_PKT_MME_GEMM] = {
		.size = sizeof(struct hpu_pkt_mme_gemm),
		.flags = HPU_PKT_GEMM_TRANS_A | HPU_PKT_GEMM_TRANS_B,
		.pad = HDM_PKT_OFF(mme_gemm, pad),
		.engine = HPU_ENGINE_MME,
		.exec = hdm_mme_gemm,
	},
	[HPU_PKT_TPC_LAUNCH] = {
		.size = sizeof(struct hpu_pkt_tpc_launch),
		.addr = HDM_PKT_OFF(tpc_launch, params),
		.align = 8,
		.engine = HPU_ENGINE_TPC,
		.exec = hdm_tpc_launch,
	},
	[HPU_PKT_CALL] = {
		.size = sizeof(struct hpu_pkt_call),
		.pad = HDM_PKT_OFF(call, pad),
		.addr = HDM_PKT_OFF(call, addr),
		.align = 8,
		.exec = hdm_pkt_call,
	},
	[HPU_PKT_WRITE_COMPLETION] = {
		.size = sizeof(struct hpu_pkt_write_completion),
		.pad = HDM_PKT_OFF(write_completion, pad),
		.addr = HDM_PKT_OFF(write_completion, addr),
		.align = 8,
		.exec = hdm_pkt_write_completion,
	},
	[HPU_PKT_INTERRUPT] = {
		.size = sizeof(struct hpu_pkt_interrupt),
		.exec = hdm_pkt_interrupt,
	},
};

/* Where the packet running is reported: its offset in the command buffer, its VA in a callee. */
static uint64_t hdm_pkt_addr(const struct hdm_job *job)
{
	return job->call.size ? job->call.addr + job->call.pos : job->pos;
}

int hdm_pkt_refuse(struct hdm_job *job, const char *fmt, ...)
{
	char why[96];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	hdm_log(job->core, "queue 0x%" PRIx32 ": packet at 0x%" PRIx64 " refused: %s",
		hdm_qman_queue_id(job->queue), hdm_pkt_addr(job), why);
	return hdm_job_fail(job, HPU_EVENT_BAD_KERNEL, hdm_pkt_addr(job));
}

/* The engine that runs a packet of this kind for the job's queue. */
static uint32_t hdm_pkt_engine(const struct hdm_job *job, uint16_t kind)
{
	const struct hdm_core_config *cfg = &job->core->cfg;

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

/*
 * Fill the callee's window from the packet running on, as far as the callee
 * is mapped and readable.  Returns 0, or the event type of the address it
 * stopped at (*at): a packet needing bytes from there on fails there.
 */
static uint32_t hdm_call_fetch(struct hdm_job *job, uint64_t *at)
{
	const struct hdm_core_ops *ops = job->core->ops;
	struct hdm_job_call *call = &job->call;
	uint64_t want = call->size - call->pos;
	struct hdm_mmu_run run;

	if (want > HDM_CALL_WINDOW)
		want = HDM_CALL_WINDOW;
	call->win_off = call->pos;
	for (call->win_len = 0; call->win_len < want; call->win_len += run.len) {
		uint8_t *dst = call->win + call->win_len;

		*at = call->addr + call->pos + call->win_len;
		if (hdm_mmu_translate(job->hbm, job->asid, *at, want - call->win_len, false, &run))
			return HPU_EVENT_MMU_FAULT;
		if (!run.host) {
			memcpy(dst, hdm_hbm_span(job->hbm, run.addr, run.len, false), run.len);
		} else if (ops->dma_read(job->core->opaque, run.addr, dst, run.len)) {
			*at = run.addr;
			return HPU_EVENT_DMA_ERROR;
		}
	}
	return 0;
}

/* The first len bytes of the packet running (they lie inside its buffer); NULL on a fault. */
static const uint8_t *hdm_pkt_bytes(struct hdm_job *job, uint32_t len)
{
	struct hdm_job_call *call = &job->call;
	uint64_t at = 0;
	uint32_t why;

	if (!call->size)
		return job->cb + job->pos;
	/* A packet the window does not hold whole is fetched again from its start. */
	if (call->pos + len > call->win_off + call->win_len) {
		why = hdm_call_fetch(job, &at);
		if (len > call->win_len) {
			hdm_job_fail(job, why, at);
			return NULL;
		}
	}
	return call->win + (call->pos - call->win_off);
}

/*
 * The checks every packet passes before it runs; NULL with the job's fault
 * saying which, else its bytes.  In a callee every privileged packet is
 * refused, and a CALL: callees do not nest.
 */
static const uint8_t *hdm_pkt_check(struct hdm_job *job, const struct hdm_pkt_desc **desc)
{
	bool callee = job->call.size;
	uint64_t pos = callee ? job->call.pos : job->pos;
	uint64_t size = callee ? job->call.size : job->cb_size;
	/* Every packet is a multiple of 8 bytes, as is every buffer: a header always fits. */
	const uint8_t *pkt = hdm_pkt_bytes(job, 8);
	uint32_t header, opcode;
	const struct hdm_pkt_desc *d;

	if (!pkt)
		return NULL;
	header = hdm_ld_le32(pkt);
	opcode = HPU_PKT_OPCODE(header);
	d = *desc = &hdm_pkt_descs[opcode];
	if (!d->size)
		goto illegal;
	if (HPU_PKT_IS_PRIVILEGED(opcode) && (callee || job->pos < job->priv_offset)) {
		hdm_job_fail(job, HPU_EVENT_PRIV_PACKET, hdm_pkt_addr(job));
		return NULL;
	}
	/* The size comes first: the fields checked next must lie inside the buffer. */
	if ((callee && opcode == HPU_PKT_CALL) || HPU_PKT_RESERVED(header) ||
	    (HPU_PKT_FLAGS(header) & ~d->flags) || d->size > size - pos)
		goto illegal;
	pkt = hdm_pkt_bytes(job, d->size);
	if (!pkt)
		return NULL;
	if ((d->pad && hdm_ld_le32(pkt + d->pad)) ||
	    (d->addr && hdm_ld_le64(pkt + d->addr) % d->align))
		goto illegal;
	return pkt;
illegal:
	hdm_job_fail(job, HPU_EVENT_ILLEGAL_PACKET, hdm_pkt_addr(job));
	return NULL;
}

/* Packets are left in the job's command buffer, or in its callee (callee). */
static bool hdm_pkt_left(const struct hdm_job *job, bool callee)
{
	return callee ? job->call.pos < job->call.size : job->pos < job->cb_size;
}

/* Run the packets of the job's command buffer, or of its callee while one runs, to the end. */
static enum hdm_pkt_status hdm_pkt_run_buffer(struct hdm_job *job)
{
	bool callee = job->call.size;

	while (hdm_pkt_left(job, callee)) {
		const struct hdm_pkt_desc *desc;
		enum hdm_pkt_status status = HDM_PKT_DONE;
		const uint8_t *pkt;

		job->engine = HPU_ENGINE_QMAN;
		/* At the top-level packet, as every engine reports it: in a callee, the CALL. */
		if (hdm_job_cancelled(job))
			return hdm_job_fail(job, HPU_EVENT_ABORTED, job->pos);
		pkt = hdm_pkt_check(job, &desc);
		if (!pkt)
			return HDM_PKT_FAILED;
		/* Injected as it starts (not as it goes on after a yield): it never ends. */
		if (!job->moved && hdm_qman_hang(job))
			return hdm_job_fail(job, HPU_EVENT_ABORTED, job->pos);
		job->engine = hdm_pkt_engine(job, desc->engine);
		if (desc->exec)
			status = desc->exec(job, pkt);
		if (status != HDM_PKT_DONE)
			return status;
		if (callee)
			job->call.pos += desc->size;
		else
			job->pos += desc->size;
		/* Yield points are between packets: past its last one, a job (or callee) ends. */
		if (hdm_pkt_left(job, callee) && hdm_job_slice_over(job))
			return HDM_PKT_YIELDED;
	}
	return HDM_PKT_DONE;
}

/* Run the callee from job->call.pos; it is over unless a WAIT in it stalled. */
static enum hdm_pkt_status hdm_pkt_run_callee(struct hdm_job *job)
{
	enum hdm_pkt_status status = hdm_pkt_run_buffer(job);

	if (status == HDM_PKT_DONE || status == HDM_PKT_FAILED)
		job->call.size = 0;
	return status;
}

static enum hdm_pkt_status hdm_pkt_call(struct hdm_job *job, const uint8_t *pkt)
{
	struct hdm_job_call *call = &job->call;
	uint64_t size = hdm_ld_le64(pkt + HDM_PKT_OFF(call, size));

	if (!size || size % 8 || size > HPU_CALL_MAX_SIZE)
		return hdm_job_fail(job, HPU_EVENT_ILLEGAL_PACKET, job->pos);
	call->addr = hdm_ld_le64(pkt + HDM_PKT_OFF(call, addr));
	call->size = size;
	call->pos = 0;
	call->win_off = 0;
	call->win_len = 0;
	return hdm_pkt_run_callee(job);
}

enum hdm_pkt_status hdm_pkt_run(struct hdm_job *job)
{
	enum hdm_pkt_status status;

	/* Fetch the callee anew: what other queues wrote while this one waited is what runs. */
	job->call.win_len = 0;
	if (job->call.size) {
		status = hdm_pkt_run_callee(job);
		if (status != HDM_PKT_DONE)
			return status;
		job->pos += sizeof(struct hpu_pkt_call);
	}
	return hdm_pkt_run_buffer(job);
}
