package tokenize

import (
	"bufio"
	"encoding/json"
	"gptkit/internal/testfiles"
	"os"
	"sync"
	"testing"
)

var loadedTokenizers sync.Map // name -> *Tokenizer

// sharedTokenizer loads one of the real tokenizers in shared/tokenizers, once per test binary.
// Names: gpt2 (tokenizer.json), gpt2-files (vocab.json + merges.txt), neox-20b,
// cl100k_base, o200k_base.
func sharedTokenizer(tb testing.TB, name string) *Tokenizer {
	tb.Helper()
	if t, ok := loadedTokenizers.Load(name); ok {
		return t.(*Tokenizer)
	}
	var tok *Tokenizer
	var err error
	switch name {
	case "gpt2":
		tok, err = LoadHFJSON(testfiles.Read(tb, "tokenizers/gpt2/tokenizer.json"), "gpt2")
	case "gpt2-files":
		tok, err = LoadVocabMerges(testfiles.Read(tb, "tokenizers/gpt2/vocab.json"), testfiles.Read(tb, "tokenizers/gpt2/merges.txt"), "gpt2")
	case "gpt2-uncut":
		// GPT-2 with its long pieces never cut (safesplit.go): the long-piece cache's
		// tests need long pieces of Chinese that reach it.
		tok, err = LoadHFJSON(testfiles.Read(tb, "tokenizers/gpt2/tokenizer.json"), "gpt2")
		if err == nil {
			tok.safeSplitOnce.Do(func() {})
		}
	case "neox-20b":
		tok, err = LoadHFJSON(testfiles.Read(tb, "tokenizers/neox-20b/tokenizer.json"), "neox-20b")
	case "cl100k_base", "o200k_base":
		tok, err = LoadTiktoken(testfiles.Read(tb, "tokenizers/tiktoken/"+name+".tiktoken"), name)
	default:
		tb.Fatalf("unknown shared tokenizer %q", name)
	}
	if err != nil {
		tb.Fatalf("load %s: %v", name, err)
	}
	loadedTokenizers.Store(name, tok)
	return tok
}

// goldenDoc is one line of shared/tokenizers/golden/*.jsonl: a text and the ids HF
// tokenizers 0.23.2 (or tiktoken) gives for it.
type goldenDoc struct {
	Text string `json:"text"`
	IDs  []int  `json:"ids"`
}

func readGolden(tb testing.TB, name string) []goldenDoc {
	tb.Helper()
	f, err := os.Open(testfiles.Path(tb, "golden/"+name+".jsonl"))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var docs []goldenDoc
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var d goldenDoc
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			tb.Fatalf("golden %s line %d: %v", name, len(docs)+1, err)
		}
		docs = append(docs, d)
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return docs
}
