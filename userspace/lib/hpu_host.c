/* SPDX-License-Identifier: MIT */
/*
 * Pinned host memory.  The driver pins whole pages and maps them into the
 * device's address space (DRM_IOCTL_HPU_VM_MAP with handle 0).  Two kinds of
 * ranges are pinned: slabs of the pinned cache (hpu_host_alloc() and the
 * library's own staging buffers and sync slots), and the caller's memory
 * (hpu_host_register()).  A table of both, sorted by host address, turns a
 * host pointer into a device address for the copy functions.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <drm/hpu_accel.h>

#include "hpu_internal.h"

struct hpu_host_range {
	uintptr_t start, end; /* host bytes [start, end) */
	uint64_t va;          /* device address of start */
	uint64_t map_va;      /* the mapping of the pages around them */
	bool registered;      /* by hpu_host_register(), else a slab */
};

static const struct hpu_suballoc_config hpu_pinned_config = {
	.name = "pinned host memory",
	.granule = 64, /* a cache line: enough for every sync slot */
	.dedicated_align = HPU_PAGE_SIZE,
	.pools = {
		{ .max_request = 64 << 10, .slab_size = 1 << 20, .min_split = 64 },
		{ .max_request = UINT64_MAX, .slab_size = 8 << 20, .min_split = 64 << 10 },
	},
};

/* Pins and maps the pages holding [start, start + size). */
static int hpu_host_map(struct hpu_device *dev, uintptr_t start, uint64_t size,
			struct hpu_host_range *range)
{
	uintptr_t first = start & ~(uintptr_t)(HPU_PAGE_SIZE - 1);
	struct drm_hpu_vm_map args = {
		.size = hpu_round_up(start + size, HPU_PAGE_SIZE) - first,
		.user_ptr = first,
		.flags = DRM_HPU_VM_MAP_READ | DRM_HPU_VM_MAP_WRITE,
	};
	int ret;

	ret = hpu_ioctl(dev, DRM_IOCTL_HPU_VM_MAP, &args);
	if (ret)
		return ret;
	range->start = start;
	range->end = start + size;
	range->map_va = args.va;
	range->va = args.va + (start - first);
	return 0;
}

/* Unmapping fails only for a mapping that is not there: nothing to undo. */
static void hpu_host_unmap(struct hpu_device *dev, const struct hpu_host_range *range)
{
	struct drm_hpu_vm_unmap args = { .va = range->map_va };

	hpu_ioctl(dev, DRM_IOCTL_HPU_VM_UNMAP, &args);
}

/* Index of the first range that ends after addr (the one holding it, if any). */
static size_t hpu_host_search(const struct hpu_host_table *t, uintptr_t addr)
{
	size_t lo = 0, hi = t->count;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->ranges[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int hpu_host_insert(struct hpu_device *dev, const struct hpu_host_range *range)
{
	struct hpu_host_table *t = &dev->host;
	size_t i;
	int ret = 0;

	pthread_rwlock_wrlock(&t->lock);
	i = hpu_host_search(t, range->start);
	if (i < t->count && t->ranges[i].start < range->end) {
		ret = hpu_error_set(EEXIST, "%p..%p overlaps pinned memory at %p..%p",
				    (void *)range->start, (void *)range->end,
				    (void *)t->ranges[i].start, (void *)t->ranges[i].end);
	} else if (t->count == t->capacity) {
		size_t capacity = t->capacity ? 2 * t->capacity : 16;
		struct hpu_host_range *ranges = realloc(t->ranges, capacity * sizeof(*ranges));

		if (ranges) {
			t->ranges = ranges;
			t->capacity = capacity;
		} else {
			ret = hpu_error_set(ENOMEM, "out of memory");
		}
	}
	if (!ret) {
		memmove(&t->ranges[i + 1], &t->ranges[i], (t->count - i) * sizeof(*range));
		t->ranges[i] = *range;
		t->count++;
	}
	pthread_rwlock_unlock(&t->lock);
	return ret;
}

/* Takes the range starting at start out of the table, if it is of the kind asked for. */
static bool hpu_host_remove(struct hpu_device *dev, uintptr_t start, bool registered,
			    struct hpu_host_range *range)
{
	struct hpu_host_table *t = &dev->host;
	bool found;
	size_t i;

	pthread_rwlock_wrlock(&t->lock);
	i = hpu_host_search(t, start);
	found = i < t->count && t->ranges[i].start == start &&
		t->ranges[i].registered == registered;
	if (found) {
		*range = t->ranges[i];
		t->count--;
		memmove(&t->ranges[i], &t->ranges[i + 1], (t->count - i) * sizeof(*range));
	}
	pthread_rwlock_unlock(&t->lock);
	return found;
}

/* The range holding [ptr, ptr + size), if one does. */
static bool hpu_host_find(struct hpu_device *dev, const void *ptr, size_t size,
			  struct hpu_host_range *range)
{
	struct hpu_host_table *t = &dev->host;
	uintptr_t addr = (uintptr_t)ptr;
	bool found;
	size_t i;

	pthread_rwlock_rdlock(&t->lock);
	i = hpu_host_search(t, addr);
	found = i < t->count && t->ranges[i].start <= addr && size <= t->ranges[i].end - addr;
	if (found)
		*range = t->ranges[i];
	pthread_rwlock_unlock(&t->lock);
	return found;
}

bool hpu_host_lookup(struct hpu_device *dev, const void *ptr, size_t size, uint64_t *va)
{
	struct hpu_host_range range;

	if (!hpu_host_find(dev, ptr, size, &range))
		return false;
	*va = range.va + ((uintptr_t)ptr - range.start);
	return true;
}

/* The pinned cache's backend: anonymous pages, pinned and mapped. */
static int hpu_pinned_slab_create(void *ctx, uint64_t size, struct hpu_slab_map *map)
{
	struct hpu_device *dev = ctx;
	struct hpu_host_range range = { 0 };
	void *host;
	int ret;

	host = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (host == MAP_FAILED)
		return hpu_error_errno("cannot map %llu bytes of host memory",
				       (unsigned long long)size);
	ret = hpu_host_map(dev, (uintptr_t)host, size, &range);
	if (!ret) {
		ret = hpu_host_insert(dev, &range);
		if (ret)
			hpu_host_unmap(dev, &range);
	}
	if (ret) {
		munmap(host, size);
		return ret;
	}
	*map = (struct hpu_slab_map){ .va = range.va, .host = host };
	return 0;
}

static void hpu_pinned_slab_destroy(void *ctx, uint64_t size, const struct hpu_slab_map *map)
{
	struct hpu_device *dev = ctx;
	struct hpu_host_range range;

	if (hpu_host_remove(dev, (uintptr_t)map->host, false, &range))
		hpu_host_unmap(dev, &range);
	munmap(map->host, size);
}

static const struct hpu_suballoc_ops hpu_pinned_ops = {
	.slab_create = hpu_pinned_slab_create,
	.slab_destroy = hpu_pinned_slab_destroy,
	.fence = hpu_jobs_fence,
	.retired = hpu_jobs_retired,
};

int hpu_host_init(struct hpu_device *dev)
{
	int ret;

	dev->host = (struct hpu_host_table){ 0 };
	pthread_rwlock_init(&dev->host.lock, NULL);
	ret = hpu_suballoc_create(&hpu_pinned_config, &hpu_pinned_ops, dev, &dev->pinned);
	if (ret)
		pthread_rwlock_destroy(&dev->host.lock);
	return ret;
}

void hpu_host_fini(struct hpu_device *dev)
{
	size_t i;

	hpu_suballoc_destroy(dev->pinned);
	/* What is left was registered by the caller. */
	for (i = 0; i < dev->host.count; i++)
		hpu_host_unmap(dev, &dev->host.ranges[i]);
	free(dev->host.ranges);
	pthread_rwlock_destroy(&dev->host.lock);
}

int hpu_pinned_alloc(struct hpu_device *dev, uint64_t size, uint64_t *va, void **host)
{
	return hpu_suballoc_alloc(dev->pinned, size, va, host);
}

void hpu_pinned_free(struct hpu_device *dev, uint64_t va)
{
	/* Addresses of hpu_pinned_alloc() cannot be refused. */
	hpu_suballoc_free(dev->pinned, va);
}

static int hpu_host_check(struct hpu_device *dev, const void *ptr, const char *ptr_name)
{
	if (!dev)
		return hpu_error_set(EINVAL, "dev is NULL");
	if (!ptr)
		return hpu_error_set(EINVAL, "%s is NULL", ptr_name);
	return hpu_device_check_submission(dev);
}

int hpu_host_alloc(struct hpu_device *dev, size_t size, void **ptr)
{
	uint64_t va;
	void *host = NULL;
	int ret;

	ret = hpu_host_check(dev, ptr, "ptr");
	if (!ret && size)
		ret = hpu_suballoc_alloc(dev->pinned, size, &va, &host);
	if (!ret)
		*ptr = host;
	return hpu_error_in(__func__, ret);
}

int hpu_host_free(struct hpu_device *dev, void *ptr)
{
	struct hpu_host_range range;
	int ret;

	if (!ptr)
		return 0;
	ret = hpu_host_check(dev, ptr, "ptr");
	if (!ret && !hpu_host_find(dev, ptr, 1, &range))
		ret = hpu_error_set(EINVAL, "%p is not pinned host memory", ptr);
	else if (!ret && range.registered)
		ret = hpu_error_set(EINVAL, "%p is registered, not allocated: unregister it", ptr);
	else if (!ret)
		ret = hpu_suballoc_free(dev->pinned, range.va + ((uintptr_t)ptr - range.start));
	return hpu_error_in(__func__, ret);
}

static int hpu_host_register_range(struct hpu_device *dev, void *ptr, size_t size)
{
	struct hpu_host_range range = { .registered = true };
	int ret;

	if ((uintptr_t)ptr + size < (uintptr_t)ptr)
		return hpu_error_set(EINVAL, "%p + %zu wraps around", ptr, size);
	/* Overlaps are found on insertion, under the table's lock. */
	ret = hpu_host_map(dev, (uintptr_t)ptr, size, &range);
	if (ret)
		return ret;
	ret = hpu_host_insert(dev, &range);
	if (ret)
		hpu_host_unmap(dev, &range);
	return ret;
}

int hpu_host_register(struct hpu_device *dev, void *ptr, size_t size)
{
	int ret;

	ret = hpu_host_check(dev, ptr, "ptr");
	if (!ret && !size)
		ret = hpu_error_set(EINVAL, "size is 0");
	if (!ret)
		ret = hpu_host_register_range(dev, ptr, size);
	return hpu_error_in(__func__, ret);
}

int hpu_host_unregister(struct hpu_device *dev, void *ptr)
{
	struct hpu_host_range range;
	int ret;

	ret = hpu_host_check(dev, ptr, "ptr");
	if (!ret && !(hpu_host_find(dev, ptr, 1, &range) && range.registered &&
		      range.start == (uintptr_t)ptr))
		ret = hpu_error_set(EINVAL, "%p is not the start of registered memory", ptr);
	if (ret)
		return hpu_error_in(__func__, ret);
	/* The device must be done with the pages before they are unpinned. */
	hpu_jobs_retired(dev, HPU_RETIRE_WAIT);
	if (hpu_host_remove(dev, (uintptr_t)ptr, true, &range))
		hpu_host_unmap(dev, &range);
	return 0;
}

int hpu_host_get_device_pointer(struct hpu_device *dev, const void *ptr, uint64_t *devptr)
{
	uint64_t va = 0;
	int ret;

	ret = hpu_host_check(dev, ptr, "ptr");
	if (!ret && !devptr)
		ret = hpu_error_set(EINVAL, "devptr is NULL");
	if (!ret && !hpu_host_lookup(dev, ptr, 1, &va))
		ret = hpu_error_set(ENOENT, "%p is not pinned host memory", ptr);
	if (!ret)
		*devptr = va;
	return hpu_error_in(__func__, ret);
}
