/* SPDX-License-Identifier: MIT */
/*
 * Recipes on the device: upload, binding, launch.
 *
 * A recipe takes one block of device memory: its blob (sync objects,
 * parameter blocks, one command buffer per engine) and its workspace.
 * Binding is by patching: the blob's address fields (sites) are resolved
 * on the host against the block and the persistent tensors' addresses, and
 * the resolved blob is uploaded by the launch that needs it - the first,
 * and any whose tensors moved.  When only a few sites moved (a lazy step's
 * next batch is a view at another offset: a handful of sites), only their
 * words are copied, each by its own DMA in the head job; otherwise the
 * whole blob.  Patching costs a host pass and a DMA only when something
 * moved; an address table would cost every launch an indirection the
 * packets do not have (GEMM addresses are inline, and a TPC parameter
 * block holds its descriptors' addresses).  A replay of the same tensors
 * uploads nothing.  The recipe's parameters (the numbers in its parameter
 * blocks) are words like the sites: a launch whose values differ from
 * those on the device writes them into the image and uploads them the
 * same way, word by word when few changed.
 *
 * A launch is one SUBMIT of one job per engine with work, engine e on
 * queue (stream's queue + e) % queues; the head (engine 0, the stream's
 * queue) orders it in the stream:
 *   head:   [WAIT previous launch finished: only if it was another stream's]
 *           [LIN_DMA the resolved blob, or its moved words, in: only when
 *            binding changed]
 *           FILL the engines' sync objects with 0;  SIGNAL go
 *           CALL engine 0's command buffer
 *           WAIT done[e] for every other engine;  SIGNAL finished
 *   engine: WAIT go;  CALL its command buffer;  SIGNAL done[e]
 * and each job adds 1 to the stream's done counter and is tracked as the
 * stream's (hpu_stream_submit_group()), so a failing engine job is named
 * when the stream is settled.  go, done[] and finished live in a control
 * block of pinned memory that the host zeroes before the launch, so every
 * target is 1.  A launch takes the block of the launch before last when
 * that one finished (its finished word is the last any of its jobs touches)
 * and no other stream's head waits on it; else a new block, the old one
 * freed behind the jobs submitted so far.  A failed launch never finishes,
 * so its counters are never reused and cannot stall the next launch.  The
 * jobs a launch builds stay with its block: a launch taking the block on
 * the same stream that uploads nothing and waits for no other stream would
 * build the same bytes, so it submits those; a rebinding drops them all.
 * The sync objects inside the command buffers are zeroed by the head before
 * go, when no engine can be running the recipe: the previous launch on this
 * stream ended before the head started (it waited for all its engines), one
 * on another stream is waited for through its control block.
 *
 * Until the device runs CALL (packets version 3) the command buffers are
 * copied into the jobs instead, split into several jobs of a queue when
 * longer than a job may be; the parameter blocks are in device memory
 * either way.  Whether it does is asked once per device, by a probe job;
 * HPU_RECIPE_INLINE=1 copies them anyway (the other path, for tests).
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <drm/hpu_accel.h>
#include <drm/hpu_packets.h>

#include "../recipe/recipe.h"

struct hpu_launch_ctrl {
	uint32_t go;
	uint32_t finished;
	uint32_t done[HPU_GRAPH_MAX_ENGINES];
};

/* The jobs of one launch, their bytes in one buffer (offsets until built). */
struct hpu_launch {
	struct hpu_stream *s; /* while it is built */
	struct hpu_bytes bytes;
	struct hpu_job_cb jobs[DRM_HPU_SUBMIT_MAX_JOBS];
	size_t off[DRM_HPU_SUBMIT_MAX_JOBS];
	unsigned int count;
};

/*
 * A control block of pinned memory, who may still read it, and the jobs
 * last built on it, which a launch on the same stream that uploads nothing
 * and waits for no other stream's launch submits again as they are.
 */
struct hpu_ctrl_slot {
	uint64_t va;                  /* 0 if none */
	struct hpu_launch_ctrl *host;
	bool foreign;                 /* another stream's launch waits on it */
	struct hpu_launch kept;       /* count 0 if none */
	unsigned int kept_stream;     /* id of the stream kept's jobs signal */
};

/* A recipe's state on a device. */
struct hpu_recipe_inst {
	struct hpu_device *dev;
	pthread_mutex_t lock; /* the rest */
	uint64_t va;          /* blob, then workspace */
	uint64_t bytes;       /* of device memory at va */
	uint8_t *image;       /* the blob resolved against bound[], with values[] written */
	uint64_t *bound;
	uint64_t *values;     /* the parameters' bits */
	bool uploaded;        /* image is what the device has */
	unsigned int last_stream; /* id of the stream of the last launch */
	/* The control blocks of the last launch (ctrl[last], none before one) and of the one before. */
	struct hpu_ctrl_slot ctrl[2];
	unsigned int last;
};

/* Drop the jobs kept on a control block: it, or the blob they may hold, is changing. */
static void hpu_ctrl_forget(struct hpu_ctrl_slot *slot)
{
	free(slot->kept.bytes.p);
	slot->kept.bytes = (struct hpu_bytes){ 0 };
	slot->kept.count = 0;
}

void hpu_recipe_inst_destroy(void *p)
{
	struct hpu_recipe_inst *inst = p;
	unsigned int i;

	if (!inst)
		return;
	/* All wait in their caches for the work that uses them. */
	hpu_mem_free(inst->dev, inst->va);
	for (i = 0; i < 2; i++) {
		if (inst->ctrl[i].va)
			hpu_pinned_free(inst->dev, inst->ctrl[i].va);
		hpu_ctrl_forget(&inst->ctrl[i]);
	}
	pthread_mutex_destroy(&inst->lock);
	free(inst->image);
	free(inst->bound);
	free(inst->values);
	free(inst);
}

int hpu_recipe_inst_create(struct hpu_device *dev, const struct hpu_recipe *r,
			   struct hpu_recipe_inst **instp)
{
	struct hpu_recipe_inst *inst;
	int ret;

	inst = calloc(1, sizeof(*inst));
	if (!inst)
		return hpu_error_set(ENOMEM, "out of memory");
	inst->image = malloc(r->blob_size);
	inst->bound = calloc(r->num_bindings + 1, sizeof(*inst->bound));
	inst->values = calloc(r->num_params + 1, sizeof(*inst->values));
	if (!inst->image || !inst->bound || !inst->values) {
		ret = hpu_error_set(ENOMEM, "out of memory");
		goto free_inst;
	}
	inst->dev = dev;
	inst->bytes = r->workspace_off + r->workspace_size;
	ret = hpu_mem_alloc(dev, inst->bytes, &inst->va);
	if (ret)
		goto free_inst;
	pthread_mutex_init(&inst->lock, NULL);
	*instp = inst;
	return 0;

free_inst:
	free(inst->image);
	free(inst->bound);
	free(inst->values);
	free(inst);
	return ret;
}

uint64_t hpu_recipe_inst_bytes(const struct hpu_recipe_inst *inst)
{
	return inst->bytes;
}

/* r's own state on s's device, made on its first launch. */
static int hpu_recipe_own_inst(struct hpu_stream *s, struct hpu_recipe *r,
			       struct hpu_recipe_inst **instp)
{
	int ret = 0;

	/* A recipe lives in one device's cache: made once, under that cache's lock. */
	pthread_mutex_lock(&s->dev->recipes->lock);
	if (!r->inst) {
		struct hpu_recipe_inst *inst;

		ret = hpu_recipe_inst_create(s->dev, r, &inst);
		if (!ret) {
			r->inst = inst;
			r->inst_free = hpu_recipe_inst_destroy;
		}
	}
	*instp = r->inst;
	pthread_mutex_unlock(&s->dev->recipes->lock);
	return ret;
}

/* Site's word of the image: the blob's relative address plus base. */
static void hpu_recipe_patch(const struct hpu_recipe *r, struct hpu_recipe_inst *inst,
			     const struct hpu_site *site, uint64_t base)
{
	hpu_put_u64(inst->image + site->at, hpu_get_u64(r->blob + site->at) + base);
}

/* Sites a launch may re-upload word by word: their DMAs fit the head's command buffer. */
#define HPU_PATCH_WORDS 4u
_Static_assert(sizeof(struct hpu_pkt_wait) + HPU_PATCH_WORDS * sizeof(struct hpu_pkt_lin_dma) +
		       sizeof(struct hpu_pkt_lin_dma) + sizeof(struct hpu_pkt_signal) <=
		       HPU_CB_CAPACITY,
	       "the head's packets before its CALL fit a command buffer");

/* What a launch uploads: nothing (stage_va 0), the whole blob (words 0), or words of it. */
struct hpu_upload {
	uint64_t stage_va; /* pinned copy of what goes up */
	unsigned int words;
	uint32_t at[HPU_PATCH_WORDS]; /* blob offsets of the words */
};

/*
 * With the device holding inst->image for inst->bound and inst->values:
 * patches into the image the sites whose binding moved and the parameters
 * whose value changed, their offsets into up->at.  false (image half
 * patched: resolve it all) if more than HPU_PATCH_WORDS changed.
 */
static bool hpu_recipe_repatch(const struct hpu_recipe *r, struct hpu_recipe_inst *inst,
			       const uint64_t *bindings, const uint64_t *values,
			       struct hpu_upload *up)
{
	unsigned int i;

	up->words = 0;
	for (i = 0; i < r->num_sites; i++) {
		const struct hpu_site *site = &r->sites[i];

		if (site->base >= r->num_bindings || bindings[site->base] == inst->bound[site->base])
			continue;
		if (up->words == HPU_PATCH_WORDS)
			return false;
		hpu_recipe_patch(r, inst, site, bindings[site->base]);
		up->at[up->words++] = site->at;
	}
	for (i = 0; i < r->num_params; i++) {
		if (values[i] == inst->values[i])
			continue;
		if (up->words == HPU_PATCH_WORDS)
			return false;
		hpu_put_u64(inst->image + r->params[i].at, values[i]);
		up->at[up->words++] = r->params[i].at;
	}
	memcpy(inst->bound, bindings, r->num_bindings * sizeof(*bindings));
	memcpy(inst->values, values, r->num_params * sizeof(*values));
	return true;
}

/* Resolves every site of the blob into inst->image, and writes the values. */
static void hpu_recipe_resolve(const struct hpu_recipe *r, struct hpu_recipe_inst *inst,
			       const uint64_t *bindings, const uint64_t *values)
{
	unsigned int i;

	memcpy(inst->image, r->blob, r->blob_size);
	for (i = 0; i < r->num_sites; i++) {
		const struct hpu_site *site = &r->sites[i];

		hpu_recipe_patch(r, inst, site,
				 site->base == HPU_SITE_BLOB	    ? inst->va
				 : site->base == HPU_SITE_WORKSPACE ? inst->va + r->workspace_off
								    : bindings[site->base]);
	}
	hpu_recipe_write_params(r, inst->image, values);
	memcpy(inst->bound, bindings, r->num_bindings * sizeof(*bindings));
	memcpy(inst->values, values, r->num_params * sizeof(*values));
}

/* Whether the device runs CALL: one probe job per device, the first launch waiting for it. */
static int hpu_call_supported(struct hpu_stream *s, bool *call)
{
	struct hpu_recipe_cache *c = s->dev->recipes;
	int ret, error = 0, known = atomic_load(&c->call);
	struct hpu_cb cb;
	uint64_t va, seq;

	if (!known && hpu_env_uint("HPU_RECIPE_INLINE", 0) == 1)
		atomic_store(&c->call, known = -1);
	if (known) {
		*call = known > 0;
		return 0;
	}
	ret = hpu_suballoc_alloc(s->dev->mem, 8, &va, &(void *){ NULL });
	if (ret)
		return ret;
	/* Zeros are a NOP: the callee. */
	hpu_cb_init(&cb);
	hpu_cb_fill(&cb, va, 0, 8);
	hpu_cb_call(&cb, va, 8);
	ret = hpu_job_submit(s->dev, s->queue, &cb, &seq);
	if (!ret)
		ret = hpu_job_wait(s->dev, s->queue, seq, HPU_FOREVER, &error);
	hpu_suballoc_free(s->dev->mem, va);
	/* The driver or the device refuses an opcode it does not know. */
	if (ret && ret != -EINVAL)
		return ret;
	*call = !ret && !error;
	atomic_store(&c->call, *call ? 1 : -1);
	return 0;
}

struct hpu_part {
	const void *p;
	size_t len;
};

/* A job of the parts in order, then the stream's signal. */
static int hpu_launch_job(struct hpu_launch *L, uint32_t queue, const struct hpu_part *parts,
			  unsigned int count)
{
	struct hpu_cb done;
	unsigned int i;

	if (L->count == DRM_HPU_SUBMIT_MAX_JOBS)
		return hpu_error_set(E2BIG, "a launch needs more than %u jobs",
				     DRM_HPU_SUBMIT_MAX_JOBS);
	hpu_cb_init(&done);
	hpu_cb_signal(&done, L->s->done_va, 1);
	L->off[L->count] = L->bytes.len;
	for (i = 0; i < count; i++)
		hpu_bytes_put(&L->bytes, parts[i].p, parts[i].len);
	hpu_bytes_put(&L->bytes, done.buf, done.size);
	L->jobs[L->count] = (struct hpu_job_cb){
		.queue = queue,
		.size = (uint32_t)(L->bytes.len - L->off[L->count]),
	};
	L->count++;
	return 0;
}

/*
 * An engine's jobs: prefix, its command buffer (a CALL, or the packets
 * themselves, split at packet boundaries into as many jobs as it takes),
 * suffix.
 */
static int hpu_launch_engine(struct hpu_launch *L, uint32_t queue, const struct hpu_cb *prefix,
			     const uint8_t *body, uint32_t size, const struct hpu_cb *suffix)
{
	const uint32_t room = HPU_CB_MAX_SIZE - prefix->size - suffix->size - 16;
	uint32_t at = 0, len, n, header;
	bool first = true;
	int ret;

	do {
		struct hpu_part parts[3] = { { NULL, 0 } };

		for (len = 0; at + len < size; len += n) {
			memcpy(&header, body + at + len, sizeof(header));
			n = hpu_pkt_size(header);
			if (!n || len + n > room)
				break;
		}
		if (!len && at < size)
			return hpu_error_set(EINVAL, "a recipe packet does not fit a job");
		if (first)
			parts[0] = (struct hpu_part){ prefix->buf, prefix->size };
		parts[1] = (struct hpu_part){ body + at, len };
		at += len;
		if (at == size)
			parts[2] = (struct hpu_part){ suffix->buf, suffix->size };
		ret = hpu_launch_job(L, queue, parts, 3);
		first = false;
	} while (!ret && at < size);
	return ret;
}

static uint64_t hpu_ctrl_done(uint64_t ctrl_va, unsigned int e)
{
	return ctrl_va + offsetof(struct hpu_launch_ctrl, done) + e * sizeof(uint32_t);
}

/*
 * The jobs of a launch into L: the engines', then the head's (the stream's
 * job, last).  head holds the head's packets before its command buffer.
 */
static int hpu_launch_build(struct hpu_launch *L, const struct hpu_recipe *r,
			    const struct hpu_recipe_inst *inst, bool call, const struct hpu_cb *head,
			    uint64_t ctrl_va)
{
	uint32_t queues = L->s->dev->num_queues;
	struct hpu_cb pre, post, callee;
	unsigned int e;
	int ret = 0;

	hpu_cb_init(&pre);
	hpu_cb_wait(&pre, ctrl_va + offsetof(struct hpu_launch_ctrl, go), 1);
	hpu_cb_init(&post);
	for (e = r->num_engines; e-- > 0 && !ret;) {
		const uint8_t *body = inst->image + r->engine[e].off;
		uint32_t size = r->engine[e].size, queue = (L->s->queue + e) % queues;

		if (!size && e)
			continue;
		if (call && size) {
			hpu_cb_init(&callee);
			hpu_cb_call(&callee, inst->va + r->engine[e].off, size);
			body = (const uint8_t *)callee.buf;
			size = callee.size;
		}
		if (!e) {
			hpu_cb_signal(&post, ctrl_va + offsetof(struct hpu_launch_ctrl, finished), 1);
			return hpu_launch_engine(L, queue, head, body, size, &post);
		}
		{
			struct hpu_cb done;

			hpu_cb_init(&done);
			hpu_cb_signal(&done, hpu_ctrl_done(ctrl_va, e), 1);
			ret = hpu_launch_engine(L, queue, &pre, body, size, &done);
		}
		/* The head ends only once this engine has. */
		hpu_cb_wait(&post, hpu_ctrl_done(ctrl_va, e), 1);
	}
	return ret;
}

/*
 * The head's packets before its command buffer; prev is the control block
 * of the recipe's last launch if another stream made it and it may still run.
 */
static void hpu_launch_head(const struct hpu_recipe *r, const struct hpu_recipe_inst *inst,
			    const struct hpu_upload *up, struct hpu_ctrl_slot *prev,
			    uint64_t ctrl_va, struct hpu_cb *head)
{
	unsigned int i;

	hpu_cb_init(head);
	/* Another stream's launch may still run the recipe: its end first. */
	if (prev) {
		hpu_cb_wait(head, prev->va + offsetof(struct hpu_launch_ctrl, finished), 1);
		prev->foreign = true;
	}
	if (up->stage_va && !up->words)
		hpu_cb_copy(head, inst->va, up->stage_va, r->blob_size);
	for (i = 0; i < up->words; i++)
		hpu_cb_copy(head, inst->va + up->at[i], up->stage_va + i * sizeof(uint64_t),
			    sizeof(uint64_t));
	hpu_cb_fill(head, inst->va + r->sync_off, 0, r->sync_size);
	hpu_cb_signal(head, ctrl_va + offsetof(struct hpu_launch_ctrl, go), 1);
}

/*
 * The control block of the next launch, zeroed: the one of the launch
 * before last if that launch finished and no other stream's launch waits
 * on it, so that no job can still read it; else a new one (the old one
 * freed behind the jobs submitted so far, as the allocator frees).  A
 * launch that failed never finishes, so its counters are never reused.
 * With inst->lock held.
 */
static int hpu_ctrl_take(struct hpu_recipe_inst *inst, struct hpu_ctrl_slot **slotp)
{
	struct hpu_ctrl_slot *slot = &inst->ctrl[!inst->last];
	void *host;
	int ret;

	if (slot->va && (slot->foreign || !hpu_device_word(&slot->host->finished))) {
		hpu_pinned_free(inst->dev, slot->va);
		slot->va = 0;
		hpu_ctrl_forget(slot);
	}
	if (!slot->va) {
		ret = hpu_pinned_alloc(inst->dev, sizeof(*slot->host), &slot->va, &host);
		if (ret)
			return ret;
		slot->host = host;
	}
	slot->foreign = false;
	memset(slot->host, 0, sizeof(*slot->host));
	*slotp = slot;
	return 0;
}

/*
 * The launch's jobs, their pointers set, in *Lp: those kept on slot when
 * they are the same (nothing to upload, no other stream's launch to wait
 * for, the same stream), else built anew - into slot, kept for a later
 * launch, when they could be the same then, else into once.  With
 * inst->lock held.
 */
static int hpu_launch_jobs(struct hpu_stream *s, const struct hpu_recipe *r,
			   struct hpu_recipe_inst *inst, bool call, const struct hpu_upload *up,
			   struct hpu_ctrl_slot *prev, struct hpu_ctrl_slot *slot,
			   struct hpu_launch *once, struct hpu_launch **Lp)
{
	bool keep = !prev && !up->stage_va;
	struct hpu_launch *L = keep ? &slot->kept : once;
	struct hpu_cb head;
	unsigned int i;
	int ret;

	*Lp = L;
	if (keep && slot->kept.count && slot->kept_stream == s->id)
		return 0;
	if (keep)
		hpu_ctrl_forget(slot);
	L->s = s;
	L->count = 0;
	hpu_launch_head(r, inst, up, prev, slot->va, &head);
	ret = hpu_launch_build(L, r, inst, call, &head, slot->va);
	if (!ret && L->bytes.oom)
		ret = hpu_error_set(ENOMEM, "out of memory");
	if (ret) {
		if (keep)
			hpu_ctrl_forget(slot);
		return ret;
	}
	for (i = 0; i < L->count; i++)
		L->jobs[i].cb = L->bytes.p + L->off[i];
	if (keep)
		slot->kept_stream = s->id;
	return 0;
}

/* With inst->lock held. */
static int hpu_launch_submit(struct hpu_stream *s, const struct hpu_recipe *r,
			     struct hpu_recipe_inst *inst, bool call, const struct hpu_upload *up)
{
	struct hpu_ctrl_slot *slot, *prev = &inst->ctrl[inst->last];
	struct hpu_launch once, *L;
	int ret;

	/* Not zeroed whole: its arrays are written before they are read. */
	once.bytes = (struct hpu_bytes){ 0 };
	if (!prev->va || inst->last_stream == s->id || hpu_device_word(&prev->host->finished))
		prev = NULL;
	ret = hpu_ctrl_take(inst, &slot);
	if (!ret)
		ret = hpu_launch_jobs(s, r, inst, call, up, prev, slot, &once, &L);
	if (!ret)
		ret = hpu_stream_submit_group(s, L->jobs, L->count, "hpu_mark_step");
	free(once.bytes.p);
	if (!ret) {
		inst->last = !inst->last;
		inst->last_stream = s->id;
	}
	return ret;
}

int hpu_recipe_launch(struct hpu_stream *s, struct hpu_recipe *r, struct hpu_recipe_inst *inst,
		      const uint64_t *bindings, const uint64_t *values)
{
	uint64_t start = hpu_now_ns(), bytes = 0;
	struct hpu_upload up = { 0 };
	bool call, upload;
	uint8_t *host;
	unsigned int i;
	int ret;

	ret = inst ? 0 : hpu_recipe_own_inst(s, r, &inst);
	if (!ret)
		ret = hpu_call_supported(s, &call);
	if (ret)
		return ret;
	pthread_mutex_lock(&inst->lock);
	upload = !inst->uploaded ||
		 memcmp(inst->bound, bindings, r->num_bindings * sizeof(*bindings)) ||
		 memcmp(inst->values, values, r->num_params * sizeof(*values));
	if (upload) {
		bool partial = inst->uploaded && hpu_recipe_repatch(r, inst, bindings, values, &up);

		/* Jobs kept without CALL hold copies of the image's command buffers. */
		hpu_ctrl_forget(&inst->ctrl[0]);
		hpu_ctrl_forget(&inst->ctrl[1]);
		inst->uploaded = false;
		if (!partial) {
			up.words = 0;
			hpu_recipe_resolve(r, inst, bindings, values);
		}
		bytes = partial ? up.words * sizeof(uint64_t) : r->blob_size;
	}
	if (bytes)
		ret = hpu_pinned_alloc(s->dev, bytes, &up.stage_va, (void **)&host);
	if (bytes && !ret && up.words) {
		for (i = 0; i < up.words; i++)
			memcpy(host + i * sizeof(uint64_t), inst->image + up.at[i], sizeof(uint64_t));
	} else if (bytes && !ret) {
		memcpy(host, inst->image, r->blob_size);
	}
	if (!ret)
		ret = hpu_launch_submit(s, r, inst, call, &up);
	/* Freeing never waits: the staging copy stays until the launch has ended. */
	if (up.stage_va)
		hpu_pinned_free(s->dev, up.stage_va);
	if (!ret)
		inst->uploaded = true;
	pthread_mutex_unlock(&inst->lock);
	if (!ret) {
		hpu_counter_add(HPU_C_LAUNCHES, 1);
		hpu_counter_add(HPU_C_LAUNCH_NS, (int64_t)(hpu_now_ns() - start));
		hpu_counter_add(HPU_C_UPLOADS, upload);
		hpu_counter_add(HPU_C_UPLOAD_BYTES, (int64_t)bytes);
		hpu_counter_add(HPU_C_INLINE, !call);
	}
	return ret;
}
