// SPDX-License-Identifier: MIT
/*
 * Matrix products at the HPU key on libhpu's matrix engine: mm, bmm, addmm and addmv (out=
 * variants, which PyTorch's functional and in-place ones call; linear, matmul and mv reach them
 * through PyTorch's own composites) and dot, vectors as matrices of one row or column.  addmm
 * with a bias vector, beta 1 and alpha 1 - Linear's - is one hpu_op_linear; otherwise (and
 * addmv) the product, then beta * self + alpha * product.  The engine needs
 * a dim of stride 1 in each matrix (a transposed view is one) and writes a last dim of stride
 * 1, out of place: other operands go through contiguous copies or a temporary.
 */
#include "hpu_torch.h"

#include <ATen/ScalarOps.h>
#include <torch/library.h>

namespace hpu_torch {
namespace {

// A matrix (the last two dims) the engine reads as it is: not broadcast along a dim (stride 0,
// as an expanded gradient is: no leading dimension fits it).
bool engine_reads(const at::Tensor &t)
{
	if ((t.size(-1) > 1 && !t.stride(-1)) || (t.size(-2) > 1 && !t.stride(-2)))
		return false;
	return t.stride(-1) == 1 || t.stride(-2) == 1 || t.size(-1) == 1 || t.size(-2) == 1;
}

at::Tensor readable(const at::Tensor &t)
{
	return engine_reads(t) ? t : t.contiguous();
}

// Whether out can be the engine's output as it is, with these inputs.
bool engine_writes(const at::Tensor &out, std::initializer_list<at::Tensor> in)
{
	if (out.stride(-1) != 1 && out.size(-1) != 1)
		return false;
	for (const at::Tensor &t : in)
		if (shares_storage(out, t))
			return false;
	return true;
}

// out = a @ b (sized by the caller), through a temporary where the engine cannot write out.
void matmul_into(const at::Tensor &out, const at::Tensor &a, const at::Tensor &b)
{
	if (!out.numel())
		return;
	if (!a.size(-1)) {
		HPU_CHECK(hpu_op_fill(stream_of(out), View(out), 0));
		return;
	}
	at::Tensor prod = engine_writes(out, {a, b}) ? out : at::empty(out.sizes(), out.options());

	HPU_CHECK(hpu_op_matmul(stream_of(prod), View(prod), View(readable(a)), View(readable(b))));
	if (!prod.is_same(out))
		copy_into(out, prod);
}

bool matmul_ok(const at::Tensor &out, const at::Tensor &a, const at::Tensor &b, int64_t dims)
{
	return same_floats(out, {a, b}) && a.dim() == dims && b.dim() == dims &&
	       a.size(-1) == b.size(-2) && (dims == 2 || a.size(0) == b.size(0));
}

at::Tensor &mm_out(const at::Tensor &self, const at::Tensor &mat2, at::Tensor &out)
{
	if (!matmul_ok(out, self, mat2, 2))
		return fall_back<at::_ops::mm_out>(self, mat2, out);
	resize_out(out, {self.size(0), mat2.size(1)});
	matmul_into(out, self, mat2);
	return out;
}

at::Tensor &bmm_out(const at::Tensor &self, const at::Tensor &mat2, at::Tensor &out)
{
	if (!matmul_ok(out, self, mat2, 3))
		return fall_back<at::_ops::bmm_out>(self, mat2, out);
	resize_out(out, {self.size(0), self.size(1), mat2.size(2)});
	matmul_into(out, self, mat2);
	return out;
}

// out = beta * self + alpha * prod; beta 0 ignores self, NaN and infinities included, as
// PyTorch's.
void scaled_sum(const at::Tensor &out, const at::Tensor &self, const at::Tensor &prod,
		const at::Scalar &beta, const at::Scalar &alpha)
{
	double b = beta.toDouble();
	bool done = b == 0 ? binary_into(HPU_BIN_MUL, out, prod,
					 at::native::wrapped_scalar_tensor(alpha))
			   : binary_into(HPU_BIN_ADD, out,
					 b == 1 ? self
						: at::mul(self, at::native::wrapped_scalar_tensor(beta)),
					 prod, alpha.toDouble());
	TORCH_INTERNAL_ASSERT(done, "hpu: a product's sum of floats of one dtype");
}

at::Tensor &addmm_out(const at::Tensor &self, const at::Tensor &mat1, const at::Tensor &mat2,
		      const at::Scalar &beta, const at::Scalar &alpha, at::Tensor &out)
{
	if (!matmul_ok(out, mat1, mat2, 2) || !same_floats(out, {self}) || beta.isComplex() ||
	    alpha.isComplex())
		return fall_back<at::_ops::addmm_out>(self, mat1, mat2, beta, alpha, out);
	double b = beta.toDouble(), a = alpha.toDouble();
	int64_t n = mat2.size(1);

	resize_out(out, {mat1.size(0), n});
	if (!out.numel())
		return out;
	if (b == 1 && a == 1 && self.dim() == 1 && self.size(0) == n && mat1.size(1) &&
	    engine_writes(out, {self, mat1, mat2})) {
		// Linear's weight is [n, k]: mat2's transpose.
		HPU_CHECK(hpu_op_linear(stream_of(out), View(out), View(readable(mat1)),
					View(readable(mat2.t())), View(self)));
		return out;
	}
	at::Tensor prod = at::empty(out.sizes(), out.options());
	matmul_into(prod, mat1, mat2);
	scaled_sum(out, self, prod, beta, alpha);
	return out;
}

at::Tensor &addmv_out(const at::Tensor &self, const at::Tensor &mat, const at::Tensor &vec,
		      const at::Scalar &beta, const at::Scalar &alpha, at::Tensor &out)
{
	if (vec.dim() != 1 || !matmul_ok(out, mat, vec.unsqueeze(1), 2) ||
	    !same_floats(out, {self}) || beta.isComplex() || alpha.isComplex())
		return fall_back<at::_ops::addmv_out>(self, mat, vec, beta, alpha, out);
	resize_out(out, {mat.size(0)});
	if (!out.numel())
		return out;
	at::Tensor prod = at::empty(out.sizes(), out.options());
	matmul_into(prod.unsqueeze(1), mat, vec.unsqueeze(1));
	scaled_sum(out, self, prod, beta, alpha);
	return out;
}

at::Tensor dot(const at::Tensor &self, const at::Tensor &other)
{
	if (self.dim() != 1 || other.dim() != 1 || self.size(0) != other.size(0) ||
	    !same_floats(self, {other}))
		return fall_back<at::_ops::dot>(self, other);
	at::Tensor out = at::empty({}, self.options());

	matmul_into(out.view({1, 1}), self.unsqueeze(0), other.unsqueeze(1));
	return out;
}

TORCH_LIBRARY_IMPL(aten, HPU, m)
{
	m.impl("mm.out", mm_out);
	m.impl("bmm.out", bmm_out);
	m.impl("addmm.out", addmm_out);
	m.impl("addmv.out", addmv_out);
	m.impl("dot", dot);
}

} // namespace
} // namespace hpu_torch
