package tensorboard

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gptkit/train/tensorboard/tbtest"
)

func TestEventFile(t *testing.T) {
	dir := t.TempDir()
	w, err := Create(filepath.Join(dir, "tb"), 11)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Scalars(11, Scalar{"train/loss", 2.5}, Scalar{"train/lr", 1e-3}); err != nil {
		t.Fatal(err)
	}
	if err := w.Scalars(12, Scalar{"train/loss", 2.25}, Scalar{"val/loss", 2.75}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(filepath.Base(w.Path()), "events.out.tfevents.") {
		t.Errorf("file name %s", w.Path())
	}
	// A second file at once (a resumed run in the same process): another name.
	again, err := Create(filepath.Join(dir, "tb"), 13)
	if err != nil || again.Path() == w.Path() {
		t.Fatalf("second file %v: %v", again, err)
	}
	again.Close()
	events, err := tbtest.Read(w.Path())
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 4 {
		t.Fatalf("%d events, want 4", len(events))
	}
	if events[0].FileVersion != "brain.Event:2" || events[0].WallTime < 1e9 {
		t.Errorf("first event %+v", events[0])
	}
	if events[1].SessionLog != 1 || events[1].Step != 11 {
		t.Errorf("second event %+v, want SessionLog START at step 11", events[1])
	}
	if e := events[2]; e.Step != 11 || e.Scalars["train/loss"] != 2.5 || e.Scalars["train/lr"] != float32(1e-3) || len(e.Scalars) != 2 {
		t.Errorf("step 11: %+v", e)
	}
	if e := events[3]; e.Step != 12 || e.Scalars["train/loss"] != 2.25 || e.Scalars["val/loss"] != 2.75 {
		t.Errorf("step 12: %+v", e)
	}
}

// TestCreateSyncsDir: the event file's name in its directory is synced as the file is
// made (it was not: a crash could lose the whole file, where metrics.jsonl, made
// beside it, survives), and a directory that cannot be synced fails Create, naming the
// file, and removes the file it made.
func TestCreateSyncsDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tb")
	var synced []string
	old := syncDir
	t.Cleanup(func() { syncDir = old })
	syncDir = func(d string) error {
		synced = append(synced, filepath.Clean(d))
		return old(d)
	}
	w, err := Create(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if len(synced) != 1 || synced[0] != dir {
		t.Errorf("Create synced %q, want [%s] (the directory of %s)", synced, dir, w.Path())
	}

	syncDir = func(string) error { return errors.New("fsync directory: input/output error") }
	if _, err := Create(dir, 2); err == nil || !strings.Contains(err.Error(), "tensorboard: create "+dir+string(os.PathSeparator)+"events.out.tfevents.") ||
		!strings.Contains(err.Error(), "input/output error") {
		t.Errorf("Create with a directory that cannot be synced: %v", err)
	}
	if des, err := os.ReadDir(dir); err != nil || len(des) != 1 || des[0].Name() != filepath.Base(w.Path()) {
		t.Errorf("after the failed Create %s holds %v (%v), want only %s", dir, des, err, filepath.Base(w.Path()))
	}
}
