package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"gptkit/internal/progress"
)

// progressFlag is --progress: how encode reports its progress on stderr.
type progressFlag struct{ mode string }

const progressUsage = "report progress on stderr: `MODE` auto (a live line when stderr is a terminal; " +
	"otherwise an Info log line every 10 s, so runs shorter than that say nothing), " +
	"on (as auto, and a summary line at the end when stderr is not a terminal) or off"

func (p *progressFlag) register(fs *flag.FlagSet) {
	fs.StringVar(&p.mode, "progress", "auto", progressUsage)
}

// check returns a usage error message, or "".
func (p *progressFlag) check() string {
	switch p.mode {
	case "auto", "on", "off":
		return ""
	}
	return fmt.Sprintf("--progress is %q, want auto, on or off", p.mode)
}

// start starts the progress report of a stage reading in (its size, when a regular
// file, is the total); nil for --progress off. Call Done after success, Stop after a
// failure (before printing the error).
func (p *progressFlag) start(label string, in io.Reader, stderr io.Writer) *progress.Bar {
	opt := progress.Options{}
	switch p.mode {
	case "off":
		return nil
	case "auto":
		opt.Quiet = true
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	return progress.NewWithOptions(stderr, logger, label, inputSize(in), opt)
}

// inputSize returns the bytes left to read in r when it is a regular file, else 0
// (unknown).
func inputSize(r io.Reader) int64 {
	f, ok := r.(*os.File)
	if !ok {
		return 0
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return 0
	}
	pos, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		pos = 0
	}
	return max(fi.Size()-pos, 0)
}

// countingReader adds the bytes read through it to a progress bar.
type countingReader struct {
	r   io.Reader
	bar *progress.Bar
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.bar.Add(int64(n), 0)
	return n, err
}
