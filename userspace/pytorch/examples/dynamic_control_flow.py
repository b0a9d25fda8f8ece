# SPDX-License-Identifier: MIT
"""HPU graphs with dynamic control flow (the seeds' "Dynamic Control Flow" example).

    python3 -m hpu_torch.run examples/dynamic_control_flow.py [--steps N] [--seed S]

module1's output feeds module2 or module3, chosen at random each step: the model is split into
one graphed callable per module (make_graphed_callables: a forward and a backward graph each,
captured once, up front), and each step replays the graphs of the path it takes.  Each step
prints its path and loss, as the seeds' do, and the metric graph_compilation: the step's own
lazy graphs (around the graphs: the loss, the optimizer's step) compile in a path's first two
steps (the second has the optimizer's state), then no more.  The end prints the metric
hpu_graph: 6 captures (3 modules, forward and backward) and 4 replays a step.
"""
import argparse
import itertools
import random

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
random.seed(args.seed)

device = 'hpu'
module1 = nn.Linear(784, 128).to(device)
module2 = nn.Linear(128, 100).to(device)
module3 = nn.Linear(128, 50).to(device)
all_params = itertools.chain(module1.parameters(), module2.parameters(), module3.parameters())
optimizer = optim.Adadelta(all_params, lr=0.1)
x = torch.randn(5, 784, device=device)
# The seeds' h needs no gradient; module1's output, which takes its place, does: a graphed
# callable's sample must need a gradient where its real input does (as torch.cuda's), or the
# gradient stops there and module1 never trains.
h = torch.randn(5, 128, device=device, requires_grad=True)
if device == 'hpu':
    module1 = torch.hpu.make_graphed_callables(module1, (x,))
    module2 = torch.hpu.make_graphed_callables(module2, (h,))
    module3 = torch.hpu.make_graphed_callables(module3, (h,))
real_inputs = [torch.rand_like(x) for _ in range(args.steps)]
real_targets = [real_inputs[i].mean() for i in range(args.steps)]
for data, target in zip(real_inputs, real_targets):
    data = data.to(device)
    target = target.to(device)
    htcore.mark_step()
    optimizer.zero_grad(set_to_none=True)
    tmp = module1(data)  # forward ops run as a graph
    if random.random() > 0.5:
        print('Path 1')
        tmp = module2(tmp)  # forward ops run as a graph
    else:
        print('Path 2')
        tmp = module3(tmp)  # forward ops run as a graph
    loss = torch.abs(tmp.mean() - target)
    loss.backward()
    htcore.mark_step()
    optimizer.step()
    htcore.mark_step()
    print(loss)
    print("graph_compilation: ", metric_global("graph_compilation").stats())
print("hpu_graph: ", metric_global("hpu_graph").stats())
