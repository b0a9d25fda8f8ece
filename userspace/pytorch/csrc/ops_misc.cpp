// SPDX-License-Identifier: MIT
/*
 * What a small GPT and CNN need besides layers, at the HPU key: triu and tril, arange, the
 * MSE loss forward and backward, binary_cross_entropy_with_logits (its backward is PyTorch's
 * formula of device ops), and RMSNorm as ops of the extension's own "hpu" namespace
 * (hpu::rms_norm, hpu::rms_norm_backward), which hpu_torch.hpex.normalization.FusedRMSNorm
 * wraps in an autograd Function: PyTorch 1.13 has no RMSNorm.
 *
 * arange is exact: the device reproduces the CPU loop's rounding (hpu_op_arange()), its lanes
 * and its threads' ranges as this process's CPU would run them.  The losses are compositions
 * of device ops in PyTorch's own formulas, the stable log-sum-exp form for BCE.
 */
#include "hpu_torch.h"

#include <cmath>
#include <cstdlib>
#include <cstring>

#include <ATen/Parallel.h>
#include <ATen/TensorIterator.h>
#include <torch/library.h>

namespace hpu_torch {
namespace {

// torch.triu (Upper) and torch.tril: functional and in-place reach this through PyTorch.
template <bool Upper, class Op>
at::Tensor &triangle_out(const at::Tensor &self, int64_t diagonal, at::Tensor &out)
{
	if (!on_device(out) || !on_device(self) || self.device() != out.device() ||
	    self.scalar_type() != out.scalar_type() || self.dim() < 2)
		return fall_back<Op>(self, diagonal, out);
	resize_out(out, self.sizes());
	if (out.numel())
		HPU_CHECK(hpu_op_triangle(stream_of(out), View(out), View(self), diagonal, Upper));
	return out;
}

/*
 * The bytes of the CPU's vectors (at::vec::Vectorized) in the capability ATen picks as it
 * does: ATEN_CPU_CAPABILITY, else AVX512 where the CPU has what ATen asks of it; AVX2 and
 * the default both hold 32 bytes.
 */
size_t cpu_vector_bytes()
{
	const char *env = std::getenv("ATEN_CPU_CAPABILITY");

	if (env && (!std::strcmp(env, "default") || !std::strcmp(env, "avx2")))
		return 32;
	if (env && !std::strcmp(env, "avx512"))
		return 64;
#if defined(__x86_64__)
	if (__builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") &&
	    __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("fma"))
		return 64;
#endif
	return 32;
}

// The range of n elements each of the CPU's threads computes (at::parallel_for); 0: one.
uint64_t cpu_chunk(int64_t n)
{
	int64_t grain = at::internal::GRAIN_SIZE, threads = at::get_num_threads();

	if (n <= grain || threads <= 1 || at::in_parallel_region())
		return 0;
	threads = std::min(threads, at::divup(n, grain));
	return uint64_t(at::divup(n, threads));
}

// The element count of arange(start, end, step) into type, as PyTorch's arange_out.
int64_t arange_size(const at::Scalar &start, const at::Scalar &end, const at::Scalar &step,
		    at::ScalarType type)
{
	double xs = start.to<double>(), xe = end.to<double>(), xstep = step.to<double>(), size;

	TORCH_CHECK(xstep > 0 || xstep < 0, "step must be nonzero");
	TORCH_CHECK(std::isfinite(xs) && std::isfinite(xe), "unsupported range: ", xs, " -> ", xe);
	TORCH_CHECK((xstep > 0 && xe >= xs) || (xstep < 0 && xe <= xs),
		    "upper bound and larger bound inconsistent with step sign");
	if (type == at::kLong) {
		int64_t s = start.to<int64_t>(), e = end.to<int64_t>(), st = step.to<int64_t>();
		int64_t sgn = (st > 0) - (st < 0);

		size = std::ceil(double((e - s + st - sgn) / st));
	} else {
		size = std::ceil((xe - xs) / xstep);
	}
	TORCH_CHECK(size >= 0 && size <= double(std::numeric_limits<int64_t>::max()),
		    "invalid size, possible overflow?");
	return int64_t(size);
}

bool whole(const at::Scalar &v)
{
	double d = v.to<double>();

	return std::trunc(d) == d && std::fabs(d) < 0x1p53;
}

at::Tensor &arange_out(const at::Scalar &start, const at::Scalar &end, const at::Scalar &step,
		       at::Tensor &out)
{
	at::ScalarType type = out.scalar_type();
	bool integral = at::isIntegralType(type, false);

	if (!on_device(out) || type == at::kBool || start.isComplex() || end.isComplex() ||
	    step.isComplex() || (integral && !(whole(start) && whole(step))))
		return fall_back<at::_ops::arange_start_out>(start, end, step, out);
	int64_t n = arange_size(start, end, step, type);

	if (out.numel() != n) {
		if (out.numel())
			TORCH_WARN("The number of elements in the out tensor of shape ", out.sizes(),
				   " is ", out.numel(), " which does not match the computed number",
				   " of elements ", n, ". The out tensor will be resized to a tensor",
				   " of shape (", n, ",).");
		out.resize_({n});
	}
	if (n)
		HPU_CHECK(hpu_op_arange(stream_of(out), View(out), start.to<double>(),
					step.to<double>(),
					unsigned(cpu_vector_bytes() / c10::elementSize(type)),
					cpu_chunk(n)));
	return out;
}

// The reduction PyTorch's losses name by number, over every element.
at::Tensor reduced(const at::Tensor &loss, int64_t reduction)
{
	if (reduction == at::Reduction::Mean)
		return loss.mean();
	return reduction == at::Reduction::Sum ? loss.sum() : loss;
}

bool loss_ok(const at::Tensor &out, const at::Tensor &self, const at::Tensor &target,
	     int64_t reduction)
{
	return same_floats(out, {self, target}) && reduction >= at::Reduction::None &&
	       reduction <= at::Reduction::Sum;
}

// (self - target)^2, reduced: PyTorch's formula, as device ops.
at::Tensor &mse_loss_out(const at::Tensor &self, const at::Tensor &target, int64_t reduction,
			 at::Tensor &out)
{
	if (!loss_ok(out, self, target, reduction))
		return fall_back<at::_ops::mse_loss_out>(self, target, reduction, out);
	at::Tensor d = self - target;

	if (reduction == at::Reduction::None)
		return at::mul_out(out, d, d);
	resize_out(out, {});
	out.copy_(reduced(d * d, reduction));
	return out;
}

// grad_input = norm * (self - target) * grad_output, norm 2 / numel for a mean, else 2.
at::Tensor &mse_loss_backward_out(const at::Tensor &grad_output, const at::Tensor &self,
				  const at::Tensor &target, int64_t reduction,
				  at::Tensor &grad_input)
{
	if (!loss_ok(grad_input, self, target, reduction) || !same_floats(grad_input, {grad_output}))
		return fall_back<at::_ops::mse_loss_backward_grad_input>(grad_output, self, target,
									  reduction, grad_input);
	double norm = reduction == at::Reduction::Mean ? 2. / double(self.numel()) : 2.;

	return at::mul_out(grad_input, (self - target).mul_(norm), grad_output);
}

at::Tensor mse_loss_backward(const at::Tensor &grad_output, const at::Tensor &self,
			     const at::Tensor &target, int64_t reduction)
{
	at::Tensor grad_input = at::empty({0}, self.options());

	return mse_loss_backward_out(grad_output, self, target, reduction, grad_input);
}

bool optional_ok(const at::Tensor &self, const c10::optional<at::Tensor> &t)
{
	return !t || !t->defined() || same_floats(self, {*t});
}

/*
 * PyTorch's numerically stable form: with m = max(-x, 0),
 * loss = (1 - y) x + l (log(exp(-m) + exp(-x - m)) + m), l = 1 + (pos_weight - 1) y
 * (1 without pos_weight), times weight.
 */
at::Tensor bce_with_logits(const at::Tensor &self, const at::Tensor &target,
			   const c10::optional<at::Tensor> &weight,
			   const c10::optional<at::Tensor> &pos_weight, int64_t reduction)
{
	if (!loss_ok(self, self, target, reduction) || !optional_ok(self, weight) ||
	    !optional_ok(self, pos_weight))
		return fall_back<at::_ops::binary_cross_entropy_with_logits>(self, target, weight,
									      pos_weight, reduction);
	at::Tensor m = at::clamp(-self, 0);
	at::Tensor log_sum = ((-m).exp_() + (-self - m).exp_()).log_();
	at::Tensor loss = target.neg().add_(1).mul_(self);

	// PyTorch's order of additions, which keeps a bf16 loss's roundings its own.
	if (pos_weight && pos_weight->defined())
		loss.add_(log_sum.add_(m).mul_((*pos_weight - 1).mul(target).add_(1)));
	else
		loss.add_(m).add_(log_sum);
	if (weight && weight->defined())
		loss.mul_(*weight);
	return reduced(loss, reduction);
}

// ---- RMSNorm over the last dim: rstd is F32 of the leading dims ----

void rms_check(const at::Tensor &input, const c10::optional<at::Tensor> &weight)
{
	TORCH_CHECK(floating_on_device(input) && input.dim() >= 1,
		    "hpu::rms_norm wants a floating hpu tensor of at least one dim, not ",
		    input.toString(), " of ", input.dim(), " dims");
	TORCH_CHECK(!weight || !weight->defined() ||
			    (same_floats(input, {*weight}) && weight->dim() == 1 &&
			     weight->size(0) == input.size(-1)),
		    "hpu::rms_norm's weight must be [", input.size(-1), "] of the input's dtype ",
		    "and device");
}

std::tuple<at::Tensor, at::Tensor> rms_norm(const at::Tensor &input,
					    const c10::optional<at::Tensor> &weight, double eps)
{
	rms_check(input, weight);
	TORCH_CHECK(eps >= 0, "hpu::rms_norm's eps is ", eps, ", below 0");
	at::Tensor out = at::empty(input.sizes(), input.options());
	at::Tensor rstd = at::empty(input.sizes().slice(0, input.dim() - 1),
				    input.options().dtype(at::kFloat));

	if (input.numel()) {
		auto w = maybe_view(weight);

		HPU_CHECK(hpu_op_rms_norm(stream_of(out), View(out), View(rstd), View(input),
					  handle(w), 1, eps));
	}
	return {out, rstd};
}

std::tuple<at::Tensor, at::Tensor> rms_norm_backward(const at::Tensor &grad_out,
						     const at::Tensor &input,
						     const at::Tensor &rstd,
						     const c10::optional<at::Tensor> &weight)
{
	rms_check(input, weight);
	TORCH_CHECK(same_floats(grad_out, {input}) && grad_out.sizes() == input.sizes(),
		    "hpu::rms_norm_backward's grad_out must have the input's shape and dtype");
	at::Tensor grad_in = at::empty(input.sizes(), input.options()), grad_w;
	bool has_weight = weight && weight->defined();

	if (has_weight)
		grad_w = at::empty(weight->sizes(), input.options());
	if (!input.numel()) {
		if (has_weight)
			grad_w.zero_();
		return {grad_in, grad_w};
	}
	auto gw = maybe_view(grad_w), w = maybe_view(weight);

	HPU_CHECK(hpu_op_rms_norm_backward(stream_of(grad_in), View(grad_in), handle(gw),
					   View(grad_out), View(input), View(rstd), handle(w), 1));
	return {grad_in, grad_w};
}

TORCH_LIBRARY_IMPL(aten, HPU, m)
{
	namespace ops = at::_ops;

	m.impl("triu.out", triangle_out<true, ops::triu_out>);
	m.impl("tril.out", triangle_out<false, ops::tril_out>);
	m.impl("arange.start_out", arange_out);
	m.impl("mse_loss.out", mse_loss_out);
	m.impl("mse_loss_backward", mse_loss_backward);
	m.impl("mse_loss_backward.grad_input", mse_loss_backward_out);
	m.impl("binary_cross_entropy_with_logits", bce_with_logits);
}

TORCH_LIBRARY_FRAGMENT(hpu, m)
{
	m.def("rms_norm(Tensor input, Tensor? weight, float eps) -> (Tensor, Tensor)");
	m.def("rms_norm_backward(Tensor grad_out, Tensor input, Tensor rstd, Tensor? weight) -> "
	      "(Tensor, Tensor)");
}

TORCH_LIBRARY_IMPL(hpu, HPU, m)
{
	m.impl("rms_norm", rms_norm);
	m.impl("rms_norm_backward", rms_norm_backward);
}

} // namespace
} // namespace hpu_torch
