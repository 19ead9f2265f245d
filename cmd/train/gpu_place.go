package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"

	"gptkit/kernels"
	"gptkit/kernels/cuda"
	"gptkit/train/dist"
)

// Which GPU a rank uses. Once its place in the job is known, a rank's local
// rank (its place among the ranks of its node: LOCAL_RANK, SLURM_LOCALID,
// OMPI_COMM_WORLD_LOCAL_RANK, or the launcher's; dist.LocalRank) picks one of
// the GPUs it can see (after CUDA_VISIBLE_DEVICES, which the driver applies):
// the local rank modulo their number. So 8 ranks of a node that see its 8 GPUs
// take one each; a rank that SLURM gave its own GPU (--gpus-per-task, which
// sets CUDA_VISIBLE_DEVICES per task) takes the one it sees; and ranks that
// would share a GPU (more ranks than GPUs) are caught when the ranks compare
// the UUIDs of their GPUs (gpu_ranks.go). Every rank logs the GPU's name, UUID
// and PCI bus id.

// gpuChoice is the GPU a rank chose, and why.
type gpuChoice struct {
	local   int    // the local rank
	from    string // where the local rank came from
	visible int    // GPUs this process sees
	ordinal int    // the GPU among them
}

// cudaDevice reports whether device runs on a GPU (or the simulated one).
func cudaDevice(device string) bool {
	return device == "cuda" || device == "cuda-sim" || device == "auto"
}

// deviceOptions are the cuda.Options that describe --device's GPUs.
func deviceOptions(device string) (cuda.Options, error) {
	if device != "cuda-sim" {
		return cuda.Options{}, nil
	}
	so, err := simOptions(os.Getenv, os.LookupEnv)
	return cuda.Options{Sim: &so}, err
}

// chooseGPU picks the GPU of a rank at place, among the GPUs o describes.
func chooseGPU(getenv func(string) string, place dist.Place, o cuda.Options) (gpuChoice, error) {
	local, from, err := dist.LocalRank(getenv, place)
	if err != nil {
		return gpuChoice{}, err
	}
	n, err := cuda.DeviceCount(o)
	if err != nil {
		return gpuChoice{}, err
	}
	return gpuChoice{local: local, from: from, visible: n, ordinal: local % n}, nil
}

// ncclEnv is NCCL's settings in environ (NCCL_*), which NCCL reads itself:
// each rank logs them, so a setting that did not reach a node shows.
func ncclEnv(environ []string) []string {
	var out []string
	for _, kv := range environ {
		if strings.HasPrefix(kv, "NCCL_") {
			out = append(out, kv)
		}
	}
	slices.Sort(out)
	return out
}

// openRankBackend opens the kernels of a trainer rank at place: on a GPU
// backend, the GPU chooseGPU picks, which the rank logs.
func openRankBackend(device string, threads int, place dist.Place, log *slog.Logger) (kernels.Backend, error) {
	if !cudaDevice(device) {
		return openBackendOn(device, threads, 0, log)
	}
	o, err := deviceOptions(device)
	if err != nil {
		return nil, err
	}
	choice, err := chooseGPU(os.Getenv, place, o)
	if err != nil {
		if device == "auto" && (errors.Is(err, cuda.ErrNoDriver) || errors.Is(err, cuda.ErrNoDevice) || errors.Is(err, cuda.ErrDriverTooOld)) {
			logFallback(log, err)
			return openBackendOn("cpu", threads, 0, log)
		}
		return nil, fmt.Errorf("--device %s: %w", device, err)
	}
	open := device
	if device == "auto" && place.World > 1 {
		// A GPU is here: this rank must use it. Falling back to the CPU alone would
		// mix CPU and GPU ranks, and the job would wait --dist-timeout for this
		// rank's GPU before failing without saying why.
		open = "cuda"
	}
	be, err := openBackendOn(open, threads, choice.ordinal, log)
	if err != nil {
		if open != device {
			why := err
			if inner := errors.Unwrap(err); inner != nil {
				why = inner // without openBackendOn's "--device cuda: "
			}
			return nil, fmt.Errorf("--device auto: rank %d found a GPU but cannot use it (%w); every rank of a job must train on the same kind of device\n---> HINT: fix the GPU (the message above says how), or pass --device cpu", place.Rank, why)
		}
		return nil, err
	}
	if cb, ok := be.(*cuda.Backend); ok {
		info := cb.Info()
		cvd, set := os.LookupEnv("CUDA_VISIBLE_DEVICES")
		if !set {
			cvd = "(unset)"
		}
		log.Info("gpu", "rank", place.Rank, "local_rank", choice.local, "local_rank_from", choice.from, "device", choice.ordinal,
			"visible", choice.visible, "name", info.Name, "uuid", info.UUID, "bus_id", info.BusID, "cuda_visible_devices", cvd,
			"nccl_env", strings.Join(ncclEnv(os.Environ()), " "))
	}
	return be, nil
}
