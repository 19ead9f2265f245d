package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEncodeProgress(t *testing.T) {
	alphabet := alphabetSpec(t)
	in := `{"text":"ab"}` + "\n" + `{"text":"c"}` + "\r\n" + `{"text":["a","b"]}`
	for _, tt := range []struct {
		mode   string
		stderr []string // substrings; none: stderr is empty
	}{
		{"auto", nil}, // not a terminal and shorter than 10 s: silent
		{"off", nil},
		{"on", []string{`level=INFO msg="encode done" bytes=46 docs=3 mb_per_s=`}},
	} {
		t.Run(tt.mode, func(t *testing.T) {
			code, out, errOut := runTokenize(t, in, "encode", "--tokenizer", alphabet, "--jsonl", "--progress", tt.mode)
			if code != 0 || out != "[2,3]\n[4]\n[2,0,0,3]\n" {
				t.Fatalf("exit %d, stdout %q; stderr %q", code, out, errOut)
			}
			if len(tt.stderr) == 0 && errOut != "" {
				t.Errorf("stderr %q, want nothing", errOut)
			}
			for _, want := range tt.stderr {
				if !strings.Contains(errOut, want) || strings.Count(errOut, "\n") != 1 {
					t.Errorf("stderr %q, want one line containing %q", errOut, want)
				}
			}
		})
	}
	// After a failure, no summary: the error is the one line.
	code, _, errOut := runTokenize(t, in+"\n{", "encode", "--tokenizer", alphabet, "--jsonl", "--progress", "on")
	if code != 1 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "stdin line 4: invalid JSON at byte 1") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	// A bad mode is a usage error.
	code, _, errOut = runTokenize(t, in, "encode", "--tokenizer", alphabet, "--progress", "yes")
	if code != 2 || !strings.Contains(errOut, `--progress is "yes", want auto, on or off`) {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = runTokenize(t, "", "encode", "-h")
	if code != 0 || !strings.Contains(errOut, "--progress MODE") || !strings.Contains(errOut, `(default "auto")`) {
		t.Errorf("help: exit %d, %q", code, errOut)
	}
}

// TestEncodeProgressFileTotal checks that a regular file on stdin gives the total.
func TestEncodeProgressFileTotal(t *testing.T) {
	alphabet := alphabetSpec(t)
	path := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(path, []byte(`{"text":"ab"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if n := inputSize(f); n != 14 {
		t.Errorf("inputSize = %d, want 14", n)
	}
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"encode", "--tokenizer", alphabet, "--jsonl", "--progress", "on"}, f, &stdout, &stderr)
	if code != 0 || !strings.Contains(stderr.String(), "bytes=14 total_bytes=14 percent=100 docs=1") {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
	// Whole-input mode counts the bytes read and one document.
	if _, err := f.Seek(1, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	if n := inputSize(f); n != 13 {
		t.Errorf("inputSize after a seek = %d, want 13", n)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if n := inputSize(r); n != 0 {
		t.Errorf("inputSize(pipe) = %d, want 0", n)
	}
	code, _, errOut := runTokenize(t, "abc", "encode", "--tokenizer", alphabet, "--progress", "on")
	if code != 0 || !strings.Contains(errOut, `msg="encode done" bytes=3 docs=1`) {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

func TestEncodeTextLists(t *testing.T) {
	alphabet := alphabetSpec(t)
	code, out, errOut := runTokenize(t, `{"text":["a","b"],"meta":{"x":[1,{"y":"z"}]}}`+"\n"+`{"text":[]}`+"\n", "encode", "--tokenizer", alphabet, "--jsonl")
	if code != 0 || out != "[2,0,0,3]\n[]\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, _, errOut = runTokenize(t, `{"text":["a",17]}`+"\n", "encode", "--tokenizer", alphabet, "--jsonl")
	if want := `stdin line 1: field "text" is ["a",17], not a string or a list of strings`; code != 1 || !strings.Contains(errOut, want) {
		t.Errorf("exit %d, stderr %q, want %q", code, errOut, want)
	}
}
