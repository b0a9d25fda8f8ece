/* SPDX-License-Identifier: MIT */
/*
 * Pinned host memory.  The driver pins whole pages and maps them into the
 * device's address space (DRM_IOCTL_HPU_VM_MAP with handle 0).  Two kinds of
 * ranges are pinned: slabs of the pinned cache (hpu_host_alloc() and the
 * library's own staging buffers and sync slots), and the caller's memory
 * (hpu_host_register()).  A table of both, sorted by host address, turns a
 * host pointer into a device address for the copy functions.
 *
 * The driver charges every pin against the process's RLIMIT_MEMLOCK (8 MiB
 * for an ordinary user by default) unless it has CAP_IPC_LOCK, so the
 * cache's slabs and the device's staging buffer are sized from that limit:
 * a device open with several streams, events and user queues must fit in
 * it with room to spare for the caller's own pinned memory
 * (hpu_pinned_sizes()).  A pin past the limit fails with -ENOMEM and a
 * message giving the limit, what the process has pinned (VmPin) and what
 * was asked; a registration first gives back the cache's unused slabs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/capability.h>

#include <drm/hpu_accel.h>

#include "../mem/mem.h"

struct hpu_host_range {
	uintptr_t start, end; /* host bytes [start, end) */
	uint64_t va;          /* device address of start */
	uint64_t map_va;      /* the mapping of the pages around them */
	bool registered;      /* by hpu_host_register(), else a slab */
};

/* Bytes the process may pin: UINT64_MAX if RLIMIT_MEMLOCK is infinite or CAP_IPC_LOCK lifts it. */
static uint64_t hpu_pin_limit(void)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct caps[_LINUX_CAPABILITY_U32S_3] = { { 0 } };
	struct rlimit rl;

	if (!syscall(SYS_capget, &hdr, caps) &&
	    caps[CAP_TO_INDEX(CAP_IPC_LOCK)].effective & CAP_TO_MASK(CAP_IPC_LOCK))
		return UINT64_MAX;
	if (getrlimit(RLIMIT_MEMLOCK, &rl) || rl.rlim_cur == RLIM_INFINITY)
		return UINT64_MAX;
	return rl.rlim_cur;
}

/* limit / div rounded down to a power of two, within [min, max]. */
static uint64_t hpu_pin_share(uint64_t limit, uint64_t div, uint64_t min, uint64_t max)
{
	uint64_t v = limit / div;

	if (v >= max)
		return max;
	if (v <= min)
		return min;
	return 1ull << (63 - __builtin_clzll(v));
}

/*
 * With an 8 MiB limit, about 2.5 MiB for a device with a stream: slots
 * (sync words, events) from 64 KiB slabs, parameter rings from 512 KiB
 * slabs, user-queue rings (264 KiB) and a 1 MiB staging buffer each a slab
 * of their own.  Without a limit: 1 MiB and 8 MiB slabs, 2 MiB halves.
 */
static void hpu_pinned_sizes(uint64_t limit, struct hpu_suballoc_config *config,
			     uint64_t *staging_half)
{
	uint64_t small = hpu_pin_share(limit, 128, 64 << 10, 1 << 20);

	*config = (struct hpu_suballoc_config){
		.name = "pinned host memory",
		.granule = 64, /* a cache line: enough for every sync slot */
		.dedicated_align = HPU_PAGE_SIZE,
		.pools = {
			{ .max_request = small / 16, .slab_size = small, .min_split = 64 },
			{ .max_request = UINT64_MAX,
			  .slab_size = hpu_pin_share(limit, 16, 256 << 10, 8 << 20),
			  .min_split = 64 << 10 },
		},
	};
	*staging_half = hpu_pin_share(limit, 16, 64 << 10, 2 << 20);
}

/* What /proc says this process has pinned, in bytes; false if it cannot be read. */
static bool hpu_pinned_now(uint64_t *bytes)
{
	unsigned long long kib = 0;
	char line[128];
	bool found = false;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "VmPin: %llu kB", &kib) == 1;
	fclose(f);
	*bytes = (uint64_t)kib << 10;
	return found;
}

/*
 * VM_MAP's -ENOMEM.  Under a limit it is almost always the limit (the
 * driver charges the pages before anything else), which the message says
 * with the numbers needed to raise it; else the driver's message stands.
 */
static int hpu_host_map_nomem(uint64_t size)
{
	uint64_t limit = hpu_pin_limit(), pinned;

	if (limit == UINT64_MAX)
		return -ENOMEM;
	if (!hpu_pinned_now(&pinned))
		return hpu_error_set(ENOMEM, "cannot pin %llu bytes of host memory: RLIMIT_MEMLOCK "
				     "is %llu bytes (ulimit -l)", (unsigned long long)size,
				     (unsigned long long)limit);
	return hpu_error_set(ENOMEM, "cannot pin %llu bytes of host memory: RLIMIT_MEMLOCK is "
			     "%llu bytes and %llu are pinned already (ulimit -l)",
			     (unsigned long long)size, (unsigned long long)limit,
			     (unsigned long long)pinned);
}

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
	if (ret == -ENOMEM)
		return hpu_host_map_nomem(args.size);
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
	struct hpu_host_table *t = dev->host;
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
	struct hpu_host_table *t = dev->host;
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
	struct hpu_host_table *t = dev->host;
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
	.fence = hpu_mem_fence,
	.retired = hpu_mem_retired,
};

int hpu_host_init(struct hpu_device *dev, uint64_t *staging_half)
{
	struct hpu_suballoc_config config;
	int ret;

	dev->host = calloc(1, sizeof(*dev->host));
	if (!dev->host)
		return hpu_error_set(ENOMEM, "out of memory");
	hpu_pinned_sizes(hpu_pin_limit(), &config, staging_half);
	ret = hpu_suballoc_create(&config, &hpu_pinned_ops, dev, &dev->pinned);
	if (ret) {
		free(dev->host);
		dev->host = NULL;
		return ret;
	}
	pthread_rwlock_init(&dev->host->lock, NULL);
	return 0;
}

void hpu_host_fini(struct hpu_device *dev)
{
	struct hpu_host_table *t = dev->host;
	size_t i;

	hpu_suballoc_destroy(dev->pinned);
	/* What is left was registered by the caller. */
	for (i = 0; i < t->count; i++)
		hpu_host_unmap(dev, &t->ranges[i]);
	free(t->ranges);
	pthread_rwlock_destroy(&t->lock);
	free(t);
	dev->host = NULL;
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
	if (ret == -ENOMEM) {
		/* The cache's unused slabs count against the same limit: give them back. */
		hpu_suballoc_trim(dev->pinned);
		ret = hpu_host_map(dev, (uintptr_t)ptr, size, &range);
	}
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
	hpu_mem_retired(dev, HPU_RETIRE_WAIT);
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

int hpu_host_is_pinned(struct hpu_device *dev, const void *ptr, size_t size)
{
	uint64_t va;
	int ret;

	ret = hpu_host_check(dev, ptr, "ptr");
	if (!ret && (uintptr_t)ptr + size < (uintptr_t)ptr)
		ret = hpu_error_set(EINVAL, "%p + %zu wraps around", ptr, size);
	if (!ret)
		ret = hpu_host_lookup(dev, ptr, size, &va);
	return hpu_error_in(__func__, ret);
}
