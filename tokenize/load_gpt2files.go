package tokenize

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// LoadVocabMerges loads the GPT-2 pair vocab.json + merges.txt (GPT-NeoX's
// GPT2BPETokenizer, OpenAI's encoder.json + vocab.bpe). <|endoftext|> is a special token
// matched in the text, as HF's GPT-2 tokenizer does.
func LoadVocabMerges(vocabJSON, mergesTxt []byte, name string) (*Tokenizer, error) {
	var vocab map[string]int
	if err := json.Unmarshal(vocabJSON, &vocab); err != nil {
		return nil, fmt.Errorf("tokenize: %s: vocab.json: %w", name, jsonErrorAt(vocabJSON, err))
	}
	if len(vocab) == 0 {
		return nil, fmt.Errorf("tokenize: %s: vocab.json is empty (a failed download? fetch it again)", name)
	}
	d := &bpeDefinition{name: name, vocab: make(map[string]int, len(vocab)), pattern: "gpt2"}
	for tok, id := range vocab {
		raw, ok := byteLevelDecode(tok)
		if !ok {
			return nil, fmt.Errorf("tokenize: %s: vocab.json entry %q (id %d) is not in the byte-level alphabet", name, tok, id)
		}
		d.vocab[raw] = id
	}
	lines := bytes.Split(mergesTxt, []byte{'\n'})
	for i, line := range lines {
		s := strings.TrimRight(string(line), "\r")
		if s == "" || (i == 0 && strings.HasPrefix(s, "#version")) {
			continue
		}
		l, r, ok := strings.Cut(s, " ")
		if !ok || l == "" || r == "" || strings.Contains(r, " ") {
			return nil, fmt.Errorf("tokenize: %s: merges.txt line %d: %q is not two tokens separated by one space", name, i+1, s)
		}
		lr, okl := byteLevelDecode(l)
		rr, okr := byteLevelDecode(r)
		if !okl || !okr {
			return nil, fmt.Errorf("tokenize: %s: merges.txt line %d: %q is not in the byte-level alphabet", name, i+1, s)
		}
		d.merges = append(d.merges, [2]string{lr, rr})
	}
	if len(d.merges) == 0 {
		return nil, fmt.Errorf("tokenize: %s: merges.txt has no merges (a failed download? fetch it again)", name)
	}
	if id, ok := d.vocab["<|endoftext|>"]; ok {
		d.added = append(d.added, AddedToken{ID: id, Content: "<|endoftext|>", Special: true})
	}
	return d.build()
}
