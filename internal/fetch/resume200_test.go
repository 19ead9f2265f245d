package fetch

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// A resume answered with 200 whose body stalls before HeadSize bytes is given up
// after StallTimeout and retried (the head read had no stall timer: the download
// hung until ctx ended).
func TestStallDuringHeadOfResumed200(t *testing.T) {
	content := append([]byte("\x28\xB5\x2F\xFD"), randomBytes(200_000, 3)...)
	srv := newTestServer(t, map[string][]byte{"/f.zst": content})
	srv.setServe(func(w http.ResponseWriter, r *http.Request, n int, c []byte) bool {
		if n == 0 {
			w.Header().Set("Content-Length", strconv.Itoa(len(c)))
			w.WriteHeader(http.StatusOK)
			w.Write(c[:1000])
			http.NewResponseController(w).Flush()
			<-r.Context().Done()
			return true
		}
		return false
	})
	dest := filepath.Join(t.TempDir(), "f.zst")
	os.WriteFile(dest+".part", content[:50_000], 0o644)
	opt := fastOptions(t)
	opt.StallTimeout = 100 * time.Millisecond
	opt.Validate = RejectEmptyOrHTML
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	start := time.Now()
	err := FetchOne(ctx, File{URLs: []string{srv.URL + "/f.zst"}, Dest: dest, Size: int64(len(content)), SHA256: sha(content)}, opt)
	if err != nil {
		t.Fatalf("after %v (StallTimeout 100ms): %v", time.Since(start).Round(time.Millisecond), err)
	}
}

// A resume answered with 200 and a body of the wrong announced size (a proxy's plain
// text error page) fails keeping the bytes downloaded before (they were truncated
// before the size was checked).
func TestWrongSize200OnResumeKeepsPart(t *testing.T) {
	content := randomBytes(1<<20, 4)
	srv := newTestServer(t, nil)
	srv.setServe(func(w http.ResponseWriter, r *http.Request, n int, _ []byte) bool {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusOK)
		w.Write([]byte("Service temporarily unavailable, try again later\n"))
		return true
	})
	dest := filepath.Join(t.TempDir(), "f.bin")
	half := len(content) / 2
	os.WriteFile(dest+".part", content[:half], 0o644)
	opt := fastOptions(t)
	opt.Validate = RejectEmptyOrHTML
	err := FetchOne(context.Background(), File{URLs: []string{srv.URL + "/f.bin"}, Dest: dest, Size: int64(len(content))}, opt)
	if err == nil {
		t.Fatal("an error page of 200 was taken for the file")
	}
	got, _ := os.ReadFile(dest + ".part")
	if !bytes.Equal(got, content[:half]) {
		t.Fatalf(".part holds %d bytes, want the %d kept", len(got), half)
	}
}
