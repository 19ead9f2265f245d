package main

import (
	"fmt"
	"log/slog"
	"runtime"
	"strconv"

	"gptkit/kernels"
	"gptkit/kernels/cpu"
	"gptkit/kernels/cuda"
	"gptkit/kernels/ref"
	"gptkit/train"
	"gptkit/train/dist"
)

// The NCCL collectives satisfy the trainer's interface (kernels/cuda cannot import
// train, so the check lives here).
var _ train.Collectives = (*cuda.NCCL)(nil)

// openBackend returns the kernels for --device:
//
//   - cuda: the GPU backend on GPU $LOCAL_RANK (0 when unset; one process per
//     GPU), bf16 matmuls. Without a usable GPU it fails with one line saying why
//     (no driver, no device, driver too old for the PTX, no cuBLAS).
//   - auto: cuda when a GPU is usable, else the CPU backend; when it falls back,
//     it logs why on log (no driver, no device, driver too old, no cuBLAS).
//   - cpu: the CPU backend on threads goroutines (0: one per CPU).
//   - ref: the reference backend (slow; for checking).
func openBackend(device string, threads int, log *slog.Logger) (kernels.Backend, error) {
	switch device {
	case "auto":
		be, err := cuda.Open(cuda.Options{Device: cuda.LocalRank()})
		if err == nil {
			return be, nil
		}
		log.Info("device auto: no usable GPU, running on the CPU", "reason", err.Error())
		return cpu.New(threads), nil
	case "cpu":
		return cpu.New(threads), nil
	case "ref":
		return ref.New(), nil
	case "cuda":
		be, err := cuda.Open(cuda.Options{Device: cuda.LocalRank()})
		if err != nil {
			return nil, fmt.Errorf("--device cuda: %w", err)
		}
		return be, nil
	}
	return nil, fmt.Errorf("--device %q: want auto, cpu, ref or cuda", device)
}

// rankThreads is the CPU kernels' thread count of a rank: threads when set;
// otherwise the task's SLURM_CPUS_PER_TASK under SLURM, else the CPUs this
// process may use shared among the ranks of its node (as torchrun keeps N ranks
// from each starting one thread per CPU). A single process gets every CPU (0).
func rankThreads(threads int, getenv func(string) string) int {
	if threads > 0 {
		return threads
	}
	place, _, err := dist.Detect(getenv)
	if err != nil || place.World <= 1 {
		return 0
	}
	if n, err := strconv.Atoi(getenv("SLURM_CPUS_PER_TASK")); err == nil && n > 0 && place.Source == "slurm" {
		return min(n, runtime.NumCPU())
	}
	return max(1, runtime.NumCPU()/max(1, place.LocalWorld))
}
