/* SPDX-License-Identifier: MIT */
/*
 * Moves a buffer through the device and back: host to device, device to
 * device, device to host, then checks the bytes and prints each copy's
 * bandwidth as the device timed it (events) and as the host saw it.
 *
 *   hpu_copy [-d INDEX] [-s SIZE] [-p]
 *     -s SIZE  bytes, with an optional K, M or G suffix (default 64M)
 *     -p       use pageable host memory (staged by libhpu) instead of pinned
 *
 * Build against an installed libhpu with:
 *   cc hpu_copy.c $(pkg-config --cflags --libs hpu) -o hpu_copy
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hpu/hpu.h>

struct copy_ctx {
	struct hpu_device *dev;
	struct hpu_stream *stream;
	struct hpu_event *start, *end;
	size_t size;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int fail(const char *what)
{
	fprintf(stderr, "hpu_copy: %s: %s\n", what, hpu_last_error());
	return 1;
}

static int parse_size(const char *arg, size_t *size)
{
	char *end;
	unsigned long long v = strtoull(arg, &end, 0);

	switch (*end) {
	case 'G':
		v <<= 10;
		/* fall through */
	case 'M':
		v <<= 10;
		/* fall through */
	case 'K':
		v <<= 10;
		end++;
		break;
	}
	if (end == arg || *end || !v)
		return -1;
	*size = v;
	return 0;
}

/* Times one copy between two events on the stream; the copy is given as an enqueue callback. */
static int timed(struct copy_ctx *c, const char *name, int (*enqueue)(struct copy_ctx *, void *),
		 void *arg)
{
	double t0, t1;
	int64_t ns;

	t0 = now_s();
	if (hpu_event_record(c->start, c->stream) || enqueue(c, arg) ||
	    hpu_event_record(c->end, c->stream) || hpu_event_synchronize(c->end))
		return fail(name);
	t1 = now_s();
	if (hpu_event_elapsed_time(c->start, c->end, &ns))
		return fail(name);
	printf("%s: %zu bytes, device %.3f ms (%.1f MB/s), host %.3f ms (%.1f MB/s)\n", name,
	       c->size, ns / 1e6, ns ? c->size * 1e3 / ns : 0.0, (t1 - t0) * 1e3,
	       c->size / (t1 - t0) / 1e6);
	return 0;
}

struct copy_args {
	void *host;
	uint64_t a, b;
};

static int h2d(struct copy_ctx *c, void *arg)
{
	struct copy_args *x = arg;

	return hpu_memcpy_h2d_async(c->stream, x->a, x->host, c->size);
}

static int d2d(struct copy_ctx *c, void *arg)
{
	struct copy_args *x = arg;

	return hpu_memcpy_d2d_async(c->stream, x->b, x->a, c->size);
}

static int d2h(struct copy_ctx *c, void *arg)
{
	struct copy_args *x = arg;

	return hpu_memcpy_d2h_async(c->stream, x->host, x->b, c->size);
}

static int run(struct copy_ctx *c, int pageable)
{
	struct copy_args x = { 0 };
	unsigned char *src;
	size_t i;
	int ret = 1;

	src = malloc(c->size);
	if (!src) {
		fprintf(stderr, "hpu_copy: out of memory\n");
		return 1;
	}
	for (i = 0; i < c->size; i++)
		src[i] = (unsigned char)(i * 7 + (i >> 12));
	if (pageable) {
		x.host = malloc(c->size);
		if (!x.host) {
			fprintf(stderr, "hpu_copy: out of memory\n");
			free(src);
			return 1;
		}
	} else if (hpu_host_alloc(c->dev, c->size, &x.host)) {
		free(src);
		return fail("hpu_host_alloc");
	}
	memcpy(x.host, src, c->size);
	if (hpu_mem_alloc(c->dev, c->size, &x.a) || hpu_mem_alloc(c->dev, c->size, &x.b)) {
		fail("hpu_mem_alloc");
		goto out;
	}
	if (timed(c, "h2d", h2d, &x) || timed(c, "d2d", d2d, &x))
		goto out;
	memset(x.host, 0, c->size);
	if (timed(c, "d2h", d2h, &x))
		goto out;
	if (memcmp(x.host, src, c->size)) {
		for (i = 0; ((unsigned char *)x.host)[i] == src[i]; i++)
			;
		fprintf(stderr, "hpu_copy: data differs at byte %zu\n", i);
		goto out;
	}
	printf("data ok\n");
	ret = 0;
out:
	hpu_mem_free(c->dev, x.a);
	hpu_mem_free(c->dev, x.b);
	if (pageable)
		free(x.host);
	else
		hpu_host_free(c->dev, x.host);
	free(src);
	return ret;
}

int main(int argc, char **argv)
{
	struct copy_ctx c = { .size = 64 << 20 };
	unsigned int index = 0;
	int opt, pageable = 0, ret;

	while ((opt = getopt(argc, argv, "d:s:p")) != -1) {
		switch (opt) {
		case 'd':
			index = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'p':
			pageable = 1;
			break;
		case 's':
			if (parse_size(optarg, &c.size) == 0)
				break;
			/* fall through */
		default:
			fprintf(stderr, "usage: hpu_copy [-d INDEX] [-s SIZE[K|M|G]] [-p]\n");
			return 2;
		}
	}
	if (hpu_device_open(index, &c.dev))
		return fail("hpu_device_open");
	if (hpu_stream_create(c.dev, &c.stream) || hpu_event_create(c.dev, &c.start) ||
	    hpu_event_create(c.dev, &c.end))
		ret = fail("setup");
	else
		ret = run(&c, pageable);
	hpu_event_destroy(c.start);
	hpu_event_destroy(c.end);
	hpu_stream_destroy(c.stream);
	hpu_device_close(c.dev);
	return ret;
}
