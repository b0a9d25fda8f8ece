# SPDX-License-Identifier: MIT
"""examples/resnet.py and examples/gpt.py train on hpu: 20 fp32 steps in lazy mode and as a
replayed HPU graph give the CPU's losses from the same initial weights (built on the CPU from
seed 0, copied to hpu), nothing falling back to the CPU; their entry points train and print the
CPU's test accuracy and perplexity; under hmp O1 (bf16) they converge as in fp32.

The CPU's figures are recorded in models_cpu.json by running this file on the host:

    PYTHONPATH=build/userspace/pytorch /usr/bin/python3 userspace/pytorch/tests/test_models.py

In the guest, whose emulated CPU runs PyTorch's CPU kernels some 50 times slower than the host,
they would take minutes (20 steps of the ResNet: 74 s, of the GPT: 46 s; on hpu 1.7 s and
2.4 s).  test_reference_is_current checks that the recording is of these models, data and
steps: the sums of their initial weights and batches and the examples' arguments."""
import contextlib
import copy
import io
import json
import os
import re
import sys
from unittest import mock

import pytest
import torch

import hpu_torch
from hpu_torch.hpex import hmp

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
import gpt  # noqa: E402
import mnist  # noqa: E402
import resnet  # noqa: E402

REFERENCE = os.path.join(os.path.dirname(__file__), "models_cpu.json")
STEPS = 20
MODES = ["no_graphs", "capture_replay"]
TRAIN, _, CHARS = gpt.load()


def _resnet():
    return resnet.ResNet(width=8), resnet.optimizer, mnist.images


def _gpt():
    model = gpt.GPT(len(CHARS), block=32, dim=32, heads=2)
    return model, gpt.optimizer, model.random_batch


MODELS = {"resnet": _resnet, "gpt": _gpt}

# The examples' entry points: a few steps each (the ResNet on the test split, whose file reads
# in a second, the training file's in seconds), and the figure each prints.
EXAMPLES = {
    "resnet": (resnet.main, ["--mode", "capture_replay", "--steps", "12", "--batch-size", "16",
                             "--width", "8", "--test-size", "200"],
               r"test accuracy (\S+) \(200 images\)"),
    "gpt": (gpt.main, ["--steps", "12", "--batch-size", "8", "--block", "32", "--dim", "32",
                       "--heads", "2"], r"held-out perplexity (\S+) "),
}

# fp32 on hpu against the CPU: the device sums its GEMMs and convolutions in another order
# than the CPU's kernels; 20 steps of the ResNet (batch norm over 16 images) amplify that to
# 2.9e-4 of the loss at worst, of the GPT to 1.7e-7 (measured, unfused attention).
TOLERANCE = {"resnet": dict(rtol=2e-3, atol=1e-4), "gpt": dict(rtol=2e-4, atol=1e-5)}


def batches(name, test_split):
    """The 20 batches of name's model: Fashion-MNIST's first test images, GPL-3 windows."""
    if name == "resnet":
        return list(mnist.batches(*test_split, 16, STEPS))
    return list(gpt.batches(TRAIN, 8, 32, STEPS))


def train(name, device, mode, data):
    """The losses of name's model built on the CPU from seed 0 and trained on device by
    examples/mnist.py's step of mode, one per batch of data."""
    torch.manual_seed(0)
    model, make_optimizer, sample = MODELS[name]()
    model = copy.deepcopy(model).to(device)
    step = mnist.make_step(mode, model, make_optimizer(model), len(data[0][0]), device,
                           sample=sample)
    # Clones, not item(): nothing waits for the device between the steps; a replay's loss
    # is one tensor, overwritten by the next.
    return [loss.item() for loss in [step(x, y).clone() for x, y in data]]


def example_figure(name, device, test_split):
    """The figure name's entry point prints on device, mnist.load() giving the test split."""
    main, argv, pattern = EXAMPLES[name]
    out = io.StringIO()
    with mock.patch.object(mnist, "load", lambda split: test_split), \
            contextlib.redirect_stdout(out):
        main(argv + ["--device", device])
    figure = re.search(pattern, out.getvalue())
    assert figure, out.getvalue()
    return float(figure.group(1))


def fingerprint(name, test_split):
    """What the recording depends on: the initial weights, the batches, the example's
    arguments."""
    torch.manual_seed(0)
    tensors = list(MODELS[name]()[0].state_dict().values())
    tensors += [t for batch in batches(name, test_split) for t in batch]
    return [sum(t.double().sum().item() for t in tensors), " ".join(EXAMPLES[name][1])]


@pytest.fixture(scope="module")
def test_split():
    return mnist.load("test")


@pytest.fixture(scope="module")
def cpu():
    with open(REFERENCE) as f:
        return json.load(f)


@pytest.mark.parametrize("name", list(MODELS))
def test_reference_is_current(name, test_split, cpu):
    value, argv = fingerprint(name, test_split)
    assert cpu[name]["fingerprint"][0] == pytest.approx(value, rel=1e-9), "record again"
    assert cpu[name]["fingerprint"][1] == argv, "record again"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(MODELS))
def test_fp32_losses_match_cpu(name, mode, test_split, cpu):
    before = hpu_torch.fallback_counts()
    losses = train(name, "hpu", mode, batches(name, test_split))
    assert hpu_torch.fallback_counts() == before
    torch.testing.assert_close(losses, cpu[name]["losses"], **TOLERANCE[name])
    assert losses[-1] < losses[0] * 0.9, losses


def test_resnet_example_prints_accuracy(test_split, cpu):
    """12 steps as a replayed HPU graph: the CPU's accuracy within 2 images of 200 (a
    prediction whose two best classes are closer than the device's rounding may differ), above
    chance.  The accuracy is batch norm's running statistics', which the capture's warm-up
    must leave as they were."""
    accuracy = example_figure("resnet", "hpu", test_split)
    assert abs(accuracy - cpu["resnet"]["figure"]) <= 2 / 200 and accuracy > 0.1


def test_gpt_example_prints_perplexity(test_split, cpu):
    """12 steps in lazy mode: the CPU's perplexity within 0.1%, below a uniform guess's (the
    vocabulary's size)."""
    perplexity = example_figure("gpt", "hpu", test_split)
    assert perplexity == pytest.approx(cpu["gpt"]["figure"], rel=1e-3)
    assert 1 < perplexity < len(CHARS)


@pytest.fixture
def hmp_o1():
    """hmp O1 for one test; no casts after it."""
    hmp.convert(opt_level="O1")
    yield
    hmp._reset()


# bf16 under hmp O1 (GEMMs and convolutions in bf16, accumulated in fp32) against the CPU's fp32
# run of the same 20 steps: the mean of the last 5 losses within BF16_MARGIN of fp32's.
BF16_MARGIN = {"resnet": 0.05, "gpt": 0.05}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(MODELS))
def test_bf16_o1_converges_as_fp32(name, mode, test_split, cpu, hmp_o1):
    losses = train(name, "hpu", mode, batches(name, test_split))
    tail, fp32_tail = sum(losses[-5:]) / 5, sum(cpu[name]["losses"][-5:]) / 5
    assert abs(tail - fp32_tail) <= BF16_MARGIN[name] * fp32_tail, (losses, cpu[name]["losses"])
    assert losses[-1] < losses[0] * 0.9, losses


def record():
    """models_cpu.json from this machine's CPU."""
    test_split = mnist.load("test")
    reference = {name: {"fingerprint": fingerprint(name, test_split),
                        "losses": train(name, "cpu", "no_graphs", batches(name, test_split)),
                        "figure": example_figure(name, "cpu", test_split)}
                 for name in MODELS}
    with open(REFERENCE, "w") as f:
        json.dump(reference, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    record()
