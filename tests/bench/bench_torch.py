# SPDX-License-Identifier: MIT
"""bench-torch: the seeds' table for our stack through PyTorch (hpu_torch), in one process.

STEPS steps (argv[1], default 100) of userspace/pytorch/examples/mnist.py's training in each of
its five modes (no_graphs and capture_replay also on batches in pinned memory, copied with
non_blocking=True: <mode>_pinned), then the same training by PyTorch on this machine's CPU,
each step synchronized so that it can be timed.  Per mode (BENCH torch_mnist_<mode>_...):
  step_ms        median time of a step, Python's first call to done
  host_ms        median host time of a step: Python's first call until the step is enqueued
                 (its calls return without waiting for the device)
  first_step_ms  the mode's setup (warm-ups, captures) and first step, to done
  compiles       libhpu's graph compilations over the mode's steps (graph_compilation)
  accuracy       test accuracy after the steps (fraction)
and the issue's comparisons, measured in this run:
  torch_mnist_host_ratio          no_graphs host time / capture_replay host time
  torch_mnist_step_ratio          no_graphs step time / capture_replay step time
  torch_mnist_pinned_host_ratio   the same as host_ratio, both on pinned batches
  torch_mnist_graphed_host_ratio  no_graphs host time / graphed_callables host time
  torch_vs_cpu_step_ratio         the CPU's step time / capture_replay step time
  torch_eager_op_overhead         host time of a small eager op (add_ of 64 floats) on hpu /
                                  on the CPU backend, the median of 7 paired rounds
Medians, since the emulator's host is shared and its load changes over seconds.  Eager mode
runs last: it turns lazy mode off for the process.
"""
import importlib.util
import os
import statistics
import sys
import time

import torch

import hpu_torch

TOP = os.environ.get("HPU_TOP") or os.path.join(os.path.dirname(__file__), "..", "..")
STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 100
BATCH = 200
OPS = 2000
PINNED = ("no_graphs", "capture_replay")  # also run on pinned batches


def example():
    path = os.path.join(TOP, "userspace", "pytorch", "examples", "mnist.py")
    spec = importlib.util.spec_from_file_location("mnist_example", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def compiles():
    return hpu_torch._C._metric_value("graph_compilation", "TotalNumber")


def sync(device):
    if device == "hpu":
        torch.hpu.synchronize()


def run(mnist, mode, data, test, device="hpu", pin=False):
    """One mode's figures: step and host medians (ms), first step (ms), compiles, accuracy.
    pin: batches in pinned memory (pinned before the step's clock starts, as a DataLoader's
    pinning thread does), copied with non_blocking=True."""
    torch.manual_seed(0)
    model = mnist.Net().to(device)
    optimizer = torch.optim.Adadelta(model.parameters(), lr=0.1)
    before = compiles()
    start = time.perf_counter()
    step = mnist.make_step(mode, model, optimizer, BATCH, device, pin)
    steps, hosts, first = [], [], None
    for data_b, target_b in mnist.batches(*data, BATCH, STEPS, pin):
        t0 = time.perf_counter()
        step(data_b, target_b)
        t1 = time.perf_counter()
        sync(device)
        t2 = time.perf_counter()
        if first is None:
            first = t2 - start
        else:
            steps.append(t2 - t0)
            hosts.append(t1 - t0)
    done = compiles() - before
    return (statistics.median(steps) * 1e3, statistics.median(hosts) * 1e3, first * 1e3, done,
            mnist.accuracy(model, *test, device))


def op_host_us():
    """Host times of one small eager add_ (µs) on hpu and on the CPU, and their ratio: medians
    over 7 rounds of OPS calls, each round timing both back to back so that the host's load
    changes over seconds touch both alike."""
    ops = {d: (torch.ones(64, device=d), torch.ones(64, device=d)) for d in ("hpu", "cpu")}
    times = {"hpu": [], "cpu": []}
    for _ in range(7):
        for device, (a, b) in ops.items():
            sync(device)
            t0 = time.perf_counter()
            for _ in range(OPS):
                a.add_(b)
            times[device].append((time.perf_counter() - t0) / OPS * 1e6)
            sync(device)
    ratio = statistics.median(h / c for h, c in zip(times["hpu"], times["cpu"]))
    return statistics.median(times["hpu"]), statistics.median(times["cpu"]), ratio


def main():
    mnist = example()
    data, test = mnist.load("train"), mnist.load("test")
    order = ("no_graphs", "graphed_callables", "capture_replay", "module_cacher")
    got = {mode: run(mnist, mode, data, test) for mode in order}
    for mode in PINNED:
        got[mode + "_pinned"] = run(mnist, mode, data, test, pin=True)
    got["eager"] = run(mnist, "eager", data, test)
    got["cpu"] = run(mnist, "no_graphs", data, test, "cpu")
    op_hpu, op_cpu, op_ratio = op_host_us()

    rows = mnist.MODES + tuple(m + "_pinned" for m in PINNED) + ("cpu",)
    print(f"{STEPS} steps of batch {BATCH}, each synchronized; medians")
    print(f"{'mode':<22} {'step ms':>9} {'host ms':>9} {'first ms':>10} {'compiles':>9} "
          f"{'accuracy':>9}")
    for mode in rows:
        step, host, first, done, acc = got[mode]
        print(f"{mode:<22} {step:9.3f} {host:9.3f} {first:10.1f} {done:9d} {acc:9.4f}")
    for mode in rows:
        step, host, first, done, acc = got[mode]
        name = "torch_mnist_" + mode
        print(f"BENCH {name}_step_ms {step:.3f} ms")
        print(f"BENCH {name}_host_ms {host:.3f} ms")
        print(f"BENCH {name}_first_step_ms {first:.1f} ms")
        print(f"BENCH {name}_compiles {done} compiles")
        print(f"BENCH {name}_accuracy {acc:.4f} fraction")
    plain, replay = got["no_graphs"], got["capture_replay"]
    print(f"BENCH torch_mnist_host_ratio {plain[1] / replay[1]:.2f} ratio")
    print(f"BENCH torch_mnist_step_ratio {plain[0] / replay[0]:.2f} ratio")
    pinned_ratio = got["no_graphs_pinned"][1] / got["capture_replay_pinned"][1]
    print(f"BENCH torch_mnist_pinned_host_ratio {pinned_ratio:.2f} ratio")
    graphed = plain[1] / got["graphed_callables"][1]
    print(f"BENCH torch_mnist_graphed_host_ratio {graphed:.2f} ratio")
    print(f"BENCH torch_vs_cpu_step_ratio {got['cpu'][0] / replay[0]:.2f} ratio")
    print(f"BENCH torch_eager_op_us {op_hpu:.2f} us")
    print(f"BENCH torch_cpu_op_us {op_cpu:.2f} us")
    print(f"BENCH torch_eager_op_overhead {op_ratio:.2f} ratio")


if __name__ == "__main__":
    main()
