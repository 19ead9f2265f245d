package hugemem

import "golang.org/x/sys/unix"

// advisable reports whether madvise can ask for transparent huge pages here.
func advisable() bool { return true }

// advise asks the kernel to back b (2 MB-aligned, not yet touched) with huge pages. An
// error (a kernel without transparent huge pages) leaves it on small pages.
func advise(b []byte) { _ = unix.Madvise(b, unix.MADV_HUGEPAGE) }
