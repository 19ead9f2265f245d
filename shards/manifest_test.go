package shards

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"gptkit/storage"
)

func TestManifestRoundTrip(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	want := writeDataset(t, st, "ds", testTokenizer(50257), Uint16, goldenU16, goldenU16[:2])
	m, err := ReadManifest(ctx, st, "ds")
	if err != nil {
		t.Fatal(err)
	}
	if m.ETag == "" || len(m.Shards) != 2 || m.Shards[0].Prefix != "part0_text_document" || m.Documents != 6 || m.Tokens != want.Tokens {
		t.Fatalf("read back %+v", m)
	}
	var raw map[string]any
	if err := json.Unmarshal(st.read(t, "ds/manifest.json"), &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"format", "version", "tokenizer", "dtype", "source", "shards", "documents", "tokens"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("manifest.json lacks %q", k)
		}
	}
	if raw["dtype"] != "uint16" || raw["format"] != "gptkit-shards" {
		t.Errorf("dtype %v format %v", raw["dtype"], raw["format"])
	}
	shard := raw["shards"].([]any)[0].(map[string]any)
	for _, k := range []string{"prefix", "documents", "tokens", "bin_sha256", "idx_sha256"} {
		if _, ok := shard[k]; !ok {
			t.Errorf("shard entry lacks %q", k)
		}
	}
	tok := raw["tokenizer"].(map[string]any)
	for _, k := range []string{"name", "fingerprint", "vocab_size", "eod_id"} {
		if _, ok := tok[k]; !ok {
			t.Errorf("tokenizer lacks %q", k)
		}
	}

	// A second new manifest loses (IfAbsent); an update from the version read wins once
	// (m then holds the version it wrote: see TestWriteManifestTwice).
	if err := WriteManifest(ctx, st, "ds", NewManifest(m.Tokenizer, m.DType, nil)); !errors.Is(err, storage.ErrPrecondition) {
		t.Fatalf("second new manifest: %v", err)
	}
	stale := *m
	m.Source["note"] = "updated"
	if err := WriteManifest(ctx, st, "ds", m); err != nil {
		t.Fatal(err)
	}
	if err := WriteManifest(ctx, st, "ds", &stale); !errors.Is(err, storage.ErrPrecondition) {
		t.Fatalf("update from a stale version: %v", err)
	}
}

func TestManifestValidation(t *testing.T) {
	good := func() *Manifest {
		m := NewManifest(testTokenizer(50257), Uint16, nil)
		m.Add("", ShardInfo{Prefix: "a", Documents: 2, Tokens: 5, BinSHA256: strings.Repeat("a", 64), IdxSHA256: strings.Repeat("b", 64)})
		return m
	}
	if err := good().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		edit    func(m *Manifest)
		mention string
	}{
		{"format", func(m *Manifest) { m.Format = "other" }, "format"},
		{"version", func(m *Manifest) { m.Version = 2 }, "upgrade"},
		{"fingerprint", func(m *Manifest) { m.Tokenizer.Fingerprint = "" }, "fingerprint"},
		{"vocab", func(m *Manifest) { m.Tokenizer.VocabSize = 0 }, "vocab_size"},
		{"eod", func(m *Manifest) { m.Tokenizer.EODID = 50257 }, "eod_id"},
		{"dtype", func(m *Manifest) { m.DType = Int64 }, "dtype"},
		{"dtype too small", func(m *Manifest) { m.Tokenizer.VocabSize = 100277; m.Tokenizer.EODID = 0 }, "cannot hold"},
		{"absolute prefix", func(m *Manifest) { m.Shards[0].Prefix = "/etc/a" }, "relative"},
		{"dotdot prefix", func(m *Manifest) { m.Shards[0].Prefix = "../a" }, "relative"},
		{"duplicate", func(m *Manifest) {
			m.Add("", m.Shards[0])
		}, "repeats"},
		{"sha", func(m *Manifest) { m.Shards[0].BinSHA256 = "xyz" }, "sha256"},
		{"totals", func(m *Manifest) { m.Tokens++ }, "totals"},
		{"records count", func(m *Manifest) { m.Records = []SplitRecords{{Bad: -1}} }, "records[0] (split \"\"): negative"},
		{"records reason", func(m *Manifest) {
			m.Records = []SplitRecords{{Split: "val", BadReasons: map[string]int64{"invalid_json": -2}}}
		}, "bad_reasons"},
		{"records split", func(m *Manifest) { m.Records = []SplitRecords{{Split: "../x"}} }, "records[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := good()
			tc.edit(m)
			err := m.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.mention) {
				t.Fatalf("Validate = %v, want a mention of %q", err, tc.mention)
			}
		})
	}
	if _, err := ParseManifest("m.json", []byte(`{"format": "gptkit-shards",`)); !errors.Is(err, ErrBadManifest) || !strings.Contains(err.Error(), "m.json") {
		t.Fatalf("bad JSON: %v", err)
	}
	// An empty or cut manifest says so (it said "EOF: a field of the manifest has a
	// value it cannot hold"); version 0 is no newer gptkit's.
	for _, tc := range []struct{ data, want string }{
		{"", "the manifest is empty (0 bytes)"},
		{" \n", "the manifest is empty (2 bytes)"},
		{`{"format": "gptkit-shards",`, "byte 27: the manifest's JSON ends in the middle (27 bytes)"},
		{`{"format": "gptkit-shards", "version": 0}`, "version is 0, want 1 (not a manifest a gptkit wrote?)"},
		{`{"format": "gptkit-shards", "version": 7}`, "a newer gptkit wrote it? upgrade"},
		{`{"format": "gptkit-shards", "version": 1}`, "dtype is missing, want uint16 or int32"}, // was "dtype is dtype(0)"
	} {
		_, err := ParseManifest("m.json", []byte(tc.data))
		if !errors.Is(err, ErrBadManifest) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("manifest %q: %v, want %q", tc.data, err, tc.want)
		}
		if len(tc.data) < 30 && err != nil && !strings.Contains(err.Error(), "truncated") {
			t.Errorf("manifest %q: %v does not say it is truncated", tc.data, err)
		}
	}
	if _, err := ReadManifest(context.Background(), newTestStore(t), "nothing"); !errors.Is(err, ErrMissing) {
		t.Fatalf("missing manifest: %v", err)
	}
}

func TestManifestAddRelative(t *testing.T) {
	m := NewManifest(testTokenizer(10), Uint16, nil)
	if err := m.Add("a/b", ShardInfo{Prefix: "a/b/c_text_document"}); err != nil || m.Shards[0].Prefix != "c_text_document" {
		t.Fatalf("Add: %v %+v", err, m.Shards)
	}
	if err := m.Add("a/b", ShardInfo{Prefix: "a/bc/x"}); err == nil {
		t.Fatal("Add accepted a shard outside the directory")
	}
}

func TestDataset(t *testing.T) {
	ctx := context.Background()
	for _, remote := range []bool{false, true} {
		st := newTestStore(t)
		shardDocs := [][][]int{goldenU16, {}, goldenU16[1:3], {{9, 9}}}
		writeDataset(t, st, "ds", testTokenizer(65536), Uint16, shardDocs...)
		st.remote = remote
		d, err := OpenDataset(ctx, st, "ds", t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		var all [][]int
		for _, s := range shardDocs {
			all = append(all, s...)
		}
		if d.Len() != int64(len(all)) || d.NumShards() != 4 || d.DType() != Uint16 {
			t.Fatalf("len %d shards %d", d.Len(), d.NumShards())
		}
		for i, want := range all {
			if got := d.Tokens(int64(i)); !equalInts(got, want) || d.Size(int64(i)) != len(want) {
				t.Errorf("remote=%v doc %d = %v, want %v", remote, i, got, want)
			}
		}
		if s, j := d.Locate(5); s != 2 || j != 1 {
			t.Errorf("Locate(5) = %d, %d", s, j)
		}
		d.Close()
	}
}

// TestDatasetCountMismatch: a manifest whose counts disagree with the shard is refused.
func TestDatasetCountMismatch(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	m := writeDataset(t, st, "ds", testTokenizer(50257), Uint16, goldenU16)
	m2, _ := ReadManifest(ctx, st, "ds")
	m2.Shards[0].Documents++
	m2.Documents++
	if err := WriteManifest(ctx, st, "ds", m2); err != nil {
		t.Fatal(err)
	}
	_, err := OpenDataset(ctx, st, "ds", "")
	if !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), "the manifest says") {
		t.Fatalf("OpenDataset = %v", err)
	}
	_ = m
}

// TestManifestSplit: shard entries may name their split; a manifest without the field (as
// every manifest before splits) stays valid and reads as unsplit.
func TestManifestSplit(t *testing.T) {
	sha := strings.Repeat("a", 64)
	m := NewManifest(testTokenizer(50257), Uint16, nil)
	m.Add("", ShardInfo{Prefix: "d_text_document", Documents: 2, Tokens: 5, BinSHA256: sha, IdxSHA256: sha})
	m.Add("", ShardInfo{Prefix: "d_val_text_document", Split: "val", Documents: 1, Tokens: 2, BinSHA256: sha, IdxSHA256: sha})
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), `"split"`); n != 1 {
		t.Fatalf("want one split field (the unsplit entry omits it), got %d in %s", n, data)
	}
	back, err := ParseManifest("m.json", data)
	if err != nil {
		t.Fatal(err)
	}
	if back.Shards[0].Split != "" || back.Shards[1].Split != "val" {
		t.Fatalf("splits read back as %q, %q", back.Shards[0].Split, back.Shards[1].Split)
	}
	// Data after the object (an edit, two files run together) is refused, naming
	// where it starts; whitespace is not data; a field of the wrong type says so.
	if _, err := ParseManifest("m.json", append(append([]byte{}, data...), "\n garbage\n"...)); !errors.Is(err, ErrBadManifest) ||
		!strings.Contains(err.Error(), fmt.Sprintf("byte %d", len(data)+2)) || !strings.Contains(err.Error(), "data after") {
		t.Errorf("a manifest with data after it: %v", err)
	}
	if _, err := ParseManifest("m.json", append(append([]byte{}, data...), " \r\n\n"...)); err != nil {
		t.Errorf("a manifest with white space after it: %v", err)
	}
	if _, err := ParseManifest("m.json", []byte(strings.Replace(string(data), `"dtype":"uint16"`, `"dtype":5`, 1))); err == nil || !strings.Contains(err.Error(), "wrong type") {
		t.Errorf("a dtype of the wrong type: %v", err)
	}
	old := strings.Replace(string(data), `"split":"val",`, "", 1)
	if back, err := ParseManifest("old.json", []byte(old)); err != nil || back.Shards[1].Split != "" {
		t.Fatalf("a manifest without split fields: %v", err)
	}
	for _, bad := range []string{"a/b", "..", "val ", "vål", strings.Repeat("x", 65)} {
		m.Shards[1].Split = bad
		if err := m.Validate(); err == nil || !strings.Contains(err.Error(), "split") {
			t.Errorf("split %q: Validate = %v", bad, err)
		}
	}
}

// TestSumRecords: the parts' counts add up split by split, in the order the splits
// first appear; a part without them makes the sum unknown (nil).
func TestSumRecords(t *testing.T) {
	a := &Manifest{Records: []SplitRecords{{Split: "", Bad: 1, Empty: 2, BadReasons: map[string]int64{"invalid_json": 1}}, {Split: "val", Filtered: 3}}}
	b := &Manifest{Records: []SplitRecords{{Split: "val", Filtered: 1, InvalidUTF8: 4, BadReasons: map[string]int64{"invalid_utf8": 4}}, {Split: "", Bad: 2, BadReasons: map[string]int64{"invalid_json": 2}}}}
	got := SumRecords([]*Manifest{a, b})
	want := []SplitRecords{
		{Split: "", Bad: 3, Empty: 2, BadReasons: map[string]int64{"invalid_json": 3}},
		{Split: "val", Filtered: 4, InvalidUTF8: 4, BadReasons: map[string]int64{"invalid_utf8": 4}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("SumRecords: %+v, want %+v", got, want)
	}
	if a.Records[0].Bad != 1 || a.Records[0].BadReasons["invalid_json"] != 1 {
		t.Fatalf("SumRecords changed its input: %+v", a.Records[0])
	}
	if got := SumRecords([]*Manifest{a, {}}); got != nil {
		t.Fatalf("SumRecords with a part without records: %+v, want nil", got)
	}
}

// A manifest written, changed and written again with the same *Manifest: the second
// write failed its precondition ("the key already exists (IfAbsent)"), as WriteManifest
// left m.ETag empty, and callers had to ReadManifest again first. A version another
// writer committed in between still fails it.
func TestWriteManifestTwice(t *testing.T) {
	ctx := context.Background()
	dirStore, err := storage.Open(ctx, t.TempDir(), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range []storage.Store{newTestStore(t), dirStore} {
		m := NewManifest(testTokenizer(50257), Uint16, map[string]any{"command": "first"})
		if err := WriteManifest(ctx, st, "ds", m); err != nil {
			t.Fatal(err)
		}
		if m.ETag == "" {
			t.Errorf("%s: WriteManifest left m.ETag empty", st)
		}
		m.Source["command"] = "second"
		if err := WriteManifest(ctx, st, "ds", m); err != nil {
			t.Fatalf("%s: the second write of the same manifest: %v", st, err)
		}
		got, err := ReadManifest(ctx, st, "ds")
		if err != nil || got.Source["command"] != "second" || got.ETag != m.ETag {
			t.Fatalf("%s: read back %v (etag %q, written %q), %v", st, got.Source, got.ETag, m.ETag, err)
		}
		other := NewManifest(testTokenizer(50257), Uint16, map[string]any{"command": "another writer"})
		other.ETag = got.ETag
		if err := WriteManifest(ctx, st, "ds", other); err != nil {
			t.Fatal(err)
		}
		m.Source["command"] = "third"
		if err := WriteManifest(ctx, st, "ds", m); !errors.Is(err, storage.ErrPrecondition) {
			t.Errorf("%s: a write over another writer's version: %v, want ErrPrecondition", st, err)
		}
	}
}
