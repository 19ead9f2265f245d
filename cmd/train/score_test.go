package main

import (
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
