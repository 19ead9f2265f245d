package launch

import (
	"bufio"
	"io"
	"strings"
	"sync"
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

// copyLines copies r to sink line by line with prefix and returns the last
// non-empty line (for failure messages). Lines longer than 1 MiB are cut.
func copyLines(r io.Reader, sink lineSink, prefix string) string {
	br := bufio.NewReaderSize(r, 64<<10)
	var last string
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
		}
		if err != nil {
			return last
		}
	}
}
