/* SPDX-License-Identifier: MIT */
/*
 * Host unit test of libhpu's graph IR and compiler (recipe/hpu_ir.c,
 * recipe/hpu_compiler.c), built from their sources with no device: graphs
 * are made by hand, and the recipes' command buffers and parameter blocks
 * are read back packet by packet.  Liveness and workspace reuse, engine
 * assignment and the WAITs and SIGNALs between engines, the cache key's
 * stability and its sensitivity to every attribute, numbers as runtime
 * parameters (one recipe for every value), and which buffers are
 * intermediates.  Prints TAP.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <drm/hpu_packets.h>

#include "../../userspace/lib/recipe/recipe.h"
#include "test_libhpu_tap.h"

enum { N = 1024 }; /* elements of a vector operand */

static struct hpu_ir g;
static const struct hpu_compile_config cfg4 = { .engines = 4, .fw_version = 0x010000 };

static void graph_reset(unsigned int num_bufs, const bool *internal)
{
	unsigned int b;

	free(g.nodes);
	free(g.bufs);
	g = (struct hpu_ir){ .num_bufs = num_bufs, .cap_bufs = num_bufs };
	g.bufs = calloc(num_bufs, sizeof(*g.bufs));
	for (b = 0; b < num_bufs; b++)
		g.bufs[b] = (struct hpu_gbuf){ .size = N * 4, .internal = internal && internal[b] };
}

static struct hpu_tensor_layout vec(unsigned int ndim, int64_t d0, int64_t d1)
{
	struct hpu_tensor_layout l;
	int64_t shape[2] = { d0, d1 };

	hpu_layout_init(&l, HPU_DT_F32, ndim, shape);
	return l;
}

/* Appends an op: t[0] is the output, bufs[i] operand i's buffer. */
static struct hpu_gnode *node(uint32_t kernel, int64_t arg0, unsigned int count,
			      const uint32_t *bufs, const struct hpu_tensor_layout *l)
{
	struct hpu_gnode *n;
	unsigned int i;

	g.nodes = realloc(g.nodes, (g.num_nodes + 1) * sizeof(*g.nodes));
	n = &g.nodes[g.num_nodes++];
	memset(n, 0, sizeof(*n));
	n->op = (struct hpu_op){ .name = "op", .kernel = kernel, .num_tensors = count,
				 .outputs = 1, .args = { arg0 } };
	for (i = 0; i < HPU_OP_TENSORS; i++)
		n->buf[i] = i < count ? bufs[i] : HPU_GRAPH_NONE;
	for (i = 0; i < count; i++) {
		n->op.t[i] = &hpu_ir_present;
		n->op.l[i] = l ? l[i] : vec(1, N, 0);
	}
	return n;
}

static void unary(uint32_t out, uint32_t in, int64_t fn)
{
	node(HPU_KERNEL_UNARY, fn, 2, (uint32_t[]){ out, in }, NULL);
}

static struct hpu_recipe *compile(const struct hpu_compile_config *cfg)
{
	struct hpu_recipe *r = NULL;
	int ret = hpu_compile(&g, cfg, &r);

	EXPECT(ret == 0);
	return r;
}

/* The packets of engine e: counts of each kind, and the first WAIT's value. */
struct packets {
	unsigned int waits, signals, launches, gemms, dmas, total;
	uint32_t first_wait_value;
	uint64_t param_blocks[16]; /* blob offsets of the parameter blocks launched */
};

static struct packets walk(const struct hpu_recipe *r, unsigned int e)
{
	struct packets p = { 0 };
	uint32_t at = r->engine[e].off, end = at + r->engine[e].size, header, size;

	while (at < end) {
		memcpy(&header, r->blob + at, sizeof(header));
		size = hpu_pkt_size(header);
		EXPECT(size != 0);
		if (!size)
			break;
		switch (HPU_PKT_OPCODE(header)) {
		case HPU_PKT_WAIT: {
			struct hpu_pkt_wait w;

			memcpy(&w, r->blob + at, sizeof(w));
			if (!p.waits++)
				p.first_wait_value = w.value;
			break;
		}
		case HPU_PKT_SIGNAL: p.signals++; break;
		case HPU_PKT_TPC_LAUNCH: {
			struct hpu_pkt_tpc_launch t;

			memcpy(&t, r->blob + at, sizeof(t));
			if (p.launches < 16)
				p.param_blocks[p.launches] = t.params;
			p.launches++;
			break;
		}
		case HPU_PKT_MME_GEMM: p.gemms++; break;
		case HPU_PKT_LIN_DMA: p.dmas++; break;
		}
		p.total++;
		at += size;
	}
	EXPECT(at == end);
	return p;
}

/* The address template of operand i of the parameter block at off, and its site's base. */
static uint64_t param_addr(const struct hpu_recipe *r, uint64_t off, unsigned int i,
			   uint32_t *base)
{
	uint32_t at = (uint32_t)(off + sizeof(struct hpu_kernel_params) +
				 i * sizeof(struct hpu_tensor_desc));
	unsigned int s;
	uint64_t v;

	memcpy(&v, r->blob + at, sizeof(v));
	*base = HPU_GRAPH_NONE;
	for (s = 0; s < r->num_sites; s++)
		if (r->sites[s].at == at)
			*base = r->sites[s].base;
	return v;
}

/* P -> A -> B -> C -> D -> Q, intermediates of 4 KiB: two slots, used in turn. */
static void test_workspace_reuses_dead_intermediates(void)
{
	const bool internal[] = { false, true, true, true, true, false };
	uint64_t addr[6];
	uint32_t base;
	struct hpu_recipe *r;
	struct packets p;
	unsigned int i;

	graph_reset(6, internal);
	for (i = 0; i < 5; i++)
		unary(i + 1, i, HPU_UNARY_NEG);
	r = compile(&cfg4);
	if (!r)
		return;
	EXPECT(r->workspace_size == 2 * N * 4);
	EXPECT(r->num_bindings == 2);
	/* A chain stays on one tensor engine: no sync object at all. */
	EXPECT(r->num_waits == 0 && r->num_signals == 0);
	p = walk(r, 2);
	EXPECT(p.launches == 5 && p.waits == 0);
	for (i = 0; i < 5; i++)
		addr[i] = param_addr(r, p.param_blocks[i], 0, &base);
	/* Outputs of ops 0..3 are A..D: A and C share bytes, B and D too, A and B do not. */
	EXPECT(addr[0] == addr[2] && addr[1] == addr[3] && addr[0] != addr[1]);
	param_addr(r, p.param_blocks[0], 0, &base);
	EXPECT(base == HPU_SITE_WORKSPACE);
	param_addr(r, p.param_blocks[4], 0, &base);
	EXPECT(base == 1); /* Q: the second binding */
	hpu_recipe_put(r);
}

/* A and B both live when Q = A + B reads them: they never share. */
static void test_live_intermediates_do_not_share(void)
{
	const bool internal[] = { false, true, true, false };
	struct hpu_recipe *r;

	graph_reset(4, internal);
	unary(1, 0, HPU_UNARY_NEG);
	unary(2, 0, HPU_UNARY_EXP);
	node(HPU_KERNEL_BINARY, HPU_BINARY_ADD, 3, (uint32_t[]){ 3, 1, 2 }, NULL);
	r = compile(&cfg4);
	if (!r)
		return;
	EXPECT(r->workspace_size == 2 * N * 4);
	hpu_recipe_put(r);
}

/*
 * X = 0 (DMA memset), C = X @ W (MME), Y = relu(C), Z = Y + X (TPC): the
 * MME waits for the DMA, the TPC for the MME, and Z needs no wait for X:
 * the TPC engine knows the DMA is done through the MME.
 */
static void test_engines_and_minimal_sync(void)
{
	struct hpu_tensor_layout m = vec(2, 16, 16), g3 = m;
	struct hpu_recipe *r;
	struct packets dma, mme, tpc;
	struct hpu_gnode *gemm;

	graph_reset(5, NULL);
	node(HPU_KERNEL_FILL, 0, 1, (uint32_t[]){ 0 }, &m);
	g3.ndim = 3;
	g3.shape[0] = 1;
	g3.shape[1] = 16;
	g3.shape[2] = 16;
	g3.strides[0] = 256;
	g3.strides[1] = 16;
	g3.strides[2] = 1;
	gemm = node(HPU_OPK_GEMM, 0, 3, (uint32_t[]){ 2, 0, 1 },
		    (struct hpu_tensor_layout[]){ g3, g3, g3 });
	(void)gemm;
	node(HPU_KERNEL_UNARY, HPU_UNARY_RELU, 2, (uint32_t[]){ 3, 2 },
	     (struct hpu_tensor_layout[]){ m, m });
	node(HPU_KERNEL_BINARY, HPU_BINARY_ADD, 3, (uint32_t[]){ 4, 3, 0 },
	     (struct hpu_tensor_layout[]){ m, m, m });
	r = compile(&cfg4);
	if (!r)
		return;
	dma = walk(r, 0);
	mme = walk(r, 1);
	tpc = walk(r, 2);
	EXPECT(dma.dmas == 1 && dma.signals == 1 && dma.waits == 0);
	EXPECT(mme.gemms == 1 && mme.waits == 1 && mme.first_wait_value == 1 && mme.signals == 1);
	EXPECT(tpc.launches == 2 && tpc.waits == 1 && tpc.signals == 0);
	EXPECT(r->engine[3].size == 0);
	EXPECT(r->num_waits == 2 && r->num_signals == 2);
	hpu_recipe_put(r);
	/* One queue: one engine runs everything in program order, no sync object. */
	r = compile(&(struct hpu_compile_config){ .engines = 1 });
	if (!r)
		return;
	tpc = walk(r, 0);
	EXPECT(tpc.total == 4 && tpc.waits == 0 && tpc.signals == 0);
	hpu_recipe_put(r);
}

/* Two independent chains of two ops: 0 -> 1 -> 1 and 2 -> 3 -> 3, interleaved. */
static void two_chains(void)
{
	graph_reset(4, NULL);
	unary(1, 0, HPU_UNARY_NEG);
	unary(3, 2, HPU_UNARY_NEG);
	unary(1, 1, HPU_UNARY_EXP);
	unary(3, 3, HPU_UNARY_EXP);
}

/* Two independent chains spread over both tensor engines, each in order. */
static void test_independent_chains_use_both_tensor_engines(void)
{
	struct hpu_recipe *r;

	two_chains();
	r = compile(&cfg4);
	if (!r)
		return;
	EXPECT(r->engine[2].nodes == 2 && r->engine[3].nodes == 2);
	EXPECT(r->num_waits == 0);
	hpu_recipe_put(r);
}

/*
 * Fitting engines: a chain (no overlap possible) goes to one engine, with
 * no sync object; two independent chains of equal work still spread.
 */
static void test_fit_engines_keeps_a_chain_on_one_engine(void)
{
	const struct hpu_compile_config fit = { .engines = 4, .fw_version = 0x010000,
						 .fit_engines = true };
	struct hpu_recipe *r;

	graph_reset(4, NULL);
	unary(1, 0, HPU_UNARY_NEG);
	unary(2, 1, HPU_UNARY_EXP);
	unary(3, 2, HPU_UNARY_NEG);
	r = compile(&fit);
	if (!r)
		return;
	EXPECT(r->num_engines == 1 && r->engine[0].nodes == 3);
	EXPECT(r->num_waits == 0 && r->num_signals == 0);
	hpu_recipe_put(r);

	two_chains();
	r = compile(&fit);
	if (!r)
		return;
	EXPECT(r->num_engines == 4);
	EXPECT(r->engine[2].nodes == 2 && r->engine[3].nodes == 2);
	hpu_recipe_put(r);
}

static uint64_t key_hash(const struct hpu_compile_config *cfg, uint8_t **key, size_t *size)
{
	uint64_t hash = 0;

	EXPECT(hpu_ir_key(&g, cfg, key, size, &hash) == 0);
	return hash;
}

static void base_graph(void)
{
	const bool internal[] = { false, true, false };

	graph_reset(3, internal);
	unary(1, 0, HPU_UNARY_RELU);
	node(HPU_KERNEL_BINARY, HPU_BINARY_ADD, 3, (uint32_t[]){ 2, 1, 0 }, NULL);
	g.nodes[1].op.scalars[0] = 1;
}

/* The same graph hashes alike; any attribute that changes the result changes the hash. */
static void test_key_is_stable_and_sees_every_attribute(void)
{
	uint8_t *k0, *k1;
	size_t s0, s1;
	uint64_t h0, h1;
	unsigned int m;

	base_graph();
	h0 = key_hash(&cfg4, &k0, &s0);
	h1 = key_hash(&cfg4, &k1, &s1);
	EXPECT(h0 == h1 && s0 == s1 && !memcmp(k0, k1, s0));
	free(k1);
	/* A persistent buffer's size is not in the key: where tensors are is bound at launch. */
	g.bufs[0].size *= 2;
	EXPECT(key_hash(&cfg4, &k1, &s1) == h0);
	free(k1);
	for (m = 0; m < 14; m++) {
		struct hpu_compile_config cfg = cfg4;
		struct hpu_gnode *n;
		const char *what[] = { "kernel", "arg", "dtype", "shape", "stride",
				       "delta", "aliasing", "internal", "internal size",
				       "ops", "engines", "firmware", "outputs", "engine fitting" };

		base_graph();
		n = &g.nodes[1];
		switch (m) {
		case 0: n->op.kernel = HPU_KERNEL_WHERE; break;
		case 1: n->op.args[0] = HPU_BINARY_SUB; break;
		case 2: n->op.l[1].dtype = HPU_DT_BF16; break;
		case 3: n->op.l[2].shape[0] = N / 2; break;
		case 4: n->op.l[2].strides[0] = 0; break;
		case 5: n->delta[2] = 64; break;
		case 6: n->buf[2] = 1; break;
		case 7: g.bufs[1].internal = false; break;
		case 8: g.bufs[1].size *= 2; break;
		case 9: g.num_nodes = 1; break;
		case 10: cfg.engines = 2; break;
		case 11: cfg.fw_version = 0x010001; break;
		case 12: n->op.outputs = 3; break;
		case 13: cfg.fit_engines = true; break;
		}
		h1 = key_hash(&cfg, &k1, &s1);
		if (h1 == h0 || (s1 == s0 && !memcmp(k0, k1, s0))) {
			printf("#   the key does not see the %s\n", what[m]);
			test_failed = true;
		}
		free(k1);
	}
	free(k0);
}

/*
 * A fill of intermediate 1 with `fill`, 2 = in + alpha * 1, out = 2 ^ exponent,
 * and persistent buffer 3 filled with `zero` (a memset when it is +0).
 */
static void numbers_graph(double fill, double alpha, double exponent, double zero)
{
	const bool internal[] = { false, true, true, false, false };

	graph_reset(5, internal);
	node(HPU_KERNEL_FILL, 0, 1, (uint32_t[]){ 1 }, NULL)->op.scalars[0] = fill;
	node(HPU_KERNEL_BINARY, HPU_BINARY_ADD, 3, (uint32_t[]){ 2, 0, 1 }, NULL)->op.scalars[0] =
		alpha;
	unary(4, 2, HPU_UNARY_POW_SCALAR);
	g.nodes[2].op.scalars[0] = exponent;
	node(HPU_KERNEL_FILL, 0, 1, (uint32_t[]){ 3 }, NULL)->op.scalars[0] = zero;
}

static uint8_t *prev_key;
static size_t prev_size;

/* Whether g's key is the one of the graph before (none after same_key_reset()). */
static bool same_key(void)
{
	uint8_t *key;
	size_t size;
	bool same;

	key_hash(&cfg4, &key, &size);
	same = prev_key && size == prev_size && !memcmp(key, prev_key, size);
	free(prev_key);
	prev_key = key;
	prev_size = size;
	return same;
}

static void same_key_reset(void)
{
	free(prev_key);
	prev_key = NULL;
}

/*
 * One recipe for a graph recorded with other numbers: the key has where the
 * numbers are, not their values, and the recipe with the second graph's
 * values written in is byte for byte the recipe compiled for it.  A fill
 * with +0 is a memset, not a kernel: its key differs from a fill with -0
 * or 1, whose number is a parameter.
 */
static void test_numbers_are_parameters(void)
{
	struct hpu_recipe *ra, *rb;
	uint64_t *values = NULL, bits;
	uint8_t *image;
	unsigned int i;

	numbers_graph(1.5, 1, 2, 0);
	EXPECT(!same_key());
	ra = compile(&cfg4);
	numbers_graph(-3.25, 0.125, 3, 0);
	EXPECT(same_key());
	rb = compile(&cfg4);
	if (!ra || !rb)
		return;
	/* Three kernels' parameter blocks, every number of each; the memset has none. */
	EXPECT(ra->num_params == 3 * HPU_OP_SCALARS);
	EXPECT(ra->blob_size == rb->blob_size && memcmp(ra->blob, rb->blob, ra->blob_size));
	EXPECT(hpu_ir_values(&g, ra, &values) == 0);
	image = malloc(ra->blob_size);
	memcpy(image, ra->blob, ra->blob_size);
	hpu_recipe_write_params(ra, image, values);
	EXPECT(!memcmp(image, rb->blob, ra->blob_size));
	/* The add's alpha went where its kernel reads it. */
	for (i = 0; i < ra->num_params; i++)
		if (ra->params[i].src == 1 * HPU_OP_SCALARS) {
			memcpy(&bits, image + ra->params[i].at, sizeof(bits));
			EXPECT(bits == 0x3fc0000000000000ull); /* 0.125 */
		}
	free(image);
	free(values);
	hpu_recipe_put(ra);
	hpu_recipe_put(rb);

	numbers_graph(1.5, 1, 2, -0.0);
	EXPECT(!same_key());
	numbers_graph(1.5, 1, 2, 1);
	EXPECT(same_key());
	numbers_graph(1.5, 1, 2, 0);
	EXPECT(!same_key());
	/* A node past the graph's is refused rather than read. */
	ra = compile(&cfg4);
	g.num_nodes = 2;
	EXPECT(ra && hpu_ir_values(&g, ra, &values) == -EINVAL);
	if (ra)
		hpu_recipe_put(ra);
	same_key_reset();
}

/* Intermediates: no holder, first access a write of every byte; persistent bases. */
static void test_finalize_finds_intermediates_and_bases(void)
{
	const unsigned int holders[] = { 1, 0, 0, 0, 0 };
	struct hpu_tensor_layout half = vec(1, N / 2, 0);

	graph_reset(5, NULL);
	unary(1, 0, HPU_UNARY_NEG);  /* 1: written whole first: intermediate */
	unary(0, 2, HPU_UNARY_NEG);  /* 2: read first: keeps its memory */
	node(HPU_KERNEL_UNARY, HPU_UNARY_NEG, 2, (uint32_t[]){ 3, 0 },
	     (struct hpu_tensor_layout[]){ half, half }); /* 3: half written: keeps it */
	node(HPU_KERNEL_SGD, 0, 3, (uint32_t[]){ 4, 1, 4 }, NULL); /* 4: in place: keeps it */
	g.nodes[0].delta[1] = 256;
	g.nodes[2].delta[1] = 128;
	hpu_ir_finalize(&g, holders);
	EXPECT(!g.bufs[0].internal && g.bufs[1].internal && !g.bufs[2].internal &&
	       !g.bufs[3].internal && !g.bufs[4].internal);
	/* Buffer 0's base is its lowest operand address; deltas are from there. */
	EXPECT(g.bufs[0].anchor == 0);
	EXPECT(g.nodes[0].delta[1] == 256 && g.nodes[2].delta[1] == 128);
	EXPECT(g.bufs[2].anchor == 0);
}

static const struct tap_test tests[] = {
	{ "the workspace reuses dead intermediates", test_workspace_reuses_dead_intermediates },
	{ "live intermediates never share bytes", test_live_intermediates_do_not_share },
	{ "engines by op kind, and only the WAITs not already implied",
	  test_engines_and_minimal_sync },
	{ "independent chains use both tensor engines",
	  test_independent_chains_use_both_tensor_engines },
	{ "fitting engines keeps a chain on one engine", test_fit_engines_keeps_a_chain_on_one_engine },
	{ "the cache key is stable and sees every attribute",
	  test_key_is_stable_and_sees_every_attribute },
	{ "numbers are parameters: one recipe serves every value",
	  test_numbers_are_parameters },
	{ "the flush finds intermediates and persistent bases",
	  test_finalize_finds_intermediates_and_bases },
};

int main(void)
{
	unsigned int n = 0;

	printf("TAP version 13\n1..%zu\n", ARRAY_SIZE(tests));
	return tap_run(tests, ARRAY_SIZE(tests), &n) ? 1 : 0;
}
