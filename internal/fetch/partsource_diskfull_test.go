package fetch

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

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
