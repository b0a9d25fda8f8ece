// SPDX-License-Identifier: MIT
/*
 * Kernels at the HPU key that compute: fill_ and zero_, _local_scalar_dense (item() and
 * printing), random fills, and add, mul and relu on the device's ops.  A kernel whose operands
 * the device cannot take (a dtype it does not compute in, more dims than it has, a value it
 * cannot hold exactly) hands the call to the CPU fallback, counted like any other.
 *
 * Random fills draw on the host, with the generator given or PyTorch's default CPU generator,
 * and copy the numbers over: the device's own generator is not wired to PyTorch yet.
 */
#include "hpu_torch.h"

#include <cfloat>
#include <cmath>

#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/ops/add_ops.h>
#include <ATen/ops/fill_ops.h>
#include <ATen/ops/mul_ops.h>
#include <ATen/ops/relu_ops.h>
#include <torch/library.h>

namespace hpu_torch {
namespace {

template <class Op, class... Args>
decltype(auto) fall_back(Args &&...args)
{
	return at::native::call_fallback_fn<&cpu_fallback, Op>::call(std::forward<Args>(args)...);
}

/*
 * Whether the device stores v into t's dtype as PyTorch would.  libhpu takes values as doubles
 * and converts them unchecked: integers beyond 2^53, and values that PyTorch refuses for the
 * dtype (out of its range) or converts otherwise (a fraction into an integer), go to the CPU.
 */
bool holds_exactly(const at::Tensor &t, const at::Scalar &v)
{
	const int64_t exact = int64_t(1) << 53;

	if (v.isComplex())
		return false;
	if (v.isBoolean() || t.scalar_type() == at::kBool)
		return true;
	if (v.isIntegral(false)) {
		int64_t i = v.toLong();

		if (t.scalar_type() == at::kInt)
			return i >= INT32_MIN && i <= INT32_MAX;
		return i >= -exact && i <= exact;
	}
	double d = v.toDouble();
	return at::isFloatingType(t.scalar_type()) && (!std::isfinite(d) || std::abs(d) <= FLT_MAX);
}

at::Tensor &fill(at::Tensor &self, const at::Scalar &value)
{
	if (!on_device(self) || !holds_exactly(self, value))
		return fall_back<at::_ops::fill__Scalar>(self, value);
	at::assert_no_internal_overlap(self);
	if (self.numel())
		HPU_CHECK(hpu_op_fill(stream_of(self), View(self), value.toDouble()));
	return self;
}

at::Tensor &zero(at::Tensor &self)
{
	return fill(self, 0);
}

at::Scalar local_scalar_dense(const at::Tensor &self)
{
	at::Tensor host = at::empty({}, self.options().device(at::kCPU));

	copy_into(host, self);
	return host.item();
}

template <class Draw>
at::Tensor &host_draw(at::Tensor &self, Draw draw)
{
	at::Tensor host = at::empty(self.sizes(), self.options().device(at::kCPU));

	draw(host);
	copy_into(self, host);
	return self;
}

at::Tensor &normal(at::Tensor &self, double mean, double std, c10::optional<at::Generator> gen)
{
	return host_draw(self, [&](at::Tensor &h) { h.normal_(mean, std, gen); });
}

at::Tensor &uniform(at::Tensor &self, double from, double to, c10::optional<at::Generator> gen)
{
	return host_draw(self, [&](at::Tensor &h) { h.uniform_(from, to, gen); });
}

at::Tensor &random_from(at::Tensor &self, int64_t from, c10::optional<int64_t> to,
			c10::optional<at::Generator> gen)
{
	return host_draw(self, [&](at::Tensor &h) { h.random_(from, to, gen); });
}

at::Tensor &random_to(at::Tensor &self, int64_t to, c10::optional<at::Generator> gen)
{
	return host_draw(self, [&](at::Tensor &h) { h.random_(to, gen); });
}

at::Tensor &random(at::Tensor &self, c10::optional<at::Generator> gen)
{
	return host_draw(self, [&](at::Tensor &h) { h.random_(gen); });
}

bool floating_on_device(const at::Tensor &t)
{
	return on_device(t) && at::isFloatingType(t.scalar_type());
}

/*
 * a fn (alpha * b) on the device, b an HPU tensor of a's dtype or a host scalar that leaves
 * a's dtype the result's; nullopt when the device cannot.
 */
c10::optional<at::Tensor> binary(enum hpu_binary_fn fn, const at::Tensor &a, const at::Tensor &b,
				  double alpha)
{
	bool scalar = b.device().is_cpu() && b.dim() == 0;

	if (!floating_on_device(a) || at::result_type(a, b) != a.scalar_type() ||
	    !(scalar || (on_device(b) && b.device() == a.device())))
		return c10::nullopt;
	at::Tensor out = at::empty(scalar ? a.sizes().vec() : at::infer_size(a.sizes(), b.sizes()),
				   a.options());
	if (!out.numel())
		return out;
	if (scalar)
		HPU_CHECK(hpu_op_binary_scalar(stream_of(out), fn, View(out), View(a),
					       alpha * b.item().toDouble()));
	else if (fn == HPU_BIN_ADD)
		HPU_CHECK(hpu_op_add(stream_of(out), View(out), View(a), View(b), alpha));
	else
		HPU_CHECK(hpu_op_binary(stream_of(out), fn, View(out), View(a), View(b)));
	return out;
}

at::Tensor add(const at::Tensor &self, const at::Tensor &other, const at::Scalar &alpha)
{
	if (auto out = binary(HPU_BIN_ADD, self, other, alpha.toDouble()))
		return *out;
	return fall_back<at::_ops::add_Tensor>(self, other, alpha);
}

at::Tensor mul(const at::Tensor &self, const at::Tensor &other)
{
	if (auto out = binary(HPU_BIN_MUL, self, other, 1))
		return *out;
	return fall_back<at::_ops::mul_Tensor>(self, other);
}

at::Tensor relu(const at::Tensor &self)
{
	if (!on_device(self) || self.scalar_type() == at::kBool)
		return fall_back<at::_ops::relu>(self);
	at::Tensor out = at::empty(self.sizes(), self.options());

	if (out.numel())
		HPU_CHECK(hpu_op_unary(stream_of(out), HPU_UN_RELU, View(out), View(self)));
	return out;
}

TORCH_LIBRARY_IMPL(aten, HPU, m)
{
	m.impl("fill_.Scalar", fill);
	m.impl("zero_", zero);
	m.impl("_local_scalar_dense", local_scalar_dense);
	m.impl("normal_", normal);
	m.impl("uniform_", uniform);
	m.impl("random_.from", random_from);
	m.impl("random_.to", random_to);
	m.impl("random_", random);
	m.impl("add.Tensor", add);
	m.impl("mul.Tensor", mul);
	m.impl("relu", relu);
}

} // namespace
} // namespace hpu_torch
