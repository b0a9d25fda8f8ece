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
#ifndef HDM_HBM_H
#define HDM_HBM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HDM_HBM_CHUNK_SHIFT 21
#define HDM_HBM_CHUNK_SIZE (1ull << HDM_HBM_CHUNK_SHIFT)

struct hdm_hbm;

/* size is a multiple of HDM_HBM_CHUNK_SIZE; one reference, or NULL if the host has no room. */
struct hdm_hbm *hdm_hbm_new(uint64_t size);
struct hdm_hbm *hdm_hbm_get(struct hdm_hbm *hbm);
/* Drops a reference; the last one gives every page back. */
void hdm_hbm_put(struct hdm_hbm *hbm);

uint64_t hdm_hbm_size(const struct hdm_hbm *hbm);
/* Chunks touched so far. */
size_t hdm_hbm_chunks(const struct hdm_hbm *hbm);

/*
 * Host pointer to HBM byte off (< size), with *avail set to the bytes from
 * there to the end of its chunk.  For reading, NULL means the chunk was never
 * touched and reads as zeros; for writing, the chunk becomes touched and the
 * pointer is never NULL.
 */
uint8_t *hdm_hbm_map(struct hdm_hbm *hbm, uint64_t off, bool write, uint64_t *avail);

/*
 * Host pointer to all of HBM [off, off + len) (inside HBM, len > 0).  Writing
 * touches its chunks; reading an untouched one sees the host's zero pages.
 */
uint8_t *hdm_hbm_span(struct hdm_hbm *hbm, uint64_t off, uint64_t len, bool write);

/* Zero [off, off + len) without touching chunks that are still untouched. */
void hdm_hbm_zero(struct hdm_hbm *hbm, uint64_t off, uint64_t len);

/* Little-endian u64 at off (8-byte aligned, < size). */
uint64_t hdm_hbm_ld64(struct hdm_hbm *hbm, uint64_t off);

#endif /* HDM_HBM_H */
