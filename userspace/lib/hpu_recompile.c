/* SPDX-License-Identifier: MIT */
/*
 * Telling a graph site that keeps recompiling.
 *
 * A site is a graph's ops without their shapes: the same code path run on
 * other shapes is the same site, and each new shape compiles another
 * recipe.  The count of compilations per site is kept process-wide; the
 * first time a site passes HPU_RECOMPILE_WARN, one warning says which
 * ops it is and how to bound it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hpu_internal.h"

#define HPU_RECOMPILE_WARN_DEFAULT 8u

struct hpu_site_count {
	uint64_t hash;
	unsigned int compiles;
};

static pthread_mutex_t hpu_sites_lock = PTHREAD_MUTEX_INITIALIZER; /* the table */
static struct hpu_site_count *hpu_sites;
static unsigned int hpu_num_sites, hpu_cap_sites;

/* Hashes a word of what makes a site: kernels, dtypes, ranks, args, scalars. */
static uint64_t hpu_mix(uint64_t h, uint64_t v)
{
	return hpu_fnv1a(h, &v, sizeof(v));
}

static uint64_t hpu_site_hash(const struct hpu_ir *ir)
{
	uint64_t h = HPU_FNV1A_INIT, bits;
	unsigned int n, i;

	for (n = 0; n < ir->num_nodes; n++) {
		const struct hpu_op *op = &ir->nodes[n].op;

		h = hpu_mix(h, op->kernel);
		h = hpu_mix(h, op->num_tensors);
		for (i = 0; i < op->num_tensors; i++)
			h = hpu_mix(h, (uint64_t)op->l[i].dtype << 32 | op->l[i].ndim);
		for (i = 0; i < HPU_ARRAY_SIZE(op->args); i++)
			h = hpu_mix(h, (uint64_t)op->args[i]);
		for (i = 0; i < HPU_ARRAY_SIZE(op->scalars); i++) {
			memcpy(&bits, &op->scalars[i], sizeof(bits));
			h = hpu_mix(h, bits);
		}
	}
	return h;
}

/* The site's count after this compilation; 0 if the table could not grow. */
static unsigned int hpu_site_count(uint64_t hash)
{
	unsigned int i, count = 0;

	pthread_mutex_lock(&hpu_sites_lock);
	for (i = 0; i < hpu_num_sites && hpu_sites[i].hash != hash; i++)
		;
	if (i == hpu_num_sites &&
	    !hpu_array_grow((void **)&hpu_sites, &hpu_cap_sites, i + 1, sizeof(*hpu_sites)))
		hpu_sites[hpu_num_sites++] = (struct hpu_site_count){ .hash = hash };
	if (i < hpu_num_sites)
		count = ++hpu_sites[i].compiles;
	pthread_mutex_unlock(&hpu_sites_lock);
	return count;
}

void hpu_recompile_note(const struct hpu_ir *ir)
{
	unsigned int limit = hpu_env_uint("HPU_RECOMPILE_WARN", HPU_RECOMPILE_WARN_DEFAULT);
	uint64_t hash;

	if (!ir->num_nodes)
		return;
	hash = hpu_site_hash(ir);
	if (hpu_site_count(hash) != limit + 1)
		return;
	hpu_counter_add(HPU_C_RECOMPILE_WARNINGS, 1);
	fprintf(stderr,
		"libhpu: warning: graph site %016" PRIx64 " (%u ops, first %s, last %s) has "
		"compiled %u recipes, one per new shape (HPU_RECOMPILE_WARN=%u); pad dynamic "
		"dims to a few sizes (hpu_bucket_size(), hpu_tensor_pad() outside the graph)\n",
		hash, ir->num_nodes, ir->nodes[0].op.name, ir->nodes[ir->num_nodes - 1].op.name,
		limit + 1, limit);
}
