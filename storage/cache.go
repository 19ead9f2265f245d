package storage

// Fetch's cache: cacheDir/<store>/<key> holds the data, named as in the store, and
// cacheDir/<store>.meta/<key>.json a sidecar written after the download was verified:
// the content's SHA-256 and the store's ETag, plus the cached file's identity
// (inode-size-mtime, as a directory store's ETag). <store> is the store's name made safe
// for a file name plus a hash of its full identity (S3: bucket, prefix and endpoint).
//
// A cached file is reused without reading it when its sidecar matches: the wanted SHA-256
// (or, with no SHA-256 given, the store's current ETag and size, one HEAD request) and the
// file's identity, so a file rewritten in place since verification is caught. A file whose
// identity changed is hashed again and reused if it still matches, else downloaded again.
// Bit rot that keeps size and mtime is not detected on reuse; callers that must know pass
// the file to their own verifier. An S3 store holding both "a" and "a/b" cannot cache
// both (a file and a directory of the same name); the second Fetch fails. Downloads run under a per-key lock file
// (cacheDir/<store>.meta/<key>.lock, flock), so ranks on one node fetch each object once.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// ErrChecksum is matched by Fetch errors when the downloaded content does not have the
// wanted SHA-256.
var ErrChecksum = errors.New("storage: checksum mismatch")

// DefaultCacheDir is where Fetch keeps local copies unless told otherwise:
// $GPTKIT_CACHE/storage, else the user cache directory's gptkit/storage (on Linux
// $XDG_CACHE_HOME/gptkit/storage or ~/.cache/gptkit/storage), else a directory under the
// system temp directory.
func DefaultCacheDir() string {
	if d := os.Getenv("GPTKIT_CACHE"); d != "" {
		return filepath.Join(d, "storage")
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "gptkit", "storage")
	}
	return filepath.Join(os.TempDir(), "gptkit-cache", "storage")
}

// Fetch returns the path of a local file holding key, for memory-mapping. A store with
// local files (LocalPath) is used in place, without verification. Otherwise the object is
// downloaded once into cacheDir, checked against wantSHA256 (hex; "" skips the check) and
// published atomically; later calls reuse the copy while it still matches (see the comment
// at the top of cache.go). A download with the wrong SHA-256 is removed and reported with
// an error matching ErrChecksum.
func Fetch(ctx context.Context, st Store, key, cacheDir, wantSHA256 string) (string, error) {
	if err := CheckKey(key); err != nil {
		return "", fmt.Errorf("storage: fetch from %s: %w", st, err)
	}
	wantSHA256 = strings.ToLower(wantSHA256)
	if p, ok := st.LocalPath(key); ok {
		if _, err := os.Stat(p); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return "", notExist("fetch", p)
			}
			return "", fmt.Errorf("storage: fetch %s: %w", p, err)
		}
		return p, nil
	}
	if cacheDir == "" {
		cacheDir = DefaultCacheDir()
	}
	c := newCacheEntry(st, key, cacheDir)
	if err := os.MkdirAll(filepath.Dir(c.meta), 0o777); err != nil {
		return "", fmt.Errorf("storage: fetch %s: cache: %w (%s)", c.name, err, c.dirHint())
	}
	unlock, err := lockFile(strings.TrimSuffix(c.meta, ".json") + ".lock")
	if err != nil {
		return "", fmt.Errorf("storage: fetch %s: cache: %w", c.name, err)
	}
	defer unlock()

	var info Info
	if wantSHA256 == "" {
		if info, err = st.Stat(ctx, key); err != nil {
			return "", err
		}
	}
	if c.valid(wantSHA256, info) {
		return c.data, nil
	}
	if err := c.download(ctx, st, wantSHA256, info); err != nil {
		return "", err
	}
	return c.data, nil
}

// cacheEntry locates one cached object.
type cacheEntry struct {
	store string // st.String()
	key   string
	name  string // s3://bucket/key, for messages
	data  string // the cached copy
	meta  string // its sidecar
	root  string // the cache directory given to Fetch (or DefaultCacheDir)
}

// dirHint names the cache directory and where it came from, for errors making it.
func (c cacheEntry) dirHint() string {
	return "check the cache directory " + c.root + ": --cache-dir, by default $GPTKIT_CACHE/storage, else ~/.cache/gptkit/storage"
}

// cacheMeta is the sidecar, written after a verified download.
type cacheMeta struct {
	Store  string `json:"store"`
	Key    string `json:"key"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
	ETag   string `json:"etag,omitempty"` // the store's ETag at download
	File   string `json:"file"`           // the cached file's identity (fileETag)
}

func newCacheEntry(st Store, key, cacheDir string) cacheEntry {
	id := st.String()
	if c, ok := st.(interface{ cacheID() string }); ok {
		id = c.cacheID()
	}
	sum := sha256.Sum256([]byte(id))
	safe := []byte(id)
	for i, b := range safe {
		if !('a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b == '.' || b == '-') {
			safe[i] = '_'
		}
	}
	if len(safe) > 64 {
		safe = safe[:64]
	}
	dir := filepath.Join(cacheDir, string(safe)+"-"+hex.EncodeToString(sum[:4]))
	rel := filepath.FromSlash(key)
	return cacheEntry{
		store: st.String(),
		key:   key,
		name:  strings.TrimSuffix(st.String(), "/") + "/" + key,
		data:  filepath.Join(dir, rel),
		meta:  filepath.Join(dir+".meta", rel+".json"),
		root:  cacheDir,
	}
}

// valid reports whether the cached copy can be used as it is, refreshing the sidecar of
// a copy whose file identity changed but whose content still matches wantSHA256.
func (c cacheEntry) valid(wantSHA256 string, info Info) bool {
	fi, err := os.Stat(c.data)
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	var m cacheMeta
	raw, err := os.ReadFile(c.meta)
	if err == nil {
		err = json.Unmarshal(raw, &m)
	}
	if err == nil && m.File == fileETag(fi) {
		if wantSHA256 != "" {
			return m.SHA256 == wantSHA256
		}
		return m.ETag == info.ETag && m.Size == info.Size
	}
	if wantSHA256 == "" {
		return false // nothing to check a changed file against
	}
	sum, size, err := hashFile(c.data)
	if err != nil || sum != wantSHA256 {
		return false
	}
	m = cacheMeta{Store: c.store, Key: c.key, SHA256: sum, Size: size, ETag: m.ETag}
	return c.writeMeta(m) == nil
}

func hashFile(p string) (string, int64, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	return hex.EncodeToString(h.Sum(nil)), n, err
}

// download copies key into a temp file beside the cached copy, verifies it and renames it
// into place, then writes the sidecar. The sidecar's ETag is the version read (the opened
// object's, where the store says: one replaced after stat was read would otherwise be
// kept under the earlier version's ETag), else stat's.
func (c cacheEntry) download(ctx context.Context, st Store, wantSHA256 string, stat Info) error {
	dir := filepath.Dir(c.data)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return fmt.Errorf("storage: fetch %s: cache: %w (%s)", c.name, err, c.dirHint())
	}
	// A download killed part way (SIGKILL, the OOM killer, preemption) left its temp
	// file: removed here, under the entry's lock, or each such kill would keep a
	// shard's worth of disk for good.
	removeDeadTemps(dir, path.Base(c.key))
	removeDeadTemps(filepath.Dir(c.meta), filepath.Base(c.meta))
	obj, err := st.Open(ctx, c.key)
	if err != nil {
		return err
	}
	defer obj.Close()
	etag := stat.ETag
	if v, ok := obj.(interface{ version() string }); ok {
		etag = v.version()
	}
	f, tmp, err := createTemp(dir, path.Base(c.key))
	if err != nil {
		return fmt.Errorf("storage: fetch %s: cache: %w", c.name, err)
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), obj)
	if err != nil {
		return fmt.Errorf("storage: fetch %s: %w", c.name, err)
	}
	if n != obj.Size() {
		return fmt.Errorf("storage: fetch %s: got %d bytes, the object has %d", c.name, n, obj.Size())
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if wantSHA256 != "" && sum != wantSHA256 {
		return fmt.Errorf("storage: fetch %s: %w: sha256 is %s, want %s (the object changed or is corrupt; check the manifest that names it)", c.name, ErrChecksum, sum, wantSHA256)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("storage: fetch %s: cache: %w", c.name, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("storage: fetch %s: cache: %w", c.name, err)
	}
	if err := os.Rename(tmp, c.data); err != nil {
		return fmt.Errorf("storage: fetch %s: cache: %w", c.name, err)
	}
	ok = true
	return c.writeMeta(cacheMeta{Store: c.store, Key: c.key, SHA256: sum, Size: n, ETag: etag})
}

// writeMeta records the cached file's current identity in m and writes the sidecar.
func (c cacheEntry) writeMeta(m cacheMeta) error {
	fi, err := os.Stat(c.data)
	if err != nil {
		return fmt.Errorf("storage: fetch %s: cache: %w", c.name, err)
	}
	m.File = fileETag(fi)
	raw, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	f, tmp, err := createTemp(filepath.Dir(c.meta), filepath.Base(c.meta))
	if err != nil {
		return fmt.Errorf("storage: fetch %s: cache: %w", c.name, err)
	}
	_, err = f.Write(append(raw, '\n'))
	if err == nil {
		err = f.Close()
	} else {
		f.Close()
	}
	if err == nil {
		err = os.Rename(tmp, c.meta)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("storage: fetch %s: cache: %w", c.name, err)
	}
	return nil
}
