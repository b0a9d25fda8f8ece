// SPDX-License-Identifier: MIT
/*
 * Copies with an HPU tensor on either side (aten::_copy_from, which copy_ calls for devices
 * PyTorch does not know, and _copy_from_and_resize, which the CPU fallback writes back with),
 * and cat (torch.stack's too): each input copied on the device into its slice of the output.
 *
 * Between host and device the bytes move as one transfer of a contiguous buffer on the
 * device's current stream; a strided or broadcast operand on the device side is a device
 * copy from or into a contiguous temporary.  A cast is made by the device when it computes in
 * both dtypes (hpu_op_unary(HPU_UN_COPY), as it rounds: through fp32, nearest even), else on
 * the host.  A copy without a cast moves bits, whatever the dtype.
 *
 * Host memory pinned for the device (pinned.cpp) is reached directly: with non_blocking the
 * copy is only enqueued, ordered on the stream (done at a synchronize or an event recorded
 * after it), else the stream is synchronized after it.  Pageable memory is staged by libhpu:
 * a copy to it waits for the data, one from it returns once the data is staged, whatever
 * non_blocking says.  Negative and conjugate views (is_neg(), is_conj()) are resolved on
 * either side: the bits stored are those their values need.
 */
#include "hpu_torch.h"

#include <ATen/MemoryOverlap.h>
#include <ATen/WrapDimUtils.h>
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

// After a copy between host tensor host and the device on s: a blocking copy from or into
// pinned memory waits for the stream (one through pageable memory has already waited).
// libhpu decides what is pinned, as its copy did.
void settle(hpu_stream *s, c10::DeviceIndex index, const at::Tensor &host, bool non_blocking)
{
	if (non_blocking || !host.data_ptr())
		return;
	if (HPU_YES(hpu_host_is_pinned(device(index), host.data_ptr(), nbytes(host))))
		HPU_CHECK(hpu_stream_synchronize(s));
}

// dst on the device, src in host memory.
void upload(const at::Tensor &dst, const at::Tensor &src, bool non_blocking)
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
	settle(stream_of(dst), dst.device().index(), host, non_blocking);
}

// dst in host memory, src on the device.
void download(const at::Tensor &dst, const at::Tensor &src, bool non_blocking)
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
	HPU_CHECK(hpu_memcpy_d2h_async(stream_of(from), host.data_ptr(), address(from),
				       nbytes(from)));
	// A temporary is pageable: the data is there already.
	if (!host.is_same(dst))
		dst.copy_(host);
	else
		settle(stream_of(from), from.device().index(), host, non_blocking);
}

// t with its negative and conjugate bits cleared: the values its memory holds.
at::Tensor stored(const at::Tensor &t)
{
	at::Tensor s = t.is_neg() ? at::_neg_view(t) : t;

	return s.is_conj() ? at::_conj(s) : s;
}

// t's values as a view with t's bits flipped: what a view of t with them cleared must hold.
at::Tensor flip_bits_like(const at::Tensor &t, const at::Tensor &like)
{
	at::Tensor s = like.is_neg() ? at::_neg_view(t) : t;

	return like.is_conj() && s.is_complex() ? at::_conj(s) : s;
}

void copy_between(const at::Tensor &dst, const at::Tensor &src, bool non_blocking);

/*
 * A copy from src with the negative or conjugate bit into dst without: resolved by the host
 * (pytorch's CPU kernels) when src is in host memory; else the memory is copied as it is and
 * its values resolved where they landed: by the host, or by the device for a negation (the
 * device does not compute in complex dtypes: a conjugate goes through the host).
 */
void copy_resolving(const at::Tensor &dst, const at::Tensor &src, bool non_blocking)
{
	if (!is_hpu(src)) {
		copy_between(dst, src.resolve_conj().resolve_neg(), non_blocking);
	} else if (is_hpu(dst) && src.is_conj()) {
		at::Tensor host = at::empty(src.sizes(), src.options().device(at::kCPU));

		copy_resolving(host, src, false);
		copy_between(dst, host, non_blocking);
	} else {
		copy_between(dst, stored(src), false);
		if (src.is_conj() && dst.is_complex())
			dst.conj_physical_();
		if (src.is_neg())
			dst.neg_();
	}
}

void copy_between(const at::Tensor &dst, const at::Tensor &src, bool non_blocking)
{
	if (dst.numel() == 0)
		return;
	if (dst.is_neg() || dst.is_conj()) {
		// dst's memory holds src's values with dst's bits applied.
		copy_between(stored(dst), flip_bits_like(src, dst), non_blocking);
		return;
	}
	if (src.is_neg() || src.is_conj()) {
		copy_resolving(dst, src, non_blocking);
		return;
	}
	if (is_hpu(dst) && is_hpu(src) && dst.device() == src.device()) {
		at::assert_no_internal_overlap(dst);
		at::assert_no_partial_overlap(dst, src);
		device_copy(dst, src);
	} else if (is_hpu(dst) && is_hpu(src)) {
		// Between devices: through the host.
		upload(dst, src.cpu(), non_blocking);
	} else if (is_hpu(dst)) {
		upload(dst, src, non_blocking);
	} else {
		TORCH_CHECK(is_hpu(src), "hpu: a copy from ", src.device(), " to ", dst.device());
		download(dst, src, non_blocking);
	}
}

} // namespace

void copy_into(const at::Tensor &dst, const at::Tensor &src)
{
	copy_between(dst, src, false);
}

namespace {

at::Tensor copy_from(const at::Tensor &self, const at::Tensor &dst, bool non_blocking)
{
	copy_between(dst, self, non_blocking);
	return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor &self, const at::Tensor &dst)
{
	if (dst.sizes() != self.sizes())
		dst.resize_(self.sizes());
	copy_into(dst, self);
	return dst;
}

/*
 * Inputs of one device, of the output's rank, agreeing off dim (1-d empty ones skipped, as
 * PyTorch does), none overlapping the output (PyTorch's error); else the CPU fallback, which
 * raises PyTorch's other errors (0-dim inputs, sizes that disagree).
 */
at::Tensor &cat_out(const at::ITensorListRef &tensors, int64_t dim, at::Tensor &out)
{
	std::vector<at::Tensor> in;

	for (const at::Tensor &t : tensors)
		if (t.dim() != 1 || t.numel())
			in.push_back(t);
	bool ok = !in.empty() && in[0].dim() && on_device(out);
	int64_t d = ok ? at::maybe_wrap_dim(dim, in[0].dim()) : 0;
	std::vector<int64_t> sizes = in.empty() ? std::vector<int64_t>() : in[0].sizes().vec();

	if (ok)
		sizes[d] = 0;
	for (size_t i = 0; ok && i < in.size(); i++) {
		const at::Tensor &t = in[i];

		ok = on_device(t) && t.device() == out.device() && t.dim() == in[0].dim();
		if (ok)
			at::assert_no_overlap(out, t);
		for (int64_t k = 0; ok && k < t.dim(); k++)
			ok = k == d || t.size(k) == in[0].size(k);
		sizes[d] += ok ? t.size(d) : 0;
	}
	if (!ok)
		return fall_back<at::_ops::cat_out>(tensors, dim, out);
	resize_out(out, sizes);
	int64_t at = 0;
	for (const at::Tensor &t : in) {
		copy_into(out.narrow(d, at, t.size(d)), t);
		at += t.size(d);
	}
	return out;
}

TORCH_LIBRARY_IMPL(aten, HPU, m)
{
	m.impl("_copy_from", copy_from);
	m.impl("_copy_from_and_resize", copy_from_and_resize);
	m.impl("cat.out", cat_out);
}

/*
 * PyTorch's fallback for tensors with the negative or conjugate bit resolves an op's inputs
 * into new tensors, and _copy_from's schema does not say that it writes dst: a copy into such
 * a view would land in a temporary.  These copies see the bits and resolve them themselves.
 */
TORCH_LIBRARY_IMPL(aten, Negative, m)
{
	m.impl("_copy_from", torch::CppFunction::makeFallthrough());
	m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

TORCH_LIBRARY_IMPL(aten, Conjugate, m)
{
	m.impl("_copy_from", torch::CppFunction::makeFallthrough());
	m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

} // namespace
} // namespace hpu_torch
