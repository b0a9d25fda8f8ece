// SPDX-License-Identifier: MIT
/*
 * Fused optimizers and the norm clip over tensor lists, as ops of the extension's "hpu"
 * namespace (hpu::fused_sgd, fused_adamw, fused_lamb, fused_adadelta, clip_norm,
 * fused_set_lr), which hpu_torch.hpex.optimizers and hpex.normalization.FusedClipNorm wrap:
 * each is libhpu's hpu_op_fused_* / hpu_op_clip_norm, launches back to back on the params'
 * stream.  The learning rate and the step count are 0-dim device tensors the kernels read;
 * fused_set_lr writes the learning rate with a device fill whose value is a recipe
 * parameter, so a schedule recompiles nothing, and a captured graph reads the lr of its replay.
 */
#include "hpu_torch.h"

#include <vector>

#include <torch/library.h>

namespace hpu_torch {
namespace {

// libhpu views of a list of device tensors, all on dev and floating.
class Views {
public:
	Views(at::TensorList ts, c10::Device dev, const char *op, const char *what)
	{
		for (const at::Tensor &t : ts) {
			TORCH_CHECK(floating_on_device(t) && t.device() == dev, "hpu::", op, ": ",
				    what, " must be floating tensors on ", dev, ", not ",
				    t.toString(), " on ", t.device());
			owned_.push_back(std::make_unique<View>(t));
			ptrs_.push_back(*owned_.back());
		}
	}
	hpu_tensor *const *data() const { return ptrs_.empty() ? nullptr : ptrs_.data(); }

private:
	std::vector<std::unique_ptr<View>> owned_;
	std::vector<hpu_tensor *> ptrs_;
};

// A 0-dim tensor on dev of one of two dtypes.
void check_scalar(const at::Tensor &t, c10::Device dev, at::ScalarType a, at::ScalarType b,
		  const char *op, const char *what)
{
	TORCH_CHECK(t.defined() && t.dim() == 0 && t.device() == dev &&
			    (t.scalar_type() == a || t.scalar_type() == b),
		    "hpu::", op, ": ", what, " must be a 0-dim ", a, " tensor on ", dev);
}

// The lists of one optimizer step: params, grads and the state lists (as many as params).
struct StepLists {
	c10::Device dev;
	Views params, grads;
	std::vector<std::unique_ptr<Views>> state;
	View lr, step;

	StepLists(const char *op, at::TensorList p, at::TensorList g,
		  std::initializer_list<at::TensorList> s, const at::Tensor &lr_t,
		  const at::Tensor &step_t)
		: dev(device_of(op, p)), params(p, dev, op, "params"), grads(g, dev, op, "grads"),
		  lr(checked(lr_t, dev, at::kFloat, at::kFloat, op, "lr")),
		  step(checked(step_t, dev, at::kFloat, at::kLong, op, "step"))
	{
		TORCH_CHECK(g.size() == p.size(), "hpu::", op, ": ", g.size(), " grads for ",
			    p.size(), " params");
		for (at::TensorList l : s) {
			TORCH_CHECK(l.size() == p.size(), "hpu::", op, ": a state list of ",
				    l.size(), " tensors for ", p.size(), " params");
			state.push_back(std::make_unique<Views>(l, dev, op, "the state"));
		}
	}
	hpu_tensor *const *st(size_t i) const { return state[i]->data(); }

private:
	static c10::Device device_of(const char *op, at::TensorList p)
	{
		TORCH_CHECK(!p.empty(), "hpu::", op, ": no params");
		return p[0].device();
	}
	static const at::Tensor &checked(const at::Tensor &t, c10::Device dev, at::ScalarType a,
					 at::ScalarType b, const char *op, const char *what)
	{
		check_scalar(t, dev, a, b, op, what);
		return t;
	}
};

void fused_sgd(at::TensorList params, at::TensorList grads, at::TensorList momentum_bufs,
	       const at::Tensor &lr, const at::Tensor &step, double momentum, double dampening,
	       double weight_decay, bool nesterov)
{
	StepLists l("fused_sgd", params, grads, {}, lr, step);
	const hpu_fused_sgd_config c = { momentum, dampening, weight_decay, nesterov };
	std::unique_ptr<Views> bufs;

	if (momentum != 0) {
		TORCH_CHECK(momentum_bufs.size() == params.size(), "hpu::fused_sgd: ",
			    momentum_bufs.size(), " momentum buffers for ", params.size(),
			    " params");
		bufs = std::make_unique<Views>(momentum_bufs, l.dev, "fused_sgd", "momentum_bufs");
	}
	HPU_CHECK(hpu_op_fused_sgd(stream_of(params[0]), l.params.data(), l.grads.data(),
				   bufs ? bufs->data() : nullptr, unsigned(params.size()), l.lr,
				   l.step, &c));
}

void fused_adamw(at::TensorList params, at::TensorList grads, at::TensorList exp_avgs,
		 at::TensorList exp_avg_sqs, const at::Tensor &lr, const at::Tensor &step,
		 double beta1, double beta2, double eps, double weight_decay)
{
	StepLists l("fused_adamw", params, grads, {exp_avgs, exp_avg_sqs}, lr, step);
	const hpu_fused_adamw_config c = { beta1, beta2, eps, weight_decay };

	HPU_CHECK(hpu_op_fused_adamw(stream_of(params[0]), l.params.data(), l.grads.data(),
				     l.st(0), l.st(1), unsigned(params.size()), l.lr, l.step, &c));
}

void fused_lamb(at::TensorList params, at::TensorList grads, at::TensorList exp_avgs,
		at::TensorList exp_avg_sqs, const at::Tensor &lr, const at::Tensor &step,
		double beta1, double beta2, double eps, double weight_decay, bool bias_correction,
		bool grad_averaging)
{
	StepLists l("fused_lamb", params, grads, {exp_avgs, exp_avg_sqs}, lr, step);
	const hpu_fused_lamb_config c = { beta1, beta2, eps, weight_decay, bias_correction,
					  grad_averaging };

	HPU_CHECK(hpu_op_fused_lamb(stream_of(params[0]), l.params.data(), l.grads.data(),
				    l.st(0), l.st(1), unsigned(params.size()), l.lr, l.step, &c));
}

void fused_adadelta(at::TensorList params, at::TensorList grads, at::TensorList square_avgs,
		    at::TensorList acc_deltas, const at::Tensor &lr, const at::Tensor &step,
		    double rho, double eps, double weight_decay)
{
	StepLists l("fused_adadelta", params, grads, {square_avgs, acc_deltas}, lr, step);
	const hpu_fused_adadelta_config c = { rho, eps, weight_decay };

	HPU_CHECK(hpu_op_fused_adadelta(stream_of(params[0]), l.params.data(), l.grads.data(),
					l.st(0), l.st(1), unsigned(params.size()), l.lr, l.step,
					&c));
}

// The joint norm of grads (at least one), which are scaled by min(1, max_norm / (norm + 1e-6)).
at::Tensor clip_norm(at::TensorList grads, double max_norm, double norm_type)
{
	TORCH_CHECK(!grads.empty(), "hpu::clip_norm: no grads");
	c10::Device dev = grads[0].device();
	Views g(grads, dev, "clip_norm", "grads");
	at::Tensor norm = at::empty({}, grads[0].options().dtype(at::kFloat));
	at::Tensor acc = at::empty({}, norm.options());

	HPU_CHECK(hpu_op_clip_norm(stream_of(norm), View(norm), View(acc), g.data(),
				   unsigned(grads.size()), max_norm, norm_type));
	return norm;
}

/*
 * lr <- value on the device, as a FILL launch whose value is a parameter of the lazy
 * recipe: 0 is written as -0.0, which the optimizers use alike, since a fill with +0 is a
 * memset that keys apart (a schedule reaching 0 would compile again).
 */
void fused_set_lr(const at::Tensor &lr, double value)
{
	check_scalar(lr, lr.device(), at::kFloat, at::kFloat, "fused_set_lr", "lr");
	TORCH_CHECK(lr.device().type() == c10::DeviceType::HPU,
		    "hpu::fused_set_lr: lr must be an hpu tensor");
	HPU_CHECK(hpu_op_fill(stream_of(lr), View(lr), value == 0 ? -0.0 : value));
}

TORCH_LIBRARY_FRAGMENT(hpu, m)
{
	m.def("fused_sgd(Tensor(a!)[] params, Tensor[] grads, Tensor(b!)[] momentum_bufs, "
	      "Tensor lr, Tensor(c!) step, float momentum, float dampening, float weight_decay, "
	      "bool nesterov) -> ()");
	m.def("fused_adamw(Tensor(a!)[] params, Tensor[] grads, Tensor(b!)[] exp_avgs, "
	      "Tensor(c!)[] exp_avg_sqs, Tensor lr, Tensor(d!) step, float beta1, float beta2, "
	      "float eps, float weight_decay) -> ()");
	m.def("fused_lamb(Tensor(a!)[] params, Tensor[] grads, Tensor(b!)[] exp_avgs, "
	      "Tensor(c!)[] exp_avg_sqs, Tensor lr, Tensor(d!) step, float beta1, float beta2, "
	      "float eps, float weight_decay, bool bias_correction, bool grad_averaging) -> ()");
	m.def("fused_adadelta(Tensor(a!)[] params, Tensor[] grads, Tensor(b!)[] square_avgs, "
	      "Tensor(c!)[] acc_deltas, Tensor lr, Tensor(d!) step, float rho, float eps, "
	      "float weight_decay) -> ()");
	m.def("clip_norm(Tensor(a!)[] grads, float max_norm, float norm_type) -> Tensor");
	m.def("fused_set_lr(Tensor(a!) lr, float value) -> ()");
}

TORCH_LIBRARY_IMPL(hpu, HPU, m)
{
	m.impl("fused_sgd", fused_sgd);
	m.impl("fused_adamw", fused_adamw);
	m.impl("fused_lamb", fused_lamb);
	m.impl("fused_adadelta", fused_adadelta);
	m.impl("clip_norm", clip_norm);
	m.impl("fused_set_lr", fused_set_lr);
}

} // namespace
} // namespace hpu_torch
