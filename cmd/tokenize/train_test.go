package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"gptkit/internal/durable"
	"gptkit/tokenize"
)

// trainDocs is a synthetic corpus: n documents of a few lines of made-up words.
func trainDocs(n int) []string {
	syllables := []string{"the", "qu", "ick", "br", "own", "fo", "x", "ju", "mps", "ov", "er", "la", "zy", "do", "g",
		"hé", "llo", "wö", "rld", "it's", "42", "3.", "(", ")", "—", "an", "ti", "con", "st", "ra"}
	rng := rand.New(rand.NewPCG(7, 7))
	docs := make([]string, n)
	for i := range docs {
		var b strings.Builder
		for k := 0; k < 40; k++ {
			for range 1 + rng.IntN(4) {
				b.WriteString(syllables[rng.IntN(len(syllables))])
			}
			switch k % 9 {
			case 8:
				b.WriteString(".\n")
			case 4:
				b.WriteString(",  ")
			default:
				b.WriteByte(' ')
			}
		}
		docs[i] = b.String()
	}
	return docs
}

// trainLib trains with the library directly, for comparison with the command.
func trainLib(t *testing.T, texts []string, opt tokenize.TrainOptions) []byte {
	t.Helper()
	m, err := tokenize.Train(context.Background(), tokenize.TrainTexts(texts), opt)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := m.WriteHFJSON(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func writeTrainFile(t *testing.T, path string, data []byte) string {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func readTrainOut(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestTrainPlainText(t *testing.T) {
	dir := t.TempDir()
	// Over 2 MiB, so that the file is read in several chunks.
	text := strings.Join(trainDocs(10000), "\n")
	if len(text) < 2*trainChunkBytes {
		t.Fatalf("corpus is only %d bytes", len(text))
	}
	in := writeTrainFile(t, filepath.Join(dir, "corpus.txt"), []byte(text))
	out := filepath.Join(dir, "tokenizer.json")
	var synced []string
	defer func(old func(string) error) { durable.DirSync = old }(durable.DirSync)
	durable.DirSync = func(d string) error { synced = append(synced, d); return nil }
	code, stdout, stderr := runTokenize(t, "", "train", "--input", in, "--vocab-size", "600", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !slices.Contains(synced, dir) {
		t.Errorf("the directory of --out was not synced after the rename (synced %q)", synced)
	}
	if stdout != "" {
		t.Errorf("stdout %q, want nothing", stdout)
	}
	for _, want := range []string{"msg=training", "msg=reading", "msg=\"wrote tokenizer\"", "vocab_size=600"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	got := readTrainOut(t, out)
	if want := trainLib(t, []string{text}, tokenize.TrainOptions{VocabSize: 600, Special: []string{"<|endoftext|>"}}); !bytes.Equal(got, want) {
		t.Error("training on the file in chunks differs from training on the whole text")
	}
	tok, err := tokenize.LoadHFJSON(got, "trained")
	if err != nil {
		t.Fatal(err)
	}
	if tok.VocabSize() != 600 || tok.EOD() != 0 {
		t.Errorf("vocab size %d, EOD %d", tok.VocabSize(), tok.EOD())
	}
	if s := "the lazy fox, it's 42"; tok.Decode(tok.Encode(s)) != s {
		t.Errorf("round trip of %q fails", s)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		t.Errorf("directory holds %d files, want corpus.txt and tokenizer.json (no temporary file left)", len(entries))
	}
	if fi, err := os.Stat(out); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("output mode: %v %v", fi.Mode(), err)
	}
}

func TestTrainJSONLAndGzip(t *testing.T) {
	dir := t.TempDir()
	docs := trainDocs(300)
	var jsonl bytes.Buffer
	for i, d := range docs {
		fmt.Fprintf(&jsonl, `{"id": %d, "body": %q}`+"\n", i, d)
		if i == 10 {
			jsonl.WriteString("\n") // blank lines are skipped
		}
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(strings.Join(docs[:100], "")))
	zw.Close()
	a := writeTrainFile(t, filepath.Join(dir, "a.jsonl"), jsonl.Bytes())
	b := writeTrainFile(t, filepath.Join(dir, "b.txt.gz"), gz.Bytes())
	c := writeTrainFile(t, filepath.Join(dir, "c.data"), jsonl.Bytes())
	out := filepath.Join(dir, "tok.json")
	args := []string{"train", "--input", a + "," + b, "--input", c, "--vocab-size", "400", "--out", out,
		"--text-key", "body", "--special", "<|endoftext|>", "--special", "<pad>", "--min-frequency", "3", "--workers", "1"}
	// c.data is read as text: its JSON lines are the document.
	if code, _, stderr := runTokenize(t, "", args...); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	texts := append(append(append([]string(nil), docs...), strings.Join(docs[:100], "")), jsonl.String())
	want := trainLib(t, texts, tokenize.TrainOptions{VocabSize: 400, Special: []string{"<|endoftext|>", "<pad>"}, MinFrequency: 3})
	if got := readTrainOut(t, out); !bytes.Equal(got, want) {
		t.Error("command and library disagree")
	}

	// --jsonl reads c.data as JSONL too; --special '' leaves no specials.
	args = []string{"train", "--input", c, "--jsonl", "--vocab-size", "300", "--out", out, "--text-key", "body", "--special", ""}
	if code, _, stderr := runTokenize(t, "", args...); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var f struct {
		AddedTokens []any `json:"added_tokens"`
	}
	if err := json.Unmarshal(readTrainOut(t, out), &f); err != nil || len(f.AddedTokens) != 0 {
		t.Errorf("added tokens %v (%v), want none", f.AddedTokens, err)
	}
	if got, want := readTrainOut(t, out), trainLib(t, docs, tokenize.TrainOptions{VocabSize: 300}); !bytes.Equal(got, want) {
		t.Error("--jsonl: command and library disagree")
	}
}

func TestTrainUsageAndFailures(t *testing.T) {
	dir := t.TempDir()
	text := writeTrainFile(t, filepath.Join(dir, "t.txt"), []byte("some text\n"))
	bad := writeTrainFile(t, filepath.Join(dir, "bad.jsonl"), []byte("{\"text\": \"ok\"}\n{\"text\": \"ok\"}\n{\"text\": 3}\n"))
	// A line of a form feed is not blank (JSON whitespace is space, tab, CR and LF).
	formFeed := writeTrainFile(t, filepath.Join(dir, "ff.jsonl"), []byte("{\"text\": \"ok\"}\n\f\n \t\r\n{\"text\": \"ok\"}\n"))
	zipFile := writeTrainFile(t, filepath.Join(dir, "docs.zip"), []byte("PK\x03\x04 some member bytes"))
	out := filepath.Join(dir, "tok.json")
	for _, tc := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"help", []string{"-h"}, 0, []string{"--input", "--vocab-size", "--out", "--special", `(default "<|endoftext|>")`, "--min-frequency", "(default 2)", "--workers", "--jsonl", "--text-key", `(default "text")`}},
		{"no input", []string{"--vocab-size", "300", "--out", out}, 2, []string{"--input is required"}},
		{"no vocab size", []string{"--input", text, "--out", out}, 2, []string{"--vocab-size is required"}},
		{"no out", []string{"--input", text, "--vocab-size", "300"}, 2, []string{"--out is required"}},
		{"small vocab", []string{"--input", text, "--vocab-size", "256", "--out", out}, 2, []string{"below 257"}},
		{"bad special", []string{"--input", text, "--vocab-size", "300", "--out", out, "--special", "<s> x"}, 2, []string{"printable ASCII"}},
		{"bad flag", []string{"--input", text, "--vocab-size", "x", "--out", out}, 2, []string{"vocab-size"}},
		{"stray argument", []string{"--input", text, "--vocab-size", "300", "--out", out, "extra"}, 2, []string{"unexpected argument"}},
		{"negative min frequency", []string{"--input", text, "--vocab-size", "300", "--out", out, "--min-frequency", "-1"}, 2, []string{"--min-frequency"}},
		{"missing file", []string{"--input", filepath.Join(dir, "nope.txt"), "--vocab-size", "300", "--out", out}, 1, []string{"--input " + filepath.Join(dir, "nope.txt") + ": no such file or directory"}},
		{"zstd", []string{"--input", filepath.Join(dir, "x.jsonl.zst"), "--vocab-size", "300", "--out", out}, 1, []string{"x.jsonl.zst", "not supported"}},
		{"directory input", []string{"--input", dir, "--vocab-size", "300", "--out", out}, 1, []string{"is a directory"}},
		// tokenize run reads these; here they would have been trained on as raw bytes.
		{"zip", []string{"--input", zipFile, "--vocab-size", "300", "--out", out}, 1, []string{"docs.zip", "does not read .zip"}},
		{"parquet", []string{"--input", filepath.Join(dir, "docs.parquet"), "--vocab-size", "300", "--out", out}, 1, []string{"docs.parquet", "does not read .parquet"}},
		{"bad jsonl", []string{"--input", bad, "--vocab-size", "300", "--out", out}, 1, []string{"bad.jsonl: line 3:", `field "text"`}},
		{"form feed line", []string{"--input", formFeed, "--vocab-size", "300", "--out", out}, 1, []string{"ff.jsonl: line 2:", "not JSON whitespace"}},
		{"out in missing dir", []string{"--input", text, "--vocab-size", "300", "--out", filepath.Join(dir, "no", "tok.json")}, 1, []string{"cannot create it in"}},
		{"out is a directory", []string{"--input", text, "--vocab-size", "300", "--out", dir}, 1, []string{"is a directory"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runTokenize(t, "", append([]string{"train"}, tc.args...)...)
			if code != tc.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tc.code, stderr)
			}
			if stdout != "" {
				t.Errorf("stdout %q", stdout)
			}
			for _, want := range tc.want {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
			if tc.code == 1 {
				lines := strings.Split(strings.TrimSpace(stderr), "\n")
				if last := lines[len(lines)-1]; !strings.HasPrefix(last, "tokenize train: ") {
					t.Errorf("last stderr line %q is not the error", last)
				}
			}
		})
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a failed run left an output file")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 4 {
		t.Errorf("directory holds %d entries, want the 4 inputs (no temporary files)", len(entries))
	}
}

func TestTrainCanceled(t *testing.T) {
	dir := t.TempDir()
	in := writeTrainFile(t, filepath.Join(dir, "t.txt"), []byte(strings.Join(trainDocs(100), "\n")))
	out := filepath.Join(dir, "tok.json")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"train", "--input", in, "--vocab-size", "300", "--out", out}, strings.NewReader(""), &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "tokenize train: interrupted") {
		t.Errorf("exit %d, stderr %s", code, stderr.String())
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a canceled run wrote its output")
	}
}

// TestTrainOutNotRegular: train refuses an --out that is a symbolic link (to a file, to a
// directory, or dangling: not followed, and not replaced by a file), a named pipe, a
// socket or a device file, before training, naming the path and what it is; it leaves
// it as it was and writes nothing beside it. A regular file is replaced, as before.
func TestTrainOutNotRegular(t *testing.T) {
	dir := t.TempDir()
	in := writeTrainFile(t, filepath.Join(t.TempDir(), "t.txt"), []byte(strings.Join(trainDocs(20), "\n")))
	target := writeTrainFile(t, filepath.Join(dir, "target.json"), []byte("old"))
	mk := map[string]func(path string) error{
		"symlink to a file":      func(p string) error { return os.Symlink(target, p) },
		"symlink to a directory": func(p string) error { return os.Symlink(dir, p) },
		"dangling symlink":       func(p string) error { return os.Symlink(filepath.Join(dir, "nowhere.json"), p) },
		"named pipe":             func(p string) error { return syscall.Mkfifo(p, 0o644) },
		"socket": func(p string) error {
			l, err := net.Listen("unix", p)
			if err == nil {
				t.Cleanup(func() { l.Close() })
			}
			return err
		},
		// A character device with /dev/null's numbers, 1 and 3 (root only).
		"device": func(p string) error { return syscall.Mknod(p, syscall.S_IFCHR|0o644, 1<<8|3) },
	}
	want := map[string]string{
		"symlink to a file":      "is a symbolic link (to " + target + "), which train does not follow",
		"symlink to a directory": "is a symbolic link (to " + dir + ")",
		"dangling symlink":       "is a symbolic link",
		"named pipe":             "is a named pipe (FIFO)",
		"socket":                 "is a socket",
		"device":                 "is a device file",
	}
	for name, mkOut := range mk {
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(dir, strings.ReplaceAll(name, " ", "_"))
			if err := mkOut(out); err != nil {
				if name == "device" {
					t.Skipf("cannot make a device file: %v", err)
				}
				t.Fatal(err)
			}
			before, err := os.Lstat(out)
			if err != nil {
				t.Fatal(err)
			}
			code, stdout, stderr := runTokenize(t, "", "train", "--input", in, "--vocab-size", "300", "--out", out, "--workers", "1")
			if code != 1 || stdout != "" {
				t.Fatalf("exit %d, stdout %q, want exit 1; stderr:\n%s", code, stdout, stderr)
			}
			if got := strings.TrimSpace(stderr); strings.Count(got, "\n") != 0 ||
				!strings.HasPrefix(got, "tokenize train: --out "+out+" "+want[name]) || !strings.Contains(got, "want a regular file") {
				t.Errorf("stderr %q, want one line: tokenize train: --out %s %s ...", got, out, want[name])
			}
			after, err := os.Lstat(out)
			if err != nil || after.Mode() != before.Mode() || !os.SameFile(before, after) {
				t.Errorf("--out was replaced: %v, %v (was %v)", after.Mode(), err, before.Mode())
			}
		})
	}
	if data := readTrainOut(t, target); string(data) != "old" {
		t.Errorf("the symbolic link's target was written: %.20q", data)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file %s left", e.Name())
		}
	}
	// A regular file is replaced, as it always was.
	code, _, stderr := runTokenize(t, "", "train", "--input", in, "--vocab-size", "300", "--out", target, "--workers", "1")
	if data := readTrainOut(t, target); code != 0 || !bytes.HasPrefix(data, []byte("{")) {
		t.Errorf("regular --out: exit %d, file %.20q; stderr:\n%s", code, data, stderr)
	}
}

// TestTrainJSONGzIsJSONL: a .json.gz file (C4's name for gzipped JSONL) is JSONL, as
// `tokenize run` and `prep custom` read it, not a text whose JSON syntax is learned.
func TestTrainJSONGzIsJSONL(t *testing.T) {
	dir := t.TempDir()
	docs := trainDocs(200)
	var jsonl bytes.Buffer
	for _, d := range docs {
		fmt.Fprintf(&jsonl, `{"text": %q}`+"\n", d)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(jsonl.Bytes())
	zw.Close()
	in := writeTrainFile(t, filepath.Join(dir, "c4-train.00000-of-01024.json.gz"), gz.Bytes())
	out := filepath.Join(dir, "tok.json")
	if code, _, stderr := runTokenize(t, "", "train", "--input", in, "--vocab-size", "300", "--out", out, "--special", ""); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if got, want := readTrainOut(t, out), trainLib(t, docs, tokenize.TrainOptions{VocabSize: 300}); !bytes.Equal(got, want) {
		t.Error("a .json.gz file was not read as JSONL: command and library disagree")
	}
}
