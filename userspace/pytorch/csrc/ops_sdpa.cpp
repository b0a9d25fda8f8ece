// SPDX-License-Identifier: MIT
/*
 * Fused scaled dot-product attention: the extension's own ops hpu::sdpa and
 * hpu::sdpa_backward (a TORCH_LIBRARY_FRAGMENT of the hpu namespace) on libhpu's
 * hpu_op_sdpa, which hpu_torch.hpex.kernels.FusedSDPA wraps in an autograd Function.
 * The forward returns the row logsumexp and, with dropout, the generator state it drew
 * from (the device's Philox generator, as dropout's): the backward recomputes the
 * probabilities and the dropout mask from them.
 */
#include "hpu_torch.h"

#include <torch/library.h>

namespace hpu_torch {
namespace {

hpu_sdpa_params params_of(double dropout_p, bool is_causal, double scale, bool fast_softmax,
			  bool pad_left)
{
	hpu_sdpa_params p = {};

	p.scale = scale;
	p.dropout_p = dropout_p;
	p.causal = is_causal;
	p.pad_left = pad_left;
	p.fast_softmax = fast_softmax;
	return p;
}

// q, k, v: hpu tensors of 4 dims and one float dtype the device computes in.
void check_qkv(const at::Tensor &q, const at::Tensor &k, const at::Tensor &v)
{
	TORCH_CHECK(floating_on_device(q) && same_floats(q, {k, v}),
		    "hpu::sdpa wants q, k and v on one hpu device in one of float32 and bfloat16, "
		    "not ", q.toString(), ", ", k.toString(), ", ", v.toString());
	TORCH_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4,
		    "hpu::sdpa wants q, k and v of 4 dims [B, H, L or S, D]");
}

// The mask on the device as libhpu takes it: bool (U8) or the device float it is.
c10::optional<at::Tensor> mask_on_device(const c10::optional<at::Tensor> &mask,
					 const at::Tensor &q)
{
	if (!mask || !mask->defined())
		return c10::nullopt;
	at::Tensor m = mask->to(q.device());

	TORCH_CHECK(m.scalar_type() == at::kBool || floating_on_device(m),
		    "hpu::sdpa's attn_mask must be bool, float32 or bfloat16, not ", m.toString());
	return m;
}

c10::optional<at::Tensor> lengths_on_device(const c10::optional<at::Tensor> &vl,
					    const at::Tensor &q)
{
	if (!vl || !vl->defined())
		return c10::nullopt;
	TORCH_CHECK(vl->scalar_type() == at::kInt || vl->scalar_type() == at::kLong,
		    "hpu::sdpa's valid_sequence_lengths must be int32 or int64");
	return vl->to(q.device());
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor>
sdpa(const at::Tensor &q, const at::Tensor &k, const at::Tensor &v,
     const c10::optional<at::Tensor> &attn_mask, double dropout_p, bool is_causal, double scale,
     bool fast_softmax, const c10::optional<at::Tensor> &valid_len, bool pad_left,
     bool return_probs, bool return_drop_mask)
{
	check_qkv(q, k, v);
	const int64_t B = q.size(0), H = q.size(1), L = q.size(2), S = k.size(2);
	at::Tensor out = at::empty({B, H, L, v.size(3)}, q.options());
	at::Tensor lse = at::empty({B, H, L}, q.options().dtype(at::kFloat));
	at::Tensor rng_used, probs, drop_mask, rng;
	hpu_stream *s = stream_of(out);
	hpu_sdpa_params p = params_of(dropout_p, is_causal, scale, fast_softmax, pad_left);
	auto mask = mask_on_device(attn_mask, q), vl = lengths_on_device(valid_len, q);

	if (return_probs)
		probs = at::empty({B, H, L, S}, q.options());
	if (return_drop_mask)
		drop_mask = at::empty({B, H, L, S}, q.options().dtype(at::kBool));
	if (dropout_p > 0) {
		rng = rng_ready(q.device().index(), s);
		rng_used = at::empty({2}, q.options().dtype(at::kLong));
	}
	auto m = maybe_view(mask), l = maybe_view(vl), r = maybe_view(rng),
	     ru = maybe_view(rng_used), pr = maybe_view(probs), dm = maybe_view(drop_mask);

	HPU_CHECK(hpu_op_sdpa(s, View(out), View(lse), View(q), View(k), View(v), handle(m),
			      handle(l), handle(r), handle(ru), handle(pr), handle(dm), &p));
	return {out, lse, rng_used, probs, drop_mask};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor>
sdpa_backward(const at::Tensor &grad_out, const at::Tensor &q, const at::Tensor &k,
	      const at::Tensor &v, const at::Tensor &out, const at::Tensor &lse,
	      const c10::optional<at::Tensor> &attn_mask,
	      const c10::optional<at::Tensor> &valid_len,
	      const c10::optional<at::Tensor> &rng_used, double dropout_p, bool is_causal,
	      double scale, bool fast_softmax, bool pad_left)
{
	check_qkv(q, k, v);
	TORCH_CHECK(same_floats(q, {grad_out, out}) && grad_out.sizes() == out.sizes(),
		    "hpu::sdpa_backward's grad_out must have out's shape and q's dtype");
	at::Tensor gq = at::empty(q.sizes(), q.options()), gk = at::empty(k.sizes(), k.options());
	at::Tensor gv = at::empty(v.sizes(), v.options());
	hpu_sdpa_params p = params_of(dropout_p, is_causal, scale, fast_softmax, pad_left);
	auto mask = mask_on_device(attn_mask, q), vl = lengths_on_device(valid_len, q);
	auto m = maybe_view(mask), l = maybe_view(vl), r = maybe_view(rng_used);

	HPU_CHECK(hpu_op_sdpa_backward(stream_of(gq), View(gq), View(gk), View(gv), View(grad_out),
				       View(q), View(k), View(v), View(out), View(lse), handle(m),
				       handle(l), handle(r), &p));
	return {gq, gk, gv};
}

} // namespace

TORCH_LIBRARY_FRAGMENT(hpu, m)
{
	m.def("sdpa(Tensor q, Tensor k, Tensor v, Tensor? attn_mask, float dropout_p, "
	      "bool is_causal, float scale, bool fast_softmax, Tensor? valid_len, bool pad_left, "
	      "bool return_probs, bool return_drop_mask) -> "
	      "(Tensor, Tensor, Tensor, Tensor, Tensor)");
	m.def("sdpa_backward(Tensor grad_out, Tensor q, Tensor k, Tensor v, Tensor out, "
	      "Tensor lse, Tensor? attn_mask, Tensor? valid_len, Tensor? rng_used, "
	      "float dropout_p, bool is_causal, float scale, bool fast_softmax, bool pad_left) -> "
	      "(Tensor, Tensor, Tensor)");
}

TORCH_LIBRARY_IMPL(hpu, HPU, m)
{
	m.impl("sdpa", sdpa);
	m.impl("sdpa_backward", sdpa_backward);
}

} // namespace hpu_torch
