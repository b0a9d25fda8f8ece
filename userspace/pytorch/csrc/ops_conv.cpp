// SPDX-License-Identifier: MIT
/*
 * Convolution at the HPU key, forward and backward, on libhpu's hpu_op_conv and
 * hpu_op_conv_backward.  PyTorch 1.13 sends a backend it does not know (every HPU
 * nn.Conv1d / nn.Conv2d / F.conv*d, after its own shape checks, padding='same' turned into
 * explicit padding and 1d viewed as 2d of height 1) to convolution_overrideable and, from
 * autograd's convolution_backward, to convolution_backward_overrideable: those are what this
 * file registers.
 *
 * A transposed convolution (conv_transpose1d/2d, weight [Cin, Cout / groups, k...]) is the
 * input gradient of the convolution that maps its output back onto its input with the same
 * weight: its forward runs CONV_BWD_INPUT (x as that convolution's grad_out) and adds the bias,
 * its input gradient CONV (grad_out convolved with the weight), its weight gradient
 * CONV_BWD_WEIGHT with the roles swapped (x as grad_out, grad_out as the input), its bias
 * gradient a sum of grad_out.  output_padding must be below the stride (each output size is
 * then the one that convolution maps back onto the input's).
 */
#include "hpu_torch.h"

#include <torch/library.h>

namespace hpu_torch {
namespace {

// libhpu's parameters from PyTorch's lists: two entries for 2d (height, width), one for 1d.
hpu_conv_params conv_params(at::IntArrayRef stride, at::IntArrayRef padding,
			    at::IntArrayRef dilation, int64_t groups, int64_t spatial)
{
	hpu_conv_params p{};
	int64_t first = 2 - spatial;

	TORCH_CHECK(spatial == 1 || spatial == 2, "hpu: convolution of ", spatial,
		    " spatial dims: the device has 1d and 2d");
	TORCH_CHECK(int64_t(stride.size()) == spatial && int64_t(padding.size()) == spatial &&
			    int64_t(dilation.size()) == spatial,
		    "hpu: convolution: stride, padding and dilation must have ", spatial,
		    " entries each");
	p.stride[0] = p.dilation[0] = 1;
	for (int64_t d = 0; d < spatial; d++) {
		p.stride[first + d] = stride[d];
		p.padding[first + d] = padding[d];
		p.dilation[first + d] = dilation[d];
	}
	p.groups = groups;
	return p;
}

// The operands a device convolution takes: one floating device dtype; output_padding only
// transposed, and below the stride.
void check_operands(const at::Tensor &input, const at::Tensor &weight, bool transposed,
		    at::IntArrayRef output_padding, at::IntArrayRef stride)
{
	for (size_t d = 0; d < output_padding.size(); d++) {
		TORCH_CHECK(transposed || output_padding[d] == 0,
			    "hpu: convolution: output_padding is for transposed ones");
		TORCH_CHECK(d >= stride.size() || output_padding[d] < stride[d],
			    "hpu: transposed convolution: output_padding ", output_padding[d],
			    " must be below the stride ", stride[d], " on the device");
	}
	TORCH_CHECK(floating_on_device(input) && same_floats(input, {weight}),
		    "hpu: convolution wants input and weight on one hpu device in one of float32 "
		    "and bfloat16, got ", input.scalar_type(), " and ", weight.scalar_type());
}

// The transposed convolution's output: x [N, Cin, ...] spread by weight [Cin, Cout / g, ...].
at::Tensor conv_transpose(const at::Tensor &x, const at::Tensor &weight, const at::Tensor &bias,
			  const hpu_conv_params &p, at::IntArrayRef output_padding)
{
	int64_t spatial = x.dim() - 2;
	std::vector<int64_t> sizes{x.size(0), weight.size(1) * p.groups};

	TORCH_CHECK(weight.size(0) == x.size(1), "hpu: transposed convolution: weight's ",
		    weight.size(0), " input channels for an input of ", x.size(1));
	for (int64_t d = 0; d < spatial; d++) {
		int64_t pd = 2 - spatial + d;
		int64_t size = (x.size(2 + d) - 1) * p.stride[pd] - 2 * p.padding[pd] +
			       p.dilation[pd] * (weight.size(2 + d) - 1) + output_padding[d] + 1;

		TORCH_CHECK(size > 0, "hpu: transposed convolution: output size ", size);
		sizes.push_back(size);
	}
	at::Tensor out = at::empty(sizes, x.options());

	if (!out.numel())
		return out;
	HPU_CHECK(hpu_op_conv_backward(stream_of(out), View(out), nullptr, nullptr, View(x),
				       View(out), View(weight), &p));
	if (bias.defined()) {
		std::vector<int64_t> shape(out.dim(), 1);

		shape[1] = bias.size(0);
		TORCH_CHECK(binary_into(HPU_BIN_ADD, out, out, bias.view(shape)),
			    "hpu: transposed convolution: the bias cannot be added on the device");
	}
	return out;
}

at::Tensor convolution_overrideable(const at::Tensor &input, const at::Tensor &weight,
				    const c10::optional<at::Tensor> &bias, at::IntArrayRef stride,
				    at::IntArrayRef padding, at::IntArrayRef dilation,
				    bool transposed, at::IntArrayRef output_padding, int64_t groups)
{
	check_operands(input, weight, transposed, output_padding, stride);
	bool has_bias = bias && bias->defined();
	TORCH_CHECK(!has_bias || same_floats(input, {*bias}),
		    "hpu: convolution's bias must be an hpu tensor of the input's dtype");
	int64_t spatial = input.dim() - 2;
	hpu_conv_params p = conv_params(stride, padding, dilation, groups, spatial);
	std::vector<int64_t> sizes{input.size(0), weight.size(0)};

	if (transposed)
		return conv_transpose(input, weight, has_bias ? *bias : at::Tensor(), p,
				      output_padding);
	for (int64_t d = 0; d < spatial; d++) {
		int64_t pd = 2 - spatial + d, span = p.dilation[pd] * (weight.size(2 + d) - 1) + 1;
		int64_t padded = input.size(2 + d) + 2 * p.padding[pd];

		TORCH_CHECK(padded >= span, "hpu: convolution: kernel of ", span,
			    " (dilated) past the padded input's ", padded);
		sizes.push_back((padded - span) / p.stride[pd] + 1);
	}
	at::Tensor out = at::empty(sizes, input.options());

	if (out.numel()) {
		std::unique_ptr<View> b = has_bias ? std::make_unique<View>(*bias) : nullptr;

		HPU_CHECK(hpu_op_conv(stream_of(out), View(out), View(input), View(weight),
				      b ? static_cast<hpu_tensor *>(*b) : nullptr, &p));
	}
	return out;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor>
convolution_backward_overrideable(const at::Tensor &grad_out, const at::Tensor &input,
				  const at::Tensor &weight, at::IntArrayRef stride,
				  at::IntArrayRef padding, at::IntArrayRef dilation,
				  bool transposed, at::IntArrayRef output_padding, int64_t groups,
				  std::array<bool, 3> output_mask)
{
	check_operands(input, weight, transposed, output_padding, stride);
	TORCH_CHECK(same_floats(input, {grad_out}),
		    "hpu: convolution backward: grad_output must be an hpu tensor of the input's "
		    "dtype");
	hpu_conv_params p = conv_params(stride, padding, dilation, groups, input.dim() - 2);
	at::Tensor grad_in, grad_w, grad_b;
	std::unique_ptr<View> gi, gw, gb;

	if (output_mask[0]) {
		grad_in = at::empty(input.sizes(), input.options());
		gi = std::make_unique<View>(grad_in);
	}
	if (output_mask[1]) {
		grad_w = at::empty(weight.sizes(), weight.options());
		gw = std::make_unique<View>(grad_w);
	}
	if (output_mask[2]) {
		grad_b = at::empty({transposed ? weight.size(1) * groups : weight.size(0)},
				   weight.options());
		gb = std::make_unique<View>(grad_b);
	}
	hpu_stream *s = stream_of(input);

	if (transposed) {
		// grad_in: grad_out convolved by the weight; grad_weight: that convolution's weight
		// gradient with input as its grad_out; grad_bias: grad_out summed but over dim 1.
		if (gi && grad_in.numel())
			HPU_CHECK(hpu_op_conv(s, *gi, View(grad_out), View(weight), nullptr, &p));
		if (gw)
			HPU_CHECK(hpu_op_conv_backward(s, nullptr, *gw, nullptr, View(input),
						       View(grad_out), View(weight), &p));
		if (gb)
			HPU_CHECK(hpu_op_reduce(s, HPU_RED_SUM, *gb, View(grad_out),
						((1u << grad_out.dim()) - 1) & ~2u));
		return {grad_in, grad_w, grad_b};
	}
	// Over an empty batch the device writes zeros into the weight's and the bias's grads.
	if (gi || gw || gb)
		HPU_CHECK(hpu_op_conv_backward(
			s, gi ? static_cast<hpu_tensor *>(*gi) : nullptr,
			gw ? static_cast<hpu_tensor *>(*gw) : nullptr,
			gb ? static_cast<hpu_tensor *>(*gb) : nullptr, View(grad_out), View(input),
			View(weight), &p));
	return {grad_in, grad_w, grad_b};
}

TORCH_LIBRARY_IMPL(aten, HPU, m)
{
	m.impl("convolution_overrideable", convolution_overrideable);
	m.impl("convolution_backward_overrideable", convolution_backward_overrideable);
}

} // namespace
} // namespace hpu_torch
