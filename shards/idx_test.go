package shards

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"strings"
	"testing"
)

// rawIdx builds .idx bytes field by field, so tests can write inconsistent ones.
func rawIdx(version uint64, code byte, nSeq, nDoc uint64, sizes []int32, ptrs []int64, docIdx []int64) []byte {
	le := binary.LittleEndian
	b := []byte(Magic)
	b = le.AppendUint64(b, version)
	b = append(b, code)
	b = le.AppendUint64(b, nSeq)
	b = le.AppendUint64(b, nDoc)
	for _, s := range sizes {
		b = le.AppendUint32(b, uint32(s))
	}
	for _, p := range ptrs {
		b = le.AppendUint64(b, uint64(p))
	}
	for _, d := range docIdx {
		b = le.AppendUint64(b, uint64(d))
	}
	return b
}

// validIdx: three uint16 sequences of 2, 0 and 3 tokens.
func validIdx() []byte {
	return rawIdx(1, 8, 3, 4, []int32{2, 0, 3}, []int64{0, 4, 4}, []int64{0, 1, 2, 3})
}

func TestParseIndexErrors(t *testing.T) {
	valid := validIdx()
	for _, tc := range []struct {
		name     string
		data     []byte
		sentinel error
		mention  string // must appear in the message
	}{
		{"empty", nil, ErrTruncated, "header"},
		{"partial magic", []byte("MMID"), ErrTruncated, "header"},
		{"bad magic", append([]byte("NOTANIDX\x00"), valid[9:]...), ErrBadMagic, "magic"},
		{"legacy magic", append([]byte("TNTIDX\x00\x00\x00"), valid[9:]...), ErrBadMagic, "legacy"},
		{"short header", valid[:20], ErrTruncated, "34-byte header"},
		{"version 2", rawIdx(2, 8, 3, 4, []int32{2, 0, 3}, []int64{0, 4, 4}, []int64{0, 1, 2, 3}), ErrBadVersion, "version is 2"},
		{"float dtype 6", rawIdx(1, 6, 0, 1, nil, nil, []int64{0}), ErrBadDType, "floating-point"},
		{"float dtype 7", rawIdx(1, 7, 0, 1, nil, nil, []int64{0}), ErrBadDType, "floating-point"},
		{"unknown dtype", rawIdx(1, 9, 0, 1, nil, nil, []int64{0}), ErrBadDType, "unknown dtype code 9"},
		// A count the file's size does not fit, where the other count fits it exactly
		// with doc_idx ending where it must, is a damaged header, not a truncated file.
		{"absurd n_seq", rawIdx(1, 8, math.MaxUint64, 1, nil, nil, []int64{0}), ErrCorrupt, "n_seq = 0 does, with n_docidx = 1 and doc_idx ending at 0: the header is damaged"},
		{"absurd n_docidx", rawIdx(1, 8, 0, 1<<61, nil, nil, []int64{0}), ErrCorrupt, "n_docidx = 1 does, with doc_idx ending at n_seq = 0: the header is damaged"},
		{"flipped n_seq", rawIdx(1, 8, 3|1<<40, 4, []int32{2, 0, 3}, []int64{0, 4, 4}, []int64{0, 1, 2, 3}), ErrCorrupt, "n_seq = 1099511627779 does not fit the file, but n_seq = 3 does"},
		{"flipped n_docidx", rawIdx(1, 8, 3, 4|1<<40, []int32{2, 0, 3}, []int64{0, 4, 4}, []int64{0, 1, 2, 3}), ErrCorrupt, "but n_docidx = 4 does"},
		{"n_seq past a cut file", rawIdx(1, 8, 3, 4, []int32{2, 0, 3}, []int64{0, 4, 4}, []int64{0, 1, 2, 3})[:HeaderSize+30], ErrTruncated, "n_seq = 3 needs"},
		{"truncated arrays", valid[:len(valid)-3], ErrTruncated, "n_docidx"},
		{"trailing bytes", append(append([]byte{}, valid...), 0, 0), ErrCorrupt, "2 unexpected bytes"},
		{"negative size", rawIdx(1, 8, 2, 3, []int32{-1, 2}, []int64{0, 0}, []int64{0, 1, 2}), ErrCorrupt, "sizes[0]"},
		{"pointer mismatch", rawIdx(1, 8, 3, 4, []int32{2, 0, 3}, []int64{0, 4, 6}, []int64{0, 1, 2, 3}), ErrCorrupt, "pointers[2]"},
		{"pointer not scaled", rawIdx(1, 8, 2, 3, []int32{2, 1}, []int64{0, 2}, []int64{0, 1, 2}), ErrCorrupt, "pointers[1]"},
		{"empty doc_idx", rawIdx(1, 8, 0, 0, nil, nil, nil), ErrCorrupt, "doc_idx is empty"},
		{"doc_idx start", rawIdx(1, 8, 1, 2, []int32{1}, []int64{0}, []int64{1, 1}), ErrCorrupt, "doc_idx[0]"},
		{"doc_idx decreasing", rawIdx(1, 8, 3, 4, []int32{2, 0, 3}, []int64{0, 4, 4}, []int64{0, 2, 1, 3}), ErrCorrupt, "doc_idx[2]"},
		{"doc_idx past end", rawIdx(1, 8, 3, 4, []int32{2, 0, 3}, []int64{0, 4, 4}, []int64{0, 1, 4, 4}), ErrCorrupt, "doc_idx[2]"},
		{"doc_idx short end", rawIdx(1, 8, 3, 3, []int32{2, 0, 3}, []int64{0, 4, 4}, []int64{0, 1, 2}), ErrCorrupt, "want n_seq = 3"},
		{"merged doc_idx", rawIdx(1, 8, 3, 1, []int32{2, 0, 3}, []int64{0, 4, 4}, []int64{0}), ErrMergedDocIdx, "merge_datasets.py"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseIndex("x.idx", tc.data)
			if !errors.Is(err, tc.sentinel) {
				t.Fatalf("err = %v, want %v", err, tc.sentinel)
			}
			var fe *FormatError
			if !errors.As(err, &fe) || fe.File != "x.idx" {
				t.Fatalf("err %v is not a *FormatError naming the file", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.mention) || !strings.Contains(msg, "x.idx") || !strings.Contains(msg, "HINT") {
				t.Errorf("message %q lacks %q, the file name or a hint", msg, tc.mention)
			}
		})
	}
}

func TestParseIndexValid(t *testing.T) {
	ix, err := ParseIndex("x.idx", validIdx())
	if err != nil {
		t.Fatal(err)
	}
	if ix.Len() != 3 || ix.NumTokens() != 5 || ix.BinSize() != 10 || ix.DType() != Uint16 || ix.Pointer(2) != 4 || ix.Size(2) != 3 {
		t.Fatalf("unexpected view: len %d tokens %d", ix.Len(), ix.NumTokens())
	}
	// Empty shard: no sequences, doc_idx [0].
	if ix, err := ParseIndex("e.idx", rawIdx(1, 4, 0, 1, nil, nil, []int64{0})); err != nil || ix.Len() != 0 || ix.MergedDocIdx() {
		t.Fatalf("empty shard: %v", err)
	}
	// The merged form with the option.
	ix, err = ParseIndex("m.idx", rawIdx(1, 8, 3, 1, []int32{2, 0, 3}, []int64{0, 4, 4}, []int64{0}), AllowMergedDocIdx())
	if err != nil || !ix.MergedDocIdx() {
		t.Fatalf("merged with option: %v", err)
	}
	// Every integer dtype reads.
	for _, c := range []byte{1, 2, 3, 4, 5, 8} {
		if _, err := ParseIndex("d.idx", rawIdx(1, c, 1, 2, []int32{3}, []int64{0}, []int64{0, 1})); err != nil {
			t.Errorf("dtype %d: %v", c, err)
		}
	}
}

func TestCheckBinSize(t *testing.T) {
	ix, err := ParseIndex("x.idx", validIdx())
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.CheckBinSize("x.bin", 10); err != nil {
		t.Fatal(err)
	}
	if err := ix.CheckBinSize("x.bin", 9); !errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), "x.bin") || !strings.Contains(err.Error(), "another shard's") {
		t.Errorf("short .bin: %v", err)
	}
	if err := ix.CheckBinSize("x.bin", 12); !errors.Is(err, ErrCorrupt) {
		t.Errorf("long .bin: %v", err)
	}
}

// TestWriteIndexRoundTrip: WriteIndex(ParseIndex(b)) == b for valid files.
func TestWriteIndexRoundTrip(t *testing.T) {
	for _, name := range []string{"neox_u16", "neox_i32", "neox_multi_u16", "neox_merged_u16"} {
		data, err := os.ReadFile(golden(name + ".idx"))
		if err != nil {
			t.Fatal(err)
		}
		ix, err := ParseIndex(name, data, AllowMergedDocIdx())
		if err != nil {
			t.Fatal(err)
		}
		if got := reencode(t, ix); !bytes.Equal(got, data) {
			t.Errorf("%s: re-encoded index differs", name)
		}
	}
}

func reencode(t testing.TB, ix *Index) []byte {
	sizes := make([]int32, ix.Len())
	for i := range sizes {
		sizes[i] = int32(ix.Size(i))
	}
	docIdx := make([]int64, ix.NumDocIdx())
	for j := range docIdx {
		docIdx[j] = ix.DocIdx(j)
	}
	var buf bytes.Buffer
	if err := WriteIndex(&buf, ix.DType(), sizes, docIdx); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestDType(t *testing.T) {
	if DTypeForVocab(50257) != Uint16 || DTypeForVocab(65499) != Uint16 || DTypeForVocab(65500) != Int32 || DTypeForVocab(100277) != Int32 {
		t.Error("DTypeForVocab does not follow GPT-NeoX's threshold of 65500")
	}
	for _, d := range []DType{Uint8, Int8, Int16, Int32, Int64, Uint16} {
		got, err := ParseDType(d.String())
		if err != nil || got != d {
			t.Errorf("ParseDType(%s) = %v, %v", d, got, err)
		}
	}
	if _, err := ParseDType("float32"); !errors.Is(err, ErrBadDType) {
		t.Errorf("ParseDType(float32) = %v", err)
	}
}
