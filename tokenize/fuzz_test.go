package tokenize

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func addTrickySeeds(f *testing.F) {
	for _, s := range tricky {
		f.Add(s)
	}
}

// FuzzEncodeMatchesReference: the hand-made GPT-2 scanner equals the regex on any input,
// and the fast encoder the slow, literal reference on any of up to fuzzRefMaxLen bytes.
func FuzzEncodeMatchesReference(f *testing.F) {
	addTrickySeeds(f)
	gpt2, neox := sharedTokenizer(f, "gpt2"), sharedTokenizer(f, "neox-20b")
	f.Fuzz(func(t *testing.T, s string) {
		v := ReplaceInvalidUTF8(s)
		if got, want := splitAll(splitGPT2, new(classWindow), v, nil), refSplitGPT2(v, nil); !slices.Equal(got, want) {
			t.Fatalf("splitGPT2(%q) = %q, regex gives %q", v, splitPieces(v, got), splitPieces(v, want))
		}
		if len(s) > fuzzRefMaxLen {
			return
		}
		for _, tok := range []*Tokenizer{gpt2, neox} {
			want := tok.refEncode(s)
			if got := tok.Encode(s); !slices.Equal(got, want) {
				t.Fatalf("%s: %s", tok.Name(), firstDiff(tok, s, got, want))
			}
			// The entry point for text already checked, on the text after replacement.
			valid, err := tok.AppendEncodeValidInt32(nil, v, false)
			if err != nil {
				t.Fatalf("%s: AppendEncodeValidInt32(%q): %v", tok.Name(), v, err)
			}
			if got := int32sToInts(valid); !slices.Equal(got, want) {
				t.Fatalf("%s: AppendEncodeValidInt32: %s", tok.Name(), firstDiff(tok, s, got, want))
			}
		}
	})
}

// fuzzRefMaxLen is the longest input the fuzz targets compare with the reference. Its
// BPE is quadratic in a piece's length (one piece of glued letters: 1 KB ~50 ms, 4 KB
// ~0.3-0.5 s, 16 KB ~5 s per tokenizer), so mutations of the 2-3 KB seeds ran at a few
// a second where short inputs run at 400-1,500 (one worker). The longer tricky seeds are
// compared with the reference by TestEncodeMatchesReference, long pieces of every kind
// by TestBacktrack.
const fuzzRefMaxLen = 1024

func int32sToInts(ids []int32) []int {
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = int(id)
	}
	return out
}

// FuzzEncodeDecodeRoundTrip: decoding the ids gives the text back (after invalid UTF-8 is
// replaced; for NeoX, whenever NFC leaves the text unchanged).
func FuzzEncodeDecodeRoundTrip(f *testing.F) {
	addTrickySeeds(f)
	gpt2, neox := sharedTokenizer(f, "gpt2"), sharedTokenizer(f, "neox-20b")
	f.Fuzz(func(t *testing.T, s string) {
		v := ReplaceInvalidUTF8(s)
		if !utf8.ValidString(v) {
			t.Fatalf("ReplaceInvalidUTF8(%q) is not valid UTF-8", s)
		}
		if got := gpt2.Decode(gpt2.Encode(s)); got != v {
			t.Fatalf("gpt2 round trip of %q gave %q", v, got)
		}
		if NFC(v) == v {
			if got := neox.Decode(neox.Encode(s)); got != v {
				t.Fatalf("neox-20b round trip of %q gave %q", v, got)
			}
		}
	})
}

// tinyTokenizerJSON is a small valid tokenizer.json: the fuzz seed for the loader.
const tinyTokenizerJSON = `{"version":"1.0","added_tokens":[{"id":260,"content":"<|endoftext|>","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true}],
"normalizer":{"type":"NFC"},"pre_tokenizer":{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":true},
"post_processor":null,"decoder":{"type":"ByteLevel"},"model":{"type":"BPE","dropout":null,"unk_token":null,
"vocab":{BYTES,"Ġt":256,"he":257,"Ġthe":258,"ĠĠ":259,"<|endoftext|>":260},"merges":["Ġ t","h e","Ġt he","Ġ Ġ"]}}`

func tinyTokenizer(tb testing.TB) []byte {
	tb.Helper()
	b := []byte{}
	for i := 0; i < 256; i++ {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		switch r := byteToRune[i]; r {
		case '"', '\\':
			b = append(b, '\\', byte(r))
		default:
			b = utf8.AppendRune(b, r)
		}
		b = append(b, '"', ':')
		b = append(b, []byte(itoa(i))...)
	}
	return []byte(replaceOnce(tinyTokenizerJSON, "BYTES", string(b)))
}

func itoa(i int) string { return string(appendInt(nil, i)) }
func appendInt(b []byte, i int) []byte {
	if i >= 10 {
		b = appendInt(b, i/10)
	}
	return append(b, byte('0'+i%10))
}
func replaceOnce(s, old, new string) string {
	for i := 0; i+len(old) <= len(s); i++ {
		if s[i:i+len(old)] == old {
			return s[:i] + new + s[i+len(old):]
		}
	}
	return s
}

// FuzzLoadHFJSON: the loader never panics, and a tokenizer it accepts encodes and
// decodes without panicking and agrees with the reference encoder.
func FuzzLoadHFJSON(f *testing.F) {
	f.Add(tinyTokenizer(f))
	f.Add([]byte(`{"model":{"type":"BPE","vocab":{"a":0},"merges":[]},"pre_tokenizer":{"type":"ByteLevel"}}`))
	f.Add([]byte(`{"model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":[["a","b"]]},"pre_tokenizer":{"type":"Sequence","pretokenizers":[{"type":"ByteLevel","add_prefix_space":true}]}}`))
	f.Add([]byte(`{"model":{"type":"BPE","vocab":{"a":0,"\n":1,"é":2," ":3},"merges":[]},"decoder":{"type":"Fuse"}}`)) // a character vocabulary
	f.Add(tinyTiktokenHF(f))                                                                                           // a Split pre-tokenizer: a converted tiktoken encoding
	f.Add([]byte(`{"model":{"type":"WordPiece"}}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tok, err := LoadHFJSON(data, "fuzz")
		if err != nil {
			return
		}
		for _, s := range []string{"the the  thé <|endoftext|>x", "ab ba", "\xff"} {
			if tok.Kind() == KindChar {
				// A character vocabulary: each character it has is its id.
				var want []int
				for _, r := range ReplaceInvalidUTF8(s) {
					if id, ok := tok.charIDs[r]; ok {
						want = append(want, id)
					}
				}
				if got, err := tok.EncodeChecked(s); err == nil && !slices.Equal(got, want) {
					t.Fatalf("Encode(%q) = %v, want %v", s, got, want)
				}
				_ = tok.Decode(want)
				continue
			}
			got, want := tok.Encode(s), tok.refEncode(s)
			if !slices.Equal(got, want) {
				t.Fatalf("Encode(%q) = %v, reference %v", s, got, want)
			}
			_ = tok.Decode(got)
		}
	})
}

// FuzzMergeRanksMedium: tiktoken's merge loop for pieces of 9-256 bytes, which starts
// from characters where that changes nothing (bpe_chars.go), against mergeRanksShort,
// which starts from bytes, on any bytes (invalid UTF-8 too), under cl100k_base and
// o200k_base.
func FuzzMergeRanksMedium(f *testing.F) {
	for _, s := range []string{"中国的人是。", "，\xe5\xb8中", " 日本語のテキスト", "абв где", "\xe4\xb8\xad\xe5", "aaaaaaaaaaaa"} {
		f.Add(s)
	}
	toks := []*Tokenizer{sharedTokenizer(f, "cl100k_base"), sharedTokenizer(f, "o200k_base")}
	f.Fuzz(func(t *testing.T, p string) {
		if len(p) == 0 || len(p) > heapThreshold {
			return
		}
		for _, tok := range toks {
			st := tok.getState()
			want := slices.Clone(tok.mergeRanksShort(st, p))
			if got := tok.mergeRanksMedium(st, p); !slices.Equal(got, want) {
				t.Fatalf("%s: mergeRanksMedium(%q) = %v, mergeRanksShort %v", tok.Name(), p, got, want)
			}
			tok.putState(st)
		}
	})
}

// tinyTiktokenHF is the tokenizer.json of a tiny cl100k_base-patterned rank file (the
// 256 bytes, "ab" and " a"): the form WriteHFJSON gives a tiktoken encoding.
func tinyTiktokenHF(tb testing.TB) []byte {
	tb.Helper()
	var ranks strings.Builder
	for i, tok := range append(func() (bs []string) {
		for b := range 256 {
			bs = append(bs, string([]byte{byte(b)}))
		}
		return bs
	}(), "ab", " a") {
		fmt.Fprintf(&ranks, "%s %d\n", base64.StdEncoding.EncodeToString([]byte(tok)), i)
	}
	tok, err := LoadTiktoken([]byte(ranks.String()), "cl100k_base")
	if err != nil {
		tb.Fatal(err)
	}
	var buf bytes.Buffer
	if err := tok.WriteHFJSON(&buf); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}
