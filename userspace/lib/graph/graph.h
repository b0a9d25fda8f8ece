/* SPDX-License-Identifier: MIT */
/*
 * libhpu's graph layer (<hpu/hpu_graph.h>): lazy mode records a stream's
 * ops and flushes them as a recipe; HPU graphs capture and replay them;
 * graphed callables and the module cacher build on HPU graphs.
 */
#ifndef HPU_GRAPH_H
#define HPU_GRAPH_H

#include <stdbool.h>

#include "../recipe/recipe.h"

/*
 * hpu_lazy.c.  What the graph layer records on a stream (s->recording, made
 * with the stream), under s->lock.
 */
struct hpu_recording {
	int lazy;                   /* 0: as HPU_LAZY_MODE says, 1 lazy, 2 eager */
	unsigned int max_graph_ops; /* 0: as HPU_MAX_COMPOUND_OP_SIZE says */
	struct hpu_ir *graph;       /* lazy mode's recorded ops, NULL before the first */
	struct hpu_graph *capture;  /* the HPU graph capturing the stream's ops (hpu_capture.c) */
};

/* The stream hooks' init and release: s->recording, and what it holds. */
int hpu_recording_init(struct hpu_stream *s);
void hpu_recording_release(struct hpu_stream *s);
/* With s->lock held: records op (checked already) instead of launching it. */
int hpu_lazy_record(struct hpu_stream *s, const struct hpu_op *op);
/*
 * With s->lock held: compiles and launches what s recorded; 0 if nothing.
 * Everything that needs the stream's ops done or ordered calls it first,
 * so it is also where a capturing stream refuses them (-EBUSY).
 */
int hpu_lazy_flush(struct hpu_stream *s);
/* Whether ops on s are recorded (HPU_LAZY_MODE decides until set). */
bool hpu_stream_lazy(struct hpu_stream *s);
/* The op hook (struct hpu_op_hooks): a capturing or lazy stream records op. */
int hpu_graph_op_take(struct hpu_stream *s, const struct hpu_op *op, const char *reason);
/* Locks s and flushes: before a device closes. */
int hpu_lazy_flush_stream(struct hpu_stream *s);

/* hpu_capture.c, with s->lock held: records op (checked already) into its capture. */
int hpu_graph_capture_record_locked(struct hpu_stream *s, const struct hpu_op *op);
/* With s->lock held, for a stream the user destroys: its capture fails. */
void hpu_stream_capture_abort(struct hpu_stream *s);

#endif /* HPU_GRAPH_H */
