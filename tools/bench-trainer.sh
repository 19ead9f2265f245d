#!/usr/bin/env bash
# The trainer's speed against PyTorch on the CPU, on this machine, in one run: gptkit's
# BenchmarkTrainStep (train/bench_test.go: sub-benchmarks baby and 124m) and the PyTorch
# peer tools/bench_torch.py (a nanoGPT-equivalent GPT in torch with OpenBLAS), at the same
# thread counts, as a markdown table on stdout (also in .cache/bench/trainer.md).
#
#   baby   4 layers, 4 heads, 128 wide, block 64, batch 12, vocab 65 (padded): a whole
#          optimizer step (forward, backward, clip, AdamW), 768 tokens.
#   124m   GPT-2 124M shape, B=1, T=1024, vocab 50304: a whole optimizer step; PyTorch's
#          forward+backward alone is listed too (124m-fwdbwd).
#
# tokens/cpu-s (tokens per second of CPU time the process used) is the robust figure on a
# shared machine; tokens/s is wall time. Debian's python3-torch calls whatever
# libblas.so.3 update-alternatives selects: bench_torch.py refuses to report unless it is
# OpenBLAS (libopenblas0-openmp), never the reference BLAS.
#
# Time: 2-6 minutes with the defaults on 2 cores (a 124M step is 5-25 s on each side; each side
# runs 1 unmeasured + BENCH_GPT2_STEPS measured steps per thread count, Go's benchmark
# framework one more round of N=1 first).
#
# Environment:
#   BENCH_THREADS      thread counts (go test -cpu; torch.set_num_threads), default 1,2
#   BENCH_CONFIGS      baby,124m (default) or one of them
#   BENCH_BABY_STEPS   measured baby steps per side (default 30)
#   BENCH_GPT2_STEPS   measured 124M steps per side (default 2)
#   PYTHON             the python with torch (default /usr/bin/python3, Debian's)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
die() { echo "bench-trainer: $*" >&2; exit 1; }
say() { echo "== bench-trainer: $*" >&2; }

BENCH_THREADS=${BENCH_THREADS:-1,2}
BENCH_CONFIGS=${BENCH_CONFIGS:-baby,124m}
BENCH_BABY_STEPS=${BENCH_BABY_STEPS:-30}
BENCH_GPT2_STEPS=${BENCH_GPT2_STEPS:-2}
PYTHON=${PYTHON:-/usr/bin/python3}

command -v go >/dev/null || die "go is not on PATH"
"$PYTHON" -c 'import torch' 2>/dev/null || die "$PYTHON cannot import torch (apt-get install python3-torch libopenblas0-openmp)"
out=$root/.cache/bench
mkdir -p "$out"
go_out=$out/trainer-go.txt
torch_out=$out/trainer-torch.jsonl
: >"$go_out"

for cfg in ${BENCH_CONFIGS//,/ }; do
  case $cfg in
    baby) benchtime=${BENCH_BABY_STEPS}x ;;
    124m) benchtime=${BENCH_GPT2_STEPS}x ;;
    *) die "unknown config $cfg in BENCH_CONFIGS (want baby and/or 124m)" ;;
  esac
  say "gptkit $cfg: go test ./train -run '^\$' -bench 'BenchmarkTrainStep/$cfg\$' -benchtime $benchtime -cpu $BENCH_THREADS"
  go test ./train -run '^$' -bench "BenchmarkTrainStep/$cfg\$" -benchtime "$benchtime" -cpu "$BENCH_THREADS" \
    -count 1 -timeout 60m | tee -a "$go_out" >&2
done

say "PyTorch: $PYTHON tools/bench_torch.py --configs $BENCH_CONFIGS --threads $BENCH_THREADS"
"$PYTHON" tools/bench_torch.py --configs "$BENCH_CONFIGS" --threads "$BENCH_THREADS" \
  --baby-steps "$BENCH_BABY_STEPS" --gpt2-steps "$BENCH_GPT2_STEPS" >"$torch_out"

python3 - "$go_out" "$torch_out" <<'PY' | tee "$out/trainer.md"
import json, re, sys

go = {}  # (config, threads) -> metrics
for line in open(sys.argv[1]):
    m = re.match(r"BenchmarkTrainStep/(\w+?)(?:-(\d+))?\s+\d+\s+(.*)", line)
    if not m:
        continue
    cfg, threads = m.group(1), int(m.group(2) or 1)
    metrics = {unit: float(v) for v, unit in re.findall(r"([\d.e+]+) (\S+)", m.group(3))}
    go[(cfg, threads)] = metrics

torch = {}
blas = ""
for line in open(sys.argv[2]):
    r = json.loads(line)
    torch[(r["config"], r["threads"])] = r
    blas = r["blas"]

def num(x, digits=0):
    return "n/a" if x is None else f"{x:,.{digits}f}"

keys = sorted(set(go) | set(torch), key=lambda k: ({"baby": 0, "124m": 1, "124m-fwdbwd": 2}.get(k[0], 9), k[1]))
print("| config | threads | gptkit tokens/s | PyTorch tokens/s | gptkit tokens/cpu-s | PyTorch tokens/cpu-s | gptkit / PyTorch (cpu-s) |")
print("|---|---|---|---|---|---|---|")
for k in keys:
    g, t = go.get(k, {}), torch.get(k, {})
    gc, tc = g.get("tokens/cpu-s"), t.get("tokens_per_cpu_s")
    ratio = f"{gc / tc:.2f}x" if gc and tc else "n/a"
    digits = 0 if k[0] == "baby" else 1
    print(f"| {k[0]} | {k[1]} | {num(g.get('tokens/s'), digits)} | {num(t.get('tokens_per_s'), digits)} | "
          f"{num(gc, digits)} | {num(tc, digits)} | {ratio} |")
print()
print(f"PyTorch {next(iter(torch.values()))['torch'] if torch else '?'} with {blas}; "
      "medians of the measured steps (PyTorch) and means (go test). 124m-fwdbwd is PyTorch's forward+backward alone.")
PY
