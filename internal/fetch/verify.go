package fetch

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// checkExisting reports whether f.Dest is in place and checks out: its size when
// f.Size is known, its sha256 when f.SHA256 is known (through the sidecar when it
// is current), else Options.Validate. A Dest that fails is removed, with its sidecar.
func (c *config) checkExisting(f File) (bool, error) {
	info, err := os.Stat(f.Dest)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !info.Mode().IsRegular() {
		return false, fmt.Errorf("%s exists but is not a regular file: move it away", f.Dest)
	}
	if f.Size > 0 && info.Size() != f.Size {
		return false, c.discard(f, "size check", fmt.Sprintf("%d bytes, want %d", info.Size(), f.Size))
	}
	if f.SHA256 == "" {
		if c.Validate != nil {
			head, err := readHead(f.Dest)
			if err != nil {
				return false, err
			}
			if err := c.Validate(f.Dest, head); err != nil {
				return false, c.discard(f, "content check", err.Error())
			}
		}
		c.done(f.Dest, info.Size())
		return true, nil
	}
	sum, ok := "", false
	if !c.NoSidecar {
		sum, ok = readSidecar(f.Dest, info)
	}
	if !ok {
		c.Logger.Info("checking the sha256 of an existing file", "dest", f.Dest, "bytes", info.Size())
		if sum, err = hashFile(f.Dest); err != nil {
			return false, err
		}
		if !c.NoSidecar {
			if err := writeSidecar(f.Dest, sum); err != nil {
				c.Logger.Warn("could not record the sha256 beside the file; the next run will hash it again", "dest", f.Dest, "err", err)
			}
		}
	}
	if sum != f.SHA256 {
		return false, c.discard(f, "sha256 check", fmt.Sprintf("sha256 %s, want %s", sum, f.SHA256))
	}
	c.done(f.Dest, info.Size())
	return true, nil
}

// discard removes a Dest that failed a check, and its sidecar, so it is downloaded again.
func (c *config) discard(f File, check, detail string) error {
	c.Logger.Warn("existing file fails its "+check+"; downloading it again", "dest", f.Dest, "detail", detail)
	if err := removeIfExists(sidecarPath(f.Dest)); err != nil {
		return err
	}
	return removeIfExists(f.Dest)
}

// done reports a file in place to Options.Progress.
func (c *config) done(dest string, size int64) {
	if c.Progress != nil {
		c.Progress(dest, size, size)
	}
}

// sidecarPath is where the verification sidecar of dest lives.
func sidecarPath(dest string) string { return dest + ".sha256" }

const sidecarTag = "# gptkit-fetch"

// readSidecar returns the sha256 recorded for dest, if the sidecar exists and
// records info's size and modification time.
func readSidecar(dest string, info fs.FileInfo) (string, bool) {
	data, err := os.ReadFile(sidecarPath(dest))
	if err != nil {
		return "", false
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2 {
		return "", false
	}
	sum, _, ok := strings.Cut(lines[0], "  ")
	if norm, err := normalizeSHA256(sum); !ok || err != nil || norm != sum {
		return "", false
	}
	var size, mtime int64
	if _, err := fmt.Sscanf(lines[1], sidecarTag+" size=%d mtime=%d", &size, &mtime); err != nil {
		return "", false
	}
	if size != info.Size() || mtime != info.ModTime().UnixNano() {
		return "", false
	}
	return sum, true
}

// writeSidecar records sum as dest's sha256, with dest's current size and
// modification time. It writes a temporary file and renames it, so a reader sees the
// old sidecar or the new one.
func writeSidecar(dest, sum string) error {
	info, err := os.Stat(dest)
	if err != nil {
		return err
	}
	text := sum + "  " + filepath.Base(dest) + "\n" +
		sidecarTag + " size=" + strconv.FormatInt(info.Size(), 10) + " mtime=" + strconv.FormatInt(info.ModTime().UnixNano(), 10) + "\n"
	tmp := sidecarPath(dest) + ".tmp"
	if err := os.WriteFile(tmp, []byte(text), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, sidecarPath(dest))
}

// hashFile returns the hex sha256 of the file at path.
func hashFile(path string) (string, error) {
	file, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer file.Close()
	h := sha256.New()
	if _, err := io.Copy(h, file); err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// readHead returns the first HeadSize bytes of the file at path (fewer if it is shorter).
func readHead(path string) ([]byte, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	head := make([]byte, HeadSize)
	n, err := io.ReadFull(file, head)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return head[:n], nil
}
