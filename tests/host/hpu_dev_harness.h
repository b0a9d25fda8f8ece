/* SPDX-License-Identifier: MIT */
/*
 * Harness of the device-core host tests: a core driven through its
 * registers, a host buffer standing in for guest memory, checks, TAP.
 */
#ifndef HPU_DEV_HARNESS_H
#define HPU_DEV_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hpu_dev_core.h"
#include "hpu_le.h"

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

extern const struct hpu_core_config hpu_test_cfg;

struct hpu_test {
	struct hpu_dev_core *core;
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

#endif /* HPU_DEV_HARNESS_H */
