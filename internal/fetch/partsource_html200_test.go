package fetch

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// TestHTML200OnResumeKeepsPart: a rerun whose Range request a captive portal or proxy
// answers with "200 OK" and an HTML page keeps the .part (the body's head fails the
// format check before the bytes kept are dropped; they were truncated first).
func TestHTML200OnResumeKeepsPart(t *testing.T) {
	content := append([]byte("\x28\xB5\x2F\xFD"), randomBytes(1<<20, 5)...)
	dest := filepath.Join(t.TempDir(), "00.jsonl.zst")
	half := len(content) / 2
	if err := os.WriteFile(dest+".part", content[:half], 0o644); err != nil {
		t.Fatal(err)
	}
	portal := newTestServer(t, nil)
	portal.setServe(func(w http.ResponseWriter, r *http.Request, n int, _ []byte) bool {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusOK)
		w.Write([]byte("<html><body>Please log in to the guest network</body></html>"))
		return true
	})
	opt := fastOptions(t)
	opt.Validate = RejectEmptyOrHTML
	err := FetchOne(context.Background(), File{URLs: []string{portal.URL + "/train/00.jsonl.zst"}, Dest: dest}, opt)
	if err == nil {
		t.Fatal("an HTML page was accepted")
	}
	t.Logf("error: %v", err)
	got, rerr := os.ReadFile(dest + ".part")
	if rerr != nil || !bytes.Equal(got, content[:half]) {
		t.Fatalf("the %d bytes of the earlier run are gone (.part: %d bytes, %v): the next rerun starts from byte 0", half, len(got), rerr)
	}
}
