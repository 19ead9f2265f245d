package shards

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func gpt2Tokenizer() TokenizerInfo {
	return TokenizerInfo{Name: "gpt2", Fingerprint: "fp-gpt2", VocabSize: 65536, EODID: 50256}
}

func openDS(t *testing.T, st *testStore, dir string) *Dataset {
	t.Helper()
	d, err := OpenDataset(context.Background(), st, dir, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func datasetDocs(d *Dataset) [][]int {
	var out [][]int
	for i := int64(0); i < d.Len(); i++ {
		out = append(out, d.Tokens(i))
	}
	return out
}

func sameDocs(t *testing.T, got, want [][]int) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d documents %v, want %d %v", len(got), got, len(want), want)
	}
	for i := range want {
		if !equalInts(got[i], want[i]) {
			t.Fatalf("doc %d = %v, want %v", i, got[i], want[i])
		}
	}
}

func TestNanoGPTRoundTrip(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	writeDataset(t, st, "ds", gpt2Tokenizer(), Uint16, goldenU16, goldenU16[2:])
	var buf bytes.Buffer
	n, err := ExportNanoGPT(ctx, openDS(t, st, "ds"), "train", &buf)
	if err != nil {
		t.Fatal(err)
	}
	var want []byte
	var all [][]int
	for _, d := range append(append([][]int{}, goldenU16...), goldenU16[2:]...) {
		for _, id := range d {
			want = binary.LittleEndian.AppendUint16(want, uint16(id))
		}
		if len(d) > 0 { // empty documents do not survive a headerless stream
			all = append(all, d)
		}
	}
	mustEqualBytes(t, "train.bin", buf.Bytes(), want)
	if n != int64(len(want)/2) {
		t.Errorf("n = %d", n)
	}

	file := filepath.Join(t.TempDir(), "train.bin")
	os.WriteFile(file, buf.Bytes(), 0o644)
	m, err := Import(ctx, st, "imp", []string{file}, ImportOptions{Format: NanoGPT, Tokenizer: gpt2Tokenizer(), SplitAtEOD: true})
	if err != nil {
		t.Fatal(err)
	}
	if m.Shards[0].Prefix != "train_text_document" || m.DType != Uint16 {
		t.Fatalf("manifest %+v", m)
	}
	sameDocs(t, datasetDocs(openDS(t, st, "imp")), all)

	// Without EOD splitting: one document per file.
	m, err = Import(ctx, st, "one", []string{file}, ImportOptions{Format: NanoGPT, Tokenizer: gpt2Tokenizer()})
	if err != nil || m.Documents != 1 || m.Tokens != n {
		t.Fatalf("one doc per file: %+v %v", m, err)
	}
	if probs, err := Verify(ctx, st, "one"); err != nil || len(probs) != 0 {
		t.Fatalf("verify import: %v %v", probs, err)
	}
}

func TestNanoGPTErrors(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	// int32 ids above 65535 cannot go to nanoGPT.
	writeDataset(t, st, "wide", TokenizerInfo{Name: "cl100k", Fingerprint: "x", VocabSize: 100277, EODID: 100257}, Int32, [][]int{{1, 2}, {100257}})
	if _, err := ExportNanoGPT(ctx, openDS(t, st, "wide"), "train", &bytes.Buffer{}); !errors.Is(err, ErrTokenRange) {
		t.Fatalf("export wide ids: %v", err)
	}
	odd := filepath.Join(t.TempDir(), "odd.bin")
	os.WriteFile(odd, []byte{1, 2, 3}, 0o644)
	if _, err := Import(ctx, st, "odd", []string{odd}, ImportOptions{Format: NanoGPT, Tokenizer: gpt2Tokenizer()}); !errors.Is(err, ErrTruncated) {
		t.Fatalf("odd-sized file: %v", err)
	}
	small := gpt2Tokenizer()
	small.VocabSize, small.EODID = 100, 0
	ok := filepath.Join(t.TempDir(), "ok.bin")
	os.WriteFile(ok, []byte{200, 0}, 0o644)
	if _, err := Import(ctx, st, "small", []string{ok}, ImportOptions{Format: NanoGPT, Tokenizer: small}); !errors.Is(err, ErrTokenRange) {
		t.Fatalf("id beyond vocabulary: %v", err)
	}
	if k := st.keys(t); len(k) != 3 { // only the "wide" dataset
		t.Fatalf("failed imports left %v", k)
	}
}

func TestLLMCRoundTrip(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		dt    DType
		tok   TokenizerInfo
		magic uint32
		ver   uint32
	}{
		{Uint16, gpt2Tokenizer(), 20240520, 1},
		{Int32, TokenizerInfo{Name: "llama3", Fingerprint: "fp-l3", VocabSize: 128256, EODID: 128000}, 20240801, 7},
	} {
		t.Run(tc.dt.String(), func(t *testing.T) {
			st := newTestStore(t)
			eod := tc.tok.EODID
			// Our datasets end documents with EOD (GPT-NeoX's --append-eod); the first one
			// here has none (a document that straddled in from an earlier llm.c file).
			docs := [][]int{{13, 14}, {1, 2, 3, eod}, {4, eod}, {5, 6, 7, 8, 9, 10, eod}, {eod}, {11, 12, eod}}
			writeDataset(t, st, "ds", tc.tok, tc.dt, docs[:3], docs[3:])
			keys, err := ExportLLMC(ctx, openDS(t, st, "ds"), st, "llmc", LLMCOptions{Name: "tiny", Split: "train", FirstIndex: 1, ShardTokens: 7})
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"llmc/tiny_train_000001.bin", "llmc/tiny_train_000002.bin", "llmc/tiny_train_000003.bin"}
			if len(keys) != len(want) {
				t.Fatalf("keys %v", keys)
			}
			var files []string
			var stream []byte
			var total uint32
			for i, k := range keys {
				if k != want[i] {
					t.Fatalf("keys %v, want %v", keys, want)
				}
				b := st.read(t, k)
				le := binary.LittleEndian
				ntok := le.Uint32(b[8:])
				if le.Uint32(b) != tc.magic || le.Uint32(b[4:]) != tc.ver || len(b) != 1024+int(ntok)*tc.dt.Size() {
					t.Fatalf("%s: header %d %d %d, %d bytes", k, le.Uint32(b), le.Uint32(b[4:]), ntok, len(b))
				}
				if i < 2 && ntok != 7 {
					t.Fatalf("%s: %d tokens, want 7", k, ntok)
				}
				files = append(files, st.path(k))
				stream = append(stream, b[1024:]...)
				total += ntok
			}
			// llm.c's layout (dev/data/fineweb.py): EOT, then the document.
			llmc := []int{13, 14, eod, 1, 2, 3, eod, 4, eod, 5, 6, 7, 8, 9, 10, eod, eod, 11, 12}
			var wantStream []byte
			for _, id := range llmc {
				if tc.dt == Uint16 {
					wantStream = binary.LittleEndian.AppendUint16(wantStream, uint16(id))
				} else {
					wantStream = binary.LittleEndian.AppendUint32(wantStream, uint32(id))
				}
			}
			mustEqualBytes(t, "llm.c token stream", stream, wantStream)
			// The three files split at EOD: the documents that straddle two files go whole
			// into the shard of the file where they end.
			m, err := Import(ctx, st, "three", files, ImportOptions{Format: LLMC, Tokenizer: tc.tok, SplitAtEOD: true})
			if err != nil || len(m.Shards) != 3 {
				t.Fatalf("three files: %+v %v", m, err)
			}
			sameDocs(t, datasetDocs(openDS(t, st, "three")), docs)
			// Their concatenation as one file, named as llm.c names a val split.
			hdr := make([]byte, 1024)
			binary.LittleEndian.PutUint32(hdr, tc.magic)
			binary.LittleEndian.PutUint32(hdr[4:], tc.ver)
			binary.LittleEndian.PutUint32(hdr[8:], total)
			whole := filepath.Join(t.TempDir(), "tiny_val_000000.bin")
			os.WriteFile(whole, append(hdr, stream...), 0o644)
			m, err = Import(ctx, st, "back", []string{whole}, ImportOptions{Format: LLMC, Tokenizer: tc.tok, SplitAtEOD: true})
			if err != nil {
				t.Fatal(err)
			}
			if m.DType != tc.dt || m.Shards[0].Split != "val" {
				t.Fatalf("dtype %s, split %q; want %s, val", m.DType, m.Shards[0].Split, tc.dt)
			}
			sameDocs(t, datasetDocs(openDS(t, st, "back")), docs)
			// And out again: the same llm.c file.
			again, err := ExportLLMC(ctx, openDS(t, st, "back"), st, "again", LLMCOptions{Name: "tiny", Split: "val", ShardTokens: 100})
			if err != nil || len(again) != 1 {
				t.Fatalf("export again: %v %v", again, err)
			}
			mustEqualBytes(t, "exported again", st.read(t, again[0])[1024:], stream)
			// Several files import as several shards.
			m, err = Import(ctx, st, "parts", files, ImportOptions{Format: LLMC, Tokenizer: tc.tok})
			if err != nil || len(m.Shards) != 3 || m.Tokens != int64(total) {
				t.Fatalf("parts: %+v %v", m, err)
			}
		})
	}
}

// TestExportHonoursSplits: nanoGPT's train.bin and llm.c's train files hold the train
// split only, val.bin and the val files the val split.
func TestExportHonoursSplits(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	tok := gpt2Tokenizer()
	m := NewManifest(tok, Uint16, NewSource([]string{"test"}, "go test"))
	for _, sh := range []struct {
		prefix, split string
		docs          [][]int
	}{
		{"ds/a_text_document", "train", [][]int{{1, 2, 50256}, {3, 50256}}},
		{"ds/a_val_text_document", "val", [][]int{{7, 8, 50256}}},
		{"ds/b_text_document", "", [][]int{{4, 5, 6, 50256}}}, // no split: train
	} {
		info := writeShard(t, st, sh.prefix, Uint16, sh.docs)
		info.Split = sh.split
		if err := m.Add("ds", info); err != nil {
			t.Fatal(err)
		}
	}
	if err := WriteManifest(ctx, st, "ds", m); err != nil {
		t.Fatal(err)
	}
	d := openDS(t, st, "ds")
	if got := d.Splits(); !slices.Equal(got, []string{"train", "val"}) {
		t.Errorf("splits %v", got)
	}
	u16 := func(ids ...int) []byte {
		var b []byte
		for _, id := range ids {
			b = binary.LittleEndian.AppendUint16(b, uint16(id))
		}
		return b
	}
	for split, want := range map[string][]int{"train": {1, 2, 50256, 3, 50256, 4, 5, 6, 50256}, "val": {7, 8, 50256}} {
		var buf bytes.Buffer
		n, err := ExportNanoGPT(ctx, d, split, &buf)
		if err != nil || n != int64(len(want)) {
			t.Fatalf("nanogpt %s: %d tokens, %v", split, n, err)
		}
		mustEqualBytes(t, "nanogpt "+split, buf.Bytes(), u16(want...))
	}
	keys, err := ExportLLMC(ctx, d, st, "llmc", LLMCOptions{Name: "x", Split: "val", ShardTokens: 100})
	if err != nil || len(keys) != 1 {
		t.Fatalf("llmc val: %v %v", keys, err)
	}
	mustEqualBytes(t, "llmc val", st.read(t, keys[0])[1024:], u16(50256, 7, 8))
}

func TestLLMCHeaderErrors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	mk := func(name string, magic, ver, ntok uint32, body int) string {
		b := make([]byte, 1024+body)
		binary.LittleEndian.PutUint32(b, magic)
		binary.LittleEndian.PutUint32(b[4:], ver)
		binary.LittleEndian.PutUint32(b[8:], ntok)
		p := filepath.Join(dir, name)
		os.WriteFile(p, b, 0o644)
		return p
	}
	for _, tc := range []struct {
		file     string
		sentinel error
	}{
		{mk("magic.bin", 1234, 1, 0, 0), ErrBadMagic},
		{mk("eval.bin", 20240522, 1, 0, 0), ErrBadMagic},
		{mk("version.bin", 20240520, 7, 0, 0), ErrBadVersion},
		{mk("short.bin", 20240520, 1, 10, 18), ErrTruncated},
		{mk("long.bin", 20240520, 1, 10, 22), ErrCorrupt},
	} {
		st := newTestStore(t)
		if _, err := Import(ctx, st, "x", []string{tc.file}, ImportOptions{Format: LLMC, Tokenizer: gpt2Tokenizer()}); !errors.Is(err, tc.sentinel) {
			t.Errorf("%s: %v, want %v", filepath.Base(tc.file), err, tc.sentinel)
		}
	}
	hdr := filepath.Join(dir, "hdr.bin")
	os.WriteFile(hdr, []byte{1, 2, 3}, 0o644)
	if _, err := Import(ctx, newTestStore(t), "x", []string{hdr}, ImportOptions{Format: LLMC, Tokenizer: gpt2Tokenizer()}); !errors.Is(err, ErrTruncated) {
		t.Errorf("short header: %v", err)
	}
}

// TestImportNamesTheOtherFormat: an llm.c file imported as nanoGPT's was read as tokens,
// its 1024-byte header included (a tokenizer of 65536 ids took the header for a
// document's start without a word); now it is refused, pointing at --from llmc. A
// nanoGPT file imported as llm.c's points at --from nanogpt, and a truncated file's
// hint no longer sends the user to `shards verify`, which reads datasets only.
func TestImportNamesTheOtherFormat(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	dir := t.TempDir()
	ids := []byte{1, 0, 2, 0, 3, 0}
	llmc := filepath.Join(dir, "tiny_train_000001.bin")
	os.WriteFile(llmc, append(llmcHeader(llmcMagicGPT2, llmcVersionGPT2, 3), ids...), 0o644)
	_, err := Import(ctx, st, "a", []string{llmc}, ImportOptions{Format: NanoGPT, Tokenizer: gpt2Tokenizer()})
	if !errors.Is(err, ErrBadMagic) || !strings.Contains(err.Error(), "this is an llm.c token file (magic 20240520, version 1, 3 tokens)") || !strings.Contains(err.Error(), "--from llmc") {
		t.Fatalf("llm.c file as nanoGPT: %v", err)
	}
	// A nanoGPT file that merely starts with the magic (its size does not fit the
	// header's count) is still a nanoGPT file.
	odd := filepath.Join(dir, "odd.bin")
	os.WriteFile(odd, append(llmcHeader(llmcMagicGPT2, llmcVersionGPT2, 4), ids...), 0o644)
	if _, err := Import(ctx, st, "b", []string{odd}, ImportOptions{Format: NanoGPT, Tokenizer: gpt2Tokenizer()}); err != nil {
		t.Fatalf("nanoGPT file starting with llm.c's magic: %v", err)
	}
	nano := filepath.Join(dir, "train.bin")
	os.WriteFile(nano, make([]byte, 2048), 0o644)
	if _, err := Import(ctx, st, "c", []string{nano}, ImportOptions{Format: LLMC, Tokenizer: gpt2Tokenizer()}); !errors.Is(err, ErrBadMagic) || !strings.Contains(err.Error(), "--from nanogpt") {
		t.Fatalf("nanoGPT file as llm.c: %v", err)
	}
	short := filepath.Join(dir, "short_train_000001.bin")
	os.WriteFile(short, append(llmcHeader(llmcMagicGPT2, llmcVersionGPT2, 4), ids...), 0o644)
	if _, err := Import(ctx, st, "d", []string{short}, ImportOptions{Format: LLMC, Tokenizer: gpt2Tokenizer()}); !errors.Is(err, ErrTruncated) || strings.Contains(err.Error(), "shards verify") || !strings.Contains(err.Error(), "import it again") {
		t.Fatalf("truncated llm.c file: %v", err)
	}
}
