package pipelines

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"gptkit/internal/miniotest"
	"gptkit/shards"
	"gptkit/storage"
)

// The crash helper: when GPTKIT_CRASH_RUN names a dataset location, this test binary runs
// `tokenize run` into it (reporting "writing" on stdout once the first batch is being
// written) and is killed by the parent test. GPTKIT_RESUME_RUN starts the resume helper
// (resume_test.go) instead.
func TestMain(m *testing.M) {
	if loc := os.Getenv("GPTKIT_CRASH_RUN"); loc != "" {
		crashHelper(loc, os.Getenv("GPTKIT_CRASH_INPUT"))
		return
	}
	if loc := os.Getenv("GPTKIT_FULLDISK_RUN"); loc != "" {
		os.Exit(fullDiskHelper(loc, os.Getenv("GPTKIT_CRASH_INPUT"))) // faults_test.go
	}
	if out := os.Getenv("GPTKIT_RESUME_RUN"); out != "" {
		resumeHelper(out) // resume_test.go
		return
	}
	os.Exit(m.Run())
}

func crashHelper(loc, input string) {
	ctx := context.Background()
	st, err := storage.Open(ctx, loc, storage.Options{S3Endpoint: os.Getenv("AWS_ENDPOINT_URL_S3"), PartSize: storage.MinPartSize})
	if err != nil {
		panic(err)
	}
	tok := gpt2(&testing.T{})
	said := false
	run := &TokenizeRun{Inputs: []string{input}, Store: st, Name: "crash", Tokenizer: tok, AppendEOD: true, Workers: 1,
		Progress: func(bytes, docs int64) {
			if !said && docs > 0 {
				os.Stdout.WriteString("writing\n")
				said = true
			}
		}}
	run.Run(ctx)
	os.Stdout.WriteString("finished\n") // the parent kills us long before this
	time.Sleep(time.Hour)
}

// TestKilledRunLeavesNothingVisible kills a `tokenize run` process in the middle of its
// shard: afterwards the dataset has no manifest and no shard under a final name, in a
// directory and on S3 (MinIO).
func TestKilledRunLeavesNothingVisible(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a large input; skipped with -short")
	}
	input := filepath.Join(t.TempDir(), "big.jsonl")
	f, _ := os.Create(input)
	enc := json.NewEncoder(f)
	line := strings.Repeat("the quick brown fox jumps over the lazy dog. ", 100)
	for i := 0; i < 40000; i++ { // ~180 MB
		enc.Encode(map[string]string{"text": line})
	}
	f.Close()

	t.Run("dir", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "ds")
		killMidRun(t, dir, input, nil)
		st := dirStore(t, dir)
		assertNothingVisible(t, st)
		entries, _ := os.ReadDir(dir)
		midShard := false
		for _, e := range entries {
			midShard = midShard || strings.HasPrefix(e.Name(), ".crash_text_document.bin.tmp")
			if strings.HasSuffix(e.Name(), ".bin") || strings.HasSuffix(e.Name(), ".idx") || e.Name() == "manifest.json" {
				t.Errorf("a killed run left %s", e.Name())
			}
		}
		if !midShard {
			t.Errorf("no temporary .bin: the run was not killed in the middle of its shard (%v)", entries)
		}
	})
	t.Run("minio", func(t *testing.T) {
		srv := miniotest.Start(t)
		loc := "s3://" + srv.NewBucket(t) + "/ds"
		killMidRun(t, loc, input, srv.Env())
		srv.Setenv(t)
		st, err := storage.Open(context.Background(), loc, storage.Options{S3Endpoint: srv.Endpoint})
		if err != nil {
			t.Fatal(err)
		}
		assertNothingVisible(t, st)
	})
}

// killMidRun starts the crash helper on loc and SIGKILLs it once it is writing.
func killMidRun(t *testing.T, loc, input string, env []string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), env...), "GPTKIT_CRASH_RUN="+loc, "GPTKIT_CRASH_INPUT="+input)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, _ := out.Read(buf)
	if !strings.HasPrefix(string(buf[:n]), "writing") {
		cmd.Process.Kill()
		t.Fatalf("the helper said %q instead of starting to write", buf[:n])
	}
	// Well into the shard (several MB of .bin and S3 parts) and well before its end: one
	// worker tokenizes the whole input in under a second (it had finished before a 700 ms
	// wait ended).
	time.Sleep(150 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
}

func assertNothingVisible(t *testing.T, st storage.Store) {
	t.Helper()
	ctx := context.Background()
	if _, err := shards.ReadManifest(ctx, st, ""); !errors.Is(err, shards.ErrMissing) {
		t.Errorf("after a kill, the manifest: %v", err)
	}
	infos, err := st.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, info := range infos {
		if strings.HasSuffix(info.Key, ".bin") || strings.HasSuffix(info.Key, ".idx") || strings.HasSuffix(info.Key, ".json") {
			t.Errorf("after a kill, %s is visible (%d bytes)", info.Key, info.Size)
		}
	}
}
