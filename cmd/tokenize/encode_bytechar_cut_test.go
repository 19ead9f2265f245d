package main

import (
	"strings"
	"testing"

	"gptkit/tokenize"
)

// TestEncodeByteCharWholeCut: `encode --tokenizer char` (GPT-NeoX byte ids) on a text
// larger than wholePartBytes must give the text's UTF-8 bytes, whatever the cut.
func TestEncodeByteCharWholeCut(t *testing.T) {
	text := "ab" + strings.Repeat("日", wholePartBytes/3+10) // 1 MiB falls inside a 日
	want := idLines([][]int{tokenize.NewNeoXChar().Encode(text)})
	code, out, errOut := runTokenize(t, text, "encode", "--tokenizer", "char", "--progress", "off")
	if code != 0 || out != want {
		i := 0
		for i < len(out) && i < len(want) && out[i] == want[i] {
			i++
		}
		t.Fatalf("exit %d %s; output differs from Encode at byte %d: got %q, want %q", code, errOut, i, out[max(0, i-20):min(len(out), i+20)], want[max(0, i-20):min(len(want), i+20)])
	}
}
