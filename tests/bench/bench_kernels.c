// SPDX-License-Identifier: MIT
/*
 * bench-kernels: the device's elementwise tensor kernels on 2^20 elements,
 * timed on the device (events around each launch, the least of the
 * rounds): with every operand packed, the typed loop the compiler made
 * vector code of, against the same launch on views with every row
 * reversed (stride -1: the same memory in the same order of lines, but
 * not packed), which walk element by element (hdm_kwalk(),
 * ARCHITECTURE.md).  The two layouts take turns, so the host's load weighs
 * on both alike.
 *   kernel_<name>_ns_per_element   packed operands
 *   kernel_<name>_packed_speedup   reversed ÷ packed time
 */
#include <stdio.h>
#include <stdlib.h>

#include <hpu/hpu.h>
#include <hpu/hpu_tensor.h>

enum { SIDE = 1024, ROUNDS = 7, OPERANDS = 5, MASK = 4 };

enum kernel { ADADELTA, RELU_BWD, DROPOUT, DROPOUT_BWD, KERNELS };

static const char *const names[KERNELS] = { "adadelta", "relu_bwd", "dropout", "dropout_bwd" };

static void check(int ret, const char *what)
{
	if (ret < 0) {
		fprintf(stderr, "bench-kernels: %s: %s (%d)\n", what, hpu_last_error(), ret);
		exit(1);
	}
}

/*
 * One layout's operands, four fp32 and a U8 mask: t[] as launched (the
 * tensors, or views of them with each row reversed), owned[] to free.
 */
struct operands {
	struct hpu_tensor *owned[OPERANDS], *t[OPERANDS], *rng;
};

static void operands_init(struct hpu_device *dev, struct hpu_stream *s, bool flipped,
			  struct operands *o)
{
	const int64_t shape[2] = { SIDE, SIDE };
	struct hpu_tensor_layout l = { .ndim = 2, .shape = { SIDE, SIDE }, .strides = { SIDE, -1 },
				       .offset = SIDE - 1 };
	int i;

	for (i = 0; i < OPERANDS; i++) {
		check(hpu_tensor_empty(dev, i == MASK ? HPU_DT_U8 : HPU_DT_F32, 2, shape,
				       &o->owned[i]), "tensor");
		check(hpu_op_fill(s, o->owned[i], i == MASK ? 1 : 0.25 * (i + 1)), "fill");
		o->t[i] = o->owned[i];
		l.dtype = i == MASK ? HPU_DT_U8 : HPU_DT_F32;
		if (flipped)
			check(hpu_tensor_as_strided(o->owned[i], &l, &o->t[i]), "as_strided");
	}
	check(hpu_tensor_empty(dev, HPU_DT_I64, 1, (int64_t[]){ 2 }, &o->rng), "tensor");
	check(hpu_op_fill(s, o->rng, 7), "fill");
}

static void operands_fini(struct operands *o)
{
	for (int i = 0; i < OPERANDS; i++) {
		if (o->t[i] != o->owned[i])
			hpu_tensor_destroy(o->t[i]);
		hpu_tensor_destroy(o->owned[i]);
	}
	hpu_tensor_destroy(o->rng);
}

static void launch(struct hpu_stream *s, enum kernel k, struct operands *o)
{
	static const struct hpu_adadelta_config ada = { .lr = 0.1, .rho = 0.9, .eps = 1e-6 };
	struct hpu_tensor **t = o->t;

	switch (k) {
	case ADADELTA:
		check(hpu_op_adadelta(s, t[0], t[1], t[2], t[3], &ada), "adadelta");
		break;
	case RELU_BWD:
		check(hpu_op_relu_backward(s, t[0], t[1], t[2]), "relu_backward");
		break;
	case DROPOUT:
		check(hpu_op_dropout(s, t[0], t[MASK], t[1], o->rng, 0.5), "dropout");
		break;
	case DROPOUT_BWD:
		check(hpu_op_dropout_backward(s, t[0], t[1], t[MASK], 0.5), "dropout_backward");
		break;
	default:
		break;
	}
}

/* Device time of one launch. */
static double timed(struct hpu_stream *s, struct hpu_event *ev[2], enum kernel k,
		    struct operands *o)
{
	int64_t ns;

	check(hpu_event_record(ev[0], s), "record");
	launch(s, k, o);
	check(hpu_event_record(ev[1], s), "record");
	check(hpu_event_synchronize(ev[1]), "synchronize");
	check(hpu_event_elapsed_time(ev[0], ev[1], &ns), "elapsed");
	return (double)ns;
}

int main(void)
{
	struct operands o[2];
	struct hpu_event *ev[2];
	struct hpu_device *dev;
	struct hpu_stream *s;
	int k, r, l;

	check(hpu_device_open(0, &dev), "open");
	check(hpu_stream_create(dev, &s), "stream");
	for (l = 0; l < 2; l++)
		operands_init(dev, s, l, &o[l]);
	for (l = 0; l < 2; l++)
		check(hpu_event_create(dev, &ev[l]), "event");
	for (k = 0; k < KERNELS; k++) {
		double best[2] = { 1e30, 1e30 };

		for (l = 0; l < 2; l++)
			launch(s, k, &o[l]);
		for (r = 0; r < ROUNDS; r++) {
			for (l = 0; l < 2; l++) {
				double t = timed(s, ev, k, &o[l]);

				if (t < best[l])
					best[l] = t;
			}
		}
		printf("BENCH kernel_%s_ns_per_element %.2f ns\n", names[k],
		       best[0] / (SIDE * SIDE));
		printf("BENCH kernel_%s_packed_speedup %.2f ratio\n", names[k], best[1] / best[0]);
		fflush(stdout);
	}
	for (l = 0; l < 2; l++) {
		hpu_event_destroy(ev[l]);
		operands_fini(&o[l]);
	}
	hpu_stream_destroy(s);
	hpu_device_close(dev);
	return 0;
}
