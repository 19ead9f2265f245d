package tensorboard

import (
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
