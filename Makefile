# gptkit: raw corpora -> tokenized shards -> trained GPT.
GO      ?= go
SHARED  ?= $(abspath ../shared)
BIN     := bin
CMDS    := $(notdir $(wildcard cmd/*))
export SHARED

.PHONY: all build test test-noasm test-mixed-precision race fuzz bench bench-trainer lint demo generate check-generated ptx check-ptx cuda gpu-check gpu-check-dry ci clean

all: build

build:
	@mkdir -p $(BIN)
	$(GO) build -trimpath -o $(BIN)/ ./cmd/...

# cmd/train's tests (many trainings on the simulated GPU, several launched jobs) take ~5
# minutes on 2 idle cores: go test's default 10-minute limit per package is too tight on a
# loaded machine.
test: build
	$(GO) test -count=1 -timeout 30m ./...

# The kernels (and the ring's reductions, the tokenizer's byte classifier, inflate's unaligned loads) again with the pure-Go fallbacks instead of the assembly.
test-noasm:
	$(GO) test -count=1 -tags noasm ./kernels/... ./train/dist/ ./tokenize/ ./internal/inflate/

# The mixed-precision step end to end on the CPU: the baby GPT on tiny Shakespeare, 2000 steps
# in float32 and in bfloat16 (val loss <= 1.90, within 2% of float32 at every evaluation); ~3 min.
test-mixed-precision:
	GPTKIT_MIXED_PRECISION=1 $(GO) test -count=1 -timeout 30m -run '^TestMixedPrecisionShakespeare$$' -v ./train | grep -E '^(=== RUN|--- |\s+mixed_precision_test|ok|FAIL|PASS)'

race:
	$(GO) test -count=1 -timeout 30m -race -short ./...

# Each fuzz target runs for FUZZTIME (seed corpora also run in `make test`). Each input
# that finds new coverage, or fails, is minimized for at most FUZZMINIMIZETIME: at Go's
# default (60s) the encoder's targets spent most of their time minimizing, a minute for
# each new input while the exec count stood still (FuzzEncodeMatchesReference, one
# worker: ~6,700 execs in 75 s; ~42,000 at 5s).
FUZZTIME ?= 20s
FUZZMINIMIZETIME ?= 5s
FUZZ_TARGETS := tokenize:FuzzEncodeMatchesReference tokenize:FuzzMergeRanksMedium tokenize:FuzzBacktrackMatchesReference tokenize:FuzzDigitsMatchReference tokenize:FuzzEncodeDecodeRoundTrip tokenize:FuzzSplitMatchesRegex tokenize:FuzzFixMultiMatchesSlow tokenize:FuzzValidUTF8 tokenize:FuzzLoadCompiled tokenize:FuzzCut tokenize:FuzzEncodeBatchParts \
	tokenize:FuzzLoadHFJSON tokenize:FuzzLoadVocabMerges tokenize:FuzzLoadTiktoken tokenize:FuzzLoadChars tokenize:FuzzNFC tokenize:FuzzIndexPair shards:FuzzReadIdx prep:FuzzTextField prep:FuzzJSONString prep:FuzzStringMember \
	prep:FuzzReadRanges prep:FuzzReadStripes prep:FuzzReadMapped prep:FuzzUTF8Checker shards:FuzzParseManifest cmd/tokenize:FuzzEncodeJSONLMappedStdin loader:FuzzParseData loader:FuzzParseBlendFile loader:FuzzParseSplit \
	loader:FuzzDecodeCache kernels/cpu:FuzzMatmul kernels/cpu:FuzzAttention train:FuzzLoadYAML \
	train/safetensors:FuzzRead train/checkpoint:FuzzParseManifest train/plot:FuzzReadMetrics \
	cmd/train:FuzzParseTokenArrays train/dist:FuzzParseNodeList train/dist:FuzzParseTasksPerNode \
	train/dist:FuzzParseMessage train/launch:FuzzParseHostfile internal/redact:FuzzString storage:FuzzProcStartTime train:FuzzParseMemAvailable kernels/cuda/sim:FuzzParse \
	kernels/cuda:FuzzSimVisibleDevices internal/fetch:FuzzParseContentRange internal/fetch:FuzzParseSHA256SUMS internal/inflate:FuzzMatchesStdlib internal/inflate:FuzzDeflateMatchesStdlib \
	cmd/prep:FuzzShellWords internal/cli:FuzzParseSize train/safetensors:FuzzReadInto
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
	  pkg=$${t%%:*}; fn=$${t#*:}; echo "== $$pkg $$fn"; \
	  $(GO) test ./$$pkg -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME); \
	done

bench: build
	bash tools/bench.sh

# The trainer against PyTorch on the CPU only (also part of make bench).
bench-trainer:
	bash tools/bench-trainer.sh

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

generate:
	$(GO) generate ./...

check-generated: generate check-ptx
	git diff --exit-code -- '*.go' tokenize/embedded

NVCC      ?= nvcc
NVCCFLAGS := -ptx -arch=compute_80 -fmad=false -O3
# PTX of kernels/cuda (nvcc 11.8: Debian nvidia-cuda-toolkit, contrib non-free); committed and
# embedded, so building needs no CUDA. The flags must match nvccFlags() in kernels/cuda/ptx_test.go.
ptx:
	@command -v $(NVCC) >/dev/null || { echo "make ptx: no nvcc (apt-get install nvidia-cuda-toolkit from contrib non-free)"; exit 1; }
	@mkdir -p kernels/cuda/ptx
	@set -e; for f in kernels/cuda/*.cu; do b=$$(basename $$f .cu); (cd kernels/cuda && $(NVCC) $(NVCCFLAGS) -o ptx/$$b.ptx $$b.cu); done

# The committed PTX matches the sources (where nvcc exists).
check-ptx:
	@if command -v $(NVCC) >/dev/null; then $(MAKE) ptx && git diff --exit-code -- kernels/cuda/ptx; else echo "check-ptx: no nvcc, skipped"; fi

# Is a GPU usable here? Prints the device or why not.
cuda:
	$(GO) test -count=1 -v -run 'TestOpenHere' ./kernels/cuda | grep -E 'GPU present|no GPU here'

demo: build
	bash tools/demo.sh

# The GPU check's inputs (gpu-check/: bin/train, test binaries, the PyTorch baseline, data),
# built here for a GPU machine with no Go (docs/gpu.md: the device-tool call).
gpu-check:
	bash tools/gpu/build.sh

# The GPU check end to end on this machine, cuda-sim standing in for the GPU (1.5-6 minutes on
# 2 vCPUs, by their load: docs/gpu.md's "Dry run"; its budget is 900 s).
gpu-check-dry: gpu-check
	bash tools/gpu/check.sh --dry

ci: lint test test-noasm test-mixed-precision race gpu-check-dry

clean:
	rm -rf $(BIN) .cache
