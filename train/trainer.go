package train

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"time"

	"gptkit/kernels"
	"gptkit/loader"
	"gptkit/shards"
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
	// The AdamW moments of this rank's slice flat.lo..flat.hi of the layout (all of
	// it, padded, without ZeRO-1).
	m, v    []float32
	flat    flat
	buckets *bucketPlan // nil: one all-reduce after the backward pass

	commWait    time.Duration // the steps' time waiting for gradient buckets (benchmarks)
	checkEveryN int           // tests: compare the weights' checksums this often
	scratchBufs map[int][]float32
	// alloc gives the buffers the collectives work on (the weights, the
	// gradients, scratch): the backend's memory, or the collectives' shared memory
	// (freed by Close).
	alloc  func(n int) []float32
	shared SharedMemory

	data       *loader.Data
	tok        shards.TokenizerInfo
	sampler    *loader.Sampler
	numSamples [3]int64

	step        int    // optimizer steps done
	saved       int    // the step of the newest checkpoint (-1: none)
	resumed     string // the checkpoint this run continued from
	metrics     *metricsFile
	batch       []int32 // one micro-batch of samples, B*(T+1) ids
	in, tgt     []int32
	lastLoss    float64
	lastMetrics *Metrics
	lastVal     float64
	lastCkpt    string
	ckptRoot    string
	startTime   time.Time

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
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	t := &Trainer{cfg: cfg, be: be, coll: Full(coll), log: log, saved: -1, lastLoss: math.NaN(), lastVal: math.NaN(),
		ckptRoot: filepath.Join(cfg.Out, CheckpointsDir)}
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
	var ckpt string
	if rank0 {
		if ckpt, err = t.resumeTarget(ctx); err != nil {
			return nil, err
		}
	}

	// The data: every sample the run's steps consume, and the evaluation's.
	t.numSamples[loader.Train] = int64(cfg.MaxSteps) * int64(B) * int64(cfg.GradAccum) * world
	if cfg.EvalSteps > 0 {
		t.numSamples[loader.Valid] = int64(cfg.EvalSteps) * int64(B) * world
	}
	t.data, err = loader.Open(ctx, loader.Options{Data: cfg.Data, SeqLen: T, Seed: uint32(cfg.Seed), Order: cfg.Order,
		Split: cfg.Split, NumSamples: t.numSamples, CacheDir: cfg.CacheDir, VocabSize: cfg.VocabSize, S3Endpoint: cfg.S3Endpoint,
		S3PathStyle: cfg.S3PathStyle, Logger: log})
	if err != nil {
		if es := (*loader.EmptySplitError)(nil); errors.As(err, &es) && es.Split == loader.Valid {
			return nil, fmt.Errorf("train: open the data: %w\n---> HINT: with no valid split, set eval_steps 0 (--eval-steps 0) to train without evaluation", err)
		}
		return nil, fmt.Errorf("train: open the data: %w", err)
	}
	t.tok = t.data.Tokenizer
	vocab := cfg.VocabSize
	switch {
	case vocab == 0 && t.tok.VocabSize == 0:
		return nil, fmt.Errorf("train: %s does not record its tokenizer (bare GPT-NeoX shards?)\n---> HINT: set vocab_size (--vocab-size)", cfg.Data)
	case vocab == 0:
		vocab = t.tok.VocabSize
	case vocab < t.tok.VocabSize:
		return nil, fmt.Errorf("train: vocab_size %d is smaller than the dataset tokenizer's %d", vocab, t.tok.VocabSize)
	}
	t.sampler = &loader.Sampler{Samples: t.data.Train, Rank: coll.Rank(), World: coll.World(), Micro: B, GradAccum: cfg.GradAccum}

	// The model and the optimizer state, if they fit.
	est := EstimateMemory(cfg, vocab, coll.World())
	if err := CheckMemory(est, be); err != nil {
		return nil, err
	}
	log.Info("memory", "estimate", est.String())
	mc := cfg.Model(vocab)
	_, _, total := mc.Layout()
	t.flat = newFlat(total, coll.World(), coll.Rank(), cfg.Zero == 1 && coll.World() > 1)
	t.alloc, t.shared = collectiveMemory(be, coll)
	if t.model, err = newModel(be, mc, t.flat.padded, t.alloc); err != nil {
		return nil, err
	}
	t.model.Dropout = float32(cfg.Dropout)
	t.model.AllocGrads()
	t.model.Reserve(B, T, true)
	t.m, t.v = be.Alloc(t.flat.hi-t.flat.lo), be.Alloc(t.flat.hi-t.flat.lo)
	t.batch = make([]int32, 0, B*(T+1))
	t.in, t.tgt = make([]int32, B*T), make([]int32, B*T)
	if coll.World() > 1 && cfg.Zero == 0 && cfg.BucketMB > 0 {
		t.buckets = planBuckets(t.model, cfg.BucketMB)
	}

	mFull, vFull := t.fullMoments()
	switch {
	case ckpt != "":
		if err := t.restore(ctx, ckpt, mFull, vFull); err != nil {
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
	if coll.World() > 1 {
		if err := t.shareStart(ctx, ckpt != "", mFull, vFull); err != nil {
			return nil, err
		}
	}
	t.keepShard(mFull, vFull)

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
		if err := t.openTensorBoard(); err != nil {
			return nil, err
		}
		if p, ok := be.(peakFLOPSer); ok {
			t.peak = p.PeakFLOPS()
		}
	}
	log.Info("model", "params", mc.NumParams(), "shape", mc.String(), "backend", be.Name(),
		"tokens_per_step", B*T*cfg.GradAccum*coll.World(), "train_samples", t.data.Train.Len())
	if coll.World() > 1 {
		log.Info("data parallel", "rank", coll.Rank(), "world", coll.World(), "zero", cfg.Zero,
			"adamw_floats_per_rank", len(t.m), "buckets", t.buckets != nil)
	}
	return t, nil
}

// shareStart makes every rank start from rank 0's state: whether it resumed (and
// from which step and sample), its weights, and its AdamW state when resumed.
func (t *Trainer) shareStart(ctx context.Context, resumed bool, m, v []float32) error {
	ctx = context.WithoutCancel(ctx)
	hdr := t.scratch(6)
	clear(hdr)
	if t.coll.Rank() == 0 {
		var flag float64
		if resumed {
			flag = 1
		}
		putBits(hdr[0:], flag)
		putBits(hdr[2:], float64(t.step))
		putBits(hdr[4:], float64(t.sampler.Cursor.Consumed))
	}
	if err := t.coll.Broadcast(ctx, hdr, 0); err != nil {
		return fmt.Errorf("train: broadcast the starting point: %w", err)
	}
	resumed = getBits(hdr[0:]) == 1
	if t.coll.Rank() != 0 && resumed {
		t.step, t.saved = int(getBits(hdr[2:])), int(getBits(hdr[2:]))
		t.sampler.Cursor.Consumed = int64(getBits(hdr[4:]))
		if err := t.sampler.Validate(); err != nil {
			return fmt.Errorf("train: cannot continue rank 0's checkpoint: %w", err)
		}
	}
	bufs := [][]float32{t.model.Params}
	if resumed {
		bufs = append(bufs, m[:t.flat.n], v[:t.flat.n])
	}
	for _, buf := range bufs {
		if err := t.coll.Broadcast(ctx, buf, 0); err != nil {
			return fmt.Errorf("train: broadcast the initial state: %w", err)
		}
	}
	return nil
}

// ConfigName is the resolved configuration's file in the run directory.
const ConfigName = "config.yaml"

// CheckpointsDir is the checkpoints' directory in the run directory.
const CheckpointsDir = "checkpoints"

// Model returns the trainer's model.
func (t *Trainer) Model() *Model { return t.model }

// Step returns the optimizer steps done.
func (t *Trainer) Step() int { return t.step }

// Close releases the data, the metrics file and the shared buffers (the model is
// unusable afterwards).
func (t *Trainer) Close() error {
	if t.shared != nil {
		if t.model != nil {
			t.shared.FreeShared(t.model.Params)
			t.shared.FreeShared(t.model.Grads)
			t.model.Params, t.model.Grads = nil, nil
		}
		for _, b := range t.scratchBufs {
			t.shared.FreeShared(b)
		}
		t.scratchBufs, t.shared = nil, nil
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
	return errors.Join(errs...)
}

// Train runs steps until max_steps, evaluating and checkpointing as configured. When
// ctx is cancelled (SIGINT, SIGTERM) it finishes the step under way, saves a
// checkpoint and returns an error wrapping ctx's.
func (t *Trainer) Train(ctx context.Context) (*Result, error) {
	cfg := t.cfg
	t.startTime = time.Now()
	res := func() *Result {
		return &Result{Step: t.step, Loss: t.lastLoss, ValLoss: t.lastVal, Checkpoint: t.lastCkpt, ResumedFrom: t.resumed,
			Params: t.model.Config.NumParams(), TrainedSeconds: time.Since(t.startTime).Seconds()}
	}
	if t.step >= cfg.MaxSteps {
		t.log.Info("already trained", "step", t.step, "max_steps", cfg.MaxSteps)
		return res(), nil
	}
	for t.step < cfg.MaxSteps {
		stop, err := t.agreeStop(ctx)
		if err != nil {
			return res(), err
		}
		if stop {
			if t.saved != t.step && t.step > 0 {
				if err := t.save(context.WithoutCancel(ctx)); err != nil {
					return res(), fmt.Errorf("train: interrupted at step %d, and the checkpoint failed: %w", t.step, err)
				}
			}
			cause := context.Cause(ctx)
			if cause == nil {
				cause = ErrPeerInterrupted
			}
			return res(), fmt.Errorf("train: interrupted after step %d (checkpoint %s): %w", t.step, t.lastCkpt, cause)
		}
		m, err := t.trainStep(ctx)
		if err != nil {
			return res(), err
		}
		last := t.step == cfg.MaxSteps
		if cfg.EvalSteps > 0 && t.data.Valid != nil && (last || (cfg.EvalEvery > 0 && t.step%cfg.EvalEvery == 0)) {
			v, err := t.Evaluate(ctx)
			if err != nil {
				return res(), err
			}
			m.ValLoss = &v
			t.lastVal = v
		}
		t.lastMetrics = &m
		if t.coll.Rank() == 0 {
			if err := t.metrics.write(m); err != nil {
				return res(), err
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
				if m.ValLoss != nil {
					args = append(args, "val_loss", round4(*m.ValLoss))
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
// backward pass, or reduce-scattered under ZeRO-1), clipping, AdamW (on this rank's
// shard under ZeRO-1, then the weights all-gathered).
func (t *Trainer) trainStep(ctx context.Context) (Metrics, error) {
	start := time.Now()
	cctx := context.WithoutCancel(ctx) // a signal stops between steps, never inside a collective
	cfg, be, model := t.cfg, t.be, t.model
	B, T, accum, world := cfg.BatchSize, cfg.BlockSize, cfg.GradAccum, t.coll.World()
	step := t.step + 1
	dloss := float32(1 / (float64(B) * float64(T) * float64(accum) * float64(world)))

	be.Zero(t.gradsAll())
	var lossSum float64
	var count int
	var run *bucketRun
	for micro := range accum {
		var err error
		if t.batch, err = t.sampler.NextInt32(t.batch[:0]); err != nil {
			return Metrics{}, fmt.Errorf("train: step %d: %w", step, err)
		}
		fill(t.in, t.tgt, t.batch, B, T)
		ls, n := model.Forward(t.in, t.tgt, B, T, true, dropKey(cfg.Seed, step, micro, t.coll.Rank()))
		lossSum += ls
		count += n
		if micro == accum-1 && t.buckets != nil {
			run = t.startBuckets(cctx)
			model.gradsDone = run.stage
		}
		model.Backward(dloss)
		model.gradsDone = nil
	}
	be.Sync() // the collectives may read the gradient from the host
	var err error
	switch {
	case run != nil:
		err = run.wait()
		t.commWait += run.waited
	case t.zero():
		err = t.coll.ReduceScatterSum(cctx, t.gradsAll())
	default:
		err = t.coll.AllReduceSum(cctx, model.Grads)
	}
	if err != nil {
		return Metrics{}, fmt.Errorf("train: step %d: reduce the gradients: %w", step, err)
	}
	loss, err := t.globalMean(cctx, lossSum, count)
	if err != nil {
		return Metrics{}, fmt.Errorf("train: step %d: gather the loss: %w", step, err)
	}
	normSq, err := t.gradNormSq(cctx)
	if err != nil {
		return Metrics{}, fmt.Errorf("train: step %d: gather the gradient norm: %w", step, err)
	}
	norm := math.Sqrt(normSq)
	if math.IsNaN(loss) || math.IsInf(loss, 0) || math.IsNaN(norm) || math.IsInf(norm, 0) {
		return Metrics{}, fmt.Errorf("train: step %d diverged: loss %g, gradient norm %g; the weights are those after step %d (the newest checkpoint is older)\n---> HINT: lower lr or raise warmup_steps, and resume from a checkpoint", step, loss, norm, t.step)
	}
	lo, hi := t.flat.lo, t.flat.hi
	if cfg.GradClip > 0 {
		// torch.nn.utils.clip_grad_norm_: scale by max_norm/(norm+1e-6) when that is < 1.
		if coef := cfg.GradClip / (norm + 1e-6); coef < 1 {
			be.Scale(t.gradsAll()[lo:hi], float32(coef))
		}
	}
	lr := cfg.LRAt(step - 1)
	opt := kernels.AdamW{LR: float32(lr), Beta1: float32(cfg.Beta1), Beta2: float32(cfg.Beta2), Eps: AdamEps,
		WeightDecay: float32(cfg.WeightDecay), Step: step}
	// AdamW over this rank's slice [lo, hi): weight decay on the part in [0, D),
	// none on the part in [D, n); the padding is left alone.
	P, G, D, n := t.paramsAll(), t.gradsAll(), model.DecayLen, t.flat.n
	if a, b := max(lo, 0), min(hi, D); a < b {
		be.AdamW(P[a:b], G[a:b], t.m[a-lo:b-lo], t.v[a-lo:b-lo], opt)
	}
	opt.WeightDecay = 0
	if a, b := max(lo, D), min(hi, n); a < b {
		be.AdamW(P[a:b], G[a:b], t.m[a-lo:b-lo], t.v[a-lo:b-lo], opt)
	}
	be.Sync()
	if t.zero() {
		if err := t.coll.AllGather(cctx, P); err != nil {
			return Metrics{}, fmt.Errorf("train: step %d: gather the updated weights: %w", step, err)
		}
	}
	t.step = step
	t.lastLoss = loss
	m := Metrics{Step: step, Loss: loss, LR: lr, GradNorm: norm}
	t.throughput(&m, B*accum*world, T, time.Since(start).Seconds())
	return m, nil
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
	var sum float64
	var count int
	for range cfg.EvalSteps {
		var err error
		if t.batch, err = s.NextInt32(t.batch[:0]); err != nil {
			return 0, fmt.Errorf("train: evaluate: %w", err)
		}
		fill(t.in, t.tgt, t.batch, B, T)
		ls, n := t.model.Forward(t.in, t.tgt, B, T, false, 0)
		sum += ls
		count += n
	}
	v, err := t.globalMean(context.WithoutCancel(ctx), sum, count)
	if err != nil {
		return 0, fmt.Errorf("train: evaluate: gather the loss: %w", err)
	}
	return v, nil
}
