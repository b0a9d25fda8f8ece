// SPDX-License-Identifier: MIT
/*
 * Batch norm at the HPU key, forward and backward, on libhpu's batch-norm ops.  PyTorch 1.13
 * sends nn.BatchNorm* and F.batch_norm (through batch_norm and _batch_norm_impl_index) to
 * native_batch_norm for a device without cuDNN, and its autograd to
 * native_batch_norm_backward; _native_batch_norm_legit does not exist yet.
 *
 * Training updates running_mean and running_var in place on the device (momentum, the
 * unbiased variance), as PyTorch does.  save_mean and save_invstd are always F32 [C], also in
 * eval (the running statistics' mean and 1 / sqrt(var + eps)), where the CPU returns empty
 * tensors: only the backward reads them.  The backward of eval reads running_mean and
 * running_var themselves.
 */
#include "hpu_torch.h"

#include <torch/library.h>

namespace hpu_torch {
namespace {

// input [N, C, ...] floating on the device; every given [C] operand too, on its device.
bool bn_ok(const at::Tensor &input, std::initializer_list<const c10::optional<at::Tensor> *> chans)
{
	if (!floating_on_device(input) || input.dim() < 2)
		return false;
	for (const auto *t : chans)
		if (*t && (*t)->defined() &&
		    (!floating_on_device(**t) || (*t)->device() != input.device() ||
		     (*t)->dim() != 1 || (*t)->size(0) != input.size(1)))
			return false;
	return true;
}

bool given(const c10::optional<at::Tensor> &t)
{
	return t && t->defined();
}

std::tuple<at::Tensor, at::Tensor, at::Tensor>
native_batch_norm(const at::Tensor &input, const c10::optional<at::Tensor> &weight,
		  const c10::optional<at::Tensor> &bias,
		  const c10::optional<at::Tensor> &running_mean,
		  const c10::optional<at::Tensor> &running_var, bool training, double momentum,
		  double eps)
{
	bool running = given(running_mean) && given(running_var);

	// Eval without statistics, or training on no element: PyTorch's CPU answer.
	if (!bn_ok(input, {&weight, &bias, &running_mean, &running_var}) ||
	    given(running_mean) != given(running_var) || (!training && !running) ||
	    (training && !input.numel()))
		return fall_back<at::_ops::native_batch_norm>(input, weight, bias, running_mean,
							      running_var, training, momentum,
							      eps);
	at::Tensor out = at::empty(input.sizes(), input.options());
	at::Tensor save_mean = at::empty({input.size(1)}, input.options().dtype(at::kFloat));
	at::Tensor save_invstd = at::empty({input.size(1)}, input.options().dtype(at::kFloat));
	auto w = maybe_view(weight), b = maybe_view(bias);
	auto rm = maybe_view(running_mean), rv = maybe_view(running_var);

	if (input.size(1))
		HPU_CHECK(hpu_op_batch_norm(stream_of(out), View(out), View(save_mean),
					    View(save_invstd), View(input), handle(w), handle(b),
					    handle(rm), handle(rv), training ? HPU_BN_TRAINING : 0,
					    momentum, eps));
	return {out, save_mean, save_invstd};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor>
native_batch_norm_backward(const at::Tensor &grad_out, const at::Tensor &input,
			   const c10::optional<at::Tensor> &weight,
			   const c10::optional<at::Tensor> &running_mean,
			   const c10::optional<at::Tensor> &running_var,
			   const c10::optional<at::Tensor> &save_mean,
			   const c10::optional<at::Tensor> &save_invstd, bool train, double eps,
			   std::array<bool, 3> output_mask)
{
	const c10::optional<at::Tensor> &mean = train ? save_mean : running_mean;
	const c10::optional<at::Tensor> &stat = train ? save_invstd : running_var;

	if (!bn_ok(input, {&weight, &mean, &stat}) || !given(mean) || !given(stat) ||
	    !same_floats(grad_out, {input}) || grad_out.sizes() != input.sizes() ||
	    (train && !input.numel()))
		return fall_back<at::_ops::native_batch_norm_backward>(
			grad_out, input, weight, running_mean, running_var, save_mean, save_invstd,
			train, eps, output_mask);
	at::Tensor grad_in = at::empty(input.sizes(), input.options());
	at::Tensor grad_w, grad_b;
	at::TensorOptions param = given(weight) ? weight->options() : input.options();

	if (output_mask[1])
		grad_w = at::empty({input.size(1)}, param);
	if (output_mask[2])
		grad_b = at::empty({input.size(1)}, param);
	if (input.size(1)) {
		auto gw = maybe_view(grad_w), gb = maybe_view(grad_b), w = maybe_view(weight);
		unsigned int flags = train ? HPU_BN_TRAINING : HPU_BN_VAR;

		HPU_CHECK(hpu_op_batch_norm_backward(stream_of(grad_in), View(grad_in), handle(gw),
						     handle(gb), View(grad_out), View(input),
						     View(*mean), View(*stat), handle(w), flags,
						     eps));
	}
	return {output_mask[0] ? grad_in : at::Tensor(), grad_w, grad_b};
}

TORCH_LIBRARY_IMPL(aten, HPU, m)
{
	m.impl("native_batch_norm", native_batch_norm);
	m.impl("native_batch_norm_backward", native_batch_norm_backward);
}

} // namespace
} // namespace hpu_torch
