package train

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"gptkit/kernels"
	"gptkit/kernels/cpu"
	"gptkit/kernels/ref"
	"gptkit/shards"
	"gptkit/storage"
	"gptkit/train/checkpoint"
	"gptkit/train/safetensors"
)

// writeTinyDataset writes a dataset of one train and one val document (as prep
// shakespeare does) with a tokenizer of vocab ids and the given fingerprint.
func writeTinyDataset(t testing.TB, dir string, train, val []int, vocab int, fingerprint string) string {
	t.Helper()
	ctx := context.Background()
	st, err := storage.Open(ctx, dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := shards.NewManifest(shards.TokenizerInfo{Name: "tiny", Fingerprint: fingerprint, VocabSize: vocab, EODID: -1}, shards.Uint16, nil)
	for _, s := range []struct {
		prefix, split string
		doc           []int
	}{{"tiny_text_document", "train", train}, {"tiny_val_text_document", "val", val}} {
		w, err := shards.NewWriter(ctx, st, s.prefix, shards.Uint16)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.AddDocument(s.doc); err != nil {
			t.Fatal(err)
		}
		info, err := w.Close()
		if err != nil {
			t.Fatal(err)
		}
		info.Split = s.split
		if err := m.Add("", info); err != nil {
			t.Fatal(err)
		}
	}
	if err := shards.WriteManifest(ctx, st, "", m); err != nil {
		t.Fatal(err)
	}
	return dir
}

// patternDoc is n tokens of a learnable pattern over vocab ids: runs that count up
// from a pseudo-random start.
func patternDoc(n, vocab int, seed uint64) []int {
	doc := make([]int, n)
	x := seed
	cur := 0
	for i := range doc {
		if i%7 == 0 {
			x = mix64(x)
			cur = int(x % uint64(vocab))
		}
		doc[i] = cur
		cur = (cur + 1) % vocab
	}
	return doc
}

func tinyDataset(t testing.TB) string {
	return writeTinyDataset(t, t.TempDir(), patternDoc(6000, 20, 1), patternDoc(1500, 20, 2), 20, "tiny-fp-1")
}

func tinyConfig(t testing.TB, data string) Config {
	c := Default()
	c.Data, c.Out, c.CacheDir = data, filepath.Join(t.TempDir(), "run"), t.TempDir()
	c.NLayer, c.NHead, c.NEmbd, c.BlockSize = 2, 2, 16, 16
	c.BatchSize, c.GradAccum, c.MaxSteps = 4, 2, 20
	c.LR, c.MinLR, c.WarmupSteps, c.LRDecaySteps = 1e-2, 1e-3, 3, 20
	c.Dropout, c.Bias = 0.1, true
	c.EvalEvery, c.EvalSteps, c.CheckpointEvery, c.KeepCheckpoints = 5, 2, 5, 0
	c.Seed = 7
	return c
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func readMetricsFile(t testing.TB, out string) []Metrics {
	t.Helper()
	f, err := os.Open(filepath.Join(out, MetricsName))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ms, err := ReadMetrics(f)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// TestTrainLearns: a tiny model on a repetitive dataset drives the loss down, and
// the run directory holds what it should.
func TestTrainLearns(t *testing.T) {
	cfg := tinyConfig(t, tinyDataset(t))
	cfg.MaxSteps, cfg.LRDecaySteps, cfg.Dropout = 80, 80, 0
	cfg.EvalEvery, cfg.CheckpointEvery, cfg.KeepCheckpoints = 40, 40, 1
	res, err := Run(context.Background(), cfg, ref.New(), Single{}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	ms := readMetricsFile(t, cfg.Out)
	if len(ms) != 80 {
		t.Fatalf("%d metric lines, want 80", len(ms))
	}
	first, last := ms[0].Loss, ms[len(ms)-1].Loss
	t.Logf("loss %.4f -> %.4f, val_loss %.4f", first, last, res.ValLoss)
	if math.Abs(first-math.Log(20)) > 0.3 {
		t.Errorf("first loss %.4f, want about ln(20) = %.4f", first, math.Log(20))
	}
	if last > 0.5*first {
		t.Errorf("the loss went from %.4f to %.4f: not learning", first, last)
	}
	for i, m := range ms {
		if m.Step != i+1 {
			t.Fatalf("line %d has step %d", i, m.Step)
		}
		if want := cfg.LRAt(i); m.LR != want {
			t.Errorf("step %d: lr %g, want %g", m.Step, m.LR, want)
		}
		if (m.ValLoss != nil) != (m.Step%40 == 0) {
			t.Errorf("step %d: val_loss %v", m.Step, m.ValLoss)
		}
	}
	if res.ValLoss > 1.5 || ms[79].ValLoss == nil || *ms[79].ValLoss != res.ValLoss {
		t.Errorf("val loss %g (metrics %v)", res.ValLoss, ms[79].ValLoss)
	}
	back := Default()
	data, err := os.ReadFile(filepath.Join(cfg.Out, ConfigName))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := back.LoadYAML(data, ConfigName); err != nil || !reflect.DeepEqual(back, cfg) {
		t.Errorf("config.yaml reads back as %+v (%v), want %+v", back, err, cfg)
	}
	dir, step, found, err := mustLatestIn(t, filepath.Join(cfg.Out, CheckpointsDir))
	if err != nil || !found || step != 80 || dir != res.Checkpoint {
		t.Errorf("latest checkpoint %s step %d found %t (%v), want step 80 at %s", dir, step, found, err, res.Checkpoint)
	}
}

// sameMetrics compares two runs' metrics, all fields but the speed figures, bit for bit.
func sameMetrics(t *testing.T, got, want []Metrics) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d metric lines, want %d", len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		g.TokensPerS, w.TokensPerS, g.SamplesPerS, w.SamplesPerS, g.TFLOPS, w.TFLOPS, g.MFU, w.MFU = 0, 0, 0, 0, 0, 0, 0, 0
		g.MemoryMetrics, w.MemoryMetrics = MemoryMetrics{}, MemoryMetrics{} // the world size changes the padding and ZeRO-1 shards
		gv, wv := math.NaN(), math.NaN()
		if g.ValLoss != nil {
			gv = *g.ValLoss
		}
		if w.ValLoss != nil {
			wv = *w.ValLoss
		}
		g.ValLoss, w.ValLoss = nil, nil
		if g != w || math.Float64bits(gv) != math.Float64bits(wv) {
			t.Errorf("step %d: %+v val_loss %v, want %+v val_loss %v", w.Step, g, gv, w, wv)
		}
	}
}

// readTensors reads one safetensors file of a checkpoint whole (verified).
func readTensors(ctx context.Context, m checkpoint.Manager, dir, name string) (*safetensors.File, error) {
	data, err := m.ReadFile(ctx, dir, name)
	if err != nil {
		return nil, err
	}
	return safetensors.Read(bytes.NewReader(data), int64(len(data)))
}

// sameCheckpointFiles compares the weights and optimizer state of two checkpoints
// bit for bit.
func sameCheckpointFiles(t *testing.T, a, b string) {
	t.Helper()
	for _, name := range []string{ModelFile, OptimizerFile} {
		fa, err := readTensors(context.Background(), checkpoint.Manager{}, a, name)
		if err != nil {
			t.Fatal(err)
		}
		fb, err := readTensors(context.Background(), checkpoint.Manager{}, b, name)
		if err != nil {
			t.Fatal(err)
		}
		if len(fa.Tensors) != len(fb.Tensors) {
			t.Fatalf("%s: %d and %d tensors", name, len(fa.Tensors), len(fb.Tensors))
		}
		for i, ta := range fa.Tensors {
			tb := fb.Tensors[i]
			for k := range ta.Data {
				if math.Float32bits(ta.Data[k]) != math.Float32bits(tb.Data[k]) {
					t.Fatalf("%s %s[%d]: %g vs %g", name, ta.Name, k, ta.Data[k], tb.Data[k])
				}
			}
		}
	}
}

// TestResumeBitIdentical: N steps straight, and N/2-ish steps, an interruption
// (which saves a checkpoint), and a resumed run to N, give the same metrics (all
// but tokens_per_s) and the same final weights and AdamW state, bit for bit: on
// the reference kernels, and on the cpu kernels with another thread count in each
// of the three runs.
func TestResumeBitIdentical(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		straight, before, after func() kernels.Backend
	}{
		{"ref", ref.New, ref.New, ref.New},
		{"cpu", func() kernels.Backend { return cpu.New(2) }, func() kernels.Backend { return cpu.New(1) }, func() kernels.Backend { return cpu.New(3) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resumeBitIdentical(t, func(c Config) Config { return c }, tc.straight, tc.before, tc.after)
		})
	}
}

// resumeBitIdentical is TestResumeBitIdentical's check: config adjusts the tiny
// configuration (the same for the straight run and the interrupted one); each
// run gets a fresh backend.
func resumeBitIdentical(t *testing.T, config func(Config) Config, straightBE, before, after func() kernels.Backend) {
	data := tinyDataset(t)
	straight := config(tinyConfig(t, data))
	want, err := Run(context.Background(), straight, straightBE(), Single{}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}

	cfg := config(tinyConfig(t, data))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tr, err := NewTrainer(ctx, cfg, before(), Single{}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	tr.OnStep = func(m Metrics) {
		if m.Step == 7 { // not a checkpoint step: the interruption saves one
			cancel()
		}
	}
	res, err := tr.Train(ctx)
	tr.Close()
	if !errors.Is(err, context.Canceled) || res.Step != 7 {
		t.Fatalf("interrupted run: step %d, err %v; want step 7 and a cancellation", res.Step, err)
	}
	if !strings.HasSuffix(res.Checkpoint, "07") {
		t.Fatalf("interrupted run saved %q", res.Checkpoint)
	}
	got, err := Run(context.Background(), cfg, after(), Single{}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if got.ResumedFrom != res.Checkpoint || got.Step != 20 {
		t.Fatalf("resumed from %q to step %d, want from %q to 20", got.ResumedFrom, got.Step, res.Checkpoint)
	}
	sameMetrics(t, readMetricsFile(t, cfg.Out), readMetricsFile(t, straight.Out))
	sameCheckpointFiles(t, got.Checkpoint, want.Checkpoint)
	if got.Loss != want.Loss || got.ValLoss != want.ValLoss {
		t.Errorf("final loss %v val %v, want %v val %v", got.Loss, got.ValLoss, want.Loss, want.ValLoss)
	}

	// Running again does nothing: the run is complete.
	again, err := Run(context.Background(), cfg, after(), Single{}, testLogger(t))
	if err != nil || again.Step != 20 {
		t.Fatalf("rerun: step %d, %v", again.Step, err)
	}
	sameMetrics(t, readMetricsFile(t, cfg.Out), readMetricsFile(t, straight.Out))
}

// TestResumeRefuses: another model shape or tokenizer cannot continue a run (another
// tokenizer is named before the shape it changes, with the checkpoint's data; the
// refusal names the keys that differ and the flags that give the checkpoint's shape:
// it listed both shapes whole, leaving the user to spot the difference); resume none
// refuses a directory that holds one.
func TestResumeRefuses(t *testing.T) {
	data := tinyDataset(t)
	cfg := tinyConfig(t, data)
	cfg.MaxSteps, cfg.LRDecaySteps = 5, 5
	if _, err := Run(context.Background(), cfg, ref.New(), Single{}, testLogger(t)); err != nil {
		t.Fatal(err)
	}
	cfg.MaxSteps, cfg.LRDecaySteps = 10, 10

	wider := cfg
	wider.NEmbd = 32
	if _, err := Run(context.Background(), wider, ref.New(), Single{}, testLogger(t)); err == nil || !strings.Contains(err.Error(), "cannot resume") ||
		!strings.Contains(err.Error(), "(n_embd 16 → 32)") || !strings.Contains(err.Error(), "(--n-embd=16;") {
		t.Errorf("resume with n_embd 32: %v, want a refusal naming the key and the flag that gives the checkpoint's value", err)
	}
	other := cfg
	other.Data = writeTinyDataset(t, t.TempDir(), patternDoc(6000, 20, 1), patternDoc(1500, 20, 2), 20, "tiny-fp-2")
	if _, err := Run(context.Background(), other, ref.New(), Single{}, testLogger(t)); err == nil || !strings.Contains(err.Error(), "tokenizer") {
		t.Errorf("resume on another tokenizer: %v, want a refusal", err)
	}
	// Another tokenizer with another vocabulary: the tokenizer is named, not a
	// --vocab-size to pass (which would not make the ids mean the same).
	bigger := cfg
	bigger.Data = writeTinyDataset(t, t.TempDir(), patternDoc(6000, 30, 1), patternDoc(1500, 30, 2), 30, "tiny-fp-3")
	if _, err := Run(context.Background(), bigger, ref.New(), Single{}, testLogger(t)); err == nil || !strings.Contains(err.Error(), "tokenizer") ||
		!strings.Contains(err.Error(), "its run's data: "+data) || strings.Contains(err.Error(), "--vocab-size") {
		t.Errorf("resume on another tokenizer of another vocabulary: %v, want a refusal naming the tokenizers and the checkpoint's data", err)
	}
	none := cfg
	none.Resume = "none"
	if _, err := Run(context.Background(), none, ref.New(), Single{}, testLogger(t)); err == nil || !strings.Contains(err.Error(), "resume none") {
		t.Errorf("resume none over a run: %v, want a refusal", err)
	}
}

// crashEnv makes the test binary a training child that kills itself (SIGKILL)
// while writing the checkpoint of the step in the variable.
const crashEnv = "GPTKIT_TRAIN_CRASH_CHILD"

func TestMain(m *testing.M) {
	if spec := os.Getenv(crashEnv); spec != "" {
		os.Exit(crashChild(spec))
	}
	os.Exit(m.Run())
}

// crashChild trains the configuration in the file spec names (data|out|cache|step)
// and SIGKILLs itself while saving the checkpoint of step.
func crashChild(spec string) int {
	parts := strings.Split(spec, "|")
	var step int
	fmt.Sscan(parts[3], &step)
	cfg := Default()
	data, err := os.ReadFile(parts[0])
	if err == nil {
		_, err = cfg.LoadYAML(data, parts[0])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	testHookSave = func(s int) {
		if s == step {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
	}
	if _, err := Run(context.Background(), cfg, ref.New(), Single{}, nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 4
	}
	return 0
}

// TestKillDuringCheckpoint: a process killed while it writes a checkpoint leaves
// the previous one as the newest complete checkpoint, and a resumed run from it is
// bit-identical to an uninterrupted one.
func TestKillDuringCheckpoint(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a child process")
	}
	data := tinyDataset(t)
	straight := tinyConfig(t, data)
	want, err := Run(context.Background(), straight, ref.New(), Single{}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}

	cfg := tinyConfig(t, data)
	cfgFile := filepath.Join(t.TempDir(), "child.yaml")
	if err := os.WriteFile(cfgFile, cfg.MarshalYAML(), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashEnv+"="+cfgFile+"|||10")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child: %v (want killed by SIGKILL); stderr: %s", err, stderr.String())
	}
	dir, step, found, err := mustLatestIn(t, filepath.Join(cfg.Out, CheckpointsDir))
	if err != nil || !found || step != 5 {
		t.Fatalf("after the kill: newest checkpoint %s step %d found %t (%v), want step 5", dir, step, found, err)
	}
	if _, err := ReadState(context.Background(), dir); err != nil {
		t.Fatalf("the previous checkpoint does not load: %v", err)
	}
	got, err := Run(context.Background(), cfg, ref.New(), Single{}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if got.ResumedFrom != dir {
		t.Errorf("resumed from %q, want %q", got.ResumedFrom, dir)
	}
	sameMetrics(t, readMetricsFile(t, cfg.Out), readMetricsFile(t, straight.Out))
	sameCheckpointFiles(t, got.Checkpoint, want.Checkpoint)
}

// TestVocabSizeBelowTokenizer: a vocab_size below the dataset tokenizer's failed with
// the loader's hint to re-make the dataset ("re-run the stage that wrote the dataset"),
// though the data was fine; now the error names vocab_size and the tokenizer's size.
func TestVocabSizeBelowTokenizer(t *testing.T) {
	cfg := tinyConfig(t, tinyDataset(t))
	cfg.VocabSize, cfg.MaxSteps = 10, 2
	_, err := Run(context.Background(), cfg, ref.New(), Single{}, testLogger(t))
	if err == nil {
		t.Fatal("vocab_size 10 on a 20-token tokenizer's data: trained")
	}
	msg := err.Error()
	if !strings.Contains(msg, "vocab_size 10 (--vocab-size) is smaller than") || !strings.Contains(msg, "tiny (20 tokens)") ||
		!strings.Contains(msg, "set vocab_size 0") || strings.Contains(msg, "re-run the stage") {
		t.Errorf("error = %v, want it to name vocab_size 10, the tokenizer's 20 tokens and vocab_size 0, not re-making the data", err)
	}
}

// TestResumeNamesChangedSettings: a resume with another lr (or its schedule, or AdamW's
// settings) took them without a word, so a run resumed without its config file's lr
// went on with another schedule unnoticed; now the resume names each changed setting
// with both values (the model's shape is refused; the sample order's changes warned).
func TestResumeNamesChangedSettings(t *testing.T) {
	cfg := tinyConfig(t, tinyDataset(t))
	cfg.MaxSteps, cfg.LRDecaySteps = 5, 5
	if _, err := Run(context.Background(), cfg, ref.New(), Single{}, testLogger(t)); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	again := cfg
	again.MaxSteps, again.LRDecaySteps, again.LR, again.Beta2 = 6, 6, 5e-3, 0.99
	if _, err := Run(context.Background(), again, ref.New(), Single{}, log); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"resuming with settings changed since the checkpoint's run", "lr 0.01 → 0.005", "beta2 0.95 → 0.99", "max_steps 5 → 6", "lr_decay_steps 5 → 6"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
	if strings.Contains(logs.String(), "seed 7") || strings.Contains(logs.String(), "min_lr ") {
		t.Errorf("unchanged settings named:\n%s", logs.String())
	}
}

// TestVocabSizeAboveTokenizerDamagedData: an id past the data's own tokenizer (20
// tokens), with vocab_size 64 above it, is damaged data; it was told that vocab_size 64
// "is smaller than the ids" the data holds (08ab104's hint, taken for every id outside
// the vocabulary once vocab_size was set), which no vocab_size fixes.
func TestVocabSizeAboveTokenizerDamagedData(t *testing.T) {
	train := patternDoc(6000, 20, 1)
	train[100] = 25
	cfg := tinyConfig(t, writeTinyDataset(t, t.TempDir(), train, patternDoc(1500, 20, 2), 20, "tiny-fp-1"))
	cfg.VocabSize, cfg.MaxSteps = 64, 2
	_, err := Run(context.Background(), cfg, ref.New(), Single{}, testLogger(t))
	if err == nil {
		t.Fatal("id 25 in data of a 20-token tokenizer: trained")
	}
	if strings.Contains(err.Error(), "vocab_size 64 (--vocab-size) is smaller") || !strings.Contains(err.Error(), "re-run the stage that wrote the dataset") {
		t.Errorf("error = %v, want the data's hint, not vocab_size's", err)
	}
	t.Log(err)
}
