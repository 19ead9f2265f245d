package prep

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// benchParagraph is English prose with what JSON escapes in real corpora: newlines,
// double quotes, a tab, and some non-ASCII (kept raw by encoders, like the Pile's).
const benchParagraph = "The committee met on Tuesday to discuss the \"new\" proposal for the\n" +
	"harbour district. Mr. O'Neill argued that the plan\u2019s costs were understated\n" +
	"by at least 12%, while Ms. Dubois \u2014 speaking for the caf\u00e9 owners \u2014 said\tthe\n" +
	"real question was whether anyone would still live there in ten years' time.\n\n"

// benchLine returns a Pile-style JSONL line whose text is about n bytes of
// benchParagraph.
func benchLine(b *testing.B, n int) []byte {
	b.Helper()
	text := strings.Repeat(benchParagraph, n/len(benchParagraph)+1)[:n]
	line, err := json.Marshal(map[string]any{"text": text, "meta": map[string]any{"pile_set_name": "Pile-CC", "id": 1234567}})
	if err != nil {
		b.Fatal(err)
	}
	return line
}

// BenchmarkTextField compares TextField with encoding/json on a 4 KB line of English
// (MB/s of JSON line):
//
//	go test ./prep -run '^$' -bench TextField -cpu 1
func BenchmarkTextField(b *testing.B) {
	line := benchLine(b, 4096)
	b.Run("TextField", func(b *testing.B) {
		b.SetBytes(int64(len(line)))
		for range b.N {
			if _, ok, err := TextField(line, "text"); !ok || err != nil {
				b.Fatal(ok, err)
			}
		}
	})
	// What cmd/tokenize did before TextField: members as raw messages, then the text.
	b.Run("json-map", func(b *testing.B) {
		b.SetBytes(int64(len(line)))
		for range b.N {
			var members map[string]json.RawMessage
			var text string
			if err := json.Unmarshal(line, &members); err != nil {
				b.Fatal(err)
			}
			if err := json.Unmarshal(members["text"], &text); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The quickest plain encoding/json: a struct with the one field.
	b.Run("json-struct", func(b *testing.B) {
		b.SetBytes(int64(len(line)))
		for range b.N {
			var doc struct {
				Text string `json:"text"`
			}
			if err := json.Unmarshal(line, &doc); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkTextFieldASCII is TextField on 4 KB of ASCII without escapes: the scan
// alone, 8 bytes at a time.
func BenchmarkTextFieldASCII(b *testing.B) {
	text := strings.Repeat("the quick brown fox jumps over the lazy dog. ", 100)[:4096]
	line := []byte(`{"text":"` + text + `","meta":{}}`)
	b.SetBytes(int64(len(line)))
	for range b.N {
		if _, ok, err := TextField(line, "text"); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}

// BenchmarkTextFieldJSONL is TextField over the lines of the JSONL file $BENCH_JSONL
// (skipped without it), MB/s of JSON: the bench's mixed corpus as 4 KB documents has
// an escape every 15-40 bytes and other scripts.
//
//	BENCH_JSONL=corpus.jsonl go test ./prep -run '^$' -bench TextFieldJSONL -cpu 1
func BenchmarkTextFieldJSONL(b *testing.B) {
	path := os.Getenv("BENCH_JSONL")
	if path == "" {
		b.Skip("BENCH_JSONL is not set")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		for _, line := range lines {
			if _, ok, err := TextField(line, "text"); !ok || err != nil {
				b.Fatal(ok, err)
			}
		}
	}
}
