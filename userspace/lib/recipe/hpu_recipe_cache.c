/* SPDX-License-Identifier: MIT */
/*
 * A device's recipe caches (dev->recipes, made at open), and where a sealed
 * graph's recipe comes from: memory, then the disk cache (hpu_disk_cache.c),
 * then the compiler, whose recipe both caches keep.
 *
 * The memory cache is an LRU list, most recently launched first, of
 * recipes found by their key's hash and then the whole key (a hash
 * collision can never launch the wrong recipe).  A hit skips compilation
 * and, if the tensors are where they were, the upload too.  Lookups walk
 * the list: caches hold tens of recipes, and a hit is almost always the
 * first or second entry in a training loop.  The capacity is
 * HPU_RECIPE_CACHE_SIZE entries (or hpu_recipe_cache_set_capacity()); the
 * key is hpu_ir_key()'s.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../recipe/recipe.h"

#define HPU_RECIPE_CACHE_DEFAULT 64u

int hpu_recipe_cache_create(struct hpu_device *dev, uint32_t fw_version,
			    struct hpu_disk_cache *disk)
{
	static atomic_uint_fast64_t ids;
	struct hpu_recipe_cache *c = calloc(1, sizeof(*c));

	if (!c) {
		hpu_disk_cache_close(disk);
		return hpu_error_set(ENOMEM, "out of memory");
	}
	pthread_mutex_init(&c->lock, NULL);
	hpu_list_init(&c->lru);
	c->id = atomic_fetch_add(&ids, 1);
	c->capacity = hpu_env_uint("HPU_RECIPE_CACHE_SIZE", HPU_RECIPE_CACHE_DEFAULT);
	c->fw_version = fw_version;
	atomic_init(&c->call, 0);
	c->disk = disk;
	dev->recipes = c;
	return 0;
}

/* What a recipe file must have been compiled for besides its key (hpu_disk_cache.c). */
static struct hpu_disk_compat hpu_disk_compat_of(const struct hpu_device_info *info,
						 uint32_t fw_version)
{
	return (struct hpu_disk_compat){
		.abi_version = info->abi_version.major << 16 | info->abi_version.minor,
		.fw_version = fw_version,
		.fw_if_version = info->fw_if_version.major << 16 | info->fw_if_version.minor,
		.hw_revision = info->hw_revision,
		.pci_revision = info->pci_revision,
		.pci_id = (uint32_t)info->pci_vendor_id << 16 | info->pci_device_id,
		.num_dma = info->num_dma_engines,
		.num_mme = info->num_mme_engines,
		.num_tpc = info->num_tpc_engines,
		.num_queues = info->num_queues,
		.capabilities_lo = (uint32_t)info->capabilities,
		.capabilities_hi = (uint32_t)(info->capabilities >> 32),
	};
}

int hpu_recipe_cache_init(struct hpu_device *dev, const struct hpu_device_info *info)
{
	uint32_t fw = info->fw_version.major << 16 | info->fw_version.minor << 8 |
		      info->fw_version.patch;
	struct hpu_disk_compat compat = hpu_disk_compat_of(info, fw);

	return hpu_recipe_cache_create(dev, fw, hpu_disk_cache_from_env(&compat));
}

/* With the lock held: drops the least recent recipes beyond capacity (more may run still). */
static void hpu_recipe_cache_trim(struct hpu_recipe_cache *c, unsigned int capacity, bool evict)
{
	while (c->count > capacity) {
		struct hpu_recipe *r = hpu_container_of(c->lru.prev, struct hpu_recipe, lru);

		hpu_list_del(&r->lru);
		c->count--;
		hpu_counter_add(HPU_C_ENTRIES, -1);
		if (evict)
			hpu_counter_add(HPU_C_EVICTIONS, 1);
		hpu_recipe_put(r);
	}
}

void hpu_recipe_cache_fini(struct hpu_device *dev)
{
	struct hpu_recipe_cache *c = dev->recipes;

	/* Its queued writes hold recipes, which must go while the device is open. */
	hpu_disk_cache_close(c->disk);
	pthread_mutex_lock(&c->lock);
	hpu_recipe_cache_trim(c, 0, false);
	pthread_mutex_unlock(&c->lock);
	pthread_mutex_destroy(&c->lock);
	free(c);
	dev->recipes = NULL;
}

/* With the lock held: the recipe of this key, made the most recent; NULL if none. */
static struct hpu_recipe *hpu_recipe_cache_lookup_locked(struct hpu_recipe_cache *c, uint64_t hash,
							 const uint8_t *key, size_t size)
{
	struct hpu_list *it;

	for (it = c->lru.next; it != &c->lru; it = it->next) {
		struct hpu_recipe *r = hpu_container_of(it, struct hpu_recipe, lru);

		if (r->hash == hash && r->key_size == size && !memcmp(r->key, key, size)) {
			hpu_list_del(&r->lru);
			hpu_list_add_tail(c->lru.next, &r->lru);
			return r;
		}
	}
	return NULL;
}

struct hpu_recipe *hpu_recipe_cache_find(struct hpu_recipe_cache *c, uint64_t hash,
					 const uint8_t *key, size_t size)
{
	struct hpu_recipe *found;

	pthread_mutex_lock(&c->lock);
	found = hpu_recipe_cache_lookup_locked(c, hash, key, size);
	if (found)
		hpu_recipe_get(found);
	pthread_mutex_unlock(&c->lock);
	hpu_counter_add(found ? HPU_C_HITS : HPU_C_MISSES, 1);
	return found;
}

/*
 * Threads that missed on one key at once each compile it and insert: the
 * first insert is kept, so a key has one entry and the cache's capacity
 * counts recipes, not races.  The others' recipes live on with their users.
 */
void hpu_recipe_cache_insert(struct hpu_recipe_cache *c, struct hpu_recipe *r)
{
	pthread_mutex_lock(&c->lock);
	if (hpu_recipe_cache_lookup_locked(c, r->hash, r->key, r->key_size)) {
		pthread_mutex_unlock(&c->lock);
		return;
	}
	hpu_recipe_get(r);
	/* Before the first entry: the front of the list. */
	hpu_list_add_tail(c->lru.next, &r->lru);
	c->count++;
	hpu_counter_add(HPU_C_ENTRIES, 1);
	hpu_recipe_cache_trim(c, c->capacity, true);
	pthread_mutex_unlock(&c->lock);
}

void hpu_recipe_cache_resize(struct hpu_recipe_cache *c, unsigned int capacity)
{
	pthread_mutex_lock(&c->lock);
	c->capacity = capacity;
	hpu_recipe_cache_trim(c, capacity, true);
	pthread_mutex_unlock(&c->lock);
}

static int hpu_ir_compile(struct hpu_device *dev, const struct hpu_ir *g,
			  const struct hpu_compile_config *cfg, uint64_t hash, struct hpu_recipe **rp)
{
	uint64_t start = hpu_now_ns();
	int ret;

	ret = hpu_compile(g, cfg, rp);
	if (ret)
		return ret;
	hpu_counter_add(HPU_C_COMPILES, 1);
	hpu_recompile_note(g, hash, dev->recipes->id);
	hpu_counter_add(HPU_C_COMPILE_NS, (int64_t)(hpu_now_ns() - start));
	return 0;
}

/* Memory, then disk, then compile; a compiled recipe goes to both caches. */
int hpu_ir_recipe(struct hpu_device *dev, const struct hpu_ir *g, struct hpu_recipe **rp)
{
	const struct hpu_compile_config cfg = {
		.engines = dev->num_queues < HPU_GRAPH_MAX_ENGINES ? dev->num_queues
								   : HPU_GRAPH_MAX_ENGINES,
		.fw_version = dev->recipes->fw_version,
		.fit_engines = true,
	};
	uint64_t hash;
	uint8_t *key;
	size_t size;
	bool compiled;
	int ret;

	ret = hpu_ir_key(g, &cfg, &key, &size, &hash);
	if (ret)
		return ret;
	*rp = hpu_recipe_cache_find(dev->recipes, hash, key, size);
	if (*rp) {
		hpu_disk_cache_touch(dev->recipes->disk, *rp);
		free(key);
		return 0;
	}
	ret = hpu_disk_cache_load(dev->recipes->disk, key, size, rp);
	compiled = !ret && !*rp;
	if (compiled)
		ret = hpu_ir_compile(dev, g, &cfg, hash, rp);
	if (ret) {
		free(key);
		return ret;
	}
	(*rp)->hash = hash;
	(*rp)->key = key;
	(*rp)->key_size = size;
	(*rp)->disk_used_ns = hpu_now_ns();
	hpu_recipe_cache_insert(dev->recipes, *rp);
	if (compiled)
		hpu_disk_cache_store(dev->recipes->disk, *rp);
	return 0;
}

int hpu_recipe_cache_set_capacity(struct hpu_device *dev, unsigned int capacity)
{
	if (!dev)
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "dev is NULL"));
	if (!capacity)
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "capacity is 0"));
	hpu_recipe_cache_resize(dev->recipes, capacity);
	return 0;
}
