// Package durable makes the changes to a directory (a file created in it, renamed into
// it or removed from it) survive a crash: SyncDir, the one way the packages of gptkit
// that write files do it (checkpoints, shards, downloads, exports); and WriteFile and
// WriteFunc, which replace a file whole or not at all, durably (a run's config.yaml
// and metrics.jsonl, the files of a Hugging Face export).
//
// Why a package: four copies of SyncDir had drifted apart, one failing where a file
// system cannot sync a directory (EINVAL from some network and FUSE file systems) and
// the others not; two of the atomic write, one leaving a fixed NAME.tmp and the other
// a hidden temporary file. A few lines that no library offers; written by hand.
package durable

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// WriteFile writes data to path with WriteFunc.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return WriteFunc(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteFunc replaces the file path with what write writes, whole or not at all, and
// durably: write fills a hidden temporary file beside path (.NAME.tmp-*), which is
// synced, given the mode perm (as it is: the umask does not apply) and renamed over
// path, and the directory is synced after (DirSync). A write that fails (a full disk)
// leaves the earlier file, or none, and no temporary file; a crash leaves the earlier
// file or the new one whole, never part of the new one (it can leave the temporary
// file, which nothing reads); once WriteFunc returns, the new file stays. write's
// error is returned as it is; the others are the os package's, naming the temporary
// file or the directory.
func WriteFunc(path string, perm os.FileMode, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	err = write(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), perm)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return err
	}
	return DirSync(filepath.Dir(path))
}

// DirSync is what WriteFile and WriteFunc sync the file's directory with after the
// rename: SyncDir (a variable: the tests of the packages that write with them record
// the calls).
var DirSync = SyncDir

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
