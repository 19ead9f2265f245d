package main

import (
	"bytes"
	"strings"
	"testing"

	"gptkit/train"
)

// TestLiveLineThroughput: the terminal's step line shows tokens/s, samples/s, TFLOPS per
// device and MFU (when the backend knows its peak).
func TestLiveLineThroughput(t *testing.T) {
	var out bytes.Buffer
	l := newLiveLine(&out, 2000)
	val := 1.7925
	l.step(train.Metrics{Step: 1200, Loss: 1.612, LR: 4.3e-4, GradNorm: 0.41, TokensPerS: 21331, SamplesPerS: 27.8, TFLOPS: 0.0312, MFU: 0.241, ValLoss: &val})
	for _, want := range []string{"step 1200/2000", "loss 1.6120", "val 1.7925@1200", "21,331 tok/s", "27.8 samples/s", "0.0312 TFLOPS", "MFU 24.1%"} {
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
