package launch

import (
	"bufio"
	"cmp"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// lineSink writes whole lines to w under a shared lock, so lines of different
// ranks never interleave.
type lineSink struct {
	mu *sync.Mutex
	w  io.Writer
}

func (s lineSink) line(prefix, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	io.WriteString(s.w, prefix+text+"\n")
}

// copyLines copies r to sink line by line with prefix and returns the child's last
// words for failure messages: the last non-empty line, or, when the child crashed
// as a Go program does (a panic, a runtime fatal error, a signal in cgo code), the
// line that says why, not the last line of the stack dump after it. Lines longer
// than 1 MiB are cut.
func copyLines(r io.Reader, sink lineSink, prefix string) string {
	br := bufio.NewReaderSize(r, 64<<10)
	var last, crash string
	for {
		line, err := br.ReadString('\n')
		if len(line) > 0 {
			line = strings.TrimRight(line, "\r\n")
			if len(line) > 1<<20 {
				line = line[:1<<20]
			}
			sink.line(prefix, line)
			if strings.TrimSpace(line) != "" {
				last = line
			}
			if crash == "" && goCrashLine(line) {
				crash = line
			}
		}
		if err != nil {
			return cmp.Or(crash, last)
		}
	}
}

// goCrashLine reports whether line starts a Go program's crash report, which the
// runtime writes to stderr before the goroutines' stacks: "panic: ...", "fatal
// error: ..." (out of memory, concurrent map writes, a deadlock) or "SIGSEGV: ..."
// (a signal in C code, e.g. a CUDA library's).
func goCrashLine(line string) bool {
	if strings.HasPrefix(line, "panic: ") || strings.HasPrefix(line, "fatal error: ") {
		return true
	}
	name, _, ok := strings.Cut(line, ": ")
	if !ok || len(name) < 4 || !strings.HasPrefix(name, "SIG") {
		return false
	}
	for _, r := range name[3:] {
		if r < 'A' || r > 'Z' {
			return false
		}
	}
	return true
}

// outputPipes are a child's stdout and stderr as pipes the launcher reads itself. Not
// exec's StdoutPipe, which must be read to its end before Wait: a process the child
// leaves behind holding them (a ControlPersist master of ssh, a rank's own child)
// would keep the end from coming, and the child's exit from being seen.
type outputPipes struct {
	out, err         *os.File // the read ends
	outW, errW       *os.File // the write ends, the child's until it starts
	readers          sync.WaitGroup
	lastOut, lastErr string
}

// pipeDrainWait is how long, after a child has exited, its output may take to reach
// its end before the pipes are closed (a process left behind holds them).
var pipeDrainWait = 2 * time.Second

// newOutputPipes makes cmd's stdout and stderr pipes.
func newOutputPipes(cmd *exec.Cmd) (*outputPipes, error) {
	p := &outputPipes{}
	var err error
	if p.out, p.outW, err = os.Pipe(); err != nil {
		return nil, err
	}
	if p.err, p.errW, err = os.Pipe(); err != nil {
		p.out.Close()
		p.outW.Close()
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = p.outW, p.errW
	return p, nil
}

// started closes the write ends once the child has them (or failed to start: ok
// false, and the read ends are closed too).
func (p *outputPipes) started(ok bool) {
	p.outW.Close()
	p.errW.Close()
	if !ok {
		p.out.Close()
		p.err.Close()
	}
}

// copy copies the child's lines to the sinks, each line after its prefix
// (copyLines), in the background.
func (p *outputPipes) copy(stdout lineSink, outPrefix string, stderr lineSink, errPrefix string) {
	p.readers.Add(2)
	go func() {
		defer p.readers.Done()
		p.lastOut = copyLines(p.out, stdout, outPrefix)
	}()
	go func() {
		defer p.readers.Done()
		p.lastErr = copyLines(p.err, stderr, errPrefix)
	}()
}

// wait waits for cmd, then for its output to the end (at most pipeDrainWait), and
// returns the last non-empty line of its stderr and Wait's error.
func (p *outputPipes) wait(cmd *exec.Cmd) (lastErr string, err error) {
	err = cmd.Wait()
	drained := make(chan struct{})
	go func() {
		p.readers.Wait()
		close(drained)
	}()
	select {
	case <-drained:
	case <-time.After(pipeDrainWait):
		p.out.Close() // the readers' reads end
		p.err.Close()
		<-drained
	}
	p.out.Close()
	p.err.Close()
	return p.lastErr, err
}
