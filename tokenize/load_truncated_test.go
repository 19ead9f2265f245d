package tokenize

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
)

// A tokenizer.json or vocab.json cut short (an interrupted download) is named
// truncated, at the byte where its JSON stops, with the next step: download it again.
func TestLoadTruncatedJSON(t *testing.T) {
	data := []byte("{\"model\": {\"type\": \"BPE\",\n \"vocab\": {\"a\": 0, \"b\": 1}, \"merges\": []}}\n")
	for _, n := range []int{5, 30, len(data) - 3} {
		cut := data[:n]
		wantAt := fmt.Sprintf("(byte %d, the end of the file)", n)
		_, err := LoadHFJSON(cut, "x")
		if err == nil || !strings.Contains(err.Error(), wantAt) || !strings.Contains(err.Error(), "truncated") || !strings.Contains(err.Error(), "download it again") {
			t.Errorf("tokenizer.json cut at %d: %v, want %q, truncated, download it again", n, err, wantAt)
		}
		_, err = LoadVocabMerges(cut, []byte("a b\n"), "x")
		if err == nil || !strings.Contains(err.Error(), "vocab.json") || !strings.Contains(err.Error(), wantAt) || !strings.Contains(err.Error(), "download it again") {
			t.Errorf("vocab.json cut at %d: %v, want %q, download it again", n, err, wantAt)
		}
	}
	for _, empty := range []string{"", " \n"} {
		_, err := LoadHFJSON([]byte(empty), "x")
		if err == nil || !strings.Contains(err.Error(), "empty") || !strings.Contains(err.Error(), "download it again") {
			t.Errorf("empty tokenizer.json %q: %v", empty, err)
		}
	}
	// A syntax error inside the file names its place, and is not taken for truncation.
	_, err := LoadHFJSON([]byte(`{"model": {"type": "BPE",, "vocab": {}}}`), "x")
	if err == nil || !strings.Contains(err.Error(), "(byte 26)") || strings.Contains(err.Error(), "truncated") {
		t.Errorf("syntax error: %v, want (byte 26) and not truncated", err)
	}
	// So is one at the file's last byte (a hand-edited file with a trailing comma and
	// no final newline): the JSON does not stop midway there.
	bad := `{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},}`
	_, err = LoadHFJSON([]byte(bad), "x")
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("(byte %d)", len(bad))) || strings.Contains(err.Error(), "truncated") {
		t.Errorf("syntax error at the last byte: %v, want (byte %d) and not truncated", err, len(bad))
	}
}

// A .tiktoken file cut inside a line names the line and says it is truncated; a bad
// line inside the file names the line only.
func TestLoadTruncatedTiktoken(t *testing.T) {
	var file strings.Builder
	for b := range 256 {
		fmt.Fprintf(&file, "%s %d\n", base64.StdEncoding.EncodeToString([]byte{byte(b)}), b)
	}
	fmt.Fprintf(&file, "%s %d\n", base64.StdEncoding.EncodeToString([]byte("ab")), 256)
	full := file.String()
	for _, cut := range []string{
		full[:len(full)-len(" 256\n")+1], // "YWI= "
		full[:len(full)-len("I= 256\n")], // "YW"
		full[:len(full)-len("= 256\n")],  // "YWI"
	} {
		_, err := LoadTiktoken([]byte(cut), "cl100k_base")
		if err == nil || !strings.Contains(err.Error(), "line 257") || !strings.Contains(err.Error(), "truncated") || !strings.Contains(err.Error(), "download it again") {
			t.Errorf("cut to %q: %v, want line 257, truncated, download it again", cut[len(cut)-8:], err)
		}
	}
	_, err := LoadTiktoken([]byte("YQ== 0\nnot-base64! 1\nYg== 2\n"), "cl100k_base")
	if err == nil || !strings.Contains(err.Error(), "line 2") || strings.Contains(err.Error(), "truncated") {
		t.Errorf("bad line inside: %v, want line 2 and not truncated", err)
	}
}
