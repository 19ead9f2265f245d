package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"gptkit/internal/cli"
	"gptkit/internal/durable"
	"gptkit/internal/inflate"
	"gptkit/prep"
	"gptkit/tokenize"
)

// defaultSpecial is the special token train adds when --special is not given.
const defaultSpecial = "<|endoftext|>"

// trainChunkBytes is how much of a plain text file is read before it is cut (at a
// tokenize.TrainCut point) and handed to the trainer.
const trainChunkBytes = 1 << 20

// progressEvery is the interval between progress log lines.
const progressEvery = 2 * time.Second

// runTrain runs `tokenize train`: it trains a byte-level BPE tokenizer on the --input
// files and writes its tokenizer.json to --out. It writes nothing to stdout.
func runTrain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := cli.NewCommand("tokenize", "train", "--input FILES --vocab-size N --out tokenizer.json [flags]",
		"Trains a byte-level BPE tokenizer (Hugging Face BpeTrainer semantics, GPT-2 pre-tokenizer) and writes\n"+
			"its tokenizer.json. A plain text file is one document, read in chunks; a .jsonl file (or any file\n"+
			"with --jsonl) holds one JSON object per line whose --text-key field is a document; .gz files are\n"+
			"decompressed (.json.gz is JSONL, as C4 names it); .zip and .parquet files are refused. Progress\n"+
			"is logged to stderr; nothing is written to stdout.")
	inputs := cli.ListFlag{Comma: true}
	specials := cli.ListFlag{Values: []string{defaultSpecial}}
	c.Flags.Var(&inputs, "input", "comma-separated input `FILES` (required; may be repeated)")
	vocabSize := c.Flags.Int("vocab-size", 0, "vocabulary size `N`, specials and the 256 byte tokens included (required)")
	out := c.Flags.String("out", "", "write the tokenizer.json to `FILE` (required; a regular file is replaced atomically; a symbolic link, pipe or device is refused)")
	c.Flags.Var(&specials, "special", "special `TOKEN`, given the next id from 0 (may be repeated; the first --special replaces the default; --special '' for none)")
	minFreq := c.Flags.Int("min-frequency", tokenize.DefaultMinFrequency, "merge only pairs that occur at least `N` times (0 and 1: any pair)")
	workers := c.Flags.Int("workers", runtime.GOMAXPROCS(0), "count words on `N` cores")
	jsonl := c.Flags.Bool("jsonl", false, "read every input as JSONL (files ending in .jsonl, .jsonl.gz or .json.gz always are)")
	textKey := c.Flags.String("text-key", "text", "with JSONL input, the `FIELD` holding the text")
	if code, ok := c.Parse(args, stderr); !ok {
		return code
	}
	opt := tokenize.TrainOptions{
		VocabSize:    *vocabSize,
		Special:      specials.Values,
		MinFrequency: max(1, *minFreq),
		Workers:      *workers,
	}
	switch {
	case len(inputs.Values) == 0:
		return c.UsageError(stderr, "--input is required")
	case *vocabSize == 0:
		return c.UsageError(stderr, "--vocab-size is required")
	case *out == "":
		return c.UsageError(stderr, "--out is required")
	case *minFreq < 0:
		return c.UsageError(stderr, fmt.Sprintf("--min-frequency is %d, want at least 0", *minFreq))
	case *workers < 1:
		return c.UsageError(stderr, fmt.Sprintf("--workers is %d, want at least 1", *workers))
	case *textKey == "":
		return c.UsageError(stderr, "--text-key is empty")
	}
	if err := opt.Validate(); err != nil {
		return c.UsageError(stderr, strings.TrimPrefix(err.Error(), "tokenize: train: "))
	}
	files := make([]trainInput, len(inputs.Values))
	for i, path := range inputs.Values {
		in, err := newTrainInput(path, *jsonl)
		if err != nil {
			return fail(stderr, c.Name, err)
		}
		files[i] = in
	}

	logger := slog.New(slog.NewTextHandler(stderr, nil))
	// Create the temporary output first, so that a bad --out fails before training.
	tmp, err := createTemp(*out)
	if err != nil {
		return fail(stderr, c.Name, err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename this finds nothing
	defer tmp.Close()

	start := time.Now()
	opt.Progress = progressLogger(logger, start)
	logger.Info("training", "inputs", len(files), "vocab_size", opt.VocabSize, "special", strings.Join(opt.Special, " "),
		"min_frequency", opt.MinFrequency, "workers", opt.Workers)
	m, err := tokenize.Train(ctx, trainTexts(files, *textKey, logger), opt)
	if err != nil {
		return fail(stderr, c.Name, interrupted(ctx, errors.New(strings.TrimPrefix(err.Error(), "tokenize: train: "))))
	}
	if m.Stats().Bytes == 0 {
		// A tokenizer of the bytes alone, learned from nothing: a wrong path or an
		// empty file, not a result.
		return fail(stderr, c.Name, fmt.Errorf("no text in the %d inputs (%s first): nothing to learn merges from; check the files (and --text-key for JSONL)", len(files), files[0].path))
	}
	// Again: training took a while, and something else may have been put at --out.
	if err := checkOut(*out); err != nil {
		return fail(stderr, c.Name, err)
	}
	if err := commitTemp(tmp, *out, m.WriteHFJSON); err != nil {
		return fail(stderr, c.Name, err)
	}
	st := m.Stats()
	logger.Info("wrote tokenizer", "out", *out, "vocab_size", m.VocabSize(), "merges", st.Merges, "texts", st.Texts,
		"bytes", st.Bytes, "words", st.Words, "unique_words", st.UniqueWords, "seconds", roundSeconds(time.Since(start)))
	if m.VocabSize() < opt.VocabSize {
		logger.Warn("vocabulary is smaller than asked: no pair left that occurs --min-frequency times",
			"vocab_size", m.VocabSize(), "asked", opt.VocabSize)
	}
	return exitOK
}

// trainInput is one input file and how to read it.
type trainInput struct {
	path  string
	jsonl bool
	gzip  bool
}

func newTrainInput(path string, jsonl bool) (trainInput, error) {
	in := trainInput{path: path, jsonl: jsonl}
	name := path
	if strings.HasSuffix(name, ".gz") {
		in.gzip = true
		name = strings.TrimSuffix(name, ".gz")
	}
	for _, ext := range []string{".zst", ".xz", ".bz2"} {
		if strings.HasSuffix(name, ext) {
			return in, fmt.Errorf("%s: %s compression is not supported; decompress it first (or use gzip)", path, ext)
		}
	}
	// Archives and Parquet, which `tokenize run` and `prep custom` read, would be
	// trained on as their raw bytes here: refused.
	for _, ext := range []string{".zip", ".parquet"} {
		if strings.HasSuffix(strings.ToLower(name), ext) {
			return in, fmt.Errorf("%s: tokenize train does not read %s files (it would learn their raw bytes): give the text as .txt or .jsonl (.gz) files", path, ext)
		}
	}
	// .json.gz is JSONL, as C4 names it and as `tokenize run` reads it.
	if strings.HasSuffix(name, ".jsonl") || (in.gzip && strings.HasSuffix(name, ".json")) {
		in.jsonl = true
	}
	fi, err := os.Stat(path)
	if err != nil {
		// "--input F: no such file or directory", as tokenize run says it (it was
		// "stat F: ...", naming neither the flag nor what to check).
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return in, fmt.Errorf("--input %s: %w", path, err)
	}
	if fi.IsDir() {
		return in, fmt.Errorf("%s is a directory, want a file", path)
	}
	return in, nil
}

// trainTexts streams the documents of files, in order, to the trainer.
func trainTexts(files []trainInput, textKey string, logger *slog.Logger) func(yield func(string) bool) error {
	return func(yield func(string) bool) error {
		for i, in := range files {
			logger.Info("reading", "file", in.path, "n", i+1, "of", len(files), "jsonl", in.jsonl)
			if err := in.read(textKey, yield); err != nil {
				return err
			}
		}
		return nil
	}
}

// read opens the file and yields its documents; it returns nil early when yield
// returns false.
func (in trainInput) read(textKey string, yield func(string) bool) error {
	f, err := os.Open(in.path)
	if err != nil {
		return err
	}
	defer f.Close()
	var r io.Reader = f
	if in.gzip {
		zr, err := inflate.NewGzipReader(f)
		if err != nil {
			return fmt.Errorf("%s: %w", in.path, err)
		}
		defer zr.Close()
		r = zr
	}
	if in.jsonl {
		return in.readJSONL(r, textKey, yield)
	}
	return in.readText(r, yield)
}

// readText yields a plain text file as one document in chunks of about trainChunkBytes,
// cut where the trainer counts the same words as for the whole file.
func (in trainInput) readText(r io.Reader, yield func(string) bool) error {
	buf := make([]byte, 0, trainChunkBytes)
	for {
		n, err := io.ReadFull(r, buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			if len(buf) > 0 {
				yield(string(buf))
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", in.path, err)
		}
		p := tokenize.TrainCut(buf)
		if p == 0 { // no cut point yet (no whitespace): read on
			buf = slices.Grow(buf, len(buf))
			continue
		}
		if !yield(string(buf[:p])) {
			return nil
		}
		rest := copy(buf, buf[p:])
		buf = buf[:rest]
	}
}

// readJSONL yields the textKey field of each line's JSON object. Blank lines (empty,
// or only spaces, tabs and CR: prep.BlankLine, as `run` and `encode --jsonl` read JSONL)
// are skipped; a line of other whitespace (a form feed, U+00A0) fails, naming it.
func (in trainInput) readJSONL(r io.Reader, textKey string, yield func(string) bool) error {
	br := bufio.NewReaderSize(r, 1<<20)
	var line []byte
	for n := 1; ; n++ {
		line = line[:0]
		var err error
		for {
			var frag []byte
			frag, err = br.ReadSlice('\n')
			line = append(line, frag...)
			if err != bufio.ErrBufferFull {
				break
			}
		}
		if err != nil && err != io.EOF {
			return fmt.Errorf("%s: line %d: %w", in.path, n, err)
		}
		if !prep.BlankLine(line) {
			text, ferr := textField(line, textKey)
			if ferr != nil {
				return fmt.Errorf("%s: line %d: %w", in.path, n, ferr)
			}
			if !yield(text) {
				return nil
			}
		}
		if err == io.EOF {
			return nil
		}
	}
}

// progressLogger logs the trainer's progress every progressEvery, and when counting ends.
func progressLogger(logger *slog.Logger, start time.Time) func(stage string, done, total int64) {
	stage, stageStart, last := "count", start, start
	return func(s string, done, total int64) {
		now := time.Now()
		if s != stage {
			stage, stageStart = s, now
		}
		countDone := s == "count" && total >= 0
		if !countDone && now.Sub(last) < progressEvery {
			return
		}
		last = now
		secs := max(now.Sub(stageStart).Seconds(), 1e-9)
		switch s {
		case "count":
			mb := float64(done) / 1e6
			logger.Info("counting words", "mb", round1(mb), "mb_per_s", round1(mb/secs), "done", countDone)
		case "merge":
			logger.Info("merging", "merges", done, "of", total, "merges_per_s", round1(float64(done)/secs))
		}
	}
}

func round1(x float64) float64 { return float64(int64(x*10+0.5)) / 10 }

func roundSeconds(d time.Duration) float64 { return d.Round(time.Millisecond).Seconds() }

// checkOut refuses an --out path that exists and is not a regular file. train writes
// its tokenizer.json to a temporary file and renames it over path: that would put a file
// in the place of a named pipe, a device or a socket, and of a symbolic link (rename does
// not follow it) rather than write where it points. os.Lstat: a link is not followed,
// whatever it points to. A regular file is replaced (as it always was); a path that does
// not exist, or cannot be looked at, is left to createTemp and the rename to report.
func checkOut(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil
	}
	mode := fi.Mode()
	var what, next string
	switch {
	case mode.IsRegular():
		return nil
	case mode.IsDir():
		what, next = "a directory", "give a file name, such as "+filepath.Join(path, "tokenizer.json")
	case mode&fs.ModeSymlink != 0:
		target, err := os.Readlink(path)
		if err != nil {
			target = "?"
		}
		what = fmt.Sprintf("a symbolic link (to %s), which train does not follow", target)
		next = "give the path it points to, or remove the link"
	case mode&fs.ModeNamedPipe != 0:
		what = "a named pipe (FIFO)"
	case mode&fs.ModeDevice != 0:
		what = "a device file"
	case mode&fs.ModeSocket != 0:
		what = "a socket"
	default:
		what = fmt.Sprintf("not a regular file (mode %v)", mode)
	}
	if next == "" {
		next = "train renames a new file into place, which would replace it: give a file path and copy the file to it after (cat FILE > " + path + "), or remove " + path
	}
	return fmt.Errorf("--out %s is %s, want a regular file or a new name: %s", path, what, next)
}

// createTemp creates the temporary file that commitTemp renames to path, in path's
// directory, once checkOut accepts path.
func createTemp(path string) (*os.File, error) {
	if err := checkOut(path); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		// Name the directory, not the temporary file in it.
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("--out %s: cannot create it in %s: %w", path, filepath.Dir(path), err)
	}
	return f, nil
}

// commitTemp writes tmp with write, syncs it and renames it to path.
func commitTemp(tmp *os.File, path string, write func(io.Writer) error) error {
	err := write(tmp)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err == nil {
		err = durable.DirSync(filepath.Dir(path)) // the rename too survives a crash
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
