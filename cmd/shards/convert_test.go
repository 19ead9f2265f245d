package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gptkit/internal/testfiles"
)

func TestConvertNanoGPTRoundTrip(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "sample")
	want := tokenizeDataset(t, dir, sampleTexts)
	bin := filepath.Join(root, "nano", "train.bin")
	out := mustRun(t, "convert", "--to", "nanogpt", dir, "--out", bin)
	if out != fmt.Sprintf("%s: %d tokens\n", bin, countTokens(want)) {
		t.Errorf("convert --to nanogpt printed %q", out)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if got := uint16s(data); !slices.Equal(got, slices.Concat(want...)) {
		t.Fatalf("train.bin holds %d tokens, want the dataset's %d", len(got), countTokens(want))
	}

	spec := testfiles.Path(t, "tokenizers/gpt2")
	back := filepath.Join(root, "back")
	out = mustRun(t, "convert", "--from", "nanogpt", bin, "--out", back, "--tokenizer", spec, "--split-at-eod")
	if out != fmt.Sprintf("%s/manifest.json: %d documents, %d tokens, 1 shards\n", back, len(want), countTokens(want)) {
		t.Errorf("convert --from nanogpt printed %q", out)
	}
	mustRun(t, "verify", back)
	if v := infoJSON(t, back); v["tokenizer"].(map[string]any)["fingerprint"] != gpt2(t).Fingerprint() {
		t.Errorf("imported manifest's tokenizer: %v", v["tokenizer"])
	}
	for k := range want {
		if ids := catIDs(t, back, k); !slices.Equal(ids, want[k]) {
			t.Errorf("imported document %d = %v, want %v", k, ids, want[k])
		}
	}

	// Without --split-at-eod the file is one document.
	whole := filepath.Join(root, "whole")
	mustRun(t, "convert", "--from", "nanogpt", bin, "--out", whole, "--tokenizer", spec)
	if ids := catIDs(t, whole, 0); !slices.Equal(ids, slices.Concat(want...)) {
		t.Errorf("imported as one document: %d tokens, want %d", len(ids), countTokens(want))
	}
	wantFailure(t, 1, []string{"already has a manifest.json"}, "convert", "--from", "nanogpt", bin, "--out", whole, "--tokenizer", spec)

	// Ids the tokenizer does not have are refused.
	odd := filepath.Join(root, "odd.bin")
	os.WriteFile(odd, []byte{0xff, 0xff}, 0o644)
	wantFailure(t, 1, []string{odd, "65535", "vocabulary size 50257"}, "convert", "--from", "nanogpt", odd, "--out", filepath.Join(root, "odd"), "--tokenizer", spec)
}

func TestConvertLLMCRoundTrip(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "sample")
	want := tokenizeDataset(t, dir, sampleTexts)
	stream := slices.Concat(want...)
	lc := filepath.Join(root, "llmc")
	const per = 16
	out := mustRun(t, "convert", "--to", "llmc", dir, "--out", lc, "--shard-tokens", fmt.Sprint(per))
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	nfiles := (len(stream) + per - 1) / per
	if len(lines) != nfiles {
		t.Fatalf("convert --to llmc printed %d lines, want %d:\n%s", len(lines), nfiles, out)
	}
	var files []string
	var got []int
	for i, line := range lines {
		file := filepath.Join(lc, fmt.Sprintf("sample_train_%06d.bin", i+1))
		n := min(per, len(stream)-i*per)
		if line != fmt.Sprintf("%s: %d tokens", file, n) {
			t.Errorf("line %d: %q", i, line)
		}
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if magic, version, ntok := binary.LittleEndian.Uint32(data), binary.LittleEndian.Uint32(data[4:]), binary.LittleEndian.Uint32(data[8:]); magic != 20240520 || version != 1 || int(ntok) != n || len(data) != 1024+2*n {
			t.Errorf("%s: header %d %d %d, %d bytes", file, magic, version, ntok, len(data))
		}
		got = append(got, uint16s(data[1024:])...)
		files = append(files, file)
	}
	if !slices.Equal(got, stream) {
		t.Fatal("the llm.c files do not hold the dataset's tokens")
	}

	back := filepath.Join(root, "back")
	mustRun(t, append(append([]string{"convert", "--from", "llmc"}, files...), "--out", back, "--tokenizer", testfiles.Path(t, "tokenizers/gpt2"))...)
	mustRun(t, "verify", back)
	var again []int
	for k := range files {
		again = append(again, catIDs(t, back, k)...)
	}
	if !slices.Equal(again, stream) {
		t.Error("llm.c round trip changed the tokens")
	}

	// --name, --split val (numbered from 0) and one big file.
	out = mustRun(t, "convert", "--to", "llmc", dir, "--out", lc, "--name", "tiny", "--split", "val")
	if want := filepath.Join(lc, "tiny_val_000000.bin") + fmt.Sprintf(": %d tokens\n", len(stream)); out != want {
		t.Errorf("convert --to llmc --split val printed %q, want %q", out, want)
	}
}

func TestConvertUsage(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"convert", dir, "--out", "x"},
		{"convert", "--to", "nanogpt", "--from", "llmc", dir, "--out", "x"},
		{"convert", "--to", "parquet", dir, "--out", "x"},
		{"convert", "--to", "nanogpt", dir},
		{"convert", "--to", "nanogpt", dir, dir, "--out", "x"},
		{"convert", "--to", "nanogpt", dir, "--out", "x", "--split", "val"},
		{"convert", "--to", "llmc", dir, "--out", "x", "--split", "test"},
		{"convert", "--to", "llmc", dir, "--out", "x", "--shard-tokens", "0"},
		{"convert", "--to", "llmc", dir, "--out", "x", "--tokenizer", "gpt2"},
		{"convert", "--from", "nanogpt", "--out", "x", "--tokenizer", "gpt2"},
		{"convert", "--from", "nanogpt", "f.bin", "--out", "x"},
		{"convert", "--from", "nanogpt", "f.bin", "--out", "x", "--tokenizer", "gpt2", "--name", "n"},
		{"convert", "--from", "nanogpt", "s3://b/f.bin", "--out", "x", "--tokenizer", "gpt2"},
	} {
		if code, _, errOut := runShards(t, args...); code != 2 || !strings.Contains(errOut, "(run 'shards convert -h' for usage)") {
			t.Errorf("%v: exit %d, %q", args, code, errOut)
		}
	}
}

func uint16s(b []byte) []int {
	ids := make([]int, len(b)/2)
	for i := range ids {
		ids[i] = int(binary.LittleEndian.Uint16(b[2*i:]))
	}
	return ids
}
