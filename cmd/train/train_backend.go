package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"gptkit/internal/cli"
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
	_ train.StreamCollectives = (*cuda.NCCL)(nil)
	_ cuda.Transport          = (*dist.Comm)(nil)
	_ cuda.CollectiveWatch    = (*dist.Comm)(nil)
)

// openBackend returns the kernels for --device, for a command of one process
// (sample, score, export): its GPU is $LOCAL_RANK's (0 when unset). The
// trainer's ranks choose theirs with openRankBackend (gpu_place.go).
func openBackend(device string, threads int, log *slog.Logger) (kernels.Backend, error) {
	return openBackendOn(device, threads, cuda.LocalRank(), log)
}

// openBackendOn returns the kernels for --device, on GPU ordinal (among the
// visible ones) for the CUDA backends:
//
//   - cuda: the GPU backend (dtype auto: bfloat16). Without a usable GPU it
//     fails with one line saying why (no driver, no device, driver too old for
//     the PTX, no cuBLAS).
//   - cuda-sim: the same CUDA backend on a simulated GPU (kernels/cuda/sim):
//     the committed PTX of every kernel runs on the CPU, cuBLAS and NCCL are
//     simulated. Very slow; for tests and for checking a change without a GPU.
//     dtype auto is float32 there, with float32 matmuls, so it matches
//     --device cpu.
//   - auto: cuda when a GPU is usable, else the CPU backend; when it falls
//     back, it logs why on log (no driver, no device, driver too old, no
//     cuBLAS).
//   - cpu: the CPU backend on threads goroutines (0: one per CPU).
//   - ref: the reference backend (slow; for checking).
//
// $GPTKIT_CUDA_PRECISION (bf16, tf32, fp32) overrides the matmul precision of
// cuda and cuda-sim; $GPTKIT_SIM_MEMORY is cuda-sim's memory in bytes,
// $GPTKIT_SIM_GPUS its machine's GPU count (default 8), $GPTKIT_SIM_HOST the
// machine's name in their UUIDs (default: the host name), and cuda-sim honours
// CUDA_VISIBLE_DEVICES as the driver does.
func openBackendOn(device string, threads, ordinal int, log *slog.Logger) (kernels.Backend, error) {
	warn := func(msg string) { log.Warn(msg) }
	switch device {
	case "auto":
		prec, perr := envCUDAPrecision("bf16 on a GPU")
		if perr != nil {
			// cuda.Open refuses the precision before it looks for a GPU: look with
			// the default, so that a machine without one is not told "a GPU is
			// here but cannot be used" (the precision is then moot).
			be, err := cuda.Open(cuda.Options{Device: ordinal, Warn: warn})
			if err == nil {
				be.Close()
				err = perr
			}
			logFallback(log, err)
			return cpu.New(threads), nil
		}
		be, err := cuda.Open(cuda.Options{Device: ordinal, Precision: prec, Warn: warn})
		if err == nil {
			return be, nil
		}
		logFallback(log, err)
		return cpu.New(threads), nil
	case "cpu":
		return cpu.New(threads), nil
	case "ref":
		return ref.New(), nil
	case "cuda":
		prec, err := envCUDAPrecision("bf16")
		if err != nil {
			return nil, fmt.Errorf("--device cuda: %w", err)
		}
		be, err := cuda.Open(cuda.Options{Device: ordinal, Precision: prec, Warn: warn})
		if err != nil {
			return nil, fmt.Errorf("--device cuda: %w", err)
		}
		return be, nil
	case "cuda-sim":
		prec, err := envCUDAPrecision("fp32 on cuda-sim")
		if err != nil {
			return nil, fmt.Errorf("--device cuda-sim: %w", err)
		}
		if prec == "" {
			prec = cuda.FP32
		}
		so, err := simOptions(os.Getenv, os.LookupEnv)
		if err != nil {
			return nil, err
		}
		be, err := cuda.Open(cuda.Options{Device: ordinal, Precision: prec, Sim: &so, Warn: warn})
		if err != nil {
			return nil, fmt.Errorf("--device cuda-sim: %w", err)
		}
		return be, nil
	}
	return nil, &deviceNameError{device}
}

// envCUDAPrecision is $GPTKIT_CUDA_PRECISION, checked: "" when unset (the device's
// default, def in the error). A bad value was refused by kernels/cuda as
// `cuda: precision "BF16": want bf16, tf32 or fp32`, which did not say where the
// value came from.
func envCUDAPrecision(def string) (string, error) {
	switch p := os.Getenv(envPrecision); p {
	case "", cuda.BF16, cuda.TF32, cuda.FP32:
		return p, nil
	default:
		return p, fmt.Errorf("%s=%q: want bf16, tf32 or fp32, or unset it for the default (%s)", envPrecision, p, def)
	}
}

// deviceNameError is a --device that names no device: a usage error (exit 2), where a
// device that cannot be used is a failure (exit 1).
type deviceNameError struct{ device string }

func (e *deviceNameError) Error() string {
	return fmt.Sprintf("--device %q: want auto, cpu, ref, cuda or cuda-sim", e.device)
}

// backendFailed is what a command returns when its --device cannot be opened: a usage
// error for a name that is no device, else a failure naming why.
func backendFailed(ctx context.Context, c *cli.Command, stderr io.Writer, err error) int {
	if _, ok := errors.AsType[*deviceNameError](err); ok {
		return c.UsageError(stderr, err.Error())
	}
	return cli.Fail(stderr, c.Prog+" "+c.Name, cli.Interrupted(ctx, err))
}

// logFallback says why --device auto runs on the CPU: as information where the
// machine has no NVIDIA driver or shows no GPU, as a warning where a GPU is there
// but cannot be used (a driver too old, cuBLAS not found, the kernels not loading):
// most likely a setup the user meant to train on the GPU with, at a hundredth of its
// speed on the CPU.
func logFallback(log *slog.Logger, why error) {
	if errors.Is(why, cuda.ErrNoDriver) || errors.Is(why, cuda.ErrNoDevice) {
		log.Info("device auto: no usable GPU, running on the CPU", "reason", fallbackReason(why))
		return
	}
	log.Warn("device auto: a GPU is here but cannot be used, running on the CPU (--device cuda fails instead; fix what the reason says to train on the GPU)",
		"reason", fallbackReason(why))
}

// fallbackReason is why without its own advice to use --device cpu, which is
// what auto does: kernels/cuda ends its reasons "; use --device cpu", ", or use
// --device cpu" or, the commonest (no driver), " or use --device cpu".
func fallbackReason(why error) string {
	reason := why.Error()
	for _, tail := range []string{"; use --device cpu", ", or use --device cpu", " or use --device cpu"} {
		if r, ok := strings.CutSuffix(reason, tail); ok {
			return r
		}
	}
	return reason
}

// simOptions is cuda-sim's machine as the environment describes it.
func simOptions(getenv func(string) string, lookup func(string) (string, bool)) (cuda.SimOptions, error) {
	so := cuda.SimOptions{GPUs: 8}
	if v := getenv(envSimMemory); v != "" {
		n, err := cli.ParseSize(v)
		if err != nil || n <= 0 {
			return so, fmt.Errorf("--device cuda-sim: %s=%q: want a number of bytes (8589934592, 8GiB, 500MB)", envSimMemory, v)
		}
		so.Memory = uint64(n)
	}
	if v := getenv(envSimGPUs); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 64 {
			return so, fmt.Errorf("--device cuda-sim: %s=%q: want a number of GPUs in [1, 64]", envSimGPUs, v)
		}
		so.GPUs = n
	}
	if v, ok := lookup("CUDA_VISIBLE_DEVICES"); ok {
		so.VisibleDevices = &v
	}
	so.Host = getenv(envSimHost)
	so.NoHazardCheck = getenv(envSimHazards) == "0"
	if dir := getenv(envSimTrace); dir != "" {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("streams-%d.trace", os.Getpid())))
		if err != nil {
			return so, fmt.Errorf("--device cuda-sim: %s: %w", envSimTrace, err)
		}
		so.Trace = f // written as the ops are queued, closed by the process's end
	}
	return so, nil
}

// envPrecision overrides the CUDA backends' matmul precision; envSimMemory sets
// the simulated GPU's memory in bytes, with a unit or without (default 16 GiB), to
// try what a smaller card would say.
const (
	envPrecision = "GPTKIT_CUDA_PRECISION"
	envSimMemory = "GPTKIT_SIM_MEMORY"
	envSimGPUs   = "GPTKIT_SIM_GPUS"
	envSimHost   = "GPTKIT_SIM_HOST" // the simulated machine's name in its GPUs' UUIDs (default: the host name)
	// envSimHazards=0 turns off cuda-sim's check of the streams' ordering
	// (on by default); envSimTrace names a directory where each process
	// writes the ops its simulated streams were given, one line each.
	envSimHazards = "GPTKIT_SIM_HAZARDS"
	envSimTrace   = "GPTKIT_SIM_TRACE"
)

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

// onDevice runs f, which runs a model on be, as trainRank runs the trainer: a panic of
// the CUDA backend in it (a kernel fault on the simulator, out of GPU memory, a shape
// its kernels do not take) is its error, one line for the user where it was a stack
// dump; other panics go on (deviceError).
func onDevice(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = deviceError(r)
		}
	}()
	return f()
}

// modelFitsDevice refuses, before sample or score runs it, a trained model that the
// CUDA backend be cannot run: a head size (n_embd / n_head) more than its attention
// kernels take (cuda.MaxHeadSize). Training meets the limit at its first step and
// says to use more heads; a trained model's only way out is another device.
func modelFitsDevice(be kernels.Backend, mc train.ModelConfig) error {
	if _, ok := be.(*cuda.Backend); !ok || mc.NHead < 1 {
		return nil
	}
	if hs := mc.NEmbd / mc.NHead; hs > cuda.MaxHeadSize {
		return fmt.Errorf("the model's head size %d (n_embd %d / n_head %d) is more than the GPU's attention kernels take (%d): run it with --device cpu",
			hs, mc.NEmbd, mc.NHead, cuda.MaxHeadSize)
	}
	return nil
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
