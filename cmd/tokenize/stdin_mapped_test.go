package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gptkit/internal/testfiles"
	"gptkit/tokenize/spec"
)

// TestEncodeJSONLMappedStdin: `encode --jsonl` from a regular file (read through a
// memory map) writes what it writes from a stream of the same bytes, errors included:
// lines cut into batches by size and by count, a line longer than a batch, no final
// newline, a bad line, and stdin at an offset into the file.
func TestEncodeJSONLMappedStdin(t *testing.T) {
	defer func(old int64) { mapStdinMin = old }(mapStdinMin)
	mapStdinMin = 1 // map the small files too
	gpt2 := testfiles.Path(t, "tokenizers/gpt2")
	alphabet := alphabetSpec(t)
	golden, _, _ := goldenLines(t, 50)
	short := strings.Repeat(`{"text":"ab"}`+"\n", 3*batchLines+5)
	long := `{"text":"` + strings.Repeat("abc ", batchBytes/3) + `"}` + "\n"
	for _, tc := range []struct {
		name, spec, input string
		skip              int // stdin starts this many bytes into the file
	}{
		{"golden", gpt2, strings.Join(golden, "\n") + "\n", 0},
		{"no final newline", gpt2, strings.Join(golden, "\n"), 0},
		{"batches by count", alphabet, short, 0},
		{"a line longer than a batch", alphabet, short + long + short, 0},
		{"bad line", alphabet, short + `{"text":"ab"` + "\n" + short, 0},
		{"empty line", alphabet, short + "\n" + short, 0},
		{"at an offset", gpt2, strings.Join(golden, "\n") + "\n", len(golden[0]) + 1},
		{"at an offset mid-line", alphabet, short, 5},
	} {
		for _, workers := range []string{"1", "3"} {
			t.Run(tc.name+"/workers="+workers, func(t *testing.T) {
				args := []string{"encode", "--tokenizer", tc.spec, "--jsonl", "--workers", workers, "--progress", "off"}
				var wantOut, wantErr bytes.Buffer
				wantCode := run(context.Background(), args, strings.NewReader(tc.input[tc.skip:]), &wantOut, &wantErr)

				f := openAt(t, tc.input, tc.skip)
				m := mapStdin(f)
				if m == nil {
					t.Fatal("stdin was not mapped")
				}
				m.unmap()
				var out, errOut bytes.Buffer
				code := run(context.Background(), args, f, &out, &errOut)
				if code != wantCode || out.String() != wantOut.String() || errOut.String() != wantErr.String() {
					t.Fatalf("mapped: exit %d, %d bytes of stdout, stderr %q; as a stream: exit %d, %d bytes, stderr %q",
						code, out.Len(), errOut.String(), wantCode, wantOut.Len(), wantErr.String())
				}
				if off, _ := f.Seek(0, io.SeekCurrent); code == 0 && off != int64(len(tc.input)) {
					t.Errorf("stdin's offset is %d after the run, want %d (its end)", off, len(tc.input))
				}
				if tc.name == "bad line" && !strings.Contains(errOut.String(), "stdin line 24582:") {
					t.Errorf("stderr %q, want it to name line %d", errOut.String(), 3*batchLines+6)
				}
			})
		}
	}
}

// TestEncodeJSONLMappedStdinCut: a mapped stdin that gets shorter while it is read (to
// nothing, or to 2 MiB of 4) is an error that names the line where the reading
// faulted (caught: not a crash), after the lines before it.
func TestEncodeJSONLMappedStdinCut(t *testing.T) {
	alphabet := alphabetSpec(t)
	line := `{"text":"ab ba abba"}` + "\n"
	input := strings.Repeat(line, (4<<20)/len(line))
	defer func(old int64) { mapStdinMin = old }(mapStdinMin)
	mapStdinMin = 1
	for _, cut := range []int{0, 2 << 20} {
		code, out, errOut := runCutStdin(t, input, cut, "encode", "--tokenizer", alphabet, "--jsonl", "--progress", "off")
		// The lines before the cut are written, but for the last one or two: a line's
		// search for its end may read a vector past the cut, which faults.
		lines, wrote := strings.Count(input[:cut], "\n"), strings.Count(out, "\n")
		msg := fmt.Sprintf("stdin line %d: the file got shorter while it was being read", wrote+1)
		if code != 1 || wrote > lines || wrote < lines-2 || !strings.Contains(errOut, msg) {
			t.Fatalf("cut at %d: exit %d, %d lines of stdout (want %d), stderr %q (want %q)",
				cut, code, wrote, lines, errOut, msg)
		}
	}
}

// TestEncodeJSONLMappedStdinInterrupted: interrupted (its context cancelled) while it
// writes, `encode --jsonl` from a mapped stdin fails with the context's error and its
// output is a prefix of the whole output: no batch left out (a worker that stops for
// the interruption fails its batch), no exit 0.
func TestEncodeJSONLMappedStdinInterrupted(t *testing.T) {
	defer func(old int64) { mapStdinMin = old }(mapStdinMin)
	mapStdinMin = 1
	tok, err := spec.Load(context.Background(), alphabetSpec(t), spec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	line := `{"text":"ab ba abba"}` + "\n"
	input := strings.Repeat(line, (6<<20)/len(line))
	path := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(path, []byte(input), 0o644); err != nil {
		t.Fatal(err)
	}
	ft := newIDText(tok.VocabSize())
	var whole bytes.Buffer
	w := bufio.NewWriter(&whole)
	if err := encodeLines(context.Background(), tok, strings.NewReader(input), w, "text", 2, nil, ft, &badUTF8Lines{}); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	for round := range 20 {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		var got bytes.Buffer
		w := bufio.NewWriterSize(writerFunc(func(p []byte) (int, error) {
			cancel() // interrupted at the first write
			return got.Write(p)
		}), 16)
		err = encodeLines(ctx, tok, f, w, "text", 2, nil, ft, &badUTF8Lines{})
		w.Flush()
		f.Close()
		cancel()
		if !errors.Is(err, context.Canceled) || !bytes.HasPrefix(whole.Bytes(), got.Bytes()) {
			t.Fatalf("round %d: error %v, %d bytes written, a prefix of the whole output: %v", round, err, got.Len(), bytes.HasPrefix(whole.Bytes(), got.Bytes()))
		}
	}
}

// writerFunc is an io.Writer of a function.
type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// FuzzEncodeJSONLMappedStdin holds `encode --jsonl` from a mapped regular file to the
// same bytes read as a stream: stdout, stderr and exit code, at any offset, in batches
// of a few lines.
func FuzzEncodeJSONLMappedStdin(f *testing.F) {
	f.Add([]byte(`{"text":"ab"}`+"\n"+`{"text":"b a"}`), uint8(0))
	f.Add([]byte("\n\n"+`{"text":"ab"}`+"\n"), uint8(1))
	f.Add([]byte(`{"text":["a","b"]}`+"\n"+`{"text":"c"`+"\n"), uint8(3))
	f.Add([]byte(`{"meta":1,"text":"\u0061"}`), uint8(2))
	alphabet := alphabetSpec(f)
	dir := f.TempDir()
	defer func(old int64) { mapStdinMin = old }(mapStdinMin)
	mapStdinMin = 1
	defer func(bytes, lines int) { batchBytes, batchLines = bytes, lines }(batchBytes, batchLines)
	batchBytes, batchLines = 16, 3 // many batches of a few lines
	f.Fuzz(func(t *testing.T, input []byte, skip uint8) {
		if int(skip) >= len(input) {
			return // mapStdin takes files of at least a byte from the offset on
		}
		args := []string{"encode", "--tokenizer", alphabet, "--jsonl", "--workers", "2", "--progress", "off"}
		var wantOut, wantErr bytes.Buffer
		wantCode := run(context.Background(), args, bytes.NewReader(input[skip:]), &wantOut, &wantErr)
		path := filepath.Join(dir, "in.jsonl")
		if err := os.WriteFile(path, input, 0o644); err != nil {
			t.Fatal(err)
		}
		file, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer file.Close()
		if _, err := file.Seek(int64(skip), io.SeekStart); err != nil {
			t.Fatal(err)
		}
		var out, errOut bytes.Buffer
		code := run(context.Background(), args, file, &out, &errOut)
		if code != wantCode || out.String() != wantOut.String() || errOut.String() != wantErr.String() {
			t.Fatalf("mapped: exit %d, stdout %q, stderr %q; as a stream: exit %d, stdout %q, stderr %q",
				code, out.String(), errOut.String(), wantCode, wantOut.String(), wantErr.String())
		}
	})
}

// openAt writes input to a file and returns it open for reading at byte skip, closed at
// the test's end: stdin as `< FILE` gives it, at an offset.
func openAt(t *testing.T, input string, skip int) *os.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), "stdin")
	if err := os.WriteFile(path, []byte(input), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if _, err := f.Seek(int64(skip), io.SeekStart); err != nil {
		t.Fatal(err)
	}
	return f
}

// runCutStdin runs the command args with input on stdin as a file that is cut to cut
// bytes once it is mapped (stdinMappedHook), and returns its exit code, stdout and
// stderr. The caller makes sure the file is mapped (mapStdinMin).
func runCutStdin(t *testing.T, input string, cut int, args ...string) (int, string, string) {
	t.Helper()
	f := openAt(t, input, 0)
	defer func() { stdinMappedHook = nil }()
	stdinMappedHook = func(f *os.File) {
		if err := os.Truncate(f.Name(), int64(cut)); err != nil {
			t.Error(err)
		}
	}
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, f, &out, &errOut)
	return code, out.String(), errOut.String()
}
