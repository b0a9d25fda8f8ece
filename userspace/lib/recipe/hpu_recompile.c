/* SPDX-License-Identifier: MIT */
/*
 * Telling a graph site that keeps recompiling, and why.
 *
 * A site is a graph's ops without their shapes: the same code path run on
 * other shapes is the same site, and each new shape compiles another
 * recipe.  A compilation of a key the site compiled before for the same
 * device's cache is a repeat: its recipe was evicted (or threads missed on
 * it at once), which a bigger cache cures and padding does not.  Per site,
 * process-wide, the keys it compiled and for which cache are kept; the
 * first time either count passes
 * HPU_RECOMPILE_WARN, one warning says which ops it is and what bounds it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../recipe/recipe.h"

#define HPU_RECOMPILE_WARN_DEFAULT 8u

/* A key a site compiled, and for which recipe cache (each device has its own). */
struct hpu_site_key {
	uint64_t key, cache;
};

struct hpu_site_count {
	uint64_t hash;
	struct hpu_site_key *keys;
	unsigned int num_keys, cap_keys;
	unsigned int shapes, repeats; /* keys new to the site; pairs it had compiled already */
};

static pthread_mutex_t hpu_sites_lock = PTHREAD_MUTEX_INITIALIZER; /* the table */
static struct hpu_site_count *hpu_sites;
static unsigned int hpu_num_sites, hpu_cap_sites;

/* A fork()'s child, another process, starts with no sites. */
void hpu_recompile_fork(enum hpu_fork_phase phase)
{
	unsigned int i;

	if (phase == HPU_FORK_PREPARE) {
		pthread_mutex_lock(&hpu_sites_lock);
		return;
	}
	if (phase == HPU_FORK_CHILD) {
		for (i = 0; i < hpu_num_sites; i++)
			free(hpu_sites[i].keys);
		free(hpu_sites);
		hpu_sites = NULL;
		hpu_num_sites = hpu_cap_sites = 0;
	}
	pthread_mutex_unlock(&hpu_sites_lock);
}

/*
 * Hashes a word of what makes a site: kernels, dtypes, ranks, args.  Not the
 * numbers: most are a recipe's parameters, so a site is the same code path
 * whatever values it runs with.
 */
static uint64_t hpu_mix(uint64_t h, uint64_t v)
{
	return hpu_fnv1a(h, &v, sizeof(v));
}

static uint64_t hpu_site_hash(const struct hpu_ir *ir)
{
	uint64_t h = HPU_FNV1A_INIT;
	unsigned int n, i;

	for (n = 0; n < ir->num_nodes; n++) {
		const struct hpu_op *op = &ir->nodes[n].op;

		h = hpu_mix(h, op->kernel);
		h = hpu_mix(h, op->num_tensors);
		for (i = 0; i < op->num_tensors; i++)
			h = hpu_mix(h, (uint64_t)op->l[i].dtype << 32 | op->l[i].ndim);
		for (i = 0; i < HPU_ARRAY_SIZE(op->args); i++)
			h = hpu_mix(h, (uint64_t)op->args[i]);
	}
	return h;
}

/*
 * Counts a compilation of key_hash for cache at the site; *shapes and
 * *repeats are the site's counts after it if it added to them, else 0.  A
 * key compiled for another cache (another device) is neither.
 */
static void hpu_site_count(uint64_t hash, uint64_t key_hash, uint64_t cache, unsigned int *shapes,
			   unsigned int *repeats)
{
	struct hpu_site_count *site;
	bool known = false;
	unsigned int i, k;

	*shapes = *repeats = 0;
	pthread_mutex_lock(&hpu_sites_lock);
	for (i = 0; i < hpu_num_sites && hpu_sites[i].hash != hash; i++)
		;
	if (i == hpu_num_sites) {
		if (hpu_array_grow((void **)&hpu_sites, &hpu_cap_sites, i + 1, sizeof(*hpu_sites)))
			goto unlock;
		hpu_sites[hpu_num_sites++] = (struct hpu_site_count){ .hash = hash };
	}
	site = &hpu_sites[i];
	for (k = 0; k < site->num_keys; k++) {
		if (site->keys[k].key != key_hash)
			continue;
		if (site->keys[k].cache == cache) {
			*repeats = ++site->repeats;
			goto unlock;
		}
		known = true;
	}
	if (hpu_array_grow((void **)&site->keys, &site->cap_keys, k + 1, sizeof(*site->keys)))
		goto unlock;
	site->keys[site->num_keys++] = (struct hpu_site_key){ key_hash, cache };
	if (!known)
		*shapes = ++site->shapes;
unlock:
	pthread_mutex_unlock(&hpu_sites_lock);
}

void hpu_recompile_note(const struct hpu_ir *ir, uint64_t key_hash, uint64_t cache)
{
	unsigned int limit = hpu_env_uint("HPU_RECOMPILE_WARN", HPU_RECOMPILE_WARN_DEFAULT);
	unsigned int shapes, repeats;
	uint64_t hash;

	if (!ir->num_nodes)
		return;
	hash = hpu_site_hash(ir);
	hpu_site_count(hash, key_hash, cache, &shapes, &repeats);
	if (repeats)
		hpu_counter_add(HPU_C_REPEATS, 1);
	if (shapes != limit + 1 && repeats != limit + 1)
		return;
	hpu_counter_add(HPU_C_RECOMPILE_WARNINGS, 1);
	if (shapes)
		fprintf(stderr,
			"libhpu: warning: graph site %016" PRIx64 " (%u ops, first %s, last %s) has "
			"compiled %u recipes, one per new shape (HPU_RECOMPILE_WARN=%u); pad dynamic "
			"dims to a few sizes (hpu_bucket_size(), hpu_tensor_pad() outside the graph)\n",
			hash, ir->num_nodes, ir->nodes[0].op.name,
			ir->nodes[ir->num_nodes - 1].op.name, shapes, limit);
	else
		fprintf(stderr,
			"libhpu: warning: graph site %016" PRIx64 " (%u ops, first %s, last %s) has "
			"compiled graphs it compiled before %u times (HPU_RECOMPILE_WARN=%u): their "
			"recipes were evicted; give the recipe cache more entries "
			"(HPU_RECIPE_CACHE_SIZE, hpu_recipe_cache_set_capacity())\n",
			hash, ir->num_nodes, ir->nodes[0].op.name,
			ir->nodes[ir->num_nodes - 1].op.name, repeats, limit);
}
