package main

import (
	"path/filepath"
	"testing"

	"gptkit/internal/opencount"
	"gptkit/train/hfgpt2"
)

// TestInitFromReadsOnceCommand: `train --init-from DIR` reads DIR's config.json and
// model.safetensors' header once for the whole command: the shape it fills the
// unset keys from (shapeFromInit) and the run's weights come from one opening
// (train.Config.InitOpened). It read them twice, shapeFromInit opening the
// directory again before the run did.
func TestInitFromReadsOnceCommand(t *testing.T) {
	data, _ := makeCharDataset(t)
	_, hf := trainAndExport(t, data)
	out := filepath.Join(t.TempDir(), "run2")
	configOpens, weightOpens := opencount.Watch(t, hfgpt2.ConfigName, hf), opencount.Watch(t, hfgpt2.WeightsName, hf)
	args := []string{"--data", data, "--out", out, "--device", "ref", "--batch-size", "4", "--max-steps", "2",
		"--warmup-steps", "0", "--lr-decay-steps", "2", "--eval-steps", "2", "--init-from", hf, "--cache-dir", out + "-cache"}
	if code, _, stderr := runTrain(t, args...); code != 0 {
		t.Fatalf("--init-from: exit %d: %s", code, stderr)
	}
	if c, w := configOpens(), weightOpens(); c != 1 || w != 1 {
		t.Errorf("train --init-from opened %s %d times and %s %d times, want once each", hfgpt2.ConfigName, c, hfgpt2.WeightsName, w)
	}
}
