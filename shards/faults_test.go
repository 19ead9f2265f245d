package shards

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"strings"
	"testing"

	"gptkit/storage"
)

// TestManifestCountOverflow: counts whose sum overflows int64 are reported as corrupt,
// never as a negative sum (issue 15, item 13).
func TestManifestCountOverflow(t *testing.T) {
	m := NewManifest(testTokenizer(50257), Uint16, nil)
	for _, p := range []string{"a", "b"} {
		m.Shards = append(m.Shards, ShardInfo{Prefix: p, Documents: math.MaxInt64/2 + 1, Tokens: math.MaxInt64/2 + 1,
			BinSHA256: strings.Repeat("a", 64), IdxSHA256: strings.Repeat("b", 64)})
	}
	m.Documents, m.Tokens = 1, 1
	err := m.Validate()
	if err == nil || !strings.Contains(err.Error(), "int64") || strings.Contains(err.Error(), "-9") {
		t.Fatalf("Validate = %v, want the overflow named and no negative sum", err)
	}
}

// TestVerifyChecksIDs: `shards verify` checks every token id against the manifest's
// vocabulary, naming the offset of the first outside it (issue 15, item 4).
func TestVerifyChecksIDs(t *testing.T) {
	ctx := context.Background()
	st, err := storage.Open(ctx, t.TempDir(), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewWriter(ctx, st, "d_text_document", Uint16)
	if err != nil {
		t.Fatal(err)
	}
	w.AddDocument([]int{1, 2, 3})
	w.AddDocument([]int{4, 60, 5}) // 60: outside a vocabulary of 50
	info, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	m := NewManifest(TokenizerInfo{Name: "t", Fingerprint: "f", VocabSize: 50, EODID: -1}, Uint16, nil)
	m.Add("", info)
	if err := WriteManifest(ctx, st, "", m); err != nil {
		t.Fatal(err)
	}
	probs, err := Verify(ctx, st, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(probs) != 1 || !errors.Is(probs[0].Err, ErrVocab) || !strings.Contains(probs[0].Err.Error(), "d_text_document.bin: byte 8 (document 1, token 1): token id 60") {
		t.Fatalf("Verify = %v, want the id 60 at byte 8", probs)
	}
}

// TestVocabHints: an id the model cannot embed is refused with the next step that fits
// why: the model's vocab_size below the manifest's tokenizer's is the model's fault (it
// told the user to re-tokenize the data with the tokenizer the manifest names, which
// made it), a bare shard's ids are checked against vocab_size alone (it told the user
// to fix a manifest there is none of).
func TestVocabHints(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := storage.Open(ctx, dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewWriter(ctx, st, "d_text_document", Uint16)
	if err != nil {
		t.Fatal(err)
	}
	w.AddDocument([]int{1, 2, 3})
	w.AddDocument([]int{4, 70, 5})
	info, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	m := NewManifest(TokenizerInfo{Name: "t", Fingerprint: "f", VocabSize: 100, EODID: -1}, Uint16, nil)
	m.Add("", info)
	if err := WriteManifest(ctx, st, "", m); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		open func() error
		want []string
	}{
		{"model smaller than the manifest", func() error {
			d, err := OpenDataset(ctx, st, "", "", VerifyOnOpen(64, t.TempDir()))
			if err == nil {
				d.Close()
			}
			return err
		}, []string{"byte 8 (document 1, token 1): token id 70 is outside the vocabulary [0,64)", "HINT: the model's vocab_size 64 is smaller than the 100 ids of the manifest's tokenizer t: set vocab_size to at least 100"}},
		{"bare shard", func() error {
			r, err := Open(dir+"/d_text_document", VerifyOnOpen(64, t.TempDir()))
			if err == nil {
				r.Close()
			}
			return err
		}, []string{"token id 70 is outside the vocabulary [0,64)", "HINT: a bare shard does not record its tokenizer", "set vocab_size to its tokenizer's vocabulary size"}},
	} {
		err := tc.open()
		if !errors.Is(err, ErrVocab) {
			t.Fatalf("%s: %v, want ErrVocab", tc.name, err)
		}
		for _, want := range tc.want {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error lacks %q:\n%v", tc.name, want, err)
			}
		}
		if strings.Contains(err.Error(), "re-run the stage that wrote the dataset with the tokenizer the manifest names") {
			t.Errorf("%s: the hint blames the data's tokenizer:\n%v", tc.name, err)
		}
	}
}

// TestVocabHintsByID: the hint follows the id the model cannot embed. A negative id (a
// damaged .bin) and an id outside the manifest's tokenizer too were told to "set
// vocab_size to at least N" when the model's vocab_size was the smaller, which fixes
// neither.
func TestVocabHintsByID(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		dt       DType
		id       uint64 // written at token 1 of document 1, in place of 70
		sentinel error
		want     string
	}{
		{"negative id", Int32, 1<<32 - 1, ErrNegativeID, "HINT: the .bin is damaged (no tokenizer makes a negative id)"},
		{"outside the manifest's tokenizer", Uint16, 150, ErrVocab, "HINT: it is outside the 100 ids of the manifest's tokenizer t too, so a larger vocab_size would not help: the shard's ids were not made by the manifest's tokenizer"},
	} {
		dir := t.TempDir()
		st, err := storage.Open(ctx, dir, storage.Options{})
		if err != nil {
			t.Fatal(err)
		}
		w, err := NewWriter(ctx, st, "d_text_document", tc.dt)
		if err != nil {
			t.Fatal(err)
		}
		w.AddDocument([]int{1, 2, 3})
		w.AddDocument([]int{4, 70, 5})
		info, err := w.Close()
		if err != nil {
			t.Fatal(err)
		}
		bin, err := os.ReadFile(dir + "/d_text_document.bin")
		if err != nil {
			t.Fatal(err)
		}
		off := 4 * tc.dt.Size()
		switch tc.dt {
		case Int32:
			binary.LittleEndian.PutUint32(bin[off:], uint32(tc.id))
		default:
			binary.LittleEndian.PutUint16(bin[off:], uint16(tc.id))
		}
		os.WriteFile(dir+"/d_text_document.bin", bin, 0o644)
		info.BinSHA256 = sha256Hex(bin) // the manifest as if it had been written so
		m := NewManifest(TokenizerInfo{Name: "t", Fingerprint: "f", VocabSize: 100, EODID: -1}, tc.dt, nil)
		m.Add("", info)
		if err := WriteManifest(ctx, st, "", m); err != nil {
			t.Fatal(err)
		}
		d, err := OpenDataset(ctx, st, "", "", VerifyOnOpen(64, t.TempDir()))
		if err == nil {
			d.Close()
		}
		if !errors.Is(err, tc.sentinel) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "set vocab_size") {
			t.Errorf("%s: %v\nwant %v and %q", tc.name, err, tc.sentinel, tc.want)
		}
	}
}

// TestMergeLocksOutput: a merge into a directory another writer holds fails naming it,
// rather than writing shards under the other's (issue 15, item 1, for `shards merge`).
func TestMergeLocksOutput(t *testing.T) {
	ctx := context.Background()
	st, err := storage.Open(ctx, t.TempDir(), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tok := testTokenizer(65536)
	w, _ := NewWriter(ctx, st, "a/a_text_document", Uint16)
	w.AddDocument([]int{1, 2})
	info, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	m := NewManifest(tok, Uint16, nil)
	m.Add("a", info)
	if err := WriteManifest(ctx, st, "a", m); err != nil {
		t.Fatal(err)
	}
	l, err := storage.LockDir(ctx, st, "out", "another merge")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if _, err := Merge(ctx, st, "out", []Input{{st, "a"}}, MergeOptions{}); !errors.Is(err, storage.ErrLocked) || !strings.Contains(err.Error(), "another merge") {
		t.Fatalf("Merge into a held directory = %v", err)
	}
}
