package train

import (
	"fmt"
	"strings"
	"time"

	"gptkit/train/tensorboard"
)

// Throughput and model FLOPs utilization, as nanoGPT's estimate_mfu and llm.c count
// them (PaLM, appendix B): a token costs 6N FLOPs in the matmuls of the forward and
// backward passes, N the parameters less the position embeddings, plus 12·L·H·Q·T in
// attention (L layers, H heads of width Q, context T). TFLOPS is per device (rank): the
// global batch's FLOPs over the step's wall time, divided by the world size. MFU divides
// that by the device's peak for the dtype the matmuls run in, which backends report
// through PeakFLOPS (kernels/cuda: the datasheet's dense peak; kernels/cpu: its own
// matmul measured at start); a backend without it (ref) gets no MFU.

// peakFLOPSer is implemented by the backends that know their peak FLOP/s.
type peakFLOPSer interface{ PeakFLOPS() float64 }

// FLOPsPerToken is the model's training FLOPs per token: 6N + 12·L·H·Q·T.
func (mc ModelConfig) FLOPsPerToken() float64 {
	n := float64(mc.NumParams() - mc.BlockSize*mc.NEmbd)
	l, h, q, t := float64(mc.NLayer), float64(mc.NHead), float64(mc.NEmbd/mc.NHead), float64(mc.BlockSize)
	return 6*n + 12*l*h*q*t
}

// throughput fills m's speed figures for a step of samples sequences of T tokens
// (the global batch) that took secs.
func (t *Trainer) throughput(m *Metrics, samples, T int, secs float64) {
	if secs <= 0 {
		return
	}
	m.SamplesPerS = float64(samples) / secs
	m.TokensPerS = m.SamplesPerS * float64(T)
	flops := m.TokensPerS * t.model.Config.FLOPsPerToken() / float64(t.coll.World())
	m.TFLOPS = flops / 1e12
	if t.peak > 0 {
		m.MFU = flops / t.peak
	}
}

// openTensorBoard starts a TensorBoard event file in tensorboard_dir (default: the
// run directory), its first event a restart marker at the next step.
func (t *Trainer) openTensorBoard() error {
	dir := t.cfg.TensorboardDir
	if dir == "" {
		dir = t.cfg.Out
	}
	// Made durably: a crash cannot take the directory, and the event file in it.
	if err := mkdirAll(dir); err != nil {
		return fmt.Errorf("train: create tensorboard_dir %s: %w", dir, err)
	}
	tb, err := tensorboard.Create(dir, int64(t.step+1))
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	t.tb = tb
	return nil
}

// logTensorBoard writes m's scalars to the event file.
func (t *Trainer) logTensorBoard(m Metrics) error {
	values := []tensorboard.Scalar{
		{Tag: "train/loss", Value: m.Loss}, {Tag: "train/lr", Value: m.LR}, {Tag: "train/grad_norm", Value: m.GradNorm},
		{Tag: "train/tokens_per_s", Value: m.TokensPerS}, {Tag: "train/samples_per_s", Value: m.SamplesPerS},
		{Tag: "train/tflops_per_device", Value: m.TFLOPS},
	}
	if t.peak > 0 {
		values = append(values, tensorboard.Scalar{Tag: "train/mfu", Value: m.MFU})
	}
	values = append(values, tensorboard.Scalar{Tag: "memory/params_bytes", Value: float64(m.ParamsBytes)},
		tensorboard.Scalar{Tag: "memory/activations_bytes", Value: float64(m.ActivationsBytes)})
	if m.DeviceBytes > 0 {
		values = append(values, tensorboard.Scalar{Tag: "memory/device_bytes", Value: float64(m.DeviceBytes)})
	}
	if m.ValLoss != nil {
		values = append(values, tensorboard.Scalar{Tag: "val/loss", Value: *m.ValLoss})
	}
	if m.LossScale > 0 {
		values = append(values, tensorboard.Scalar{Tag: "train/loss_scale", Value: m.LossScale})
	}
	if err := t.tb.Scalars(int64(m.Step), values...); err != nil {
		return err
	}
	return t.tb.Flush()
}

// etaText is a time left of secs seconds for a log line: "42s", "3m20s", "5h12m", or in
// days past two ("730.5d").
func etaText(secs float64) string {
	switch d := time.Duration(secs * float64(time.Second)); {
	case secs >= 48*3600:
		return fmt.Sprintf("%.1fd", secs/86400)
	case d >= time.Hour:
		return strings.TrimSuffix(d.Round(time.Minute).String(), "0s")
	default:
		return d.Round(time.Second).String()
	}
}
