/* SPDX-License-Identifier: MIT */
/*
 * libhpu's top: what sits on every layer.  Opening a device sets up each
 * layer's state on it; the metrics read every layer; fork() handling.
 */
#ifndef HPU_TOP_H
#define HPU_TOP_H

#include "../graph/graph.h"

/*
 * hpu_metrics.c: open devices count in the memory and fallback metrics;
 * closed ones leave their totals.
 */
void hpu_metrics_device_open(struct hpu_device *dev);
void hpu_metrics_device_close(struct hpu_device *dev);
void hpu_metrics_fork(enum hpu_fork_phase phase);

#endif /* HPU_TOP_H */
