package storage

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalidKey is matched (errors.Is) by errors for keys and prefixes that break the
// rules CheckKey enforces.
var ErrInvalidKey = errors.New("storage: invalid key")

// maxKeyLen is S3's limit on object key length (bytes, including the store's prefix).
const maxKeyLen = 1024

// lockName is the per-directory lock file of the directory store (see dir.go); the
// writer lock (lock.go) is writerLockName.
const lockName = ".gptkit.lock"

// tempMarker separates a temp file's final name from its random suffix: ".NAME.tmp-RANDOM".
const tempMarker = ".tmp-"

// CheckKey reports whether key is a valid object key: a non-empty slash-separated path
// relative to the store's root, at most 1024 bytes, with no empty, "." or ".." elements,
// no NUL bytes, and no element reserved for the directory store's own files (temp files
// named ".NAME.tmp-RANDOM" and the lock file ".gptkit.lock"). The error matches
// ErrInvalidKey.
func CheckKey(key string) error {
	if key == "" {
		return badKey(key, "empty key")
	}
	if len(key) > maxKeyLen {
		return badKey(key, fmt.Sprintf("longer than %d bytes", maxKeyLen))
	}
	if strings.HasPrefix(key, "/") {
		return badKey(key, `keys are relative to the store: drop the leading "/"`)
	}
	for _, elem := range strings.Split(key, "/") {
		if err := checkElem(key, elem); err != nil {
			return err
		}
	}
	return nil
}

// checkPrefix validates a List prefix: "" or a key prefix whose complete elements (those
// followed by "/") obey CheckKey's rules; the last, partial element may be anything
// without a NUL byte.
func checkPrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	if strings.HasPrefix(prefix, "/") {
		return badKey(prefix, `prefixes are relative to the store: drop the leading "/"`)
	}
	if strings.IndexByte(prefix, 0) >= 0 {
		return badKey(prefix, "contains a NUL byte")
	}
	elems := strings.Split(prefix, "/")
	for _, elem := range elems[:len(elems)-1] {
		if err := checkElem(prefix, elem); err != nil {
			return err
		}
	}
	return nil
}

func checkElem(key, elem string) error {
	switch {
	case elem == "":
		return badKey(key, `empty path element (doubled or trailing "/")`)
	case elem == "." || elem == "..":
		return badKey(key, fmt.Sprintf("%q elements are not allowed", elem))
	case strings.IndexByte(elem, 0) >= 0:
		return badKey(key, "contains a NUL byte")
	case reservedName(elem):
		return badKey(key, fmt.Sprintf("element %q is reserved for the directory store's temp and lock files", elem))
	}
	return nil
}

// isTempName reports whether a file name is a directory store's temp file.
func isTempName(name string) bool {
	return reservedName(name) && name != lockName && name != writerLockName
}

// reservedName reports whether a file name belongs to the directory store itself: its
// lock file or a temp file ".NAME.tmp-RANDOM" (RANDOM is hex digits).
func reservedName(name string) bool {
	if name == lockName || name == writerLockName {
		return true
	}
	if !strings.HasPrefix(name, ".") {
		return false
	}
	i := strings.LastIndex(name, tempMarker)
	if i <= 0 {
		return false
	}
	suffix := name[i+len(tempMarker):]
	if suffix == "" {
		return false
	}
	for _, c := range suffix {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func badKey(key, why string) error {
	return fmt.Errorf("%w %q: %s", ErrInvalidKey, key, why)
}
