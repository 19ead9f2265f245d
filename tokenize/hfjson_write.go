package tokenize

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
)

// hfBPEFile is what a Hugging Face tokenizer.json with a BPE model holds, as
// writeHFBPE writes it: the components are JSON text ("null" for none), vocabulary
// keys and merges come through functions so that no copy of a 200,000-token vocabulary
// is made to write it.
type hfBPEFile struct {
	added                                        []AddedToken
	normalizer, preTokenizer, postProcessor, dec string
	ignoreMerges                                 bool
	vocabLen                                     int
	key                                          func(id int) (string, bool) // the vocab key of id, if id is in the model's vocab
	mergeCount                                   int
	merge                                        func(i int) string // merge i in rank order, "left right"
}

// writeHFBPE writes f as a tokenizer.json (version "1.0"), or fails where HF (and
// LoadHFJSON) would read its added tokens back at other ids (hfAddedTokens).
func writeHFBPE(w io.Writer, f *hfBPEFile) error {
	if err := f.checkAddedIDs(); err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	var b []byte
	flush := func() error {
		_, err := bw.Write(b)
		b = b[:0]
		return err
	}
	b = append(b, "{\n  \"version\": \"1.0\",\n  \"truncation\": null,\n  \"padding\": null,\n  \"added_tokens\": ["...)
	for i, a := range f.added {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, "\n    {\"id\": "...)
		b = strconv.AppendInt(b, int64(a.ID), 10)
		b = append(b, ", \"content\": "...)
		b = appendJSONString(b, a.Content)
		b = append(b, `, "single_word": false, "lstrip": false, "rstrip": false, "normalized": `...)
		b = strconv.AppendBool(b, a.Normalized)
		b = append(b, `, "special": `...)
		b = strconv.AppendBool(b, a.Special)
		b = append(b, '}')
	}
	if len(f.added) > 0 {
		b = append(b, "\n  "...)
	}
	b = append(b, "],\n  \"normalizer\": "...)
	b = append(b, f.normalizer...)
	b = append(b, ",\n  \"pre_tokenizer\": "...)
	b = append(b, f.preTokenizer...)
	b = append(b, ",\n  \"post_processor\": "...)
	b = append(b, f.postProcessor...)
	b = append(b, ",\n  \"decoder\": "...)
	b = append(b, f.dec...)
	b = append(b, `,
  "model": {
    "type": "BPE",
    "dropout": null,
    "unk_token": null,
    "continuing_subword_prefix": null,
    "end_of_word_suffix": null,
    "fuse_unk": false,
    "byte_fallback": false,
    "ignore_merges": `...)
	b = strconv.AppendBool(b, f.ignoreMerges)
	b = append(b, ",\n    \"vocab\": {"...)
	first := true
	for id := range f.vocabLen {
		k, ok := f.key(id)
		if !ok {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, "\n      "...)
		b = appendJSONString(b, k)
		b = append(b, ": "...)
		b = strconv.AppendInt(b, int64(id), 10)
		if len(b) > 1<<15 {
			if err := flush(); err != nil {
				return fmt.Errorf("tokenize: write tokenizer.json: %w", err)
			}
		}
	}
	b = append(b, "\n    },\n    \"merges\": ["...)
	for i := range f.mergeCount {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, "\n      "...)
		b = appendJSONString(b, f.merge(i))
		if len(b) > 1<<15 {
			if err := flush(); err != nil {
				return fmt.Errorf("tokenize: write tokenizer.json: %w", err)
			}
		}
	}
	if f.mergeCount > 0 {
		b = append(b, "\n    "...)
	}
	b = append(b, "]\n  }\n}\n"...)
	if err := flush(); err != nil {
		return fmt.Errorf("tokenize: write tokenizer.json: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("tokenize: write tokenizer.json: %w", err)
	}
	return nil
}

// The components of GPT-2's tokenizer.json, which byte-level BPE tokenizers share.
const (
	hfByteLevelPost    = `{"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": false, "use_regex": true}`
	hfByteLevelDecoder = `{"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true}`
)

// hfByteLevelPre is the ByteLevel pre-tokenizer with GPT-2's pattern.
func hfByteLevelPre(addPrefixSpace bool) string {
	return `{"type": "ByteLevel", "add_prefix_space": ` + strconv.FormatBool(addPrefixSpace) + `, "trim_offsets": true, "use_regex": true}`
}

// WriteHFJSON writes t as a Hugging Face tokenizer.json that HF `tokenizers` (and
// transformers' PreTrainedTokenizerFast) load to the same ids as t on every text, as `train
// export` puts it beside a model:
//
//   - byte-level BPE with a merges list (GPT-2, GPT-NeoX, vocab.json + merges.txt, a
//     tokenizer.json): the BPE model with its vocabulary in the byte-level alphabet (ids
//     that are no token, and added tokens the vocabulary lacks, left out, as HF's files
//     do), its merges in rank order, the NFC normalizer if t has it, the ByteLevel
//     pre-tokenizer, post-processor and decoder as in GPT-2's file, ignore_merges if t
//     has it, and its added tokens with their special and normalized flags. LoadHFJSON
//     of the output gives t's fingerprint back.
//
//   - a character vocabulary (chars.json, nanoGPT's shakespeare_char): a BPE model whose
//     vocabulary is the characters and which has no merges, no pre-tokenizer (each
//     character is then its token) and the Fuse decoder (the tokens' text joined),
//     which LoadHFJSON reads back as the same character vocabulary. HF drops a
//     character the vocabulary lacks where t refuses it.
//
//   - a tiktoken encoding with its own pattern (cl100k_base, o200k_base): the merges list
//     its ranks give, ignore_merges, and the pattern as a Split pre-tokenizer before a
//     ByteLevel one (hfjson_tiktoken.go), which LoadHFJSON reads back as the encoding.
//
// GPT-NeoX's byte tokenizer, and a tiktoken rank file with GPT-2's pattern (r50k_base),
// have no form written here: that is an error.
func (t *Tokenizer) WriteHFJSON(w io.Writer) error {
	switch {
	case t.kind == KindChar:
		return writeHFBPE(w, &hfBPEFile{normalizer: "null", preTokenizer: "null", postProcessor: "null",
			dec: `{"type": "Fuse"}`, vocabLen: len(t.chars),
			key: func(id int) (string, bool) { return string(t.chars[id]), true }})
	case t.kind == KindByteChar:
		return fmt.Errorf("tokenize: %s: GPT-NeoX's byte tokenizer (ids are bytes) has no Hugging Face tokenizer.json form written here", t.name)
	case t.kind == KindBPE && t.mergeSemantics == "ranks" && hfSplitPatterns[t.pattern] != "":
		merges, err := t.tiktokenMerges()
		if err != nil {
			return fmt.Errorf("tokenize: %s: %w", t.name, err)
		}
		normalizer := "null"
		if t.normalizer != "" {
			normalizer = `{"type": "` + t.normalizer + `"}`
		}
		return writeHFBPE(w, &hfBPEFile{added: t.added, normalizer: normalizer, preTokenizer: hfSplitPre(t.pattern),
			postProcessor: hfByteLevelPost, dec: hfByteLevelDecoder, ignoreMerges: true,
			vocabLen: t.vocab.len(), key: t.hfVocabKeyWithAdded,
			mergeCount: len(merges),
			merge:      func(i int) string { return byteLevelEncode(merges[i][0]) + " " + byteLevelEncode(merges[i][1]) }})
	case t.kind != KindBPE || t.mergeSemantics != "pairs" || t.pattern != "gpt2":
		return fmt.Errorf("tokenize: %s: a tiktoken rank file with GPT-2's pattern (r50k_base) has no Hugging Face tokenizer.json form written here; the gpt2 tokenizer has", t.name)
	}
	normalizer := "null"
	if t.normalizer != "" {
		normalizer = `{"type": "` + t.normalizer + `"}`
	}
	merges := t.mergeList()
	return writeHFBPE(w, &hfBPEFile{added: t.added, normalizer: normalizer, preTokenizer: hfByteLevelPre(t.addPrefixSpace),
		postProcessor: hfByteLevelPost, dec: hfByteLevelDecoder, ignoreMerges: t.ignoreMerges,
		vocabLen: t.vocab.len(), key: t.hfVocabKey,
		mergeCount: len(merges),
		merge: func(i int) string {
			return byteLevelEncode(t.vocab.at(int(merges[i][0]))) + " " + byteLevelEncode(t.vocab.at(int(merges[i][1])))
		}})
}

// hfVocabKey is the vocabulary key of id in a byte-level tokenizer.json: its bytes in
// the byte-level alphabet; false for an id that is no token, or an added token only.
func (t *Tokenizer) hfVocabKey(id int) (string, bool) {
	s := t.vocab.at(id)
	if s == "" {
		return "", false
	}
	if got, ok := t.tokenID(s); !ok || int(got) != id {
		return "", false // an added token only
	}
	return byteLevelEncode(s), true
}

// hfVocabKeyWithAdded is hfVocabKey with the added tokens in the vocabulary too, at
// their ids: a tiktoken encoding's special tokens lie past a hole in the ranks
// (cl100k_base has no rank 100256), and HF gives an added token the vocabulary lacks the
// next id after the vocabulary's, not the file's.
//
// Not an added token whose content is also a vocabulary token at another id (a file's
// added_tokens may list a rank token again, LoadHFJSON giving it a new id): that key is
// the rank's, and HF gives the content a new id again (checkAddedIDs).
func (t *Tokenizer) hfVocabKeyWithAdded(id int) (string, bool) {
	s := t.vocab.at(id)
	if s == "" {
		return "", false
	}
	if got, ok := t.tokenID(s); ok && int(got) != id {
		return "", false
	}
	return byteLevelEncode(s), true
}

// checkAddedIDs fails when the ids that HF gives f's added tokens, read back over f's
// vocabulary (hfAddedTokens: a content found as a key takes that key's id, the others
// ids from the vocabulary's size on, in the file's order), are not the tokens' own.
func (f *hfBPEFile) checkAddedIDs() error {
	if len(f.added) == 0 {
		return nil
	}
	vocab := make(map[string]int, f.vocabLen)
	for id := range f.vocabLen {
		if k, ok := f.key(id); ok {
			if prev, dup := vocab[k]; dup {
				return fmt.Errorf("tokenize: the vocabulary key %q would be written for ids %d and %d", k, prev, id)
			}
			vocab[k] = id
		}
	}
	entries := make([]hfAddedToken, len(f.added))
	for i, a := range f.added {
		entries[i] = hfAddedToken{Content: a.Content}
	}
	got, err := hfAddedTokens(entries, vocab)
	if err != nil {
		return fmt.Errorf("tokenize: %w", err)
	}
	for i, a := range got {
		if a.ID != f.added[i].ID {
			return fmt.Errorf("tokenize: added token %q (id %d) would be read back at id %d from a tokenizer.json (HF gives an added content that is no vocabulary key the next id from the vocabulary's size on): this tokenizer has no tokenizer.json form written here", a.Content, f.added[i].ID, a.ID)
		}
	}
	return nil
}
