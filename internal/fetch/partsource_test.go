package fetch

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestChangedFileBetweenRunsIsNotSpliced: a file with no known size or sha256 changes
// on the server between two runs; the rerun resumes with If-Range from the validator
// recorded beside the .part, so the server sends the new version whole (a bare Range
// request spliced the old version's first half onto the new one's second).
func TestChangedFileBetweenRunsIsNotSpliced(t *testing.T) {
	v1 := bytes.Repeat([]byte("{\"text\": \"old version\"}\n"), 40000)
	v2 := bytes.Repeat([]byte("{\"text\": \"NEW VERSION\"}\n"), 40000)
	srv := newTestServer(t, nil)
	var cur []byte
	var etag string
	cut := true
	srv.setServe(func(w http.ResponseWriter, r *http.Request, n int, _ []byte) bool {
		srv.mu.Lock()
		content, tag, drop := cur, etag, cut
		srv.mu.Unlock()
		w.Header().Set("ETag", tag)
		if drop {
			dropAfter(w, content, len(content)/2)
		}
		http.ServeContent(w, r, "c.jsonl", time.Time{}, bytes.NewReader(content))
		return true
	})
	dest := filepath.Join(t.TempDir(), "c.jsonl")
	f := File{URLs: []string{srv.URL + "/c.jsonl"}, Dest: dest}

	// Run 1: v1, the connection drops half way and there are no retries left.
	cur, etag = v1, `"v1"`
	opt := fastOptions(t)
	opt.Retries = -1
	if err := FetchOne(context.Background(), f, opt); err == nil {
		t.Fatal("run 1 succeeded")
	}
	if info, err := os.Stat(dest + ".part"); err != nil || info.Size() != int64(len(v1)/2) {
		t.Fatalf("part after run 1: %v %v", info, err)
	}

	// Between runs, the server's file is replaced.
	srv.mu.Lock()
	cur, etag, cut = v2, `"v2"`, false
	srv.mu.Unlock()
	if err := FetchOne(context.Background(), f, fastOptions(t)); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(dest)
	if !bytes.Equal(got, v2) {
		t.Fatalf("Dest is neither version: its first half is v1's (%v), its second v2's (%v); requests %q",
			bytes.Equal(got[:len(v1)/2], v1[:len(v1)/2]), bytes.Equal(got[len(v1)/2:], v2[len(v1)/2:]), srv.log())
	}
}

// TestDiskFullKeepsPartAndStops: a disk that fills up during a download (RLIMIT_FSIZE:
// EFBIG where a full disk gives ENOSPC) stops the fetch at once, keeps the .part and
// says to free space (it was taken for the source's failure: the next source was tried,
// the .part deleted first, and the message said to retry later).
func TestDiskFullKeepsPartAndStops(t *testing.T) {
	if os.Getenv("ZZ_REVIEW_DISKFULL_DEST") != "" {
		lim := syscall.Rlimit{Cur: 256 << 10, Max: 256 << 10}
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
			fmt.Println("setrlimit:", err)
			os.Exit(2)
		}
		f := File{URLs: strings.Split(os.Getenv("ZZ_REVIEW_DISKFULL_URLS"), ","), Dest: os.Getenv("ZZ_REVIEW_DISKFULL_DEST")}
		err := FetchOne(context.Background(), f, Options{Backoff: 1, MaxBackoff: 2})
		fmt.Println("error:", err)
		os.Exit(0)
	}
	content := randomBytes(1<<20, 3)
	first := newTestServer(t, map[string][]byte{"/train/00.jsonl.zst": content})
	second := newTestServer(t, map[string][]byte{"/train/00.jsonl.zst": content})
	dest := filepath.Join(t.TempDir(), "00.jsonl.zst")
	cmd := exec.Command(os.Args[0], "-test.run=^TestDiskFullKeepsPartAndStops$")
	cmd.Env = append(os.Environ(), "ZZ_REVIEW_DISKFULL_DEST="+dest,
		"ZZ_REVIEW_DISKFULL_URLS="+first.URL+"/train/00.jsonl.zst,"+second.URL+"/train/00.jsonl.zst")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "error: fetch") {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	t.Logf("%s", out)
	if n := second.bytesSent(); n > 0 {
		t.Errorf("after the disk filled up, the second source was downloaded too (%d bytes sent): the .part of the first (%d bytes) was deleted for it", n, 256<<10)
	}
	if !strings.Contains(string(out), "space") {
		t.Errorf("the message does not say to free disk space")
	}
}

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

// TestFailedNextSourceKeepsPart: a file with two sources and no known sha256 (a Pile
// shard) whose first source goes down part way keeps its .part when the second fails
// too, so that a rerun resumes it (the .part was deleted before the second source even
// answered, and the rerun began at byte 0).
func TestFailedNextSourceKeepsPart(t *testing.T) {
	content := randomBytes(1<<20, 7)
	first := newTestServer(t, map[string][]byte{"/f.jsonl.zst": content})
	first.setServe(func(w http.ResponseWriter, r *http.Request, n int, c []byte) bool {
		if n == 0 {
			dropAfter(w, c, len(c)/2)
		}
		http.Error(w, "busy", http.StatusServiceUnavailable)
		return true
	})
	dead := newTestServer(t, nil) // 404 for everything, as a dead host's parking page
	dest := filepath.Join(t.TempDir(), "f.jsonl.zst")
	opt := fastOptions(t)
	opt.Retries = 2
	err := FetchOne(context.Background(), File{URLs: []string{first.URL + "/f.jsonl.zst", dead.URL + "/f.jsonl.zst"}, Dest: dest}, opt)
	if err == nil {
		t.Fatal("no error")
	}
	t.Logf("error: %v", err)
	info, serr := os.Stat(dest + ".part")
	if serr != nil {
		t.Fatalf("after the failure, %s.part is gone (%v): the %d bytes downloaded are lost and a rerun starts from byte 0", filepath.Base(dest), serr, len(content)/2)
	}
	if info.Size() != int64(len(content)/2) {
		t.Fatalf("part holds %d bytes, want %d", info.Size(), len(content)/2)
	}
}

// TestResumeWithOtherTotalIsNotSpliced: a server with neither ETag nor Last-Modified (no
// If-Range possible) whose file changes during the download: the resume's 206 announces
// another total than the first response, so the download starts over (the bytes were
// appended, and v1's first half plus v2's tail taken as complete).
func TestResumeWithOtherTotalIsNotSpliced(t *testing.T) {
	v1 := randomBytes(1<<20, 11)
	v2 := randomBytes(1200000, 12)
	srv := newTestServer(t, nil)
	srv.setServe(func(w http.ResponseWriter, r *http.Request, n int, _ []byte) bool {
		if n == 0 {
			dropAfter(w, v1, len(v1)/2)
		}
		var start int
		if _, err := fmt.Sscanf(r.Header.Get("Range"), "bytes=%d-", &start); err != nil {
			w.Header().Set("Content-Length", fmt.Sprint(len(v2)))
			w.Write(v2)
			return true
		}
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, len(v2)-1, len(v2)))
		w.Header().Set("Content-Length", fmt.Sprint(len(v2)-start))
		w.WriteHeader(http.StatusPartialContent)
		w.Write(v2[start:])
		return true
	})
	dest := filepath.Join(t.TempDir(), "f.jsonl")
	if err := FetchOne(context.Background(), File{URLs: []string{srv.URL + "/f.jsonl"}, Dest: dest}, fastOptions(t)); err != nil {
		t.Logf("error (fine): %v", err)
	}
	got, err := os.ReadFile(dest)
	if err == nil && !bytes.Equal(got, v1) && !bytes.Equal(got, v2) {
		t.Fatalf("Dest (%d bytes) is spliced from two versions: requests %q", len(got), srv.log())
	}
}
