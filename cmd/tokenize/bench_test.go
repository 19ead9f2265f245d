package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"gptkit/internal/testfiles"
)

// benchCopies is how many times BenchmarkEncodeJSONL repeats tinyshakespeare (1.1 MB),
// so that loading the tokenizer (~0.1 s, part of every run) is a small part of a run.
const benchCopies = 16

// shakespeareJSONL returns tinyshakespeare as JSONL: paragraphs grouped into documents
// of about 4 KB, each line {"text": ..., "meta": {...}} like the Pile's, repeated
// copies times.
func shakespeareJSONL(b *testing.B, copies int) []byte {
	b.Helper()
	paras := strings.SplitAfter(string(testfiles.Read(b, "corpora/tinyshakespeare.txt")), "\n\n")
	var one bytes.Buffer
	enc := json.NewEncoder(&one)
	enc.SetEscapeHTML(false)
	for i := 0; i < len(paras); {
		var doc strings.Builder
		for ; i < len(paras) && doc.Len() < 4096; i++ {
			doc.WriteString(paras[i])
		}
		line := map[string]any{"text": doc.String(), "meta": map[string]any{"source": "tinyshakespeare", "paragraph": i}}
		if err := enc.Encode(line); err != nil {
			b.Fatal(err)
		}
	}
	return bytes.Repeat(one.Bytes(), copies)
}

// BenchmarkEncodeJSONL measures the whole command on one core: tokenize encode
// --tokenizer gpt2/tokenizer.json --jsonl --workers 1, loading the tokenizer included.
//
//	go test ./cmd/tokenize -run '^$' -bench EncodeJSONL -benchtime 5x
func BenchmarkEncodeJSONL(b *testing.B) {
	spec := testfiles.Path(b, "tokenizers/gpt2/tokenizer.json")
	input := shakespeareJSONL(b, benchCopies)
	args := []string{"encode", "--tokenizer", spec, "--jsonl", "--workers", "1"}
	b.SetBytes(int64(len(input)))
	b.ResetTimer()
	for range b.N {
		var stderr bytes.Buffer
		if code := run(context.Background(), args, bytes.NewReader(input), io.Discard, &stderr); code != 0 {
			b.Fatalf("exit %d: %s", code, stderr.String())
		}
	}
}
