// SPDX-License-Identifier: MIT
/*
 * The CPU fallback: the boxed kernel of every aten op with no kernel at the HPU key (and of
 * the kernels that cannot take their operands, ops.cpp).  PyTorch's own boxed CPU fallback
 * does the work: operands copied to the host, the CPU kernel run, results copied back to the
 * device and in-place and out= arguments written back (through _copy_from_and_resize).
 *
 * Each fallback is counted by op name ("aten::digamma": overloads together, as the seeds'
 * table counts them) and, with LOG_LEVEL_PT_FALLBACK at 1 or below (the seeds' debug level;
 * read at each fallback), logged on stderr in the seeds' format, the op's inputs by name:
 *   CPU fallback digamma : self=HPUBFloat16Type
 * The frequency table at exit is printed by the Python package (hpu_torch/_fallback.py).
 *
 * It is refused, before anything moves, in strict mode and during an HPU graph's capture.
 * PyTorch 1.13's fallback moves Tensor and Tensor[] operands but not Tensor?[] ones (the
 * indices of index and index_put_: x[idx] with idx on the device), so those move here.
 */
#include "hpu_torch.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include <ATen/native/CPUFallback.h>
#include <torch/library.h>

namespace hpu_torch {
namespace {

std::mutex counts_lock;
std::map<std::string, uint64_t> counts;

bool logging()
{
	const char *level = getenv("LOG_LEVEL_PT_FALLBACK");
	char *end;
	long v;

	if (!level)
		return false;
	v = strtol(level, &end, 10);
	return end != level && !*end && v <= 1;
}

std::string type_name(const at::Tensor &t)
{
	return c10::DeviceTypeName(t.device().type()) + c10::toString(t.scalar_type()) + "Type";
}

// "self=HPUBFloat16Type, other=HPUFloatType": the tensors among the op's inputs.
std::string inputs(const c10::FunctionSchema &schema, const torch::jit::Stack &stack)
{
	const auto &args = schema.arguments();
	size_t first = stack.size() - args.size();
	std::string s;

	for (size_t i = 0; i < args.size(); i++) {
		const c10::IValue &v = stack[first + i];

		if (args[i].is_out() || !v.isTensor() || !v.toTensor().defined())
			continue;
		s += (s.empty() ? "" : ", ") + args[i].name() + "=" + type_name(v.toTensor());
	}
	return s;
}

/*
 * A fallback is refused in strict mode (PT_HPU_FALLBACK_STRICT=1, read at each fallback) and
 * while the stream its operands' device would run it on captures an HPU graph.  The message
 * (the inputs formatted) is made only when a refusal is possible.
 */
void refuse_if_strict_or_capturing(const std::string &name, const c10::FunctionSchema &schema,
				   const torch::jit::Stack &stack)
{
	const char *env = getenv("PT_HPU_FALLBACK_STRICT");
	bool strict = env && !strcmp(env, "1");
	c10::optional<c10::Stream> s;

	for (size_t i = stack.size() - schema.arguments().size(); i < stack.size() && !s; i++)
		if (stack[i].isTensor() && stack[i].toTensor().device().is_hpu())
			s = current_stream(stack[i].toTensor().device().index());
	if (!strict && !(s && capturing_on(s->device_index())))
		return;
	std::string what = name + " has no kernel on the device for " + inputs(schema, stack) +
			   ": its CPU fallback";

	TORCH_CHECK(!strict, "hpu: ", what, " is refused in strict mode (PT_HPU_FALLBACK_STRICT=1)");
	check_not_capturing(*s, what.c_str());
}

// The device tensors of the op's Tensor?[] operands on the host, in new lists (the caller's
// list is shared, and these are inputs only: nothing is written back to them).
void optional_lists_to_host(const c10::FunctionSchema &schema, torch::jit::Stack &stack)
{
	for (size_t i = stack.size() - schema.arguments().size(); i < stack.size(); i++) {
		if (!stack[i].isOptionalTensorList())
			continue;
		c10::List<c10::optional<at::Tensor>> host;
		for (const c10::optional<at::Tensor> &t : stack[i].toOptionalTensorList()) {
			bool device = t.has_value() && t->defined() && t->device().is_hpu();
			host.push_back(device ? c10::optional<at::Tensor>(t->cpu()) : t);
		}
		stack[i] = std::move(host);
	}
}

} // namespace

void cpu_fallback(const c10::OperatorHandle &op, torch::jit::Stack *stack)
{
	const c10::OperatorName &name = op.schema().operator_name();

	refuse_if_strict_or_capturing(name.name, op.schema(), *stack);
	{
		std::lock_guard<std::mutex> guard(counts_lock);
		counts[name.name]++;
	}
	if (logging()) {
		std::string line = "CPU fallback " + name.name.substr(name.name.find("::") + 2) +
				   " : " + inputs(op.schema(), *stack) + "\n";
		fputs(line.c_str(), stderr);
	}
	optional_lists_to_host(op.schema(), *stack);
	at::native::cpu_fallback(op, stack);
}

std::map<std::string, uint64_t> fallback_counts()
{
	std::lock_guard<std::mutex> guard(counts_lock);

	return counts;
}

namespace {

TORCH_LIBRARY_IMPL(_, HPU, m)
{
	m.fallback(torch::CppFunction::makeFromBoxedFunction<&cpu_fallback>());
}

} // namespace
} // namespace hpu_torch
