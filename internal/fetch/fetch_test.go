package fetch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestFetchParallel(t *testing.T) {
	files := map[string][]byte{}
	for i := range 6 {
		files[fmt.Sprintf("/f%d", i)] = randomBytes(100<<10+i, uint64(i))
	}
	srv := newTestServer(t, files)
	var inflight, most atomic.Int32
	srv.setServe(func(w http.ResponseWriter, r *http.Request, n int, content []byte) bool {
		now := inflight.Add(1)
		defer inflight.Add(-1)
		for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
		}
		time.Sleep(50 * time.Millisecond)
		return false
	})
	dir := t.TempDir()
	var list []File
	for i := range 6 {
		name := fmt.Sprintf("f%d", i)
		list = append(list, File{URLs: []string{srv.URL + "/" + name}, Dest: filepath.Join(dir, "sub", name), SHA256: sha(files["/"+name]), Size: int64(len(files["/"+name]))})
	}
	var mu sync.Mutex
	last := map[string]int64{}
	opt := fastOptions(t)
	opt.Parallel = 3
	opt.Progress = func(dest string, done, total int64) {
		mu.Lock()
		defer mu.Unlock()
		if done < last[dest] || (total >= 0 && done > total) {
			t.Errorf("progress for %s went %d -> %d of %d", dest, last[dest], done, total)
		}
		last[dest] = done
	}
	if err := Fetch(context.Background(), list, opt); err != nil {
		t.Fatal(err)
	}
	for _, f := range list {
		wantFile(t, f.Dest, files["/"+filepath.Base(f.Dest)])
		if last[f.Dest] != f.Size {
			t.Errorf("last progress for %s: %d, want %d", f.Dest, last[f.Dest], f.Size)
		}
		if _, err := os.Stat(f.Dest + ".sha256"); err != nil {
			t.Errorf("no sidecar: %v", err)
		}
	}
	if m := most.Load(); m < 2 || m > 3 {
		t.Errorf("at most %d requests at once, want 2 or 3 (Parallel = 3)", m)
	}
}

func TestResumeAfterDroppedConnection(t *testing.T) {
	content := randomBytes(1<<20, 1)
	srv := newTestServer(t, map[string][]byte{"/data": content})
	cut := 300_000
	srv.setServe(func(w http.ResponseWriter, r *http.Request, n int, content []byte) bool {
		if n == 0 {
			dropAfter(w, content, cut)
		}
		return false
	})
	var logs logBuffer
	opt := fastOptions(t)
	opt.Logger = logs.logger()
	dest := filepath.Join(t.TempDir(), "data")
	f := File{URLs: []string{srv.URL + "/data"}, Dest: dest, Size: int64(len(content)), SHA256: sha(content)}
	if err := FetchOne(context.Background(), f, opt); err != nil {
		t.Fatal(err)
	}
	wantFile(t, dest, content)
	want := []string{"/data", "/data bytes=" + strconv.Itoa(cut) + "-"}
	if got := srv.log(); !slices.Equal(got, want) {
		t.Errorf("requests %v, want %v", got, want)
	}
	if got := srv.bytesSent(); got != int64(len(content)) {
		t.Errorf("server sent %d bytes in all, want %d: the second request did not start where the first stopped", got, len(content))
	}
	for _, w := range []string{"retrying", "resuming download", "from_byte=" + strconv.Itoa(cut)} {
		if !strings.Contains(logs.String(), w) {
			t.Errorf("log lacks %q:\n%s", w, logs.String())
		}
	}
}

func TestServerIgnoringRangeRestarts(t *testing.T) {
	content := randomBytes(200_000, 2)
	srv := newTestServer(t, map[string][]byte{"/data": content})
	srv.setServe(func(w http.ResponseWriter, r *http.Request, n int, content []byte) bool {
		w.Write(content) // 200 with the whole file, whatever the Range
		return true
	})
	dest := filepath.Join(t.TempDir(), "data")
	// Bytes from an earlier run, which the server will not resume.
	if err := os.WriteFile(dest+".part", content[:50_000], 0o644); err != nil {
		t.Fatal(err)
	}
	f := File{URLs: []string{srv.URL + "/data"}, Dest: dest, SHA256: sha(content)}
	if err := FetchOne(context.Background(), f, fastOptions(t)); err != nil {
		t.Fatal(err)
	}
	wantFile(t, dest, content)
	if got, want := srv.log(), []string{"/data bytes=50000-"}; !slices.Equal(got, want) {
		t.Errorf("requests %v, want %v", got, want)
	}
}

func TestBadContentRangeRestarts(t *testing.T) {
	content := randomBytes(100_000, 3)
	srv := newTestServer(t, map[string][]byte{"/data": content})
	srv.setServe(func(w http.ResponseWriter, r *http.Request, n int, content []byte) bool {
		if n == 0 { // claims to resume from the wrong place
			w.Header().Set("Content-Range", "bytes 10-99999/100000")
			w.WriteHeader(http.StatusPartialContent)
			w.Write(content[10:])
			return true
		}
		return false
	})
	dest := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(dest+".part", content[:20_000], 0o644); err != nil {
		t.Fatal(err)
	}
	f := File{URLs: []string{srv.URL + "/data"}, Dest: dest, SHA256: sha(content)}
	if err := FetchOne(context.Background(), f, fastOptions(t)); err != nil {
		t.Fatal(err)
	}
	wantFile(t, dest, content)
	if got, want := srv.log(), []string{"/data bytes=20000-", "/data"}; !slices.Equal(got, want) {
		t.Errorf("requests %v, want %v", got, want)
	}
}

func TestCorruptExistingFileIsDownloadedAgain(t *testing.T) {
	content := randomBytes(100_000, 4)
	srv := newTestServer(t, map[string][]byte{"/data": content})
	dest := filepath.Join(t.TempDir(), "data")
	f := File{URLs: []string{srv.URL + "/data"}, Dest: dest, Size: int64(len(content)), SHA256: sha(content)}
	if err := FetchOne(context.Background(), f, fastOptions(t)); err != nil {
		t.Fatal(err)
	}
	// Flip one byte, keeping the size; the new mtime makes the sidecar stale.
	bad := bytes.Clone(content)
	bad[12345] ^= 1
	writeLater(t, dest, bad)
	var logs logBuffer
	opt := fastOptions(t)
	opt.Logger = logs.logger()
	if err := FetchOne(context.Background(), f, opt); err != nil {
		t.Fatal(err)
	}
	wantFile(t, dest, content)
	if got := srv.log(); len(got) != 2 {
		t.Errorf("requests %v, want the first download and one repair", got)
	}
	if !strings.Contains(logs.String(), "fails its sha256 check") {
		t.Errorf("the repair was not logged:\n%s", logs.String())
	}

	// When the server's copy is corrupt too, the repair fails with a clear error and
	// leaves nothing behind.
	writeLater(t, dest, bad)
	srv.files["/data"] = bad
	err := FetchOne(context.Background(), f, fastOptions(t))
	errorContains(t, err, srv.URL+"/data", dest, "sha256 is "+sha(bad), "want "+sha(content), "discarded", "by hand to "+dest)
	if !errors.Is(err, ErrMismatch) {
		t.Errorf("errors.Is(err, ErrMismatch) is false for %v", err)
	}
	var m *MismatchError
	if !errors.As(err, &m) || m.Got != sha(bad) {
		t.Errorf("errors.As *MismatchError: %+v", m)
	}
	noFile(t, dest)
	noFile(t, dest+".part")
	noFile(t, dest+".sha256")
	if got := srv.log(); len(got) != 3 {
		t.Errorf("requests %v, want one more (a fresh download that fails is not repeated)", got)
	}
}

func TestCorruptResumedBytesRestartOnce(t *testing.T) {
	content := randomBytes(100_000, 5)
	srv := newTestServer(t, map[string][]byte{"/data": content})
	dest := filepath.Join(t.TempDir(), "data")
	stale := bytes.Clone(content[:40_000])
	stale[100] ^= 0xff
	if err := os.WriteFile(dest+".part", stale, 0o644); err != nil {
		t.Fatal(err)
	}
	f := File{URLs: []string{srv.URL + "/data"}, Dest: dest, SHA256: sha(content)}
	if err := FetchOne(context.Background(), f, fastOptions(t)); err != nil {
		t.Fatal(err)
	}
	wantFile(t, dest, content)
	if got, want := srv.log(), []string{"/data bytes=40000-", "/data"}; !slices.Equal(got, want) {
		t.Errorf("requests %v, want %v", got, want)
	}
}

func TestSizeMismatch(t *testing.T) {
	content := randomBytes(10_000, 6)
	srv := newTestServer(t, map[string][]byte{"/data": content})
	dest := filepath.Join(t.TempDir(), "data")

	// The server announces the size: nothing is downloaded.
	f := File{URLs: []string{srv.URL + "/data"}, Dest: dest, Size: 9_999}
	err := FetchOne(context.Background(), f, fastOptions(t))
	errorContains(t, err, "10000 bytes, want 9999", dest)
	if !errors.Is(err, ErrMismatch) {
		t.Errorf("not ErrMismatch: %v", err)
	}
	noFile(t, dest)
	if got := srv.log(); len(got) != 1 {
		t.Errorf("requests %v, want one", got)
	}

	// The server does not announce it (chunked): the bytes are counted.
	srv.setServe(func(w http.ResponseWriter, r *http.Request, n int, content []byte) bool {
		w.Write(content[:5000])
		http.NewResponseController(w).Flush()
		w.Write(content[5000:])
		return true
	})
	f.Size = 10_001
	err = FetchOne(context.Background(), f, fastOptions(t))
	errorContains(t, err, "got 10000 bytes, want 10001")
	noFile(t, dest)
	noFile(t, dest+".part")
	f.Size = 9_000
	err = FetchOne(context.Background(), f, fastOptions(t))
	errorContains(t, err, "more than 9000 bytes")
	noFile(t, dest)
	noFile(t, dest+".part")

	// An existing file of the wrong size is replaced.
	if err := os.WriteFile(dest, content[:10], 0o644); err != nil {
		t.Fatal(err)
	}
	f.Size = 10_000
	if err := FetchOne(context.Background(), f, fastOptions(t)); err != nil {
		t.Fatal(err)
	}
	wantFile(t, dest, content)
}

func TestNotFoundMovesToTheNextURL(t *testing.T) {
	content := randomBytes(5000, 7)
	srv := newTestServer(t, map[string][]byte{"/good": content})
	srv.setServe(func(w http.ResponseWriter, r *http.Request, n int, content []byte) bool {
		switch r.URL.Path {
		case "/forbidden":
			http.Error(w, "no", http.StatusForbidden)
		case "/gone":
			http.Error(w, "gone", http.StatusGone)
		default:
			return false
		}
		return true
	})
	dest := filepath.Join(t.TempDir(), "data")
	f := File{URLs: []string{srv.URL + "/missing", srv.URL + "/forbidden", srv.URL + "/gone", srv.URL + "/good"}, Dest: dest, SHA256: sha(content)}
	if err := FetchOne(context.Background(), f, fastOptions(t)); err != nil {
		t.Fatal(err)
	}
	wantFile(t, dest, content)
	if got, want := srv.log(), []string{"/missing", "/forbidden", "/gone", "/good"}; !slices.Equal(got, want) {
		t.Errorf("requests %v, want one each, no retries: %v", got, want)
	}

	// When every source fails, the error lists them all and suggests the next step.
	f = File{URLs: []string{srv.URL + "/missing", srv.URL + "/gone"}, Dest: filepath.Join(t.TempDir(), "x")}
	opt := fastOptions(t)
	opt.Hint = func(f File, err error) string { return "pass --mirror BASE, or download it by hand to " + f.Dest }
	err := FetchOne(context.Background(), f, opt)
	errorContains(t, err, "all 2 sources failed", srv.URL+"/missing: server answered 404", srv.URL+"/gone: server answered 410", "--mirror", "by hand to "+f.Dest)
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("not ErrNotFound: %v", err)
	}
	var ferr *Error
	if !errors.As(err, &ferr) || len(ferr.Sources) != 2 || ferr.Dest != f.Dest {
		t.Errorf("errors.As *Error: %+v", ferr)
	}
}

func TestTransientErrorsAreRetried(t *testing.T) {
	content := randomBytes(5000, 8)
	srv := newTestServer(t, map[string][]byte{"/data": content})
	srv.setServe(func(w http.ResponseWriter, r *http.Request, n int, content []byte) bool {
		if n < 2 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return true
		}
		return false
	})
	dest := filepath.Join(t.TempDir(), "data")
	f := File{URLs: []string{srv.URL + "/data"}, Dest: dest, SHA256: sha(content)}
	if err := FetchOne(context.Background(), f, fastOptions(t)); err != nil {
		t.Fatal(err)
	}
	wantFile(t, dest, content)
	if got := srv.log(); len(got) != 3 {
		t.Errorf("requests %v, want 3", got)
	}

	// A server that stays down is given up on after Retries retries.
	srv.setServe(func(w http.ResponseWriter, r *http.Request, n int, content []byte) bool {
		http.Error(w, "down", http.StatusBadGateway)
		return true
	})
	opt := fastOptions(t)
	opt.Retries = 2
	f.Dest = filepath.Join(t.TempDir(), "data")
	err := FetchOne(context.Background(), f, opt)
	errorContains(t, err, "gave up after 3 attempts", "502")
	if got := srv.log(); len(got) != 3+3 {
		t.Errorf("%d requests, want 3 more", len(got))
	}
}

func TestStalledResponseIsRetried(t *testing.T) {
	content := randomBytes(50_000, 9)
	srv := newTestServer(t, map[string][]byte{"/data": content})
	srv.setServe(func(w http.ResponseWriter, r *http.Request, n int, content []byte) bool {
		if n == 0 {
			w.Header().Set("Content-Length", strconv.Itoa(len(content)))
			w.Write(content[:1000])
			http.NewResponseController(w).Flush()
			<-r.Context().Done() // hang until the client gives up
			return true
		}
		return false
	})
	opt := fastOptions(t)
	opt.StallTimeout = 100 * time.Millisecond
	dest := filepath.Join(t.TempDir(), "data")
	if err := FetchOne(context.Background(), File{URLs: []string{srv.URL + "/data"}, Dest: dest, SHA256: sha(content)}, opt); err != nil {
		t.Fatal(err)
	}
	wantFile(t, dest, content)
	if got, want := srv.log(), []string{"/data", "/data bytes=1000-"}; !slices.Equal(got, want) {
		t.Errorf("requests %v, want %v", got, want)
	}
}

func TestVerifiedFileIsNotDownloadedAgain(t *testing.T) {
	content := randomBytes(100_000, 10)
	srv := newTestServer(t, map[string][]byte{"/data": content})
	dest := filepath.Join(t.TempDir(), "data")
	f := File{URLs: []string{srv.URL + "/data"}, Dest: dest, Size: int64(len(content)), SHA256: sha(content)}
	if err := FetchOne(context.Background(), f, fastOptions(t)); err != nil {
		t.Fatal(err)
	}
	sidecar, err := os.ReadFile(dest + ".sha256")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(sidecar), sha(content)+"  data\n# gptkit-fetch size=100000 mtime=") {
		t.Errorf("sidecar %q", sidecar)
	}
	if sums, err := ParseSHA256SUMS(sidecar); err != nil || sums["data"] != sha(content) {
		t.Errorf("the sidecar is not sha256sum format: %v, %v", sums, err)
	}
	var progress []int64
	opt := fastOptions(t)
	opt.Progress = func(_ string, done, total int64) { progress = append(progress, done, total) }
	if err := FetchOne(context.Background(), f, opt); err != nil {
		t.Fatal(err)
	}
	if got := srv.log(); len(got) != 1 {
		t.Errorf("requests %v, want only the first download", got)
	}
	if !slices.Equal(progress, []int64{100_000, 100_000}) {
		t.Errorf("progress %v, want one call with done == total", progress)
	}

	// The sidecar is what saves the re-hash: a same-size edit that also restores the
	// modification time goes unnoticed (as documented)...
	info, _ := os.Stat(dest)
	bad := bytes.Clone(content)
	bad[0] ^= 1
	if err := os.WriteFile(dest, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(dest, info.ModTime(), info.ModTime()); err != nil {
		t.Fatal(err)
	}
	if err := FetchOne(context.Background(), f, fastOptions(t)); err != nil {
		t.Fatal(err)
	}
	if got := srv.log(); len(got) != 1 {
		t.Errorf("requests %v: the sidecar was not used", got)
	}
	// ... but without the sidecar (or with NoSidecar) the file is hashed and repaired.
	opt = fastOptions(t)
	opt.NoSidecar = true
	if err := FetchOne(context.Background(), f, opt); err != nil {
		t.Fatal(err)
	}
	wantFile(t, dest, content)
	if got := srv.log(); len(got) != 2 {
		t.Errorf("requests %v, want a repair", got)
	}
}

func TestSidecarIsInvalidatedWhenTheFileChanges(t *testing.T) {
	content := randomBytes(100_000, 11)
	srv := newTestServer(t, map[string][]byte{"/data": content})
	dest := filepath.Join(t.TempDir(), "data")
	f := File{URLs: []string{srv.URL + "/data"}, Dest: dest, SHA256: sha(content)}
	if err := FetchOne(context.Background(), f, fastOptions(t)); err != nil {
		t.Fatal(err)
	}
	// Same content, new mtime: hashed again, found good, the sidecar rewritten.
	before, _ := os.ReadFile(dest + ".sha256")
	writeLater(t, dest, content)
	if err := FetchOne(context.Background(), f, fastOptions(t)); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(dest + ".sha256")
	if bytes.Equal(before, after) {
		t.Errorf("sidecar not rewritten after the file changed: %q", after)
	}
	// Truncated: caught although the size is unknown to the File.
	if err := os.Truncate(dest, 1000); err != nil {
		t.Fatal(err)
	}
	if err := FetchOne(context.Background(), f, fastOptions(t)); err != nil {
		t.Fatal(err)
	}
	wantFile(t, dest, content)
	if got := srv.log(); len(got) != 2 {
		t.Errorf("requests %v, want the first download and one repair", got)
	}
}

func TestCancelMidDownloadLeavesNoFile(t *testing.T) {
	content := randomBytes(1<<20, 12)
	srv := newTestServer(t, map[string][]byte{"/data": content})
	half := len(content) / 2
	srv.setServe(func(w http.ResponseWriter, r *http.Request, n int, content []byte) bool {
		if n == 0 {
			w.Header().Set("Content-Length", strconv.Itoa(len(content)))
			w.Write(content[:half])
			http.NewResponseController(w).Flush()
			<-r.Context().Done()
			return true
		}
		return false
	})
	dest := filepath.Join(t.TempDir(), "data")
	f := File{URLs: []string{srv.URL + "/data"}, Dest: dest, SHA256: sha(content)}
	ctx, cancel := context.WithCancel(context.Background())
	opt := fastOptions(t)
	opt.Progress = func(_ string, done, total int64) {
		if done == int64(half) {
			cancel()
		}
	}
	err := FetchOne(ctx, f, opt)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	noFile(t, dest)
	noFile(t, dest+".lock")
	if info, err := os.Stat(dest + ".part"); err != nil || info.Size() != int64(half) {
		t.Fatalf(".part: %v, %v; want %d bytes kept for the next run", info, err, half)
	}
	if err := FetchOne(context.Background(), f, fastOptions(t)); err != nil {
		t.Fatal(err)
	}
	wantFile(t, dest, content)
	if got, want := srv.log(), []string{"/data", "/data bytes=" + strconv.Itoa(half) + "-"}; !slices.Equal(got, want) {
		t.Errorf("requests %v, want %v", got, want)
	}
}

func TestFirstErrorCancelsTheRest(t *testing.T) {
	srv := newTestServer(t, map[string][]byte{"/slow": randomBytes(1000, 13)})
	srv.setServe(func(w http.ResponseWriter, r *http.Request, n int, content []byte) bool {
		if r.URL.Path == "/slow" {
			w.Header().Set("Content-Length", "1000")
			w.Write(content[:10])
			http.NewResponseController(w).Flush()
			<-r.Context().Done()
			return true
		}
		return false
	})
	dir := t.TempDir()
	files := []File{
		{URLs: []string{srv.URL + "/slow"}, Dest: filepath.Join(dir, "a")},
		{URLs: []string{srv.URL + "/slow"}, Dest: filepath.Join(dir, "b")},
		{URLs: []string{srv.URL + "/missing"}, Dest: filepath.Join(dir, "c")},
		{URLs: []string{srv.URL + "/slow"}, Dest: filepath.Join(dir, "d")},
	}
	start := time.Now()
	err := Fetch(context.Background(), files, fastOptions(t))
	errorContains(t, err, "/missing", "404", filepath.Join(dir, "c"))
	if errors.Is(err, context.Canceled) {
		t.Errorf("the error returned is a cancelled one, not the cause: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
	for _, f := range files {
		noFile(t, f.Dest)
	}
}

func TestFetchRejectsDuplicatesAndBadSums(t *testing.T) {
	dir := t.TempDir()
	err := Fetch(context.Background(), []File{{URLs: []string{"http://127.0.0.1:1/a"}, Dest: filepath.Join(dir, "a")}, {URLs: []string{"http://127.0.0.1:1/b"}, Dest: filepath.Join(dir, ".", "a")}}, Options{})
	errorContains(t, err, "listed twice")
	err = FetchOne(context.Background(), File{URLs: []string{"http://127.0.0.1:1/a"}, Dest: filepath.Join(dir, "a"), SHA256: "abc"}, Options{})
	errorContains(t, err, "64 hex digits")
	err = FetchOne(context.Background(), File{Dest: filepath.Join(dir, "a")}, Options{})
	errorContains(t, err, "no URL", "by hand to "+filepath.Join(dir, "a"))
}

func TestValidateRejectsHTMLAndEmpty(t *testing.T) {
	html := []byte("\n<!DOCTYPE html>\n<html><body>Please log in</body></html>\n")
	srv := newTestServer(t, map[string][]byte{"/page": html, "/empty": {}, "/good": []byte("{\"model\": {}}\n")})
	dir := t.TempDir()
	opt := fastOptions(t)
	opt.Validate = RejectEmptyOrHTML
	err := FetchOne(context.Background(), File{URLs: []string{srv.URL + "/page"}, Dest: filepath.Join(dir, "page")}, opt)
	errorContains(t, err, "HTML page", srv.URL+"/page")
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("not ErrInvalid: %v", err)
	}
	noFile(t, filepath.Join(dir, "page"))
	err = FetchOne(context.Background(), File{URLs: []string{srv.URL + "/empty"}, Dest: filepath.Join(dir, "empty")}, opt)
	errorContains(t, err, "empty file")
	noFile(t, filepath.Join(dir, "empty"))
	// A good source after a bad one wins.
	dest := filepath.Join(dir, "tok.json")
	if err := FetchOne(context.Background(), File{URLs: []string{srv.URL + "/page", srv.URL + "/good"}, Dest: dest}, opt); err != nil {
		t.Fatal(err)
	}
	wantFile(t, dest, srv.files["/good"])
	// An existing HTML file with no known sha256 is replaced.
	if err := os.WriteFile(dest, html, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := FetchOne(context.Background(), File{URLs: []string{srv.URL + "/good"}, Dest: dest}, opt); err != nil {
		t.Fatal(err)
	}
	wantFile(t, dest, srv.files["/good"])
}

func TestRejectEmptyOrHTML(t *testing.T) {
	for _, tt := range []struct {
		head string
		ok   bool
	}{
		{"", false},
		{"<html>", false},
		{"\xEF\xBB\xBF  <!doctype HTML>", false},
		{"\r\n<HEAD><title>x", false},
		{"<!-- comment --><html>", false},
		{"{\"model\":{}}", true},
		{"#version: 0.2\n", true},
		{"IQ== 0\n", true},
		{"\x28\xb5\x2f\xfd", true},
	} {
		if err := RejectEmptyOrHTML("f", []byte(tt.head)); (err == nil) != tt.ok {
			t.Errorf("RejectEmptyOrHTML(%q) = %v, want ok=%v", tt.head, err, tt.ok)
		}
	}
}

func TestConcurrentFetchesDownloadOnce(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("the lock uses flock")
	}
	content := randomBytes(300_000, 14)
	srv := newTestServer(t, map[string][]byte{"/data": content})
	srv.setServe(func(w http.ResponseWriter, r *http.Request, n int, content []byte) bool {
		time.Sleep(100 * time.Millisecond) // long enough for the others to queue on the lock
		return false
	})
	dest := filepath.Join(t.TempDir(), "data")
	f := File{URLs: []string{srv.URL + "/data"}, Dest: dest, SHA256: sha(content)}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() { errs[i] = FetchOne(context.Background(), f, fastOptions(t)) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	wantFile(t, dest, content)
	if got := srv.log(); len(got) != 1 {
		t.Errorf("requests %v, want one", got)
	}
}

func TestGet(t *testing.T) {
	srv := newTestServer(t, map[string][]byte{"/SHA256SUMS": []byte("x")})
	data, err := Get(context.Background(), nil, srv.URL+"/SHA256SUMS", 10)
	if err != nil || string(data) != "x" {
		t.Fatalf("Get = %q, %v", data, err)
	}
	_, err = Get(context.Background(), nil, srv.URL+"/nope", 10)
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("err = %v, want ErrNotFound", err)
	}
	_, err = Get(context.Background(), nil, srv.URL+"/SHA256SUMS", 0)
	errorContains(t, err, "larger than 0 bytes")
}

// writeLater writes data to path with a modification time surely different from
// the one it had (file systems with coarse timestamps would otherwise keep it).
func writeLater(t *testing.T, path string, data []byte) {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	later := info.ModTime().Add(2 * time.Second)
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
}

// TestReadOnlyDirectoryWithAGoodCopy: a complete file in a directory this user cannot
// write is checked and used in place; a missing one there fails naming the directory.
// Root ignores file modes, so under root the test runs as nobody (runAsNobody).
func TestReadOnlyDirectoryWithAGoodCopy(t *testing.T) {
	if !runAsNobody(t) {
		return
	}
	content := randomBytes(10_000, 15)
	srv := newTestServer(t, map[string][]byte{"/data": content})
	dir := filepath.Join(t.TempDir(), "ro")
	dest := filepath.Join(dir, "data")
	f := File{URLs: []string{srv.URL + "/data"}, Dest: dest, SHA256: sha(content)}
	if err := FetchOne(context.Background(), f, fastOptions(t)); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
	if err := FetchOne(context.Background(), f, fastOptions(t)); err != nil {
		t.Fatal(err)
	}
	// A missing file there cannot be downloaded, and the error says why.
	f.Dest = filepath.Join(dir, "other")
	errorContains(t, FetchOne(context.Background(), f, fastOptions(t)), "permission denied", f.Dest)
	if got := srv.log(); len(got) != 1 {
		t.Errorf("requests %v, want only the first download", got)
	}
}

// TestGetHungServer: a mirror's SHA256SUMS from a server that accepted the
// connection and then said nothing took 3 tries of the client's 60 s header timeout
// (3 minutes) to fail; now each try gives up after getStallTimeout without an answer,
// or without more of the body.
func TestGetHungServer(t *testing.T) {
	saved := getStallTimeout
	getStallTimeout = 200 * time.Millisecond
	t.Cleanup(func() { getStallTimeout = saved })
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/half" {
			w.Header().Set("Content-Length", "100")
			w.Write([]byte("abc"))
			w.(http.Flusher).Flush()
		}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	for _, path := range []string{"/SHA256SUMS", "/half"} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		t0 := time.Now()
		_, err := Get(ctx, nil, srv.URL+path, 1000)
		cancel()
		if err == nil || !strings.Contains(err.Error(), "the server sent nothing for 200ms") || time.Since(t0) > 5*time.Second {
			t.Errorf("%s: after %v: %v; want it to give up after 3 tries of 200ms", path, time.Since(t0), err)
		}
	}
}
