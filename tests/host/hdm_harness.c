/* SPDX-License-Identifier: MIT */
/*
 * Harness of the device-core host tests.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "hdm_harness.h"

const struct hdm_core_config hpu_test_cfg = {
	.hbm_size = (32ull << 30) + (2u << 20), /* both halves of HBM_SIZE non-zero */
	.num_dma = 8,
	.num_mme = 2,
	.num_tpc = 24,
	.caps = HDM_CORE_CAPS,
};

/* Guest memory at bus_addr, or NULL if [bus_addr, bus_addr + len) is not all inside it. */
static uint8_t *hpu_test_mem(struct hpu_test *t, uint64_t bus_addr, uint64_t len)
{
	if (t->on_dma)
		t->on_dma(t);
	if (bus_addr < HPU_TEST_MEM_BASE || len > HPU_TEST_MEM_SIZE ||
	    bus_addr - HPU_TEST_MEM_BASE > HPU_TEST_MEM_SIZE - len)
		return NULL;
	return t->mem + (bus_addr - HPU_TEST_MEM_BASE);
}

static int hpu_test_dma_read(void *opaque, uint64_t bus_addr, void *buf, uint64_t len)
{
	struct hpu_test *t = opaque;
	const uint8_t *p;

	t->dma_reads++;
	p = hpu_test_mem(t, bus_addr, len);
	if (!p)
		return -EFAULT;
	memcpy(buf, p, len);
	return 0;
}

static int hpu_test_dma_write(void *opaque, uint64_t bus_addr, const void *buf, uint64_t len)
{
	struct hpu_test *t = opaque;
	uint8_t *p;

	t->dma_writes++;
	p = hpu_test_mem(t, bus_addr, len);
	if (!p)
		return -EFAULT;
	memcpy(p, buf, len);
	return 0;
}

static void hpu_test_irq_raise(void *opaque, unsigned int vector)
{
	struct hpu_test *t = opaque;

	t->irqs++;
	if (vector != HPU_MSIX_VEC_MISC)
		t->bad_vectors++;
	if (vector < HPU_MSIX_VECTORS)
		t->vector_irqs[vector]++;
}

static void hpu_test_schedule_boot(void *opaque)
{
	((struct hpu_test *)opaque)->boots_scheduled++;
}

static void hpu_test_cancel_boot(void *opaque)
{
	((struct hpu_test *)opaque)->boots_cancelled++;
}

static void hpu_test_log(void *opaque, const char *msg)
{
	struct hpu_test *t = opaque;

	t->logs++;
	snprintf(t->last_log, sizeof(t->last_log), "%s", msg);
}

static uint64_t hpu_test_now_ns(void *opaque)
{
	struct hpu_test *t = opaque;

	t->clock += HPU_TEST_CLOCK_TICK;
	return t->clock;
}

static const struct hdm_core_ops hpu_test_ops = {
	.dma_read = hpu_test_dma_read,
	.dma_write = hpu_test_dma_write,
	.irq_raise = hpu_test_irq_raise,
	.schedule_boot = hpu_test_schedule_boot,
	.cancel_boot = hpu_test_cancel_boot,
	.log_guest_error = hpu_test_log,
	.now_ns = hpu_test_now_ns,
};

void hpu_check(struct hpu_test *t, bool ok, const char *what, int line)
{
	if (ok)
		return;
	printf("# line %d: check failed: %s\n", line, what);
	t->failed = true;
}

void hpu_check_eq(struct hpu_test *t, uint64_t got, uint64_t want, const char *what, int line)
{
	if (got == want)
		return;
	printf("# line %d: %s is 0x%" PRIx64 ", expected 0x%" PRIx64 "\n", line, what, got, want);
	t->failed = true;
}

uint32_t hpu_rd(struct hpu_test *t, uint32_t offset)
{
	return hdm_core_mmio_read(t->core, offset, 4);
}

void hpu_wr(struct hpu_test *t, uint32_t offset, uint32_t value)
{
	hdm_core_mmio_write(t->core, offset, value, 4);
}

void hpu_test_expect_error(struct hpu_test *t, uint32_t code, int line)
{
	hpu_check_eq(t, hpu_rd(t, HPU_REG_ERR_CODE), code, "ERR_CODE", line);
	hpu_check_eq(t, t->logs - t->logs_seen, 1, "new log lines", line);
	hpu_check(t, hpu_rd(t, HPU_REG_IRQ_CAUSE) & HPU_IRQ_ERROR, "ERROR cause set", line);
	hpu_wr(t, HPU_REG_IRQ_CAUSE, HPU_IRQ_ERROR);
	t->logs_seen = t->logs;
}

void hpu_test_expect_clean(struct hpu_test *t, int line)
{
	hpu_check_eq(t, t->logs - t->logs_seen, 0, "new log lines", line);
	hpu_check(t, !(hpu_rd(t, HPU_REG_IRQ_CAUSE) & HPU_IRQ_ERROR), "no ERROR cause", line);
}

void hpu_test_image_seal(uint8_t *img, uint32_t payload_size)
{
	uLong crc = crc32(0, img, HPU_FW_CRC_OFFSET);

	crc = crc32(crc, img + HPU_FW_HEADER_SIZE, payload_size);
	hdm_st_le32(img + HPU_FW_CRC_OFFSET, (uint32_t)crc);
}

uint8_t *hpu_test_image_build(struct hpu_test *t, uint32_t payload_size)
{
	uint8_t *img = t->mem + HPU_TEST_IMAGE_OFF;
	uint32_t i;

	memset(img, 0, HPU_FW_HEADER_SIZE);
	hdm_st_le32(img + HPU_HDR_OFF(magic), HPU_FW_MAGIC);
	hdm_st_le32(img + HPU_HDR_OFF(if_version), HPU_FW_IF_VERSION);
	hdm_st_le32(img + HPU_HDR_OFF(header_size), HPU_FW_HEADER_SIZE);
	hdm_st_le32(img + HPU_HDR_OFF(payload_size), payload_size);
	hdm_st_le32(img + HPU_HDR_OFF(fw_version), HPU_TEST_FW_VERSION);
	memcpy(img + HPU_HDR_OFF(version_str), "hpu-fw 1.2.3", sizeof("hpu-fw 1.2.3"));
	for (i = 0; i < payload_size; i++)
		img[HPU_FW_HEADER_SIZE + i] = (uint8_t)(i * 7 + 3);
	hpu_test_image_seal(img, payload_size);
	return img;
}

void hpu_test_boot_start(struct hpu_test *t, uint64_t addr, uint32_t size)
{
	hpu_wr(t, HPU_REG_BOOT_ADDR_LO, (uint32_t)addr);
	hpu_wr(t, HPU_REG_BOOT_ADDR_HI, (uint32_t)(addr >> 32));
	hpu_wr(t, HPU_REG_BOOT_SIZE, size);
	hpu_wr(t, HPU_REG_BOOT_CTRL, HPU_BOOT_CTRL_START);
}

void hpu_test_boot(struct hpu_test *t, uint64_t addr, uint32_t size)
{
	unsigned int scheduled = t->boots_scheduled;

	hpu_test_boot_start(t, addr, size);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_BOOT_STATUS), HPU_FW_BOOT_LOADING);
	HPU_CHECK_EQ(t, t->boots_scheduled, scheduled + 1);
	hdm_core_boot_run(t->core);
}

void hpu_test_boot_good(struct hpu_test *t)
{
	hpu_test_image_build(t, HPU_TEST_PAYLOAD_SIZE);
	hpu_test_boot(t, HPU_TEST_IMAGE_ADDR, HPU_TEST_IMAGE_SIZE);
	HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_BOOT_STATUS), HPU_FW_BOOT_READY);
}

struct hpu_test *hpu_test_new(void)
{
	struct hpu_test *t = calloc(1, sizeof(*t));

	if (!t || !(t->core = malloc(sizeof(*t->core))) ||
	    !(t->mem = calloc(1, HPU_TEST_MEM_SIZE))) {
		perror("hpu_test_new");
		exit(2);
	}
	if (hdm_core_init(t->core, &hpu_test_ops, t, &hpu_test_cfg)) {
		fprintf(stderr, "hpu_test_new: no host memory for HBM\n");
		exit(2);
	}
	return t;
}

bool hpu_tap_report(struct hpu_test *t, unsigned int n, const char *name)
{
	bool ok = !t->failed;

	if (!ok && t->logs)
		printf("# last log: %s\n", t->last_log);
	printf("%s %u - %s\n", ok ? "ok" : "not ok", n, name);
	hdm_core_destroy(t->core);
	free(t->mem);
	free(t->core);
	free(t);
	return ok;
}

unsigned int hpu_run_cases(const struct hpu_test_case *cases, size_t count, unsigned int *n)
{
	unsigned int failed = 0;
	struct hpu_test *t;
	size_t i;

	for (i = 0; i < count; i++) {
		t = hpu_test_new();
		cases[i].run(t);
		failed += !hpu_tap_report(t, ++*n, cases[i].name);
	}
	return failed;
}

int hpu_run_suite(const struct hpu_test_case *cases, size_t count)
{
	unsigned int n = 0;

	printf("TAP version 13\n1..%zu\n", count);
	return hpu_run_cases(cases, count, &n) ? 1 : 0;
}

/* ---- the submission path ---- */

/* Next free table page in the MMU region; the context table takes the first two. */
static uint64_t hpu_pt_next;

uint64_t bar4_rd(struct hpu_test *t, uint64_t off)
{
	return hdm_core_mmu_read(t->core, off, 8);
}

void bar4_wr(struct hpu_test *t, uint64_t off, uint64_t value)
{
	hdm_core_mmu_write(t->core, off, value, 8);
}

uint64_t pt_table(struct hpu_test *t, uint64_t entry_off)
{
	uint64_t entry = bar4_rd(t, entry_off);

	if (!(entry & HPU_PTE_PRESENT)) {
		entry = hpu_pt_next | HPU_PTE_PRESENT;
		hpu_pt_next += HPU_MMU_PAGE_SIZE;
		bar4_wr(t, entry_off, entry);
	}
	return entry & HPU_PTE_ADDR_MASK;
}

void pt_map_page(struct hpu_test *t, uint32_t asid, uint64_t va, uint64_t addr, uint64_t flags)
{
	unsigned int leaf = flags & HPU_PTE_HUGE ? 2 : 3;
	uint64_t table = pt_table(t, HPU_MMU_CTX_TABLE + asid * 8ull);
	unsigned int level;

	for (level = 0; level < leaf; level++)
		table = pt_table(t, table + HPU_MMU_INDEX(va, level) * 8);
	bar4_wr(t, table + HPU_MMU_INDEX(va, leaf) * 8, addr | flags);
}

void pt_map(struct hpu_test *t, uint32_t asid, uint64_t va, uint64_t addr, uint64_t len,
	    uint64_t flags)
{
	uint64_t off;

	for (off = 0; off < len; off += HPU_MMU_PAGE_SIZE)
		pt_map_page(t, asid, va + off, addr + off, flags);
}

void pt_map_host(struct hpu_test *t, uint32_t asid, uint32_t off, uint32_t len)
{
	pt_map(t, asid, VA_HOST + off, BUS(off), len, PTE_HOST_RW);
}

void cb_u32(struct hpu_cb *cb, uint32_t v)
{
	hdm_st_le32(cb->b + cb->len, v);
	cb->len += 4;
}

void cb_u64(struct hpu_cb *cb, uint64_t v)
{
	hdm_st_le64(cb->b + cb->len, v);
	cb->len += 8;
}

void cb_nop(struct hpu_cb *cb)
{
	cb_u32(cb, HPU_PKT_HEADER(HPU_PKT_NOP, 0));
	cb_u32(cb, 0);
}

void cb_dma(struct hpu_cb *cb, uint64_t dst, uint64_t src, uint64_t size, uint32_t flags)
{
	cb_u32(cb, HPU_PKT_HEADER(HPU_PKT_LIN_DMA, flags));
	cb_u32(cb, 0);
	cb_u64(cb, src);
	cb_u64(cb, dst);
	cb_u64(cb, size);
}

void cb_sync(struct hpu_cb *cb, uint32_t opcode, uint64_t addr, uint32_t value)
{
	cb_u32(cb, HPU_PKT_HEADER(opcode, 0));
	cb_u32(cb, value);
	cb_u64(cb, addr);
}

void cb_timestamp(struct hpu_cb *cb, uint64_t addr)
{
	cb_u32(cb, HPU_PKT_HEADER(HPU_PKT_TIMESTAMP, 0));
	cb_u32(cb, 0);
	cb_u64(cb, addr);
}

void cb_completion(struct hpu_cb *cb, uint64_t bus_addr, uint64_t value)
{
	cb_u32(cb, HPU_PKT_HEADER(HPU_PKT_WRITE_COMPLETION, 0));
	cb_u32(cb, 0);
	cb_u64(cb, bus_addr);
	cb_u64(cb, value);
}

void cb_interrupt(struct hpu_cb *cb, uint32_t vector)
{
	cb_u32(cb, HPU_PKT_HEADER(HPU_PKT_INTERRUPT, 0));
	cb_u32(cb, vector);
}

uint32_t sync_value(struct hpu_test *t, unsigned int i)
{
	return hdm_ld_le32(t->mem + SYNC_OFF + 4 * i);
}

uint64_t completion(struct hpu_test *t, unsigned int q)
{
	return hdm_ld_le64(t->mem + COMPLETION_OFF(q));
}

void write_desc(struct hpu_test *t, unsigned int q, const struct hpu_queue_desc *d)
{
	uint32_t pi = hpu_rd(t, REG_Q(q, PI));
	uint8_t *p = t->mem + Q_RING_OFF(q) + (pi % Q_RING_ENTRIES) * sizeof(*d);

	hdm_st_le64(p + offsetof(struct hpu_queue_desc, cb_addr), d->cb_addr);
	hdm_st_le32(p + offsetof(struct hpu_queue_desc, cb_size), d->cb_size);
	hdm_st_le32(p + offsetof(struct hpu_queue_desc, priv_offset), d->priv_offset);
	hdm_st_le32(p + offsetof(struct hpu_queue_desc, asid), d->asid);
	hdm_st_le32(p + offsetof(struct hpu_queue_desc, flags), d->flags);
	hdm_st_le64(p + offsetof(struct hpu_queue_desc, tag), d->tag);
	hpu_wr(t, REG_Q(q, PI), pi + 1);
}

void submit_flags(struct hpu_test *t, unsigned int q, const struct hpu_cb *cb,
		  uint32_t priv_offset, uint32_t asid, uint32_t flags, uint64_t tag)
{
	uint32_t slot = hpu_rd(t, REG_Q(q, PI)) % Q_RING_ENTRIES;
	struct hpu_queue_desc d = {
		.cb_addr = BUS(CB_OFF(q, slot)),
		.cb_size = cb->len,
		.priv_offset = priv_offset,
		.asid = asid,
		.flags = flags,
		.tag = tag,
	};

	memcpy(t->mem + CB_OFF(q, slot), cb->b, cb->len);
	write_desc(t, q, &d);
}

void submit(struct hpu_test *t, unsigned int q, const struct hpu_cb *cb, uint32_t priv_offset,
	    uint32_t asid, uint64_t tag)
{
	submit_flags(t, q, cb, priv_offset, asid, 0, tag);
}

void submit_user(struct hpu_test *t, unsigned int q, struct hpu_cb *cb, uint64_t tag)
{
	uint32_t user = cb->len;

	cb_completion(cb, BUS(COMPLETION_OFF(q)), COMPLETION_VALUE + tag);
	submit(t, q, cb, user, ASID, tag);
}

void run(struct hpu_test *t)
{
	hdm_core_engine_run(t->core);
}

void *engine_thread(void *opaque)
{
	struct hdm_core *core = opaque;

	while (hdm_core_engine_wait(core))
		hdm_core_engine_run(core);
	return NULL;
}

void sleep_tick(void)
{
	const struct timespec tick = { .tv_nsec = 1000000 };

	nanosleep(&tick, NULL);
}

uint32_t run_threaded(struct hpu_test *t, unsigned int jobs,
		      void (*submit)(struct hpu_test *t, unsigned int i),
		      uint32_t (*done)(struct hpu_test *t))
{
	unsigned int i, waited = 0;
	pthread_t thread;

	if (pthread_create(&thread, NULL, engine_thread, t->core)) {
		hpu_check(t, false, "pthread_create", __LINE__);
		return 0;
	}
	for (i = 0; i < jobs; i++)
		submit(t, i);
	while (done(t) < jobs && ++waited < 20000)
		sleep_tick();
	hdm_core_engine_stop(t->core);
	pthread_join(thread, NULL);
	return done(t);
}

unsigned int hpu_hook_countdown;
static uint32_t hpu_hook_reg, hpu_hook_value;

static void hpu_hook_write(struct hpu_test *t)
{
	if (hpu_hook_countdown && !--hpu_hook_countdown)
		hpu_wr(t, hpu_hook_reg, hpu_hook_value);
}

void hook_at(struct hpu_test *t, unsigned int n, uint32_t reg, uint32_t value)
{
	hpu_hook_countdown = n;
	hpu_hook_reg = reg;
	hpu_hook_value = value;
	t->on_dma = hpu_hook_write;
}

void setup_maps(struct hpu_test *t)
{
	hpu_pt_next = 2 * HPU_MMU_PAGE_SIZE;
	pt_map_host(t, ASID, SYNC_OFF, HPU_MMU_PAGE_SIZE);
	pt_map_host(t, ASID, SRC_OFF, BUF_SIZE);
	pt_map_host(t, ASID, DST_OFF, BUF_SIZE);
	pt_map(t, ASID, VA_HBM, HBM_BUF, BUF_SIZE, PTE_RW);
}

void setup_boot(struct hpu_test *t)
{
	unsigned int q;

	hpu_wr(t, HPU_REG_EQ_RING_LO, (uint32_t)BUS(EQ_OFF));
	hpu_wr(t, HPU_REG_EQ_RING_HI, (uint32_t)(BUS(EQ_OFF) >> 32));
	hpu_wr(t, HPU_REG_EQ_RING_SIZE, EQ_ENTRIES);
	for (q = 0; q < HPU_NUM_QUEUES; q++) {
		hpu_wr(t, REG_Q(q, RING_LO), (uint32_t)BUS(Q_RING_OFF(q)));
		hpu_wr(t, REG_Q(q, RING_HI), (uint32_t)(BUS(Q_RING_OFF(q)) >> 32));
		hpu_wr(t, REG_Q(q, RING_SIZE), Q_RING_ENTRIES);
	}
	hpu_wr(t, HPU_REG_IRQ_MASK, UINT32_MAX);
	hpu_wr(t, HPU_REG_IRQ_CAUSE, UINT32_MAX);
	hpu_test_boot_good(t);
	/* Only its own: user queues a warm reset kept may post events from READY on. */
	hpu_wr(t, HPU_REG_IRQ_CAUSE, HPU_IRQ_BOOT_DONE);
	hpu_wr(t, HPU_REG_IRQ_MASK, 0);
}

void setup(struct hpu_test *t)
{
	setup_maps(t);
	setup_boot(t);
	HPU_EXPECT_CLEAN(t);
}

void fill_pattern(uint8_t *p, uint32_t len, uint32_t seed)
{
	uint32_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)((i + seed) * 2654435761u >> 24);
}

#define EV_FIELD(f) \
	{ "event " #f, offsetof(struct hpu_event, f), sizeof(((struct hpu_event *)0)->f) }

static const struct {
	const char *name;
	size_t offset, size;
} hpu_event_fields[] = {
	EV_FIELD(type), EV_FIELD(queue), EV_FIELD(asid), EV_FIELD(engine), EV_FIELD(tag),
	EV_FIELD(addr),
};

void expect_event(struct hpu_test *t, uint32_t type, uint32_t queue, uint32_t asid,
		  uint32_t engine, uint64_t tag, uint64_t addr, unsigned int logs, int line)
{
	const uint64_t want[] = { type, queue, asid, engine, tag, addr };
	uint32_t ci = hpu_rd(t, HPU_REG_EQ_CI);
	const uint8_t *ev = t->mem + EQ_OFF + (ci % EQ_ENTRIES) * sizeof(struct hpu_event);
	size_t i;

	hpu_check(t, hpu_rd(t, HPU_REG_EQ_PI) != ci, "an event is pending", line);
	for (i = 0; i < HPU_ARRAY_SIZE(hpu_event_fields); i++) {
		const uint8_t *p = ev + hpu_event_fields[i].offset;

		hpu_check_eq(t, hpu_event_fields[i].size == 8 ? hdm_ld_le64(p) : hdm_ld_le32(p),
			     want[i], hpu_event_fields[i].name, line);
	}
	hpu_check(t, hpu_rd(t, HPU_REG_IRQ_CAUSE) & HPU_IRQ_EVENT, "EVENT cause set", line);
	hpu_check_eq(t, t->logs - t->logs_seen, logs, "log lines for the event", line);
	t->logs_seen = t->logs;
	hpu_wr(t, HPU_REG_EQ_CI, ci + 1);
	hpu_wr(t, HPU_REG_IRQ_CAUSE, HPU_IRQ_EVENT);
}

void expect_done(struct hpu_test *t, unsigned int q, int line)
{
	hpu_check_eq(t, hpu_rd(t, REG_Q(q, CI)), hpu_rd(t, REG_Q(q, PI)), "CI", line);
	hpu_check_eq(t, hpu_rd(t, REG_Q(q, STATUS)), 0, "STATUS", line);
	hpu_check_eq(t, hpu_rd(t, HPU_REG_EQ_PI), hpu_rd(t, HPU_REG_EQ_CI), "EQ_PI", line);
	hpu_test_expect_clean(t, line);
}

uint64_t xorshift64s(uint64_t *state)
{
	*state ^= *state >> 12;
	*state ^= *state << 25;
	*state ^= *state >> 27;
	return *state * 0x2545f4914f6cdd1dull;
}

struct launch launch_new(uint32_t kernel, uint32_t n)
{
	return (struct launch){
		.p = { .version = HPU_KERNEL_PARAMS_VERSION, .kernel = kernel, .num_tensors = n },
	};
}

uint32_t launch_size(const struct launch *l)
{
	return (uint32_t)(sizeof(l->p) + l->p.num_tensors * sizeof(l->t[0]));
}

struct hpu_tensor_desc desc(uint64_t va, uint32_t dtype, uint32_t ndim, const uint64_t *shape,
			    uint32_t bcast)
{
	struct hpu_tensor_desc d = { .addr = va, .dtype = dtype, .ndim = ndim };
	int64_t stride = 1;
	uint32_t k;

	for (k = 0; k < HPU_TENSOR_MAX_DIMS; k++)
		d.shape[k] = 1;
	for (k = ndim; k-- > 0;) {
		d.shape[k] = shape[k];
		if (bcast >> k & 1)
			continue;
		d.strides[k] = stride;
		stride *= (int64_t)shape[k];
	}
	return d;
}

void cb_launch(struct hpu_cb *cb, uint64_t params, uint32_t size)
{
	cb_u32(cb, HPU_PKT_HEADER(HPU_PKT_TPC_LAUNCH, 0));
	cb_u32(cb, size);
	cb_u64(cb, params);
}
