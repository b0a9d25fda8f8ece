// SPDX-License-Identifier: MIT
/*
 * Index kernels at the HPU key: index_select, gather, scatter_add, scatter (with a src or a
 * number), index_add and topk, on libhpu's ops; with them their backwards stay on the device
 * (index_select's is index_add into zeros, gather's scatter_add, topk's scatter, scatter's a
 * scatter of zeros and a gather).
 *
 * gather, scatter_add, scatter, index_add and topk are structured: PyTorch's functional and
 * in-place variants make their outputs and call these out= kernels.  A call the device cannot
 * take (another dtype, an index tensor of a dtype or shape PyTorch refuses, alpha != 1,
 * outputs sharing memory with inputs) goes to the CPU fallback, which also gives PyTorch's
 * own errors.  Index values are the device's to check: an out-of-range or negative one
 * fails the launch, and the error reaches Python at the next synchronization.
 */
#include "hpu_torch.h"

#include <ATen/WrapDimUtils.h>
#include <torch/library.h>

namespace hpu_torch {
namespace {

// A device tensor of one of types, on like's device.
bool on_device_as(const at::Tensor &t, const at::Tensor &like,
		  std::initializer_list<at::ScalarType> types)
{
	if (!on_device(t) || t.device() != like.device())
		return false;
	for (at::ScalarType type : types)
		if (t.scalar_type() == type)
			return true;
	return false;
}

// The dtypes the device adds, compares and scatters.
const std::initializer_list<at::ScalarType> kNumbers = {at::kFloat, at::kBFloat16, at::kInt,
							  at::kLong};

// index and src have self's dims, index no larger than src nor than self but along dim.
bool scatter_shapes(const at::Tensor &self, int64_t dim, const at::Tensor &index,
		    const at::Tensor &src)
{
	if (index.dim() != self.dim() || src.dim() != self.dim())
		return false;
	for (int64_t d = 0; d < self.dim(); d++)
		if (index.size(d) > src.size(d) || (d != dim && index.size(d) > self.size(d)))
			return false;
	return true;
}

/*
 * out is self's values (when it is not self) for a scatter into it by an index of one of
 * index_types; false, nothing done, if the device cannot take the operands.
 */
bool scatter_target(const at::Tensor &self, const at::Tensor &index, const at::Tensor &src,
		    const at::Tensor &out, std::initializer_list<at::ScalarType> index_types)
{
	if (!on_device_as(self, self, kNumbers) || !on_device_as(src, self, {self.scalar_type()}) ||
	    !on_device_as(index, self, index_types) || out.scalar_type() != self.scalar_type() ||
	    out.device() != self.device() || shares_storage(out, index) ||
	    shares_storage(out, src) || (!out.is_same(self) && shares_storage(out, self)))
		return false;
	if (!out.is_same(self)) {
		resize_out(out, self.sizes());
		out.copy_(self);
	}
	return true;
}

template <class Op, int (*Fn)(hpu_stream *, hpu_tensor *, const hpu_tensor *,
			      const hpu_tensor *, int64_t)>
at::Tensor &scatter_out(const at::Tensor &self, int64_t dim, const at::Tensor &index,
			const at::Tensor &src, at::Tensor &out)
{
	int64_t d = at::maybe_wrap_dim(dim, self.dim());

	// PyTorch's scatters take Long indices alone.
	if (!scatter_shapes(self, d, index, src) ||
	    !scatter_target(self, index, src, out, {at::kLong}))
		return fall_back<Op>(self, dim, index, src, out);
	if (index.numel())
		HPU_CHECK(Fn(stream_of(out), View(out), View(index), View(src), d));
	return out;
}

// scatter_ of a number: the number as a 0-dim device tensor broadcast over index.
at::Tensor &scatter_value_out(const at::Tensor &self, int64_t dim, const at::Tensor &index,
			      const at::Scalar &value, at::Tensor &out)
{
	at::Tensor src;

	if (on_device(self) && holds_exactly(self.scalar_type(), value))
		src = operand(at::scalar_tensor(value), self, self.scalar_type());
	if (!src.defined())
		return fall_back<at::_ops::scatter_value_out>(self, dim, index, value, out);
	return scatter_out<at::_ops::scatter_src_out, hpu_op_scatter>(
		self, dim, index, src.expand(index.sizes()), out);
}

bool select_ok(const at::Tensor &self, const at::Tensor &index)
{
	return on_device(self) && on_device_as(index, self, {at::kInt, at::kLong}) &&
	       index.dim() <= 1 && (self.dim() || index.numel() == 1);
}

at::Tensor &select_into(const at::Tensor &self, int64_t dim, const at::Tensor &index,
			at::Tensor &out)
{
	int64_t d = at::maybe_wrap_dim(dim, self.dim());
	std::vector<int64_t> sizes = self.sizes().vec();

	if (self.dim())
		sizes[d] = index.numel();
	resize_out(out, sizes);
	if (out.numel())
		HPU_CHECK(hpu_op_index_select(stream_of(out), View(out), View(self), View(index), d));
	return out;
}

at::Tensor &index_select_out(const at::Tensor &self, int64_t dim, const at::Tensor &index,
			     at::Tensor &out)
{
	if (!select_ok(self, index) || out.scalar_type() != self.scalar_type() ||
	    out.device() != self.device() || shares_storage(out, self) ||
	    shares_storage(out, index))
		return fall_back<at::_ops::index_select_out>(self, dim, index, out);
	return select_into(self, dim, index, out);
}

at::Tensor index_select(const at::Tensor &self, int64_t dim, const at::Tensor &index)
{
	if (!select_ok(self, index))
		return fall_back<at::_ops::index_select>(self, dim, index);
	at::Tensor out = at::empty({0}, self.options());

	return select_into(self, dim, index, out);
}

at::Tensor &gather_out(const at::Tensor &self, int64_t dim, const at::Tensor &index,
		       bool sparse_grad, at::Tensor &out)
{
	int64_t d = at::maybe_wrap_dim(dim, self.dim());
	bool ok = on_device(self) && on_device_as(index, self, {at::kLong}) &&
		  index.dim() == self.dim() && out.scalar_type() == self.scalar_type() &&
		  out.device() == self.device() && !shares_storage(out, self) &&
		  !shares_storage(out, index);

	for (int64_t k = 0; ok && k < self.dim(); k++)
		ok = k == d || index.size(k) <= self.size(k);
	if (!ok)
		return fall_back<at::_ops::gather_out>(self, dim, index, sparse_grad, out);
	resize_out(out, index.sizes());
	if (out.numel())
		HPU_CHECK(hpu_op_gather(stream_of(out), View(out), View(self), View(index), d));
	return out;
}

at::Tensor &index_add_out(const at::Tensor &self, int64_t dim, const at::Tensor &index,
			  const at::Tensor &source, const at::Scalar &alpha, at::Tensor &out)
{
	int64_t d = at::maybe_wrap_dim(dim, self.dim());
	bool ok = alpha.isIntegral(true) ? alpha.toLong() == 1 : alpha.toDouble() == 1;

	ok = ok && self.dim() && source.dim() == self.dim() && index.dim() <= 1;
	for (int64_t k = 0; ok && k < self.dim(); k++)
		ok = source.size(k) == (k == d ? index.numel() : self.size(k));
	if (!ok || !scatter_target(self, index, source, out, {at::kInt, at::kLong}))
		return fall_back<at::_ops::index_add_out>(self, dim, index, source, alpha, out);
	if (index.numel())
		HPU_CHECK(hpu_op_index_add(stream_of(out), View(out), View(index), View(source), d));
	return out;
}

std::tuple<at::Tensor &, at::Tensor &> topk_values(const at::Tensor &self, int64_t k,
						   int64_t dim, bool largest, bool sorted,
						   at::Tensor &values, at::Tensor &indices)
{
	int64_t d = at::maybe_wrap_dim(dim, self.dim());
	int64_t n = self.dim() ? self.size(d) : 1;
	std::vector<int64_t> sizes = self.sizes().vec();

	if (!on_device_as(self, self, kNumbers) || k < 0 || k > n || (!self.dim() && k != 1) ||
	    values.scalar_type() != self.scalar_type() || indices.scalar_type() != at::kLong ||
	    values.device() != self.device() || indices.device() != self.device() ||
	    shares_storage(values, self) || shares_storage(indices, self) ||
	    shares_storage(values, indices))
		return fall_back<at::_ops::topk_values>(self, k, dim, largest, sorted, values,
							 indices);
	if (self.dim())
		sizes[d] = k;
	resize_out(values, sizes);
	resize_out(indices, sizes);
	if (values.numel())
		HPU_CHECK(hpu_op_topk(stream_of(values), View(values), View(indices), View(self), k,
				      d, largest, sorted));
	return {values, indices};
}

TORCH_LIBRARY_IMPL(aten, HPU, m)
{
	namespace ops = at::_ops;

	m.impl("index_select", index_select);
	m.impl("index_select.out", index_select_out);
	m.impl("gather.out", gather_out);
	m.impl("scatter_add.out", scatter_out<ops::scatter_add_out, hpu_op_scatter_add>);
	m.impl("scatter.src_out", scatter_out<ops::scatter_src_out, hpu_op_scatter>);
	m.impl("scatter.value_out", scatter_value_out);
	m.impl("index_add.out", index_add_out);
	m.impl("topk.values", topk_values);
}

} // namespace
} // namespace hpu_torch
