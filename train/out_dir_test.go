package train

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"gptkit/kernels/cpu"
)

// A run that fails before writing anything (here: its data is missing) leaves
// no run directory behind when it made it, and one it was given as it was
// (no hidden lock file).
func TestFailedRunLeavesNoRunDirectory(t *testing.T) {
	c := tinyConfig(t, filepath.Join(t.TempDir(), "no-such-dataset"))
	if _, err := NewTrainer(context.Background(), c, cpu.New(1), nil, testLogger(t)); err == nil {
		t.Fatal("NewTrainer on missing data succeeded")
	}
	if _, err := os.Stat(c.Out); !os.IsNotExist(err) {
		des, _ := os.ReadDir(c.Out)
		t.Errorf("the run directory it made is still there (%v, %d entries)", err, len(des))
	}

	// --out runs/x where runs/ did not exist either: both go, runs/ first made.
	parent := t.TempDir()
	c.Out = filepath.Join(parent, "runs", "x")
	if _, err := NewTrainer(context.Background(), c, cpu.New(1), nil, testLogger(t)); err == nil {
		t.Fatal("NewTrainer on missing data succeeded")
	}
	if des, err := os.ReadDir(parent); err != nil || len(des) != 0 {
		t.Errorf("--out runs/x: %s holds %v (%v) afterwards; want nothing", parent, des, err)
	}

	given := t.TempDir()
	c.Out = given
	if _, err := NewTrainer(context.Background(), c, cpu.New(1), nil, testLogger(t)); err == nil {
		t.Fatal("NewTrainer on missing data succeeded")
	}
	if des, err := os.ReadDir(given); err != nil || len(des) != 0 {
		t.Errorf("a run directory given empty: %v, %v; want it kept, empty", des, err)
	}
}
