package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestEncodeJSONLBlankLines: `encode --jsonl` skips blank lines (empty, or only spaces,
// tabs and CR: prep.BlankLine, as tokenize run reads JSONL) and writes one array per
// object, in order; a bad line after blank ones is named by its own line number. Read
// as a stream and through a memory map, on one worker and on several, in batches of a
// few lines (blank lines at batch boundaries).
func TestEncodeJSONLBlankLines(t *testing.T) {
	defer func(bytes, lines int, min int64) { batchBytes, batchLines, mapStdinMin = bytes, lines, min }(batchBytes, batchLines, mapStdinMin)
	batchBytes, batchLines = 16, 3
	alphabet := alphabetSpec(t)
	a, b, c := `{"text":"a"}`, `{"text":"b"}`, `{"text":"c"}`
	for _, tc := range []struct {
		name, stdin, stdout, stderr string // stderr: a substring of the error, "" for success
	}{
		{"empty lines", a + "\n\n" + b + "\n\n\n" + c + "\n", "[2]\n[3]\n[4]\n", ""},
		{"spaces, tabs and CR", "\r\n" + a + "\n  \n\t \r\n" + b + "\r\n \t\n", "[2]\n[3]\n", ""},
		{"blank first and last lines", "\n \n" + a + "\n \t", "[2]\n", ""},
		{"blank lines only", "\n \n\r\n\t\n", "", ""},
		{"many blank lines across batches", strings.Repeat("\n", 10) + a + strings.Repeat("\n  ", 7) + "\n" + b + "\n", "[2]\n[3]\n", ""},
		{"bad line after blank lines", a + "\n\n \r\n\n" + `{"text":"b"` + "\n" + c + "\n", "[2]\n", "tokenize encode: stdin line 5: invalid JSON"},
		{"missing field after blank lines", "\n\n" + a + "\n\n" + `{"body":"b"}` + "\n", "[2]\n", `tokenize encode: stdin line 5: field "text" missing`},
		{"form feed is not JSON whitespace", a + "\n\n\f\n" + b + "\n", "[2]\n", "tokenize encode: stdin line 3: a line of whitespace that is not JSON whitespace"},
	} {
		for _, mapped := range []bool{false, true} {
			for _, workers := range []string{"1", "3"} {
				name := tc.name + "/workers=" + workers
				if mapped {
					name += "/mapped"
				}
				t.Run(name, func(t *testing.T) {
					args := []string{"encode", "--tokenizer", alphabet, "--jsonl", "--workers", workers, "--progress", "off"}
					var out, errOut bytes.Buffer
					var code int
					if mapped {
						mapStdinMin = 1
						f := openAt(t, tc.stdin, 0)
						code = run(context.Background(), args, f, &out, &errOut)
					} else {
						code = run(context.Background(), args, strings.NewReader(tc.stdin), &out, &errOut)
					}
					wantCode := 0
					if tc.stderr != "" {
						wantCode = 1
					}
					if code != wantCode || out.String() != tc.stdout {
						t.Errorf("exit %d, stdout %q; want exit %d, stdout %q (stderr %q)", code, out.String(), wantCode, tc.stdout, errOut.String())
					}
					switch {
					case tc.stderr == "" && errOut.Len() != 0:
						t.Errorf("stderr %q, want none", errOut.String())
					case tc.stderr != "" && (!strings.Contains(errOut.String(), tc.stderr) || strings.Count(errOut.String(), "\n") != 1):
						t.Errorf("stderr %q, want one line with %q", errOut.String(), tc.stderr)
					}
				})
			}
		}
	}
}
