package fetch

import (
	"encoding/json"
	"errors"
	"os"
)

// partSource is what a .part's bytes are, kept beside it in Dest.part.src: the URL
// they came from, the response's validator (strong ETag or Last-Modified) and the size
// it announced (-1: none). A rerun resumes with If-Range so that a file changed on the
// server comes whole rather than spliced onto the old bytes; a resume that announces
// another size is another version; and another source's bytes are kept until a source
// actually sends a whole file in their place.
type partSource struct {
	URL       string `json:"url"`
	Validator string `json:"validator,omitempty"`
	Size      int64  `json:"size"`
}

func partSourcePath(part string) string { return part + ".src" }

// readPartSource reads part's record; nil if there is none (or it is unreadable: a
// .part of an older gptkit, or a torn write).
func readPartSource(part string) *partSource {
	raw, err := os.ReadFile(partSourcePath(part))
	if err != nil {
		return nil
	}
	var s partSource
	if json.Unmarshal(raw, &s) != nil || s.URL == "" {
		return nil
	}
	return &s
}

// writePartSource records s beside part (best effort: without it a rerun resumes as
// an older gptkit did).
func writePartSource(part string, s partSource) {
	raw, err := json.Marshal(s)
	if err != nil {
		return
	}
	tmp := partSourcePath(part) + ".tmp"
	if os.WriteFile(tmp, raw, 0o644) == nil {
		os.Rename(tmp, partSourcePath(part))
	}
}

// removePartSource removes part's record.
func removePartSource(part string) {
	if err := os.Remove(partSourcePath(part)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return
	}
}

// localError is a failure of this machine (a full disk, a read-only directory), not of
// the source: no other source would do better, and the bytes downloaded are kept.
type localError struct{ err error }

func (e localError) Error() string { return e.err.Error() }
func (e localError) Unwrap() error { return e.err }
