package tokenize

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// hfWriteTexts are texts whose ids the written tokenizer.json must reproduce: added
// tokens, whitespace runs (NeoX's added tokens), text NFC changes, other scripts.
var hfWriteTexts = []string{
	"", " ", "  ", "   leading", "trailing   ", "a  b   c    d", "tabs\t\tand\nnewlines\n\n\nx",
	"\r\nwindows\r\n", "it's IT'S it''s we'll they've I'd", "123 4567 8.9e10 3.14159265358979",
	"héllo wörld — “quotes” 日本語 🙂 \u00a0nbsp \u2028sep", "e\u0301 combining, Å and A\u030a",
	"<|endoftext|>", "x<|endoftext|> y", "<|endoftext|><|endoftext|>\n<|endoftext|>", "<|endoftext", "<|padding|>",
	"def f(x):\n    return x  # comment\n\t\tpass\n", strings.Repeat("abcdefghij", 40), strings.Repeat("9", 300),
	"Привет, мир! Γειά σου Κόσμε! مرحبا بالعالم", "ﬁ ligature ① ﬀ", strings.Repeat(" ", 40) + "indented",
}

// TestWriteHFJSONRoundTrip: the tokenizer.json written for a byte-level BPE tokenizer
// or a character vocabulary loads back to the same fingerprint (everything that decides
// the ids) and ids.
func TestWriteHFJSONRoundTrip(t *testing.T) {
	trained, _ := trainedShakespeare(t)
	fromTrained, err := trained.Tokenizer("shakespeare-1000")
	if err != nil {
		t.Fatal(err)
	}
	ignoring, err := LoadHFJSON([]byte(`{"added_tokens": [{"id": 7, "content": "<s>", "special": true, "normalized": false}],
	"normalizer": {"type": "NFC"}, "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": true},
	"model": {"type": "BPE", "ignore_merges": true,
	  "vocab": {"a": 0, "b": 1, "c": 2, "ab": 3, "bc": 4, "abc": 5, "Ġ": 6},
	  "merges": ["a b", "b c"]}}`), "ignoring")
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]*Tokenizer{
		"gpt2": sharedTokenizer(t, "gpt2"), "gpt2-files": sharedTokenizer(t, "gpt2-files"),
		"neox-20b": sharedTokenizer(t, "neox-20b"), "trained": fromTrained, "ignore_merges": ignoring,
		"chars":       NewCharsFromText(trainCorpus(t)+"é€🙂\u00a0", "chars"),
		"cl100k_base": sharedTokenizer(t, "cl100k_base"), "o200k_base": sharedTokenizer(t, "o200k_base"),
	}
	for name, tok := range cases {
		var buf bytes.Buffer
		if err := tok.WriteHFJSON(&buf); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !json.Valid(buf.Bytes()) {
			t.Fatalf("%s: the output is not JSON", name)
		}
		back, err := LoadHFJSON(buf.Bytes(), name)
		if err != nil {
			t.Fatalf("%s: load the output: %v", name, err)
		}
		if back.Fingerprint() != tok.Fingerprint() {
			t.Errorf("%s: fingerprint %s after the round trip, %s before", name, back.Fingerprint(), tok.Fingerprint())
		}
		for _, s := range append(hfWriteTexts, "abc abcc cab", " abc<s>abc") {
			if got, want := back.Encode(s), tok.Encode(s); !reflect.DeepEqual(got, want) {
				t.Errorf("%s: %.40q: %v after the round trip, %v before", name, s, got, want)
			}
		}
	}
	// ignore_merges decides ids ("abc" is one token only with it), so the fingerprint holds it.
	plain, err := LoadHFJSON([]byte(`{"pre_tokenizer": {"type": "ByteLevel"}, "model": {"type": "BPE",
	  "vocab": {"a": 0, "b": 1, "c": 2, "ab": 3, "bc": 4, "abc": 5}, "merges": ["a b", "b c"]}}`), "plain")
	if err != nil {
		t.Fatal(err)
	}
	withIgnore, err := LoadHFJSON([]byte(`{"pre_tokenizer": {"type": "ByteLevel"}, "model": {"type": "BPE", "ignore_merges": true,
	  "vocab": {"a": 0, "b": 1, "c": 2, "ab": 3, "bc": 4, "abc": 5}, "merges": ["a b", "b c"]}}`), "plain")
	if err != nil {
		t.Fatal(err)
	}
	if a, b := plain.Encode("abc"), withIgnore.Encode("abc"); reflect.DeepEqual(a, b) {
		t.Fatalf("ignore_merges changes nothing here: %v", a)
	}
	if plain.Fingerprint() == withIgnore.Fingerprint() {
		t.Error("ignore_merges is not in the fingerprint")
	}
}

// A tiktoken rank file with GPT-2's pattern (r50k_base) has no form written.
func TestWriteHFJSONRefusesRanks(t *testing.T) {
	var ranks strings.Builder
	for i := range 256 {
		fmt.Fprintf(&ranks, "%s %d\n", base64.StdEncoding.EncodeToString([]byte{byte(i)}), i)
	}
	r50k, err := LoadTiktoken([]byte(ranks.String()), "r50k_base")
	if err != nil {
		t.Fatal(err)
	}
	if err := r50k.WriteHFJSON(&bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "r50k_base") {
		t.Fatalf("r50k_base: %v, want a refusal naming r50k_base", err)
	}
}

// TestWriteHFJSONHFParity: Hugging Face tokenizers loads the written files and gives our
// ids, and decodes them to the text.
func TestWriteHFJSONHFParity(t *testing.T) {
	peers := trainNodePeers(t)
	corpus := trainCorpus(t)
	chars := NewCharsFromText(corpus, "shakespeare-chars")
	lines := strings.SplitAfter(corpus, "\n")
	var charTexts []string
	for i := 0; i < len(lines) && len(charTexts) < 100; i += 131 {
		charTexts = append(charTexts, lines[i])
	}
	charTexts = append(charTexts, "", "\n", "  two  spaces\n\n", corpus[:5000])
	cases := []struct {
		name  string
		tok   *Tokenizer
		texts []string
	}{
		{"gpt2", sharedTokenizer(t, "gpt2"), append(hfWriteTexts, charTexts...)},
		{"neox-20b", sharedTokenizer(t, "neox-20b"), append(hfWriteTexts, charTexts...)},
		{"chars", chars, charTexts},
		{"cl100k_base", sharedTokenizer(t, "cl100k_base"), append(append(append(slices.Clone(hfWriteTexts), charTexts...), goldenTexts(t, "cl100k_base", 300)...), tiktokenEdgeTexts()...)},
		{"o200k_base", sharedTokenizer(t, "o200k_base"), append(append(append(slices.Clone(hfWriteTexts), charTexts...), goldenTexts(t, "o200k_base", 300)...), tiktokenEdgeTexts()...)},
	}
	for _, c := range cases {
		path := filepath.Join(t.TempDir(), "tokenizer.json")
		var buf bytes.Buffer
		if err := c.tok.WriteHFJSON(&buf); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		var in bytes.Buffer
		enc := json.NewEncoder(&in)
		for _, s := range c.texts {
			if err := enc.Encode(map[string]string{"text": s}); err != nil {
				t.Fatal(err)
			}
		}
		out := trainRunNode(t, peers, in.Bytes(), filepath.Join("testdata", "hf_encode.js"), path)
		results := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
		if len(results) != len(c.texts) {
			t.Fatalf("%s: hf_encode.js gave %d results for %d texts", c.name, len(results), len(c.texts))
		}
		for n, line := range results {
			var rec struct {
				IDs     []int
				Decoded string
			}
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("%s: hf_encode.js line %d: %v", c.name, n+1, err)
			}
			got := c.tok.Encode(c.texts[n])
			if len(got) != len(rec.IDs) || len(got) > 0 && !reflect.DeepEqual(got, rec.IDs) {
				t.Errorf("%s: text %d %.60q: ours %v, HF %v", c.name, n, c.texts[n], got, rec.IDs)
			}
			if want := c.tok.Decode(got); rec.Decoded != want {
				t.Errorf("%s: text %d %.60q: HF decodes to %.60q, ours to %.60q", c.name, n, c.texts[n], rec.Decoded, want)
			}
		}
	}
}

// goldenTexts is the texts of the first n documents of name's golden file.
func goldenTexts(t *testing.T, name string, n int) []string {
	var texts []string
	for _, d := range readGolden(t, name) {
		if len(texts) == n {
			break
		}
		texts = append(texts, d.Text)
	}
	return texts
}

// A Split pre-tokenizer loads only as transformers' conversion of a tiktoken encoding:
// without ignore_merges, with a merge the ranks do not give, or with another regex it is
// refused, naming what differs.
func TestLoadHFSplitOnlyTiktoken(t *testing.T) {
	var buf bytes.Buffer
	if err := sharedTokenizer(t, "cl100k_base").WriteHFJSON(&buf); err != nil {
		t.Fatal(err)
	}
	edit := func(f func(m map[string]any)) []byte {
		var m map[string]any
		if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		out, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	model := func(m map[string]any) map[string]any { return m["model"].(map[string]any) }
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"no ignore_merges", edit(func(m map[string]any) { model(m)["ignore_merges"] = false }), "ignore_merges"},
		{"merges swapped", edit(func(m map[string]any) {
			ms := model(m)["merges"].([]any)
			ms[1000], ms[1001] = ms[1001], ms[1000]
		}), "merge 1001"},
		{"another regex", edit(func(m map[string]any) {
			m["pre_tokenizer"].(map[string]any)["pretokenizers"].([]any)[0].(map[string]any)["pattern"] = map[string]any{"Regex": `\w+`}
		}), `Split with the regex "\\w+"`},
	} {
		if _, err := LoadHFJSON(c.data, c.name); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %q", c.name, err, c.want)
		}
	}
}
