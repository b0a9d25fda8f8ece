# SPDX-License-Identifier: MIT
"""A small GPT trained character by character on the GPL 3's text, on hpu in lazy mode or with
HPU graphs, or on the CPU.

    python3 -m hpu_torch.run examples/gpt.py [--mode MODE] [--steps N] [--batch-size B]
                                             [--block T] [--dim D] [--heads H] [--device cpu]
    python3 examples/gpt.py ...           (imports hpu_torch itself)

The text is /usr/share/common-licenses/GPL-3, from Debian's base-files (an essential package:
every Debian system has it); its first 90% trains, the rest measures the perplexity.  The model:
token and position embeddings (dim D), 2 transformer layers (LayerNorm, causal self-attention of
H heads, LayerNorm, a GELU MLP of 4 D, each residual), a final LayerNorm and a linear head to the
characters, trained on cross entropy (nll_loss of log_softmax) over random windows of T
characters.  attention() is hpu_torch.hpex.kernels.FusedSDPA on hpu where hpu_torch has it,
else matmul, causal mask and softmax.  MODE is examples/mnist.py's: no_graphs (lazy mode,
mark_step after the backward and after the optimizer's step) or capture_replay (the whole step
captured once as an HPU graph and replayed per batch).  It prints the loss every 50 steps and
the perplexity of the held-out text.

As a module: load() the text, batches() its training windows, GPT the model, optimizer(model)
its RMSprop, perplexity(); tests/ use them.
"""
import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import mnist

TEXT = "/usr/share/common-licenses/GPL-3"
MODES = ("no_graphs", "capture_replay")

try:
    from hpu_torch.hpex.kernels import FusedSDPA
except ImportError:
    FusedSDPA = None


def attention(q, k, v):
    """Causal scaled dot-product attention of q, k, v [B, heads, T, head dim]."""
    if FusedSDPA is not None and q.device.type == "hpu":
        return FusedSDPA.apply(q, k, v, None, 0.0, True)
    t = q.shape[-2]
    mask = torch.full((t, t), float("-inf"), device=q.device).triu(1)  # -inf above the diagonal
    scores = q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5 + mask
    return scores.softmax(-1) @ v


class SelfAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        return self.proj(attention(q, k, v).transpose(1, 2).reshape(b, t, c))


class Layer(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.attn = SelfAttention(dim, heads)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    """[B, T] character ids to the log-probabilities of each next character, [B T, vocab]."""

    def __init__(self, vocab, block=64, dim=64, heads=4, layers=2):
        super().__init__()
        self.vocab, self.block = vocab, block
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(block, dim)
        self.layers = nn.Sequential(*[Layer(dim, heads) for _ in range(layers)])
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        logits = self.head(self.ln(self.layers(x)))
        return F.log_softmax(logits, dim=-1).flatten(0, 1)

    def random_batch(self, batch_size, device):
        """Random windows and next characters: make_step's sample for its warm-ups."""
        return (torch.randint(0, self.vocab, (batch_size, self.block), device=device),
                torch.randint(0, self.vocab, (batch_size * self.block,), device=device))


def optimizer(model):
    # RMSprop, not AdamW: torch 1.13's AdamW reads its step count on the host, so a captured
    # step would replay the first step's bias correction.
    return torch.optim.RMSprop(model.parameters(), lr=3e-3)


def load(path=TEXT):
    """(training ids, held-out ids: int64 tensors, the vocabulary: the text's characters)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    chars = sorted(set(text))
    code = {c: i for i, c in enumerate(chars)}
    ids = torch.tensor([code[c] for c in text], dtype=torch.int64)
    split = len(ids) * 9 // 10
    return ids[:split], ids[split:], chars


def batches(ids, batch_size, block, steps, seed=0):
    """steps batches of batch_size random windows: (ids [B, T], the next ids [B T])."""
    windows = ids.unfold(0, block + 1, 1)
    g = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        w = windows[torch.randint(0, len(windows), (batch_size,), generator=g)]
        yield w[:, :-1].contiguous(), w[:, 1:].flatten()


@torch.no_grad()
def perplexity(model, ids, device="hpu", batch_size=16):
    """exp of the mean cross entropy over ids' consecutive windows (the last partial one
    dropped), through the model class's own forward."""
    windows = ids.unfold(0, model.block + 1, model.block)
    was = model.training
    model.eval()
    total = 0.0
    for i in range(0, len(windows), batch_size):
        w = windows[i:i + batch_size]
        out = type(model).forward(model, w[:, :-1].contiguous().to(device))
        total += F.nll_loss(out, w[:, 1:].flatten().to(device), reduction="sum").item()
    model.train(was)
    return math.exp(total / (len(windows) * model.block))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mode", choices=MODES, default="no_graphs")
    parser.add_argument("--steps", type=int, default=500, help="training steps (default 500)")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--block", type=int, default=64, help="context length (default 64)")
    parser.add_argument("--dim", type=int, default=64, help="model width (default 64)")
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="hpu", help="hpu, or cpu for the reference")
    args = parser.parse_args(argv)

    train, held_out, chars = load()
    torch.manual_seed(args.seed)
    model = GPT(len(chars), args.block, args.dim, args.heads).to(args.device)
    step = mnist.make_step(args.mode, model, optimizer(model), args.batch_size, args.device,
                           sample=model.random_batch)
    for i, (x, y) in enumerate(batches(train, args.batch_size, args.block, args.steps,
                                       args.seed)):
        loss = step(x, y)
        if i % 50 == 0 or i == args.steps - 1:
            print(f"step {i:5d}  loss {loss.item():.4f}")
    ppl = perplexity(model, held_out, args.device)
    print(f"mode {args.mode} on {args.device}: held-out perplexity {ppl:.2f} "
          f"({len(chars)} characters)")


if __name__ == "__main__":
    main()
