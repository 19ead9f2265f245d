package train

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gptkit/internal/opencount"
	"gptkit/kernels/cpu"
	"gptkit/train/checkpoint"
)

// TestResumeFallbackReadsFew: resume auto over a run that keeps all of its 10
// checkpoints, the newest damaged, falls back to the one before reading two
// checkpoint.json: the newest's, to find it, and the one before's, to find it and
// to read its files against. It read every checkpoint's twice more (a scan for the
// older one, another to set the newer ones aside) and the older one's once more:
// 22 reads, one GET each were the checkpoints on S3. What it logs, and where it
// continues from, are as before.
func TestResumeFallbackReadsFew(t *testing.T) {
	cfg := tinyConfig(t, tinyDataset(t))
	cfg.Dropout, cfg.EvalSteps, cfg.MaxSteps, cfg.LRDecaySteps, cfg.CheckpointEvery = 0, 0, 10, 12, 1
	if _, err := Run(context.Background(), cfg, cpu.New(1), Single{}, testLogger(t)); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(cfg.Out, CheckpointsDir)
	file := filepath.Join(root, checkpoint.DirName(10), OptimizerFile)
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-2] ^= 0x40
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for s := int64(1); s <= 10; s++ {
		dirs = append(dirs, filepath.Join(root, checkpoint.DirName(s)))
	}
	opens := opencount.Watch(t, checkpoint.ManifestName, dirs...)

	var logs bytes.Buffer
	res := cfg
	res.MaxSteps, res.CheckpointEvery = 11, 100
	got, err := Run(context.Background(), res, cpu.New(1), Single{}, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(root, checkpoint.DirName(9)); got.ResumedFrom != want || got.Step != 11 {
		t.Fatalf("resumed from %q to step %d, want from %q to 11", got.ResumedFrom, got.Step, want)
	}
	if n := opens(); n != 2 {
		t.Errorf("the resume opened %s %d times, want 2 (the newest's, the one before's)", checkpoint.ManifestName, n)
	}
	for _, want := range []string{"the newest checkpoint is damaged: continuing from the one before it",
		"damaged=" + filepath.Join(root, checkpoint.DirName(10)), "continuing_from=" + filepath.Join(root, checkpoint.DirName(9)),
		"moved_to=" + filepath.Join(root, checkpoint.AsidePrefix+"after-"+checkpoint.DirName(9))} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
	if strings.Count(logs.String(), "level=WARN") != 1 {
		t.Errorf("want one warning:\n%s", logs.String())
	}
	if _, err := os.Stat(filepath.Join(root, checkpoint.DirName(10))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the damaged checkpoint is still in %s: %v", root, err)
	}
}
