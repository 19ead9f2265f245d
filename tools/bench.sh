#!/usr/bin/env bash
# What `make bench` runs: the tokenizer's speed goals with the peers measured in the same run
# (a markdown table on stdout and in .cache/bench/report.md), then the data, loader,
# trainer and data-parallel benchmarks appended to the report.
#
#   1. the corpora, once, in .cache/bench: english.txt (tinyshakespeare repeated to
#      BENCH_ENGLISH_MB, default 50 MiB) and mixed.txt (tools/make-mixed-corpus.sh: ~80 MB of
#      docs, man pages, prose and Go source, plus the parity corpus's many scripts),
#      cjk.txt (tools/cjkcorpus: 4 MiB of synthetic Chinese-like text, whose pre-tokens are
#      clauses, not words), and their first BENCH_HF_MB MiB (default 8, cut at a line end)
#      for HF tokenizers, which is ~100× slower than the rest;
#   2. the peers (tools/bench-peers.js): tiktoken-rs (native) and tiktoken (WASM) with gpt2,
#      cl100k_base and o200k_base on english, mixed and cjk, HF tokenizers with gpt2 and
#      neox-20b on the -hf prefixes; one core each, per CPU-second, one encode call per ~1 MB piece;
#   3. the paired rounds: tiktoken-rs with gpt2 and cl100k_base on english and mixed, each
#      job back to back with ours on the same file, BENCH_PAIRED_ROUNDS times (the goals
#      against tiktoken-rs are judged on the median of the rounds' ratios);
#   4. ours on the same files (tokenize BenchmarkEncode -cpu 1; the same pieces, and an
#      ids hash to show the ids are the same), the adversarial inputs, EncodeBatch on 2
#      workers, loading (in process and as a fresh process), the command line against the
#      library on BENCH_CLI_MB (default 100) MB, tokenize run end to end against the
#      tokenizer on the mixed corpus as .jsonl/.zst/.gz, and the decompressors (gzip's with
#      two C peers: libdeflate through tools/libdeflate_gunzip.py, Debian's libdeflate0,
#      and ISA-L's igzip command, Debian's isal);
#   5. tools/benchreport: the table, PASS/FAIL per goal.
#
# Environment:
#   SHARED            the shared directory (default ../shared beside the repository)
#   BENCH_ENGLISH_MB  size of the English corpus (MiB, default 50)   BENCH_HF_MB  HF's prefix (MiB, default 8)
#   BENCH_TIME        go test -benchtime (default 2s)      BENCH_COUNT  go test -count (default 3)
#   BENCH_RUNS        bench-peers.js --runs, timed passes after the warm one (default 3)
#   BENCH_ADV_MAX     give up on an adversarial input projected to take longer than this per 1 MB encode (default 2m)
#   BENCH_REUSE_PEERS 1: reuse .cache/bench/peers.json from an earlier run on the same files (the report says so;
#                     for iterating on the encoder -- the goals are judged on peers measured in the same run)
#   BENCH_CLI_MB      MB of text for the command line against the library (default 100)
#   BENCH_PAIRED_ROUNDS  rounds of tiktoken-rs and ours back to back for the goals against tiktoken-rs (default 3;
#                     0: those jobs run with the other peers and the goals compare figures taken minutes apart)
#   BENCH_STRICT      1: exit non-zero when a goal FAILs or was not measured (default: report only)
#   BENCH_GO_TIMEOUT  go test -timeout (default 60m)
#   BENCH_DATA, BENCH_LOADER, BENCH_TRAINER, BENCH_DIST: 0 skips that part
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
die() { echo "bench: $*" >&2; exit 1; }
say() { echo "== bench: $*" >&2; }

SHARED=${SHARED:-$root/../shared}
[ -d "$SHARED" ] || die "shared directory $SHARED not found (set SHARED=/path/to/shared)"
SHARED=$(cd "$SHARED" && pwd)   # before the cd below: a relative SHARED is relative to the caller
export SHARED
cd "$root"
out=$root/.cache/bench
mkdir -p "$out"
command -v go >/dev/null || die "go is not on PATH"
for f in tools/make-bench-corpus.sh corpora/tinyshakespeare.txt tokenizers/gpt2/tokenizer.json tokenizers/neox-20b/tokenizer.json; do
  [ -f "$SHARED/$f" ] || die "missing $SHARED/$f"
done

BENCH_ENGLISH_MB=${BENCH_ENGLISH_MB:-50}
BENCH_HF_MB=${BENCH_HF_MB:-8}
BENCH_TIME=${BENCH_TIME:-2s}
BENCH_COUNT=${BENCH_COUNT:-3}
BENCH_RUNS=${BENCH_RUNS:-3}
BENCH_CLI_MB=${BENCH_CLI_MB:-100}
BENCH_PAIRED_ROUNDS=${BENCH_PAIRED_ROUNDS:-3}
BENCH_GO_TIMEOUT=${BENCH_GO_TIMEOUT:-60m}
loadavg_start=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo "?")
start=$(date +%s)

# 1. The corpora, once.
english=$out/english.txt mixed=$out/mixed.txt cjk=$out/cjk.txt
if [ ! -s "$english" ] || [ "$(stat -c %s "$english")" -lt $((BENCH_ENGLISH_MB << 20)) ]; then
  say "building $english"
  : > "$english.tmp"
  while [ "$(stat -c %s "$english.tmp")" -lt $((BENCH_ENGLISH_MB << 20)) ]; do cat "$SHARED/corpora/tinyshakespeare.txt" >> "$english.tmp"; done
  mv "$english.tmp" "$english"
fi
if [ ! -s "$mixed" ]; then
  say "building $mixed (about a minute)"
  bash tools/make-mixed-corpus.sh "$mixed" 80
fi
if [ ! -s "$cjk" ]; then
  say "building $cjk"
  go run ./tools/cjkcorpus -o "$cjk" -mb 4
fi
prefix() { # prefix IN OUT MiB: the first MiB of IN, cut at a line end
  if [ ! -s "$2" ] || [ "$(cat "$2.stamp" 2>/dev/null)" != "$(stat -c %s:%Y "$1") $3" ]; then
    head -c $(($3 << 20)) "$1" | sed '$d' > "$2.tmp" && mv "$2.tmp" "$2" && stat -c %s:%Y "$1" | sed "s/\$/ $3/" > "$2.stamp"
  fi
}
prefix "$english" "$out/english-hf.txt" "$BENCH_HF_MB"
prefix "$mixed" "$out/mixed-hf.txt" "$BENCH_HF_MB"
prefix "$cjk" "$out/cjk-hf.txt" "$BENCH_HF_MB"
inputs="english=$english,mixed=$mixed,cjk=$cjk,english-hf=$out/english-hf.txt,mixed-hf=$out/mixed-hf.txt,cjk-hf=$out/cjk-hf.txt"
say "inputs: $inputs (mixed sha256 $(sha256sum "$mixed" | cut -c1-16))"

# 2. The peers.
peers_json=$out/peers.json
jobs=()
for f in "$english" "$mixed" "$cjk"; do
  for m in gpt2 cl100k_base o200k_base; do
    # The jobs of the goals against tiktoken-rs run in the paired rounds (step 3) instead.
    if [ "$f" = "$cjk" ] || [ "$m" = o200k_base ] || [ "$BENCH_PAIRED_ROUNDS" -eq 0 ]; then jobs+=(--job "tiktoken-rs:$m:$f"); fi
    jobs+=(--job "tiktoken:$m:$f")
  done
done
for f in "$out/english-hf.txt" "$out/mixed-hf.txt" "$out/cjk-hf.txt"; do
  for m in gpt2 neox-20b; do jobs+=(--job "hf:$m:$f"); done
done
peers_stamp="$(sha256sum "$english" "$mixed" "$cjk" "$out/english-hf.txt" "$out/mixed-hf.txt" "$out/cjk-hf.txt" | cut -c1-16 | tr '\n' ' ') runs=$BENCH_RUNS jobs=$(echo "${jobs[*]}" | sha256sum | cut -c1-16)"
peers_cmd="NODE_PATH=.cache/peers/node_modules node tools/bench-peers.js --runs $BENCH_RUNS --tokdir \$SHARED/tokenizers --json $peers_json ${jobs[*]}"
note=""
if [ "${BENCH_REUSE_PEERS:-}" = 1 ] && [ -s "$peers_json" ] && [ "$(cat "$peers_json.stamp" 2>/dev/null)" = "$peers_stamp" ]; then
  note="The peers' figures were REUSED from an earlier run ($(date -u -r "$peers_json" '+%Y-%m-%d %H:%M UTC'), BENCH_REUSE_PEERS=1), not measured in this run."
  say "$note"
else
  NODE_PATH=$(bash "$root/tools/install-peers.sh") || die "installing the peers failed (tools/install-peers.sh needs node and npm)"
  export NODE_PATH
  say "peers (several minutes: HF encodes ~1 MB/s): ${jobs[*]}"
  rm -f "$peers_json" "$peers_json.stamp"
  node tools/bench-peers.js --runs "$BENCH_RUNS" --tokdir "$SHARED/tokenizers" --json "$peers_json.tmp" "${jobs[@]}" 2>&1 | tee "$out/peers.log"
  [ -s "$peers_json.tmp" ] || die "bench-peers.js wrote no $peers_json.tmp (see above)"
  mv "$peers_json.tmp" "$peers_json"
  echo "$peers_stamp" > "$peers_json.stamp"
fi

# 3. The paired rounds (tools/benchreport/paired.go): tiktoken-rs and our BenchmarkEncode on
# the same file back to back, for GPT-2 and cl100k_base on English and mixed, the peer first
# in odd rounds and ours first in even ones; the goals against tiktoken-rs are judged on the
# median of the rounds' ratios, both sides timed in the same minutes of a drifting VM.
paired=$out/paired
rm -rf "$paired"
mkdir -p "$paired"
paired_cmd="# $BENCH_PAIRED_ROUNDS paired rounds, each: NODE_PATH=.cache/peers/node_modules node tools/bench-peers.js --runs 1 --tokdir \$SHARED/tokenizers --json ... --job tiktoken-rs:MODEL:FILE, and BENCH_INPUTS=... go test ./tokenize -bench '^BenchmarkEncode\$/^MODEL\$/^CORPUS\$' -benchtime $BENCH_TIME -count 1 -cpu 1"
if [ "$BENCH_PAIRED_ROUNDS" -gt 0 ]; then
  [ -n "${NODE_PATH:-}" ] || NODE_PATH=$(bash "$root/tools/install-peers.sh") || die "installing the peers failed (tools/install-peers.sh needs node and npm)"
  export NODE_PATH
  go test -c -o "$paired/tokenize.test" ./tokenize || die "go test -c ./tokenize failed"
  say "paired rounds ($BENCH_PAIRED_ROUNDS): tiktoken-rs and ours, gpt2 and cl100k_base on english and mixed"
  for round in $(seq 1 "$BENCH_PAIRED_ROUNDS"); do
    for m in gpt2 cl100k_base; do
      for corpus in english mixed; do
        f=$english
        [ "$corpus" = mixed ] && f=$mixed
        base=$paired/r$round-$m-$corpus
        # A round whose peer or ours fails is left out of the median (no .json or no
        # figure in the .txt); a job left without rounds is a goal "not measured".
        peer() {
          node tools/bench-peers.js --runs 1 --tokdir "$SHARED/tokenizers" --json "$base.json" --job "tiktoken-rs:$m:$f" 2>&1 | tee -a "$paired/peers.log" >&2 ||
            say "tiktoken-rs failed in round $round (see $paired/peers.log)"
        }
        ours() {
          (cd tokenize && BENCH_INPUTS=$inputs "$paired/tokenize.test" -test.run '^$' -test.bench "^BenchmarkEncode\$/^$m\$/^$corpus\$" \
            -test.benchtime "$BENCH_TIME" -test.count 1 -test.cpu 1 -test.timeout "$BENCH_GO_TIMEOUT") > "$base.txt" 2>&1 || true
          grep '^Benchmark' "$base.txt" >&2 || say "ours failed in round $round ($base.txt)"
        }
        if [ $((round % 2)) -eq 1 ]; then peer; ours; else ours; peer; fi
      done
    done
  done
fi

# 4. Ours, on the same files.
# run_go OUTFILE PKG ARGS...: go test with its output teed; a failing benchmark (e.g. an adversarial input given up
# on as superlinear) is a goal failure the report shows, but no benchmark output at all means it did not build.
run_go() {
  local file=$1 pkg=$2 rc=0
  shift 2
  go test "$pkg" -run '^$' "$@" -timeout "$BENCH_GO_TIMEOUT" 2>&1 | tee "$file" || rc=$?
  if [ "$rc" -ne 0 ]; then
    grep -q '^Benchmark' "$file" || die "go test $pkg failed before any benchmark ran (exit $rc; output in $file)"
    say "go test exited $rc: some benchmarks failed (the report shows which)"
  fi
}
go_cmds=(
  "BENCH_INPUTS=$inputs go test ./tokenize -bench '^(BenchmarkEncode|BenchmarkEncodeAdversarial)\$' -benchtime $BENCH_TIME -count $BENCH_COUNT -cpu 1"
  "go test ./tokenize -bench '^BenchmarkEncodeBatchWorkers\$' -benchtime $BENCH_TIME -count $BENCH_COUNT -cpu 2"
  "go test ./tokenize/spec -bench LoadInProcess -count $BENCH_COUNT"
  "go test ./cmd/tokenize -bench LoadProcess -benchtime 10x -count $BENCH_COUNT"
  "BENCH_CLI_MB=$BENCH_CLI_MB BENCH_CLI_CORPUS=$mixed go test ./cmd/tokenize -bench CLIVsLibrary -benchtime 6x"
  "BENCH_CORPUS=$mixed go test ./pipelines -bench EndToEndVsTokenizer -benchtime 4x"
  "BENCH_CORPUS=$mixed go test ./prep -bench 'Decompress|ReadParallel' -benchtime 3x"
)
say "ours: ${go_cmds[0]}"
BENCH_INPUTS=$inputs run_go "$out/go-encode.txt" ./tokenize -bench '^(BenchmarkEncode|BenchmarkEncodeAdversarial)$' -benchtime "$BENCH_TIME" -count "$BENCH_COUNT" -cpu 1
say "ours: ${go_cmds[1]}"
run_go "$out/go-workers.txt" ./tokenize -bench '^BenchmarkEncodeBatchWorkers$' -benchtime "$BENCH_TIME" -count "$BENCH_COUNT" -cpu 2
say "ours: ${go_cmds[2]}"
run_go "$out/go-load.txt" ./tokenize/spec -bench LoadInProcess -count "$BENCH_COUNT"
say "ours: ${go_cmds[3]}"
run_go "$out/go-loadproc.txt" ./cmd/tokenize -bench LoadProcess -benchtime 10x -count "$BENCH_COUNT"
say "ours: ${go_cmds[4]}"
BENCH_CLI_MB=$BENCH_CLI_MB BENCH_CLI_CORPUS=$mixed run_go "$out/go-cli.txt" ./cmd/tokenize -bench CLIVsLibrary -benchtime 6x
say "ours: ${go_cmds[5]}"
BENCH_CORPUS=$mixed run_go "$out/go-e2e.txt" ./pipelines -bench EndToEndVsTokenizer -benchtime 4x
say "ours: ${go_cmds[6]}"
# The C peers of the gzip decoders (BenchmarkDecompress/gzip/libdeflate-c and
# gzip/isal-igzip-c), where apt can add them.
if ! python3 -c 'import ctypes; ctypes.CDLL("libdeflate.so.0")' 2>/dev/null && command -v apt-get >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libdeflate0 >&2 || say "libdeflate0 not installed: no libdeflate peer for gzip"
fi
if ! command -v igzip >/dev/null && command -v apt-get >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq isal >&2 || say "isal not installed: no ISA-L peer for gzip"
fi
BENCH_CORPUS=$mixed run_go "$out/go-decompress.txt" ./prep -bench 'Decompress|ReadParallel' -benchtime 3x

# 5. The report.
say "done in $(( $(date +%s) - start )) s; report:"
cmds="# make bench (tools/bench.sh) with BENCH_ENGLISH_MB=$BENCH_ENGLISH_MB BENCH_HF_MB=$BENCH_HF_MB BENCH_TIME=$BENCH_TIME BENCH_COUNT=$BENCH_COUNT BENCH_RUNS=$BENCH_RUNS BENCH_PAIRED_ROUNDS=$BENCH_PAIRED_ROUNDS, SHARED=$SHARED
$peers_cmd
$paired_cmd
$(printf '%s\n' "${go_cmds[@]}")"
go run ./tools/benchreport -gobench "$out/go-encode.txt,$out/go-workers.txt,$out/go-load.txt,$out/go-loadproc.txt,$out/go-cli.txt,$out/go-e2e.txt,$out/go-decompress.txt" \
  -peers "$peers_json" -paired "$paired" -inputs "$inputs" -note "$note" -cmd "$cmds" -go-version "$(go version)" -loadavg-start "$loadavg_start" -out "$out/report.md"

# 6. Shards, storage and tokenize run (local disk and MinIO): raw go test output appended to
# the report. BENCH_DATA=0 skips it.
if [ "${BENCH_DATA:-1}" != 0 ]; then
  data_cmd="go test ./shards ./storage ./pipelines -run '^\$' -bench '^(BenchmarkWriter|BenchmarkReaderView|BenchmarkReaderTokens|BenchmarkVerify|BenchmarkWrite|BenchmarkRead|BenchmarkTokenizeRun)\$' -benchtime 3x -count 1"
  say "shards, storage, tokenize run: $data_cmd"
  go test ./shards ./storage ./pipelines -run '^$' \
    -bench '^(BenchmarkWriter|BenchmarkReaderView|BenchmarkReaderTokens|BenchmarkVerify|BenchmarkWrite|BenchmarkRead|BenchmarkTokenizeRun)$' \
    -benchtime 3x -count 1 -timeout "$BENCH_GO_TIMEOUT" 2>&1 | tee "$out/go-bench-data.txt"
  {
    echo
    echo "## Shards, storage and tokenize run"
    echo
    echo "MB/s of token bytes (shards), of object bytes (storage), of JSONL input (tokenize run; write_pct ="
    echo "share of the run's time that writing adds, goal ≤5%). \`$data_cmd\`"
    echo
    echo '```'
    grep -E '^(Benchmark|pkg:)' "$out/go-bench-data.txt"
    echo '```'
  } >> "$out/report.md"
fi

# 7. Loader: tokens/s delivered to one consumer and index build time. BENCH_LOADER=0 skips it.
if [ "${BENCH_LOADER:-1}" != 0 ]; then
  loader_cmd="go test ./loader -run '^\$' -bench 'Deliver|IndexBuild' -benchtime 2s -count 1"
  say "loader: $loader_cmd"
  go test ./loader -run '^$' -bench 'Deliver|IndexBuild' -benchtime 2s -count 1 -timeout "$BENCH_GO_TIMEOUT" 2>&1 | tee "$out/go-bench-loader.txt"
  {
    echo
    echo "## Loader"
    echo
    echo "tokens/s to one consumer from a page-cached dataset (goal ≥ 200M), index build per 100M tokens. \`$loader_cmd\`"
    echo
    echo '```'
    grep -E '^(Benchmark|pkg:)' "$out/go-bench-loader.txt"
    echo '```'
  } >> "$out/report.md"
fi

# 8. The trainer against PyTorch on the CPU (tools/bench-trainer.sh). BENCH_TRAINER=0 skips it.
if [ "${BENCH_TRAINER:-1}" != 0 ]; then
  say "trainer vs PyTorch: bash tools/bench-trainer.sh"
  if bash tools/bench-trainer.sh > "$out/trainer-table.md"; then
    { echo; echo "## Trainer vs PyTorch (CPU)"; echo; echo "\`bash tools/bench-trainer.sh\`"; echo; cat "$out/trainer-table.md"; } >> "$out/report.md"
  else
    say "tools/bench-trainer.sh failed (is python3-torch with libopenblas0-openmp installed?)"
    { echo; echo "## Trainer vs PyTorch (CPU)"; echo; echo "not measured: tools/bench-trainer.sh failed"; } >> "$out/report.md"
  fi
fi

# 9. Data parallelism: ring all-reduce bus bandwidth against memcpy measured in the same run (1, 10,
# 100 MB; 2 and 4 ranks as processes; every transport), the ceilings of this machine (one loopback TCP
# stream; a 2-rank exchange between pinned threads: BenchmarkAllReduceCeiling, matched by the
# BenchmarkAllReduce pattern), and the per-step cost of 2 ranks. BENCH_DIST=0 skips it.
if [ "${BENCH_DIST:-1}" != 0 ]; then
  dist_cmd1="go test ./train/dist -run '^\$' -bench 'BenchmarkAllReduce|BenchmarkLoopbackTCP' -benchtime 30x -count 1"
  dist_cmd2="go test ./train -run '^\$' -bench BenchmarkDataParallelStep -benchtime 30x -count 1"
  say "data parallelism: $dist_cmd1; $dist_cmd2"
  { go test ./train/dist -run '^$' -bench 'BenchmarkAllReduce|BenchmarkLoopbackTCP' -benchtime 30x -count 1 -timeout "$BENCH_GO_TIMEOUT" 2>&1 &&
    go test ./train -run '^$' -bench BenchmarkDataParallelStep -benchtime 30x -count 1 -timeout "$BENCH_GO_TIMEOUT" 2>&1
  } | grep -v '^time=' | tee "$out/go-bench-dist.txt"
  {
    echo
    echo "## Data parallelism"
    echo
    echo "Ring all-reduce: busbw (NCCL's: 2(W-1)/W x bytes / time) and its ratio to memcpy on the same buffer (goal >= 0.5);"
    echo "the per-step overhead of 2 ranks. \`$dist_cmd1\`; \`$dist_cmd2\`"
    echo
    echo '```'
    grep -E '^(Benchmark|pkg:)' "$out/go-bench-dist.txt"
    echo '```'
  } >> "$out/report.md"
fi
