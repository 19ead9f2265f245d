package tokenize

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// splitFormFile is a tokenizer.json in the converted-tiktoken form (Split with
// cl100k_base's pattern, ByteLevel without regex, ignore_merges) with the 256 bytes at
// ids 0-255, the extra tokens (raw bytes -> id) and the merges (raw bytes).
func splitFormFile(t *testing.T, extra map[string]int, merges [][2]string) []byte {
	vocab := map[string]int{}
	for b := range 256 {
		vocab[byteLevelEncode(string([]byte{byte(b)}))] = b
	}
	for s, id := range extra {
		vocab[byteLevelEncode(s)] = id
	}
	var ms []string
	for _, m := range merges {
		ms = append(ms, byteLevelEncode(m[0])+" "+byteLevelEncode(m[1]))
	}
	v, _ := json.Marshal(vocab)
	mj, _ := json.Marshal(ms)
	if ms == nil {
		mj = []byte("[]")
	}
	return []byte(`{"version": "1.0", "added_tokens": [], "normalizer": null, "pre_tokenizer": ` + hfSplitPre("cl100k_base") +
		`, "post_processor": null, "decoder": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},` +
		` "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null, "end_of_word_suffix": null,` +
		` "fuse_unk": false, "byte_fallback": false, "ignore_merges": true, "vocab": ` + string(v) + `, "merges": ` + string(mj) + `}}`)
}

// The Split form is loaded as a tiktoken encoding only where the merges list gives the
// ranks' ids: a token built from a part ranked above it ("abc" 256 from "bc" 257:
// tiktoken merges bc, then abc, in "abcd"; HF with the derived merges never builds abc)
// or ranked below one of its bytes ("ab" 97 with byte "a" at 300) is refused, naming
// the token; HF gives other ids than the ranks on such files (checked with HF
// tokenizers by the review that found them: "abcd" as a, bc, d; "abc" as a, b, c).
func TestLoadHFSplitRefusesNonTiktokenRanks(t *testing.T) {
	for _, c := range []struct {
		name   string
		extra  map[string]int
		merges [][2]string
		want   string
	}{
		{"part ranked above the token", map[string]int{"abc": 256, "bc": 257}, [][2]string{{"b", "c"}}, `token "abc" (rank 256)`},
		{"byte ranked above the token", map[string]int{"a": 300, "ab": 97}, nil, `token "ab" (rank 97)`},
	} {
		if _, err := LoadHFJSON(splitFormFile(t, c.extra, c.merges), c.name); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a refusal naming %s", c.name, err, c.want)
		}
	}
}

// A vocabulary id near the int range's end is refused (it overflowed asTiktoken's
// bound, n = id+1, and indexed past byRank: a panic).
func TestLoadHFSplitHugeID(t *testing.T) {
	data := splitFormFile(t, map[string]int{"ab": 9223372036854775807}, nil)
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("LoadHFJSON panicked: %v", r)
		}
	}()
	if _, err := LoadHFJSON(data, "huge"); err == nil {
		t.Fatal("accepted")
	}
}

// A converted tiktoken encoding with an NFC normalizer loads (ranks, NFC), and
// WriteHFJSON writes the normalizer back: the same ids and fingerprint (it wrote
// "normalizer": null).
func TestWriteHFJSONTiktokenKeepsNFC(t *testing.T) {
	var buf bytes.Buffer
	if err := sharedTokenizer(t, "cl100k_base").WriteHFJSON(&buf); err != nil {
		t.Fatal(err)
	}
	data := bytes.Replace(buf.Bytes(), []byte(`"normalizer": null`), []byte(`"normalizer": {"type": "NFC"}`), 1)
	tok, err := LoadHFJSON(data, "cl100k-nfc")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := tok.WriteHFJSON(&out); err != nil {
		t.Fatal(err)
	}
	back, err := LoadHFJSON(out.Bytes(), "cl100k-nfc")
	if err != nil {
		t.Fatal(err)
	}
	text := "cafe\u0301"
	if a, b := tok.Encode(text), back.Encode(text); !reflect.DeepEqual(a, b) || tok.Fingerprint() != back.Fingerprint() {
		t.Fatalf("written and read back: %q encodes as %v, was %v; fingerprint %.12s, was %.12s", text, b, a, back.Fingerprint(), tok.Fingerprint())
	}
}

// tiktokenEdgeTexts are texts where the tiktoken patterns and merges are easiest to get
// wrong (runs of spaces, digits of other scripts, CR and LF runs, emoji sequences,
// contractions in every case), which the HF parity test encodes beside golden texts.
func tiktokenEdgeTexts() []string {
	var s []string
	for _, n := range []int{1, 2, 3, 4, 7, 16, 100, 1000} {
		sp := strings.Repeat(" ", n)
		s = append(s, sp, "a"+sp+"b", sp+"x", "x"+sp, "x"+sp+"\n", sp+"\n"+sp, "\t"+sp+"\t", sp+"\r\n"+sp+"y", "\u00a0"+sp+"z", "\u3000"+sp+"z")
		s = append(s, strings.Repeat("1", n), "a"+strings.Repeat("9", n)+"b", strings.Repeat("٣", n), strings.Repeat("½", n), strings.Repeat("Ⅷ", n))
		s = append(s, strings.Repeat("\r\n", n), strings.Repeat("\r", n)+"q", strings.Repeat("\n", n)+" q", "a"+strings.Repeat("\r\n", n)+"  b", "}"+strings.Repeat("\r\n", n)+"\t")
		s = append(s, strings.Repeat("🙂", n), strings.Repeat("👨‍👩‍👧", n), " "+strings.Repeat("🇫🇷", n)+"x")
	}
	for _, c := range []string{"'S", "'LL", "'Ll", "'lL", "'RE", "'Re", "'VE", "'M", "'D", "'T", "'s", "'ll", "’s", "'x", "''s"} {
		s = append(s, "HE"+c, "he"+c, " "+c, c, c+"x", "JOHN"+c+" car", "123"+c, "é"+c, "ǅ"+c, "Σ"+c+"Σ", "a\u0301"+c)
	}
	s = append(s, "camelCaseWordsHTTPServer", "ǅungla ǈubljana", "ΣΑΣ σας", "x/\ny//\r\n", "a//b", "foo.\r\n\r\nbar", "İstanbul ß ẞ",
		"\u200b\u200c\u200d", "\ufeffbom", "a\u0300\u0301\u0302b", "क्षत्रिय", "مرحبا بالعالم", "日本語のテキスト123",
		"<|endoftext|>", "x<|endoftext|>y", " <|endoftext|> ", "<|endofprompt|><|fim_prefix|>", "<|endoftext", "\x00\x01\x7f",
		"\t\t\n\n\t ", "  \n  \n", "...   ...", "!!!\n\n\n", "$1,234.56", "1e-10", "0x7fffffff")
	return s
}

// The converted form with an NFC normalizer (accepted by LoadHFJSON): parity with HF.
func TestWriteHFJSONTiktokenNFCParity(t *testing.T) {
	peers := trainNodePeers(t)
	var buf bytes.Buffer
	if err := sharedTokenizer(t, "cl100k_base").WriteHFJSON(&buf); err != nil {
		t.Fatal(err)
	}
	data := bytes.Replace(buf.Bytes(), []byte(`"normalizer": null`), []byte(`"normalizer": {"type": "NFC"}`), 1)
	if bytes.Equal(data, buf.Bytes()) {
		t.Fatal("no normalizer field replaced")
	}
	tok, err := LoadHFJSON(data, "cl100k-nfc")
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{"cafe\u0301 re\u0301sume\u0301", "A\u030a\u212b", "\u1e9b\u0323", "e\u0301<|endoftext|>e\u0301", "한국어 \u1100\u1161\u11a8"}
	hf := hfEncodeIDs(t, peers, data, texts)
	for i, s := range texts {
		if got := tok.Encode(s); !reflect.DeepEqual(got, hf[i]) {
			t.Errorf("%q: ours %v, HF %v", s, got, hf[i])
		}
	}
}

// hfEncodeIDs is HF tokenizers' ids of texts under the tokenizer.json data.
func hfEncodeIDs(t *testing.T, peers string, data []byte, texts []string) [][]int {
	path := filepath.Join(t.TempDir(), "tokenizer.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	for _, s := range texts {
		if err := enc.Encode(map[string]string{"text": s}); err != nil {
			t.Fatal(err)
		}
	}
	out := trainRunNode(t, peers, in.Bytes(), filepath.Join("testdata", "hf_encode.js"), path)
	var res [][]int
	for _, line := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
		var rec struct{ IDs []int }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		res = append(res, rec.IDs)
	}
	if len(res) != len(texts) {
		t.Fatalf("hf_encode.js gave %d results for %d texts", len(res), len(texts))
	}
	return res
}

// cl100kWithAdded is cl100k_base's tokenizer.json as WriteHFJSON writes it, with
// contents appended to its added_tokens (the first special, the others not; the file's
// ids are HF's to give).
func cl100kWithAdded(t *testing.T, contents ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := sharedTokenizer(t, "cl100k_base").WriteHFJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var f map[string]any
	if err := json.Unmarshal(buf.Bytes(), &f); err != nil {
		t.Fatal(err)
	}
	added := f["added_tokens"].([]any)
	for i, c := range contents {
		added = append(added, map[string]any{"id": 0, "content": c, "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": i == 0})
	}
	f["added_tokens"] = added
	data, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// A converted tiktoken tokenizer.json whose added_tokens also list tokens of the ranks
// ("hello", " world", a byte's token): loaded, and encoded as HF encodes it (the added
// tokens matched first, their ids still made by BPE elsewhere).
func TestLoadHFJSONTiktokenAddedRankTokens(t *testing.T) {
	peers := trainNodePeers(t)
	base := sharedTokenizer(t, "cl100k_base")
	data := cl100kWithAdded(t, "hello", " world", "!")
	tok, err := LoadHFJSON(data, "cl100k-added")
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{"hello world!", "say hello, world", "helloworld", "Othello hello!!", " world world", "x<|endoftext|>hello", "hello"}
	texts = append(texts, goldenTexts(t, "cl100k_base", 50)...)
	hf := hfEncodeIDs(t, peers, data, texts)
	differs := false
	for i, s := range texts {
		got := tok.Encode(s)
		if !reflect.DeepEqual(got, hf[i]) {
			t.Errorf("%.60q: ours %v, HF %v", s, got, hf[i])
		}
		differs = differs || !reflect.DeepEqual(got, base.Encode(s))
	}
	if !differs {
		t.Error("the added tokens changed no text's ids: not matched first")
	}
}

// A tokenizer loaded from a converted tiktoken tokenizer.json whose added_tokens list a
// rank token again at a new id (" world": HF finds no vocabulary key " world", the key
// is "Ġworld") is written with the rank's key once, and read back with the same ids,
// by LoadHFJSON and by HF (the file had "Ġworld" twice, at its rank and at the added
// token's id, and LoadHFJSON refused it). An order of added tokens whose ids HF would
// not give back is refused when writing.
func TestWriteHFJSONTiktokenAddedRankTokens(t *testing.T) {
	texts := []string{"hello world!", " world world", "Othello hello!! <|new|>", " worldwide", "x<|endoftext|> world"}
	data := cl100kWithAdded(t, "<|new|>", "hello", " world", "!")
	tok, err := LoadHFJSON(data, "cl100k-added")
	if err != nil {
		t.Fatal(err)
	}
	if id, _ := tok.ID(" world"); id != 100262 {
		t.Fatalf("\" world\" has id %d, want 100262 (after <|new|>'s 100261)", id)
	}
	var buf bytes.Buffer
	if err := tok.WriteHFJSON(&buf); err != nil {
		t.Fatal(err)
	}
	written := buf.Bytes()
	var f struct {
		Model struct {
			Vocab map[string]int `json:"vocab"`
		} `json:"model"`
	}
	if err := json.Unmarshal(written, &f); err != nil {
		t.Fatal(err)
	}
	if id := f.Model.Vocab["Ġworld"]; id != 1917 {
		t.Errorf("written vocabulary: \"Ġworld\" at %d, want its rank 1917", id)
	}
	back, err := LoadHFJSON(written, "back")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.AddedTokens(), tok.AddedTokens()) {
		t.Errorf("added tokens read back %v, want %v", back.AddedTokens(), tok.AddedTokens())
	}
	for _, s := range texts {
		if got, want := back.Encode(s), tok.Encode(s); !reflect.DeepEqual(got, want) {
			t.Errorf("%q: read back %v, want %v", s, got, want)
		}
	}
	// " world" before "<|new|>": written with "<|new|>" in the vocabulary, HF would give
	// " world" 100262, not its 100261.
	tok2, err := LoadHFJSON(cl100kWithAdded(t, " world", "<|new|>"), "cl100k-added-2")
	if err != nil {
		t.Fatal(err)
	}
	if err := tok2.WriteHFJSON(&buf); err == nil || !strings.Contains(err.Error(), "read back at id") {
		t.Errorf("writing %s: err %v, want the added token's id refused", tok2.Name(), err)
	}
	if testing.Short() {
		return
	}
	peers := trainNodePeers(t)
	hf := hfEncodeIDs(t, peers, written, texts)
	for i, s := range texts {
		if got := tok.Encode(s); !reflect.DeepEqual(got, hf[i]) {
			t.Errorf("%q: ours %v, HF on the written file %v", s, got, hf[i])
		}
	}
}
