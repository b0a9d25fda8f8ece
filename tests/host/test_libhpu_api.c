/* SPDX-License-Identifier: MIT */
/*
 * Host unit test of libhpu: everything that needs no device.  Discovery on a
 * machine without hpu finds nothing, bad arguments fail with -errno and a
 * message naming the call, messages are per thread, the library exports
 * exactly its API, and the public structs keep their layout.  Prints TAP.
 *
 * Links against the built libhpu.so (make -C userspace test).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hpu/hpu.h>
#include <hpu/hpu_tensor.h>
#include <hpu/hpu_graph.h>

#include "test_libhpu_tap.h"

static void test_version(void)
{
	struct hpu_version v = hpu_version();

	EXPECT(v.major == HPU_VERSION_MAJOR);
	EXPECT(v.minor == HPU_VERSION_MINOR);
	EXPECT(v.patch == HPU_VERSION_PATCH);
}

static bool hpu_present(void)
{
	unsigned int count = 0;

	if (hpu_device_count(&count) == 0 && count == 0)
		return false;
	test_skip = "an hpu device is present (or discovery failed)";
	return true;
}

static void test_discovery_finds_nothing(void)
{
	struct hpu_device_desc descs[2];
	unsigned int count = 7;

	if (hpu_present())
		return;
	EXPECT(hpu_device_list(descs, ARRAY_SIZE(descs), &count) == 0);
	EXPECT(count == 0);
	EXPECT(hpu_device_list(NULL, 0, &count) == 0);
	EXPECT(count == 0);
}

static void test_open_absent_index(void)
{
	struct hpu_device *dev = (struct hpu_device *)&dev;

	if (hpu_present())
		return;
	EXPECT(hpu_device_open(3, &dev) == -ENODEV);
	EXPECT(dev == NULL);
	/* The count may be followed by nodes that could not be opened. */
	EXPECT_PREFIX(hpu_last_error(), "hpu_device_open: no hpu device 3 (0 found");
}

/* Each call fails before it touches a device. */
static unsigned int out_count;
static struct hpu_device_desc out_desc;
static struct hpu_device *out_dev;
static struct hpu_device_info out_info = { .size = sizeof(out_info) };
static char long_path[HPU_PATH_MAX + 1];

static int count_null(void)
{
	return hpu_device_count(NULL);
}

static int list_null_descs(void)
{
	return hpu_device_list(NULL, 1, &out_count);
}

static int list_null_count(void)
{
	return hpu_device_list(&out_desc, 1, NULL);
}

static int open_null_devp(void)
{
	return hpu_device_open(0, NULL);
}

static int open_path_null_path(void)
{
	return hpu_device_open_path(NULL, &out_dev);
}

static int open_path_null_devp(void)
{
	return hpu_device_open_path("/dev/null", NULL);
}

static int open_path_missing(void)
{
	return hpu_device_open_path("/nonexistent/renderD128", &out_dev);
}

static int open_path_not_drm(void)
{
	return hpu_device_open_path("/dev/null", &out_dev);
}

static int open_path_too_long(void)
{
	memset(long_path, 'a', sizeof(long_path) - 1);
	return hpu_device_open_path(long_path, &out_dev);
}

static int get_info_null_dev(void)
{
	return hpu_device_get_info(NULL, &out_info);
}

/* 0.2: each call checks its handle before anything else. */
static struct hpu_device_stats out_stats = { .size = sizeof(out_stats) };
static struct hpu_mem_stats out_mem_stats = { .size = sizeof(out_mem_stats) };
static struct hpu_stream *out_stream;
static struct hpu_event *out_event;
static uint64_t out_devptr;
static int64_t out_ns;
static char buf[64];

static int get_stats_null_dev(void)
{
	return hpu_device_get_stats(NULL, &out_stats);
}

static int synchronize_null_dev(void)
{
	return hpu_device_synchronize(NULL);
}

static int mem_alloc_null_dev(void)
{
	return hpu_mem_alloc(NULL, 1, &out_devptr);
}

static int mem_free_null_dev(void)
{
	return hpu_mem_free(NULL, 0x1000);
}

static int mem_empty_cache_null_dev(void)
{
	return hpu_mem_empty_cache(NULL);
}

static int mem_get_stats_null_dev(void)
{
	return hpu_mem_get_stats(NULL, &out_mem_stats);
}

static int host_alloc_null_dev(void)
{
	void *p;

	return hpu_host_alloc(NULL, 1, &p);
}

static int host_free_null_dev(void)
{
	return hpu_host_free(NULL, buf);
}

static int host_register_null_dev(void)
{
	return hpu_host_register(NULL, buf, sizeof(buf));
}

static int host_unregister_null_dev(void)
{
	return hpu_host_unregister(NULL, buf);
}

static int host_device_pointer_null_dev(void)
{
	return hpu_host_get_device_pointer(NULL, buf, &out_devptr);
}

static int host_is_pinned_null_dev(void)
{
	return hpu_host_is_pinned(NULL, buf, sizeof(buf));
}

static int stream_create_null_dev(void)
{
	return hpu_stream_create(NULL, &out_stream);
}

static int stream_create_null_streamp(void)
{
	return hpu_stream_create(NULL, NULL);
}

static int stream_synchronize_null(void)
{
	return hpu_stream_synchronize(NULL);
}

static int stream_query_null(void)
{
	return hpu_stream_query(NULL);
}

static int h2d_async_null_stream(void)
{
	return hpu_memcpy_h2d_async(NULL, 0x1000, buf, sizeof(buf));
}

static int d2h_async_null_stream(void)
{
	return hpu_memcpy_d2h_async(NULL, buf, 0x1000, sizeof(buf));
}

static int d2d_async_null_stream(void)
{
	return hpu_memcpy_d2d_async(NULL, 0x1000, 0x2000, sizeof(buf));
}

static int memset_async_null_stream(void)
{
	return hpu_memset_async(NULL, 0x1000, 0, sizeof(buf));
}

static int h2d_null_dev(void)
{
	return hpu_memcpy_h2d(NULL, 0x1000, buf, sizeof(buf));
}

static int d2h_null_dev(void)
{
	return hpu_memcpy_d2h(NULL, buf, 0x1000, sizeof(buf));
}

static int d2d_null_dev(void)
{
	return hpu_memcpy_d2d(NULL, 0x1000, 0x2000, sizeof(buf));
}

static int memset_null_dev(void)
{
	return hpu_memset(NULL, 0x1000, 0, sizeof(buf));
}

static int event_create_null_dev(void)
{
	return hpu_event_create(NULL, &out_event);
}

static int event_create_null_eventp(void)
{
	return hpu_event_create(NULL, NULL);
}

static int event_record_null(void)
{
	return hpu_event_record(NULL, NULL);
}

static int event_synchronize_null(void)
{
	return hpu_event_synchronize(NULL);
}

static int event_query_null(void)
{
	return hpu_event_query(NULL);
}

static int event_elapsed_null(void)
{
	return hpu_event_elapsed_time(NULL, NULL, &out_ns);
}

static int stream_wait_event_null(void)
{
	return hpu_stream_wait_event(NULL, NULL);
}

/* The handle output a failing call must set to NULL. */
enum clears { CLEARS_NONE, CLEARS_DEV, CLEARS_STREAM, CLEARS_EVENT };

/* message: what hpu_last_error() starts with. */
static const struct {
	const char *name;
	int (*call)(void);
	int ret;
	const char *message;
	enum clears clears;
} failures[] = {
	{ "hpu_device_count(NULL)", count_null, -EINVAL,
	  "hpu_device_count: count is NULL", CLEARS_NONE },
	{ "hpu_device_list(NULL, 1, &n)", list_null_descs, -EINVAL,
	  "hpu_device_list: descs is NULL but capacity is 1", CLEARS_NONE },
	{ "hpu_device_list(d, 1, NULL)", list_null_count, -EINVAL,
	  "hpu_device_list: count is NULL", CLEARS_NONE },
	{ "hpu_device_open(0, NULL)", open_null_devp, -EINVAL, "hpu_device_open: devp is NULL",
	  CLEARS_NONE },
	{ "hpu_device_open_path(NULL, &dev)", open_path_null_path, -EINVAL,
	  "hpu_device_open_path: path is NULL", CLEARS_DEV },
	{ "hpu_device_open_path(path, NULL)", open_path_null_devp, -EINVAL,
	  "hpu_device_open_path: devp is NULL", CLEARS_NONE },
	{ "hpu_device_open_path(missing node)", open_path_missing, -ENOENT,
	  "hpu_device_open_path: cannot open /nonexistent/renderD128: No such file or directory",
	  CLEARS_DEV },
	{ "hpu_device_open_path(/dev/null)", open_path_not_drm, -ENODEV,
	  "hpu_device_open_path: /dev/null is not a DRM device node", CLEARS_DEV },
	{ "hpu_device_open_path(too long)", open_path_too_long, -ENAMETOOLONG,
	  "hpu_device_open_path: path longer than 127 bytes: aaaa", CLEARS_DEV },
	{ "hpu_device_get_info(NULL, &info)", get_info_null_dev, -EINVAL,
	  "hpu_device_get_info: dev is NULL", CLEARS_NONE },
	{ "hpu_device_get_stats(NULL, &stats)", get_stats_null_dev, -EINVAL,
	  "hpu_device_get_stats: dev is NULL", CLEARS_NONE },
	{ "hpu_device_synchronize(NULL)", synchronize_null_dev, -EINVAL,
	  "hpu_device_synchronize: dev is NULL", CLEARS_NONE },
	{ "hpu_mem_alloc(NULL, 1, &p)", mem_alloc_null_dev, -EINVAL, "hpu_mem_alloc: dev is NULL",
	  CLEARS_NONE },
	{ "hpu_mem_free(NULL, p)", mem_free_null_dev, -EINVAL,
	  "hpu_mem_free: dev is NULL", CLEARS_NONE },
	{ "hpu_mem_empty_cache(NULL)", mem_empty_cache_null_dev, -EINVAL,
	  "hpu_mem_empty_cache: dev is NULL", CLEARS_NONE },
	{ "hpu_mem_get_stats(NULL, &stats)", mem_get_stats_null_dev, -EINVAL,
	  "hpu_mem_get_stats: dev is NULL", CLEARS_NONE },
	{ "hpu_host_alloc(NULL, 1, &p)", host_alloc_null_dev, -EINVAL,
	  "hpu_host_alloc: dev is NULL", CLEARS_NONE },
	{ "hpu_host_free(NULL, p)", host_free_null_dev, -EINVAL, "hpu_host_free: dev is NULL",
	  CLEARS_NONE },
	{ "hpu_host_register(NULL, p, n)", host_register_null_dev, -EINVAL,
	  "hpu_host_register: dev is NULL", CLEARS_NONE },
	{ "hpu_host_unregister(NULL, p)", host_unregister_null_dev, -EINVAL,
	  "hpu_host_unregister: dev is NULL", CLEARS_NONE },
	{ "hpu_host_get_device_pointer(NULL, p, &d)", host_device_pointer_null_dev, -EINVAL,
	  "hpu_host_get_device_pointer: dev is NULL", CLEARS_NONE },
	{ "hpu_host_is_pinned(NULL, p, n)", host_is_pinned_null_dev, -EINVAL,
	  "hpu_host_is_pinned: dev is NULL", CLEARS_NONE },
	{ "hpu_stream_create(NULL, &s)", stream_create_null_dev, -EINVAL,
	  "hpu_stream_create: dev is NULL", CLEARS_STREAM },
	{ "hpu_stream_create(NULL, NULL)", stream_create_null_streamp, -EINVAL,
	  "hpu_stream_create: streamp is NULL", CLEARS_NONE },
	{ "hpu_stream_synchronize(NULL)", stream_synchronize_null, -EINVAL,
	  "hpu_stream_synchronize: stream is NULL", CLEARS_NONE },
	{ "hpu_stream_query(NULL)", stream_query_null, -EINVAL,
	  "hpu_stream_query: stream is NULL", CLEARS_NONE },
	{ "hpu_memcpy_h2d_async(NULL, ...)", h2d_async_null_stream, -EINVAL,
	  "hpu_memcpy_h2d_async: stream is NULL", CLEARS_NONE },
	{ "hpu_memcpy_d2h_async(NULL, ...)", d2h_async_null_stream, -EINVAL,
	  "hpu_memcpy_d2h_async: stream is NULL", CLEARS_NONE },
	{ "hpu_memcpy_d2d_async(NULL, ...)", d2d_async_null_stream, -EINVAL,
	  "hpu_memcpy_d2d_async: stream is NULL", CLEARS_NONE },
	{ "hpu_memset_async(NULL, ...)", memset_async_null_stream, -EINVAL,
	  "hpu_memset_async: stream is NULL", CLEARS_NONE },
	{ "hpu_memcpy_h2d(NULL, ...)", h2d_null_dev, -EINVAL, "hpu_memcpy_h2d: dev is NULL",
	  CLEARS_NONE },
	{ "hpu_memcpy_d2h(NULL, ...)", d2h_null_dev, -EINVAL, "hpu_memcpy_d2h: dev is NULL",
	  CLEARS_NONE },
	{ "hpu_memcpy_d2d(NULL, ...)", d2d_null_dev, -EINVAL, "hpu_memcpy_d2d: dev is NULL",
	  CLEARS_NONE },
	{ "hpu_memset(NULL, ...)", memset_null_dev, -EINVAL,
	  "hpu_memset: dev is NULL", CLEARS_NONE },
	{ "hpu_event_create(NULL, &e)", event_create_null_dev, -EINVAL,
	  "hpu_event_create: dev is NULL", CLEARS_EVENT },
	{ "hpu_event_create(NULL, NULL)", event_create_null_eventp, -EINVAL,
	  "hpu_event_create: eventp is NULL", CLEARS_NONE },
	{ "hpu_event_record(NULL, NULL)", event_record_null, -EINVAL,
	  "hpu_event_record: event is NULL", CLEARS_NONE },
	{ "hpu_event_synchronize(NULL)", event_synchronize_null, -EINVAL,
	  "hpu_event_synchronize: event is NULL", CLEARS_NONE },
	{ "hpu_event_query(NULL)", event_query_null, -EINVAL, "hpu_event_query: event is NULL",
	  CLEARS_NONE },
	{ "hpu_event_elapsed_time(NULL, NULL, &ns)", event_elapsed_null, -EINVAL,
	  "hpu_event_elapsed_time: start is NULL", CLEARS_NONE },
	{ "hpu_stream_wait_event(NULL, NULL)", stream_wait_event_null, -EINVAL,
	  "hpu_stream_wait_event: event is NULL", CLEARS_NONE },
};

static void test_failure(size_t i)
{
	out_dev = (struct hpu_device *)&out_dev;
	out_stream = (struct hpu_stream *)&out_stream;
	out_event = (struct hpu_event *)&out_event;
	EXPECT(failures[i].call() == failures[i].ret);
	EXPECT_PREFIX(hpu_last_error(), failures[i].message);
	if (failures[i].clears == CLEARS_DEV)
		EXPECT(out_dev == NULL);
	if (failures[i].clears == CLEARS_STREAM)
		EXPECT(out_stream == NULL);
	if (failures[i].clears == CLEARS_EVENT)
		EXPECT(out_event == NULL);
}

/* hpu_device_close(), hpu_stream_destroy() and hpu_event_destroy() */
static void test_close_null(void)
{
	hpu_device_close(NULL);
	hpu_stream_destroy(NULL);
	hpu_event_destroy(NULL);
}

/* Like free(NULL), whatever the device argument. */
static void test_free_null(void)
{
	EXPECT(hpu_mem_free(NULL, 0) == -EINVAL);
	EXPECT(hpu_host_free(NULL, NULL) == 0);
}

struct thread_errors {
	char initial[256]; /* hpu_last_error() of a fresh thread */
	char own[256];     /* after a failure in that thread */
};

static void *thread_fail(void *arg)
{
	struct thread_errors *seen = arg;

	snprintf(seen->initial, sizeof(seen->initial), "%s", hpu_last_error());
	hpu_device_open(0, NULL);
	snprintf(seen->own, sizeof(seen->own), "%s", hpu_last_error());
	return NULL;
}

static void test_error_is_per_thread(void)
{
	struct thread_errors seen;
	pthread_t thread;

	EXPECT(hpu_device_count(NULL) == -EINVAL);
	EXPECT(pthread_create(&thread, NULL, thread_fail, &seen) == 0);
	EXPECT(pthread_join(thread, NULL) == 0);
	EXPECT(seen.initial[0] == '\0');
	EXPECT_STR(seen.own, "hpu_device_open: devp is NULL");
	EXPECT_STR(hpu_last_error(), "hpu_device_count: count is NULL");
}

/* Naming each function makes the compiler check that the header declares it. */
#define API(node, fn) { #fn, node, (void (*)(void))fn }

static const struct {
	const char *name;
	const char *node; /* version node it is exported under */
	void (*fn)(void);
} api[] = {
	API("HPU_0.1", hpu_version),
	API("HPU_0.1", hpu_last_error),
	API("HPU_0.1", hpu_device_count),
	API("HPU_0.1", hpu_device_list),
	API("HPU_0.1", hpu_device_open),
	API("HPU_0.1", hpu_device_open_path),
	API("HPU_0.1", hpu_device_close),
	API("HPU_0.1", hpu_device_get_info),
	API("HPU_0.2", hpu_device_get_stats),
	API("HPU_0.2", hpu_device_synchronize),
	API("HPU_0.2", hpu_mem_alloc),
	API("HPU_0.2", hpu_mem_free),
	API("HPU_0.2", hpu_mem_empty_cache),
	API("HPU_0.2", hpu_mem_get_stats),
	API("HPU_0.2", hpu_host_alloc),
	API("HPU_0.2", hpu_host_free),
	API("HPU_0.2", hpu_host_register),
	API("HPU_0.2", hpu_host_unregister),
	API("HPU_0.2", hpu_host_get_device_pointer),
	API("HPU_0.2", hpu_stream_create),
	API("HPU_0.2", hpu_stream_destroy),
	API("HPU_0.2", hpu_stream_synchronize),
	API("HPU_0.2", hpu_stream_query),
	API("HPU_0.2", hpu_stream_wait_event),
	API("HPU_0.2", hpu_memcpy_h2d_async),
	API("HPU_0.2", hpu_memcpy_d2h_async),
	API("HPU_0.2", hpu_memcpy_d2d_async),
	API("HPU_0.2", hpu_memset_async),
	API("HPU_0.2", hpu_memcpy_h2d),
	API("HPU_0.2", hpu_memcpy_d2h),
	API("HPU_0.2", hpu_memcpy_d2d),
	API("HPU_0.2", hpu_memset),
	API("HPU_0.2", hpu_event_create),
	API("HPU_0.2", hpu_event_destroy),
	API("HPU_0.2", hpu_event_record),
	API("HPU_0.2", hpu_event_synchronize),
	API("HPU_0.2", hpu_event_query),
	API("HPU_0.2", hpu_event_elapsed_time),
	API("HPU_0.3", hpu_dt_size),
	API("HPU_0.3", hpu_tensor_empty),
	API("HPU_0.3", hpu_tensor_destroy),
	API("HPU_0.3", hpu_tensor_get_layout),
	API("HPU_0.3", hpu_tensor_numel),
	API("HPU_0.3", hpu_tensor_device_pointer),
	API("HPU_0.3", hpu_tensor_view),
	API("HPU_0.3", hpu_tensor_permute),
	API("HPU_0.3", hpu_tensor_transpose),
	API("HPU_0.3", hpu_tensor_slice),
	API("HPU_0.3", hpu_tensor_expand),
	API("HPU_0.3", hpu_tensor_as_strided),
	API("HPU_0.3", hpu_tensor_copy_from_host),
	API("HPU_0.3", hpu_tensor_copy_to_host),
	API("HPU_0.3", hpu_op_unary),
	API("HPU_0.3", hpu_op_pow_scalar),
	API("HPU_0.3", hpu_op_binary),
	API("HPU_0.3", hpu_op_binary_scalar),
	API("HPU_0.3", hpu_op_add),
	API("HPU_0.3", hpu_op_where),
	API("HPU_0.3", hpu_op_fill),
	API("HPU_0.3", hpu_op_reduce),
	API("HPU_0.3", hpu_op_softmax),
	API("HPU_0.3", hpu_op_softmax_backward),
	API("HPU_0.3", hpu_op_nll_loss),
	API("HPU_0.3", hpu_op_nll_loss_backward),
	API("HPU_0.3", hpu_op_cross_entropy),
	API("HPU_0.3", hpu_op_cross_entropy_backward),
	API("HPU_0.3", hpu_op_dropout),
	API("HPU_0.3", hpu_op_dropout_backward),
	API("HPU_0.3", hpu_op_relu_backward),
	API("HPU_0.3", hpu_op_gelu_backward),
	API("HPU_0.3", hpu_op_layer_norm),
	API("HPU_0.3", hpu_op_layer_norm_backward),
	API("HPU_0.3", hpu_op_embedding),
	API("HPU_0.3", hpu_op_embedding_backward),
	API("HPU_0.3", hpu_op_matmul),
	API("HPU_0.3", hpu_op_linear),
	API("HPU_0.3", hpu_op_cumsum),
	API("HPU_0.3", hpu_op_sgd),
	API("HPU_0.3", hpu_op_adadelta),
	API("HPU_0.3", hpu_op_adamw),
	API("HPU_0.3", hpu_op_clip_grad_norm),
	API("HPU_0.3", hpu_fallback_count),
	API("HPU_0.3", hpu_fallback_total),
	API("HPU_0.3", hpu_fallback_set_strict),
	API("HPU_0.4", hpu_stream_set_lazy),
	API("HPU_0.4", hpu_stream_get_lazy),
	API("HPU_0.4", hpu_mark_step),
	API("HPU_0.4", hpu_stream_set_max_graph_ops),
	API("HPU_0.4", hpu_recipe_cache_set_capacity),
	API("HPU_0.4", hpu_metric_global),
	API("HPU_0.4", hpu_metric_value),
	API("HPU_0.4", hpu_metrics_dump_json),
	API("HPU_0.5", hpu_graph_create),
	API("HPU_0.5", hpu_graph_destroy),
	API("HPU_0.5", hpu_graph_capture_begin),
	API("HPU_0.5", hpu_graph_capture_end),
	API("HPU_0.5", hpu_graph_replay),
	API("HPU_0.5", hpu_graph_get_info),
	API("HPU_0.5", hpu_make_graphed_callable),
	API("HPU_0.5", hpu_graphed_forward),
	API("HPU_0.5", hpu_graphed_backward),
	API("HPU_0.5", hpu_graphed_destroy),
	API("HPU_0.5", hpu_module_cacher_create),
	API("HPU_0.5", hpu_module_cacher_call),
	API("HPU_0.5", hpu_module_cacher_get_stats),
	API("HPU_0.5", hpu_module_cacher_destroy),
	API("HPU_0.5", hpu_bucket_size),
	API("HPU_0.5", hpu_tensor_pad),
	API("HPU_0.6", hpu_graph_replay_with),
	API("HPU_0.8", hpu_host_is_pinned),
	API("HPU_0.9", hpu_op_arange),
	API("HPU_0.9", hpu_op_rms_norm),
	API("HPU_0.9", hpu_op_rms_norm_backward),
	API("HPU_0.9", hpu_op_silu_backward),
	API("HPU_0.9", hpu_op_triangle),
	API("HPU_0.9", hpu_op_conv),
	API("HPU_0.9", hpu_op_conv_backward),
	API("HPU_0.9", hpu_op_index_select),
	API("HPU_0.9", hpu_op_gather),
	API("HPU_0.9", hpu_op_scatter_add),
	API("HPU_0.9", hpu_op_scatter),
	API("HPU_0.9", hpu_op_index_add),
	API("HPU_0.9", hpu_op_topk),
	API("HPU_0.9", hpu_op_batch_norm),
	API("HPU_0.9", hpu_op_batch_norm_backward),
	API("HPU_0.9", hpu_op_max_pool2d),
	API("HPU_0.9", hpu_op_max_pool2d_backward),
	API("HPU_0.9", hpu_op_avg_pool2d),
	API("HPU_0.9", hpu_op_avg_pool2d_backward),
	API("HPU_0.9", hpu_op_adaptive_avg_pool2d),
	API("HPU_0.9", hpu_op_adaptive_avg_pool2d_backward),
	API("HPU_0.10", hpu_op_group_norm),
	API("HPU_0.10", hpu_op_group_norm_backward),
	API("HPU_0.10", hpu_op_uniform),
	API("HPU_0.10", hpu_op_normal),
	API("HPU_0.10", hpu_op_sdpa),
	API("HPU_0.10", hpu_op_sdpa_backward),
	API("HPU_0.10", hpu_op_fused_sgd),
	API("HPU_0.10", hpu_op_fused_adamw),
	API("HPU_0.10", hpu_op_fused_lamb),
	API("HPU_0.10", hpu_op_fused_adadelta),
	API("HPU_0.10", hpu_op_clip_norm),
};

static const char *const version_nodes[] = { "HPU_0.1", "HPU_0.2", "HPU_0.3", "HPU_0.4",
						"HPU_0.5", "HPU_0.6", "HPU_0.8", "HPU_0.9",
						"HPU_0.10" };

static bool is_version_node(const char *name)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(version_nodes); i++)
		if (!strcmp(name, version_nodes[i]))
			return true;
	return false;
}

/* nm lists every defined dynamic symbol: each must be API, as name@@node of its node. */
static void test_exports_are_the_api(void)
{
	bool found[ARRAY_SIZE(api)] = { false };
	char cmd[4200], line[512], name[256], type;
	Dl_info where;
	size_t i;
	FILE *nm;

	if (!dladdr((void *)hpu_version, &where) || !where.dli_fname) {
		printf("#   dladdr does not find libhpu\n");
		test_failed = true;
		return;
	}
	printf("#   library: %s\n", where.dli_fname);
	snprintf(cmd, sizeof(cmd), "nm -D --defined-only '%s'", where.dli_fname);
	nm = popen(cmd, "r");
	if (!nm) {
		printf("#   cannot run %s: %s\n", cmd, strerror(errno));
		test_failed = true;
		return;
	}
	while (fgets(line, sizeof(line), nm)) {
		char *at;

		if (sscanf(line, "%*s %c %255s", &type, name) != 2)
			continue;
		/* The version nodes themselves: "0000000000000000 A HPU_0.1". */
		if (type == 'A' && is_version_node(name))
			continue;
		at = strstr(name, "@@");
		if (at)
			*at = '\0';
		for (i = 0; i < ARRAY_SIZE(api) && strcmp(api[i].name, name); i++)
			;
		if (i == ARRAY_SIZE(api)) {
			printf("#   %s is exported but not API\n", name);
			test_failed = true;
		} else if (!at || strcmp(at + 2, api[i].node)) {
			printf("#   %s is not under @@%s\n", name, api[i].node);
			test_failed = true;
		} else {
			found[i] = true;
		}
	}
	EXPECT(pclose(nm) == 0);
	for (i = 0; i < ARRAY_SIZE(api); i++) {
		if (!found[i]) {
			printf("#   %s is not exported\n", api[i].name);
			test_failed = true;
		}
	}
}

/*
 * The public structs are ABI: written out by hand, to change only with a
 * new soname (or by appending to a struct that has a size member).
 */
#define F(type, member, off, sz)                                                            \
	{ #type "." #member, offsetof(struct type, member),                                  \
	  sizeof(((struct type *)0)->member), off, sz }

static const struct {
	const char *name;
	size_t offset, size;
	size_t want_offset, want_size;
} fields[] = {
	F(hpu_version, major, 0, 2),
	F(hpu_version, minor, 2, 2),
	F(hpu_version, patch, 4, 2),
	F(hpu_device_desc, pci_bus_id, 0, HPU_PCI_BUS_ID_MAX),
	F(hpu_device_desc, path, 32, HPU_PATH_MAX),
	F(hpu_device_info, size, 0, 4),
	F(hpu_device_info, status, 4, 4),
	F(hpu_device_info, capabilities, 8, 8),
	F(hpu_device_info, hbm_size, 16, 8),
	F(hpu_device_info, pci_revision, 24, 4),
	F(hpu_device_info, hw_revision, 28, 4),
	F(hpu_device_info, num_dma_engines, 32, 4),
	F(hpu_device_info, num_mme_engines, 36, 4),
	F(hpu_device_info, num_tpc_engines, 40, 4),
	F(hpu_device_info, pci_vendor_id, 44, 2),
	F(hpu_device_info, pci_device_id, 46, 2),
	F(hpu_device_info, pci_subsystem_vendor_id, 48, 2),
	F(hpu_device_info, pci_subsystem_id, 50, 2),
	F(hpu_device_info, abi_version, 52, 6),
	F(hpu_device_info, fw_version, 58, 6),
	F(hpu_device_info, fw_if_version, 64, 6),
	F(hpu_device_info, pci_bus_id, 70, HPU_PCI_BUS_ID_MAX),
	F(hpu_device_info, path, 102, HPU_PATH_MAX),
	F(hpu_device_info, num_queues, 232, 4),
	F(hpu_device_info, max_contexts, 236, 4),
	F(hpu_device_info, num_user_queues, 240, 4),
	F(hpu_device_info, user_queues, 244, 4),
	F(hpu_device_stats, size, 0, 4),
	F(hpu_device_stats, num_contexts, 4, 4),
	F(hpu_device_stats, hbm_total, 8, 8),
	F(hpu_device_stats, hbm_used, 16, 8),
	F(hpu_device_stats, ctx_hbm_used, 24, 8),
	F(hpu_device_stats, ctx_host_pinned, 32, 8),
	F(hpu_device_stats, jobs_submitted, 40, 8),
	F(hpu_device_stats, jobs_completed, 48, 8),
	F(hpu_device_stats, jobs_failed, 56, 8),
	F(hpu_device_stats, ctx_jobs_submitted, 64, 8),
	F(hpu_device_stats, ctx_jobs_completed, 72, 8),
	F(hpu_device_stats, ctx_jobs_failed, 80, 8),
	F(hpu_device_stats, ioctls, 88, 8),
	F(hpu_device_stats, ctx_id, 96, 4),
	F(hpu_device_stats, pad, 100, 4),
	F(hpu_mem_cache_stats, allocated, 0, 8),
	F(hpu_mem_cache_stats, peak_allocated, 8, 8),
	F(hpu_mem_cache_stats, reserved, 16, 8),
	F(hpu_mem_cache_stats, pending, 24, 8),
	F(hpu_mem_cache_stats, allocations, 32, 8),
	F(hpu_mem_cache_stats, slabs, 40, 8),
	F(hpu_mem_cache_stats, slabs_created, 48, 8),
	F(hpu_mem_cache_stats, slabs_released, 56, 8),
	F(hpu_mem_stats, size, 0, 4),
	F(hpu_mem_stats, pad, 4, 4),
	F(hpu_mem_stats, device, 8, 64),
	F(hpu_mem_stats, host, 72, 64),
};

static void test_layout(void)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(fields); i++) {
		if (fields[i].offset != fields[i].want_offset ||
		    fields[i].size != fields[i].want_size) {
			printf("#   %s at %zu size %zu, expected at %zu size %zu\n", fields[i].name,
			       fields[i].offset, fields[i].size, fields[i].want_offset,
			       fields[i].want_size);
			test_failed = true;
		}
	}
	EXPECT(HPU_PCI_BUS_ID_MAX == 32 && HPU_PATH_MAX == 128);
	EXPECT(sizeof(struct hpu_version) == 6);
	EXPECT(sizeof(struct hpu_device_desc) == 160);
	EXPECT(sizeof(struct hpu_device_info) == 248);
	EXPECT(HPU_DEVICE_INFO_SIZE_V1 == 232);
	EXPECT(sizeof(struct hpu_device_stats) == 104 && HPU_DEVICE_STATS_SIZE_V1 == 96);
	EXPECT(sizeof(struct hpu_mem_cache_stats) == 64);
	EXPECT(sizeof(struct hpu_mem_stats) == 136 && HPU_MEM_STATS_SIZE_V1 == 136);
}

static const struct tap_test tests[] = {
	{ "hpu_version() matches the header", test_version },
	{ "discovery finds no device", test_discovery_finds_nothing },
	{ "opening an absent index fails with -ENODEV", test_open_absent_index },
	{ "closing or destroying NULL is a no-op", test_close_null },
	{ "hpu_host_free(dev, NULL) is a no-op", test_free_null },
	{ "hpu_last_error() is per thread", test_error_is_per_thread },
	{ "libhpu exports exactly the API", test_exports_are_the_api },
	{ "public struct layouts are frozen", test_layout },
};

int main(void)
{
	unsigned int n = 0, failed;
	char name[128];
	size_t i;

	printf("TAP version 13\n1..%zu\n", ARRAY_SIZE(tests) + ARRAY_SIZE(failures));
	failed = tap_run(tests, ARRAY_SIZE(tests), &n);
	for (i = 0; i < ARRAY_SIZE(failures); i++) {
		tap_start();
		test_failure(i);
		snprintf(name, sizeof(name), "%s fails with %d", failures[i].name,
			 failures[i].ret);
		failed += !tap_report(++n, name);
	}
	return failed ? 1 : 0;
}
