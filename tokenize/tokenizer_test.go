package tokenize

import (
	"slices"
	"strings"
	"testing"
)

func TestNeoXSpaceRuns(t *testing.T) {
	tok := sharedTokenizer(t, "neox-20b")
	id := func(s string) int {
		i, ok := tok.ID(s)
		if !ok {
			t.Fatalf("no token %q", s)
		}
		return i
	}
	sp := func(n int) int { return id(strings.Repeat(" ", n)) }
	for _, tc := range []struct {
		text string
		want []int
	}{
		// From shared/tokenizers/NOTES.md §2, checked against HF.
		{"a  b", []int{id("a"), 50276, id("b")}},
		{"  's", []int{50276, id("'s")}},
		{strings.Repeat(" ", 25) + "x", []int{50254, id(" x")}},
		{strings.Repeat(" ", 26) + "x", []int{50254, 50276, id("x")}},
		{"<|endoftext|><|padding|>", []int{0, 1}},
	} {
		if got := tok.Encode(tc.text); !slices.Equal(got, tc.want) {
			t.Errorf("Encode(%q) = %v, want %v", tc.text, got, tc.want)
		}
	}
	if sp(2) != 50276 || sp(24) != 50254 {
		t.Errorf("space-run ids: 2 spaces %d, 24 spaces %d", sp(2), sp(24))
	}
}

func TestGPT2Examples(t *testing.T) {
	tok := sharedTokenizer(t, "gpt2")
	for _, tc := range []struct {
		text string
		want []string
	}{
		{"x<|endoftext|> y", []string{"x", "<|endoftext|>", " y"}},
		{"IT'S", []string{"IT", "'", "S"}},
		{"  foo", []string{" ", " foo"}},
		{"a \tb", []string{"a", " ", "\t", "b"}},
		{"<|padding|>", []string{"<", "|", "padding", "|", ">"}},
	} {
		var got []string
		for _, id := range tok.Encode(tc.text) {
			got = append(got, string(tok.TokenBytes(id)))
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("Encode(%q) tokens = %q, want %q", tc.text, got, tc.want)
		}
	}
}

func TestTokenizerFacts(t *testing.T) {
	for _, tc := range []struct {
		name       string
		vocab, eod int
	}{
		{"gpt2", 50257, 50256}, {"gpt2-files", 50257, 50256}, {"neox-20b", 50277, 0},
		{"cl100k_base", 100277, 100257}, {"o200k_base", 200019, 199999},
	} {
		tok := sharedTokenizer(t, tc.name)
		if tok.VocabSize() != tc.vocab || tok.EOD() != tc.eod {
			t.Errorf("%s: vocab %d eod %d, want %d %d", tc.name, tok.VocabSize(), tok.EOD(), tc.vocab, tc.eod)
		}
		if len(tok.Fingerprint()) != 64 {
			t.Errorf("%s: fingerprint %q", tc.name, tok.Fingerprint())
		}
	}
	a, b := sharedTokenizer(t, "gpt2"), sharedTokenizer(t, "gpt2-files")
	if a.Fingerprint() != b.Fingerprint() {
		t.Errorf("GPT-2 from tokenizer.json and from vocab.json+merges.txt: fingerprints differ")
	}
	if a.Fingerprint() == sharedTokenizer(t, "neox-20b").Fingerprint() {
		t.Errorf("GPT-2 and NeoX share a fingerprint")
	}
}

func TestDecodeRoundTripGolden(t *testing.T) {
	gpt2, neox := sharedTokenizer(t, "gpt2"), sharedTokenizer(t, "neox-20b")
	n := 0
	for i, d := range readGolden(t, "gpt2") {
		if got := gpt2.Decode(gpt2.Encode(d.Text)); got != d.Text {
			t.Fatalf("gpt2 line %d: round trip differs", i+1)
		}
		if NFC(d.Text) == d.Text {
			n++
			if got := neox.Decode(neox.Encode(d.Text)); got != d.Text {
				t.Fatalf("neox-20b line %d: round trip differs", i+1)
			}
		}
	}
	if n < 1500 { // of the 1,896 sampled documents
		t.Fatalf("only %d lines are NFC-stable; expected most of the corpus", n)
	}
}

func TestReplaceInvalidUTF8(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"abc", "abc"},
		{"\xff", "\uFFFD"},
		{"\xff\xfe", "\uFFFD\uFFFD"},                     // one per maximal subpart, not per run
		{"\xe2\x82", "\uFFFD"},                           // truncated 3-byte sequence: one subpart
		{"\xe2\x82x", "\uFFFDx"},                         //
		{"\xed\xa0\x80", "\uFFFD\uFFFD\uFFFD"},           // surrogate: ED then two lone continuations
		{"\xf0\x9f\x98", "\uFFFD"},                       // truncated emoji
		{"\xf4\x90\x80\x80", "\uFFFD\uFFFD\uFFFD\uFFFD"}, // above U+10FFFF
		{"\xc0\xaf", "\uFFFD\uFFFD"},                     // overlong
	} {
		if got := ReplaceInvalidUTF8(tc.in); got != tc.want {
			t.Errorf("ReplaceInvalidUTF8(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestEncodeBatchKeepsOrder(t *testing.T) {
	tok := sharedTokenizer(t, "gpt2")
	docs := readGolden(t, "gpt2")
	texts := make([]string, len(docs))
	for i, d := range docs {
		texts[i] = d.Text
	}
	for _, workers := range []int{1, 2, 7} {
		got := tok.EncodeBatch(texts, workers)
		for i := range docs {
			if !slices.Equal(got[i], docs[i].IDs) {
				t.Fatalf("workers %d: text %d differs", workers, i)
			}
		}
	}
}

func TestCharTokenizers(t *testing.T) {
	c := NewCharsFromText("hello, world\n", "shakespeare-char")
	if c.VocabSize() != 10 || c.EOD() != -1 {
		t.Fatalf("vocab %d eod %d", c.VocabSize(), c.EOD())
	}
	ids := c.Encode("hello")
	if got := c.Decode(ids); got != "hello" {
		t.Fatalf("round trip %q", got)
	}
	if _, err := c.EncodeChecked("hello!"); err == nil || !strings.Contains(err.Error(), "byte offset 5") {
		t.Fatalf("EncodeChecked on an unknown character: %v", err)
	}
	// Invalid UTF-8 is named as the input's bytes at their own offsets (an 0xff byte was
	// the character '\uFFFD', and offsets after a replacement were shifted).
	for _, tc := range []struct{ text, want string }{
		{"h\xffe", "invalid UTF-8 byte 0xff at byte offset 1"},
		{"h\xe2\x82e", "invalid UTF-8 bytes 0xe2 0x82 at byte offset 1"},
		{"\xffh\xffe!", "invalid UTF-8 byte 0xff at byte offset 0"},
		{"h\uFFFDe", "character '\uFFFD' at byte offset 1"}, // the character itself
		// which a JSON line's invalid UTF-8 became when it was read (tokenize run,
		// encode --jsonl): the message says so, and what to do.
		{"h\uFFFDe", "invalid UTF-8 replaced when the input was read"},
	} {
		if _, err := c.EncodeChecked(tc.text); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("EncodeChecked(%q): %v, want %q", tc.text, err, tc.want)
		}
	}
	// Unchecked, invalid bytes are skipped; a vocabulary with U+FFFD encodes each maximal
	// ill-formed subpart as it, as ReplaceInvalidUTF8 would.
	if got := c.Encode("h\xff\xe2\x82e"); !slices.Equal(got, c.Encode("he")) {
		t.Errorf("Encode skipping invalid bytes: %v", got)
	}
	r := NewCharsFromText("ab\uFFFD", "r")
	if _, err := r.EncodeChecked("a\xff\xffb!"); err == nil || !strings.Contains(err.Error(), "character '!' at byte offset 4 ") {
		t.Errorf("EncodeChecked after invalid bytes: %v, want offset 4 (the input's)", err)
	}
	for _, text := range []string{"a\xffb\xe2\x82\xe2\x82a", "\xf0\x9f\x98"} {
		want := r.Encode(ReplaceInvalidUTF8(text))
		if got, err := r.EncodeChecked(text); err != nil || !slices.Equal(got, want) {
			t.Errorf("EncodeChecked(%q) = %v, %v, want %v", text, got, err, want)
		}
	}
	data, err := c.MarshalChars()
	if err != nil {
		t.Fatal(err)
	}
	c2, err := LoadChars(data, "again")
	if err != nil || !slices.Equal(c2.Encode("world"), c.Encode("world")) || c2.Fingerprint() != c.Fingerprint() {
		t.Fatalf("LoadChars: %v", err)
	}
	n := NewNeoXChar()
	if got := n.Encode("hé"); !slices.Equal(got, []int{'h', 0xC3, 0xA9}) || n.Decode(got) != "hé" || n.EOD() != 0 || n.VocabSize() != 512 {
		t.Fatalf("NeoX char: %v", got)
	}
}

func TestLoadErrorsNameTheProblem(t *testing.T) {
	for _, tc := range []struct {
		load func() error
		want string
	}{
		{func() error { _, err := LoadHFJSON([]byte("{\n\"model\": ,}"), "x.json"); return err }, "line 2"},
		{func() error {
			_, err := LoadHFJSON([]byte(`{"model":{"type":"Unigram","vocab":{}}}`), "x.json")
			return err
		}, "Unigram"},
		{func() error { _, err := LoadVocabMerges([]byte(`{}`), []byte("a b\n"), "g"); return err }, "vocab.json is empty"},
		{func() error {
			_, err := LoadVocabMerges([]byte(`{"a":0,"b":1}`), []byte("#version: 0.2\na b\nbad\n"), "g")
			return err
		}, "merges.txt line 3"},
		{func() error { _, err := LoadTiktoken([]byte("YQ== 0\nnot-base64! 1\n"), "cl100k_base"); return err }, "line 2"},
		{func() error { _, err := LoadTiktoken(nil, "p50k"); return err }, "unknown tiktoken encoding"},
	} {
		err := tc.load()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want it to mention %q", err, tc.want)
		}
	}
}

// TestAppendEncodeInt32: the int32 encode path gives Encode's ids, appended, for every
// kind of tokenizer, and fails on a character a character vocabulary lacks when checked.
func TestAppendEncodeInt32(t *testing.T) {
	texts := append([]string{"", "Hello, world <|endoftext|> it's   x\n\n"}, tricky...)
	for _, name := range []string{"gpt2", "neox-20b", "cl100k_base", "o200k_base"} {
		tok := sharedTokenizer(t, name)
		for _, s := range texts {
			got, err := tok.AppendEncodeInt32([]int32{-1}, s, true)
			want := tok.Encode(s)
			if err != nil || len(got) != len(want)+1 || got[0] != -1 {
				t.Fatalf("%s: AppendEncodeInt32(%q) = %v, %v; Encode %v", name, s, got, err, want)
			}
			for i, id := range want {
				if int(got[i+1]) != id {
					t.Fatalf("%s: AppendEncodeInt32(%q)[%d] = %d, Encode %d", name, s, i, got[i+1], id)
				}
			}
		}
	}
	char := NewNeoXChar()
	if got, _ := char.AppendEncodeInt32(nil, "ab", false); len(got) != 2 || got[0] != 'a' {
		t.Errorf("neox-char: %v", got)
	}
}
