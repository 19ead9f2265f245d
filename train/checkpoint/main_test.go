package checkpoint

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"gptkit/internal/miniotest"
)

// Environment of the crash child (crash_test.go): the test binary re-executed with these
// runs crashChild instead of the tests.
const (
	envCrashPoint = "GPTKIT_CHECKPOINT_TEST_CRASH_AT"
	envCrashRoot  = "GPTKIT_CHECKPOINT_TEST_ROOT"
)

func TestMain(m *testing.M) {
	if point := os.Getenv(envCrashPoint); point != "" {
		os.Exit(crashChild(point, os.Getenv(envCrashRoot)))
	}
	os.Exit(miniotest.Main(m))
}

var ctx = context.Background()

// payload returns n deterministic pseudo-random bytes for step.
func payload(step int64, n int) []byte {
	r := rand.NewChaCha8([32]byte{byte(step), byte(step >> 8), 42})
	b := make([]byte, n)
	r.Read(b)
	return b
}

// stepFiles are the files a test saves at step: model.bin (written in two halves, with
// mid called between them) and state.json.
func stepFiles(step int64, mid func()) []File {
	model := payload(step, 1<<20+3)
	return []File{
		{Name: "model.bin", Write: func(w io.Writer) error {
			if _, err := w.Write(model[:len(model)/2]); err != nil {
				return err
			}
			if mid != nil {
				mid()
			}
			_, err := w.Write(model[len(model)/2:])
			return err
		}},
		{Name: "state.json", Write: func(w io.Writer) error {
			_, err := fmt.Fprintf(w, `{"step":%d}`+"\n", step)
			return err
		}},
	}
}

// checkStep verifies the checkpoint in dir holds step's files.
func checkStep(t *testing.T, dir string, step int64) {
	t.Helper()
	man, err := Verify(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if man.Step != step || len(man.Files) != 2 {
		t.Fatalf("%s: manifest %+v, want step %d with 2 files", dir, man, step)
	}
	model, err := ReadFile(ctx, dir, "model.bin")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(model, payload(step, 1<<20+3)) {
		t.Fatalf("%s: model.bin differs from step %d's", dir, step)
	}
	state, err := ReadFile(ctx, dir, "state.json")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf(`{"step":%d}`+"\n", step); string(state) != want {
		t.Fatalf("%s: state.json %q, want %q", dir, state, want)
	}
	if got := fmt.Sprintf("%x", sha256.Sum256(model)); got != mustFile(t, man, "model.bin").SHA256 {
		t.Fatalf("manifest sha256 %s, file %s", mustFile(t, man, "model.bin").SHA256, got)
	}
}

func mustFile(t *testing.T, man *Manifest, name string) FileInfo {
	t.Helper()
	f, ok := man.File(name)
	if !ok {
		t.Fatalf("manifest has no %s", name)
	}
	return f
}

// crashChild saves step 3 into root (keep 2) and stops at point: it prints "stopped"
// and sleeps until the parent kills it.
func crashChild(point, root string) int {
	stop := func() {
		fmt.Println("stopped at " + point)
		time.Sleep(time.Hour)
	}
	hook = func(p string) {
		if p == point {
			stop()
		}
	}
	mid := func() {
		if point == "mid-file" {
			stop()
		}
	}
	if _, err := Save(context.Background(), root, 3, stepFiles(3, mid), 2); err != nil {
		fmt.Println("error:", err)
		return 1
	}
	fmt.Println("finished")
	return 0
}
