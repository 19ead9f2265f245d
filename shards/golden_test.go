package shards

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// The documents testdata/make_golden.py feeds GPT-NeoX's builder (keep in sync).
var (
	goldenU16 = [][]int{{464, 2068, 7586, 21831, 50256}, {}, {0, 65535, 1, 65534, 50256}, {11, 11, 11, 11, 11, 11, 11, 50256}}
	goldenI32 = [][]int{{100257, 2147483647, 0, 1}, {5}, {}, {199997, 100256, 65536, 65535, 7}}
	// neox_multi_u16: sequences, grouped into documents by doc_idx [0,2,3,3,5].
	goldenMultiSeqs   = [][]int{{1, 2}, {3}, {4, 5, 6}, {7}, {8, 9, 10, 11}}
	goldenMultiDocIdx = []int64{0, 2, 3, 3, 5}
)

func golden(name string) string { return filepath.Join("testdata", name) }

// TestWriterMatchesNeoX: our Writer's files are byte-identical to MMapIndexedDatasetBuilder's.
func TestWriterMatchesNeoX(t *testing.T) {
	for _, tc := range []struct {
		name string
		dt   DType
		docs [][]int
	}{
		{"neox_u16", Uint16, goldenU16},
		{"neox_i32", Int32, goldenI32},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newTestStore(t)
			info := writeShard(t, st, "out/"+tc.name, tc.dt, tc.docs)
			for _, ext := range []string{".bin", ".idx"} {
				want, err := os.ReadFile(golden(tc.name + ext))
				if err != nil {
					t.Fatalf("%v (regenerate with python3 shards/testdata/make_golden.py)", err)
				}
				mustEqualBytes(t, tc.name+ext, st.read(t, "out/"+tc.name+ext), want)
			}
			if info.BinSHA256 != sha256Hex(st.read(t, "out/"+tc.name+".bin")) || info.IdxSHA256 != sha256Hex(st.read(t, "out/"+tc.name+".idx")) {
				t.Errorf("ShardInfo checksums do not match the files: %+v", info)
			}
			var toks int64
			for _, d := range tc.docs {
				toks += int64(len(d))
			}
			if info.Documents != int64(len(tc.docs)) || info.Tokens != toks || info.Prefix != "out/"+tc.name {
				t.Errorf("info = %+v, want %d documents, %d tokens", info, len(tc.docs), toks)
			}
		})
	}
}

// TestReadGolden: the reader reads GPT-NeoX's files back.
func TestReadGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		dt   DType
		docs [][]int
	}{
		{"neox_u16", Uint16, goldenU16},
		{"neox_i32", Int32, goldenI32},
		{"neox_multi_u16", Uint16, goldenMultiSeqs},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Open(golden(tc.name))
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if r.DType() != tc.dt || r.Len() != len(tc.docs) {
				t.Fatalf("dtype %s len %d, want %s %d", r.DType(), r.Len(), tc.dt, len(tc.docs))
			}
			var total int64
			for i, want := range tc.docs {
				total += int64(len(want))
				if got := r.Tokens(i); !equalInts(got, want) {
					t.Errorf("doc %d = %v, want %v", i, got, want)
				}
				if r.Size(i) != len(want) || len(r.Doc(i)) != len(want)*tc.dt.Size() {
					t.Errorf("doc %d: size %d, %d bytes", i, r.Size(i), len(r.Doc(i)))
				}
				var typed []int
				if tc.dt == Uint16 {
					for _, v := range r.DocUint16(i) {
						typed = append(typed, int(v))
					}
				} else {
					for _, v := range r.DocInt32(i) {
						typed = append(typed, int(v))
					}
				}
				if !equalInts(typed, want) && len(want) > 0 {
					t.Errorf("doc %d typed view = %v, want %v", i, typed, want)
				}
			}
			if r.NumTokens() != total {
				t.Errorf("NumTokens = %d, want %d", r.NumTokens(), total)
			}
			if tc.name == "neox_multi_u16" {
				ix := r.Index()
				var got []int64
				for j := 0; j < ix.NumDocIdx(); j++ {
					got = append(got, ix.DocIdx(j))
				}
				if len(got) != len(goldenMultiDocIdx) {
					t.Fatalf("doc_idx = %v, want %v", got, goldenMultiDocIdx)
				}
				for j := range got {
					if got[j] != goldenMultiDocIdx[j] {
						t.Fatalf("doc_idx = %v, want %v", got, goldenMultiDocIdx)
					}
				}
			}
		})
	}
}

// TestReadNeoXMerged: merge_datasets.py output (doc_idx [0]) needs AllowMergedDocIdx.
func TestReadNeoXMerged(t *testing.T) {
	_, err := Open(golden("neox_merged_u16.idx"))
	if !errors.Is(err, ErrMergedDocIdx) {
		t.Fatalf("Open = %v, want ErrMergedDocIdx", err)
	}
	r, err := Open(golden("neox_merged_u16.bin"), AllowMergedDocIdx())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if !r.MergedDocIdx() || r.Len() != len(goldenU16) {
		t.Fatalf("merged=%v len=%d", r.MergedDocIdx(), r.Len())
	}
	for i, want := range goldenU16 {
		if got := r.Tokens(i); !equalInts(got, want) {
			t.Errorf("doc %d = %v, want %v", i, got, want)
		}
	}
}
