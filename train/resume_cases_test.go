package train

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gptkit/internal/miniotest"
	"gptkit/kernels/cpu"
	"gptkit/shards"
	"gptkit/storage"
	"gptkit/train/checkpoint"
)

// TestNeoXOrderEveryStep: under GPT-NeoX's order, whose index serves one sample
// fewer than it holds, a run whose train or valid samples asked for are exactly
// what the index holds (6000 train tokens: (6000-1)/64 = 93 samples of 64 = 31
// steps of 3; 1500 valid tokens, four epochs of them: 93 samples = 31 evaluation
// steps of 3) still
// trains every step and evaluates, where the last step once failed for one sample.
func TestNeoXOrderEveryStep(t *testing.T) {
	cfg := tinyConfig(t, tinyDataset(t))
	cfg.Order, cfg.BlockSize = "neox", 64
	cfg.BatchSize, cfg.GradAccum, cfg.MaxSteps, cfg.LRDecaySteps = 3, 1, 31, 31
	cfg.EvalEvery, cfg.EvalSteps, cfg.CheckpointEvery = 0, 31, 0 // valid: 4 epochs, (4×1500-1)/64 = 93
	var logs bytes.Buffer
	res, err := Run(context.Background(), cfg, cpu.New(2), Single{}, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if res.Step != 31 || res.ValLoss != res.ValLoss {
		t.Fatalf("step %d, val loss %v; want 31 steps and an evaluation", res.Step, res.ValLoss)
	}
	if n := strings.Count(logs.String(), "one sample fewer"); n != 2 {
		t.Errorf("%d warnings about GPT-NeoX's off-by-one, want 2 (train and valid):\n%s", n, logs.String())
	}
}

// TestRestartResumesNewest: a restarted job (Restarts > 0) runs its first command
// line again; with resume none or a PATH it continues from the newest checkpoint in
// out, where the first attempt's command would refuse or go back to PATH.
func TestRestartResumesNewest(t *testing.T) {
	cfg := tinyConfig(t, tinyDataset(t))
	cfg.MaxSteps, cfg.LRDecaySteps = 10, 10
	first, err := Run(context.Background(), cfg, cpu.New(2), Single{}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxSteps, cfg.LRDecaySteps = 12, 12
	none := cfg
	none.Resume = "none"
	if _, err := Run(context.Background(), none, cpu.New(2), Single{}, testLogger(t)); err == nil || !strings.Contains(err.Error(), "resume none") {
		t.Fatalf("resume none over a run, first attempt: %v, want a refusal", err)
	}
	none.Restarts = 1
	res, err := Run(context.Background(), none, cpu.New(2), Single{}, testLogger(t))
	if err != nil || res.ResumedFrom != first.Checkpoint || res.Step != 12 {
		t.Fatalf("resume none, restarted: from %q to step %d, %v; want from %q to 12", res.ResumedFrom, res.Step, err, first.Checkpoint)
	}
	cfg.MaxSteps, cfg.LRDecaySteps = 14, 14
	byPath := cfg
	byPath.Resume, byPath.Restarts = filepath.Join(cfg.Out, CheckpointsDir, checkpoint.DirName(5)), 2
	res2, err := Run(context.Background(), byPath, cpu.New(2), Single{}, testLogger(t))
	if err != nil || res2.ResumedFrom != res.Checkpoint || res2.Step != 14 {
		t.Fatalf("resume PATH, restarted: from %q to step %d, %v; want from %q (the newest) to 14", res2.ResumedFrom, res2.Step, err, res.Checkpoint)
	}
}

// TestRollbackSetsAside: resuming from an earlier checkpoint of the same run moves
// the later ones aside, so that the rolled-back run's own checkpoints are what
// resume auto continues from; another run's checkpoints are never touched.
func TestRollbackSetsAside(t *testing.T) {
	data := tinyDataset(t)
	cfg := tinyConfig(t, data)
	if _, err := Run(context.Background(), cfg, cpu.New(2), Single{}, testLogger(t)); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(cfg.Out, CheckpointsDir)

	// Another run starting from this run's step 10 leaves this run as it is.
	other := tinyConfig(t, data)
	other.Resume, other.MaxSteps, other.LRDecaySteps = filepath.Join(root, checkpoint.DirName(10)), 12, 12
	if _, err := Run(context.Background(), other, cpu.New(2), Single{}, testLogger(t)); err != nil {
		t.Fatal(err)
	}
	if _, step, err := checkpoint.Latest(context.Background(), root); err != nil || step != 20 {
		t.Fatalf("another run resumed from step 10: this run's newest is step %d, %v; want 20", step, err)
	}

	// The rollback, interrupted at step 7.
	back := cfg
	back.Resume, back.LR = filepath.Join(root, checkpoint.DirName(5)), 5e-3
	res := trainInterrupted(t, back, 7)
	asides, _ := filepath.Glob(filepath.Join(root, checkpoint.AsidePrefix+"after-"+checkpoint.DirName(5)+"-*"))
	if len(asides) != 1 {
		t.Fatalf("set-aside directories %v, want one", asides)
	}
	for _, step := range []int64{10, 15, 20} {
		if _, err := os.Stat(filepath.Join(asides[0], checkpoint.DirName(step))); err != nil {
			t.Errorf("step %d not set aside: %v", step, err)
		}
	}
	auto := back
	auto.Resume = "auto"
	got, err := Run(context.Background(), auto, cpu.New(2), Single{}, testLogger(t))
	if err != nil || got.ResumedFrom != res.Checkpoint || got.Step != 20 {
		t.Fatalf("resume auto after the rollback: from %q to step %d, %v; want from %q to 20", got.ResumedFrom, got.Step, err, res.Checkpoint)
	}
	ms := readMetricsFile(t, cfg.Out)
	for i, m := range ms {
		if m.Step != i+1 {
			t.Fatalf("metrics.jsonl line %d is step %d", i+1, m.Step)
		}
	}
}

// TestResumeWarnsOrderChanges: a resume that changes what the samples after the
// checkpoint are (the train data: re-made shards, other blend weights; the train
// samples asked for, past another number of epochs; the seed, the order, the split)
// warns naming it; eval_steps, or more samples within
// the same epochs, do not move the train order and are not warned about.
func TestResumeWarnsOrderChanges(t *testing.T) {
	data := tinyDataset(t)
	unsplit := unsplitDataset(t)
	remade := writeTinyDataset(t, t.TempDir(), patternDoc(6000, 20, 3), patternDoc(1500, 20, 2), 20, "tiny-fp-1")
	base := tinyConfig(t, data)
	base.MaxSteps, base.LRDecaySteps = 6, 6
	other := writeTinyDataset(t, t.TempDir(), patternDoc(6000, 20, 3), patternDoc(1500, 20, 2), 20, "tiny-fp-1")
	linked := filepath.Join(t.TempDir(), "linked")
	if err := os.Symlink(data, linked); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		change func(*Config)
		warn   string // "" for none
	}{
		{"nothing", func(c *Config) {}, ""},
		{"eval_steps", func(c *Config) { c.EvalSteps = 3 }, ""},
		// 8 samples a step, ~374 an epoch: 7 steps read what 6 did, 60 go
		// into a second epoch, whose index is another.
		{"max_steps within the epoch", func(c *Config) { c.MaxSteps = 7 }, ""},
		{"max_steps past the epoch", func(c *Config) { c.MaxSteps, c.LRDecaySteps = 60, 60 }, "number of train samples"},
		// Another global batch (docs/data-parallel.md): the same sample sequence
		// from the cursor, 4 samples a step, unless the count asked for (max_steps
		// x the global batch) reaches another epoch: 16 a step for 60 steps.
		{"batch_size within the epoch", func(c *Config) { c.BatchSize = 2 }, ""},
		{"batch_size past the epoch", func(c *Config) { c.BatchSize, c.MaxSteps, c.LRDecaySteps = 8, 60, 60 }, "number of train samples"},
		{"seed", func(c *Config) { c.Seed = 8 }, "seed differs"},
		{"order", func(c *Config) { c.Order = "neox" }, "order differs"},
		{"split, presplit data", func(c *Config) { c.Split = "970,29,1" }, ""},
		{"split", func(c *Config) { c.Split = "80,19,1" }, "split differs"},
		{"data re-made", func(c *Config) { c.Data = remade }, "train data differs"},
		{"blend", func(c *Config) {}, ""},
		{"blend weights", func(c *Config) { c.Data = "3:" + data + ",1:" + remade }, "train data differs"},
		// Another dataset of the same tokenizer: its samples, silently (the
		// tokenizer's fingerprint was the only check of the data).
		{"data", func(c *Config) { c.Data = other }, "data differs"},
		{"data, the same by another path", func(c *Config) { c.Data = linked }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base
			if tc.name == "split" {
				cfg.Data, cfg.Split = unsplit, "90,9,1"
			}
			if strings.HasPrefix(tc.name, "blend") {
				cfg.Data = "1:" + data + ",1:" + remade
			}
			cfg.Out = filepath.Join(t.TempDir(), "run")
			trainInterrupted(t, cfg, 3)
			tc.change(&cfg)
			var logs bytes.Buffer
			if _, err := Run(context.Background(), cfg, cpu.New(2), Single{}, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))); err != nil {
				t.Fatal(err)
			}
			w := logs.String()
			if tc.warn == "" && strings.Contains(w, "differ") || tc.warn != "" && !strings.Contains(w, tc.warn) {
				t.Errorf("warnings %q, want %q", w, tc.warn)
			}
		})
	}
}

// TestOutLocked: a second trainer writing the same out fails at once naming the first
// (their metrics, checkpoints and pruning would mix); once the first is closed, it runs.
func TestOutLocked(t *testing.T) {
	cfg := tinyConfig(t, tinyDataset(t))
	cfg.MaxSteps, cfg.LRDecaySteps = 3, 3
	first, err := NewTrainer(context.Background(), cfg, cpu.New(1), Single{}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewTrainer(context.Background(), cfg, cpu.New(1), Single{}, testLogger(t)); err == nil || !strings.Contains(err.Error(), "another train writes") || strings.Count(err.Error(), "HINT") != 1 {
		t.Fatalf("a second trainer on the same out: %v, want a refusal", err)
	}
	first.Close()
	if _, err := Run(context.Background(), cfg, cpu.New(1), Single{}, testLogger(t)); err != nil {
		t.Fatalf("after the first closed: %v", err)
	}
}

// trainInterrupted trains cfg on the cpu kernels until step, interrupts it there (which
// saves a checkpoint) and returns its result.
func trainInterrupted(t *testing.T, cfg Config, step int) *Result {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tr, err := NewTrainer(ctx, cfg, cpu.New(2), Single{}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	tr.OnStep = func(m Metrics) {
		if m.Step == step {
			cancel()
		}
	}
	res, err := tr.Train(ctx)
	if !errors.Is(err, context.Canceled) || res.Step != step {
		t.Fatalf("run of %s: step %d, %v; want an interruption at %d", cfg.Out, res.Step, err, step)
	}
	return res
}

// TestResumeAutoSkipsDamagedCheckpoint: a newest checkpoint whose file no longer
// matches its manifest (damaged after the save) makes resume auto continue from the
// one before it, with the damaged one moved aside; a resume naming it fails, naming
// the complete checkpoints beside it (it said "use an older checkpoint", naming none),
// and so does one naming a checkpoint that is not there (it said "no checkpoint.json (an
// interrupted save, or not a checkpoint)").
func TestResumeAutoSkipsDamagedCheckpoint(t *testing.T) {
	cfg := tinyConfig(t, tinyDataset(t))
	if _, err := Run(context.Background(), cfg, cpu.New(2), Single{}, testLogger(t)); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(cfg.Out, CheckpointsDir)
	damaged := filepath.Join(root, checkpoint.DirName(20))
	file := filepath.Join(damaged, ModelFile)
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)-3] ^= 0x40
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}

	named := cfg
	named.Resume, named.MaxSteps, named.LRDecaySteps = damaged, 22, 22
	if _, err := Run(context.Background(), named, cpu.New(2), Single{}, testLogger(t)); !errors.Is(err, checkpoint.ErrCorrupt) ||
		!strings.Contains(err.Error(), "HINT: resume from another checkpoint; the complete ones beside it, newest first: "+filepath.Join(root, checkpoint.DirName(15))+", "+filepath.Join(root, checkpoint.DirName(10))) {
		t.Fatalf("resume naming the damaged checkpoint: %v, want ErrCorrupt and a hint naming the ones to use", err)
	}
	// The same spelt otherwise (./ in it): the hint still leaves it out.
	named.Resume = root + "/./" + checkpoint.DirName(20)
	if _, err := Run(context.Background(), named, cpu.New(2), Single{}, testLogger(t)); !errors.Is(err, checkpoint.ErrCorrupt) ||
		!strings.Contains(err.Error(), "newest first: "+filepath.Join(root, checkpoint.DirName(15))+", ") {
		t.Fatalf("resume naming the damaged checkpoint as %s: %v, want a hint naming only the others", named.Resume, err)
	}
	// One that is not there: said so (not "no checkpoint.json, an interrupted save"),
	// with the same hint.
	named.Resume = filepath.Join(root, checkpoint.DirName(17))
	if _, err := Run(context.Background(), named, cpu.New(2), Single{}, testLogger(t)); err == nil || !strings.Contains(err.Error(), "no such checkpoint directory") ||
		!strings.Contains(err.Error(), "newest first: "+damaged+", "+filepath.Join(root, checkpoint.DirName(15))) {
		t.Fatalf("resume naming a checkpoint that is not there: %v, want it said, and a hint naming the ones there", err)
	}

	auto := cfg
	auto.MaxSteps, auto.LRDecaySteps = 22, 22
	var logs bytes.Buffer
	res, err := Run(context.Background(), auto, cpu.New(2), Single{}, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatalf("resume auto over a damaged newest checkpoint: %v\n%s", err, logs.String())
	}
	if want := filepath.Join(root, checkpoint.DirName(15)); res.ResumedFrom != want || res.Step != 22 {
		t.Fatalf("resumed from %q to step %d, want from %q to 22", res.ResumedFrom, res.Step, want)
	}
	if !strings.Contains(logs.String(), "damaged") {
		t.Errorf("no warning about the damaged checkpoint:\n%s", logs.String())
	}
	asides, _ := filepath.Glob(filepath.Join(root, checkpoint.AsidePrefix+"after-"+checkpoint.DirName(15)+"-*", checkpoint.DirName(20)))
	if len(asides) != 1 {
		t.Fatalf("damaged checkpoint set aside as %v, want one", asides)
	}
	if _, err := checkpoint.Verify(context.Background(), filepath.Join(root, checkpoint.DirName(20))); err != nil {
		t.Errorf("the step-20 checkpoint of the continued run: %v", err)
	}
}

// TestRerunFinishedRun: the same command again after a run reached max_steps takes no
// step, reports the checkpoint's loss and val_loss (not none) and writes no second,
// empty TensorBoard event file.
func TestRerunFinishedRun(t *testing.T) {
	cfg := tinyConfig(t, tinyDataset(t))
	first, err := Run(context.Background(), cfg, cpu.New(2), Single{}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	again, err := Run(context.Background(), cfg, cpu.New(2), Single{}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if again.Step != first.Step || again.Loss != first.Loss || again.ValLoss != first.ValLoss {
		t.Errorf("rerun: step %d loss %v val %v, want %d %v %v", again.Step, again.Loss, again.ValLoss, first.Step, first.Loss, first.ValLoss)
	}
	events, _ := filepath.Glob(filepath.Join(cfg.Out, "events.out.tfevents.*"))
	if len(events) != 1 {
		t.Errorf("event files %v, want the first run's only", events)
	}
}

// unsplitDataset writes 50 documents with no split label: the split divides them.
func unsplitDataset(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	st, err := storage.Open(ctx, dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := shards.NewManifest(shards.TokenizerInfo{Name: "tiny", Fingerprint: "tiny-fp-1", VocabSize: 20, EODID: -1}, shards.Uint16, nil)
	w, err := shards.NewWriter(ctx, st, "tiny_text_document", shards.Uint16)
	if err != nil {
		t.Fatal(err)
	}
	for d := range 50 {
		if err := w.AddDocument(patternDoc(200, 20, uint64(d))); err != nil {
			t.Fatal(err)
		}
	}
	info, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Add("", info); err != nil {
		t.Fatal(err)
	}
	if err := shards.WriteManifest(ctx, st, "", m); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestValLossDiverged: an update that makes the weights NaN on an evaluation step fails
// the run naming the step and the next step to take (it failed with a bare
// "json: unsupported value: NaN" from writing metrics.jsonl).
func TestValLossDiverged(t *testing.T) {
	cfg := tinyConfig(t, tinyDataset(t))
	cfg.LR, cfg.MinLR, cfg.WarmupSteps, cfg.EvalEvery, cfg.MaxSteps, cfg.LRDecaySteps = 1e30, 1e30, 0, 1, 3, 3
	cfg.GradClip = 0
	_, err := Run(context.Background(), cfg, cpu.New(2), Single{}, testLogger(t))
	if err == nil || !strings.Contains(err.Error(), "diverged") || !strings.Contains(err.Error(), "HINT") {
		t.Fatalf("got %v, want a divergence naming the step", err)
	}
	t.Log(err)
	// No checkpoint was saved before it: the hint says a rerun starts afresh (it
	// said to resume from a checkpoint, of which there was none).
	if !strings.Contains(err.Error(), "no checkpoint was saved, so the run starts afresh") {
		t.Errorf("got %v, want the hint to say that no checkpoint was saved", err)
	}
	cfg.Out, cfg.LR, cfg.MinLR, cfg.WarmupSteps, cfg.LRDecaySteps = filepath.Join(t.TempDir(), "run"), 1e-3, 1e-3, 2, 3
	cfg.CheckpointEvery, cfg.MaxSteps = 2, 2
	if _, err := Run(context.Background(), cfg, cpu.New(2), Single{}, testLogger(t)); err != nil {
		t.Fatal(err)
	}
	cfg.LR, cfg.MinLR, cfg.MaxSteps, cfg.LRDecaySteps, cfg.WarmupSteps = 1e30, 1e30, 3, 3, 0
	_, err = Run(context.Background(), cfg, cpu.New(2), Single{}, testLogger(t))
	if want := "resume from a checkpoint before the divergence (the newest: " + filepath.Join(cfg.Out, "checkpoints", "step_00000002") + ")"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("after a checkpoint of step 2: %v, want the hint to name it (%s)", err, want)
	}
}

// TestNeoXOrderTinySplit: the retry for GPT-NeoX's off-by-one compares what the index
// serves with what the run needs, not with the count it asked for the second time. A
// valid split of one sample's tokens (64 at L=64: an epoch adds one sample) holds 6
// samples for 6, serves 5, and 7 for 7, serving the 6 the two evaluation steps of 3
// need; the run once failed there, "serves 6 samples, the run needs 7".
func TestNeoXOrderTinySplit(t *testing.T) {
	cfg := tinyConfig(t, writeTinyDataset(t, t.TempDir(), patternDoc(6000, 20, 1), patternDoc(64, 20, 2), 20, "tiny-fp-1"))
	cfg.Order, cfg.BlockSize = "neox", 64
	cfg.BatchSize, cfg.GradAccum, cfg.MaxSteps, cfg.WarmupSteps, cfg.LRDecaySteps = 3, 1, 2, 1, 2
	cfg.EvalEvery, cfg.EvalSteps, cfg.CheckpointEvery = 0, 2, 0
	res, err := Run(context.Background(), cfg, cpu.New(2), Single{}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if res.Step != 2 || res.ValLoss != res.ValLoss {
		t.Fatalf("step %d, val loss %v; want 2 steps and an evaluation", res.Step, res.ValLoss)
	}
}

// TestNeoXOrderBlendShort: GPT-NeoX's blend is as long as its datasets' lengths
// together, each one short of its index, so it can serve up to one sample fewer per
// dataset than the run needs. Three datasets of one sample's tokens each (an epoch
// adds one sample: each index holds exactly its ceil(w·N·1.005)) blended 1:1:1 for
// 4 samples serve 3, and for 5 still 3; asking for one more per dataset (7) serves
// the 4 the run needs, where it failed "serves 3 samples, the run needs 4".
func TestNeoXOrderBlendShort(t *testing.T) {
	var parts []string
	for s := range 3 {
		parts = append(parts, "1:"+writeTinyDataset(t, t.TempDir(), patternDoc(64, 20, uint64(s+1)), patternDoc(1500, 20, 9), 20, "tiny-fp-1"))
	}
	cfg := tinyConfig(t, strings.Join(parts, ","))
	cfg.Order, cfg.BlockSize = "neox", 64
	cfg.BatchSize, cfg.GradAccum, cfg.MaxSteps, cfg.WarmupSteps, cfg.LRDecaySteps = 2, 1, 2, 1, 2
	cfg.EvalEvery, cfg.EvalSteps, cfg.CheckpointEvery = 0, 0, 0
	res, err := Run(context.Background(), cfg, cpu.New(2), Single{}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if res.Step != 2 {
		t.Fatalf("step %d, want 2", res.Step)
	}
}

// TestResumeFromS3Endpoint: --resume s3://.../step_N reads the checkpoint from the
// run's s3_endpoint (--s3-endpoint), as the data is read, and continues as a resume
// from the same checkpoint on disk does. It went to AWS's endpoint, where only
// $AWS_ENDPOINT_URL_S3 reached another server: the bucket's name looked up as an
// amazonaws.com host.
func TestResumeFromS3Endpoint(t *testing.T) {
	srv := miniotest.Shared(t)
	srv.Setenv(t)
	t.Setenv("AWS_ENDPOINT_URL_S3", "")
	cfg := tinyConfig(t, tinyDataset(t))
	cfg.MaxSteps, cfg.LRDecaySteps = 10, 12
	first, err := Run(context.Background(), cfg, cpu.New(2), Single{}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	files := checkpointFiles(t, first.Checkpoint)
	m := checkpoint.Manager{Storage: storage.Options{S3Endpoint: srv.Endpoint}}
	dir, err := m.Save(context.Background(), "s3://"+srv.NewBucket(t)+"/runs/a/checkpoints", 10, files, 0)
	if err != nil {
		t.Fatal(err)
	}

	local := cfg
	local.Out, local.Resume, local.MaxSteps = filepath.Join(t.TempDir(), "local"), first.Checkpoint, 12
	want, err := Run(context.Background(), local, cpu.New(2), Single{}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	fromS3 := local
	fromS3.Out, fromS3.Resume, fromS3.S3Endpoint = filepath.Join(t.TempDir(), "s3"), dir, srv.Endpoint
	got, err := Run(context.Background(), fromS3, cpu.New(2), Single{}, testLogger(t))
	if err != nil {
		t.Fatalf("resume %s with s3_endpoint %s: %v", dir, srv.Endpoint, err)
	}
	if got.ResumedFrom != dir || got.Step != 12 || got.Loss != want.Loss {
		t.Fatalf("resumed from %q to step %d, loss %v; want from %q to 12, loss %v", got.ResumedFrom, got.Step, got.Loss, dir, want.Loss)
	}
	sameCheckpointFiles(t, got.Checkpoint, want.Checkpoint)
}

// TestResumeOldCheckpointWarnsDataPath: a checkpoint of a build before train_data (its
// trainer.json without the key) has only the data's path to compare: resuming it on
// another dataset warns that the data differs, on the same dataset by its path or by a
// link to it does not, and neither warns that the train data's shards differ (there is
// no record of them to differ from).
func TestResumeOldCheckpointWarnsDataPath(t *testing.T) {
	data := tinyDataset(t)
	other := writeTinyDataset(t, t.TempDir(), patternDoc(6000, 20, 3), patternDoc(1500, 20, 2), 20, "tiny-fp-1")
	linked := filepath.Join(t.TempDir(), "linked")
	if err := os.Symlink(data, linked); err != nil {
		t.Fatal(err)
	}
	base := tinyConfig(t, data)
	base.MaxSteps, base.LRDecaySteps = 6, 6
	for _, tc := range []struct {
		name, data, warn string // warn "" for none
	}{
		{"same path", data, ""},
		{"a link to it", linked, ""},
		{"another dataset", other, "data differs from the checkpoint's run: if it is another dataset"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base
			cfg.Out = filepath.Join(t.TempDir(), "run")
			res := trainInterrupted(t, cfg, 3)
			dropTrainData(t, res.Checkpoint)
			cfg.Data = tc.data
			var logs bytes.Buffer
			if _, err := Run(context.Background(), cfg, cpu.New(2), Single{}, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))); err != nil {
				t.Fatal(err)
			}
			w := logs.String()
			if tc.warn == "" && strings.Contains(w, "differ") || tc.warn != "" && !strings.Contains(w, tc.warn) || strings.Contains(w, "train data differs") {
				t.Errorf("warnings %q, want %q", w, tc.warn)
			}
		})
	}
}

// dropTrainData makes the checkpoint in dir look like one of a build before
// train_data: the key removed from its trainer.json, and checkpoint.json's size and
// sha256 of the file made to match.
func dropTrainData(t *testing.T, dir string) {
	t.Helper()
	path := filepath.Join(dir, StateFile)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]any
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	if _, ok := st["train_data"]; !ok {
		t.Fatalf("%s has no train_data to drop", path)
	}
	delete(st, "train_data")
	if raw, err = json.MarshalIndent(st, "", "  "); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	mpath := filepath.Join(dir, checkpoint.ManifestName)
	mraw, err := os.ReadFile(mpath)
	if err != nil {
		t.Fatal(err)
	}
	var m checkpoint.Manifest
	if err := json.Unmarshal(mraw, &m); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(raw)
	for i := range m.Files {
		if m.Files[i].Name == StateFile {
			m.Files[i].Size, m.Files[i].SHA256 = int64(len(raw)), hex.EncodeToString(sum[:])
		}
	}
	if mraw, err = json.MarshalIndent(m, "", "  "); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mpath, mraw, 0o644); err != nil {
		t.Fatal(err)
	}
}

// checkpointFiles are the files of the local checkpoint in dir, as checkpoint.File
// values that write them again (to save the same checkpoint elsewhere: S3).
func checkpointFiles(t *testing.T, dir string) []checkpoint.File {
	t.Helper()
	var files []checkpoint.File
	for _, name := range []string{ModelFile, OptimizerFile, StateFile} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, checkpoint.File{Name: name, Write: func(w io.Writer) error { _, err := w.Write(data); return err }})
	}
	return files
}

// TestDivergedAfterResumeElsewhere: a run resumed from another run's checkpoint
// (resume PATH) that diverged before its own first checkpoint was told to resume
// from OUT/checkpoints/step_N, which is not there (the checkpoint is the other
// run's); now the hint names the checkpoint it resumed from.
func TestDivergedAfterResumeElsewhere(t *testing.T) {
	cfg := tinyConfig(t, tinyDataset(t))
	cfg.Out, cfg.LR, cfg.MinLR, cfg.WarmupSteps, cfg.LRDecaySteps = filepath.Join(t.TempDir(), "first"), 1e-3, 1e-3, 2, 3
	cfg.CheckpointEvery, cfg.MaxSteps, cfg.EvalEvery = 2, 2, 1
	if _, err := Run(context.Background(), cfg, cpu.New(2), Single{}, testLogger(t)); err != nil {
		t.Fatal(err)
	}
	from := filepath.Join(cfg.Out, "checkpoints", "step_00000002")
	cfg.Out, cfg.Resume = filepath.Join(t.TempDir(), "second"), from
	cfg.LR, cfg.MinLR, cfg.MaxSteps, cfg.LRDecaySteps, cfg.WarmupSteps, cfg.GradClip = 1e30, 1e30, 4, 4, 0, 0
	_, err := Run(context.Background(), cfg, cpu.New(2), Single{}, testLogger(t))
	if err == nil || !strings.Contains(err.Error(), "diverged") {
		t.Fatalf("got %v, want a divergence", err)
	}
	if want := "(the newest: " + from + ")"; !strings.Contains(err.Error(), want) {
		t.Errorf("got %v, want the hint to name the checkpoint resumed from (%s)", err, want)
	}
}

// TestResumeFallbackNamesChangesOnce: resume auto with another lr over two damaged
// newest checkpoints (step_20's weights, step_15's AdamW state: found after the
// weights are read) named the changed settings once per checkpoint tried, three
// times; now once, before "resumed" and for the one continued from (step_10).
func TestResumeFallbackNamesChangesOnce(t *testing.T) {
	cfg := tinyConfig(t, tinyDataset(t))
	if _, err := Run(context.Background(), cfg, cpu.New(2), Single{}, testLogger(t)); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(cfg.Out, CheckpointsDir)
	for _, f := range []string{filepath.Join(root, checkpoint.DirName(20), ModelFile), filepath.Join(root, checkpoint.DirName(15), OptimizerFile)} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)-3] ^= 0x40
		if err := os.WriteFile(f, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	again := cfg
	again.MaxSteps, again.LRDecaySteps, again.LR = 22, 22, 5e-3
	var logs bytes.Buffer
	res, err := Run(context.Background(), again, cpu.New(2), Single{}, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatalf("%v\n%s", err, logs.String())
	}
	if want := filepath.Join(root, checkpoint.DirName(10)); res.ResumedFrom != want {
		t.Fatalf("resumed from %q, want %q", res.ResumedFrom, want)
	}
	log := logs.String()
	if n := strings.Count(log, "resuming with settings changed since the checkpoint's run"); n != 1 || !strings.Contains(log, "lr 0.01 → 0.005") {
		t.Errorf("the changed settings named %d times (want once, lr 0.01 → 0.005):\n%s", n, log)
	}
	if i, j := strings.LastIndex(log, "damaged"), strings.Index(log, "resuming with settings changed"); i < 0 || j < i {
		t.Errorf("the changed settings named before the fallback was done:\n%s", log)
	}
}

// TestResumeLeavesOutInitFrom: a run started from init_from, resumed without it (as
// a resume is: its weights are the checkpoint's), was told "init_from DIR → ", a
// change of nothing that matters after the start; now init_from is not named.
func TestResumeLeavesOutInitFrom(t *testing.T) {
	cfg := tinyConfig(t, "data")
	first := cfg
	first.InitFrom = "/models/gpt2"
	cfg.LR = 5e-3
	var logs bytes.Buffer
	tr := &Trainer{cfg: cfg, log: slog.New(slog.NewTextHandler(&logs, nil))}
	tr.logSettingChanges(&State{Config: configMap(recordedConfig(first))})
	if log := logs.String(); strings.Contains(log, "init_from") || !strings.Contains(log, "lr 0.01 → 0.005") {
		t.Errorf("log = %s, want lr's change and no init_from", log)
	}
}
