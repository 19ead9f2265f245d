package shards

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"strings"
	"sync"
	"testing"

	"gptkit/storage"
)

// writePart writes part i of w in dir: one shard per split with docs, the split's shards
// named as a run names them.
func writePart(t testing.TB, st *testStore, dir string, i, w int, job string, docs map[string][][]int) *Manifest {
	t.Helper()
	pdir := join(dir, PartDir(i, w))
	m := NewManifest(testTokenizer(65536), Uint16, map[string]any{"inputs": []string{"in.jsonl"}, "created": fmt.Sprintf("2025-01-0%dT00:00:00Z", i+1), "command": fmt.Sprintf("run part %d", i)})
	m.Part = &PartInfo{Index: i, Count: w, Job: job, Splits: []string{"", "val"}}
	for _, split := range []string{"", "val"} {
		if len(docs[split]) == 0 {
			continue
		}
		info := writeShard(t, st, join(pdir, "d_"+split+"text_document"), Uint16, docs[split])
		info.Split = split
		if err := m.Add(pdir, info); err != nil {
			t.Fatal(err)
		}
	}
	if err := WriteManifest(context.Background(), st, pdir, m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestMergeParts(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	parts := []map[string][][]int{
		{"": {{1, 2}, {3}}},
		{"": {{4}}, "val": {{5, 5}}},
		{}, // a part that got no documents
		{"val": {{6}, {7, 7, 7}}},
	}
	for i, p := range parts[:3] {
		writePart(t, st, "ds", i, 4, "job-1", p)
	}
	// Part 3 was killed: a shard, no manifest.
	writeShard(t, st, join("ds", PartDir(3, 4)+"/d_valtext_document"), Uint16, [][]int{{6}})
	_, err := MergeParts(ctx, st, "ds", MergePartsOptions{})
	if !errors.Is(err, ErrPartMissing) || !strings.Contains(err.Error(), "part 3 (parts/part-00003-of-00004: started, unfinished") ||
		!strings.Contains(err.Error(), "--worker-index I, for I in 3") || !strings.Contains(err.Error(), "(part 0 ran: run part 0)") {
		t.Fatalf("merge with part 3 unfinished: %v", err)
	}
	if _, err := ReadManifest(ctx, st, "ds"); !errors.Is(err, ErrMissing) {
		t.Fatalf("a refused merge wrote a manifest: %v", err)
	}
	writePart(t, st, "ds", 3, 4, "job-1", parts[3])

	res, err := MergeParts(ctx, st, "ds", MergePartsOptions{Command: "shards merge-parts ds"})
	if err != nil {
		t.Fatal(err)
	}
	m := res.Manifest
	var prefixes []string
	for _, s := range m.Shards {
		prefixes = append(prefixes, s.Split+":"+s.Prefix)
	}
	want := []string{":parts/part-00000-of-00004/d_text_document", ":parts/part-00001-of-00004/d_text_document",
		"val:parts/part-00001-of-00004/d_valtext_document", "val:parts/part-00003-of-00004/d_valtext_document"}
	if strings.Join(prefixes, " ") != strings.Join(want, " ") {
		t.Fatalf("merged shards %v, want %v", prefixes, want)
	}
	if m.Part != nil || m.Documents != 6 || m.Source["job"] != "job-1" || m.Source["created"] != "2025-01-04T00:00:00Z" ||
		m.Source["command"] != "shards merge-parts ds" || m.Source["num_workers"] != 4 {
		t.Fatalf("merged manifest %+v", m)
	}
	d, err := OpenDataset(ctx, st, "ds", "")
	if err != nil {
		t.Fatal(err)
	}
	var got [][]int
	for i := range d.Len() {
		got = append(got, d.Tokens(i))
	}
	d.Close()
	if fmt.Sprint(got) != "[[1 2] [3] [4] [5 5] [6] [7 7 7]]" {
		t.Fatalf("merged documents %v", got)
	}
	if probs, err := Verify(ctx, st, "ds"); err != nil || len(probs) != 0 {
		t.Fatalf("verify: %v %v", probs, err)
	}
	// Again: nothing to do.
	if res, err := MergeParts(ctx, st, "ds", MergePartsOptions{}); err != nil || !res.Already {
		t.Fatalf("second merge: %+v %v", res, err)
	}
}

func TestMergePartsRefuses(t *testing.T) {
	ctx := context.Background()
	one := map[string][][]int{"": {{1}}}
	for _, tc := range []struct {
		name  string
		setup func(st *testStore)
		want  string
		is    error
	}{
		{"no parts", func(st *testStore) {}, "no parts in", ErrPartMissing},
		{"two runs", func(st *testStore) {
			writePart(t, st, "ds", 0, 2, "j", one)
			writePart(t, st, "ds", 0, 3, "j", one)
		}, "runs with 2 and 3 workers", nil},
		{"other job", func(st *testStore) {
			writePart(t, st, "ds", 0, 2, "j", one)
			writePart(t, st, "ds", 1, 2, "k", one)
		}, "parts 0 of job j; parts 1 of job k", ErrIncompatible},
		{"wrong index", func(st *testStore) {
			writePart(t, st, "ds", 0, 2, "j", one)
			m := writePart(t, st, "ds", 1, 2, "j", one)
			// A copy of part 1 put in part 0's place.
			data, _ := os.ReadFile(st.path("ds/" + PartDir(1, 2) + "/manifest.json"))
			_ = m
			os.WriteFile(st.path("ds/"+PartDir(0, 2)+"/manifest.json"), data, 0o666)
		}, "says it is part 1 of 2", ErrIncompatible},
		{"damaged", func(st *testStore) {
			writePart(t, st, "ds", 0, 2, "j", one)
			writePart(t, st, "ds", 1, 2, "j", one)
			os.Remove(st.path("ds/" + PartDir(1, 2) + "/d_text_document.bin"))
		}, "d_text_document.bin does not exist", ErrMissing},
		{"damaged .idx", func(st *testStore) {
			writePart(t, st, "ds", 0, 2, "j", one)
			writePart(t, st, "ds", 1, 2, "j", one)
			edit(t, st, "ds/"+PartDir(1, 2)+"/d_text_document.idx", func(b []byte) []byte { b[HeaderSize] ^= 0x40; return b })
		}, "part-00001-of-00002/d_text_document.idx: sha256 is", ErrChecksum},
		{"another shard's .idx", func(st *testStore) {
			writePart(t, st, "ds", 0, 2, "j", one)
			writePart(t, st, "ds", 1, 2, "j", map[string][][]int{"": {{1, 2}, {3}}})
			// Part 0's .idx (one document) in part 1's place, part 1's manifest
			// entry rewritten to match it by sha256: the counts still differ.
			data, _ := os.ReadFile(st.path("ds/" + PartDir(0, 2) + "/d_text_document.idx"))
			os.WriteFile(st.path("ds/"+PartDir(1, 2)+"/d_text_document.idx"), data, 0o666)
			pdir := "ds/" + PartDir(1, 2)
			m, err := ReadManifest(ctx, st, pdir)
			if err != nil {
				t.Fatal(err)
			}
			m.Shards[0].IdxSHA256 = sha256Hex(data)
			if err := WriteManifest(ctx, st, pdir, m); err != nil {
				t.Fatal(err)
			}
		}, "part-00001-of-00002/d_text_document.idx: byte 18 (n_seq): 1 documents, the manifest says 2", ErrMismatch},
		{"broken part manifest", func(st *testStore) {
			writePart(t, st, "ds", 0, 2, "j", one)
			writePart(t, st, "ds", 1, 2, "j", one)
			os.WriteFile(st.path("ds/"+PartDir(1, 2)+"/manifest.json"), []byte("{"), 0o666)
		}, "ds: part 1 of 2: ", nil},
		{"another dataset there", func(st *testStore) {
			writePart(t, st, "ds", 0, 1, "j", one)
			writeDataset(t, st, "ds", testTokenizer(65536), Uint16, [][]int{{9}})
		}, "was not merged from this run's parts", ErrExists},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newTestStore(t)
			tc.setup(st)
			_, err := MergeParts(ctx, st, "ds", MergePartsOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.want) || (tc.is != nil && !errors.Is(err, tc.is)) {
				t.Fatalf("got %v, want %q (%v)", err, tc.want, tc.is)
			}
			// Said once, however deep the cause (`shards merge-parts` prints it after
			// its own name without "shards: merge-parts"), and a file's error within
			// it without its "shards: ".
			if msg := err.Error(); !strings.HasPrefix(msg, "shards: merge-parts "+st.path("ds")+": ") || strings.Count(msg, "merge-parts") != 1 || strings.Contains(msg, "shards: "+st.path("")) {
				t.Errorf("names merge-parts other than once at its start, or shards before a file: %q", msg)
			}
		})
	}
	// Overwrite replaces another dataset's manifest.
	st := newTestStore(t)
	writePart(t, st, "ds", 0, 1, "j", one)
	writeDataset(t, st, "ds", testTokenizer(65536), Uint16, [][]int{{9}})
	if res, err := MergeParts(ctx, st, "ds", MergePartsOptions{Overwrite: true}); err != nil || res.Manifest.Documents != 1 || res.Manifest.Source["job"] != "j" {
		t.Fatalf("overwrite: %+v %v", res, err)
	}
	// --num-workers of another run than the one there names the one there.
	st = newTestStore(t)
	writePart(t, st, "ds", 0, 2, "j", one)
	writePart(t, st, "ds", 1, 2, "j", one)
	if _, err := MergeParts(ctx, st, "ds", MergePartsOptions{Count: 3}); err == nil || !strings.Contains(err.Error(), "merge with --num-workers 2") {
		t.Fatalf("count 3 over a run of 2: %v", err)
	}
}

func TestPartManifestValidation(t *testing.T) {
	m := NewManifest(testTokenizer(100), Uint16, nil)
	m.Part = &PartInfo{Index: 2, Count: 2, Splits: []string{"", ""}}
	m.Shards = []ShardInfo{{Prefix: "x", Split: "val", BinSHA256: strings.Repeat("0", 64), IdxSHA256: strings.Repeat("0", 64)}}
	err := m.Validate()
	for _, want := range []string{"part.index 2 is not in [0, part.count 2)", "part.job is empty", `"" repeats`, `split "val" is not among`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("validate: %v, want %q", err, want)
		}
	}
}

// TestPartParent: the dataset directory of a part's directory, and no other layout.
func TestPartParent(t *testing.T) {
	for dir, want := range map[string]string{
		"/data/c/parts/part-00001-of-00004":     "/data/c",
		"/data/c/parts/part-00001-of-00004/":    "/data/c",
		"s3://b/x/parts/part-00000-of-00002/":   "s3://b/x",
		"c/" + PartDir(3, 4):                    "c",
		PartDir(0, 2):                           ".",
		"/parts/part-00000-of-00002":            "/",
		"/data/c/parts/part-123456-of-200000":   "/data/c",
		"/data/c":                               "",
		"/data/c/parts":                         "",
		"/data/c/part-00001-of-00004":           "",
		"/data/c/other/part-00001-of-00004":     "",
		"/data/c/parts/part-00001-of-00004/x":   "",
		"/data/c/parts/part-1-of-4":             "",
		"/data/c/parts/part-00001-of-00004-old": "",
		"":                                      "",
	} {
		got, ok := PartParent(dir)
		if got != want || ok != (want != "") {
			t.Errorf("PartParent(%q) = %q, %v; want %q", dir, got, ok, want)
		}
	}
}

// TestMergePartsNamesRunChange: parts of two runs are refused naming what changed
// between them (their manifests' source.job_settings and job_inputs), not only "other
// inputs, tokenizer or settings".
func TestMergePartsNamesRunChange(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	one := map[string][][]int{"": {{1}}}
	settings := func(shardBytes int, params map[string]any) map[string]any {
		return map[string]any{"version": 1, "name": "corpus", "text_key": "text", "append_eod": true, "shard_bytes": shardBytes, "params": params}
	}
	for i, src := range []map[string]any{
		{"job_settings": settings(1000000, map[string]any{"lang": "en"}), "job_inputs": []string{"a.jsonl (10 bytes, modified 2025-01-01T00:00:00Z)", "b.jsonl (20 bytes, modified 2025-01-01T00:00:00Z)"}},
		{"job_settings": settings(2000000, map[string]any{"lang": "de", "inputs": strings.Repeat("x.jsonl 123 2025-01-01 ", 100)}), "job_inputs": []string{"a.jsonl (10 bytes, modified 2025-02-01T00:00:00Z)", "b.jsonl (25 bytes, modified 2025-02-01T00:00:00Z)"}},
	} {
		writePart(t, st, "ds", i, 2, fmt.Sprintf("job-%d", i), one)
		m, err := ReadManifest(ctx, st, join("ds", PartDir(i, 2)))
		if err != nil {
			t.Fatal(err)
		}
		maps.Copy(m.Source, src)
		if err := WriteManifest(ctx, st, join("ds", PartDir(i, 2)), m); err != nil {
			t.Fatal(err)
		}
	}
	_, err := MergeParts(ctx, st, "ds", MergePartsOptions{})
	want := `the parts are of 2 runs (job job-0 → job-1: shard size 1000000 → 2000000; settings inputs (none) → "` + strings.Repeat("x.jsonl 123 2025-01-01 ", 6)[:119] + `…, lang "en" → "de"; inputs b.jsonl (20 bytes) → b.jsonl (25 bytes)): parts 0 of job job-0; parts 1 of job job-1`
	if !errors.Is(err, ErrIncompatible) || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v\nwant %q", err, want)
	}
}

// An input one run lists twice (upsampled) and the other once is a change of inputs,
// not "the same inputs in another order" (merge-parts' jobChange compared them as
// sets); the same lists reordered are.
func TestDiffInputsCountsRepeats(t *testing.T) {
	a := []any{"a.jsonl (10 bytes, modified T1)", "a.jsonl (10 bytes, modified T1)", "b.jsonl (5 bytes, modified T1)"}
	b := []string{"a.jsonl (10 bytes, modified T2)", "b.jsonl (5 bytes, modified T2)"}
	c, ok := DiffInputs(a, b, true)
	if !ok || c.Reordered || len(c.Added) != 0 || len(c.Gone) != 1 || c.Gone[0] != "a.jsonl (10 bytes)" {
		t.Errorf("an input listed twice, then once: %+v, %v; want a.jsonl (10 bytes) gone", c, ok)
	}
	pa := &Manifest{Source: map[string]any{"job_inputs": a}}
	pb := &Manifest{Source: map[string]any{"job_inputs": b}}
	if got, want := jobChange(pa, pb), "inputs a.jsonl (10 bytes) → (none)"; got != want {
		t.Errorf("jobChange = %q, want %q", got, want)
	}
	c, ok = DiffInputs(b, []string{b[1], b[0]}, false)
	if !ok || !c.Reordered || len(c.Gone)+len(c.Added) != 0 {
		t.Errorf("the same inputs reordered: %+v, %v", c, ok)
	}
	if _, ok := DiffInputs(nil, b, false); ok {
		t.Error("inputs not recorded (an old manifest) were compared")
	}
}

// SettingsChanges tells changes in the job's order (formats.md's), the tokenizer by
// its fingerprint, a string bare, and of params only those that differ, cut at 120 bytes.
func TestSettingsChanges(t *testing.T) {
	a := map[string]any{"version": 1.0, "name": "c", "tokenizer": "aaaaaaaaaaaaaaaa", "eod_id": 0.0, "text_key": "text", "shard_bytes": 1e6,
		"params": map[string]any{"inputs": strings.Repeat("x", 200), "lang": "en"}}
	b := map[string]any{"version": 1.0, "name": "c", "tokenizer": "aaaaaaaaaaaaaaaa", "eod_id": 1.0, "text_key": "body", "shard_bytes": 2e6,
		"filter_set": "web", "params": map[string]any{"inputs": strings.Repeat("y", 200), "lang": "en"}, "future": true}
	got := strings.Join(SettingsChanges(a, b), "; ")
	want := `the tokenizer changed (fingerprint aaaaaaaaaaaa → aaaaaaaaaaaa); text key text → body; shard size 1000000 → 2000000; filter set (none) → web; settings inputs "` +
		strings.Repeat("x", 119) + `… → "` + strings.Repeat("y", 119) + `…; future (none) → true`
	if got != want {
		t.Errorf("SettingsChanges =\n%s\nwant\n%s", got, want)
	}
}

// racingStore runs before, once, when the manifest of dir is created: another writer
// that commits it while a merge runs.
type racingStore struct {
	*testStore
	key    string
	before func()
	once   sync.Once
}

func (s *racingStore) Create(ctx context.Context, key string, opts ...storage.WriteOption) (storage.Writer, error) {
	if key == s.key {
		s.once.Do(s.before)
	}
	return s.testStore.Create(ctx, key, opts...)
}

// TestMergePartsConcurrent: two merge-parts at once (the scheduler's merge job and one
// by hand): the one that commits second reports the merge done (Already, exit 0) rather
// than "precondition failed", and names the other writer where that wrote another
// dataset.
func TestMergePartsConcurrent(t *testing.T) {
	ctx := context.Background()
	one := map[string][][]int{"": {{1}}, "val": {{2, 3}}}
	st := newTestStore(t)
	writePart(t, st, "ds", 0, 2, "j", one)
	writePart(t, st, "ds", 1, 2, "j", one)
	rs := &racingStore{testStore: st, key: ManifestKey("ds"), before: func() {
		if _, err := MergeParts(ctx, st, "ds", MergePartsOptions{Command: "shards merge-parts (the merge job)"}); err != nil {
			t.Errorf("the other merge: %v", err)
		}
	}}
	res, err := MergeParts(ctx, rs, "ds", MergePartsOptions{Command: "shards merge-parts (by hand)"})
	if err != nil || !res.Already || res.Parts != 2 || res.Manifest.Source["command"] != "shards merge-parts (the merge job)" {
		t.Fatalf("the second merge: %+v, %v; want Already, the merge job's manifest", res, err)
	}

	// Another writer's dataset committed meanwhile: named, not overwritten.
	st = newTestStore(t)
	writePart(t, st, "ds", 0, 2, "j", one)
	writePart(t, st, "ds", 1, 2, "j", one)
	rs = &racingStore{testStore: st, key: ManifestKey("ds"), before: func() {
		m := NewManifest(testTokenizer(65536), Uint16, map[string]any{"command": "tokenize run --output ds"})
		if err := WriteManifest(ctx, st, "ds", m); err != nil {
			t.Error(err)
		}
	}}
	_, err = MergeParts(ctx, rs, "ds", MergePartsOptions{})
	if !errors.Is(err, ErrExists) || !strings.Contains(err.Error(), "another writer (tokenize run --output ds) committed its manifest.json: a dataset not merged from this run's parts, 0 documents") {
		t.Fatalf("got %v, want ErrExists naming the other writer", err)
	}
}
