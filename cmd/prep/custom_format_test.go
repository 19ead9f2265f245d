package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestCustomURLWithoutSuffix: a URL whose path names no format ("/download?file=
// c.jsonl.zst", a presigned link) is refused before anything is downloaded, with a next
// step that works for a URL (it was downloaded whole, then refused with "name it with
// one of ...", which the next run's download under the same name undid).
func TestCustomURLWithoutSuffix(t *testing.T) {
	m := newMirror(t)
	m.put("download", zst(t, jsonl(genPile(t, 50, 4))))
	data := t.TempDir()
	code, _, stderr := runPrep(t, "custom", "--name", "mine", "-d", data, "--tokenizer", gpt2Dir(t), "--progress", "off",
		"--input", m.URL+"/download?file=c.jsonl.zst")
	t.Logf("exit %d\n%s", code, stderr)
	if code == 0 {
		t.Fatal("accepted")
	}
	if n := len(m.requestsFor("download")); n > 0 {
		t.Errorf("the file was downloaded (%d requests) before its format was found unknown", n)
	}
	if !strings.Contains(stderr, "curl -L -o") {
		t.Errorf("no next step for a URL: %s", stderr)
	}
	last := stderr[strings.LastIndex(strings.TrimRight(stderr, "\n"), "\n")+1:]
	if strings.Contains(last, filepath.Join("downloads", "000-download")) && strings.Contains(last, "name it with one of") {
		t.Errorf("the next step asks to rename the downloaded copy, which the next run downloads again: %s", last)
	}
}
