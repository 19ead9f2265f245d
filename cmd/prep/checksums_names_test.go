package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestChecksumsNamesMatchOrAreRefused: a --checksums FILE that names the shard by its
// base name ("00.jsonl.zst", as sha256sum writes it in the directory hashed, and as the
// Pile's own train/SHA256SUMS.txt did) is matched to the catalog's "train/00.jsonl.zst"
// and checks it (a wrong sha256 fails the run); a FILE that names none of the corpus's
// files is refused, naming the names expected. (Such a FILE matched nothing and was
// ignored: the download was used unchecked.)
func TestChecksumsNamesMatchOrAreRefused(t *testing.T) {
	recs := genPile(t, 100, 3)
	m, _ := pileMirror(t, recs)
	m.putSums(map[string]string{}) // the mirror lists nothing: the user's FILE is the only check
	wrong := strings.Repeat("ab", 32)
	sums := writeFile(t, t.TempDir(), "SHA256SUMS.txt", []byte(wrong+"  00.jsonl.zst\n"))
	data := t.TempDir()
	code, _, stderr := runPrep(t, "pile-00", "-d", data, "--mirror", m.base(), "--tokenizer", gpt2Dir(t), "--progress", "off", "--checksums", sums)
	if code == 0 || !strings.Contains(stderr, wrong) {
		t.Errorf("exit %d: the download, whose sha256 is not the one --checksums lists for 00.jsonl.zst, was used (%s)\n%s", code, filepath.Join(data, "pile-00"), stderr)
	}
	other := writeFile(t, t.TempDir(), "SHA256SUMS.txt", []byte(wrong+"  something-else.bin\n"))
	code, _, stderr = runPrep(t, "pile-00", "-d", t.TempDir(), "--mirror", m.base(), "--tokenizer", gpt2Dir(t), "--progress", "off", "--checksums", other)
	if code != 1 || !strings.Contains(stderr, "names none of the corpus's files") || !strings.Contains(stderr, "train/00.jsonl.zst") {
		t.Errorf("a FILE naming no file of the corpus: exit %d\n%s", code, stderr)
	}
}
