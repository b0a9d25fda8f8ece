// SPDX-License-Identifier: MIT
/*
 * Network kernels at the HPU key, forward and backward: relu, (log_)softmax, dropout, layer
 * norm and embedding, on libhpu's ops.
 *
 * Dropout runs on the device's Philox generator (hpu_op_dropout): each device has a state
 * tensor {seed, offset} that every call advances on the device, so masks differ per call
 * (and per replay of a captured graph) and repeat per seed.  torch.hpu.manual_seed (and
 * torch.manual_seed, which hpu_torch extends) sets the seed; it is written to the state, by
 * device fills on the stream about to draw, ahead of the device's next dropout, capture or
 * replay (rng_ready()): the state exists and holds its seed before any capture begins, and
 * a seed given after a capture holds for the replays that follow.  A capture would refuse a
 * host copy, and would record a fill made during it, so manual_seed is refused while the
 * device captures (as CUDA's is).  Unseeded, a device starts from PyTorch's default CPU
 * seed.  PyTorch sends nn.Dropout to bernoulli_ and mul for devices it does not know: dropout
 * is registered at AutogradHPU (as CUDA's fused path) to reach native_dropout.
 */
#include "hpu_torch.h"

#include <memory>
#include <mutex>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/WrapDimUtils.h>
#include <torch/library.h>

namespace hpu_torch {
namespace {

struct Rng {
	std::mutex lock;
	at::Tensor state;
	uint64_t seed = 0;
	bool seeded = false, pending = true;
};

// Kept for the process (never destroyed: tensors must not outlive libhpu at exit).
Rng *const rngs = new Rng[kMaxDevices];

// Fills elements [at, at + n) of words (a state's int32 view) with v, on s.
void fill_words(hpu_stream *s, const at::Tensor &words, int64_t at, int64_t n, int32_t v)
{
	HPU_CHECK(hpu_op_fill(s, View(words.narrow(0, at, n)), v));
}

} // namespace

at::Tensor rng_ready(c10::DeviceIndex index, hpu_stream *s)
{
	Rng &r = rngs[index];
	std::lock_guard<std::mutex> guard(r.lock);

	if (!r.state.defined())
		r.state = at::empty({2}, at::TensorOptions(at::kLong).device(c10::DeviceType::HPU,
									    index));
	if (!r.pending)
		return r.state;
	if (!r.seeded)
		r.seed = at::detail::getDefaultCPUGenerator().current_seed();
	// {seed, offset 0} as the little-endian words {seed lo, seed hi, 0, 0}: each a value a
	// device fill holds exactly, where a 64-bit seed in one double would not be.
	at::Tensor words = r.state.view(at::kInt);

	fill_words(s, words, 0, 1, int32_t(uint32_t(r.seed)));
	fill_words(s, words, 1, 1, int32_t(uint32_t(r.seed >> 32)));
	fill_words(s, words, 2, 2, 0);
	r.pending = false;
	return r.state;
}

void manual_seed(c10::DeviceIndex index, uint64_t seed)
{
	check_index(index);
	Rng &r = rngs[index];
	std::lock_guard<std::mutex> guard(r.lock);

	TORCH_CHECK(!capturing_on(index), "hpu: manual_seed of hpu:", int(index),
		    " while it captures an HPU graph: seed before the capture (replays draw from "
		    "the generator's state as it is at each replay)");
	r.seed = seed;
	r.seeded = r.pending = true;
}

namespace {

at::Tensor relu(const at::Tensor &self)
{
	if (!floating_on_device(self))
		return fall_back<at::_ops::relu>(self);
	at::Tensor out = at::empty(self.sizes(), self.options());

	if (out.numel())
		HPU_CHECK(hpu_op_unary(stream_of(out), HPU_UN_RELU, View(out), View(self)));
	return out;
}

at::Tensor &relu_(at::Tensor &self)
{
	if (!floating_on_device(self))
		return fall_back<at::_ops::relu_>(self);
	if (self.numel())
		HPU_CHECK(hpu_op_unary(stream_of(self), HPU_UN_RELU, View(self), View(self)));
	return self;
}

// relu's backward (threshold 0): grad where self > 0.
at::Tensor &threshold_backward_out(const at::Tensor &grad_output, const at::Tensor &self,
				   const at::Scalar &threshold, at::Tensor &grad_input)
{
	if (threshold.isComplex() || threshold.toDouble() != 0 ||
	    !same_floats(grad_input, {grad_output, self}))
		return fall_back<at::_ops::threshold_backward_grad_input>(grad_output, self,
									  threshold, grad_input);
	resize_out(grad_input, at::infer_size(grad_output.sizes(), self.sizes()));
	if (grad_input.numel())
		HPU_CHECK(hpu_op_relu_backward(stream_of(grad_input), View(grad_input),
					       View(grad_output), View(self)));
	return grad_input;
}

template <bool Log, class Op>
at::Tensor &softmax_out(const at::Tensor &self, int64_t dim, bool half_to_float, at::Tensor &out)
{
	if (half_to_float || !self.dim() || !same_floats(out, {self}))
		return fall_back<Op>(self, dim, half_to_float, out);
	resize_out(out, self.sizes());
	if (out.numel())
		HPU_CHECK(hpu_op_softmax(stream_of(out), View(out), View(self),
					 at::maybe_wrap_dim(dim, self.dim()), Log));
	return out;
}

template <bool Log, class Op>
at::Tensor &softmax_backward_out(const at::Tensor &grad_output, const at::Tensor &output,
				 int64_t dim, at::ScalarType input_dtype, at::Tensor &grad_input)
{
	if (input_dtype != grad_output.scalar_type() || !output.dim() ||
	    !same_floats(grad_input, {grad_output, output}))
		return fall_back<Op>(grad_output, output, dim, input_dtype, grad_input);
	resize_out(grad_input, output.sizes());
	if (grad_input.numel())
		HPU_CHECK(hpu_op_softmax_backward(stream_of(grad_input), View(grad_input),
						  View(grad_output), View(output),
						  at::maybe_wrap_dim(dim, output.dim()), Log));
	return grad_input;
}

std::tuple<at::Tensor, at::Tensor> native_dropout(const at::Tensor &input, double p,
						  c10::optional<bool> train)
{
	if (!floating_on_device(input))
		return fall_back<at::_ops::native_dropout>(input, p, train);
	at::Tensor out = at::empty(input.sizes(), input.options());
	at::Tensor mask = at::empty(input.sizes(), input.options().dtype(at::kBool));

	if (!input.numel())
		return {out, mask};
	// Not training, or nothing dropped: the input kept whole; everything dropped: zeros.
	if ((train.has_value() && !*train) || p == 0 || p >= 1) {
		bool keep = p < 1 || (train.has_value() && !*train);

		HPU_CHECK(hpu_op_fill(stream_of(mask), View(mask), keep));
		if (keep)
			copy_into(out, input);
		else
			HPU_CHECK(hpu_op_fill(stream_of(out), View(out), 0));
		return {out, mask};
	}
	hpu_stream *s = stream_of(out);
	at::Tensor rng = rng_ready(input.device().index(), s);

	HPU_CHECK(hpu_op_dropout(s, View(out), View(mask), View(input), View(rng), p));
	return {out, mask};
}

// grad * mask * scale, scale 1 / (1 - p).
at::Tensor native_dropout_backward(const at::Tensor &grad_output, const at::Tensor &mask,
				   double scale)
{
	if (scale <= 0 || !floating_on_device(grad_output) || !on_device(mask) ||
	    mask.scalar_type() != at::kBool)
		return fall_back<at::_ops::native_dropout_backward>(grad_output, mask, scale);
	at::Tensor grad_input = at::empty(grad_output.sizes(), grad_output.options());

	if (grad_input.numel())
		HPU_CHECK(hpu_op_dropout_backward(stream_of(grad_input), View(grad_input),
						  View(grad_output), View(mask), 1 - 1 / scale));
	return grad_input;
}

// nn.Dropout in training on the device's generator, through native_dropout's autograd.
at::Tensor dropout(const at::Tensor &input, double p, bool train)
{
	if (p == 0 || !train || !input.numel())
		return input;
	return std::get<0>(at::native_dropout(input, p, train));
}

/*
 * Layer norm's operands as the device takes them: floating, of one dtype, normalized over the
 * last dims; PyTorch's mean and rstd are [leading dims, 1 per normalized dim], libhpu's F32
 * [leading dims] (views of the same memory).
 */
bool layer_norm_ok(const at::Tensor &input, at::IntArrayRef shape,
		   const c10::optional<at::Tensor> &weight, const c10::optional<at::Tensor> &bias)
{
	int64_t axis = input.dim() - int64_t(shape.size());

	if (!floating_on_device(input) || shape.empty() || axis < 0 ||
	    input.sizes().slice(axis) != shape)
		return false;
	for (const auto *t : {&weight, &bias})
		if (*t && (*t)->defined() &&
		    (!on_device(**t) || (*t)->scalar_type() != input.scalar_type() ||
		     (*t)->sizes() != shape))
			return false;
	return true;
}

at::Tensor leading(const at::Tensor &stat, const at::Tensor &input, size_t dims)
{
	return stat.view(input.sizes().slice(0, input.dim() - dims));
}

std::tuple<at::Tensor, at::Tensor, at::Tensor>
native_layer_norm(const at::Tensor &input, at::IntArrayRef normalized_shape,
		  const c10::optional<at::Tensor> &weight, const c10::optional<at::Tensor> &bias,
		  double eps)
{
	if (!layer_norm_ok(input, normalized_shape, weight, bias))
		return fall_back<at::_ops::native_layer_norm>(
			input, normalized_shape, weight, bias,
			eps);
	size_t dims = normalized_shape.size();
	std::vector<int64_t> stat_sizes = input.sizes().slice(0, input.dim() - dims).vec();
	stat_sizes.resize(input.dim(), 1);
	at::Tensor out = at::empty(input.sizes(), input.options());
	at::Tensor mean = at::empty(stat_sizes, input.options().dtype(at::kFloat));
	at::Tensor rstd = at::empty(stat_sizes, input.options().dtype(at::kFloat));

	if (input.numel()) {
		auto w = maybe_view(weight), b = maybe_view(bias);

		HPU_CHECK(hpu_op_layer_norm(stream_of(out), View(out),
					    View(leading(mean, input, dims)),
					    View(leading(rstd, input, dims)), View(input), handle(w),
					    handle(b), dims, eps));
	}
	return {out, mean, rstd};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor>
native_layer_norm_backward(const at::Tensor &grad_out, const at::Tensor &input,
			   at::IntArrayRef normalized_shape, const at::Tensor &mean,
			   const at::Tensor &rstd, const c10::optional<at::Tensor> &weight,
			   const c10::optional<at::Tensor> &bias, std::array<bool, 3> output_mask)
{
	if (!layer_norm_ok(input, normalized_shape, weight, bias) ||
	    !same_floats(grad_out, {input}) || mean.scalar_type() != at::kFloat ||
	    rstd.scalar_type() != at::kFloat || !on_device(mean) || !on_device(rstd))
		return fall_back<at::_ops::native_layer_norm_backward>(
			grad_out, input, normalized_shape,
			mean, rstd, weight, bias, output_mask);
	size_t dims = normalized_shape.size();
	bool has_weight = weight && weight->defined(), has_bias = bias && bias->defined();
	at::Tensor grad_in = at::empty(input.sizes(), input.options());
	at::Tensor grad_w, grad_b;

	if (output_mask[1] && has_weight)
		grad_w = at::empty(normalized_shape, input.options());
	if (output_mask[2] && has_bias)
		grad_b = at::empty(normalized_shape, input.options());
	if (input.numel()) {
		auto gw = maybe_view(grad_w), gb = maybe_view(grad_b), w = maybe_view(weight);

		HPU_CHECK(hpu_op_layer_norm_backward(stream_of(grad_in), View(grad_in), handle(gw),
						     handle(gb), View(grad_out), View(input),
						     View(leading(mean, input, dims)),
						     View(leading(rstd, input, dims)), handle(w),
						     dims));
	}
	return {output_mask[0] ? grad_in : at::Tensor(), grad_w, grad_b};
}

bool index_dtype(const at::Tensor &t)
{
	return on_device(t) && (t.scalar_type() == at::kLong || t.scalar_type() == at::kInt);
}

at::Tensor embedding(const at::Tensor &weight, const at::Tensor &indices, int64_t padding_idx,
		     bool scale_grad_by_freq, bool sparse)
{
	if (sparse || weight.dim() != 2 || !floating_on_device(weight) || !index_dtype(indices) ||
	    indices.dim() >= HPU_MAX_DIMS || indices.device() != weight.device())
		return fall_back<at::_ops::embedding>(weight, indices, padding_idx,
						      scale_grad_by_freq, sparse);
	std::vector<int64_t> sizes = indices.sizes().vec();
	sizes.push_back(weight.size(1));
	at::Tensor out = at::empty(sizes, weight.options());

	// The forward reads every row, the padding one too, as PyTorch's.
	if (out.numel())
		HPU_CHECK(hpu_op_embedding(stream_of(out), View(out), View(weight), View(indices),
					   -1));
	return out;
}

at::Tensor embedding_dense_backward(const at::Tensor &grad_output, const at::Tensor &indices,
				    int64_t num_weights, int64_t padding_idx,
				    bool scale_grad_by_freq)
{
	if (scale_grad_by_freq || !floating_on_device(grad_output) || !index_dtype(indices) ||
	    grad_output.dim() != indices.dim() + 1)
		return fall_back<at::_ops::embedding_dense_backward>(
			grad_output, indices, num_weights, padding_idx,
			scale_grad_by_freq);
	at::Tensor grad_weight = at::zeros({num_weights, grad_output.size(-1)},
					   grad_output.options());

	if (grad_output.numel())
		HPU_CHECK(hpu_op_embedding_backward(stream_of(grad_weight), View(grad_weight),
						    View(grad_output), View(indices),
						    padding_idx < 0 ? -1 : padding_idx));
	return grad_weight;
}

TORCH_LIBRARY_IMPL(aten, HPU, m)
{
	namespace ops = at::_ops;

	m.impl("relu", relu);
	m.impl("relu_", relu_);
	m.impl("threshold_backward.grad_input", threshold_backward_out);
	m.impl("_softmax.out", softmax_out<false, ops::_softmax_out>);
	m.impl("_log_softmax.out", softmax_out<true, ops::_log_softmax_out>);
	m.impl("_softmax_backward_data.out",
	       softmax_backward_out<false, ops::_softmax_backward_data_out>);
	m.impl("_log_softmax_backward_data.out",
	       softmax_backward_out<true, ops::_log_softmax_backward_data_out>);
	m.impl("native_dropout", native_dropout);
	m.impl("native_dropout_backward", native_dropout_backward);
	m.impl("dropout", dropout);
	m.impl("native_layer_norm", native_layer_norm);
	m.impl("native_layer_norm_backward", native_layer_norm_backward);
	m.impl("embedding", embedding);
	m.impl("embedding_dense_backward", embedding_dense_backward);
}

TORCH_LIBRARY_IMPL(aten, AutogradHPU, m)
{
	m.impl("dropout", dropout);
}

} // namespace
} // namespace hpu_torch
