// SPDX-License-Identifier: MIT
/*
 * The submission path through the raw ABI: HBM buffers, mappings, jobs and
 * waits.  Data integrity in every direction and size, job errors the device
 * reports, cross-queue sync, usage accounting, and every rejection path of
 * every new ioctl with its documented errno.
 */
#include "kselftest_harness.h"

#include "hpu_abi.h"
#include "hpu_test.h"

#define MiB (1ull << 20)
#define GiB (1ull << 30)

FIXTURE(sub) {
	char bdf[64];
	int fd;
	struct hpu_cb cb;
};

FIXTURE_SETUP(sub)
{
	ASSERT_EQ(0, hpu_find_bdf(self->bdf, sizeof(self->bdf)));
	self->fd = hpu_open_node(self->bdf);
	ASSERT_LE(0, self->fd);
	self->cb.size = 0;
}

FIXTURE_TEARDOWN(sub)
{
	close(self->fd);
}

/* A buffer of size bytes mapped read-write; returns its VA (0 on failure). */
static uint64_t hbm_buffer(int fd, uint64_t size, uint32_t *handle)
{
	uint64_t va = 0;

	if (hpu_gem_create(fd, size, 0, handle))
		return 0;
	if (hpu_vm_map(fd, *handle, 0, NULL, size, DRM_HPU_VM_MAP_READ | DRM_HPU_VM_MAP_WRITE, &va))
		return 0;
	return va;
}

/* Host pages mapped for the device; returns their VA (0 on failure). */
static uint64_t host_buffer(int fd, void *p, uint64_t size, uint32_t flags)
{
	uint64_t va = 0;

	return hpu_vm_map(fd, 0, 0, p, size, flags, &va) ? 0 : va;
}

static void fill(uint8_t *p, uint64_t n, uint32_t seed)
{
	uint64_t i;

	for (i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = seed >> 16;
	}
}

/* A round trip's buffers: host pages src and dst of host_len mapped, HBM a and b of hbm_len. */
struct trip {
	uint8_t *src, *dst;
	uint64_t host_len, src_va, dst_va, a_va, b_va;
	uint32_t ha, hb;
};

static void trip_open(struct __test_metadata *_metadata, FIXTURE_DATA(sub) *self, struct trip *t,
		      uint64_t host_len, uint64_t hbm_len)
{
	t->host_len = host_len;
	t->src = hpu_host_pages(host_len);
	t->dst = hpu_host_pages(host_len);
	ASSERT_NE(NULL, t->src);
	ASSERT_NE(NULL, t->dst);
	t->src_va = host_buffer(self->fd, t->src, host_len, DRM_HPU_VM_MAP_READ);
	t->dst_va = host_buffer(self->fd, t->dst, host_len, DRM_HPU_VM_MAP_WRITE);
	t->a_va = hbm_buffer(self->fd, hbm_len, &t->ha);
	t->b_va = hbm_buffer(self->fd, hbm_len, &t->hb);
	ASSERT_NE(0, t->src_va);
	ASSERT_NE(0, t->dst_va);
	ASSERT_NE(0, t->a_va);
	ASSERT_NE(0, t->b_va);
}

static void trip_close(struct __test_metadata *_metadata, FIXTURE_DATA(sub) *self,
		       struct trip *t)
{
	EXPECT_EQ(0, hpu_vm_unmap(self->fd, t->src_va));
	EXPECT_EQ(0, hpu_vm_unmap(self->fd, t->dst_va));
	EXPECT_EQ(0, hpu_vm_unmap(self->fd, t->a_va));
	EXPECT_EQ(0, hpu_vm_unmap(self->fd, t->b_va));
	EXPECT_EQ(0, hpu_gem_close(self->fd, t->ha));
	EXPECT_EQ(0, hpu_gem_close(self->fd, t->hb));
	munmap(t->src, t->host_len);
	munmap(t->dst, t->host_len);
}

/*
 * Host -> HBM -> HBM -> host for one size and pair of unaligned offsets:
 * every direction the DMA engine has, checked byte for byte, with the bytes
 * around the destination untouched.
 */
static void round_trip(struct __test_metadata *_metadata, FIXTURE_DATA(sub) *self,
		       uint64_t size, uint64_t soff, uint64_t doff)
{
	uint64_t span = (size + 2 * HPU_PAGE + HPU_PAGE - 1) & ~(HPU_PAGE - 1);
	struct trip t;

	trip_open(_metadata, self, &t, span, span);
	fill(t.src, span, size);
	memset(t.dst, 0x5a, span);
	self->cb.size = 0;
	hpu_cb_dma(&self->cb, t.a_va + doff, t.src_va + soff, size);   /* H2D */
	hpu_cb_dma(&self->cb, t.b_va + soff, t.a_va + doff, size);     /* D2D */
	hpu_cb_dma(&self->cb, t.dst_va + doff, t.b_va + soff, size);   /* D2H */
	ASSERT_EQ(0, hpu_run(self->fd, 0, self->cb.buf, self->cb.size));

	EXPECT_EQ(0, memcmp(t.dst + doff, t.src + soff, size))
		TH_LOG("size %llu", (unsigned long long)size);
	EXPECT_EQ(0x5a, t.dst[doff - 1]);
	EXPECT_EQ(0x5a, t.dst[doff + size]);
	trip_close(_metadata, self, &t);
}

TEST_F(sub, copy_small_sizes)
{
	static const uint64_t sizes[] = { 1, 2, 3, 7, 8, 63, 4095, 4096, 4097, 8191, 65537 };
	unsigned int i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		round_trip(_metadata, self, sizes[i], 1 + i, 4093 - i);
}

/*
 * The same for a size past what an ordinary user may pin (RLIMIT_MEMLOCK,
 * 8 MiB): the host side goes through a window of WINDOW bytes, one copy
 * each way per window, and the HBM -> HBM copy is one packet of size.
 */
#define WINDOW MiB

static void round_trip_windowed(struct __test_metadata *_metadata, FIXTURE_DATA(sub) *self,
				uint64_t size, uint64_t soff, uint64_t doff)
{
	uint64_t span = (size + 3 * HPU_PAGE - 1) & ~(HPU_PAGE - 1), off, n;
	unsigned int wrong = 0;
	struct trip t;

	trip_open(_metadata, self, &t, WINDOW, span);
	for (off = 0; off < size; off += n) {
		n = size - off < WINDOW ? size - off : WINDOW;
		fill(t.src, n, (uint32_t)(off / WINDOW));
		self->cb.size = 0;
		hpu_cb_dma(&self->cb, t.a_va + doff + off, t.src_va, n);
		ASSERT_EQ(0, hpu_run(self->fd, 0, self->cb.buf, self->cb.size));
	}
	self->cb.size = 0;
	hpu_cb_dma(&self->cb, t.b_va + soff, t.a_va + doff, size);
	ASSERT_EQ(0, hpu_run(self->fd, 0, self->cb.buf, self->cb.size));
	for (off = 0; off < size; off += n) {
		n = size - off < WINDOW ? size - off : WINDOW;
		fill(t.src, n, (uint32_t)(off / WINDOW));
		self->cb.size = 0;
		hpu_cb_dma(&self->cb, t.dst_va, t.b_va + soff + off, n);
		ASSERT_EQ(0, hpu_run(self->fd, 0, self->cb.buf, self->cb.size));
		wrong += memcmp(t.dst, t.src, n) != 0;
	}
	EXPECT_EQ(0, wrong) TH_LOG("size %llu: %u windows differ", (unsigned long long)size, wrong);
	trip_close(_metadata, self, &t);
}

TEST_F_TIMEOUT(sub, copy_large_sizes, 600)
{
	round_trip(_metadata, self, 1 * MiB + 7, 5, 3);
	round_trip_windowed(_metadata, self, 64 * MiB, 4095, 1);
	round_trip_windowed(_metadata, self, 256 * MiB + 13, 17, 4001);
}

TEST_F(sub, memset)
{
	uint8_t *dst = hpu_host_pages(4 * HPU_PAGE);
	uint64_t dst_va, hbm;
	uint32_t h;
	int i;

	ASSERT_NE(NULL, dst);
	memset(dst, 0, 4 * HPU_PAGE);
	dst_va = host_buffer(self->fd, dst, 4 * HPU_PAGE, DRM_HPU_VM_MAP_WRITE);
	hbm = hbm_buffer(self->fd, 4 * HPU_PAGE, &h);
	ASSERT_NE(0, dst_va);
	ASSERT_NE(0, hbm);
	hpu_cb_memset(&self->cb, hbm, 0xc3, 3 * HPU_PAGE);
	hpu_cb_memset(&self->cb, hbm + 100, 0x11, 5000);
	hpu_cb_dma(&self->cb, dst_va, hbm, 4 * HPU_PAGE);
	ASSERT_EQ(0, hpu_run(self->fd, 1, self->cb.buf, self->cb.size));
	for (i = 0; i < 4 * (int)HPU_PAGE; i++) {
		uint8_t want = i >= 100 && i < 5100 ? 0x11 : i < 3 * (int)HPU_PAGE ? 0xc3 : 0;

		ASSERT_EQ(want, dst[i]) TH_LOG("byte %d", i);
	}
}

/* New buffers read as zero whatever the memory held before. */
TEST_F(sub, new_buffers_are_zeroed)
{
	uint8_t *dst = hpu_host_pages(HPU_PAGE);
	uint64_t va, dst_va;
	uint32_t h;
	int i;

	va = hbm_buffer(self->fd, HPU_PAGE, &h);
	ASSERT_NE(0, va);
	hpu_cb_memset(&self->cb, va, 0xee, HPU_PAGE);
	ASSERT_EQ(0, hpu_run(self->fd, 0, self->cb.buf, self->cb.size));
	ASSERT_EQ(0, hpu_vm_unmap(self->fd, va));
	ASSERT_EQ(0, hpu_gem_close(self->fd, h));

	va = hbm_buffer(self->fd, HPU_PAGE, &h);
	dst_va = host_buffer(self->fd, dst, HPU_PAGE, DRM_HPU_VM_MAP_WRITE);
	ASSERT_NE(0, va);
	ASSERT_NE(0, dst_va);
	memset(dst, 0x77, HPU_PAGE);
	self->cb.size = 0;
	hpu_cb_dma(&self->cb, dst_va, va, HPU_PAGE);
	ASSERT_EQ(0, hpu_run(self->fd, 0, self->cb.buf, self->cb.size));
	for (i = 0; i < (int)HPU_PAGE; i++)
		ASSERT_EQ(0, dst[i]);
}

/* Device addresses above 4 GiB, in HBM and in the context's VA space. */
TEST_F_TIMEOUT(sub, above_4gib, 300)
{
	uint8_t *src = hpu_host_pages(2 * MiB), *dst = hpu_host_pages(2 * MiB);
	uint64_t va = 0x123400000ull, src_va, dst_va, filler_va;
	uint32_t filler, h;

	/* 5 GiB of HBM first, so the next buffer lies above 4 GiB. */
	filler_va = hbm_buffer(self->fd, 5 * GiB, &filler);
	ASSERT_NE(0, filler_va);
	ASSERT_EQ(0, hpu_gem_create(self->fd, 2 * MiB, DRM_HPU_GEM_CONTIGUOUS, &h));
	ASSERT_EQ(0, hpu_vm_map(self->fd, h, 0, NULL, 2 * MiB,
				DRM_HPU_VM_MAP_READ | DRM_HPU_VM_MAP_WRITE | DRM_HPU_VM_MAP_FIXED, &va));
	EXPECT_EQ(0x123400000ull, va);
	fill(src, 2 * MiB, 99);
	src_va = host_buffer(self->fd, src, 2 * MiB, DRM_HPU_VM_MAP_READ);
	dst_va = host_buffer(self->fd, dst, 2 * MiB, DRM_HPU_VM_MAP_WRITE);
	hpu_cb_dma(&self->cb, va + 3, src_va, 2 * MiB - 3);
	hpu_cb_dma(&self->cb, filler_va + 5 * GiB - 2 * MiB, va, 2 * MiB);
	hpu_cb_dma(&self->cb, dst_va, filler_va + 5 * GiB - 2 * MiB, 2 * MiB);
	ASSERT_EQ(0, hpu_run(self->fd, 2, self->cb.buf, self->cb.size));
	EXPECT_EQ(0, memcmp(dst + 3, src, 2 * MiB - 3));
}

/* A job waits on a sync object that a job on another queue signals. */
TEST_F(sub, cross_queue_signal_wait)
{
	uint8_t *dst = hpu_host_pages(HPU_PAGE);
	uint64_t sync, dst_va, waiter, signaler;
	struct hpu_cb cb2 = { .size = 0 };
	uint32_t h;
	int err;

	sync = hbm_buffer(self->fd, HPU_PAGE, &h);
	dst_va = host_buffer(self->fd, dst, HPU_PAGE, DRM_HPU_VM_MAP_WRITE);
	ASSERT_NE(0, sync);
	ASSERT_NE(0, dst_va);
	memset(dst, 0, HPU_PAGE);

	hpu_cb_wait(&self->cb, sync, 2);
	hpu_cb_memset(&self->cb, dst_va, 0xab, 64);
	ASSERT_EQ(0, hpu_submit(self->fd, 1, self->cb.buf, self->cb.size, &waiter));
	usleep(200 * 1000);
	EXPECT_EQ(0, hpu_wait(self->fd, waiter, 0, &err) == -ETIME ? 0 : 1);
	EXPECT_EQ(0, dst[0]);

	hpu_cb_signal(&cb2, sync, 1);
	hpu_cb_signal(&cb2, sync, 1);
	ASSERT_EQ(0, hpu_submit(self->fd, 0, cb2.buf, cb2.size, &signaler));
	ASSERT_EQ(0, hpu_wait(self->fd, waiter, 30000000000ll, &err));
	EXPECT_EQ(0, err);
	ASSERT_EQ(0, hpu_wait(self->fd, signaler, 30000000000ll, &err));
	EXPECT_EQ(0, err);
	EXPECT_EQ(0xab, dst[0]);
	EXPECT_EQ(0xab, dst[63]);
}

/* Faulting jobs fail with -EFAULT; the context and the queue go on working. */
TEST_F(sub, mmu_faults_fail_the_job_only)
{
	uint8_t *ro = hpu_host_pages(HPU_PAGE);
	uint64_t ro_va, hbm;
	uint32_t h;

	hbm = hbm_buffer(self->fd, HPU_PAGE, &h);
	ro_va = host_buffer(self->fd, ro, HPU_PAGE, DRM_HPU_VM_MAP_READ);
	ASSERT_NE(0, hbm);
	ASSERT_NE(0, ro_va);

	hpu_cb_dma(&self->cb, hbm, 0x7f0000000000ull, 16); /* read of an unmapped VA */
	EXPECT_EQ(-EFAULT, hpu_run(self->fd, 0, self->cb.buf, self->cb.size));
	self->cb.size = 0;
	hpu_cb_memset(&self->cb, ro_va, 1, 16);            /* write to a read-only mapping */
	EXPECT_EQ(-EFAULT, hpu_run(self->fd, 0, self->cb.buf, self->cb.size));
	EXPECT_EQ(0, ro[0]);
	self->cb.size = 0;
	hpu_cb_dma(&self->cb, hbm, hbm + HPU_PAGE - 8, 16); /* runs off the end of the buffer */
	EXPECT_EQ(-EFAULT, hpu_run(self->fd, 0, self->cb.buf, self->cb.size));

	self->cb.size = 0;
	hpu_cb_dma(&self->cb, hbm, ro_va, 16);
	EXPECT_EQ(0, hpu_run(self->fd, 0, self->cb.buf, self->cb.size));
}

/*
 * Host pages the device only reads, mapped before the process first wrote
 * them: the device sees what was written after the mapping, not the zero
 * page a read-only pin would have taken.
 */
TEST_F(sub, read_mapping_sees_later_writes)
{
	uint8_t *src = hpu_host_pages(2 * HPU_PAGE), *dst = hpu_host_pages(2 * HPU_PAGE);
	uint64_t src_va, dst_va;

	ASSERT_NE(NULL, src);
	ASSERT_NE(NULL, dst);
	src_va = host_buffer(self->fd, src, 2 * HPU_PAGE, DRM_HPU_VM_MAP_READ);
	dst_va = host_buffer(self->fd, dst, 2 * HPU_PAGE, DRM_HPU_VM_MAP_WRITE);
	ASSERT_NE(0, src_va);
	ASSERT_NE(0, dst_va);
	fill(src, 2 * HPU_PAGE, 7);
	hpu_cb_dma(&self->cb, dst_va, src_va, 2 * HPU_PAGE);
	ASSERT_EQ(0, hpu_run(self->fd, 0, self->cb.buf, self->cb.size));
	EXPECT_EQ(0, memcmp(src, dst, 2 * HPU_PAGE));
}

/* A read-only mapping of pages the process cannot write still works. */
TEST_F(sub, read_mapping_of_read_only_pages)
{
	uint8_t *src = hpu_host_pages(HPU_PAGE), *dst = hpu_host_pages(HPU_PAGE);
	uint64_t src_va, dst_va;

	ASSERT_NE(NULL, src);
	ASSERT_NE(NULL, dst);
	fill(src, HPU_PAGE, 8);
	ASSERT_EQ(0, mprotect(src, HPU_PAGE, PROT_READ));
	src_va = host_buffer(self->fd, src, HPU_PAGE, DRM_HPU_VM_MAP_READ);
	dst_va = host_buffer(self->fd, dst, HPU_PAGE, DRM_HPU_VM_MAP_WRITE);
	ASSERT_NE(0, src_va);
	ASSERT_NE(0, dst_va);
	hpu_cb_dma(&self->cb, dst_va, src_va, HPU_PAGE);
	ASSERT_EQ(0, hpu_run(self->fd, 0, self->cb.buf, self->cb.size));
	EXPECT_EQ(0, memcmp(src, dst, HPU_PAGE));
}

/*
 * Host pages mapped writable many times, by one file and by another, as
 * libhpu maps buffers that share pages: the device writes through every
 * mapping, the CPU sees each write, and mappings unmapped or closed in any
 * order leave the others working.  The driver maps each such page once
 * for the device, whatever the number of mappings (hpu_vm.c): overlapping
 * DMA mappings the device writes through are not allowed (the debug
 * kernel's DMA-API checks report them).
 */
TEST_F(sub, host_pages_mapped_writable_many_times)
{
	const uint32_t rw = DRM_HPU_VM_MAP_READ | DRM_HPU_VM_MAP_WRITE;
	enum { MAPS = 12 }; /* more than the 7 overlaps DMA-API debugging counts */
	uint8_t *host = hpu_host_pages(2 * HPU_PAGE);
	struct hpu_cb cb = { .size = 0 };
	struct drm_hpu_stats st;
	uint64_t va[MAPS], first[MAPS], other_va = 0;
	int other = hpu_open_node(self->bdf);
	unsigned int i;

	ASSERT_NE(NULL, host);
	ASSERT_LE(0, other);
	memset(host, 0, 2 * HPU_PAGE);
	/* Both pages, or the second alone; first[i]: where the first page is, or would be. */
	for (i = 0; i < MAPS; i++) {
		uint64_t skip = i % 3 == 2 ? HPU_PAGE : 0;

		va[i] = 0;
		ASSERT_EQ(0, hpu_vm_map(self->fd, 0, 0, host + skip, 2 * HPU_PAGE - skip, rw,
					&va[i]));
		first[i] = va[i] - skip;
	}
	ASSERT_EQ(0, hpu_vm_map(other, 0, 0, host, 2 * HPU_PAGE, rw, &other_va));

	/* Byte i of the second page through mapping i. */
	for (i = 0; i < MAPS; i++)
		hpu_cb_memset(&self->cb, first[i] + HPU_PAGE + i, i + 1, 1);
	ASSERT_EQ(0, hpu_run(self->fd, 0, self->cb.buf, self->cb.size));
	for (i = 0; i < MAPS; i++)
		EXPECT_EQ(i + 1, host[HPU_PAGE + i]) TH_LOG("mapping %u", i);

	/* Every other one gone, last first: the rest, and the other file's, still reach the pages. */
	for (i = MAPS; i-- > 0;)
		if (i % 2 == 0)
			EXPECT_EQ(0, hpu_vm_unmap(self->fd, va[i]));
	self->cb.size = 0;
	for (i = 1; i < MAPS; i += 2)
		hpu_cb_memset(&self->cb, first[i] + HPU_PAGE + 64 + i, 0x80 + i, 1);
	ASSERT_EQ(0, hpu_run(self->fd, 1, self->cb.buf, self->cb.size));
	hpu_cb_memset(&cb, other_va + 100, 0x5a, 1);
	ASSERT_EQ(0, hpu_run(other, 2, cb.buf, cb.size));
	for (i = 1; i < MAPS; i += 2)
		EXPECT_EQ(0x80 + i, host[HPU_PAGE + 64 + i]) TH_LOG("mapping %u", i);
	EXPECT_EQ(0x5a, host[100]);

	/* The other file closed: this one's mappings hold the pages still. */
	close(other);
	self->cb.size = 0;
	hpu_cb_memset(&self->cb, va[1] + 200, 0xa5, 1);
	ASSERT_EQ(0, hpu_run(self->fd, 3, self->cb.buf, self->cb.size));
	EXPECT_EQ(0xa5, host[200]);
	for (i = 1; i < MAPS; i += 2)
		EXPECT_EQ(0, hpu_vm_unmap(self->fd, va[i]));
	ASSERT_EQ(0, hpu_stats(self->fd, &st));
	EXPECT_EQ(0, st.ctx_host_pinned);
	munmap(host, 2 * HPU_PAGE);
}

/* HBM and job accounting, per device and per context. */
TEST_F(sub, stats_follow_usage)
{
	struct drm_hpu_stats before, during, after;
	uint64_t va;
	uint32_t h;

	ASSERT_EQ(0, hpu_stats(self->fd, &before));
	EXPECT_EQ(0, before.ctx_hbm_used);
	EXPECT_LE(1, before.num_contexts);
	EXPECT_LT(30 * GiB, before.hbm_total);

	va = hbm_buffer(self->fd, 3 * MiB, &h);
	ASSERT_NE(0, va);
	hpu_cb_memset(&self->cb, va, 1, 3 * MiB);
	ASSERT_EQ(0, hpu_run(self->fd, 3, self->cb.buf, self->cb.size));
	ASSERT_EQ(0, hpu_stats(self->fd, &during));
	EXPECT_EQ(3 * MiB, during.ctx_hbm_used);
	EXPECT_EQ(before.hbm_used + 3 * MiB, during.hbm_used);
	EXPECT_EQ(before.ctx_jobs_submitted + 1, during.ctx_jobs_submitted);
	EXPECT_EQ(before.ctx_jobs_completed + 1, during.ctx_jobs_completed);
	EXPECT_LE(before.jobs_completed + 1, during.jobs_completed);

	ASSERT_EQ(0, hpu_vm_unmap(self->fd, va));
	ASSERT_EQ(0, hpu_gem_close(self->fd, h));
	ASSERT_EQ(0, hpu_stats(self->fd, &after));
	EXPECT_EQ(0, after.ctx_hbm_used);
	EXPECT_EQ(before.hbm_used, after.hbm_used);
}

/* One file cannot take every page-table page of the device: others still map. */
TEST_F_TIMEOUT(sub, page_tables_are_shared_fairly, 300)
{
	const uint32_t rw = DRM_HPU_VM_MAP_READ | DRM_HPU_VM_MAP_WRITE;
	uint64_t va, other_va = 0;
	unsigned int maps;
	uint32_t h, oh;
	int other, err;

	ASSERT_EQ(0, hpu_gem_create(self->fd, HPU_PAGE, 0, &h));
	/* 2 MiB apart, each mapping needs a leaf table of its own. */
	for (maps = 0; maps < 20000; maps++) {
		va = 0x10000000000ull + (uint64_t)maps * (2ull << 20);
		err = hpu_vm_map(self->fd, h, 0, NULL, HPU_PAGE, rw | DRM_HPU_VM_MAP_FIXED, &va);
		if (err)
			break;
	}
	EXPECT_EQ(-EDQUOT, err);	/* the file's share, max_file_pt_pages */
	EXPECT_LT(1000, maps);

	other = hpu_open_node(self->bdf);
	ASSERT_LE(0, other);
	ASSERT_EQ(0, hpu_gem_create(other, HPU_PAGE, 0, &oh));
	ASSERT_EQ(0, hpu_vm_map(other, oh, 0, NULL, HPU_PAGE, rw, &other_va));
	hpu_cb_memset(&self->cb, other_va, 7, HPU_PAGE);
	EXPECT_EQ(0, hpu_run(other, 0, self->cb.buf, self->cb.size));
	close(other);
}

/* ---- rejection paths: each ioctl, each rule, its documented errno ---- */

TEST_F(sub, reject_gem_create)
{
	uint32_t h;

	EXPECT_EQ(-EINVAL, hpu_gem_create(self->fd, 0, 0, &h));
	EXPECT_EQ(-EINVAL, hpu_gem_create(self->fd, HPU_PAGE, 1u << 31, &h));
	EXPECT_EQ(-EINVAL, hpu_gem_create(self->fd, HPU_PAGE, ~DRM_HPU_GEM_FLAGS_ALL, &h));
	EXPECT_EQ(-ENOMEM, hpu_gem_create(self->fd, 64 * GiB, 0, &h));
	EXPECT_EQ(-EINVAL, hpu_gem_create(self->fd, ~0ull, 0, &h));
	EXPECT_EQ(-EINVAL, hpu_gem_close(self->fd, 12345));
}

TEST_F(sub, reject_vm_map)
{
	uint8_t *host = hpu_host_pages(2 * HPU_PAGE);
	const uint32_t rw = DRM_HPU_VM_MAP_READ | DRM_HPU_VM_MAP_WRITE;
	uint64_t va = 0, fixed;
	uint32_t h;

	ASSERT_EQ(0, hpu_gem_create(self->fd, 2 * HPU_PAGE, 0, &h));
	EXPECT_EQ(-EINVAL, hpu_vm_map(self->fd, h, 0, NULL, HPU_PAGE, 1u << 31, &va));
	EXPECT_EQ(-EINVAL, hpu_vm_map(self->fd, h, 0, NULL, HPU_PAGE, 0, &va));  /* no access */
	EXPECT_EQ(-EINVAL, hpu_vm_map(self->fd, h, 0, NULL, 0, rw, &va));
	EXPECT_EQ(-EINVAL, hpu_vm_map(self->fd, h, 0, NULL, 100, rw, &va));
	EXPECT_EQ(-EINVAL, hpu_vm_map(self->fd, h, 10, NULL, HPU_PAGE, rw, &va));
	EXPECT_EQ(-EINVAL, hpu_vm_map(self->fd, h, HPU_PAGE, NULL, 2 * HPU_PAGE, rw, &va));
	EXPECT_EQ(-EINVAL, hpu_vm_map(self->fd, h, ~0ull & ~(HPU_PAGE - 1), NULL, 2 * HPU_PAGE,
				      rw, &va));
	EXPECT_EQ(-EINVAL, hpu_vm_map(self->fd, h, 0, host, HPU_PAGE, rw, &va));
	EXPECT_EQ(-ENOENT, hpu_vm_map(self->fd, h + 100, 0, NULL, HPU_PAGE, rw, &va));
	EXPECT_EQ(-EINVAL, hpu_vm_map(self->fd, 0, HPU_PAGE, host, HPU_PAGE, rw, &va));
	EXPECT_EQ(-EINVAL, hpu_vm_map(self->fd, 0, 0, host + 1, HPU_PAGE, rw, &va));
	EXPECT_EQ(-EFAULT, hpu_vm_map(self->fd, 0, 0, (void *)0x1000, HPU_PAGE, rw, &va));
	EXPECT_EQ(-EINVAL, hpu_vm_map(self->fd, 0, 0, host, 1ull << 47, rw, &va));    /* too large */
	EXPECT_EQ(-EINVAL, hpu_vm_map(self->fd, 0, 0, (void *)(~0ull & ~(HPU_PAGE - 1)),
				      2 * HPU_PAGE, rw, &va));                       /* wraps */

	fixed = 0x40000000;
	ASSERT_EQ(0, hpu_vm_map(self->fd, h, 0, NULL, 2 * HPU_PAGE, rw | DRM_HPU_VM_MAP_FIXED, &fixed));
	va = 0x40000000 + HPU_PAGE;
	EXPECT_EQ(-EEXIST, hpu_vm_map(self->fd, 0, 0, host, HPU_PAGE, rw | DRM_HPU_VM_MAP_FIXED, &va));
	va = 0x40000000 + 10;
	EXPECT_EQ(-EINVAL, hpu_vm_map(self->fd, 0, 0, host, HPU_PAGE, rw | DRM_HPU_VM_MAP_FIXED, &va));
	va = 1ull << 48;
	EXPECT_EQ(-EINVAL, hpu_vm_map(self->fd, 0, 0, host, HPU_PAGE, rw | DRM_HPU_VM_MAP_FIXED, &va));
	/* A hint that is taken is returned; one that is not still maps. */
	va = 0x40000000;
	ASSERT_EQ(0, hpu_vm_map(self->fd, 0, 0, host, HPU_PAGE, rw, &va));
	EXPECT_NE(0x40000000, va);
}

TEST_F(sub, reject_vm_unmap)
{
	struct drm_hpu_vm_unmap a = { .va = 0x50000000 };
	uint64_t va;
	uint32_t h;

	EXPECT_EQ(-ENOENT, hpu_vm_unmap(self->fd, 0x50000000));
	va = hbm_buffer(self->fd, 2 * HPU_PAGE, &h);
	ASSERT_NE(0, va);
	EXPECT_EQ(-ENOENT, hpu_vm_unmap(self->fd, va + HPU_PAGE)); /* not where a mapping starts */
	EXPECT_EQ(-EINVAL, hpu_vm_unmap(self->fd, va + 8));
	a.va = va;
	a.flags = 1;
	EXPECT_EQ(-EINVAL, hpu_ioc(self->fd, DRM_IOCTL_HPU_VM_UNMAP, &a));
	a.flags = 0;
	a.pad = 1;
	EXPECT_EQ(-EINVAL, hpu_ioc(self->fd, DRM_IOCTL_HPU_VM_UNMAP, &a));
	EXPECT_EQ(0, hpu_vm_unmap(self->fd, va));
	EXPECT_EQ(-ENOENT, hpu_vm_unmap(self->fd, va));
}

static int submit_jobs(int fd, struct drm_hpu_job *jobs, uint32_t n)
{
	struct drm_hpu_submit a = { .jobs_ptr = (uintptr_t)jobs, .num_jobs = n };

	return hpu_ioc(fd, DRM_IOCTL_HPU_SUBMIT, &a);
}

TEST_F(sub, reject_submit_args)
{
	struct drm_hpu_job jobs[DRM_HPU_SUBMIT_MAX_JOBS + 1];
	struct drm_hpu_submit a = { 0 };
	unsigned int i;

	hpu_cb_put(&self->cb, &(struct hpu_pkt_nop){ .header = HPU_PKT_HEADER(HPU_PKT_NOP, 0) }, 8);
	for (i = 0; i <= DRM_HPU_SUBMIT_MAX_JOBS; i++)
		jobs[i] = (struct drm_hpu_job){ .cb_ptr = (uintptr_t)self->cb.buf, .cb_size = 8 };

	EXPECT_EQ(0, submit_jobs(self->fd, jobs, DRM_HPU_SUBMIT_MAX_JOBS));
	EXPECT_EQ(-EINVAL, submit_jobs(self->fd, jobs, 0));
	EXPECT_EQ(-EINVAL, submit_jobs(self->fd, jobs, DRM_HPU_SUBMIT_MAX_JOBS + 1));

	a.jobs_ptr = (uintptr_t)jobs;
	a.num_jobs = 1;
	a.flags = 1;
	EXPECT_EQ(-EINVAL, hpu_ioc(self->fd, DRM_IOCTL_HPU_SUBMIT, &a));
	a.flags = 0;
	a.jobs_ptr = 16;
	EXPECT_EQ(-EFAULT, hpu_ioc(self->fd, DRM_IOCTL_HPU_SUBMIT, &a));
	a.jobs_ptr = (uintptr_t)jobs;
	a.out_syncobj = 9999;
	EXPECT_EQ(-ENOENT, hpu_ioc(self->fd, DRM_IOCTL_HPU_SUBMIT, &a));
	a.out_syncobj = 0;
	a.num_in_syncobjs = 1;
	a.in_syncobjs_ptr = (uintptr_t)&(uint32_t){ 9999 };
	EXPECT_EQ(-ENOENT, hpu_ioc(self->fd, DRM_IOCTL_HPU_SUBMIT, &a));
	a.num_in_syncobjs = DRM_HPU_SUBMIT_MAX_IN_SYNCOBJS + 1;
	EXPECT_EQ(-EINVAL, hpu_ioc(self->fd, DRM_IOCTL_HPU_SUBMIT, &a));
	a.num_in_syncobjs = 1;
	a.in_syncobjs_ptr = 16;
	EXPECT_EQ(-EFAULT, hpu_ioc(self->fd, DRM_IOCTL_HPU_SUBMIT, &a));
	a.num_in_syncobjs = 0;

	jobs[0].queue = 4;
	EXPECT_EQ(-EINVAL, submit_jobs(self->fd, jobs, 1));
	jobs[0].queue = 0;
	jobs[0].flags = 1;
	EXPECT_EQ(-EINVAL, submit_jobs(self->fd, jobs, 1));
	jobs[0].flags = 0;
	jobs[0].pad = 1;
	EXPECT_EQ(-EINVAL, submit_jobs(self->fd, jobs, 1));
	jobs[0].pad = 0;
	jobs[0].cb_size = 0;
	EXPECT_EQ(-EINVAL, submit_jobs(self->fd, jobs, 1));
	jobs[0].cb_size = 12;
	EXPECT_EQ(-EINVAL, submit_jobs(self->fd, jobs, 1));
	jobs[0].cb_size = HPU_CB_MAX_SIZE + 8;
	EXPECT_EQ(-EINVAL, submit_jobs(self->fd, jobs, 1));
	jobs[0].cb_size = 8;
	jobs[0].cb_ptr = 8;
	EXPECT_EQ(-EFAULT, submit_jobs(self->fd, jobs, 1));
}

/* Command buffers the driver refuses before the device sees them. */
FIXTURE(badcb) {
	char bdf[64];
	int fd;
};

FIXTURE_VARIANT(badcb) {
	uint32_t words[28]; /* the packet, as __u32s */
	uint32_t size;
	int err;
};

#define BADCB(id, e, n, ...) \
	FIXTURE_VARIANT_ADD(badcb, id) { .words = { __VA_ARGS__ }, .size = n, .err = e }

BADCB(privileged_completion, -EPERM, 24, HPU_PKT_HEADER(HPU_PKT_WRITE_COMPLETION, 0), 0, 0x1000, 0, 1, 0);
BADCB(privileged_interrupt, -EPERM, 8, HPU_PKT_HEADER(HPU_PKT_INTERRUPT, 0), 1);
BADCB(unknown_opcode, -EINVAL, 8, HPU_PKT_HEADER(0x42, 0), 0);
BADCB(reserved_header_bits, -EINVAL, 8, HPU_PKT_HEADER(HPU_PKT_NOP, 0) | (1u << 20), 0);
BADCB(nop_pad, -EINVAL, 8, HPU_PKT_HEADER(HPU_PKT_NOP, 0), 1);
BADCB(nop_flags, -EINVAL, 8, HPU_PKT_HEADER(HPU_PKT_NOP, 1), 0);
BADCB(lin_dma_unknown_flag, -EINVAL, 32, HPU_PKT_HEADER(HPU_PKT_LIN_DMA, 2), 0, 0, 0, 0, 0, 8, 0);
BADCB(lin_dma_pad, -EINVAL, 32, HPU_PKT_HEADER(HPU_PKT_LIN_DMA, 0), 1, 0, 0, 0, 0, 8, 0);
BADCB(lin_dma_truncated, -EINVAL, 24, HPU_PKT_HEADER(HPU_PKT_LIN_DMA, 0), 0, 0, 0, 0, 0);
BADCB(signal_flags, -EINVAL, 16, HPU_PKT_HEADER(HPU_PKT_SIGNAL, 1), 1, 0x1000, 0);
BADCB(timestamp_pad, -EINVAL, 16, HPU_PKT_HEADER(HPU_PKT_TIMESTAMP, 0), 1, 0x1000, 0);
BADCB(gemm_unknown_flag, -EINVAL, 112, HPU_PKT_HEADER(HPU_PKT_MME_GEMM, 4), HPU_DTYPE_F32, HPU_DTYPE_F32, 1,
      1, 1, 1, 0);
BADCB(gemm_pad, -EINVAL, 112, HPU_PKT_HEADER(HPU_PKT_MME_GEMM, 0), HPU_DTYPE_F32, HPU_DTYPE_F32, 1,
      1, 1, 1, 1);
BADCB(gemm_truncated, -EINVAL, 104, HPU_PKT_HEADER(HPU_PKT_MME_GEMM, 0), HPU_DTYPE_F32, HPU_DTYPE_F32, 1,
      1, 1, 1, 0);
BADCB(launch_flags, -EINVAL, 16, HPU_PKT_HEADER(HPU_PKT_TPC_LAUNCH, 1), 64, 0x1000, 0);
BADCB(launch_misaligned_params, -EINVAL, 16, HPU_PKT_HEADER(HPU_PKT_TPC_LAUNCH, 0), 64, 0x1004, 0);
BADCB(launch_truncated, -EINVAL, 8, HPU_PKT_HEADER(HPU_PKT_TPC_LAUNCH, 0), 64);
BADCB(call_flags, -EINVAL, 24, HPU_PKT_HEADER(HPU_PKT_CALL, 1), 0, 0x100000, 0, 8, 0);
BADCB(call_pad, -EINVAL, 24, HPU_PKT_HEADER(HPU_PKT_CALL, 0), 1, 0x100000, 0, 8, 0);
BADCB(call_misaligned_addr, -EINVAL, 24, HPU_PKT_HEADER(HPU_PKT_CALL, 0), 0, 0x100004, 0, 8, 0);
BADCB(call_size_zero, -EINVAL, 24, HPU_PKT_HEADER(HPU_PKT_CALL, 0), 0, 0x100000, 0, 0, 0);
BADCB(call_size_unaligned, -EINVAL, 24, HPU_PKT_HEADER(HPU_PKT_CALL, 0), 0, 0x100000, 0, 12, 0);
BADCB(call_size_too_large, -EINVAL, 24, HPU_PKT_HEADER(HPU_PKT_CALL, 0), 0, 0x100000, 0,
      HPU_CALL_MAX_SIZE + 8, 0);
BADCB(call_size_high_bits, -EINVAL, 24, HPU_PKT_HEADER(HPU_PKT_CALL, 0), 0, 0x100000, 0, 8, 1);
BADCB(call_truncated, -EINVAL, 16, HPU_PKT_HEADER(HPU_PKT_CALL, 0), 0, 0x100000, 0);

FIXTURE_SETUP(badcb)
{
	ASSERT_EQ(0, hpu_find_bdf(self->bdf, sizeof(self->bdf)));
	self->fd = hpu_open_node(self->bdf);
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(badcb)
{
	close(self->fd);
}

TEST_F(badcb, refused_at_submit)
{
	struct drm_hpu_stats before, after;
	uint32_t cb[2 + 28] = { HPU_PKT_HEADER(HPU_PKT_NOP, 0), 0 };

	/* After a good NOP, so the check covers every packet, not just the first. */
	memcpy(cb + 2, variant->words, variant->size);
	ASSERT_EQ(0, hpu_stats(self->fd, &before));
	EXPECT_EQ(variant->err, hpu_submit(self->fd, 0, cb, 8 + variant->size, NULL));
	ASSERT_EQ(0, hpu_stats(self->fd, &after));
	EXPECT_EQ(before.ctx_jobs_submitted, after.ctx_jobs_submitted);
}

TEST_F(sub, reject_wait)
{
	struct drm_hpu_wait a = { .seq = 1000000 };
	uint64_t seq;
	int err;

	EXPECT_EQ(-EINVAL, hpu_ioc(self->fd, DRM_IOCTL_HPU_WAIT, &a));
	a.seq = 0;
	EXPECT_EQ(-EINVAL, hpu_ioc(self->fd, DRM_IOCTL_HPU_WAIT, &a));
	hpu_cb_put(&self->cb, &(struct hpu_pkt_nop){ .header = HPU_PKT_HEADER(HPU_PKT_NOP, 0) }, 8);
	ASSERT_EQ(0, hpu_submit(self->fd, 0, self->cb.buf, 8, &seq));
	a.seq = seq;
	a.flags = 1;
	EXPECT_EQ(-EINVAL, hpu_ioc(self->fd, DRM_IOCTL_HPU_WAIT, &a));
	a.flags = 0;
	EXPECT_EQ(0, hpu_wait(self->fd, seq, 10000000000ll, &err));
	EXPECT_EQ(0, err);
}

/* A negative timeout waits for as long as it takes, as UQUEUE_WAIT's does. */
TEST_F(sub, wait_with_a_negative_timeout_waits_for_the_end)
{
	uint8_t *dst = hpu_host_pages(HPU_PAGE);
	uint64_t dst_va, seq;
	int err;

	dst_va = host_buffer(self->fd, dst, HPU_PAGE, DRM_HPU_VM_MAP_WRITE);
	ASSERT_NE(0, dst_va);
	hpu_cb_memset(&self->cb, dst_va, 0xcd, HPU_PAGE);
	ASSERT_EQ(0, hpu_submit(self->fd, 1, self->cb.buf, self->cb.size, &seq));
	ASSERT_EQ(0, hpu_wait(self->fd, seq, -1, &err));
	EXPECT_EQ(0, err);
	EXPECT_EQ(0xcd, dst[HPU_PAGE - 1]);
	ASSERT_EQ(0, hpu_wait(self->fd, seq, INT64_MIN, &err));
	EXPECT_EQ(0, err);
}

/* In a child: a job of its own file parks on a WAIT nobody signals; WAIT for it forever. */
static void wait_forever_on_a_parked_job(void *bdf)
{
	struct hpu_cb cb = { .size = 0 };
	int fd = hpu_open_node(bdf), err;
	uint64_t sync, seq;
	uint32_t h;

	sync = hbm_buffer(fd, HPU_PAGE, &h);
	hpu_cb_wait(&cb, sync, 1);
	if (!sync || hpu_submit(fd, 2, cb.buf, cb.size, &seq))
		_exit(1);
	hpu_wait(fd, seq, -1, &err);
	_exit(2);
}

/* A process sleeping in WAIT without a timeout dies of SIGKILL; its close cancels the job. */
TEST_F(sub, a_wait_without_timeout_is_killable)
{
	double s = hpu_kill_blocked(wait_forever_on_a_parked_job, self->bdf, 300);
	uint64_t seq;
	int err;

	ASSERT_LE(0, s);
	/* The grace period of a closing file's jobs (1 s), then a queue reset. */
	EXPECT_GT(5, s);
	/* The queue works on. */
	hpu_cb_put(&self->cb, &(struct hpu_pkt_nop){ .header = HPU_PKT_HEADER(HPU_PKT_NOP, 0) }, 8);
	ASSERT_EQ(0, hpu_submit(self->fd, 2, self->cb.buf, 8, &seq));
	EXPECT_EQ(0, hpu_wait(self->fd, seq, 10000000000ll, &err));
	EXPECT_EQ(0, err);
}

TEST_F(sub, reject_stats_short_size)
{
	struct drm_hpu_stats st;
	struct drm_hpu_info a = {
		.data_ptr = (uintptr_t)&st, .data_size = DRM_HPU_STATS_SIZE_V1 - 1,
		.query = DRM_HPU_INFO_STATS,
	};

	EXPECT_EQ(-EINVAL, hpu_ioc(self->fd, DRM_IOCTL_HPU_INFO, &a));
}

TEST_HARNESS_MAIN
