// SPDX-License-Identifier: MIT
/*
 * Tensors at the HPU key: new ones (empty, empty_strided) from the HPU allocator on the device
 * they name, views (view, _reshape_alias, as_strided: PyTorch's device-independent view code,
 * since a view is only sizes, strides and an offset into the same storage), and resize_,
 * which grows a storage by a device copy into a new allocation.
 */
#include "hpu_torch.h"

#include <ATen/EmptyTensor.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/view_native.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

namespace hpu_torch {
namespace {

const c10::DispatchKeySet hpu_keys(c10::DispatchKey::HPU);

c10::Device where(c10::optional<c10::Device> device)
{
	return c10::Device(c10::DeviceType::HPU,
			   index_of(device.value_or(c10::Device(c10::DeviceType::HPU))));
}

at::Tensor empty(at::IntArrayRef size, c10::optional<at::ScalarType> dtype,
		 c10::optional<at::Layout>, c10::optional<c10::Device> device,
		 c10::optional<bool> pin_memory, c10::optional<at::MemoryFormat> memory_format)
{
	TORCH_CHECK(!pin_memory.value_or(false), "hpu: device memory cannot be pinned");
	// The allocator takes the current device.
	c10::DeviceGuard guard(where(device));

	return at::detail::empty_generic(size, allocator(), hpu_keys,
					 dtype.value_or(at::get_default_dtype_as_scalartype()),
					 memory_format);
}

at::Tensor empty_strided(at::IntArrayRef size, at::IntArrayRef stride,
			 c10::optional<at::ScalarType> dtype, c10::optional<at::Layout>,
			 c10::optional<c10::Device> device, c10::optional<bool> pin_memory)
{
	TORCH_CHECK(!pin_memory.value_or(false), "hpu: device memory cannot be pinned");
	c10::DeviceGuard guard(where(device));

	return at::detail::empty_strided_generic(size, stride, allocator(), hpu_keys,
						 dtype.value_or(at::get_default_dtype_as_scalartype()));
}

// A storage that holds fewer than nbytes grows: new memory, the old bytes copied over.
void grow_storage(const at::Tensor &self, size_t nbytes)
{
	c10::Storage storage = self.storage();
	size_t old = storage.nbytes();

	if (nbytes <= old)
		return;
	TORCH_CHECK(storage.resizable(), "hpu: resizing a storage that is not resizable");
	c10::DeviceGuard guard(self.device());
	c10::DataPtr fresh = allocator()->allocate(nbytes);

	if (old)
		HPU_CHECK(hpu_memcpy_d2d_async(stream_of(self), reinterpret_cast<uint64_t>(fresh.get()),
					       reinterpret_cast<uint64_t>(storage.data()), old));
	storage.set_data_ptr_noswap(std::move(fresh));
	storage.set_nbytes(nbytes);
}

const at::Tensor &resize(const at::Tensor &self, at::IntArrayRef size,
			 c10::optional<at::MemoryFormat> memory_format)
{
	c10::TensorImpl *impl = self.unsafeGetTensorImpl();

	grow_storage(self, at::detail::computeStorageNbytesContiguous(size, self.element_size(),
									self.storage_offset()));
	impl->set_sizes_contiguous(size);
	if (memory_format)
		impl->empty_tensor_restride(*memory_format);
	return self;
}

TORCH_LIBRARY_IMPL(aten, HPU, m)
{
	m.impl("empty.memory_format", empty);
	m.impl("empty_strided", empty_strided);
	m.impl("resize_", resize);
	m.impl("view", at::native::view);
	m.impl("_reshape_alias", at::native::_reshape_alias);
	m.impl("as_strided", at::native::as_strided_tensorimpl);
}

} // namespace
} // namespace hpu_torch
