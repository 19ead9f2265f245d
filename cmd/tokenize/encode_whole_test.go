package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"gptkit/internal/hugemem"
)

// failAfter is a stdout that takes n bytes, then fails (err) or cancels a run (cancel).
type failAfter struct {
	n      int
	got    bytes.Buffer
	cancel context.CancelFunc
}

var errStdoutGone = errors.New("stdout gone")

func (w *failAfter) Write(p []byte) (int, error) {
	if w.got.Len()+len(p) <= w.n {
		return w.got.Write(p)
	}
	if w.cancel != nil {
		w.cancel()
		return w.got.Write(p)
	}
	k := w.n - w.got.Len()
	w.got.Write(p[:k])
	return k, errStdoutGone
}

// TestEncodeWholeUnmapsAll: `tokenize encode` of one text, finished, failed by a write
// to stdout, or interrupted, on one worker or several, leaves no mapped memory behind
// (a worker's array of ids, the pool's blocks): a process that runs it many times (the
// tests, a server) does not grow. Its output is the ids of the whole, or a prefix of it.
// Where huge-page tables are off (not Linux, GPTKIT_HUGEPAGES=0) nothing is mapped and
// only the output is checked.
func TestEncodeWholeUnmapsAll(t *testing.T) {
	spec, tok := gpt2File(t)
	defer func(old int) { wholePartBytes = old }(wholePartBytes)
	wholePartBytes = 64 << 10
	rng := rand.New(rand.NewPCG(1, 2))
	var sb strings.Builder
	for i := 0; sb.Len() < 1<<20; i++ {
		fmt.Fprintf(&sb, "Line %d: %s\n", i, strings.Repeat("word ", i%13))
		if i%500 == 0 {
			sb.WriteString(strings.Repeat("nocut ", rng.IntN(60_000))) // parts past a worker's array
			sb.WriteByte(0xff)                                         // invalid UTF-8
		}
	}
	text := sb.String()
	want := idLines([][]int{tok.Encode(text)})
	base := hugemem.MappedBytes()
	check := func(what string) {
		t.Helper()
		if got := hugemem.MappedBytes(); got != base {
			t.Fatalf("%s: %d bytes left mapped (%d before)", what, got-base, base)
		}
	}
	for _, workers := range []string{"1", "3"} {
		args := []string{"encode", "--tokenizer", spec, "--workers", workers}
		var out, errOut bytes.Buffer
		if code := run(context.Background(), args, strings.NewReader(text), &out, &errOut); code != 0 || out.String() != want {
			t.Fatalf("%s workers: exit %d, %d bytes out (want %d): %s", workers, code, out.Len(), len(want), errOut.String())
		}
		check(workers + " workers")
		out.Reset()
		if code := run(context.Background(), args, openAt(t, text, 0), &out, &errOut); code != 0 || out.String() != want {
			t.Fatalf("%s workers, from a file: exit %d, %d bytes out (want %d): %s", workers, code, out.Len(), len(want), errOut.String())
		}
		check(workers + " workers, from a file")
		for _, n := range []int{0, 1000, 300 << 10, len(want) - 10} {
			w := &failAfter{n: n}
			errOut.Reset()
			if code := run(context.Background(), args, strings.NewReader(text), w, &errOut); code == 0 || !strings.Contains(errOut.String(), "stdout gone") || !strings.HasPrefix(want, w.got.String()) {
				t.Fatalf("%s workers, stdout failing after %d bytes: exit %d, %d bytes out: %s", workers, n, code, w.got.Len(), errOut.String())
			}
			check(fmt.Sprintf("%s workers, stdout failing after %d bytes", workers, n))
			ctx, cancel := context.WithCancel(context.Background())
			w = &failAfter{n: n, cancel: cancel}
			errOut.Reset()
			// (Interrupted by the last write, the ids are all out: exit 0.)
			if code := run(ctx, args, strings.NewReader(text), w, &errOut); code == 0 && w.got.String() != want || !strings.HasPrefix(want, w.got.String()) {
				t.Fatalf("%s workers, interrupted after %d bytes: exit %d, %d bytes out: %s", workers, n, code, w.got.Len(), errOut.String())
			}
			cancel()
			check(fmt.Sprintf("%s workers, interrupted after %d bytes", workers, n))
		}
	}
}

// TestEncodeWholeWarnsInvalidUTF8: without --jsonl, invalid UTF-8 in stdin is encoded
// as U+FFFD (as --jsonl does), and the command says so in one warning naming the first
// bad byte, piped or mapped, in one part or many; valid text of many-byte characters
// cut into parts gets none. The ids alone cannot tell: it warned only with --jsonl.
func TestEncodeWholeWarnsInvalidUTF8(t *testing.T) {
	spec, tok := gpt2File(t)
	defer func(part int, min int64) { wholePartBytes, mapStdinMin = part, min }(wholePartBytes, mapStdinMin)
	wholePartBytes = 4 << 10
	mapStdinMin = 1
	var sb strings.Builder
	for i := 0; sb.Len() < 64<<10; i++ {
		fmt.Fprintf(&sb, "Grüße %d, 世界 — ünïcödé %s\n", i, strings.Repeat("é", i%7))
	}
	good := sb.String()
	at := 40<<10 + strings.IndexByte(good[40<<10:], '\n') + 1 // a line's start: no character cut
	bad := good[:at] + "\xff" + good[at:]
	for _, tc := range []struct {
		name, text, warn string
	}{
		{"valid", good, ""},
		{"invalid", bad, fmt.Sprintf("tokenize encode: warning: stdin held invalid UTF-8 (the first at byte %d), encoded with U+FFFD in its place", at)},
		{"invalid first byte", "\xfehello", "(the first at byte 0)"},
	} {
		want := idLines([][]int{tok.Encode(tc.text)})
		for _, workers := range []string{"1", "3"} {
			args := []string{"encode", "--tokenizer", spec, "--workers", workers}
			for _, in := range []struct {
				how string
				r   io.Reader
			}{{"piped", strings.NewReader(tc.text)}, {"mapped", openAt(t, tc.text, 0)}} {
				var out, errOut bytes.Buffer
				code := run(context.Background(), args, in.r, &out, &errOut)
				if code != 0 || out.String() != want {
					t.Fatalf("%s, %s workers, %s: exit %d, %d bytes out (want %d): %s", tc.name, workers, in.how, code, out.Len(), len(want), errOut.String())
				}
				switch {
				case tc.warn == "" && errOut.Len() > 0:
					t.Errorf("%s, %s workers, %s: stderr %q, want nothing", tc.name, workers, in.how, errOut.String())
				case tc.warn != "" && (!strings.Contains(errOut.String(), tc.warn) || strings.Count(errOut.String(), "\n") != 1):
					t.Errorf("%s, %s workers, %s: stderr %q, want one line with %q", tc.name, workers, in.how, errOut.String(), tc.warn)
				}
			}
		}
	}
}
