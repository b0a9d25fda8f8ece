// SPDX-License-Identifier: MIT
/*
 * Reductions at the HPU key: sum, mean, amax/amin, argmax/argmin, max/min along a dim (values
 * and indices) and of everything, on libhpu's hpu_op_reduce; vector norms from these and
 * elementwise ops.  The out= variants serve PyTorch's functional ones (which size the
 * output); the input is cast on the device to the output's dtype first where they differ (sum
 * of bool or int32 into int64, sum with dtype=).  0-dim and empty inputs, and a dim=None
 * argmax keeping its dims, go to the CPU fallback.
 */
#include "hpu_torch.h"

#include <cmath>

#include <ATen/WrapDimUtils.h>
#include <torch/library.h>

namespace hpu_torch {
namespace {

// The dims reduced, as libhpu's mask (bit d: dim d); none or an empty list: every dim.
uint32_t dims_mask(const at::Tensor &in, at::OptionalIntArrayRef dims)
{
	uint32_t mask = 0;

	if (!dims || dims->empty())
		return (1u << in.dim()) - 1;
	for (int64_t d : *dims)
		mask |= 1u << at::maybe_wrap_dim(d, in.dim());
	return mask;
}

std::vector<int64_t> reduced_sizes(const at::Tensor &in, uint32_t mask, bool keepdim)
{
	std::vector<int64_t> sizes;

	for (int64_t d = 0; d < in.dim(); d++) {
		if (!(mask & (1u << d)))
			sizes.push_back(in.size(d));
		else if (keepdim)
			sizes.push_back(1);
	}
	return sizes;
}

// out = fn of in over mask's dims; false if the device cannot.
bool reduce_into(enum hpu_reduce_fn fn, const at::Tensor &out, const at::Tensor &in,
		 uint32_t mask, bool keepdim)
{
	bool arg = fn == HPU_RED_ARGMAX || fn == HPU_RED_ARGMIN;

	if (!on_device(out) || !viewable(in) || in.dim() == 0 || !in.numel() ||
	    out.scalar_type() == at::kBool || (arg && out.scalar_type() != at::kLong))
		return false;
	at::Tensor x = operand(in, out, arg ? in.scalar_type() : out.scalar_type());
	if (!x.defined())
		return false;
	resize_out(out, reduced_sizes(in, mask, keepdim));
	HPU_CHECK(hpu_op_reduce(stream_of(out), fn, View(out), View(x), mask));
	return true;
}

template <enum hpu_reduce_fn Fn, class Op>
at::Tensor &sum_out(const at::Tensor &self, at::OptionalIntArrayRef dim, bool keepdim,
		    c10::optional<at::ScalarType> dtype, at::Tensor &out)
{
	if (reduce_into(Fn, out, self, dims_mask(self, dim), keepdim))
		return out;
	return fall_back<Op>(self, dim, keepdim, dtype, out);
}

template <enum hpu_reduce_fn Fn, class Op>
at::Tensor &amax_out(const at::Tensor &self, at::IntArrayRef dim, bool keepdim, at::Tensor &out)
{
	if (out.scalar_type() == self.scalar_type() &&
	    reduce_into(Fn, out, self, dims_mask(self, dim), keepdim))
		return out;
	return fall_back<Op>(self, dim, keepdim, out);
}

/*
 * The p-norm over dims (torch.norm, clip_grad_norm_): sum(|x|^p)^(1/p) from the device's abs,
 * pow, sum and sqrt; max or min of |x| for +-inf; the count of non-zeros for 0.  Negative p
 * but -inf, a dtype=, 0-dim and empty inputs fall back.
 */
at::Tensor &norm_out(const at::Tensor &self, const c10::optional<at::Scalar> &p,
		     at::IntArrayRef dim, bool keepdim, at::Tensor &out)
{
	double ord = p && !p->isComplex() ? p->toDouble() : 2;

	if ((p && p->isComplex()) || (ord < 0 && !std::isinf(ord)) || !self.dim() ||
	    !self.numel() || !same_floats(out, {self}))
		return fall_back<at::_ops::norm_out>(self, p, dim, keepdim, out);
	at::Tensor a = self.abs(), r;
	if (std::isinf(ord))
		r = ord > 0 ? at::amax(a, dim, keepdim) : at::amin(a, dim, keepdim);
	else if (ord == 0)
		r = at::sum(a.ne(0), dim, keepdim, out.scalar_type());
	else if (ord == 1)
		r = at::sum(a, dim, keepdim);
	else if (ord == 2)
		r = at::sum(a * a, dim, keepdim).sqrt();
	else
		r = at::sum(a.pow(ord), dim, keepdim).pow(1 / ord);
	resize_out(out, r.sizes());
	copy_into(out, r);
	return out;
}

// dim=None: the index into the flattened input.
template <enum hpu_reduce_fn Fn, class Op>
at::Tensor &argmax_out(const at::Tensor &self, c10::optional<int64_t> dim, bool keepdim,
		       at::Tensor &out)
{
	if (dim && self.dim() && reduce_into(Fn, out, self, dims_mask(self, *dim), keepdim))
		return out;
	if (!dim && !keepdim && self.dim()) {
		at::Tensor flat = self.reshape({-1});

		if (reduce_into(Fn, out, flat, 1, false))
			return out;
	}
	return fall_back<Op>(self, dim, keepdim, out);
}

// Values and indices along one dim: two reductions.
template <enum hpu_reduce_fn Fn, enum hpu_reduce_fn ArgFn, class Op>
std::tuple<at::Tensor &, at::Tensor &> max_dim_out(const at::Tensor &self, int64_t dim,
						   bool keepdim, at::Tensor &values,
						   at::Tensor &indices)
{
	if (self.dim() && values.scalar_type() == self.scalar_type()) {
		uint32_t mask = dims_mask(self, dim);

		if (reduce_into(ArgFn, indices, self, mask, keepdim) &&
		    reduce_into(Fn, values, self, mask, keepdim))
			return {values, indices};
	}
	return fall_back<Op>(self, dim, keepdim, values, indices);
}

template <enum hpu_reduce_fn Fn, class Op>
at::Tensor max_all(const at::Tensor &self)
{
	at::Tensor out = at::empty({}, self.options());

	if (self.dim() && reduce_into(Fn, out, self, dims_mask(self, c10::nullopt), false))
		return out;
	return fall_back<Op>(self);
}

TORCH_LIBRARY_IMPL(aten, HPU, m)
{
	namespace ops = at::_ops;

	m.impl("sum.IntList_out", sum_out<HPU_RED_SUM, ops::sum_IntList_out>);
	m.impl("mean.out", sum_out<HPU_RED_MEAN, ops::mean_out>);
	m.impl("amax.out", amax_out<HPU_RED_MAX, ops::amax_out>);
	m.impl("amin.out", amax_out<HPU_RED_MIN, ops::amin_out>);
	m.impl("argmax.out", argmax_out<HPU_RED_ARGMAX, ops::argmax_out>);
	m.impl("argmin.out", argmax_out<HPU_RED_ARGMIN, ops::argmin_out>);
	m.impl("norm.out", norm_out);
	m.impl("max.dim_max", max_dim_out<HPU_RED_MAX, HPU_RED_ARGMAX, ops::max_dim_max>);
	m.impl("min.dim_min", max_dim_out<HPU_RED_MIN, HPU_RED_ARGMIN, ops::min_dim_min>);
	m.impl("max", max_all<HPU_RED_MAX, ops::max>);
	m.impl("min", max_all<HPU_RED_MIN, ops::min>);
}

} // namespace
} // namespace hpu_torch
