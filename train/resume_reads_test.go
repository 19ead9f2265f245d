package train

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"gptkit/internal/miniotest"
	"gptkit/kernels/cpu"
	"gptkit/storage"
	"gptkit/train/checkpoint"
)

// countingProxy passes requests on to the S3 server at endpoint, counting the GETs
// of each object (by its path's last element).
type countingProxy struct {
	mu   sync.Mutex
	gets map[string]int
}

func (p *countingProxy) count(name string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.gets[name]
}

func (p *countingProxy) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gets = map[string]int{}
}

func startCountingProxy(t *testing.T, endpoint string) (*countingProxy, string) {
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	p := &countingProxy{gets: map[string]int{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			p.mu.Lock()
			p.gets[r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]]++
			p.mu.Unlock()
		}
		rp.ServeHTTP(w, r) // the Host header stays the proxy's, which the request was signed for
	}))
	t.Cleanup(srv.Close)
	return p, srv.URL
}

// TestResumeReadsManifestOnce: a resume reads the checkpoint's checkpoint.json once
// (one GET on S3), when --resume DIR is checked to be a complete checkpoint
// (checkpoint.ResolveDir), and reads all its files against that. It was read for
// each file, and for each safetensors file once more for its size: six GETs
// (LoadCheckpoint, which reads no optimizer.safetensors: four), then once to resolve
// and once more for the files: two. One with 2 ranks too, where rank 0 reads
// optimizer.safetensors later, as it broadcasts it (streamMoments), against the
// checkpoint.json it read for the other files.
func TestResumeReadsManifestOnce(t *testing.T) {
	srv := miniotest.Shared(t)
	srv.Setenv(t)
	t.Setenv("AWS_ENDPOINT_URL_S3", "")
	proxy, endpoint := startCountingProxy(t, srv.Endpoint)
	cfg := tinyConfig(t, tinyDataset(t))
	cfg.MaxSteps, cfg.LRDecaySteps = 4, 6
	first, err := Run(context.Background(), cfg, cpu.New(2), Single{}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	files := checkpointFiles(t, first.Checkpoint)
	m := checkpoint.Manager{Storage: storage.Options{S3Endpoint: endpoint}}
	dir, err := m.Save(context.Background(), "s3://"+srv.NewBucket(t)+"/runs/a/checkpoints", 4, files, 0)
	if err != nil {
		t.Fatal(err)
	}

	proxy.reset()
	res := cfg
	res.Out, res.Resume, res.MaxSteps, res.S3Endpoint = filepath.Join(t.TempDir(), "s3"), dir, 5, endpoint
	got, err := Run(context.Background(), res, cpu.New(2), Single{}, testLogger(t))
	if err != nil {
		t.Fatalf("resume %s: %v", dir, err)
	}
	if got.ResumedFrom != dir || got.Step != 5 {
		t.Fatalf("resumed from %q to step %d; want from %q to 5", got.ResumedFrom, got.Step, dir)
	}
	if n := proxy.count(checkpoint.ManifestName); n != 1 {
		t.Errorf("the resume read %s %d times, want once (to resolve %s, and for its files); GETs %v", checkpoint.ManifestName, n, dir, proxy.gets)
	}

	proxy.reset()
	ranks := res
	ranks.Out, ranks.BatchSize = filepath.Join(t.TempDir(), "ranks"), cfg.BatchSize/2
	got, errs := runRanks(t, context.Background(), ranks, startComms(t, 2), nil)
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("2-rank resume %s: %v", dir, err)
	}
	if got.ResumedFrom != dir || got.Step != 5 {
		t.Fatalf("2 ranks resumed from %q to step %d; want from %q to 5", got.ResumedFrom, got.Step, dir)
	}
	if n := proxy.count(checkpoint.ManifestName); n != 1 {
		t.Errorf("the 2-rank resume read %s %d times, want once (to resolve %s, and for its files); GETs %v", checkpoint.ManifestName, n, dir, proxy.gets)
	}

	proxy.reset()
	if _, _, err := LoadCheckpointFrom(context.Background(), dir, cpu.New(1), storage.Options{S3Endpoint: endpoint}); err != nil {
		t.Fatal(err)
	}
	if n := proxy.count(checkpoint.ManifestName); n != 1 {
		t.Errorf("LoadCheckpointFrom read %s %d times, want once (to resolve %s, and for its files); GETs %v", checkpoint.ManifestName, n, dir, proxy.gets)
	}
	// A run directory, its newest checkpoint found by reading its checkpoint.json.
	proxy.reset()
	run := strings.TrimSuffix(dir, "/checkpoints/step_00000004")
	if _, st, err := LoadCheckpointFrom(context.Background(), run, cpu.New(1), storage.Options{S3Endpoint: endpoint}); err != nil || st.Step != 4 {
		t.Fatalf("LoadCheckpointFrom(%s): step %v, %v", run, st, err)
	}
	if n := proxy.count(checkpoint.ManifestName); n != 1 {
		t.Errorf("LoadCheckpointFrom(%s) read %s %d times, want once (to find its newest checkpoint, and for its files); GETs %v", run, checkpoint.ManifestName, n, proxy.gets)
	}
}

// TestLatestOnS3ReadsNewestFirst: finding the newest complete checkpoint of a root
// that keeps all of them (keep_checkpoints: 0) GETs checkpoint.json newest first up to
// the first complete one: 1 GET of 20 (it was 20, one per checkpoint, at each resume
// and each restart of a launched job), 3 when the newest two are incomplete (both
// still warned about); Resolve of the run directory the same; Scan still reads all.
func TestLatestOnS3ReadsNewestFirst(t *testing.T) {
	srv := miniotest.Shared(t)
	srv.Setenv(t)
	t.Setenv("AWS_ENDPOINT_URL_S3", "")
	proxy, endpoint := startCountingProxy(t, srv.Endpoint)
	var logs strings.Builder
	m := checkpoint.Manager{Storage: storage.Options{S3Endpoint: endpoint}, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	ctx := context.Background()
	run := "s3://" + srv.NewBucket(t) + "/runs/a"
	root := run + "/checkpoints"
	for s := int64(1); s <= 20; s++ {
		files := []checkpoint.File{{Name: "model.bin", Write: func(w io.Writer) error { _, err := fmt.Fprintf(w, "step %d", s); return err }}}
		if _, err := m.Save(ctx, root, s, files, 0); err != nil {
			t.Fatal(err)
		}
	}
	gets := func() int { return proxy.count(checkpoint.ManifestName) }

	proxy.reset()
	if dir, step, err := m.Latest(ctx, root); err != nil || step != 20 || gets() != 1 {
		t.Errorf("Latest = %s, %d, %v after %d GETs of %s; want step 20 after 1", dir, step, err, gets(), checkpoint.ManifestName)
	}
	proxy.reset()
	if dir, err := m.Resolve(ctx, run); err != nil || dir != root+"/step_00000020" || gets() != 1 {
		t.Errorf("Resolve(%s) = %s, %v after %d GETs of %s; want step 20 after 1", run, dir, err, gets(), checkpoint.ManifestName)
	}
	proxy.reset()
	if entries, err := m.Scan(ctx, root); err != nil || len(entries) != 20 || gets() != 20 {
		t.Errorf("Scan = %d entries, %v after %d GETs of %s; want 20 after 20", len(entries), err, gets(), checkpoint.ManifestName)
	}

	// The newest two incomplete: 20's model.bin overwritten shorter, 19's checkpoint.json not JSON.
	st, err := storage.Open(ctx, root, storage.Options{S3Endpoint: endpoint})
	if err != nil {
		t.Fatal(err)
	}
	for key, data := range map[string]string{"step_00000020/model.bin": "x", "step_00000019/" + checkpoint.ManifestName: "{"} {
		w, err := st.Create(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(data))
		if err := w.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	proxy.reset()
	if dir, step, err := m.Latest(ctx, root); err != nil || step != 18 || gets() != 3 {
		t.Errorf("Latest = %s, %d, %v after %d GETs of %s; want step 18 after 3", dir, step, err, gets(), checkpoint.ManifestName)
	}
	for _, want := range []string{"step_00000020 problem=\"model.bin has 1 bytes", "step_00000019 problem="} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
}
