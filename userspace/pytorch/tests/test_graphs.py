# SPDX-License-Identifier: MIT
"""HPU graphs, metrics, strict fallback and Gaudi's names, on the live device.

Graphs are checked against the same ops run eagerly on the device (bitwise:
libhpu's replays compute what its eager ops compute) and against the CPU.  The
models use the ops the device runs (add, mul, relu forward, fills, copies) and
no gradient accumulation, so that nothing in a capture falls back to the CPU.
"""
import copy
import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch

import hpu_torch
from hpu_torch.hpu import metrics

HPU = torch.device("hpu:0")


def fallbacks(op):
    return hpu_torch.fallback_counts().get(op, 0)


def stat(name, key):
    return dict(metrics.metric_global(name).stats())[key]


def randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


class Net(torch.nn.Module):
    """z = (x * w1) * w2 + b: every operand used once, so that backward accumulates nothing."""

    def __init__(self, n=8):
        super().__init__()
        self.w1 = torch.nn.Parameter(randn(n, seed=1))
        self.w2 = torch.nn.Parameter(randn(n, seed=2))
        self.b = torch.nn.Parameter(randn(n, seed=3))

    def forward(self, x):
        return (x * self.w1) * self.w2 + self.b


def sgd(params, lr):
    """An optimizer step in the device's ops: p <- p + grad * -lr."""
    with torch.no_grad():
        for p in params:
            p.copy_(p + p.grad * -lr)


def grads(module):
    return [p.grad.cpu() for p in module.parameters()]


def test_capture_replay_matches_eager_bitwise():
    x = randn(4, 8, seed=10).to(HPU)
    w = randn(4, 8, seed=11).to(HPU)
    g = torch.hpu.HPUGraph()
    with torch.hpu.graph(g):
        y = torch.relu(x * w + x)
    for seed in (12, 13, 14):
        new = randn(4, 8, seed=seed)
        x.copy_(new.to(HPU))
        g.replay()
        want = torch.relu(x * w + x)
        assert torch.equal(y.cpu(), want.cpu())
        assert torch.allclose(y.cpu(), torch.relu(new * w.cpu() + new))
    info = g.info()
    assert info["num_ops"] == 3 and info["replays"] == 3


def test_capture_begin_end_on_a_side_stream():
    # The slides' example: capture_begin/capture_end on a stream of one's own.
    g = torch.hpu.HPUGraph()
    s = torch.hpu.Stream()
    with torch.hpu.stream(s):
        g.capture_begin()
        a = torch.full((100,), 1.0, device="hpu")
        b = a
        b = b + 1
        g.capture_end()
    assert torch.hpu.current_stream() != s
    g.replay()
    torch.hpu.synchronize()
    assert torch.equal(b.cpu(), torch.full((100,), 2.0))


def test_dropout_masks_differ_per_replay():
    # The device's generator advances its offset in device memory: each replay draws anew.
    # In a process of its own, whose first dropout is the captured one: the generator's
    # state is made and seeded on the device before the capture begins.
    run = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import torch
        import hpu_torch
        x = torch.ones(64, 64, device="hpu")
        g = torch.hpu.HPUGraph()
        with torch.hpu.graph(g):
            y = torch.nn.functional.dropout(x, 0.5, training=True)
        masks = []
        for _ in range(3):
            g.replay()
            masks.append(y.cpu() != 0)
        assert not torch.equal(masks[0], masks[1]) and not torch.equal(masks[1], masks[2])
        assert all(0.4 < m.float().mean().item() < 0.6 for m in masks)
        print("replayed")
    """)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and "replayed" in run.stdout, run.stderr


def test_manual_seed_after_a_capture_holds_for_its_replays():
    # As CUDA graphs: a replay draws from the generator's state at the replay (advanced by
    # each draw), so a seed given after the capture repeats the replays' masks.
    x = torch.ones(256, device=HPU)
    g = torch.hpu.HPUGraph()
    with torch.hpu.graph(g):
        y = torch.nn.functional.dropout(x, 0.5, training=True)

    def draws(seed):
        torch.hpu.manual_seed(seed)
        masks = []
        for _ in range(2):
            g.replay()
            masks.append(y.cpu() != 0)
        return masks

    a, b, c = draws(7), draws(7), draws(8)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not torch.equal(a[0], a[1]) and not torch.equal(a[0], c[0])
    # The first draw after a seed, replayed or eager, is the same mask.
    torch.hpu.manual_seed(7)
    assert torch.equal(torch.nn.functional.dropout(x, 0.5, training=True).cpu() != 0, a[0])
    # Seeding a device that captures would record the seed into the graph: refused.
    with pytest.raises(RuntimeError, match="manual_seed of hpu:0 while it captures"):
        with torch.hpu.graph(torch.hpu.HPUGraph()):
            torch.hpu.manual_seed(1)


def test_captured_training_step_with_backward():
    # Forward, backward (run by the autograd engine's thread) and an optimizer step in one
    # graph; replays with new data copied in must train as eager steps do.
    eager, graphed = Net().to(HPU), Net().to(HPU)
    static_x = torch.zeros(8, device=HPU)
    static_g = torch.ones(8, device=HPU)
    before = stat("hpu_graph", "CapturedOps")
    g = torch.hpu.HPUGraph()
    with torch.hpu.graph(g):
        static_z = graphed(static_x)
        static_z.backward(static_g)
        sgd(graphed.parameters(), 0.1)
    # Forward 3 ops, backward at least 3 more, the step 3 per parameter.
    assert stat("hpu_graph", "CapturedOps") - before >= 3 + 3 + 9
    for p in graphed.parameters():
        assert p.grad is not None
    for step in range(4):
        x = randn(8, seed=20 + step)
        static_x.copy_(x.to(HPU))
        g.replay()
        for p in eager.parameters():
            p.grad = None
        z = eager(x.to(HPU))
        z.backward(torch.ones(8, device=HPU))
        sgd(eager.parameters(), 0.1)
        assert torch.equal(static_z.cpu(), z.cpu()), f"step {step}"
        assert all(torch.equal(a, b) for a, b in zip(grads(graphed), grads(eager)))
        for a, b in zip(graphed.parameters(), eager.parameters()):
            assert torch.equal(a.detach().cpu(), b.detach().cpu()), f"step {step}"


def test_captured_torch_optimizer_step():
    net = Net().to(HPU)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    net(torch.ones(8, device=HPU)).backward(torch.ones(8, device=HPU))
    before = hpu_torch.fallback_counts()
    opt.step()
    fell_back = sorted(op for op, n in hpu_torch.fallback_counts().items()
                       if n != before.get(op, 0))
    assert not fell_back, f"torch.optim.SGD's step fell back to the CPU: {fell_back}"
    eager = copy.deepcopy(net)
    eopt = torch.optim.SGD(eager.parameters(), lr=0.1)
    static_x = torch.zeros(8, device=HPU)
    g = torch.hpu.HPUGraph()
    opt.zero_grad(set_to_none=True)
    with torch.hpu.graph(g):
        net(static_x).backward(torch.ones(8, device=HPU))
        opt.step()
    for step in range(3):
        x = randn(8, seed=30 + step).to(HPU)
        static_x.copy_(x)
        g.replay()
        eopt.zero_grad(set_to_none=True)
        eager(x).backward(torch.ones(8, device=HPU))
        eopt.step()
    for a, b in zip(net.parameters(), eager.parameters()):
        assert torch.equal(a.detach().cpu(), b.detach().cpu())


def test_example_capture_replay_steps_as_eager():
    # examples/mnist.py's capture-replay loop (forward, backward and Adadelta's step in one
    # graph, warmed up on random data first) takes the eager loop's steps, loss for loss, on
    # the same batches (dropout off: the same computation).
    path = os.path.join(os.path.dirname(__file__), "..", "examples", "mnist.py")
    spec = importlib.util.spec_from_file_location("mnist_example", path)
    mnist = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mnist)
    images, labels = mnist.load("test")
    losses = {}
    for mode in ("no_graphs", "capture_replay"):
        torch.manual_seed(0)
        model = mnist.Net().to(HPU)
        model.dropout.p = 0.0
        optimizer = torch.optim.Adadelta(model.parameters(), lr=0.1)
        step = mnist.make_step(mode, model, optimizer, 64)
        losses[mode] = [step(x, y).item() for x, y in mnist.batches(images, labels, 64, 5)]
    assert losses["capture_replay"] == pytest.approx(losses["no_graphs"], rel=1e-6, abs=0), losses


def test_make_graphed_callables_against_eager():
    eager = Net().to(HPU)
    graphed = torch.hpu.make_graphed_callables(copy.deepcopy(eager),
                                               (torch.zeros(8, device=HPU, requires_grad=True),))
    for step in range(3):
        x = randn(8, seed=40 + step)
        xs = [x.to(HPU).requires_grad_(), x.to(HPU).requires_grad_()]
        outs = []
        for model, xi in zip((graphed, eager), xs):
            for p in model.parameters():
                p.grad = None
            out = model(xi)
            out.backward(randn(8, seed=50 + step).to(HPU))
            outs.append(out.detach().cpu())
        assert torch.equal(outs[0], outs[1]), f"step {step}"
        assert torch.equal(xs[0].grad.cpu(), xs[1].grad.cpu())
        assert all(torch.equal(a, b) for a, b in zip(grads(graphed), grads(eager)))


def test_make_graphed_callables_function_and_wrong_input():
    fn = torch.hpu.make_graphed_callables(lambda a, b: torch.relu(a * b),
                                          (torch.zeros(3, 5, device=HPU),
                                           torch.zeros(3, 5, device=HPU)))
    a, b = randn(3, 5, seed=60), randn(3, 5, seed=61)
    assert torch.equal(fn(a.to(HPU), b.to(HPU)).cpu(), torch.relu(a * b))
    with pytest.raises(ValueError, match=r"input 1 .* \(4, 5\).*static input is .* \(3, 5\)"):
        fn(a.to(HPU), torch.zeros(4, 5, device=HPU))
    with pytest.raises(TypeError, match="tensor arguments only"):
        torch.hpu.make_graphed_callables(lambda a, k: a * k, (torch.zeros(2, device=HPU), 2))


class Scale(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(randn(4, seed=70))

    def forward(self, x, scale=1.0, shift=None):
        y = x * self.w * scale
        return y if shift is None else y + shift


def test_module_cacher_graph_per_signature_and_lru():
    eager = Scale().to(HPU)
    model = torch.hpu.ModuleCacher(max_graphs=2)(model=copy.deepcopy(eager), inplace=True)
    stats = model.forward.stats
    calls = [((2, 4), 1.0), ((3, 4), 1.0), ((2, 4), 1.0), ((2, 4), 2.0), ((3, 4), 1.0),
             ((2, 4), 2.0)]
    captures = [1, 2, 2, 3, 4, 4]
    with torch.no_grad():
        for i, ((shape, scale), want) in enumerate(zip(calls, captures)):
            x = randn(*shape, seed=80 + i).to(HPU)
            shift = torch.ones(shape[1], device=HPU)
            got = model(x, scale=scale, shift=shift)
            assert torch.equal(got.cpu(), eager(x, scale=scale, shift=shift).cpu()), f"call {i}"
            assert stats["captures"] == want, f"call {i}"
            assert len(model.forward.cache) <= 2
    # (3, 4) at 1.0 was the least recently used when (2, 4) at 2.0 came: captured again.
    assert stats["evictions"] == 2


def test_module_cacher_training_matches_eager():
    eager = Net().to(HPU)
    model = torch.hpu.ModuleCacher(max_graphs=4)(model=copy.deepcopy(eager), inplace=True)
    model.train()
    for step in range(3):
        x = randn(8, seed=90 + step).to(HPU)
        outs = []
        for m in (model, eager):
            for p in m.parameters():
                p.grad = None
            out = m(x)
            out.backward(torch.ones(8, device=HPU))
            outs.append(out.detach().cpu())
        assert torch.equal(outs[0], outs[1])
        assert all(torch.equal(a, b) for a, b in zip(grads(model), grads(eager)))
    assert model.forward.stats["captures"] == 1
    assert torch.hpu.wrap_in_hpu_graph(Scale().to(HPU)).forward.cache is not None


class MLP(torch.nn.Module):
    """Linear, relu, linear, sized in whole granules of libhpu's allocator (512 bytes)."""

    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(128, 256)
        self.fc2 = torch.nn.Linear(256, 128)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def released(model):
    """Device memory libhpu gives back when model's cached graphs go."""
    torch.hpu.synchronize()
    before = hpu_torch._C._device_allocated(0)
    model.forward.cache.clear()
    torch.hpu.synchronize()
    return before - hpu_torch._C._device_allocated(0)


@pytest.mark.parametrize("training", [False, True])
def test_module_cacher_memory_budget(training):
    # libhpu's policy: after each call the least recently used graphs go while their memory
    # is over the budget, never the call's own.  The bytes counted are those the graphs pin:
    # dropping them gives that much back (within the allocator's 512-byte granules).
    torch.manual_seed(0)
    eager = MLP().to(HPU)
    sizes = (64, 32, 16)

    def run(model, rows):
        x = randn(rows, 128, seed=rows).to(HPU)
        with torch.set_grad_enabled(training):
            out = model(x)
            if training:
                out.sum().backward()
            want = eager(x)
        assert torch.allclose(out.detach().cpu(), want.detach().cpu(), atol=1e-5)

    unbounded = torch.hpu.ModuleCacher(max_graphs=8, max_memory=0)(copy.deepcopy(eager))
    for rows in sizes:
        run(unbounded, rows)
    cost = {key[-1][0][1][0]: fn.bytes for key, fn in unbounded.forward.cache.items()}
    stats, memory = unbounded.forward.stats, unbounded.forward.memory
    assert memory["bytes"] == sum(cost.values()) and stats["evictions"] == 0
    for rows in sizes:
        # At least the static input and output, and in training the activations saved for
        # the backward graph and the static gradients.
        assert cost[rows] >= rows * (128 + 128) * 4 * (3 if training else 1)
    assert abs(released(unbounded) - memory["bytes"]) <= 512 * 16

    budget = cost[64] + cost[32]
    model = torch.hpu.ModuleCacher(max_graphs=8, max_memory=budget)(copy.deepcopy(eager))
    stats, memory = model.forward.stats, model.forward.memory
    calls = [(64, 0, [64]), (32, 0, [64, 32]), (16, 1, [32, 16]), (32, 1, [16, 32]),
             (64, 2, [32, 64])]
    for rows, evictions, kept in calls:
        run(model, rows)
        assert stats["evictions"] == evictions, (rows, stats)
        assert [key[-1][0][1][0] for key in model.forward.cache] == kept
        assert memory == {"graphs": len(kept), "bytes": sum(cost[k] for k in kept)}
        assert memory["bytes"] <= budget
    assert stats == {"calls": 5, "captures": 4, "evictions": 2}
    assert abs(released(model) - memory["bytes"]) <= 512 * 16

    # A graph larger than the budget is kept, alone.
    model = torch.hpu.ModuleCacher(max_memory=cost[16])(copy.deepcopy(eager))
    for rows in (16, 64):
        run(model, rows)
    assert model.forward.memory == {"graphs": 1, "bytes": cost[64]}


def test_module_cacher_budget_from_the_environment(monkeypatch):
    monkeypatch.setenv("PT_HPU_MODULE_CACHER_MAX_MB", "1.5")
    assert torch.hpu.ModuleCacher().max_memory == 3 * 2**19
    assert torch.hpu.ModuleCacher(max_memory=4096).max_memory == 4096
    model = torch.hpu.wrap_in_hpu_graph(Scale().to(HPU))
    with torch.no_grad():
        model(torch.ones(4, device=HPU))
    assert model.forward.memory["bytes"] > 0
    for bad in ("lots", "-1", "nan"):
        monkeypatch.setenv("PT_HPU_MODULE_CACHER_MAX_MB", bad)
        with pytest.raises(ValueError, match="PT_HPU_MODULE_CACHER_MAX_MB"):
            torch.hpu.ModuleCacher()
    monkeypatch.delenv("PT_HPU_MODULE_CACHER_MAX_MB")
    assert torch.hpu.ModuleCacher().max_memory == 0


def test_host_work_during_a_capture_is_refused():
    x = torch.ones(4, device=HPU)
    g = torch.hpu.HPUGraph()
    with pytest.raises(RuntimeError, match=r"host read .* captures an HPU graph"):
        with torch.hpu.graph(g):
            (x * 2).cpu()
    with pytest.raises(RuntimeError, match=r"copy from the host .* captures an HPU graph"):
        with torch.hpu.graph(g):
            x.copy_(torch.zeros(4))
    before = fallbacks("aten::digamma")
    with pytest.raises(RuntimeError, match=r"aten::digamma .* CPU fallback while stream \d+ "
                                           r"of hpu:0 captures an HPU graph"):
        with torch.hpu.graph(g):
            torch.digamma(x)
    assert fallbacks("aten::digamma") == before
    # Each failed capture was dropped: the graph and the device work on.
    with torch.hpu.graph(g):
        y = x * 3
    g.replay()
    assert torch.equal(y.cpu(), torch.full((4,), 3.0))
    assert torch.equal(torch.digamma(x).cpu(), torch.digamma(torch.ones(4)))


def test_graph_misuse():
    g = torch.hpu.HPUGraph()
    with pytest.raises(RuntimeError, match="never captured"):
        g.replay()
    other = torch.hpu.HPUGraph()
    with torch.hpu.graph(g):
        with pytest.raises(RuntimeError, match="captures a graph already"):
            other.capture_begin()
        y = torch.ones(2, device=HPU) + 1
    with pytest.raises(RuntimeError, match="captured already"):
        g.capture_begin()
    g.replay()
    assert torch.equal(y.cpu(), torch.full((2,), 2.0))


def test_strict_fallback(monkeypatch):
    x = torch.ones(3, device=HPU)
    before = fallbacks("aten::digamma")
    monkeypatch.setenv("PT_HPU_FALLBACK_STRICT", "1")
    with pytest.raises(RuntimeError, match=r"aten::digamma .*self=HPUFloatType.* strict mode"):
        torch.digamma(x)
    assert fallbacks("aten::digamma") == before
    monkeypatch.delenv("PT_HPU_FALLBACK_STRICT")
    torch.digamma(x)
    assert fallbacks("aten::digamma") == before + 1
    assert dict(metrics.metric_global("cpu_fallback").stats())["aten::digamma"] == before + 1


def test_metrics_count_compilations():
    gc = metrics.metric_global("graph_compilation")
    names = [k for k, _ in gc.stats()]
    assert names[:3] == ["TotalNumber", "TotalTime", "AvgTime"]
    with pytest.raises(RuntimeError, match="no metric"):
        metrics.metric_global("no_such_metric")

    def capture(x):
        g = torch.hpu.HPUGraph()
        with torch.hpu.graph(g):
            y = x * x + x
        return g, y

    # Shapes no other test captured: one compilation each, none for the same shape again.  The
    # inputs are made first: in lazy mode their fills compile graphs of their own.
    sizes = [17, 18, 19]
    xs = [torch.ones(n, 3, device=HPU) for n in sizes]
    torch.hpu.synchronize()
    with metrics.metric_localcontext("graph_compilation") as local:
        start = stat("graph_compilation", "TotalNumber")
        graphs = [capture(x) for x in xs]
        assert stat("graph_compilation", "TotalNumber") == start + len(sizes)
        graphs.append(capture(xs[0]))
        for g, _ in graphs:
            g.replay()
        assert stat("graph_compilation", "TotalNumber") == start + len(sizes)
    assert dict(local.stats())["TotalNumber"] == len(sizes)
    assert stat("recipe_cache", "Hits") >= 1
    assert stat("hpu_graph", "Replays") >= len(graphs)


def test_runner_runs_a_gaudi_script(tmp_path):
    # Gaudi's names in a second process, through the runner, with Gaudi's variables.
    script = tmp_path / "gaudi.py"
    script.write_text(textwrap.dedent("""
        import sys
        import torch
        import habana_frameworks.torch as ht
        import habana_frameworks.torch.core as htcore
        from habana_frameworks.torch.hpu.metrics import metric_global

        g = ht.hpu.HPUGraph()
        s = ht.hpu.Stream()
        with ht.hpu.stream(s):
            g.capture_begin()
            a = torch.full((100,), 1.0, device="hpu")
            b = a + 1
            g.capture_end()
        g.replay()
        ht.hpu.synchronize()
        htcore.mark_step()
        assert htcore.hpu.HPUGraph is ht.hpu.HPUGraph is torch.hpu.HPUGraph
        torch.digamma(b)
        print("args", sys.argv[1:], "sum", b.sum().item())
        print("graph_compilation:", metric_global("graph_compilation").stats())
    """))
    cache = tmp_path / "cache"
    env = dict(os.environ, PT_HPU_METRICS_FILE=str(tmp_path / "metrics.json"),
               PT_HPU_RECIPE_CACHE_CONFIG=f"{cache},true,64", LOG_LEVEL_PT_FALLBACK="1")
    run = subprocess.run([sys.executable, "-m", "hpu_torch.run", str(script), "one", "--two"],
                         env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "args ['one', '--two'] sum 200.0" in run.stdout
    assert "graph_compilation: [['TotalNumber', " in run.stdout
    assert "CPU fallback digamma : self=HPUFloatType" in run.stderr
    dumped = json.loads((tmp_path / "metrics.json").read_text())
    assert dumped["graph_compilation"]["TotalNumber"] >= 1
    assert dumped["cpu_fallback"]["aten::digamma"] == 1
    assert any(cache.iterdir()), "no recipe written to the disk cache"
    # Nothing is installed under Gaudi's name: this process cannot import it.
    with pytest.raises(ImportError):
        import habana_frameworks.torch  # noqa: F401
