package tokenize

import (
	"bytes"
	"slices"
	"testing"
)

// TestCompiledRoundTrip: a tokenizer loaded from its compiled form is the tokenizer it
// was compiled from (same definition: vocabulary, merges and their ranks, added tokens,
// flags, fingerprint) and gives the same ids on the golden texts; compiling it again
// gives the same bytes.
func TestCompiledRoundTrip(t *testing.T) {
	for _, name := range []string{"gpt2", "neox-20b", "cl100k_base", "o200k_base"} {
		t.Run(name, func(t *testing.T) {
			src := sharedTokenizer(t, name)
			data, err := src.MarshalCompiled()
			if err != nil {
				t.Fatal(err)
			}
			tok, err := LoadCompiled(bytes.Clone(data), "renamed")
			if err != nil {
				t.Fatal(err)
			}
			if tok.Name() != "renamed" || tok.Fingerprint() != src.Fingerprint() {
				t.Fatalf("name %q, fingerprint %s, want %s", tok.Name(), tok.Fingerprint(), src.Fingerprint())
			}
			// What the fingerprint stands for, recomputed from what was loaded.
			if fp := tok.computeFingerprint(); fp != src.Fingerprint() {
				t.Errorf("recomputed fingerprint %s, want %s", fp, src.Fingerprint())
			}
			if !slices.Equal(tok.mergeTable(), src.mergeTable()) || !slices.Equal(tok.vocab.strings(), src.vocab.strings()) || !slices.Equal(tok.wholeBad, src.wholeBad) {
				t.Errorf("vocabulary, merges or whole_bad differ")
			}
			if tok.monotone != src.monotone || tok.maxRank != src.maxRank || tok.maxTokenByteLen != src.maxTokenByteLen ||
				tok.byteIDs != src.byteIDs || tok.cuttable != src.cuttable || tok.EOD() != src.EOD() || tok.VocabSize() != src.VocabSize() {
				t.Errorf("derived fields differ")
			}
			for _, d := range readGolden(t, name)[:300] {
				if got, want := tok.Encode(d.Text), d.IDs; !slices.Equal(got, want) {
					t.Fatalf("%s", firstDiff(tok, d.Text, got, want))
				}
			}
			same, err := LoadCompiled(data, "")
			if err != nil {
				t.Fatal(err)
			}
			again, err := same.MarshalCompiled()
			if err != nil || !bytes.Equal(again, data) {
				t.Errorf("compiled again: %d bytes (%v), first time %d", len(again), err, len(data))
			}
		})
	}
}

// FuzzLoadCompiled: LoadCompiled never panics, whatever the bytes; what it accepts
// encodes and decodes without panicking.
func FuzzLoadCompiled(f *testing.F) {
	tiny, err := LoadHFJSON(tinyTokenizer(f), "tiny")
	if err != nil {
		f.Fatal(err)
	}
	data, err := tiny.MarshalCompiled()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add(data[:len(data)/2])
	f.Add([]byte(compiledMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		tok, err := LoadCompiled(data, "")
		if err != nil {
			return
		}
		for _, s := range []string{"the the  thé <|endoftext|>x", "ab ba", "\xff", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"} {
			_ = tok.Decode(tok.Encode(s))
		}
	})
}
