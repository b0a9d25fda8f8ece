/* SPDX-License-Identifier: MIT */
/*
 * Host unit test of libhpu's recipe caches, in memory (hpu_recipe_cache.c)
 * and on disk (hpu_disk_cache.c), built from their sources and the
 * compiler's with no device: a fake device holds the recipe caches, and
 * hpu_ir_recipe() looks graphs made by hand up as a flush does (memory,
 * disk, compile).  Every recipe that comes back is compared with the one
 * the compiler makes.  The memory cache's LRU eviction and one entry per
 * key, counted in HPU_C_HITS and its neighbours.  The disk's configuration; a recipe stored and
 * loaded back, by this process and by another; damaged, foreign and other
 * graphs' files ignored, then replaced; every flipped byte and every
 * truncation refused, and offsets checked behind a good checksum; eviction
 * of the least recently used within the bound; four processes on one
 * directory; a failing write that degrades to memory only with one
 * warning.  And what a hostile directory holds: FIFOs, symbolic links,
 * other users' and oversized files are refused without hanging or
 * following them; a directory another user owns or may write is refused;
 * what the cache creates only its user may read.  Prints TAP.
 */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <drm/hpu_kernels.h>

#include "../../userspace/lib/recipe/recipe.h"
#include "test_libhpu_tap.h"

#define GRAPHS 12
#define FW 0x010000u

static char root[] = "/tmp/hpu_disk_cache_XXXXXX";
static struct hpu_ir graphs[GRAPHS];
static struct hpu_recipe *ref[GRAPHS]; /* what the compiler makes of each */
/* What hpu_ir_recipe() compiles with on the fake device (4 queues). */
static const struct hpu_compile_config cfg4 = { .engines = 4, .fw_version = FW,
						.fit_engines = true };
static const struct hpu_disk_compat compat0 = {
	.abi_version = 1 << 16 | 5, .fw_version = FW, .fw_if_version = 1 << 16,
	.hw_revision = 1, .pci_id = 0x1da30001, .num_dma = 1, .num_mme = 1, .num_tpc = 2,
	.num_queues = 4,
};

/*
 * Graph id: a chain of ops unary ops over vectors of 64 + 16 * id floats,
 * an input and an output bound, intermediates between: no two alike.
 */
static void graph_build(unsigned int id, unsigned int ops)
{
	struct hpu_ir *g = &graphs[id];
	unsigned int i, b;

	g->num_bufs = g->cap_bufs = ops + 1;
	g->num_nodes = g->cap_nodes = ops;
	g->bufs = calloc(g->num_bufs, sizeof(*g->bufs));
	g->nodes = calloc(ops, sizeof(*g->nodes));
	for (b = 0; b < g->num_bufs; b++)
		g->bufs[b] = (struct hpu_gbuf){ .size = (64 + 16 * id) * 4,
						.internal = b && b < ops };
	for (i = 0; i < ops; i++) {
		struct hpu_gnode *n = &g->nodes[i];
		int64_t shape = 64 + 16 * id;

		n->op = (struct hpu_op){ .name = "op", .kernel = HPU_KERNEL_UNARY, .num_tensors = 2,
					 .outputs = 1,
					 .args = { i % 2 ? HPU_UNARY_EXP : HPU_UNARY_NEG } };
		for (b = 0; b < HPU_OP_TENSORS; b++)
			n->buf[b] = HPU_GRAPH_NONE;
		n->buf[0] = i + 1;
		n->buf[1] = i;
		for (b = 0; b < 2; b++) {
			n->op.t[b] = &hpu_ir_present;
			hpu_layout_init(&n->op.l[b], HPU_DT_F32, 1, &shape);
		}
	}
}

static bool recipe_same(const struct hpu_recipe *a, const struct hpu_recipe *b)
{
	unsigned int e;

	if (a->blob_size != b->blob_size || memcmp(a->blob, b->blob, a->blob_size) ||
	    a->num_sites != b->num_sites ||
	    memcmp(a->sites, b->sites, a->num_sites * sizeof(*a->sites)) ||
	    a->num_params != b->num_params ||
	    memcmp(a->params, b->params, a->num_params * sizeof(*a->params)) ||
	    a->sync_off != b->sync_off || a->sync_size != b->sync_size ||
	    a->workspace_off != b->workspace_off || a->workspace_size != b->workspace_size ||
	    a->num_bindings != b->num_bindings || a->num_engines != b->num_engines ||
	    a->num_nodes != b->num_nodes || a->num_signals != b->num_signals ||
	    a->num_waits != b->num_waits)
		return false;
	for (e = 0; e < HPU_GRAPH_MAX_ENGINES; e++)
		if (a->engine[e].off != b->engine[e].off || a->engine[e].size != b->engine[e].size ||
		    a->engine[e].nodes != b->engine[e].nodes)
			return false;
	return true;
}

static void path_of(char *path, size_t len, const char *dir, const char *name)
{
	snprintf(path, len, "%s/%s/%s", root, dir, name);
}

/* A device with just what hpu_ir_recipe() uses, its disk cache in root/dir (dir NULL: none). */
static struct hpu_device *dev_open(const char *dir, uint64_t max_bytes, bool clear,
				   const struct hpu_disk_compat *compat)
{
	struct hpu_device *dev = calloc(1, sizeof(*dev));
	struct hpu_disk_config cfg = { .clear = clear, .max_bytes = max_bytes };
	struct hpu_disk_cache *disk = NULL;

	dev->num_queues = 4;
	if (dir) {
		path_of(cfg.dir, sizeof(cfg.dir), dir, "");
		EXPECT(hpu_disk_cache_open(&cfg, compat ? compat : &compat0, &disk) == 0);
	}
	EXPECT(hpu_recipe_cache_create(dev, FW, disk) == 0);
	return dev;
}

static void dev_close(struct hpu_device *dev)
{
	hpu_recipe_cache_fini(dev);
	free(dev);
}

/* Looks graph id up as a flush does: true if its recipe came back exactly. */
static bool lookup(struct hpu_device *dev, unsigned int id)
{
	struct hpu_recipe *r = NULL;
	bool same;

	if (hpu_ir_recipe(dev, &graphs[id], &r))
		return false;
	same = recipe_same(r, ref[id]);
	hpu_recipe_put(r);
	return same;
}

/* A counter of the disk cache: DISK(HITS) is HPU_C_DISK_HITS's count. */
#define DISK(name) hpu_counter_get(HPU_C_DISK_##name)

static uint64_t compiles(void)
{
	return hpu_counter_get(HPU_C_COMPILES);
}

/* The recipe files of root/dir (names in readdir order), and leftover temporaries. */
struct listing {
	unsigned int count, temps;
	uint64_t total;
	char names[64][32];
	uint64_t sizes[64];
};

static struct listing list(const char *dir)
{
	struct listing l = { 0 };
	char path[512];
	struct dirent *de;
	struct stat st;
	DIR *d;

	path_of(path, sizeof(path), dir, "");
	d = opendir(path);
	while (d && (de = readdir(d))) {
		size_t len = strlen(de->d_name);

		if (strstr(de->d_name, ".tmp."))
			l.temps++;
		if (len != 23 || strcmp(de->d_name + 16, ".recipe") || l.count == 64)
			continue;
		path_of(path, sizeof(path), dir, de->d_name);
		stat(path, &st);
		snprintf(l.names[l.count], sizeof(l.names[0]), "%s", de->d_name);
		l.sizes[l.count++] = (uint64_t)st.st_size;
		l.total += (uint64_t)st.st_size;
	}
	if (d)
		closedir(d);
	return l;
}

static bool listed(const struct listing *l, const char *name)
{
	unsigned int i;

	for (i = 0; i < l->count; i++)
		if (!strcmp(l->names[i], name))
			return true;
	return false;
}

/* Looks graph id up, waits for its write, and returns its file's name (into name). */
static void store(struct hpu_device *dev, const char *dir, unsigned int id, char *name)
{
	struct listing before = list(dir), after;
	unsigned int i;

	EXPECT(lookup(dev, id));
	hpu_disk_cache_flush(dev->recipes->disk);
	after = list(dir);
	name[0] = 0;
	for (i = 0; i < after.count; i++)
		if (!listed(&before, after.names[i]))
			strcpy(name, after.names[i]);
	EXPECT(name[0]);
}

static size_t file_read(const char *dir, const char *name, uint8_t *buf, size_t cap)
{
	char path[512];
	size_t n = 0;
	FILE *f;

	path_of(path, sizeof(path), dir, name);
	f = fopen(path, "rb");
	if (f) {
		n = fread(buf, 1, cap, f);
		fclose(f);
	}
	return n;
}

/* In place, not truncated first: ext4 would write a file truncated to 0 back at its close. */
static void file_write(const char *dir, const char *name, const void *buf, size_t len)
{
	char path[512];
	int fd;

	path_of(path, sizeof(path), dir, name);
	fd = open(path, O_WRONLY | O_CREAT, 0644);
	EXPECT(fd >= 0 && pwrite(fd, buf, len, 0) == (ssize_t)len && !ftruncate(fd, (off_t)len));
	if (fd >= 0)
		close(fd);
}

/* stderr into a file from here to capture_end(), which returns its lines. */
static int capture_fd = -1, saved_stderr = -1;

static void capture_begin(void)
{
	char path[] = "/tmp/hpu_disk_stderr_XXXXXX";

	fflush(stderr);
	capture_fd = mkstemp(path);
	unlink(path);
	saved_stderr = dup(2);
	dup2(capture_fd, 2);
}

static unsigned int capture_end(char *buf, size_t cap)
{
	unsigned int lines = 0;
	ssize_t n;
	char *p;

	fflush(stderr);
	dup2(saved_stderr, 2);
	close(saved_stderr);
	n = pread(capture_fd, buf, cap - 1, 0);
	close(capture_fd);
	buf[n > 0 ? n : 0] = 0;
	for (p = buf; (p = strchr(p, '\n')); p++)
		lines++;
	return lines;
}

static struct hpu_recipe *fake_recipe(uint8_t id)
{
	struct hpu_recipe *r = calloc(1, sizeof(*r));

	atomic_init(&r->refs, 1);
	r->key = malloc(1);
	r->key[0] = id;
	r->key_size = 1;
	r->hash = id % 2; /* collisions on purpose: the key decides */
	return r;
}

static struct hpu_recipe *find(struct hpu_recipe_cache *c, uint8_t id)
{
	struct hpu_recipe *r = hpu_recipe_cache_find(c, id % 2, &id, 1);

	if (r)
		hpu_recipe_put(r);
	return r;
}

static void test_memory_evicts_the_least_recent(void)
{
	struct hpu_device *dev = dev_open(NULL, 0, false, NULL);
	struct hpu_recipe_cache *c = dev->recipes;
	struct hpu_recipe *r[4];
	uint64_t hits = hpu_counter_get(HPU_C_HITS), misses = hpu_counter_get(HPU_C_MISSES);
	uint64_t evictions = hpu_counter_get(HPU_C_EVICTIONS);
	unsigned int i;

	hpu_recipe_cache_resize(c, 2);
	for (i = 1; i <= 3; i++)
		r[i] = fake_recipe((uint8_t)i);
	hpu_recipe_cache_insert(c, r[1]);
	hpu_recipe_cache_insert(c, r[2]);
	EXPECT(find(c, 1) == r[1]); /* 1 is now the most recent */
	hpu_recipe_cache_insert(c, r[3]);  /* evicts 2 */
	EXPECT(find(c, 2) == NULL);
	EXPECT(find(c, 3) == r[3]);
	EXPECT(find(c, 1) == r[1]);
	EXPECT(c->count == 2);
	EXPECT(hpu_counter_get(HPU_C_HITS) - hits == 3);
	EXPECT(hpu_counter_get(HPU_C_MISSES) - misses == 1);
	EXPECT(hpu_counter_get(HPU_C_EVICTIONS) - evictions == 1);
	EXPECT(hpu_counter_get(HPU_C_ENTRIES) == 2);
	for (i = 1; i <= 3; i++)
		hpu_recipe_put(r[i]);
	dev_close(dev);
	EXPECT(hpu_counter_get(HPU_C_ENTRIES) == 0);
}

/* Threads that missed on one key insert twice: one entry, the first; the other stays its user's. */
static void test_memory_keeps_one_entry_per_key(void)
{
	struct hpu_device *dev = dev_open(NULL, 0, false, NULL);
	struct hpu_recipe_cache *c = dev->recipes;
	struct hpu_recipe *first = fake_recipe(7), *second = fake_recipe(7);
	uint64_t entries = hpu_counter_get(HPU_C_ENTRIES);

	hpu_recipe_cache_insert(c, first);
	hpu_recipe_cache_insert(c, second);
	EXPECT(c->count == 1);
	EXPECT(hpu_counter_get(HPU_C_ENTRIES) - entries == 1);
	EXPECT(find(c, 7) == first);
	EXPECT(atomic_load(&second->refs) == 1);
	hpu_recipe_put(second);
	hpu_recipe_put(first);
	dev_close(dev);
	EXPECT(hpu_counter_get(HPU_C_ENTRIES) == entries);
}

static void test_config(void)
{
	struct hpu_disk_config cfg;
	struct hpu_disk_cache *dc;
	const char *bad[] = { "", "dir", "dir,true", ",true,1", "dir,yes,1", "dir,true,0",
			      "dir,true,-1", "dir,true,12x", "dir,true, 1", "dir,false,",
			      "dir,true,99999999999999999999", "dir,true,17592186044416" };
	char out[1024], path[512];
	unsigned int i;
	struct stat st;

	EXPECT(hpu_disk_config_parse("/a/b,true,64", &cfg) == 0);
	EXPECT(!strcmp(cfg.dir, "/a/b") && cfg.clear && cfg.max_bytes == 64ull << 20);
	/* The directory may hold commas: the last two fields are the others. */
	EXPECT(hpu_disk_config_parse("/x,y,FALSE,1", &cfg) == 0);
	EXPECT(!strcmp(cfg.dir, "/x,y") && !cfg.clear && cfg.max_bytes == 1ull << 20);
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		if (hpu_disk_config_parse(bad[i], &cfg) != -EINVAL) {
			printf("#   \"%s\" accepted\n", bad[i]);
			test_failed = true;
		}
	}
	EXPECT_PREFIX(hpu_last_error(), "HPU_RECIPE_CACHE_CONFIG=\"dir,true,17592186044416\": ");

	/* Unset: no cache, nothing said.  Bad: one warning, no cache. */
	unsetenv("HPU_RECIPE_CACHE_CONFIG");
	capture_begin();
	EXPECT(hpu_disk_cache_from_env(&compat0) == NULL);
	EXPECT(capture_end(out, sizeof(out)) == 0);
	setenv("HPU_RECIPE_CACHE_CONFIG", "/tmp,maybe,64", 1);
	capture_begin();
	EXPECT(hpu_disk_cache_from_env(&compat0) == NULL);
	EXPECT(capture_end(out, sizeof(out)) == 1);
	EXPECT(strstr(out, "libhpu: warning: HPU_RECIPE_CACHE_CONFIG=\"/tmp,maybe,64\"") &&
	       strstr(out, "the recipe disk cache is off"));
	/* A directory that cannot be: under a regular file. */
	file_write("", "plain", "x", 1);
	snprintf(path, sizeof(path), "%s/plain/sub,false,1", root);
	setenv("HPU_RECIPE_CACHE_CONFIG", path, 1);
	capture_begin();
	EXPECT(hpu_disk_cache_from_env(&compat0) == NULL);
	EXPECT(capture_end(out, sizeof(out)) == 1);
	EXPECT(strstr(out, "cannot create") && strstr(out, "Not a directory"));
	/* A good one makes the directory and its parents. */
	snprintf(path, sizeof(path), "%s/made/by/env,false,1", root);
	setenv("HPU_RECIPE_CACHE_CONFIG", path, 1);
	dc = hpu_disk_cache_from_env(&compat0);
	EXPECT(dc != NULL);
	hpu_disk_cache_close(dc);
	snprintf(path, sizeof(path), "%s/made/by/env", root);
	EXPECT(stat(path, &st) == 0 && S_ISDIR(st.st_mode));
	unsetenv("HPU_RECIPE_CACHE_CONFIG");
}

static void test_clear(void)
{
	struct hpu_device *dev = dev_open("clear/a/b", 1 << 20, false, NULL);
	char name[32], path[512], target[512];
	struct listing l;

	store(dev, "clear/a/b", 0, name);
	store(dev, "clear/a/b", 1, name);
	dev_close(dev);
	file_write("clear/a/b", "notes.txt", "keep", 4);
	EXPECT(list("clear/a/b").count == 2);
	/* A link named like a recipe, to one outside: the link may go, never what it points to. */
	file_write("clear", name, "keep", 4);
	path_of(target, sizeof(target), "clear", name);
	path_of(path, sizeof(path), "clear/a/b", "0123456789abcdef.recipe");
	EXPECT(symlink(target, path) == 0);
	dev = dev_open("clear/a/b", 1 << 20, true, NULL);
	l = list("clear/a/b");
	EXPECT(l.count <= 1 && l.temps == 0);
	EXPECT(access(target, F_OK) == 0);
	/* Only recipe files go. */
	path_of(path, sizeof(path), "clear/a/b", "notes.txt");
	EXPECT(access(path, F_OK) == 0);
	dev_close(dev);
}

static void test_store_and_load(void)
{
	uint64_t c0 = compiles(), w0 = DISK(WRITES), h0 = DISK(HITS), bw = DISK(BYTES_WRITTEN);
	uint64_t br = DISK(BYTES_READ), m0 = DISK(MISSES);
	struct hpu_device *dev = dev_open("store", 1 << 20, false, NULL);
	struct listing l;

	EXPECT(lookup(dev, 0));
	dev_close(dev); /* waits for the write */
	EXPECT(compiles() - c0 == 1 && DISK(WRITES) - w0 == 1 && DISK(MISSES) - m0 == 1);
	l = list("store");
	EXPECT(l.count == 1 && l.temps == 0);
	EXPECT(strspn(l.names[0], "0123456789abcdef") == 16);
	EXPECT(DISK(BYTES_WRITTEN) - bw == l.total);

	/* A new device loads it: no compilation, the same recipe; then memory has it. */
	dev = dev_open("store", 1 << 20, false, NULL);
	EXPECT(lookup(dev, 0));
	EXPECT(lookup(dev, 0));
	dev_close(dev);
	EXPECT(compiles() - c0 == 1);
	EXPECT(DISK(HITS) - h0 == 1 && DISK(BYTES_READ) - br == l.total);
	EXPECT(DISK(WRITES) - w0 == 1);
}

/* A child's report: bits of what went wrong. */
enum { BAD_COMPILED = 1, BAD_RECIPE = 2, BAD_HITS = 4, BAD_WRITES = 8 };

static int child_status(pid_t pid)
{
	int status = -1;

	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Another process with the same directory loads what this one wrote, and the other way. */
static void test_second_process(void)
{
	struct hpu_device *dev = dev_open("second", 1 << 20, false, NULL);
	uint64_t c0, h0;
	unsigned int i;
	pid_t pid;

	for (i = 0; i < 3; i++)
		EXPECT(lookup(dev, i));
	dev_close(dev);
	fflush(stdout);
	pid = fork();
	if (!pid) {
		int bad = 0;

		c0 = compiles();
		h0 = DISK(HITS);
		dev = dev_open("second", 1 << 20, false, NULL);
		for (i = 0; i < 3; i++)
			bad |= lookup(dev, i) ? 0 : BAD_RECIPE;
		bad |= compiles() != c0 ? BAD_COMPILED : 0;
		bad |= DISK(HITS) - h0 != 3 ? BAD_HITS : 0;
		bad |= lookup(dev, 3) ? 0 : BAD_RECIPE; /* compiled here */
		dev_close(dev);
		bad |= compiles() != c0 + 1 ? BAD_COMPILED : 0;
		_exit(bad);
	}
	EXPECT(child_status(pid) == 0);
	c0 = compiles();
	dev = dev_open("second", 1 << 20, false, NULL);
	EXPECT(lookup(dev, 3));
	dev_close(dev);
	EXPECT(compiles() == c0);
}

/* The file of graph 0 written by a cache of compat, read into buf. */
static size_t file_of(const char *dir, const struct hpu_disk_compat *compat, unsigned int id,
		      uint8_t *buf, size_t cap)
{
	struct hpu_device *dev = dev_open(dir, 1 << 20, true, compat);
	char name[32];

	store(dev, dir, id, name);
	dev_close(dev);
	return file_read(dir, name, buf, cap);
}

static void test_damaged_files_are_replaced(void)
{
	static uint8_t good[1 << 16], bad[1 << 16], back[1 << 16];
	struct hpu_disk_compat other = compat0;
	struct hpu_device *dev;
	size_t size, bad_size, i;
	char name[32];
	unsigned int k;
	const char *kinds[] = { "a flipped body byte", "a flipped header byte", "truncated",
				"half", "empty", "another format", "another device's",
				"another graph's", "garbage" };

	dev = dev_open("damaged", 1 << 20, true, NULL);
	store(dev, "damaged", 0, name);
	dev_close(dev);
	size = file_read("damaged", name, good, sizeof(good));
	EXPECT(size > sizeof(struct hpu_disk_header));
	for (k = 0; k < ARRAY_SIZE(kinds); k++) {
		uint64_t c0, i0, h0;

		memcpy(bad, good, size);
		bad_size = size;
		switch (k) {
		case 0: bad[size / 2] ^= 0x10; break;
		case 1: bad[offsetof(struct hpu_disk_header, body_size)] ^= 1; break;
		case 2: bad_size = size - 1; break;
		case 3: bad_size = size / 2; break;
		case 4: bad_size = 0; break;
		case 5: bad[offsetof(struct hpu_disk_header, format)]++; break;
		case 6:
			other.hw_revision = 2;
			bad_size = file_of("foreign", &other, 0, bad, sizeof(bad));
			break;
		case 7: bad_size = file_of("foreign", NULL, 1, bad, sizeof(bad)); break;
		case 8:
			for (i = 0; i < 4096; i++)
				bad[i] = (uint8_t)(i * 37 + 11);
			bad_size = 4096;
			break;
		}
		file_write("damaged", name, bad, bad_size);
		c0 = compiles();
		i0 = DISK(IGNORED);
		h0 = DISK(HITS);
		dev = dev_open("damaged", 1 << 20, false, NULL);
		EXPECT(lookup(dev, 0));
		dev_close(dev);
		if (compiles() - c0 != 1 || DISK(IGNORED) - i0 != 1 || DISK(HITS) != h0) {
			printf("#   %s: %lu compiles, %lu ignored\n", kinds[k],
			       (unsigned long)(compiles() - c0),
			       (unsigned long)(DISK(IGNORED) - i0));
			test_failed = true;
		}
		/* Replaced: the same bytes as the first write. */
		EXPECT(file_read("damaged", name, back, sizeof(back)) == size &&
		       !memcmp(back, good, size));
	}
}

/* Graph 0's key, as hpu_ir_recipe() makes it on the fake device. */
static uint8_t *key0(size_t *size)
{
	uint8_t *key = NULL;
	uint64_t hash;

	EXPECT(hpu_ir_key(&graphs[0], &cfg4, &key, size, &hash) == 0);
	return key;
}

/* Writes buf as name in dir, and whether the cache refuses it (counted as ignored). */
static bool refused(struct hpu_device *dev, const char *dir, const char *name,
		    const uint8_t *buf, size_t len, const uint8_t *key, size_t key_size)
{
	uint64_t i0 = DISK(IGNORED);
	struct hpu_recipe *r;

	file_write(dir, name, buf, len);
	EXPECT(hpu_disk_cache_load(dev->recipes->disk, key, key_size, &r) == 0);
	if (r)
		hpu_recipe_put(r);
	return !r && DISK(IGNORED) == i0 + 1;
}

static void test_every_flip_and_truncation_is_refused(void)
{
	static uint8_t good[1 << 16], buf[1 << 16];
	struct hpu_device *dev = dev_open("fuzz", 1 << 20, true, NULL);
	struct hpu_recipe *r;
	size_t size, key_size, i;
	unsigned int missed = 0;
	uint8_t *key = key0(&key_size);
	char name[32];

	store(dev, "fuzz", 0, name);
	size = file_read("fuzz", name, good, sizeof(good));
	for (i = 0; i < size; i++) {
		memcpy(buf, good, size);
		buf[i] ^= (uint8_t)(1u << (i % 8));
		missed += !refused(dev, "fuzz", name, buf, size, key, key_size);
	}
	for (i = 0; i < size; i++)
		missed += !refused(dev, "fuzz", name, good, i, key, key_size);
	if (missed) {
		printf("#   %u of %zu damaged files loaded\n", missed, 2 * size);
		test_failed = true;
	}
	file_write("fuzz", name, good, size);
	EXPECT(hpu_disk_cache_load(dev->recipes->disk, key, key_size, &r) == 0);
	EXPECT(r && recipe_same(r, ref[0]));
	if (r)
		hpu_recipe_put(r);
	free(key);
	dev_close(dev);
}

/* A recipe file to damage: its name, its good bytes, and the key it loads for. */
struct damaged {
	const char *dir, *name;
	const uint8_t *good, *key;
	size_t size, key_size;
};

/* Where d's record is, and its first parameter (after the sites the good record counts). */
static void damaged_at(const struct damaged *d, size_t *rec_at, size_t *param_at)
{
	struct hpu_disk_record rec;

	*rec_at = sizeof(struct hpu_disk_header) + sizeof(struct hpu_disk_compat) + d->key_size;
	memcpy(&rec, d->good + *rec_at, sizeof(rec));
	*param_at = *rec_at + sizeof(rec) + rec.num_sites * sizeof(struct hpu_site);
}

/*
 * Whether d's file, rec, site and param its record, first site and first
 * parameter and its checksum good, is refused.
 */
static bool damaged_refused(struct hpu_device *dev, const struct damaged *d,
			    const struct hpu_disk_record *rec, const struct hpu_site *site,
			    const struct hpu_param *param)
{
	static uint8_t buf[1 << 16];
	struct hpu_disk_header h;
	size_t at, param_at;

	damaged_at(d, &at, &param_at);
	memcpy(buf, d->good, d->size);
	memcpy(buf + at, rec, sizeof(*rec));
	memcpy(buf + at + sizeof(*rec), site, sizeof(*site));
	memcpy(buf + param_at, param, sizeof(*param));
	memcpy(&h, buf, sizeof(h));
	h.crc = (uint32_t)crc32_z(0, buf + sizeof(h), d->size - sizeof(h));
	memcpy(buf, &h, sizeof(h));
	return refused(dev, d->dir, d->name, buf, d->size, d->key, d->key_size);
}

/* d's record, first site and first parameter as they are. */
static void damaged_parts(const struct damaged *d, struct hpu_disk_record *rec,
			  struct hpu_site *site, struct hpu_param *param)
{
	size_t at, param_at;

	damaged_at(d, &at, &param_at);
	memcpy(rec, d->good + at, sizeof(*rec));
	memcpy(site, d->good + at + sizeof(*rec), sizeof(*site));
	memcpy(param, d->good + param_at, sizeof(*param));
}

/* Record fields damaged behind a checksum made good again: each is refused. */
static void test_offsets_are_checked(void)
{
	static uint8_t good[1 << 16];
	struct hpu_device *dev = dev_open("offsets", 1 << 20, true, NULL);
	struct hpu_compile_config cfg2 = cfg4;
	struct hpu_disk_record rec;
	struct hpu_site site;
	struct hpu_param param;
	struct damaged d = { .dir = "offsets", .good = good };
	unsigned int k;
	uint8_t *key;
	char name[32];
	uint64_t hash;

	store(dev, "offsets", 0, name);
	d.name = name;
	d.size = file_read("offsets", name, good, sizeof(good));
	d.key = key = key0(&d.key_size);
	for (k = 0; k < 28; k++) {
		bool refuse;

		damaged_parts(&d, &rec, &site, &param);
		switch (k) {
		case 0: break; /* intact: loads */
		case 1: rec.num_engines = 0; break;
		case 2: rec.num_engines = HPU_GRAPH_MAX_ENGINES + 1; break;
		case 3: rec.engine[2].off = rec.blob_size; break;
		case 4: rec.engine[3].size = rec.blob_size; break;
		case 5: rec.engine[1].nodes++; break;
		case 6: rec.sync_off = rec.blob_size - 8; break;
		case 7: rec.workspace_off = rec.blob_size - 8; break;
		case 8: rec.workspace_size = UINT64_MAX; break;
		case 9: rec.num_bindings = 1u << 30; break;
		case 10: site.at = rec.blob_size - 4; break;
		case 11: site.base = rec.num_bindings; break;
		case 12: rec.num_sites++; break;
		case 13: rec.blob_size -= 8; break;
		/* More bindings than the graph has persistent buffers: launches read past them. */
		case 14: rec.num_bindings = (uint32_t)(d.key_size / sizeof(uint64_t)); break;
		/* A workspace larger than the intermediates, or not where the compiler puts it. */
		case 15: rec.workspace_size = 1ull << 40; break;
		case 16: rec.workspace_off += HPU_WS_ALIGN; break;
		/* A command buffer that ends inside a packet, which a launch may walk past. */
		case 17: rec.engine[0].size -= 4; break;
		/* A site patching a packet's header. */
		case 18: site.at = rec.engine[0].off; break;
		/* Parameters a launch would write outside the blob or over what is no number. */
		case 19: param.at = rec.blob_size - 4; break;
		case 20: param.at = UINT32_MAX; break;
		case 21: param.at = rec.engine[0].off + rec.engine[0].size - 4; break;
		case 22: param.at = rec.sync_off; break;
		/* A number of an op the graph does not have. */
		case 23: param.src = 3 * HPU_OP_SCALARS; break;
		case 24: rec.num_params++; break;
		case 25: rec.num_params = 0; break;
		/* A number written over a tensor's address, or over half of it. */
		case 26: param.at = site.at; break;
		case 27: param.at = site.at + 4; break;
		}
		refuse = damaged_refused(dev, &d, &rec, &site, &param);
		if (refuse != (k != 0)) {
			printf("#   case %u %s\n", k, refuse ? "refused" : "loaded");
			test_failed = true;
		}
	}
	free(key);
	dev_close(dev);

	/* More engines than the device has queues: two would share one and wait on each other. */
	dev = dev_open("offsets2", 1 << 20, true, NULL);
	dev->num_queues = cfg2.engines = 2;
	store(dev, "offsets2", 0, name);
	EXPECT(hpu_ir_key(&graphs[0], &cfg2, &key, &d.key_size, &hash) == 0);
	d = (struct damaged){ .dir = "offsets2", .name = name, .good = good, .key = key,
			      .key_size = d.key_size };
	d.size = file_read("offsets2", name, good, sizeof(good));
	damaged_parts(&d, &rec, &site, &param);
	EXPECT(!damaged_refused(dev, &d, &rec, &site, &param));
	rec.num_engines = 3;
	EXPECT(damaged_refused(dev, &d, &rec, &site, &param));
	free(key);
	dev_close(dev);
}

static void set_age(const char *dir, const char *name, time_t seconds_ago)
{
	struct timespec t[2];
	char path[512];

	clock_gettime(CLOCK_REALTIME, &t[0]);
	t[0].tv_sec -= seconds_ago;
	t[1] = t[0];
	path_of(path, sizeof(path), dir, name);
	EXPECT(utimensat(AT_FDCWD, path, t, 0) == 0);
}

static struct timespec mtime_of(const char *dir, const char *name)
{
	struct stat st = { 0 };
	char path[512];

	path_of(path, sizeof(path), dir, name);
	stat(path, &st);
	return st.st_mtim;
}

/*
 * Five files of one size where four fit: writing the fifth removes the
 * least recently used - not the oldest written, which a load refreshed.
 */
static void test_eviction_by_use(void)
{
	char names[6][32], out[1024], want[256];
	struct hpu_device *dev;
	uint64_t size, max, bound, e0 = DISK(EVICTIONS);
	struct listing l;
	unsigned int i;

	/* Graphs 6..11 have as many ops: files of one size. */
	dev = dev_open("evict", 1 << 20, true, NULL);
	for (i = 0; i < 4; i++)
		store(dev, "evict", 6 + i, names[i]);
	dev_close(dev);
	l = list("evict");
	size = l.sizes[0];
	for (i = 0; i < l.count; i++)
		EXPECT(l.sizes[i] == size);
	/* Room for 4.5 files. */
	max = (size * 9 / 2) * 100 / 99 + 1;
	bound = max - max / 100;
	EXPECT(4 * size <= bound && bound < 5 * size);
	for (i = 0; i < 4; i++)
		set_age("evict", names[i], 100 - i); /* 0 the oldest */

	setenv("HPU_RECIPE_CACHE_LOG", "1", 1);
	dev = dev_open("evict", max, false, NULL);
	unsetenv("HPU_RECIPE_CACHE_LOG");
	EXPECT(lookup(dev, 6)); /* a load: 0 becomes the most recent */
	EXPECT(mtime_of("evict", names[0]).tv_sec > mtime_of("evict", names[3]).tv_sec);
	EXPECT(DISK(EVICTIONS) == e0);
	capture_begin();
	store(dev, "evict", 10, names[4]);
	EXPECT(capture_end(out, sizeof(out)) == 1);
	snprintf(want, sizeof(want),
		 "libhpu: recipe cache: Removed %.16s successfully. Disk cache size after "
		 "removal: %llu bytes\n", names[1], (unsigned long long)(4 * size));
	EXPECT_STR(out, want);
	l = list("evict");
	EXPECT(l.count == 4 && l.total <= bound);
	EXPECT(!listed(&l, names[1]) && listed(&l, names[0]) && listed(&l, names[4]));
	EXPECT(DISK(EVICTIONS) - e0 == 1);
	/* Then 2, the least recently used left. */
	capture_begin();
	store(dev, "evict", 11, names[5]);
	dev_close(dev);
	EXPECT(capture_end(out, sizeof(out)) == 1 && strstr(out, "Removed ") &&
	       !strncmp(strstr(out, "Removed ") + 8, names[2], 16));
	l = list("evict");
	EXPECT(l.count == 4 && !listed(&l, names[2]));
	EXPECT(listed(&l, names[0]) && listed(&l, names[3]) && listed(&l, names[5]));
	EXPECT(DISK(EVICTIONS) - e0 == 2);
}

/* What a hammering process saw. */
struct hammer_report {
	uint64_t lookups, wrong, hits, ignored, writes, evictions;
};

static void hammer(unsigned int p, uint64_t max, int fd)
{
	struct hammer_report rep = { 0 };
	struct hpu_device *dev = dev_open("hammer", max, false, NULL);
	uint64_t h0 = DISK(HITS), i0 = DISK(IGNORED), w0 = DISK(WRITES);
	uint64_t e0 = DISK(EVICTIONS);
	unsigned int i, seed = p * 7919 + 1;

	/* Every lookup past memory: a load or a compile and a write. */
	hpu_recipe_cache_resize(dev->recipes, 1);
	for (i = 0; i < 240; i++) {
		seed = seed * 1103515245 + 12345;
		rep.wrong += !lookup(dev, (seed >> 16) % GRAPHS);
		rep.lookups++;
		if (i % 8 == 7)
			hpu_disk_cache_flush(dev->recipes->disk);
	}
	dev_close(dev);
	rep.hits = DISK(HITS) - h0;
	rep.ignored = DISK(IGNORED) - i0;
	rep.writes = DISK(WRITES) - w0;
	rep.evictions = DISK(EVICTIONS) - e0;
	if (write(fd, &rep, sizeof(rep)) != sizeof(rep))
		_exit(2);
	_exit(0);
}

/*
 * Four processes look up twelve graphs at random in one directory that
 * holds about four: they write, load and evict over each other.  Every
 * recipe loaded is the compiler's, and no file is ever seen half written.
 */
static void test_four_processes(void)
{
	struct hammer_report sum = { 0 }, rep;
	uint64_t max = 0, bound;
	struct listing l;
	unsigned int p, i;
	pid_t pids[4];
	int fds[2];

	for (i = 0; i < GRAPHS; i++)
		max += 32 + ref[i]->blob_size + ref[i]->num_sites * 8 + 600;
	max = max / 3;
	bound = max - max / 100;
	EXPECT(pipe(fds) == 0);
	fflush(stdout);
	for (p = 0; p < 4; p++) {
		pids[p] = fork();
		if (!pids[p])
			hammer(p, max, fds[1]);
	}
	close(fds[1]);
	for (p = 0; p < 4; p++) {
		EXPECT(child_status(pids[p]) == 0);
		if (read(fds[0], &rep, sizeof(rep)) != sizeof(rep)) {
			test_failed = true;
			continue;
		}
		sum.lookups += rep.lookups;
		sum.wrong += rep.wrong;
		sum.hits += rep.hits;
		sum.ignored += rep.ignored;
		sum.writes += rep.writes;
		sum.evictions += rep.evictions;
	}
	close(fds[0]);
	printf("#   %lu lookups: %lu loads, %lu writes, %lu evictions, %lu wrong, %lu ignored\n",
	       (unsigned long)sum.lookups, (unsigned long)sum.hits, (unsigned long)sum.writes,
	       (unsigned long)sum.evictions, (unsigned long)sum.wrong,
	       (unsigned long)sum.ignored);
	EXPECT(sum.lookups == 4 * 240 && sum.wrong == 0 && sum.ignored == 0);
	EXPECT(sum.hits > 0 && sum.writes > 0 && sum.evictions > 0);
	l = list("hammer");
	EXPECT(l.total <= bound && l.temps == 0);
}

/* Writes fail (a file size limit): one warning, then memory only. */
static void test_write_failure_degrades(void)
{
	char out[2048], path[512];
	struct hpu_device *dev;
	uint64_t c0, w0, f0;
	struct listing l;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (!pid) {
		struct rlimit lim = { .rlim_cur = 512, .rlim_max = 512 };
		int bad = 0;

		signal(SIGXFSZ, SIG_IGN);
		setrlimit(RLIMIT_FSIZE, &lim);
		c0 = compiles();
		w0 = DISK(WRITES);
		f0 = DISK(WRITE_FAILURES);
		capture_begin();
		dev = dev_open("full", 1 << 20, true, NULL);
		bad |= lookup(dev, 0) && lookup(dev, 1) ? 0 : BAD_RECIPE;
		hpu_disk_cache_flush(dev->recipes->disk);
		bad |= lookup(dev, 2) && lookup(dev, 0) ? 0 : BAD_RECIPE;
		dev_close(dev);
		bad |= capture_end(out, sizeof(out)) == 1 ? 0 : BAD_HITS;
		bad |= strstr(out, "File too large") && strstr(out, "in memory only") ? 0 : BAD_HITS;
		bad |= compiles() - c0 == 3 ? 0 : BAD_COMPILED; /* graph 0 again: from memory */
		bad |= DISK(WRITES) == w0 && DISK(WRITE_FAILURES) - f0 == 1 ? 0 : BAD_WRITES;
		_exit(bad);
	}
	EXPECT(child_status(pid) == 0);
	l = list("full");
	EXPECT(l.count == 0 && l.temps == 0);

	/* The directory is removed and a file takes its name. */
	w0 = DISK(WRITES);
	f0 = DISK(WRITE_FAILURES);
	dev = dev_open("gone", 1 << 20, true, NULL);
	EXPECT(lookup(dev, 0));
	hpu_disk_cache_flush(dev->recipes->disk);
	EXPECT(DISK(WRITES) - w0 == 1);
	snprintf(path, sizeof(path), "rm -rf %s/gone", root);
	EXPECT(system(path) == 0);
	file_write("", "gone", "x", 1);
	capture_begin();
	EXPECT(lookup(dev, 1) && lookup(dev, 2));
	hpu_disk_cache_flush(dev->recipes->disk);
	EXPECT(lookup(dev, 3));
	dev_close(dev);
	EXPECT(capture_end(out, sizeof(out)) == 1);
	EXPECT(strstr(out, "libhpu: warning: recipe disk cache: cannot create") != NULL);
	EXPECT(DISK(WRITES) - w0 == 1 && DISK(WRITE_FAILURES) - f0 == 1);
}

/*
 * A recipe used from memory refreshes its file at most once a minute, so
 * another process's eviction sees it in use; a temporary an hour old (a
 * writer died) goes at the next eviction, a fresh one (a write going on)
 * stays.
 */
static void test_memory_hits_refresh_and_stale_temporaries_go(void)
{
	struct hpu_device *dev = dev_open("touch", 1 << 20, true, NULL);
	char name[32], stale[64], fresh[64];
	struct hpu_recipe *r = NULL;
	struct listing l;
	time_t before;

	store(dev, "touch", 2, name);
	set_age("touch", name, 600);
	before = mtime_of("touch", name).tv_sec;
	/* Just written: a hit within the minute leaves the file alone. */
	EXPECT(lookup(dev, 2));
	EXPECT(mtime_of("touch", name).tv_sec == before);
	/* A minute later (as the recipe remembers it), a hit refreshes it. */
	EXPECT(hpu_ir_recipe(dev, &graphs[2], &r) == 0);
	r->disk_used_ns -= 61ull * 1000000000ull;
	hpu_recipe_put(r);
	EXPECT(lookup(dev, 2));
	EXPECT(mtime_of("touch", name).tv_sec > before + 500);
	snprintf(stale, sizeof(stale), "%s.tmp.99999.0", name);
	snprintf(fresh, sizeof(fresh), "%s.tmp.99999.1", name);
	file_write("touch", stale, "x", 1);
	file_write("touch", fresh, "x", 1);
	set_age("touch", stale, 2 * 3600);
	store(dev, "touch", 3, name);
	dev_close(dev);
	l = list("touch");
	EXPECT(l.temps == 1);
	EXPECT(mtime_of("touch", stale).tv_sec == 0 && mtime_of("touch", fresh).tv_sec != 0);
}

/* Graph 0's file, written into a cleared root/dir; its name into name. */
static void store0(const char *dir, char *name)
{
	struct hpu_device *dev = dev_open(dir, 1 << 20, true, NULL);

	store(dev, dir, 0, name);
	dev_close(dev);
}

/*
 * Whether a new cache on root/dir refuses graph 0's file, counting it
 * ignored.  In a child, which an alarm ends if the load hangs.
 */
static bool load0_refused(const char *dir)
{
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (!pid) {
		struct hpu_disk_config cfg = { .max_bytes = 1 << 20 };
		struct hpu_recipe *r = NULL;
		struct hpu_disk_cache *dc;
		uint64_t i0 = DISK(IGNORED);
		size_t key_size;
		uint8_t *key = key0(&key_size);

		alarm(5);
		path_of(cfg.dir, sizeof(cfg.dir), dir, "");
		if (hpu_disk_cache_open(&cfg, &compat0, &dc) ||
		    hpu_disk_cache_load(dc, key, key_size, &r))
			_exit(2);
		_exit(!r && DISK(IGNORED) == i0 + 1 ? 0 : 1);
	}
	return child_status(pid) == 0;
}

/* The next lookup compiles graph 0 and writes a regular file over what had its name. */
static bool replaced0(const char *dir, const char *name)
{
	struct hpu_device *dev = dev_open(dir, 1 << 20, false, NULL);
	uint64_t c0 = compiles();
	char path[512];
	struct stat st;

	EXPECT(lookup(dev, 0));
	dev_close(dev);
	path_of(path, sizeof(path), dir, name);
	return compiles() == c0 + 1 && !lstat(path, &st) && S_ISREG(st.st_mode);
}

/*
 * Opening a FIFO to read waits for a writer: one named like a recipe, or
 * like the lock, must not hang the cache.  Nor does a file larger than the
 * cache, or another user's, load.
 */
static void test_special_files_are_refused(void)
{
	struct hpu_disk_config cfg = { .clear = true, .max_bytes = 1 << 20 };
	struct hpu_disk_cache *dc;
	char name[32], path[512];
	pid_t pid;

	store0("special", name);
	path_of(path, sizeof(path), "special", name);
	/* Larger than max MB (sparse). */
	EXPECT(truncate(path, 2 << 20) == 0);
	EXPECT(load0_refused("special"));
	EXPECT(replaced0("special", name));

	if (!geteuid()) {
		EXPECT(chown(path, 65534, 65534) == 0);
		EXPECT(load0_refused("special"));
		EXPECT(replaced0("special", name));
	} else {
		printf("#   not root: another user's file not tried\n");
	}

	/* The lock a FIFO: clearing takes it, and fails rather than wait. */
	path_of(path, sizeof(path), "special", "eviction.lock");
	EXPECT(unlink(path) == 0 && mkfifo(path, 0600) == 0);
	path_of(cfg.dir, sizeof(cfg.dir), "special", "");
	fflush(stdout);
	pid = fork();
	if (!pid) {
		alarm(5);
		_exit(hpu_disk_cache_open(&cfg, &compat0, &dc) == -EPERM &&
		      strstr(hpu_last_error(), "eviction.lock: not a regular file") ? 0 : 1);
	}
	EXPECT(child_status(pid) == 0);
	EXPECT(unlink(path) == 0);

	path_of(path, sizeof(path), "special", name);
	EXPECT(unlink(path) == 0 && mkfifo(path, 0600) == 0);
	EXPECT(load0_refused("special"));
	/* Else the lookup below would hang this process. */
	if (!test_failed)
		EXPECT(replaced0("special", name));
}

/*
 * Symbolic links in the directory are never followed: not to load a
 * recipe, to refresh its use, nor to take the lock - at a clear or at an
 * eviction - and what they point to is left as it was.
 */
static void test_symbolic_links_are_not_followed(void)
{
	static uint8_t good[1 << 16], back[1 << 16];
	struct hpu_disk_config cfg = { .clear = true, .max_bytes = 1 << 20 };
	char name[32], other[32], path[512], target[512], out[1024];
	struct hpu_recipe *r = NULL;
	struct hpu_disk_cache *dc;
	struct hpu_device *dev;
	size_t size;
	time_t before;

	path_of(path, sizeof(path), "outside", "");
	EXPECT(mkdir(path, 0700) == 0);
	store0("links", name);
	size = file_read("links", name, good, sizeof(good));
	/* The recipe moved out, a link to it in its place: refused, then replaced. */
	path_of(path, sizeof(path), "links", name);
	path_of(target, sizeof(target), "outside", name);
	EXPECT(rename(path, target) == 0 && symlink(target, path) == 0);
	set_age("outside", name, 600);
	before = mtime_of("outside", name).tv_sec;
	EXPECT(load0_refused("links"));
	EXPECT(replaced0("links", name));

	/* A memory hit a minute later refreshes the file, not what a link points to. */
	dev = dev_open("links", 1 << 20, false, NULL);
	EXPECT(lookup(dev, 0));
	EXPECT(unlink(path) == 0 && symlink(target, path) == 0);
	EXPECT(hpu_ir_recipe(dev, &graphs[0], &r) == 0);
	r->disk_used_ns -= 61ull * 1000000000ull;
	hpu_recipe_put(r);
	EXPECT(lookup(dev, 0));
	dev_close(dev);
	EXPECT(mtime_of("outside", name).tv_sec == before);

	/* The lock a link to a file that does not exist: never created, at a clear... */
	path_of(path, sizeof(path), "links", "eviction.lock");
	path_of(target, sizeof(target), "outside", "lock");
	EXPECT(unlink(path) == 0 && symlink(target, path) == 0);
	path_of(cfg.dir, sizeof(cfg.dir), "links", "");
	EXPECT(hpu_disk_cache_open(&cfg, &compat0, &dc) == -ELOOP);
	EXPECT(strstr(hpu_last_error(), "eviction.lock: a symbolic link") != NULL);
	/* ... nor at an eviction, which fails and stops the writes with one warning. */
	dev = dev_open("links", 1 << 20, false, NULL);
	capture_begin();
	store(dev, "links", 1, other);
	dev_close(dev);
	EXPECT(capture_end(out, sizeof(out)) == 1 && strstr(out, "eviction.lock: a symbolic link"));
	EXPECT(access(target, F_OK) != 0 && errno == ENOENT);
	EXPECT(file_read("outside", name, back, sizeof(back)) == size && !memcmp(back, good, size));
}

/* Expects dir refused by an open of a cache on it, the message saying why. */
static void expect_refused(const char *dir, int err, const char *why)
{
	struct hpu_disk_config cfg = { .max_bytes = 1 << 20 };
	struct hpu_disk_cache *dc = NULL;

	snprintf(cfg.dir, sizeof(cfg.dir), "%s", dir);
	if (hpu_disk_cache_open(&cfg, &compat0, &dc) != -err || !strstr(hpu_last_error(), why)) {
		printf("#   %s: \"%s\"\n", dir, hpu_last_error());
		test_failed = true;
		hpu_disk_cache_close(dc);
	}
}

/*
 * Recipes run as the process that loads them: a directory another user
 * owns or may write is refused with the reason, or a link to one, and the
 * runtime goes on without the disk cache.
 */
static void test_unsafe_directories_are_refused(void)
{
	const mode_t modes[] = { 0777, 0770, 0720, 0702, 01777 };
	struct hpu_disk_config cfg = { .max_bytes = 1 << 20 };
	char dir[512], link[512], env[600], out[1024];
	struct hpu_disk_cache *dc;
	unsigned int i;

	path_of(dir, sizeof(dir), "unsafe", "");
	dir[strlen(dir) - 1] = 0;
	path_of(link, sizeof(link), "unsafe-link", "");
	link[strlen(link) - 1] = 0;
	EXPECT(mkdir(dir, 0700) == 0);
	for (i = 0; i < ARRAY_SIZE(modes); i++) {
		EXPECT(chmod(dir, modes[i]) == 0);
		expect_refused(dir, EPERM, "is writable by its group or others");
	}
	snprintf(env, sizeof(env), "%s,false,1", dir);
	setenv("HPU_RECIPE_CACHE_CONFIG", env, 1);
	capture_begin();
	EXPECT(hpu_disk_cache_from_env(&compat0) == NULL);
	unsetenv("HPU_RECIPE_CACHE_CONFIG");
	EXPECT(capture_end(out, sizeof(out)) == 1);
	EXPECT(strstr(out, "writable by its group or others") &&
	       strstr(out, "the recipe disk cache is off"));

	EXPECT(chmod(dir, 0755) == 0);
	snprintf(cfg.dir, sizeof(cfg.dir), "%s", dir);
	EXPECT(hpu_disk_cache_open(&cfg, &compat0, &dc) == 0);
	hpu_disk_cache_close(dc);
	EXPECT(symlink(dir, link) == 0);
	expect_refused(link, ELOOP, "is a symbolic link");
	strcat(link, "/");
	expect_refused(link, ELOOP, "is a symbolic link");
	if (geteuid()) {
		printf("#   not root: another user's directory not tried\n");
		return;
	}
	EXPECT(chown(dir, 65534, 65534) == 0);
	expect_refused(dir, EPERM, "belongs to uid 65534");
}

/* What the cache creates - directories, recipes, the lock - only its user may read. */
static void test_created_files_are_private(void)
{
	const char *made[] = { "private", "private/a", "private/a/b" };
	mode_t old = umask(0);
	struct hpu_device *dev = dev_open("private/a/b", 1 << 20, false, NULL);
	char name[32], path[512];
	struct stat st;
	unsigned int i;

	store(dev, "private/a/b", 0, name); /* and the eviction after it, which takes the lock */
	dev_close(dev);
	umask(old);
	for (i = 0; i < ARRAY_SIZE(made); i++) {
		path_of(path, sizeof(path), made[i], "");
		EXPECT(stat(path, &st) == 0 && (st.st_mode & 07777) == 0700);
	}
	path_of(path, sizeof(path), "private/a/b", name);
	EXPECT(stat(path, &st) == 0 && (st.st_mode & 07777) == 0600);
	path_of(path, sizeof(path), "private/a/b", "eviction.lock");
	EXPECT(stat(path, &st) == 0 && (st.st_mode & 07777) == 0600);
}

static const struct tap_test tests[] = {
	{ "memory: the least recently used recipe is evicted",
	  test_memory_evicts_the_least_recent },
	{ "memory: a key inserted twice (a race of misses) keeps one entry",
	  test_memory_keeps_one_entry_per_key },
	{ "HPU_RECIPE_CACHE_CONFIG: parsed, or one warning and no cache", test_config },
	{ "clear empties the directory of recipes", test_clear },
	{ "a stored recipe loads back identical, compiling nothing", test_store_and_load },
	{ "a second process loads instead of compiling", test_second_process },
	{ "damaged, foreign and other graphs' files are ignored, then replaced",
	  test_damaged_files_are_replaced },
	{ "every flipped byte and every truncation is refused",
	  test_every_flip_and_truncation_is_refused },
	{ "sizes and offsets are checked behind a good checksum", test_offsets_are_checked },
	{ "eviction holds the bound and removes the least recently used",
	  test_eviction_by_use },
	{ "four processes on one directory never load a wrong or torn recipe",
	  test_four_processes },
	{ "a failing write degrades to memory only, with one warning",
	  test_write_failure_degrades },
	{ "memory hits refresh a file's use; stale temporaries go",
	  test_memory_hits_refresh_and_stale_temporaries_go },
	{ "FIFOs, oversized and other users' files are refused without hanging",
	  test_special_files_are_refused },
	{ "symbolic links are never followed: recipes, their refresh, the lock",
	  test_symbolic_links_are_not_followed },
	{ "a directory another user owns or may write is refused, saying why",
	  test_unsafe_directories_are_refused },
	{ "what the cache creates only its user may read", test_created_files_are_private },
};

int main(void)
{
	unsigned int n = 0, i, failed;
	char cmd[64];

	/* Compiling the same ops in many shapes is the point here, not a warning. */
	setenv("HPU_RECOMPILE_WARN", "1000000", 1);
	if (!mkdtemp(root)) {
		perror("mkdtemp");
		return 1;
	}
	for (i = 0; i < GRAPHS; i++) {
		graph_build(i, i >= 6 ? 4 : 2 + i);
		if (hpu_compile(&graphs[i], &cfg4, &ref[i])) {
			printf("Bail out! graph %u does not compile: %s\n", i, hpu_last_error());
			return 1;
		}
	}
	printf("TAP version 13\n1..%zu\n", ARRAY_SIZE(tests));
	failed = tap_run(tests, ARRAY_SIZE(tests), &n);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	if (system(cmd))
		failed++;
	return failed ? 1 : 0;
}
