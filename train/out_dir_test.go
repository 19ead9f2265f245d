package train

import (
	"context"
	"os"
	"path/filepath"
	"strings"
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

// TestOutOnS3Refused: --out s3://bucket/run is refused, saying what to do. It made a
// local directory named "s3:" in the working directory and wrote the run there (its
// checkpoints too, filepath.Join having made "s3:/bucket/run"), while the lock went to
// the bucket: a run that seemed to checkpoint to S3 kept everything on the node.
func TestOutOnS3Refused(t *testing.T) {
	c := tinyConfig(t, tinyDataset(t))
	wd := t.TempDir()
	t.Chdir(wd)
	t.Setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:1")
	t.Setenv("AWS_ACCESS_KEY_ID", "k")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "s")
	c.Out = "s3://bucket/run"
	_, err := NewTrainer(context.Background(), c, cpu.New(1), nil, testLogger(t))
	if err == nil || !strings.Contains(err.Error(), "out s3://bucket/run: the run directory must be a local directory") {
		t.Errorf("out s3://bucket/run: %v; want a refusal saying it must be local", err)
	}
	if des, _ := os.ReadDir(wd); len(des) != 0 {
		t.Errorf("the working directory holds %v afterwards; want nothing", des)
	}
	// file:// names a local directory: the refusal says to give it as a path.
	c.Out = "file:///tmp/run"
	if _, err := NewTrainer(context.Background(), c, cpu.New(1), nil, testLogger(t)); err == nil || !strings.Contains(err.Error(), "give the run directory as a path (/tmp/run)") {
		t.Errorf("out file:///tmp/run: %v; want a refusal saying to give /tmp/run", err)
	}
}
