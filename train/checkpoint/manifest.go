package checkpoint

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ManifestName is the file every complete checkpoint directory holds, written last.
const ManifestName = "checkpoint.json"

// Format and Version identify the checkpoint.json this package writes.
const (
	Format  = "gptkit-checkpoint"
	Version = 1
)

// dirPrefix and dirDigits make a checkpoint's directory name: step_%08d.
const dirPrefix = "step_"

// DirName returns the directory name of step's checkpoint, "step_%08d".
func DirName(step int64) string { return fmt.Sprintf("%s%08d", dirPrefix, step) }

// parseDirName returns the step of a directory called DirName(step).
func parseDirName(name string) (int64, bool) {
	digits, ok := strings.CutPrefix(name, dirPrefix)
	if !ok || digits == "" || digits[0] == '+' || digits[0] == '-' {
		return 0, false
	}
	step, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || DirName(step) != name {
		return 0, false
	}
	return step, true
}

// Manifest is checkpoint.json.
type Manifest struct {
	Format  string     `json:"format"`
	Version int        `json:"version"`
	Step    int64      `json:"step"`
	Time    string     `json:"time,omitempty"` // when it was written, RFC 3339 UTC (for people)
	Files   []FileInfo `json:"files"`
}

// FileInfo is one file of a checkpoint.
type FileInfo struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"` // lowercase hex
}

// File returns the entry for name.
func (m *Manifest) File(name string) (FileInfo, bool) {
	for _, f := range m.Files {
		if f.Name == name {
			return f, true
		}
	}
	return FileInfo{}, false
}

// ParseManifest parses and validates checkpoint.json: the format and version, a
// non-negative step, and files with valid, distinct names, non-negative sizes and
// 64-digit hex SHA-256s. Unknown fields are errors.
func ParseManifest(data []byte) (*Manifest, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var m Manifest
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("not a %s JSON object: %v", ManifestName, err)
	}
	if dec.More() {
		return nil, errors.New("data after the JSON object")
	}
	switch {
	case m.Format != Format:
		return nil, fmt.Errorf("format %q, want %q", m.Format, Format)
	case m.Version != Version:
		return nil, fmt.Errorf("version %d, this build reads version %d (a newer gptkit wrote it?)", m.Version, Version)
	case m.Step < 0:
		return nil, fmt.Errorf("negative step %d", m.Step)
	}
	seen := map[string]bool{}
	for i, f := range m.Files {
		if err := checkName(f.Name); err != nil {
			return nil, fmt.Errorf("files[%d]: %v", i, err)
		}
		if seen[f.Name] {
			return nil, fmt.Errorf("files[%d]: %q is listed twice", i, f.Name)
		}
		seen[f.Name] = true
		if f.Size < 0 {
			return nil, fmt.Errorf("files[%d] %q: negative size %d", i, f.Name, f.Size)
		}
		if b, err := hex.DecodeString(f.SHA256); err != nil || len(b) != 32 || strings.ToLower(f.SHA256) != f.SHA256 {
			return nil, fmt.Errorf("files[%d] %q: sha256 %q is not 64 lowercase hex digits", i, f.Name, f.SHA256)
		}
	}
	return &m, nil
}

// marshal encodes m as checkpoint.json (indented, for people reading it).
func (m *Manifest) marshal() []byte {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		panic(err) // strings and numbers always encode
	}
	return append(b, '\n')
}

// checkName accepts the names of the caller's files: one path element of letters,
// digits, '.', '_' and '-', not starting with '.', and not checkpoint.json.
func checkName(name string) error {
	switch {
	case name == "":
		return errors.New("empty file name")
	case name == ManifestName:
		return fmt.Errorf("file name %q is reserved for the manifest", name)
	case name[0] == '.':
		return fmt.Errorf("file name %q starts with '.' (reserved for temporary files)", name)
	case len(name) > 200:
		return fmt.Errorf("file name %q is longer than 200 bytes", name)
	}
	for _, c := range name {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("file name %q: only letters, digits, '.', '_' and '-' are allowed", name)
		}
	}
	return nil
}
