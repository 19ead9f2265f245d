package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"gptkit/kernels"
	"gptkit/kernels/cpu"
	"gptkit/kernels/cuda"
	"gptkit/kernels/ref"
	"gptkit/train"
	"gptkit/train/dist"
)

// The NCCL collectives and train/dist's communicator satisfy the interfaces of
// the packages they cannot import, so the checks live here.
var (
	_ train.FullCollectives   = (*cuda.NCCL)(nil)
	_ train.TensorCollectives = (*cuda.NCCL)(nil)
	_ cuda.Transport          = (*dist.Comm)(nil)
)

// openBackend returns the kernels for --device:
//
//   - cuda: the GPU backend on GPU $LOCAL_RANK (0 when unset; one process per
//     GPU), bf16 matmuls. Without a usable GPU it fails with one line saying why
//     (no driver, no device, driver too old for the PTX, no cuBLAS).
//   - cuda-sim: the same CUDA backend on a simulated GPU (kernels/cuda/sim):
//     the committed PTX of every kernel runs on the CPU, cuBLAS and NCCL are
//     simulated. Very slow; for tests and for checking a change without a GPU.
//     Float32 matmuls, so it matches --device cpu.
//   - auto: cuda when a GPU is usable, else the CPU backend; when it falls back,
//     it logs why on log (no driver, no device, driver too old, no cuBLAS).
//   - cpu: the CPU backend on threads goroutines (0: one per CPU).
//   - ref: the reference backend (slow; for checking).
//
// $GPTKIT_CUDA_PRECISION (bf16, tf32, fp32) overrides the matmul precision of
// cuda and cuda-sim; $GPTKIT_SIM_MEMORY is cuda-sim's memory in bytes.
func openBackend(device string, threads int, log *slog.Logger) (kernels.Backend, error) {
	switch device {
	case "auto":
		be, err := cuda.Open(cuda.Options{Device: cuda.LocalRank(), Precision: os.Getenv(envPrecision)})
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
		be, err := cuda.Open(cuda.Options{Device: cuda.LocalRank(), Precision: os.Getenv(envPrecision)})
		if err != nil {
			return nil, fmt.Errorf("--device cuda: %w", err)
		}
		return be, nil
	case "cuda-sim":
		prec := os.Getenv(envPrecision)
		if prec == "" {
			prec = cuda.FP32
		}
		var mem uint64
		if v := os.Getenv(envSimMemory); v != "" {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil || n == 0 {
				return nil, fmt.Errorf("--device cuda-sim: %s=%q: want a number of bytes", envSimMemory, v)
			}
			mem = n
		}
		be, err := cuda.Open(cuda.Options{Precision: prec, Sim: &cuda.SimOptions{Memory: mem}})
		if err != nil {
			return nil, fmt.Errorf("--device cuda-sim: %w", err)
		}
		return be, nil
	}
	return nil, fmt.Errorf("--device %q: want auto, cpu, ref, cuda or cuda-sim", device)
}

// envPrecision overrides the CUDA backends' matmul precision; envSimMemory sets
// the simulated GPU's memory in bytes (default 16 GiB), to try what a smaller
// card would say.
const (
	envPrecision = "GPTKIT_CUDA_PRECISION"
	envSimMemory = "GPTKIT_SIM_MEMORY"
)

// ncclIDKey is where rank 0 publishes the job's NCCL unique id in the
// rendezvous store.
const ncclIDKey = "nccl-unique-id"

// deviceCollectives returns the NCCL communicator of a rank on the CUDA backend
// (nil on the others, which keep comm's ring): rank 0 makes the unique id and
// publishes it in the rendezvous store, behind the job token; every rank looks
// it up and joins. On cuda-sim the simulated NCCL carries the collectives
// between the processes over comm.
func deviceCollectives(ctx context.Context, be kernels.Backend, comm *dist.Comm, log *slog.Logger) (*cuda.NCCL, error) {
	cb, ok := be.(*cuda.Backend)
	if !ok {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	var id cuda.UniqueID
	if comm.Rank() == 0 {
		var err error
		if id, err = cb.NewUniqueID(); err != nil {
			return nil, err
		}
		if err := comm.Publish(ctx, ncclIDKey, id.Internal[:]); err != nil {
			return nil, fmt.Errorf("train: publish the NCCL unique id: %w", err)
		}
	} else {
		v, err := comm.Lookup(ctx, ncclIDKey)
		if err != nil {
			return nil, fmt.Errorf("train: rank %d: %w", comm.Rank(), err)
		}
		if len(v) != len(id.Internal) {
			return nil, fmt.Errorf("train: rank %d: the NCCL unique id in the store has %d bytes, want %d", comm.Rank(), len(v), len(id.Internal))
		}
		copy(id.Internal[:], v)
	}
	var o cuda.NCCLOptions
	via := "nccl"
	if cb.Simulated() {
		o.Transport, via = comm, "simulated nccl over the ring"
	}
	c, err := cuda.NewNCCL(cb, id, comm.Rank(), comm.World(), o)
	if err == nil {
		log.Info("collectives", "via", via, "rank", comm.Rank(), "world", comm.World())
	}
	return c, err
}

// deviceError turns a panic of the CUDA backend (a failed driver call, a
// kernel fault on the simulator, out of GPU memory) into the error it carries;
// other panics go on.
func deviceError(r any) error {
	err, ok := r.(error)
	var oom *kernels.OutOfMemoryError
	if ok && (errors.As(err, &oom) || strings.HasPrefix(err.Error(), "cuda: ")) {
		return err
	}
	panic(r)
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
