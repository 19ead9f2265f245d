package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestParseTokenArraysTrailing: anything but white space after the array is refused
// (issue 15: "[]]" was read as "[]" and "[[1,2,3]]]" as "[[1,2,3]]").
func TestParseTokenArraysTrailing(t *testing.T) {
	for _, s := range []string{"[]]", "[[1,2,3]]]", "[[1]]}", "[[1]] x", "[[1]][[2]]"} {
		if seqs, err := parseTokenArrays([]byte(s)); err == nil {
			t.Errorf("%q accepted as %v", s, seqs)
		} else if !strings.Contains(err.Error(), "follows it") {
			t.Errorf("%q: %v", s, err)
		}
	}
	for _, s := range []string{"[[1,2,3]]", "[[1,2,3]]\n", " [[1],[2,3]] \r\n\t", "[]"} {
		if _, err := parseTokenArrays([]byte(s)); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
}

// TestParseTokenArraysErrorAt: bad JSON is named by its line and byte (it said only
// "invalid character 'x' ...").
func TestParseTokenArraysErrorAt(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"[[1,2],\n [3,x]]", "line 2, byte 12: "},
		{"[[1,2],{}]", "line 1, byte 7: "},
		{"[[1,2]", ""}, // (unexpected EOF: no offset)
	} {
		_, err := parseTokenArrays([]byte(tc.in))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want+"want a JSON array") {
			t.Errorf("%q: %v, want it to begin %q", tc.in, err, tc.want)
		}
	}
}

// TestScoreBadTokensFirst: a --tokens file that is missing or empty fails with one line
// naming it, before a device is probed (--device auto logged its fallback to the CPU
// first, and an empty file said "...: EOF").
func TestScoreBadTokensFirst(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.json")
	os.WriteFile(empty, []byte(" \n"), 0o644)
	for _, tc := range []struct{ tokens, want string }{
		{filepath.Join(dir, "missing.json"), "train score: open " + filepath.Join(dir, "missing.json")},
		{empty, "train score: " + empty + " is empty"},
	} {
		code, stdout, stderr := runTrain(t, "score", "--ckpt", dir, "--tokens", tc.tokens)
		if code != 1 || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, tc.want) {
			t.Errorf("--tokens %s: exit %d, stdout %q, stderr %q; want one line %q...", tc.tokens, code, stdout, stderr, tc.want)
		}
	}
	// A name that is no device is still a usage error, before the tokens are read.
	if code, _, stderr := runTrain(t, "score", "--ckpt", dir, "--tokens", empty, "--device", "tpu"); code != 2 || !strings.Contains(stderr, `--device "tpu"`) {
		t.Errorf("--device tpu: exit %d, stderr %q", code, stderr)
	}
}
