/* SPDX-License-Identifier: MIT */
/*
 * hpu HBM: one MAP_NORESERVE anonymous mapping (the host kernel backs a page
 * on first write and maps its zero page on a read) plus a bitmap of touched
 * chunks, which keeps zeroing of untouched HBM free and says what HBM costs.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "hdm_hbm.h"
#include "hdm_le.h"

#define HDM_HBM_WORD_BITS 64

struct hdm_hbm {
	uint64_t size;
	unsigned int refs;   /* __atomic */
	size_t nr_touched;   /* __atomic */
	uint8_t *base;
	uint64_t *touched;   /* a bit per chunk, set with __atomic */
};

struct hdm_hbm *hdm_hbm_new(uint64_t size)
{
	uint64_t chunks = size >> HDM_HBM_CHUNK_SHIFT;
	struct hdm_hbm *hbm = calloc(1, sizeof(*hbm));

	if (!hbm)
		return NULL;
	/* A bit per 2 MiB, and address space: a reset asks again, so a refusal is no crash. */
	hbm->touched = calloc((chunks + HDM_HBM_WORD_BITS - 1) / HDM_HBM_WORD_BITS,
			      sizeof(*hbm->touched));
	hbm->base = mmap(NULL, size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (!hbm->touched || hbm->base == MAP_FAILED) {
		if (hbm->base != MAP_FAILED)
			munmap(hbm->base, size);
		free(hbm->touched);
		free(hbm);
		return NULL;
	}
	hbm->size = size;
	hbm->refs = 1;
	return hbm;
}

struct hdm_hbm *hdm_hbm_get(struct hdm_hbm *hbm)
{
	__atomic_add_fetch(&hbm->refs, 1, __ATOMIC_RELAXED);
	return hbm;
}

void hdm_hbm_put(struct hdm_hbm *hbm)
{
	if (__atomic_sub_fetch(&hbm->refs, 1, __ATOMIC_ACQ_REL))
		return;
	munmap(hbm->base, hbm->size);
	free(hbm->touched);
	free(hbm);
}

uint64_t hdm_hbm_size(const struct hdm_hbm *hbm)
{
	return hbm->size;
}

size_t hdm_hbm_chunks(const struct hdm_hbm *hbm)
{
	return __atomic_load_n(&hbm->nr_touched, __ATOMIC_RELAXED);
}

static bool hdm_hbm_touched(const struct hdm_hbm *hbm, uint64_t chunk)
{
	uint64_t word = __atomic_load_n(&hbm->touched[chunk / HDM_HBM_WORD_BITS], __ATOMIC_RELAXED);

	return word & (1ull << (chunk % HDM_HBM_WORD_BITS));
}

static void hdm_hbm_touch(struct hdm_hbm *hbm, uint64_t chunk)
{
	uint64_t bit = 1ull << (chunk % HDM_HBM_WORD_BITS);

	if (hdm_hbm_touched(hbm, chunk))
		return;
	if (!(__atomic_fetch_or(&hbm->touched[chunk / HDM_HBM_WORD_BITS], bit, __ATOMIC_RELAXED) &
	      bit))
		__atomic_add_fetch(&hbm->nr_touched, 1, __ATOMIC_RELAXED);
}

uint8_t *hdm_hbm_map(struct hdm_hbm *hbm, uint64_t off, bool write, uint64_t *avail)
{
	uint64_t chunk = off >> HDM_HBM_CHUNK_SHIFT;

	*avail = HDM_HBM_CHUNK_SIZE - (off & (HDM_HBM_CHUNK_SIZE - 1));
	if (write)
		hdm_hbm_touch(hbm, chunk);
	else if (!hdm_hbm_touched(hbm, chunk))
		return NULL;
	return hbm->base + off;
}

uint8_t *hdm_hbm_span(struct hdm_hbm *hbm, uint64_t off, uint64_t len, bool write)
{
	uint64_t chunk;

	if (write)
		for (chunk = off >> HDM_HBM_CHUNK_SHIFT; chunk <= (off + len - 1) >> HDM_HBM_CHUNK_SHIFT;
		     chunk++)
			hdm_hbm_touch(hbm, chunk);
	return hbm->base + off;
}

void hdm_hbm_zero(struct hdm_hbm *hbm, uint64_t off, uint64_t len)
{
	while (len) {
		uint64_t avail;
		uint8_t *p = hdm_hbm_map(hbm, off, false, &avail);
		uint64_t n = len < avail ? len : avail;

		if (p)
			memset(p, 0, n);
		off += n;
		len -= n;
	}
}

uint64_t hdm_hbm_ld64(struct hdm_hbm *hbm, uint64_t off)
{
	uint64_t avail;
	const uint8_t *p = hdm_hbm_map(hbm, off, false, &avail);

	return p ? hdm_ld_le64(p) : 0;
}
