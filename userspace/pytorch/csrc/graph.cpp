// SPDX-License-Identifier: MIT
/*
 * HPU graphs (torch.hpu.HPUGraph) on libhpu's hpu_graph_*: the ops enqueued on a stream between
 * capture_begin() and capture_end() are recorded, compiled once, and replayed as one
 * submission.  make_graphed_callables, ModuleCacher and the graph() context are Python over
 * this (hpu_torch/hpu/graphs.py).
 *
 * Which stream of each device captures, and which thread began it, is kept here, for two
 * reasons:
 * - PyTorch 1.13's autograd engine runs a device's backward kernels on a thread of its own and
 *   switches that thread onto the forward's stream for CUDA only.  While a thread captures on
 *   a device, every other thread's work on that device therefore goes to the capturing stream
 *   (current_stream(), device.cpp), so that a backward() inside a capture is captured.  One
 *   capture per device at a time.
 * - Host work during a capture (a copy to or from the host, a CPU fallback) is refused here,
 *   by name, before libhpu would refuse the transfer it starts.
 * A capture begins, and each replay starts, with the device's dropout generator ready on its
 * stream (rng_ready(), ops_nn.cpp): the state exists before anything is captured, and a seed
 * given since the last draw is written ahead of the replay.
 */
#include "hpu_torch.h"

#include <atomic>
#include <thread>

#include <hpu/hpu_graph.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

namespace py = pybind11;

namespace hpu_torch {
namespace {

// Per device: 1 + the id of the stream that captures, 0 if none does; the thread capturing.
std::atomic<c10::StreamId> capturing[kMaxDevices];
std::atomic<std::thread::id> capturer[kMaxDevices];

} // namespace

c10::StreamId thread_stream(c10::DeviceIndex index, c10::StreamId own)
{
	c10::StreamId c = capturing[index].load(std::memory_order_acquire);

	return c && capturer[index].load() != std::this_thread::get_id() ? c - 1 : own;
}

bool capturing_on(c10::DeviceIndex index)
{
	return capturing[index].load(std::memory_order_acquire) != 0;
}

void check_not_capturing(c10::Stream s, const char *what)
{
	TORCH_CHECK(capturing[s.device_index()].load(std::memory_order_acquire) != s.id() + 1,
		    "hpu: ", what, " while stream ", s.id(), " of hpu:", int(s.device_index()),
		    " captures an HPU graph, which takes device ops only");
}

namespace {

// A device's claim to capture, given back unless kept (the capture began).
struct Claim {
	c10::DeviceIndex index;
	bool kept = false;

	~Claim()
	{
		if (!kept)
			capturing[index] = 0;
	}
};

// A graph of one device; its capture on one of that device's streams.
class Graph {
public:
	~Graph() { reset(); }

	void capture_begin(c10::DeviceIndex index, c10::StreamId id)
	{
		TORCH_CHECK(!g_, "hpu: the graph was captured already: reset() it or create another");
		hpu_stream *st = stream(stream_at(index, id));
		c10::StreamId none = 0;
		hpu_graph *g = nullptr;

		TORCH_CHECK(capturing[index].compare_exchange_strong(none, id + 1), "hpu: hpu:",
			    int(index), " captures a graph already (stream ", none - 1,
			    "): one capture per device at a time");
		Claim claim{index};
		capturer[index] = std::this_thread::get_id();
		// Claimed first, so that no seed can come between this and the capture.  The seed's
		// fills are waited for: a replay on another stream reads the state with no order.
		rng_ready(index, st);
		{
			py::gil_scoped_release nogil;
			HPU_CHECK(hpu_stream_synchronize(st));
		}
		HPU_CHECK(hpu_graph_create(device(index), &g));
		int ret = hpu_graph_capture_begin(g, st);
		if (ret) {
			hpu_graph_destroy(g);
			check(ret, "hpu_graph_capture_begin");
		}
		claim.kept = true;
		g_ = g;
		device_ = index;
		capturing_ = true;
	}

	void capture_end()
	{
		TORCH_CHECK(g_ && capturing_, "hpu: the graph is not capturing");
		capturing[device_] = 0;
		capturing_ = false;
		HPU_CHECK(hpu_graph_capture_end(g_));
	}

	// On the current stream of the graph's device: one call from Python, since a replayed
	// step's host time is mostly calls like this one.
	void replay()
	{
		TORCH_CHECK(g_ && !capturing_, "hpu: replay of a graph ",
			    g_ ? "still capturing" : "never captured");
		hpu_stream *st = stream(current_stream(device_));

		rng_ready(device_, st);
		py::gil_scoped_release nogil;
		HPU_CHECK(hpu_graph_replay(g_, st));
	}

	// Drops the capture (ending it if it is going): the graph may capture again.
	void reset()
	{
		if (capturing_)
			capturing[device_] = 0;
		capturing_ = false;
		hpu_graph_destroy(g_);
		g_ = nullptr;
	}

	py::dict info()
	{
		struct hpu_graph_info i = {};
		py::dict d;

		TORCH_CHECK(g_, "hpu: the graph was never captured");
		i.size = sizeof(i);
		HPU_CHECK(hpu_graph_get_info(g_, &i));
		d["num_ops"] = i.num_ops;
		d["num_tensors"] = i.num_tensors;
		d["num_engines"] = i.num_engines;
		d["workspace_bytes"] = i.workspace_bytes;
		d["device_bytes"] = i.device_bytes;
		d["replays"] = i.replays;
		return d;
	}

private:
	hpu_graph *g_ = nullptr;
	c10::DeviceIndex device_ = -1; // captured (or capturing) on this device
	bool capturing_ = false;
};

} // namespace

void init_graph(py::module &m)
{
	py::class_<Graph>(m, "_Graph")
		.def(py::init<>())
		.def("capture_begin", &Graph::capture_begin)
		.def("capture_end", &Graph::capture_end)
		.def("replay", &Graph::replay)
		.def("reset", &Graph::reset)
		.def("info", &Graph::info);
	m.def("_capturing_stream", [](c10::DeviceIndex i) {
		check_index(i);
		return capturing[i].load() - 1;
	});
}

} // namespace hpu_torch
