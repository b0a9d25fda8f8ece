// SPDX-License-Identifier: MIT
/*
 * Pinned host memory: tensor.pin_memory() and is_pinned().  A pinned storage is a CPU storage
 * in libhpu's pinned host memory (hpu_host_alloc() of one device), which that device's copies
 * reach directly and asynchronously (copy.cpp).  Freeing it gives the block back to libhpu's
 * pinned cache, which reuses it only once the work submitted before has ended: a pinned tensor
 * may die while a copy from or into it is queued.
 *
 * PyTorch 1.13 dispatches is_pinned and _pin_memory on the device they are asked for (its
 * BackendSelect kernels): pin_memory(device="hpu") reaches the HPU key, a plain pin_memory()
 * the CUDA key.  When this torch has no CUDA, the CUDA key of those two ops is ours too, so
 * that a plain pin_memory() pins for the current hpu device.
 */
#include "hpu_torch.h"

#include <array>

#include <ATen/EmptyTensor.h>
#include <torch/library.h>

namespace hpu_torch {
namespace {

struct Pinned {
	c10::DeviceIndex index;
	void *ptr;
};

void free_pinned(void *ctx)
{
	Pinned *p = static_cast<Pinned *>(ctx);

	// A deleter cannot throw; hpu_host_free() only refuses memory it did not allocate.
	hpu_host_free(device(p->index), p->ptr);
	delete p;
}

// The allocator of one device's pinned memory (for the storage's resizes too).
struct PinnedAllocator final : public c10::Allocator {
	c10::DeviceIndex index = 0;

	c10::DataPtr allocate(size_t nbytes) const override
	{
		void *ptr = nullptr;

		HPU_CHECK(hpu_host_alloc(device(index), nbytes, &ptr));
		// Empty storages get a context too, so that they count as pinned.
		return c10::DataPtr(ptr, new Pinned{index, ptr}, &free_pinned,
				    c10::Device(c10::DeviceType::CPU));
	}
	c10::DeleterFnPtr raw_deleter() const override
	{
		return nullptr;
	}
};

PinnedAllocator *pinned_allocator(c10::DeviceIndex index)
{
	static std::array<PinnedAllocator, kMaxDevices> allocators = [] {
		std::array<PinnedAllocator, kMaxDevices> a;

		for (c10::DeviceIndex i = 0; i < kMaxDevices; i++)
			a[i].index = i;
		return a;
	}();

	check_index(index);
	return &allocators[index];
}

// The hpu device a request names: an hpu device, or the current one (a plain pin_memory()).
c10::DeviceIndex pinning_device(c10::optional<c10::Device> d)
{
	if (d && d->type() == c10::DeviceType::HPU)
		return index_of(*d);
	TORCH_CHECK(!d || d->type() == c10::DeviceType::CUDA, "hpu: pinning for ", *d);
	return current_device();
}

bool is_pinned(const at::Tensor &self, c10::optional<c10::Device>)
{
	return self.is_cpu() && self.storage().data_ptr().get_deleter() == &free_pinned;
}

// A copy of self in pinned memory, with its sizes and strides (as CUDA's _pin_memory).
at::Tensor pin_memory(const at::Tensor &self, c10::optional<c10::Device> d)
{
	TORCH_CHECK(self.is_cpu(), "hpu: only host memory can be pinned, not ", self.device());
	PinnedAllocator *a = pinned_allocator(pinning_device(d));
	size_t nbytes = at::detail::computeStorageNbytes(self.sizes(), self.strides(),
							 self.dtype().itemsize());
	c10::Storage storage(c10::Storage::use_byte_size_t(), nbytes, a->allocate(nbytes), a,
			     false);
	at::Tensor pinned = at::empty({0}, self.options());

	pinned.set_(storage, 0, self.sizes(), self.strides());
	pinned.copy_(self);
	return pinned;
}

TORCH_LIBRARY_IMPL(aten, HPU, m)
{
	m.impl("is_pinned", is_pinned);
	m.impl("_pin_memory", pin_memory);
}

// With no CUDA in this torch, a plain pin_memory() pins for hpu (registered at load).
TORCH_LIBRARY_IMPL(aten, CUDA, m)
{
	if (at::hasCUDA())
		return;
	m.impl("is_pinned", is_pinned);
	m.impl("_pin_memory", pin_memory);
}

} // namespace
} // namespace hpu_torch
