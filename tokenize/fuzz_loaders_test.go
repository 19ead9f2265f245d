package tokenize

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// The loaders of the other tokenizer files: each never panics, and a tokenizer it
// accepts encodes and decodes without panicking (BPE: as the reference encoder does).

// fuzzTexts are what an accepted tokenizer encodes.
var fuzzTexts = []string{"the the  thé <|endoftext|>x", "ab ba\r\n12", "\xff", ""}

// checkLoaded encodes fuzzTexts with tok, against the reference for BPE.
func checkLoaded(t *testing.T, tok *Tokenizer) {
	t.Helper()
	for _, s := range fuzzTexts {
		if tok.Kind() != KindBPE {
			if ids, err := tok.EncodeChecked(s); err == nil {
				_ = tok.Decode(ids)
			}
			continue
		}
		got, want := tok.Encode(s), tok.refEncode(s)
		if !slices.Equal(got, want) {
			t.Fatalf("Encode(%q) = %v, reference %v", s, got, want)
		}
		_ = tok.Decode(got)
	}
}

// FuzzLoadVocabMerges: GPT-2's vocab.json and merges.txt, fuzzed apart (the input is
// cut at its first NUL byte: before it vocab.json, after it merges.txt).
func FuzzLoadVocabMerges(f *testing.F) {
	var vocab strings.Builder
	vocab.WriteString("{")
	for i := range 256 {
		if i > 0 {
			vocab.WriteString(",")
		}
		fmt.Fprintf(&vocab, "%q:%d", byteLevelEncode(string([]byte{byte(i)})), i)
	}
	vocab.WriteString(`,"th":256,"the":257,"Ġthe":258,"Ġt":259}`)
	f.Add(vocab.String() + "\x00#version: 0.2\nt h\nth e\nĠ t\nĠ the\n")
	f.Add(`{"a":0}` + "\x00a a\n")
	f.Add(`{"a":0,"b":1,"ab":2}` + "\x00#version: 0.2\r\na b\r\n")
	f.Add("[]\x00")
	f.Fuzz(func(t *testing.T, data string) {
		vocabJSON, merges, _ := strings.Cut(data, "\x00")
		tok, err := LoadVocabMerges([]byte(vocabJSON), []byte(merges), "fuzz")
		if err != nil {
			return
		}
		checkLoaded(t, tok)
	})
}

// FuzzLoadTiktoken: a tiktoken rank file ("base64-token rank" lines) under
// cl100k_base's pattern and special tokens.
func FuzzLoadTiktoken(f *testing.F) {
	var ranks strings.Builder
	for i := range 256 {
		fmt.Fprintf(&ranks, "%s %d\n", base64.StdEncoding.EncodeToString([]byte{byte(i)}), i)
	}
	for i, tok := range []string{"th", "the", " t", " the"} {
		fmt.Fprintf(&ranks, "%s %d\n", base64.StdEncoding.EncodeToString([]byte(tok)), 256+i)
	}
	f.Add(ranks.String())
	f.Add("YQ== 0\nYg== 1\r\nYWI= 2")
	f.Add("YQ== 0\nYQ== 1\n")
	f.Add("!!! 0\n")
	f.Fuzz(func(t *testing.T, data string) {
		tok, err := LoadTiktoken([]byte(data), "cl100k_base")
		if err != nil {
			return
		}
		checkLoaded(t, tok)
	})
}

// FuzzLoadChars: a character vocabulary (chars.json, MarshalChars's form).
func FuzzLoadChars(f *testing.F) {
	f.Add(`{"type":"char","chars":["\n"," ","a","b","é"]}`)
	f.Add(`{"type":"char","chars":["a","a"]}`)
	f.Add(`{"type":"char","chars":["ab"]}`)
	f.Add(`{"type":"bpe"}`)
	f.Fuzz(func(t *testing.T, data string) {
		tok, err := LoadChars([]byte(data), "fuzz")
		if err != nil {
			return
		}
		checkLoaded(t, tok)
	})
}
