package train

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"gptkit/internal/redact"
	"gptkit/loader"
	"gptkit/shards"
	"gptkit/train/hfgpt2"
)

// Config is everything a training run is told. Each field has a key: its name in a
// YAML config file (snake_case, e.g. n_layer) and, with dashes, on the command line
// (--n-layer). Default gives nanoGPT's train.py defaults (GPT-2 124M), except
// grad_accum 1 (nanoGPT: 40, for 8 GPUs).
type Config struct {
	// Data and output.
	Data        string `key:"data" help:"the dataset {DIR} (a directory holding manifest.json, s3://bucket/prefix, a bare GPT-NeoX prefix or a blend, as loader.Open takes)"`
	Out         string `key:"out" help:"the run {DIR}: config.yaml, metrics.jsonl and checkpoints/ go there"`
	Order       string `key:"order" help:"the sample {ORDER}: default (shuffled per epoch) or neox (GPT-NeoX's)"`
	Split       string `key:"split" help:"the train,valid,test {WEIGHTS} dividing the documents of an unsplit dataset (GPT-NeoX's split)"`
	CacheDir    string `key:"cache_dir" help:"{DIR} keeping verified local copies of S3 shards and index files that cannot sit beside the data (empty: the default cache)"`
	S3Endpoint  string `key:"s3_endpoint" help:"S3 endpoint {URL} for S3-compatible servers (empty: $AWS_ENDPOINT_URL_S3, else AWS)"`
	S3PathStyle bool   `key:"s3_path_style" help:"address S3 buckets path-style"`

	// Where it runs.
	Device  string `key:"device" help:"the {DEVICE}: auto (cuda when a GPU is usable, else cpu), cpu, ref (the reference kernels: slow, for checking), cuda, or cuda-sim (the CUDA backend on a simulated GPU: very slow, for tests and for checking a change without a GPU)"`
	Threads int    `key:"threads" help:"CPU threads {N} for the kernels (0: one per CPU, shared among the ranks of a node: SLURM_CPUS_PER_TASK under srun)"`
	Dtype   string `key:"dtype" help:"the compute {DTYPE}: float32, bfloat16 (mixed precision: float32 master weights and AdamW, bfloat16 activations) or float16 (the same with GPT-NeoX's dynamic loss scaling); auto: bfloat16 on cuda, float32 on cpu"`
	// Data parallelism (with several ranks: see train/dist and the launcher flags).
	Zero     int     `key:"zero" help:"ZeRO {STAGE}: 0 (every rank holds the whole AdamW state) or 1 (the AdamW state sharded over the ranks: gradients reduce-scattered, each rank updates its shard, weights all-gathered; same results)"`
	BucketMB float64 `key:"bucket_mb" help:"gradient bucket size {MB}: the all-reduce of a bucket starts as soon as the backward pass has finished it, overlapping the rest of the backward (0: one all-reduce after the backward; with zero 1 on GPUs each bucket is reduced to the ranks owning its shards, on the CPU one reduce-scatter after the backward)"`

	// The model.
	NLayer    int     `key:"n_layer" help:"transformer blocks {N}"`
	NHead     int     `key:"n_head" help:"attention heads {N} per block (n_embd must be a multiple)"`
	NEmbd     int     `key:"n_embd" help:"embedding width {C}"`
	BlockSize int     `key:"block_size" help:"context length {T} (tokens per sample)"`
	VocabSize int     `key:"vocab_size" help:"vocabulary size {V}, padded to a multiple of 64 for the embedding (0: the dataset tokenizer's)"`
	Bias      bool    `key:"bias" help:"biases in the Linear and LayerNorm layers"`
	Dropout   float64 `key:"dropout" help:"dropout probability {P} after the embeddings and each residual branch (0: none)"`

	// Optimization.
	BatchSize    int     `key:"batch_size" help:"samples {B} per micro-batch per rank"`
	GradAccum    int     `key:"grad_accum" help:"micro-batches {N} per optimizer step"`
	MaxSteps     int     `key:"max_steps" help:"optimizer steps {N} to train for"`
	LR           float64 `key:"lr" help:"peak learning rate {LR}"`
	MinLR        float64 `key:"min_lr" help:"learning rate {LR} at the end of the cosine decay"`
	WarmupSteps  int     `key:"warmup_steps" help:"steps {N} of linear warmup"`
	LRDecaySteps int     `key:"lr_decay_steps" help:"the cosine decay reaches min_lr after {N} updates (nanoGPT's lr_decay_iters: step N+1 of metrics.jsonl is the first at min_lr)"`
	WeightDecay  float64 `key:"weight_decay" help:"AdamW weight decay {WD} (2-D weights only)"`
	Beta1        float64 `key:"beta1" help:"AdamW {BETA1}"`
	Beta2        float64 `key:"beta2" help:"AdamW {BETA2}"`
	GradClip     float64 `key:"grad_clip" help:"clip gradients to global norm {NORM} (0: no clipping)"`
	Seed         int64   `key:"seed" help:"the {SEED} of the initialization, the sample order and dropout"`

	// Evaluation, checkpoints and logs.
	EvalEvery       int    `key:"eval_every" help:"evaluate on the valid split every {N} steps and after the last (0: only after the last)"`
	EvalSteps       int    `key:"eval_steps" help:"micro-batches {N} per evaluation: the first N x batch_size x ranks valid samples (0: no evaluation)"`
	CheckpointEvery int    `key:"checkpoint_every" help:"save a checkpoint every {N} steps and after the last (0: only after the last)"`
	KeepCheckpoints int    `key:"keep_checkpoints" help:"keep the newest {N} checkpoints (0: all)"`
	LogEvery        int    `key:"log_every" help:"log a step line every {N} steps when stderr is not a terminal"`
	TensorboardDir  string `key:"tensorboard_dir" help:"{DIR} for TensorBoard's event files, events.out.tfevents.* (GPT-NeoX's key; empty: the run directory out)"`
	Resume          string `key:"resume" help:"{MODE}: auto (continue from the newest checkpoint in out, if any), none (start afresh; refuse an out holding checkpoints) or a checkpoint or run PATH"`
	InitFrom        string `key:"init_from" help:"start from the weights in {DIR} (a Hugging Face GPT-2 directory, as export writes)"`

	// Restarts is not a key: how many times the job was restarted before this attempt
	// (the launcher's TORCHELASTIC_RESTART_COUNT, SLURM's SLURM_RESTART_COUNT). A
	// restarted job runs its first command line again, so on a restart a resume other
	// than auto continues from the newest checkpoint in out when out holds one.
	Restarts int
	// CheckInitTokenizer, if set, is not a key either: it checks that the tokenizer
	// files in init_from's directory, where it has any, are the tokenizer of the data
	// (a vocabulary of the same size says nothing of which tokens its ids are). The
	// command sets it; this package does not read tokenizers.
	CheckInitTokenizer func(dir string, data shards.TokenizerInfo) error
	// InitOpened, if set, is not a key either: init_from's directory, opened by the
	// command (OpenInit) to take the model shape from. NewTrainer takes it (closing
	// it, also when it fails) and does not open init_from again: its config.json
	// and model.safetensors' header are read once for the command.
	InitOpened *hfgpt2.Dir
}

// Default returns nanoGPT's train.py defaults (GPT-2 124M on OpenWebText), with
// grad_accum 1, the "out" run directory and resume auto.
func Default() Config {
	return Config{
		Out: "out", Order: "default", Split: "969,30,1", Device: "auto", Dtype: "auto",
		NLayer: 12, NHead: 12, NEmbd: 768, BlockSize: 1024,
		BatchSize: 12, GradAccum: 1, MaxSteps: 600000,
		LR: 6e-4, MinLR: 6e-5, WarmupSteps: 2000, LRDecaySteps: 600000,
		WeightDecay: 0.1, Beta1: 0.9, Beta2: 0.95, GradClip: 1.0, Seed: 1337,
		EvalEvery: 2000, EvalSteps: 200, CheckpointEvery: 2000, KeepCheckpoints: 3, LogEvery: 1,
		Resume: "auto", BucketMB: 25,
	}
}

// Field describes one configuration key.
type Field struct {
	Key string // snake_case, as in YAML
	// Help says what the key does; a placeholder for its value is in braces, e.g.
	// "transformer blocks {N}".
	Help string
	Kind reflect.Kind // String, Bool, Int, Int64 or Float64
	idx  int
}

// Usage is Help for a flag.FlagSet: the placeholder in backquotes, which
// flag.UnquoteUsage turns into the value's name (--n-layer N).
func (f Field) Usage() string {
	return strings.NewReplacer("{", "`", "}", "`").Replace(f.Help)
}

// Text is Help without the placeholder's braces.
func (f Field) Text() string {
	return strings.NewReplacer("{", "", "}", "").Replace(f.Help)
}

// Flag is the key as a command-line flag name (dashes for underscores).
func (f Field) Flag() string { return strings.ReplaceAll(f.Key, "_", "-") }

var fields = func() []Field {
	t := reflect.TypeFor[Config]()
	var out []Field
	for i := range t.NumField() {
		sf := t.Field(i)
		key := sf.Tag.Get("key")
		if key == "" {
			continue
		}
		out = append(out, Field{Key: key, Help: sf.Tag.Get("help"), Kind: sf.Type.Kind(), idx: i})
	}
	return out
}()

// Fields lists the configuration keys in the order config.yaml writes them.
func Fields() []Field { return append([]Field(nil), fields...) }

// LookupField returns the field with key (snake_case or the dashed flag name).
func LookupField(key string) (Field, bool) {
	key = strings.ReplaceAll(key, "-", "_")
	for _, f := range fields {
		if f.Key == key {
			return f, true
		}
	}
	return Field{}, false
}

// Set parses value into the field key. Integers are decimal; floats are Go/YAML
// floats (1e-3, 0.1, 6e-4); booleans are true or false.
func (c *Config) Set(key, value string) error {
	f, ok := LookupField(key)
	if !ok {
		return fmt.Errorf("unknown key %q (known: %s)", key, strings.Join(keyNames(), ", "))
	}
	v := reflect.ValueOf(c).Elem().Field(f.idx)
	switch f.Kind {
	case reflect.String:
		v.SetString(value)
	case reflect.Bool:
		b, err := parseBool(value)
		if err != nil {
			return fmt.Errorf("%s: %q is not a boolean (want true or false)", f.Key, value)
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int64:
		n, err := strconv.ParseInt(strings.ReplaceAll(value, "_", ""), 10, 64)
		if err != nil {
			// Allow integral floats such as 5e3.
			x, ferr := strconv.ParseFloat(value, 64)
			if ferr != nil || x != math.Trunc(x) || math.Abs(x) > 1<<53 {
				return fmt.Errorf("%s: %q is not an integer", f.Key, value)
			}
			n = int64(x)
		}
		if v.OverflowInt(n) {
			return fmt.Errorf("%s: %s is out of range", f.Key, value)
		}
		v.SetInt(n)
	case reflect.Float64:
		x, err := strconv.ParseFloat(value, 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("%s: %q is not a number", f.Key, value)
		}
		v.SetFloat(x)
	}
	return nil
}

// Get formats the field key as Set reads it back.
func (c *Config) Get(key string) string {
	f, ok := LookupField(key)
	if !ok {
		return ""
	}
	v := reflect.ValueOf(c).Elem().Field(f.idx)
	switch f.Kind {
	case reflect.String:
		return v.String()
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case reflect.Int, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10)
	default:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	}
}

func parseBool(s string) (bool, error) {
	switch s {
	case "true", "True", "TRUE":
		return true, nil
	case "false", "False", "FALSE":
		return false, nil
	}
	return false, fmt.Errorf("not a boolean")
}

func keyNames() []string {
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.Key
	}
	return names
}

// Validate checks the values and their combinations; every problem is reported,
// joined in one error.
func (c *Config) Validate() error {
	var bad []string
	add := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	if c.Data == "" {
		add("data: the dataset DIR is required")
	}
	if c.Out == "" {
		add("out: the run DIR is required")
	} else if scheme, _, ok := strings.Cut(c.Out, "://"); ok && !strings.ContainsAny(scheme, "/\\") {
		// It was made as a local directory named "s3:" (filepath cleans "//"), and the
		// checkpoints went there, not to the bucket.
		if scheme == "file" {
			add("out %s: give the run directory as a path (%s), not a file:// URL", redact.String(c.Out), strings.TrimPrefix(c.Out, "file://"))
		} else {
			add("out %s: the run directory must be a local directory (config.yaml, metrics.jsonl, the TensorBoard files and the checkpoints are written there); give a local path (a network mount will do) and copy it to the bucket afterwards; --resume takes an s3:// checkpoint", redact.String(c.Out))
		}
	}
	if c.Split != "" {
		if _, err := loader.ParseSplit(c.Split); err != nil {
			add("%v", err) // (it names the split)
		}
	}
	switch c.Order {
	case "default", "neox":
	default:
		add("order %q: want default or neox", c.Order)
	}
	switch c.Device {
	case "auto", "cpu", "ref", "cuda", "cuda-sim":
	default:
		add("device %q: want auto, cpu, ref, cuda or cuda-sim", c.Device)
	}
	switch c.Dtype {
	case "auto", "float32", "bfloat16", "float16":
	default:
		add("dtype %q: want auto, float32, bfloat16 or float16", c.Dtype)
	}
	if c.Threads < 0 {
		add("threads %d: want >= 0 (0: one per CPU)", c.Threads)
	}
	pos := func(name string, v int) {
		if v < 1 {
			add("%s %d: want >= 1", name, v)
		}
	}
	nonneg := func(name string, v int) {
		if v < 0 {
			add("%s %d: want >= 0", name, v)
		}
	}
	pos("n_layer", c.NLayer)
	pos("n_head", c.NHead)
	pos("n_embd", c.NEmbd)
	pos("block_size", c.BlockSize)
	pos("batch_size", c.BatchSize)
	pos("grad_accum", c.GradAccum)
	pos("max_steps", c.MaxSteps)
	pos("log_every", c.LogEvery)
	nonneg("vocab_size", c.VocabSize)
	nonneg("warmup_steps", c.WarmupSteps)
	nonneg("lr_decay_steps", c.LRDecaySteps)
	nonneg("eval_every", c.EvalEvery)
	nonneg("eval_steps", c.EvalSteps)
	nonneg("checkpoint_every", c.CheckpointEvery)
	nonneg("keep_checkpoints", c.KeepCheckpoints)
	if c.Zero != 0 && c.Zero != 1 {
		add("zero %d: want 0 or 1 (ZeRO stage 1 shards the optimizer state)", c.Zero)
	}
	if !(c.BucketMB >= 0) {
		add("bucket_mb %g: want >= 0", c.BucketMB)
	}
	if c.NHead >= 1 && c.NEmbd >= 1 && c.NEmbd%c.NHead != 0 {
		add("n_embd %d is not a multiple of n_head %d", c.NEmbd, c.NHead)
	}
	if !(c.Dropout >= 0 && c.Dropout < 1) {
		add("dropout %g: want 0 <= dropout < 1", c.Dropout)
	}
	if !(c.LR > 0) {
		add("lr %g: want > 0", c.LR)
	}
	if !(c.MinLR >= 0) || c.MinLR > c.LR {
		add("min_lr %g: want 0 <= min_lr <= lr (%g)", c.MinLR, c.LR)
	}
	if c.LRDecaySteps < c.WarmupSteps {
		add("lr_decay_steps %d is before the end of warmup (warmup_steps %d)", c.LRDecaySteps, c.WarmupSteps)
	}
	if !(c.WeightDecay >= 0) {
		add("weight_decay %g: want >= 0", c.WeightDecay)
	}
	if !(c.Beta1 >= 0 && c.Beta1 < 1) {
		add("beta1 %g: want 0 <= beta1 < 1", c.Beta1)
	}
	if !(c.Beta2 >= 0 && c.Beta2 < 1) {
		add("beta2 %g: want 0 <= beta2 < 1", c.Beta2)
	}
	if !(c.GradClip >= 0) {
		add("grad_clip %g: want >= 0 (0: no clipping)", c.GradClip)
	}
	if c.Seed < 0 || c.Seed > math.MaxUint32 {
		add("seed %d: want 0 <= seed < 2^32 (the sample order uses numpy's 32-bit seed)", c.Seed)
	}
	switch {
	case c.Resume == "":
		add("resume: want auto, none or a checkpoint PATH")
	case c.Resume != "auto" && c.Resume != "none" && c.InitFrom != "":
		add("resume %s and init_from %s: a resumed run already has its weights; give one of them", c.Resume, c.InitFrom)
	}
	if len(bad) > 0 {
		return fmt.Errorf("train: bad config: %s", strings.Join(bad, "; "))
	}
	return nil
}

// PaddedVocab rounds a vocabulary size up to a multiple of 64 (nanoGPT's 50257 ->
// 50304), the rows of the token embedding.
func PaddedVocab(v int) int { return (v + 63) / 64 * 64 }
