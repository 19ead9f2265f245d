package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"gptkit/internal/cli"
	"gptkit/internal/miniotest"
	"gptkit/shards"
	"gptkit/storage"
)

// TestCustom: `prep custom` tokenizes local files and an http:// URL (downloaded first,
// into DIR/NAME/downloads/), in the order given, as one dataset; --input takes a
// comma-separated list, several words after it, or several flags.
func TestCustom(t *testing.T) {
	t.Parallel()
	tok := gpt2(t)
	in := t.TempDir()
	recsA := genPile(t, 300, 9)
	a := writeFile(t, in, "a.jsonl", jsonl(recsA))
	bText := "A plain text document: the whole file is one.\n\nÜnïcödé and a second paragraph.\n"
	b := writeFile(t, in, "b.txt", []byte(bText))
	recsC := genPile(t, 200, 10)
	m := newMirror(t)
	m.put("corpora/c.jsonl.zst", zst(t, jsonl(recsC)))
	c := m.URL + "/corpora/c.jsonl.zst"
	want := encodeAll(tok, append(append(texts(recsA, ""), bText), texts(recsC, "")...), tok.EOD())

	for _, tt := range []struct {
		name   string
		inputs []string
	}{
		{"comma-separated", []string{"--input", a + "," + b + "," + c}},
		{"words after the flag", []string{"--input", a, b, c}},
		{"repeated flag", []string{"--input", a, "--input", b + "," + c}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			data := t.TempDir()
			args := append([]string{"custom", "--name", "mine", "-d", data, "--tokenizer", gpt2Dir(t), "--progress", "off"}, tt.inputs...)
			out, _ := mustPrep(t, args...)
			ds := filepath.Join(data, "mine")
			hasAll(t, "stdout", out, ds+"/manifest.json: ")
			compareDocs(t, "prep custom", datasetDocs(t, ds), want)
			man := readManifest(t, ds)
			if len(man.Shards) != 1 || man.Shards[0].Prefix != "mine_text_document" {
				t.Errorf("manifest shards %+v, want one, mine_text_document", man.Shards)
			}
			if _, err := os.Stat(filepath.Join(ds, "downloads")); !os.IsNotExist(err) {
				t.Errorf("downloads left behind: %v", err)
			}
		})
	}
	if n := len(m.requestsFor("corpora/c.jsonl.zst")); n != 3 {
		t.Errorf("the URL input was requested %d times in 3 runs", n)
	}

	t.Run("missing local input", func(t *testing.T) {
		data := t.TempDir()
		code, _, errOut := runPrep(t, "custom", "--name", "mine", "-d", data, "--tokenizer", gpt2Dir(t), "--input", filepath.Join(in, "nope.jsonl"))
		if code != 1 {
			t.Fatalf("exit %d, want 1; stderr:\n%s", code, errOut)
		}
		hasAll(t, "the error line", lastLine(errOut), "prep mine: ", "nope.jsonl")
		noManifest(t, filepath.Join(data, "mine"))
	})
}

// TestCustomS3: an s3:// input is copied from the bucket (MinIO here) and tokenized, and
// --dest s3://... writes the dataset to the bucket.
func TestCustomS3(t *testing.T) {
	if testing.Short() {
		t.Skip("starts MinIO; skipped with -short")
	}
	srv := miniotest.Start(t)
	srv.Setenv(t)
	bucket := srv.NewBucket(t)
	tok := gpt2(t)
	recs := genPile(t, 500, 11)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := srv.Client().PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("in/x.jsonl"), Body: bytes.NewReader(jsonl(recs))}); err != nil {
		t.Fatal(err)
	}
	want := encodeAll(tok, texts(recs, ""), tok.EOD())

	t.Run("local output", func(t *testing.T) {
		data := t.TempDir()
		mustPrep(t, "custom", "--input", "s3://"+bucket+"/in/x.jsonl", "--name", "mine", "-d", data, "--tokenizer", gpt2Dir(t),
			"--s3-endpoint", srv.Endpoint, "--progress", "off")
		compareDocs(t, "s3 input", datasetDocs(t, filepath.Join(data, "mine")), want)
	})
	t.Run("--dest s3", func(t *testing.T) {
		data := t.TempDir()
		out, _ := mustPrep(t, "custom", "--input", "s3://"+bucket+"/in/x.jsonl", "--name", "mine", "-d", data, "--tokenizer", gpt2Dir(t),
			"--dest", "s3://"+bucket+"/out", "--s3-endpoint", srv.Endpoint, "--progress", "off")
		hasAll(t, "stdout", out, "s3://"+bucket+"/out/mine/manifest.json: ")
		st, err := storage.Open(ctx, "s3://"+bucket+"/out/mine", storage.Options{S3Endpoint: srv.Endpoint})
		if err != nil {
			t.Fatal(err)
		}
		d, err := shards.OpenDataset(ctx, st, "", t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		got := make([][]int, d.Len())
		for i := range got {
			got[i] = d.Tokens(int64(i))
		}
		compareDocs(t, "s3 input, s3 dataset", got, want)
		if _, err := os.Stat(filepath.Join(data, "mine", shards.ManifestName)); !os.IsNotExist(err) {
			t.Errorf("with --dest, a manifest in DIR/NAME: %v", err)
		}
	})
	t.Run("object replaced, same size", func(t *testing.T) {
		// The local copy is kept for the version it was made of, not for its size.
		dest := filepath.Join(t.TempDir(), "x.txt")
		f := &jobFlags{s3: cli.S3Flags{Endpoint: srv.Endpoint}}
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		for _, text := range []string{"first version", "other version", "other version"} {
			if _, err := srv.Client().PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("in/x.txt"), Body: strings.NewReader(text)}); err != nil {
				t.Fatal(err)
			}
			if err := copyFromS3(ctx, "s3://"+bucket+"/in/x.txt", dest, f, log); err != nil {
				t.Fatal(err)
			}
			if got, err := os.ReadFile(dest); err != nil || string(got) != text {
				t.Fatalf("local copy %q, %v; want %q", got, err, text)
			}
		}
	})
}

// TestCustomNoEOD: a tokenizer without an end-of-document id (a character vocabulary)
// fails at once, before any download, saying what to do: prep's message named
// --append-eod=false, which prep custom lacked (and prep NAME lacks). prep custom now
// takes it, and writes the documents without one.
func TestCustomNoEOD(t *testing.T) {
	t.Parallel()
	in := t.TempDir()
	chars := filepath.Join(in, "chars")
	os.Mkdir(chars, 0o755)
	writeFile(t, chars, "chars.json", []byte(`{"type": "char", "chars": ["\n", " ", "a", "b", "c"]}`))
	text := writeFile(t, in, "t.txt", []byte("abc cab\nbac\n"))
	dir := t.TempDir()
	code, out, errOut := runPrep(t, "custom", "--input", text, "--name", "c", "-d", dir, "--tokenizer", chars)
	if code != 1 || out != "" || strings.Count(errOut, "\n") != 1 {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	hasAll(t, "stderr", errOut, "prep c: tokenizer", "has no end-of-document token", "pass --append-eod=false")
	out, _ = mustPrep(t, "custom", "--input", text, "--name", "c", "-d", dir, "--tokenizer", chars, "--append-eod=false", "--progress", "off")
	hasAll(t, "stdout", out, "1 documents, 12 tokens")
	// The vocabulary is kept beside the data, as prep shakespeare keeps its own, for
	// shards cat --decode and train sample (it was not).
	if data, err := os.ReadFile(filepath.Join(dir, "c", "chars.json")); err != nil || !strings.Contains(string(data), `"char"`) {
		t.Errorf("chars.json beside the data: %q, %v", data, err)
	}
	// --slurm: refused before the jobs are written (every task failed on it), even a dry run.
	code, out, errOut = runPrep(t, "custom", "--input", text, "--name", "c2", "-d", dir, "--tokenizer", chars, "--slurm", "--dry-run")
	if code != 1 || out != "" || !strings.Contains(errOut, "pass --append-eod=false") {
		t.Fatalf("--slurm --dry-run: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// prep NAME has no --append-eod: it is not named (and nothing is downloaded).
	code, out, errOut = runPrep(t, "pile-00", "-d", dir, "--tokenizer", chars, "--mirror", "http://127.0.0.1:9/")
	if code != 1 || out != "" || strings.Contains(errOut, "--append-eod") {
		t.Fatalf("pile-00: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	hasAll(t, "stderr", errOut, "has no end-of-document token", "choose a --tokenizer")
}

// TestCustomRepeatedInputWarns: an input given twice is read twice, with a warning
// naming it (there was none).
func TestCustomRepeatedInputWarns(t *testing.T) {
	t.Parallel()
	in := t.TempDir()
	a := writeFile(t, in, "a.jsonl", []byte("{\"text\": \"one\"}\n"))
	dir := t.TempDir()
	code, out, errOut := runPrep(t, "custom", "--input", a, a, "--name", "c", "-d", dir, "--progress", "off")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	hasAll(t, "stdout", out, ": 2 documents")
	hasAll(t, "stderr", errOut, "an input is given twice", `inputs="1 and 2"`)
}

// TestCustomDefaultTokenizerNotPath: `prep custom` without --tokenizer, run where the
// working directory holds a directory named gpt2 (an earlier dataset), tokenizes with the
// built-in gpt2, its default; spec.Load took the name for the path: "directory gpt2
// holds no tokenizer".
func TestCustomDefaultTokenizerNotPath(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "gpt2"), 0o755); err != nil {
		t.Fatal(err)
	}
	in := writeFile(t, dir, "a.txt", []byte("A plain text document.\n"))
	t.Chdir(dir)
	mustPrep(t, "custom", "--name", "mine", "-d", "data", "--progress", "off", "--input", in)
	if got, want := readManifest(t, filepath.Join(dir, "data", "mine")).Tokenizer.Fingerprint, gpt2(t).Fingerprint(); got != want {
		t.Errorf("the dataset's tokenizer fingerprint is %.12s, want gpt2's %.12s", got, want)
	}
}

// TestCustomURLHints: `prep custom --input URL` told its user to pass --checksums or
// a --mirror, flags only `prep NAME` has (an unknown flag there), in the warning about
// files no sha256 checks and in the line of a failed download; now it names --input.
func TestCustomURLHints(t *testing.T) {
	t.Parallel()
	m := newMirror(t)
	m.put("c.jsonl.zst", zst(t, jsonl(genPile(t, 20, 11))))
	for _, tt := range []struct {
		name, url string
		code      int
		last      string
	}{
		{"downloaded", m.URL + "/c.jsonl.zst", 0, "manifest.json"},
		{"404", m.URL + "/missing.jsonl.zst", 1, "download the file yourself and pass it as --input"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := runPrep(t, "custom", "--name", "mine", "-d", t.TempDir(), "--tokenizer", gpt2Dir(t), "--progress", "off", "--input", tt.url)
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tt.code, errOut)
			}
			hasAll(t, "stderr", errOut, "WARNING: 1 file has no known sha256", "pass the local files as --input")
			if tt.code != 0 {
				hasAll(t, "the error line", lastLine(errOut), tt.last)
			}
			for _, flag := range []string{"--mirror", "--checksums"} {
				if strings.Contains(errOut, flag) {
					t.Errorf("stderr names %s, which prep custom does not have:\n%s", flag, errOut)
				}
			}
		})
	}
}

// TestDestS3WrongCredentialsBeforeDownload: with --dest s3://... and credentials that
// cannot write there, prep downloaded the whole corpus (the Pile: hundreds of GB) and
// only then failed, at the writer lock of the tokenizing (the bucket check before it
// is a warning: credentials may lack s3:ListBucket yet write). Now the lock is taken
// before anything is downloaded too.
func TestDestS3WrongCredentialsBeforeDownload(t *testing.T) {
	if testing.Short() {
		t.Skip("starts MinIO; skipped with -short")
	}
	srv := miniotest.Start(t)
	srv.Setenv(t)
	bucket := srv.NewBucket(t)
	m := newMirror(t)
	m.put("c.jsonl.zst", zst(t, jsonl(genPile(t, 50, 12))))
	args := []string{"custom", "--input", m.URL + "/c.jsonl.zst", "--name", "mine", "--tokenizer", gpt2Dir(t),
		"--dest", "s3://" + bucket + "/out", "--s3-endpoint", srv.Endpoint, "--progress", "off"}

	t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong")
	code, _, errOut := runPrep(t, append(args, "-d", t.TempDir())...)
	if code != 1 {
		t.Fatalf("wrong credentials: exit %d, want 1:\n%s", code, errOut)
	}
	hasAll(t, "the error line", lastLine(errOut), "SignatureDoesNotMatch", "check the credentials", "before downloading anything")
	if n := len(m.requestsFor("c.jsonl.zst")); n != 0 {
		t.Errorf("the input was downloaded (%d requests) before the credentials were found wrong", n)
	}

	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	out, _ := mustPrep(t, append(args, "-d", t.TempDir())...)
	hasAll(t, "stdout", out, "s3://"+bucket+"/out/mine/manifest.json: ")
}

// TestCustomMissingInputFirst: a local --input that is not there failed with "input
// stat X: no such file or directory", after the URL inputs beside it were downloaded;
// now it fails first, naming --input, and a quoted pattern gets its own hint.
func TestCustomMissingInputFirst(t *testing.T) {
	t.Parallel()
	m := newMirror(t)
	m.put("c.jsonl.zst", zst(t, jsonl(genPile(t, 20, 13))))
	missing := filepath.Join(t.TempDir(), "nope.jsonl")
	for _, tt := range []struct {
		name, input, want string
	}{
		{"beside a URL", m.URL + "/c.jsonl.zst," + missing, "--input " + missing + ": no such file (check the path)"},
		{"alone", missing, "--input " + missing + ": no such file (check the path)"},
		{"a quoted pattern", filepath.Join(filepath.Dir(missing), "*.jsonl"), "a pattern is expanded by the shell, not by prep"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := runPrep(t, "custom", "--input", tt.input, "--name", "mine", "-d", t.TempDir(), "--tokenizer", gpt2Dir(t), "--progress", "off")
			if code != 1 {
				t.Fatalf("exit %d, want 1:\n%s", code, errOut)
			}
			hasAll(t, "the error line", lastLine(errOut), "prep mine: ", tt.want)
		})
	}
	if n := len(m.requestsFor("c.jsonl.zst")); n != 0 {
		t.Errorf("the URL input was downloaded (%d requests) before the missing input was found", n)
	}
}
