// SPDX-License-Identifier: MIT
/*
 * libhpu 0.2 against the live device: data integrity of every copy through
 * the runtime, the caching allocator, streams, events, job failures and
 * argument errors, and teardown with work in flight.  Where the suites of
 * the raw ABI check the driver's contract, these check what <hpu/hpu.h>
 * promises on top of it.
 *
 * The suites run as an ordinary user whose pinned memory RLIMIT_MEMLOCK
 * bounds (8 MiB): tests that pin size what they pin from what is left of
 * the limit, and pinning past it must fail with a message that says so.
 */
#include <errno.h>
#include <pthread.h>
#include <regex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <linux/capability.h>

#include <hpu/hpu.h>

#include "kselftest_harness.h"

#define MiB (1ull << 20)

/* Bytes checked on each side of a destination: a copy must not touch them. */
#define HPU_GUARD 64
#define HPU_HOST_GUARD 0x5a
#define HPU_A_GUARD 0xa1
#define HPU_B_GUARD 0xb2
#define HPU_FILL 0xc3

/*
 * Offsets that put every copy at odd addresses: into the host source, into
 * the host destination, and into the device buffers a and b (whose
 * allocations are 512-byte aligned).
 */
#define HPU_SRC_OFF 13
#define HPU_DST_OFF 4093
#define HPU_A_OFF 3
#define HPU_B_OFF 1001

/*
 * A device address inside the device's address space that no allocation
 * has: the driver places mappings from the top of the 47-bit space down, so
 * nothing a test maps comes near 4 GiB.
 */
#define HPU_UNALLOCATED_VA 0x100001000ull

/* Far more device time than the few system calls a test makes meanwhile. */
#define HPU_LONG_COPY (64 * MiB)
#define HPU_LONG_COPIES 16

/* A fixture whose tests get the device open in self->dev, a context of their own. */
#define HPU_DEVICE_FIXTURE(name)                                                   \
	FIXTURE(name) {                                                            \
		struct hpu_device *dev;                                            \
	};                                                                         \
	FIXTURE_SETUP(name)                                                        \
	{                                                                          \
		ASSERT_EQ(0, hpu_device_open(0, &self->dev)) TH_LOG("%s", hpu_last_error()); \
	}                                                                          \
	FIXTURE_TEARDOWN(name)                                                     \
	{                                                                          \
		hpu_device_close(self->dev);                                       \
	}

static double hpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * A pattern unique to seed at every offset, 8 bytes a step: the guest CPU
 * is slow, and the largest copies are 256 MiB.
 */
static void hpu_pattern(uint8_t *p, size_t n, uint64_t seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ull | 1;
	size_t i;

	for (i = 0; i < n; i += sizeof(x)) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(p + i, &x, n - i < sizeof(x) ? n - i : sizeof(x));
	}
}

/* Offset of the first byte of p[0, n) that is not v; n if there is none. */
static size_t hpu_first_not(const uint8_t *p, size_t n, uint8_t v)
{
	uint8_t ref[4096];
	size_t off, len, i;

	memset(ref, v, sizeof(ref));
	for (off = 0; off < n; off += len) {
		len = n - off < sizeof(ref) ? n - off : sizeof(ref);
		if (!memcmp(p + off, ref, len))
			continue;
		for (i = 0; p[off + i] == v; i++)
			;
		return off + i;
	}
	return n;
}

static void hpu_expect_bytes(struct __test_metadata *_metadata, const uint8_t *p, size_t n,
			     uint8_t v, const char *what)
{
	size_t bad = hpu_first_not(p, n, v);

	EXPECT_EQ(n, bad) TH_LOG("%s: byte %zu of %zu is 0x%02x, not 0x%02x", what, bad, n,
				 bad < n ? p[bad] : 0, v);
}

static struct hpu_device_stats hpu_stats(struct __test_metadata *_metadata,
					 struct hpu_device *dev)
{
	struct hpu_device_stats st = { .size = sizeof(st) };

	ASSERT_EQ(0, hpu_device_get_stats(dev, &st)) TH_LOG("%s", hpu_last_error());
	return st;
}

/*
 * The stats once the context holds ctx_hbm bytes of HBM and the device hbm
 * (UINT64_MAX: any), or after 10 s: the driver gives back what was unmapped
 * once the work that may use it has ended, and counts freed HBM in the
 * device's until it has zeroed it.
 */
static struct hpu_device_stats hpu_stats_settled(struct __test_metadata *_metadata,
						 struct hpu_device *dev, uint64_t ctx_hbm,
						 uint64_t hbm)
{
	double deadline = hpu_now() + 10;
	struct hpu_device_stats st = hpu_stats(_metadata, dev);

	while ((st.ctx_hbm_used != ctx_hbm || (hbm != UINT64_MAX && st.hbm_used != hbm)) &&
	       hpu_now() < deadline) {
		usleep(1000);
		st = hpu_stats(_metadata, dev);
	}
	return st;
}

static struct hpu_mem_cache_stats hpu_mem_cache(struct __test_metadata *_metadata,
						struct hpu_device *dev)
{
	struct hpu_mem_stats ms = { .size = sizeof(ms) };

	ASSERT_EQ(0, hpu_mem_get_stats(dev, &ms)) TH_LOG("%s", hpu_last_error());
	return ms.device;
}

static uint64_t hpu_dev_alloc(struct __test_metadata *_metadata, struct hpu_device *dev,
			      size_t size)
{
	uint64_t p = 0;

	ASSERT_EQ(0, hpu_mem_alloc(dev, size, &p)) TH_LOG("%zu bytes: %s", size, hpu_last_error());
	return p;
}

static uint8_t *hpu_pinned(struct __test_metadata *_metadata, struct hpu_device *dev, size_t size)
{
	void *p = NULL;

	ASSERT_EQ(0, hpu_host_alloc(dev, size, &p)) TH_LOG("%zu bytes: %s", size, hpu_last_error());
	return p;
}

static struct hpu_stream *hpu_new_stream(struct __test_metadata *_metadata, struct hpu_device *dev)
{
	struct hpu_stream *s = NULL;

	ASSERT_EQ(0, hpu_stream_create(dev, &s)) TH_LOG("%s", hpu_last_error());
	return s;
}

static struct hpu_event *hpu_new_event(struct __test_metadata *_metadata, struct hpu_device *dev)
{
	struct hpu_event *ev = NULL;

	ASSERT_EQ(0, hpu_event_create(dev, &ev)) TH_LOG("%s", hpu_last_error());
	return ev;
}

static void hpu_sync(struct __test_metadata *_metadata, struct hpu_stream *s)
{
	ASSERT_EQ(0, hpu_stream_synchronize(s)) TH_LOG("%s", hpu_last_error());
}

/*
 * Enqueues HPU_LONG_COPIES device-to-device copies back and forth between
 * two fresh buffers: work that keeps the stream busy long after the calls
 * return.  The buffers are freed at once; the cache keeps them for the work.
 */
static void hpu_enqueue_long_work(struct __test_metadata *_metadata, struct hpu_device *dev,
				  struct hpu_stream *s)
{
	uint64_t x = hpu_dev_alloc(_metadata, dev, HPU_LONG_COPY);
	uint64_t y = hpu_dev_alloc(_metadata, dev, HPU_LONG_COPY);
	int i;

	for (i = 0; i < HPU_LONG_COPIES; i++)
		ASSERT_EQ(0, hpu_memcpy_d2d_async(s, i % 2 ? x : y, i % 2 ? y : x, HPU_LONG_COPY))
			TH_LOG("%s", hpu_last_error());
	ASSERT_EQ(0, hpu_mem_free(dev, x));
	ASSERT_EQ(0, hpu_mem_free(dev, y));
}

/* ret is -err, and the message names the call and says why. */
static void hpu_expect_error(struct __test_metadata *_metadata, int ret, int err,
			     const char *call, const char *why)
{
	const char *msg = hpu_last_error();

	EXPECT_EQ(-err, ret) TH_LOG("%s: %s", call, msg);
	EXPECT_EQ(0, strncmp(msg, call, strlen(call))) TH_LOG("'%s' does not name %s", msg, call);
	EXPECT_NE(NULL, strstr(msg, why)) TH_LOG("'%s' does not say '%s'", msg, why);
}

/* A copy from an address no allocation has: the device faults on it. */
static void hpu_enqueue_fault(struct __test_metadata *_metadata, struct hpu_stream *s,
			      uint64_t dst)
{
	ASSERT_EQ(0, hpu_memcpy_d2d_async(s, dst, HPU_UNALLOCATED_VA, 64))
		TH_LOG("%s", hpu_last_error());
}

/* The failure of hpu_enqueue_fault()'s job, reported by call as <hpu/hpu.h> documents. */
static void hpu_expect_fault(struct __test_metadata *_metadata, int ret, const char *call)
{
	char re[256];
	regex_t rx;

	snprintf(re, sizeof(re),
		 "^%s: stream [0-9]+: job [0-9]+ \\(hpu_memcpy_d2d_async\\) on queue [0-9]+ "
		 "failed: MMU fault \\(-EFAULT\\)", call);
	EXPECT_EQ(-EFAULT, ret) TH_LOG("%s: %s", call, hpu_last_error());
	ASSERT_EQ(0, regcomp(&rx, re, REG_EXTENDED | REG_NOSUB));
	EXPECT_EQ(0, regexec(&rx, hpu_last_error(), 0, NULL, 0))
		TH_LOG("message: '%s'", hpu_last_error());
	regfree(&rx);
}

/* ---- RLIMIT_MEMLOCK: what the driver lets this process pin ---- */

/* Kept for what the runtime pins of its own: its staging buffer, user queues, slots. */
#define HPU_PIN_RESERVE ((size_t)3 << 20)

/* Bytes the process may pin; SIZE_MAX if RLIMIT_MEMLOCK is infinite or CAP_IPC_LOCK lifts it. */
static size_t hpu_pin_limit(void)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct caps[_LINUX_CAPABILITY_U32S_3] = { { 0 } };
	struct rlimit rl;

	if (!syscall(SYS_capget, &hdr, caps) &&
	    caps[CAP_TO_INDEX(CAP_IPC_LOCK)].effective & CAP_TO_MASK(CAP_IPC_LOCK))
		return SIZE_MAX;
	if (getrlimit(RLIMIT_MEMLOCK, &rl) || rl.rlim_cur == RLIM_INFINITY)
		return SIZE_MAX;
	return rl.rlim_cur;
}

/* What the process has pinned (VmPin). */
static size_t hpu_pinned_now(struct __test_metadata *_metadata)
{
	unsigned long long kib = 0;
	char line[128];
	bool found = false;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "VmPin: %llu kB", &kib) == 1;
	fclose(f);
	EXPECT_TRUE(found) TH_LOG("no VmPin in /proc/self/status");
	return kib << 10;
}

/*
 * want, or less if parts buffers of want bytes would not fit in what is left
 * of the limit after the runtime's share: a whole number of pages, less one
 * for a buffer that does not start on a page.
 */
static size_t hpu_pin_fit(struct __test_metadata *_metadata, size_t want, unsigned int parts)
{
	size_t limit = hpu_pin_limit(), used = hpu_pinned_now(_metadata) + HPU_PIN_RESERVE, each;

	if (limit == SIZE_MAX)
		return want;
	ASSERT_LT(used, limit) TH_LOG("%zu bytes pinned, of %zu", used - HPU_PIN_RESERVE, limit);
	each = ((limit - used) / parts & ~(size_t)4095) - 4096;
	return want < each ? want : each;
}

/* Pinning size bytes (allocated, or registered if reg) fails: over RLIMIT_MEMLOCK, it says. */
static void hpu_expect_pin_refused(struct __test_metadata *_metadata, struct hpu_device *dev,
				   size_t size, bool reg)
{
	char why[96];
	void *p = reg ? malloc(size) : NULL;

	ASSERT_TRUE(p || !reg);
	snprintf(why, sizeof(why), "RLIMIT_MEMLOCK is %zu bytes", hpu_pin_limit());
	if (reg)
		hpu_expect_error(_metadata, hpu_host_register(dev, p, size), ENOMEM,
				 "hpu_host_register", why);
	else
		hpu_expect_error(_metadata, hpu_host_alloc(dev, size, &p), ENOMEM,
				 "hpu_host_alloc", why);
	EXPECT_NE(NULL, strstr(hpu_last_error(), "cannot pin ")) TH_LOG("%s", hpu_last_error());
	if (reg)
		free(p);
	else
		EXPECT_EQ(NULL, p);
}

/* ---- data integrity: every copy through the runtime, with each kind of host memory ---- */

enum hpu_host_kind {
	HPU_HOST_PAGEABLE,   /* staged through the stream's pinned buffer */
	HPU_HOST_PINNED,     /* hpu_host_alloc() */
	HPU_HOST_REGISTERED, /* the caller's, hpu_host_register()ed */
};

struct hpu_host_buf {
	uint8_t *p;
	size_t size;
	enum hpu_host_kind kind;
};

static void hpu_host_buf_get(struct __test_metadata *_metadata, struct hpu_device *dev,
			     enum hpu_host_kind kind, size_t size, struct hpu_host_buf *buf)
{
	*buf = (struct hpu_host_buf){ .size = size, .kind = kind };
	if (kind == HPU_HOST_PINNED) {
		buf->p = hpu_pinned(_metadata, dev, size);
		EXPECT_EQ(0, (uintptr_t)buf->p % 64);
		return;
	}
	buf->p = malloc(size);
	ASSERT_NE(NULL, buf->p);
	if (kind == HPU_HOST_REGISTERED)
		ASSERT_EQ(0, hpu_host_register(dev, buf->p, size)) TH_LOG("%s", hpu_last_error());
}

static void hpu_host_buf_put(struct __test_metadata *_metadata, struct hpu_device *dev,
			     struct hpu_host_buf *buf)
{
	if (buf->kind == HPU_HOST_PINNED) {
		EXPECT_EQ(0, hpu_host_free(dev, buf->p)) TH_LOG("%s", hpu_last_error());
		return;
	}
	if (buf->kind == HPU_HOST_REGISTERED)
		EXPECT_EQ(0, hpu_host_unregister(dev, buf->p)) TH_LOG("%s", hpu_last_error());
	free(buf->p);
}

/*
 * The host destination after a D2H of n bytes plus a guard each side: the
 * guards read `edge`, the n bytes `data` (or `fill` if data is NULL), and
 * the host bytes around the window were not touched.
 */
static void hpu_check_window(struct __test_metadata *_metadata, const struct hpu_host_buf *dst,
			     size_t n, uint8_t edge, const uint8_t *data, uint8_t fill)
{
	const uint8_t *win = dst->p + HPU_DST_OFF;
	size_t end = HPU_DST_OFF + n + 2 * HPU_GUARD;

	hpu_expect_bytes(_metadata, dst->p, HPU_DST_OFF, HPU_HOST_GUARD, "host bytes before");
	hpu_expect_bytes(_metadata, dst->p + end, dst->size - end, HPU_HOST_GUARD,
			 "host bytes after");
	hpu_expect_bytes(_metadata, win, HPU_GUARD, edge, "device guard before");
	hpu_expect_bytes(_metadata, win + HPU_GUARD + n, HPU_GUARD, edge, "device guard after");
	if (!data) {
		hpu_expect_bytes(_metadata, win + HPU_GUARD, n, fill, "memset");
		return;
	}
	EXPECT_EQ(0, memcmp(win + HPU_GUARD, data, n)) TH_LOG("%zu bytes differ", n);
}

HPU_DEVICE_FIXTURE(copy)

FIXTURE_VARIANT(copy) {
	enum hpu_host_kind kind;
};

FIXTURE_VARIANT_ADD(copy, pageable) { .kind = HPU_HOST_PAGEABLE };
FIXTURE_VARIANT_ADD(copy, pinned) { .kind = HPU_HOST_PINNED };
FIXTURE_VARIANT_ADD(copy, registered) { .kind = HPU_HOST_REGISTERED };

/*
 * Host -> a -> b -> host, then a memset of a read back, at unaligned
 * offsets everywhere.  Each device buffer is first filled with its own
 * guard value and each readback takes a guard either side, so a copy or
 * memset that writes one byte too many or too few shows.
 */
static void hpu_round_trip(struct __test_metadata *_metadata, struct hpu_device *dev,
			   enum hpu_host_kind kind, size_t n)
{
	size_t win = n + 2 * HPU_GUARD;
	struct hpu_host_buf src, dst;
	struct hpu_stream *s = hpu_new_stream(_metadata, dev);
	uint64_t a = hpu_dev_alloc(_metadata, dev, HPU_A_OFF + win);
	uint64_t b = hpu_dev_alloc(_metadata, dev, HPU_B_OFF + win);
	/* Where each window (guard, data, guard) starts, and its data. */
	uint64_t a_win = a + HPU_A_OFF, a_data = a_win + HPU_GUARD;
	uint64_t b_win = b + HPU_B_OFF, b_data = b_win + HPU_GUARD;
	uint8_t *src_data;

	hpu_host_buf_get(_metadata, dev, kind, HPU_SRC_OFF + n, &src);
	hpu_host_buf_get(_metadata, dev, kind, HPU_DST_OFF + win + HPU_GUARD, &dst);
	src_data = src.p + HPU_SRC_OFF;
	hpu_pattern(src_data, n, n);
	memset(dst.p, HPU_HOST_GUARD, dst.size);

	ASSERT_EQ(0, hpu_memset_async(s, a, HPU_A_GUARD, HPU_A_OFF + win));
	ASSERT_EQ(0, hpu_memset_async(s, b, HPU_B_GUARD, HPU_B_OFF + win));
	ASSERT_EQ(0, hpu_memcpy_h2d_async(s, a_data, src_data, n)) TH_LOG("%s", hpu_last_error());
	ASSERT_EQ(0, hpu_memcpy_d2d_async(s, b_data, a_data, n)) TH_LOG("%s", hpu_last_error());
	ASSERT_EQ(0, hpu_memcpy_d2h_async(s, dst.p + HPU_DST_OFF, b_win, win))
		TH_LOG("%s", hpu_last_error());
	hpu_sync(_metadata, s);
	hpu_check_window(_metadata, &dst, n, HPU_B_GUARD, src_data, 0);

	ASSERT_EQ(0, hpu_memset_async(s, a_data, HPU_FILL, n));
	ASSERT_EQ(0, hpu_memcpy_d2h_async(s, dst.p + HPU_DST_OFF, a_win, win))
		TH_LOG("%s", hpu_last_error());
	hpu_sync(_metadata, s);
	hpu_check_window(_metadata, &dst, n, HPU_A_GUARD, NULL, HPU_FILL);

	hpu_stream_destroy(s);
	hpu_host_buf_put(_metadata, dev, &src);
	hpu_host_buf_put(_metadata, dev, &dst);
	EXPECT_EQ(0, hpu_mem_free(dev, a));
	EXPECT_EQ(0, hpu_mem_free(dev, b));
}

/* hpu_host_is_pinned() answers as copies decide: the whole range pinned, or not. */
TEST_F(copy, is_pinned_answers_for_the_whole_range)
{
	struct hpu_host_buf buf;
	const int pinned = variant->kind != HPU_HOST_PAGEABLE;

	hpu_host_buf_get(_metadata, self->dev, variant->kind, 3 * 4096, &buf);
	EXPECT_EQ(pinned, hpu_host_is_pinned(self->dev, buf.p, buf.size));
	EXPECT_EQ(pinned, hpu_host_is_pinned(self->dev, buf.p + buf.size - 1, 1));
	EXPECT_EQ(pinned, hpu_host_is_pinned(self->dev, buf.p + 5, 0));
	/* A registration ends at its last byte (an allocation's slab goes on, pinned too). */
	if (variant->kind != HPU_HOST_PINNED) {
		EXPECT_EQ(0, hpu_host_is_pinned(self->dev, buf.p, buf.size + 1));
		EXPECT_EQ(0, hpu_host_is_pinned(self->dev, buf.p + buf.size, 1));
	}
	hpu_host_buf_put(_metadata, self->dev, &buf);
}

TEST_F(copy, small_sizes)
{
	static const size_t sizes[] = { 1, 4095, 4097, MiB + 3 };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(sizes); i++)
		hpu_round_trip(_metadata, self->dev, variant->kind, sizes[i]);
}

/*
 * A round trip of n bytes.  Pinned or registered, two buffers of n bytes
 * may not fit under RLIMIT_MEMLOCK: then pinning past the limit fails as
 * it should, and the round trip takes the most that fits.
 */
static void hpu_round_trip_large(struct __test_metadata *_metadata, struct hpu_device *dev,
				 enum hpu_host_kind kind, size_t n)
{
	const size_t extra = HPU_DST_OFF + 3 * HPU_GUARD;
	size_t fit = n;

	if (kind != HPU_HOST_PAGEABLE) {
		/* The first stream takes the user queues, pinned too. */
		hpu_stream_destroy(hpu_new_stream(_metadata, dev));
		fit = hpu_pin_fit(_metadata, n + extra, 2) - extra;
	}
	if (fit < n) {
		hpu_expect_pin_refused(_metadata, dev, hpu_pin_limit() + 4096,
				       kind == HPU_HOST_REGISTERED);
		TH_LOG("RLIMIT_MEMLOCK: a round trip of %zu bytes, not %zu", fit, n);
	}
	hpu_round_trip(_metadata, dev, kind, fit);
}

TEST_F_TIMEOUT(copy, size_64mib, 120)
{
	hpu_round_trip_large(_metadata, self->dev, variant->kind, 64 * MiB);
}

TEST_F_TIMEOUT(copy, size_256mib, 300)
{
	hpu_round_trip_large(_metadata, self->dev, variant->kind, 256 * MiB);
}

/* ---- the caching allocator ---- */

HPU_DEVICE_FIXTURE(mem)

/* Once a slab is mapped, allocating and freeing in it is bookkeeping in the process. */
TEST_F(mem, small_allocations_issue_no_ioctl)
{
	struct hpu_device_stats before, after;
	struct hpu_mem_cache_stats cache;
	uint64_t first = hpu_dev_alloc(_metadata, self->dev, 512), p[64];
	int round, i;

	/* Work that has ended: its blocks must come back without asking the driver. */
	ASSERT_EQ(0, hpu_memset(self->dev, first, 1, 512)) TH_LOG("%s", hpu_last_error());
	before = hpu_stats(_metadata, self->dev);
	for (round = 0; round < 16; round++) {
		for (i = 0; i < 64; i++) {
			size_t size = 1 + (i * 977 + round * 131) % 16384;

			p[i] = hpu_dev_alloc(_metadata, self->dev, size);
		}
		/* Every other block first, so frees both split and merge. */
		for (i = 0; i < 64; i += 2)
			ASSERT_EQ(0, hpu_mem_free(self->dev, p[i]));
		for (i = 1; i < 64; i += 2)
			ASSERT_EQ(0, hpu_mem_free(self->dev, p[i]));
	}
	after = hpu_stats(_metadata, self->dev);
	/* The one ioctl is the stats query of `before`. */
	EXPECT_EQ(1, after.ioctls - before.ioctls);
	cache = hpu_mem_cache(_metadata, self->dev);
	EXPECT_EQ(1, cache.slabs_created);
	EXPECT_EQ(1, cache.allocations);
	EXPECT_EQ(512, cache.allocated);
}

struct hpu_block {
	uint64_t addr;
	size_t size;
	uint8_t value;
};

static int hpu_block_cmp(const void *a, const void *b)
{
	const struct hpu_block *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Blocks of small, medium and dedicated sizes are disjoint: each keeps its own pattern. */
TEST_F_TIMEOUT(mem, allocations_do_not_overlap, 60)
{
	enum { N = 48 };
	struct hpu_block blocks[N];
	struct hpu_stream *s = hpu_new_stream(_metadata, self->dev);
	size_t total = 0, off;
	uint8_t *back;
	int i;

	for (i = 0; i < N; i++) {
		static const size_t base[] = { 1, 4000, 700 * 1024, 3 * MiB, 11 * MiB };

		blocks[i].size = base[i % 5] + (size_t)i * 4099;
		blocks[i].addr = hpu_dev_alloc(_metadata, self->dev, blocks[i].size);
		blocks[i].value = (uint8_t)(i + 1);
		EXPECT_EQ(0, blocks[i].addr % 512) TH_LOG("block %d at 0x%llx", i,
							  (unsigned long long)blocks[i].addr);
		ASSERT_EQ(0, hpu_memset_async(s, blocks[i].addr, blocks[i].value, blocks[i].size));
		total += blocks[i].size;
	}
	/* Pageable: far more than RLIMIT_MEMLOCK lets a user pin. */
	back = malloc(total);
	ASSERT_NE(NULL, back);
	for (i = 0, off = 0; i < N; i++) {
		ASSERT_EQ(0, hpu_memcpy_d2h_async(s, back + off, blocks[i].addr, blocks[i].size));
		off += blocks[i].size;
	}
	hpu_sync(_metadata, s);
	for (i = 0, off = 0; i < N; i++) {
		hpu_expect_bytes(_metadata, back + off, blocks[i].size, blocks[i].value, "block");
		off += blocks[i].size;
	}

	qsort(blocks, N, sizeof(blocks[0]), hpu_block_cmp);
	for (i = 1; i < N; i++) {
		const struct hpu_block *lo = &blocks[i - 1], *hi = &blocks[i];

		EXPECT_LE(lo->addr + lo->size, hi->addr)
			TH_LOG("blocks of %zu and %zu bytes overlap", lo->size, hi->size);
	}
	hpu_stream_destroy(s);
	free(back);
}

/*
 * RLIMIT_MEMLOCK bounds what a process pins: past it, hpu_host_alloc() and
 * hpu_host_register() fail with -ENOMEM and a message with the limit and
 * what was asked; within it they succeed, a registration even when the
 * pinned cache holds freed memory (it gives its unused slabs back).
 */
TEST_F_TIMEOUT(mem, pinning_is_bounded_by_rlimit_memlock, 60)
{
	const size_t limit = hpu_pin_limit(), over = limit + 4096;
	const size_t half = limit / 2 & ~(size_t)4095, most = limit / 4 * 3 & ~(size_t)4095;
	struct hpu_stream *s;
	void *p = NULL, *reg;
	char asked[64];

	if (limit == SIZE_MAX)
		SKIP(return, "no RLIMIT_MEMLOCK applies (infinite, or CAP_IPC_LOCK)");
	ASSERT_EQ(0, hpu_pinned_now(_metadata)) TH_LOG("the device pins nothing at open");
	hpu_expect_pin_refused(_metadata, self->dev, over, false);
	snprintf(asked, sizeof(asked), "cannot pin %zu bytes", over);
	EXPECT_NE(NULL, strstr(hpu_last_error(), asked)) TH_LOG("%s", hpu_last_error());
	hpu_expect_pin_refused(_metadata, self->dev, over, true);

	ASSERT_EQ(0, hpu_host_alloc(self->dev, half, &p)) TH_LOG("%s", hpu_last_error());
	ASSERT_EQ(0, hpu_host_free(self->dev, p));
	reg = aligned_alloc(4096, most);
	ASSERT_NE(NULL, reg);
	ASSERT_EQ(0, hpu_host_register(self->dev, reg, most)) TH_LOG("%s", hpu_last_error());
	EXPECT_GE(limit, hpu_pinned_now(_metadata));
	ASSERT_EQ(0, hpu_host_unregister(self->dev, reg));
	free(reg);

	/* The refusals cost the device nothing: a stream works. */
	s = hpu_new_stream(_metadata, self->dev);
	ASSERT_EQ(0, hpu_memset_async(s, hpu_dev_alloc(_metadata, self->dev, 64), 0x77, 64));
	hpu_sync(_metadata, s);
	hpu_stream_destroy(s);
}

/*
 * A freed block comes back to the next allocation once no work can use it,
 * and not before: a block freed under work in flight waits, pending.
 */
TEST_F(mem, freed_memory_is_reused)
{
	const size_t n = 5 * MiB; /* carved from a 20 MiB slab */
	struct hpu_stream *s = hpu_new_stream(_metadata, self->dev);
	uint64_t a = hpu_dev_alloc(_metadata, self->dev, n), b;
	struct hpu_mem_cache_stats cache;
	int i;

	ASSERT_EQ(0, hpu_mem_free(self->dev, a));
	EXPECT_EQ(a, hpu_dev_alloc(_metadata, self->dev, n));

	for (i = 0; i < 16; i++)
		ASSERT_EQ(0, hpu_memset_async(s, a, i, n));
	ASSERT_EQ(0, hpu_mem_free(self->dev, a));
	cache = hpu_mem_cache(_metadata, self->dev);
	EXPECT_EQ(n, cache.pending);
	b = hpu_dev_alloc(_metadata, self->dev, n);
	EXPECT_NE(a, b) TH_LOG("a block the device may still write was handed out again");

	hpu_sync(_metadata, s);
	ASSERT_EQ(0, hpu_mem_free(self->dev, b));
	cache = hpu_mem_cache(_metadata, self->dev);
	EXPECT_EQ(0, cache.pending);
	EXPECT_EQ(a, hpu_dev_alloc(_metadata, self->dev, n));
	EXPECT_EQ(1, cache.slabs_created);
	hpu_stream_destroy(s);
}

/*
 * The cache holds what was freed until hpu_mem_empty_cache(), which gives
 * back every slab with no live block and no work that may use it; the
 * driver's count of the context's HBM follows.
 */
TEST_F_TIMEOUT(mem, empty_cache_gives_hbm_back, 60)
{
	static const size_t sizes[] = { 1000, 3 * MiB, 40 * MiB }; /* 2 MiB, 20 MiB, own slab */
	const uint64_t slabs = 62 * MiB;
	struct hpu_stream *s = hpu_new_stream(_metadata, self->dev);
	struct hpu_device_stats st0 = hpu_stats(_metadata, self->dev), st;
	struct hpu_mem_cache_stats cache;
	uint64_t p[ARRAY_SIZE(sizes)], keep;
	unsigned int i;

	EXPECT_EQ(0, st0.ctx_hbm_used);
	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		p[i] = hpu_dev_alloc(_metadata, self->dev, sizes[i]);
		ASSERT_EQ(0, hpu_memset_async(s, p[i], i, sizes[i]));
	}
	hpu_sync(_metadata, s);
	st = hpu_stats(_metadata, self->dev);
	EXPECT_EQ(slabs, st.ctx_hbm_used);
	EXPECT_EQ(st0.hbm_used + slabs, st.hbm_used);
	EXPECT_EQ(slabs, hpu_mem_cache(_metadata, self->dev).reserved);
	for (i = 0; i < ARRAY_SIZE(sizes); i++)
		ASSERT_EQ(0, hpu_mem_free(self->dev, p[i]));
	EXPECT_EQ(slabs, hpu_stats(_metadata, self->dev).ctx_hbm_used);

	/* A live block keeps its slab. */
	keep = hpu_dev_alloc(_metadata, self->dev, 100);
	ASSERT_EQ(0, hpu_mem_empty_cache(self->dev));
	EXPECT_EQ(2 * MiB, hpu_stats_settled(_metadata, self->dev, 2 * MiB, UINT64_MAX).ctx_hbm_used);

	/* So does work in flight on a freed block: this one's, and the long work's two. */
	p[0] = hpu_dev_alloc(_metadata, self->dev, sizes[2]);
	hpu_enqueue_long_work(_metadata, self->dev, s);
	ASSERT_EQ(0, hpu_memset_async(s, p[0], 0, sizes[2]));
	ASSERT_EQ(0, hpu_mem_free(self->dev, p[0]));
	ASSERT_EQ(0, hpu_mem_empty_cache(self->dev));
	EXPECT_EQ(2 * MiB + sizes[2] + 2 * HPU_LONG_COPY,
		  hpu_stats(_metadata, self->dev).ctx_hbm_used);

	hpu_sync(_metadata, s);
	ASSERT_EQ(0, hpu_mem_free(self->dev, keep));
	ASSERT_EQ(0, hpu_mem_empty_cache(self->dev));
	st = hpu_stats_settled(_metadata, self->dev, 0, st0.hbm_used);
	EXPECT_EQ(0, st.ctx_hbm_used);
	EXPECT_EQ(st0.hbm_used, st.hbm_used);
	cache = hpu_mem_cache(_metadata, self->dev);
	EXPECT_EQ(0, cache.reserved);
	EXPECT_EQ(0, cache.slabs);
	EXPECT_EQ(0, cache.pending);
	EXPECT_EQ(cache.slabs_created, cache.slabs_released);
	hpu_stream_destroy(s);
}

/*
 * The slab sizes of <hpu/hpu.h>: 2 MiB for requests up to 1 MiB, 20 MiB up
 * to 10 MiB, a slab of its own (rounded to 2 MiB) above.
 */
TEST_F(mem, big_allocations_get_their_own_slab)
{
	static const struct {
		size_t size;
		uint64_t new_slab; /* bytes it maps, 0 if it fits a slab already there */
	} steps[] = {
		{ 600 * 1024, 2 * MiB },
		{ MiB, 0 },
		{ 5 * MiB, 20 * MiB },
		{ 10 * MiB, 0 },
		{ 11 * MiB, 12 * MiB },
		{ 64 * MiB + 1, 66 * MiB },
	};
	uint64_t reserved = 0, big;
	struct hpu_mem_cache_stats cache;
	unsigned int i, slabs = 0;

	for (i = 0; i < ARRAY_SIZE(steps); i++) {
		big = hpu_dev_alloc(_metadata, self->dev, steps[i].size);
		reserved += steps[i].new_slab;
		slabs += !!steps[i].new_slab;
		cache = hpu_mem_cache(_metadata, self->dev);
		EXPECT_EQ(reserved, cache.reserved) TH_LOG("after %zu bytes", steps[i].size);
		EXPECT_EQ(slabs, cache.slabs) TH_LOG("after %zu bytes", steps[i].size);
	}
	EXPECT_EQ(reserved, hpu_stats(_metadata, self->dev).ctx_hbm_used);

	/* Freed and given back, the last and biggest takes its slab and nothing else with it. */
	ASSERT_EQ(0, hpu_mem_free(self->dev, big));
	ASSERT_EQ(0, hpu_mem_empty_cache(self->dev));
	cache = hpu_mem_cache(_metadata, self->dev);
	EXPECT_EQ(reserved - 66 * MiB, cache.reserved);
	EXPECT_EQ(1, cache.slabs_released);
	EXPECT_EQ(reserved - 66 * MiB, hpu_stats(_metadata, self->dev).ctx_hbm_used);
}

/* ---- streams ---- */

HPU_DEVICE_FIXTURE(stream)

/*
 * Each copy reads what the one before it wrote, and each buffer is cleared
 * right after it was read: out of order, the data is lost on the way.
 */
TEST_F_TIMEOUT(stream, runs_in_order, 60)
{
	enum { HOPS = 6 };
	struct hpu_stream *s = hpu_new_stream(_metadata, self->dev);
	/* Staged chunks from pageable memory, as many as the pinned last hop lets. */
	const size_t n = hpu_pin_fit(_metadata, 5 * MiB + 5, 1);
	uint8_t *src = malloc(n), *out = malloc((HOPS - 1) * n);
	uint8_t *last = hpu_pinned(_metadata, self->dev, n);
	uint64_t d[HOPS], last_va;
	int i;

	ASSERT_TRUE(src && out);
	hpu_pattern(src, n, 42);
	memset(last, HPU_HOST_GUARD, n);
	ASSERT_EQ(0, hpu_host_get_device_pointer(self->dev, last, &last_va))
		TH_LOG("%s", hpu_last_error());
	/* Each hop at another misalignment. */
	for (i = 0; i < HOPS; i++)
		d[i] = hpu_dev_alloc(_metadata, self->dev, n + i) + i;
	ASSERT_EQ(0, hpu_memcpy_h2d_async(s, d[0], src, n));
	for (i = 1; i < HOPS; i++) {
		ASSERT_EQ(0, hpu_memcpy_d2d_async(s, d[i], d[i - 1], n));
		ASSERT_EQ(0, hpu_memset_async(s, d[i - 1], 0, n));
	}
	/* The last hop lands in pinned host memory by its device address, the others read back. */
	ASSERT_EQ(0, hpu_memcpy_d2d_async(s, last_va, d[HOPS - 1], n));
	for (i = 0; i < HOPS - 1; i++)
		ASSERT_EQ(0, hpu_memcpy_d2h_async(s, out + i * n, d[i], n));
	hpu_sync(_metadata, s);
	EXPECT_EQ(0, memcmp(last, src, n));
	for (i = 0; i < HOPS - 1; i++)
		hpu_expect_bytes(_metadata, out + i * n, n, 0, "cleared hop");
	hpu_stream_destroy(s);
	free(src);
	free(out);
}

/*
 * On user queues (unless HPU_USER_QUEUES=0 turned them off), taken at the
 * first stream, enqueueing work and learning it ended cost no system call;
 * through the driver each job is a SUBMIT.  Either way the work is done in
 * order.
 */
TEST_F_TIMEOUT(stream, submission_costs_what_the_queues_say, 60)
{
	enum { JOBS = 40 };
	struct hpu_device_info info = { .size = sizeof(info) };
	const char *env = getenv("HPU_USER_QUEUES");
	struct hpu_device_stats before, after;
	struct hpu_stream *s;
	uint8_t *out;
	uint64_t out_va;
	int i;

	/* A device with no stream holds none of the device's user queues yet. */
	ASSERT_EQ(0, hpu_device_get_info(self->dev, &info));
	EXPECT_EQ(0, info.user_queues);
	s = hpu_new_stream(_metadata, self->dev);
	out = hpu_pinned(_metadata, self->dev, JOBS);
	ASSERT_EQ(0, hpu_device_get_info(self->dev, &info));
	EXPECT_EQ(env && !strcmp(env, "0") ? 0 : 1, info.user_queues);
	ASSERT_EQ(0, hpu_host_get_device_pointer(self->dev, out, &out_va));
	memset(out, 0, JOBS);
	hpu_sync(_metadata, s);
	before = hpu_stats(_metadata, self->dev);
	for (i = 0; i < JOBS; i++)
		ASSERT_EQ(0, hpu_memset_async(s, out_va + i, i + 1, JOBS - i));
	after = hpu_stats(_metadata, self->dev);
	/* The stats query of `before` is the one ioctl on user queues. */
	EXPECT_EQ(info.user_queues ? 1 : JOBS + 1, after.ioctls - before.ioctls);
	hpu_sync(_metadata, s);
	for (i = 0; i < JOBS; i++)
		EXPECT_EQ(i + 1, out[i]);
	hpu_stream_destroy(s);
}

/* One thread of threads_share_the_queues: two streams, each a long chain of memsets. */
struct hpu_chain_thread {
	struct hpu_device *dev;
	uint8_t *out;     /* pinned, 2 * HPU_CHAIN_JOBS bytes */
	uint64_t out_va;
	int ret;
	pthread_t tid;
};

#define HPU_CHAIN_JOBS 700

static void *hpu_chain_run(void *arg)
{
	struct hpu_chain_thread *t = arg;
	struct hpu_stream *s[2] = { NULL, NULL };
	int i, k;

	for (k = 0; k < 2 && !t->ret; k++)
		t->ret = hpu_stream_create(t->dev, &s[k]);
	/* More jobs than a ring holds, enqueued without a synchronize: the rings wrap. */
	for (i = 0; i < HPU_CHAIN_JOBS && !t->ret; i++)
		for (k = 0; k < 2 && !t->ret; k++)
			t->ret = hpu_memset_async(s[k], t->out_va + k * HPU_CHAIN_JOBS + i,
						  (i + 1 + k) & 0xff, HPU_CHAIN_JOBS - i);
	for (k = 0; k < 2; k++) {
		if (s[k] && !t->ret)
			t->ret = hpu_stream_synchronize(s[k]);
		hpu_stream_destroy(s[k]);
	}
	return NULL;
}

/*
 * Four threads, eight streams, two per hardware queue: each stream's work
 * still runs in its order, and no job is lost or run twice when submissions
 * from several threads share a queue and its ring wraps.
 */
TEST_F_TIMEOUT(stream, threads_share_the_queues, 120)
{
	enum { THREADS = 4 };
	struct hpu_chain_thread t[THREADS];
	int i, k, n;

	for (n = 0; n < THREADS; n++) {
		t[n] = (struct hpu_chain_thread){ .dev = self->dev };
		t[n].out = hpu_pinned(_metadata, self->dev, 2 * HPU_CHAIN_JOBS);
		memset(t[n].out, 0, 2 * HPU_CHAIN_JOBS);
		ASSERT_EQ(0, hpu_host_get_device_pointer(self->dev, t[n].out, &t[n].out_va));
	}
	for (n = 0; n < THREADS; n++)
		ASSERT_EQ(0, pthread_create(&t[n].tid, NULL, hpu_chain_run, &t[n]));
	for (n = 0; n < THREADS; n++) {
		pthread_join(t[n].tid, NULL);
		EXPECT_EQ(0, t[n].ret) TH_LOG("thread %d: %s", n, hpu_last_error());
	}
	for (n = 0; n < THREADS; n++)
		for (k = 0; k < 2; k++)
			for (i = 0; i < HPU_CHAIN_JOBS; i++)
				ASSERT_EQ((i + 1 + k) & 0xff, t[n].out[k * HPU_CHAIN_JOBS + i])
					TH_LOG("thread %d stream %d byte %d", n, k, i);
}

/*
 * Pageable memory: an H2D copy has taken the data when it returns, so the
 * caller may overwrite it at once; a D2H copy has delivered it.
 */
TEST_F_TIMEOUT(stream, pageable_copies_complete_on_return, 60)
{
	const size_t n = 7 * MiB + 9; /* more chunks than the two staging halves */
	struct hpu_stream *s = hpu_new_stream(_metadata, self->dev);
	uint64_t x = hpu_dev_alloc(_metadata, self->dev, n);
	uint64_t y = hpu_dev_alloc(_metadata, self->dev, n);
	uint8_t *src = malloc(n), *ref = malloc(n), *out = malloc(n);

	ASSERT_TRUE(src && ref && out);
	hpu_pattern(src, n, 1);
	memcpy(ref, src, n);
	ASSERT_EQ(0, hpu_memcpy_h2d_async(s, x, src, n));
	hpu_pattern(src, n, 2);
	ASSERT_EQ(0, hpu_memcpy_h2d_async(s, y, src, n));
	memset(src, 0, n);

	ASSERT_EQ(0, hpu_memcpy_d2h_async(s, out, x, n)) TH_LOG("%s", hpu_last_error());
	EXPECT_EQ(0, memcmp(out, ref, n));
	EXPECT_EQ(0, hpu_stream_query(s));
	ASSERT_EQ(0, hpu_memcpy_d2h_async(s, out, y, n)) TH_LOG("%s", hpu_last_error());
	hpu_pattern(ref, n, 2);
	EXPECT_EQ(0, memcmp(out, ref, n));
	hpu_stream_destroy(s);
	free(src);
	free(ref);
	free(out);
}

/*
 * Eight streams, each with an event and pageable copies both ways, fit in an
 * ordinary user's RLIMIT_MEMLOCK with room to spare: the runtime's pinned
 * memory does not grow with its streams (one staging buffer per device).
 */
TEST_F_TIMEOUT(stream, many_streams_fit_rlimit_memlock, 60)
{
	enum { STREAMS = 8 };
	const size_t n = 3 * MiB + 7, limit = hpu_pin_limit();
	struct hpu_stream *s[STREAMS];
	struct hpu_event *ev[STREAMS];
	uint64_t x = hpu_dev_alloc(_metadata, self->dev, n);
	uint8_t *src = malloc(n), *out = malloc(n);
	size_t pinned;
	int i;

	ASSERT_TRUE(src && out);
	hpu_pattern(src, n, 9);
	for (i = 0; i < STREAMS; i++) {
		s[i] = hpu_new_stream(_metadata, self->dev);
		ev[i] = hpu_new_event(_metadata, self->dev);
	}
	for (i = 0; i < STREAMS; i++) {
		memset(out, 0, n);
		src[i] ^= 0xff;
		ASSERT_EQ(0, hpu_memcpy_h2d_async(s[i], x, src, n)) TH_LOG("%s", hpu_last_error());
		ASSERT_EQ(0, hpu_event_record(ev[i], s[i])) TH_LOG("%s", hpu_last_error());
		ASSERT_EQ(0, hpu_memcpy_d2h_async(s[i], out, x, n)) TH_LOG("%s", hpu_last_error());
		EXPECT_EQ(0, memcmp(out, src, n)) TH_LOG("stream %d", i);
	}
	for (i = 0; i < STREAMS; i++)
		EXPECT_EQ(0, hpu_event_synchronize(ev[i])) TH_LOG("%s", hpu_last_error());
	pinned = hpu_pinned_now(_metadata);
	TH_LOG("%d streams and events: %zu KiB pinned", STREAMS, pinned >> 10);
	if (limit != SIZE_MAX)
		EXPECT_GE(limit / 2, pinned) TH_LOG("of an RLIMIT_MEMLOCK of %zu", limit);
	for (i = 0; i < STREAMS; i++) {
		hpu_event_destroy(ev[i]);
		hpu_stream_destroy(s[i]);
	}
	free(src);
	free(out);
}

TEST_F_TIMEOUT(stream, query_says_whether_work_ended, 60)
{
	struct hpu_stream *s = hpu_new_stream(_metadata, self->dev);
	double deadline;
	int ret;

	EXPECT_EQ(0, hpu_stream_query(s));
	hpu_enqueue_long_work(_metadata, self->dev, s);
	hpu_expect_error(_metadata, hpu_stream_query(s), EAGAIN, "hpu_stream_query",
			 "still running");
	/* The stream finishes without being waited for, and query sees it. */
	deadline = hpu_now() + 30;
	while ((ret = hpu_stream_query(s)) == -EAGAIN && hpu_now() < deadline)
		usleep(1000);
	EXPECT_EQ(0, ret) TH_LOG("%s", hpu_last_error());
	EXPECT_EQ(0, hpu_stream_synchronize(s));
	EXPECT_EQ(0, hpu_stream_query(s));
	hpu_stream_destroy(s);
}

/*
 * Stream B waits on the device for an event A records after a copy of
 * many jobs: B's read sees all of A's result, and completes after the
 * event.  Without the wait, the device runs B's jobs between A's.
 */
TEST_F_TIMEOUT(stream, wait_event_orders_streams, 60)
{
	enum { PIECES = 8 };
	struct hpu_stream *a = hpu_new_stream(_metadata, self->dev);
	struct hpu_stream *b = hpu_new_stream(_metadata, self->dev);
	struct hpu_event *done_a = hpu_new_event(_metadata, self->dev);
	struct hpu_event *done_b = hpu_new_event(_metadata, self->dev);
	const size_t piece = hpu_pin_fit(_metadata, HPU_LONG_COPY, 2) / PIECES;
	const size_t n = PIECES * piece;
	uint8_t *src = hpu_pinned(_metadata, self->dev, n);
	uint8_t *out = hpu_pinned(_metadata, self->dev, n);
	uint64_t x = hpu_dev_alloc(_metadata, self->dev, n);
	uint64_t y = hpu_dev_alloc(_metadata, self->dev, n);
	int64_t ns = -1;
	size_t off;

	hpu_pattern(src, n, 7);
	ASSERT_EQ(0, hpu_memset_async(a, x, 0, n));
	ASSERT_EQ(0, hpu_memset_async(b, y, 0, n));
	/* So that B's jobs are surely enqueued before A writes x. */
	hpu_enqueue_long_work(_metadata, self->dev, a);
	for (off = 0; off < n; off += piece)
		ASSERT_EQ(0, hpu_memcpy_h2d_async(a, x + off, src + off, piece));
	ASSERT_EQ(0, hpu_event_record(done_a, a));
	ASSERT_EQ(0, hpu_stream_wait_event(b, done_a)) TH_LOG("%s", hpu_last_error());
	ASSERT_EQ(0, hpu_memcpy_d2d_async(b, y, x, n));
	ASSERT_EQ(0, hpu_memcpy_d2h_async(b, out, y, n));
	ASSERT_EQ(0, hpu_event_record(done_b, b));
	hpu_sync(_metadata, b);
	EXPECT_EQ(0, memcmp(out, src, n));
	/* A is not waited for by the host, yet its event must have completed. */
	EXPECT_EQ(0, hpu_event_query(done_a)) TH_LOG("%s", hpu_last_error());
	ASSERT_EQ(0, hpu_event_elapsed_time(done_a, done_b, &ns)) TH_LOG("%s", hpu_last_error());
	EXPECT_LE(0, ns);
	hpu_event_destroy(done_a);
	hpu_event_destroy(done_b);
	hpu_stream_destroy(a);
	hpu_stream_destroy(b);
}

/*
 * hpu_device_synchronize() waits for every stream's work, a destroyed
 * stream's too (the last one, with the most work).
 */
TEST_F_TIMEOUT(stream, device_synchronize_waits_for_all, 60)
{
	enum { STREAMS = 3 };
	const size_t n = hpu_pin_fit(_metadata, 24 * MiB, 2 * STREAMS);
	struct hpu_stream *s[STREAMS];
	uint8_t *src = hpu_pinned(_metadata, self->dev, STREAMS * n);
	uint8_t *out = hpu_pinned(_metadata, self->dev, STREAMS * n);
	struct hpu_device_stats st;
	int i;

	hpu_pattern(src, STREAMS * n, 3);
	memset(out, 0, STREAMS * n);
	for (i = 0; i < STREAMS; i++) {
		uint64_t x = hpu_dev_alloc(_metadata, self->dev, n);

		s[i] = hpu_new_stream(_metadata, self->dev);
		if (i == STREAMS - 1)
			hpu_enqueue_long_work(_metadata, self->dev, s[i]);
		ASSERT_EQ(0, hpu_memcpy_h2d_async(s[i], x, src + i * n, n));
		ASSERT_EQ(0, hpu_memcpy_d2h_async(s[i], out + i * n, x, n));
		ASSERT_EQ(0, hpu_mem_free(self->dev, x));
	}
	hpu_stream_destroy(s[STREAMS - 1]);
	ASSERT_EQ(0, hpu_device_synchronize(self->dev)) TH_LOG("%s", hpu_last_error());
	st = hpu_stats(_metadata, self->dev);
	EXPECT_EQ(st.ctx_jobs_submitted, st.ctx_jobs_completed);
	EXPECT_EQ(0, memcmp(out, src, STREAMS * n));
	for (i = 0; i < STREAMS - 1; i++) {
		EXPECT_EQ(0, hpu_stream_query(s[i]));
		hpu_stream_destroy(s[i]);
	}
}

/* ---- events ---- */

HPU_DEVICE_FIXTURE(event)

TEST_F_TIMEOUT(event, record_query_synchronize, 60)
{
	struct hpu_stream *s = hpu_new_stream(_metadata, self->dev);
	struct hpu_event *ev = hpu_new_event(_metadata, self->dev);
	struct hpu_stream *other = hpu_new_stream(_metadata, self->dev);
	struct hpu_device_stats st;

	/* Never recorded: complete, and nothing to wait for. */
	EXPECT_EQ(0, hpu_event_query(ev));
	EXPECT_EQ(0, hpu_event_synchronize(ev));
	st = hpu_stats(_metadata, self->dev);
	EXPECT_EQ(0, hpu_stream_wait_event(other, ev));
	EXPECT_EQ(st.ctx_jobs_submitted, hpu_stats(_metadata, self->dev).ctx_jobs_submitted);

	ASSERT_EQ(0, hpu_event_record(ev, s));
	EXPECT_EQ(0, hpu_event_synchronize(ev)) TH_LOG("%s", hpu_last_error());

	/* Recorded again, after more work: the event moves there. */
	hpu_enqueue_long_work(_metadata, self->dev, s);
	ASSERT_EQ(0, hpu_event_record(ev, s));
	hpu_expect_error(_metadata, hpu_event_query(ev), EAGAIN, "hpu_event_query",
			 "not completed");
	EXPECT_EQ(0, hpu_event_synchronize(ev)) TH_LOG("%s", hpu_last_error());
	EXPECT_EQ(0, hpu_event_query(ev));

	/* The event marks a point: work enqueued after it does not hold it back. */
	ASSERT_EQ(0, hpu_event_record(ev, s));
	hpu_enqueue_long_work(_metadata, self->dev, s);
	EXPECT_EQ(0, hpu_event_synchronize(ev)) TH_LOG("%s", hpu_last_error());
	EXPECT_EQ(-EAGAIN, hpu_stream_query(s));
	hpu_sync(_metadata, s);
	hpu_event_destroy(ev);
	hpu_stream_destroy(s);
	hpu_stream_destroy(other);
}

/*
 * Device time around a 64 MiB copy: positive, inside the host's own
 * measure of the same interval, and consistent between three events of one
 * stream.
 */
TEST_F_TIMEOUT(event, elapsed_time_of_a_copy, 60)
{
	const size_t n = 64 * MiB;
	struct hpu_stream *s = hpu_new_stream(_metadata, self->dev);
	struct hpu_event *e[3];
	uint64_t x = hpu_dev_alloc(_metadata, self->dev, n);
	uint64_t y = hpu_dev_alloc(_metadata, self->dev, n);
	int64_t ns01 = -1, ns12 = -1, ns02 = -1, ns10 = 1;
	double t0, t1;
	int i;

	for (i = 0; i < 3; i++)
		e[i] = hpu_new_event(_metadata, self->dev);
	/* First touch of the device memory, so the timed copy is a copy only. */
	ASSERT_EQ(0, hpu_memcpy_d2d_async(s, y, x, n));
	hpu_sync(_metadata, s);

	t0 = hpu_now();
	ASSERT_EQ(0, hpu_event_record(e[0], s));
	ASSERT_EQ(0, hpu_memcpy_d2d_async(s, y, x, n));
	ASSERT_EQ(0, hpu_event_record(e[1], s));
	ASSERT_EQ(0, hpu_event_record(e[2], s));
	ASSERT_EQ(0, hpu_event_synchronize(e[2]));
	t1 = hpu_now();

	ASSERT_EQ(0, hpu_event_elapsed_time(e[0], e[1], &ns01)) TH_LOG("%s", hpu_last_error());
	ASSERT_EQ(0, hpu_event_elapsed_time(e[1], e[2], &ns12));
	ASSERT_EQ(0, hpu_event_elapsed_time(e[0], e[2], &ns02));
	ASSERT_EQ(0, hpu_event_elapsed_time(e[1], e[0], &ns10));
	TH_LOG("64 MiB copy: %.3f ms device time, %.3f ms host time", ns01 / 1e6, (t1 - t0) * 1e3);
	/* 64 MiB at 100 bytes/ns: faster than any memmove the device model can do. */
	EXPECT_LT((int64_t)n / 100, ns01);
	EXPECT_GE((t1 - t0) * 1e9, ns01);
	EXPECT_LE(0, ns12);
	EXPECT_EQ(ns01 + ns12, ns02);
	EXPECT_EQ(-ns01, ns10);
	for (i = 0; i < 3; i++)
		hpu_event_destroy(e[i]);
	hpu_stream_destroy(s);
}

TEST_F_TIMEOUT(event, elapsed_time_errors, 60)
{
	struct hpu_stream *s = hpu_new_stream(_metadata, self->dev);
	struct hpu_event *rec = hpu_new_event(_metadata, self->dev);
	struct hpu_event *never = hpu_new_event(_metadata, self->dev);
	struct hpu_event *foreign;
	struct hpu_device *dev2 = NULL;
	int64_t ns = 12345;

	ASSERT_EQ(0, hpu_event_record(rec, s));
	hpu_sync(_metadata, s);
	hpu_expect_error(_metadata, hpu_event_elapsed_time(never, rec, &ns), EINVAL,
			 "hpu_event_elapsed_time", "start was never recorded");
	hpu_expect_error(_metadata, hpu_event_elapsed_time(rec, never, &ns), EINVAL,
			 "hpu_event_elapsed_time", "end was never recorded");
	hpu_expect_error(_metadata, hpu_event_elapsed_time(never, never, &ns), EINVAL,
			 "hpu_event_elapsed_time", "never recorded");
	hpu_expect_error(_metadata, hpu_event_elapsed_time(rec, rec, NULL), EINVAL,
			 "hpu_event_elapsed_time", "ns is NULL");
	EXPECT_EQ(12345, ns);

	ASSERT_EQ(0, hpu_device_open(0, &dev2)) TH_LOG("%s", hpu_last_error());
	foreign = hpu_new_event(_metadata, dev2);
	hpu_expect_error(_metadata, hpu_event_elapsed_time(rec, foreign, &ns), EINVAL,
			 "hpu_event_elapsed_time", "different devices");
	hpu_expect_error(_metadata, hpu_event_record(foreign, s), EINVAL, "hpu_event_record",
			 "different devices");
	hpu_device_close(dev2);

	hpu_enqueue_long_work(_metadata, self->dev, s);
	ASSERT_EQ(0, hpu_event_record(never, s));
	hpu_expect_error(_metadata, hpu_event_elapsed_time(rec, never, &ns), EAGAIN,
			 "hpu_event_elapsed_time", "end has not completed");
	EXPECT_EQ(12345, ns);
	hpu_sync(_metadata, s);
	EXPECT_EQ(0, hpu_event_elapsed_time(rec, never, &ns));
	EXPECT_LT(0, ns);
	hpu_event_destroy(rec);
	hpu_event_destroy(never);
	hpu_stream_destroy(s);
}

/* ---- job failures and argument errors ---- */

HPU_DEVICE_FIXTURE(errors)

/*
 * A failed job is reported by the next synchronize, once, with its stream,
 * job and call; the jobs after it still run and the stream keeps working.
 */
TEST_F(errors, failed_job_reported_once)
{
	struct hpu_stream *s = hpu_new_stream(_metadata, self->dev);
	uint64_t a = hpu_dev_alloc(_metadata, self->dev, 4096);
	struct hpu_device_stats before = hpu_stats(_metadata, self->dev), after;
	uint8_t back[4096];

	ASSERT_EQ(0, hpu_memset_async(s, a, 1, 4096));
	hpu_enqueue_fault(_metadata, s, a);
	ASSERT_EQ(0, hpu_memset_async(s, a, 2, 4096));
	hpu_expect_fault(_metadata, hpu_stream_synchronize(s), "hpu_stream_synchronize");
	EXPECT_EQ(0, hpu_stream_synchronize(s));
	EXPECT_EQ(0, hpu_stream_query(s));
	after = hpu_stats(_metadata, self->dev);
	EXPECT_EQ(before.ctx_jobs_failed + 1, after.ctx_jobs_failed);

	ASSERT_EQ(0, hpu_memcpy_d2h_async(s, back, a, sizeof(back))) TH_LOG("%s", hpu_last_error());
	hpu_expect_bytes(_metadata, back, sizeof(back), 2, "the job after the failed one");

	/* Two failures between synchronizes: one report. */
	hpu_enqueue_fault(_metadata, s, a);
	hpu_enqueue_fault(_metadata, s, a);
	hpu_expect_fault(_metadata, hpu_stream_synchronize(s), "hpu_stream_synchronize");
	EXPECT_NE(NULL, strstr(hpu_last_error(), "; 1 more job")) TH_LOG("%s", hpu_last_error());
	EXPECT_EQ(0, hpu_stream_synchronize(s));
	hpu_stream_destroy(s);
}

/* An event reports the failures before it and only those; each failure is reported once. */
TEST_F(errors, failed_job_reported_by_event)
{
	struct hpu_stream *s = hpu_new_stream(_metadata, self->dev);
	struct hpu_event *ev = hpu_new_event(_metadata, self->dev);
	uint64_t a = hpu_dev_alloc(_metadata, self->dev, 4096);

	hpu_enqueue_fault(_metadata, s, a);
	ASSERT_EQ(0, hpu_event_record(ev, s));
	ASSERT_EQ(0, hpu_memset_async(s, a, 3, 4096));
	hpu_expect_fault(_metadata, hpu_event_synchronize(ev), "hpu_event_synchronize");
	EXPECT_EQ(0, hpu_stream_synchronize(s)) TH_LOG("reported twice: %s", hpu_last_error());

	ASSERT_EQ(0, hpu_event_record(ev, s));
	hpu_enqueue_fault(_metadata, s, a);
	EXPECT_EQ(0, hpu_event_synchronize(ev)) TH_LOG("%s", hpu_last_error());
	hpu_expect_fault(_metadata, hpu_stream_synchronize(s), "hpu_stream_synchronize");
	hpu_event_destroy(ev);
	hpu_stream_destroy(s);
}

/*
 * A pageable D2H copy and hpu_device_synchronize() report failures too,
 * once; a destroyed stream's failures are not reported.
 */
TEST_F(errors, failed_job_reported_by_copy_and_device)
{
	struct hpu_stream *s = hpu_new_stream(_metadata, self->dev);
	struct hpu_stream *gone = hpu_new_stream(_metadata, self->dev);
	uint64_t a = hpu_dev_alloc(_metadata, self->dev, 4096);
	uint8_t back[64];

	hpu_enqueue_fault(_metadata, s, a);
	hpu_expect_fault(_metadata, hpu_memcpy_d2h_async(s, back, a, sizeof(back)),
			 "hpu_memcpy_d2h_async");
	EXPECT_EQ(0, hpu_stream_synchronize(s));

	hpu_enqueue_fault(_metadata, gone, a);
	hpu_stream_destroy(gone);
	hpu_enqueue_fault(_metadata, s, a);
	hpu_expect_fault(_metadata, hpu_device_synchronize(self->dev), "hpu_device_synchronize");
	EXPECT_EQ(0, hpu_device_synchronize(self->dev)) TH_LOG("%s", hpu_last_error());
	EXPECT_EQ(0, hpu_stream_synchronize(s));
	hpu_stream_destroy(s);
}

/* Bad arguments fail at the call, with a message, and enqueue nothing. */
TEST_F(errors, bad_arguments)
{
	struct hpu_stream *s = hpu_new_stream(_metadata, self->dev);
	struct hpu_event *ev = hpu_new_event(_metadata, self->dev);
	uint64_t a = hpu_dev_alloc(_metadata, self->dev, 4096), devptr = 0;
	struct hpu_device_stats before = hpu_stats(_metadata, self->dev);
	struct hpu_mem_stats ms = { .size = HPU_MEM_STATS_SIZE_V1 - 1 };
	struct hpu_device_stats ds = { .size = HPU_DEVICE_STATS_SIZE_V1 - 1 };
	uint8_t host[64], *pinned = hpu_pinned(_metadata, self->dev, 64);

	hpu_expect_error(_metadata, hpu_memcpy_d2d_async(s, a, a + 10, 100), EINVAL,
			 "hpu_memcpy_d2d_async", "overlap");
	hpu_expect_error(_metadata, hpu_memcpy_h2d_async(s, 0, host, 1), EINVAL,
			 "hpu_memcpy_h2d_async", "dst is a null device address");
	hpu_expect_error(_metadata, hpu_memcpy_h2d_async(s, a, NULL, 1), EINVAL,
			 "hpu_memcpy_h2d_async", "src is NULL");
	hpu_expect_error(_metadata, hpu_memcpy_d2h_async(s, host, ~0ull - 8, 64), EINVAL,
			 "hpu_memcpy_d2h_async", "wraps around");
	hpu_expect_error(_metadata, hpu_memcpy_d2h_async(NULL, host, a, 1), EINVAL,
			 "hpu_memcpy_d2h_async", "stream is NULL");
	hpu_expect_error(_metadata, hpu_memset(self->dev, 0, 0, 1), EINVAL, "hpu_memset",
			 "dst is a null device address");
	hpu_expect_error(_metadata, hpu_mem_free(self->dev, a + 512), EINVAL, "hpu_mem_free",
			 "not allocated");
	hpu_expect_error(_metadata, hpu_mem_alloc(self->dev, 1, NULL), EINVAL, "hpu_mem_alloc",
			 "devptr is NULL");
	hpu_expect_error(_metadata, hpu_host_free(self->dev, host), EINVAL, "hpu_host_free",
			 "not pinned");
	hpu_expect_error(_metadata, hpu_host_alloc(self->dev, 1, NULL), EINVAL, "hpu_host_alloc",
			 "ptr is NULL");
	hpu_expect_error(_metadata, hpu_host_register(self->dev, host, 0), EINVAL,
			 "hpu_host_register", "size is 0");
	hpu_expect_error(_metadata, hpu_host_register(self->dev, pinned + 8, 8), EEXIST,
			 "hpu_host_register", "overlaps pinned memory");
	hpu_expect_error(_metadata, hpu_host_unregister(self->dev, host), EINVAL,
			 "hpu_host_unregister", "not the start of registered memory");
	hpu_expect_error(_metadata, hpu_host_get_device_pointer(self->dev, host, &devptr), ENOENT,
			 "hpu_host_get_device_pointer", "not pinned");
	hpu_expect_error(_metadata, hpu_host_is_pinned(self->dev, NULL, 1), EINVAL,
			 "hpu_host_is_pinned", "ptr is NULL");
	hpu_expect_error(_metadata, hpu_host_is_pinned(self->dev, pinned, SIZE_MAX), EINVAL,
			 "hpu_host_is_pinned", "wraps around");
	hpu_expect_error(_metadata, hpu_stream_create(self->dev, NULL), EINVAL,
			 "hpu_stream_create", "streamp is NULL");
	hpu_expect_error(_metadata, hpu_stream_synchronize(NULL), EINVAL,
			 "hpu_stream_synchronize", "stream is NULL");
	hpu_expect_error(_metadata, hpu_stream_wait_event(s, NULL), EINVAL,
			 "hpu_stream_wait_event", "event is NULL");
	hpu_expect_error(_metadata, hpu_event_record(ev, NULL), EINVAL, "hpu_event_record",
			 "stream is NULL");
	hpu_expect_error(_metadata, hpu_mem_get_stats(self->dev, &ms), EINVAL,
			 "hpu_mem_get_stats", "size");
	hpu_expect_error(_metadata, hpu_device_get_stats(self->dev, &ds), EINVAL,
			 "hpu_device_get_stats", "size");
	hpu_expect_error(_metadata, hpu_mem_alloc(self->dev, SIZE_MAX, &devptr), ENOMEM,
			 "hpu_mem_alloc", "device memory");
	/* More than the device has: the driver says so, after the cache gave back what it could. */
	hpu_expect_error(_metadata, hpu_mem_alloc(self->dev, 64ull << 30, &devptr), ENOMEM,
			 "hpu_mem_alloc", "");
	EXPECT_EQ(0, devptr);

	/* Size 0 is no work, even at a bad address. */
	EXPECT_EQ(0, hpu_memcpy_d2d_async(s, a, a, 0));
	EXPECT_EQ(0, hpu_memset_async(s, 0, 0, 0));
	EXPECT_EQ(0, hpu_mem_alloc(self->dev, 0, &devptr));
	EXPECT_EQ(0, devptr);
	EXPECT_EQ(before.ctx_jobs_submitted, hpu_stats(_metadata, self->dev).ctx_jobs_submitted);
	EXPECT_EQ(0, hpu_stream_synchronize(s));
	hpu_event_destroy(ev);
	hpu_stream_destroy(s);
}

/* ---- teardown with work in flight ---- */

HPU_DEVICE_FIXTURE(teardown)

/*
 * A destroyed stream's work still runs to the end, an event recorded on it
 * still completes, and memory freed under that work waits for it.
 */
TEST_F_TIMEOUT(teardown, destroy_stream_with_work_in_flight, 60)
{
	struct hpu_stream *s = hpu_new_stream(_metadata, self->dev);
	struct hpu_event *ev = hpu_new_event(_metadata, self->dev);
	const size_t n = hpu_pin_fit(_metadata, 32 * MiB, 2);
	uint8_t *src = hpu_pinned(_metadata, self->dev, n);
	uint8_t *out = hpu_pinned(_metadata, self->dev, n);
	uint8_t *ref = malloc(n);
	uint64_t x = hpu_dev_alloc(_metadata, self->dev, n);
	uint64_t y = hpu_dev_alloc(_metadata, self->dev, n);
	struct hpu_mem_cache_stats cache;
	int i;

	ASSERT_NE(NULL, ref);
	hpu_pattern(src, n, 5);
	memcpy(ref, src, n);
	memset(out, 0, n);
	hpu_enqueue_long_work(_metadata, self->dev, s);
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, hpu_memcpy_h2d_async(s, x, src, n));
		ASSERT_EQ(0, hpu_memcpy_d2d_async(s, y, x, n));
	}
	ASSERT_EQ(0, hpu_memcpy_d2h_async(s, out, y, n));
	ASSERT_EQ(0, hpu_event_record(ev, s));
	ASSERT_EQ(-EAGAIN, hpu_stream_query(s)) TH_LOG("the work ended too soon to test anything");
	hpu_stream_destroy(s);
	ASSERT_EQ(0, hpu_mem_free(self->dev, x));
	ASSERT_EQ(0, hpu_mem_free(self->dev, y));
	ASSERT_EQ(0, hpu_host_free(self->dev, src));
	cache = hpu_mem_cache(_metadata, self->dev);
	EXPECT_LE(2 * n, cache.pending);
	/* Not the freed blocks, which the work still uses. */
	x = hpu_dev_alloc(_metadata, self->dev, n);
	ASSERT_EQ(0, hpu_memset(self->dev, x, 0xff, n)) TH_LOG("%s", hpu_last_error());

	EXPECT_EQ(0, hpu_event_synchronize(ev)) TH_LOG("%s", hpu_last_error());
	EXPECT_EQ(0, memcmp(out, ref, n));
	EXPECT_EQ(0, hpu_device_synchronize(self->dev)) TH_LOG("%s", hpu_last_error());
	hpu_event_destroy(ev);
	ASSERT_EQ(0, hpu_mem_free(self->dev, x));
	ASSERT_EQ(0, hpu_host_free(self->dev, out));
	ASSERT_EQ(0, hpu_mem_empty_cache(self->dev));
	EXPECT_EQ(0, hpu_mem_cache(_metadata, self->dev).reserved);
	EXPECT_EQ(0, hpu_stats(_metadata, self->dev).ctx_hbm_used);
	free(ref);
}

/*
 * Closing a device with copies still queued on live and destroyed streams,
 * events, memory and a registration left behind gives everything back: the
 * device-wide HBM count returns to where it was, and a new context starts
 * from nothing.
 */
TEST_F_TIMEOUT(teardown, close_device_with_work_in_flight, 60)
{
	struct hpu_device_stats before = hpu_stats(_metadata, self->dev), st;
	struct hpu_device *dev2 = NULL, *dev3 = NULL;
	struct hpu_stream *s1, *s2;
	size_t n, reg_size;
	uint8_t *src, *reg;
	uint64_t x, y;
	int i;

	ASSERT_EQ(0, hpu_device_open(0, &dev2)) TH_LOG("%s", hpu_last_error());
	s1 = hpu_new_stream(_metadata, dev2);
	s2 = hpu_new_stream(_metadata, dev2);
	/* Left for hpu_device_close(), like the memory below. */
	hpu_new_event(_metadata, dev2);
	n = hpu_pin_fit(_metadata, 32 * MiB, 3);
	reg_size = n < 4 * MiB + 100 ? n : 4 * MiB + 100;
	reg = malloc(reg_size);
	ASSERT_NE(NULL, reg);
	src = hpu_pinned(_metadata, dev2, n);
	x = hpu_dev_alloc(_metadata, dev2, n);
	y = hpu_dev_alloc(_metadata, dev2, n);
	hpu_dev_alloc(_metadata, dev2, 1000);
	ASSERT_EQ(0, hpu_host_register(dev2, reg, reg_size)) TH_LOG("%s", hpu_last_error());
	hpu_enqueue_long_work(_metadata, dev2, s1);
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, hpu_memcpy_h2d_async(s1, x, src, n));
		ASSERT_EQ(0, hpu_memcpy_d2d_async(s2, y, x + i, n - i));
		ASSERT_EQ(0, hpu_memcpy_d2h_async(s2, reg, y, reg_size));
	}
	st = hpu_stats(_metadata, dev2);
	EXPECT_EQ(before.num_contexts + 1, st.num_contexts);
	/* (0.11) Another context, another id; 0 is the driver's own. */
	EXPECT_NE(0, st.ctx_id);
	EXPECT_NE(before.ctx_id, st.ctx_id);
	EXPECT_EQ(before.hbm_used + st.ctx_hbm_used, st.hbm_used);
	EXPECT_LT(0, st.ctx_host_pinned);
	hpu_stream_destroy(s2);
	ASSERT_EQ(-EAGAIN, hpu_stream_query(s1)) TH_LOG("the work ended too soon to test anything");
	hpu_device_close(dev2);
	/* The registration is gone with the device: the memory is the caller's again. */
	free(reg);

	st = hpu_stats(_metadata, self->dev);
	EXPECT_EQ(before.hbm_used, st.hbm_used);
	EXPECT_EQ(before.num_contexts, st.num_contexts);
	EXPECT_EQ(st.jobs_submitted, st.jobs_completed + st.jobs_failed);

	ASSERT_EQ(0, hpu_device_open(0, &dev3)) TH_LOG("%s", hpu_last_error());
	st = hpu_stats(_metadata, dev3);
	EXPECT_EQ(before.num_contexts + 1, st.num_contexts);
	EXPECT_EQ(0, st.ctx_hbm_used);
	EXPECT_EQ(0, st.ctx_host_pinned);
	EXPECT_EQ(0, st.ctx_jobs_submitted);
	EXPECT_EQ(before.hbm_used, st.hbm_used);
	hpu_device_close(dev3);
}

TEST_HARNESS_MAIN
