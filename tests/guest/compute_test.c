// SPDX-License-Identifier: MIT
/*
 * The compute engines through the raw ABI: the matrix engine's GEMM and a
 * tensor-engine launch against host references, one submission chaining
 * DMA -> MME -> TPC through sync objects with no host round trip, and bad
 * launches: a parameter block or tensor outside the context's memory faults
 * (-EFAULT), broken parameters fail the job (-EINVAL), and the context goes
 * on working either way.  Recipes: a command buffer in device memory run by
 * a one-packet job's CALL, again on new inputs, from HBM or pinned host
 * pages, and every callee fault failing its job alone.
 */
#include <math.h>

#include "kselftest_harness.h"

#include "hpu_abi.h"
#include "hpu_test.h"

#define RW (DRM_HPU_VM_MAP_READ | DRM_HPU_VM_MAP_WRITE)
#define UNMAPPED_VA 0x7f0000000000ull
#define TIMEOUT_NS 60000000000ll

/* One launch's parameter block, as the device reads it. */
struct launch {
	struct hpu_kernel_params p;
	struct hpu_tensor_desc t[4];
};

FIXTURE(comp) {
	char bdf[64];
	int fd;
	struct hpu_cb cb;
	struct launch *params; /* host pages the device reads through params_va */
	uint64_t params_va;
};

FIXTURE_SETUP(comp)
{
	ASSERT_EQ(0, hpu_find_bdf(self->bdf, sizeof(self->bdf)));
	self->fd = hpu_open_node(self->bdf);
	ASSERT_LE(0, self->fd);
	self->cb.size = 0;
	self->params = hpu_host_pages(HPU_PAGE);
	ASSERT_NE(NULL, self->params);
	ASSERT_EQ(0, hpu_vm_map(self->fd, 0, 0, self->params, HPU_PAGE, DRM_HPU_VM_MAP_READ,
				&self->params_va));
}

FIXTURE_TEARDOWN(comp)
{
	close(self->fd);
}

static uint64_t hbm_buffer(int fd, uint64_t size)
{
	uint64_t va = 0;
	uint32_t h;

	if (hpu_gem_create(fd, size, 0, &h) || hpu_vm_map(fd, h, 0, NULL, size, RW, &va))
		return 0;
	return va;
}

/* Page-rounded host memory mapped read-write for the device; *va its address. */
static float *host_floats(int fd, size_t n, uint64_t *va)
{
	size_t size = (n * sizeof(float) + HPU_PAGE - 1) & ~(HPU_PAGE - 1);
	float *p = hpu_host_pages(size);

	*va = 0;
	if (p && hpu_vm_map(fd, 0, 0, p, size, RW, va))
		*va = 0;
	return p;
}

static void fill_floats(float *p, size_t n, unsigned int seed)
{
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (float)((int)(seed >> 16 & 0xff) - 128) / 64.0f;
	}
}

static uint32_t f32_bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

/* A dense row-major F32 matrix descriptor. */
static struct hpu_tensor_desc matrix(uint64_t va, uint64_t rows, uint64_t cols)
{
	return (struct hpu_tensor_desc){
		.addr = va, .dtype = HPU_DTYPE_F32, .ndim = 2,
		.shape = { rows, cols, 1, 1, 1, 1 }, .strides = { (int64_t)cols, 1 },
	};
}

/* out = relu(in) over rows x cols, as UNARY RELU; returns the block's size. */
static uint32_t relu_launch(struct launch *l, uint64_t out, uint64_t in, uint64_t rows,
			    uint64_t cols)
{
	memset(l, 0, sizeof(*l));
	l->p.version = HPU_KERNEL_PARAMS_VERSION;
	l->p.kernel = HPU_KERNEL_UNARY;
	l->p.num_tensors = 2;
	l->p.args[0] = HPU_UNARY_RELU;
	l->t[0] = matrix(out, rows, cols);
	l->t[1] = matrix(in, rows, cols);
	return sizeof(l->p) + 2 * sizeof(l->t[0]);
}

static struct hpu_pkt_mme_gemm gemm_f32(uint64_t c, uint64_t a, uint64_t b, uint32_t m,
					uint32_t n, uint32_t k, uint32_t flags)
{
	return (struct hpu_pkt_mme_gemm){
		.header = HPU_PKT_HEADER(HPU_PKT_MME_GEMM, flags),
		.dtype_ab = HPU_DTYPE_F32, .dtype_c = HPU_DTYPE_F32, .batch = 1,
		.m = m, .n = n, .k = k, .a = a, .b = b, .c = c,
		.lda = flags & HPU_PKT_GEMM_TRANS_A ? m : k,
		.ldb = flags & HPU_PKT_GEMM_TRANS_B ? k : n,
		.ldc = n, .alpha = f32_bits(1.0f), .beta = f32_bits(0.0f),
	};
}

/* C = op(A) @ op(B) in double, A and B stored as gemm_f32() says. */
static void gemm_ref(double *c, const float *a, const float *b, uint32_t m, uint32_t n,
		     uint32_t k, uint32_t flags)
{
	for (uint32_t i = 0; i < m; i++)
		for (uint32_t j = 0; j < n; j++) {
			double s = 0;

			for (uint32_t p = 0; p < k; p++)
				s += (double)(flags & HPU_PKT_GEMM_TRANS_A ? a[p * m + i] : a[i * k + p]) *
				     (flags & HPU_PKT_GEMM_TRANS_B ? b[j * k + p] : b[p * n + j]);
			c[i * n + j] = s;
		}
}

static int near(double got, double want)
{
	return fabs(got - want) <= 1e-5 * (1 + fabs(want));
}

/* GEMM with every transpose, operands in HBM, against the reference. */
TEST_F(comp, gemm_matches_reference)
{
	const uint32_t m = 37, n = 29, k = 53;
	uint64_t a_va, b_va, c_va, ha, hb, hc;
	float *a = host_floats(self->fd, m * k, &a_va), *b = host_floats(self->fd, k * n, &b_va);
	float *c = host_floats(self->fd, m * n, &c_va);
	double ref[37 * 29];

	ASSERT_NE(0, a_va);
	ASSERT_NE(0, b_va);
	ASSERT_NE(0, c_va);
	ha = hbm_buffer(self->fd, 1 << 20);
	hb = hbm_buffer(self->fd, 1 << 20);
	hc = hbm_buffer(self->fd, 1 << 20);
	ASSERT_NE(0, ha && hb && hc);
	fill_floats(a, m * k, 1);
	fill_floats(b, k * n, 2);

	for (uint32_t flags = 0; flags < 4; flags++) {
		struct hpu_pkt_mme_gemm g = gemm_f32(hc, ha, hb, m, n, k, flags);
		uint32_t bad = 0;

		self->cb.size = 0;
		hpu_cb_dma(&self->cb, ha, a_va, m * k * sizeof(float));
		hpu_cb_dma(&self->cb, hb, b_va, k * n * sizeof(float));
		hpu_cb_gemm(&self->cb, &g);
		hpu_cb_dma(&self->cb, c_va, hc, m * n * sizeof(float));
		ASSERT_EQ(0, hpu_run(self->fd, 1, self->cb.buf, self->cb.size));
		gemm_ref(ref, a, b, m, n, k, flags);
		for (uint32_t i = 0; i < m * n; i++)
			bad += !near(c[i], ref[i]);
		EXPECT_EQ(0, bad) TH_LOG("transposes %u: %u of %u elements off", flags, bad, m * n);
	}
}

static int submit_jobs(int fd, struct drm_hpu_job *jobs, uint32_t n, uint64_t *seq)
{
	struct drm_hpu_submit a = { .jobs_ptr = (uintptr_t)jobs, .num_jobs = n };
	int err = hpu_ioc(fd, DRM_IOCTL_HPU_SUBMIT, &a);

	*seq = a.seq;
	return err;
}

/*
 * One SUBMIT of three jobs on three queues: DMA brings A and B to HBM and
 * signals; the MME waits, multiplies and signals; a TPC launch waits, takes
 * relu of the product and the result goes back to the host.
 */
TEST_F(comp, one_submission_chains_dma_mme_tpc)
{
	const uint32_t m = 16, n = 24, k = 32;
	uint64_t a_va, b_va, d_va, ha, hb, hc, hd, sync, seq;
	float *a = host_floats(self->fd, m * k, &a_va), *b = host_floats(self->fd, k * n, &b_va);
	float *d = host_floats(self->fd, m * n, &d_va);
	struct hpu_cb cbs[3] = { { .size = 0 }, { .size = 0 }, { .size = 0 } };
	struct hpu_pkt_mme_gemm g;
	struct drm_hpu_job jobs[3];
	double ref[16 * 24];
	uint32_t bad = 0, size;
	int err;

	ASSERT_NE(0, a_va && b_va && d_va);
	ha = hbm_buffer(self->fd, 1 << 20);
	hb = hbm_buffer(self->fd, 1 << 20);
	hc = hbm_buffer(self->fd, 1 << 20);
	hd = hbm_buffer(self->fd, 1 << 20);
	sync = hbm_buffer(self->fd, HPU_PAGE); /* two sync objects, zeroed */
	ASSERT_NE(0, ha && hb && hc && hd && sync);
	fill_floats(a, m * k, 3);
	fill_floats(b, k * n, 4);
	memset(d, 0xff, m * n * sizeof(float));
	size = relu_launch(self->params, hd, hc, m, n);
	g = gemm_f32(hc, ha, hb, m, n, k, 0);

	hpu_cb_dma(&cbs[0], ha, a_va, m * k * sizeof(float));
	hpu_cb_dma(&cbs[0], hb, b_va, k * n * sizeof(float));
	hpu_cb_signal(&cbs[0], sync, 1);
	hpu_cb_wait(&cbs[1], sync, 1);
	hpu_cb_gemm(&cbs[1], &g);
	hpu_cb_signal(&cbs[1], sync + 4, 1);
	hpu_cb_wait(&cbs[2], sync + 4, 1);
	hpu_cb_launch(&cbs[2], self->params_va, size);
	hpu_cb_dma(&cbs[2], d_va, hd, m * n * sizeof(float));

	/* Submitted last stage first: only the sync objects order them. */
	for (int i = 0; i < 3; i++)
		jobs[i] = (struct drm_hpu_job){
			.cb_ptr = (uintptr_t)cbs[2 - i].buf, .cb_size = cbs[2 - i].size, .queue = 2 - i,
		};
	ASSERT_EQ(0, submit_jobs(self->fd, jobs, 3, &seq));
	ASSERT_EQ(0, hpu_wait(self->fd, seq, TIMEOUT_NS, &err));
	EXPECT_EQ(0, err);
	ASSERT_EQ(0, hpu_wait(self->fd, seq - 2, TIMEOUT_NS, &err));
	EXPECT_EQ(0, err);

	gemm_ref(ref, a, b, m, n, k, 0);
	for (uint32_t i = 0; i < m * n; i++)
		bad += !near(d[i], ref[i] > 0 ? ref[i] : 0);
	EXPECT_EQ(0, bad) TH_LOG("%u of %u elements off", bad, m * n);
}

/* A launch whose parameter block is not mapped faults; the context goes on. */
TEST_F(comp, unmapped_parameter_block_faults)
{
	uint64_t in_va, out_va;
	float *in = host_floats(self->fd, 64, &in_va), *out = host_floats(self->fd, 64, &out_va);
	uint32_t size = relu_launch(self->params, out_va, in_va, 8, 8);

	ASSERT_NE(0, in_va && out_va);
	for (int i = 0; i < 64; i++)
		in[i] = i % 2 ? -i : i;
	hpu_cb_launch(&self->cb, UNMAPPED_VA, size);
	EXPECT_EQ(-EFAULT, hpu_run(self->fd, 2, self->cb.buf, self->cb.size));
	/* Half the block mapped, half past the end of the mapping. */
	self->cb.size = 0;
	hpu_cb_launch(&self->cb, self->params_va + HPU_PAGE - 64, size);
	EXPECT_EQ(-EFAULT, hpu_run(self->fd, 2, self->cb.buf, self->cb.size));

	self->cb.size = 0;
	hpu_cb_launch(&self->cb, self->params_va, size);
	ASSERT_EQ(0, hpu_run(self->fd, 2, self->cb.buf, self->cb.size));
	for (int i = 0; i < 64; i++)
		EXPECT_EQ(i % 2 ? 0 : i, out[i]);
}

/* A tensor reaching outside the context's mappings faults and writes nothing. */
TEST_F(comp, tensor_outside_memory_faults)
{
	uint64_t in_va, out_va;
	float *in = host_floats(self->fd, 64, &in_va), *out = host_floats(self->fd, 64, &out_va);
	uint32_t size;

	ASSERT_NE(0, in_va && out_va);
	memset(out, 0x55, 64 * sizeof(float));
	for (int i = 0; i < 64; i++)
		in[i] = i;

	size = relu_launch(self->params, out_va, UNMAPPED_VA, 8, 8);
	hpu_cb_launch(&self->cb, self->params_va, size);
	EXPECT_EQ(-EFAULT, hpu_run(self->fd, 2, self->cb.buf, self->cb.size));
	/* The input's stride walks it off its page. */
	relu_launch(self->params, out_va, in_va, 8, 8);
	self->params->t[1].strides[0] = 4096;
	EXPECT_EQ(-EFAULT, hpu_run(self->fd, 2, self->cb.buf, self->cb.size));
	for (int i = 0; i < 64; i++)
		EXPECT_EQ(0x55555555u, f32_bits(out[i]));

	relu_launch(self->params, out_va, in_va, 8, 8);
	ASSERT_EQ(0, hpu_run(self->fd, 2, self->cb.buf, self->cb.size));
	EXPECT_EQ(63.0f, out[63]);
}

/* Broken parameters fail the job with -EINVAL and write nothing. */
TEST_F(comp, broken_parameters_fail_the_job)
{
	uint64_t in_va, out_va, h = hbm_buffer(self->fd, 1 << 20);
	float *in = host_floats(self->fd, 64, &in_va), *out = host_floats(self->fd, 64, &out_va);
	struct hpu_pkt_mme_gemm g;
	uint32_t size;

	ASSERT_NE(0, in_va && out_va && h);
	memset(out, 0x55, 64 * sizeof(float));

#define EXPECT_LAUNCH_FAILS(what, edit)                                                   \
	do {                                                                              \
		size = relu_launch(self->params, out_va, in_va, 8, 8);                    \
		edit;                                                                     \
		self->cb.size = 0;                                                        \
		hpu_cb_launch(&self->cb, self->params_va, size);                         \
		EXPECT_EQ(-EINVAL, hpu_run(self->fd, 2, self->cb.buf, self->cb.size))    \
			TH_LOG("%s", what);                                               \
	} while (0)
	EXPECT_LAUNCH_FAILS("unknown kernel", self->params->p.kernel = 999);
	EXPECT_LAUNCH_FAILS("unknown version", self->params->p.version = 99);
	EXPECT_LAUNCH_FAILS("unknown flags", self->params->p.flags = 1);
	EXPECT_LAUNCH_FAILS("unknown op", self->params->p.args[0] = 999);
	EXPECT_LAUNCH_FAILS("size disagrees with num_tensors", size -= 8);
	EXPECT_LAUNCH_FAILS("too few tensors", (self->params->p.num_tensors = 1, size -= sizeof(struct hpu_tensor_desc)));
	EXPECT_LAUNCH_FAILS("unknown dtype", self->params->t[0].dtype = 77);
	EXPECT_LAUNCH_FAILS("shape mismatch", self->params->t[0].shape[1] = 4);
	EXPECT_LAUNCH_FAILS("ndim too large", self->params->t[0].ndim = 7);
#undef EXPECT_LAUNCH_FAILS
	for (int i = 0; i < 64; i++)
		EXPECT_EQ(0x55555555u, f32_bits(out[i]));

	g = gemm_f32(h, h + 4096, h + 8192, 8, 8, 0, 0);
	self->cb.size = 0;
	hpu_cb_gemm(&self->cb, &g);
	EXPECT_EQ(-EINVAL, hpu_run(self->fd, 1, self->cb.buf, self->cb.size)) TH_LOG("k = 0");
	g = gemm_f32(h, h + 4096, h + 8192, 8, 8, 8, 0);
	g.dtype_ab = HPU_DTYPE_I32;
	self->cb.size = 0;
	hpu_cb_gemm(&self->cb, &g);
	EXPECT_EQ(-EINVAL, hpu_run(self->fd, 1, self->cb.buf, self->cb.size)) TH_LOG("int GEMM");
	g = gemm_f32(h, h + 4096, h + 8192, 8, 8, 8, 0);
	g.lda = 4;
	self->cb.size = 0;
	hpu_cb_gemm(&self->cb, &g);
	EXPECT_EQ(-EINVAL, hpu_run(self->fd, 1, self->cb.buf, self->cb.size)) TH_LOG("lda < k");

	/* Still usable. */
	size = relu_launch(self->params, out_va, in_va, 8, 8);
	for (int i = 0; i < 64; i++)
		in[i] = -1;
	self->cb.size = 0;
	hpu_cb_launch(&self->cb, self->params_va, size);
	ASSERT_EQ(0, hpu_run(self->fd, 2, self->cb.buf, self->cb.size));
	EXPECT_EQ(0.0f, out[0]);
}

static void cb_call(struct hpu_cb *cb, uint64_t addr, uint64_t size)
{
	struct hpu_pkt_call p = {
		.header = HPU_PKT_HEADER(HPU_PKT_CALL, 0), .addr = addr, .size = size,
	};

	hpu_cb_put(cb, &p, sizeof(p));
}

/* Copy cb to device memory at va through staging pages, as a runtime uploads a recipe. */
static int upload(int fd, uint64_t va, const struct hpu_cb *cb)
{
	uint64_t size = (cb->size + HPU_PAGE - 1) & ~(HPU_PAGE - 1), stage_va = 0;
	void *stage = hpu_host_pages(size);
	struct hpu_cb job = { .size = 0 };
	int err;

	if (!stage)
		return -ENOMEM;
	memcpy(stage, cb->buf, cb->size);
	err = hpu_vm_map(fd, 0, 0, stage, size, DRM_HPU_VM_MAP_READ, &stage_va);
	if (!err) {
		hpu_cb_dma(&job, va, stage_va, cb->size);
		err = hpu_run(fd, 0, job.buf, job.size);
		hpu_vm_unmap(fd, stage_va);
	}
	munmap(stage, size);
	return err;
}

/* The CALL of a callee of size bytes at va, alone in its job. */
static int run_call(int fd, uint32_t queue, uint64_t va, uint64_t size)
{
	struct hpu_cb cb = { .size = 0 };

	cb_call(&cb, va, size);
	return hpu_run(fd, queue, cb.buf, cb.size);
}

/*
 * A recipe uploaded to HBM once (inputs in, GEMM, relu on a TPC, output
 * out, SIGNAL) and run twice by a one-packet job, with new inputs between.
 */
TEST_F(comp, recipe_in_hbm_runs_twice)
{
	const uint32_t m = 24, n = 20, k = 36;
	uint64_t a_va, b_va, d_va, sync_va, ha, hb, hc, hd, recipe;
	float *a = host_floats(self->fd, m * k, &a_va), *b = host_floats(self->fd, k * n, &b_va);
	float *d = host_floats(self->fd, m * n, &d_va);
	uint32_t *sync = (uint32_t *)host_floats(self->fd, 1, &sync_va);
	struct hpu_pkt_mme_gemm g;
	double ref[24 * 20];
	uint32_t size;

	ASSERT_NE(0, a_va && b_va && d_va && sync_va);
	ha = hbm_buffer(self->fd, 1 << 20);
	hb = hbm_buffer(self->fd, 1 << 20);
	hc = hbm_buffer(self->fd, 1 << 20);
	hd = hbm_buffer(self->fd, 1 << 20);
	recipe = hbm_buffer(self->fd, HPU_CB_MAX_SIZE);
	ASSERT_NE(0, ha && hb && hc && hd && recipe);
	size = relu_launch(self->params, hd, hc, m, n);
	g = gemm_f32(hc, ha, hb, m, n, k, HPU_PKT_GEMM_TRANS_B);
	hpu_cb_dma(&self->cb, ha, a_va, m * k * sizeof(float));
	hpu_cb_dma(&self->cb, hb, b_va, k * n * sizeof(float));
	hpu_cb_gemm(&self->cb, &g);
	hpu_cb_launch(&self->cb, self->params_va, size);
	hpu_cb_dma(&self->cb, d_va, hd, m * n * sizeof(float));
	hpu_cb_signal(&self->cb, sync_va, 1);
	ASSERT_EQ(0, upload(self->fd, recipe, &self->cb));

	for (uint32_t run = 1; run <= 2; run++) {
		uint32_t bad = 0;

		fill_floats(a, m * k, 10 * run);
		fill_floats(b, k * n, 10 * run + 1);
		memset(d, 0xff, m * n * sizeof(float));
		ASSERT_EQ(0, run_call(self->fd, run, recipe, self->cb.size));
		gemm_ref(ref, a, b, m, n, k, HPU_PKT_GEMM_TRANS_B);
		for (uint32_t i = 0; i < m * n; i++)
			bad += !near(d[i], ref[i] > 0 ? ref[i] : 0);
		EXPECT_EQ(0, bad) TH_LOG("run %u: %u of %u elements off", run, bad, m * n);
		EXPECT_EQ(run, *sync);
	}
}

/* A callee in pinned host pages, read when the CALL runs: an edit shows in the next run. */
TEST_F(comp, callee_in_pinned_host_memory)
{
	uint64_t callee_va = 0, sync_va, src_va, dst_va;
	struct hpu_cb *callee = hpu_host_pages(sizeof(struct hpu_cb));
	uint32_t *sync = (uint32_t *)host_floats(self->fd, 1, &sync_va);
	float *src = host_floats(self->fd, 64, &src_va), *dst = host_floats(self->fd, 64, &dst_va);

	ASSERT_NE(NULL, callee);
	ASSERT_NE(0, sync_va && src_va && dst_va);
	ASSERT_EQ(0, hpu_vm_map(self->fd, 0, 0, callee->buf, HPU_PAGE, DRM_HPU_VM_MAP_READ,
				&callee_va));
	fill_floats(src, 64, 7);
	hpu_cb_dma(callee, dst_va, src_va, 64 * sizeof(float));
	hpu_cb_signal(callee, sync_va, 1);
	ASSERT_EQ(0, run_call(self->fd, 3, callee_va, callee->size));
	EXPECT_EQ(0, memcmp(dst, src, 64 * sizeof(float)));
	EXPECT_EQ(1, *sync);

	callee->size -= sizeof(struct hpu_pkt_signal);
	hpu_cb_signal(callee, sync_va, 5);
	ASSERT_EQ(0, run_call(self->fd, 3, callee_va, callee->size));
	EXPECT_EQ(6, *sync);
}

/*
 * Callees the device refuses as they run, each failing its job with its
 * errno: nothing after the fault runs, and the context goes on.
 */
TEST_F(comp, callee_faults_fail_the_job)
{
	uint64_t callee_va = 0, sync_va;
	uint32_t *callee = hpu_host_pages(HPU_PAGE);
	uint32_t *sync = (uint32_t *)host_floats(self->fd, 1, &sync_va);
	struct hpu_cb good = { .size = 0 };
	const struct {
		const char *what;
		uint32_t words[8], nwords;
		int err;
	} cases[] = {
		{ "privileged packet",
		  { HPU_PKT_HEADER(HPU_PKT_WRITE_COMPLETION, 0), 0, 0x1000, 0, 1, 0 }, 6, -EPERM },
		{ "nested CALL", { HPU_PKT_HEADER(HPU_PKT_CALL, 0), 0, 0, 0, 8, 0 }, 6, -EINVAL },
		{ "unknown opcode", { 0x7f, 0 }, 2, -EINVAL },
		/* Last in the callee: nothing follows it. */
		{ "packet cut by the callee's end", { HPU_PKT_HEADER(HPU_PKT_LIN_DMA, 0), 0 }, 2,
		  -EINVAL },
	};

	ASSERT_NE(NULL, callee);
	ASSERT_NE(0, sync_va);
	ASSERT_EQ(0, hpu_vm_map(self->fd, 0, 0, callee, HPU_PAGE, DRM_HPU_VM_MAP_READ,
				&callee_va));
	hpu_cb_signal(&good, sync_va, 1);

	EXPECT_EQ(-EFAULT, run_call(self->fd, 0, UNMAPPED_VA, 8)) TH_LOG("unmapped callee");
	/* The driver takes any size up to the limit: the device faults past the mapping. */
	memcpy(callee, good.buf, good.size);
	EXPECT_EQ(-EFAULT, run_call(self->fd, 0, callee_va, HPU_CALL_MAX_SIZE))
		TH_LOG("callee running off its mapping");
	EXPECT_EQ(1, *sync);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		/* A SIGNAL, the bad packet, then a SIGNAL that must not run (but for the last). */
		uint32_t size = good.size + 4 * cases[i].nwords;

		memcpy(callee, good.buf, good.size);
		memcpy(callee + 4, cases[i].words, 4 * cases[i].nwords);
		memcpy(callee + 4 + cases[i].nwords, good.buf, good.size);
		*sync = 0;
		if (i + 1 < sizeof(cases) / sizeof(cases[0]))
			size += good.size;
		EXPECT_EQ(cases[i].err, run_call(self->fd, 1, callee_va, size))
			TH_LOG("%s", cases[i].what);
		EXPECT_EQ(1, *sync) TH_LOG("%s", cases[i].what);
	}

	memcpy(callee, good.buf, good.size);
	EXPECT_EQ(0, run_call(self->fd, 2, callee_va, good.size));
	EXPECT_EQ(2, *sync);
}

TEST_HARNESS_MAIN
