package main

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"gptkit/shards"
	"gptkit/storage"
)

// countOpens counts the opens of files named name in dir (inotify), from now until
// each call of the function it returns. Closes are watched too, not counted: inotify
// merges an event with the unread one before it when they are the same, which would
// count two opens with no close between once.
func countOpens(t *testing.T, name, dir string) func() int {
	t.Helper()
	fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	if err != nil {
		t.Skipf("inotify: %v", err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if _, err := syscall.InotifyAddWatch(fd, dir, syscall.IN_OPEN|syscall.IN_CLOSE); err != nil {
		t.Fatalf("inotify watch %s: %v", dir, err)
	}
	n := 0
	buf := make([]byte, 64<<10)
	return func() int {
		for {
			k, err := syscall.Read(fd, buf)
			if k <= 0 || err != nil {
				return n
			}
			for off := 0; off+syscall.SizeofInotifyEvent <= k; {
				mask := binary.NativeEndian.Uint32(buf[off+4:])
				l := int(binary.NativeEndian.Uint32(buf[off+12:]))
				ev := buf[off+syscall.SizeofInotifyEvent : off+syscall.SizeofInotifyEvent+l]
				if mask&syscall.IN_OPEN != 0 && string(bytes.TrimRight(ev, "\x00")) == name {
					n++
				}
				off += syscall.SizeofInotifyEvent + l
			}
		}
	}
}

// TestRunReadsPreviousManifestOnce: `tokenize run` over a finished dataset reads its
// manifest.json once, for the run's check that the output is this job's, which hands
// it to the planning of the tokenizer files stored beside the data (on S3, one GET
// less). It read it twice: cli.PreviousManifest before the run, and the run's check.
// The tokenizer files are planned and stored as before, with local parts too.
func TestRunReadsPreviousManifestOnce(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.txt")
	os.WriteFile(in, []byte(strings.Repeat("the cat sat on the mat. ", 200)), 0o644)
	tok := filepath.Join(dir, "my-bpe.json")
	if code, _, errOut := runTokenize(t, "", "train", "--input", in, "--vocab-size", "280", "--out", tok); code != 0 {
		t.Fatalf("train: exit %d: %s", code, errOut)
	}
	for _, extra := range [][]string{nil, {"--workers", "2", "--parts", "2"}} {
		out := filepath.Join(t.TempDir(), "ds")
		args := append([]string{"run", "--input", in, "--output", out, "--name", "x", "--tokenizer", tok, "--progress", "off"}, extra...)
		if code, _, errOut := runTokenize(t, "", args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", extra, code, errOut)
		}
		// Already complete: the manifest is read, nothing written.
		opens := countOpens(t, shards.ManifestName, out)
		if code, _, errOut := runTokenize(t, "", args...); code != 0 {
			t.Fatalf("%v rerun: exit %d: %s", extra, code, errOut)
		}
		if n := opens(); n != 1 {
			t.Errorf("%v: the rerun over the finished dataset opened its %s %d times, want once", extra, shards.ManifestName, n)
		}
		want, _ := os.ReadFile(tok)
		if got, err := os.ReadFile(filepath.Join(out, "tokenizer.json")); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%v: tokenizer.json beside the data: %d bytes (%v), want the %d of %s", extra, len(got), err, len(want), tok)
		}
		st, err := storage.Open(t.Context(), out, storage.Options{})
		if err != nil {
			t.Fatal(err)
		}
		m, err := shards.ReadManifest(t.Context(), st, "")
		if err != nil {
			t.Fatal(err)
		}
		if got := m.Source[shards.SourceTokenizerFiles]; got == nil || len(got.([]any)) != 1 {
			t.Errorf("%v: source.tokenizer_files = %v, want [tokenizer.json]", extra, got)
		}
	}
}
