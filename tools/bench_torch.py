#!/usr/bin/env python3
"""PyTorch CPU peer for gptkit's trainer benchmark (tools/bench-trainer.sh runs it).

    /usr/bin/python3 tools/bench_torch.py [--configs baby,124m] [--threads 1,2]
        [--baby-steps 20] [--gpt2-steps 2] [--warmup 2]

Prints one JSON line per measurement on stdout:

    {"config": "baby", "threads": 1, "tokens_per_s": ..., "tokens_per_cpu_s": ...,
     "ms_per_step": ..., "cpu_ms_per_step": ..., "steps": K, "blas": "...", "torch": "..."}

Configs (fp32, no dropout, no biases, lm_head tied to wte, GELU tanh, plain causal
attention as torch 1.13 has no fused attention):
  baby         n_layer 4, n_head 4, n_embd 128, block 64, batch 12, vocab 65 padded to 128;
               a whole optimizer step: forward, backward, clip_grad_norm_(1.0), AdamW
               (lr 1e-3, betas 0.9/0.99, weight decay 0.1 on matrices), zero_grad.
  124m-fwdbwd  GPT-2 124M shape (12 x 12 x 768), B=1, T=1024, vocab 50304: forward + backward.
  124m         the same plus clipping and AdamW (betas 0.9/0.95): a whole optimizer step.
The 124M figures come from the same steps: each step times forward+backward and the
optimizer separately.

Each figure is the median over the measured steps after --warmup unmeasured ones; wall
time from perf_counter, CPU time from process_time (all threads of the process), so
tokens_per_cpu_s is what a step costs whatever the thread count. torch.set_num_threads
sets the thread count (OpenMP, which libopenblas0-openmp also follows).

It refuses to report (exit 2) when the BLAS torch calls is Debian's reference BLAS
(/usr/lib/x86_64-linux-gnu/blas/libblas.so.3, about 2 GFLOP/s) rather than OpenBLAS:
Debian's python3-torch is built with BLAS_INFO=generic and calls whatever libblas.so.3
update-alternatives selects (install libopenblas0-openmp).

The model is written here for the benchmark (a nanoGPT-equivalent GPT: same shapes and
operations), not copied from nanoGPT.
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, C, n_head):
        super().__init__()
        self.n_head = n_head
        self.ln_1 = nn.LayerNorm(C, elementwise_affine=True)
        self.c_attn = nn.Linear(C, 3 * C, bias=False)
        self.c_proj = nn.Linear(C, C, bias=False)
        self.ln_2 = nn.LayerNorm(C, elementwise_affine=True)
        self.c_fc = nn.Linear(C, 4 * C, bias=False)
        self.mlp_proj = nn.Linear(4 * C, C, bias=False)
        # no biases: drop the LayerNorm ones too, as nanoGPT's bias=False does
        self.ln_1.bias = None
        self.ln_2.bias = None

    def forward(self, x, mask):
        B, T, C = x.shape
        hs = C // self.n_head
        q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
        q = q.view(B, T, self.n_head, hs).transpose(1, 2)
        k = k.view(B, T, self.n_head, hs).transpose(1, 2)
        v = v.view(B, T, self.n_head, hs).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
        att = att.masked_fill(mask[:T, :T], float("-inf"))
        y = F.softmax(att, dim=-1) @ v
        x = x + self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))
        h = F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh")
        return x + self.mlp_proj(h)


class GPT(nn.Module):
    def __init__(self, vocab, block, n_layer, n_head, C):
        super().__init__()
        self.wte = nn.Embedding(vocab, C)
        self.wpe = nn.Embedding(block, C)
        self.h = nn.ModuleList(Block(C, n_head) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(C)
        self.ln_f.bias = None
        self.register_buffer("mask", ~torch.tril(torch.ones(block, block, dtype=torch.bool)))
        for name, p in self.named_parameters():
            if p.dim() == 2:
                std = 0.02 / math.sqrt(2 * n_layer) if name.endswith(("c_proj.weight", "mlp_proj.weight")) else 0.02
                nn.init.normal_(p, 0.0, std)

    def forward(self, idx, targets):
        B, T = idx.shape
        x = self.wte(idx) + self.wpe(torch.arange(T))
        for blk in self.h:
            x = blk(x, self.mask)
        logits = F.linear(self.ln_f(x), self.wte.weight)  # tied lm_head
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def adamw(model, lr, betas):
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=lr, betas=betas, eps=1e-8)


def blas_in_use():
    """The real path of the BLAS library torch has loaded (after a matmul)."""
    torch.ones(64, 64) @ torch.ones(64, 64)
    paths = set()
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 6 and ("blas" in parts[5].lower()):
                paths.add(os.path.realpath(parts[5]))
    return sorted(paths)


def sgemm_gflops(n=1024, reps=5):
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    t = time.perf_counter()
    for _ in range(reps):
        a @ b
    return 2 * n**3 * reps / (time.perf_counter() - t) / 1e9


def measure(name, threads, model_args, n_tokens, B, T, lr, betas, warmup, steps, split):
    torch.set_num_threads(threads)
    torch.manual_seed(1337)
    model = GPT(*model_args)
    opt = adamw(model, lr, betas)
    gen = torch.Generator().manual_seed(0)
    fb_wall, fb_cpu, st_wall, st_cpu = [], [], [], []
    for i in range(warmup + steps):
        idx = torch.randint(0, n_tokens, (B, T), generator=gen)
        tgt = torch.randint(0, n_tokens, (B, T), generator=gen)
        w0, c0 = time.perf_counter(), time.process_time()
        loss = model(idx, tgt)
        loss.backward()
        w1, c1 = time.perf_counter(), time.process_time()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        w2, c2 = time.perf_counter(), time.process_time()
        if i >= warmup:
            fb_wall.append(w1 - w0)
            fb_cpu.append(c1 - c0)
            st_wall.append(w2 - w0)
            st_cpu.append(c2 - c0)
        print(f"bench_torch: {name} threads={threads} step {i + 1}/{warmup + steps}: {w2 - w0:.3f} s", file=sys.stderr, flush=True)
    tokens = B * T
    rows = []
    variants = [(name + "-fwdbwd", fb_wall, fb_cpu)] if split else []
    variants.append((name, st_wall, st_cpu))
    for label, wall, cpu in variants:
        w, c = statistics.median(wall), statistics.median(cpu)
        rows.append({
            "config": label, "threads": threads,
            "tokens_per_s": round(tokens / w, 2), "tokens_per_cpu_s": round(tokens / c, 2),
            "ms_per_step": round(w * 1e3, 2), "cpu_ms_per_step": round(c * 1e3, 2),
            "steps": steps, "params": sum(p.numel() for p in model.parameters()),
        })
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--configs", default="baby,124m", help="comma-separated: baby, 124m")
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    ap.add_argument("--baby-steps", type=int, default=20, help="measured baby steps")
    ap.add_argument("--gpt2-steps", type=int, default=2, help="measured 124M steps (15-25 s each)")
    ap.add_argument("--warmup", type=int, default=2, help="unmeasured steps first (baby: 3x this)")
    args = ap.parse_args()

    blas = blas_in_use()
    info = {"torch": torch.__version__, "blas": blas, "sgemm_gflops_1thread": None}
    torch.set_num_threads(1)
    info["sgemm_gflops_1thread"] = round(sgemm_gflops(), 1)
    print("bench_torch: " + json.dumps(info), file=sys.stderr)
    if not any("openblas" in p for p in blas):
        print("bench_torch: torch is not using OpenBLAS (loaded: %s); refusing to report. Debian's reference BLAS "
              "is ~25x slower. Install libopenblas0-openmp (update-alternatives then selects it for libblas.so.3)." % (blas or "nothing"),
              file=sys.stderr)
        sys.exit(2)
    blas_name = next(p for p in blas if "openblas" in p and "libblas" in p) if any("libblas" in p for p in blas) else blas[0]

    for threads in [int(t) for t in args.threads.split(",")]:
        for cfg in args.configs.split(","):
            if cfg == "baby":
                rows = measure("baby", threads, (128, 64, 4, 4, 128), 65, 12, 64, 1e-3, (0.9, 0.99),
                               3 * args.warmup, args.baby_steps, split=False)
            elif cfg == "124m":
                rows = measure("124m", threads, (50304, 1024, 12, 12, 768), 50304, 1, 1024, 6e-4, (0.9, 0.95),
                               max(1, args.warmup // 2), args.gpt2_steps, split=True)
            else:
                ap.error("unknown config %r (want baby or 124m)" % cfg)
            for r in rows:
                r["blas"] = blas_name
                r["torch"] = torch.__version__
                print(json.dumps(r), flush=True)


if __name__ == "__main__":
    main()
