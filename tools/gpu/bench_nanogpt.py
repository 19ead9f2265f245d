#!/usr/bin/env python3
"""GPT-2 124M training-step benchmark in PyTorch, nanoGPT's model and settings, as the
yardstick for kernels/cuda's BenchmarkGPT2Step (tools/gpu/check.sh runs both, on the same card).

The model is nanoGPT's model.py GPT (12 layers, 12 heads, 768 wide, block 1024,
vocab 50304, biases, tied embeddings, no dropout) written out here so the script needs
only torch. Like nanoGPT's train.py: bf16 autocast, flash attention
(scaled_dot_product_attention, causal), fused AdamW (lr 6e-4, betas 0.9/0.95, wd 0.1
on 2-D weights), grad clip 1.0, torch.compile (--no-compile to skip), TF32 allowed.
Random tokens, so the data loader is not measured.

Prints one JSON line: tokens_per_s, ms_per_step, mfu (nanoGPT's estimate: 6N +
12·L·H·Q·T FLOPs per token against --peak-tflops).

    python3 tools/gpu/bench_nanogpt.py --batch 16 --steps 20 --peak-tflops 989

--device cpu --tiny (a 2-layer, 64-wide model at T 64) runs the same code on a CPU in
seconds: the GPU check's dry run (tools/gpu/check.sh --dry) uses it.
"""
import argparse
import json
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, C, nh):
        super().__init__()
        self.nh = nh
        self.ln_1 = nn.LayerNorm(C)
        self.c_attn = nn.Linear(C, 3 * C)
        self.c_proj = nn.Linear(C, C)
        self.ln_2 = nn.LayerNorm(C)
        self.c_fc = nn.Linear(C, 4 * C)
        self.mlp_proj = nn.Linear(4 * C, C)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.nh, C // self.nh).transpose(1, 2) for t in (q, k, v))
        if hasattr(F, "scaled_dot_product_attention"):
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:  # PyTorch < 2.0 (a dry run on Debian's torch 1.13)
            att = (q @ k.transpose(-2, -1)) / math.sqrt(k.size(-1))
            att = att.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
            y = att.softmax(dim=-1) @ v
        x = x + self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, L=12, nh=12, C=768, T=1024, V=50304):
        super().__init__()
        self.wte = nn.Embedding(V, C)
        self.wpe = nn.Embedding(T, C)
        self.h = nn.ModuleList(Block(C, nh) for _ in range(L))
        self.ln_f = nn.LayerNorm(C)
        self.lm_head = nn.Linear(C, V, bias=False)
        self.lm_head.weight = self.wte.weight  # tied, as nanoGPT and gptkit
        self.apply(self._init)
        for n, p in self.named_parameters():
            if n.endswith("c_proj.weight") or n.endswith("mlp_proj.weight"):
                nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * L))

    @staticmethod
    def _init(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, 0.0, 0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)

    def forward(self, idx, targets):
        T = idx.shape[1]
        x = self.wte(idx) + self.wpe(torch.arange(T, device=idx.device))
        for b in self.h:
            x = b(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--peak-tflops", type=float, default=989.0)
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--tiny", action="store_true", help="a 2-layer, 64-wide model at T 64 (a dry run)")
    ap.add_argument("--profile", action="store_true",
                    help="after the timed steps, profile one step with torch.profiler and print its ops by device time")
    a = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    dev = a.device
    L, nh, C, T, V = (2, 2, 64, 64, 128) if a.tiny else (12, 12, 768, 1024, 50304)
    model = GPT(L, nh, C, T, V).to(dev)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    fused = {"fused": True} if dev == "cuda" else {}
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=6e-4, betas=(0.9, 0.95), eps=1e-8, **fused)
    step_model = model if a.no_compile else torch.compile(model)
    g = torch.Generator(device=dev).manual_seed(1)
    x = torch.randint(0, min(V, 50257), (a.batch, T), device=dev, generator=g)
    y = torch.randint(0, min(V, 50257), (a.batch, T), device=dev, generator=g)
    sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)

    def step():
        with torch.autocast(device_type=dev, dtype=torch.bfloat16):
            loss = step_model(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    for _ in range(a.warmup):
        step()
    sync()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        loss = step()
    sync()
    secs = time.perf_counter() - t0
    n_params = sum(p.numel() for p in model.parameters()) - model.wpe.weight.numel()
    flops_per_token = 6 * n_params + 12 * L * nh * (C // nh) * T
    tps = a.steps * a.batch * T / secs
    print(json.dumps({
        "gpu": torch.cuda.get_device_name() if dev == "cuda" else "cpu", "torch": torch.__version__, "batch": a.batch, "T": T,
        "compiled": not a.no_compile, "ms_per_step": 1000 * secs / a.steps, "tokens_per_s": tps,
        "mfu": flops_per_token * tps / (a.peak_tflops * 1e12), "loss": float(loss),
    }))
    if a.profile:
        try:
            profile_step(step, sync, dev)
        except Exception as e:  # the figures above stand; the report shows no table
            print(f"no profile: {e!r}")


def profile_step(step, sync, dev):
    """One step under torch.profiler, its kernels by device time (self), between
    the markers tools/gpu/report.py looks for; after the JSON line, so that the
    figures above are from steps without the profiler."""
    from torch.profiler import ProfilerActivity, profile
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if dev == "cuda" else [])
    sync()
    with profile(activities=acts) as prof:
        step()
        sync()
    ka = prof.key_averages()
    keys = ("self_device_time_total", "self_cuda_time_total") if dev == "cuda" else ("self_cpu_time_total",)
    key = next((k for k in keys if ka and hasattr(ka[0], k)), None)
    table = ka.table(sort_by=key, row_limit=30, max_name_column_width=60) if key else None
    print(f"== profile of one step (torch.profiler, sorted by {key})")
    print(table if table is not None else "(no table: this torch.profiler has none of " + ", ".join(keys) + ")")
    print("== end of profile")


if __name__ == "__main__":
    main()
