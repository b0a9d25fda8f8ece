// SPDX-License-Identifier: MIT
/*
 * hpu_torch's C++ side: what its files share.  The extension is PyTorch glue over libhpu's
 * public API only: devices, streams and lazy mode (device.cpp), storage (allocator.cpp), libhpu
 * views of at::Tensors (tensor.cpp), copies (copy.cpp), pinned host memory (pinned.cpp), the
 * kernels registered at the HPU key (factory.cpp, ops.cpp and ops_<family>.cpp), the CPU
 * fallback for every other op (fallback.cpp), HPU graphs (graph.cpp), metrics (metrics.cpp)
 * and the Python module (module.cpp).
 *
 * Every libhpu call goes through HPU_CHECK: a failure becomes a c10::Error carrying
 * hpu_last_error(), which Python sees as a RuntimeError.
 */
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <ATen/native/CPUFallback.h>
#include <c10/core/Stream.h>

#include <hpu/hpu.h>
#include <hpu/hpu_graph.h>
#include <hpu/hpu_tensor.h>

namespace hpu_torch {

// Throws a c10::Error naming the call and libhpu's message if ret is a failure.
void check(int ret, const char *call);
#define HPU_CHECK(call) ::hpu_torch::check((call), #call)
// For the queries that say -EAGAIN while work is pending: whether it has ended.
bool check_done(int ret, const char *call);
#define HPU_DONE(call) ::hpu_torch::check_done((call), #call)
// For the predicates that answer 1 or 0 (and -errno on a bad argument).
bool check_yes(int ret, const char *call);
#define HPU_YES(call) ::hpu_torch::check_yes((call), #call)

// device.cpp: devices, numbered as libhpu numbers them, each opened on first use.

// Devices a process uses at most; c10 numbers devices with an int8_t.
constexpr c10::DeviceIndex kMaxDevices = 16;

// Devices present (0 if none or if discovery failed).
c10::DeviceIndex device_count();
// The calling thread's current device (0 until set_device()).
c10::DeviceIndex current_device();
void set_device(c10::DeviceIndex index);
// The libhpu device of an index, opened on first use; throws if there is none.
hpu_device *device(c10::DeviceIndex index);
// The index a tensor or a request names: its own, or the current device when it has none.
c10::DeviceIndex index_of(c10::Device d);
// Throws unless index names a device present.
void check_index(c10::DeviceIndex index);

/*
 * Streams: id 0 is a device's default stream; ids 1..kStreamPoolSize name a pool of libhpu
 * streams handed out in turn (torch.hpu.Stream()), created on first use and kept for the
 * process, as CUDA's pool is: c10::Stream values are plain numbers that may outlive any object.
 */
constexpr c10::StreamId kStreamPoolSize = 4;
c10::Stream current_stream(c10::DeviceIndex index);
c10::Stream set_current_stream(c10::Stream s);
c10::Stream pool_stream(c10::DeviceIndex index);
hpu_stream *stream(c10::Stream s);
// The current libhpu stream of a tensor's device: where its ops are enqueued.
hpu_stream *stream_of(const at::Tensor &t);
// Stream id of a device, as Python names it (module.cpp).
c10::Stream stream_at(c10::DeviceIndex index, c10::StreamId id);

/*
 * Lazy mode (PT_HPU_LAZY_MODE, default 1): every stream records its ops into graphs that
 * libhpu compiles and launches at mark_step() or when anything needs their results (a host
 * read, a copy, a synchronize, a CPU fallback).  PT_HPU_MAX_COMPOUND_OP_SIZE caps a graph.
 */
bool lazy_mode();
// Switches the streams made so far and those to come (going eager flushes them).
void set_lazy_mode(bool lazy);
// Launches what the device's streams recorded.
void mark_step(c10::DeviceIndex index);

// allocator.cpp: storage is a libhpu tensor of bytes; the DataPtr holds it.

// The allocator registered for the HPU device type.
c10::Allocator *allocator();
// The libhpu tensor (U8, the storage's bytes) behind an HPU storage; NULL for 0 bytes.
hpu_tensor *storage_tensor(const c10::Storage &storage);

struct MemoryStats {
	uint64_t in_use, max_in_use, num_allocs, num_frees, active_allocs, max_alloc_size;
};
MemoryStats memory_stats(c10::DeviceIndex index);
void reset_peak_memory_stats(c10::DeviceIndex index);

// tensor.cpp: libhpu views of at::Tensors.

// The libhpu dtype of a torch dtype the device computes in, or 0.
uint32_t device_dtype(at::ScalarType type);

// A libhpu view, destroyed with the object: it holds its own reference to the storage, so
// libhpu keeps the memory for the work enqueued with it, whatever becomes of the at::Tensor.
class View {
public:
	// t's elements in their device dtype or, with bits, as unsigned words of their size
	// (for a copy that moves bits, of any dtype).  Throws if t cannot be expressed.
	explicit View(const at::Tensor &t, bool bits = false);
	~View();
	View(const View &) = delete;
	View &operator=(const View &) = delete;
	operator hpu_tensor *() const { return t_; }

private:
	hpu_tensor *t_ = nullptr;
};

// Whether t can be a libhpu view: an HPU tensor of at most HPU_MAX_DIMS dims.
bool viewable(const at::Tensor &t);
// Whether the device computes on t: viewable and of a device dtype.
bool on_device(const at::Tensor &t);

// copy.cpp: copies between host and device and on the device, casting where asked.
void copy_into(const at::Tensor &dst, const at::Tensor &src);

// fallback.cpp: the boxed CPU fallback, its counts by op ("aten::digamma").
void cpu_fallback(const c10::OperatorHandle &op, torch::jit::Stack *stack);
std::map<std::string, uint64_t> fallback_counts();

// graph.cpp: HPU graphs.  The stream the calling thread's work on a device goes to, own its
// current one: the capturing stream while another thread captures a graph on the device (so
// that the autograd engine's thread is captured too), else own.
c10::StreamId thread_stream(c10::DeviceIndex index, c10::StreamId own);
// Throws, naming what, if s captures a graph: host work (copies, the CPU fallback) is refused.
void check_not_capturing(c10::Stream s, const char *what);
// Whether a stream of device index captures a graph.
bool capturing_on(c10::DeviceIndex index);

/*
 * ops.cpp: what the kernels (ops*.cpp) share.  A kernel runs on the device when it can take
 * its operands, else hands the very call to the CPU fallback: fall_back<at::_ops::OP>(args...).
 */
template <class Op, class... Args>
decltype(auto) fall_back(Args &&...args)
{
	return at::native::call_fallback_fn<&cpu_fallback, Op>::call(std::forward<Args>(args)...);
}
// Whether the device stores v into a tensor of type as PyTorch would.
bool holds_exactly(at::ScalarType type, const at::Scalar &v);
// A number as PyTorch passes one among tensors: a 0-dim tensor in host memory.
bool is_host_scalar(const at::Tensor &t);
// Whether the device computes on t in a floating dtype.
bool floating_on_device(const at::Tensor &t);
// Whether out is floating on the device and each of in a device tensor of its dtype and device.
bool same_floats(const at::Tensor &out, std::initializer_list<at::Tensor> in);
/*
 * t as an operand of an op writing out, in dtype type: t, a device cast of it, or (a host
 * number) a 0-dim device tensor holding it; undefined when the device cannot take it.
 */
at::Tensor operand(const at::Tensor &t, const at::Tensor &out, at::ScalarType type);
// An out= argument resized to sizes, as PyTorch's structured kernels resize theirs.
void resize_out(const at::Tensor &out, at::IntArrayRef sizes);
// Whether a and b share any storage.
bool shares_storage(const at::Tensor &a, const at::Tensor &b);
// An optional operand as libhpu takes it: a view, or none (handle() NULL).
std::unique_ptr<View> maybe_view(const c10::optional<at::Tensor> &t);
hpu_tensor *handle(const std::unique_ptr<View> &v);

// ops_eltwise.cpp: out = fn(a, alpha * b) on the device, b broadcast; false if it cannot.
bool binary_into(enum hpu_binary_fn fn, const at::Tensor &out, const at::Tensor &a,
		 const at::Tensor &b, double alpha = 1);

// ops_nn.cpp: the device's dropout generator, seeded per device (torch.hpu.manual_seed).
// Refused while the device captures.
void manual_seed(c10::DeviceIndex index, uint64_t seed);
// Device index's generator state, made if it is not yet, its pending seed written on s.
at::Tensor rng_ready(c10::DeviceIndex index, hpu_stream *s);

// ops_random.cpp: self filled on the device's generator with uniform [a, b) or normal(a, b);
// false (nothing done) for an explicit generator or what the device cannot take.
bool device_random(at::Tensor &self, const c10::optional<at::Generator> &gen, bool normal,
		   double a, double b);

} // namespace hpu_torch
