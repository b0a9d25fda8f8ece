/* SPDX-License-Identifier: MIT */
/*
 * libhpu's recipe layer.  hpu_ir.c is the graph IR ops are recorded into;
 * hpu_compiler.c turns an IR into a recipe (no device: the host unit tests
 * run it); hpu_recipe.c puts a recipe on the device and launches it;
 * hpu_recipe_cache.c finds a graph's recipe (memory, disk, compiler) and
 * keeps recipes per device, hpu_disk_cache.c in files that processes share;
 * hpu_recompile.c warns of recompilations.
 */
#ifndef HPU_RECIPE_H
#define HPU_RECIPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hpu/hpu_graph.h>

#include "../ops/ops.h"

/* Engines a recipe schedules onto, each a hardware queue: DMA, MME, TPC x 2. */
#define HPU_GRAPH_MAX_ENGINES 4
#define HPU_GRAPH_NONE UINT32_MAX

/* A recorded op: operands name IR buffers, not tensors (which may be gone). */
struct hpu_gnode {
	/* t[i] only tells a present operand (hpu_ir_present); l[i].offset is 0 */
	struct hpu_op op;
	uint32_t buf[HPU_OP_TENSORS];  /* buffer of operand i, HPU_GRAPH_NONE if absent */
	int64_t delta[HPU_OP_TENSORS]; /* bytes from the buffer's base to operand i's element 0 */
};

/* A storage the IR uses. */
struct hpu_gbuf {
	struct hpu_storage *st; /* a reference of the IR's; NULL in the host tests */
	uint64_t size;          /* bytes */
	int64_t anchor;         /* persistent: bytes from the storage's start to the buffer's base */
	bool internal;          /* an intermediate, in the recipe's workspace */
};

struct hpu_ir {
	struct hpu_gnode *nodes;
	unsigned int num_nodes, cap_nodes;
	struct hpu_gbuf *bufs;
	unsigned int num_bufs, cap_bufs;
};

extern const struct hpu_tensor hpu_ir_present;

/* Appends op (checked already), taking a reference to each storage it uses. */
int hpu_ir_add(struct hpu_ir *ir, const struct hpu_op *op);
/* Drops the ops and the IR's references. */
void hpu_ir_clear(struct hpu_ir *ir);
void hpu_ir_free(struct hpu_ir *ir);
/*
 * The decision made once recording ends, apart for the tests: a buffer
 * nobody else holds (holders[b] == 0) whose first access writes all of it
 * is internal; the others get the lowest operand address as base.
 */
void hpu_ir_finalize(struct hpu_ir *ir, const unsigned int *holders);
/* hpu_ir_finalize() with the holders the storages' reference counts tell. */
int hpu_ir_seal(struct hpu_ir *ir);
/* Device addresses of the persistent buffers, in binding order (malloc'ed). */
int hpu_ir_bindings(const struct hpu_ir *ir, uint64_t **bindings);
struct hpu_recipe;
/* The bits of ir's numbers at r's parameters, in r's order (malloc'ed): a launch's values. */
int hpu_ir_values(const struct hpu_ir *ir, const struct hpu_recipe *r, uint64_t **values);

/*
 * hpu_recompile.c: called for every compilation of ir (key_hash its key's
 * hash) for the recipe cache of id cache, tells its site (the same ops with
 * other shapes) and warns once when the site has compiled more than
 * HPU_RECOMPILE_WARN shapes, and once when it has compiled keys it had
 * compiled for the same cache more than that many times.
 */
void hpu_recompile_note(const struct hpu_ir *ir, uint64_t key_hash, uint64_t cache);

void hpu_recompile_fork(enum hpu_fork_phase phase);

struct hpu_compile_config {
	unsigned int engines; /* 1..HPU_GRAPH_MAX_ENGINES hardware queues */
	uint32_t fw_version;  /* recipes belong to a firmware: part of the key */
	/* Use one engine for a graph with too little parallelism to overlap (hpu_compiler.c). */
	bool fit_engines;
};

/* The u64 at blob offset `at` gets an address added: the blob's, the workspace's or a binding's. */
#define HPU_SITE_BLOB UINT32_MAX
#define HPU_SITE_WORKSPACE (UINT32_MAX - 1)
struct hpu_site {
	uint32_t at;
	uint32_t base; /* HPU_SITE_BLOB, or the index of a binding (a persistent buffer) */
};

/*
 * A runtime parameter: the u64 at blob offset `at` holds the bits of number
 * src % HPU_OP_SCALARS of IR node src / HPU_OP_SCALARS, written by every
 * launch.  A device kernel reads its numbers from its parameter block, so
 * a recipe serves every value of them: the key has which numbers are
 * parameters, not their values (hpu_ir_key()).
 */
struct hpu_param {
	uint32_t at;
	uint32_t src;
};

/* The workspace starts at this multiple after the blob, and each intermediate in it at one. */
#define HPU_WS_ALIGN 256u

/*
 * A compiled graph: per-engine command buffers, parameter blocks and sync
 * objects in one blob whose addresses are relative (sites), a workspace
 * after it, the persistent buffers to bind and the numbers (params) to
 * write at launch.
 */
struct hpu_recipe {
	atomic_uint refs;
	struct hpu_list lru; /* in the cache */
	uint64_t hash;
	uint8_t *key;
	size_t key_size;
	uint8_t *blob;
	uint32_t blob_size;
	uint32_t sync_off, sync_size; /* the engines' sync objects, zeroed at each launch */
	uint64_t workspace_off, workspace_size; /* device memory: workspace_off + workspace_size */
	struct hpu_site *sites;
	unsigned int num_sites;
	struct hpu_param *params;
	unsigned int num_params;
	unsigned int num_bindings;
	unsigned int num_engines;
	struct {
		uint32_t off, size; /* its command buffer in the blob */
		unsigned int nodes;
	} engine[HPU_GRAPH_MAX_ENGINES];
	unsigned int num_nodes, num_signals, num_waits;
	uint64_t disk_used_ns; /* when its disk file's use was last refreshed (hpu_disk_cache.c) */
	/* hpu_recipe.c's state on the device, freed with the recipe */
	void *inst;
	void (*inst_free)(void *inst);
};

/* hpu_compiler.c */
int hpu_compile(const struct hpu_ir *g, const struct hpu_compile_config *cfg,
		struct hpu_recipe **rp);
/* The cache key: every byte that decides what the recipe computes, and its hash. */
int hpu_ir_key(const struct hpu_ir *g, const struct hpu_compile_config *cfg, uint8_t **key,
		  size_t *size, uint64_t *hash);
/* Whether op's numbers are runtime parameters: a device kernel's, bar a fill with +0 (a DMA). */
bool hpu_op_scalars_at_run(const struct hpu_op *op);
/* A launch's values (hpu_ir_values()) into image, a copy of r's blob. */
void hpu_recipe_write_params(const struct hpu_recipe *r, uint8_t *image, const uint64_t *values);
void hpu_recipe_get(struct hpu_recipe *r);
void hpu_recipe_put(struct hpu_recipe *r);

/*
 * hpu_recipe_cache.c: a device's recipes (dev->recipes), least recently
 * launched first out, in front of its disk cache.
 */
struct hpu_disk_cache;

struct hpu_recipe_cache {
	pthread_mutex_t lock;
	struct hpu_list lru; /* most recent first */
	unsigned int count, capacity;
	uint64_t id; /* unique in the process, for hpu_recompile_note() */
	uint32_t fw_version;
	/* The device runs CALL: 0 not known yet, 1 yes, -1 no; streams on two threads may both probe. */
	atomic_int call;
	struct hpu_disk_cache *disk; /* behind the memory, NULL if off (hpu_disk_cache.c) */
};

/*
 * At open: dev->recipes, for the firmware info names, in front of the disk
 * cache HPU_RECIPE_CACHE_CONFIG asks for.
 */
int hpu_recipe_cache_init(struct hpu_device *dev, const struct hpu_device_info *info);
/* The same from its parts (the host tests): disk may be NULL, and is the cache's in any case. */
int hpu_recipe_cache_create(struct hpu_device *dev, uint32_t fw_version,
			    struct hpu_disk_cache *disk);
/* At close, while the device is open still: the disk cache's queued writes, then each recipe. */
void hpu_recipe_cache_fini(struct hpu_device *dev);
/* The recipe of a sealed IR: memory, then disk, then compiled and cached; a reference. */
int hpu_ir_recipe(struct hpu_device *dev, const struct hpu_ir *ir, struct hpu_recipe **rp);
/* The recipe of key with a reference, or NULL; counts a hit or a miss. */
struct hpu_recipe *hpu_recipe_cache_find(struct hpu_recipe_cache *c, uint64_t hash,
					 const uint8_t *key, size_t size);
/* Keeps r (a reference of the cache's), evicting the least recent beyond the capacity. */
void hpu_recipe_cache_insert(struct hpu_recipe_cache *c, struct hpu_recipe *r);
void hpu_recipe_cache_resize(struct hpu_recipe_cache *c, unsigned int capacity);

/*
 * hpu_disk_cache.c: recipes in files of a directory that processes share
 * (HPU_RECIPE_CACHE_CONFIG), looked up after the memory cache.  A file
 * loads only where its compat record and then its whole key match.
 */

/* What a file must match besides the key: u32s only, so its bytes have no padding. */
struct hpu_disk_compat {
	uint32_t libhpu_version; /* major << 16 | minor << 8 | patch; set by the disk cache */
	uint32_t format;         /* HPU_DISK_FORMAT; set by the disk cache */
	uint32_t abi_version;    /* driver ABI: major << 16 | minor */
	uint32_t fw_version;     /* major << 16 | minor << 8 | patch */
	uint32_t fw_if_version;  /* major << 16 | minor */
	uint32_t hw_revision, pci_revision;
	uint32_t pci_id;         /* vendor << 16 | device */
	uint32_t num_dma, num_mme, num_tpc, num_queues;
	uint32_t capabilities_lo, capabilities_hi;
};

/*
 * A file: the header, then the compat record, the key, the record, the
 * sites, the parameters and the blob.  crc (zlib's crc32) covers everything
 * after the header.
 */
#define HPU_DISK_MAGIC 0x52555048u /* "HPUR" */
#define HPU_DISK_FORMAT 2u
struct hpu_disk_header {
	uint32_t magic, format;
	uint64_t body_size;
	uint32_t crc, compat_size, key_size, reserved;
};

/* The scalars of a struct hpu_recipe. */
struct hpu_disk_record {
	uint32_t blob_size, sync_off, sync_size, num_sites;
	uint64_t workspace_off, workspace_size;
	uint32_t num_bindings, num_engines, num_nodes, num_signals, num_waits, num_params;
	struct {
		uint32_t off, size, nodes, reserved;
	} engine[HPU_GRAPH_MAX_ENGINES];
};

#define HPU_DISK_DIR_MAX 4096
struct hpu_disk_config {
	char dir[HPU_DISK_DIR_MAX];
	bool clear;         /* remove the recipe files there at open */
	uint64_t max_bytes; /* eviction keeps the files within 0.99 x this */
};

/* "<dir>,<true|false>,<max MB>"; -EINVAL with a message if it is not that. */
int hpu_disk_config_parse(const char *s, struct hpu_disk_config *cfg);
/*
 * Creates the directory if need be (and its parents, 0700) and clears it if
 * asked; -EPERM if another user owns it or may write it.
 */
int hpu_disk_cache_open(const struct hpu_disk_config *cfg, const struct hpu_disk_compat *compat,
			struct hpu_disk_cache **dcp);
/* As HPU_RECIPE_CACHE_CONFIG says: NULL if unset, or after one warning if unusable. */
struct hpu_disk_cache *hpu_disk_cache_from_env(const struct hpu_disk_compat *compat);
/* Waits for the queued writes, then frees dc.  NULL is a no-op. */
void hpu_disk_cache_close(struct hpu_disk_cache *dc);
/*
 * The recipe of key from its file, a reference with no key set, in *rp; NULL
 * on a miss (dc NULL too) or a file not loaded (damaged, another version's
 * or graph's: ignored).  -ENOMEM if memory ran out, which says nothing of
 * the file: it stays, and the caller fails rather than compile over it.
 */
int hpu_disk_cache_load(struct hpu_disk_cache *dc, const uint8_t *key, size_t size,
			struct hpu_recipe **rp);
/* Queues r (its key set) for the cache's thread to write.  dc NULL: a no-op. */
void hpu_disk_cache_store(struct hpu_disk_cache *dc, struct hpu_recipe *r);
/*
 * A memory hit on r: its file's use is refreshed (at most once a minute),
 * so that other processes' eviction sees a recipe this one keeps using.
 */
void hpu_disk_cache_touch(struct hpu_disk_cache *dc, struct hpu_recipe *r);
/* Waits until the queued writes and the eviction after them are done. */
void hpu_disk_cache_flush(struct hpu_disk_cache *dc);

/*
 * hpu_recipe.c.  An instance is a recipe's memory and state on a device:
 * a cached recipe makes its own at its first launch; an HPU graph has one
 * of its own, so that its bindings never change.
 */
struct hpu_recipe_inst;
int hpu_recipe_inst_create(struct hpu_device *dev, const struct hpu_recipe *r,
			   struct hpu_recipe_inst **inst);
/* Its memory is reused once the work launched so far has ended. */
void hpu_recipe_inst_destroy(void *inst);
/* Device memory it holds. */
uint64_t hpu_recipe_inst_bytes(const struct hpu_recipe_inst *inst);
/*
 * With s->lock held; inst NULL: the recipe's own; bindings[i] is binding i's
 * device address, values[i] parameter i's bits (hpu_ir_values()).
 */
int hpu_recipe_launch(struct hpu_stream *s, struct hpu_recipe *r, struct hpu_recipe_inst *inst,
		      const uint64_t *bindings, const uint64_t *values);

#endif /* HPU_RECIPE_H */
