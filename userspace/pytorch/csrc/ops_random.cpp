// SPDX-License-Identifier: MIT
/*
 * Uniform and normal fills on the device's Philox generator (hpu_op_uniform, hpu_op_normal):
 * the state dropout draws from (ops_nn.cpp's rng_ready(): {seed, offset} per device, seeded
 * by torch.hpu.manual_seed and torch.manual_seed), so that torch.rand, torch.randn,
 * Tensor.uniform_/normal_ and nn.init on hpu draw on the device, differ per call and per
 * replay of a captured graph, and repeat per seed.  ops.cpp's uniform_ and normal_ come here
 * first; a call with an explicit generator (a CPU one), or one the device cannot take (not a
 * float the device computes in, overlapping elements, parameters PyTorch refuses) keeps the
 * host's draw and PyTorch's errors.
 */
#include "hpu_torch.h"

#include <cmath>

#include <ATen/MemoryOverlap.h>

namespace hpu_torch {

bool device_random(at::Tensor &self, const c10::optional<at::Generator> &gen, bool normal,
		   double a, double b)
{
	if ((gen && gen->defined()) || !floating_on_device(self) || !std::isfinite(a) ||
	    !std::isfinite(b) || (normal ? !(b >= 0) : !(a <= b)) ||
	    at::has_internal_overlap(self) == at::MemOverlap::Yes)
		return false;
	if (self.numel()) {
		hpu_stream *s = stream_of(self);
		at::Tensor rng = rng_ready(self.device().index(), s);

		HPU_CHECK((normal ? hpu_op_normal : hpu_op_uniform)(s, View(self), View(rng), a, b));
	}
	return true;
}

} // namespace hpu_torch
