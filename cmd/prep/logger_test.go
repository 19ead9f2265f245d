package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestLoggerClearsLiveLine: on a terminal each log line first clears the progress
// bar's line, in the same write (a line logged while the bar was drawn ran on from its
// text); elsewhere (a file, a pipe) log lines are plain.
func TestLoggerClearsLiveLine(t *testing.T) {
	var term bytes.Buffer
	line := []byte("time=x level=INFO msg=resuming\n")
	if n, err := (clearLineWriter{&term}).Write(line); n != len(line) || err != nil {
		t.Fatalf("Write: %d, %v; want %d, nil", n, err, len(line))
	}
	if got := term.String(); got != "\r\x1b[K"+string(line) {
		t.Errorf("on a terminal: %q", got)
	}
	var file bytes.Buffer
	newLogger(&file).Info("resuming")
	if got := file.String(); strings.Contains(got, "\x1b") || !strings.Contains(got, "msg=resuming") {
		t.Errorf("in a file: %q", got)
	}
}
