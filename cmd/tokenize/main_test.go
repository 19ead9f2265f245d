package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"gptkit/internal/testfiles"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"gptkit/tokenize"
)

// alphabetSpec writes a character vocabulary of "\n", " " and a-z (ids 0, 1, 2-27,
// so "a" is 2 and "b" is 3), quick to load for the tests of line handling.
func alphabetSpec(t testing.TB) string {
	t.Helper()
	data, err := tokenize.NewCharsFromText("\n abcdefghijklmnopqrstuvwxyz", "alphabet").MarshalChars()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "chars.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// runTokenize runs the command line in-process with stdin as input.
func runTokenize(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

// goldenLines returns the first n lines of the GPT-2 golden file, each a JSON object
// with "text" and "ids".
func goldenLines(t *testing.T, n int) (lines []string, texts []string, ids [][]int) {
	t.Helper()
	f, err := os.Open(testfiles.Path(t, "golden/gpt2.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for len(lines) < n && sc.Scan() {
		var doc struct {
			Text string `json:"text"`
			IDs  []int  `json:"ids"`
		}
		if err := json.Unmarshal(sc.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, sc.Text())
		texts = append(texts, doc.Text)
		ids = append(ids, doc.IDs)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(lines) != n {
		t.Fatalf("golden file has %d lines, want %d", len(lines), n)
	}
	return lines, texts, ids
}

// idLines formats ids as encode does: one compact JSON array per line.
func idLines(ids [][]int) string {
	var b strings.Builder
	for _, l := range ids {
		b.WriteByte('[')
		for i, id := range l {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprint(&b, id)
		}
		b.WriteString("]\n")
	}
	return b.String()
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	for _, spec := range []string{testfiles.Path(t, "tokenizers/gpt2"), testfiles.Path(t, "tokenizers/gpt2/tokenizer.json")} {
		t.Run(filepath.Base(spec), func(t *testing.T) {
			code, out, errOut := runTokenize(t, "Hello, world", "encode", "--tokenizer", spec)
			if code != 0 || out != "[15496,11,995]\n" {
				t.Fatalf("encode: exit %d, stdout %q, stderr %q", code, out, errOut)
			}
			code, out, errOut = runTokenize(t, out, "decode", "--tokenizer", spec)
			if code != 0 || out != "\"Hello, world\"\n" {
				t.Fatalf("decode: exit %d, stdout %q, stderr %q", code, out, errOut)
			}
			// No HTML escaping, and the whole input (newlines included) is one text.
			text := "<b>Tom & Jerry</b>\nline two\n"
			code, ids, errOut := runTokenize(t, text, "encode", "--tokenizer", spec)
			if code != 0 || strings.Count(ids, "\n") != 1 {
				t.Fatalf("encode: exit %d, stdout %q, stderr %q", code, ids, errOut)
			}
			code, out, errOut = runTokenize(t, ids, "decode", "--tokenizer", spec)
			if want := `"<b>Tom & Jerry</b>\nline two\n"` + "\n"; code != 0 || out != want {
				t.Fatalf("decode: exit %d, stdout %q, want %q; stderr %q", code, out, want, errOut)
			}
		})
	}
}

func TestEncodeJSONLGolden(t *testing.T) {
	lines, texts, ids := goldenLines(t, 50)
	input := strings.Join(lines, "\n") + "\n"
	want := idLines(ids)
	spec := testfiles.Path(t, "tokenizers/gpt2")
	procs := runtime.GOMAXPROCS(0)
	for _, workers := range []string{"1", "4"} {
		t.Run("workers="+workers, func(t *testing.T) {
			code, out, errOut := runTokenize(t, input, "encode", "--tokenizer", spec, "--jsonl", "--workers", workers)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if out != want {
				t.Fatalf("ids differ from the golden ones")
			}
			if got := runtime.GOMAXPROCS(0); got != procs {
				t.Errorf("GOMAXPROCS is %d after the run, was %d", got, procs)
			}
			// And back: GPT-2 round-trips every golden text.
			code, out, errOut = runTokenize(t, out, "decode", "--tokenizer", spec)
			if code != 0 {
				t.Fatalf("decode: exit %d: %s", code, errOut)
			}
			var got []string
			for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
				var s string
				if err := json.Unmarshal([]byte(l), &s); err != nil {
					t.Fatal(err)
				}
				got = append(got, s)
			}
			if !slices.Equal(got, texts) {
				t.Errorf("decoded texts differ from the golden ones")
			}
		})
	}
}

// gpt2File returns the path of GPT-2's tokenizer.json and the tokenizer it loads to.
func gpt2File(t *testing.T) (string, *tokenize.Tokenizer) {
	t.Helper()
	spec := testfiles.Path(t, "tokenizers/gpt2/tokenizer.json")
	data, err := os.ReadFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenize.LoadHFJSON(data, "gpt2")
	if err != nil {
		t.Fatal(err)
	}
	return spec, tok
}

// TestEncodeWholeInParts: a whole input large enough to be cut into many parts
// (encoded on several workers and written as they finish) gives one array, the ids of
// the whole text, with and without cuts, and from a regular file as from a pipe.
func TestEncodeWholeInParts(t *testing.T) {
	spec, tok := gpt2File(t)
	var sb strings.Builder
	for i := 0; sb.Len() < 5*wholePartBytes; i++ {
		fmt.Fprintf(&sb, "Line %d: it's %s\n", i, strings.Repeat("word ", i%11))
	}
	for _, text := range []string{sb.String(), strings.Repeat("nocut ", wholePartBytes/2), ""} {
		want := idLines([][]int{tok.Encode(text)})
		for _, workers := range []string{"1", "3"} {
			code, out, errOut := runTokenize(t, text, "encode", "--tokenizer", spec, "--workers", workers)
			if code != 0 || out != want {
				t.Fatalf("%d bytes, %s workers: exit %d, %d bytes out (want %d): %s", len(text), workers, code, len(out), len(want), errOut)
			}
		}
		var out, errOut bytes.Buffer
		code := run(context.Background(), []string{"encode", "--tokenizer", spec}, openAt(t, text, 0), &out, &errOut)
		if code != 0 || out.String() != want {
			t.Fatalf("%d bytes from a file: exit %d, %d bytes out (want %d): %s", len(text), code, out.Len(), len(want), errOut.String())
		}
	}
}

// TestEncodeWholeGrowingParts: parts of one text that grow past a worker's array of
// ids (mapped again, larger) and fill several output blocks each, between small ones,
// give the ids of the whole, on one worker and on two, from a pipe and from a file.
func TestEncodeWholeGrowingParts(t *testing.T) {
	spec, tok := gpt2File(t)
	defer func(old int) { wholePartBytes = old }(wholePartBytes)
	wholePartBytes = 64 << 10 // a worker's first array has room for 256 KB parts
	lines := func(n int) string {
		var sb strings.Builder
		for i := 0; sb.Len() < n; i++ {
			fmt.Fprintf(&sb, "Line %d: %s\n", i, strings.Repeat("word ", i%13))
		}
		return sb.String()
	}
	// 1.2 MB without a cut: ~400,000 ids, two blocks of text.
	text := lines(300<<10) + strings.Repeat("nocut ", 200_000) + "\n" + lines(200<<10) + strings.Repeat("x y ", 300_000) + "\n" + lines(100<<10)
	want := idLines([][]int{tok.Encode(text)})
	for _, workers := range []string{"1", "2"} {
		code, out, errOut := runTokenize(t, text, "encode", "--tokenizer", spec, "--workers", workers)
		if code != 0 || out != want {
			t.Fatalf("%s workers: exit %d, %d bytes out (want %d): %s", workers, code, len(out), len(want), errOut)
		}
		var outF, errF bytes.Buffer
		code = run(context.Background(), []string{"encode", "--tokenizer", spec, "--workers", workers}, openAt(t, text, 0), &outF, &errF)
		if code != 0 || outF.String() != want {
			t.Fatalf("%s workers, from a file: exit %d, %d bytes out (want %d): %s", workers, code, outF.Len(), len(want), errF.String())
		}
	}
}

// TestEncodeManyBatches checks the order of ids across many batches and long lines.
func TestEncodeManyBatches(t *testing.T) {
	spec, tok := gpt2File(t)
	var in strings.Builder
	var want [][]int
	add := func(text string) {
		line, _ := json.Marshal(map[string]any{"id": len(want), "body": text})
		in.Write(line)
		in.WriteByte('\n')
		want = append(want, tok.Encode(text))
	}
	for i := range 3 * batchLines {
		add(fmt.Sprintf("line %d: %s", i, strings.Repeat("ab ", i%7)))
		if i == batchLines/2 {
			add(strings.Repeat("A long line, longer than the reader's buffer. ", 1<<21/47)) // 2 MiB
		}
	}
	code, out, errOut := runTokenize(t, in.String(), "encode", "--tokenizer", spec, "--jsonl", "--text-key", "body", "--workers", "3")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if out != idLines(want) {
		t.Fatal("ids differ from one-by-one encoding")
	}
}

func TestEncodeErrors(t *testing.T) {
	alphabet := alphabetSpec(t)
	tests := []struct {
		name    string
		stdin   string
		args    []string
		stdout  string   // what is written before the failure
		stderrs []string // substrings of the one stderr line
	}{
		{"missing field", `{"text":"a"}` + "\n" + `{"text":"b"}` + "\n" + `{"body":"c"}` + "\n", nil,
			"[2]\n[3]\n", []string{`tokenize encode: stdin line 3: field "text" missing (pass --text-key to pick another field)`}},
		{"invalid JSON", `{"text":"a"}` + "\n" + `{"text":"b"` + "\n", nil, "[2]\n", []string{"stdin line 2: invalid JSON"}},
		{"not an object", `["a"]` + "\n", nil, "", []string{"stdin line 1: not a JSON object"}},
		// it said: not a JSON object (it starts with "\ufeff{\"text\":\"a\"}")
		{"byte order mark", "\xef\xbb\xbf" + `{"text":"a"}` + "\n", nil, "", []string{"stdin line 1: not a JSON object: it starts with a UTF-8 byte order mark", `sed -i '1s/^\xEF\xBB\xBF//' FILE`}},
		{"not a string", `{"text":"a"}` + "\n" + `{"text":17}` + "\n", nil, "[2]\n", []string{`stdin line 2: field "text" is 17, not a string`}},
		{"null text", `{"text":null}` + "\n", nil, "", []string{`stdin line 1: field "text" is null, not a string`}},
		{"not JSON whitespace", `{"text":"a"}` + "\n\n\v\n" + `{"text":"b"}` + "\n", nil, "[2]\n", []string{"stdin line 3: a line of whitespace that is not JSON whitespace"}},
		{"other text key", `{"text":"a","body":"b"}` + "\n" + `{"text":"b"}` + "\n", []string{"--text-key", "body"}, "[3]\n",
			[]string{`stdin line 2: field "body" missing`}},
		{"character outside the vocabulary", `{"text":"abc"}` + "\n" + `{"text":"abD"}` + "\n", nil, "[2,3,4]\n",
			[]string{"stdin line 2:", `'D'`}},
		{"character outside the vocabulary, whole input", "abcD", []string{"--jsonl=false"}, "", []string{"stdin:", `'D'`}},
		{"unknown tokenizer", "", []string{"--tokenizer", "gpt5"}, "", []string{`"gpt5"`, "gpt2, r50k_base"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"encode", "--tokenizer", alphabet, "--jsonl"}, tt.args...)
			code, out, errOut := runTokenize(t, tt.stdin, args...)
			if code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			if out != tt.stdout {
				t.Errorf("stdout %q, want %q", out, tt.stdout)
			}
			if strings.Count(errOut, "\n") != 1 {
				t.Errorf("stderr is not one line: %q", errOut)
			}
			for _, want := range tt.stderrs {
				if !strings.Contains(errOut, want) {
					t.Errorf("stderr %q does not contain %q", errOut, want)
				}
			}
		})
	}
}

func TestEncodeLineEndings(t *testing.T) {
	alphabet := alphabetSpec(t)
	tests := []struct{ name, stdin, stdout string }{
		{"final newline ends the input", `{"text":"a"}` + "\n", "[2]\n"},
		{"last line without a newline", `{"text":"a"}` + "\n" + `{"text":"b"}`, "[2]\n[3]\n"},
		{"CRLF", `{"text":"a"}` + "\r\n" + `{"text":"b"}` + "\r\n", "[2]\n[3]\n"},
		{"empty input", "", ""},
		{"empty text", `{"text":""}` + "\n", "[]\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runTokenize(t, tt.stdin, "encode", "--tokenizer", alphabet, "--jsonl")
			if code != 0 || out != tt.stdout {
				t.Errorf("exit %d, stdout %q, want %q; stderr %q", code, out, tt.stdout, errOut)
			}
		})
	}
	// Without --jsonl, empty input is one empty text.
	if code, out, _ := runTokenize(t, "", "encode", "--tokenizer", alphabet); code != 0 || out != "[]\n" {
		t.Errorf("exit %d, stdout %q, want []", code, out)
	}
}

// TestDecodeIDWithoutToken: an id within the vocabulary that no token has (char's
// 256..511) says so and the next step; it said only "id 300 is not a token of char".
func TestDecodeIDWithoutToken(t *testing.T) {
	code, out, errOut := runTokenize(t, "[104,105]\n[104,300]\n", "decode", "--tokenizer", "char")
	if code != 1 || out != "\"hi\"\n" || !strings.Contains(errOut, "stdin line 2: id 300 is not a token of char: no token has that id") ||
		!strings.Contains(errOut, "(0..511)") || !strings.Contains(errOut, "another tokenizer") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

func TestDecodeErrors(t *testing.T) {
	alphabet := alphabetSpec(t)
	tests := []struct {
		name, stdin, stdout string
		stderrs             []string
	}{
		{"not JSON", "[2]\n[3\n", "\"a\"\n", []string{"tokenize decode: stdin line 2: not a JSON array of integer ids"}},
		{"not an array", "[2]\n{}\n", "\"a\"\n", []string{"stdin line 2: not a JSON array"}},
		{"float id", "[1.5]\n", "", []string{"stdin line 1:"}},
		{"id past the vocabulary", "[2]\n[2,28]\n", "\"a\"\n", []string{"stdin line 2: id 28 is outside the vocabulary", "0..27"}},
		{"negative id", "[-1]\n", "", []string{"stdin line 1: id -1"}},
		// Blank lines are skipped, but counted in the line numbers.
		{"after blank lines", "[2]\n\n \t\r\n[3\n", "\"a\"\n", []string{"stdin line 4: not a JSON array"}},
		// json keeps an int it is given null for as it was: the previous line's id.
		{"null id", "[2]\n[null]\n", "\"a\"\n", []string{"stdin line 2:", "null is not an id"}},
		{"null among ids", "[2,3]\n[2,null]\n", "\"ab\"\n", []string{"stdin line 2:", "null is not an id"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runTokenize(t, tt.stdin, "decode", "--tokenizer", alphabet)
			if code != 1 || out != tt.stdout || strings.Count(errOut, "\n") != 1 {
				t.Errorf("exit %d, stdout %q (want %q), stderr %q", code, out, tt.stdout, errOut)
			}
			for _, want := range tt.stderrs {
				if !strings.Contains(errOut, want) {
					t.Errorf("stderr %q does not contain %q", errOut, want)
				}
			}
		})
	}
	if code, out, errOut := runTokenize(t, "[]\n[2,1,3]", "decode", "--tokenizer", alphabet); code != 0 || out != "\"\"\n\"a b\"\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// GPT-2: the id past the end of its vocabulary.
	code, _, errOut := runTokenize(t, "[50256]\n[50257]\n", "decode", "--tokenizer", testfiles.Path(t, "tokenizers/gpt2"))
	if code != 1 || !strings.Contains(errOut, "stdin line 2: id 50257 is outside the vocabulary of gpt2 (ids 0..50256)") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

// TestDecodeBlankLines: a blank line (empty, or spaces, tabs, CR) gets no string, as
// encode --jsonl gives it no array (decode once failed: "empty line"), so that
// encode --jsonl | decode keeps every document, the empty one as "".
func TestDecodeBlankLines(t *testing.T) {
	alphabet := alphabetSpec(t)
	for _, tt := range []struct{ name, stdin, stdout string }{
		{"empty line", "[2]\n\n[3]\n", "\"a\"\n\"b\"\n"},
		{"spaces, tabs, CRLF", "[2]\r\n \t\r\n\r\n[3]\r\n", "\"a\"\n\"b\"\n"},
		{"blank last line without a newline", "[2]\n  ", "\"a\"\n"},
		{"only blank lines", "\n\n", ""},
		{"empty document", "[]\n\n[]\n", "\"\"\n\"\"\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runTokenize(t, tt.stdin, "decode", "--tokenizer", alphabet)
			if code != 0 || out != tt.stdout {
				t.Errorf("exit %d, stdout %q, want %q; stderr %q", code, out, tt.stdout, errOut)
			}
		})
	}
	// encode --jsonl | decode: every document, in order, the empty one too.
	code, ids, errOut := runTokenize(t, `{"text":"a"}`+"\n\n"+`{"text":""}`+"\n \n"+`{"text":"b a"}`+"\n", "encode", "--tokenizer", alphabet, "--jsonl")
	if code != 0 {
		t.Fatalf("encode: exit %d, stderr %q", code, errOut)
	}
	if code, out, errOut := runTokenize(t, ids, "decode", "--tokenizer", alphabet); code != 0 || out != "\"a\"\n\"\"\n\"b a\"\n" {
		t.Errorf("encode | decode: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

func TestUsage(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		code    int
		stderrs []string
	}{
		{"no command", nil, 2, []string{"encode", "decode", "train"}},
		{"unknown command", []string{"frobnicate"}, 2, []string{`unknown command "frobnicate"`, "encode", "decode", "train"}},
		{"help", []string{"-h"}, 0, []string{"encode", "decode", "train"}},
		{"encode -h", []string{"encode", "-h"}, 0, []string{"usage: tokenize encode", "--tokenizer SPEC", "--jsonl", "(default 2)",
			"--text-key FIELD", `(default "text")`, "--workers N", "--tokenizer-url URL", "--tokenizer-sha256 HEX", "--tokenizer-cache-dir DIR",
			// how <|endoftext|> in the text is read (HF and tiktoken's defaults differ) was said nowhere but docs/tokenizer.md
			"Special tokens written in the text", "encode_ordinary"}},
		// run -h named .jsonl, .jsonl.zst, .jsonl.gz and .txt only
		{"run -h", []string{"run", "-h"}, 0, []string{"usage: tokenize run", ".jsonl.gz, .json.gz", ".txt.zst, .txt.gz", ".zip", ".parquet",
			"Special tokens written in the text", "an end-of-document id inside it"}},
		{"decode -h", []string{"decode", "--help"}, 0, []string{"usage: tokenize decode", "--tokenizer SPEC", "--tokenizer-url", "--tokenizer-cache-dir"}},
		{"unknown flag", []string{"encode", "--tokenizer", "gpt2", "--frob"}, 2, []string{"-frob", "tokenize encode -h"}},
		{"no tokenizer", []string{"decode"}, 2, []string{"--tokenizer is required"}},
		{"no workers", []string{"encode", "--tokenizer", "char", "--workers", "0"}, 2, []string{"--workers"}},
		{"stray argument", []string{"encode", "--tokenizer", "char", "file.txt"}, 2, []string{`unexpected argument "file.txt": tokenize encode reads its input on stdin, not from files named as arguments: give it as < file.txt`}},
		{"decode file argument", []string{"decode", "--tokenizer", "char", "ids.jsonl"}, 2, []string{`tokenize decode reads its input on stdin`, "< ids.jsonl"}},
		// a switch given a separate value keeps its own hint
		{"switch value", []string{"encode", "--tokenizer", "char", "--jsonl", "false"}, 2, []string{`--jsonl=false`}},
		// --cache-dir means the S3 shard cache everywhere; the tokenizer cache is --tokenizer-cache-dir.
		{"--cache-dir", []string{"encode", "--tokenizer", "gpt2", "--cache-dir", "x"}, 2, []string{"-cache-dir", "tokenize encode -h"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runTokenize(t, "", tt.args...)
			if code != tt.code || out != "" {
				t.Errorf("exit %d (want %d), stdout %q", code, tt.code, out)
			}
			for _, want := range tt.stderrs {
				if !strings.Contains(errOut, want) {
					t.Errorf("stderr %q does not contain %q", errOut, want)
				}
			}
		})
	}
}

func TestInterruptWhileWaitingForInput(t *testing.T) {
	alphabet := alphabetSpec(t)
	for _, args := range [][]string{
		{"encode", "--tokenizer", alphabet, "--jsonl"},
		{"encode", "--tokenizer", alphabet},
		{"decode", "--tokenizer", alphabet},
	} {
		t.Run(strings.Join(append(args[:1:1], args[3:]...), " "), func(t *testing.T) {
			stdin, w := io.Pipe() // never written: reads block
			defer w.Close()
			ctx, cancel := context.WithCancel(context.Background())
			var out, errOut bytes.Buffer
			code := make(chan int, 1)
			go func() { code <- run(ctx, args, stdin, &out, &errOut) }()
			time.Sleep(50 * time.Millisecond)
			cancel()
			select {
			case c := <-code:
				if c != 1 || !strings.Contains(errOut.String(), "interrupted") {
					t.Errorf("exit %d, stderr %q", c, errOut.String())
				}
			case <-time.After(5 * time.Second):
				t.Fatal("run did not return after the context was canceled")
			}
		})
	}
}

func TestTrainIsDispatched(t *testing.T) {
	_, _, errOut := runTokenize(t, "", "train", "-h")
	if strings.Contains(errOut, "unknown command") {
		t.Errorf("train is not dispatched: %q", errOut)
	}
}

func TestEncodeDownloadsANamedTokenizer(t *testing.T) {
	files := map[string]string{
		"/mirror/gpt2/vocab.json": testfiles.Path(t, "tokenizers/gpt2/vocab.json"),
		"/mirror/gpt2/merges.txt": testfiles.Path(t, "tokenizers/gpt2/merges.txt"),
	}
	var mu sync.Mutex
	var requests []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		requests = append(requests, r.URL.Path)
		mu.Unlock()
		path, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		data, err := os.ReadFile(path)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		http.ServeContent(w, r, filepath.Base(path), time.Time{}, bytes.NewReader(data))
	}))
	defer srv.Close()
	cache := t.TempDir()
	args := []string{"encode", "--tokenizer", "gpt2", "--tokenizer-url", srv.URL + "/mirror/gpt2", "--tokenizer-cache-dir", cache}
	for i := range 2 {
		code, out, errOut := runTokenize(t, "Hello, world", args...)
		if code != 0 || out != "[15496,11,995]\n" {
			t.Fatalf("run %d: exit %d, stdout %q, stderr %q", i, code, out, errOut)
		}
	}
	mu.Lock()
	if want := []string{"/mirror/gpt2/vocab.json", "/mirror/gpt2/merges.txt"}; !slices.Equal(requests, want) {
		t.Errorf("requests %v, want %v (once)", requests, want)
	}
	mu.Unlock()
	if _, err := os.Stat(filepath.Join(cache, "gpt2", "merges.txt")); err != nil {
		t.Error(err)
	}

	// A failed download is one line naming the URL.
	code, _, errOut := runTokenize(t, "x", "encode", "--tokenizer", "neox-20b", "--tokenizer-url", srv.URL+"/nope.json", "--tokenizer-cache-dir", cache)
	if code != 1 || !strings.Contains(errOut, srv.URL+"/nope.json") || !strings.Contains(errOut, "404") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	if lines := strings.Split(strings.TrimSpace(errOut), "\n"); !strings.HasPrefix(lines[len(lines)-1], "tokenize encode: ") {
		t.Errorf("the last stderr line is not the error: %q", errOut)
	}
}

// TestIDText: the table-driven formatter writes what strconv would, for ids in the
// table, outside it (larger, negative) and for arrays of every size.
func TestIDText(t *testing.T) {
	long := make([]int, 100_000)
	for i := range long {
		long[i] = i * 7
	}
	every := make([]int, 1_100_000)
	for i := range every {
		every[i] = i
	}
	for _, vocab := range []int{50257, 1 << 20} {
		ft := newIDText(vocab)
		for _, ids := range [][]int{nil, {0}, {0, 7, 50256}, {999, 1000, 1001, 9999, 10000, 10001, 99999, 100000, 100001, 999999, 1000000},
			{1<<20 - 1, 1 << 20, -3, 99999999, 5}, long, every} {
			if got, want := string(ft.appendArray([]byte("x"), ids)), "x"+idLines([][]int{ids}); got != want {
				t.Errorf("vocabulary %d: appendArray(%d ids) = %.60q..., want %.60q...", vocab, len(ids), got, want)
			}
		}
	}
}

// TestNamedTokenizerOffline: `tokenize encode --tokenizer gpt2` needs no network (every
// proxy leads nowhere) and leaves the tokenizer cache empty: GPT-2 is built in.
func TestNamedTokenizerOffline(t *testing.T) {
	for _, v := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"} {
		t.Setenv(v, "http://127.0.0.1:1")
	}
	t.Setenv("NO_PROXY", "")
	t.Setenv("no_proxy", "")
	cache := t.TempDir()
	for name, want := range map[string]string{"gpt2": "[15496,11,995]\n", "neox-20b": "[12092,13,1533]\n"} {
		code, out, errOut := runTokenize(t, "Hello, world", "encode", "--tokenizer", name, "--tokenizer-cache-dir", cache)
		if code != 0 || out != want {
			t.Errorf("%s: exit %d, stdout %q (want %q), stderr %q", name, code, out, want, errOut)
		}
	}
	if entries, _ := os.ReadDir(cache); len(entries) != 0 {
		t.Errorf("the tokenizer cache got %v", entries)
	}
}

// TestEncodeJSONLReadError: a read of stdin that fails mid-line writes the lines before
// (across batches), drops the cut line and names the last line read.
func TestEncodeJSONLReadError(t *testing.T) {
	alphabet := alphabetSpec(t)
	var in strings.Builder
	var want strings.Builder
	for range 3 * batchLines {
		in.WriteString(`{"text":"ab"}` + "\n")
		want.WriteString("[2,3]\n")
	}
	in.WriteString(`{"text":"cut her`)
	var out, errOut bytes.Buffer
	stdin := io.MultiReader(strings.NewReader(in.String()), iotest.ErrReader(errors.New("disk on fire")))
	code := run(context.Background(), []string{"encode", "--tokenizer", alphabet, "--jsonl", "--progress", "off"}, stdin, &out, &errOut)
	if code != 1 || out.String() != want.String() {
		t.Fatalf("exit %d, %d bytes of stdout (want %d), stderr %q", code, out.Len(), want.Len(), errOut.String())
	}
	if msg := fmt.Sprintf("read stdin after line %d: disk on fire", 3*batchLines); !strings.Contains(errOut.String(), msg) {
		t.Errorf("stderr %q, want it to say %q", errOut.String(), msg)
	}
}

// TestEncodeJSONLInvalidUTF8: lines whose text holds invalid UTF-8 are encoded with
// U+FFFD in its place (as a run does) and counted in a warning naming the first, so the
// replacement is not silent; a valid input gets no warning.
func TestEncodeJSONLInvalidUTF8(t *testing.T) {
	in := "{\"text\":\"ok\"}\n{\"text\":\"a\xffb\"}\n{\"text\":\"c\"}\n{\"text\":[\"d\",\"\xfe\"]}\n"
	code, stdout, stderr := runTokenize(t, in, "encode", "--tokenizer", "gpt2", "--jsonl", "--progress", "off")
	if code != 0 || strings.Count(stdout, "\n") != 4 {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if want := "2 lines held invalid UTF-8 in the text (or a lone \\uD800-\\uDFFF escape), encoded with U+FFFD in its place"; !strings.Contains(stderr, want) || !strings.Contains(stderr, "the first: line 2") {
		t.Errorf("stderr %q, want it to say %q and the first line", stderr, want)
	}
	ids := strings.Split(stdout, "\n")[1]
	if _, want, _ := runTokenize(t, "a\uFFFDb", "encode", "--tokenizer", "gpt2", "--progress", "off"); ids != strings.TrimSpace(want) {
		t.Errorf("line 2's ids %s, want those of a\\uFFFDb: %s", ids, want)
	}
	if code, _, stderr := runTokenize(t, `{"text":"fine é"}`+"\n", "encode", "--tokenizer", "gpt2", "--jsonl", "--progress", "off"); code != 0 || stderr != "" {
		t.Errorf("valid input: exit %d, stderr %q", code, stderr)
	}
}

// A \u escape of a lone UTF-16 surrogate ("\ud800") is encoded as U+FFFD, as
// encoding/json decodes it, and counted with the lines of invalid UTF-8: Python's json
// keeps the surrogate, which HF tokenizers refuse (the text cannot be UTF-8), so the
// ids are not theirs. A surrogate pair is its character, with no warning.
func TestEncodeJSONLLoneSurrogate(t *testing.T) {
	in := `{"text":"\ud83d\ude00"}` + "\n" + `{"text":"a\ud800b"}` + "\n" + `{"text":["c","\udc00"]}` + "\n"
	code, stdout, stderr := runTokenize(t, in, "encode", "--tokenizer", "gpt2", "--jsonl", "--progress", "off")
	if code != 0 || strings.Count(stdout, "\n") != 3 {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if want := "2 lines held invalid UTF-8 in the text"; !strings.Contains(stderr, want) || !strings.Contains(stderr, "the first: line 2") {
		t.Errorf("stderr %q, want it to say %q and the first line", stderr, want)
	}
	ids := strings.Split(stdout, "\n")[1]
	if _, want, _ := runTokenize(t, "a\uFFFDb", "encode", "--tokenizer", "gpt2", "--progress", "off"); ids != strings.TrimSpace(want) {
		t.Errorf("line 2's ids %s, want those of a\\uFFFDb: %s", ids, want)
	}
	if code, _, stderr := runTokenize(t, `{"text":"\ud83d\ude00 \u00e9"}`+"\n", "encode", "--tokenizer", "gpt2", "--jsonl", "--progress", "off"); code != 0 || stderr != "" {
		t.Errorf("a surrogate pair: exit %d, stderr %q", code, stderr)
	}
}
