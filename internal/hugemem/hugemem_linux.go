package hugemem

import "golang.org/x/sys/unix"

// advisable reports whether madvise can ask for transparent huge pages here.
func advisable() bool { return true }

// advise hands raw, a fresh allocation that holds only zeros, back to the kernel (make
// may have cleared it, faulting it in on small pages) and asks for huge pages in chunk,
// its 2 MB-aligned part. An error (a kernel without transparent huge pages) leaves
// chunk on small pages.
func advise(raw, chunk []byte) {
	_ = unix.Madvise(raw, unix.MADV_DONTNEED)
	_ = unix.Madvise(chunk, unix.MADV_HUGEPAGE)
}
