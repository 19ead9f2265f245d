package main

import (
	"context"
	"io"
	"log/slog"
	"runtime/debug"
	"sync"

	"gptkit/internal/cli"
	"gptkit/tokenize"
)

// tokenizerFlags pick the tokenizer (the flag set all commands share, internal/cli);
// encode, decode and run take them.
type tokenizerFlags struct{ cli.TokenizerFlags }

// load resolves the tokenizer, logging downloads to stderr. The garbage collector is
// off meanwhile: loading allocates its tables once, and collections during it (the
// heap grows from nothing to tens of MB) took as much CPU as the load itself.
func (tf *tokenizerFlags) load(ctx context.Context, stderr io.Writer) (*tokenize.Tokenizer, error) {
	defer pauseGC()()
	return tf.Load(ctx, "", slog.New(slog.NewTextHandler(stderr, nil)))
}

// gcPause counts the loads under way (several at once where commands run in one
// process, as in the tests): the first turns the collector off, the last restores it.
var gcPause struct {
	sync.Mutex
	n       int
	percent int
}

// pauseGC turns the garbage collector off until the function it returns is called.
func pauseGC() (resume func()) {
	gcPause.Lock()
	if gcPause.n == 0 {
		gcPause.percent = debug.SetGCPercent(-1)
	}
	gcPause.n++
	gcPause.Unlock()
	return func() {
		gcPause.Lock()
		if gcPause.n--; gcPause.n == 0 {
			debug.SetGCPercent(gcPause.percent)
		}
		gcPause.Unlock()
	}
}
