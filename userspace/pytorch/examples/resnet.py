# SPDX-License-Identifier: MIT
"""A small ResNet trained on Fashion-MNIST, on hpu in lazy mode or with HPU graphs, or on the CPU.

    python3 -m hpu_torch.run examples/resnet.py [--mode MODE] [--steps N] [--batch-size B]
                                                [--width W] [--test-size T] [--device cpu]
    python3 examples/resnet.py ...           (imports hpu_torch itself)

The model: a 3x3 convolution stem (W channels), batch norm, ReLU and 2x2 max pooling, then two
residual blocks (two 3x3 convolutions with batch norm and ReLU, the second block widening to 2W
channels with stride 2 and a strided 1x1 convolution on its shortcut), adaptive average pooling
and a linear head.  MODE is examples/mnist.py's: no_graphs (lazy mode, mark_step after the
backward and after the optimizer's step) or capture_replay (the whole step, forward, backward and
SGD's step, captured once as an HPU graph and replayed per batch); the training loop, the data
(Debian's dataset-fashion-mnist) and the accuracy are mnist.py's.  It prints the loss every 50
steps and the accuracy on the first T test images (all 10000 by default).

As a module: ResNet(width) the model, optimizer(model) its SGD; tests/ use them.
"""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

import mnist

MODES = ("no_graphs", "capture_replay")


class Block(nn.Module):
    """A basic residual block: relu(bn(conv(relu(bn(conv(x))))) + shortcut(x))."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                          nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + self.shortcut(x))


class ResNet(nn.Module):
    """[N, 1, 28, 28] images to log-probabilities of 10 classes."""

    def __init__(self, width=16):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, width, 3, 1, 1, bias=False),
                                  nn.BatchNorm2d(width), nn.ReLU(), nn.MaxPool2d(2))
        self.blocks = nn.Sequential(Block(width, width, 1), Block(width, 2 * width, 2))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(2 * width, 10)

    def forward(self, x):
        x = self.pool(self.blocks(self.stem(x)))
        return F.log_softmax(self.head(torch.flatten(x, 1)), dim=1)


def optimizer(model):
    return torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mode", choices=MODES, default="no_graphs")
    parser.add_argument("--steps", type=int, default=300, help="training steps (default 300)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--width", type=int, default=16, help="the stem's channels (default 16)")
    parser.add_argument("--test-size", type=int, default=10000,
                        help="test images the accuracy is measured on (default 10000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="hpu", help="hpu, or cpu for the reference")
    args = parser.parse_args(argv)

    torch.manual_seed(args.seed)
    model = ResNet(args.width).to(args.device)
    step = mnist.make_step(args.mode, model, optimizer(model), args.batch_size, args.device)
    train_x, train_y = mnist.load("train")
    for i, (data, target) in enumerate(mnist.batches(train_x, train_y, args.batch_size,
                                                     args.steps)):
        loss = step(data, target)
        if i % 50 == 0 or i == args.steps - 1:
            print(f"step {i:5d}  loss {loss.item():.4f}")
    test_x, test_y = mnist.load("test")
    batch = min(args.test_size, 500)
    n = min(args.test_size, len(test_x)) // batch * batch
    acc = mnist.accuracy(model, test_x[:n], test_y[:n], args.device, batch)
    print(f"mode {args.mode} on {args.device}: test accuracy {acc:.4f} ({n} images)")


if __name__ == "__main__":
    main()
