package tokenize

import (
	"bytes"
	"encoding/json"
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
