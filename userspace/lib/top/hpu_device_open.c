/* SPDX-License-Identifier: MIT */
/*
 * Opening and closing a device: the node, then each layer's state on it,
 * set up in order and torn down in the other; and what a device is, which
 * takes the core's query and the submission layer's choice of queues.
 */
#include <errno.h>
#include <stdlib.h>

#include "../top/top.h"

/* At a stream's last reference: what the op and graph layers keep on it. */
static void hpu_stream_release_above(struct hpu_stream *s)
{
	hpu_params_release(s);
	hpu_recording_release(s);
}

/* A stream gets the graph layer's recording at creation; its parameter ring waits for a kernel. */
static const struct hpu_stream_hooks hpu_stream_hooks = {
	.init = hpu_recording_init,
	.flush = hpu_lazy_flush,
	.abort = hpu_stream_capture_abort,
	.release = hpu_stream_release_above,
};

static const struct hpu_op_hooks hpu_op_hooks = { .take = hpu_graph_op_take };

/* Everything but the node: command submission, memory, streams and events. */
static int hpu_device_setup(struct hpu_device *dev)
{
	struct hpu_device_info info;
	uint64_t staging_half;
	int ret;

	ret = hpu_device_query(dev, &info);
	if (ret)
		return ret;
	dev->abi_version = info.abi_version;
	dev->num_queues = info.num_queues;
	dev->num_user_queues = info.num_user_queues;
	pthread_mutex_init(&dev->lock, NULL);
	hpu_list_init(&dev->streams);
	hpu_list_init(&dev->events);
	dev->stream_hooks = &hpu_stream_hooks;
	dev->op_hooks = &hpu_op_hooks;
	/* The jobs first: the memory learns from them which blocks it may reuse. */
	ret = hpu_jobs_init(dev, info.num_queues);
	if (ret)
		goto err_lock;
	dev->retire = &hpu_jobs_retire;
	ret = hpu_mem_init(dev);
	if (ret)
		goto err_jobs;
	ret = hpu_host_init(dev, &staging_half);
	if (ret)
		goto err_mem;
	ret = hpu_staging_init(dev, staging_half);
	if (ret)
		goto err_host;
	ret = hpu_fallback_init(dev);
	if (ret)
		goto err_staging;
	ret = hpu_recipe_cache_init(dev, &info);
	if (ret)
		goto err_fallback;
	hpu_metrics_device_open(dev);
	return 0;

err_fallback:
	hpu_fallback_fini(dev);
err_staging:
	hpu_staging_fini(dev);
err_host:
	hpu_host_fini(dev);
err_mem:
	hpu_suballoc_destroy(dev->mem);
err_jobs:
	hpu_jobs_fini(dev);
err_lock:
	pthread_mutex_destroy(&dev->lock);
	return ret;
}

static int hpu_device_create(const char *path, struct hpu_device **devp)
{
	struct hpu_device *dev;
	int ret;

	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return hpu_error_set(ENOMEM, "out of memory");
	ret = hpu_node_open(path, dev);
	if (ret) {
		free(dev);
		return ret;
	}
	ret = hpu_device_setup(dev);
	if (ret) {
		hpu_node_close(dev);
		free(dev);
		return ret;
	}
	*devp = dev;
	return 0;
}

static int hpu_device_open_index(unsigned int index, struct hpu_device **devp)
{
	struct hpu_discovery found;
	int ret;

	ret = hpu_discover(&found);
	if (ret)
		return ret;
	if (index < found.count)
		ret = hpu_device_create(found.descs[index].path, devp);
	else if (found.inaccessible)
		ret = hpu_error_set(ENODEV, "no hpu device %u (%u found, %u device nodes not accessible)",
				    index, found.count, found.inaccessible);
	else
		ret = hpu_error_set(ENODEV, "no hpu device %u (%u found)", index, found.count);
	hpu_discovery_free(&found);
	return ret;
}

int hpu_device_open(unsigned int index, struct hpu_device **devp)
{
	if (!devp)
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "devp is NULL"));
	*devp = NULL;
	return hpu_error_in(__func__, hpu_device_open_index(index, devp));
}

int hpu_device_open_path(const char *path, struct hpu_device **devp)
{
	int ret;

	if (!devp)
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "devp is NULL"));
	*devp = NULL;
	if (!path)
		ret = hpu_error_set(EINVAL, "path is NULL");
	else
		ret = hpu_device_create(path, devp);
	return hpu_error_in(__func__, ret);
}

int hpu_device_get_info(struct hpu_device *dev, struct hpu_device_info *info)
{
	struct hpu_device_info known;
	int ret;

	ret = hpu_sized_check(dev, info, "info", HPU_DEVICE_INFO_SIZE_V1);
	if (!ret)
		ret = hpu_device_query(dev, &known);
	if (ret)
		return hpu_error_in(__func__, ret);
	known.user_queues = hpu_uqueues_used(dev);
	hpu_sized_out(info, &known, sizeof(known));
	return 0;
}

void hpu_device_close(struct hpu_device *dev)
{
	struct hpu_list *it;

	if (!dev)
		return;
	/* What lazy streams recorded is enqueued work: it runs first. */
	for (it = dev->streams.next; it != &dev->streams; it = it->next)
		hpu_lazy_flush_stream(hpu_container_of(it, struct hpu_stream, node));
	/* Slabs are unmapped only once no job can touch them. */
	hpu_jobs_retired(dev, HPU_RETIRE_WAIT);
	hpu_events_close(dev);
	hpu_streams_close(dev);
	hpu_recipe_cache_fini(dev);
	hpu_metrics_device_close(dev);
	hpu_fallback_fini(dev);
	hpu_suballoc_destroy(dev->mem);
	hpu_uqueues_close(dev);
	hpu_staging_fini(dev);
	hpu_host_fini(dev);
	hpu_jobs_fini(dev);
	pthread_mutex_destroy(&dev->lock);
	hpu_node_close(dev);
	free(dev);
}
