/* SPDX-License-Identifier: MIT */
/*
 * libhpu's bottom layer: generic helpers every layer may use, with no
 * device (lists, growing arrays, hashing), the thread-local error message,
 * and the process-wide counters the metrics report.  Nothing here is
 * exported: the library builds with -fvisibility=hidden and only HPU_API
 * declarations of <hpu/hpu.h> are visible.
 */
#ifndef HPU_UTIL_H
#define HPU_UTIL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define HPU_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define HPU_PAGE_SIZE 4096ull
/* A WAIT timeout that never passes. */
#define HPU_FOREVER INT64_MAX

static inline uint64_t hpu_round_up(uint64_t v, uint64_t align)
{
	return (v + align - 1) / align * align;
}

/* An unaligned u64 in a byte buffer (a recipe's blob). */
static inline uint64_t hpu_get_u64(const void *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline void hpu_put_u64(void *p, uint64_t v)
{
	memcpy(p, &v, sizeof(v));
}

/* Reads a word the device writes (DMA into pinned host memory). */
static inline uint32_t hpu_device_word(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

/* Intrusive doubly linked list, circular through its head. */
struct hpu_list {
	struct hpu_list *prev, *next;
};

#define hpu_container_of(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))

static inline void hpu_list_init(struct hpu_list *head)
{
	head->prev = head->next = head;
}

static inline bool hpu_list_empty(const struct hpu_list *head)
{
	return head->next == head;
}

static inline void hpu_list_add_tail(struct hpu_list *head, struct hpu_list *node)
{
	node->prev = head->prev;
	node->next = head;
	head->prev->next = node;
	head->prev = node;
}

static inline void hpu_list_del(struct hpu_list *node)
{
	node->prev->next = node->next;
	node->next->prev = node->prev;
}

/* hpu_bytes.c: a growing byte array; a failed growth is remembered (oom) and reported once. */
struct hpu_bytes {
	uint8_t *p;
	size_t len, cap;
	bool oom;
};
/* Appends len bytes of data (zeros if NULL); returns where they start. */
size_t hpu_bytes_put(struct hpu_bytes *b, const void *data, size_t len);
void hpu_bytes_put_u64(struct hpu_bytes *b, uint64_t v);
/* Zeros up to the next multiple of align. */
void hpu_bytes_align(struct hpu_bytes *b, size_t align);
/* Room for need elements of elem bytes in the array *p of *cap (grown by doubling). */
int hpu_array_grow(void **p, unsigned int *cap, unsigned int need, size_t elem);
/* FNV-1a, the hash of cache keys: h (HPU_FNV1A_INIT to start) continued over n bytes. */
#define HPU_FNV1A_INIT 0xcbf29ce484222325ull
static inline uint64_t hpu_fnv1a(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n--)
		h = (h ^ *b++) * 0x100000001b3ull;
	return h;
}

/* hpu_bulk_copy.c: copies of large non-overlapping host buffers, by the routine measured fastest. */
struct hpu_bulk_routine {
	const char *name;
	void (*copy)(void *dst, const void *src, size_t n);
};
extern const struct hpu_bulk_routine hpu_bulk_routines[];
extern const size_t hpu_bulk_routine_count;
/* The routine hpu_bulk_copy() uses: timed on the first call of the process. */
const struct hpu_bulk_routine *hpu_bulk_routine(void);
void hpu_bulk_copy(void *dst, const void *src, size_t n);

/*
 * hpu_counters.c: process-wide counters, bumped where things happen and
 * read by the metrics (top/hpu_metrics.c).
 */
enum hpu_counter {
	HPU_C_COMPILES, HPU_C_COMPILE_NS,
	HPU_C_LAUNCHES, HPU_C_LAUNCH_NS, HPU_C_UPLOADS, HPU_C_UPLOAD_BYTES, HPU_C_INLINE,
	HPU_C_GRAPHS, HPU_C_OPS, HPU_C_CAP_SPLITS,
	HPU_C_HITS, HPU_C_MISSES, HPU_C_EVICTIONS, HPU_C_ENTRIES,
	HPU_C_CAPTURES, HPU_C_CAPTURED_OPS, HPU_C_REPLAYS, HPU_C_REPLAY_NS,
	HPU_C_RECOMPILE_WARNINGS, HPU_C_REPEATS,
	HPU_C_DISK_HITS, HPU_C_DISK_MISSES, HPU_C_DISK_WRITES, HPU_C_DISK_EVICTIONS,
	HPU_C_DISK_BYTES_READ, HPU_C_DISK_BYTES_WRITTEN, HPU_C_DISK_IGNORED,
	HPU_C_DISK_WRITE_FAILURES,
	HPU_COUNTERS
};
void hpu_counter_add(enum hpu_counter c, int64_t v);
uint64_t hpu_now_ns(void);
uint64_t hpu_counter_get(enum hpu_counter c);
/* For a fork()'s child: its counters start from zero. */
void hpu_counters_reset(void);
/* A positive number from the environment, or def. */
unsigned int hpu_env_uint(const char *name, unsigned int def);

/*
 * Around a fork(), each module with process-wide state takes its lock
 * (PREPARE), then releases it in the parent, or in the child resets that
 * state to a new process's and releases it (top/hpu_fork.c).
 */
enum hpu_fork_phase { HPU_FORK_PREPARE, HPU_FORK_PARENT, HPU_FORK_CHILD };

/* hpu_error.c: the thread-local message behind hpu_last_error(). */

/* Records a message and returns -err, so failures read `return hpu_error_set(...)`. */
int hpu_error_set(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The same for a failed system call: appends ": <strerror(errno)>" and returns -errno. */
int hpu_error_errno(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Public entry points end with `return hpu_error_in(__func__, ret);`: on
 * failure it prefixes the message with the entry point's name, so messages
 * name the call the user made rather than the internal helper that failed.
 */
int hpu_error_in(const char *func, int ret);

#endif /* HPU_UTIL_H */
