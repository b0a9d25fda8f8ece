/* SPDX-License-Identifier: MIT */
/*
 * Graphed callables (torch.hpu.make_graphed_callables), on the public HPU
 * graph and op API: a forward and the backward the framework supplies,
 * each captured into a graph of its own, replayed with new data copied
 * into its static inputs.
 *
 * The static inputs are ours: contiguous copies of the samples.  The
 * static outputs are the tensors the callable made during its capture;
 * the backward's static inputs (one gradient per forward output) are
 * shaped as those.  Warm-up runs are eager and their results dropped; the
 * gradients a warm-up backward reads are zeros, so it computes on defined
 * values (it may accumulate into state the framework keeps).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../graph/graph.h"

/* A captured callable and its static tensors. */
struct hpu_graphed_part {
	struct hpu_graph *graph;   /* NULL: a backward that was not supplied */
	const char *in_name, *out_name; /* the arrays, in messages */
	unsigned int num_in, num_out;
	struct hpu_tensor **in;    /* static inputs, ours */
	struct hpu_tensor **out;   /* static outputs, made by the callable at the capture */
};

struct hpu_graphed {
	struct hpu_graphed_part fwd, bwd;
	size_t num_tensors;
	struct hpu_tensor *t[]; /* fwd.in, fwd.out, bwd.in, bwd.out */
};

static int hpu_graphed_config_check(const struct hpu_stream *s, const struct hpu_graphed_config *c,
				    struct hpu_tensor *const *sample)
{
	unsigned int i;

	if (!s || !c)
		return hpu_error_set(EINVAL, "%s is NULL", s ? "config" : "stream");
	if (!c->forward)
		return hpu_error_set(EINVAL, "config->forward is NULL");
	if (!c->backward && c->num_grad_inputs)
		return hpu_error_set(EINVAL, "config->num_grad_inputs is %u with no backward",
				     c->num_grad_inputs);
	if (c->num_inputs && !sample)
		return hpu_error_set(EINVAL, "sample_inputs is NULL");
	for (i = 0; i < c->num_inputs; i++)
		if (!sample[i])
			return hpu_error_set(EINVAL, "sample_inputs[%u] is NULL", i);
	return 0;
}

static int hpu_graphed_new(const struct hpu_graphed_config *c, struct hpu_graphed **gp)
{
	size_t n = (size_t)c->num_inputs + 2 * (size_t)c->num_outputs + c->num_grad_inputs;
	struct hpu_graphed *g = calloc(1, sizeof(*g) + n * sizeof(g->t[0]));

	if (!g)
		return hpu_error_set(ENOMEM, "out of memory");
	g->num_tensors = n;
	g->fwd = (struct hpu_graphed_part){
		.in_name = "inputs", .out_name = "outputs",
		.num_in = c->num_inputs, .num_out = c->num_outputs,
		.in = g->t, .out = g->t + c->num_inputs,
	};
	g->bwd = (struct hpu_graphed_part){
		.in_name = "grad_outputs", .out_name = "grad_inputs",
		.num_in = c->num_outputs, .num_out = c->num_grad_inputs,
		.in = g->fwd.out + c->num_outputs, .out = g->fwd.out + 2 * c->num_outputs,
	};
	*gp = g;
	return 0;
}

void hpu_graphed_destroy(struct hpu_graphed *g)
{
	size_t i;

	if (!g)
		return;
	/* The graphs hold the memory of the static tensors: either may go first. */
	hpu_graph_destroy(g->fwd.graph);
	hpu_graph_destroy(g->bwd.graph);
	for (i = 0; i < g->num_tensors; i++)
		hpu_tensor_destroy(g->t[i]);
	free(g);
}

/* Calls fn and checks it made its num_out outputs. */
static int hpu_graphed_call(hpu_callable_fn fn, void *ctx, struct hpu_stream *s,
			    struct hpu_tensor *const *in, struct hpu_tensor **out,
			    unsigned int num_out, const char *what)
{
	unsigned int i;
	int ret = fn(ctx, s, in, out);

	if (ret)
		return ret;
	for (i = 0; i < num_out; i++)
		if (!out[i])
			return hpu_error_set(EINVAL, "the %s returned 0 but made no output %u", what, i);
	return 0;
}

/* One eager forward and backward; what they return is dropped. */
static int hpu_graphed_warmup(struct hpu_graphed *g, struct hpu_stream *s,
			      const struct hpu_graphed_config *c)
{
	size_t n = 2 * (size_t)c->num_outputs + c->num_grad_inputs;
	struct hpu_tensor **out = calloc(n ? n : 1, sizeof(*out));
	struct hpu_tensor **grad = out + c->num_outputs, **grad_in = grad + c->num_outputs;
	unsigned int i;
	int ret;

	if (!out)
		return hpu_error_set(ENOMEM, "out of memory");
	ret = hpu_graphed_call(c->forward, c->ctx, s, g->fwd.in, out, c->num_outputs, "forward");
	if (!ret && c->backward) {
		ret = hpu_tensors_like(s->dev, c->num_outputs, out, grad);
		for (i = 0; i < c->num_outputs && !ret; i++)
			ret = hpu_op_fill(s, grad[i], 0);
		if (!ret)
			ret = hpu_graphed_call(c->backward, c->ctx, s, grad, grad_in,
					       c->num_grad_inputs, "backward");
	}
	for (i = 0; i < n; i++)
		hpu_tensor_destroy(out[i]);
	free(out);
	return ret;
}

/*
 * Captures fn into p's graph.  If fn fails, the graph is left capturing:
 * destroying it ends the capture without compiling what fn recorded.
 */
static int hpu_graphed_capture(struct hpu_graphed_part *p, struct hpu_stream *s,
			       hpu_callable_fn fn, void *ctx, const char *what)
{
	int ret = hpu_graph_create(s->dev, &p->graph);

	if (!ret)
		ret = hpu_graph_capture_begin(p->graph, s);
	if (!ret)
		ret = hpu_graphed_call(fn, ctx, s, p->in, p->out, p->num_out, what);
	if (!ret)
		ret = hpu_graph_capture_end(p->graph);
	return ret;
}

static int hpu_graphed_build(struct hpu_graphed *g, struct hpu_stream *s,
			     const struct hpu_graphed_config *c, struct hpu_tensor *const *sample)
{
	unsigned int i;
	int ret;

	ret = hpu_tensors_like(s->dev, c->num_inputs, sample, g->fwd.in);
	if (!ret)
		ret = hpu_tensors_copy(s, c->num_inputs, g->fwd.in, sample);
	for (i = 0; i < c->warmup && !ret; i++)
		ret = hpu_graphed_warmup(g, s, c);
	if (!ret)
		ret = hpu_graphed_capture(&g->fwd, s, c->forward, c->ctx, "forward");
	if (!ret && c->backward) {
		ret = hpu_tensors_like(s->dev, c->num_outputs, g->fwd.out, g->bwd.in);
		if (!ret)
			ret = hpu_graphed_capture(&g->bwd, s, c->backward, c->ctx, "backward");
	}
	if (!ret)
		ret = hpu_stream_synchronize(s);
	return ret;
}

int hpu_make_graphed_callable(struct hpu_stream *stream, const struct hpu_graphed_config *config,
			      struct hpu_tensor *const *sample_inputs,
			      struct hpu_graphed **graphedp)
{
	struct hpu_graphed *g = NULL;
	int ret;

	if (!graphedp)
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "graphedp is NULL"));
	*graphedp = NULL;
	ret = hpu_graphed_config_check(stream, config, sample_inputs);
	if (!ret)
		ret = hpu_graphed_new(config, &g);
	if (!ret)
		ret = hpu_graphed_build(g, stream, config, sample_inputs);
	if (ret) {
		hpu_graphed_destroy(g);
		return hpu_error_in(__func__, ret);
	}
	*graphedp = g;
	return 0;
}

/* in[i] has static input i's dtype and shape. */
static int hpu_graphed_input_check(const struct hpu_graphed_part *p, unsigned int i,
				   const struct hpu_tensor *in)
{
	const struct hpu_tensor_layout *want = &p->in[i]->l;
	char got_s[96], want_s[96];

	if (!in)
		return hpu_error_set(EINVAL, "%s[%u] is NULL", p->in_name, i);
	if (in->l.dtype == want->dtype && in->l.ndim == want->ndim &&
	    !memcmp(in->l.shape, want->shape, want->ndim * sizeof(want->shape[0])))
		return 0;
	return hpu_error_set(EINVAL, "%s[%u] is %s %s, its static input %s %s", p->in_name, i,
			     hpu_dt_name(in->l.dtype),
			     hpu_shape_str(in->l.ndim, in->l.shape, got_s, sizeof(got_s)),
			     hpu_dt_name(want->dtype),
			     hpu_shape_str(want->ndim, want->shape, want_s, sizeof(want_s)));
}

/* Copies in[] into p's static inputs, replays p and hands out its static outputs. */
static int hpu_graphed_run(struct hpu_graphed_part *p, struct hpu_stream *s,
			   struct hpu_tensor *const *in, struct hpu_tensor **out)
{
	unsigned int i;
	int ret = 0;

	if (!s)
		return hpu_error_set(EINVAL, "stream is NULL");
	if (p->num_in && !in)
		return hpu_error_set(EINVAL, "%s is NULL", p->in_name);
	if (p->num_out && !out)
		return hpu_error_set(EINVAL, "%s is NULL", p->out_name);
	/* All checked before anything is enqueued. */
	for (i = 0; i < p->num_in && !ret; i++)
		ret = hpu_graphed_input_check(p, i, in[i]);
	if (!ret)
		ret = hpu_tensors_copy(s, p->num_in, p->in, in);
	if (!ret)
		ret = hpu_graph_replay(p->graph, s);
	if (!ret && p->num_out)
		memcpy(out, p->out, p->num_out * sizeof(*out));
	return ret;
}

int hpu_graphed_forward(struct hpu_graphed *graphed, struct hpu_stream *stream,
			struct hpu_tensor *const *inputs, struct hpu_tensor **outputs)
{
	if (!graphed)
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "graphed is NULL"));
	return hpu_error_in(__func__, hpu_graphed_run(&graphed->fwd, stream, inputs, outputs));
}

int hpu_graphed_backward(struct hpu_graphed *graphed, struct hpu_stream *stream,
			 struct hpu_tensor *const *grad_outputs, struct hpu_tensor **grad_inputs)
{
	if (!graphed || !graphed->bwd.graph)
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "%s",
							    graphed ? "the callable has no backward"
								    : "graphed is NULL"));
	return hpu_error_in(__func__, hpu_graphed_run(&graphed->bwd, stream, grad_outputs,
						      grad_inputs));
}
