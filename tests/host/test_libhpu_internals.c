/* SPDX-License-Identifier: MIT */
/*
 * Host unit test of libhpu's device-free parts, built from their sources:
 * the caching sub-allocator over a fake backend (placement, reuse, pending
 * blocks and their fences, merging, trimming, running out of memory,
 * threads), the command-buffer builder (exact packet bytes) and the bulk
 * host copies.  Prints TAP.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "../../userspace/lib/top/top.h"
#include "test_libhpu_tap.h"

#define KIB (1ull << 10)
#define MIB (1ull << 20)
#define FAKE_BASE (1ull << 40)     /* first slab address */
#define FAKE_HOST (1ull << 44)     /* host view = device address + this */
#define FAKE_SPAN (512 * MIB)      /* addresses the fake hands out, for overlap maps */

/* The device-memory configuration of hpu_mem.c. */
static const struct hpu_suballoc_config config = {
	.name = "device memory",
	.granule = 512,
	.dedicated_align = 2 * MIB,
	.pools = {
		{ .max_request = MIB, .slab_size = 2 * MIB, .min_split = 512 },
		{ .max_request = UINT64_MAX, .slab_size = 20 * MIB, .min_split = MIB },
	},
};

/* A device of `limit` bytes whose slabs are laid end to end, and a clock of work. */
static struct fake {
	uint64_t limit, mapped, next_va;
	int full;                     /* the errno past the limit: 0 is ENOMEM */
	unsigned int creates, destroys;
	bool host_view;
	atomic_uint_fast64_t fence;   /* work submitted */
	atomic_uint_fast64_t retired; /* work ended, as known without asking */
	uint64_t after_poll;          /* what a poll finds ended */
	unsigned int calls[3];        /* retired() calls per enum hpu_retire */
} fake;

static int fake_create(void *ctx, uint64_t size, struct hpu_slab_map *map)
{
	(void)ctx;
	if (fake.mapped + size > fake.limit)
		return hpu_error_set(fake.full ? fake.full : ENOMEM, "fake device full");
	*map = (struct hpu_slab_map){ .va = fake.next_va, .handle = fake.creates };
	if (fake.host_view)
		map->host = (void *)(uintptr_t)(fake.next_va + FAKE_HOST);
	fake.next_va += size;
	fake.mapped += size;
	fake.creates++;
	return 0;
}

static void fake_destroy(void *ctx, uint64_t size, const struct hpu_slab_map *map)
{
	(void)ctx;
	(void)map;
	fake.mapped -= size;
	fake.destroys++;
}

static uint64_t fake_fence(void *ctx)
{
	(void)ctx;
	return fake.fence;
}

static uint64_t fake_retired(void *ctx, enum hpu_retire how)
{
	(void)ctx;
	fake.calls[how]++;
	if (how == HPU_RETIRE_POLL && fake.after_poll > fake.retired)
		fake.retired = fake.after_poll;
	if (how == HPU_RETIRE_WAIT)
		fake.retired = fake.fence;
	return fake.retired;
}

static const struct hpu_suballoc_ops fake_ops = {
	.slab_create = fake_create,
	.slab_destroy = fake_destroy,
	.fence = fake_fence,
	.retired = fake_retired,
};

static struct hpu_suballoc *sa;

static void fake_reset(uint64_t limit)
{
	fake = (struct fake){ .limit = limit, .next_va = FAKE_BASE };
	if (hpu_suballoc_create(&config, &fake_ops, NULL, &sa)) {
		printf("#   hpu_suballoc_create: %s\n", hpu_last_error());
		exit(1);
	}
}

static struct hpu_mem_cache_stats stats(void)
{
	struct hpu_mem_cache_stats st;

	hpu_suballoc_stats(sa, &st);
	return st;
}

static uint64_t alloc(uint64_t size)
{
	uint64_t addr = 0;
	void *host;

	if (hpu_suballoc_alloc(sa, size, &addr, &host)) {
		printf("#   alloc(%llu): %s\n", (unsigned long long)size, hpu_last_error());
		test_failed = true;
	}
	return addr;
}

static void release(uint64_t addr)
{
	if (hpu_suballoc_free(sa, addr)) {
		printf("#   free(0x%llx): %s\n", (unsigned long long)addr, hpu_last_error());
		test_failed = true;
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void test_small_share_a_slab(void)
{
	uint64_t addr[1000], sorted[1000];
	struct hpu_mem_cache_stats st;
	size_t i;

	fake_reset(UINT64_MAX);
	for (i = 0; i < ARRAY_SIZE(addr); i++)
		addr[i] = alloc(1000);
	EXPECT(fake.creates == 1);
	memcpy(sorted, addr, sizeof(addr));
	qsort(sorted, ARRAY_SIZE(sorted), sizeof(*sorted), cmp_u64);
	for (i = 0; i < ARRAY_SIZE(sorted); i++) {
		EXPECT(sorted[i] % 512 == 0);
		EXPECT(sorted[i] >= FAKE_BASE && sorted[i] + 1024 <= FAKE_BASE + 2 * MIB);
		if (i)
			EXPECT(sorted[i] >= sorted[i - 1] + 1024);
	}
	st = stats();
	EXPECT(st.allocated == 1000 * 1024 && st.peak_allocated == st.allocated);
	EXPECT(st.allocations == 1000 && st.reserved == 2 * MIB && st.slabs == 1);
	EXPECT(st.slabs_created == 1 && st.slabs_released == 0 && st.pending == 0);
	hpu_suballoc_destroy(sa);
	EXPECT(fake.destroys == 1 && fake.mapped == 0);
}

/* Up to 1 MiB: 2 MiB slabs; up to 10 MiB: 20 MiB slabs; above: a slab each, 2 MiB-rounded. */
static void test_size_classes(void)
{
	fake_reset(UINT64_MAX);
	alloc(1);
	EXPECT(stats().allocated == 512);
	alloc(MIB);
	EXPECT(fake.creates == 1 && fake.mapped == 2 * MIB);
	alloc(MIB + 1);
	EXPECT(fake.creates == 2 && fake.mapped == 22 * MIB);
	alloc(9 * MIB);
	EXPECT(fake.creates == 2);
	alloc(10 * MIB + 1);
	EXPECT(fake.creates == 3 && fake.mapped == 34 * MIB);
	EXPECT(stats().allocated == 512 + MIB + (MIB + 512) + 9 * MIB + (10 * MIB + 512));
	hpu_suballoc_destroy(sa);
}

static void test_reuse_when_idle(void)
{
	uint64_t a, b;

	fake_reset(UINT64_MAX);
	a = alloc(4096);
	release(a);
	EXPECT(stats().pending == 0 && stats().allocated == 0);
	b = alloc(4096);
	EXPECT(a == b);
	EXPECT(fake.creates == 1);
	EXPECT(fake.calls[HPU_RETIRE_POLL] == 0 && fake.calls[HPU_RETIRE_WAIT] == 0);
	hpu_suballoc_destroy(sa);
}

/* A block freed while earlier work runs is not handed out until that work ends. */
static void test_pending_until_retired(void)
{
	uint64_t a, b, c;

	fake_reset(UINT64_MAX);
	fake.fence = 5;
	fake.retired = 4;
	a = alloc(4096);
	release(a);
	EXPECT(stats().pending == 4096);
	b = alloc(4096);
	EXPECT(b != a);
	fake.retired = 5;
	release(b); /* frees learn what has ended */
	EXPECT(stats().pending == 0);
	c = alloc(4096);
	EXPECT(c == a);
	EXPECT(fake.calls[HPU_RETIRE_POLL] == 0);
	hpu_suballoc_destroy(sa);
}

/* When no cached block fits, ask the driver before mapping more. */
static void test_poll_before_growing(void)
{
	uint64_t a, b;

	fake_reset(UINT64_MAX);
	a = alloc(MIB);
	b = alloc(MIB);
	fake.fence = 9;
	fake.retired = 8;
	release(a);
	release(b);
	fake.after_poll = 9;
	EXPECT(alloc(2 * 512 * KIB) == a);
	EXPECT(fake.creates == 1);
	EXPECT(fake.calls[HPU_RETIRE_POLL] == 1 && fake.calls[HPU_RETIRE_WAIT] == 0);
	hpu_suballoc_destroy(sa);
}

/* Freed neighbours merge; a slab that is all free again can be given back. */
static void test_merge_and_trim(void)
{
	uint64_t a, b, c, keep;

	fake_reset(UINT64_MAX);
	a = alloc(600 * KIB);
	b = alloc(600 * KIB);
	c = alloc(600 * KIB);
	keep = alloc(11 * MIB); /* a slab of its own, still in use */
	release(b);
	release(a);
	release(c);
	/* One free block again: larger than any of the three was. */
	EXPECT(alloc(MIB) == a);
	EXPECT(fake.creates == 2);
	release(a);
	hpu_suballoc_trim(sa);
	EXPECT(fake.destroys == 1 && fake.mapped == 12 * MIB);
	EXPECT(stats().slabs == 1 && stats().reserved == 12 * MIB && stats().slabs_released == 1);
	release(keep);
	hpu_suballoc_trim(sa);
	EXPECT(fake.destroys == 2 && fake.mapped == 0 && stats().reserved == 0);
	hpu_suballoc_destroy(sa);
}

/* Trimming leaves slabs that still hold pending blocks. */
static void test_trim_keeps_pending(void)
{
	fake_reset(UINT64_MAX);
	fake.fence = 3;
	release(alloc(4096));
	hpu_suballoc_trim(sa);
	EXPECT(fake.destroys == 0 && stats().pending == 4096);
	fake.after_poll = 3;
	hpu_suballoc_trim(sa);
	EXPECT(fake.destroys == 1 && stats().pending == 0);
	hpu_suballoc_destroy(sa);
}

/* Device full: wait for pending blocks, then give back unused slabs, then fail. */
static void test_out_of_memory(void)
{
	uint64_t a[4];
	size_t i;

	fake_reset(4 * MIB);
	for (i = 0; i < ARRAY_SIZE(a); i++)
		a[i] = alloc(MIB);
	EXPECT(fake.creates == 2);
	fake.fence = 7;
	fake.retired = 6;
	for (i = 0; i < ARRAY_SIZE(a); i++)
		release(a[i]);
	EXPECT(alloc(MIB) != 0);
	EXPECT(fake.calls[HPU_RETIRE_WAIT] == 1 && fake.creates == 2);
	hpu_suballoc_destroy(sa);

	/* A cached small slab makes room for a medium one, the device full or the file's share. */
	fake_reset(20 * MIB);
	release(alloc(4096));
	EXPECT(alloc(2 * MIB) == FAKE_BASE + 2 * MIB);
	EXPECT(fake.destroys == 1 && fake.creates == 2);
	hpu_suballoc_destroy(sa);
	fake_reset(20 * MIB);
	fake.full = EDQUOT;
	release(alloc(4096));
	EXPECT(alloc(2 * MIB) == FAKE_BASE + 2 * MIB);
	EXPECT(fake.destroys == 1 && fake.creates == 2);
	hpu_suballoc_destroy(sa);

	fake_reset(20 * MIB);
	{
		uint64_t addr = 1;
		void *host;

		EXPECT(hpu_suballoc_alloc(sa, 21 * MIB, &addr, &host) == -ENOMEM);
		EXPECT_STR(hpu_last_error(), "fake device full");
		EXPECT(addr == 1 && stats().allocations == 0);
		EXPECT(hpu_suballoc_alloc(sa, UINT64_MAX - 100, &addr, &host) == -ENOMEM);
		EXPECT_PREFIX(hpu_last_error(), "18446744073709551515 bytes of device memory is");
	}
	hpu_suballoc_destroy(sa);
}

static void test_bad_free(void)
{
	uint64_t a;

	fake_reset(UINT64_MAX);
	a = alloc(4096);
	EXPECT(hpu_suballoc_free(sa, a + 512) == -EINVAL);
	EXPECT_STR(hpu_last_error(), "0x10000000200 is not allocated device memory");
	release(a);
	EXPECT(hpu_suballoc_free(sa, a) == -EINVAL);
	EXPECT(hpu_suballoc_free(sa, 0x1234) == -EINVAL);
	EXPECT(stats().allocations == 0 && stats().allocated == 0);
	hpu_suballoc_destroy(sa);
}

static void test_host_view(void)
{
	uint64_t addr;
	void *host;

	fake_reset(UINT64_MAX);
	fake.host_view = true;
	alloc(100);
	EXPECT(hpu_suballoc_alloc(sa, 100, &addr, &host) == 0);
	EXPECT((uintptr_t)host == addr + FAKE_HOST && addr == FAKE_BASE + 512);
	hpu_suballoc_destroy(sa);
	fake_reset(UINT64_MAX);
	EXPECT(hpu_suballoc_alloc(sa, 100, &addr, &host) == 0);
	EXPECT(host == NULL);
	hpu_suballoc_destroy(sa);
}

/* Which granules of the fake's address range are handed out, and to whom. */
static _Atomic unsigned char owner[FAKE_SPAN / 512];

/* Marks [addr, addr + size) as id's (0 clears); false if someone else held part of it. */
static bool claim(uint64_t addr, uint64_t size, unsigned char from, unsigned char to)
{
	uint64_t g;
	bool ok = true;

	for (g = (addr - FAKE_BASE) / 512; g < (addr + size - FAKE_BASE) / 512; g++) {
		unsigned char expected = from;

		if (!atomic_compare_exchange_strong(&owner[g], &expected, to))
			ok = false;
	}
	return ok;
}

/* Random sizes, spread over the classes, mostly small. */
static uint64_t random_size(unsigned int *seed)
{
	unsigned int shift = rand_r(seed) % 22;
	uint64_t range = (1u << shift) + (rand_r(seed) % 8 == 0 ? 2 * MIB : 0);

	return 1 + rand_r(seed) % range;
}

/* Random allocations and frees with work in flight: blocks never overlap and all comes back. */
static void test_random(void)
{
	struct {
		uint64_t addr, size;
	} live[256] = { { 0 } };
	unsigned int seed = 1, i;
	size_t j;

	fake_reset(UINT64_MAX);
	memset(owner, 0, sizeof(owner));
	for (i = 0; i < 20000; i++) {
		j = rand_r(&seed) % ARRAY_SIZE(live);
		if (live[j].addr) {
			EXPECT(claim(live[j].addr, hpu_round_up(live[j].size, 512), 1, 0));
			release(live[j].addr);
			live[j].addr = 0;
		} else {
			live[j].size = random_size(&seed);
			live[j].addr = alloc(live[j].size);
			EXPECT(live[j].addr % 512 == 0);
			EXPECT(live[j].addr + live[j].size <= FAKE_BASE + FAKE_SPAN);
			EXPECT(claim(live[j].addr, hpu_round_up(live[j].size, 512), 0, 1));
		}
		/* Work is submitted and ends in bursts. */
		if (rand_r(&seed) % 4 == 0)
			fake.fence++;
		if (rand_r(&seed) % 16 == 0)
			fake.retired = fake.fence;
		if (test_failed)
			break;
	}
	for (j = 0; j < ARRAY_SIZE(live); j++)
		if (live[j].addr)
			release(live[j].addr);
	fake.after_poll = fake.fence;
	hpu_suballoc_trim(sa);
	printf("#   %u slabs created, %llu bytes at most allocated\n", fake.creates,
	       (unsigned long long)stats().peak_allocated);
	EXPECT(stats().allocated == 0 && stats().pending == 0 && stats().reserved == 0);
	EXPECT(fake.creates == fake.destroys && fake.mapped == 0);
	hpu_suballoc_destroy(sa);
}

static void *thread_churn(void *arg)
{
	unsigned char id = (unsigned char)(uintptr_t)arg;
	uint64_t addr[64] = { 0 }, size[64];
	unsigned int seed = id, i, j;
	bool ok = true;

	for (i = 0; i < 20000; i++) {
		j = rand_r(&seed) % 64;
		if (addr[j]) {
			ok &= claim(addr[j], hpu_round_up(size[j], 512), id, 0);
			ok &= hpu_suballoc_free(sa, addr[j]) == 0;
			addr[j] = 0;
		} else {
			void *host;

			size[j] = 1 + rand_r(&seed) % (64 * KIB);
			ok &= hpu_suballoc_alloc(sa, size[j], &addr[j], &host) == 0;
			ok &= claim(addr[j], hpu_round_up(size[j], 512), 0, id);
		}
	}
	for (j = 0; j < 64; j++) {
		if (addr[j]) {
			ok &= claim(addr[j], hpu_round_up(size[j], 512), id, 0);
			ok &= hpu_suballoc_free(sa, addr[j]) == 0;
		}
	}
	return ok ? arg : NULL;
}

static void test_threads(void)
{
	pthread_t threads[4];
	uintptr_t i;
	void *ret;

	fake_reset(UINT64_MAX);
	memset(owner, 0, sizeof(owner));
	for (i = 0; i < ARRAY_SIZE(threads); i++)
		EXPECT(pthread_create(&threads[i], NULL, thread_churn, (void *)(i + 1)) == 0);
	for (i = 0; i < ARRAY_SIZE(threads); i++) {
		EXPECT(pthread_join(threads[i], &ret) == 0);
		EXPECT(ret == (void *)(i + 1));
	}
	EXPECT(stats().allocations == 0 && stats().allocated == 0);
	hpu_suballoc_destroy(sa);
}

/* Packets, byte by byte as uapi/drm/hpu_packets.h lays them out. */
static void expect_bytes(const struct hpu_cb *cb, const unsigned char *want, size_t len)
{
	size_t i;

	EXPECT(cb->size == len);
	for (i = 0; i < len && i < cb->size; i++) {
		if (((const unsigned char *)cb->buf)[i] != want[i]) {
			printf("#   byte %zu is 0x%02x, expected 0x%02x\n", i,
			       ((const unsigned char *)cb->buf)[i], want[i]);
			test_failed = true;
		}
	}
}

static void test_cb_packets(void)
{
	static const unsigned char want[] = {
		/* LIN_DMA dst 0x1122334455667788 src 0x0102030405060708 size 0x10000 */
		0x01, 0, 0, 0, 0, 0, 0, 0,
		0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,
		0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,
		0x00, 0x00, 0x01, 0, 0, 0, 0, 0,
		/* LIN_DMA MEMSET of 0xab, 3 bytes at 0x2000 */
		0x01, 0x01, 0, 0, 0, 0, 0, 0,
		0xab, 0, 0, 0, 0, 0, 0, 0,
		0x00, 0x20, 0, 0, 0, 0, 0, 0,
		0x03, 0, 0, 0, 0, 0, 0, 0,
		/* SIGNAL +1 at 0x3004 */
		0x02, 0, 0, 0, 0x01, 0, 0, 0,
		0x04, 0x30, 0, 0, 0, 0, 0, 0,
		/* WAIT >= 0x12345678 at 0x3008 */
		0x03, 0, 0, 0, 0x78, 0x56, 0x34, 0x12,
		0x08, 0x30, 0, 0, 0, 0, 0, 0,
		/* TIMESTAMP to 0x3010 */
		0x04, 0, 0, 0, 0, 0, 0, 0,
		0x10, 0x30, 0, 0, 0, 0, 0, 0,
	};
	struct hpu_cb cb;

	hpu_cb_init(&cb);
	EXPECT(cb.size == 0);
	hpu_cb_copy(&cb, 0x1122334455667788ull, 0x0102030405060708ull, 0x10000);
	hpu_cb_fill(&cb, 0x2000, 0xab, 3);
	hpu_cb_signal(&cb, 0x3004, 1);
	hpu_cb_wait(&cb, 0x3008, 0x12345678);
	hpu_cb_timestamp(&cb, 0x3010);
	expect_bytes(&cb, want, sizeof(want));
}

/* The largest job the library builds (an event record and the stream's signal) fits. */
static void test_cb_capacity(void)
{
	struct hpu_cb cb;

	hpu_cb_init(&cb);
	hpu_cb_copy(&cb, 1, 2, 4);
	hpu_cb_timestamp(&cb, 8);
	hpu_cb_signal(&cb, 16, 1);
	hpu_cb_signal(&cb, 24, 1);
	EXPECT(cb.size == 80 && cb.size <= HPU_CB_CAPACITY);
}

/*
 * Every bulk routine copies exactly n bytes, whatever the alignment of either side and the
 * remainder past whole words, and touches nothing around them.
 */
static void test_bulk_routines_copy_exactly(void)
{
	enum { MAX = 3 * 4096 + 29, PAD = 16 };
	static const size_t sizes[] = { 0, 1, 7, 8, 9, 63, 64, 65, 4095, 4096, MAX };
	static uint8_t src[MAX + 8], dst[MAX + 8 + 2 * PAD];
	size_t r, i, j, k, n;

	for (i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 131 + 7);
	for (r = 0; r < hpu_bulk_routine_count; r++) {
		const struct hpu_bulk_routine *rt = &hpu_bulk_routines[r];

		for (i = 0; i < ARRAY_SIZE(sizes); i++) {
			for (j = 0; j < 8; j++) {
				size_t so = j, dof = PAD + (j * 3) % 8;
				bool ok = true;

				n = sizes[i];
				memset(dst, 0xee, sizeof(dst));
				rt->copy(dst + dof, src + so, n);
				for (k = 0; k < sizeof(dst); k++) {
					bool inside = k >= dof && k < dof + n;

					if (dst[k] != (inside ? src[so + k - dof] : 0xee))
						ok = false;
				}
				if (!ok) {
					printf("#   %s: %zu bytes from +%zu to +%zu wrong\n", rt->name,
					       n, so, dof);
					test_failed = true;
				}
			}
		}
	}
}

/* The choice is one of the routines, the same on every call, and is what hpu_bulk_copy() uses. */
static void test_bulk_choice_is_stable(void)
{
	const struct hpu_bulk_routine *chosen = hpu_bulk_routine();
	static uint8_t a[100000], b[100000];
	bool known = false;
	size_t r;

	for (r = 0; r < hpu_bulk_routine_count; r++)
		known |= chosen == &hpu_bulk_routines[r];
	EXPECT(known);
	EXPECT(hpu_bulk_routine() == chosen);
	printf("#   bulk copies by %s\n", chosen->name);
	memset(a, 0x3c, sizeof(a));
	hpu_bulk_copy(b, a, sizeof(a));
	EXPECT(!memcmp(a, b, sizeof(a)));
}

static const struct tap_test tests[] = {
	{ "small allocations share one slab, aligned and disjoint", test_small_share_a_slab },
	{ "requests pick their slab size by class", test_size_classes },
	{ "a block freed with no work running is reused at once", test_reuse_when_idle },
	{ "a block freed under running work waits for it", test_pending_until_retired },
	{ "the driver is polled before a new slab is mapped", test_poll_before_growing },
	{ "free neighbours merge and empty slabs are trimmed", test_merge_and_trim },
	{ "trimming keeps slabs with pending blocks", test_trim_keeps_pending },
	{ "out of memory: wait, trim, retry, then fail", test_out_of_memory },
	{ "freeing what was not allocated fails", test_bad_free },
	{ "blocks of slabs with a host view get host addresses", test_host_view },
	{ "random allocations never overlap and all come back", test_random },
	{ "threads allocating at once never share a byte", test_threads },
	{ "command buffer packets are laid out as the ABI says", test_cb_packets },
	{ "the largest job fits a command buffer", test_cb_capacity },
	{ "bulk copy routines copy exactly n bytes at any alignment", test_bulk_routines_copy_exactly },
	{ "the bulk copy routine chosen is one of them, once", test_bulk_choice_is_stable },
};

int main(void)
{
	unsigned int n = 0;

	printf("TAP version 13\n1..%zu\n", ARRAY_SIZE(tests));
	return tap_run(tests, ARRAY_SIZE(tests), &n) ? 1 : 0;
}
