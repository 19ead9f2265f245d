package pipelines

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"gptkit/prep"
	"gptkit/shards"
)

// pipelineVersion changes whenever the same job would produce different bytes (a new
// shard-boundary rule, a new document order): a journal of another version is not resumed.
const pipelineVersion = 1

// jobDesc is everything that decides a run's output bytes; its sha256 is the job's
// fingerprint, which a resumed run must match. Workers, Progress, Logger, Command, TokSpec
// and SkipBad are not part of it: they do not change the shards of a run that finishes
// (the manifest, which records the command and spec, is written by the run that does).
type jobDesc struct {
	Version    int               `json:"version"`
	Name       string            `json:"name"`
	Tokenizer  string            `json:"tokenizer"` // the tokenizer's fingerprint
	EOD        int               `json:"eod_id"`
	DType      string            `json:"dtype"`
	TextKey    string            `json:"text_key"`
	AppendEOD  bool              `json:"append_eod"`
	ShardBytes int64             `json:"shard_bytes"`
	FilterSet  string            `json:"filter_set,omitempty"`
	Splits     []jobSplit        `json:"splits"`
	Params     map[string]string `json:"params,omitempty"`
	// StripeBytes is the stripe size of a partitioned run whose inputs include a
	// compressed JSONL file, which parts may share by stripes (see Partition); 0
	// otherwise, which leaves the job of any other run as it was.
	StripeBytes int64 `json:"stripe_bytes,omitempty"`
	// Partition, in the job of one part of a partitioned run, says which part.
	Partition *jobPartition `json:"partition,omitempty"`
}

// jobPartition is the part a partitioned run's worker does (see Partition).
type jobPartition struct {
	Version     int `json:"version"` // partitionVersion
	NumWorkers  int `json:"num_workers"`
	WorkerIndex int `json:"worker_index"`
}

type jobSplit struct {
	Split  string     `json:"split"`
	Inputs []jobInput `json:"inputs"`
}

// jobInput identifies an input file's content: by its sha256 when the caller knows it
// (TokenizeRun.InputSHA256), else by its size and modification time.
type jobInput struct {
	Name    string `json:"name"`
	Size    int64  `json:"size"`
	ModTime string `json:"mtime,omitempty"`
	SHA256  string `json:"sha256,omitempty"`
}

// describeJob describes the run's job (stat-ing every input).
func (r *TokenizeRun) describeJob(dtype shards.DType) (*jobDesc, error) {
	key := r.TextKey
	if key == "" {
		key = prep.DefaultTextKey
	}
	d := &jobDesc{
		Version: pipelineVersion, Name: r.Name, Tokenizer: r.Tokenizer.Fingerprint(), EOD: r.Tokenizer.EOD(),
		DType: dtype.String(), TextKey: key, AppendEOD: r.AppendEOD, ShardBytes: r.ShardBytes, FilterSet: r.FilterSet, Params: r.Params,
	}
	if r.NumWorkers > 0 && stripesShared(r.splits()) {
		d.StripeBytes = r.stripeSize()
	}
	for _, sp := range r.splits() {
		js := jobSplit{Split: sp.Split}
		for _, name := range sp.Inputs {
			fi, err := statInput(name)
			if err != nil {
				return nil, err
			}
			in := jobInput{Name: name, Size: fi.Size(), SHA256: r.InputSHA256[name]}
			if in.SHA256 == "" {
				in.ModTime = fi.ModTime().UTC().Format(time.RFC3339Nano)
			}
			js.Inputs = append(js.Inputs, in)
		}
		d.Splits = append(d.Splits, js)
	}
	return d, nil
}

// statInput stats the input name; a missing one is named as given, with the next
// step ("input stat X: no such file or directory" said neither).
func statInput(name string) (os.FileInfo, error) {
	fi, err := os.Stat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		hint := "check the path"
		if strings.ContainsAny(name, "*?[") {
			hint = "a pattern is expanded by the shell, not by gptkit: leave it unquoted, and check that it matches"
		}
		return nil, &missingInputError{name, hint}
	case err != nil:
		return nil, fmt.Errorf("input %w", err)
	}
	return fi, nil
}

// missingInputError is statInput's error for a missing input; errors.Is it
// fs.ErrNotExist.
type missingInputError struct{ name, hint string }

func (e *missingInputError) Error() string {
	return fmt.Sprintf("input %s: no such file (%s)", e.name, e.hint)
}

func (e *missingInputError) Unwrap() error { return fs.ErrNotExist }

// inputList is the job's inputs as the manifest records them (source.job_inputs),
// one line each: NAME (SIZE bytes, modified MTIME) or NAME (SIZE bytes, sha256 SUM).
func (d *jobDesc) inputList() []string {
	var out []string
	for _, sp := range d.Splits {
		for _, in := range sp.Inputs {
			what := "modified " + in.ModTime
			if in.SHA256 != "" {
				what = "sha256 " + in.SHA256
			}
			out = append(out, fmt.Sprintf("%s (%d bytes, %s)", in.Name, in.Size, what))
		}
	}
	return out
}

// inputsChanged says how the inputs recorded in an earlier run's manifest
// (source.job_inputs; nil for one written before it was recorded) differ from
// d's, or "" when they do not (or cannot be told).
func (d *jobDesc) inputsChanged(recorded any) string {
	c, _ := shards.DiffInputs(recorded, d.inputList(), false)
	return inputsChange(c)
}

// inputsChange words a change of inputs for a rerun's refusal: "now X; was Y", at
// most four.
func inputsChange(c shards.InputsChange) string {
	var changes []string
	for _, s := range c.Added {
		changes = append(changes, "now "+s)
	}
	for _, s := range c.Gone {
		changes = append(changes, "was "+s)
	}
	if len(changes) > 4 {
		changes = append(changes[:4], fmt.Sprintf("and %d more", len(changes)-4))
	}
	return strings.Join(changes, "; ")
}

// settings is the job without its inputs and part: what a manifest records as
// source.job_settings, the same in every part of a run and in its merged manifest, so
// that a rerun refused over a finished dataset of another job can say what changed.
func (d *jobDesc) settings() *jobDesc {
	c := *d
	c.Splits, c.Partition = nil, nil
	return &c
}

// changedFrom says how d (with tokenizer tokName) differs from the job that made the
// finished dataset m (shards.JobChanges: the settings its source.job_settings records,
// before they were its tokenizer, dtype and append_eod), and its inputs
// (source.job_inputs; with ignoreMTime, by name and size only, as the parts of one run
// may see other copies). "" when nothing can be told.
func (d *jobDesc) changedFrom(m *shards.Manifest, tokName string, ignoreMTime bool) (string, error) {
	// d.DType is a shards.DType's String (describeJob): it parses. An error here is
	// a job description made elsewhere, which would compare as another dtype.
	dtype, err := shards.ParseDType(d.DType)
	if err != nil {
		return "", fmt.Errorf("compare the job with the dataset's: the job's dtype: %w (a bug: please report it)", err)
	}
	now := shards.NewManifest(shards.TokenizerInfo{Name: tokName, Fingerprint: d.Tokenizer, EODID: d.EOD}, dtype,
		map[string]any{"job_settings": d.settings(), "append_eod": d.AppendEOD})
	out := shards.JobChanges(m, now)
	if c, ok := shards.DiffInputs(m.Source["job_inputs"], d.inputList(), ignoreMTime); ok {
		if c.Reordered {
			// The same files in another order (a glob that sorted otherwise)
			// make another token stream.
			out = append(out, "its inputs are given in another order ("+orderChange(shards.InputNames(m.Source["job_inputs"]), shards.InputNames(d.inputList()))+")")
		} else if c := inputsChange(c); c != "" {
			out = append(out, "its inputs changed ("+c+")")
		}
	}
	return strings.Join(out, "; "), nil
}

// orderChange words the same inputs in another order: both lists ("was A B; now B A"),
// or, past 8 inputs (a glob of thousands), where they first differ.
func orderChange(was, now []string) string {
	if len(was) <= 8 {
		return fmt.Sprintf("was %s; now %s", strings.Join(was, " "), strings.Join(now, " "))
	}
	i := 0
	for i < len(was) && i < len(now) && was[i] == now[i] {
		i++
	}
	if i == len(was) || i == len(now) {
		return fmt.Sprintf("%d inputs", len(was))
	}
	return fmt.Sprintf("input %d was %s, now %s; %d inputs", i+1, was[i], now[i], len(was))
}

// settingsJSON is d's settings as a manifest's source.job_settings decodes.
func (d *jobDesc) settingsJSON() map[string]any {
	data, err := json.Marshal(d.settings())
	if err != nil {
		panic(err) // plain strings and numbers always marshal
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		panic(err)
	}
	return m
}

// noMTimes is d with every input's modification time as "-" (those known by sha256
// have none): the job as the parts of one run, which may see other copies, share it.
func (d *jobDesc) noMTimes() *jobDesc {
	c := *d
	c.Splits = make([]jobSplit, len(d.Splits))
	for i, s := range d.Splits {
		c.Splits[i] = jobSplit{Split: s.Split, Inputs: slices.Clone(s.Inputs)}
		for j := range c.Splits[i].Inputs {
			if c.Splits[i].Inputs[j].SHA256 == "" {
				c.Splits[i].Inputs[j].ModTime = "-"
			}
		}
	}
	return &c
}

// fingerprint is the sha256 of the description (encoding/json sorts Params' keys).
func (d *jobDesc) fingerprint() string {
	data, err := json.Marshal(d)
	if err != nil {
		panic(err) // plain strings and numbers always marshal
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// runJob is the fingerprint of a partitioned run's whole job, the same in every part
// (shards.PartInfo.Job) and in the merged manifest's source: the job without the
// part, and with inputs known by name, size and sha256 only. Modification times are
// left out: workers on other machines may see other copies of the same inputs.
func (d *jobDesc) runJob() string {
	c := *d
	c.Partition = nil
	c.Splits = make([]jobSplit, len(d.Splits))
	for i, s := range d.Splits {
		c.Splits[i] = jobSplit{Split: s.Split, Inputs: make([]jobInput, len(s.Inputs))}
		for j, in := range s.Inputs {
			in.ModTime = ""
			c.Splits[i].Inputs[j] = in
		}
	}
	return c.fingerprint()
}

// sizes returns the inputs' sizes, by name, as the job saw them.
func (d *jobDesc) sizes() map[string]int64 {
	out := map[string]int64{}
	for _, s := range d.Splits {
		for _, in := range s.Inputs {
			out[in.Name] = in.Size
		}
	}
	return out
}

// changes says how job b differs from a, for the message of a run that does not resume.
func (a *jobDesc) changes(b *jobDesc) string {
	out := shards.SettingsChanges(a.settingsJSON(), b.settingsJSON())
	if pa, pb := a.Partition, b.Partition; (pa == nil) != (pb == nil) || pa != nil && *pa != *pb {
		out = append(out, fmt.Sprintf("partition %s → %s", pa.String(), pb.String()))
	}
	if !slices.EqualFunc(a.Splits, b.Splits, func(x, y jobSplit) bool {
		return x.Split == y.Split && len(x.Inputs) == len(y.Inputs)
	}) {
		out = append(out, fmt.Sprintf("splits and inputs %s → %s", splitNames(a.Splits), splitNames(b.Splits)))
	} else {
		// The first few inputs that changed, and how many more (a glob sorted
		// otherwise, or a corpus touched, changes thousands).
		var inputs []string
		more := 0
		for i := range a.Splits {
			for j, x := range a.Splits[i].Inputs {
				y := b.Splits[i].Inputs[j]
				var c []string
				if x.Name != y.Name {
					// The same file spelled otherwise (./a.jsonl, a.jsonl) is
					// another job too: the name is part of it.
					c = append(c, fmt.Sprintf("input %d named %s, was %s (give it as the run that made the journal did)", j+1, y.Name, x.Name))
					x.Name = y.Name
				}
				if x != y {
					c = append(c, fmt.Sprintf("input %s changed (size %d → %d, mtime %s → %s, sha256 %s → %s)",
						y.Name, x.Size, y.Size, x.ModTime, y.ModTime, short(x.SHA256), short(y.SHA256)))
				}
				if len(c) > 0 && len(inputs) >= 4 {
					more++
					continue
				}
				inputs = append(inputs, c...)
			}
		}
		out = append(out, inputs...)
		if more > 0 {
			out = append(out, fmt.Sprintf("and %d more inputs changed", more))
		}
	}
	if len(out) == 0 {
		return "the job fingerprint differs"
	}
	return strings.Join(out, "; ")
}

func splitNames(ss []jobSplit) string {
	var names []string
	for _, s := range ss {
		names = append(names, fmt.Sprintf("%q×%d", s.Split, len(s.Inputs)))
	}
	return "[" + strings.Join(names, " ") + "]"
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	if h == "" {
		return "-"
	}
	return h
}

func (p *jobPartition) String() string {
	if p == nil {
		return "none"
	}
	return fmt.Sprintf("part %d of %d (v%d)", p.WorkerIndex, p.NumWorkers, p.Version)
}
