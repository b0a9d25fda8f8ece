# SPDX-License-Identifier: MIT
"""bench-models: issue 24's figures for real models' building blocks, through PyTorch (hpu_torch),
in one process.  Each section prints its BENCH lines, ratios measured in this run:
  conv2d_vs_openblas      device conv2d GFLOP/s / the host's OpenBLAS im2col+sgemm on the same
                          shapes (host_models, before the guest boots)
  bf16_gemm_vs_sbgemm     device bf16 GEMM GFLOP/s / the host's bf16 GEMM with fp32 accumulation
  sdpa_memory_ratio       peak device memory of unfused attention / FusedSDPA, sequence 2048
  sdpa_vs_unfused_time    unfused attention time / FusedSDPA time
  lr_schedule_compiles    graph compilations over 100 lazy steps of a cosine LR schedule
"""
import math
import os
import re
import sys
import time

import torch
import torch.nn.functional as F

import hpu_torch
from hpu_torch import core

TOP = os.environ.get("HPU_TOP") or os.path.join(os.path.dirname(__file__), "..", "..")


def host_value(key):
    """The last value host_models printed for key before the guest booted (0 if none)."""
    found = 0.0
    try:
        with open(os.path.join(TOP, "build", "bench-host", "models.txt")) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 2 and parts[0] == key:
                    found = float(parts[1])
    except OSError:
        pass
    return found


def bench(name, value):
    print(f"BENCH {name} {value:.4g}", flush=True)


# --- conv2d (section of the examples/bench engineer) ---
CONV2D_KEY = re.compile(r"^conv2d_n(\d+)c(\d+)h(\d+)w(\d+)o(\d+)k(\d+)s(\d+)p(\d+)$")


def conv2d_host_shapes():
    """[(key, (n, c, h, w, o, k, s, p), host GFLOP/s)] of the shapes host_models measured: its
    keys spell them."""
    found = []
    for line in open(os.path.join(TOP, "build", "bench-host", "models.txt")):
        parts = line.split()
        shape = len(parts) == 2 and CONV2D_KEY.match(parts[0])
        if shape:
            found.append((parts[0], tuple(int(g) for g in shape.groups()), float(parts[1])))
    return found


def conv2d_gflops(n, c, h, w, o, k, s, p):
    """F.conv2d's GFLOP/s on hpu in float32, lazy mode (a mark_step after each call, as a
    training loop's), synchronized: best of 3 rounds of about 0.2 s, after a warm-up call
    (the compilation)."""
    x = torch.randn(n, c, h, w).to("hpu")
    weight = torch.randn(o, c, k, k).to("hpu")

    def run(reps):
        start = time.perf_counter()
        for _ in range(reps):
            F.conv2d(x, weight, stride=s, padding=p)
            core.mark_step()
        torch.hpu.synchronize()
        return time.perf_counter() - start

    reps = max(1, int(0.2 / run(1)))
    flop = 2.0 * n * o * ((h + 2 * p - k) // s + 1) * ((w + 2 * p - k) // s + 1) * c * k * k
    return max(flop * reps / run(reps) / 1e9 for _ in range(3))


def conv2d():
    ratios = []
    for key, shape, host in conv2d_host_shapes():
        device = conv2d_gflops(*shape)
        bench(key + "_gflops", device)
        bench(key + "_vs_openblas", device / host)
        ratios.append(device / host)
    if not ratios:
        sys.exit("bench_models: no conv2d shapes from host_models (build/bench-host/models.txt)")
    bench("conv2d_vs_openblas", math.exp(sum(map(math.log, ratios)) / len(ratios)))


# --- bf16 GEMM (section of the hmp engineer) ---
# (m, n, k, repetitions): tests/bench/bf16_gemm_host.h measures the same shapes on the host.
BF16_GEMM_SHAPES = {"1024x1024x1024": (1024, 1024, 1024, 8), "4096x256x1024": (4096, 256, 1024, 8)}


def bf16_gemm_device(m, n, k, reps):
    """GFLOP/s of torch.matmul of bf16 hpu tensors [m, k] @ [k, n] (a bf16 result, fp32
    accumulation on the matrix engine): best of three rounds of reps GEMMs, each its own lazy
    step, synchronized; the step's compilation before."""
    g = torch.Generator().manual_seed(0)
    a = torch.randn(m, k, generator=g).bfloat16().to("hpu")
    b = torch.randn(k, n, generator=g).bfloat16().to("hpu")

    def run(count):
        for _ in range(count):
            torch.matmul(a, b)
            hpu_torch.core.mark_step()
        torch.hpu.synchronize()
    run(1)
    best = 0.0
    for _ in range(3):
        start = time.perf_counter()
        run(reps)
        best = max(best, 2.0 * m * n * k * reps / (time.perf_counter() - start) / 1e9)
    return best


def bf16_gemm():
    """BENCH bf16_gemm_vs_sbgemm: the geometric mean over the shapes of the device's GFLOP/s
    over the host's best bf16 GEMM (bf16_gemm_host.h: cblas_sbgemm if the host's OpenBLAS has
    it, else oneDNN's if the host has it, else widen to fp32 + sgemm); 0 without the host's
    figures.  The host's widen + sgemm is printed beside it."""
    ratios = []
    for shape, (m, n, k, reps) in BF16_GEMM_SHAPES.items():
        device, host = bf16_gemm_device(m, n, k, reps), host_value("bf16_gemm_" + shape)
        widened = host_value("bf16_gemm_widened_" + shape)
        print(f"bf16_gemm {shape}: device {device:.2f} GFLOP/s, host's best {host:.2f}, "
              f"host's widen + sgemm {widened:.2f}", flush=True)
        ratios.append(device / host if host else 0.0)
    bench("bf16_gemm_vs_sbgemm", math.prod(ratios) ** (1 / len(ratios)))


# --- FusedSDPA (section of the SDPA engineer) ---
SDPA_SHAPE = (1, 4, 2048, 64)  # B, H, L = S, D; float32 q, k, v, as a training step takes them


def sdpa_unfused(q, k, v):
    """softmax(q k^T / sqrt(D)) v as a model without FusedSDPA writes it, on hpu."""
    s = torch.matmul(q, k.transpose(-1, -2)) * q.shape[-1] ** -0.5
    return torch.matmul(torch.softmax(s, -1), v)


def sdpa_fused(q, k, v):
    from hpu_torch.hpex.kernels import FusedSDPA

    return FusedSDPA.apply(q, k, v)


def sdpa_step(fn, q, k, v, grad, train):
    """One attention step (forward, and backward if train): its peak device memory, seconds."""
    import time  # here, in this section: the module's imports are shared

    for t in (q, k, v):
        t.grad = None
    torch.hpu.synchronize()
    torch.hpu.reset_peak_memory_stats()
    start = time.perf_counter()
    with torch.set_grad_enabled(train):
        out = fn(q, k, v)
        if train:
            out.backward(grad)
    torch.hpu.synchronize()
    return torch.hpu.max_memory_allocated(), time.perf_counter() - start


def sdpa():
    """Unfused attention / FusedSDPA, each the best of 3 after a warm-up: the peak memory of
    a training step's attention (forward and backward), and the forward's time (the time of
    forward and backward printed too)."""
    g = torch.Generator().manual_seed(0)
    q, k, v, grad = (torch.randn(SDPA_SHAPE, generator=g).to("hpu") for _ in range(4))
    for t in (q, k, v):
        t.requires_grad_()
    best = {}
    for train in (True, False):
        for name, fn in (("unfused", sdpa_unfused), ("fused", sdpa_fused)):
            sdpa_step(fn, q, k, v, grad, train)
            runs = [sdpa_step(fn, q, k, v, grad, train) for _ in range(3)]
            best[name, train] = (min(m for m, _ in runs), min(t for _, t in runs))
            print(f"# sdpa {name} {'train' if train else 'forward'}: peak "
                  f"{best[name, train][0] / 2**20:.1f} MiB, {best[name, train][1]:.3f} s",
                  flush=True)
    bench("sdpa_memory_ratio", best["unfused", True][0] / best["fused", True][0])
    bench("sdpa_vs_unfused_time", best["unfused", False][1] / best["fused", False][1])
    print(f"# sdpa forward and backward: time x"
          f"{best['unfused', True][1] / best['fused', True][1]:.3g}", flush=True)


# --- LR schedule (section of the fused-optimizer engineer) ---
def lr_schedule_compilations():
    """graph_compilation's TotalNumber so far (libhpu's lazy-mode compilations)."""
    from hpu_torch.hpu import metrics
    return dict(metrics.metric_global("graph_compilation").stats())["TotalNumber"]


def lr_schedule(steps=100):
    """A 3-layer MLP (32-64-64-10) trained in lazy mode for `steps` steps with FusedAdamW under
    CosineAnnealingLR(T_max=steps - 1): 100 learning rates, down to 0 for the last step,
    written by a device fill after every step.  The batches are on the device before the loop
    (a host copy would flush the lazy graph mid-step).  Counted: the compilations from the
    end of step 1 (the warm-up step, which also makes the optimizer's state) to the end of
    step `steps` (its mark_step), so 1 is the steady step's recipe, compiled at step 2."""
    from hpu_torch.hpex.optimizers import FusedAdamW
    dev = torch.device("hpu")
    g = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64),
                                torch.nn.ReLU(), torch.nn.Linear(64, 10)).to(dev)
    opt = FusedAdamW(model.parameters(), lr=1e-2)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps - 1)
    data = [(torch.randn(16, 32, generator=g).to(dev), torch.randint(0, 10, (16,), generator=g)
             .to(dev)) for _ in range(steps)]
    counts, lrs = [], []
    for x, y in data:
        lrs.append(opt.param_groups[0]["lr"])
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        hpu_torch.core.mark_step()
        counts.append(lr_schedule_compilations())
        sched.step()
    print(f"# lr_schedule: {len(set(lrs))} learning rates from {lrs[0]:.3g} to {lrs[-1]:.3g}, "
          f"compilations {counts[0]} by step 1, final loss {loss.item():.4f}", flush=True)
    bench("lr_schedule_compiles", counts[-1] - counts[0])


def main():
    for section in (conv2d, bf16_gemm, sdpa, lr_schedule):
        section()


if __name__ == "__main__":
    main()
