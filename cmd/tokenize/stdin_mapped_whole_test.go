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

// TestEncodeWholeMappedStdin: `tokenize encode` of a regular file (read through a
// memory map) writes what it writes from a stream of the same bytes, errors included:
// one part and many, a character vocabulary (one part) with a character it lacks, an
// empty input, invalid UTF-8, and stdin at an offset into the file.
func TestEncodeWholeMappedStdin(t *testing.T) {
	defer func(old int64) { mapStdinMin = old }(mapStdinMin)
	mapStdinMin = 1 // map the small files too
	defer func(old int) { wholePartBytes = old }(wholePartBytes)
	wholePartBytes = 64 << 10 // many parts of a small text (TestEncodeWholeInParts: 1 MB ones)
	gpt2 := "gpt2"            // the built-in compiled form: loads in milliseconds, even under -race
	alphabet := alphabetSpec(t)
	_, texts, _ := goldenLines(t, 200)
	golden := strings.Join(texts, "\n")
	golden = strings.ToValidUTF8(golden[:min(len(golden), 96<<10)], "")
	var many strings.Builder
	for many.Len() < 3*wholePartBytes+1000 {
		many.WriteString(golden)
		many.WriteString("\nA")
	}
	for _, tc := range []struct {
		name, spec, input string
		skip              int // stdin starts this many bytes into the file
	}{
		{"one part", gpt2, golden, 0},
		{"many parts", gpt2, many.String(), 0},
		{"invalid UTF-8", gpt2, golden[:1000] + "\xff\xfe" + golden[1000:], 0},
		{"characters", alphabet, strings.Repeat("ab ba\n", 1000), 0},
		{"a character not in the vocabulary", alphabet, strings.Repeat("ab ba\n", 1000) + "Q", 0},
		{"at an offset", gpt2, golden, 1234},
		{"empty from its offset", gpt2, golden[:100], 100},
	} {
		for _, workers := range []string{"1", "3"} {
			t.Run(tc.name+"/workers="+workers, func(t *testing.T) {
				args := []string{"encode", "--tokenizer", tc.spec, "--workers", workers, "--progress", "off"}
				var wantOut, wantErr bytes.Buffer
				wantCode := run(context.Background(), args, strings.NewReader(tc.input[tc.skip:]), &wantOut, &wantErr)

				f := openAt(t, tc.input, tc.skip)
				mapped := tc.skip < len(tc.input)
				if m := mapStdin(f); (m != nil) != mapped {
					t.Fatalf("mapped: %v, want %v", m != nil, mapped)
				} else if m != nil {
					m.unmap()
				}
				var out, errOut bytes.Buffer
				code := run(context.Background(), args, f, &out, &errOut)
				if code != wantCode || out.String() != wantOut.String() || errOut.String() != wantErr.String() {
					t.Fatalf("mapped: exit %d, %d bytes of stdout, stderr %q; as a stream: exit %d, %d bytes, stderr %q",
						code, out.Len(), errOut.String(), wantCode, wantOut.Len(), wantErr.String())
				}
				if off, _ := f.Seek(0, io.SeekCurrent); off != int64(len(tc.input)) {
					t.Errorf("stdin's offset is %d after the run, want %d (its end)", off, len(tc.input))
				}
			})
		}
	}
}

// TestEncodeWholeMappedStdinCut: a mapped stdin that gets shorter while it is read (to
// nothing, or to 256 KiB of 512) is an error, caught (not a crash), with exit 1 and no
// array ended on stdout, under BPE (many parts) and a character vocabulary (one).
func TestEncodeWholeMappedStdinCut(t *testing.T) {
	defer func(old int64) { mapStdinMin = old }(mapStdinMin)
	mapStdinMin = 1
	defer func(old int) { wholePartBytes = old }(wholePartBytes)
	wholePartBytes = 64 << 10
	input := strings.Repeat("ab ba abba\nab", (512<<10)/13)
	for _, spec := range []string{"gpt2", alphabetSpec(t)} {
		for _, cut := range []int{0, 256 << 10} {
			code, out, errOut := runCutStdin(t, input, cut, "encode", "--tokenizer", spec, "--progress", "off")
			const msg = "the file got shorter while it was being read"
			if code != 1 || strings.HasSuffix(out, "]\n") || !strings.Contains(errOut, msg) || strings.Contains(errOut, "goroutine") {
				t.Fatalf("%s, cut at %d: exit %d, stdout ends %q, stderr %q (want %q)",
					filepath.Base(spec), cut, code, out[max(0, len(out)-20):], errOut, msg)
			}
		}
	}
}

// TestEncodeWholeInterrupted: interrupted while it writes, `tokenize encode` fails with
// the context's error, mapped or not, rather than ending a short array.
func TestEncodeWholeInterrupted(t *testing.T) {
	defer func(old int64) { mapStdinMin = old }(mapStdinMin)
	defer func(old int) { wholePartBytes = old }(wholePartBytes)
	wholePartBytes = 64 << 10
	// ~4 MB of ids' text: the output's buffer (outputBufferSize) is written out while
	// parts are still being encoded.
	input := strings.Repeat("ab ba abba\nab", (2<<20)/13)
	path := filepath.Join(t.TempDir(), "in.txt")
	if err := os.WriteFile(path, []byte(input), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, minMap := range []int64{1, 1 << 40} {
		mapStdinMin = minMap
		for range 4 {
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			var got bytes.Buffer
			w := writerFunc(func(p []byte) (int, error) {
				cancel() // interrupted at the first write
				return got.Write(p)
			})
			code := run(ctx, []string{"encode", "--tokenizer", "gpt2", "--progress", "off"}, f, w, io.Discard)
			f.Close()
			cancel()
			if code == 0 || strings.HasSuffix(got.String(), "]\n") {
				t.Fatalf("map from %d bytes: exit %d, stdout ends %q", minMap, code, got.String()[max(0, got.Len()-20):])
			}
		}
	}
}
