package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"sync/atomic"
	"time"

	"gptkit/internal/cli"
	"gptkit/internal/progress"
	"gptkit/kernels"
	"gptkit/kernels/cuda"
	"gptkit/shards"
	"gptkit/train"
	"gptkit/train/checkpoint"
	"gptkit/train/dist"
)

// cfgFlag is one configuration key on the command line. Parsing only records the
// value: the keys apply over the config file's after both are read.
type cfgFlag struct {
	field train.Field
	value string
	set   bool
}

func (f *cfgFlag) String() string {
	if f == nil {
		return ""
	}
	return f.value
}

func (f *cfgFlag) Set(v string) error {
	probe := train.Default()
	if err := probe.Set(f.field.Key, v); err != nil {
		return errors.New(trimKey(err.Error(), f.field.Key))
	}
	f.value, f.set = v, true
	return nil
}

// IsBoolFlag lets a boolean key stand alone (--bias) as well as take a value
// (--bias=false).
func (f *cfgFlag) IsBoolFlag() bool { return f.field.Kind == reflect.Bool }

// Get makes -h quote a string key's default, as for a string flag.
func (f *cfgFlag) Get() any {
	if f.field.Kind == reflect.String {
		return f.value
	}
	return nil
}

// trimKey drops the "key: " that Config.Set starts its errors with (the flag
// package names the flag itself).
func trimKey(msg, key string) string {
	if len(msg) > len(key)+2 && msg[:len(key)+2] == key+": " {
		return msg[len(key)+2:]
	}
	return msg
}

const trainSummary = "Trains a GPT (nanoGPT's GPT-2: token and position embeddings, pre-LayerNorm blocks of\n" +
	"causal self-attention and a 4x GELU MLP, tied output layer) on the dataset in DATA with\n" +
	"nanoGPT's recipe (AdamW, warmup and cosine decay, gradient clipping, accumulation).\n\n" +
	"The configuration is the defaults (nanoGPT's train.py: GPT-2 124M), then --config FILE (a\n" +
	"YAML file of the keys below in snake_case, e.g. n_layer: 4; see configs/), then the flags.\n\n" +
	"OUT receives config.yaml (the resolved configuration), metrics.jsonl (one JSON object per\n" +
	"step: step, loss, lr, grad_norm, tokens_per_s, samples_per_s, tflops per device, mfu, and\n" +
	"val_loss on evaluation steps), TensorBoard event files (events.out.tfevents.*, or in\n" +
	"--tensorboard-dir; tensorboard --logdir OUT) and\n" +
	"checkpoints/ (weights as safetensors, AdamW state, trainer state; the newest\n" +
	"--keep-checkpoints kept). --resume auto continues from the newest complete checkpoint, and\n" +
	"the resumed run's metrics and weights are bit-identical to an uninterrupted run's. SIGINT,\n" +
	"SIGTERM, SIGHUP or SIGQUIT saves a checkpoint and exits (status 1); a second Ctrl-C exits\n" +
	"at once (status 130; the newest complete checkpoint stays). On a terminal a progress line shows\n" +
	"the steps; otherwise stderr gets a log line every --log-every steps. When done, stdout gets\n" +
	"one JSON line: step, loss, val_loss, checkpoint, params, seconds.\n\n" +
	"Data-parallel: --nproc-per-node N starts N ranks on this node (torchrun's flags and\n" +
	"environment; --nnodes, --node-rank, --master-addr, --master-port for several nodes, with\n" +
	"the same GPTKIT_JOB_TOKEN on each), --hostfile FILE starts every node over ssh, and under\n" +
	"srun each task is a rank. The global batch is batch_size x grad_accum x ranks; the loss is\n" +
	"its mean. Each rank's stderr lines start with [rank R]; a failed or hung rank stops them\n" +
	"all, named, as does one that has not reached a collective within --collective-timeout;\n" +
	"--max-restarts K restarts them from the newest checkpoint. On GPUs (--device cuda) each\n" +
	"rank takes its own GPU (its local rank: LOCAL_RANK, SLURM_LOCALID or\n" +
	"OMPI_COMM_WORLD_LOCAL_RANK, among the GPUs CUDA_VISIBLE_DEVICES leaves) and the\n" +
	"collectives go through NCCL (docs/gpu.md)."

// runTraining implements `train [flags]`, the trainer.
func runTraining(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c := trainCommand()
	configFile := c.Flags.String("config", "", "the YAML config `FILE` (e.g. configs/shakespeare-char.yaml)")
	var df distFlags
	df.register(c.Flags)
	var flags []*cfgFlag
	def := train.Default()
	for _, f := range train.Fields() {
		cf := &cfgFlag{field: f, value: def.Get(f.Key)}
		c.Flags.Var(cf, f.Flag(), f.Usage())
		flags = append(flags, cf)
	}
	usage := func(msg string) int {
		fmt.Fprintf(stderr, "train: %s (run 'train -h' for usage)\n", msg)
		return cli.ExitUsage
	}
	switch err := c.Flags.Parse(args); {
	case errors.Is(err, flag.ErrHelp):
		printUsage(stderr)
		fmt.Fprintln(stderr)
		c.PrintHelp(stderr)
		return cli.ExitOK
	case err != nil:
		return usage(err.Error())
	case c.Flags.NArg() > 0:
		msg := cli.StrayArgument(c.Flags, args)
		if msg == fmt.Sprintf("unexpected argument %q", c.Flags.Arg(0)) {
			msg += " (the trainer takes flags only)"
		}
		return usage(msg)
	}

	cfg := train.Default()
	fromFile := map[string]bool{}
	if *configFile != "" {
		data, err := os.ReadFile(*configFile)
		if err != nil {
			return usage(fmt.Sprintf("--config: %v", err))
		}
		keys, err := cfg.LoadYAML(data, *configFile)
		if err != nil {
			return usage(trimPrefix(err.Error(), "train: "))
		}
		for _, k := range keys {
			fromFile[k] = true
		}
	}
	explicit := map[string]bool{}
	for _, f := range flags {
		if f.set {
			if err := cfg.Set(f.field.Key, f.value); err != nil {
				return usage(err.Error())
			}
			explicit[f.field.Key] = true
		}
		explicit[f.field.Key] = explicit[f.field.Key] || fromFile[f.field.Key]
	}
	if cfg.InitFrom != "" {
		if err := shapeFromInit(&cfg, explicit); err != nil {
			return startFail(ctx, stderr, &cfg, err)
		}
		defer dropInit(&cfg) // where no run took it
	}
	if err := cfg.Validate(); err != nil {
		return usage(trimPrefix(err.Error(), "train: "))
	}
	set := map[string]bool{}
	c.Flags.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if err := df.validate(set); err != nil {
		return usage(err.Error())
	}
	switch {
	case df.hostfile != "":
		dropInit(&cfg) // the ranks open init_from themselves
		return runHostfile(ctx, &df, c.Flags, args, stdout, stderr)
	case df.nprocPerNode > 0:
		dropInit(&cfg)
		return runLauncher(ctx, &df, &cfg, c.Flags, args, stdin, stdout, stderr)
	}

	// One rank: this process (alone, or one of a job's ranks).
	rankLog := slog.New(slog.NewTextHandler(stderr, nil))
	var trainer atomic.Pointer[train.Trainer] // (for the first Ctrl-C's word on what happens)
	defer exitOnSecondInterrupt(ctx, stderr, func() bool { t := trainer.Load(); return t != nil && t.Stepping() })()
	place, err := rankPlace(&df, set)
	if err != nil {
		return startFail(ctx, stderr, &cfg, err)
	}
	if place.World == 1 {
		// Not a rank of a job: one whose launcher died (torchrun, which sets no
		// parent-death signal, SIGKILLed) should not train on unwatched.
		surviveBrokenPipe()
	}
	be, err := openRankBackend(cfg.Device, rankThreads(cfg.Threads, os.Getenv), place, rankLog)
	if err != nil {
		if _, ok := errors.AsType[*deviceNameError](err); ok {
			return usage(err.Error())
		}
		return startFail(ctx, stderr, &cfg, err) // a device that cannot be used is a failure, not a usage error
	}
	comm, err := joinJob(ctx, place, &df, rankLog)
	if err != nil {
		return startFail(ctx, stderr, &cfg, err)
	}
	var coll train.Collectives = train.Single{}
	var nccl *cuda.NCCL
	if comm != nil {
		coll = withFault(comm, place, be)
		nccl, err = deviceCollectives(ctx, be, comm, df.gpuOptions(), rankLog)
		if err != nil {
			if gerr := startGroupFailure(ctx, comm); gerr != nil {
				// Another rank failed the group (rank 0 refusing ranks that share a
				// GPU): its error, not this rank's wait for the plan cut short by
				// the launcher's SIGTERM ("interrupted ... rerun", which fails the
				// same way again).
				comm.Close(err)
				return cli.Fail(stderr, "train", fmt.Errorf("stopped while starting, before the first step (nothing was saved): the group failed: %w", gerr))
			}
			comm.Close(err)
			return startFail(ctx, stderr, &cfg, err)
		}
		if nccl != nil {
			defer nccl.Close()
			coll = withFault(nccl, place, be)
			// When the job fails elsewhere (a rank died, the store named a stuck
			// one), the communicator is aborted: a collective in flight returns.
			done := make(chan struct{})
			defer close(done)
			go func() {
				select {
				case <-comm.Aborted():
					nccl.Abort(comm.Err())
				case <-done:
				}
			}()
		}
	}
	cfg.Restarts = place.RestartCount
	cfg.CheckInitTokenizer = func(dir string, data shards.TokenizerInfo) error { return checkInitTokenizer(ctx, dir, data) }
	var groupFailure func() error
	if comm != nil {
		groupFailure = func() error { return groupFailed(comm) }
	}
	err = trainRank(ctx, cfg, be, coll, &trainer, groupFailure, stdout, stderr)
	cfg.InitOpened = nil // the run's (train.NewTrainer closed it)
	if comm == nil {
		if t := trainer.Load(); err != nil && (t == nil || !t.Stepping()) {
			return startFail(ctx, stderr, &cfg, err)
		}
		if err != nil {
			return trainFail(ctx, stderr, err)
		}
		return cli.ExitOK
	}
	if cerr := comm.Err(); cerr != nil && err != nil {
		// The group failed: say why (the rank at fault), even if a signal came too.
		comm.Close(err)
		return cli.Fail(stderr, "train", cerr)
	}
	leave := err
	if ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, train.ErrPeerInterrupted) {
		leave = nil // every rank stopped after the same step: a clean leave
	}
	if leave != nil && nccl != nil {
		// This rank failed on its own: the others may be inside a collective it
		// will never join. Abort the communicator (as PyTorch tears down on an
		// error) rather than let the deferred ncclCommDestroy flush and wait.
		nccl.Abort(leave)
	}
	comm.Close(leave)
	if err != nil && leave == nil {
		// Stopped on an interrupt, this rank's or another's: the launchers of every
		// node tell it from a failure by the status (no restart).
		trainFail(ctx, stderr, err)
		return dist.ExitInterrupted
	}
	if err != nil {
		// This rank's own failure, which the store now has and names: its line,
		// whatever signal comes while it exits (a launcher's SIGTERM to the other
		// ranks, a Ctrl-C), never a plain "interrupted" that would contradict it.
		return cli.Fail(stderr, "train", err)
	}
	return cli.ExitOK
}

// groupFailed is the failure of the job's group the store reported to comm (a rank
// that failed, died or hung elsewhere, named in it), waiting up to a second for the
// store's word, which may come after this rank's own collective failed; nil when
// none came.
func groupFailed(comm *dist.Comm) error {
	select {
	case <-comm.Aborted():
		return comm.Err()
	case <-time.After(time.Second):
		return nil
	}
}

// startGroupFailure is the failure of the job's group that ended this rank's start,
// if any: the store's word (comm.Err), waited for (groupFailed) when a signal came,
// as the launcher's SIGTERM to the other ranks of a failed group may come first.
func startGroupFailure(ctx context.Context, comm *dist.Comm) error {
	if err := comm.Err(); err != nil || ctx.Err() == nil {
		return err
	}
	return groupFailed(comm)
}

// trainRank trains on one rank (rank 0 prints the summary); cur holds the trainer
// once made. groupFailure (nil for a run of one) is the failure of the job's group,
// if any (groupFailed).
func trainRank(ctx context.Context, cfg train.Config, be kernels.Backend, coll train.Collectives, cur *atomic.Pointer[train.Trainer], groupFailure func() error, stdout, stderr io.Writer) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = deviceError(r)
		}
	}()
	var live *liveLine
	var logOut io.Writer = stderr
	if progress.IsTerminal(stderr) && coll.Rank() == 0 {
		live = newLiveLine(stderr, cfg.MaxSteps)
		logOut = live
	}
	log := slog.New(slog.NewTextHandler(logOut, nil))
	t, err := train.NewTrainer(ctx, cfg, be, coll, log)
	if err != nil {
		return err
	}
	defer t.Close()
	cur.Store(t)
	if live != nil {
		t.OnStep = live.step
	}
	res, err := t.Train(ctx)
	if live != nil {
		live.done()
	}
	if err != nil {
		if res != nil && res.Checkpoint != "" && (ctx.Err() != nil || errors.Is(err, context.Canceled)) && !errors.Is(err, train.ErrCheckpointFailed) {
			// A stop signal came. Not a plain interrupt where the group failed
			// (the launcher stops the other ranks of a failed one with a SIGTERM):
			// the ranks did not stop together (InterruptedError), and the
			// checkpoint is the newest one saved, not one of this step.
			var failed error
			if _, ok := errors.AsType[*train.InterruptedError](err); !ok && groupFailure != nil {
				failed = groupFailure()
			}
			if failed != nil {
				log.Warn("stopped by the launcher: the group failed", "reason", failed, "step", res.Step, "newest_checkpoint", res.Checkpoint)
			} else {
				log.Info("interrupted", "step", res.Step, "checkpoint", res.Checkpoint)
			}
		}
		return err
	}
	if err := t.Close(); err != nil {
		return err
	}
	if coll.Rank() != 0 {
		return nil
	}
	summary := struct {
		Step       int      `json:"step"`
		Loss       *float64 `json:"loss"`
		ValLoss    *float64 `json:"val_loss"`
		Checkpoint string   `json:"checkpoint"`
		Resumed    string   `json:"resumed_from,omitempty"`
		Params     int      `json:"params"`
		Seconds    float64  `json:"seconds"`
	}{Step: res.Step, Loss: finite(res.Loss), ValLoss: finite(res.ValLoss), Checkpoint: res.Checkpoint,
		Resumed: res.ResumedFrom, Params: res.Params, Seconds: math.Round(res.TrainedSeconds*100) / 100}
	line, _ := json.Marshal(summary)
	fmt.Fprintf(stdout, "%s\n", line)
	return nil
}

func finite(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

func trimPrefix(s, p string) string {
	if len(s) >= len(p) && s[:len(p)] == p {
		return s[len(p):]
	}
	return s
}

// trainFail prints err as the one line a failed `train` leaves on stderr.
func trainFail(ctx context.Context, stderr io.Writer, err error) int {
	if errors.Is(err, train.ErrCheckpointFailed) {
		return cli.Fail(stderr, "train", err) // not just "interrupted": work was lost
	}
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, interruptedLineOf(err))
		return cli.ExitFailure
	}
	return cli.Fail(stderr, "train", err)
}

// startFail is trainFail for a run whose training had not begun when err ended it
// (or Train's own error): stopped by a signal, its last line says that nothing was
// saved and where a rerun starts, which cfg.Resume decides.
func startFail(ctx context.Context, stderr io.Writer, cfg *train.Config, err error) int {
	if _, ok := errors.AsType[*train.InterruptedError](err); ok || ctx.Err() == nil || errors.Is(err, train.ErrCheckpointFailed) {
		return trainFail(ctx, stderr, err)
	}
	from := "start from the beginning"
	switch cfg.Resume {
	case "auto":
		root := filepath.Join(cfg.Out, train.CheckpointsDir)
		if dir, _, err := checkpoint.Latest(context.WithoutCancel(ctx), root); err == nil {
			from = "continue from the newest checkpoint, " + dir
		}
	case "none":
	default:
		from = "start it again, as resume " + cfg.Resume + " says"
	}
	fmt.Fprintf(stderr, "train: interrupted while starting, before the first step: nothing was saved (rerun the same command to %s)\n", from)
	return cli.ExitFailure
}

// interruptedLine ends a run stopped by a signal after a step: what happened and
// the next step.
const interruptedLine = "train: interrupted (rerun the same command to continue from the newest checkpoint; a --resume none command with --resume auto)"

// interruptedLineOf is the last line of a run stopped by a signal that ended it with
// err: interruptedLine after a step (Train saved a checkpoint of it), else that
// nothing was saved and where a rerun starts.
func interruptedLineOf(err error) string {
	ie, ok := errors.AsType[*train.InterruptedError](err)
	switch {
	case ok && ie.Taken > 0:
		return interruptedLine
	case ok && ie.Checkpoint != "":
		return "train: interrupted before the first step: nothing was saved (no step was taken; rerun the same command to continue from " + ie.Checkpoint + ", the checkpoint it resumed from)"
	case ok && ie.Step == 0:
		return "train: interrupted before the first step: nothing was saved (no step was taken; rerun the same command to start from the beginning)"
	case ok:
		return fmt.Sprintf("train: interrupted before the first step: nothing was saved (no step was taken; rerun the same command to continue from the checkpoint of step %d)", ie.Step)
	}
	// Stopped while starting (opening the data, building the model...): Train
	// had not begun.
	return "train: interrupted while starting, before the first step: nothing was saved (rerun the same command to start it again)"
}

// launcherInterruptedLine is the last line of a launcher whose ranks a signal
// stopped. The launcher does not know whether a rank took a step, so it looks for
// what they left: node 0's launcher (where a local out is) names the newest
// checkpoint under cfg.Out, or says that there is none and a rerun starts over
// (from the checkpoint --resume PATH names, where given);
// another node's, or one whose look failed, gives interruptedLine.
func launcherInterruptedLine(ctx context.Context, cfg *train.Config, nodeRank int) string {
	if nodeRank != 0 {
		return interruptedLine
	}
	root := filepath.Join(cfg.Out, train.CheckpointsDir)
	dir, _, err := checkpoint.Latest(context.WithoutCancel(ctx), root)
	switch {
	case err == nil:
		return "train: interrupted (rerun the same command to continue from the newest checkpoint, " + dir + "; a --resume none command with --resume auto)"
	case errors.Is(err, checkpoint.ErrNone) && cfg.Resume != "auto" && cfg.Resume != "none":
		// --resume PATH: the rerun starts from PATH again (as startFail says).
		return "train: interrupted: nothing was saved (no checkpoint in " + root + "; rerun the same command to start again from " + cfg.Resume + ", as --resume says)"
	case errors.Is(err, checkpoint.ErrNone):
		return "train: interrupted: nothing was saved (no checkpoint in " + root + "; rerun the same command to start from the beginning)"
	}
	return interruptedLine
}

// dropInit closes init_from's directory that shapeFromInit opened, where no run
// took it (a usage error, a launcher whose ranks open it themselves).
func dropInit(cfg *train.Config) {
	if cfg.InitOpened != nil {
		cfg.InitOpened.Close()
		cfg.InitOpened = nil
	}
}

// trainCommand is the trainer's command line (its usage line reads
// "train --data DATA ...").
func trainCommand() *cli.Command {
	return cli.NewCommand("train", "--data", "DATA [--config FILE] [--out DIR] [flags]", trainSummary)
}

// shapeFromInit fills the model-shape keys that neither the config file nor a flag
// set from the --init-from directory (nanoGPT's init_from='gpt2' takes the shape
// from the weights too). A block_size that is set may be smaller than the weights'
// (their position embeddings are cropped). The directory stays open for the run
// (cfg.InitOpened), which then does not read its config.json and model.safetensors'
// header again; dropInit closes it where no run takes it.
func shapeFromInit(cfg *train.Config, explicit map[string]bool) error {
	d, err := train.OpenInit(cfg.InitFrom)
	if err != nil {
		return err
	}
	cfg.InitOpened = d
	mc := train.InitShapeOf(d)
	fill := func(key string, v string) {
		if !explicit[key] {
			cfg.Set(key, v)
		}
	}
	fill("n_layer", strconv.Itoa(mc.NLayer))
	fill("n_head", strconv.Itoa(mc.NHead))
	fill("n_embd", strconv.Itoa(mc.NEmbd))
	fill("block_size", strconv.Itoa(mc.BlockSize))
	fill("bias", strconv.FormatBool(mc.Bias))
	fill("vocab_size", strconv.Itoa(mc.VocabSize))
	return nil
}
