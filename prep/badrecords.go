package prep

import (
	"encoding/json"
	"fmt"
	"strings"
)

// ErrorPolicy says what ReadDocs does with a bad record.
type ErrorPolicy int

const (
	// Skip counts a bad record (Stats.Bad, Stats.BadRecords) and goes on: a
	// corrupt compressed stream keeps what came before the corruption and skips
	// the rest of its file. The caller decides whether Stats.ErrorRate is too high.
	Skip ErrorPolicy = iota
	// Fail stops at the first bad record with a *FileError naming its file and line.
	Fail
)

func (p ErrorPolicy) String() string {
	if p == Fail {
		return "fail"
	}
	return "skip"
}

// Set sets p from its name, "skip" or "fail", so that an *ErrorPolicy is a
// flag.Value.
func (p *ErrorPolicy) Set(s string) error {
	switch strings.ToLower(s) {
	case "skip":
		*p = Skip
	case "fail":
		*p = Fail
	default:
		return fmt.Errorf("prep: unknown error policy %q (want skip or fail)", s)
	}
	return nil
}

// Why a record is bad: the keys of BadRecordReport.Counts.
const (
	ReasonInvalidJSON = "invalid_json" // a JSONL line that is not JSON (ErrInvalidJSON)
	ReasonNotObject   = "not_object"   // a JSONL line that is not an object (ErrNotObject)
	ReasonMissingText = "missing_text" // no text member (ErrMissing)
	ReasonNotText     = "not_text"     // a text that is not a string or a list of strings, or a null Parquet value (ErrNotText)
	// ReasonCorrupt is no bad record either: a truncated or corrupt compressed
	// stream, zip member or Parquet page, which fails the reading unless
	// ReadOptions.AcceptTruncated; then its example says how many bytes were not
	// read (Stats.Truncated, Stats.UnreadBytes count them).
	ReasonCorrupt = "corrupt"

	// ReasonInvalidUTF8 is no bad record but a warning: the document was handed
	// on with its invalid UTF-8 replaced by U+FFFD (Stats.InvalidUTF8).
	ReasonInvalidUTF8 = "invalid_utf8"
)

// DefaultBadExamples is how many examples of each reason a BadRecordReport keeps
// unless ReadOptions say otherwise.
const DefaultBadExamples = 20

// BadRecord is one example of a bad record (or of a document with invalid UTF-8).
type BadRecord struct {
	File string `json:"file"`           // as named to ReadDocs; "file.zip:member" for a zip member
	Line int    `json:"line,omitempty"` // its line (Parquet: row), from 1; 0 for a whole file or a stream
	// Offset is the byte offset of its line when Line is 0 (a line of a byte range
	// read from the middle of a file: see FileError.Offset).
	Offset int64  `json:"offset,omitempty"`
	Reason string `json:"reason"`         // one of the Reason constants
	Error  string `json:"error"`          // what is wrong, without the file and line
	Kept   bool   `json:"kept,omitempty"` // the document was handed on (ReasonInvalidUTF8)
	// Unread is, for ReasonCorrupt, how many bytes of the file (as stored) were not
	// read because of it.
	Unread int64 `json:"unread_bytes,omitempty"`
}

// BadRecordReport is what a ReadDocs with OnError Skip found wrong: how many records
// of each reason, and the first examples of each reason, in the order met.
type BadRecordReport struct {
	Counts   map[string]int64 `json:"counts"`
	Examples []BadRecord      `json:"examples"`

	max   int            // examples of each reason to keep
	shown map[string]int // examples kept, by reason
}

// add counts a record of reason that e describes, keeping it as an example if it
// is among the first of its reason.
func (r *BadRecordReport) add(reason string, e *FileError, kept bool) {
	r.Counts[reason]++
	if r.shown == nil {
		r.shown = map[string]int{}
	}
	if r.shown[reason] >= r.max {
		return
	}
	r.shown[reason]++
	msg := e.Err.Error()
	if e.Hint != "" {
		msg += " (" + e.Hint + ")"
	}
	r.Examples = append(r.Examples, BadRecord{File: e.File, Line: e.Line, Offset: e.Offset, Reason: reason, Error: msg, Kept: kept})
}

// addInvalidUTF8 counts d, handed on with its invalid UTF-8 replaced.
func (r *BadRecordReport) addInvalidUTF8(d Doc) { r.addInvalidUTF8At(d, -1) }

// addInvalidUTF8At is addInvalidUTF8 of a document whose text is not at hand (one a
// resumed run skips): first is the byte of the first U+FFFD in its replaced text (-1:
// from d.Text).
func (r *BadRecordReport) addInvalidUTF8At(d Doc, first int) {
	if r.shown[ReasonInvalidUTF8] < r.max { // the message is only needed for an example
		if first < 0 {
			first = strings.IndexRune(d.Text, '\uFFFD')
		}
		err := fmt.Errorf("invalid UTF-8 (or a lone \\uD800-\\uDFFF escape), replaced by U+FFFD (the first U+FFFD is at byte %d of the text)", first)
		r.add(ReasonInvalidUTF8, &FileError{File: d.Source, Line: d.Line, Offset: d.Offset, Err: err}, true)
		return
	}
	r.Counts[ReasonInvalidUTF8]++
}

// Bad returns the number of bad records counted (the documents with invalid UTF-8,
// which were kept, and the accepted truncated streams aside).
func (r *BadRecordReport) Bad() int64 {
	if r == nil {
		return 0
	}
	var n int64
	for reason, c := range r.Counts {
		if reason != ReasonInvalidUTF8 && reason != ReasonCorrupt {
			n += c
		}
	}
	return n
}

// MarshalJSON writes {"counts": {reason: n, ...}, "examples": [{"file", "line",
// "reason", "error", "kept"}, ...]} (prep-report.json's "bad_records"), with empty (not
// null) counts and examples when there are none.
func (r BadRecordReport) MarshalJSON() ([]byte, error) {
	out := struct {
		Counts   map[string]int64 `json:"counts"`
		Examples []BadRecord      `json:"examples"`
	}{r.Counts, r.Examples}
	if out.Counts == nil {
		out.Counts = map[string]int64{}
	}
	if out.Examples == nil {
		out.Examples = []BadRecord{}
	}
	return json.Marshal(out)
}
