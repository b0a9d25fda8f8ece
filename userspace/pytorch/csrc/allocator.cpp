// SPDX-License-Identifier: MIT
/*
 * The allocator of HPU storage.  A storage is a libhpu tensor of bytes (U8 [nbytes]) from
 * libhpu's caching allocator on the current device; its DataPtr's data is the device address
 * and its context the libhpu tensor, so that ops take views of it (tensor.cpp).  Freeing
 * destroys that tensor: libhpu frees the memory when the last view goes and reuses it only
 * once the work enqueued with it has ended, so a storage may die while ops on it are queued.
 *
 * set_ puts a tensor over an HPU storage (torch.load rebuilds tensors so, storage copies and
 * pinning build theirs so): only sizes, strides and an offset, within the storage's bytes.
 *
 * The counts behind torch.hpu.memory_allocated() and memory_stats() are the bytes torch
 * asked for, per device; libhpu's own figures (what its cache reserves) are read from it.
 */
#include "hpu_torch.h"

#include <atomic>

#include <ATen/native/Resize.h>
#include <c10/util/strides.h>
#include <torch/library.h>

namespace hpu_torch {
namespace {

struct Counters {
	std::atomic<uint64_t> in_use{0}, max_in_use{0}, num_allocs{0}, num_frees{0},
		max_alloc_size{0};
};

Counters counters[kMaxDevices];

struct Block {
	hpu_tensor *t;
	uint64_t nbytes;
	c10::DeviceIndex index;
};

void raise_to(std::atomic<uint64_t> &max, uint64_t v)
{
	uint64_t old = max.load();

	while (v > old && !max.compare_exchange_weak(old, v))
		;
}

void free_block(void *ctx)
{
	Block *b = static_cast<Block *>(ctx);
	Counters &c = counters[b->index];

	hpu_tensor_destroy(b->t);
	c.in_use -= b->nbytes;
	c.num_frees++;
	delete b;
}

struct Allocator final : public c10::Allocator {
	c10::DataPtr allocate(size_t nbytes) const override
	{
		c10::DeviceIndex index = current_device();
		c10::Device where(c10::DeviceType::HPU, index);

		if (!nbytes)
			return c10::DataPtr(nullptr, where);
		hpu_device *dev = device(index);
		int64_t shape[1] = {int64_t(nbytes)};
		uint64_t addr;
		hpu_tensor *t;

		HPU_CHECK(hpu_tensor_empty(dev, HPU_DT_U8, 1, shape, &t));
		int ret = hpu_tensor_device_pointer(t, &addr);
		if (ret) {
			hpu_tensor_destroy(t);
			HPU_CHECK(ret);
		}
		Counters &c = counters[index];
		raise_to(c.max_in_use, c.in_use += nbytes);
		raise_to(c.max_alloc_size, nbytes);
		c.num_allocs++;
		return c10::DataPtr(reinterpret_cast<void *>(addr), new Block{t, nbytes, index},
				    &free_block, where);
	}
	c10::DeleterFnPtr raw_deleter() const override
	{
		return nullptr;
	}
};

Allocator hpu_allocator;

} // namespace

c10::Allocator *allocator()
{
	return &hpu_allocator;
}

hpu_tensor *storage_tensor(const c10::Storage &storage)
{
	const c10::DataPtr &p = storage.data_ptr();

	if (!p.get())
		return nullptr;
	TORCH_CHECK(p.get_deleter() == &free_block, "hpu: a storage of ", p.device(),
		    " that the hpu allocator did not allocate");
	return static_cast<Block *>(p.get_context())->t;
}

MemoryStats memory_stats(c10::DeviceIndex index)
{
	check_index(index);
	const Counters &c = counters[index];
	MemoryStats s;

	s.in_use = c.in_use;
	s.max_in_use = c.max_in_use;
	s.num_allocs = c.num_allocs;
	s.num_frees = c.num_frees;
	s.active_allocs = s.num_allocs - s.num_frees;
	s.max_alloc_size = c.max_alloc_size;
	return s;
}

void reset_peak_memory_stats(c10::DeviceIndex index)
{
	check_index(index);
	Counters &c = counters[index];

	c.max_in_use = c.in_use.load();
	c.max_alloc_size = 0;
}

REGISTER_ALLOCATOR(c10::DeviceType::HPU, &hpu_allocator);

namespace {

at::Tensor &set_storage(at::Tensor &self, c10::Storage source, int64_t offset,
			at::IntArrayRef size, at::IntArrayRef stride)
{
	// No strides: contiguous ones.
	c10::DimVector strides = stride.data() ? c10::DimVector(stride) : c10::contiguous_strides(size);

	at::native::checkSetStorage(self, source, offset, size, at::IntArrayRef(strides));
	at::native::checkInBoundsForStorage(size, at::IntArrayRef(strides), offset, self.dtype(),
					    source);
	self.unsafeGetTensorImpl()->set_storage_offset(offset);
	self.unsafeGetTensorImpl()->set_sizes_and_strides(size, strides);
	return self;
}

// The whole storage, as a vector of self's dtype.
at::Tensor &set_whole_storage(at::Tensor &self, c10::Storage source)
{
	int64_t n = int64_t(source.nbytes() / self.dtype().itemsize());

	return set_storage(self, source, 0, {n}, {});
}

TORCH_LIBRARY_IMPL(aten, HPU, m)
{
	m.impl("set_.source_Storage", set_whole_storage);
	m.impl("set_.source_Storage_storage_offset", set_storage);
}

} // namespace

} // namespace hpu_torch
