//go:build linux

package checkpoint

import (
	"errors"

	"golang.org/x/sys/unix"
)

// exchange swaps the directories a and b in one step (renameat2 with RENAME_EXCHANGE),
// and reports false, having moved nothing, where the file system cannot.
func exchange(a, b string) (bool, error) {
	err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EOPNOTSUPP):
		return false, nil
	}
	return false, err
}
