# SPDX-License-Identifier: MIT
"""Detecting frequent graph recompilations (Habana's blog): a batch that grows each step.

    python3 -m hpu_torch.run examples/growing_batch.py [--steps N] [--batch-size B] [--lr LR]
                                                      [--seed S] [--split train|test]

The seeds' MNIST model (examples/mnist.py's Net, on Fashion-MNIST) trained in lazy mode, with
the blog's artificial dynamicity: step i trains on the first min(i + 1, B - 1) samples of its
batch, so the batch grows by one each step up to B - 1, then stays.  Each step prints its
batch size and the metric graph_compilation, as the blog's edit of mnist.py does: it grows by
one graph per new batch size (the forward and backward graph is compiled again for each
shape; the optimizer's step, whose shapes do not change, is not) and stops growing once the
size repeats.  Past HPU_RECOMPILE_WARN (8) shapes of one graph, libhpu warns on stderr and
hpu_torch raises a RecompileWarning.

With PT_HPU_RECIPE_CACHE_CONFIG=dir,false,max_mb a second run loads the recipes the first
left in dir and compiles nothing.
"""
import argparse

import torch
import torch.nn.functional as F
import torch.optim as optim

import habana_frameworks.torch.core as htcore
from habana_frameworks.torch.hpu.metrics import metric_global

from mnist import Net, batches, load


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=200, help="training steps (default 200)")
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--lr", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--split", choices=("train", "test"), default="train",
                        help="the data to train on (test: the smaller file, quicker to read)")
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    device = torch.device("hpu")
    model = Net().to(device)
    optimizer = optim.Adadelta(model.parameters(), lr=args.lr)
    gc_metric = metric_global("graph_compilation")
    images, labels = load(args.split)

    model.train()
    for batch_idx, (data, target) in enumerate(batches(images, labels, args.batch_size,
                                                       args.steps)):
        # The blog's lines: the batch's first batch_idx + 1 samples, at most batch_size - 1.
        index = max(-batch_idx - 1, -args.batch_size + 1)
        data, target = data[:-index, :, :, :], target[:-index]
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        htcore.mark_step()
        optimizer.step()
        htcore.mark_step()
        print(f"step {batch_idx} batch {len(data)} loss {loss.item():.4f}")
        print("graph_compilation: ", gc_metric.stats())


if __name__ == "__main__":
    main()
