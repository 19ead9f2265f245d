package cli

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
)

// WarnRepeatedInputs warns about each input given more than once (a glob and a name):
// its documents go into the dataset that many times, which nothing said (tokenize run,
// prep custom).
func WarnRepeatedInputs(log *slog.Logger, inputs []string) {
	first := map[string]int{}
	for i, in := range inputs {
		key := in
		if !strings.Contains(in, "://") {
			key = filepath.Clean(in)
		}
		if j, ok := first[key]; ok {
			log.Warn("an input is given twice: its documents are read twice", "input", in, "inputs", fmt.Sprintf("%d and %d", j+1, i+1))
			continue
		}
		first[key] = i
	}
}
