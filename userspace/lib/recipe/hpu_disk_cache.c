/* SPDX-License-Identifier: MIT */
/*
 * The disk recipe cache: compiled recipes in files of one directory, so
 * that a second run - or another rank of this one - loads what the first
 * compiled instead of compiling it again.  HPU_RECIPE_CACHE_CONFIG=
 * <dir>,<clear>,<max MB>, read when a device opens, turns it on.
 *
 * Lookup is memory, then disk, then compile (hpu_ir_recipe()).  A file is
 * named by a hash of its compat record and key, and loads only if both
 * match byte for byte: the hash only finds it.  The compat record holds
 * what the key does not - libhpu, file format, driver ABI, firmware and
 * the device's identity - so a recipe never loads into a stack it was not
 * compiled for.  A file is untrusted: its checksum, then every size and
 * offset are checked before anything is used.  One that fails is ignored
 * (counted), and its recipe compiled and written over it; running out of
 * memory while loading one is not the file's fault: the lookup fails with
 * -ENOMEM and the file stays.  A file forged with a valid checksum can make
 * the process compute wrong results, not escape its context: the driver
 * and the device confine every job.
 *
 * Writes happen on a thread of the cache's, started by the first: the
 * compile path only queues the recipe.  Each is a temporary file renamed
 * over the name, so a reader in any process sees a whole file or none.
 * No fsync: a file cut short by a crash fails its checksum and is
 * replaced.  Once the queue drains the thread evicts, holding
 * flock(eviction.lock) so that processes take turns: the least recently
 * used files go until the directory holds at most 0.99 x max, and the
 * temporaries a dead writer left go too.  Use is the mtime, which a write
 * sets and a load refreshes (a memory hit too, at most once a minute).
 *
 * A write that fails (a full, read-only or removed directory, a file size
 * limit) stops writing for good, with one warning: new recipes are then
 * cached in memory only, while those on disk still load.
 *
 * A recipe's command buffers run as the process that loads it, so the
 * directory must be its user's and writable by no one else, as ssh asks
 * of its files; any other is refused with a warning, and the process runs
 * without the disk cache.  Nothing in it is trusted either: every file is
 * opened relative to the directory's descriptor, never through a symbolic
 * link, never blocking on a FIFO or device, and used only if it is a
 * regular file of this user's within max MB.  What this process creates
 * only its user may read: directories 0700, files 0600.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "../recipe/recipe.h"

#define HPU_DISK_SUFFIX ".recipe"
#define HPU_DISK_ID_LEN 16 /* hex digits of the name's hash */
#define HPU_DISK_LOCK "eviction.lock"
#define HPU_DISK_STALE_TMP_S 3600
/* A memory hit refreshes its file's use at most this often: no system call per launch. */
#define HPU_DISK_TOUCH_NS (60ull * 1000000000ull)
/* A temporary's name: the file's, ".tmp.<pid>.<n>", NUL. */
#define HPU_DISK_NAME_MAX 64

_Static_assert(sizeof(struct hpu_disk_header) == 32, "the header has padding");
_Static_assert(sizeof(struct hpu_disk_record) == 120, "the record has padding");
_Static_assert(sizeof(struct hpu_site) == 2 * sizeof(uint32_t), "sites have padding");
_Static_assert(sizeof(struct hpu_param) == 2 * sizeof(uint32_t), "parameters have padding");

struct hpu_disk_job {
	struct hpu_list node;
	struct hpu_recipe *r; /* a reference of the job's */
};

struct hpu_disk_cache {
	struct hpu_disk_config cfg;
	struct hpu_disk_compat compat;
	int dirfd;
	bool log;             /* HPU_RECIPE_CACHE_LOG=1 */
	pthread_mutex_t lock; /* the rest */
	pthread_cond_t wake;  /* a job was queued, or stop */
	pthread_cond_t idle;  /* the queue drained, and the eviction after it ran */
	struct hpu_list queue;
	bool started;         /* the thread runs */
	bool busy;            /* jobs queued or being written, or their eviction to come */
	bool stop;
	bool failed;          /* a write failed: no more */
	pthread_t thread;
};

/* Temporaries are unique per process and write: two caches may write one name. */
static atomic_uint hpu_disk_tmp_seq;

static int hpu_disk_config_error(const char *s, const char *why)
{
	return hpu_error_set(EINVAL,
			     "HPU_RECIPE_CACHE_CONFIG=\"%s\": %s (expected <dir>,<true|false>,<max MB>)",
			     s, why);
}

int hpu_disk_config_parse(const char *s, struct hpu_disk_config *cfg)
{
	const char *size = strrchr(s, ','), *clear = size;
	unsigned long long mb;
	size_t dir_len;
	char *end;

	/* From the right: the directory may hold commas. */
	while (clear && clear > s && *--clear != ',')
		;
	if (!size || clear == size || *clear != ',')
		return hpu_disk_config_error(s, "three fields expected");
	dir_len = (size_t)(clear - s);
	if (!dir_len || dir_len >= sizeof(cfg->dir))
		return hpu_disk_config_error(s, dir_len ? "directory too long" : "no directory");
	memcpy(cfg->dir, s, dir_len);
	cfg->dir[dir_len] = 0;
	clear++;
	if (size - clear == 4 && !strncasecmp(clear, "true", 4))
		cfg->clear = true;
	else if (size - clear == 5 && !strncasecmp(clear, "false", 5))
		cfg->clear = false;
	else
		return hpu_disk_config_error(s, "clear is neither true nor false");
	size++;
	errno = 0;
	mb = isdigit((unsigned char)*size) ? strtoull(size, &end, 10) : 0;
	if (!mb || errno || *end || mb > UINT64_MAX >> 20)
		return hpu_disk_config_error(s, "the size is not a number of MB >= 1");
	cfg->max_bytes = (uint64_t)mb << 20;
	return 0;
}

/* mkdir -p */
static int hpu_mkdirs(const char *dir)
{
	char path[HPU_DISK_DIR_MAX];
	size_t i;

	snprintf(path, sizeof(path), "%s", dir);
	for (i = 1; path[i - 1]; i++) {
		if (path[i] != '/' && path[i])
			continue;
		path[i] = 0;
		/* An existing entry answers EEXIST even on a read-only file system. */
		if (mkdir(path, 0700) && errno != EEXIST)
			return hpu_error_errno("cannot create %s", path);
		path[i] = dir[i];
	}
	return 0;
}

/*
 * Opens name of the directory (flags: O_RDONLY, maybe O_CREAT) if it is a
 * regular file of this user's, its status in *st.  A symbolic link is not
 * followed, a FIFO or a device not waited for: all are refused.  The
 * message does not name the file: the caller does.
 */
static int hpu_disk_openat(const struct hpu_disk_cache *dc, const char *name, int flags,
			   struct stat *st, int *fdp)
{
	int fd = openat(dc->dirfd, name, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);

	if (fd < 0)
		return errno == ELOOP ? hpu_error_set(ELOOP, "a symbolic link")
				      : hpu_error_errno("cannot open it");
	if (fstat(fd, st)) {
		close(fd);
		return hpu_error_errno("cannot stat it");
	}
	if (!S_ISREG(st->st_mode) || st->st_uid != geteuid()) {
		close(fd);
		return hpu_error_set(EPERM, "not a regular file of uid %u",
				     (unsigned int)geteuid());
	}
	*fdp = fd;
	return 0;
}

/* The file name of key (HPU_DISK_NAME_MAX bytes), and the hash it is made of. */
static uint64_t hpu_disk_name(const struct hpu_disk_cache *dc, const uint8_t *key, size_t size,
			      char *name)
{
	uint64_t h = hpu_fnv1a(hpu_fnv1a(HPU_FNV1A_INIT, &dc->compat, sizeof(dc->compat)), key,
			       size);

	snprintf(name, HPU_DISK_NAME_MAX, "%016" PRIx64 HPU_DISK_SUFFIX, h);
	return h;
}

static bool hpu_disk_has_id(const char *name)
{
	unsigned int i;

	for (i = 0; i < HPU_DISK_ID_LEN; i++)
		if (!isxdigit((unsigned char)name[i]))
			return false;
	return !strncmp(name + HPU_DISK_ID_LEN, HPU_DISK_SUFFIX, sizeof(HPU_DISK_SUFFIX) - 1);
}

static bool hpu_disk_is_recipe(const char *name)
{
	return hpu_disk_has_id(name) && !name[HPU_DISK_ID_LEN + sizeof(HPU_DISK_SUFFIX) - 1];
}

/* A temporary no write has touched for an hour: left by a process that died writing it. */
static bool hpu_disk_is_stale_tmp(const char *name, const struct stat *st)
{
	return hpu_disk_has_id(name) &&
	       !strncmp(name + HPU_DISK_ID_LEN + sizeof(HPU_DISK_SUFFIX) - 1, ".tmp.", 5) &&
	       st->st_mtim.tv_sec + HPU_DISK_STALE_TMP_S < time(NULL);
}

struct hpu_disk_file {
	char name[HPU_DISK_NAME_MAX];
	uint64_t size;
	struct timespec used;
};

/* Least recently used first; the name breaks ties, so every process orders alike. */
static int hpu_disk_file_cmp(const void *a, const void *b)
{
	const struct hpu_disk_file *x = a, *y = b;

	if (x->used.tv_sec != y->used.tv_sec)
		return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
	if (x->used.tv_nsec != y->used.tv_nsec)
		return x->used.tv_nsec < y->used.tv_nsec ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* The recipe files of the directory, *total their bytes. */
static int hpu_disk_list(struct hpu_disk_cache *dc, struct hpu_disk_file **files,
			 unsigned int *count, uint64_t *total)
{
	unsigned int cap = 0;
	struct dirent *de;
	struct stat st;
	int fd, ret = 0;
	DIR *d;

	*files = NULL;
	*count = 0;
	*total = 0;
	fd = openat(dc->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		ret = hpu_error_errno("cannot read %s", dc->cfg.dir);
		if (fd >= 0)
			close(fd);
		return ret;
	}
	while (!ret && (de = readdir(d))) {
		struct hpu_disk_file *f;

		/* Gone since readdir: another process evicted it. */
		if (fstatat(dc->dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
			continue;
		if (hpu_disk_is_stale_tmp(de->d_name, &st))
			unlinkat(dc->dirfd, de->d_name, 0);
		if (!hpu_disk_is_recipe(de->d_name))
			continue;
		ret = hpu_array_grow((void **)files, &cap, *count + 1, sizeof(**files));
		if (ret)
			break;
		f = &(*files)[(*count)++];
		memcpy(f->name, de->d_name, HPU_DISK_ID_LEN + sizeof(HPU_DISK_SUFFIX));
		f->size = (uint64_t)st.st_size;
		f->used = st.st_mtim;
		*total += f->size;
	}
	closedir(d);
	return ret;
}

/*
 * With eviction.lock held: removes the least recently used recipe files
 * until at most bound bytes of them are left.  An eviction is counted and,
 * with HPU_RECIPE_CACHE_LOG=1, logged; a clear is neither.
 */
static int hpu_disk_trim(struct hpu_disk_cache *dc, uint64_t bound, bool evict)
{
	struct hpu_disk_file *files;
	unsigned int count, i;
	uint64_t total;
	int ret;

	ret = hpu_disk_list(dc, &files, &count, &total);
	if (!ret && total > bound)
		qsort(files, count, sizeof(*files), hpu_disk_file_cmp);
	for (i = 0; !ret && i < count && total > bound; i++) {
		bool gone = !unlinkat(dc->dirfd, files[i].name, 0);

		if (!gone && errno != ENOENT) {
			ret = hpu_error_errno("cannot remove %s/%s", dc->cfg.dir, files[i].name);
			break;
		}
		total -= files[i].size;
		if (!evict || !gone)
			continue;
		hpu_counter_add(HPU_C_DISK_EVICTIONS, 1);
		if (dc->log)
			fprintf(stderr,
				"libhpu: recipe cache: Removed %.*s successfully. Disk cache size "
				"after removal: %" PRIu64 " bytes\n",
				HPU_DISK_ID_LEN, files[i].name, total);
	}
	free(files);
	return ret;
}

/* hpu_disk_trim() holding eviction.lock: processes trim one at a time. */
static int hpu_disk_trim_locked(struct hpu_disk_cache *dc, uint64_t bound, bool evict)
{
	struct stat st;
	int fd, ret;

	ret = hpu_disk_openat(dc, HPU_DISK_LOCK, O_RDONLY | O_CREAT, &st, &fd);
	if (ret)
		return hpu_error_in(dc->cfg.dir, hpu_error_in(HPU_DISK_LOCK, ret));
	while ((ret = flock(fd, LOCK_EX)) && errno == EINTR)
		;
	ret = ret ? hpu_error_errno("cannot lock %s/%s", dc->cfg.dir, HPU_DISK_LOCK)
		  : hpu_disk_trim(dc, bound, evict);
	close(fd); /* and the lock with it */
	return ret;
}

/* The file of r: header, compat record, key, record, sites, parameters, blob. */
static int hpu_disk_serialize(const struct hpu_disk_cache *dc, const struct hpu_recipe *r,
			      struct hpu_bytes *b)
{
	struct hpu_disk_header h = {
		.magic = HPU_DISK_MAGIC,
		.format = HPU_DISK_FORMAT,
		.compat_size = sizeof(dc->compat),
		.key_size = (uint32_t)r->key_size,
	};
	struct hpu_disk_record rec = {
		.blob_size = r->blob_size,
		.sync_off = r->sync_off,
		.sync_size = r->sync_size,
		.num_sites = r->num_sites,
		.workspace_off = r->workspace_off,
		.workspace_size = r->workspace_size,
		.num_bindings = r->num_bindings,
		.num_engines = r->num_engines,
		.num_nodes = r->num_nodes,
		.num_signals = r->num_signals,
		.num_waits = r->num_waits,
		.num_params = r->num_params,
	};
	unsigned int e;

	for (e = 0; e < HPU_GRAPH_MAX_ENGINES; e++) {
		rec.engine[e].off = r->engine[e].off;
		rec.engine[e].size = r->engine[e].size;
		rec.engine[e].nodes = r->engine[e].nodes;
	}
	hpu_bytes_put(b, &h, sizeof(h));
	hpu_bytes_put(b, &dc->compat, sizeof(dc->compat));
	hpu_bytes_put(b, r->key, r->key_size);
	hpu_bytes_put(b, &rec, sizeof(rec));
	hpu_bytes_put(b, r->sites, r->num_sites * sizeof(*r->sites));
	hpu_bytes_put(b, r->params, r->num_params * sizeof(*r->params));
	hpu_bytes_put(b, r->blob, r->blob_size);
	if (b->oom)
		return hpu_error_set(ENOMEM, "out of memory for a recipe file");
	h.body_size = b->len - sizeof(h);
	h.crc = (uint32_t)crc32_z(0, b->p + sizeof(h), h.body_size);
	memcpy(b->p, &h, sizeof(h));
	return 0;
}

static int hpu_write_all(int fd, const uint8_t *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Writes r's file: a temporary renamed over the name, so no reader sees it half written. */
static int hpu_disk_write(struct hpu_disk_cache *dc, const struct hpu_recipe *r)
{
	char name[HPU_DISK_NAME_MAX], tmp[HPU_DISK_NAME_MAX];
	struct hpu_bytes b = { 0 };
	int fd, ret;

	ret = hpu_disk_serialize(dc, r, &b);
	if (ret)
		goto out;
	snprintf(tmp, sizeof(tmp), "%016" PRIx64 HPU_DISK_SUFFIX ".tmp.%d.%u",
		 hpu_disk_name(dc, r->key, r->key_size, name), (int)getpid(),
		 atomic_fetch_add(&hpu_disk_tmp_seq, 1));
	/* O_EXCL: a name taken, even by a symbolic link, fails. */
	fd = openat(dc->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		ret = hpu_error_errno("cannot create %s/%s", dc->cfg.dir, tmp);
		goto out;
	}
	ret = hpu_write_all(fd, b.p, b.len);
	if (close(fd) && !ret)
		ret = -errno;
	if (!ret && renameat(dc->dirfd, tmp, dc->dirfd, name))
		ret = -errno;
	if (ret) {
		unlinkat(dc->dirfd, tmp, 0);
		errno = -ret;
		ret = hpu_error_errno("cannot write %s/%s", dc->cfg.dir, name);
		goto out;
	}
	hpu_counter_add(HPU_C_DISK_WRITES, 1);
	hpu_counter_add(HPU_C_DISK_BYTES_WRITTEN, (int64_t)b.len);
out:
	free(b.p);
	return ret;
}

/* With dc->lock held, after a failure (this thread's last error): writing stops, said once. */
static void hpu_disk_fail_locked(struct hpu_disk_cache *dc)
{
	hpu_counter_add(HPU_C_DISK_WRITE_FAILURES, 1);
	dc->failed = true;
	fprintf(stderr,
		"libhpu: warning: recipe disk cache: %s; new recipes are cached in memory only\n",
		hpu_last_error());
}

static void *hpu_disk_writer(void *arg)
{
	struct hpu_disk_cache *dc = arg;
	uint64_t bound = dc->cfg.max_bytes - dc->cfg.max_bytes / 100;
	bool wrote = false, failed;
	int ret;

	pthread_mutex_lock(&dc->lock);
	for (;;) {
		struct hpu_disk_job *job;

		if (hpu_list_empty(&dc->queue) && wrote) {
			wrote = false;
			pthread_mutex_unlock(&dc->lock);
			ret = hpu_disk_trim_locked(dc, bound, true);
			pthread_mutex_lock(&dc->lock);
			if (ret)
				hpu_disk_fail_locked(dc);
			continue;
		}
		if (hpu_list_empty(&dc->queue)) {
			dc->busy = false;
			pthread_cond_broadcast(&dc->idle);
			if (dc->stop)
				break;
			pthread_cond_wait(&dc->wake, &dc->lock);
			continue;
		}
		dc->busy = true;
		job = hpu_container_of(dc->queue.next, struct hpu_disk_job, node);
		hpu_list_del(&job->node);
		failed = dc->failed;
		pthread_mutex_unlock(&dc->lock);
		ret = failed ? 0 : hpu_disk_write(dc, job->r);
		/* Maybe the last reference: its device is still open, as closing waits for us. */
		hpu_recipe_put(job->r);
		free(job);
		pthread_mutex_lock(&dc->lock);
		if (ret)
			hpu_disk_fail_locked(dc);
		wrote |= !failed && !ret;
	}
	pthread_mutex_unlock(&dc->lock);
	return NULL;
}

/* With dc->lock held.  Signals go to the program's threads, not to this one. */
static int hpu_disk_start_locked(struct hpu_disk_cache *dc)
{
	sigset_t all, old;
	int ret;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_create(&dc->thread, NULL, hpu_disk_writer, dc);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret) {
		errno = ret;
		hpu_error_errno("cannot start the writer thread");
		hpu_disk_fail_locked(dc);
		return -ret;
	}
	dc->started = true;
	return 0;
}

void hpu_disk_cache_store(struct hpu_disk_cache *dc, struct hpu_recipe *r)
{
	struct hpu_disk_job *job;

	if (!dc)
		return;
	job = malloc(sizeof(*job));
	if (!job)
		return; /* the recipe is cached in memory only */
	pthread_mutex_lock(&dc->lock);
	if (dc->failed || (!dc->started && hpu_disk_start_locked(dc))) {
		pthread_mutex_unlock(&dc->lock);
		free(job);
		return;
	}
	hpu_recipe_get(r);
	job->r = r;
	hpu_list_add_tail(&dc->queue, &job->node);
	dc->busy = true;
	pthread_cond_signal(&dc->wake);
	pthread_mutex_unlock(&dc->lock);
}

void hpu_disk_cache_flush(struct hpu_disk_cache *dc)
{
	pthread_mutex_lock(&dc->lock);
	while (dc->busy)
		pthread_cond_wait(&dc->idle, &dc->lock);
	pthread_mutex_unlock(&dc->lock);
}

/* Reads the file of st's size; one larger than the cache may hold is not a recipe of it. */
static int hpu_disk_read(const struct hpu_disk_cache *dc, int fd, const struct stat *st,
			 uint8_t **buf, size_t *len)
{
	size_t done = 0;

	if ((uint64_t)st->st_size > dc->cfg.max_bytes)
		return hpu_error_set(EINVAL, "larger than the cache (%lld bytes)",
				     (long long)st->st_size);
	*len = (size_t)st->st_size;
	*buf = malloc(*len ? *len : 1);
	if (!*buf)
		return hpu_error_set(ENOMEM, "out of memory");
	while (done < *len) {
		ssize_t n = read(fd, *buf + done, *len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n ? hpu_error_errno("cannot read it") : hpu_error_set(EINVAL, "shrank");
		done += (size_t)n;
	}
	return 0;
}

static int hpu_disk_bad(const char *why)
{
	return hpu_error_set(EINVAL, "%s", why);
}

/*
 * What a recipe of key may hold, from hpu_ir_key()'s layout (u64 words):
 * word 1 has the engines in its low half, word 3 is the buffer count, and
 * a word per buffer follows, 0 for a persistent one (a binding) and
 * size << 1 | 1 for an intermediate (in the workspace); then the op count.
 */
struct hpu_key_bounds {
	uint32_t engines, bindings;
	uint64_t workspace; /* each intermediate placed apart, at HPU_WS_ALIGN */
	uint64_t nodes;     /* the graph's ops, whose numbers parameters name */
};

static int hpu_key_bounds(const uint8_t *key, size_t size, struct hpu_key_bounds *kb)
{
	uint64_t w[4], word, b;

	*kb = (struct hpu_key_bounds){ 0 };
	if (size < sizeof(w))
		return hpu_disk_bad("the key is too short");
	memcpy(w, key, sizeof(w));
	if (w[3] >= (size - sizeof(w)) / sizeof(word))
		return hpu_disk_bad("the key has fewer buffers than it counts");
	kb->engines = (uint32_t)w[1];
	for (b = 0; b < w[3]; b++) {
		memcpy(&word, key + sizeof(w) + b * sizeof(word), sizeof(word));
		if (!word)
			kb->bindings++;
		else
			kb->workspace += hpu_round_up(word >> 1, HPU_WS_ALIGN);
	}
	memcpy(&kb->nodes, key + sizeof(w) + w[3] * sizeof(word), sizeof(kb->nodes));
	return 0;
}

/* Whether [at, at + 8) overlaps [off, off + size). */
static bool hpu_word_in(uint64_t at, uint64_t off, uint64_t size)
{
	return at < off + size && off < at + sizeof(uint64_t);
}

/*
 * A parameter is a word a launch writes: inside the blob, in the parameter
 * blocks (clear of the sync objects and every command buffer, which a
 * launch may walk, and of every site: a number written over a kernel's
 * tensor address would aim the kernel at memory of the process's choosing),
 * and one number of one of the graph's ops.
 */
static bool hpu_disk_param_ok(const struct hpu_disk_record *rec, const struct hpu_recipe *r,
			      const struct hpu_param *p, const struct hpu_key_bounds *kb)
{
	unsigned int e, i;

	if ((uint64_t)p->at + sizeof(uint64_t) > rec->blob_size ||
	    p->src / HPU_OP_SCALARS >= kb->nodes ||
	    hpu_word_in(p->at, rec->sync_off, rec->sync_size))
		return false;
	for (e = 0; e < rec->num_engines; e++)
		if (hpu_word_in(p->at, rec->engine[e].off, rec->engine[e].size))
			return false;
	for (i = 0; i < r->num_sites; i++)
		if (hpu_word_in(p->at, r->sites[i].at, sizeof(uint64_t)))
			return false;
	return true;
}

/* Every size, offset and count of a file's record, against its blob and its key. */
static int hpu_disk_check(const struct hpu_disk_record *rec, const struct hpu_recipe *r,
			  const struct hpu_key_bounds *kb)
{
	const struct hpu_site *sites = r->sites;
	uint64_t blob = rec->blob_size, nodes = 0;
	unsigned int e, i;

	if (!rec->num_engines || rec->num_engines > kb->engines)
		return hpu_disk_bad("bad engine count");
	if ((uint64_t)rec->sync_off + rec->sync_size > blob)
		return hpu_disk_bad("sync objects outside the blob");
	if (rec->workspace_off != hpu_round_up(blob, HPU_WS_ALIGN) ||
	    rec->workspace_size > kb->workspace)
		return hpu_disk_bad("bad workspace");
	for (e = 0; e < HPU_GRAPH_MAX_ENGINES; e++) {
		const typeof(rec->engine[0]) *en = &rec->engine[e];

		if (e < rec->num_engines ? (uint64_t)en->off + en->size > blob || en->reserved
					 : en->off || en->size || en->nodes || en->reserved)
			return hpu_disk_bad("command buffer outside the blob");
		nodes += en->nodes;
	}
	if (nodes != rec->num_nodes)
		return hpu_disk_bad("node counts disagree");
	/* A launch passes an address per persistent buffer of the graph: no more, no less. */
	if (rec->num_bindings != kb->bindings)
		return hpu_disk_bad("bindings and persistent buffers disagree");
	for (i = 0; i < rec->num_sites; i++)
		if ((uint64_t)sites[i].at + sizeof(uint64_t) > blob ||
		    (sites[i].base != HPU_SITE_BLOB && sites[i].base != HPU_SITE_WORKSPACE &&
		     sites[i].base >= rec->num_bindings))
			return hpu_disk_bad("site outside the blob or its bindings");
	for (i = 0; i < rec->num_params; i++)
		if (!hpu_disk_param_ok(rec, r, &r->params[i], kb))
			return hpu_disk_bad("parameter outside the parameter blocks or the graph's ops");
	return 0;
}

/*
 * A launch may walk the engines' command buffers packet by packet, after
 * patching the sites: each buffer must be whole packets, and no site may
 * patch a packet's header.  Sites are checked within the blob already.
 */
static int hpu_disk_check_packets(const struct hpu_recipe *r)
{
	/* A bit per byte of the blob: a packet starts there. */
	uint8_t *starts = calloc(r->blob_size / 8 + 1, 1);
	uint32_t header, at, end, n, p;
	unsigned int e, i;
	int ret = 0;

	if (!starts)
		return hpu_error_set(ENOMEM, "out of memory");
	for (e = 0; e < r->num_engines && !ret; e++) {
		end = r->engine[e].off + r->engine[e].size;
		for (at = r->engine[e].off; at < end && !ret; at += n) {
			n = 0;
			if (end - at >= sizeof(header)) {
				memcpy(&header, r->blob + at, sizeof(header));
				n = hpu_pkt_size(header);
			}
			if (!n || n > end - at)
				ret = hpu_disk_bad("a command buffer ends in an unknown or cut packet");
			starts[at / 8] |= (uint8_t)(1u << at % 8);
		}
	}
	/* A header starting from 3 bytes before a site's word to its last byte overlaps it. */
	for (i = 0; i < r->num_sites && !ret; i++)
		for (p = r->sites[i].at > 3 ? r->sites[i].at - 3 : 0;
		     p < r->sites[i].at + sizeof(uint64_t) && !ret; p++)
			if (starts[p / 8] & (1u << p % 8))
				ret = hpu_disk_bad("a site patches a packet's header");
	free(starts);
	return ret;
}

/* The record's recipe from the file's sites, then parameters, then blob. */
static struct hpu_recipe *hpu_recipe_of_record(const struct hpu_disk_record *rec,
					       const uint8_t *sites)
{
	struct hpu_recipe *r = calloc(1, sizeof(*r));
	size_t sites_size = rec->num_sites * sizeof(*r->sites);
	size_t params_size = rec->num_params * sizeof(*r->params);
	unsigned int e;

	if (!r)
		return NULL;
	atomic_init(&r->refs, 1);
	r->blob = malloc(rec->blob_size ? rec->blob_size : 1);
	r->sites = malloc(sites_size ? sites_size : 1);
	r->params = malloc(params_size ? params_size : 1);
	if (!r->blob || !r->sites || !r->params) {
		hpu_recipe_put(r);
		return NULL;
	}
	memcpy(r->sites, sites, sites_size);
	memcpy(r->params, sites + sites_size, params_size);
	memcpy(r->blob, sites + sites_size + params_size, rec->blob_size);
	r->blob_size = rec->blob_size;
	r->sync_off = rec->sync_off;
	r->sync_size = rec->sync_size;
	r->workspace_off = rec->workspace_off;
	r->workspace_size = rec->workspace_size;
	r->num_sites = rec->num_sites;
	r->num_params = rec->num_params;
	r->num_bindings = rec->num_bindings;
	r->num_engines = rec->num_engines;
	r->num_nodes = rec->num_nodes;
	r->num_signals = rec->num_signals;
	r->num_waits = rec->num_waits;
	for (e = 0; e < HPU_GRAPH_MAX_ENGINES; e++) {
		r->engine[e].off = rec->engine[e].off;
		r->engine[e].size = rec->engine[e].size;
		r->engine[e].nodes = rec->engine[e].nodes;
	}
	return r;
}

/* The recipe of a file's bytes if they are whole, this stack's, and key's. */
static int hpu_disk_parse(const struct hpu_disk_cache *dc, const uint8_t *buf, size_t len,
			  const uint8_t *key, size_t key_size, struct hpu_recipe **rp)
{
	struct hpu_disk_header h;
	struct hpu_disk_record rec;
	struct hpu_key_bounds kb;
	const uint8_t *p = buf + sizeof(h);
	uint64_t fixed = sizeof(h) + sizeof(dc->compat) + key_size + sizeof(rec);
	int ret;

	if (len < sizeof(h))
		return hpu_disk_bad("shorter than a header");
	memcpy(&h, buf, sizeof(h));
	if (h.magic != HPU_DISK_MAGIC)
		return hpu_disk_bad("not a recipe file");
	if (h.format != HPU_DISK_FORMAT)
		return hpu_error_set(EINVAL, "format %u, not %u", h.format, HPU_DISK_FORMAT);
	if (h.body_size != len - sizeof(h) || h.reserved)
		return hpu_disk_bad("truncated or extended");
	if (crc32_z(0, p, h.body_size) != h.crc)
		return hpu_disk_bad("checksum mismatch");
	if (h.compat_size != sizeof(dc->compat) || h.key_size != key_size || len < fixed)
		return hpu_disk_bad("another graph's (its sizes differ)");
	if (memcmp(p, &dc->compat, sizeof(dc->compat)))
		return hpu_disk_bad("compiled for another libhpu, driver, firmware or device");
	p += sizeof(dc->compat);
	if (memcmp(p, key, key_size))
		return hpu_disk_bad("another graph's");
	p += key_size;
	memcpy(&rec, p, sizeof(rec));
	p += sizeof(rec);
	if (len != fixed + (uint64_t)rec.num_sites * sizeof(struct hpu_site) +
			   (uint64_t)rec.num_params * sizeof(struct hpu_param) + rec.blob_size)
		return hpu_disk_bad("sizes do not add up");
	ret = hpu_key_bounds(key, key_size, &kb);
	if (ret)
		return ret;
	/* Copied first: the sites and parameters in the file need not be aligned. */
	*rp = hpu_recipe_of_record(&rec, p);
	if (!*rp)
		return hpu_error_set(ENOMEM, "out of memory");
	ret = hpu_disk_check(&rec, *rp, &kb);
	if (!ret)
		ret = hpu_disk_check_packets(*rp);
	if (ret) {
		hpu_recipe_put(*rp);
		*rp = NULL;
	}
	return ret;
}

int hpu_disk_cache_load(struct hpu_disk_cache *dc, const uint8_t *key, size_t size,
			struct hpu_recipe **rp)
{
	char name[HPU_DISK_NAME_MAX];
	uint8_t *buf = NULL;
	struct stat st;
	size_t len = 0;
	int fd, ret;

	*rp = NULL;
	if (!dc)
		return 0;
	hpu_disk_name(dc, key, size, name);
	ret = hpu_disk_openat(dc, name, O_RDONLY, &st, &fd);
	if (ret == -ENOENT) {
		hpu_counter_add(HPU_C_DISK_MISSES, 1);
		return 0;
	}
	if (!ret) {
		ret = hpu_disk_read(dc, fd, &st, &buf, &len);
		if (!ret)
			ret = hpu_disk_parse(dc, buf, len, key, size, rp);
		/* A use: eviction goes by it. */
		if (!ret)
			futimens(fd, NULL);
		close(fd);
		free(buf);
	}
	if (ret == -ENOMEM)
		return ret;
	if (ret) {
		hpu_counter_add(HPU_C_DISK_IGNORED, 1);
		hpu_counter_add(HPU_C_DISK_MISSES, 1);
		if (dc->log)
			fprintf(stderr, "libhpu: recipe cache: ignored %s/%s: %s\n", dc->cfg.dir,
				name, hpu_last_error());
		return 0;
	}
	hpu_counter_add(HPU_C_DISK_HITS, 1);
	hpu_counter_add(HPU_C_DISK_BYTES_READ, (int64_t)len);
	return 0;
}

void hpu_disk_cache_touch(struct hpu_disk_cache *dc, struct hpu_recipe *r)
{
	char name[HPU_DISK_NAME_MAX];
	uint64_t now;

	if (!dc)
		return;
	now = hpu_now_ns();
	/* Racy by design: two threads may both refresh, which is harmless. */
	if (now - r->disk_used_ns < HPU_DISK_TOUCH_NS)
		return;
	r->disk_used_ns = now;
	hpu_disk_name(dc, r->key, r->key_size, name);
	/* Not written yet, or evicted: nothing to refresh.  A symbolic link is not ours to. */
	utimensat(dc->dirfd, name, NULL, AT_SYMLINK_NOFOLLOW);
}

/*
 * Opens the directory if it is this user's and no one else may write it,
 * as its recipes run as this process.  Not through a symbolic link: that
 * would be trusting whoever could make the link.
 */
static int hpu_disk_dir_open(struct hpu_disk_cache *dc)
{
	const char *dir = dc->cfg.dir;
	struct stat st;

	dc->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dc->dirfd < 0) {
		if (!fstatat(AT_FDCWD, dir, &st, AT_SYMLINK_NOFOLLOW) && S_ISLNK(st.st_mode))
			return hpu_error_set(ELOOP, "%s is a symbolic link, not followed", dir);
		return hpu_error_errno("cannot open %s", dir);
	}
	if (fstat(dc->dirfd, &st))
		return hpu_error_errno("cannot stat %s", dir);
	if (st.st_uid != geteuid())
		return hpu_error_set(EPERM,
				     "%s belongs to uid %u, not to this process's %u: its recipes "
				     "would run as this user", dir, (unsigned int)st.st_uid,
				     (unsigned int)geteuid());
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		return hpu_error_set(EPERM,
				     "%s is writable by its group or others (mode %03o): their "
				     "recipes would run as this user", dir,
				     (unsigned int)(st.st_mode & 07777));
	return 0;
}

int hpu_disk_cache_open(const struct hpu_disk_config *cfg, const struct hpu_disk_compat *compat,
			struct hpu_disk_cache **dcp)
{
	struct hpu_disk_cache *dc = calloc(1, sizeof(*dc));
	size_t len;
	int ret;

	if (!dc)
		return hpu_error_set(ENOMEM, "out of memory");
	dc->cfg = *cfg;
	/* "dir/" would follow a symbolic link named dir. */
	for (len = strlen(dc->cfg.dir); len > 1 && dc->cfg.dir[len - 1] == '/'; len--)
		dc->cfg.dir[len - 1] = 0;
	dc->compat = *compat;
	dc->compat.libhpu_version = HPU_VERSION_MAJOR << 16 | HPU_VERSION_MINOR << 8 |
				    HPU_VERSION_PATCH;
	dc->compat.format = HPU_DISK_FORMAT;
	dc->log = hpu_env_uint("HPU_RECIPE_CACHE_LOG", 0) == 1;
	dc->dirfd = -1;
	ret = hpu_mkdirs(dc->cfg.dir);
	if (!ret)
		ret = hpu_disk_dir_open(dc);
	if (!ret && cfg->clear)
		ret = hpu_disk_trim_locked(dc, 0, false);
	if (ret) {
		if (dc->dirfd >= 0)
			close(dc->dirfd);
		free(dc);
		return ret;
	}
	pthread_mutex_init(&dc->lock, NULL);
	pthread_cond_init(&dc->wake, NULL);
	pthread_cond_init(&dc->idle, NULL);
	hpu_list_init(&dc->queue);
	*dcp = dc;
	return 0;
}

struct hpu_disk_cache *hpu_disk_cache_from_env(const struct hpu_disk_compat *compat)
{
	const char *s = getenv("HPU_RECIPE_CACHE_CONFIG");
	struct hpu_disk_cache *dc = NULL;
	struct hpu_disk_config cfg;

	if (!s || !*s)
		return NULL;
	if (hpu_disk_config_parse(s, &cfg) || hpu_disk_cache_open(&cfg, compat, &dc))
		fprintf(stderr, "libhpu: warning: %s; the recipe disk cache is off\n",
			hpu_last_error());
	return dc;
}

void hpu_disk_cache_close(struct hpu_disk_cache *dc)
{
	if (!dc)
		return;
	hpu_disk_cache_flush(dc);
	pthread_mutex_lock(&dc->lock);
	dc->stop = true;
	pthread_cond_signal(&dc->wake);
	pthread_mutex_unlock(&dc->lock);
	if (dc->started)
		pthread_join(dc->thread, NULL);
	close(dc->dirfd);
	pthread_cond_destroy(&dc->idle);
	pthread_cond_destroy(&dc->wake);
	pthread_mutex_destroy(&dc->lock);
	free(dc);
}
