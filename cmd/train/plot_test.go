package main

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gptkit/internal/durable"
)

func runPlotArgs(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = runPlot(context.Background(), args, &o, &e)
	return code, o.String(), e.String()
}

func TestPlot(t *testing.T) {
	dir := t.TempDir()
	metrics := `{"step":0,"loss":4.2,"lr":0.001,"grad_norm":1.5,"tokens_per_s":9000,"val_loss":4.25}
{"step":1,"loss":3.9,"lr":0.001,"grad_norm":1.2,"tokens_per_s":9100}
{"step":2,"loss":3.5,"lr":0.001,"grad_norm":1.1,"tokens_per_s":9050,"val_loss":3.6}
`
	os.WriteFile(filepath.Join(dir, "metrics.jsonl"), []byte(metrics), 0o666)
	var synced []string
	defer func(old func(string) error) { durable.DirSync = old }(durable.DirSync)
	durable.DirSync = func(d string) error { synced = append(synced, d); return nil }
	code, out, errOut := runPlotArgs("--out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !slices.Contains(synced, dir) {
		t.Errorf("the directory of loss.png was not synced after the rename (synced %q)", synced)
	}
	want := filepath.Join(dir, "loss.png")
	if strings.TrimSpace(out) != want {
		t.Fatalf("stdout %q, want %q", out, want)
	}
	f, err := os.Open(want)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := png.Decode(f); err != nil {
		t.Fatal(err)
	}
	if des, _ := os.ReadDir(dir); len(des) != 2 {
		t.Fatalf("the directory holds %d entries, want metrics.jsonl and loss.png (no temp files)", len(des))
	}

	// A bad line: exit 1, one line naming the file and the line number; loss.png kept.
	os.WriteFile(filepath.Join(dir, "metrics.jsonl"), []byte(metrics+"{\"step\":3,\"loss\":\n"), 0o666)
	code, _, errOut = runPlotArgs("--out", dir)
	if code != 1 || !strings.Contains(errOut, "metrics.jsonl line 4:") || strings.Count(errOut, "\n") != 1 {
		t.Fatalf("bad line: exit %d, stderr %q", code, errOut)
	}
	if _, err := os.Stat(want); err != nil {
		t.Fatalf("a failed plot removed the old loss.png: %v", err)
	}
}

func TestPlotUsage(t *testing.T) {
	if code, _, errOut := runPlotArgs(); code != 2 || !strings.Contains(errOut, "--out DIR is required") {
		t.Errorf("no --out: exit %d, %q", code, errOut)
	}
	if code, _, _ := runPlotArgs("--out", t.TempDir(), "extra"); code != 2 {
		t.Errorf("stray argument: exit %d", code)
	}
	if code, _, errOut := runPlotArgs("-h"); code != 0 || !strings.Contains(errOut, "usage: train plot --out DIR") {
		t.Errorf("-h: exit %d, %q", code, errOut)
	}
	if code, _, errOut := runPlotArgs("--out", t.TempDir()); code != 1 || !strings.Contains(errOut, "metrics.jsonl") {
		t.Errorf("no metrics: exit %d, %q", code, errOut)
	}
}
