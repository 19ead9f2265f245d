package main

import (
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"time"

	"gptkit/kernels"
	"gptkit/train"
)

// liveLine is the progress line `train` keeps at the bottom of a terminal:
//
//	step 1200/2000  loss 1.6120  val 1.7925@1000  lr 4.3e-04  |g| 0.41  21,331 tok/s  27.8 samples/s  0.0312 TFLOPS  MFU 24.1%  mem 1.4 MiB  ETA 0:37
//
// It is also the io.Writer of the command's logger, so that a log line (an
// evaluation, a checkpoint, a warning) clears the line, prints, and the line is
// drawn again under it.
type liveLine struct {
	mu       sync.Mutex
	w        io.Writer
	line     string
	drawn    bool
	last     time.Time
	maxSteps int
	start    time.Time
	first    int     // the first step of this process (resumed runs start later)
	val      string  // the last evaluation
	rate     float64 // tokens per second, smoothed (samples/s, TFLOPS and MFU with it)
}

func newLiveLine(w io.Writer, maxSteps int) *liveLine {
	return &liveLine{w: w, maxSteps: maxSteps, start: time.Now(), first: -1}
}

// Write implements io.Writer for the logger.
func (l *liveLine) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.drawn {
		io.WriteString(l.w, "\r\x1b[K")
	}
	n, err := l.w.Write(p)
	if l.drawn {
		io.WriteString(l.w, l.line)
	}
	return n, err
}

// step redraws the line for m (at most 10 times a second, and always on evaluation
// steps and the last step).
func (l *liveLine) step(m train.Metrics) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.first < 0 {
		l.first = m.Step
		l.start = time.Now()
	}
	if l.rate == 0 || math.IsInf(l.rate, 0) {
		l.rate = m.TokensPerS
	} else {
		l.rate = 0.9*l.rate + 0.1*m.TokensPerS
	}
	if m.ValLoss != nil {
		l.val = fmt.Sprintf("  val %.4f@%d", *m.ValLoss, m.Step)
	}
	now := time.Now()
	if now.Sub(l.last) < 100*time.Millisecond && m.ValLoss == nil && m.Step != l.maxSteps {
		return
	}
	l.last = now
	eta := ""
	if done := m.Step - l.first; done > 0 && m.Step < l.maxSteps {
		// From the end of this process's first step (its time is the warm-up's, and
		// start-up is not training): none shown until the second.
		per := now.Sub(l.start) / time.Duration(done)
		eta = "  ETA " + formatDuration(per*time.Duration(l.maxSteps-m.Step))
	}
	// Samples/s, TFLOPS and MFU are the step's tokens/s times constants: smoothed
	// with it, so that the figures on the line agree.
	smooth := 1.0
	if m.TokensPerS > 0 && !math.IsInf(m.TokensPerS, 0) {
		smooth = l.rate / m.TokensPerS
	}
	mfu := ""
	if m.MFU > 0 {
		mfu = fmt.Sprintf("  MFU %.1f%%", 100*m.MFU*smooth)
	}
	mem := ""
	if b := memoryShown(m.MemoryMetrics); b > 0 {
		mem = "  mem " + kernels.GiB(b)
	}
	l.line = fmt.Sprintf("step %d/%d  loss %.4f%s  lr %.1e  |g| %.2f  %s tok/s  %.1f samples/s  %s TFLOPS%s%s%s",
		m.Step, l.maxSteps, m.Loss, l.val, m.LR, m.GradNorm, formatCount(int64(math.Round(l.rate))), m.SamplesPerS*smooth, formatTFLOPS(m.TFLOPS*smooth), mfu, mem, eta)
	io.WriteString(l.w, "\r"+l.line+"\x1b[K")
	l.drawn = true
}

// memoryShown is the memory the live line shows: what the device allocator has
// handed out, else the trainer's own buffers (weights, gradients, AdamW, activations).
func memoryShown(m train.MemoryMetrics) int64 {
	if m.DeviceBytes > 0 {
		return m.DeviceBytes
	}
	return m.ParamsBytes + m.GradsBytes + m.OptimizerBytes + m.ActivationsBytes
}

// done ends the line with a newline.
func (l *liveLine) done() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.drawn {
		io.WriteString(l.w, "\n")
		l.drawn = false
	}
}

func formatDuration(d time.Duration) string {
	s := int64(d.Round(time.Second) / time.Second)
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

// formatCount writes n with thousands separators: 1,203,334.
func formatCount(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// formatTFLOPS writes a TFLOPS figure with three significant digits or more: 312, 41.2,
// 0.0312.
func formatTFLOPS(x float64) string {
	switch {
	case x >= 100:
		return fmt.Sprintf("%.0f", x)
	case x >= 1:
		return fmt.Sprintf("%.1f", x)
	}
	return fmt.Sprintf("%.3g", x)
}
