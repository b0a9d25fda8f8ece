/* SPDX-License-Identifier: MIT */
/* Growing arrays: a byte array that remembers a failed growth, and arrays of any element. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../util/util.h"

size_t hpu_bytes_put(struct hpu_bytes *b, const void *data, size_t len)
{
	size_t at = b->len;

	/* Nothing to add (an alignment already met): b->p may still be NULL, not memset's. */
	if (!len)
		return at;
	if (b->len + len > b->cap && !b->oom) {
		size_t cap = b->cap ? b->cap : 1024;
		uint8_t *p;

		while (cap < b->len + len)
			cap *= 2;
		p = realloc(b->p, cap);
		if (p) {
			b->p = p;
			b->cap = cap;
		} else {
			b->oom = true;
		}
	}
	if (b->oom)
		return at;
	if (data)
		memcpy(b->p + at, data, len);
	else
		memset(b->p + at, 0, len);
	b->len += len;
	return at;
}

void hpu_bytes_put_u64(struct hpu_bytes *b, uint64_t v)
{
	hpu_bytes_put(b, &v, sizeof(v));
}

void hpu_bytes_align(struct hpu_bytes *b, size_t align)
{
	hpu_bytes_put(b, NULL, hpu_round_up(b->len, align) - b->len);
}

int hpu_array_grow(void **p, unsigned int *cap, unsigned int need, size_t elem)
{
	unsigned int n = *cap ? *cap : 16;
	void *q;

	if (need <= *cap)
		return 0;
	while (n < need)
		n *= 2;
	q = realloc(*p, (size_t)n * elem);
	if (!q)
		return hpu_error_set(ENOMEM, "out of memory");
	*p = q;
	*cap = n;
	return 0;
}
