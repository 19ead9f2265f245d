package pipelines

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"gptkit/prep"
	"gptkit/shards"
	"gptkit/storage"
)

// JournalName is the file a resumable run (TokenizeRun.Resume) keeps in the dataset
// directory until its manifest is written: the job's fingerprint and, per split, the
// shards committed so far. Readers never look at it; a finished run deletes it.
//
// Resuming: a run killed at any moment (kill -9 included) and run again with the same job
// keeps the journaled shards that still verify (sha256 of .bin and .idx re-read: on S3
// that downloads them once, at about the speed `shards verify` reads), skips as many
// documents of the split's inputs as they hold (reading and parsing them again, but not
// tokenizing), and continues with the next shard. Shards close after the first document
// that takes their .bin to ShardBytes or more, whatever the workers and wherever the run
// was cut, so the resumed dataset is byte-identical to an uninterrupted run's, manifest
// included: its source.created is the time the job first started, kept in the journal.
// With ShardBytes 0 (one shard per split) only finished splits are kept.
const JournalName = ".prep-journal.json"

const (
	journalFormat  = "gptkit-run-journal"
	journalVersion = 1
	maxJournalSize = 64 << 20
)

// journal is the JSON in JournalName. A run keeps one in memory even without Resume (then
// it is never written); its splits are the source of the manifest's shard list.
type journal struct {
	Format  string          `json:"format"`
	Version int             `json:"version"`
	Job     string          `json:"job"`      // jobDesc fingerprint
	Desc    *jobDesc        `json:"job_desc"` // to say what changed when Job differs
	Created string          `json:"created"`  // when the job first started, RFC 3339
	Splits  []*journalSplit `json:"splits"`

	key string // its store key; "" when not persisted
}

// journalSplit is one split's progress: its first Docs documents, TextBytes of text, are
// in Shards.
type journalSplit struct {
	Split     string             `json:"split"`
	Docs      int64              `json:"docs"`
	TextBytes int64              `json:"text_bytes"`
	Shards    []shards.ShardInfo `json:"shards"` // committed, in order; prefixes relative to the dataset directory
	Done      bool               `json:"done,omitempty"`
	Read      *readCounts        `json:"read,omitempty"` // what reading the split counted, once Done
}

// readCounts are the reader's counts of a finished split, kept so that a resumed run's
// stats still cover a split it does not read again.
type readCounts struct {
	Empty       int64                 `json:"empty"`
	Bad         int64                 `json:"bad"`
	Filtered    int64                 `json:"filtered"`
	InvalidUTF8 int64                 `json:"invalid_utf8"`
	BytesIn     int64                 `json:"bytes_in"`
	Truncated   int64                 `json:"truncated,omitempty"`
	UnreadBytes int64                 `json:"unread_bytes,omitempty"`
	BadRecords  *prep.BadRecordReport `json:"bad_records,omitempty"`
}

func newJournal(r *TokenizeRun, desc *jobDesc, job string, created time.Time) *journal {
	j := &journal{Format: journalFormat, Version: journalVersion, Job: job, Desc: desc, Created: created.UTC().Format(time.RFC3339)}
	for _, sp := range r.splits() {
		j.Splits = append(j.Splits, &journalSplit{Split: sp.Split, Shards: []shards.ShardInfo{}})
	}
	return j
}

// journalKey is the journal's key in the run's store.
func (r *TokenizeRun) journalKey() string {
	if d := trimDir(r.Dir); d != "" {
		return d + "/" + JournalName
	}
	return JournalName
}

// save writes the journal atomically (a no-op when it is not persisted).
func (j *journal) save(ctx context.Context, st storage.Store) error {
	if j.key == "" {
		return nil
	}
	data, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", JournalName, err)
	}
	w, err := st.Create(ctx, j.key)
	if err != nil {
		return fmt.Errorf("create %s in %s: %w", j.key, st, err)
	}
	defer w.Abort()
	if _, err := w.Write(append(data, '\n')); err != nil {
		return fmt.Errorf("write %s in %s: %w", j.key, st, err)
	}
	if err := w.Commit(); err != nil {
		return fmt.Errorf("commit %s in %s: %w", j.key, st, err)
	}
	return nil
}

// errBadJournal marks a journal that is there but cannot be used as it is.
var errBadJournal = errors.New("unreadable journal")

// loadJournal reads key. A missing journal matches storage.ErrNotExist; a garbled one
// errBadJournal; anything else is a store error.
func loadJournal(ctx context.Context, st storage.Store, key string) (*journal, error) {
	obj, err := st.Open(ctx, key)
	if err != nil {
		return nil, err
	}
	defer obj.Close()
	data, err := io.ReadAll(io.LimitReader(obj, maxJournalSize+1))
	if err != nil {
		return nil, fmt.Errorf("read %s in %s: %w", key, st, err)
	}
	if len(data) > maxJournalSize {
		return nil, fmt.Errorf("%w: larger than %d bytes", errBadJournal, maxJournalSize)
	}
	var j journal
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, fmt.Errorf("%w: %v", errBadJournal, err)
	}
	if j.Format != journalFormat || j.Version != journalVersion || j.Desc == nil {
		return nil, fmt.Errorf("%w: format %q version %d, want %q version %d", errBadJournal, j.Format, j.Version, journalFormat, journalVersion)
	}
	if _, err := time.Parse(time.RFC3339, j.Created); err != nil {
		return nil, fmt.Errorf("%w: created: %v", errBadJournal, err)
	}
	for _, s := range j.Splits {
		if s == nil {
			return nil, fmt.Errorf("%w: a null split", errBadJournal)
		}
	}
	return &j, nil
}

// resumeJournal returns the journal the run continues: the stored one, if it belongs to
// the same job, with every shard that no longer verifies dropped (with the shards after
// it in its split); otherwise a new one (restarted says why an existing one was not
// used). The returned journal has been saved, so a kill from here on resumes from it.
func (r *TokenizeRun) resumeJournal(ctx context.Context, desc *jobDesc, job string, dtype shards.DType, workers int, start time.Time, startOver bool, log *slog.Logger) (j *journal, restarted string, err error) {
	key := r.journalKey()
	old, err := loadJournal(ctx, r.Store, key)
	switch {
	case errors.Is(err, storage.ErrNotExist):
		old = nil
	case errors.Is(err, errBadJournal):
		restarted = fmt.Sprintf("its %s is unusable (%v)", JournalName, err)
		old = nil
	case err != nil:
		return nil, "", err
	case startOver:
		restarted = "--overwrite replaces a complete dataset of the same job"
		old = nil
	case old.Job != job || len(old.Splits) != len(desc.Splits):
		restarted = "the job changed: " + old.Desc.changes(desc)
		old = nil
	}
	if err == nil || errors.Is(err, errBadJournal) {
		// An earlier run died here: remove what its writers left half-written (nobody
		// else writes this dataset while a run does).
		for _, prefix := range []string{joinKey(r.Dir, r.Name+"_"), key} {
			if n, err := storage.Sweep(ctx, r.Store, prefix, 0); err != nil {
				log.Debug("no sweep of half-written files", "prefix", prefix, "err", err)
			} else if n > 0 {
				log.Info("removed files a killed run left half-written", "prefix", prefix, "count", n)
			}
		}
	}
	if old == nil {
		j = newJournal(r, desc, job, start)
	} else {
		j = old
		j.Desc = desc
		if err := r.verifyJournaled(ctx, j, dtype, workers, log); err != nil {
			return nil, "", err
		}
	}
	j.key = key
	if err := j.save(ctx, r.Store); err != nil {
		return nil, "", err
	}
	return j, restarted, nil
}

// verifyJournaled re-reads every journaled shard (on up to workers goroutines) and cuts
// each split's shard list before the first one that is missing, changed or not where the
// job would put it.
func (r *TokenizeRun) verifyJournaled(ctx context.Context, j *journal, dtype shards.DType, workers int, log *slog.Logger) error {
	type task struct {
		split, shard int
		problem      string
		err          error
	}
	var tasks []*task
	for i, s := range j.Splits {
		for k := range s.Shards {
			tasks = append(tasks, &task{split: i, shard: k})
		}
	}
	sem := make(chan struct{}, max(workers, 1))
	var wg sync.WaitGroup
	for _, t := range tasks {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			s := j.Splits[t.split]
			info := s.Shards[t.shard]
			if want := ShardPrefix(r.Name, s.Split, t.shard); info.Prefix != want || info.Split != s.Split {
				t.problem = fmt.Sprintf("journaled as %s (split %q), expected %s", info.Prefix, info.Split, want)
				return
			}
			probs, err := shards.VerifyShard(ctx, r.Store, joinKey(r.Dir, info.Prefix), &info, dtype)
			if err != nil {
				t.err = err
				return
			}
			for _, p := range probs {
				if !p.Warning {
					t.problem = p.String()
					return
				}
			}
		}()
	}
	wg.Wait()
	cut := make([]int, len(j.Splits))
	for i, s := range j.Splits {
		cut[i] = len(s.Shards)
	}
	for _, t := range tasks {
		if t.err != nil {
			return fmt.Errorf("verify journaled shards: %w", t.err)
		}
		if t.problem != "" && t.shard < cut[t.split] {
			cut[t.split] = t.shard
			log.Warn("a journaled shard does not verify: redoing it and the rest of its split",
				"shard", j.Splits[t.split].Shards[t.shard].Prefix, "problem", t.problem)
		}
	}
	for i, s := range j.Splits {
		var docs int64
		for _, info := range s.Shards[:cut[i]] {
			docs += info.Documents
		}
		if cut[i] < len(s.Shards) || docs != s.Docs {
			// The text bytes of the shards kept are not known: the stats of this
			// split will count only what this run encodes.
			s.Shards, s.Docs, s.TextBytes, s.Done, s.Read = s.Shards[:cut[i]], docs, 0, false, nil
		}
	}
	return nil
}

// kept counts the journaled shards and their documents.
func (j *journal) kept() (n int, docs int64) {
	for _, s := range j.Splits {
		n += len(s.Shards)
		docs += s.Docs
	}
	return n, docs
}

// trimDir normalizes a dataset directory key as shards does: "" and "." are the root.
func trimDir(dir string) string {
	for len(dir) > 0 && dir[0] == '/' {
		dir = dir[1:]
	}
	for len(dir) > 0 && dir[len(dir)-1] == '/' {
		dir = dir[:len(dir)-1]
	}
	if dir == "." {
		return ""
	}
	return dir
}

// joinKey is the key of name in the dataset directory dir.
func joinKey(dir, name string) string {
	if d := trimDir(dir); d != "" {
		return d + "/" + name
	}
	return name
}
