// SPDX-License-Identifier: MIT
/*
 * Group norm at the HPU key, forward and backward, on libhpu's group-norm ops.  PyTorch 1.13
 * sends nn.GroupNorm and F.group_norm (group_norm, CompositeImplicitAutograd) to
 * native_group_norm, and its autograd to native_group_norm_backward.
 *
 * mean and rstd are always F32 [N, G] (the CPU gives them the input's dtype): only the
 * backward reads them, and it takes them in F32 on the device.  What the device cannot take
 * (no element per channel, more partials than its scratch holds, operands off the device)
 * goes to the CPU fallback, which answers as PyTorch does.
 */
#include "hpu_torch.h"

#include <torch/library.h>

namespace hpu_torch {
namespace {

// The device's bound on a launch's partials, and its chunk of a row (hpu_op_group_norm()).
constexpr int64_t max_parts = int64_t(1) << 19, chunk = int64_t(1) << 19;

// input [N, C, ...] floating on the device with N C HxW its elements, every one of N, C and
// HxW at least 1, group dividing C, within the device's bound; every given [C] operand floating
// on input's device.
bool gn_ok(const at::Tensor &input, int64_t n, int64_t c, int64_t hw, int64_t group,
	   std::initializer_list<const c10::optional<at::Tensor> *> chans)
{
	if (!floating_on_device(input) || input.dim() < 2 || n < 1 || c < 1 || hw < 1 ||
	    group < 1 || c % group || input.size(0) != n || input.size(1) != c ||
	    input.numel() != n * c * hw || n * c * ((hw + chunk - 1) / chunk) + n * group > max_parts)
		return false;
	for (const auto *t : chans)
		if (*t && (*t)->defined() &&
		    (!floating_on_device(**t) || (*t)->device() != input.device() ||
		     (*t)->dim() != 1 || (*t)->size(0) != c))
			return false;
	return true;
}

// An F32 [N, G] statistic on input's device.
bool stat_ok(const at::Tensor &t, const at::Tensor &input, int64_t n, int64_t group)
{
	return t.scalar_type() == at::kFloat && t.device() == input.device() &&
	       t.sizes() == at::IntArrayRef({n, group});
}

std::tuple<at::Tensor, at::Tensor, at::Tensor>
native_group_norm(const at::Tensor &input, const c10::optional<at::Tensor> &weight,
		  const c10::optional<at::Tensor> &bias, int64_t n, int64_t c, int64_t hw,
		  int64_t group, double eps)
{
	if (!gn_ok(input, n, c, hw, group, {&weight, &bias}) || !(eps >= 0))
		return fall_back<at::_ops::native_group_norm>(input, weight, bias, n, c, hw, group,
							      eps);
	at::Tensor out = at::empty(input.sizes(), input.options());
	at::Tensor mean = at::empty({n, group}, input.options().dtype(at::kFloat));
	at::Tensor rstd = at::empty({n, group}, input.options().dtype(at::kFloat));
	auto w = maybe_view(weight), b = maybe_view(bias);

	HPU_CHECK(hpu_op_group_norm(stream_of(out), View(out), View(mean), View(rstd), View(input),
				    handle(w), handle(b), unsigned(group), eps));
	return {out, mean, rstd};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor>
native_group_norm_backward(const at::Tensor &grad_out, const at::Tensor &input,
			   const at::Tensor &mean, const at::Tensor &rstd,
			   const c10::optional<at::Tensor> &weight, int64_t n, int64_t c,
			   int64_t hw, int64_t group, std::array<bool, 3> output_mask)
{
	if (!gn_ok(input, n, c, hw, group, {&weight}) || !same_floats(grad_out, {input}) ||
	    grad_out.sizes() != input.sizes() || !stat_ok(mean, input, n, group) ||
	    !stat_ok(rstd, input, n, group))
		return fall_back<at::_ops::native_group_norm_backward>(
			grad_out, input, mean, rstd, weight, n, c, hw, group, output_mask);
	at::TensorOptions param = weight && weight->defined() ? weight->options() : input.options();
	at::Tensor grad_in, grad_w, grad_b;

	if (output_mask[0])
		grad_in = at::empty(input.sizes(), input.options());
	if (output_mask[1])
		grad_w = at::empty({c}, param);
	if (output_mask[2])
		grad_b = at::empty({c}, param);
	if (output_mask[0] || output_mask[1] || output_mask[2]) {
		auto gi = maybe_view(grad_in), gw = maybe_view(grad_w), gb = maybe_view(grad_b);
		auto w = maybe_view(weight);

		HPU_CHECK(hpu_op_group_norm_backward(stream_of(grad_out), handle(gi), handle(gw),
						     handle(gb), View(grad_out), View(input),
						     View(mean), View(rstd), handle(w),
						     unsigned(group)));
	}
	return {grad_in, grad_w, grad_b};
}

TORCH_LIBRARY_IMPL(aten, HPU, m)
{
	m.impl("native_group_norm", native_group_norm);
	m.impl("native_group_norm_backward", native_group_norm_backward);
}

} // namespace
} // namespace hpu_torch
