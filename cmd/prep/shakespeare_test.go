package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"gptkit/internal/testfiles"
	"gptkit/shards"
)

// TestShakespeare: `prep shakespeare` is nanoGPT's shakespeare_char prepare.py: the text
// cut at int(n*0.9) characters into a train and a val document, ids from the sorted set
// of the text's characters (65 of them, stored as chars.json), no end-of-document id.
// With --tokenizer the halves are that tokenizer's ids instead (nanoGPT's shakespeare
// prepare.py with GPT-2).
func TestShakespeare(t *testing.T) {
	// Not parallel: it counts the requests that reach the fake internet.
	text := testfiles.Read(t, "corpora/tinyshakespeare.txt")
	m := newMirror(t)
	m.put("input.txt", text) // no SHA256SUMS: the catalog's pinned sha256 checks it
	data := []rune(string(text))
	n := int(float64(len(data)) * 0.9) // nanoGPT: n = len(data); data[:int(n*0.9)]
	train, val := string(data[:n]), string(data[n:])

	checkShards := func(t *testing.T, man *shards.Manifest, trainTokens, valTokens int64) {
		t.Helper()
		want := []shards.ShardInfo{
			{Prefix: "shakespeare_text_document", Split: "train", Documents: 1, Tokens: trainTokens},
			{Prefix: "shakespeare_val_text_document", Split: "val", Documents: 1, Tokens: valTokens},
		}
		if len(man.Shards) != 2 {
			t.Fatalf("manifest shards %+v, want %+v", man.Shards, want)
		}
		for i, s := range man.Shards {
			s.BinSHA256, s.IdxSHA256 = "", ""
			if s != want[i] {
				t.Errorf("manifest shard %d: %+v, want %+v", i, s, want[i])
			}
		}
		if man.Source["append_eod"] != false {
			t.Errorf("manifest source append_eod %v, want false", man.Source["append_eod"])
		}
	}

	t.Run("char", func(t *testing.T) {
		dir := t.TempDir()
		mustPrep(t, "shakespeare", "-d", dir, "--mirror", m.base(), "--progress", "off")
		ds := filepath.Join(dir, "shakespeare")
		man := readManifest(t, ds)
		checkShards(t, man, int64(n), int64(len(data)-n))

		// nanoGPT: chars = sorted(list(set(data))); stoi = { ch:i for i,ch in enumerate(chars) }
		chars := slices.Compact(slices.Sorted(slices.Values(data)))
		stoi := map[rune]int{}
		for i, c := range chars {
			stoi[c] = i
		}
		encode := func(s string) []int {
			var ids []int
			for _, c := range s {
				ids = append(ids, stoi[c])
			}
			return ids
		}
		compareDocs(t, "char ids", datasetDocs(t, ds), [][]int{encode(train), encode(val)})

		raw, err := os.ReadFile(filepath.Join(ds, "chars.json"))
		if err != nil {
			t.Fatal(err)
		}
		var cf struct {
			Type  string   `json:"type"`
			Chars []string `json:"chars"`
		}
		if err := json.Unmarshal(raw, &cf); err != nil {
			t.Fatalf("chars.json: %v", err)
		}
		var want []string
		for _, c := range chars {
			want = append(want, string(c))
		}
		if cf.Type != "char" || len(cf.Chars) != 65 || !slices.Equal(cf.Chars, want) {
			t.Errorf("chars.json: type %q, %d chars %q; want char and the 65 sorted characters %q", cf.Type, len(cf.Chars), cf.Chars, want)
		}
		if man.Tokenizer.VocabSize != 65 || man.Tokenizer.EODID != -1 || man.DType != shards.Uint16 {
			t.Errorf("manifest tokenizer %+v, dtype %v; want 65 characters, no EOD, uint16", man.Tokenizer, man.DType)
		}

		// A rerun is complete without fetching the text again.
		reqs, hits := len(m.requests()), internetHits()
		out, _ := mustPrep(t, "shakespeare", "-d", dir, "--mirror", m.base(), "--progress", "off")
		hasAll(t, "rerun stdout", out, "already complete")
		if got := m.requests()[reqs:]; len(got) > 0 {
			t.Errorf("the rerun of a finished job asked the mirror for %+v", got)
		}
		if got := internetHitsSince(hits); len(got) > 0 {
			t.Errorf("the rerun of a finished job went to %v", got)
		}
	})

	t.Run("gpt2", func(t *testing.T) {
		tok := gpt2(t)
		dir := t.TempDir()
		mustPrep(t, "shakespeare", "-d", dir, "--mirror", m.base(), "--progress", "off", "--tokenizer", gpt2Dir(t))
		ds := filepath.Join(dir, "shakespeare")
		want := encodeAll(tok, []string{train, val}, -1)
		checkShards(t, readManifest(t, ds), int64(len(want[0])), int64(len(want[1])))
		compareDocs(t, "GPT-2 ids", datasetDocs(t, ds), want)
		if _, err := os.Stat(filepath.Join(ds, "chars.json")); !os.IsNotExist(err) {
			t.Errorf("chars.json beside a GPT-2 dataset: %v", err)
		}
	})
}

// TestShakespeareOffline: `prep shakespeare -d D` needs no network: the text comes from
// the binary, and the dataset is the one the download gives. --download goes to the
// catalog's source instead (here the fake internet, which answers 404).
func TestShakespeareOffline(t *testing.T) {
	// Not parallel: it counts the requests that reach the fake internet.
	text := testfiles.Read(t, "corpora/tinyshakespeare.txt")
	m := newMirror(t)
	m.put("input.txt", text)
	ref := t.TempDir()
	mustPrep(t, "shakespeare", "-d", ref, "--mirror", m.base(), "--progress", "off")

	dir := t.TempDir()
	hits := internetHits()
	_, errOut := mustPrep(t, "shakespeare", "-d", dir, "--progress", "off")
	if got := internetHitsSince(hits); len(got) > 0 {
		t.Errorf("prep shakespeare went to the network: %v", got)
	}
	hasAll(t, "stderr", errOut, "input.txt: the copy built into this binary", "--download")
	compareDocs(t, "embedded vs downloaded", datasetDocs(t, filepath.Join(dir, "shakespeare")), datasetDocs(t, filepath.Join(ref, "shakespeare")))

	hits = internetHits()
	code, _, errOut := runPrep(t, "shakespeare", "-d", t.TempDir(), "--progress", "off", "--download")
	if code != 1 || len(internetHitsSince(hits)) == 0 {
		t.Errorf("--download: exit %d, requests %v; want a failed download from the catalog's source (stderr %q)", code, internetHitsSince(hits), errOut)
	}
	hasAll(t, "--download stderr", errOut, "raw.githubusercontent.com", "to download: 1 file, 1.1 MB")
}
