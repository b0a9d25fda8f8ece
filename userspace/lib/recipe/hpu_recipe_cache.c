/* SPDX-License-Identifier: MIT */
/*
 * The in-memory recipe cache of a device: an LRU list, most recently
 * launched first, of recipes found by their key's hash and then the whole
 * key (a hash collision can never launch the wrong recipe).  A hit skips
 * compilation and, if the tensors are where they were, the upload too.
 * Lookups walk the list: caches hold tens of recipes, and a hit is almost
 * always the first or second entry in a training loop.  The capacity is
 * HPU_RECIPE_CACHE_SIZE entries (or hpu_recipe_cache_set_capacity()); the key
 * is hpu_ir_key()'s.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../recipe/recipe.h"

#define HPU_RECIPE_CACHE_DEFAULT 64u

void hpu_recipe_cache_init(struct hpu_recipe_cache *c, uint32_t fw_version)
{
	static atomic_uint_fast64_t ids;

	pthread_mutex_init(&c->lock, NULL);
	hpu_list_init(&c->lru);
	c->count = 0;
	c->id = atomic_fetch_add(&ids, 1);
	c->capacity = hpu_env_uint("HPU_RECIPE_CACHE_SIZE", HPU_RECIPE_CACHE_DEFAULT);
	c->fw_version = fw_version;
	atomic_init(&c->call, 0);
	c->disk = NULL;
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

void hpu_recipe_cache_fini(struct hpu_recipe_cache *c)
{
	pthread_mutex_lock(&c->lock);
	hpu_recipe_cache_trim(c, 0, false);
	pthread_mutex_unlock(&c->lock);
	pthread_mutex_destroy(&c->lock);
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

int hpu_recipe_cache_set_capacity(struct hpu_device *dev, unsigned int capacity)
{
	if (!dev)
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "dev is NULL"));
	if (!capacity)
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "capacity is 0"));
	hpu_recipe_cache_resize(&dev->recipes, capacity);
	return 0;
}
