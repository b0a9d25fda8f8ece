// SPDX-License-Identifier: MIT
/*
 * Elementwise kernels at the HPU key: the arithmetic, comparison and max/min of two operands
 * (tensors that broadcast, or a number), the functions of one (neg, abs, exp, log, sqrt,
 * rsqrt, reciprocal, tanh, sigmoid, gelu, silu, sin, cos, erf, sign, pow with a number), clamp,
 * isnan, addcmul/addcdiv, logical and/or, where and masked_fill_, and the backward kernels of
 * tanh, sigmoid, gelu and silu.
 *
 * They are the out= variants of PyTorch's structured ops: PyTorch's own functional and
 * in-place variants (at every backend without them) size the output and call these; the
 * in-place variants of the arithmetic, unary and addc* ops are registered too (see below).  The
 * device computes in one dtype per op: operands of another are cast on the device first, a
 * number becomes the op's scalar, or a 0-dim device tensor when it stands on the left of an
 * op that does not commute.  Integral operands take arithmetic but division and pow; bool
 * takes comparisons only.  Anything else goes to the CPU fallback.
 */
#include "hpu_torch.h"

#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/ScalarOps.h>
#include <torch/library.h>

namespace hpu_torch {
namespace {

bool comparison(enum hpu_binary_fn fn)
{
	return fn >= HPU_BIN_EQ;
}

// fn with its operands swapped, for a number on the left: b fn' a == a fn b.
enum hpu_binary_fn swapped(enum hpu_binary_fn fn)
{
	switch (fn) {
	case HPU_BIN_ADD: case HPU_BIN_MUL: case HPU_BIN_MAX: case HPU_BIN_MIN:
	case HPU_BIN_EQ: case HPU_BIN_NE:
		return fn;
	case HPU_BIN_LT: return HPU_BIN_GT;
	case HPU_BIN_LE: return HPU_BIN_GE;
	case HPU_BIN_GT: return HPU_BIN_LT;
	case HPU_BIN_GE: return HPU_BIN_LE;
	default: return HPU_BIN_SUB; // does not commute
	}
}

bool device_computes(enum hpu_binary_fn fn, at::ScalarType type)
{
	if (comparison(fn))
		return true;
	// The device's bool is a truth value: max and min are or and and.
	if (type == at::kBool)
		return fn == HPU_BIN_MAX || fn == HPU_BIN_MIN;
	return at::isFloatingType(type) || (fn != HPU_BIN_DIV && fn != HPU_BIN_POW);
}

} // namespace

bool binary_into(enum hpu_binary_fn fn, const at::Tensor &out, const at::Tensor &a,
		 const at::Tensor &b, double alpha)
{
	if (is_host_scalar(a) && !is_host_scalar(b) && alpha == 1 && swapped(fn) != HPU_BIN_SUB)
		return binary_into(swapped(fn), out, b, a);
	at::ScalarType result = at::result_type(a, b);
	at::ScalarType type = comparison(fn) ? result : out.scalar_type();

	if (!on_device(out) || !device_dtype(type) || !device_computes(fn, type) ||
	    (!comparison(fn) && !at::canCast(result, type)))
		return false;
	if (is_host_scalar(b) && !is_host_scalar(a)) {
		at::Scalar v = b.item();
		at::Tensor x = operand(a, out, type);

		if (!x.defined() || !holds_exactly(type, v))
			return false;
		resize_out(out, x.sizes());
		if (out.numel())
			HPU_CHECK(hpu_op_binary_scalar(stream_of(out), fn, View(out), View(x),
						       fn <= HPU_BIN_SUB ? alpha * v.toDouble()
									 : v.toDouble()));
		return true;
	}
	at::Tensor x = operand(a, out, type), y = operand(b, out, type);

	if (!x.defined() || !y.defined())
		return false;
	resize_out(out, at::infer_size(x.sizes(), y.sizes()));
	if (!out.numel())
		return true;
	if (fn <= HPU_BIN_SUB)
		HPU_CHECK(hpu_op_add(stream_of(out), View(out), View(x), View(y),
				     fn == HPU_BIN_SUB ? -alpha : alpha));
	else
		HPU_CHECK(hpu_op_binary(stream_of(out), fn, View(out), View(x), View(y)));
	return true;
}

namespace {

/*
 * out = fn(in) (exponent: pow's).  Floating functions want a floating out; the integral
 * ones (neg, abs) keep in's dtype.
 */
bool unary_into(enum hpu_unary_fn fn, const at::Tensor &out, const at::Tensor &in,
		double exponent = 0)
{
	at::ScalarType type = out.scalar_type();
	bool integral_ok = fn == HPU_UN_NEG || fn == HPU_UN_ABS;

	if (!on_device(out) || type == at::kBool || (!integral_ok && !at::isFloatingType(type)) ||
	    !at::canCast(in.scalar_type(), type))
		return false;
	at::Tensor x = operand(in, out, type);
	if (!x.defined())
		return false;
	resize_out(out, x.sizes());
	if (!out.numel())
		return true;
	if (fn == HPU_UN_POW_SCALAR)
		HPU_CHECK(hpu_op_pow_scalar(stream_of(out), View(out), View(x), exponent));
	else
		HPU_CHECK(hpu_op_unary(stream_of(out), fn, View(out), View(x)));
	return true;
}

template <enum hpu_unary_fn Fn, class Op>
at::Tensor &unary_out(const at::Tensor &self, at::Tensor &out)
{
	if (unary_into(Fn, out, self))
		return out;
	return fall_back<Op>(self, out);
}

template <enum hpu_binary_fn Fn, class Op>
at::Tensor &binary_out(const at::Tensor &self, const at::Tensor &other, at::Tensor &out)
{
	if (binary_into(Fn, out, self, other))
		return out;
	return fall_back<Op>(self, other, out);
}

template <enum hpu_binary_fn Fn, class Op>
at::Tensor &binary_alpha_out(const at::Tensor &self, const at::Tensor &other,
			     const at::Scalar &alpha, at::Tensor &out)
{
	if (!alpha.isComplex() && binary_into(Fn, out, self, other, alpha.toDouble()))
		return out;
	return fall_back<Op>(self, other, alpha, out);
}

/*
 * In-place variants, registered so that they skip what PyTorch's own would do at a backend
 * without them (a meta pass through a TensorIterator sizing self, then a second dispatch to
 * the out= kernel): a third of a small eager op's host time.  The checks are that meta pass's:
 * the other operands broadcast to self's shape and do not partly overlap it.  When they fail,
 * or the device cannot compute, the CPU runs the op and raises PyTorch's own error.
 */
bool fits_inplace(const at::Tensor &self, std::initializer_list<at::Tensor> others)
{
	at::assert_no_internal_overlap(self);
	for (const at::Tensor &t : others) {
		if (!is_host_scalar(t) && at::infer_size(self.sizes(), t.sizes()) != self.sizes())
			return false;
		at::assert_no_partial_overlap(self, t);
	}
	return true;
}

template <enum hpu_binary_fn Fn, class Op>
at::Tensor &binary_alpha_(at::Tensor &self, const at::Tensor &other, const at::Scalar &alpha)
{
	if (!alpha.isComplex() && fits_inplace(self, {other}) &&
	    binary_into(Fn, self, self, other, alpha.toDouble()))
		return self;
	return fall_back<Op>(self, other, alpha);
}

template <enum hpu_binary_fn Fn, class Op>
at::Tensor &binary_(at::Tensor &self, const at::Tensor &other)
{
	if (fits_inplace(self, {other}) && binary_into(Fn, self, self, other))
		return self;
	return fall_back<Op>(self, other);
}

template <enum hpu_unary_fn Fn, class Op>
at::Tensor &unary_(at::Tensor &self)
{
	if (fits_inplace(self, {}) && unary_into(Fn, self, self))
		return self;
	return fall_back<Op>(self);
}

template <enum hpu_binary_fn Fn, class Op>
at::Tensor &binary_scalar_out(const at::Tensor &self, const at::Scalar &other, at::Tensor &out)
{
	if (binary_into(Fn, out, self, at::native::wrapped_scalar_tensor(other)))
		return out;
	return fall_back<Op>(self, other, out);
}

at::Tensor &pow_scalar_out(const at::Tensor &self, const at::Scalar &exponent, at::Tensor &out)
{
	if (!exponent.isComplex() && unary_into(HPU_UN_POW_SCALAR, out, self, exponent.toDouble()))
		return out;
	return fall_back<at::_ops::pow_Tensor_Scalar_out>(self, exponent, out);
}

enum hpu_unary_fn gelu_fn(c10::string_view approximate)
{
	return approximate == "tanh" ? HPU_UN_GELU_TANH : HPU_UN_GELU;
}

at::Tensor &gelu_out(const at::Tensor &self, c10::string_view approximate, at::Tensor &out)
{
	if (unary_into(gelu_fn(approximate), out, self))
		return out;
	return fall_back<at::_ops::gelu_out>(self, approximate, out);
}

at::Tensor &gelu_backward_out(const at::Tensor &grad_output, const at::Tensor &self,
			      c10::string_view approximate, at::Tensor &grad_input)
{
	if (!same_floats(grad_input, {grad_output, self}))
		return fall_back<at::_ops::gelu_backward_grad_input>(grad_output, self, approximate,
								     grad_input);
	resize_out(grad_input, self.sizes());
	if (grad_input.numel())
		HPU_CHECK(hpu_op_gelu_backward(stream_of(grad_input), View(grad_input),
					       View(grad_output), View(self),
					       gelu_fn(approximate) == HPU_UN_GELU_TANH));
	return grad_input;
}

at::Tensor &silu_backward_out(const at::Tensor &grad_output, const at::Tensor &self,
			      at::Tensor &grad_input)
{
	if (!same_floats(grad_input, {grad_output, self}) || grad_output.sizes() != self.sizes())
		return fall_back<at::_ops::silu_backward_grad_input>(grad_output, self, grad_input);
	resize_out(grad_input, self.sizes());
	if (grad_input.numel())
		HPU_CHECK(hpu_op_silu_backward(stream_of(grad_input), View(grad_input),
					       View(grad_output), View(self)));
	return grad_input;
}

/*
 * The backward of y = tanh(x) and y = sigmoid(x) from y: grad * (1 - y^2) and grad * y * (1 - y),
 * as ops of this file.
 */
at::Tensor &tanh_backward_out(const at::Tensor &grad_output, const at::Tensor &output,
			      at::Tensor &grad_input)
{
	if (!same_floats(grad_input, {grad_output, output}))
		return fall_back<at::_ops::tanh_backward_grad_input>(grad_output, output, grad_input);
	return at::mul_out(grad_input, grad_output, 1 - output * output);
}

at::Tensor &sigmoid_backward_out(const at::Tensor &grad_output, const at::Tensor &output,
				 at::Tensor &grad_input)
{
	if (!same_floats(grad_input, {grad_output, output}))
		return fall_back<at::_ops::sigmoid_backward_grad_input>(grad_output, output,
									grad_input);
	return at::mul_out(grad_input, grad_output, output * (1 - output));
}

// out = self + value * fn(tensor1, tensor2): addcmul (fn MUL) and addcdiv (DIV).
template <enum hpu_binary_fn Fn, class Op>
at::Tensor &addc_out(const at::Tensor &self, const at::Tensor &tensor1, const at::Tensor &tensor2,
		     const at::Scalar &value, at::Tensor &out)
{
	if (on_device(out) && !value.isComplex()) {
		at::Tensor prod = at::empty({0}, out.options());

		if (binary_into(Fn, prod, tensor1, tensor2) &&
		    binary_into(HPU_BIN_ADD, out, self, prod, value.toDouble()))
			return out;
	}
	return fall_back<Op>(self, tensor1, tensor2, value, out);
}

template <enum hpu_binary_fn Fn, class Op, class OutOp>
at::Tensor &addc_(at::Tensor &self, const at::Tensor &tensor1, const at::Tensor &tensor2,
		  const at::Scalar &value)
{
	if (fits_inplace(self, {tensor1, tensor2}))
		return addc_out<Fn, OutOp>(self, tensor1, tensor2, value, self);
	return fall_back<Op>(self, tensor1, tensor2, value);
}

// clamp = minimum(maximum(self, min), max): NaN stays NaN, and min > max gives max, as PyTorch.
at::Tensor &clamp_out(const at::Tensor &self, const c10::optional<at::Scalar> &min,
		      const c10::optional<at::Scalar> &max, at::Tensor &out)
{
	bool ok = (min || max) && !(min && min->isComplex()) && !(max && max->isComplex());
	at::Tensor x = self;

	if (ok && min) {
		ok = binary_into(HPU_BIN_MAX, out, x, at::native::wrapped_scalar_tensor(*min));
		x = out;
	}
	if (ok && max)
		ok = binary_into(HPU_BIN_MIN, out, x, at::native::wrapped_scalar_tensor(*max));
	if (ok)
		return out;
	return fall_back<at::_ops::clamp_out>(self, min, max, out);
}

// isnan(x) = x != x (the inf-norm's backward asks).
at::Tensor isnan(const at::Tensor &self)
{
	if (!on_device(self))
		return fall_back<at::_ops::isnan>(self);
	return self.ne(self);
}

// sign(x) = (x > 0) - (x < 0), NaN included (0); sgn of real numbers is sign.
template <class Op>
at::Tensor &sign_out(const at::Tensor &self, at::Tensor &out)
{
	at::Tensor zero = at::native::wrapped_scalar_tensor(0);

	if (same_floats(out, {self})) {
		at::Tensor above = at::empty({0}, out.options()), below = at::empty({0}, out.options());

		if (binary_into(HPU_BIN_GT, above, self, zero) &&
		    binary_into(HPU_BIN_LT, below, self, zero) &&
		    binary_into(HPU_BIN_SUB, out, above, below))
			return out;
	}
	return fall_back<Op>(self, out);
}

// logical_and (Fn MIN) and logical_or (MAX) of the operands' truth values.
template <enum hpu_binary_fn Fn, class Op>
at::Tensor &logical_out(const at::Tensor &self, const at::Tensor &other, at::Tensor &out)
{
	at::Tensor zero = at::native::wrapped_scalar_tensor(0);
	at::Tensor a = at::empty({0}, out.options().dtype(at::kBool)), b = at::empty_like(a);

	if (on_device(out) && binary_into(HPU_BIN_NE, a, self, zero) &&
	    binary_into(HPU_BIN_NE, b, other, zero) && binary_into(Fn, out, a, b))
		return out;
	return fall_back<Op>(self, other, out);
}

// self = mask ? value : self, value a number or a 0-dim tensor.
at::Tensor &masked_fill_tensor(at::Tensor &self, const at::Tensor &mask, const at::Tensor &value)
{
	at::Tensor v = value.dim() ? at::Tensor() : operand(value, self, self.scalar_type());

	if (!v.defined() || !on_device(mask) || mask.device() != self.device() ||
	    at::infer_size(self.sizes(), mask.sizes()) != self.sizes())
		return fall_back<at::_ops::masked_fill__Tensor>(self, mask, value);
	if (self.numel())
		HPU_CHECK(hpu_op_where(stream_of(self), View(self), View(mask), View(v),
				       View(self)));
	return self;
}

at::Tensor &masked_fill_scalar(at::Tensor &self, const at::Tensor &mask, const at::Scalar &value)
{
	return masked_fill_tensor(self, mask, at::native::wrapped_scalar_tensor(value));
}

at::Tensor where(const at::Tensor &condition, const at::Tensor &self, const at::Tensor &other)
{
	at::ScalarType type = at::result_type(self, other);

	if (on_device(condition) && device_dtype(type)) {
		at::Tensor out = at::empty({0}, condition.options().dtype(type));
		at::Tensor a = operand(self, out, type), b = operand(other, out, type);

		if (a.defined() && b.defined()) {
			resize_out(out, at::infer_size(condition.sizes(),
						       at::infer_size(a.sizes(), b.sizes())));
			if (out.numel())
				HPU_CHECK(hpu_op_where(stream_of(out), View(out), View(condition),
						       View(a), View(b)));
			return out;
		}
	}
	return fall_back<at::_ops::where_self>(condition, self, other);
}

TORCH_LIBRARY_IMPL(aten, HPU, m)
{
	namespace ops = at::_ops;

	m.impl("add.out", binary_alpha_out<HPU_BIN_ADD, ops::add_out>);
	m.impl("sub.out", binary_alpha_out<HPU_BIN_SUB, ops::sub_out>);
	m.impl("mul.out", binary_out<HPU_BIN_MUL, ops::mul_out>);
	m.impl("div.out", binary_out<HPU_BIN_DIV, ops::div_out>);
	m.impl("add_.Tensor", binary_alpha_<HPU_BIN_ADD, ops::add__Tensor>);
	m.impl("sub_.Tensor", binary_alpha_<HPU_BIN_SUB, ops::sub__Tensor>);
	m.impl("mul_.Tensor", binary_<HPU_BIN_MUL, ops::mul__Tensor>);
	m.impl("div_.Tensor", binary_<HPU_BIN_DIV, ops::div__Tensor>);
	m.impl("maximum.out", binary_out<HPU_BIN_MAX, ops::maximum_out>);
	m.impl("minimum.out", binary_out<HPU_BIN_MIN, ops::minimum_out>);
	m.impl("clamp.out", clamp_out);
	m.impl("isnan", isnan);
	m.impl("pow.Tensor_Tensor_out", binary_out<HPU_BIN_POW, ops::pow_Tensor_Tensor_out>);
	m.impl("pow.Tensor_Scalar_out", pow_scalar_out);
	m.impl("eq.Tensor_out", binary_out<HPU_BIN_EQ, ops::eq_Tensor_out>);
	m.impl("ne.Tensor_out", binary_out<HPU_BIN_NE, ops::ne_Tensor_out>);
	m.impl("lt.Tensor_out", binary_out<HPU_BIN_LT, ops::lt_Tensor_out>);
	m.impl("le.Tensor_out", binary_out<HPU_BIN_LE, ops::le_Tensor_out>);
	m.impl("gt.Tensor_out", binary_out<HPU_BIN_GT, ops::gt_Tensor_out>);
	m.impl("ge.Tensor_out", binary_out<HPU_BIN_GE, ops::ge_Tensor_out>);
	m.impl("eq.Scalar_out", binary_scalar_out<HPU_BIN_EQ, ops::eq_Scalar_out>);
	m.impl("ne.Scalar_out", binary_scalar_out<HPU_BIN_NE, ops::ne_Scalar_out>);
	m.impl("lt.Scalar_out", binary_scalar_out<HPU_BIN_LT, ops::lt_Scalar_out>);
	m.impl("le.Scalar_out", binary_scalar_out<HPU_BIN_LE, ops::le_Scalar_out>);
	m.impl("gt.Scalar_out", binary_scalar_out<HPU_BIN_GT, ops::gt_Scalar_out>);
	m.impl("ge.Scalar_out", binary_scalar_out<HPU_BIN_GE, ops::ge_Scalar_out>);

	m.impl("neg.out", unary_out<HPU_UN_NEG, ops::neg_out>);
	m.impl("neg_", unary_<HPU_UN_NEG, ops::neg_>);
	m.impl("abs.out", unary_out<HPU_UN_ABS, ops::abs_out>);
	m.impl("abs_", unary_<HPU_UN_ABS, ops::abs_>);
	m.impl("exp.out", unary_out<HPU_UN_EXP, ops::exp_out>);
	m.impl("exp_", unary_<HPU_UN_EXP, ops::exp_>);
	m.impl("log.out", unary_out<HPU_UN_LOG, ops::log_out>);
	m.impl("log_", unary_<HPU_UN_LOG, ops::log_>);
	m.impl("sqrt.out", unary_out<HPU_UN_SQRT, ops::sqrt_out>);
	m.impl("sqrt_", unary_<HPU_UN_SQRT, ops::sqrt_>);
	m.impl("rsqrt.out", unary_out<HPU_UN_RSQRT, ops::rsqrt_out>);
	m.impl("rsqrt_", unary_<HPU_UN_RSQRT, ops::rsqrt_>);
	m.impl("reciprocal.out", unary_out<HPU_UN_RECIPROCAL, ops::reciprocal_out>);
	m.impl("reciprocal_", unary_<HPU_UN_RECIPROCAL, ops::reciprocal_>);
	m.impl("tanh.out", unary_out<HPU_UN_TANH, ops::tanh_out>);
	m.impl("tanh_", unary_<HPU_UN_TANH, ops::tanh_>);
	m.impl("sigmoid.out", unary_out<HPU_UN_SIGMOID, ops::sigmoid_out>);
	m.impl("sigmoid_", unary_<HPU_UN_SIGMOID, ops::sigmoid_>);
	m.impl("silu.out", unary_out<HPU_UN_SILU, ops::silu_out>);
	m.impl("silu_", unary_<HPU_UN_SILU, ops::silu_>);
	m.impl("sin.out", unary_out<HPU_UN_SIN, ops::sin_out>);
	m.impl("sin_", unary_<HPU_UN_SIN, ops::sin_>);
	m.impl("cos.out", unary_out<HPU_UN_COS, ops::cos_out>);
	m.impl("cos_", unary_<HPU_UN_COS, ops::cos_>);
	m.impl("erf.out", unary_out<HPU_UN_ERF, ops::erf_out>);
	m.impl("erf_", unary_<HPU_UN_ERF, ops::erf_>);
	m.impl("sign.out", sign_out<ops::sign_out>);
	m.impl("sgn.out", sign_out<ops::sgn_out>);
	m.impl("gelu.out", gelu_out);
	m.impl("gelu_backward.grad_input", gelu_backward_out);
	m.impl("tanh_backward.grad_input", tanh_backward_out);
	m.impl("sigmoid_backward.grad_input", sigmoid_backward_out);
	m.impl("silu_backward.grad_input", silu_backward_out);

	m.impl("addcmul.out", addc_out<HPU_BIN_MUL, ops::addcmul_out>);
	m.impl("addcdiv.out", addc_out<HPU_BIN_DIV, ops::addcdiv_out>);
	m.impl("addcmul_", addc_<HPU_BIN_MUL, ops::addcmul_, ops::addcmul_out>);
	m.impl("addcdiv_", addc_<HPU_BIN_DIV, ops::addcdiv_, ops::addcdiv_out>);
	m.impl("logical_and.out", logical_out<HPU_BIN_MIN, ops::logical_and_out>);
	m.impl("logical_or.out", logical_out<HPU_BIN_MAX, ops::logical_or_out>);
	m.impl("masked_fill_.Scalar", masked_fill_scalar);
	m.impl("masked_fill_.Tensor", masked_fill_tensor);
	m.impl("where.self", where);
}

} // namespace
} // namespace hpu_torch
