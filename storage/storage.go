// Package storage is where datasets and checkpoints live: a small interface with two
// implementations, a directory (local disk or NFS) and S3 (or an S3-compatible server).
//
// Writes are atomic: nothing written through Create is visible under its key until Commit
// returns, and a crash or Abort leaves nothing behind under that key. Readers therefore see
// a whole object or none. Keys are slash-separated paths relative to the store's root
// ("enron/manifest.json"); they never start with "/" or contain "." or ".." elements.
package storage

import (
	"context"
	"errors"
	"io"
	"time"
)

// Store is a place objects are written to and read from.
type Store interface {
	// Open opens key for reading (ranged reads on S3).
	Open(ctx context.Context, key string) (Object, error)
	// Create starts writing key. The object appears under key only when the returned
	// Writer's Commit succeeds; with IfAbsent or IfMatch, Commit fails with
	// ErrPrecondition instead of replacing an object another writer published.
	Create(ctx context.Context, key string, opts ...WriteOption) (Writer, error)
	// Stat describes key; a missing key is an error matching ErrNotExist.
	Stat(ctx context.Context, key string) (Info, error)
	// List returns the objects whose keys start with prefix, sorted by key.
	List(ctx context.Context, prefix string) ([]Info, error)
	// Delete removes key; deleting a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// LocalPath returns the path of key on the local file system, for memory-mapping,
	// when the store keeps objects in local files (a directory store); ok is false
	// otherwise, and callers fetch a verified local copy (see Fetch).
	LocalPath(key string) (path string, ok bool)
	// String names the store for messages: a directory path or s3://bucket/prefix.
	String() string
}

// Object is an object opened for reading.
type Object interface {
	io.Reader
	io.ReaderAt
	io.Closer
	// Size is the object's length in bytes.
	Size() int64
}

// Writer writes one object. Exactly one of Commit and Abort must be called (Abort after a
// successful Commit is a no-op, so `defer w.Abort()` is the idiom).
type Writer interface {
	io.Writer
	// Commit makes the object visible under its key, durably (fsync of the file and its
	// directory; a completed multipart upload on S3).
	Commit() error
	// Abort discards what was written (removes the temp file; aborts the multipart upload).
	Abort() error
}

// Info describes a stored object.
type Info struct {
	Key     string
	Size    int64
	ModTime time.Time
	// ETag identifies this version of the object, for IfMatch.
	ETag string
}

// WriteOption modifies Create.
type WriteOption func(*WriteOptions)

// WriteOptions are the options Create applies.
type WriteOptions struct {
	IfAbsent bool   // commit only if key does not exist (S3 If-None-Match: *)
	IfMatch  string // commit only if key's current ETag is this (S3 If-Match)
}

// IfAbsent makes Commit fail with ErrPrecondition if key already exists.
func IfAbsent() WriteOption { return func(o *WriteOptions) { o.IfAbsent = true } }

// IfMatch makes Commit fail with ErrPrecondition unless key's current ETag is etag.
func IfMatch(etag string) WriteOption { return func(o *WriteOptions) { o.IfMatch = etag } }

// ApplyWriteOptions folds opts into a WriteOptions (for implementations).
func ApplyWriteOptions(opts []WriteOption) WriteOptions {
	var o WriteOptions
	for _, f := range opts {
		f(&o)
	}
	return o
}

var (
	// ErrNotExist is matched (errors.Is) by errors for missing keys.
	ErrNotExist = errors.New("storage: object does not exist")
	// ErrPrecondition is matched by Commit errors when IfAbsent or IfMatch fails:
	// another writer published the key first.
	ErrPrecondition = errors.New("storage: precondition failed (another writer changed the object)")
)
