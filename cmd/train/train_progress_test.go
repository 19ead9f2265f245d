package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"gptkit/train"
)

// TestLiveLineThroughput: the terminal's step line shows tokens/s, samples/s, TFLOPS per
// device, MFU (when the backend knows its peak) and the memory held.
func TestLiveLineThroughput(t *testing.T) {
	var out bytes.Buffer
	l := newLiveLine(&out, 2000)
	val := 1.7925
	l.step(train.Metrics{Step: 1200, Loss: 1.612, LR: 4.3e-4, GradNorm: 0.41, TokensPerS: 21331, SamplesPerS: 27.8, TFLOPS: 0.0312, MFU: 0.241, ValLoss: &val,
		MemoryMetrics: train.MemoryMetrics{ParamsBytes: 1 << 20, GradsBytes: 1 << 20, OptimizerBytes: 2 << 20, ActivationsBytes: 1 << 19}})
	for _, want := range []string{"step 1200/2000", "loss 1.6120", "val 1.7925@1200", "21,331 tok/s", "27.8 samples/s", "0.0312 TFLOPS", "MFU 24.1%", "mem 4.5 MiB"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("line %q lacks %q", out.String(), want)
		}
	}
	out.Reset()
	l = newLiveLine(&out, 2000)
	l.step(train.Metrics{Step: 1, TokensPerS: 10, SamplesPerS: 1, TFLOPS: 312.4})
	if s := out.String(); strings.Contains(s, "MFU") || !strings.Contains(s, "312 TFLOPS") {
		t.Errorf("without a peak: %q", s)
	}
}

// TestLiveLineSmoothsTogether: samples/s, TFLOPS and MFU are smoothed with tokens/s
// (one outlier step moves them all alike), and no ETA is shown before a second step
// has timed one (it read 0:00 on the first).
func TestLiveLineSmoothsTogether(t *testing.T) {
	var out bytes.Buffer
	l := newLiveLine(&out, 100)
	l.step(train.Metrics{Step: 1, TokensPerS: 1000, SamplesPerS: 10, TFLOPS: 1, MFU: 0.1})
	if s := out.String(); strings.Contains(s, "ETA") {
		t.Errorf("first step shows an ETA: %q", s)
	}
	l.last = l.last.Add(-time.Second)
	out.Reset()
	l.step(train.Metrics{Step: 2, TokensPerS: 11000, SamplesPerS: 110, TFLOPS: 11, MFU: 0.11 * 10})
	for _, want := range []string{"2,000 tok/s", "20.0 samples/s", "2.0 TFLOPS", "MFU 20.0%", "ETA"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("line %q lacks %q", out.String(), want)
		}
	}
}
