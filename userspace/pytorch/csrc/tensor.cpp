// SPDX-License-Identifier: MIT
/*
 * libhpu views of at::Tensors: an op's operands are views of the storage's libhpu tensor
 * (hpu_tensor_as_strided) with the at::Tensor's dtype, sizes, strides and storage offset,
 * each holding its own reference, so an operand's memory lives as long as libhpu's work needs
 * it.  Copies that move bits see any dtype as unsigned words of its size.
 */
#include "hpu_torch.h"

namespace hpu_torch {

uint32_t device_dtype(at::ScalarType type)
{
	switch (type) {
	case at::kFloat: return HPU_DT_F32;
	case at::kBFloat16: return HPU_DT_BF16;
	case at::kInt: return HPU_DT_I32;
	case at::kLong: return HPU_DT_I64;
	// The device's U8 is a truth value: it stores v != 0, so uint8 is not a device dtype.
	case at::kBool: return HPU_DT_U8;
	default: return 0;
	}
}

bool viewable(const at::Tensor &t)
{
	return t.device().type() == c10::DeviceType::HPU && t.dim() <= HPU_MAX_DIMS;
}

bool on_device(const at::Tensor &t)
{
	return viewable(t) && device_dtype(t.scalar_type());
}

namespace {

// The widest libhpu dtype whose size divides an element of `size` bytes.
uint32_t word_dtype(int64_t size)
{
	return size % 8 == 0 ? HPU_DT_I64 : size % 4 == 0 ? HPU_DT_I32 :
	       size % 2 == 0 ? HPU_DT_BF16 : HPU_DT_U8;
}

} // namespace

View::View(const at::Tensor &t, bool bits)
{
	TORCH_CHECK(viewable(t), "hpu: a tensor of ", t.dim(), " dims on ", t.device(),
		    ": the device takes hpu tensors of at most ", HPU_MAX_DIMS);
	hpu_tensor *base = storage_tensor(t.storage());
	TORCH_CHECK(base, "hpu: a view of an empty storage");
	struct hpu_tensor_layout l = {};
	// Elements of more than one word gain a last dim of their words.
	int64_t words = 1;

	l.dtype = device_dtype(t.scalar_type());
	if (bits) {
		l.dtype = word_dtype(t.element_size());
		words = t.element_size() / int64_t(hpu_dt_size(hpu_dt(l.dtype)));
	}
	TORCH_CHECK(l.dtype, "hpu: the device does not compute in ", t.scalar_type());
	l.ndim = t.dim() + (words > 1);
	TORCH_CHECK(l.ndim <= HPU_MAX_DIMS, "hpu: a copy of ", t.scalar_type(), " elements in ",
		    t.dim(), " dims: more than the device's ", HPU_MAX_DIMS);
	for (int64_t i = 0; i < t.dim(); i++) {
		l.shape[i] = t.size(i);
		l.strides[i] = t.stride(i) * words;
	}
	if (words > 1) {
		l.shape[t.dim()] = words;
		l.strides[t.dim()] = 1;
	}
	l.offset = t.storage_offset() * words;
	HPU_CHECK(hpu_tensor_as_strided(base, &l, &t_));
}

View::~View()
{
	hpu_tensor_destroy(t_);
}

} // namespace hpu_torch
