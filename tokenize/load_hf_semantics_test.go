package tokenize

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// hfTiny is a tokenizer.json of the 256 byte tokens (ids 0-255), the tokens and merges
// given, a ByteLevel pre-tokenizer, and the top-level fields of extra.
func hfTiny(t *testing.T, tokens []string, merges []string, extra map[string]any) []byte {
	t.Helper()
	vocab := map[string]int{}
	for b := range 256 {
		vocab[byteLevelEncode(string([]byte{byte(b)}))] = b
	}
	for _, tok := range tokens {
		vocab[tok] = len(vocab)
	}
	doc := map[string]any{
		"version":       "1.0",
		"added_tokens":  []any{},
		"pre_tokenizer": map[string]any{"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
		"model":         map[string]any{"type": "BPE", "vocab": vocab, "merges": merges},
	}
	for k, v := range extra {
		if k == "model" {
			for mk, mv := range v.(map[string]any) {
				doc["model"].(map[string]any)[mk] = mv
			}
			continue
		}
		doc[k] = v
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustLoadHF(t *testing.T, data []byte) *Tokenizer {
	t.Helper()
	tok, err := LoadHFJSON(data, "tiny.json")
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// checkIDs encodes text, compares with want and with the reference encoder.
func checkIDs(t *testing.T, tok *Tokenizer, text string, want []int) {
	t.Helper()
	got := tok.Encode(text)
	if !slices.Equal(got, want) {
		t.Errorf("Encode(%q) = %v, want %v", text, got, want)
	}
	if ref := tok.refEncode(text); !slices.Equal(ref, want) {
		t.Errorf("reference Encode(%q) = %v, want %v", text, ref, want)
	}
}

// TestHFRepeatedMergeLastRank: a merge listed twice has the rank of its last listing
// (HF collects the merges into a map; a later entry replaces an earlier one).
func TestHFRepeatedMergeLastRank(t *testing.T) {
	// ids: ab 256, bc 257.
	tok := mustLoadHF(t, hfTiny(t, []string{"ab", "bc"}, []string{"b c", "a b", "b c"}, nil))
	checkIDs(t, tok, "abc", []int{256, 'c'})
	tok = mustLoadHF(t, hfTiny(t, []string{"ab", "bc"}, []string{"b c", "a b"}, nil))
	checkIDs(t, tok, "abc", []int{'a', 257})
}

// TestHFAddedTokenIDs: added tokens get HF's ids: a content in the vocabulary its id
// there, a content listed twice its first id, others the next ids after the vocabulary.
func TestHFAddedTokenIDs(t *testing.T) {
	added := []any{
		map[string]any{"id": 900, "content": "hello", "special": false, "normalized": false},
		map[string]any{"id": 300, "content": "<|a|>", "special": true, "normalized": false},
		map[string]any{"id": 301, "content": "<|a|>", "special": true, "normalized": false},
		map[string]any{"id": 500, "content": "<|b|>", "special": true, "normalized": false},
	}
	tok := mustLoadHF(t, hfTiny(t, []string{"he", "hello"}, nil, map[string]any{"added_tokens": added}))
	// Vocabulary: 256 bytes, he 256, hello 257; <|a|> 258, <|b|> 259.
	checkIDs(t, tok, "hello<|a|><|b|>", []int{257, 258, 259})
	if tok.VocabSize() != 260 {
		t.Errorf("VocabSize %d, want 260", tok.VocabSize())
	}
}

// TestHFAddedTokenListedTwiceLastFlags: a content listed twice in added_tokens keeps
// the id of its first entry and takes the flags of its last (tokenizers 0.23's
// AddedVocabulary::add_tokens replaces the token of that id, and matches by it). Under
// NFC, normalized=true finds both spellings of é, normalized=false only the raw one.
func TestHFAddedTokenListedTwiceLastFlags(t *testing.T) {
	const content = "xe\u0301y"
	raw := map[string]any{"id": 256, "content": content, "special": true, "normalized": false}
	norm := map[string]any{"id": 257, "content": content, "special": false, "normalized": true}
	load := func(entries ...any) *Tokenizer {
		return mustLoadHF(t, hfTiny(t, nil, nil, map[string]any{"added_tokens": entries, "normalizer": map[string]any{"type": "NFC"}}))
	}
	for _, c := range []struct {
		name    string
		entries []any
		want    AddedToken
		nfc     []int // ids of "x\u00e9y", the content NFC-normalized
	}{
		{"normalized last", []any{raw, norm}, AddedToken{ID: 256, Content: content, Special: false, Normalized: true}, []int{256}},
		{"raw last", []any{norm, raw}, AddedToken{ID: 256, Content: content, Special: true, Normalized: false}, []int{'x', 0xc3, 0xa9, 'y'}},
		{"raw, normalized, raw", []any{raw, norm, raw}, AddedToken{ID: 256, Content: content, Special: true, Normalized: false}, []int{'x', 0xc3, 0xa9, 'y'}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tok := load(c.entries...)
			if got := tok.AddedTokens(); len(got) != 1 || got[0] != c.want {
				t.Errorf("AddedTokens() = %+v, want [%+v]", got, c.want)
			}
			if tok.VocabSize() != 257 {
				t.Errorf("VocabSize %d, want 257", tok.VocabSize())
			}
			checkIDs(t, tok, content, []int{256})
			checkIDs(t, tok, "x\u00e9y", c.nfc)
		})
	}
	// The flags that count are the last entry's: an earlier lstrip is not refused, a
	// later one is.
	lstrip := map[string]any{"id": 256, "content": content, "special": true, "normalized": false, "lstrip": true}
	if _, err := LoadHFJSON(hfTiny(t, nil, nil, map[string]any{"added_tokens": []any{lstrip, raw}}), "tiny.json"); err != nil {
		t.Errorf("lstrip, then without: %v", err)
	}
	if _, err := LoadHFJSON(hfTiny(t, nil, nil, map[string]any{"added_tokens": []any{raw, lstrip}}), "tiny.json"); err == nil || !strings.Contains(err.Error(), "lstrip") {
		t.Errorf("without lstrip, then with: %v, want lstrip refused", err)
	}
}

// TestHFRawAddedTokensFirst: without a normalizer, added tokens with normalized=false
// are still found before those with normalized=true, which match only between them.
func TestHFRawAddedTokensFirst(t *testing.T) {
	added := []any{
		map[string]any{"id": 256, "content": "<|endoftext|>", "special": true, "normalized": true},
		map[string]any{"id": 257, "content": "<|", "special": false, "normalized": false},
	}
	tok := mustLoadHF(t, hfTiny(t, nil, nil, map[string]any{"added_tokens": added}))
	want := []int{257}
	for _, c := range []byte("endoftext|>") {
		want = append(want, int(c))
	}
	checkIDs(t, tok, "<|endoftext|>", want)
}

// TestHFNormalizedAddedTokenContent: under an NFC normalizer, a normalized added
// token is matched as its content normalized: both spellings of é find it.
func TestHFNormalizedAddedTokenContent(t *testing.T) {
	added := []any{map[string]any{"id": 256, "content": "xe\u0301y", "special": false, "normalized": true}}
	tok := mustLoadHF(t, hfTiny(t, nil, nil, map[string]any{"added_tokens": added, "normalizer": map[string]any{"type": "NFC"}}))
	checkIDs(t, tok, "xe\u0301y", []int{256})
	checkIDs(t, tok, "x\u00e9y", []int{256})
	if got := tok.Decode([]int{256}); got != "xe\u0301y" {
		t.Errorf("Decode = %q, want the content as the file gives it", got)
	}
}

// TestHFRefusesWhatChangesIDs: files whose ids would differ from HF's through a feature
// not implemented are refused, naming it and the next step; harmless ones load.
func TestHFRefusesWhatChangesIDs(t *testing.T) {
	template := func(items ...any) map[string]any {
		return map[string]any{"type": "TemplateProcessing", "single": items, "pair": []any{}, "special_tokens": map[string]any{}}
	}
	seqA := map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}
	bos := map[string]any{"SpecialToken": map[string]any{"id": "<s>", "type_id": 0}}
	lacking := map[string]int{"<unk>": 0, "a": 1, "b": 2, "ab": 3}
	for _, c := range []struct {
		name  string
		data  []byte
		wants []string // substrings of the error; none: it loads
	}{
		{"template adding BOS", hfTiny(t, nil, nil, map[string]any{"post_processor": template(bos, seqA)}), []string{`"<s>"`, "add_special_tokens=False", `"post_processor" to null`}},
		{"Roberta", hfTiny(t, nil, nil, map[string]any{"post_processor": map[string]any{"type": "RobertaProcessing"}}), []string{"RobertaProcessing"}},
		{"template of the text alone", hfTiny(t, nil, nil, map[string]any{"post_processor": template(seqA)}), nil},
		{"ByteLevel post-processor", hfTiny(t, nil, nil, map[string]any{"post_processor": map[string]any{"type": "ByteLevel", "trim_offsets": true}}), nil},
		{"truncation", hfTiny(t, nil, nil, map[string]any{"truncation": map[string]any{"max_length": 2}}), []string{"truncation is set"}},
		{"padding", hfTiny(t, nil, nil, map[string]any{"padding": map[string]any{"strategy": "BatchLongest"}}), []string{"padding is set"}},
		{"unk_token, all bytes", hfTiny(t, nil, nil, map[string]any{"model": map[string]any{"unk_token": "<unk>"}}), nil},
		{"unk_token, bytes missing", func() []byte {
			b, _ := json.Marshal(map[string]any{"pre_tokenizer": map[string]any{"type": "ByteLevel"},
				"model": map[string]any{"type": "BPE", "vocab": lacking, "merges": []string{"a b"}, "unk_token": "<unk>"}})
			return b
		}(), []string{`unk_token "<unk>"`, "lacks the tokens of 254 bytes", "initial_alphabet"}},
		{"merges with a version line", hfTiny(t, []string{"ab"}, []string{"#version: 0.2", "a b"}, nil), nil},
		{"Sequence normalizer", hfTiny(t, nil, nil, map[string]any{"normalizer": map[string]any{"type": "Sequence", "normalizers": []any{map[string]any{"type": "NFKC"}}}}), []string{`"Sequence" of [NFKC]`}},
		{"Sequence pre-tokenizer", hfTiny(t, nil, nil, map[string]any{"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": []any{map[string]any{"type": "Split"}, map[string]any{"type": "ByteLevel"}}}}), []string{`"Sequence" of [Split, ByteLevel]`}},
	} {
		_, err := LoadHFJSON(c.data, "tiny.json")
		switch {
		case len(c.wants) == 0 && err != nil:
			t.Errorf("%s: %v, want it to load", c.name, err)
		case len(c.wants) > 0 && err == nil:
			t.Errorf("%s: loaded, want it refused", c.name)
		case err != nil:
			for _, w := range c.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%s: %v, want it to say %q", c.name, err, w)
				}
			}
		}
	}
}
