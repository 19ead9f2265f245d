package main

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"gptkit/kernels"
	"gptkit/kernels/cuda"
	"gptkit/train/dist"
)

// The ranks of a job on GPUs meet their GPUs' collectives through the
// rendezvous store, behind the job token: every rank publishes the identity of
// its GPU; rank 0 checks that no two ranks use one GPU (NCCL refuses that, and
// it is nearly always a mistake: more ranks than GPUs, or every rank on GPU 0)
// and publishes the plan: NCCL's unique id, or, when ranks share a GPU and
// --share-gpus allows it, gptkit's ring on the host. Each rank then joins the
// NCCL communicator on its own GPU, watched (kernels/cuda's watchdog,
// train/dist's store naming a rank that never reached a collective).

// Keys of the rendezvous store.
const (
	gpuKeyPrefix = "gpu/"     // + rank: the rank's GPU (UUID, host, bus id)
	gpuPlanKey   = "gpu-plan" // rank 0's plan: "nccl " + the unique id, or "ring"
)

// envShareGPUs allows ranks to share a GPU, as --share-gpus does.
const envShareGPUs = "GPTKIT_SHARE_GPUS"

// gpuOptions are what deviceCollectives needs beyond the communicator.
type gpuOptions struct {
	share   bool          // ranks may share a GPU (--share-gpus)
	timeout time.Duration // --collective-timeout
	wait    time.Duration // for the other ranks' keys (--dist-timeout)
}

// deviceCollectives returns the NCCL communicator of a rank on the CUDA backend
// (nil on the other backends, and when ranks share GPUs: they keep comm's
// ring). On cuda-sim the simulated NCCL carries the collectives between the
// processes over comm.
func deviceCollectives(ctx context.Context, be kernels.Backend, comm *dist.Comm, o gpuOptions, log *slog.Logger) (*cuda.NCCL, error) {
	cb, ok := be.(*cuda.Backend)
	if !ok {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, o.wait)
	defer cancel()
	host, _ := os.Hostname()
	info := cb.Info()
	if err := comm.Publish(ctx, fmt.Sprint(gpuKeyPrefix, comm.Rank()), []byte(info.UUID+"\t"+host+"\t"+info.BusID)); err != nil {
		return nil, fmt.Errorf("train: publish this rank's GPU: %w", err)
	}
	var plan string
	if comm.Rank() == 0 {
		shared, err := sharedGPUs(ctx, comm)
		if err != nil {
			return nil, err
		}
		switch {
		case shared != "" && !o.share:
			return nil, sharedGPUError(shared)
		case shared != "":
			log.Warn("ranks share a GPU (--share-gpus): the collectives go through gptkit's ring on the host, not NCCL", "sharing", shared)
			plan = "ring"
		default:
			id, err := cb.NewUniqueID()
			if err != nil {
				return nil, err
			}
			plan = "nccl " + string(id.Internal[:])
		}
		if err := comm.Publish(ctx, gpuPlanKey, []byte(plan)); err != nil {
			return nil, fmt.Errorf("train: publish the NCCL unique id: %w", err)
		}
	} else {
		v, err := comm.Lookup(ctx, gpuPlanKey)
		if err != nil {
			return nil, fmt.Errorf("train: rank %d: %w", comm.Rank(), err)
		}
		plan = string(v)
	}
	if plan == "ring" {
		return nil, nil
	}
	var id cuda.UniqueID
	raw, ok := strings.CutPrefix(plan, "nccl ")
	if !ok || len(raw) != len(id.Internal) {
		return nil, fmt.Errorf("train: rank %d: the GPU plan in the store is not an NCCL unique id (%d bytes)", comm.Rank(), len(plan))
	}
	copy(id.Internal[:], raw)
	no := cuda.NCCLOptions{Timeout: o.timeout, Watch: comm}
	via := "nccl"
	if cb.Simulated() {
		no.Transport, via = comm, "simulated nccl over the ring"
	}
	c, err := cuda.NewNCCL(cb, id, comm.Rank(), comm.World(), no)
	if err != nil {
		return nil, err
	}
	if !cb.Simulated() {
		via = "nccl: " + c.Library()
	}
	log.Info("collectives", "via", via, "rank", comm.Rank(), "world", comm.World(), "collective_timeout", o.timeout)
	return c, nil
}

// sharedGPUError is the error of ranks that share a GPU without --share-gpus: the
// ranks and the GPU (shared, from sharedGPUs) and how to give each its own, ranks
// started by hand (--rank, whose local rank is 0 without LOCAL_RANK) included.
func sharedGPUError(shared string) error {
	return fmt.Errorf("train: %s; give each rank its own GPU (as many ranks per node as GPUs: --nproc-per-node, srun --ntasks-per-node or --gpus-per-task; CUDA_VISIBLE_DEVICES; ranks started by hand with --rank: LOCAL_RANK, each one's place on its node), or allow it with --share-gpus (collectives then go through the host, not NCCL)", shared)
}

// sharedGPUs gathers every rank's GPU (rank 0) and describes the ranks that
// share one ("" when none do).
func sharedGPUs(ctx context.Context, comm *dist.Comm) (string, error) {
	byUUID := map[string][]int{}
	where := map[string]string{}
	for r := range comm.World() {
		v, err := comm.Lookup(ctx, fmt.Sprint(gpuKeyPrefix, r))
		if err != nil {
			return "", fmt.Errorf("train: rank 0: the GPU of rank %d: %w", r, err)
		}
		uuid, rest, _ := strings.Cut(string(v), "\t")
		host, bus, _ := strings.Cut(rest, "\t")
		byUUID[uuid] = append(byUUID[uuid], r)
		where[uuid] = fmt.Sprintf("%s, bus %s on %s", uuid, bus, host)
	}
	var msgs []string
	for _, uuid := range slices.Sorted(maps.Keys(byUUID)) {
		if ranks := byUUID[uuid]; len(ranks) > 1 {
			msgs = append(msgs, fmt.Sprintf("%s use one GPU (%s)", ranksList(ranks), where[uuid]))
		}
	}
	return strings.Join(msgs, "; "), nil
}

// ranksList is "ranks 0 and 1" or "ranks 0, 2 and 5".
func ranksList(ranks []int) string {
	s := make([]string, len(ranks))
	for i, r := range ranks {
		s[i] = fmt.Sprint(r)
	}
	return "ranks " + strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}
