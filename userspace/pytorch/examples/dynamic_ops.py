# SPDX-License-Identifier: MIT
"""HPU graphs around a dynamic op (the seeds' "Dynamic Ops" example).

    python3 -m hpu_torch.run examples/dynamic_ops.py [--steps N] [--seed S]

module1 -> boolean indexing (its output's positive elements: how many depends on the data) ->
module2.  Each module is in a ModuleCacher of its own and the dynamic op between them is left
out of both, between mark_step()s: module1 replays one graph, module2 one per size of its
input (captured the first time a size comes, at most 10 kept, the least recently used
dropped).  Each step prints its loss, as the seeds' do; the end prints the sizes the dynamic
op gave, each ModuleCacher's counts (calls, captures, evictions) and the metrics
graph_compilation and hpu_graph.
"""
import argparse
import itertools

import torch
import torch.nn as nn
import torch.optim as optim

import habana_frameworks.torch.core as htcore
from habana_frameworks.torch.hpu.metrics import metric_global

parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
parser.add_argument("--steps", type=int, default=200, help="training steps (default 200)")
parser.add_argument("--seed", type=int, default=0)
args = parser.parse_args()
torch.manual_seed(args.seed)

device = 'hpu'
module1 = nn.Linear(10, 3).to(device)
module2 = nn.ReLU().to(device)
all_params = itertools.chain(module1.parameters(), module2.parameters())
optimizer = optim.Adadelta(all_params, lr=0.1)
if device == 'hpu':
    htcore.hpu.ModuleCacher(max_graphs=10)(model=module1, inplace=True)
    htcore.hpu.ModuleCacher(max_graphs=10)(model=module2, inplace=True)
real_inputs = [torch.randn(5, 10) for _ in range(args.steps)]
real_targets = [real_inputs[i].mean() for i in range(args.steps)]
sizes = []
for data, target in zip(real_inputs, real_targets):
    data = data.to(device)
    target = target.to(device)
    htcore.mark_step()
    optimizer.zero_grad(set_to_none=True)
    tmp = module1(data)
    # dynamic op
    htcore.mark_step()
    tmp = tmp[torch.where(tmp > 0)]
    htcore.mark_step()
    sizes.append(len(tmp))
    tmp = module2(tmp)
    loss = torch.abs(tmp.mean() - target)
    loss.backward()
    htcore.mark_step()
    optimizer.step()
    htcore.mark_step()
    print(loss)
print("sizes after the dynamic op: ", sizes)
print("module1: ", module1.forward.stats)
print("module2: ", module2.forward.stats)
print("graph_compilation: ", metric_global("graph_compilation").stats())
print("hpu_graph: ", metric_global("hpu_graph").stats())
