// Package opencount counts, for tests, how many times files of a name are opened in
// directories (Linux inotify): the tests that check a command reads a manifest, a
// config or a checkpoint once rather than twice (on S3, one GET less each).
package opencount

import (
	"bytes"
	"encoding/binary"
	"syscall"
	"testing"
)

// Watch counts the opens of files named name in dirs, from now until each call of the
// function it returns. Closes are watched too, though not counted: inotify merges an
// event with the unread one before it when they are the same, and two opens with no
// close between (one file read twice, back to back) counted once.
func Watch(t testing.TB, name string, dirs ...string) func() int {
	t.Helper()
	fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	if err != nil {
		t.Skipf("inotify: %v", err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	for _, d := range dirs {
		if _, err := syscall.InotifyAddWatch(fd, d, syscall.IN_OPEN|syscall.IN_CLOSE); err != nil {
			t.Fatalf("inotify watch %s: %v", d, err)
		}
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
				l := int(binary.NativeEndian.Uint32(buf[off+12:]))
				ev := buf[off+syscall.SizeofInotifyEvent : off+syscall.SizeofInotifyEvent+l]
				mask := binary.NativeEndian.Uint32(buf[off+4:])
				if mask&syscall.IN_OPEN != 0 && string(bytes.TrimRight(ev, "\x00")) == name {
					n++
				}
				off += syscall.SizeofInotifyEvent + l
			}
		}
	}
}
