#!/usr/bin/env bash
# The GPU check: everything we want to know from a GPU machine, in one command of
# under 10 minutes, on a machine with the NVIDIA driver, PyTorch's Python (with the
# CUDA libraries as nvidia-* wheels) and no Go. tools/gpu/build.sh makes its inputs on
# a CPU machine first (gpu-check/: bin/train, the test binaries, the PyTorch baseline,
# configs, tiny Shakespeare). docs/gpu.md has the device-tool call:
#
#   bash tools/gpu/check.sh            # on the GPU machine, from the repository root
#   bash tools/gpu/check.sh --dry      # here: the same stages with cuda-sim for the GPU
#
# It finds the CUDA libraries by itself (libcuda from the driver; cuBLAS, cuBLASLt and
# NCCL from the nvidia-* wheels in python3's site-packages, else the loader's path),
# then runs, each stage time-boxed so that one hang cannot eat the run, the measurements
# that decide something first (the timed ones before the CPU run starts beside them):
#
#   conformance   the kernel conformance suite on the GPU (fp32 against kernels/ref, bf16 at GPT-2 shapes),
#                 and every NCCL call the trainer makes, on a communicator of one rank (TestNCCLOneRankGPU)
#   gpt2-ours, ptx-ab   (below)
#   sim-vs-gpu    TestSimVsGPU: every op on the GPU and on the PTX simulator, bit-identical or within 2e-5
#   train-tests   the train package's GPU tests (names with GPU or CUDA: TestResumeBitIdenticalCUDA, a
#                 bf16 run stopped and resumed to the same weights bit for bit)
#   shakespeare   200 steps of configs/shakespeare-char-gpu.yaml on the GPU and on the CPU: losses within 2%
#   gpt2-ours     GPT-2 124M bf16 training step: tokens/s and MFU (BenchmarkGPT2Step), then one
#                 more step's GPU time kernel by kernel (GPTKIT_PROFILE)
#   ptx-ab        GPT-2's step (as gpt2-ours) with the PTX modules of an earlier commit (tools/gpu/build.sh's
#                 PTX_BASE and PTX_MODULES, gpu-check/ptx-base/) in place of this build's, then with this
#                 build's, two rounds in turn: step times and the changed kernels' times side by side (dry: a
#                 bf16 model on cuda-sim, whose losses the two PTX give)
#   gpt2-train    GPT-2 124M through bin/train as a user runs it (configs/gpt2-124m.yaml, tiny
#                 Shakespeare in GPT-2 tokens, batch B, 30 steps, an eval and a checkpoint at the
#                 end): tokens/s from its metrics.jsonl against BenchmarkGPT2Step's
#   gpt2-eager    the same model in PyTorch eager (tools/gpu/bench_nanogpt.py --no-compile), then
#                 one more step under torch.profiler
#   gpt2-compile  ... and with torch.compile
#   dp2           with 2 or more GPUs: 2 ranks over NCCL against 1 GPU (losses, tokens/s)
#
# and writes one markdown report, $OUT/gpu-check.md (OUT defaults to gpu-check-out/),
# beside gpu-check-logs.tar.gz (every stage's output and metrics), both rewritten after
# every stage (a check stopped by the device tool's limit leaves what it did), and prints
# it, then its head and stage table again. The exit status is non-zero when any stage
# failed, timed out, or missed its tolerance. It refuses (status 2) a gpu-check/ built
# from other sources than the tree's (gpu-check/SOURCES.sha256): make gpu-check again, or
# GPU_CHECK_ALLOW_STALE=1.
#
# --dry runs on a machine without a GPU: cuda-sim stands in for the GPU (the simulator's
# conformance, the simulator against itself with another seed, a small model's loss curve
# on cuda-sim against the CPU, 2 ranks over the simulated NCCL against 1), PyTorch runs a
# tiny model on the CPU where it is installed, and the GPU-only stages say they were
# skipped. `make gpu-check-dry` builds and runs it: CI checks the whole path so.
#
# Environment: OUT, GPU_CHECK_BUDGET (seconds for everything, default 380: docs/gpu.md's
# call gives the command 420; --dry 900: no device call bounds it, and on a loaded 2-vCPU
# CI machine it took 338 s), STEPS (200),
# B (GPT-2 batch, 16), PEAK_TFLOPS (the card's dense bf16; default from its name),
# GPU_CHECK_STAGES (a comma-separated list of the stages to run, e.g.
# conformance,gpt2-ours,ptx-ab for a short device budget; the others are reported
# skipped; default all; shakespeare-gpu brings shakespeare-cpu with it).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"

dry=0
pkg=$root/gpu-check
while [ $# -gt 0 ]; do
  case $1 in
    --dry) dry=1 ;;
    --pkg) pkg=$2; shift ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "check.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
case "$pkg" in /*) ;; *) pkg=$root/$pkg ;; esac
[ -x "$pkg/bin/train" ] || { echo "check.sh: no $pkg/bin/train: run tools/gpu/build.sh on a machine with Go first" >&2; exit 2; }
# The folder travels as a file beside the tree and can be older than it.
if [ -f "$pkg/SOURCES.sha256" ] && [ "${GPU_CHECK_ALLOW_STALE:-0}" != 1 ]; then
  if ! stale=$(sha256sum -c --quiet "$pkg/SOURCES.sha256" 2>&1); then
    echo "check.sh: $pkg was built from other sources than this tree's (make gpu-check again, or GPU_CHECK_ALLOW_STALE=1):" >&2
    echo "$stale" | head -10 >&2
    exit 2
  fi
fi

out=${OUT:-$root/gpu-check-out}
budget=${GPU_CHECK_BUDGET:-$([ $dry = 1 ] && echo 900 || echo 380)}
STEPS=${STEPS:-200}
B=${B:-16}
start=$(date +%s)
work=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX")
logs=$work/logs
mkdir -p "$out" "$logs"
stages=$work/stages.tsv
: > "$stages"
echo "mode	$([ $dry = 1 ] && echo dry || echo gpu)" > "$work/facts.tsv"
fact() { printf '%s\t%s\n' "$1" "$2" >> "$work/facts.tsv"; }
now() { date +%s.%N; }
since() { awk -v a="$(now)" -v b="$1" 'BEGIN { printf "%.1f", a - b }'; }
elapsed() { echo $(($(date +%s) - start)); }

# publish: the report and the logs as they stand, into $out (after every stage: the
# device tool returns what $OUT holds even when it stops the command).
publish() {
  "${py:-python3}" "$root/tools/gpu/report.py" --work "$work" --out "$out/gpu-check.md" --steps "$STEPS" \
    --summary "$work/summary.md" > /dev/null 2>&1
  tar -czf "$out/gpu-check-logs.tar.gz" -C "$work" logs facts.tsv stages.tsv \
    $(cd "$work" && ls -d */metrics.jsonl 2>/dev/null) 2>/dev/null
}

# record NAME STATUS SECONDS NOTE: one line of the stage table.
record() {
  printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >> "$stages"
  echo "== $1: $2 (${3}s) $4"
  publish
}

# selected NAME: whether GPU_CHECK_STAGES (default: every stage) names NAME.
selected() { [ -z "${GPU_CHECK_STAGES:-}" ] || [[ ",$GPU_CHECK_STAGES," == *",$1,"* ]]; }

# run NAME CAP CMD...: CMD with a timeout of CAP seconds, or less when the budget is
# short; its output goes to logs/NAME.log. Returns CMD's status.
run() {
  local name=$1 cap=$2
  shift 2
  if ! selected "$name"; then
    record "$name" skipped 0 "not in GPU_CHECK_STAGES"
    return 0
  fi
  local left=$((budget - $(elapsed) - 20))
  if [ "$left" -lt 15 ]; then
    record "$name" timeout 0 "not run: no time left in the ${budget}s budget"
    return 1
  fi
  local t=$((cap < left ? cap : left))
  echo "== $name (at most ${t}s): $*" | cut -c1-300
  local s rc status
  s=$(now)
  # in the background and waited for, so that a signal to the check is handled at once
  # (bash runs a trap only once a foreground command ends, and timeout's process group
  # does not get the terminal's Ctrl-C)
  timeout --kill-after=10 "$t" "$@" > "$logs/$name.log" 2>&1 &
  stage_pid=$! stage_name=$name stage_start=$s
  wait "$stage_pid"
  rc=$?
  stage_pid=""
  case $rc in
    0) status=ok ;;
    124|137) status=timeout ;;
    *) status=failed ;;
  esac
  record "$name" "$status" "$(since "$s")" "$([ $status = timeout ] && echo "stopped after ${t}s")"
  [ $status = ok ] && tail -3 "$logs/$name.log" | sed 's/^/   | /'
  return $rc
}

# skip NAME WHY: a stage that does not apply here.
skip() { record "$1" skipped 0 "$2"; }

# interrupted SIGNAL: Ctrl-C or a SIGTERM stops the stage under way and the CPU half
# running beside it (each a timeout, which passes the signal on), records the stage, and
# finishes the report with what was done. Without it a Ctrl-C went unheeded (the stage's
# timeout has a process group of its own) and the check ran on.
stage_pid="" stage_name="" stage_start="" cpu_pid=""
interrupted() {
  trap '' INT TERM
  local cpu_child=""
  [ -n "$cpu_pid" ] && cpu_child=$(cat "$work/shakespeare-cpu.pid" 2>/dev/null)
  [ -n "$stage_pid" ] && kill -TERM "$stage_pid" 2>/dev/null
  [ -n "$cpu_child" ] && kill -TERM "$cpu_child" 2>/dev/null
  [ -n "$stage_pid" ] && wait "$stage_pid" 2>/dev/null
  [ -n "$cpu_child" ] && wait "$cpu_pid" 2>/dev/null
  [ -n "$stage_pid" ] && record "$stage_name" failed "$(since "$stage_start")" "interrupted ($1)"
  finish "interrupted ($1): the report has the stages done before it"
}
trap 'interrupted SIGINT' INT
trap 'interrupted SIGTERM' TERM

# finish [WHY]: the final report (printed, then its head and stage table again) and the
# logs into $out; exits with report.py's status (non-zero when a stage failed, timed out or
# missed its tolerance). WHY, a check stopped early, is said first and again last.
finish() {
  [ -n "${1:-}" ] && echo "check.sh: $1" >&2
  fact elapsed "$(elapsed)"
  "${py:-python3}" "$root/tools/gpu/report.py" --work "$work" --out "$out/gpu-check.md" --steps "$STEPS" --summary "$work/summary.md"
  local status=$?
  tar -czf "$out/gpu-check-logs.tar.gz" -C "$work" logs facts.tsv stages.tsv \
    $(cd "$work" && ls -d */metrics.jsonl 2>/dev/null) 2>/dev/null
  echo
  cat "$out/gpu-check.md"
  echo
  echo "== the report's head and stage table again (the end of a long output is what a device tool keeps)"
  cat "$work/summary.md" 2>/dev/null
  echo
  echo "check.sh: report $out/gpu-check.md, logs $out/gpu-check-logs.tar.gz; $( [ $status = 0 ] && echo passed || echo FAILED ) in $(elapsed)s"
  [ -n "${1:-}" ] && echo "check.sh: $1" >&2
  rm -rf "$work"
  exit $status
}

echo "== GPU check ($([ $dry = 1 ] && echo 'dry run: cuda-sim stands in for the GPU' || echo 'on the GPU')), budget ${budget}s, work in $work"
fact date "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
fact build "$(head -1 "$pkg/BUILD" 2>/dev/null)"
fact host "$(uname -n), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
fact kernel "$(uname -r)"

# --- the device and the libraries
ngpu=0
if [ $dry = 0 ]; then
  if nvidia-smi --query-gpu=name,driver_version,memory.total,pci.bus_id --format=csv,noheader > "$logs/device.log" 2>&1; then
    ngpu=$(grep -c . "$logs/device.log")
    fact gpus "$(sed 's/$/; /' "$logs/device.log" | tr -d '\n')"
    fact cuda "$(nvidia-smi 2>/dev/null | grep -o 'CUDA Version: [0-9.]*' | head -1)"
    record device ok 0 "$ngpu GPU(s): $(head -1 "$logs/device.log")"
  else
    record device failed 0 "nvidia-smi: $(head -1 "$logs/device.log")"
  fi
else
  fact gpus "none (dry run)"
  record device skipped 0 "dry run: no GPU; cuda-sim stands in"
fi
name=""
if [ "$ngpu" -gt 0 ]; then # (device.log holds nvidia-smi's error otherwise)
  name=$(head -1 "$logs/device.log" | cut -d, -f1)
fi
peak_from="$name's datasheet"
case "$name" in
  *"H100 PCIe"*|*"H100 NVL"*) peak=756 ;;
  *"H200 NVL"*) peak=835 ;;
  *H100*|*H200*|*H800*|*H20*) peak=989 ;;
  *A100*|*A800*) peak=312 ;;
  *L40S*) peak=362 ;;
  "") peak=989 peak_from="no GPU seen: an H100 SXM's, assumed" ;;
  *) peak=989 peak_from="$name is not in check.sh's table: an H100 SXM's, assumed; set PEAK_TFLOPS" ;;
esac
# (It said "989 TFLOP/s dense bf16 (for MFU)" whatever the card, on a dry run too.)
if [ -n "${PEAK_TFLOPS:-}" ]; then
  peak_from="PEAK_TFLOPS"
fi
PEAK_TFLOPS=${PEAK_TFLOPS:-$peak}
fact peak "$PEAK_TFLOPS TFLOP/s dense bf16 ($peak_from)"

# libcuda comes with the driver; cuBLAS, cuBLASLt and NCCL are in PyTorch's
# environment as nvidia-* wheels (nvidia/cu13/lib, nvidia/nccl/lib, ...): their
# directories go on LD_LIBRARY_PATH, which dlopen (purego) searches.
libdirs=()
# python3 with PyTorch (the GPU image's; here perhaps the system's), else any python3
py=""
for p in python3 /usr/bin/python3; do
  command -v "$p" > /dev/null && "$p" -c 'import torch' 2>/dev/null && { py=$(command -v "$p"); break; }
done
[ -z "$py" ] && py=$(command -v python3 || true)
site=""
[ -n "$py" ] && site=$("$py" -c 'import nvidia, os; print(os.path.dirname(list(nvidia.__path__)[0]))' 2>/dev/null || true)
for lib in libcuda.so.1 libcublas.so libcublasLt.so libnccl.so; do
  found=""
  if [ $lib != libcuda.so.1 ] && [ -n "$site" ]; then
    found=$(find "$site/nvidia" "$site/torch/lib" -name "$lib*" 2>/dev/null | sort -V | tail -1)
  fi
  [ -z "$found" ] && found=$(ldconfig -p 2>/dev/null | grep -o "/[^ ]*/$lib[.0-9]*$" | head -1)
  if [ -z "$found" ]; then
    for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/local/cuda/lib64 /usr/local/cuda/compat; do
      found=$(ls "$d/$lib"* 2>/dev/null | sort -V | tail -1)
      [ -n "$found" ] && break
    done
  fi
  fact "lib $lib" "${found:-not found}"
  [ -n "$found" ] && libdirs+=("$(dirname "$found")")
done
if [ ${#libdirs[@]} -gt 0 ]; then
  LD_LIBRARY_PATH=$(printf '%s\n' "${libdirs[@]}" | awk '!seen[$0]++' | paste -sd:)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export LD_LIBRARY_PATH
fi
fact LD_LIBRARY_PATH "${LD_LIBRARY_PATH:-}"
if [ $dry = 0 ]; then
  missing=$(awk -F'\t' '$1 ~ /^lib (libcuda|libcublas)/ && $2 == "not found" { sub(/^lib /, "", $1); print $1 }' "$work/facts.tsv" | paste -sd' ')
  if [ -n "$missing" ]; then record libraries failed 0 "not found: $missing"; else record libraries ok 0 "libcuda, cuBLAS$(grep -q '^lib libnccl.so	/' "$work/facts.tsv" && echo ', NCCL')"; fi
else
  record libraries ok 0 "dry run: looked for them ($(awk -F'\t' '$1 ~ /^lib / && $2 ~ /^\// { n++ } END { print n + 0 }' "$work/facts.tsv") of 4 found)"
fi
# No GPU here at all (nvidia-smi lists none and the driver's libcuda is nowhere): every
# stage would fail, the CPU half of the loss curves taking minutes to do so; stop now,
# saying what to run instead.
if [ $dry = 0 ] && [ "$ngpu" = 0 ] && grep -q '^lib libcuda.so.1	not found' "$work/facts.tsv"; then
  finish "no GPU here: nvidia-smi lists none and there is no libcuda.so.1 (the NVIDIA driver), so every stage would fail; on a machine without a GPU, make gpu-check-dry (check.sh --dry) runs the check with cuda-sim standing in for the GPU; on a GPU machine, install the NVIDIA driver (nvidia-smi must list the GPUs)"
fi

train=$pkg/bin/train
data=$pkg/data/shakespeare
cpus=$(nproc)
export GPTKIT_REQUIRE_GPU=1 # the GPU tests fail rather than skip without one
[ $dry = 1 ] && unset GPTKIT_REQUIRE_GPU

# --- the shared settings
# the loss-curve comparison: 200 steps on the GPU (dry: cuda-sim) against the CPU
if [ $dry = 0 ]; then
  shakes=(--config "$pkg/configs/shakespeare-char-gpu.yaml" --max-steps "$STEPS" --lr-decay-steps "$STEPS"
          --warmup-steps $((STEPS / 10)) --eval-every "$STEPS" --eval-steps 20 --batch-size 16)
  cpu_threads=$((cpus > 4 ? cpus - 2 : cpus))
else
  # a small model: cuda-sim runs every kernel's PTX instruction by instruction
  shakes=(--n-layer 2 --n-head 2 --n-embd 32 --block-size 32 --batch-size 4 --max-steps 20 --lr-decay-steps 20
          --warmup-steps 2 --lr 1e-2 --eval-every 20 --eval-steps 2 --log-every 5)
  cpu_threads=1
fi
shakes+=(--data "$data" --checkpoint-every 0 --dropout 0)
cpu_cap=$((budget > 600 ? budget / 2 : budget > 120 ? 300 : budget / 2))
cpu_pid=""
# GPT-2 124M, bf16 (dry: a one-layer model with GPT-2's vocabulary on cuda-sim)
export GPTKIT_BENCH_B=$B GPTKIT_PEAK_TFLOPS=$PEAK_TFLOPS
gtrain=(--config "$pkg/configs/gpt2-124m.yaml" --data "$pkg/data-gpt2/shakespeare" --grad-accum 1 --log-every 1)
fact batch "$B"
torch_ok=0
[ -n "$py" ] && "$py" -c 'import torch' 2>/dev/null && torch_ok=1
fact python "${py:-none} $([ $torch_ok = 1 ] && "$py" -c 'import torch; print("torch", torch.__version__)' 2>/dev/null)"
# the test binaries run in their package's directory, as go test runs them
kt=(env -C "$root/kernels/cuda" "$pkg/kernels-cuda.test")

# --- the kernels' conformance first: it says whether the libraries load and the kernels are right
if [ $dry = 0 ]; then
  run conformance 150 "${kt[@]}" -test.v -test.count 1 -test.run 'TestOpenHere|TestConformanceFP32|TestBF16VsRef|TestNCCLOneRankGPU'
else
  run conformance 150 "${kt[@]}" -test.v -test.count 1 -test.run 'TestSimConformance$|TestSimDeterministic$|TestNCCLOneRankSim$'
fi

# --- the timed GPT-2 step, ours and against the earlier PTX, with nothing else running
# ptx_ab CMD...: the ptx-ab stage, CMD with the earlier PTX and then this build's (ptx-ab.sh)
base_ptx=$(cd "$pkg/ptx-base" 2>/dev/null && ls -- *.ptx 2>/dev/null | paste -sd' ')
[ -n "$base_ptx" ] && fact ptx_base "$(cut -c1-12 "$pkg/ptx-base/BASE") ($base_ptx)"
ptx_ab() {
  if [ -z "$base_ptx" ]; then
    skip ptx-ab "no earlier PTX in $pkg/ptx-base (tools/gpu/build.sh's PTX_BASE: $(head -c 80 "$pkg/ptx-base/BASE" 2>/dev/null || echo none))"
    return
  fi
  run ptx-ab "$@"
}
if [ $dry = 0 ]; then
  fact clocks "$(timeout 20 nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,temperature.gpu,power.draw,clocks_throttle_reasons.active --format=csv 2>/dev/null | tail -n +2 | paste -sd';')"
  GPTKIT_PROFILE=$logs/gpt2-ours-profile.log run gpt2-ours 150 "${kt[@]}" -test.run '^$' -test.bench 'GPT2Step' -test.benchtime 30x
  PTX_AB_ROUNDS=2 ptx_ab 200 bash "$root/tools/gpu/ptx-ab.sh" "$pkg/ptx-base" "$logs/ptx-ab-profile.log" "" \
    "${kt[@]}" -test.run '^$' -test.bench 'GPT2Step' -test.benchtime 30x
else
  skip gpt2-ours "dry run: GPT-2 124M needs a GPU"
  ptx_ab 120 bash "$root/tools/gpu/ptx-ab.sh" "$pkg/ptx-base" "" "--out $work/ptx-ab-again" \
    "$train" "${gtrain[@]}" --device cuda-sim --dtype bfloat16 --n-layer 1 --n-head 2 --n-embd 32 --block-size 128 \
    --batch-size 1 --max-steps 2 --warmup-steps 1 --lr-decay-steps 2 --eval-every 2 --eval-steps 1 --checkpoint-every 2 \
    --cache-dir "$work/cache-gpt2" --out "$work/ptx-ab"
fi

# --- the CPU half of the loss-curve comparison runs in the background from now on (niced:
# the GPU stages' host threads come first)
if selected shakespeare-gpu; then
  (
    s=$(now)
    timeout --kill-after=10 "$cpu_cap" nice -n 10 "$train" "${shakes[@]}" --device cpu --threads "$cpu_threads" \
      --out "$work/shakespeare-cpu" --cache-dir "$work/cache-cpu" > "$logs/shakespeare-cpu.log" 2>&1 &
    echo $! > "$work/shakespeare-cpu.pid" # (for interrupted)
    wait $!
    echo "$? $(since "$s")" > "$work/shakespeare-cpu.status"
  ) &
  cpu_pid=$!
fi
# cpu_done: the CPU run's end (before torch.compile, whose compiler wants the CPUs)
cpu_done() {
  if [ -z "$cpu_pid" ]; then
    record shakespeare-cpu skipped 0 "not in GPU_CHECK_STAGES (it comes with shakespeare-gpu)"
    return
  fi
  wait "$cpu_pid"
  local cpu_rc=1 cpu_secs=0 st
  read -r cpu_rc cpu_secs < "$work/shakespeare-cpu.status"
  case $cpu_rc in 0) st=ok ;; 124|137) st=timeout ;; *) st=failed ;; esac
  record shakespeare-cpu $st "$cpu_secs" "the CPU half, in the background (threads: $cpu_threads)"
}

# --- the simulator against the GPU, the trainer's GPU tests
if [ $dry = 0 ]; then
  run sim-vs-gpu 150 "${kt[@]}" -test.v -test.count 1 -test.run 'TestSimVsGPU'
else
  run sim-vs-gpu 150 "${kt[@]}" -test.v -test.count 1 -test.run 'TestSimAgreesWithItself$'
fi
gputests=$(timeout 30 "$pkg/train.test" -test.list '.*' 2>/dev/null | grep -E 'GPU|CUDA|Cuda' | paste -sd'|')
if [ -n "$gputests" ]; then
  run train-tests 120 env -C "$root/train" "$pkg/train.test" -test.v -test.count 1 -test.run "^($gputests)\$"
else
  timeout 30 "$pkg/train.test" -test.list '.*' > "$logs/train-tests.log" 2>&1
  skip train-tests "the train package has no GPU tests yet ($(grep -c '^Test' "$logs/train-tests.log") tests listed)"
fi

# --- 200 steps on the GPU (dry: cuda-sim)
if [ $dry = 0 ]; then
  run shakespeare-gpu 180 "$train" "${shakes[@]}" --device cuda --out "$work/shakespeare-gpu" --cache-dir "$work/cache-gpu"
else
  run shakespeare-gpu 180 "$train" "${shakes[@]}" --device cuda-sim --out "$work/shakespeare-gpu" --cache-dir "$work/cache-gpu"
fi

# --- GPT-2 124M through the command, PyTorch eager, torch.compile
if [ $dry = 0 ]; then
  run gpt2-train 150 "$train" "${gtrain[@]}" --device cuda --batch-size "$B" --max-steps 30 --warmup-steps 3 \
    --lr-decay-steps 30 --eval-every 30 --eval-steps 2 --checkpoint-every 30 --out "$work/gpt2-train" --cache-dir "$work/cache-gpt2"
  if [ $torch_ok = 1 ]; then
    run gpt2-eager 120 "$py" "$pkg/bench_nanogpt.py" --batch "$B" --peak-tflops "$PEAK_TFLOPS" --no-compile --profile
    cpu_done
    run gpt2-compile 240 "$py" "$pkg/bench_nanogpt.py" --batch "$B" --peak-tflops "$PEAK_TFLOPS"
  else
    cpu_done
    record gpt2-eager failed 0 "no PyTorch in $py"
    record gpt2-compile failed 0 "no PyTorch in $py"
  fi
else
  run gpt2-train 120 "$train" "${gtrain[@]}" --device cuda-sim --n-layer 1 --n-head 2 --n-embd 32 --block-size 32 \
    --batch-size 2 --max-steps 3 --warmup-steps 1 --lr-decay-steps 3 --eval-every 3 --eval-steps 1 --checkpoint-every 3 \
    --out "$work/gpt2-train" --cache-dir "$work/cache-gpt2"
  if [ $torch_ok = 1 ]; then
    run gpt2-eager 120 "$py" "$pkg/bench_nanogpt.py" --device cpu --tiny --batch 2 --steps 2 --warmup 1 --no-compile --profile
  else
    skip gpt2-eager "dry run: no PyTorch here"
  fi
  skip gpt2-compile "dry run: torch.compile of GPT-2 needs a GPU"
  cpu_done
fi

# --- 2 ranks over NCCL against 1 GPU (float32 with fp32 matmuls, so that the curves compare closely)
if [ $dry = 0 ] && [ "$ngpu" -ge 2 ]; then
  dp=(--config "$pkg/configs/shakespeare-char-gpu.yaml" --data "$data" --max-steps 50 --lr-decay-steps 50 --warmup-steps 5
      --eval-every 0 --eval-steps 1 --checkpoint-every 0 --dropout 0 --dtype float32)
  run dp1 120 env GPTKIT_CUDA_PRECISION=fp32 "$train" "${dp[@]}" --device cuda --batch-size 32 --out "$work/dp1" --cache-dir "$work/cache-dp1"
  run dp2 180 env GPTKIT_CUDA_PRECISION=fp32 "$train" "${dp[@]}" --device cuda --batch-size 16 --nproc-per-node 2 --master-port 29611 \
    --collective-timeout 60s --out "$work/dp2" --cache-dir "$work/cache-dp2"
elif [ $dry = 1 ]; then
  dp=("${shakes[@]}")
  run dp1 120 "$train" "${dp[@]}" --device cuda-sim --out "$work/dp1" --cache-dir "$work/cache-dp1"
  run dp2 180 "$train" "${dp[@]}" --device cuda-sim --batch-size 2 --nproc-per-node 2 --master-port $((29611 + RANDOM % 1000)) \
    --collective-timeout 60s --out "$work/dp2" --cache-dir "$work/cache-dp2"
else
  skip dp1 "one GPU: no data-parallel comparison"
  skip dp2 "one GPU: no data-parallel comparison"
fi


# --- the report
finish
