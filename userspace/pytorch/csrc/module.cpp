// SPDX-License-Identifier: MIT
/*
 * hpu_torch._C, the Python module: the device, stream, event, memory and fallback functions
 * that hpu_torch.hpu wraps into PyTorch's device-module API.  Streams cross as (device index,
 * stream id) pairs (device.cpp numbers them); events are objects of their own.  Loading it
 * registers everything else: the allocator, the device guard and the kernels.
 */
#include "hpu_torch.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

namespace py = pybind11;

namespace hpu_torch {

// The module's parts that live with what they wrap: graph.cpp, metrics.cpp.
void init_graph(py::module &m);
void init_metrics(py::module &m);

c10::Stream stream_at(c10::DeviceIndex index, c10::StreamId id)
{
	check_index(index);
	return c10::Stream(c10::Stream::UNSAFE, c10::Device(c10::DeviceType::HPU, index), id);
}

namespace {

// An event of one device, created when first recorded (as CUDA's), destroyed with its object.
class Event {
public:
	~Event() { hpu_event_destroy(ev_); }
	void record(c10::DeviceIndex index, c10::StreamId id)
	{
		c10::Stream s = stream_at(index, id);

		if (!ev_) {
			HPU_CHECK(hpu_event_create(device(index), &ev_));
			index_ = index;
		}
		TORCH_CHECK(index == index_, "hpu: an event of device ", int(index_),
			    " recorded on device ", int(index));
		HPU_CHECK(hpu_event_record(ev_, stream(s)));
	}
	void wait(c10::DeviceIndex index, c10::StreamId id)
	{
		if (ev_)
			HPU_CHECK(hpu_stream_wait_event(stream(stream_at(index, id)), ev_));
	}
	bool query()
	{
		return !ev_ || HPU_DONE(hpu_event_query(ev_));
	}
	void synchronize()
	{
		if (ev_)
			HPU_CHECK(hpu_event_synchronize(ev_));
	}
	double elapsed_ms(const Event &end)
	{
		int64_t ns;

		HPU_CHECK(hpu_event_elapsed_time(ev_, end.ev_, &ns));
		return double(ns) / 1e6;
	}

private:
	hpu_event *ev_ = nullptr;
	c10::DeviceIndex index_ = -1;
};

// libhpu's own figures of device index's memory (what its cache holds).
struct hpu_mem_stats libhpu_mem_stats(c10::DeviceIndex index)
{
	struct hpu_mem_stats mem = {};

	mem.size = sizeof(mem);
	HPU_CHECK(hpu_mem_get_stats(device(index), &mem));
	return mem;
}

py::dict memory_stats_dict(c10::DeviceIndex index)
{
	MemoryStats s = memory_stats(index);
	struct hpu_device_info info = {};
	struct hpu_mem_stats mem = libhpu_mem_stats(index);
	py::dict d;

	info.size = sizeof(info);
	HPU_CHECK(hpu_device_get_info(device(index), &info));
	d["Limit"] = info.hbm_size;
	d["InUse"] = s.in_use;
	d["MaxInUse"] = s.max_in_use;
	d["NumAllocs"] = s.num_allocs;
	d["NumFrees"] = s.num_frees;
	d["ActiveAllocs"] = s.active_allocs;
	d["MaxAllocSize"] = s.max_alloc_size;
	d["Reserved"] = mem.device.reserved;
	d["TotalSystemAllocs"] = mem.device.slabs_created;
	d["TotalSystemFrees"] = mem.device.slabs_released;
	d["TotalActiveAllocs"] = mem.device.slabs;
	return d;
}

} // namespace
} // namespace hpu_torch

using namespace hpu_torch;

PYBIND11_MODULE(_C, m)
{
	m.doc() = "hpu_torch's extension: PyTorch's HPU device on libhpu";
	m.def("_device_count", [] { return int(device_count()); });
	m.def("_current_device", [] { return int(current_device()); });
	m.def("_set_device", [](c10::DeviceIndex i) { set_device(i); });
	m.def("_synchronize", [](c10::DeviceIndex i) {
		py::gil_scoped_release nogil;
		HPU_CHECK(hpu_device_synchronize(device(i)));
	});

	m.def("_current_stream", [](c10::DeviceIndex i) { return current_stream(i).id(); });
	m.def("_pool_stream", [](c10::DeviceIndex i) { return pool_stream(i).id(); });
	m.def("_set_stream", [](c10::DeviceIndex i, c10::StreamId id) {
		set_current_stream(stream_at(i, id));
	});
	m.def("_stream_synchronize", [](c10::DeviceIndex i, c10::StreamId id) {
		hpu_stream *s = stream(stream_at(i, id));
		py::gil_scoped_release nogil;
		HPU_CHECK(hpu_stream_synchronize(s));
	});
	m.def("_stream_query", [](c10::DeviceIndex i, c10::StreamId id) {
		return HPU_DONE(hpu_stream_query(stream(stream_at(i, id))));
	});

	py::class_<Event>(m, "_Event")
		.def(py::init<>())
		.def("record", &Event::record)
		.def("wait", &Event::wait)
		.def("query", &Event::query)
		.def("synchronize", &Event::synchronize, py::call_guard<py::gil_scoped_release>())
		.def("elapsed_time", &Event::elapsed_ms);

	m.def("_memory_stats", memory_stats_dict);
	// What libhpu has allocated, graphs' memory included, which PyTorch's counts do not see.
	m.def("_device_allocated",
	      [](c10::DeviceIndex i) { return libhpu_mem_stats(i).device.allocated; });
	m.def("_reset_peak_memory_stats", [](c10::DeviceIndex i) { reset_peak_memory_stats(i); });
	m.def("_empty_cache", [](c10::DeviceIndex i) { HPU_CHECK(hpu_mem_empty_cache(device(i))); });
	m.def("_fallback_counts", fallback_counts);
	init_graph(m);
	init_metrics(m);

	// Lazy mode and the device's generator.
	m.def("_lazy_mode", lazy_mode);
	m.def("_set_lazy_mode", set_lazy_mode);
	m.def("_mark_step", [](c10::DeviceIndex i) { mark_step(i); });
	m.def("_manual_seed", [](c10::DeviceIndex i, uint64_t seed) { manual_seed(i, seed); });
}
