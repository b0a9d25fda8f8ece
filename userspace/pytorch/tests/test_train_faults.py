# SPDX-License-Identifier: MIT
"""Training on hpu survives faults injected into another process's context (issue 25).

The seeds' MLP (test_train's Net, dropout on) trains in this process, on libhpu's user queues,
while tests/guest/hpu_guilty takes one fault of each kind below, each in a new file of its own
and aimed at that file's context id: an engine hang (the job timeout, a queue and an engine
reset), an MMU fault, a DMA error, a wrong completion, a lost interrupt, and two device resets
(an engine hang whose engine reset fails; a lost heartbeat), through which the trainer's user
queues are kept and take its doorbell stores.  The trainer steps until the guilty has ended,
then once more; the same number of steps undisturbed, in this process, must end with bitwise the
same weights.
Fault injection is root's (debugfs): tests/guest/run-faults.sh (`make test-faults`) runs this
file as root, with the module loaded with a 2 s job timeout and a 50 ms heartbeat;
run-suites.sh's unprivileged pass leaves it out.
"""
import faulthandler
import os
import subprocess

import pytest
import torch
import torch.nn.functional as F

from hpu_torch import core
from test_train import HPU, Net

GUILTY = os.path.join(os.environ.get("HPU_TOP", "."), "build/tests/guest/hpu_guilty")
KINDS = ["engine_hang", "mmu_fault", "dma_error", "bad_completion", "lost_irq", "reset_fail",
         "heartbeat_loss"]
MAX_STEPS = 2000

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0, reason="fault injection writes debugfs, root's: tests/guest/run-faults.sh "
    "runs this as root")


def data(seed=0):
    """Batches of the seeds' shape, the same sequence for every run."""
    g = torch.Generator().manual_seed(seed)
    while True:
        yield torch.randn(64, 1, 28, 28, generator=g), torch.randint(0, 10, (64,), generator=g)


def train(steps, before_step=lambda i: True):
    """Steps while before_step(i) says so (steps: how many at most); the weights and the steps."""
    torch.manual_seed(0)
    model = Net(0.5).to(HPU)
    optimizer = torch.optim.Adadelta(model.parameters(), lr=0.1)
    done = 0
    for i, (x, y) in zip(range(steps), data()):
        if not before_step(i):
            break
        optimizer.zero_grad(set_to_none=True)
        F.nll_loss(model(x.to(HPU)), y.to(HPU)).backward()
        core.mark_step()
        optimizer.step()
        core.mark_step()
        # Step by step, as the device goes: the faults land while the trainer has work queued.
        torch.hpu.synchronize()
        done += 1
    return [p.detach().cpu() for p in model.parameters()], done


@pytest.mark.parametrize("lazy", [False, True], ids=["eager", "lazy"])
def test_training_survives_faults_in_another_context(lazy):
    assert os.access(GUILTY, os.X_OK), f"{GUILTY} is not built (make guest-tests)"
    name = f"train_fault_pytorch_{'lazy' if lazy else 'eager'}"
    was = core.is_lazy()
    core._set_lazy(lazy)
    guilty, ended = [], []

    def before_step(i):
        """The guilty starts after the first step; the last step is the first after it ended."""
        if i == 1:
            # Its input ends at once: it takes one fault of each kind, then exits.
            guilty.append(subprocess.Popen([GUILTY, "-n", str(len(KINDS)), *KINDS],
                                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                           text=True))
        if guilty and guilty[0].poll() is not None:
            ended.append(i)
        return len(ended) < 2

    # A trainer that waits forever for a lost job ends the process with its stack, not the run.
    faulthandler.dump_traceback_later(600, exit=True)
    try:
        under, steps = train(MAX_STEPS, before_step)
        out = guilty[0].communicate(timeout=300)[0] if guilty else ""
        alone, alone_steps = train(steps)
    finally:
        faulthandler.cancel_dump_traceback_later()
        core._set_lazy(was)
    equal = alone_steps == steps and all(
        torch.equal(a.view(torch.int32), b.view(torch.int32)) for a, b in zip(under, alone))
    # "done faults F failed X resets QUEUE ENGINE DEVICE status S"
    done = (out.splitlines() or [""])[-1].split()
    resets = sum(int(n) for n in done[6:9]) if len(done) == 11 else -1
    print(out, end="")
    print(f"BENCH {name}_steps {steps}\nBENCH {name}_resets {resets}\n"
          f"BENCH {name}_weights_equal {int(equal)}")
    assert guilty and guilty[0].returncode == 0, f"the guilty failed:\n{out}"
    assert done[:3] == ["done", "faults", str(len(KINDS))], out
    assert ended and ended[0] >= 2, "the trainer took no step while the faults ran"
    assert equal, "the weights differ from those of the undisturbed run"
