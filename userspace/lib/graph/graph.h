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

/* hpu_lazy.c, with s->lock held: records op (checked already) instead of launching it. */
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
/* At the stream's last reference: frees what it recorded. */
void hpu_lazy_release(struct hpu_stream *s);
/* Locks s and flushes: before a device closes. */
int hpu_lazy_flush_stream(struct hpu_stream *s);

/* hpu_capture.c, with s->lock held: records op (checked already) into s->capture. */
int hpu_graph_capture_record_locked(struct hpu_stream *s, const struct hpu_op *op);
/* With s->lock held, for a stream the user destroys: its capture fails. */
void hpu_stream_capture_abort(struct hpu_stream *s);

#endif /* HPU_GRAPH_H */
