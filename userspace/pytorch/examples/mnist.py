# SPDX-License-Identifier: MIT
"""The seeds' MNIST with HPU graphs, on Fashion-MNIST, in any of its five training loops.

    python3 -m hpu_torch.run examples/mnist.py [--mode MODE] [--steps N] [--batch-size B]
                                               [--pin-memory]
    python3 examples/mnist.py ...           (imports hpu_torch itself)

MODE is the seeds' loop: no_graphs (lazy mode, mark_step around the optimizer's step), eager
(the same loop with lazy mode off, as PT_HPU_LAZY_MODE=0), graphed_callables
(make_graphed_callables on the model), capture_replay (forward, backward and Adadelta's step
captured once, replayed per batch) or module_cacher (ModuleCacher on the model).  The data is
Debian's dataset-fashion-mnist, read whole into tensors; it prints the test accuracy.
--pin-memory hands the steps batches in pinned memory, as a DataLoader with pin_memory=True
does (the pinning outside the step), which the steps copy with non_blocking=True.

As a module: make_step(mode, model, optimizer, batch_size[, device, non_blocking, sample]) is
one mode's training step (step(data, target) enqueues it and returns the loss tensor), load() the
data, batches() its batches, accuracy() the test accuracy, Net the model; tests/,
tests/bench/bench_torch.py and the other examples (resnet.py, gpt.py) use them.
"""
import argparse
import gzip
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

try:
    import habana_frameworks.torch.core as htcore  # through python3 -m hpu_torch.run
except ImportError:
    import hpu_torch.core as htcore
import hpu_torch  # noqa: F401  (registers torch.hpu, under either name)

DATA = "/usr/share/datasets/fashion-mnist"
MODES = ("no_graphs", "eager", "graphed_callables", "capture_replay", "module_cacher")


class Net(nn.Module):
    """The seeds' model: 784 -> 128, ReLU, dropout 0.5, -> 10, log_softmax."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 128)
        self.fc2 = nn.Linear(128, 10)
        self.dropout = nn.Dropout(0.5)

    def forward(self, x):
        x = torch.flatten(x, 1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.dropout(x)
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)


def _idx(name):
    """An idx file's array, in one pass (the header: magic, then one 32-bit size per dim)."""
    with gzip.open(os.path.join(DATA, name)) as f:
        raw = f.read()
    dims = raw[3]
    shape = np.frombuffer(raw, dtype=">u4", count=dims, offset=4)
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def load(split):
    """(images [N, 1, 28, 28] float32 normalized as the seeds, labels [N] int64) of a split."""
    prefix = "train" if split == "train" else "t10k"
    images = _idx(prefix + "-images-idx3-ubyte.gz").astype(np.float32)
    images = (images / 255.0 - 0.1307) / 0.3081
    labels = _idx(prefix + "-labels-idx1-ubyte.gz").astype(np.int64)
    return torch.from_numpy(images).unsqueeze(1), torch.from_numpy(labels)


def batches(images, labels, batch_size, steps, pin=False):
    """steps batches in order, wrapping around; the last partial batch is dropped.  pin: each
    batch copied into pinned memory for hpu."""
    n = len(images) // batch_size
    for i in range(steps):
        j = (i % n) * batch_size
        batch = images[j:j + batch_size], labels[j:j + batch_size]
        yield tuple(t.pin_memory(device="hpu") for t in batch) if pin else batch


def _loop(forward, optimizer, device, marks, non_blocking=False):
    """The seeds' loop around forward, with mark_step() at the named points of marks ("begin",
    "backward": after it, "end") on hpu; gradients set to None each step."""
    hpu = device.type == "hpu"

    def mark(point):
        if hpu and point in marks:
            htcore.mark_step()

    def step(data, target):
        data = data.to(device, non_blocking=non_blocking)
        target = target.to(device, non_blocking=non_blocking)
        mark("begin")
        optimizer.zero_grad(set_to_none=True)
        loss = F.nll_loss(forward(data), target)
        loss.backward()
        mark("backward")
        optimizer.step()
        mark("end")
        return loss
    return step


def images(batch_size, device):
    """A random batch of images and labels: the default sample of make_step's warm-ups."""
    return (torch.randn(batch_size, 1, 28, 28, device=device),
            torch.randint(0, 10, (batch_size,), device=device))


def _graphed_callables(model, optimizer, device, batch_size, non_blocking, sample):
    x, _ = sample(batch_size, device)
    return _loop(torch.hpu.make_graphed_callables(model, (x,)), optimizer, device, ("end",),
                 non_blocking)


def _snapshot(model, optimizer):
    """What a warm-up changes: the parameters' and buffers' (batch norm's running statistics)
    values and the optimizer's state."""
    return ([t.detach().clone() for t in _tensors(model)],
            {p: {k: v.clone() if torch.is_tensor(v) else v for k, v in state.items()}
             for p, state in optimizer.state.items()})


def _tensors(model):
    return [*model.parameters(), *model.buffers()]


@torch.no_grad()
def _rewind(model, optimizer, snapshot):
    """Puts back in place (a capture then keeps these very tensors) what the warm-up changed: the
    parameters and buffers, and the optimizer's state - as it was, or, the state the warm-up
    made, as a fresh one's: zeros and a step count of 0, as Adadelta's begins. Left as they are,
    three Adadelta steps on random data train the model on noise and fill Adadelta's running
    averages with its gradients, which slows the replays' learning after (40 steps of 200
    without dropout reached 0.46 test accuracy, the eager loop 0.74)."""
    params, states = snapshot
    for p, saved in zip(_tensors(model), params):
        p.copy_(saved)
    for p, state in optimizer.state.items():
        before = states.get(p)
        for k, v in state.items():
            if not torch.is_tensor(v):
                state[k] = before[k] if before else type(v)(0)
            elif before:
                v.copy_(before[k])
            else:
                v.zero_()


def _backward_from(stream, loss):
    """loss.backward() of a forward enqueued on stream: PyTorch 1.13's autograd engine runs
    the backward on its own thread, on the device's default stream (it moves that thread onto
    the forward's stream for CUDA only), so the default stream waits for the forward and
    stream for the gradients.  Unordered, the backward may read the forward's outputs before
    they are written (max pooling's indices: a refused launch)."""
    default = torch.hpu.default_stream()
    default.wait_stream(stream)
    loss.backward()
    stream.wait_stream(default)


def _capture_replay(model, optimizer, device, batch_size, non_blocking, sample):
    static_input, static_target = sample(batch_size, device)
    snapshot = _snapshot(model, optimizer)
    s = torch.hpu.Stream()
    s.wait_stream(torch.hpu.current_stream())
    with torch.hpu.stream(s):
        for _ in range(3):
            optimizer.zero_grad(set_to_none=True)
            _backward_from(s, F.nll_loss(model(static_input), static_target))
            optimizer.step()
    torch.hpu.current_stream().wait_stream(s)
    _rewind(model, optimizer, snapshot)
    g = torch.hpu.HPUGraph()
    optimizer.zero_grad(set_to_none=True)
    with torch.hpu.graph(g):
        static_loss = F.nll_loss(model(static_input), static_target)
        static_loss.backward()
        optimizer.step()

    def step(data, target):
        static_input.copy_(data, non_blocking=non_blocking)
        static_target.copy_(target, non_blocking=non_blocking)
        g.replay()
        return static_loss
    return step


def _module_cacher(model, optimizer, device, non_blocking):
    torch.hpu.ModuleCacher(max_graphs=10)(model=model, inplace=True)
    return _loop(model, optimizer, device, ("begin", "end"), non_blocking)


def make_step(mode, model, optimizer, batch_size, device="hpu", non_blocking=False,
              sample=images):
    """mode's training step over model (in training mode, log-probabilities out, the loss
    nll_loss) and optimizer: step(data, target) enqueues one step on host batches (copied with
    non_blocking) and returns its loss tensor.  sample(batch_size, device) is a random batch
    (data, target) on device for the graph modes' warm-ups and captures.  eager turns lazy mode
    off for the process; the others leave it as it is."""
    device = torch.device(device)
    model.train()
    if mode == "eager":
        htcore._set_lazy(False)
    if mode in ("no_graphs", "eager") or device.type != "hpu":
        return _loop(model, optimizer, device, ("backward", "end"), non_blocking)
    if mode == "graphed_callables":
        return _graphed_callables(model, optimizer, device, batch_size, non_blocking, sample)
    if mode == "capture_replay":
        return _capture_replay(model, optimizer, device, batch_size, non_blocking, sample)
    if mode == "module_cacher":
        return _module_cacher(model, optimizer, device, non_blocking)
    raise ValueError(f"unknown mode {mode!r} (one of {', '.join(MODES)})")


@torch.no_grad()
def accuracy(model, images, labels, device="hpu", batch_size=1000):
    """Test accuracy (fraction), through the model class's own forward: a wrapper's graphs
    stay out."""
    was = model.training
    model.eval()
    correct = 0
    for data, target in batches(images, labels, batch_size, len(images) // batch_size):
        out = type(model).forward(model, data.to(device))
        correct += (out.argmax(dim=1) == target.to(device)).sum().item()
    model.train(was)
    return correct / (len(images) // batch_size * batch_size)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mode", choices=MODES, default="no_graphs")
    parser.add_argument("--steps", type=int, default=300, help="training steps (default 300)")
    parser.add_argument("--batch-size", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="hpu", help="hpu, or cpu for the reference")
    parser.add_argument("--pin-memory", action="store_true",
                        help="batches in pinned memory, copied with non_blocking=True")
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    model = Net().to(args.device)
    optimizer = optim.Adadelta(model.parameters(), lr=0.1)
    train_x, train_y = load("train")
    pin = args.pin_memory and args.device != "cpu"
    step = make_step(args.mode, model, optimizer, args.batch_size, args.device, pin)
    for i, (data, target) in enumerate(batches(train_x, train_y, args.batch_size, args.steps,
                                               pin)):
        loss = step(data, target)
        if i % 100 == 0 or i == args.steps - 1:
            print(f"step {i:5d}  loss {loss.item():.4f}")
    test_x, test_y = load("test")
    print(f"mode {args.mode}: test accuracy {accuracy(model, test_x, test_y, args.device):.4f}")


if __name__ == "__main__":
    main()
