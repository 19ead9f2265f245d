package train

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"gptkit/internal/redact"
	"gptkit/kernels"
	"gptkit/loader"
	"gptkit/shards"
	"gptkit/storage"
	"gptkit/train/checkpoint"
	"gptkit/train/safetensors"
)

// The files of a checkpoint directory.
const (
	ModelFile     = "model.safetensors"     // the weights, nanoGPT state_dict names
	OptimizerFile = "optimizer.safetensors" // AdamW's exp_avg.NAME and exp_avg_sq.NAME
	StateFile     = "trainer.json"          // State
)

// StateFormat is State.Format.
const StateFormat = "gptkit-train-state"

// State is a checkpoint's trainer.json: what, with the weights and the AdamW
// moments, continues a run exactly.
type State struct {
	Format  string `json:"format"`
	Version int    `json:"version"`
	// Step is the number of optimizer steps done (AdamW's t).
	Step int `json:"step"`
	// Model is the shape of the weights.
	Model ModelConfig `json:"model"`
	// Tokenizer identifies the ids the model was trained on.
	Tokenizer shards.TokenizerInfo `json:"tokenizer"`
	// Cursor is the samples all ranks have consumed (loader.Cursor).
	Cursor loader.Cursor `json:"cursor"`
	// NumSamples is what the run asked the loader for (train, valid, test): the
	// sample order depends on it.
	NumSamples [3]int64 `json:"num_samples"`
	// TrainData is the train split's loader.Data.DataKeys entry: which shards (by
	// checksum) and blend weights the samples come from (absent in older
	// checkpoints).
	TrainData string `json:"train_data,omitempty"`
	// RNG: the only random state is the seed. Initialization draws from PCG streams
	// keyed by (seed, tensor name); dropout masks are keyed by (seed, step,
	// micro-step, rank, layer, site); so nothing drifts and nothing else is saved.
	RNG RNGState `json:"rng"`
	// World is the number of ranks that wrote it.
	World int `json:"world"`
	// Config is the run's configuration (every key, as config.yaml writes it).
	Config map[string]string `json:"config"`
	// Metrics is the step's line of metrics.jsonl.
	Metrics Metrics `json:"metrics"`
	// Backend and Time are for people.
	Backend string `json:"backend"`
	Time    string `json:"time"`
	// LossScale and LossScaleGood are float16's dynamic loss scale and the steps
	// since it last changed (absent for float32 and bfloat16).
	LossScale     float64 `json:"loss_scale,omitempty"`
	LossScaleGood int     `json:"loss_scale_good,omitempty"`
	// SkippedSteps counts the steps float16's loss scaling skipped (an overflow):
	// AdamW's step count, for its bias correction, leaves them out.
	SkippedSteps int `json:"skipped_steps,omitempty"`
	// DataDir is the dataset's absolute local path when the checkpoint was saved
	// (absent for s3:// data); for a blend, the blend file's absolute path, or the
	// inline blend with each local dataset's path absolute (absData): config's data
	// is as given, often relative to the directory train ran in, so that sample and
	// export find the tokenizer files beside the datasets from any directory.
	DataDir string `json:"data_dir,omitempty"`
}

// RNGState is the random state of a run: its seed.
type RNGState struct {
	Seed int64  `json:"seed"`
	Kind string `json:"kind"`
}

const rngKind = "counter-based: PCG(seed, fnv64a(tensor)) init; splitmix64(seed, step, micro, rank, layer, site) dropout"

// RunConfig rebuilds the Config a checkpoint was trained with.
func (s *State) RunConfig() (Config, error) {
	c := Default()
	for _, k := range slices.Sorted(maps.Keys(s.Config)) {
		if _, ok := LookupField(k); !ok {
			continue // a key of a newer gptkit
		}
		if err := c.Set(k, s.Config[k]); err != nil {
			return c, fmt.Errorf("train: %s config: %w", StateFile, err)
		}
	}
	return c, nil
}

// recordedConfig is c as a run records it (config.yaml, checkpoints): the credentials of
// its URLs redacted.
func recordedConfig(c Config) *Config {
	c.S3Endpoint = redact.URL(c.S3Endpoint)
	c.Data = redact.String(c.Data)
	return &c
}

func configMap(c *Config) map[string]string {
	m := map[string]string{}
	for _, f := range fields {
		m[f.Key] = c.Get(f.Key)
	}
	return m
}

// testHookSave, if set, runs while a checkpoint is being written (after the
// weights, before the optimizer state): the crash tests kill the process there.
var testHookSave func(step int)

// save writes a checkpoint of the current step (rank 0; the others wait at a barrier).
func (t *Trainer) save(ctx context.Context) error {
	if err := t.syncMasters(ctx); err != nil {
		return fmt.Errorf("train: gather the float32 weights: %w", err)
	}
	// The AdamW state is gathered tensor by tensor as rank 0 writes the optimizer
	// file (with ZeRO-1 every rank takes part, in the file's order), so that rank 0
	// holds one tensor of it at a time, never the whole (8 bytes a parameter). When
	// rank 0 fails before it has gathered all (a full disk, an S3 error), it returns
	// its error, and the others, waiting in a collective, learn it as they learn any
	// rank's failure: the collectives' abort, which carries it.
	layouts, order := t.model.momentLayouts()
	gathered := 0 // of order
	gatherNext := func(i int, dst []float32) error {
		if gathered == len(order) || order[gathered] != i {
			return fmt.Errorf("train: internal error: the optimizer file asks for its tensor %s out of the order the ranks gather them in (%d of %d gathered)", layouts[i].Name, gathered, len(order))
		}
		gathered++
		if err := t.gatherMoment(ctx, i, dst); err != nil {
			return fmt.Errorf("train: rank %d: gather the AdamW state's %s for the checkpoint of step %d: %w", t.coll.Rank(), layouts[i].Name, t.step, err)
		}
		return nil
	}
	if t.coll.Rank() != 0 && t.zero() {
		for _, i := range order {
			if err := gatherNext(i, nil); err != nil {
				return err
			}
		}
	}
	if t.coll.Rank() == 0 {
		if err := t.metrics.sync(); err != nil {
			return fmt.Errorf("train: sync %s: %w", t.metrics.path, err)
		}
		if t.tb != nil {
			if err := t.tb.Sync(); err != nil {
				return err
			}
		}
		st := State{Format: StateFormat, Version: 1, Step: t.step, Model: t.model.Config, Tokenizer: t.tok,
			Cursor: t.sampler.Cursor, NumSamples: t.numSamples, TrainData: t.data.DataKeys[loader.Train], RNG: RNGState{Seed: t.cfg.Seed, Kind: rngKind},
			World: t.coll.World(), Config: configMap(recordedConfig(t.cfg)), Backend: t.be.Name(), Time: time.Now().UTC().Format(time.RFC3339),
			LossScale: t.scaler.scale, LossScaleGood: t.scaler.good, SkippedSteps: t.skipped}
		st.DataDir = absData(t.cfg.Data)
		if t.lastMetrics != nil {
			st.Metrics = *t.lastMetrics
		}
		stateJSON, err := json.MarshalIndent(st, "", "  ")
		if err != nil {
			return err
		}
		step := t.step
		files := []ckptFile{
			{Name: ModelFile, Write: func(w io.Writer) error {
				return t.model.writeParams(w, map[string]string{"format": "pt", "step": strconv.Itoa(step)})
			}},
			{Name: OptimizerFile, Write: func(w io.Writer) error {
				if testHookSave != nil {
					testHookSave(step)
				}
				if testHookOptimizerWriter != nil {
					w = testHookOptimizerWriter(w)
				}
				return safetensors.WriteFunc(w, layouts, map[string]string{"step": strconv.Itoa(step), "optimizer": "AdamW"}, gatherNext)
			}},
			{Name: StateFile, Write: func(w io.Writer) error {
				_, err := w.Write(append(stateJSON, '\n'))
				return err
			}},
		}
		dir, err := saveCheckpoint(ctx, t.ckptRoot, step, files, t.cfg.KeepCheckpoints, t.log)
		if (err == nil || errors.Is(err, checkpoint.ErrPrune)) && t.zero() {
			// (Not reached: a saved optimizer file asked for every tensor. Were one
			// left, the others would still wait in its collectives: they are served
			// the rest, and meet rank 0 at the barrier.)
			for gathered < len(order) {
				if err := gatherNext(order[gathered], nil); err != nil {
					return err
				}
			}
		}
		if errors.Is(err, checkpoint.ErrPrune) {
			// Saved: the run goes on (a file held open on NFS, say, or one made
			// read-only, keeps an old checkpoint's directory from going).
			t.log.Warn("checkpoint saved, but old checkpoints could not be removed (the next save tries again; check their permissions, or what holds their files open)",
				"step", step, "dir", dir, "keep_checkpoints", t.cfg.KeepCheckpoints, "err", err.Error())
			err = nil
		}
		if err != nil {
			return fmt.Errorf("train: save the checkpoint of step %d: %w", step, err)
		}
		t.lastCkpt = dir
		t.log.Info("checkpoint", "step", step, "dir", dir)
	}
	if err := t.coll.Barrier(ctx); err != nil {
		return fmt.Errorf("train: checkpoint barrier: %w", err)
	}
	t.saved = t.step
	return nil
}

// testHookOptimizerWriter, if set, wraps the writer of a checkpoint's optimizer
// file: the tests make it fail midway.
var testHookOptimizerWriter func(io.Writer) io.Writer

// writeParams writes the master weights as a safetensors file with metadata: from
// their own memory when the host can address it, else downloaded tensor by tensor
// (one tensor in host memory at a time).
func (m *Model) writeParams(w io.Writer, metadata map[string]string) error {
	if m.Params.IsHost() {
		return safetensors.Write(w, m.tensorsOf(m.Params.Float32s(), ""), metadata)
	}
	return safetensors.WriteFunc(w, m.layouts(""), metadata, func(i int, dst []float32) error {
		ti := m.Tensors[i]
		m.be.Download(kernels.Float32Bytes(dst), m.Params.Slice(ti.Offset, ti.Offset+ti.Size))
		return nil
	})
}

// layouts are the names (prefix+NAME) and shapes of the model's tensors, in Tensors'
// order, for safetensors.WriteFunc.
func (m *Model) layouts(prefix string) []safetensors.Layout {
	ls := make([]safetensors.Layout, len(m.Tensors))
	for i, ti := range m.Tensors {
		ls[i] = safetensors.Layout{Name: prefix + ti.Name, Shape: ti.Shape}
	}
	return ls
}

// tensorsOf names the views of buf (a buffer laid out like Params) for safetensors.
func (m *Model) tensorsOf(buf []float32, prefix string) []safetensors.Tensor {
	ts := make([]safetensors.Tensor, len(m.Tensors))
	for i, ti := range m.Tensors {
		ts[i] = safetensors.Tensor{Name: prefix + ti.Name, Shape: ti.Shape, Data: buf[ti.Offset : ti.Offset+ti.Size]}
	}
	return ts
}

// tensorDest is where readInto puts the tensors of a buffer laid out like Params:
// host memory, or else put, which takes each tensor's values (a host buffer of one
// tensor, reused for the next) and its offset in the layout: an upload to a
// device's tensor, or a broadcast to the ranks.
type tensorDest struct {
	host []float32
	put  func(off int, vals []float32) error
}

// destOf is the place of x's values: its own memory when the host can address it,
// else uploads to it.
func destOf(be kernels.Backend, x kernels.Tensor) tensorDest {
	if x.IsHost() {
		return tensorDest{host: x.Float32s()}
	}
	return tensorDest{put: func(off int, vals []float32) error {
		be.Upload(x.Slice(off, off+len(vals)), kernels.Float32Bytes(vals))
		return nil
	}}
}

// readInto reads the safetensors file name of the checkpoint cd, in one
// pass, straight into dests (each laid out like Params): the tensor prefixes[i]+NAME
// of each tensor of the layout goes to its place in dests[i]. Every one must be
// there with its shape; other tensors of the file are read past. Nothing holds the
// file or a copy of its tensors (a tensor for a put passes through one host
// buffer of the largest one's size): a resume needs the memory of the weights and
// the AdamW state, not three times that. The file's size and sha256 are checked
// against checkpoint.json at its end, and a mismatch (errors.Is
// checkpoint.ErrCorrupt) is the error even when the damage also made the file
// malformed; a put's error is returned as it is, at once. dests hold garbage after
// any error (and a put has been given garbage).
func (m *Model) readInto(ctx context.Context, cd *ckptDir, name string, prefixes []string, dests ...tensorDest) error {
	rc, err := cd.Open(ctx, name)
	if err != nil {
		return err
	}
	defer rc.Close()
	fi, _ := cd.Manifest.File(name) // (Open checked it lists name, with the file's size)
	dir := cd.Path()
	where := dir + "/" + name
	type slot struct {
		ti   TensorInfo
		dest tensorDest
		seen bool
	}
	slots := make(map[string]*slot, len(prefixes)*len(m.Tensors))
	largest := 0 // the stage's size, made once: a growing one would leave its old sizes to the GC
	for i, prefix := range prefixes {
		for _, ti := range m.Tensors {
			slots[prefix+ti.Name] = &slot{ti: ti, dest: dests[i]}
			if dests[i].host == nil {
				largest = max(largest, ti.Size)
			}
		}
	}
	var (
		shapeErr, putErr error
		stage            []float32 // a put tensor's values, put at the next tensor or the end
		pending          *slot
	)
	flush := func() error {
		if pending == nil {
			return nil
		}
		s := pending
		pending = nil
		putErr = s.dest.put(s.ti.Offset, stage[:s.ti.Size])
		return putErr
	}
	_, err = safetensors.ReadInto(rc, fi.Size, func(in safetensors.Info) ([]float32, error) {
		if err := flush(); err != nil {
			return nil, err
		}
		s, ok := slots[in.Name]
		if !ok {
			return nil, nil
		}
		if !slices.Equal(in.Shape, s.ti.Shape) {
			shapeErr = fmt.Errorf("train: %s: tensor %s has shape %v, want %v", where, in.Name, in.Shape, s.ti.Shape)
			return nil, shapeErr
		}
		s.seen = true
		if s.dest.host != nil {
			return s.dest.host[s.ti.Offset : s.ti.Offset+s.ti.Size], nil
		}
		if stage == nil {
			stage = make([]float32, largest)
		}
		pending = s
		return stage[:s.ti.Size], nil
	})
	if err == nil {
		err = flush()
	}
	if putErr != nil {
		return putErr // (the ranks: reading on would serve none)
	}
	// To the file's end, where its size and sha256 are checked: damage first, as
	// it is what the hints and resume auto's fallback to an older checkpoint go by.
	if _, verr := io.Copy(io.Discard, rc); verr != nil {
		return fmt.Errorf("checkpoint: read %s in %s: %w", name, dir, verr)
	}
	switch {
	case err != nil && err == shapeErr:
		return err
	case err != nil:
		return fmt.Errorf("train: %s: %w", where, err)
	}
	for _, prefix := range prefixes {
		for _, ti := range m.Tensors {
			if !slots[prefix+ti.Name].seen {
				return fmt.Errorf("train: %s has no tensor %s", where, prefix+ti.Name)
			}
		}
	}
	return nil
}

// loadParams reads the weights of the checkpoint cd straight into the model's
// master weights, and refreshes the compute copy.
func (m *Model) loadParams(ctx context.Context, cd *ckptDir) error {
	if err := m.readInto(ctx, cd, ModelFile, []string{""}, destOf(m.be, m.Params)); err != nil {
		return err
	}
	m.SyncWork()
	return nil
}

// resumeTarget is the checkpoint cfg.Resume names (nil to start afresh), opened
// against the checkpoint.json read to find it: restoring it reads that no more.
func (t *Trainer) resumeTarget(ctx context.Context) (*ckptDir, error) {
	if r := t.cfg.Resume; t.cfg.Restarts > 0 && r != "auto" {
		cd, found, err := latestCheckpoint(ctx, t.ckptRoot, t.log)
		if err != nil {
			return nil, err
		}
		if found {
			t.log.Info("a restarted job: continuing from the newest checkpoint in out, not resume "+r+" (the first attempt's)",
				"restarts", t.cfg.Restarts, "checkpoint", cd.Path(), "step", cd.Manifest.Step)
			return cd, nil
		}
	}
	switch r := t.cfg.Resume; r {
	case "none":
		cd, found, err := latestCheckpoint(ctx, t.ckptRoot, t.log)
		if err != nil {
			return nil, err
		}
		if found {
			return nil, fmt.Errorf("train: resume none, but %s already holds checkpoints of a run (the newest %s, step %d)\n---> HINT: resume auto continues it; or choose another out directory", t.ckptRoot, cd.Path(), cd.Manifest.Step)
		}
		return nil, nil
	case "auto":
		cd, found, err := latestCheckpoint(ctx, t.ckptRoot, t.log)
		if err != nil || !found {
			return nil, err
		}
		return cd, nil
	default:
		cd, err := resolveCheckpoint(ctx, t.ckpt(), r)
		if err != nil {
			return nil, fmt.Errorf("train: resume %s: %w%s", r, err, t.completeBeside(ctx, r))
		}
		dir := cd.Path()
		if own, ok, err := t.rerunOfResume(ctx, r, dir); err != nil || ok {
			return own, err
		}
		if sameRoot(dir, t.ckptRoot) {
			// A rollback within this run: the checkpoints after dir are of the
			// run it abandons.
			aside, steps, err := checkpoint.Manager{Logger: t.log}.SetAsideNewer(ctx, dir)
			if err != nil {
				return nil, fmt.Errorf("train: resume %s: %w\n---> HINT: move the newer checkpoints out of %s, or resume into another out directory", r, err, t.ckptRoot)
			}
			if aside != "" {
				t.log.Warn("resuming from an earlier checkpoint of this run: its later checkpoints are moved aside, so that resume auto and the pruning of old checkpoints follow this run from here (delete them when they are no longer wanted)",
					"steps", steps, "moved_to", aside)
			}
		}
		return cd, nil
	}
}

// rerunOfResume handles resume r (checkpoint dir) when out already holds a newer
// checkpoint. Made by a run started with the same resume, it is this command's
// own progress before an interruption: the command run again continues from it
// (ok; rather than going back to dir and overwriting it, or setting it aside).
// Made by another run, in another run directory than dir's, it is refused:
// starting from dir would overwrite that run's checkpoints. Otherwise (a rollback
// within out) the caller goes on.
func (t *Trainer) rerunOfResume(ctx context.Context, r, dir string) (*ckptDir, bool, error) {
	cd, found, err := latestCheckpoint(ctx, t.ckptRoot, t.log)
	if err != nil || !found || sameRoot(dir, t.ckptRoot) && path.Base(filepath.ToSlash(dir)) == checkpoint.DirName(cd.Manifest.Step) {
		return nil, false, err
	}
	own, step := cd.Path(), cd.Manifest.Step
	st, err := readState(ctx, cd)
	if err != nil {
		// Unreadable (damaged): not known to be this command's; a rollback
		// past it is what one does then.
		if sameRoot(dir, t.ckptRoot) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("train: resume %s: %s holds a checkpoint already: %w", r, t.ckptRoot, err)
	}
	differs := ""
	if sameResume(st.Config["resume"], r) {
		differs = rerunDiffers(st.Config, configMap(recordedConfig(t.cfg)))
		if differs == "" {
			t.log.Info("continuing this run from its newest checkpoint: a run started from resume "+r+" with these settings made it (this command, interrupted); to start from "+r+" again, move the checkpoints in out aside",
				"checkpoint", own, "step", step)
			t.ownNewest = true
			return cd, true, nil
		}
		differs = " with other settings (" + differs + ")"
	}
	if !sameRoot(dir, t.ckptRoot) {
		return nil, false, fmt.Errorf("train: resume %s, but %s already holds checkpoints of another run (the newest %s, step %d, which resume %q started%s)\n---> HINT: choose another out directory for a run from %s; resume auto continues the run in out", r, t.ckptRoot, own, step, st.Config["resume"], differs, r)
	}
	return nil, false, nil
}

// sameResume reports whether resume values a and b name the same place: the same
// string, or spellings of one (a trailing slash, ./, relative against absolute, taken
// from the working directory; file:// or not).
func sameResume(a, b string) bool {
	if a == b {
		return true
	}
	if strings.HasPrefix(a, "s3://") || strings.HasPrefix(b, "s3://") {
		return strings.TrimRight(a, "/") == strings.TrimRight(b, "/")
	}
	if a == "" || b == "" || a == "auto" || a == "none" || b == "auto" || b == "none" {
		return false
	}
	aa, err1 := filepath.Abs(strings.TrimPrefix(a, "file://"))
	ab, err2 := filepath.Abs(strings.TrimPrefix(b, "file://"))
	return err1 == nil && err2 == nil && aa == ab
}

// rerunKeys are the settings that make a run what it is: a command run again
// with the same resume and these is the same run (it may train longer, log or
// evaluate otherwise, run on other devices).
var rerunKeys = []string{"data", "order", "split", "dtype", "zero", "n_layer", "n_head", "n_embd", "block_size", "vocab_size", "bias", "dropout",
	"batch_size", "grad_accum", "lr", "min_lr", "warmup_steps", "weight_decay", "beta1", "beta2", "grad_clip", "seed", "init_from"}

// rerunDiffers names the rerunKeys whose values differ between a checkpoint's
// recorded config and this run's, "" when none does.
func rerunDiffers(was, now map[string]string) string {
	var out []string
	for _, k := range rerunKeys {
		if w, ok := was[k]; ok && w != now[k] {
			out = append(out, fmt.Sprintf("%s %s → %s", k, w, now[k]))
		}
	}
	return strings.Join(out, ", ")
}

// restoreNewestIntact restores the checkpoint in dir; when the run continues from
// the newest checkpoint in out by itself (resume auto, or a restarted job) and dir's
// files do not match its manifest (a disk or copy damaged them after the save), it
// moves dir aside and falls back to the next older checkpoint, as often as needed,
// so that one damaged save costs the steps since the one before it, not the run.
// A checkpoint the user named is never replaced by another. (With several ranks
// the AdamW state is read later, by shareStart, which falls back the same way.)
//
// cd, when not nil, is dir opened against the checkpoint.json read to find it
// (resumeTarget, or fallBack for an older one), which is then not read again.
func (t *Trainer) restoreNewestIntact(ctx context.Context, dir string, cd *ckptDir) (*resumeMoments, error) {
	for {
		var moments *resumeMoments
		var err error
		if cd == nil {
			cd, err = openCheckpoint(ctx, t.ckpt(), dir)
		}
		if err == nil {
			moments, err = t.restore(ctx, cd)
		}
		older, err := t.fallBack(ctx, dir, err)
		if older == nil {
			return moments, err
		}
		dir, cd = older.Path(), older
	}
}

// fallBack decides what follows err, the error of restoring the checkpoint in dir:
// the older checkpoint to continue from instead (nil for none; opened against the
// checkpoint.json read to find it), dir being damaged and the run continuing from
// the newest checkpoint in out by itself (see restoreNewestIntact; dir is then
// moved aside, with a warning), or else the error to stop with (nil when err is).
func (t *Trainer) fallBack(ctx context.Context, dir string, err error) (*ckptDir, error) {
	if err == nil || !errors.Is(err, checkpoint.ErrCorrupt) || !sameRoot(dir, t.ckptRoot) ||
		(t.cfg.Resume != "auto" && t.cfg.Restarts == 0 && !t.ownNewest) {
		if errors.Is(err, checkpoint.ErrCorrupt) {
			err = fmt.Errorf("%w%s", err, t.completeBeside(ctx, dir))
		}
		return nil, err
	}
	older, err2 := t.olderCheckpoint(ctx, dir)
	if err2 != nil {
		return nil, fmt.Errorf("%w\n---> HINT: no older checkpoint to fall back to (%v): delete %s to start afresh, or restore the file from a copy", err, err2, dir)
	}
	aside, _, err2 := checkpoint.Manager{Logger: t.log}.SetAsideNewer(ctx, older.Path())
	if err2 != nil {
		return nil, fmt.Errorf("%w\n---> HINT: move %s out of %s (or delete it), and rerun to continue from %s", err, dir, t.ckptRoot, older.Path())
	}
	t.log.Warn("the newest checkpoint is damaged: continuing from the one before it, and the damaged one is moved aside",
		"damaged", dir, "problem", err.Error(), "continuing_from", older.Path(), "moved_to", aside)
	return older, nil
}

// completeBeside is a hint naming the complete checkpoints beside the checkpoint
// directory dir (newest first, at most five), for an error about dir: "" when dir
// is not one, or its root holds none.
func (t *Trainer) completeBeside(ctx context.Context, dir string) string {
	d := strings.TrimRight(dir, "/")
	name := path.Base(filepath.ToSlash(d))
	if !strings.HasPrefix(name, "step_") {
		return "" // a run directory or a root: its own error says what it holds
	}
	root := filepath.Dir(d)
	if strings.HasPrefix(d, "s3://") {
		root = d[:strings.LastIndex(d, "/")]
	}
	entries, err := t.ckpt().Scan(ctx, root)
	if err != nil {
		return ""
	}
	var good []string
	for _, e := range entries {
		if e.Complete() && checkpoint.DirName(e.Step) != name && len(good) < 5 { // (dir itself by its name: ./out/... is spelt otherwise)
			good = append(good, e.Dir)
		}
	}
	if len(good) == 0 {
		return ""
	}
	return "\n---> HINT: resume from another checkpoint; the complete ones beside it, newest first: " + strings.Join(good, ", ")
}

// olderCheckpoint is the newest complete checkpoint in out before dir (a checkpoint
// directory in it), opened against the checkpoint.json read to find it. Those
// below dir's step are read newest first, up to the first complete one: it read
// every checkpoint's checkpoint.json, hundreds in a run that keeps them all.
func (t *Trainer) olderCheckpoint(ctx context.Context, dir string) (*ckptDir, error) {
	name := path.Base(filepath.ToSlash(strings.TrimRight(dir, "/")))
	step, err := strconv.ParseInt(strings.TrimPrefix(name, "step_"), 10, 64)
	if err != nil || !strings.HasPrefix(name, "step_") || checkpoint.DirName(step) != name {
		return nil, fmt.Errorf("%s holds no complete checkpoint before %s", t.ckptRoot, dir)
	}
	cd, err := checkpoint.Manager{Logger: t.log}.LatestBefore(ctx, t.ckptRoot, step)
	if errors.Is(err, checkpoint.ErrNone) {
		return nil, fmt.Errorf("%s holds no complete checkpoint before %s", t.ckptRoot, dir)
	}
	return cd, err
}

// absData is data (config's data) with its local paths absolute (State.DataDir): a
// dataset directory's; a blend file's (which names its datasets relative to itself);
// an inline blend "W1:PATH1,W2:PATH2" with each local dataset's path made absolute. ""
// for s3:// data, and for a location that is neither a local directory nor a blend file.
func absData(data string) string {
	if strings.HasSuffix(data, ".yaml") || strings.HasSuffix(data, ".yml") {
		if abs, err := filepath.Abs(data); err == nil && !strings.Contains(data, "://") {
			if fi, err := os.Stat(abs); err == nil && fi.Mode().IsRegular() {
				return abs
			}
		}
		return ""
	}
	if ds, err := loader.ParseData(data); err == nil && ds.Blended {
		parts, local := strings.Split(data, ","), false
		for i, part := range parts {
			w, p, _ := strings.Cut(part, ":")
			if p = strings.TrimSpace(p); !strings.Contains(p, "://") {
				if abs, err := filepath.Abs(p); err == nil {
					p, local = abs, true
				}
			}
			parts[i] = w + ":" + p
		}
		if !local {
			return ""
		}
		return strings.Join(parts, ",")
	}
	if strings.Contains(data, "://") {
		return ""
	}
	if abs, err := filepath.Abs(data); err == nil {
		if fi, err := os.Stat(abs); err == nil && fi.IsDir() {
			return abs
		}
	}
	return ""
}

// sameDir reports whether the local directories a and b are one (another spelling,
// a link); false when either is not there.
func sameDir(a, b string) bool {
	if a == "" || strings.Contains(b, "://") {
		return false
	}
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// sameRoot reports whether checkpoint directory dir lies directly in root.
func sameRoot(dir, root string) bool {
	if strings.HasPrefix(dir, "s3://") || strings.HasPrefix(root, "s3://") {
		return path.Dir(strings.TrimRight(dir, "/")) == strings.TrimRight(root, "/")
	}
	a, err := os.Stat(filepath.Dir(strings.TrimRight(strings.TrimPrefix(dir, "file://"), "/")))
	if err != nil {
		return false
	}
	b, err := os.Stat(strings.TrimPrefix(root, "file://"))
	return err == nil && os.SameFile(a, b)
}

// ReadState reads a checkpoint's trainer.json (S3 settings from the environment).
func ReadState(ctx context.Context, dir string) (*State, error) {
	return readStateAt(ctx, checkpoint.Manager{}, dir)
}

// readStateAt reads the trainer.json of the checkpoint in dir with m.
func readStateAt(ctx context.Context, m checkpoint.Manager, dir string) (*State, error) {
	cd, err := openCheckpoint(ctx, m, dir)
	if err != nil {
		return nil, err
	}
	return readState(ctx, cd)
}

// readState reads the trainer.json of the checkpoint cd.
func readState(ctx context.Context, cd *ckptDir) (*State, error) {
	data, err := cd.ReadFile(ctx, StateFile)
	if err != nil {
		return nil, err
	}
	dir := cd.Path()
	var st State
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&st); err != nil {
		return nil, fmt.Errorf("train: %s/%s: %w", dir, StateFile, err)
	}
	if st.Format != StateFormat {
		return nil, fmt.Errorf("train: %s/%s: format %q, want %q", dir, StateFile, st.Format, StateFormat)
	}
	if st.Version != 1 {
		return nil, fmt.Errorf("train: %s/%s: version %d; this gptkit reads version 1", dir, StateFile, st.Version)
	}
	if err := st.Model.Validate(); err != nil {
		return nil, fmt.Errorf("train: %s/%s: %w", dir, StateFile, err)
	}
	return &st, nil
}

// restore continues from the checkpoint cd (rank 0): weights, step, sample cursor
// and loss scale, and with one rank the AdamW state; with more it returns where the
// state is, for shareStart to broadcast it from (streamMoments). It refuses a
// checkpoint of another model shape or tokenizer.
func (t *Trainer) restore(ctx context.Context, cd *ckptDir) (*resumeMoments, error) {
	// checkpoint.json once: trainer.json and both safetensors files are read against
	// the one read to find the checkpoint (the optimizer file, with several ranks, by
	// streamMoments, through moments).
	dir := cd.Path()
	st, err := readState(ctx, cd)
	if err != nil {
		return nil, err
	}
	if st.Tokenizer.Fingerprint != t.tok.Fingerprint {
		// Before the shape: another tokenizer's vocabulary is another vocab_size
		// too, and the flag to give it back would not make the ids mean the same.
		return nil, fmt.Errorf("train: cannot resume %s: it was trained on ids of tokenizer %s (fingerprint %s), but %s has tokenizer %s (fingerprint %s)\n---> HINT: resume on data of the checkpoint's tokenizer (its run's data: %s), or start the new run in another out directory",
			dir, st.Tokenizer.Name, st.Tokenizer.Fingerprint, t.cfg.Data, t.tok.Name, t.tok.Fingerprint, st.Config["data"])
	}
	if st.Model != t.model.Config {
		changed, flags := shapeChanges(st.Model, t.model.Config)
		return nil, fmt.Errorf("train: cannot resume %s: its model is %s, this run's is %s (%s)\n---> HINT: resume with the checkpoint's shape (%s; a run started from a --config file needs it again), or start the new run in another out directory", dir, st.Model, t.model.Config, changed, flags)
	}
	// The changes since st's run are told by logResumed, once the checkpoint is read
	// whole: one found damaged reading it is not the one continued from.
	t.resumedSt = st
	// Each tensor straight into its place: the model's weights, and the AdamW state
	// with one rank. With more, shareStart reads it tensor by tensor, broadcasting
	// each as it goes, so that no rank holds more of it than its own part.
	if err := t.model.loadParams(ctx, cd); err != nil {
		return nil, err
	}
	moments := &resumeMoments{cd: cd}
	if t.coll.World() == 1 {
		if err := t.model.readInto(ctx, cd, OptimizerFile, []string{"exp_avg.", "exp_avg_sq."}, destOf(t.be, t.m), destOf(t.be, t.v)); err != nil {
			return nil, err
		}
		moments.placed = true
	}
	t.step, t.saved, t.resumed, t.lastCkpt = st.Step, st.Step, dir, dir
	t.sampler.Cursor = st.Cursor
	if err := t.sampler.Validate(); err != nil {
		return nil, fmt.Errorf("train: cannot resume %s: %w", dir, err)
	}
	if t.scaler.on() && st.LossScale > 0 {
		t.scaler.scale, t.scaler.good = st.LossScale, st.LossScaleGood
	}
	t.skipped = st.SkippedSteps
	if st.Metrics.Step == st.Step && st.Step > 0 { // the summary of a run that takes no step more
		t.lastLoss = st.Metrics.Loss
		if st.Metrics.ValLoss != nil {
			t.lastVal = *st.Metrics.ValLoss
		}
	}
	if moments.placed { // (else once streamMoments has read the AdamW state)
		t.logResumed()
	}
	return moments, nil
}

// logResumed says on the log where the run continues from, after what has changed
// since that checkpoint's run (warnOrderChanges, logSettingChanges): once, for the
// checkpoint continued from, not for each damaged one fallen back from.
func (t *Trainer) logResumed() {
	if st := t.resumedSt; st != nil {
		t.resumedSt = nil
		t.warnOrderChanges(st)
		t.logSettingChanges(st)
	}
	t.log.Info("resumed", "checkpoint", t.resumed, "step", t.step, "samples_consumed", t.sampler.Cursor.Consumed)
}

// shapeChanges names the keys whose values differ between a checkpoint's model
// (was) and a run's (now), "n_embd 16 → 32", and the flags that give was's values.
func shapeChanges(was, now ModelConfig) (changed, flags string) {
	var cs, fs []string
	for _, k := range []struct {
		key      string
		was, now any
	}{
		{"n_layer", was.NLayer, now.NLayer}, {"n_head", was.NHead, now.NHead}, {"n_embd", was.NEmbd, now.NEmbd},
		{"block_size", was.BlockSize, now.BlockSize}, {"vocab_size", was.VocabSize, now.VocabSize}, {"bias", was.Bias, now.Bias},
	} {
		if k.was != k.now {
			cs = append(cs, fmt.Sprintf("%s %v → %v", k.key, k.was, k.now))
			fs = append(fs, fmt.Sprintf("--%s=%v", strings.ReplaceAll(k.key, "_", "-"), k.was))
		}
	}
	if len(cs) == 0 { // only the padding: not reachable from a config
		return fmt.Sprintf("padded vocab %d → %d", was.PaddedVocab, now.PaddedVocab), "the same vocab_size"
	}
	return strings.Join(cs, ", "), strings.Join(fs, " ")
}

// LoadCheckpoint reads the model of a checkpoint (a checkpoint directory or a run
// directory, whose newest complete checkpoint it takes, warning through slog.Default
// about each newer one it skips) onto be, for sampling, scoring and export,
// computing in the backend's default dtype (float32 on the CPU, bfloat16 on a
// GPU; the weights themselves are float32). An s3:// path is read from AWS's
// endpoint (or $AWS_ENDPOINT_URL_S3): LoadCheckpointFrom takes another.
func LoadCheckpoint(ctx context.Context, path string, be kernels.Backend) (*Model, *State, error) {
	return LoadCheckpointFrom(ctx, path, be, storage.Options{})
}

// LoadCheckpointFrom is LoadCheckpoint with the storage options an s3:// path is
// read with (--s3-endpoint, --s3-path-style).
func LoadCheckpointFrom(ctx context.Context, path string, be kernels.Backend, so storage.Options) (*Model, *State, error) {
	if so.Logger == nil {
		so.Logger = slog.Default()
	}
	cm := checkpoint.Manager{Logger: slog.Default(), Storage: so}
	cd, err := resolveCheckpoint(ctx, cm, path)
	if err != nil {
		return nil, nil, err
	}
	st, err := readState(ctx, cd)
	if err != nil {
		return nil, nil, err
	}
	dt, err := ResolveDType("auto", be)
	if err != nil {
		return nil, nil, err
	}
	m, err := NewModelDType(be, st.Model, dt)
	if err != nil {
		return nil, nil, err
	}
	if err := m.loadParams(ctx, cd); err != nil {
		m.Close()
		return nil, nil, err
	}
	return m, st, nil
}

// logSettingChanges names the settings changed since the checkpoint's run that a
// resume takes as they are now (lr and its schedule, AdamW's, max_steps, eval_steps,
// dropout, ...): "lr 0.001 → 0.0005". Those that change the samples are warned about
// by warnOrderChanges, and the model's shape is refused, before; out and resume name
// where the run goes, not how it trains, and init_from only how the first run began.
func (t *Trainer) logSettingChanges(st *State) {
	// init_from: the weights a run starts from, which a resume's replace.
	skip := map[string]bool{"data": true, "seed": true, "order": true, "split": true, "out": true, "resume": true, "init_from": true}
	now := configMap(recordedConfig(t.cfg))
	var changed []string
	for _, f := range fields {
		was, ok := st.Config[f.Key]
		if !ok || skip[f.Key] || was == now[f.Key] {
			continue
		}
		changed = append(changed, fmt.Sprintf("%s %s → %s", f.Key, was, now[f.Key]))
	}
	if len(changed) > 0 {
		t.log.Info("resuming with settings changed since the checkpoint's run: the rest of the run follows them", "changed", strings.Join(changed, ", "))
	}
}

// warnOrderChanges warns about each change since the checkpoint's run that makes the
// samples after the checkpoint differ from an uninterrupted run's: the train data
// (its shards' checksums or blend weights, loader.Data.DataKeys; for a checkpoint
// older than that record, another directory than its run's, not merely another
// spelling of it), the train samples
// asked for (the index is built for that count; one of a single dataset differs only
// when the count spans another number of epochs, loader.SameOrderFor), the seed (the shuffle, and the
// dropout masks), the order and the split. The valid samples asked for (eval_steps)
// do not move the train order.
func (t *Trainer) warnOrderChanges(st *State) {
	if was, now := st.NumSamples[loader.Train], t.numSamples[loader.Train]; was != now && !loader.SameOrderFor(t.data.Train, was) {
		t.log.Warn("the run asks the loader for another number of train samples than the checkpoint's run (max_steps, batch_size, grad_accum or the world changed): the sample order after the checkpoint differs from an uninterrupted run's",
			"checkpoint", was, "now", now)
	}
	now := configMap(recordedConfig(t.cfg)) // (redacted)
	if key := t.data.DataKeys[loader.Train]; st.TrainData != "" && st.TrainData != key {
		t.log.Warn("the train data differs from the checkpoint's run (its shards were re-made or changed, or the datasets or blend weights differ): the samples after the checkpoint differ from an uninterrupted run's, and may repeat samples already seen or skip others",
			"checkpoint", st.Config["data"], "now", now["data"])
	}
	if st.RNG.Seed != t.cfg.Seed {
		t.log.Warn("seed differs from the checkpoint's run: the sample order and the dropout masks after the checkpoint differ from an uninterrupted run's",
			"checkpoint", st.RNG.Seed, "now", t.cfg.Seed)
	}
	if was := st.Config["data"]; st.TrainData == "" && was != "" && was != now["data"] && !sameDir(st.DataDir, t.cfg.Data) {
		t.log.Warn("data differs from the checkpoint's run: if it is another dataset, the samples after the checkpoint differ from an uninterrupted run's (the same dataset at another path reads the same)",
			"checkpoint", was, "now", now["data"])
	}
	for _, key := range []string{"order", "split"} {
		if key == "split" && !t.data.SplitUsed {
			continue // presplit data: the split divides nothing
		}
		if was, ok := st.Config[key]; ok && was != now[key] {
			t.log.Warn(key+" differs from the checkpoint's run: the samples after the checkpoint differ from an uninterrupted run's",
				"checkpoint", was, "now", now[key])
		}
	}
}
