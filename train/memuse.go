package train

import (
	"log/slog"

	"gptkit/kernels"
)

// MemoryUse is what a training rank holds on its backend, in bytes, by
// purpose: counted as the model and the trainer allocate it.
type MemoryUse struct {
	// Params: the float32 master weights (padded for data parallelism) and the
	// compute-dtype copy under mixed precision.
	Params int64
	// Grads: the float32 weight gradients.
	Grads int64
	// Optimizer: AdamW's float32 moments (this rank's shard under ZeRO-1).
	Optimizer int64
	// Activations: what the forward saves for the backward, the backward's
	// scratch, the classifier's chunk, token ids and losses.
	Activations int64
}

// Total is the sum.
func (u MemoryUse) Total() int64 { return u.Params + u.Grads + u.Optimizer + u.Activations }

// LogValue implements slog.LogValuer: the figures in GiB/MiB.
func (u MemoryUse) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("params", kernels.GiB(u.Params)),
		slog.String("grads", kernels.GiB(u.Grads)),
		slog.String("adamw", kernels.GiB(u.Optimizer)),
		slog.String("activations", kernels.GiB(u.Activations)),
		slog.String("total", kernels.GiB(u.Total())),
	)
}

// Memory is the model's memory on its backend (no optimizer state).
func (m *Model) Memory() MemoryUse { return m.mem }
