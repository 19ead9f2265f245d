package main

import (
	"net/http"
	"net/http/httptest"
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

// TestMirrorSumsFailWithChecksums: a mirror whose SHA256SUMS fails (a 500, three
// times) stopped the run with "retry, or pass --checksums FILE", and passing
// --checksums FILE failed the same way, the mirror's list being asked for anyway. Now,
// with --checksums, the run goes on with a warning, the files it lists verified.
func TestMirrorSumsFailWithChecksums(t *testing.T) {
	recs := genPile(t, 100, 4)
	m, z := pileMirror(t, recs)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/SHA256SUMS") {
			http.Error(w, "oops", http.StatusInternalServerError)
			return
		}
		m.ServeHTTP(w, r)
	}))
	defer srv.Close()
	args := []string{"pile-00", "--mirror", srv.URL + "/", "--tokenizer", gpt2Dir(t), "--progress", "off"}
	code, _, errOut := runPrep(t, append(args, "-d", t.TempDir())...)
	if code != 1 {
		t.Fatalf("without --checksums: exit %d, want 1:\n%s", code, errOut)
	}
	hasAll(t, "the error line", lastLine(errOut), "500", "retry, or pass --checksums FILE")

	sums := writeFile(t, t.TempDir(), "SHA256SUMS", []byte(sha256Hex(z)+"  train/00.jsonl.zst\n"))
	_, errOut = mustPrep(t, append(args, "-d", t.TempDir(), "--checksums", sums)...)
	hasAll(t, "stderr", errOut, "could not read the mirror's SHA256SUMS", "500")
	if strings.Contains(errOut, "WARNING: 1 file has no known sha256") {
		t.Errorf("the file --checksums lists was not verified:\n%s", errOut)
	}
}
