// SPDX-License-Identifier: MIT
/*
 * libhpu's metrics and recipe cache as hpu_torch.hpu.metrics shows them: a metric is libhpu's
 * named set of counters ("graph_compilation": TotalNumber, TotalTime, AvgTime, ...), read
 * whole as (name, value) pairs, or all of them as libhpu's JSON.  The bridge's own CPU
 * fallback counts are added in Python (hpu_torch/hpu/metrics.py).
 */
#include "hpu_torch.h"

#include <utility>
#include <vector>

#include <hpu/hpu_graph.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

namespace py = pybind11;

namespace hpu_torch {

void init_metrics(py::module &m)
{
	m.def("_metric_global", [](const std::string &name) {
		struct hpu_metric metric;
		std::vector<std::pair<std::string, uint64_t>> stats;

		HPU_CHECK(hpu_metric_global(name.c_str(), &metric));
		for (unsigned int i = 0; i < metric.count; i++)
			stats.emplace_back(metric.stats[i].name, metric.stats[i].value);
		return stats;
	});
	// One stat, read without building the metric's list (mark_step() reads one each step).
	m.def("_metric_value", [](const std::string &name, const std::string &stat) {
		uint64_t v;

		HPU_CHECK(hpu_metric_value(name.c_str(), stat.c_str(), &v));
		return v;
	});
	m.def("_metrics_dump_json", [](const std::string &path) {
		HPU_CHECK(hpu_metrics_dump_json(path.c_str()));
	});
	m.def("_recipe_cache_set_capacity", [](c10::DeviceIndex i, unsigned int capacity) {
		HPU_CHECK(hpu_recipe_cache_set_capacity(device(i), capacity));
	});
}

} // namespace hpu_torch
