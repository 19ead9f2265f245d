//go:build !linux

package hugemem

// advisable reports whether madvise can ask for transparent huge pages here: only on
// Linux.
func advisable() bool { return false }

func advise(raw, chunk []byte) {}

func mapHuge(size int) (raw, mem []byte) { return nil, nil }

func unmap(raw []byte) {}
