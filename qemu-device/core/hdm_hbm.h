/* SPDX-License-Identifier: MIT */
/*
 * hpu HBM: device memory as one contiguous host mapping backed lazily by the
 * host kernel, so untouched HBM costs the host nothing and reads as zeros,
 * and a range of consecutive HBM is one host pointer the engines compute on.
 * HBM is still accounted in 2 MiB chunks: a chunk counts as touched once
 * something was given a pointer to write into it.
 *
 * An HBM is reference counted: a device reset swaps in a fresh one while a
 * job still running against the old one finishes its step harmlessly.  Any
 * thread may read or write.
 */
#ifndef HPU_HBM_H
#define HPU_HBM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HPU_HBM_CHUNK_SHIFT 21
#define HPU_HBM_CHUNK_SIZE (1ull << HPU_HBM_CHUNK_SHIFT)

struct hpu_hbm;

/* size is a multiple of HPU_HBM_CHUNK_SIZE; one reference, or NULL if the host has no room. */
struct hpu_hbm *hpu_hbm_new(uint64_t size);
struct hpu_hbm *hpu_hbm_get(struct hpu_hbm *hbm);
/* Drops a reference; the last one gives every page back. */
void hpu_hbm_put(struct hpu_hbm *hbm);

uint64_t hpu_hbm_size(const struct hpu_hbm *hbm);
/* Chunks touched so far. */
size_t hpu_hbm_chunks(const struct hpu_hbm *hbm);

/*
 * Host pointer to HBM byte off (< size), with *avail set to the bytes from
 * there to the end of its chunk.  For reading, NULL means the chunk was never
 * touched and reads as zeros; for writing, the chunk becomes touched and the
 * pointer is never NULL.
 */
uint8_t *hpu_hbm_map(struct hpu_hbm *hbm, uint64_t off, bool write, uint64_t *avail);

/*
 * Host pointer to all of HBM [off, off + len) (inside HBM, len > 0).  Writing
 * touches its chunks; reading an untouched one sees the host's zero pages.
 */
uint8_t *hpu_hbm_span(struct hpu_hbm *hbm, uint64_t off, uint64_t len, bool write);

/* Zero [off, off + len) without touching chunks that are still untouched. */
void hpu_hbm_zero(struct hpu_hbm *hbm, uint64_t off, uint64_t len);

/* Little-endian u64 at off (8-byte aligned, < size). */
uint64_t hpu_hbm_ld64(struct hpu_hbm *hbm, uint64_t off);

#endif /* HPU_HBM_H */
