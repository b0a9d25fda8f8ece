// SPDX-License-Identifier: MIT
/*
 * Loss kernels at the HPU key: nll_loss forward and backward over [N, C] log-probabilities
 * and [N] targets (int64 or int32), without class weights (those go to the CPU fallback).
 * cross_entropy reaches them through PyTorch's composite (log_softmax, then nll_loss).  The
 * forward's total_weight - the targets counted - is computed on the device too.
 */
#include "hpu_torch.h"

#include <torch/library.h>

namespace hpu_torch {
namespace {

bool nll_ok(const at::Tensor &self, const at::Tensor &target,
	    const c10::optional<at::Tensor> &weight, int64_t reduction)
{
	return floating_on_device(self) && self.dim() == 2 && on_device(target) &&
	       target.device() == self.device() && target.dim() == 1 &&
	       (target.scalar_type() == at::kLong || target.scalar_type() == at::kInt) &&
	       target.size(0) == self.size(0) && !(weight && weight->defined()) &&
	       reduction >= HPU_LOSS_NONE && reduction <= HPU_LOSS_SUM;
}

std::tuple<at::Tensor &, at::Tensor &>
nll_loss_forward_out(const at::Tensor &self, const at::Tensor &target,
		     const c10::optional<at::Tensor> &weight, int64_t reduction,
		     int64_t ignore_index, at::Tensor &output, at::Tensor &total_weight)
{
	if (!nll_ok(self, target, weight, reduction) || !same_floats(output, {self}) ||
	    !same_floats(total_weight, {self}) || !self.size(0))
		return fall_back<at::_ops::nll_loss_forward_output>(self, target, weight, reduction,
								     ignore_index, output,
								     total_weight);
	hpu_stream *s = stream_of(output);
	at::Tensor counted = at::empty({self.size(0)}, self.options());

	resize_out(output, reduction == HPU_LOSS_NONE ? at::IntArrayRef{self.size(0)}
						      : at::IntArrayRef{});
	resize_out(total_weight, {});
	HPU_CHECK(hpu_op_nll_loss(s, View(output), View(self), View(target),
				  hpu_loss_reduction(reduction), ignore_index));
	HPU_CHECK(hpu_op_binary_scalar(s, HPU_BIN_NE, View(counted), View(target),
				       double(ignore_index)));
	HPU_CHECK(hpu_op_reduce(s, HPU_RED_SUM, View(total_weight), View(counted), 1));
	return {output, total_weight};
}

at::Tensor &nll_loss_backward_out(const at::Tensor &grad_output, const at::Tensor &self,
				  const at::Tensor &target, const c10::optional<at::Tensor> &weight,
				  int64_t reduction, int64_t ignore_index,
				  const at::Tensor &total_weight, at::Tensor &grad_input)
{
	if (!nll_ok(self, target, weight, reduction) || !same_floats(grad_input, {grad_output}))
		return fall_back<at::_ops::nll_loss_backward_grad_input>(
			grad_output, self, target, weight, reduction, ignore_index, total_weight,
			grad_input);
	resize_out(grad_input, self.sizes());
	if (grad_input.numel())
		HPU_CHECK(hpu_op_nll_loss_backward(stream_of(grad_input), View(grad_input),
						   View(grad_output), View(target),
						   hpu_loss_reduction(reduction), ignore_index));
	return grad_input;
}

TORCH_LIBRARY_IMPL(aten, HPU, m)
{
	m.impl("nll_loss_forward.output", nll_loss_forward_out);
	m.impl("nll_loss_backward.grad_input", nll_loss_backward_out);
}

} // namespace
} // namespace hpu_torch
