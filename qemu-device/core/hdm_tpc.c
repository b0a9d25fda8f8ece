/* SPDX-License-Identifier: MIT */
/*
 * hpu tensor engines: the launch's checks, in the order the ABI states
 * them, its limits, its yields, and the worker pool.
 */
#include <inttypes.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <unistd.h>

#include "hdm_internal.h"
#include "hdm_kernel.h"
#include "hdm_le.h"
#include "hdm_tmem.h"
#include "hdm_tpc.h"

#define HDM_PARAMS_OFF(field) offsetof(struct hpu_kernel_params, field)
#define HDM_TDESC_OFF(field) offsetof(struct hpu_tensor_desc, field)

/* Where an empty tensor points: a kernel never reads it, but its base is never NULL. */
static uint8_t hdm_tpc_nothing[8];

/* One launch as the engine thread decodes, maps and runs it. */
struct hdm_tpc_launch {
	const struct hdm_job *job;
	const struct hdm_kernel_def *def;
	struct hdm_kcall call;
	uint64_t va[HPU_KERNEL_MAX_TENSORS]; /* of element (0, ..., 0) */
	uint64_t lo[HPU_KERNEL_MAX_TENSORS]; /* the lowest byte reached */
	uint64_t len[HPU_KERNEL_MAX_TENSORS]; /* bytes reached; 0: empty */
	unsigned int slot[HPU_KERNEL_MAX_TENSORS];
	struct hdm_tmem_set mem;
	struct hdm_kstate state; /* what the kernel's check() and parts share with the engine */
	unsigned int phases;
	/* Each phase's work split over the TPCs. */
	uint64_t items[HDM_KERNEL_MAX_PHASES], work[HDM_KERNEL_MAX_PHASES];
	uint64_t parts[HDM_KERNEL_MAX_PHASES];
	uint64_t scratch_len; /* bytes of state.scratch */
};

/*
 * What a launch decoded to, and so which items its parts do: a launch that
 * yielded goes on with the parts left only if it decodes to the same again.
 */
struct hdm_tpc_decoded {
	struct hdm_kcall call; /* state NULL */
	uint64_t va[HPU_KERNEL_MAX_TENSORS];
	uint64_t items[HDM_KERNEL_MAX_PHASES], work[HDM_KERNEL_MAX_PHASES];
	uint64_t parts[HDM_KERNEL_MAX_PHASES];
};

_Static_assert(sizeof(struct hdm_tpc_decoded) <= HDM_JOB_DECODED_MAX,
	       "a decoded launch does not fit its job");

/*
 * Whether the run has a part left to start: none once its job's slice is
 * over, a part having started.  Pool lock held (the core lock nests in it).
 */
static bool hdm_tpc_left(struct hdm_tpc_pool *pool)
{
	if (pool->next < pool->parts && pool->next > pool->first && pool->yield &&
	    hdm_job_slice_over(pool->yield)) {
		pool->parts = pool->next;
		if (pool->ended == pool->parts)
			pthread_cond_signal(&pool->done);
	}
	return pool->next < pool->parts;
}

/* Run the next part.  Pool lock held, dropped while the part runs. */
static void hdm_tpc_part(struct hdm_tpc_pool *pool)
{
	uint64_t p = pool->next++;
	hdm_tpc_part_fn *fn = pool->fn;
	void *ctx = pool->ctx;

	pthread_mutex_unlock(&pool->lock);
	fn(ctx, p);
	pthread_mutex_lock(&pool->lock);
	if (++pool->ended == pool->parts)
		pthread_cond_signal(&pool->done);
}

static void *hdm_tpc_worker(void *opaque)
{
	struct hdm_tpc_pool *pool = opaque;

	pthread_mutex_lock(&pool->lock);
	for (;;) {
		while (!pool->stopping && !hdm_tpc_left(pool))
			pthread_cond_wait(&pool->work, &pool->lock);
		if (pool->stopping)
			break;
		hdm_tpc_part(pool);
	}
	pthread_mutex_unlock(&pool->lock);
	return NULL;
}

void hdm_tpc_init(struct hdm_tpc_pool *pool)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned int i;
	sigset_t all, old;

	pthread_mutex_init(&pool->lock, NULL);
	pthread_cond_init(&pool->work, NULL);
	pthread_cond_init(&pool->done, NULL);
	pool->stopping = false;
	pool->first = pool->parts = pool->next = pool->ended = 0;
	pool->cpus = cpus > 1 ? (unsigned int)cpus : 1;
	pool->nr_threads = 0;
	pool->threads = pool->cpus > 1 ? calloc(pool->cpus - 1, sizeof(*pool->threads)) : NULL;
	if (!pool->threads)
		return;
	/* Workers take no signals: the embedder's threads handle them (QEMU's do the same). */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (i = 0; i < pool->cpus - 1; i++) {
		if (pthread_create(&pool->threads[i], NULL, hdm_tpc_worker, pool))
			break;
		pool->nr_threads++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void hdm_tpc_destroy(struct hdm_tpc_pool *pool)
{
	unsigned int i;

	pthread_mutex_lock(&pool->lock);
	pool->stopping = true;
	pthread_cond_broadcast(&pool->work);
	pthread_mutex_unlock(&pool->lock);
	for (i = 0; i < pool->nr_threads; i++)
		pthread_join(pool->threads[i], NULL);
	free(pool->threads);
	pthread_cond_destroy(&pool->done);
	pthread_cond_destroy(&pool->work);
	pthread_mutex_destroy(&pool->lock);
}

uint64_t hdm_tpc_pool_run(struct hdm_tpc_pool *pool, hdm_tpc_part_fn *fn, void *ctx,
			  uint64_t first, uint64_t parts, struct hdm_job *yield)
{
	uint64_t woken, done;

	pthread_mutex_lock(&pool->lock);
	pool->fn = fn;
	pool->ctx = ctx;
	pool->parts = parts;
	pool->first = pool->next = pool->ended = first;
	pool->yield = yield;
	/* Wake only the workers with a part to take: each wake-up costs the host a switch. */
	for (woken = 1; woken < parts - first && woken <= pool->nr_threads; woken++)
		pthread_cond_signal(&pool->work);
	while (hdm_tpc_left(pool))
		hdm_tpc_part(pool);
	while (pool->ended < pool->parts)
		pthread_cond_wait(&pool->done, &pool->lock);
	done = pool->parts;
	pool->first = pool->parts = pool->next = 0;
	pthread_mutex_unlock(&pool->lock);
	return done;
}

/* The launch's kernel polls this; the kernel library knows no job. */
static bool hdm_tpc_cancelled(const void *job)
{
	return hdm_job_cancelled(job);
}

/*
 * Part p of the launch's phase: an even share of its items, the first
 * items % parts parts one longer.
 */
static void hdm_tpc_run_part(void *ctx, uint64_t p)
{
	const struct hdm_tpc_launch *l = ctx;
	uint32_t k = l->state.phase;
	uint64_t base = l->items[k] / l->parts[k], extra = l->items[k] % l->parts[k];
	uint64_t begin = p * base + (p < extra ? p : extra), end = begin + base + (p < extra);

	if (!hdm_kstop(&l->call))
		l->def->run(&l->call, begin, end);
}

/*
 * Phase k's items, split by their work over one part per TPC, or more
 * parts if those would be too long; never more parts than items.
 */
static uint64_t hdm_tpc_split(const struct hdm_tpc_launch *l, unsigned int k)
{
	uint32_t num_tpc = l->job->core->cfg.num_tpc;
	uint64_t most = (l->work[k] + HDM_TPC_PART_MAX_ITEMS - 1) / HDM_TPC_PART_MAX_ITEMS;
	uint64_t parts = l->work[k] / HDM_TPC_PART_ITEMS;

	if (parts > num_tpc)
		parts = num_tpc;
	if (parts < most)
		parts = most;
	if (parts > l->items[k])
		parts = l->items[k];
	if (l->items[k] && !parts)
		parts = 1;
	return parts;
}

/* Whether v has more than HPU_KERNEL_MAX_ELEMENTS elements, dims of size 0 aside. */
static bool hdm_tpc_too_large(const struct hdm_kview *v)
{
	uint64_t n = 1;
	unsigned int k;

	for (k = 0; k < v->ndim; k++)
		if (v->shape[k] && (__builtin_mul_overflow(n, v->shape[k], &n) ||
				    n > HPU_KERNEL_MAX_ELEMENTS))
			return true;
	return false;
}

/* Why tensor descriptor d is refused, or NULL; fills t[i] but its base, and its range. */
static const char *hdm_tpc_tensor(struct hdm_tpc_launch *l, unsigned int i, const uint8_t *d)
{
	struct hdm_kview *v = &l->call.t[i];
	unsigned int k;

	l->va[i] = hdm_ld_le64(d + HDM_TDESC_OFF(addr));
	v->dtype = hdm_ld_le32(d + HDM_TDESC_OFF(dtype));
	v->ndim = hdm_ld_le32(d + HDM_TDESC_OFF(ndim));
	for (k = 0; k < HPU_TENSOR_MAX_DIMS; k++) {
		v->shape[k] = hdm_ld_le64(d + HDM_TDESC_OFF(shape) + 8 * k);
		v->strides[k] = (int64_t)hdm_ld_le64(d + HDM_TDESC_OFF(strides) + 8 * k);
	}
	if (!hdm_dtype_size(v->dtype))
		return "unknown dtype";
	if (v->ndim > HPU_TENSOR_MAX_DIMS)
		return "more than HPU_TENSOR_MAX_DIMS dims";
	for (k = v->ndim; k < HPU_TENSOR_MAX_DIMS; k++)
		if (v->shape[k] != 1 || v->strides[k])
			return "a dim past ndim is not shape 1, stride 0";
	if (hdm_tpc_too_large(v))
		return "more than HPU_KERNEL_MAX_ELEMENTS elements";
	if (hdm_tmem_extent(l->va[i], v->ndim, v->shape, v->strides, hdm_dtype_size(v->dtype),
			    &l->lo[i], &l->len[i]))
		return "its extent overflows";
	return NULL;
}

/* Decode the parameter block p of size bytes into l. */
static int hdm_tpc_decode(struct hdm_job *job, struct hdm_tpc_launch *l, const uint8_t *p,
			  uint32_t size)
{
	uint32_t version = hdm_ld_le32(p + HDM_PARAMS_OFF(version));
	uint32_t kernel = hdm_ld_le32(p + HDM_PARAMS_OFF(kernel));
	uint32_t n = hdm_ld_le32(p + HDM_PARAMS_OFF(num_tensors));
	const char *why;
	unsigned int i;
	uint64_t bits;

	if (!version || version > HPU_KERNEL_PARAMS_VERSION)
		return hdm_pkt_refuse(job, "parameter version %" PRIu32, version);
	if (hdm_ld_le32(p + HDM_PARAMS_OFF(flags)))
		return hdm_pkt_refuse(job, "parameter flags are not 0");
	if (n > HPU_KERNEL_MAX_TENSORS ||
	    size != sizeof(struct hpu_kernel_params) + n * sizeof(struct hpu_tensor_desc))
		return hdm_pkt_refuse(job, "%" PRIu32 " tensors in a %" PRIu32 "-byte parameter block", n,
				      size);
	l->def = hdm_kernel_lookup(kernel);
	if (!l->def)
		return hdm_pkt_refuse(job, "unknown kernel %" PRIu32, kernel);
	if (n < l->def->min_tensors || n > l->def->max_tensors)
		return hdm_pkt_refuse(job, "kernel %s takes %u to %u tensors, not %" PRIu32,
				      l->def->name, l->def->min_tensors, l->def->max_tensors, n);
	l->call.kernel = kernel;
	l->call.num_tensors = n;
	for (i = 0; i < HPU_KERNEL_MAX_ARGS; i++)
		l->call.args[i] = (int64_t)hdm_ld_le64(p + HDM_PARAMS_OFF(args) + 8 * i);
	for (i = 0; i < HPU_KERNEL_MAX_SCALARS; i++) {
		bits = hdm_ld_le64(p + HDM_PARAMS_OFF(scalars) + 8 * i);
		memcpy(&l->call.scalars[i], &bits, sizeof(bits));
	}
	for (i = 0; i < n; i++) {
		why = hdm_tpc_tensor(l, i, p + sizeof(struct hpu_kernel_params) +
					       i * sizeof(struct hpu_tensor_desc));
		if (why)
			return hdm_pkt_refuse(job, "tensor %u: %s", i, why);
	}
	return 0;
}

/* Read and decode the parameter block through the MMU. */
static int hdm_tpc_params(struct hdm_job *job, struct hdm_tpc_launch *l, const uint8_t *pkt)
{
	uint32_t size = hdm_ld_le32(pkt + offsetof(struct hpu_pkt_tpc_launch, params_size));
	uint64_t va = hdm_ld_le64(pkt + offsetof(struct hpu_pkt_tpc_launch, params));
	struct hdm_tmem_set block;
	int err;

	if (size < sizeof(struct hpu_kernel_params) || size > HPU_KERNEL_PARAMS_MAX)
		return hdm_pkt_refuse(job, "a %" PRIu32 "-byte parameter block", size);
	hdm_tmem_init(&block);
	hdm_tmem_add(&block, va, size, false);
	if (hdm_tmem_map(job, &block))
		return -1;
	err = hdm_tpc_decode(job, l, block.r[0].host, size);
	hdm_tmem_release(&block);
	return err;
}

/* Map the tensors: the kernel's outputs for writing, the same range once. */
static int hdm_tpc_map(struct hdm_job *job, struct hdm_tpc_launch *l)
{
	uint32_t outputs = l->def->outputs(&l->call);
	unsigned int i;

	hdm_tmem_init(&l->mem);
	for (i = 0; i < l->call.num_tensors; i++)
		if (l->len[i])
			l->slot[i] = hdm_tmem_add(&l->mem, l->lo[i], l->len[i], outputs >> i & 1);
	if (hdm_tmem_map_operands(job, &l->mem))
		return -1;
	for (i = 0; i < l->call.num_tensors; i++)
		l->call.t[i].base = !l->len[i] ? hdm_tpc_nothing :
				    l->mem.r[l->slot[i]].host + (l->va[i] - l->lo[i]);
	return 0;
}

/* The kernel's check() and the launch's work: 0, or -1 with the job failed. */
static int hdm_tpc_check(struct hdm_job *job, struct hdm_tpc_launch *l)
{
	uint64_t work, total = 0;
	unsigned int k;

	if (l->def->check(&l->call, l->items)) {
		/* A check a queue reset cut short refused nothing. */
		if (hdm_job_cancelled(job))
			return hdm_job_fail(job, HPU_EVENT_ABORTED, job->pos);
		return hdm_pkt_refuse(job, "kernel %s refuses its operands", l->def->name);
	}
	l->phases = l->def->phases ? l->def->phases : 1;
	for (k = 0; k < l->phases; k++) {
		l->state.phase = k;
		work = l->def->work ? l->def->work(&l->call, l->items[k]) : l->items[k];
		l->work[k] = work > l->items[k] ? work : l->items[k];
		if (__builtin_add_overflow(total, l->work[k], &total) || total > HPU_KERNEL_MAX_WORK)
			return hdm_pkt_refuse(job, "kernel %s: work past HPU_KERNEL_MAX_WORK",
					      l->def->name);
		if (hdm_kernel_item_work(l->def, &l->call, l->items[k], l->work[k]) >
		    HPU_KERNEL_MAX_ITEM_WORK)
			return hdm_pkt_refuse(job, "kernel %s: an item of phase %u past "
					      "HPU_KERNEL_MAX_ITEM_WORK", l->def->name, k);
		l->parts[k] = hdm_tpc_split(l, k);
	}
	l->state.phase = 0;
	l->scratch_len = l->def->scratch ? l->def->scratch(&l->call, l->items[0]) : 0;
	if (l->scratch_len > HDM_KERNEL_SCRATCH_MAX)
		return hdm_pkt_refuse(job, "kernel %s: scratch past HDM_KERNEL_SCRATCH_MAX",
				      l->def->name);
	return 0;
}

/*
 * The launch's scratch: what the job kept when the launch yielded, if it
 * goes on from part *first, else zeroed, and the launch starts over (its
 * parts done wrote into the scratch lost).  0, or -1 with the job failed.
 */
static int hdm_tpc_scratch(struct hdm_job *job, struct hdm_tpc_launch *l, uint64_t *first)
{
	if (*first && l->scratch_len && job->scratch_len == l->scratch_len) {
		l->state.scratch = job->scratch;
		job->scratch = NULL;
		job->scratch_len = 0;
		return 0;
	}
	hdm_job_drop_scratch(job);
	if (!l->scratch_len)
		return 0;
	*first = 0;
	l->state.scratch = calloc(1, l->scratch_len);
	return l->state.scratch ? 0 : hdm_tmem_oom(job, "kernel scratch", job->pos);
}

static void hdm_tpc_decoded(const struct hdm_tpc_launch *l, struct hdm_tpc_decoded *d)
{
	unsigned int i;

	memset(d, 0, sizeof(*d));
	d->call = l->call;
	d->call.state = NULL;
	/* A staged tensor's buffer is new at each step; its VA says what it is. */
	for (i = 0; i < l->call.num_tensors; i++)
		if (l->len[i] && hdm_tmem_staged(&l->mem, l->slot[i]))
			d->call.t[i].base = NULL;
	memcpy(d->va, l->va, sizeof(d->va));
	memcpy(d->items, l->items, sizeof(d->items));
	memcpy(d->work, l->work, sizeof(d->work));
	memcpy(d->parts, l->parts, sizeof(d->parts));
}

/*
 * Yield, the parts before done having run (parts numbered through the
 * phases, one after the other): the job keeps what the launch goes on with.
 */
static enum hdm_pkt_status hdm_tpc_yield(struct hdm_job *job, struct hdm_tpc_launch *l,
					 const struct hdm_tpc_decoded *d, uint64_t done)
{
	if (hdm_tmem_yield(job, &l->mem))
		return HDM_PKT_FAILED;
	hdm_job_suspend(job, d, sizeof(*d), done);
	job->scratch = l->state.scratch;
	job->scratch_len = l->scratch_len;
	l->state.scratch = NULL;
	return HDM_PKT_YIELDED;
}

/*
 * Run the checked launch's parts, phase after phase, from where it yielded
 * if it decodes as it did then.  Past the job's slice it yields between two
 * parts of a phase (hdm_tmem_yield()), so a resumed launch is inside a
 * phase, every phase before it finished.  finish() runs after each phase's
 * last part, once.
 */
static enum hdm_pkt_status hdm_tpc_run(struct hdm_job *job, struct hdm_tpc_launch *l)
{
	uint64_t first, done, base, total = 0;
	struct hdm_tpc_decoded d;
	unsigned int k;

	hdm_tpc_decoded(l, &d);
	for (k = 0; k < l->phases; k++)
		total += l->parts[k];
	first = hdm_job_resume(job, &d, sizeof(d));
	if (first >= total)
		first = 0;
	if (hdm_tpc_scratch(job, l, &first))
		return HDM_PKT_FAILED;
	for (k = 0, base = 0; k < l->phases; base += l->parts[k++]) {
		if (first && base + l->parts[k] <= first)
			continue;
		l->state.phase = k;
		done = hdm_tpc_pool_run(&job->core->tpc, hdm_tpc_run_part, l,
					first > base ? first - base : 0, l->parts[k], job);
		if (l->state.fault && !hdm_job_cancelled(job))
			return hdm_pkt_refuse(job, "kernel %s: %s", l->def->name, l->state.fault);
		if (hdm_job_cancelled(job))
			return hdm_job_fail(job, HPU_EVENT_ABORTED, job->pos);
		if (done < l->parts[k])
			return hdm_tpc_yield(job, l, &d, base + done);
		if (l->def->finish)
			l->def->finish(&l->call);
	}
	return hdm_tmem_write_back(job, &l->mem) ? HDM_PKT_FAILED : HDM_PKT_DONE;
}

enum hdm_pkt_status hdm_tpc_launch(struct hdm_job *job, const uint8_t *pkt)
{
	struct hdm_tpc_launch l = { .job = job, .state = { hdm_tpc_cancelled, job } };
	enum hdm_pkt_status status = HDM_PKT_FAILED;

	l.call.state = &l.state;
	if (hdm_tpc_params(job, &l, pkt) || hdm_tpc_map(job, &l))
		return HDM_PKT_FAILED;
	if (!hdm_tpc_check(job, &l))
		status = hdm_tpc_run(job, &l);
	free(l.state.scratch);
	hdm_tmem_release(&l.mem);
	return status;
}
