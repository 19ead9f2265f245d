package train

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"gptkit/kernels"
	"gptkit/loader"
	"gptkit/shards"
	"gptkit/storage"
	"gptkit/train/checkpoint"
	"gptkit/train/hfgpt2"
	"gptkit/train/tensorboard"
)

// AdamEps is AdamW's epsilon (PyTorch's default, as nanoGPT uses it).
const AdamEps = 1e-8

// Trainer is one rank of a training run: NewTrainer opens the data and builds (or
// resumes) the model, Train runs the steps, Close releases the data.
type Trainer struct {
	// OnStep, if set, is called on rank 0 after every step with its metrics (and on
	// evaluation steps with val_loss); Train then logs no per-step lines itself (a
	// command draws a live progress line with it).
	OnStep func(Metrics)

	cfg   Config
	be    kernels.Backend
	coll  FullCollectives
	log   *slog.Logger
	model *Model
	dtype kernels.DType // the compute dtype (mixed precision below float32)
	// The AdamW moments (float32) of this rank's slice flat.lo..flat.hi of the
	// layout (all of it, padded, without ZeRO-1).
	m, v kernels.Tensor
	// stats (Float64) is what one step downloads: [0] the loss sum of this
	// rank's micro-batches, [1:] the gradient norm's partial sums, one per block.
	stats   kernels.Tensor
	flat    flat
	buckets *bucketPlan // nil: one all-reduce after the backward pass
	scaler  lossScaler  // float16's dynamic loss scale
	skipped int         // steps the loss scaling skipped: AdamW's step is step - skipped
	optMem  int64       // bytes of m and v

	commWait time.Duration // the steps' time waiting for gradient buckets (benchmarks)
	// mastersStale: under ZeRO-1 with the weights all-gathered in the compute
	// dtype, the float32 master weights outside this rank's shard are old
	// (syncMasters gathers them).
	mastersStale bool
	checkEveryN  int // tests: compare the weights' checksums this often
	scratchBufs  map[int][]float32
	// alloc gives the weights and the gradients: the backend's memory, or, on a
	// host backend, the collectives' shared memory (freed by Close); hostAlloc
	// the host buffers of the collectives (shared memory when there is some).
	alloc     func(what string, n int) (kernels.Tensor, error)
	hostAlloc func(n int) []float32
	shared    SharedMemory

	data       *loader.Data
	tok        shards.TokenizerInfo
	sampler    *loader.Sampler
	numSamples [3]int64
	outLock    *storage.Lock // rank 0's hold on cfg.Out
	madeOut    []string      // the directories lockOut made for cfg.Out, cfg.Out first
	// init and initErr: init_from's directory initPath, opened once (initDir).
	init     *hfgpt2.Dir
	initErr  error
	initPath string
	// initTokChecked is the fingerprint of the data's tokenizer that checkInitData
	// checked init_from's tokenizer files against ("" none): the check after the
	// data is opened is then not made again (each reads the files).
	initTokChecked string
	// dataManifests: the data's manifest checkInitData read, handed to the loader
	// (loader.Options.Manifests) so that openData does not read it again.
	dataManifests map[string]*shards.Manifest
	// ownNewest: resume named another run's checkpoint, and this run continues
	// from the newest of its own in out (resumeElsewhere).
	ownNewest bool

	step        int    // optimizer steps done
	saved       int    // the step of the newest checkpoint (-1: none)
	resumed     string // the checkpoint this run continued from
	resumedSt   *State // its trainer.json, until logResumed has named what changed since
	metrics     *metricsFile
	batch       []int32 // one micro-batch of samples, B*(T+1) ids
	in, tgt     []int32
	lastLoss    float64
	lastMetrics *Metrics
	lastVal     float64
	lastCkpt    string
	ckptRoot    string
	startTime   time.Time

	// stepping: Train has begun a step (Stepping); stepMu makes, with one rank, the
	// check for a stop and the mark one decision.
	stepMu   sync.Mutex
	stepping atomic.Bool

	tb   *tensorboard.Writer // rank 0's event file
	peak float64             // the device's peak FLOP/s (0: unknown, no MFU)
}

// Result sums up a finished (or interrupted) run.
type Result struct {
	Step           int     // optimizer steps done
	Loss           float64 // the last step's loss (NaN when no step ran)
	ValLoss        float64 // the last evaluation's val_loss (NaN when none ran)
	Checkpoint     string  // the newest checkpoint written or resumed from ("" none)
	ResumedFrom    string  // the checkpoint the run continued from ("" when it started afresh)
	Params         int     // parameters in the model
	TrainedSeconds float64 // wall time of Train
}

// Run trains as cfg says on one rank: NewTrainer, Train, Close.
func Run(ctx context.Context, cfg Config, be kernels.Backend, coll Collectives, log *slog.Logger) (*Result, error) {
	t, err := NewTrainer(ctx, cfg, be, coll, log)
	if err != nil {
		return nil, err
	}
	res, err := t.Train(ctx)
	if cerr := t.Close(); err == nil {
		err = cerr
	}
	return res, err
}

// NewTrainer validates cfg, opens the data, builds the model and the optimizer
// state, and restores a checkpoint (cfg.Resume) or initializes the weights
// (cfg.InitFrom, else seeded). Rank 0 writes OUT/config.yaml and starts
// OUT/metrics.jsonl.
func NewTrainer(ctx context.Context, cfg Config, be kernels.Backend, coll Collectives, log *slog.Logger) (_ *Trainer, err error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if coll == nil {
		coll = Single{}
	}
	opened := cfg.InitOpened // init_from's directory, the command's opening: this run's to close
	cfg.InitOpened = nil
	err = cfg.Validate()
	if err == nil {
		// Before the data is opened and the weights made: the first forward
		// would meet it.
		err = fitsHeadSize(cfg, be)
	}
	if err != nil {
		if opened != nil {
			opened.Close()
		}
		return nil, err
	}
	t := &Trainer{cfg: cfg, be: be, coll: Full(coll), log: log, saved: -1, lastLoss: math.NaN(), lastVal: math.NaN(),
		ckptRoot: filepath.Join(cfg.Out, CheckpointsDir)}
	if opened != nil {
		// As if initDir had opened it: closeInit closes it once the weights are
		// read, or Close when NewTrainer fails.
		t.init, t.initPath = opened, cfg.InitFrom
	}
	defer func() {
		if err != nil {
			t.Close()
		}
	}()
	world := int64(coll.World())
	B, T := cfg.BatchSize, cfg.BlockSize

	// Which checkpoint, if any, this run continues from: rank 0 decides (and reads
	// it), and broadcasts it to the others, which need not see the same disk.
	rank0 := coll.Rank() == 0
	// The run-wide lines (the same on every rank): rank 0's at Info, the
	// others' at Debug, so a job's log says them once.
	info := log.Info
	if !rank0 {
		info = log.Debug
	}
	var ckpt *ckptDir // (rank 0's)
	if rank0 {
		if err := t.lockOut(ctx); err != nil {
			return nil, err
		}
		if ckpt, err = t.resumeTarget(ctx); err != nil {
			return nil, err
		}
	}

	// The data: every sample the run's steps consume, and the evaluation's.
	perStep := int64(B) * int64(cfg.GradAccum) * world
	if int64(cfg.MaxSteps) > math.MaxInt64/perStep || int64(cfg.EvalSteps) > math.MaxInt64/(int64(B)*world) {
		return nil, fmt.Errorf("train: max_steps %d or eval_steps %d times %d samples a step overflows the sample count", cfg.MaxSteps, cfg.EvalSteps, perStep)
	}
	t.numSamples[loader.Train] = int64(cfg.MaxSteps) * perStep
	if cfg.EvalSteps > 0 {
		t.numSamples[loader.Valid] = int64(cfg.EvalSteps) * int64(B) * world
	}
	if cfg.InitFrom != "" {
		if err := t.checkInitData(ctx); err != nil {
			return nil, err
		}
	}
	if err := t.openData(ctx); err != nil {
		return nil, err
	}
	t.tok = t.data.Tokenizer
	vocab := cfg.VocabSize
	switch {
	case vocab == 0 && t.tok.VocabSize == 0:
		return nil, fmt.Errorf("train: %s does not record its tokenizer (bare GPT-NeoX shards?)\n---> HINT: set vocab_size (--vocab-size)", cfg.Data)
	case vocab == 0:
		vocab = t.tok.VocabSize
	case vocab < t.tok.VocabSize && cfg.InitFrom != "":
		return nil, fmt.Errorf("train: init_from %s has a vocabulary of %d tokens, but %s holds ids of tokenizer %s, of %d: the weights were trained on another tokenizer's ids\n---> HINT: tokenize the data with the tokenizer the weights were trained with, or train without init_from", cfg.InitFrom, vocab, cfg.Data, t.tok.Name, t.tok.VocabSize)
	case vocab < t.tok.VocabSize:
		return nil, fmt.Errorf("train: vocab_size %d is smaller than the dataset tokenizer's %d", vocab, t.tok.VocabSize)
	}
	if cfg.InitFrom != "" && cfg.CheckInitTokenizer != nil && (t.initTokChecked == "" || t.initTokChecked != t.tok.Fingerprint) {
		if err := cfg.CheckInitTokenizer(cfg.InitFrom, t.tok); err != nil {
			return nil, err
		}
	}
	t.sampler = &loader.Sampler{Samples: t.data.Train, Rank: coll.Rank(), World: coll.World(), Micro: B, GradAccum: cfg.GradAccum}

	// The model and the optimizer state, if they fit.
	if t.dtype, err = ResolveDType(cfg.Dtype, be); err != nil {
		return nil, err
	}
	est := EstimateMemory(cfg, vocab, coll.World(), t.dtype)
	if err := CheckMemory(est, be); err != nil {
		return nil, err
	}
	info("memory", "estimate", est.String())
	mc := cfg.Model(vocab)
	if err := t.build(mc); err != nil {
		return nil, err
	}

	// The starting point: rank 0's checkpoint or initial weights, for every rank.
	var moments *resumeMoments // where rank 0's checkpoint has the AdamW state
	switch {
	case ckpt != nil:
		if moments, err = t.restoreNewestIntact(ctx, ckpt.Path(), ckpt); err != nil {
			return nil, err
		}
	case cfg.InitFrom != "" && rank0:
		if err := t.initFrom(cfg.InitFrom); err != nil {
			return nil, err
		}
		log.Info("initialized from weights", "dir", cfg.InitFrom)
	default:
		t.model.Init(uint64(cfg.Seed))
	}
	t.closeInit()
	if err := t.shareStart(ctx, ckpt != nil, moments); err != nil {
		return nil, err
	}

	if coll.Rank() == 0 {
		if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
			return nil, fmt.Errorf("train: create the run directory: %w", err)
		}
		if err := writeFileAtomic(filepath.Join(cfg.Out, ConfigName), recordedConfig(cfg).MarshalYAML()); err != nil {
			return nil, err
		}
		if t.metrics, err = openMetrics(cfg.Out, t.step); err != nil {
			return nil, err
		}
		if t.step < cfg.MaxSteps { // a finished run's rerun writes no empty event file
			if err := t.openTensorBoard(); err != nil {
				return nil, err
			}
		}
		if p, ok := be.(peakFLOPSer); ok {
			t.peak = p.PeakFLOPS()
		}
	}
	modelArgs := []any{"params", mc.NumParams(), "shape", mc.String(), "backend", be.Name(), "dtype", t.dtype.String(),
		"tokens_per_step", B * T * cfg.GradAccum * coll.World(), "train_samples", t.data.Train.Len()}
	if t.peak > 0 {
		// What mfu divides by: on the CPU measured now (it moves with load
		// and clocks), on a GPU the datasheet's.
		modelArgs = append(modelArgs, "peak_tflops", round4(t.peak/1e12))
	}
	info("model", modelArgs...)
	mem := t.Memory()
	info("memory", "params", kernels.GiB(mem.Params), "grads", kernels.GiB(mem.Grads), "adamw", kernels.GiB(mem.Optimizer),
		"activations", kernels.GiB(mem.Activations), "total", kernels.GiB(mem.Total()), "micro_batch", fmt.Sprintf("%dx%d", B, T))
	if coll.World() > 1 {
		info("data parallel", "rank", coll.Rank(), "world", coll.World(), "zero", cfg.Zero,
			"adamw_floats_per_rank", t.m.Len(), "buckets", t.buckets != nil)
	}
	return t, nil
}

// headSizeLimit is implemented by backends whose attention takes heads of at most
// MaxHeadSize elements (kernels/cuda).
type headSizeLimit interface {
	MaxHeadSize() int
}

// fitsHeadSize refuses cfg's shape where be's attention cannot take its head size
// (n_embd / n_head).
func fitsHeadSize(cfg Config, be kernels.Backend) error {
	l, ok := be.(headSizeLimit)
	if !ok || cfg.NHead < 1 {
		return nil
	}
	if hs := cfg.NEmbd / cfg.NHead; hs > l.MaxHeadSize() {
		return fmt.Errorf("train: head size %d (n_embd %d / n_head %d) is more than the attention kernels of %s take (%d)\n---> HINT: use more heads (--n-head, with n_embd / n_head at most %[5]d), or --device cpu",
			hs, cfg.NEmbd, cfg.NHead, be.Name(), l.MaxHeadSize())
	}
	return nil
}

// build makes the model of shape mc (zeroed, in t.dtype), its gradients, activations and
// AdamW state on the trainer's backend, laid out for its collectives.
func (t *Trainer) build(mc ModelConfig) error {
	cfg, be, coll := t.cfg, t.be, t.coll
	B, T := cfg.BatchSize, cfg.BlockSize
	var err error
	if t.dtype == kernels.Float16 {
		t.scaler = newLossScaler()
	}
	_, _, total := mc.Layout()
	t.flat = newFlat(total, coll.World(), coll.Rank(), cfg.Zero == 1 && coll.World() > 1)
	t.alloc, t.hostAlloc, t.shared = collectiveMemory(be, coll)
	if t.model, err = newModel(be, mc, t.dtype, t.flat.padded, t.alloc); err != nil {
		return t.memoryError(err)
	}
	t.model.Dropout = float32(cfg.Dropout)
	if err := t.model.AllocGrads(); err != nil {
		return t.memoryError(err)
	}
	if err := t.model.Reserve(B, T, true); err != nil {
		return t.memoryError(err)
	}
	for _, p := range []*kernels.Tensor{&t.m, &t.v} {
		if *p, err = be.Alloc("AdamW moments", kernels.Float32, t.flat.hi-t.flat.lo); err != nil {
			return t.memoryError(err)
		}
		t.optMem += int64(p.Bytes())
	}
	if t.stats, err = be.Alloc("step statistics", kernels.Float64, 1+t.flat.padded/t.flat.block); err != nil {
		return t.memoryError(err)
	}
	t.model.free(t.model.lossAcc, &t.model.mem.Activations)
	t.model.lossAcc = t.stats.Slice(0, 1)
	t.batch = make([]int32, 0, B*(T+1))
	t.in, t.tgt = make([]int32, B*T), make([]int32, B*T)
	// Buckets: on the host with a goroutine (not with ZeRO-1), on a device on
	// the collectives' communication stream (ZeRO-1's reduced to each shard's rank).
	if _, streams := t.streamCollectives(); coll.World() > 1 && cfg.BucketMB > 0 && (streams || t.model.Grads.IsHost() && cfg.Zero == 0) {
		t.buckets = planBuckets(t.model, cfg.BucketMB)
	}
	return nil
}

// shareStart checks that every rank reads rank 0's data (checkSameData), and makes
// every rank start from rank 0's state: whether it resumed (and
// from which step, sample, loss scale and count of overflow-skipped steps, which
// AdamW's bias correction counts from), its weights, and its AdamW state when
// resumed (moments: on rank 0, where it is; streamMoments broadcasts it). When the
// state's file turns out damaged and rank 0 falls back to an older checkpoint, all
// of it is shared again. With one rank the moments are in place already.
func (t *Trainer) shareStart(ctx context.Context, resumed bool, moments *resumeMoments) error {
	ctx = context.WithoutCancel(ctx)
	if err := t.checkSameData(ctx); err != nil {
		return err
	}
	for {
		if t.coll.World() > 1 {
			hdr := t.scratch(12)
			clear(hdr)
			if t.coll.Rank() == 0 {
				var flag float64
				if resumed {
					flag = 1
				}
				putBits(hdr[0:], flag)
				putBits(hdr[2:], float64(t.step))
				putBits(hdr[4:], float64(t.sampler.Cursor.Consumed))
				putBits(hdr[6:], t.scaler.scale)
				putBits(hdr[8:], float64(t.scaler.good))
				putBits(hdr[10:], float64(t.skipped))
			}
			if err := t.coll.Broadcast(ctx, hdr, 0); err != nil {
				return fmt.Errorf("train: broadcast the starting point: %w", err)
			}
			resumed = getBits(hdr[0:]) == 1
			if t.coll.Rank() != 0 && resumed {
				t.step, t.saved = int(getBits(hdr[2:])), int(getBits(hdr[2:]))
				t.sampler.Cursor.Consumed = int64(getBits(hdr[4:]))
				t.scaler.scale, t.scaler.good = getBits(hdr[6:]), int(getBits(hdr[8:]))
				t.skipped = int(getBits(hdr[10:]))
				if err := t.sampler.Validate(); err != nil {
					return fmt.Errorf("train: cannot continue rank 0's checkpoint: %w", err)
				}
			}
			if err := t.onTensor(ctx, broadcastFrom0, t.model.Params); err != nil {
				return fmt.Errorf("train: broadcast the initial weights: %w", err)
			}
			t.model.SyncWork()
		}
		if !resumed || moments != nil && moments.placed {
			return nil
		}
		again, err := t.streamMoments(ctx, moments)
		if err != nil || !again {
			return err
		}
	}
}

// ConfigName is the resolved configuration's file in the run directory.
const ConfigName = "config.yaml"

// CheckpointsDir is the checkpoints' directory in the run directory.
const CheckpointsDir = "checkpoints"

// Model returns the trainer's model.
func (t *Trainer) Model() *Model { return t.model }

// Step returns the optimizer steps done.
func (t *Trainer) Step() int { return t.step }

// Close releases the data, the metrics file, the model's and the optimizer's
// memory and the shared buffers (the model is unusable afterwards).
func (t *Trainer) Close() error {
	t.closeInit()
	if t.model != nil {
		t.model.Close()
	}
	for _, x := range []kernels.Tensor{t.m, t.v, t.stats} {
		if !x.Nil() {
			t.be.Free(x)
		}
	}
	t.m, t.v, t.stats = kernels.Tensor{}, kernels.Tensor{}, kernels.Tensor{}
	if t.model != nil {
		for _, x := range []kernels.Tensor{t.model.paramsAll, t.model.gradsAll} {
			switch {
			case x.Nil():
			case x.Owner() == nil && t.shared != nil: // the collectives' shared memory
				t.shared.FreeShared(x.Float32s())
			default:
				t.be.Free(x)
			}
		}
	}
	if t.shared != nil {
		for _, b := range t.scratchBufs {
			t.shared.FreeShared(b)
		}
		t.scratchBufs, t.shared = nil, nil
	}
	if t.model != nil {
		t.model.Params, t.model.Grads, t.model.paramsAll, t.model.gradsAll = kernels.Tensor{}, kernels.Tensor{}, kernels.Tensor{}, kernels.Tensor{}
	}
	var errs []error
	if t.metrics != nil {
		errs = append(errs, t.metrics.close())
		t.metrics = nil
	}
	if t.tb != nil {
		errs = append(errs, t.tb.Close())
		t.tb = nil
	}
	if t.data != nil {
		errs = append(errs, t.data.Close())
		t.data = nil
	}
	if t.outLock != nil {
		errs = append(errs, t.releaseOut())
		t.outLock = nil
	}
	return errors.Join(errs...)
}

// releaseOut gives the run directory up. A run that failed before writing
// anything (no data, a bad flag) leaves no hidden lock file behind, nor the
// directory when it made it.
func (t *Trainer) releaseOut() error {
	des, err := os.ReadDir(t.cfg.Out)
	if err != nil || len(des) != 1 || des[0].Name() != storage.WriterLockName {
		return t.outLock.Release()
	}
	if err := t.outLock.ReleaseRemoving(); err != nil {
		return err
	}
	// Deepest first; one another run has begun writing to stays, and so do its
	// parents (os.Remove leaves a directory that is not empty).
	for _, dir := range t.madeOut {
		if os.Remove(dir) != nil {
			break
		}
	}
	return nil
}

// lockOut makes the run directory this trainer's (rank 0's) until Close: a second
// train writing the same out (its metrics, its checkpoints, their pruning) fails at
// once, naming the first (storage.LockDir: flock(2), dropped when the process ends,
// however it ends, so a killed run never blocks its rerun).
func (t *Trainer) lockOut(ctx context.Context) error {
	for dir := filepath.Clean(t.cfg.Out); ; dir = filepath.Dir(dir) {
		if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) || dir == filepath.Dir(dir) {
			break
		}
		t.madeOut = append(t.madeOut, dir)
	}
	// Durably (the parents fsynced): the checkpoints saved in it go with it.
	if err := checkpoint.MkdirAll(t.cfg.Out); err != nil {
		return fmt.Errorf("train: create the run directory: %w", err)
	}
	st, err := storage.Open(ctx, t.cfg.Out, storage.Options{})
	if err != nil {
		return fmt.Errorf("train: the run directory: %w", err)
	}
	lock, err := storage.LockDir(ctx, st, "", storage.LockOwner("train --out "+t.cfg.Out))
	if err != nil && !errors.Is(err, storage.ErrLocked) {
		return fmt.Errorf("train: the run directory: %w", err)
	}
	if err != nil {
		// One hint, train's: the lock's own (choose another output directory) says
		// the same without the flag.
		what, _, _ := strings.Cut(err.Error(), "\n---> HINT: ")
		return fmt.Errorf("train: %s\n---> HINT: another train writes this run directory: wait for it to end, or give this run another --out", what)
	}
	t.outLock = lock
	return nil
}

// Memory is what this rank holds on its backend.
func (t *Trainer) Memory() MemoryUse {
	u := t.model.Memory()
	u.Optimizer = t.optMem
	return u
}

// InterruptedError is Train's error when a stop (a signal to this rank or, with
// ErrPeerInterrupted as the cause, to another) ended the run between steps, after a
// checkpoint of the step it stopped after was saved, unless no step was taken.
type InterruptedError struct {
	Step  int // the step the run stopped after
	Taken int // the steps this run took (0: it saved nothing)
	// Checkpoint holds Step: the one saved on the stop, or, where no step was
	// taken, the one the run resumed from ("" for none, and on the ranks other
	// than 0, which do not write it).
	Checkpoint string
	Cause      error
}

func (e *InterruptedError) Error() string {
	switch {
	case e.Taken == 0 && e.Checkpoint != "":
		return fmt.Sprintf("train: interrupted before the first step after resuming at step %d: nothing saved (checkpoint %s is still the newest): %v", e.Step, e.Checkpoint, e.Cause)
	case e.Taken == 0:
		return fmt.Sprintf("train: interrupted at step %d, before any step was taken: nothing saved: %v", e.Step, e.Cause)
	case e.Checkpoint == "":
		return fmt.Sprintf("train: interrupted after step %d (checkpoint written by rank 0): %v", e.Step, e.Cause)
	}
	return fmt.Sprintf("train: interrupted after step %d (checkpoint %s): %v", e.Step, e.Checkpoint, e.Cause)
}

func (e *InterruptedError) Unwrap() error { return e.Cause }

// beginStep is agreeStop that marks the step, when the run goes on, as begun
// (Stepping). With one rank the two make one decision against Stepping's read: a
// stop signal's cancellation is either seen here or finds the step begun.
func (t *Trainer) beginStep(ctx context.Context) (stop bool, err error) {
	if t.coll.World() == 1 {
		t.stepMu.Lock()
		defer t.stepMu.Unlock()
	}
	stop, err = t.agreeStop(ctx)
	if err == nil && !stop {
		t.stepping.Store(true)
	}
	return stop, err
}

// Stepping reports whether Train has begun a step: a stop signal from now on finishes
// the step under way and saves a checkpoint; before, it saves nothing. Safe to call
// from any goroutine, from before Train to after it.
func (t *Trainer) Stepping() bool {
	t.stepMu.Lock()
	defer t.stepMu.Unlock()
	return t.stepping.Load()
}

// Train runs steps until max_steps, evaluating and checkpointing as configured. When
// ctx is cancelled (a stop signal) it finishes the step under way, saves a
// checkpoint and returns an error wrapping ctx's.
func (t *Trainer) Train(ctx context.Context) (*Result, error) {
	cfg := t.cfg
	t.startTime = time.Now()
	res := func() *Result {
		return &Result{Step: t.step, Loss: t.lastLoss, ValLoss: t.lastVal, Checkpoint: t.lastCkpt, ResumedFrom: t.resumed,
			Params: t.model.Config.NumParams(), TrainedSeconds: time.Since(t.startTime).Seconds()}
	}
	if t.step >= cfg.MaxSteps {
		t.log.Warn("the run has already done its max_steps: nothing to train (raise max_steps, --max-steps, to train on)", "step", t.step, "max_steps", cfg.MaxSteps, "checkpoint", t.lastCkpt)
		return res(), nil
	}
	start := t.step
	for t.step < cfg.MaxSteps {
		stop, err := t.beginStep(ctx)
		if err != nil {
			return res(), err
		}
		if stop {
			if t.saved != t.step && t.step > 0 {
				if err := t.save(context.WithoutCancel(ctx)); err != nil {
					return res(), fmt.Errorf("train: interrupted at step %d, and %w: %w (the newest checkpoint is of step %d)", t.step, ErrCheckpointFailed, err, t.saved)
				}
			}
			cause := context.Cause(ctx)
			if cause == nil {
				cause = ErrPeerInterrupted
			}
			return res(), &InterruptedError{Step: t.step, Taken: t.step - start, Checkpoint: t.lastCkpt, Cause: cause}
		}
		m, err := t.guardedStep(ctx)
		if err != nil {
			return res(), err
		}
		last := t.step == cfg.MaxSteps
		if cfg.EvalSteps > 0 && t.data.Valid != nil && (last || (cfg.EvalEvery > 0 && t.step%cfg.EvalEvery == 0)) {
			v, err := t.Evaluate(ctx)
			if err != nil {
				return res(), err
			}
			if math.IsNaN(v) || math.IsInf(v, 0) {
				// The train loss is checked before the update; this is the first
				// look at the weights after it (every rank has the same v).
				return res(), fmt.Errorf("train: step %d diverged: val_loss %g after its update (loss before it %g, gradient norm %g; %s)\n---> HINT: %s", t.step, v, m.Loss, m.GradNorm, t.newestCheckpoint(), t.divergeHint())
			}
			m.ValLoss = &v
			t.lastVal = v
		}
		t.lastMetrics = &m
		if t.coll.Rank() == 0 {
			if err := t.metrics.write(m); err != nil {
				return res(), fmt.Errorf("train: step %d: write %s: %w", m.Step, t.metrics.path, err)
			}
			if err := t.logTensorBoard(m); err != nil {
				return res(), err
			}
			if t.OnStep != nil {
				t.OnStep(m)
			} else if t.step%cfg.LogEvery == 0 || last || m.ValLoss != nil {
				args := []any{"step", m.Step, "loss", round4(m.Loss), "lr", m.LR, "grad_norm", round4(m.GradNorm), "tokens_per_s", math.Round(m.TokensPerS),
					"samples_per_s", round4(m.SamplesPerS), "tflops", round4(m.TFLOPS)}
				if t.peak > 0 {
					args = append(args, "mfu", round4(m.MFU))
				}
				args = append(args, "mem_params", kernels.GiB(m.ParamsBytes), "mem_activations", kernels.GiB(m.ActivationsBytes))
				if m.DeviceBytes > 0 {
					args = append(args, "mem_device", kernels.GiB(m.DeviceBytes))
				}
				if m.ValLoss != nil {
					args = append(args, "val_loss", round4(*m.ValLoss))
				}
				if !last && m.SamplesPerS > 0 {
					// The rest of the run at this step's speed: a log has no live line
					// with its ETA, and a default run (GPT-2 124M, 600,000 steps) on a
					// CPU would otherwise say nothing of taking years.
					perStep := float64(cfg.BatchSize*cfg.GradAccum*t.coll.World()) / m.SamplesPerS
					args = append(args, "eta", etaText(float64(cfg.MaxSteps-t.step)*perStep))
				}
				t.log.Info("step", args...)
			}
		}
		saving := last || (cfg.CheckpointEvery > 0 && t.step%cfg.CheckpointEvery == 0)
		if saving || t.step%t.checkEvery() == 0 {
			if err := t.checkWeights(context.WithoutCancel(ctx)); err != nil {
				return res(), err
			}
		}
		if saving {
			// A signal during the save does not abandon it: the checkpoint is what the
			// user wants on the way out.
			if err := t.save(context.WithoutCancel(ctx)); err != nil {
				return res(), err
			}
		}
	}
	return res(), nil
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }

// dropKey is the dropout key of one micro-step on one rank.
func dropKey(seed int64, step, micro, rank int) uint64 {
	k := mix64(uint64(seed))
	k = mix64(k ^ uint64(step))
	k = mix64(k ^ uint64(micro))
	return mix64(k ^ uint64(rank))
}

// fill splits a micro-batch of B samples of T+1 ids into inputs and targets.
func fill(in, tgt, batch []int32, B, T int) {
	for b := range B {
		s := batch[b*(T+1) : (b+1)*(T+1)]
		copy(in[b*T:(b+1)*T], s[:T])
		copy(tgt[b*T:(b+1)*T], s[1:])
	}
}

// trainStep runs one optimizer step: grad_accum micro-batches forward and backward,
// the reduction of the gradients (all-reduced bucket by bucket during the last
// backward pass, or reduce-scattered under ZeRO-1), the gradient norm and AdamW
// with clipping on the backend (on this rank's shard under ZeRO-1, then the
// weights all-gathered), and one download of the step's loss and norm.
func (t *Trainer) trainStep(ctx context.Context) (Metrics, error) {
	start := time.Now()
	cctx := context.WithoutCancel(ctx) // a signal stops between steps, never inside a collective
	cfg, be, model := t.cfg, t.be, t.model
	B, T, accum, world := cfg.BatchSize, cfg.BlockSize, cfg.GradAccum, t.coll.World()
	step := t.step + 1
	dloss := float32(1 / (float64(B) * float64(T) * float64(accum) * float64(world)) * t.scaler.factor())

	be.Zero(model.gradsAll)
	be.Zero(t.stats) // the loss sum and the norm's partial sums
	var count int
	var run *bucketRun
	for micro := range accum {
		var err error
		if t.batch, err = t.sampler.NextInt32(t.batch[:0]); err != nil {
			return Metrics{}, fmt.Errorf("train: step %d: %w", step, err)
		}
		fill(t.in, t.tgt, t.batch, B, T)
		if micro == accum-1 && t.buckets != nil {
			run = t.startBuckets(cctx)
			model.gradsDone = run.stage
		}
		count += model.Step(t.in, t.tgt, B, T, dloss, dropKey(cfg.Seed, step, micro, t.coll.Rank()))
		model.gradsDone = nil
	}
	if err := t.reduceGrads(cctx, run); err != nil {
		return Metrics{}, fmt.Errorf("train: step %d: reduce the gradients: %w", step, err)
	}
	if err := t.gradNorm(cctx); err != nil {
		return Metrics{}, fmt.Errorf("train: step %d: gather the gradient norm: %w", step, err)
	}
	lr := cfg.LRAt(step - 1)
	lo, hi := t.flat.lo, t.flat.hi
	opt := kernels.AdamW{LR: float32(lr), Beta1: float32(cfg.Beta1), Beta2: float32(cfg.Beta2), Eps: AdamEps,
		WeightDecay: float32(cfg.WeightDecay), Step: step - t.skipped, DecayLen: min(max(model.DecayLen-lo, 0), hi-lo),
		GradScale: float32(1 / t.scaler.factor()), MaxNorm: cfg.GradClip}
	// AdamW over this rank's slice [lo, hi), writing the compute copy of it; it
	// skips the update when the gradient norm is not finite.
	var work kernels.Tensor
	if !model.workAll.Same(model.paramsAll) {
		work = model.workAll.Slice(lo, hi)
	}
	be.AdamW(model.paramsAll.Slice(lo, hi), model.gradsAll.Slice(lo, hi), t.m, t.v, work, t.stats.Slice(1, t.stats.Len()), opt)
	if t.zero() {
		if err := t.gatherWeights(cctx); err != nil {
			return Metrics{}, fmt.Errorf("train: step %d: gather the updated weights: %w", step, err)
		}
	}
	// The one download of the step: the loss sum and the norm's partial sums.
	stats := make([]float64, t.stats.Len())
	be.Download(kernels.Float64Bytes(stats), t.stats)
	loss, err := t.globalMean(cctx, stats[0], count)
	if err != nil {
		return Metrics{}, fmt.Errorf("train: step %d: gather the loss: %w", step, err)
	}
	var normSq float64
	for _, p := range stats[1:] {
		normSq += p
	}
	norm := math.Sqrt(normSq) / t.scaler.factor()
	finite := !math.IsNaN(norm) && !math.IsInf(norm, 0)
	if math.IsNaN(loss) || math.IsInf(loss, 0) || (!finite && !t.scaler.on()) {
		what := fmt.Sprintf("the weights are those after step %d (AdamW skipped this one)", t.step)
		if finite {
			what = fmt.Sprintf("the weights include this step's update (%s)", t.newestCheckpoint())
		}
		return Metrics{}, fmt.Errorf("train: step %d diverged: loss %g, gradient norm %g; %s\n---> HINT: %s", step, loss, norm, what, t.divergeHint())
	}
	if t.scaler.on() {
		old := t.scaler.scale
		if err := t.scaler.update(finite); err != nil {
			return Metrics{}, fmt.Errorf("train: step %d: %w", step, err)
		}
		if !finite {
			// Not an update: AdamW's bias correction does not count it (as PyTorch's
			// GradScaler, which skips optimizer.step()); the learning rate's schedule,
			// by step, does (as nanoGPT's loop with a GradScaler).
			t.skipped++
			if t.coll.Rank() == 0 {
				t.log.Warn("float16 overflow in the gradients: step skipped", "step", step, "loss_scale", old, "new_loss_scale", t.scaler.scale)
			}
		}
	}
	t.step = step
	t.lastLoss = loss
	m := Metrics{Step: step, Loss: loss, LR: lr, GradNorm: norm}
	t.throughput(&m, B*accum*world, T, time.Since(start).Seconds())
	m.MemoryMetrics = t.memoryMetrics()
	if t.scaler.on() {
		m.LossScale = t.scaler.scale
		if !finite {
			m.GradNorm, m.Skipped = 0, true
		}
	}
	return m, nil
}

// guardedStep is trainStep with a device running out of memory mid-step (a
// backend's scratch) turned into the same one-line error as at the start.
func (t *Trainer) guardedStep(ctx context.Context) (m Metrics, err error) {
	defer func() {
		if r := recover(); r != nil {
			oom, ok := r.(*kernels.OutOfMemoryError)
			if !ok {
				panic(r)
			}
			err = t.memoryError(oom)
		}
	}()
	return t.trainStep(ctx)
}

// reduceGrads sums the ranks' gradients: the buckets already under way (run:
// all-reduces, or under ZeRO-1 reduces to the shards' ranks), or one
// all-reduce, or ZeRO-1's reduce-scatter; in place on a device backend with
// tensor collectives (NCCL), else on host copies.
func (t *Trainer) reduceGrads(ctx context.Context, run *bucketRun) error {
	if t.coll.World() == 1 {
		return nil
	}
	if run != nil {
		err := run.wait()
		t.commWait += run.waited
		return err
	}
	if sc, ok := t.streamCollectives(); ok && t.zero() {
		// On the communication stream too (bucket_mb 0: nothing overlaps it).
		if err := sc.StartReduceScatterSumTensor(ctx, t.model.gradsAll); err != nil {
			return err
		}
		return sc.FinishCollectives(ctx)
	}
	if t.zero() {
		return t.onTensor(ctx, reduceScatterSum, t.model.gradsAll)
	}
	return t.onTensor(ctx, allReduceSum, t.model.Grads)
}

// globalMean is the mean per-token loss over every rank's tokens: the ranks' sums
// and counts are gathered exactly (as float64 bits) and added in rank order, so
// the loss is the global batch's mean whatever the world size and grad_accum.
func (t *Trainer) globalMean(ctx context.Context, sum float64, count int) (float64, error) {
	all, err := t.gather(ctx, sum, float64(count))
	if err != nil {
		return 0, err
	}
	var s, c float64
	for r := range t.coll.World() {
		s += all[2*r]
		c += all[2*r+1]
	}
	return s / c, nil
}

// checkEvery returns how often the weights' checksums are compared.
func (t *Trainer) checkEvery() int {
	if t.checkEveryN > 0 {
		return t.checkEveryN
	}
	return checkEvery
}

// Evaluate returns the mean loss over the first eval_steps x batch_size x world
// samples of the valid split (no dropout), the same samples every time.
func (t *Trainer) Evaluate(ctx context.Context) (float64, error) {
	if t.data.Valid == nil {
		return math.NaN(), errors.New("train: no valid split to evaluate on")
	}
	cfg := t.cfg
	B, T := cfg.BatchSize, cfg.BlockSize
	s := &loader.Sampler{Samples: t.data.Valid, Rank: t.coll.Rank(), World: t.coll.World(), Micro: B, GradAccum: 1}
	var count int
	t.model.ResetLoss()
	for range cfg.EvalSteps {
		var err error
		if t.batch, err = s.NextInt32(t.batch[:0]); err != nil {
			return 0, fmt.Errorf("train: evaluate: %w", err)
		}
		fill(t.in, t.tgt, t.batch, B, T)
		count += t.model.Forward(t.in, t.tgt, B, T)
	}
	sum := t.model.LossSum()
	v, err := t.globalMean(context.WithoutCancel(ctx), sum, count)
	if err != nil {
		return 0, fmt.Errorf("train: evaluate: gather the loss: %w", err)
	}
	return v, nil
}

// newestCheckpoint says which checkpoint a run that stops now continues from.
// divergeHint is the next step after a divergence: resume from a checkpoint where
// there is one, else run again from the start (resume auto then finds none).
func (t *Trainer) divergeHint() string {
	if t.saved < 1 {
		return "lower lr or raise warmup_steps and run again: no checkpoint was saved, so the run starts afresh"
	}
	// Rank 0's lastCkpt is the checkpoint of saved, also the one resumed from,
	// which may be another run's (resume PATH), not under this run's out.
	newest := t.lastCkpt
	if newest == "" { // (a rank other than 0)
		newest = filepath.Join(t.ckptRoot, checkpoint.DirName(int64(t.saved)))
	}
	return fmt.Sprintf("lower lr or raise warmup_steps, and resume from a checkpoint before the divergence (the newest: %s)", newest)
}

func (t *Trainer) newestCheckpoint() string {
	if t.saved < 1 {
		return "no checkpoint yet"
	}
	return fmt.Sprintf("the newest checkpoint is of step %d", t.saved)
}
