package main

import (
	"io"
	"log/slog"

	"gptkit/internal/progress"
)

// newLogger is the command's logger, on stderr. On a terminal, where a progress bar
// redraws one line in place (with no newline until it ends), each log line clears that
// line first: a line logged meanwhile ran on from the bar's text ("tokenize  0 B /
// 10.4 MB  0%  0.0 MB/s  0 docstime=... msg=resuming"); the bar is redrawn below it.
func newLogger(stderr io.Writer) *slog.Logger {
	w := stderr
	if progress.IsTerminal(stderr) {
		w = clearLineWriter{stderr}
	}
	return slog.New(slog.NewTextHandler(w, nil))
}

// clearLineWriter writes each write (a log line) after "\r\x1b[K", in one write, so
// that a redraw of the bar cannot come between the two.
type clearLineWriter struct{ w io.Writer }

const clearLine = "\r\x1b[K"

func (c clearLineWriter) Write(p []byte) (int, error) {
	buf := make([]byte, 0, len(clearLine)+len(p))
	buf = append(append(buf, clearLine...), p...)
	n, err := c.w.Write(buf)
	return max(n-len(clearLine), 0), err
}
