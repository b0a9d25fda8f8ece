/* SPDX-License-Identifier: MIT */
/*
 * Building command buffers: the runtime's packets, laid out as
 * uapi/drm/hpu_packets.h defines them.
 */
#include <assert.h>
#include <string.h>

#include <drm/hpu_packets.h>

#include "../submit/submit.h"

/* Packets are little-endian and copied out as the host lays them out. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "packets are little-endian");

void hpu_cb_init(struct hpu_cb *cb)
{
	cb->size = 0;
}

/* Callers build jobs of a few packets; running out of room is a bug in the library. */
static void hpu_cb_put(struct hpu_cb *cb, const void *pkt, size_t len)
{
	assert(len % 8 == 0 && cb->size + len <= sizeof(cb->buf));
	memcpy((char *)cb->buf + cb->size, pkt, len);
	cb->size += len;
}

static void hpu_cb_lin_dma(struct hpu_cb *cb, uint32_t flags, uint64_t dst, uint64_t src,
			   uint64_t size)
{
	struct hpu_pkt_lin_dma pkt = {
		.header = HPU_PKT_HEADER(HPU_PKT_LIN_DMA, flags),
		.src = src,
		.dst = dst,
		.size = size,
	};

	hpu_cb_put(cb, &pkt, sizeof(pkt));
}

void hpu_cb_copy(struct hpu_cb *cb, uint64_t dst, uint64_t src, uint64_t size)
{
	hpu_cb_lin_dma(cb, 0, dst, src, size);
}

void hpu_cb_fill(struct hpu_cb *cb, uint64_t dst, uint8_t value, uint64_t size)
{
	hpu_cb_lin_dma(cb, HPU_PKT_LIN_DMA_MEMSET, dst, value, size);
}

void hpu_cb_signal(struct hpu_cb *cb, uint64_t addr, uint32_t value)
{
	struct hpu_pkt_signal pkt = {
		.header = HPU_PKT_HEADER(HPU_PKT_SIGNAL, 0),
		.value = value,
		.addr = addr,
	};

	hpu_cb_put(cb, &pkt, sizeof(pkt));
}

void hpu_cb_wait(struct hpu_cb *cb, uint64_t addr, uint32_t value)
{
	struct hpu_pkt_wait pkt = {
		.header = HPU_PKT_HEADER(HPU_PKT_WAIT, 0),
		.value = value,
		.addr = addr,
	};

	hpu_cb_put(cb, &pkt, sizeof(pkt));
}

void hpu_cb_timestamp(struct hpu_cb *cb, uint64_t addr)
{
	struct hpu_pkt_timestamp pkt = {
		.header = HPU_PKT_HEADER(HPU_PKT_TIMESTAMP, 0),
		.addr = addr,
	};

	hpu_cb_put(cb, &pkt, sizeof(pkt));
}

void hpu_cb_tpc_launch(struct hpu_cb *cb, uint64_t params, uint32_t params_size)
{
	struct hpu_pkt_tpc_launch pkt = {
		.header = HPU_PKT_HEADER(HPU_PKT_TPC_LAUNCH, 0),
		.params_size = params_size,
		.params = params,
	};

	hpu_cb_put(cb, &pkt, sizeof(pkt));
}

void hpu_cb_call(struct hpu_cb *cb, uint64_t addr, uint64_t size)
{
	struct hpu_pkt_call pkt = {
		.header = HPU_PKT_HEADER(HPU_PKT_CALL, 0),
		.addr = addr,
		.size = size,
	};

	hpu_cb_put(cb, &pkt, sizeof(pkt));
}

void hpu_cb_gemm(struct hpu_cb *cb, const void *gemm)
{
	hpu_cb_put(cb, gemm, sizeof(struct hpu_pkt_mme_gemm));
}

uint32_t hpu_pkt_size(uint32_t header)
{
	switch (HPU_PKT_OPCODE(header)) {
	case HPU_PKT_NOP: return sizeof(struct hpu_pkt_nop);
	case HPU_PKT_LIN_DMA: return sizeof(struct hpu_pkt_lin_dma);
	case HPU_PKT_SIGNAL: return sizeof(struct hpu_pkt_signal);
	case HPU_PKT_WAIT: return sizeof(struct hpu_pkt_wait);
	case HPU_PKT_TIMESTAMP: return sizeof(struct hpu_pkt_timestamp);
	case HPU_PKT_MME_GEMM: return sizeof(struct hpu_pkt_mme_gemm);
	case HPU_PKT_TPC_LAUNCH: return sizeof(struct hpu_pkt_tpc_launch);
	case HPU_PKT_CALL: return sizeof(struct hpu_pkt_call);
	default: return 0;
	}
}
