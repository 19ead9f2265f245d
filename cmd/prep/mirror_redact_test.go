package main

import (
	"strings"
	"testing"
)

// TestMirrorSumsLogRedacted: the lines about the mirror's SHA256SUMS (that prep asks
// for it; with --checksums, that it could not be read) name its URL without the
// credentials a --mirror BASE may carry (https://user:password@host/...), as every
// other line naming a URL does.
func TestMirrorSumsLogRedacted(t *testing.T) {
	recs := genPile(t, 20, 3)
	m, z := pileMirror(t, recs)
	base := strings.Replace(m.base(), "://", "://reader:s3cretpw@", 1)
	_, errOut := mustPrep(t, "pile-00", "-d", t.TempDir(), "--mirror", base, "--tokenizer", gpt2Dir(t), "--progress", "off")
	if strings.Contains(errOut, "s3cretpw") {
		t.Errorf("the mirror's password is in stderr:\n%s", errOut)
	}
	hasAll(t, "stderr", errOut, `msg="asking the mirror for SHA256SUMS" url=`)

	// A SHA256SUMS that does not parse, with --checksums: a warning naming its URL.
	m.put("SHA256SUMS", []byte("not a checksum list\n"))
	sums := writeFile(t, t.TempDir(), "SHA256SUMS", []byte(sha256Hex(z)+"  train/00.jsonl.zst\n"))
	_, errOut = mustPrep(t, "pile-00", "-d", t.TempDir(), "--mirror", base, "--tokenizer", gpt2Dir(t), "--progress", "off", "--checksums", sums)
	hasAll(t, "stderr", errOut, "could not read the mirror's SHA256SUMS")
	if strings.Contains(errOut, "s3cretpw") {
		t.Errorf("the mirror's password is in stderr:\n%s", errOut)
	}
}
