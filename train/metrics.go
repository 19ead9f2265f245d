package train

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"gptkit/internal/durable"
)

// MetricsName is the metrics file in the run directory.
const MetricsName = "metrics.jsonl"

// Metrics is one line of metrics.jsonl: one optimizer step.
type Metrics struct {
	Step int `json:"step"`
	// Loss is the mean cross-entropy over every token of the step's global batch
	// (all micro-batches of all ranks), before the update.
	Loss float64 `json:"loss"`
	// LR is the learning rate of the step's update.
	LR float64 `json:"lr"`
	// GradNorm is the global gradient norm before clipping.
	GradNorm float64 `json:"grad_norm"`
	// TokensPerS is the global batch's tokens over the step's wall time (data,
	// forward, backward, all-reduce and update; not evaluation or checkpoints).
	TokensPerS float64 `json:"tokens_per_s"`
	// SamplesPerS is the global batch's sequences over the same time.
	SamplesPerS float64 `json:"samples_per_s"`
	// TFLOPS is the model FLOPs per second of one device (rank): see FLOPsPerToken.
	TFLOPS float64 `json:"tflops"`
	// MFU is TFLOPS over the device's peak for the matmuls' dtype; absent when the
	// backend does not know its peak.
	MFU float64 `json:"mfu,omitempty"`
	// ValLoss is the mean cross-entropy on the valid split, on evaluation steps.
	ValLoss *float64 `json:"val_loss,omitempty"`
	// LossScale is float16's dynamic loss scale after the step (absent for float32
	// and bfloat16); Skipped marks a float16 step whose gradient overflowed: no
	// update, grad_norm 0, the scale halved.
	LossScale float64 `json:"loss_scale,omitempty"`
	Skipped   bool    `json:"skipped,omitempty"`
	// MemoryMetrics is this rank's memory on its backend (its fields appear at the
	// top level of the JSON line, as mem_*_bytes).
	MemoryMetrics
}

// MemoryMetrics is what rank 0 holds on its backend after the step, in bytes, by
// purpose (MemoryUse), as GPT-NeoX and Megatron report their memory each step; and
// on a device backend what its allocator has handed out.
type MemoryMetrics struct {
	// ParamsBytes: the float32 master weights and, under mixed precision, their
	// compute-dtype copy.
	ParamsBytes int64 `json:"mem_params_bytes"`
	// GradsBytes: the float32 gradients.
	GradsBytes int64 `json:"mem_grads_bytes"`
	// OptimizerBytes: AdamW's moments (this rank's shard under ZeRO-1).
	OptimizerBytes int64 `json:"mem_optimizer_bytes"`
	// ActivationsBytes: the forward's saved activations, the backward's scratch,
	// the classifier's chunk, token ids and losses.
	ActivationsBytes int64 `json:"mem_activations_bytes"`
	// DeviceBytes: the device allocator's live allocations (kernels/cuda; its
	// cache of freed blocks not counted); absent on host backends.
	DeviceBytes int64 `json:"mem_device_bytes,omitempty"`
}

// metricsFile appends metric lines to OUT/metrics.jsonl.
type metricsFile struct {
	f    *os.File
	path string
}

// openMetrics opens dir's metrics file for appending, first dropping every line of
// a step after keep (the steps a resumed run will run again; keep 0 empties it).
func openMetrics(dir string, keep int) (*metricsFile, error) {
	path := filepath.Join(dir, MetricsName)
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("train: read %s: %w", path, err)
	}
	var kept []byte
	if keep > 0 {
		// Line by line over the bytes read (no scanner: a line over its limit
		// would end the loop there and drop every step after it).
		for rest := old; len(rest) > 0; {
			line, after, _ := bytes.Cut(rest, []byte{'\n'})
			rest = after
			var m struct {
				Step *int `json:"step"`
			}
			if json.Unmarshal(line, &m) != nil || m.Step == nil {
				continue // a torn last line from a crash
			}
			if *m.Step <= keep {
				kept = append(append(kept, line...), '\n')
			}
		}
	}
	if !bytes.Equal(kept, old) {
		if err := writeFileAtomic(path, kept); err != nil {
			return nil, err
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("train: open %s: %w", path, err)
	}
	if old == nil {
		// Made now: its name in the directory is synced once, as its lines are at
		// each checkpoint (sync), so that a crash keeps the file.
		if err := syncDir(dir); err != nil {
			f.Close()
			return nil, fmt.Errorf("train: create %s: %w", path, err)
		}
	}
	return &metricsFile{f: f, path: path}, nil
}

func (mf *metricsFile) write(m Metrics) error {
	line, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if _, err := mf.f.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("train: write %s: %w", mf.path, err)
	}
	return nil
}

func (mf *metricsFile) sync() error { return mf.f.Sync() }

func (mf *metricsFile) close() error {
	if mf == nil {
		return nil
	}
	return mf.f.Close()
}

// ReadMetrics reads a metrics.jsonl file.
func ReadMetrics(r io.Reader) ([]Metrics, error) {
	var out []Metrics
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		var m Metrics
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			return out, fmt.Errorf("train: metrics line %d: %w", n, err)
		}
		out = append(out, m)
	}
	return out, sc.Err()
}

// writeFileAtomic replaces the file path with data, whole or not at all, durably
// (durable.WriteFile): a crash once it returns leaves the new file, not the old one
// (or none).
func writeFileAtomic(path string, data []byte) error {
	if err := durable.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("train: write %s: %w", path, err)
	}
	return nil
}
