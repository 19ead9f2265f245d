package storage

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback asks the kernel to start writing [off, off+n) of f to disk without
// waiting (sync_file_range SYNC_FILE_RANGE_WRITE). It is only a hint: durability still
// comes from Commit's fsync, which then has less left to do. Errors are ignored for the
// same reason.
func startWriteback(f *os.File, off, n int64) {
	_ = unix.SyncFileRange(int(f.Fd()), off, n, unix.SYNC_FILE_RANGE_WRITE)
}
