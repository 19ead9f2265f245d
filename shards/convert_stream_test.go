package shards

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"gptkit/internal/sharedtest"
)

// writeTokenFile writes ids as a nanoGPT file, or (llmc) an llm.c shard of dt.
func writeTokenFile(t *testing.T, file string, llmc bool, dt DType, ids []int) {
	t.Helper()
	le := binary.LittleEndian
	var b []byte
	if llmc {
		hdr := make([]byte, llmcHeaderSize)
		magic, version := uint32(llmcMagicGPT2), uint32(llmcVersionGPT2)
		if dt == Int32 {
			magic, version = llmcMagicLlama3, llmcVersionLlama3
		}
		le.PutUint32(hdr, magic)
		le.PutUint32(hdr[4:], version)
		le.PutUint32(hdr[8:], uint32(len(ids)))
		b = hdr
	}
	for _, id := range ids {
		if dt == Int32 {
			b = le.AppendUint32(b, uint32(id))
		} else {
			b = le.AppendUint16(b, uint16(id))
		}
	}
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestImportOneDocumentBytes: a file imported as one document (no SplitAtEOD), now
// streamed into the shard in pieces, gives the bytes it gave when the whole file went
// to Writer.AddDocument as one slice: sizes around the stream's piece and the
// Writer's buffer, nanoGPT and llm.c (uint16 and int32).
func TestImportOneDocumentBytes(t *testing.T) {
	ctx := context.Background()
	wide := TokenizerInfo{Name: "wide", Fingerprint: "fp-wide", VocabSize: 200_000, EODID: 199_999}
	for _, n := range []int{0, 1, 7, streamChunk - 1, streamChunk, streamChunk + 1, writeBufSize/2 + 3, 3*streamChunk + 11} {
		for _, tc := range []struct {
			name string
			llmc bool
			dt   DType
			tok  TokenizerInfo
		}{
			{"nanogpt", false, Uint16, gpt2Tokenizer()},
			{"llmc-gpt2", true, Uint16, gpt2Tokenizer()},
			{"llmc-llama3", true, Int32, wide},
		} {
			if n == 0 && !tc.llmc {
				continue // an empty nanoGPT file is one of zero tokens: refused by the command
			}
			st := newTestStore(t)
			ids := make([]int, n)
			for i := range ids {
				ids[i] = (i*7919 + n) % tc.tok.VocabSize
			}
			file := filepath.Join(t.TempDir(), "x.bin")
			writeTokenFile(t, file, tc.llmc, tc.dt, ids)
			format := NanoGPT
			if tc.llmc {
				format = LLMC
			}
			m, err := Import(ctx, st, "imp", []string{file}, ImportOptions{Format: format, Tokenizer: tc.tok})
			if err != nil {
				t.Fatalf("%s, %d tokens: %v", tc.name, n, err)
			}
			var docs [][]int
			if n > 0 {
				docs = [][]int{ids}
			}
			ref := writeShard(t, st, "ref/x_text_document", tc.dt, docs)
			if got := m.Shards[0]; got.Documents != ref.Documents || got.Tokens != ref.Tokens || got.BinSHA256 != ref.BinSHA256 || got.IdxSHA256 != ref.IdxSHA256 {
				t.Fatalf("%s, %d tokens: imported %+v, as one AddDocument %+v", tc.name, n, got, ref)
			}
			for _, ext := range []string{".bin", ".idx"} {
				a, _ := os.ReadFile(st.path("imp/x_text_document" + ext))
				b, _ := os.ReadFile(st.path("ref/x_text_document" + ext))
				mustEqualBytes(t, tc.name+ext, a, b)
			}
		}
	}
}

// TestImportOneDocumentMemory: importing a file as one document holds a bounded
// number of its ids, whatever its size (it held all of them as []int: 8 bytes a
// token, ~193 MiB of heap for an 8 MiB file).
func TestImportOneDocumentMemory(t *testing.T) {
	ctx := context.Background()
	const ntok = 16 << 20 // a 32 MiB file; 128 MiB as []int
	b := make([]byte, 2*ntok)
	for i := range ntok {
		binary.LittleEndian.PutUint16(b[2*i:], uint16(i%50000))
	}
	file := filepath.Join(t.TempDir(), "train.bin")
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	b = nil
	st := newTestStore(t)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	m, err := Import(ctx, st, "one", []string{file}, ImportOptions{Format: NanoGPT, Tokenizer: gpt2Tokenizer()})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if m.Documents != 1 || m.Tokens != ntok {
		t.Fatalf("imported %d documents, %d tokens; want 1, %d", m.Documents, m.Tokens, ntok)
	}
	t.Logf("allocated %d KiB", (after.TotalAlloc-before.TotalAlloc)>>10)
	// Everything allocated during the import, freed or not: a bound on its heap.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
		t.Errorf("importing a %d MiB file allocated %d MiB, want at most 16 MiB", 2*ntok>>20, alloc>>20)
	}
	if probs, err := Verify(ctx, st, "one"); err != nil || len(probs) != 0 {
		t.Fatalf("verify: %v %v", probs, err)
	}
}

// TestImportOneDocumentTooLarge: a nanoGPT file of more tokens than an .idx keeps for
// one document is refused before anything is read or written, naming the file, the
// limit and --split-at-eod (it was read into memory until the limit, 16 GiB of ids).
func TestImportOneDocumentTooLarge(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "a.bin")
	writeTokenFile(t, small, false, Uint16, []int{1, 2, 3})
	big := filepath.Join(dir, "train.bin")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	// Sparse: 2^31 tokens, one more than a document may have, take no disk.
	if err := f.Truncate(2 * (maxDocTokens + 1)); err != nil {
		f.Close()
		sharedtest.Missing(t, "a 4 GiB sparse file (this filesystem refused one: %v)", err)
	}
	f.Close()
	st := newTestStore(t)
	_, err = Import(context.Background(), st, "ds", []string{small, big}, ImportOptions{Format: NanoGPT, Tokenizer: gpt2Tokenizer()})
	if !errors.Is(err, ErrTokenRange) {
		t.Fatalf("got %v, want ErrTokenRange", err)
	}
	for _, want := range []string{big, "2147483648 tokens", "2147483647", "--split-at-eod"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if k := st.keys(t); len(k) != 0 {
		t.Errorf("the refused import left %v", k)
	}
	// Split at EOD, the same file is not refused up front (its documents may be small).
	if err := checkOneDocFiles([]string{big}, ImportOptions{Format: NanoGPT, SplitAtEOD: true}); err != nil {
		t.Errorf("with SplitAtEOD: %v", err)
	}
}
