#!/usr/bin/env bash
# Builds, on this (CPU) machine, everything the GPU check needs into one folder that
# git ignores, so that a GPU machine with no Go can run it (the device tool carries it):
#
#   bash tools/gpu/build.sh [DIR]        # DIR defaults to gpu-check/ in the repository
#
#   DIR/bin/train                 the trainer (-trimpath, stripped)
#   DIR/kernels-cuda.test         go test -c ./kernels/cuda: conformance, TestSimVsGPU, BenchmarkGPT2Step
#   DIR/train.test                go test -c ./train: the trainer's tests that need a GPU, if any
#   DIR/bench_nanogpt.py          the PyTorch baseline (nanoGPT's GPT-2, eager and torch.compile)
#   DIR/configs/*.yaml            the configs the check trains
#   DIR/data/shakespeare          tiny Shakespeare, prepped (character ids)
#   DIR/data-gpt2/shakespeare     tiny Shakespeare in GPT-2 tokens (338,025), for GPT-2 124M
#   DIR/ptx-base/                 the PTX modules of commit PTX_BASE that differ from this build's,
#                                 and BASE (the commit): check.sh's ptx-ab stage times GPT-2's step
#                                 with them (GPTKIT_PTX_DIR) against this build's embedded PTX
#   DIR/BUILD                     commit, date, Go version and sizes
#   DIR/SOURCES.sha256            the sha256 of every tracked source it was built from (Go, PTX, .cu,
#                                 tools/gpu, configs): check.sh refuses a build older than the tree
#   DIR.tgz                       the folder packed (gzip), for the device tool to carry
#
# tools/gpu/check.sh runs it (docs/gpu.md: the device-tool call). The device tool carries
# 64 MiB with the working tree: the folder alone (50 MiB) no longer fits beside the tracked
# files (17 MiB), so the call carries DIR.tgz (about 20 MiB) and unpacks it there. The build
# fails when the tracked files and DIR.tgz come to more than MAX_MIB (62: 2 MiB of margin for
# untracked files), naming the largest files of each; the folder itself does not travel, so
# its size is no limit.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
dir=${1:-$root/gpu-check}
max_mib=${MAX_MIB:-62}
go=${GO:-go}
flags=(-trimpath -ldflags=-s\ -w)

case "$dir" in /*) ;; *) dir=$root/$dir ;; esac
rm -rf "$dir"
mkdir -p "$dir/bin" "$dir/configs"
echo "== build into $dir"
"$go" build "${flags[@]}" -o "$dir/bin/" ./cmd/train
"$go" build "${flags[@]}" -o "$dir/.prep" ./cmd/prep
"$go" test -c "${flags[@]}" -o "$dir/kernels-cuda.test" ./kernels/cuda
"$go" test -c "${flags[@]}" -o "$dir/train.test" ./train
cp tools/gpu/bench_nanogpt.py "$dir/"
cp configs/*.yaml "$dir/configs/"

echo "== tiny Shakespeare (offline: the text is built into prep)"
"$dir/.prep" shakespeare -d "$dir/data" --progress off > /dev/null 2>"$dir/.prep.log" || { cat "$dir/.prep.log" >&2; exit 1; }
echo "== tiny Shakespeare in GPT-2 tokens (for GPT-2 124M through bin/train)"
"$dir/.prep" shakespeare -d "$dir/data-gpt2" --tokenizer gpt2 --progress off > /dev/null 2>"$dir/.prep.log" || { cat "$dir/.prep.log" >&2; exit 1; }
rm -rf "$dir/.prep" "$dir/.prep.log" "$dir"/data*/shakespeare/downloads "$dir"/data*/shakespeare/index-cache

# PTX_BASE: the commit whose kernels the ptx-ab stage runs against this build's; by
# default the one before the flash kernels' double buffering (58d7b9f, not yet timed on
# a GPU: keep it if the step is faster, else revert it). Empty: no ptx-ab stage.
# PTX_MODULES: which modules of it (space-separated names without .ptx; default
# attention, the flash kernels: the classifier's module changed since too, and the
# verdict is to be on one change); empty: every module that differs.
ptx_base=${PTX_BASE-58d7b9f^}
ptx_modules=${PTX_MODULES-attention}
if [ -n "$ptx_base" ]; then
  if base=$(git rev-parse --verify -q "$ptx_base^{commit}" 2>/dev/null); then
    mkdir -p "$dir/ptx-base"
    for f in kernels/cuda/ptx/*.ptx; do
      m=$(basename "$f" .ptx)
      [ -z "$ptx_modules" ] || [[ " $ptx_modules " == *" $m "* ]] || continue
      if git cat-file -e "$base:$f" 2>/dev/null && ! git show "$base:$f" | cmp -s - "$f"; then
        git show "$base:$f" > "$dir/ptx-base/$(basename "$f")"
      fi
    done
    echo "$base $(git log -1 --format=%s "$base" | cut -c1-120)" > "$dir/ptx-base/BASE"
    echo "== PTX of $ptx_base for the ptx-ab stage: $(cd "$dir/ptx-base" && ls *.ptx 2>/dev/null | tr '\n' ' ')"
  else
    echo "== no commit $ptx_base in this clone (shallow?): no ptx-ab stage"
  fi
fi

{
  echo "commit $(git rev-parse HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (with uncommitted changes)')"
  echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -m) with $("$go" version | cut -d' ' -f3)"
  (cd "$dir" && find . -type f ! -name BUILD -printf '%s %p\n' | sort -k2)
} > "$dir/BUILD"

# What it was built from, for check.sh to compare with the tree it runs in (the device
# tool copies the working tree; the folder travels as a file that can be older).
git ls-files -- '*.go' '*.ptx' '*.cu' '*.cuh' 'tools/gpu/*' 'configs/*' go.mod go.sum | xargs -d '\n' sha256sum > "$dir/SOURCES.sha256"

kib=$(du -sk "$dir" | cut -f1)
tar -czf "$dir.tgz" -C "$(dirname "$dir")" "$(basename "$dir")"
tgz=$(stat -c %s "$dir.tgz")
tracked=$(git ls-files -z 2>/dev/null | xargs -0 stat -c %s 2>/dev/null | awk '{ n += $1 } END { print n + 0 }')
echo "== $dir: $((kib / 1024)) MiB; $dir.tgz $((tgz / 1048576)) MiB, with the tracked files $(((tgz + tracked) / 1048576)) MiB"
if [ $((tgz + tracked)) -gt $((max_mib * 1048576)) ]; then
  # What is big: the folder's largest files (they are what DIR.tgz packs), and the
  # tracked files' largest.
  largest() { sort -rn | head -n 5 | awk '{ s = $1; $1 = ""; printf "%s%s %.1f MiB", (NR > 1 ? ", " : ""), substr($0, 2), s / 1048576 }'; }
  echo "build.sh: $dir.tgz ($((tgz / 1048576)) MiB) with the tracked files ($((tracked / 1048576)) MiB) is $(((tgz + tracked) / 1048576)) MiB, more than MAX_MIB=$max_mib (the device tool carries 64 MiB with the working tree, of this build only $dir.tgz)" >&2
  echo "build.sh: the largest in $dir (packed into $dir.tgz): $(cd "$dir" && find . -type f -printf '%s %P\n' | largest)" >&2
  echo "build.sh: the largest tracked files: $(git ls-files -z 2>/dev/null | xargs -0 stat -c '%s %n' 2>/dev/null | largest)" >&2
  exit 1
fi
for p in "$dir" "$dir.tgz"; do
  git check-ignore -q "$p" 2>/dev/null || echo "build.sh: warning: git does not ignore $p (the device tool carries only ignored paths named in carry)" >&2
done
