// SPDX-License-Identifier: MIT
/*
 * Devices and streams of the HPU device type, and the device guard that PyTorch uses to
 * switch between them (C10_REGISTER_GUARD_IMPL): a device index is libhpu's, each device is
 * opened on first use and kept for the process (tensors may outlive any Python object; the
 * process's exit closes its driver file).  The current device and each device's current
 * stream are per thread, as CUDA's are, but for a device capturing an HPU graph: every other
 * thread's work on it goes to the capturing stream (graph.cpp).
 *
 * Lazy mode is libhpu's: each stream is made lazy (or eager) as it is created, and switching
 * the mode switches every stream made so far; mark_step() launches what a device's streams
 * recorded.  Host reads need no step of their own: libhpu flushes a lazy stream for any copy,
 * synchronize or query.
 */
#include "hpu_torch.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include <c10/core/impl/DeviceGuardImplInterface.h>

namespace hpu_torch {

void check(int ret, const char *call)
{
	TORCH_CHECK(ret == 0, "hpu: ", call, " failed: ", hpu_last_error(), " (", ret, ")");
}

bool check_done(int ret, const char *call)
{
	if (ret == -EAGAIN)
		return false;
	check(ret, call);
	return true;
}

bool check_yes(int ret, const char *call)
{
	if (ret > 0)
		return true;
	check(ret, call);
	return false;
}

namespace {

struct DeviceState {
	std::once_flag opened;
	hpu_device *dev = nullptr;
	std::mutex lock; // creating streams
	std::atomic<hpu_stream *> streams[1 + kStreamPoolSize] = {};
	std::atomic<uint32_t> next_pool{0};
};

DeviceState devices[kMaxDevices];

// PT_HPU_LAZY_MODE: 0 is eager, anything else (or nothing) lazy.
std::atomic<bool> lazy{[] {
	const char *v = getenv("PT_HPU_LAZY_MODE");

	return !v || strcmp(v, "0");
}()};

// A new stream in the process's mode, its graphs capped by PT_HPU_MAX_COMPOUND_OP_SIZE.
void configure(hpu_stream *st)
{
	const char *cap = getenv("PT_HPU_MAX_COMPOUND_OP_SIZE");

	HPU_CHECK(hpu_stream_set_lazy(st, lazy));
	if (cap && atoi(cap) > 0)
		HPU_CHECK(hpu_stream_set_max_graph_ops(st, unsigned(atoi(cap))));
}

// Calls fn on every stream made so far on the device (those it locks out are being made).
template <class Fn>
void each_stream(DeviceState &d, Fn fn)
{
	std::lock_guard<std::mutex> guard(d.lock);

	for (auto &s : d.streams)
		if (hpu_stream *st = s.load(std::memory_order_acquire))
			fn(st);
}
thread_local c10::DeviceIndex tls_device = 0;
thread_local c10::StreamId tls_stream[kMaxDevices] = {};

} // namespace

void check_index(c10::DeviceIndex index)
{
	TORCH_CHECK(index >= 0 && index < device_count(), "hpu: no device ", int(index), " (",
		    int(device_count()), " present)");
}

c10::DeviceIndex device_count()
{
	static const c10::DeviceIndex count = [] {
		unsigned int n = 0;

		if (hpu_device_count(&n))
			return c10::DeviceIndex(0);
		return c10::DeviceIndex(std::min<unsigned int>(n, kMaxDevices));
	}();
	return count;
}

c10::DeviceIndex current_device()
{
	return tls_device;
}

void set_device(c10::DeviceIndex index)
{
	check_index(index);
	tls_device = index;
}

c10::DeviceIndex index_of(c10::Device d)
{
	TORCH_CHECK(d.type() == c10::DeviceType::HPU, "hpu: ", d, " is not an hpu device");
	return d.has_index() ? d.index() : tls_device;
}

hpu_device *device(c10::DeviceIndex index)
{
	check_index(index);
	DeviceState &d = devices[index];
	// A failed open throws out of call_once, which then stays to be tried again.
	std::call_once(d.opened, [&] { HPU_CHECK(hpu_device_open(index, &d.dev)); });
	return d.dev;
}

c10::Stream current_stream(c10::DeviceIndex index)
{
	check_index(index);
	return c10::Stream(c10::Stream::UNSAFE, c10::Device(c10::DeviceType::HPU, index),
			   thread_stream(index, tls_stream[index]));
}

c10::Stream set_current_stream(c10::Stream s)
{
	c10::DeviceIndex index = s.device_index();
	c10::Stream old = current_stream(index);

	tls_stream[index] = s.id();
	return old;
}

c10::Stream pool_stream(c10::DeviceIndex index)
{
	check_index(index);
	c10::StreamId id = 1 + devices[index].next_pool++ % kStreamPoolSize;

	return c10::Stream(c10::Stream::UNSAFE, c10::Device(c10::DeviceType::HPU, index), id);
}

hpu_stream *stream(c10::Stream s)
{
	c10::StreamId id = s.id();
	TORCH_CHECK(s.device_type() == c10::DeviceType::HPU && id >= 0 && id <= kStreamPoolSize,
		    "hpu: ", s, " is not an hpu stream");
	hpu_device *dev = device(s.device_index());
	DeviceState &d = devices[s.device_index()];
	hpu_stream *st = d.streams[id].load(std::memory_order_acquire);

	if (st)
		return st;
	std::lock_guard<std::mutex> guard(d.lock);
	st = d.streams[id].load(std::memory_order_relaxed);
	if (!st) {
		HPU_CHECK(hpu_stream_create(dev, &st));
		try {
			configure(st);
		} catch (...) {
			hpu_stream_destroy(st);
			throw;
		}
		d.streams[id].store(st, std::memory_order_release);
	}
	return st;
}

bool lazy_mode()
{
	return lazy;
}

void set_lazy_mode(bool on)
{
	lazy = on;
	for (DeviceState &d : devices)
		each_stream(d, [&](hpu_stream *st) { HPU_CHECK(hpu_stream_set_lazy(st, on)); });
}

void mark_step(c10::DeviceIndex index)
{
	check_index(index);
	each_stream(devices[index], [](hpu_stream *st) { HPU_CHECK(hpu_mark_step(st)); });
}

hpu_stream *stream_of(const at::Tensor &t)
{
	return stream(current_stream(t.device().index()));
}

namespace {

struct GuardImpl final : public c10::impl::DeviceGuardImplInterface {
	c10::DeviceType type() const override
	{
		return c10::DeviceType::HPU;
	}
	c10::Device exchangeDevice(c10::Device d) const override
	{
		c10::Device old = getDevice();

		setDevice(d);
		return old;
	}
	c10::Device getDevice() const override
	{
		return c10::Device(c10::DeviceType::HPU, tls_device);
	}
	void setDevice(c10::Device d) const override
	{
		set_device(index_of(d));
	}
	void uncheckedSetDevice(c10::Device d) const noexcept override
	{
		if (d.has_index())
			tls_device = d.index();
	}
	c10::Stream getStream(c10::Device d) const noexcept override
	{
		return current_stream(d.has_index() ? d.index() : tls_device);
	}
	c10::Stream getDefaultStream(c10::Device d) const override
	{
		return c10::Stream(c10::Stream::DEFAULT, d);
	}
	c10::Stream getStreamFromGlobalPool(c10::Device d, bool) const override
	{
		return pool_stream(d.index());
	}
	c10::Stream exchangeStream(c10::Stream s) const noexcept override
	{
		return set_current_stream(s);
	}
	c10::DeviceIndex deviceCount() const noexcept override
	{
		return device_count();
	}
	void record(void **event, const c10::Stream &s, const c10::DeviceIndex index,
		    const c10::EventFlag) const override
	{
		TORCH_CHECK(index == -1 || index == s.device_index(), "hpu: event of device ",
			    int(index), " recorded on ", s);
		if (!*event) {
			hpu_event *ev;

			HPU_CHECK(hpu_event_create(device(s.device_index()), &ev));
			*event = ev;
		}
		HPU_CHECK(hpu_event_record(static_cast<hpu_event *>(*event), stream(s)));
	}
	void block(void *event, const c10::Stream &s) const override
	{
		if (event)
			HPU_CHECK(hpu_stream_wait_event(stream(s), static_cast<hpu_event *>(event)));
	}
	bool queryEvent(void *event) const override
	{
		return !event || HPU_DONE(hpu_event_query(static_cast<hpu_event *>(event)));
	}
	void destroyEvent(void *event, const c10::DeviceIndex) const noexcept override
	{
		hpu_event_destroy(static_cast<hpu_event *>(event));
	}
	bool queryStream(const c10::Stream &s) const override
	{
		return HPU_DONE(hpu_stream_query(stream(s)));
	}
	void synchronizeStream(const c10::Stream &s) const override
	{
		HPU_CHECK(hpu_stream_synchronize(stream(s)));
	}
};

C10_REGISTER_GUARD_IMPL(HPU, GuardImpl);

} // namespace
} // namespace hpu_torch
