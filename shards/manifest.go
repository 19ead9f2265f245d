package shards

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path"
	"strings"
	"time"

	"gptkit/internal/redact"
	"gptkit/storage"
)

// A dataset is a directory (a key prefix of a Store) holding shards and manifest.json,
// which is written last. Only the shards a manifest names exist for readers: a crashed
// writer's leftovers are ignored, and a half-written dataset has no manifest.
const (
	// ManifestName is the manifest's file name in the dataset directory.
	ManifestName = "manifest.json"
	// ManifestFormat is the manifest's "format" field.
	ManifestFormat = "gptkit-shards"
	// ManifestVersion is the manifest version this package writes and reads.
	ManifestVersion = 1

	maxManifestSize = 256 << 20
)

// Manifest lists a dataset's shards and how they were made.
type Manifest struct {
	Format    string        `json:"format"`
	Version   int           `json:"version"`
	Tokenizer TokenizerInfo `json:"tokenizer"`
	DType     DType         `json:"dtype"`
	Documents int64         `json:"documents"` // sum over shards
	Tokens    int64         `json:"tokens"`    // sum over shards
	// Source is free-form provenance: inputs, command, created time, ... (and
	// SourceTokenizerFiles).
	Source map[string]any `json:"source,omitempty"`
	// Part, in the manifest of one part of a partitioned run (see PartDir), says which
	// part of which run it is; nil in any other dataset, a merged one included.
	Part *PartInfo `json:"part,omitempty"`
	// Records counts, split by split, the input records the run that made the dataset
	// read and wrote no document for (or wrote repaired): a rerun that finds the
	// dataset complete reports them, and checks them against its error rate, as the
	// first run did. Summed over the parts in a merged manifest. Nil in a manifest made
	// otherwise or by an older gptkit (then unknown).
	Records []SplitRecords `json:"records,omitempty"`
	Shards  []ShardInfo    `json:"shards"`

	// ETag is the version ReadManifest read, for updating it with WriteManifest; it is not
	// part of the file.
	ETag string `json:"-"`
}

// SplitRecords are one split's counts in Manifest.Records.
type SplitRecords struct {
	Split       string `json:"split"`
	Empty       int64  `json:"empty"`        // empty documents dropped
	Bad         int64  `json:"bad"`          // bad records skipped
	Filtered    int64  `json:"filtered"`     // records of another subset, dropped
	InvalidUTF8 int64  `json:"invalid_utf8"` // documents kept with invalid UTF-8 replaced
	Truncated   int64  `json:"truncated"`    // damaged compressed streams kept up to the damage
	// BadReasons counts by reason the bad records, the documents kept with invalid
	// UTF-8 and the damaged streams (prep.BadRecordReport's counts). (The bytes not
	// read after damage are not kept: where frames are decoded ahead in parallel, the
	// count depends on how far they got, and a manifest must not.)
	BadReasons map[string]int64 `json:"bad_reasons,omitempty"`
}

// add adds o's counts to r's (the same split in two parts of a run).
func (r *SplitRecords) add(o SplitRecords) {
	r.Empty += o.Empty
	r.Bad += o.Bad
	r.Filtered += o.Filtered
	r.InvalidUTF8 += o.InvalidUTF8
	r.Truncated += o.Truncated
	for reason, n := range o.BadReasons {
		if r.BadReasons == nil {
			r.BadReasons = map[string]int64{}
		}
		r.BadReasons[reason] += n
	}
}

// SumRecords adds up the records of several manifests (the parts of a run) split by
// split, in the order the splits first appear; nil if any of them has none (unknown).
func SumRecords(ms []*Manifest) []SplitRecords {
	var out []SplitRecords
	for _, m := range ms {
		if m.Records == nil {
			return nil
		}
		for _, r := range m.Records {
			i := 0
			for i < len(out) && out[i].Split != r.Split {
				i++
			}
			if i == len(out) {
				out = append(out, SplitRecords{Split: r.Split})
			}
			out[i].add(r)
		}
	}
	return out
}

// TokenizerInfo identifies the tokenizer that made a dataset's ids.
type TokenizerInfo struct {
	Name string `json:"name"`
	// Fingerprint identifies the exact vocabulary and rules; datasets merge only when
	// their fingerprints are equal.
	Fingerprint string `json:"fingerprint"`
	VocabSize   int    `json:"vocab_size"`
	EODID       int    `json:"eod_id"` // -1: none
}

// NewManifest starts an empty manifest; source may be nil (NewSource fills the usual fields).
func NewManifest(tok TokenizerInfo, dtype DType, source map[string]any) *Manifest {
	return &Manifest{Format: ManifestFormat, Version: ManifestVersion, Tokenizer: tok, DType: dtype, Source: source, Shards: []ShardInfo{}}
}

// SourceTokenizerFiles is the key of a manifest's source that lists the tokenizer
// files the command that made the dataset stored beside it (chars.json, a
// tokenizer.json, ...), which a later command may replace or remove.
const SourceTokenizerFiles = "tokenizer_files"

// NewSource is provenance for a manifest: the inputs, the command line and the time.
func NewSource(inputs []string, command string) map[string]any {
	return map[string]any{"inputs": inputs, "command": command, "created": time.Now().UTC().Format(time.RFC3339)}
}

// Add appends a shard written by a Writer under dir (the manifest's directory),
// making its prefix relative to dir, and updates the totals.
func (m *Manifest) Add(dir string, info ShardInfo) error {
	rel := info.Prefix
	if d := cleanDir(dir); d != "" {
		var ok bool
		if rel, ok = strings.CutPrefix(info.Prefix, d+"/"); !ok {
			return fmt.Errorf("shards: shard %s is not inside the dataset directory %s", info.Prefix, dir)
		}
	}
	info.Prefix = rel
	m.Shards = append(m.Shards, info)
	m.Documents += info.Documents
	m.Tokens += info.Tokens
	return nil
}

// cleanDir normalizes a dataset directory key: "" and "." are the store's root.
func cleanDir(dir string) string {
	dir = strings.Trim(dir, "/")
	if dir == "." {
		return ""
	}
	return dir
}

// join is the store key of name in dir.
func join(dir, name string) string {
	if d := cleanDir(dir); d != "" {
		return d + "/" + name
	}
	return name
}

// ManifestKey is the key of dir's manifest.
func ManifestKey(dir string) string { return join(dir, ManifestName) }

// ShardKey is the key prefix (without .bin/.idx) of a manifest entry of dir.
func ShardKey(dir string, s ShardInfo) string { return join(dir, s.Prefix) }

// Validate checks the manifest's fields and totals; every problem is reported, joined.
func (m *Manifest) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if m.Format != ManifestFormat {
		bad("format is %q, want %q", m.Format, ManifestFormat)
	}
	if m.Version != ManifestVersion {
		if m.Version > ManifestVersion {
			bad("version is %d; this gptkit reads version %d (a newer gptkit wrote it? upgrade)", m.Version, ManifestVersion)
		} else {
			bad("version is %d, want %d (not a manifest a gptkit wrote?)", m.Version, ManifestVersion)
		}
	}
	t := m.Tokenizer
	if t.Name == "" {
		bad("tokenizer.name is empty")
	}
	if t.Fingerprint == "" {
		bad("tokenizer.fingerprint is empty")
	}
	if t.VocabSize <= 0 {
		bad("tokenizer.vocab_size is %d", t.VocabSize)
	}
	if t.EODID < -1 || (t.VocabSize > 0 && t.EODID >= t.VocabSize) {
		bad("tokenizer.eod_id %d is outside the vocabulary [0,%d) (-1 means none)", t.EODID, t.VocabSize)
	}
	if m.DType == 0 {
		bad("dtype is missing, want uint16 or int32")
	} else if !m.DType.writable() {
		bad("dtype is %s, want uint16 or int32", m.DType)
	} else if int64(t.VocabSize)-1 > m.DType.MaxID() {
		bad("dtype %s cannot hold a vocabulary of %d ids", m.DType, t.VocabSize)
	}
	for i, r := range m.Records {
		if err := CheckSplitName(r.Split); err != nil {
			bad("records[%d]: %v", i, err)
		}
		if min(r.Empty, r.Bad, r.Filtered, r.InvalidUTF8, r.Truncated) < 0 {
			bad("records[%d] (split %q): negative counts", i, r.Split)
		}
		for reason, n := range r.BadReasons {
			if n < 0 {
				bad("records[%d] (split %q): bad_reasons[%q] is negative", i, r.Split, reason)
			}
		}
	}
	var docs, toks int64
	overflow := false
	seen := map[string]int{}
	for i, s := range m.Shards {
		if err := checkRelPrefix(s.Prefix); err != nil {
			bad("shards[%d]: %v", i, err)
		}
		if j, dup := seen[s.Prefix]; dup {
			bad("shards[%d]: prefix %q repeats shards[%d]", i, s.Prefix, j)
		}
		seen[s.Prefix] = i
		if err := CheckSplitName(s.Split); err != nil {
			bad("shards[%d] %s: %v", i, s.Prefix, err)
		}
		if s.Documents < 0 || s.Tokens < 0 {
			bad("shards[%d] %s: negative counts", i, s.Prefix)
		}
		if !isSHA256(s.BinSHA256) || !isSHA256(s.IdxSHA256) {
			bad("shards[%d] %s: bin_sha256 and idx_sha256 must be 64 lowercase hex digits", i, s.Prefix)
		}
		if st := s.Stripe; st != nil && (st.Input < 0 || st.Stripe < 0) {
			bad("shards[%d] %s: stripe %d of input %d: both must be at least 0", i, s.Prefix, st.Stripe, st.Input)
		}
		if docs > math.MaxInt64-max(s.Documents, 0) || toks > math.MaxInt64-max(s.Tokens, 0) {
			if !overflow {
				bad("shards[%d] %s: the shards' documents or tokens add up to more than an int64 holds (9.2e18): the counts are corrupt", i, s.Prefix)
			}
			overflow = true
			continue
		}
		docs += s.Documents
		toks += s.Tokens
	}
	if m.Part != nil {
		errs = append(errs, m.Part.validate(m.Shards)...)
	}
	if !overflow && (docs != m.Documents || toks != m.Tokens) {
		bad("totals say %d documents and %d tokens, the shards add up to %d and %d", m.Documents, m.Tokens, docs, toks)
	}
	return errors.Join(errs...)
}

// CheckSplitName reports whether split is a valid ShardInfo.Split: empty (an unsplit
// dataset's training data), or up to 64 ASCII letters, digits, '-' and '_' ("train",
// "val", "test", "heldout-2"), so that it can be part of a shard's file name.
func CheckSplitName(split string) error {
	if len(split) > 64 {
		return fmt.Errorf("split %q is longer than 64 bytes", split)
	}
	for _, c := range split {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return fmt.Errorf("split %q may hold only ASCII letters, digits, '-' and '_'", split)
		}
	}
	return nil
}

func checkRelPrefix(p string) error {
	if p == "" || strings.HasPrefix(p, "/") || path.Clean(p) != p || p == "." || p == ".." || strings.HasPrefix(p, "../") {
		return fmt.Errorf("prefix %q must be a clean path relative to the manifest's directory", p)
	}
	return nil
}

// ReadManifest reads and validates dir's manifest.json. The returned manifest's ETag is
// the version read (taken before reading, so a concurrent update makes a later
// WriteManifest fail rather than overwrite it).
func ReadManifest(ctx context.Context, st storage.Store, dir string) (*Manifest, error) {
	key := ManifestKey(dir)
	name := keyName(st, key)
	info, err := st.Stat(ctx, key)
	if err != nil {
		if errors.Is(err, storage.ErrNotExist) {
			return nil, &FormatError{File: name, Offset: -1, Msg: "does not exist", Err: ErrMissing,
				Hint: "the directory holds no finished dataset: the manifest is written last, so the stage that makes it did not complete (re-run it)"}
		}
		return nil, fmt.Errorf("shards: stat %s: %w", name, err)
	}
	obj, err := st.Open(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("shards: open %s: %w", name, err)
	}
	defer obj.Close()
	data, err := io.ReadAll(io.LimitReader(obj, maxManifestSize+1))
	if err != nil {
		return nil, fmt.Errorf("shards: read %s: %w", name, err)
	}
	if len(data) > maxManifestSize {
		return nil, formatErr(ErrBadManifest, name, -1, "", "", "larger than %d bytes", maxManifestSize)
	}
	m, err := ParseManifest(name, data)
	if err != nil {
		return nil, err
	}
	m.ETag = info.ETag
	return m, nil
}

// ParseManifest decodes and validates manifest bytes; name is used in errors.
func ParseManifest(name string, data []byte) (*Manifest, error) {
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&m); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		off, hint := int64(-1), "a field of the manifest has a value it cannot hold: restore it, or re-run the stage that wrote the dataset"
		switch {
		case len(bytes.TrimSpace(data)) == 0:
			// An empty file is no field's fault: a copy or write cut short.
			return nil, formatErr(ErrBadManifest, name, 0, "", "the manifest is truncated (an interrupted copy or write): restore it, or re-run the stage that wrote the dataset",
				"the manifest is empty (%d bytes)", len(data))
		case errors.Is(err, io.ErrUnexpectedEOF):
			return nil, formatErr(ErrBadManifest, name, int64(len(data)), "", "the manifest is truncated (an interrupted copy or write): restore it, or re-run the stage that wrote the dataset",
				"the manifest's JSON ends in the middle (%d bytes)", len(data))
		case errors.As(err, &se):
			off, hint = se.Offset, "the manifest is not valid JSON: restore it, or re-run the stage that wrote the dataset"
		case errors.As(err, &te):
			off, hint = te.Offset, "a field of the manifest has a value of the wrong type: restore it, or re-run the stage that wrote the dataset"
		}
		return nil, formatErr(ErrBadManifest, name, off, "", hint, "%v", err)
	}
	if off := dec.InputOffset(); len(bytes.TrimSpace(data[off:])) > 0 {
		// One JSON value: what follows it was not written by a writer of
		// datasets (an edit, two files run together).
		at := off + int64(len(data[off:])-len(bytes.TrimLeft(data[off:], " \t\r\n")))
		return nil, formatErr(ErrBadManifest, name, at, "", "the manifest is not valid JSON: restore it, or re-run the stage that wrote the dataset", "data after the manifest's JSON object")
	}
	if m.Shards == nil {
		m.Shards = []ShardInfo{}
	}
	if err := m.Validate(); err != nil {
		return nil, formatErr(ErrBadManifest, name, -1, "", "", "%s", strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	return &m, nil
}

// WriteManifest validates m and writes it as dir's manifest.json, the last step of making a
// dataset. With m.ETag empty the manifest must not exist yet (IfAbsent); otherwise it must
// still be the version m was read from, or written as (IfMatch). Losing either race is an
// error matching storage.ErrPrecondition. Once written, m.ETag is the written version's, so
// that m may be changed and written again.
func WriteManifest(ctx context.Context, st storage.Store, dir string, m *Manifest) error {
	key := ManifestKey(dir)
	if err := m.Validate(); err != nil {
		return fmt.Errorf("shards: write %s: %w: %s", keyName(st, key), ErrBadManifest, strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	stored := *m
	stored.Source = redactSource(m.Source)
	data, err := json.MarshalIndent(&stored, "", "  ")
	if err != nil {
		return fmt.Errorf("shards: encode %s: %w", keyName(st, key), err)
	}
	data = append(data, '\n')
	opt := storage.IfAbsent()
	if m.ETag != "" {
		opt = storage.IfMatch(m.ETag)
	}
	w, err := st.Create(ctx, key, opt)
	if err != nil {
		return fmt.Errorf("shards: create %s: %w", keyName(st, key), err)
	}
	defer w.Abort()
	if _, err := w.Write(data); err != nil {
		return fmt.Errorf("shards: write %s: %w", keyName(st, key), err)
	}
	if err := w.Commit(); err != nil {
		return fmt.Errorf("shards: commit %s: %w", keyName(st, key), err)
	}
	m.ETag = committedETag(ctx, st, key, data)
	return nil
}

// committedETag is the ETag of the manifest just committed at key with data, so that a
// later WriteManifest of the same *Manifest may replace it (the Writer does not say
// it): Stat's, taken before reading the object back, and kept only if the object still
// holds data. "" when that cannot be told (Stat or the read failed, or another writer
// committed since): a later write then fails its precondition rather than overwrite
// another writer's version (ReadManifest again first).
func committedETag(ctx context.Context, st storage.Store, key string, data []byte) string {
	info, err := st.Stat(ctx, key)
	if err != nil || info.ETag == "" {
		return ""
	}
	obj, err := st.Open(ctx, key)
	if err != nil {
		return ""
	}
	defer obj.Close()
	got, err := io.ReadAll(io.LimitReader(obj, int64(len(data))+1))
	if err != nil || !bytes.Equal(got, data) {
		return ""
	}
	return info.ETag
}

// redactSource is a copy of a manifest's source with the credentials of every URL in its
// strings redacted (a command line's --s3-endpoint http://key:SECRET@host, say): a
// manifest is shared with the data, and never carries a secret.
func redactSource(src map[string]any) map[string]any {
	if src == nil {
		return nil
	}
	var walk func(v any) any
	walk = func(v any) any {
		switch v := v.(type) {
		case string:
			return redact.String(v)
		case []string:
			return redact.Args(v)
		case []any:
			out := make([]any, len(v))
			for i, x := range v {
				out[i] = walk(x)
			}
			return out
		case map[string]any:
			out := make(map[string]any, len(v))
			for k, x := range v {
				out[k] = walk(x)
			}
			return out
		case map[string][]string:
			out := make(map[string][]string, len(v))
			for k, x := range v {
				out[k] = redact.Args(x)
			}
			return out
		}
		return v
	}
	return walk(src).(map[string]any)
}

func isSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
