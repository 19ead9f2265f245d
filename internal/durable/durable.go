// Package durable makes the changes to a directory (a file created in it, renamed into
// it or removed from it) survive a crash: SyncDir, the one way the packages of gptkit
// that write files do it (checkpoints, shards, downloads, exports).
//
// Why a package: four copies had drifted apart, one failing where a file system cannot
// sync a directory (EINVAL from some network and FUSE file systems) and the others not.
// A few lines that no library offers; written by hand.
package durable

import (
	"errors"
	"fmt"
	"os"
)

// SyncDir fsyncs the directory dir, so that the creations, renames and removals in it
// are on stable storage once it returns. A file system that cannot sync a directory is
// not an error (there is nothing more to do there), nor is a system without directory
// sync (not Unix).
func SyncDir(dir string) error {
	if !supported {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !cannotSync(err) {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}

// cannotSync reports whether err is a file system's way of saying that it does not
// sync directories.
func cannotSync(err error) bool {
	return errors.Is(err, errors.ErrUnsupported) || errors.Is(err, errInvalid) || errors.Is(err, errNoSys)
}
