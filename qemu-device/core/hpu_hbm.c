/* SPDX-License-Identifier: MIT */
/*
 * hpu HBM: a table of lazily allocated 2 MiB chunks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "hpu_hbm.h"
#include "hpu_le.h"

struct hpu_hbm {
	uint64_t size;
	unsigned int refs;   /* __atomic */
	size_t nr_allocated; /* __atomic */
	uint8_t **chunks;    /* size >> HPU_HBM_CHUNK_SHIFT entries, each published with __atomic */
};

struct hpu_hbm *hpu_hbm_new(uint64_t size)
{
	struct hpu_hbm *hbm = calloc(1, sizeof(*hbm));

	/* Like QEMU's g_malloc(): a few bytes per 2 MiB of HBM, nothing a guest controls. */
	if (hbm)
		hbm->chunks = calloc(size >> HPU_HBM_CHUNK_SHIFT, sizeof(*hbm->chunks));
	if (!hbm || !hbm->chunks) {
		fprintf(stderr, "hpu: out of memory for the HBM chunk table\n");
		abort();
	}
	hbm->size = size;
	hbm->refs = 1;
	return hbm;
}

struct hpu_hbm *hpu_hbm_get(struct hpu_hbm *hbm)
{
	__atomic_add_fetch(&hbm->refs, 1, __ATOMIC_RELAXED);
	return hbm;
}

void hpu_hbm_put(struct hpu_hbm *hbm)
{
	size_t i;

	if (__atomic_sub_fetch(&hbm->refs, 1, __ATOMIC_ACQ_REL))
		return;
	for (i = 0; i < hbm->size >> HPU_HBM_CHUNK_SHIFT; i++)
		if (hbm->chunks[i])
			munmap(hbm->chunks[i], HPU_HBM_CHUNK_SIZE);
	free(hbm->chunks);
	free(hbm);
}

uint64_t hpu_hbm_size(const struct hpu_hbm *hbm)
{
	return hbm->size;
}

size_t hpu_hbm_chunks(const struct hpu_hbm *hbm)
{
	return __atomic_load_n(&hbm->nr_allocated, __ATOMIC_RELAXED);
}

/* Anonymous mappings are zero-filled page by page on first touch: a chunk costs what is written. */
static uint8_t *hpu_hbm_alloc(struct hpu_hbm *hbm, uint8_t **slot)
{
	uint8_t *fresh = mmap(NULL, HPU_HBM_CHUNK_SIZE, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	uint8_t *old = NULL;

	if (fresh == MAP_FAILED)
		return NULL;
	if (__atomic_compare_exchange_n(slot, &old, fresh, false, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE)) {
		__atomic_add_fetch(&hbm->nr_allocated, 1, __ATOMIC_RELAXED);
		return fresh;
	}
	/* Another thread published this chunk first. */
	munmap(fresh, HPU_HBM_CHUNK_SIZE);
	return old;
}

uint8_t *hpu_hbm_map(struct hpu_hbm *hbm, uint64_t off, bool write, uint64_t *avail)
{
	uint8_t **slot = &hbm->chunks[off >> HPU_HBM_CHUNK_SHIFT];
	uint64_t in_chunk = off & (HPU_HBM_CHUNK_SIZE - 1);
	uint8_t *chunk = __atomic_load_n(slot, __ATOMIC_ACQUIRE);

	*avail = HPU_HBM_CHUNK_SIZE - in_chunk;
	if (!chunk && write)
		chunk = hpu_hbm_alloc(hbm, slot);
	return chunk ? chunk + in_chunk : NULL;
}

void hpu_hbm_zero(struct hpu_hbm *hbm, uint64_t off, uint64_t len)
{
	while (len) {
		uint64_t avail;
		uint8_t *p = hpu_hbm_map(hbm, off, false, &avail);
		uint64_t n = len < avail ? len : avail;

		if (p)
			memset(p, 0, n);
		off += n;
		len -= n;
	}
}

uint64_t hpu_hbm_ld64(struct hpu_hbm *hbm, uint64_t off)
{
	uint64_t avail;
	const uint8_t *p = hpu_hbm_map(hbm, off, false, &avail);

	return p ? hpu_ld_le64(p) : 0;
}
