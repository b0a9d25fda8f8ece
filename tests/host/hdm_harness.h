/* SPDX-License-Identifier: MIT */
/*
 * Harness of the device-core host tests: a core driven through its
 * registers, a host buffer standing in for guest memory, checks, TAP.
 */
#ifndef HDM_HARNESS_H
#define HDM_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hdm_core.h"
#include "hpu_kernels.h"
#include "hdm_le.h"

#define HPU_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Guest memory: the only bus addresses DMA reaches. */
#define HPU_TEST_MEM_BASE 0x40000000ull
#define HPU_TEST_MEM_SIZE (16u << 20)

/* The firmware image the boot helpers build, at HPU_TEST_IMAGE_OFF in guest memory. */
#define HPU_TEST_IMAGE_OFF 0x1000u
#define HPU_TEST_IMAGE_ADDR (HPU_TEST_MEM_BASE + HPU_TEST_IMAGE_OFF)
#define HPU_TEST_PAYLOAD_SIZE 4096u
#define HPU_TEST_IMAGE_SIZE (HPU_FW_HEADER_SIZE + HPU_TEST_PAYLOAD_SIZE)
#define HPU_TEST_FW_VERSION HPU_FW_VERSION(1, 2, 3)
#define HPU_HDR_OFF(field) offsetof(struct hpu_fw_header, field)

extern const struct hdm_core_config hpu_test_cfg;

struct hpu_test {
	struct hdm_core *core;
	uint8_t *mem; /* guest memory at HPU_TEST_MEM_BASE */
	unsigned int irqs; /* every vector */
	unsigned int bad_vectors; /* vectors other than the misc one */
	unsigned int vector_irqs[HPU_MSIX_VECTORS];
	unsigned int boots_scheduled;
	unsigned int boots_cancelled;
	unsigned int dma_reads;
	unsigned int dma_writes;
	unsigned int logs;
	unsigned int logs_seen; /* logs accounted for by hpu_test_expect_*() */
	char last_log[256];
	uint64_t clock; /* now_ns(): advances by HPU_TEST_CLOCK_TICK per call */
	/* Runs before every DMA, as another thread could while the engine works; NULL: none. */
	void (*on_dma)(struct hpu_test *t);
	bool failed;
};

#define HPU_TEST_CLOCK_TICK 1000u

void hpu_check(struct hpu_test *t, bool ok, const char *what, int line);
void hpu_check_eq(struct hpu_test *t, uint64_t got, uint64_t want, const char *what, int line);

#define HPU_CHECK(t, cond) hpu_check(t, cond, #cond, __LINE__)
#define HPU_CHECK_EQ(t, got, want) hpu_check_eq(t, got, want, #got, __LINE__)

uint32_t hpu_rd(struct hpu_test *t, uint32_t offset);
void hpu_wr(struct hpu_test *t, uint32_t offset, uint32_t value);

/* The last access was a guest error with this code: one log line, ERROR cause. */
void hpu_test_expect_error(struct hpu_test *t, uint32_t code, int line);
/* No guest error since the last check. */
void hpu_test_expect_clean(struct hpu_test *t, int line);

#define HPU_EXPECT_ERROR(t, code) hpu_test_expect_error(t, code, __LINE__)
#define HPU_EXPECT_CLEAN(t) hpu_test_expect_clean(t, __LINE__)

/* CRC over the header up to the crc field, then the payload. */
void hpu_test_image_seal(uint8_t *img, uint32_t payload_size);
/* Write a valid image at HPU_TEST_IMAGE_ADDR; returns it. */
uint8_t *hpu_test_image_build(struct hpu_test *t, uint32_t payload_size);
void hpu_test_boot_start(struct hpu_test *t, uint64_t addr, uint32_t size);
/* START then run the deferred boot the way the glue's timer would. */
void hpu_test_boot(struct hpu_test *t, uint64_t addr, uint32_t size);
void hpu_test_boot_good(struct hpu_test *t);

/* A fresh device, reset, on fresh zeroed guest memory. */
struct hpu_test *hpu_test_new(void);
/* Prints the TAP line of a finished test and frees it; returns whether it passed. */
bool hpu_tap_report(struct hpu_test *t, unsigned int n, const char *name);

/* A test that needs nothing but a fresh device. */
struct hpu_test_case {
	const char *name;
	void (*run)(struct hpu_test *t);
};

/* Runs each case on a fresh device, numbering from *n; returns how many failed. */
unsigned int hpu_run_cases(const struct hpu_test_case *cases, size_t count, unsigned int *n);
/* The whole TAP run of a suite that is one table of cases; main()'s exit status. */
int hpu_run_suite(const struct hpu_test_case *cases, size_t count);

/*
 * Runs fn(t, &table[i]) on a fresh device for every case of a table and
 * reports each as "prefix: name"; uses i, t, name, n and failed of main().
 */
#define HPU_RUN_TABLE(table, fn, prefix)                                              \
	for (i = 0; i < HPU_ARRAY_SIZE(table); i++) {                                 \
		t = hpu_test_new();                                                   \
		fn(t, &table[i]);                                                     \
		snprintf(name, sizeof(name), "%s: %s", prefix, table[i].name);       \
		failed += !hpu_tap_report(t, ++n, name);                              \
	}

/* ---- the submission path: page tables, command buffers, queues, events ---- */

/* Guest memory layout (offsets from HPU_TEST_MEM_BASE). */
#define Q_RING_OFF(q) (0x10000u + (q) * 0x1000u)
#define Q_RING_ENTRIES 16u
#define EQ_OFF 0x18000u
#define EQ_ENTRIES 16u
#define CB_STRIDE 0x10400u /* > HDM_JOB_CB_MAX */
#define CB_OFF(q, slot) (0x100000u + ((q) * Q_RING_ENTRIES + (slot)) * CB_STRIDE)
#define SYNC_OFF 0x80000u /* a page of sync objects, completions, timestamps */
#define SRC_OFF 0x600000u
#define DST_OFF 0xa00000u
#define BUF_SIZE (3u << 20)

#define BUS(off) (HPU_TEST_MEM_BASE + (off))
#define REG_Q(q, reg) HPU_REG_Q(q, HPU_Q_##reg)

/* Device address space of the test context. */
#define ASID 1u
#define VA_HOST 0x100000000ull  /* + guest memory offset, for SYNC, SRC and DST */
#define VA_HBM 0x200000000ull   /* + offset into HBM_BUF, BUF_SIZE mapped */
#define HBM_BUF (20ull << 30)   /* above 4 GiB */
#define VA_UNMAPPED 0x300000000ull

#define PTE_RW (HPU_PTE_PRESENT | HPU_PTE_WRITE)
#define PTE_HOST_RW (PTE_RW | HPU_PTE_HOST)

/* The driver's tail: a completion word at SYNC_OFF + 8 * q. */
#define COMPLETION_OFF(q) (SYNC_OFF + 0x800u + 8u * (q))
#define COMPLETION_VALUE 0xc0ffee0000000001ull

uint64_t bar4_rd(struct hpu_test *t, uint64_t off);
void bar4_wr(struct hpu_test *t, uint64_t off, uint64_t value);
/* The table an entry points to, made if absent. */
uint64_t pt_table(struct hpu_test *t, uint64_t entry_off);
/* Map one page (2 MiB if flags has HUGE) of asid at va to addr. */
void pt_map_page(struct hpu_test *t, uint32_t asid, uint64_t va, uint64_t addr, uint64_t flags);
void pt_map(struct hpu_test *t, uint32_t asid, uint64_t va, uint64_t addr, uint64_t len,
	    uint64_t flags);
/* Host buffers at VA_HOST + offset in guest memory. */
void pt_map_host(struct hpu_test *t, uint32_t asid, uint32_t off, uint32_t len);

struct hpu_cb {
	uint8_t b[HDM_JOB_CB_MAX + 64];
	uint32_t len;
};

void cb_u32(struct hpu_cb *cb, uint32_t v);
void cb_u64(struct hpu_cb *cb, uint64_t v);
void cb_nop(struct hpu_cb *cb);
void cb_dma(struct hpu_cb *cb, uint64_t dst, uint64_t src, uint64_t size, uint32_t flags);
/* SIGNAL or WAIT. */
void cb_sync(struct hpu_cb *cb, uint32_t opcode, uint64_t addr, uint32_t value);
void cb_timestamp(struct hpu_cb *cb, uint64_t addr);
void cb_completion(struct hpu_cb *cb, uint64_t bus_addr, uint64_t value);
void cb_interrupt(struct hpu_cb *cb, uint32_t vector);

/* The DMA engine a queue's (the engine's number of it) copies name. */
#define DMA_ENGINE(q) (HPU_ENGINE_DMA + (q) % hpu_test_cfg.num_dma)

/* Sync objects, in the SYNC page of the test context. */
#define SYNC_VA(i) (VA_HOST + SYNC_OFF + 4u * (i))
uint32_t sync_value(struct hpu_test *t, unsigned int i);

uint64_t completion(struct hpu_test *t, unsigned int q);
void write_desc(struct hpu_test *t, unsigned int q, const struct hpu_queue_desc *d);
/* Queue cb on q as the driver would: privileged packets allowed from priv_offset. */
void submit(struct hpu_test *t, unsigned int q, const struct hpu_cb *cb, uint32_t priv_offset,
	    uint32_t asid, uint64_t tag);
/* submit() with descriptor flags (HPU_QUEUE_DESC_*). */
void submit_flags(struct hpu_test *t, unsigned int q, const struct hpu_cb *cb,
		  uint32_t priv_offset, uint32_t asid, uint32_t flags, uint64_t tag);
/* A user command buffer followed by the driver's tail: a completion. */
void submit_user(struct hpu_test *t, unsigned int q, struct hpu_cb *cb, uint64_t tag);
void run(struct hpu_test *t);
/* The engine's loop, for a pthread: opaque is the core. */
void *engine_thread(void *opaque);
/* Sleep a millisecond, while the engine's thread works. */
void sleep_tick(void);
/*
 * With the engine on its own thread, submit(t, i) jobs 0..jobs - 1, then
 * wait (20 s at most) until done(t) counts them all; returns done(t).
 */
uint32_t run_threaded(struct hpu_test *t, unsigned int jobs,
		      void (*submit)(struct hpu_test *t, unsigned int i),
		      uint32_t (*done)(struct hpu_test *t));
/* Write reg from inside the engine's n-th DMA, as a vCPU could mid-job; counts down to 0. */
void hook_at(struct hpu_test *t, unsigned int n, uint32_t reg, uint32_t value);
extern unsigned int hpu_hook_countdown;
/*
 * The test context's standard mappings, then an event ring, every queue's ring and
 * the boot: the order of a driver after a warm reset (1.7), whose kept user queues
 * run from READY on.  setup() is both, with no guest error.
 */
void setup_maps(struct hpu_test *t);
void setup_boot(struct hpu_test *t);
void setup(struct hpu_test *t);
void fill_pattern(uint8_t *p, uint32_t len, uint32_t seed);

/* The next event in the ring is this one, logged in logs lines; consume it. */
void expect_event(struct hpu_test *t, uint32_t type, uint32_t queue, uint32_t asid,
		  uint32_t engine, uint64_t tag, uint64_t addr, unsigned int logs, int line);
/* Every queued job of q ended, with no event and no error. */
void expect_done(struct hpu_test *t, unsigned int q, int line);

#define EXPECT_EVENT(t, type, q, asid, engine, tag, addr) \
	expect_event(t, type, q, asid, engine, tag, addr, 1, __LINE__)
#define EXPECT_DONE(t, q) expect_done(t, q, __LINE__)

/* xorshift64*: the suites' deterministic random numbers, from a state each suite seeds. */
uint64_t xorshift64s(uint64_t *state);

/* ---- TPC_LAUNCH ---- */

/* A launch as it lies in memory (the host is little-endian, as the device), room for one more. */
struct launch {
	struct hpu_kernel_params p;
	struct hpu_tensor_desc t[HPU_KERNEL_MAX_TENSORS + 1];
};

struct launch launch_new(uint32_t kernel, uint32_t n);
/* Bytes of l's parameter block: its num_tensors descriptors. */
uint32_t launch_size(const struct launch *l);
/* A row-major descriptor of ndim dims; dims whose bit is set in bcast have stride 0. */
struct hpu_tensor_desc desc(uint64_t va, uint32_t dtype, uint32_t ndim, const uint64_t *shape,
			    uint32_t bcast);
void cb_launch(struct hpu_cb *cb, uint64_t params, uint32_t size);

#endif /* HDM_HARNESS_H */
