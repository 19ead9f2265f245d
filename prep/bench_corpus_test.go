package prep

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"gptkit/internal/testfiles"
)

// benchCorpus returns the text the benchmarks read: $BENCH_CORPUS (make bench gives
// the mixed corpus), else tinyshakespeare.
func benchCorpus(b *testing.B) []byte {
	if p := os.Getenv("BENCH_CORPUS"); p != "" {
		src, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		return src
	}
	return testfiles.Read(b, "corpora/tinyshakespeare.txt")
}

// benchJSONL cuts text into documents of about docBytes (after a newline where there
// is one, never inside a character), as BenchmarkCLIVsLibrary cuts its corpus, and
// returns them as JSONL.
func benchJSONL(text string, docBytes int) []byte {
	var jsonl bytes.Buffer
	enc := json.NewEncoder(&jsonl)
	enc.SetEscapeHTML(false)
	for rest := text; rest != ""; {
		n := min(len(rest), docBytes)
		if k := strings.LastIndexByte(rest[:n], '\n'); k > 0 && n < len(rest) {
			n = k + 1
		}
		for n < len(rest) && !utf8.RuneStart(rest[n]) {
			n++
		}
		enc.Encode(map[string]string{"text": rest[:n]})
		rest = rest[n:]
	}
	return jsonl.Bytes()
}
