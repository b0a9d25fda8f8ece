# SPDX-License-Identifier: MIT
"""examples/mnist.py's five training loops train: a few steps each on Fashion-MNIST, the loss
falls and nothing falls back to the CPU."""
import importlib.util
import os

import pytest
import torch
import torch.nn.functional as F

import hpu_torch
from hpu_torch import core

STEPS = 8
BATCH = 64


@pytest.fixture(scope="module")
def mnist():
    path = os.path.join(os.path.dirname(__file__), "..", "examples", "mnist.py")
    spec = importlib.util.spec_from_file_location("mnist_example", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def test_split(mnist):
    return mnist.load("test")  # the smaller file


@pytest.fixture(scope="module")
def data(test_split):
    images, labels = test_split
    return images[:BATCH], labels[:BATCH]


@pytest.mark.parametrize("mode", ["no_graphs", "eager", "graphed_callables", "capture_replay",
                                  "module_cacher"])
def test_example_trains(mnist, data, mode):
    """The same batch STEPS times: its loss (dropout off, for a loss that can only fall)
    ends lower than it began."""
    was = core.is_lazy()
    try:
        torch.manual_seed(0)
        model = mnist.Net().to("hpu")
        model.dropout.p = 0.0
        optimizer = torch.optim.Adadelta(model.parameters(), lr=0.1)
        before = hpu_torch.fallback_counts()
        step = mnist.make_step(mode, model, optimizer, BATCH)
        x, y = data
        losses = [step(x, y).item() for _ in range(STEPS)]
        assert hpu_torch.fallback_counts() == before
        with torch.no_grad():
            after = F.nll_loss(mnist.Net.forward(model, x.to("hpu")), y.to("hpu")).item()
        assert after < losses[0] * 0.9, (mode, losses, after)
    finally:
        core._set_lazy(was)


@pytest.mark.parametrize("mode", ["no_graphs", "capture_replay"])
def test_pinned_batches_train_as_pageable(mnist, test_split, mode):
    """Batches in pinned memory, copied with non_blocking=True (--pin-memory): the same losses,
    bitwise, as from pageable memory, each batch a different one (a copy not ordered before
    the step's work would show)."""
    def losses(pin):
        torch.manual_seed(0)
        model = mnist.Net().to("hpu")
        optimizer = torch.optim.Adadelta(model.parameters(), lr=0.1)
        step = mnist.make_step(mode, model, optimizer, BATCH, "hpu", pin)
        # Clones, not item(): nothing waits for the device between the steps.
        out = [step(x, y).clone() for x, y in mnist.batches(*test_split, BATCH, 4, pin)]
        return [loss.item() for loss in out]

    assert losses(True) == losses(False)
