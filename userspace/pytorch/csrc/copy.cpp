// SPDX-License-Identifier: MIT
/*
 * Copies with an HPU tensor on either side (aten::_copy_from, which copy_ calls for devices
 * PyTorch does not know, and _copy_from_and_resize, which the CPU fallback writes back with).
 *
 * Between host and device the bytes move as one transfer of a contiguous buffer on the
 * device's current stream; a strided or broadcast operand on the device side is a device
 * copy from or into a contiguous temporary.  A cast is made by the device when it computes in
 * both dtypes (hpu_op_unary(HPU_UN_COPY), as it rounds: through fp32, nearest even), else on
 * the host.  A copy without a cast moves bits, whatever the dtype.  A copy to pageable host
 * memory waits for the data; from it, only until libhpu has staged it.
 */
#include "hpu_torch.h"

#include <ATen/MemoryOverlap.h>
#include <torch/library.h>

namespace hpu_torch {
namespace {

bool is_hpu(const at::Tensor &t)
{
	return t.device().type() == c10::DeviceType::HPU;
}

uint64_t address(const at::Tensor &t)
{
	return reinterpret_cast<uint64_t>(t.data_ptr());
}

size_t nbytes(const at::Tensor &t)
{
	return size_t(t.numel()) * t.element_size();
}

bool device_casts(const at::Tensor &dst, const at::Tensor &src)
{
	return device_dtype(dst.scalar_type()) && device_dtype(src.scalar_type());
}

// dst and src on one device, src broadcast to dst's shape: a copy or a cast by the device.
void device_copy(const at::Tensor &dst, const at::Tensor &src)
{
	if (dst.scalar_type() == src.scalar_type()) {
		HPU_CHECK(hpu_op_unary(stream_of(dst), HPU_UN_COPY, View(dst, true),
				       View(src, true)));
	} else if (device_casts(dst, src)) {
		HPU_CHECK(hpu_op_unary(stream_of(dst), HPU_UN_COPY, View(dst), View(src)));
	} else {
		// A cast the device does not make: on the host.
		copy_into(dst, src.cpu().to(dst.scalar_type()));
	}
}

// dst on the device, src in host memory.
void upload(const at::Tensor &dst, const at::Tensor &src)
{
	check_not_capturing(current_stream(dst.device().index()), "a copy from the host");
	at::Tensor host = src;

	if (src.scalar_type() != dst.scalar_type() && !device_casts(dst, src))
		host = host.to(dst.scalar_type());
	host = host.contiguous();
	// Straight into dst when it is the same buffer; else through a device temporary.
	at::Tensor to = dst;
	if (!(dst.is_contiguous() && dst.sizes() == host.sizes() &&
	      dst.scalar_type() == host.scalar_type()))
		to = at::empty(host.sizes(), dst.options().dtype(host.scalar_type()));
	HPU_CHECK(hpu_memcpy_h2d_async(stream_of(to), address(to), host.data_ptr(), nbytes(to)));
	if (!to.is_same(dst))
		device_copy(dst, to);
}

// dst in host memory, src on the device.
void download(const at::Tensor &dst, const at::Tensor &src)
{
	check_not_capturing(current_stream(src.device().index()),
			    "a host read (.item(), .cpu(), printing, a copy to the host)");
	at::Tensor from = src;

	if (src.scalar_type() != dst.scalar_type() && device_casts(dst, src)) {
		from = at::empty(src.sizes(), src.options().dtype(dst.scalar_type()));
		device_copy(from, src);
	}
	from = from.contiguous();
	at::Tensor host = dst;
	if (!(dst.is_contiguous() && dst.sizes() == from.sizes() &&
	      dst.scalar_type() == from.scalar_type()))
		host = at::empty(from.sizes(), from.options().device(at::kCPU));
	// Into pageable memory: returns once the data is there.
	HPU_CHECK(hpu_memcpy_d2h_async(stream_of(from), host.data_ptr(), address(from),
				       nbytes(from)));
	if (!host.is_same(dst))
		dst.copy_(host);
}

} // namespace

void copy_into(const at::Tensor &dst, const at::Tensor &src)
{
	if (dst.numel() == 0)
		return;
	if (is_hpu(dst) && is_hpu(src) && dst.device() == src.device()) {
		at::assert_no_internal_overlap(dst);
		at::assert_no_partial_overlap(dst, src);
		device_copy(dst, src);
	} else if (is_hpu(dst) && is_hpu(src)) {
		// Between devices: through the host.
		upload(dst, src.cpu());
	} else if (is_hpu(dst)) {
		upload(dst, src);
	} else {
		TORCH_CHECK(is_hpu(src), "hpu: a copy from ", src.device(), " to ", dst.device());
		download(dst, src);
	}
}

namespace {

// non_blocking changes nothing: a copy from pageable memory returns as soon as it may anyway.
at::Tensor copy_from(const at::Tensor &self, const at::Tensor &dst, bool)
{
	copy_into(dst, self);
	return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor &self, const at::Tensor &dst)
{
	if (dst.sizes() != self.sizes())
		dst.resize_(self.sizes());
	copy_into(dst, self);
	return dst;
}

TORCH_LIBRARY_IMPL(aten, HPU, m)
{
	m.impl("_copy_from", copy_from);
	m.impl("_copy_from_and_resize", copy_from_and_resize);
}

} // namespace
} // namespace hpu_torch
