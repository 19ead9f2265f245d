package shards

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// llmcHeader is an llm.c token file's 1024-byte header.
func llmcHeader(magic, version, ntok uint32) []byte {
	hdr := make([]byte, llmcHeaderSize)
	binary.LittleEndian.PutUint32(hdr, magic)
	binary.LittleEndian.PutUint32(hdr[4:], version)
	binary.LittleEndian.PutUint32(hdr[8:], ntok)
	return hdr
}

// FuzzImport: Import of a nanoGPT file of any bytes, or of an llm.c file of any header
// fields and body, never panics, fails on a damaged file only with a *FormatError naming
// it, and what it accepts holds exactly the file's tokens (EOD ids moved, none lost or
// made up). The llm.c header is built from the fuzzed fields (the rest of its 1024 bytes
// is unused), so that inputs stay small.
func FuzzImport(f *testing.F) {
	u16 := []byte{1, 0, 2, 0, 9, 0, 3, 0}
	i32 := []byte{1, 0, 0, 0, 9, 0, 0, 0, 7, 0, 0, 0}
	f.Add(u16, false, uint32(0), uint32(0), uint32(0), false)
	f.Add(u16, false, uint32(0), uint32(0), uint32(0), true)
	f.Add(u16[:3], false, uint32(0), uint32(0), uint32(0), false)
	f.Add([]byte{0xff, 0xff}, false, uint32(0), uint32(0), uint32(0), false)
	f.Add(u16, true, uint32(llmcMagicGPT2), uint32(llmcVersionGPT2), uint32(4), true)
	f.Add(u16, true, uint32(llmcMagicGPT2), uint32(llmcVersionGPT2), uint32(4), false)
	f.Add(u16[:6], true, uint32(llmcMagicGPT2), uint32(llmcVersionGPT2), uint32(4), false)
	f.Add(i32, true, uint32(llmcMagicLlama3), uint32(llmcVersionLlama3), uint32(3), true)
	f.Add(i32, true, uint32(llmcMagicLlama3), uint32(llmcVersionLlama3), uint32(4), false)
	f.Add(u16, true, uint32(llmcMagicGPT2), uint32(llmcVersionGPT2), uint32(0xffffffff), false)
	f.Add(u16, true, uint32(llmcMagicGPT2), uint32(7), uint32(4), false)
	f.Add(u16, true, uint32(llmcMagicEval), uint32(1), uint32(4), false)
	tok := TokenizerInfo{Name: "t", Fingerprint: "fp", VocabSize: 10, EODID: 9}
	f.Fuzz(func(t *testing.T, body []byte, llmc bool, magic, version, ntok uint32, split bool) {
		ctx := context.Background()
		data, format := body, NanoGPT
		if llmc {
			data, format = append(llmcHeader(magic, version, ntok), body...), LLMC
		}
		file := filepath.Join(t.TempDir(), "in_000001.bin")
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
		st := newTestStore(t)
		m, err := Import(ctx, st, "imp", []string{file}, ImportOptions{Format: format, Tokenizer: tok, SplitAtEOD: split})
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) || fe.File != file {
				t.Fatalf("error %v is not a *FormatError naming %s", err, file)
			}
			return
		}
		item := 2
		if m.DType == Int32 {
			item = 4
		}
		want := map[int]int{}
		for i := 0; i+item <= len(body); i += item {
			if item == 2 {
				want[int(binary.LittleEndian.Uint16(body[i:]))]++
			} else {
				want[int(binary.LittleEndian.Uint32(body[i:]))]++
			}
		}
		d, err := OpenDataset(ctx, st, "imp", "")
		if err != nil {
			t.Fatalf("the imported dataset does not open: %v", err)
		}
		defer d.Close()
		var n int64
		for i := int64(0); i < d.Len(); i++ {
			for _, id := range d.Tokens(i) {
				want[id]--
				n++
			}
		}
		if n != int64(len(body)/item) || n != m.Tokens || len(body)%item != 0 {
			t.Fatalf("%d tokens in the dataset (manifest: %d), the file has %d bytes of %d-byte tokens", n, m.Tokens, len(body), item)
		}
		for id, c := range want {
			if c != 0 {
				t.Fatalf("id %d: %d more in the file than in the dataset", id, c)
			}
		}
	})
}
