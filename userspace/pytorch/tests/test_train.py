# SPDX-License-Identifier: MIT
"""Training the seeds' MLP on hpu: eager and lazy mode against the CPU, dropout on the
device's generator, and lazy mode's compilations (numbers that change every step compile
nothing)."""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import hpu_torch
from hpu_torch import core

HPU = torch.device("hpu:0")


class Net(nn.Module):
    """The seeds' MNIST model: 784 -> 128 -> 10, dropout p after the ReLU."""

    def __init__(self, p=0.5):
        super().__init__()
        self.fc1 = nn.Linear(784, 128)
        self.fc2 = nn.Linear(128, 10)
        self.dropout = nn.Dropout(p)

    def forward(self, x):
        x = torch.flatten(x, 1)
        x = self.dropout(F.relu(self.fc1(x)))
        return F.log_softmax(self.fc2(x), dim=1)


def batches(n, size=64, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(size, 1, 28, 28, generator=g), torch.randint(0, 10, (size,), generator=g))
            for _ in range(n)]


def adadelta(params):
    return torch.optim.Adadelta(params, lr=0.1)


def train(device, data, p=0.0, model_seed=0, optim=adadelta, schedule=None, after_step=None):
    """The seeds' loop (by default Adadelta lr 0.1, mark_step around the optimizer's step), the
    scheduler schedule(optimizer) makes stepped after each step; the losses."""
    torch.manual_seed(model_seed)
    model = Net(p).to(device)
    model.train()
    optimizer = optim(model.parameters())
    scheduler = schedule(optimizer) if schedule else None
    losses = []
    for x, y in data:
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad(set_to_none=True)
        loss = F.nll_loss(model(x), y)
        loss.backward()
        core.mark_step()
        optimizer.step()
        core.mark_step()
        if scheduler:
            scheduler.step()
        losses.append(loss.item())
        if after_step:
            after_step()
    return losses


@pytest.fixture(params=["eager", "lazy"])
def mode(request):
    was = core.is_lazy()
    core._set_lazy(request.param == "lazy")
    yield request.param
    core._set_lazy(was)


@pytest.fixture(scope="module")
def cpu_losses():
    return train("cpu", batches(20))


def metric(name, stat):
    return hpu_torch._C._metric_value(name, stat)


def test_mlp_matches_cpu(mode, cpu_losses):
    """20 steps without dropout: the CPU's losses, nothing on the CPU, graphs only when lazy."""
    before = hpu_torch.fallback_counts()
    graphs = metric("lazy_mode", "Graphs")
    losses = train(HPU, batches(20))
    assert hpu_torch.fallback_counts() == before
    torch.testing.assert_close(losses, cpu_losses, rtol=1e-4, atol=1e-5)
    assert losses[-1] < losses[0]
    flushed = metric("lazy_mode", "Graphs") - graphs
    assert (flushed >= 40) if mode == "lazy" else (flushed == 0)


def test_lazy_is_eager_bitwise():
    was = core.is_lazy()
    try:
        core._set_lazy(False)
        eager = train(HPU, batches(4))
        core._set_lazy(True)
        lazy = train(HPU, batches(4))
    finally:
        core._set_lazy(was)
    assert lazy == eager


def test_dropout_masks_per_call_and_seed():
    x = torch.ones(4000, device=HPU)
    before = hpu_torch.fallback_counts()
    torch.manual_seed(7)
    a, b = F.dropout(x, 0.5).cpu(), F.dropout(x, 0.5).cpu()
    torch.manual_seed(7)
    again = F.dropout(x, 0.5).cpu()
    torch.hpu.manual_seed(8)
    other = F.dropout(x, 0.5).cpu()
    assert hpu_torch.fallback_counts() == before
    assert torch.equal(a, again)
    assert not torch.equal(a, b) and not torch.equal(a, other)
    assert set(a.unique().tolist()) == {0.0, 2.0}
    assert 1800 < int((a != 0).sum()) < 2200
    # The backward keeps the gradient where the forward kept the input, scaled alike.
    x.requires_grad_()
    y = nn.Dropout(0.25)(x)
    y.backward(torch.ones_like(y))
    kept = (y != 0).cpu()
    assert torch.equal(x.grad.cpu(), kept.float() / 0.75)
    assert torch.equal(y.detach().cpu(), kept.float() / 0.75)
    # Not training: the input itself.
    assert torch.equal(F.dropout(x, 0.5, training=False).detach().cpu(), torch.ones(4000))


def test_mlp_dropout_per_seed(mode):
    """With dropout: the same seed trains alike, another seed otherwise, every step's mask new."""
    data = batches(5)
    first, same = train(HPU, data, p=0.5), train(HPU, data, p=0.5)
    other = train(HPU, data, p=0.5, model_seed=1)
    assert first == same
    assert first != other
    torch.manual_seed(3)
    layer, ones = nn.Dropout(0.5), torch.ones(64, 128, device=HPU)
    masks = [(layer(ones) != 0).cpu() for _ in range(3)]
    assert not torch.equal(masks[0], masks[1]) and not torch.equal(masks[1], masks[2])


def test_lazy_compiles_once_per_shape():
    """Steps of one shape compile nothing after the first ones; a new batch size compiles anew."""
    was = core.is_lazy()
    core._set_lazy(True)
    try:
        compiled = lambda: metric("graph_compilation", "TotalNumber")  # noqa: E731
        torch.manual_seed(0)
        model = Net(0.5).to(HPU)
        optimizer = torch.optim.Adadelta(model.parameters(), lr=0.1)

        def step(size):
            x, y = batches(1, size)[0]
            optimizer.zero_grad(set_to_none=True)
            loss = F.nll_loss(model(x.to(HPU)), y.to(HPU))
            loss.backward()
            core.mark_step()
            optimizer.step()
            core.mark_step()
            return loss.item()

        for _ in range(3):
            step(64)
        start = compiled()
        for _ in range(3):
            step(64)
        assert compiled() == start
        step(32)
        new_shape = compiled()
        assert new_shape > start
        for _ in range(3):
            step(32)
        assert compiled() == new_shape
        step(64)
        assert compiled() == new_shape
    finally:
        core._set_lazy(was)


def test_lr_schedule_compiles_nothing_new():
    """AdamW under a cosine schedule, lazy: the learning rate and the bias correction change every
    step, and are parameters of the recipes, not part of their keys: after the first two steps
    (the second has the optimizer's state) no step compiles, and the losses are the CPU's."""
    def adamw(params):
        return torch.optim.AdamW(params, lr=0.01, weight_decay=0.1)

    def cosine(optimizer):
        return torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=10)

    data = batches(10)
    cpu = train("cpu", data, optim=adamw, schedule=cosine)
    was = core.is_lazy()
    core._set_lazy(True)
    try:
        compiled = []
        losses = train(HPU, data, optim=adamw, schedule=cosine,
                       after_step=lambda: compiled.append(metric("graph_compilation",
                                                                 "TotalNumber")))
    finally:
        core._set_lazy(was)
    assert compiled[2:] == [compiled[1]] * 8, compiled
    torch.testing.assert_close(losses, cpu, rtol=1e-4, atol=1e-5)


def test_graphs_keep_their_captured_numbers():
    """Two HPU graphs of the same ops with other numbers: the second capture finds the first's
    recipe (no compilation), and each replay computes with the numbers its graph captured."""
    x = torch.full((64,), 1.5, device=HPU)
    # A seed given earlier is written at the next dropout or capture: here, not in the first.
    torch.nn.functional.dropout(x, 0.5)
    core.mark_step()
    compiled = metric("graph_compilation", "TotalNumber")
    graphs = []
    for scale in (0.5, 0.25):
        g = torch.hpu.HPUGraph()
        with torch.hpu.graph(g):
            y = x.mul(scale).add(x, alpha=scale)
        graphs.append((g, scale, y))
    assert metric("graph_compilation", "TotalNumber") == compiled + 1
    for step in range(2):
        new = torch.arange(64.0) + step
        x.copy_(new.to(HPU))
        for g, scale, y in graphs:
            g.replay()
            assert torch.equal(y.cpu(), new * scale + new * scale)


def test_mark_step_and_host_reads_flush():
    was = core.is_lazy()
    core._set_lazy(True)
    try:
        graphs = metric("lazy_mode", "Graphs")
        x = torch.full((8,), 3.0, device=HPU)
        y = (x * 2 + 1).sqrt()
        assert y.sum().item() == pytest.approx(8 * 7 ** 0.5, rel=1e-6)
        assert metric("lazy_mode", "Graphs") > graphs
        z = x * 4
        graphs = metric("lazy_mode", "Graphs")
        core.mark_step()
        assert metric("lazy_mode", "Graphs") == graphs + 1
        core.mark_step()
        assert metric("lazy_mode", "Graphs") == graphs + 1
        assert torch.equal(z.cpu(), torch.full((8,), 12.0))
        assert "12." in str(z)
    finally:
        core._set_lazy(was)
