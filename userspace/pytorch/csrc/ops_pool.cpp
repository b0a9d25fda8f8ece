// SPDX-License-Identifier: MIT
/*
 * Pooling at the HPU key, forward and backward, on libhpu's 2-d pooling ops: max pooling with
 * indices, average pooling (ceil_mode, count_include_pad, divisor_override) and adaptive
 * average pooling.  PyTorch reaches these from the 1-d forms too (max_pool1d, avg_pool1d and
 * adaptive_avg_pool1d unsqueeze to 2-d), and sends a 1 x 1 adaptive pooling to mean.
 *
 * Output sizes are PyTorch's own (pooling_output_shape); parameters it refuses (a kernel,
 * stride or dilation below 1, padding past half the kernel, an empty output) go to the CPU
 * fallback, which raises PyTorch's error.
 */
#include "hpu_torch.h"

#include <array>

#include <ATen/native/Pool.h>
#include <torch/library.h>

namespace hpu_torch {
namespace {

// A pooling's {H, W} parameters as PyTorch gives them: one value for both, or two.
struct Window {
	std::array<int64_t, 2> kernel{}, stride{}, padding{}, dilation{1, 1};
	int64_t divisor = 0; // average pooling's divisor_override as libhpu takes it (0: none)
};

bool pair(at::IntArrayRef v, std::array<int64_t, 2> &out)
{
	if (v.size() != 1 && v.size() != 2)
		return false;
	out = {v[0], v.back()};
	return true;
}

/*
 * The window of a pooling of input [..., H, W] (3 or 4 dims, on the device in a float), and
 * its output's sizes; false where PyTorch would refuse it or the device cannot take it.
 */
bool window_of(const at::Tensor &input, at::IntArrayRef kernel, at::IntArrayRef stride,
	       at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode,
	       c10::optional<int64_t> divisor_override, Window &w, std::vector<int64_t> &out_sizes)
{
	if (!floating_on_device(input) || (input.dim() != 3 && input.dim() != 4) ||
	    !pair(kernel, w.kernel) || !pair(stride.empty() ? kernel : stride, w.stride) ||
	    !pair(padding, w.padding) || (!dilation.empty() && !pair(dilation, w.dilation)) ||
	    (divisor_override && *divisor_override <= 0))
		return false;
	w.divisor = divisor_override.value_or(0);
	out_sizes = input.sizes().vec();
	for (size_t a = 0; a < 2; a++) {
		int64_t n = input.size(input.dim() - 2 + a);

		if (w.kernel[a] < 1 || w.stride[a] < 1 || w.dilation[a] < 1 || w.padding[a] < 0 ||
		    w.padding[a] > w.kernel[a] / 2 || n < 1)
			return false;
		out_sizes[input.dim() - 2 + a] = at::native::pooling_output_shape<int64_t>(
			n, w.kernel[a], w.padding[a], w.stride[a], w.dilation[a], ceil_mode);
		if (out_sizes[input.dim() - 2 + a] < 1)
			return false;
	}
	return true;
}

std::tuple<at::Tensor, at::Tensor> max_pool2d_with_indices(const at::Tensor &input,
							   at::IntArrayRef kernel,
							   at::IntArrayRef stride,
							   at::IntArrayRef padding,
							   at::IntArrayRef dilation, bool ceil_mode)
{
	Window w;
	std::vector<int64_t> sizes;

	if (!window_of(input, kernel, stride, padding, dilation, ceil_mode, c10::nullopt, w, sizes))
		return fall_back<at::_ops::max_pool2d_with_indices>(input, kernel, stride, padding,
								    dilation, ceil_mode);
	at::Tensor out = at::empty(sizes, input.options());
	at::Tensor indices = at::empty(sizes, input.options().dtype(at::kLong));

	if (out.numel())
		HPU_CHECK(hpu_op_max_pool2d(stream_of(out), View(out), View(indices), View(input),
					    w.kernel.data(), w.stride.data(), w.padding.data(),
					    w.dilation.data()));
	return {out, indices};
}

at::Tensor max_pool2d_with_indices_backward(const at::Tensor &grad_out, const at::Tensor &input,
					    at::IntArrayRef kernel, at::IntArrayRef stride,
					    at::IntArrayRef padding, at::IntArrayRef dilation,
					    bool ceil_mode, const at::Tensor &indices)
{
	Window w;
	std::vector<int64_t> sizes;

	if (!window_of(input, kernel, stride, padding, dilation, ceil_mode, c10::nullopt, w, sizes) ||
	    !same_floats(grad_out, {input}) || grad_out.sizes() != at::IntArrayRef(sizes) ||
	    !on_device(indices) || indices.sizes() != grad_out.sizes() ||
	    (indices.scalar_type() != at::kLong && indices.scalar_type() != at::kInt))
		return fall_back<at::_ops::max_pool2d_with_indices_backward>(
			grad_out, input, kernel, stride, padding, dilation, ceil_mode, indices);
	at::Tensor grad_in = at::empty(input.sizes(), input.options());

	if (grad_in.numel())
		HPU_CHECK(hpu_op_max_pool2d_backward(stream_of(grad_in), View(grad_in),
						     View(grad_out), View(indices),
						     w.kernel.data(), w.stride.data(),
						     w.padding.data(), w.dilation.data()));
	return grad_in;
}

at::Tensor avg_pool2d(const at::Tensor &input, at::IntArrayRef kernel, at::IntArrayRef stride,
		      at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
		      c10::optional<int64_t> divisor_override)
{
	Window w;
	std::vector<int64_t> sizes;

	if (!window_of(input, kernel, stride, padding, {}, ceil_mode, divisor_override, w, sizes))
		return fall_back<at::_ops::avg_pool2d>(input, kernel, stride, padding, ceil_mode,
						       count_include_pad, divisor_override);
	at::Tensor out = at::empty(sizes, input.options());

	if (out.numel())
		HPU_CHECK(hpu_op_avg_pool2d(stream_of(out), View(out), View(input),
					    w.kernel.data(), w.stride.data(), w.padding.data(),
					    count_include_pad, w.divisor));
	return out;
}

at::Tensor avg_pool2d_backward(const at::Tensor &grad_out, const at::Tensor &input,
			       at::IntArrayRef kernel, at::IntArrayRef stride,
			       at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
			       c10::optional<int64_t> divisor_override)
{
	Window w;
	std::vector<int64_t> sizes;

	if (!window_of(input, kernel, stride, padding, {}, ceil_mode, divisor_override, w, sizes) ||
	    !same_floats(grad_out, {input}) ||
	    grad_out.sizes() != at::IntArrayRef(sizes))
		return fall_back<at::_ops::avg_pool2d_backward>(grad_out, input, kernel, stride,
								padding, ceil_mode,
								count_include_pad,
								divisor_override);
	at::Tensor grad_in = at::empty(input.sizes(), input.options());

	if (grad_in.numel())
		HPU_CHECK(hpu_op_avg_pool2d_backward(stream_of(grad_in), View(grad_in),
						     View(grad_out), w.kernel.data(),
						     w.stride.data(), w.padding.data(),
						     count_include_pad, w.divisor));
	return grad_in;
}

// An adaptive pooling the device takes: input [..., H, W] (3 or 4 dims), out sizes >= 1.
bool adaptive_ok(const at::Tensor &input, at::IntArrayRef output_size)
{
	return floating_on_device(input) && (input.dim() == 3 || input.dim() == 4) &&
	       output_size.size() == 2 && output_size[0] >= 1 && output_size[1] >= 1 &&
	       input.size(-1) >= 1 && input.size(-2) >= 1;
}

at::Tensor adaptive_avg_pool2d(const at::Tensor &input, at::IntArrayRef output_size)
{
	if (!adaptive_ok(input, output_size))
		return fall_back<at::_ops::_adaptive_avg_pool2d>(input, output_size);
	std::vector<int64_t> sizes = input.sizes().vec();
	sizes[sizes.size() - 2] = output_size[0];
	sizes[sizes.size() - 1] = output_size[1];
	at::Tensor out = at::empty(sizes, input.options());

	if (out.numel())
		HPU_CHECK(hpu_op_adaptive_avg_pool2d(stream_of(out), View(out), View(input)));
	return out;
}

at::Tensor adaptive_avg_pool2d_backward(const at::Tensor &grad_out, const at::Tensor &input)
{
	size_t lead = input.dim() < 3 ? 0 : input.dim() - 2;

	if (!lead || grad_out.dim() != input.dim() || !adaptive_ok(input, grad_out.sizes().slice(lead)) ||
	    !same_floats(grad_out, {input}) ||
	    grad_out.sizes().slice(0, lead) != input.sizes().slice(0, lead))
		return fall_back<at::_ops::_adaptive_avg_pool2d_backward>(grad_out, input);
	at::Tensor grad_in = at::empty(input.sizes(), input.options());

	if (grad_in.numel())
		HPU_CHECK(hpu_op_adaptive_avg_pool2d_backward(stream_of(grad_in), View(grad_in),
							      View(grad_out)));
	return grad_in;
}

TORCH_LIBRARY_IMPL(aten, HPU, m)
{
	m.impl("max_pool2d_with_indices", max_pool2d_with_indices);
	m.impl("max_pool2d_with_indices_backward", max_pool2d_with_indices_backward);
	m.impl("avg_pool2d", avg_pool2d);
	m.impl("avg_pool2d_backward", avg_pool2d_backward);
	m.impl("_adaptive_avg_pool2d", adaptive_avg_pool2d);
	m.impl("_adaptive_avg_pool2d_backward", adaptive_avg_pool2d_backward);
}

} // namespace
} // namespace hpu_torch
