package train

import (
	"errors"
	"fmt"
	"math"

	"gptkit/kernels"
)

// ResolveDType is the compute dtype of the dtype config key on backend be: auto
// is the backend's DefaultDType when it has one (kernels/cuda: bfloat16 on a GPU,
// float32 on the simulator), else float32 on a host backend (cpu, ref) and
// bfloat16 on a device (as PyTorch AMP's users and llm.c choose on GPUs);
// float32, bfloat16 and float16 are themselves.
func ResolveDType(dtype string, be kernels.Backend) (kernels.DType, error) {
	if dtype == "auto" || dtype == "" {
		if d, ok := be.(defaultDTyper); ok {
			return d.DefaultDType(), nil
		}
		if _, host := be.(kernels.HostMemory); host {
			return kernels.Float32, nil
		}
		return kernels.BFloat16, nil
	}
	dt, err := kernels.ParseDType(dtype)
	if err != nil {
		return 0, fmt.Errorf("train: %w", err)
	}
	return dt, nil
}

// defaultDTyper is a backend that chooses the compute dtype of dtype auto.
type defaultDTyper interface {
	DefaultDType() kernels.DType
}

// lossScaler is float16's dynamic loss scaling, GPT-NeoX's (DeepSpeed's
// DynamicLossScaler): the loss (so every activation gradient) is multiplied by
// scale, which starts at 2^16; a step whose gradient is not finite is skipped
// and the scale halved; after lossScaleWindow steps in a row without overflow
// it doubles. The zero value is off (scale 1, never changes): float32 and
// bfloat16 need no scaling.
type lossScaler struct {
	scale float64 // 0: off
	good  int     // steps since the last overflow or growth
}

const (
	lossScaleWindow = 1000
	lossScaleMax    = 1 << 24
)

// lossScaleInit is the first scale (a variable for tests).
var lossScaleInit = float64(1 << 16)

func newLossScaler() lossScaler { return lossScaler{scale: lossScaleInit} }

func (s *lossScaler) on() bool { return s.scale != 0 }

// factor is what the loss is multiplied by (1 when off).
func (s *lossScaler) factor() float64 {
	if s.scale == 0 {
		return 1
	}
	return s.scale
}

// errScaleFloor: an overflow at the smallest scale cannot be helped by scaling.
var errScaleFloor = errors.New("float16 overflow in the gradients at loss scale 1: the values themselves exceed float16's range\n---> HINT: train with dtype bfloat16 (GPUs from Ampere on) or float32")

// update moves the scale after a step whose gradient was finite or not.
func (s *lossScaler) update(finite bool) error {
	if !finite {
		if s.scale <= 1 {
			return errScaleFloor
		}
		s.scale = math.Max(1, s.scale/2)
		s.good = 0
		return nil
	}
	s.good++
	if s.good >= lossScaleWindow && s.scale < lossScaleMax {
		s.scale *= 2
		s.good = 0
	}
	return nil
}

// memoryError gives an out-of-memory error while building the trainer the
// next step a user can take.
func (t *Trainer) memoryError(err error) error {
	var oom *kernels.OutOfMemoryError
	if !errors.As(err, &oom) {
		return fmt.Errorf("train: %w", err)
	}
	cfg := t.cfg
	next := fmt.Sprintf("next step: lower batch_size (now %d) and raise grad_accum (now %d) to keep the batch of %d samples per rank",
		cfg.BatchSize, cfg.GradAccum, cfg.BatchSize*cfg.GradAccum)
	if t.coll.World() > 1 && cfg.Zero == 0 {
		next += ", or zero 1 to shard the AdamW state over the ranks"
	}
	if t.dtype == kernels.Float32 && t.be != nil {
		if _, host := t.be.(kernels.HostMemory); !host {
			next += ", or dtype bfloat16 (half the activations)"
		}
	}
	e := *oom
	e.NextStep = next
	return fmt.Errorf("train: %w", &e)
}
