package shards

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gptkit/storage"
)

// A partitioned run (an array job: `tokenize run` or `prep` with --num-workers W) writes
// each of its W parts as a dataset of its own, in DIR/parts/part-IIIII-of-WWWWW/ (PartDir):
// its shards, and last its manifest.json, whose Part field says which part of which run
// it is. A part's manifest is written only once all its shards are, so a part without
// one is unfinished (killed, failed, or still running).
//
// MergeParts then writes DIR/manifest.json listing the parts' shards where they are (no
// copy), split by split and, within a split, part by part: the order a single process
// would have written the documents in. It refuses while a part is unfinished, naming it.
//
// An input that several parts share by stripes (a compressed JSONL file read by k
// parts, each handing on the lines of every k-th stripe of its uncompressed stream)
// leaves shards that each hold one stripe, marked with a StripeInfo: their parts are
// consecutive, and MergeParts lists those shards by stripe instead of by part.

// PartsDir is the directory, inside a dataset directory, that holds the parts.
const PartsDir = "parts"

// PartDir is the directory of part i of w relative to the dataset directory:
// parts/part-00003-of-00004.
func PartDir(i, w int) string { return fmt.Sprintf("%s/part-%05d-of-%05d", PartsDir, i, w) }

// partDirRE matches a key under the dataset directory that lies in a part's directory.
var partDirRE = regexp.MustCompile(`^` + PartsDir + `/part-(\d{5,})-of-(\d{5,})/`)

// PartParent returns the dataset directory that the part directory dir lies in: DIR for
// DIR/parts/part-00003-of-00004 (a local path or an s3:// location, with or without a
// trailing slash), where the run keeps what its parts share (the tokenizer files beside
// the data). ok is false for any other dir.
func PartParent(dir string) (parent string, ok bool) {
	d := strings.TrimRight(dir, "/")
	up, part := path.Split(d)
	parent, parts := path.Split(strings.TrimSuffix(up, "/"))
	if d == "" || parts != PartsDir || !partDirRE.MatchString(PartsDir+"/"+part+"/") {
		return "", false
	}
	switch {
	case parent == "":
		return ".", true
	case parent == "/":
		return "/", true
	}
	return strings.TrimSuffix(parent, "/"), true
}

// StripeInfo says which stripe of which input a part's shard holds: the documents of
// the lines that start in bytes [Stripe·S, (Stripe+1)·S) of the input's uncompressed
// stream (S, the stripe size, is the run's: it is part of Part.Job). A stripe's
// documents are all in one part, in one or more consecutive shards.
type StripeInfo struct {
	Input  int    `json:"input"`  // the input's index among its split's inputs, from 0
	File   string `json:"file"`   // the input's name, for people
	Stripe int64  `json:"stripe"` // the stripe's index, from 0
}

// PartInfo marks a manifest as one part of a partitioned run.
type PartInfo struct {
	Index int `json:"index"` // which part, from 0
	Count int `json:"count"` // of how many
	// Job identifies the whole run, the same in all its parts: what decides the
	// merged dataset's documents (inputs, tokenizer, settings), whatever the part.
	Job string `json:"job"`
	// Splits are the run's splits in the order the merged manifest lists them ("" for
	// an unsplit dataset's shards), including those this part holds no shard of.
	Splits []string `json:"splits"`
	// Slice says what this part read (provenance for people; MergeParts ignores it).
	Slice any `json:"slice,omitempty"`
}

// validate checks a part's fields against its shards.
func (p *PartInfo) validate(shards []ShardInfo) []error {
	var errs []error
	if p.Count < 1 || p.Index < 0 || p.Index >= p.Count {
		errs = append(errs, fmt.Errorf("part.index %d is not in [0, part.count %d)", p.Index, p.Count))
	}
	if p.Job == "" {
		errs = append(errs, errors.New("part.job is empty"))
	}
	for i, s := range p.Splits {
		if err := CheckSplitName(s); err != nil {
			errs = append(errs, fmt.Errorf("part.splits[%d]: %v", i, err))
		}
		if slices.Index(p.Splits, s) != i {
			errs = append(errs, fmt.Errorf("part.splits[%d]: %q repeats", i, s))
		}
	}
	for i, s := range shards {
		if !slices.Contains(p.Splits, s.Split) {
			errs = append(errs, fmt.Errorf("shards[%d] %s: split %q is not among part.splits %q", i, s.Prefix, s.Split, p.Splits))
		}
	}
	return errs
}

// ErrPartMissing: MergeParts found a part unfinished (no manifest).
var ErrPartMissing = errors.New("shards: part not finished")

// MergePartsOptions adjust MergeParts.
type MergePartsOptions struct {
	// Count is the number of parts to expect; 0 takes it from the parts found (which
	// must then all be of one run size).
	Count int
	// Overwrite replaces a merged manifest of another run instead of refusing.
	Overwrite bool
	// Command is the merge's command line, recorded as the manifest's source.command.
	Command string
	// RerunHint, if set, says how to rerun the unfinished parts and merge again,
	// given their indices (e.g. the sbatch lines of an array job): the hint of the
	// error that names them.
	RerunHint func(missing []int, count int) string
}

// MergeResult says what MergeParts did.
type MergeResult struct {
	Manifest *Manifest
	Parts    int  // the number of parts merged
	Already  bool // dir already held this run's merged manifest: nothing was written
	// Removed are the store keys of the replaced dataset's files (Overwrite) that
	// the new manifest does not use, removed once it was written; RemoveErr joins
	// the failures to remove others (the new dataset is complete regardless).
	Removed   []string
	RemoveErr error
}

// MergeParts writes dir's manifest.json from the parts of a partitioned run in dir
// (see PartDir). Every part must be finished and of the same run: the same Part.Job
// (inputs, tokenizer, settings), part count, splits, tokenizer and dtype, each part in
// its own directory; every shard's .bin must be in place with the size its manifest
// entry implies. The merged manifest lists the parts' shards split by split (in
// Part.Splits order) and part by part, with prefixes relative to dir
// (parts/part-00000-of-00004/NAME_text_document, ...); its source is part 0's, with
// job set to Part.Job, created to the latest part's, command to o.Command, and
// num_workers to the part count, so that merging the same parts again gives the same
// bytes. If dir already holds the merged manifest of the same run, MergeParts writes
// nothing and reports Already; one of another run is an error matching ErrExists unless
// o.Overwrite. Overwrite replaces it, and once the new manifest is written removes the
// files of the replaced dataset that the new one does not use (see MergeResult.Removed).
// It holds every part's writer lock (storage.LockDir) from its reading of the parts to
// the manifest's write, waiting up to mergeLockWait for each: a task making its part
// again holds that lock, and another merge holds them all.
func MergeParts(ctx context.Context, st storage.Store, dir string, o MergePartsOptions) (MergeResult, error) {
	where := keyName(st, cleanDir(dir))
	count, started, err := findParts(ctx, st, dir, o.Count)
	if err != nil {
		return MergeResult{}, err
	}
	parts, missing, err := readParts(ctx, st, dir, count, where)
	if err != nil {
		return MergeResult{}, err
	}
	if len(missing) > 0 {
		if len(missing) == count && o.Count > 0 {
			// None of the count asked for: is it another run's count?
			if other, _, ferr := findParts(ctx, st, dir, 0); ferr == nil && other != count {
				return MergeResult{}, fmt.Errorf("shards: merge-parts %s: no part of a run of %d workers (--num-workers %d), but it holds the parts of a run of %d\n---> HINT: merge with --num-workers %d (or without it)", where, count, count, other, other)
			}
		}
		return MergeResult{}, missingErr(where, parts, missing, started, count, o)
	}
	// Each part's writer lock, held until the manifest is written: a task that makes
	// its part again (rerun with --overwrite, or over a damaged part) holds it while it
	// rewrites the part's shards, and removes the merged manifest once it has it, so
	// no merged manifest lists a part being rewritten. Read again under the locks.
	locks, err := lockParts(ctx, st, dir, count, where, o.Command)
	if err != nil {
		return MergeResult{}, err
	}
	defer func() {
		for _, l := range locks {
			l.Release()
		}
	}()
	if parts, missing, err = readParts(ctx, st, dir, count, where); err != nil {
		return MergeResult{}, err
	}
	if len(missing) > 0 {
		return MergeResult{}, missingErr(where, parts, missing, started, count, o)
	}
	if err := partsAgree(where, parts); err != nil {
		return MergeResult{}, err
	}
	if err := checkPartShards(ctx, st, dir, where, parts); err != nil {
		return MergeResult{}, err
	}
	m, err := mergedManifest(where, parts, o.Command)
	if err != nil {
		return MergeResult{}, err
	}

	old, err := ReadManifest(ctx, st, dir)
	var replaced *Manifest // the dataset whose manifest m replaces
	switch {
	case err == nil && old.Source["job"] == m.Source["job"] && old.Part == nil && !o.Overwrite:
		return MergeResult{Manifest: old, Parts: count, Already: true}, nil
	case err == nil && !o.Overwrite:
		return MergeResult{}, fmt.Errorf("shards: merge-parts %s: %w: its %s (%d documents) was not merged from this run's parts\n---> HINT: pass --overwrite to replace it, or merge into another directory",
			where, ErrExists, ManifestName, old.Documents)
	case err == nil:
		m.ETag = old.ETag
		replaced = old
	case !errors.Is(err, ErrMissing) && !o.Overwrite:
		return MergeResult{}, mergeErr(err, "%s", where)
	case !errors.Is(err, ErrMissing):
		// A broken manifest is replaced: take its version so that the write may.
		if info, serr := st.Stat(ctx, ManifestKey(dir)); serr == nil {
			m.ETag = info.ETag
		}
	}
	for _, l := range locks {
		if err := l.Check(); err != nil {
			return MergeResult{}, fmt.Errorf("shards: merge-parts %s: %w", where, err)
		}
	}
	if err := WriteManifest(ctx, st, dir, m); err != nil {
		if errors.Is(err, storage.ErrPrecondition) {
			// Another merge committed first (the scheduler's merge job and one
			// run by hand): the same merge is done, another is named.
			if now, rerr := ReadManifest(ctx, st, dir); rerr == nil {
				if sameMerge(now, m) {
					return MergeResult{Manifest: now, Parts: count, Already: true}, nil
				}
				who, _ := now.Source["command"].(string)
				if who == "" {
					who = "an unknown writer"
				}
				what := "a dataset not merged from this run's parts"
				if job, _ := now.Source["job"].(string); job != "" && now.Part == nil {
					what = fmt.Sprintf("the merge of another run (job %.12s; this one's is %.12s)", job, m.Source["job"])
				}
				return MergeResult{}, fmt.Errorf("shards: merge-parts %s: %w: while this merge ran, another writer (%s) committed its %s: %s, %d documents\n---> HINT: two merges (or a merge and a run) wrote one directory; check which should stay: rerun this merge with --overwrite to replace it, or merge into another directory",
					where, ErrExists, who, ManifestName, what, now.Documents)
			}
		}
		return MergeResult{}, mergeErr(err, "%s", where)
	}
	res := MergeResult{Manifest: m, Parts: count}
	if replaced != nil { // only now: the new manifest is committed
		res.Removed, res.RemoveErr = removeReplaced(ctx, st, dir, replaced, m)
	}
	return res, nil
}

// readParts reads the manifests of the count parts in dir: parts[i] nil for each
// missing one, listed in missing.
func readParts(ctx context.Context, st storage.Store, dir string, count int, where string) (parts []*Manifest, missing []int, err error) {
	parts = make([]*Manifest, count)
	for i := range count {
		m, err := ReadManifest(ctx, st, join(dir, PartDir(i, count)))
		switch {
		case errors.Is(err, ErrMissing):
			missing = append(missing, i)
		case err != nil:
			return nil, nil, mergeErr(err, "%s: part %d of %d", where, i, count)
		default:
			parts[i] = m
		}
	}
	return parts, missing, nil
}

// mergeLockWait bounds a merge's wait for a part's writer lock: another merge holds
// them for its own few seconds; a task making the part again, to its end.
var mergeLockWait = 30 * time.Second

// lockParts takes the writer locks of the count parts in dir, in order (so two merges
// never wait on each other's), waiting up to mergeLockWait for each.
func lockParts(ctx context.Context, st storage.Store, dir string, count int, where, command string) ([]*storage.Lock, error) {
	if command == "" {
		command = "shards merge-parts " + where
	}
	owner := storage.LockOwner(command)
	var locks []*storage.Lock
	fail := func(err error) ([]*storage.Lock, error) {
		for _, l := range locks {
			l.Release()
		}
		return nil, err
	}
	for i := range count {
		deadline := time.Now().Add(mergeLockWait)
		wait := 100 * time.Millisecond
		for {
			l, err := storage.LockDir(ctx, st, join(dir, PartDir(i, count)), owner)
			if err == nil {
				locks = append(locks, l)
				break
			}
			if !errors.Is(err, storage.ErrLocked) || !time.Now().Before(deadline) {
				return fail(fmt.Errorf("shards: merge-parts %s: part %d of %d (%s) is being written (its task rerun, or another merge), waited %s: %w",
					where, i, count, PartDir(i, count), mergeLockWait, err))
			}
			t := time.NewTimer(min(wait, time.Until(deadline)))
			select {
			case <-ctx.Done():
				t.Stop()
				return fail(ctx.Err())
			case <-t.C:
			}
			wait = min(2*wait, 2*time.Second)
		}
	}
	return locks, nil
}

// sameMerge reports whether the manifest another writer committed, now, is the merge m
// of the same parts: the same run, shards and documents.
func sameMerge(now, m *Manifest) bool {
	return now.Part == nil && now.Source["job"] == m.Source["job"] && now.Documents == m.Documents &&
		slices.EqualFunc(now.Shards, m.Shards, func(a, b ShardInfo) bool {
			return a.Prefix == b.Prefix && a.Split == b.Split && a.BinSHA256 == b.BinSHA256 && a.IdxSHA256 == b.IdxSHA256
		})
}

// findParts returns the run's part count (want, if not 0) and which parts have a
// directory (they started).
func findParts(ctx context.Context, st storage.Store, dir string, want int) (int, map[int]bool, error) {
	where := keyName(st, cleanDir(dir))
	prefix := join(dir, PartsDir) + "/"
	infos, err := st.List(ctx, prefix)
	if err != nil {
		return 0, nil, fmt.Errorf("shards: merge-parts %s: list %s: %w", where, keyName(st, prefix), err)
	}
	started := map[int]map[int]bool{} // count -> indices
	for _, in := range infos {
		rel := strings.TrimPrefix(in.Key, cleanDirSlash(dir))
		m := partDirRE.FindStringSubmatch(rel)
		if m == nil {
			continue
		}
		i, _ := strconv.Atoi(m[1])
		w, _ := strconv.Atoi(m[2])
		if started[w] == nil {
			started[w] = map[int]bool{}
		}
		started[w][i] = true
	}
	if want > 0 {
		return want, started[want], nil
	}
	counts := slices.Sorted(maps.Keys(started))
	switch len(counts) {
	case 0:
		return 0, nil, &wrapped{msg: fmt.Sprintf("shards: merge-parts %s: no parts in %s\n---> HINT: run the array job's tasks first (--num-workers W --worker-index I)",
			where, keyName(st, prefix)), err: ErrPartMissing}
	case 1:
		return counts[0], started[counts[0]], nil
	}
	return 0, nil, fmt.Errorf("shards: merge-parts %s: parts of runs with %s workers are there\n---> HINT: pass the run's --num-workers, or delete the parts of the other run",
		where, joinInts(counts, " and "))
}

// cleanDirSlash is dir's key prefix: "" or "dir/".
func cleanDirSlash(dir string) string {
	if d := cleanDir(dir); d != "" {
		return d + "/"
	}
	return ""
}

// missingErr names the unfinished parts and how to finish them.
func missingErr(where string, parts []*Manifest, missing []int, started map[int]bool, count int, o MergePartsOptions) error {
	var b strings.Builder
	fmt.Fprintf(&b, "shards: merge-parts %s: %d of %d parts are not finished (no manifest yet):", where, len(missing), count)
	for k, i := range missing {
		if k == 8 {
			fmt.Fprintf(&b, " and %d more", len(missing)-k)
			break
		}
		state := "not started"
		if started[i] {
			state = "started, unfinished: killed, failed or still running"
		}
		fmt.Fprintf(&b, " part %d (%s: %s);", i, PartDir(i, count), state)
	}
	var hint string
	if o.RerunHint != nil {
		hint = o.RerunHint(missing, count)
	} else {
		hint = fmt.Sprintf("rerun those tasks (each redoes only its own part, keeping what it had finished): the same command with --num-workers %d --worker-index I, for I in %s", count, joinInts(missing, ","))
		for _, m := range parts {
			if m != nil {
				if cmd, ok := m.Source["command"].(string); ok && cmd != "" {
					hint += fmt.Sprintf(" (part %d ran: %s)", m.Part.Index, cmd)
				}
				break
			}
		}
		hint += "; then merge again"
	}
	return &wrapped{msg: fmt.Sprintf("%s\n---> HINT: %s", strings.TrimSuffix(b.String(), ";"), hint), err: ErrPartMissing}
}

// wrapped is a message of its own that matches a sentinel.
// mergeErr wraps err, an error of this package or another's, under "shards:
// merge-parts " and the context format gives (the directory, the part), saying
// "shards: " once: its text follows without its own prefix. A "---> HINT:" line in
// format goes after err's text (err's own hint, if any, is kept before it).
func mergeErr(err error, format string, args ...any) error {
	ctx, hint, _ := strings.Cut(fmt.Sprintf(format, args...), "\n---> HINT: ")
	msg := "shards: merge-parts " + ctx + ": " + strings.TrimPrefix(err.Error(), "shards: ")
	if hint != "" {
		msg += "\n---> HINT: " + hint
	}
	return &wrapped{msg: msg, err: err}
}

type wrapped struct {
	msg string
	err error
}

func (w *wrapped) Error() string { return w.msg }
func (w *wrapped) Unwrap() error { return w.err }

func joinInts(xs []int, sep string) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, sep)
}

// partsAgree checks that the parts belong to one run.
func partsAgree(where string, parts []*Manifest) error {
	count := len(parts)
	p0 := parts[0]
	if err := jobsAgree(where, parts); err != nil {
		return err
	}
	for i, m := range parts {
		name := PartDir(i, count)
		bad := func(format string, args ...any) error {
			return fmt.Errorf("shards: merge-parts %s: %w: %s %s\n---> HINT: rerun that part's task with the run's command (it redoes a part of another run), or delete %s",
				where, ErrIncompatible, name, fmt.Sprintf(format, args...), name)
		}
		if m.Part == nil {
			return bad("has a manifest without part information (written by a run that was not partitioned)")
		}
		if m.Part.Index != i || m.Part.Count != count {
			return bad("says it is part %d of %d", m.Part.Index, m.Part.Count)
		}
		if !slices.Equal(m.Part.Splits, p0.Part.Splits) {
			return bad("has splits %q, part 0 %q", m.Part.Splits, p0.Part.Splits)
		}
		// The tokenizer by what decides the ids, not its name: one tokenizer is named
		// otherwise by a task given another copy of its files (or, for a copy of a
		// built-in's, a task run before such a copy was named as the built-in).
		if a, b := m.Tokenizer, p0.Tokenizer; a.Fingerprint != b.Fingerprint || a.EODID != b.EODID || a.VocabSize != b.VocabSize || m.DType != p0.DType {
			return bad("was tokenized with %s (fingerprint %.12s) into %s, part 0 with %s (%.12s) into %s",
				m.Tokenizer.Name, m.Tokenizer.Fingerprint, m.DType, p0.Tokenizer.Name, p0.Tokenizer.Fingerprint, p0.DType)
		}
	}
	return nil
}

// jobsAgree reports parts of several runs (an input or a setting changed, and only
// some tasks ran again): which parts are of which run, the newest run's being the one
// to keep (its latest part's created time), so that the hint names the stale parts
// rather than whichever differs from part 0.
func jobsAgree(where string, parts []*Manifest) error {
	byJob := map[string][]int{}
	newest, newestJob := "", ""
	for i, m := range parts {
		if m.Part == nil {
			continue // partsAgree names it
		}
		byJob[m.Part.Job] = append(byJob[m.Part.Job], i)
		if c, _ := m.Source["created"].(string); c >= newest {
			newest, newestJob = c, m.Part.Job
		}
	}
	if len(byJob) < 2 {
		return nil
	}
	var groups []string
	var stale []int
	for _, job := range slices.Sorted(maps.Keys(byJob)) {
		idx := byJob[job]
		groups = append(groups, fmt.Sprintf("parts %s of job %.12s", joinInts(idx, ","), job))
		if job != newestJob {
			stale = append(stale, idx...)
		}
	}
	slices.Sort(stale)
	// What changed, from each older run to the newest (its settings and inputs, as
	// the parts' manifests record them).
	why := "(other inputs, tokenizer or settings)"
	var changes []string
	for _, job := range slices.Sorted(maps.Keys(byJob)) {
		if job == newestJob {
			continue
		}
		if c := jobChange(parts[byJob[job][0]], parts[byJob[newestJob][0]]); c != "" {
			changes = append(changes, fmt.Sprintf("job %.12s → %.12s: %s", job, newestJob, c))
		}
	}
	if len(changes) > 0 {
		why = "(" + strings.Join(changes, "; ") + ")"
	}
	return fmt.Errorf("shards: merge-parts %s: %w: the parts are of %d runs %s: %s\n---> HINT: the newest run (job %.12s, created %s) is the one to keep: rerun the tasks of parts %s with its command, then merge again",
		where, ErrIncompatible, len(byJob), why, strings.Join(groups, "; "), newestJob, newest, joinInts(stale, ","))
}

// JobChanges says how the job that made manifest b differs from the one that made a,
// one entry a change: the tokenizer (by name and fingerprint), the settings both
// record (source.job_settings, see SettingsChanges), or, when either does not (written
// before they were recorded), the dtype and append_eod. The inputs are DiffInputs'
// (each command words them its own way). Both tokenize run (a rerun over a finished
// dataset or part) and merge-parts (parts of two runs) tell changes by it.
func JobChanges(a, b *Manifest) []string {
	var out []string
	if a.Tokenizer.Fingerprint != b.Tokenizer.Fingerprint || a.Tokenizer.EODID != b.Tokenizer.EODID {
		out = append(out, fmt.Sprintf("the tokenizer changed (%s, fingerprint %s, eod %d → %s, fingerprint %s, eod %d)",
			a.Tokenizer.Name, shortHash(a.Tokenizer.Fingerprint), a.Tokenizer.EODID, b.Tokenizer.Name, shortHash(b.Tokenizer.Fingerprint), b.Tokenizer.EODID))
	}
	sa, okA := jsonObject(a.Source["job_settings"])
	sb, okB := jsonObject(b.Source["job_settings"])
	if okA && okB {
		// The tokenizer: told above, with its names.
		for _, s := range []map[string]any{sa, sb} {
			delete(s, "tokenizer")
			delete(s, "eod_id")
		}
		return append(out, SettingsChanges(sa, sb)...)
	}
	if a.DType != b.DType {
		out = append(out, fmt.Sprintf("dtype %s → %s", a.DType, b.DType))
	}
	if x, ok := a.Source["append_eod"].(bool); ok {
		if y, ok := b.Source["append_eod"].(bool); ok && x != y {
			out = append(out, fmt.Sprintf("append-eod %v → %v", x, y))
		}
	}
	return out
}

// settingOrder is the order changes of source.job_settings are told in (the job's, as
// formats.md lists them; keys not here follow, sorted), and settingNames the names
// they are told by (the rest by their keys).
var (
	settingOrder = []string{"version", "name", "tokenizer", "eod_id", "dtype", "text_key", "append_eod",
		"shard_bytes", "filter_set", "stripe_bytes", "params"}
	settingNames = map[string]string{
		"version": "pipeline version", "name": "dataset name", "text_key": "text key", "append_eod": "append-eod",
		"shard_bytes": "shard size", "filter_set": "filter set", "stripe_bytes": "stripe size",
	}
)

// SettingsChanges says how job settings b differ from a (source.job_settings as JSON
// decodes it: tokenize run's version, name, tokenizer, eod_id, dtype, text_key,
// append_eod, shard_bytes, filter_set, stripe_bytes, params), one entry a change:
// "shard size 1000000 → 2000000", "the tokenizer changed (fingerprint X → Y)" (a
// caller that knows the tokenizers' names leaves tokenizer and eod_id out and names
// them itself), and of params (a caller's settings, such as prep's, which may list
// every input) only those that differ, each value cut at 120 bytes.
func SettingsChanges(a, b map[string]any) []string {
	var out []string
	keys := slices.DeleteFunc(slices.Sorted(maps.Keys(union(a, b))), func(k string) bool { return slices.Contains(settingOrder, k) })
	keys = append(slices.Clone(settingOrder), keys...)
	for _, k := range keys {
		x, y := a[k], b[k]
		switch {
		case k == "eod_id":
			continue // told with the tokenizer
		case k == "tokenizer":
			if !reflect.DeepEqual(x, y) || !reflect.DeepEqual(a["eod_id"], b["eod_id"]) {
				out = append(out, fmt.Sprintf("the tokenizer changed (fingerprint %s → %s)", shortHash(str(x)), shortHash(str(y))))
			}
			continue
		case reflect.DeepEqual(x, y):
			continue
		}
		if px, ok := x.(map[string]any); ok || x == nil {
			if py, ok := y.(map[string]any); ok || y == nil {
				// params: only the settings that differ
				var diffs []string
				for _, p := range slices.Sorted(maps.Keys(union(px, py))) {
					u, inX := px[p]
					v, inY := py[p]
					switch {
					case !inX:
						diffs = append(diffs, fmt.Sprintf("%s (none) → %s", p, jsonValue(v)))
					case !inY:
						diffs = append(diffs, fmt.Sprintf("%s %s → (none)", p, jsonValue(u)))
					case !reflect.DeepEqual(u, v):
						diffs = append(diffs, fmt.Sprintf("%s %s → %s", p, jsonValue(u), jsonValue(v)))
					}
				}
				out = append(out, "settings "+strings.Join(diffs, ", "))
				continue
			}
		}
		name := settingNames[k]
		if name == "" {
			name = k
		}
		out = append(out, fmt.Sprintf("%s %s → %s", name, settingValue(x), settingValue(y)))
	}
	return out
}

// str is a string setting's value ("" for none).
func str(v any) string {
	s, _ := v.(string)
	return s
}

// shortHash is a fingerprint's first 12 characters ("-" for none).
func shortHash(h string) string {
	if h == "" {
		return "-"
	}
	return h[:min(len(h), 12)]
}

// jsonObject is v (a recorded source.job_settings, or the value a writer put there
// before it was encoded) as JSON decodes it; ok is false when it is not an object.
// The map is the caller's.
func jsonObject(v any) (map[string]any, bool) {
	if v == nil {
		return nil, false
	}
	if m, ok := v.(map[string]any); ok {
		return maps.Clone(m), true
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	var m map[string]any
	if json.Unmarshal(data, &m) != nil || m == nil {
		return nil, false
	}
	return m, true
}

func union(a, b map[string]any) map[string]any {
	u := maps.Clone(a)
	if u == nil {
		u = map[string]any{}
	}
	maps.Copy(u, b)
	return u
}

// settingValue writes a setting's value as it was written (1000000, not 1e+06; a
// string bare, "" quoted), cut at 120 bytes.
func settingValue(v any) string {
	if s, ok := v.(string); ok && s != "" {
		return cut(s)
	}
	return jsonValue(v)
}

// jsonValue writes a value of a decoded manifest as it was written (1000000, not 1e+06),
// cut at 120 bytes (a setting may list every input).
func jsonValue(v any) string {
	if v == nil {
		return "(none)"
	}
	s := fmt.Sprint(v)
	if data, err := json.Marshal(v); err == nil {
		s = string(data)
	}
	return cut(s)
}

func cut(s string) string {
	if len(s) > 120 {
		s = strings.ToValidUTF8(s[:120], "") + "…"
	}
	return s
}

// InputsChange is how a job's inputs differ from an earlier job's, as source.job_inputs
// records them ("NAME (SIZE bytes, modified T)" or "NAME (SIZE bytes, sha256 SUM)").
type InputsChange struct {
	// Gone are the earlier job's inputs the later one does not have, Added the later
	// one's the earlier did not have, each in its job's order; an input listed
	// several times (upsampled) counts as many times.
	Gone, Added []string
	// Reordered: the same inputs, in another order (another token stream).
	Reordered bool
}

// DiffInputs says how the inputs now differ from was (each a recorded
// source.job_inputs: []any as JSON decodes it, or []string), ignoring modification
// times with ignoreMTime (the parts of one run may see other copies: an input is then
// "NAME (SIZE bytes)"). ok is false when either is not recorded (a manifest written
// before they were).
func DiffInputs(was, now any, ignoreMTime bool) (c InputsChange, ok bool) {
	a, okA := recordedInputs(was, ignoreMTime)
	b, okB := recordedInputs(now, ignoreMTime)
	if !okA || !okB {
		return InputsChange{}, false
	}
	left := map[string]int{}
	for _, s := range a {
		left[s]++
	}
	for _, s := range b {
		if left[s] == 0 {
			c.Added = append(c.Added, s)
			continue
		}
		left[s]--
	}
	for _, s := range a {
		if left[s] > 0 {
			c.Gone = append(c.Gone, s)
			left[s]--
		}
	}
	c.Reordered = len(c.Gone) == 0 && len(c.Added) == 0 && !slices.Equal(a, b)
	return c, true
}

// InputNames is the names of a recorded source.job_inputs ([]any or []string).
func InputNames(recorded any) []string {
	list, _ := recordedInputs(recorded, false)
	for i, s := range list {
		if k := strings.LastIndex(s, " ("); k >= 0 {
			list[i] = s[:k]
		}
	}
	return list
}

// recordedInputs is a recorded source.job_inputs as strings (with no modification
// times if ignoreMTime); ok is false when it is not recorded.
func recordedInputs(recorded any, ignoreMTime bool) (out []string, ok bool) {
	switch l := recorded.(type) {
	case []string:
		out = slices.Clone(l)
	case []any:
		for _, v := range l {
			if s, ok := v.(string); ok {
				out = append(out, s)
			}
		}
	default:
		return nil, false
	}
	if ignoreMTime {
		for i, s := range out {
			if k := strings.LastIndex(s, ", modified "); k >= 0 && strings.HasSuffix(s, ")") {
				out[i] = s[:k] + ")"
			}
		}
	}
	return out, true
}

// jobChange says how the job that made part b differs from the one that made part a:
// JobChanges, and the inputs by name and size (the parts of one run may see other
// copies); "" when nothing can be told (manifests from before these were recorded).
func jobChange(a, b *Manifest) string {
	out := JobChanges(a, b)
	if c, ok := DiffInputs(a.Source["job_inputs"], b.Source["job_inputs"], true); ok {
		if c.Reordered {
			out = append(out, "its inputs are given in another order")
		} else if len(c.Gone)+len(c.Added) > 0 {
			out = append(out, fmt.Sprintf("inputs %s → %s", listOrNone(c.Gone), listOrNone(c.Added)))
		}
	}
	return strings.Join(out, "; ")
}

func listOrNone(l []string) string {
	if len(l) == 0 {
		return "(none)"
	}
	if len(l) > 4 {
		l = append(slices.Clip(l[:4]), fmt.Sprintf("and %d more", len(l)-4))
	}
	return strings.Join(l, ", ")
}

// checkPartShards checks that every part's shard files are in place: the .idx there
// and the .bin of the size the manifest entry implies. (Checksums are Verify's job: it
// reads every byte.)
func checkPartShards(ctx context.Context, st storage.Store, dir, where string, parts []*Manifest) error {
	for i, m := range parts {
		pdir := join(dir, PartDir(i, len(parts)))
		for _, s := range m.Shards {
			key := ShardKey(pdir, s)
			for _, ext := range []string{".idx", ".bin"} {
				info, err := st.Stat(ctx, key+ext)
				if err != nil {
					if errors.Is(err, storage.ErrNotExist) {
						return fmt.Errorf("shards: merge-parts %s: %w: %s does not exist, but part %d's manifest names it\n---> HINT: the part was damaged after it finished: delete %s and rerun its task",
							where, ErrMissing, keyName(st, key+ext), i, keyName(st, ManifestKey(pdir)))
					}
					return fmt.Errorf("shards: merge-parts %s: stat %s: %w", where, keyName(st, key+ext), err)
				}
				if want := s.Tokens * int64(m.DType.Size()); ext == ".bin" && info.Size != want {
					return fmt.Errorf("shards: merge-parts %s: %w: %s has %d bytes, its manifest entry (%d %s tokens) says %d\n---> HINT: the part was damaged after it finished: delete %s and rerun its task",
						where, ErrMismatch, keyName(st, key+ext), info.Size, s.Tokens, m.DType, want, keyName(st, ManifestKey(pdir)))
				}
			}
			if err := checkPartIndex(ctx, st, key, s, m.DType); err != nil {
				return mergeErr(err, "%s: part %d of %d\n---> HINT: the part was damaged after it finished: delete %s and rerun its task",
					where, i, len(parts), keyName(st, ManifestKey(pdir)))
			}
		}
	}
	return nil
}

// checkPartIndex checks a part's shard's .idx (small: 12 bytes a document) against its
// manifest entry: its sha256, its structure and its counts, so that a damaged .idx is
// named now rather than merged into a dataset that fails to open. (The .bin, up to
// gigabytes, is checked by size only; its sha256 is the merged manifest's, which
// readers check.) The error carries no hint: the caller adds the part's.
func checkPartIndex(ctx context.Context, st storage.Store, key string, s ShardInfo, dtype DType) error {
	name := keyName(st, key+".idx")
	data, err := readAll(ctx, st, key+".idx")
	if err != nil {
		return err
	}
	if got := sha256Hex(data); got != s.IdxSHA256 {
		return &FormatError{File: name, Offset: -1, Err: ErrChecksum, Msg: fmt.Sprintf("sha256 is %s, its manifest entry says %s", got, s.IdxSHA256)}
	}
	ix, err := ParseIndex(name, data)
	if err == nil {
		err = checkAgainstManifest(keyName(st, key), ix, s, dtype)
	}
	if err == nil {
		return nil
	}
	first := unjoin(err)[0]
	var fe *FormatError
	if !errors.As(first, &fe) {
		return first
	}
	c := *fe // without its hint: the caller's replaces it
	c.Hint = ""
	return &c
}

// mergedManifest lists the parts' shards split by split, part by part, and the
// shards of a striped input by stripe (see splitOrder).
func mergedManifest(where string, parts []*Manifest, command string) (*Manifest, error) {
	p0 := parts[0]
	src := maps.Clone(p0.Source)
	if src == nil {
		src = map[string]any{}
	}
	created := ""
	for _, m := range parts {
		if c, ok := m.Source["created"].(string); ok && c > created {
			created = c // RFC 3339 UTC times sort as strings
		}
	}
	if created != "" {
		src["created"] = created
	}
	src["job"] = p0.Part.Job
	src["num_workers"] = len(parts)
	if command != "" {
		src["command"] = command
	} else {
		delete(src, "command")
	}
	out := NewManifest(p0.Tokenizer, p0.DType, src)
	out.Records = SumRecords(parts)
	for _, split := range p0.Part.Splits {
		order, err := splitOrder(where, parts, split)
		if err != nil {
			return nil, err
		}
		for _, ps := range order {
			s := ps.info
			s.Prefix = PartDir(ps.part, len(parts)) + "/" + s.Prefix
			out.Shards = append(out.Shards, s)
			out.Documents += s.Documents
			out.Tokens += s.Tokens
		}
	}
	return out, nil
}

// partShard is a shard of part part.
type partShard struct {
	part int
	info ShardInfo
}

// splitOrder lists the shards of split in the order of a single process's documents:
// part by part, except that the shards of an input the parts share by stripes, which
// lie in consecutive parts with nothing else of the split between them, are listed by
// stripe (a stable sort: a stripe's shards keep their order). It refuses striped
// shards that cannot come from one cut of the inputs: an input's stripes in parts
// that are not consecutive, or one stripe in two parts.
func splitOrder(where string, parts []*Manifest, split string) ([]partShard, error) {
	var list []partShard
	for i, m := range parts {
		for _, s := range m.Shards {
			if s.Split == split {
				list = append(list, partShard{i, s})
			}
		}
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("shards: merge-parts %s: %w: split %q: %s\n---> HINT: the parts were not cut from the same inputs by the same gptkit: rerun the run's tasks with one gptkit version (delete parts/ to start over)",
			where, ErrIncompatible, split, fmt.Sprintf(format, args...))
	}
	done := map[int]bool{} // inputs whose striped shards have been ordered
	for lo := 0; lo < len(list); {
		st := list[lo].info.Stripe
		if st == nil {
			lo++
			continue
		}
		hi := lo + 1
		for hi < len(list) && list[hi].info.Stripe != nil && list[hi].info.Stripe.Input == st.Input {
			hi++
		}
		if done[st.Input] {
			return nil, bad("the stripes of input %d (%s) are in parts that are not consecutive (%s is in %s)",
				st.Input, st.File, list[lo].info.Prefix, PartDir(list[lo].part, len(parts)))
		}
		done[st.Input] = true
		run := list[lo:hi]
		slices.SortStableFunc(run, func(a, b partShard) int { return cmp.Compare(a.info.Stripe.Stripe, b.info.Stripe.Stripe) })
		for k := 1; k < len(run); k++ {
			if a, b := run[k-1], run[k]; a.info.Stripe.Stripe == b.info.Stripe.Stripe && a.part != b.part {
				return nil, bad("stripe %d of input %d (%s) is in %s and in %s",
					a.info.Stripe.Stripe, st.Input, st.File, PartDir(a.part, len(parts)), PartDir(b.part, len(parts)))
			}
		}
		lo = hi
	}
	return list, nil
}
