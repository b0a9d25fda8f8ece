/* SPDX-License-Identifier: MIT */
/*
 * hpu DMA engine: moves bytes between device virtual addresses of a job's
 * context.  Every access is translated by the MMU page by page; host pages
 * are reached through the embedder's DMA, HBM through its chunks.
 *
 * Each function returns 0, or -1 with the job's fault set: MMU_FAULT at the
 * first VA without a permitted mapping, DMA_ERROR at the bus address that
 * failed, or ABORTED when the job was cancelled between two steps.  What
 * was moved before the failure stays moved; nothing outside the context's
 * mappings is touched.  A copy or fill also yields between two steps once
 * the job's slice is over (a packet may move terabytes): job->moved says
 * how far it got, and the same packet run again goes on from there.
 */
#ifndef HDM_DMA_H
#define HDM_DMA_H

#include <stdint.h>

#include "hdm_job.h"
#include "hdm_pkt.h"

/* Bytes moved between two checks for cancellation; also the bounce buffer size. */
#define HDM_DMA_STEP (64u << 10)

enum hdm_pkt_status hdm_dma_copy(struct hdm_job *job, uint64_t dst, uint64_t src, uint64_t size);
enum hdm_pkt_status hdm_dma_fill(struct hdm_job *job, uint64_t dst, uint8_t value, uint64_t size);

/*
 * Small naturally aligned accesses (sync objects, timestamps, user-queue
 * descriptors): len is a power of two up to 32.
 */
int hdm_dma_load(struct hdm_job *job, uint64_t va, void *buf, uint32_t len);
int hdm_dma_store(struct hdm_job *job, uint64_t va, const void *buf, uint32_t len);

/* Read len bytes at va into buf (a user queue's command buffer): no cancellation check. */
int hdm_dma_read(struct hdm_job *job, uint64_t va, void *buf, uint64_t len);

#endif /* HDM_DMA_H */
