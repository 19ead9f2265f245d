package shards

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
)

func docIdxOf(r *Reader) []int64 {
	ix := r.Index()
	out := make([]int64, ix.NumDocIdx())
	for j := range out {
		out[j] = ix.DocIdx(j)
	}
	return out
}

func TestMerge(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	tok := testTokenizer(65536)
	writeDataset(t, st, "a", tok, Uint16, goldenU16, goldenU16[1:3])
	writeDataset(t, st, "b", tok, Uint16, [][]int{{7, 7, 7}})
	m, err := Merge(ctx, st, "out/all", []Input{{st, "a"}, {st, "b"}}, MergeOptions{Source: map[string]any{"command": "shards merge"}})
	if err != nil {
		t.Fatal(err)
	}
	want := append(append(append([][]int{}, goldenU16...), goldenU16[1:3]...), []int{7, 7, 7})
	if len(m.Shards) != 1 || m.Shards[0].Prefix != "all_text_document" || m.Documents != int64(len(want)) {
		t.Fatalf("manifest %+v", m)
	}
	if m.Source["command"] != "shards merge" || m.Source["merged_from"] == nil {
		t.Errorf("source %v", m.Source)
	}
	if probs, err := Verify(ctx, st, "out/all"); err != nil || len(probs) != 0 {
		t.Fatalf("verify merged: %v %v", probs, err)
	}
	r, err := Open(st.path("out/all/all_text_document"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for i, d := range want {
		if !equalInts(r.Tokens(i), d) {
			t.Fatalf("doc %d = %v, want %v", i, r.Tokens(i), d)
		}
	}
	got := docIdxOf(r)
	for j, v := range got {
		if v != int64(j) || len(got) != len(want)+1 {
			t.Fatalf("doc_idx = %v, want [0..%d]", got, len(want))
		}
	}
	// The output exists now: a second merge into it is refused.
	if _, err := Merge(ctx, st, "out/all", []Input{{st, "a"}}, MergeOptions{}); !errors.Is(err, ErrExists) {
		t.Fatalf("merge into an existing dataset: %v", err)
	}
}

// TestMergeNeoXInputs: multi-sequence documents keep their grouping; a merge_file_ shard
// (doc_idx [0]) is read, with AllowMergedDocIdx, as one document per sequence.
func TestMergeNeoXInputs(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	tok := testTokenizer(65536)
	for dir, name := range map[string]string{"multi": "neox_multi_u16", "merged": "neox_merged_u16"} {
		m := NewManifest(tok, Uint16, nil)
		info := ShardInfo{Prefix: name}
		for _, ext := range []string{".bin", ".idx"} {
			b, err := os.ReadFile(golden(name + ext))
			if err != nil {
				t.Fatal(err)
			}
			st.write(t, dir+"/"+name+ext, b)
			if ext == ".bin" {
				info.BinSHA256 = sha256Hex(b)
			} else {
				info.IdxSHA256 = sha256Hex(b)
				ix, err := ParseIndex(name, b, AllowMergedDocIdx())
				if err != nil {
					t.Fatal(err)
				}
				info.Documents, info.Tokens = int64(ix.Len()), ix.NumTokens()
			}
		}
		m.Add("", info)
		if err := WriteManifest(ctx, st, dir, m); err != nil {
			t.Fatal(err)
		}
	}
	inputs := []Input{{st, "multi"}, {st, "merged"}, {st, "multi"}}
	if _, err := Merge(ctx, st, "o1", inputs, MergeOptions{}); !errors.Is(err, ErrMergedDocIdx) {
		t.Fatalf("merge_file_ input without the option: %v", err)
	}
	if keys := st.keys(t); strings.Contains(strings.Join(keys, " "), "o1/") {
		t.Fatalf("failed merge left %v", keys)
	}
	if _, err := Merge(ctx, st, "o2", inputs, MergeOptions{Options: []Option{AllowMergedDocIdx()}}); err != nil {
		t.Fatal(err)
	}
	r, err := Open(st.path("o2/o2_text_document"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// multi: [0,2,3,3,5]; merged: 4 sequences -> +1 each from 5; multi again from 9.
	want := []int64{0, 2, 3, 3, 5, 6, 7, 8, 9, 11, 12, 12, 14}
	got := docIdxOf(r)
	if len(got) != len(want) {
		t.Fatalf("doc_idx = %v, want %v", got, want)
	}
	for j := range want {
		if got[j] != want[j] {
			t.Fatalf("doc_idx = %v, want %v", got, want)
		}
	}
	if r.Len() != 14 || !equalInts(r.Tokens(7), goldenU16[2]) || !equalInts(r.Tokens(13), goldenMultiSeqs[4]) {
		t.Fatalf("merged tokens wrong: len %d", r.Len())
	}
}

func TestMergeRefuses(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	writeDataset(t, st, "gpt2", testTokenizer(50257), Uint16, goldenU16)
	other := testTokenizer(50257)
	other.Fingerprint = "fp-other"
	writeDataset(t, st, "other", other, Uint16, goldenU16)
	writeDataset(t, st, "wide", testTokenizer(50257), Int32, goldenU16)

	_, err := Merge(ctx, st, "out", []Input{{st, "gpt2"}, {st, "other"}}, MergeOptions{})
	if !errors.Is(err, ErrIncompatible) || !strings.Contains(err.Error(), "fp-50257") || !strings.Contains(err.Error(), "fp-other") ||
		!strings.Contains(err.Error(), "gpt2") || !strings.Contains(err.Error(), "other") {
		t.Fatalf("fingerprints: %v", err)
	}
	_, err = Merge(ctx, st, "out", []Input{{st, "gpt2"}, {st, "wide"}}, MergeOptions{})
	if !errors.Is(err, ErrIncompatible) || !strings.Contains(err.Error(), "uint16") || !strings.Contains(err.Error(), "int32") {
		t.Fatalf("dtypes: %v", err)
	}

	// A corrupted input is caught while copying; nothing of the output stays.
	edit(t, st, "gpt2/part0_text_document.bin", func(b []byte) []byte { b[0] ^= 1; return b })
	_, err = Merge(ctx, st, "out", []Input{{st, "gpt2"}}, MergeOptions{})
	if !errors.Is(err, ErrChecksum) {
		t.Fatalf("corrupt input: %v", err)
	}
	for _, k := range st.keys(t) {
		if strings.HasPrefix(k, "out/") {
			t.Fatalf("failed merge left %s", k)
		}
	}
	if st.tmpFiles(t) != 0 {
		t.Fatalf("failed merge left temp files")
	}
}

// TestMergeKeepsSplits: datasets with train and val splits merge into one shard per
// split, each the inputs' documents of that split in order (the val documents once went
// into the one merged shard, unlabeled: training data).
func TestMergeKeepsSplits(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	tok := gpt2Tokenizer()
	for _, ds := range []struct {
		dir         string
		train, val  [][]int
		trainLabel  string
		withoutVals bool
	}{
		{"a", [][]int{{1, 2, 50256}}, [][]int{{7, 50256}}, "train", false},
		{"b", [][]int{{3, 50256}, {4, 50256}}, nil, "", true},
		{"c", [][]int{{5, 50256}}, [][]int{{8, 9, 50256}}, "train", false},
	} {
		m := NewManifest(tok, Uint16, NewSource([]string{"test"}, "go test"))
		info := writeShard(t, st, ds.dir+"/x_text_document", Uint16, ds.train)
		info.Split = ds.trainLabel
		if err := m.Add(ds.dir, info); err != nil {
			t.Fatal(err)
		}
		if !ds.withoutVals {
			info := writeShard(t, st, ds.dir+"/x_val_text_document", Uint16, ds.val)
			info.Split = "val"
			if err := m.Add(ds.dir, info); err != nil {
				t.Fatal(err)
			}
		}
		if err := WriteManifest(ctx, st, ds.dir, m); err != nil {
			t.Fatal(err)
		}
	}
	m, err := Merge(ctx, st, "out", []Input{{st, "a"}, {st, "b"}, {st, "c"}}, MergeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Shards) != 2 || m.Shards[0].Split != "train" || m.Shards[1].Split != "val" || m.Shards[1].Prefix != "out_val_text_document" {
		t.Fatalf("shards %+v, want a train and a val shard", m.Shards)
	}
	d := openDS(t, st, "out")
	for split, want := range map[string][][]int{"train": {{1, 2, 50256}, {3, 50256}, {4, 50256}, {5, 50256}}, "val": {{7, 50256}, {8, 9, 50256}}} {
		var got [][]int
		for i, sh := range m.Shards {
			if sh.Split != split {
				continue
			}
			r := d.Shard(i)
			for k := range r.Len() {
				got = append(got, r.Tokens(k))
			}
		}
		sameDocs(t, got, want)
	}
	if probs, err := Verify(ctx, st, "out"); err != nil || len(probs) != 0 {
		t.Fatalf("verify merged: %v %v", probs, err)
	}

	// Prefix NAME names every split's shard NAME[_SPLIT]_text_document, as --name does
	// (Prefix "sh2" once gave sh2 and sh2_val_text_document); a NAME ending in
	// _text_document is the train shard's whole name.
	for prefix, want := range map[string][2]string{
		"sh2":               {"sh2_text_document", "sh2_val_text_document"},
		"mix_text_document": {"mix_text_document", "mix_val_text_document"},
	} {
		m, err := Merge(ctx, st, "p-"+prefix, []Input{{st, "a"}, {st, "c"}}, MergeOptions{Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Shards) != 2 || m.Shards[0].Prefix != want[0] || m.Shards[1].Prefix != want[1] {
			t.Errorf("Prefix %q: shards %+v, want %s and %s", prefix, m.Shards, want[0], want[1])
		}
	}
}
