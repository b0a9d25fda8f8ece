/* SPDX-License-Identifier: MIT */
/*
 * hpu HBM: device memory backed lazily in 2 MiB host chunks, so untouched HBM
 * costs the host nothing and reads as zeros.
 *
 * An HBM is reference counted: a device reset swaps in a fresh one while a
 * job still running against the old one finishes its step harmlessly.
 * Chunks are published atomically, so any thread may read or write.
 */
#ifndef HPU_HBM_H
#define HPU_HBM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HPU_HBM_CHUNK_SHIFT 21
#define HPU_HBM_CHUNK_SIZE (1ull << HPU_HBM_CHUNK_SHIFT)

struct hpu_hbm;

/* size is a multiple of HPU_HBM_CHUNK_SIZE; one reference.  Aborts if the host is out of memory. */
struct hpu_hbm *hpu_hbm_new(uint64_t size);
struct hpu_hbm *hpu_hbm_get(struct hpu_hbm *hbm);
/* Drops a reference; the last one frees every chunk. */
void hpu_hbm_put(struct hpu_hbm *hbm);

uint64_t hpu_hbm_size(const struct hpu_hbm *hbm);
/* Host chunks allocated so far. */
size_t hpu_hbm_chunks(const struct hpu_hbm *hbm);

/*
 * Host pointer to HBM byte off (< size), with *avail set to the bytes from
 * there to the end of its chunk.  For reading, NULL means the chunk was never
 * written and reads as zeros; for writing, the chunk is allocated and NULL
 * means the host is out of memory.
 */
uint8_t *hpu_hbm_map(struct hpu_hbm *hbm, uint64_t off, bool write, uint64_t *avail);

/* Zero [off, off + len) without allocating chunks that are still untouched. */
void hpu_hbm_zero(struct hpu_hbm *hbm, uint64_t off, uint64_t len);

/* Little-endian u64 at off (8-byte aligned, < size). */
uint64_t hpu_hbm_ld64(struct hpu_hbm *hbm, uint64_t off);

#endif /* HPU_HBM_H */
