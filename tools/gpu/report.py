#!/usr/bin/env python3
"""Writes the GPU check's markdown report (tools/gpu/check.sh runs it last).

Reads the check's work directory: facts.tsv (the machine, the libraries found),
stages.tsv (each stage's status, seconds and note), logs/STAGE.log, and the runs'
metrics.jsonl. It makes the comparisons the stages only ran for (the loss curves
GPU against CPU within 2%, 2 ranks against 1, the throughput of ours against
PyTorch) and exits 1 when a stage failed, timed out, or missed its tolerance.
Standard library only: it runs in whatever python3 the GPU machine has.
"""
import argparse
import json
import os
import re
import statistics
import sys


def read_tsv(path):
    rows = []
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                rows.append(line.rstrip("\n").split("\t"))
    return rows


def read_metrics(path):
    if not os.path.exists(path):
        return None
    out = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
    return out


def log(work, name):
    p = os.path.join(work, "logs", name + ".log")
    if not os.path.exists(p):
        return ""
    with open(p, errors="replace") as f:
        return f.read()


def rel(a, b):
    return abs(a - b) / max(abs(b), 1e-12)


def compare_curves(got, want, tol, window):
    """Compares two loss curves: each window of steps' mean loss, and the last
    val_loss, within tol (relative). Returns (ok, text)."""
    if not got or not want:
        return False, "a run wrote no metrics"
    n = min(len(got), len(want))
    if len(got) != len(want):
        return False, f"{len(got)} steps against {len(want)}"
    worst_step = max(rel(g["loss"], w["loss"]) for g, w in zip(got[:n], want[:n]))
    worst_win = 0.0
    for i in range(0, n, window):
        g = statistics.fmean(x["loss"] for x in got[i:i + window])
        w = statistics.fmean(x["loss"] for x in want[i:i + window])
        worst_win = max(worst_win, rel(g, w))
    gv = [x["val_loss"] for x in got if x.get("val_loss") is not None]
    wv = [x["val_loss"] for x in want if x.get("val_loss") is not None]
    val = rel(gv[-1], wv[-1]) if gv and wv else None
    ok = worst_win <= tol and (val is None or val <= tol)
    text = (f"{n} steps: loss {got[-1]['loss']:.4f} against {want[-1]['loss']:.4f}; "
            f"largest difference of {window}-step means {worst_win:.2%}, of single steps {worst_step:.2%}")
    if val is not None:
        text += f"; val loss {gv[-1]:.4f} against {wv[-1]:.4f} ({val:.2%})"
    text += f" (tolerance {tol:.2g})"
    return ok, text


def profile_rows(text):
    """The rows of a kernels/cuda Profile table: {op: milliseconds}."""
    rows = {}
    for m in re.finditer(r"^(\S.*?)\s{2,}(\d+)\s+([\d.]+)\s+[\d.]+%", text, re.M):
        rows[m.group(1)] = float(m.group(3))
    return rows


def ptx_ab(work, stages, facts, dry, bench, verdict, details):
    """The ptx-ab stage: this build's PTX against an earlier commit's (tools/gpu/ptx-ab.sh
    ran the same command with each, the earlier first)."""
    if stages.get("ptx-ab", {}).get("status") != "ok":
        return
    base = facts.get("ptx_base", "an earlier commit")
    if dry:
        old = read_metrics(os.path.join(work, "ptx-ab", "metrics.jsonl"))
        new = read_metrics(os.path.join(work, "ptx-ab-again", "metrics.jsonl"))
        if not old or not new or len(old) != len(new):
            verdict("ptx-ab", False, "a run wrote no metrics, or fewer steps than the other")
            return
        worst = max(rel(o["loss"], n["loss"]) for o, n in zip(old, new))
        same = "the same losses bit for bit" if worst == 0 else f"losses within {worst:.2g} (relative), not bit for bit"
        verdict("ptx-ab", True, f"cuda-sim, bf16, {len(new)} steps of a one-layer model: {same} with the PTX of {base} as with this build's")
        return
    # the runs in turn: "== the PTX of ..." (the earlier) and "== this build's PTX"
    runs = {"old": [], "new": []}
    side = None
    for line in log(work, "ptx-ab").splitlines():
        if line.startswith("== the PTX of "):
            side = "old"
        elif line.startswith("== this build's PTX"):
            side = "new"
        else:
            m = re.search(r"BenchmarkGPT2Step\S*\s+\d+\s+([\d.]+) ns/op", line)
            if m and side:
                runs[side].append(float(m.group(1)) / 1e6)
    if not runs["old"] or len(runs["old"]) != len(runs["new"]):
        verdict("ptx-ab", False, "no benchmark line for each run of each PTX in the output")
        return
    old_ms, new_ms = statistics.median(runs["old"]), statistics.median(runs["new"])
    each = lambda xs: ", ".join(f"{x:.2f}" for x in xs)
    text = (f"the PTX of {base}: {old_ms:.2f} ms/step (runs: {each(runs['old'])}); "
            f"this build's: {new_ms:.2f} (runs: {each(runs['new'])}; medians, the two in turn)")
    if "ours" in bench:
        text += f" (and {bench['ours'][2]:.2f} in gpt2-ours: a spread of {rel(bench['ours'][2], new_ms):.1%})"
    text += f"; this build's step {new_ms / old_ms - 1:+.1%} against the earlier's"
    verdict("ptx-ab", True, text)
    old, new = profile_rows(log(work, "ptx-ab-profile")), profile_rows(log(work, "gpt2-ours-profile"))
    if old and new:
        rows = ["| op | earlier PTX, ms | this build's, ms | change |", "|---|---|---|---|"]
        for op in sorted(set(old) & set(new), key=lambda k: -new[k]):
            if not op.startswith("gemm "):
                rows.append(f"| {op} | {old[op]:.3f} | {new[op]:.3f} | {new[op] / old[op] - 1:+.1%} |" if old[op] else f"| {op} | 0 | {new[op]:.3f} | |")
        details.append((f"This build's kernels against the PTX of {base} (one profiled step each; GEMMs, which are cuBLAS's, left out)",
                        "\n".join(rows)))


# The dp2 stage compares the loss of every step of 2 ranks (each half the batch, their
# gradients summed by the all-reduce) with 1 rank's (the whole batch), relative. The two
# runs add the same float32 terms in another order: each rank's GEMMs sum half the rows,
# then the all-reduce adds the halves (the simulated NCCL in the dry run, NCCL's ring on
# GPUs). That is a few ulps of each gradient element, 1e-9 to 1e-8 of the loss; AdamW
# then amplifies it (it scales every element to a step of about lr, so an element near
# zero whose rounding differs moves as much as any), most at a loss spike.
#
# The dry run (cuda-sim, 2 layers of width 32, lr 1e-2, 20 steps, batch 4 against 2 x 2):
# measured 2-rank differences of 1e-9 to 2.5e-7 until step 16, then 9.6e-6 at step 17,
# the same every run (2026-11-29). The CPU's own 2 ranks against 1 give 4.9e-7 there, and
# the CPU against cuda-sim, 1 rank each, 2.3e-5: the step is as sensitive to any float32
# reordering. 1e-4 leaves that a margin of 10, and stays well under what a fault moves:
# another rank's or another order's samples differ by 3e-3 at step 1 and by 1e-2 from
# step 2 on (measured with another seed).
DP2_TOL_DRY = 1e-4
# The GPU run (configs/shakespeare-char-gpu.yaml, 50 steps at lr 1e-3 in float32 with
# fp32 matmuls, batch 32 against 2 x 16) reorders the same sums, and cuBLAS may also
# choose other GEMM algorithms (split-K) for 16 rows a rank than for 32: not yet measured
# (no check has had 2 GPUs), so 1e-3, ten times the dry run's.
DP2_TOL_GPU = 1e-3


def tokens_per_s(metrics):
    xs = [m["tokens_per_s"] for m in metrics[5:] if m.get("tokens_per_s")] if metrics else []
    return statistics.median(xs) if xs else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--summary", help="also write the head and the stage table alone to this file")
    a = ap.parse_args()
    work = a.work
    facts = {}
    for row in read_tsv(os.path.join(work, "facts.tsv")):
        if len(row) >= 2:
            facts[row[0]] = row[1]
    dry = facts.get("mode") == "dry"
    stages = {}
    order = []
    for row in read_tsv(os.path.join(work, "stages.tsv")):
        if len(row) >= 4:
            if row[0] not in stages:
                order.append(row[0])
            stages[row[0]] = {"status": row[1], "secs": row[2], "note": row[3], "figures": ""}

    failed = []

    def verdict(name, ok, text):
        st = stages.setdefault(name, {"status": "ok", "secs": "0", "note": "", "figures": ""})
        if name not in order:
            order.append(name)
        st["figures"] = text
        if not ok and st["status"] == "ok":
            st["status"] = "failed"

    details = []

    # the test stages: count the results, name the failures
    for name in ("conformance", "sim-vs-gpu", "train-tests"):
        if name not in stages or stages[name]["status"] == "skipped":
            continue
        text = log(work, name)
        passed = re.findall(r"^\s*--- PASS: (\S+)", text, re.M)
        fails = re.findall(r"^\s*--- FAIL: (\S+)", text, re.M)
        skips = re.findall(r"^\s*--- SKIP: (\S+)", text, re.M)
        fig = f"{len(passed)} passed, {len(fails)} failed, {len(skips)} skipped"
        if fails:
            fig += ": " + ", ".join(fails[:8])
        top_skips = [s for s in skips if "/" not in s or s.lower().endswith("/gpu")]
        verdict(name, not fails and not (top_skips and not dry) and (passed or dry), fig)
        if name == "sim-vs-gpu":
            lines = re.findall(r"agree\.go:\d+: (.*)", text)
            if lines:
                details.append(("The simulator against " + ("itself with another seed (dry run)" if dry else "the GPU"),
                                "\n".join("    " + l for l in lines)))
        if name == "conformance":
            bf = re.findall(r"(?:relative error|sm_\d+|GPU present).*", text)
            if bf:
                details.append(("Conformance notes", "\n".join("    " + l for l in bf[:40])))

    # the loss curves, GPU (dry: cuda-sim) against CPU
    g = read_metrics(os.path.join(work, "shakespeare-gpu", "metrics.jsonl"))
    c = read_metrics(os.path.join(work, "shakespeare-cpu", "metrics.jsonl"))
    if "shakespeare-gpu" in stages and stages["shakespeare-gpu"]["status"] == "ok" and stages.get("shakespeare-cpu", {}).get("status") == "ok":
        ok, text = compare_curves(g, c, 0.02, 10 if not dry else 5)
        verdict("shakespeare-gpu", ok, ("cuda-sim against cpu: " if dry else "GPU (bf16 matmuls) against CPU (float32): ") + text)
        gt, ct = tokens_per_s(g), tokens_per_s(c)
        if gt and ct:
            details.append(("Loss-curve runs", f"    {'cuda-sim' if dry else 'GPU'}: {gt:,.0f} tokens/s; CPU: {ct:,.0f} tokens/s (medians after step 5)"))
    elif "shakespeare-gpu" in stages and stages["shakespeare-gpu"]["status"] != "skipped":
        verdict("shakespeare-gpu", False, "not compared: a run did not finish")

    # GPT-2 124M
    bench = {}
    t = log(work, "gpt2-ours")
    m = re.search(r"BenchmarkGPT2Step\S*\s+\d+\s+([\d.]+) ns/op.*?([\d.e+]+) MFU%.*?([\d.e+]+) tokens/s", t)
    if not m:
        m2 = re.search(r"BenchmarkGPT2Step\S*\s+\d+\s+([\d.]+) ns/op", t)
        tok = re.search(r"([\d.e+]+) tokens/s", t)
        mfu = re.search(r"([\d.e+]+) MFU%", t)
        if m2 and tok and mfu:
            bench["ours"] = (float(tok.group(1)), float(mfu.group(1)) / 100, float(m2.group(1)) / 1e6)
    else:
        bench["ours"] = (float(m.group(3)), float(m.group(2)) / 100, float(m.group(1)) / 1e6)
    if stages.get("gpt2-ours", {}).get("status") == "ok":
        verdict("gpt2-ours", "ours" in bench, "{:,.0f} tokens/s, MFU {:.1f}%, {:.1f} ms/step".format(bench["ours"][0], 100 * bench["ours"][1], bench["ours"][2])
                if "ours" in bench else "no benchmark line in the output")
    gt = read_metrics(os.path.join(work, "gpt2-train", "metrics.jsonl"))
    if stages.get("gpt2-train", {}).get("status") == "ok":
        ckpt = os.path.isdir(os.path.join(work, "gpt2-train", "checkpoints"))
        vl = [x["val_loss"] for x in gt or [] if x.get("val_loss") is not None]
        rates = [x["tokens_per_s"] for x in gt or [] if x.get("tokens_per_s")]
        if not rates:
            verdict("gpt2-train", False, "no steps with tokens_per_s in metrics.jsonl")
        else:
            tps = tokens_per_s(gt) if len(gt) > 5 else statistics.median(rates)
            text = "{:,.0f} tokens/s through bin/train (median of steps {}-{})".format(tps, 6 if len(gt) > 5 else 1, len(gt))
            if "ours" in bench and not dry:
                text += ", {:.0%} of BenchmarkGPT2Step's".format(tps / bench["ours"][0])
            if gt[-1].get("mfu"):
                text += ", MFU {:.1f}% by the trainer's count".format(100 * gt[-1]["mfu"])
            text += "; loss {:.3f} at step {}".format(gt[-1]["loss"], gt[-1]["step"])
            if vl:
                text += ", val loss {:.3f}".format(vl[-1])
            text += "; checkpoint written" if ckpt else "; **no checkpoint**"
            if not dry:
                b = int(facts.get("batch", "16"))
                bench["train"] = (tps, gt[-1].get("mfu") or 0.0, 1000.0 * b * 1024 / tps)
            verdict("gpt2-train", ckpt and bool(vl), text + ("" if not dry else " (one layer of width 32, GPT-2's vocabulary, on cuda-sim)"))
    for name in ("gpt2-eager", "gpt2-compile"):
        if stages.get(name, {}).get("status") != "ok":
            continue
        js = [l for l in log(work, name).splitlines() if l.startswith("{")]
        try:
            r = json.loads(js[-1])
            bench[name] = (r["tokens_per_s"], r["mfu"], r["ms_per_step"])
            verdict(name, True, "{:,.0f} tokens/s, MFU {:.1f}%, {:.1f} ms/step (torch {}{})".format(
                r["tokens_per_s"], 100 * r["mfu"], r["ms_per_step"], r.get("torch", "?"), ", tiny model on the CPU" if dry else ""))
        except (IndexError, ValueError, KeyError):
            verdict(name, False, "no JSON result line in the output")
    ptx_ab(work, stages, facts, dry, bench, verdict, details)
    profiles = []
    ours = log(work, "gpt2-ours-profile")
    if ours.strip():
        profiles.append("gptkit (kernels/cuda Profile: GPU time between events around each kernel and GEMM):"
                        f"\n\n```\n{ours.rstrip()}\n```")
    pm = re.search(r"^== profile of one step[^\n]*\n(.*?)^== end of profile", log(work, "gpt2-eager"), re.S | re.M)
    if pm:
        profiles.append(f"PyTorch eager (torch.profiler):\n\n```\n{pm.group(1).rstrip()}\n```")
    if profiles:
        details.append(("Where one GPT-2 step's time goes (one more step each, after the timed ones)", "\n\n".join(profiles)))
    if "ours" in bench and ("gpt2-eager" in bench or "gpt2-compile" in bench):
        rows = ["| | tokens/s | MFU | ms/step |", "|---|---|---|---|"]
        for k, label in (("ours", "gptkit (BenchmarkGPT2Step)"), ("train", "gptkit (bin/train, configs/gpt2-124m.yaml)"),
                         ("gpt2-eager", "PyTorch eager"), ("gpt2-compile", "PyTorch torch.compile")):
            if k in bench:
                tps, mfu, ms = bench[k]
                rows.append(f"| {label} | {tps:,.0f} | {100 * mfu:.1f}% | {ms:.1f} |")
        details.append(("GPT-2 124M, bf16, B=%s, T=1024, on the same card in the same run" % facts.get("batch", "16"), "\n".join(rows)))

    # 2 ranks against 1
    d1 = read_metrics(os.path.join(work, "dp1", "metrics.jsonl"))
    d2 = read_metrics(os.path.join(work, "dp2", "metrics.jsonl"))
    if stages.get("dp1", {}).get("status") == "ok" and stages.get("dp2", {}).get("status") == "ok":
        tol = DP2_TOL_DRY if dry else DP2_TOL_GPU
        ok = bool(d1 and d2) and len(d1) == len(d2) and all(rel(x["loss"], y["loss"]) <= tol for x, y in zip(d2, d1))
        worst = max((rel(x["loss"], y["loss"]) for x, y in zip(d2, d1)), default=float("nan")) if d1 and d2 else float("nan")
        t1, t2 = tokens_per_s(d1), tokens_per_s(d2)
        speed = f"; tokens/s {t2:,.0f} on 2 against {t1:,.0f} on 1 ({t2 / t1:.2f}x)" if t1 and t2 else ""
        how = "2 ranks over the simulated NCCL against 1 (cuda-sim)" if dry else "2 GPUs over NCCL against 1 (fp32 matmuls)"
        verdict("dp2", ok, f"{how}: largest loss difference {worst:.2g} (tolerance {tol:g}){speed}")

    if "shakespeare-cpu" in order and "shakespeare-gpu" in order:
        order.remove("shakespeare-cpu")
        order.insert(order.index("shakespeare-gpu") + 1, "shakespeare-cpu")

    # the report
    mode = "dry run on a machine without a GPU: cuda-sim stands in for the GPU" if dry else "on the GPU"
    L = []
    L.append(f"# GPU check, {facts.get('date', '?')}")
    L.append("")
    L.append(f"Mode: {mode}. Build: {facts.get('build', '?')}.")
    L.append("")
    L.append(f"- GPUs: {facts.get('gpus', '?')}")
    if facts.get("cuda"):
        L.append(f"- driver: {facts['cuda']}")
    L.append(f"- host: {facts.get('host', '?')}")
    L.append(f"- peak for MFU: {facts.get('peak', '?')}")
    L.append(f"- python: {facts.get('python', '?')}")
    for k in sorted(facts):
        if k.startswith("lib "):
            L.append(f"- {k[4:]}: {facts[k]}")
    if "elapsed" in facts:
        L.append(f"- the check took {facts['elapsed']} s")
    else:
        L.append("- **incomplete**: written after a stage of a check that had not finished (check.sh rewrites"
                 " it after every stage, so a stopped check leaves the stages it did)")
    if facts.get("kernel"):
        L.append(f"- kernel: {facts['kernel']}")
    if facts.get("clocks"):
        L.append(f"- before the timed stages: {facts['clocks']}")
    L.append("")
    L.append("| stage | result | seconds | figures |")
    L.append("|---|---|---|---|")
    for name in order:
        st = stages[name]
        status = st["status"]
        if status in ("failed", "timeout"):
            failed.append(name)
            last = [l.strip() for l in log(work, name).splitlines() if l.strip()]
            if not st["figures"] and last:
                st["figures"] = "output ends: " + last[-1][:300]
        fig = "; ".join(x for x in (st["figures"], st["note"]) if x)
        L.append(f"| {name} | {status} | {st['secs']} | {fig.replace('|', '/')} |")
    L.append("")
    summary = list(L)
    for title, body in details:
        L.append(f"## {title}")
        L.append("")
        L.append(body)
        L.append("")
    if failed:
        L.append("**Failed:** " + ", ".join(failed) + " (their output is in gpu-check-logs.tar.gz, logs/STAGE.log).")
    else:
        L.append("Every stage passed or did not apply here.")
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        f.write("\n".join(L) + "\n")
    if a.summary:
        # the head and the stage table again, for the end of a long output (a tool
        # that keeps only the output's tail keeps these)
        with open(a.summary, "w") as f:
            f.write("\n".join(summary) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
