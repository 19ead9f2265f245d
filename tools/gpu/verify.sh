#!/usr/bin/env bash
# GPU verification of the CUDA backend (kernels/cuda), for a machine with an NVIDIA GPU
# (H100/H200 class), a Go toolchain, and this repository. Nothing here has run in CI:
# CI has no GPU. Run from the repository root:
#
#   bash tools/gpu/verify.sh [TINYSHAKESPEARE.txt]
#
# 1. The kernels conformance suite on the GPU: fp32 matmuls against kernels/ref at
#    the suite's float32 tolerances, determinism, then bf16 matmuls and attention at
#    GPT-2 shapes (‖out−ref‖/‖ref‖ < 1e-2, fresh random inputs, NaN-poisoned outputs).
# 1b. The simulator against the GPU (TestSimVsGPU): every op on the same inputs on both, each
#    output bit-identical or within the suite's float32 tolerance; the per-op figures go to
#    $OUT/sim-vs-gpu.txt and belong in docs/cuda-sim.md's table ("not yet measured" until then).
# 2. 200 steps of configs/shakespeare-char-gpu.yaml (batch 16, no dropout) on the GPU and on the CPU from
#    the same seed: the losses must agree within 2% (bf16 matmuls vs float32).
# 3. GPT-2 124M: our step (BenchmarkGPT2Step: tokens/s, MFU) and, when PyTorch with
#    CUDA is installed, tools/gpu/bench_nanogpt.py (nanoGPT's model, bf16 autocast,
#    flash attention, fused AdamW, torch.compile) at the same batch.
#
# Needs libcuda.so.1, libcublas.so.{13,12,11} (and libnccl.so.2 for multi-GPU) on the
# loader's path: with pip wheels, e.g.
#   export LD_LIBRARY_PATH=$(python3 -c 'import nvidia.cublas, os; print(os.path.dirname(nvidia.cublas.__file__))')/lib:$LD_LIBRARY_PATH
# Environment: OUT (results, default out/gpu-verify), B (benchmark batch, default 16),
# PEAK_TFLOPS (default 989: H100/H200 SXM dense bf16), STEPS (default 200).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
out=${OUT:-out/gpu-verify}
B=${B:-16}
PEAK_TFLOPS=${PEAK_TFLOPS:-989}
STEPS=${STEPS:-200}
text=${1:-${SHARED:-../shared}/corpora/tinyshakespeare.txt}
mkdir -p "$out"
exec > >(tee "$out/verify.log") 2>&1

echo "== device"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv || true
go build -o bin/ ./cmd/...

echo "== 1. conformance (GPTKIT_REQUIRE_GPU: fail, not skip, without a GPU)"
GPTKIT_REQUIRE_GPU=1 go test -count=1 -v -run 'Conformance|BF16|Open' ./kernels/cuda 2>&1 | tee "$out/conformance.txt" \
  | grep -E '^(--- |ok|FAIL|PASS)|relative error|sm_' || true
grep -q '^ok' "$out/conformance.txt" || { echo "verify: conformance failed (see $out/conformance.txt)"; exit 1; }

echo "== 1b. the simulator vs the GPU (every op, bit-identical or within 2e-5)"
GPTKIT_REQUIRE_GPU=1 go test -count=1 -v -run 'TestSimVsGPU' ./kernels/cuda 2>&1 | tee "$out/sim-vs-gpu.txt" \
  | grep -E 'agree.go|^(--- |ok|FAIL)' || true
grep -q '^ok' "$out/sim-vs-gpu.txt" || { echo "verify: the simulator and the GPU disagree (see $out/sim-vs-gpu.txt)"; exit 1; }

echo "== 2. ${STEPS} steps, GPU vs CPU, shakespeare-char-gpu"
if [ ! -f "$text" ]; then echo "verify: no tiny Shakespeare at $text (pass its path)"; exit 1; fi
data="$out/data"
mkdir -p "$data/shakespeare/downloads"
cp "$text" "$data/shakespeare/downloads/input.txt"
bin/prep shakespeare -d "$data" --progress off > /dev/null
common=(--config configs/shakespeare-char-gpu.yaml --data "$data/shakespeare" --max-steps "$STEPS"
        --lr-decay-steps "$STEPS" --warmup-steps $((STEPS / 10)) --eval-every "$STEPS" --eval-steps 20
        --checkpoint-every 0 --dropout 0 --batch-size 16)  # batch 16: the CPU run stays a few minutes
s0=$(date +%s.%N)
bin/train "${common[@]}" --device cuda --out "$out/shakes-gpu" > "$out/shakes-gpu.json"
s1=$(date +%s.%N)
bin/train "${common[@]}" --device cpu --out "$out/shakes-cpu" > "$out/shakes-cpu.json"
s2=$(date +%s.%N)
python3 - "$out/shakes-gpu.json" "$out/shakes-cpu.json" "$s0" "$s1" "$s2" <<'PY'
import json, sys
g, c = (json.load(open(p)) for p in sys.argv[1:3])
s0, s1, s2 = map(float, sys.argv[3:6])
print(f"GPU: loss {g['loss']:.4f} val {g['val_loss']:.4f} in {s1-s0:.1f}s")
print(f"CPU: loss {c['loss']:.4f} val {c['val_loss']:.4f} in {s2-s1:.1f}s")
rel = abs(g['val_loss'] - c['val_loss']) / c['val_loss']
print(f"val loss relative difference {rel:.4f} (want <= 0.02)")
sys.exit(0 if rel <= 0.02 else 1)
PY

echo "== 3. GPT-2 124M, B=${B} T=1024"
GPTKIT_BENCH_B=$B GPTKIT_PEAK_TFLOPS=$PEAK_TFLOPS GPTKIT_REQUIRE_GPU=1 \
  go test -count=1 ./kernels/cuda -run '^$' -bench GPT2Step -benchtime 20x | tee "$out/bench-gptkit.txt"
if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  python3 tools/gpu/bench_nanogpt.py --batch "$B" --peak-tflops "$PEAK_TFLOPS" | tee "$out/bench-pytorch.txt"
else
  echo "PyTorch with CUDA is not installed: skipping the nanoGPT comparison (pip install torch)"
fi
echo "verify: done; results in $out"
