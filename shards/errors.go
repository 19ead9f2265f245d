package shards

import (
	"errors"
	"fmt"
)

// Sentinel errors, matched with errors.Is. Every error the package returns for a bad file
// wraps one of them inside a *FormatError that says which file, where, and what to do.
var (
	// ErrBadMagic: the .idx does not start with MMIDIDX\x00\x00.
	ErrBadMagic = errors.New("shards: bad magic")
	// ErrBadVersion: an .idx, manifest or llm.c header version this code does not know.
	ErrBadVersion = errors.New("shards: unsupported version")
	// ErrBadDType: a dtype code or name that is not a supported integer type.
	ErrBadDType = errors.New("shards: unsupported dtype")
	// ErrTruncated: a file is shorter than its header says.
	ErrTruncated = errors.New("shards: file truncated")
	// ErrCorrupt: a file is internally inconsistent (pointers, doc_idx, sizes, trailing bytes).
	ErrCorrupt = errors.New("shards: file corrupt")
	// ErrMergedDocIdx: doc_idx is [0] for a non-empty shard, as GPT-NeoX merge_datasets.py
	// leaves it; readable only with AllowMergedDocIdx.
	ErrMergedDocIdx = errors.New("shards: doc_idx was never filled in (GPT-NeoX merge_file_ output)")
	// ErrChecksum: a file's sha256 differs from the manifest's.
	ErrChecksum = errors.New("shards: checksum mismatch")
	// ErrMismatch: a shard's documents, tokens or dtype differ from its manifest entry.
	ErrMismatch = errors.New("shards: shard differs from manifest")
	// ErrMissing: a file the manifest names does not exist.
	ErrMissing = errors.New("shards: file missing")
	// ErrBadManifest: manifest.json is malformed or inconsistent.
	ErrBadManifest = errors.New("shards: bad manifest")
	// ErrVocab: a token id of a shard is outside its tokenizer's vocabulary [0,
	// vocab_size) (or the vocabulary a reader was told).
	ErrVocab = errors.New("shards: token id outside the vocabulary")
	// ErrNegativeID: a negative token id in a shard of a signed dtype (checked even
	// in a bare shard, which records no vocabulary): no tokenizer makes one, so the
	// .bin is damaged (a flipped sign byte). It matches ErrVocab too.
	ErrNegativeID error = &kindError{msg: "shards: negative token id", parent: ErrVocab}
	// ErrTokenRange: a token id does not fit the shard's dtype.
	ErrTokenRange = errors.New("shards: token id out of range for dtype")
	// ErrIncompatible: datasets that cannot be merged (tokenizer or dtype differ).
	ErrIncompatible = errors.New("shards: incompatible datasets")
	// ErrExists: the output dataset already exists.
	ErrExists = errors.New("shards: dataset already exists")
	// ErrClosed: the Writer was already closed or aborted.
	ErrClosed = errors.New("shards: writer closed")
)

// kindError is a sentinel that also matches a broader one (parent): its own text
// names the kind that `shards verify` prints.
type kindError struct {
	msg    string
	parent error
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.parent }

// FormatError describes one problem in one file.
type FormatError struct {
	File   string // path or store key of the file
	Offset int64  // byte offset in File, or -1 when not about one place
	Where  string // the element, e.g. "sizes[12]"; may be empty
	Msg    string // what is wrong
	Hint   string // what to do about it; may be empty
	Err    error  // the sentinel
}

// Error is "shards: FILE: byte N (where): what" and, on the next line, the hint.
func (e *FormatError) Error() string {
	s := "shards: " + e.File
	if e.Offset >= 0 {
		s += fmt.Sprintf(": byte %d", e.Offset)
	}
	if e.Where != "" {
		s += " (" + e.Where + ")"
	}
	s += ": " + e.Msg
	if e.Hint != "" {
		s += "\n---> HINT: " + e.Hint
	}
	return s
}

// Unwrap returns the sentinel.
func (e *FormatError) Unwrap() error { return e.Err }

func formatErr(sentinel error, file string, off int64, where, hint, format string, args ...any) *FormatError {
	return &FormatError{File: file, Offset: off, Where: where, Msg: fmt.Sprintf(format, args...), Hint: hint, Err: sentinel}
}

// Hints shared by several checks.
const (
	hintTruncated = "the file is truncated (an interrupted copy or write): re-run the stage that wrote it, or restore it, then run `shards verify`"
	hintRewrite   = "the file is damaged or was not written by a MMIDIDX writer: re-run the stage that wrote it, then run `shards verify`"
)
