// SPDX-License-Identifier: MIT
/*
 * What the kernels at the HPU key share (operands, out= arguments, the fallback's conditions),
 * and the kernels that move values rather than compute: fill_ and zero_, _local_scalar_dense
 * (item() and printing) and random fills.  The computing kernels are in ops_<family>.cpp.
 *
 * Random fills draw on the host, with the generator given or PyTorch's default CPU generator,
 * and copy the numbers over; dropout alone draws on the device (ops_nn.cpp).
 */
#include "hpu_torch.h"

#include <cfloat>
#include <cmath>

#include <ATen/MemoryOverlap.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

namespace hpu_torch {

/*
 * libhpu takes values as doubles and converts them unchecked: integers beyond 2^53, and values
 * that PyTorch refuses for the dtype (out of its range) or converts otherwise (a fraction into
 * an integer), are not the device's to store.
 */
bool holds_exactly(at::ScalarType type, const at::Scalar &v)
{
	const int64_t exact = int64_t(1) << 53;

	if (v.isComplex())
		return false;
	if (v.isBoolean() || type == at::kBool)
		return true;
	if (v.isIntegral(false)) {
		int64_t i = v.toLong();

		if (type == at::kInt)
			return i >= INT32_MIN && i <= INT32_MAX;
		return i >= -exact && i <= exact;
	}
	double d = v.toDouble();
	return at::isFloatingType(type) && (!std::isfinite(d) || std::abs(d) <= FLT_MAX);
}

bool is_host_scalar(const at::Tensor &t)
{
	return t.device().is_cpu() && t.dim() == 0;
}

bool floating_on_device(const at::Tensor &t)
{
	return on_device(t) && at::isFloatingType(t.scalar_type());
}

bool same_floats(const at::Tensor &out, std::initializer_list<at::Tensor> in)
{
	if (!floating_on_device(out))
		return false;
	for (const at::Tensor &t : in)
		if (!on_device(t) || t.scalar_type() != out.scalar_type() ||
		    t.device() != out.device())
			return false;
	return true;
}

at::Tensor operand(const at::Tensor &t, const at::Tensor &out, at::ScalarType type)
{
	if (!device_dtype(type))
		return {};
	if (is_host_scalar(t)) {
		at::Scalar v = t.item();

		if (!holds_exactly(type, v))
			return {};
		at::Tensor s = at::empty({}, out.options().dtype(type));
		HPU_CHECK(hpu_op_fill(stream_of(s), View(s), v.toDouble()));
		return s;
	}
	if (!on_device(t) || t.device() != out.device())
		return {};
	return t.scalar_type() == type ? t : t.to(type);
}

void resize_out(const at::Tensor &out, at::IntArrayRef sizes)
{
	if (out.sizes() != sizes)
		at::native::resize_output(out, sizes);
}

bool shares_storage(const at::Tensor &a, const at::Tensor &b)
{
	return a.defined() && b.defined() && a.storage().is_alias_of(b.storage());
}

std::unique_ptr<View> maybe_view(const c10::optional<at::Tensor> &t)
{
	return t && t->defined() ? std::make_unique<View>(*t) : nullptr;
}

hpu_tensor *handle(const std::unique_ptr<View> &v)
{
	return v ? static_cast<hpu_tensor *>(*v) : nullptr;
}

namespace {

at::Tensor &fill(at::Tensor &self, const at::Scalar &value)
{
	if (!on_device(self) || !holds_exactly(self.scalar_type(), value))
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
	if (device_random(self, gen, true, mean, std))
		return self;
	return host_draw(self, [&](at::Tensor &h) { h.normal_(mean, std, gen); });
}

at::Tensor &uniform(at::Tensor &self, double from, double to, c10::optional<at::Generator> gen)
{
	if (device_random(self, gen, false, from, to))
		return self;
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
}

} // namespace
} // namespace hpu_torch
